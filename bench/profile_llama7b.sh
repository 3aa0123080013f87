#!/usr/bin/env bash
# profile_llama7b.sh [BUILD] [GPUS...] — Llama2-7B (weight-free: examples/make_model.py llama --layers 32 --hidden 4096
# --heads 32 --kv-heads 32 --ffn 11008 --vocab 32000 --no-weights), training, bf16, seq 2048, global batch 8 per GPU,
# on Galvatron's A100 nodes (bench/galvatron/a100-galvatron.json: its measured all-reduce bandwidths) at Galvatron's
# memory budgets (36 and 80 GiB, --memory-reserve 0.2,1073741824: what Galvatron plans in), planned by galvc:
#   - profile:  planned with --profile bench/galvatron/planner_inputs.json (Galvatron's profiled layer times and
#     memory; the microbatches: the fewest with a plan that fits, galvc's fallback);
#   - same-ana: that plan (--plan) priced by the cost model alone (its memory may exceed the limit: not checked);
#   - analytic: planned by the cost model alone at the profile plan's microbatches (--microbatches: the fallback over
#     more microbatches realises an unrolled program per count, minutes each at this size);
#   - galvatron: Galvatron's chosen plan (anchors README: dp, its ZeRO-3 / ZeRO-2 split, its chunks as gradient
#     accumulation microbatches, each microbatch's gradients reduce-scattered) given with --plan, priced with the profile;
# at 36 GiB every layer recomputed (--recompute=all, as Galvatron's 36 GB plans), at 80 GiB none.
# Prints per case the plan, the predicted step (compute + communication), memory per device, planning seconds, beside
# Galvatron's own prediction. Figures only (never a pass or fail). GPUS default: 8.
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$SRC/build}
shift $(($# > 0 ? 1 : 0))
GPUS=${*:-8}
G=$BUILD/galvc
T=${TMPDIR:-/tmp}/profile_llama7b.$$
mkdir -p "$T"
trap 'rm -rf "$T"' EXIT
M=$T/llama7b.onnx
python3 "$SRC/examples/make_model.py" llama -o "$M" --layers 32 --hidden 4096 --heads 32 --kv-heads 32 --ffn 11008 \
  --vocab 32000 --no-weights --no-verify >/dev/null || exit 1
PROF=$SRC/bench/galvatron/planner_inputs.json
CL=$SRC/bench/galvatron/a100-galvatron.json
declare -A GAL=([8_36]="27 3 5 2 1 4.1896" [16_36]="9 3 23 2 1 4.2043" [32_36]="1 3 31 2 1 4.1393" [64_36]="0 3 32 2 1 4.1296"
                [8_80]="16 3 16 2 4 3.5188" [16_80]="0 3 32 2 4 3.4528" [32_80]="0 3 32 2 4 3.4208" [64_80]="0 3 32 2 4 3.4231")
printf '%-5s %-4s %-10s %-58s %12s %12s %12s %14s %8s %10s\n' GPUs GiB case plan "step ms" "compute" "comm" "memory" "plan s" "Galvatron"
for g in $GPUS; do
  for gib in 36 80; do
    lim=$((gib * 1073741824))
    rec=$([ $gib = 36 ] && echo --recompute=all || echo --recompute=none)
    common=(--train --plan-only --no-weights --precision bf16 --gpus "$g" --gpus-per-node 8 --cluster "$CL" --batch $((8 * g))
            --seq 2048 "$rec" --memory-limit "$lim" --memory-reserve 0.2,1073741824)
    read -r n3 z3 n2 z2 chunks gpred <<<"${GAL[${g}_$gib]:-0 3 32 2 1 -}"
    # Galvatron's plan as a galvc plan.json: dp over all devices, the first n3 layers ZeRO-3, the rest ZeRO-2,
    # the embedding / head ZeRO-3 (its Ulysses sequence split is not expressible), chunks as microbatches
    python3 - "$T/gal_${g}_$gib.json" "$g" "$n3" "$chunks" <<'PY'
import json, sys
out, g, n3, chunks = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
units = [{"unit": "outer0", "zero": 3}] + [{"unit": f"layer {i}", "zero": 3 if i < n3 else 2} for i in range(32)]
p = {"mesh": {"axes": ["dp"], "shape": [g]}, "batch_axes": ["dp"], "tp_axis": None, "vocab_axis": None, "units": units}
if chunks > 1: p.update(microbatches=chunks, zero_reduce="per-microbatch")
json.dump(p, open(out, "w"))
PY
    for case in profile same-ana analytic galvatron; do
      extra=()
      case $case in
      profile) extra+=(--profile "$PROF") ;;
      same-ana) [ -f "$T/profile.json" ] || continue; extra+=(--plan "$T/profile.json") ;;
      analytic) extra+=(--microbatches "$(python3 -c "import json; print(json.load(open('$T/profile.json')).get('microbatches', 1))" \
                  2>/dev/null || echo 1)") ;;
      galvatron) extra+=(--profile "$PROF" --plan "$T/gal_${g}_$gib.json") ;;
      esac
      out=$T/$case.json
      rm -f "$out"
      t0=$(date +%s.%N)
      nice -n 19 "$G" "$M" "${common[@]}" "${extra[@]}" --plan-out "$out" </dev/null >"$T/$case.log" 2>&1
      rc=$?
      t1=$(date +%s.%N)
      if [ $rc -ne 0 ] || [ ! -f "$out" ]; then
        printf '%-5s %-4s %-10s %s\n' "$g" "$gib" "$case" "$(grep -m1 'error' "$T/$case.log" | cut -c1-400)"
        continue
      fi
      python3 - "$out" "$g" "$gib" "$case" "$(echo "$t1 - $t0" | bc)" "$gpred" <<'PY'
import json, sys
p = json.load(open(sys.argv[1])); g, gib, case, secs, gpred = sys.argv[2:7]
z = [u["zero"] for u in p["units"][1:]]
zs = ", ".join(f"{z.count(s)} ZeRO-{s}" if s else f"{z.count(s)} none" for s in sorted(set(z), reverse=True))
size = dict(zip(p["mesh"]["axes"], p["mesh"]["shape"]))
mesh = "x".join(f"{a}={n}" for a, n in size.items())
plan = f"{mesh} tp={p['tp_axis'] or '-'}; layers {zs}; outer ZeRO-{p['units'][0]['zero']}; mb {p.get('microbatches', 1)}"
pr = p["predicted"]
print(f"{g:<5} {gib:<4} {case:<10} {plan:<58} {pr['step_ns'] / 1e6:12.1f} {pr['compute_ns'] / 1e6:12.1f} "
      f"{pr['communication_ns'] / 1e6:12.1f} {p['memory_per_device']['total'] / 2**30:11.2f} GiB {float(secs):8.1f} "
      f"{gpred if case == 'galvatron' else '':>10}")
if "profile" in p:
    q = p["profile"]
    print(f"{'':<21}profile: {q['units']} units at microbatch {q['microbatch']}, tp {q['tp']}: compute {q['compute_ns'] / 1e6:.1f} ms "
          f"(cost model {q['analytic_compute_ns'] / 1e6:.1f}); kept activations {q['activation_bytes'] / 2**30:.2f} GiB "
          f"(memory plan {q['analytic_activation_bytes'] / 2**30:.2f})")
PY
    done
  done
done
