#!/usr/bin/env bash
# A pipeline stage input that carries no batch (docs/pipeline.md, "Stage
# inputs without a batch"): GPT-2's causal mask at seq > 1024 (seq x seq,
# more than fold-constants materialises) is made in the first stage and
# sent to every later stage that runs attention. The stage planner split
# every data input's dim 0 over dp, and a dp the seq does not divide made
# every dp plan of such a stage inapplicable: Megatron Table 1's 145.6B and
# 310B rows (dp = 24 and 15, seq 2048) got "no partition fits" even with
# the memory limit lifted. Here GPT-2 tiny (2 layers, hidden 8, max-pos
# 1025) at batch 4 x seq 1025, 2 microbatches, 4 layer groups, 4 stages of
# --mesh dp=2,tp=2 --strategy dp,tp (1025 is odd): --plan-only
#   - plans 4 stages (the stages after the first receive the mask whole),
#     and under GALV_PLAN_DEBUG=1 every stage range costed has a plan;
#   - under a memory limit no partition fits, one error line naming the
#     binding stage (its groups, devices and bytes, rc 1), its states and
#     its saved bytes per microbatch in flight; 1 MiB under that figure
#     fails too (a lower bound over the plans searched: at the figure
#     itself a stage's planner may choose a faster plan that needs more,
#     docs/pipeline.md); with --microbatches auto still one error line.
# Planning only: the CPU and CUDA targets do not compile the unfolded mask
# (galv.constant_of_shape), so seq > 1024 GPTs plan but do not build.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }

m="$T/gpt2.onnx"
python3 "$SRC/examples/make_model.py" gpt2 -o "$m" --layers 2 --hidden 8 --heads 2 --vocab 64 --max-pos 1025 --no-verify \
  >/dev/null || { echo "FAIL make_model"; exit 1; }
run() {
  timeout 120 "$BUILD/galvc" "$m" --batch 4 --seq 1025 --train --pipeline-stages 4 --layers 4 --microbatches 2 --schedule 1f1b \
    --gpus 16 --mesh dp=2,tp=2 --strategy dp,tp --plan-only "$@"
}

if ! GALV_PLAN_DEBUG=1 run >"$T/out" 2>"$T/err"; then
  bad "4 stages of dp=2 x tp=2 at seq 1025: $(grep -m2 error "$T/err")"
else
  n=$(grep -c '^plan-debug: stage groups .*: planned, ' "$T/err")
  nop=$(grep -c '^plan-debug: stage groups .*: no plan' "$T/err")
  line=$(grep -m1 '^pipeline: 4 stages, 2 microbatches, step' "$T/err")
  if [ -n "$line" ] && [ "$n" -gt 0 ] && [ "$nop" = 0 ] && grep -q '^  stage 3: groups 3-3 on 1x4 (dp=2' "$T/err"; then
    ok "4 stages of dp=2 x tp=2 at seq 1025: $line; $n stage ranges planned, none without a plan"
  else
    bad "4 stages of dp=2 x tp=2 at seq 1025: '$line', $n ranges planned, $nop without a plan: $(grep 'no plan' "$T/err" | head -3)"
  fi
fi

# the memory bound: one line naming the binding stage; its figure is the least limit that plans
if run -q --memory-limit 60000000 >"$T/out" 2>"$T/err"; then
  bad "--memory-limit 60000000: planned"
else
  rc=$?
  fig=$(sed -n 's/.*still needs [0-9.]* GiB (\([0-9]*\) bytes) in groups [0-9]*-[0-9]* on 4 devices (.*/\1/p' "$T/err")
  if [ "$rc" = 1 ] && [ "$(wc -l <"$T/err")" = 1 ] && [ -n "$fig" ]; then
    ok "--memory-limit 60000000: rc 1, $(cat "$T/err")"
    # the figure counts the stage's saved bytes per microbatch in flight (before: its plan's memory alone, 0 saved)
    if grep -q 'GiB states + 2 x 0.000 GiB saved' "$T/err"; then bad "the binding stage's saved bytes are not counted"
    else ok "the figure counts the binding stage's saved bytes"; fi
    if run -q --memory-limit $((fig - 1048576)) >/dev/null 2>"$T/err2"; then bad "--memory-limit $((fig - 1048576)): plans"
    else ok "--memory-limit $((fig - 1048576)) (1 MiB under): $(grep -c 'no partition fits' "$T/err2") error line"; fi
  else
    bad "--memory-limit 60000000: rc $rc, $(wc -l <"$T/err") lines: $(head -3 "$T/err")"
  fi
fi
# --microbatches auto under a limit nothing fits: one error line (each count tried once printed its own), naming
# the most microbatches' binding stage
if timeout 120 "$BUILD/galvc" "$m" --batch 4 --seq 1025 --train --pipeline-stages 4 --layers 4 --microbatches auto \
  --schedule 1f1b --gpus 16 --mesh dp=2,tp=2 --strategy dp,tp --plan-only -q --memory-limit 60000000 >"$T/out" 2>"$T/err"; then
  bad "--microbatches auto --memory-limit 60000000: planned"
elif [ "$(wc -l <"$T/err")" = 1 ] && grep -q 'no partition fits.* x [0-9.]* GiB saved per microbatch in flight)$' "$T/err"; then
  ok "--microbatches auto --memory-limit 60000000: one error line"
else bad "--microbatches auto --memory-limit 60000000: $(wc -l <"$T/err") lines: $(head -c 600 "$T/err")"; fi
echo "pipeline_nobatch: $pass passed, $fail failed"
[ "$fail" = 0 ]
