#!/usr/bin/env bash
# End-to-end numerics: every example model (helper-built at opsets 13 and 17,
# and the committed torch exports) evaluated by galv-eval — frontend, passes
# (the whole pipeline, fuse and memory-plan included: fused programs)
# and the reference evaluator — equals onnxruntime (rtol 1e-4, atol 1e-5),
# both as imported (shape-infer only) and after the whole pipeline.
set -euo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
models=()
for op in 13 17; do
  for fam in gpt2 bert llama vit t5; do
    python3 "$SRC/examples/make_model.py" "$fam" --opset "$op" -o "$T/${fam}_h$op.onnx" --no-verify >/dev/null
    models+=("$T/${fam}_h$op.onnx")
  done
done
models+=("$SRC"/examples/models/torch/*.onnx)
pass=0 fail=0
for m in "${models[@]}"; do
  if python3 "$SRC/tests/ort_compare.py" "$BUILD" "$m" --batch 2 --seq 16; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
  fi
done
echo "eval_models: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
