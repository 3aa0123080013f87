#!/bin/bash
# Issue 7 benchmark: the stage DP's cuts against equal cuts on a model with
# uneven layers. ViT (8 blocks, hidden 128) with a 30,000-class head (the
# head Gemm is the largest op, ~2x the mean layer group), batch 8, 4
# microbatches, --layers 9, pp = 4 one way with --stage-cuts dp (default)
# and once with --stage-cuts equal (9 groups cut at i*9/4: 2|2|2|3 groups),
# inference, both run on 4 MPI ranks (out/launch), each with the stage
# costs of the intra-operator planner (--stage-cost planner, the default)
# and of the analytic formula (--stage-cost analytic). Prints one table:
# partition, stage cost, planning seconds, cuts, predicted step ms (the cost model), measured step ms (the
# min over RUNS launches of the slowest stage's reported time), the predicted
# per-stage ms per microbatch and the measured per-stage compute ms (all 4
# microbatches, in rank order of the output) of the best run. Figures only.
# usage: bench/pipeline_uneven.sh [BUILD (build-uneven)] [RUNS (5)]
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build-uneven}
RUNS=${2:-5}
K=9
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# one BLAS thread per rank, as the other multi-rank benches (4 ranks on a
# 2-core machine: OpenBLAS's own threads would fight the ranks)
export OPENBLAS_NUM_THREADS=1
export MPIRUN="mpirun --allow-run-as-root --oversubscribe -x OPENBLAS_NUM_THREADS"
timeout 120 python3 "$ROOT/examples/make_model.py" vit -o "$T/vit.onnx" --layers 8 --hidden 128 --heads 4 --classes 30000 \
  --no-verify >/dev/null || { echo "model build failed"; exit 1; }
python3 -c "import numpy as np; np.save('$T/px.npy', np.random.default_rng(0).standard_normal((8, 3, 32, 32)).astype(np.float32))"
rows=()
for cc in dp:planner equal:planner dp:analytic equal:analytic; do
  c=${cc%%:*} cost=${cc#*:}
  if ! timeout 300 "$BUILD/galvc" "$T/vit.onnx" --batch 8 --pipeline-stages 4 --microbatches 4 --layers $K --stage-cuts $c \
    --stage-cost "$cost" --target cpu -o "$T/$c/" >"$T/$c.plan" 2>"$T/$c.err"; then
    echo "$c: compile failed: $(tail -3 "$T/$c.err")"; continue
  fi
  line=$(grep '^pipeline .* cuts:' "$T/$c.plan")
  cuts=$(echo "$line" | sed 's/.*cuts at groups \([0-9|]*\) of.*/\1/')
  pred=$(echo "$line" | sed 's/.*predicted step \([0-9.]*\) ms.*/\1/')
  stage=$(echo "$line" | sed 's/.*(stage ms\/microbatch \([^)]*\)).*/\1/')
  plan_s=$(echo "$line" | sed 's/.*planned in \([0-9.]*\) s.*/\1/')
  best="" bcomp=""
  for _ in $(seq "$RUNS"); do
    timeout 60 "$T/$c/launch" --input pixel_values="$T/px.npy" -o "$T/$c/res" >"$T/$c.out" 2>"$T/$c.rerr" || {
      echo "$c: run failed: $(tail -3 "$T/$c.rerr")"; continue; }
    # every stage prints "...: 4 microbatches: X ms (...)"; the step is the slowest stage's X
    t=$(sed -n 's/.*microbatches: \([0-9.]*\) ms.*/\1/p' "$T/$c.out" | sort -g | tail -1)
    comp=$(sort "$T/$c.out" | sed -n 's/.*(compute \([0-9.]*\) ms.*/\1/p' | tr '\n' ' ')
    [ -n "$t" ] && { [ -z "$best" ] || awk -v a="$t" -v b="$best" 'BEGIN{exit !(a<b)}'; } && best=$t bcomp=$comp
  done
  rows+=("$(printf '%-9s %-9s %-8s %-12s %-18s %-12s %-28s %s' "$c" "$cost" "$plan_s" "$cuts" "$pred" "${best:-n/a}" "$stage" "$bcomp")")
done
printf '%-9s %-9s %-8s %-12s %-18s %-12s %-28s %s\n' partition cost plan_s cuts predicted_step_ms measured_ms "predicted stage ms/microbatch" \
  "measured stage compute ms (4 microbatches, best run)"
for r in "${rows[@]}"; do echo "$r"; done
