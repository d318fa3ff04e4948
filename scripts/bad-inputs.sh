#!/usr/bin/env bash
# A catalogue of hostile inputs to the built `ktune`: every one must end with a clear error line
# (`error: ...` on stderr) and the documented exit code (docs/cli.md), within a time limit, with
# no crash (a signal), no hang and nothing silently accepted; a refused `tune` leaves no database
# file. Prints one line per failing input and the counts; exit status 1 when any input failed.
#
#   scripts/bad-inputs.sh KTUNE [EMPTY_PLUGIN]
#
# KTUNE is the built binary; EMPTY_PLUGIN a plugin library that describes no kernels (the test
# build makes one: tests/plugins/empty.cpp). Run by ctest as ktune_bad_inputs.
set -uo pipefail

KTUNE=$(realpath "${1:?usage: bad-inputs.sh KTUNE [EMPTY_PLUGIN]}")
EMPTY_PLUGIN=${2:+$(realpath "$2")}
SRC=$(cd "$(dirname "$0")/.." && pwd)
LIMIT=${KTUNE_BAD_INPUT_SECONDS:-60}
T=$(mktemp -d)
trap 'chmod -R u+w "$T"; rm -rf "$T"' EXIT
cd "$T" || exit 1
export KTUNE_CACHE_DIR="$T/cache" KTUNE_DB="$T/default.db"
unset KTUNE_PLUGIN_PATH

tried=0 passed=0 crashes=0 hangs=0 accepted=0 wrong=0 vague=0
REC="$SRC/db/recordings/reduce-NVIDIA_H100_80GB_HBM3-n=268435456.json.gz"

# expect CODE NAME [--no-db FILE] [--grep TEXT] -- ARGS...: run `ktune ARGS` and check it.
expect() {
  local code=$1 name=$2 nodb="" text=""
  shift 2
  while [[ $1 != -- ]]; do
    case $1 in
      --no-db) nodb=$2 ;;
      --grep) text=$2 ;;
    esac
    shift 2
  done
  shift
  tried=$((tried + 1))
  [[ -n $nodb ]] && rm -f "$nodb" "$nodb-wal" "$nodb-shm"
  timeout -s KILL "$LIMIT" "$KTUNE" "$@" >"$T/out" 2>"$T/err" </dev/null
  local rc=$? why=""
  if ((rc == 137)); then
    hangs=$((hangs + 1)) why="hang (killed after ${LIMIT} s)"
  elif ((rc > 128)); then
    crashes=$((crashes + 1)) why="crash (signal $((rc - 128)))"
  elif ((rc == 0 && code != 0)); then
    accepted=$((accepted + 1)) why="silently accepted (exit 0)"
  elif ((rc != code)); then
    wrong=$((wrong + 1)) why="exit $rc, documented $code"
  elif ((code >= 2)) && ! grep -q '^error: ' "$T/err"; then
    vague=$((vague + 1)) why="no 'error:' line"
  elif ((code >= 2)) && grep -q '^error: internal' "$T/err"; then
    vague=$((vague + 1)) why="an internal error"
  elif [[ -n $text ]] && ! grep -qF -- "$text" "$T/err" "$T/out"; then
    vague=$((vague + 1)) why="message lacks '$text'"
  elif [[ -n $nodb && -e $nodb ]]; then
    wrong=$((wrong + 1)) why="left the database file $nodb behind"
    rm -f "$nodb" "$nodb-wal" "$nodb-shm"
  fi
  if [[ -n $why ]]; then
    echo "FAIL $name: $why"
    head -c 300 "$T/err" | sed 's/^/    /'
  else
    passed=$((passed + 1))
  fi
}

