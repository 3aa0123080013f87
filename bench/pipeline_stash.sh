#!/bin/bash
# Pipeline training, stash vs recompute (docs/pipeline.md, "Pipeline
# training"): GPT-2 (4 layers, hidden 128, 4 heads, vocab 512), batch 8 x
# seq 32, 4 microbatches, GPipe, pp = 2 and pp = 4 (one MPI rank per stage),
# equal cuts (--stage-cuts equal: the same stages in both modes; the stage
# DP's own cuts would differ, since it costs the recomputing stages twice),
# each stage program built twice: the default (earlier stages run a forward
# entry and a backward entry with a per-microbatch stash) and
# --pipeline-recompute (one combined program per stage, recomputing the
# forward in B(j)). STEPS AdamW steps per launch, min over RUNS launches.
# Prints per stage: compute ms per step (the runtime's `compute` / steps),
# peak saved bytes in flight (the stashes / saved inputs), and galvc's stash
# bytes per microbatch with the stage DP's estimate. Losses of the two modes
# are printed too (they agree to the last digits). Figures only.
# usage: bench/pipeline_stash.sh [BUILD (build)] [RUNS (3)] [STEPS (5)]
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
RUNS=${2:-3}
STEPS=${3:-5}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
RUNAS=()
[ "$(id -u)" = 0 ] && RUNAS=(--allow-run-as-root)
export OPENBLAS_NUM_THREADS=1 OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_mpi_yield_when_idle=1
export MPIRUN="mpirun ${RUNAS[*]} --oversubscribe -x OPENBLAS_NUM_THREADS -x OMPI_MCA_mpi_yield_when_idle"
python3 "$ROOT/examples/make_model.py" gpt2 -o "$T/m.onnx" --layers 4 --hidden 128 --heads 4 --vocab 512 --no-verify >/dev/null ||
  { echo "model build failed"; exit 1; }
python3 -c "
import numpy as np, os
r = np.random.RandomState(0)
os.makedirs('$T/b')
np.save('$T/b/input_ids.npy', r.randint(0, 512, (8, 32)).astype(np.int64))
np.save('$T/b/labels.npy', r.randint(0, 512, (8, 32)).astype(np.int64))"
printf "%-4s %-10s %-6s %-16s %-14s %-30s %s\n" pp mode stage compute_ms/step peak_saved_B "stash B/mb (DP estimate)" losses
for S in 2 4; do
  for mode in stash recompute; do
    d="$T/pp$S-$mode"
    if ! timeout 600 "$BUILD/galvc" "$T/m.onnx" --batch 8 --seq 32 --train --pipeline-stages "$S" --microbatches 4 \
        --schedule gpipe --stage-cuts equal $([ $mode = recompute ] && echo --pipeline-recompute) -o "$d/" >/dev/null 2>"$d.err"; then
      echo "pp=$S $mode: galvc failed: $(tail -3 "$d.err")"; continue
    fi
    best=()
    for ((r = 0; r < RUNS; r++)); do
      timeout 300 "$d/launch" --batches "$T/b" --steps "$STEPS" >"$d.log" 2>&1 || { echo "pp=$S $mode: run failed"; tail -3 "$d.log"; break; }
      for ((s = 0; s < S; s++)); do
        c=$(sed -n "s/.*\[stage $s, rank [0-9]*\]: .* (compute \([0-9.]*\) ms.*/\1/p" "$d.log")
        if [ -z "${best[$s]:-}" ] || python3 -c "import sys; sys.exit(0 if $c < ${best[$s]} else 1)"; then best[$s]=$c; fi
      done
    done
    losses=$(grep -o 'loss [0-9.]*' "$d.log" | awk '{print $2}' | tr '\n' ' ')
    tot=0
    for ((s = 0; s < S; s++)); do
      peak=$(sed -n "s/.*\[stage $s, rank [0-9]*\]: saved activations in flight: peak \([0-9]*\) bytes.*/\1/p" "$d.log")
      st=$(sed -n "s/.*stage $s: forward and backward entries, stash [0-9]* values, \([0-9]*\) bytes per microbatch (the stage DP's estimate \([0-9]*\)).*/\1 (\2)/p" "$d.err")
      printf "%-4s %-10s %-6s %-16.3f %-14s %-30s %s\n" "$S" "$mode" "$s" "$(python3 -c "print(${best[$s]:-0} / $STEPS)")" "$peak" "${st:--}" "$([ $s = $((S - 1)) ] && echo "$losses")"
      tot=$(python3 -c "print($tot + ${best[$s]:-0} / $STEPS)")
    done
    printf "%-4s %-10s %-6s %-16.3f (all stages)\n" "$S" "$mode" "sum" "$tot"
  done
done
