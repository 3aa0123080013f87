#!/usr/bin/env bash
# Gradient buckets (passes/bucket.c, galvc --bucket-mb; docs/planner.md
# "Gradient buckets"): the gradient reductions of a training step coalesced
# into buckets, one collective each, on 2 and 4 CPU ranks.
#   - tiny GPT-2- and Llama-style models (2 layers, hidden 32), dp, ZeRO-2
#     (reduce-scatter buckets) and dp x tp, each compiled with --bucket-mb 0
#     (one call per gradient, the default), 25 (DDP's default: the whole model in one
#     bucket) and 0.01 (about 10 KB: several buckets posted while the
#     backward computes), 2 AdamW steps: losses and every weight = the
#     single-device program's (rtol 1e-4, atol 1e-5);
#   - bytes: each program checks its wire count per collective kind against
#     the global program's prediction (runtime/spmd.c: a mismatch stops the
#     run; the line must say "from the global program"), and the bucketed
#     programs move the bytes of --bucket-mb 0 per kind; the reduction calls
#     the communicator hands to MPI drop (printed);
#   - GALV_COMM_DELAY_US=2000 (results withheld until their wait, poisoned
#     with NaN meanwhile): the small-bucket programs train bit for bit as
#     without the delay;
#   - --trace (dp and ZeRO-2, GPT-2, 2 ranks, small buckets):
#     tests/comm_trace_check.py's checks, fewer gradient reductions traced
#     than with --bucket-mb 0, and a bucket (a reduction located at the
#     update, "optimizer/..." for dp; for ZeRO-2, one call carrying several
#     gradients) posted before the backward's last kernel ends with kernels
#     running under it.
# Measured times are printed, never judged (2 shared cores).
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
export CFLAGS=-O0
export MPIRUN="$MPIRUN -x GALV_COMM_DELAY_US"
. "$SRC/tests/lib/tiny_lms.sh"
tiny_lms "$T"
python3 - "$T" <<'PY'
import numpy as np, os, sys
t = sys.argv[1]
r = np.random.RandomState(7)
os.makedirs(f"{t}/b")
np.save(f"{t}/b/input_ids.npy", r.randint(0, 64, (2, 8, 8)).astype(np.int64))
np.save(f"{t}/b/labels.npy", r.randint(0, 64, (2, 8, 8)).astype(np.int64))
PY
build() { # NAME MODEL GALVC_OPTIONS...
  local n=$1 m=$2; shift 2
  timeout 300 "$BUILD/galvc" "$m" --batch 8 --seq 8 --train --eps 1e-6 "$@" --target cpu -o "$T/$n/" 2>"$T/$n.err" </dev/null ||
    { bad "$n: galvc $*: $(grep -m3 error "$T/$n.err")"; return 1; }
}
run() { # NAME TAG DELAY_US [PROGRAM OPTIONS]: 2 steps -> $T/NAME.TAG.log, $T/NAME.TAG.w
  local n=$1 tag=$2 d=$3; shift 3
  if [ "$d" = off ]; then unset GALV_COMM_DELAY_US; else export GALV_COMM_DELAY_US=$d; fi
  local exe="$T/$n/launch" cs=--comm-stats
  [ -x "$exe" ] || exe="$T/$n/program" cs= # one device: no launch script, no communicator
  timeout 300 "$exe" --batches "$T/b" --steps 2 $cs -o "$T/$n.$tag.w" "$@" </dev/null >"$T/$n.$tag.log" 2>"$T/$n.$tag.err"
  local rc=$?
  unset GALV_COMM_DELAY_US
  return $rc
}
same() { # REF_NAME REF_TAG NAME TAG EXACT(0|1)
  python3 - "$T" "$@" "$SRC/tests/lib" <<'PY'
import sys
sys.path.insert(0, sys.argv[7])
from same_training import check
t, rn, rt, n, tag, exact = sys.argv[1:7]
if exact == "1":
    print(check(f"{t}/{rn}.{rt}.log", f"{t}/{n}.{tag}.log", f"{t}/{rn}.{rt}.w", f"{t}/{n}.{tag}.w", loss_rtol=0, exact=True))
else:
    print(check(f"{t}/{rn}.{rt}.log", f"{t}/{n}.{tag}.log", f"{t}/{rn}.{rt}.w", f"{t}/{n}.{tag}.w"))
PY
}
# "comm bytes" / "comm calls" of rank 0: KIND=VALUE pairs
stats() { # LOG WHAT(bytes|calls)
  python3 - "$1" "$2" <<'PY'
import re, sys
txt = open(sys.argv[1]).read()
m = re.search(r"rank 0 in \d+ runs: (all_reduce .*)" if sys.argv[2] == "calls" else
              r"comm bytes sent by rank 0 in \d+ runs: (all_reduce [^(]*)", txt.split("comm calls")[1] if sys.argv[2] == "calls" and "comm calls" in txt else txt)
if not m:
    sys.exit(1)
print(" ".join(f"{k}={v}" for k, v in re.findall(r"(\w+) (\d+)", m.group(1))))
PY
}

