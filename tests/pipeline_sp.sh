#!/usr/bin/env bash
# Pipeline stages compiled from --strategy dp,tp,sp (docs/pipeline.md,
# "Stage presets"): GPT-2 tiny (4 layers, hidden 64, heads 4, vocab 64, tied
# embeddings; batch 8 x seq 16, 4 microbatches), 2 stages of dp=2 x tp=2 on 8
# CPU ranks, Megatron's cuts (--layers blocks --stage-cuts equal), 1F1B.
# Checked:
#   - the stage programs run sequence parallelism: reduce-scatters over tp;
#     the first stage's embedding gradient all-gathers the tokens' gradient
#     over tp and all-reduces no table over tp (the table's pending sum a
#     sequence split would make; passes/propagate_sharding.c);
#   - the stage DP priced the stages as compiled: the first stage's stash per
#     microbatch as compiled == the DP's estimate, smaller than dp,tp's (sp
#     splits the norms' and residuals' activations over tp);
#   - the crossing values stay split over dp (sp's split of the tokens over
#     tp gathered at the return, dim 0's kept): no all-gather over dp at a
#     stage's return, and every rank reports its values kept split, the
#     bytes measured == planned;
#   - plan.json records stage_preset dp,tp,sp; --plan replays the pipeline;
#   - the default search (2 nodes x 4 devices, 0.2 Gb/s between them) plans
#     its candidate of 2 stages of 4 devices as dp,tp and again as dp,tp,sp,
#     each priced from its stage programs;
#   - the default search itself chooses dp,tp,sp stages (GPT-2 of 8 layers,
#     vocab 4096, 8 layer groups: 2 stages of dp=2 x tp=2) and moves its
#     cuts off the screen's (the slowest stage gives groups to its
#     neighbour while the step gets faster); compiled, the stages run 2
#     AdamW steps on 8 ranks == the single device;
#   - 2 AdamW steps on 8 ranks == the single device (rtol 1e-4), each rank's
#     tracked memory peak within 5 % of its stage plan's;
#   - the planner's own stage plans (no --strategy) with sp per layer
#     (GALV_PLAN_SP=always: searched in every stage plan): stage 0 takes sp,
#     faster than without; compiled with its sp units, replayed by --plan,
#     2 steps on 8 ranks == the single device, memory within 5 %;
#   - by default sp where memory binds a stage's plan: inference stages at
#     1,000,000 bytes per device take sp on stage 0 (faster than without),
#     and give the single device's outputs on 8 ranks.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
G="$BUILD/galvc"
m="$T/g.onnx"
python3 "$SRC/examples/make_model.py" gpt2 -o "$m" --layers 4 --hidden 64 --heads 4 --vocab 64 --no-verify >/dev/null ||
  { echo "FAIL make_model"; exit 1; }
