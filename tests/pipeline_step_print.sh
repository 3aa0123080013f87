#!/usr/bin/env bash
# The pipeline's printed step is the whole predicted step, the one plan.json
# records (docs/pipeline.md, "The predicted step"): a weight-free GPT-2 tiny
# (examples/make_model.py defaults, --no-weights) at batch 8 x seq 16,
# --train --pipeline-stages 2 --gpus 4 --strategy dp --plan-only, stages of
# dp = 2 without ZeRO, with --pipeline-zero 1 and 2, under --schedule 1f1b
# (the schedule's part: the stage DP's formula) and --schedule auto (the
# chosen schedule's timeline), and --microbatches auto ("pipeline auto:").
# For each:
#   - "pipeline: S stages, B microbatches, step X ms (schedule Y ms + once per
#     step Z ms; ...)" and "pipeline: predicted step X ms = schedule Y ms +
#     once-per-step sync s ms + ZeRO w ms + update u ms" print plan.json's
#     predicted_step_ns as X, its schedule_ns as Y and its sync_ns as Z
#     (within the printing precision, 0.0005 ms), predicted_step_ns =
#     schedule_ns + sync_ns, and the parts s + w + u are Z;
#   - the once-per-step part is there (sync_ns > 0): without ZeRO the dp
#     gradient all-reduce (s > 0, w = 0), with ZeRO its collectives (w > 0,
#     one of the stages' "ZeRO-N: ... W ms per step" lines);
#   - under --schedule 1f1b the schedule's part is the stage DP's formula
#     (sum + (B-1) x max), so the step counts each once-per-step collective
#     once (before, the gradient all-reduce / ZeRO's collectives were in both
#     the key and the once-per-step part);
#   - "pipeline auto: ..., predicted step X ms (schedule Y ms + once per step
#     Z ms; ...)" is the same X.
# --report-cost with the stages compiled (-q): "predicted step: N ns" is
# predicted_step_ns and "memory per device: the largest stage's ... total N"
# the largest stage_bytes. And the one program (--pipeline-stages 1): "plan:
# predicted step X ms" is plan.json's predicted.step_ns.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }

m="$T/gpt2.onnx"
python3 "$SRC/examples/make_model.py" gpt2 -o "$m" --no-weights --no-verify >/dev/null || { echo "FAIL make_model"; exit 1; }

check() { # NAME KIND(dp|zero|auto) FORMULA(1: the schedule is the DP's formula) GALVC-OPTIONS..
  local name=$1 kind=$2 formula=$3
  shift 3
  if ! timeout 300 "$BUILD/galvc" "$m" --no-weights --train --batch 8 --seq 16 --pipeline-stages 2 --gpus 4 --strategy dp \
    --plan-only --plan-out "$T/$name.json" "$@" >"$T/$name.out" 2>"$T/$name.err"; then
    bad "$name: galvc failed: $(grep -m2 error "$T/$name.err")"
    return
  fi
  if msg=$(python3 - "$T/$name.out" "$T/$name.err" "$T/$name.json" "$kind" "$formula" 2>&1 <<'PY'
import json, re, sys
out = open(sys.argv[1]).read() + open(sys.argv[2]).read()
p = json.load(open(sys.argv[3]))["pipeline"]
kind, formula = sys.argv[4], sys.argv[5] == "1"
bad = []
def near(a, ns, what):
    if abs(a - ns / 1e6) > 0.0005: bad.append(f"{what} {a} ms, plan.json {ns} ns")
full = p["predicted_step_ns"]
# first the printed steps alone, whatever follows them on their lines
for what, rx in (("step", r"^pipeline: \d+ stages, \d+ microbatches, step ([0-9.]+) ms"), ("predicted step", r"^pipeline: predicted step ([0-9.]+) ms")):
    v = re.search(rx, out, re.M)
    if not v: bad.append(f"no '{what}' line")
    else: near(float(v.group(1)), full, "printed " + what)
if bad: sys.exit("; ".join(bad))
sched, sync = p.get("schedule_ns", -1), p["sync_ns"]
if full != sched + sync: bad.append(f"predicted_step_ns {full} != schedule_ns {sched} + sync_ns {sync}")
if sync <= 0: bad.append(f"sync_ns {sync}: no once-per-step part")
l1 = re.search(r"^pipeline: \d+ stages, \d+ microbatches, step ([0-9.]+) ms \(schedule ([0-9.]+) ms \+ once per step ([0-9.]+) ms; "
               r"the stage DP's formula: sum [0-9.]+ ms \+ \(B-1\) x max [0-9.]+ ms = ([0-9.]+) ms\)$", out, re.M)
l2 = re.search(r"^pipeline: predicted step ([0-9.]+) ms = schedule ([0-9.]+) ms \+ once-per-step sync ([0-9.]+) ms \+ ZeRO ([0-9.]+) ms "
               r"\+ update ([0-9.]+) ms \(the once-per-step part: stage \d+'s\)$", out, re.M)
if not l1 or not l2: sys.exit(f"no plan lines: {l1} {l2}: " + " | ".join(l for l in out.splitlines() if l.startswith("pipeline")))
x, y, z, dpf = map(float, l1.groups())
x2, y2, s, w, u = map(float, l2.groups())
near(x, full, "step"); near(x2, full, "predicted step"); near(y, sched, "schedule"); near(y2, sched, "schedule")
near(z, sync, "once per step")
if abs(s + w + u - sync / 1e6) > 0.0015: bad.append(f"parts {s} + {w} + {u} ms, sync_ns {sync}")
if formula and abs(y - dpf) > 0.0005: bad.append(f"schedule {y} ms, the stage DP's formula {dpf} ms")
zl = [float(v) for v in re.findall(r"^  stage \d+: ZeRO-\d: .*: ([0-9.]+) ms per step$", out, re.M)]
if kind == "zero" and (w <= 0 or not any(abs(w - v) <= 0.0005 for v in zl)): bad.append(f"ZeRO {w} ms, the stages' {zl}")
if kind == "dp" and (w != 0 or s <= 0 or zl): bad.append(f"dp stages: sync {s} ms, ZeRO {w} ms, ZeRO lines {zl}")
a = re.search(r"^pipeline auto: .* predicted step ([0-9.]+) ms \(schedule ([0-9.]+) ms \+ once per step ([0-9.]+) ms; ", out, re.M)
if kind == "auto":
    if not a: bad.append("no 'pipeline auto:' line")
    else: near(float(a.group(1)), full, "pipeline auto's step"); near(float(a.group(2)), sched, "pipeline auto's schedule")
if bad: sys.exit("; ".join(bad))
print(f"step {x} ms = schedule {y} + sync {s} + ZeRO {w} + update {u} ms; plan.json {full} = {sched} + {sync} ns")
PY
  ); then ok "$name: $msg"; else bad "$name: $msg"; fi
}

