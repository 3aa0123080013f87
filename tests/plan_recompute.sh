#!/usr/bin/env bash
# Recomputation searched with the microbatch count (galvc's default
# training search, no --recompute; tools/galvc.c, docs/planner.md
# "Recomputation"): a GPT-2-style model (4 layers, hidden 64, seq 256,
# batch 8) planned on 2 CPU ranks under memory limits taken from galvc's
# own figures:
#   - no limit: recompute=none, nothing more tried, plan.json records it;
#   - a limit 1 byte under the unconstrained none plan: memory bound, so
#     selective and all are tried too (each with the fewest microbatches
#     that fit) and the fastest predicted step wins: the winner printed is
#     the minimum of the three lines, and plan.json's recompute /
#     microbatches / step are the winner's;
#   - a limit between the smallest all-recomputed plan and the smallest
#     plan without recomputation (8 microbatches each): none cannot fit,
#     the search says so and ends with a recomputing plan under the limit;
#   - each recomputing mode's plan (at its count) with only its first k
#     layers recomputed: k = 0, then a search for the fewest k that fit
#     (the lines of the k tried; from 8 microbatches, here from 3 with
#     GALV_STAND_MIN=3, priced from 2 first and the k picked realised in
#     full); the fastest of these and the uniform
#     winner is plan.json's (recompute=first:k / selective:first:k), at
#     the limit above and 1 byte under the smallest plan without
#     recomputation; there also the same plan as each k realised in full
#     (GALV_RECOMPUTE_PARTIAL=full);
#   - --plan reproduces the recomputation and microbatches (same step);
#     --recompute=none beside it is a conflict; the compiled plan runs 2
#     AdamW steps on 2 ranks = one device without recomputation;
#   - bad input: a plan.json recompute that is not a string, one line.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
export CFLAGS=-O0
G="$BUILD/galvc"
python3 "$SRC/examples/make_model.py" gpt2 -o "$T/m.onnx" --layers 4 --hidden 64 --heads 4 --vocab 64 --max-pos 256 \
  --no-verify >/dev/null || { echo "FAIL make_model"; exit 1; }
