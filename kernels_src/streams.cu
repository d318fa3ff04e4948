// y = a * x + b over n fp32 values: the kernel of the streams lecture, where the work of a run
// is the whole pipeline host -> device copy, kernel, device -> host copy on pinned memory,
// split into chunks spread over several streams so copies in both directions and the kernel
// overlap. The run hook (plugins/builtin/streams.cpp) issues the pipeline and launches this
// kernel once per chunk, with x, y and n of the chunk, one value per thread.

#ifndef KTUNE_LAUNCH_BOUNDS
#define KTUNE_LAUNCH_BOUNDS
#endif

__global__ void KTUNE_LAUNCH_BOUNDS streams_axpb(const float* __restrict__ x, float* __restrict__ y,
                                                 unsigned n, float a, float b) {
  const unsigned i = blockIdx.x * BLOCK_SIZE + threadIdx.x;
  if (i < n) y[i] = a * x[i] + b;
}
