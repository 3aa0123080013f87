#!/bin/bash
# tests/plan.sh BUILD_DIR — the planner (docs/planner.md): where the ZeRO
# knapsack decides, the search's plan is within 1 % of the exhaustive optimum,
# --plan realises the plan it is given, a model no plan fits gives one error
# with the memory it needs.
set -u
B=$(cd "${1:-build}" && pwd)
# ctest runs this from the build tree: work from the source tree.
cd "${GALV_SOURCE_DIR:-$(dirname "$0")/..}" || exit 1
G=$B/galvc
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
python3 examples/make_model.py gpt2 -o "$T/g.onnx" --no-verify >/dev/null || exit 1
python3 examples/make_model.py llama -o "$T/l.onnx" --no-verify >/dev/null || exit 1
step() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['predicted']['step_ns'])" "$1"; }
pat() { # plan.json -> its ZeRO pattern, one character per unit (its stage, . for none)
  python3 -c "import json,sys; print(''.join(str(u['zero']) if u['zero'] else '.' for u in json.load(open(sys.argv[1]))['units']))" "$1"
}
# Optimality gap where the ZeRO knapsack decides: training on a dp mesh
# (--mesh dp=4, cpu-local: data parallelism pays), 6 layers (7 units, 128
# patterns), memory limits between the all-ZeRO and the no-ZeRO plan's
# memory (both realised through --plan): GPT-2 at 1/4, 1/2 and 3/4, Llama
# at 3/4 (each exhaustive search realises 131 programs, about a minute
# under the sanitizers; Llama at 1/4 and 1/2 also had gap 0). The exhaustive
# optimum must be a mixed pattern (else the case tests nothing), and the
# search's realised plan must cost at most 1 % more. (Exactly the same while
# the step was compute + communication, a sum over units the knapsack
# optimises exactly, but for 2 ns at GPT-2 1/2; since the step is the
# critical path of two streams (docs/planner.md, "Step time: two streams")
# a unit's communication hides under its neighbours' compute, the unit
# shares the DP adds are no longer independent of the pattern, and the
# gaps are 0, 0.85 %, 0.31 % (GPT-2 1/4, 1/2, 3/4) and 0.39 % (Llama 3/4).)
# The searches choose between no ZeRO
# and stage 1 (--zero-stages 1: more communication than none, a quarter of
# the optimizer state, a real trade-off; stage 3, which reduce-scatters the
# gradients, is faster and smaller than none on these models, so a choice
# between those two would test nothing, and all four stages would need
# 4^7 exhaustive realisations).
ZS=(--zero-stages 1)
python3 examples/make_model.py gpt2 -o "$T/g6.onnx" --layers 6 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null || exit 1
python3 examples/make_model.py llama -o "$T/l6.onnx" --layers 6 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null || exit 1
for m in g6 l6; do
  # (--recompute=none --microbatches 1: the ZeRO knapsack alone; galvc's recomputation search is
  # tests/plan_recompute.sh's, its microbatch count past the fewest tests/plan_microbatches.sh's)
  A=("$T/$m.onnx" --batch 8 --seq 16 --gpus 4 --mesh dp=4 --train --recompute=none --microbatches 1 --cluster cpu-local --plan-only -q)
  timeout 120 $G "${A[@]}" "${ZS[@]}" --plan-out "$T/p.json" 2>/dev/null || { echo "FAIL $m: search"; fail=1; continue; }
  python3 - "$T" <<'PY' || { echo "FAIL $m: uniform plans"; fail=1; continue; }
import json, sys
p = json.load(open(sys.argv[1] + "/p.json"))
p["batch_axes"], p["tp_axis"], p["vocab_axis"] = ["dp"], None, None
for z in (0, 1):
    p["units"] = [dict(u, zero=z) for u in p["units"]]
    json.dump(p, open(f"{sys.argv[1]}/z{z}.json", "w"))