python3 -c "
import numpy as np, os
r = np.random.RandomState(1); os.makedirs('$T/b')
np.save('$T/b/input_ids.npy', r.randint(0, 64, (2, 8, 16)).astype(np.int64))
np.save('$T/b/labels.npy', r.randint(0, 64, (2, 8, 16)).astype(np.int64))" || { echo "FAIL batches"; exit 1; }
# check_run ONE.log RUN.log [stages|memory]: the run's 2 losses == the single device's (rtol 1e-4); with "stages" also
# every rank's crossing values kept split (measured == planned) and tracked memory within 5 % of its stage plan (8
# ranks); with "memory" the tracked memory alone
check_run() {
  python3 - "$@" <<'PY'
import sys, re, numpy as np
def losses(p): return [float(x) for x in re.findall(r"^step \d+ loss (\S+)", open(p).read(), re.M)]
a, b = losses(sys.argv[1]), losses(sys.argv[2])
if len(a) != 2 or len(b) != 2 or not np.allclose(b, a, rtol=1e-4, atol=0): sys.exit(f"losses {b} != single device {a}")
msg = f"losses {b[0]:.8f} {b[1]:.8f} == single device"
if len(sys.argv) > 3 and sys.argv[3] == "memory":
    pc = [float(x) for x in re.findall(r"memory peak \d+ bytes \(tracker\), the stage plan's peak .*: ([-+0-9.]+)%", open(sys.argv[2]).read())]
    if len(pc) != 8 or max(abs(x) for x in pc) > 5: sys.exit(f"tracked memory against the stage plans: {pc} % (8 ranks, within 5 %)")
    msg += f"; memory {min(pc):+.2f} .. {max(pc):+.2f} % of the stage plans"
elif len(sys.argv) > 3:
    log = open(sys.argv[2]).read()
    xs = re.findall(r"cross-stage (\w+) bytes sent by this rank: (\d+) measured, (\d+) planned; .*values kept split over the batch (\d+), whole (\d+)", log)
    if len(xs) != 8 or any(m != p or (k, w) != ("1", "0") for _, m, p, k, w in xs):
        sys.exit(f"crossing values: {xs} (want 8 reports, measured == planned, 1 kept split, 0 whole)")
    pc = [float(x) for x in re.findall(r"memory peak \d+ bytes \(tracker\), the stage plan's peak .*: ([-+0-9.]+)%", log)]
    if len(pc) != 8 or max(abs(x) for x in pc) > 5: sys.exit(f"tracked memory against the stage plans: {pc} % (8 ranks, within 5 %)")
    msg += f"; crossing values kept split, {xs[0][1]} bytes per sender == planned; memory {min(pc):+.2f} .. {max(pc):+.2f} % of the stage plans"
print(msg)
PY
}
P=(--train --batch 8 --seq 16 --pipeline-stages 2 --gpus 8 --mesh dp=2,tp=2 --microbatches 4 --layers blocks --stage-cuts equal
   --target cpu)
if ! timeout 300 "$G" "$m" --input-shape input_ids=8x16 --train --target cpu -q -o "$T/one/" </dev/null 2>"$T/err" ||
   ! timeout 120 "$T/one/program" --batches "$T/b" --steps 2 -o "$T/one.w" </dev/null >"$T/one.log" 2>"$T/err"; then
  echo "FAIL single device: $(head -3 "$T/err")"; exit 1
fi
for st in dp,tp dp,tp,sp; do
  timeout 600 "$G" "$m" "${P[@]}" --strategy "$st" -o "$T/$st/" --plan-out "$T/$st.json" </dev/null >"$T/$st.out" 2>"$T/$st.err" ||
    { bad "galvc --strategy $st: $(grep -m2 -i error "$T/$st.err")"; }
done
E="$T/dp,tp,sp.err"
# the final compile's tables: the last two (stage 0's, then stage 1's)
tabs=$(grep -n 'spmd: collective  ' "$E" | tail -2 | head -1 | cut -d: -f1)
if [ -n "$tabs" ] && tail -n +"$tabs" "$E" | grep -q '^galvc: spmd: reduce_scatter  tp ' &&
   tail -n +"$tabs" "$E" | grep -q '^galvc: spmd: all_gather  *tp .*wte/Gather/grad$' &&
   ! tail -n +"$tabs" "$E" | grep -q '^galvc: spmd: all_reduce  *tp  *tensor<64x64xf32>.*wte/Gather/grad$'; then
  ok "the stages run sp: $(tail -n +"$tabs" "$E" | grep -c '^galvc: spmd: reduce_scatter  tp ') reduce-scatters over tp; the embedding gradient all-gathers the tokens' gradient, no table all-reduced"
else bad "sp in the stage programs: $(tail -n +"${tabs:-1}" "$E" | grep 'wte\|reduce_scatter' | head -4) ($(grep -c 'spmd: collective  ' "$E") tables in galvc's log; its last lines: $(tail -3 "$E" | tr '\n' ' '))"; fi
if [ -n "$tabs" ] && ! tail -n +"$tabs" "$E" | grep -q '^galvc: spmd: all_gather  *dp .* return$' &&
   tail -n +"$tabs" "$E" | grep -q '^galvc: spmd: all_gather  *tp .* return$'; then
  ok "the stages' crossing values: gathered over tp at the return, kept split over dp"
