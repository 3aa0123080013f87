#!/usr/bin/env bash
# cuda_emu_matrix.sh BUILD [FAMILIES] [PLANS] — the full matrix of CUDA
# program kinds run under the CPU execution layer (make emu; CI runs a
# pairwise subset: tests/cuda_emu.sh, cuda_emu_dist.sh, cuda_lab_emu.sh).
# Prints one line per cell with its error figure and a summary; exit status
# 1 when any cell fails. Slow (minutes per cell on 2 cores): run it in the
# background, e.g.  nice bash bench/cuda_emu_matrix.sh build > matrix.txt 2>&1 &
#
#   inference: FAMILIES (default gpt2 bert llama vit t5) x fp32 / bf16 / fp16
#     x PLANS among one tp2 dp2 dptp4 tp4 (default all): program-emu's outputs
#     vs onnxruntime (tests/cuda_emu_compare.py: fp32 rtol 1e-4 + atol 1e-5,
#     bf16 atol 5e-2 + rtol 5e-2, fp16 2^-9 max|output|); llama's 4-way tp plans use a llama with
#     4 KV heads (the default has 2, and the tp degree must divide them:
#     galvc refuses the plan in one line);
#   training (the causal LMs among FAMILIES: gpt2 llama), 3 AdamW steps, fp32
#     x PLANS among one tp2 dp2 dptp4 zero2 zero4 pp2-gpipe pp2-1f1b
#     pp2-zbh1 pp2-uneven pp2-recompute: losses and every weight vs the
#     single-device CPU program (tests/lib/same_training.py, rtol 1e-4,
#     atol 1e-5); bf16 x one tp2 dp2 zero2: losses within 1e-3 of the fp32 CPU
#     program's (docs/cuda-target.md's bound); fp16 (dynamic loss scaling) x
#     one tp2 dp2 zero2: losses within 2e-4 of it (tests/train_fp16.sh's bound).
# KINDS (inference training) and PRECS (fp32 bf16 fp16) in the environment pick
# a part, e.g. KINDS=training PRECS=bf16 bench/cuda_emu_matrix.sh build
# "gpt2 llama" "one dp2". Each line ends with the cell's seconds.
set -uo pipefail
BUILD=$(cd "${1:?usage: cuda_emu_matrix.sh BUILD [FAMILIES] [PLANS]}" && pwd)
FAMS=${2:-gpt2 bert llama vit t5}
PLANS=${3:-one tp2 dp2 dptp4 tp4 zero2 zero4 pp2-gpipe pp2-1f1b pp2-zbh1 pp2-uneven pp2-recompute}
KINDS=${KINDS:-inference training}
PRECS=${PRECS:-fp32 bf16 fp16}
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export OPENBLAS_NUM_THREADS=1
. "$SRC/tests/lib/mpi_env.sh"
pass=0 fail=0
c0=$(date +%s)
ok() { echo "ok   $* ($(($(date +%s) - c0)) s)"; pass=$((pass + 1)); c0=$(date +%s); }
bad() { echo "FAIL $* ($(($(date +%s) - c0)) s)"; fail=$((fail + 1)); c0=$(date +%s); }
has() { [[ " $PLANS " == *" $1 "* ]]; }
kind() { [[ " $KINDS " == *" $1 "* ]]; }
prec_on() { [[ " $PRECS " == *" $1 "* ]]; }
t0=$(date +%s)
plan_args() { # PLAN -> galvc options (empty for one; "-" when the plan is not an inference plan)
  case $1 in
    one) echo "" ;;
    tp2) echo "--gpus 2 --strategy tp" ;;
    dp2) echo "--gpus 2 --strategy dp" ;;
    tp4) echo "--gpus 4 --strategy tp" ;;
    dptp4) echo "--gpus 4 --mesh dp=2,tp=2 --strategy dp,tp" ;;
    zero2) echo "--gpus 2 --strategy zero" ;;
    zero4) echo "--gpus 4 --strategy zero" ;;
    pp2-gpipe) echo "--pipeline-stages 2 --microbatches 4 --schedule gpipe" ;;
    pp2-1f1b) echo "--pipeline-stages 2 --microbatches 4 --schedule 1f1b" ;;
    pp2-zbh1) echo "--pipeline-stages 2 --microbatches 4 --schedule zb-h1" ;;
    pp2-uneven) echo "--pipeline-stages 2 --microbatches 4 --gpus 3 --stage-devices 1,2 --strategy dp" ;;
    pp2-recompute) echo "--pipeline-stages 2 --microbatches 4 --pipeline-recompute" ;;
    *) echo "-" ;;
  esac
}

