#!/usr/bin/env bash
# The default search plans pipelines too (docs/planner.md, "Pipelines in the
# default search"): galvc M --train --gpus N with no other flag runs the
# single-program planner and the pipeline stage DP (S >= 2) and compiles the
# faster predicted step. On GPT-2 tiny (2 layers, hidden 32, batch 8 x seq 8,
# CPU target):
#  (a) cpu-local, 2 devices: one program wins (the pipeline priced, or cut
#      short once the stages planned bound its step above one program's);
#      its plan.json is the one
#      --pipeline-stages 1 writes (no pipeline field);
#  (b) a copy of cpu-local with one device per node and a 1 MB/s inter-node
#      link and a memory limit (520000 bytes) below the replicated plan's
#      state: every one-program plan splits something across the slow link
#      (the replicated plan, no communication at all, would win without the
#      limit), the pipeline wins by itself; -o DIR/ gets the stage programs, plan.json records the
#      pipeline, the stages run 2 AdamW steps on 2 MPI ranks with the
#      single-device program's losses (rtol 1e-4), and --plan plan.json
#      compiles the same stages (its plan.json the search's: each stage's way,
#      bytes and step; an edited plan's own layer groups kept); plan.json records each stage's way
#      (stage_recompute, stage_zero) and --plan replays an edited one (stage 0
#      recomputing: no backward entry);
#  (c) --pipeline-stages 1: one program, no pipeline searched;
#  (e) equal stages of 2 devices planned as the preset dp too, chosen (under a
#      memory limit that the plan replicating across the nodes exceeds), run
#      on 4 ranks = single device, replayed by --plan;
#  (d) --memory-limit 100000 (nothing fits): one error line whose smallest
#      need is the smaller of one program's and a pipeline stage's, above
#      the limit;
#  (f) interleaved 1F1B chosen by the search: an 8-layer GPT-2 (hidden 64,
#      batch 4 x seq 16) on 4 devices of a copy of cpu-local with 2 GB/s
#      links: 4 device groups of 2 chunks beat 1F1B's stages and one
#      program; compiled, run on 8 ranks = single device (losses rtol 1e-4),
#      plan.json records schedule "interleaved" and virtual_stages, --plan
#      replays its predicted step; with GALV_PIPE_INTERLEAVED=off the search
#      chooses a slower step.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
G="$BUILD/galvc"
m="$T/gpt2.onnx"
python3 "$SRC/examples/make_model.py" gpt2 -o "$m" --layers 2 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null ||
  { echo "FAIL make_model"; exit 1; }
COMMON=(--batch 8 --seq 8 --train --target cpu)

# (a) one program wins; (c) --pipeline-stages 1 plans one program only, the same plan
if timeout 300 "$G" "$m" "${COMMON[@]}" --gpus 2 --plan-only --plan-out "$T/a.json" </dev/null 2>"$T/a.err" &&
   timeout 300 "$G" "$m" "${COMMON[@]}" --gpus 2 --pipeline-stages 1 --plan-only --plan-out "$T/c.json" </dev/null 2>"$T/c.err"; then
  grep -q "default search: chose one program" "$T/a.err" || bad "(a) no 'chose one program' line: $(grep 'default search' "$T/a.err")"
  # the pipeline compared: priced in full, or cut short once its stages planned bound its step above one program's
  grep -q "default search: pipeline: predicted step\|default search: pipeline: no candidate planned in full (1 cut short: the stages planned bound the step above one program's)" "$T/a.err" ||
    bad "(a) the pipeline's line is missing"
  grep -q '"pipeline"' "$T/a.json" && bad "(a) plan.json records a pipeline"
  if diff <(grep -v planning_seconds "$T/a.json") <(grep -v planning_seconds "$T/c.json") >"$T/diff"; then
    ok "(a) one program chosen ($(grep -o 'one program: predicted step [0-9.]* ms' "$T/a.err") vs $(grep -o "pipeline: predicted step [0-9.]* ms\|pipeline: no candidate planned in full ([^)]*)" "$T/a.err")), plan.json = --pipeline-stages 1's"
  else
    bad "(a) plan.json differs from --pipeline-stages 1's: $(head -5 "$T/diff")"
  fi
  if grep -q "default search\|pipeline candidate" "$T/c.err"; then bad "(c) --pipeline-stages 1 searched pipelines"
  else ok "(c) --pipeline-stages 1: one program, no pipeline searched"; fi
