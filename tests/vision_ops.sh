#!/usr/bin/env bash
# The vision and recurrent ops (pools, Clip, BatchNormalization in both
# modes, Pad, ConvTranspose, Resize, LSTM, GRU) on helper-built graphs
# against onnxruntime: galv-eval as imported and after the pipeline, and
# the CPU program for one case per op (tests/vision_ops.py).
set -euo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
exec python3 "$SRC/tests/vision_ops.py" "$BUILD" -j 2
