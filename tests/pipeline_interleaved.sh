#!/usr/bin/env bash
# Interleaved 1F1B (docs/pipeline.md, "Schedules"): galvc --pipeline-stages P
# --schedule interleaved --virtual-stages V cuts the model into P x V stages,
# stage s on device group s mod P; a group's stage ranks take turns in
# Megatron's interleaved order (galv_pipe_order_group). Under
# GALV_COMM_SYNC=1 and timeout, 2 AdamW steps with 4 microbatches equal the
# single-device program (tests/lib/same_training.py: losses rtol 1e-4,
# every weight rtol 1e-4 / atol 1e-5) for GPT-2 tiny (2 layers, hidden 32,
# batch 8 x seq 8, cross entropy; also with the embedding tied to the head,
# a parameter shared by stages on two groups; and Llama tiny, 2 key/value
# heads; GPT-2 under --precision bf16: losses within 1e-3 of the bf16
# single device) at P = 2, V = 2 and an MLP (6 linear
# layers and a skip from layer 0 to layer 4, relayed through the stages
# between since every training transfer is between neighbours (checked: no
# value goes to a later stage of its own device group, one is relayed; one
# layer per stage, --layers 6 --stage-cuts equal; batch 8, MSE) at P = 2, V = 3 (V = 2 alike, not in the default
# cases); and device groups of several devices (--gpus G = P x k: each stage a
# program on k ranks, the ranks of one device taking turns with a baton of
# their own): GPT-2 at k = 2 with the planner's plan per stage, Llama at k = 4
# with --strategy dp,tp --mesh dp=2,tp=2 (16 ranks; the crossing values kept
# split over dp), GPT-2 at k = 2 with --recompute=all inside the chunks. Per stage and per
# device group the runtime's measured peak of saved bytes (and entries
# holding them) equals galvc's prediction (galv_pipe_peak over the stage's
# order, galv_pipe_peak_group over the group's); tests/pipe_trace_check.py
# checks the cost model's timeline (Megatron's order per group, written out
# independently there, the dependencies, the bubbles) and that the run kept
# that order on every group in every step. Per device group its memory: the
# allocation tracker's peak (runtime/io.c; the group's ranks' live buffers
# summed at each of its entries, passed along with the baton, + their
# arenas written) within 5 % (either way) of the plan's peak for the group
# (its stages' states + the peak over the group's order of the saved bytes,
# the send copies, each held until a message proves its receiver has it, and
# the batons), which galvc prints and the runtime prints again; every rank
# of a stage before the last releases its forward copies as their gradients
# come back. --schedule auto --virtual-stages
# 2 (--plan-only) prices the four schedules and chooses the shortest
# predicted step. Bad input: microbatches that are not a multiple of P and
# the other wrong combinations are one error line each
# (tests/option_conflicts.sh has the option checks).
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
export CFLAGS=-O0 # the stage programs build faster; the numerics are compared at rtol 1e-4
STEPS=2
python3 "$SRC/examples/make_model.py" gpt2 -o "$T/gpt2.onnx" --layers 2 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null &&
  python3 "$SRC/examples/make_model.py" gpt2 -o "$T/tied.onnx" --layers 2 --hidden 32 --heads 4 --vocab 64 --tie-embeddings \
    --no-verify >/dev/null &&
  python3 "$SRC/examples/make_model.py" llama -o "$T/llama.onnx" --layers 2 --hidden 32 --heads 4 --vocab 64 --kv-heads 2 \
    --no-verify >/dev/null || { echo "FAIL make_model"; exit 1; }
