#!/usr/bin/env python3
"""Checks a pipeline training timeline (docs/pipeline.md, "Pipeline training").

    pipe_trace_check.py PLAN.json RUN.json S B gpipe|1f1b|zb-h1|interleaved [V]

PLAN.json is galvc's --trace-plan (the cost model), RUN.json the runtime's
--trace (out/launch). The plan must be a valid Chrome trace with one forward
and one backward "X" event per stage and microbatch; each stage's events,
sorted by start, must not overlap and must be in the schedule's order
(GPipe: F0..F(B-1), B0..B(B-1); 1F1B: w = min(S - s - 1, B) warm-up
forwards, then F(w+i), B(i), then the cool-down backwards; ZB-H1: one
"weight" event W per stage and microbatch besides, w warm-up forwards, s
rounds F, B with W deferred, then F, B, W, then B, W, then the deferred
W's); F(s, j) starts after F(s-1, j) ends, B(s, j) after B(s+1, j) and
F(s, j), W(s, j) after B(s, j); otherData.step_us equals the makespan. The run's forward/backward events, per stage (its
first rank), must come in the plan's order in every training step.
Interleaved (V chunks per device group, P = S / V groups, stage s on group
s mod P): the order and the no-overlap rule hold per group, over its
stages' events (Megatron's order, written out below), each group's bubble
is otherData.group_bubble_us, and the run's events of a group's stages,
sorted by start, come in the plan's group order in every step. Prints the
makespans."""
import json
import sys

EPS = 1.5e-3  # the traces print microseconds with 3 decimals


def expected_order(S, s, B, sched):
    w = min(S - s - 1, B) if sched != "gpipe" else B
    if sched == "zb-h1":  # written out again here, independently of galv_pipe_sched.h
        acts, f, b, g = [("forward", j) for j in range(w)], w, 0, 0
        for _ in range(s):
            if f < B:
                acts += [("forward", f), ("backward", b)]
                f, b = f + 1, b + 1
        while f < B:
            acts += [("forward", f), ("backward", b), ("weight", g)]
            f, b, g = f + 1, b + 1, g + 1
        while b < B:
            acts += [("backward", b), ("weight", g)]
            b, g = b + 1, g + 1
        return acts + [("weight", j) for j in range(g, B)]
    acts = [("forward", j) for j in range(w)]
    for i in range(B - w):
        acts += [("forward", w + i), ("backward", i)]
    return acts + [("backward", j) for j in range(B - w, B)]


