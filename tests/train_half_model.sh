#!/usr/bin/env bash
# Models exported whole in 16 bits train under --precision (passes/compute_f32.c; docs/autodiff.md "Models computed
# in 16 bits"): tests/lib/half_model.py writes the tiny GPT-2 (2 layers, hidden 32, vocab 64) as torch exports it after
# .half() (fp16) or .to(torch.bfloat16) (bf16): every float initializer, input, output, constant and cast target in
# the 16-bit type, so each op computes in it; and its fp32 twin (the fp32 model holding the same rounded values).
# Before the pass such a model stopped in the optimizer under --precision fp16 ("--loss-scale: the gradient of
# 'transformer.wte.weight' is f32 (f16 expected)") and ran its ops in 16 bits otherwise. Checked, --target cpu,
# batch 8 x seq 8, 3 AdamW steps:
#   (1) the fp16 model under --precision fp16 and the bf16 model under --precision bf16: the program written is the
#       twin's under the same flags byte for byte (program.c but its header line naming the model, weights.bin), so
#       the losses and the weights written (-o: fp32 masters) are the twin's exactly; the losses within 1e-3 of the
#       original fp32 model's (unrounded weights) under the same --precision (tests/cpu_bf16.sh's 16-bit bound);
#   (2) the same for pp=2 (--pipeline-stages 2 --microbatches 2): every stage's programs, losses and weights = the
#       twin's;
#   (3) inference (--precision fp16): the logits written = the twin's;
#   (4) the fp16 model under --precision bf16 (and the bf16 one under fp16): one error line naming the node, exit 1;
#   (5) --freeze of the fp16 model's token table: it stays fp16 (read through a cast; -o writes its stored bits),
#       the losses the twin's under the same --freeze.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
python3 "$SRC/examples/make_model.py" gpt2 -o "$T/g.onnx" --layers 2 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null ||
  { echo "FAIL make_model"; exit 1; }
for k in fp16 bf16; do
  python3 "$SRC/tests/lib/half_model.py" "$T/g.onnx" "$T/g_$k.onnx" "$T/g_${k}_twin.onnx" $k || { echo "FAIL half_model $k"; exit 1; }
done
python3 -c "
import numpy as np, os
r = np.random.RandomState(0)
os.makedirs('$T/b')
np.save('$T/b/input_ids.npy', r.randint(0, 64, (3, 8, 8)).astype(np.int64))
np.save('$T/b/labels.npy', r.randint(0, 64, (3, 8, 8)).astype(np.int64))" || { echo "FAIL batches"; exit 1; }
# build NAME MODEL ARGS...: compile (-o NAME/), run 3 steps (-o NAME.w, NAME.log)
build() {
  local n=$1 mdl=$2
  shift 2
  timeout 300 "$BUILD/galvc" "$T/$mdl.onnx" --batch 8 --seq 8 --target cpu -q "$@" -o "$T/$n/" </dev/null >"$T/$n.glog" 2>&1 ||
    { bad "$n: galvc: $(grep -m1 error "$T/$n.glog")"; return 1; }
  local run=("$T/$n/program")
  [ -x "$T/$n/launch" ] && run=("$T/$n/launch")
  timeout 300 "${run[@]}" --batches "$T/b" --steps 3 -o "$T/$n.w" </dev/null >"$T/$n.log" 2>&1 ||
    { bad "$n: run: $(grep -m2 -i error "$T/$n.log" | tr '\n' ' ')"; return 1; }
}
# same_program DIR1 DIR2: every program source (but its first line, naming the model) and weights file alike
same_program() {
  local f n=0
  while IFS= read -r f; do
    case $f in
    *.bin) cmp -s "$1/$f" "$2/$f" || return 1 ;;
    *) cmp -s <(tail -n +2 "$1/$f") <(tail -n +2 "$2/$f") || return 1 ;;
    esac
    n=$((n + 1))
  done < <(cd "$1" && find . -name '*.c' -o -name '*.bin' | sort)
  [ $n -gt 0 ]
}
losses() { grep -o "^step [0-9]* loss [^ ]*" "$1" | awk '{print $4}' | tr '\n' ' '; }
# close RUN REF: RUN's losses within 1e-3 of REF's
close() {
  python3 - "$1" "$2" <<'PY'
import re, sys
def losses(p): return [float(x) for x in re.findall(r"^step \d+ loss (\S+)", open(p).read(), re.M)]
a, b = losses(sys.argv[1]), losses(sys.argv[2])
d = max((abs(x - y) for x, y in zip(a, b)), default=float("inf"))
print(f"{d:.2g}")
sys.exit(0 if len(a) == 3 and len(b) == 3 and d <= 1e-3 else 1)
PY
}
wsame() { # DIR1.w DIR2.w: the weights written, equal bit for bit, fp32
  python3 - "$1" "$2" <<'PY'
import glob, os, sys
import numpy as np
fs = sorted(glob.glob(f"{sys.argv[1]}/*.npy"))
ok = len(fs) == 29 and all(np.load(f).dtype == np.float32 and np.array_equal(np.load(f), np.load(f"{sys.argv[2]}/{os.path.basename(f)}")) for f in fs)
print(len(fs))
sys.exit(0 if ok else 1)
PY
}

