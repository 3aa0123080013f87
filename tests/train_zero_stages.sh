#!/usr/bin/env bash
# ZeRO stages per layer group (docs/sharding.md, "ZeRO stages"): tiny GPT-2-
# and Llama-style models (2 layers, hidden 32, 4 heads, vocab 64), batch 8 x
# 8, AdamW (eps 1e-6, as tests/spmd_train.sh), 2 steps over 2 batches:
#   - --strategy zero1 | zero2 | zero3 and a mixed plan.json (different
#     stages on the outer unit and each layer, --plan), on 2 and 4 CPU ranks
#     (and zero1,tp, zero3,tp on dp=2 x tp=2) = the one-device program (losses rtol
#     1e-4, weights rtol 1e-4 / atol 1e-5); the bytes the communicator
#     counted = the prediction x steps (the program checks it; the test
#     reads the counters again);
#   - the collective kinds of a layer per stage, from galvc's per-layer
#     summary: stage 1 all_reduce + all_gather, stage 2 reduce_scatter +
#     all_gather, stage 3 all_gather + reduce_scatter, no other kind (under zero3,tp also the tp blocks' all_reduces); on GPT-2
#     with 2 ranks the bytes of layer h.0 = the formulas of docs/sharding.md
#     over its parameter bytes n (read from the ONNX file): stage 1 backward
#     all_reduce 2(p-1)n/p = n, optimizer all_gather (p-1)n/p = n/2; stage 2
#     backward reduce_scatter n/2, optimizer all_gather n/2; stage 3 forward
#     all_gather n/2, backward all_gather w/2 again (w: the bytes of the
#     parameters the backward reads, every one but the biases: the
#     regather pass gathers them anew instead of keeping the forward's
#     copy), optimizer reduce_scatter n/2;
#   - memory (--report-cost on 4 ranks): the model states (parameters +
#     optimizer state + gradients) ordered dp > zero1 >= zero2 > zero3, and
#     every run's predicted memory (parameters + optimizer state + arena)
#     within 5% of what rank 0 measured (the state buffer + the arena's
#     high-water mark, printed by the training runtime after step 0);
#   - --report-cost's "zero stages" line names each layer's stage;
#   - --microbatches 2: zero1 accumulates whole gradients and all-reduces
#     once (each layer's backward bytes = one microbatch's), zero2
#     reduce-scatters each microbatch's gradient (twice them) and holds
#     only shards (a quarter of zero1's gradient bytes on 4 ranks); both =
#     one device;
#   - bad input: an unknown stage (a preset, --zero-stages), a plan.json
#     stage that is no 0-3, a unit that names no layer of the model, a ZeRO
#     stage without a dp axis (the preset and plan.json), --zero-stages
#     with a preset: one error line each.
# GALV_ZERO_CASES narrows the rank matrix: FAMILY:N:SPEC ...
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
export CFLAGS=-O0 # tiny programs: -O3 -march=native compiles are cpu_models.sh's
AD=(--eps 1e-6)
build() { # NAME MODEL GALVC_OPTIONS...: the program in $T/NAME/, galvc's report in $T/NAME.err
  local n=$1 m=$2; shift 2
  timeout 300 "$BUILD/galvc" "$m" --batch 8 --seq 8 --train "${AD[@]}" "$@" --target cpu -o "$T/$n/" 2>"$T/$n.err" </dev/null ||
    { bad "$n: galvc $*: $(grep -m3 error "$T/$n.err")"; return 1; }
}
run() { # NAME: 2 steps -> $T/NAME.log, $T/NAME.w
  local n=$1 exe=program
  [ -x "$T/$n/launch" ] && exe=launch
  timeout 300 "$T/$n/$exe" --batches "$T/b" --steps 2 -o "$T/$n.w" --comm-stats </dev/null >"$T/$n.log" 2>"$T/$n.err2" ||
    { bad "$n: run: $(grep -m3 error "$T/$n.err2")"; return 1; }
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
# counted RUN KIND: bytes rank 0 sent of KIND (all: every kind) in the 2 runs, checked = the global prediction x 2
counted() { python3 "$SRC/tests/lib/comm_counted.py" "$T/$1.log" 2 "$2"; }
# layer NAME LAYER: "fwd_n fwd_b bwd_n bwd_b opt_n opt_b AR AG RS A2A" of galvc's per-layer summary
layer() {
  awk -v L="$2" '$1 == "galvc:" && $2 == "spmd:" && $3 == L && NF == 10 { split($10, k, "/"); print $4, $5, $6, $7, $8, $9, k[1], k[2], k[3]; exit }' "$T/$1.err"
}
# kinds STAGE "AR AG RS": the kinds a layer at STAGE uses, and only those
kinds_ok() { # STAGE "AR AG RS" [STRATEGY]: under ...,tp the tp blocks' activation sums add all_reduces to every stage
  local st=$1 ar ag rs tp=0
  read -r ar ag rs <<<"$2"
  [[ ${3:-} == *,tp ]] && tp=1
  case $st in
  0) [ "$ar" -gt 0 ] && [ "$ag" = 0 ] && [ "$rs" = 0 ] ;;
  1) [ "$ar" -gt 0 ] && [ "$ag" -gt 0 ] && [ "$rs" = 0 ] ;;
  2 | 3) { [ "$ar" = 0 ] || [ $tp = 1 ]; } && [ "$ag" -gt 0 ] && [ "$rs" -gt 0 ] ;;
  *) false ;;
  esac
}
# memory NAME: predicted (parameters + optimizer state + arena, --report-cost) vs each rank's measured (state + arena high-water)
memory() {
  python3 - "$T/$1.cost" "$T/$1.log" <<'PY'
import re, sys
c = open(sys.argv[1]).read()
m = re.search(r"^memory per device: parameters (\d+), optimizer state (\d+), arena (\d+)", c, re.M)
if not m:
    sys.exit("no --report-cost memory line")
p = sum(int(x) for x in m.groups())
got = [int(x) for x in re.findall(r"memory: state \d+ bytes \+ arena high-water \d+ bytes .* = (\d+) bytes", open(sys.argv[2]).read())]
if not got:
    sys.exit("no measured memory line")
w = max(got, key=lambda g: abs(g - p))
if abs(w - p) > 0.05 * p:
    sys.exit(f"measured {w} vs predicted {p}: {100 * (w - p) / p:+.2f}%")
print(f"memory predicted {p} vs measured {min(got)}-{max(got)} ({100 * (w - p) / p:+.2f}% at worst, {len(got)} ranks)")
PY
}

