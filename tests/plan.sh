#!/bin/bash
# tests/plan.sh BUILD_DIR — the planner (docs/planner.md): the search's plan
# equals the exhaustive optimum on small graphs (gap 0), --plan reuses a
# saved plan, a model no plan fits gives one error with the memory it needs.
set -u
B=${1:-build}
G=$B/galvc
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
python3 examples/make_model.py gpt2 -o "$T/g.onnx" --no-verify >/dev/null || exit 1
python3 examples/make_model.py llama -o "$T/l.onnx" --no-verify >/dev/null || exit 1
step() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['predicted']['step_ns'])" "$1"; }
for m in g l; do
  for args in "--gpus 4" "--gpus 4 --train" "--gpus 2 --train --memory-limit 1700000"; do
    timeout 120 $G "$T/$m.onnx" --batch 4 --seq 16 $args --plan-only -q --plan-out "$T/dp.json" 2>/dev/null || { echo "FAIL $m $args: search"; fail=1; continue; }
    timeout 300 $G "$T/$m.onnx" --batch 4 --seq 16 $args --plan-only -q --plan-search exhaustive --plan-out "$T/ex.json" 2>/dev/null || { echo "FAIL $m $args: exhaustive"; fail=1; continue; }
    a=$(step "$T/dp.json"); b=$(step "$T/ex.json")
    if [ "$a" != "$b" ]; then echo "FAIL $m $args: search $a ns, exhaustive optimum $b ns"; fail=1; else echo "ok gap 0: $m $args ($a ns)"; fi
  done
done
# --plan reuses the plan: the same prediction
$G "$T/g.onnx" --batch 4 --seq 16 --gpus 4 --train --plan-only -q --plan-out "$T/dp.json" 2>/dev/null; $G "$T/g.onnx" --batch 4 --seq 16 --gpus 4 --train --plan "$T/dp.json" --plan-only -q --plan-out "$T/re.json" 2>/dev/null
[ "$(step "$T/dp.json")" = "$(step "$T/re.json")" ] && echo "ok --plan reuse" || { echo "FAIL --plan reuse"; fail=1; }
# no plan fits: one line naming the smallest memory
out=$($G "$T/g.onnx" --batch 4 --seq 16 --gpus 2 --train --memory-limit 1000 --plan-only -q 2>&1)
if [ "$(echo "$out" | wc -l)" = 1 ] && echo "$out" | grep -q "no plan fits the memory limit of 1000 bytes.*the smallest needs [0-9]* bytes"; then
  echo "ok memory error: $out"
else echo "FAIL memory error: $out"; fail=1; fi
# a bad plan file: one line
echo '{"mesh": 3}' > "$T/bad.json"
out=$($G "$T/g.onnx" --batch 4 --seq 16 --gpus 4 --plan "$T/bad.json" --plan-only -q 2>&1)
[ "$(echo "$out" | wc -l)" = 1 ] && echo "$out" | grep -q "bad.json: field 'mesh'" && echo "ok bad plan" || { echo "FAIL bad plan: $out"; fail=1; }
exit $fail
