#!/bin/bash
# tests/plan_structure.sh BUILD_DIR — the planner's layers are found by
# structure (passes/layer_units.c, docs/planner.md "Search space"), names
# play no part: for GPT-2, Llama, BERT, ViT and T5 (encoder and decoder
# blocks: two kinds) from examples/make_model.py, the model with every node
# and initializer renamed to opaque names (tests/scramble_names.py: "t_17",
# "node_301") and to numbers that look like layer indices ("p.1042") gets
# the same units (the report's "plan: units:" line), the same plan.json
# (mesh, axes, each unit's strategy and ZeRO stage) and the same predicted
# step, memory and collectives as the original, on cpu-local: training on
# dp=4 with ZeRO-1 or none per unit under a memory limit where the choice is
# a mixed pattern (GPT-2 and Llama, 6 layers), training on the free mesh
# search of 4 devices (every family, 3 layers), and the 12-layer GPT-2 of
# the repeated-layer path (reduced programs), and the 6-layer GPT-2 with 2
# microbatches and full recomputation (the same 6 layers). A model with one layer (no
# repetition) has one unit and plans.
set -u
B=$(cd "${1:-build}" && pwd)
cd "${GALV_SOURCE_DIR:-$(dirname "$0")/..}" || exit 1
G=$B/galvc
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
# plan.json without the figures of the run itself (time of planning)
desc() {
  python3 -c "
import json, sys
p = json.load(open(sys.argv[1]))
for k in ('planning_seconds',): p.pop(k, None)
print(json.dumps(p, sort_keys=True))" "$1"
}
units() { sed -n 's/^plan: units: //p' "$1"; }
# CASE MODEL ARGS...: the original and its two scrambled copies plan alike
same() {
  local c=$1 m=$2
  shift 2
  local ref="" rdesc="" ru="" v
  for v in "" _s _n; do
    if ! timeout 300 $G "$T/$m$v.onnx" "$@" --cluster cpu-local --plan-only --plan-out "$T/p$v.json" </dev/null >/dev/null 2>"$T/e$v"; then
      echo "FAIL $c $m$v: $(grep -m1 error "$T/e$v")"; fail=1; return
    fi
    if [ -z "$v" ]; then
      rdesc=$(desc "$T/p.json") ru=$(units "$T/e")
    elif [ "$(desc "$T/p$v.json")" != "$rdesc" ] || [ "$(units "$T/e$v")" != "$ru" ]; then
      echo "FAIL $c $m$v: units '$(units "$T/e$v")' vs '$ru'"; diff <(echo "$rdesc" | tr ',' '\n') <(desc "$T/p$v.json" | tr ',' '\n') | head -8
      fail=1; return
    fi
  done
  echo "ok $c $m: $ru; $(python3 -c "
import json, sys
p = json.load(open(sys.argv[1]))
print(len(p['units']), 'units', ''.join(str(u['zero']) if u['zero'] else '.' for u in p['units']), 'tp', p['tp_axis'], p['predicted']['step_ns'], 'ns')" "$T/p.json") for each naming"
}
mk() { # NAME FAMILY ARGS...
  local n=$1 f=$2
  shift 2
  python3 examples/make_model.py "$f" -o "$T/$n.onnx" --hidden 32 --heads 4 --vocab 64 --no-verify "$@" >/dev/null &&
    python3 tests/scramble_names.py "$T/$n.onnx" "$T/${n}_s.onnx" && python3 tests/scramble_names.py "$T/$n.onnx" "$T/${n}_n.onnx" --numeric --seed 7 ||
    { echo "FAIL making $n"; exit 1; }
}
# the layer counts the structure gives (T5: 3 encoder + 3 decoder blocks)
for f in gpt2 llama bert vit t5; do
  mk "$f" "$f" --layers 3
  A=(--batch 4 --seq 16); [ $f = vit ] && A=(--batch 4)
  same "free mesh, 4 devices, train" "$f" "${A[@]}" --gpus 4 --train --recompute=none
  want="outer + 3 layers found by structure (3 blocks"
  [ $f = t5 ] && want="outer + 6 layers found by structure (3 blocks of [0-9]* forward ops, 3 blocks"
  units "$T/e" | grep -q "^$want" || { echo "FAIL $f: units '$(units "$T/e")', want '$want ...'"; fail=1; }
done
# where the per-unit ZeRO choice decides: dp=4, none or ZeRO-1 per unit, a
# memory limit halfway between the all-ZeRO-1 and the no-ZeRO plan's memory
# (tests/plan.sh): the plan must be a mixed pattern, the same for every naming
for f in gpt2 llama; do
  mk "${f}6" "$f" --layers 6
  A=(--batch 8 --seq 16 --gpus 4 --mesh dp=4 --train --recompute=none --microbatches 1)
  $G "$T/${f}6.onnx" "${A[@]}" --cluster cpu-local --plan-only -q --zero-stages 1 --plan-out "$T/q.json" </dev/null 2>/dev/null
  for z in 0 1; do
    python3 -c "
import json, sys
p = json.load(open(sys.argv[1])); p['units'] = [dict(u, zero=int(sys.argv[2])) for u in p['units']]
json.dump(p, open(sys.argv[3], 'w'))" "$T/q.json" $z "$T/z$z.json" &&
      $G "$T/${f}6.onnx" "${A[@]}" --cluster cpu-local --plan-only -q --plan "$T/z$z.json" --plan-out "$T/o$z.json" </dev/null 2>/dev/null
  done
  mem() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['memory_per_device']['total'])" "$1"; }
  lim=$(python3 -c "print(($(mem "$T/o1.json") + $(mem "$T/o0.json")) // 2)")
  same "dp=4, ZeRO-1 or none, limit $lim" "${f}6" "${A[@]}" --zero-stages 1 --memory-limit "$lim"
  p=$(python3 -c "import json,sys; print(''.join(str(u['zero']) if u['zero'] else '.' for u in json.load(open(sys.argv[1]))['units']))" "$T/p.json")
  [[ $p == *1* && $p == *.* ]] || { echo "FAIL ${f}6: the pattern $p is not mixed (the case decides nothing per unit)"; fail=1; }
done
# microbatches (the forward repeated per microbatch at the same locations) and full recomputation:
# the same 6 layers
same "dp=4, 2 microbatches, recompute all" gpt26 --batch 8 --seq 16 --gpus 4 --mesh dp=4 --train --recompute=all --microbatches 2
units "$T/e" | grep -q '^outer + 6 layers found by structure (6 blocks of' || { echo "FAIL gpt26 microbatches: units '$(units "$T/e")'"; fail=1; }
# 12 layers: the repeated-layer path (reduced programs)
mk g12 gpt2 --layers 12
same "12 layers, dp=4, train" g12 --batch 8 --seq 16 --gpus 4 --mesh dp=4 --train --recompute=none
grep -q '^plan: 12 repeated layers: candidates costed on reduced programs' "$T/e_s" || { echo "FAIL g12_s: not the reduced path: $(grep -m1 '^plan: [0-9]* repeated' "$T/e_s")"; fail=1; }
# one layer: nothing repeats, one unit (the outer part), a plan
mk g1 gpt2 --layers 1
same "one layer" g1 --batch 8 --seq 16 --gpus 4 --mesh dp=4 --train --recompute=none
units "$T/e" | grep -q '^one (no repeated blocks' || { echo "FAIL g1: units '$(units "$T/e")'"; fail=1; }
exit $fail
