#!/usr/bin/env bash
# The fastest step realised so far bounds the default search's later
# searches (docs/planner.md, "Planning time: counts, long programs and the
# fastest step so far"): galvc passes the fastest realised step of a plan that fits
# (gv_plan_opts.incumbent_ns) to each later search at a count other than
# its recomputation mode's first (more microbatches, the other modes past
# their first count), and the reduced search leaves out the mesh /
# strategy combinations whose compute or tp-communication bound, with and
# without sp, is 1 % or more above it. On a 12-layer GPT-2 (hidden 64, 4
# heads, vocab 64; batch 16 x seq 32) on 4 a100-80g devices, one program
# (--pipeline-stages 1), under three memory limits that make the search
# try more microbatches and the three recomputation modes:
#   - the report names the combinations left out and the step they were
#     bounded by;
#   - plan.json (but its planning time and candidate count) is the one the
#     search without the bound (GALV_PLAN_INCUMBENT=off) writes;
#   - fewer candidate programs are realised than without it.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
python3 "$SRC/examples/make_model.py" gpt2 -o "$T/g.onnx" --layers 12 --hidden 64 --heads 4 --vocab 64 --no-verify >/dev/null ||
  { echo "FAIL make_model"; exit 1; }
plan() { # NAME LIMIT [env...]
  local n=$1 lim=$2
  shift 2
  env "$@" timeout 300 "$BUILD/galvc" "$T/g.onnx" --batch 16 --seq 32 --train --eps 1e-6 --gpus 4 --cluster a100-80g \
    --pipeline-stages 1 --memory-limit "$lim" --plan-only --target cpu --plan-out "$T/$n.json" 2>"$T/$n.err" </dev/null
}
realised() { grep -o "[0-9]* candidate programs realised" "$1" | awk '{s += $1} END {print s + 0}'; }
for lim in 25000000 15000000 9000000; do
  if ! plan "on-$lim" "$lim"; then bad "limit $lim: galvc: $(grep -m2 error "$T/on-$lim.err")"; continue; fi
  if ! plan "off-$lim" "$lim" GALV_PLAN_INCUMBENT=off; then bad "limit $lim, bound off: $(grep -m2 error "$T/off-$lim.err")"; continue; fi
  left=$(grep -c "combinations left out, bounded above the fastest step realised so far" "$T/on-$lim.err")
  [ "$left" -ge 1 ] && ok "limit $lim: $left searches left combinations out ($(grep -m1 -o '[0-9]* mesh / strategy combinations left out[^;]*' "$T/on-$lim.err"))" ||
    bad "limit $lim: no search left a combination out"
  [ "$(grep -c 'left out, bounded' "$T/off-$lim.err")" = 0 ] || bad "limit $lim: GALV_PLAN_INCUMBENT=off still bounds"
  same=$(python3 - "$T/on-$lim.json" "$T/off-$lim.json" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
for p in (a, b):
    p.pop("planning_seconds", None), p.pop("candidates", None)
print("same" if a == b else f"{a.get('recompute')} {a['predicted']['step_ns']} vs {b.get('recompute')} {b['predicted']['step_ns']}")
PY
)
  [ "$same" = same ] && ok "limit $lim: the same plan.json as without the bound ($(python3 -c "import json; p = json.load(open('$T/on-$lim.json')); print(p.get('recompute'), p['predicted']['step_ns'], 'ns')"))" ||
    bad "limit $lim: plan.json differs from the search without the bound: $same"
  r1=$(realised "$T/on-$lim.err") r0=$(realised "$T/off-$lim.err")
  [ "$r1" -lt "$r0" ] && ok "limit $lim: $r1 candidate programs realised, $r0 without the bound" ||
    bad "limit $lim: $r1 realised with the bound, $r0 without"
done
echo "plan_incumbent: $pass passed, $fail failed"
[ "$fail" = 0 ]
