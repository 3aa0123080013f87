#!/usr/bin/env bash
# The CPU target runs 16-bit storage plans (--precision bf16 / fp16; the
# storage pass, docs/cpu-target.md "16-bit storage"): f32 values stored
# bf16 / f16, every kernel computing in fp32 between a widening load and a
# round-to-nearest-even store, where the CUDA target rounds. Tiny GPT-2 and
# Llama (2 layers, hidden 64, vocab 64), batch 2 x seq 16.
# (1) Inference: the bf16 program against galv-eval --precision bf16 (the
#     same rounding in the reference evaluator, which sums GEMMs in double):
#     at least 80 % of the logits bit-identical and the rest within 2^-7 x
#     max|logit| (one bf16 ulp at the largest value; measured GPT-2 / Llama:
#     93 % / 99.9 % identical, max 2.0e-3 / 9.8e-4, values up to 0.67 /
#     0.52); bf16 against fp32 within 2^-6 x max|logit| (measured 3.1e-3 /
#     3.5e-3), fp16 within 2^-9 (measured 4.2e-4 / 4.7e-4); the program's
#     measured arena high-water equals the plan's, and the bf16 arena is
#     half the fp32 one (36864 vs 73728 bytes / 37888 vs 75776). 2-rank tp
#     (bf16 activations all-reduced in bf16) against one device: within
#     2^-7 x max|logit| (measured 3.9e-3 / 3.9e-3).
# (2) Training, 3 AdamW steps (lr 1e-3): losses within 1e-3 of the fp32
#     program (as tests/train_bf16.sh bounds galv-eval's); the first step's
#     loss (the forward) within 1e-5 of galv-eval --precision bf16 and every
#     parameter after that step within 1e-5 (measured <= 1.4e-7: the
#     same values are rounded in the same places; later steps drift apart by
#     AdamW's sign(g) steps where a gradient is within rounding of zero, so
#     they are held to the fp32 bound); --grad-dtype bf16 alike.
#     The CUDA directory of the same plan: `make cpu` gives the same losses
#     bit for bit. Against program-emu (the CUDA program under the CUDA execution layer,
#     same plan; GPT-2 only, skipped without a C++ compiler): losses within
#     1e-3 (measured 7.6e-5). Losses vs fp32: GPT-2 1.8e-4 (bf16 gradients
#     2.6e-4), Llama 1.2e-4 (1.2e-4).
# (3) 2 ranks (GPT-2: dp, tp, zero; Llama: tp, zero), bf16, 3 steps: losses
#     within 1e-3 of the one-device bf16 program (measured GPT-2 dp 1.1e-4,
#     tp 1.6e-4, zero 1.1e-4; Llama tp 2.6e-4, zero 3.9e-4); the bytes the
#     communicator hands
#     to MPI (2 per bf16 element) equal the global program's prediction
#     (checked by the program, required here). (4) --grad-dtype bf16 on 2
#     ranks (dp: bf16 all-reduce of the gradients; zero: bf16
#     reduce-scatter): within 1e-3 of the one-device bf16-gradient program
#     (measured 2.3e-4 both).
# (5) The debug build (ASan + UBSan, values poisoned after their last use)
#     of the bf16 training program runs a step. (fp16 training, with loss
#     scaling: tests/train_fp16.sh.)
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
GALVC=("$BUILD/galvc" --batch 2 --seq 16 --target cpu)
python3 -c "
import numpy as np, os
r = np.random.RandomState(5)
os.makedirs('$T/b')
np.save('$T/b/input_ids.npy', r.randint(0, 64, (2, 16)).astype(np.int64))
np.save('$T/b/labels.npy', r.randint(0, 64, (2, 16)).astype(np.int64))"
IDS=$T/b/input_ids.npy
# compile DIR ARGS...: galvc into DIR/ (one line on failure)
compile() {
  local d=$1
  shift
  "${GALVC[@]}" "$@" -o "$T/$d/" </dev/null >"$T/$d.log" 2>&1 || { bad "$d: galvc: $(grep error "$T/$d.log" | tail -1)"; return 1; }
}
# plan_ok LOG: every printed high-water equals the plan's
plan_ok() { ! grep "high-water" "$1" | grep -v -q "high-water \([0-9]*\) bytes (measured: [^;]*; plan: \1)"; }
losses() { grep -o "^step [0-9]* loss [^ ]*" "$1" | awk '{print $4}' | tr '\n' ' '; }

