#!/usr/bin/env python3
"""ONNX backend node-test conformance for galvc.

usage: run.py BUILD [--mode eval|program] [--update] [--only REGEX] [-j N]

Iterates the node tests shipped with the installed onnx package
(onnx/backend/test/data/node/test_*/model.onnx, test_data_set_0/input_*.pb,
output_*.pb) and selects those whose every node (subgraphs included) is a
default-domain op in the frontend's list (`galv-eval --list-ops`) or one
the frontend refuses by design (REFUSED_BY_DESIGN: the ops whose output
shape depends on their input's values, frontend/onnx_ops.c `refusal`;
their tests' outcome is that one-line refusal, their written reason).

  --mode eval     galv-eval MODEL --input NAME=input_K.pb ... -o OUT
                  (frontend + default passes + reference evaluator)
  --mode program  galvc MODEL --target cpu --no-build -o DIR/, make -C DIR
                  (program.c compiled with the Makefile's own flags, linked
                  with the runtime compiled once, with the same flags, into
                  a static library: the whole suite in minutes, not the
                  quarter hour of 329 runtime builds), then
                  DIR/program --input NAME=input_K.pb ... -o OUT

Graph inputs (initializers excluded), in order, get input_0.pb, input_1.pb...
Each graph output is read back from OUT/NAME.npy and compared with
output_K.pb: shapes and dtypes exactly, integers and bools exactly, floats
with the ONNX backend test runner's default tolerance (rtol 1e-3, atol 1e-7;
NaN matches NaN). Outcomes:

  pass
  unsupported: <the tool's one error line, model path removed>
  fail: <numeric / shape / dtype mismatch, crash, timeout>

The expected outcome of every selected test is committed in
expected-MODE.txt (`test_name<TAB>outcome`); any difference, a newly passing
test included, makes the script exit 1. --update rewrites the file (for the
tests run: with --only the other lines are kept). A per-op table (tests
using the op: passed/total) is printed at the end.
"""
import argparse
import collections
import concurrent.futures
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
NODE_DIR = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
RTOL = float(os.environ.get("GALV_CONF_RTOL", 1e-3))  # overrides: diagnostics only
ATOL = float(os.environ.get("GALV_CONF_ATOL", 1e-7))
TIMEOUT = 60
REFUSED_BY_DESIGN = {"NonZero", "Unique", "Compress", "NonMaxSuppression"}


def graph_ops(g):
    for n in g.node:
        yield n.domain, n.op_type
        for a in n.attribute:
            if a.HasField("g"):
                yield from graph_ops(a.g)
            for gg in a.graphs:
                yield from graph_ops(gg)


def select(supported, only):
    tests = []
    for d in sorted(glob.glob(os.path.join(NODE_DIR, "test_*"))):
        name = os.path.basename(d)
        if only and not re.search(only, name):
            continue
        mp = os.path.join(d, "model.onnx")
        ds = os.path.join(d, "test_data_set_0")
        if not os.path.isfile(mp) or not os.path.isdir(ds):
            continue
        model = onnx.load(mp, load_external_data=False)
        ops = set(graph_ops(model.graph))
        if all(dom in ("", "ai.onnx") and op in supported for dom, op in ops):
            inits = {t.name for t in model.graph.initializer}
            inputs = [i.name for i in model.graph.input if i.name not in inits]
            outputs = [o.name for o in model.graph.output]
            tests.append((name, d, sorted({op for _, op in ops}), inputs, outputs))
    return tests


def file_name(name):
    # galv-eval's output file naming: '/', '\\' and control characters -> '_'
    return "".join("_" if c in "/\\" or ord(c) < 0x20 else c for c in name)


def error_line(stderr, d):
    lines = [l for l in stderr.splitlines() if l.strip()]
    err = [l for l in lines if ": error: " in l]
    line = (err[0] if err else lines[-1] if lines else "no message").strip()
    line = re.sub(r"^[\w.-]+: error: ", "", line)
    line = line.replace(os.path.join(d, "test_data_set_0") + "/", "").replace(d + "/", "")
    line = re.sub(r"^model\.onnx: ", "", line)
    return line


