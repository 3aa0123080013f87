#!/usr/bin/env python3
"""Compiles an ONNX model with galvc --gpus 2 --strategy S --target cpu and
runs it on 2 MPI ranks (out/launch; the caller sets the MPI environment,
tests/lib/mpi_env.sh) on seeded inputs (tests/model_inputs.py); every
output must equal onnxruntime's and the single-device program's (rtol
1e-4 / atol 1e-5), and the collectives galvc's table lists, except the
gathers of the outputs at the return, must be exactly the --expect list
(KIND@NODE, repeated per collective; none given: no collective before the
return). Prints one line: max abs errors and the collectives.

usage: spmd_compare.py BUILD MODEL.onnx STRATEGY [--expect KIND@NODE ...]
"""
import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from model_inputs import make_inputs  # noqa: E402


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300, **kw)
    if p.returncode:
        sys.exit(f"FAIL {' '.join(os.path.basename(c) for c in cmd[:2])}: rc {p.returncode}: "
                 f"{(p.stderr.strip().splitlines() or ['?'])[-1]}")
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("model")
    ap.add_argument("strategy")
    ap.add_argument("--expect", nargs="*", default=[])
    a = ap.parse_args()
    galvc = os.path.join(a.build, "galvc")
    m = onnx.load(a.model)
    feeds = make_inputs(m, 1, 1)
    sess = ort.InferenceSession(a.model, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    ref = dict(zip(names, sess.run(None, feeds)))
    with tempfile.TemporaryDirectory() as t:
        args = []
        for n, x in feeds.items():
            np.save(os.path.join(t, n + ".npy"), x)
            args += ["--input", f"{n}={os.path.join(t, n + '.npy')}"]
        run([galvc, a.model, "--target", "cpu", "-q", "-o", t + "/one/"])
        run([os.path.join(t, "one", "program")] + args + ["-o", t + "/one/res"])
        p = run([galvc, a.model, "--gpus", "2", "--strategy", a.strategy, "--target", "cpu", "-o", t + "/two/"])
        table = re.findall(r"^galvc: spmd: (all_reduce|all_gather|reduce_scatter|all_to_all) +\S+ +\S+ +\d+ +(\S*)$",
                           p.stderr, re.M)
        got = collections.Counter(f"{k}@{n}" for k, n in table if n != "return")
        if got != collections.Counter(a.expect):
            sys.exit(f"FAIL {a.strategy}: collectives before the return {dict(got)}, expected {a.expect}")
        run([os.path.join(t, "two", "launch")] + args + ["-o", t + "/two/res", "--comm-stats"])
        worst = 0.0
        for n in names:
            f = "".join("_" if c in "/\\" else c for c in n) + ".npy"
            want = ref[n]
            for tag in ("one", "two"):
                x = np.load(os.path.join(t, tag, "res", f))
                if x.shape != want.shape or not np.allclose(x, want, rtol=1e-4, atol=1e-5):
                    sys.exit(f"FAIL {a.strategy} {n}: the {tag}-rank program differs from onnxruntime "
                             f"({x.shape} vs {want.shape})")
                worst = max(worst, float(np.abs(x.astype(np.float64) - want).max()))
        ret = sum(1 for _, n in table if n == "return")
        print(f"{os.path.basename(a.model)} 2 ranks {a.strategy}: {len(names)} outputs = onnxruntime = 1 rank "
              f"(max abs err {worst:.2e}); collectives: {len(table) - ret} before the return "
              f"{dict(got) or ''}, {ret} at it")


if __name__ == "__main__":
    main()
