#!/usr/bin/env bash
# The microbatch count chosen from one stand-in run (tools/galvc.c,
# docs/planner.md "One planner run per recomputation") against the loop over
# counts on their own programs (GALV_COUNT_FULL=1: every count planned in
# full, doubling while the step improves), on the 4-layer hidden-64 GPT-2 of
# tests/plan_microbatches.sh (4 x a100-80g, batch 16, --recompute=none) under
# a limit just above what dp=4 with every unit ZeRO-3 needs at one
# microbatch (so one microbatch fits and is memory bound):
#   - the one-run search tries 1, then the stand-in of 4 (16 / gcd(16, 4));
#     its choice is compiled and realised at its count, the estimate printed
#     beside the realised step and memory;
#   - its plan.json step (the realised program's) is at most the full loop's
#     and both are within the limit: the same count or a faster realised one;
#   - it never plans 2 microbatches on their own program (the stand-in of 4
#     prices them); the searches of each are printed.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
. "$SRC/tests/lib/plan_counts.sh" # G, A (the model), field, z3_limit
z3_limit

"$G" "${A[@]}" --memory-limit "$lim" --plan-out "$T/one.json" </dev/null >/dev/null 2>"$T/one.out" || bad "one run: $(grep -m1 error "$T/one.out")"
GALV_COUNT_FULL=1 "$G" "${A[@]}" --memory-limit "$lim" --plan-out "$T/full.json" </dev/null >/dev/null 2>"$T/full.out" ||
  bad "full loop: $(grep -m1 error "$T/full.out")"
read -r b s m <<<"$(field "$T/one.json" 2>/dev/null)"
read -r fb fs fm <<<"$(field "$T/full.json" 2>/dev/null)"
if r=$(python3 - "$T/one.out" "$T/full.out" "${b:-0}" "${s:-0}" "${m:-0}" "${fb:-0}" "${fs:-0}" "${fm:-0}" "$lim" <<'PY'
import re, sys
one, full = open(sys.argv[1]).read(), open(sys.argv[2]).read()
b, s, m, fb, fs, fm, lim = (int(x) for x in sys.argv[3:])
bad = []
tried = [int(x) for x in re.findall(r"^galvc: 1 microbatch: predicted step [0-9.]+ ms, memory bound: trying (\d+)$", one, re.M)]
if tried != [4]: bad.append(f"after 1 microbatch tried {tried}: want the stand-in of 4")
real = re.findall(r"^galvc: (\d+) microbatches: predicted step ([0-9.]+) ms \(priced (?:from 2|at (\d+)[^)]*)\), realised ([0-9.]+) ms at (\d+)", one, re.M)
mine = [x for x in real if int(x[4]) == b]
if not mine: bad.append(f"no estimate-beside-realised line for the chosen {b} microbatches: {real}")
elif abs(float(mine[-1][3]) - s / 1e6) > 0.0005: bad.append(f"plan.json step {s} ns is not the realised {mine[-1][3]} ms")
if m > lim or fm > lim: bad.append(f"memory {m} / {fm} over the limit {lim}")
if not s <= fs: bad.append(f"one run: {b} microbatches, {s} ns; the full loop: {fb} microbatches, {fs} ns (want at most that)")
n1 = len(re.findall(r"^plan: mesh .*; (\d+) candidate programs realised", one, re.M))
searches = lambda out: sum(1 for x in re.findall(r"^plan: mesh .*; (\d+) candidate programs realised", out, re.M) if int(x) > 1)
if re.search(r"(trying|planned at) 2$", one, re.M): bad.append("the one-run search planned 2 microbatches on their own program")
print("; ".join(bad) if bad else
      f"limit {lim}: one run {b} microbatches {s} ns ({searches(one)} searches); full loop {fb} microbatches {fs} ns ({searches(full)} searches)")
sys.exit(1 if bad else 0)
PY
); then ok "$r"; else bad "$r"; fi
echo "plan_count_search: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
