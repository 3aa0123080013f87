#!/usr/bin/env bash
# The plan report explains itself per layer group (docs/planner.md, "Each
# layer group explained"): the default search (`--train --gpus 4`), --plan-only,
# on GPT-2 and Llama of hidden 256 (4 layers, weight-free) and a tiny GPT-2
# (4 layers, hidden 32):
#   - each group line of the report ("embedding/head", "layer N", "layers
#     A-B") is followed by its share of the step (compute, exposed
#     communication) and memory; the shares add up to the predicted step;
#   - after the search, each group's runner-up: the plan with only that
#     group's choice changed ([zero S], [sp true|false], [tp_axis AX|null],
#     [vocab_axis AX|null]). Each named runner-up is applied to plan.json by
#     hand (those fields changed) and compiled with --plan: the step and the
#     bytes per device it predicts are the runner-up line's (bytes exactly);
#   - "slower" names a step above the choice's within the limit; "over the
#     memory limit" a plan above the limit;
#   - -q prints none of it and plans the same.
# Cases: GPT-2 on dp=2 x tp=2, 2 microbatches, 60 MB per device (the layers'
# groups differ: ZeRO stages, recomputation on the first layers); Llama on
# dp=2 x tp=2 with no limit (sp and the tp axis among the alternatives); the
# tiny GPT-2 on dp=2 x tp=2 (every unit replicated: the idle axes' plan);
# an inference plan (parameters alone); the IR compiled after the
# runner-ups = the IR compiled with -q (a ZeRO-3 + tp case on a 2-layer tiny
# GPT-2, and the 2-microbatch case); and the choice polished (docs/planner.md
# "The choice polished"): GPT-2 124M's shape (weight-free) on 8 H100, batch
# 32 x seq 1024, bf16, where one layer's change realises faster in full: the
# "polished" line's steps are the search's choice (GALV_PLAN_POLISH=off) and
# plan.json's, no runner-up is left faster, -q and --plan give the same plan;
# the polish priced from two microbatches (2 H100 under 6 GB, 4 microbatches):
# the same plan as each change realised in full, fewer realised;
# a polished plan compiled and run (GPT-2 of 12 layers, hidden 128, 4 CPU
# ranks): 2 training steps = the single-device program, bytes counted =
# plan.json's.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
python3 "$SRC/examples/make_model.py" gpt2 -o "$T/gpt2.onnx" --layers 4 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null ||
  bad "gpt2: make_model"

