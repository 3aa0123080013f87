#!/usr/bin/env bash
# Pass scaling: CPU seconds per pass of galvc on weight-free GPT-2-shaped
# models of growing size (--no-weights, shapes only), inference at about
# 20k / 60k / 200k imported ops and a training step of about 20k imported
# ops (some 80k ops after autodiff and the optimizer). Prints one row per
# model with the ops after import and each pass's CPU seconds (galvc's
# per-pass progress line, "cpu X s"), and the peak RSS. Figures only: it
# never passes or fails on time.
#   bench/pass_scaling.sh [BUILD]
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
SRC=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# ~108 ONNX nodes per GPT-2 layer (hidden 64, 4 heads): 185 / 555 / 1850 layers
run() { # LABEL LAYERS GALVC-ARGS...
  local label=$1 L=$2
  shift 2
  python3 "$SRC/examples/make_model.py" gpt2 -o "$T/m.onnx" --layers "$L" --hidden 64 --heads 4 --vocab 128 --no-weights \
    --no-verify >/dev/null
  /usr/bin/time -f "%M" -o "$T/rss" "$BUILD/galvc" "$T/m.onnx" --batch 2 --seq 16 --target cpu --no-weights --emit=ir \
    -o /dev/null "$@" 2>"$T/err" || { echo "$label: galvc failed: $(grep -m1 error "$T/err")"; return; }
  python3 - "$label" "$T/err" "$T/rss" <<'PY'
import sys, re
label, err, rss = sys.argv[1], open(sys.argv[2]).read(), open(sys.argv[3]).read().strip().splitlines()[-1]
imp = re.search(r"imported .*: (\d+) ops", err)
rows = re.findall(r"^galvc: (\S+)\s+(\d+) ops \((\S+) s, cpu (\S+) s\)", err, re.M)
passes = " ".join(f"{n} {float(c):.3f}" for n, _, _, c in rows)
total = sum(float(c) for *_, c in rows)
print(f"{label:34s} import {imp.group(1) if imp else '?':>7} ops, final {rows[-1][1] if rows else '?':>7} ops | "
      f"cpu s per pass: {passes} | passes {total:.2f} s, peak RSS {int(rss) / 1024:.0f} MiB")
PY
}
echo "pass_scaling: galvc $BUILD/galvc, $(nproc) cores (CPU seconds per pass; wall time on a shared machine differs)"
run "inference, ~20k ops (185 layers)" 185
run "inference, ~60k ops (555 layers)" 555
run "inference, ~200k ops (1850 layers)" 1850
run "training, ~20k ops (185 layers)" 185 --train
