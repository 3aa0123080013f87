#!/usr/bin/env bash
# bench/zero_bytes.sh [BUILD] — Llama2-7B's model states per parameter for
# each ZeRO stage, precision and gradient dtype as galvc prices them, beside
# the analytic figures (Rajbhandari et al.; docs/planner.md "Precision"):
# examples/make_model.py's Llama2-7B shape (6,738,415,616 parameters, no
# weights), training, seq 2048, batch 8 on 8 x a100-80g, `--strategy
# dp|zero1|zero2|zero3 --target cuda --report-cost`. Prints one markdown row
# per (precision, gradient dtype, stage): galvc's bytes per parameter (its
# `memory:` line's model states over the parameter count), the analytic
# figure, the predicted step, the activations peak and the memory per
# device. Figures only, nothing judged. About 10 s per row on 2 busy cores.
set -uo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$SRC/build}" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
python3 "$SRC/examples/make_model.py" llama --layers 32 --hidden 4096 --heads 32 --kv-heads 32 --ffn 11008 --vocab 32000 \
  --no-weights -o "$T/l7b.onnx" >/dev/null || { echo "make_model failed"; exit 1; }
N=8 P=6738415620
echo "| precision | gradients | ZeRO | galvc bytes / parameter | analytic | step (ms) | activations peak (bytes) | memory per device (bytes) |"
echo "|---|---|---|---|---|---|---|---|"
for pg in fp32:fp32 bf16:fp32 bf16:bf16 fp16:fp32; do
  p=${pg%:*} g=${pg#*:}
  for st in dp zero1 zero2 zero3; do
    "$BUILD/galvc" "$T/l7b.onnx" --batch 8 --seq 2048 --train --precision "$p" --grad-dtype "$g" --gpus $N --strategy $st \
      --cluster a100-80g --target cuda --report-cost --no-weights --emit=ir -o "$T/t.mlir" >"$T/out" 2>"$T/err" ||
      { echo "| $p | $g | $st | error: $(grep -m1 error "$T/err") | | | | |"; continue; }
    cat "$T/err" >>"$T/out"
    python3 - "$T/out" "$p" "$g" "$st" $N <<'PY'
import re, sys
out, p, g, st, n = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
t = open(out).read()
params = 6738415616
ms = int(re.search(r"model states (\d+) =", t).group(1))
step = int(re.search(r"^predicted step: (\d+) ns", t, re.M).group(1)) / 1e6
act = int(re.search(r"activations peak (\d+)", t).group(1))
m = re.search(r"^memory per device: .* total (\d+) of (\d+) bytes", t, re.M)
tot, lim = int(m.group(1)), int(m.group(2))
# analytic: 16-bit weight h, gradient gr, optimizer state K (mixed precision: h = 2, K = 12; fp32: h = gr = 4, K = 8)
h, gr, K = (4, 4, 8) if p == "fp32" else (2, 2 if g == "bf16" else 4, 12)
s = 0 if st == "dp" else int(st[-1])
a = [h + gr + K, h + gr + K / n, h + (gr + K) / n, (h + gr + K) / n][s]
fit = "" if tot <= lim else " (does not fit)"
print(f"| {p} | {g} | {'0 (dp)' if s == 0 else s} | {ms / params:.2f} | {a:.2f} | {step:.3f} | {act:,} | {tot:,}{fit} |")
PY
  done
done