# check NAME MODEL B S OPTIONS...: plan, then every claim of the report checked
check() {
  local n=$1 m=$2 b=$3 s=$4; shift 4
  if ! timeout 300 "$BUILD/galvc" "$T/$m.onnx" --batch "$b" --seq "$s" --train --gpus 4 "$@" --plan-only \
       --plan-out "$T/$n.json" 2>"$T/$n.err" </dev/null; then
    bad "$n: galvc: $(grep -m2 error "$T/$n.err")"; return
  fi
  if ! timeout 300 "$BUILD/galvc" "$T/$m.onnx" --batch "$b" --seq "$s" --train --gpus 4 "$@" --plan-only -q \
       --plan-out "$T/$n-q.json" 2>"$T/$n-q.err" </dev/null; then
    bad "$n -q: galvc: $(grep -m2 error "$T/$n-q.err")"; return
  fi
  local r
  if r=$(python3 - "$T" "$n" "$BUILD/galvc" "$T/$m.onnx" "$b" "$s" <<'PY'
import json, re, subprocess, sys
t, n, galvc, model, b, s = sys.argv[1:7]
err = open(f"{t}/{n}.err").read().splitlines()
plan = json.load(open(f"{t}/{n}.json"))
limit = plan["memory_limit"] if "memory_limit" in plan else None
step = plan["predicted"]["step_ns"]
mem = plan["memory_per_device"]["total"]
def units(label):
    if label.startswith("embedding/head"):
        return [0]
    a = re.match(r"layers? (\d+)(?:-(\d+))?", label)
    lo = int(a.group(1)); hi = int(a.group(2) or lo)
    return list(range(lo + 1, hi + 2))
# the last report (the compiled run's): its group lines and their figures
last = max(i for i, l in enumerate(err) if l.startswith("plan: mesh "))
groups, shares = [], []
i = last + 1
while i < len(err) and err[i].startswith("plan:   "):
    g = err[i][len("plan:   "):]
    f = re.match(r"plan:     (\d+) units?: ([\d.]+) ms of the step \(compute ([\d.]+), exposed communication ([\d.]+)\), "
                 r"per device: state (\d+) bytes .* activations kept for backward (\d+) bytes", err[i + 1] if i + 1 < len(err) else "")
    if not f:
        sys.exit(f"group '{g}' without its figures line: {err[i + 1] if i + 1 < len(err) else 'EOF'}")
    if int(f.group(1)) != len(units(g)):
        sys.exit(f"group '{g}': {f.group(1)} units, the label says {len(units(g))}")
    if abs(float(f.group(2)) - float(f.group(3)) - float(f.group(4))) > 0.0021:
        sys.exit(f"group '{g}': share {f.group(2)} != compute {f.group(3)} + exposed {f.group(4)}")
    groups.append(g); shares.append(float(f.group(2)))
    i += 2
if not groups:
    sys.exit("no group lines after the last 'plan: mesh'")
if abs(sum(shares) - step / 1e6) > 0.001 * len(groups) + 1e-9:
    sys.exit(f"group shares sum to {sum(shares):.3f} ms, the step is {step / 1e6:.3f} ms")
# the explanation block
try:
    e0 = err.index(next(l for l in err if l.startswith("plan: each layer group against its other choices")))
except StopIteration:
    sys.exit("no runner-up block")
checked, out = 0, []
j = e0 + 1
while j < len(err) and err[j].startswith("plan:   runner-up for "):
    a = re.match(r"plan:   runner-up for (.+?) \((.*?)\): (.*)$", err[j])
    j += 1
    if not a:
        sys.exit(f"runner-up line: {err[j - 1]}")
    g = a.group(1) + ": " + a.group(2)
    if g not in groups:
        sys.exit(f"runner-up block names '{g}', not a group of the report {groups}")
    ru = a.group(3)
    if ru.startswith("none"):
        out.append(f"{g}: none"); continue
    a = re.match(r"(\S+) \[([^\]]+)\]: step ([\d.]+) ms .*?, (\d+) bytes per device \(([+-]\d+)\): (.*)$", ru)
    if not a:
        sys.exit(f"runner-up line: {ru}")
    what, rstep, rmem, why = a.group(2), float(a.group(3)), int(a.group(4)), a.group(6)
    if int(a.group(5)) != rmem - mem:
        sys.exit(f"{g}: memory difference {a.group(5)}, {rmem} - {mem}")
    lim = int(re.search(r"of (\d+) bytes", next(l for l in err if l.startswith("plan: memory per device"))).group(1))
    if why.startswith("slower") and not (rstep >= round(step / 1e6, 3) and rmem <= lim):
        sys.exit(f"{g}: 'slower' at {rstep} ms, {rmem} bytes (choice {step / 1e6:.3f} ms, limit {lim})")
    if why.startswith("over the memory limit") and not rmem > lim:
        sys.exit(f"{g}: 'over the memory limit' at {rmem} bytes, limit {lim}")
    # the runner-up by hand: plan.json with those units changed, compiled with --plan
    p = json.loads(json.dumps(plan))
    for u in units(g):
        for kv in what.split(", "):
            k, v = kv.split(" ")
            if k == "zero": p["units"][u]["zero"] = int(v)
            elif k == "sp": p["units"][u]["sp"] = v == "true"
            elif k == "vocab_axis": p["vocab_axis"] = None if v == "null" else v
            elif k == "tp_axis":
                p["units"][u]["tp_axis"] = None if v == "null" else v
                if v == "null" or v != p.get("tp_axis"):
                    for w in range(1, len(p["units"])):  # every layer's axis written once one has its own
                        p["units"][w].setdefault("tp_axis", p.get("tp_axis"))
            else: sys.exit(f"{g}: unknown change '{kv}'")
    pf = f"{t}/{n}-ru{checked}.json"
    json.dump(p, open(pf, "w"), indent=1)
    r = subprocess.run([galvc, model, "--batch", b, "--seq", s, "--train", "--gpus", "4", "--plan", pf, "--plan-only", "-q",
                        "--plan-out", pf + ".out"], capture_output=True, text=True, timeout=300)
    if r.returncode:
        sys.exit(f"{g}: --plan with [{what}]: {r.stderr.strip().splitlines()[-1:]}")
    q = json.load(open(pf + ".out"))
    qs, qm = q["predicted"]["step_ns"], q["memory_per_device"]["total"]
    if qm != rmem or abs(qs / 1e6 - rstep) > 0.0006:
        sys.exit(f"{g}: runner-up [{what}] says {rstep} ms, {rmem} bytes; --plan gives {qs / 1e6:.4f} ms, {qm} bytes")
    checked += 1
    out.append(f"{g}: [{what}] {rstep} ms {rmem} B ({why.split(' (')[0]})")
if not checked:
    sys.exit("no runner-up to check: " + "; ".join(out))
print(f"{len(groups)} groups, shares sum to the step {step / 1e6:.3f} ms; runner-ups = --plan by hand: " + "; ".join(out))
PY
  ); then
    ok "$n: $r"
  else
    bad "$n: $r"
  fi
  if grep -q "^plan:" "$T/$n-q.err"; then bad "$n: -q still prints: $(grep -m1 '^plan:' "$T/$n-q.err")"
  elif cmp -s <(python3 -c "import json,sys; p=json.load(open(sys.argv[1])); print(p['units'], p['predicted'])" "$T/$n.json") \
              <(python3 -c "import json,sys; p=json.load(open(sys.argv[1])); print(p['units'], p['predicted'])" "$T/$n-q.json"); then
    ok "$n: -q prints no report and chooses the same plan"
  else bad "$n: -q chose another plan"; fi
}

