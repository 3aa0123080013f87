#!/usr/bin/env bash
# The repeated-layer path's memory estimate (passes/plan_sharding.c, "the full
# program's memory from a reduced one"; docs/planner.md, "Repeated layers: the
# memory"). A weight-free Llama of 12 identical layers (hidden 128, ffn 352, 4
# heads, vocab 256: the reduced programs are used from 12 layers on), bf16
# training, batch 16 x seq 64, full recomputation, one microbatch, 4 devices
# (the default cluster), plan-only:
#  1. every unit at ZeRO-2, and at ZeRO-3, over dp=4: the search's estimate of
#     the full program (GALV_PLAN_DEBUG's "uniform stage" line) within 3 % of
#     the same plan realised in full (--plan); the peaks' linear
#     extrapolation it replaced (printed beside it) is over by more than 20 %
#     for ZeRO-3 (r3's and r2's busiest points are not the full program's:
#     there each layer's gradients are in flight for two layers and their
#     shards held to the update);
#  2. a memory limit 5 % above uniform ZeRO-3's realised memory (below
#     uniform ZeRO-2's and below the linear estimate of ZeRO-3): the search
#     over dp=4 (--mesh dp=4) returns a plan that fits in full and is at least
#     as fast as uniform ZeRO-3 (a mix of ZeRO-3 and ZeRO-2 layers). With the
#     linear estimate the search said "no plan fits" here (a false "no
#     plan": uniform ZeRO-3 fits), its smallest candidate, realised in full,
#     over the limit.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
python3 "$SRC/examples/make_model.py" llama -o "$T/l12.onnx" --layers 12 --hidden 128 --heads 4 --kv-heads 4 --ffn 352 \
  --vocab 256 --max-pos 64 --no-weights --no-verify >/dev/null || { echo "FAIL make_model"; exit 1; }
A=("$T/l12.onnx" --train --plan-only --no-weights --precision bf16 --gpus 4 --batch 16 --seq 64 --recompute=all --microbatches 1)
for z in 2 3; do
  python3 -c "
import json, sys
json.dump({'mesh': {'axes': ['dp'], 'shape': [4]}, 'batch_axes': ['dp'], 'tp_axis': None, 'vocab_axis': None,
           'units': [{'zero': $z} for _ in range(13)]}, open(sys.argv[1], 'w'))" "$T/z$z.json"
done
# realised FILE: "step_ns total_bytes" of the plan realised in full
realised() {
  timeout 300 "$BUILD/galvc" "${A[@]}" --plan "$1" --plan-out "$T/r.json" 2>"$T/r.err" </dev/null || return 1
  python3 -c "import json, sys; p = json.load(open(sys.argv[1])); print(p['predicted']['step_ns'], p['memory_per_device']['total'])" "$T/r.json"
}

# 1. the estimates
GALV_PLAN_DEBUG=1 timeout 300 "$BUILD/galvc" "${A[@]}" --mesh dp=4 >"$T/dbg.log" 2>&1 </dev/null ||
  bad "the search: $(grep -m1 error "$T/dbg.log")"
declare -A step mem
for z in 2 3; do
  name=$([ $z = 2 ] && echo 'dp(dp)+zero2' || echo 'dp(dp)+zero')
  line=$(grep -m1 -F "uniform stage $z ($name, 4 devices)" "$T/dbg.log")
  lin=$(sed -n 's/.*(linear \([0-9]*\)) -> \([0-9]*\),.*/\1/p' <<<"$line")
  est=$(sed -n 's/.*(linear \([0-9]*\)) -> \([0-9]*\),.*/\2/p' <<<"$line")
  r=$(realised "$T/z$z.json") || { bad "ZeRO-$z realised: $(grep -m1 error "$T/r.err")"; continue; }
  read -r step[$z] mem[$z] <<<"$r"
  if [ -z "$est" ]; then bad "ZeRO-$z: no estimate in GALV_PLAN_DEBUG ('$line')"; continue; fi
  within=$(python3 -c "print(abs($est - ${mem[$z]}) <= 0.03 * ${mem[$z]})")
  over=$(python3 -c "print($lin > 1.2 * ${mem[$z]})")
  if [ "$within" = True ] && { [ $z = 2 ] || [ "$over" = True ]; }; then
    ok "uniform ZeRO-$z: estimate $est bytes, realised ${mem[$z]} ($(python3 -c "print('%+.1f' % (100 * ($est - ${mem[$z]}) / ${mem[$z]}))") %); the linear extrapolation $lin"
  else
    bad "uniform ZeRO-$z: estimate $est bytes, realised ${mem[$z]}, linear $lin (want the estimate within 3 %$([ $z = 3 ] && echo ', the linear over by 20 %'))"
  fi
done

# 2. the limit between ZeRO-3's realised memory and its linear estimate
if [ -n "${mem[3]:-}" ] && [ -n "${mem[2]:-}" ]; then
  LIM=$((mem[3] * 105 / 100))
  if [ "$LIM" -ge "${mem[2]}" ]; then bad "the premise: uniform ZeRO-2 (${mem[2]} bytes) over the limit $LIM"; fi
  if timeout 300 "$BUILD/galvc" "${A[@]}" --mesh dp=4 --memory-limit "$LIM" --plan-out "$T/s.json" 2>"$T/s.err" </dev/null; then
    read -r ss sm sz <<<"$(python3 -c "
import json, sys
p = json.load(open(sys.argv[1]))
print(p['predicted']['step_ns'], p['memory_per_device']['total'], ''.join(str(u['zero']) for u in p['units']))" "$T/s.json")"
    if [ "$sm" -le "$LIM" ] && [ "$ss" -le "${step[3]}" ]; then
      ok "limit $LIM: the search's plan (ZeRO by unit $sz) $ss ns in $sm bytes; uniform ZeRO-3 ${step[3]} ns"
    else
      bad "limit $LIM: the search's plan (ZeRO by unit $sz) $ss ns in $sm bytes (want <= $LIM bytes and <= ${step[3]} ns)"
    fi
  else
    bad "limit $LIM: $(grep -m1 error "$T/s.err")"
  fi
fi
echo "plan_reduced_memory: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
