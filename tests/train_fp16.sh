#!/usr/bin/env bash
# fp16 training with loss scaling on the CPU target (--precision fp16
# --train; --loss-scale dynamic by default, docs/cpu-target.md "Loss
# scaling"). Tiny GPT-2 and Llama (2 layers, hidden 64, vocab 64), batch 2 x
# seq 16, AdamW lr 1e-3.
# (1) 3 steps, dynamic scale (65536, no overflow): losses within 2e-4 of the
#     fp32 program (measured GPT-2 2.9e-5, Llama 3.0e-5); the measured arena
#     high-water equals the plan's; a static --loss-scale 1024 alike.
# (2) A forced overflow: --loss-scale-init 2^40 (the fp16 activation
#     gradients overflow up to 2^21), --loss-scale-interval 3, 30 steps. Each
#     line's scale and skip follow torch's GradScaler update rule (an
#     independent transcription here: backoff on overflow, growth after 3 good
#     steps); the first 20 steps are skipped with the scale halving each time,
#     the parameters after them equal the initial ones bit for bit; then
#     training proceeds (at least one growth, and the growth to 2^21 skipped
#     again), and every line from step 20 on equals a fresh run with
#     --loss-scale-init 2^20 (skipped steps leave parameters, AdamW's moments
#     and its step count unchanged). A checkpoint after 10 steps, loaded,
#     continues with the same lines.
# (3) The same on 2 ranks, dp and zero: the same skip decisions and scales
#     as one device, losses within 1e-3, the communicator's bytes (the
#     overflow count's all-reduce under zero included) equal to the global
#     program's prediction.
# (4) --microbatches 2 and --clip-grad-norm 0.5 with fp16: within 2e-4 of
#     the fp32 program with the same option.
# (5) --reduce-dtype on 2 ranks (dp: the all-reduce, zero: the
#     reduce-scatter of the gradients): fp16 with --reduce-dtype fp16 moves
#     about half the bytes of its default (fp32 gradients: dp 420872 ->
#     216072, zero 208384 -> 105984 bytes per step), bf16 with --grad-dtype
#     bf16 and --reduce-dtype fp32 about twice (210440 -> 415240, 104192 ->
#     206592); counted = predicted; losses within 1e-3 of fp32.
# (7) Pipelines (the stages' runtime does the loss scaling: the last stage's
#     seed is the scale x the microbatch's share of the loss, an inf / NaN in
#     any rank's gradient sums skips the step on every rank of every stage):
#     pp=2 (2 microbatches) and pp=2 x tp=2 (4 ranks) with the overflow run
#     of (2): the same 30 scale / skip decisions as one device accumulating
#     the same 2 microbatches (--microbatches 2; the full batch at once
#     rounds differently and, at the edge of the range, overflows once where
#     the microbatches do not), losses within 1e-3 of it; pp=2 without
#     overflow within 2e-4 of the fp32 one device. Checkpoints keep the
#     scale, the good-step count and the skipped steps: pp=2, 21 steps +
#     checkpoint + 9 steps = 30 steps, every line and weight bit for bit;
#     the checkpoint loads into one device and the reverse with the same
#     decisions; an fp32 pipeline's checkpoint: one error line.
# (6) The CUDA program under the execution layer (make emu; skipped without a
#     C++ compiler): bf16 (fp16 on the CUDA target: tests/cuda_emu_fp16.sh)
#     with --loss-scale-init 1e38 --loss-scale-interval 1: the
#     same per-step lines as the CPU program (the scale grows once to 2e38,
#     then not to an infinite 4e38). No overflow step runs on this target
#     (bf16's range does not overflow here).
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
GALVC=("$BUILD/galvc" --batch 2 --seq 16 --target cpu --train)
python3 -c "
import numpy as np, os
r = np.random.RandomState(5)
os.makedirs('$T/b')
np.save('$T/b/input_ids.npy', r.randint(0, 64, (2, 16)).astype(np.int64))
np.save('$T/b/labels.npy', r.randint(0, 64, (2, 16)).astype(np.int64))"
compile() {
  local d=$1
  shift
  "${GALVC[@]}" "$@" -o "$T/$d/" </dev/null >"$T/$d.log" 2>&1 || { bad "$d: galvc: $(grep error "$T/$d.log" | tail -1)"; return 1; }
}
plan_ok() { ! grep "high-water" "$1" | grep -v -q "high-water \([0-9]*\) bytes (measured: [^;]*; plan: \1)"; }
# close LOG_A LOG_B BOUND: both have N >= 1 steps, losses within BOUND
close() {
  python3 - "$@" <<'PY'
import re, sys
L = lambda f: [float(x) for x in re.findall(r"^step \d+ loss (\S+)", open(f).read(), re.M)]
a, b, bound = L(sys.argv[1]), L(sys.argv[2]), float(sys.argv[3])
d = max(abs(x - y) for x, y in zip(a, b)) if a and len(a) == len(b) else float("inf")
print(f"losses {b} vs {a}: max |d| {d:.2g}")
sys.exit(0 if d <= bound else 1)
PY
}

