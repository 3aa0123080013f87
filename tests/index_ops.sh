#!/usr/bin/env bash
# The index and contraction ops of the transformers exports against
# onnxruntime, on helper-built graphs (tests/ops/make_graphs.py): ScatterND
# (Llama's full-tuple mask form, rows with a negative index, add with a
# repeated tuple), GatherND, GatherElements (GPT-J's rotary table lookup),
# ScatterElements (none, add with repeated targets), Einsum (batched matmul,
# attention scores, outer and inner products, transpose, sum, projection),
# OneHot (three axes, negative indices), Mod (float fmod, integer with the
# divisor's sign), ArgMax / ArgMin (keepdims 0, select_last_index), TopK
# (opsets 14, 17, 21; smallest along a middle axis; ties keep the lower
# index; k computed from a Shape; values and indices; the ONNX backend's
# TopK tests with k bound as an initializer), MatMul with broadcast batch dims, a 2-D lhs
# against a batched rhs and operands of different ranks. Each through
# galv-eval (tests/ort_compare.py) and the generated CPU program
# (tests/cpu_compare.py), rtol 1e-4 / atol 1e-5. Then training through them:
# 3 AdamW steps of a token model whose gradient flows through GatherND,
# ScatterND (data and updates), GatherElements, ScatterElements (add), Mod,
# TopK (values) and a broadcasting MatMul, galv-eval --train
# against the same graph trained by torch (tests/train/torch_train.py):
# losses within 1e-4 relative, weights within 1e-4. On 2 MPI ranks: the
# index ops under dp and tp and dp training through them (below).
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
export CFLAGS=${GALV_OPS_CFLAGS:--O1}  # the programs are tiny; -O3 -march=native compiles are cpu_models.sh's
names=$(python3 "$SRC/tests/ops/make_graphs.py" "$T") || { echo "FAIL make_graphs.py"; exit 1; }
. "$SRC/tests/lib/ort_both.sh"
# shellcheck disable=SC2086
ort_both "$BUILD" "$T" $names
# the ONNX backend's TopK tests with k bound (their k is a graph input, a
# dynamic shape for the importer): their own data, ties included
mkdir -p "$T/topk_backend"
if out=$(python3 "$SRC/tests/ops/topk_backend.py" "$BUILD" "$T/topk_backend" 2>&1); then ok "$(tail -1 <<<"$out")"
else bad "topk backend tests: $(grep -v '^ok' <<<"$out" | head -3)"; fi

. "$SRC/tests/lib/require.sh"
# 2 ranks (tests/ops/spmd_graphs.py): the index ops' sharding rules pass the
# batch (dp) and the column-parallel features (tp) through them with no
# collective at their nodes (the outputs' gathers at the return aside);
# where a rule keeps a dim whole (ScatterND of rows of the batch-first x,
# GatherElements along the split batch) exactly those gathers; outputs =
# onnxruntime = the single-device program. Then 2 AdamW steps of a token
# model through all four ops under dp = 1 rank (losses rtol 1e-4, weights
# rtol 1e-4 / atol 1e-5), with no collective in the forward but the loss's
# and in the backward only the gathers of the embedding gradient's scatter.
if have_cmd mpicc mpirun; then
  export GALV_COMM_SYNC=1 GALV_COMM_TIMEOUT=30 OMPI_MCA_btl_vader_single_copy_mechanism=none OPENBLAS_NUM_THREADS=1
  runas=()
  [ "$(id -u)" = 0 ] && runas=(--allow-run-as-root)
  export MPIRUN="mpirun ${runas[*]} --oversubscribe -x GALV_COMM_SYNC -x GALV_COMM_TIMEOUT -x OPENBLAS_NUM_THREADS"
  python3 "$SRC/tests/ops/spmd_graphs.py" "$T/spmd"
  for c in "spmd_index_dp dp all_gather@/scatter_nd_batch all_gather@/scatter_nd_batch" "spmd_index_tp tp" \
           "spmd_index_tp dp all_gather@/g"; do
    read -r n s exp <<<"$c"
    # shellcheck disable=SC2086
    if out=$(python3 "$SRC/tests/ops/spmd_compare.py" "$BUILD" "$T/spmd/$n.onnx" "$s" --expect $exp 2>&1); then ok "$out"
    else bad "$n 2 ranks $s: $(tail -2 <<<"$out")"; fi
  done
  tm="$T/spmd/train_index_dp.onnx" tb="$T/spmd/batches"
  python3 -c "
