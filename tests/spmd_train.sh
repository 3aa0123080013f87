#!/usr/bin/env bash
# N-rank CPU training steps equal the single-device training program: the
# example models compiled with galvc --train (cross_entropy, AdamW) --gpus N
# --strategy S --target cpu run 2 steps over 2 different batches with
# out/launch (mpirun, GALV_COMM_SYNC=1, under timeout); the losses of both
# steps and every final parameter (gathered, -o DIR) equal the one-device
# program's (rtol 1e-4, atol 1e-5), and the bytes the communicator counted
# equal the planner's prediction x steps (checked by the program). A
# checkpoint saved by the N-rank job after 2 steps holds global tensors:
# resumed for a third step it equals 3 straight steps, bit for bit on the
# N ranks and within rtol 1e-4 on one device (checked on the first case). AdamW with eps 1e-6:
# with torch's 1e-8 an element whose gradient is at float-noise level
# (|g| ~ 1e-8, e.g. one Llama up_proj entry) moves by a noise-determined
# fraction of lr, so a different summation order (ranks) differs by ~6e-5
# in that one element (the same effect as docs/autodiff.md's c_attn bias).
# Under tp, GPT-2's head and cross entropy are vocab-parallel: the
# collective table shows 3 row all_reduces over tp at loss/cross_entropy
# and no all_gather of the logits (checked).
# GALV_SPMD_TRAIN_CASES narrows the matrix: FAMILY:N:STRATEGY, ...
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/require.sh"
require_cmd "Debian libopenmpi-dev, openmpi-bin" mpicc mpirun
export GALV_COMM_SYNC=1 OMPI_MCA_btl_vader_single_copy_mechanism=none OPENBLAS_NUM_THREADS=1
export MPIRUN="mpirun -x GALV_COMM_SYNC -x OPENBLAS_NUM_THREADS"
# every strategy and rank count at least once, every family in training
CASES=${GALV_SPMD_TRAIN_CASES:-gpt2:2:dp gpt2:2:tp gpt2:4:zero gpt2:4:dp,tp gpt2:8:dp,tp llama:2:tp llama:4:zero bert:2:dp bert:4:dp,tp vit:2:zero vit:4:tp vit:8:dp}
pass=0 fail=0
# global_checked OUT RUNS: the counters printed (rank 0's; every rank runs the same check, one binary)
# end "(predicted per run: ...) from the global program": the program checked the bytes it handed to
# MPI against the planner's prediction from the global program, not against its own collectives' sum
global_checked() {
  local all glob
  all=$(grep -c "comm bytes sent by rank [0-9][0-9]* in $2 runs: " <<<"$1")
  glob=$(grep -c "comm bytes sent by rank [0-9][0-9]* in $2 runs: .* (predicted per run: [0-9][0-9]*, [0-9][0-9]*, [0-9][0-9]*, [0-9][0-9]*) from the global program$" <<<"$1")
  [ "$all" -ge 1 ] && [ "$glob" = "$all" ]
}
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
B=8 S=8
prep() { # fam: model, batches, single-device reference; 0 when ready
  local fam=$1
  [ -f "$T/$fam.ready" ] && return 0
  [ -f "$T/$fam.failed" ] && return 1
  touch "$T/$fam.failed"
  local m="$T/$fam.onnx" extra=()
  [ "$fam" = llama ] && extra=(--heads 4 --kv-heads 2)
  python3 "$SRC/examples/make_model.py" "$fam" -o "$m" --layers 2 "${extra[@]}" --no-verify >/dev/null ||
    { bad "$fam: make_model"; return 1; }
  # 2 batches: inputs as the inference tests draw them, labels in range
  python3 - "$SRC" "$m" "$T/$fam.b" $B $S 2>"$T/err" <<'PY' || { bad "$fam batches: $(tail -1 "$T/err")"; return 1; }
import sys, os, onnx, numpy as np
sys.path.insert(0, sys.argv[1] + "/tests")
from model_inputs import make_inputs
m = onnx.load(sys.argv[2], load_external_data=False)
B, S = int(sys.argv[4]), int(sys.argv[5])
os.makedirs(sys.argv[3])
steps = [make_inputs(m, B, S, seed=k) for k in range(2)]
for name in steps[0]:
    np.save(f"{sys.argv[3]}/{name.replace('/', '_')}.npy", np.stack([s[name] for s in steps]))
out = m.graph.output[0].type.tensor_type
dims = [d.dim_value if d.HasField("dim_value") else (B if "batch" in d.dim_param else S) for d in out.shape.dim]
r = np.random.RandomState(5)
lab = r.randint(0, dims[-1], size=[2] + dims[:-1]).astype(np.int64)
if lab.ndim == 3:
    lab[:, 0, :2] = -100  # ignored labels count too
np.save(f"{sys.argv[3]}/labels.npy", lab)
PY
  "$BUILD/galvc" "$m" --batch $B --seq $S --train --eps 1e-6 --target cpu -q -o "$T/$fam-1/" 2>"$T/err" ||
    { bad "$fam single device: $(head -2 "$T/err")"; return 1; }
  "$T/$fam-1/program" --batches "$T/$fam.b" --steps 2 -o "$T/$fam-1/w" >"$T/$fam-1/log" 2>"$T/err" ||
    { bad "$fam single run: $(cat "$T/err")"; return 1; }
  rm "$T/$fam.failed"
  touch "$T/$fam.ready"
}
# resume_check FAM N S DIR: the N-rank checkpoint (global tensors, saved
# after 2 steps) resumed for 1 step equals 3 straight steps: on N ranks
# (the same plan) bit-identical loss and weights; on one device (another
# summation order for the first 2 steps) within rtol 1e-4, atol 1e-5.
resume_check() {
  local fam=$1 n=$2 s=$3 d=$4 p1="$T/$fam-1/program"
  if ! timeout 300 "$d/launch" --batches "$T/$fam.b" --steps 3 -o "$d/w3" >"$d/straight3" 2>"$T/err" ||
     ! timeout 300 "$d/launch" --batches "$T/$fam.b" --steps 1 --load-checkpoint "$T/ckpt" -o "$d/wr" >"$d/resumed" 2>>"$T/err" ||
     ! "$p1" --batches "$T/$fam.b" --steps 3 -o "$T/$fam-1/w3" >"$T/$fam-1/straight3" 2>>"$T/err" ||
     ! "$p1" --batches "$T/$fam.b" --steps 1 --load-checkpoint "$T/ckpt" -o "$T/$fam-1/wr" >"$T/$fam-1/resumed" 2>>"$T/err"; then
    bad "$fam $n ranks $s: checkpoint resume runs: $(head -3 "$T/err")"
    return
  fi
  local a b f same=1
  a=$(grep '^step 2 loss' "$d/straight3"); b=$(grep '^step 2 loss' "$d/resumed")
  for f in "$d"/w3/*.npy; do cmp -s "$f" "$d/wr/$(basename "$f")" || { same=0; break; }; done
  if [ -n "$a" ] && [ "$a" = "$b" ] && [ "$same" = 1 ] && [ "$(ls "$d/w3" | wc -l)" -gt 0 ]; then
    ok "$fam $n ranks $s: checkpoint after 2 steps + 1 resumed step == 3 straight steps, bit-identical ($b)"
  else
    bad "$fam $n ranks $s: resumed '$b' vs straight '$a', weights bit-identical: $same"
  fi
  if r=$(python3 - "$T/$fam-1/straight3" "$T/$fam-1/resumed" "$T/$fam-1/w3" "$T/$fam-1/wr" 2>&1 <<'PY'
import sys, glob, os, re, numpy as np
def loss(p):
    m = re.findall(r"^step 2 loss (\S+)", open(p).read(), re.M)
    return float(m[0]) if len(m) == 1 else None
a, b = loss(sys.argv[1]), loss(sys.argv[2])
if a is None or b is None or not np.isclose(b, a, rtol=1e-4, atol=0):
    sys.exit(f"step 2 loss resumed {b} vs straight {a}")
ws = sorted(glob.glob(sys.argv[3] + "/*.npy"))
for f in ws:
    x, y = np.load(f), np.load(os.path.join(sys.argv[4], os.path.basename(f)))
    if x.shape != y.shape or not np.allclose(y, x, rtol=1e-4, atol=1e-5):
        sys.exit(f"{os.path.basename(f)} differs")
print(f"step 2 loss {b:.8f} (straight {a:.8f}), {len(ws)} weights equal")
sys.exit(0 if ws else 1)
PY
  ); then
    ok "$fam: the $n-rank checkpoint resumes on one device: $r"
  else
    bad "$fam: the $n-rank checkpoint resumed on one device: $r"
  fi
}
first=1
for c in $CASES; do
  IFS=: read -r fam n s <<<"$c"
  prep "$fam" || continue
  d="$T/$fam-$n-${s/,/_}"
  mesh=()
  [ "$s" = dp,tp ] && mesh=(--mesh "dp=2,tp=$((n / 2))")
  q=(-q) # GPT-2 under tp: the collective table is checked (vocab-parallel cross entropy)
  [ "$fam" = gpt2 ] && [[ $s == *tp* ]] && q=()
  if ! "$BUILD/galvc" "$T/$fam.onnx" --batch $B --seq $S --train --eps 1e-6 --gpus "$n" --strategy "$s" "${mesh[@]}" --target cpu "${q[@]}" \
    -o "$d/" 2>"$T/err"; then
    bad "$fam --gpus $n --strategy $s --train: galvc: $(grep -m3 error "$T/err")"
    continue
  fi
  if [ ${#q[@]} = 0 ]; then # logits stay vocab-split: 3 row all_reduces over tp (max, sum, target), no gather
    if grep -qE 'spmd: all_gather .* loss/cross_entropy' "$T/err" ||
      [ "$(grep -cE 'spmd: all_reduce +tp .* loss/cross_entropy$' "$T/err")" != 3 ]; then
      bad "$fam $n ranks $s: cross entropy is not vocab-parallel: $(grep -m3 'loss/cross_entropy' "$T/err" | tr -s ' ')"
      continue
    fi
  fi
  ck=()
  [ $first = 1 ] && ck=(--save-checkpoint "$T/ckpt")
  out=$(timeout 300 "$d/launch" --batches "$T/$fam.b" --steps 2 -o "$d/w" --comm-stats "${ck[@]}" 2>&1)
  rc=$?
  if [ $rc -ne 0 ]; then
    bad "$fam $n ranks $s train: rc $rc: $(grep -m2 'error' <<<"$out")"
    continue
  fi
  echo "$out" >"$d/log"
  r=$(python3 - "$T/$fam-1" "$d" <<'PY'
import sys, glob, os, re, numpy as np
a, b = sys.argv[1], sys.argv[2]
la = [float(x) for x in re.findall(r"^step \d+ loss (\S+)", open(a + "/log").read(), re.M)]
lb = [float(x) for x in re.findall(r"^step \d+ loss (\S+)", open(b + "/log").read(), re.M)]
bad = []
if len(la) != 2 or len(lb) != 2 or not np.allclose(lb, la, rtol=1e-4, atol=1e-5):
    bad.append(f"losses {lb} vs {la}")
worst, n = 0.0, 0
for f in sorted(glob.glob(f"{a}/w/*.npy")):
    g = f"{b}/w/{os.path.basename(f)}"
    if not os.path.exists(g):
        bad.append(f"{os.path.basename(f)} missing")
        continue
    x, y = np.load(f), np.load(g)
    n += 1
    if x.shape != y.shape or not np.allclose(y, x, rtol=1e-4, atol=1e-5):
        bad.append(f"{os.path.basename(f)} differs (max {np.abs(x.astype(np.float64) - y).max() if x.shape == y.shape else 'shape'})")
    else:
        worst = max(worst, float(np.abs(x.astype(np.float64) - y).max()))
print("; ".join(bad[:4]) if bad else f"losses {lb[0]:.6f} {lb[1]:.6f}, {n} weights equal (max abs err {worst:.1e})")
sys.exit(1 if bad else 0)
PY
  )
  if [ $? -ne 0 ]; then
    bad "$fam $n ranks $s train: $r"
    continue
  elif ! global_checked "$out" 2; then # the program checked its bytes against the global program's prediction
    bad "$fam $n ranks $s train: the bytes were not checked against the global program's prediction: $(grep -m2 'comm bytes' <<<"$out")"
    continue
  else
    ok "$fam $n ranks $s train: $r; $(grep -m1 -o 'in 2 runs: .*' <<<"$out")"
  fi
  if [ $first = 1 ]; then # the checkpoint after 2 steps, resumed for a third
    first=0
    resume_check "$fam" "$n" "$s" "$d"
  fi
done
echo "spmd_train: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
