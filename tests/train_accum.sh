#!/usr/bin/env bash
# Gradient accumulation in one training program (galvc --train
# --microbatches B, no pipeline; passes/accumulate.c): tiny GPT-2- and
# Llama-style models (2 layers, hidden 32, 4 heads, vocab 64), batch 8 x 8,
# AdamW (eps 1e-6, as tests/spmd_train.sh), 2 steps over 2 batches whose
# ignored labels (-100) fall unevenly on the microbatches (a whole sample of
# microbatch 0 at step 0, samples of both at step 1), so the microbatch
# losses must be weighted by their counted labels:
#   - one device, B = 2 and 4 = the same run with B = 1 (losses rtol 1e-4,
#     weights rtol 1e-4 / atol 1e-5), and B = 4 = torch 1.13 over the whole
#     batch (tests/train/torch_train.py; losses and weights within 1e-4);
#     MSE (weight 1/B) B = 2 = B = 1 on GPT-2, and with --clip-grad-norm
#     0.5 --recompute=all;
#   - 2 and 4 CPU ranks (dp 2, tp 2, zero 4 in both reduction forms,
#     dp,tp 2x2) with B = 2 or 4 = the one-device B = 1 run, and the bytes
#     the communicator counted = the planner's prediction x steps (the
#     program checks it; the test reads the counters again); ZeRO's forms:
#     --zero-reduce once reduce-scatters as many bytes as B = 1,
#     per-microbatch B times as many, and keeps only gradient shards (the
#     first microbatch's too): its arena below 3/4 of once's;
#   - memory: the arena of GPT-2 at seq 128 shrinks with B (one
#     microbatch's activations); --microbatches auto picks the fewest
#     microbatches that fit --memory-limit, on one device and through the
#     planner (--gpus 2), and reports it;
#   - plan.json records the microbatches and --plan compiles as many; the
#     planner's search takes --zero-reduce without --microbatches;
#   - bad input: a batch that does not split into B, --microbatches
#     without --train, --zero-reduce without --microbatches or with a bad
#     value, a microbatch dp does not divide, nothing fits under auto, a
#     plan.json with 0 microbatches: one error line each.
# GALV_ACCUM_CASES narrows the rank matrix: FAMILY:N:STRATEGY:B[:FORM] ...
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
TORCH_PY=/usr/bin/python3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
require_torch "$TORCH_PY"
export CFLAGS=-O0 # the programs are tiny and unrolled per microbatch: -O3 -march=native compiles are cpu_models.sh's
AD=(--eps 1e-6)
# build NAME MODEL GALVC_OPTIONS...; run NAME BATCHES: 2 steps -> $T/NAME.log, $T/NAME.w
build() {
  local n=$1 m=$2; shift 2
  timeout 300 "$BUILD/galvc" "$m" --batch 8 --seq 8 --train "${AD[@]}" "$@" --target cpu -q -o "$T/$n/" 2>"$T/$n.err" </dev/null ||
    { bad "$n: galvc $*: $(head -3 "$T/$n.err")"; return 1; }
}
run() {
  local n=$1 exe=program
  [ -x "$T/$n/launch" ] && exe=launch
  timeout 300 "$T/$n/$exe" --batches "$2" --steps 2 -o "$T/$n.w" --comm-stats </dev/null >"$T/$n.log" 2>"$T/$n.err" ||
    { bad "$n: run: $(grep -m3 error "$T/$n.err")"; return 1; }
}
same() { # REF RUN: losses and weights
  python3 - "$T" "$1" "$2" "$SRC/tests/lib" <<'PY'
import sys
sys.path.insert(0, sys.argv[4])
from same_training import check
t, a, b = sys.argv[1:4]
print(check(f"{t}/{a}.log", f"{t}/{b}.log", f"{t}/{a}.w", f"{t}/{b}.w"))
PY
}
# counted RUN KIND: bytes rank 0 sent of KIND in the 2 runs, checked = the global prediction x 2 (else an error)
counted() { python3 "$SRC/tests/lib/comm_counted.py" "$T/$1.log" 2 "$2"; }

