#!/usr/bin/env bash
# Builds ktune on a GPU host and runs the steps that need a GPU, writing logs under OUT.
#
#   scripts/gpu-host/run.sh [OPTIONS] KIT OUT [STEP[:key=value[,key=value]...]]...
#   scripts/gpu-host/run.sh --list
#
# KIT: the build dependencies for a host without a package manager, with a setup.sh that
# unpacks them under the prefix it is given and exports the search paths (CMAKE_PREFIX_PATH,
# CPATH, LD_LIBRARY_PATH, Python3_EXECUTABLE). OUT: the folder of the logs; OUT/summary.txt
# holds the figures of the call. The build always runs; then each STEP in the order given
# (default: test), with its parameters (--list names them and their defaults). A value that
# holds commas is a list: tune-peers:jobs=copy,transpose. Every step and parameter is checked
# before anything is built.
#
# Options:
#   --list           every step, its description and its parameters, then exit
#   --dry-run        check the steps and print each with its parameters, then exit
#   --deadline S     a step starts only while less than S seconds have passed (default 540)
#   --step-limit S   each tuning run is cut at S seconds (default 150)
#   --build DIR      the build folder, relative to the repository root (default build-gpu)
#   --deps-prefix D  where the kit unpacks its packages (default $TMPDIR/ktune-deps)
set -uo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"
gh_load_steps

usage() { sed -n '2,/^set /{/^set /d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }
number() { [[ ${2:-} =~ ^[0-9]+$ ]] || gh_die "$1 takes a number of seconds, not '${2:-}'"; }
dry=0
while [ $# -gt 0 ]; do
  case $1 in
    --list) gh_list; exit 0 ;;
    --dry-run) dry=1; shift ;;
    --deadline) number "$1" "${2:-}"; gh_deadline=$2; shift 2 ;;
    --step-limit) number "$1" "${2:-}"; gh_step_limit=$2; shift 2 ;;
    --build) [ -n "${2:-}" ] || gh_die "--build takes a folder"; gh_build=$2; shift 2 ;;
    --deps-prefix) [ -n "${2:-}" ] || gh_die "--deps-prefix takes a folder"; gh_deps_prefix=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; break ;;
    -*) gh_die "unknown option $1 (run.sh --help)" ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || { usage >&2; exit 2; }
kit=$(realpath -m "$1"); out_dir=$(realpath -m "$2"); shift 2
specs=("$@"); [ ${#specs[@]} -gt 0 ] || specs=(test)
# Paths in parameters are relative to the repository root, where every step runs.
cd "$gh_root" || exit 2
for spec in "${specs[@]}"; do
  gh_params "$spec" || exit 2
  ((dry)) && gh_describe
done
((dry)) && exit 0
[ -f "$kit/setup.sh" ] || gh_die "no setup.sh in the kit $kit"

gh_start "$kit" "$out_dir"
gh_run "${specs[@]}"
