#!/usr/bin/env bash
# Pipeline stages of more than one device (docs/pipeline.md, "Stages of more
# than one device"): galvc --pipeline-stages 2 --gpus 4 --strategy tp|dp
# partitions each stage's program over its 2 ranks (the cross-stage values
# replicated inside the stage, or kept split over dp), out/launch starts -np 2 per stage. Under
# GALV_COMM_SYNC=1 and `timeout`: pp=2 x tp=2 and pp=2 x dp=2 inference on
# GPT-2 tiny equal the single-device logits (rtol 1e-4, atol 1e-5); pp=2 x
# tp=2 training (2 AdamW steps, GPipe and 1F1B), pp=2 x dp=2 (1F1B), pp=2 x
# the intra-operator planner's plan per stage (no --strategy, 1F1B) and, on
# 8 ranks, pp=2 x dp=2 x tp=2 (--mesh dp=2,tp=2 --strategy dp,tp, 1F1B) print
# the single-device losses and leave its weights (rtol 1e-4, atol 1e-5); the
# same across nodes (4 per node) with the crossing blocks scattered over tp
# and gathered, and with GALV_PIPE_SCATTER=off (twice the bytes per rank).
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
. "$SRC/tests/lib/rank_compare.sh"

# ---- inference: GPT-2 tiny, batch 8 x seq 16, B = 2
m="$T/gpt2.onnx"
python3 "$SRC/examples/make_model.py" gpt2 -o "$m" --no-verify >/dev/null || { echo "FAIL make_model"; exit 1; }
python3 - "$SRC" "$m" "$T/in" >"$T/args" 2>"$T/err" <<'PY' || { echo "FAIL inputs: $(cat "$T/err")"; exit 1; }
import sys, onnx, numpy as np
sys.path.insert(0, sys.argv[1] + "/tests")
from model_inputs import make_inputs
args = []
for i, (name, a) in enumerate(make_inputs(onnx.load(sys.argv[2], load_external_data=False), 8, 16).items()):
    fn = f"{sys.argv[3]}_{i}.npy"
    np.save(fn, a)
    args.append(f"--input {name}={fn}")
print(" ".join(args))
PY
# shellcheck disable=SC2046
single_program "$T/one" "$m" "$(cat "$T/args")" --batch 8 --seq 16
for st in tp dp; do
  d="$T/inf-$st"
  if ! timeout 600 "$BUILD/galvc" "$m" --batch 8 --seq 16 --pipeline-stages 2 --microbatches 2 --gpus 4 --strategy "$st" \
      --target cpu -q -o "$d/" 2>"$T/err"; then
    bad "pp=2 x $st=2 inference: galvc: $(head -3 "$T/err")"
    continue
  fi
  if ! stage_ranks "$d/launch" 2 2; then
    bad "pp=2 x $st=2 inference: launch is not -np 2 per stage"
    continue
  fi
  # shellcheck disable=SC2046
  if ! timeout 120 "$d/launch" $(cat "$T/args") -o "$d/res" >"$T/out" 2>"$T/err"; then
    bad "pp=2 x $st=2 inference: run: $(grep -m3 -i error "$T/err" "$T/out")"
    continue
  fi
  if msg=$(same_outputs "$T/one/res" "$d/res"); then
    ok "pp=2 x $st=2 inference (4 ranks): $msg; $(grep -c 'high-water' "$T/out") ranks report"
  else
    bad "pp=2 x $st=2 inference: $msg"
  fi
done

# ---- training: GPT-2 tiny (2 layers, hidden 32, vocab 64), batch 8 x seq 8, B = 2, 2 AdamW steps
m="$T/gpt2t.onnx"
python3 "$SRC/examples/make_model.py" gpt2 -o "$m" --layers 2 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null ||
  { echo "FAIL make_model"; exit 1; }
