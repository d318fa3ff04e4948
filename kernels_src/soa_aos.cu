// One explicit Euler step of n particles, in array-of-structures or structure-of-arrays layout:
//
//   p' = p + v * dt,   v' = v + f / m * dt      (p, v, f: 3-vectors; m: mass)
//
// Input per particle: px py pz vx vy vz fx fy fz m (10 floats); output: px py pz vx vy vz (6).
// LAYOUT picks how both are stored:
//   aos  in_aos[i * 10 + field], out_aos[i * 6 + field]: a warp's loads of one field are 40
//        bytes apart, so each load instruction touches ten times the sectors it uses
//   soa  in_soa[field * n + i], out_soa[field * n + i]: every field load is coalesced
// The buffers of the other layout have no elements and are not touched. With USE_SHMEM (AoS
// only) a block first copies its particles' structures into shared memory with coalesced loads,
// computes from there, and writes its output structures back the same way: the lectures'
// remedy when the layout cannot change. Each thread handles ELEMENTS_PER_THREAD particles,
// BLOCK_SIZE apart. Indices are 32-bit (the description restricts 10 * n below 2^32).

#ifndef KTUNE_LAUNCH_BOUNDS
#define KTUNE_LAUNCH_BOUNDS
#endif

namespace particles {

constexpr unsigned kIn = 10, kOut = 6;

__device__ __forceinline__ void step(const float (&a)[kIn], float (&b)[kOut], float dt) {
  const float inv_m = 1.0f / a[9];
#pragma unroll
  for (int d = 0; d < 3; ++d) {
    b[d] = a[d] + a[3 + d] * dt;
    b[3 + d] = a[3 + d] + a[6 + d] * inv_m * dt;
  }
}

}  // namespace particles

__global__ void KTUNE_LAUNCH_BOUNDS soa_aos(const float* __restrict__ in_aos,
                                            float* __restrict__ out_aos,
                                            const float* __restrict__ in_soa,
                                            float* __restrict__ out_soa, unsigned n, float dt) {
  using namespace particles;
  constexpr unsigned kPerBlock = BLOCK_SIZE * ELEMENTS_PER_THREAD;
  const unsigned first = blockIdx.x * kPerBlock;  // the block's first particle
#if LAYOUT_AOS && USE_SHMEM
  extern __shared__ float staged[];  // kPerBlock input structures, then kPerBlock outputs
  float* s_in = staged;
  float* s_out = staged + kPerBlock * kIn;
  const unsigned count = min(kPerBlock, n - first);
  for (unsigned k = threadIdx.x; k < count * kIn; k += BLOCK_SIZE)
    s_in[k] = in_aos[first * kIn + k];
  __syncthreads();
#pragma unroll
  for (unsigned e = 0; e < ELEMENTS_PER_THREAD; ++e) {
    const unsigned local = e * BLOCK_SIZE + threadIdx.x;
    if (local < count) {
      float a[kIn], b[kOut];
#pragma unroll
      for (unsigned f = 0; f < kIn; ++f) a[f] = s_in[local * kIn + f];
      step(a, b, dt);
#pragma unroll
      for (unsigned f = 0; f < kOut; ++f) s_out[local * kOut + f] = b[f];
    }
  }
  __syncthreads();
  for (unsigned k = threadIdx.x; k < count * kOut; k += BLOCK_SIZE)
    out_aos[first * kOut + k] = s_out[k];
#else
#pragma unroll
  for (unsigned e = 0; e < ELEMENTS_PER_THREAD; ++e) {
    const unsigned i = first + e * BLOCK_SIZE + threadIdx.x;
    if (i < n) {
      float a[kIn], b[kOut];
#if LAYOUT_AOS
#pragma unroll
      for (unsigned f = 0; f < kIn; ++f) a[f] = in_aos[i * kIn + f];
      step(a, b, dt);
#pragma unroll
      for (unsigned f = 0; f < kOut; ++f) out_aos[i * kOut + f] = b[f];
#elif LAYOUT_SOA
#pragma unroll
      for (unsigned f = 0; f < kIn; ++f) a[f] = in_soa[f * n + i];
      step(a, b, dt);
#pragma unroll
      for (unsigned f = 0; f < kOut; ++f) out_soa[f * n + i] = b[f];
#else
#error "LAYOUT must be aos or soa"
#endif
    }
  }
#endif
}
