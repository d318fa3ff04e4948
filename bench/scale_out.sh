#!/usr/bin/env bash
# The scaling figure of a shared Optuna study (docs/scale-out.md#scaling): wall time of a replay
# run with 1, 2 and 4 `ktune tune` worker processes on one study, each evaluation made to take
# --replay-delay milliseconds, the speed-up over one worker, and the storage's overhead per trial.
#
#   bench/scale_out.sh [KTUNE] [STORAGE] [TRIALS] [DELAY_MS]
#     KTUNE    the ktune binary (default build/tuner/ktune)
#     STORAGE  journal (default: a journal file in a temporary directory), journal:DIR (the
#              journal in DIR, e.g. /dev/shm, to leave the file system's fsync out), or a
#              postgresql://... URL (a server you started; see the doc)
#     TRIALS   trials in all, split between the workers (default 800)
#     DELAY_MS simulated evaluation time (default 20)
#
# Two times per row: "wall" is the whole command, Python's start and the final re-timing
# included; "tuning" runs from the first trial stored by any worker to the last one, which is
# what more workers divide. overhead/trial = tuning * workers / trials - DELAY_MS.
set -euo pipefail
ktune=$(realpath "${1:-build/tuner/ktune}")
storage=${2:-journal}
trials=${3:-800}
delay=${4:-20}
recording=$(realpath "$(dirname "$0")/../db/recordings/cn_pnpoly-NVIDIA_GeForce_RTX_3060_Laptop_GPU-problem_size=20000000.json.gz")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
echo "workers  wall_s  tuning_s  speedup(tuning)  speedup(wall)  overhead_ms/trial   ($storage, $trials trials, $delay ms each)"
base_tuning=""; base_wall=""
for workers in 1 2 4; do
  rm -f w*.db w*.err
  case "$storage" in
    journal) url="journal:$work/study-$workers.log" ;;
    journal:*) url="journal:${storage#journal:}/ktune-scale-$$-$workers.log" ;;
    *) url="$storage" ;;
  esac
  name="scale-$workers-$$-$RANDOM"
  per=$((trials / workers))
  start=$(date +%s.%N)
  for i in $(seq 1 "$workers"); do
    "$ktune" tune --replay "$recording" --strategy optuna:random --study-storage "$url" \
      --strategy-option study_name="$name" --budget-evals "$per" --replay-delay "$delay" \
      --seed "$i" --retime-top 0 --db "w$i.db" -q 2> "w$i.err" &
  done
  failed=0
  for job in $(jobs -p); do wait "$job" || failed=1; done
  if [ "$failed" = 1 ]; then cat w*.err >&2; exit 1; fi
  case "$url" in journal:*) rm -f "${url#journal:}"*;; esac
  end=$(date +%s.%N)
  python3 - "$workers" "$start" "$end" "$trials" "$delay" "${base_tuning:-0}" "${base_wall:-0}" <<'PY' > row.txt
import glob, sqlite3, sys, datetime
workers, start, end, trials, delay, base_t, base_w = sys.argv[1:]
workers, trials, delay = int(workers), int(trials), float(delay)
times, n = [], 0
for db in glob.glob("w*.db"):
    c = sqlite3.connect(db)
    for (t,) in c.execute("SELECT created_at FROM trials WHERE kind = 0"):
        times.append(datetime.datetime.strptime(t, "%Y-%m-%dT%H:%M:%S.%fZ"))
        n += 1
tuning = (max(times) - min(times)).total_seconds()
wall = float(end) - float(start)
over = tuning * workers / n * 1000 - delay
st = float(base_t) / tuning if float(base_t) else 1.0
sw = float(base_w) / wall if float(base_w) else 1.0
print(f"{workers:7d}  {wall:6.2f}  {tuning:8.2f}  {st:15.2f}  {sw:13.2f}  {over:17.2f}   ({n} trials)")
print(f"BASE {tuning} {wall}")
PY
  grep -v '^BASE' row.txt
  if [ "$workers" = 1 ]; then read -r _ base_tuning base_wall < <(grep '^BASE' row.txt); fi
done