PY
  $G "${A[@]}" --plan "$T/z0.json" --plan-out "$T/o0.json" 2>/dev/null && $G "${A[@]}" --plan "$T/z1.json" --plan-out "$T/o1.json" 2>/dev/null ||
    { echo "FAIL $m: the uniform plans do not realise"; fail=1; continue; }
  mem() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['memory_per_device']['total'])" "$1"; }
  hi=$(mem "$T/o0.json") lo=$(mem "$T/o1.json")
  fr=(0.25 0.5 0.75)
  [ $m = l6 ] && fr=(0.75)
  for f in "${fr[@]}"; do
    lim=$(python3 -c "print(int($lo + $f * ($hi - $lo)))")
    timeout 120 $G "${A[@]}" "${ZS[@]}" --memory-limit "$lim" --plan-out "$T/dp.json" 2>/dev/null || { echo "FAIL $m $f: search"; fail=1; continue; }
    timeout 300 $G "${A[@]}" "${ZS[@]}" --memory-limit "$lim" --plan-search exhaustive --plan-out "$T/ex.json" 2>/dev/null ||
      { echo "FAIL $m $f: exhaustive"; fail=1; continue; }
    a=$(step "$T/dp.json") b=$(step "$T/ex.json") pa=$(pat "$T/dp.json") pb=$(pat "$T/ex.json")
    tol=0.01
    if [[ $pb != *1* || $pb != *.* ]]; then
      echo "FAIL $m limit $lim ($f): the exhaustive optimum $pb is not a mixed ZeRO pattern"; fail=1
    elif python3 -c "import sys; sys.exit(not ($a >= $b and $a - $b <= $tol * $b))"; then
      echo "ok gap $m limit $lim ($f between all-ZeRO-1 $lo and none $hi): search $pa $a ns, exhaustive $pb $b ns"
    else
      echo "FAIL $m limit $lim ($f): search $pa $a ns, exhaustive optimum $pb $b ns (allowed gap $tol)"; fail=1
    fi
  done
done
# 12 layers: the repeated-layer path (candidates costed on the reduced
# programs, the choice realised in full). Without a limit (all ZeRO
# stages) its plan is within 1 % of the full search's (GALV_PLAN_LAYERS=full;
# equal before ZeRO-3 reduce-scattered its gradients under the planner, 0.93 %
# above since: the reduced unit table prices the first layer's ZeRO at no
# gain, docs/planner.md); choosing between none and stage 1, with a limit at
# 1/20 between the all-ZeRO-1 and the no-ZeRO memory, the reduced estimate's
# first choice does not fit in full, and the search must rerun (the report
# says "after N search(es)") and end with a plan that fits (it used to end
# in "no plan fits" there, naming a smallest memory below the limit).
python3 examples/make_model.py gpt2 -o "$T/g12.onnx" --layers 12 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null || exit 1
A12=("$T/g12.onnx" --batch 8 --seq 16 --gpus 4 --mesh dp=4 --train --recompute=none --cluster cpu-local --plan-only)
plan_desc() { python3 -c "import json,sys; p=json.load(open(sys.argv[1])); print(p['batch_axes'], p['tp_axis'], p['vocab_axis'], ''.join(str(u['zero']) if u['zero'] else '.' for u in p['units']), p['predicted']['step_ns'])" "$1"; }
$G "${A12[@]}" --plan-out "$T/r12.json" 2>"$T/r12.err" >/dev/null; GALV_PLAN_LAYERS=full $G "${A12[@]}" -q --plan-out "$T/f12.json" 2>/dev/null
# (all ZeRO stages: the reduced search's plan is 0.93 % above the full search's, docs/planner.md; at most 1 %)
if grep -q '^plan: 12 repeated layers: candidates costed on reduced programs, the choice realised in full$' "$T/r12.err" &&
   [ -n "$(plan_desc "$T/r12.json")" ] && python3 -c "import sys; a, b = int(sys.argv[1]), int(sys.argv[2]); sys.exit(not (b <= a <= 1.01 * b))" \
     "$(step "$T/r12.json")" "$(step "$T/f12.json")"; then
  echo "ok 12 layers, reduced programs: $(plan_desc "$T/r12.json") vs the full search's $(plan_desc "$T/f12.json")"
else
  echo "FAIL 12 layers: reduced '$(plan_desc "$T/r12.json")' vs full '$(plan_desc "$T/f12.json")': $(grep '^plan: 12' "$T/r12.err")"; fail=1