else
  bad "(a)/(c) galvc: $(tail -n 2 "$T/a.err" "$T/c.err")"
fi
# -q silences the report
q=$(timeout 300 "$G" "$m" "${COMMON[@]}" --gpus 2 --plan-only -q </dev/null 2>&1)
[ -z "$q" ] && ok "-q: no report" || bad "-q printed: ${q:0:200}"

# (b) a slow inter-node link: the pipeline wins, compiled, run, reproduced by --plan
python3 -c "
import json
c = json.load(open('$SRC/data/clusters/cpu-local.json'))
c['name'] = 'cpu-slow-net'; c['devices_per_node'] = 1; c['nodes'] = 4; c['inter_node']['bandwidth_gbps'] = 0.001
json.dump(c, open('$T/slow.json', 'w'), indent=1)" || { echo "FAIL cluster file"; exit 1; }
python3 -c "
import numpy as np, os
r = np.random.RandomState(0)
os.makedirs('$T/b')
np.save('$T/b/input_ids.npy', r.randint(0, 64, (2, 8, 8)).astype(np.int64))
np.save('$T/b/labels.npy', r.randint(0, 64, (2, 8, 8)).astype(np.int64))" || { echo "FAIL batches"; exit 1; }
timeout 300 "$G" "$m" --input-shape input_ids=8x8 --train --target cpu -q -o "$T/one/" </dev/null 2>"$T/err" ||
  { echo "FAIL single: $(cat "$T/err")"; exit 1; }
timeout 120 "$T/one/program" --batches "$T/b" --steps 2 -o "$T/one.w" </dev/null >"$T/one.log" 2>"$T/err" ||
  { echo "FAIL single run: $(cat "$T/err")"; exit 1; }
if timeout 600 "$G" "$m" "${COMMON[@]}" --gpus 2 --gpus-per-node 1 --cluster "$T/slow.json" --memory-limit 520000 -o "$T/pb/" </dev/null \
    >"$T/pb.out" 2>"$T/pb.err"; then
  if grep -q "default search: chose the pipeline" "$T/pb.err" && [ -x "$T/pb/launch" ] && [ -d "$T/pb/stage1" ] &&
     python3 -c "import json,sys; p=json.load(open('$T/pb/plan.json'))['pipeline']; sys.exit(0 if p['stages'] >= 2 else 1)"; then
    ok "(b) pipeline chosen: $(grep -o 'one program: predicted step [0-9.]* ms' "$T/pb.err") vs $(grep -o 'pipeline: predicted step [0-9.]* ms' "$T/pb.err"); stages written, plan.json records them"
  else
    bad "(b) no pipeline chosen / written: $(grep 'default search' "$T/pb.err")"
  fi
  if timeout 120 "$T/pb/launch" --batches "$T/b" --steps 2 -o "$T/pb.w" </dev/null >"$T/pb.log" 2>"$T/err"; then
    if msg=$(python3 - "$T/one.log" "$T/pb.log" <<'PY'
import sys, re, numpy as np
def losses(p): return [float(x) for x in re.findall(r"^step \d+ loss (\S+)", open(p).read(), re.M)]
a, b = losses(sys.argv[1]), losses(sys.argv[2])
if len(a) != 2 or len(b) != 2 or not np.allclose(b, a, rtol=1e-4, atol=0): sys.exit(f"losses {b} != single device {a}")
print(f"losses {b[0]:.8f} {b[1]:.8f} == single device")
PY
    ); then ok "(b) the chosen pipeline runs: $msg"; else bad "(b) $msg"; fi
  else
    bad "(b) run: $(grep -m3 -i error "$T/err" "$T/pb.log")"
  fi
  q=$(timeout 300 "$G" "$m" "${COMMON[@]}" --gpus 2 --gpus-per-node 1 --cluster "$T/slow.json" --memory-limit 520000 --plan-only -q </dev/null 2>&1)
  [ -z "$q" ] && ok "(b) -q: no report" || bad "(b) -q printed: ${q:0:200}"
  # --plan plan.json: the same stages (cuts, devices, microbatches, predicted step)
  if timeout 600 "$G" "$m" "${COMMON[@]}" --cluster "$T/slow.json" --memory-limit 520000 --gpus-per-node 1 --plan "$T/pb/plan.json" --no-build \
      -o "$T/pc/" </dev/null >"$T/pc.out" 2>"$T/pc.err"; then
    a=$(grep -o '[0-9]* stages, cuts at.*strategies[^,]*' "$T/pb.out") b=$(grep -o '[0-9]* stages, cuts at.*strategies[^,]*' "$T/pc.out")
    if [ -n "$a" ] && [ "$a" = "$b" ] && [ -x "$T/pc/launch" ]; then ok "(b) --plan plan.json compiles the same stages: $b"
    else bad "(b) --plan: '$b' != '$a'"; fi
    # the replay's plan.json: each stage's way and memory as the search chose and priced them
    if msg=$(python3 - "$T/pb/plan.json" "$T/pc/plan.json" <<'PY'
import json, sys
a, b = (json.load(open(f))["pipeline"] for f in sys.argv[1:3])
keys = ["layer_groups", "cuts", "stage_devices", "stage_strategies", "stage_recompute", "stage_zero", "stage_zero_reduce",
        "stage_layer_recompute", "stage_bytes", "stage_ns_per_microbatch", "predicted_step_ns"]
diff = [k for k in keys if a.get(k) != b.get(k)]
if diff: sys.exit("differs in " + ", ".join(f"{k}: {a.get(k)} vs {b.get(k)}" for k in diff))
print(f"stage bytes {b['stage_bytes']}, step {b['predicted_step_ns']} ns")
PY
    ); then ok "(b) --plan replays the search's ways and figures: $msg"; else bad "(b) --plan replay: $msg"; fi
    # the plan's own layer groups (not the count a given stage count implies): an edited plan.json of 6 groups cut at 3
    python3 -c "
