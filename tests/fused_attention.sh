#!/usr/bin/env bash
# Fused attention in training (docs/fused-attention.md): the tiny GPT-2 and
# Llama (tests/lib/tiny_lms.sh) compiled with galvc --train --target cpu,
# --fused-attention on (galv.attention / attention_grad: the program calls
# galv_attention_f32 and galv_attention_grad_f32 once per layer each) and
# off (the four-op chains), train 3 steps (AdamW) on 1 rank and on 2 ranks
# (GPT-2 dp, tp and tp,sp, Llama tp; under tp,sp the core stays head-split
# over the whole sequence, the collectives those of the unfused program);
# the losses of each step and every final parameter of a fused
# run equal the unfused single-device run's (rtol 1e-4, atol 1e-5). The
# memory line's activations kept for backward shrink by exactly one batch x
# heads x S x S f32 tensor per layer (the probabilities) less the fused
# op's own o and lse, which the backward now reads; a 2-stage pipeline
# fuses in its stage programs and equals the unfused pipeline and the
# single device. auto, the default of galvc and galv-eval, fuses on the CPU
# target in fp32 and 16-bit storage and leaves the chains on --target cuda
# (its plain kernels run with on); --fused-attention with a bad value is one
# error line.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh" # MPI or skip; MPIRUN (as root, oversubscribed: the pipeline's launch takes it whole); ok / bad
. "$SRC/tests/lib/fused_attn.sh" # the models, batches, fa_train
B=4 S=16 H=4 DV=8 L=2 STEPS=3
fa_models
# compare REF DIR: losses and weights of DIR equal REF's
compare() {
  python3 - "$1" "$2" <<'PY'
import sys, glob, os, re, numpy as np
a, b = sys.argv[1], sys.argv[2]
la = [float(x) for x in re.findall(r"^step \d+ loss (\S+)", open(a + "/log").read(), re.M)]
lb = [float(x) for x in re.findall(r"^step \d+ loss (\S+)", open(b + "/log").read(), re.M)]
bad = []
if len(la) != 3 or len(lb) != 3 or not np.allclose(lb, la, rtol=1e-4, atol=1e-5):
    bad.append(f"losses {lb} vs {la}")
worst, n = 0.0, 0
for f in sorted(glob.glob(f"{a}/w/*.npy")):
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
if n == 0:
    bad.append("no weights")
print("; ".join(bad[:4]) if bad else f"losses {' '.join(f'{x:.6f}' for x in lb)}, {n} weights equal (max abs err {worst:.1e})")
sys.exit(1 if bad else 0)
PY
}
for fam in gpt2 llama; do
  fa_batches $fam || continue
  common=("$T/$fam.onnx" --batch $B --seq $S --train --eps 1e-6 --target cpu)
  for mode in off on; do
    fa_train "$fam --fused-attention $mode" "$T/$fam-$mode" $fam --fused-attention $mode || continue 2
  done
  nf=$(grep -c 'galv_attention_f32(' "$T/$fam-on/program.c"); ng=$(grep -c 'galv_attention_grad_f32(' "$T/$fam-on/program.c")
  nu=$(grep -c 'galv_attention' "$T/$fam-off/program.c")
  if [ "$nf" = $L ] && [ "$ng" = $L ] && [ "$nu" = 0 ]; then
    ok "$fam: fused program calls galv_attention_f32 / _grad_f32 $nf / $ng times, the unfused one never"
  else
    bad "$fam: attention calls fused $nf / $ng, unfused $nu (expected $L / $L, 0)"
  fi
  if r=$(compare "$T/$fam-off" "$T/$fam-on"); then ok "$fam 1 rank fused == unfused: $r"; else bad "$fam 1 rank fused vs unfused: $r"; fi
  # activations kept for backward: smaller by one B x H x S x S f32 tensor per layer (the
  # probabilities) less what the fused op keeps instead (its output, B x H x S x Dv, and lse, B x H x S)
  a0=$(fa_act "$T/$fam-off.err") a1=$(fa_act "$T/$fam-on.err") ss=$((L * B * H * S * (S - DV - 1) * 4))
  if [ -n "$a0" ] && [ -n "$a1" ] && [ $((a0 - a1)) -eq $ss ]; then
    ok "$fam: activations kept for backward $a0 -> $a1 bytes ($ss fewer: an S x S tensor per layer less o and lse)"
  else
    bad "$fam: activations kept for backward unfused '$a0' fused '$a1' (expected $ss fewer)"
  fi
  strategies=(dp tp tp,sp)
  [ $fam = llama ] && strategies=(tp) # GPT-2 all three; Llama the head split (GQA's repeated K / V)
  for s in "${strategies[@]}"; do
    d="$T/$fam-2-$s"
    if ! "$BUILD/galvc" "${common[@]}" --gpus 2 --strategy $s --fused-attention on -q -o "$d/" 2>"$T/err"; then
      bad "$fam 2 ranks $s: galvc: $(grep -m3 error "$T/err")"
      continue
    fi
    n2=$(grep -c 'galv_attention_grad_f32(' "$d/program.c" 2>/dev/null)
    if [ $s = tp,sp ]; then # Megatron-SP splits the residual stream over the sequence, not the attention core
      for m in on off; do "$BUILD/galvc" "${common[@]}" --gpus 2 --strategy $s --fused-attention $m --no-build -o "$T/sp-$m/" 2>"$T/sp-$m.err"; done
      c1=$(grep -o 'spmd: [0-9]* collectives, [0-9]* bytes/device' "$T/sp-on.err")
      c0=$(grep -o 'spmd: [0-9]* collectives, [0-9]* bytes/device' "$T/sp-off.err")
      if [ -n "$c1" ] && [ "$c1" = "$c0" ]; then ok "$fam tp,sp: fused and unfused the same collectives (${c1#spmd: })"; else bad "$fam tp,sp: collectives fused '$c1' unfused '$c0'"; fi
    fi
    if ! timeout 300 "$d/launch" --batches "$T/$fam.b" --steps $STEPS -o "$d/w" >"$d/log" 2>"$T/err"; then
      bad "$fam 2 ranks $s: run: $(grep -m2 error "$T/err")"
      continue
    fi
    if [ "$n2" = $L ] && r=$(compare "$T/$fam-off" "$d"); then
      ok "$fam 2 ranks $s fused == 1 rank unfused: $r"
    else
      bad "$fam 2 ranks $s fused ($n2 attention_grad calls) vs 1 rank unfused: $r"
    fi
  done
