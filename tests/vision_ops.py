#!/usr/bin/env python3
"""The vision and recurrent ops against onnxruntime: every graph of
tests/vision/make_op_models.py through galv-eval (as imported, and after the
whole pipeline) and, for one case per op, through the generated CPU program;
rtol 1e-4, atol 1e-5. usage: vision_ops.py BUILD [-j N] [--only REGEX]"""
import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "vision"))
sys.path.insert(0, HERE)
from make_op_models import cases  # noqa: E402
from model_inputs import make_inputs  # noqa: E402

# one CPU program per op (the galv.pool kernels, and the decompositions' core ops)
CPU = {"gap", "maxpool_k3s2p1", "maxpool_ceil", "avgpool_ceil_cip1", "relu6", "bn_train", "pad_reflect",
       "convt_s2_op1", "resize_bilinear_torch", "resize_cubic_down_excl", "lstm_bidir_init", "gru_lbr0_bidir"}
PIPE = "shape-infer,fold-constants,canonicalize,dce,fuse,memory-plan"


def fname(n):
    return "".join("_" if c in "/\\" or ord(c) < 32 else c for c in n)


def check(tag, names, ref, od):
    bad = []
    for n in names:
        f = os.path.join(od, fname(n) + ".npy")
        if not os.path.exists(f):
            bad.append(f"{tag} {n}: not written")
            continue
        got, want = np.load(f), ref[n]
        if got.shape != want.shape:
            bad.append(f"{tag} {n}: shape {got.shape} != {want.shape}")
            continue
        err = np.abs(got.astype(np.float64) - want.astype(np.float64))
        if not np.all(err <= 1e-5 + 1e-4 * np.abs(want.astype(np.float64))):
            bad.append(f"{tag} {n}: max abs err {err.max():.3g}")
    return bad


def run(build, name, m, t):
    path = os.path.join(t, name + ".onnx")
    onnx.save(m, path)
    feeds = make_inputs(m, 2, 8, seed=1)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    ref = dict(zip(names, sess.run(None, feeds)))
    args = []
    for k, v in feeds.items():
        p = os.path.join(t, f"{name}.in{len(args)}.npy")
        np.save(p, v)
        args += ["--input", f"{k}={p}"]
    bad = []
    for pl in ("shape-infer", PIPE):
        od = os.path.join(t, f"{name}.out.{len(bad)}.{pl.count(',')}")
        r = subprocess.run([os.path.join(build, "galv-eval"), path, "--passes=" + pl, "-o", od] + args,
                           capture_output=True, text=True)
        if r.returncode:
            bad.append(f"{name} [{pl}]: {r.stderr.strip()}")
        else:
            bad += check(f"{name} [{pl}]", names, ref, od)
    if name in CPU:
        pd = os.path.join(t, name + ".prog")
        r = subprocess.run([os.path.join(build, "galvc"), path, "--target", "cpu", "-q", "-o", pd + "/"],
                           capture_output=True, text=True)
        if r.returncode:
            bad.append(f"{name} [cpu]: galvc: {r.stderr.strip()[-500:]}")
        else:
            od = os.path.join(t, name + ".cpu")
            r = subprocess.run([os.path.join(pd, "program"), "-o", od] + args, capture_output=True, text=True)
            bad += [f"{name} [cpu]: {r.stderr.strip()[-500:]}"] if r.returncode else check(f"{name} [cpu]", names, ref, od)
    return name, bad


