#!/usr/bin/env bash
# ZeRO-1/2 under 16-bit training (docs/sharding.md, "ZeRO stages", the
# distributed optimizer): tiny GPT-2- and Llama-style models
# (tests/lib/tiny_lms.sh), batch 8 x 8, AdamW, --precision bf16, 2 steps:
#   - --strategy zero1 | zero2 on 2 and 4 CPU ranks = the bf16 one-device
#     program (losses within 1e-3: tests/cpu_bf16.sh's bound for 2 ranks);
#     the bytes the communicator counted = the prediction x 2;
#   - the layout: the state buffer holds each parameter's fp32 master split
#     (parameters = the one-device program's / N, up to 64-byte slot
#     alignment) with its optimizer state;
#     galvc's memory line counts the whole 16-bit working copies in the
#     arena; the per-layer summary of each layer h.N / layers.N shows no
#     collective in the optimizer (nothing gathered after the update) and
#     its forward all_gathers move 2 bytes per element: (N-1)/N x 2 x the
#     layer's parameter count (every one of its parameters is read 16-bit);
#   - the measured memory (state + arena high-water) = the plan's, and on 2
#     ranks below the dp program's;
#   - a checkpoint after step 1 (zero1, 2 ranks) resumed for step 2 = the
#     uninterrupted run, and loaded by the one-device program (the fp32
#     master, gathered);
#   - zero1,tp and zero3,tp on dp=2 x tp=2 = one device, bytes = predicted;
#   - --microbatches 2 (zero2): one gather of the copy per step, = one device;
#   - --precision fp32 --strategy zero1 keeps the parameter whole (no working
#     copy).
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
. "$SRC/tests/lib/tiny_lms.sh"
export CFLAGS=-O0
tiny_lms "$T"
python3 - "$T" <<'PY'
import numpy as np, os, sys
t = sys.argv[1]
r = np.random.RandomState(11)
os.makedirs(f"{t}/b")
np.save(f"{t}/b/input_ids.npy", r.randint(0, 64, (2, 8, 8)).astype(np.int64))
lab = r.randint(0, 64, (2, 8, 8)).astype(np.int64)
lab[0, 0, :] = -100
np.save(f"{t}/b/labels.npy", lab)
PY
compile() { # NAME MODEL OPTIONS...
  local n=$1 m=$2; shift 2
  timeout 300 "$BUILD/galvc" "$m" --batch 8 --seq 8 --train --eps 1e-6 --precision bf16 "$@" --target cpu --report-cost -o "$T/$n/" \
    >"$T/$n.cost" 2>"$T/$n.err" </dev/null || { bad "$n: galvc $*: $(grep -m2 error "$T/$n.err")"; return 1; }
}
run() { # NAME [ARGS...]: 2 steps (unless ARGS say otherwise) -> $T/NAME.log
  local n=$1 exe=program
  shift
  [ -x "$T/$n/launch" ] && exe=launch
  timeout 300 "$T/$n/$exe" --batches "$T/b" --comm-stats "$@" </dev/null >"$T/$n.log" 2>&1 ||
    { bad "$n: run: $(grep -m2 -i error "$T/$n.log")"; return 1; }
}
losses() { grep -o "^step [0-9]* loss [^ ]*" "$1" | awk '{print $4}' | tr '\n' ' '; }
plan_ok() { grep -q "high-water" "$1" && ! grep "high-water" "$1" | grep -v -q "high-water \([0-9]*\) bytes (measured: [^;]*; plan: \1)"; }
measured() { sed -n 's/.*rank 0: memory: state \([0-9]*\) bytes + arena high-water \([0-9]*\) bytes.*/\1 \2/p' "$1" | head -1; }
state_params() { sed -n 's/.*training step: .* state [0-9]* bytes (parameters \([0-9]*\)).*/\1/p' "$1" | head -1; }

for fam in gpt2 llama; do
  M=$T/$fam.onnx
  compile one_$fam "$M" && run one_$fam --steps 2 || continue
  ref=$(losses "$T/one_$fam.log") p1=$(state_params "$T/one_$fam.log")
  # per-layer parameter counts from the ONNX file (the first layer: h.0 / layers.0)
  read -r lay n0 < <(python3 - "$M" <<'PY'
import onnx, sys, numpy as np
g = onnx.load(sys.argv[1]).graph
lay = "h.0" if any(".h.0." in i.name or i.name.startswith("h.0.") for i in g.initializer) else "layers.0"
print(lay, sum(int(np.prod(i.dims)) for i in g.initializer if f"{lay}." in i.name and i.data_type == 1))
PY
  )
  compile dp_$fam "$M" --gpus 2 --strategy dp && run dp_$fam --steps 2
  for N in 2 4; do
    for s in zero1 zero2; do
      d=${s}_${fam}_$N
      compile $d "$M" --gpus $N --strategy $s && run $d --steps 2 || continue
      a=$(losses "$T/$d.log")
      if python3 -c "
