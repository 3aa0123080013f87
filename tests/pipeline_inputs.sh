#!/usr/bin/env bash
# Pipeline inputs at compile time (docs/pipeline.md, "Inputs and
# microbatches"): galvc reads every data input's global shape (the model's,
# bound by --batch / --seq / --input-shape) and splits dim 0 into the
# microbatches, other dims whole. A static batch dim that differs from
# --batch, a batch that does not split into --microbatches, or inputs whose
# batches differ are one error line naming the input (exit 1, nothing
# written); a model exported with a static batch of 4 trains as 2
# microbatches of 2 (= the single device); --input-shape pipelines an
# encoder-decoder whose decoder length differs from the encoder's (=
# the single device); --plan-only prints the stage plan and stops, also with
# --no-weights and -q, writing no program; cross-entropy microbatches are
# weighted by their counted labels (ignored labels spread unevenly = the
# single device); a first stage of frozen parameters runs forward only.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
G="$BUILD/galvc"
python3 "$SRC/examples/make_model.py" gpt2 -o "$T/gpt2.onnx" --layers 2 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null &&
  python3 "$SRC/examples/make_model.py" t5 -o "$T/t5.onnx" --layers 2 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null ||
  { echo "FAIL make_model"; exit 1; }
python3 - "$T" <<'PY' || { echo "FAIL inputs"; exit 1; }
import sys, os, onnx, numpy as np
t = sys.argv[1]
m = onnx.load(f"{t}/gpt2.onnx")  # the same model exported with a static batch of 4
for v in list(m.graph.input) + list(m.graph.output):
    d = v.type.tensor_type.shape.dim[0]
    d.ClearField("dim_param")
    d.dim_value = 4
onnx.save(m, f"{t}/gpt2s4.onnx")
r = np.random.RandomState(0)
os.makedirs(f"{t}/b")
np.save(f"{t}/b/input_ids.npy", r.randint(0, 64, (2, 4, 8)).astype(np.int64))
np.save(f"{t}/b/labels.npy", r.randint(0, 64, (2, 4, 8)).astype(np.int64))
np.save(f"{t}/ids.npy", r.randint(0, 64, (4, 8)).astype(np.int64))
np.save(f"{t}/dids.npy", r.randint(0, 64, (4, 5)).astype(np.int64))
PY

# errors: one line naming the model and the input, exit 1, no output directory
err_case() { # name, expected text, galvc args...
  local name=$1 want=$2
  shift 2
  rm -rf "$T/e"
  "$G" "$@" --target cpu --no-build -o "$T/e/" >"$T/out" 2>"$T/err" </dev/null
  local rc=$?
  if [ "$rc" = 1 ] && [ "$(wc -l <"$T/err")" = 1 ] && grep -q "error: .*$want" "$T/err" && [ ! -e "$T/e/stage0" ]; then
    ok "$name: $(cat "$T/err")"
  else
    bad "$name: exit $rc, $(head -3 "$T/err")"
  fi
}
err_case "static batch 4, --batch 8" "gpt2s4.onnx: input 'input_ids' has a static batch (dim 0) of 4, but --batch is 8" \
  "$T/gpt2s4.onnx" --train --pipeline-stages 2 --microbatches 2 --batch 8 --seq 8
err_case "batch 4 into 3 microbatches" "input 'input_ids': its batch (dim 0) of 4 does not split into --microbatches 3" \
  "$T/gpt2s4.onnx" --train --pipeline-stages 2 --microbatches 3 --seq 8
err_case "--batch 6 into 4 microbatches" "input 'input_ids': its batch (dim 0) of 6 does not split into --microbatches 4" \
  "$T/gpt2.onnx" --pipeline-stages 2 --microbatches 4 --batch 6 --seq 8
err_case "inputs of different batches" "input 'decoder_input_ids' has a batch (dim 0) of 2, input 'input_ids' of 4" \
  "$T/t5.onnx" --pipeline-stages 2 --microbatches 2 --input-shape input_ids=4x8 --input-shape decoder_input_ids=2x5