done
# pipeline stage programs (passes/stage_extract.c runs fuse-attention before the stage's autodiff): GPT-2 in 2
# stages x 2 microbatches (1F1B) with --fused-attention on calls the fused kernels once per layer (stage 0 its
# forward entry and backward entry, stage 1 both) and equals the unfused pipeline and the one-device unfused run
# (rtol 1e-4); each earlier-stage microbatch's stash is smaller by the layer's B/2 x H x S x S probabilities less
# o and lse
for mode in off on; do
  d="$T/pp-$mode"
  if ! "$BUILD/galvc" "$T/gpt2.onnx" --batch $B --seq $S --train --eps 1e-6 --target cpu --pipeline-stages 2 --microbatches 2 \
    --fused-attention $mode -q -o "$d/" 2>"$T/err"; then
    bad "pp=2 --fused-attention $mode: galvc: $(grep -m3 error "$T/err")"
    continue
  fi
  if ! timeout 300 "$d/launch" --batches "$T/gpt2.b" --steps $STEPS -o "$d/w" >"$d/log" 2>"$d/err"; then
    bad "pp=2 --fused-attention $mode: run: $(grep -m2 error "$d/err")"
  fi
done
n0=$(cat "$T"/pp-on/stage0/program*.c 2>/dev/null | grep -c 'galv_attention_\(grad_\)\?f32(') n1=$(grep -c 'galv_attention_\(grad_\)\?f32(' "$T/pp-on/stage1/program.c")
nu=$(cat "$T"/pp-off/stage*/program*.c 2>/dev/null | grep -c 'galv_attention')
if [ "$n0" = 2 ] && [ "$n1" = 2 ] && [ "$nu" = 0 ]; then
  ok "pp=2 fused: stage 0 and stage 1 call galv_attention_f32 / _grad_f32 once each, the unfused pipeline never"
