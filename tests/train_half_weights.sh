#!/usr/bin/env bash
# Models stored in bf16 / fp16 train (passes/master_weights.c; docs/autodiff.md
# "Models stored in 16 bits"): the tiny GPT-2 and Llama of
# tests/lib/tiny_lms.sh rewritten with every float initializer stored bf16
# or fp16 and a Cast to float after it (the form of a checkpoint saved in 16
# bits), trained by galvc --train --target cpu (2 AdamW steps, eps 1e-6, over
# 2 batches of 8 x 8):
#   - one device = torch 1.13 (tests/train/torch_train.py) training the same
#     graph with fp32 parameters holding the stored values (the fp32 masters;
#     the model's cast to float then reads the master itself, --precision
#     deciding any rounding): losses rtol 1e-4, weights atol 1e-4; the
#     weights written (-o) are fp32 and moved from the stored values;
#   - 2 CPU ranks, zero2 and tp = the one-device program (losses rtol 1e-4,
#     weights rtol 1e-4 / atol 1e-5), the bytes counted = predicted;
#   - --precision bf16 (16-bit activations too): losses within 1e-3 of the
#     fp32-compute run (tests/cpu_bf16.sh's bound);
#   - a --freeze'd 16-bit table stays 16-bit (read, not trained; -o writes
#     its stored bits back) while the rest trains;
#   - the CUDA target: GPT-2 stored bf16 compiled with --target cuda, its
#     program built with `make emu` (runtime/cuda over the CPU execution
#     layer) = the CPU program (losses rtol 1e-4, weights rtol 1e-4 / atol
#     1e-5); skipped without g++.
# Before the master-weights pass these models stopped in the AdamW pass
# ("operand dtypes bf16 and f32 differ").
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
TORCH_PY=/usr/bin/python3
require_torch "$TORCH_PY"
export CFLAGS=-O0
. "$SRC/tests/lib/tiny_lms.sh"
tiny_lms "$T" 4
python3 - "$T" <<'PY'
import numpy as np, os, sys
import onnx
from onnx import TensorProto, helper, numpy_helper
t = sys.argv[1]
r = np.random.RandomState(3)
os.makedirs(f"{t}/b")
np.save(f"{t}/b/input_ids.npy", r.randint(0, 64, (2, 8, 8)).astype(np.int64))
lab = r.randint(0, 64, (2, 8, 8)).astype(np.int64)
lab[0, 1, :3] = -100
np.save(f"{t}/b/labels.npy", lab)

def bf16_bits(a):
    u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)

def widen_bf16(b):
    return (b.astype(np.uint32) << 16).view(np.float32)

for fam in ("gpt2", "llama"):
    for dt, tag in ((TensorProto.BFLOAT16, "bf16"), (TensorProto.FLOAT16, "f16")):
        stored, ref = onnx.load(f"{t}/{fam}.onnx"), onnx.load(f"{t}/{fam}.onnx")
        for m, is_ref in ((stored, False), (ref, True)):
            g = m.graph
            inits, casts = [], []
            for init in list(g.initializer):
                if init.data_type != TensorProto.FLOAT or len(init.dims) == 0:
                    continue
                a = numpy_helper.to_array(init)
                h = init.name + ".h"  # the stored tensor; the model reads `init.name` after the cast
                if dt == TensorProto.BFLOAT16:
                    bits = bf16_bits(a)
                    w = widen_bf16(bits)
                    s = helper.make_tensor(h, dt, a.shape, bits.tobytes(), raw=True)
                else:
                    w = a.astype(np.float16).astype(np.float32)
                    s = numpy_helper.from_array(a.astype(np.float16), h)
                g.initializer.remove(init)
                if is_ref:  # fp32 holding the stored values
                    inits.append(numpy_helper.from_array(w, h))
                    casts.append(helper.make_node("Cast", [h], [init.name], to=TensorProto.FLOAT, name="cast_" + init.name))
                else:
                    inits.append(s)
                    casts.append(helper.make_node("Cast", [h], [init.name], to=TensorProto.FLOAT, name="cast_" + init.name))
            g.initializer.extend(inits)
            nodes = casts + list(g.node)
            del g.node[:]
            g.node.extend(nodes)
            onnx.save(m, f"{t}/{fam}_{tag}{'_ref' if is_ref else ''}.onnx")
