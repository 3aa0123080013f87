#!/usr/bin/env bash
# Uniform ZeRO patterns in the default training search (Megatron Table 1's
# grid points, bench/megatron.py column (iii), that the search missed).
# A. ZeRO-1 (docs/planner.md, "Search space":
# with microbatches, ZeRO-1 on every unit is one more candidate per
# combination beside the table's stages 2 and 3). The tiny GPT-2 of
# tests/lib/tiny_lms.sh (2 layers, hidden 32), batch 16 x seq 16, 2
# microbatches, 4 CPU ranks (cpu-local), AdamW:
#   - every uniform ZeRO stage priced as a fixed plan (--plan, dp=4): ZeRO-1
#     is the fastest (stage 1 reduces the gradient sums once per step, stage
#     2 reduce-scatters each microbatch's gradients, none updates the whole
#     parameters on every rank);
#   - the default search (no --zero-stages) chooses dp=4 with ZeRO-1 on the
#     layers, its step at most that fixed plan's; with --zero-stages 2,3 (the default
#     before) it chooses a slower plan without stage 1;
#   - with one microbatch (stage 1 dominated by stage 2: the same reductions,
#     more bytes, whole gradients) the default chooses no unit at stage 1;
#   - the chosen plan compiled: 2 AdamW steps on 4 ranks = one device.
# B. The repeated-layer path's memory of a uniform pattern (solve_reduced:
# its own realisations on the reduced programs, its own error once realised
# in full): Table 1 row 3's shape (7.5B, weight-free, plan-only: a few
# seconds), 128 x a100-80g, batch 512, dp=128, selective recomputation, one
# microbatch, a memory limit between the two's realised memory: ZeRO-2 is
# faster but over it, ZeRO-3 fits; the search
# returns a plan within the limit with ZeRO-3 units, at most the fixed
# `--strategy zero3` command's step (it said "no plan fits": the table
# priced ZeRO-3 with ZeRO-2's 16-bit working copies, and ZeRO-2's
# correction then left it out; then it chose ZeRO-3 on every unit; since
# the reduced programs' memory is estimated from r3's memory plan, a
# ZeRO-3 / ZeRO-2 mix that fits and is faster: 2050.9 vs 2093.1 ms).
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
export CFLAGS=-O0 # tiny programs
. "$SRC/tests/lib/tiny_lms.sh"
tiny_lms "$T"
python3 - "$T" <<'PY'
import numpy as np, os, sys
t = sys.argv[1]
r = np.random.RandomState(5)
os.makedirs(f"{t}/data")
np.save(f"{t}/data/input_ids.npy", r.randint(0, 64, (2, 16, 16)).astype(np.int64))
np.save(f"{t}/data/labels.npy", r.randint(0, 64, (2, 16, 16)).astype(np.int64))
PY
A=("$T/gpt2.onnx" --batch 16 --seq 16 --train --eps 1e-6 --target cpu)
field() { python3 -c "import json, sys; p = json.load(open(sys.argv[1])); print($2)" "$1"; }
# planned NAME OPTIONS...: --plan-only; prints "step_ns zero-stages-of-the-units mesh-shape"
planned() {
  local n=$1; shift
  timeout 300 "$BUILD/galvc" "${A[@]}" --gpus 4 "$@" --plan-only --plan-out "$T/$n.json" 2>"$T/$n.err" </dev/null ||
    { echo "galvc failed: $(grep -m2 error "$T/$n.err")"; return 1; }
  field "$T/$n.json" "p['predicted']['step_ns'], ''.join(str(u['zero']) for u in p['units']), 'x'.join(map(str, p['mesh']['shape']))"
}

# 1. every uniform stage as a fixed plan at 2 microbatches
declare -A fixed
for z in 0 1 2 3; do
  python3 -c "
import json, sys
json.dump({'mesh': {'axes': ['dp'], 'shape': [4]}, 'batch_axes': ['dp'], 'tp_axis': None, 'vocab_axis': None,
           'microbatches': 2, 'zero_reduce': 'once', 'units': [{'zero': $z} for _ in range(3)]}, open(sys.argv[1], 'w'))" "$T/z$z.json"
  r=$(planned "fixed$z" --plan "$T/z$z.json") || { bad "ZeRO-$z fixed: $r"; continue; }
  fixed[$z]=${r%% *}
done
if [ "${#fixed[@]}" = 4 ] && [ "${fixed[1]}" -lt "${fixed[0]}" ] && [ "${fixed[1]}" -lt "${fixed[2]}" ] && [ "${fixed[1]}" -lt "${fixed[3]}" ]; then
  ok "dp=4, 2 microbatches, every unit at one stage: ZeRO-0 ${fixed[0]}, ZeRO-1 ${fixed[1]}, ZeRO-2 ${fixed[2]}, ZeRO-3 ${fixed[3]} ns: ZeRO-1 the fastest"
else
  bad "the premise: ZeRO-1 the fastest uniform stage (0: ${fixed[0]:-?}, 1: ${fixed[1]:-?}, 2: ${fixed[2]:-?}, 3: ${fixed[3]:-?} ns)"
fi

