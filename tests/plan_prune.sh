#!/usr/bin/env bash
# The stage DP's pruning changes no plan (planner/pipeline.c, docs/planner.md
# "Planning time: the stage DP's pruning"): the default training search
# (--train --plan-only, weight-free, bf16, a100-80g, 8 per node) plans each
# model below twice, with the pruning (the first t_max with a plan found by
# probes, the memory-bottleneck DP over the rows it wrote and under the least
# need found, the screen's equal-stage runs reading each other's analytic
# costs) and with GALV_PIPE_PRUNE=off, and the two must write the same
# plan.json (planning_seconds aside) and the same report line for line (CPU
# and wall seconds aside): every screened candidate, every pipeline
# candidate planned and its step, one program's search and the choice.
#   - GPT-2, 12 layers, hidden 1024, 32 GPUs, batch 256, seq 256;
#   - GPT-2, 4 layers, hidden 256, 16 GPUs, batch 16, seq 128, and the same
#     under --memory-limit 20000000 (the screen's smaller microbatch counts
#     fit no partition: the bottleneck DP runs);
#   - the GPT-3 shape with 12 layers (hidden 12288, 96 heads, vocab 51200,
#     seq 2048) on 1024 GPUs, batch 1536.
# tests/unit/test_pipeline.c compares the two on 210 stage DP problems
# (every plan field, and the binding figure where none fits).
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
mk() { # NAME ARGS...: $T/NAME.onnx
  local n=$1
  shift
  python3 "$SRC/examples/make_model.py" gpt2 -o "$T/$n.onnx" "$@" --no-weights --no-verify >/dev/null ||
    { echo "FAIL making $n"; exit 1; }
}
mk s12 --layers 12 --hidden 1024 --heads 16 --vocab 1024 --max-pos 256
mk s4 --layers 4 --hidden 256 --heads 4 --vocab 512 --max-pos 128
mk g12 --layers 12 --hidden 12288 --heads 96 --vocab 51200 --max-pos 2048 --tie-embeddings --qkv-layout megatron
desc() {
  python3 -c "
import json, sys
p = json.load(open(sys.argv[1]))
p.pop('planning_seconds', None)
print(json.dumps(p, sort_keys=True, indent=1))" "$1"
}
# the report without its CPU and wall seconds (and the plan file's name)
report() { sed -E 's/[0-9]+\.[0-9]+ s\b/X s/g; s#/(on|off)\.json#/plan.json#' "$1"; }
case_() { # LABEL MODEL GALVC-ARGS...
  local label=$1 m=$2 k
  shift 2
  for k in on off; do
    local e=(-u GALV_PIPE_PRUNE)
    [ $k = off ] && e=(GALV_PIPE_PRUNE=off)
    env "${e[@]}" timeout 600 "$BUILD/galvc" "$T/$m.onnx" --train --plan-only \
      --no-weights --precision bf16 --gpus-per-node 8 --cluster a100-80g --plan-out "$T/$k.json" "$@" </dev/null >/dev/null \
      2>"$T/$k.err" || { echo "FAIL $label, pruning $k: $(grep -m1 error "$T/$k.err")"; fail=1; return; }
  done
  local step
  step=$(sed -n 's/^galvc: default search: chose \(.*\); pipelines.*/\1/p' "$T/on.err")
  if [ -z "$step" ]; then
    echo "FAIL $label: no choice line"; fail=1
  elif [ "$(desc "$T/on.json")" != "$(desc "$T/off.json")" ]; then
    echo "FAIL $label: plan.json differs"; diff <(desc "$T/on.json") <(desc "$T/off.json") | head; fail=1
  elif ! diff <(report "$T/on.err") <(report "$T/off.err") >"$T/d"; then
    echo "FAIL $label: the report differs"; head -20 "$T/d"; fail=1
  else
    echo "ok   $label: the same plan.json and report ($(wc -l <"$T/on.err") lines; chose $step; $(grep -m1 -o '[0-9]* candidates fit' "$T/on.err") in the screen)"
  fi
}
case_ "GPT-2 12 x 1024, 32 GPUs" s12 --gpus 32 --batch 256 --seq 256
case_ "GPT-2 4 x 256, 16 GPUs" s4 --gpus 16 --batch 16 --seq 128
case_ "GPT-2 4 x 256, 16 GPUs, 20 MB" s4 --gpus 16 --batch 16 --seq 128 --memory-limit 20000000
case_ "GPT-3 shape 12 layers, 1024 GPUs" g12 --gpus 1024 --batch 1536 --seq 2048
exit $fail
