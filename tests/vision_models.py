#!/usr/bin/env python3
"""torchvision and recurrent models end to end (tests/vision_models.sh).

usage: vision_models.py BUILD [--full] [--only REGEX] [-j N]

For each model (tests/vision/export_models.py, exported by Debian's torch
with random weights at each opset, cached under
$GALV_EXPORT_CACHE or ~/.cache/galvc/exports/vision, keyed by a hash of the
exporter, the model and the opset, so a rerun re-exports only what changed):

  import    galvc imports it; nodes: ONNX nodes -> IR ops after import ->
            after fold-constants + dce (galvc --stats); no shape op
            (shape, constant_of_shape, range) may remain
  cpu       the single-device CPU program's output = torch's (rtol 1e-4, atol 1e-5)
  tp2, dp2  galvc --gpus 2 --strategy tp|dp, 2 MPI ranks: output = torch's;
            tp also reports whether the preset sharded anything (its warning)
  half      (resnet18, mobilenet_v2, lstm; all with --full) the weights stored
            in fp16 and in bf16 (tests/vision/half_model.py): the CPU program
            keeps them at 16 bits and computes in fp32, = torch in fp32 on the
            rounded weights (rtol 1e-4, atol 1e-5; the distance to the fp32
            model's output is printed too)
  zb        (mobilenet_v2; all with --full) the training program as 2
            pipeline stages under ZB-H1, 2 microbatches, on 2 ranks = the
            single-device training program (losses rtol 1e-4, weights rtol
            1e-4 / atol 1e-5)
  nofit     (mobilenet_v2; all with --full) the default training search on 4
            devices under a 1-byte limit: one no-plan line citing the least
            need; that need as the limit plans, a byte less does not
  train     the CPU training program (galvc --train, SGD lr 0.01 (LR) momentum 0.9
            weight decay 0.01, 2 steps on 2 batches; MSE for the UNet) = torch
            training the same graph (tests/vision/torch_graph.py over
            tests/train/onnx_dump.py's dump, the parameters galv trains):
            losses rtol 1e-4, weights rtol 1e-4 atol 1e-5
            (tests/lib/same_training.py). SGD rather than AdamW here: AdamW's
            first step is lr * g / (|g| + eps), so a weight whose gradient is
            float noise (deep ReLU nets have many) moves by a sizeable part of
            lr on either side; tests/vision_ops.py trains AdamW on the new ops

The default set (CI) is resnet18, mobilenet_v2, unet and lstm at opset 17,
tcn and gru at 14; --full runs every model (also resnet50, efficientnet_b0,
convnext_tiny, vgg11_bn and resnet18 with training-mode BatchNormalization)
at opsets 14 and 17. Prints the table and exits 1
on any failure."""
import argparse
import concurrent.futures
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "lib"))
from same_training import check as same_training  # noqa: E402

TORCH_PY = "/usr/bin/python3"
MODELS = ["resnet18", "resnet50", "mobilenet_v2", "efficientnet_b0", "convnext_tiny", "vgg11_bn", "unet", "tcn",
          "lstm", "gru", "resnet18_bntrain"]