import sys
a, b = [float(x) for x in '$ref'.split()], [float(x) for x in '$a'.split()]
sys.exit(0 if len(a) == len(b) == 2 and max(abs(x - y) for x, y in zip(a, b)) <= 1e-3 else 1)"; then
        ok "$fam $N ranks $s bf16: losses $a vs one device $ref"
      else bad "$fam $N ranks $s bf16: losses $a vs one device $ref"; fi
      if c=$(python3 "$SRC/tests/lib/comm_counted.py" "$T/$d.log" 2); then ok "$d: bytes counted = predicted x 2 ($c)"
      else bad "$d: bytes counted vs predicted: $c"; fi
      pN=$(state_params "$T/$d.log")
      # = p1 / N, up to the state slots' 64-byte alignment (<= 5 %)
      if [ -n "$pN" ] && [ $((pN * N)) -ge "$p1" ] && [ $((pN * N * 100)) -le $((p1 * 105)) ]; then
        ok "$d: the state holds the fp32 masters split: parameters $pN ~ $p1 / $N"
      else bad "$d: state parameters '$pN', want $p1 / $N (within 5 %)"; fi
      wc=$(sed -n 's/.*16-bit working copies \([0-9]*\) (in the arena).*/\1/p' "$T/$d.err")
      if [ -n "$wc" ] && [ "$wc" -ge $((p1 / 2)) ]; then ok "$d: whole 16-bit working copies $wc bytes in the arena (fp32 parameters $p1)"
      else bad "$d: working copies '$wc' bytes, want >= $((p1 / 2))"; fi
      # the first layer: forward all_gathers at 2 bytes per element, nothing in the optimizer column
      read -r fn fb bn bb on ob _ < <(awk -v L="$lay" '$1 == "galvc:" && $2 == "spmd:" && $3 == L && NF == 10 { print $4, $5, $6, $7, $8, $9; exit }' "$T/$d.err")
      # node names: /transformer/h.0/... (GPT-2), /model/layers/0/... (Llama)
      ag=$(awk -v L="/$lay/" -v L2="/${lay/./\/}/" '$1 == "galvc:" && $2 == "spmd:" && $3 == "all_gather" && (index($NF, L) || index($NF, L2)) && $NF !~ /grad/ { s += $(NF-1) } END { print s + 0 }' "$T/$d.err")
      want=$(((N - 1) * n0 * 2 / N))
      if [ "${on:-x}" = 0 ] && [ "${ob:-x}" = 0 ] && [ "$ag" = "$want" ]; then
        ok "$d: layer $lay ($n0 parameters): forward all_gathers $ag bytes = (N-1)/N x 2 bytes each, none after the update"
      else bad "$d: layer $lay: optimizer collectives '$on' ('$ob' bytes), forward all_gather bytes $ag (want $want, 0 in the optimizer)"; fi
      plan_ok "$T/$d.log" || bad "$d: measured high-water differs from the plan"
      [ $N = 2 ] || continue
      read -r st hw <<<"$(measured "$T/$d.log")"
      read -r st0 hw0 <<<"$(measured "$T/dp_$fam.log")"
      if [ -n "$st" ] && [ -n "$st0" ] && [ $((st + hw)) -lt $((st0 + hw0)) ]; then
        ok "$d: memory measured $((st + hw)) (state $st + arena $hw) < dp's $((st0 + hw0)) (state $st0 + arena $hw0)"
      else bad "$d: memory measured '$st + $hw' vs dp's '$st0 + $hw0'"; fi
    done
  done
done

# with tp (dp=2 x tp=2, GPT-2): zero1,tp splits the tp shard of each master over dp and gathers its 16-bit copy
# over dp only; zero3,tp alike per layer (the overlap pass once crashed prefetching these gathers: a group's
# 16-bit copy right after its previous layer's reader)
for s in zero1,tp zero3,tp; do
  d=tp_${s%%,*}
  compile $d "$T/gpt2.onnx" --gpus 4 --mesh dp=2,tp=2 --strategy $s && run $d --steps 2 || continue
  a=$(losses "$T/$d.log") ref=$(losses "$T/one_gpt2.log")
  if python3 -c "