for fam in gpt2 llama; do
  build "$fam-1" "$T/$fam.onnx" && run "$fam-1" ref off || bad "$fam: single device: $(grep -m2 error "$T/$fam-1.ref.err")"
done

for c in ${GALV_BUCKET_CASES:-gpt2:2:dp gpt2:4:dp gpt2:2:zero2 gpt2:4:zero2 gpt2:4:dp,tp llama:2:dp llama:4:zero2}; do
  IFS=: read -r fam n s <<<"$c"
  opt=(--gpus "$n" --strategy "$s")
  [ "$s" = dp,tp ] && opt+=(--mesh dp=2,tp=2)
  base="$fam-$n-${s/,/_}"
  for mb in 0 25 0.01; do
    d="$base-$mb"
    build "$d" "$T/$fam.onnx" "${opt[@]}" --bucket-mb "$mb" || continue
    run "$d" plain off || { bad "$d: run: $(grep -m2 error "$T/$d.plain.err")"; continue; }
    if r=$(same "$fam-1" ref "$d" plain 0 2>&1); then ok "$d: = one device: $r"; else bad "$d: vs one device: $r"; fi
    grep -q "comm bytes sent by rank 0 in 2 runs: .* from the global program$" "$T/$d.plain.log" ||
      bad "$d: the wire bytes were not checked against the global program's prediction: $(grep -m1 'comm bytes' "$T/$d.plain.log")"
    [ "$mb" = 0 ] && continue
    grep -q "^bucket: [0-9]* gradient reductions in [0-9]* buckets" "$T/$d.err" || bad "$d: galvc made no bucket"
    b0=$(stats "$T/$base-0.plain.log" bytes) b1=$(stats "$T/$d.plain.log" bytes)
    c0=$(stats "$T/$base-0.plain.log" calls) c1=$(stats "$T/$d.plain.log" calls)
    if [ -n "$b0" ] && [ "$b0" = "$b1" ]; then ok "$d: bytes per kind = --bucket-mb 0's = predicted ($b1)"
    else bad "$d: bytes per kind $b1, --bucket-mb 0: $b0"; fi
    red() { awk '{for (i = 1; i <= NF; i++) if ($i ~ /^(all_reduce|reduce_scatter)=/) { split($i, a, "="); s += a[2] } } END { print s + 0 }' <<<"$1"; }
    if [ -n "$c1" ] && [ "$(red "$c1")" -lt "$(red "$c0")" ]; then
      ok "$d: reduction calls per rank in 2 steps $(red "$c0") -> $(red "$c1") ($(grep -m1 '^bucket:' "$T/$d.err"))"
    else bad "$d: reduction calls $c1, --bucket-mb 0: $c0"; fi
    if [ "$mb" = 0.01 ]; then
      if run "$d" delay 2000; then
        if r=$(same "$d" plain "$d" delay 1 2>&1); then ok "$d: GALV_COMM_DELAY_US=2000 = no delay: $r"
        else bad "$d: GALV_COMM_DELAY_US=2000 vs no delay: $r"; fi
      else bad "$d: run with GALV_COMM_DELAY_US=2000: $(grep -m2 error "$T/$d.delay.err")"; fi
    fi
  done
