#!/usr/bin/env python3
"""The ONNX backend node tests of Resize with their scales / sizes bound:
each test feeds roi, scales and sizes as graph inputs (run-time values, so
the import refuses them as a dynamic shape: tests/conformance/
expected-*.txt); here every input but X becomes an initializer holding the
test's own value (input_K.pb), as the exports have them, and galv-eval runs
the test's data against its expected output with the backend runner's
tolerance (rtol 1e-3, atol 1e-7). Nearest, linear and cubic (cubic_coeff_a,
exclude_outside) must all pass; the forms the frontend refuses by design
must be refused with their one line (antialias 1, tf_crop_and_resize,
keep_aspect_ratio_policy other than stretch: docs/ops.md). Two tests
(ONORT below) downsample with align_corners by scales whose output length
L * scale is not an integer: ONNX's reference implementation maps with
(L - 1) / (L * scale - 1), onnxruntime and torch with (L - 1) / (O - 1) for
the integer output length O, which galvc follows; these must equal
onnxruntime on the test's data (and are reported with the reference's
difference).

    python3 tests/ops/resize_backend.py BUILD TMPDIR

Prints one line per test and a count; exits 1 when any differs, fails or
is refused for another reason.
"""
import glob
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

NODE_DIR = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
REFUSED = re.compile(r"unsupported: Resize antialias=1|unsupported coordinate_transformation_mode 'tf_crop_and_resize'"
                     r"|unsupported keep_aspect_ratio_policy 'not_(larger|smaller)'")


ONORT = {"test_resize_downsample_scales_linear_align_corners", "test_resize_downsample_scales_cubic_align_corners"}


def load_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def main():
    build, tmp = sys.argv[1], sys.argv[2]
    os.makedirs(tmp, exist_ok=True)
    counts = {"pass": 0, "refused": 0, "bad": 0}
    for d in sorted(glob.glob(os.path.join(NODE_DIR, "test_resize_*"))):
        name = os.path.basename(d)
        m = onnx.load(os.path.join(d, "model.onnx"))
        ds = os.path.join(d, "test_data_set_0")
        inputs = list(m.graph.input)
        for k in range(len(inputs) - 1, 0, -1):
            m.graph.initializer.append(numpy_helper.from_array(load_pb(os.path.join(ds, f"input_{k}.pb")),
                                                               inputs[k].name))
            del m.graph.input[k]
        mp = os.path.join(tmp, name + ".onnx")
        onnx.save(m, mp)
        od = os.path.join(tmp, name + "-out")
        r = subprocess.run([os.path.join(build, "galv-eval"), mp, "--input", f"{inputs[0].name}="
                            + os.path.join(ds, "input_0.pb"), "-o", od], capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=60)
        mode = next((a.s.decode() for a in m.graph.node[0].attribute if a.name == "mode"), "nearest")
        if r.returncode != 0:
            err = r.stderr.strip().splitlines()
            if len(err) == 1 and REFUSED.search(err[0]):
                counts["refused"] += 1
                print(f"ok   {name}: refused as documented: {err[0].split('(Resize): ')[-1]}")
            else:
                counts["bad"] += 1
                print(f"FAIL {name}: galv-eval exited {r.returncode}: {' / '.join(err[-2:])}")
            continue
        want = load_pb(os.path.join(ds, "output_0.pb"))
        got = np.load(os.path.join(od, m.graph.output[0].name + ".npy"))
        note = ""
        if name in ONORT:
            import onnxruntime as ort
            ref = want
            want = ort.InferenceSession(mp, providers=["CPUExecutionProvider"]).run(
                None, {inputs[0].name: load_pb(os.path.join(ds, "input_0.pb"))})[0]
            note = (" = onnxruntime (align_corners by the integer output length; the reference's fractional one "
                    f"differs by {float(np.abs(ref.astype(np.float64) - want).max()):.2f})")
        ok = got.shape == want.shape and got.dtype == want.dtype and np.allclose(got, want, rtol=1e-3, atol=1e-7)
        err = float(np.abs(got.astype(np.float64) - want).max()) if got.shape == want.shape else float("nan")
        counts["pass" if ok else "bad"] += 1
        print(f"{'ok  ' if ok else 'FAIL'} {name} ({mode}) {tuple(want.shape)} max abs err {err:.2e}{note}")
    print(f"resize_backend: {counts['pass']} pass, {counts['refused']} refused as documented, {counts['bad']} failed")
    return 1 if counts["bad"] or not counts["pass"] else 0


if __name__ == "__main__":
    sys.exit(main())
