#!/usr/bin/env bash
# Selective recomputation (--recompute=selective[:LIST], passes/recompute.c):
# only the attention cores (QK^T, scale / mask, softmax) are recomputed in
# backward. On tiny GPT-2 and Llama models (2 layers, hidden 32, 4 heads,
# vocab 64), CPU target, 2 AdamW steps over 2 batches of 2 x 8:
#   - one device: --recompute=selective and selective:0 (layer 0 only) give
#     losses and weights bit-identical to --recompute=none;
#   - 2 ranks, --strategy tp (mpirun): --recompute=selective bit-identical to
#     the 2-rank --recompute=none run;
#   - the arena (memory-plan) at 8 x 128, one device and each rank of 2-rank
#     tp: none > selective > all and none > selective:0 > all. (The last
#     layer's recomputation saves nothing, its backward comes first, and
#     its clones can raise the peak: GPT-2 under tp, selective:1 alone
#     8750144 -> 9667648 bytes, so selective:0 < selective there.)
#   - the CUDA target (GPT-2): recomputation frees the probabilities from
#     the backward, so the forward attention chains become the emitter's
#     fused kernel: program.cu calls galv_attention twice (one per layer)
#     with selective, never with none; the selective program built with
#     `make emu` (CPU execution layer, no GPU) trains 2 steps with losses
#     and weights within rtol 1e-4 / atol 1e-5 of the CPU none run (the
#     fused kernel's online softmax rounds otherwise: not bit-identical);
#   - --report-cost (GPT-2): with selective, "recomputation: 6 forward ops
#     again" (QK^T, scale + mask, softmax per layer); on the cuda target
#     "attention: 0 chains fused" without recomputation and 2 with it (the
#     cost model prices them without the scores' traffic), no attention line
#     on the cpu target;
#   - the CPU runs above keep the four-op chains (--fused-attention off):
#     galv.attention (docs/fused-attention.md, the CPU default) has no
#     softmax core for selective recomputation to clone (tests/fused_attention.sh);
#   - errors, one line each and exit 1: selective:h.9 (no such layer),
#     selective: (empty list).
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/require.sh"
require_cmd "Debian libopenmpi-dev, openmpi-bin" mpicc mpirun
export GALV_COMM_SYNC=1 OMPI_MCA_btl_vader_single_copy_mechanism=none OPENBLAS_NUM_THREADS=1
export MPIRUN="mpirun -x GALV_COMM_SYNC -x OPENBLAS_NUM_THREADS"
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
B=2 S=8
same_run() { # a b: the step lines and every weight byte for byte
  [ -n "$(grep '^step' "$1/log")" ] && [ "$(grep '^step' "$1/log")" = "$(grep '^step' "$2/log")" ] || return 1
  local n=0 f
  for f in "$1"/w/*.npy; do cmp -s "$f" "$2/w/$(basename "$f")" || return 1; n=$((n + 1)); done
  [ $n -gt 0 ]
}
# run FAM NAME GALVC_OPTIONS...: build into $T/FAM-NAME, 2 steps -> log, w/
run() {
  local fam=$1 d="$T/$1-$2" x="program"
  shift 2
  [[ " $* " == *" --gpus "* ]] && x="launch"
  "$BUILD/galvc" "$T/$fam.onnx" --batch $B --seq $S --train --target cpu --fused-attention off -q "$@" -o "$d/" 2>"$T/err" ||
    { bad "$fam galvc $*: $(head -2 "$T/err")"; return 1; }
  timeout 300 "$d/$x" --batches "$T/$fam.b" --steps 2 -o "$d/w" >"$d/log" 2>"$T/err" ||
    { bad "$fam $* run: $(grep -m2 . "$T/err")"; return 1; }
}
arena() { # FAM OPTIONS...: the arena bytes at 8 x 128 (a rank's under --gpus)
  local fam=$1
  shift
  "$BUILD/galvc" "$T/$fam.onnx" --batch 8 --seq 128 --train --target cpu --fused-attention off "$@" --emit=ir -o /dev/null 2>&1 |
    sed -n 's/.*memory-plan: arena \([0-9][0-9]*\) bytes.*/\1/p' | tail -1
}
for fam in gpt2 llama; do
  python3 "$SRC/examples/make_model.py" "$fam" -o "$T/$fam.onnx" --layers 2 --hidden 32 --heads 4 --vocab 64 --no-verify \
    >/dev/null || { bad "$fam: make_model"; continue; }
  python3 - "$SRC" "$T/$fam.onnx" "$T/$fam.b" $B $S 2>"$T/err" <<'PY' || { bad "$fam batches: $(tail -1 "$T/err")"; continue; }