# resnet50's 16 bottlenecks with random eval-mode BatchNorm statistics make
# logits of ~20: at lr 0.01 its loss goes 6.2 -> 2.4e7 in one step, and a
# diverging run magnifies float noise; 1e-4 keeps it in range
LR = {"resnet50": "1e-4"}
# the models whose weights are also stored in fp16 and bf16 (every model with --full)
HALF = {"resnet18", "mobilenet_v2", "lstm"}
# the no-plan figure (docs/planner.md, "The default search over a model zoo"): MobileNetV2's 18 layer groups are past
# the 16 whose stage programs the bottleneck DP plans (its cuts come from the analytic cost, which its stages exceed)
NOFIT = {"mobilenet_v2"}
# ZB-H1 on 2 stages, 2 microbatches of one sample (its 1 x 1 feature maps: the weight-gradient entry returns its
# batch-norm biases' gradients as views of its stash, which the runtime once read from the arena instead)
ZB = {"mobilenet_v2"}
FULL = [False]
# CI's set: one model per op family and both opsets (Pad at 14, GRU at 14)
DEFAULT = [("resnet18", 17), ("mobilenet_v2", 17), ("unet", 17), ("tcn", 14), ("lstm", 17), ("gru", 14)]
# the programs are compiled at -O1 (a quarter of -O3's compile time for these
# many programs; tests/cpu_models.sh covers -O3); GALV_VISION_CFLAGS overrides
CFLAGS = os.environ.get("GALV_VISION_CFLAGS", "-O1 -fno-math-errno -fopenmp-simd -DGALV_OMP_SIMD")
SHAPE_OPS = ("galv.shape\"", "galv.constant_of_shape\"", "galv.range\"")
MPI_ENV = {"GALV_COMM_SYNC": "1", "GALV_COMM_TIMEOUT": "60", "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
           "OPENBLAS_NUM_THREADS": "1", "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_ALLOW_RUN_AS_ROOT": "1",
           "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def cache_dir():
    d = os.environ.get("GALV_EXPORT_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "galvc", "exports")
    return os.path.join(d, "vision")


def key(name, opset):
    h = hashlib.sha256(open(os.path.join(HERE, "vision", "export_models.py"), "rb").read())
    h.update(f"{name}:{opset}".encode())
    return f"{name}-o{opset}-{h.hexdigest()[:12]}"


def export(todo):
    """Exports the missing (name, opset) pairs in one torch process; returns {pair: base path}."""
    cd = cache_dir()
    os.makedirs(cd, exist_ok=True)
    bases = {p: os.path.join(cd, key(*p)) for p in todo}
    missing = [p for p in todo if not os.path.exists(bases[p] + ".onnx")]
    if missing:
        with tempfile.TemporaryDirectory(dir=cd) as t:
            r = subprocess.run([TORCH_PY, os.path.join(HERE, "vision", "export_models.py"), t] +
                               [f"{n}:{o}" for n, o in missing], capture_output=True, text=True)
            if r.returncode:
                raise SystemExit("export failed: " + r.stderr.strip()[-3000:])
            for n, o in missing:
                for ext in (".x.npy", ".y.npy", ".onnx"):  # the .onnx last: it marks the entry complete
                    os.replace(os.path.join(t, f"{n}-o{o}{ext}"), bases[(n, o)] + ext)
    return bases


def sh(cmd, timeout=900, env=None):
    e = dict(os.environ, CFLAGS=CFLAGS, **(env or {}))
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=e)
    except subprocess.TimeoutExpired:
        return 124, "", f"timeout after {timeout}s"
    return r.returncode, r.stdout, r.stderr


def close(got, want):
    err = np.abs(got.astype(np.float64) - want.astype(np.float64))
    return got.shape == want.shape and bool(np.all(err <= 1e-5 + 1e-4 * np.abs(want))), float(err.max()) if err.size else 0.0


def first_err(s):
    lines = [l for l in s.splitlines() if l.strip()]
    e = [l for l in lines if "error" in l]
    return (e[0] if e else lines[-1] if lines else "?")[:300]


def run_model(build, name, opset, base, t):
    tag = f"{name}-o{opset}"
    w = os.path.join(t, tag)
    os.makedirs(w)
    res = {"model": tag}
    model, x, y = base + ".onnx", base + ".x.npy", base + ".y.npy"
    galvc = os.path.join(build, "galvc")
    nodes = len(onnx.load(model, load_external_data=False).graph.node)
    rc, out, err = sh([galvc, model, "--stats", "-q", "--emit=ir", "-o", os.path.join(w, "ir.mlir")])
    if rc:
        res["import"] = "FAIL: " + first_err(err)
        return res
    counts = dict(re.findall(r"stats after ([\w-]+): (\d+) ops", err))
    ir = open(os.path.join(w, "ir.mlir")).read()
    left = [s.strip('"') for s in SHAPE_OPS if s in ir]
    res["import"] = "ok" if not left else "FAIL: left " + ",".join(left)
    res["nodes"] = f"{nodes}/{counts.get('import', '?')}/{counts.get('dce', '?')}"
    want = np.load(y)
    # single device
    d1 = os.path.join(w, "cpu")
    rc, out, err = sh([galvc, model, "--target", "cpu", "-q", "-o", d1 + "/"])
    if not rc:
        rc, out, err = sh([os.path.join(d1, "program"), "--input", f"x={x}", "-o", os.path.join(d1, "out")])
    if rc:
        res["cpu"] = "FAIL: " + first_err(err)
    else:
        ok, e = close(np.load(os.path.join(d1, "out", "logits.npy")), want)
        res["cpu"] = f"{'ok' if ok else 'FAIL'} {e:.1e}"
    # 2 ranks
    for s in ("tp", "dp"):
        d = os.path.join(w, s)
        rc, out, err = sh([galvc, model, "--gpus", "2", "--strategy", s, "--target", "cpu", "-q", "-o", d + "/"])
        warn = "warning" in err and "shards nothing" in err
        if not rc:
            rc, out, err2 = sh([os.path.join(d, "launch"), "--input", f"x={x}", "-o", os.path.join(d, "out"),
                                "--comm-stats"], env=MPI_ENV, timeout=600)
            err = err2 if rc else err
        if rc:
            res[s + "2"] = "FAIL: " + first_err(err)
            continue
        ok, e = close(np.load(os.path.join(d, "out", "logits.npy")), want)
        coll = re.findall(r"(\d+) collectives", out + err)
        res[s + "2"] = f"{'ok' if ok else 'FAIL'} {e:.1e}" + (" (replicated, warned)" if warn else "")
    # 16-bit weight storage
    if name in HALF or FULL[0]:
        res["half"] = half(build, model, x, want, w)
    # the no-plan figure: the need cited under a 1-byte limit plans, a byte less does not
    if name in NOFIT or FULL[0]:
        res["nofit"] = nofit(galvc, model)
    # training
    res["train"] = train(build, name, model, x, w)
    if name in ZBRES:
        res["zb"] = ZBRES[name]
    return res


def nofit(galvc, model):
    base = [galvc, model, "--train", "--gpus", "4", "--plan-only", "-q", "--memory-limit"]
    rc, out, err = sh(base + ["1"])
    m = re.findall(r"error: .*no plan fits the memory limit .*the smallest needs (\d+) bytes", err)
    if not rc or len(m) != 1 or err.count("error:") != 1:
        return "FAIL: 1-byte limit: " + first_err(err)
    need = int(m[0])
    rc, out, err = sh(base + [str(need)])
    if rc:
        return f"FAIL: the cited {need} bytes plan nothing: " + first_err(err)
    rc, out, err = sh(base + [str(need - 1)])
    if not rc:
        return f"FAIL: {need - 1} bytes plan too"
    return f"ok {need}"


def half(build, model, x, want32, w):
    """fp16 and bf16 weight storage (tests/vision/half_model.py): the CPU program keeps the weights at 16 bits
    (weights.bin) and computes in fp32; reference: torch in fp32 on the rounded weights (torch_graph.py);
    also printed: the distance to the fp32 model's output (the rounding's effect)."""
    out = []
    for kind in ("fp16", "bf16"):
        d = os.path.join(w, kind)
        os.makedirs(d)
        m = os.path.join(d, "m.onnx")
        rc, _, err = sh([sys.executable, os.path.join(HERE, "vision", "half_model.py"), model, m, kind])
        if not rc:
            rc, _, err = sh([os.path.join(build, "galvc"), m, "--target", "cpu", "-q", "-o", os.path.join(d, "p") + "/"])
        if not rc:
            rc, _, err = sh([os.path.join(d, "p", "program"), "--input", f"x={x}", "-o", os.path.join(d, "out")])
        if rc:
            return f"FAIL {kind}: " + first_err(err)
        b = os.path.join(d, "b")
        os.makedirs(b)
        np.save(os.path.join(b, "x.npy"), np.load(x)[None])
        open(os.path.join(d, "none"), "w").close()
        rc, _, err = sh([sys.executable, os.path.join(HERE, "train", "onnx_dump.py"), m, os.path.join(d, "dump")])
        if not rc:
            rc, _, err = sh([TORCH_PY, os.path.join(HERE, "vision", "torch_graph.py"), os.path.join(d, "dump"), b, "0",
                             os.path.join(d, "torch"), os.path.join(d, "none"), os.path.join(d, "none"), "none"])
        if rc:
            return f"FAIL {kind} torch: " + first_err(err)
        got, ref = np.load(os.path.join(d, "out", "logits.npy")), np.load(os.path.join(d, "torch", "out.npy"))
        ok, e = close(got, ref)
        wb = os.path.getsize(os.path.join(d, "p", "weights.bin"))
        out.append(f"{'ok' if ok else 'FAIL'} {kind} {e:.1e} ({wb >> 10} KiB, vs fp32 {np.abs(got - want32).max():.1e})")
    return "; ".join(out)


def train(build, name, model, x, w):
    d = os.path.join(w, "train")
    b = os.path.join(w, "batches")
    os.makedirs(b)
    x0 = np.load(x)
    r = np.random.RandomState(5)
    xs = np.stack([x0, (0.5 * x0 + 0.5 * r.standard_normal(x0.shape)).astype(np.float32)])
    mse = name == "unet"
    y = np.load(x.replace(".x.npy", ".y.npy"))
    labels = r.standard_normal((2,) + y.shape).astype(np.float32) if mse else r.randint(0, y.shape[-1], (2,) + y.shape[:-1]).astype(np.int64)
    np.save(os.path.join(b, "x.npy"), xs)
    np.save(os.path.join(b, "labels.npy"), labels)
    loss = "mse" if mse else "cross_entropy"
    lr = LR.get(name, "0.01")
    rc, out, err = sh([os.path.join(build, "galvc"), model, "--train", "--loss", loss, "--optimizer", "sgd",
                       "--lr", lr, "--momentum", "0.9", "--target", "cpu", "-q", "-o", d + "/"])
    if not rc:
        rc, out, err = sh([os.path.join(d, "program"), "--batches", b, "--steps", "2", "-o", os.path.join(d, "w")])
    if rc:
        return "FAIL: " + first_err(err)
    open(os.path.join(d, "galv.log"), "w").write(out)
    rc, _, err = sh([os.path.join(build, "galvc"), model, "--train", "--loss", loss, "--emit=ir", "-q", "-o",
                     os.path.join(d, "step.mlir")])
    if rc:
        return "FAIL: " + first_err(err)
    # what trains: the step's galv.param arguments that are not galv.frozen
    trained = sorted(re.findall(r'\{galv\.name = "([^"]*)", galv\.param\}', open(os.path.join(d, "step.mlir")).read()))
    written = sorted(f[:-4] for f in os.listdir(os.path.join(d, "w")) if f.endswith(".npy"))
    open(os.path.join(d, "trainable"), "w").write("\n".join(trained) + "\n")
    open(os.path.join(d, "written"), "w").write("\n".join(written) + "\n")
    dump = os.path.join(d, "dump")
    rc, _, err = sh([sys.executable, os.path.join(HERE, "train", "onnx_dump.py"), model, dump])
    if not rc:
        rc, tout, err = sh([TORCH_PY, os.path.join(HERE, "vision", "torch_graph.py"), dump, b, "2",
                            os.path.join(d, "torch"), os.path.join(d, "trainable"), os.path.join(d, "written"), loss,
                            "sgd", lr, "0.01", "0.9", "0.999", "1e-8", "0.9"])
    if rc:
        return "FAIL torch: " + first_err(err)
    open(os.path.join(d, "torch.log"), "w").write(tout)
    nparams = sum(1 for i in onnx.load(model, load_external_data=False).graph.initializer
                  if i.data_type == 1 and len(i.dims) > 0)
    try:
        msg = same_training(os.path.join(d, "torch.log"), os.path.join(d, "galv.log"), os.path.join(d, "torch"),
                            os.path.join(d, "w"))
    except SystemExit as e:
        return f"FAIL: {e}"
    m = re.search(r"max abs diff (\S+)", msg)
    if name in ZB or FULL[0]:
        ZBRES[name] = zb(build, model, d, b, loss, lr)
    return f"ok {len(trained)}/{nparams} params, w {m.group(1) if m else '?'}"


ZBRES = {}


def zb(build, model, d, b, loss, lr):
    z = d + "-zb"
    rc, out, err = sh([os.path.join(build, "galvc"), model, "--train", "--loss", loss, "--optimizer", "sgd", "--lr", lr,
                       "--momentum", "0.9", "--target", "cpu", "--gpus", "2", "--pipeline-stages", "2", "--microbatches",
                       "2", "--schedule", "zb-h1", "-q", "-o", z + "/"])
    if not rc:
        rc, out, err = sh([os.path.join(z, "launch"), "--batches", b, "--steps", "2", "-o", os.path.join(z, "w")],
                          env=MPI_ENV, timeout=600)
    if rc:
        return "FAIL: " + first_err(err)
    open(z + ".log", "w").write(out)
    try:
        msg = same_training(os.path.join(d, "galv.log"), z + ".log", os.path.join(d, "w"), os.path.join(z, "w"))
    except SystemExit as e:
        return f"FAIL: {e}"
    m = re.search(r"max abs diff (\S+)", msg)
    return f"ok w {m.group(1) if m else '?'}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--only")
    ap.add_argument("-j", type=int, default=1)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    FULL[0] = a.full
    if a.full:
        todo = [(n, o) for n in MODELS for o in (14, 17)]
    else:
        todo = DEFAULT
    if a.only:
        todo = [p for p in todo if re.search(a.only, f"{p[0]}-o{p[1]}")]
    t0 = time.time()
    bases = export(todo)
    print(f"exports ready in {time.time() - t0:.0f}s ({cache_dir()})", flush=True)
    cols = ["model", "import", "nodes", "cpu", "tp2", "dp2", "train", "half", "nofit", "zb"]
    rows = []
    with tempfile.TemporaryDirectory() as t, concurrent.futures.ThreadPoolExecutor(a.j) as ex:
        futs = [ex.submit(run_model, build, n, o, bases[(n, o)], t) for n, o in todo]
        for f in futs:
            r = f.result()
            rows.append(r)
            print("  " + " | ".join(f"{c}: {r.get(c, '-')}" for c in cols), flush=True)
    print("\n| " + " | ".join(["model", "import", "ONNX/import/folded ops", "CPU = torch", "tp2 = torch", "dp2 = torch",
                                "training = torch", "fp16 / bf16 weights = torch on rounded weights",
                                "no-plan figure plans", "zb-h1 2 x 2 = one device"]) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(str(r.get(c, "-")) for c in cols) + " |")
    fails = sum(1 for r in rows for c in cols[1:] if "FAIL" in str(r.get(c, "")) or (c not in r and c not in ("half", "nofit", "zb")))
    print(f"vision_models: {len(rows)} models, {fails} failed checks, {time.time() - t0:.0f}s")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
