#!/usr/bin/env bash
# Training-mode Dropout (galv.dropout; docs/training.md "Dropout"): the
# counter-based mask of runtime/galv_rng.h drawn for each element's GLOBAL
# coordinates, so every sharding draws the mask one device draws.
#   (a) a tiny GPT-2 exported by torch with nn.Dropout(0.1) on the attention
#       probabilities and both residual branches, in train mode
#       (tests/train/dropout_model.py), 3 AdamW steps on one device: two runs
#       are identical to the byte (losses, weights), --seed 5 changes the
#       losses, the ratio-0 export trains otherwise; 2 steps, a checkpoint
#       and 1 more step = 3 steps (the step count, which the masks draw on,
#       resumes); plan.json records the seed and --plan compiles the same
#       program;
#   (b) ONNX Dropout(0.1, training_mode = true) of ones [256, 512] through
#       galv-eval and the CPU program: the fraction of zeros within 0.005 of
#       0.1, kept elements 1 / 0.9, and the mask equal element for element
#       to a numpy transcription of galv_rng.h (seed, id, step, coordinates);
#   (c) the gradient: y = dropout(x W) under MSE, one SGD step (lr 1, no
#       weight decay) with galv-eval and with the CPU program: W's update
#       equals numpy's x^T (dy * mask / (1 - p)) with the same transcribed
#       mask (rtol 1e-4), and differs from the ratio-0 graph's;
#   (d) 2 steps of the GPT-2 on 2 CPU ranks (dp, tp + sp, zero2, a 2-stage
#       pipeline of 2 microbatches), 2 accumulated microbatches,
#       --recompute=all and selective (the dropout recomputed with the
#       attention core: "recomputation: 8 forward ops") equal the one-device
#       run (tests/lib/same_training.py: losses and weights rtol 1e-4);
#   (e) --report-cost prices the 6 dropouts and 6 gradients at 16 operations
#       and 8 bytes (fp32) / 4 bytes (bf16) per element.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
TORCH_PY=/usr/bin/python3
. "$SRC/tests/lib/mpi_env.sh"
require_torch "$TORCH_PY"
. "$SRC/tests/lib/rank_compare.sh"

"$TORCH_PY" "$SRC/tests/train/dropout_model.py" "$T/gpt.onnx" 0.1 2>"$T/err" || { echo "FAIL export: $(tail -2 "$T/err")"; exit 1; }
"$TORCH_PY" "$SRC/tests/train/dropout_model.py" "$T/gpt0.onnx" 0.0 2>"$T/err" || { echo "FAIL export: $(tail -2 "$T/err")"; exit 1; }
lm_batches "$T/b" 4 8
G=(--batch 4 --seq 8 --train --eps 1e-6 --target cpu --fused-attention off -q) # eps: as tests/train_pairs.sh
# run NAME GALVC-ARGS...: compiled into $T/NAME/, 2 steps (3 with STEPS=3) -> $T/NAME.log, $T/NAME.w
run() {
  local n=$1 x=program
  shift
  timeout 300 "$BUILD/galvc" "${MODEL:-$T/gpt.onnx}" "${G[@]}" "$@" -o "$T/$n/" 2>"$T/err" </dev/null ||
    { bad "$n: galvc: $(head -2 "$T/err")"; return 1; }
  [ -e "$T/$n/launch" ] && x=launch
  timeout 300 "$T/$n/$x" --batches "$T/b" --steps "${STEPS:-2}" -o "$T/$n.w" >"$T/$n.log" 2>"$T/err" </dev/null ||
    { bad "$n: run: $(grep -m2 . "$T/err")"; return 1; }
}
same_bytes() { # A B: the step lines and every weight, byte for byte
  [ -n "$(grep '^step' "$T/$1.log")" ] && [ "$(grep '^step' "$T/$1.log")" = "$(grep '^step' "$T/$2.log")" ] || return 1
  local f
  for f in "$T/$1.w"/*.npy; do cmp -s "$f" "$T/$2.w/$(basename "$f")" || return 1; done
}

# (a) determinism and the seed
STEPS=3 run one && STEPS=3 run seed5 --seed 5 && STEPS=3 MODEL="$T/gpt0.onnx" run zero
"$T/one/program" --batches "$T/b" --steps 3 -o "$T/again.w" >"$T/again.log" 2>&1 </dev/null || bad "(a) second run"
if same_bytes one again; then ok "(a) two runs of the same program: losses and weights identical"; else bad "(a) two runs differ"; fi
# the step count from a checkpoint: 2 steps, saved, 1 more = 3 steps straight (step 2's masks, not step 0's)
"$T/one/program" --batches "$T/b" --steps 2 --save-checkpoint "$T/ck" >/dev/null 2>&1 </dev/null &&
  "$T/one/program" --batches "$T/b" --steps 1 --load-checkpoint "$T/ck" -o "$T/ck.w" >"$T/ck.log" 2>&1 </dev/null || bad "(a) checkpoint runs"
if [ "$(grep '^step 2' "$T/ck.log")" = "$(grep '^step 2' "$T/one.log")" ] && (for f in "$T/one.w"/*.npy; do cmp -s "$f" "$T/ck.w/${f##*/}" || exit 1; done); then
  ok "(a) 2 steps, a checkpoint, 1 more = 3 steps: $(grep '^step 2' "$T/ck.log")"
