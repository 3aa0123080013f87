#!/usr/bin/env bash
# ONNX backend node tests (the ones whose ops the frontend maps) through
# galv-eval: every outcome must equal tests/conformance/expected-eval.txt.
set -euo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
exec python3 "$SRC/tests/conformance/run.py" "$BUILD" --mode eval -j 2