for fam in gpt2 llama; do
  extra=()
  [ $fam = llama ] && extra=(--kv-heads 2)
  python3 "$SRC/examples/make_model.py" $fam -o "$T/$fam.onnx" --layers 2 --hidden 32 --heads 4 --vocab 64 "${extra[@]}" \
    --no-verify >/dev/null || { bad "$fam: make_model"; continue; }
done
python3 "$SRC/tests/train/onnx_dump.py" "$T/gpt2.onnx" "$T/gpt2.dump"
python3 "$SRC/tests/train/onnx_dump.py" "$T/llama.onnx" "$T/llama.dump"
python3 - "$T" <<'PY'
import numpy as np, os, sys
t = sys.argv[1]
r = np.random.RandomState(11)
os.makedirs(f"{t}/b"), os.makedirs(f"{t}/mse")
np.save(f"{t}/b/input_ids.npy", r.randint(0, 64, (2, 8, 8)).astype(np.int64))
lab = r.randint(0, 64, (2, 8, 8)).astype(np.int64)
lab[0, 0, :] = -100   # step 0: a whole sample of microbatch 0 (rows 2j) ignored
lab[0, 2, :5] = -100
lab[1, 3, :] = -100   # step 1: both microbatches lose labels
lab[1, 4, 2:] = -100
np.save(f"{t}/b/labels.npy", lab)
np.save(f"{t}/mse/input_ids.npy", np.load(f"{t}/b/input_ids.npy"))
np.save(f"{t}/mse/labels.npy", r.standard_normal((2, 8, 8, 64)).astype(np.float32))
PY

# one device: B = 1 (the reference), 2, 4; B = 4 against torch
for fam in gpt2 llama; do
  build "$fam-1" "$T/$fam.onnx" && run "$fam-1" "$T/b" || continue
  for B in 2 4; do
    build "$fam-b$B" "$T/$fam.onnx" --microbatches $B && run "$fam-b$B" "$T/b" || continue
    if r=$(same "$fam-1" "$fam-b$B" 2>&1); then ok "$fam one device, $B microbatches = 1: $r"
    else bad "$fam one device, $B microbatches vs 1: $r"; fi
  done
  "$TORCH_PY" "$SRC/tests/train/torch_train.py" "$T/$fam.dump" "$T/b/input_ids.npy" "$T/b/labels.npy" 2 "$T/$fam-torch.w" \
    adamw 1e-3 0.01 0.9 0.999 1e-6 0 >"$T/$fam-torch.log"
  if [ -f "$T/$fam-b4.log" ] && r=$("$TORCH_PY" "$SRC/tests/train/compare.py" "$T/$fam-b4.log" "$T/$fam-torch.log" "$T/$fam-b4.w" \
    "$T/$fam-torch.w" 1e-4 1e-4 2>&1); then
    ok "$fam one device, 4 microbatches = torch (whole batch): $(grep -E '^step 1|^params' <<<"$r" | tr '\n' ' ')"
  else bad "$fam 4 microbatches vs torch: $r"; fi
done
# with the other step options: recomputation and gradient clipping (the norm of the summed gradients)
if build clip-1 "$T/gpt2.onnx" --clip-grad-norm 0.5 && run clip-1 "$T/b" &&
   build clip-b2 "$T/gpt2.onnx" --clip-grad-norm 0.5 --recompute=all --microbatches 2 && run clip-b2 "$T/b"; then
  if r=$(same clip-1 clip-b2 2>&1); then ok "gpt2 --clip-grad-norm 0.5 --recompute=all, 2 microbatches = 1: $r"
  else bad "gpt2 clip + recompute, 2 microbatches vs 1: $r"; fi
