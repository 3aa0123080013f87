#!/usr/bin/env bash
# cluster-layers (passes/cluster_layers.c) on the example models: for every
# group count K the pass meets K, stays within its FLOPs bound (the pass
# checks both, and acyclicity, and fails otherwise), prints its summary, and
# the program compiled from the reordered body gives the same outputs as
# without --layers (bit-identical: only the op order changes). Bad input:
# more groups than ops.
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
  for k in 1 2 3 4 6 8; do
    d="$T/$fam-$k"
    if ! timeout 120 "$BUILD/galvc" "$m" --batch 2 --seq 8 --layers $k --pipe-stats --target cpu -q -o "$d/" 2>"$T/err"; then
      bad "$fam --layers $k: $(cat "$T/err")"
      continue
    fi
    line=$(grep -m1 '^cluster-layers:' "$T/err")
    grep -q "^cluster-layers: $k groups" <<<"$line" || { bad "$fam --layers $k: summary '$line'"; continue; }
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
echo "cluster_layers: $pass passed, $fail failed"
[ $fail = 0 ]
