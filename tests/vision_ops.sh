#!/usr/bin/env bash
# The vision and recurrent ops (pools, Clip, BatchNormalization in both
# modes, Pad, ConvTranspose, Resize, LSTM, GRU) on helper-built graphs
# against onnxruntime: galv-eval as imported and after the pipeline, and
# the CPU program for one case per op (tests/vision_ops.py); then the ONNX
# backend's Resize tests (nearest, linear, cubic) with their scales / sizes
# bound as initializers, on their own data (tests/ops/resize_backend.py).
set -euo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
rc=0
python3 "$SRC/tests/vision_ops.py" "$BUILD" -j 2 || rc=1
python3 "$SRC/tests/ops/resize_backend.py" "$BUILD" "$T" || rc=1
exit $rc
