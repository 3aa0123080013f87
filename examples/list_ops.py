#!/usr/bin/env python3
"""Print the sorted union of ONNX op types (with opset) used by the given models.

    python3 examples/list_ops.py FILES... [--hist] [--run] [-o ops.txt]

One line per (op_type, opset): "Add 17" for the default domain,
"com.example:Foo 1" otherwise.  Nodes inside If/Loop/Scan subgraphs count.
--hist prints a per-file op histogram to stderr instead of nothing;
--run also runs each model once through onnxruntime (batch 2, seq 16,
random inputs) and fails if that errors or gives non-finite outputs.
"""

import argparse
import sys
from collections import Counter

import numpy as np
import onnx


def iter_nodes(graph):
    for n in graph.node:
        yield n
        for at in n.attribute:
            if at.type == onnx.AttributeProto.GRAPH:
                yield from iter_nodes(at.g)
            for g in at.graphs:
                yield from iter_nodes(g)


def run_once(path, model):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    rng = np.random.RandomState(0)
    feeds = {}
    for inp in sess.get_inputs():
        dims = [d if isinstance(d, int) else {"batch": 2}.get(d, 16) for d in inp.shape]
        if inp.type == "tensor(float)":
            feeds[inp.name] = rng.standard_normal(dims).astype(np.float32)
        elif inp.name == "attention_mask":
            feeds[inp.name] = np.ones(dims, np.int64)
        elif inp.name == "token_type_ids":
            feeds[inp.name] = rng.randint(0, 2, dims).astype(np.int64)
        else:
            feeds[inp.name] = rng.randint(0, 64, dims).astype(np.int64)
    outs = sess.run(None, feeds)
    for o in outs:
        if not np.all(np.isfinite(o)):
            raise RuntimeError("non-finite output")
    return [list(o.shape) for o in outs]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("-o", "--output", help="write the list here instead of stdout")
    ap.add_argument("--hist", action="store_true", help="per-file op histogram on stderr")
    ap.add_argument("--run", action="store_true", help="run each model once with onnxruntime")
    a = ap.parse_args()
    union = set()
    status = 0
    for path in a.files:
        model = onnx.load(path)
        opsets = {o.domain or "ai.onnx": o.version for o in model.opset_import}
        hist = Counter()
        for n in iter_nodes(model.graph):
            dom = n.domain or "ai.onnx"
            name = n.op_type if dom == "ai.onnx" else "%s:%s" % (dom, n.op_type)
            union.add((name, opsets.get(dom, 0)))
            hist[n.op_type] += 1
        if a.run:
            try:
                shapes = run_once(path, model)
                print("%s: onnxruntime ok, outputs %s" % (path, shapes), file=sys.stderr)
            except Exception as e:  # report and keep going
                print("%s: onnxruntime FAILED: %s" % (path, e), file=sys.stderr)
                status = 1
        if a.hist:
            print("%s: %d nodes: %s" % (path, sum(hist.values()),
                                        " ".join("%s=%d" % kv for kv in sorted(hist.items()))),
                  file=sys.stderr)
    text = "".join("%s %d\n" % u for u in sorted(union))
    if a.output:
        with open(a.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return status


if __name__ == "__main__":
    sys.exit(main())
