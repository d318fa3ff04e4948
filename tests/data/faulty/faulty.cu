// Deliberately faulty kernels for the fault-isolation test: FAULT selects what goes wrong.
//   0 correct            1 out-of-bounds write    2 __trap()        3 endless loop
//   4 wrong value        5 misaligned access      6 leaves one element unwritten
extern "C" __global__ void faulty(const float* __restrict__ in, float* __restrict__ out, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (FAULT == 1 && i == 0) out[n + (1u << 30)] = 1.0f;
  if (FAULT == 2 && i == 0) __trap();
  if (FAULT == 3) {
    // A loop without side effects may be deleted by the compiler; the asm statement keeps it.
    for (unsigned long long k = 0; k != ~0ull; ++k) {
      __nanosleep(1000);
      asm volatile("" ::: "memory");
    }
  }
  if (FAULT == 5 && i == 0) {
    const float* p = reinterpret_cast<const float*>(reinterpret_cast<const char*>(in) + 1);
    out[0] = *reinterpret_cast<const double*>(p);
  }
  if (i < n) {
    if (FAULT == 6 && i == n / 2) return;
    out[i] = 2.0f * in[i] + (FAULT == 4 && i == 7 ? 1.0f : 0.0f);
  }
}
