#!/usr/bin/env bash
# The CUDA execution layer's API surface stays bounded (runtime/cuda/emu/):
# the CUDA, cuBLAS and NCCL names (functions, types, constants, device
# intrinsics) its headers export are listed, and every such name that a
# program uses — runtime/cuda/ and the generated program.cu / program_bwd.cu
# of GPT-2 inference (fp32, bf16 and fp16), ViT training (conv gradients), GPT-2
# bf16 and fp16 training, 2-rank tp inference and dp training, a 2-stage GPipe
# training pipeline — must be among them (else `make emu` would not build
# that program); and every function the headers declare must be used by a
# program (nothing is emulated that no program calls). The checker must
# flag a name outside the list. No compiler needed.
# Usage: cuda_emu_api.sh BUILD_DIR
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
python3 "$SRC/examples/make_model.py" gpt2 -o "$T/gpt2.onnx" --layers 2 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null
python3 "$SRC/examples/make_model.py" vit -o "$T/vit.onnx" --layers 1 --hidden 32 --heads 4 --no-verify >/dev/null
G=("$BUILD/galvc" --target cuda --no-build -q)
for c in "inf:$T/gpt2.onnx --batch 2 --seq 16" "inf16:$T/gpt2.onnx --batch 2 --seq 16 --precision bf16" \
         "inf16h:$T/gpt2.onnx --batch 2 --seq 16 --precision fp16" \
         "vit:$T/vit.onnx --batch 2 --train" "tr16:$T/gpt2.onnx --input-shape input_ids=2x8 --train --precision bf16" \
         "tr16h:$T/gpt2.onnx --input-shape input_ids=2x8 --train --precision fp16" \
         "tp2:$T/gpt2.onnx --batch 2 --seq 16 --gpus 2 --strategy tp" \
         "dp2:$T/gpt2.onnx --input-shape input_ids=2x8 --train --gpus 2 --strategy dp" \
         "pp2:$T/gpt2.onnx --batch 8 --seq 8 --pipeline-stages 2 --microbatches 2 --train --schedule gpipe"; do
  IFS=: read -r n args <<<"$c"
  # shellcheck disable=SC2086
  "${G[@]}" $args -o "$T/$n/" >"$T/$n.log" 2>&1 || { echo "✗ galvc $n"; cat "$T/$n.log"; fail=1; }
done
python3 - "$SRC" "$T" <<'PY' || fail=1
import glob, os, re, sys
src, t = sys.argv[1:3]
# the names of the CUDA runtime / cuBLAS / NCCL / device-intrinsic namespace
NAME = re.compile(r"\b(cuda[A-Z]\w*|cublas[A-Z]\w*|nccl[A-Z]\w*|CUBLAS_\w+|CUDA_R_\w+|__shfl\w*|__syncthreads|__syncwarp"
                  r"|__(?:any|all|ballot)_sync|atomic[A-Z]\w*|__ldg|__float2\w+|__\w+2float|__nv_\w+|__h\w+)\b")
def code(path):  # without comments and string literals
    s = open(path).read()
    s = re.sub(r"/\*.*?\*/", " ", s, flags=re.S)
    s = re.sub(r"//[^\n]*", " ", s)
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', s)
def names(paths):
    out = {}
    for p in paths:
        for m in NAME.finditer(code(p)):
            out.setdefault(m.group(1), p)
    return out
hdrs = sorted(glob.glob(f"{src}/runtime/cuda/emu/*.h"))
exported = names(hdrs)
# functions the headers declare (a name followed by '(' at a declaration: return type before it)
declared = set()
for h in hdrs:
    for m in re.finditer(r"^[\w ]*?[\w\*]+\s+\**(\w+)\(", code(h), re.M):
        if NAME.fullmatch(m.group(1)):
            declared.add(m.group(1))
progs = [p for p in glob.glob(f"{src}/runtime/cuda/*") if p.endswith((".cu", ".cuh", ".h"))]
progs += glob.glob(f"{t}/*/program*.cu") + glob.glob(f"{t}/*/stage*/program*.cu")
used = names(progs)
# the programs' own macros in that namespace (cudaCheck, cublasCheck, ncclCheck) are not the layer's
for p in progs:
    for m in re.finditer(r"^\s*#\s*define\s+(\w+)", open(p).read(), re.M):
        used.pop(m.group(1), None)
def check(used, label, quiet=False):
    outside = sorted(set(used) - set(exported))
    for n in outside if not quiet else []:
        print(f"✗ {label}: {n} (in {os.path.relpath(used[n], t if used[n].startswith(t) else src)}) is outside the layer's API")
    return not outside
# the checker flags a name outside the list
probe = os.path.join(t, "probe.cu")
open(probe, "w").write("void f(void) { cudaDeviceSynchronize(); cudaMalloc(0, 0); }\n")
if check(names([probe]), "probe", True) or set(names([probe])) - set(exported) != {"cudaDeviceSynchronize"}:
    print("✗ the checker does not flag cudaDeviceSynchronize, a name outside the layer"); sys.exit(1)
ok = check(used, "program")
unused = sorted(declared - set(used))
for n in unused:
    print(f"✗ the layer declares {n}, which no program uses (the surface grows only with the programs)")
ok = ok and not unused
gen = len(glob.glob(f"{t}/*/program*.cu") + glob.glob(f"{t}/*/stage*/program*.cu"))
print(("✓" if ok else "✗") + f" API surface: {len(exported)} names exported ({len(declared)} functions), "
      f"{len(used)} used by runtime/cuda and {gen} generated programs")
print("  functions: " + " ".join(sorted(declared)))
sys.exit(0 if ok else 1)
PY
[ $fail = 0 ] && echo "cuda_emu_api: ok" || echo "cuda_emu_api: FAILED"
exit $fail
