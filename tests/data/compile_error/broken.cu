// Compiles unless BAD is 1: the tuning-loop tests use it to check that compile errors are
// stored as trials with their log.
#if BAD == 1
#error deliberately broken configuration
#endif
extern "C" __global__ void broken(float* out, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = static_cast<float>(i) * SCALE;
}