import sys
a, b = [float(x) for x in '$ref'.split()], [float(x) for x in '$a'.split()]
sys.exit(0 if len(a) == len(b) == 2 and max(abs(x - y) for x, y in zip(a, b)) <= 1e-3 else 1)" &&
    c=$(python3 "$SRC/tests/lib/comm_counted.py" "$T/$d.log" 2); then
    ok "gpt2 dp=2 x tp=2 $s bf16: losses $a vs one device $ref; bytes counted = predicted x 2 ($c)"
  else bad "gpt2 dp=2 x tp=2 $s bf16: losses '$a' vs one device '$ref' ${c:-}"; fi
done

# --microbatches 2 (zero2, GPT-2, 2 ranks): the copy is gathered once per step for both microbatches (the
# all_gather bytes = one microbatch's run's), = the one-device program with 2 microbatches
if compile mb_one "$T/gpt2.onnx" --microbatches 2 && run mb_one --steps 2 &&
  compile mb_zero2 "$T/gpt2.onnx" --microbatches 2 --gpus 2 --strategy zero2 && run mb_zero2 --steps 2; then
  a=$(losses "$T/mb_one.log") b=$(losses "$T/mb_zero2.log")
  g1=$(python3 "$SRC/tests/lib/comm_counted.py" "$T/zero2_gpt2_2.log" 2 all_gather 2>&1)
  g2=$(python3 "$SRC/tests/lib/comm_counted.py" "$T/mb_zero2.log" 2 all_gather 2>&1)
  if python3 -c "
import sys
a, b = [float(x) for x in '$a'.split()], [float(x) for x in '$b'.split()]
sys.exit(0 if len(a) == len(b) == 2 and max(abs(x - y) for x, y in zip(a, b)) <= 1e-3 else 1)" && [ -n "$g1" ] && [ "$g1" = "$g2" ]; then
    ok "zero2 bf16, 2 microbatches: losses $b vs one device $a; all_gather $g2 bytes = one microbatch's $g1 (one copy per step)"
  else bad "zero2 bf16, 2 microbatches: losses '$b' vs '$a', all_gather '$g2' vs '$g1'"; fi
fi

# --microbatches 2 and --zero-reduce (GPT-2, 2 ranks, bf16): ZeRO-3 reduce-scatters each microbatch's gradient by
# default (twice the reduce-scatter bytes of --zero-reduce once, which sums whole gradients and reduces once) and holds
# only gradient shards; ZeRO-1, whose master is split too under 16-bit training, sums whole gradients and all-reduces
# them once in either form (each layer's all-reduce bytes = one microbatch's run's); every form = one device
arena() { sed -n 's/.*arena \([0-9]*\) (gradients.*/\1/p' "$1" | head -1; }
if [ -f "$T/mb_one.log" ]; then
  a=$(losses "$T/mb_one.log")
  for f in z3:zero: z3o:zero:once z1:zero1: z1o:zero1:once; do
    IFS=: read -r n s form <<<"$f"
    compile mb_$n "$T/gpt2.onnx" --microbatches 2 --gpus 2 --strategy $s ${form:+--zero-reduce $form} && run mb_$n --steps 2 || continue
    b=$(losses "$T/mb_$n.log")
    if python3 -c "