# Writes a job file with a kernel and the given TOML after it.
job() { printf 'kernel = "reduce"\n%s\n[problem]\nn = 268435456\n' "$2" >"$T/$1.toml"; }
# Repeats a string N times.
rep() { python3 -c "import sys; sys.stdout.write(sys.argv[1] * int(sys.argv[2]))" "$1" "$2"; }
# A manifest: vecscale's fixture with one line replaced (sed expression).
manifest() {
  cp "$SRC/tests/data/manifests/vecscale.cu" "$T/vecscale.cu"
  sed "$2" "$SRC/tests/data/manifests/vecscale.toml" >"$T/$1.toml"
}
# A Kernel Tuner cache from the shipped gemm fixture, changed by a Python statement on `d`.
kt_cache() {
  python3 - "$SRC/tests/data/replay/gemm_small.json" "$T/$1.json" "$2" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(d, open(sys.argv[2], "w"))
EOF
}
# tune CODE NAME [--grep TEXT] ARGS...: `ktune tune ARGS` replaying the shipped reduce recording
# into a database that must not be left behind.
tune() {
  local code=$1 name=$2 text=()
  shift 2
  [[ $1 == --grep ]] && text=(--grep "$2") && shift 2
  expect "$code" "$name" --no-db "$T/t.db" "${text[@]}" -- tune "$@" --db "$T/t.db" --replay "$REC"
}

# --- the command line -----------------------------------------------------------------------
expect 2 "no arguments" --grep "usage:" --
expect 2 "unknown command" -- frobnicate
expect 2 "unknown option" -- list --frobnicate
tune 2 "--budget-evals -1" reduce --budget-evals -1
tune 2 "--budget-evals 0" reduce --budget-evals 0
tune 2 "--budget-evals 2^64" reduce --budget-evals 18446744073709551616
tune 2 "--budget-time nan" reduce --budget-time nan
tune 2 "--budget-time -3" reduce --budget-time -3
tune 2 "--timeout -5" reduce --timeout -5
tune 2 "--timeout nan" reduce --timeout nan
tune 2 "--target-spread nan" reduce --target-spread nan
tune 2 "--target-spread -1" reduce --target-spread -1
tune 2 "--seed -1" reduce --seed -1
tune 2 "--seed 1.5" reduce --seed 1.5
tune 2 "--samples -2" reduce --samples -2
tune 2 "--samples 2^32" reduce --samples 4294967296
tune 2 "--max-samples 0" reduce --max-samples 0
tune 2 "--warmup -1" reduce --warmup -1
tune 2 "--retime-top -1" reduce --retime-top -1
tune 2 "--compile-threads -1" reduce --compile-threads -1
tune 2 "--compile-threads 100000" reduce --compile-threads 100000
tune 2 "--flush-l2 sometimes" reduce --flush-l2 sometimes
tune 2 "--strategy unknown" reduce --strategy frobnicate
tune 2 "--strategy-option unknown" reduce --strategy genetic_algorithm --strategy-option bogus=1
tune 2 "--strategy-option no value" reduce --strategy genetic_algorithm --strategy-option popsize
tune 3 "--config a directory" reduce --config "$T"
tune 3 "--config missing" reduce --config "$T/none.toml"
tune 2 "--problem n=1e300" reduce --problem n=1e300
tune 2 "--problem n=abc" reduce --problem n=abc
tune 2 "--problem n=" reduce --problem n=
tune 2 "--problem 2**64" reduce --problem n=2**64
tune 2 "--problem -1" reduce --problem n=-1
tune 2 "--problem 1/0" reduce --problem n=1/0
tune 2 "--problem unknown name" reduce --problem m=4
# (One argument holds at most 128 KiB: the deepest that fit.)
tune 2 "--problem 60k nested parentheses" reduce --problem "n=$(rep '(' 60000)1$(rep ')' 60000)"
tune 2 "--problem 100k unary minus" reduce --problem "n=$(rep '-' 100000)1"
tune 2 "--problem 25k nested abs" reduce --problem "n=$(rep 'abs(' 25000)1$(rep ')' 25000)"
tune 2 "--problem 40k ** chain" reduce --problem "n=1$(rep '**1' 40000)"
tune 2 "--problem 60k-term sum" reduce --problem "n=1$(rep '+1' 60000)"
tune 2 "--problem 10k if-else chain" reduce --problem "n=$(rep '1 if 0 else ' 10000)1"
tune 2 "--problem 30k not" reduce --problem "n=$(rep 'not ' 30000)1"
tune 2 "kernel name with SQL" "reduce'; DROP TABLE runs; --"
expect 2 "space --sample -1" -- space reduce --arch sm_90 --sample -1
expect 2 "space --sample 2^64" -- space reduce --arch sm_90 --sample 18446744073709551616
expect 2 "space --arch sm_1" -- space reduce --arch sm_1
expect 2 "space --arch ../../x" -- space reduce --arch ../../x
expect 2 "compile unknown parameter" -- compile reduce --arch sm_90 --set nosuch=1
expect 2 "compile value not in list" -- compile reduce --arch sm_90 --set block_size=33
expect 2 "bench-strategies --seeds -1" -- bench-strategies --strategies random --seeds -1 "$REC"
expect 2 "bench-strategies --seeds 0" -- bench-strategies --strategies random --seeds 0 "$REC"
expect 2 "bench-strategies --batch 0" -- bench-strategies --strategies random --batch 0 "$REC"
expect 2 "bench-strategies --budgets -5" -- bench-strategies --strategies random --budgets -5 "$REC"
expect 2 "bench-strategies --cutoff nan" -- bench-strategies --strategies random --cutoff nan "$REC"
expect 2 "bench-strategies unknown strategy" -- bench-strategies --strategies nosuch "$REC"
expect 3 "bench-strategies missing recording" -- bench-strategies --strategies random "$T/no.json"
expect 2 "report --top -1" -- report --db "$T/none.db" --top -1
expect 2 "help of unknown command" -- help frobnicate

