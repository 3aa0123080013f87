#!/usr/bin/env bash
# The main job on an example: installs what is needed, builds galvc, builds a
# small GPT-2-style ONNX model and compiles it, writing the IR after every pass.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >build.cmake.log 2>&1 || { cat build.cmake.log; exit 1; }
grep -E '✓|✗' build.cmake.log || true
cmake --build build -j2

mkdir -p out/example
python3 examples/make_model.py gpt2 -o out/example/gpt2.onnx
echo "== galvc out/example/gpt2.onnx --gpus 1 --batch 8 --seq 128 -o out/example/"
build/galvc out/example/gpt2.onnx --gpus 1 --batch 8 --seq 128 -o out/example/ \
  --dump-ir-after=all --dump-dir out/example/dumps --stats
echo "== IR after each pass: out/example/dumps/"
ls out/example/dumps
