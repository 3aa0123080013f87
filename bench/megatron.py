#!/usr/bin/env python3
"""megatron.py [--build DIR] [--rows 1,2,3,4|all] [--columns i,ii,iii,s] [-j N] [--work DIR] [--timeout S] [--dropout P]

Megatron-LM SC'21 Table 1 beside galvc, in one run (docs/planner.md,
"Megatron Table 1"). Per row: a weight-free GPT of the table's shape
(examples/make_model.py gpt2 --no-weights --tie-embeddings --qkv-layout
megatron: Megatron's fused QKV columns, per head [q k v], so tp splits
heads; vocab 51200, seq 2048; --dropout P: Megatron's attention and hidden
dropout, training-mode Dropout of ratio P, priced as galv.dropout; default 0.1, as Megatron trained), bf16 training on the a100-80g preset with 8 GPUs per node at
Megatron's GPU count and global batch, and

  (i)  Megatron's own configuration (tp, pp, microbatch size, full
       recomputation) expressed in galvc and priced by galvc's cost model
       (--strategy dp,tp --mesh dp=D,tp=T --recompute=all --microbatches
       B/(D*mbs) --overlap off --report-cost: Megatron v2 all-reduced the
       gradients after the backward); beside it the paper's measured hardware
       TFLOP/s per GPU (counting recomputation) and the ratio;
       With pp > 1 the stage DP cuts the layer groups; the line (i=) beside
       it prices Megatron's own cuts (L / pp layers per stage, the embedding
       with the first and the head with the last: --layers blocks
       --stage-cuts equal); rows Megatron interleaved (76.1B v3, 145.6B
       and 310.1B v2) run --schedule interleaved --virtual-stages v on
       device groups of dp x tp devices, and the line (i1) beside them the
       same on 1F1B;
  (ii) a stronger Megatron baseline: Megatron's tp and pp with sequence
       parallelism, selective recomputation, the distributed optimizer
       (ZeRO-1) and the best microbatch size and, with a pipeline, the
       best virtual-stage count (1 to VMAX chunks per device group), one
       fixed galvc command per pair;
  (iii) the best point of a grid over tp (1, 2, 4, 8 dividing the heads),
       pp (divisors of the layers and GPUs up to --grid-pp-max), microbatch
       size (1-16), sequence parallelism, ZeRO stage (0-3; 0-2 in a
       pipeline: --pipeline-zero) and recomputation (none / selective /
       full), one fixed galvc command per point, pruned by an analytic
       memory pre-check and by dominance (grid_group);
  (s)  galvc's own search (--train --plan-only, no strategy flag): its
       predicted step, model TFLOP/s per GPU, memory and planning CPU
       seconds, its plan replayed with --report-cost, and the best of (ii)
       and (iii) against it (>= 1.00: galvc's plan is at least as fast).
Every point is priced with the same cost model and must fit the preset's
80 GB as galvc prices it: without a pipeline --report-cost's predicted step
(the realised program's critical path, as (s)'s plan replayed), with one
the pipeline's whole predicted step, plan.json's predicted_step_ns (the
schedule over the stage programs + the slowest stage's once-per-step
gradient all-reduce, ZeRO collectives and update). A pipeline point of
(ii) compiles and prices every stage from --strategy dp,tp,sp --mesh
dp=D,tp=T (Megatron's tp with sequence parallelism, the crossing values
split over dp); a grid point of (iii) with pp > 1 leaves each stage's
tp / sp to the intra-operator planner. Points that fail print galvc's
error line and a command.

Model FLOPs per step 72*B*s*L*h^2*(1 + s/(6h) + V/(12*L*h)); hardware FLOPs
with full recomputation 96*B*s*L*h^2*(1 + s/(6h) + V/(16*L*h))
(REFERENCES.md, Throughput accounting). TFLOP/s per GPU = FLOPs / (step *
GPUs). Prints figures only: it never passes or fails on them. A
configuration galvc cannot express or plan prints galvc's one-line reason.
Pipeline rows (pp > 1) run galvc's pipeline path, whose stage programs are
priced in bf16 (docs/pipeline.md, "16-bit storage"), with --recompute=all
inside the stage programs and 1F1B or interleaved 1F1B (a device's
memory: its group's V stages); where no partition fits the 80 GB, the
configuration is priced again with the limit lifted (its step and memory,
marked '!') and the error printed below it (docs/planner.md, "Megatron
Table 1").
"""
import argparse
import concurrent.futures
import json
import os
import re
import resource
import subprocess
import sys
import threading
import time

