# Sourced by the microbatch-count search tests (tests/plan_microbatches.sh,
# plan_count_search.sh): their model, planner arguments and limit. Needs
# $BUILD, $SRC, $T and the test's bad.
#   G: galvc. A: the arguments of every run (the 4-layer hidden-64 GPT-2 in
#       $T/m.onnx, batch 16 x seq 32, training on 4 x a100-80g,
#       --recompute=none, --plan-only, no weights).
#   field PLAN.json: "microbatches step_ns memory_per_device.total".
#   z3_limit: sets lim, the limit just above what dp=4 with every unit ZeRO-3
#       needs at one microbatch (priced by --plan: $T/z3.json, $T/z3p.json),
#       + 0.3 %: one microbatch fits and is memory bound.
G="$BUILD/galvc"
python3 "$SRC/examples/make_model.py" gpt2 -o "$T/m.onnx" --layers 4 --hidden 64 --heads 4 --vocab 64 --no-weights \
  --no-verify >/dev/null || { echo "FAIL make_model"; exit 1; }
A=("$T/m.onnx" --batch 16 --seq 32 --train --gpus 4 --cluster a100-80g --recompute=none --plan-only --no-weights)
field() { python3 -c "import json,sys; p=json.load(open(sys.argv[1])); print(p.get('microbatches', 1), p['predicted']['step_ns'], p['memory_per_device']['total'])" "$1"; }

z3_limit() {
  python3 -c "
import json
json.dump({'mesh': {'axes': ['dp'], 'shape': [4]}, 'batch_axes': ['dp'], 'tp_axis': None, 'vocab_axis': None,
           'units': [{'zero': 3} for _ in range(5)]}, open('$T/z3.json', 'w'))"
  "$G" "${A[@]}" -q --plan "$T/z3.json" --plan-out "$T/z3p.json" </dev/null 2>"$T/z3.err" || bad "dp=4 ZeRO-3: $(head -1 "$T/z3.err")"
  local zm
  read -r _ _ zm <<<"$(field "$T/z3p.json" 2>/dev/null)"
  lim=$((${zm:-0} + ${zm:-0} * 3 / 1000))
}
