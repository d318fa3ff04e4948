#!/usr/bin/env bash
# A/B measurement of two builds of ktune: the same tuning job run by the old and the new binary
# in turn, each run with a fresh database and both sides under the same compile-cache policy,
# then a table of every run's rate (configurations per second, from `tune --json`), each side's
# median and spread, and the ratio new/old.
#
#   bench/ab/compare-builds.sh [OPTIONS] OLD NEW [-- TUNE_ARGS...]
#
# OLD, NEW: a ktune binary, or a source tree, built first (Release, Ninja, the ktune target)
# into its own build folder.
# TUNE_ARGS: the job, without --samples, --db and --json, which this script adds (default: the
# kt270 step's, --config configs/reduce-kt270.toml --no-reuse --retime-top 0).
#
# Options:
#   --repeats N         runs of each side at each sample count (default 5)
#   --samples LIST      sample counts, comma separated, each compared in turn (default 7,32,0,
#                       the kt270 step's; 0 is the adaptive measurement; '' passes none)
#   --cache cold|warm   cold (default): every run starts from an empty compile cache; warm: one
#                       untimed run of each side fills that side's cache, which its runs keep
#   --limit S           each run cut at S seconds (default: none)
#   --trace             each run's timeline (`tune --trace`) beside its JSON
#   --out DIR           the runs' JSON and stderr, runs.md and table.md (default: a new folder
#                       under $TMPDIR, kept)
#   --old-build DIR     the build folder of OLD when it is a source tree (default OLD/build-ab)
#   --new-build DIR     the same for NEW (default NEW/build-ab)
#
# The sides alternate in ABBA order (old first in odd rounds, new first in even ones), so that
# a drift over the call (clocks, temperature, the page cache) weighs on both alike. A run that
# fails is shown with its exit code and left out of the medians. Exit status: 0 when every run
# gave a rate, 1 otherwise, 2 for a usage error.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
usage() { sed -n '2,/^set /{/^set /d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }
die() { echo "compare-builds.sh: $*" >&2; exit 2; }

repeats=5 samples=7,32,0 cache=cold limit="" trace=0 out="" old_build="" new_build=""
while [ $# -gt 0 ]; do
  case $1 in
    --repeats) repeats=${2:-}; shift 2 || die "--repeats takes a number" ;;
    --samples) [ $# -ge 2 ] || die "--samples takes a list"; samples=$2; shift 2 ;;
    --cache) cache=${2:-}; shift 2 || die "--cache takes cold or warm" ;;
    --limit) limit=${2:-}; shift 2 || die "--limit takes seconds" ;;
    --trace) trace=1; shift ;;
    --out) out=${2:-}; shift 2 || die "--out takes a folder" ;;
    --old-build) old_build=${2:-}; shift 2 || die "--old-build takes a folder" ;;
    --new-build) new_build=${2:-}; shift 2 || die "--new-build takes a folder" ;;
    -h|--help) usage; exit 0 ;;
    -*) die "unknown option $1 (compare-builds.sh --help)" ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || { usage >&2; exit 2; }
