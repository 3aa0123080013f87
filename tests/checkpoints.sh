#!/usr/bin/env bash
# Plan-independent checkpoints (runtime/io.c; docs/cpu-target.md,
# "Checkpoints"): the training state (parameters by name, the optimizer's
# opt.m: / opt.v: / opt.step, the step count) saved by one program kind
# loads into any other plan of the same model. GPT-2 tiny with tied
# embeddings (a parameter shared by the pipeline's two stages), 8 x 8
# tokens, AdamW: 2 steps in one program, saved, then 1 step in another,
# against 3 straight steps on one device (losses and weights rtol 1e-4,
# atol 1e-5); a pipeline resumed by the same pipeline is bit-identical to
# its straight run. Kinds: one device, 2-rank tp (SPMD), pp=2, pp2 x dp2,
# pp2 x dp2 with ZeRO-1 and ZeRO-2 stages (each rank's chunk of the moments
# gathered to save, its chunk taken on load; resumed = straight, bit for bit).
# Bad checkpoints (a flipped byte, truncated, another optimizer) are one
# error line; no PATH.tmp is left behind.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
G="$BUILD/galvc"
python3 "$SRC/examples/make_model.py" gpt2 -o "$T/m.onnx" --layers 2 --hidden 32 --heads 4 --vocab 64 --tie-embeddings --no-verify \
  >/dev/null || { echo "FAIL make_model"; exit 1; }