# --- databases --------------------------------------------------------------------------------
expect 5 "--db ''" --grep "empty path" -- best reduce --db ''
expect 5 "tune --db ''" -- tune reduce --replay "$REC" --db '' --budget-evals 5
expect 5 "best: missing database" -- best reduce --db "$T/none.db"
printf 'not a database, just text\n' >"$T/text.db"
expect 5 "best: a text file" -- best reduce --db "$T/text.db"
expect 5 "tune: a text file" -- tune reduce --replay "$REC" --db "$T/text.db" --budget-evals 5
python3 -c "import sqlite3; c=sqlite3.connect('$T/foreign.db'); c.execute('create table x(a)'); c.commit()"
expect 5 "report: another program's SQLite file" -- report --db "$T/foreign.db"
expect 5 "best: a directory" -- best reduce --db "$T"
expect 5 "best: path traversal to /etc/passwd" -- best reduce --db "../../../../../../etc/passwd"
# A good database, then damaged copies of it.
"$KTUNE" tune reduce --replay "$REC" --db "$T/good.db" --budget-evals 20 -q >/dev/null 2>&1
head -c 5000 "$T/good.db" >"$T/truncated.db"
expect 5 "best: a truncated database" -- best reduce --db "$T/truncated.db"
python3 -c "
d = bytearray(open('$T/good.db', 'rb').read()); d[4096:8192] = b'\xff' * 4096
open('$T/corrupt.db', 'wb').write(d)"
expect 5 "report: a corrupt database" -- report --db "$T/corrupt.db"
mkdir -p "$T/ro" && cp "$T/good.db" "$T/ro/good.db" && chmod a-w "$T/ro"
expect 0 "best in a read-only folder (it only reads)" -- best reduce -p n=2**28 --db "$T/ro/good.db"
expect 2 "report --run of no run" -- report --db "$T/good.db" --run 999
expect 1 "best of an unstored problem" -- best reduce -p n=64 --db "$T/good.db"
expect 2 "best, SQL in the kernel name" -- best "x' OR '1'='1" --db "$T/good.db"
expect 2 "report, SQL in --device-name" -- report --db "$T/good.db" --device-name "x' OR 1=1 --"

