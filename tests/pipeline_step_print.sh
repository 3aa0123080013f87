#!/usr/bin/env bash
# The pipeline's printed step is the whole predicted step, the one plan.json
# records (docs/pipeline.md, "The predicted step"): a weight-free GPT-2 tiny
# (examples/make_model.py defaults, --no-weights) at batch 8 x seq 16,
# --train --pipeline-stages 2 --gpus 4 --strategy dp --plan-only, stages of
# dp = 2 without ZeRO, with --pipeline-zero 1 and 2, under --schedule 1f1b,
# zb-h1 and auto, and --microbatches auto ("pipeline auto:").
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
#   - the schedule's part is the timeline's makespan under the plan's
#     schedule (--trace-plan's step_us; its predicted_step_us is the step),
#     whether --schedule gave the schedule or auto chose it, so the step
#     counts each once-per-step collective once (before, the gradient
#     all-reduce / ZeRO's collectives were in both the key and the
#     once-per-step part); under 1F1B on these two stages it is the stage
#     DP's formula (sum + (B-1) x max);
#   - "pipeline auto: ..., predicted step X ms (schedule Y ms + once per step
#     Z ms; ...)" is the same X.
# A schedule given is priced as --schedule auto prices it: GPT-2 tiny, 4
# stages of one device, 8 microbatches (auto chooses ZB-H1): --schedule zb-h1
# prints and records auto's step, its schedule's part the ZB-H1 timeline's
# makespan, below the stage DP's formula (before, a given schedule's part was
# the formula: 0.656 ms against the timeline's 0.574 ms).
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
    --plan-only --plan-out "$T/$name.json" --trace-plan "$T/$name.trace.json" "$@" >"$T/$name.out" 2>"$T/$name.err"; then
    bad "$name: galvc failed: $(grep -m2 error "$T/$name.err")"
    return
  fi
  if msg=$(python3 - "$T/$name.out" "$T/$name.err" "$T/$name.json" "$kind" "$formula" "$T/$name.trace.json" 2>&1 <<'PY'
import json, re, sys
out = open(sys.argv[1]).read() + open(sys.argv[2]).read()
p = json.load(open(sys.argv[3]))["pipeline"]
kind, formula = sys.argv[4], sys.argv[5] == "1"
tr = json.load(open(sys.argv[6]))["otherData"]
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
if abs(tr["step_us"] * 1e3 - sched) > 1: bad.append(f"schedule_ns {sched}, the {tr['schedule']} timeline's makespan {tr['step_us']} us")
if abs(tr["predicted_step_us"] * 1e3 - full) > 1: bad.append(f"predicted_step_ns {full}, --trace-plan's {tr['predicted_step_us']} us")
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
check zb dp 0 --microbatches 4 --schedule zb-h1

# a schedule given is priced by the timeline auto prices it by (4 stages of one device, 8 microbatches)
for s in zb-h1 auto; do
  timeout 300 "$BUILD/galvc" "$m" --no-weights --train --batch 8 --seq 16 --pipeline-stages 4 --microbatches 8 --schedule $s \
    --plan-only --plan-out "$T/p4-$s.json" --trace-plan "$T/p4-$s.trace.json" >"$T/p4-$s.out" 2>&1 ||
    bad "pp = 4 --schedule $s: galvc failed: $(grep -m2 error "$T/p4-$s.out")"
done
if msg=$(python3 - "$T/p4-zb-h1.json" "$T/p4-auto.json" "$T/p4-zb-h1.trace.json" "$T/p4-zb-h1.out" 2>&1 <<'PY'
import json, re, sys
z, a = (json.load(open(f))["pipeline"] for f in sys.argv[1:3])
tr, out = json.load(open(sys.argv[3]))["otherData"], open(sys.argv[4]).read()
bad = []
if a.get("schedule") != "zb-h1": bad.append(f"auto chose {a.get('schedule')}, not zb-h1")
if z["predicted_step_ns"] != a["predicted_step_ns"] or z["schedule_ns"] != a["schedule_ns"]:
    bad.append(f"--schedule zb-h1 step {z['predicted_step_ns']} = {z['schedule_ns']} + {z['sync_ns']} ns, auto's {a['predicted_step_ns']} = "
               f"{a['schedule_ns']} + {a['sync_ns']} ns")
if abs(tr["step_us"] * 1e3 - z["schedule_ns"]) > 1: bad.append(f"schedule_ns {z['schedule_ns']}, the ZB-H1 makespan {tr['step_us']} us")
if not tr["step_us"] < tr["dp_step_us"]: bad.append(f"makespan {tr['step_us']} us, not below the DP's formula {tr['dp_step_us']} us")
v = re.search(r"^pipeline: 4 stages, 8 microbatches, step ([0-9.]+) ms \(schedule ([0-9.]+) ms", out, re.M)
if not v or abs(float(v.group(1)) - z["predicted_step_ns"] / 1e6) > 0.0005 or abs(float(v.group(2)) - z["schedule_ns"] / 1e6) > 0.0005:
    bad.append(f"printed {v and v.groups()}")
if bad: sys.exit("; ".join(bad))
print(f"step {z['predicted_step_ns']} ns = ZB-H1 makespan {z['schedule_ns']} + {z['sync_ns']} ns (auto's; the DP's formula {tr['dp_step_us']} us)")
PY
); then ok "pp = 4 --schedule zb-h1 priced as auto: $msg"; else bad "pp = 4 --schedule zb-h1 priced as auto: $msg"; fi

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