import numpy as np, os
r = np.random.RandomState(5)
os.makedirs('$tb')
np.save('$tb/input_ids.npy', r.randint(0, 50, (2, 4, 8)).astype(np.int64))
np.save('$tb/labels.npy', r.randint(0, 50, (2, 4, 8)).astype(np.int64))"
  topt=(--train --optimizer adamw --lr 1e-2 --eps 1e-6 --target cpu)
  if "$BUILD/galvc" "$tm" "${topt[@]}" -q -o "$T/t1/" 2>"$T/err" &&
    "$T/t1/program" --batches "$tb" --steps 2 -o "$T/t1/w" >"$T/t1/log" 2>"$T/err" &&
    "$BUILD/galvc" "$tm" "${topt[@]}" --gpus 2 --strategy dp -o "$T/t2/" 2>"$T/t2.err" &&
    timeout 300 "$T/t2/launch" --batches "$tb" --steps 2 -o "$T/t2/w" --comm-stats >"$T/t2/log" 2>"$T/err" &&
    r=$(python3 -c "import sys; sys.path.insert(0, '$SRC/tests/lib'); from same_training import check
print(check('$T/t1/log', '$T/t2/log', '$T/t1/w', '$T/t2/w'))" 2>&1); then
    at=$(grep -E '^galvc: spmd: (all_reduce|all_gather|reduce_scatter|all_to_all) ' "$T/t2.err" | awk '{print $3 "@" $NF}' |
      grep -v -e '@loss/' -e '@optimizer/' | sort | tr '\n' ' ')
    if [ "$at" = "all_gather@/h/grad all_gather@/h/grad " ]; then
      ok "2 AdamW steps through the index ops, 2 ranks dp = 1 rank: $r; collectives outside loss and optimizer: $at"
    else bad "2-rank dp training through the index ops: collectives outside loss and optimizer: $at"; fi
  else
    bad "2-rank dp training through the index ops: $(tail -3 "$T/err") $r"
  fi
fi
if [ "${GALV_REQUIRE_ALL:-0}" != 1 ] && ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "SKIP part of index_ops: /usr/bin/python3 cannot import torch (the training check)"
  galv_skipped_parts=1
  echo "index_ops: $pass passed, $fail failed"
  galv_exit "$fail"
fi
python3 -c "
import numpy as np
r = np.random.RandomState(5)
np.save('$T/ids.npy', r.randint(0, 50, (2, 8)).astype(np.int64))
np.save('$T/lab.npy', r.randint(0, 50, (2, 8)).astype(np.int64))"
python3 "$SRC/tests/train/onnx_dump.py" "$T/train_nd.onnx" "$T/dump"
if "$BUILD/galv-eval" "$T/train_nd.onnx" --input input_ids="$T/ids.npy" --input labels="$T/lab.npy" --train \
  --optimizer adamw --lr 1e-2 --weight-decay 0.01 --steps 3 -o "$T/g" >"$T/g.log" 2>"$T/err" &&
  GALV_TORCH_RULE=onnx /usr/bin/python3 "$SRC/tests/train/torch_train.py" "$T/dump" "$T/ids.npy" "$T/lab.npy" 3 "$T/t" \
    adamw 1e-2 0.01 0.9 0.999 1e-8 0 >"$T/t.log" 2>>"$T/err" &&
  /usr/bin/python3 "$SRC/tests/train/compare.py" "$T/g.log" "$T/t.log" "$T/g" "$T/t" 1e-4 1e-4 >"$T/cmp" 2>&1; then
  ok "training through the index ops and broadcast matmul = torch: $(grep -o 'params: .*' "$T/cmp")"
else
  bad "training through the index ops and broadcast matmul: $(head -3 "$T/err") $(cat "$T/cmp" 2>/dev/null)"
fi
echo "index_ops: $pass passed, $fail failed"
galv_exit "$fail"
