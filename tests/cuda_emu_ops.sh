#!/usr/bin/env bash
# The CUDA code of the recently added ops run under the execution layer
# (make emu: program.cu and runtime/cuda/ compiled by g++ against
# runtime/cuda/emu/, no GPU), three programs:
#   - inference: one helper-built graph with every such op that has its own
#     kernel (tests/ops/make_graphs.py emu_model: gather_nd, scatter_nd add,
#     gather_elements, scatter_elements add, mod float and integer, max and
#     average pool, topk values and indices with ties, cumsum float and
#     integer, exclusive and reversed), program-emu's
#     outputs vs onnxruntime, rtol 1e-4 / atol 1e-5, integers exactly
#     (tests/cuda_emu_compare.py); and topk with bf16 storage
#     (--precision bf16, make_graphs.py's emu_topk: integer-valued rows,
#     values and indices exactly);
#   - training through gather_nd, scatter_nd (data and updates),
#     gather_elements, scatter_elements, mod, topk and a broadcasting matmul
#     (make_graphs.py's train_nd: their gradients run the scatter / gather
#     kernels, none and add), 3 AdamW steps vs the same graph trained by
#     torch (tests/train/torch_train.py): losses within 1e-4 relative,
#     weights within 1e-4; and as the race-check build (make emu-race): no
#     shared- or global-memory race between threads (the scatter-adds'
#     atomics), the same losses;
#   - training through max and average pools (tests/vision/make_op_models.py's
#     cnn_train: the pool_grad kernel), 2 AdamW steps vs torch
#     (tests/vision/torch_graph.py; tests/lib/same_training.py's bounds);
#   - on 2 MPI ranks, training through gather_nd, scatter_nd,
#     gather_elements and scatter_elements under dp (their sharding rules'
#     local shapes) = the single-device CPU program.
#   - with nvcc on PATH (make emu links ptxas's counts), every launch of
#     both training programs found its kernel's registers per thread
#     (GALV_EMU_REGS=1); without nvcc that check is a skipped part (exit 77).
# Usage: cuda_emu_ops.sh BUILD_DIR
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$SRC/tests/lib/require.sh"
. "$SRC/tests/lib/emu_regs.sh"
require_cmd "g++ (build-essential)" g++
TORCH_PY=/usr/bin/python3
require_torch "$TORCH_PY"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export OPENBLAS_NUM_THREADS=1
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
t0=$(date +%s)
emu_regs_on
python3 "$SRC/tests/ops/make_graphs.py" "$T" >/dev/null || { echo "FAIL make_graphs.py"; exit 1; }
python3 - "$T" "$SRC" <<'PY'
import os, sys
import numpy as np, onnx
t, src = sys.argv[1:3]
sys.path.insert(0, os.path.join(src, "tests", "vision"))
from make_op_models import train_model
onnx.save(train_model(), os.path.join(t, "cnn.onnx"))
r = np.random.RandomState(5)
for d in ("nd_batches", "cnn_batches"):
    os.makedirs(os.path.join(t, d))
np.save(t + "/nd_batches/input_ids.npy", r.randint(0, 50, (3, 2, 8)).astype(np.int64))
np.save(t + "/nd_batches/labels.npy", r.randint(0, 50, (3, 2, 8)).astype(np.int64))
np.save(t + "/cnn_batches/x.npy", r.standard_normal((2, 2, 3, 10, 10)).astype(np.float32))
np.save(t + "/cnn_batches/labels.npy", r.randint(0, 5, (2, 2)).astype(np.int64))
PY
ADAMW=(--optimizer adamw --lr 1e-2 --weight-decay 0.01 --beta1 0.9 --beta2 0.999)
# the two training programs build while the inference one builds and runs
( "$BUILD/galvc" "$T/train_nd.onnx" --train "${ADAMW[@]}" --eps 1e-8 --target cuda --no-build -q -o "$T/nd/" &&
  make -s -C "$T/nd" emu ) >"$T/nd.build.log" 2>&1 &
