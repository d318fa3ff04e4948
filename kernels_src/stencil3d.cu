// 7-point 3-D stencil on an nx x ny x nz fp32 grid (x fastest), one sweep:
//
//   out = c0 * in[z][y][x] + c1 * (the six face neighbours)   at interior points,
//   out = in[z][y][x]                                          on the six faces of the grid,
//
// so every output element is written. A 2-D grid of BLOCK_SIZE_X x BLOCK_SIZE_Y threads covers
// x and y; each thread marches along z over Z_CHUNK planes (grid.z chunks the z axis, each chunk
// re-reading one plane above and below). VARIANT picks the z-marching scheme of the lectures:
//   naive      every step loads all seven points from global memory (caches do the reuse)
//   registers  register software pipelining: the z-1, z, z+1 values rotate through registers,
//              one new load per step along z; x/y neighbours still come from global memory
//   shared     as registers, and the current plane goes through a shared-memory tile with a
//              one-point halo, so the x/y neighbours come from shared memory too
//   vector     as registers, with four consecutive points along x per thread: where nx is a
//              multiple of 4, the point, the planes above and below and the y neighbours move as
//              float4 (one 16-byte access for four points; only the x neighbours at the ends are
//              single floats), else one float at a time. A quarter of the memory instructions.
// Plane offsets are 64-bit: nx * ny * nz may exceed 2^31 (vector: 32-bit with OFFSETS 32, which
// the space allows only below 2^31 points).

#ifndef KTUNE_LAUNCH_BOUNDS
#define KTUNE_LAUNCH_BOUNDS
#endif
#ifndef OFFSETS
#define OFFSETS 64
#endif