A=("$T/m.onnx" --batch 8 --seq 256 --train --eps 1e-6 --gpus 2 --target cpu --fused-attention off) # selective recomputation of the four-op chains
field() { python3 -c "import json,sys; p=json.load(open(sys.argv[1])); print(p.get('recompute'), p.get('microbatches', 1), p['predicted']['step_ns'], p['memory_per_device']['total'])" "$1"; }
smallest() { # RECOMPUTE: the smallest plan's bytes with 8 microbatches (the most the batch allows)
  "$G" "${A[@]}" --plan-only -q --recompute="$1" --microbatches 8 --memory-limit 1000 2>&1 </dev/null |
    sed -n 's/.*no plan fits .* the smallest needs \([0-9]*\) bytes.*/\1/p'
}
# the winner line must be the minimum of the per-mode lines; plan.json the winner's
winner_ok() { # OUT PLAN LIMIT
  python3 - "$1" "$2" "$3" <<'PY'
import json, re, sys
out, plan, limit = open(sys.argv[1]).read(), json.load(open(sys.argv[2])), int(sys.argv[3])
modes = {m: (int(b), float(t)) for m, b, t in re.findall(r"^galvc: recompute=(\w+): (\d+) microbatch(?:es)?, predicted step ([0-9.]+) ms", out, re.M)}
w = re.search(r"^galvc: recompute=(\w+) with (\d+) microbatch(?:es)?: the fastest predicted step \(([0-9.]+) ms\)$", out, re.M)
if not w or not modes:
    sys.exit("no per-mode or winner line")
best = min(modes, key=lambda m: modes[m][1])
got = (plan.get("recompute"), plan.get("microbatches", 1), plan["predicted"]["step_ns"] / 1e6)
# the polish (one layer group's choice changed at a time, realised in full) may then take a faster plan of the same
# recomputation and count: plan.json's step is the polished plan's as compiled, never slower than the chosen one's
pol = re.search(r"^galvc: the polished plan compiled: predicted step ([0-9.]+) ms", out, re.M)
if w.group(1) != best:
    sys.exit(f"tried {modes}, winner line {w.groups()}")
# the recomputing modes' plans with fewer layers recomputed (the first k): k = 0, then bisected to the fewest k that
# fit; the fastest of those and the winner is plan.json's. A k is realised in full (tries), or at a count over 2
# priced from 2 microbatches first (priced: its own bytes and those corrected by the last k realised); a k priced
# alone over the limit does not fit (the count's copies never take less than two)
priced = {}
for m, k, L, b, t, y in re.findall(
        r"^galvc: recompute=(\w+) on (\d+) of (\d+) layers, (\d+) microbatches: priced from 2 ([0-9.]+) ms, (\d+) bytes per device", out, re.M):
    priced.setdefault(m, {})[int(k)] = (int(b), float(t), int(y))
tries = {}
for m, k, L, b, t, y, o in re.findall(
        r"^galvc: recompute=(\w+) on (\d+) of (\d+) layers, (\d+) microbatch(?:es)?: predicted step ([0-9.]+) ms, (\d+) bytes per device"
        r"( \(over the limit\))?$", out, re.M):
    tries.setdefault(m, {})[int(k)] = (int(b), float(t), int(y), bool(o))
part = re.search(r"^galvc: recompute=(\w+) on (\d+) of (\d+) layers \(recompute=(\S+)\), (\d+) microbatch(?:es)?: the fastest "
                 r"predicted step \(([0-9.]+) ms, (\d+) bytes; on every layer ([0-9.]+) ms\)$", out, re.M)
rec = [m for m in modes if m != "none"]
same0 = dict(re.findall(r"^galvc: recompute=(\w+) on 0 of \d+ layers: recompute=(\w+)'s plan and count, realised above$", out, re.M))
for m, f in same0.items():
    tries.setdefault(m, {})
    if 0 in tries.get(f, {}) and 0 not in tries[m]:
        tries[m][0] = tries[f][0]
for m in priced:
    tries.setdefault(m, {})
def k0(m): # k = 0 at the mode's count: realised or priced
    return (tries[m][0] if 0 in tries[m] else priced.get(m, {}).get(0, (None,)))[0] == modes[m][0]
if sorted(tries) != sorted(rec) or not all(k0(m) for m in tries):
    sys.exit(f"recomputing modes {rec}: fewer layers tried {tries}, priced {priced} (each from k = 0 at its count)")
if part:
    pm, k, L, lst, b, t = part.group(1), int(part.group(2)), int(part.group(3)), part.group(4), int(part.group(5)), float(part.group(6))
    tm = tries.get(pm, {})
    want = "none" if k == 0 else f"first:{k}" if pm == "all" else f"selective:first:{k}"
    below = k == 0 or ((k - 1) in tm and tm[k - 1][3]) or priced.get(pm, {}).get(k - 1, (0, 0, 0))[2] > limit
    fewest = k in tm and not tm[k][3] and all(tm[j][3] for j in tm if j < k) and below
    faster = all(t <= tm2[j][1] + 0.0015 for tm2 in tries.values() for j in tm2 if not tm2[j][3])
    if lst != want or b != modes[pm][0] or not t < modes[best][1] or not fewest or not faster or \
            got[0] != lst or got[1] != b or abs(got[2] - (float(pol.group(1)) if pol else t)) > 0.0015 or \
            (pol and float(pol.group(1)) > t + 0.0015):
        sys.exit(f"tried {modes}, fewer layers {tries}, priced {priced}, chosen line {part.groups()}, plan.json {got}")
    print(f"tried {modes}; recompute={pm} on {k} of {L} layers (the fewest that fit; {k - 1} over the limit): {t:.3f} ms "
          f"against {modes[best][1]:.3f}; plan.json {got[0]}, {got[1]} microbatches, {got[2]:.3f} ms")
    sys.exit(0)
if any(t < modes[best][1] - 0.0015 for tm in tries.values() for (b, t, y, o) in tm.values() if not o):
    sys.exit(f"a try with fewer layers recomputed fits and is faster, not chosen: {tries}")
want = float(pol.group(1)) if pol else modes[best][1]
if got[0] != best or got[1] != modes[best][0] or abs(got[2] - want) > 0.0015 or want > modes[best][1] + 0.0015:
    sys.exit(f"tried {modes}, winner line {w.groups()}, polished {pol.group(1) if pol else None}, plan.json {got}")
print(f"tried {modes}; plan.json {got[0]}, {got[1]} microbatches, {got[2]:.3f} ms{' (polished)' if pol else ''}")
PY
}