else bad "a crossing value gathered over dp: $(tail -n +"${tabs:-1}" "$E" | grep 'all_gather.* return$' | head -3)"; fi
stash() { sed -n 's/^galvc: stage 0: forward and backward entries, stash [0-9]* values, \([0-9]*\) bytes per microbatch (the stage DP.s estimate \([0-9]*\)).*/\1 \2/p' "$1"; }
read -r c e <<<"$(stash "$E")"
read -r c0 _ <<<"$(stash "$T/dp,tp.err")"
if [ -n "${c:-}" ] && [ "$c" = "$e" ] && [ -n "${c0:-}" ] && [ "$c" -lt "$c0" ]; then
  ok "stage 0's stash per microbatch $c bytes as compiled == the stage DP's estimate (dp,tp: $c0)"
else bad "stash: compiled ${c:-?}, estimated ${e:-?}, dp,tp ${c0:-?}"; fi
if grep -q '"stage_preset": "dp,tp,sp"' "$T/dp,tp,sp.json" &&
   timeout 600 "$G" "$m" --train --batch 8 --seq 16 --gpus 8 --target cpu --plan "$T/dp,tp,sp.json" --plan-only \
     --plan-out "$T/replay.json" </dev/null >/dev/null 2>"$T/err" &&
   python3 -c "import json,sys; a,b=(json.load(open(f))['pipeline'] for f in sys.argv[1:]); sys.exit(a!=b)" "$T/dp,tp,sp.json" "$T/replay.json"; then
  ok "plan.json records stage_preset dp,tp,sp; --plan replays the same pipeline"