# a static batch of 4: 2 microbatches of 2, trained = the single device
if "$G" "$T/gpt2s4.onnx" --seq 8 --train --target cpu -q -o "$T/one/" 2>"$T/err" </dev/null &&
  "$T/one/program" --batches "$T/b" --steps 2 >"$T/one.log" 2>"$T/err" </dev/null &&
  "$G" "$T/gpt2s4.onnx" --batch 4 --seq 8 --train --pipeline-stages 2 --microbatches 2 --schedule 1f1b --target cpu -q \
    -o "$T/pp/" 2>"$T/err" </dev/null &&
  timeout 120 "$T/pp/launch" --batches "$T/b" --steps 2 >"$T/pp.log" 2>"$T/err" </dev/null; then
  a=$(grep -o "^step [0-9]* loss .*" "$T/one.log" | tr '\n' ' ')
  b=$(grep -o "^step [0-9]* loss .*" "$T/pp.log" | tr '\n' ' ')
  shp=$(grep -o '{"input_ids", GALV_I64, 2, {[0-9, ]*}' "$T/pp/stage0/program.c")
  if python3 -c "
import sys, numpy as np
a, b = [float(x) for x in sys.argv[1].split()[3::4]], [float(x) for x in sys.argv[2].split()[3::4]]
sys.exit(not (len(a) == 2 and len(b) == 2 and np.allclose(a, b, rtol=1e-4, atol=0)))" "$a" "$b" && [ "$shp" = '{"input_ids", GALV_I64, 2, {2, 8}' ]; then
    ok "static batch 4, 2 microbatches: stage input 2x8, losses $b= single device"
  else
    bad "static batch 4: losses '$b' vs '$a', stage input '$shp'"
  fi
else
  bad "static batch 4 training: $(grep -m2 -i error "$T/err")"
fi

# cross entropy with the ignored labels all in the first microbatch: the
# microbatches are weighted by their counted labels (not averaged), so the
# loss and the update equal the full batch's (SGD with momentum: AdamW would
# amplify float noise on near-zero gradients into 1e-4 differences)
python3 - "$T" <<'PY'
import sys, os, numpy as np
t = sys.argv[1]
r = np.random.RandomState(1)
os.makedirs(f"{t}/bi")
np.save(f"{t}/bi/input_ids.npy", r.randint(0, 64, (2, 4, 8)).astype(np.int64))
l = r.randint(0, 64, (2, 4, 8)).astype(np.int64)
l[:, 0, :] = -100
l[:, 1, :5] = -100  # 13 of 16 labels of microbatch 0 ignored, none of microbatch 1
np.save(f"{t}/bi/labels.npy", l)
PY
SGD="--optimizer sgd --lr 0.1 --momentum 0.9"
if "$G" "$T/gpt2s4.onnx" --seq 8 --train $SGD --target cpu -q -o "$T/sg1/" 2>"$T/err" </dev/null &&
  "$T/sg1/program" --batches "$T/bi" --steps 2 -o "$T/sg1.w" >"$T/sg1.log" 2>"$T/err" </dev/null &&
  "$G" "$T/gpt2s4.onnx" --seq 8 --train $SGD --pipeline-stages 2 --microbatches 2 --target cpu -q -o "$T/sgp/" 2>"$T/err" </dev/null &&
  timeout 120 "$T/sgp/launch" --batches "$T/bi" --steps 2 -o "$T/sgp.w" >"$T/sgp.log" 2>"$T/err" </dev/null; then
  if msg=$(python3 - "$T/sg1.log" "$T/sgp.log" "$T/sg1.w" "$T/sgp.w" "$SRC/tests/lib" 2>&1 <<'PY'
import sys
sys.path.insert(0, sys.argv[5])
from same_training import check
print(check(*sys.argv[1:5], steps=[0, 1], loss_rtol=1e-6, rtol=1e-5, atol=1e-7))
PY
); then
    ok "cross entropy, ignored labels only in microbatch 0, pp=2 B=2: $msg"
  else
    bad "cross entropy with unevenly ignored labels: $msg"
  fi
else
  bad "cross entropy with unevenly ignored labels: $(grep -m2 -i error "$T/err")"
fi