__global__ void KTUNE_LAUNCH_BOUNDS stencil3d(const float* __restrict__ in, float* __restrict__ out,
                                              int nx, int ny, int nz, float c0, float c1) {
  const int x = blockIdx.x * BLOCK_SIZE_X + threadIdx.x;
  const int y = blockIdx.y * BLOCK_SIZE_Y + threadIdx.y;
  const int z_begin = blockIdx.z * Z_CHUNK;
  const int z_end = min(z_begin + Z_CHUNK, nz);
  const bool inside = x < nx && y < ny;
  const bool interior_xy = x > 0 && x < nx - 1 && y > 0 && y < ny - 1;
  const long long plane = static_cast<long long>(nx) * ny;
  const long long column = static_cast<long long>(y) * nx + x;  // offset in a plane

#if VARIANT_NAIVE
  if (!inside) return;
  for (int z = z_begin; z < z_end; ++z) {
    const long long i = z * plane + column;
    float v = in[i];
    if (interior_xy && z > 0 && z < nz - 1) {
      v = c0 * v +
          c1 * (in[i - 1] + in[i + 1] + in[i - nx] + in[i + nx] + in[i - plane] + in[i + plane]);
    }
    out[i] = v;
  }
#elif VARIANT_REGISTERS
  if (!inside) return;
  long long i = z_begin * plane + column;
  float below = z_begin > 0 ? in[i - plane] : 0.0f;
  float here = in[i];
  for (int z = z_begin; z < z_end; ++z, i += plane) {
    const float above = z + 1 < nz ? in[i + plane] : 0.0f;
    float v = here;
    if (interior_xy && z > 0 && z < nz - 1) {
      v = c0 * here + c1 * (in[i - 1] + in[i + 1] + in[i - nx] + in[i + nx] + below + above);
    }
    out[i] = v;
    below = here;
    here = above;
  }
#elif VARIANT_SHARED
  // Every thread of the block takes part in the barriers; only those inside the grid load or
  // store. Halo points are loaded by the threads on the tile's edge, where they lie in the grid.
  __shared__ float tile[BLOCK_SIZE_Y + 2][BLOCK_SIZE_X + 2];
  const int tx = threadIdx.x + 1, ty = threadIdx.y + 1;
  long long i = z_begin * plane + column;
  float below = inside && z_begin > 0 ? in[i - plane] : 0.0f;
  float here = inside && z_begin < nz ? in[i] : 0.0f;
  for (int z = z_begin; z < z_end; ++z, i += plane) {
    const float above = inside && z + 1 < nz ? in[i + plane] : 0.0f;
    __syncthreads();  // the previous plane's tile is no longer read
    tile[ty][tx] = here;
    if (inside) {
      if (threadIdx.x == 0 && x > 0) tile[ty][0] = in[i - 1];
      if (threadIdx.x == BLOCK_SIZE_X - 1 && x + 1 < nx) tile[ty][tx + 1] = in[i + 1];
      if (threadIdx.y == 0 && y > 0) tile[0][tx] = in[i - nx];
      if (threadIdx.y == BLOCK_SIZE_Y - 1 && y + 1 < ny) tile[ty + 1][tx] = in[i + nx];
    }
    __syncthreads();
    if (inside) {
      float v = here;
      if (interior_xy && z > 0 && z < nz - 1) {
        v = c0 * here + c1 * (tile[ty][tx - 1] + tile[ty][tx + 1] + tile[ty - 1][tx] +
                              tile[ty + 1][tx] + below + above);
      }
      out[i] = v;
    }
    below = here;
    here = above;
  }
#elif VARIANT_VECTOR
  // x is the first of the thread's four points; `fast`: they are inside the row and 16-byte
  // aligned (every row starts at a multiple of nx floats).
  const int x0 = (blockIdx.x * BLOCK_SIZE_X + threadIdx.x) * 4;
  if (x0 >= nx || y >= ny) return;
  const bool fast = nx % 4 == 0;
  const bool row_interior = y > 0 && y < ny - 1;
  // OFFSETS 32: offsets as int where the grid has fewer than 2^31 points (fewer registers).
#if OFFSETS == 32
  using Offset = int;
#else
  using Offset = long long;
#endif
  const Offset step = static_cast<Offset>(plane);
  const auto load4 = [&](Offset at, float(&r)[4]) {
    if (fast) {
      const float4 t = *reinterpret_cast<const float4*>(in + at);
      r[0] = t.x, r[1] = t.y, r[2] = t.z, r[3] = t.w;
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j) r[j] = x0 + j < nx ? in[at + j] : 0.0f;
    }
  };
  Offset i = static_cast<Offset>(z_begin) * step + static_cast<Offset>(y) * nx + x0;
  float below[4] = {0.0f, 0.0f, 0.0f, 0.0f}, here[4], above[4];
  if (z_begin > 0) load4(i - step, below);
  load4(i, here);
  for (int z = z_begin; z < z_end; ++z, i += step) {
    if (z + 1 < nz) {
      load4(i + step, above);
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j) above[j] = 0.0f;
    }
    float v[4] = {here[0], here[1], here[2], here[3]};
    if (row_interior && z > 0 && z < nz - 1) {
      float south[4], north[4];
      load4(i - nx, south);
      load4(i + nx, north);
      const float west = x0 > 0 ? in[i - 1] : 0.0f;
      const float east = x0 + 4 < nx ? in[i + 4] : 0.0f;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int xj = x0 + j;
        if (xj > 0 && xj < nx - 1) {
          const float left = j == 0 ? west : here[j - 1];
          const float right = j == 3 ? east : here[j + 1];
          v[j] = c0 * here[j] + c1 * (left + right + south[j] + north[j] + below[j] + above[j]);
        }
      }
    }
    if (fast) {
      *reinterpret_cast<float4*>(out + i) = make_float4(v[0], v[1], v[2], v[3]);
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j)
        if (x0 + j < nx) out[i + j] = v[j];
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) below[j] = here[j], here[j] = above[j];
  }
#else
#error "VARIANT must be naive, registers, shared or vector"
#endif
}
