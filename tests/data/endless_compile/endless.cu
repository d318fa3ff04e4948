// Compiles in about a second at REPS = 1; Steps<N> inlines N dependent steps through a tree of
// log2(N) templates (no loop NVRTC could keep rolled), so each doubling of REPS takes NVRTC more
// than twice as long, and REPS = 256 many minutes. For the compile time limit's tests.
template <int N>
struct Steps {
  __device__ __forceinline__ static float run(float x) {
    return Steps<N - N / 2>::run(Steps<N / 2>::run(x));
  }
};
template <>
struct Steps<1> {
  __device__ __forceinline__ static float run(float x) { return x * 0.999f + __sinf(x); }
};
extern "C" __global__ void endless_compile(float* out, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  const float x = Steps<REPS * 4096>::run(static_cast<float>(i % 7));
  if (i < n) out[i] = x;
}