else bad "(a) resumed from a checkpoint: $(grep '^step' "$T/ck.log") against $(grep '^step 2' "$T/one.log")"; fi
if [ "$(grep '^step 0' "$T/one.log")" != "$(grep '^step 0' "$T/seed5.log")" ] &&
  [ "$(grep '^step 0' "$T/one.log")" != "$(grep '^step 0' "$T/zero.log")" ]; then
  ok "(a) --seed 5 and ratio 0 change the losses: $(grep '^step 0' "$T/one.log" | cut -d' ' -f4) / $(grep '^step 0' "$T/seed5.log" | cut -d' ' -f4) / $(grep '^step 0' "$T/zero.log" | cut -d' ' -f4)"
else bad "(a) the losses do not depend on the seed / the ratio"; fi
grep -c 'galv_dropout_f32' "$T/one/program.c" | grep -qx 12 && ok "(a) 6 dropouts and 6 gradients in the program" ||
  bad "(a) $(grep -c 'galv_dropout_f32' "$T/one/program.c") dropout calls (12 expected)"
timeout 300 "$BUILD/galvc" "$T/gpt.onnx" "${G[@]}" --gpus 2 --seed 7 --no-build -o "$T/p7/" 2>"$T/err" </dev/null &&
  timeout 300 "$BUILD/galvc" "$T/gpt.onnx" "${G[@]}" --gpus 2 --plan "$T/p7/plan.json" --no-build -o "$T/pp7/" 2>>"$T/err" </dev/null ||
  bad "(a) plan: $(head -2 "$T/err")"
if grep -q '"seed": 7,' "$T/p7/plan.json" && cmp -s "$T/p7/program.c" "$T/pp7/program.c" && grep -q '7ull' "$T/pp7/program.c"; then
  ok "(a) plan.json records seed 7; --plan compiles the same program"
else bad "(a) plan.json's seed: $(grep seed "$T/p7/plan.json")"; fi

# (b), (c) the mask against a numpy transcription of runtime/galv_rng.h
python3 - "$T" <<'PY' || bad "(b) graphs"
import sys, numpy as np, onnx
from onnx import helper as h, TensorProto as TP
T = sys.argv[1]
def drop_graph(path, ratio, train):
    nodes = [h.make_node("Constant", [], ["r"], value=h.make_tensor("r", TP.FLOAT, [], [ratio])),
             h.make_node("Constant", [], ["t"], value=h.make_tensor("t", TP.BOOL, [], [1]))]
    if train:
        nodes += [h.make_node("MatMul", ["x", "w"], ["xw"]), h.make_node("Dropout", ["xw", "r", "t"], ["y"])]
        ins = [h.make_tensor_value_info("x", TP.FLOAT, [16, 8])]
        init = [h.make_tensor("w", TP.FLOAT, [8, 24], np.random.RandomState(1).randn(8, 24).astype(np.float32).ravel())]
        out = [h.make_tensor_value_info("y", TP.FLOAT, [16, 24])]
    else:
        nodes += [h.make_node("Dropout", ["x", "r", "t"], ["y"])]
        ins, init, out = [h.make_tensor_value_info("x", TP.FLOAT, [256, 512])], [], [h.make_tensor_value_info("y", TP.FLOAT, [256, 512])]
    m = h.make_model(h.make_graph(nodes, "d", ins, out, init), opset_imports=[h.make_opsetid("", 17)])
    onnx.save(m, path)