nd_pid=$!
if out=$(python3 "$SRC/tests/cuda_emu_compare.py" "$BUILD" "$T/emu_ops.onnx" 2>&1); then
  while read -r l; do ok "inference ${l#ok }"; done < <(grep '^ok' <<<"$out")
else bad "inference emu_ops: $(grep -v '^ok' <<<"$out" | tail -5)"; fi
# TopK on bf16 storage (--precision bf16: x and the values stored bf16):
# make_graphs.py's emu_topk, integer-valued rows with ties, exact
if out=$(python3 "$SRC/tests/cuda_emu_compare.py" "$BUILD" "$T/emu_topk.onnx" --precision bf16 2>&1) &&
   [ "$(grep -c 'max abs err 0$\|exact$' <<<"$out")" = 4 ]; then
  while read -r l; do ok "inference ${l#ok }"; done < <(grep '^ok' <<<"$out")
else bad "topk on bf16 storage: $(grep -v '^ok' <<<"$out" | tail -5) $(grep -c '^ok' <<<"$out") of 4 exact"; fi
( "$BUILD/galvc" "$T/cnn.onnx" --train "${ADAMW[@]}" --eps 1e-6 --target cuda --no-build -q -o "$T/cnn/" &&
  make -s -C "$T/cnn" emu ) >"$T/cnn.build.log" 2>&1 &
cnn_pid=$!
echo "     inference: $(($(date +%s) - t0)) s"

python3 "$SRC/tests/train/onnx_dump.py" "$T/train_nd.onnx" "$T/nd_dump"
GALV_TORCH_RULE=onnx "$TORCH_PY" "$SRC/tests/train/torch_train.py" "$T/nd_dump" "$T/nd_batches/input_ids.npy" \
  "$T/nd_batches/labels.npy" 3 "$T/nd_torch" adamw 1e-2 0.01 0.9 0.999 1e-8 0 >"$T/nd_torch.log" 2>"$T/nd_torch.err"
if wait $nd_pid && GALV_EMU_REGS=1 "$T/nd/program-emu" --batches "$T/nd_batches" --steps 3 -o "$T/nd.w" >"$T/nd.log" 2>&1 &&
   r=$("$TORCH_PY" "$SRC/tests/train/compare.py" "$T/nd.log" "$T/nd_torch.log" "$T/nd.w" "$T/nd_torch" 1e-4 1e-4); then
  ok "training through the index ops, mod and topk (program-emu) = torch: $(grep -o 'params: .*' <<<"$r")"
else bad "training through the index ops: $(tail -3 "$T/nd.build.log" "$T/nd.log" "$T/nd_torch.err") ${r:-}"; fi
if make -s -C "$T/nd" emu-race >"$T/nd_race.log" 2>&1 &&
   "$T/nd/program-emu-race" --batches "$T/nd_batches" --steps 3 >"$T/nd_race.out" 2>>"$T/nd_race.log" &&
   diff <(grep '^step' "$T/nd.log") <(grep '^step' "$T/nd_race.out") >/dev/null; then
  ok "training through the index ops, race-check build: no shared- or global-memory race (scatter-add atomics), same losses"
else bad "training through the index ops, race-check build: $(tail -3 "$T/nd_race.log")"; fi

python3 "$SRC/tests/train/onnx_dump.py" "$T/cnn.onnx" "$T/cnn_dump"
printf '%s\n' cw cb tw tb fw fb >"$T/names"
"$TORCH_PY" "$SRC/tests/vision/torch_graph.py" "$T/cnn_dump" "$T/cnn_batches" 2 "$T/cnn_torch" "$T/names" "$T/names" \
  cross_entropy adamw 1e-2 0.01 0.9 0.999 1e-6 0 >"$T/cnn_torch.log" 2>"$T/cnn_torch.err"
