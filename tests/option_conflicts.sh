#!/usr/bin/env bash
# Conflicting galvc options are one error line and exit status 2, before
# anything is read or written: an option that the others make meaningless
# (a training option without --train, SGD's --momentum with AdamW, a
# pipeline option without --pipeline-stages, the planner's options without
# the planner, --no-build or --no-weights with an output that contradicts
# them, ...) is never silently ignored or overridden. Each pair is also
# accepted in its proper company (no false conflict).
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
python3 "$SRC/examples/make_model.py" gpt2 -o "$T/m.onnx" --layers 2 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null ||
  { echo "FAIL make_model"; exit 1; }
G=("$BUILD/galvc" "$T/m.onnx" --batch 2 --seq 8)

# conflict MESSAGE OPTIONS...: exit 2, exactly one line, MESSAGE in it, nothing written
conflict() {
  local want=$1 rc=0
  shift
  rm -rf "$T/o" "$T/o.mlir" "$T/plan.json"
  "${G[@]}" "$@" >"$T/out" 2>"$T/err" </dev/null || rc=$?
  if [ "$rc" = 2 ] && [ "$(wc -l <"$T/err")" = 1 ] && grep -qF -- "galvc: error: $want" "$T/err" && [ ! -s "$T/out" ] &&
    [ ! -e "$T/o" ] && [ ! -e "$T/o.mlir" ] && [ ! -e "$T/plan.json" ]; then
    echo "ok   $*: $(cat "$T/err")"
    pass=$((pass + 1))
  else
    echo "FAIL $*: exit $rc, stderr: $(head -c 400 "$T/err")"
    fail=$((fail + 1))
  fi
}
# fine OPTIONS...: accepted (exit 0)
fine() {
  if "${G[@]}" "$@" >"$T/out" 2>"$T/err" </dev/null; then
    echo "ok   accepted: $*"
    pass=$((pass + 1))
  else
    echo "FAIL rejected: $*: $(head -c 400 "$T/err")"
    fail=$((fail + 1))
  fi
}
IR=(--emit=ir -o "$T/o.mlir")
for o in "--loss mse" "--labels y" "--optimizer sgd" "--lr 0.1" "--weight-decay 0" "--beta1 0.8" "--eps=1e-6" "--momentum 0.9" \
  "--ignore-index 0" "--recompute all" "--freeze transformer.wte.weight" "--trainable lm_head.weight"; do
  # shellcheck disable=SC2086
  conflict "${o%%[ =]*} applies to the training step: it needs --train" $o "${IR[@]}"
done
conflict "--momentum is SGD's: it needs --optimizer sgd" --train --momentum 0.9 "${IR[@]}"
conflict "--momentum is SGD's" --train --optimizer adamw --momentum 0 "${IR[@]}"
conflict "--beta1 is AdamW's: it does not combine with --optimizer sgd" --train --optimizer sgd --beta1 0.8 "${IR[@]}"
conflict "--grad-dtype bf16: 16-bit parameter gradients are part of mixed-precision training" --train --grad-dtype bf16 "${IR[@]}"
conflict "--grad-dtype bf16: 16-bit parameter gradients are part of mixed-precision training" --precision bf16 --grad-dtype bf16 --target cuda "${IR[@]}"
conflict "--grad-dtype fp16: 16-bit parameter gradients are part of mixed-precision training in that dtype (give --train --precision fp16)" --train --precision bf16 --grad-dtype fp16 "${IR[@]}"
conflict "--grad-dtype fp8: expected fp32, bf16 or fp16" --train --precision fp16 --grad-dtype fp8 "${IR[@]}"
conflict "--loss-scale applies to the training step: it needs --train" --loss-scale dynamic "${IR[@]}"
conflict "--loss-scale: loss scaling is for 16-bit training (--precision fp16; bf16 allowed), not fp32" --train --loss-scale 1024 "${IR[@]}"
conflict "--loss-scale expects dynamic or a positive number, got '0'" --train --precision fp16 --loss-scale 0 "${IR[@]}"
conflict "--loss-scale expects dynamic or a positive number, got '-2'" --train --precision fp16 --loss-scale=-2 "${IR[@]}"
conflict "--loss-scale-backoff expects a number in (0, 1), got '2'" --train --precision fp16 --loss-scale-backoff 2 "${IR[@]}"
conflict "--loss-scale-growth expects a number > 1, got '0.5'" --train --precision fp16 --loss-scale-growth 0.5 "${IR[@]}"
conflict "--loss-scale-interval expects a positive integer, got '1.5'" --train --precision fp16 --loss-scale-interval 1.5 "${IR[@]}"
conflict "--loss-scale-init / -growth / -backoff / -interval tune the dynamic scale, not a static --loss-scale 1024" --train \
  --precision fp16 --loss-scale 1024 --loss-scale-init 8 "${IR[@]}"