python3 "$SRC/examples/make_model.py" gpt2 -o "$T/gpt2s.onnx" --layers 4 --hidden 256 --heads 4 --vocab 1000 --max-pos 256 \
  --no-weights --no-verify >/dev/null || bad "gpt2s: make_model"
python3 "$SRC/examples/make_model.py" llama -o "$T/llamas.onnx" --layers 4 --hidden 256 --heads 4 --kv-heads 2 --vocab 1000 \
  --no-weights --no-verify >/dev/null || bad "llamas: make_model"
# irsame NAME MODEL B S OPTIONS...: the program compiled after the report's runner-ups (their realisations set the
# planner's own per-candidate state) is the one compiled with -q, which realises none: the same IR text
irsame() {
  local n=$1 m=$2 b=$3 s=$4; shift 4
  timeout 300 "$BUILD/galvc" "$T/$m.onnx" --batch "$b" --seq "$s" --train --gpus 4 "$@" -o "$T/$n-v.mlir" 2>"$T/$n-v.err" </dev/null &&
    timeout 300 "$BUILD/galvc" "$T/$m.onnx" --batch "$b" --seq "$s" --train --gpus 4 "$@" -q -o "$T/$n-q.mlir" 2>"$T/$n-q.err" </dev/null ||
    { bad "$n: galvc: $(grep -m2 error "$T/$n-v.err" "$T/$n-q.err")"; return; }
  local ru
  ru=$(grep -c "runner-up for" "$T/$n-v.err")
  if [ "$ru" -ge 1 ] && cmp -s "$T/$n-v.mlir" "$T/$n-q.mlir"; then
    ok "$n: the program compiled after $ru runner-ups realised = the one compiled with -q ($(grep -c 'galv.all_gather' "$T/$n-v.mlir") all_gathers, $(wc -l <"$T/$n-v.mlir") lines of IR)"
  else bad "$n: $ru runner-ups; the IR differs from -q's: $(diff "$T/$n-v.mlir" "$T/$n-q.mlir" | head -3 | tr '\n' ' ')"; fi
}