fi
python3 - "$T" <<'PY' || { echo "FAIL 12 layers: uniform plans"; fail=1; }
import json, sys
p = json.load(open(sys.argv[1] + "/r12.json"))
p["batch_axes"], p["tp_axis"], p["vocab_axis"] = ["dp"], None, None
for z in (0, 1):
    p["units"] = [dict(u, zero=z) for u in p["units"]]
    json.dump(p, open(f"{sys.argv[1]}/z12_{z}.json", "w"))
PY
$G "${A12[@]}" -q --plan "$T/z12_0.json" --plan-out "$T/o12_0.json" 2>/dev/null; $G "${A12[@]}" -q --plan "$T/z12_1.json" --plan-out "$T/o12_1.json" 2>/dev/null
mem() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['memory_per_device']['total'])" "$1"; }
hi=$(mem "$T/o12_0.json") lo=$(mem "$T/o12_1.json")
lim=$(python3 -c "print(int($lo + 0.05 * ($hi - $lo)))")
$G "${A12[@]}" "${ZS[@]}" --memory-limit "$lim" --plan-out "$T/r12l.json" 2>"$T/r12l.err" >/dev/null
m12=$(mem "$T/r12l.json" 2>/dev/null)
if grep -q '^plan: 12 repeated layers: .* realised in full after [1-9][0-9]* search(es) whose choice did not fit in full$' "$T/r12l.err" &&
   [ -n "$m12" ] && [ "$m12" -le "$lim" ]; then
  echo "ok 12 layers, limit $lim: $(grep -o 'after [0-9]* search(es)' "$T/r12l.err"), then $(plan_desc "$T/r12l.json") in $m12 bytes"
else
  echo "FAIL 12 layers, limit $lim (all-ZeRO-1 $lo, none $hi): $(grep -m2 '^plan: 12\|error' "$T/r12l.err")"; fail=1
fi
# nothing fits on the repeated-layer path: the error gives the smallest
# candidate's REALISED memory, term by term (not the reduced programs'
# prediction): with a limit one byte under the all-ZeRO plan's realisation,
# that plan (the smallest on a dp mesh) is named with exactly its bytes,
# and each term is that plan's own (its plan.json's memory_per_device).
# --microbatches 1: the whole batch at once (else galvc would go on to 2
# microbatches, which fit).
out=$($G "${A12[@]}" "${ZS[@]}" -q --microbatches 1 --memory-limit $((lo - 1)) 2>&1)
terms=$(python3 -c "import json,sys; m = json.load(open(sys.argv[1]))['memory_per_device']
print('parameters %d, gradients %d, optimizer state %d, activations %d' % (m['parameters'], m['gradients'], m['optimizer'], m['activations']))" "$T/o12_1.json")
if [ "$(echo "$out" | wc -l)" = 1 ] && [ -n "$terms" ] &&
   echo "$out" | grep -qF "no plan fits the memory limit of $((lo - 1)) bytes per device on 4 devices: the smallest candidate (dp(dp)+zero1) needs $lo bytes realised ($terms); " &&
   echo "$out" | grep -q "); \(parameters dominate\|optimizer state dominates\|activations dominate\): "; then
  echo "ok 12 layers, limit all-ZeRO - 1: $out"
else echo "FAIL 12 layers, limit all-ZeRO - 1 (all-ZeRO realised $lo): $out"; fail=1; fi
# --plan uses the plan it is given: a worse one (the optimum's ZeRO pattern
# inverted, last limit above) is realised as given: its pattern in the
# report and plan.json, its predicted step above the optimum's.
python3 - "$T" <<'PY' || { echo "FAIL --plan: no plan to invert"; fail=1; }
import json, sys
p = json.load(open(sys.argv[1] + "/ex.json"))
for u in p["units"]:
    u["zero"] = 0 if u["zero"] else 1
json.dump(p, open(sys.argv[1] + "/worse.json", "w"))
PY
$G "${A[@]}" --plan "$T/worse.json" --plan-out "$T/re.json" 2>/dev/null
w=$(pat "$T/worse.json") r=$(pat "$T/re.json") a=$(step "$T/re.json") b=$(step "$T/ex.json")
if [ -n "$w" ] && [ "$w" = "$r" ] && [ "$a" -gt "$b" ]; then
  echo "ok --plan uses the given plan: $r, $a ns (the optimum $(pat "$T/ex.json") $b ns)"
else
  echo "FAIL --plan: given $w, realised '$r' at $a ns (the optimum $b ns)"; fail=1
fi
# the report explains the choice: the runner-up (another mesh / strategy)
# no faster than the choice; under a limit 1 byte below the unconstrained
# plan (one microbatch, no recomputation), a faster candidate over the
# limit is named with its memory above the limit. ZeRO-1 is the one stage
# (--zero-stages 1): with ZeRO-3 (regathered per layer, prefetched, its
# update on the shard) the fastest plan of this model is also the smallest,
# so no limit below it leaves a plan; without ZeRO is faster than ZeRO-1
# (no all_gather of the updated parameters) and larger
AR=("$T/g6.onnx" --batch 8 --seq 16 --gpus 4 --train --recompute=none --microbatches 1 --cluster cpu-local --plan-only
  --zero-stages 1)
out=$($G "${AR[@]}" --plan-out "$T/ru.json" 2>&1)
ru=$(sed -n 's/^plan: runner-up: .*: predicted \([0-9.]*\) ms (.* against the choice.s \([0-9.]*\) ms), [0-9]* bytes$/\1 \2/p' <<<"$out")
if [ -n "$ru" ] && python3 -c "import sys; a, b = map(float, sys.argv[1:3]); sys.exit(not a >= b)" $ru; then
  echo "ok report: $(grep '^plan: runner-up' <<<"$out")"
else echo "FAIL report: no runner-up line no faster than the choice: $(grep -m2 '^plan: \(runner\|predicted\)' <<<"$out")"; fail=1; fi
m0=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['memory_per_device']['total'])" "$T/ru.json" 2>/dev/null)
out=$($G "${AR[@]}" --memory-limit $((${m0:-1} - 1)) 2>&1)
ov=$(sed -n 's/^plan: faster but over the memory limit: .*: predicted \([0-9.]*\) ms, needs \([0-9]*\) bytes (limit \([0-9]*\))$/\1 \2 \3/p' <<<"$out")
st=$(sed -n 's/^plan: predicted step \([0-9.]*\) ms .*/\1/p' <<<"$out")
if [ -n "$m0" ] && [ -n "$ov" ] && [ -n "$st" ] && python3 -c "
import sys; o, need, lim, s = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
sys.exit(not (o < s and need > lim == int(sys.argv[5]) - 1))" $ov "$st" "$m0"; then
  echo "ok report under limit $((m0 - 1)): $(grep '^plan: faster' <<<"$out")"
