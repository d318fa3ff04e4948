"""tune_kernel on the GPU: constant memory (cmem_args) and dynamic shared memory (smem_args) reach
the kernel, and `answer` is checked in every configuration. Skipped without a CUDA device."""

import json
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

    def tune(self, coeff, answer_coeff, verify=None, functions=False, cache=None, **more):
        n = 100003
        # Kernel Tuner's functions of the parameters for the same launch: the problem size, the
        # grid divisor and the shared memory size, evaluated per configuration.
        launch = dict(problem_size=n, smem_args={"size": "block_size_x * 4"})
        if functions:
            launch = dict(problem_size=lambda p: n, grid_div_x=lambda p: p["block_size_x"],
                          smem_args={"size": lambda p: p["block_size_x"] * 4})
        x = numpy.random.default_rng(3).uniform(-2, 2, n).astype(numpy.float32)
        out = numpy.zeros_like(x)
        answer = [x * numpy.resize(answer_coeff, n), None, None]
        try:
            return ktune.tune_kernel(
                "scale_by_constants", KERNEL, launch.pop("problem_size"),
                [out, x, numpy.int32(n)], {"block_size_x": [64, 128, 256, 512]}, answer=answer,
                atol=1e-5, cmem_args={"coeff": coeff}, verify=verify,
                db=os.path.join(self.dir.name, "gpu.db"), quiet=True, cache=cache, **launch,
                **more)
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

    def test_a_register_observer_adds_each_configurations_registers(self):
        coeff = numpy.arange(16, dtype=numpy.float32) * 0.5
        results, _ = self.tune(coeff, coeff, observers=[ktune.observers.RegisterObserver()])
        for r in results:
            self.assertIsInstance(r["num_regs"], int, r)
            self.assertGreater(r["num_regs"], 0, r)

    def test_an_nvml_observer_adds_each_configurations_clock_and_temperature(self):
        coeff = numpy.arange(16, dtype=numpy.float32) * 0.5
        observer = ktune.observers.NVMLObserver(["core_freq", "temperature"])
        results, _ = self.tune(coeff, coeff, observers=[observer])
        for r in results:
            self.assertIsInstance(r["core_freq"], int, r)
            self.assertGreater(r["core_freq"], 100, r)  # MHz
            self.assertIsInstance(r["temperature"], int, r)
            self.assertGreater(r["temperature"], 0, r)  # degrees C

    def test_an_nvml_observer_adds_each_configurations_energy_and_power(self):
        coeff = numpy.arange(16, dtype=numpy.float32) * 0.5
        observer = ktune.observers.NVMLObserver(["nvml_energy", "nvml_power"])
        results, _ = self.tune(coeff, coeff, observers=[observer])
        for r in results:
            self.assertIsInstance(r["nvml_energy"], float, r)
            self.assertGreater(r["nvml_energy"], 0, r)  # J per run
            self.assertGreater(r["nvml_power"], 5, r)  # W
            self.assertAlmostEqual(r["nvml_energy"], r["nvml_power"] * r["ktune_median_time"] / 1e3,
                                   delta=1e-9 * r["nvml_energy"])

    def test_an_answer_that_does_not_match_the_constants_fails_every_configuration(self):
        coeff = numpy.arange(16, dtype=numpy.float32) * 0.5
        results, _ = self.tune(coeff, coeff + 1)
        for r in results:
            self.assertEqual(r["ktune_status"], "wrong_result", r)

    def test_a_verify_function_gets_every_configurations_output(self):
        coeff = numpy.arange(16, dtype=numpy.float32) * 0.5
        seen = []

        def verify(answer, gpu_result, atol=None):
            seen.append(gpu_result)
            # The first configuration is refused, whatever it computed.
            return len(seen) > 1 and numpy.allclose(answer[0], gpu_result[0], atol=atol)

        results, env = self.tune(coeff, coeff, verify)
        self.assertEqual(len(seen), 4)
        for gpu_result in seen:
            self.assertEqual(gpu_result[0].shape, (100003,))
            self.assertIsNone(gpu_result[1])
        statuses = sorted(r["ktune_status"] for r in results)
        self.assertEqual(statuses, ["ok", "ok", "ok", "wrong_result"])
        self.assertIsNotNone(env["best_config"])

    def test_a_verify_function_sees_a_wrong_output(self):
        coeff = numpy.arange(16, dtype=numpy.float32) * 0.5
        results, _ = self.tune(coeff, coeff + 1,
                               lambda a, r, atol=None: numpy.allclose(a[0], r[0], atol=atol))
        self.assertEqual([r["ktune_status"] for r in results], ["wrong_result"] * 4)

    def test_launch_functions_of_the_parameters_give_the_same_launch(self):
        coeff = numpy.arange(16, dtype=numpy.float32) * 0.5
        with self.assertWarns(UserWarning):
            results, _ = self.tune(coeff, coeff, functions=True)
        self.assertEqual([r["ktune_status"] for r in results], ["ok"] * 4)
        self.assertEqual(sorted(r["block_size_x"] for r in results), [64, 128, 256, 512])
        self.assertNotIn("ktune_problem_size_x", results[0], "hidden from Kernel Tuner's results")

    def test_a_cache_file_spares_measuring_its_configurations_again(self):
        coeff = numpy.arange(16, dtype=numpy.float32) * 0.5
        cache = os.path.join(self.dir.name, "cache.json")
        first, env = self.tune(coeff, coeff, cache=cache)
        self.assertEqual(len(first), 4)
        again, env = self.tune(coeff, coeff, cache=cache)
        self.assertIsNone(env["ktune_run_id"], "nothing measured")
        self.assertEqual(sorted(r["time"] for r in again), sorted(r["time"] for r in first))
        with open(cache) as f:
            c = json.load(f)
        del c["cache"]["64"], c["cache"]["512"]
        with open(cache, "w") as f:
            json.dump(c, f)
        third, env = self.tune(coeff, coeff, cache=cache)
        measured = [t for t in ktune._ktune.trials(os.path.join(self.dir.name, "gpu.db"),
                                                   env["ktune_run_id"]) if t["kind"] == 0]
        self.assertEqual(sorted(json.loads(t["config_json"])["block_size_x"] for t in measured),
                         [64, 512])
        self.assertEqual(sorted(r["block_size_x"] for r in third), [64, 128, 256, 512])

    def test_a_kernel_that_faults_costs_its_trial_not_the_python_process(self):
        faulty = """
__global__ void faulty(float *out, const float *in, int n) {
    int i = blockIdx.x * block_size_x + threadIdx.x;
#if block_size_x == 128
    if (i == 0) *(volatile float *)(out + (1ll << 40)) = 1.0f;  /* far outside: a fault */
#endif
    if (i < n) out[i] = 2.0f * in[i];
}
"""
        n = 4096
        x = numpy.arange(n, dtype=numpy.float32)
        try:
            results, env = ktune.tune_kernel(
                "faulty", faulty, n, [numpy.zeros_like(x), x, numpy.int32(n)],
                {"block_size_x": [64, 128, 256]}, answer=[2 * x, None, None],
                db=os.path.join(self.dir.name, "gpu.db"), quiet=True)
        except (ktune.KtuneError, ktune.Error) as e:
            if "CUDA device" in str(e) or "no GPU" in str(e) or "driver" in str(e):
                self.skipTest(f"no CUDA device: {e}")
            raise
        status = {r["block_size_x"]: r["ktune_status"] for r in results}
        self.assertEqual(status, {64: "ok", 128: "crashed", 256: "ok"})
        self.assertIn(env["best_config"]["block_size_x"], (64, 256))

    def test_run_kernel_returns_every_argument_after_one_run(self):
        n = 1000
        x = numpy.random.default_rng(5).uniform(-1, 1, n).astype(numpy.float32)
        coeff = numpy.arange(16, dtype=numpy.float32)
        out = numpy.full_like(x, 7.0)
        try:
            got = ktune.run_kernel("scale_by_constants", KERNEL, n, [out, x, numpy.int32(n)],
                                   {"block_size_x": 128}, cmem_args={"coeff": coeff},
                                   smem_args={"size": "block_size_x * 4"})
        except (ktune.KtuneError, ktune.Error) as e:
            if "CUDA device" in str(e) or "no GPU" in str(e) or "driver" in str(e):
                self.skipTest(f"no CUDA device: {e}")
            raise
        numpy.testing.assert_allclose(got[0], x * numpy.resize(coeff, n), rtol=1e-6)
        numpy.testing.assert_array_equal(got[1], x)
        self.assertEqual(got[2], n)
        numpy.testing.assert_array_equal(out, 7.0)  # the caller's array is left as it was
        with self.assertRaisesRegex(ktune.KtuneError, "not a valid configuration"):
            ktune.run_kernel("scale_by_constants", KERNEL, n, [out, x, numpy.int32(n)],
                             {"block_size_x": 4096}, cmem_args={"coeff": coeff})

    def test_defines_are_the_only_macros_and_an_objective_picks_the_stored_best(self):
        # With defines, Kernel Tuner defines only those: the kernel reads BS and SCALE, and
        # block_size_x is not a macro (the kernel would not compile if it used it).
        kernel = """
        #ifdef block_size_x
        #error block_size_x is defined
        #endif
        __global__ void scaled(float *out, const float *in, int n) {
            int i = blockIdx.x * BS + threadIdx.x;
            if (i < n) out[i] = SCALE * in[i];
        }
        """
        n = 1 << 20
        x = numpy.random.default_rng(7).uniform(-1, 1, n).astype(numpy.float32)
        db = os.path.join(self.dir.name, "defines.db")
        try:
            results, env = ktune.tune_kernel(
                "scaled", kernel, n, [numpy.zeros_like(x), x, numpy.int32(n)],
                {"block_size_x": [64, 128, 256, 512]}, answer=[3 * x, None, None],
                defines={"BS": "block_size_x", "SCALE": lambda p: "3.0f"},
                metrics={"threads/ms": lambda p: p["block_size_x"] / p["time"]},
                objective="threads/ms", objective_higher_is_better=True, db=db, quiet=True)
        except (ktune.KtuneError, ktune.Error) as e:
            if "CUDA device" in str(e) or "no GPU" in str(e) or "driver" in str(e):
                self.skipTest(f"no CUDA device: {e}")
            raise
        for r in results:
            self.assertEqual(r["ktune_status"], "ok", r)
        best = max(results, key=lambda r: r["threads/ms"])
        self.assertEqual(env["best_config"]["block_size_x"], best["block_size_x"])
        stored = ktune.best("scaled", n, db=db)
        self.assertIsNotNone(stored)
        self.assertEqual(stored["objective"], "threads/ms")
        self.assertTrue(stored["objective_higher_is_better"])
        self.assertGreater(stored["objective_value"], 0)


if __name__ == "__main__":
    unittest.main()