# ---- inference vs onnxruntime
for fam in $FAMS; do
  kind inference || break
  python3 "$SRC/examples/make_model.py" "$fam" -o "$T/$fam.onnx" --no-verify >/dev/null || { bad "make_model $fam"; continue; }
  [ "$fam" = llama ] && python3 "$SRC/examples/make_model.py" llama --kv-heads 4 -o "$T/llama_kv4.onnx" --no-verify >/dev/null
  for prec in fp32 bf16 fp16; do
    prec_on $prec || continue
    for p in one tp2 dp2 dptp4 tp4; do
      has $p || continue
      c0=$(date +%s)
      a=$(plan_args $p) m=$T/$fam.onnx
      [ "$fam" = llama ] && [ "$p" = tp4 ] && m=$T/llama_kv4.onnx
      if r=$(python3 "$SRC/tests/cuda_emu_compare.py" "$BUILD" "$m" --precision $prec --galvc-args "$a" 2>&1); then
        ok "inference $fam $prec $p: $(echo "$r" | grep '^ok' | sed 's/^ok *//' | tr '\n' ' ')"
      else bad "inference $fam $prec $p: $(echo "$r" | tail -n 5)"; fi
    done
  done
done
echo "     inference: $(($(date +%s) - t0)) s"

# ---- training vs the single-device CPU program
python3 - "$T" <<'PY'
import numpy as np, os, sys
t = sys.argv[1]
r = np.random.RandomState(5)
os.makedirs(t + "/b")
np.save(t + "/b/input_ids.npy", r.randint(0, 64, (3, 8, 8)).astype(np.int64))
l = r.randint(0, 64, (3, 8, 8)).astype(np.int64)
l[:, 1, :3] = -100
np.save(t + "/b/labels.npy", l)
PY
for fam in $FAMS; do
  kind training || break
  case $fam in gpt2 | llama) ;; *) continue ;; esac
  m=$T/${fam}_t.onnx
  python3 "$SRC/examples/make_model.py" "$fam" -o "$m" --layers 2 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null
  "$BUILD/galvc" "$m" --input-shape input_ids=8x8 --train --target cpu -q -o "$T/${fam}_cpu/" </dev/null >/dev/null 2>&1 &&
    "$T/${fam}_cpu/program" --batches "$T/b" --steps 3 -o "$T/${fam}_cpu.w" >"$T/${fam}_cpu.txt" 2>&1 ||
    { bad "training $fam: the CPU reference"; continue; }
  for prec in fp32 bf16 fp16; do
    prec_on $prec || continue
    for p in one tp2 dp2 dptp4 zero2 zero4 pp2-gpipe pp2-1f1b pp2-zbh1 pp2-uneven pp2-recompute; do
      has $p || continue
      c0=$(date +%s)
      [ $prec != fp32 ] && [[ " one tp2 dp2 zero2 " != *" $p "* ]] && continue
      a=$(plan_args $p) d=$T/${fam}_${prec}_$p
      # shellcheck disable=SC2086
      if ! "$BUILD/galvc" "$m" --batch 8 --seq 8 --train --precision $prec $a --target cuda --no-build -q -o "$d/" \
           </dev/null >"$d.log" 2>&1; then
        bad "training $fam $prec $p: galvc: $(tail -n 3 "$d.log")"; continue
      fi
      built=1
      for sd in "$d" "$d"/stage*; do
        [ -f "$sd/program.cu" ] || continue
        make -s -C "$sd" emu >>"$d.log" 2>&1 || built=0
      done
      [ $built = 1 ] || { bad "training $fam $prec $p: make emu: $(tail -n 5 "$d.log")"; continue; }
      exe=$d/launch
      [ -x "$exe" ] || exe=$d/program-emu
      if ! GALV_PROGRAM=program-emu timeout 900 "$exe" --batches "$T/b" --steps 3 -o "$d.w" </dev/null >"$d.txt" 2>&1; then
        bad "training $fam $prec $p: run: $(tail -n 5 "$d.txt")"; continue
      fi
      if [ $prec = fp32 ]; then
        r=$(python3 - "$T/${fam}_cpu.txt" "$d.txt" "$T/${fam}_cpu.w" "$d.w" "$SRC/tests/lib" <<'PY' 2>&1
import sys
sys.path.insert(0, sys.argv[5])
from same_training import check
print(check(*sys.argv[1:5]))
PY
        ) && ok "training $fam fp32 $p: $r" || bad "training $fam fp32 $p: $r"
      else
        r=$(python3 - "$T/${fam}_cpu.txt" "$d.txt" $prec <<'PY' 2>&1
import re, sys
ref, got = ([float(x) for x in re.findall(r"^step \d+ loss (\S+)", open(p).read(), re.M)] for p in sys.argv[1:3])
prec = sys.argv[3]
bound = 1e-3 if prec == "bf16" else 2e-4
d = [abs(a - b) for a, b in zip(got, ref)]
assert len(got) == 3 and len(ref) == 3 and max(d) <= bound, f"{prec} {got} vs fp32 {ref}"
print(f"|{prec} - fp32| per step " + " ".join(f"{x:.2g}" for x in d) + f" (<= {bound:g})")
PY
        ) && ok "training $fam $prec $p: $r" || bad "training $fam $prec $p: $r"
      fi
    done
  done
done
echo "cuda_emu_matrix: $pass passed, $fail failed ($(($(date +%s) - t0)) s)"
[ $fail = 0 ]
