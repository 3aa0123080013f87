#!/usr/bin/env bash
# Every example model (helper-built and torch exports) goes through galvc
# with a dump after import and after every pass. Each dump must
#  - parse with MLIR 19's own parser (galv-mlir-check, MLIR C API), and
#  - round-trip: galv-opt parses and re-prints it byte for byte.
# The hostile-names model (node names with */, quotes, newlines) is included.
set -euo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

models=()
for fam in gpt2 bert llama vit t5; do
  python3 "$SRC/examples/make_model.py" "$fam" -o "$T/$fam.onnx" --no-verify >/dev/null
  models+=("$T/$fam.onnx")
done
python3 "$SRC/tests/bad/make_bad.py" "$T/bad" >/dev/null
models+=("$T/bad/hostile_names.onnx")
models+=("$SRC"/examples/models/torch/*.onnx)

pass=0 fail=0
for m in "${models[@]}"; do
  name=$(basename "$m" .onnx)
  d="$T/dumps-$name"
  if ! "$BUILD/galvc" "$m" --batch 2 --seq 16 -q --dump-ir-after=all --dump-dir "$d" -o "$T/$name.mlir" 2>"$T/err"; then
    echo "FAIL $name: galvc failed: $(head -1 "$T/err")"
    fail=$((fail + 1)); continue
  fi
  ok=1
  for f in "$d"/*.mlir "$T/$name.mlir"; do
    if ! "$BUILD/galv-mlir-check" "$f" 2>"$T/err"; then
      echo "FAIL $name: MLIR cannot parse $(basename "$f"): $(head -1 "$T/err")"; ok=0
    fi
    if ! "$BUILD/galv-opt" "$f" -o "$T/rt.mlir" 2>"$T/err"; then
      echo "FAIL $name: galv-opt cannot parse $(basename "$f"): $(head -1 "$T/err")"; ok=0
    elif ! cmp -s "$f" "$T/rt.mlir"; then
      echo "FAIL $name: print -> parse -> print differs for $(basename "$f")"; ok=0
    fi
  done
  if [ $ok = 1 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
done
echo "mlir_dumps: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