import sys, os, onnx, numpy as np
sys.path.insert(0, sys.argv[1] + "/tests")
from model_inputs import make_inputs
m = onnx.load(sys.argv[2], load_external_data=False)
B, S = int(sys.argv[4]), int(sys.argv[5])
os.makedirs(sys.argv[3])
steps = [make_inputs(m, B, S, seed=k) for k in range(2)]
for name in steps[0]:
    np.save(f"{sys.argv[3]}/{name.replace('/', '_')}.npy", np.stack([s[name] for s in steps]))
np.save(f"{sys.argv[3]}/labels.npy", np.random.RandomState(5).randint(0, 64, size=(2, B, S)).astype(np.int64))
PY
  run "$fam" none --recompute=none || continue
  for rc in selective selective:0; do
    if run "$fam" "$rc" --recompute=$rc; then
      if same_run "$T/$fam-none" "$T/$fam-$rc"; then
        ok "$fam --recompute=$rc: losses and weights bit-identical to none ($(grep -m1 '^step 1' "$T/$fam-$rc/log"))"
      else
        bad "$fam --recompute=$rc differs from none: $(grep '^step' "$T/$fam-$rc/log" | tr '\n' ' ') vs $(grep '^step' "$T/$fam-none/log" | tr '\n' ' ')"
      fi
    fi
  done
  if run "$fam" tp-none --gpus 2 --strategy tp && run "$fam" tp-sel --gpus 2 --strategy tp --recompute=selective; then
    if same_run "$T/$fam-tp-none" "$T/$fam-tp-sel"; then
      ok "$fam 2 ranks tp --recompute=selective: losses and weights bit-identical to tp none ($(grep -m1 '^step 1' "$T/$fam-tp-sel/log"))"
    else
      bad "$fam 2 ranks tp --recompute=selective differs from tp none"
    fi
  fi
  for g in 1 2; do
    tp=()
    [ $g = 2 ] && tp=(--gpus 2 --strategy tp)
    a0=$(arena "$fam" "${tp[@]}" --recompute=none) a1=$(arena "$fam" "${tp[@]}" --recompute=selective:0)
    a2=$(arena "$fam" "${tp[@]}" --recompute=selective) a3=$(arena "$fam" "${tp[@]}" --recompute=all)
    if [ -n "$a0" ] && [ -n "$a1" ] && [ -n "$a2" ] && [ -n "$a3" ] && [ "$a0" -gt "$a2" ] && [ "$a2" -gt "$a3" ] &&
       [ "$a0" -gt "$a1" ] && [ "$a1" -gt "$a3" ]; then
      ok "$fam $g device(s), 8x128 arena: none $a0 > selective $a2 > all $a3 bytes; selective:0 $a1"
    else
      bad "$fam $g device(s), 8x128 arena: none '$a0' selective '$a2' all '$a3' selective:0 '$a1' (want none > selective, selective:0 > all)"
    fi
  done
done
# the CUDA target: selective recomputation turns on the fused attention kernel in training
cu() { "$BUILD/galvc" "$T/gpt2.onnx" --batch $B --seq $S --train --target cuda --no-build -q "$@" 2>"$T/err" || bad "cuda galvc $*: $(head -2 "$T/err")"; }
if [ -d "$T/gpt2-none/w" ] && cu --recompute=none -o "$T/cu-none/" && cu --recompute=selective -o "$T/cu-sel/"; then
  n0=$(grep -c 'galv_attention<' "$T/cu-none/program.cu") n1=$(grep -c 'galv_attention<' "$T/cu-sel/program.cu")
  if [ "$n0" = 0 ] && [ "$n1" = 2 ]; then
    ok "gpt2 cuda training: fused attention kernels none $n0, selective $n1"
  else
    bad "gpt2 cuda training: fused attention kernels none $n0 (want 0), selective $n1 (want 2)"
  fi
  if ! have_cmd g++; then # a skipped part (tests/lib/require.sh): exit 77, a failure under GALV_REQUIRE_ALL=1
    :
  elif make -s -C "$T/cu-sel" emu >"$T/emu.log" 2>&1 &&
     "$T/cu-sel/program-emu" --batches "$T/gpt2.b" --steps 2 -o "$T/cu-sel/w" >"$T/cu-sel/log" 2>>"$T/emu.log"; then
    if r=$(python3 "$SRC/tests/train/compare.py" "$T/cu-sel/log" "$T/gpt2-none/log" "$T/cu-sel/w" "$T/gpt2-none/w" 1e-4 1e-5); then
      ok "gpt2 cuda --recompute=selective (make emu), 2 steps vs cpu none: $(echo "$r" | sed 's/torch/cpu-none/' | tr '\n' ' ')"
    else
      bad "gpt2 cuda --recompute=selective vs cpu none: $r"
    fi
  else
    bad "gpt2 cuda --recompute=selective: make emu / program-emu: $(tail -3 "$T/emu.log")"
  fi
