#!/usr/bin/env python3
"""plan_sweep.py [--build DIR] [-n N] [--seed S] [--cpu-limit S] [--work DIR] [--json F] [--beside VAR=VALUE]

The default search (`galvc M --plan-only --no-weights -q`) over a random sample of weight-free models (six families,
GPT-2 124M to a 13B Llama shape), GPU presets, GPU counts, GPUs per node, precisions, training / inference and
batches, each run under a CPU-time limit. Prints one line per run (its outcome and CPU seconds) and a summary:
plans, single error lines (each printed), runs over the limit, crashes, and the plans' CPU seconds (median, 90th
percentile, max). Figures only: it never passes or fails on time; a crash or an error of more than one line is
reported as such (docs/planner.md, "Planning time: the attention chains matched once, the screen's copies").
--beside VAR=VALUE runs each point again with that environment variable set (a search option's old behaviour, e.g.
GALV_COUNT_DEFER=off) and prints both CPU times and whether the two plan.json files are the same (planning_seconds
aside), the two predicted steps where they differ.
"""
import argparse, json, os, random, resource, subprocess, sys

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = {  # name: make_model.py arguments (weight-free)
    "gpt2s": "gpt2 --layers 12 --hidden 768 --heads 12 --vocab 50257 --max-pos 2048",
    "gpt2m": "gpt2 --layers 24 --hidden 1024 --heads 16 --vocab 50257 --max-pos 2048",
    "gpt1b": "gpt2 --layers 24 --hidden 2048 --heads 16 --vocab 51200 --max-pos 2048",
    "llama1b": "llama --layers 16 --hidden 2048 --heads 32 --kv-heads 8 --vocab 32000",
    "llama3b": "llama --layers 26 --hidden 3200 --heads 32 --kv-heads 32 --vocab 32000",
    "llama13": "llama --layers 40 --hidden 5120 --heads 40 --kv-heads 40 --ffn 13824 --vocab 32000",
    "bertb": "bert --layers 12 --hidden 768 --heads 12 --vocab 30522 --max-pos 2048",
    "bertl": "bert --layers 24 --hidden 1024 --heads 16 --vocab 30522 --max-pos 2048",
    "t5b": "t5 --layers 12 --hidden 768 --heads 12 --vocab 32128",
    "vitb": "vit --layers 12 --hidden 768 --heads 12",
    "vith": "vit --layers 32 --hidden 1280 --heads 16",
}
CLUSTERS = ["a100-40g", "a100-80g", "h100-sxm", "h200"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[2])
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("-n", type=int, default=40, help="runs (default 40)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cpu-limit", type=int, default=120, help="CPU seconds per run (default 120)")
    ap.add_argument("--work", default="/tmp/galvc-plan-sweep")
    ap.add_argument("--json", help="write every run's command, outcome and CPU seconds here")
    ap.add_argument("--beside", help="VAR=VALUE: each point run again with it set, the plans compared")
    a = ap.parse_args()
    galvc = os.path.join(a.build, "galvc")
    os.makedirs(a.work, exist_ok=True)
    r = random.Random(a.seed)
    runs = []
    for i in range(a.n):
        m = r.choice(sorted(MODELS))
        path = os.path.join(a.work, m + ".onnx")
        if not os.path.exists(path):
            subprocess.run([sys.executable, os.path.join(SRC, "examples", "make_model.py")] + MODELS[m].split() +
                           ["-o", path, "--no-weights", "--no-verify"], check=True, stdout=subprocess.DEVNULL)
        cmd = [galvc, path, "--plan-only", "--no-weights", "-q", "--gpus", str(r.choice([2, 4, 8, 16, 32, 64, 128, 3, 6, 12, 24, 48])),
               "--gpus-per-node", str(r.choice([4, 8, 8, 16])), "--cluster", r.choice(CLUSTERS),
               "--batch", str(r.choice([1, 2, 6, 8, 16, 30, 32, 64, 128, 256, 512])),
               "--precision", r.choice(["bf16", "bf16", "fp16", "fp32"]), "-o", os.path.join(a.work, "out") + "/"]
        if not m.startswith("vit"):
            cmd += ["--seq", str(r.choice([128, 512, 1024, 2048]))]
        if r.random() < 0.7:
            cmd.append("--train")
        if r.random() < 0.15:
            cmd += ["--memory-limit", str(r.choice([8, 16, 24, 40]) * 10**9)]
        lim = a.cpu_limit

        def run(c, env=None):
            c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            p = subprocess.run(c, capture_output=True, text=True, stdin=subprocess.DEVNULL, env=env,
                               preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CPU, (lim, lim + 5)))
            c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            return p, c1.ru_utime - c0.ru_utime + c1.ru_stime - c0.ru_stime

        out = os.path.join(a.work, "out")
        for f in ("plan.json",):
            for d in (out, out + "-beside"):
                if os.path.exists(os.path.join(d, f)):
                    os.remove(os.path.join(d, f))
        p, cpu = run(cmd)
        beside = None
        if a.beside:
            var, _, val = a.beside.partition("=")
            p2, cpu2 = run([out + "-beside/" if c == out + "/" else c for c in cmd], dict(os.environ, **{var: val}))
            plans = []
            for d in (out, out + "-beside"):
                try:
                    j = json.load(open(os.path.join(d, "plan.json")))
                    j.pop("planning_seconds", None), j.pop("candidates", None)
                    plans.append(j)
                except (OSError, ValueError):
                    plans.append(None)
            step = lambda j: j and (j.get("predicted") or {}).get("step_ns") or (j.get("joint") or {}).get("step_ns") if j else None
            same = plans[0] == plans[1] and p.returncode == p2.returncode
            beside = dict(cpu_s=round(cpu2, 2), rc=p2.returncode, same=same, steps=[step(plans[0]), step(plans[1])])
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        errs = [l for l in lines if "error" in l]
        kind = ("plan" if p.returncode == 0 else "over the CPU limit" if p.returncode in (-24, -9) and cpu >= lim - 1
                else "crash" if p.returncode < 0 or p.returncode >= 128 else "error" if len(errs) == 1 else "error (not one line)")
        shown = " ".join(os.path.basename(c) if c in (galvc, path) else c for c in cmd[1:] if c != "-o" and not c.startswith(a.work))
        print("%3d %-20s %7.1f s  %s %s" % (i, kind, cpu, m, shown), flush=True)
        if beside:
            print("      beside (%s): %.1f s, %s" % (a.beside, beside["cpu_s"], "the same plan.json" if beside["same"] else
                  "differs: rc %d / %d, steps %s / %s" % (p.returncode, beside["rc"], *beside["steps"])), flush=True)
        if kind != "plan":
            print("      " + " | ".join(lines[-2:])[:400], flush=True)
        runs.append(dict(model=m, cmd=shown, kind=kind, rc=p.returncode, cpu_s=round(cpu, 2), err=lines[-2:], beside=beside))
    plans = sorted(x["cpu_s"] for x in runs if x["kind"] == "plan")
    kinds = {}
    for x in runs:
        kinds[x["kind"]] = kinds.get(x["kind"], 0) + 1
    print("plan_sweep: %d runs: %s" % (len(runs), ", ".join("%d %s" % (v, k) for k, v in sorted(kinds.items()))))
    if plans:
        print("plan_sweep: the plans' CPU s: median %.1f, 90th percentile %.1f, max %.1f" % (
            plans[len(plans) // 2], plans[min(len(plans) - 1, int(len(plans) * 0.9))], plans[-1]))
    if a.beside:
        b = [x["beside"] for x in runs]
        print("plan_sweep: beside %s: %d of %d the same plan.json; CPU s %.1f against %.1f beside" % (
            a.beside, sum(x["same"] for x in b), len(b), sum(x["cpu_s"] for x in runs), sum(x["cpu_s"] for x in b)))
    if a.json:
        json.dump(runs, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
