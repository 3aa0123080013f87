#!/usr/bin/env bash
# Values read past the next stage, relayed (docs/pipeline.md, "Values read
# past the next stage: relayed"). A model whose first product h0 is read by
# the last layer (y = (tanh(tanh(tanh(h0 W1) W2) W3) + h0) W4, h0 = x W0:
# a residual around three layers), cut into one stage per layer group
# (--layers K --stage-cuts equal): in training h0 skips the stages between,
# so each of them receives it from the stage before and sends it on as is
# (the stage tables name it as an input from s - 1 and an output to s + 1,
# and no transfer is between stages further apart), its gradient coming back
# the same way (with no --layers too: the default group count, once one
# more than the ops cluster-layers groups). Then 2 training steps on the stages' ranks = the single
# device (tests/lib/same_training.py: losses rtol 1e-4, weights rtol 1e-4 /
# atol 1e-5) under every schedule (with two data-parallel ranks per stage
# the last stage returns both gradients, of h0 and of the value before it,
# from one fused chain, each its rows: the second once lost its split and
# the runtime refused the transfer): 1F1B and ZB-H1 (whose grouped transfers
# could deadlock on a send past the next stage, so such cuts were refused
# before), GPipe, interleaved 1F1B (8 chunks on 4 device groups), 1F1B
# with two data-parallel ranks per stage and with --pipeline-recompute, and
# 1F1B on the CUDA target (emulated: make emu);
# under synchronous sends (tests/lib/mpi_env.sh), so an order that could
# deadlock times out. Inference sends h0 directly to the stage reading it
# (no gradient comes back): its tables say so and its outputs = one device.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
. "$SRC/tests/lib/rank_compare.sh"
export CFLAGS=-O0
python3 - "$T" <<'PY' || { echo "FAIL model"; exit 1; }
import numpy as np, onnx, os, sys
from onnx import helper as h, TensorProto as T, numpy_helper as nh
t = sys.argv[1]
r = np.random.RandomState(0)
D = 16
W = [nh.from_array((r.randn(D, D) * 0.3).astype(np.float32), f"w{i}") for i in range(5)]
n = [h.make_node("MatMul", ["x", "w0"], ["h0"])]
prev = "h0"
for i in (1, 2, 3):
    n += [h.make_node("MatMul", [prev, f"w{i}"], [f"a{i}"]), h.make_node("Tanh", [f"a{i}"], [f"h{i}"])]
    prev = f"h{i}"
n += [h.make_node("Add", ["h3", "h0"], ["s0"]), h.make_node("Constant", [], ["c"], value=nh.from_array(np.float32(0.5))),
      h.make_node("Mul", ["s0", "c"], ["s"]), h.make_node("MatMul", ["s", "w4"], ["y"])]
g = h.make_graph(n, "skip", [h.make_tensor_value_info("x", T.FLOAT, ["batch", D])],
                 [h.make_tensor_value_info("y", T.FLOAT, ["batch", D])], W)
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), f"{t}/skip.onnx")
os.makedirs(f"{t}/b")
np.save(f"{t}/b/x.npy", r.randn(2, 8, D).astype(np.float32))
np.save(f"{t}/b/labels.npy", r.randint(0, D, (2, 8)).astype(np.int64))
np.save(f"{t}/x.npy", r.randn(8, D).astype(np.float32))
PY
M="$T/skip.onnx"
single_program "$T/one" "$M" "--batches $T/b --steps 2" --batch 8 --train
single_program "$T/inf" "$M" "--input x=$T/x.npy" --batch 8

# tables DIR S: per stage "s: in NAME<-PEER ... out NAME->MASK ..." from the stage tables
tables() {
  local s
  for ((s = 0; s < $2; s++)); do
    echo "$s: $(sed -n '/galv_pipe_in\[\]/,/galv_pipe_nout/p' "$1/stage$s/pipe_stage.c" | sed -n 's/.*{"\([^"]*\)", \([-0-9]*\), \([0-9a-fx]*\)ull}.*/out \1->\3/p; s/.*{"\([^"]*\)", \([0-9]*\), 0}.*/in \1<-\2/p' | tr '\n' ' ')"
  done
}
# far DIR S: the transfers (values and gradients) between stages further apart than neighbours
far() {
  local s
  for ((s = 0; s < $2; s++)); do
    sed -n '/galv_pipe_xfers\[\]/,/{0}/p' "$1/stage$s/pipe_stage.c" | grep '{"pp' |
      awk -F'[ ,{}"]+' '{d = $4 - $5; if (d < -1 || d > 1) print $2 " " $4 "->" $5}'
  done
}

