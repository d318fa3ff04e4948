// A 256-bin histogram of bytes in shared memory: each block counts into `replicas` copies of the
// bins (threads spread over them, so fewer collide on a hot bin), then adds them to the global
// histogram. ktune prepends #define BLOCK_SIZE, ITEMS_PER_THREAD, REPLICAS, ... to this file.
#ifndef KTUNE_LAUNCH_BOUNDS
#define KTUNE_LAUNCH_BOUNDS
#endif

// `#pragma unroll` takes a constant expression, but NVRTC does not expand macros in it: name the
// tunable as a constexpr (or a template parameter) and write `#pragma unroll (kItems)`.
constexpr int kItems = ITEMS_PER_THREAD;

template <int kReplicas>
__global__ void KTUNE_LAUNCH_BOUNDS histogram(const unsigned char* __restrict__ data,
                                              unsigned* __restrict__ hist, unsigned long long n) {
  extern __shared__ unsigned bins[];  // kReplicas * 256 counters
  for (int i = threadIdx.x; i < kReplicas * 256; i += blockDim.x) bins[i] = 0;
  __syncthreads();
  unsigned* mine = bins + (threadIdx.x % kReplicas) * 256;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x * kItems;
  for (unsigned long long base = (unsigned long long)blockIdx.x * blockDim.x * kItems + threadIdx.x;
       base < n; base += stride) {
#pragma unroll(kItems)
    for (int k = 0; k < kItems; ++k) {
      const unsigned long long i = base + (unsigned long long)k * blockDim.x;
      if (i < n) atomicAdd(&mine[data[i]], 1u);
    }
  }
  __syncthreads();
  for (int b = threadIdx.x; b < 256; b += blockDim.x) {
    unsigned sum = 0;
    for (int r = 0; r < kReplicas; ++r) sum += bins[r * 256 + b];
    if (sum != 0) atomicAdd(&hist[b], sum);
  }
}
