# shellcheck shell=bash disable=SC2154  # out, build, limit, db and P come from lib.sh
# The ktune Python package in place of Kernel Tuner, on Kernel Tuner's own examples.

# step kt-examples: Kernel Tuner's examples run by Kernel Tuner and, with the import line changed, by the ktune Python package: the best configuration each prints and its wall time
# param peer=.peers/kernel_tuner: the Kernel Tuner folder, with examples/ and site/
# param examples=vector_add,vector_add_metric,vector_add_observers,stencil,matmul,convolution,reduction: the examples (examples/NAME.py); one the folder lacks is logged and skipped
# param runners=kernel_tuner,ktune: who runs them: kernel_tuner (as written), ktune (`from ktune import tune_kernel`, `import ktune as kernel_tuner`, the observers from `ktune.observers`)
step_kt_examples() {
  local kt ex pypath name variants runner variant t0 rc wall best
  kt=$(cd "${P[peer]}" 2>/dev/null && pwd)
  if [ -z "$kt" ] || [ ! -d "$kt/examples" ]; then
    log "kt-examples: no Kernel Tuner examples at ${P[peer]}"; return
  fi
  ex=$(mktemp -d); cp "$kt"/examples/* "$ex/"
  pypath="$build/python:$kt/site"
  for name in ${P[examples]//,/ }; do
    if [ ! -f "$ex/$name.py" ]; then
      log "kt-examples $name: skipped, no $name.py in ${P[peer]}/examples (copy it there from Kernel Tuner's examples/cuda)"
      continue
    fi
    sed -e 's/^from kernel_tuner import tune_kernel$/from ktune import tune_kernel/' \
      -e 's/^import kernel_tuner$/import ktune as kernel_tuner/' \
      -e 's/^from kernel_tuner.observers.nvml import NVMLObserver$/from ktune.observers import NVMLObserver/' \
      -e 's/^from kernel_tuner.observers.register import RegisterObserver$/from ktune.observers import RegisterObserver/' \
      "$ex/$name.py" >"$ex/${name}_ktune.py"
    variants=""
    for runner in ${P[runners]//,/ }; do
      case $runner in kernel_tuner) variants+=" $name" ;; ktune) variants+=" ${name}_ktune" ;; esac
    done
    for variant in $variants; do
      t0=$(date +%s.%N)
      (cd "$ex" && timeout -s INT -k 20 "$limit" env PYTHONPATH="$pypath" KTUNE_DB=$db PYTHONUNBUFFERED=1 \
        python3 "$variant.py" >"$out/kt-$variant.log" 2>&1)
      rc=$?
      wall=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$t0" "$(date +%s.%N)")
      best=$(grep -i -A1 "best performing config" "$out/kt-$variant.log" | grep -v -i "best performing" | tail -1)
      log "kt-examples $variant: rc=$rc wall ${wall} s; best: ${best:-none} $( [ $rc -ne 0 ] && tail -1 "$out/kt-$variant.log")"
    done
  done
  rm -rf "$ex"
}
check_kt_examples() {
  local runner
  for runner in ${P[runners]//,/ }; do
    case $runner in kernel_tuner|ktune) ;; *)
      echo "run.sh: step kt-examples: runners=${P[runners]}: '$runner' is neither kernel_tuner nor ktune" >&2; return 1 ;;
    esac
  done
}