python3 - "$T" "$STEPS" <<'PY' || { echo "FAIL models"; exit 1; }
import sys, os, numpy as np, onnx
from onnx import helper as h, TensorProto as TP, numpy_helper as nh
T, steps = sys.argv[1], int(sys.argv[2])
r = np.random.RandomState(0)
os.makedirs(f"{T}/gpt2-b")
np.save(f"{T}/gpt2-b/input_ids.npy", r.randint(0, 64, (steps, 8, 8)).astype(np.int64))
np.save(f"{T}/gpt2-b/labels.npy", r.randint(0, 64, (steps, 8, 8)).astype(np.int64))
os.symlink(f"{T}/gpt2-b", f"{T}/tied-b")
os.symlink(f"{T}/gpt2-b", f"{T}/llama-b")
# mlp: 6 x (MatMul, Add), tanh between, [8, 16] -> [8, 4]; layer 0's output also joins layer 4's input (a
# value crossing to a later, not the next, stage: under V > 1 one of its own device group)
dims, nodes, inits, x = [16, 32, 32, 32, 32, 32, 4], [], [], "x"
for i in range(6):
    if i == 4:
        nodes.append(h.make_node("Add", [x, "t0"], ["skip"], name="/skip"))
        x = "skip"
    inits += [nh.from_array((r.randn(dims[i], dims[i + 1]) / np.sqrt(dims[i])).astype(np.float32), f"l{i}.weight"),
              nh.from_array((r.randn(dims[i + 1]) * 0.1).astype(np.float32), f"l{i}.bias")]
    y = "y" if i == 5 else f"a{i}"
    nodes += [h.make_node("MatMul", [x, f"l{i}.weight"], [f"m{i}"], name=f"/l{i}/MatMul"),
              h.make_node("Add", [f"m{i}", f"l{i}.bias"], [y], name=f"/l{i}/Add")]
    if i < 5:
        nodes.append(h.make_node("Tanh", [y], [f"t{i}"], name=f"/t{i}"))
        x = f"t{i}"
g = h.make_graph(nodes, "mlp", [h.make_tensor_value_info("x", TP.FLOAT, ["batch", 16])],
                 [h.make_tensor_value_info("y", TP.FLOAT, ["batch", 4])], inits)
m = h.make_model(g, opset_imports=[h.make_opsetid("", 18)])
m.ir_version = 8
onnx.save(m, f"{T}/mlp.onnx")
os.makedirs(f"{T}/mlp-b")
np.save(f"{T}/mlp-b/x.npy", r.randn(steps, 8, 16).astype(np.float32))
np.save(f"{T}/mlp-b/labels.npy", r.randn(steps, 8, 4).astype(np.float32))
PY
declare -A FLAGS=([gpt2]="--batch 8 --seq 8" [tied]="--batch 8 --seq 8" [llama]="--batch 8 --seq 8" [mlp]="--batch 8 --loss mse")
# the mlp's stages cut one linear layer each (equal cuts over 6 groups), so layer 0's skip to layer 4 crosses inside
# device group 0 whatever the stage DP's balance (its cuts follow the cost model's op times)
declare -A PFLAGS=([gpt2]="" [tied]="" [llama]="" [mlp]="--layers 6 --stage-cuts equal")
# a case's devices per group (G = P x devices, every stage on that many ranks) and its flags (the field after G)
declare -A XFLAGS=([dptp]="--strategy dp,tp --mesh dp=2,tp=2" [rc]="--recompute=all"
  [dptpx]="--strategy dp,tp --mesh dp=2,tp=2 --gpus-per-node 4" [dl]="" [tp]="--strategy tp")
