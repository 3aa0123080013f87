"""Shared check of the training tests: a run's printed losses and final
weights (-o DIR/NAME.npy) against a reference run's. Used by the pipeline
and checkpoint tests (tests/pipeline_shared.sh, pipeline_inputs.sh,
checkpoints.sh) as `sys.path.insert(0, LIB); from same_training import check`,
and from bash through tests/lib/rank_compare.sh's same_training.
check() raises SystemExit with the first difference, else returns a summary."""
import os
import re

import numpy as np


def losses(path):
    """{step: loss} from "step K loss X" lines."""
    return {int(k): float(v) for k, v in re.findall(r"^step (\d+) loss (\S+)", open(path).read(), re.M)}


def check(log_ref, log, wdir_ref, wdir, steps=None, loss_rtol=1e-4, rtol=1e-4, atol=1e-5, exact=False):
    """steps: the step numbers both logs must hold (None: the run's, all of them in the reference);
    exact: weights bit for bit."""
    a, b = losses(log_ref), losses(log)
    want = sorted(steps if steps is not None else a)
    if not want or any(k not in a or k not in b for k in want) or (steps is None and sorted(b) != want):
        raise SystemExit(f"losses {b} != reference {a}")
    for k in want:
        if not np.isclose(b[k], a[k], rtol=loss_rtol, atol=0):
            raise SystemExit(f"step {k} loss {b[k]} != reference {a[k]}")
    names = sorted(os.listdir(wdir_ref))
    if sorted(os.listdir(wdir)) != names:
        raise SystemExit(f"weight files differ: {sorted(set(os.listdir(wdir)) ^ set(names))}")
    worst = 0.0
    for f in names:
        x, y = np.load(os.path.join(wdir_ref, f)), np.load(os.path.join(wdir, f))
        if x.shape != y.shape:
            raise SystemExit(f"{f}: shape {y.shape} != {x.shape}")
        if exact and x.tobytes() != y.tobytes():
            raise SystemExit(f"{f}: not bit-identical")
        if not exact and not np.allclose(y, x, rtol=rtol, atol=atol):
            raise SystemExit(f"{f}: max abs diff {np.abs(x - y).max()}")
        worst = max(worst, float(np.abs(x - y).max()))
    return "losses " + " ".join(f"{b[k]:.8f}" for k in want) + f" == reference, {len(names)} weights max abs diff {worst:.2g}"
