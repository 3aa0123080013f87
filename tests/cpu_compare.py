#!/usr/bin/env python3
"""Compiles an ONNX model with galvc --target cpu, runs the generated program
on random inputs (tests/model_inputs.py) and compares every output with
onnxruntime (rtol 1e-4 / atol 1e-5 by default).

usage: cpu_compare.py BUILD MODEL.onnx [--batch 2 --seq 16] [--debug]
       [--keep DIR] [--iters N] [--threads N]

--debug also builds and runs the ASan/UBSan variant (make debug): values are
poisoned after their last use, so a memory-plan reuse bug is caught.
Prints one line per output (max abs error) and the program's timing line.
Exits 1 on any failure.
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


def file_name(n):
    return "".join("_" if c in "/\\" or ord(c) < 32 else c for c in n)


def compare(tag, names, ref, od, rtol, atol, atol_max=0.0):
    """Each float output within atol + rtol |want| + atol_max max|want| (atol_max: a bound relative to the
    output's largest magnitude, as docs/cpu-target.md states fp16's: 2^-9 max|logit|)."""
    bad = 0
    for n in names:
        f = os.path.join(od, file_name(n) + ".npy")
        if not os.path.exists(f):
            print(f"FAIL {tag} {n}: output not written")
            bad += 1
            continue
        got, want = np.load(f), ref[n]
        if got.shape != want.shape or got.dtype != want.dtype:
            print(f"FAIL {tag} {n}: {got.dtype}{got.shape} != {want.dtype}{want.shape}")
            bad += 1
            continue
        if want.dtype.kind == "f":
            err = np.abs(got.astype(np.float64) - want.astype(np.float64))
            lim = atol + rtol * np.abs(want.astype(np.float64)) + atol_max * (float(np.abs(want).max()) if want.size else 0.0)
            ok = bool(np.all(err <= lim)) if err.size else True
            detail = f"max abs err {float(err.max()) if err.size else 0:.3g}"
            if atol_max and want.size:
                detail += f" (bound {atol_max * float(np.abs(want).max()):.3g})"
        else:
            ok = np.array_equal(got, want)
            detail = "exact"
        print(f"{'ok  ' if ok else 'FAIL'} {tag} {n} {tuple(want.shape)} {detail}")
        bad += 0 if ok else 1
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("model")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--seq", type=int, default=16)
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol", type=float, default=1e-5)
    ap.add_argument("--debug", action="store_true")
    ap.add_argument("--keep")
    ap.add_argument("--iters", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    tag = os.path.basename(a.model)

    m = onnx.load(a.model, load_external_data=False)
    feeds = make_inputs(m, a.batch, a.seq)
    sess = ort.InferenceSession(a.model, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    ref = dict(zip(names, sess.run(None, feeds)))

    with tempfile.TemporaryDirectory() as t:
        pd = a.keep or os.path.join(t, "prog")
        r = subprocess.run([os.path.join(a.build, "galvc"), a.model, "--batch", str(a.batch), "--seq", str(a.seq),
                            "--target", "cpu", "-q", "-o", pd + "/"], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"FAIL {tag}: galvc exited {r.returncode}: {r.stderr.strip()[-2000:]}")
            return 1
        args = []
        for k, v in feeds.items():
            p = os.path.join(t, f"in{len(args)}.npy")
            np.save(p, v)
            args += ["--input", f"{k}={p}"]
        bad = 0
        progs = [("program", [])]
        if a.debug:
            r = subprocess.run(["make", "-s", "-C", pd, "debug"], capture_output=True, text=True)
            if r.returncode != 0:
                print(f"FAIL {tag}: make debug: {r.stderr.strip()[-2000:]}")
                return 1
            progs.append(("program-debug", []))
        for prog, extra in progs:
            od = os.path.join(t, "out-" + prog)
            cmd = [os.path.join(pd, prog)] + args + ["-o", od, "--iters", str(a.iters), "--threads", str(a.threads)]
            env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0",
                       LSAN_OPTIONS="suppressions=" + os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                  "..", "scripts", "lsan.supp"))
            r = subprocess.run(cmd + extra, capture_output=True, text=True, env=env)
            if r.returncode != 0:
                print(f"FAIL {tag} [{prog}]: exited {r.returncode}: {r.stderr.strip()[-3000:]}")
                bad += 1
                continue
            for line in r.stdout.splitlines():
                if "iterations" in line or "arena" in line:
                    print(f"     {tag} [{prog}] {line}")
            bad += compare(f"{tag} [{prog}]", names, ref, od, a.rtol, a.atol)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