done

# the trace: bucket calls posted while the backward computes
for base in gpt2-2-dp gpt2-2-zero2; do
  d="$base-0.01"
  [ -x "$T/$d/launch" ] && [ -x "$T/$base-0/launch" ] || continue
  run "$d" trace off --trace "$T/$d.trace.json" && run "$base-0" trace off --trace "$T/$base-0.trace.json" ||
    { bad "$d: --trace: $(grep -m2 error "$T/$d.trace.err" "$T/$base-0.trace.err")"; continue; }
  if r=$(python3 "$SRC/tests/comm_trace_check.py" "$T/$d.trace.json" 2 2>&1); then ok "$d: trace: $(tr '\n' ' ' <<<"$r")"
  else bad "$d: trace: $r"; fi
  if r=$(python3 - "$T/$base-0.trace.json" "$T/$d.trace.json" "$T/$d.err" <<'PY' 2>&1
import json, re, sys
def step0(p):
    ev = [e for e in json.load(open(p))["traceEvents"] if e.get("ph") == "X" and e["args"].get("step") == 0]
    kern = [e for e in ev if e["tid"] == 0 and e["cat"] == "compute"]
    red = [e for e in ev if e["tid"] == 1 and e["name"] in ("all_reduce", "reduce_scatter")]
    return kern, red
k0, r0 = step0(sys.argv[1])
k1, r1 = step0(sys.argv[2])
if len(r1) >= len(r0):
    sys.exit(f"{len(r1)} reductions traced in step 0, --bucket-mb 0: {len(r0)}")
# a bucket call: at its last gradient's node, with more bytes than any call there of --bucket-mb 0
last_bwd = max(k["ts"] + k["dur"] for k in k1 if k["args"].get("node", "").endswith("/grad"))
single = {(c["name"], c["args"].get("node"), c["args"].get("bytes")) for c in r0}
buckets = [c for c in r1 if (c["name"], c["args"].get("node"), c["args"].get("bytes")) not in single]
if not buckets:
    sys.exit("no bucket call traced")
early = []
for c in buckets:
    t0, t1 = c["ts"], c["ts"] + c["dur"]
    under = [k for k in k1 if k["ts"] >= t0 - 1.5e-3 and k["ts"] + k["dur"] <= t1 + 1.5e-3]
    if c["ts"] < last_bwd and under:
        early.append((c, len(under)))
if not early:
    sys.exit(f"no bucket call posted before the backward's last kernel ends with kernels under it ({len(buckets)} bucket calls)")
c, u = max(early, key=lambda x: x[1])
print(f"step 0: {len(r0)} -> {len(r1)} reductions traced, {len(buckets)} of them buckets; {len(early)} posted before the backward's last kernel ends "
      f"with kernels under them (e.g. {c['name']} at {c['args'].get('node')}: {u} kernels, {c['dur'] / 1e3:.3f} ms in flight; measured)")
PY
  ); then ok "$d: $r"; else bad "$d: trace: $r"; fi
done