check gpt2s-lim gpt2s 8 128 --no-weights --microbatches 2 --mesh dp=2,tp=2 --memory-limit 60000000
check llamas-tp llamas 8 128 --no-weights --mesh dp=2,tp=2 --recompute=none --microbatches 1
check gpt2-tiny gpt2 16 32 --mesh dp=2,tp=2
# its axes idle though the batch (16) splits over the 4 devices: the report says the replication was predicted faster,
# not that the batch does not split (that warning is for a batch the devices do not divide: tests/plan.sh)
if grep -q "^plan: note: groups of 4 ranks compute the same values (idle: dp=2, tp=2), predicted faster than splitting the batch of 16 over them" "$T/gpt2-tiny.err" &&
   ! grep -q "plan: warning: the batch" "$T/gpt2-tiny.err"; then
  ok "gpt2-tiny: $(grep -m1 '^plan: note: groups' "$T/gpt2-tiny.err")"
else
  bad "gpt2-tiny: the idle axes' line: $(grep -m1 'compute the same values' "$T/gpt2-tiny.err")"
fi

# inference: the groups' parameters and shares (no gradients, optimizer state or activations kept for backward)
if timeout 300 "$BUILD/galvc" "$T/gpt2s.onnx" --batch 8 --seq 128 --no-weights --gpus 4 --mesh dp=2,tp=2 --plan-only \
     --plan-out "$T/inf.json" 2>"$T/inf.err" </dev/null; then
  if r=$(python3 - "$T/inf.err" "$T/inf.json" <<'PY'
import json, re, sys
err, plan = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))
sh = [float(x) for x in re.findall(r"^plan:     \d+ units?: ([\d.]+) ms of the step .* per device: parameters \d+ bytes$", err, re.M)]
ru = re.findall(r"^plan:   runner-up for .*$", err, re.M)
step = plan["predicted"]["step_ns"] / 1e6
if not sh or abs(sum(sh) - step) > 0.001 * len(sh) or not ru or "kept for backward" in err:
    sys.exit(f"shares {sh} against the step {step:.3f} ms; runner-ups {ru}")
print(f"{len(sh)} groups' parameters and shares, summing to the step {step:.3f} ms; {len(ru)} runner-up lines")
PY
  ); then ok "inference: $r"; else bad "inference: $r"; fi
else bad "inference: galvc: $(grep -m2 error "$T/inf.err")"; fi

# ZeRO-3 on one layer, tp on the other (regather's gathers per layer read the layer units the pass hands on)
python3 "$SRC/examples/make_model.py" gpt2 -o "$T/gpt2l2.onnx" --layers 2 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null ||
  bad "gpt2l2: make_model"
irsame gpt2-z3 gpt2l2 8 8 --mesh dp=2,tp=2 --cluster h100-sxm --recompute=none --microbatches 1 --memory-limit 460000 --target cpu
irsame gpt2s-ir gpt2s 8 128 --microbatches 2 --mesh dp=2,tp=2 --memory-limit 60000000 --target cpu

# the choice polished
python3 "$SRC/examples/make_model.py" gpt2 -o "$T/g124.onnx" --layers 12 --hidden 768 --heads 12 --vocab 50257 --max-pos 1024 \
  --no-weights --no-verify >/dev/null || bad "g124: make_model"