# --- job files --------------------------------------------------------------------------------
job budget-neg '[budget]
seconds = -10'
tune 3 "budget.seconds = -10" --config "$T/budget-neg.toml"
job budget-nan '[budget]
seconds = nan'
tune 3 "budget.seconds = nan" --config "$T/budget-nan.toml"
job budget-int 'budget = 5'
tune 3 "budget = 5 (not a table)" --config "$T/budget-int.toml"
job budget-key '[budget]
evaluation = 10'
tune 3 "[budget] evaluation = 10" --grep "did you mean" --config "$T/budget-key.toml"
job measure-key '[measure]
sample = 10'
tune 3 "[measure] sample = 10" --grep "did you mean" --config "$T/measure-key.toml"
job measure-wrap '[measure]
samples = 4294967296'
tune 3 "measure.samples = 2^32" --config "$T/measure-wrap.toml"
job timeout-neg '[measure]
timeout = -1'
tune 3 "measure.timeout = -1" --config "$T/timeout-neg.toml"
job space-nan '[space]
block_size = [32, nan]'
tune 3 "space value nan" --config "$T/space-nan.toml"
job space-empty '[space]
block_size = []'
tune 3 "space: an empty list" --config "$T/space-empty.toml"
job strategy-bad '[strategy]
name = "genetic"'
tune 3 "strategy.name unknown" --grep "did you mean" --config "$T/strategy-bad.toml"
printf 'kernel = "reduce"\n[problem\n' >"$T/syntax.toml"
tune 3 "TOML syntax error" --config "$T/syntax.toml"
printf 'kernel = "reduce"\nkernel = "copy"\n' >"$T/dup.toml"
tune 3 "a duplicate key" --config "$T/dup.toml"
head -c 2000 /dev/urandom >"$T/random.toml"
tune 3 "random bytes as a job file" --config "$T/random.toml"
job nested-parens "restrictions = [\"$(rep '(' 100000)1$(rep ')' 100000)\"]"
tune 3 "restriction: 100k nested parentheses" --config "$T/nested-parens.toml"
job not-chain "restrictions = [\"$(rep 'not ' 60000)1\"]"
tune 3 "restriction: 60k not" --config "$T/not-chain.toml"
job pow-chain "restrictions = [\"1$(rep '**1' 80000)\"]"
tune 3 "restriction: 80k ** chain" --config "$T/pow-chain.toml"
job if-chain "restrictions = [\"$(rep '1 if 1 else ' 60000)1\"]"
tune 3 "restriction: 60k if-else chain" --config "$T/if-chain.toml"
job flat-sum "restrictions = [\"1$(rep ' + 1' 80000) > 0\"]"
tune 3 "restriction: 80k-term sum" --config "$T/flat-sum.toml"
job huge "restrictions = [\"block_size$(rep ' + (1)' 1500000) > 0\"]"
tune 3 "restriction: 10 MB" --config "$T/huge.toml"
printf 'kernel = "reduce"\nrestrictions = ["block_size\0 > 1"]\n' >"$T/nul.toml"
tune 3 "restriction with a NUL byte" --config "$T/nul.toml"
job unknown-name 'restrictions = ["blocksize > 32"]'
tune 3 "restriction naming no parameter" --grep "did you mean" --config "$T/unknown-name.toml"
job int-float 'restrictions = ["n * 33554432 + 1 == 9007199254740992.0"]'
# In double arithmetic 2^53 + 1 == 2^53.0 holds; compared exactly (as Python does) it never
# does, so the restriction empties the space, which is refused naming it.
expect 2 "int/float compared exactly, as Python does" \
  --grep "emptied by 'n * 33554432 + 1 == 9007199254740992.0'" -- \
  space --config "$T/int-float.toml" --arch sm_90
printf 'kernel = "../../../../etc/passwd"\n' >"$T/traversal.toml"
tune 2 "kernel name as a path" --config "$T/traversal.toml"

# --- manifests and plugins --------------------------------------------------------------------
manifest m-placeholder 's/^entry = "vecscale"/entry = "vecscale<BLOCKSIZE>"/'
expect 3 "manifest: entry names a macro no parameter defines" --grep "BLOCKSIZE" -- \
  list --plugin "$T/m-placeholder.toml"
