#!/usr/bin/env bash
# bad_inputs.sh BUILD_DIR — the bad-input corpus (tests/bad/make_bad.py) through
# galvc: every bad case must fail cleanly (exit code exactly 1, never a signal),
# with exactly one line on stderr that names the file and contains the expected
# substring; cases with an empty expectation (hostile names) must succeed.
set -u
BUILD=${1:?usage: bad_inputs.sh BUILD_DIR}
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
PY=${PYTHON:-python3}
GALVC=$BUILD/galvc
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

"$PY" "$SRC/tests/bad/make_bad.py" "$TMP/bad" >/dev/null || { echo "FAIL: make_bad.py"; exit 1; }
fail=0 n=0
while IFS=$'\t' read -r file expect; do
  [ -n "$file" ] || continue
  n=$((n + 1))
  "$GALVC" "$TMP/bad/$file" --emit=ir -o "$TMP/out.mlir" -q 2>"$TMP/err"
  rc=$?
  lines=$(wc -l <"$TMP/err")
  if [ -z "$expect" ]; then
    if [ $rc -ne 0 ]; then
      echo "FAIL: $file: expected success, exit $rc: $(cat "$TMP/err")"; fail=1
    elif [ ! -s "$TMP/out.mlir" ]; then
      echo "FAIL: $file: no IR written"; fail=1
    else
      echo "ok: $file imports"
    fi
    continue
  fi
  if [ $rc -ne 1 ]; then
    echo "FAIL: $file: exit code $rc (want 1; >128 is a signal)"; cat "$TMP/err"; fail=1
  elif [ "$lines" -ne 1 ]; then
    echo "FAIL: $file: $lines lines on stderr (want exactly 1)"; cat "$TMP/err"; fail=1
  elif ! grep -qF -- "$expect" "$TMP/err"; then
    echo "FAIL: $file: stderr lacks '$expect': $(cat "$TMP/err")"; fail=1
  elif ! grep -qF -- "$file" "$TMP/err"; then
    echo "FAIL: $file: stderr does not name the file: $(cat "$TMP/err")"; fail=1
  else
    echo "ok: $file: $(cat "$TMP/err")"
  fi
done <"$TMP/bad/cases.txt"
[ $n -gt 0 ] || { echo "FAIL: no cases"; exit 1; }
[ $fail -eq 0 ] && echo "PASS: $n bad-input cases" || echo "FAILED"
exit $fail