for fam in gpt2 llama; do
  python3 "$SRC/examples/make_model.py" $fam -o "$T/$fam.onnx" --layers 2 --hidden 64 --heads 4 --vocab 64 --no-verify >/dev/null ||
    { bad "$fam: make_model"; continue; }
  M=$T/$fam.onnx
  # ---- (1)
  for c in fp32 fp16 fp16s; do
    a=(--precision ${c%s})
    [ $c = fp16s ] && a+=(--loss-scale 1024)
    compile t_${fam}_$c "$M" "${a[@]}" && "$T/t_${fam}_$c/program" --batches "$T/b" --steps 3 >"$T/r_${fam}_$c.log" 2>&1 ||
      bad "$fam $c: $(tail -1 "$T/r_${fam}_$c.log")"
  done
  for c in fp16 fp16s; do
    if out=$(close "$T/r_${fam}_fp32.log" "$T/r_${fam}_$c.log" 2e-4) && grep -q "^step 2 loss .* skipped 0$" "$T/r_${fam}_$c.log"; then
      ok "$fam train $c vs fp32: $out; $(grep '^step 2' "$T/r_${fam}_$c.log")"
    else
      bad "$fam train $c vs fp32: $out; $(grep '^step 2' "$T/r_${fam}_$c.log")"
    fi
    plan_ok "$T/r_${fam}_$c.log" || bad "$fam train $c: measured high-water differs from the plan"
  done
done

# ---- (2) forced overflow, one device
M=$T/gpt2.onnx
OV=(--precision fp16 --loss-scale-init 1099511627776 --loss-scale-interval 3)
compile ov "$M" "${OV[@]}" && compile ov20 "$M" --precision fp16 --loss-scale-init 1048576 --loss-scale-interval 3 || exit 1
"$T/ov/program" --batches "$T/b" --steps 30 >"$T/rov.log" 2>&1 || bad "overflow run: $(tail -1 "$T/rov.log")"
"$T/ov/program" --batches "$T/b" --steps 0 -o "$T/w0" >/dev/null 2>&1 || bad "overflow run: --steps 0 -o"
"$T/ov/program" --batches "$T/b" --steps 20 -o "$T/w20" >/dev/null 2>&1 || bad "overflow run: --steps 20 -o"
"$T/ov20/program" --batches "$T/b" --steps 10 >"$T/rov20.log" 2>&1 || bad "init 2^20 run: $(tail -1 "$T/rov20.log")"
"$T/ov/program" --batches "$T/b" --steps 10 --save-checkpoint "$T/c10" >"$T/rc1.log" 2>&1 &&
  "$T/ov/program" --batches "$T/b" --steps 20 --load-checkpoint "$T/c10" >"$T/rc2.log" 2>&1 || bad "overflow run: checkpoint"
# gradscaler LOG INIT GROWTH BACKOFF INTERVAL: the lines follow torch's GradScaler.update
# (torch/csrc/.../AmpKernels: found_inf -> scale *= backoff, tracker = 0; else tracker + 1,
# at the interval scale *= growth, tracker = 0), the skip flag being the overflow
cat >"$T/gs.py" <<'PY'
import re, sys
f, init, growth, backoff, interval = sys.argv[1], *map(float, sys.argv[2:6])
rows = [(int(k), float(l), float(s), int(float(n)), bool(o)) for k, l, s, n, o in
        re.findall(r"^step (\d+) loss (\S+) scale (\S+) skipped (\S+)( \(overflow: step skipped\))?$", open(f).read(), re.M)]
