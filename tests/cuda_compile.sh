#!/usr/bin/env bash
# CUDA target, compile and link only (CI has no GPU; nothing here runs a
# kernel): the CUDA runtime is compiled once into static libraries
# (libgalv_cuda.a with main, libgalv_cuda_kernels.a without), then
#   - every kernel-lab test (tests/cuda/test_*.cu) links against it,
#   - both communicator backends (NCCL over MPI bootstrap; host-staged over
#     the MPI backend) link into tests/cuda/comm_check.cu,
#   - every example family (helper-built gpt2 / bert / llama / vit / t5,
#     inference) goes through galvc --target cuda (gpt2 and llama also
#     --precision bf16 and fp16) and its program.cu links against the library,
#   - the index ops' graphs (ScatterND, GatherND, GatherElements,
#     ScatterElements, integer Mod, broadcast MatMul) and a training step
#     through them (tests/ops/make_graphs.py) compile and link,
#   - every example family's training step (--train, fp32: the training
#     kernels of kernels_grad.cu, runtime/train.c's driver with the device
#     step of train_cuda.cu) compiles and links too; gpt2, llama and vit also
#     as bf16 mixed-precision training (--precision bf16: fp32 state and
#     parameter gradients, bf16 activations), gpt2 and llama as fp16 training
#     (f16 activations, dynamic loss scaling),
#   - 2-rank GPT-2 (--gpus 2: tp inference, dp and tp training, both also
#     bf16; collectives in program.cu) links with the NCCL and the
#     host-staged backend,
#   - a 2-stage pipeline of GPT-2 tiny (--pipeline-stages 2: inference,
#     GPipe, 1F1B and ZB-H1 training) links per stage with both backends, and
#     with stages of 2 and 1 devices (--stage-devices 2,1 --strategy tp) with NCCL,
#     and pp=2 x dp=2 (--gpus 4 --strategy dp: stage 0's programs leave the dp
#     gradients unreduced, runtime/pipe.c all-reduces the step's sums once) with NCCL,
#     and interleaved 1F1B (--virtual-stages 2: 4 stages on 2 device groups,
#     a group's ranks sharing a GPU) with the host-staged backend, and
#     fp16 1F1B training stages (--precision fp16: the pipeline runtime's
#     loss scaling) with NCCL;
#     the training stages' earlier stage has both entries (program.cu and the
#     backward entry program_bwd.cu with its per-microbatch stash), the last
#     stage one (ZB-H1: the last stage's weight-gradient entry program_wgt.cu
#     besides); no nvcc warning in the stages' builds. The same GPipe, 1F1B and
#     ZB-H1 stage directories' `make cpu` builds (program.c + program_bwd.c: the
#     entries' shared CPU/CUDA path) run 2 AdamW steps (GALV_PROGRAM=program-cpu
#     launch, GALV_COMM_SYNC=1, timeout) with the single-device CPU training
#     program's losses and weights (rtol 1e-4, atol 1e-5, as tests/pipeline_train.sh),
# all with nvcc for sm_90 and -Werror on the host side. The generated program
# run without a GPU must say so in one line (the pipeline: one line per rank).
# Usage: cuda_compile.sh BUILD_DIR
set -euo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$SRC/tests/lib/require.sh"
require_cmd "the CUDA toolkit" nvcc
# without MPI the communicator, 2-rank and pipeline parts are skipped (exit 77 at the end)
MPI=0
have_cmd mpicc mpirun && MPI=1
T=${GALV_CUDA_KEEP:-$(mktemp -d)}
[ -n "${GALV_CUDA_KEEP:-}" ] || trap 'rm -rf "$T"' EXIT
mkdir -p "$T/lib"
ARCH="-gencode arch=compute_90,code=sm_90"
NVF=(-O3 -std=c++17 $ARCH -Xcompiler -Wall,-Wextra,-Werror,-Wno-unused-parameter,-Wno-unused-variable)
RT=$SRC/runtime
t0=$(date +%s)
fail=0

