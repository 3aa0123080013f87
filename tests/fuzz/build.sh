#!/usr/bin/env bash
# build.sh WORKDIR — builds every reader's libFuzzer target into WORKDIR
# (clang -fsanitize=fuzzer,address,undefined; our code with every UB check
# fatal) and fills WORKDIR/corpus/TARGET with its seeds. Used by run.sh (CI)
# and bench/fuzz_all.sh. Needs clang with libFuzzer (clang-14 works),
# protoc-c, libprotobuf-c-dev, METIS, the onnx Python package (onnx.proto,
# model seeds) and numpy (seeds). Rebuilds only what changed.
#
# Targets (tests/fuzz/fuzz_NAME.c), each a reader of galvc or of the programs:
#   frontend  ONNX models          ir        IR text (round trip)
#   plan      plan.json            sharding  --sharding files
#   cluster   cluster JSON         npy       .npy and .pb inputs
#   ckpt      checkpoints          weights   weights.bin
#   profile   --profile files (Galvatron's and galvc's)
set -eu
SRC=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${1:?usage: build.sh WORKDIR}
PY=${PYTHON:-python3}
CC=${CC_FUZZ:-$(command -v clang || command -v clang-14 || true)}
[ -n "$CC" ] || { echo "build.sh: clang not found (apt-get install clang)" >&2; exit 2; }
command -v protoc-c >/dev/null || { echo "build.sh: protoc-c not found (apt-get install protobuf-c-compiler)" >&2; exit 2; }
mkdir -p "$WORK/gen" "$WORK/obj" "$WORK/corpus" "$WORK/crashes"

# generated sources, as CMake makes them: the ONNX schema's reader, the cluster presets
PROTO=$("$PY" -c "import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), 'onnx.proto'))")
[ -f "$WORK/gen/onnx.pb-c.c" ] || protoc-c --c_out="$WORK/gen" -I"$(dirname "$PROTO")" "$PROTO"
cmake -DOUT="$WORK/gen/cluster_presets.c" -DSRC_DIR="$SRC/data/clusters" -P "$SRC/cmake/embed_clusters.cmake"

# protobuf-c's own code without the UB checks it does not need; ours with the full set
SAN="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
FLAGS="-g -O1 -std=gnu11 -I$SRC -I$WORK/gen $(pkg-config --cflags libprotobuf-c)"
compile() { # SRC.c OBJ [extra flags]: only when the source or a header changed
  local src=$1 obj=$2
  shift 2
  if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] || [ -n "$(find "$SRC"/ir "$SRC"/passes "$SRC"/planner "$SRC"/runtime "$SRC"/frontend "$SRC"/tests/fuzz -name '*.h' -newer "$obj" -print -quit)" ]; then
    "$CC" $FLAGS "$@" -c "$src" -o "$obj"
  fi
}
export -f compile
export CC FLAGS SRC
compile "$WORK/gen/onnx.pb-c.c" "$WORK/obj/onnx.pb-c.o" -fsanitize=fuzzer-no-link,address -w
LIBSRC=$(ls "$SRC"/ir/*.c "$SRC"/frontend/*.c "$SRC"/passes/*.c "$SRC"/planner/*.c "$WORK/gen/cluster_presets.c" \
  "$SRC"/runtime/io.c "$SRC"/runtime/npy.c "$SRC"/runtime/file.c)
for s in $LIBSRC; do
  d=$(basename "$(dirname "$s")")
  echo "$s $WORK/obj/${d}_$(basename "${s%.c}").o"
done | xargs -P "${GALV_FUZZ_JOBS:-2}" -n 2 bash -c 'compile "$0" "$1" '"$SAN"
rm -f "$WORK/libgalvfuzz.a"
ar rcs "$WORK/libgalvfuzz.a" "$WORK"/obj/*.o

TARGETS="frontend ir plan sharding cluster npy ckpt weights profile"
for t in $TARGETS; do
  "$CC" $FLAGS -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
    "$SRC/tests/fuzz/fuzz_$t.c" "$WORK/libgalvfuzz.a" -lmetis $(pkg-config --libs libprotobuf-c) -lm -o "$WORK/fuzz_$t"
done

# seeds: the repository's own files, and small valid files of each format
mkdir -p "$WORK/seeds"
for t in $TARGETS; do mkdir -p "$WORK/corpus/$t"; done
if "$PY" "$SRC/tests/bad/make_bad.py" "$WORK/bad" >/dev/null 2>&1; then
  cp "$WORK"/bad/*.onnx "$WORK/corpus/frontend/" 2>/dev/null || true
fi
for fam in gpt2 bert llama vit t5; do
  [ -f "$WORK/corpus/frontend/seed_$fam.onnx" ] ||
    "$PY" "$SRC/examples/make_model.py" "$fam" -o "$WORK/corpus/frontend/seed_$fam.onnx" --layers 1 --hidden 8 --heads 2 \
      --vocab 16 --no-verify >/dev/null 2>&1 || true
done
ls "$WORK"/corpus/frontend/*.onnx >/dev/null 2>&1 || cp "$SRC"/examples/models/torch/*_op17.onnx "$WORK/corpus/frontend/"
cp "$SRC"/tests/lit/*.mlir "$SRC"/tests/lit/Inputs/*.ir "$WORK/corpus/ir/"
cp "$SRC"/data/clusters/*.json "$WORK/corpus/cluster/"
cp "$SRC"/bench/galvatron/planner_inputs.json "$SRC"/tests/lit/Inputs/profile_*.json "$WORK/corpus/profile/" 2>/dev/null || true
"$PY" "$SRC/tests/fuzz/make_seeds.py" "$WORK/seeds"
for t in plan sharding npy ckpt weights; do cp "$WORK/seeds/$t"/* "$WORK/corpus/$t/"; done
cp "$SRC"/tests/lit/Inputs/*.txt "$WORK/corpus/sharding/"
echo "build.sh: built $(for t in $TARGETS; do printf 'fuzz_%s ' "$t"; done)in $WORK"
