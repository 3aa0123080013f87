#!/usr/bin/env bash
# Pipeline stage programs with 16-bit storage (docs/pipeline.md, "16-bit
# storage"; galvc --pipeline-stages S --precision bf16|fp16 --target cpu):
# the values that cross between stages, their gradients and the stash are
# held 16-bit and move as 2-byte elements; master weights, parameter
# gradients and the optimizer stay fp32. Tiny GPT-2 (2 layers, hidden 32,
# vocab 64), batch 8 x seq 8, 2 and 3 ranks, under GALV_COMM_SYNC=1.
# (1) Training, 3 AdamW steps, GPipe / 1F1B / ZB-H1 / --pipeline-recompute,
#     2 and 3 stages, stages of 2 ranks (tp, dp; uneven 1,2 / 2,1): losses
#     within 1e-3 of the fp32 single-device program and of the bf16 one (the
#     bounds tests/cpu_bf16.sh sets for bf16 vs fp32 and for 2 ranks vs one
#     device), the first step's loss (the forward: the same roundings but
#     where a stage boundary rounds a value the single device keeps fp32)
#     within 1e-5 of the bf16 single device's (1e-4 with a tp stage, whose
#     activation all-reduces round in bf16). The runtime checks every
#     rank's p2p bytes against the stage table's plan (it fails otherwise);
#     here for 2 stages, 1F1B, B = 4 against the fp32 pipeline: the p2p bytes
#     are half (forward and gradients) and the stash per microbatch at most
#     60 % (activations 16-bit, a norm's row statistics fp32 as in the
#     single-device step). The stash per microbatch of every earlier stage
#     = the stage DP's estimate (2 stages; 3 with --recompute=all: the
#     values the forward entry stores fp32 priced fp32, as the backward
#     reads them) = the runtime's.
# (2) Inference, bf16 (2 and 3 stages, a tp stage of 2 ranks) and fp16
#     (2 stages): the logits against onnxruntime's within 2^-6 x max|logit|
#     (bf16) / 2^-9 (fp16), the bounds tests/cpu_bf16.sh sets against fp32,
#     and against the single-device program of the same precision within
#     2^-7 x max|logit| (its tp=2 bound there).
# (3) CUDA target (skipped without g++): the 2-stage 1F1B B = 4 bf16
#     training pipeline compiled with --target cuda, `make emu` per stage
#     (the CUDA program under the CPU execution layer, NCCL over MPI): its
#     losses within 1e-3 of the CPU target's pipeline of the same plan
#     (measured: identical) and its p2p bytes those of the stage table
#     (checked by the runtime).
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
python3 -c "import onnxruntime" 2>/dev/null || galv_skip "python3 cannot import onnxruntime (pip install onnxruntime)"
m="$T/gpt2.onnx"
python3 "$SRC/examples/make_model.py" gpt2 -o "$m" --layers 2 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null ||
  { echo "FAIL make_model"; exit 1; }
python3 -c "
import numpy as np, os
r = np.random.RandomState(0)
os.makedirs('$T/b')
np.save('$T/b/input_ids.npy', r.randint(0, 64, (3, 8, 8)).astype(np.int64))
np.save('$T/b/labels.npy', r.randint(0, 64, (3, 8, 8)).astype(np.int64))
np.save('$T/ids.npy', r.randint(0, 64, (8, 8)).astype(np.int64))" || { echo "FAIL batches"; exit 1; }
G=("$BUILD/galvc" "$m" --batch 8 --seq 8 --target cpu -q)
losses() { grep -o "^step [0-9]* loss [^ ]*" "$1" | awk '{print $4}' | tr '\n' ' '; }

# ---- single-device references
for p in fp32 bf16; do
  timeout 300 "${G[@]}" --train --precision $p -o "$T/one_$p/" </dev/null 2>"$T/err" || { bad "single $p: galvc: $(tail -1 "$T/err")"; continue; }
  timeout 120 "$T/one_$p/program" --batches "$T/b" --steps 3 >"$T/one_$p.log" 2>"$T/err" </dev/null ||
    bad "single $p: run: $(tail -1 "$T/err")"
