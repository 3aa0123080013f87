#!/usr/bin/env python3
"""layer_profile.py — a galvc --profile file from programs' kernel profiles.

    bench/layer_profile.py -o PROFILE.json --point KPROF.json,MICROBATCH[,TP] [--point ...]
                           [--layers L --hidden H --seq S --vocab V] [--source TEXT]

KPROF.json is what a compiled program writes with --profile-out FILE (the
CPU program, inference or a training step: runtime/prof.c
galv_prof_write, "galvc-kernel-profile"; the CUDA program too: inference
from its last run's CUDA events, the training step through galv_prof_write
from each call site's CUDA event interval on the compute stream): the mean
time of every kernel call site and the node (ONNX node name, the op's
location) it belongs to. Each
kernel is given to a layer by the first all-digit component of its node name
split at '/', '.', ':' (as the planner groups units, passes/plan_sharding.c)
and to a phase by its suffix: "/grad" backward, "/recompute" recomputation,
else forward; the optimizer's, accumulation's and the loss seed's kernels
("optimizer/", "accumulate/", "autodiff/") and collectives are left out
(communication comes from the cluster model). A point of the "layer" kind is
the mean over the layers of each phase's sum, one of the "outer" kind the sum
over the kernels of no layer; MICROBATCH is the samples per device the
program ran per forward, TP its tensor-parallel degree (default 1). Without
backward kernels (an inference program) the point has no backward_ms and the
planner keeps the cost model's backward; without recomputation kernels no
recompute_ms (the planner then takes the forward's). The figures' spread over
the layers is printed. Format: docs/planner.md, "Profiles".
"""
import argparse
import json
import re
import sys

OTHER = ("optimizer/", "accumulate/", "autodiff/")
COMM = re.compile(r"^(all_reduce|all_gather|reduce_scatter|all_to_all|send|recv|broadcast|p2p)")


def layer_of(node):
    for comp in re.split(r"[/.:]", node):
        if comp and len(comp) < 12 and comp.isdigit():
            return int(comp)
    return None


def phase_of(node):
    if not node or node.startswith(OTHER):
        return None
    if node.endswith("/grad"):
        return "backward"
    if node.endswith("/recompute"):
        return "recompute"
    return "forward"


def point(path, b, tp):
    with open(path) as f:
        k = json.load(f)
    if k.get("format") != "galvc-kernel-profile" or k.get("version") != 1:
        sys.exit(f"layer_profile.py: {path}: not a galvc kernel profile (version 1): write it with program --profile-out")
    layers, outer = {}, {"forward": 0.0, "backward": 0.0, "recompute": 0.0}
    seen = {"forward": False, "backward": False, "recompute": False}
    for e in k["kernels"]:
        ph = phase_of(e["node"])
        if ph is None or COMM.match(e["kind"]):
            continue
        seen[ph] = True
        li = layer_of(e["node"])
        if li is None:
            outer[ph] += e["ms"]
        else:
            layers.setdefault(li, {"forward": 0.0, "backward": 0.0, "recompute": 0.0})[ph] += e["ms"]
    if not layers:
        sys.exit(f"layer_profile.py: {path}: no kernel belongs to a layer (node names with a layer index)")
    res = {}
    for ph in ("forward", "backward", "recompute"):
        if not seen[ph]:
            continue
        v = [layers[i][ph] for i in sorted(layers)]
        res[ph] = sum(v) / len(v)
        print(f"layer_profile.py: {path}: {ph} per layer: mean {res[ph]:.4f} ms, min {min(v):.4f}, max {max(v):.4f} "
              f"over {len(v)} layers; outer {outer[ph]:.4f} ms", file=sys.stderr)
    lp = {"microbatch": b, "tp": tp, "forward_ms": res["forward"]}
    op = {"microbatch": b, "tp": tp, "forward_ms": outer["forward"]}
    if "backward" in res:
        lp["backward_ms"] = res["backward"]
        op["backward_ms"] = outer["backward"]
    if "recompute" in res:
        lp["recompute_ms"] = res["recompute"]
    return lp, op, len(layers)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--point", action="append", required=True, help="KPROF.json,MICROBATCH[,TP]")
    ap.add_argument("--layers", type=int)
    ap.add_argument("--hidden", type=int)
    ap.add_argument("--seq", type=int)
    ap.add_argument("--vocab", type=int)
    ap.add_argument("--source", default=None)
    a = ap.parse_args()
    lpts, opts, nl = [], [], set()
    for p in a.point:
        parts = p.split(",")
        if len(parts) not in (2, 3) or not all(x.isdigit() and int(x) > 0 for x in parts[1:]):
            sys.exit(f"layer_profile.py: --point {p}: expected KPROF.json,MICROBATCH[,TP] (positive integers)")
        lp, op, n = point(parts[0], int(parts[1]), int(parts[2]) if len(parts) == 3 else 1)
        lpts.append(lp)
        if op["forward_ms"] > 0:
            opts.append(op)
        nl.add(n)
    model = {k: v for k, v in (("layers", a.layers), ("hidden", a.hidden), ("seq", a.seq), ("vocab", a.vocab)) if v}
    prof = {"format": "galvc-profile", "version": 1,
            "source": a.source or "bench/layer_profile.py from " + ", ".join(p.split(",")[0] for p in a.point)}
    if model:
        prof["model"] = model
    prof["layer"] = {"points": lpts}
    if opts:
        prof["outer"] = {"points": opts}
    with open(a.output, "w") as f:
        json.dump(prof, f, indent=1)
        f.write("\n")
    print(f"layer_profile.py: wrote {a.output} ({len(lpts)} point{'s' if len(lpts) > 1 else ''}, "
          f"{'/'.join(str(n) for n in sorted(nl))} layers)", file=sys.stderr)


if __name__ == "__main__":
    main()
