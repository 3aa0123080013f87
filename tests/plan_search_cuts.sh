#!/usr/bin/env bash
# Work the default search leaves out, each against the search without it
# (docs/planner.md, "Planning time: tables not made, counts not probed,
# stages bounded"):
#   A. a pipeline candidate's stage searches are bounded by its step to beat
#      per microbatch (gv_plan_opts.stage_incumbent_ns): on a weight-free
#      24-layer GPT (hidden 2048, vocab 51200) on 64 a100-80g, batch 512 x
#      seq 2048, bf16 training, a candidate's line says its stage searches
#      left combinations out; GALV_PLAN_INCUMBENT=off leaves none out; the
#      same plan.json.
#   B. a count a probe shows cannot fit is not probed: a 12-layer GPT-2
#      (hidden 64, seq 512) on 8 devices, batch 96, 16 MB per device, one
#      program: count 12 is skipped after the probe of 1 ("cannot fit
#      either ... not probed"); with GALV_COUNT_SKIP_OFF=1 it is probed and
#      fits nothing (what the skip claimed), and plan.json is the same.
#   C. a combination whose smallest pattern is over the limit gets no table
#      (GALV_PLAN_DEBUG: "no table"); with GALV_PLAN_NOFIT=off every table
#      is made: the same plan.json, more realisations made.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
same_json() { # A B: plan.json equal but the planning time and candidate count
  python3 - "$1" "$2" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
for p in (a, b):
    p.pop("planning_seconds", None), p.pop("candidates", None)
print("same" if a == b else "differ")
PY
}
made() { # realisations made: realised less those read from earlier ones
  python3 - "$1" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
r = sum(int(x) for x in re.findall(r"(\d+) candidate programs realised", t))
k = sum(int(x) for x in re.findall(r"(\d+) realisations read from earlier ones", t))
print(r - k)
PY
}

# A. the stage searches' bound
python3 "$SRC/examples/make_model.py" gpt2 -o "$T/g.onnx" --layers 24 --hidden 2048 --heads 16 --vocab 51200 --max-pos 2048 \
  --no-weights --tie-embeddings --qkv-layout megatron --no-verify >/dev/null || { echo "FAIL make_model"; exit 1; }
for e in on off; do
  GALV_PLAN_INCUMBENT=$e timeout 300 "$BUILD/galvc" "$T/g.onnx" --train --plan-only --no-weights --precision bf16 --gpus 64 \
    --gpus-per-node 8 --cluster a100-80g --batch 512 --seq 2048 --plan-out "$T/a-$e.json" </dev/null >/dev/null 2>"$T/a-$e.err" ||
    bad "A, GALV_PLAN_INCUMBENT=$e: $(grep -m1 error "$T/a-$e.err")"
done
line=$(grep -m1 "^galvc: pipeline candidate [0-9]*: .*its stage searches left [0-9]* mesh / strategy combinations out" "$T/a-on.err")
[ -n "$line" ] && ok "A: $(echo "$line" | grep -o 'candidate [0-9]*:' ) $(echo "$line" | grep -o 'its stage searches left [0-9]* mesh / strategy combinations out')" ||
  bad "A: no candidate's stage searches left a combination out"
grep -q "its stage searches left" "$T/a-off.err" && bad "A: GALV_PLAN_INCUMBENT=off still bounds the stage searches" ||
  ok "A: none left out with GALV_PLAN_INCUMBENT=off"
[ "$(same_json "$T/a-on.json" "$T/a-off.json")" = same ] && ok "A: the same plan.json as without the bound" ||
  bad "A: plan.json differs from the search without the bound"

# B. counts not probed
python3 "$SRC/examples/make_model.py" gpt2 -o "$T/s.onnx" --layers 12 --hidden 64 --heads 4 --vocab 64 --max-pos 512 --no-verify \
  >/dev/null || { echo "FAIL make_model"; exit 1; }
runs() { # NAME [env...]
  local n=$1
  shift
  env "$@" timeout 300 "$BUILD/galvc" "$T/s.onnx" --batch 96 --seq 512 --train --eps 1e-6 --gpus 8 --cluster a100-80g \
    --pipeline-stages 1 --memory-limit 16000000 --plan-only --target cpu --plan-out "$T/$n.json" </dev/null >/dev/null 2>"$T/$n.err" ||
    bad "$n: $(grep -m1 error "$T/$n.err")"
}
runs b-on
runs b-off GALV_COUNT_SKIP_OFF=1
skip=$(grep -m1 "^galvc: 12 microbatches cannot fit either (the least need here, [0-9]* bytes, x 1 / 12 is over the limit 16000000): not probed" "$T/b-on.err")
[ -n "$skip" ] && ok "B: ${skip#galvc: }" || bad "B: count 12 was not skipped"
grep -q "^galvc: no plan fits with 12 microbatches" "$T/b-on.err" && bad "B: count 12 probed though skipped"
if grep -q "cannot fit either" "$T/b-off.err"; then bad "B: GALV_COUNT_SKIP_OFF=1 still skips"
elif grep -q "^galvc: no plan fits with 12 microbatches" "$T/b-off.err"; then ok "B: probed without the skip, count 12 fits no plan"
else bad "B: without the skip, count 12 was not found to fit nothing: $(grep '12 microbatch' "$T/b-off.err" | head -3)"; fi
[ "$(same_json "$T/b-on.json" "$T/b-off.json")" = same ] && ok "B: the same plan.json as without the skip" ||
  bad "B: plan.json differs from the search without the skip"

# C. tables not made
runs c-on GALV_PLAN_DEBUG=1
runs c-off GALV_PLAN_DEBUG=1 GALV_PLAN_NOFIT=off
n=$(grep -c "^plan-debug: smallest pattern (stage [0-9]*\(, sp\)\?) needs [0-9]* bytes, over [0-9]*: no table" "$T/c-on.err")
[ "$n" -ge 1 ] && ok "C: $n combinations without a table (their smallest pattern over the limit)" || bad "C: no combination left without a table"
grep -q "no table" "$T/c-off.err" && bad "C: GALV_PLAN_NOFIT=off still leaves tables out"
[ "$(same_json "$T/c-on.json" "$T/c-off.json")" = same ] && ok "C: the same plan.json as with every table made" ||
  bad "C: plan.json differs from the search with every table made"
m1=$(made "$T/c-on.err") m0=$(made "$T/c-off.err")
[ "$m1" -lt "$m0" ] && ok "C: $m1 realisations made, $m0 with every table" || bad "C: $m1 realisations made, $m0 with every table"
echo "plan_search_cuts: $pass passed, $fail failed"
[ "$fail" = 0 ]