check dp dp 1 --microbatches 4 --schedule 1f1b
check zero1 zero 1 --microbatches 4 --schedule 1f1b --pipeline-zero 1
check zero2 zero 1 --microbatches 4 --schedule 1f1b --pipeline-zero 2
check sched-auto dp 0 --microbatches 4 --schedule auto
check zero2-sched-auto zero 0 --microbatches 4 --schedule auto --pipeline-zero 2
check mb-auto auto 1 --microbatches auto --schedule 1f1b

# --report-cost with a pipeline (a program written: the model with weights, -q): the whole step and the largest
# stage's memory on stdout in the one program's form, plan.json's predicted_step_ns and largest stage_bytes
mw="$T/gpt2w.onnx"
python3 "$SRC/examples/make_model.py" gpt2 -o "$mw" --no-verify >/dev/null || { echo "FAIL make_model"; exit 1; }
for z in 0 1; do
  if timeout 300 "$BUILD/galvc" "$mw" --train --batch 8 --seq 16 --pipeline-stages 2 --gpus 4 --strategy dp --microbatches 4 \
    --schedule 1f1b --pipeline-zero $z --target cpu --no-build -o "$T/rc$z/" --plan-out "$T/rc$z.json" --report-cost -q \
    >"$T/rc$z.out" 2>"$T/rc$z.err"; then
    if msg=$(python3 - "$T/rc$z.out" "$T/rc$z.json" 2>&1 <<'PY'
import json, re, sys
out = open(sys.argv[1]).read()
p = json.load(open(sys.argv[2]))["pipeline"]
s = re.search(r"^predicted step: (\d+) ns = [0-9.]+ ms \(pipeline of 2 stages, 4 microbatches, 1f1b: schedule ([0-9.]+) ms \+ "
              r"once-per-step sync ([0-9.]+) ms \+ ZeRO ([0-9.]+) ms \+ update ([0-9.]+) ms", out, re.M)
m = re.search(r"^memory per device: the largest stage's \(stage \d+, 2 devices\) total (\d+) of (\d+) bytes$", out, re.M)
if not s or not m: sys.exit("no --report-cost lines: " + out[:300])
if int(s.group(1)) != p["predicted_step_ns"] or abs(float(s.group(2)) - p["schedule_ns"] / 1e6) > 0.0005:
    sys.exit(f"--report-cost step {s.group(1)} ns, schedule {s.group(2)} ms; plan.json {p['predicted_step_ns']}, {p['schedule_ns']}")
if int(m.group(1)) != max(p["stage_bytes"]): sys.exit(f"--report-cost memory {m.group(1)}, plan.json stage_bytes {p['stage_bytes']}")
print(f"predicted step: {s.group(1)} ns, memory {m.group(1)} bytes (plan.json's)")
PY
    ); then ok "--report-cost, --pipeline-zero $z: $msg"; else bad "--report-cost, --pipeline-zero $z: $msg"; fi
  else
    bad "--report-cost, --pipeline-zero $z: galvc failed: $(grep -m2 error "$T/rc$z.err")"
  fi
done

# one program: the report's step is plan.json's
if timeout 300 "$BUILD/galvc" "$m" --no-weights --train --batch 8 --seq 16 --gpus 4 --pipeline-stages 1 --plan-only \
  --plan-out "$T/one.json" >"$T/one.out" 2>"$T/one.err"; then
  st=$(sed -n 's/^plan: predicted step \([0-9.]*\) ms .*/\1/p' "$T/one.out" "$T/one.err" | head -1)
  ns=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["predicted"]["step_ns"])' "$T/one.json")
  if [ -n "$st" ] && python3 -c 'import sys; sys.exit(abs(float(sys.argv[1]) - int(sys.argv[2]) / 1e6) > 0.0005)' "$st" "$ns"; then
    ok "one program: predicted step $st ms, plan.json step_ns $ns"
  else
    bad "one program: printed '$st' ms, plan.json step_ns $ns"
  fi
else
  bad "one program: galvc failed: $(grep -m2 error "$T/one.err")"
fi
echo "pipeline_step_print: $pass passed, $fail failed"
[ "$fail" = 0 ]
