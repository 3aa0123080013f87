#!/usr/bin/env python3
"""megatron.py [--build DIR] [--rows 1,2,3,4|all] [--work DIR] [--timeout S]

Megatron-LM SC'21 Table 1 beside galvc, in one run (docs/planner.md,
"Megatron Table 1"). Per row: a weight-free GPT of the table's shape
(examples/make_model.py gpt2 --no-weights --tie-embeddings --qkv-layout
megatron: Megatron's fused QKV columns, per head [q k v], so tp splits
heads; vocab 51200, seq 2048), bf16 training on the a100-80g preset with 8 GPUs per node at
Megatron's GPU count and global batch, and

  (i)  Megatron's own configuration (tp, pp, microbatch size, full
       recomputation) expressed in galvc and priced by galvc's cost model
       (--strategy dp,tp --mesh dp=D,tp=T --recompute=all --microbatches
       B/(D*mbs) --report-cost); beside it the paper's measured hardware
       TFLOP/s per GPU (counting recomputation) and the ratio;
  (ii) a stronger Megatron baseline: Megatron's tp and pp with sequence
       parallelism, selective recomputation, the distributed optimizer
       (ZeRO-1) and the best microbatch size, priced by galvc;
  (iii) the best point of a grid over tp (1-8, inside a node), microbatch
       size (1-16), sequence parallelism, ZeRO stage (0-3) and
       recomputation (none / selective / full), priced by galvc (pp = 1:
       pipeline points are priced by the pipeline path when it plans the
       row; --grid-pp adds them);
  (s)  galvc's own search (--train --plan-only, no strategy flag): its
       predicted step, model TFLOP/s per GPU, memory and planning CPU
       seconds, and its step against the best of (ii) and (iii) (>= 1.00:
       galvc's plan is at least as fast).
Every point is priced with the same cost model (--report-cost's
predicted step) and must fit the preset's 80 GB as galvc prices it.

Model FLOPs per step 72*B*s*L*h^2*(1 + s/(6h) + V/(12*L*h)); hardware FLOPs
with full recomputation 96*B*s*L*h^2*(1 + s/(6h) + V/(16*L*h))
(REFERENCES.md, Throughput accounting). TFLOP/s per GPU = FLOPs / (step *
GPUs). Prints figures only: it never passes or fails on them. A
configuration galvc cannot express or plan prints galvc's one-line reason.
Pipeline rows (pp > 1) run galvc's pipeline path, whose stage programs are
priced in bf16 (docs/pipeline.md, "16-bit storage"), with --recompute=all
inside the stage programs and 1F1B (the interleaved schedule refuses
per-layer recomputation); where no partition fits the 80 GB, the
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
    path = os.path.join(args.work, "gpt%s-megatron.onnx" % name.replace(".", "p"))
    if not os.path.exists(path):
        subprocess.run([sys.executable, os.path.join(args.src, "examples", "make_model.py"), "gpt2", "--layers", str(L),
                        "--hidden", str(h), "--heads", str(a), "--vocab", str(VOCAB), "--max-pos", str(SEQ),
                        "--no-weights", "--tie-embeddings", "--qkv-layout", "megatron", "-o", path], check=True, stdout=subprocess.DEVNULL)
    return path


def megatron_config(args, row, path):
    name, L, h, a, G, B, tp, pp, mbs, v, paper = row
    dp = G // (tp * pp)
    nmb = B // (dp * mbs)
    cmd = [args.galvc, path] + COMMON + ["--gpus", str(G), "--batch", str(B), "--microbatches", str(nmb)]
    if pp > 1:
        # full recomputation per layer inside the stage programs (docs/pipeline.md, "Recomputation per layer inside
        # stages"), 1F1B: the interleaved schedule refuses per-layer recomputation (its chunks read the full stash),
        # so rows 6-8 run 1F1B where Megatron interleaved v chunks
        cmd += ["--pipeline-stages", str(pp), "--strategy", "dp,tp", "--mesh", "dp=%d,tp=%d" % (dp, tp),
                "--recompute=all", "--schedule", "1f1b", "--plan-only"]
    else:
        cmd += ["--recompute=all", "--report-cost", "-o", os.path.join(args.work, "cfg.mlir")]
        cmd += ["--strategy", "dp,tp", "--mesh", "dp=%d,tp=%d" % (dp, tp)] if tp > 1 else ["--strategy", "dp", "--mesh", "dp=%d" % dp]
    rc, out, err, cpu = run(cmd, args.timeout)
    desc = "tp%d pp%d dp%d mbs%d x%d%s, full recompute" % (tp, pp, dp, mbs, nmb, " 1F1B (not v%d)" % v if v > 1 else "")
    over = None
    if rc and pp > 1 and "no partition fits" in err:  # priced anyway, the limit lifted: its step, and memory over 80 GB
        over = first_error(err)
        rc, out, err, cpu2 = run(cmd + ["--memory-limit", "1000000000000"], args.timeout)
        cpu += cpu2
    if rc:
        return {"desc": desc, "error": first_error(err), "cpu_s": cpu}
    if pp > 1:  # the pipeline's plan: "pipeline: S stages, B microbatches, step T ms", per stage "(N bytes per device)"
        m = re.search(r"^pipeline: \d+ stages, \d+ microbatches, step ([0-9.]+) ms", out + err, re.M)
        mems = [int(x) for x in re.findall(r"^  stage \d+: .*\((\d+) bytes per device\)", out + err, re.M)]
        if not m or not mems:
            return {"desc": desc, "error": "no pipeline plan in galvc's output", "cpu_s": cpu}
        step = float(m.group(1)) * 1e-3
        return {"desc": desc, "step_s": step, "hw_tflops": hw_flops_recompute(B, L, h) / (step * G) / 1e12,
                "model_tflops": model_flops(B, L, h) / (step * G) / 1e12, "mem": max(mems), "fits": over is None,
                "paper": paper, "cpu_s": cpu, "over": over}
    m = re.search(r"predicted step: (\d+) ns", out)
    mem = re.search(r"memory per device: .* total (\d+) of (\d+) bytes", out)
    if not m:
        return {"desc": desc, "error": "no predicted step in --report-cost's output"}
    step = int(m.group(1)) * 1e-9
    return {"desc": desc, "step_s": step, "hw_tflops": hw_flops_recompute(B, L, h) / (step * G) / 1e12,
            "model_tflops": model_flops(B, L, h) / (step * G) / 1e12, "mem": int(mem.group(1)) if mem else None,
            "fits": mem is not None and int(mem.group(1)) <= int(mem.group(2)), "paper": paper, "cpu_s": cpu}


def price(args, path, G, B, tp, pp, mbs, sp, zero, rc):
    """galvc's predicted step for one configuration (pp = 1): dict with step_s, mem, fits or error."""
    dp = G // (tp * pp)
    nmb = B // (dp * mbs)
    parts = ["dp" if zero == 0 else "zero%d" % zero] + (["tp"] if tp > 1 else []) + (["sp"] if sp else [])
    mesh = "dp=%d,tp=%d" % (dp, tp) if tp > 1 else "dp=%d" % dp
    out_ir = os.path.join(args.work, "grid-%d.mlir" % os.getpid())
    cmd = [args.galvc, path] + COMMON + ["--gpus", str(G), "--batch", str(B), "--microbatches", str(nmb),
                                         "--recompute=%s" % rc, "--report-cost", "-q", "-o", out_ir,
                                         "--strategy", ",".join(parts), "--mesh", mesh]
    desc = "tp%d dp%d mbs%d x%d%s zero%d rc:%s" % (tp, dp, mbs, nmb, " sp" if sp else "", zero, rc)
    rc_, out, err, cpu = run(cmd, args.timeout)
    if rc_:
        return {"desc": desc, "error": first_error(err), "cpu_s": cpu}
    m = re.search(r"predicted step: (\d+) ns", out)
    mem = re.search(r"memory per device: .* total (\d+) of (\d+) bytes", out)
    if not m or not mem:
        return {"desc": desc, "error": "no predicted step / memory in --report-cost's output", "cpu_s": cpu}
    return {"desc": desc, "step_s": int(m.group(1)) * 1e-9, "mem": int(mem.group(1)),
            "fits": int(mem.group(1)) <= int(mem.group(2)), "cpu_s": cpu}