. "$SRC/tests/lib/tiny_lms.sh"
tiny_lms "$T"
python3 - "$T" <<'PY'
import numpy as np, os, sys
t = sys.argv[1]
r = np.random.RandomState(11)
os.makedirs(f"{t}/b")
np.save(f"{t}/b/input_ids.npy", r.randint(0, 64, (2, 8, 8)).astype(np.int64))
lab = r.randint(0, 64, (2, 8, 8)).astype(np.int64)
lab[0, 0, :] = -100
lab[1, 4, 2:] = -100
np.save(f"{t}/b/labels.npy", lab)
PY
# layer h.0's parameter bytes (GPT-2), all and without the biases, for the hand-computed figures
read -r n0 w0 < <(python3 - "$T/gpt2.onnx" <<'PY'
import sys, onnx, numpy as np
m = onnx.load(sys.argv[1])
h0 = [i for i in m.graph.initializer if ".h.0." in i.name or i.name.startswith("h.0.")]
print(sum(4 * int(np.prod(i.dims)) for i in h0), sum(4 * int(np.prod(i.dims)) for i in h0 if not i.name.endswith("bias")))
PY
)

for fam in gpt2 llama; do
  build "$fam-1" "$T/$fam.onnx" -q && run "$fam-1"
done

# mixed plans: the planner's plan.json on a dp mesh, stages set per unit (outer, layer 0, layer 1)
mixed_plan() { # FAMILY N STAGES... -> $T/FAMILY-N.plan.json
  local fam=$1 n=$2; shift 2
  "$BUILD/galvc" "$T/$fam.onnx" --batch 8 --seq 8 --train "${AD[@]}" --gpus "$n" --mesh dp="$n" --target cpu --plan-only \
    --plan-out "$T/$fam-$n.base.json" -q 2>"$T/plan.err" || { bad "$fam $n: planner: $(head -2 "$T/plan.err")"; return 1; }
  python3 - "$T/$fam-$n.base.json" "$T/$fam-$n.plan.json" "$@" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["batch_axes"], p["tp_axis"], p["vocab_axis"] = ["dp"], None, None
for u, z in zip(p["units"], sys.argv[3:]):
    u["zero"] = int(z)
json.dump(p, open(sys.argv[2], "w"), indent=1)
PY
}

