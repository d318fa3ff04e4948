// 2-D "same" convolution (cross-correlation, as in the lectures and in CNNs) of an H x W fp32
// image with an F x F filter held in constant memory, zero padding outside the image:
//
//   out[y][x] = sum_{i,j < F} filter[i][j] * img(y + i - R, x + j - R),   R = (F - 1) / 2,
//   img(r, c) = image[r * W + c] inside the image, 0 outside.
//
// Each thread computes TILE_SIZE_Y x TILE_SIZE_X outputs, BLOCK_SIZE_X (BLOCK_SIZE_Y) apart, so
// every pass over a block's outputs is coalesced. USE_SHMEM picks where the input comes from:
//   0  global memory (through L1), a block with no image border in reach runs without bounds
//      checks (the lecture's constant-memory kernel, tiled)
//   1  the block first stages its input tile and halo in shared memory, zero-filled outside
//      the image, then computes from there
// USE_PADDING (shared memory only) sets the tile's row stride to S = W_tile + pad with
// S = BLOCK_SIZE_X (mod 32): a warp that spans several rows then reads 32 different banks.
//
// REG_ROWS > 1 (shared memory only) blocks in registers: each of a thread's TILE_SIZE_Y groups
// is REG_ROWS adjacent output rows. For each filter column j the thread walks down one column of
// the tile, REG_ROWS + F - 1 values, and adds each value to every output row of its group that
// it reaches: REG_ROWS * F FMAs for REG_ROWS + F - 1 shared-memory loads (one load per FMA with
// REG_ROWS = 1), so the multiprocessor's FMA issue rate, not its shared-memory bandwidth, sets
// the pace. With it the padding makes S * REG_ROWS = BLOCK_SIZE_X (mod 32). FULL_UNROLL = 1
// unrolls the loop over filter columns too: every filter value is read at a fixed offset (no
// loop, no address arithmetic), for F times the code.
//
// The filter lives in `__constant__` memory, filled by the run hook with cudaMemcpyAsync on the
// timed stream before each launch (plugins/builtin/convolution2d.cpp). Its name spells out the
// configuration: batched compilation puts many configurations into one program, each in its
// own namespace, and the hook finds its own copy by that name. FILTER_SIZE is the problem's f
// as a compile-time constant (a parameter the space pins to f), so the loops unroll fully.

#ifndef KTUNE_LAUNCH_BOUNDS
#define KTUNE_LAUNCH_BOUNDS
#endif

#ifndef REG_ROWS
#define REG_ROWS 1
#endif
#ifndef FULL_UNROLL
#define FULL_UNROLL 0
#endif

// The name of a configuration with REG_ROWS = 1 is the one it had before REG_ROWS existed.
#define CONV_FILTER_NAME_(a, b, c, d, e, f, g) conv_filter_##a##_##b##_##c##_##d##_##e##_##f##_##g
#define CONV_FILTER_NAME(a, b, c, d, e, f, g) CONV_FILTER_NAME_(a, b, c, d, e, f, g)
#define CONV_FILTER_RNAME_(n, r, u) n##_r##r##_u##u
#define CONV_FILTER_RNAME(n, r, u) CONV_FILTER_RNAME_(n, r, u)
#if REG_ROWS == 1
#define CONV_FILTER                                                                              \
  CONV_FILTER_NAME(BLOCK_SIZE_X, BLOCK_SIZE_Y, TILE_SIZE_X, TILE_SIZE_Y, USE_SHMEM, USE_PADDING, \
                   FILTER_SIZE)
#else
#define CONV_FILTER                                                                        \
  CONV_FILTER_RNAME(CONV_FILTER_NAME(BLOCK_SIZE_X, BLOCK_SIZE_Y, TILE_SIZE_X, TILE_SIZE_Y, \
                                     USE_SHMEM, USE_PADDING, FILTER_SIZE),                 \
                    REG_ROWS, FULL_UNROLL)
#endif

__constant__ float CONV_FILTER[FILTER_SIZE * FILTER_SIZE];

