#!/usr/bin/env bash
# cluster-layers (passes/cluster_layers.c) on the example models: for every
# group count K the pass meets K, stays within its FLOPs bound (the pass
# checks both, and acyclicity, and fails otherwise), prints its summary, and
# the program compiled from the reordered body gives the same outputs as
# without --layers (bit-identical: only the op order changes). --layers
# blocks: a group per block found by structure, every op of the model's
# layer N in group N. Bad input: more groups than ops.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export OPENBLAS_NUM_THREADS=1
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
for fam in ${GALV_CLUSTER_MODELS:-gpt2 llama bert vit}; do
  m="$T/$fam.onnx"
  python3 "$SRC/examples/make_model.py" "$fam" -o "$m" --no-verify >/dev/null || { bad "$fam: make_model"; continue; }
  timeout 120 "$BUILD/galvc" "$m" --batch 2 --seq 8 --target cpu -q -o "$T/$fam-0/" 2>"$T/err" || { bad "$fam: $(cat "$T/err")"; continue; }
  python3 - "$SRC" "$m" "$T/$fam" >"$T/$fam.args" 2>"$T/err" <<'PY' || { bad "$fam inputs: $(cat "$T/err")"; continue; }
import sys, onnx, numpy as np
sys.path.insert(0, sys.argv[1] + "/tests")
from model_inputs import make_inputs
args = []
for i, (name, a) in enumerate(make_inputs(onnx.load(sys.argv[2], load_external_data=False), 2, 8).items()):
    fn = f"{sys.argv[3]}_in_{i}.npy"
    np.save(fn, a)
    args.append(f"--input {name}={fn}")
