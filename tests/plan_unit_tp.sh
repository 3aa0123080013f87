#!/usr/bin/env bash
# Per-layer tensor-parallel axes from plan.json (units[].tp_axis, read by
# --plan; docs/planner.md "Search space"): tiny GPT-2- and Llama-style
# models (2 layers, hidden 32, 4 heads, vocab 64), batch 8 x seq 8, AdamW
# (eps 1e-6), 4 CPU ranks, 2 training steps each = the single-device program
# (losses and weights rtol 1e-4 / atol 1e-5) and the bytes the communicator
# counted = the prediction from the global program x steps (checked by the
# program, read again here):
#   - degrees: mesh dp=2 x tp=2, layer 0 tensor-parallel over tp (degree 2),
#     layer 1 none (degree 1: its weights whole, computed on both tp ranks):
#     the tp all_reduces are layer 0's alone;
#   - axes: mesh a=2 x b=2, no batch axes, layer 0 tensor-parallel over a,
#     layer 1 over b: each layer's all_reduces run over its own axis;
#   - plan.json written back records each layer's tp_axis and strategy;
#   - bad input: a layer's tp_axis naming no axis or a batch axis, sp with
#     a layer's own tp_axis: one error line each.
# Between Megatron blocks the activations are whole (the row-parallel
# output is all-reduced), so the layers of different axes need no reshard
# collective at their boundary: the table holds none.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
export CFLAGS=-O0
AD=(--eps 1e-6)
B=8 S=8
build() {
  local n=$1 m=$2; shift 2
  timeout 300 "$BUILD/galvc" "$m" --batch $B --seq $S "$@" --target cpu -o "$T/$n/" 2>"$T/$n.err" </dev/null ||
    { bad "$n: galvc $*: $(grep -m3 error "$T/$n.err")"; return 1; }
}
run() {
  local n=$1 exe=program
  [ -x "$T/$n/launch" ] && exe=launch
  timeout 300 "$T/$n/$exe" --batches "$2" --steps 2 -o "$T/$n.w" --comm-stats </dev/null >"$T/$n.log" 2>&1 ||
    { bad "$n: run: $(grep -m3 error "$T/$n.log")"; return 1; }
}
same() {
  python3 - "$T" "$1" "$2" "$SRC/tests/lib" <<'PY'
import sys
sys.path.insert(0, sys.argv[4])
from same_training import check
t, a, b = sys.argv[1:4]
print(check(f"{t}/{a}.log", f"{t}/{b}.log", f"{t}/{a}.w", f"{t}/{b}.w"))
PY
}
counted() { python3 "$SRC/tests/lib/comm_counted.py" "$T/$1.log" "$2"; }
# "kind axes shape bytes node" per collective of the table in NAME.err
table() { sed -n 's/^galvc: spmd: \(all_reduce\|all_gather\|reduce_scatter\|all_to_all\) \+\([a-z,]*\) \+\(tensor<[^ ]*>\) \+\([0-9]*\)  \(.*\)$/\1 \2 \3 \4 \5/p' "$T/$1.err"; }

. "$SRC/tests/lib/tiny_lms.sh"
tiny_lms "$T" 4
python3 - "$T" <<'PY'
import json, numpy as np, os, sys
t = sys.argv[1]
r = np.random.RandomState(11)
os.makedirs(f"{t}/b")
np.save(f"{t}/b/input_ids.npy", r.randint(0, 64, (2, 8, 8)).astype(np.int64))
np.save(f"{t}/b/labels.npy", r.randint(0, 64, (2, 8, 8)).astype(np.int64))
def plan(name, axes, batch, tp, units, vocab=None):
    json.dump({"mesh": {"axes": axes, "shape": [2] * len(axes)}, "batch_axes": batch, "tp_axis": tp, "vocab_axis": vocab,
               "units": [dict({"unit": u, "zero": 0}, **x) for u, x in zip(["outer0", "layer 0", "layer 1"], units)]},
              open(f"{t}/plan-{name}.json", "w"), indent=1)
plan("deg", ["dp", "tp"], ["dp"], "tp", [{}, {"tp_axis": "tp"}, {"tp_axis": None}])
plan("axes", ["a", "b"], [], "a", [{}, {}, {"tp_axis": "b"}])
plan("bad-axis", ["dp", "tp"], ["dp"], "tp", [{}, {}, {"tp_axis": "zz"}])
plan("bad-batch", ["dp", "tp"], ["dp"], "tp", [{}, {}, {"tp_axis": "dp"}])
plan("bad-sp", ["a", "b"], [], "a", [{}, {}, {"tp_axis": "b", "sp": True}])
PY

