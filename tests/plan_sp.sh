#!/usr/bin/env bash
# Sequence parallelism chosen by the search (docs/planner.md "Search space",
# docs/sharding.md "Sequence parallelism"): the default search (`--train
# --gpus 4`, no strategy) on the tiny GPT-2 / Llama of tests/lib/tiny_lms.sh
# (2 layers, hidden 32, 4 heads, vocab 64; Llama with 4 key/value heads),
# AdamW (eps 1e-6), 4 CPU ranks:
#   - GPT-2, batch 2 x seq 32, --mesh tp=4, --memory-limit 380000: every plan
#     without sp is over the limit or slower; the search picks sp (per unit:
#     plan.json's units[].sp), no recomputation. The same plan with every
#     "sp" false (--plan) needs more than the limit, and the search without
#     sp in its space (GALV_PLAN_SP=off) falls back to a slower plan
#     (recomputation); --plan with the plan.json written gives the same step
#     and memory. Compiled and run for 2 steps = the single-device
#     program (losses and weights rtol 1e-4 / atol 1e-5), the bytes the
#     communicator counted = the prediction x 2 (tests/lib/comm_counted.py)
#     = plan.json's collective bytes x 2,
#     and the reduce_scatter + all_gather pairs in the collective table;
#   - Llama, batch 2 x seq 16, --mesh tp=4, no limit: sp is faster there (its elementwise
#     work on a quarter of the tokens outweighs the extra collectives' latency)
#     and chosen on the layers; the same plan without sp predicts a slower
#     step; 2 steps = one device, bytes counted = predicted;
#   - GPT-2, batch 1 x seq 8, one program (--pipeline-stages 1), no limit:
#     tp 4 is chosen and sp is not (it
#     saves almost nothing on 8 tokens and adds collectives): every unit
#     "sp": false, and the same plan with sp on every unit predicts a slower
#     step.
# The mesh is given (tp=4) where the premise is tp's: on these tiny models dp x
# tp with ZeRO-3 is faster than tp 4 (since the embedding gradient is a
# partial sum, gather_grad's rule), and at 16 tokens of GPT-2 sp no longer
# saves memory (the embedding tables' gradient all-reduce over the sequence
# split outweighs the activations), hence 32.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
export CFLAGS=-O0 # tiny programs
AD=(--eps 1e-6)
# build NAME MODEL B S GALVC_OPTIONS... (stderr in NAME.err, plan.json in NAME/)
build() {
  local n=$1 m=$2 b=$3 s=$4; shift 4
  timeout 300 "$BUILD/galvc" "$T/$m.onnx" --batch "$b" --seq "$s" --train "${AD[@]}" "$@" --target cpu -o "$T/$n/" 2>"$T/$n.err" </dev/null ||
    { bad "$n: galvc $*: $(grep -m3 error "$T/$n.err")"; return 1; }
}
run() { # NAME BATCHES: 2 training steps -> NAME.log, NAME.w
  local n=$1 exe=program
  [ -x "$T/$n/launch" ] && exe=launch
  timeout 300 "$T/$n/$exe" --batches "$2" --steps 2 -o "$T/$n.w" --comm-stats </dev/null >"$T/$n.log" 2>&1 ||
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
table() { sed -n 's/^galvc: spmd: \(all_reduce\|all_gather\|reduce_scatter\|all_to_all\) \+\([a-z,]*\) \+\(tensor<[^ ]*>\) \+\([0-9]*\)  \(.*\)$/\1 \2 \3 \4 \5/p' "$T/$1.err"; }
# field PLAN.JSON EXPR: a python expression over the plan p
field() { python3 -c "import json, sys; p = json.load(open(sys.argv[1])); print($2)" "$1"; }
# flip PLAN.JSON OUT.JSON true|false: the same plan with every unit's "sp" set
flip() { python3 -c "
import json, sys
p = json.load(open(sys.argv[1]))
for u in p['units']: u['sp'] = sys.argv[3] == 'true'
json.dump(p, open(sys.argv[2], 'w'), indent=1)" "$@"; }
# planned NAME MODEL B S OPTIONS...: --plan-only; prints "step_ns total_bytes" from the report
planned() {
  local n=$1 m=$2 b=$3 s=$4; shift 4
  timeout 300 "$BUILD/galvc" "$T/$m.onnx" --batch "$b" --seq "$s" --train "${AD[@]}" "$@" --target cpu --plan-only --plan-out "$T/$n.json" \
    2>"$T/$n.err" </dev/null || { echo "galvc failed: $(grep -m2 error "$T/$n.err")"; return 1; }
  field "$T/$n.json" "p['predicted']['step_ns'], p['memory_per_device']['total']"
}

. "$SRC/tests/lib/tiny_lms.sh"
tiny_lms "$T" 4
python3 - "$T" <<'PY'
import numpy as np, os, sys
t = sys.argv[1]
r = np.random.RandomState(7)
for name, b, s in (("b2s16", 2, 16), ("b2s8", 2, 8), ("b2s32", 2, 32)):
    os.makedirs(f"{t}/{name}")
    np.save(f"{t}/{name}/input_ids.npy", r.randint(0, 64, (2, b, s)).astype(np.int64))
    np.save(f"{t}/{name}/labels.npy", r.randint(0, 64, (2, b, s)).astype(np.int64))
PY

# chosen NAME MODEL B S BATCHES OPTIONS...: the default search's plan compiled, 2 steps = one device, bytes
# = predicted (the figures in $RES)
chosen() {
  local n=$1 m=$2 b=$3 s=$4 d=$5; shift 5
  build "$n-1" "$m" "$b" "$s" -q && run "$n-1" "$T/$d" || return 1
  build "$n" "$m" "$b" "$s" --gpus 4 "$@" && run "$n" "$T/$d" || return 1
  local by r
  if ! by=$(counted "$n" 2 2>&1); then bad "$n: bytes: $by"; return 1; fi
  # and = the planner's own figure (plan.json: bytes per device per step) x 2
  local pl
  pl=$(field "$T/$n/plan.json" "', '.join(f'{k} {2 * p[\"collectives\"][k][\"bytes\"]}' for k in ('all_reduce', 'all_gather', 'reduce_scatter', 'all_to_all'))")
  if [ "$pl" != "$by" ]; then bad "$n: bytes counted $by, plan.json x 2: $pl"; return 1; fi
  if ! r=$(same "$n-1" "$n" 2>&1); then bad "$n vs one device: $r"; return 1; fi
  RES="2 AdamW steps on 4 ranks = one device: $r; bytes counted = predicted = plan.json's x 2: $by"
}

# 1. GPT-2 under a memory limit: only sp fits without recomputation
L=380000
if chosen g-lim gpt2 2 32 b2s32 --mesh tp=4 --memory-limit $L; then
  P="$T/g-lim/plan.json"
  tp=$(field "$P" "p['tp_axis'], len(p['mesh']['shape']), p['recompute']")
  sp=$(field "$P" "sum(u['sp'] for u in p['units'][1:]), len(p['units']) - 1")
  mem=$(field "$P" "p['memory_per_device']['total']")
  step=$(field "$P" "p['predicted']['step_ns']")
  nrs=$(table g-lim | awk '$1 == "reduce_scatter" && $2 == "tp"' | wc -l)
  nag=$(table g-lim | awk '$1 == "all_gather" && $2 == "tp"' | wc -l)
  flip "$P" "$T/g-lim-off.json" false
  off=$(planned g-lim-off gpt2 2 32 --gpus 4 --plan "$T/g-lim-off.json")
  # one program (--pipeline-stages 1): without sp the default search now finds a pipeline of 1-device
  # recomputing stages under this limit (0.107 ms, also slower), whose plan.json has no units
  nosp=$(GALV_PLAN_SP=off planned g-nosp gpt2 2 32 --gpus 4 --mesh tp=4 --memory-limit $L --pipeline-stages 1)
  nosp_sp=$(field "$T/g-nosp.json" "sum(u['sp'] for u in p['units'])" 2>/dev/null)
  again=$(planned g-again gpt2 2 32 --gpus 4 --plan "$P") # --plan reproduces the choice: the same step and memory
  if [ "$tp" = "tp 1 none" ] && [ "$sp" = "2 2" ] && [ "$mem" -le $L ] && [ "$nrs" -ge 4 ] && [ "$nag" -ge 4 ] &&
     [ -n "$off" ] && [ "${off#* }" -gt $L ] && [ -n "$nosp" ] && [ "$nosp_sp" = 0 ] && [ "${nosp% *}" -gt "$step" ] && [ "$again" = "$step $mem" ] &&
     grep -q '^plan:   layers 0-1: tp(tp)+sp(tp)$' "$T/g-lim.err"; then
    ok "gpt2 b2 s32, tp=4, limit $L: the search picks tp 4 + sp on both layers ($step ns, $mem bytes; $nrs reduce_scatters, $nag all_gathers over tp); without sp the same plan needs ${off#* } bytes, and the search without sp picks a ${nosp% *} ns plan; --plan plan.json: the same step and memory; $RES"
  else
    bad "gpt2 b2 s32, tp=4, limit $L: tp '$tp', sp layers '$sp', memory $mem, $nrs reduce_scatters / $nag all_gathers; sp off: '$off'; search without sp: '$nosp' (sp units '$nosp_sp'), with: $step; --plan again: '$again'"
  fi
fi

# 2. Llama without a limit: sp is faster, chosen
if chosen l-free llama 2 16 b2s16 --mesh tp=4; then
  P="$T/l-free/plan.json"
  tp=$(field "$P" "p['tp_axis']")
  sp=$(field "$P" "sum(u['sp'] for u in p['units'][1:]), len(p['units']) - 1")
  step=$(field "$P" "p['predicted']['step_ns']")
  flip "$P" "$T/l-free-off.json" false
  off=$(planned l-free-off llama 2 16 --gpus 4 --plan "$T/l-free-off.json")
  if [ "$tp" != None ] && [ "$sp" = "2 2" ] && [ -n "$off" ] && [ "${off% *}" -gt "$step" ]; then
    ok "llama b2 s16, tp=4, no limit: the search picks sp on both layers (tp axis $tp, $step ns; the same plan without sp ${off% *} ns); $RES"
  else bad "llama b2 s16, tp=4: tp '$tp', sp layers '$sp', step $step, without sp '$off'"; fi
fi

# 3. GPT-2 on 8 tokens: sp does not help, not chosen
if on=$(planned g-small gpt2 1 8 --gpus 4 --pipeline-stages 1); then
  P="$T/g-small.json"
  tp=$(field "$P" "p['tp_axis']")
  sp=$(field "$P" "sum(u['sp'] for u in p['units'])")
  flip "$P" "$T/g-small-on.json" true
  alt=$(planned g-small-on gpt2 1 8 --gpus 4 --plan "$T/g-small-on.json")
  if [ "$tp" != None ] && [ "$sp" = 0 ] && [ -n "$alt" ] && [ "${alt% *}" -gt "${on% *}" ]; then
    ok "gpt2 b1 s8, no limit: tp over $tp without sp (${on% *} ns); the same plan with sp on every unit ${alt% *} ns"
  else bad "gpt2 b1 s8: tp '$tp', sp units '$sp', step '${on% *}', with sp '$alt'"; fi
else bad "gpt2 b1 s8: $on"; fi
echo "plan_sp: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