python3 - "$SRC/tests/data/manifests/vecscale.toml" "$T/m-deep.toml" <<'EOF'
import sys
text = open(sys.argv[1]).read().replace('block = "block_size"', 'block = "' + "(" * 100000 + "block_size" + ")" * 100000 + '"')
open(sys.argv[2], "w").write(text)
EOF
expect 3 "manifest: 100k nested parentheses" -- list --plugin "$T/m-deep.toml"
manifest m-source 's/^source = "vecscale.cu"/source = "nosuch.cu"/'
expect 3 "manifest: missing source" -- list --plugin "$T/m-source.toml"
manifest m-traversal 's/^source = "vecscale.cu"/source = "..\/..\/..\/..\/..\/..\/nosuch\/x.cu"/'
expect 3 "manifest: source through ../" -- list --plugin "$T/m-traversal.toml"
manifest m-values 's/^values = \[1, 2, 4\]/values = []/'
expect 3 "manifest: a parameter without values" -- list --plugin "$T/m-values.toml"
manifest m-default 's/^default = 128/default = 129/'
expect 3 "manifest: a default not in the values" -- list --plugin "$T/m-default.toml"
for f in "$SRC"/tests/data/manifests/broken/*.toml; do
  expect 3 "manifest: broken/$(basename "$f")" -- list --plugin "$f"
done
head -c 1000 "$KTUNE" >"$T/libtruncated.so"
expect 4 "plugin: the first 1000 bytes of a library" -- list --plugin "$T/libtruncated.so"
head -c 100000 "$KTUNE" >"$T/libhalf.so"
expect 4 "plugin: a truncated library" -- list --plugin "$T/libhalf.so"
printf 'not a library\n' >"$T/libtext.so"
expect 4 "plugin: a text file" -- list --plugin "$T/libtext.so"
: >"$T/libempty.so"
expect 4 "plugin: an empty file" -- list --plugin "$T/libempty.so"
expect 4 "plugin: a missing file" -- list --plugin "$T/nosuch.so"
expect 4 "plugin: the ktune executable" -- list --plugin "$KTUNE"
if [[ -n $EMPTY_PLUGIN ]]; then
  expect 4 "plugin: kernel_count = 0" -- list --plugin "$EMPTY_PLUGIN"
fi
KTUNE_PLUGIN_PATH="$T/nosuch.so" expect 4 "KTUNE_PLUGIN_PATH: a missing file" -- list

# --- Kernel Tuner caches ----------------------------------------------------------------------
rt() { expect 3 "$1" --no-db "$T/t.db" -- tune --replay "$T/$2.json" --db "$T/t.db" --budget-evals 5; }
kt_cache kt-negtime 'k = next(iter(d["cache"])); d["cache"][k]["time"] = -1.0'
rt "KT cache: a negative time" kt-negtime
kt_cache kt-nantime 'k = next(iter(d["cache"])); d["cache"][k]["time"] = float("nan")'
rt "KT cache: a NaN time" kt-nantime
kt_cache kt-negsize 'd["problem_size"] = [-4096, 4096]'
rt "KT cache: a negative problem size" kt-negsize
kt_cache kt-nocache 'del d["cache"]'
rt "KT cache: no cache" kt-nocache
kt_cache kt-keys 'd["tune_params_keys"] = d["tune_params_keys"][:3]'
rt "KT cache: keys that do not match the entries" kt-keys
kt_cache kt-params 'd["tune_params"]["MWG"] = "sixteen"'
rt "KT cache: parameter values not a list" kt-params
{
  printf '{"kernel_name": "x", "tune_params_keys": ["a"], "tune_params": {"a": [1]}, "cache": '
  rep '[' 100000
  rep ']' 100000
  printf '}'
} >"$T/kt-deep.json"
rt "KT cache: 100k nested arrays" kt-deep
printf '{"cache": ' >"$T/kt-trunc.json"
rt "KT cache: truncated JSON" kt-trunc
printf '\x1f\x8b\x08\x00garbage' >"$T/kt-gz.json.gz"
expect 3 "KT cache: broken gzip" -- tune --replay "$T/kt-gz.json.gz" --db "$T/t.db" --budget-evals 5

echo "inputs tried: $tried, passed: $passed, crashes: $crashes, hangs: $hangs," \
  "silently accepted: $accepted, wrong exit code: $wrong, unclear message: $vague"
((passed == tried))
