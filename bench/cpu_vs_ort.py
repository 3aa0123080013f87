#!/usr/bin/env python3
"""Times generated CPU programs against onnxruntime on the same inputs and
the same number of threads, checks that their outputs agree and prints one
table (used by bench/cpu_vs_ort.sh).

usage: cpu_vs_ort.py MODEL.onnx --prog BATCH=DIR ... [--seq 128]
       [--threads 1,2] [--iters 10] [--warmup 2] [--rounds 2] [--rtol 1e-4 --atol 1e-5]
       [--profile]

Each DIR holds a program built by `galvc MODEL --batch BATCH --seq SEQ
--target cpu -o DIR/`. The program runs with `--threads N` (BLAS threads and
its own OpenMP loops); onnxruntime runs with intra_op_num_threads = N,
inter_op_num_threads = 1, sequential execution and its default (full) graph
optimisations, through IO binding (inputs bound once, outputs into
preallocated OrtValues: the timed call is run_with_iobinding alone, as
the program's timed call is its step into its preallocated arena). Both
report min and mean over ITERS timed runs after WARMUP untimed ones. Exit status 1 when an output disagrees beyond rtol/atol.

OpenBLAS chooses its kernels for the CPU unless OPENBLAS_CORETYPE names a
core; onnxruntime always uses the best its CPU check finds. So the program
runs with OPENBLAS_CORETYPE removed from its environment (--blas-core auto,
the default) or set to --blas-core NAME (e.g. Haswell: AVX2 kernels only).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort


def vocab_of(model):
    for init in model.graph.initializer:
        if init.name == "transformer.wte.weight":
            return init.dims[0]
    return 50


def ort_session(path, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def time_ort(sess, feeds, iters, warmup):
    """onnxruntime's run through IO binding: the inputs bound once as
    OrtValues, the outputs into OrtValues allocated once (shapes from one
    untimed plain run), so a timed run is run_with_iobinding alone, as the
    program's timed run is its step into its preallocated arena; no Python
    conversion of the inputs, no allocation or copy of the outputs (206 MB
    of logits at batch 8) inside the timing."""
    names = [o.name for o in sess.get_outputs()]
    first = sess.run(names, feeds)
    binding = sess.io_binding()
    for k, v in feeds.items():
        binding.bind_ortvalue_input(k, ort.OrtValue.ortvalue_from_numpy(v))
    outs = []
    for n, r in zip(names, first):
        ov = ort.OrtValue.ortvalue_from_shape_and_type(list(r.shape), r.dtype)
        binding.bind_ortvalue_output(n, ov)
        outs.append(ov)
    for _ in range(warmup):
        sess.run_with_iobinding(binding)
    ts = []
    for _ in range(iters):
        t0 = time.perf_counter()
        sess.run_with_iobinding(binding)
        ts.append((time.perf_counter() - t0) * 1e3)
    return {n: ov.numpy() for n, ov in zip(names, outs)}, ts


def time_prog(d, inputs, threads, iters, warmup, od, profile, env):
    cmd = [os.path.join(d, "program"), "--threads", str(threads), "--iters", str(iters), "--warmup", str(warmup),
           "-o", od]
    for n, f in inputs.items():
        cmd += ["--input", f"{n}={f}"]
    if profile:
        cmd.append("--profile")
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode:
        sys.exit(f"cpu_vs_ort: {' '.join(cmd)} failed:\n{r.stderr}")
    m = re.search(r"mean ([0-9.]+) ms, min ([0-9.]+) ms", r.stdout)
    if not m:
        sys.exit(f"cpu_vs_ort: no timing line in the program's output:\n{r.stdout}")
    prof = "\n".join(l for l in r.stdout.splitlines() if "profile" in l or "BLAS" in l or l.startswith("  "))
    return float(m.group(2)), float(m.group(1)) * iters, prof


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--prog", action="append", required=True, metavar="BATCH=DIR")
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2,
                    help="alternate galvc and onnxruntime this many times (ITERS split among them), so a burst "
                         "of load on the shared machine hits both")
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol", type=float, default=1e-5)
    ap.add_argument("--profile", action="store_true", help="print the program's per-kernel profile (first thread count)")
    ap.add_argument("--blas-core", default="auto", help="OPENBLAS_CORETYPE for the program (auto: unset)")
    a = ap.parse_args()
    model = onnx.load(a.model, load_external_data=False)
    vocab = vocab_of(model)
    threads = [int(t) for t in a.threads.split(",")]
    a.rounds = max(1, min(a.rounds, a.iters))
    env = dict(os.environ)
    # The two settings go together: the L2 size belongs to the pinned core.
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)
    if a.blas_core != "auto":
        env["OPENBLAS_CORETYPE"] = a.blas_core
    print(f"program: OPENBLAS_CORETYPE {env.get('OPENBLAS_CORETYPE', 'unset (OpenBLAS detects the CPU)')}", flush=True)
    rows, bad = [], 0
    tmp = tempfile.mkdtemp(prefix="galv_bench.")
    for spec in a.prog:
        b, d = spec.split("=", 1)
        b = int(b)
        rng = np.random.RandomState(b)
        ids = rng.randint(0, vocab, size=(b, a.seq)).astype(np.int64)
        f = os.path.join(tmp, f"ids_b{b}.npy")
        np.save(f, ids)
        for n in threads:
            od = os.path.join(tmp, f"out_b{b}_t{n}")
            sess = ort_session(a.model, n)
            gmin, gsum, ots, prof = float("inf"), 0.0, [], ""
            for r in range(a.rounds):
                it = a.iters // a.rounds + (r < a.iters % a.rounds)
                m, s, p = time_prog(d, {"input_ids": f}, n, it, a.warmup, od,
                                    a.profile and n == threads[0] and r == 0, env)
                gmin, gsum, prof = min(gmin, m), gsum + s, prof or p
                ref, ts = time_ort(sess, {"input_ids": ids}, it, a.warmup)
                ots += ts
            del sess
            gmean, omin, omean = gsum / a.iters, min(ots), sum(ots) / len(ots)
            worst, ok = 0.0, True
            for name, want in ref.items():
                got = np.load(os.path.join(od, name + ".npy"))
                err = np.abs(got.astype(np.float64) - want.astype(np.float64))
                worst = max(worst, float(err.max()))
                ok &= bool(np.all(err <= a.atol + a.rtol * np.abs(want.astype(np.float64))))
            bad += not ok
            rows.append((b, n, gmin, gmean, omin, omean, worst, ok))
            if prof:
                print(f"batch {b}, threads {n}:\n{prof}", flush=True)
            print(f"  batch {b} threads {n}: galvc min {gmin:.1f} ms, onnxruntime min {omin:.1f} ms", flush=True)
    print()
    print(f"{'batch':>5} {'threads':>7} {'galvc min':>10} {'galvc mean':>10} {'ort min':>9} {'ort mean':>9} "
          f"{'ratio(min)':>10} {'ratio(mean)':>11} {'max abs err':>11}  agree")
    for b, n, gmin, gmean, omin, omean, worst, ok in rows:
        print(f"{b:>5} {n:>7} {gmin:>10.1f} {gmean:>10.1f} {omin:>9.1f} {omean:>9.1f} {gmin / omin:>10.2f} "
              f"{gmean / omean:>11.2f} {worst:>11.2e}  {'yes' if ok else 'NO'}")
    print(f"(ms per run, {a.iters} timed runs in {a.rounds} alternating rounds, each after {a.warmup} warm-up; "
          f"ratio = galvc / onnxruntime; "
          f"agree = within rtol {a.rtol:g} / atol {a.atol:g})")
    print("(timed: galvc = the program's own --iters timing of one step into its preallocated arena, input "
          "already loaded, output not written; onnxruntime = InferenceSession.run_with_iobinding with the "
          "input bound once and the outputs bound to OrtValues allocated once: no Python conversion, "
          "output allocation or copy inside the timing)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
