#!/bin/bash
# Pipeline training schedules side by side (docs/pipeline.md, "Schedules"):
# GPT-2 (4 layers, hidden 64, 4 heads, vocab 256), batch 16 x seq 16, pp =
# 4 (one MPI rank per stage), 8 microbatches, 3 AdamW steps, under GPipe,
# 1F1B and ZB-H1 (interleaved 1F1B is not implemented: docs/pipeline.md,
# "What remains"). Per schedule and stage it prints:
#   - peak saved bytes in flight: galvc's prediction (galv_pipe_peak over the
#     schedule's order with the stage entries' stash sizes) and the runtime's
#     measured peak (its counter of live stash buffers), with the
#     microbatches held at the peak;
#   - the event order per step (F/B/W + microbatch) from the cost model's
#     timeline (--trace-plan) and whether every step of the run's --trace
#     ran in that order;
#   - the bubble per stage: predicted (the timeline's makespan less the
#     stage's busy time) and measured (per step: the step's span on the
#     run's trace less the stage's compute events, averaged over the steps);
#   - the predicted step (the timeline's makespan) and the measured one.
# 4 ranks on a shared 2-core machine: measured times are noise, printed only;
# nothing here passes or fails on time.
# usage: bench/pipeline_schedules.sh [BUILD (build)] [STEPS (3)]
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
STEPS=${2:-3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
RUNAS=()
[ "$(id -u)" = 0 ] && RUNAS=(--allow-run-as-root)
export OPENBLAS_NUM_THREADS=1 OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_mpi_yield_when_idle=1
export MPIRUN="mpirun ${RUNAS[*]} --oversubscribe -x OPENBLAS_NUM_THREADS -x OMPI_MCA_mpi_yield_when_idle"
python3 "$ROOT/examples/make_model.py" gpt2 -o "$T/m.onnx" --layers 4 --hidden 64 --heads 4 --vocab 256 --no-verify >/dev/null ||
  { echo "model build failed"; exit 1; }
python3 -c "
import numpy as np, os
r = np.random.RandomState(0)
os.makedirs('$T/b')
np.save('$T/b/input_ids.npy', r.randint(0, 256, ($STEPS, 16, 16)).astype(np.int64))
np.save('$T/b/labels.npy', r.randint(0, 256, ($STEPS, 16, 16)).astype(np.int64))" || exit 1
for sc in gpipe 1f1b zb-h1; do
  d="$T/$sc"
  if ! "$BUILD/galvc" "$T/m.onnx" --batch 16 --seq 16 --train --pipeline-stages 4 --microbatches 8 --schedule "$sc" \
      --stage-cuts equal --target cpu --trace-plan "$d.plan.json" -o "$d/" >"$d.galvc" 2>&1; then
    echo "$sc: galvc failed: $(grep -m3 error "$d.galvc")"
    continue
  fi
  "$d/launch" --batches "$T/b" --steps "$STEPS" --trace "$d.trace.json" >"$d.log" 2>&1 || { echo "$sc: run failed"; tail -5 "$d.log"; continue; }
  python3 - "$sc" "$d.galvc" "$d.log" "$d.plan.json" "$d.trace.json" "$STEPS" <<'PY'
import json, re, sys
sc, gl, lg, plan, run, steps = sys.argv[1:6] + [int(sys.argv[6])]
S = 4
pred = {int(s): (int(b), int(n)) for s, b, n in re.findall(r"stage (\d+): \S+: predicted peak saved bytes (\d+) \((\d+) microbatches", open(gl).read())}
meas = {int(s): (int(b), int(n)) for s, b, n in re.findall(
    r"\[stage (\d+), rank \d+\]: saved activations in flight: peak (\d+) bytes \((\d+) microbatches", open(lg).read())}
losses = re.findall(r"^step \d+ loss (\S+)", open(lg).read(), re.M)
pd = json.load(open(plan))
rd = json.load(open(run))
ab = {"forward": "F", "backward": "B", "weight": "W"}
def stage_events(ev, s):
    es = [e for e in ev if e["pid"] == s and e["cat"] in ab]
    return sorted(es, key=lambda e: e["ts"])
print(f"== {sc}: predicted step {pd['otherData']['step_us']:.1f} us (timeline; DP formula {pd['otherData']['dp_step_us']:.1f} us), "
      f"losses {' '.join(losses)}")
per = len(stage_events(pd["traceEvents"], 0))
spans = []  # the run's step spans: from the first event of a step to the last, over all stages
rs = {s: stage_events(rd["traceEvents"], s) for s in range(S)}
for k in range(steps):
    evs = [e for s in range(S) for e in rs[s][k * per:(k + 1) * per]]
    spans.append((min(e["ts"] for e in evs), max(e["ts"] + e["dur"] for e in evs)))
print(f"   measured step (run trace, mean of {steps}): {sum(b - a for a, b in spans) / steps / 1e3:.3f} ms")
print("   stage  peak saved bytes predicted / measured (microbatches)   bubble predicted us / measured ms   run in plan order")
for s in range(S):
    pe = stage_events(pd["traceEvents"], s)
    order = " ".join(ab[e["cat"]] + e["name"].split("mb")[-1] for e in pe)
    ok = all([(e["cat"], e["name"]) for e in rs[s][k * per:(k + 1) * per]] == [(e["cat"], e["name"]) for e in pe] for k in range(steps))
    mb = sum(((spans[k][1] - spans[k][0]) - sum(e["dur"] for e in rs[s][k * per:(k + 1) * per])) for k in range(steps)) / steps
    p, m = pred.get(s, (None, None)), meas.get(s, (None, None))
    print(f"   {s}      {p[0]} / {m[0]} ({p[1]} / {m[1]}){'  EQUAL' if p == m else '  DIFFER'}"
          f"      {pd['otherData']['bubble_us'][s]:.1f} / {mb / 1e3:.3f}      {'yes' if ok else 'NO'}")
    print(f"          order: {order}")
PY
done