fi
if build mse-1 "$T/gpt2.onnx" --loss mse && run mse-1 "$T/mse" && build mse-b2 "$T/gpt2.onnx" --loss mse --microbatches 2 &&
   run mse-b2 "$T/mse"; then
  if r=$(same mse-1 mse-b2 2>&1); then ok "gpt2 MSE, 2 microbatches = 1: $r"; else bad "gpt2 MSE, 2 microbatches vs 1: $r"; fi
fi

# ranks
for c in ${GALV_ACCUM_CASES:-gpt2:2:dp:2 gpt2:2:tp:4 gpt2:4:zero:1 gpt2:4:zero:2:once gpt2:4:zero:2:per-microbatch gpt2:4:dp,tp:4 \
  llama:2:dp:4 llama:2:tp:2 llama:4:zero:2:per-microbatch llama:4:dp,tp:2}; do
  IFS=: read -r fam n s B form <<<"$c"
  d="$fam-$n-${s/,/_}-b$B${form:+-$form}"
  mesh=() zr=()
  [ "$s" = dp,tp ] && mesh=(--mesh dp=2,tp=2)
  [ -n "$form" ] && zr=(--zero-reduce "$form")
  build "$d" "$T/$fam.onnx" --gpus "$n" --strategy "$s" "${mesh[@]}" --microbatches "$B" "${zr[@]}" || continue
  run "$d" "$T/b" || continue
  if ! rs=$(counted "$d" reduce_scatter 2>&1); then bad "$d: bytes: $rs"; continue; fi
  eval "rs_${d//[-,]/_}=$rs"
  if r=$(same "$fam-1" "$d" 2>&1); then
    ok "$fam $n ranks $s, $B microbatches${form:+ ($form)} = one device: $r; bytes counted = predicted: $(grep -m1 -o 'all_reduce [0-9]*, all_gather [0-9]*, reduce_scatter [0-9]*' "$T/$d.log")"
  else bad "$fam $n ranks $s, $B microbatches vs one device: $r"; fi
done
# ZeRO's reductions: once = B = 1's reduce-scatters, per-microbatch B times them
one=${rs_gpt2_4_zero_b1:-} once=${rs_gpt2_4_zero_b2_once:-} each=${rs_gpt2_4_zero_b2_per_microbatch:-}
if [ -n "$one" ] && [ -n "$once" ] && [ -n "$each" ]; then
  if [ "$one" -gt 0 ] && [ "$once" = "$one" ] && [ "$each" = $((2 * one)) ]; then
    ok "zero 4 ranks: reduce_scatter bytes B=1 $one, 2 microbatches once $once, per-microbatch $each"
  else bad "zero 4 ranks: reduce_scatter bytes B=1 $one, once $once, per-microbatch $each (want once = B=1, per-microbatch = 2x)"; fi
fi

# per-microbatch ZeRO keeps only shards of every microbatch's gradients, the first one's too (reduce-scattered at
# once, not held whole until the second microbatch's add): its arena below 3/4 of once's (which keeps the whole
# gradient sums); before, 279744 against 286080 bytes
za() { "$BUILD/galvc" "$T/gpt2.onnx" --batch 8 --seq 8 --train --gpus 4 --strategy zero --microbatches 2 --zero-reduce "$1" \
  --target cpu -o "$T/za-$1.mlir" 2>&1 | sed -n 's/^galvc: memory: .* arena \([0-9]*\)$/\1/p'; }
zo=$(za once) ze=$(za per-microbatch)
if [ -n "$zo" ] && [ -n "$ze" ] && [ $((4 * ze)) -lt $((3 * zo)) ]; then
  ok "zero 4 ranks, 2 microbatches: arena per-microbatch $ze bytes, once $zo"
else bad "zero 4 ranks, 2 microbatches: arena per-microbatch '$ze' not below 3/4 of once's '$zo'"; fi

