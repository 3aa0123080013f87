#!/usr/bin/env bash
# The layers' tensor-parallel degree and axis chosen per layer by the search
# (docs/planner.md "The layers' tp choice per unit"): the default training
# search with a fixed mesh (`--train --gpus 4 --mesh dp=2,tp=2 --recompute=none
# --microbatches 1`, the h100-sxm cost model: the tiny layers' tp all_reduces
# cost more than the compute they split, so a layer without tp is faster and
# one with tp smaller) on the tiny GPT-2 / Llama of tests/lib/tiny_lms.sh (2
# layers, hidden 32, 4 heads, vocab 64; Llama with 4 key/value heads), batch
# 8 x seq 8, AdamW (eps 1e-6), under memory limits where no uniform choice is
# both fastest and small enough:
#   - Llama at 420000 bytes: one layer dp x tp (degree 2) and the other dp
#     alone (degree 1, its weights whole): plan.json's units[].tp_axis "tp" /
#     null (either layer: the mirrored plans have the same step);
#   - GPT-2 at 460000 bytes: one layer degree 1, the other degree 2;
#   - Llama on 8 ranks, mesh dp=2 x a=2 x b=2, no limit, among the plans that
#     use every axis (GALV_PLAN_IDLE=off): one layer tp over a, the other
#     none, the outer unit vocab-parallel over b (or a and b swapped: they
#     are the same size).
# Per case: the layers' tp axes differ; both uniform variants of the plan
# (every layer at the one or the other choice, through --plan) are over the
# limit or slower; the search without the per-layer choice
# (GALV_PLAN_LAYER_TP=off) returns a slower plan; --plan with the written
# plan.json gives the same step and memory; compiled and run on 4 CPU ranks
# for 2 steps = the single-device program (losses and weights rtol 1e-4 /
# atol 1e-5), the bytes the communicator counted = the prediction x 2
# (tests/lib/comm_counted.py) = plan.json's collective bytes x 2; every
# collective over tp moves a value of the layer that has tp, or of the outer
# unit when that is vocab-parallel over tp (no reshard between layers of
# different degrees: Megatron blocks leave their output whole); the
# report names each layer's choice.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
export CFLAGS=-O0 # tiny programs
AD=(--eps 1e-6)
B=8 S=8
SEARCH=(--gpus 4 --mesh dp=2,tp=2 --cluster h100-sxm --recompute=none --microbatches 1)
build() { # NAME MODEL OPTIONS...
  local n=$1 m=$2; shift 2
  timeout 300 "$BUILD/galvc" "$T/$m.onnx" --batch $B --seq $S --train "${AD[@]}" "$@" --target cpu -o "$T/$n/" 2>"$T/$n.err" </dev/null ||
    { bad "$n: galvc $*: $(grep -m3 error "$T/$n.err")"; return 1; }
}
run() { # NAME: 2 training steps -> NAME.log, NAME.w
  local n=$1 exe=program
  [ -x "$T/$n/launch" ] && exe=launch
  timeout 300 "$T/$n/$exe" --batches "$T/b" --steps 2 -o "$T/$n.w" --comm-stats </dev/null >"$T/$n.log" 2>&1 ||
    { bad "$n: run: $(grep -m3 error "$T/$n.log")"; return 1; }
}
same() { # REF RUN: losses and weights
  python3 - "$T" "$1" "$2" "$SRC/tests/lib" <<'PY'
import sys
sys.path.insert(0, sys.argv[4])
from same_training import check
t, a, b = sys.argv[1:4]
print(check(f"{t}/{a}.log", f"{t}/{b}.log", f"{t}/{a}.w", f"{t}/{b}.w"))
PY
}
counted() { python3 "$SRC/tests/lib/comm_counted.py" "$T/$1.log" "$2"; }
field() { python3 -c "import json, sys; p = json.load(open(sys.argv[1])); print($2)" "$1"; }
# planned NAME MODEL OPTIONS...: --plan-only; prints "step_ns total_bytes" (or "none" when no plan fits)
planned() {
  local n=$1 m=$2; shift 2
  timeout 300 "$BUILD/galvc" "$T/$m.onnx" --batch $B --seq $S --train "${AD[@]}" "$@" --target cpu --plan-only --plan-out "$T/$n.json" \
    2>"$T/$n.err" </dev/null || { grep -q 'no plan fits' "$T/$n.err" && echo none && return 0; echo "galvc failed: $(grep -m2 error "$T/$n.err")"; return 1; }
  field "$T/$n.json" "p['predicted']['step_ns'], p['memory_per_device']['total']"
}
# uniform PLAN.JSON OUT.JSON AXIS|null: the plan with every layer at one tp choice
uniform() { python3 -c "
import json, sys
p = json.load(open(sys.argv[1]))
a = None if sys.argv[3] == 'null' else sys.argv[3]
for u in p['units'][1:]:
    u['tp_axis'] = a
    if a != p['tp_axis']: u['sp'] = False
json.dump(p, open(sys.argv[2], 'w'), indent=1)" "$@"; }

. "$SRC/tests/lib/tiny_lms.sh"
tiny_lms "$T" 4
python3 - "$T" <<'PY'
import numpy as np, os, sys
t = sys.argv[1]
r = np.random.RandomState(11)
os.makedirs(f"{t}/b")
np.save(f"{t}/b/input_ids.npy", r.randint(0, 64, (2, 8, 8)).astype(np.int64))
np.save(f"{t}/b/labels.npy", r.randint(0, 64, (2, 8, 8)).astype(np.int64))
PY

for fam in gpt2 llama; do build "$fam-1" "$fam" -q && run "$fam-1"; done

# check_case NAME MODEL LIMIT AXIS0 AXIS1 (plan.json's tp_axis of layers 0 and 1: an axis name or None; LIMIT 0: none)
check_case() {
  local n=$1 m=$2 lim=$3 a0=$4 a1=$5
  local got LIM=()
  [ "$lim" != 0 ] && LIM=(--memory-limit "$lim")
  got=$(planned "$n" "$m" "${SEARCH[@]}" "${LIM[@]}") || { bad "$n: $got"; return; }
  local p="$T/$n.json" step=${got% *} mem=${got#* }
  local axes
  axes=$(field "$p" "' '.join(str(u.get('tp_axis', p['tp_axis'])) for u in p['units'][1:])")
  # (AXIS0 may list axes of equal size as A|B: the plan is the same up to their names)
  # (either layer may take the tp choice: the two are the same block, so the mirrored plans have the same step and
  # the search keeps the one of less memory, which depends on the neighbours' shardings, e.g. Llama 165835 ns at
  # 395972 bytes with layer 1 at tp against 398980 with layer 0 since rotary slice gradients stay batch-split)
  if ! [[ "$axes" =~ ^($a0)\ ($a1)$ || "$axes" =~ ^($a1)\ ($a0)$ ]]; then
    bad "$n: layers' tp axes '$axes', want '$a0 $a1' or '$a1 $a0' ($(grep 'plan:   ' "$T/$n.err" | tr '\n' ' '))"; return; fi
  a0=${axes% *} a1=${axes#* }
  ok "$n: the search at --memory-limit $lim (0: none) on ${SEARCH[*]:0:4} gives layer 0 tp_axis $a0, layer 1 $a1: step $step ns, $mem bytes ($(grep 'plan:   layer' "$T/$n.err" | sed 's/plan: *//' | tr '\n' ';'))"
  # the report names each layer's axes
  local r0 r1
  r0=$(grep -c "plan:   layer 0: .*" "$T/$n.err") r1=$(grep -c "plan:   layer 1: .*" "$T/$n.err")
  [ "$r0" = 1 ] && [ "$r1" = 1 ] && ok "$n: report lists layer 0 and layer 1 apart" || bad "$n: report: $(grep 'plan:   ' "$T/$n.err" | tr '\n' ' ')"
  # every uniform variant is over the limit or slower (with a limit: without one, the 3-axis case searched with
  # GALV_PLAN_IDLE=off, every layer at none leaves an axis idle, a plan outside that space)
  local t u us um
  for t in "$a0" "$a1"; do
    [ "$lim" = 0 ] && break
    [ "$t" = None ] && u=null || u=$t
    uniform "$p" "$T/$n-u$u.json" "$u"
    us=$(planned "$n-u$u" "$m" "${SEARCH[@]}" --plan "$T/$n-u$u.json") || { bad "$n uniform $u: $us"; continue; }
    um=${us#* } us=${us% *}
    if [ "$um" -gt "$lim" ] || [ "$us" -gt "$step" ]; then ok "$n: every layer at $u: $us ns, $um bytes (over the limit or slower)"
    else bad "$n: every layer at $u: $us ns, $um bytes fits and is no slower than $step"; fi
  done
  # the search without the per-layer choice: slower (or nothing fits)
  local off
  off=$(GALV_PLAN_LAYER_TP=off planned "$n-off" "$m" "${SEARCH[@]}" "${LIM[@]}") || { bad "$n off: $off"; return; }
  if [ "$off" = none ] || [ "${off% *}" -gt "$step" ]; then ok "$n: without the per-layer choice: $off (slower)"
  else bad "$n: without the per-layer choice $off, not slower than $step"; fi
  # --plan replays it
  local again
  again=$(planned "$n-again" "$m" "${SEARCH[@]}" --plan "$p") || { bad "$n replay: $again"; return; }
  [ "$again" = "$got" ] && ok "$n: --plan replays it: $again" || bad "$n: --plan gives $again, the search $got"
  # compiled, run on 4 ranks = one device, bytes counted = predicted
  local d="$n-run" r by want
  build "$d" "$m" "${SEARCH[@]}" --plan "$p" --dump-ir-after=spmd-partition --dump-dir "$T/$d.ir" && run "$d" || return
  if ! by=$(counted "$d" 2 2>&1); then bad "$d: bytes: $by"; return; fi
  want=$(field "$p" "', '.join(f'{k} {2 * p[\"collectives\"][k][\"bytes\"] if k in p[\"collectives\"] else 0}' for k in ('all_reduce', 'all_gather', 'reduce_scatter', 'all_to_all'))")
  if r=$(same "$m-1" "$d" 2>&1) && [ "$by" = "$want" ]; then ok "$n: ${SEARCH[1]} ranks, 2 steps = one device: $r; bytes counted = predicted = plan.json x 2: $by"
  else bad "$n: $r; bytes counted $by, plan.json x 2 $want"; fi
  # no reshard at the boundary: every collective over the layer's tp axis moves a value of the layer that has it
  # (the unit of the op that made the value it moves, through chains of collectives: a block's output sum is
  # reduced where the next layer reads it; a parameter's gather is named by its reader), or, when the outer unit
  # is vocab-parallel over that axis, of the outer unit
  local tl=0 cl ax=$a0 vax
  [ "$a0" = None ] && tl=1 ax=$a1
  vax=$(field "$p" "p['vocab_axis']")
  cl=$(python3 - "$T/$d.ir"/*-spmd-partition.mlir "$ax" <<'PY'
import re, sys, collections
ir, ax = sys.argv[1], sys.argv[2]
loc, src, coll = {}, {}, []
for l in open(ir):
    m = re.match(r'\s*(%[0-9]+)(?::[0-9]+)? = "galv\.([a-z_0-9]+)"\(([^)]*)\).* loc\("([^"]*)"', l)
    if not m: continue
    v, op, args, lc = m.groups()
    loc[v] = lc
    if op in ('all_reduce', 'all_gather', 'reduce_scatter', 'all_to_all'):
        a = re.search(r'axes = \[([^\]]*)\]', l).group(1).replace('"', '').replace(' ', '').split(',')
        src[v] = args.split(',')[0].strip()
        coll.append((v, a))
def unit(lc):
    m = re.search(r'(?:h|layers)[./]([0-9]+)[./]', lc)
    return 'layer' + m.group(1) if m else 'outer'
c = collections.Counter()
for v, a in coll:
    if ax not in a: continue
    w = v
    while w in src and src[w] in loc: w = src[w]  # the first producer that is no collective (a block argument: the reader)
    c[unit(loc[w])] += 1
print(len(coll), ' '.join(f'{k}:{v}' for k, v in sorted(c.items())))
PY
)
  local units=${cl#* } u okk=1
  for u in $units; do
    case ${u%%:*} in layer$tl) ;; outer) [ "$vax" = "$ax" ] || okk=0 ;; *) okk=0 ;; esac
  done
  if [ "$okk" = 1 ] && [[ " $units" == *" layer$tl:"* ]] && [ "${cl%% *}" -gt 0 ]; then
    ok "$n: collectives over $ax by the unit of the value they move: $units; none of another layer (the outer unit's vocab axis: $vax; ${cl%% *} collectives in the program)"
  else bad "$n: collectives over $ax '$units' (want layer$tl, and outer only when it is vocab-parallel over $ax (it is over $vax); ${cl%% *} in the program)"; fi
}

check_case llama-deg llama 420000 tp None
check_case gpt2-deg gpt2 460000 None tp
# a 3-axis mesh on 8 ranks, no limit, in the space of plans that use every axis (GALV_PLAN_IDLE=off: on these tiny
# layers replicating on every axis is fastest, 1589 ns, a plan with idle axes): Llama's layer 0 tp over a, layer 1 none
# (the outer unit vocab-parallel over b)
export GALV_PLAN_IDLE=off
SEARCH=(--gpus 8 --mesh dp=2,a=2,b=2 --cluster h100-sxm --recompute=none --microbatches 1)
check_case llama-3axes llama 0 'a|b' None
unset GALV_PLAN_IDLE
echo "plan_layer_tp: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
