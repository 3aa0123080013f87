#!/usr/bin/env bash
# Pipeline training (docs/pipeline.md, "Pipeline training"): galvc --train
# --pipeline-stages S --microbatches B --schedule gpipe|1f1b writes one
# training program per stage; under GALV_COMM_SYNC=1 (synchronous sends: an
# order that could deadlock times out) and `timeout`, 2 AdamW steps of GPT-2
# tiny (2 layers, hidden 32, batch 8 x seq 8) print the single-device
# program's losses and leave its weights (rtol 1e-4, atol 1e-5), for pp=2
# (B = 2, 4), pp=3 and pp=4 (B = 4), both schedules, and pp=2 B=4 1F1B with
# --pipeline-recompute (one combined program per stage); the earlier stages
# have a backward entry (program_bwd.c) exactly when stashing. Per stage the runtime
# prints the peak bytes of the saved values in flight (the stashes): 1F1B's is below
# GPipe's on every stage with S - s < B and equal elsewhere (GPipe holds B
# microbatches, 1F1B min(B, S - s)), as planner/pipeline.c's memory model
# says. tests/pipe_trace_check.py: galvc's --trace-plan training timeline
# (forward and backward per stage and microbatch, the runtime's order, the
# dependencies, step = makespan) and the run's --trace in the same order.
# More stages than layers (7 GPipe stages over the 2 layers' finer groups):
# a cut inside an attention chain sends the fused attention's output (its
# stage program once returned the unfused chain's value, gone), and GPipe
# takes a value sent past the next stage (a residual around a stage);
# 8 stages under 1F1B, refused before (a value skipping a stage deadlocked
# its grouped transfers), train too: training stages relay such a value
# through the stages between (tests/pipeline_relay.sh).
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
CASES=${GALV_PIPE_TRAIN_CASES:-2:2:gpipe 2:4:gpipe 2:2:1f1b 2:4:1f1b 3:4:gpipe 3:4:1f1b 4:4:gpipe 4:4:1f1b 2:4:1f1b:recompute 7:8:gpipe 8:8:1f1b}
m="$T/gpt2.onnx"
python3 "$SRC/examples/make_model.py" gpt2 -o "$m" --layers 2 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null ||
  { echo "FAIL make_model"; exit 1; }
python3 -c "
import numpy as np, os
r = np.random.RandomState(0)
os.makedirs('$T/b')
np.save('$T/b/input_ids.npy', r.randint(0, 64, (2, 8, 8)).astype(np.int64))
np.save('$T/b/labels.npy', r.randint(0, 64, (2, 8, 8)).astype(np.int64))" || { echo "FAIL batches"; exit 1; }
timeout 300 "$BUILD/galvc" "$m" --input-shape input_ids=8x8 --train --target cpu -q -o "$T/one/" 2>"$T/err" ||
  { echo "FAIL single: $(cat "$T/err")"; exit 1; }
timeout 120 "$T/one/program" --batches "$T/b" --steps 2 -o "$T/one.w" >"$T/one.log" 2>"$T/err" ||
  { echo "FAIL single run: $(cat "$T/err")"; exit 1; }