# --bucket-mb auto: the bucket pass prices cap 0 and alpha x beta x 1, 10, 100
# of the cluster's links and keeps the fastest. The choice must be the
# cheapest cap printed; on h100-sxm (latency bound) dp buckets, on cpu-local
# ZeRO-2 keeps one call per gradient (the cost model's prices, printed).
# Each program = one device, the bytes of --bucket-mb 0.
auto_check() { # NAME: the choice is the argmin of the priced caps; prints the chosen cap
  python3 - "$T/$1.err" <<'PY'
import re, sys
m = re.search(r"^bucket: auto on \S+: (.*)$", open(sys.argv[1]).read(), re.M)
if not m:
    sys.exit("no 'bucket: auto' line")
caps = [(int(b), int(ns), c) for b, ns, c in re.findall(r"(\d+) bytes (\d+) ns( \(chosen\))?", m.group(1))]
chosen = [b for b, ns, c in caps if c]
best = min(caps, key=lambda x: (x[1], x[0]))[0]
if chosen != [best]:
    sys.exit(f"chose {chosen}, the cheapest is {best}: {m.group(1)}")
print(best)
PY
}
for c in gpt2:2:dp:h100-sxm:buckets gpt2:2:zero2:cpu-local:none; do
  IFS=: read -r fam n s cl want <<<"$c"
  d="$fam-$n-$s-auto-$cl" base="$fam-$n-$s-0"
  build "$d" "$T/$fam.onnx" --gpus "$n" --strategy "$s" --cluster "$cl" --bucket-mb auto || continue
  cap=$(auto_check "$d") || { bad "$d: $cap"; continue; }
  line=$(grep -m1 '^bucket: auto' "$T/$d.err")
  if [ "$want" = buckets ]; then
    [ "$cap" -gt 0 ] && grep -q "^bucket: [0-9]* gradient reductions in [0-9]* buckets of at most $cap bytes" "$T/$d.err" &&
      ok "$d: buckets chosen ($line)" || bad "$d: expected buckets: $line"
  else
    [ "$cap" = 0 ] && ! grep -q "^bucket: [0-9]* gradient reductions in" "$T/$d.err" &&
      ok "$d: one call per gradient kept ($line)" || bad "$d: expected no buckets: $line"
  fi
  run "$d" plain off || { bad "$d: run: $(grep -m2 error "$T/$d.plain.err")"; continue; }
  if r=$(same "$fam-1" ref "$d" plain 0 2>&1); then ok "$d: = one device: $r"; else bad "$d: vs one device: $r"; fi
  b0=$(stats "$T/$base.plain.log" bytes) b1=$(stats "$T/$d.plain.log" bytes)
  grep -q "comm bytes sent by rank 0 in 2 runs: .* from the global program$" "$T/$d.plain.log" && [ -n "$b0" ] && [ "$b0" = "$b1" ] &&
    ok "$d: bytes per kind = predicted = --bucket-mb 0's ($b1)" || bad "$d: bytes $b1, --bucket-mb 0: $b0"
done

# the planner with --bucket-mb auto: its plan's cap in the report and in
# plan.json (bucket_mb); --plan compiles the same buckets, --bucket-mb X
# fixes the cap over the file's; the replayed program = one device. (The
# search among plans that use every axis, GALV_PLAN_IDLE=off: on this tiny
# model replicating on both devices is fastest, a plan with no gradient
# reduction to bucket; the data-parallel plan is the one this checks.)
P="$T/plan.json"
d=gpt2-2-plan
if GALV_PLAN_IDLE=off build "$d" "$T/gpt2.onnx" --gpus 2 --cluster h100-sxm --bucket-mb auto --plan-out "$P"; then
  bytes=$(grep -o 'gradient buckets of at most [0-9]* bytes' "$T/$d.err" | grep -o '[0-9]*')
  mib=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["bucket_mb"])' "$P" 2>&1)
  if [ -n "$bytes" ] && [ "$bytes" -gt 0 ] && python3 -c 'import sys; sys.exit(int(float(sys.argv[1]) * 1048576 + 0.5) != int(sys.argv[2]))' "$mib" "$bytes"; then
    ok "$d: the plan's buckets: $bytes bytes, plan.json bucket_mb $mib"
  else bad "$d: report '$bytes', plan.json bucket_mb '$mib'"; fi
  if build "$d-replay" "$T/gpt2.onnx" --gpus 2 --cluster h100-sxm --bucket-mb auto --plan "$P" &&
    grep -q "^bucket: [0-9]* gradient reductions in [0-9]* buckets of at most $bytes bytes" "$T/$d-replay.err" &&
    ! grep -q '^bucket: auto' "$T/$d-replay.err"; then
    ok "$d: --plan compiles the file's cap ($(grep -m1 '^bucket:' "$T/$d-replay.err"))"
    if run "$d-replay" plain off && r=$(same gpt2-1 ref "$d-replay" plain 0 2>&1); then ok "$d-replay: = one device: $r"
    else bad "$d-replay: vs one device: $r $(grep -m2 error "$T/$d-replay.plain.err")"; fi
  else bad "$d: --plan: $(grep -m2 'bucket\|error' "$T/$d-replay.err")"; fi
  if build "$d-fixed" "$T/gpt2.onnx" --gpus 2 --cluster h100-sxm --bucket-mb 0 --plan "$P" && ! grep -q '^bucket:' "$T/$d-fixed.err"; then
    ok "$d: --bucket-mb 0 over the file's bucket_mb: no bucket"
  else bad "$d: --bucket-mb 0 --plan: $(grep -m2 'bucket\|error' "$T/$d-fixed.err")"; fi
  sed 's/"bucket_mb": [0-9.e+-]*/"bucket_mb": "big"/' "$P" >"$T/bad.json"
  timeout 60 "$BUILD/galvc" "$T/gpt2.onnx" --batch 8 --seq 8 --train --gpus 2 --cluster h100-sxm --bucket-mb auto --plan "$T/bad.json" \
    --target cpu -o "$T/bad/" >/dev/null 2>"$T/bad.err" </dev/null
  rc=$?
  if [ $rc -ne 0 ] && [ $rc -lt 128 ] && grep -q "bad.json: line [0-9]*: field 'bucket_mb'" "$T/bad.err"; then ok "plan.json bucket_mb \"big\": $(grep -m1 bucket_mb "$T/bad.err")"
  else bad "plan.json bucket_mb \"big\": rc $rc: $(head -2 "$T/bad.err")"; fi
