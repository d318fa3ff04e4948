# shellcheck shell=bash
# The harness's shared part (scripts/gpu-host/run.sh sources it): the steps read from their
# files, STEP:key=value arguments checked and turned into parameters, logging to OUT/summary.txt,
# the build, the time limits, and the helpers that several steps use.

gh_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
gh_root=$(cd "$gh_dir/../.." && pwd)
# The step files, in the order --list shows them; any other file of steps/ comes after these.
gh_groups=(build-test throughput start peers family python scale examples)

# The call-wide settings (run.sh's options).
gh_deadline=540                              # a step starts only before this many seconds
gh_step_limit=150                            # each tuning run is cut at this many seconds
gh_build="build-gpu"                         # the build folder, relative to the repository root
gh_deps_prefix=${TMPDIR:-/tmp}/ktune-deps    # where the kit unpacks its packages

declare -ga gh_steps=()    # step names, in --list's order
declare -gA gh_desc=()     # step -> its one-line description
declare -gA gh_keys=()     # step -> its parameter names, space separated
declare -gA gh_default=()  # "step/key" -> the parameter's default
declare -gA gh_pdesc=()    # "step/key" -> what the parameter sets
# The running step's parameters: its defaults, then what the call gave.
declare -gA P=()
gh_name=""               # the running step's name

# What the steps use, set by gh_start: the output and build folders (absolute paths), the
# binary, the limit of each tuning run, the deadline and the time the build began.
out="" build="" ktune="" limit="" deadline="" start=""
# One database for the brute-force, peer-tuning, peer, table and kt-examples steps, so the peer
# table finds every kernel's stored best, also across calls on a warm host.
# shellcheck disable=SC2034  # read by the steps
db=/tmp/ktune-gpu.db

gh_die() { echo "run.sh: $*" >&2; exit 2; }