else echo "FAIL report under limit $((${m0:-1} - 1)): '$ov' vs step '$st': $(grep -m3 '^plan: \(faster\|predicted\)\|error' <<<"$out")"; fail=1; fi
# no plan fits: one line naming the smallest memory
out=$($G "$T/g.onnx" --batch 4 --seq 16 --gpus 2 --train --memory-limit 1000 --plan-only -q 2>&1)
if [ "$(echo "$out" | wc -l)" = 1 ] && echo "$out" | grep -q "no plan fits the memory limit of 1000 bytes.*the smallest needs [0-9][0-9]* bytes"; then
  echo "ok memory error: $out"
else echo "FAIL memory error: $out"; fail=1; fi
# a bad plan file: one line
echo '{"mesh": 3}' > "$T/bad.json"
out=$($G "$T/g.onnx" --batch 4 --seq 16 --gpus 4 --plan "$T/bad.json" --plan-only -q 2>&1)
[ "$(echo "$out" | wc -l)" = 1 ] && echo "$out" | grep -q "bad.json: line [1-9][0-9]*: field 'mesh'" && echo "ok bad plan" || { echo "FAIL bad plan: $out"; fail=1; }
# batch 1 on 8 GPUs: no dp split (a batch of 1 does not divide); a model
# where tp pays picks tp, a tiny one stays replicated and says why in one
# warning line that suggests --batch.
b1() { # MODEL BATCH ARGS... -> "batch_axes tp_axis" of the plan ("error" when galvc fails), the stderr in $T/b1.err
  local m=$1 b=$2; shift 2
  rm -f "$T/b1.json"
  timeout 300 $G "$m" --batch "$b" --gpus 8 --cluster h100-sxm "$@" --plan-only --plan-out "$T/b1.json" 2>"$T/b1.err" >/dev/null || { echo error; return; }
  python3 -c "import json,sys; p=json.load(open(sys.argv[1])); print(','.join(p['batch_axes']) or '-', p['tp_axis'])" "$T/b1.json"
}
python3 examples/make_model.py llama -o "$T/b1.onnx" --hidden 1024 --layers 2 --heads 16 --kv-heads 16 --vocab 8192 --no-weights >/dev/null || exit 1
r=$(b1 "$T/b1.onnx" 1 --no-weights --seq 256)
[ "$r" = "- tp" ] && ! grep -q warning "$T/b1.err" && echo "ok batch 1, 8 GPUs, Llama h1024: no dp, tp" || { echo "FAIL batch 1 Llama h1024: '$r' (want '- tp', no warning)"; fail=1; }
r=$(b1 "$T/l.onnx" 1 --seq 16); w=$(grep -c "plan: warning: the batch (1) does not split over the 8 devices.*--batch 8" "$T/b1.err")
[ "${r%% *}" = "-" ] && [ "$w" = 1 ] && ! grep -q "dp(" "$T/b1.err" && echo "ok batch 1, 8 GPUs, tiny Llama: no dp, one warning" || { echo "FAIL batch 1 tiny Llama: '$r', warnings $w: $(cat "$T/b1.err")"; fail=1; }
# batch 2 on 8: dp over 2 at most, the rest tp or replicated (then the warning)
r=$(b1 "$T/b1.onnx" 2 --no-weights --seq 256)
[ "$r" != error ] && python3 -c "import json,sys; p=json.load(open(sys.argv[1])); d=1
for a,s in zip(p['mesh']['axes'],p['mesh']['shape']): d*=s if a in p['batch_axes'] else 1
sys.exit(d>2)" "$T/b1.json" && echo "ok batch 2, 8 GPUs: dp degree <= 2 ($r)" || { echo "FAIL batch 2: $r: $(head -3 "$T/b1.err")"; fail=1; }
# ATP's point (docs/planner.md): on 2 nodes of 4, the tensor-parallel axis goes
# inside a node where tp's activation all-reduces outweigh dp's gradient
# all-reduces (small batch, long sequence), and swapping the intra- and
# inter-node bandwidths in the cluster file moves it across nodes. Llama
# (separate q/k/v projections: attention splits by heads under tp).
python3 examples/make_model.py llama -o "$T/atp.onnx" --hidden 1024 --layers 2 --heads 16 --kv-heads 16 --vocab 8192 --no-weights >/dev/null || exit 1
python3 - "$T" <<'PY' || exit 1
import json, sys
c = json.load(open("data/clusters/h100-sxm.json"))
for name, swap in (("fast", False), ("swapped", True)):
    d = json.loads(json.dumps(c))
    d["name"], d["devices_per_node"] = "h100-4-" + name, 4
    if swap:
        d["intra_node"]["bus_bandwidth_gbps"], d["inter_node"]["bandwidth_gbps"] = c["inter_node"]["bandwidth_gbps"], c["intra_node"]["bus_bandwidth_gbps"]
    json.dump(d, open(sys.argv[1] + "/atp-" + name + ".json", "w"))
PY
atp() { # CLUSTER ARGS... -> "tp_axis inside|across"
  local c=$1; shift
  timeout 300 $G "$T/atp.onnx" --no-weights --batch 4 --seq 4096 --gpus 8 --cluster "$T/atp-$c.json" "$@" --plan-only -q --plan-out "$T/atp.json" 2>/dev/null || { echo "error"; return; }
  python3 -c "
import json, sys
p = json.load(open(sys.argv[1])); ax = p['mesh']['axes']; sh = p['mesh']['shape']; t = p['tp_axis']
if t is None: print('none'); sys.exit()
i = ax.index(t); inner = 1
for s in sh[i + 1:]: inner *= s
print(t, 'inside' if inner * sh[i] <= p['devices_per_node'] else 'across')" "$T/atp.json"
}
for args in "" "--mesh x=2,y=4 --train"; do
  a=$(atp fast $args); b=$(atp swapped $args)
  case "$a|$b" in
    *" inside|"*" across") echo "ok ATP ${args:-free mesh, inference}: tp $a a node; bandwidths swapped: tp $b nodes";;
    *) echo "FAIL ATP ${args:-free mesh, inference}: tp '$a' (want inside), swapped '$b' (want across)"; fail=1;;
  esac
done
exit $fail