for fam in gpt2 llama; do
  python3 "$SRC/examples/make_model.py" $fam -o "$T/$fam.onnx" --layers 2 --hidden 64 --heads 4 --vocab 64 --no-verify >/dev/null ||
    { bad "$fam: make_model"; continue; }
  M=$T/$fam.onnx
  # ---- (1) inference
  for p in fp32 bf16 fp16; do
    compile i_${fam}_$p "$M" --precision $p && "$T/i_${fam}_$p/program" --input input_ids="$IDS" -o "$T/oi_${fam}_$p" \
      >"$T/ri_${fam}_$p.log" 2>&1 || bad "$fam inference $p: $(tail -1 "$T/ri_${fam}_$p.log")"
  done
  "$BUILD/galv-eval" "$M" --batch 2 --seq 16 --precision bf16 --input input_ids="$IDS" -o "$T/ei_$fam" >/dev/null 2>"$T/ei.err" ||
    bad "$fam: galv-eval --precision bf16: $(tail -1 "$T/ei.err")"
  # 2-rank tp inference: bf16 activations all-reduced in bf16, the bytes checked against the global prediction
  compile i2_$fam "$M" --precision bf16 --gpus 2 --strategy tp &&
    "$T/i2_$fam/launch" -np 2 --input input_ids="$IDS" -o "$T/oi2_$fam" --comm-stats </dev/null >"$T/ri2_$fam.log" 2>&1 ||
    bad "$fam inference tp=2 bf16: $(tail -1 "$T/ri2_$fam.log")"
  grep -q "comm bytes sent by rank 0 in 1 runs: .* from the global program$" "$T/ri2_$fam.log" ||
    bad "$fam inference tp=2 bf16: the bytes were not checked against the global program's prediction"
  if out=$(python3 - "$T" $fam <<'PY'
import sys, os, re
import numpy as np
T, fam = sys.argv[1:3]
ld = lambda d: np.load(f"{T}/{d}/logits.npy").astype(np.float64)
r, b, h, e = ld(f"oi_{fam}_fp32"), ld(f"oi_{fam}_bf16"), ld(f"oi_{fam}_fp16"), ld(f"ei_{fam}")
M = np.abs(r).max()
same = float((b == e).mean())
d_e, d_r, d_h = np.abs(b - e).max(), np.abs(b - r).max(), np.abs(h - r).max()
arena = {p: int(re.search(r"arena (\d+) bytes", open(f"{T}/ri_{fam}_{p}.log").read()).group(1)) for p in ("fp32", "bf16")}
msg = (f"max|logit| {M:.3g}; bf16 vs galv-eval bf16: {100 * same:.0f} % identical, max {d_e:.2g}; bf16 vs fp32 {d_r:.2g}; "
       f"fp16 vs fp32 {d_h:.2g}; arena bf16 {arena['bf16']} vs fp32 {arena['fp32']} bytes")
good = same >= 0.8 and d_e <= 2 ** -7 * M and d_r <= 2 ** -6 * M and d_h <= 2 ** -9 * M and 2 * arena["bf16"] <= arena["fp32"] + 64
if os.path.exists(f"{T}/oi2_{fam}/logits.npy"):
    t = ld(f"oi2_{fam}")
    msg += f"; tp=2 vs one device {np.abs(t - b).max():.2g}"
    good = good and np.abs(t - b).max() <= 2 ** -7 * M
print(msg)
sys.exit(0 if good else 1)
PY
  ); then ok "$fam inference: $out"; else bad "$fam inference: $out"; fi
  for l in "$T"/ri_${fam}_*.log "$T"/ri2_$fam.log; do
    [ -f "$l" ] || continue
    if plan_ok "$l" && grep -q "high-water" "$l"; then :; else bad "$fam inference: $(basename "$l"): measured high-water differs from the plan"; fi
  done

  # ---- (2) training, one device
  for p in fp32 bf16 bf16g; do
    g=()
    [ $p = bf16g ] && g=(--grad-dtype bf16)
    compile t_${fam}_$p "$M" --train --precision ${p%g} "${g[@]}" || continue
    "$T/t_${fam}_$p/program" --batches "$T/b" --steps 3 >"$T/rt_${fam}_$p.log" 2>&1 || bad "$fam train $p: $(tail -1 "$T/rt_${fam}_$p.log")"
    [ $p = fp32 ] && continue
    "$T/t_${fam}_$p/program" --batches "$T/b" --steps 1 -o "$T/w1_${fam}_$p" >/dev/null 2>&1 || bad "$fam train $p: -o"
    "$BUILD/galv-eval" "$M" --batch 2 --seq 16 --train --steps 1 --precision bf16 "${g[@]}" --input input_ids="$IDS" \
      --input labels="$T/b/labels.npy" -o "$T/we1_${fam}_$p" >"$T/re_${fam}_$p.log" 2>&1 || bad "$fam galv-eval $p"
  done
  for p in bf16 bf16g; do
    if out=$(python3 - "$T" $fam $p <<'PY'
import sys, glob, os, re
import numpy as np
T, fam, p = sys.argv[1:4]
L = lambda f: [float(x) for x in re.findall(r"^step \d+ loss (\S+)", open(f).read(), re.M)]
a, b, e = L(f"{T}/rt_{fam}_fp32.log"), L(f"{T}/rt_{fam}_{p}.log"), L(f"{T}/re_{fam}_{p}.log")
d32 = max(abs(x - y) for x, y in zip(a, b)) if len(a) == len(b) == 3 else float("inf")
de = abs(b[0] - e[0]) if b and e else float("inf")
dw, n = 0.0, 0
for f in glob.glob(f"{T}/we1_{fam}_{p}/*.npy"):
    name = os.path.basename(f)
    if name.startswith("opt.") or name in ("loss.npy", "output0.npy"):
        continue
    dw, n = max(dw, float(np.abs(np.load(f) - np.load(f"{T}/w1_{fam}_{p}/{name}")).max())), n + 1
print(f"losses {b} vs fp32 {a}: max |d| {d32:.2g}; step 0 vs galv-eval {de:.2g}, parameters after it {dw:.2g} ({n})")
sys.exit(0 if d32 <= 1e-3 and de <= 1e-5 and n > 0 and dw <= 1e-5 else 1)
PY
    ); then ok "$fam train $p: $out"; else bad "$fam train $p: $out"; fi
    plan_ok "$T/rt_${fam}_$p.log" || bad "$fam train $p: measured high-water differs from the plan"
  done

  # ---- (3), (4) two ranks
  cases="tp zero"
  [ $fam = gpt2 ] && cases="dp tp zero dp:g zero:g"
  for c in $cases; do
    s=${c%:g} ref=bf16 g=()
    [ "$c" != "$s" ] && ref=bf16g g=(--grad-dtype bf16)
    d=t2_${fam}_${s}_$ref
    compile $d "$M" --train --precision bf16 "${g[@]}" --gpus 2 --strategy $s || continue
    "$T/$d/launch" -np 2 --batches "$T/b" --steps 3 --comm-stats </dev/null >"$T/r$d.log" 2>&1 || { bad "$d: $(tail -1 "$T/r$d.log")"; continue; }
    if ! grep -q "comm bytes sent by rank 0 in 3 runs: .* from the global program$" "$T/r$d.log"; then
      bad "$d: the communicator's bytes were not checked against the global program's prediction"
      continue
    fi
    plan_ok "$T/r$d.log" || bad "$d: measured high-water differs from the plan"
    a=$(losses "$T/rt_${fam}_$ref.log") b=$(losses "$T/r$d.log")
    if python3 -c "