# name, layers, hidden, heads, GPUs, batch, tp, pp, microbatch size, virtual stages, paper TFLOP/s per GPU
# (Narayanan et al., SC'21, Table 1; measured on A100 80GB, counting recomputation)
ROWS = [
    ("1.7B", 24, 2304, 24, 32, 512, 1, 1, 16, 1, 137),
    ("3.6B", 30, 3072, 32, 64, 512, 2, 1, 16, 1, 138),
    ("7.5B", 36, 4096, 32, 128, 512, 4, 1, 16, 1, 142),
    ("18.4B", 40, 6144, 48, 256, 1024, 8, 1, 8, 1, 135),
    ("39.1B", 48, 8192, 64, 512, 1536, 8, 2, 4, 1, 138),
    ("76.1B", 60, 10240, 80, 1024, 1792, 8, 4, 2, 3, 140),
    ("145.6B", 80, 12288, 96, 1536, 2304, 8, 8, 2, 2, 148),
    ("310.1B", 96, 16384, 128, 1920, 2160, 8, 16, 1, 2, 155),
]
SEQ, VOCAB = 2048, 51200
COMMON = ["--train", "--no-weights", "--precision", "bf16", "--gpus-per-node", "8", "--cluster", "a100-80g",
          "--seq", str(SEQ)]


def model_flops(B, L, h):
    return 72.0 * B * SEQ * L * h * h * (1 + SEQ / (6.0 * h) + VOCAB / (12.0 * L * h))


def hw_flops_recompute(B, L, h):
    return 96.0 * B * SEQ * L * h * h * (1 + SEQ / (6.0 * h) + VOCAB / (16.0 * L * h))


def run(cmd, timeout):
    """Runs cmd; returns (rc, stdout, stderr, child CPU seconds)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        rc, out, err = 124, "", "timed out after %d s" % timeout
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return rc, out, err, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def first_error(err):
    for line in err.splitlines():
        if "error:" in line:
            return line.split("error:", 1)[1].strip()[:400]
    return err.strip().splitlines()[-1][:160] if err.strip() else "failed"


def model_path(args, name, L, h, a):
    drop = "-drop%g" % args.dropout if args.dropout else ""
    path = os.path.join(args.work, "gpt%s-megatron%s.onnx" % (name.replace(".", "p"), drop))
    if not os.path.exists(path):
        subprocess.run([sys.executable, os.path.join(args.src, "examples", "make_model.py"), "gpt2", "--layers", str(L),
                        "--hidden", str(h), "--heads", str(a), "--vocab", str(VOCAB), "--max-pos", str(SEQ),
                        "--no-weights", "--tie-embeddings", "--qkv-layout", "megatron", "--dropout", str(args.dropout),
                        "-o", path], check=True, stdout=subprocess.DEVNULL)
    return path


def pipe_mems(text):
    """A pipeline plan's bytes per device: under the interleaved schedule each device group's (its V stages' states
    and what the group holds at its peak: the figure the stage DP checks), else each stage's."""
    g = [int(x) for x in re.findall(r"^  device group \d+ \(stages [\d,]+\): .*\((\d+) bytes per device\)", text, re.M)]
    return g or [int(x) for x in re.findall(r"^  stage \d+: .*\((\d+) bytes per device\)", text, re.M)]