PO=(--batch 32 --seq 1024 --train --gpus 8 --cluster h100-sxm --precision bf16 --no-weights --plan-only)
if timeout 300 "$BUILD/galvc" "$T/g124.onnx" "${PO[@]}" --plan-out "$T/pol.json" 2>"$T/pol.err" </dev/null &&
   timeout 300 "$BUILD/galvc" "$T/g124.onnx" "${PO[@]}" -q --plan-out "$T/polq.json" 2>/dev/null </dev/null &&
   GALV_PLAN_POLISH=off timeout 300 "$BUILD/galvc" "$T/g124.onnx" "${PO[@]}" -q --plan-out "$T/poloff.json" 2>/dev/null </dev/null &&
   timeout 300 "$BUILD/galvc" "$T/g124.onnx" "${PO[@]}" -q --plan "$T/pol.json" --plan-out "$T/polre.json" 2>/dev/null </dev/null; then
  if r=$(python3 - "$T" 2>&1 <<'PY'
import json, re, sys
t = sys.argv[1]
err = open(f"{t}/pol.err").read()
p, q, off, re_ = (json.load(open(f"{t}/{n}.json")) for n in ("pol", "polq", "poloff", "polre"))
ch = re.findall(r"^plan: polished: (.*?) \[(.*?)\]: step ([\d.]+) -> ([\d.]+) ms", err, re.M)
if not ch:
    sys.exit("no 'plan: polished' line")
x, y = float(ch[0][2]), float(ch[-1][3])
s, so = p["predicted"]["step_ns"] / 1e6, off["predicted"]["step_ns"] / 1e6
if not (y < x and abs(y - s) < 0.0006 and abs(x - so) < 0.0006):
    sys.exit(f"polished {x} -> {y} ms; plan.json {s:.4f}, the search's choice (GALV_PLAN_POLISH=off) {so:.4f}")
fast = [l for l in err.splitlines() if l.startswith("plan:   runner-up for ") and "faster and within the limit" in l]
if fast:
    sys.exit("a runner-up is still faster: " + fast[0])
if not re.search(r"^plan:   runner-up for ", err, re.M):
    sys.exit("no runner-up lines")
for n, o in (("-q", q), ("--plan", re_)):
    if (o["units"], o["predicted"]["step_ns"]) != (p["units"], p["predicted"]["step_ns"]):
        sys.exit(f"{n} gives {o['predicted']['step_ns']} ns, the polished plan {p['predicted']['step_ns']}")
print(f"{len(ch)} change(s) ({'; '.join(c[0] + ' [' + c[1] + ']' for c in ch)}): {so:.3f} -> {s:.3f} ms; no runner-up faster; "
      "-q and --plan give the same plan")
PY
  ); then ok "polish: $r"; else bad "polish: $r"; fi
else bad "polish: galvc: $(grep -m2 error "$T/pol.err")"; fi

# the polish priced from two microbatches (docs/planner.md "The polish priced from two microbatches"): the same GPT-2
# 124M on 2 H100 under 6 GB without recomputation, 4 microbatches of 8 (priced from 8 microbatches; here from 3,
# GALV_STAND_MIN=3): each change priced on the stand-in of 2, those priced faster within the limit realised in full;
# the same plan.json as each change realised in full (GALV_PLAN_POLISH=full), with fewer realisations in full
PP=(--batch 32 --seq 1024 --train --gpus 2 --cluster h100-sxm --precision bf16 --no-weights --plan-only --pp 1 --recompute=none
  --memory-limit 6000000000)
if GALV_STAND_MIN=3 timeout 300 "$BUILD/galvc" "$T/g124.onnx" "${PP[@]}" --plan-out "$T/pp.json" 2>"$T/pp.err" </dev/null &&
   GALV_PLAN_POLISH=full timeout 300 "$BUILD/galvc" "$T/g124.onnx" "${PP[@]}" --plan-out "$T/ppf.json" 2>"$T/ppf.err" </dev/null; then
  if r=$(python3 - "$T" 2>&1 <<'PY'
import json, re, sys
t = sys.argv[1]
err, errf = open(f"{t}/pp.err").read(), open(f"{t}/ppf.err").read()
p, pf = json.load(open(f"{t}/pp.json")), json.load(open(f"{t}/ppf.json"))
ch = re.findall(r"^plan: polished: (.*?) \[(.*?)\]: step ([\d.]+) -> ([\d.]+) ms.*priced from 2 microbatches for (\d+) .*then realised in full", err, re.M)
n = re.search(r"^plan: polish: (\d+) changes? taken, (\d+) candidate programs realised in full and (\d+) priced from 2", err, re.M)
nf = re.search(r"^plan: polish: (\d+) changes? taken, (\d+) candidate programs realised in full in", errf, re.M)
if not ch or not n or not nf:
    sys.exit(f"no priced polish ({len(ch)} changes) or no count line: {n and n.group(0)} / {nf and nf.group(0)}")
if p.get("microbatches") != int(ch[0][4]) or p.get("microbatches", 1) <= 2:
    sys.exit(f"priced for {ch[0][4]}, plan.json {p.get('microbatches')} microbatches")
key = lambda q: (q["units"], q.get("microbatches"), q["predicted"]["step_ns"], q["memory_per_device"]["total"])
if key(p) != key(pf):
    sys.exit(f"priced polish: {key(p)[1:]}; each change in full: {key(pf)[1:]}")
if not int(n.group(2)) < int(nf.group(2)) or int(n.group(1)) != int(nf.group(1)):
    sys.exit(f"realised in full: {n.group(0)} against {nf.group(0)}")
print(f"{len(ch)} change(s) ({'; '.join(c[0] + ' [' + c[1] + ']' for c in ch)}): {ch[0][2]} -> {ch[-1][3]} ms at {p['microbatches']} "
      f"microbatches, the same plan as each change realised in full; {n.group(2)} realised in full and {n.group(3)} priced, against "
      f"{nf.group(2)} realised")
PY
  ); then ok "polish priced from 2: $r"; else bad "polish priced from 2: $r"; fi