# gh_load_steps: sources every step file and reads its "# step NAME: ..." and
# "# param KEY=DEFAULT: ..." lines; each step is the function step_NAME (dashes as underscores).
gh_load_steps() {
  local files=() f g line rest name key fn
  for g in "${gh_groups[@]}"; do files+=("$gh_dir/steps/$g.sh"); done
  for f in "$gh_dir"/steps/*.sh; do
    [[ " ${files[*]} " == *" $f "* ]] || files+=("$f")
  done
  for f in "${files[@]}"; do
    [ -f "$f" ] || gh_die "no step file $f"
    # shellcheck source=/dev/null
    source "$f" || gh_die "$f does not load"
    name=""
    while IFS= read -r line; do
      case $line in
        "# step "*)
          rest=${line#"# step "}
          [[ $rest =~ ^([a-z0-9]+(-[a-z0-9]+)*):\ (.*[^ ].*)$ ]] ||
            gh_die "${f#"$gh_root"/}: '$line' is not '# step NAME: DESCRIPTION'"
          name=${BASH_REMATCH[1]}
          [ -z "${gh_desc[$name]+x}" ] || gh_die "step $name is declared twice"
          gh_steps+=("$name"); gh_desc[$name]=${BASH_REMATCH[3]}; gh_keys[$name]="" ;;
        "# param "*)
          rest=${line#"# param "}
          [ -n "$name" ] || gh_die "${f#"$gh_root"/}: '$line' comes before any '# step' line"
          [[ $rest =~ ^([a-z][a-z0-9-]*)=([^ ]*):\ (.*[^ ].*)$ ]] ||
            gh_die "${f#"$gh_root"/}: '$line' is not '# param KEY=DEFAULT: DESCRIPTION'"
          key=${BASH_REMATCH[1]}
          [ -z "${gh_default[$name/$key]+x}" ] || gh_die "step $name: parameter $key is declared twice"
          gh_keys[$name]+=" $key"
          gh_default[$name/$key]=${BASH_REMATCH[2]}; gh_pdesc[$name/$key]=${BASH_REMATCH[3]} ;;
      esac
    done <"$f"
  done
  for name in "${gh_steps[@]}"; do
    declare -F "step_${name//-/_}" >/dev/null || gh_die "step $name has no function step_${name//-/_}"
  done
  while read -r _ _ fn; do
    case $fn in
      step_*) name=${fn#step_}; name=${name//_/-}
              [ -n "${gh_desc[$name]+x}" ] || gh_die "function $fn has no '# step $name: ...' line" ;;
    esac
  done < <(declare -F)
}

# gh_list: every step, its description and its parameters with their defaults.
gh_list() {
  local name key
  for name in "${gh_steps[@]}"; do
    printf '%-15s %s\n' "$name" "${gh_desc[$name]}"
    for key in ${gh_keys[$name]}; do
      printf '%17s%s=%s: %s\n' "" "$key" "${gh_default[$name/$key]}" "${gh_pdesc[$name/$key]}"
    done
  done
}

# gh_params SPEC: SPEC (STEP[:key=value[,key=value]...]) checked; its step's name into gh_name
# and its parameters into P, or an error naming the step or parameter and status 2. A comma
# followed by no key= continues the value before it: jobs=copy,transpose is one value.
gh_params() {
  local spec=$1 name=${1%%:*} piece key="" known pieces=()
  local -A given=()
  if [ -z "${gh_desc[$name]+x}" ]; then
    echo "run.sh: unknown step '$name' (run.sh --list names the steps)" >&2; return 2
  fi
  known=${gh_keys[$name]# }
  local takes="it takes none"; [ -n "$known" ] && takes="its parameters: $known"
  P=()
  for key in $known; do P[$key]=${gh_default[$name/$key]}; done
  gh_name=$name
  key=""
  if [[ $spec == *:* ]]; then IFS=, read -ra pieces <<<"${spec#*:}"; fi
  for piece in "${pieces[@]}"; do
    if [[ $piece =~ ^([a-z][a-z0-9-]*)=(.*)$ ]]; then
      key=${BASH_REMATCH[1]}
      if [[ " $known " != *" $key "* ]]; then
        echo "run.sh: step $name: unknown parameter '$key' ($takes)" >&2
        return 2
      fi
      if [ -n "${given[$key]+x}" ]; then
        echo "run.sh: step $name: parameter '$key' given twice" >&2; return 2
      fi
      given[$key]=1; P[$key]=${BASH_REMATCH[2]}
    elif [ -n "$key" ]; then
      P[$key]+=",$piece"
    else
      echo "run.sh: step $name: '$piece' is not key=value ($takes)" >&2
      return 2
    fi
  done
  for key in "${!given[@]}"; do
    if [[ ${gh_default[$name/$key]} =~ ^[0-9]+$ && ! ${P[$key]} =~ ^[0-9]+$ ]]; then
      echo "run.sh: step $name: $key=${P[$key]} is not a whole number" >&2; return 2
    fi
  done
  # A step's own check of its parameters (check_NAME), where it has one.
  if declare -F "check_${name//-/_}" >/dev/null; then "check_${name//-/_}" || return 2; fi
  return 0
}

# gh_describe: the running step and its parameters, one line.
gh_describe() {
  local key line=$gh_name
  for key in ${gh_keys[$gh_name]}; do line+=" $key=${P[$key]}"; done
  echo "$line"
}

log() { echo "== $*" | tee -a "$out/summary.txt"; }

# gh_build_tree SRC DIR CMAKE_LOG BUILD_LOG [TARGET...]: a Release build of the source tree SRC
# into DIR (Ninja, the kit's Python); the errors shown and status 1 when it fails.
gh_build_tree() {
  local src=$1 dir=$2 cmake_log=$3 build_log=$4; shift 4
  cmake -S "$src" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE="${Python3_EXECUTABLE:-python3}" \
    >"$cmake_log" 2>&1 || { tail -30 "$cmake_log"; return 1; }
  ninja -C "$dir" "$@" >"$build_log" 2>&1 || { grep -E "error|FAILED" "$build_log" | head -40; return 1; }
}

# gh_start KIT OUT: the kit's packages unpacked, then the build; sets what the steps use.
gh_start() {
  local kit=$1
  out=$2
  build=$gh_root/$gh_build
  [[ $gh_build == /* ]] && build=$gh_build
  limit=$gh_step_limit
  deadline=$gh_deadline
  mkdir -p "$out" "$out/recordings"
  # shellcheck source=/dev/null
  # The prefix is passed explicitly: without one, setup.sh would take this script's arguments.
  source "$kit/setup.sh" "$gh_deps_prefix" >/dev/null
  # The kit's Python packages (Optuna, SQLAlchemy, ...) arrive without byte code: compiled once
  # here, instead of by every process that imports them (about a second of each Optuna start).
  python3 -m compileall -q -j 0 "${GPU_KIT_PREFIX:-$gh_deps_prefix}/usr/lib/python3/dist-packages" >/dev/null 2>&1 || true
  export KTUNE_CACHE_DIR=${KTUNE_CACHE_DIR:-/tmp/ktune-cache}
  log "host: $(nproc) cores, $(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader 2>&1)"
  start=$(date +%s)
  gh_build_tree "$gh_root" "$build" "$out/cmake.log" "$out/build.log" || exit 1
  log "build: $(( $(date +%s) - start )) s"
  ktune=$build/tuner/ktune
  "$ktune" devices | tee -a "$out/summary.txt"
}

# gh_run SPEC...: each step in turn, while the deadline has not passed.
gh_run() {
  local spec
  for spec in "$@"; do
    gh_params "$spec" || exit 2
    if (( $(date +%s) - start > deadline )); then log "skipped $gh_name: past ${deadline} s"; continue; fi
    "step_${gh_name//-/_}"
  done
}

# Helpers of the steps.

export_rec() {  # export_rec KERNEL DB PROBLEM...: the database's trials as a shipped recording
  local k=$1 db=$2 said; shift 2
  said=$("$ktune" export "$k" --db "$db" --kt-cache "$out/recordings/" "$@" 2>&1) || log "export $k failed: $said"
  echo "$said" >>"$out/export.log"
}
tune_job() {  # tune_job LABEL ARGS...: `ktune tune ARGS` into the shared database, cut at $limit
  local label=$1; shift
  timeout -s INT -k 20 "$limit" "$ktune" tune "$@" --db $db --json >"$out/tune-$label.json" 2>"$out/tune-$label.err"
  log "tune $label: rc=$? $(python3 bench/summarize_tune.py "$label=$out/tune-$label.json" 2>&1 | tail -1)"
}
median_run() {  # median_run KEY FILE...: of the JSON files (timelines left out), the one whose KEY is the median
  python3 -c "
import json, sys
runs = [f for f in sys.argv[2:] if not f.endswith('.trace.json')]
runs.sort(key=lambda f: json.load(open(f)).get(sys.argv[1], 0))
print(runs[len(runs) // 2] if runs else '')" "$@" 2>/dev/null
}
run_peers() {  # run_peers SECONDS ARGS...: bench/peers on the shared database's bests
  local seconds=$1; shift
  timeout -s INT -k 20 "$seconds" "$build/bench/ktune_peers" --db $db --json "$out/peers.json" "$@" \
    >"$out/peers.txt" 2>"$out/peers.err"
  log "peers: rc=$?"; tee -a "$out/summary.txt" <"$out/peers.txt"
  cp $db "$out/peers.db"
}