# model:P:V:B[:precision[:G[:flags]]]
# (tied: the embedding tied to the head, a parameter of stages 0 and 3, on groups 0 and 1)
# (mlp:2:2:4 runs alike, left out for time: GALV_PIPE_IL_CASES="mlp:2:2:4")
# G > P: device groups of G / P devices, each stage a program on that many ranks (a rank per device and chunk: the
# ranks of a device take turns, one baton per device): the planner's plan per stage (dp=2), the preset dp x tp on 4
# devices per group (16 ranks), full recomputation per layer inside the chunks; the same dp x tp with 4 devices per node
# (dptpx: every stage a node, the crossing blocks scattered over tp and gathered in place); 8 microbatches run with
# every communication call's completion delayed (dl: GALV_COMM_DELAY_US; each send buffer checked unchanged until its
# send completes, a copy's receiver proof checked by the run not hanging under GALV_COMM_SYNC); tp over 4 devices per
# group (tp: the crossing values' tiles split along the sequence, packed into staging buffers that go with their
# copies, not at the next entry)
CASES=${GALV_PIPE_IL_CASES:-"gpt2:2:2:4 tied:2:2:4 llama:2:2:4 gpt2:2:2:4:bf16 mlp:2:3:4 gpt2:2:2:4::4 llama:2:2:4::8:dptp gpt2:2:2:4::4:rc llama:2:2:4::8:dptpx gpt2:2:2:8:::dl gpt2:2:2:4::8:tp"}
for c in $CASES; do # the single-device references: per model and precision
  IFS=: read -r fam P V B PREC G X <<<"$c"
  ref="$T/one-$fam${PREC:+-$PREC}"
  [ -f "$ref.log" ] && continue
  # shellcheck disable=SC2086
  timeout 300 "$BUILD/galvc" "$T/$fam.onnx" ${FLAGS[$fam]} ${PREC:+--precision $PREC} --train --target cpu -q -o "$ref/" 2>"$T/err" ||
    { echo "FAIL single $fam $PREC: $(cat "$T/err")"; exit 1; }
  timeout 120 "$ref/program" --batches "$T/$fam-b" --steps $STEPS -o "$ref.w" >"$ref.log" 2>"$T/err" ||
    { echo "FAIL single run $fam $PREC: $(cat "$T/err")"; exit 1; }
done