import sys
a, b = [float(x) for x in '$a'.split()], [float(x) for x in '$b'.split()]
sys.exit(0 if len(a) == len(b) == 3 and max(abs(x - y) for x, y in zip(a, b)) <= 1e-3 else 1)"; then
      ok "$fam 2 ranks $c: losses $b vs one device $a"
    else
      bad "$fam 2 ranks $c: losses $b vs one device $a"
    fi
  done
done

# the CUDA directory of the same plan: `make cpu` builds the CPU target's program (the same losses, bit for bit);
# --fused-attention on: the CPU target fuses the attention cores by default (auto), the CUDA target only with on
if "$BUILD/galvc" "$T/gpt2.onnx" --batch 2 --seq 16 --target cuda --train --precision bf16 --fused-attention on --no-build -o "$T/cu/" >/dev/null 2>&1 &&
  make -s -C "$T/cu" cpu >"$T/cucpu.log" 2>&1 && "$T/cu/program-cpu" --batches "$T/b" --steps 3 >"$T/rcucpu.log" 2>&1 &&
  [ "$(losses "$T/rcucpu.log")" = "$(losses "$T/rt_gpt2_bf16.log")" ]; then
  ok "gpt2 train bf16: make cpu in the cuda directory: $(losses "$T/rcucpu.log")"
