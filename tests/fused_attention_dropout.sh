#!/usr/bin/env bash
# Fused attention with attention dropout (docs/fused-attention.md): the tiny
# GPT-2 of examples/make_model.py with --dropout 0.1 (training-mode Dropout
# on the attention probabilities and both residual branches) compiled with
# galvc --train --target cpu, --fused-attention on (the probabilities'
# galv.dropout taken into galv.attention / attention_grad, whose kernels
# recompute the mask per score) and off (the chain dot -> where -> softmax
# -> dropout -> dot), 3 AdamW steps:
#   - the fused program calls galv_attention_f32 / _grad_f32 once per layer
#     each with the dropout in the descriptor and 4 galv_dropout_f32 calls
#     fewer (the attention dropouts' forward and gradient in 2 layers);
#   - fused == unfused on one rank: losses of each step and every final
#     parameter (rtol 1e-4, atol 1e-5), the mask being galv.dropout's for
#     every score; and the losses differ from the --dropout 0 model's (the
#     dropout is in effect);
#   - on 2 ranks, dp (the scores split on the batch: the kernels get this
#     rank's shard offsets) and tp, and with 2 accumulated microbatches
#     (--microbatches 2: the microbatch's rows) and in 2 pipeline stages x
#     2 microbatches (the pipeline microbatch), fused == the one-rank
#     unfused run (same tolerance);
#   - galv-eval (the reference evaluator, double) fused == unfused over 2
#     steps, every returned tensor within rtol 1e-4;
#   - bf16 storage: the CPU target's bf16 kernels with dropout, losses
#     within 1e-3 of the unfused bf16 program (docs/cpu-target.md's bound).
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh" # MPI or skip; ok / bad
B=4 S=16 L=2 STEPS=3
for p in 0.1 0; do
  python3 "$SRC/examples/make_model.py" gpt2 -o "$T/gpt2-$p.onnx" --layers $L --hidden 32 --heads 4 --vocab 64 --dropout $p \
    --no-verify >/dev/null || { echo "FAIL make_model --dropout $p"; exit 1; }
done
python3 - "$SRC" "$T/gpt2-0.1.onnx" "$T/b" $B $S $STEPS 2>"$T/err" <<'PY' || { echo "FAIL batches: $(tail -1 "$T/err")"; exit 1; }
import sys, os, onnx, numpy as np
sys.path.insert(0, sys.argv[1] + "/tests")
from model_inputs import make_inputs
m = onnx.load(sys.argv[2], load_external_data=False)
B, S, n = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
os.makedirs(sys.argv[3])
steps = [make_inputs(m, B, S, seed=k) for k in range(n)]
for name in steps[0]:
    np.save(f"{sys.argv[3]}/{name.replace('/', '_')}.npy", np.stack([s[name] for s in steps]))