import json
p = json.load(open('$T/pb/plan.json')); q = p['pipeline']
q['layer_groups'] = 6; q['cuts'] = [0, 3, 6]
for k in ('stage_recompute', 'stage_zero', 'stage_zero_reduce', 'stage_layer_recompute'): q.pop(k, None)
json.dump(p, open('$T/pk.json', 'w'))"
    if timeout 600 "$G" "$m" "${COMMON[@]}" --cluster "$T/slow.json" --memory-limit 520000 --gpus-per-node 1 --plan "$T/pk.json" --plan-only \
        </dev/null >"$T/pk.out" 2>"$T/pk.err" && grep -q 'cuts at groups 0|3|6 of 6,' "$T/pk.out"; then
      ok "(b) --plan with layer_groups 6: $(grep -o 'cuts at groups [^,]*' "$T/pk.out")"
    else bad "(b) --plan with layer_groups 6: $(grep -o 'cuts at groups [^,]*' "$T/pk.out") $(grep -m2 error "$T/pk.err")"; fi
  else
    bad "(b) --plan: $(tail -n 2 "$T/pc.err")"
  fi
  # plan.json records each stage's way (recomputation, ZeRO-1) and --plan replays it: the same plan with stage 0
  # recomputing compiles stage 0 as one combined program (no backward entry)
  if python3 - "$T/pb/plan.json" "$T/pr.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
q = p["pipeline"]
if q["stage_recompute"] != [False] * q["stages"] or q["stage_zero"] != [0] * q["stages"] or len(q["stage_bytes"]) != q["stages"]:
    sys.exit(f"plan.json: stage_recompute {q.get('stage_recompute')}, stage_zero {q.get('stage_zero')}")
q["stage_recompute"][0] = True
json.dump(p, open(sys.argv[2], "w"))
PY
  then
    if timeout 600 "$G" "$m" "${COMMON[@]}" --cluster "$T/slow.json" --memory-limit 520000 --gpus-per-node 1 --plan "$T/pr.json" --no-build \
        -o "$T/pr/" </dev/null >"$T/pr.out" 2>"$T/pr.err" && [ -e "$T/pc/stage0/program_bwd.c" ] &&
       [ ! -e "$T/pr/stage0/program_bwd.c" ] && grep -q 'strategies [^|]* +recompute |' "$T/pr.out"; then
      ok "(b) plan.json records each stage's way; --plan with stage 0 recomputing replays it: $(grep -o 'strategies.*' "$T/pr.out" | cut -d, -f1)"
    else
      bad "(b) --plan with stage_recompute: $(grep -o 'strategies.*' "$T/pr.out") $(grep -m2 error "$T/pr.err")"
    fi
  else
    bad "(b) plan.json has no per-stage ways"
  fi
