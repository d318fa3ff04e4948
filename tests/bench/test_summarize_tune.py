#!/usr/bin/env python3
"""bench/summarize_tune.py: the rows of `ktune tune --json` outputs, and the ratio against Kernel
Tuner's summaries of the same call (--kernel-tuner), on files written here."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench",
                      "summarize_tune.py")


def ktune_run(rate, measured=270, compile_s=10.8, gpu_share=0.66):
    return {
        "trials": measured, "measured": measured, "by_status": {"ok": measured},
        "wall_seconds": measured / rate, "configs_per_second": rate, "gpu_share": gpu_share,
        "timed_share": gpu_share - 0.04, "compile_seconds": compile_s,
        "wait_compile_seconds": 0.1, "backend_seconds": 0.8,
        "best": {"time_ms": 0.0394, "gbps": 3408.6, "key": "block_size=256,variant=9"},
    }


def kernel_tuner(rate, compile_ms=40.0):
    return {"configs_per_s": rate, "total": 270, "valid": 270,
            "median_ms": {"compile_time": compile_ms}}


class SummarizeTune(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def write(self, name, content):
        path = os.path.join(self.dir.name, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump(content, f)
        return path

    def run_script(self, *args):
        return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)

    def test_each_run_is_a_row(self):
        s7 = self.write("s7.json", ktune_run(333.8))
        r = self.run_script(f"samples7={s7}")
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        header = [c.strip() for c in lines[0].strip("|").split("|")]
        values = [c.strip() for c in lines[2].strip("|").split("|")]
        row = dict(zip(header, values))
        self.assertEqual(row["run"], "samples7")
        self.assertEqual(row["cfg_per_s"], "333.8")
        self.assertEqual(row["compile_ms_per_cfg"], "40.0")  # 10.8 s over 270 configurations

    def test_runs_are_paired_with_kernel_tuner_by_sample_count(self):
        s7 = self.write("s7.json", ktune_run(333.8))
        s32 = self.write("s32.json", ktune_run(248.8))
        s0 = self.write("s0.json", ktune_run(295.0))
        kt = os.path.join(self.dir.name, "kt")
        self.write("kt/summary_it7.json", kernel_tuner(16.8))
        self.write("kt/summary_it32.json", kernel_tuner(15.69, 38.0))
        r = self.run_script(f"samples7={s7}", f"samples32={s32}", f"adaptive={s0}",
                            "--kernel-tuner", kt)
        self.assertEqual(r.returncode, 0, r.stderr)
        after = r.stdout.split("ktune against Kernel Tuner", 1)[1].splitlines()[1:]
        header = [c.strip() for c in after[0].strip("|").split("|")]
        rows = [dict(zip(header, (c.strip() for c in line.strip("|").split("|"))))
                for line in after[2:] if line.startswith("|")]
        self.assertEqual([r["samples"] for r in rows], ["7", "32"])  # adaptive has no peer run
        self.assertEqual(rows[0]["ratio"], "19.9x")  # 333.8 / 16.8
        self.assertEqual(rows[1]["ratio"], "15.9x")  # 248.8 / 15.69
        self.assertEqual(rows[1]["kernel_tuner_compile_ms"], "38.0")
        self.assertEqual(rows[0]["ratio_with_start"], "-")  # a run that does not say its start

    def test_the_ratio_with_the_start_counts_the_time_before_the_run(self):
        # 270 configurations in 0.8 s of wall and 0.1 s before it: 300/s, 20x of 15/s, where
        # the wall alone gives 337.5/s, 22.5x.
        s7 = dict(ktune_run(337.5), start_seconds=0.1)
        kt = os.path.join(self.dir.name, "kt")
        self.write("kt/summary_it7.json", kernel_tuner(15.0))
        r = self.run_script(f"samples7={self.write('s7.json', s7)}", "--kernel-tuner", kt)
        self.assertEqual(r.returncode, 0, r.stderr)
        after = r.stdout.split("ktune against Kernel Tuner", 1)[1].splitlines()[1:]
        header = [c.strip() for c in after[0].strip("|").split("|")]
        row = dict(zip(header, (c.strip() for c in after[2].strip("|").split("|"))))
        self.assertEqual(row["ratio"], "22.5x")
        self.assertEqual(row["ratio_with_start"], "20.0x")

    def test_the_bound_is_the_slower_of_nvrtc_and_the_gpu(self):
        # 7 samples: 15 processes over 37.4 ms of NVRTC per configuration (401.0/s) against the
        # GPU's 0.19 s for 270 trials (1421/s); 32 samples: the GPU's 0.711 s (379.7/s) against
        # NVRTC's 440.2/s.
        s7 = dict(ktune_run(361.8, compile_s=10.1), compile_threads=15, gpu_seconds=0.19)
        s32 = dict(ktune_run(258.0, compile_s=9.2), compile_threads=15, gpu_seconds=0.711)
        kt = os.path.join(self.dir.name, "kt")
        self.write("kt/summary_it7.json", kernel_tuner(19.85))
        self.write("kt/summary_it32.json", kernel_tuner(18.4))
        r = self.run_script(f"samples7={self.write('s7.json', s7)}",
                            f"samples32={self.write('s32.json', s32)}", "--kernel-tuner", kt)
        self.assertEqual(r.returncode, 0, r.stderr)
        after = r.stdout.split("ktune against Kernel Tuner", 1)[1].splitlines()[1:]
        header = [c.strip() for c in after[0].strip("|").split("|")]
        rows = [dict(zip(header, (c.strip() for c in line.strip("|").split("|"))))
                for line in after[2:] if line.startswith("|")]
        self.assertEqual(rows[0]["ktune_bound_cfg_per_s"], "401.0 (nvrtc)")
        self.assertEqual(rows[0]["of_bound"], "90%")
        self.assertEqual(rows[0]["ratio_at_bound"], "20.2x")
        self.assertEqual(rows[1]["ktune_bound_cfg_per_s"], "379.7 (gpu)")
        self.assertEqual(rows[1]["of_bound"], "68%")
        self.assertEqual(rows[1]["ratio_at_bound"], "20.6x")

    def test_a_run_without_its_costs_has_no_bound(self):
        s7 = self.write("s7.json", ktune_run(333.8))  # no compile_threads, no gpu_seconds
        kt = os.path.join(self.dir.name, "kt")
        self.write("kt/summary_it7.json", kernel_tuner(16.8))
        r = self.run_script(f"samples7={s7}", "--kernel-tuner", kt)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("| - | - | - |", r.stdout)

    def test_a_folder_without_summaries_is_an_error(self):
        s7 = self.write("s7.json", ktune_run(333.8))
        r = self.run_script(f"samples7={s7}", "--kernel-tuner", os.path.join(self.dir.name, "none"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("no summary_itN.json", r.stderr)


if __name__ == "__main__":
    unittest.main()
