#!/usr/bin/env bash
# Which initializers train (docs/autodiff.md, "Which initializers train"),
# against torch itself: tests/train/freeze_models.py exports small torch
# models with torch.onnx.export and trains the nn.Modules (3 AdamW steps);
# galvc must train exactly what torch trains — a Linear(32, 1)'s one-element
# bias, the folded "onnx::MatMul_N" weights, a scalar parameter — and leave
# a requires_grad-False position table, persistent rotary cos/sin buffers and
# --freeze'd parameters bit-identical. Losses within rtol 1e-4, trained
# weights within rtol 1e-4 (atol 1e-6) (tests/train/compare_freeze.py), for:
# galv-eval --train (all four variants), the CPU training program (reg,
# buf_frozen), 2-rank SPMD training programs (buf_frozen under zero and tp,
# reg under dp) and a 2-stage pipeline (buf: the frozen table and buffers
# in stage 0 next to trained parameters). Also the report line and the
# bad inputs: a --freeze / --trainable pattern that matches no float
# initializer is one error line and exit 1.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
TORCH_PY=/usr/bin/python3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/require.sh"
require_torch "$TORCH_PY"
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
"$TORCH_PY" "$SRC/tests/train/freeze_models.py" "$T" 3 || { echo "train_freeze: freeze_models.py failed"; exit 1; }
HP=(--lr 1e-2 --weight-decay 0.01)
inputs() { # variant -> --input NAME=FILE for its data files
  local d=$T/$1
  if [[ $1 == reg* ]]; then echo "--input x=$d/x.npy --input target=$d/target.npy"; else echo "--input ids=$d/ids.npy --input labels=$d/labels.npy"; fi
}
shape() { if [[ $1 == reg* ]]; then echo "--input-shape x=4x6x32"; else echo "--input-shape ids=2x8"; fi; }
check() { # what variant log dir
  if python3 "$SRC/tests/train/compare_freeze.py" "$T/$2" "$3" "$4" 1e-4 1e-6 >"$T/cmp" 2>&1; then
    ok "$1: $(tail -2 "$T/cmp" | head -1)"
  else
    bad "$1:"
    cat "$T/cmp"
  fi
}

