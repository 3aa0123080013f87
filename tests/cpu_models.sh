#!/usr/bin/env bash
# CPU target end to end: every example family (helper-built) and every
# committed torch export is compiled with `galvc --target cpu -o DIR/`, the
# generated program runs on random inputs and its outputs equal onnxruntime's
# (rtol 1e-4, atol 1e-5; tests/cpu_compare.py). The ASan/UBSan `debug`
# variant (values poisoned after their last use) runs for two models. Then
# the program's input checking: wrong name, missing input, wrong shape, wrong
# dtype, unreadable file, a missing weights file -> one error line, exit 1;
# a .pb (ONNX TensorProto) input gives the same outputs as .npy; galvc output
# is deterministic (same program.c and weights.bin bytes twice). f16 and
# bf16 elementwise programs equal galv-eval bit for bit (tests/cpu_half.py).
set -euo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
models=()
for fam in gpt2 bert llama vit t5; do
  python3 "$SRC/examples/make_model.py" "$fam" -o "$T/${fam}_h.onnx" --no-verify >/dev/null
  models+=("$T/${fam}_h.onnx")
done
models+=("$SRC"/examples/models/torch/*.onnx)
pass=0 fail=0
for m in "${models[@]}"; do
  dbg=()
  case "$(basename "$m")" in gpt2_h.onnx | llama_op17.onnx) dbg=(--debug) ;; esac
  if python3 "$SRC/tests/cpu_compare.py" "$BUILD" "$m" --batch 2 --seq 16 "${dbg[@]}"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
  fi
done

# ---- bad inputs to a generated program
P="$T/prog"
"$BUILD/galvc" "$T/gpt2_h.onnx" --batch 2 --seq 16 -q -o "$P/"
python3 - "$T" <<'PY'
import sys, numpy as np
t = sys.argv[1]
np.save(f"{t}/ids.npy", np.random.RandomState(0).randint(0, 50, (2, 16)).astype(np.int64))
np.save(f"{t}/ids_shape.npy", np.zeros((2, 17), np.int64))
np.save(f"{t}/ids_dtype.npy", np.zeros((2, 16), np.int32))
import onnx.numpy_helper as nh
open(f"{t}/ids.pb", "wb").write(nh.from_array(np.load(f"{t}/ids.npy"), "input_ids").SerializeToString())
open(f"{t}/garbage.npy", "wb").write(b"not an npy file")
PY
expect_fail() { # NAME PATTERN CMD...
  local name=$1 pat=$2
  shift 2
  local err rc=0
  err=$("$@" 2>&1 >/dev/null) || rc=$?
  if [ "$rc" -ne 1 ] || [ "$(printf '%s\n' "$err" | wc -l)" -ne 1 ] || ! grep -q -- "$pat" <<<"$err"; then
    echo "FAIL bad input '$name': rc=$rc, stderr: $err"
    fail=$((fail + 1))
  else
    echo "ok   bad input '$name': $err"
    pass=$((pass + 1))
  fi
}
expect_fail "wrong name" "no input named 'ids'" "$P/program" --input ids="$T/ids.npy"
expect_fail "missing input" "input 'input_ids' not given" "$P/program"
expect_fail "wrong shape" "has shape 2x17, the program expects 2x16" "$P/program" --input input_ids="$T/ids_shape.npy"
expect_fail "wrong dtype" "has dtype i32, the program expects i64" "$P/program" --input input_ids="$T/ids_dtype.npy"
expect_fail "unreadable file" "nosuch.npy" "$P/program" --input input_ids="$T/nosuch.npy"
expect_fail "not a .npy" "garbage.npy" "$P/program" --input input_ids="$T/garbage.npy"
expect_fail "missing weights" "cannot open the weights file" "$P/program" --input input_ids="$T/ids.npy" --weights "$T/none.bin"
cp "$P/program" "$T/lonely-program"
expect_fail "no weights.bin next to the program" "weights.bin: cannot open" "$T/lonely-program" --input input_ids="$T/ids.npy"
head -c 100 "$P/weights.bin" >"$T/short.bin"
expect_fail "short weights file" "the program expects" "$P/program" --input input_ids="$T/ids.npy" --weights "$T/short.bin"
"$P/program" --input input_ids="$T/ids.npy" -o "$T/o-npy" >/dev/null
"$P/program" --input input_ids="$T/ids.pb" -o "$T/o-pb" >/dev/null
if cmp -s "$T/o-npy/logits.npy" "$T/o-pb/logits.npy"; then
  echo "ok   .pb input gives the .npy input's outputs"; pass=$((pass + 1))
else
  echo "FAIL .pb input differs from .npy input"; fail=$((fail + 1))
fi

# ---- determinism: same model, same bytes
"$BUILD/galvc" "$T/gpt2_h.onnx" --batch 2 --seq 16 -q --no-build -o "$T/again/"
if cmp -s "$P/program.c" "$T/again/program.c" && cmp -s "$P/weights.bin" "$T/again/weights.bin"; then
  echo "ok   deterministic program.c and weights.bin"; pass=$((pass + 1))
else
  echo "FAIL program.c or weights.bin differ between two runs"; fail=$((fail + 1))
fi

# ---- f16 / bf16 storage in elementwise loops: == galv-eval bit for bit, ~ onnxruntime
if python3 "$SRC/tests/cpu_half.py" "$BUILD"; then
  pass=$((pass + 1))
else
  fail=$((fail + 1))
fi

echo "cpu_models: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
