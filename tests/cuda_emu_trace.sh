#!/usr/bin/env bash
# The CUDA target's --trace under emulation (docs/cuda-target.md, "Pipeline stages"; docs/pipeline.md, "Pipeline
# training"): CUDA pipeline stages run runtime/pipe.c's schedule through the device hooks, and its --trace (one
# Chrome "X" event per forward, backward, weight-gradient entry and receive, per stage and microbatch, gathered on
# rank 0) is written there as on the CPU target. Tiny GPT-2 (2 layers, hidden 32, vocab 64), batch 8 x 8, pp=2,
# B=4 microbatches, 2 AdamW steps, each case compiled --target cuda with galvc's --trace-plan (the cost model's
# timeline), built with `make emu` per stage (program.cu and runtime/cuda/ over the CPU execution layer, NCCL over
# MPI) and run with --trace under GALV_COMM_SYNC=1:
#   1f1b, zb-h1   tests/pipe_trace_check.py: the plan's timeline valid (the schedule's order per stage, the
#                 dependencies, step = makespan) and the run's events, per stage, in the plan's order in every step;
#                 the same checker rejects the 1f1b run read as GPipe's order (it checks something);
#   the trace's communication events ("recv mbJ": the group of the sends of the previous entry's results and the
#   receives of the next entry's inputs): on both stages, each before the entry of its microbatch (or after the
#   step's last entry, whose results it sends), no event of a stage overlapping another.
# The one-program CUDA training step's --trace (its compute and communication streams): tests/cuda_emu_step_trace.sh.
# Usage: cuda_emu_trace.sh BUILD_DIR
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$SRC/tests/lib/require.sh"
require_cmd "g++ (build-essential)" g++
require_cmd "OpenMPI (mpicc, mpirun)" mpicc mpirun
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export OPENBLAS_NUM_THREADS=1
. "$SRC/tests/lib/mpi_env.sh"
fail=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fail=1; }
t0=$(date +%s)
m="$T/g.onnx"
python3 "$SRC/examples/make_model.py" gpt2 -o "$m" --layers 2 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null ||
  { echo "FAIL make_model"; exit 1; }
python3 -c "
import numpy as np, os
r = np.random.RandomState(0)
os.makedirs('$T/b')
np.save('$T/b/input_ids.npy', r.randint(0, 64, (2, 8, 8)).astype(np.int64))
np.save('$T/b/labels.npy', r.randint(0, 64, (2, 8, 8)).astype(np.int64))" || { echo "FAIL batches"; exit 1; }

for SC in ${GALV_CUDA_TRACE_CASES:-1f1b zb-h1}; do
  d="$T/$SC"
  if ! timeout 300 nice "$BUILD/galvc" "$m" --batch 8 --seq 8 --train --pipeline-stages 2 --microbatches 4 --schedule "$SC" \
       --trace-plan "$d.plan.json" --target cuda --no-build -q -o "$d/" </dev/null >"$d.gen" 2>&1; then
    bad "$SC: galvc: $(grep -m3 error "$d.gen")"
    continue
  fi
  nice make -s -C "$d/stage0" emu >"$d.make0" 2>&1 &
  if ! nice make -s -C "$d/stage1" emu >"$d.make1" 2>&1; then wait; bad "$SC: make emu stage1: $(tail -n 5 "$d.make1")"; continue; fi
  if ! wait $!; then bad "$SC: make emu stage0: $(tail -n 5 "$d.make0")"; continue; fi
  if ! GALV_PROGRAM=program-emu GALV_COMM_SYNC=1 timeout 300 "$d/launch" --batches "$T/b" --steps 2 --trace "$d.trace.json" \
       </dev/null >"$d.log" 2>&1; then
    bad "$SC: run: $(grep -m3 -i error "$d.log")"
    continue
  fi
  if r=$(python3 "$SRC/tests/pipe_trace_check.py" "$d.plan.json" "$d.trace.json" 2 4 "$SC" 2>&1); then ok "$SC (cuda emu): $(tr '\n' ' ' <<<"$r")"
  else bad "$SC (cuda emu) trace: $r"; fi
  if [ "$SC" = 1f1b ]; then
    if r=$(python3 "$SRC/tests/pipe_trace_check.py" "$d.plan.json" "$d.trace.json" 2 4 gpipe 2>&1); then bad "1f1b trace accepted as gpipe: $r"
    else ok "1f1b (cuda emu) trace read as gpipe: rejected (${r:0:60}...)"; fi
  fi
  if r=$(python3 - "$d.trace.json" <<'PY'
import json, sys
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X"]
out = []
for s in (0, 1):
    es = sorted((e for e in ev if e["pid"] == s), key=lambda e: e["ts"])
    comm = [e for e in es if e["name"].startswith("recv")]
    if not comm: sys.exit(f"stage {s}: no communication events")
    for x, y in zip(es, es[1:]):
        if y["ts"] < x["ts"] + x["dur"] - 1.5e-3: sys.exit(f"stage {s}: {x['name']} and {y['name']} overlap")
    mb = lambda e: e["name"].split()[-1]
    prev = None
    for i, e in enumerate(es):
        if not e["name"].startswith("recv"):
            prev = e
            continue
        nxt = es[i + 1] if i + 1 < len(es) else None
        if nxt and not nxt["name"].startswith("recv"):
            if mb(nxt) != mb(e): sys.exit(f"stage {s}: {e['name']} followed by {nxt['name']}")
        elif prev is None or mb(prev) != mb(e): sys.exit(f"stage {s}: {e['name']} after {prev and prev['name']}, before no entry")
    out.append(f"stage {s}: {len(comm)} communication groups")
print(", ".join(out) + "; each before the entry of its microbatch or after the step's last one, nothing overlapping")
PY
  ); then ok "$SC (cuda emu) communication: $r"; else bad "$SC (cuda emu) communication: $r"; fi
  echo "     $SC: $(($(date +%s) - t0)) s"
done

echo "     total: $(($(date +%s) - t0)) s"
[ $fail = 0 ] && echo "PASS cuda_emu_trace"
exit $fail