def best_of(points):
    fit = [p for p in points if "error" not in p and p["fits"]]
    return min(fit, key=lambda p: p["step_s"]) if fit else None


def stronger_baseline(args, row, path, pool):
    """(ii): Megatron's tp (pp = 1 rows) with sp, selective recomputation, ZeRO-1 and the best microbatch size."""
    name, L, h, a, G, B, tp, pp, mbs, v, paper = row
    if pp > 1:
        return {"error": "pipeline rows: not priced here (the pipeline path)", "n": 0}
    dp = G // tp
    sizes = [m for m in (1, 2, 4, 8, 16) if B % (dp * m) == 0]
    pts = list(pool.map(lambda m: price(args, path, G, B, tp, 1, m, tp > 1, 1, "selective"), sizes))
    b = best_of(pts)
    return dict(b, n=len(pts)) if b else {"error": "no point fits (%d priced)" % len(pts), "n": len(pts)}


def grid(args, row, path, pool):
    """(iii): the best fitting point of the grid (pp = 1)."""
    name, L, h, a, G, B = row[:6]
    pts = []
    for tp in (1, 2, 4, 8):
        if G % tp or h % tp or a % tp:
            continue
        dp = G // tp
        for m in (1, 2, 4, 8, 16):
            if B % (dp * m):
                continue
            for sp in ((False, True) if tp > 1 else (False,)):
                for zero in (0, 1, 2, 3):
                    for rc in ("none", "selective", "all"):
                        pts.append((tp, m, sp, zero, rc))
    res = list(pool.map(lambda q: price(args, path, G, B, q[0], 1, q[1], q[2], q[3], q[4]), pts))
    b = best_of(res)
    nfit = sum(1 for p in res if "error" not in p and p["fits"])
    cpu = sum(p.get("cpu_s", 0) for p in res)
    return dict(b, n=len(res), nfit=nfit, cpu_grid=cpu) if b else {"error": "no point fits (%d priced)" % len(res), "n": len(res)}


