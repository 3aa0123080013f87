#!/usr/bin/env bash
# Models exported whole in 16 bits on the CUDA target (passes/compute_f32.c; docs/autodiff.md "Models computed in 16
# bits", docs/cuda-target.md): tests/lib/half_model.py's fp16 (torch .half()) and bf16 (.to(torch.bfloat16)) tiny
# GPT-2 (2 layers, hidden 32, vocab 64) trained with --target cuda --precision fp16 / bf16 (batch 8 x seq 8, 3 AdamW
# steps), the program built with `make emu` (program.cu and runtime/cuda/ over the CPU execution layer). Before the
# pass the CUDA emitter refused such a model (no 16-bit typed values: "cuda codegen: dtype f16 is not supported").
# Checked per dtype:
#   - program.cu and weights.bin are those of the fp32 twin (the fp32 model holding the rounded values) under the
#     same flags, byte for byte (but program.cu's header line naming the model);
#   - program-emu's losses within 4e-4 (fp16: tests/cuda_emu_fp16.sh's bound between the two targets) / 1e-3 (bf16:
#     tests/cpu_bf16.sh's) of the CPU target's program of the same 16-bit model, fp16's loss scale and skipped steps
#     per step equal to the CPU's; the weights written (-o: fp32 masters) finite and within 6e-3 of the CPU's
#     (2 x lr x steps: AdamW moves an element ~lr per step whatever its gradient).
# Usage: cuda_emu_half_model.sh BUILD_DIR
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$SRC/tests/lib/require.sh"
require_cmd "g++ (build-essential)" g++
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export OPENBLAS_NUM_THREADS=1
fail=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fail=1; }
t0=$(date +%s)
python3 "$SRC/examples/make_model.py" gpt2 -o "$T/g.onnx" --layers 2 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null ||
  { echo "FAIL make_model"; exit 1; }
python3 -c "
import numpy as np, os
r = np.random.RandomState(0)
os.makedirs('$T/b')
np.save('$T/b/input_ids.npy', r.randint(0, 64, (3, 8, 8)).astype(np.int64))
np.save('$T/b/labels.npy', r.randint(0, 64, (3, 8, 8)).astype(np.int64))" || { echo "FAIL batches"; exit 1; }
G=("$BUILD/galvc" --batch 8 --seq 8 --train -q)

for k in ${GALV_HALF_MODEL_CASES:-fp16 bf16}; do
  python3 "$SRC/tests/lib/half_model.py" "$T/g.onnx" "$T/h_$k.onnx" "$T/t_$k.onnx" $k || { bad "$k: half_model"; continue; }
  if ! timeout 300 "${G[@]}" "$T/h_$k.onnx" --precision $k --target cuda --no-build -o "$T/cu_$k/" </dev/null >"$T/cu_$k.glog" 2>&1 ||
     ! timeout 300 "${G[@]}" "$T/t_$k.onnx" --precision $k --target cuda --no-build -o "$T/tw_$k/" </dev/null >>"$T/cu_$k.glog" 2>&1 ||
     ! timeout 300 "${G[@]}" "$T/h_$k.onnx" --precision $k --target cpu -o "$T/cpu_$k/" </dev/null >>"$T/cu_$k.glog" 2>&1; then
    bad "$k: galvc: $(grep -m1 error "$T/cu_$k.glog")"
    continue
  fi
  if cmp -s <(tail -n +2 "$T/cu_$k/program.cu") <(tail -n +2 "$T/tw_$k/program.cu") && cmp -s "$T/cu_$k/weights.bin" "$T/tw_$k/weights.bin"; then
    ok "$k model, --target cuda --precision $k: program.cu and weights.bin = the fp32 twin's"
  else bad "$k model: program.cu / weights.bin differ from the twin's"; fi
  if ! timeout 900 nice make -s -C "$T/cu_$k" emu >"$T/cu_$k.make" 2>&1; then bad "$k: make emu: $(tail -n 5 "$T/cu_$k.make")"; continue; fi
  if ! timeout 300 "$T/cu_$k/program-emu" --batches "$T/b" --steps 3 -o "$T/cu_$k.w" </dev/null >"$T/cu_$k.log" 2>&1 ||
     ! timeout 300 "$T/cpu_$k/program" --batches "$T/b" --steps 3 -o "$T/cpu_$k.w" </dev/null >"$T/cpu_$k.log" 2>&1; then
    bad "$k: run: $(cat "$T/cu_$k.log" "$T/cpu_$k.log" | grep -m2 -i error)"
    continue
  fi
  if r=$(python3 - "$T/cpu_$k" "$T/cu_$k" "$k" <<'PY'
import glob, os, re, sys
import numpy as np
cpu, cu, k = sys.argv[1:4]
bound = 4e-4 if k == "fp16" else 1e-3
pat = r"^step (\d+) loss (\S+)(?: scale (\d+) skipped (\d+))?"
a, b = (re.findall(pat, open(p + ".log").read(), re.M) for p in (cpu, cu))
if len(a) != 3 or len(b) != 3: sys.exit(f"step lines: cuda {b}, cpu {a}")
d = max(abs(float(x[1]) - float(y[1])) for x, y in zip(a, b))
errs = [] if d <= bound else [f"losses beyond {bound}"]
if [x[2:] for x in a] != [x[2:] for x in b]: errs.append(f"loss scale / skipped {[x[2:] for x in b]} vs the cpu's {[x[2:] for x in a]}")
fs = sorted(glob.glob(cu + ".w/*.npy"))
worst, nonfin = 0.0, 0
for f in fs:
    x, y = np.load(f), np.load(f"{cpu}.w/{os.path.basename(f)}")
    nonfin += int((~np.isfinite(x)).sum()) + (x.dtype != np.float32)
    worst = max(worst, float(np.abs(x.astype(np.float64) - y).max()))
if len(fs) != 29 or nonfin or worst > 6e-3: errs.append(f"weights: {len(fs)} files, {nonfin} not finite / not fp32, within {worst:.2g}")
sc = f", loss scale / skipped per step = the cpu's ({', '.join(x[2] + '/' + x[3] for x in b)})" if b[0][2] else ""
print(f"losses {' '.join(x[1] for x in b)}: within {d:.2g} of the cpu program's (bound {bound}){sc}; {len(fs)} fp32 weights "
      f"within {worst:.2g}" + ("; " + ", ".join(errs) if errs else ""))
sys.exit(1 if errs else 0)
PY
  ); then ok "$k model, program-emu vs the cpu program: $r"; else bad "$k model: $r"; fi
  echo "     $k: $(($(date +%s) - t0)) s"
done
[ $fail = 0 ] && echo "PASS cuda_emu_half_model"
exit $fail