# ---- the runtime, once (two compiles at a time)
nvcc "${NVF[@]}" -c -o "$T/lib/kernels.o" "$RT/cuda/kernels.cu" &
nvcc "${NVF[@]}" -c -o "$T/lib/context.o" "$RT/cuda/context.cu" &
wait
nvcc "${NVF[@]}" -c -o "$T/lib/kernels_grad.o" "$RT/cuda/kernels_grad.cu" &
nvcc "${NVF[@]}" -c -o "$T/lib/train_cuda.o" "$RT/cuda/train_cuda.cu" &
wait
nvcc "${NVF[@]}" -c -o "$T/lib/main_cuda.o" "$RT/cuda/main_cuda.cu" &
( for c in io npy file train spmd prof comm_single; do cc -O2 -std=gnu11 -Wall -Wextra -Werror -c -o "$T/lib/$c.o" "$RT/$c.c" || exit 1; done ) &
wait
KOBJ=("$T/lib/kernels.o" "$T/lib/kernels_grad.o" "$T/lib/context.o" "$T/lib/io.o" "$T/lib/npy.o" "$T/lib/file.o")
ar rcs "$T/lib/libgalv_cuda_kernels.a" "${KOBJ[@]}"
ar rcs "$T/lib/libgalv_cuda.a" "$T/lib/main_cuda.o" "$T/lib/train_cuda.o" "${KOBJ[@]}" "$T/lib/train.o" "$T/lib/spmd.o" "$T/lib/prof.o" "$T/lib/comm_single.o"
echo "✓ runtime library ($(($(date +%s) - t0)) s)"

# ---- kernel lab
for t in "$SRC"/tests/cuda/test_*.cu; do
  n=$(basename "$t" .cu)
  if nvcc "${NVF[@]}" -o "$T/$n" "$t" "$T/lib/libgalv_cuda_kernels.a" -lcublas -lcublasLt 2>"$T/$n.log"; then
    echo "✓ $n"
  else
    echo "✗ $n"; cat "$T/$n.log"; fail=1
  fi
done

# ---- communicator backends (MPI bootstraps NCCL; the staged backend reuses comm_mpi.c renamed)
if [ $MPI = 1 ]; then
  MPI_INC=$(mpicc --showme:incdirs | sed 's/^/-I/; s/ / -I/g')
  MPI_LIBS=$(mpicc --showme:link)
  RENAME="-Dgalv_all_reduce=galv_mpi_all_reduce -Dgalv_all_gather=galv_mpi_all_gather -Dgalv_reduce_scatter=galv_mpi_reduce_scatter -Dgalv_all_to_all=galv_mpi_all_to_all -Dgalv_send=galv_mpi_send -Dgalv_recv=galv_mpi_recv -Dgalv_queue_sync=galv_mpi_queue_sync -Dgalv_queue_sync_keep=galv_mpi_queue_sync_keep -Dgalv_queue_sync_buf=galv_mpi_queue_sync_buf -Dgalv_group_start=galv_mpi_group_start -Dgalv_group_end=galv_mpi_group_end"
  if nvcc "${NVF[@]}" $MPI_INC -o "$T/comm_check_nccl" "$SRC/tests/cuda/comm_check.cu" "$RT/cuda/comm_nccl.cu" \
       "$T/lib/libgalv_cuda_kernels.a" -lnccl -lcublas -lcublasLt -Xlinker "$(echo $MPI_LIBS | sed 's/ /,/g')" 2>"$T/nccl.log"; then
    echo "✓ NCCL backend (comm_nccl.cu) links"
  else
    echo "✗ NCCL backend"; cat "$T/nccl.log"; fail=1
  fi
  if mpicc -O2 -std=gnu11 -Wall -Wextra -Werror $RENAME -c -o "$T/comm_mpi_staged.o" "$RT/comm_mpi.c" 2>"$T/staged.log" &&
     nvcc "${NVF[@]}" $MPI_INC -o "$T/comm_check_staged" "$SRC/tests/cuda/comm_check.cu" "$RT/cuda/comm_staged.cu" \
       "$T/comm_mpi_staged.o" "$T/lib/libgalv_cuda_kernels.a" -lcublas -lcublasLt -lopenblas -Xlinker "$(echo $MPI_LIBS | sed 's/ /,/g')" 2>>"$T/staged.log"; then
    echo "✓ host-staged backend (comm_staged.cu + comm_mpi.c) links"
  else
    echo "✗ host-staged backend"; cat "$T/staged.log"; fail=1
  fi