scale, tracker, prev, grew, errs = init, 0, 0, 0, []
for k, loss, s, n, over in rows:
    if over != (n == prev + 1) or n not in (prev, prev + 1):
        errs.append(f"step {k}: skipped count {n} after {prev}, overflow mark {over}")
    if over:
        scale, tracker = scale * backoff, 0
    else:
        tracker += 1
        if tracker == interval:
            scale, tracker, grew = scale * growth, 0, grew + 1
    if s != scale:
        errs.append(f"step {k}: scale {s}, GradScaler {scale}")
    prev = n
print(f"{len(rows)} steps, {prev} skipped, {grew} growths, last scale {rows[-1][2] if rows else None}"
      + ("; " + "; ".join(errs[:3]) if errs else ""))
sys.exit(1 if errs or not rows else 0)
PY
if out=$(python3 "$T/gs.py" "$T/rov.log" 1099511627776 2 0.5 3); then ok "overflow run follows GradScaler: $out"; else bad "overflow run vs GradScaler: $out"; fi
if out=$(python3 - "$T" <<'PY'
import glob, os, re, sys
import numpy as np
T = sys.argv[1]
lines = re.findall(r"^step (\d+) loss (\S+) scale (\S+) skipped (\d+)(.*)$", open(f"{T}/rov.log").read(), re.M)
first = [int(k) for k, l, s, n, o in lines[:20] if "overflow" in o]
halving = all(float(lines[i][2]) == 2.0 ** (39 - i) for i in range(20))
same, n = True, 0
for f in glob.glob(f"{T}/w0/*.npy"):
    same, n = same and np.array_equal(np.load(f), np.load(f"{T}/w20/{os.path.basename(f)}")), n + 1
# from step 20 on: a fresh run with the scale at 2^20 (skipped count 20 more)
ref = re.findall(r"^step (\d+) loss (\S+) scale (\S+) skipped (\d+)(.*)$", open(f"{T}/rov20.log").read(), re.M)
tail = [(l, s, int(d) - 20, o) for k, l, s, d, o in lines[20:30]]
follow = tail == [(l, s, int(d), o) for k, l, s, d, o in ref] and len(ref) == 10
after = [float(l) for k, l, s, d, o in lines[20:30]]
print(f"skipped {first[:3]}...{first[-1:]} ({len(first)} of the first 20), scale halving {halving}, "
      f"{n} parameters after 20 skipped steps {'identical to' if same else 'DIFFER from'} the initial ones, "
      f"steps 20-29 {'equal' if follow else 'DIFFER from'} a fresh run at 2^20 (losses {after[0]:.6g} -> {after[-1]:.6g})")
sys.exit(0 if first == list(range(20)) and halving and same and n > 0 and follow and after[-1] < after[0] else 1)
PY
); then ok "overflow run: $out"; else bad "overflow run: $out"; fi
if [ "$(grep '^step' "$T/rc1.log" "$T/rc2.log" -h)" = "$(grep '^step' "$T/rov.log" | head -30)" ]; then
  ok "overflow run: 10 steps, checkpoint, 20 more = 30 steps (scale and skipped count in the checkpoint)"
else
  bad "overflow run: the checkpointed run differs: $(grep '^step' "$T/rc2.log" | head -2 | tr '\n' ' ')"
fi

# ---- (3) 2 ranks: the same decisions
for s in dp zero; do
  compile ov2_$s "$M" "${OV[@]}" --gpus 2 --strategy $s || continue
  "$T/ov2_$s/launch" -np 2 --batches "$T/b" --steps 30 --comm-stats </dev/null >"$T/rov2_$s.log" 2>&1 ||
    { bad "2 ranks $s: $(tail -1 "$T/rov2_$s.log")"; continue; }
  grep -q "comm bytes sent by rank 0 in 30 runs: .* from the global program$" "$T/rov2_$s.log" ||
    bad "2 ranks $s: the communicator's bytes were not checked against the global program's prediction"
  plan_ok "$T/rov2_$s.log" || bad "2 ranks $s: measured high-water differs from the plan"
  dec() { grep -o "^step [0-9]* loss [^ ]* scale .*" "$1" | awk '{$4 = ""; print}'; }
  if [ "$(dec "$T/rov2_$s.log")" = "$(dec "$T/rov.log")" ] && out=$(close "$T/rov.log" "$T/rov2_$s.log" 1e-3); then
    ok "2 ranks $s: the same 30 scale / skip decisions as one device ($(grep -c overflow "$T/rov2_$s.log") skipped); ${out:0:60}...; $(grep -o 'predicted per run: [^)]*' "$T/rov2_$s.log" | head -1)"
  else
    bad "2 ranks $s: decisions or losses differ: $(diff <(dec "$T/rov.log") <(dec "$T/rov2_$s.log") | head -3 | tr '\n' ' ') ${out:-}"
  fi
