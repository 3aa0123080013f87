#!/usr/bin/env python3
"""Checks a CUDA program's --trace against its program.cu (tests/cuda_emu_step_trace.sh: training steps;
tests/cuda_emu_infer_trace.sh: inference runs, --inference).

    cuda_step_trace_check.py PROGRAM.cu TRACE.json STEPS [--inference]

program.cu's galv_kernels[] table lists the step's call sites in schedule
order (kind, node); its collectives (all_reduce, all_gather, reduce_scatter,
all_to_all) run on the communication stream, every other call site is a
kernel of the compute stream. The trace (runtime/prof.c's Chrome trace,
timed by CUDA events) must hold, per step:
  - on the compute stream (tid 0) one "compute" event per kernel call site,
    in the table's order (by start time, kind and node), not overlapping each
    other or the stream's waits ("wait" events), and no collective;
  - on the communication stream (tid 1) one event per collective call site,
    in the table's order, every one completed, with its bytes;
  - each collective starting at or after the end of every kernel before its
    call site (the compute stream's work it waits for: the backward kernels
    that produce a bucket's gradients and the concat that packs them);
  - at least one gradient reduction posted (by the schedule) before backward
    kernels that follow it, one of them a bucket's (a concat packing the
    gradients right before it): its call site comes before the step's last
    backward kernel (node ending /grad); not for --inference (a run of an
    inference program: no backward, its steps are the runs).
A program without collectives (one device): the compute stream only, its
kernels in order. Times are read for order only, never judged. Prints per
step the counts."""
import json
import re
import sys

EPS = 1.5e-3  # microseconds printed with 3 decimals
COLL = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")


def table(path):
    src = open(path).read()
    m = re.search(r"const galv_kernel_info galv_kernels\[\] = \{\n(.*?)\n\};", src, re.S)
    if not m:
        raise SystemExit(f"{path}: no galv_kernels[] table")
    rows = re.findall(r'^\s*\{"([^"]*)", "((?:[^"\\]|\\.)*)"\}', m.group(1), re.M)
    return [(k, n.encode().decode("unicode_escape")) for k, n in rows]


def main():
    args = [a for a in sys.argv[1:] if a != "--inference"]
    inference = len(args) < len(sys.argv) - 1
    prog, path, steps = args[0], args[1], int(args[2])
    sites = table(prog)
    kern = [(i, k, n) for i, (k, n) in enumerate(sites) if k not in COLL]
    coll = [(i, k, n) for i, (k, n) in enumerate(sites) if k in COLL]
    ev = [e for e in json.load(open(path))["traceEvents"] if e.get("ph") == "X"]
    tids = {e.get("tid") for e in ev}
    if tids != ({0, 1} if coll else {0}):
        raise SystemExit(f"streams {sorted(tids)}: want compute (0){' and communication (1)' if coll else ' only (no collective)'}")
    by_step = {}
    for e in ev:
        by_step.setdefault(e["args"]["step"], []).append(e)
    if len(by_step) != steps:
        raise SystemExit(f"{len(by_step)} steps traced, want {steps}")
    out = []
    for s in sorted(by_step):
        es = by_step[s]
        comp = sorted((e for e in es if e["tid"] == 0), key=lambda e: (e["ts"], e["ts"] + e["dur"]))
        ck = [e for e in comp if e["cat"] == "compute"]
        waits = [e for e in comp if e["cat"] == "wait"]
        cm = sorted((e for e in es if e["tid"] == 1), key=lambda e: e["ts"])
        bad = [e for e in comp if e["name"] in COLL or e["cat"] not in ("compute", "wait")]
        if bad:
            raise SystemExit(f"step {s}: {bad[0]['name']} ({bad[0]['cat']}) on the compute stream")
        if [e["cat"] for e in cm] != ["communication"] * len(cm):
            raise SystemExit(f"step {s}: a communication-stream event is not a collective")
        got = [(e["name"], e["args"].get("node")) for e in ck]
        want = [(k, n) for _, k, n in kern]
        if got != want:
            i = next((j for j, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            raise SystemExit(f"step {s}: compute stream: {len(got)} kernels, want {len(want)} in program order; "
                             f"first difference at {i}: {got[i] if i < len(got) else None} vs {want[i] if i < len(want) else None}")
        got = [(e["name"], e["args"].get("node")) for e in cm]
        want = [(k, n) for _, k, n in coll]
        if got != want:
            i = next((j for j, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            raise SystemExit(f"step {s}: communication stream: {len(got)} collectives, want {len(want)} in program order; "
                             f"first difference at {i}: {got[i] if i < len(got) else None} vs {want[i] if i < len(want) else None}")
        for a, b in zip(comp, comp[1:]):
            if b["ts"] < a["ts"] + a["dur"] - EPS:
                raise SystemExit(f"step {s}: compute stream events overlap: {a['name']} at {a['ts']} and {b['name']} at {b['ts']}")
        for e in cm:
            if not e["args"].get("completed") or e["dur"] < 0 or e["args"].get("bytes", 0) <= 0:
                raise SystemExit(f"step {s}: {e['name']} at {e['args'].get('node')}: not completed, or no bytes")
        # each collective after the kernels before its call site
        kpos = {i: j for j, (i, _, _) in enumerate(kern)}
        end_before = []  # max end of the kernels before each call site
        m, j = float("-inf"), 0
        for i in range(len(sites)):
            end_before.append(m)
            if i in kpos:
                e = ck[kpos[i]]
                m = max(m, e["ts"] + e["dur"])
        for (i, k, n), e in zip(coll, cm):
            if e["ts"] < end_before[i] - EPS:
                raise SystemExit(f"step {s}: {k} at {n} (call site {i}) starts at {e['ts']:.3f} us, before the kernels "
                                 f"before it end ({end_before[i]:.3f} us)")
        if not coll:
            out.append(f"step {s}: {len(ck)} kernels in program order, no collective")
            continue
        if inference:
            out.append(f"run {s}: {len(ck)} kernels, {len(waits)} waits, {len(cm)} collectives in program order, "
                       f"each after its producers")
            continue
        # the schedule: a gradient reduction posted while backward kernels remain
        last_bwd = max((i for i, k, n in kern if n.endswith("/grad")), default=-1)
        if last_bwd < 0:
            raise SystemExit(f"{prog}: no backward kernel (node ending /grad)")
        early = [(i, k, n) for i, k, n in coll if k in ("all_reduce", "reduce_scatter") and i < last_bwd
                 and (n.endswith("/grad") or n.startswith("optimizer/"))]
        if not early:
            raise SystemExit(f"{prog}: no gradient reduction before the last backward kernel (call site {last_bwd})")
        buckets = [(i, k, n) for i, k, n in early if i > 0 and sites[i - 1] == ("concat", n)]
        if not buckets:
            raise SystemExit(f"{prog}: no bucket (a concat packing the gradients, then its reduction) before the last "
                             f"backward kernel")
        out.append(f"step {s}: {len(ck)} kernels, {len(waits)} waits, {len(cm)} collectives "
                   f"({len(early)} gradient reductions, {len(buckets)} of them buckets, posted before backward kernels), "
                   f"each after its producers")
    print("; ".join(out))


main()