fi

# ---- every example model's CUDA program
for fam in gpt2 bert llama vit t5; do
  python3 "$SRC/examples/make_model.py" "$fam" -o "$T/$fam.onnx" --no-verify >/dev/null
  for prec in fp32 bf16 fp16; do
    [ "$prec" != fp32 ] && [ "$fam" != gpt2 ] && [ "$fam" != llama ] && continue
    d=$T/${fam}_$prec
    if "$BUILD/galvc" "$T/$fam.onnx" --batch 2 --seq 16 --target cuda --precision $prec --no-build -q -o "$d/" &&
       make -s -C "$d" GALV_CU_LIB="$T/lib/libgalv_cuda.a" NVFLAGS="${NVF[*]}" >"$d.log" 2>&1; then
      echo "✓ $fam ($prec): $(grep -c '^  GALV_CU_PROF' "$d/program.cu") kernel calls, $(grep -c 'galv_attention<' "$d/program.cu") fused attention"
    else
      echo "✗ $fam ($prec)"; cat "$d.log" 2>/dev/null; fail=1
    fi
  done
done

# ---- the vision ops' kernels (pool, pool_grad, conv_grad_input as ConvTranspose): a small CNN, inference and training
python3 -c "import sys; sys.path.insert(0, '$SRC/tests/vision'); import onnx, make_op_models as m; onnx.save(m.train_model(), '$T/cnn.onnx')"
for extra in "" "--train"; do
  d=$T/cnn$(echo "$extra" | tr -d ' -')
  if "$BUILD/galvc" "$T/cnn.onnx" $extra --target cuda --no-build -q -o "$d/" &&
     make -s -C "$d" GALV_CU_LIB="$T/lib/libgalv_cuda.a" NVFLAGS="${NVF[*]}" >"$d.log" 2>&1 &&
     grep -q 'galv_cu_pool(' "$d/program.cu" && { [ -z "$extra" ] || grep -q 'galv_cu_pool_grad(' "$d/program.cu"; }; then
    echo "✓ cnn ${extra:-inference}: $(grep -c '^  GALV_CU_PROF' "$d/program.cu") kernel calls (pool, conv_grad_input${extra:+, pool_grad})"
  else
    echo "✗ cnn ${extra:-inference}"; cat "$d.log" 2>/dev/null; fail=1
  fi
done