def compare(oname, got, want):
    if want.dtype.name == "bfloat16" and got.dtype == np.uint16:
        got = got.view(want.dtype)  # galv-eval writes bfloat16 as its uint16 bits
    if got.shape != want.shape:
        return f"output '{oname}': shape {list(got.shape)}, expected {list(want.shape)}"
    if got.dtype != want.dtype:
        return f"output '{oname}': dtype {got.dtype}, expected {want.dtype}"
    if np.issubdtype(want.dtype, np.floating) or want.dtype.name == "bfloat16":
        g, w = got.astype(np.float64), want.astype(np.float64)
        nan_bad = np.isnan(g) != np.isnan(w)
        both = ~np.isnan(g) & ~np.isnan(w)
        inf_bad = both & (np.isinf(g) | np.isinf(w)) & (g != w)
        fin = both & ~np.isinf(g) & ~np.isinf(w)
        with np.errstate(invalid="ignore", over="ignore"):
            err = np.where(fin, np.abs(g - w), 0.0)
        bad = nan_bad | inf_bad | (err > ATOL + RTOL * np.abs(np.where(fin, w, 0.0)))
        if bad.any():
            i = np.unravel_index(np.argmax(bad), bad.shape) if bad.ndim else ()
            return (f"output '{oname}': {int(bad.sum())} of {bad.size} values differ, max abs error "
                    f"{err.max():.3g}; first at {list(map(int, i))}: {g[i]!r} vs expected {w[i]!r}")
        return None
    if not np.array_equal(got, want):
        bad = got != want
        i = np.unravel_index(np.argmax(bad), bad.shape) if bad.ndim else ()
        return (f"output '{oname}': {int(bad.sum())} of {bad.size} values differ; first at "
                f"{list(map(int, i))}: {got[i]!r} vs expected {want[i]!r}")
    return None