for c in ${GALV_ZERO_CASES:-gpt2:2:zero1 gpt2:2:zero2 gpt2:2:zero3 gpt2:4:mixed:2,1,3 gpt2:4:zero1,tp gpt2:4:zero3,tp \
  llama:4:zero1 llama:4:zero2 llama:4:zero3,tp llama:2:mixed:1,3,2}; do
  IFS=: read -r fam n s stages <<<"$c"
  d="$fam-$n-${s/,/_}"
  opt=()
  case $s in
  mixed) mixed_plan "$fam" "$n" ${stages//,/ } || continue; opt=(--gpus "$n" --plan "$T/$fam-$n.plan.json") ;;
  *,tp) opt=(--gpus "$n" --strategy "$s" --mesh dp=2,tp=$((n / 2))) ;;
  *) opt=(--gpus "$n" --strategy "$s") ;;
  esac
  build "$d" "$T/$fam.onnx" "${opt[@]}" || continue
  "$BUILD/galvc" "$T/$fam.onnx" --batch 8 --seq 8 --train "${AD[@]}" "${opt[@]}" --target cpu --emit=ir -o "$T/$d.mlir" -q \
    --report-cost >"$T/$d.cost" 2>&1 || bad "$d: --report-cost"
  run "$d" || continue
  if ! b=$(counted "$d" all 2>&1); then bad "$d: bytes: $b"; continue; fi
  if r=$(same "$fam-1" "$d" 2>&1); then ok "$fam $n ranks $s${stages:+ ($stages)} = one device: $r; bytes counted = predicted: $b"
  else bad "$fam $n ranks $s vs one device: $r"; fi
  if r=$(memory "$d" 2>&1); then ok "$d: $r"; else bad "$d: $r"; fi
  # --report-cost names the stage per layer
  zl=$(grep '^zero stages: ' "$T/$d.cost" | sed 's/ (per layer.*//')
  lay=h; [ $fam = llama ] && lay=layers
  case $s in
  mixed) IFS=, read -r z0 z1 z2 <<<"$stages"; want="zero stages: other $z0; $lay.0 $z1; $lay.1 $z2" ;;
  *) st=${s#zero}; st=${st%,tp}; want="zero stages: other $st; $lay.0-$lay.1 $st" ;;
  esac
  if [ "$zl" = "$want" ]; then ok "$d: --report-cost: $zl"; else bad "$d: --report-cost '$zl', want '$want'"; fi
  # the kinds per layer, by stage
  for l in 0 1; do
    st=${s#zero}; st=${st%,tp}
    [ "$s" = mixed ] && st=$(cut -d, -f$((l + 2)) <<<"$stages")
    name=h.$l; [ $fam = llama ] && name=layers.$l
    row=$(layer "$d" "$name")
    read -r _ _ _ _ _ _ ar ag rs <<<"$row"
    if [ -n "$row" ] && kinds_ok "$st" "$ar $ag $rs" "$s"; then ok "$d: $name at stage $st: all_reduce/all_gather/reduce_scatter $ar/$ag/$rs"
    else bad "$d: $name at stage $st: kinds '$ar/$ag/$rs' (row '$row')"; fi
  done
done

# hand-computed bytes of layer h.0 on 2 ranks (n = its parameter bytes, p = 2)
for st in 1 2 3; do
  row=$(layer "gpt2-2-zero$st" h.0)
  [ -n "$row" ] || { bad "gpt2 2 ranks zero$st: no h.0 row"; continue; }
  read -r fn fb bn bb on ob _ <<<"$row"
  case $st in
  1) want="0 $n0 $((n0 / 2))" ;; # backward all_reduce 2(p-1)n/p, optimizer all_gather (p-1)n/p
  2) want="0 $((n0 / 2)) $((n0 / 2))" ;; # backward reduce_scatter, optimizer all_gather
  3) want="$((n0 / 2)) $((w0 / 2)) $((n0 / 2))" ;; # forward all_gather, backward all_gather again (no biases), optimizer reduce_scatter
  esac
  got="$fb $bb $ob"
  if [ -n "$n0" ] && [ "$n0" -gt 0 ] && [ "$got" = "$want" ]; then
    ok "gpt2 2 ranks zero$st, layer h.0 ($n0 parameter bytes): forward/backward/optimizer bytes $fb/$bb/$ob = the formulas"
  else bad "gpt2 2 ranks zero$st, layer h.0 ($n0 parameter bytes): bytes forward/backward/optimizer $fb/$bb/$ob, want $want"; fi
