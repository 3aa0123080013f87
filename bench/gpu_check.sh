#!/usr/bin/env bash
# bench/gpu_check.sh — the CUDA target on one GPU, in one prepared command.
#
#   bench/gpu_check.sh prepare DIR   (here, no GPU needed; needs galvc in $BUILD, default build-cuda)
#       GPT-2 small (12 layers, 768 hidden, 12 heads, vocab 50257; helper-built,
#       batch 1, seq 64) -> DIR/gpt2s_fp32/ and DIR/gpt2s_bf16/ (galvc --target cuda);
#       weights from `program --gen-weights 1`; the CPU target's logits on them ->
#       DIR/ref/logits.npy; then weights.bin is deleted so DIR stays small (~20 MB).
#   bench/gpu_check.sh run DIR       (on the GPU machine: nvcc, no network, no packages)
#       builds and runs every kernel test (correctness sweep, then --time: GB/s or
#       TFLOP/s against the H200's figures), regenerates the weights from the seed,
#       runs GPT-2 small fp32 and bf16 (--profile-out: time per kernel kind, and per call site into
#       DIR/gpt2s_P/kernels.json, which bench/layer_profile.py turns into the galvc --profile file
#       DIR/gpt2s_P_profile.json: forward ms per layer and of the outer part at batch 1; step time,
#       GEMM+attention TFLOP/s) and compares with the CPU target's logits:
#       fp32 within atol 1e-4 + rtol 1e-4, bf16 within atol 5e-2 + rtol 5e-2
#       (bf16 storage of every activation and weight: ~3 significant digits).
#       Then a GPT-2 small training step (fp32, AdamW, batch 4 x seq 64; 6 steps):
#       the first two losses vs the CPU target's (rtol 1e-3), step time and MFU
#       (6 * params * tokens + attention FLOPs against 67 TFLOP/s fp32); the same in
#       bf16 mixed precision (--precision bf16) vs the same fp32 CPU losses within
#       |dloss| <= 2e-2, MFU against 989 TFLOP/s bf16; fp32 and bf16 then run 3 more steps with
#       --profile-out DIR/gpt2s_train[_bf16]/kernels.json (each call site's CUDA event interval on
#       the compute stream, the mean of the last 2 steps), which bench/layer_profile.py turns into
#       DIR/gpt2s_train_P_profile.json (forward and backward ms per layer and of the outer part at
#       microbatch 4); both again with --fused-attention on
#       (the training attention kernels, tests/cuda/test_fattn_train.cu; fused vs unfused
#       step time side by side); and a 4-layer GPT-2's 3 bf16 steps
#       vs the CPU emulation of the same storage plan (galv-eval --precision bf16) within 2e-3
#       (twice the 1e-3 each correct bf16 execution keeps from fp32: docs/cuda-target.md).
#       Then the 2-rank plan: the helper's small GPT-2 (batch 1, seq 64) compiled
#       with --gpus 2 --strategy tp (collectives in program.cu; weights.bin kept:
#       one block per rank, a few MB) built with make COMM=staged (the host-staged
#       backend: both ranks share the one GPU) and run with ./launch (mpirun -np 2),
#       its logits against the CPU target's 2-rank program (same plan, prepared
#       here: DIR/ref2/logits.npy) within atol 1e-4 + rtol 1e-4; and its 2-rank dp
#       training (batch 2, 2 steps, staged backend): losses vs the CPU target's 2-rank
#       program (rtol 1e-3), the -o parameters vs the CPU's, a checkpoint round trip.
#       Then a 2-stage pipeline: GPT-2 tiny (2 layers, hidden 32, vocab 64) training,
#       --pipeline-stages 2 --microbatches 2 --schedule gpipe, batch 8 x seq 8, 2 AdamW
#       steps; each stage's CUDA program built with make COMM=staged (both stages on the
#       one GPU; stage 0 with its backward entry program_bwd.cu: the per-microbatch
#       stash on the device) and started by DIR/pp2/launch (mpirun MPMD, under timeout
#       120); its losses against the CPU target's pipeline (prepared here:
#       DIR/ref/pp2_loss.txt) within rtol 1e-3, the 29 trained weights within 2 lr steps
#       (4e-3) with at most 0.1 % of the elements beyond 1e-5 (as the 2-rank check), and
#       stage 0's stash line (saved activations in flight) printed. Then the same model
#       under interleaved 1F1B (2 device groups x 2 chunks, 4 microbatches; the 4 stage
#       ranks on the one GPU, host-staged): losses vs the CPU target's (DIR/ref/il_loss.txt)
#       within rtol 1e-3, the send copies released as received.
#   Finishes in well under 4 minutes on an H200 (compiles run 8 at a time).
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-}; DIR=${2:-}
[ -n "$mode" ] && [ -n "$DIR" ] || { echo "usage: $0 prepare|run DIR"; exit 2; }
mkdir -p "$DIR"; DIR=$(cd "$DIR" && pwd)
SEQ=64
TB=4 # training batch
# multi-rank runs: mpirun (as root it needs --allow-run-as-root); MPIRUN overrides.
# One BLAS thread per rank, as every multi-rank bench (bench/pipeline_uneven.sh):
# the CPU references' ranks would otherwise each start a thread per core.
export OPENBLAS_NUM_THREADS=1
export MPIRUN=${MPIRUN:-mpirun $([ "$(id -u)" = 0 ] && echo --allow-run-as-root) -x OPENBLAS_NUM_THREADS}