# ---- (1) one program; (2) pp=2
for k in fp16 bf16; do
  for shape in one pp; do
    a=(--train --precision $k)
    [ $shape = pp ] && a+=(--pipeline-stages 2 --microbatches 2)
    build h_${k}_$shape g_$k "${a[@]}" && build t_${k}_$shape g_${k}_twin "${a[@]}" || continue
    d=same
    [ $shape = one ] && { build f_${k}_$shape g "${a[@]}" || continue; } # the unrounded model: one program only
    if same_program "$T/t_${k}_$shape" "$T/h_${k}_$shape" && [ "$(losses "$T/h_${k}_$shape.log")" = "$(losses "$T/t_${k}_$shape.log")" ] &&
       n=$(wsame "$T/h_${k}_$shape.w" "$T/t_${k}_$shape.w") && { [ $shape = pp ] || d=$(close "$T/h_${k}_$shape.log" "$T/f_${k}_$shape.log"); }; then
      ok "$k model, --precision $k, $shape: the twin's program, losses ($(losses "$T/h_${k}_$shape.log")) and $n fp32 weights$([ $shape = one ] && echo "; within $d of the unrounded fp32 model's losses")"
    else
      bad "$k model, $shape: losses $(losses "$T/h_${k}_$shape.log") vs twin $(losses "$T/t_${k}_$shape.log") vs fp32 $(losses "$T/f_${k}_$shape.log" 2>/dev/null)"
    fi
  done
done

# ---- (3) inference
mkdir -p "$T/in"
python3 -c "import numpy as np; np.save('$T/in/input_ids.npy', np.random.RandomState(1).randint(0, 64, (8, 8)).astype(np.int64))"
inf_ok=1
for mdl in g_fp16 g_fp16_twin; do
  timeout 300 "$BUILD/galvc" "$T/$mdl.onnx" --batch 8 --seq 8 --target cpu -q --precision fp16 -o "$T/i_$mdl/" </dev/null >"$T/i_$mdl.glog" 2>&1 &&
    timeout 120 "$T/i_$mdl/program" --input input_ids="$T/in/input_ids.npy" -o "$T/i_$mdl.out" </dev/null >"$T/i_$mdl.log" 2>&1 || { inf_ok=0; bad "inference $mdl: $(cat "$T/i_$mdl.glog" "$T/i_$mdl.log" | grep -m1 -i error)"; }
done
if [ $inf_ok = 1 ]; then
  if r=$(python3 - "$T/i_g_fp16.out" "$T/i_g_fp16_twin.out" <<'PY'
import glob, os, sys
import numpy as np
fs = sorted(glob.glob(f"{sys.argv[1]}/*.npy"))
if not fs: sys.exit("no outputs")
for f in fs:
    a, b = np.load(f), np.load(f"{sys.argv[2]}/{os.path.basename(f)}")
    if a.dtype != b.dtype or not np.array_equal(a, b): sys.exit(f"{os.path.basename(f)}: {a.dtype} vs {b.dtype}, differ")
print(", ".join(f"{os.path.basename(f)} {np.load(f).shape} {np.load(f).dtype}" for f in fs))
PY
  ); then ok "inference, fp16 model, --precision fp16: outputs = the twin's ($r)"; else bad "inference: $r"; fi
fi

# ---- (5) a frozen 16-bit table stays 16-bit
if build hz g_fp16 --train --precision fp16 --freeze transformer.wte.weight &&
   build tz g_fp16_twin --train --precision fp16 --freeze transformer.wte.weight; then
  if [ "$(losses "$T/hz.log")" = "$(losses "$T/tz.log")" ] && python3 - "$T/hz.w" "$T/tz.w" "$T/g_fp16.onnx" <<'PY'
import sys
import numpy as np
import onnx
from onnx import numpy_helper
a, b = np.load(f"{sys.argv[1]}/transformer.wte.weight.npy"), np.load(f"{sys.argv[2]}/transformer.wte.weight.npy")
s = next(numpy_helper.to_array(t) for t in onnx.load(sys.argv[3]).graph.initializer if t.name == "transformer.wte.weight")
sys.exit(0 if a.dtype == np.float16 and np.array_equal(a, s) and np.array_equal(a.astype(np.float32), b) else 1)
PY
  then ok "fp16 model, --freeze transformer.wte.weight: the twin's losses ($(losses "$T/hz.log")); the table written back fp16, its stored bits"
  else bad "frozen fp16 table: losses $(losses "$T/hz.log") vs $(losses "$T/tz.log"), or the table written otherwise"; fi
fi

# ---- (4) the other 16-bit precision; fp32
for c in "g_fp16 bf16 fp16" "g_bf16 fp16 bf16"; do
  read -r mdl p k <<<"$c"
  timeout 60 "$BUILD/galvc" "$T/$mdl.onnx" --batch 8 --seq 8 --target cpu --train -q --precision $p -o "$T/e.mlir" </dev/null >"$T/e.log" 2>&1
  rc=$?
  if [ $rc = 1 ] && [ "$(wc -l <"$T/e.log")" = 1 ] &&
     grep -q "^galvc: error: .*$mdl.onnx: node '[^']*' ([A-Za-z]*): the model computes in $k .*, but --precision $p is given" "$T/e.log"; then
    ok "$k model, --precision $p: $(cat "$T/e.log")"
  else bad "$k model, --precision $p: rc $rc: $(head -c 300 "$T/e.log")"; fi
done
echo "train_half_model: $pass passed, $fail failed"
[ $fail = 0 ]
