#!/usr/bin/env bash
# galvc -q prints nothing but errors: no plan report or plan warning (also
# with --plan-only), no pass progress, no spmd collective lines, no pipeline
# plan, no "wrote" lines; an error still prints its one line.
# Usage: quiet.sh BUILD_DIR
set -u
B=$(cd "${1:?build dir}" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
M=$SRC/examples/models/torch/gpt2_op17.onnx
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
silent() { # NAME ARGS...: galvc M ARGS -q exits 0 and prints nothing
  local name=$1 rc=0
  shift
  timeout 300 "$B/galvc" "${M}" "$@" -q >"$T/out" 2>"$T/err" </dev/null || rc=$?
  if [ $rc = 0 ] && [ ! -s "$T/out" ] && [ ! -s "$T/err" ]; then echo "ok   -q silent: $name"; pass=$((pass + 1))
  else echo "FAIL -q $name: rc $rc, stdout $(head -c 300 "$T/out"), stderr $(head -c 300 "$T/err")"; fail=$((fail + 1)); fi
}
C=(--batch 4 --seq 8 --target cpu)
silent "plan-only, 4 devices" "${C[@]}" --gpus 4 --plan-only
silent "plan-only, batch 1 on 8 devices (the idle-axes warning)" --batch 1 --seq 8 --target cpu --gpus 8 --plan-only
silent "plan written with --plan-out" "${C[@]}" --gpus 4 --plan-only --plan-out "$T/p.json"
silent "2 ranks, program emitted" "${C[@]}" --gpus 2 --strategy tp --no-build -o "$T/a/"
silent "training step emitted" "${C[@]}" --train --no-build -o "$T/b/"
silent "pipeline plan-only" "${C[@]}" --gpus 2 --train --pipeline-stages 2 --plan-only
silent "pipeline emitted" "${C[@]}" --gpus 2 --train --pipeline-stages 2 --no-build -o "$T/c/"
# the default training search on a large vocabulary: METIS's own diagnostics (printed on stdout while it partitions a
# graph whose head outweighs a part: "***Cannot bisect a graph with 0 vertices!") go nowhere
if python3 "$SRC/examples/make_model.py" gpt2 -o "$T/v.onnx" --layers 8 --hidden 64 --heads 4 --vocab 32000 --max-pos 256 \
  --no-weights --no-verify >/dev/null; then
  M=$T/v.onnx silent "default training search, vocabulary 32000 (METIS quiet)" --batch 16 --seq 256 --train --no-weights --gpus 8 \
    --cluster a100-80g --target cpu --plan-only
else echo "FAIL make_model"; fail=$((fail + 1)); fi
# an error still prints its line
rc=0; "$B/galvc" "$M" "${C[@]}" --gpus 4 --plan "$T/none.json" --plan-only -q >/dev/null 2>"$T/err" || rc=$?
if [ $rc != 0 ] && [ "$(wc -l <"$T/err")" = 1 ] && grep -q "none.json: cannot open" "$T/err"; then echo "ok   -q error: $(cat "$T/err")"; pass=$((pass + 1))
else echo "FAIL -q error: rc $rc, $(cat "$T/err")"; fail=$((fail + 1)); fi
echo "quiet: $pass ok, $fail failed"
[ $fail = 0 ]