for fam in gpt2 llama; do
  build "$fam-1" "$T/$fam.onnx" --train "${AD[@]}" -q && run "$fam-1" "$T/b" || continue
  for c in deg axes; do
    d="$fam-$c"
    build "$d" "$T/$fam.onnx" --train "${AD[@]}" --gpus 4 --plan "$T/plan-$c.json" && run "$d" "$T/b" || continue
    if ! by=$(counted "$d" 2 2>&1); then bad "$d: bytes: $by"; continue; fi
    # per collective of the table: its axes and the layer its node names (h.N / layers.N / layers/N; - none),
    # counted; and the activation all_reduces ([b, S, H] f32: b the local batch) per (axes, layer)
    cl=$(table "$d" | python3 -c "
import re, sys, collections
c, act = collections.Counter(), collections.Counter()
for l in sys.stdin:
    kind, axes, ty, by, loc = l.split(' ', 4)
    m = re.search(r'(?:h|layers)[./]([0-9]+)[./]', loc)
    lay = 'layer' + m.group(1) if m else '-'
    c[(axes, lay)] += 1
    if kind == 'all_reduce' and re.fullmatch(r'tensor<[48]x8x32xf32>', ty): act[(axes, lay)] += 1
print(' '.join(f'{a}:{l}:{n}' for (a, l), n in sorted(c.items())), '|', ' '.join(f'{a}:{l}:{n}' for (a, l), n in sorted(act.items())))")
    ar=${cl#*| } all=${cl%% |*}
    p="$T/$d/plan.json"
    case $c in
      deg) want="tp:layer0:4" s0="dp(dp)+tp(tp)" s1="dp(dp)" t0='"tp"' t1=null ;;
      axes) want="a:layer0:4 b:layer1:4" s0="tp(a)" s1="tp(b)" t0='"a"' t1='"b"' ;;
    esac
    # every collective over a layer's tp axis is that layer's (no reshard between the layers: at the
    # boundary the activations are whole); over tp in deg: layer 0's only
    stray=$(tr ' ' '\n' <<<"$all" | awk -F: -v c=$c '(c == "deg" && $1 ~ /tp/ && $2 != "layer0") || (c == "axes" && (($1 == "a" && $2 != "layer0") || ($1 == "b" && $2 != "layer1") || $1 ~ /,/))')
    if r=$(same "$fam-1" "$d" 2>&1) && [ "$ar" = "$want" ] && [ -z "$stray" ] &&
       grep -q "\"unit\": \"layer 0\", \"strategy\": \"$s0\", \"zero\": 0, \"sp\": false, \"tp_axis\": $t0}" "$p" &&
       grep -q "\"unit\": \"layer 1\", \"strategy\": \"$s1\", \"zero\": 0, \"sp\": false, \"tp_axis\": $t1}" "$p"; then
      ok "$fam 4 ranks, layer 0 $s0, layer 1 $s1: 2 steps = one device: $r; activation all_reduces (axes:layer:count) $ar; collectives $all; bytes counted = predicted: $by"
    else bad "$fam $c: $r; activation all_reduces '$ar' (want '$want'); collectives off their layer: '$stray'; $(grep '"layer' "$p" | tr -s ' ' | tr '\n' ' ')"; fi
  done
done

chk() { # PLAN PATTERN
  local out
  out=$("$BUILD/galvc" "$T/gpt2.onnx" --batch $B --seq $S --train --gpus 4 --plan "$T/plan-$1.json" --plan-only -q 2>&1 </dev/null)
  if [ $? -ne 0 ] && [ "$(echo "$out" | wc -l)" = 1 ] && grep -q "$2" <<<"$out"; then ok "error $1: $out"
  else bad "error $1: '$out' (want one line matching $2)"; fi
}
chk bad-axis "plan-bad-axis.json: line [0-9]*: field 'units\[\].tp_axis': expected null or a mesh axis name"
chk bad-batch "plan-bad-batch.json: line [0-9]*: field 'units': \"tp_axis\" 'dp' is a batch axis"
chk bad-sp "plan-bad-sp.json: line [0-9]*: field 'units': \"sp\" with a layer's own \"tp_axis\" is not supported yet"
echo "plan_unit_tp: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
