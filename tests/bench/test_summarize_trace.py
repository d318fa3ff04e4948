#!/usr/bin/env python3
"""bench/summarize_trace.py on timelines written here in the form `ktune tune --trace` writes:
the GPU's busy share, its idle time split by what the compile threads did, the NVRTC programs by
size and their time per configuration, and a clear refusal of a file that is not a timeline."""
import gzip
import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench",
                      "summarize_trace.py")


def lane(tid, name):
    return {"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": name}}


def span(tid, name, begin_s, end_s, args=None):
    e = {"name": name, "ph": "X", "pid": 1, "tid": tid, "ts": begin_s * 1e6,
         "dur": (end_s - begin_s) * 1e6}
    if args is not None:
        e["args"] = args
    return e


def batch(tid, begin_s, end_s, n):
    return span(tid, f"{n} configurations", begin_s, end_s,
                {"configurations": n, "compiled": n, "failed": 0})


class SummarizeTrace(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def run_on(self, events, gz=False):
        path = os.path.join(self.dir.name, "run.trace.json" + (".gz" if gz else ""))
        with (gzip.open(path, "wt") if gz else open(path, "w")) as f:
            json.dump({"traceEvents": events, "displayTimeUnit": "ms"}, f)
        return subprocess.run([sys.executable, SCRIPT, path], capture_output=True, text=True)

    def test_idle_time_is_split_by_what_the_compile_threads_did(self):
        # Wall 1.0 s. The GPU measures 0.2-0.4 and 0.6-1.0: idle 0.4-0.6, of which 0.4-0.5 with
        # both compile threads busy and 0.5-0.6 with one.
        events = [
            lane(1, "GPU worker"), lane(2, "compile 1"), lane(3, "compile 2"), lane(4, "run"),
            span(1, "prepare", 0.0, 0.2, {"context": 0.15}),
            span(2, "x", 0.0, 0.2) | {"args": {"configurations": 1, "compiled": 1, "failed": 0}},
            batch(3, 0.0, 0.5, 4), batch(2, 0.2, 0.6, 4),
            span(1, "a", 0.2, 0.4, {"gpu_ms": 150, "eval_ms": 190}),
            span(1, "b", 0.6, 1.0, {"gpu_ms": 350, "eval_ms": 390}),
            span(4, "search", 0.0, 1.0),
            span(4, "the best and the run's record", 1.0, 1.03),
        ]
        # The file's zero is the process's start, 0.05 s before the run.
        for e in events:
            if e.get("ph") == "X":
                e["ts"] += 0.05e6
        events.append(span(4, "start: options, kernel, database, compile processes", 0, 0.05))
        events.append(span(4, "the device and the kernel's space", 0.01, 0.04))
        events.append(span(4, "options, kernels, job file", 0, 0.01))
        r = self.run_on(events)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout
        self.assertIn("wall 1.000 s (search), 2 trials measured, first trial at 0.200 s", out)
        self.assertIn("GPU worker busy 0.600 s: 60% of the wall, 75% after the first trial", out)
        self.assertIn("GPU idle after the first trial 0.200 s in 1 gaps: 0.100 s with all 2 "
                      "compile threads busy, 0.100 s with some idle", out)
        self.assertIn("NVRTC programs by configurations: 1 x1, 4 x2", out)
        self.assertIn("first NVRTC program done at 0.200 s", out)
        # Thread 1's first program: 1 configuration in 0.2 s; thread 2's: 4 in 0.5 s. After them
        # thread 1's program of 4 in 0.4 s.
        self.assertIn("NVRTC first programs: 2 of 5 configurations, 140.0 ms per configuration",
                      out)
        self.assertIn("NVRTC later programs: 1 of 4 configurations, 100.0 ms per configuration",
                      out)
        self.assertIn("compiled: 0 1 1 1 5 9 9 9 9 9", out)
        self.assertIn("measured: 0 0 0 1 1 1 1 1 1 2", out)
        self.assertIn("preparation 0.000-0.200 s (context 0.150)", out)
        self.assertIn("after the search 0.030 s (the finalists, the best and its CUBIN stored, "
                      "the run's record)", out)
        self.assertIn("before the run 0.050 s (start: options, kernel, database, compile "
                      "processes)", out)
        self.assertIn("    options, kernels, job file 0.010, the device and the kernel's space "
                      "0.030\n", out)
        self.assertIn("of it: the GPU's own work 0.500 s, the rest of the evaluations 0.080 s, "
                      "outside them 0.020 s (10.00 ms per trial)", out)

    def test_a_gzipped_timeline_is_read(self):
        r = self.run_on([lane(1, "GPU worker"), span(1, "a", 0.1, 0.3), span(1, "b", 0.3, 0.4)],
                        gz=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("2 trials measured, first trial at 0.100 s", r.stdout)

    def test_a_file_that_is_not_a_timeline_is_refused(self):
        path = os.path.join(self.dir.name, "other.json")
        with open(path, "w") as f:
            json.dump({"trials": 3}, f)
        r = subprocess.run([sys.executable, SCRIPT, path], capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("not a ktune timeline", r.stderr)


if __name__ == "__main__":
    unittest.main()
