#!/usr/bin/env bash
# recompute=none's count choice realised only when it wins (tools/galvc.c, defer_on; docs/planner.md, "A mode's
# count realised only when it wins"): the default training search on the 4-layer hidden-64 GPT-2 of
# tests/plan_recompute.sh (2 CPU ranks, batch 8, seq 256) under limits from 34 % down to 25 % of its unconstrained
# plan's memory, each beside GALV_COUNT_DEFER=off (every count choice realised at once, as before):
#   - the same plan.json (recompute, microbatches, step, memory) at every limit;
#   - at one limit or more none's choice is deferred ("realised only if recompute=none stays the fastest") and a
#     recomputing mode wins: one full realisation fewer than the run without deferral;
#   - at one limit or more none is deferred and wins: realised at the end (its "realised ... at N" line);
#   - GALV_COUNT_DEFER=skew:40 (each deferred choice's priced step taken 40 % lower) where a recomputing mode won:
#     the deferred winner is realised slower than priced, the modes compared again with its figures ("the
#     recomputation modes compared again"), until the one chosen is realised as priced or realised already, and the
#     plan is the one without deferral.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
G="$BUILD/galvc"
python3 "$SRC/examples/make_model.py" gpt2 -o "$T/m.onnx" --layers 4 --hidden 64 --heads 4 --vocab 64 --max-pos 256 \
  --no-verify >/dev/null || { echo "FAIL make_model"; exit 1; }
A=("$T/m.onnx" --batch 8 --seq 256 --train --eps 1e-6 --gpus 2 --target cpu --fused-attention off --plan-only)
field() { python3 -c "import json,sys; p=json.load(open(sys.argv[1])); print(p.get('recompute'), p.get('microbatches', 1), p['predicted']['step_ns'], p['memory_per_device']['total'])" "$1" 2>/dev/null; }
"$G" "${A[@]}" -q --plan-out "$T/free.json" </dev/null >/dev/null 2>&1 || { echo "FAIL the unconstrained plan"; exit 1; }
read -r _ _ _ m0 <<<"$(field "$T/free.json")"
[ -n "${m0:-}" ] || { echo "FAIL no memory in free.json"; exit 1; }
full() { grep -c "^galvc: [0-9]* microbatch.*realised [0-9.]* ms at [0-9]*" "$1"; }
won_rc="" won_none="" rc_lim=""
for pct in 34 31 29 27 25; do
  lim=$((m0 * pct / 100))
  "$G" "${A[@]}" --memory-limit $lim --plan-out "$T/on.json" </dev/null >"$T/on.out" 2>&1
  GALV_COUNT_DEFER=off "$G" "${A[@]}" --memory-limit $lim --plan-out "$T/off.json" </dev/null >"$T/off.out" 2>&1
  on=$(field "$T/on.json") off=$(field "$T/off.json")
  if [ -n "$on" ] && [ "$on" = "$off" ]; then ok "limit $lim ($pct %): the same plan with and without deferral: $on"
  else bad "limit $lim ($pct %): deferred '$on', realised at once '$off'"; continue; fi
  grep -q "realised only if recompute=none stays the fastest" "$T/on.out" || continue
  read -r r _ <<<"$on"
  if [ "$r" != none ] && [ "$(full "$T/on.out")" -lt "$(full "$T/off.out")" ]; then won_rc="$lim: $on ($(full "$T/on.out") full realisations against $(full "$T/off.out"))" rc_lim=$lim; fi
  if [ "$r" = none ] && grep -q "^galvc: [0-9]* microbatches: predicted step [0-9.]* ms (priced from 2), realised" "$T/on.out"; then won_none="$lim: $on"; fi
done
if [ -n "$won_rc" ]; then ok "none deferred, a recomputing mode won, none never realised: $won_rc"; else bad "no limit where none was deferred and a recomputing mode won with fewer realisations"; fi
if [ -n "$won_none" ]; then ok "none deferred and won, realised at the end: $won_none"; else bad "no limit where the deferred none won"; fi
if [ -n "$rc_lim" ]; then
  GALV_COUNT_DEFER=skew:40 "$G" "${A[@]}" --memory-limit $rc_lim --plan-out "$T/skew.json" </dev/null >"$T/skew.out" 2>&1
  GALV_COUNT_DEFER=off "$G" "${A[@]}" --memory-limit $rc_lim --plan-out "$T/ref.json" </dev/null >/dev/null 2>&1
  s=$(field "$T/skew.json") r=$(field "$T/ref.json")
  if grep -q "^galvc: recompute=[a-z]*, [0-9]* microbatches: realised [0-9.]* ms, [0-9]* bytes per device (priced [0-9.]* ms).*: the recomputation modes compared again" "$T/skew.out" &&
    [ -n "$s" ] && [ "$s" = "$r" ]; then ok "none priced 40 % too fast: realised, compared again, the same plan: $s"
  else bad "skew:40 at $rc_lim: '$s' against '$r': $(grep -m3 'compared again\|the fastest predicted\|error' "$T/skew.out")"; fi
fi
echo "plan_count_defer: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
