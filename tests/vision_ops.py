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
       "convt_s2_op1", "resize_bilinear_torch", "lstm_bidir_init", "gru_lbr0_bidir"}
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
