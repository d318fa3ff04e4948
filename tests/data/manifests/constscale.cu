// out[i] = in[i] * coeff[i % NCOEFF], the coefficients in constant memory: the fixture of the GPU
// tests of constant buffers (role "constant": ktune copies the buffer into this variable).
__constant__ float coeff[8];

extern "C" __global__ void constscale(const float* __restrict__ in, float* __restrict__ out,
                                      unsigned n, unsigned ncoeff) {
  const unsigned i = blockIdx.x * BLOCK_SIZE + threadIdx.x;
  if (i < n) out[i] = in[i] * coeff[i % ncoeff];
}