else
  bad "(b) galvc: $(tail -n 3 "$T/pb.err")"
fi

# (e) equal stages of more than one device are also planned as the preset dp / dp,tp (their crossing values split over
# dp, no gather of them per microbatch): on 2 nodes of 2 devices with a 0.2 Gb/s link between them and a memory limit
# (4700000 bytes) below the plan that replicates across the nodes and splits the batch inside each (9.1 MB; 1.906 ms,
# faster than any pipeline without the limit) and above the stages' 4.59 MB, GPT-2 of hidden 128
# cut into 2 layer groups (--layers 2), the default search chooses 2 stages of 2 devices as the preset dp; plan.json
# records it (stage_preset), the stages run 2 AdamW steps on 4 MPI ranks with the single-device losses, and --plan
# replays the same plan.json
m4="$T/gpt2h.onnx"
python3 "$SRC/examples/make_model.py" gpt2 -o "$m4" --layers 2 --hidden 128 --heads 4 --vocab 64 --no-verify >/dev/null ||
  { echo "FAIL make_model"; exit 1; }
python3 -c "
import json, numpy as np, os
c = json.load(open('$SRC/data/clusters/cpu-local.json'))
c['name'] = 'cpu-2x2'; c['devices_per_node'] = 2; c['nodes'] = 2; c['inter_node']['bandwidth_gbps'] = 0.2
json.dump(c, open('$T/c22.json', 'w'), indent=1)
r = np.random.RandomState(1)
os.makedirs('$T/e')
np.save('$T/e/input_ids.npy', r.randint(0, 64, (2, 16, 8)).astype(np.int64))
np.save('$T/e/labels.npy', r.randint(0, 64, (2, 16, 8)).astype(np.int64))" || { echo "FAIL cluster / batches"; exit 1; }
E=(--batch 16 --seq 8 --train --target cpu --gpus-per-node 2 --cluster "$T/c22.json" --memory-limit 4700000)
if timeout 300 "$G" "$m4" --input-shape input_ids=16x8 --train --target cpu -q -o "$T/eone/" </dev/null 2>"$T/err" &&
   timeout 120 "$T/eone/program" --batches "$T/e" --steps 2 -o "$T/eone.w" </dev/null >"$T/eone.log" 2>"$T/err" &&
   timeout 600 "$G" "$m4" "${E[@]}" --gpus 4 --layers 2 -o "$T/pe/" </dev/null >"$T/pe.out" 2>"$T/pe.err"; then
  if grep -q "pipeline candidate [0-9]* as dp: 2 stages of 2 devices" "$T/pe.err" && grep -q '"stage_preset": "dp"' "$T/pe/plan.json" &&
     grep -q "2 devices per stage, strategies dp | dp" "$T/pe.out"; then
    ok "(e) $(grep -o 'pipeline candidate [0-9]* as dp: [^(]*' "$T/pe.err"): chosen, plan.json records stage_preset dp"
  else bad "(e) the preset variant not chosen: $(grep 'pipeline candidate\|default search: chose' "$T/pe.err")"; fi
  if timeout 120 "$T/pe/launch" --batches "$T/e" --steps 2 -o "$T/pe.w" </dev/null >"$T/pe.log" 2>"$T/err" &&
     msg=$(python3 - "$T/eone.log" "$T/pe.log" <<'PY'
import sys, re, numpy as np
def losses(p): return [float(x) for x in re.findall(r"^step \d+ loss (\S+)", open(p).read(), re.M)]
a, b = losses(sys.argv[1]), losses(sys.argv[2])
if len(a) != 2 or len(b) != 2 or not np.allclose(b, a, rtol=1e-4, atol=0): sys.exit(f"losses {b} != single device {a}")
print(f"losses {b[0]:.8f} {b[1]:.8f} == single device")
PY
     ); then ok "(e) the stages run on 4 ranks: $msg"; else bad "(e) run: ${msg:-$(grep -m3 -i error "$T/err" "$T/pe.log")}"; fi
  if timeout 600 "$G" "$m4" "${E[@]}" --plan "$T/pe/plan.json" --no-build -o "$T/pf/" </dev/null >"$T/pf.out" 2>"$T/pf.err" &&
     python3 -c "import json,sys; a,b=(json.load(open(f))['pipeline'] for f in sys.argv[1:]); sys.exit(a!=b)" "$T/pe/plan.json" "$T/pf/plan.json"; then
    ok "(e) --plan replays it: the same pipeline in plan.json (preset, stages, ways, bytes, step)"
  else bad "(e) --plan: $(grep -m2 error "$T/pf.err") $(diff "$T/pe/plan.json" "$T/pf/plan.json" | head -4)"; fi
  if timeout 600 "$G" "$m4" "${E[@]}" --plan "$T/pe/plan.json" --plan-only --plan-out "$T/pg.json" </dev/null >/dev/null 2>"$T/pg.err" &&
     python3 -c "import json,sys; a,b=(json.load(open(f))['pipeline'] for f in sys.argv[1:]); sys.exit(a!=b)" "$T/pe/plan.json" "$T/pg.json"; then
    ok "(e) --plan with --plan-only --plan-out writes the replayed plan"
  else bad "(e) --plan --plan-out: $(grep -m2 error "$T/pg.err") $(ls "$T/pg.json" 2>&1)"; fi
  # bad input: a stage_preset galvc does not compile, and a --strategy other than the plan's: one error line each
  python3 -c "
