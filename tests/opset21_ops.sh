#!/usr/bin/env bash
# The operator forms of opsets 18-21 on helper-built graphs at opset 21
# (tests/ops/make_opset21.py) against onnxruntime: reductions with axes as an
# input (keepdims 0 / 1, negative axes, noop_with_empty_axes, no axes), Split
# with num_outputs (uneven and even) and with a sizes input, Pad with an axes
# input (constant, edge), Resize with axes and antialias 0 /
# keep_aspect_ratio_policy stretch (the values the exporters write; other
# values are refused in one line: tests/bad), LayerNormalization (axis -1
# with bias, axis 1 without, stash_type with the Mean / InvStdDev outputs).
# Each through galv-eval (tests/ort_compare.py: as imported and after the
# pipeline) and the generated CPU program (tests/cpu_compare.py), rtol 1e-4 /
# atol 1e-5.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
export CFLAGS=${GALV_OPS_CFLAGS:--O1}  # the programs are tiny
. "$SRC/tests/lib/require.sh"
names=$(python3 "$SRC/tests/ops/make_opset21.py" "$T") || { echo "FAIL make_opset21.py"; exit 1; }
. "$SRC/tests/lib/ort_both.sh"
# shellcheck disable=SC2086
ort_both "$BUILD" "$T" $names
echo "opset21_ops: $pass passed, $fail failed"
galv_exit "$fail"
