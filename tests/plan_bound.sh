#!/usr/bin/env bash
# The reduced search's bound per combination (passes/plan_sharding.c,
# solve_reduced; docs/planner.md "Fewer realisations per run"): after a
# combination's first pair of reduced realisations its step is bounded by
# the busier of its compute and its collectives on no batch axis (tp,
# vocab: the ZeRO pattern moves none of them), extrapolated over the
# layers; a combination whose bound is at least twice the runner-up's step
# so far gets no further realisations. The combinations are solved with the
# batch split over the most devices first. On a 12-layer hidden-1024 GPT-2
# (the repeated-layer path) on 32 a100-80g (8 per node), batch 64, seq 256,
# bf16 training:
#   - with the bound (the default) some combinations are pruned
#     (GALV_PLAN_DEBUG's ": pruned" lines), more than with compute alone
#     (GALV_PLAN_BOUND=compute) and none with GALV_PLAN_BOUND=off;
#   - the default realises fewer candidates than GALV_PLAN_BOUND=off;
#   - plan.json (planning_seconds and candidates aside) and the report's
#     plan lines (choice, predicted step, memory, runner-up) are the same as
#     the unpruned search's.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
python3 "$SRC/examples/make_model.py" gpt2 -o "$T/m.onnx" --layers 12 --hidden 1024 --heads 16 --vocab 1024 --max-pos 256 \
  --no-weights --no-verify >/dev/null || { echo "FAIL making the model"; exit 1; }
run() { # MODE
  GALV_PLAN_BOUND=$1 GALV_PLAN_DEBUG=1 timeout 300 "$BUILD/galvc" "$T/m.onnx" --train --plan-only --no-weights --precision bf16 \
    --gpus 32 --gpus-per-node 8 --cluster a100-80g --batch 64 --seq 256 --recompute none --microbatches 1 \
    --plan-out "$T/$1.json" </dev/null >/dev/null 2>"$T/$1.err" || { echo "FAIL GALV_PLAN_BOUND=$1: $(grep -m1 error "$T/$1.err")"; fail=1; }
}
for m in off compute default; do run $m; done
desc() {
  python3 -c "
import json, sys
p = json.load(open(sys.argv[1]))
for k in ('planning_seconds', 'candidates'): p.pop(k, None)
print(json.dumps(p, sort_keys=True))" "$1"
}
pruned() { grep -c '^plan-debug: bound .*: pruned$' "$1"; }
cands() { sed -n 's/^plan: mesh .*; \([0-9]*\) candidate programs realised.*/\1/p' "$1"; }
lines() { grep '^plan: ' "$1" | grep -v 'candidate programs realised\|^plan: wrote'; }
p_off=$(pruned "$T/off.err") p_cmp=$(pruned "$T/compute.err") p_def=$(pruned "$T/default.err")
c_off=$(cands "$T/off.err") c_def=$(cands "$T/default.err")
echo "pruned combinations: off $p_off, compute $p_cmp, compute and communication $p_def; candidates realised: off $c_off, default $c_def"
if [ "$p_off" -eq 0 ] && [ "$p_def" -gt "$p_cmp" ] && [ "${c_def:-0}" -lt "${c_off:-0}" ]; then
  echo "ok   the communication bound prunes: $p_def combinations ($p_cmp with compute alone), $c_def candidates realised against $c_off"
else
  echo "FAIL the bound: pruned off $p_off, compute $p_cmp, default $p_def; candidates $c_def against $c_off"; fail=1
fi
for m in compute default; do
  if [ "$(desc "$T/$m.json")" = "$(desc "$T/off.json")" ] && [ "$(lines "$T/$m.err")" = "$(lines "$T/off.err")" ]; then
    echo "ok   GALV_PLAN_BOUND=$m: the same plan.json and report as the unpruned search ($(sed -n 's/^plan: predicted step \([0-9.]* ms\).*/\1/p' "$T/$m.err"))"
  else
    echo "FAIL GALV_PLAN_BOUND=$m: the plan differs from the unpruned search's"
    diff <(lines "$T/off.err") <(lines "$T/$m.err") | head -10
    diff <(desc "$T/off.json" | tr ',' '\n') <(desc "$T/$m.json" | tr ',' '\n') | head -10
    fail=1
  fi
done

# The same bound on the full path (solve_combo: a model whose layers do not repeat 12 times alike, here a T5 of 4 + 4
# blocks, hidden 256, on 16 a100-80g): each combination's first realisation bounds it against this search's runner-up
# so far (5 %; galvc's incumbent where there is one), the combinations come most data-parallel first. With it some are
# left out (": left out" lines) and fewer candidates realised than with GALV_PLAN_BOUND=off; plan.json and the report's
# plan lines (choice, step, memory, runner-up) are the unpruned search's.
python3 "$SRC/examples/make_model.py" t5 -o "$T/t5.onnx" --layers 4 --hidden 256 --heads 4 --vocab 1000 --no-weights \
  --no-verify >/dev/null || { echo "FAIL making the T5"; exit 1; }
runf() { # MODE
  GALV_PLAN_BOUND=$1 GALV_PLAN_DEBUG=1 timeout 300 "$BUILD/galvc" "$T/t5.onnx" --train --plan-only --no-weights --precision bf16 \
    --gpus 16 --gpus-per-node 8 --cluster a100-80g --batch 64 --seq 256 --recompute none --microbatches 1 \
    --plan-out "$T/f$1.json" </dev/null >/dev/null 2>"$T/f$1.err" || { echo "FAIL full path, GALV_PLAN_BOUND=$1: $(grep -m1 error "$T/f$1.err")"; fail=1; }
}
for m in off default; do runf $m; done
l_off=$(grep -c '^plan-debug: bound .*(full program.*: left out$' "$T/foff.err") l_def=$(grep -c '^plan-debug: bound .*(full program.*: left out$' "$T/fdefault.err")
c_off=$(cands "$T/foff.err") c_def=$(cands "$T/fdefault.err")
if [ "$l_off" -eq 0 ] && [ "$l_def" -gt 0 ] && [ "${c_def:-0}" -lt "${c_off:-0}" ] && [ "$(desc "$T/fdefault.json")" = "$(desc "$T/foff.json")" ] &&
   [ "$(lines "$T/fdefault.err")" = "$(lines "$T/foff.err")" ]; then
  echo "ok   full path (T5 4 + 4 blocks, 16 GPUs): $l_def combinations left out, $c_def candidates realised against $c_off; the same plan.json and report ($(sed -n 's/^plan: predicted step \([0-9.]* ms\).*/\1/p' "$T/fdefault.err"); $(grep -m1 -o 'runner-up: mesh [^,]*' "$T/fdefault.err"))"
else
  echo "FAIL full path: left out off $l_off, default $l_def; candidates $c_def against $c_off"
  diff <(lines "$T/foff.err") <(lines "$T/fdefault.err") | head -10
  diff <(desc "$T/foff.json" | tr ',' '\n') <(desc "$T/fdefault.json" | tr ',' '\n') | head -10
  fail=1
fi
exit $fail
