#!/usr/bin/env bash
# 16-bit gradient sums of CUDA pipeline stages on the device (docs/cuda-target.md, "Pipeline stages"; docs/pipeline.md,
# "16-bit storage"): with --grad-dtype bf16 / fp16 runtime/pipe.c sums each microbatch's 16-bit parameter gradients,
# widens a sum for the optimizer and scans the sums for the loss scale's overflow check and the clipping norm through
# the device table's op16 / to_f32 / scan hooks (runtime/cuda/pipe_cuda.cu: kernels, rounding to nearest even as the
# host's narrowing), not through host copies. Tiny GPT-2 (tests/pipeline_grad_bf16.sh's: 2 layers, hidden 32, vocab
# 64), batch 8 x 8, pp=2, B=4 microbatches, 1F1B, 3 AdamW steps, --clip-grad-norm 1; each case compiled --target cuda
# (make emu per stage: program.cu and runtime/cuda/ over the CPU execution layer) and --target cpu, and run:
#   bf     --precision bf16 --grad-dtype bf16
#   fp     --precision fp16 --grad-dtype fp16 (dynamic loss scaling)
#   ov     fp at --loss-scale-init 2^20: the fp16 sums overflow (tests/pipeline_grad_fp16.sh (3))
# Checked per case: the CUDA pipeline's losses within 1e-3 of the CPU pipeline's (tests/cpu_bf16.sh's 16-bit bound;
# the programs' kernels sum in another order), weights finite and within 6e-3 of the CPU's (2 x lr x steps), the loss
# scale and skipped steps per step equal to the CPU's (fp, ov: ov's first step skipped, the scale halved). bf: the bytes
# copied between host and device (the emulation layer's count, GALV_EMU_MEM=1, both ranks) against the same CUDA
# pipeline with fp32 gradient sums: h2d equal, d2h not more (the host round trip of the 16-bit sums, per parameter
# per microbatch, would add to both).
# Usage: cuda_emu_pipe_grad16.sh BUILD_DIR
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$SRC/tests/lib/require.sh"
require_cmd "g++ (build-essential)" g++
require_cmd "OpenMPI (mpicc, mpirun)" mpicc mpirun
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export OPENBLAS_NUM_THREADS=1
. "$SRC/tests/lib/mpi_env.sh"
fail=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fail=1; }
t0=$(date +%s)
m="$T/g.onnx"
python3 "$SRC/examples/make_model.py" gpt2 -o "$m" --layers 2 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null ||
  { echo "FAIL make_model"; exit 1; }
python3 -c "
import numpy as np, os
r = np.random.RandomState(0)
os.makedirs('$T/b')
np.save('$T/b/input_ids.npy', r.randint(0, 64, (3, 8, 8)).astype(np.int64))
np.save('$T/b/labels.npy', r.randint(0, 64, (3, 8, 8)).astype(np.int64))" || { echo "FAIL batches"; exit 1; }

# NAME TARGET GALVC-ARGS...: the pipeline compiled and built in $T/NAME-TARGET/, run 3 steps (log, weights)
pipe() {
  local n=$1 tg=$2 d="$T/$1-$2"
  shift 2
  timeout 300 nice "$BUILD/galvc" "$m" --batch 8 --seq 8 --train --pipeline-stages 2 --microbatches 4 --schedule 1f1b \
    --clip-grad-norm 1 "$@" --target "$tg" --no-build -q -o "$d/" </dev/null >"$d.gen" 2>&1 || { echo "galvc: $(grep -m3 error "$d.gen")"; return 1; }
  local goal=all prog=program
  [ "$tg" = cuda ] && goal=emu prog=program-emu
  nice make -s -C "$d/stage0" $goal >"$d.make0" 2>&1 & # the two stages built side by side
  nice make -s -C "$d/stage1" $goal >"$d.make1" 2>&1 || { wait; echo "make $goal stage1: $(tail -n 5 "$d.make1")"; return 1; }
  wait $! || { echo "make $goal stage0: $(tail -n 5 "$d.make0")"; return 1; }
  GALV_EMU_MEM=1 GALV_PROGRAM=$prog GALV_COMM_SYNC=1 timeout 300 "$d/launch" --batches "$T/b" --steps 3 -o "$d.w" </dev/null >"$d.log" 2>&1 ||
    { echo "run: $(grep -m3 -i error "$d.log")"; return 1; }
}