def build_runtime(build, tests, tmp):
    """The runtime as a static library, compiled once by the Makefile galvc
    writes (its CC, CFLAGS and WARN, its SRC list less program.c); the
    programs then compile program.c alone and link it (make SRC= LIBS=)."""
    for name, d, _, _, _ in tests:
        pdir = os.path.join(tmp, "rt")
        r = subprocess.run([os.path.join(build, "galvc"), os.path.join(d, "model.onnx"), "--target", "cpu",
                            "--no-build", "-q", "-o", pdir + "/"], capture_output=True, text=True, timeout=TIMEOUT)
        if r.returncode != 0:
            shutil.rmtree(pdir, ignore_errors=True)
            continue
        with open(os.path.join(pdir, "librt.mk"), "w") as f:
            f.write("RT_OBJ = $(patsubst %.c,%.o,$(filter runtime/%,$(SRC)))\n"
                    "librt.a: $(RT_OBJ)\n\tar rcs $@ $^\n"
                    "runtime/%.o: runtime/%.c $(HDR)\n\t$(CC) $(CFLAGS) $(WARN) -c -o $@ $<\n")
        r = subprocess.run(["make", "-s", "-C", pdir, "-j2", "-f", "Makefile", "-f", "librt.mk", "librt.a"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"conformance: the runtime library did not build in {pdir}:\n{r.stdout}{r.stderr}")
        return os.path.join(pdir, "librt.a")
    sys.exit("conformance: no selected test compiles: cannot build the runtime library")


def run_test(build, mode, test, rtlib=None):
    name, d, _, inputs, outputs = test
    ds = os.path.join(d, "test_data_set_0")
    args = []
    for k, iname in enumerate(inputs):
        f = os.path.join(ds, f"input_{k}.pb")
        if not os.path.exists(f):
            return f"fail: test data has no input_{k}.pb for graph input '{iname}'"
        args += ["--input", f"{iname}={f}"]
    tmp = tempfile.mkdtemp(prefix="galv-conf-")
    try:
        out = os.path.join(tmp, "out")
        model = os.path.join(d, "model.onnx")
        if mode == "eval":
            cmd = [os.path.join(build, "galv-eval"), model] + args + ["-o", out]
        else:
            pdir = os.path.join(tmp, "prog")
            try:
                r = subprocess.run([os.path.join(build, "galvc"), model, "--target", "cpu", "--no-build",
                                    "-o", pdir + "/"], capture_output=True, text=True, timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                return f"fail: galvc timed out after {TIMEOUT}s"
            if r.returncode < 0:
                return f"fail: galvc killed by signal {-r.returncode}: {error_line(r.stderr, d)}"
            if r.returncode != 0:
                return "unsupported: " + error_line(r.stderr, d)
            mk = subprocess.run(["make", "-s", "-C", pdir, "SRC=program.c", f"LIBS={rtlib} -lopenblas -lm"],
                                capture_output=True, text=True, timeout=TIMEOUT)
            if mk.returncode != 0:
                return "fail: make: " + (mk.stderr.strip().splitlines() or ["no message"])[0]
            prog = os.path.join(pdir, "program")
            if not os.path.exists(prog):
                return "fail: galvc wrote no program"
            cmd = [prog] + args + ["-o", out]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            return f"fail: timed out after {TIMEOUT}s"
        if r.returncode < 0:
            return f"fail: killed by signal {-r.returncode}: {error_line(r.stderr, d)}"
        if r.returncode != 0:
            return ("unsupported: " if mode == "eval" else "fail: ") + error_line(r.stderr, d)
        for k, oname in enumerate(outputs):
            want = numpy_helper.to_array(onnx.load_tensor(os.path.join(ds, f"output_{k}.pb")))
            f = os.path.join(out, file_name(oname) + ".npy")
            if not os.path.exists(f):
                return f"fail: output '{oname}' not written"
            got = np.load(f)
            msg = compare(oname, got, want)
            if msg:
                return "fail: " + msg
        return "pass"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def read_expected(path):
    exp = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.rstrip("\n")
                if line and not line.startswith("#"):
                    k, _, v = line.partition("\t")
                    exp[k] = v
    return exp


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build")
    ap.add_argument("--mode", choices=["eval", "program"], default="eval")
    ap.add_argument("--update", action="store_true", help="rewrite expected-MODE.txt with the outcomes")
    ap.add_argument("--only", metavar="REGEX", help="only tests whose name matches (re.search)")
    ap.add_argument("-j", type=int, default=2, help="parallel tests (default 2)")
    ap.add_argument("-v", action="store_true", help="print every outcome")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    tool = os.path.join(build, "galv-eval")
    r = subprocess.run([tool, "--list-ops"], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"conformance: {tool} --list-ops failed: {r.stderr.strip()}", file=sys.stderr)
        return 2
    supported = set(r.stdout.split()) | REFUSED_BY_DESIGN
    if a.mode == "program" and not os.path.exists(os.path.join(build, "galvc")):
        print(f"conformance: {build}/galvc not found", file=sys.stderr)
        return 2
    tests = select(supported, a.only)
    tmp = tempfile.mkdtemp(prefix="galv-conf-rt-")
    try:
        rtlib = build_runtime(build, tests, tmp) if a.mode == "program" else None
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.j)) as ex:
            results = dict(zip([t[0] for t in tests], ex.map(lambda t: run_test(build, a.mode, t, rtlib), tests)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    exp_path = os.path.join(HERE, f"expected-{a.mode}.txt")
    expected = read_expected(exp_path)
    diffs = []
    for name, _, _, _, _ in tests:
        got, want = results[name], expected.get(name)
        if a.v:
            print(f"{name}\t{got}")
        if got != want:
            diffs.append((name, want, got))
    if not a.only:
        for name in sorted(set(expected) - set(results)):
            diffs.append((name, expected[name], "(not selected)"))

    per_op = collections.OrderedDict()
    for name, _, ops, _, _ in tests:
        for op in ops:
            p, t = per_op.get(op, (0, 0))
            per_op[op] = (p + (results[name] == "pass"), t + 1)
    npass = sum(v == "pass" for v in results.values())
    nuns = sum(v.startswith("unsupported") for v in results.values())
    nfail = len(results) - npass - nuns
    print(f"{'op':<20} passed/total  (tests using the op)")
    for op in sorted(per_op):
        p, t = per_op[op]
        print(f"{op:<20} {p:>4}/{t:<4}")
    print(f"conformance ({a.mode}): {len(tests)} selected of {len(glob.glob(os.path.join(NODE_DIR, 'test_*')))}"
          f" node tests: {npass} pass, {nuns} unsupported, {nfail} fail; tolerance rtol {RTOL:g} atol {ATOL:g}")

    if a.update:
        merged = dict(expected) if a.only else {}
        merged.update(results)
        with open(exp_path, "w") as f:
            f.write(f"# ONNX backend node tests: expected outcome with --mode {a.mode} "
                    f"(tests/conformance/run.py --update)\n")
            for k in sorted(merged):
                f.write(f"{k}\t{merged[k]}\n")
        print(f"conformance: wrote {exp_path} ({len(merged)} tests)")
        return 0
    for name, want, got in diffs:
        print(f"DIFF {name}\n  expected: {want if want is not None else '(not listed)'}\n  got:      {got}")
    if diffs:
        print(f"conformance: {len(diffs)} outcome(s) differ from {os.path.relpath(exp_path)}"
              f" (rerun with --update if intended)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