done

# zero3,tp keeps the tp split of every weight (a row-parallel weight split on its rows by tp takes the dp
# split on its columns): the local dots compute what zero1,tp's compute (no dot replicated over tp)
dotf() { sed -n 's/^total: .*FLOPs [0-9]* ([^;]*; dot \([0-9]*\)).*/\1/p' "$1"; }
cases=" ${GALV_ZERO_CASES:-gpt2:4:zero1,tp gpt2:4:zero3,tp} " # both ran (the default list has them): the check runs
if [[ $cases == *" gpt2:4:zero1,tp "* && $cases == *" gpt2:4:zero3,tp "* ]]; then
  f1=$(dotf "$T/gpt2-4-zero1_tp.cost" 2>/dev/null) f3=$(dotf "$T/gpt2-4-zero3_tp.cost" 2>/dev/null)
  if [ -n "$f1" ] && [ "$f1" = "$f3" ]; then ok "gpt2 dp=2 x tp=2: zero3,tp dot FLOPs per device $f3 = zero1,tp's"
  else bad "gpt2 dp=2 x tp=2: zero3,tp dot FLOPs per device '$f3', zero1,tp's '$f1' (a weight lost its tp split)"; fi
fi

# model states per stage on 4 ranks: dp > zero1 >= zero2 > zero3
states() { # STRATEGY: parameters + optimizer state + gradients of --report-cost
  "$BUILD/galvc" "$T/gpt2.onnx" --batch 8 --seq 8 --train "${AD[@]}" --gpus 4 --strategy "$1" --target cpu --emit=ir \
    -o "$T/st.mlir" -q --report-cost "${@:2}" 2>&1 |
    sed -n 's/^memory per device: parameters \([0-9]*\), optimizer state \([0-9]*\), arena [0-9]* (gradients \([0-9]*\) .*/\1 \2 \3/p'
}
s0=$(states dp) s1=$(states zero1) s2=$(states zero2) s3=$(states zero3)
tot() { local a b c; read -r a b c <<<"$1"; echo $((a + b + c)); }
if [ -n "$s0" ] && [ -n "$s1" ] && [ -n "$s2" ] && [ -n "$s3" ] && [ "$(tot "$s0")" -gt "$(tot "$s1")" ] &&
  [ "$(tot "$s1")" -ge "$(tot "$s2")" ] && [ "$(tot "$s2")" -gt "$(tot "$s3")" ]; then
  ok "gpt2 4 ranks, model states (parameters optimizer gradients): dp $s0 > zero1 $s1 >= zero2 $s2 > zero3 $s3"
else bad "gpt2 4 ranks, model states: dp '$s0', zero1 '$s1', zero2 '$s2', zero3 '$s3' (want dp > zero1 >= zero2 > zero3)"; fi

