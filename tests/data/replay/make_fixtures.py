#!/usr/bin/env python3
"""Builds the replay test fixtures: Kernel Tuner cache files cut down from the brute-forced
caches of AutoTuningAssociation/benchmark_hub (MIT; see LICENSE.benchmark_hub here).

Each fixture keeps a sub-product of the file's tune_params (fewer values per parameter) and
exactly the cache entries inside it, so the restrictions of the full space still select exactly
the fixture's keys. Run: make_fixtures.py DIR_WITH_THE_UPSTREAM_CACHES, then copy the printed
facts into tests/tuner/test_replay.cpp if a fixture changes.
"""
import gzip
import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

# fixture file -> (upstream file, narrowed value lists)
FIXTURES = {
    "convolution_A100_small.json.gz": ("convolution_milo_A100.json.gz", {
        "block_size_x": [16, 64, 80, 176], "block_size_y": [1, 4, 8, 16],
        "tile_size_x": [1, 3], "tile_size_y": [1, 4]}),
    "pnpoly_small.json.gz": ("pnpoly_RTX_3060_laptop.json.gz", {
        "between_method": [0, 1], "block_size_x": [32, 512, 928, 992], "tile_size": [1, 2, 20]}),
    "dedispersion_MI250X_small.json": ("dedispersion_milo_MI250X.json.gz", {
        "block_size_x": [1, 4, 32], "block_size_y": [32, 64, 256], "tile_size_x": [1, 2],
        "tile_size_y": [1, 3]}),
    # The same sub-space on two more GPUs: transfer between GPUs (test_transfer.cpp).
    "dedispersion_A100_small.json": ("dedispersion_milo_A100.json.gz", {
        "block_size_x": [1, 4, 32], "block_size_y": [32, 64, 256], "tile_size_x": [1, 2],
        "tile_size_y": [1, 3]}),
    "dedispersion_A4000_small.json": ("dedispersion_milo_A4000.json.gz", {
        "block_size_x": [1, 4, 32], "block_size_y": [32, 64, 256], "tile_size_x": [1, 2],
        "tile_size_y": [1, 3]}),
    "gemm_small.json": ("gemm_RTX_3090.json.gz", {
        "MWG": [16, 64], "NWG": [16, 64], "MDIMC": [8, 16], "NDIMC": [8, 16], "MDIMA": [8, 16],
        "NDIMB": [8, 16], "VWM": [1, 2], "VWN": [2], "SA": [1], "SB": [0]}),
}


def main(src: Path) -> None:
    for name, (upstream, narrow) in FIXTURES.items():
        d = json.load(gzip.open(src / upstream, "rt"))
        keys = d["tune_params_keys"]
        params = {k: narrow.get(k, v) for k, v in d["tune_params"].items()}
        cache = {}
        for key, entry in d["cache"].items():
            values = dict(zip(keys, map(int, key.split(","))))
            if all(values[k] in params[k] for k in keys):
                cache[key] = entry
        out = dict(d)
        out["tune_params"] = params
        out["cache"] = cache
        text = json.dumps(out)
        path = HERE / name
        if name.endswith(".gz"):
            # mtime 0: the same input gives the same bytes
            with open(path, "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=0) as g:
                g.write(text.encode())
        else:
            path.write_text(text)
        ok = {k: e for k, e in cache.items() if not isinstance(e["time"], str)}
        failed = {}
        for e in cache.values():
            if isinstance(e["time"], str):
                failed[e["time"]] = failed.get(e["time"], 0) + 1
        med = {k: statistics.median(e["times"]) for k, e in ok.items()}
        best_med = min(med, key=med.get)
        best_mean = min(ok, key=lambda k: ok[k]["time"])
        print(f"{name}: {len(cache)} entries, {len(ok)} ok, failed {failed}")
        print(f"  best by median {best_med} {med[best_med]!r}; by mean {best_mean} {ok[best_mean]['time']!r}")
        print(f"  median of medians {statistics.median(med.values())!r}; size {path.stat().st_size}")
    older_convolution()


def older_convolution() -> None:
    """An older version of the convolution kernel, without the use_shmem parameter: the entries
    of the convolution fixture that use shared memory, with use_shmem taken out. The shipped
    replay job names use_shmem, so it does not fit; the recorded keys define the space."""
    d = json.load(gzip.open(HERE / "convolution_A100_small.json.gz", "rt"))
    keys = d["tune_params_keys"]
    at = keys.index("use_shmem")
    out = dict(d)
    out["tune_params_keys"] = keys[:at] + keys[at + 1:]
    out["tune_params"] = {k: v for k, v in d["tune_params"].items() if k != "use_shmem"}
    out["cache"] = {}
    for key, entry in d["cache"].items():
        values = key.split(",")
        if values[at] != "1":
            continue
        entry = {k: v for k, v in entry.items() if k != "use_shmem"}
        out["cache"][",".join(values[:at] + values[at + 1:])] = entry
    (HERE / "convolution_no_shmem_small.json").write_text(json.dumps(out))
    print(f"convolution_no_shmem_small.json: {len(out['cache'])} entries")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
