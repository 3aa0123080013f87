#!/bin/bash
# Pipeline training schedules side by side (docs/pipeline.md, "Schedules"):
# GPT-2 (4 layers, hidden 64, 4 heads, vocab 256), batch 16 x seq 16, pp =
# 4 (one MPI rank per stage), 8 microbatches, 3 AdamW steps, under GPipe,
# 1F1B, ZB-H1 and interleaved 1F1B with V = 2 (8 stages on the 4 device
# groups, one MPI rank per stage, a group's two ranks taking turns). Per
# schedule and stage (interleaved: per device group) it prints:
#   - peak saved bytes in flight: galvc's prediction (galv_pipe_peak over the
#     schedule's order with the stage entries' stash sizes; interleaved:
#     galv_pipe_peak_group over the group's order and its stages' sizes) and
#     the runtime's measured peak (its counter of live stash buffers; the
#     group's counters passed along with its baton), with the microbatches
#     (interleaved: chunk microbatches) held at the peak;
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
for sc in gpipe 1f1b zb-h1 interleaved; do
  d="$T/$sc"
  vflag=()
  [ "$sc" = interleaved ] && vflag=(--virtual-stages 2)
  if ! "$BUILD/galvc" "$T/m.onnx" --batch 16 --seq 16 --train --pipeline-stages 4 --microbatches 8 --schedule "$sc" "${vflag[@]}" \
      --stage-cuts equal --target cpu --trace-plan "$d.plan.json" -o "$d/" >"$d.galvc" 2>&1; then
    echo "$sc: galvc failed: $(grep -m3 error "$d.galvc")"
    continue
  fi
  "$d/launch" --batches "$T/b" --steps "$STEPS" --trace "$d.trace.json" >"$d.log" 2>&1 || { echo "$sc: run failed"; tail -5 "$d.log"; continue; }
  python3 - "$sc" "$d.galvc" "$d.log" "$d.plan.json" "$d.trace.json" "$STEPS" <<'PY'
import json, re, sys
sc, gl, lg, plan, run, steps = sys.argv[1:6] + [int(sys.argv[6])]
pd = json.load(open(plan))
rd = json.load(open(run))
S, G = pd["otherData"]["stages"], pd["otherData"].get("groups", pd["otherData"]["stages"])
il = sc == "interleaved"  # per device group (its stages' events); else per stage
if il:
    pred = {int(s): (int(b), int(n)) for s, b, n in re.findall(
        r"device group (\d+) \(stages [\d,]+\): interleaved: predicted peak saved bytes (\d+) \((\d+) chunk", open(gl).read())}
    meas = {int(s): (int(b), int(n)) for s, b, n in re.findall(
        r"device group (\d+) \(stages [\d,]+\): saved activations in flight: peak (\d+) bytes \((\d+) chunk", open(lg).read())}
else:
    pred = {int(s): (int(b), int(n)) for s, b, n in re.findall(r"stage (\d+): \S+: predicted peak saved bytes (\d+) \((\d+) microbatches", open(gl).read())}
    meas = {int(s): (int(b), int(n)) for s, b, n in re.findall(
        r"\[stage (\d+), rank \d+\]: saved activations in flight: peak (\d+) bytes \((\d+) microbatches", open(lg).read())}
losses = re.findall(r"^step \d+ loss (\S+)", open(lg).read(), re.M)
ab = {"forward": "F", "backward": "B", "weight": "W"}
def stage_events(ev, g):  # group g's events (its stages' first ranks), by start
    es = [e for e in ev if e["pid"] % G == g and e["cat"] in ab]
    if es:
        es = [e for e in es if e["tid"] == min(x["tid"] for x in es if x["pid"] == e["pid"])]
    return sorted(es, key=lambda e: e["ts"])
bubbles = pd["otherData"]["group_bubble_us"]
od = pd["otherData"]
print(f"== {sc}: predicted step {od['predicted_step_us']:.1f} us (timeline {od['step_us']:.1f} + once per step {od['sync_us']:.1f} us; "
      f"DP formula {od['dp_step_us']:.1f} us), "
      f"losses {' '.join(losses)}")
per = len(stage_events(pd["traceEvents"], 0))
spans = []  # the run's step spans: from the first event of a step to the last, over all stages
rs = {s: stage_events(rd["traceEvents"], s) for s in range(G)}
for k in range(steps):
    evs = [e for s in range(G) for e in rs[s][k * per:(k + 1) * per]]
    spans.append((min(e["ts"] for e in evs), max(e["ts"] + e["dur"] for e in evs)))
print(f"   measured step (run trace, mean of {steps}): {sum(b - a for a, b in spans) / steps / 1e3:.3f} ms")
print(f"   {'group' if il else 'stage'}  peak saved bytes predicted / measured (microbatches)   bubble predicted us / measured ms   run in plan order")
for s in range(G):
    pe = stage_events(pd["traceEvents"], s)
    # interleaved: F/B, the chunk (stage // G), the microbatch
    order = " ".join(ab[e["cat"]] + (str(e["pid"] // G) if il else "") + e["name"].split("mb")[-1] for e in pe)
    ok = all([(e["cat"], e["pid"], e["name"]) for e in rs[s][k * per:(k + 1) * per]] == [(e["cat"], e["pid"], e["name"]) for e in pe]
             for k in range(steps))
    mb = sum(((spans[k][1] - spans[k][0]) - sum(e["dur"] for e in rs[s][k * per:(k + 1) * per])) for k in range(steps)) / steps
    p, m = pred.get(s, (None, None)), meas.get(s, (None, None))
    print(f"   {s}      {p[0]} / {m[0]} ({p[1]} / {m[1]}){'  EQUAL' if p == m else '  DIFFER'}"
          f"      {bubbles[s]:.1f} / {mb / 1e3:.3f}      {'yes' if ok else 'NO'}")
    print(f"          order: {order}")
PY
done