else
  bad "pp=2: fused calls stage 0 $n0, stage 1 $n1 (expected 2, 2), unfused $nu"
fi
if r=$(compare "$T/pp-off" "$T/pp-on"); then ok "pp=2 fused == pp=2 unfused: $r"; else bad "pp=2 fused vs pp=2 unfused: $r"; fi
if r=$(compare "$T/gpt2-off" "$T/pp-on"); then ok "pp=2 fused == 1 device unfused: $r"; else bad "pp=2 fused vs 1 device unfused: $r"; fi
stash() { cat "$1/log" "$1/err" | sed -n 's/.*stage 0.*saved activations in flight: .*(\([0-9]*\) microbatches x \([0-9]*\) bytes).*/\2/p' | head -1; }
s0=$(stash "$T/pp-off") s1=$(stash "$T/pp-on") ss=$((B / 2 * H * S * (S - DV - 1) * 4))
if [ -n "$s0" ] && [ -n "$s1" ] && [ $((s0 - s1)) -eq $ss ]; then
  ok "pp=2: stage 0's stash per microbatch $s0 -> $s1 bytes ($ss fewer)"
else
  bad "pp=2: stage 0's stash per microbatch unfused '$s0' fused '$s1' (expected $ss fewer)"
fi
# the reference evaluator (galv-eval: galv.attention / attention_grad in double) agrees: 2 steps of GPT-2
# fused and unfused, every returned tensor (loss, parameters, AdamW state) within rtol 1e-4 of the other's
# (AdamW eps 1e-6 as spmd_train.sh: c_attn's key bias has a gradient at float-noise level, softmax being
# shift-invariant, which torch's eps 1e-8 turns into a noise-determined step)
mkdir -p "$T/ev"
python3 -c "import numpy as np; r = np.random.RandomState(3)
np.save('$T/ev/ids.npy', r.randint(0, 64, size=[2, 8]).astype(np.int64)); np.save('$T/ev/lab.npy', r.randint(0, 64, size=[2, 8]).astype(np.int64))"
for mode in on off default; do
  fa=(--fused-attention $mode)
  [ $mode = default ] && fa=()
  "$BUILD/galv-eval" "$T/gpt2.onnx" --batch 2 --seq 8 --train --steps 2 --eps 1e-6 "${fa[@]}" -q --input input_ids="$T/ev/ids.npy" \
    --input labels="$T/ev/lab.npy" -o "$T/ev/$mode" >"$T/ev/$mode.log" 2>&1 || bad "galv-eval --fused-attention $mode: $(tail -1 "$T/ev/$mode.log")"