print(" ".join(args))
PY
  # shellcheck disable=SC2046
  timeout 120 "$T/$fam-0/program" $(cat "$T/$fam.args") -o "$T/$fam-0/res" >/dev/null 2>"$T/err" || { bad "$fam run: $(cat "$T/err")"; continue; }
  for k in 1 2 3 4 6 8 blocks; do
    d="$T/$fam-$k"
    if ! timeout 120 "$BUILD/galvc" "$m" --batch 2 --seq 8 --layers $k --pipe-stats --target cpu -q -o "$d/" 2>"$T/err"; then
      bad "$fam --layers $k: $(cat "$T/err")"
      continue
    fi
    line=$(grep -m1 '^cluster-layers:' "$T/err")
    if [ $k = blocks ]; then
      # a group per block found by structure: every op of the model's layer N (a NAME.N or /N/ segment of its node
      # name) in group N, the summary says so
      grep -q "^cluster-layers: [0-9]* groups.*the blocks found by structure (no METIS)" <<<"$line" || { bad "$fam --layers blocks: summary '$line'"; continue; }
      timeout 120 "$BUILD/galvc" "$m" --batch 2 --seq 8 --layers blocks --target cpu -q -o "$d.mlir" 2>"$T/err" || { bad "$fam --layers blocks IR: $(cat "$T/err")"; continue; }
      r=$(python3 - "$d.mlir" <<'PY'
import re, sys
n = bad = 0
groups = set()
for l in open(sys.argv[1]):
    g, loc = re.search(r"layer = (\d+) : i64", l), re.search(r'loc\("([^"]*)"', l)
    if not g or not loc:
        continue
    groups.add(int(g.group(1)))
    s = re.search(r"(?:\.|/)(\d+)(?:/|$)", loc.group(1))
    if s:
        n += 1
        bad += int(s.group(1)) != int(g.group(1))
print(f"{n} ops named in a layer, {bad} outside its group, {len(groups)} groups")
sys.exit(1 if bad or not n else 0)
PY
      ) || { bad "$fam --layers blocks: $r"; continue; }
      line="$line; $r"
    else
      grep -q "^cluster-layers: $k groups" <<<"$line" || { bad "$fam --layers $k: summary '$line'"; continue; }
    fi
    # shellcheck disable=SC2046
    timeout 120 "$d/program" $(cat "$T/$fam.args") -o "$d/res" >/dev/null 2>"$T/err" || { bad "$fam --layers $k run: $(cat "$T/err")"; continue; }
    same=1
    for f in "$T/$fam-0/res"/*.npy; do cmp -s "$f" "$d/res/$(basename "$f")" || same=0; done
    [ $same = 1 ] && ok "$fam --layers $k: ${line#cluster-layers: }" || bad "$fam --layers $k: outputs differ"
  done
  if timeout 60 "$BUILD/galvc" "$m" --batch 2 --seq 8 --layers 100000 --target cpu -q -o "$T/x/" 2>"$T/err"; then
    bad "$fam --layers 100000 accepted"
  elif [ "$(wc -l <"$T/err")" = 1 ] && grep -q 'more groups than the' "$T/err"; then
    ok "$fam --layers 100000: $(cat "$T/err")"
  else
    bad "$fam --layers 100000: $(cat "$T/err")"
  fi
done
# --layers blocks with --stage-cuts equal: Megatron-LM's stages (L / S blocks each, the embedding with the first,
# the head with the last): a 4-layer GPT-2 in 2 stages is cut at groups 0|2|4
python3 "$SRC/examples/make_model.py" gpt2 -o "$T/g4.onnx" --layers 4 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null
out=$(timeout 120 "$BUILD/galvc" "$T/g4.onnx" --batch 4 --seq 8 --train --gpus 2 --pipeline-stages 2 --layers blocks --stage-cuts equal \
      --plan-only 2>&1)
if grep -q "^pipeline equal cuts: 2 stages, cuts at groups 0|2|4 of 4," <<<"$out"; then ok "--layers blocks --stage-cuts equal: $(grep -m1 -o 'cuts at groups [0-9|]* of [0-9]*' <<<"$out")"
else bad "--layers blocks --stage-cuts equal: $(grep -m2 'equal cuts\|error' <<<"$out")"; fi
# a given stage count without --layers: a group per block when the model has 4 or more per stage (an 8-layer GPT-2
# in 2 stages: 8 groups, plan.json's layer_blocks, --plan rebuilds the same groups); fewer: 4 METIS groups per stage
# (the 4-layer GPT-2: 8 groups, no layer_blocks)
python3 "$SRC/examples/make_model.py" gpt2 -o "$T/g8.onnx" --layers 8 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null
for L in 8 4; do
  mm="$T/g$L.onnx" pj="$T/pp$L.json"
  out=$(timeout 120 "$BUILD/galvc" "$mm" --batch 4 --seq 8 --train --gpus 2 --pipeline-stages 2 --plan-only --plan-out "$pj" 2>&1)
  lg=$(grep -o '"layer_groups": [0-9]*' "$pj" 2>/dev/null) lb=$(grep -c '"layer_blocks": true' "$pj" 2>/dev/null)
  want_lb=0
  [ $L = 8 ] && want_lb=1
  if [ "$lg" != '"layer_groups": 8' ] || [ "$lb" != $want_lb ]; then
    bad "$L-layer GPT-2, 2 stages: ${lg:-no plan.json} layer_blocks $lb (expected 8 groups, layer_blocks $want_lb): $(grep -m1 error <<<"$out")"
    continue
  fi
  re=$(timeout 120 "$BUILD/galvc" --plan "$pj" "$mm" --batch 4 --seq 8 --train --gpus 2 --plan-only 2>&1)
  s0=$(grep -m1 '^  stage 0: groups' <<<"$out" | cut -d: -f2-3) s1=$(grep -m1 '^  stage 0: groups' <<<"$re" | cut -d: -f2-3)
  if [ -n "$s0" ] && [ "$s0" = "$s1" ]; then ok "$L-layer GPT-2, 2 stages: $lg, layer_blocks $lb; --plan replays stage 0:$s0"
  else bad "$L-layer GPT-2, 2 stages: --plan gives '$s1', the search '$s0' ($(grep -m1 error <<<"$re"))"; fi
done
# bad input: no repeated blocks
python3 - "$T/mm.onnx" <<'PY'
import sys, onnx
from onnx import helper, TensorProto
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])
w = helper.make_tensor("w", TensorProto.FLOAT, [4, 4], [0.5] * 16)
g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "g", [x], [y], [w])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
PY
e=$(timeout 60 "$BUILD/galvc" "$T/mm.onnx" --layers blocks -o "$T/mm.mlir" 2>&1 >/dev/null); erc=$?
if [ $erc != 0 ] && [ "$(grep -c error <<<"$e")" = 1 ] && grep -q "mm.onnx: cluster-layers: --layers blocks: the program has no repeated blocks" <<<"$e"; then
  ok "--layers blocks without repeated blocks: $(grep error <<<"$e")"
else bad "--layers blocks without repeated blocks: exit $erc: $e"; fi
echo "cluster_layers: $pass passed, $fail failed"
[ $fail = 0 ]
