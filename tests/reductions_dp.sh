#!/usr/bin/env bash
# Reductions over split dims at every local extent, 1 included (N-rank CPU
# programs under mpirun, tests/lib/mpi_env.sh). A tiny model h = tanh(x W)
# (x [B, 6], W [6, H]; tp splits H, dp splits B) returns every reduction
# and axis op over dim 0 (the batch, split by dp / zero) and dim 1 (split by
# tp): ReduceSum / Mean / Max / Min (keepdims 0 and 1, a negative axis, all
# dims), Softmax, LogSoftmax, CumSum. With B and H = (ranks on that axis) x
# {1, 2}, i.e. 1 or 2 rows / columns per rank, every output equals
# onnxruntime's (rtol 1e-5, atol 1e-6). Training (--loss mse and
# cross_entropy with an ignored label, AdamW, 2 steps) of
# y = tanh(x W1) W2 + b at one row per dp rank (dp, zero, dp,tp, and 2
# pipeline stages of dp=2 with 2 microbatches), under tp, and cross_entropy
# over the vocab-parallel logits of a head y = x Wh + bh with 1 class per
# rank (4 ranks tp): step 1's printed loss equals the loss computed from
# onnxruntime's forward with numpy, step 2's and every final weight equal
# the one-device program's (rtol 1e-4, atol 1e-5). Programs are built at
# -O0 (CFLAGS) to keep the test short. GALV_RED_CASES / GALV_RED_TRAIN narrow the matrices.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# shellcheck source=lib/mpi_env.sh
. "$SRC/tests/lib/mpi_env.sh"
export CFLAGS=-O0
# ranks:strategy:B:H (inference); B and H are ranks-on-that-axis x {1, 2}
CASES=${GALV_RED_CASES:-2:dp:2:4 2:dp:4:4 4:dp:4:4 4:dp:8:4 2:tp:3:2 4:tp:3:4 4:tp:3:8 4:zero:4:4 4:dp,tp:2:2 4:dp,tp:4:4}
# ranks:strategy:B:model[:pp] (training); one row per dp rank; mlp: both
# losses, head: cross entropy on vocab-parallel logits, 1 class per tp rank;
# pp: 2 stages of ranks/2 (dp inside), 2 microbatches of B/2 rows
TRAIN=${GALV_RED_TRAIN:-2:dp:2:mlp 4:dp:4:mlp 2:tp:2:mlp 4:zero:4:mlp 4:dp,tp:2:mlp 4:tp:4:head 4:dp:4:mlp:pp}
mesh_of() { # strategy ranks -> galvc mesh options
  if [ "$1" = dp,tp ]; then echo "--mesh dp=2,tp=$(($2 / 2))"; fi
}

python3 - "$T" <<'PY' || { echo "FAIL: models"; exit 1; }
import sys, os, numpy as np, onnx
from onnx import helper as h, TensorProto as TP, numpy_helper as nh
T = sys.argv[1]
def model(path, nodes, inits, inputs, outputs):
    g = h.make_graph(nodes, "g", inputs, [h.make_tensor_value_info(o, TP.FLOAT, None) for o in outputs], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 18)])
    m.ir_version = 8
    onnx.save(m, path)
r = np.random.RandomState(3)
X = h.make_tensor_value_info("x", TP.FLOAT, ["batch", 6])
# inference: every reduction / axis op over dim 0 and dim 1 of h [B, H]
for H in (2, 4, 8):
    W = nh.from_array(r.randn(6, H).astype(np.float32), "W")
    nodes, inits, outs = [h.make_node("MatMul", ["x", "W"], ["hm"]), h.make_node("Tanh", ["hm"], ["h"])], [W], []
    def add(op, name, axes=None, **kw):
        ins = ["h"]
        if axes is not None:
            ins.append(name + "_axes")
            inits.append(nh.from_array(np.array(axes, np.int64), name + "_axes"))
        nodes.append(h.make_node(op, ins, [name], **kw))
        outs.append(name)
    for d in (0, 1):
        for op in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"):
            add(op, f"{op[6:].lower()}{d}", [d], keepdims=0)
        add("ReduceMean", f"meank{d}", [d - 2], keepdims=1)
        add("Softmax", f"softmax{d}", axis=d)
        add("LogSoftmax", f"logsoftmax{d}", axis=d)
        inits.append(nh.from_array(np.array(d, np.int64), f"cs{d}_axis"))
        nodes.append(h.make_node("CumSum", ["h", f"cs{d}_axis"], [f"cumsum{d}"]))
        outs.append(f"cumsum{d}")
    add("ReduceMean", "meanall", keepdims=0)
    add("ReduceSum", "sumall", keepdims=0)
    add("ReduceMax", "maxall", keepdims=0)
    model(f"{T}/red{H}.onnx", nodes, inits, [X], outs)
for B in (2, 3, 4, 8):
    np.save(f"{T}/x{B}.npy", r.randn(B, 6).astype(np.float32))
