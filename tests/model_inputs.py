"""Random inputs for an ONNX model's graph inputs (shared by the tests that
compare with onnxruntime: tests/ort_compare.py, tests/cpu_compare.py).

Seeded: integer inputs draw token ids in [0, 50) (token type ids in [0, 2));
an input named like *mask* gets ones with the last quarter of each row zero;
float inputs are standard normal. Symbolic dims named like batch get
`batch`, every other symbolic dim `seq`.
"""
import numpy as np

DT = {1: np.float32, 11: np.float64, 10: np.float16, 7: np.int64, 6: np.int32, 9: np.bool_}


def make_inputs(model, batch, seq, seed=0):
    """Returns {name: ndarray} for every graph input that is not an initializer."""
    inits = {i.name for i in model.graph.initializer}
    rng = np.random.RandomState(seed)
    feeds = {}
    for inp in model.graph.input:
        if inp.name in inits:
            continue
        tt = inp.type.tensor_type
        shape = []
        for d in tt.shape.dim:
            if d.HasField("dim_value"):
                shape.append(d.dim_value)
            else:
                p = d.dim_param.lower()
                shape.append(batch if "batch" in p or p in ("n", "b", "bs") else seq)
        dt = DT[tt.elem_type]
        if "mask" in inp.name:
            x = np.ones(shape, dtype=dt)
            if len(shape) >= 2:
                x[..., shape[-1] - max(1, shape[-1] // 4):] = 0
        elif np.issubdtype(dt, np.integer):
            hi = 2 if "type" in inp.name else 50  # token type ids index a 2-row table
            x = rng.randint(0, hi, size=shape).astype(dt)
        else:
            x = rng.standard_normal(shape).astype(dt)
        feeds[inp.name] = x
    return feeds
