#!/usr/bin/env bash
# The default training search's bound on a recomputing mode (tools/galvc.c, docs/planner.md "A recomputing mode's
# bound"): Llama2-7B weight-free on 16 GPUs under Galvatron's profile and cluster file, 80 GiB less Galvatron's
# reserve (bench/galvatron_llama2.sh's 16 / 80 row). With the pipeline planned first, its step bounds the searches at a
# mode's first count too; recompute=all's candidates on every layer are all slower than recompute=none's plan, but
# its plan on fewer layers (first:24) is the fastest of all: the search, bounded, must find a plan at least as fast as
# the same search without that pipeline's bound (GALV_PIPE_EARLY=off: no mode bounded at its first count), and the
# same plan.json (planning_seconds and candidates aside). Before the bound on a recomputing mode was widened to 4/3 of
# the step to beat, the bounded search left recompute=all out and chose none with 4 microbatches, 3978.953 ms.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
G="$BUILD/galvc"
python3 "$SRC/examples/make_model.py" llama -o "$T/l7.onnx" --layers 32 --hidden 4096 --heads 32 --kv-heads 32 --ffn 11008 \
  --vocab 32000 --no-weights --no-verify >/dev/null || { echo "FAIL make_model"; exit 1; }
A=("$T/l7.onnx" --train --plan-only --no-weights --precision bf16 --gpus 16 --gpus-per-node 8
   --cluster "$SRC/bench/galvatron/a100-galvatron.json" --batch 128 --seq 2048 --memory-limit $((80 * 1073741824))
   --memory-reserve 0.2,1073741824 --profile "$SRC/bench/galvatron/planner_inputs.json" --fused-attention on)
"$G" "${A[@]}" --plan-out "$T/b.json" </dev/null >"$T/b.out" 2>&1 || bad "bounded search: $(grep -m1 error "$T/b.out")"
GALV_PIPE_EARLY=off "$G" "${A[@]}" --plan-out "$T/u.json" </dev/null >"$T/u.out" 2>&1 || bad "search without the pipeline's bound: $(grep -m1 error "$T/u.out")"
if r=$(python3 - "$T/b.json" "$T/u.json" <<'PY'
import json, sys
b, u = (json.load(open(f)) for f in sys.argv[1:3])
def step(p): return (p.get("pipeline") or {}).get("predicted_step_ns") or p["predicted"]["step_ns"]
for p in (b, u):
    p.pop("planning_seconds", None), p.pop("candidates", None)
if step(b) > step(u):
    sys.exit(f"bounded {step(b)} ns ({b.get('recompute')}) slower than unbounded {step(u)} ns ({u.get('recompute')})")
if b != u:
    sys.exit(f"plan.json differs: bounded {b.get('recompute')} {step(b)} ns, unbounded {u.get('recompute')} {step(u)} ns")
print(f"recompute={b.get('recompute')}, {b.get('microbatches', 1)} microbatch(es), {step(b) / 1e6:.3f} ms both ways")
PY
2>&1); then ok "the pipeline's bound loses no plan: $r"; else bad "$r"; fi
if grep -q "^galvc: default search: the pipeline's step [0-9.]* ms (its preset stages, realised) bounds one program's searches$" "$T/b.out" &&
   grep -q "^galvc: recompute=all: 1 microbatch, predicted step" "$T/b.out"; then
  ok "recompute=all searched under the pipeline's bound: $(grep -m1 '^galvc: recompute=all: ' "$T/b.out")"
else bad "recompute=all under the pipeline's bound: $(grep -m2 '^galvc: recompute=all\|bounds one' "$T/b.out")"; fi
echo "plan_rc_bound: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
