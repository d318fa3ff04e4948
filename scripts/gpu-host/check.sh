#!/usr/bin/env bash
# Checks the GPU host harness without a GPU, in seconds: every shell file of it and of bench/ab
# parses (bash -n); run.sh --list gives every step function a description, and README.md's step
# list is that output; an unknown step, an unknown parameter and a malformed value are refused
# with an error naming them before the kit is sourced or anything is built; parameters reach
# the steps; bench/ab/compare-builds.sh prints its table on two stand-in binaries; and
# ShellCheck, where it is installed, finds nothing at warning level. Prints one line per
# failure; exit status 1 when any check failed. Run by ctest as ktune_gpu_host_harness.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
run=$here/run.sh
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

mapfile -t files < <(find "$here" "$root/bench/ab" -name '*.sh' | sort)
[ ${#files[@]} -gt 3 ] || fail "found only ${#files[@]} shell files under scripts/gpu-host and bench/ab"
for f in "${files[@]}"; do
  bash -n "$f" 2>"$t/err" || fail "bash -n ${f#"$root"/}: $(head -3 "$t/err")"
done

# --list: one line per step (its name, then its description), one indented line per parameter.
"$run" --list >"$t/list" 2>"$t/err" || fail "run.sh --list: exit status $? ($(head -3 "$t/err"))"
mapfile -t listed < <(grep -E '^[a-z0-9]' "$t/list" | awk '{print $1}')
[ ${#listed[@]} -gt 0 ] || fail "run.sh --list names no step"
step_line='^[a-z0-9-]+ +[^ ]' param_line='^ {17}[a-z][a-z0-9-]*=[^ ]*: [^ ]'
while IFS= read -r line; do
  [[ $line =~ $step_line ]] || fail "run.sh --list: step without a description: '$line'"
done < <(grep -E '^[a-z0-9]' "$t/list")
while IFS= read -r line; do
  [[ $line =~ $param_line ]] || fail "run.sh --list: malformed parameter line: '$line'"
done < <(grep -E '^ ' "$t/list")
# Every step function of steps/ is a listed step, and every listed step has one.
mapfile -t functions < <(sed -nE 's/^step_([a-z0-9_]+)\(\).*/\1/p' "$here"/steps/*.sh | tr _ - | sort)
mapfile -t sorted < <(printf '%s\n' "${listed[@]}" | sort)
[ "${functions[*]}" = "${sorted[*]}" ] ||
  fail "the step functions of steps/ ($(echo "${functions[@]}")) are not the steps --list names ($(echo "${sorted[@]}"))"
for name in "${listed[@]}"; do
  grep -q "^# step $name: ." "$here"/steps/*.sh || fail "step $name has no '# step $name: ...' line"
done

# README.md's step list: the ```text block after "## Steps", the same text as --list.
awk '/^## Steps/ {s = 1; next} s && /^```/ {if (b) exit; b = 1; next} b' "$here/README.md" >"$t/readme-list"
if ! diff -u "$t/readme-list" "$t/list" >"$t/diff"; then
  fail "README.md's step list differs from run.sh --list (- README, + --list):"; sed 's/^/  /' "$t/diff" | head -40
fi

# Refused before anything happens: the kit's setup.sh would leave a mark, the build folder and
# OUT would appear.
mkdir -p "$t/kit"
printf 'touch %q\n' "$t/sourced" >"$t/kit/setup.sh"
refused() {  # refused WORD ARGS...: run.sh ARGS exits non-zero, its error names WORD, nothing done
  local word=$1; shift
  "$run" --build "$t/build" "$t/kit" "$t/out" "$@" >"$t/stdout" 2>"$t/stderr"
  local rc=$?
  [ $rc -ne 0 ] || fail "run.sh $*: exit status 0, expected a refusal"
  grep -qF -- "$word" "$t/stderr" || fail "run.sh $*: the error does not name '$word': $(head -3 "$t/stderr")"
  [ ! -e "$t/sourced" ] && [ ! -e "$t/build" ] && [ ! -e "$t/out" ] ||
    fail "run.sh $*: the kit was sourced or a folder made before the refusal"
  rm -rf "$t/sourced" "$t/build" "$t/out"
}
refused nosuchstep kt270 nosuchstep
refused repeets kt270:repeets=3
refused "'x'" smoke:x=1
refused repeats=three kt270:repeats=three
refused "given twice" kt270:repeats=1,repeats=2
refused base ab
refused nosuchtree ab:base="$t/nosuchtree"
refused cache=hot ab:base="$root",cache=hot
refused "'3'" kt270:3
refused --bogus --bogus
rm -rf "$t/out"

# Parameters reach the step: defaults, values given, lists with their commas.
if "$run" --dry-run "$t/kit" "$t/out" kt270 kt270:repeats=3 tune-peers:jobs=copy,transpose \
     scale-out:storages=journal,journal:/dev/shm,trials=100 ab:base="$root" >"$t/dry" 2>"$t/err"; then
  printf '%s\n' "kt270 repeats=1" "kt270 repeats=3" "tune-peers jobs=copy,transpose" \
    "scale-out trials=100 storages=journal,journal:/dev/shm" \
    "ab base=$root repeats=5 samples=7 config=configs/reduce-kt270.toml cache=cold" >"$t/dry-expected"
  diff -u "$t/dry-expected" "$t/dry" >"$t/diff" || { fail "run.sh --dry-run:"; sed 's/^/  /' "$t/diff"; }
else
  fail "run.sh --dry-run: exit status $? ($(head -3 "$t/err"))"
fi
[ ! -e "$t/sourced" ] || fail "run.sh --dry-run sourced the kit"

# bench/ab/compare-builds.sh on two stand-ins for ktune that report fixed rates.
if command -v python3 >/dev/null; then
  for side in old:100 new:125; do
    cat >"$t/${side%:*}" <<EOF
#!/usr/bin/env bash
echo '{"configs_per_second": ${side#*:}, "trials": 10, "measured": 10, "by_status": {"ok": 10},
  "wall_seconds": 1, "gpu_share": 0.5, "timed_share": 0.5, "compile_seconds": 1,
  "wait_compile_seconds": 0, "backend_seconds": 0}'
EOF
    chmod +x "$t/${side%:*}"
  done
  if "$root/bench/ab/compare-builds.sh" --repeats 2 --samples 7,32 --out "$t/ab" "$t/old" "$t/new" \
       >"$t/ab.txt" 2>"$t/ab.err"; then
    [ "$(grep -c '^new/old (medians): 1.250 (+25.0%); every new run above every old one$' "$t/ab.txt")" = 2 ] ||
      { fail "compare-builds.sh: no ratio 1.250 for each sample count:"; sed 's/^/  /' "$t/ab.txt" | head -30; }
    [ "$(ls "$t"/ab/*-s*-r*.json | wc -l)" = 8 ] || fail "compare-builds.sh: not 8 runs in its output folder"
  else
    fail "compare-builds.sh: exit status $? ($(tail -3 "$t/ab.err"))"
  fi
else
  echo "skipped: compare-builds.sh's table (no python3)"
fi

if command -v shellcheck >/dev/null; then
  shellcheck -x -S warning "${files[@]}" >"$t/shellcheck" 2>&1 ||
    { fail "shellcheck -S warning:"; sed 's/^/  /' "$t/shellcheck" | head -60; }
else
  echo "skipped: shellcheck (not installed)"
fi

if [ $failures -gt 0 ]; then
  echo "gpu-host harness: $failures check(s) failed"
  exit 1
fi
echo "gpu-host harness: ${#listed[@]} steps, ${#files[@]} shell files: all checks passed"