else
  bad "gpt2 train bf16: make cpu in the cuda directory: $(tail -1 "$T/cucpu.log" "$T/rcucpu.log" 2>/dev/null | tail -1)"
fi
# program-emu: the CUDA program of the same plan under the CUDA execution layer
if command -v "${CXX:-g++}" >/dev/null; then
  if make -s -C "$T/cu" emu >"$T/cu.log" 2>&1 && "$T/cu/program-emu" --batches "$T/b" --steps 3 >"$T/rcu.log" 2>&1; then
    a=$(losses "$T/rt_gpt2_bf16.log") b=$(losses "$T/rcu.log")
    if python3 -c "
import sys
a, b = [float(x) for x in '$a'.split()], [float(x) for x in '$b'.split()]
sys.exit(0 if len(a) == len(b) == 3 and max(abs(x - y) for x, y in zip(a, b)) <= 1e-3 else 1)"; then
      ok "gpt2 train bf16: program-emu $b vs cpu $a"
    else
      bad "gpt2 train bf16: program-emu $b vs cpu $a"
    fi
  else
    bad "gpt2 train bf16 under make emu: $(tail -1 "$T/cu.log" "$T/rcu.log" 2>/dev/null | tail -1)"
  fi
fi

# ---- (5) the debug build of a bf16 training step
if make -s -C "$T/t_gpt2_bf16" debug >"$T/dbg.log" 2>&1 && "$T/t_gpt2_bf16/program-debug" --batches "$T/b" --steps 1 >"$T/rdbg.log" 2>&1 &&
  python3 -c "import sys; a, b = '$(losses "$T/rdbg.log")'.split(), '$(losses "$T/rt_gpt2_bf16.log")'.split()
sys.exit(0 if len(a) == 1 and b and abs(float(a[0]) - float(b[0])) <= 1e-5 else 1)"; then
  ok "gpt2 train bf16: the debug build (ASan, poisoning) runs a step: $(losses "$T/rdbg.log")"
else
  bad "gpt2 train bf16 debug build: $(tail -2 "$T/dbg.log" "$T/rdbg.log" | tr '\n' ' ')"
fi
echo "cpu_bf16: $pass passed, $fail failed"
[ $fail = 0 ]
