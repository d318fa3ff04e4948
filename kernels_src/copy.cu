// Grid-stride copy of n floats, the bandwidth yardstick the other kernels are compared with.
// The grid is a fixed number of blocks per multiprocessor (one resident wave) and each thread
// walks the array with the grid's stride, moving VECTOR_WIDTH floats per access (float, float2,
// float4) and UNROLL independent accesses per iteration, all loads before any store, so each
// thread keeps several requests in flight. A tail of n % VECTOR_WIDTH floats is copied one by
// one. ktune defines BLOCK_SIZE, VECTOR_WIDTH, BLOCKS_PER_SM, UNROLL and KTUNE_LAUNCH_BOUNDS;
// indices are 64-bit, so n may exceed 2^32.

#ifndef KTUNE_LAUNCH_BOUNDS
#define KTUNE_LAUNCH_BOUNDS
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#define KTUNE_PRAGMA_(x) _Pragma(#x)
#define KTUNE_UNROLL(n) KTUNE_PRAGMA_(unroll n)

template <int Width> struct CopyVec;
template <> struct CopyVec<1> { using type = float; };
template <> struct CopyVec<2> { using type = float2; };
template <> struct CopyVec<4> { using type = float4; };

template <int Width>
__global__ void KTUNE_LAUNCH_BOUNDS copy(const float* __restrict__ in, float* __restrict__ out,
                                         unsigned long long n) {
  using V = typename CopyVec<Width>::type;
  // cudaMalloc returns 256-byte aligned pointers, so the vector views are aligned.
  const V* __restrict__ vin = reinterpret_cast<const V*>(in);
  V* __restrict__ vout = reinterpret_cast<V*>(out);
  const unsigned long long vectors = n / Width;
  const unsigned long long tid = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x;
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;

  unsigned long long i = tid;
  // Whole rounds: UNROLL accesses per thread, each one grid stride after the previous.
  for (; i + (UNROLL - 1) * stride < vectors; i += UNROLL * stride) {
    V r[UNROLL];
    KTUNE_UNROLL(UNROLL)
    for (int k = 0; k < UNROLL; ++k) r[k] = vin[i + k * stride];
    KTUNE_UNROLL(UNROLL)
    for (int k = 0; k < UNROLL; ++k) vout[i + k * stride] = r[k];
  }
  // The last partial round.
  for (; i < vectors; i += stride) vout[i] = vin[i];
  // Floats past the last whole vector (fewer than Width, so one per thread is enough).
  const unsigned long long rest = vectors * Width;
  if (tid < n - rest) out[rest + tid] = in[rest + tid];
}