def train_check(build, t):
    """galv-eval --train and the CPU training program against tests/vision/torch_graph.py; '' or 'FAIL ...'
    (a skip note without Debian's torch)."""
    if not os.path.exists("/usr/bin/python3") or subprocess.run(["/usr/bin/python3", "-c", "import torch"],
                                                                 capture_output=True).returncode:
        return "skipped (no torch)"
    from make_op_models import train_model
    sys.path.insert(0, os.path.join(HERE, "lib"))
    from same_training import check
    d = os.path.join(t, "train")
    b = os.path.join(d, "batches")
    os.makedirs(b)
    path = os.path.join(d, "cnn.onnx")
    onnx.save(train_model(), path)
    r = np.random.RandomState(4)
    x, lab = r.standard_normal((1, 2, 3, 10, 10)).astype(np.float32), r.randint(0, 5, (1, 2)).astype(np.int64)
    np.save(os.path.join(b, "x.npy"), x)
    np.save(os.path.join(b, "labels.npy"), lab)
    np.save(os.path.join(d, "x1.npy"), x[0])
    np.save(os.path.join(d, "l1.npy"), lab[0])
    opt = ["--optimizer", "adamw", "--lr", "1e-2", "--eps", "1e-6"]
    runs = {}
    cmd = [os.path.join(build, "galv-eval"), path, "--train", "--steps", "2", "-q", "--input", "x=" + os.path.join(d, "x1.npy"),
           "--input", "labels=" + os.path.join(d, "l1.npy"), "-o", os.path.join(d, "eval")] + opt
    runs["eval"] = subprocess.run(cmd, capture_output=True, text=True)
    r1 = subprocess.run([os.path.join(build, "galvc"), path, "--train", "--target", "cpu", "-q", "-o",
                         os.path.join(d, "prog") + "/"] + opt, capture_output=True, text=True)
    runs["cpu"] = r1 if r1.returncode else subprocess.run(
        [os.path.join(d, "prog", "program"), "--batches", b, "--steps", "2", "-o", os.path.join(d, "cpu")],
        capture_output=True, text=True)
    names = ["cw", "cb", "tw", "tb", "fw", "fb"]
    open(os.path.join(d, "names"), "w").write("\n".join(names) + "\n")
    dump = os.path.join(d, "dump")
    subprocess.run([sys.executable, os.path.join(HERE, "train", "onnx_dump.py"), path, dump], check=True)
    rt = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "vision", "torch_graph.py"), dump, b, "2",
                         os.path.join(d, "torch"), os.path.join(d, "names"), os.path.join(d, "names"), "cross_entropy",
                         "adamw", "1e-2", "0.01", "0.9", "0.999", "1e-6", "0"], capture_output=True, text=True)
    if rt.returncode:
        return "FAIL torch: " + rt.stderr.strip()[-300:]
    open(os.path.join(d, "torch.log"), "w").write(rt.stdout)
    out = []
    for k, rr in runs.items():
        if rr.returncode:
            return f"FAIL {k}: {rr.stderr.strip()[-300:]}"
        open(os.path.join(d, k + ".log"), "w").write(rr.stdout)
        wd = os.path.join(d, k + ".w")  # the parameters only (galv-eval -o also writes the loss and optimizer state)
        os.makedirs(wd)
        for nm in names:
            os.link(os.path.join(d, k, nm + ".npy"), os.path.join(wd, nm + ".npy"))
        try:
            out.append(k + ": " + check(os.path.join(d, "torch.log"), os.path.join(d, k + ".log"), os.path.join(d, "torch"),
                                        wd))
        except SystemExit as e:
            return f"FAIL {k}: {e}"
    return "; ".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--only")
    a = ap.parse_args()
    todo = [(n, m) for n, m in cases() if not a.only or re.search(a.only, n)]
    fails = 0
    with tempfile.TemporaryDirectory() as t, concurrent.futures.ThreadPoolExecutor(a.j) as ex:
        for name, bad in ex.map(lambda nm: run(a.build, nm[0], nm[1], t), todo):
            print(("ok   " if not bad else "FAIL ") + name + ("  [+cpu]" if name in CPU else ""))
            for b in bad:
                print("     " + b)
            fails += bool(bad)
        if not a.only:  # the pools' and ConvTranspose's gradients: 2 AdamW steps = torch on the same graph
            bad = train_check(a.build, t)
            print(("FAIL " if bad.startswith("FAIL") else "ok   ") + "cnn_train (MaxPool, AveragePool, ConvTranspose gradients) = torch: " + bad)
            fails += bad.startswith("FAIL")
        if not a.only:  # --strategy tp on a model it cannot shard: one warning line, then a replicated program
            m = dict(todo)["maxpool_k3s2p1"]
            onnx.save(m, os.path.join(t, "tpw.onnx"))
            r = subprocess.run([os.path.join(a.build, "galvc"), os.path.join(t, "tpw.onnx"), "--gpus", "2", "--strategy",
                                "tp", "--target", "cpu", "--no-build", "-q", "-o", os.path.join(t, "tpw") + "/"],
                               capture_output=True, text=True)
            lines = r.stderr.strip().splitlines()
            ok = r.returncode == 0 and len(lines) == 1 and "warning: --strategy tp shards nothing" in lines[0]
            print(("ok   " if ok else "FAIL ") + "tp preset that shards nothing warns" + ("" if ok else f": {r.stderr.strip()}"))
            fails += not ok
    print(f"vision_ops: {len(todo) - fails} passed, {fails} failed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