np.save(f"{sys.argv[3]}/labels.npy", np.random.RandomState(5).randint(0, 64, size=[n, B, S]).astype(np.int64))
PY
# compare REF DIR [LOSS_RTOL]: losses and weights of DIR equal REF's (rtol 1e-4, atol 1e-5; with LOSS_RTOL only the losses)
compare() {
  python3 - "$@" <<'PY'
import sys, glob, os, re, numpy as np
a, b = sys.argv[1], sys.argv[2]
only_loss = len(sys.argv) > 3
lr = float(sys.argv[3]) if only_loss else 1e-4
la = [float(x) for x in re.findall(r"^step \d+ loss (\S+)", open(a + "/log").read(), re.M)]
lb = [float(x) for x in re.findall(r"^step \d+ loss (\S+)", open(b + "/log").read(), re.M)]
bad = []
if len(la) != 3 or len(lb) != 3 or not np.allclose(lb, la, rtol=lr, atol=0 if only_loss else 1e-5):
    bad.append(f"losses {lb} vs {la}")
worst, n = 0.0, 0
for f in [] if only_loss else sorted(glob.glob(f"{a}/w/*.npy")):
    g = f"{b}/w/{os.path.basename(f)}"
    if not os.path.exists(g):
        bad.append(f"{os.path.basename(f)} missing")
        continue
    x, y = np.load(f), np.load(g)
    n += 1
    if x.shape != y.shape or not np.allclose(y, x, rtol=1e-4, atol=1e-5):
        bad.append(f"{os.path.basename(f)} differs")
    else:
        worst = max(worst, float(np.abs(x.astype(np.float64) - y).max()))
if n == 0 and not only_loss:
    bad.append("no weights")
d = max(abs(x - y) for x, y in zip(la, lb)) if len(la) == len(lb) and la else -1
print("; ".join(bad[:4]) if bad else f"losses {' '.join(f'{x:.6f}' for x in lb)} (max |dloss| {d:.1e})" +
      ("" if only_loss else f", {n} weights equal (max abs err {worst:.1e})"))
sys.exit(1 if bad else 0)
PY
}
# train NAME MODEL GALVC-ARGS...: compile into $T/NAME/, run STEPS steps (the launcher when there is one)
train() {
  local n=$1 model=$2 x=program
  shift 2
  if ! "$BUILD/galvc" "$model" --batch $B --seq $S --train --eps 1e-6 --target cpu -q "$@" -o "$T/$n/" 2>"$T/$n.err"; then
    bad "$n: galvc: $(grep -m3 error "$T/$n.err")"
    return 1
  fi
  [ -e "$T/$n/launch" ] && x=launch
  timeout 300 "$T/$n/$x" --batches "$T/b" --steps $STEPS -o "$T/$n/w" >"$T/$n/log" 2>"$T/$n.run" ||
    { bad "$n: run: $(grep -m2 . "$T/$n.run")"; return 1; }
}
M=$T/gpt2-0.1.onnx
train off "$M" --fused-attention off
train on "$M" --fused-attention on
train on0 "$T/gpt2-0.onnx" --fused-attention on
nf=$(grep -c 'galv_attention_f32(' "$T/on/program.c") ng=$(grep -c 'galv_attention_grad_f32(' "$T/on/program.c")
nd=$(grep -c '{GALV_BOOL}, 1, {4, {4, 4, 16, 16}, 0ull, [0-9]*ull, 1677722u, 0x1.1c71c8p+0f' "$T/on/program.c")
d1=$(grep -c 'galv_dropout_f32(' "$T/on/program.c") d0=$(grep -c 'galv_dropout_f32(' "$T/off/program.c")
if [ "$nf" = $L ] && [ "$ng" = $L ] && [ "$nd" = $((2 * L)) ] && [ "$d0" = 12 ] && [ "$d1" = 8 ]; then
  ok "fused program: galv_attention_f32 / _grad_f32 $nf / $ng calls, each with dropout 0.1 in its descriptor; galv_dropout_f32 $d0 -> $d1 calls"
else
  bad "fused program: attention calls $nf / $ng (want $L), with dropout $nd (want $((2 * L))), dropout calls unfused $d0 (want 12) fused $d1 (want 8)"
fi
if r=$(compare "$T/off" "$T/on"); then ok "1 rank fused == unfused with dropout: $r"; else bad "1 rank fused vs unfused: $r"; fi
if [ -s "$T/on0/log" ] && [ "$(grep '^step 0' "$T/on/log")" != "$(grep '^step 0' "$T/on0/log")" ]; then
  ok "the dropout is in effect: step 0 $(grep '^step 0' "$T/on/log" | cut -d' ' -f4) (dropout 0.1) vs $(grep '^step 0' "$T/on0/log" | cut -d' ' -f4) (0)"
else
  bad "fused losses equal the --dropout 0 model's: $(grep '^step 0' "$T/on/log") / $(grep '^step 0' "$T/on0/log")"
fi
# 2 ranks: dp splits the scores' batch dim (each rank's kernels get its shard offsets), tp the heads of the backward
for s in dp tp; do
  train "$s" "$M" --gpus 2 --strategy $s --fused-attention on || continue
  no=$(grep -c 'galv_attention\(_grad\)\?_f32(&d, .*fn, (const int64_t \*)A(' "$T/$s/program.c")
  if r=$(compare "$T/off" "$T/$s"); then
    ok "2 ranks $s fused == 1 rank unfused: $r ($no fused calls read shard offsets)"
  else bad "2 ranks $s fused vs 1 rank unfused: $r"; fi
  [ $s = dp ] && { [ "$no" = $((2 * L)) ] && ok "dp: all $no fused calls read this rank's shard offsets" || bad "dp: $no fused calls read shard offsets (want $((2 * L)))"; }