python3 -c "
import numpy as np, os
r = np.random.RandomState(0)
os.makedirs('$T/b')
np.save('$T/b/input_ids.npy', r.randint(0, 64, (3, 8, 8)).astype(np.int64))
np.save('$T/b/labels.npy', r.randint(0, 64, (3, 8, 8)).astype(np.int64))" || { echo "FAIL batches"; exit 1; }
build() { # NAME ARGS...: compile the program kind NAME
  local n=$1
  shift
  "$G" "$T/m.onnx" --train --target cpu -q "$@" -o "$T/$n/" 2>"$T/err" </dev/null || { echo "FAIL galvc $n: $(head -3 "$T/err")"; exit 1; }
}
build one --input-shape input_ids=8x8
build sgd --input-shape input_ids=8x8 --optimizer sgd --momentum 0.9
build tp2 --batch 8 --seq 8 --gpus 2 --strategy tp
build pp --batch 8 --seq 8 --pipeline-stages 2 --microbatches 2
build ppdp --batch 8 --seq 8 --pipeline-stages 2 --microbatches 2 --gpus 4 --strategy dp
build ppz --batch 8 --seq 8 --pipeline-stages 2 --microbatches 2 --gpus 4 --strategy dp --pipeline-zero 1
build ppz2 --batch 8 --seq 8 --pipeline-stages 2 --microbatches 2 --gpus 4 --strategy dp --pipeline-zero 2
run() { # NAME ARGS...: one run of program kind NAME, output in $T/log
  local n=$1 exe
  shift
  exe="$T/$n/launch"
  [ -x "$exe" ] || exe="$T/$n/program"
  timeout 120 "$exe" --batches "$T/b" "$@" >"$T/log" 2>"$T/err" </dev/null
}
run one --steps 3 -o "$T/one3.w" || { echo "FAIL one: $(head -3 "$T/err")"; exit 1; }
cp "$T/log" "$T/one3.log"
compare() { # LABEL LOG WDIR [exact]: step 2 and the weights against 3 straight steps on one device
  python3 - "$T/one3.log" "$2" "$T/one3.w" "$3" "${4:-}" "$SRC/tests/lib" <<'PY'
import sys
sys.path.insert(0, sys.argv[6])
from same_training import check
print(check(*sys.argv[1:5], steps=[2], exact=bool(sys.argv[5])))
PY
}
# saved by A after 2 steps, 1 more step by B, vs the straight single device
for pair in pp:one one:ppdp ppdp:one tp2:pp pp:tp2 one:tp2 ppz:one one:ppz ppz:ppdp ppdp:ppz ppz2:ppz one:ppz2; do
  a=${pair%:*} b=${pair#*:}
  if ! run "$a" --steps 2 --save-checkpoint "$T/$a.ck"; then bad "$a save: $(grep -m2 -i error "$T/err")"; continue; fi
  [ ! -e "$T/$a.ck.tmp" ] || bad "$a save left $a.ck.tmp"
  if ! run "$b" --steps 1 --load-checkpoint "$T/$a.ck" -o "$T/$pair.w"; then bad "$a -> $b load: $(grep -m2 -i error "$T/err" "$T/log")"; continue; fi
  if msg=$(compare "$pair" "$T/log" "$T/$pair.w" 2>&1); then ok "saved by $a, resumed by $b: $msg"; else bad "saved by $a, resumed by $b: $msg"; fi
done
# the same pipeline resumed = its straight run, bit for bit
if run pp --steps 3 -o "$T/pp3.w" && cp "$T/log" "$T/pp3.log" && run pp --steps 2 --save-checkpoint "$T/pp2.ck" &&
  run pp --steps 1 --load-checkpoint "$T/pp2.ck" -o "$T/ppr.w"; then
  a=$(grep "^step 2 loss" "$T/pp3.log") b=$(grep "^step 2 loss" "$T/log")
  if [ -n "$a" ] && [ "$a" = "$b" ] && (cd "$T/pp3.w" && for f in *; do cmp -s "$f" "../ppr.w/$f" || exit 1; done); then
    ok "pp=2 resumed = straight, bit-identical ($b)"
  else
    bad "pp=2 resume: '$b' vs '$a' or weights differ"
  fi
else
  bad "pp=2 resume: $(grep -m2 -i error "$T/err")"
fi
# ZeRO-1 / ZeRO-2 stages (--pipeline-zero 1 / 2: each rank keeps its chunk of the AdamW moments, gathered to save,
# its chunk taken on load) resumed = their straight run, bit for bit
for k in ppz:1 ppz2:2; do
  n=${k%:*} z=${k#*:}
  if run "$n" --steps 3 -o "$T/${n}_3.w" && cp "$T/log" "$T/${n}_3.log" && run "$n" --steps 2 --save-checkpoint "$T/${n}_2.ck" &&
    run "$n" --steps 1 --load-checkpoint "$T/${n}_2.ck" -o "$T/${n}_r.w"; then
    a=$(grep "^step 2 loss" "$T/${n}_3.log") b=$(grep "^step 2 loss" "$T/log")
    if [ -n "$a" ] && [ "$a" = "$b" ] && grep -q "ZeRO-$z over 2 ranks" "$T/log" &&
      (cd "$T/${n}_3.w" && for f in *; do cmp -s "$f" "../${n}_r.w/$f" || exit 1; done); then
      ok "pp=2 x dp=2 ZeRO-$z resumed = straight, bit-identical ($b)"
    else
      bad "pp=2 x dp=2 ZeRO-$z resume: '$b' vs '$a' or weights differ"
    fi
  else
    bad "pp=2 x dp=2 ZeRO-$z resume: $(grep -m2 -i error "$T/err")"
  fi
done
# bad checkpoints: one error line from the program (printed once, by rank
# 0, for an error every rank finds), non-zero exit. Under mpirun, Open MPI
# adds its own report of the aborted job (an MPI_ABORT banner, or
# ORTE_ERROR_LOG lines): those lines are the launcher's, not counted here.
expect_bad() { # LABEL WANT KIND CKPT
  if run "$3" --steps 1 --load-checkpoint "$4"; then bad "$1: accepted"
  elif [ "$(grep -c "error:" "$T/err")" = 1 ] && grep -q "^program.*: error: .*$2" "$T/err"; then ok "$1: $(grep "error:" "$T/err")"
  else bad "$1: $(head -3 "$T/err")"; fi
}
python3 -c "
d = bytearray(open('$T/pp2.ck', 'rb').read()); d[len(d) // 2] ^= 1
open('$T/flip.ck', 'wb').write(d)
open('$T/short.ck', 'wb').write(bytes(d[:1000]))"
expect_bad "a flipped byte (one device)" "checksum mismatch" one "$T/flip.ck"
expect_bad "a flipped byte (pipeline)" "checksum mismatch" pp "$T/flip.ck"
expect_bad "truncated" "truncated checkpoint" one "$T/short.ck"
run sgd --steps 1 --save-checkpoint "$T/sgd.ck" || bad "sgd save"
expect_bad "an SGD checkpoint into AdamW (one device)" "another model or optimizer" one "$T/sgd.ck"
expect_bad "an SGD checkpoint into AdamW (pipeline)" "another model or optimizer" pp "$T/sgd.ck"
expect_bad "an AdamW checkpoint into SGD" "another model or optimizer" sgd "$T/pp2.ck"
echo "checkpoints: $pass passed, $fail failed"
[ "$fail" = 0 ]
