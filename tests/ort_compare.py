#!/usr/bin/env python3
"""Compares galv-eval (frontend + passes + reference evaluator) with onnxruntime.

usage: ort_compare.py BUILD MODEL.onnx [--batch 2 --seq 16] [--passes LIST]...

Random inputs (seeded) come from tests/model_inputs.py. Each --passes list is evaluated separately, so a
rewriting pass that changes numerics shows up against the unrewritten graph.
Exits 1 when any output differs beyond rtol 1e-4 / atol 1e-5.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model_inputs import make_inputs  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("model")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--seq", type=int, default=16)
    ap.add_argument("--passes", action="append")
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol", type=float, default=1e-5)
    a = ap.parse_args()
    passes = a.passes or ["shape-infer", "shape-infer,fold-constants,canonicalize,dce,fuse,memory-plan"]

    m = onnx.load(a.model, load_external_data=False)
    feeds = make_inputs(m, a.batch, a.seq)

    sess = ort.InferenceSession(a.model, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    ref = dict(zip(names, sess.run(None, feeds)))

    bad = 0
    with tempfile.TemporaryDirectory() as t:
        args = []
        for k, v in feeds.items():
            p = os.path.join(t, f"in{len(args)}.npy")
            np.save(p, v)
            args += ["--input", f"{k}={p}"]
        for pl in passes:
            od = os.path.join(t, "out-" + pl.replace(",", "_"))
            cmd = [os.path.join(a.build, "galv-eval"), a.model, "--batch", str(a.batch), "--seq", str(a.seq),
                   "--passes=" + pl, "-o", od] + args
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                print(f"FAIL {os.path.basename(a.model)} [{pl}]: galv-eval exited {r.returncode}: {r.stderr.strip()}")
                bad += 1
                continue
            for n in names:
                fn = "".join("_" if c in "/\\" or ord(c) < 32 else c for c in n)
                got = np.load(os.path.join(od, fn + ".npy"))
                want = ref[n]
                if got.shape != want.shape:
                    print(f"FAIL {os.path.basename(a.model)} [{pl}] {n}: shape {got.shape} != {want.shape}")
                    bad += 1
                    continue
                if want.dtype.kind == "f":
                    err = np.abs(got.astype(np.float64) - want.astype(np.float64))
                    lim = a.atol + a.rtol * np.abs(want.astype(np.float64))
                    worst = float(np.max(err - lim)) if err.size else 0.0
                    ok = worst <= 0
                    detail = f"max abs err {float(err.max()) if err.size else 0:.3g}"
                else:
                    ok = np.array_equal(got, want)
                    detail = "exact"
                print(f"{'ok  ' if ok else 'FAIL'} {os.path.basename(a.model)} [{pl}] {n} {tuple(want.shape)} {detail}")
                bad += 0 if ok else 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
