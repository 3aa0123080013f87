#!/usr/bin/env bash
# Fused attention in 16-bit training (docs/fused-attention.md, "16-bit
# storage"): the tiny GPT-2 and Llama (tests/lib/tiny_lms.sh) compiled with
# galvc --train --target cpu --precision bf16 (GPT-2 also fp16) with
# --fused-attention on (the program calls galv_attention_bf16 / _f16 and
# their _grad once per layer each: q, k, v, o, do and the gradients stored
# 16-bit, lse fp32) and off (the chains, their scores and probabilities
# stored 16-bit), 3 AdamW steps on 1 rank and on 2 ranks (bf16: GPT-2 dp,
# Llama tp). Fused = unfused within docs/cpu-target.md's 16-bit training
# bounds: every step's loss within 1e-3 (bf16) / 2e-4 (fp16) of the unfused
# 16-bit program's and of the unfused fp32 program's; every final parameter
# within 2 x lr x steps of the unfused 16-bit program's (AdamW moves an
# element whose gradient is within rounding of zero by +-lr a step either
# way, docs/cpu-target.md). The memory line's activations kept for
# backward shrink by exactly one batch x heads x S x S 16-bit tensor per
# layer (the probabilities) less the fused op's o (16-bit) and lse (fp32).
# A bf16 2-stage pipeline (GPT-2) fuses in its stage programs and equals
# the unfused single device within the same bounds. --fused-attention auto
# fuses under bf16 on --target cpu.
# Usage: fused_attention_16.sh BUILD_DIR
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh" # MPI or skip; MPIRUN (as root, oversubscribed: the pipeline's launch takes it whole); ok / bad
. "$SRC/tests/lib/fused_attn.sh" # the models, batches, fa_train
B=4 S=16 H=4 DV=8 L=2 STEPS=3 LR=1e-3
fa_models
# compare REF DIR LOSS_BOUND [WEIGHT_BOUND]: DIR's losses within LOSS_BOUND of REF's, its weights within WEIGHT_BOUND
compare() {
  python3 - "$@" <<'PY'
import sys, glob, os, re, numpy as np
a, b, lb_, wb = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]) if len(sys.argv) > 4 else None
la = [float(x) for x in re.findall(r"^step \d+ loss (\S+)", open(a + "/log").read(), re.M)]
lb = [float(x) for x in re.findall(r"^step \d+ loss (\S+)", open(b + "/log").read(), re.M)]
bad = []
dl = max((abs(x - y) for x, y in zip(la, lb)), default=float("inf"))
if len(la) != 3 or len(lb) != 3 or not dl <= lb_:
    bad.append(f"losses {lb} vs {la}")
worst, n = 0.0, 0
for f in sorted(glob.glob(f"{a}/w/*.npy")) if wb is not None else []:
    g = f"{b}/w/{os.path.basename(f)}"
    if not os.path.exists(g):
        bad.append(f"{os.path.basename(f)} missing")
        continue
    x, y = np.load(f).astype(np.float64), np.load(g).astype(np.float64)
    n += 1
    e = float(np.abs(x - y).max()) if x.shape == y.shape else float("inf")
    worst = max(worst, e)
    if not e <= wb:
        bad.append(f"{os.path.basename(f)} differs by {e:.2g}")
if wb is not None and n == 0:
    bad.append("no weights")