python3 -c "
import numpy as np, os
r = np.random.RandomState(0)
os.makedirs('$T/b')
np.save('$T/b/input_ids.npy', r.randint(0, 64, (2, 8, 8)).astype(np.int64))
np.save('$T/b/labels.npy', r.randint(0, 64, (2, 8, 8)).astype(np.int64))" || { echo "FAIL batches"; exit 1; }
single_program "$T/tone" "$m" "--batches $T/b --steps 2" --input-shape input_ids=8x8 --train
# DIR NAME RANKS: DIR/launch runs 2 training steps (DIR.log, DIR.w), equal to the single device's
run_train() {
  if ! timeout 120 "$1/launch" --batches "$T/b" --steps 2 -o "$1.w" >"$1.log" 2>"$T/err"; then
    bad "$2: run: $(grep -m3 -i error "$T/err" "$1.log")"
  elif msg=$(same_training "$T/tone.log" "$1.log" "$T/tone.w" "$1.w"); then
    ok "$2 ($3 ranks): $msg"
  else
    bad "$2: $msg"
  fi
}
# CASE = strategy:schedule[:mesh]; with a mesh (dp=2,tp=2) each stage is an SPMD program over a 2-D mesh of 4 ranks;
# strategy "plan": no --strategy, each stage's plan from the intra-operator planner
for c in ${GALV_PIPE_TP_CASES:-tp:gpipe tp:1f1b dp:1f1b plan:1f1b dp,tp:1f1b:dp=2,tp=2}; do
  IFS=: read -r st SC mesh <<<"$c"
  d="$T/tr-$st-$SC"
  name="pp=2 x $st=2" gpus=4 meshopt=() strat=(--strategy "$st")
  [ "$st" = plan ] && strat=()
  if [ -n "$mesh" ]; then
    name="pp=2 x ${mesh//,/ x }" gpus=8 meshopt=(--mesh "$mesh")
  fi
  if ! timeout 600 "$BUILD/galvc" "$m" --batch 8 --seq 8 --train --pipeline-stages 2 --microbatches 2 --schedule "$SC" \
      --gpus "$gpus" "${meshopt[@]}" "${strat[@]}" --target cpu -q -o "$d/" 2>"$T/err"; then
    bad "$name $SC training: galvc: $(head -3 "$T/err")"
    continue
  fi
  if ! stage_ranks "$d/launch" $((gpus / 2)) $((gpus / 2)); then
    bad "$name $SC training: launch is not -np $((gpus / 2)) per stage"
    continue
  fi
  # the stage's entries together (program.c, and program_bwd.c with a stash): the forward entry's one collective over
  # dp was the all-gather of the value it sends, which is kept split over dp now (docs/pipeline.md, "Cross-mesh
  # transfers"); its backward entry communicates over dp
  if [ -n "$mesh" ] && ! { grep -q 'galv_comm_group([a-z]*, 2, 0x1u)' "$d"/stage0/program*.c &&
      grep -q 'galv_comm_group([a-z]*, 2, 0x2u)' "$d"/stage0/program*.c && grep -q param_starts "$d/stage0/pipe_stage.c"; }; then
    bad "$name $SC training: stage 0 does not communicate over both mesh axes with split parameters"
    continue
  fi
  run_train "$d" "$name $SC training" "$gpus"
done
# Megatron's scatter / gather (docs/pipeline.md, "Cross-mesh transfers"): the same pp=2 x dp=2 x tp=2 with 4 devices per
# node, so each stage is a node and its messages cross nodes: the 2 tp ranks holding a dp block each send half of it
# and the receivers gather it in place; the run equals the single device, each rank sends half the bytes it sends
# with GALV_PIPE_SCATTER=off (its whole block), the communicator's count = the plan's (pipe_xfer.c checks it)
for sc in on off; do
  d="$T/sg-$sc"
  if ! GALV_PIPE_SCATTER=$sc timeout 600 "$BUILD/galvc" "$m" --batch 8 --seq 8 --train --pipeline-stages 2 --microbatches 2 \
      --schedule 1f1b --gpus 8 --gpus-per-node 4 --mesh dp=2,tp=2 --strategy dp,tp --target cpu -q -o "$d/" 2>"$T/err"; then
    bad "scatter $sc: galvc: $(head -3 "$T/err")"
    continue
  fi
  run_train "$d" "pp=2 x dp=2 x tp=2 across nodes, scatter $sc" 8
done
# rank 0's forward bytes and its count of scattered values, on and off
sent() { sed -n 's/.*stage 0, rank 0,.*cross-stage forward bytes sent by this rank: \([0-9]*\) measured, \([0-9]*\) planned.*scattered over the ranks of a block \([0-9]*\)$/\1 \2 \3/p' "$1"; }
read -r m_on p_on n_on <<<"$(sent "$T/sg-on.log")"
read -r m_off p_off n_off <<<"$(sent "$T/sg-off.log")"
if [ -n "${m_on:-}" ] && [ -n "${m_off:-}" ] && [ "$n_on" -ge 1 ] && [ "$n_off" = 0 ] && [ "$m_on" = "$p_on" ] &&
    [ $((2 * m_on)) = "$m_off" ]; then
  ok "scatter: rank 0 sends $m_on forward bytes ($n_on value scattered) against $m_off with GALV_PIPE_SCATTER=off"
else
  bad "scatter: rank 0 forward bytes on '${m_on:-} ${p_on:-} ${n_on:-}', off '${m_off:-} ${p_off:-} ${n_off:-}'"
fi
# bad input: one error line
if timeout 120 "$BUILD/galvc" "$T/gpt2.onnx" --batch 8 --seq 16 --pipeline-stages 2 --gpus 3 --strategy tp --target cpu -q \
    -o "$T/bad/" >/dev/null 2>"$T/err"; then
  bad "--gpus 3 with 2 stages: succeeded"
elif [ "$(wc -l <"$T/err")" = 1 ] && grep -q "divide evenly" "$T/err"; then
  ok "--gpus 3 with 2 stages: $(cat "$T/err")"
else
  bad "--gpus 3 with 2 stages: $(head -3 "$T/err")"
fi
if timeout 120 "$BUILD/galvc" "$T/gpt2.onnx" --batch 8 --seq 16 --pipeline-stages auto --gpus 4 --strategy tp --target cpu -q \
    -o "$T/bad/" >/dev/null 2>"$T/err"; then
  bad "--pipeline-stages auto with --strategy: succeeded"
elif [ "$(wc -l <"$T/err")" = 1 ] && grep -q "drop --strategy" "$T/err"; then
  ok "--pipeline-stages auto with --strategy: $(cat "$T/err")"
else
  bad "--pipeline-stages auto with --strategy: $(head -3 "$T/err")"
fi
echo "pipeline_tp: $pass passed, $fail failed"
[ "$fail" = 0 ]