drop_graph(f"{T}/drop.onnx", 0.1, False)
drop_graph(f"{T}/lin.onnx", 0.1, True)
drop_graph(f"{T}/lin0.onnx", 0.0, True)
r = np.random.RandomState(2)
np.save(f"{T}/ones.npy", np.ones((256, 512), np.float32))
np.save(f"{T}/x.npy", r.randn(16, 8).astype(np.float32))
np.save(f"{T}/labels.npy", r.randn(16, 24).astype(np.float32))
PY
cat >"$T/rng.py" <<'PY'
# runtime/galv_rng.h in numpy (uint64 arithmetic wraps as C's)
import numpy as np
M64 = np.uint64(0xFFFFFFFFFFFFFFFF)
def mix(z):
    z = np.asarray(z, np.uint64)
    with np.errstate(over="ignore"):
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))
def mask(shape, ratio, seed=0, id=0, step=0):
    key = mix(mix(mix(np.uint64(seed)) ^ np.uint64(id)) ^ np.uint64(step))
    h = np.full(shape, key, np.uint64)
    with np.errstate(over="ignore"):
        for d, n in enumerate(shape):
            g = np.arange(n, dtype=np.uint64).reshape([n if k == d else 1 for k in range(len(shape))])
            h = (h + g) * np.uint64(0xD6E8FEB86659FD93)
    thr = int(np.float32(ratio) * np.float64(16777216.0) + 0.5)
    return (mix(h) >> np.uint64(40)) >= np.uint64(thr)
PY
"$BUILD/galv-eval" "$T/drop.onnx" --input x="$T/ones.npy" -o "$T/ev" >/dev/null 2>"$T/err" || bad "(b) galv-eval: $(head -2 "$T/err")"
"$BUILD/galvc" "$T/drop.onnx" --target cpu -q -o "$T/dp/" 2>"$T/err" && "$T/dp/program" --input x="$T/ones.npy" -o "$T/dp/res" >/dev/null 2>>"$T/err" ||
  bad "(b) program: $(head -2 "$T/err")"
python3 - "$T" <<'PY' && ok "(b) $(tail -1 "$T/b.out")" || bad "(b) $(tail -1 "$T/b.out")"
import sys, numpy as np
T = sys.argv[1]
sys.path.insert(0, T)
from rng import mask
m = mask((256, 512), 0.1)
with open(f"{T}/b.out", "w") as out:
    for who, f in (("galv-eval", f"{T}/ev/y.npy"), ("program", f"{T}/dp/res/y.npy")):
        y = np.load(f)
        zero = float((y == 0).mean())
        want = np.where(m, np.float32(1) * np.float32(1 / (1 - np.float64(np.float32(0.1)))), 0).astype(np.float32)
        if abs(zero - 0.1) > 0.005 or not np.array_equal(y, want):
            print(f"{who}: zeros {zero:.4f}, mask equal {np.array_equal(y != 0, m)}, values equal {np.array_equal(y, want)}", file=out)
            sys.exit(1)
    print(f"zeros {zero:.4f} of 131072 (ratio 0.1); galv-eval and the program = numpy's mask bit for bit, kept = 1/0.9", file=out)
PY
SGD=(--train --loss mse --labels labels --optimizer sgd --lr 1 --weight-decay 0)
for g in lin lin0; do
  "$BUILD/galv-eval" "$T/$g.onnx" "${SGD[@]}" --input x="$T/x.npy" --input labels="$T/labels.npy" -o "$T/$g.ev" >/dev/null 2>"$T/err" ||
    bad "(c) galv-eval $g: $(head -2 "$T/err")"
  mkdir -p "$T/$g.b" && python3 -c "
import numpy as np; np.save('$T/$g.b/x.npy', np.load('$T/x.npy')[None]); np.save('$T/$g.b/labels.npy', np.load('$T/labels.npy')[None])"
  "$BUILD/galvc" "$T/$g.onnx" "${SGD[@]}" --target cpu -q -o "$T/$g.p/" 2>"$T/err" &&
    "$T/$g.p/program" --batches "$T/$g.b" --steps 1 -o "$T/$g.pw" >/dev/null 2>>"$T/err" || bad "(c) program $g: $(head -2 "$T/err")"
