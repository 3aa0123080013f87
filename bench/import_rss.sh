#!/usr/bin/env bash
# import_rss.sh [BUILD_DIR] — peak memory of galvc on models whose weights
# live in external data. Builds two gpt2-shaped models (~200 MB and ~800 MB of
# f32 weights, examples/make_model.py --external-data --weights-mb), runs
# `galvc MODEL --emit=ir` on each under /usr/bin/time -v and prints weight
# size, peak RSS and wall time. External weights are memory-mapped and never
# read at import, so peak RSS must stay under 100 MB for both (exit 1 if not).
# Not part of ctest (it writes ~1 GB to a temp folder).
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$SRC/build}
PY=${PYTHON:-python3}
LIMIT_MB=${LIMIT_MB:-100}
GALVC=$BUILD/galvc
[ -x "$GALVC" ] || { echo "import_rss.sh: $GALVC not built" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "import_rss.sh: /usr/bin/time missing (apt-get install time)" >&2; exit 2; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/galv_rss.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

fail=0
printf '%-10s %12s %14s %10s\n' model weights_MB peak_RSS_MB wall_s
for mb in 200 800; do
  m=$TMP/gpt2_${mb}mb.onnx
  "$PY" "$SRC/examples/make_model.py" gpt2 -o "$m" --hidden 1024 --heads 16 --vocab 4096 \
    --weights-mb "$mb" --external-data --no-verify >/dev/null
  wbytes=$(stat -c %s "$m.data")
  /usr/bin/time -v "$GALVC" "$m" --emit=ir -o "$TMP/out.mlir" -q --seq 64 2>"$TMP/time.txt" || {
    echo "galvc failed on $m:"; cat "$TMP/time.txt"; exit 1; }
  rss_kb=$(awk -F: '/Maximum resident set size/ {gsub(/ /, "", $2); print $2}' "$TMP/time.txt")
  wall=$(awk '/Elapsed \(wall clock\)/ {print $NF}' "$TMP/time.txt")
  rss_mb=$((rss_kb / 1024))
  printf '%-10s %12.1f %14d %10s\n' "${mb}MB" "$(echo "$wbytes / 1000000" | bc -l)" "$rss_mb" "$wall"
  [ "$rss_mb" -lt "$LIMIT_MB" ] || { echo "FAIL: peak RSS ${rss_mb} MB >= ${LIMIT_MB} MB"; fail=1; }
  rm -f "$m" "$m.data"
done
[ $fail -eq 0 ] && echo "PASS: peak RSS under ${LIMIT_MB} MB" 
exit $fail
