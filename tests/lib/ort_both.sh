# ort_both.sh — sourced by the op tests (index_ops, seq_ops, opset21_ops):
# ort_both BUILD DIR NAME... runs each DIR/NAME.onnx through galv-eval
# (tests/ort_compare.py) and the generated CPU program (tests/cpu_compare.py)
# against onnxruntime, counting with the caller's ok / bad.
ort_both() {
  local build=$1 dir=$2 n out
  shift 2
  for n in "$@"; do
    if out=$(python3 "$SRC/tests/ort_compare.py" "$build" "$dir/$n.onnx" 2>&1); then ok "$n galv-eval = onnxruntime: ${out##* max abs err }"
    else bad "$n galv-eval: $(grep -v '^ok' <<<"$out" | tail -2)"; fi
    if out=$(python3 "$SRC/tests/cpu_compare.py" "$build" "$dir/$n.onnx" 2>&1); then
      ok "$n cpu program = onnxruntime: $(grep -o 'max abs err.*' <<<"$out" | tail -1)"
    else bad "$n cpu program: $(grep -v '^ok' <<<"$out" | tail -2)"; fi
  done
}