# galv-eval: all four variants
for v in reg reg_head buf buf_frozen; do
  mapfile -t FL <"$T/$v/flags"
  mkdir -p "$T/$v/b" && cp "$T/$v"/*.npy "$T/$v/b/"
  # shellcheck disable=SC2046
  if ! "$BUILD/galv-eval" "$T/$v/model.onnx" $(inputs $v) --train "${FL[@]}" "${HP[@]}" --steps 3 -o "$T/$v/eval" \
    >"$T/$v/eval.log" 2>"$T/$v/eval.err"; then
    bad "$v galv-eval: $(head -3 "$T/$v/eval.err")"
    continue
  fi
  check "$v galv-eval" $v "$T/$v/eval.log" "$T/$v/eval"
done
# the report: what trains and what does not
want="galv-eval: training 8 parameters (2161 elements); frozen: 3 (512 elements): encoder.embed_positions.weight, rotary.cos_cached, rotary.sin_cached"
if [ "$(cat "$T/buf/eval.err")" = "$want" ]; then ok "buf: report line"; else bad "buf: report '$(cat "$T/buf/eval.err")', want '$want'"; fi
want="galv-eval: training 2 parameters (33 elements); frozen: 2 (1056 elements): l1.bias, onnx::MatMul_11"
if [ "$(cat "$T/reg_head/eval.err")" = "$want" ]; then ok "reg_head: report line"; else bad "reg_head: report '$(cat "$T/reg_head/eval.err")', want '$want'"; fi

# the CPU training program (weights.bin, state buffer, -o writes every parameter)
for v in reg buf_frozen; do
  mapfile -t FL <"$T/$v/flags"
  # shellcheck disable=SC2046
  if ! "$BUILD/galvc" "$T/$v/model.onnx" $(shape $v) --train "${FL[@]}" "${HP[@]}" --target cpu -o "$T/$v/cpu/" 2>"$T/err"; then
    bad "$v galvc --target cpu: $(grep -m3 error "$T/err")"
    continue
  fi
  grep -q "^galvc: training " "$T/err" || bad "$v galvc: no 'galvc: training' report line"
  if ! "$T/$v/cpu/program" --batches "$T/$v/b" --steps 3 -o "$T/$v/cpu/w" >"$T/$v/cpu.log" 2>"$T/err"; then
    bad "$v program: $(head -3 "$T/err")"
    continue
  fi
  check "$v CPU program" $v "$T/$v/cpu.log" "$T/$v/cpu/w"
done
# -q silences the report
mapfile -t FL <"$T/buf/flags"
"$BUILD/galvc" "$T/buf/model.onnx" --input-shape ids=2x8 --train "${FL[@]}" -q -o "$T/q.mlir" 2>"$T/err"
if [ -s "$T/err" ]; then bad "galvc -q printed: $(head -2 "$T/err")"; else ok "galvc -q: no report"; fi
grep -q '{galv.frozen, galv.name = "rotary.cos_cached", galv.param}' "$T/q.mlir" && ok "IR: galv.frozen on rotary.cos_cached" ||
  bad "IR: no galv.frozen on rotary.cos_cached"

# N-rank SPMD programs and pipeline stages
if have_cmd mpicc mpirun; then
  export GALV_COMM_SYNC=1 GALV_COMM_TIMEOUT=30 OMPI_MCA_btl_vader_single_copy_mechanism=none OPENBLAS_NUM_THREADS=1
  RUNAS=()
  [ "$(id -u)" = 0 ] && RUNAS=(--allow-run-as-root)
  export MPIRUN="mpirun ${RUNAS[*]} --oversubscribe -x GALV_COMM_SYNC -x GALV_COMM_TIMEOUT -x OPENBLAS_NUM_THREADS"
  for c in buf_frozen:zero buf_frozen:tp reg:dp; do
    v=${c%%:*} s=${c#*:}
    mapfile -t FL <"$T/$v/flags"
    d="$T/$v/spmd_$s"
    # shellcheck disable=SC2046
    if ! "$BUILD/galvc" "$T/$v/model.onnx" $(shape $v) --train "${FL[@]}" "${HP[@]}" --gpus 2 --strategy $s --target cpu -q \
      -o "$d/" 2>"$T/err"; then
      bad "$v --gpus 2 --strategy $s: galvc: $(grep -m3 error "$T/err")"
      continue
    fi
    if ! timeout 120 "$d/launch" --batches "$T/$v/b" --steps 3 -o "$d/w" >"$d.log" 2>"$T/err"; then
      bad "$v 2 ranks $s: $(grep -m2 error "$T/err")"
      continue
    fi
    check "$v 2 ranks $s" $v "$d.log" "$d/w"
  done
  # buf: the frozen position table and rotary buffers sit in stage 0 next to trained parameters (a first stage
  # whose parameters are all frozen has nothing to differentiate: docs/autodiff.md, limits)
  v=buf d="$T/$v/pp"
  mapfile -t FL <"$T/$v/flags"
  if ! timeout 300 "$BUILD/galvc" "$T/$v/model.onnx" --batch 2 --seq 8 --train "${FL[@]}" "${HP[@]}" --pipeline-stages 2 \
    --microbatches 1 --target cpu -q -o "$d/" 2>"$T/err"; then
    bad "$v 2 pipeline stages: galvc: $(grep -m3 error "$T/err")"
  elif ! timeout 120 "$d/launch" --batches "$T/$v/b" --steps 3 -o "$d/w" >"$d.log" 2>"$T/err"; then
    bad "$v 2 pipeline stages: $(grep -m2 error "$T/err")"
  else
    check "$v 2 pipeline stages" $v "$d.log" "$d/w"
  fi
fi

# bad inputs: a pattern that matches no float initializer is one error line
one_error() { # what want-substring command...
  local what=$1 want=$2
  shift 2
  if "$@" >/dev/null 2>"$T/err"; then
    bad "$what: expected an error"
  elif [ "$(wc -l <"$T/err")" -ne 1 ] || ! grep -qF -- "$want" "$T/err"; then
    bad "$what: want one line with '$want', got: $(cat "$T/err")"
  else
    ok "$what: $(cat "$T/err")"
  fi
}
one_error "galvc --freeze typo" "--freeze 'l2.*': no initializer matches" \
  "$BUILD/galvc" "$T/reg/model.onnx" --input-shape x=4x6x32 --train --loss mse --labels target --freeze 'l2.*' -q -o "$T/x.mlir"
one_error "galv-eval --trainable typo" "--trainable 'nope': no initializer matches" \
  "$BUILD/galv-eval" "$T/reg/model.onnx" --input x="$T/reg/x.npy" --input target="$T/reg/target.npy" --train --loss mse \
  --labels target --trainable nope
# an integer initializer cannot train: a pattern that matches only integers is an error too
python3 -c "
import numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto as P
g = helper.make_graph([helper.make_node('Gather', ['w', 'idx'], ['g'], name='/g'), helper.make_node('Add', ['g', 'x'], ['y'], name='/add')],
                      'm', [helper.make_tensor_value_info('x', P.FLOAT, [2, 3])], [helper.make_tensor_value_info('y', P.FLOAT, [2, 3])],
                      [numpy_helper.from_array(np.ones((4, 3), np.float32), 'w'), numpy_helper.from_array(np.array([0, 2], np.int64), 'idx')])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)]), '$T/int.onnx')"
one_error "galvc --trainable integer initializer" "--trainable 'id*': matches only non-float initializers (only float initializers train)" \
  "$BUILD/galvc" "$T/int.onnx" --train --loss mse --labels t --trainable 'id*' -q -o "$T/x.mlir"
one_error "galvc --freeze everything" "autodiff: the loss does not depend on any parameter that trains" \
  "$BUILD/galvc" "$T/reg/model.onnx" --input-shape x=4x6x32 --train --loss mse --labels target --freeze '*' -q -o "$T/x.mlir"
one_error "galvc --freeze without a value" "--freeze" "$BUILD/galvc" "$T/reg/model.onnx" --train --freeze
echo "train_freeze: $pass passed, $fail failed"
galv_exit "$fail"
