#!/usr/bin/env bash
# The ZB-H1 pipeline schedule (docs/pipeline.md, "Schedules"): --schedule
# zb-h1 splits each stage's backward into its input-gradient entry B and a
# weight-gradient entry W (program_wgt.c: every stage that sends a gradient
# back; stage 0 sends none, its backward stays whole), W's deferred as
# galv_pipe_order says. Under GALV_COMM_SYNC=1 and timeout, 3 AdamW steps of
# GPT-2 tiny (2 layers, hidden 32, batch 8 x seq 8; one case with the
# embedding tied to the head, a parameter shared by the first and last
# stage, whose gradient W computes) equal the single-device program
# (tests/lib/same_training.py: losses rtol 1e-4, every weight rtol 1e-4 /
# atol 1e-5), pp = 2 and 4, B = 4 and 8, pp = 2 with stages of 2 ranks
# (tp: the pending sums W reads are recomputed in W, never stashed);
# tests/pipe_trace_check.py checks
# the cost model's timeline (every dependency, W(s, j) after B(s, j), the
# ZB-H1 order per stage, the bubbles) and that the run kept that order;
# per stage the runtime's measured peak of saved bytes equals galvc's
# prediction (galv_pipe_peak over the order with the entries' stash sizes)
# and its microbatches in flight are min(B, S); every stage rank's memory
# (what runtime/pipe.c allocated + its saved bytes' peak) within 5 % of the
# stage plan's (the stage cost's states, the W entry's constants and the
# entries' arena with the W split (its parameters in the stage's one weights
# buffer: galv_pipe_wgt_base > 0 in every W stage's table; with a copy of its
# own, 2026-12-05, stage 1 of pp = 2 held 467712 bytes, now 408448), + the saved bytes' peak with what W
# reads from B until W: "zb-h1: the stage plan's memory per rank"), and the
# allocation tracker's peak per rank (runtime/io.c galv_mem_*: every buffer
# the rank holds) within 5 % of the same figure. Without --schedule galvc
# chooses the schedule with the shortest predicted step (its line names
# each schedule's prediction). Bad input: an unknown schedule, zb-h1 with
# --pipeline-recompute: one error line each.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
STEPS=3
python3 "$SRC/examples/make_model.py" gpt2 -o "$T/gpt2.onnx" --layers 2 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null &&
  python3 "$SRC/examples/make_model.py" gpt2 -o "$T/tied.onnx" --layers 2 --hidden 32 --heads 4 --vocab 64 --tie-embeddings \
    --no-verify >/dev/null || { echo "FAIL make_model"; exit 1; }
python3 -c "
import numpy as np, os
r = np.random.RandomState(0)
os.makedirs('$T/b')
np.save('$T/b/input_ids.npy', r.randint(0, 64, ($STEPS, 8, 8)).astype(np.int64))
np.save('$T/b/labels.npy', r.randint(0, 64, ($STEPS, 8, 8)).astype(np.int64))" || { echo "FAIL batches"; exit 1; }
for fam in gpt2 tied; do
  timeout 300 "$BUILD/galvc" "$T/$fam.onnx" --input-shape input_ids=8x8 --train --target cpu -q -o "$T/one-$fam/" 2>"$T/err" ||
    { echo "FAIL single $fam: $(cat "$T/err")"; exit 1; }
  timeout 120 "$T/one-$fam/program" --batches "$T/b" --steps $STEPS -o "$T/one-$fam.w" >"$T/one-$fam.log" 2>"$T/err" ||
    { echo "FAIL single run $fam: $(cat "$T/err")"; exit 1; }
done

