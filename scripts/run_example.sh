#!/usr/bin/env bash
# The main job on an example: installs what is needed, builds galvc, builds a
# small GPT-2-style ONNX model, compiles it for the CPU target (the IR after
# every pass goes to out/example/dumps/), runs the program on random token
# ids and compares its logits with onnxruntime.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >build.cmake.log 2>&1 || { cat build.cmake.log; exit 1; }
grep -E '✓|✗' build.cmake.log || true
cmake --build build -j2

E=out/example
rm -rf $E/dumps $E/outputs
mkdir -p $E
python3 examples/make_model.py gpt2 --layers 4 --hidden 256 --heads 8 --vocab 1024 -o $E/gpt2.onnx
echo "== galvc $E/gpt2.onnx --gpus 1 --target cpu --batch 8 --seq 128 -o $E/program/"
build/galvc $E/gpt2.onnx --gpus 1 --target cpu --batch 8 --seq 128 -o $E/program/ \
  --dump-ir-after=all --dump-dir $E/dumps
echo "== IR after each pass: $E/dumps/: $(ls $E/dumps | tr '\n' ' ')"
python3 - <<'PY'
import numpy as np
np.save("out/example/input_ids.npy", np.random.RandomState(0).randint(0, 1024, size=(8, 128)).astype(np.int64))
PY
echo "== $E/program/program --input input_ids=$E/input_ids.npy -o $E/outputs --iters 5"
$E/program/program --input input_ids=$E/input_ids.npy -o $E/outputs --iters 5
python3 - <<'PY'
import numpy as np, onnxruntime as ort
x = np.load("out/example/input_ids.npy")
ref = ort.InferenceSession("out/example/gpt2.onnx", providers=["CPUExecutionProvider"]).run(None, {"input_ids": x})[0]
got = np.load("out/example/outputs/logits.npy")
print(f"== logits {got.shape}: max abs difference from onnxruntime {np.abs(got - ref).max():.2e}")
PY