done
# gradient accumulation in one program: microbatch k's clones draw the rows it reads
train acc "$M" --microbatches 2 --fused-attention on && {
  na=$(grep -A2 'galv_fattn_desc' "$T/acc/program.c" | grep -c '{GALV_BOOL}, 1, {4, .*{2, [01], 1}, 2}};')
  if r=$(compare "$T/off" "$T/acc"); then ok "2 accumulated microbatches fused == 1 rank unfused: $r ($na fused calls draw a microbatch's rows)"
  else bad "--microbatches 2 fused vs unfused: $r"; fi
  [ "$na" = $((4 * L)) ] || bad "--microbatches 2: $na fused calls with acc = [2, k, 1] (want $((4 * L)))"
}
# a 2-stage pipeline of 2 microbatches: the stage programs' fused kernels draw the pipeline microbatch's rows
train pp "$M" --pipeline-stages 2 --microbatches 2 --fused-attention on && {
  np=$(cat "$T"/pp/stage*/program*.c | grep -c 'galv_attention\(_grad\)\?_f32(&d, .*galv_rt_step, galv_rt_mb')
  if r=$(compare "$T/off" "$T/pp"); then ok "pp=2 fused == 1 rank unfused: $r ($np fused calls in the stage programs)"
  else bad "pp=2 fused vs 1 rank unfused: $r"; fi
  [ "$np" = $((2 * L)) ] || bad "pp=2: $np fused calls in the stage programs (want $((2 * L)))"
}
# bf16 storage: the CPU bf16 kernels with dropout against the unfused bf16 program
train bf-off "$M" --precision bf16 --fused-attention off && train bf-on "$M" --precision bf16 --fused-attention on &&
  { if r=$(compare "$T/bf-off" "$T/bf-on" 2.4e-4); then ok "bf16 fused == unfused: $r"; else bad "bf16 fused vs unfused: $r"; fi; }
# the reference evaluator: galv.attention / attention_grad with dropout in double against the four-op chain
mkdir -p "$T/ev"
python3 -c "import numpy as np; r = np.random.RandomState(3)
np.save('$T/ev/ids.npy', r.randint(0, 64, size=[2, 8]).astype(np.int64)); np.save('$T/ev/lab.npy', r.randint(0, 64, size=[2, 8]).astype(np.int64))"
for mode in on off; do
  "$BUILD/galv-eval" "$M" --batch 2 --seq 8 --train --steps 2 --eps 1e-6 --fused-attention $mode -q --input input_ids="$T/ev/ids.npy" \
    --input labels="$T/ev/lab.npy" -o "$T/ev/$mode" >"$T/ev/$mode.log" 2>&1 || bad "galv-eval --fused-attention $mode: $(tail -1 "$T/ev/$mode.log")"
done
if r=$(python3 - "$T/ev" <<'PY'
import sys, glob, os, numpy as np
d = sys.argv[1]
fs = sorted(glob.glob(d + "/on/*.npy"))
bad = [os.path.basename(f) for f in fs if not np.allclose(np.load(f), np.load(f.replace("/on/", "/off/")), rtol=1e-4, atol=1e-6)]
w = max((float(np.abs(np.load(f).astype(np.float64) - np.load(f.replace("/on/", "/off/"))).max()) for f in fs), default=-1)
print(f"{len(fs)} tensors, loss {float(np.load(d + '/on/loss.npy')):.6f}, max abs diff {w:.1e}" if fs and not bad else f"differ: {bad[:4]} of {len(fs)}")
sys.exit(1 if bad or not fs else 0)
PY
); then ok "galv-eval fused == unfused with dropout: $r"; else bad "galv-eval fused vs unfused: $r"; fi
echo "fused_attention_dropout: $pass passed, $fail failed"
[ $fail = 0 ]