# 2. the default search chooses it; without stage 1 in the space the choice is slower
def=$(planned def --microbatches 2) || bad "default search: $def"
old=$(planned old --microbatches 2 --zero-stages 2,3) || bad "--zero-stages 2,3: $old"
read -r ds dz dm <<<"$def"
read -r os oz _ <<<"$old"
# (the layers at stage 1, the step at most the fixed plan's: the outer unit may take another stage, e.g. 2, whose
# reduce-scatter of the embedding table's partial gradient sum, gather_grad's rule, is cheaper there)
if [ "${dz:1}" = 11 ] && [ "$dm" = 4 ] && [ -n "${fixed[1]:-}" ] && [ "$ds" -le "${fixed[1]}" ] && [[ "$oz" != *1* ]] &&
   [ "$os" -gt "$ds" ]; then
  ok "default search, 2 microbatches: dp=4 with ZeRO-1 on the layers (units $dz), $ds ns (the fixed ZeRO-1 plan: ${fixed[1]}); with --zero-stages 2,3: stages $oz, $os ns"
else
  bad "default search: '$def' (want dp 4, the layers at ZeRO 1, at most ${fixed[1]:-?} ns); --zero-stages 2,3: '$old' (want no stage 1, slower)"
fi

# 3. one microbatch: stage 1 is not a default choice
one=$(planned one --microbatches 1) || bad "one microbatch: $one"
read -r _ z1 _ <<<"$one"
if [ -n "$z1" ] && [[ "$z1" != *1* ]]; then ok "default search, 1 microbatch: ZeRO stages $z1 (no stage 1)"
else bad "default search, 1 microbatch: '$one' (want no unit at stage 1)"; fi

# 4. the chosen plan compiled: 2 AdamW steps on 4 ranks = one device
if timeout 300 "$BUILD/galvc" "${A[@]}" --microbatches 2 -q -o "$T/one/" 2>"$T/one.err" </dev/null &&
   timeout 300 "$BUILD/galvc" "${A[@]}" --gpus 4 --plan "$T/def.json" -o "$T/four/" 2>"$T/four.err" </dev/null; then
  exe=program
  [ -x "$T/four/launch" ] && exe=launch
  if timeout 120 "$T/one/program" --batches "$T/data" --steps 2 -o "$T/one.w" </dev/null >"$T/one.log" 2>&1 &&
     timeout 300 "$T/four/$exe" --batches "$T/data" --steps 2 -o "$T/four.w" </dev/null >"$T/four.log" 2>&1; then
    if r=$(python3 - "$T" "$SRC/tests/lib" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
from same_training import check
t = sys.argv[1]
print(check(f"{t}/one.log", f"{t}/four.log", f"{t}/one.w", f"{t}/four.w"))
PY
); then ok "the default search's ZeRO-1 plan on 4 ranks, 2 AdamW steps = one device: $r"
    else bad "4 ranks vs one device: $r"; fi
  else bad "run: $(grep -m3 -i error "$T/one.log" "$T/four.log")"; fi
else bad "compile: $(grep -m3 error "$T/one.err" "$T/four.err")"; fi

# 5. row 3's grid point
python3 "$SRC/examples/make_model.py" gpt2 -o "$T/r3.onnx" --layers 36 --hidden 4096 --heads 32 --vocab 51200 --max-pos 2048 \
  --no-weights --tie-embeddings --qkv-layout megatron --no-verify >/dev/null || bad "make_model 7.5B"
R3=("$T/r3.onnx" --train --no-weights --precision bf16 --gpus-per-node 8 --cluster a100-80g --seq 2048 --gpus 128 --batch 512
    --mesh dp=128 --recompute=selective --microbatches 1)
# fixed STAGE: "step_ns total_bytes" of --strategy zeroSTAGE
fixed_r3() {
  timeout 300 "$BUILD/galvc" "${R3[@]}" --strategy "zero$1" --report-cost -q -o "$T/r3-$1.mlir" </dev/null 2>&1 |
    sed -n 's/^predicted step: \([0-9]*\) ns.*/\1/p; s/^memory per device: .*total \([0-9]*\) of .*/\1/p' | tr '\n' ' '
}
read -r s2 m2 <<<"$(fixed_r3 2)"
read -r s3 m3 <<<"$(fixed_r3 3)"
# the limit between the two (ZeRO-2 needed 92.2 GB here, over the 80; since the overlap window frees each layer's
# whole gradients as its reduce-scatters complete it needs less, so the limit is set between the realisations)
LIM=$(( (${m2:-0} + ${m3:-0}) / 2 ))
timeout 300 "$BUILD/galvc" "${R3[@]}" --memory-limit "$LIM" --plan-only --plan-out "$T/r3.json" </dev/null 2>"$T/r3.err" ||
  bad "row 3 search: $(grep -m1 error "$T/r3.err")"
r=$(field "$T/r3.json" "p['predicted']['step_ns'], ''.join(sorted(set(str(u['zero']) for u in p['units']))), p['memory_per_device']['total']" 2>/dev/null)
read -r ss sz sm <<<"$r"
if [ -n "${s2:-}" ] && [ -n "${m3:-}" ] && [ "$s2" -lt "$s3" ] && [ "$m2" -gt "$m3" ] && [ "$m2" -le 80000000000 ] &&
   [[ "${sz:-}" == *3* ]] && [ "$ss" -le "$s3" ] && [ "$sm" -le "$LIM" ]; then
  ok "7.5B, dp=128, selective, 1 microbatch, limit $LIM: ZeRO-2 $s2 ns in $m2 bytes (over), ZeRO-3 $s3 ns in $m3 bytes; the search: ZeRO stages $sz, $ss ns, $sm bytes"
else
  bad "7.5B, dp=128, selective, limit $LIM: fixed ZeRO-2 '${s2:-} ${m2:-}', ZeRO-3 '${s3:-} ${m3:-}'; the search '$r' $(grep -m1 error "$T/r3.err")"
fi

echo "plan_uniform_zero: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
