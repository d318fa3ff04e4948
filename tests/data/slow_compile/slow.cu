// Compiles quickly unless SLOW is 1: then thousands of dependent steps written out (macros, so
// no loop the compiler could keep rolled) keep NVRTC busy for a second or more. The tuning-loop
// tests use it to check which compilation the GPU takes first.
#define KT_STEP x = x * 0.999f + __sinf(x);
#define KT_STEP10 KT_STEP KT_STEP KT_STEP KT_STEP KT_STEP KT_STEP KT_STEP KT_STEP KT_STEP KT_STEP
#define KT_STEP100 \
  KT_STEP10 KT_STEP10 KT_STEP10 KT_STEP10 KT_STEP10 KT_STEP10 KT_STEP10 KT_STEP10 KT_STEP10 KT_STEP10
#define KT_STEP1000                                                                               \
  KT_STEP100 KT_STEP100 KT_STEP100 KT_STEP100 KT_STEP100 KT_STEP100 KT_STEP100 KT_STEP100 \
      KT_STEP100 KT_STEP100
extern "C" __global__ void slow_compile(float* out, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  float x = static_cast<float>(i);
#if SLOW == 1
  KT_STEP1000 KT_STEP1000 KT_STEP1000 KT_STEP1000
#endif
  if (i < n) out[i] = x;
}