import json; p = json.load(open('$T/pe/plan.json')); p['pipeline']['stage_preset'] = 'zz'; json.dump(p, open('$T/pz.json', 'w'))"
  for case in "pz.json|" "pe/plan.json|--strategy tp"; do
    f=${case%%|*} extra=${case#*|}
    timeout 300 "$G" "$m4" "${E[@]}" --plan "$T/$f" $extra --plan-only </dev/null >/dev/null 2>"$T/bad.err"
    rc=$? n=$(wc -l <"$T/bad.err")
    if [ "$rc" != 0 ] && [ "$n" = 1 ] && grep -q "$T/$f: .*stage_preset\|--plan .*do not combine with --strategy" "$T/bad.err"; then
      ok "(e) bad input ($f $extra): $(cut -c1-160 "$T/bad.err" | sed "s|$T/||")"
    else bad "(e) bad input ($f $extra): rc $rc, $n lines: $(head -3 "$T/bad.err")"; fi
  done
else
  bad "(e) galvc: $(tail -n 3 "$T/err" "$T/pe.err")"
fi

# (d) nothing fits: one error line, the smaller of the two minima, above the limit
timeout 300 "$G" "$m" "${COMMON[@]}" --gpus 2 --plan-only --memory-limit 100000 -q </dev/null >"$T/d.out" 2>"$T/d.err"
rc=$?
if msg=$(python3 - "$T/d.err" "$rc" <<'PY'
import sys, re
t = open(sys.argv[1]).read().strip().split("\n")
if sys.argv[2] == "0" or len(t) != 1: sys.exit(f"rc {sys.argv[2]}, {len(t)} lines: {t[:3]}")
m = re.search(r"the smallest needs (\d+) bytes .*one program's smallest (\d+), a pipeline stage's (\d+)", t[0])
if not m: sys.exit(f"no minima in: {t[0]}")
n, a, b = map(int, m.groups())
if n != min(a, b) or n <= 100000: sys.exit(f"smallest {n} of {a}, {b} (limit 100000)")
print(f"one error line: smallest {n} = min(one program {a}, pipeline stage {b})")
PY
); then ok "(d) $msg"; else bad "(d) $msg"; fi

# (f) the search chooses interleaved 1F1B: compiled, run, replayed
m8="$T/gpt2-8.onnx"
python3 "$SRC/examples/make_model.py" gpt2 -o "$m8" --layers 8 --hidden 64 --heads 4 --vocab 64 --no-verify >/dev/null &&
  python3 -c "
import json, numpy as np, os
c = json.load(open('$SRC/data/clusters/cpu-local.json'))
c['name'] = 'cpu-2g'; c['intra_node']['bus_bandwidth_gbps'] = 2.0; c['inter_node']['bandwidth_gbps'] = 2.0
json.dump(c, open('$T/c2.json', 'w'), indent=1)
r = np.random.RandomState(1)
os.makedirs('$T/b4')
np.save('$T/b4/input_ids.npy', r.randint(0, 64, (2, 4, 16)).astype(np.int64))
np.save('$T/b4/labels.npy', r.randint(0, 64, (2, 4, 16)).astype(np.int64))" || { echo "FAIL (f) model"; exit 1; }
F=(--batch 4 --seq 16 --train --target cpu --gpus 4 --cluster "$T/c2.json")
if CFLAGS=-O0 timeout 600 "$G" "$m8" "${F[@]}" -o "$T/pf/" </dev/null >"$T/pf.out" 2>"$T/pf.err" &&
   CFLAGS=-O0 timeout 300 "$G" "$m8" --batch 4 --seq 16 --train --target cpu -q -o "$T/one8/" </dev/null 2>"$T/err" &&
   timeout 120 "$T/one8/program" --batches "$T/b4" --steps 2 -o "$T/one8.w" </dev/null >"$T/one8.log" 2>"$T/err"; then
  if msg=$(python3 - "$T/pf/plan.json" "$T/pf.err" <<'PY'
import json, re, sys
p = json.load(open(sys.argv[1])).get("pipeline") or sys.exit("plan.json has no pipeline")
e = open(sys.argv[2]).read()
if "default search: chose the pipeline" not in e: sys.exit("the pipeline was not chosen: " + " | ".join(re.findall(r"default search: .*", e)))
if p["schedule"] != "interleaved" or p.get("virtual_stages", 0) < 2 or p["stages"] % p["virtual_stages"]:
    sys.exit(f"schedule {p['schedule']}, virtual_stages {p.get('virtual_stages')}, {p['stages']} stages")
print(f"{p['stages'] // p['virtual_stages']} device groups of {p['virtual_stages']} chunks chosen, predicted step "
      f"{p['predicted_step_ns'] / 1e6:.3f} ms ({re.search(r'one program: predicted step [0-9.]* ms', e).group(0)})")
PY
  ); then ok "(f) $msg"; else bad "(f) $msg"; fi
  if timeout 120 "$T/pf/launch" --batches "$T/b4" --steps 2 -o "$T/pf.w" </dev/null >"$T/pf.log" 2>"$T/err" &&
     msg=$(python3 -c "
import sys; sys.path.insert(0, '$SRC/tests/lib')
from same_training import check
print(check('$T/one8.log', '$T/pf.log', '$T/one8.w', '$T/pf.w', steps=[0, 1]))" 2>&1); then
    ok "(f) the interleaved stages run: $msg"
  else bad "(f) run: ${msg:-$(grep -m3 -i error "$T/err" "$T/pf.log")}"; fi
  a=$(grep -o '"predicted_step_ns": [0-9]*' "$T/pf/plan.json")
  timeout 300 "$G" "$m8" "${F[@]}" --plan "$T/pf/plan.json" --plan-only --plan-out "$T/pr.json" </dev/null >/dev/null 2>&1
  b=$(grep -o '"predicted_step_ns": [0-9]*' "$T/pr.json" 2>/dev/null)
  if [ -n "$a" ] && [ "$b" = "$a" ] && grep -q '"virtual_stages": 2' "$T/pr.json"; then ok "(f) --plan replays it: $a"
  else bad "(f) --plan: '$b' vs '$a'"; fi
  off=$(GALV_PIPE_INTERLEAVED=off timeout 300 "$G" "$m8" "${F[@]}" --plan-only --plan-out "$T/poff.json" </dev/null 2>&1 |
        grep -o "default search: chose [a-z ]*")
  if python3 -c "
import json, sys
a = json.load(open('$T/pf/plan.json'))['pipeline']['predicted_step_ns']
o = json.load(open('$T/poff.json'))
b = o['pipeline']['predicted_step_ns'] if 'pipeline' in o else o['predicted']['step_ns']
sys.exit(0 if a < b and o.get('pipeline', {}).get('schedule') != 'interleaved' else 1)"; then
    ok "(f) GALV_PIPE_INTERLEAVED=off: $off, a slower step"
  else bad "(f) GALV_PIPE_INTERLEAVED=off: $off"; fi
else
  bad "(f) galvc: $(grep -m3 error "$T/pf.err" "$T/err")"
fi

echo "plan_joint: $pass passed, $fail failed"
[ "$fail" = 0 ]