done
if r=$(python3 - "$T/ev" <<'PY'
import sys, glob, os, numpy as np
d = sys.argv[1]
fs = sorted(glob.glob(d + "/on/*.npy"))
bad = [os.path.basename(f) for f in fs if not np.allclose(np.load(f), np.load(f.replace("/on/", "/off/")), rtol=1e-4, atol=1e-6)]
print(f"{len(fs)} tensors, loss {float(np.load(d + '/on/loss.npy')):.6f}" if fs and not bad else f"differ: {bad[:4]} of {len(fs)}")
sys.exit(1 if bad or not fs else 0)
PY
); then ok "galv-eval fused == unfused: $r"; else bad "galv-eval fused vs unfused: $r"; fi
# galv-eval's default (auto) is the fused evaluation: the same tensors bit for bit
if r=$(python3 - "$T/ev" <<'PY'
import sys, glob, os, numpy as np
d = sys.argv[1]
fs = sorted(glob.glob(d + "/on/*.npy"))
bad = [os.path.basename(f) for f in fs if not np.array_equal(np.load(f), np.load(f.replace("/on/", "/default/")))]
print(f"{len(fs)} tensors" if fs and not bad else f"differ: {bad[:4]} of {len(fs)}")
sys.exit(1 if bad or not fs else 0)
PY
); then ok "galv-eval default == --fused-attention on: $r"; else bad "galv-eval default vs on: $r"; fi
out=$("$BUILD/galv-eval" "$T/gpt2.onnx" --train --fused-attention maybe 2>&1)
rc=$?
if [ $rc -ne 0 ] && [ "$(wc -l <<<"$out")" = 1 ] && grep -q -- "--fused-attention maybe: expected on, off or auto" <<<"$out"; then
  ok "galv-eval --fused-attention maybe: one error line, rc $rc"
else
  bad "galv-eval --fused-attention maybe: rc $rc: $out"
fi
# auto fuses on the CPU target (gpt2's program above with --fused-attention auto: the same calls)
if "$BUILD/galvc" "$T/gpt2.onnx" --batch $B --seq $S --train --target cpu --fused-attention auto -q -o "$T/auto/" --no-build 2>"$T/err" &&
  [ "$(grep -c 'galv_attention_f32(' "$T/auto/program.c")" = $L ]; then
  ok "--fused-attention auto fuses on --target cpu"
else
  bad "--fused-attention auto: $(head -2 "$T/err")"
fi
# the default is auto: fused on the CPU target in fp32 and bf16; the chains on --target cuda
nattn() { "$BUILD/galvc" "$T/gpt2.onnx" --batch $B --seq $S --train "$@" --emit=ir -o "$T/n.mlir" 2>"$T/err" </dev/null &&
  grep -c '"galv.attention"' "$T/n.mlir"; }
n_cpu=$(nattn --target cpu) n_cuda=$(nattn --target cuda) n_bf16=$(nattn --target cpu --precision bf16)
if [ "$n_cpu" = $L ] && [ "$n_cuda" = 0 ] && [ "$n_bf16" = $L ]; then
  ok "default (auto): galv.attention cpu fp32 $n_cpu, cuda $n_cuda, cpu bf16 $n_bf16"
else
  bad "default (auto): galv.attention cpu fp32 '$n_cpu' (want $L), cuda '$n_cuda' (want 0), cpu bf16 '$n_bf16' (want $L): $(head -2 "$T/err")"
fi
"$BUILD/galvc" "$T/gpt2.onnx" --batch $B --seq $S --train --target cpu --precision bf16 --fused-attention on -o "$T/x/" >"$T/err" 2>&1
rc=$?
if [ $rc -eq 0 ] && [ "$(grep -c 'galv_attention_bf16(' "$T/x/program.c")" = $L ]; then
  ok "--fused-attention on --precision bf16: the CPU target's bf16 kernel, $L calls"
else
  bad "--fused-attention on --precision bf16: rc $rc: $(head -2 "$T/err")"
fi
out=$("$BUILD/galvc" "$T/gpt2.onnx" --train --fused-attention maybe 2>&1)
rc=$?
if [ $rc -ne 0 ] && [ "$(wc -l <<<"$out")" = 1 ] && grep -q -- "--fused-attention maybe: expected on, off or auto" <<<"$out"; then
  ok "--fused-attention maybe: one error line, rc $rc"
else
  bad "--fused-attention maybe: rc $rc: $out"
fi
echo "fused_attention: $pass passed, $fail failed"
[ $fail = 0 ]