# training: mlp y = tanh(x W1) W2 + b and head y = x Wh + bh, both [B, 4]
inits = [nh.from_array((r.randn(6, 8) * 0.5).astype(np.float32), "W1"), nh.from_array((r.randn(8, 4) * 0.5).astype(np.float32), "W2"),
         nh.from_array((r.randn(4) * 0.1).astype(np.float32), "b")]
nodes = [h.make_node("MatMul", ["x", "W1"], ["a"]), h.make_node("Tanh", ["a"], ["t"]), h.make_node("MatMul", ["t", "W2"], ["z"]),
         h.make_node("Add", ["z", "b"], ["y"])]
model(f"{T}/mlp.onnx", nodes, inits, [X], ["y"])
inits = [nh.from_array(r.randn(6, 4).astype(np.float32), "Wh"), nh.from_array((r.randn(4) * 0.1).astype(np.float32), "bh")]
nodes = [h.make_node("MatMul", ["x", "Wh"], ["z"]), h.make_node("Add", ["z", "bh"], ["y"])]
model(f"{T}/head.onnx", nodes, inits, [X], ["y"])
for mod in ("mlp", "head"):
    for B in (2, 4):
        for loss in ("mse", "cross_entropy") if mod == "mlp" else ("cross_entropy",):
            d = f"{T}/{mod}-b{B}{loss}"
            os.makedirs(d)
            np.save(f"{d}/x.npy", r.randn(2, B, 6).astype(np.float32))
            if loss == "mse":
                np.save(f"{d}/labels.npy", r.randn(2, B, 4).astype(np.float32))
            else:
                lab = r.randint(0, 4, (2, B)).astype(np.int64)
                # ignored rows in step 1: under dp the ranks holding them count
                # no row at all; each half of the batch (a pipeline microbatch)
                # counts the same number of rows (docs/pipeline.md: the
                # pipeline's loss is the mean of the microbatch means)
                lab[0, ::2] = -100
                np.save(f"{d}/labels.npy", lab)
PY

# inference: N ranks vs onnxruntime
for c in $CASES; do
  IFS=: read -r n s B H <<<"$c"
  d="$T/inf-$n-${s/,/_}-$B-$H"
  # shellcheck disable=SC2046
  if ! "$BUILD/galvc" "$T/red$H.onnx" --batch "$B" --gpus "$n" --strategy "$s" $(mesh_of "$s" "$n") --target cpu -q -o "$d/" 2>"$T/err"; then
    bad "$n ranks $s B=$B H=$H: galvc: $(grep -m2 error "$T/err")"
    continue
  fi
  if ! timeout 120 "$d/launch" --input x="$T/x$B.npy" -o "$d/res" >/dev/null 2>"$T/err"; then
    bad "$n ranks $s B=$B H=$H: run: $(grep -m2 error "$T/err")"
    continue
  fi
  echo "$n ranks $s B=$B H=$H|$T/red$H.onnx|$T/x$B.npy|$d/res" >>"$T/inf.list"
done

# training: N ranks vs the one-device program (built once per model, batch and loss)
reference() { # model B loss -> 0 when $T/one-model-B-loss holds its 2-step log and weights
  local d="$T/one-$1-$2-$3"
  [ -f "$d/log" ] && return 0
  "$BUILD/galvc" "$T/$1.onnx" --batch "$2" --train --loss "$3" --eps 1e-6 --target cpu -q -o "$d/" 2>"$T/err" &&
    "$d/program" --batches "$T/$1-b$2$3" --steps 2 -o "$d/w" >"$d/log.tmp" 2>"$T/err" && mv "$d/log.tmp" "$d/log" && return 0
  bad "one device $1 B=$2 --loss $3: $(grep -m2 error "$T/err")"
  return 1
}
for c in $TRAIN; do
  IFS=: read -r n s B mod pp <<<"$c"
  ppo=() # pp: 2 pipeline stages of n/2 ranks, 2 microbatches of B/2 rows
  [ "$pp" = pp ] && ppo=(--pipeline-stages 2 --microbatches 2)
  losses="mse cross_entropy"
  [ "$mod" = head ] && losses=cross_entropy # the vocab-parallel head is cross entropy's
  for loss in $losses; do
    d="$T/train-$mod-$n-${s/,/_}$pp-$loss" ref="$T/one-$mod-$B-$loss" what="$n ranks $s${pp:+ (2 stages x 2 microbatches)} $mod B=$B --loss $loss"
    reference "$mod" "$B" "$loss" || continue
    # shellcheck disable=SC2046
    if ! "$BUILD/galvc" "$T/$mod.onnx" --batch "$B" --train --loss "$loss" --eps 1e-6 --gpus "$n" --strategy "$s" $(mesh_of "$s" "$n") \
      "${ppo[@]}" --target cpu -o "$d/" 2>"$T/err"; then
      bad "$what: galvc: $(grep -m2 error "$T/err")"
      continue
    fi
    if [ "$mod" = head ] && ! grep -qE 'spmd: all_reduce +tp .* loss/cross_entropy$' "$T/err"; then
      bad "$what: cross entropy is not vocab-parallel: $(grep -m3 'spmd: ' "$T/err" | tr -s ' ')"
      continue
    fi
    if ! timeout 120 "$d/launch" --batches "$T/$mod-b$B$loss" --steps 2 -o "$d/w" >"$d/log" 2>"$T/err"; then
      bad "$what: run: $(grep -m2 error "$T/err")"
      continue
    fi
    echo "$what|$T/$mod.onnx|$T/$mod-b$B$loss|$loss|$ref|$d" >>"$T/train.list"
  done
