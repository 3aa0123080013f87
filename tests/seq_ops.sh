#!/usr/bin/env bash
# Sequences and Loop (frontend/onnx_ops.c: sequences are import-time lists,
# a Loop is unrolled at import) against onnxruntime, on helper-built graphs
# (tests/ops/make_seq_graphs.py): SplitToSequence (no split with keepdims 0,
# sizes, a scalar split with a smaller last part), SequenceAt / Insert /
# Erase / Length / Construct, ConcatFromSequence (concat and new_axis), a
# Loop with a carried tensor and a scan output, a Loop whose condition ends
# it early, and torch's repeat_interleave form (a trip count read from a
# shape, a carried sequence: GPT-J's rotary embedding). Each through
# galv-eval (tests/ort_compare.py) and the generated CPU program
# (tests/cpu_compare.py), rtol 1e-4 / atol 1e-5. A trip count known only at
# run time and a sequence position out of range are one error line each.
# (GPT-J itself, forward, tp / dp and training against torch:
# tests/hf_models.sh.)
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
export CFLAGS=${GALV_OPS_CFLAGS:--O1}
names=$(python3 "$SRC/tests/ops/make_seq_graphs.py" "$T") || { echo "FAIL make_seq_graphs.py"; exit 1; }
. "$SRC/tests/lib/ort_both.sh"
# shellcheck disable=SC2086
ort_both "$BUILD" "$T" $names
refuse() { # NAME PATTERN: one error line matching PATTERN, exit 1
  local rc=0
  "$BUILD/galvc" "$T/$1.onnx" --emit=ir -q -o "$T/out_$1/" </dev/null >/dev/null 2>"$T/err" || rc=$?
  if [ $rc = 1 ] && [ "$(wc -l <"$T/err")" = 1 ] && grep -q "$2" "$T/err"; then ok "$1 refused: $(cat "$T/err")"
  else bad "$1: exit $rc: $(head -c 400 "$T/err")"; fi
}
refuse bad_loop_trip "(Loop): unsupported: a Loop whose trip count is not known at import"
refuse bad_seq_pos "(SequenceAt): position 5 is out of range for a sequence of 3 tensors"
echo "seq_ops: $pass passed, $fail failed"
[ $fail = 0 ]