# memory: GPT-2 at seq 128, the arena (one microbatch's activations) shrinks with B
arena() { sed -n 's/^galvc: memory: .* arena \([0-9]*\)$/\1/p' "$1"; }
for B in 1 2 4; do
  "$BUILD/galvc" "$T/gpt2.onnx" --batch 8 --seq 128 --train --microbatches $B -o "$T/m$B.mlir" 2>"$T/m$B.err" ||
    bad "seq 128, $B microbatches: $(grep -m1 error "$T/m$B.err")"
done
a1=$(arena "$T/m1.err") a2=$(arena "$T/m2.err") a4=$(arena "$T/m4.err")
if [ -n "$a1" ] && [ -n "$a2" ] && [ -n "$a4" ] && [ "$a2" -lt "$a1" ] && [ "$a4" -lt "$a2" ]; then
  ok "seq 128 arena: 1 microbatch $a1, 2: $a2, 4: $a4 bytes"
else bad "seq 128 arena does not shrink with microbatches: '$a1' '$a2' '$a4'"; fi
# --microbatches auto, one device: a limit 1 byte under the whole batch's memory -> 2 microbatches
A=("$BUILD/galvc" "$T/gpt2.onnx" --batch 8 --seq 128 --train)
t1=$("${A[@]}" --microbatches auto --memory-limit 100000000000 -o "$T/auto.mlir" 2>&1 |
  sed -n 's/^galvc: microbatches: 1 of 8 samples (batch 8): the fewest that fit (\([0-9]*\) bytes)$/\1/p')
out=$("${A[@]}" --microbatches auto --memory-limit $((${t1:-1} - 1)) -o "$T/auto.mlir" 2>&1)
if [ -n "$t1" ] && grep -q "^galvc: 1 microbatch of 8 need $t1 bytes, over $((t1 - 1)): trying 2$" <<<"$out" &&
   grep -q "^galvc: microbatches: 2 of 4 samples (batch 8): the fewest that fit" <<<"$out"; then
  ok "auto, one device, limit $((t1 - 1)): $(grep '^galvc: microbatches' <<<"$out")"