def galvc_search(args, row, path):
    name, L, h, a, G, B, tp, pp, mbs, v, paper = row
    plan = os.path.join(args.work, "plan-%s.json" % name)
    if os.path.exists(plan):
        os.unlink(plan)
    cmd = [args.galvc, path] + COMMON + ["--gpus", str(G), "--batch", str(B), "--plan-only", "--plan-out", plan]
    rc, out, err, cpu = run(cmd, args.timeout)
    if rc or not os.path.exists(plan):
        return {"error": first_error(err), "cpu_s": cpu}
    p = json.load(open(plan))
    step = p["predicted"]["step_ns"] * 1e-9
    mesh = ",".join("%s=%d" % (n, s) for n, s in zip(p["mesh"]["axes"], p["mesh"]["shape"]))
    zs = sorted({u.get("zero", 0) for u in p.get("units", [])})
    desc = "%s mb%d zero%s rc:%s" % (mesh, p.get("microbatches", 1), "/".join(str(z) for z in zs), p.get("recompute", "?"))
    return {"desc": desc, "step_s": step, "model_tflops": model_flops(B, L, h) / (step * G) / 1e12,
            "mem": p["memory_per_device"]["total"], "cpu_s": cpu}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--rows", default="1,2,3,4", help="1-based rows of Table 1, or all")
    ap.add_argument("--work", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "galvc-megatron"))
    ap.add_argument("--timeout", type=int, default=1800)
    ap.add_argument("--jobs", type=int, default=2, help="galvc processes pricing grid points at once")
    ap.add_argument("--no-grid", action="store_true", help="skip (ii) and (iii)")
    ap.add_argument("--no-search", action="store_true", help="skip (s), galvc's own search (tens of minutes on rows 5-8)")
    args = ap.parse_args()
    args.src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    args.galvc = os.path.abspath(os.path.join(args.build, "galvc"))
    os.makedirs(args.work, exist_ok=True)
    rows = range(1, len(ROWS) + 1) if args.rows == "all" else [int(r) for r in args.rows.split(",")]
    print("Megatron-LM SC'21 Table 1 vs galvc (bf16 training, a100-80g preset, 8 GPUs per node, seq %d)" % SEQ)
    print("%-7s %5s %5s | %-36s %9s %8s %7s %6s %8s | %-34s %9s %8s %8s %7s" % (
        "model", "GPUs", "batch", "(i) Megatron's config in galvc", "step s", "hwTF/s", "paper", "ratio", "mem GB",
        "(s) galvc's search", "step s", "mTF/s", "mem GB", "cpu s"))
    for r in rows:
        row = ROWS[r - 1]
        name, L, h, a, G, B = row[:6]
        path = model_path(args, name, L, h, a)
        c = megatron_config(args, row, path)
        s = galvc_search(args, row, path) if not args.no_search else {"error": "not run (--no-search)", "cpu_s": 0.0}
        left = ("%-36s %9.3f %8.1f %7d %6.2f %8.1f%s" % (c["desc"], c["step_s"], c["hw_tflops"], c["paper"],
                                                       c["hw_tflops"] / c["paper"], c["mem"] / 1e9 if c["mem"] else 0,
                                                       "" if c["fits"] else "!") + " (%.0f cpu s)" % c.get("cpu_s", 0)
                if "error" not in c else "%-36s galvc (%.1f cpu s): %s" % (c["desc"], c.get("cpu_s", 0), c["error"]))
        right = ("%-34s %9.3f %8.1f %8.1f %7.1f" % (s["desc"], s["step_s"], s["model_tflops"], s["mem"] / 1e9, s["cpu_s"])
                 if "error" not in s else "no plan (%.1f cpu s): %s" % (s["cpu_s"], s["error"]))
        print("%-7s %5d %5d | %s | %s" % (name, G, B, left, right), flush=True)
        if c.get("over"):
            print("%21s (i) at 80 GB: %s" % ("", c["over"]), flush=True)
        if args.no_grid:
            continue
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            sb = stronger_baseline(args, row, path, pool)
            g = grid(args, row, path, pool)
        for tag, b in (("(ii) Megatron + sp, selective, ZeRO-1, best mbs", sb), ("(iii) grid best", g)):
            if "error" in b:
                print("%21s %-48s %s" % ("", tag, b["error"]), flush=True)
                continue
            extra = " (%d points, %d fit, %.0f cpu s)" % (b["n"], b["nfit"], b["cpu_grid"]) if "nfit" in b else ""
            print("%21s %-48s %-40s %9.3f s %8.1f mTF/s %7.1f GB%s" % (
                "", tag, b["desc"], b["step_s"], model_flops(B, L, h) / (b["step_s"] * G) / 1e12, b["mem"] / 1e9, extra), flush=True)
        base = [b["step_s"] for b in (sb, g) if "error" not in b]
        if base and "error" not in s:
            print("%21s galvc's search vs the best of (ii) and (iii): %.3f s / %.3f s = %.2fx" % (
                "", min(base), s["step_s"], min(base) / s["step_s"]), flush=True)
    print("hwTF/s: hardware TFLOP/s per GPU with full recomputation (96 form); mTF/s: model TFLOP/s per GPU (72 form);")
    print("ratio: galvc's predicted hwTF/s for Megatron's config / the paper's measured; '!': over 80 GB as galvc prices it")


if __name__ == "__main__":
    main()