namespace conv2d {

constexpr int kBx = BLOCK_SIZE_X, kBy = BLOCK_SIZE_Y;
constexpr int kTx = TILE_SIZE_X, kTy = TILE_SIZE_Y, kRr = REG_ROWS;
constexpr int kF = FILTER_SIZE, kR = (FILTER_SIZE - 1) / 2;
constexpr int kTileW = kBx * kTx + kF - 1;        // input columns a block reads
constexpr int kTileH = kBy * kTy * kRr + kF - 1;  // input rows a block reads
// Rows a warp's threads read at once lie kRr rows apart: the stride makes kRr * S = kBx (mod 32)
// (the space allows padding only where kBx = 16 (mod 32), and 16 / kRr is whole).
constexpr int kPadMod = 32 / kRr;
constexpr int kPad = !USE_PADDING ? 0
                     : kRr == 1   ? ((kBx - kTileW) % 32 + 32) % 32
                                  : ((16 / kRr - kTileW) % kPadMod + kPadMod) % kPadMod;
constexpr int kStride = kTileW + kPad;  // shared-memory row stride
static_assert(kRr == 1 || USE_SHMEM, "register blocking reads the shared-memory tile");

// Adds filter row i's taps to a thread's outputs, reading the input through `load(r, c)` (r, c
// relative to the thread's first output). The row loop stays rolled: unrolling all F * F taps
// times the tile would cost hundreds of registers and minutes of ptxas for nothing.
template <typename Load>
__device__ __forceinline__ void accumulate_row(int i, float (&sum)[kTy][kTx], Load load) {
#pragma unroll
  for (int j = 0; j < kF; ++j) {
    const float c = CONV_FILTER[i * kF + j];
#pragma unroll
    for (int ty = 0; ty < kTy; ++ty) {
#pragma unroll
      for (int tx = 0; tx < kTx; ++tx) sum[ty][tx] += c * load(ty * kBy + i, tx * kBx + j);
    }
  }
}

// The block's input tile and halo (kTileH x kTileW from (y0 - R, x0 - R)) into shared memory,
// zero outside the image, then a barrier.
__device__ __forceinline__ void stage_tile(float* tile, const float* __restrict__ image, int h,
                                           int w, int block_y0, int block_x0) {
  const int tid = threadIdx.y * kBx + threadIdx.x;
  for (int k = tid; k < kTileH * kTileW; k += kBx * kBy) {
    const int r = k / kTileW, c = k % kTileW;
    const int gy = block_y0 - kR + r, gx = block_x0 - kR + c;
    tile[r * kStride + c] = (gy >= 0 && gy < h && gx >= 0 && gx < w) ? image[gy * w + gx] : 0.0f;
  }
  __syncthreads();
}

// Register blocking (kRr > 1): adds filter column j's taps to the thread's groups of kRr
// adjacent output rows. `col` points at the tile element of the group's first output row, shifted
// up by R rows and left by R columns (the top-left tap), of group (ty, tx).
__device__ __forceinline__ void accumulate_column(int j, float (&sum)[kTy][kTx][kRr],
                                                  const float* base) {
#pragma unroll
  for (int ty = 0; ty < kTy; ++ty) {
#pragma unroll
    for (int tx = 0; tx < kTx; ++tx) {
      const float* col = base + ty * kBy * kRr * kStride + tx * kBx + j;
#pragma unroll
      for (int r = 0; r < kRr + kF - 1; ++r) {
        const float v = col[r * kStride];
        // Input row r reaches output rows t with 0 <= r - t < F, through filter row r - t.
#pragma unroll
        for (int t = 0; t < kRr; ++t) {
          if (r - t >= 0 && r - t < kF) sum[ty][tx][t] += CONV_FILTER[(r - t) * kF + j] * v;
        }
      }
    }
  }
}

}  // namespace conv2d

__global__ void KTUNE_LAUNCH_BOUNDS convolution2d(const float* __restrict__ image,
                                                  float* __restrict__ out, int h, int w) {
  using namespace conv2d;
  const int block_x0 = blockIdx.x * (kBx * kTx);  // first output column of the block
  const int block_y0 = blockIdx.y * (kBy * kTy * kRr);
  const int x0 = block_x0 + threadIdx.x;  // this thread's first output
  const int y0 = block_y0 + threadIdx.y * kRr;

#if USE_SHMEM && REG_ROWS > 1
  float rsum[kTy][kTx][kRr];
#pragma unroll
  for (int ty = 0; ty < kTy; ++ty)
#pragma unroll
    for (int tx = 0; tx < kTx; ++tx)
#pragma unroll
      for (int t = 0; t < kRr; ++t) rsum[ty][tx][t] = 0.0f;
  extern __shared__ float tile[];  // kTileH rows of kStride floats
  stage_tile(tile, image, h, w, block_y0, block_x0);
  const float* base = tile + threadIdx.y * kRr * kStride + threadIdx.x;
#if FULL_UNROLL
#pragma unroll
#else
#pragma unroll 1
#endif
  for (int j = 0; j < kF; ++j) accumulate_column(j, rsum, base);
#pragma unroll
  for (int ty = 0; ty < kTy; ++ty) {
#pragma unroll
    for (int t = 0; t < kRr; ++t) {
      const int y = y0 + ty * kBy * kRr + t;
#pragma unroll
      for (int tx = 0; tx < kTx; ++tx) {
        const int x = x0 + tx * kBx;
        if (y < h && x < w) out[y * w + x] = rsum[ty][tx][t];
      }
    }
  }
#else
  float sum[kTy][kTx];
#pragma unroll
  for (int ty = 0; ty < kTy; ++ty)
#pragma unroll
    for (int tx = 0; tx < kTx; ++tx) sum[ty][tx] = 0.0f;

#if USE_SHMEM
  extern __shared__ float tile[];  // kTileH rows of kStride floats
  stage_tile(tile, image, h, w, block_y0, block_x0);
  const float* base = tile + threadIdx.y * kStride + threadIdx.x;
#pragma unroll 1
  for (int i = 0; i < kF; ++i)
    accumulate_row(i, sum, [&](int r, int c) { return base[r * kStride + c]; });
#else
  // A block with no image border in reach reads without bounds checks; the few border blocks
  // check every tap.
  const bool interior = block_x0 >= kR && block_x0 + kBx * kTx - 1 + kR < w && block_y0 >= kR &&
                        block_y0 + kBy * kTy - 1 + kR < h;
  if (interior) {
    const float* base = image + (y0 - kR) * w + (x0 - kR);
#pragma unroll 1
    for (int i = 0; i < kF; ++i)
      accumulate_row(i, sum, [&](int r, int c) { return __ldg(base + r * w + c); });
  } else {
#pragma unroll 1
    for (int i = 0; i < kF; ++i) {
      accumulate_row(i, sum, [&](int r, int c) {
        const int gy = y0 - kR + r, gx = x0 - kR + c;
        return gy >= 0 && gy < h && gx >= 0 && gx < w ? image[gy * w + gx] : 0.0f;
      });
    }
  }
#endif

#pragma unroll
  for (int ty = 0; ty < kTy; ++ty) {
    const int y = y0 + ty * kBy;
#pragma unroll
    for (int tx = 0; tx < kTx; ++tx) {
      const int x = x0 + tx * kBx;
      if (y < h && x < w) out[y * w + x] = sum[ty][tx];
    }
  }
#endif
}
