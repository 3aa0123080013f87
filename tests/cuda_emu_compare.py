#!/usr/bin/env python3
"""Compiles an ONNX model with galvc --target cuda, builds the program's
emulated form (make emu: program.cu and runtime/cuda/ compiled by the host
C++ compiler against runtime/cuda/emu/), runs program-emu on random inputs
(tests/model_inputs.py) and compares every output with onnxruntime
directly: fp32 rtol 1e-4 / atol 1e-5, --precision bf16 the bound of
docs/cuda-target.md (atol 5e-2 + rtol 5e-2), --precision fp16 the bound
docs/cpu-target.md states for fp16 against fp32 (2^-9 max|output|).

usage: cuda_emu_compare.py BUILD MODEL.onnx [--batch 2 --seq 16] [--precision bf16|fp16] [--keep DIR]
                           [--galvc-args "--gpus 2 --strategy tp"]
With --galvc-args naming --gpus N > 1 the program's ranks run under its
./launch (mpirun) with GALV_PROGRAM=program-emu.
EMU_FLAGS in the environment is passed to make (e.g. -fsanitize=address).
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
from cpu_compare import compare  # noqa: E402
from model_inputs import make_inputs  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("model")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--seq", type=int, default=16)
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--keep")
    ap.add_argument("--galvc-args", default="", help="more galvc options (split at spaces)")
    a = ap.parse_args()
    extra = a.galvc_args.split()
    tag = os.path.basename(a.model) + (" " + a.precision if a.precision != "fp32" else "") + (" " + a.galvc_args if extra else "")
    rtol, atol = (5e-2, 5e-2) if a.precision == "bf16" else (0.0, 0.0) if a.precision == "fp16" else (1e-4, 1e-5)
    atol_max = 2.0 ** -9 if a.precision == "fp16" else 0.0

    m = onnx.load(a.model, load_external_data=False)
    feeds = make_inputs(m, a.batch, a.seq)
    sess = ort.InferenceSession(a.model, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    ref = dict(zip(names, sess.run(None, feeds)))

    with tempfile.TemporaryDirectory() as t:
        pd = a.keep or os.path.join(t, "prog")
        r = subprocess.run([os.path.join(a.build, "galvc"), a.model, "--batch", str(a.batch), "--seq", str(a.seq),
                            "--target", "cuda", "--precision", a.precision, "--no-build", "-q", "-o", pd + "/"] + extra,
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"FAIL {tag}: galvc exited {r.returncode}: {r.stderr.strip()[-2000:]}")
            return 1
        mk = ["make", "-s", "-C", pd, "emu"]
        if os.environ.get("EMU_FLAGS"):
            mk.append("EMU_FLAGS=" + os.environ["EMU_FLAGS"])
        r = subprocess.run(mk, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"FAIL {tag}: make emu: {r.stderr.strip()[-3000:]}")
            return 1
        args = []
        for k, v in feeds.items():
            p = os.path.join(t, f"in{len(args)}.npy")
            np.save(p, v)
            args += ["--input", f"{k}={p}"]
        od = os.path.join(t, "out")
        ranks = "--gpus" in extra and int(extra[extra.index("--gpus") + 1]) > 1
        exe = [os.path.join(pd, "launch")] if ranks else [os.path.join(pd, "program-emu")]
        env = dict(os.environ, GALV_PROGRAM="program-emu")
        r = subprocess.run(exe + args + ["-o", od], capture_output=True, text=True, env=env, timeout=600)
        if r.returncode != 0:
            print(f"FAIL {tag} [program-emu]: exited {r.returncode}: {r.stderr.strip()[-3000:]}")
            return 1
        return 1 if compare(f"{tag} [program-emu]", names, ref, od, rtol, atol, atol_max) else 0


if __name__ == "__main__":
    sys.exit(main())
