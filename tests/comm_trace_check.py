#!/usr/bin/env python3
"""Checks a CPU training program's --trace (runtime/prof.c; tests/comm_delay.sh).

    comm_trace_check.py TRACE.json STEPS [--prefetch]

The trace must be a Chrome trace with a compute stream (tid 0: kernel calls
and waits) and a communication stream (tid 1: collectives from post to
completion). Per step: the compute stream's events do not overlap; every
collective completes at or after its post and is completed; at least one
collective is overlapped: compute kernels run after its post and before its
completion (the program posted it and went on computing); and a gradient
reduction (an all_reduce or reduce_scatter at a node of the backward, "/grad",
or of the optimizer) is posted before the step's last backward kernel ends
(a reduction issued while the backward still computes). --prefetch (ZeRO-3):
an all_gather whose node is in layer NAME.N+1 is posted before the last
forward kernel of layer NAME.N ends (its weights gathered one layer ahead).
Prints per step the
measured figures: step span, compute busy, waits, communication in flight
and how much of it compute ran under (measured, never judged)."""
import json
import re
import sys

EPS = 1.5e-3  # microseconds printed with 3 decimals


def main():
    path, steps = sys.argv[1], int(sys.argv[2])
    prefetch = "--prefetch" in sys.argv[3:]
    ev = [e for e in json.load(open(path))["traceEvents"] if e.get("ph") == "X"]
    names = {e.get("tid") for e in ev}
    if not names <= {0, 1} or 0 not in names or 1 not in names:
        raise SystemExit(f"streams {sorted(names)}: want compute (0) and communication (1)")
    by_step = {}
    for e in ev:
        by_step.setdefault(e["args"]["step"], []).append(e)
    if len(by_step) != steps:
        raise SystemExit(f"{len(by_step)} steps traced, want {steps}")
    for s in sorted(by_step):
        es = by_step[s]
        comp = sorted((e for e in es if e["tid"] == 0), key=lambda e: e["ts"])
        kern = [e for e in comp if e["cat"] == "compute"]
        comm = [e for e in es if e["tid"] == 1]
        for a, b in zip(comp, comp[1:]):
            if b["ts"] < a["ts"] + a["dur"] - EPS:
                raise SystemExit(f"step {s}: compute events overlap: {a['name']} at {a['ts']} and {b['name']} at {b['ts']}")
        if not comm:
            raise SystemExit(f"step {s}: no collective traced")
        for c in comm:
            if not c["args"].get("completed") or c["dur"] < 0:
                raise SystemExit(f"step {s}: {c['name']} at {c['args'].get('node')} posted at {c['ts']} never completed")
        overlapped = []
        for c in comm:
            t0, t1 = c["ts"], c["ts"] + c["dur"]
            under = [k for k in kern if k["ts"] >= t0 - EPS and k["ts"] + k["dur"] <= t1 + EPS]
            if under:
                overlapped.append((c, under))
        if not overlapped:
            raise SystemExit(f"step {s}: no collective has a compute kernel running between its post and its completion")
        bwd = [k for k in kern if k["args"].get("node", "").endswith("/grad")]
        if not bwd:
            raise SystemExit(f"step {s}: no backward kernel (node ending /grad) traced")
        last_bwd_end = max(k["ts"] + k["dur"] for k in bwd)
        grad_red = [c for c in comm if c["name"] in ("all_reduce", "reduce_scatter")
                    and (c["args"].get("node", "").endswith("/grad") or c["args"].get("node", "").startswith("optimizer/"))]
        early = [c for c in grad_red if c["ts"] < last_bwd_end]
        if not early:
            raise SystemExit(f"step {s}: no gradient reduction posted before the backward's last kernel ends "
                             f"({len(grad_red)} gradient reductions, all after {last_bwd_end:.3f} us)")
        ahead = 0
        if prefetch:
            def layer(node):
                m = re.search(r"[/.]?([A-Za-z_]+)[./](\d+)[/.]", node + "/")
                return (m.group(1), int(m.group(2))) if m else None
            fwd_end = {}
            for k in kern:
                node = k["args"].get("node", "")
                ly = layer(node)
                if ly and not node.endswith("/grad") and "/recompute" not in node and not node.startswith("optimizer/"):
                    fwd_end[ly] = max(fwd_end.get(ly, 0), k["ts"] + k["dur"])
            for c in comm:
                ly = layer(c["args"].get("node", ""))
                if c["name"] == "all_gather" and ly and ly[1] > 0 and (ly[0], ly[1] - 1) in fwd_end \
                        and c["ts"] < fwd_end[(ly[0], ly[1] - 1)]:
                    ahead += 1
            if not ahead:
                raise SystemExit(f"step {s}: no all_gather of a layer posted before the previous layer's forward ends")
        span = max(e["ts"] + e["dur"] for e in es) - min(e["ts"] for e in es)
        busy = sum(k["dur"] for k in kern)
        waits = sum(e["dur"] for e in comp if e["cat"] == "wait")
        flight = sum(c["dur"] for c in comm)
        c, under = max(overlapped, key=lambda x: len(x[1]))
        print(f"step {s}: span {span / 1e3:.3f} ms, compute {busy / 1e3:.3f} ms, waits {waits / 1e3:.3f} ms, "
              f"{len(comm)} collectives in flight {flight / 1e3:.3f} ms, {len(overlapped)} with compute under them "
              f"(e.g. {c['name']} at {c['args'].get('node')}: {len(under)} kernels), {len(early)} gradient reductions "
              f"posted before the backward's last kernel ends" + (f", {ahead} gathers one layer ahead" if prefetch else "") +
              " (measured, not judged)")


if __name__ == "__main__":
    main()