else bad "polish priced from 2: galvc: $(grep -m2 error "$T/pp.err" "$T/ppf.err")"; fi

# a polished plan compiled and run: GPT-2 of 12 layers, hidden 128, vocab 4096 (with weights), 4 CPU ranks, a100-40g,
# batch 8 x seq 128, AdamW (eps 1e-6): the polish changes the embedding / head's ZeRO stage (the search's choice
# recompiled with it); 2 steps = the single-device program, the bytes the communicator counted = plan.json's x 2
. "$SRC/tests/lib/mpi_env.sh"
. "$SRC/tests/lib/rank_compare.sh"
python3 "$SRC/examples/make_model.py" gpt2 -o "$T/gh.onnx" --layers 12 --hidden 128 --heads 4 --vocab 4096 --max-pos 256 \
  --no-verify >/dev/null || bad "gh: make_model"
python3 - "$T/ghb" <<'PY'
import numpy as np, os, sys
os.makedirs(sys.argv[1])
r = np.random.RandomState(3)
for k in ("input_ids", "labels"):
    np.save(f"{sys.argv[1]}/{k}.npy", r.randint(0, 4096, (2, 8, 128)).astype(np.int64))
PY
GH=(--batch 8 --seq 128 --train --eps 1e-6)
export CFLAGS=-O0
if timeout 300 "$BUILD/galvc" "$T/gh.onnx" "${GH[@]}" --gpus 4 --cluster a100-40g --target cpu -o "$T/ghp/" 2>"$T/ghp.err" </dev/null; then
  if grep -q "^plan: polished: " "$T/ghp.err"; then
    single_program "$T/gh1" "$T/gh.onnx" "--batches $T/ghb --steps 2" "${GH[@]}"
    if timeout 300 "$T/ghp/launch" --batches "$T/ghb" --steps 2 -o "$T/ghp.w" --comm-stats </dev/null >"$T/ghp.log" 2>&1; then
      by=$(python3 "$SRC/tests/lib/comm_counted.py" "$T/ghp.log" 2 2>&1)
      want=$(python3 -c "import json, sys; p = json.load(open(sys.argv[1])); print(', '.join(f'{k} {2 * p[\"collectives\"][k][\"bytes\"] if k in p[\"collectives\"] else 0}' for k in ('all_reduce', 'all_gather', 'reduce_scatter', 'all_to_all')))" "$T/ghp/plan.json")
      if r=$(same_training "$T/gh1.log" "$T/ghp.log" "$T/gh1.w" "$T/ghp.w") && [ "$by" = "$want" ]; then
        ok "polished plan runs: $(grep -o '^plan: polished: [^:]*: step [0-9.]* -> [0-9.]* ms' "$T/ghp.err" | head -1); 4 ranks, 2 steps = one device: $r; bytes counted = plan.json x 2: $by"
      else bad "polished plan run: $r; bytes counted $by, plan.json x 2 $want"; fi
    else bad "polished plan run: $(grep -m3 -i error "$T/ghp.log")"; fi
  else bad "gh: no polish ($(grep 'plan:   ' "$T/ghp.err" | tr '\n' ' '))"; fi
else bad "gh: galvc: $(grep -m2 error "$T/ghp.err")"; fi

echo "plan_explain: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