done

# ---- (1) training: S:B:schedule[:mode[:devices]]  (mode: recompute, tp, dp)
CASES=${GALV_PIPE_BF16_CASES:-2:2:gpipe 2:4:1f1b 3:4:1f1b 2:4:zb-h1 2:4:1f1b:recompute 2:2:1f1b:tp:1,2 2:2:1f1b:dp:2,1}
for c in $CASES; do
  IFS=: read -r S B SC MODE SD <<<"$c"
  name="pp=$S B=$B $SC${MODE:+ $MODE}${SD:+ $SD}"
  d="$T/t-$S-$B-$SC-$MODE"
  extra=()
  case "$MODE" in
    recompute) extra=(--pipeline-recompute) ;;
    tp | dp) extra=(--gpus 3 --stage-devices "$SD" --strategy "$MODE") ;;
  esac
  if ! timeout 600 "${G[@]}" --train --precision bf16 --pipeline-stages "$S" --microbatches "$B" --schedule "$SC" "${extra[@]}" \
      -o "$d/" </dev/null 2>"$T/err"; then
    bad "$name: galvc: $(grep -m1 error "$T/err")"
    continue
  fi
  grep -q "GALV_BF16" "$d/stage0/pipe_stage.c" || bad "$name: stage 0's transfers are not bf16"
  if ! timeout 180 "$d/launch" --batches "$T/b" --steps 3 >"$d.log" 2>"$T/err" </dev/null; then
    bad "$name: run: $(grep -m2 -i error "$T/err" "$d.log")"
    continue
  fi
  if msg=$(python3 - "$T/one_fp32.log" "$T/one_bf16.log" "$d.log" "$MODE" <<'PY'
import sys, re
def losses(p): return [float(x) for x in re.findall(r"^step \d+ loss (\S+)", open(p).read(), re.M)]
f, h, p = (losses(x) for x in sys.argv[1:4])
if len(p) != 3 or len(f) != 3 or len(h) != 3: sys.exit(f"losses: {p} (fp32 single {f}, bf16 single {h})")
df, dh = max(abs(a - b) for a, b in zip(p, f)), max(abs(a - b) for a, b in zip(p, h))
d0 = abs(p[0] - h[0])
print(f"losses {' '.join(f'{x:.7f}' for x in p)}: vs fp32 single device {df:.2g}, vs bf16 single device {dh:.2g} "
      f"(step 0 {d0:.2g})")
# tp stages all-reduce bf16 activations (rounded once more, as tests/cpu_bf16.sh's tp=2): step 0 within 1e-4
sys.exit(0 if df <= 1e-3 and dh <= 1e-3 and d0 <= (1e-4 if sys.argv[4] == "tp" else 1e-5) else 1)
PY
  ); then ok "$name: $msg"; else bad "$name: $msg"; fi
done

# p2p bytes and the stash against the fp32 pipeline (2 stages, 1F1B, B = 4)
if timeout 600 "${G[@]}" --train --pipeline-stages 2 --microbatches 4 --schedule 1f1b -o "$T/t32/" </dev/null 2>"$T/err" &&
   timeout 180 "$T/t32/launch" --batches "$T/b" --steps 3 >"$T/t32.log" 2>"$T/err" </dev/null; then
  if msg=$(python3 - "$T/t32.log" "$T/t-2-4-1f1b-.log" <<'PY'
import sys, re
def fig(p):
    t = open(p).read()
    fw = int(re.search(r"cross-stage forward bytes sent by this rank: (\d+) measured", t).group(1))
    gr = int(re.search(r"cross-stage gradients bytes sent by this rank: (\d+) measured", t).group(1))
    st = int(re.search(r"stage 0, rank 0\]: saved activations in flight: peak \d+ bytes \(\d+ microbatches x (\d+) bytes", t).group(1))
    return fw, gr, st
a, b = fig(sys.argv[1]), fig(sys.argv[2])
print(f"p2p forward {b[0]} vs fp32 {a[0]}, gradients {b[1]} vs {a[1]} bytes; stage 0 stash {b[2]} vs {a[2]} bytes per microbatch")
sys.exit(0 if 2 * b[0] == a[0] and 2 * b[1] == a[1] and b[2] <= 0.6 * a[2] else 1)
PY
  ); then ok "bf16 vs fp32 pipeline: $msg"; else bad "bf16 vs fp32 pipeline: $msg"; fi
