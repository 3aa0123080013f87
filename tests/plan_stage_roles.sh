#!/usr/bin/env bash
# A tied head in a pipeline's last stage (docs/planner.md, "Search space": the outer unit's roles): the stage holds
# no gather of the embedding, only the head's `x @ transpose(wte)`, and the planner's outer unit splits the
# parameter's vocabulary dim there too (before, the head ran whole on every tp rank). Checked on a tied GPT-2 tiny
# cut into 2 stages of one block each (--layers blocks --stage-cuts equal) on 2 x tp=2: the last stage's last
# realised program (GALV_PLAN_DEBUG=3's per-op tables) computes vocab / 2 head columns per rank; the compiled
# pipeline trains 2 AdamW steps equal to one device (4 CPU ranks).
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
. "$SRC/tests/lib/rank_compare.sh"

m="$T/gpt2t.onnx"
python3 "$SRC/examples/make_model.py" gpt2 -o "$m" --layers 2 --hidden 32 --heads 4 --vocab 64 --tie-embeddings \
  --qkv-layout megatron --no-verify >/dev/null || { echo "FAIL make_model"; exit 1; }
lm_batches "$T/b" 8 8
opts=(--batch 8 --seq 8 --train --pipeline-stages 2 --microbatches 2 --gpus 4 --strategy dp,tp --mesh dp=1,tp=2
  --layers blocks --stage-cuts equal)

# the stage programs as the stage DP prices them
if ! GALV_PLAN_DEBUG=3 timeout 300 "$BUILD/galvc" "$m" "${opts[@]}" --plan-only >"$T/plan" 2>&1; then
  bad "plan: $(grep -m3 -i error "$T/plan")"
else
  n=$(grep -c '^cost model' "$T/plan")
  # the head's dot in the last stage's last realised program (the first is the replicated bound): [microbatch 4,
  # seq 8, vocab / tp = 32] per rank
  head=$(grep -E '^[0-9]+ +dot +/lm_head/MatMul ' "$T/plan" | tail -1)
  if [ "$n" -lt 2 ]; then
    bad "plan: $n realised programs printed (GALV_PLAN_DEBUG=3)"
  elif ! grep -q 'tensor<4x8x32x' <<<"$head"; then
    bad "plan: the head's dot is not split over the vocabulary: ${head:-none}"
  else
    ok "plan: $n realised stage programs; the last stage's head dot $(awk '{print $4}' <<<"$head") per rank"
  fi
fi

# the compiled pipeline = one device
single_program "$T/one" "$m" "--batches $T/b --steps 2" --input-shape input_ids=8x8 --train
d="$T/pp"
if ! timeout 600 "$BUILD/galvc" "$m" "${opts[@]}" --target cpu -q -o "$d/" 2>"$T/err"; then
  bad "pp=2 x tp=2 training: galvc: $(head -3 "$T/err")"
elif ! timeout 120 "$d/launch" --batches "$T/b" --steps 2 -o "$d.w" >"$d.log" 2>"$T/err"; then
  bad "pp=2 x tp=2 training: run: $(grep -m3 -i error "$T/err" "$d.log")"
elif msg=$(same_training "$T/one.log" "$d.log" "$T/one.w" "$d.w"); then
  ok "pp=2 x tp=2 training, one block per stage, tied head (4 ranks): $msg"
else
  bad "pp=2 x tp=2 training: $msg"
fi
echo "plan_stage_roles: $pass passed, $fail failed"
[ "$fail" = 0 ]