# ---- 2-rank programs (collectives in program.cu): GPT-2 tp inference, dp and tp
# training, linked with the NCCL backend (default) and the host-staged one (make COMM=staged)
if [ $MPI = 1 ]; then
  for cfg in "tp:" "dp:--train" "tp:--train" "dp:--train --precision bf16" "tp:--train --precision bf16"; do
    s=${cfg%%:*} extra=${cfg#*:}
    d=$T/gpt2_2r_$s$(echo "$extra" | tr -d ' -')
    if ! "$BUILD/galvc" "$T/gpt2.onnx" --batch 2 --seq 16 --gpus 2 --strategy $s $extra --target cuda --no-build -q -o "$d/" >"$d.log" 2>&1; then
      echo "✗ gpt2 2-rank $s${extra:+ (${extra#--})}: galvc"; cat "$d.log"; fail=1; continue
    fi
    ncoll=$(grep -c '^  galv_\(all_reduce\|all_gather\|reduce_scatter\|all_to_all\)(' "$d/program.cu")
    [ "$ncoll" -gt 0 ] || { echo "✗ gpt2 2-rank $s: no collective in program.cu"; fail=1; }
    if [ "$s" = dp ] && grep -q 'GALV_BF16, GALV_RED' "$d/program.cu"; then
      echo "✗ gpt2 2-rank dp ($extra): a bf16 reduction (dp's gradient sums are fp32)"; fail=1
    fi
    for comm in nccl staged; do
      rm -f "$d/program"
      if make -s -C "$d" COMM=$comm GALV_CU_LIB="$T/lib/libgalv_cuda.a" NVFLAGS="${NVF[*]}" >"$d.$comm.log" 2>&1 &&
         [ -x "$d/program" ]; then
        echo "✓ gpt2 2-rank $s${extra:+ (${extra#--})} ($comm): $ncoll collectives, $(grep -c 'galv_cu_queue_join' "$d/program.cu") stream joins"
      else
        echo "✗ gpt2 2-rank $s${extra:+ (${extra#--})} ($comm)"; cat "$d.$comm.log"; fail=1
      fi
    done
  done
fi

# ---- pipeline stages (galvc --pipeline-stages 2 --target cuda): GPT-2 tiny inference and training
# (GPipe, 1F1B; stages of 2 and 1 devices); every stage's program.cu + runtime/cuda/pipe_cuda.cu (device hooks) + runtime/pipe.c
# (the schedule shared with the CPU target) links with the NCCL and the host-staged backend;
# without a GPU the launched pipeline stops with the one-line error on every rank
if [ $MPI = 1 ]; then
  python3 "$SRC/examples/make_model.py" gpt2 -o "$T/gpt2pp.onnx" --layers 2 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null
  # NAME:BACKENDS:OPTIONS; tp21: stages of 2 and 1 devices (collectives inside stage 0, cross-mesh tiles); dp22: 2 x 2
  # devices, the dp gradients reduced once per step
  for cfg in "inference:nccl staged:" "gpipe:nccl staged:--train --schedule gpipe" "1f1b:nccl staged:--train --schedule 1f1b" \
             "zb:nccl staged:--train --schedule zb-h1" "tp21:nccl:--train --schedule 1f1b --stage-devices 2,1 --strategy tp" \
             "dp22:nccl:--train --schedule 1f1b --gpus 4 --strategy dp" \
             "il:staged:--train --schedule interleaved --virtual-stages 2" \
             "fp16:nccl:--train --schedule 1f1b --precision fp16"; do
    IFS=: read -r n comms extra <<<"$cfg"
    d=$T/pp2_$n
    # shellcheck disable=SC2086
    if ! "$BUILD/galvc" "$T/gpt2pp.onnx" --batch 8 --seq 8 --pipeline-stages 2 --microbatches 2 $extra --target cuda \
         --no-build -q -o "$d/" >"$d.log" 2>&1; then
      echo "✗ pp=2 $n: galvc"; cat "$d.log"; fail=1; continue
    fi
    # training: the earlier stage has the backward entry (the stash), the last stage one program; inference none
    # (il: interleaved, 2 device groups x 2 chunks = 4 stages; the ranks of a group share a GPU: COMM=staged)
    want=0; [ "$n" != inference ] && want=1
    ns=2; [ "$n" = il ] && ns=4
    if [ "$([ -f "$d/stage0/program_bwd.cu" ] && [ -f "$d/stage0/program_bwd.c" ] && echo 1 || echo 0)" != $want ] ||
       [ -f "$d/stage$((ns - 1))/program_bwd.cu" ] || [ ! -d "$d/stage$((ns - 1))" ] || [ -d "$d/stage$ns" ]; then
      echo "✗ pp=2 $n: program_bwd.cu in stage0 expected $want, stage1 0: $(ls "$d"/stage*/program_bwd.cu 2>/dev/null)"; fail=1
    fi
    # ZB-H1: the last stage's weight-gradient entry (stage 0 sends no gradient back: its backward stays whole)
    wz=0; [ "$n" = zb ] && wz=1
    if [ "$([ -f "$d/stage1/program_wgt.cu" ] && [ -f "$d/stage1/program_wgt.c" ] && echo 1 || echo 0)" != $wz ] ||
       [ -f "$d/stage0/program_wgt.cu" ]; then
      echo "✗ pp=2 $n: program_wgt.cu in stage1 expected $wz, stage0 0: $(ls "$d"/stage*/program_wgt.cu 2>/dev/null)"; fail=1
    fi
    for comm in $comms; do
      pids=()
      for ((s = 0; s < ns; s++)); do # pipe.c and pipe_stage.c with -Werror too
        make -s -C "$d/stage$s" COMM=$comm CC="cc -Wall -Wextra -Werror" GALV_CU_LIB="$T/lib/libgalv_cuda.a" \
          NVFLAGS="${NVF[*]}" >"$d.$s.$comm.log" 2>&1 &
        pids+=($!)
      done
      okb=1
      for p in "${pids[@]}"; do wait "$p" || okb=0; done
      if [ $okb = 1 ] && ! grep -q -i 'warning' "$d".*."$comm".log; then
        nb=""; [ -f "$d/stage0/program_bwd.cu" ] && nb=" (stage 0's backward entry: $(grep -c '^  GALV_CU_PROF' "$d/stage0/program_bwd.cu") kernel calls)"
        echo "✓ pp=2 $n ($comm): $ns stages link, $(grep -c '^  GALV_CU_PROF' "$d/stage0/program.cu") + $(grep -c '^  GALV_CU_PROF' "$d/stage1/program.cu") kernel calls$nb"
      else
        echo "✗ pp=2 $n ($comm)"; cat "$d".*."$comm".log; fail=1
      fi
    done
  done
  # the GPipe and 1F1B stage directories built for the CPU (make cpu): the two entries' runtime path
  # (stash alloc / copy through the galv_pipe_device hooks, run_entry) against the single-device program
  if [ $MPI = 1 ]; then
    python3 -c "
import numpy as np, os
r = np.random.RandomState(0)
os.makedirs('$T/ppb')
np.save('$T/ppb/input_ids.npy', r.randint(0, 64, (2, 8, 8)).astype(np.int64))
np.save('$T/ppb/labels.npy', r.randint(0, 64, (2, 8, 8)).astype(np.int64))"
    RUNAS=(); [ "$(id -u)" = 0 ] && RUNAS=(--allow-run-as-root)
    if ! timeout 300 "$BUILD/galvc" "$T/gpt2pp.onnx" --input-shape input_ids=8x8 --train --target cpu -q -o "$T/pp_one/" \
         >"$T/pp_one.log" 2>&1 || ! timeout 120 "$T/pp_one/program" --batches "$T/ppb" --steps 2 -o "$T/pp_one.w" >"$T/pp_one.txt" 2>&1; then
      echo "✗ pp=2 single-device CPU reference"; cat "$T/pp_one.log" "$T/pp_one.txt"; fail=1
    fi
    for n in gpipe 1f1b zb; do
      d=$T/pp2_$n
      [ -f "$T/pp_one.txt" ] && [ -f "$d/stage0/program_bwd.c" ] || continue
      if ! make -s -C "$d/stage0" cpu >"$d.cpu.log" 2>&1 || ! make -s -C "$d/stage1" cpu >>"$d.cpu.log" 2>&1 ||
         ! GALV_PROGRAM=program-cpu GALV_COMM_SYNC=1 GALV_COMM_TIMEOUT=30 OPENBLAS_NUM_THREADS=1 \
           OMPI_MCA_btl_vader_single_copy_mechanism=none \
           MPIRUN="mpirun ${RUNAS[*]} --oversubscribe -x GALV_COMM_SYNC -x GALV_COMM_TIMEOUT -x OPENBLAS_NUM_THREADS" \
           timeout 120 "$d/launch" --batches "$T/ppb" --steps 2 -o "$d.w" >"$d.cpu.txt" 2>&1; then
        echo "✗ pp=2 $n (make cpu): build or run"; cat "$d.cpu.log" "$d.cpu.txt"; fail=1; continue
      fi
      if msg=$(python3 - "$T/pp_one.txt" "$d.cpu.txt" "$T/pp_one.w" "$d.w" 2>&1 <<'PY'
import sys, os, re, numpy as np
la, lb, wa, wb = sys.argv[1:5]
def losses(p): return [float(x) for x in re.findall(r"^step \d+ loss (\S+)", open(p).read(), re.M)]
a, b = losses(la), losses(lb)
if len(a) != 2 or len(b) != 2 or not np.allclose(b, a, rtol=1e-4, atol=0): sys.exit(f"losses {b} != single device {a}")
peak = re.search(r"\[stage 0, rank \d+\]: saved activations in flight: peak \d+ bytes \((\d+) microbatches x (\d+) bytes", open(lb).read())
if not peak: sys.exit("no stage 0 saved-activations line")
worst, n = 0.0, 0
for f in sorted(os.listdir(wa)):
    if not os.path.exists(os.path.join(wb, f)): sys.exit(f"no final weight {f}")
    x, y = np.load(os.path.join(wa, f)), np.load(os.path.join(wb, f))
    if x.shape != y.shape or not np.allclose(y, x, rtol=1e-4, atol=1e-5):
        sys.exit(f"{f}: max abs diff {np.abs(x - y).max() if x.shape == y.shape else y.shape}")
    worst, n = max(worst, float(np.abs(x - y).max())), n + 1
print(f"losses {b[0]:.8f} {b[1]:.8f} == single device, {n} weights max abs diff {worst:.2g}, "
      f"stage 0 stash {peak.group(2)} bytes x {peak.group(1)} microbatches")
PY
); then
        echo "✓ pp=2 $n (make cpu, both entries): $msg"
      else
        echo "✗ pp=2 $n (make cpu): $msg"; fail=1
      fi
    done
  fi
  if ! nvidia-smi >/dev/null 2>&1; then
    python3 -c "import numpy as np; np.save('$T/ids_pp.npy', np.zeros((8,8), np.int64))"
    RUNAS=(); [ "$(id -u)" = 0 ] && RUNAS=(--allow-run-as-root)
    if out=$(MPIRUN="mpirun ${RUNAS[*]} --oversubscribe" OMPI_MCA_btl_vader_single_copy_mechanism=none timeout 60 \
             "$T/pp2_inference/launch" --input input_ids="$T/ids_pp.npy" 2>&1); then
      echo "✗ the pipeline ran without a GPU?"; fail=1
    elif [ "$(echo "$out" | grep -c 'error:')" = 2 ] && [ "$(echo "$out" | grep 'error:' | grep -c 'no CUDA device found.*--target cpu')" = 2 ]; then
      echo "✓ pp=2 no-GPU message, one line per rank: $(echo "$out" | grep -m1 'error:')"
    else
      echo "✗ pp=2 no-GPU message: $out"; fail=1
    fi
  fi
fi

# ---- every example model's training step (galvc --train: cross_entropy, AdamW; fp32)
for fam in gpt2 llama bert vit t5; do
  d=$T/${fam}_train
  if "$BUILD/galvc" "$T/$fam.onnx" --batch 2 --seq 16 --train --target cuda --no-build -q -o "$d/" &&
     make -s -C "$d" GALV_CU_LIB="$T/lib/libgalv_cuda.a" NVFLAGS="${NVF[*]}" >"$d.log" 2>&1; then
    echo "✓ $fam (training): $(grep -c '^  GALV_CU_PROF' "$d/program.cu") kernel calls, $(grep -c 'galv_cu_gather_grad\|galv_cu_scatter_strided\|galv_cu_cross_entropy\|galv_cu_conv_grad' "$d/program.cu") training kernels, $(grep -c '^  {' <(sed -n '/galv_state\[\]/,/^};/p' "$d/program.cu")) state tensors"
  else
    echo "✗ $fam (training)"; cat "$d.log" 2>/dev/null; fail=1
  fi
done
# ---- the index ops and broadcast MatMul (tests/ops/make_graphs.py): inference, and the training step through them
python3 "$SRC/tests/ops/make_graphs.py" "$T/ops" >/dev/null
for g in scatternd_mask scatternd_add gathernd gatherelements scatterelements_add mod_int matmul_mqa train_nd; do
  d=$T/ops_$g
  train=()
  [ "$g" = train_nd ] && train=(--train)
  if "$BUILD/galvc" "$T/ops/$g.onnx" "${train[@]}" --target cuda --no-build -q -o "$d/" &&
     make -s -C "$d" GALV_CU_LIB="$T/lib/libgalv_cuda.a" NVFLAGS="${NVF[*]}" >"$d.log" 2>&1; then
    echo "✓ $g${train:+ (training)}: $(grep -o 'galv_cu_\(gather\|scatter\)_\(nd\|elements\)' "$d/program.cu" | sort -u | paste -sd' ')"
  else
    echo "✗ $g${train:+ (training)}"; cat "$d.log" 2>/dev/null; fail=1
  fi
done
# ---- 16-bit mixed-precision training (fp32 state and parameter gradients, bf16 / f16 activations and GEMM
# inputs; fp16 with dynamic loss scaling)
for cfg in gpt2:bf16 llama:bf16 vit:bf16 gpt2:fp16 llama:fp16; do
  fam=${cfg%:*} prec=${cfg#*:}
  DT=GALV_BF16
  [ "$prec" = fp16 ] && DT=GALV_F16
  d=$T/${fam}_train_$prec
  if "$BUILD/galvc" "$T/$fam.onnx" --batch 2 --seq 16 --train --precision $prec --target cuda --no-build -q -o "$d/" &&
     make -s -C "$d" GALV_CU_LIB="$T/lib/libgalv_cuda.a" NVFLAGS="${NVF[*]}" >"$d.log" 2>&1; then
    echo "✓ $fam ($prec training): $(grep -c '^  GALV_CU_PROF' "$d/program.cu") kernel calls, $(grep -c 'galv_cu_gemm_to\|galv_cu_reduce_to' "$d/program.cu") $prec -> fp32 gradient kernels, $(grep -c '^  galv_cu_\(from\|to\)_f32' "$d/program.cu") storage conversions"
  else
    echo "✗ $fam ($prec training)"; cat "$d.log" 2>/dev/null; fail=1
  fi
  # the storage plan: the update kernels (those writing the state buffer) read fp32 values only, weight
  # gradients are 16-bit x 16-bit -> fp32 GEMMs, and no conversion or GEMM names the other 16-bit type
  upd=$(grep 'GALV_LAUNCH(' "$d/program.cu" | grep '(float \*)S(' || true)
  if [ -z "$upd" ] || echo "$upd" | grep -q '(const gf \*)'; then
    echo "✗ $fam ($prec training): a state update reads a 16-bit value (or none found)"; fail=1
  fi
  grep -q "galv_cu_gemm_to($DT, GALV_F32" "$d/program.cu" || { echo "✗ $fam ($prec training): no $prec -> fp32 weight-gradient GEMM"; fail=1; }
  if [ "$prec" = fp16 ] && grep -q 'GALV_BF16\|__nv_bfloat16' "$d/program.cu"; then
    echo "✗ $fam (fp16 training): program.cu names bf16"; fail=1
  fi
done

# ---- no GPU here: the program says so in one line, exit 1
if ! nvidia-smi >/dev/null 2>&1; then
  python3 -c "import numpy as np; np.save('$T/ids.npy', np.zeros((2,16), np.int64))"
  if out=$("$T/gpt2_fp32/program" --input input_ids="$T/ids.npy" 2>&1); then
    echo "✗ program ran without a GPU?"; fail=1
  elif [ "$(echo "$out" | wc -l)" = 1 ] && echo "$out" | grep -q "no CUDA device found.*--target cpu"; then
    echo "✓ no-GPU message: $out"
  else
    echo "✗ no-GPU message: $out"; fail=1
  fi
fi
echo "cuda_compile: $(($(date +%s) - t0)) s"
galv_exit $fail