# no limit: none, nothing else tried
out=$("$G" "${A[@]}" --plan-only --plan-out "$T/free.json" 2>&1 </dev/null)
read -r rc0 b0 s0 m0 <<<"$(field "$T/free.json" 2>/dev/null)"
if [ "${rc0:-}" = none ] && [ "${b0:-}" = 1 ] && ! grep -q "^galvc: recompute=" <<<"$out"; then
  ok "no limit: recompute none, 1 microbatch, $m0 bytes, nothing more tried"
else bad "no limit: plan.json '$rc0 $b0', $(grep -m2 '^galvc: recompute' <<<"$out")"; fi

# memory bound: 1 byte under the unconstrained plan
if [ -n "${m0:-}" ]; then
  lim=$((m0 - 1))
  "$G" "${A[@]}" --plan-only --memory-limit $lim --plan-out "$T/mb.json" >"$T/mb.out" 2>&1 </dev/null
  if grep -q "(memory bound: trying recompute=selective and all)$" "$T/mb.out" && r=$(winner_ok "$T/mb.out" "$T/mb.json" $lim 2>&1) &&
     [ "$(field "$T/mb.json" | cut -d' ' -f4)" -le $lim ]; then
    ok "limit $lim (unconstrained - 1): $r"
  else bad "limit $lim: $(grep -m6 '^galvc: \(recompute\|no plan\|micro\)\|error' "$T/mb.out") ${r:-}"; fi
fi

# none cannot fit at all: between the smallest all-recomputed and the smallest plain plan
yn=$(smallest none) ya=$(smallest all)
if [ -n "$yn" ] && [ -n "$ya" ] && [ "$ya" -lt "$yn" ]; then
  lim=$(((ya + yn) / 2))
  "$G" "${A[@]}" --plan-only --memory-limit $lim --plan-out "$T/rc.json" >"$T/rc.out" 2>&1 </dev/null
  read -r rc1 b1 s1 m1 <<<"$(field "$T/rc.json" 2>/dev/null)"
  if grep -q "^galvc: recompute=none: no plan fits: trying recompute=selective$" "$T/rc.out" && [ -n "${rc1:-}" ] &&
     [ "$rc1" != none ] && [ "$m1" -le $lim ] && r=$(winner_ok "$T/rc.out" "$T/rc.json" $lim 2>&1); then
    ok "limit $lim (smallest: none $yn, all $ya bytes): none does not fit; $r; $m1 bytes"
  else bad "limit $lim (none $yn, all $ya): plan.json '${rc1:-} ${b1:-} ${m1:-}': $(grep -m6 '^galvc: \(recompute\|no plan\)\|error' "$T/rc.out") ${r:-}"; fi
  # 1 byte under the smallest plan without recomputation: fewer layers recomputed by either mode, the fastest that fits
  lim2=$((yn - 1))
  GALV_STAND_MIN=3 "$G" "${A[@]}" --plan-only --memory-limit $lim2 --plan-out "$T/rc2.json" >"$T/rc2.out" 2>&1 </dev/null
  read -r rc3 b3 s3 m3 <<<"$(field "$T/rc2.json" 2>/dev/null)"
  if [ -n "${m3:-}" ] && [ "$m3" -le $lim2 ] && r=$(winner_ok "$T/rc2.out" "$T/rc2.json" $lim2 2>&1); then
    ok "limit $lim2 (the smallest plan without recomputation - 1): $r; $m3 bytes"
  else bad "limit $lim2: plan.json '${rc3:-} ${b3:-} ${m3:-}': $(grep -m8 '^galvc: recompute[=:]\|error' "$T/rc2.out") ${r:-}"; fi
  # the same plan with each k realised in full (no k priced from 2)
  GALV_RECOMPUTE_PARTIAL=full "$G" "${A[@]}" --plan-only --memory-limit $lim2 --plan-out "$T/rc2f.json" >"$T/rc2f.out" 2>&1 </dev/null
  read -r rc4 b4 s4 m4 <<<"$(field "$T/rc2f.json" 2>/dev/null)"
  np=$(grep -c "priced from 2 .* ms, [0-9]* bytes per device (corrected" "$T/rc2.out")
  nf=$(grep -c "^galvc: recompute=[a-z]* on [0-9]* of [0-9]* layers, [0-9]* microbatch.*: predicted step" "$T/rc2.out")
  nff=$(grep -c "^galvc: recompute=[a-z]* on [0-9]* of [0-9]* layers, [0-9]* microbatch.*: predicted step" "$T/rc2f.out")
  if [ -n "${rc4:-}" ] && [ "$rc4 $b4 $s4 $m4" = "${rc3:-} ${b3:-} ${s3:-} ${m3:-}" ] && [ "$np" -gt 0 ] && [ "$nf" -lt "$nff" ]; then
    ok "limit $lim2: the same plan ($rc4, $b4 microbatches, $s4 ns, $m4 bytes) as with each k realised in full: $np priced from 2 and $nf realised, against $nff realised"
  else bad "limit $lim2: priced from 2 '${rc3:-} ${b3:-} ${s3:-} ${m3:-}' ($np priced, $nf realised), each k in full '${rc4:-} ${b4:-} ${s4:-} ${m4:-}' ($nff realised)"; fi
  # --plan reproduces it; --recompute=none beside it conflicts
  "$G" "${A[@]}" --plan-only --plan "$T/rc.json" --plan-out "$T/re.json" >/dev/null 2>&1 </dev/null
  read -r rc2 b2 s2 m2 <<<"$(field "$T/re.json" 2>/dev/null)"
  e=$("$G" "${A[@]}" --plan-only --plan "$T/rc.json" --recompute=none -q 2>&1 </dev/null); erc=$?
  if [ "${rc2:-}" = "$rc1" ] && [ "${b2:-}" = "$b1" ] && [ "${s2:-}" = "$s1" ] && [ $erc = 2 ] && [ "$(wc -l <<<"$e")" = 1 ] &&
     grep -q "the plan was priced with --recompute=$rc1: it conflicts with --recompute=none" <<<"$e"; then
    ok "--plan: recompute $rc2, $b2 microbatches, $s2 ns reproduced; --recompute=none with it: $e"
  else bad "--plan: '${rc2:-} ${b2:-} ${s2:-}' vs '$rc1 $b1 $s1'; conflict exit $erc: $e"; fi
  # the plan runs: 2 ranks = one device without recomputation
  python3 - "$T" <<'PY'