import sys
a, b = [float(x) for x in '$a'.split()], [float(x) for x in '$b'.split()]
sys.exit(0 if len(a) == len(b) == 2 and max(abs(x - y) for x, y in zip(a, b)) <= 1e-3 else 1)" &&
      c=$(python3 "$SRC/tests/lib/comm_counted.py" "$T/mb_$n.log" 2); then
      ok "$s bf16, 2 microbatches${form:+, --zero-reduce $form}: losses $b vs one device $a; bytes counted = predicted x 2 ($c)"
    else bad "$s bf16, 2 microbatches${form:+, --zero-reduce $form}: losses '$b' vs one device '$a' ${c:-}"; fi
  done
  rs3=$(python3 "$SRC/tests/lib/comm_counted.py" "$T/mb_z3.log" 2 reduce_scatter 2>&1)
  rs3o=$(python3 "$SRC/tests/lib/comm_counted.py" "$T/mb_z3o.log" 2 reduce_scatter 2>&1)
  g3=$(arena "$T/mb_z3.cost") g3o=$(arena "$T/mb_z3o.cost")
  if [ -n "$rs3" ] && [ -n "$rs3o" ] && [ "$rs3o" -gt 0 ] && [ "$rs3" = $((2 * rs3o)) ] && [ -n "$g3" ] && [ -n "$g3o" ] &&
     [ "$g3" -lt "$g3o" ]; then
    ok "zero3 bf16, 2 microbatches: reduce_scatter $rs3 bytes = 2 x once's $rs3o; arena $g3 bytes (gradient shards) below once's $g3o (whole sums)"
  else bad "zero3 bf16, 2 microbatches: reduce_scatter '$rs3' (want 2 x once's '$rs3o'), arena '$g3' (want below once's '$g3o')"; fi
  ar1=$(python3 "$SRC/tests/lib/comm_counted.py" "$T/mb_z1.log" 2 all_reduce 2>&1)
  ar1o=$(python3 "$SRC/tests/lib/comm_counted.py" "$T/mb_z1o.log" 2 all_reduce 2>&1)
  rs1=$(python3 "$SRC/tests/lib/comm_counted.py" "$T/mb_z1.log" 2 reduce_scatter 2>&1)
  # each layer's backward all_reduce bytes, 2 microbatches against the 1-microbatch run's (zero1_gpt2_2)
  lay_ar() { awk '$1 == "galvc:" && $2 == "spmd:" && $3 == "h.0" && NF == 10 { print $7; exit }' "$1"; }
  l1=$(lay_ar "$T/zero1_gpt2_2.err") l2=$(lay_ar "$T/mb_z1.err")
  if [ -n "$ar1" ] && [ "$ar1" -gt 0 ] && [ "$ar1" = "$ar1o" ] && [ "$rs1" = 0 ] && [ -n "$l1" ] && [ "$l1" = "$l2" ]; then
    ok "zero1 bf16, 2 microbatches: all_reduce $ar1 bytes in both forms, no reduce_scatter; layer h.0's backward $l2 bytes = one microbatch's $l1"
  else bad "zero1 bf16, 2 microbatches: all_reduce '$ar1' vs once's '$ar1o', reduce_scatter '$rs1' (want 0), layer h.0 backward '$l2' vs '$l1'"; fi
fi

# checkpoint: zero1 bf16, 2 ranks, step 1 saved, step 2 resumed = the uninterrupted run; the one-device program loads it
if [ -x "$T/zero1_gpt2_2/launch" ]; then
  run zero1_gpt2_2 --steps 1 --save-checkpoint "$T/c1.ckpt" &&
    cp "$T/zero1_gpt2_2.log" "$T/first.log" &&
    run zero1_gpt2_2 --steps 1 --load-checkpoint "$T/c1.ckpt" &&
    cp "$T/zero1_gpt2_2.log" "$T/resumed.log" &&
    run zero1_gpt2_2 --steps 2 && {
    a="$(losses "$T/first.log")$(losses "$T/resumed.log")" b=$(losses "$T/zero1_gpt2_2.log")
    if [ "$a" = "$b" ]; then ok "zero1 bf16 2 ranks: checkpoint after step 1, resumed: losses $a = uninterrupted $b"
    else bad "zero1 bf16 2 ranks: resumed losses '$a' vs uninterrupted '$b'"; fi
    if run one_gpt2 --steps 1 --load-checkpoint "$T/c1.ckpt" && grep -q "^step 1 loss" "$T/one_gpt2.log"; then
      ok "the one-device program loads the 2-rank checkpoint (fp32 masters gathered): $(losses "$T/one_gpt2.log")"
    else bad "the one-device program does not load the 2-rank zero1 checkpoint"; fi
  }
fi

# fp32: the parameter stays whole (no working copy)
if timeout 300 "$BUILD/galvc" "$T/gpt2.onnx" --batch 8 --seq 8 --train --gpus 2 --strategy zero1 --target cpu --emit=ir -o "$T/f.mlir" \
  2>"$T/f.err" </dev/null && ! grep -q working_copy "$T/f.mlir" && ! grep -q "working copies" "$T/f.err"; then
  ok "fp32 zero1: no working copy"
else bad "fp32 zero1: a working copy, or galvc failed: $(grep -m1 error "$T/f.err")"; fi

echo "train_zero_distopt: $pass passed, $fail failed"
[ "$fail" = 0 ]
