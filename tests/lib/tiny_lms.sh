# tiny_lms DIR [KV_HEADS [LAYERS]]: DIR/gpt2.onnx and DIR/llama.onnx, the tiny
# causal LMs the training tests share (examples/make_model.py: LAYERS layers,
# default 2, hidden 32, 4 heads, vocab 64; Llama with KV_HEADS key/value
# heads, default 2). Needs
# $SRC and the test's `bad`.
tiny_lms() {
  local fam
  for fam in gpt2 llama; do
    local extra=()
    [ $fam = llama ] && extra=(--kv-heads "${2:-2}")
    python3 "$SRC/examples/make_model.py" $fam -o "$1/$fam.onnx" --layers "${3:-2}" --hidden 32 --heads 4 --vocab 64 "${extra[@]}" \
      --no-verify >/dev/null || bad "$fam: make_model"
  done
}