if [ "$mode" = prepare ]; then
  BUILD=${BUILD:-$SRC/build-cuda}
  python3 "$SRC/examples/make_model.py" gpt2 --layers 12 --hidden 768 --heads 12 --vocab 50257 --ffn 3072 \
    --no-verify -o "$DIR/gpt2s.onnx" >/dev/null
  python3 -c "import numpy as np; np.save('$DIR/ids.npy', (np.arange($SEQ, dtype=np.int64).reshape(1, $SEQ) * 7919) % 50257)"
  for p in fp32 bf16; do
    "$BUILD/galvc" "$DIR/gpt2s.onnx" --batch 1 --seq $SEQ --target cuda --precision $p --no-build -q -o "$DIR/gpt2s_$p/"
  done
  d=$DIR/gpt2s_fp32
  make -s -C "$d" -j2 program >/dev/null
  "$d/program" --gen-weights 1
  make -s -C "$d" cpu
  "$d/program-cpu" --input input_ids="$DIR/ids.npy" -o "$DIR/ref" | tail -1
  # training step: GPT-2 small, batch TB x seq SEQ, AdamW, fp32; the CPU target's losses of 2 steps -> ref/train_loss.txt
  "$BUILD/galvc" "$DIR/gpt2s.onnx" --batch $TB --seq $SEQ --train --target cuda --no-build -q -o "$DIR/gpt2s_train/"
  mkdir -p "$DIR/batches"
  python3 -c "import numpy as np; x=(np.arange($TB*$SEQ, dtype=np.int64).reshape($TB,$SEQ)*7919)%50257; np.save('$DIR/batches/input_ids.npy', x); np.save('$DIR/batches/labels.npy', np.roll(x, -1, 1))"
  d=$DIR/gpt2s_train
  make -s -C "$d" -j2 program >/dev/null
  "$d/program" --gen-weights 1
  make -s -C "$d" cpu
  "$d/program-cpu" --batches "$DIR/batches" --steps 2 | grep '^step' | tee "$DIR/ref/train_loss.txt"
  # the same step in bf16 mixed precision (fp32 master weights and optimizer state, bf16 activations): compared
  # with the same fp32 CPU losses at |dloss| <= 2e-2 (docs/cuda-target.md, "bf16 training")
  "$BUILD/galvc" "$DIR/gpt2s.onnx" --batch $TB --seq $SEQ --train --precision bf16 --target cuda --no-build -q -o "$DIR/gpt2s_train_bf16/"
  # both with the fused training attention core (the CUDA default leaves it off: docs/fused-attention.md)
  "$BUILD/galvc" "$DIR/gpt2s.onnx" --batch $TB --seq $SEQ --train --fused-attention on --target cuda --no-build -q -o "$DIR/gpt2s_train_fa/"
  "$BUILD/galvc" "$DIR/gpt2s.onnx" --batch $TB --seq $SEQ --train --precision bf16 --fused-attention on --target cuda --no-build -q \
    -o "$DIR/gpt2s_train_fa_bf16/"
  # bf16 training against its definition: a 4-layer GPT-2 (hidden 128, vocab 4096; weights.bin kept, ~6 MB), 3 steps;
  # the CPU emulation of the same storage plan (galv-eval --precision bf16) -> ref/k_bf16.txt, fp32 -> ref/k_fp32.txt
  python3 "$SRC/examples/make_model.py" gpt2 --layers 4 --hidden 128 --heads 4 --vocab 4096 --no-verify -o "$DIR/gpt2k.onnx" >/dev/null
  "$BUILD/galvc" "$DIR/gpt2k.onnx" --batch 2 --seq $SEQ --train --precision bf16 --target cuda --no-build -q -o "$DIR/gpt2k_bf16/"
  mkdir -p "$DIR/batches_k"
  python3 -c "import numpy as np; x=(np.arange(2*$SEQ, dtype=np.int64).reshape(2,$SEQ)*7919)%4096; np.save('$DIR/batches_k/input_ids.npy', x); np.save('$DIR/batches_k/labels.npy', np.roll(x, -1, 1))"
  for p in fp32 bf16; do
    "$BUILD/galv-eval" "$DIR/gpt2k.onnx" --batch 2 --seq $SEQ --train --steps 3 --precision $p \
      --input input_ids="$DIR/batches_k/input_ids.npy" --input labels="$DIR/batches_k/labels.npy" | grep '^step' >"$DIR/ref/k_$p.txt"
  done
  echo "4-layer GPT-2, CPU emulation of bf16 training: $(tr '\n' ' ' <"$DIR/ref/k_bf16.txt") (fp32: $(tr '\n' ' ' <"$DIR/ref/k_fp32.txt"))"
  rm -f "$DIR/gpt2k.onnx"
  # the 2-rank plan (tp): CUDA program (weights.bin kept: per-rank blocks from galvc) and the CPU target's 2-rank logits
  python3 "$SRC/examples/make_model.py" gpt2 --no-verify -o "$DIR/gpt2t.onnx" >/dev/null
  "$BUILD/galvc" "$DIR/gpt2t.onnx" --batch 1 --seq $SEQ --gpus 2 --strategy tp --target cuda --no-build -q -o "$DIR/gpt2t_2r/"
  "$BUILD/galvc" "$DIR/gpt2t.onnx" --batch 1 --seq $SEQ --gpus 2 --strategy tp --target cpu -q -o "$DIR/cpu_2r/"
  python3 -c "import numpy as np; np.save('$DIR/ids_t.npy', (np.arange($SEQ, dtype=np.int64).reshape(1, $SEQ) * 31) % 64)"
  MPIRUN="$MPIRUN" "$DIR/cpu_2r/launch" --input input_ids="$DIR/ids_t.npy" -o "$DIR/ref2" | tail -1
  # 2-rank dp training (AdamW, batch 2 x seq SEQ): the CUDA program (weights.bin kept) and the CPU target's
  # 2-rank losses of 2 steps (ref2/train_loss.txt) and parameters after them (-o ref2/train_w/)
  "$BUILD/galvc" "$DIR/gpt2t.onnx" --batch 2 --seq $SEQ --gpus 2 --strategy dp --train --target cuda --no-build -q -o "$DIR/gpt2t_dp/"
  "$BUILD/galvc" "$DIR/gpt2t.onnx" --batch 2 --seq $SEQ --gpus 2 --strategy dp --train --target cpu -q -o "$DIR/cpu_dp/"
  mkdir -p "$DIR/batches_t"
  python3 -c "import numpy as np; x=(np.arange(2*$SEQ, dtype=np.int64).reshape(2,$SEQ)*31)%256; np.save('$DIR/batches_t/input_ids.npy', x); np.save('$DIR/batches_t/labels.npy', np.roll(x, -1, 1))"
  MPIRUN="$MPIRUN" "$DIR/cpu_dp/launch" --batches "$DIR/batches_t" --steps 2 -o "$DIR/ref2/train_w" | grep '^step' | tee "$DIR/ref2/train_loss.txt"
  rm -rf "$DIR/cpu_2r" "$DIR/cpu_dp" "$DIR/gpt2t.onnx"
  # the 2-stage pipeline (GPipe): GPT-2 tiny training, the CUDA stages (weights.bin kept: small) and the
  # CPU target's pipeline on the same plan -> ref/pp2_loss.txt, ref/pp2_w/NAME.npy
  python3 "$SRC/examples/make_model.py" gpt2 --layers 2 --hidden 32 --heads 4 --vocab 64 --no-verify -o "$DIR/gpt2pp.onnx" >/dev/null
  python3 -c "