for c in $CASES; do
  IFS=: read -r S B SC MODE <<<"$c"
  d="$T/pp$S-$B-$SC${MODE:+-$MODE}"
  if ! timeout 600 "$BUILD/galvc" "$m" --batch 8 --seq 8 --train --pipeline-stages "$S" --microbatches "$B" --schedule "$SC" \
      ${MODE:+--pipeline-$MODE} --trace-plan "$d.plan.json" -q -o "$d/" 2>"$T/err"; then
    bad "pp=$S B=$B $SC${MODE:+ $MODE}: galvc: $(head -3 "$T/err")"
    continue
  fi
  # the earlier stages have a backward entry (stash) unless --pipeline-recompute; the last stage never
  for ((s = 0; s < S; s++)); do
    want=1
    [ "$s" = $((S - 1)) ] || [ -n "$MODE" ] && want=0
    has=0
    [ -f "$d/stage$s/program_bwd.c" ] && has=1
    [ "$has" = "$want" ] || bad "pp=$S B=$B $SC${MODE:+ $MODE}: stage $s: program_bwd.c $([ "$want" = 1 ] && echo missing || echo unexpected)"
  done
  if ! timeout 120 "$d/launch" --batches "$T/b" --steps 2 -o "$d.w" --trace "$d.trace.json" >"$d.log" 2>"$T/err"; then
    bad "pp=$S B=$B $SC${MODE:+ $MODE}: run: $(grep -m3 -i error "$T/err" "$d.log")"
    continue
  fi
  if msg=$(python3 - "$T/one.log" "$d.log" "$T/one.w" "$d.w" "$d.trace.json" "$S" "$B" 2>&1 <<'PY'
import sys, os, re, json, numpy as np
la, lb, wa, wb, tr, S, B = sys.argv[1:6] + [int(sys.argv[6]), int(sys.argv[7])]
def losses(p): return [float(x) for x in re.findall(r"^step \d+ loss (\S+)", open(p).read(), re.M)]
a, b = losses(la), losses(lb)
if len(a) != 2 or len(b) != 2 or not np.allclose(b, a, rtol=1e-4, atol=0):
    sys.exit(f"losses {b} != single device {a}")
worst, n = 0.0, 0
for f in sorted(os.listdir(wa)):
    if not os.path.exists(os.path.join(wb, f)): sys.exit(f"no final weight {f}")
    x, y = np.load(os.path.join(wa, f)), np.load(os.path.join(wb, f))
    if x.shape != y.shape or not np.allclose(y, x, rtol=1e-4, atol=1e-5):
        sys.exit(f"{f}: max abs diff {np.abs(x - y).max() if x.shape == y.shape else y.shape}")
    worst, n = max(worst, float(np.abs(x - y).max())), n + 1
ev = json.load(open(tr))["traceEvents"]
fw = {(e["pid"], e["name"]) for e in ev if e["name"].startswith("forward")}
bw = {(e["pid"], e["name"]) for e in ev if e["name"].startswith("backward")}
if len(fw) != S * B or len(bw) != S * B: sys.exit(f"trace: {len(fw)} forward, {len(bw)} backward events, expected {S * B}")
print(f"losses {b[0]:.8f} {b[1]:.8f} == single device, {n} weights max abs diff {worst:.2g}, trace ok")
PY
); then
    ok "pp=$S B=$B $SC${MODE:+ $MODE}: $msg"
  else
    bad "pp=$S B=$B $SC${MODE:+ $MODE}: $msg"
  fi
  # the cost model's training timeline: the runtime's order, the dependencies, step = makespan; the run in the same order
  if msg=$(python3 "$SRC/tests/pipe_trace_check.py" "$d.plan.json" "$d.trace.json" "$S" "$B" "$SC" 2>&1); then
    ok "pp=$S B=$B $SC${MODE:+ $MODE}: $msg"
  else
    bad "pp=$S B=$B $SC${MODE:+ $MODE} trace: $msg"
  fi
done
# the checker rejects a timeline in the other schedule's order
if [ -f "$T/pp4-4-gpipe.plan.json" ] && [ -f "$T/pp4-4-gpipe.trace.json" ]; then
  if msg=$(python3 "$SRC/tests/pipe_trace_check.py" "$T/pp4-4-gpipe.plan.json" "$T/pp4-4-gpipe.trace.json" 4 4 1f1b 2>&1); then
    bad "pp=4 gpipe timeline accepted as 1f1b: $msg"
  else
    ok "pp=4 gpipe timeline checked as 1f1b: rejected (${msg:0:60}...)"
  fi
fi
# 1F1B's peak saved bytes per stage below GPipe's where S - s < B, equal elsewhere
# and the microbatches in flight at the peak as predicted: GPipe B, 1F1B min(B, S - s)
for S in 2 3 4; do
  g="$T/pp$S-4-gpipe.log" f="$T/pp$S-4-1f1b.log"
  [ -f "$g" ] && [ -f "$f" ] || continue
  if msg=$(python3 - "$g" "$f" "$S" 2>&1 <<'PY'
import sys, re
B = 4
def peaks(p):
    return {int(s): (int(b), int(n)) for s, b, n in re.findall(
        r"\[stage (\d+), rank \d+\]: saved activations in flight: peak (\d+) bytes \((\d+) microbatches", open(p).read())}
g, f, S = peaks(sys.argv[1]), peaks(sys.argv[2]), int(sys.argv[3])
if sorted(g) != list(range(S)) or sorted(f) != list(range(S)): sys.exit(f"missing stage lines {g} {f}")
for s in range(S):
    if (S - s < B and not f[s][0] < g[s][0]) or (S - s >= B and f[s][0] != g[s][0]): sys.exit(f"stage {s}: 1f1b {f[s][0]} vs gpipe {g[s][0]}")
    if g[s][1] != B or f[s][1] != min(B, S - s):
        sys.exit(f"stage {s}: {g[s][1]} (gpipe) / {f[s][1]} (1f1b) microbatches in flight, predicted {B} / {min(B, S - s)}")
print(", ".join(f"stage {s} {f[s][0]} {'<' if f[s][0] < g[s][0] else '='} {g[s][0]} ({f[s][1]} vs {g[s][1]} mb)" for s in range(S)))
PY
); then ok "pp=$S B=4 peak saved bytes 1f1b vs gpipe: $msg"; else bad "pp=$S B=4 peak memory: $msg"; fi
done
echo "pipeline_train: $pass passed, $fail failed"
[ "$fail" = 0 ]
