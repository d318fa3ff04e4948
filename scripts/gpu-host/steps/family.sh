# shellcheck shell=bash disable=SC2154  # out, build, ktune, limit and P come from lib.sh
# Families of problem sizes (docs/many-sizes.md): each kernel tuned as a family at the sizes of
# db/recordings/sizes, and each size tuned cold at several budgets, timed in the same call; the
# databases go to OUT/family/ (bench/selector/acceptance.py reads them with the recordings).

# step family: reduce, transpose and convolution2d tuned as a family of six sizes each (with the cross-measurement and the selector, then without), the C++ client's answers at the sizes between them (db/recordings/sizes-between), then each size cold (no transfer, one ktune tune per size) at each cold budget, all with strategy auto; wall times to summary.txt
# param budget=10,20: evaluations per size of the family, a family of each
# param cold=20,40,80,160: the budgets per size of the cold runs
# param kernels=reduce,transpose,convolution2d: the kernels (their configs/KERNEL.toml)
step_family() {
  local k b t0 t1 problems=() sizes dir="$out/family"
  mkdir -p "$dir"
  for k in ${P[kernels]//,/ }; do
    case $k in
      reduce) problems=(--problem "n=2**18..2**28..4"); sizes="n=2**18 n=2**20 n=2**22 n=2**24 n=2**26 n=2**28" ;;
      transpose) problems=(--problem "rows=[1024,2048,4096,8192,12288,16384]" --problem "cols=rows")
        sizes="rows=1024,cols=1024 rows=2048,cols=2048 rows=4096,cols=4096 rows=8192,cols=8192 rows=12288,cols=12288 rows=16384,cols=16384" ;;
      convolution2d) problems=(--problem "h=[512,768,1024,2048,3072,4096]" --problem "w=h")
        sizes="h=512,w=512 h=768,w=768 h=1024,w=1024 h=2048,w=2048 h=3072,w=3072 h=4096,w=4096" ;;
      *) log "family: no sizes for $k"; continue ;;
    esac
    local arm rc selector fb
    for fb in ${P[budget]//,/ }; do
      for arm in family family-tuning; do
        selector=(); [ $arm = family-tuning ] && selector=(--no-selector)
        rm -f "$dir/$k-$arm-$fb.db"*
        t0=$(date +%s.%N)
        KTUNE_CACHE_DIR=/tmp/$arm-cache-$k-$fb timeout -s INT -k 20 "$limit" "$ktune" tune --config "configs/$k.toml" \
          "${problems[@]}" --strategy auto --budget-evals "$fb" --db "$dir/$k-$arm-$fb.db" --json \
          "${selector[@]}" >"$dir/$k-$arm-$fb.json" 2>"$dir/$k-$arm-$fb.err"
        rc=$?
        t1=$(date +%s.%N)
        log "$arm $k budget $fb: rc=$rc $(python3 -c "print(f'{$t1 - $t0:.1f} s')")"
        echo "== $arm $k budget=$fb wall_s=$(python3 -c "print(f'{$t1 - $t0:.2f}')") rc=$rc" >>"$out/summary.txt"
      done
      # The run-time client's answers at the untuned sizes, from the family's database.
      local f untuned=()
      for f in db/recordings/sizes-between/"$k"-*.json.gz; do
        f=${f##*-NVIDIA_H200-}
        untuned+=("${f%.json.gz}")
      done
      "$build/bench/client_picks" "$dir/$k-family-$fb.db" "$k" "${untuned[@]}" >"$dir/$k-client-$fb.jsonl" 2>"$dir/$k-client-$fb.err"
      log "client $k budget $fb: rc=$? $(grep -c selector "$dir/$k-client-$fb.jsonl") of ${#untuned[@]} answered by the selector"
    done
    for b in ${P[cold]//,/ }; do
      rm -f "$dir/$k-cold-$b.db"*
      t0=$(date +%s.%N)
      for p in $sizes; do
        KTUNE_CACHE_DIR=/tmp/cold-cache-$k-$b timeout -s INT -k 20 "$limit" "$ktune" tune --config "configs/$k.toml" \
          --problem "$p" --strategy auto --budget-evals "$b" --db "$dir/$k-cold-$b.db" -q >>"$dir/$k-cold-$b.log" 2>&1
      done
      t1=$(date +%s.%N)
      echo "== cold $k budget=$b wall_s=$(python3 -c "print(f'{$t1 - $t0:.2f}')")" >>"$out/summary.txt"
      log "cold $k budget $b: $(python3 -c "print(f'{$t1 - $t0:.1f} s')")"
    done
    rm -rf /tmp/family-cache-$k-* /tmp/family-tuning-cache-$k-* /tmp/cold-cache-$k-*
  done
}
