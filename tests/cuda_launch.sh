#!/usr/bin/env bash
# Every CUDA kernel launch goes through GALV_LAUNCH (runtime/cuda/galv_cuda.h),
# so that the same sources can build with a host compiler that defines it
# otherwise: no runtime/cuda source and no generated .cu (program.cu,
# program_bwd.cu, the runtime/cuda copy galvc writes) contains a literal
# `<<<` except the macro's definition, and the generated programs do launch
# their kernels through it. Programs (galvc --target cuda --no-build; no nvcc
# needed): GPT-2 inference (fused attention, elementwise kernels), ViT
# training (conv and its gradients), GPT-2 bf16 training (storage
# conversions), 2-rank tp GPT-2 (collectives) and a 2-stage GPipe training
# pipeline (the backward entry program_bwd.cu). The checker itself must flag
# a launch written the other way. Dynamic shared memory likewise: no
# `extern __shared__` outside GALV_DYNAMIC_SHARED's definition (galv_cuda.h),
# which the host-compiler build defines otherwise.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
DEF='#define GALV_LAUNCH(kernel, grid, block, shmem, stream, ...) kernel<<<'

DYN='  extern __shared__ __align__(16) unsigned char galv_dynamic_shared_[];'
# chevrons FILE...: the lines with `<<<` other than the macro's definition, and
# `extern __shared__` other than GALV_DYNAMIC_SHARED's
chevrons() { grep -n -E '<<<|extern[[:space:]]+__shared__' "$@" /dev/null | grep -v -F -e "$DEF" -e "$DYN"; }

# the checker flags a direct launch (and only that)
printf '%s\n' "$DEF(grid), (block), (shmem), (stream)>>>(__VA_ARGS__)" '  GALV_LAUNCH(k, 1, 256, 0, s, x);' >"$T/ok.cu"
printf '%s\n' '  k<<<1, 256, 0, s>>>(x);' >"$T/bad.cu"
printf '%s\n' "$DYN \\" '  GALV_DYNAMIC_SHARED(float, s);' >"$T/ok_dyn.cu"
printf '%s\n' '  extern __shared__ float s[];' >"$T/bad_dyn.cu"
if chevrons "$T/ok.cu" >/dev/null || ! chevrons "$T/bad.cu" >/dev/null || chevrons "$T/ok_dyn.cu" >/dev/null ||
   ! chevrons "$T/bad_dyn.cu" >/dev/null; then
  echo "✗ the checker does not tell a direct launch or extern __shared__ from the macros"; fail=1
fi

# the runtime's sources
if out=$(chevrons "$SRC"/runtime/cuda/*); then
  echo "✗ runtime/cuda launches a kernel without GALV_LAUNCH:"; echo "$out"; fail=1
else
  echo "✓ runtime/cuda: $(grep -c 'GALV_LAUNCH(' "$SRC"/runtime/cuda/*.cu "$SRC"/runtime/cuda/*.cuh | awk -F: '{s += $2} END {print s}') launches, all through GALV_LAUNCH"
fi
grep -q -F "$DEF" "$SRC/runtime/cuda/galv_cuda.h" || { echo "✗ galv_cuda.h does not define GALV_LAUNCH"; fail=1; }
grep -q -F "$DYN" "$SRC/runtime/cuda/galv_cuda.h" || { echo "✗ galv_cuda.h does not define GALV_DYNAMIC_SHARED"; fail=1; }

python3 "$SRC/examples/make_model.py" gpt2 -o "$T/gpt2.onnx" --layers 2 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null
python3 "$SRC/examples/make_model.py" vit -o "$T/vit.onnx" --layers 1 --hidden 32 --heads 4 --no-verify >/dev/null
# NAME:MODEL:OPTIONS
for cfg in "gpt2:gpt2:--batch 2 --seq 16" "vit_train:vit:--batch 2 --train" \
           "gpt2_train_bf16:gpt2:--batch 2 --seq 16 --train --precision bf16" \
           "gpt2_tp2:gpt2:--batch 2 --seq 16 --gpus 2 --strategy tp" \
           "pp2_gpipe:gpt2:--batch 8 --seq 8 --pipeline-stages 2 --microbatches 2 --train --schedule gpipe"; do
  IFS=: read -r n model opts <<<"$cfg"
  d=$T/$n
  # shellcheck disable=SC2086
  if ! "$BUILD/galvc" "$T/$model.onnx" $opts --target cuda --no-build -q -o "$d/" >"$d.log" 2>&1; then
    echo "✗ $n: galvc"; cat "$d.log"; fail=1; continue
  fi
  mapfile -t cus < <(find "$d" -name '*.cu' -o -name '*.cuh' -o -name '*.h' | sort)
  mapfile -t progs < <(find "$d" -name 'program*.cu' | sort)
  nl=$(cat "${progs[@]}" /dev/null | grep -c '^  GALV_LAUNCH(')
  if out=$(chevrons "${cus[@]}"); then
    echo "✗ $n: a generated .cu launches without GALV_LAUNCH:"; echo "$out" | head -5; fail=1
  elif [ "${#progs[@]}" -eq 0 ] || [ "$nl" -eq 0 ]; then
    echo "✗ $n: no program*.cu with a GALV_LAUNCH (${#progs[@]} programs)"; fail=1
  else
    echo "✓ $n: ${#progs[@]} program .cu, $nl generated launches through GALV_LAUNCH, ${#cus[@]} .cu/.cuh/.h files without \`<<<\`"
  fi
done
[ "$fail" = 0 ] && echo "cuda_launch: all passed" || echo "cuda_launch: FAILED"
exit "$fail"
