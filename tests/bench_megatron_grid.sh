#!/usr/bin/env bash
# bench/megatron.py's columns (ii) and (iii) (docs/planner.md, "Megatron
# Table 1", "Columns (ii) and (iii)"): the grid generator, the commands and
# the pruning, checked without the bench's long run:
#   - the groups of row 1 (1.7B, 24 heads, 32 GPUs): tp 1, 2, 4, 8 (sp off /
#     on under tp > 1, ZeRO 0-3) and pp 2, 4, 8 (ZeRO 0-2); row 2 (30
#     layers, 64 GPUs): pp 2 only;
#   - a point's command fixes everything: pp = 1 --strategy zero1,tp,sp
#     --mesh dp=16,tp=2 --recompute --microbatches --report-cost; pp > 1
#     --pipeline-stages --pipeline-zero --schedule 1f1b --plan-only and no
#     --strategy (the pipeline path does not price it);
#   - dominance on a synthetic cost (no galvc): pruning keeps the grid's
#     best (the same point as pricing everything), prices every ZeRO stage,
#     and prunes something; a landscape where ZeRO-1 is the fastest keeps it;
#   - the memory pre-check shrinks with more recomputation and higher ZeRO;
#   - one real point of row 1 each way (weight-free model): galvc's step and
#     memory parsed, the pre-check below galvc's memory, the pp = 1
#     point's step = the "predicted step" of the same command run here, and
#     the pp = 2 point's step = plan.json's predicted_step_ns (the whole
#     step: the schedule + the once-per-step sync, sync_ns > 0).
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
timeout 600 python3 - "$SRC" "$BUILD" "$T" <<'EOF'
import importlib.util, os, re, subprocess, sys, types
src, build, work = sys.argv[1:4]
spec = importlib.util.spec_from_file_location("megatron", os.path.join(src, "bench", "megatron.py"))
M = importlib.util.module_from_spec(spec)
spec.loader.exec_module(M)
fails = []
def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        fails.append(what)

args = types.SimpleNamespace(galvc=os.path.join(build, "galvc"), work=work, timeout=300, grid_pp_max=8,
                             no_prune=False, check_precheck=False, verbose=False, src=src, dropout=0.0)
row1, row2 = M.ROWS[0], M.ROWS[1]
g1 = M.grid_groups(row1, args)
check([(p, t, s) for p, t, s, z in g1] == [(1, 1, False), (1, 2, False), (1, 2, True), (1, 4, False), (1, 4, True),
                                          (1, 8, False), (1, 8, True), (2, 1, False), (4, 1, False), (8, 1, False)],
      "row 1 groups: tp 1/2/4/8 with sp under tp > 1, pp 2/4/8")
check(all(z == ((0, 1, 2, 3) if p == 1 else (0, 1, 2)) for p, t, s, z in g1), "ZeRO 0-3 without a pipeline, 0-2 with one")
check([p for p, t, s, z in M.grid_groups(row2, args) if p > 1] == [2], "row 2 (30 layers, 64 GPUs): pp 2 only")

q = M.point(row1, 1, 2, True, 8, 1, "selective")
cmd = " ".join(M.point_cmd(args, "m.onnx", q))
check(q["nmb"] == 4 and all(x in cmd for x in ("--strategy zero1,tp,sp", "--mesh dp=16,tp=2", "--recompute=selective",
                                               "--microbatches 4", "--report-cost", "--gpus 32", "--batch 512")),
      "pp = 1 command: " + cmd)
qp = M.point(row1, 4, 1, False, 4, 2, "none")
cmd = " ".join(M.point_cmd(args, "m.onnx", qp))
check(qp["nmb"] == 16 and all(x in cmd for x in ("--pipeline-stages 4", "--pipeline-zero 2", "--schedule 1f1b",
                                                 "--recompute=none", "--microbatches 16", "--plan-only"))
      and "--strategy" not in cmd, "pp > 1 command: " + cmd)
check(M.point(row1, 1, 1, False, 16, 0, "none")["nmb"] == 1 and M.point(row2, 1, 2, False, 16, 0, "none")["nmb"] == 1
      and M.point(row1, 1, 8, False, 16, 0, "none")["nmb"] == 8, "microbatches = B / (dp mbs)")

