#!/usr/bin/env bash
# The default search's pipeline candidates are planned after one program's
# search, and those whose analytic step (the screen's stage DP) is over 1.25
# times one program's predicted step are not planned (tools/galvc_pipeline.c
# galvc_pipeline_plan; docs/planner.md "Fewer realisations per run"). On
# the GPT-3 shape with 12 layers (hidden 12288, 96 heads, vocab 51200, seq
# 2048, weight-free) on 1024 a100-80g (8 per node), batch 1536, bf16
# training (bench/pass_scaling.sh's row):
#   - by default no candidate is planned after one program's search (the
#     screen's fastest analytic step is over 1.25 x one program's): the
#     "not planned" line (the equal-stage candidates' preset variants are
#     planned before it, one program's step not known yet);
#   - with GALV_PIPE_SKIP=off the candidates are planned and the fastest
#     planned pipeline is slower than one program (what the skip assumed);
#   - both choose one program, and plan.json is the same (planning_seconds
#     and candidates aside).
# And the candidates planned stop once the stages planned bound the step
# at the step to beat (one program's, or the best pipeline's so far): on a
# 12-layer hidden-1024 GPT-2 on 32 a100-80g, batch 256, seq 256, some are
# cut short by default, each such candidate planned in full under
# GALV_PIPE_SKIP=off is at least the step its bound said it could not beat,
# and plan.json is the same.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
python3 "$SRC/examples/make_model.py" gpt2 -o "$T/m.onnx" --layers 12 --hidden 12288 --heads 96 --vocab 51200 --max-pos 2048 \
  --no-weights --tie-embeddings --qkv-layout megatron --no-verify >/dev/null || { echo "FAIL making the model"; exit 1; }
run() { # SKIP
  GALV_PIPE_SKIP=$1 timeout 600 "$BUILD/galvc" "$T/m.onnx" --train --plan-only --no-weights --precision bf16 --gpus 1024 \
    --gpus-per-node 8 --cluster a100-80g --batch 1536 --seq 2048 --plan-out "$T/$1.json" </dev/null >/dev/null 2>"$T/$1.err" ||
    { echo "FAIL GALV_PIPE_SKIP=$1: $(grep -m1 error "$T/$1.err")"; fail=1; }
}
run on
run off
desc() {
  python3 -c "
import json, sys
p = json.load(open(sys.argv[1]))
for k in ('planning_seconds', 'candidates'): p.pop(k, None)
print(json.dumps(p, sort_keys=True))" "$1"
}
one=$(sed -n 's/^galvc: default search: one program: predicted step \([0-9.]*\) ms.*/\1/p' "$T/on.err")
# (the equal-stage candidates' preset variants are planned before one program's search, its step not known yet:
# galvc_pipeline_early; after it, none); the candidates' stage programs print no spmd table (--plan-only: no line)
if grep -q '^galvc: pipeline candidates from 1: analytic [0-9.]* ms and slower, over 1.25 x one program.s predicted step .*: not planned' "$T/on.err" &&
   ! grep -q '^galvc: pipeline candidate [0-9]*: ' "$T/on.err" && ! grep -q '^galvc: spmd:' "$T/on.err" &&
   grep -q '^galvc: default search: chose one program; ' "$T/on.err"; then
  echo "ok   no candidate planned after one program's search ($(grep -c '^galvc: pipeline candidate [0-9]* as dp' "$T/on.err") preset variants before it): $(grep '^galvc: default search: chose' "$T/on.err" | cut -c24-)"
else
  echo "FAIL the skip: $(grep 'default search\|pipeline cand' "$T/on.err")"; fail=1
fi
pipe=$(sed -n 's/^galvc: default search: pipeline: predicted step \([0-9.]*\) ms.*/\1/p' "$T/off.err")
planned=$(sed -n 's/^galvc: default search: chose .* \([0-9]*\) planned)$/\1/p' "$T/off.err")
if [ -n "$pipe" ] && [ -n "$one" ] && [ "${planned:-0}" -gt 0 ] && python3 -c "import sys; sys.exit(not float('$pipe') > float('$one'))" &&
   grep -q '^galvc: default search: chose one program' "$T/off.err"; then
  echo "ok   GALV_PIPE_SKIP=off: $planned planned, the fastest pipeline $pipe ms against one program's $one ms"
else
  echo "FAIL GALV_PIPE_SKIP=off: pipeline '$pipe' ms, one program '$one' ms, $planned planned"; fail=1
fi
if [ "$(desc "$T/on.json")" = "$(desc "$T/off.json")" ]; then
  echo "ok   the same plan.json with and without the skip"
else
  echo "FAIL plan.json differs"; diff <(desc "$T/on.json" | tr ',' '\n') <(desc "$T/off.json" | tr ',' '\n') | head; fail=1
fi

python3 "$SRC/examples/make_model.py" gpt2 -o "$T/s.onnx" --layers 12 --hidden 1024 --heads 16 --vocab 1024 --max-pos 256 \
  --no-weights --no-verify >/dev/null || { echo "FAIL making the small model"; exit 1; }
for s in on off; do
  GALV_PIPE_SKIP=$s timeout 300 "$BUILD/galvc" "$T/s.onnx" --train --plan-only --no-weights --precision bf16 --gpus 32 \
    --gpus-per-node 8 --cluster a100-80g --batch 256 --seq 256 --plan-out "$T/s-$s.json" </dev/null >/dev/null 2>"$T/s-$s.err" ||
    { echo "FAIL small model, GALV_PIPE_SKIP=$s: $(grep -m1 error "$T/s-$s.err")"; fail=1; }
done
if r=$(python3 - "$T/s-on.err" "$T/s-off.err" <<'PY'
import re, sys
on, off = open(sys.argv[1]).read(), open(sys.argv[2]).read()
cut = re.findall(r"^galvc: pipeline candidate (\d+): .*slower than the step to beat \(the \d+ stages? planned bound the step at ([0-9.]+) ms, "
                 r"not under ([0-9.]+) ms", on, re.M)
full = dict(re.findall(r"^galvc: pipeline candidate (\d+): .*stage programs planned ([0-9.]+) ms", off, re.M))
bad = []
if not cut: bad.append("no candidate cut short")
if "some cut short" not in on: bad.append("the summary line does not say so")
if re.search(r"slower than the step to beat", off): bad.append("GALV_PIPE_SKIP=off cut one short")
for n, lb, beat in cut:
    if n not in full: bad.append(f"candidate {n} not planned in full without the cut"); continue
    if float(full[n]) < float(lb) or float(full[n]) < float(beat): bad.append(f"candidate {n}: planned {full[n]} ms, under its bound {lb} or {beat}")
print("; ".join(bad) if bad else ", ".join(f"candidate {n}: bound {lb} ms >= {beat}, planned in full {full[n]} ms" for n, lb, beat in cut))
sys.exit(1 if bad else 0)
PY
); then
  echo "ok   cut short: $r"
else
  echo "FAIL the cut: $r"; fail=1
fi
if [ "$(desc "$T/s-on.json")" = "$(desc "$T/s-off.json")" ]; then
  echo "ok   the small model: the same plan.json with and without the cut"
else
  echo "FAIL the small model: plan.json differs"; diff <(desc "$T/s-on.json" | tr ',' '\n') <(desc "$T/s-off.json" | tr ',' '\n') | head; fail=1
fi
exit $fail
