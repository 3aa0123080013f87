#!/usr/bin/env bash
# Pass scaling: CPU seconds per pass of galvc on weight-free GPT-2-shaped
# models of growing size (--no-weights, shapes only): inference at about
# 20k / 60k / 200k imported ops, a training step of about 20k imported ops
# (some 80k ops after autodiff and the optimizer), the planner (--gpus 4:
# plan-sharding, propagate-sharding, spmd-partition) at 20k / 60k ops and on
# the training step, the training step of the 60k model (about 230k ops),
# and code generation (-o DIR/ --no-build, with weights, hidden 16) at the
# three sizes. Prints one row per run with the ops after import and each
# step's CPU seconds (galvc's progress line per pass, "cpu X s", and the
# same line for verify, print-ir and codegen), the CPU seconds of galv-opt
# parsing, verifying and printing the IR galvc wrote (inference runs), the
# planning CPU time (everything up to the program or IR) and the peak RSS.
# Figures only: it never passes or fails on time (docs/planner.md, "Pass
# scaling", has the table).
#   bench/pass_scaling.sh [BUILD] [plan]
# With `plan`, then the planning CPU time of the training search at full
# scale (--train --plan-only --no-weights, bf16, a100-80g, 8 per node, seq
# 2048, no strategy flag): GPT-3-shaped models (hidden 12288, 96 heads,
# vocab 51200, Megatron's qkv layout, tied embeddings) of 12 / 24 / 48 / 96
# layers on 1024 GPUs (batch 1536), Llama2-7B on 64 GPUs (batch 512) and
# the 310B shape (96 layers, hidden 16384) on 1920 GPUs (batch 2160): per
# row the imported ops, galvc's CPU seconds, the planner's own line
# ("N candidate programs realised") and peak RSS; PLAN_TIMEOUT (default
# 1800) seconds of wall time per row at most. Last, Llama 3B's shape on 16
# h100-sxm under 8 GB (batch 256: 128-256 microbatches), the default search
# and one program (--pp 1), each with the fewer-layers recomputation and
# the polish priced on the stand-in first and with each realised in full.
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
SRC=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# ~108 ONNX nodes per GPT-2 layer (hidden 64, 4 heads): 185 / 555 / 1850 layers
model() { # LAYERS [HIDDEN HEADS [--no-weights]]: $T/m-LAYERS-HIDDEN.onnx, made once
  local f="$T/m-$1-${2:-64}.onnx"
  [ -f "$f" ] || python3 "$SRC/examples/make_model.py" gpt2 -o "$f" --layers "$1" --hidden "${2:-64}" --heads "${3:-4}" \
    --vocab 128 "${4---no-weights}" --external-data --no-verify >/dev/null
  echo "$f"
}
run() { # LABEL MODEL GALVC-ARGS...
  local label=$1 m=$2 out
  shift 2
  out="$T/out.mlir"
  [[ " $* " == *" -o "* ]] && out=""
  rm -rf "$T/prog"
  /usr/bin/time -f "%M %U %S" -o "$T/rss" "$BUILD/galvc" "$m" --batch 8 --seq 16 --target cpu "$@" ${out:+-o "$out"} \
    2>"$T/err" || { echo "$label: galvc failed: $(grep -m1 error "$T/err")"; return; }
  local opt=""
  if [ -n "$out" ] && [[ " $* " != *" --gpus "* ]]; then
    /usr/bin/time -f "%U %S" -o "$T/opt" "$BUILD/galv-opt" "$out" -o /dev/null 2>/dev/null && opt=$(cat "$T/opt")
  fi
  python3 - "$label" "$T/err" "$T/rss" "$opt" <<'PY'
import sys, re
label, err, opt = sys.argv[1], open(sys.argv[2]).read(), sys.argv[4]
rss, user, sys_s = open(sys.argv[3]).read().strip().splitlines()[-1].split()
imp = re.search(r"imported .*: (\d+) ops", err)
rows = re.findall(r"^galvc: (\S+)\s+(\d+) ops \((\S+) s, cpu (\S+) s\)", err, re.M)
passes = " ".join(f"{n} {float(c):.3f}" for n, _, _, c in rows)
if opt:
    passes += " | galv-opt (parse, verify, print) %.3f" % sum(map(float, opt.split()))
print(f"{label:40s} import {imp.group(1) if imp else '?':>6} ops, final {rows[-1][1] if rows else '?':>6} ops | "
      f"cpu s per step: {passes} | galvc cpu {float(user) + float(sys_s):.2f} s, peak RSS {int(rss) / 1024:.0f} MiB")
PY
}
echo "pass_scaling: galvc $BUILD/galvc, $(nproc) cores (CPU seconds per pass; wall time on a shared machine differs)"
run "inference, ~20k ops (185 layers)" "$(model 185)" --no-weights --emit=ir
run "inference, ~60k ops (555 layers)" "$(model 555)" --no-weights --emit=ir
run "inference, ~200k ops (1850 layers)" "$(model 1850)" --no-weights --emit=ir
run "training, ~20k ops (185 layers)" "$(model 185)" --no-weights --emit=ir --train
run "planner --gpus 4, ~20k ops (185 layers)" "$(model 185)" --no-weights --emit=ir --gpus 4 --plan-out "$T/plan.json"
run "planner --gpus 4, ~60k ops (555 layers)" "$(model 555)" --no-weights --emit=ir --gpus 4 --plan-out "$T/plan.json"
run "planner training, ~20k ops (185 layers)" "$(model 185)" --no-weights --emit=ir --gpus 4 --train --plan-out "$T/plan.json"
run "training, ~60k ops (555 layers)" "$(model 555)" --no-weights --emit=ir --train
for L in 185 555 1850; do
  run "codegen, $L layers (hidden 16)" "$(model $L 16 2 --external-data)" --no-build -o "$T/prog/"
