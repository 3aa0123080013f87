#!/usr/bin/env python3
"""reduced_memory.py [BUILD] [llama] [gpt] -- the repeated-layer search's memory estimate against full realisations.

Per case (docs/planner.md, "Repeated layers: the memory"): the default training search on the reduced programs with
GALV_PLAN_DEBUG=1 prints, per combination and ZeRO stage, "uniform stage Z (...): r3 R3 r2 R2 bytes (linear X) -> E":
E the full program's memory estimated from r3's memory plan, X the peaks' linear extrapolation it replaced. The same
plan (dp over every device, every unit at stage Z) is then realised in full (--plan) and its memory printed beside
both. Llama2-7B (weight-free, examples/make_model.py llama, 32 layers) with Galvatron's profile and hardware
(bench/galvatron/, as bench/galvatron_llama2.sh); GPTs of Megatron Table 1 rows 1-3 (bench/megatron.py's shapes) on
a100-80g. Figures only (never a pass or fail). Models are made under WORK (default /tmp/reduced_memory).
"""
import json, os, re, subprocess, sys
SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
args = sys.argv[1:]
BUILD = os.path.abspath(args.pop(0)) if args and os.path.isdir(args[0]) else os.path.join(SRC, "build")
WORK = os.environ.get("WORK", "/tmp/reduced_memory")
os.makedirs(WORK, exist_ok=True)
G = os.path.join(BUILD, "galvc")
S = SRC
def run(args, env=None):
    e = dict(os.environ); e.update(env or {})
    r = subprocess.run(["nice", "-n", "19", G] + args, capture_output=True, text=True, env=e)
    return r.stdout + r.stderr
def case(name, model, gpus, batch, seq, extra, stages, mb=1, recompute="all", prof=True, dp=None):
    dp = dp or gpus
    common = [model, "--train", "--plan-only", "--no-weights", "--precision", "bf16", "--gpus", str(gpus), "--gpus-per-node", "8",
              "--batch", str(batch), "--seq", str(seq), "--recompute=" + recompute] + extra
    if prof:
        common += ["--cluster", S + "/bench/galvatron/a100-galvatron.json", "--profile", S + "/bench/galvatron/planner_inputs.json",
                   "--fused-attention", "on", "--memory-limit", str(1 << 50)]
    else:
        common += ["--cluster", "a100-80g", "--memory-limit", str(1 << 50)]
    srch = common + ["--microbatches", str(mb)] + (["--zero-reduce", "per-microbatch"] if mb > 1 else [])
    out = run(srch, {"GALV_PLAN_DEBUG": "1"})
    est = {}
    for m in re.finditer(r"uniform stage (\d) \(dp\(dp\)(?:\+zero2?)?, (\d+) devices\): r3 (-?\d+) r2 (-?\d+) bytes \(linear (-?\d+)\) -> (-?\d+)", out):
        z, dev = int(m.group(1)), int(m.group(2))
        if dev == dp and z not in est: est[z] = (int(m.group(5)), int(m.group(6)))
    nl = int(re.search(r"outer \+ (\d+) layers", out).group(1)) if re.search(r"outer \+ (\d+) layers", out) else None
    for z in stages:
        if z not in est or nl is None:
            print(f"{name:38s} ZeRO-{z}: no estimate ({'layers?' if nl is None else 'line missing'})"); continue
        units = [{"unit": "outer0", "zero": z}] + [{"unit": f"layer {i}", "zero": z} for i in range(nl)]
        p = {"mesh": {"axes": ["dp"], "shape": [dp]}, "batch_axes": ["dp"], "tp_axis": None, "vocab_axis": None, "units": units}
        if mb > 1: p.update(microbatches=mb, zero_reduce="per-microbatch")
        pf = f"{WORK}/{name.replace(' ','_').replace('/','_')}_z{z}.json"
        json.dump(p, open(pf, "w"))
        o2 = run(common + ["--plan", pf])
        m = re.search(r"memory per device: .* total (\d+)", o2)
        if not m: print(f"{name:38s} ZeRO-{z}: full realisation failed: {o2.strip().splitlines()[-1]}"); continue
        real = int(m.group(1)); lin, new = est[z]
        print(f"{name:38s} ZeRO-{z}: realised {real/1e9:7.2f} GB  estimate {new/1e9:7.2f} ({100*(new-real)/real:+5.1f} %)  linear before {lin/1e9:7.2f} ({100*(lin-real)/real:+5.1f} %)", flush=True)
L = os.path.join(WORK, "llama7b.onnx")
if not os.path.exists(L):
    subprocess.run(["nice", "python3", S + "/examples/make_model.py", "llama", "-o", L, "--layers", "32", "--hidden", "4096", "--heads", "32",
                    "--kv-heads", "32", "--ffn", "11008", "--vocab", "32000", "--no-weights", "--no-verify"], capture_output=True)
which = args or ["llama", "gpt"]
if "llama" in which:
    case("llama2-7b dp=8 rc=all mb=1", L, 8, 64, 2048, [], [0, 2, 3])
    case("llama2-7b dp=16 rc=all mb=1", L, 16, 128, 2048, [], [2, 3])
    case("llama2-7b dp=8 rc=none mb=4", L, 8, 64, 2048, [], [2, 3], mb=4, recompute="none")
    case("llama2-7b dp=16 rc=none mb=4", L, 16, 128, 2048, [], [2, 3], mb=4, recompute="none")
    case("llama2-7b dp=8 rc=all mb=2", L, 8, 64, 2048, [], [2, 3], mb=2)
    case("llama2-7b dp=8 rc=selective mb=1", L, 8, 64, 2048, [], [2, 3], recompute="selective")
if "gpt" in which:
    for nm, h, nl, heads, g in (("gpt 1.7B", 2304, 24, 24, 32), ("gpt 3.6B", 3072, 30, 32, 64), ("gpt 7.5B", 4096, 36, 32, 128)):
        f = os.path.join(WORK, f"gpt_{nl}.onnx")
        if not os.path.exists(f):
            subprocess.run(["nice", "python3", S + "/examples/make_model.py", "gpt2", "-o", f, "--layers", str(nl), "--hidden", str(h),
                            "--heads", str(heads), "--vocab", "51200", "--max-pos", "2048", "--no-weights", "--tie-embeddings", "--qkv-layout", "megatron", "--no-verify"], capture_output=True)
        case(f"{nm} dp={g} rc=all mb=1", f, g, 512, 2048, [], [2, 3], prof=False)
        case(f"{nm} dp={g} rc=selective mb=4", f, g, 512, 2048, [], [2, 3], mb=4, recompute="selective", prof=False)