def megatron_config(args, row, path, equal=False, v1=False):
    name, L, h, a, G, B, tp, pp, mbs, v, paper = row
    dp = G // (tp * pp)
    nmb = B // (dp * mbs)
    cmd = [args.galvc, path] + COMMON + ["--gpus", str(G), "--batch", str(B), "--microbatches", str(nmb)]
    il = pp > 1 and v > 1 and not v1
    if pp > 1:
        # full recomputation per layer inside the stage programs (docs/pipeline.md, "Recomputation per layer inside
        # stages"); rows 6-8 interleaved as Megatron ran them: v chunks per device group of dp x tp devices
        # (docs/pipeline.md, "Device groups of several devices"); v1: the same on 1F1B (the line before 2026-12-06)
        # the stage DP's cuts; equal: Megatron's stages, L / (pp v) layers each, the embedding with the first and the
        # head with the last (--layers blocks: a layer group per block found by structure; --stage-cuts equal)
        cmd += ["--pipeline-stages", str(pp), "--strategy", "dp,tp", "--mesh", "dp=%d,tp=%d" % (dp, tp),
                "--recompute=all", "--plan-only"]
        cmd += ["--schedule", "interleaved", "--virtual-stages", str(v)] if il else ["--schedule", "1f1b"]
        if equal:
            cmd += ["--layers", "blocks", "--stage-cuts", "equal"]
    else:
        # --overlap off: Megatron v2's default data parallelism (--DDP-impl local) all-reduces the gradients after
        # the whole backward (train_step: forward_backward_func, then allreduce_gradients), not under it
        cmd += ["--recompute=all", "--overlap", "off", "--report-cost", "-o", os.path.join(args.work, "cfg.mlir")]
        cmd += ["--strategy", "dp,tp", "--mesh", "dp=%d,tp=%d" % (dp, tp)] if tp > 1 else ["--strategy", "dp", "--mesh", "dp=%d" % dp]
    rc, out, err, cpu = run(cmd, args.timeout)
    desc = "tp%d pp%d dp%d mbs%d x%d%s, full recompute%s" % (tp, pp, dp, mbs, nmb, " v%d" % v if il else " 1F1B" if v > 1 else "",
                                                             ", equal cuts" if equal else "")
    over = None
    if rc and pp > 1 and "no partition fits" in err:  # priced anyway, the limit lifted: its step, and memory over 80 GB
        over = first_error(err)
        rc, out, err, cpu2 = run(cmd + ["--memory-limit", "1000000000000"], args.timeout)
        cpu += cpu2
    if rc:
        return {"desc": desc, "error": first_error(err), "cpu_s": cpu}
    if pp > 1:  # the pipeline's plan: "pipeline: predicted step T ms = schedule X ms + once-per-step sync ...", per
        # stage "(N bytes per device)": the whole step (plan.json predicted_step_ns), the schedule's and the once-per-step
        # gradient all-reduce / ZeRO collectives / update of the slowest stage (Megatron's all-reduce after its flush too)
        m = re.search(r"^pipeline: predicted step ([0-9.]+) ms", out + err, re.M) if not equal else \
            re.search(r"^pipeline equal cuts: .*?, predicted step ([0-9.]+) ms", out + err, re.M)
        mems = pipe_mems(out + err)
        if not m or not mems:
            return {"desc": desc, "error": "no pipeline plan in galvc's output", "cpu_s": cpu}
        step = float(m.group(1)) * 1e-3
        return {"desc": desc, "step_s": step, "hw_tflops": hw_flops_recompute(B, L, h) / (step * G) / 1e12,
                "model_tflops": model_flops(B, L, h) / (step * G) / 1e12, "mem": max(mems),
                "fits": over is None and max(mems) <= 80e9,  # equal cuts are priced whatever their memory
                "paper": paper, "cpu_s": cpu, "over": over}
    m = re.search(r"predicted step: (\d+) ns", out)
    mem = re.search(r"memory per device: .* total (\d+) of (\d+) bytes", out)
    if not m:
        return {"desc": desc, "error": "no predicted step in --report-cost's output"}
    step = int(m.group(1)) * 1e-9
    return {"desc": desc, "step_s": step, "hw_tflops": hw_flops_recompute(B, L, h) / (step * G) / 1e12,
            "model_tflops": model_flops(B, L, h) / (step * G) / 1e12, "mem": int(mem.group(1)) if mem else None,
            "fits": mem is not None and int(mem.group(1)) <= int(mem.group(2)), "paper": paper, "cpu_s": cpu}


# ---- (ii) and (iii): fixed configurations priced one galvc command each, and the grid ---------------
# docs/planner.md, "Megatron Table 1", "Columns (ii) and (iii)". Every point is ONE galvc command with
# everything fixed; its price is what galvc prints for that fixed plan:
#   pp = 1: --strategy PRESET --mesh dp=D[,tp=T] --recompute=MODE --microbatches N --report-cost -o F.mlir:
#           the realised program's critical-path step ("predicted step") and its memory per device
#           (--plan-only is refused with --strategy: "--plan-only needs the planner"; the IR is written);
#   pp > 1: --pipeline-stages P --schedule 1f1b --recompute=MODE --pipeline-recompute=off
#           --pipeline-zero Z --microbatches N: the stage DP's step over the stage programs the
#           intra-operator planner planned ("pipeline: predicted step X ms = schedule ... + once-per-step sync
#           ... + ZeRO ... + update ...", plan.json's predicted_step_ns) and the
#           largest stage's bytes per device. With tp > 1 (column (ii)) every stage is compiled and
#           priced from --strategy dp,tp[,sp] --mesh dp=D,tp=T (the preset's roles, sp on every op);
#           with tp = 1 (the grid's pipeline groups) each stage's tp / sp is the planner's.
GRID_TP = (1, 2, 4, 8)
VMAX = 4                # (ii): virtual stages per device group tried, 1 .. VMAX
GRID_MBS = (1, 2, 4, 8, 16)
RC_ORDER = ("none", "selective", "all")
ACT_FRACTION = 0.5      # the pre-check counts half the textbook activations: it prunes only sure misses
LIMIT_BYTES = 80e9      # the a100-80g preset's memory per device (galvc prints "of 80000000000 bytes")


def param_count(L, h):
    """GPT parameters: 12h^2 + 13h per layer, tied token embedding V h, positions s h, final LayerNorm 2h."""
    return L * (12 * h * h + 13 * h) + VOCAB * h + SEQ * h + 2 * h


def state_bytes(n, dp, zero):
    """Training state per replica of n parameters under mixed bf16 (galvc's --report-cost terms): fp32
    parameters 4 and AdamW moments 8 bytes (split over dp from ZeRO-1: the distributed optimizer), fp32
    gradients 4 (split from ZeRO-2), the 16-bit working copy 2 (split at ZeRO-3)."""
    return n * (4.0 / (dp if zero >= 1 else 1) + 8.0 / (dp if zero >= 1 else 1) +
                4.0 / (dp if zero >= 2 else 1) + 2.0 / (dp if zero >= 3 else 1))