if wait $cnn_pid && GALV_EMU_REGS=1 "$T/cnn/program-emu" --batches "$T/cnn_batches" --steps 2 -o "$T/cnn.w" >"$T/cnn.log" 2>&1 &&
   r=$(python3 - "$T" "$SRC" <<'PY'
import os, sys
t, src = sys.argv[1:3]
sys.path.insert(0, os.path.join(src, "tests", "lib"))
from same_training import check
print(check(t + "/cnn_torch.log", t + "/cnn.log", t + "/cnn_torch", t + "/cnn.w"))
PY
   ); then
  ok "training through max / average pool (pool_grad, program-emu) = torch: $r"
else bad "training through the pools: $(tail -3 "$T/cnn.build.log" "$T/cnn.log" "$T/cnn_torch.err") ${r:-}"; fi
# 2 ranks: the index ops' sharding rules give local shapes (the batch split
# through gather_nd / scatter_nd's trailing dims, gather_elements /
# scatter_elements' non-axis dims) that the CUDA kernels run as the CPU
# ones do: tests/ops/spmd_graphs.py's train_index_dp, 2 AdamW steps under
# dp with program-emu on 2 MPI ranks = the single-device CPU program.
if have_cmd mpicc mpirun; then
  export GALV_COMM_SYNC=1 GALV_COMM_TIMEOUT=30 OMPI_MCA_btl_vader_single_copy_mechanism=none
  runas=()
  [ "$(id -u)" = 0 ] && runas=(--allow-run-as-root)
  export MPIRUN="mpirun ${runas[*]} --oversubscribe -x GALV_COMM_SYNC -x GALV_COMM_TIMEOUT -x OPENBLAS_NUM_THREADS"
  python3 "$SRC/tests/ops/spmd_graphs.py" "$T/spmd"
  python3 -c "
import numpy as np, os
r = np.random.RandomState(5)
os.makedirs('$T/spmd/b')
np.save('$T/spmd/b/input_ids.npy', r.randint(0, 50, (2, 4, 8)).astype(np.int64))
np.save('$T/spmd/b/labels.npy', r.randint(0, 50, (2, 4, 8)).astype(np.int64))"
  topt=(--train --optimizer adamw --lr 1e-2 --eps 1e-6 -q)
  if "$BUILD/galvc" "$T/spmd/train_index_dp.onnx" "${topt[@]}" --target cpu -o "$T/spmd/one/" >"$T/spmd.log" 2>&1 &&
     "$T/spmd/one/program" --batches "$T/spmd/b" --steps 2 -o "$T/spmd/one/w" >"$T/spmd/one.log" 2>>"$T/spmd.log" &&
     "$BUILD/galvc" "$T/spmd/train_index_dp.onnx" "${topt[@]}" --gpus 2 --strategy dp --target cuda --no-build \
       -o "$T/spmd/cu/" >>"$T/spmd.log" 2>&1 && make -s -C "$T/spmd/cu" emu >>"$T/spmd.log" 2>&1 &&
     GALV_PROGRAM=program-emu timeout 300 "$T/spmd/cu/launch" --batches "$T/spmd/b" --steps 2 -o "$T/spmd/cu/w" \
       >"$T/spmd/cu.log" 2>>"$T/spmd.log" &&
     r=$(python3 -c "import sys; sys.path.insert(0, '$SRC/tests/lib'); from same_training import check
print(check('$T/spmd/one.log', '$T/spmd/cu.log', '$T/spmd/one/w', '$T/spmd/cu/w'))" 2>&1); then
    ok "training through the index ops, 2 ranks dp (program-emu) = 1 rank (CPU): $r"
  else bad "2-rank dp training through the index ops (program-emu): $(tail -3 "$T/spmd.log") ${r:-}"; fi
fi
emu_regs_all "training through the index ops, registers per launch" "$T/nd.log"
emu_regs_all "training through the pools, registers per launch" "$T/cnn.log"
echo "     total: $(($(date +%s) - t0)) s"
echo "cuda_emu_ops: $pass passed, $fail failed"
galv_exit "$fail"
