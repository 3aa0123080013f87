# Sourced by the CPU fused-attention training tests (tests/fused_attention.sh,
# fused_attention_16.sh): the tiny GPT-2 and Llama (tests/lib/tiny_lms.sh),
# their batches and the single-rank compile-and-run they share. Needs $BUILD,
# $SRC, $T, B S STEPS and the test's ok / bad.
#   fa_models: $T/gpt2.onnx and $T/llama.onnx (tiny_lms).
#   fa_batches FAM: $T/FAM.b/, STEPS steps of B x S inputs of the model
#       (tests/model_inputs.py, seed k at step k) and labels (RandomState(5));
#       a failure is one FAIL line (status 1).
#   fa_train LABEL DIR FAM GALVC-ARGS..: galvc $T/FAM.onnx --batch B --seq S
#       --train --eps 1e-6 --target cpu GALVC-ARGS -o DIR/ (its report in
#       DIR.err), then DIR/program over $T/FAM.b for STEPS steps (the log in
#       DIR/log, the weights in DIR/w); a failure is one FAIL line naming
#       LABEL (status 1).
#   fa_act FILE: the "activations kept for backward" bytes of galvc's report.
. "$SRC/tests/lib/tiny_lms.sh"

fa_models() { tiny_lms "$T"; }

fa_batches() {
  python3 - "$SRC" "$T/$1.onnx" "$T/$1.b" "$B" "$S" "$STEPS" 2>"$T/err" <<'PY' || { bad "$1 batches: $(tail -1 "$T/err")"; return 1; }
import sys, os, onnx, numpy as np
sys.path.insert(0, sys.argv[1] + "/tests")
from model_inputs import make_inputs
m = onnx.load(sys.argv[2], load_external_data=False)
B, S, n = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
os.makedirs(sys.argv[3])
steps = [make_inputs(m, B, S, seed=k) for k in range(n)]
for name in steps[0]:
    np.save(f"{sys.argv[3]}/{name.replace('/', '_')}.npy", np.stack([s[name] for s in steps]))
r = np.random.RandomState(5)
np.save(f"{sys.argv[3]}/labels.npy", r.randint(0, 64, size=[n, B, S]).astype(np.int64))
PY
}

fa_train() {
  local label=$1 d=$2 fam=$3
  shift 3
  if ! "$BUILD/galvc" "$T/$fam.onnx" --batch "$B" --seq "$S" --train --eps 1e-6 --target cpu "$@" -o "$d/" 2>"$d.err"; then
    bad "$label: galvc: $(grep -m3 error "$d.err")"
    return 1
  fi
  "$d/program" --batches "$T/$fam.b" --steps "$STEPS" -o "$d/w" >"$d/log" 2>"$T/err" || { bad "$label run: $(head -3 "$T/err")"; return 1; }
}

fa_act() { sed -n 's/.*activations kept for backward \([0-9]*\).*/\1/p' "$1" | head -1; }