else bad "auto, one device, limit $((${t1:-1} - 1)): $(grep -m3 'microbatch\|error' <<<"$out")"; fi
# the planner (--gpus 2): a limit 1 byte under the smallest 1-microbatch plan -> 2 microbatches, with
# --microbatches auto and without (the fallback when the whole batch fits no plan)
# (--recompute=none: the microbatch search alone; recomputation searched with it is tests/plan_recompute.sh's)
A=("${A[@]}" --recompute=none)
p1=$("${A[@]}" --gpus 2 --plan-only --microbatches 1 --memory-limit 1000 -q 2>&1 | sed -n 's/.*no plan fits .* the smallest needs \([0-9]*\) bytes.*/\1/p')
if [ -n "$p1" ]; then
  lim=$((p1 - 1))
  # (auto: the fewest that fit, 2; without it the planner's default goes on past the fewest while
  # memory bound and faster, tests/plan_microbatches.sh: the compiled plan is the last one printed)
  for mb in auto ""; do
    out=$("${A[@]}" --gpus 2 --plan-only --memory-limit $lim ${mb:+--microbatches $mb} --plan-out "$T/pl$mb.json" 2>&1)
    got=$(sed -n 's/^plan: memory per device: .* total \([0-9]*\) of .*/\1/p' <<<"$out" | tail -1)
    nmb=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1])).get('microbatches', 1))" "$T/pl$mb.json" 2>/dev/null)
    # (auto walks the counts in turn: 2 is the fewest; the default prices the counts up to the stand-in's
    # (batch / gcd(batch, devices) = 4 here) from the program of 2, docs/planner.md "Microbatch counts priced",
    # and compiles the fewest whose scaled memory fits: a count >= 2 within the limit)
    if { { [ -n "$mb" ] && grep -q "^galvc: no plan fits with 1 microbatch of 8: trying 2$" <<<"$out" &&
           grep -q "^galvc: microbatches: 2 of 4 samples (batch 8): the fewest with a plan that fits$" <<<"$out"; } ||
         { [ -z "$mb" ] && grep -q "^galvc: no plan fits with 1 microbatch of 8: trying 4$" <<<"$out" &&
           grep -q "^plan: priced for 4 microbatches from the program of 2" <<<"$out"; }; } &&
       [ -n "$got" ] && [ "$got" -le "$lim" ] && { [ -z "$mb" ] || [ "$nmb" = 2 ]; } && [ "${nmb:-0}" -ge 2 ]; then
      ok "planner${mb:+ --microbatches $mb}, limit $lim (the smallest 1-microbatch plan needs $p1): fewest 2, chosen $nmb microbatches, $got bytes"
    else bad "planner${mb:+ --microbatches $mb}, limit $lim (1 microbatch needs $p1): chosen '$nmb': $(grep -m4 'microbatch\|error\|memory per' <<<"$out")"; fi
  done
  # plan.json records the microbatches; --plan compiles as many (the same memory), another --microbatches is an error
  other=$(( nmb == 8 ? 4 : 8 ))
  re=$("${A[@]}" --gpus 2 --plan-only --plan "$T/pl.json" 2>&1 | sed -n 's/^plan: memory per device: .* total \([0-9]*\) of .*/\1/p')
  e=$("${A[@]}" --gpus 2 --plan-only --plan "$T/pl.json" --microbatches $other 2>&1); rc=$?
  if grep -q "\"microbatches\": $nmb," "$T/pl.json" && [ -n "$got" ] && [ "$re" = "$got" ] && [ $rc = 2 ] &&
     grep -q "the plan accumulates $nmb microbatches" <<<"$e"; then
    ok "--plan: plan.json's $nmb microbatches reproduced ($re bytes); --microbatches $other with it is an error"
  else bad "--plan with microbatches: '$re' vs '$got': $(grep microbatches "$T/pl.json"); exit $rc: $e"; fi
  # --zero-reduce with the planner's microbatch search (no --microbatches): every count's program reduces so, and
  # plan.json records it
  out=$("${A[@]}" --gpus 2 --plan-only --memory-limit $lim --zero-reduce per-microbatch --plan-out "$T/plz.json" 2>&1)
  if grep -q '"zero_reduce": "per-microbatch"' "$T/plz.json" 2>/dev/null; then
    ok "planner --zero-reduce per-microbatch without --microbatches: $(grep -o '"microbatches": [0-9]*' "$T/plz.json"), per-microbatch"
  else bad "planner --zero-reduce per-microbatch without --microbatches: $(grep -m2 'error\|microbatch' <<<"$out")"; fi
else bad "planner: no 'smallest needs' figure for 1 microbatch"; fi

# bad input: one error line each
python3 -c "
import json, sys
p = json.load(open('$T/pl.json')); p['microbatches'] = 0; json.dump(p, open('$T/pl0.json', 'w'))"
for a in "--train --microbatches 3" "--microbatches 2" "--train --zero-reduce once" "--train --microbatches 2 --zero-reduce twice" \
         "--train --gpus 4 --strategy zero --microbatches 4" "--train --microbatches auto --memory-limit 1000" \
         "--train --gpus 2 --plan $T/pl0.json"; do
  # shellcheck disable=SC2086
  out=$("$BUILD/galvc" "$T/gpt2.onnx" --batch 8 --seq 8 $a --target cpu -q -o "$T/bad/" 2>&1 </dev/null); rc=$?
  if [ "$rc" != 0 ] && [ "$(grep -c 'error:' <<<"$out")" = 1 ] && [ "$(wc -l <<<"$out")" = 1 ]; then ok "$a: $out"
  else bad "$a: exit $rc: $out"; fi
done
grep -q "input 'input_ids': its batch (dim 0) of 8 does not split into --microbatches 3" <<<"$("$BUILD/galvc" "$T/gpt2.onnx" \
  --batch 8 --seq 8 --train --microbatches 3 -q 2>&1)" && ok "the indivisible batch names the input" ||
  bad "the indivisible batch's error does not name the input"
echo "train_accum: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