for c in $CASES; do
  IFS=: read -r fam P V B PREC G X <<<"$c"
  S=$((P * V)) name="$fam P=$P V=$V B=$B${PREC:+ $PREC}${G:+ G=$G}${X:+ $X}" d="$T/$fam-$P-$V-$B${PREC:+-$PREC}${G:+-$G}${X:+-$X}"
  ref="$T/one-$fam${PREC:+-$PREC}"
  # shellcheck disable=SC2086
  if ! timeout 600 "$BUILD/galvc" "$T/$fam.onnx" ${FLAGS[$fam]} ${PFLAGS[$fam]} ${PREC:+--precision $PREC} --train \
      ${G:+--gpus $G} ${X:+${XFLAGS[$X]}} \
      --pipeline-stages "$P" --virtual-stages "$V" --schedule interleaved --microbatches "$B" --target cpu \
      --trace-plan "$d.plan.json" -o "$d/" >"$d.galvc" 2>&1 </dev/null; then
    bad "$name: galvc: $(grep -m3 error "$d.galvc")"
    continue
  fi
  n=$(ls -d "$d"/stage* | wc -l)
  [ "$n" = "$S" ] || { bad "$name: $n stage programs, expected $S"; continue; }
  # values a stage sends a later stage of its own device group (none: the mlp's skip is relayed, each transfer
  # between neighbours, which are on different groups), and the values a stage receives and sends on (relays)
  mates=0 relays=0
  for ((s = 0; s < S; s++)); do
    for m in $(sed -n 's/^    {"pp\.[0-9.]*", -1, \(0x[0-9a-f]*\)ull},$/\1/p' "$d/stage$s/pipe_stage.c"); do
      for ((t = s + P; t < S; t += P)); do (((m >> t) & 1)) && mates=$((mates + 1)); done
    done
    ins=$(sed -n 's/^    {"\(pp\.[0-9.]*\)", [0-9]*, 0},$/\1/p' "$d/stage$s/pipe_stage.c")
    for v in $ins; do grep -q "^    {\"$v\", -1, 0x" "$d/stage$s/pipe_stage.c" && relays=$((relays + 1)); done
  done
  if [ "$mates" != 0 ]; then bad "$name: $mates values sent to a later stage of their own device group (not relayed)"; fi
  if [ "$fam" = mlp ] && [ "$relays" = 0 ]; then bad "$name: the skip is not relayed (no stage sends on what it receives)"; fi
  if [ "$X" = dl ]; then dl=(env GALV_COMM_DELAY_US=300 MPIRUN="$MPIRUN -x GALV_COMM_DELAY_US"); else dl=(); fi
  if ! timeout 120 "${dl[@]}" "$d/launch" --batches "$T/$fam-b" --steps $STEPS -o "$d.w" --trace "$d.trace.json" >"$d.log" 2>"$T/err" </dev/null; then
    bad "$name: run: $(grep -m3 -i error "$T/err" "$d.log")"
    continue
  fi
  # dptpx: each group's 4 devices a node of their own, so the crossing blocks are scattered over tp and gathered
  # (docs/pipeline.md, "Scattered over tp, gathered in place"): every sending rank reports its scattered values
  if [ "$X" = dptpx ]; then
    nsc=$(grep -c 'cross-stage .*scattered over the ranks of a block [1-9]' "$d.log")
    [ "$nsc" -ge 16 ] || bad "$name: $nsc cross-stage lines with scattered values, expected one per direction and sending rank"
    # placement across nodes (GALV_HOSTS: out/launch's rankfile): a device group's V stages on its node, each rank on its
    # device's cores; mpirun replaced by true to read the rankfile alone (the host names need not exist)
    if GALV_HOSTS=nodeA,nodeB GALV_CORES_PER_NODE=8 GALV_RANKFILE="$d.rf" MPIRUN=true "$d/launch" >/dev/null 2>"$T/err"; then
      want=$(for s in 0 1 2 3; do for r in 0 1 2 3; do
        echo "rank $((s * 4 + r))=node$([ $((s % 2)) = 0 ] && echo A || echo B) slot=$((2 * r))-$((2 * r + 1))"; done; done)
      if [ "$(cat "$d.rf")" = "$want" ]; then
        ok "$name: GALV_HOSTS=nodeA,nodeB: the rankfile places stages 0 and 2 (group 0) on nodeA, 1 and 3 on nodeB, rank r of each on cores 2r-2r+1"
      else
        bad "$name: GALV_HOSTS rankfile: $(tr '\n' ';' <"$d.rf"), expected $(echo "$want" | tr '\n' ';')"
      fi
    else
      bad "$name: GALV_HOSTS=nodeA,nodeB: launch failed: $(cat "$T/err")"
    fi
    # too few hosts, an unreadable host file: one line each, non-zero, nothing run
    GALV_HOSTS=nodeA MPIRUN=false "$d/launch" >/dev/null 2>"$T/err"
    rc=$? e=$(cat "$T/err")
    if [ $rc != 0 ] && [ "$(wc -l <"$T/err")" = 1 ] && [[ $e == *"launch: error: the plan places its 16 ranks on 2 nodes of 4 devices, but GALV_HOSTS / GALV_HOSTFILE names 1 host"* ]]; then
      ok "$name: GALV_HOSTS with one host: $e"
    else
      bad "$name: GALV_HOSTS with one host: rc $rc, '$e'"
    fi
    GALV_HOSTFILE="$T/no-such-hostfile" MPIRUN=false "$d/launch" >/dev/null 2>"$T/err"
    rc=$? e=$(cat "$T/err")
    if [ $rc != 0 ] && [[ $e == "launch: error: GALV_HOSTFILE $T/no-such-hostfile: cannot read it" ]]; then
      ok "$name: GALV_HOSTFILE missing: $e"
    else
      bad "$name: GALV_HOSTFILE missing: rc $rc, '$e'"
    fi
    # run under the rankfile (both nodes this machine, 2 cores: slots 0 1 0 1 ..): the same weights bit for bit
    printf 'localhost slots=4\nlocalhost slots=4\n' >"$T/hosts"
    if GALV_HOSTFILE="$T/hosts" timeout 120 "$d/launch" --batches "$T/$fam-b" --steps $STEPS -o "$d.wp" >"$d.logp" 2>"$T/err" </dev/null; then
      nd=0
      for w in "$d.w"/*.npy; do cmp -s "$w" "$d.wp/$(basename "$w")" || nd=$((nd + 1)); done
      nw=$(ls "$d.w"/*.npy | wc -l)
      if [ "$nd" = 0 ] && [ "$nw" -gt 0 ]; then ok "$name: run placed by GALV_HOSTFILE: $nw weights equal to the unplaced run's bit for bit"
      else bad "$name: run placed by GALV_HOSTFILE: $nd of $nw weights differ from the unplaced run's"; fi
    else
      bad "$name: run placed by GALV_HOSTFILE: $(grep -m3 -i error "$T/err" "$d.logp")"
    fi
  fi
  if msg=$(python3 - "$ref.log" "$d.log" "$ref.w" "$d.w" "$d.galvc" "$S" "$P" "$STEPS" "$SRC/tests/lib" "${PREC:-fp32}" "${G:-$P}" "$B" 2>&1 <<'PY'
import sys, re
la, lb, wa, wb, gl, S, P, steps, lib, prec, G, B = sys.argv[1:13]
B = int(B)
S, P, steps, K = int(S), int(P), int(steps), int(G) // int(P)  # K devices per group
sys.path.insert(0, lib)
from same_training import check, losses
if prec == "fp32":
    same = check(la, lb, wa, wb, steps=list(range(steps)))
else:  # 16-bit: the losses within 1e-3 of the single device's (the bound tests/cpu_bf16.sh sets for ranks)
    a, b = losses(la), losses(lb)
    if sorted(a) != list(range(steps)) or sorted(b) != sorted(a):
        sys.exit(f"losses {b} vs one device {a}")
    dl = max(abs(a[k] - b[k]) for k in a)
    if dl > 1e-3:
        sys.exit(f"losses {b} differ from one device's {a} by {dl:.2g} (bound 1e-3)")
    same = f"losses within {dl:.1e} of one device ({prec})"
g, r = open(gl).read(), open(lb).read()
pred = {int(s): (int(b), int(n)) for s, b, n in re.findall(
    r"stage (\d+): interleaved: predicted peak saved bytes (\d+) \((\d+) microbatches", g)}
# per stage rank; per device group and device ("; device k of K" with more than one device per group)
meas = {(int(s), int(k or 0)): (int(b), int(n)) for s, k, b, n in re.findall(
    r"\[stage (\d+), rank \d+(?:, stage rank (\d+))?\]: saved activations in flight: peak (\d+) bytes \((\d+) microbatches", r)}
DEV = r"(?:; device (\d+) of \d+)?"
gpred = {int(d): (int(b), int(n)) for d, b, n in re.findall(
    r"device group (\d+) \(stages [\d,]+\): interleaved: predicted peak saved bytes (\d+) \((\d+) chunk microbatches", g)}
gmeas = {(int(d), int(k or 0)): (int(b), int(n)) for d, k, b, n in re.findall(
    r"device group (\d+) \(stages [\d,]+" + DEV + r"\): saved activations in flight: peak (\d+) bytes \((\d+) chunk microbatches", r)}
if sorted(meas) != [(s, k) for s in range(S) for k in range(K)] or sorted(pred) != list(range(S)):
    sys.exit(f"stage lines: predicted {pred}, measured {meas}")
if sorted(gmeas) != [(d, k) for d in range(P) for k in range(K)] or sorted(gpred) != list(range(P)):
    sys.exit(f"group lines: predicted {gpred}, measured {gmeas}")
for (s, k), v in meas.items():
    if v != pred[s]: sys.exit(f"stage {s} rank {k}: measured peak {v} != predicted {pred[s]} (bytes, microbatches)")
for (d, k), v in gmeas.items():
    if v != gpred[d]: sys.exit(f"group {d} device {k}: measured peak {v} != predicted {gpred[d]} (bytes, entries)")
if "(interleaved)" not in r: sys.exit("the stages did not run the interleaved schedule")
# each group's memory: the tracker's peak against the plan's (galvc's line = the runtime's figure), 5 % either way
mpred = {int(d): (int(t), int(s), int(h)) for d, t, s, h in re.findall(
    r"device group (\d+) \(stages [\d,]+\): interleaved: predicted memory peak (\d+) bytes \(states (\d+) \+ saved "
    r"activations, send copies and batons at their peak (\d+)\)", g)}
mmeas = {(int(d), int(k or 0)): (int(m), int(l), int(a), int(t)) for d, k, m, l, a, t in re.findall(
    r"device group (\d+) \(stages [\d,]+" + DEV + r"\): memory peak (\d+) bytes \(tracker: the ranks' live buffers summed at the "
    r"group's entries, peak (\d+), \+ their arenas written (\d+)\), the plan's peak (\d+) ", r)}
if sorted(mpred) != list(range(P)) or sorted(mmeas) != [(d, k) for d in range(P) for k in range(K)]:
    sys.exit(f"group memory lines: galvc {mpred}, the run {mmeas}")
mem = []
for (d, k) in sorted(mmeas):
    m, l, a, t = mmeas[d, k]
    if t != mpred[d][0]: sys.exit(f"group {d}: the run's plan figure {t} != galvc's {mpred[d][0]}")
    if m != l + a or not a: sys.exit(f"group {d}: tracker peak {m} != live {l} + arenas {a}")
    dev = 100 * (m - t) / t
    if abs(dev) > 5: sys.exit(f"group {d} device {k}: tracker peak {m} bytes vs the plan's {t} ({mpred[d][1]} states + "
                              f"{mpred[d][2]}): {dev:+.2f}% (bound 5%)")
    if k == 0: mem.append(f"group {d} {m} / {t} ({dev:+.2f}%)")
# the send copies: every forward value here gets its gradient back, so each rank of a stage before the last releases
# at least one copy per microbatch as its receiver answers (runtime/pipe.c il_release), not at the step's end
rel = {(int(s), int(k or 0)): (int(a), int(b)) for s, k, a, b in re.findall(
    r"\[stage (\d+), rank \d+(?:, stage rank (\d+))?\]: interleaved: send copies released once their receivers had them "
    r"(\d+), at the step's end (\d+)", r)}
if sorted(rel) != sorted(meas): sys.exit(f"send copy lines for {sorted(rel)}, expected {sorted(meas)}")
for (s, k), (a, b) in rel.items():
    if s < S - 1 and a < B * steps: sys.exit(f"stage {s} rank {k}: {a} send copies released as received, expected at least "
                                             f"{B * steps} (one per microbatch and step), {b} at the step's end")
nrel, nend = sum(a for a, b in rel.values()), sum(b for a, b in rel.values())
print(f"{same}; send copies released as received {nrel}, at the step's end {nend}; peak saved bytes per group measured = predicted: "
      + " ".join(f"{gmeas[d, 0][0]} ({gmeas[d, 0][1]} entries)" for d in range(P))
      + "; memory tracked / planned: " + ", ".join(mem) + (f" (each of {K} devices per group alike within 5 %)" if K > 1 else ""))
PY
); then
    ok "$name: $msg; $mates value(s) sent inside a device group"
  else
    bad "$name: $msg"
  fi
  if msg=$(python3 "$SRC/tests/pipe_trace_check.py" "$d.plan.json" "$d.trace.json" "$S" "$B" interleaved "$V" 2>&1); then
    ok "$name: $msg"
  else
    bad "$name trace: $msg"
  fi
done
# an interleaved timeline is not checked as another V's
if [ -f "$T/gpt2-2-2-4.plan.json" ]; then
  if msg=$(python3 "$SRC/tests/pipe_trace_check.py" "$T/gpt2-2-2-4.plan.json" "$T/gpt2-2-2-4.trace.json" 4 4 1f1b 2>&1); then
    bad "interleaved timeline accepted as 1f1b: $msg"
  else
    ok "interleaved timeline checked as 1f1b: rejected (${msg:0:60}...)"
  fi
fi

# --schedule auto --virtual-stages 2: the four schedules priced (their best plans' timelines), the shortest chosen
if timeout 300 "$BUILD/galvc" "$T/gpt2.onnx" --batch 8 --seq 8 --train --pipeline-stages 2 --virtual-stages 2 --schedule auto \
    --microbatches 4 --target cpu --plan-only >"$T/auto.out" 2>&1 </dev/null; then
  if msg=$(python3 - "$T/auto.out" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
m = re.search(r"pipeline schedule (\S+) \(chosen: .*?:((?: \S+ [\d.]+ / [\d.]+ ms)+)\)", t)
if not m: sys.exit("no 'pipeline schedule ... (chosen' line")
pred = {k: float(v) for k, v, _ in re.findall(r" (\S+) ([\d.]+) / ([\d.]+) ms", m.group(2))}
if sorted(pred) != ["1f1b", "gpipe", "interleaved", "zb-h1"] or pred[m.group(1)] != min(pred.values()):
    sys.exit(f"chose {m.group(1)} of {pred}")
n = re.search(r"pipeline: (\d+) stages", t)
want = 4 if m.group(1) == "interleaved" else 2
if not n or int(n.group(1)) != want: sys.exit(f"chose {m.group(1)}: the plan has {n and n.group(1)} stages, expected {want}")
print(f"chose {m.group(1)} of {pred}")
PY
  ); then
    ok "auto with --virtual-stages 2: $msg"
  else
    bad "auto with --virtual-stages 2: $msg"
  fi
else
  bad "auto with --virtual-stages 2: galvc: $(grep -m3 error "$T/auto.out")"
fi

# bad input: one error line, exit 2
for args in "--microbatches 3" "--microbatches 2 --pipeline-recompute" "--microbatches 4 --gpus 3" "--microbatches 4 --gpus 4 --stage-devices 1,3"; do
  # shellcheck disable=SC2086
  timeout 60 "$BUILD/galvc" "$T/gpt2.onnx" --batch 12 --seq 8 --train --pipeline-stages 2 --virtual-stages 2 --schedule interleaved \
    $args --target cpu -o "$T/bad/" >"$T/out" 2>"$T/err"
  rc=$?
  if [ "$rc" = 2 ] && [ "$(wc -l <"$T/err")" = 1 ] && [ ! -e "$T/bad" ]; then
    ok "$args: $(cat "$T/err")"
  else
    bad "$args: exit $rc, $(head -3 "$T/err")"
  fi
done
# more stages than layer groups: P x V = 64 stages of a 2-layer GPT-2
timeout 120 "$BUILD/galvc" "$T/gpt2.onnx" --batch 8 --seq 8 --train --pipeline-stages 8 --virtual-stages 8 --schedule interleaved \
  --microbatches 8 --target cpu -o "$T/bad/" >"$T/out" 2>"$T/err"
rc=$?
if [ "$rc" != 0 ] && [ "$(grep -c error "$T/err")" = 1 ] && grep -q "groups" "$T/err" && [ ! -e "$T/bad/stage0" ]; then
  ok "P=8 V=8 on 2 layers: $(grep error "$T/err")"
else
  bad "P=8 V=8 on 2 layers: exit $rc, $(head -3 "$T/err")"
fi
echo "pipeline_interleaved: $pass passed, $fail failed"
[ "$fail" = 0 ]