fine --train --precision fp16 --pipeline-stages 2 --target cpu -o "$T/o/" # loss scaling in the pipeline runtime
fine --train --precision fp16 --loss-scale 1024 "${IR[@]}"
conflict "--reduce-dtype: the gradient reductions' dtype is part of mixed-precision training" --train --reduce-dtype fp32 "${IR[@]}"
conflict "--reduce-dtype: the gradient reductions' dtype is part of mixed-precision training" --precision bf16 --reduce-dtype fp32 "${IR[@]}"
conflict "--reduce-dtype bf16 with --precision fp16: the 16-bit reduction dtype is the program's 16-bit dtype" --train \
  --precision fp16 --reduce-dtype bf16 "${IR[@]}"
conflict "--reduce-dtype fp8: expected fp32, bf16 or fp16" --train --precision fp16 --reduce-dtype fp8 "${IR[@]}"
fine --train --precision fp16 --reduce-dtype fp16 "${IR[@]}"
fine --train --precision bf16 --loss-scale dynamic "${IR[@]}"
fine --precision fp16 --target cuda --no-build -o "$T/o16/"
fine --train --precision fp16 --target cuda --no-build -o "$T/o16t/"
conflict "--precision fp8: expected fp32, bf16 or fp16" --precision fp8 "${IR[@]}"
fine --precision fp16 --target cuda --report-cost "${IR[@]}"
conflict "--eps is AdamW's" --train --optimizer sgd --eps=1e-6 "${IR[@]}"
conflict "--ignore-index is cross_entropy's: it does not combine with --loss mse" --train --loss mse --ignore-index 0 "${IR[@]}"
conflict "--cuda-arch applies to --target cuda, not --target cpu" --target cpu --cuda-arch sm_80 "${IR[@]}"
conflict "--cuda-arch applies to --target cuda" --cuda-arch sm_80 "${IR[@]}" # one device: the cpu target by default
conflict "--microbatches without --pipeline-stages accumulates gradients over microbatches: it needs --train" --microbatches 2 "${IR[@]}"
conflict "--zero-reduce applies to the training step: it needs --train" --zero-reduce once "${IR[@]}"
conflict "--zero-reduce chooses how accumulated gradients are reduced: it needs --microbatches" --train --zero-reduce once "${IR[@]}"
conflict "--zero-reduce chooses the form of ZeRO-2 in pipeline stages: it does not combine with --pipeline-zero 0 or 1" --train \
  --pipeline-stages 2 --microbatches 2 --pipeline-zero 1 --zero-reduce once --target cpu -o "$T/o/"
for o in "--schedule gpipe" "--stage-cost analytic" "--stage-cuts equal" "--trace-plan $T/t.json" "--virtual-stages 2"; do
  # shellcheck disable=SC2086
  conflict "${o%% *} applies to pipelines: it needs --pipeline-stages" $o "${IR[@]}"
done
# interleaved 1F1B: --virtual-stages V with --schedule interleaved (or auto) in training, P groups of equal devices
PP=(--pipeline-stages 2 --microbatches 2 --target cpu -o "$T/o/")
conflict "--schedule interleaved needs --virtual-stages V" --train --schedule interleaved "${PP[@]}"
conflict "--virtual-stages applies to --schedule interleaved (or auto" --train --schedule 1f1b --virtual-stages 2 "${PP[@]}"
conflict "--virtual-stages applies to --schedule interleaved" --train --virtual-stages 2 "${PP[@]}"
conflict "--virtual-stages: the interleaved schedule orders training's forward and backward entries: it needs --train" \
  --schedule interleaved --virtual-stages 2 "${PP[@]}"
conflict "--virtual-stages 1: expected 2 .. 64" --train --schedule interleaved --virtual-stages 1 "${PP[@]}"
conflict "--microbatches 3 with --schedule interleaved over 2 device groups: the microbatches must be a multiple of 2" \
  --train --schedule interleaved --virtual-stages 2 --pipeline-stages 2 --microbatches 3 --target cpu -o "$T/o/"
conflict "--virtual-stages 2: --pipeline-stages P counts the device groups" --train --schedule interleaved --virtual-stages 2 \
  --pipeline-stages 2 --gpus 3 --microbatches 2 --target cpu -o "$T/o/"
