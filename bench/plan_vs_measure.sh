#!/bin/bash
# plan_vs_measure.sh [BUILD_DIR] — the planner's predictions against the clock
# on 4 MPI ranks of this machine (docs/planner.md): one GPT-2-shaped model
# (inference), several plans (presets dp, tp, zero, dp,tp in both mesh
# orders, a --sharding file, and the planner's own auto), each compiled with
# galvc --target cpu under the cpu-local cluster (calibrated first by
# bench/calibrate_cpu.sh on 4 ranks) and run with out/launch (--iters, min
# time of rank 0). Prints predicted and measured step times side by side,
# their Spearman rank correlation and whether the fastest predicted plan is
# the fastest measured. Figures only: it never passes or fails.
#   GALV_PVM_CLUSTER=FILE.json   skip calibration, use this cluster file
#   GALV_PVM_ITERS=N             timed iterations per plan (default 10)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
galvc=$build/galvc
iters=${GALV_PVM_ITERS:-10}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OPENBLAS_NUM_THREADS=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export MPIRUN="mpirun -x OPENBLAS_NUM_THREADS"

cluster=${GALV_PVM_CLUSTER:-}
if [ -z "$cluster" ]; then
  cluster=$tmp/cpu-local.json
  timeout 600 "$here/calibrate_cpu.sh" "$cluster" 4 | sed 's/^/  /'
fi

B=8 S=128
python3 "$src/examples/make_model.py" gpt2 -o "$tmp/m.onnx" --hidden 256 --layers 2 --heads 8 --vocab 2048 --no-verify >/dev/null
python3 -c "import numpy as np; np.save('$tmp/ids.npy', (np.arange($B*$S) % 2048).reshape($B, $S).astype(np.int64))"
# a --sharding file: Megatron tp on the MLP only, attention replicated
python3 - "$tmp/m.onnx" > "$tmp/mlp_tp.txt" <<'PY'
import sys, onnx
m = onnx.load(sys.argv[1], load_external_data=False)
for t in m.graph.initializer:
    if ".mlp.c_fc.weight" in t.name or t.name.endswith("mlp.c_fc.bias"): print(t.name, '[{}, {"tp"}]' if t.dims and len(t.dims) == 2 else '[{"tp"}]')
    elif ".mlp.c_proj.weight" in t.name: print(t.name, '[{"tp"}, {}]')
PY

# name | galvc arguments
plans='dp|--strategy dp
tp|--strategy tp
zero|--strategy zero
dp2xtp2|--strategy dp,tp --mesh dp=2,tp=2
tp2xdp2|--strategy dp,tp --mesh tp=2,dp=2
mlp-tp file|--sharding MLPTP --mesh tp=4
auto|--strategy auto'

printf '%-12s %14s %14s %14s\n' plan "predicted ms" "measured min" "measured mean"
: > "$tmp/rows"
while IFS='|' read -r name args; do
  d="$tmp/${name// /_}"
  args=${args//MLPTP/$tmp/mlp_tp.txt}
  # shellcheck disable=SC2086
  if ! timeout 300 "$galvc" "$tmp/m.onnx" --batch $B --seq $S --gpus 4 $args --cluster "$cluster" --target cpu --report-cost -q \
      -o "$d/" < /dev/null > "$d.cost" 2> "$d.err"; then
    printf '%-12s %s\n' "$name" "galvc failed: $(grep -m1 error "$d.err")"
    continue
  fi
  pred=$(sed -n 's/^predicted step: \([0-9]*\) ns.*/\1/p' "$d.cost")
  timeout 600 "$d/launch" --input "input_ids=$tmp/ids.npy" --iters "$iters" --warmup 2 --threads 1 < /dev/null > "$d.run" 2>&1
  mean=$(sed -n 's/.*mean \([0-9.]*\) ms, min \([0-9.]*\) ms.*/\1/p' "$d.run" | head -1)
  min=$(sed -n 's/.*mean \([0-9.]*\) ms, min \([0-9.]*\) ms.*/\2/p' "$d.run" | head -1)
  if [ -z "$pred" ] || [ -z "$min" ]; then
    printf '%-12s %s\n' "$name" "no figures: $(grep -m1 -i error "$d.run" "$d.cost")"
    continue
  fi
  awk -v n="$name" -v p="$pred" -v mn="$min" -v me="$mean" 'BEGIN { printf "%-12s %14.3f %14.3f %14.3f\n", n, p / 1e6, mn, me }'
  echo "$name|$pred|$min" >> "$tmp/rows"
done <<< "$plans"
python3 - "$tmp/rows" <<'PY'
import sys
rows = [l.rstrip("\n").split("|") for l in open(sys.argv[1]) if l.strip()]
if len(rows) < 2: print("too few plans ran"); sys.exit()
def ranks(v):
    o = sorted(range(len(v)), key=lambda i: v[i]); r = [0.0] * len(v); i = 0
    while i < len(o):
        j = i
        while j + 1 < len(o) and v[o[j + 1]] == v[o[i]]: j += 1
        for k in range(i, j + 1): r[o[k]] = (i + j) / 2 + 1
        i = j + 1
    return r
p = ranks([float(r[1]) for r in rows]); m = ranks([float(r[2]) for r in rows]); n = len(rows)
mp, mm = sum(p) / n, sum(m) / n
cov = sum((a - mp) * (b - mm) for a, b in zip(p, m))
sd = (sum((a - mp) ** 2 for a in p) * sum((b - mm) ** 2 for b in m)) ** 0.5
fp = min(rows, key=lambda r: float(r[1]))[0]; fm = min(rows, key=lambda r: float(r[2]))[0]
print("Spearman rank correlation (predicted vs measured min) over %d plans: %s" % (n, "%.3f" % (cov / sd) if sd else "undefined"))
print("fastest predicted: %s; fastest measured: %s (%s)" % (fp, fm, "same" if fp == fm else "different"))
PY
echo "(4 ranks of this machine, cluster $(basename "$cluster"); predicted: galvc --report-cost of the partitioned program; measured: out/launch --iters $iters --warmup 2 --threads 1, rank 0)"
