"""compare_freeze.py — checks a galvc training run (galv-eval --train, a CPU
training program, an N-rank or pipeline launch) of a model written by
freeze_models.py against torch's: the 'step I loss X' lines within rtol, and
every float initializer of the ONNX file against the state_dict entry it
came from (by name, or for torch's folded "onnx::MatMul_N" by its initial
value, which is the entry's transpose):
  - an entry torch trains: galvc's final value (GALV_DIR/NAME.npy) within
    rtol / atol of torch's;
  - an entry torch does not train (a buffer, requires_grad False): galvc's
    value byte-identical to the initializer (a one-element one may be a
    constant: then no file).
usage: compare_freeze.py VARIANT_DIR GALV_LOG GALV_DIR [RTOL ATOL]"""
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def losses(path):
    return [float(l.split()[3]) for l in open(path) if l.startswith("step ")]


def sanitise(n):
    return "".join("_" if c in "/\\" or ord(c) < 32 else c for c in n)


def main():
    d, glog, gdir = sys.argv[1:4]
    rtol = float(sys.argv[4]) if len(sys.argv) > 4 else 1e-4
    atol = float(sys.argv[5]) if len(sys.argv) > 5 else 1e-6
    ok = True
    a, b = losses(glog), losses(os.path.join(d, "torch.log"))
    if len(a) != len(b) or not a:
        print("losses: galvc %d steps, torch %d" % (len(a), len(b)))
        ok = False
    for i, (x, y) in enumerate(zip(a, b)):
        rel = abs(x - y) / max(abs(y), 1e-30)
        print("step %d loss galvc %.9g torch %.9g rel %.2e" % (i, x, y, rel))
        ok = ok and rel <= rtol
    init = {f[:-4]: np.load(os.path.join(d, "init", f)) for f in os.listdir(os.path.join(d, "init"))}
    final = {k: np.load(os.path.join(d, "torch", k + ".npy")) for k in init}
    trains = set(open(os.path.join(d, "trains")).read().split())
    m = onnx.load(os.path.join(d, "model.onnx"))
    ntrain = nfrozen = 0
    worst = 0.0
    for t in m.graph.initializer:
        v = numpy_helper.to_array(t)
        if v.dtype.kind != "f":
            continue
        key, tr = None, False
        if t.name in init:
            key = t.name
        else:
            for k, w in init.items():
                if w.ndim == 2 and w.T.shape == v.shape and np.array_equal(w.T, v):
                    key, tr = k, True
        if key is None:
            print("initializer %s: no state_dict entry has its value" % t.name)
            ok = False
            continue
        p = os.path.join(gdir, sanitise(t.name) + ".npy")
        g = np.load(p) if os.path.exists(p) else None
        if key in trains:
            ntrain += 1
            want = final[key].T if tr else final[key]
            if g is None or g.shape != want.shape:
                print("%s (%s): galvc wrote %s, torch trained it" % (t.name, key, "nothing" if g is None else g.shape))
                ok = False
                continue
            err = np.abs(g.astype(np.float64) - want)
            worst = max(worst, float(err.max()) if err.size else 0.0)
            if not np.allclose(g, want, rtol=rtol, atol=atol):
                print("%s (%s): max diff %.3e from torch's (rtol %g atol %g)" % (t.name, key, err.max(), rtol, atol))
                ok = False
        else:
            nfrozen += 1
            if g is None:
                if v.size > 1:
                    print("%s: frozen, but galvc wrote no value" % t.name)
                    ok = False
                continue
            if g.dtype != v.dtype or g.shape != v.shape or g.tobytes() != v.tobytes():
                print("%s: frozen in torch, but galvc changed it" % t.name)
                ok = False
    print("initializers: %d trained (max abs diff %.3e), %d frozen (bit-identical)" % (ntrain, worst, nfrozen))
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
