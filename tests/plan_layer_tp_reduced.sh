#!/usr/bin/env bash
# The layers' tp choice per layer on the reduced programs (docs/planner.md
# "The layers' tp choice per unit", "On the reduced programs"): a model of
# 12 or more identical layers is planned on its reduced programs (r3, r2),
# where each layer may take t_layer, none (its weights whole, its compute
# repeated over the tp ranks) or another non-batch axis, priced from r3's U_j
# and A_ij realisations mapped onto the full units. On the tiny GPT-2 and
# Llama of tests/lib/tiny_lms.sh with 12 layers (hidden 32, 4 heads, vocab
# 64), batch 8 x seq 8, AdamW (eps 1e-6), the default training search on a
# fixed mesh (`--gpus 4 --mesh dp=2,tp=2 --cluster h100-sxm --recompute=none
# --microbatches 1`: the tiny layers' tp collectives cost more than the
# compute they split, so without a limit every unit replicated is fastest)
# under a memory limit of 3400000 bytes (the replicated plan needs 3.76 MB
# (GPT-2), 3.97 MB (Llama): some layers split their weights over an axis,
# the rest keep them whole):
#   - the report says the candidates were costed on reduced programs, and
#     the layers' tp axes in plan.json differ (some layer none, some split);
#   - plan.json's layers, mesh and predicted step equal those of the search
#     on the full program (GALV_PLAN_LAYERS=full, where the choice was
#     searched before);
#   - the search without the choice (GALV_PLAN_LAYER_TP=off) is slower;
#   - compiled with --plan and run on 4 CPU ranks for 2 steps = the
#     single-device program (losses and weights rtol 1e-4 / atol 1e-5), the
#     bytes the communicator counted = plan.json's collective bytes x 2.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
. "$SRC/tests/lib/rank_compare.sh"
. "$SRC/tests/lib/tiny_lms.sh"
export CFLAGS=-O0 # tiny programs
AD=(--eps 1e-6)
B=8 S=8
SEARCH=(--gpus 4 --mesh dp=2,tp=2 --cluster h100-sxm --recompute=none --microbatches 1 --memory-limit 3400000)
field() { python3 -c "import json, sys; p = json.load(open(sys.argv[1])); print($2)" "$1"; }
planned() { # NAME MODEL OPTIONS...: --plan-only, plan.json in NAME.json, the report in NAME.err
  local n=$1 m=$2; shift 2
  timeout 300 "$BUILD/galvc" "$T/$m.onnx" --batch $B --seq $S --train "${AD[@]}" "$@" --target cpu --plan-only \
    --plan-out "$T/$n.json" 2>"$T/$n.err" </dev/null
}
# the plan's layers, mesh and step, for comparing two searches
desc() { field "$1" "(p['mesh'], p.get('tp_axis'), p.get('vocab_axis'), [(u.get('tp_axis', p.get('tp_axis')), u.get('zero'), u.get('sp')) for u in p['units']], p['predicted']['step_ns'])"; }

tiny_lms "$T" 4 12
lm_batches "$T/b" $B $S 11

for m in gpt2 llama; do
  if ! planned "$m" "$m" "${SEARCH[@]}"; then bad "$m: galvc: $(grep -m2 error "$T/$m.err")"; continue; fi
  if ! grep -q "repeated layers: candidates costed on reduced programs" "$T/$m.err"; then
    bad "$m: not planned on the reduced programs: $(grep -m1 'plan: ' "$T/$m.err")"; continue
  fi
  axes=$(field "$T/$m.json" "' '.join(str(u.get('tp_axis', p.get('tp_axis'))) for u in p['units'][1:])")
  step=$(field "$T/$m.json" "p['predicted']['step_ns']")
  nax=$(tr ' ' '\n' <<<"$axes" | sort -u | wc -l)
  if [ "$nax" -ge 2 ] && [[ " $axes " == *" None "* ]]; then
    ok "$m: the reduced search mixes the layers' tp choices: $axes, $step ns ($(grep 'plan:   layer' "$T/$m.err" | sed 's/plan: *//' | tr '\n' ';'))"
  else bad "$m: the layers' tp axes '$axes' (want some layer none and some split)"; fi
  if GALV_PLAN_LAYERS=full planned "$m-full" "$m" "${SEARCH[@]}"; then
    a=$(desc "$T/$m.json") f=$(desc "$T/$m-full.json")
    [ "$a" = "$f" ] && ok "$m: the same plan as the search on the full program ($step ns)" ||
      bad "$m: reduced $a, full $f"
  else bad "$m full: galvc: $(grep -m2 error "$T/$m-full.err")"; fi
  if GALV_PLAN_LAYER_TP=off planned "$m-off" "$m" "${SEARCH[@]}"; then
    off=$(field "$T/$m-off.json" "p['predicted']['step_ns']")
    [ "$off" -gt "$step" ] && ok "$m: without the choice $off ns (slower)" || bad "$m: without the choice $off ns, not slower than $step"
  else bad "$m off: galvc: $(grep -m2 error "$T/$m-off.err")"; fi
  single_program "$T/$m-1" "$T/$m.onnx" "--batches $T/b --steps 2" --batch $B --seq $S --train "${AD[@]}"
  d="$T/$m-run"
  if ! timeout 300 "$BUILD/galvc" "$T/$m.onnx" --batch $B --seq $S --train "${AD[@]}" "${SEARCH[@]}" --plan "$T/$m.json" \
      --target cpu -q -o "$d/" 2>"$T/err" </dev/null; then bad "$m: galvc --plan: $(grep -m3 error "$T/err")"; continue; fi
  exe=$d/program
  [ -x "$d/launch" ] && exe=$d/launch
  if ! timeout 300 "$exe" --batches "$T/b" --steps 2 -o "$d.w" --comm-stats </dev/null >"$d.log" 2>&1; then
    bad "$m: run: $(grep -m3 error "$d.log")"; continue
  fi
  if ! by=$(python3 "$SRC/tests/lib/comm_counted.py" "$d.log" 2 2>&1); then bad "$m: bytes: $by"; continue; fi
  want=$(field "$T/$m.json" "', '.join(f'{k} {2 * p[\"collectives\"][k][\"bytes\"] if k in p[\"collectives\"] else 0}' for k in ('all_reduce', 'all_gather', 'reduce_scatter', 'all_to_all'))")
  r=$(same_training "$T/$m-1.log" "$d.log" "$T/$m-1.w" "$d.w")
  rc=$?
  if [ "$rc" = 0 ] && [ "$by" = "$want" ]; then ok "$m: 4 ranks, 2 steps = one device: $r; bytes counted = plan.json x 2: $by"
  else bad "$m: $r; bytes counted $by, plan.json x 2 $want"; fi
done
echo "plan_layer_tp_reduced: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
