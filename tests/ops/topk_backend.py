#!/usr/bin/env python3
"""The ONNX backend node tests of TopK with their k bound: each test feeds k
as a graph input (a run-time value, so the import refuses it as a dynamic
shape: tests/conformance/expected-*.txt); here k's value from input_1.pb
becomes an initializer, as it is in an exported model, and galv-eval runs
the test's own data (ties included: test_top_k_same_values*) against its
expected outputs: values within rtol 1e-6, indices exactly.

    python3 tests/ops/topk_backend.py BUILD TMPDIR

Prints one line per test; exits 1 when any differs.
"""
import glob
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

NODE_DIR = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")


def load_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def main():
    build, tmp = sys.argv[1], sys.argv[2]
    bad = n = 0
    for d in sorted(glob.glob(os.path.join(NODE_DIR, "test_top_k*"))):
        name = os.path.basename(d)
        m = onnx.load(os.path.join(d, "model.onnx"))
        ds = os.path.join(d, "test_data_set_0")
        x = load_pb(os.path.join(ds, "input_0.pb"))
        if x.dtype.kind == "u":
            continue  # unsigned types are not supported (tests/conformance)
        k = load_pb(os.path.join(ds, "input_1.pb"))
        kname = m.graph.input[1].name
        del m.graph.input[1]
        m.graph.initializer.append(numpy_helper.from_array(k, kname))
        mp = os.path.join(tmp, name + ".onnx")
        onnx.save(m, mp)
        od = os.path.join(tmp, name + "-out")
        r = subprocess.run([os.path.join(build, "galv-eval"), mp, "--input", f"{m.graph.input[0].name}="
                            + os.path.join(ds, "input_0.pb"), "-o", od], capture_output=True, text=True)
        n += 1
        if r.returncode != 0:
            print(f"FAIL {name}: galv-eval exited {r.returncode}: {r.stderr.strip()}")
            bad += 1
            continue
        msg = []
        for i, o in enumerate(m.graph.output):
            want = load_pb(os.path.join(ds, f"output_{i}.pb"))
            got = np.load(os.path.join(od, o.name + ".npy"))
            ok = got.shape == want.shape and got.dtype == want.dtype and (
                np.allclose(got, want, rtol=1e-6, atol=0) if want.dtype.kind == "f" else np.array_equal(got, want))
            msg.append(f"{o.name} {tuple(want.shape)} {'equal' if ok else 'DIFFERS'}")
            bad += 0 if ok else 1
        print(f"{'ok  ' if 'DIFFERS' not in ' '.join(msg) else 'FAIL'} {name} (k {int(k.reshape(-1)[0])}): "
              + ", ".join(msg))
    print(f"topk_backend: {n} tests, {bad} differences")
    return 1 if bad or n == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