PY
[ -f "$T/llama_f16_ref.onnx" ] || { echo "FAIL models"; exit 1; }

build() { # NAME MODEL OPTIONS..
  local n=$1 m=$2; shift 2
  timeout 300 "$BUILD/galvc" "$m" --batch 8 --seq 8 --train --eps 1e-6 "$@" --target cpu -q -o "$T/$n/" 2>"$T/$n.err" </dev/null ||
    { bad "$n: galvc $*: $(grep -m2 error "$T/$n.err")"; return 1; }
}
run() { # NAME: 2 steps -> NAME.log, NAME.w
  local n=$1 exe=program
  [ -x "$T/$n/launch" ] && exe=launch
  timeout 300 "$T/$n/$exe" --batches "$T/b" --steps 2 -o "$T/$n.w" --comm-stats </dev/null >"$T/$n.log" 2>&1 ||
    { bad "$n: run: $(grep -m2 -i error "$T/$n.log")"; return 1; }
}
same() { # REF RUN [LOSS_ONLY_BOUND]
  python3 - "$T" "$1" "$2" "${3:-}" "$SRC/tests/lib" <<'PY'
import sys
sys.path.insert(0, sys.argv[5])
from same_training import check, losses
t, a, b, bound = sys.argv[1:5]
if bound:
    x, y = losses(f"{t}/{a}.log"), losses(f"{t}/{b}.log")
    d = max(abs(x[k] - y[k]) for k in x) if sorted(x) == sorted(y) == [0, 1] else float("inf")
    if d > float(bound):
        sys.exit(f"losses {y} vs {x}: {d:.2g} > {bound}")
    print(f"losses within {d:.1e}")
else:
    print(check(f"{t}/{a}.log", f"{t}/{b}.log", f"{t}/{a}.w", f"{t}/{b}.w"))
PY
}

