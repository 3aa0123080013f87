#!/usr/bin/env bash
# Per-layer plans on the CUDA target (docs/training.md): plan.json files
# that give the layers different choices, compiled with galvc --target cuda
# --plan, built with `make emu` (program.cu and runtime/cuda/ over the CPU
# execution layer, NCCL over MPI) and run with GALV_PROGRAM=program-emu
# out/launch for 2 AdamW steps (eps 1e-6) on the tiny GPT-2 of
# tests/lib/tiny_lms.sh (batch 8 x 8):
#   - ZeRO stages per layer on 4 ranks (dp=4): the outer unit at stage 2,
#     layer 0 at stage 1, layer 1 at stage 3 (tests/train_zero_stages.sh's
#     mixed plan);
#   - tensor-parallel degree per layer on dp=2 x tp=2: layer 0 over tp,
#     layer 1 none (tests/plan_unit_tp.sh's "deg");
#   - tensor-parallel axis per layer on a=2 x b=2, no batch axes: layer 0
#     over a, layer 1 over b (plan_unit_tp.sh's "axes").
# Each: losses and every weight = the single-device CPU program's (rtol
# 1e-4, atol 1e-5), and the bytes rank 0's NCCL backend counted = the
# global program's prediction x 2 (the program checks it; read again here)
# = the CPU target's program of the same plan (its MPI counts).
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/require.sh"
require_cmd "g++ (build-essential)" g++
. "$SRC/tests/lib/mpi_env.sh"
export CFLAGS=-O0
. "$SRC/tests/lib/tiny_lms.sh"
tiny_lms "$T"
python3 - "$T" <<'PY'
import json, numpy as np, os, sys
t = sys.argv[1]
r = np.random.RandomState(11)
os.makedirs(f"{t}/b")
np.save(f"{t}/b/input_ids.npy", r.randint(0, 64, (2, 8, 8)).astype(np.int64))
lab = r.randint(0, 64, (2, 8, 8)).astype(np.int64)
lab[0, 0, :] = -100
np.save(f"{t}/b/labels.npy", lab)
def plan(name, axes, batch, tp, units):
    json.dump({"mesh": {"axes": axes, "shape": [4 if axes == ["dp"] else 2] * len(axes)}, "batch_axes": batch,
               "tp_axis": tp, "vocab_axis": None,
               "units": [dict({"unit": u}, **x) for u, x in zip(["outer0", "layer 0", "layer 1"], units)]},
              open(f"{t}/plan-{name}.json", "w"), indent=1)
plan("zero", ["dp"], ["dp"], None, [{"zero": 2}, {"zero": 1}, {"zero": 3}])
plan("deg", ["dp", "tp"], ["dp"], "tp", [{"zero": 0}, {"zero": 0, "tp_axis": "tp"}, {"zero": 0, "tp_axis": None}])
plan("axes", ["a", "b"], [], "a", [{"zero": 0}, {"zero": 0}, {"zero": 0, "tp_axis": "b"}])
PY
G=(--batch 8 --seq 8 --train --eps 1e-6)
timeout 300 "$BUILD/galvc" "$T/gpt2.onnx" "${G[@]}" --target cpu -q -o "$T/one/" </dev/null >"$T/one.gen" 2>&1 &&
  timeout 120 "$T/one/program" --batches "$T/b" --steps 2 -o "$T/one.w" >"$T/one.log" 2>&1 ||
  { echo "FAIL the single-device reference: $(grep -m2 -i error "$T/one.gen" "$T/one.log")"; exit 1; }
same() { # NAME: vs the single device
  python3 - "$T/one.log" "$T/$1.log" "$T/one.w" "$T/$1.w" "$SRC/tests/lib" <<'PY'
import sys
sys.path.insert(0, sys.argv[5])
from same_training import check
print(check(*sys.argv[1:5]))
PY
}
for p in zero deg axes; do
  for tgt in cpu cuda; do
    d="$T/$p-$tgt"
    if ! timeout 300 "$BUILD/galvc" "$T/gpt2.onnx" "${G[@]}" --gpus 4 --plan "$T/plan-$p.json" --target $tgt --no-build -q \
      -o "$d/" </dev/null >"$d.gen" 2>&1 || ! make -s -C "$d" $([ $tgt = cuda ] && echo emu) >>"$d.gen" 2>&1; then
      bad "$p $tgt: galvc / make: $(grep -m2 -i error "$d.gen")"
      continue
    fi
    exe=program
    [ $tgt = cuda ] && exe=program-emu
    if ! GALV_PROGRAM=$exe timeout 300 "$d/launch" --batches "$T/b" --steps 2 -o "$d.w" --comm-stats </dev/null >"$d.log" 2>&1; then
      bad "$p $tgt: run: $(grep -m2 -i error "$d.log")"
      continue
    fi
  done
  [ -f "$T/$p-cuda.log" ] && [ -f "$T/$p-cpu.log" ] || continue
  if r=$(same "$p-cuda") && c=$(python3 "$SRC/tests/lib/comm_counted.py" "$T/$p-cuda.log" 2) &&
    c2=$(python3 "$SRC/tests/lib/comm_counted.py" "$T/$p-cpu.log" 2) && [ "$c" = "$c2" ]; then
    ok "$p: the CUDA program (make emu, 4 ranks) = one device ($r); NCCL bytes = predicted = the CPU program's ($c)"
  else
    bad "$p: CUDA ${r:-} / bytes cuda '${c:-}' cpu '${c2:-}'"
  fi
done
echo "cuda_emu_plans: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
