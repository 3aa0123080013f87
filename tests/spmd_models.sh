#!/usr/bin/env bash
# N-rank CPU programs equal the single-device program: example models
# compiled with galvc --gpus N --strategy S --target cpu (propagate-sharding,
# spmd-partition, collectives emitted by codegen/cpu/emit_comm.c), run with
# out/launch (mpirun, GALV_COMM_SYNC=1, under timeout) on random inputs;
# outputs equal the single-device program's (rtol 1e-4, atol 1e-5) and the
# bytes the communicator counted equal the planner's prediction (the program
# checks it and fails with one error line otherwise; --comm-stats shows them).
# The (model, ranks, strategy) cases of REFUSED must instead stop galvc with
# the one clear error line (the tensor-parallel degree does not divide the
# Llama example's 2 key/value heads); any other compile error fails, and so
# does a case of REFUSED that compiles (the list is stale).
# GALV_SPMD_MODELS / GALV_SPMD_CASES narrow the matrix (default below).
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/require.sh"
require_cmd "Debian libopenmpi-dev, openmpi-bin" mpicc mpirun
export GALV_COMM_SYNC=1 OMPI_MCA_btl_vader_single_copy_mechanism=none OPENBLAS_NUM_THREADS=1
export MPIRUN="mpirun -x GALV_COMM_SYNC -x OPENBLAS_NUM_THREADS"
MODELS=${GALV_SPMD_MODELS:-gpt2 llama bert vit}
CASES=${GALV_SPMD_CASES:-2:dp 2:tp 2:zero 4:dp 4:tp 4:zero 4:dp,tp 8:dp,tp}
# FAMILY:N:STRATEGY -> the error galvc must give
declare -A REFUSED=(
  [llama:4:tp]="the tensor-parallel degree must divide the head count"
  [llama:8:dp,tp]="the tensor-parallel degree must divide the head count"
)
pass=0 fail=0
# global_checked OUT RUNS: the counters printed (rank 0's; every rank runs the same check, one binary)
# end "(predicted per run: ...) from the global program": the program checked the bytes it handed to
# MPI against the planner's prediction from the global program, not against its own collectives' sum
global_checked() {
  local all glob
  all=$(grep -c "comm bytes sent by rank [0-9][0-9]* in $2 runs: " <<<"$1")
  glob=$(grep -c "comm bytes sent by rank [0-9][0-9]* in $2 runs: .* (predicted per run: [0-9][0-9]*, [0-9][0-9]*, [0-9][0-9]*, [0-9][0-9]*) from the global program$" <<<"$1")
  [ "$all" -ge 1 ] && [ "$glob" = "$all" ]
}
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
for fam in $MODELS; do
  m="$T/$fam.onnx"
  python3 "$SRC/examples/make_model.py" "$fam" -o "$m" --no-verify >/dev/null || { bad "$fam: make_model"; continue; }
  if ! "$BUILD/galvc" "$m" --batch 4 --seq 16 --target cpu -q -o "$T/$fam-1/" 2>"$T/err"; then
    bad "$fam single device: $(cat "$T/err")"
    continue
  fi
  # seeded inputs (tests/model_inputs.py, as the other model tests)
  python3 - "$SRC" "$m" "$T/$fam" >"$T/$fam.args" 2>"$T/err" <<'PY' || { bad "$fam inputs: $(cat "$T/err")"; continue; }
import sys, onnx, numpy as np
sys.path.insert(0, sys.argv[1] + "/tests")
from model_inputs import make_inputs
args = []
for i, (name, a) in enumerate(make_inputs(onnx.load(sys.argv[2], load_external_data=False), 4, 16).items()):
    fn = f"{sys.argv[3]}_in_{i}.npy"
    np.save(fn, a)
    args.append(f"--input {name}={fn}")