for fam in gpt2 llama; do
  for tag in bf16 f16; do
    n=$fam-$tag
    build "$n" "$T/${fam}_$tag.onnx" && run "$n" || continue
    python3 "$SRC/tests/train/onnx_dump.py" "$T/${fam}_${tag}_ref.onnx" "$T/$n.dump" || { bad "$n: dump"; continue; }
    "$TORCH_PY" "$SRC/tests/train/torch_train.py" "$T/$n.dump" "$T/b/input_ids.npy" "$T/b/labels.npy" 2 "$T/$n.torch" \
      adamw 1e-3 0.01 0.9 0.999 1e-6 0 >"$T/$n.torch.log" 2>&1 || { bad "$n: torch: $(tail -1 "$T/$n.torch.log")"; continue; }
    if out=$("$TORCH_PY" "$SRC/tests/train/compare.py" "$T/$n.log" "$T/$n.torch.log" "$T/$n.w" "$T/$n.torch" 1e-4 1e-4 2>&1); then
      ok "$n: stored $tag, one device = torch with fp32 masters ($(tail -1 <<<"$out"))"
    else
      bad "$n: against torch: $(tail -3 <<<"$out")"
    fi
    # the weights written are fp32 and trained (moved from the stored values)
    if r=$(python3 - "$T/${fam}_$tag.onnx" "$T/$n.w" <<'PY'
import sys, os, numpy as np, onnx
from onnx import numpy_helper, TensorProto
m = onnx.load(sys.argv[1])
moved = 0
for i in m.graph.initializer:
    if i.data_type not in (TensorProto.BFLOAT16, TensorProto.FLOAT16):
        continue
    a = np.load(os.path.join(sys.argv[2], i.name + ".npy"))
    if a.dtype != np.float32:
        sys.exit(f"{i.name}: written {a.dtype}, not fp32")
    if i.data_type == TensorProto.FLOAT16:
        s = numpy_helper.to_array(i).astype(np.float32)
    else:
        s = (np.frombuffer(i.raw_data, np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(a.shape)
    moved += int(np.abs(a - s).max() > 0)
print(f"{moved} fp32 weights moved")
sys.exit(0 if moved > 0 else 1)
PY
    ); then ok "$n: -o: $r"; else bad "$n: -o: $r"; fi
  done
  # 2 ranks against the one device, bf16-stored
  for st in zero2 tp; do
    build "$fam-bf16-$st" "$T/${fam}_bf16.onnx" --gpus 2 --strategy $st && run "$fam-bf16-$st" || continue
    if r=$(same "$fam-bf16" "$fam-bf16-$st" && python3 "$SRC/tests/lib/comm_counted.py" "$T/$fam-bf16-$st.log" 2); then
      ok "$fam bf16-stored, 2 ranks $st = one device, bytes = predicted: ${r//$'\n'/; }"
    else bad "$fam bf16-stored $st: $r"; fi
  done
  # 16-bit activations too
  build "$fam-bf16-p" "$T/${fam}_bf16.onnx" --precision bf16 && run "$fam-bf16-p" &&
    if r=$(same "$fam-bf16" "$fam-bf16-p" 1e-3); then ok "$fam bf16-stored --precision bf16: $r of the fp32-compute run"
    else bad "$fam bf16-stored --precision bf16: $r"; fi
done

# a frozen 16-bit table: not widened, not updated (-o writes its stored bf16 bits back); the rest trains
wpe=transformer.wpe.weight.h
if build gpt2-freeze "$T/gpt2_bf16.onnx" --freeze "$wpe" && run gpt2-freeze; then
  if r=$(python3 - "$T/gpt2_bf16.onnx" "$T/gpt2-freeze.w" "$wpe" <<'PY'
import sys, os, numpy as np, onnx
m = onnx.load(sys.argv[1])
i = [x for x in m.graph.initializer if x.name == sys.argv[3]][0]
a = np.load(os.path.join(sys.argv[2], sys.argv[3] + ".npy"))
if a.dtype != np.uint16 or a.tobytes() != i.raw_data:
    sys.exit(f"the frozen table written as {a.dtype}, not its stored bf16 bits")
w = np.load(os.path.join(sys.argv[2], "transformer.wte.weight.h.npy"))
print(f"frozen table = its stored bf16 bits, wte {w.dtype}")
PY
  ) && r2=$(same gpt2-bf16 gpt2-freeze 1e10 2>&1); then
    ok "gpt2 bf16-stored, $wpe frozen: $r; trains ($r2 of the unfrozen run)"
  else
    bad "gpt2 frozen 16-bit table: ${r:-} ${r2:-}"
  fi
fi

# the CUDA target (skipped without g++): the bf16-stored GPT-2's CUDA program under the CPU execution layer
# (make emu) = the CPU target's program
if have_cmd g++; then
  if timeout 300 "$BUILD/galvc" "$T/gpt2_bf16.onnx" --batch 8 --seq 8 --train --eps 1e-6 --target cuda --no-build -q \
    -o "$T/cu/" 2>"$T/cu.err" </dev/null && make -s -C "$T/cu" emu >"$T/cu.make" 2>&1 &&
    timeout 300 "$T/cu/program-emu" --batches "$T/b" --steps 2 -o "$T/cu.w" </dev/null >"$T/cu.log" 2>&1; then
    if r=$(same gpt2-bf16 cu); then ok "gpt2 bf16-stored, CUDA program (make emu) = the CPU program: $r"
    else bad "gpt2 bf16-stored, CUDA program: $r"; fi
  else
    bad "gpt2 bf16-stored, CUDA program: $(grep -m2 -i error "$T/cu.err" "$T/cu.make" "$T/cu.log" 2>/dev/null)"
  fi
fi

echo "train_half_weights: $pass passed, $fail failed"
galv_exit "$fail"
