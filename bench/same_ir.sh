#!/usr/bin/env bash
# Same IR from two galvc builds: compiles the example models (gpt2, llama,
# bert, vit, t5 of examples/make_model.py, weight-free) under several
# pipelines (inference, training, the planner with --gpus 4, the tp / zero /
# dp,tp presets, training with the planner and with ZeRO, the pipeline path)
# with --dump-ir-after=all and the plan.json, once with each galvc, and
# compares every dump byte for byte. A speed change to a pass must leave its
# output exactly as it was: this is the check for that.
#   bench/same_ir.sh OLD_GALVC NEW_GALVC
# Prints one line per case and a summary; exit 1 if any dump differs.
set -uo pipefail
OLD=$1 NEW=$2
SRC=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
same=0 diff=0
CASES=(
  "infer|--target cpu"
  "train|--target cpu --train"
  "plan4|--target cpu --gpus 4"
  "tp4|--target cpu --gpus 4 --strategy tp"
  "dptp4|--target cpu --gpus 4 --strategy dp,tp --mesh dp=2,tp=2"
  "plan4-train|--target cpu --gpus 4 --train"
  "zero4-train|--target cpu --gpus 4 --train --strategy zero"
  "tp2-train|--target cuda --gpus 2 --train --strategy tp"
)
for fam in gpt2 llama bert vit t5; do
  m="$T/$fam.onnx"
  extra=()
  [ "$fam" = llama ] && extra=(--heads 4 --kv-heads 2)
  python3 "$SRC/examples/make_model.py" "$fam" -o "$m" --no-weights --no-verify "${extra[@]}" >/dev/null || {
    echo "$fam: make_model failed"
    diff=$((diff + 1))
    continue
  }
  for c in "${CASES[@]}"; do
    name=${c%%|*} args=${c#*|}
    for w in old new; do
      g=$OLD
      [ $w = new ] && g=$NEW
      mkdir -p "$T/$w"
      po=()
      [[ "$args" == *--gpus* && "$args" != *--strategy* ]] && po=(--plan-out "$T/$w/plan.json")
      # shellcheck disable=SC2086
      "$g" "$m" --batch 4 --seq 16 --no-weights -q $args --emit=ir -o "$T/$w/out.mlir" "${po[@]}" \
        --dump-ir-after=all --dump-dir "$T/$w/d" >"$T/$w/log" 2>&1 || echo "exit $?" >>"$T/$w/log"
      # the planner's own CPU time is the one figure that differs run to run
      sed -i '/"planning_seconds"/d' "$T/$w/plan.json" 2>/dev/null
    done
    if diff -r "$T/old" "$T/new" >/dev/null; then
      echo "same  $fam $name ($(ls "$T/new/d" 2>/dev/null | wc -l) dumps$(grep -q "^exit" "$T/new/log" && echo ", both: $(grep -m1 error "$T/new/log")"))"
      same=$((same + 1))
    else
      echo "DIFF  $fam $name: $(diff -rq "$T/old" "$T/new" | head -3 | tr '\n' ' ')"
      diff=$((diff + 1))
    fi
    rm -rf "$T/old" "$T/new"
  done
done
for fam in gpt2 llama; do # the pipeline path: stage programs written with --no-build
  m="$T/$fam.onnx"
  python3 "$SRC/examples/make_model.py" "$fam" -o "$m" --no-verify >/dev/null || continue
  for args in "--pipeline-stages 2" "--pipeline-stages 2 --train --microbatches 2" "--pipeline-stages auto --gpus 4 --train"; do
    for w in old new; do
      g=$OLD
      [ $w = new ] && g=$NEW
      # shellcheck disable=SC2086
      "$g" "$m" --batch 4 --seq 16 --target cpu -q $args --no-build -o "$T/$w/" >"$T/$w.log" 2>&1 || echo "exit $?" >>"$T/$w.log"
      mkdir -p "$T/$w"
      sed -E 's/planned in [0-9.]+ s/planned in X s/' "$T/$w.log" >"$T/$w/log"
      sed -i '/^Written by galvc/d' "$T/$w/README" "$T"/$w/stage*/README 2>/dev/null
      sed -i '/"planning_seconds"/d' "$T"/$w/plan*.json "$T"/$w/stage*/plan*.json 2>/dev/null
    done
    if diff -r "$T/old" "$T/new" >/dev/null; then
      echo "same  $fam $args (stage programs)"
      same=$((same + 1))
    else
      echo "DIFF  $fam $args: $(diff -rq "$T/old" "$T/new" | head -3 | tr '\n' ' ')"
      diff=$((diff + 1))
    fi
    rm -rf "$T/old" "$T/new"
  done
done
echo "same_ir: $same same, $diff differ"
[ "$diff" = 0 ]