else
  bad "fp32 pipeline: $(grep -m1 -i error "$T/err")"
fi

# the stash per microbatch of stage 0 under bf16: galvc's count of the backward entry's state = the stage DP's estimate
# (the values the forward entry stores fp32, such as the embedding's sum, read fp32 by the backward: priced so), and
# = the runtime's (the 1F1B B = 4 run above); with --recompute=all inside the stages (3 stages) alike for stages 0, 1
for v in "1f1b:none:2" "1f1b:all:3"; do
  IFS=: read -r SC RC S <<<"$v"
  if timeout 600 "$BUILD/galvc" "$m" --batch 8 --seq 8 --target cpu --train --precision bf16 --pipeline-stages "$S" --microbatches 4 \
      --schedule "$SC" --recompute="$RC" --no-build -o "$T/st-$RC/" </dev/null 2>"$T/st-$RC.err"; then
    if msg=$(python3 - "$T/st-$RC.err" "$T/t-2-4-1f1b-.log" "$RC" "$S" 2>&1 <<'PY'
import sys, re
t = open(sys.argv[1]).read()
got = [(int(s), int(b), int(e)) for s, b, e in re.findall(
    r"stage (\d+): forward and backward entries, stash \d+ values, (\d+) bytes per microbatch \(the stage DP's estimate (\d+)\)", t)]
if len(got) != int(sys.argv[4]) - 1: sys.exit(f"stash lines: {got}")
bad = [g for g in got if g[1] != g[2]]
if bad: sys.exit(f"stash per microbatch != the stage DP's estimate: {bad}")
if sys.argv[3] == "none":
    r = int(re.search(r"stage 0, rank 0\]: saved activations in flight: peak \d+ bytes \(\d+ microbatches x (\d+) bytes",
                      open(sys.argv[2]).read()).group(1))
    if r != got[0][1]: sys.exit(f"the runtime's stash {r} != galvc's {got[0][1]}")
print(", ".join(f"stage {s} {b} bytes = estimate" for s, b, _ in got))
PY
    ); then ok "bf16 stash, --recompute=$RC: $msg"; else bad "bf16 stash, --recompute=$RC: $msg"; fi
  else
    bad "bf16 stash, --recompute=$RC: galvc: $(grep -m1 error "$T/st-$RC.err")"
  fi
done

# ---- (2) inference: PRECISION:S:B[:tp:devices]
python3 - "$m" "$T/ids.npy" "$T/ort.npy" <<'PY' || bad "onnxruntime"
import sys, numpy as np, onnxruntime as ort
s = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
np.save(sys.argv[3], s.run(None, {s.get_inputs()[0].name: np.load(sys.argv[2])})[0])
PY
for p in bf16 fp16; do
  timeout 300 "${G[@]}" --precision $p -o "$T/i1_$p/" </dev/null 2>"$T/err" &&
    "$T/i1_$p/program" --input input_ids="$T/ids.npy" -o "$T/oi1_$p" >/dev/null 2>"$T/err" </dev/null ||
    bad "inference single $p: $(tail -1 "$T/err")"