conflict "--virtual-stages 2: --pipeline-stages P counts the device groups" --train --schedule interleaved --virtual-stages 2 \
  --pipeline-stages auto --target cpu -o "$T/o/"
conflict "--virtual-stages 2 with --pipeline-stages 1: interleaving needs at least 2 device groups" --train --schedule interleaved \
  --virtual-stages 2 --pipeline-stages 1 --target cpu -o "$T/o/"
conflict "--schedule interleaved does not combine with --pipeline-recompute" --train --schedule interleaved --virtual-stages 2 \
  --pipeline-recompute "${PP[@]}"
fine --train --schedule interleaved --virtual-stages 2 --plan-only -q "${PP[@]}"
fine --train --schedule auto --virtual-stages 2 --plan-only -q "${PP[@]}"
conflict "--plan-search does not combine with --plan" --gpus 2 --target cpu --plan "$T/p.json" --plan-search exhaustive "${IR[@]}"
conflict "--plan-search applies to the planner" --gpus 2 --strategy tp --target cpu --plan-search exhaustive "${IR[@]}"
conflict "--plan-search applies to the planner" --gpus 2 --pipeline-stages 2 --target cpu --plan-search dp -o "$T/o/"
conflict "--memory-limit applies to the planner or the pipeline stage DP" --gpus 2 --strategy dp --target cpu --memory-limit 1000000 "${IR[@]}"
conflict "--memory-limit applies to the planner" --memory-limit 1000000 "${IR[@]}"
conflict "--memory-reserve applies to the planner or the pipeline stage DP" --gpus 2 --strategy dp --target cpu --memory-reserve 0.2 "${IR[@]}"
conflict "--profile applies to the planner or the pipeline stage DP" --profile /nonexistent.json "${IR[@]}"
conflict "--plan-out writes the planner's plan: it needs the planner" --gpus 2 --strategy tp --target cpu --plan-out "$T/plan.json" "${IR[@]}"
fine --pipeline-stages 2 --target cpu --plan-only --plan-out "$T/plan.json" -o "$T/o/" # the stage DP's plan.json
conflict "--report-cost does not combine with --plan-only" --gpus 2 --target cpu --plan-only --report-cost
conflict "--emit=ir does not combine with --plan-only" --gpus 2 --target cpu --plan-only --emit=ir
conflict "--dump-dir needs --dump-ir-after" --dump-dir "$T/d" "${IR[@]}"
conflict "--no-build applies to a program output (-o DIR/)" --no-build "${IR[@]}"
conflict "--no-build applies to a program output" --no-build
conflict "--no-weights imports shapes only: a program (-o DIR/) needs the weights" --no-weights --target cpu -o "$T/o/"
conflict "--sharding pins values on a mesh: it needs --gpus > 1 or --mesh" --sharding "$T/s.txt" "${IR[@]}"
conflict "--input-shape input_ids=2x4: input 'input_ids' is given a shape twice" --input-shape input_ids=2x8 --input-shape input_ids=2x4 "${IR[@]}"
# the same option twice with different values (which was meant?); the same value twice, and the list
# options (--freeze, --trainable), are fine
conflict "--target given twice with different values ('cpu', then 'cuda'): give it once" --target cpu --target cuda "${IR[@]}"
conflict "--seq given twice with different values ('8', then '4'): give it once" --seq=4 "${IR[@]}"
conflict "--lr given twice with different values ('0.1', then '0.2'): give it once" --train --lr 0.1 --lr=0.2 "${IR[@]}"
fine --target cpu --target cpu -q "${IR[@]}"
fine --train --freeze transformer.wte.weight --freeze 'transformer.h.0.*' -q "${IR[@]}"

# the same options where they belong
fine --train --optimizer sgd --momentum 0.9 --lr 0.1 --weight-decay 0 -q "${IR[@]}"
fine --train --loss mse --labels y --beta1 0.8 --eps=1e-6 --freeze transformer.wte.weight -q "${IR[@]}"
fine --train --ignore-index 0 --recompute all -q "${IR[@]}"
fine --target cuda --cuda-arch sm_80 --no-build -q -o "$T/cu/"
fine --gpus 2 --target cpu --memory-limit 100000000 --plan-search exhaustive --plan-out "$T/pl.json" --plan-only -q
fine --gpus 2 --target cpu --plan "$T/pl.json" -q "${IR[@]}"
fine --no-weights --train -q "${IR[@]}"
fine --dump-ir-after=dce --dump-dir "$T/d" -q "${IR[@]}"
echo "option_conflicts: $pass ok, $fail failed"
[ "$fail" = 0 ]
