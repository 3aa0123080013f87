#!/usr/bin/env bash
# ZeRO-1 in the default training search (docs/planner.md, "Search space":
# with microbatches, ZeRO-1 on every unit is one more candidate per
# combination beside the table's stages 2 and 3). The tiny GPT-2 of
# tests/lib/tiny_lms.sh (2 layers, hidden 32), batch 16 x seq 16, 2
# microbatches, 4 CPU ranks (cpu-local), AdamW:
#   - every uniform ZeRO stage priced as a fixed plan (--plan, dp=4): ZeRO-1
#     is the fastest (stage 1 reduces the gradient sums once per step, stage
#     2 reduce-scatters each microbatch's gradients, none updates the whole
#     parameters on every rank);
#   - the default search (no --zero-stages) chooses dp=4 with ZeRO-1 on every
#     unit, its step that fixed plan's; with --zero-stages 2,3 (the default
#     before) it chooses a slower plan without stage 1;
#   - with one microbatch (stage 1 dominated by stage 2: the same reductions,
#     more bytes, whole gradients) the default chooses no unit at stage 1;
#   - the chosen plan compiled: 2 AdamW steps on 4 ranks = one device.
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
if [ "$dz" = 111 ] && [ "$dm" = 4 ] && [ "$ds" = "${fixed[1]:-}" ] && [[ "$oz" != *1* ]] && [ "$os" -gt "$ds" ]; then
  ok "default search, 2 microbatches: dp=4 with ZeRO-1 on every unit, $ds ns (the fixed plan's); with --zero-stages 2,3: stages $oz, $os ns"
else
  bad "default search: '$def' (want dp 4, ZeRO 111, ${fixed[1]:-?} ns); --zero-stages 2,3: '$old' (want no stage 1, slower)"
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

echo "plan_zero1: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