done
# one python for all the comparisons (its start-up dominates a case)
touch "$T/inf.list" "$T/train.list"
python3 - "$T/inf.list" "$T/train.list" >"$T/checks" 2>&1 <<'PY'
import sys, glob, os, re, numpy as np, onnxruntime as ort
sessions = {}
def run(model, feeds):
    if model not in sessions:
        sessions[model] = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    s = sessions[model]
    return [o.name for o in s.get_outputs()], s.run(None, feeds)
def report(label, bad, good):
    print(("FAIL " if bad else "ok   ") + label + ": " + ("; ".join(bad) if bad else good))
for line in open(sys.argv[1]).read().splitlines():
    label, model, x, res = line.split("|")
    bad, worst = [], 0.0
    names, ref = run(model, {"x": np.load(x)})
    for name, want in zip(names, ref):
        got = np.load(f"{res}/{name}.npy")
        if got.shape != want.shape:
            bad.append(f"{name} shape {got.shape} != {want.shape}")
        elif not np.allclose(got, want, rtol=1e-5, atol=1e-6):
            i = np.abs(got - want).argmax()
            bad.append(f"{name} differs ({got.flat[i]} vs {want.flat[i]}, ratio {got.flat[i] / want.flat[i]:.4g})")
        else:
            worst = max(worst, float(np.abs(got.astype(np.float64) - want).max()))
    report(label, bad, f"{len(names)} outputs equal onnxruntime (max abs err {worst:.1e})")
def losses(f):
    return [float(x) for x in re.findall(r"^step \d+ loss (\S+)", open(f).read(), re.M)] if os.path.exists(f) else []
for line in open(sys.argv[2]).read().splitlines():
    label, model, data, loss, ref, got = line.split("|")
    la, lb = losses(ref + "/log"), losses(got + "/log")
    # step 1: the loss of the initial weights on batch 0, from onnxruntime's forward
    y = run(model, {"x": np.load(data + "/x.npy")[0]})[1][0].astype(np.float64)
    lab = np.load(data + "/labels.npy")[0]
    if loss == "mse":
        want = float(np.mean((y - lab) ** 2))
    else:
        keep = lab != -100
        lse = np.log(np.exp(y - y.max(1, keepdims=True)).sum(1)) + y.max(1)
        want = float(np.sum((lse - y[np.arange(len(lab)), np.where(keep, lab, 0)])[keep]) / max(keep.sum(), 1))
    bad = []
    if len(la) != 2 or len(lb) != 2:
        bad.append(f"losses {lb} vs one device {la}")
    else:
        if not np.isclose(la[0], want, rtol=1e-4, atol=1e-6):
            bad.append(f"one-device step 1 loss {la[0]} != onnxruntime + numpy {want}")
        if not np.isclose(lb[0], want, rtol=1e-4, atol=1e-6):
            bad.append(f"step 1 loss {lb[0]} != onnxruntime + numpy {want} (ratio {lb[0] / want:.4g})")
        if not np.isclose(lb[1], la[1], rtol=1e-4, atol=1e-6):
            bad.append(f"step 2 loss {lb[1]} != one device {la[1]}")
    n = 0
    for f in sorted(glob.glob(ref + "/w/*.npy")):
        g = got + "/w/" + os.path.basename(f)
        if not os.path.exists(g):
            bad.append(os.path.basename(f) + " missing")
            continue
        a, b = np.load(f), np.load(g)
        n += 1
        if a.shape != b.shape or not np.allclose(b, a, rtol=1e-4, atol=1e-5):
            bad.append(os.path.basename(f) + " differs from one device")
    if n == 0:
        bad.append("no weights written")
    report(label, bad, f"losses {lb[0]:.6f} (= onnxruntime + numpy {want:.6f}) {lb[1]:.6f} (= one device), {n} weights equal one device")
PY
rc=$?
cat "$T/checks"
pass=$((pass + $(grep -c '^ok ' "$T/checks")))
fail=$((fail + $(grep -c '^FAIL ' "$T/checks")))
[ $rc = 0 ] || bad "comparisons: python exited $rc"
echo "reductions_dp: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