fi
# --report-cost: the recomputed ops and the fused chains as the cost model prices them
rep() { "$BUILD/galvc" "$T/gpt2.onnx" --batch $B --seq $S --train --report-cost --fused-attention off --emit=ir -o /dev/null "$@" 2>/dev/null; }
r0=$(rep --target cuda --recompute=none) r1=$(rep --target cuda --recompute=selective) r2=$(rep --target cpu --recompute=selective)
if grep -q '^attention: 0 chains fused' <<<"$r0" && ! grep -q '^recomputation:' <<<"$r0" &&
   grep -q '^attention: 2 chains fused' <<<"$r1" && grep -q '^recomputation: 6 forward ops again' <<<"$r1" &&
   ! grep -q '^attention:' <<<"$r2" && grep -q '^recomputation: 6 forward ops again' <<<"$r2"; then
  ok "--report-cost: $(grep '^recomputation' <<<"$r1"); cuda: $(grep '^attention' <<<"$r1" | cut -d'(' -f1)"
else
  bad "--report-cost: cuda none '$(grep -E '^(attention|recomputation)' <<<"$r0")', cuda selective '$(grep -E '^(attention|recomputation)' <<<"$r1")', cpu selective '$(grep -E '^(attention|recomputation)' <<<"$r2")'"
fi
# errors: one line naming the option, exit 1
for spec in selective:h.9 selective:; do
  rc=0
  "$BUILD/galvc" "$T/gpt2.onnx" --batch $B --seq $S --train --recompute=$spec --emit=ir -q -o /dev/null 2>"$T/e" || rc=$?
  if [ "$rc" = 1 ] && [ "$(wc -l <"$T/e")" = 1 ] && grep -q "recompute: --recompute=$spec" "$T/e"; then
    ok "--recompute=$spec: $(cat "$T/e")"
  else
    bad "--recompute=$spec: exit $rc: $(cat "$T/e")"
  fi
done
# selective where every attention core is fused (the CPU target's default): one note that it recomputes nothing,
# the program recompute=none's; with the scores kept (--fused-attention off) no note
"$BUILD/galvc" "$T/gpt2.onnx" --batch $B --seq $S --train --recompute=selective --target cpu --emit=ir -o "$T/sf.mlir" \
  2>"$T/nf" || bad "selective, fused: $(cat "$T/nf")"
"$BUILD/galvc" "$T/gpt2.onnx" --batch $B --seq $S --train --recompute=none --target cpu --emit=ir -o "$T/nn.mlir" 2>/dev/null
"$BUILD/galvc" "$T/gpt2.onnx" --batch $B --seq $S --train --recompute=selective --target cpu --fused-attention off --emit=ir \
  -o /dev/null 2>"$T/nu"
if [ "$(grep -c '^galvc: note: --recompute=selective: every selected attention core is fused' "$T/nf")" = 1 ] &&
  ! grep -q "note:" "$T/nu" && cmp -s "$T/sf.mlir" "$T/nn.mlir"; then
  ok "selective with the attention fused: one note, the program recompute=none's; none with the scores kept"
else
  bad "selective with the attention fused: notes '$(grep note "$T/nf")' / '$(grep note "$T/nu")'; same as none: $(cmp -s "$T/sf.mlir" "$T/nn.mlir" && echo yes || echo no)"
fi
echo "train_recompute: $pass passed, $fail failed"
galv_exit "$fail"
