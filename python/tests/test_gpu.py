"""tune_kernel on the GPU: constant memory (cmem_args) and dynamic shared memory (smem_args) reach
the kernel, and `answer` is checked in every configuration. Skipped without a CUDA device."""

import os
import tempfile
import unittest

import numpy

import ktune

KERNEL = """
__constant__ float coeff[16];

__global__ void scale_by_constants(float *out, const float *in, int n) {
    extern __shared__ float stage[];
    int i = blockIdx.x * block_size_x + threadIdx.x;
    if (i < n) {
        stage[threadIdx.x] = in[i];
        out[i] = stage[threadIdx.x] * coeff[i % 16];
    }
}
"""


class GpuTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def tune(self, coeff, answer_coeff):
        n = 100003
        x = numpy.random.default_rng(3).uniform(-2, 2, n).astype(numpy.float32)
        out = numpy.zeros_like(x)
        answer = [x * numpy.resize(answer_coeff, n), None, None]
        try:
            return ktune.tune_kernel(
                "scale_by_constants", KERNEL, n, [out, x, numpy.int32(n)],
                {"block_size_x": [64, 128, 256, 512]}, answer=answer, atol=1e-5,
                cmem_args={"coeff": coeff}, smem_args={"size": "block_size_x * 4"},
                db=os.path.join(self.dir.name, "gpu.db"), quiet=True)
        except (ktune.KtuneError, ktune.Error) as e:
            if "CUDA device" in str(e) or "no GPU" in str(e) or "driver" in str(e):
                self.skipTest(f"no CUDA device: {e}")
            raise

    def test_constant_and_shared_memory_reach_the_kernel(self):
        coeff = numpy.arange(16, dtype=numpy.float32) * 0.5
        results, env = self.tune(coeff, coeff)
        self.assertEqual(len(results), 4)
        for r in results:
            self.assertEqual(r["ktune_status"], "ok", r)
            self.assertIsInstance(r["time"], float)
        self.assertIsNotNone(env["best_config"])

    def test_an_answer_that_does_not_match_the_constants_fails_every_configuration(self):
        coeff = numpy.arange(16, dtype=numpy.float32) * 0.5
        results, _ = self.tune(coeff, coeff + 1)
        for r in results:
            self.assertEqual(r["ktune_status"], "wrong_result", r)


if __name__ == "__main__":
    unittest.main()
