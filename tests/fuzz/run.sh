#!/usr/bin/env bash
# run.sh [SECONDS] [WORKDIR] — build the frontend fuzzer with clang
# (-fsanitize=fuzzer,address,undefined) and run it for SECONDS (default 60)
# on a seed corpus of small example models. Needs clang with libFuzzer
# (Debian/Ubuntu: apt-get install clang; clang-14 works), protoc-c and
# libprotobuf-c-dev, and the onnx Python package (for onnx.proto and seeds).
# Crashes are written to WORKDIR/crashes (default build-fuzz/). Exit status
# is non-zero when the fuzzer found a problem. Not part of ctest.
set -eu
SECS=${1:-60}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${2:-$SRC/build-fuzz}
PY=${PYTHON:-python3}
CC=${CC_FUZZ:-$(command -v clang || command -v clang-14 || true)}
[ -n "$CC" ] || { echo "run.sh: clang not found (apt-get install clang)" >&2; exit 2; }
command -v protoc-c >/dev/null || { echo "run.sh: protoc-c not found (apt-get install protobuf-c-compiler)" >&2; exit 2; }
mkdir -p "$WORK/gen" "$WORK/corpus" "$WORK/crashes"

# the ONNX reader, generated from the installed onnx package's schema (as CMake does)
PROTO=$("$PY" -c "import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), 'onnx.proto'))")
protoc-c --c_out="$WORK/gen" -I"$(dirname "$PROTO")" "$PROTO"

# protobuf-c's own code is built without sanitizer instrumentation of UB
# checks it does not need; everything of ours gets the full set
"$CC" -g -O1 -c "$WORK/gen/onnx.pb-c.c" -I"$WORK/gen" -fsanitize=fuzzer-no-link,address -o "$WORK/onnx.pb-c.o" -w
"$CC" -g -O1 -std=gnu11 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -fno-omit-frame-pointer -I"$SRC" -I"$WORK/gen" \
  "$SRC"/tests/fuzz/fuzz_frontend.c "$SRC"/frontend/*.c "$SRC"/ir/*.c "$WORK/onnx.pb-c.o" \
  $(pkg-config --cflags --libs libprotobuf-c) -lm -o "$WORK/fuzz_frontend"

# seeds: tiny helper-built models and the bad-input corpus; fall back to the
# committed torch exports when Python model building is unavailable
if "$PY" "$SRC/tests/bad/make_bad.py" "$WORK/bad" >/dev/null 2>&1; then
  cp "$WORK"/bad/*.onnx "$WORK/corpus/" 2>/dev/null || true
fi
for fam in gpt2 bert llama vit t5; do
  "$PY" "$SRC/examples/make_model.py" "$fam" -o "$WORK/corpus/seed_$fam.onnx" --layers 1 --hidden 8 --heads 2 \
    --vocab 16 --no-verify >/dev/null 2>&1 || true
done
ls "$WORK"/corpus/*.onnx >/dev/null 2>&1 || cp "$SRC"/examples/models/torch/*_op17.onnx "$WORK/corpus/"

echo "run.sh: fuzzing for $SECS s ($(ls "$WORK/corpus" | wc -l) corpus files)"
# -close_fd_mask=2: the importer's one-line errors would flood the log;
# libFuzzer keeps its own and the sanitizers' reports on a duplicate fd
"$WORK/fuzz_frontend" "$WORK/corpus" -max_total_time="$SECS" -max_len=65536 -rss_limit_mb=2048 \
  -timeout=10 -close_fd_mask=2 -artifact_prefix="$WORK/crashes/" -print_final_stats=1