done
for c in ${GALV_PIPE_BF16_INFER:-bf16:2:2 bf16:3:4 bf16:2:2:tp:1,2 fp16:2:2}; do
  IFS=: read -r P S B MODE SD <<<"$c"
  name="inference $P pp=$S B=$B${MODE:+ $MODE $SD}"
  d="$T/i-$P-$S-$B-$MODE"
  extra=()
  [ -n "$MODE" ] && extra=(--gpus 3 --stage-devices "$SD" --strategy "$MODE")
  if ! timeout 600 "${G[@]}" --precision "$P" --pipeline-stages "$S" --microbatches "$B" "${extra[@]}" -o "$d/" </dev/null 2>"$T/err"; then
    bad "$name: galvc: $(grep -m1 error "$T/err")"
    continue
  fi
  if ! timeout 120 "$d/launch" --input input_ids="$T/ids.npy" -o "$d.out" >"$d.log" 2>"$T/err" </dev/null; then
    bad "$name: run: $(grep -m2 -i error "$T/err" "$d.log")"
    continue
  fi
  if msg=$(python3 - "$T/ort.npy" "$T/oi1_$P/logits.npy" "$d.out/logits.npy" "$P" <<'PY'
import sys, numpy as np
r, one, p = (np.load(x).astype(np.float64) for x in sys.argv[1:4])
M = np.abs(r).max()
bound = 2.0 ** (-6 if sys.argv[4] == "bf16" else -9) * M
d_r, d_1 = np.abs(p - r).max(), np.abs(p - one).max()
print(f"vs onnxruntime {d_r:.2g} (bound {bound:.2g}, max|logit| {M:.3g}); vs single device {sys.argv[4]} {d_1:.2g} "
      f"({100 * float((p == one).mean()):.0f} % identical)")
sys.exit(0 if d_r <= bound and d_1 <= 2 ** -7 * M else 1)
PY
  ); then ok "$name: $msg"; else bad "$name: $msg"; fi
done
# ---- (3) the CUDA program under the CPU execution layer (have_cmd, galv_exit: tests/lib/require.sh, via mpi_env.sh)
if have_cmd g++; then
  d="$T/cu"
  if timeout 600 "$BUILD/galvc" "$m" --batch 8 --seq 8 -q --train --precision bf16 --pipeline-stages 2 --microbatches 4 --schedule 1f1b \
       --target cuda --no-build \
       -o "$d/" </dev/null >"$d.log" 2>&1 &&
     { make -s -C "$d/stage0" emu >"$d.0.log" 2>&1 & make -s -C "$d/stage1" emu >"$d.1.log" 2>&1; r1=$?; wait $!; r0=$?; [ $r0 = 0 ] && [ $r1 = 0 ]; } &&
     GALV_PROGRAM=program-emu timeout 300 "$d/launch" --batches "$T/b" --steps 3 >"$d.txt" 2>&1 </dev/null; then
    if msg=$(python3 - "$T/t-2-4-1f1b-.log" "$d.txt" <<'PY'
import sys, re
def losses(p): return [float(x) for x in re.findall(r"^step \d+ loss (\S+)", open(p).read(), re.M)]
a, b = losses(sys.argv[1]), losses(sys.argv[2])
if len(a) != 3 or len(b) != 3: sys.exit(f"losses {b} vs the cpu target's {a}")
d = max(abs(x - y) for x, y in zip(a, b))
print(f"losses {' '.join(f'{x:.7f}' for x in b)}: vs the cpu target's pipeline {d:.2g}")
sys.exit(0 if d <= 1e-3 else 1)
PY
    ); then ok "cuda target (program-emu), bf16 pp=2 B=4 1f1b: $msg"; else bad "cuda target (program-emu): $msg"; fi
  else
    bad "cuda target (program-emu), bf16 pp=2 B=4 1f1b: $(cat "$d.log" "$d".[01].log "$d.txt" 2>/dev/null | grep -m3 -i error)"
  fi
fi
echo "pipeline_bf16: $pass passed, $fail failed"
galv_exit "$fail"