else bad "plan.json / --plan: $(grep -m2 -i error "$T/err") $(grep -o '"stage_preset": "[^"]*"' "$T/dp,tp,sp.json")"; fi
if timeout 300 "$T/dp,tp,sp/launch" --batches "$T/b" --steps 2 -o "$T/sp.w" </dev/null >"$T/sp.log" 2>&1 &&
   msg=$(check_run "$T/one.log" "$T/sp.log" stages); then ok "8 ranks: $msg"; else bad "run: ${msg:-$(grep -m3 -i error "$T/sp.log")}"; fi
python3 -c "
import json
c = json.load(open('$SRC/data/clusters/cpu-local.json'))
c['name'] = 'cpu-2x4'; c['devices_per_node'] = 4; c['nodes'] = 2; c['inter_node']['bandwidth_gbps'] = 0.2
json.dump(c, open('$T/c24.json', 'w'), indent=1)" || { echo "FAIL cluster"; exit 1; }
if timeout 600 "$G" "$m" --train --batch 16 --seq 8 --target cpu --gpus 8 --gpus-per-node 4 --cluster "$T/c24.json" --layers 4 \
     --plan-only --plan-out "$T/ds.json" </dev/null >/dev/null 2>"$T/ds.err" &&
   a=$(sed -n 's/^galvc: pipeline candidate [0-9]* as dp,tp: 2 stages of 4 devices .*stage programs planned \([0-9.]*\) ms.*/\1/p' "$T/ds.err") &&
   b=$(sed -n 's/^galvc: pipeline candidate [0-9]* as dp,tp,sp: 2 stages of 4 devices .*stage programs planned \([0-9.]*\) ms.*/\1/p' "$T/ds.err") &&
   [ -n "$a" ] && [ -n "$b" ]; then
  ok "the default search plans 2 stages of dp=2 x tp=2 as dp,tp ($a ms) and as dp,tp,sp ($b ms); it chose: $(grep '^galvc: default search: chose' "$T/ds.err" | cut -c24-60)"
else bad "the default search's dp,tp,sp variant: $(grep -m3 'as dp,tp\|error' "$T/ds.err")"; fi
mv="$T/gv.onnx"
python3 "$SRC/examples/make_model.py" gpt2 -o "$mv" --layers 8 --hidden 64 --heads 4 --vocab 4096 --no-verify >/dev/null &&
python3 -c "
import numpy as np, os
r = np.random.RandomState(2); os.makedirs('$T/bv')
np.save('$T/bv/input_ids.npy', r.randint(0, 4096, (2, 16, 16)).astype(np.int64))
np.save('$T/bv/labels.npy', r.randint(0, 4096, (2, 16, 16)).astype(np.int64))" || { echo "FAIL model / batches"; exit 1; }
if timeout 300 "$G" "$mv" --input-shape input_ids=16x16 --train --target cpu -q -o "$T/vone/" </dev/null 2>"$T/err" &&
   timeout 120 "$T/vone/program" --batches "$T/bv" --steps 2 -o "$T/vone.w" </dev/null >"$T/vone.log" 2>"$T/err" &&
   timeout 600 "$G" "$mv" --train --batch 16 --seq 16 --target cpu --gpus 8 --gpus-per-node 4 --cluster "$T/c24.json" --layers 8 \
     -o "$T/vs/" </dev/null >"$T/vs.out" 2>"$T/vs.err"; then
  if grep -q '"stage_preset": "dp,tp,sp"' "$T/vs/plan.json" && grep -q '^galvc: default search: chose the pipeline' "$T/vs.err" &&
     grep -q '^galvc: pipeline chosen: [0-9]* groups* moved between stages' "$T/vs.err"; then
    ok "the default search chose dp,tp,sp stages and moved its cuts: $(grep '^galvc: pipeline chosen: [0-9]* group' "$T/vs.err" | cut -c24-48); $(grep -ho 'cuts at groups [0-9|]* of [0-9]*' "$T/vs.out" "$T/vs.err" | head -1)"
  else bad "the default search's choice: $(grep 'default search: chose\|pipeline chosen' "$T/vs.err" | head -3) $(grep -o '"stage_preset": "[^"]*"' "$T/vs/plan.json")"; fi
  if timeout 300 "$T/vs/launch" --batches "$T/bv" --steps 2 -o "$T/vs.w" </dev/null >"$T/vs.log" 2>&1 &&
     msg=$(check_run "$T/vone.log" "$T/vs.log"); then ok "the search's dp,tp,sp pipeline on 8 ranks: $msg"; else bad "its run: ${msg:-$(grep -m3 -i error "$T/vs.log")}"; fi
else bad "the default search on the 8-layer model: $(grep -m2 -i error "$T/vs.err" "$T/err")"; fi
# the planner's own stage plans (no --strategy: gv_plan_intra) with sp per layer (searched in every stage plan under
# GALV_PLAN_SP=always; by default only where memory binds the stage's plan): stage 0 takes it on its layers (its
# description "+sp"), priced faster than the search without sp (GALV_PLAN_SP=off); the stage compiled with the plan's
# sp units (reduce-scatters over tp in the final stage programs); --plan replays it; 2 steps on 8 ranks == the single
# device, each rank's tracked memory within 5 % of its stage plan's
PP=(--train --batch 8 --seq 16 --pipeline-stages 2 --gpus 8 --microbatches 4 --target cpu)
desc0() { grep -m1 '^  stage 0: groups' "$1" | sed 's/.* on [0-9x]* (\([^)]*\)).*/\1/'; }
stepms() { sed -n 's/^pipeline: predicted step \([0-9.]*\) ms.*/\1/p' "$1" | head -1; }
export GALV_PLAN_SP=always
if timeout 600 "$G" "$m" "${PP[@]}" -o "$T/own/" </dev/null >"$T/own.out" 2>"$T/own.err" &&
   GALV_PLAN_SP=off timeout 600 "$G" "$m" "${PP[@]}" --plan-only </dev/null >/dev/null 2>"$T/own0.err"; then
  d=$(desc0 "$T/own.err") d0=$(desc0 "$T/own0.err") s=$(stepms "$T/own.err") s0=$(stepms "$T/own0.err")
  nrs=$(sed -n '/^plan: wrote/,$p' "$T/own.err" | grep -c '^galvc: spmd: reduce_scatter  tp ')
  if [[ "$d" == *+sp* ]] && [[ "$d0" != *+sp* ]] && python3 -c "import sys; sys.exit(not float('$s') < float('$s0'))" &&
     [ "$nrs" -gt 0 ]; then
    ok "the planner's stage plans: stage 0 '$d' ($s ms; without sp '$d0', $s0 ms), compiled with $nrs reduce-scatters over tp"
  else bad "the planner's stage plans with sp: stage 0 '$d' $s ms, without sp '$d0' $s0 ms, $nrs reduce-scatters"; fi
  if timeout 600 "$G" "$m" --train --batch 8 --seq 16 --gpus 8 --target cpu --plan "$T/own/plan.json" --plan-only \
       --plan-out "$T/own_re.json" </dev/null >/dev/null 2>"$T/err" &&
     python3 -c "import json,sys; a,b=(json.load(open(f))['pipeline'] for f in sys.argv[1:]); sys.exit(a!=b)" "$T/own/plan.json" "$T/own_re.json"
  then ok "--plan replays the planner's sp stages: $(grep -o '"stage_strategies": [^]]*]' "$T/own_re.json")"
  else bad "--plan with the planner's sp stages: $(grep -m2 -i error "$T/err")"; fi
  if timeout 300 "$T/own/launch" --batches "$T/b" --steps 2 -o "$T/own.w" </dev/null >"$T/own.log" 2>&1 &&
     msg=$(check_run "$T/one.log" "$T/own.log" memory); then ok "the planner's sp stages on 8 ranks: $msg"
  else bad "their run: ${msg:-$(grep -m3 -i error "$T/own.log")}"; fi
else bad "the planner's stage plans: $(grep -m2 -i error "$T/own.err" "$T/own0.err")"; fi
unset GALV_PLAN_SP
# by default a stage plan searches sp where memory binds it: inference, batch 4 x seq 128, 2 stages of 4 devices, 2
# microbatches, 1,000,000 bytes per device (no stage plan of stage 0 fits without sp as fast): stage 0 takes sp (its
# description "+sp"), GALV_PLAN_SP=off does not and predicts a slower step; the stages on 8 ranks give the single
# device's outputs
. "$SRC/tests/lib/rank_compare.sh"
python3 -c "import numpy as np; np.save('$T/ids128.npy', np.random.RandomState(3).randint(0, 64, (4, 128)).astype(np.int64))"
single_program "$T/ione" "$m" "--input input_ids=$T/ids128.npy" --input-shape input_ids=4x128
PI=(--batch 4 --seq 128 --pipeline-stages 2 --gpus 8 --microbatches 2 --memory-limit 1000000 --target cpu)
if timeout 600 "$G" "$m" "${PI[@]}" -o "$T/inf/" </dev/null >/dev/null 2>"$T/inf.err" &&
   GALV_PLAN_SP=off timeout 600 "$G" "$m" "${PI[@]}" --plan-only </dev/null >/dev/null 2>"$T/inf0.err"; then
  d=$(desc0 "$T/inf.err") d0=$(desc0 "$T/inf0.err") s=$(stepms "$T/inf.err") s0=$(stepms "$T/inf0.err")
  if [[ "$d" == *+sp* ]] && [[ "$d0" != *+sp* ]] && python3 -c "import sys; sys.exit(not float('$s') < float('$s0'))"; then
    ok "memory binds stage 0's plan (inference, 1,000,000 bytes): '$d' ($s ms; without sp '$d0', $s0 ms)"
  else bad "sp where memory binds: stage 0 '$d' $s ms, without sp '$d0' $s0 ms"; fi
  if timeout 120 "$T/inf/launch" --input "input_ids=$T/ids128.npy" -o "$T/inf/res" >"$T/inf.out" 2>&1 &&
     msg=$(same_outputs "$T/ione/res" "$T/inf/res"); then ok "its stages on 8 ranks: $msg"
  else bad "its run: ${msg:-$(grep -m3 -i error "$T/inf.out")}"; fi
else bad "inference stages at 1,000,000 bytes: $(grep -m2 -i error "$T/inf.err" "$T/inf0.err")"; fi
echo "pipeline_sp: $pass passed, $fail failed"
[ "$fail" = 0 ]