case_() { # NAME STAGES(tables) GALVC-ARGS..
  local name=$1 S=$2 d="$T/$1"
  shift 2
  if ! timeout 300 "$BUILD/galvc" "$M" --batch 8 --train --stage-cuts equal --target cpu -q -o "$d/" "$@" 2>"$T/err" </dev/null; then
    bad "$name: galvc $*: $(head -2 "$T/err")"
    return
  fi
  local tb fr relays
  tb=$(tables "$d" "$S") fr=$(far "$d" "$S")
  # relaying stages: a name both received and sent on
  relays=$(while read -r line; do
    for v in $(grep -o 'in [^<]*' <<<"$line" | cut -c4-); do grep -q "out $v->" <<<"$line" && echo "stage ${line%%:*} relays $v"; done
  done <<<"$tb" | paste -sd, -)
  if [ -n "$fr" ] || [ -z "$relays" ]; then
    bad "$name: transfers past the next stage [$fr], relays [$relays]: $tb"
    return
  fi
  if ! timeout 120 "$d/launch" --batches "$T/b" --steps 2 -o "$d.w" </dev/null >"$d.log" 2>"$T/err"; then
    bad "$name: run: $(grep -m2 -i error "$T/err" "$d.log")"
    return
  fi
  local r
  if r=$(same_training "$T/one.log" "$d.log" "$T/one.w" "$d.w"); then ok "$name ($relays): 2 steps = one device: $r"
  else bad "$name vs one device: $r"; fi
}
case_ 1f1b 4 --layers 4 --pipeline-stages 4 --microbatches 4 --schedule 1f1b
case_ zb-h1 4 --layers 4 --pipeline-stages 4 --microbatches 4 --schedule zb-h1
case_ gpipe 4 --layers 4 --pipeline-stages 4 --microbatches 4 --schedule gpipe
case_ interleaved 8 --layers 8 --pipeline-stages 4 --virtual-stages 2 --microbatches 4 --schedule interleaved
case_ 1f1b-dp2 4 --layers 4 --pipeline-stages 4 --microbatches 4 --schedule 1f1b --gpus 8 --strategy dp
case_ 1f1b-recompute 4 --layers 4 --pipeline-stages 4 --microbatches 4 --schedule 1f1b --pipeline-recompute
# no --layers: 4 S groups at most, and at most the ops cluster-layers groups (the constant is none: counted once, the
# default asked for more groups than there are and failed "--layers 11: more groups than the 10 ops")
case_ default-groups 4 --pipeline-stages 4 --microbatches 4 --schedule 1f1b

# the CUDA target (make emu: program.cu over the CPU execution of runtime/cuda, tests/cuda_emu_pipe_dp.sh's way): the
# relays under 1F1B train = the single device too
d="$T/cuda"
if command -v g++ >/dev/null && timeout 300 "$BUILD/galvc" "$M" --batch 8 --train --stage-cuts equal --layers 4 --pipeline-stages 4 \
  --microbatches 4 --schedule 1f1b --target cuda --no-build -q -o "$d/" </dev/null >/dev/null 2>"$T/err"; then
  built=1
  for s in 0 1 2 3; do nice make -s -C "$d/stage$s" emu >"$T/make$s" 2>&1 || { built=0; bad "cuda: make emu stage $s: $(tail -3 "$T/make$s")"; }; done
  if [ $built = 1 ]; then
    if ! GALV_PROGRAM=program-emu timeout 300 "$d/launch" --batches "$T/b" --steps 2 -o "$d.w" </dev/null >"$d.log" 2>"$T/err"; then
      bad "cuda (emulated): run: $(grep -m2 -i error "$T/err" "$d.log")"
    elif r=$(same_training "$T/one.log" "$d.log" "$T/one.w" "$d.w"); then ok "cuda target (emulated), 1f1b with relays: $r"
    else bad "cuda (emulated) vs one device: $r"; fi
  fi
elif command -v g++ >/dev/null; then bad "cuda: galvc: $(head -2 "$T/err")"; fi

# inference: the skipping value goes straight to the stage reading it
d="$T/pinf"
if timeout 300 "$BUILD/galvc" "$M" --batch 8 --layers 4 --pipeline-stages 4 --stage-cuts equal --target cpu -q -o "$d/" \
  2>"$T/err" </dev/null; then
  fr=$(far "$d" 4)
  if [ -z "$fr" ]; then bad "inference: no transfer past the next stage: $(tables "$d" 4)"
  elif ! timeout 120 "$d/launch" --input x="$T/x.npy" -o "$d/res" </dev/null >/dev/null 2>"$T/err"; then
    bad "inference run: $(grep -m2 -i error "$T/err")"
  elif r=$(same_outputs "$T/inf/res" "$d/res"); then ok "inference sends $(echo $fr) directly: $r"
  else bad "inference vs one device: $r"; fi
else bad "inference: galvc: $(head -2 "$T/err")"; fi
echo "pipeline_relay: $pass passed, $fail failed"
[ "$fail" = 0 ]