# dominance on a synthetic cost: time falls with mbs (no pipeline), rises with recomputation; memory the opposite
RCI = {"none": 0, "selective": 1, "all": 2}
def synth(zero_bonus):
    def price(a, path, q):
        t = 10.0 + 2.0 / q["mbs"] + RCI[q["rc"]] + [0.0, zero_bonus, 0.3, 0.6][q["zero"]] + 0.1 * q["tp"] + (1 if q["sp"] else 0) * 0.05 \
            + (0.5 * q["pp"] + 3.0 / q["nmb"] if q["pp"] > 1 else 0)
        mem = 20e9 * q["mbs"] / (1 + 2 * RCI[q["rc"]]) / q["tp"] + 30e9 * (1 - 0.2 * q["zero"])
        return dict(q, desc=M.point_desc(q), cmd="", cpu_s=0.0, step_s=t, mem=mem, fits=mem <= M.LIMIT_BYTES)
    return price
for bonus in (0.2, -0.2):
    M.price_point = synth(bonus)
    args.no_prune = False
    pr = M.grid(args, row1, "m.onnx", __import__("concurrent.futures").futures.ThreadPoolExecutor(1))
    args.no_prune = True
    full = M.grid(args, row1, "m.onnx", __import__("concurrent.futures").futures.ThreadPoolExecutor(1))
    check(pr["desc"] == full["desc"] and pr["pruned_dom"] > 0 and pr["n"] < full["n"],
          "zero-1 %+.1f: pruned best %s = full best %s (%d vs %d points, %d dominated)" % (
              bonus, pr["desc"], full["desc"], pr["n"], full["n"], pr["pruned_dom"]))
    check({p["zero"] for p in pr["points"] if p["pp"] == 1} == {0, 1, 2, 3}, "every ZeRO stage priced")
check(M.mem_lower_bound(row1, M.point(row1, 1, 1, False, 8, 0, "none")) >
      M.mem_lower_bound(row1, M.point(row1, 1, 1, False, 8, 0, "selective")) >
      M.mem_lower_bound(row1, M.point(row1, 1, 1, False, 8, 0, "all")) and
      M.mem_lower_bound(row1, M.point(row1, 1, 1, False, 8, 0, "none")) >
      M.mem_lower_bound(row1, M.point(row1, 1, 1, False, 8, 3, "none")), "pre-check: less with recomputation and ZeRO")

# real points of row 1 (weight-free model)
spec.loader.exec_module(M)
path = M.model_path(args, *[row1[i] for i in (0, 1, 2, 3)])
for q in (M.point(row1, 1, 1, False, 8, 1, "selective"), M.point(row1, 2, 1, False, 4, 0, "none")):
    r = M.price_point(args, path, q)
    ok = "error" not in r and r.get("step_s") and r.get("mem")
    check(bool(ok), "%s priced: %s" % (r["desc"], "%.3f s, %.1f GB" % (r["step_s"], r["mem"] / 1e9) if ok else r.get("error")))
    if ok:
        check(M.mem_lower_bound(row1, q) <= r["mem"], "%s: pre-check %.1f GB <= galvc's %.1f GB" % (
            r["desc"], M.mem_lower_bound(row1, q) / 1e9, r["mem"] / 1e9))
    if ok and q["pp"] == 1:
        out = subprocess.run(M.point_cmd(args, path, q), capture_output=True, text=True).stdout
        m = re.search(r"predicted step: (\d+) ns", out)
        check(m is not None and abs(int(m.group(1)) * 1e-9 - r["step_s"]) < 1e-12,
              "the point's step = galvc's predicted step for the command")
    if ok and q["pp"] > 1:  # the pipeline's whole step: plan.json's predicted_step_ns (schedule + once-per-step sync)
        pj = os.path.join(work, "pp.json")
        subprocess.run(M.point_cmd(args, path, q) + ["--plan-out", pj], capture_output=True, text=True)
        import json
        pp = json.load(open(pj))["pipeline"] if os.path.exists(pj) else {}
        check(pp.get("sync_ns", 0) > 0 and abs(pp.get("predicted_step_ns", 0) * 1e-9 - r["step_s"]) <= 5e-7,
              "the pipeline point's step %.6f s = plan.json's predicted_step_ns %s (sync_ns %s of it)" % (
                  r["step_s"], pp.get("predicted_step_ns"), pp.get("sync_ns")))
print("%d failure(s)" % len(fails))
sys.exit(1 if fails else 0)
EOF