def layer_act_bytes(b, h, a, t, sp, rc):
    """One layer's activations kept for backward for b sequences per tp group (Korthikanti et al. 2022,
    16-bit): sbh(10 + 24/t + 5as/(ht)), with sp sbh/t (34 + 5as/h), where 5as/h counts the softmax
    output (2 bytes), the attention dropout's mask (1) and output (2): galvc keeps no dropout mask (it is
    recomputed from its seed) and the GPTs may have no dropout, so 2as/h here (a lower bound either way); selective drops that term (the attention core); all keeps the layer's input."""
    sbh = SEQ * b * h
    if rc == "all":
        return 2.0 * sbh / (t if sp else 1)
    core = 0 if rc == "selective" else 2.0 * a * SEQ / h
    return sbh / t * (34 + core) if sp else sbh * (10 + 24.0 / t + core / t)


def mem_lower_bound(row, q):
    """Analytic pre-check (bytes per device, a lower bound by construction of its factors): states as
    state_bytes over tp (every parameter counted split) and pp, plus ACT_FRACTION x the activations of
    the microbatch in flight (under 1F1B stage 0 holds min(P, N) microbatches of L/P layers) and its
    logits (bf16 + fp32 softmax, 6 bytes per element over tp); recomputing all adds one layer's full
    activations (the recomputed layer). A pipeline point's tp is the planner's: counted as min(8, G/P)
    with sp (the smallest activations any stage plan can have)."""
    name, L, h, a, G, B = row[:6]
    pp, tp, sp, mbs, zero, rc = q["pp"], q["tp"], q["sp"], q["mbs"], q["zero"], q["rc"]
    if pp > 1:
        tp, sp = min(8, G // pp), True
    dp = G // (tp * pp)
    states = state_bytes(param_count(L, h) / (tp * pp), dp, zero)
    b = mbs * (tp if pp > 1 else 1)     # sequences per tp group of one microbatch
    inflight = min(pp, q["nmb"]) if pp > 1 else 1
    act = inflight * (L / pp) * layer_act_bytes(b, h, a, tp, sp, rc)
    if rc == "all":
        act += layer_act_bytes(b, h, a, tp, sp, "none")
    act += 6.0 * SEQ * b * VOCAB / tp
    return states + ACT_FRACTION * act


def point_desc(q):
    if q["pp"] > 1 and q["tp"] > 1:
        return "pp%d%s tp%d dp%d mbs%d x%d%s zero%d rc:%s" % (q["pp"], " v%d" % q["v"] if q.get("v", 1) > 1 else "", q["tp"],
                                                             q["G"] // (q["pp"] * q["tp"]), q["mbs"], q["nmb"],
                                                             " sp" if q["sp"] else "", q["zero"], q["rc"])
    if q["pp"] > 1:
        return "pp%d dp*tp=%d mbs%d x%d zero%d rc:%s" % (q["pp"], q["G"] // q["pp"], q["mbs"], q["nmb"], q["zero"], q["rc"])
    return "tp%d dp%d mbs%d x%d%s zero%d rc:%s" % (q["tp"], q["G"] // q["tp"], q["mbs"], q["nmb"], " sp" if q["sp"] else "",
                                                   q["zero"], q["rc"])


def point_cmd(args, path, q):
    G, B, pp, tp = q["G"], q["B"], q["pp"], q["tp"]
    cmd = [args.galvc, path] + COMMON + ["--gpus", str(G), "--batch", str(B), "--microbatches", str(q["nmb"]),
                                         "--recompute=%s" % q["rc"]]
    if pp > 1:
        v = q.get("v", 1)
        cmd += ["--pipeline-stages", str(pp), "--pipeline-recompute=off", "--pipeline-zero", str(q["zero"]), "--plan-only"]
        cmd += ["--schedule", "interleaved", "--virtual-stages", str(v)] if v > 1 else ["--schedule", "1f1b"]
        if tp > 1:  # every stage compiled from the preset on dp x tp, sp on every op with sp (docs/pipeline.md)
            cmd += ["--strategy", "dp,tp,sp" if q["sp"] else "dp,tp", "--mesh", "dp=%d,tp=%d" % (G // (pp * tp), tp)]
        return cmd
    dp = G // tp
    parts = ["dp" if q["zero"] == 0 else "zero%d" % q["zero"]] + (["tp"] if tp > 1 else []) + (["sp"] if q["sp"] else [])
    mesh = "dp=%d,tp=%d" % (dp, tp) if tp > 1 else "dp=%d" % dp
    return cmd + ["--strategy", ",".join(parts), "--mesh", mesh, "--report-cost", "-q",
                  "-o", os.path.join(args.work, "grid-%d.mlir" % threading.get_ident())]


_CACHE = {}
_CACHE_LOCK = threading.Lock()


def price_point(args, path, q):
    """One point: dict(q, desc, cmd, step_s, mem, fits, cpu_s) or dict(q, desc, cmd, error, cpu_s)."""
    cmd = point_cmd(args, path, q)
    key = tuple(c for c in cmd if not c.startswith(args.work))
    with _CACHE_LOCK:
        if key in _CACHE:
            return _CACHE[key]
    rc_, out, err, cpu = run(cmd, args.timeout)
    r = dict(q, desc=point_desc(q), cmd=" ".join(os.path.basename(c) if c in (args.galvc, path) else c for c in cmd),
             cpu_s=cpu)
    if q["pp"] > 1:
        m = re.search(r"^pipeline: predicted step ([0-9.]+) ms", err + out, re.M)  # the whole step
        mems = pipe_mems(err + out)
        need = re.search(r"no partition fits .* still needs [0-9.]+ GiB \((\d+) bytes\)", err)
        if rc_ and need:    # the stage DP's answer that the point does not fit: its least need, not a failure
            r.update(step_s=None, mem=int(need.group(1)), fits=False)
        elif rc_ or not m or not mems:
            r["error"] = first_error(err) if rc_ else "no pipeline step / stage memory in galvc's output"
        else:
            r.update(step_s=float(m.group(1)) * 1e-3, mem=max(mems), fits=max(mems) <= LIMIT_BYTES)
            r["plan"] = "; ".join(re.findall(r"stage \d+: groups \d+-\d+ on \S+ \(([^)]*)\)", err + out))
    else:
        m = re.search(r"predicted step: (\d+) ns", out)
        mem = re.search(r"memory per device: .* total (\d+) of (\d+) bytes", out)
        if rc_ or not m or not mem:
            r["error"] = first_error(err) if rc_ else "no predicted step / memory in --report-cost's output"
        else:
            r.update(step_s=int(m.group(1)) * 1e-9, mem=int(mem.group(1)), fits=int(mem.group(1)) <= int(mem.group(2)))
    with _CACHE_LOCK:
        _CACHE[key] = r
    return r


def point(row, pp, tp, sp, mbs, zero, rc, v=1):
    """The point's parameters, or None when the shape does not divide (Megatron's microbatch size mbs
    is sequences per data-parallel rank: N = B / (dp mbs) microbatches; pp > 1: dp counted as G/P; v > 1
    virtual stages: the layers a multiple of pp v, the microbatches of pp, as Megatron requires)."""
    name, L, h, a, G, B = row[:6]
    dp = G // (tp * pp)
    if G % (tp * pp) or B % (dp * mbs):
        return None
    nmb = B // (dp * mbs)
    if v > 1 and (pp < 2 or L % (pp * v) or nmb % pp):
        return None
    return {"G": G, "B": B, "pp": pp, "tp": tp, "sp": sp, "mbs": mbs, "nmb": nmb, "zero": zero, "rc": rc, "v": v}


def best_of(points):
    fit = [p for p in points if "error" not in p and p["fits"]]
    return min(fit, key=lambda p: p["step_s"]) if fit else None


def stronger_baseline(args, row, path, pool):
    """(ii): Megatron's tp and pp, sp (tp > 1), selective recomputation, the distributed optimizer
    (ZeRO-1: --strategy zero1[,tp,sp]; pp > 1: --pipeline-zero 2, the sums reduce-scattered once per step as
    Megatron's distributed optimizer does, with every stage compiled from --strategy dp,tp,sp on dp x tp) and the best microbatch size (every mbs of GRID_MBS that divides) and, with pp > 1, the best virtual-stage
    count (1F1B, and interleaved 1F1B with v = 2 .. VMAX chunks per device group of dp x tp devices where
    the layers divide into pp v chunks and the microbatches into pp)."""
    name, L, h, a, G, B, tp, pp, mbs, v, paper = row
    # the distributed optimizer in a pipeline: --pipeline-zero 2, whose gradient sums are reduce-scattered once per
    # step (Megatron's: accumulated, then reduce-scattered once); galvc's --pipeline-zero 1 all-reduces every
    # microbatch's gradients inside the stage program (twice Megatron's step on row 5)
    # the virtual-stage counts: 1 and every v up to VMAX whose chunks divide the layers (Megatron's condition)
    pts = [q for q in (point(row, pp, tp, tp > 1, m, 1 if pp == 1 else 2, "selective", vv) for m in GRID_MBS
                       for vv in range(1, VMAX + 1)) if q]
    res = list(pool.map(lambda q: price_point(args, path, q), pts))
    b = best_of(res)
    out = dict(b) if b else {"error": "no point fits (%d priced)" % len(res)}
    out.update(n=len(res), points=res, cpu_grid=sum(p["cpu_s"] for p in res))
    if b and pp > 1:
        out["note"] = "virtual stages priced: %s; the best v%d" % (
            ", ".join(sorted({"v%d" % p.get("v", 1) for p in res})), b.get("v", 1))
    return out


def grid_groups(row, args):
    """(iii)'s points in groups (pp, tp, sp): pp = 1 with tp in GRID_TP dividing the heads, hidden and
    GPUs (inside a node), sp on / off under tp > 1, ZeRO 0-3; pp > 1 the divisors of L and G up to
    args.grid_pp_max, ZeRO 0-2 (--pipeline-zero), tp / sp the planner's per stage. Every group: mbs in
    GRID_MBS, recompute none / selective / all. No virtual stages: galvc's interleaved schedule takes
    one device per device group (--gpus = P), and every Table 1 row has more devices than stages."""
    name, L, h, a, G, B = row[:6]
    groups = []
    for tp in GRID_TP:
        if G % tp or h % tp or a % tp:
            continue
        for sp in ((False, True) if tp > 1 else (False,)):
            groups.append((1, tp, sp, (0, 1, 2, 3)))
    for pp in range(2, min(L, args.grid_pp_max) + 1):
        if L % pp == 0 and G % pp == 0:
            groups.append((pp, 1, False, (0, 1, 2)))
    return groups


def grid_group(args, row, path, grp, log):
    """One group's points, in order: mbs from the largest, then (ZeRO, recompute) from the cheapest.
    Pruned without running galvc: (a) the analytic pre-check (mem_lower_bound > the limit); (b) unless
    --no-prune, dominance: a point is skipped when a point of the group with the same ZeRO stage that
    fits, as galvc priced it, has a recomputation at most as heavy and (pp = 1) a microbatch size at
    least as large or (pp > 1) the same microbatch size: in galvc's cost model more recomputation is
    not faster at equal other choices (it only saves memory), and without a pipeline neither are
    more, smaller microbatches (gradient accumulation); with one they shrink the bubble, so there
    every microbatch size is priced. The ZeRO stage is not ordered: ZeRO-1 can be faster than none
    (the optimizer's update on 1/dp of the parameters), so every stage is priced.
    Checked on row 1 (tp=1, 55 points priced without pruning): no point slower than one it dominates."""
    pp, tp, sp, zeros = grp
    res, pruned_mem, pruned_dom = [], 0, 0
    fit = []
    for mbs in sorted(GRID_MBS, reverse=True):
        for zero in zeros:
            for rc in RC_ORDER:
                q = point(row, pp, tp, sp, mbs, zero, rc)
                if not q:
                    continue
                if mem_lower_bound(row, q) > LIMIT_BYTES:
                    pruned_mem += 1
                    if args.check_precheck:     # price it anyway: a pruned point that fits is the pre-check's error
                        r = price_point(args, path, q)
                        if "error" not in r and r["fits"]:
                            print("    pre-check error: %s fits (%.1f GB), its bound %.1f GB" % (
                                r["desc"], r["mem"] / 1e9, mem_lower_bound(row, q) / 1e9), file=sys.stderr, flush=True)
                        elif log:
                            print("    %-44s pre-check %.1f GB, galvc %s" % (r["desc"], mem_lower_bound(row, q) / 1e9,
                                  r["error"] if "error" in r else "%.1f GB" % (r["mem"] / 1e9)), file=sys.stderr, flush=True)
                    continue
                if not args.no_prune and any((f["mbs"] >= mbs if pp == 1 else f["mbs"] == mbs) and f["zero"] == zero and
                                             RC_ORDER.index(f["rc"]) <= RC_ORDER.index(rc) for f in fit):
                    pruned_dom += 1
                    continue
                r = price_point(args, path, q)
                res.append(r)
                if "error" not in r and r["fits"]:
                    fit.append(r)
                if log:
                    print("    %-44s %s" % (r["desc"], "error: " + r["error"] if "error" in r else
                                             "needs %.1f GB (over)" % (r["mem"] / 1e9) if r["step_s"] is None else
                                             "%.3f s %.1f GB%s" % (r["step_s"], r["mem"] / 1e9, "" if r["fits"] else " (over)")),
                          file=sys.stderr, flush=True)
    return res, pruned_mem, pruned_dom


def grid(args, row, path, pool):
    """(iii): the best fitting point of the grid; every priced point and every error kept."""
    groups = grid_groups(row, args)
    outs = list(pool.map(lambda g: grid_group(args, row, path, g, args.verbose), groups))
    res = [r for o in outs for r in o[0]]
    b = best_of(res)
    out = dict(b) if b else {"error": "no point fits (%d priced)" % len(res)}
    out.update(n=len(res), nfit=sum(1 for p in res if "error" not in p and p["fits"]), points=res,
               pruned_mem=sum(o[1] for o in outs), pruned_dom=sum(o[2] for o in outs),
               cpu_grid=sum(p["cpu_s"] for p in res))
    return out


def galvc_search(args, row, path):
    """(s): galvc's default search, then its plan replayed (--plan plan.json --report-cost): the realised
    program's step, priced as the pp = 1 grid points are."""
    name, L, h, a, G, B, tp, pp, mbs, v, paper = row
    plan = os.path.join(args.work, "plan-%s.json" % name)
    if os.path.exists(plan):
        os.unlink(plan)
    cmd = [args.galvc, path] + COMMON + ["--gpus", str(G), "--batch", str(B), "--plan-only", "--plan-out", plan]
    rc, out, err, cpu = run(cmd, args.timeout)
    if rc or not os.path.exists(plan):
        return {"error": first_error(err), "cpu_s": cpu}
    p = json.load(open(plan))
    pipe = p.get("pipeline")
    if pipe:  # a pipelined plan.json: the whole step (schedule + once-per-step sync), its largest stage's memory
        step = pipe["predicted_step_ns"] * 1e-9
        desc = "pipeline %d stages mb%d %s zero%s" % (pipe["stages"], pipe["microbatches"], pipe.get("schedule", "?"),
                                                     "/".join(str(z) for z in sorted(set(pipe.get("stage_zero", [0])))))
        mem = max(pipe.get("group_bytes") or pipe.get("stage_bytes") or [None])  # interleaved: a device group's
        if pipe.get("virtual_stages", 1) > 1:
            desc = desc.replace(" stages", " stages (v%d)" % pipe["virtual_stages"], 1)
    else:
        step = p["predicted"]["step_ns"] * 1e-9
        mesh = ",".join("%s=%d" % (n, s) for n, s in zip(p["mesh"]["axes"], p["mesh"]["shape"]))
        zs = sorted({u.get("zero", 0) for u in p.get("units", [])})
        sp = " sp" if any(u.get("sp") for u in p.get("units", [])) else ""
        desc = "%s mb%d%s zero%s rc:%s" % (mesh, p.get("microbatches", 1), sp, "/".join(str(z) for z in zs), p.get("recompute", "?"))
        mem = p.get("memory_per_device", {}).get("total")
    res = {"desc": desc, "step_s": step, "mem": mem, "cpu_s": cpu}
    if pipe:  # replayed plan-only (a weight-free model compiles no stage programs): the plan's printed whole step
        rcmd = [args.galvc, path] + COMMON + ["--gpus", str(G), "--batch", str(B), "--plan", plan, "--plan-only"]
        rc, out, err, _ = run(rcmd, args.timeout)
        m = re.search(r"^pipeline: predicted step ([0-9.]+) ms", err + out, re.M)
        res["replay_s"] = float(m.group(1)) * 1e-3 if not rc and m else None
    else:
        rcmd = [args.galvc, path] + COMMON + ["--gpus", str(G), "--batch", str(B), "--plan", plan, "--report-cost", "-q",
                                              "-o", os.path.join(args.work, "replay.mlir")]
        rc, out, err, _ = run(rcmd, args.timeout)
        m = re.search(r"predicted step: (\d+) ns", out)
        res["replay_s"] = int(m.group(1)) * 1e-9 if not rc and m else None
    if rc or not m:
        res["replay_error"] = first_error(err) if rc else "no predicted step in the replay's output"
    return res


def fmt_col(tag, desc, step, G, B, L, h, mem, cpu, extra=""):
    return "  %-5s %-46s %9.3f %8.1f %8.1f %8.1f %8.1f%s" % (
        tag, desc, step, model_flops(B, L, h) / (step * G) / 1e12, hw_flops_recompute(B, L, h) / (step * G) / 1e12,
        mem / 1e9 if mem else 0, cpu, extra)


def print_failures(tag, pts):
    """Points galvc refused or could not price: their error line (grouped) and one command each."""
    errs = {}
    for p in pts:
        if "error" in p:
            errs.setdefault(p["error"], []).append(p)
    for e, ps in errs.items():
        print("        %s: %d point(s) failed: %s" % (tag, len(ps), e))
        print("          e.g. %s" % ps[0]["cmd"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--rows", default="1,2,3,4", help="1-based rows of Table 1, or all")
    ap.add_argument("--columns", default="i,ii,iii,s", help="any of i, ii, iii, s (comma-separated)")
    ap.add_argument("--work", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "galvc-megatron"))
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per galvc command")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="galvc processes pricing grid points at once (default 1)")
    ap.add_argument("--grid-pp-max", type=int, default=8, help="(iii): the largest pipeline stage count")
    ap.add_argument("--no-prune", action="store_true", help="(iii): price dominated points too (the memory pre-check stays)")
    ap.add_argument("--check-precheck", action="store_true", help="(iii): price the points the memory pre-check prunes too, "
                    "and name any that fits (none should)")
    ap.add_argument("--json", help="write every priced point here")
    ap.add_argument("-v", "--verbose", action="store_true", help="each grid point on stderr as it is priced")
    ap.add_argument("--no-grid", action="store_true", help="skip (ii) and (iii) (= --columns without them)")
    ap.add_argument("--dropout", type=float, default=0.1, help="Megatron's attention and hidden dropout of this ratio in "
                    "the GPTs (make_model.py --dropout; default 0.1, Megatron's defaults --attention-dropout and "
                    "--hidden-dropout, which the SC'21 scripts keep; 0: none)")
    ap.add_argument("--no-search", action="store_true", help="skip (s), galvc's own search (tens of minutes on rows 5-8)")
    args = ap.parse_args()
    cols = set(args.columns.split(","))
    if args.no_grid:
        cols -= {"ii", "iii"}
    if args.no_search:
        cols -= {"s"}
    if not cols <= {"i", "ii", "iii", "s"}:
        ap.error("--columns: i, ii, iii, s")
    args.src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    args.galvc = os.path.abspath(os.path.join(args.build, "galvc"))
    os.makedirs(args.work, exist_ok=True)
    rows = range(1, len(ROWS) + 1) if args.rows == "all" else [int(r) for r in args.rows.split(",")]
    print("Megatron-LM SC'21 Table 1 vs galvc (bf16 training, a100-80g preset, 8 GPUs per node, seq %d)" % SEQ)
    print("  %-5s %-46s %9s %8s %8s %8s %8s" % ("", "configuration", "step s", "mTF/s", "hwTF/s", "mem GB", "cpu s"))
    dump = []
    for r in rows:
        row = ROWS[r - 1]
        name, L, h, a, G, B = row[:6]
        path = model_path(args, name, L, h, a)
        print("%s: %d layers, hidden %d, %d heads, %d GPUs, batch %d" % (name, L, h, a, G, B), flush=True)
        # (i); with pp > 1 also (i=), Megatron's own cuts (L / pp layers per stage)
        # rows Megatron interleaved (v > 1): also (i1), the same on 1F1B
        for tag, equal, v1 in ((("(i)", False, False),) + ((("(i=)", True, False),) if row[7] > 1 else ()) +
                               ((("(i1)", False, True),) if row[9] > 1 else ())) if "i" in cols else ():
            c = megatron_config(args, row, path, equal=equal, v1=v1)
            if "error" in c:
                print("  %-5s %-46s galvc: %s" % (tag, c["desc"], c["error"]), flush=True)
            else:
                print(fmt_col(tag, c["desc"], c["step_s"], G, B, L, h, c["mem"], c["cpu_s"],
                              "  paper %d hwTF/s, ratio %.2f%s" % (c["paper"], c["hw_tflops"] / c["paper"],
                                                                   "" if c["fits"] else ", over 80 GB")), flush=True)
            if c.get("over"):
                print("        %s at 80 GB: %s" % (tag, c["over"]), flush=True)
        sb = g = s = None
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            if "ii" in cols:
                sb = stronger_baseline(args, row, path, pool)
                if "error" in sb:
                    print("  %-5s %s" % ("(ii)", sb["error"]), flush=True)
                else:
                    print(fmt_col("(ii)", sb["desc"], sb["step_s"], G, B, L, h, sb["mem"], sb["cpu_s"],
                                  "  (%d mbs priced, %.1f cpu s)" % (sb["n"], sb["cpu_grid"])), flush=True)
                if sb.get("note"):
                    print("        (ii): %s" % sb["note"])
                print_failures("(ii)", sb["points"])
            if "iii" in cols:
                g = grid(args, row, path, pool)
                if "error" in g:
                    print("  %-5s %s" % ("(iii)", g["error"]), flush=True)
                else:
                    print(fmt_col("(iii)", g["desc"], g["step_s"], G, B, L, h, g["mem"], g["cpu_s"]), flush=True)
                    if g.get("plan"):
                        print("        (iii): stages %s" % g["plan"])
                print("        (iii): %d points priced, %d fit; pruned: %d by the memory pre-check, %d dominated; "
                      "%.1f cpu s" % (g["n"], g["nfit"], g["pruned_mem"], g["pruned_dom"], g["cpu_grid"]), flush=True)
                print_failures("(iii)", g["points"])
        if "s" in cols:
            s = galvc_search(args, row, path)
            if "error" in s:
                print("  %-5s no plan (%.1f cpu s): %s" % ("(s)", s["cpu_s"], s["error"]), flush=True)
            else:
                rp = ("  replayed %.3f s" % s["replay_s"] if s["replay_s"] is not None
                      else "  replay: %s" % s.get("replay_error"))
                print(fmt_col("(s)", s["desc"], s["step_s"], G, B, L, h, s["mem"], s["cpu_s"], rp), flush=True)
        base = [b for b in (sb, g) if b and "error" not in b]
        if base and s and "error" not in s:
            b = min(base, key=lambda x: x["step_s"])
            print("        galvc(s) / best of (ii),(iii) = %.3f s / %.3f s = %.2fx  (best: %s)" % (
                b["step_s"], s["step_s"], b["step_s"] / s["step_s"], b["desc"]), flush=True)
        dump.append({"row": name, "ii": sb, "iii": g, "s": s})
        if args.json:       # after every row: a long run keeps what it priced
            json.dump(dump, open(args.json, "w"), indent=1, default=str)
    print("mTF/s: model TFLOP/s per GPU (72 form); hwTF/s: hardware TFLOP/s per GPU in the 96 form (Megatron's,"
          " full recomputation counted); ratio: galvc's predicted hwTF/s for Megatron's config / the paper's")


if __name__ == "__main__":
    main()