import numpy as np, os
r = np.random.RandomState(0)
os.makedirs('$DIR/ppb', exist_ok=True)
np.save('$DIR/ppb/input_ids.npy', r.randint(0, 64, (2, 8, 8)).astype(np.int64))
np.save('$DIR/ppb/labels.npy', r.randint(0, 64, (2, 8, 8)).astype(np.int64))"
  PP=(--batch 8 --seq 8 --train --pipeline-stages 2 --microbatches 2 --schedule gpipe)
  "$BUILD/galvc" "$DIR/gpt2pp.onnx" "${PP[@]}" --target cuda --no-build -q -o "$DIR/pp2/"
  "$BUILD/galvc" "$DIR/gpt2pp.onnx" "${PP[@]}" --target cpu -q -o "$DIR/cpu_pp2/"
  MPIRUN="$MPIRUN" "$DIR/cpu_pp2/launch" --batches "$DIR/ppb" --steps 2 -o "$DIR/ref/pp2_w" | grep '^step' | tee "$DIR/ref/pp2_loss.txt"
  # interleaved 1F1B on the same model: 2 device groups x 2 chunks, 4 microbatches (the CPU target's losses ->
  # ref/il_loss.txt); on the GPU the 4 stage ranks share the one GPU through the host-staged backend
  IL=(--batch 8 --seq 8 --train --pipeline-stages 2 --virtual-stages 2 --schedule interleaved --microbatches 4)
  "$BUILD/galvc" "$DIR/gpt2pp.onnx" "${IL[@]}" --target cuda --no-build -q -o "$DIR/il4/"
  "$BUILD/galvc" "$DIR/gpt2pp.onnx" "${IL[@]}" --target cpu -q -o "$DIR/cpu_il4/"
  MPIRUN="$MPIRUN" "$DIR/cpu_il4/launch" --batches "$DIR/ppb" --steps 2 | grep '^step' | tee "$DIR/ref/il_loss.txt"
  rm -rf "$DIR/cpu_pp2" "$DIR/cpu_il4" "$DIR/gpt2pp.onnx"
  # GPT-2 small training where the GPU is busy (batch 8 x seq 1024, 8192 tokens a step): the measured step beside
  # galvc's prediction for the h200 preset (--report-cost: step time and memory per device), fp32 / bf16, fused
  # attention off / on. Timing only: the batch-4 x seq-64 runs above are the correctness checks.
  python3 "$SRC/examples/make_model.py" gpt2 --layers 12 --hidden 768 --heads 12 --vocab 50257 --ffn 3072 --max-pos 1024 \
    --no-verify -o "$DIR/gpt2m.onnx" >/dev/null
  for v in fp32 bf16 fa_fp32 fa_bf16; do
    p=${v#fa_}; fa=off; [ $v != $p ] && fa=on
    mkdir -p "$DIR/big_$v"
    "$BUILD/galvc" "$DIR/gpt2m.onnx" --batch 8 --seq 1024 --train --precision $p --fused-attention $fa --target cuda \
      --cluster h200 --no-build -q --report-cost -o "$DIR/big_$v/" | grep -E '^(predicted step|memory per device):' \
      >"$DIR/big_$v/predicted.txt"
    (cd "$DIR/big_$v" && rm -f weights.bin)
  done
  mkdir -p "$DIR/batches_big"
  python3 -c "import numpy as np; r=np.random.RandomState(0); x=r.randint(0, 50257, (8, 1024)).astype(np.int64); np.save('$DIR/batches_big/input_ids.npy', x); np.save('$DIR/batches_big/labels.npy', np.roll(x, -1, 1))"
  rm -f "$DIR/gpt2m.onnx"
  # (program.c, the CPU target's source, is not needed there)
  for p in fp32 bf16 train train_bf16 train_fa train_fa_bf16; do (cd "$DIR/gpt2s_$p" && rm -f weights.bin program program-cpu *.o program.c); done
  rm -f "$DIR"/big_*/program.c
  rm -f "$DIR/gpt2s.onnx"
  du -sh "$DIR"
  exit 0
fi

[ "$mode" = run ] || { echo "usage: $0 prepare|run DIR"; exit 2; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || echo "(nvidia-smi not available)"
nvcc --version | tail -1; echo "host compiler: $(cc --version | head -1)"
# cuBLAS from the toolkit's own folder when the loader does not know it
for c in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda/lib; do
  [ -e "$c/libcublas.so" ] && export LIBRARY_PATH=${LIBRARY_PATH:+$LIBRARY_PATH:}$c LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$c
done
B=$DIR/build; mkdir -p "$B"
NVF="-O3 -std=c++17 -gencode arch=compute_90,code=sm_90"
RT=$SRC/runtime
nvcc $NVF -c -o "$B/kernels.o" "$RT/cuda/kernels.cu" & nvcc $NVF -c -o "$B/context.o" "$RT/cuda/context.cu" &
nvcc $NVF -c -o "$B/kernels_grad.o" "$RT/cuda/kernels_grad.cu" &
cc -O2 -std=gnu11 -c -o "$B/io.o" "$RT/io.c" & cc -O2 -std=gnu11 -c -o "$B/npy.o" "$RT/npy.c" &
cc -O2 -std=gnu11 -c -o "$B/file.o" "$RT/file.c" & wait
ar rcs "$B/libk.a" "$B/kernels.o" "$B/kernels_grad.o" "$B/context.o" "$B/io.o" "$B/npy.o" "$B/file.o"
cc -O2 -o "$B/npy_compare" "$SRC/tests/cuda/npy_compare.c" "$RT/npy.c" "$RT/file.c" -lm
for t in "$SRC"/tests/cuda/test_*.cu; do nvcc $NVF -o "$B/$(basename "$t" .cu)" "$t" "$B/libk.a" -lcublas -lcublasLt & done
for p in fp32 bf16 train train_bf16 train_fa train_fa_bf16; do make -s -C "$DIR/gpt2s_$p" -j4 program & done
HAVE_MPI=0
if command -v mpicc >/dev/null && command -v mpirun >/dev/null; then
  HAVE_MPI=1
  # (COMM_LIBS=: the staged backend calls no BLAS on the host; a GPU machine may have no OpenBLAS)
  make -s -C "$DIR/gpt2t_2r" COMM=staged COMM_LIBS= program &
  make -s -C "$DIR/gpt2t_dp" COMM=staged COMM_LIBS= program &
  for s in 0 1; do make -s -C "$DIR/pp2/stage$s" COMM=staged COMM_LIBS= program & done
  for s in 0 1 2 3; do [ -d "$DIR/il4/stage$s" ] && make -s -C "$DIR/il4/stage$s" COMM=staged COMM_LIBS= program & done
fi
make -s -C "$DIR/gpt2k_bf16" -j4 program &
for v in fp32 bf16 fa_fp32 fa_bf16; do [ -d "$DIR/big_$v" ] && make -s -C "$DIR/big_$v" -j4 program & done
wait
echo "== built in $(($(date +%s) - t0)) s"
fail=0
# a compile that failed leaves no executable: name it (its run below then fails or is skipped)
for t in "$SRC"/tests/cuda/test_*.cu; do [ -x "$B/$(basename "$t" .cu)" ] || { echo "   BUILD FAILED: $t"; fail=1; }; done
progs="gpt2s_fp32 gpt2s_bf16 gpt2s_train gpt2s_train_bf16 gpt2s_train_fa gpt2s_train_fa_bf16 gpt2k_bf16"
[ $HAVE_MPI = 1 ] && progs="$progs gpt2t_2r gpt2t_dp pp2/stage0 pp2/stage1 il4/stage0 il4/stage1 il4/stage2 il4/stage3"
for p in $progs; do [ -x "$DIR/$p/program" ] || { echo "   BUILD FAILED: $DIR/$p/program"; fail=1; }; done
if [ "${GPU_CHECK_BUILD_ONLY:-0}" = 1 ]; then exit $fail; fi # (a compile check on a machine without a GPU)
for t in "$B"/test_*; do
  [ -x "$t" ] || continue
  echo "== $(basename "$t")"
  "$t" --time || fail=1
done
for p in fp32 bf16; do
  d=$DIR/gpt2s_$p
  echo "== GPT-2 small ($p), batch 1, seq $SEQ"
  "$d/program" --gen-weights 1 >/dev/null
  "$d/program" --input input_ids="$DIR/ids.npy" --warmup 3 --iters 20 --profile-out "$d/kernels.json" -o "$d/res" ||
    { fail=1; continue; }
  # the kernel profile as a galvc --profile file (forward per layer and of the outer part; docs/planner.md "Profiles")
  python3 "$SRC/bench/layer_profile.py" -o "$DIR/gpt2s_${p}_profile.json" --point "$d/kernels.json,1" --layers 12 \
    --hidden 768 --seq $SEQ --vocab 50257 --source "bench/gpu_check.sh: GPT-2 small $p inference on $(hostname)" || fail=1
  if [ $p = fp32 ]; then tol="1e-4 1e-4"; else tol="5e-2 5e-2"; fi
  echo -n "   vs the CPU target: "
  "$B/npy_compare" "$d/res/logits.npy" "$DIR/ref/logits.npy" $tol || fail=1
done
# training step on 1 GPU: losses vs the CPU target's (rtol 1e-3), step time and MFU
# (model FLOPs 6 * params * tokens + attention 12 * layers * seq * hidden * tokens; H200 fp32 dense 67 TFLOP/s,
# bf16 989, shared/REFERENCES.md)
for c in fp32 bf16 fa_fp32 fa_bf16; do
p=${c#fa_}
d=$DIR/gpt2s_train$([ $c != $p ] && echo _fa || true)$([ $p = bf16 ] && echo _bf16 || true) # (set -e: a bare test would end the script)
echo "== GPT-2 small training step ($p, AdamW$([ $c != $p ] && echo ', --fused-attention on' || true)), batch $TB, seq $SEQ"
"$d/program" --gen-weights 1 >/dev/null
if "$d/program" --batches "$DIR/batches" --steps 6 | tee "$d/run.txt"; then
  python3 - "$d/run.txt" "$DIR/ref/train_loss.txt" $TB $SEQ $p <<'PY' || fail=1
import re, sys
run = open(sys.argv[1]).read(); ref = open(sys.argv[2]).read(); prec = sys.argv[5]
got = [float(x) for x in re.findall(r"^step \d+ loss (\S+)", run, re.M)]
want = [float(x) for x in re.findall(r"^step \d+ loss (\S+)", ref, re.M)]
# fp32: rtol 1e-3; bf16 (mixed precision vs the fp32 CPU losses): |dloss| <= 2e-2 (docs/cuda-target.md)
if prec == "fp32":
    ok = all(abs(g - w) <= 1e-3 * abs(w) + 1e-4 for g, w in zip(got, want)) and len(want) == 2 and len(got) >= 2
else:
    ok = all(abs(g - w) <= 2e-2 for g, w in zip(got, want)) and len(want) == 2 and len(got) >= 2
print(f"   losses vs the CPU target's fp32 ({'rtol 1e-3' if prec == 'fp32' else '|d| <= 2e-2'}):", got[:2], want,
      "max |d| %.3g" % max(abs(g - w) for g, w in zip(got, want)), "ok" if ok else "MISMATCH")
m = re.search(r"mean ([\d.]+) ms, min ([\d.]+) ms.* (\d+) parameters", run)
B, S, L, H = int(sys.argv[3]), int(sys.argv[4]), 12, 768
P = int(m.group(3)); T = B * S
flops = 6 * P * T + 12 * L * S * H * T
t = float(m.group(1)) * 1e-3
peak = 67e12 if prec == "fp32" else 989e12
print(f"   step {float(m.group(1)):.2f} ms, {flops / t / 1e12:.1f} model TFLOP/s, MFU {100 * flops / t / peak:.2f}% of "
      f"{prec} {peak / 1e12:.0f} TF")
sys.exit(0 if ok else 1)
PY
else
  fail=1
fi
if [ $c = $p ]; then # the step's kernel profile (3 steps: the mean of the last 2) as a galvc --profile file
  if "$d/program" --batches "$DIR/batches" --steps 3 --profile-out "$d/kernels.json" >"$d/prof.txt" 2>&1; then
    grep 'wrote the kernel profile' "$d/prof.txt" | sed 's/^/   /'
    python3 "$SRC/bench/layer_profile.py" -o "$DIR/gpt2s_train_${p}_profile.json" --point "$d/kernels.json,$TB" --layers 12 \
      --hidden 768 --seq $SEQ --vocab 50257 --source "bench/gpu_check.sh: GPT-2 small $p training step on $(hostname)" || fail=1
  else
    tail -3 "$d/prof.txt"; echo "   --profile-out FAILED"; fail=1
  fi
fi
done
# bf16 training against its definition: the 4-layer GPT-2's 3 bf16 steps vs the CPU emulation of the same storage
# plan (galv-eval --precision bf16) within 2e-3. The GPU and the evaluator differ only in fp32 summation order, but
# a bf16 rounding lands one ulp (2^-8) apart wherever the fp32 values before it differ across a rounding boundary,
# every value computed from it then differs by far more than summation order, and AdamW moves an element whose
# gradient is within that noise of zero by lr one way or the other: two correct executions end up as far apart as
# two bf16 roundings of the step, each within 1e-3 of fp32 (tests/train_bf16.sh's bound; measured here: the
# evaluator 9.8e-4, program-emu 8.0e-4), so within 2e-3 of each other (program-emu vs the evaluator measured 3.2e-5,
# 1.8e-4, 4.6e-4). The loss drops ~0.3 per step: a wrong gradient or update cannot hide under 2e-3; bf16 storage
# against fp32 storage (9.8e-4 apart) is not told apart by losses at this size (all three gaps printed).
d=$DIR/gpt2k_bf16
echo "== bf16 training (4-layer GPT-2, hidden 128, vocab 4096, batch 2 x seq $SEQ, 3 steps) vs its CPU emulation"
if "$d/program" --batches "$DIR/batches_k" --steps 3 | tee "$d/run.txt"; then
  python3 - "$d/run.txt" "$DIR/ref/k_bf16.txt" "$DIR/ref/k_fp32.txt" <<'PY' || fail=1
import re, sys
got, emu, f32 = ([float(x) for x in re.findall(r"^step \d+ loss (\S+)", open(p).read(), re.M)] for p in sys.argv[1:4])
ok = len(got) == 3 and len(emu) == 3 and all(abs(g - e) <= 2e-3 for g, e in zip(got, emu))
print("   GPU bf16:", got, "\n   CPU emulation:", emu, "\n   fp32:", f32)
print("   max |GPU - emulation| %.3g (<= 2e-3), max |emulation - fp32| %.3g, max |GPU - fp32| %.3g" %
      (max(abs(g - e) for g, e in zip(got, emu)), max(abs(e - f) for e, f in zip(emu, f32)),
       max(abs(g - f) for g, f in zip(got, f32))), "ok" if ok else "MISMATCH")
sys.exit(0 if ok else 1)
PY
else
  fail=1
fi
# the 2-rank plan through the host-staged backend: both ranks on this one GPU
d=$DIR/gpt2t_2r
echo "== 2-rank GPT-2 (tp, host-staged backend, mpirun -np 2 on one GPU), batch 1, seq $SEQ"
if [ $HAVE_MPI = 1 ]; then
  if timeout 120 env OMPI_MCA_btl_vader_single_copy_mechanism=none GALV_COMM_TIMEOUT=60 MPIRUN="$MPIRUN" "$d/launch" \
       --input input_ids="$DIR/ids_t.npy" --warmup 2 --iters 10 --comm-stats -o "$d/res"; then
    echo -n "   vs the CPU target's 2-rank program: "
    "$B/npy_compare" "$d/res/logits.npy" "$DIR/ref2/logits.npy" 1e-4 1e-4 || fail=1
  else
    echo "   FAILED"; fail=1
  fi
else
  echo "   SKIP: mpicc/mpirun not found on this machine"
fi
# 2-rank dp training through the host-staged backend: losses of 2 steps vs the CPU target's 2-rank program
# (rtol 1e-3), the parameters written by -o (gathered on the device by rank 0) vs the CPU's, and a
# checkpoint round trip (step 0 with --save-checkpoint, then step 1 from --load-checkpoint)
d=$DIR/gpt2t_dp
echo "== 2-rank GPT-2 training (dp, AdamW, host-staged backend on one GPU), batch 2, seq $SEQ"
if [ $HAVE_MPI = 1 ]; then
  L="timeout 120 env OMPI_MCA_btl_vader_single_copy_mechanism=none GALV_COMM_TIMEOUT=60 $d/launch --batches $DIR/batches_t"
  rm -rf "$d/res_w" "$d/ck"
  if $L --steps 2 -o "$d/res_w" | tee "$d/run.txt" && $L --steps 1 --save-checkpoint "$d/ck" >/dev/null &&
     $L --steps 1 --load-checkpoint "$d/ck" | tee "$d/run_ck.txt"; then
    python3 - "$d/run.txt" "$d/run_ck.txt" "$DIR/ref2/train_loss.txt" "$d/res_w" "$DIR/ref2/train_w" <<'PY' || fail=1
import glob, os, re, sys
import numpy as np
run, runck, ref = (open(p).read() for p in sys.argv[1:4])
pat = r"^step (\d+) loss (\S+)"
got = {int(k): float(v) for k, v in re.findall(pat, run, re.M)}
ck = {int(k): float(v) for k, v in re.findall(pat, runck, re.M)}
want = {int(k): float(v) for k, v in re.findall(pat, ref, re.M)}
close = lambda g, w: abs(g - w) <= 1e-3 * abs(w) + 1e-4
ok = len(want) == 2 and all(k in got and close(got[k], w) for k, w in want.items())
print("   losses vs the CPU target's 2 ranks:", [got.get(k) for k in sorted(want)], [want[k] for k in sorted(want)], "ok" if ok else "MISMATCH")
ok_ck = 1 in ck and close(ck[1], want[1])
print("   step 1 after --save-checkpoint / --load-checkpoint:", ck.get(1), "ok" if ok_ck else "MISMATCH")
# -o: every parameter written; AdamW moves an element by about lr (1e-3) per step whatever its gradient's
# size, so an element whose gradient is ~0 (sign within rounding) may differ by up to 2 lr per step: the
# bound is 2 * lr * steps = 4e-3; beyond 1e-5, at most 0.1% of the elements
files = sorted(glob.glob(os.path.join(sys.argv[5], "*.npy")))
ok_w = len(files) > 0
worst, far, total = 0.0, 0, 0
for f in files:
    g = os.path.join(sys.argv[4], os.path.basename(f))
    if not os.path.exists(g):
        print("   -o: missing", os.path.basename(g)); ok_w = False; continue
    a, b = np.load(g), np.load(f)
    if a.shape != b.shape:
        print("   -o: shape of", os.path.basename(g), a.shape, "!=", b.shape); ok_w = False; continue
    e = np.abs(a.astype(np.float64) - b)
    worst = max(worst, float(e.max()) if e.size else 0.0); far += int((e > 1e-5).sum()); total += e.size
ok_w = ok_w and worst <= 4e-3 and far <= 1e-3 * max(total, 1)
print(f"   -o parameters: {len(files)} files, {total} elements, max |diff| {worst:.3g}, {far} beyond 1e-5", "ok" if ok_w else "MISMATCH")
sys.exit(0 if ok and ok_ck and ok_w else 1)
PY
  else
    echo "   FAILED"; fail=1
  fi
else
  echo "   SKIP: mpicc/mpirun not found on this machine"
fi
# the 2-stage pipeline through the host-staged backend: both stages on this one GPU
d=$DIR/pp2
echo "== 2-stage pipeline, GPT-2 tiny training (GPipe, 2 microbatches, 2 AdamW steps; host-staged backend, mpirun MPMD on one GPU)"
if [ $HAVE_MPI = 1 ]; then
  rm -rf "$d/w"
  [ -f "$d/stage0/program_bwd.cu" ] || { echo "   stage 0 has no backward entry (program_bwd.cu)"; fail=1; }
  if timeout 120 env OMPI_MCA_btl_vader_single_copy_mechanism=none GALV_COMM_TIMEOUT=60 MPIRUN="$MPIRUN" "$d/launch" \
       --batches "$DIR/ppb" --steps 2 -o "$d/w" 2>&1 | tee "$d/run.txt"; then
    grep -q 'stage 0, rank 0\]: saved activations in flight' "$d/run.txt" || { echo "   no stage 0 stash line"; fail=1; }
    python3 - "$d/run.txt" "$DIR/ref/pp2_loss.txt" "$d/w" "$DIR/ref/pp2_w" <<'PY' || fail=1
import os, re, sys
import numpy as np
run, ref, w, wref = sys.argv[1:5]
got = [float(x) for x in re.findall(r"^step \d+ loss (\S+)", open(run).read(), re.M)]
want = [float(x) for x in re.findall(r"^step \d+ loss (\S+)", open(ref).read(), re.M)]
ok = len(want) == 2 and len(got) == 2 and all(abs(g - v) <= 1e-3 * abs(v) for g, v in zip(got, want))
names = sorted(os.listdir(wref))
have = [n for n in names if os.path.exists(os.path.join(w, n))]
# the 2-rank check's weight bound (fp32 on both sides, another summation order): AdamW moves an element
# by about lr (1e-3) per step whatever its gradient's size, so one whose gradient is ~0 may differ by up
# to 2 lr per step: at most 2 * lr * steps = 4e-3, and beyond 1e-5 at most 0.1 % of the elements
diff, far, total, ok_w = 0.0, 0, 0, len(names) > 0 and len(have) == len(names)
for n in have:
    a, b = np.load(os.path.join(wref, n)), np.load(os.path.join(w, n))
    if a.shape != b.shape:
        print("   pipeline -o: shape of", n, a.shape, "!=", b.shape); ok_w = False; continue
    e = np.abs(a.astype(np.float64) - b)
    diff = max(diff, float(e.max()) if e.size else 0.0); far += int((e > 1e-5).sum()); total += e.size
ok_w = ok_w and diff <= 4e-3 and far <= 1e-3 * max(total, 1)
print(f"   losses vs the CPU target's pipeline: {got} {want} {'ok' if ok else 'MISMATCH'}; "
      f"{len(have)}/{len(names)} weights written, max abs diff {diff:.3g}, {far} of {total} beyond 1e-5 "
      f"{'ok' if ok_w else 'MISMATCH'}")
sys.exit(0 if ok and ok_w else 1)
PY
  else
    echo "   FAILED"; fail=1
  fi
else
  echo "   SKIP: mpicc/mpirun not found on this machine"
fi
# interleaved 1F1B, 4 stage ranks on this one GPU (host-staged): losses vs the CPU target's within rtol 1e-3, and
# the send copies released as their receivers answer (runtime/pipe.c il_release: cudaFree mid-step)
d=$DIR/il4
echo "== interleaved 1F1B, GPT-2 tiny training (2 device groups x 2 chunks, 4 microbatches, 2 AdamW steps; host-staged, one GPU)"
if [ $HAVE_MPI = 1 ] && [ -x "$d/stage0/program" ]; then
  if timeout 120 env OMPI_MCA_btl_vader_single_copy_mechanism=none GALV_COMM_TIMEOUT=60 MPIRUN="$MPIRUN" "$d/launch" \
       --batches "$DIR/ppb" --steps 2 2>&1 | tee "$d/run.txt"; then
    python3 - "$d/run.txt" "$DIR/ref/il_loss.txt" <<'PY' || fail=1
import re, sys
run = open(sys.argv[1]).read()
got = [float(x) for x in re.findall(r"^step \d+ loss (\S+)", run, re.M)]
want = [float(x) for x in re.findall(r"^step \d+ loss (\S+)", open(sys.argv[2]).read(), re.M)]
rel = sum(int(a) for a in re.findall(r"send copies released once their receivers had them (\d+)", run))
ok = len(want) == 2 and len(got) == 2 and all(abs(g - v) <= 1e-3 * abs(v) for g, v in zip(got, want)) and rel > 0
print(f"   losses vs the CPU target's interleaved pipeline: {got} {want}; {rel} send copies released as received "
      f"{'ok' if ok else 'MISMATCH'}")
sys.exit(0 if ok else 1)
PY
  else
    echo "   FAILED"; fail=1
  fi
else
  echo "   SKIP: no mpicc/mpirun, or the stages did not build"
fi
# GPT-2 small training at batch 8 x seq 1024: measured vs predicted (h200 preset), timing only
for v in fp32 bf16 fa_fp32 fa_bf16; do
  d=$DIR/big_$v
  [ -x "$d/program" ] || continue
  echo "== GPT-2 small training step, batch 8 x seq 1024 ($v): measured vs galvc's prediction (--cluster h200)"
  "$d/program" --gen-weights 1 >/dev/null
  if "$d/program" --batches "$DIR/batches_big" --steps 5 >"$d/run.txt" 2>&1; then
    grep -E '^step|training step' "$d/run.txt"
    python3 - "$d/run.txt" "$d/predicted.txt" "${v#fa_}" <<'PY' || true
import re, sys
run, pred, prec = open(sys.argv[1]).read(), open(sys.argv[2]).read(), sys.argv[3]
m = re.search(r"mean ([\d.]+) ms, min ([\d.]+) ms.* (\d+) parameters", run)
p = re.search(r"predicted step: (\d+) ns", pred)
mem = re.search(r"total (\d+) of", pred)
arena = re.search(r"arena (\d+) bytes, state (\d+) bytes", run)
P, T, L, S, H = int(m.group(3)), 8 * 1024, 12, 1024, 768
flops = 6 * P * T + 12 * L * S * H * T
t = float(m.group(1))
peak = 67e12 if prec == "fp32" else 989e12
print(f"   measured {t:.2f} ms (min {float(m.group(2)):.2f}), predicted {int(p.group(1)) / 1e6:.2f} ms: "
      f"predicted / measured {int(p.group(1)) / 1e6 / t:.3f}; {flops / t / 1e9:.1f} model TFLOP/s, MFU "
      f"{100 * flops / (t * 1e-3) / peak:.1f}% of {prec} {peak / 1e12:.0f} TF")
if arena and mem:
    print(f"   device buffers (arena + state) {int(arena.group(1)) + int(arena.group(2))} bytes; predicted memory per device "
          f"{mem.group(1)} bytes")
PY
  else
    tail -3 "$d/run.txt"; echo "   FAILED"; fail=1
  fi
  rm -f "$d/weights.bin"
done
echo "== gpu_check: $(($(date +%s) - t0)) s, $([ $fail = 0 ] && echo PASS || echo FAIL)"
exit $fail