# gradient accumulation: zero1 reduces once, zero2 per microbatch
for st in 1 2; do
  d=gpt2-2-zero$st-b2
  build "$d" "$T/gpt2.onnx" --gpus 2 --strategy zero$st --microbatches 2 && run "$d" || continue
  if r=$(same gpt2-1 "$d" 2>&1); then ok "gpt2 2 ranks zero$st, 2 microbatches = one device: $r"
  else bad "gpt2 2 ranks zero$st, 2 microbatches vs one device: $r"; fi
  if ! b=$(counted "$d" all 2>&1); then bad "$d: bytes: $b"; fi
  # the layers' gradient reductions (backward rows): zero1 once (= 1 microbatch), zero2 per microbatch (2x)
  for l in h.0 h.1; do
    read -r _ _ _ b1 _ _ ar1 _ rs1 <<<"$(layer gpt2-2-zero$st $l)"
    read -r _ _ _ b2 _ _ ar2 _ rs2 <<<"$(layer "$d" $l)"
    if [ $st = 1 ]; then want=$b1 kind="all_reduce $ar1 -> $ar2"; else want=$((2 * ${b1:-0})) kind="reduce_scatter $rs1 -> $rs2"; fi
    if [ -n "${b1:-}" ] && [ "${b1:-0}" -gt 0 ] && [ "${b2:-}" = "$want" ]; then
      ok "gpt2 2 ranks zero$st, $l backward: 2 microbatches $b2 bytes, 1 microbatch $b1 ($kind)"
    else bad "gpt2 2 ranks zero$st, $l backward: 2 microbatches '${b2:-}' bytes, 1 microbatch '${b1:-}' (want $want)"; fi
  done
done
g1=$(states zero1 --microbatches 2) g2=$(states zero2 --microbatches 2)
read -r _ _ gg1 <<<"$g1"
read -r _ _ gg2 <<<"$g2"
if [ -n "${gg1:-}" ] && [ -n "${gg2:-}" ] && [ "$gg1" -eq $((4 * gg2)) ]; then
  ok "4 ranks, 2 microbatches: zero1 holds whole gradients ($gg1 bytes), zero2 shards ($gg2 = 1/4)"
else bad "4 ranks, 2 microbatches: gradients zero1 '${gg1:-}' vs zero2 '${gg2:-}' (want 4x)"; fi

# bad input: one error line each, non-zero exit
err1() { # WANT CMD...: fails with one line matching WANT
  local want=$1 out rc; shift
  out=$("$@" 2>&1 >/dev/null); rc=$?
  if [ $rc -ne 0 ] && [ "$(wc -l <<<"$out")" = 1 ] && grep -q -- "$want" <<<"$out"; then ok "bad input: $out"
  else bad "bad input (want '$want'): rc $rc: $out"; fi
}
G=("$BUILD/galvc" "$T/gpt2.onnx" --batch 8 --seq 8 --train --target cpu --emit=ir -o "$T/bad.mlir" -q)
err1 "unknown strategy 'zero4'" "${G[@]}" --gpus 2 --strategy zero4
err1 "ZeRO shards over the data-parallel mesh axis dp" "${G[@]}" --gpus 2 --strategy zero1 --mesh tp=2
err1 "ZeRO shards over the data-parallel mesh axis dp" "${G[@]}" --gpus 4 --strategy zero2,tp --mesh x=2,tp=2
err1 "--zero-stages 4: expected a list of ZeRO stages from 1 to 3" "${G[@]}" --gpus 2 --zero-stages 4
err1 "--zero-stages 1,1: expected a list of ZeRO stages from 1 to 3" "${G[@]}" --gpus 2 --zero-stages 1,1
err1 "--zero-stages applies to the planner" "${G[@]}" --gpus 2 --strategy zero1 --zero-stages 1
if [ -f "$T/gpt2-4.plan.json" ]; then
  python3 - "$T/gpt2-4.plan.json" "$T" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
def put(name, f):
    q = json.loads(json.dumps(p))
    f(q)
    json.dump(q, open(f"{sys.argv[2]}/{name}.json", "w"), indent=1)
put("stage5", lambda q: q["units"][1].update(zero=5))
put("nolayer", lambda q: q["units"][2].update(unit="layer 7"))
put("nodp", lambda q: q.update(batch_axes=[]))
PY
  err1 "each unit needs \"zero\": its ZeRO stage 0, 1, 2 or 3" "${G[@]}" --gpus 4 --plan "$T/stage5.json"
  err1 "unit 'layer 7' names no layer of the model (layers 0-1)" "${G[@]}" --gpus 4 --plan "$T/nolayer.json"
  err1 "has ZeRO stage 2, but the plan has no batch axes" "${G[@]}" --gpus 4 --plan "$T/nodp.json"
fi
echo "train_zero_stages: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