w = f", {n} weights within {wb:g} (max abs {worst:.1e})" if wb is not None else ""
print("; ".join(bad[:4]) if bad else f"max |dloss| {dl:.1e} (<= {lb_:g}){w}")
sys.exit(1 if bad else 0)
PY
}
wb=$(python3 -c "print(2 * $LR * $STEPS)")
for fam in gpt2 llama; do
  fa_batches $fam || continue
  common=("$T/$fam.onnx" --batch $B --seq $S --train --eps 1e-6 --target cpu)
  precs=(fp32 bf16 fp16)
  [ $fam = llama ] && precs=(fp32 bf16)
  for p in "${precs[@]}"; do
    modes=(off on)
    [ $p = fp32 ] && modes=(off) # the fp32 reference (fused fp32: tests/fused_attention.sh)
    for mode in "${modes[@]}"; do
      fa_train "$fam $p --fused-attention $mode" "$T/$fam-$p-$mode" $fam --precision $p --fused-attention $mode || continue 3
    done
    [ $p = fp32 ] && continue
    k=${p/fp16/f16} bound=1e-3
    [ $p = fp16 ] && bound=2e-4
    nf=$(grep -c "galv_attention_$k(" "$T/$fam-$p-on/program.c") ng=$(grep -c "galv_attention_grad_$k(" "$T/$fam-$p-on/program.c")
    nu=$(grep -c 'galv_attention' "$T/$fam-$p-off/program.c")
    if [ "$nf" = $L ] && [ "$ng" = $L ] && [ "$nu" = 0 ]; then
      ok "$fam $p: fused program calls galv_attention_$k / _grad_$k $nf / $ng times, the unfused one never"
    else
      bad "$fam $p: attention calls fused $nf / $ng, unfused $nu (expected $L / $L, 0)"
    fi
    if r=$(compare "$T/$fam-$p-off" "$T/$fam-$p-on" $bound "$wb"); then ok "$fam $p 1 rank fused == unfused $p: $r"; else bad "$fam $p 1 rank fused vs unfused $p: $r"; fi
    if r=$(compare "$T/$fam-fp32-off" "$T/$fam-$p-on" $bound); then ok "$fam $p 1 rank fused == unfused fp32: $r"; else bad "$fam $p 1 rank fused vs unfused fp32: $r"; fi
    # one B x H x S x S 16-bit tensor per layer less o (B x H x S x Dv, 16-bit) and lse (B x H x S, fp32)
    a0=$(fa_act "$T/$fam-$p-off.err") a1=$(fa_act "$T/$fam-$p-on.err") ss=$((L * B * H * S * (2 * S - 2 * DV - 4)))
    if [ -n "$a0" ] && [ -n "$a1" ] && [ $((a0 - a1)) -eq $ss ]; then
      ok "$fam $p: activations kept for backward $a0 -> $a1 bytes ($ss fewer)"
    else
      bad "$fam $p: activations kept for backward unfused '$a0' fused '$a1' (expected $ss fewer)"
    fi
  done
  s=dp
  [ $fam = llama ] && s=tp
  d="$T/$fam-2-$s"
  if ! "$BUILD/galvc" "${common[@]}" --precision bf16 --gpus 2 --strategy $s --fused-attention on -q -o "$d/" 2>"$T/err"; then
    bad "$fam bf16 2 ranks $s: galvc: $(grep -m3 error "$T/err")"
    continue
  fi
  n2=$(grep -c 'galv_attention_grad_bf16(' "$d/program.c" 2>/dev/null)
  if ! timeout 300 "$d/launch" --batches "$T/$fam.b" --steps $STEPS -o "$d/w" >"$d/log" 2>"$T/err"; then
    bad "$fam bf16 2 ranks $s: run: $(grep -m2 error "$T/err")"
    continue
  fi
  if [ "$n2" = $L ] && r=$(compare "$T/$fam-bf16-off" "$d" 1e-3 "$wb"); then
    ok "$fam bf16 2 ranks $s fused == 1 rank unfused bf16: $r"
  else
    bad "$fam bf16 2 ranks $s fused ($n2 attention_grad calls) vs 1 rank unfused bf16: $r"
  fi
done
# a bf16 pipeline (2 stages x 2 microbatches, 1F1B): the stage programs call the 16-bit kernels (stage 0 in its
# forward and backward entries) and equal the single-device unfused bf16 program within the same bounds
d="$T/pp"
if ! "$BUILD/galvc" "$T/gpt2.onnx" --batch $B --seq $S --train --eps 1e-6 --target cpu --precision bf16 --pipeline-stages 2 \
  --microbatches 2 --fused-attention on -q -o "$d/" 2>"$T/err"; then
  bad "bf16 pp=2: galvc: $(grep -m3 error "$T/err")"
elif ! timeout 300 "$d/launch" --batches "$T/gpt2.b" --steps $STEPS -o "$d/w" >"$d/log" 2>"$T/err"; then
  bad "bf16 pp=2: run: $(grep -m2 error "$T/err")"
else
  n=$(cat "$d"/stage*/program*.c | grep -c 'galv_attention_\(grad_\)\?bf16(')
  if [ "$n" = 4 ] && r=$(compare "$T/gpt2-bf16-off" "$d" 1e-3 "$wb"); then
    ok "gpt2 bf16 pp=2 fused ($n kernel calls) == 1 rank unfused bf16: $r"
  else
    bad "gpt2 bf16 pp=2 fused ($n kernel calls, expected 4) vs 1 rank unfused bf16: $r"
  fi
fi
if "$BUILD/galvc" "$T/gpt2.onnx" --batch $B --seq $S --train --target cpu --precision bf16 --fused-attention auto -q -o "$T/auto/" \
  --no-build 2>"$T/err" && [ "$(grep -c 'galv_attention_bf16(' "$T/auto/program.c")" = $L ]; then
  ok "--fused-attention auto fuses under --precision bf16 on --target cpu"
else
  bad "--fused-attention auto with bf16: $(head -2 "$T/err")"
fi
echo "fused_attention_16: $pass passed, $fail failed"
[ $fail = 0 ]
