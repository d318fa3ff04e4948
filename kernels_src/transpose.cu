// Matrix transpose of fp32, out = in^T, with `in` rows x cols and `out` cols x rows, both
// row-major: the lecture's example of coalescing through shared memory. VARIANT picks:
//   1  naive: each thread reads in[y][x] (coalesced) and writes out[x][y] (a stride of `rows`
//      floats between neighbouring threads: uncoalesced)
//   2  shared-memory tile: a block reads a TILE x TILE tile coalesced into shared memory and
//      writes it back transposed, coalesced too; with PADDING 0 the column reads of the tile hit
//      one bank per warp (32-way conflicts for TILE 32); PADDING 1 gives the lecture's 32 x 33
//      array, whose columns spread over all 32 banks
// A block has TILE x ROWS_PER_BLOCK threads and covers one TILE x TILE tile, each thread
// TILE / ROWS_PER_BLOCK elements a column apart. Every access is guarded, so rows and cols
// need not be multiples of the tile. ktune defines TILE, ROWS_PER_BLOCK, PADDING, VARIANT and
// KTUNE_LAUNCH_BOUNDS; offsets are 64-bit.

#ifndef KTUNE_LAUNCH_BOUNDS
#define KTUNE_LAUNCH_BOUNDS
#endif

template <int Tile, int RowsPerBlock, int Padding, int Variant>
__global__ void KTUNE_LAUNCH_BOUNDS transpose(const float* __restrict__ in, float* __restrict__ out,
                                              unsigned rows, unsigned cols) {
  static_assert(Tile % RowsPerBlock == 0, "a block covers the tile in whole passes");
  // Column and first row of this thread in `in`.
  const unsigned x = blockIdx.x * Tile + threadIdx.x;
  const unsigned y = blockIdx.y * Tile + threadIdx.y;

  if constexpr (Variant == 1) {
    if (x >= cols) return;
#pragma unroll
    for (int j = 0; j < Tile; j += RowsPerBlock) {
      if (y + j < rows)
        out[static_cast<unsigned long long>(x) * rows + (y + j)] =
            in[static_cast<unsigned long long>(y + j) * cols + x];
    }
  } else {
    __shared__ float tile[Tile][Tile + Padding];
#pragma unroll
    for (int j = 0; j < Tile; j += RowsPerBlock) {
      if (x < cols && y + j < rows)
        tile[threadIdx.y + j][threadIdx.x] = in[static_cast<unsigned long long>(y + j) * cols + x];
    }
    __syncthreads();
    // The same tile seen from `out`: its columns are rows of `in` and its rows columns of `in`.
    const unsigned ox = blockIdx.y * Tile + threadIdx.x;
    const unsigned oy = blockIdx.x * Tile + threadIdx.y;
#pragma unroll
    for (int j = 0; j < Tile; j += RowsPerBlock) {
      if (ox < rows && oy + j < cols)
        out[static_cast<unsigned long long>(oy + j) * rows + ox] =
            tile[threadIdx.x][threadIdx.y + j];
    }
  }
}