print(" ".join(args))
PY
  # shellcheck disable=SC2046
  "$T/$fam-1/program" $(cat "$T/$fam.args") -o "$T/$fam-1/res" >/dev/null 2>"$T/err" || { bad "$fam single run: $(cat "$T/err")"; continue; }
  for c in $CASES; do
    n=${c%%:*} s=${c#*:}
    d="$T/$fam-$n-${s/,/_}"
    mesh=()
    [ "$s" = dp,tp ] && mesh=(--mesh "dp=2,tp=$((n / 2))")
    want=${REFUSED[$fam:$c]:-}
    if ! "$BUILD/galvc" "$m" --batch 4 --seq 16 --gpus "$n" --strategy "$s" "${mesh[@]}" --target cpu -q -o "$d/" 2>"$T/err"; then
      if [ -n "$want" ] && [ "$(wc -l <"$T/err")" = 1 ] && grep -qF "$want" "$T/err"; then
        ok "$fam --gpus $n --strategy $s: refused as expected: $(grep -o 'sharding: .*' "$T/err")"
      else
        bad "$fam --gpus $n --strategy $s: galvc: $(head -3 "$T/err")"
      fi
      continue
    fi
    if [ -n "$want" ]; then
      bad "$fam --gpus $n --strategy $s compiled, but is listed in REFUSED (\"$want\")"
      continue
    fi
    # shellcheck disable=SC2046
    out=$(timeout 300 "$d/launch" $(cat "$T/$fam.args") -o "$d/res" --comm-stats 2>&1)
    rc=$?
    if [ $rc -ne 0 ]; then
      bad "$fam $n ranks $s: rc $rc: $(grep -m2 'error' <<<"$out")"
      continue
    fi
    r=$(python3 - "$T/$fam-1/res" "$d/res" <<'PY'
import sys, glob, os, numpy as np
a, b = sys.argv[1], sys.argv[2]
worst, bad = 0.0, []
for f in sorted(glob.glob(f"{a}/*.npy")):
    x, y = np.load(f), np.load(f"{b}/{os.path.basename(f)}")
    if x.shape != y.shape or not np.allclose(y, x, rtol=1e-4, atol=1e-5):
        bad.append(f"{os.path.basename(f)} differs")
    elif x.size:
        worst = max(worst, float(np.abs(x.astype(np.float64) - y).max()))
print("; ".join(bad) if bad else f"outputs equal (max abs err {worst:.2e})")
sys.exit(1 if bad else 0)
PY
    )
    same=$?
    # every rank checked its counted bytes against the planner's prediction
    # from the global program (not the partitioned collectives' own sum)
    if [ $same -ne 0 ]; then
      bad "$fam $n ranks $s: $r"
    elif ! global_checked "$out" 1; then
      bad "$fam $n ranks $s: the bytes were not checked against the global program's prediction: $(grep -m2 'comm bytes' <<<"$out")"
    else
      ok "$fam $n ranks $s: $r; $(grep -m1 -o 'in 1 runs: .*' <<<"$out")"
    fi
  done
done
# Errors every rank finds alike (a wrong --input, a wrong rank count) are one
# line from rank 0 under the program's plain name, exit 1; --help names the
# program; -o creates missing parent directories; messages name the real launcher.
d="$T/gpt2-4-dp"
if [ -x "$d/launch" ]; then
  timeout 60 "$d/launch" --input nope=x.npy >/dev/null 2>"$T/err"; rc=$?
  if [ $rc = 1 ] && [ "$(wc -l <"$T/err")" = 1 ] && grep -q "^program: error: --input nope: the program has no input named 'nope'" "$T/err"; then
    ok "4 ranks, wrong --input: one line: $(cat "$T/err")"
  else bad "4 ranks, wrong --input: rc $rc, $(wc -l <"$T/err") lines: $(head -5 "$T/err")"; fi
  timeout 60 "$d/program" $(cat "$T/gpt2.args") >/dev/null 2>"$T/err"
  if [ "$(wc -l <"$T/err")" = 1 ] && grep -q "partitioned for 4 ranks, but 1 were started (run it with $d/launch, or mpirun -np 4)" "$T/err"; then
    ok "4-rank program started alone: $(cat "$T/err")"
  else bad "4-rank program started alone: $(head -3 "$T/err")"; fi
  h=$(timeout 60 "$d/launch" --help 2>&1 | head -1)
  case "$h" in "usage: program --input"*) ok "4 ranks --help: $h";; *) bad "4 ranks --help: $h";; esac
  # shellcheck disable=SC2046
  timeout 120 "$d/launch" $(cat "$T/gpt2.args") -o "$T/deep/a/b/" >/dev/null 2>"$T/err" && [ -s "$T/deep/a/b/logits.npy" ] &&
    ok "-o a/b/: parents created" || bad "-o a/b/: $(head -3 "$T/err"; ls "$T/deep/a/b" 2>&1)"
fi
echo "spmd_models: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