done

[ "${2:-}" = plan ] || exit 0
plan_row() { # LABEL MODEL GPUS BATCH [CLUSTER [GALVC-ARGS...]] (ROW_ENV: VAR=VALUE words set for this row alone)
  local label=$1 m=$2 gpus=$3 batch=$4 cluster=${5:-a100-80g}
  shift 4
  [ $# -gt 0 ] && shift
  /usr/bin/time -f "%M %U %S" -o "$T/rss" env ${ROW_ENV:-} timeout "${PLAN_TIMEOUT:-1800}" "$BUILD/galvc" "$m" --train --plan-only \
    --no-weights --precision bf16 --gpus "$gpus" --gpus-per-node 8 --cluster "$cluster" --batch "$batch" --seq 2048 "$@" \
    </dev/null >/dev/null 2>"$T/err"
  local rc=$?
  python3 - "$label" "$T/err" "$T/rss" "$rc" <<'PY'
import sys, re
label, err, rc = sys.argv[1], open(sys.argv[2]).read(), int(sys.argv[4])
rss, user, sys_s = open(sys.argv[3]).read().strip().splitlines()[-1].split()
imp = re.search(r"imported .*: (\d+) ops", err)
real = re.findall(r"(\d+) candidate programs realised", err)
end = "timed out" if rc == 124 else ("no plan" if rc else "plan")
print(f"{label:44s} import {imp.group(1) if imp else '?':>6} ops | galvc cpu {float(user) + float(sys_s):8.2f} s | "
      f"peak RSS {int(rss) / 1024:5.0f} MiB | {end}, {sum(map(int, real))} candidates realised in {len(real)} searches")
PY
}
gpt3() { # LAYERS HIDDEN HEADS: $T/gpt3-LAYERS-HIDDEN.onnx, made once
  local f="$T/gpt3-$1-$2.onnx"
  [ -f "$f" ] || python3 "$SRC/examples/make_model.py" gpt2 -o "$f" --layers "$1" --hidden "$2" --heads "$3" --vocab 51200 \
    --max-pos 2048 --no-weights --tie-embeddings --qkv-layout megatron --no-verify >/dev/null
  echo "$f"
}
echo "planning CPU time (--train --plan-only, the default search; figures only)"
python3 "$SRC/examples/make_model.py" llama -o "$T/llama7b.onnx" --layers 32 --hidden 4096 --heads 32 --kv-heads 32 --ffn 11008 \
  --vocab 32000 --no-weights --no-verify >/dev/null
set +e
plan_row "Llama2-7B, 64 GPUs, batch 512" "$T/llama7b.onnx" 64 512
for L in 12 24 48 96; do
  plan_row "GPT-3 shape, $L layers, 1024 GPUs, batch 1536" "$(gpt3 $L 12288 96)" 1024 1536
done
plan_row "310B shape (96 x 16384), 1920 GPUs, batch 2160" "$(gpt3 96 16384 128)" 1920 2160
# many microbatches under a tight limit (128-256 copies per program): recomputation on some layers and the polish
# priced on the 2-microbatch stand-in first and each mode's count realised only when it wins (the default), beside
# each k, each change and each count realised in full (docs/planner.md, "Planning time: recomputation on some layers
# and the polish priced from two microbatches", "A mode's count realised only when it wins")
python3 "$SRC/examples/make_model.py" llama -o "$T/llama3b.onnx" --layers 26 --hidden 3200 --heads 32 --kv-heads 32 \
  --vocab 32000 --no-weights --no-verify >/dev/null
for pp in "" "--pp 1"; do
  for mode in priced full; do
    env_words=""
    [ $mode = full ] && env_words="GALV_RECOMPUTE_PARTIAL=full GALV_PLAN_POLISH=full GALV_COUNT_DEFER=off"
    ROW_ENV=$env_words plan_row "Llama 3B shape, 16 h100-sxm, 8 GB, 256 ${pp:+($pp) }$mode" "$T/llama3b.onnx" 16 256 h100-sxm \
      --memory-limit 8000000000 $pp -q
  done
done
