# shellcheck shell=bash disable=SC2154  # out, build, ktune, limit, db and P come from lib.sh
# The peer table (bench/peers/README.md): the kernels tuned into one database, their stored
# bests timed beside cudaMemcpy, CUB and cuBLAS, the hardware's limits, and the recordings.

# step brute: the whole reduce space at each size, default (adaptive) measurement, into the shared database; 2^25 and 2^28 exported as recordings
# param sizes=20,22,25,28: the sizes, as powers of two
step_brute() {
  local n
  for n in ${P[sizes]//,/ }; do
    "$ktune" space reduce --problem "n=2**$n" --json --sample 0 >"$out/space-2_$n.json"
    timeout -s INT -k 20 "$limit" "$ktune" tune reduce --problem "n=2**$n" --strategy brute_force --db $db --json >"$out/brute-2_$n.json" \
      2>"$out/brute-2_$n.err"
    log "brute 2^$n: rc=$? $(python3 -c "import json;d=json.load(open('$out/space-2_$n.json'));print('cartesian',d['cartesian'],'valid',d['valid'])")"
  done
  python3 bench/summarize_tune.py b25="$out/brute-2_25.json" b28="$out/brute-2_28.json" \
    --db $db --variants n=33554432 | tee -a "$out/summary.txt"
  export_rec reduce $db --problem "n=2**28"
  export_rec reduce $db --problem "n=2**25"
}

# step tune-peers: each kernel of the peer table tuned at the table's size (7 samples) into the shared database
# param jobs=copy,transpose,stencil3d,convolution2d,matmul,matmul_tf32,matmul_tf32_wgmma,matmul_tf32_tma: the jobs (configs/JOB.toml); reduce's bests come from the brute step
step_tune_peers() {
  local job
  for job in ${P[jobs]//,/ }; do
    tune_job "$job" --config "configs/$job.toml" --samples 7 --budget-time $((limit - 30))
  done
}

# step peers: the shared database's bests timed beside cudaMemcpy, CUB and cuBLAS, with the measured ceilings (bench/peers); then the recordings of the kernels tuned
# param only=: the kernels timed (ktune_peers --only); every one by default
# param export=copy,transpose,stencil3d,convolution2d: the kernels whose recordings are exported (matmul's never; reduce's come from the brute step)
step_peers() {
  local only=() job
  [ -n "${P[only]}" ] && only=(--only "${P[only]}")
  run_peers "$limit" "${only[@]}"
  for job in ${P[export]//,/ }; do
    [ "$job" = matmul ] || export_rec "$job" $db
  done
}

# step table: the whole peer table from one call and a fresh database: every kernel of it tuned, time-boxed, then the peers step's timing
# param budget=25: seconds of reduce's random searches at 2^25 and 2^28, and of each kernel not tuned whole
step_table() {
  # copy, transpose, stencil3d and matmul_tf32_tma are tuned whole (tma's brute force cut at
  # 25 s measured 852 of its 1,317 and missed its best). On an H200 about 420 s after the
  # build, which takes 60-110 s.
  local budget=${P[budget]} n job whole
  rm -f $db $db-wal $db-shm
  for n in 25 28; do
    tune_job "reduce-2_$n" reduce --problem "n=2**$n" --strategy random --budget-time "$budget"
  done
  for job in copy transpose stencil3d convolution2d matmul matmul_tf32 matmul_tf32_wgmma matmul_tf32_tma; do
    whole=(); case $job in copy|transpose|stencil3d|matmul_tf32_tma) ;; *) whole=(--budget-time "$budget") ;; esac
    tune_job $job --config "configs/$job.toml" --samples 7 "${whole[@]}"
  done
  run_peers 400
}

# step hopper-limits: the TF32 tensor-core peak and the L2 read bandwidth (bench/hopper/limits.cu)
step_hopper_limits() {
  "$build/bench/ktune_hopper_limits" >"$out/hopper-limits.txt" 2>&1
  log "hopper-limits: rc=$?"; tee -a "$out/summary.txt" <"$out/hopper-limits.txt"
}

# step sizes: reduce, transpose and convolution2d brute-forced over their job files' spaces at several sizes each (7 samples), exported as recordings
# param reduce=18,20,22,24,26,28: reduce's sizes n, as powers of two
# param transpose=1024,2048,4096,8192,12288,16384: transpose's square sizes (rows = cols)
# param convolution2d=512,768,1024,2048,3072,4096: convolution2d's square images (h = w, the 15 x 15 filter)
step_sizes() {
  local sdb=/tmp/sizes.db k v problem label
  rm -f $sdb $sdb-wal $sdb-shm
  for k in reduce transpose convolution2d; do
    for v in ${P[$k]//,/ }; do
      case $k in
        reduce) problem="n=2**$v" ;;
        transpose) problem="rows=$v,cols=$v" ;;
        convolution2d) problem="h=$v,w=$v" ;;
      esac
      label=$k-${problem//[*=,]/_}
      timeout -s INT -k 20 "$limit" "$ktune" tune --config "configs/$k.toml" --problem "$problem" \
        --strategy brute_force --samples 7 --db $sdb --json >"$out/sizes-$label.json" 2>"$out/sizes-$label.err"
      log "sizes $k $problem: rc=$? $(python3 bench/summarize_tune.py "$label=$out/sizes-$label.json" 2>&1 | tail -1)"
      export_rec "$k" $sdb --problem "$problem"
    done
  done
}

# step recordings: soa_aos, streams and reduce_f32 brute-forced at their default sizes and exported as recordings
step_recordings() {
  local rdb=/tmp/rec.db job
  for job in soa_aos streams reduce_f32; do
    timeout -s INT -k 20 "$limit" "$ktune" tune --config "configs/$job.toml" --db $rdb --json >"$out/tune-$job.json" \
      2>"$out/tune-$job.err"
    log "tune $job: rc=$? $(python3 bench/summarize_tune.py "$job=$out/tune-$job.json" 2>&1 | tail -1)"
    export_rec $job $rdb
  done
}