def interleaved_order(P, V, d, B):
    """Megatron-LM's forward_backward_pipelining_with_interleaving for pipeline rank d: (kind, chunk, microbatch)."""
    total = V * B
    warm = total if B == P else min((P - d - 1) * 2 + (V - 1) * P, total)

    def ent(k, fwd):
        c = (k % (P * V)) // P
        return ("forward" if fwd else "backward", c if fwd else V - 1 - c, (k // (P * V)) * P + k % P)
    acts = [ent(k, True) for k in range(warm)]
    for k in range(total - warm):
        acts += [ent(k + warm, True), ent(k, False)]
    return acts + [ent(k, False) for k in range(total - warm, total)]


def load(path):
    with open(path) as f:
        d = json.load(f)
    ev = d["traceEvents"]
    if not isinstance(ev, list):
        sys.exit(f"{path}: traceEvents is not a list")
    for e in ev:
        for k, t in (("name", str), ("cat", str), ("ph", str), ("ts", (int, float)), ("dur", (int, float)),
                     ("pid", int), ("tid", int)):
            if not isinstance(e.get(k), t):
                sys.exit(f"{path}: event {e} lacks a valid '{k}'")
        if e["ph"] != "X" or e["dur"] < 0:
            sys.exit(f"{path}: event {e} is not a complete event with a duration")
    return d, ev


def per_stage(ev, S, first_rank_only):
    out = {}
    for s in range(S):
        es = [e for e in ev if e["pid"] == s and e["cat"] in ("forward", "backward", "weight")]
        if first_rank_only and es:
            r = min(e["tid"] for e in es)
            es = [e for e in es if e["tid"] == r]
        out[s] = sorted(es, key=lambda e: e["ts"])
    return out


def key(e):
    return (e["cat"], int(e["name"].split("mb")[-1]))


def per_group(ev, S, P):
    """per device group: its stages' events (each stage's first rank), sorted by start"""
    st = per_stage(ev, S, True)
    return {d: sorted([e for s in range(d, S, P) for e in st[s]], key=lambda e: e["ts"]) for d in range(P)}


def gkey(e):
    return (e["cat"], e["pid"], int(e["name"].split("mb")[-1]))


def main_interleaved(plan, run, S, B, V):
    P = S // V
    if V < 2 or S % V or B % P:
        sys.exit(f"interleaved: S = {S}, V = {V}, B = {B}: expected S = P V and B a multiple of P")
    pd, pev = load(plan)
    if len([e for e in pev if e["cat"] in ("forward", "backward")]) != 2 * S * B:
        sys.exit(f"plan: {len(pev)} events, expected {2 * S * B} (forward, backward per stage and microbatch)")
    pg = per_group(pev, S, P)
    end = {}
    for d in range(P):
        got = [gkey(e) for e in pg[d]]
        want = [(k, c * P + d, j) for k, c, j in interleaved_order(P, V, d, B)]
        if got != want:
            sys.exit(f"plan: group {d} runs {got}, the interleaved order is {want}")
        for a, b in zip(pg[d], pg[d][1:]):
            if b["ts"] < a["ts"] + a["dur"] - EPS:
                sys.exit(f"plan: group {d}: {b['name']} (stage {b['pid']}) starts before {a['name']} (stage {a['pid']}) ends")
        for e in pg[d]:
            end[gkey(e)] = (e["ts"], e["ts"] + e["dur"])
    for s in range(S):
        for j in range(B):
            f0, f1 = end[("forward", s, j)]
            b0, _ = end[("backward", s, j)]
            if s and f0 < end[("forward", s - 1, j)][1] - EPS:
                sys.exit(f"plan: F({s},{j}) starts before F({s - 1},{j}) ends")
            if b0 < f1 - EPS:
                sys.exit(f"plan: B({s},{j}) starts before F({s},{j}) ends")
            if s + 1 < S and b0 < end[("backward", s + 1, j)][1] - EPS:
                sys.exit(f"plan: B({s},{j}) starts before B({s + 1},{j}) ends")
    makespan = max(t1 for _, t1 in end.values()) - min(t0 for t0, _ in end.values())
    od = pd["otherData"]
    if abs(od["step_us"] - makespan) > EPS:
        sys.exit(f"plan: step_us {od['step_us']} != the makespan {makespan:.3f}")
    if od.get("virtual_stages") != V or od.get("groups") != P:
        sys.exit(f"plan: virtual_stages {od.get('virtual_stages')}, groups {od.get('groups')}; expected {V}, {P}")
    for d in range(P):
        busy = sum(e["dur"] for e in pg[d])
        if abs(od["group_bubble_us"][d] - (makespan - busy)) > EPS * (len(pg[d]) + 1):
            sys.exit(f"plan: group {d}: group_bubble_us {od['group_bubble_us'][d]} != makespan - busy {makespan - busy:.3f}")
    _, rev = load(run)
    rg = per_group(rev, S, P)
    for d in range(P):
        a, b = [gkey(e) for e in rg[d]], [gkey(e) for e in pg[d]]
        if not a or len(a) % len(b) or any(a[i:i + len(b)] != b for i in range(0, len(a), len(b))):
            sys.exit(f"run: group {d} ran {a}, the plan says {b} per step")
        for x, y in zip(rg[d], rg[d][1:]):
            if y["ts"] < x["ts"] + x["dur"] - EPS:
                sys.exit(f"run: group {d}: {y['name']} (stage {y['pid']}) overlaps {x['name']} (stage {x['pid']})")
    rspan = max(e["ts"] + e["dur"] for e in rev) - min(e["ts"] for e in rev)
    steps = len(rg[0]) // len(pg[0])
    print(f"traces ok: plan makespan {makespan:.3f} us = step_us, group bubbles "
          + " ".join(f"{b:.3f}" for b in od["group_bubble_us"])
          + f" us; run in the plan's interleaved order per group ({steps} steps in {rspan / 1e3:.3f} ms)")


def main():
    plan, run, S, B, sched = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    if sched == "interleaved":
        return main_interleaved(plan, run, S, B, int(sys.argv[6]))
    pd, pev = load(plan)
    ps = per_stage(pev, S, False)
    per = 3 if sched == "zb-h1" else 2
    if len([e for e in pev if e["cat"] in ("forward", "backward", "weight")]) != per * S * B:
        sys.exit(f"plan: {len(pev)} events, expected {per * S * B} (forward, backward{', weight' if per == 3 else ''} "
                 "per stage and microbatch)")
    end = {}
    for s in range(S):
        got = [key(e) for e in ps[s]]
        if got != expected_order(S, s, B, sched):
            sys.exit(f"plan: stage {s} runs {got}, the {sched} order is {expected_order(S, s, B, sched)}")
        for a, b in zip(ps[s], ps[s][1:]):
            if b["ts"] < a["ts"] + a["dur"] - EPS:
                sys.exit(f"plan: stage {s}: {b['name']} starts before {a['name']} ends")
        for e in ps[s]:
            end[(s,) + key(e)] = (e["ts"], e["ts"] + e["dur"])
    for s in range(S):
        for j in range(B):
            f0, f1 = end[(s, "forward", j)]
            b0, _ = end[(s, "backward", j)]
            if s and f0 < end[(s - 1, "forward", j)][1] - EPS:
                sys.exit(f"plan: F({s},{j}) starts before F({s - 1},{j}) ends")
            if b0 < f1 - EPS:
                sys.exit(f"plan: B({s},{j}) starts before F({s},{j}) ends")
            if s + 1 < S and b0 < end[(s + 1, "backward", j)][1] - EPS:
                sys.exit(f"plan: B({s},{j}) starts before B({s + 1},{j}) ends")
            if per == 3 and end[(s, "weight", j)][0] < end[(s, "backward", j)][1] - EPS:
                sys.exit(f"plan: W({s},{j}) starts before B({s},{j}) ends")
    makespan = max(t1 for _, t1 in end.values()) - min(t0 for t0, _ in end.values())
    step = pd["otherData"]["step_us"]
    if abs(step - makespan) > EPS:
        sys.exit(f"plan: step_us {step} != the makespan {makespan:.3f}")
    _, rev = load(run)
    rs = per_stage(rev, S, True)
    for s in range(S):  # one training step after the other: the plan's order once per step
        a, b = [key(e) for e in rs[s]], [key(e) for e in ps[s]]
        if not a or len(a) % len(b) or any(a[i:i + len(b)] != b for i in range(0, len(a), len(b))):
            sys.exit(f"run: stage {s} ran {a}, the plan says {b} per step")
    rspan = max(e["ts"] + e["dur"] for e in rev) - min(e["ts"] for e in rev)
    steps = len(rs[0]) // len(ps[0])
    bub = pd["otherData"].get("bubble_us")
    if bub is not None:  # per stage: the makespan less the stage's busy time
        for s in range(S):
            busy = sum(e["dur"] for e in ps[s])
            if abs(bub[s] - (makespan - busy)) > EPS * (len(ps[s]) + 1):
                sys.exit(f"plan: stage {s}: bubble_us {bub[s]} != makespan - busy {makespan - busy:.3f}")
    print(f"traces ok: plan makespan {makespan:.3f} us = step_us (DP formula {pd['otherData']['dp_step_us']:.3f} us), "
          f"run in the plan's order ({steps} steps in {rspan / 1e3:.3f} ms)")


if __name__ == "__main__":
    main()