import numpy as np, os, sys
t = sys.argv[1]
r = np.random.RandomState(3)
os.makedirs(f"{t}/b")
np.save(f"{t}/b/input_ids.npy", r.randint(0, 64, (2, 8, 256)).astype(np.int64))
np.save(f"{t}/b/labels.npy", r.randint(0, 64, (2, 8, 256)).astype(np.int64))
PY
  if timeout 300 "$G" "$T/m.onnx" --batch 8 --seq 256 --train --eps 1e-6 --target cpu --fused-attention off -q -o "$T/one/" </dev/null 2>"$T/one.err" &&
     timeout 300 "$G" "${A[@]}" --plan "$T/rc.json" -q -o "$T/two/" </dev/null 2>"$T/two.err" &&
     timeout 300 "$T/one/program" --batches "$T/b" --steps 2 -o "$T/one.w" </dev/null >"$T/one.log" 2>>"$T/one.err" &&
     timeout 300 "$T/two/launch" --batches "$T/b" --steps 2 -o "$T/two.w" </dev/null >"$T/two.log" 2>>"$T/two.err"; then
    if r=$(python3 - "$T" "$SRC/tests/lib" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
from same_training import check
t = sys.argv[1]
print(check(f"{t}/one.log", f"{t}/two.log", f"{t}/one.w", f"{t}/two.w"))
PY
    ); then ok "the chosen plan (recompute $rc1, $b1 microbatches) on 2 ranks = one device: $r"
    else bad "the chosen plan vs one device: $r"; fi
  else bad "compile / run of the chosen plan: $(grep -m3 error "$T/one.err" "$T/two.err")"; fi
else bad "smallest plans: none '$yn', all '$ya' (all must need less)"; fi

# bad input
python3 -c "
import json
p = json.load(open('$T/free.json')); p['recompute'] = 5; json.dump(p, open('$T/bad.json', 'w'), indent=1)"
e=$("$G" "${A[@]}" --plan-only --plan "$T/bad.json" -q 2>&1 </dev/null); erc=$?
if [ $erc != 0 ] && [ "$(wc -l <<<"$e")" = 1 ] && grep -q "bad.json: line [0-9]*: field 'recompute'" <<<"$e"; then ok "bad recompute field: $e"
else bad "bad recompute field: exit $erc: $e"; fi
echo "plan_recompute: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