old_arg=$1 new_arg=$2; shift 2
if [ $# -gt 0 ]; then
  [ "$1" = -- ] || die "after OLD and NEW comes -- and the job's arguments, not '$1'"
  shift; job=("$@")
else
  job=(--config "$root/configs/reduce-kt270.toml" --no-reuse --retime-top 0)
fi
[[ $repeats =~ ^[1-9][0-9]*$ ]] || die "--repeats takes a whole number above 0, not '$repeats'"
[[ -z $samples || $samples =~ ^[0-9]+(,[0-9]+)*$ ]] || die "--samples takes whole numbers, comma separated, not '$samples'"
[[ $cache == cold || $cache == warm ]] || die "--cache is cold or warm, not '$cache'"
[[ -z $limit || $limit =~ ^[1-9][0-9]*$ ]] || die "--limit takes a number of seconds, not '$limit'"

# binary SIDE ARG BUILD_DIR: ARG's ktune binary on stdout, ARG built first when it is a source tree.
binary() {
  local side=$1 arg=$2 dir=$3 log
  if [ -f "$arg/CMakeLists.txt" ]; then
    arg=$(cd "$arg" && pwd); dir=$(realpath -m "${dir:-$arg/build-ab}")
    log="$dir/compare-builds.log"
    mkdir -p "$dir"
    echo "compare-builds.sh: building $side ($arg) in $dir" >&2
    { cmake -S "$arg" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DPython3_EXECUTABLE="${Python3_EXECUTABLE:-$(command -v python3)}" && ninja -C "$dir" ktune; } >"$log" 2>&1 ||
      { grep -E "error|FAILED|Error" "$log" | head -40 >&2; die "the build of $side failed ($log)"; }
    echo "$dir/tuner/ktune"
  elif [ -f "$arg" ] && [ -x "$arg" ]; then
    realpath "$arg"
  else
    die "$side: $arg is neither a ktune binary nor a source tree"
  fi
}
old_bin=$(binary old "$old_arg" "$old_build") || exit 2
new_bin=$(binary new "$new_arg" "$new_build") || exit 2

[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/ktune-ab.XXXXXX")
mkdir -p "$out" && out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
declare -A bin=([old]=$old_bin [new]=$new_bin)
cut=(); [ -n "$limit" ] && cut=(timeout -s INT -k 20 "$limit")
IFS=, read -ra counts <<<"$samples"; [ ${#counts[@]} -gt 0 ] || counts=("")

# run SIDE COUNT NAME: one run of SIDE's binary at COUNT samples, as OUT/NAME.json and .err.
run() {
  local side=$1 count=$2 name=$3 args=()
  [ -n "$count" ] && args+=(--samples "$count")
  ((trace)) && args+=(--trace "$out/$name.trace.json")
  [ "$cache" = cold ] && rm -rf "$work/cache-$side"
  rm -f "$work/run.db" "$work/run.db-wal" "$work/run.db-shm"
  KTUNE_CACHE_DIR=$work/cache-$side "${cut[@]}" "${bin[$side]}" tune "${job[@]}" "${args[@]}" \
    --db "$work/run.db" --json >"$out/$name.json" 2>"$out/$name.err"
}

echo "old: $old_bin" >&2
echo "new: $new_bin" >&2
if [ "$cache" = warm ]; then
  for side in old new; do
    run $side "${counts[0]}" "warmup-$side"
    echo "compare-builds.sh: $side's compile cache filled: rc=$?" >&2
  done
fi
runs=()
for r in $(seq 1 "$repeats"); do
  order=(old new); (( r % 2 == 0 )) && order=(new old)
  for count in "${counts[@]}"; do
    for side in "${order[@]}"; do
      name=$side-s${count:-job}-r$r
      run $side "$count" "$name"
      rc=$?
      runs+=("$side ${count:-job} $r $rc $out/$name.json")
      echo "compare-builds.sh: $name: rc=$rc $(python3 -c "import json,sys;print('%.1f/s' % json.load(open(sys.argv[1]))['configs_per_second'])" "$out/$name.json" 2>&1 | tail -1)" >&2
    done
  done
done

# Every run's figures as bench/summarize_tune.py reads them, for what the rates do not say.
labels=()
for entry in "${runs[@]}"; do
  read -r side count r rc file <<<"$entry"
  [ "$rc" = 0 ] && labels+=("$side-s$count-r$r=$file")
done
if [ ${#labels[@]} -gt 0 ]; then
  python3 "$root/bench/summarize_tune.py" "${labels[@]}" >"$out/runs.md" 2>&1 ||
    echo "compare-builds.sh: bench/summarize_tune.py could not read the runs (runs.md)" >&2
fi

printf '%s\n' "${runs[@]}" | python3 -c '
import json, statistics, sys

old_bin, new_bin, cache, job = sys.argv[1:5]
rates = {}  # (count, side) -> [(round, rate or None, rc)]
for line in sys.stdin:
    side, count, r, rc, path = line.split(" ", 4)
    rate = None
    if rc == "0":
        try:
            rate = float(json.load(open(path.strip()))["configs_per_second"])
        except (OSError, ValueError, KeyError, TypeError):
            rate = None
    rates.setdefault(count, {}).setdefault(side, []).append((int(r), rate, rc))

def show(rate, rc):
    return f"{rate:.1f}" if rate is not None else f"- (rc={rc})"

print(f"A/B of two ktune builds, configurations per second (`tune --json`), {cache} compile cache")
print(f"old: {old_bin}")
print(f"new: {new_bin}")
print(f"job: {job}")
failed = False
for count, sides in rates.items():
    label = "as the job sets them" if count == "job" else count
    print(f"\nsamples {label}:")
    print("| run | old | new |")
    print("|---|---|---|")
    old, new = sides.get("old", []), sides.get("new", [])
    for i in range(max(len(old), len(new))):
        cells = [show(*s[i][1:]) if i < len(s) else "-" for s in (old, new)]
        print(f"| {i + 1} | {cells[0]} | {cells[1]} |")
    summary = {}
    for side, runs in (("old", old), ("new", new)):
        good = [rate for _, rate, _ in runs if rate is not None]
        failed |= len(good) < len(runs)
        if good:
            med = statistics.median(good)
            summary[side] = (med, min(good), max(good), len(good))
    print()
    print("| side | runs | median | min-max | spread (max-min)/median |")
    print("|---|---|---|---|---|")
    for side in ("old", "new"):
        if side in summary:
            med, lo, hi, n = summary[side]
            print(f"| {side} | {n} | {med:.1f} | {lo:.1f}-{hi:.1f} | {100 * (hi - lo) / med:.1f}% |")
        else:
            print(f"| {side} | 0 | - | - | - |")
    if len(summary) == 2 and summary["old"][0] > 0:
        (om, olo, ohi, _), (nm, nlo, nhi, _) = summary["old"], summary["new"]
        ratio = nm / om
        if nlo > ohi:
            verdict = "every new run above every old one"
        elif nhi < olo:
            verdict = "every new run below every old one"
        else:
            verdict = "the two sides overlap: within the spread"
        print(f"\nnew/old (medians): {ratio:.3f} ({100 * (ratio - 1):+.1f}%); {verdict}")
sys.exit(1 if failed else 0)
' "$old_bin" "$new_bin" "$cache" "${job[*]}" | tee "$out/table.md"
status=${PIPESTATUS[1]}
echo "compare-builds.sh: runs in $out" >&2
exit "$status"