# a first stage holding only frozen parameters (nothing trains in it, nothing
# received): forward only (no backward entry), its backward only receives;
# 2 AdamW steps = the single device with the same --freeze, pp=3
FRZ="--freeze transformer.wte.weight --freeze transformer.wpe.weight --freeze transformer.h.0.*"
if "$G" "$T/gpt2s4.onnx" --seq 8 --train $FRZ --target cpu -q -o "$T/fz1/" 2>"$T/err" </dev/null &&
  "$T/fz1/program" --batches "$T/b" --steps 2 -o "$T/fz1.w" >"$T/fz1.log" 2>"$T/err" </dev/null &&
  "$G" "$T/gpt2s4.onnx" --seq 8 --train $FRZ --pipeline-stages 3 --microbatches 2 --target cpu -q -o "$T/fzp/" 2>"$T/err" </dev/null &&
  timeout 120 "$T/fzp/launch" --batches "$T/b" --steps 2 -o "$T/fzp.w" >"$T/fzp.log" 2>"$T/err" </dev/null; then
  if [ -e "$T/fzp/stage0/program_bwd.c" ] || [ ! -e "$T/fzp/stage1/program_bwd.c" ]; then
    bad "frozen first stage: stage 0 should be forward only (no program_bwd.c), stage 1 should stash"
  elif msg=$(python3 - "$T/fz1.log" "$T/fzp.log" "$T/fz1.w" "$T/fzp.w" "$T/gpt2s4.onnx" "$SRC/tests/lib" 2>&1 <<'PY'
import sys, os, numpy as np, onnx
from onnx import numpy_helper
sys.path.insert(0, sys.argv[6])
from same_training import check
same = check(*sys.argv[1:5], steps=[0, 1])
init = {t.name: numpy_helper.to_array(t) for t in onnx.load(sys.argv[5]).graph.initializer}
for f in sorted(os.listdir(sys.argv[4])):
    n = f[:-4]
    if (n.startswith("transformer.h.0.") or n in ("transformer.wte.weight", "transformer.wpe.weight")) and \
            np.load(os.path.join(sys.argv[4], f)).tobytes() != init[n].tobytes():
        sys.exit(f"frozen {n} changed")
print(f"{same}, frozen ones unchanged")
PY
); then
    ok "frozen first stage, pp=3: forward-only stage 0, $msg"
  else
    bad "frozen first stage: $msg"
  fi
else
  bad "frozen first stage: $(grep -m2 -i error "$T/err")"
fi

# --input-shape: an encoder-decoder with decoder length 5, encoder 8, pp=2 = the single device
if "$G" "$T/t5.onnx" --input-shape input_ids=4x8 --input-shape decoder_input_ids=4x5 --target cpu -q -o "$T/t5one/" 2>"$T/err" </dev/null &&
  "$T/t5one/program" --input input_ids="$T/ids.npy" --input decoder_input_ids="$T/dids.npy" -o "$T/t5one.r" >/dev/null 2>"$T/err" </dev/null &&
  "$G" "$T/t5.onnx" --input-shape input_ids=4x8 --input-shape decoder_input_ids=4x5 --pipeline-stages 2 --microbatches 2 \
    --target cpu -q -o "$T/t5pp/" 2>"$T/err" </dev/null &&
  timeout 120 "$T/t5pp/launch" --input input_ids="$T/ids.npy" --input decoder_input_ids="$T/dids.npy" -o "$T/t5pp.r" >/dev/null 2>"$T/err" </dev/null; then
  if msg=$(python3 -c "
import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
if a.shape != (4, 5, 64) or b.shape != a.shape or not np.allclose(a, b, rtol=1e-4, atol=1e-5): sys.exit(f'{a.shape} {b.shape} {np.abs(a - b).max()}')
print(f'logits {b.shape}, max abs diff {np.abs(a - b).max():.2g}')" "$T/t5one.r/logits.npy" "$T/t5pp.r/logits.npy" 2>&1); then
    ok "t5 --input-shape decoder 5, encoder 8, pp=2 B=2: $msg"
  else
    bad "t5 --input-shape pipeline: $msg"
  fi
else
  bad "t5 --input-shape pipeline: $(grep -m2 -i error "$T/err")"
fi

# --plan-only --no-weights: the stage plan, no program (under -q: no output at all, errors only)
python3 "$SRC/examples/make_model.py" gpt2 -o "$T/nw.onnx" --layers 4 --hidden 64 --heads 4 --vocab 128 --no-weights --no-verify >/dev/null
for q in "" -q; do
  rm -rf "$T/po"
  if "$G" "$T/nw.onnx" --train --pipeline-stages 2 --microbatches 2 --batch 4 --seq 16 --target cpu --plan-only --no-weights $q \
      -o "$T/po/" >"$T/out" 2>"$T/err" </dev/null && [ ! -e "$T/po/stage0" ] && ! grep -q "wrote" "$T/err" &&
      if [ -n "$q" ]; then [ ! -s "$T/err" ]; else grep -q "^pipeline: 2 stages, 2 microbatches" "$T/err" &&
      [ "$(grep -c "^  stage [01]: groups" "$T/err")" = 2 ]; fi; then
    ok "--plan-only --no-weights ${q:-(not quiet)}: $(grep "^pipeline: 2 stages" "$T/err")"
  else
    bad "--plan-only --no-weights $q: $(grep -m2 -i "error\|wrote" "$T/err")"
  fi
done
echo "pipeline_inputs: $pass passed, $fail failed"
[ "$fail" = 0 ]
