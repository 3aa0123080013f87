#!/bin/bash
# Bad sharding input: each case is one clear error line naming what does not
# fit, and exit 1 (bad model / file) or 2 (bad option). Usage: shard_errors.sh BUILD_DIR
set -u
B=${1:?build dir}
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
M=$SRC/examples/models/torch/gpt2_op17.onnx
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
check() { # expected-rc expected-text cmd...
  local rc=$1 want=$2
  shift 2
  "$@" >"$T/out" 2>"$T/err"
  local got=$? lines
  lines=$(wc -l <"$T/err")
  if [ "$got" != "$rc" ] || ! grep -qF -- "$want" "$T/err" || [ "$lines" != 1 ]; then
    echo "FAIL (rc $got, $lines lines): $*"; cat "$T/err"; fail=1
  else
    echo "ok: $(cat "$T/err")"
  fi
}
check 2 "mesh 2x3 has 6 devices, not --gpus 8" "$B/galvc" "$M" --gpus 8 --mesh dp=2,tp=3 -q
check 2 "unknown strategy 'pp'" "$B/galvc" "$M" --gpus 2 --strategy pp -q
printf 'no_such_value [{"dp"}, {}]\n' >"$T/sh.txt"
check 1 "sharding file names 'no_such_value', which is no value of the model" "$B/galvc" "$M" --gpus 2 --sharding "$T/sh.txt" --batch 2 --seq 8 -q --emit=ir -o "$T/o.mlir"
# 3 heads of 4, tp 2 divides the 12-wide projection but not the heads
check 1 "the tensor-parallel degree must divide the head count" "$B/galv-opt" --strategy=tp --passes=propagate-sharding "$SRC/tests/lit/shard-heads-indivisible.mlir"
check 1 "input 'input_ids' has batch dim of size 2, which does not divide into 4 shards (mesh axes dp)" "$B/galvc" "$M" --gpus 4 --strategy dp --batch 2 --seq 8 -q --emit=ir -o "$T/o.mlir"
# grouped-query heads: 4 query heads but 2 key/value heads; tp 4 divides the
# query heads, not the kv heads (the k/v projection's head split)
if python3 "$SRC/examples/make_model.py" llama -o "$T/gqa.onnx" --heads 4 --kv-heads 2 --no-verify >/dev/null 2>&1; then
  check 1 "(Reshape): sharding: dim 2 (size 32) split 4 ways does not fit the reshape to tensor<2x8x2x16xf32>; the tensor-parallel degree must divide the head count" \
    "$B/galvc" "$T/gqa.onnx" --gpus 4 --strategy tp --batch 2 --seq 8 -q --emit=ir -o "$T/o.mlir"
  check 1 "(Reshape): sharding: dim 2 (size 32) split 4 ways does not fit the reshape" \
    "$B/galvc" "$T/gqa.onnx" --gpus 8 --mesh dp=2,tp=4 --strategy dp,tp --batch 2 --seq 8 -q --train --emit=ir -o "$T/o.mlir"
else
  echo "FAIL: make_model.py llama"; fail=1
fi
# the mesh's axes multiply to --gpus; a sharding file's axis and divisibility
check 2 "mesh 3 has 3 devices, not --gpus 4" "$B/galvc" "$M" --gpus 4 --mesh dp=3 -q
check 2 "mesh 2 has 2 devices, not --gpus 8" "$B/galvc" "$M" --gpus 8 --mesh dp=2 -q
printf 'input_ids [{"pp"}, {}]\n' >"$T/sh2.txt"
check 1 "bad or repeated mesh axis" "$B/galvc" "$M" --gpus 2 --sharding "$T/sh2.txt" --batch 2 --seq 8 -q --emit=ir -o "$T/o.mlir"
printf 'input_ids [{"dp"}, {}]\n' >"$T/sh3.txt"
check 1 "'input_ids' dim 0 of size 3 is not divisible into 2 shards" "$B/galvc" "$M" --gpus 2 --sharding "$T/sh3.txt" --batch 3 --seq 8 -q --emit=ir -o "$T/o.mlir"
# sequence parallelism in a sharding file: @sequence_parallel AXIS, strict
SP=$SRC/tests/lit/shard-seq-parallel.mlir
printf 'w1 [{}, {"tp"}]\n@sequence_parallel dp\n' >"$T/sp1.txt"
check 1 "sp1.txt:2: @sequence_parallel: 'dp' is no axis of the mesh" "$B/galv-opt" --sharding="$T/sp1.txt" --passes=propagate-sharding "$SP"
printf '@seq tp\n' >"$T/sp2.txt"
check 1 "sp2.txt:1: unknown directive '@seq tp' (known: @sequence_parallel AXIS)" "$B/galv-opt" --sharding="$T/sp2.txt" --passes=propagate-sharding "$SP"
printf '@sequence_parallel tp x\n' >"$T/sp3.txt"
check 1 "sp3.txt:1: @sequence_parallel: unexpected text after the axis: 'x'" "$B/galv-opt" --sharding="$T/sp3.txt" --passes=propagate-sharding "$SP"
printf '@sequence_parallel\n' >"$T/sp4.txt"
check 1 "sp4.txt:1: unknown directive '@sequence_parallel'" "$B/galv-opt" --sharding="$T/sp4.txt" --passes=propagate-sharding "$SP"
exit $fail
