#!/usr/bin/env bash
# Tuning on two GPUs of one host (docs/scale-out.md#measured-on-two-gpus): `--devices all`
# against one device, two processes sharing one study through a journal, then a merge, and a
# worker killed mid-run. Every figure comes from one call, on one host.
#
#   bench/two_gpu.sh KTUNE OUT_DIR [STEPS...]
#     steps (default all): reduce (the README's job, configs/reduce.toml: one device, both
#     devices), matmul (configs/matmul.toml's space, random search,
#     $KTUNE_MATMUL_EVALS evaluations (default 400): one device, both devices), shared (two
#     `ktune tune --device N` processes on one journal study, merged), kill (SIGKILL of device
#     1's GPU worker, then of its tune worker, during `--devices all`). The shared study is
#     optuna:grid with $KTUNE_SHARED_EVALS evaluations per process (default 500).
#   Without two GPUs, $KTUNE_TWO_GPU_REPLAY=RECORDING runs the same commands on replay workers
#   (a check of the script, not a measurement).
# Writes each run's --json and stderr under OUT_DIR, and a table (two-gpu.txt) last.
set -uo pipefail
ktune=$(realpath "${1:?ktune binary}")
out=$(realpath -m "${2:?out dir}")
shift 2
steps=${*:-reduce matmul shared kill}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
table="$out/two-gpu.txt"
say() { echo "$*" | tee -a "$table"; }

replay=()
devices=all
arch=()  # without a GPU, commands that ask one name the architecture instead
if [ -n "${KTUNE_TWO_GPU_REPLAY:-}" ]; then
  replay=(--replay "$(realpath "$KTUNE_TWO_GPU_REPLAY")" --replay-delay "${KTUNE_TWO_GPU_DELAY:-2}")
  devices=0,1
  arch=(--arch sm_90)
else
  n=$("$ktune" devices --json | python3 -c "import json,sys; print(len(json.load(sys.stdin)['devices']))")
  if [ "${n:-0}" -lt 2 ]; then
    echo "two_gpu.sh: $n CUDA device(s) here; two are needed (or set KTUNE_TWO_GPU_REPLAY)" >&2
    exit 2
  fi
  "$ktune" devices >>"$table"
fi

# run NAME ARGS...: `ktune tune ARGS --json`, wall time kept beside the output.
run() {
  local name=$1 t0 t1
  shift
  t0=$(date +%s.%N)
  "$ktune" tune "$@" "${replay[@]}" --json >"$out/$name.json" 2>"$out/$name.err"
  local rc=$?
  t1=$(date +%s.%N)
  python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.3f}')" "$t0" "$t1" \
    >"$out/$name.wall"
  [ $rc = 0 ] || say "$name: exit $rc ($(tail -1 "$out/$name.err"))"
  return $rc
}

# dmon NAME: each GPU's utilisation every second into OUT/NAME.dmon until the next dmon call.
dmon_pid=""
dmon() {
  [ -n "$dmon_pid" ] && kill "$dmon_pid" 2>/dev/null
  dmon_pid=""
  if [ -n "${1:-}" ] && [ -z "${KTUNE_TWO_GPU_REPLAY:-}" ] && command -v nvidia-smi >/dev/null; then
    nvidia-smi dmon -s u -d 1 >"$out/$1.dmon" 2>&1 &
    dmon_pid=$!
  fi
}

summary() { python3 "$(dirname "$0")/two_gpu_summary.py" "$out" "$@" | tee -a "$table"; }

for step in $steps; do
  case $step in
    reduce)
      # The compile cache is filled first (the space at a small n: the CUBINs do not depend on
      # n), so that this space is GPU-bound, as the measured runs are.
      [ -n "${KTUNE_TWO_GPU_REPLAY:-}" ] ||
        run reduce-warm --config configs/reduce.toml --problem n=2**20 --db "$work/warm.db" \
          --device 0 --progress never
      dmon reduce-one
      run reduce-one --config configs/reduce.toml --db "$work/one.db" --device 0 --progress never
      dmon reduce-two
      run reduce-two --config configs/reduce.toml --db "$work/two.db" --devices $devices
      dmon
      summary rate reduce-one reduce-two
      summary halves "$work/one.db"
      summary same-best "$work/one.db" "$work/two.db" reduce n=268435456 ;;
    matmul)
      # Cold compile cache for both (other seeds draw other configurations).
      evals=${KTUNE_MATMUL_EVALS:-400}
      dmon matmul-one
      run matmul-one --config configs/matmul.toml --strategy random --budget-evals "$evals" \
        --seed 11 --db "$work/mm-one.db" --device 0 --progress never
      dmon matmul-two
      run matmul-two --config configs/matmul.toml --strategy random --budget-evals "$evals" \
        --seed 12 --db "$work/mm-two.db" --devices $devices
      dmon
      summary rate matmul-one matmul-two ;;
    shared)
      # Two processes, one per GPU, one study in a journal file; then one database of both.
      for d in 0 1; do
        dev=(--device $d)
        [ -n "${KTUNE_TWO_GPU_REPLAY:-}" ] && dev=()
        run "shared-$d" --config configs/reduce.toml --strategy optuna:grid \
          --budget-evals "${KTUNE_SHARED_EVALS:-500}" --study-storage "journal:$work/shared.log" \
          --db "$work/shared-$d.db" "${dev[@]}" --progress never &
      done
      wait
      "$ktune" merge "$work/shared-0.db" "$work/shared-1.db" -o "$work/fleet.db" >"$out/merge.txt" 2>&1 ||
        say "merge failed: $(tail -1 "$out/merge.txt")"
      "$ktune" best reduce --problem n=2**28 --db "$work/fleet.db" "${arch[@]}" >"$out/fleet-best.txt" 2>&1
      summary shared "$work/shared-0.db" "$work/shared-1.db" "$work/fleet.db" ;;
    kill)
      # SIGKILL of device 1's GPU worker (costs its trial), later of device 1's whole tune
      # worker (started again; it rejoins the study); the run must still cover the space.
      db="$work/kill.db"
      run kill --config configs/reduce.toml --db "$db" --devices $devices &
      top=$!
      stored() {
        python3 -c "import sqlite3; print(sqlite3.connect('file:$db?mode=ro', uri=True).execute('select count(*) from trials').fetchone()[0])" 2>/dev/null || echo 0
      }
      worker1() {  # the tune worker of device 1, below the `--devices` process
        ps -eo pid=,args= | grep -E "ktune tune .*--device 1( |$)" | grep -v -- "--devices" | awk '{print $1}' | head -1
      }
      for _ in $(seq 600); do sleep 0.2; [ "$(stored)" -ge 1500 ] && break; done
      w1=$(worker1)
      gpu1=$(ps -eo pid=,ppid=,args= | awk -v p="$w1" '$2==p && /__worker/ {print $1}' | head -1)
      say "kill: $(stored) trials stored; SIGKILL GPU worker $gpu1 of device 1's tune worker $w1"
      [ -n "$gpu1" ] && kill -9 "$gpu1"
      for _ in $(seq 600); do sleep 0.2; [ "$(stored)" -ge 3000 ] && break; done
      w1=$(worker1)
      say "kill: $(stored) trials stored; SIGKILL device 1's tune worker $w1"
      [ -n "$w1" ] && kill -9 "$w1"
      wait $top
      "$ktune" space --config configs/reduce.toml --json --sample 0 "${arch[@]}" \
        >"$out/reduce-space.json" 2>/dev/null
      summary kill kill "$db" "$out/reduce-space.json" ;;
    *) say "unknown step $step" ;;
  esac
done
