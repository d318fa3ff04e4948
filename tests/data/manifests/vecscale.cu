// Scales 2-D points, p = alpha * p, stored as an array of structures (x0 y0 x1 y1 ...) or a
// structure of arrays (x0 x1 ... then y0 y1 ...): the manifest fixture of the registry tests.
// ktune defines BLOCK_SIZE, ELEMENTS_PER_THREAD, LAYOUT with LAYOUT_AOS or LAYOUT_SOA,
// MAXRREGCOUNT, LAUNCH_BOUNDS, KTUNE_BLOCK_X/Y/Z and KTUNE_LAUNCH_BOUNDS.
#ifndef KTUNE_LAUNCH_BOUNDS
#define KTUNE_LAUNCH_BOUNDS
#endif

extern "C" __global__ void KTUNE_LAUNCH_BOUNDS vecscale(const float* __restrict__ in,
                                                       float* __restrict__ out, unsigned n,
                                                       float alpha) {
  extern __shared__ float stage[];  // one staged x per thread
  const unsigned base = blockIdx.x * (KTUNE_BLOCK_X * ELEMENTS_PER_THREAD) + threadIdx.x;
#pragma unroll
  for (int k = 0; k < ELEMENTS_PER_THREAD; ++k) {
    const unsigned i = base + k * KTUNE_BLOCK_X;
    if (i >= n) break;
#if LAYOUT_SOA
    stage[threadIdx.x] = in[i];
    out[i] = alpha * stage[threadIdx.x];
    out[n + i] = alpha * in[n + i];
#else
    stage[threadIdx.x] = in[2 * i];
    out[2 * i] = alpha * stage[threadIdx.x];
    out[2 * i + 1] = alpha * in[2 * i + 1];
#endif
  }
}