done

# ---- (4) with gradient accumulation and clipping
for o in "--microbatches 2" "--clip-grad-norm 0.5"; do
  n=$(echo "$o" | tr -d ' -')
  # shellcheck disable=SC2086
  compile a32_$n "$M" --precision fp32 $o && compile a16_$n "$M" --precision fp16 $o || continue
  "$T/a32_$n/program" --batches "$T/b" --steps 3 >"$T/ra32_$n.log" 2>&1 && "$T/a16_$n/program" --batches "$T/b" --steps 3 >"$T/ra16_$n.log" 2>&1 ||
    { bad "$o: $(tail -1 "$T/ra16_$n.log")"; continue; }
  if out=$(close "$T/ra32_$n.log" "$T/ra16_$n.log" 2e-4); then ok "fp16 $o vs fp32: $out"; else bad "fp16 $o vs fp32: $out"; fi
done
# ---- (5) --reduce-dtype on 2 ranks: the gradient reductions' bytes follow it (counted = predicted, checked
# by the program), losses within 1e-3 of one device
rbytes() { grep -o "predicted per run: [0-9]*, [0-9]*, [0-9]*" "$1" | awk -F'[:,] *' -v s=$2 '{print s == "dp" ? $2 : $4}'; }
for s in dp zero; do
  for c in "fp16:" "fp16:fp16" "bf16g:" "bf16g:fp32"; do
    p=${c%%:*} r=${c#*:} a=(--precision ${p%g})
    [ $p = bf16g ] && a+=(--grad-dtype bf16)
    [ -n "$r" ] && a+=(--reduce-dtype "$r")
    d=rd_${s}_${p}_${r:-default}
    compile $d "$M" "${a[@]}" --gpus 2 --strategy $s || continue
    "$T/$d/launch" -np 2 --batches "$T/b" --steps 3 --comm-stats </dev/null >"$T/r$d.log" 2>&1 || { bad "$d: $(tail -1 "$T/r$d.log")"; continue; }
    grep -q "comm bytes sent by rank 0 in 3 runs: .* from the global program$" "$T/r$d.log" || bad "$d: bytes not checked"
  done
  for p in fp16:fp16 bf16g:fp32; do
    b0=$(rbytes "$T/rrd_${s}_${p%:*}_default.log" $s) b1=$(rbytes "$T/rrd_${s}_${p%:*}_${p#*:}.log" $s)
    ref=$T/r_gpt2_fp32.log
    if [ -n "$b0" ] && [ -n "$b1" ] && out=$(close "$ref" "$T/rrd_${s}_${p%:*}_${p#*:}.log" 1e-3) &&
      python3 -c "import sys; a, b = $b0, $b1; sys.exit(0 if (b < 0.55 * a if '${p#*:}' != 'fp32' else a < 0.55 * b) else 1)"; then
      ok "$s ${p%:*} --reduce-dtype ${p#*:}: gradient-reduction bytes per step $b0 -> $b1; ${out:0:50}..."
    else
      bad "$s ${p%:*} --reduce-dtype ${p#*:}: bytes $b0 -> $b1; ${out:-}"
    fi
  done
done
# ---- (7) pipelines: the same decisions over stages and ranks
PP=(--pipeline-stages 2 --microbatches 2)
compile ovm "$M" "${OV[@]}" --microbatches 2 && "$T/ovm/program" --batches "$T/b" --steps 30 >"$T/rovm.log" 2>&1 ||
  bad "overflow run, --microbatches 2: $(tail -1 "$T/rovm.log")"
for c in pp:2 tp:4; do
  s=${c%:*} n=${c#*:} a=()
  [ $s = tp ] && a=(--gpus 4 --strategy tp)
  compile ovp_$s "$M" "${OV[@]}" "${PP[@]}" "${a[@]}" || continue
  "$T/ovp_$s/launch" --batches "$T/b" --steps 30 </dev/null >"$T/rovp_$s.log" 2>&1 || { bad "pipeline $s: $(grep -m1 error "$T/rovp_$s.log")"; continue; }
  dec() { grep -o "^step [0-9]* loss [^ ]* scale .*" "$1" | awk '{$4 = ""; print}'; }
  if [ "$(dec "$T/rovp_$s.log")" = "$(dec "$T/rovm.log")" ] && out=$(close "$T/rovm.log" "$T/rovp_$s.log" 1e-3); then
    ok "pp=2${a:+ x tp=2} ($n ranks): the same 30 scale / skip decisions as one device with 2 microbatches ($(grep -c overflow "$T/rovp_$s.log") skipped); max |d|${out##*max |d|}"
  else
    bad "pp=2${a:+ x tp=2}: decisions or losses differ: $(diff <(dec "$T/rovm.log") <(dec "$T/rovp_$s.log") | head -3 | tr '\n' ' ') ${out:-}"
  fi
done
if compile p16 "$M" --precision fp16 "${PP[@]}" && "$T/p16/launch" --batches "$T/b" --steps 3 </dev/null >"$T/rp16.log" 2>&1 &&
   out=$(close "$T/r_gpt2_fp32.log" "$T/rp16.log" 2e-4) && grep -q "^step 2 loss .* scale 65536 skipped 0$" "$T/rp16.log"; then
  ok "pp=2 fp16 (dynamic scale, no overflow) vs fp32 one device: $out"
else bad "pp=2 fp16 vs fp32: ${out:-} $(grep -m1 error "$T/rp16.log")"; fi
# checkpoints of the loss-scaled pipeline (the scale, the good-step count and the skipped steps saved with the
# stages' parameters and optimizer state, as the one program saves them): 21 steps, checkpoint, 9 more = the 30
# steps of one run (lines and weights bit for bit; step 21 is the second of three good steps at 2^20, so a lost
# good-step count would move the next growth); the pipeline's checkpoint loads into one device (--microbatches 2)
# and one device's into the pipeline with the same decisions; a checkpoint without loss scaling: one error line
if [ -x "$T/ovp_pp/launch" ]; then
  L=$T/ovp_pp/launch
  "$L" --batches "$T/b" --steps 30 -o "$T/wp30" </dev/null >"$T/rpc30.log" 2>&1 &&
    "$L" --batches "$T/b" --steps 21 --save-checkpoint "$T/pc21" </dev/null >"$T/rpc1.log" 2>&1 &&
    "$L" --batches "$T/b" --steps 9 --load-checkpoint "$T/pc21" --save-checkpoint "$T/pc30" -o "$T/wpr" </dev/null >"$T/rpc2.log" 2>&1 ||
    bad "pp=2 checkpoint runs: $(grep -h -m1 error "$T/rpc30.log" "$T/rpc1.log" "$T/rpc2.log")"
  nw=$(ls "$T/wp30" 2>/dev/null | wc -l) same=0
  for f in "$T"/wp30/*.npy; do cmp -s "$f" "$T/wpr/$(basename "$f")" && same=$((same + 1)); done
  if [ "$(grep -h '^step' "$T/rpc1.log" "$T/rpc2.log")" = "$(grep '^step' "$T/rpc30.log")" ] && [ "$nw" -gt 0 ] && [ "$same" = "$nw" ] &&
     [ "$(grep -c '^step' "$T/rpc30.log")" = 30 ]; then
    ok "pp=2 fp16 overflow run: 21 steps, checkpoint, 9 more = 30 steps (every line; $same of $nw weights bit-identical; $(grep -c overflow "$T/rpc30.log") skipped, $(grep '^step 29' "$T/rpc30.log" | grep -o 'scale [^ ]*'))"
  else
    bad "pp=2 fp16 checkpointed run differs: $(diff <(grep '^step' "$T/rpc30.log") <(grep -h '^step' "$T/rpc1.log" "$T/rpc2.log") | head -3 | tr '\n' ' ') weights $same of $nw"
  fi
  dec() { grep -o "^step [0-9]* loss [^ ]* scale .*" "$1" | awk '{$4 = ""; print}'; }
  if [ -x "$T/ovm/program" ] && "$T/ovm/program" --batches "$T/b" --steps 21 --save-checkpoint "$T/mc21" >"$T/rmc1.log" 2>&1 &&
     "$T/ovm/program" --batches "$T/b" --steps 9 --load-checkpoint "$T/pc21" >"$T/rmc2.log" 2>&1 &&
     "$L" --batches "$T/b" --steps 9 --load-checkpoint "$T/mc21" </dev/null >"$T/rpm2.log" 2>&1 &&
     [ "$(dec "$T/rmc2.log")" = "$(dec "$T/rpc2.log")" ] && [ "$(dec "$T/rpm2.log")" = "$(dec "$T/rpc2.log")" ] &&
     [ "$(grep -c '^step' "$T/rmc2.log")" = 9 ] && out=$(close "$T/rpc2.log" "$T/rmc2.log" 1e-3) && out2=$(close "$T/rpc2.log" "$T/rpm2.log" 1e-3); then
    ok "pp=2 fp16 checkpoint after 21 steps into one device, one device's into pp=2: the pipeline's 9 scale / skip decisions (losses max |d|${out##*max |d|}, ${out2##*max |d|})"
  else
    bad "pp=2 fp16 checkpoints across plans: $(grep -h -m1 error "$T/rmc1.log" "$T/rmc2.log" "$T/rpm2.log" 2>/dev/null) $(diff <(dec "$T/rpc2.log") <(dec "$T/rmc2.log") | head -2 | tr '\n' ' ')"
  fi
  if [ -x "$T/p16/launch" ] && compile p32 "$M" "${PP[@]}" && "$T/p32/launch" --batches "$T/b" --steps 1 --save-checkpoint "$T/p32c" </dev/null >/dev/null 2>&1; then
    out=$("$T/p16/launch" --batches "$T/b" --steps 1 --load-checkpoint "$T/p32c" </dev/null 2>&1); rc=$?
    if [ $rc != 0 ] && grep -q "error: .*no f32 scalar 'opt.loss_scale'" <<<"$out"; then
      ok "pp=2 fp16 --load-checkpoint of an fp32 run: $(grep -m1 'error:' <<<"$out")"
    else bad "pp=2 fp16 --load-checkpoint of an fp32 run: exit $rc: $(head -2 <<<"$out")"; fi
  fi
fi
# ---- (6) the CUDA program (bf16; fp16: tests/cuda_emu_fp16.sh) with the loss-scaling ops under the
# execution layer (make emu): the same per-step lines (loss, scale after a growth capped at a finite value,
# skipped count read from the device) as the CPU program of the same plan
if command -v "${CXX:-g++}" >/dev/null; then
  # (--fused-attention off: the same plan on both targets; the CPU default fuses bf16 attention, the CUDA
  # default does not, and the fused kernels sum in different orders: tests/fused_attention_16.sh compares those)
  CU=(--precision bf16 --loss-scale-init 1e38 --loss-scale-interval 1 --fused-attention off)
  if "$BUILD/galvc" --batch 2 --seq 16 --train --target cuda "$M" "${CU[@]}" --no-build -o "$T/cu/" </dev/null >"$T/cu.log" 2>&1 &&
    make -s -C "$T/cu" emu >"$T/cumake.log" 2>&1 && "$T/cu/program-emu" --batches "$T/b" --steps 3 >"$T/rcu.log" 2>&1 &&
    compile cb "$M" "${CU[@]}" && "$T/cb/program" --batches "$T/b" --steps 3 >"$T/rcb.log" 2>&1 &&
    [ "$(grep '^step' "$T/rcu.log")" = "$(grep '^step' "$T/rcb.log")" ] && grep -q "^step 2 loss .* scale 1.99999993[0-9]*e+38 skipped 0$" "$T/rcu.log"; then
    ok "cuda program-emu, bf16 with loss scaling: the cpu program's lines: $(grep '^step 2' "$T/rcu.log")"
  else
    bad "cuda program-emu with loss scaling: $(tail -1 "$T/cu.log" "$T/cumake.log" "$T/rcu.log" 2>/dev/null | tail -1) $(diff <(grep '^step' "$T/rcb.log") <(grep '^step' "$T/rcu.log") | head -2)"
  fi
fi
echo "train_fp16: $pass passed, $fail failed"
[ $fail = 0 ]