for c in ${GALV_CUDA_PIPE_GRAD16_CASES:-bf fp ov}; do
  case $c in
  bf) a=(--precision bf16 --grad-dtype bf16) ;;
  fp) a=(--precision fp16 --grad-dtype fp16) ;;
  ov) a=(--precision fp16 --grad-dtype fp16 --loss-scale-init 1048576) ;;
  *) bad "unknown case $c"; continue ;;
  esac
  if ! r=$(pipe "$c" cuda "${a[@]}") || ! r=$(pipe "$c" cpu "${a[@]}"); then
    bad "$c: $r"
    continue
  fi
  if r=$(python3 - "$T/$c-cpu" "$T/$c-cuda" "$c" <<'PY'
import glob, os, re, sys
import numpy as np
cpu, cu, c = sys.argv[1:4]
pat = r"^(?:\S+\[stage \d[^\]]*\]: )?step (\d+) loss (\S+)(?: scale (\d+) skipped (\d+))?"
a, b = (re.findall(pat, open(p + ".log").read(), re.M) for p in (cpu, cu))
if len(a) != 3 or len(b) != 3: sys.exit(f"step lines: cuda {b}, cpu {a}")
d = max(abs(float(x[1]) - float(y[1])) for x, y in zip(a, b))
errs = [] if d <= 1e-3 else [f"losses beyond 1e-3"]
sa, sb = [x[2:] for x in a], [x[2:] for x in b]
if sa != sb: errs.append(f"loss scale / skipped per step {sb} vs the cpu's {sa}")
if c == "ov" and sb[0] != ("524288", "1"): errs.append(f"the first step not skipped at 2^20: {sb}")
fs = sorted(glob.glob(cu + ".w/*.npy"))
worst, nonfin = 0.0, 0
for f in fs:
    x, y = np.load(f), np.load(f"{cpu}.w/{os.path.basename(f)}")
    nonfin += int((~np.isfinite(x)).sum())
    worst = max(worst, float(np.abs(x.astype(np.float64) - y).max()))
if len(fs) != 29 or nonfin or worst > 6e-3: errs.append(f"weights: {len(fs)} files, {nonfin} not finite, within {worst:.2g}")
sc = f", loss scale / skipped per step {[tuple(int(v) for v in s) for s in sb]} = the cpu's" if sb[0][0] else ""
print(f"losses {' '.join(x[1] for x in b)}: within {d:.2g} of the cpu pipeline's{sc}; {len(fs)} weights within {worst:.2g}"
      + ("; " + ", ".join(errs) if errs else ""))
sys.exit(1 if errs else 0)
PY
  ); then ok "$c (cuda emu vs cpu pipeline): $r"; else bad "$c: $r"; fi
  echo "     $c: $(($(date +%s) - t0)) s"
done

# bf: the host-device bytes against the same CUDA pipeline with fp32 gradient sums
if [ -f "$T/bf-cuda.log" ]; then
  if r=$(pipe bf32 cuda --precision bf16); then
    if r=$(python3 - "$T/bf-cuda.log" "$T/bf32-cuda.log" <<'PY'
import re, sys
def tot(p):
    v = re.findall(r"emulation: host-device copies: h2d (\d+) bytes in \d+ calls, d2h (\d+) bytes", open(p).read())
    if len(v) != 2: sys.exit(f"{p}: {len(v)} copy lines (expected one per rank)")
    return sum(int(h) for h, _ in v), sum(int(d) for _, d in v)
(h16, d16), (h32, d32) = tot(sys.argv[1]), tot(sys.argv[2])
msg = f"bf16 sums: h2d {h16}, d2h {d16} bytes; fp32 sums: h2d {h32}, d2h {d32} bytes (both ranks, 3 steps)"
if h16 != h32 or d16 > d32: sys.exit(msg)
print(msg)
PY
    ); then ok "bf: host-device copies: $r"; else bad "bf: host-device copies: $r"; fi
  else bad "bf32: $r"; fi
fi
echo "     total: $(($(date +%s) - t0)) s"
[ $fail = 0 ] && echo "PASS cuda_emu_pipe_grad16"
exit $fail
