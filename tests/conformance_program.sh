#!/usr/bin/env bash
# ONNX backend node tests (the ones whose ops the frontend maps) compiled by
# galvc --target cpu and run as programs: every outcome must equal
# tests/conformance/expected-program.txt (tests/conformance/run.py: the
# runtime is compiled once into a library, each program.c with the
# Makefile's flags).
set -euo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
exec python3 "$SRC/tests/conformance/run.py" "$BUILD" --mode program -j 2