fi

# the search's per-unit accounting (plan_sharding.c bucket_split): a
# bucket's time split over its members' units, so each realisation's unit
# shares add up to its step (GALV_PLAN_DEBUG prints them)
if GALV_PLAN_DEBUG=1 timeout 120 "$BUILD/galvc" "$T/gpt2.onnx" --batch 8 --seq 8 --train --gpus 2 --cluster h100-sxm --bucket-mb auto \
  --plan-only --target cpu -o "$T/dbg/" >/dev/null 2>"$T/dbg.err" </dev/null; then
  if r=$(python3 - "$T/dbg.err" <<'PY'
import re, sys
rows = re.findall(r"^plan-debug: bucket cap \d+: unit shares ([\d ]+); sum (\d+), step (\d+); (\d+) bucket calls, (\d+) of them over more", open(sys.argv[1]).read(), re.M)
if not rows:
    sys.exit("no realisation with buckets")
for sh, s, st, nb, sp in rows:
    if sum(map(int, sh.split())) != int(s) or int(s) != int(st):
        sys.exit(f"unit shares {sh} sum to {s}, step {st}")
spread = sum(int(r[4]) for r in rows)
if not spread:
    sys.exit("no bucket over more than one unit")
print(f"{len(rows)} realisations with buckets: unit shares = step in each; {spread} bucket calls split over more than one unit")
PY
  ); then ok "planner unit shares: $r"; else bad "planner unit shares: $r"; fi
else bad "planner GALV_PLAN_DEBUG: $(grep -m2 error "$T/dbg.err")"; fi

# bad values: one error line, exit 2
for v in foo -1 autox; do
  timeout 60 "$BUILD/galvc" "$T/gpt2.onnx" --batch 8 --seq 8 --train --gpus 2 --bucket-mb "$v" --target cpu -o "$T/badv/" >/dev/null 2>"$T/badv.err" </dev/null
  rc=$?
  if [ $rc = 2 ] && [ "$(grep -c . "$T/badv.err")" = 1 ] && grep -q "bucket-mb expects auto or a non-negative number of MiB.*'$v'" "$T/badv.err"; then
    ok "--bucket-mb $v: $(cat "$T/badv.err")"
  else bad "--bucket-mb $v: rc $rc: $(head -3 "$T/badv.err")"; fi
done

echo "train_bucket: $pass passed, $fail failed"
[ "$fail" = 0 ]