# model:S:B:schedule (auto: none given):extra galvc flags (+ for spaces)
# (pp=4 B=8 is the automatic choice's case: it must choose zb-h1 there; pp2 x dp2 ran alike, left out for time:
# GALV_PIPE_ZB_CASES="gpt2:2:4:zb-h1:--gpus+4+--strategy+dp")
CASES=${GALV_PIPE_ZB_CASES:-"gpt2:2:4:zb-h1 gpt2:4:4:zb-h1 tied:2:4:zb-h1 gpt2:4:8:auto gpt2:2:4:zb-h1:--gpus+4+--strategy+tp"}
for c in $CASES; do
  IFS=: read -r fam S B SC EXTRA <<<"$c"
  name="$fam pp=$S B=$B $SC${EXTRA:+ ${EXTRA//+/ }}"
  d="$T/$fam-$S-$B-$SC-${#EXTRA}"
  sflag=(--schedule "$SC")
  [ "$SC" = auto ] && sflag=(--schedule auto)
  if ! timeout 600 "$BUILD/galvc" "$T/$fam.onnx" --batch 8 --seq 8 --train --pipeline-stages "$S" --microbatches "$B" \
      "${sflag[@]}" ${EXTRA//+/ } --target cpu --trace-plan "$d.plan.json" -o "$d/" >"$d.galvc" 2>&1 </dev/null; then
    bad "$name: galvc: $(grep -m3 error "$d.galvc")"
    continue
  fi
  if [ "$SC" = auto ]; then # the choice: the schedule with the shortest predicted step
    if ! msg=$(python3 - "$d.galvc" <<'PY'
import re, sys
m = re.search(r"pipeline schedule (\S+) \(chosen: .*?:((?: \S+ [\d.]+ / [\d.]+ ms)+)\)", open(sys.argv[1]).read())
if not m: sys.exit("no 'pipeline schedule ... (chosen' line")
pred = {k: float(v) for k, v, _ in re.findall(r" (\S+) ([\d.]+) / ([\d.]+) ms", m.group(2))}
if sorted(pred) != ["1f1b", "gpipe", "zb-h1"] or pred[m.group(1)] != min(pred.values()) or m.group(1) != "zb-h1":
    sys.exit(f"chose {m.group(1)} of {pred}")
print(m.group(1), pred)
PY
    ); then
      bad "$name: $msg"
      continue
    fi
    ok "$name: chose $msg"
    SC=${msg%% *}
  fi
  for ((s = 0; s < S; s++)); do # the weight-gradient entry: every stage that sends a gradient back
    want=0
    [ "$SC" = zb-h1 ] && [ "$s" -gt 0 ] && want=1
    has=0
    [ -f "$d/stage$s/program_wgt.c" ] && has=1
    [ "$has" = "$want" ] || bad "$name: stage $s: program_wgt.c $([ "$want" = 1 ] && echo missing || echo unexpected)"
    if [ "$want" = 1 ] && ! grep -Eq 'galv_pipe_wgt_base = [1-9][0-9]*LL' "$d/stage$s/pipe_stage.c"; then
      bad "$name: stage $s: the weight-gradient entry does not share the weights buffer (galv_pipe_wgt_base)"
    fi
  done
  if ! timeout 120 "$d/launch" --batches "$T/b" --steps $STEPS -o "$d.w" --trace "$d.trace.json" >"$d.log" 2>"$T/err" </dev/null; then
    bad "$name: run: $(grep -m3 -i error "$T/err" "$d.log")"
    continue
  fi
  if msg=$(python3 - "$T/one-$fam.log" "$d.log" "$T/one-$fam.w" "$d.w" "$d.galvc" "$S" "$B" "$SC" "$SRC/tests/lib" 2>&1 <<'PY'
import sys, re
la, lb, wa, wb, gl, S, B, sc, lib = sys.argv[1:10]
S, B = int(S), int(B)
sys.path.insert(0, lib)
from same_training import check
same = check(la, lb, wa, wb, steps=list(range(3)))
pred = {int(s): (int(b), int(n)) for s, b, n in re.findall(
    r"stage (\d+): \S+: predicted peak saved bytes (\d+) \((\d+) microbatches", open(gl).read())}
meas = {}  # per stage: every rank's (bytes, microbatches)
for s, b, n in re.findall(r"\[stage (\d+), rank \d+(?:, stage rank \d+)?\]: saved activations in flight: peak (\d+) bytes "
                          r"\((\d+) microbatches", open(lb).read()):
    meas.setdefault(int(s), set()).add((int(b), int(n)))
if sorted(meas) != list(range(S)) or sorted(pred) != list(range(S)): sys.exit(f"stage lines: predicted {pred}, measured {meas}")
for s in range(S):
    if meas[s] != {pred[s]}: sys.exit(f"stage {s}: measured peak {meas[s]} != predicted {pred[s]} (bytes, microbatches)")
    meas[s] = pred[s]
    want = min(B, S) if sc == "zb-h1" else B if sc == "gpipe" else min(B, S - s)
    if meas[s][1] != want: sys.exit(f"stage {s}: {meas[s][1]} microbatches in flight, the {sc} order holds {want}")
log = open(lb).read()
got = {(int(s), int(r)): int(a) + int(p) for s, r, a, p in re.findall(
    r"\[stage (\d+), rank (\d+)[^\]]*\]: memory per rank: (\d+) bytes .* saved activations peak (\d+);", log)}
plan = {(int(s), int(r)): int(m) for s, r, m in re.findall(
    r"\[stage (\d+), rank (\d+)[^\]]*\]: zb-h1: the stage plan's memory per rank (\d+) bytes", log)}
if sc == "zb-h1":
    if not got or sorted(got) != sorted(plan) or sorted({k[0] for k in got}) != list(range(S)):
        sys.exit(f"memory lines: measured {sorted(got)}, the stage plan's {sorted(plan)}")
    dev = {k: 100 * (plan[k] - got[k]) / got[k] for k in got}
    w = max(dev, key=lambda k: abs(dev[k]))
    if abs(dev[w]) > 5:
        sys.exit(f"stage {w[0]} rank {w[1]}: memory {got[w]} bytes, the stage plan's {plan[w]}: {dev[w]:+.2f}% (bound 5%)")
    mem = "; memory per stage rank within 5 % of the stage plan: " + " ".join(
        f"s{k[0]}r{k[1]} {got[k]} / {plan[k]} ({dev[k]:+.1f}%)" for k in sorted(got))
    # the allocation tracker's peak (every buffer the rank holds) against the same stage plan
    trk = {(int(s), int(r)): (int(a), int(p)) for s, r, a, p in re.findall(
        r"\[stage (\d+), rank (\d+)[^\]]*\]: memory peak (\d+) bytes \(tracker\), the stage plan's peak (\d+) ", log)}
    if sorted(trk) != sorted(plan) or any(trk[k][1] != plan[k] for k in trk):
        sys.exit(f"tracker lines: {trk}, the stage plan's {plan}")
    tdev = {k: 100 * (trk[k][0] - trk[k][1]) / trk[k][1] for k in trk}
    w = max(tdev, key=lambda k: abs(tdev[k]))
    if abs(tdev[w]) > 5:
        sys.exit(f"stage {w[0]} rank {w[1]}: tracked memory peak {trk[w][0]} bytes, the stage plan's {trk[w][1]}: {tdev[w]:+.2f}% (bound 5%)")
    mem += f"; tracked peak {min(tdev.values()):+.1f} .. {max(tdev.values()):+.1f} %"
else:
    mem = ""
print(f"{same}; peak saved bytes measured = predicted: " + " ".join(f"{meas[s][0]} ({meas[s][1]} mb)" for s in range(S)) + mem)
PY
); then
    ok "$name: $msg"
  else
    bad "$name: $msg"
  fi
  if msg=$(python3 "$SRC/tests/pipe_trace_check.py" "$d.plan.json" "$d.trace.json" "$S" "$B" "$SC" 2>&1); then
    ok "$name: $msg"
  else
    bad "$name trace: $msg"
  fi
done
# a 1F1B timeline is not a ZB-H1 one
if [ -f "$T/gpt2-4-4-zb-h1-0.plan.json" ]; then
  if msg=$(python3 "$SRC/tests/pipe_trace_check.py" "$T/gpt2-4-4-zb-h1-0.plan.json" "$T/gpt2-4-4-zb-h1-0.trace.json" 4 4 1f1b 2>&1); then
    bad "zb-h1 timeline accepted as 1f1b: $msg"
  else
    ok "zb-h1 timeline checked as 1f1b: rejected (${msg:0:60}...)"
  fi
fi
# bad input: one error line, exit 2
for args in "--schedule zb-v" "--schedule zb-h1 --pipeline-recompute"; do
  # shellcheck disable=SC2086
  timeout 60 "$BUILD/galvc" "$T/gpt2.onnx" --batch 8 --seq 8 --train --pipeline-stages 2 --microbatches 4 $args --target cpu \
    -o "$T/bad/" >"$T/out" 2>"$T/err"
  rc=$?
  if [ "$rc" = 2 ] && [ "$(wc -l <"$T/err")" = 1 ] && grep -q "schedule" "$T/err"; then
    ok "$args: $(cat "$T/err")"
  else
    bad "$args: exit $rc, $(head -3 "$T/err")"
  fi
done
echo "pipeline_zb: $pass passed, $fail failed"
[ "$fail" = 0 ]