done
python3 - "$T" <<'PY' && ok "(c) $(tail -1 "$T/c.out")" || bad "(c) $(tail -1 "$T/c.out")"
import sys, numpy as np
T = sys.argv[1]
sys.path.insert(0, T)
from rng import mask
import onnx
from onnx import numpy_helper
w = numpy_helper.to_array(onnx.load(f"{T}/lin.onnx").graph.initializer[0]).astype(np.float64)
x, l = np.load(f"{T}/x.npy").astype(np.float64), np.load(f"{T}/labels.npy").astype(np.float64)
m = mask((16, 24), 0.1)
s = float(np.float32(1 / (1 - np.float64(np.float32(0.1)))))
y = (x @ w) * m * s
dw = x.T @ ((2 * (y - l) / y.size) * m * s)
dw0 = x.T @ (2 * (x @ w - l) / y.size)
with open(f"{T}/c.out", "w") as out:
    for who, f in (("galv-eval", f"{T}/lin.ev/w.npy"), ("program", f"{T}/lin.pw/w.npy")):
        got = w - np.load(f)
        if not np.allclose(got, dw, rtol=1e-4, atol=1e-6):
            print(f"{who}: dW differs from numpy's by {np.abs(got - dw).max():.3g}", file=out)
            sys.exit(1)
    for who, f in (("galv-eval", f"{T}/lin0.ev/w.npy"), ("program", f"{T}/lin0.pw/w.npy")):
        got = w - np.load(f)
        if not np.allclose(got, dw0, rtol=1e-4, atol=1e-6) or np.allclose(got, dw, rtol=1e-4, atol=1e-6):
            print(f"{who}, ratio 0: dW {np.abs(got - dw0).max():.3g} from the plain gradient", file=out)
            sys.exit(1)
    print(f"SGD step's dW = numpy x^T (dy * mask / 0.9) (max diff {np.abs(w - np.load(f'{T}/lin.pw/w.npy') - dw).max():.2g}); "
          "ratio 0 = the plain gradient", file=out)
PY

# (d) every way of splitting the step draws the one device's masks
run ref
for c in "dp --gpus 2 --strategy dp" "tp_sp --gpus 2 --strategy tp,sp" "zero2 --gpus 2 --strategy zero2" \
  "pp2 --gpus 2 --pipeline-stages 2 --microbatches 2" "mb2 --microbatches 2" "rc_all --recompute=all" \
  "rc_sel --recompute=selective"; do
  # shellcheck disable=SC2086
  set -- $c
  n=$1
  shift
  run "$n" "$@" || continue
  if r=$(same_training "$T/ref.log" "$T/$n.log" "$T/ref.w" "$T/$n.w" 1e-5 1e-4 1e-4); then ok "(d) $n = one device: $r"; else bad "(d) $n: $r"; fi
done
"$BUILD/galvc" "$T/gpt.onnx" "${G[@]}" --recompute=selective --report-cost --emit=ir -o /dev/null 2>&1 |
  grep -q "recomputation: 8 forward ops again" && ok "(d) selective recomputation: 8 ops again (QK^T, scale + mask, softmax, dropout per layer)" ||
  bad "(d) selective: $("$BUILD/galvc" "$T/gpt.onnx" "${G[@]}" --recompute=selective --report-cost --emit=ir -o /dev/null 2>&1 | grep -m1 recomputation)"
# (e) priced (planner/cost.c): each dropout and its gradient 16 operations per element, x read and y written at
# their storage (8 bytes per element in fp32, 4 in bf16), no mask
for p in fp32:8 bf16:4; do
  "$BUILD/galvc" "$T/gpt.onnx" "${G[@]}" --precision "${p%:*}" --report-cost --emit=ir -o /dev/null >"$T/cost.txt" 2>&1 </dev/null
  r=$(awk -v per="${p#*:}" '$2 == "dropout" { n++; split($4, t, /[<>x]/); e = 1; for (i = 2; t[i] ~ /^[0-9]+$/; i++) e *= t[i];
      if ($5 != 16 * e || $6 != per * e) { bad = bad " " $3 " " $5 " " $6 } }
      END { if (n != 12 || bad != "") print "FAIL " n bad; else print "ok " n }' "$T/cost.txt")
  [ "${r%% *}" = ok ] && ok "(e) ${p%:*}: 12 dropouts priced at 16 operations and ${p#*:} bytes per element" ||
    bad "(e) ${p%:*}: $r"
done
echo "train_dropout: $pass passed, $fail failed"
galv_exit "$fail"
