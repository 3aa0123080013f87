#!/usr/bin/env python3
"""tests/scramble_names.py IN.onnx OUT.onnx [--seed N] [--numeric]

Rewrites an ONNX model's names to opaque ones: every node name, every
initializer and every intermediate value (value_info, node outputs) gets a
name that says nothing about its layer ("node_<k>", "t_<k>", numbered in a
seeded random order, so neither the numbers nor their order follow the
graph). The graph's data inputs and outputs keep their names (initializers
listed among the inputs, as old exporters do, are renamed with them).
Subgraphs (If / Loop / Scan bodies) are renamed the same way; a name a
subgraph reads from the outer scope follows the outer rename.

--numeric gives numbers instead ("p.4711", nodes "/4711"), names whose
path component is all digits: names that look like layer indices but are
not.

An initializer galvc freezes by its name (frontend/onnx_import.c
gv_onnx_default_trains: "/..." and "...::..." names, rotary tables,
masks) gets a name it freezes too ("/t_<k>"); every other one a name
that trains, so the scrambled model trains the same parameters.

Used by tests/plan_structure.sh: the planner must find the same layers,
plan and predicted cost from the scrambled model as from the original.
"""
import argparse
import random
import sys

import fnmatch

import onnx

# frontend/onnx_import.c buffer_names and gv_onnx_default_trains
BUFFERS = ("running_mean", "*.running_mean", "running_var", "*.running_var", "inv_freq", "*.inv_freq", "*cos_cached",
           "*sin_cached", "*masked_bias", "*causal_mask", "*encoder.embed_positions.weight", "*embed_positions.weights")


def trains(name):
    if name.startswith("/") or "::" in name:
        return name.startswith(("onnx::MatMul_", "onnx::Gemm_", "onnx::LSTM_", "onnx::GRU_"))
    return not any(fnmatch.fnmatchcase(name, b) for b in BUFFERS)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--numeric", action="store_true")
    a = ap.parse_args(argv)
    m = onnx.load(a.src)
    g = m.graph
    inits = {t.name for t in g.initializer} | {t.values.name for t in g.sparse_initializer}
    keep = {i.name for i in g.input if i.name not in inits} | {o.name for o in g.output}
    keep.add("")  # an omitted optional input stays omitted

    # every name to rename, in graph order (nodes of subgraphs included)
    values, nodes = [], []

    def collect(graph):
        for t in graph.initializer:
            values.append(t.name)
        for t in graph.sparse_initializer:
            values.append(t.values.name)
        for vi in graph.value_info:
            values.append(vi.name)
        for n in graph.node:
            nodes.append(n)
            values.extend(n.output)
            for at in n.attribute:
                for sg in list(at.g.node and [at.g] or []) + list(at.graphs):
                    for i in sg.input:
                        values.append(i.name)
                    collect(sg)

    collect(g)
    uniq = [v for v in dict.fromkeys(values) if v not in keep]
    rng = random.Random(a.seed)
    vnum = list(range(len(uniq)))
    rng.shuffle(vnum)
    nnum = list(range(len(nodes)))
    rng.shuffle(nnum)
    if a.numeric:
        vmap = {v: (f"p.{k + 1000}" if v not in inits or trains(v) else f"/{k + 1000}") for v, k in zip(uniq, vnum)}
        nname = [f"/{k + 1000 + len(uniq)}" for k in nnum]
    else:
        vmap = {v: (f"t_{k}" if v not in inits or trains(v) else f"/t_{k}") for v, k in zip(uniq, vnum)}
        nname = [f"node_{k}" for k in nnum]

    def rn(s):
        return vmap.get(s, s)

    def rename(graph):
        for t in graph.initializer:
            t.name = rn(t.name)
        for t in graph.sparse_initializer:
            t.values.name = rn(t.values.name)
            t.indices.name = rn(t.indices.name)
        for vi in list(graph.input) + list(graph.output) + list(graph.value_info):
            vi.name = rn(vi.name)
        for n in graph.node:
            n.input[:] = [rn(x) for x in n.input]
            n.output[:] = [rn(x) for x in n.output]
            for at in n.attribute:
                if at.g.node:
                    rename(at.g)
                for sg in at.graphs:
                    rename(sg)

    rename(g)
    for n, nm in zip(nodes, nname):
        n.name = nm
    onnx.save(m, a.dst)
    return 0


if __name__ == "__main__":
    sys.exit(main())
