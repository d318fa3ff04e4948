"""A Kernel Tuner script run by ktune: only the import line differs from one written for
Kernel Tuner 1.4.

    python3 vector_add.py                 # tunes on the GPU
    python3 vector_add.py CACHE.json      # replays a Kernel Tuner cache file of this kernel
                                          # (simulation_mode: no GPU needed)
"""

import sys

import numpy

from ktune import tune_kernel  # was: from kernel_tuner import tune_kernel

KERNEL = """
__global__ void vector_add(float *c, const float *a, const float *b, int n) {
    int i = blockIdx.x * block_size_x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""

n = 10000
a = numpy.random.randn(n).astype(numpy.float32)
b = numpy.random.randn(n).astype(numpy.float32)
arguments = [numpy.zeros_like(a), a, b, numpy.int32(n)]
tune_params = {"block_size_x": [128, 256, 512, 1024]}

cache = sys.argv[1] if len(sys.argv) > 1 else None
results, env = tune_kernel("vector_add", KERNEL, n, arguments, tune_params,
                           answer=[a + b, None, None, None], cache=cache,
                           simulation_mode=cache is not None, quiet=True)
best = env["best_config"]
print(f"{len(results)} configurations on {env['device_name']}; "
      f"best block_size_x={best['block_size_x']} at {best['time']:.4f} ms")
