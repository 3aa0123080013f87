"""compare.py — compares galv-eval's and torch's training runs: the
'step I loss X' lines (relative tolerance) and the final params written as
NAME.npy in both directories (absolute tolerance).
usage: compare.py GALV_LOG TORCH_LOG GALV_DIR TORCH_DIR [LOSS_RTOL W_ATOL]"""
import os
import sys

import numpy as np


def losses(path):
    return [float(l.split()[3]) for l in open(path) if l.startswith("step ")]


def main():
    gl, tl, gd, td = sys.argv[1:5]
    rtol = float(sys.argv[5]) if len(sys.argv) > 5 else 1e-4
    atol = float(sys.argv[6]) if len(sys.argv) > 6 else 1e-4
    a, b = losses(gl), losses(tl)
    ok = len(a) == len(b) and len(a) > 0
    for i, (x, y) in enumerate(zip(a, b)):
        rel = abs(x - y) / max(abs(y), 1e-30)
        print("step %d loss galvc %.9g torch %.9g rel %.2e" % (i, x, y, rel))
        ok = ok and rel <= rtol
    worst, wname, n = 0.0, "", 0
    for f in sorted(os.listdir(td)):
        t = np.load(os.path.join(td, f))
        p = os.path.join(gd, f)
        if not os.path.exists(p):
            print("missing galvc param %s" % f)
            ok = False
            continue
        g = np.load(p)
        if g.shape != t.shape:
            print("param %s: shape %s vs %s" % (f, g.shape, t.shape))
            ok = False
            continue
        d = float(np.max(np.abs(g.astype(np.float64) - t))) if t.size else 0.0
        n += 1
        if d > worst:
            worst, wname = d, f[:-4]
    print("params: %d compared, max abs diff %.3e (%s)" % (n, worst, wname))
    ok = ok and n > 0 and worst <= atol
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
