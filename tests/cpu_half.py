#!/usr/bin/env python3
"""f16 / bf16 storage in the CPU target's elementwise loops.

usage: cpu_half.py BUILD

For each of f16 and bf16 a small ONNX graph (f32 inputs, Cast to the half
type, a fused elementwise chain with casts, where, compares, max/min, a
transpose and a concat of the half tensor, Cast back to f32; half, f32,
bool and i32 outputs) is compiled with galvc --target cpu and run on
two inputs: random values with f16 subnormals and rounding ties, and the
same plus values that overflow f16 (inf, NaN downstream). Every output must
equal galv-eval's bit for bit (NaN matches NaN); on the first input also
onnxruntime's (which computes f16 ops that lack CPU kernels in f32, so
overflow is not comparable) within a stated tolerance: f16 rtol 2e-2 / atol 1e-3 (a few
f16 ulps: eval and the program compute each op in f32 and round, ORT may
keep f32 across fused nodes); bf16 is not computed by ORT's CPU kernels, so
its reference is ORT on the same graph with f32 in place of bf16, rtol 6e-2
/ atol 2e-2 (several bf16 ulps). Exits 1 on any failure.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
import onnxruntime as ort

BUILD = sys.argv[1]
HT = {"f16": TensorProto.FLOAT16, "bf16": TensorProto.BFLOAT16, "f32": TensorProto.FLOAT}


def model(half):
    T = HT[half]
    one = numpy_helper.from_array(np.array(1.5, np.float32), "one32")
    nodes = [
        helper.make_node("Cast", ["x"], ["h"], to=T),
        helper.make_node("Cast", ["y"], ["g"], to=T),
        helper.make_node("Cast", ["one32"], ["one"], to=T),
        helper.make_node("Mul", ["h", "g"], ["a"]),
        helper.make_node("Add", ["a", "h"], ["b"]),
        helper.make_node("Tanh", ["b"], ["c"]),
        helper.make_node("Abs", ["h"], ["ah"]),
        helper.make_node("Add", ["ah", "one"], ["den"]),
        helper.make_node("Div", ["c", "den"], ["d"]),
        helper.make_node("Neg", ["h"], ["nh"]),
        helper.make_node("Max", ["d", "nh"], ["e"]),
        helper.make_node("Min", ["e", "g"], ["e2"]),
        helper.make_node("Abs", ["e2"], ["ae"]),
        helper.make_node("Sqrt", ["ae"], ["s"]),
        helper.make_node("Greater", ["h", "g"], ["gt"]),
        helper.make_node("Where", ["gt", "s", "e2"], ["w"]),
        helper.make_node("Sub", ["w", "h"], ["sb"]),
        helper.make_node("Sigmoid", ["sb"], ["sg"]),
        helper.make_node("Relu", ["sb"], ["rl"]),
        helper.make_node("Mul", ["sg", "rl"], ["m"]),
        helper.make_node("Cast", ["m"], ["out32"], to=TensorProto.FLOAT),
        helper.make_node("Less", ["w", "one"], ["lt"]),
        helper.make_node("Cast", ["w"], ["wi"], to=TensorProto.INT32),
        helper.make_node("Transpose", ["m"], ["mt"], perm=[1, 0]),
        helper.make_node("Concat", ["w", "m"], ["wm"], axis=0),
    ]
    out = lambda n, t, s: helper.make_tensor_value_info(n, t, s)
    g = helper.make_graph(
        nodes, f"half_{half}",
        [out("x", TensorProto.FLOAT, [4, 64]), out("y", TensorProto.FLOAT, [64])],
        [out("out32", TensorProto.FLOAT, [4, 64]), out("mt", T, [64, 4]), out("wm", T, [8, 64]),
         out("lt", TensorProto.BOOL, [4, 64]), out("wi", TensorProto.INT32, [4, 64])],
        [one])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"FAIL {' '.join(cmd)}: {r.stderr.strip()}")


def same_bits(a, b):
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind == "f":
        nan = np.isnan(a) & np.isnan(b)
        return bool(np.all(nan | (a.view(f"u{a.itemsize}") == b.view(f"u{b.itemsize}"))))
    return np.array_equal(a, b)


def as_f64(a):
    return (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64) if a.dtype == np.uint16 else a.astype(np.float64)


def main():
    rs = np.random.RandomState(0)
    x = (rs.randn(4, 64) * 2).astype(np.float32)
    y = rs.randn(64).astype(np.float32)
    # f16 subnormals, an exact f16 rounding tie (1 + 2^-11), a bf16 tie (1 + 2^-8)
    x[0, 1:5] = [3e-6, -2e-7, 1.00048828125, 1.00390625]
    xo = x.copy()
    xo[0, [0, 5]] = [70000.0, 65504.0]  # overflow to inf; the f16 max (times y overflows)
    bad = 0
    with tempfile.TemporaryDirectory() as t:
        np.save(f"{t}/x.npy", x)
        np.save(f"{t}/xo.npy", xo)
        np.save(f"{t}/y.npy", y)
        for half, xn in (("f16", "x"), ("bf16", "x"), ("f16", "xo"), ("bf16", "xo")):
            m = model(half)
            onnx.checker.check_model(m)
            mp = f"{t}/{half}.onnx"
            onnx.save(m, mp)
            ins = [f"x={t}/{xn}.npy", f"y={t}/y.npy"]
            if xn == "x":
                run([f"{BUILD}/galvc", mp, "--target", "cpu", "-q", "-o", f"{t}/p_{half}/"])
            run([f"{t}/p_{half}/program"] + sum([["--input", i] for i in ins], []) + ["-o", f"{t}/o_{half}{xn}"])
            run([f"{BUILD}/galv-eval", mp] + sum([["--input", i] for i in ins], []) + ["-o", f"{t}/e_{half}{xn}"])
            tag = half if xn == "x" else f"{half} overflow"
            if xn != "x":
                pass
            elif half == "f16":
                ref = ort.InferenceSession(mp, providers=["CPUExecutionProvider"]).run(None, {"x": x, "y": y})
                rtol, atol = 2e-2, 1e-3
            else:  # ORT has no bf16 arithmetic on CPU: the same graph in f32
                m32 = model("f32")
                ref = ort.InferenceSession(m32.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x, "y": y})
                rtol, atol = 6e-2, 2e-2
            for k, o in enumerate(m.graph.output):
                got = np.load(f"{t}/o_{half}{xn}/{o.name}.npy")
                ev = np.load(f"{t}/e_{half}{xn}/{o.name}.npy")
                ok = same_bits(got, ev)
                print(f"{'ok  ' if ok else 'FAIL'} {tag} {o.name} {got.dtype}{got.shape}: program == galv-eval bit for bit")
                bad += not ok
                if xn != "x":
                    continue
                want = ref[k]
                if got.dtype.kind == "f" or got.dtype == np.uint16:
                    g64, w64 = as_f64(got), as_f64(want)
                    fin = np.isfinite(w64) & np.isfinite(g64)
                    same_special = np.all((g64 == w64) | (np.isnan(g64) & np.isnan(w64)) | fin)
                    err = np.abs(g64 - w64)[fin]
                    ok = bool(same_special and np.all(err <= atol + rtol * np.abs(w64[fin])))
                    detail = f"max abs err {float(err.max()):.3g} (rtol {rtol}, atol {atol})"
                else:
                    n_diff = int(np.sum(got != want.astype(got.dtype)))
                    # a compare or truncation right at a value ORT rounds differently may flip
                    ok = n_diff <= (0 if half == "f16" else got.size // 50)
                    detail = f"{n_diff} of {got.size} differ"
                print(f"{'ok  ' if ok else 'FAIL'} {half} {o.name}: vs onnxruntime{'' if half == 'f16' else ' (f32 graph)'}, {detail}")
                bad += not ok
    sys.exit(1 if bad else 0)


main()
