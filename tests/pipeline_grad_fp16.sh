#!/usr/bin/env bash
# Training with fp16 parameter gradients (galvc --train --precision fp16
# --grad-dtype fp16; docs/training.md, docs/pipeline.md "16-bit storage"),
# beside tests/pipeline_grad_bf16.sh: the entries store each parameter
# gradient fp16, the pipeline runtime sums them over the microbatches in fp16
# (fp32 master weights and optimizer state) under dynamic loss scaling
# (fp16's default, torch's GradScaler rule), whose overflow check reads the
# 16-bit sums. Tiny GPT-2 (2 layers, hidden 32, vocab 64), batch 8 x seq 8,
# 3 AdamW steps, --target cpu, under GALV_COMM_SYNC=1.
# (1) One program: losses within 1e-3 of --precision fp16 with fp32
#     gradients and of fp32 (tests/cpu_bf16.sh's 16-bit bound), no step
#     skipped at the default scale.
# (2) pp=2 B=4 (1F1B) and pp=2 x dp=2 (--stage-devices 2,2) B=2: losses
#     within 1e-3 of the one program's (fp16 gradients) and of fp32; the
#     runtime's gradient sums half the bytes of the same pipeline with fp32
#     gradients (the printed "gradient sums"); weights finite, within
#     2 x lr x steps of fp32's.
# (3) The overflow check sees the fp16 sums: at --loss-scale-init 2^20 the
#     pipeline with fp32 gradients skips no step, the one with fp16
#     gradients overflows (a sum of 4 scaled microbatch gradients beyond
#     65504 is inf): its first step is skipped and the scale halved
#     (2^19).
# (4) --grad-dtype fp16 with --precision bf16 (or without --train): one
#     error line.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
export GALV_COMM_SYNC=1
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
m="$T/gpt2.onnx"
python3 "$SRC/examples/make_model.py" gpt2 -o "$m" --layers 2 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null ||
  { echo "FAIL make_model"; exit 1; }
python3 -c "
import numpy as np, os
r = np.random.RandomState(0)
os.makedirs('$T/b')
np.save('$T/b/input_ids.npy', r.randint(0, 64, (3, 8, 8)).astype(np.int64))
np.save('$T/b/labels.npy', r.randint(0, 64, (3, 8, 8)).astype(np.int64))" || { echo "FAIL batches"; exit 1; }
G=("$BUILD/galvc" "$m" --batch 8 --seq 8 --target cpu -q --train)
# build NAME ARGS...: compile and run 3 steps (-o NAME.w), the log in NAME.log
build() {
  local d=$1
  shift
  if ! timeout 600 "${G[@]}" "$@" -o "$T/$d/" </dev/null >"$T/$d.glog" 2>&1; then
    bad "$d: galvc: $(grep -m1 error "$T/$d.glog")"
    return 1
  fi
  local run=("$T/$d/program")
  [ -x "$T/$d/launch" ] && run=("$T/$d/launch")
  if ! timeout 300 "${run[@]}" --batches "$T/b" --steps 3 -o "$T/$d.w" </dev/null >"$T/$d.log" 2>&1; then
    bad "$d: run: $(grep -m2 -i error "$T/$d.log" | tr '\n' ' ')"
    return 1
  fi
}
# cmp_runs RUN REF...: RUN's losses within 1e-3 of each REF's, no step skipped (RUN), weights finite and within
# 6e-3 of the first REF's (2 x lr x steps: AdamW moves an element ~lr per step whatever its gradient)
cmp_runs() {
  python3 - "$T" "$@" <<'PY'
import glob, os, re, sys
import numpy as np
t, run, refs = sys.argv[1], sys.argv[2], sys.argv[3:]
def losses(n): return [float(x) for x in re.findall(r"^step \d+ loss (\S+)", open(f"{t}/{n}.log").read(), re.M)]
p = losses(run)
if len(p) != 3: sys.exit(f"losses {p}")
out, errs = [], []
for r in refs:
    q = losses(r)
    d = max(abs(a - b) for a, b in zip(p, q)) if len(q) == 3 else float("inf")
    out.append(f"vs {r} {d:.2g}")
    if d > 1e-3: errs.append(f"losses beyond 1e-3 of {r}")
skips = re.findall(r"skipped (\d+)", open(f"{t}/{run}.log").read())
if any(int(s) for s in skips): errs.append(f"skipped steps {skips}")
fs = sorted(glob.glob(f"{t}/{run}.w/*.npy"))
worst, nonfin = 0.0, 0
for f in fs:
    a, b = np.load(f), np.load(f"{t}/{refs[0]}.w/{os.path.basename(f)}")
    nonfin += int((~np.isfinite(a)).sum())
    worst = max(worst, float(np.abs(a.astype(np.float64) - b).max()))
if len(fs) != 29 or nonfin or worst > 6e-3: errs.append(f"weights: {len(fs)} files, {nonfin} not finite, within {worst:.2g}")
print(f"losses {' '.join(f'{x:.7f}' for x in p)} ({', '.join(out)}), {len(fs)} weights within {worst:.2g} of {refs[0]}"
      + ("; " + ", ".join(errs) if errs else ""))
sys.exit(1 if errs else 0)
PY
}
sums() { grep -o "\[stage [0-9], rank [0-9][^]]*\]: memory per rank: .*gradient sums [0-9]*" "$1" | sed 's/\]:.*gradient sums / /; s/.*\[//' | sort; }

# ---- (1) one program
build one32 --precision fp32
build one16 --precision fp16
if build one16g --precision fp16 --grad-dtype fp16; then
  if msg=$(cmp_runs one16g one32 one16); then ok "one program, fp16 gradients: $msg"; else bad "one program, fp16 gradients: $msg"; fi
fi

# ---- (2) pipelines, against the same pipeline with fp32 gradients
for c in 1f1b:4 dp:2; do
  IFS=: read -r SC B <<<"$c"
  a=(--precision fp16 --pipeline-stages 2 --microbatches "$B" --schedule 1f1b)
  [ "$SC" = dp ] && a+=(--gpus 4 --stage-devices 2,2)
  build p_${SC}_f32 "${a[@]}" && build p_${SC}_f16 "${a[@]}" --grad-dtype fp16 || continue
  if msg=$(cmp_runs p_${SC}_f16 one32 one16g); then ok "pp=2 $SC B=$B, fp16 gradients: $msg"
  else bad "pp=2 $SC B=$B, fp16 gradients: $msg"; fi
  s32=$(sums "$T/p_${SC}_f32.log") s16=$(sums "$T/p_${SC}_f16.log")
  if [ -n "$s16" ] && [ "$(echo "$s32" | awk '{print $1, $2, $NF / 2}')" = "$(echo "$s16" | awk '{print $1, $2, $NF}')" ]; then
    ok "pp=2 $SC, gradient sums per rank (stage, rank, bytes) fp16: $(echo $s16) = half of fp32's: $(echo $s32)"
  else bad "pp=2 $SC, gradient sums fp16 '$(echo $s16)' vs fp32 '$(echo $s32)'"; fi
done

# ---- (3) the overflow check on the fp16 sums
a=(--precision fp16 --pipeline-stages 2 --microbatches 4 --schedule 1f1b --loss-scale-init 1048576)
if build ov32 "${a[@]}" && build ov16 "${a[@]}" --grad-dtype fp16; then
  if msg=$(python3 - "$T/ov32.log" "$T/ov16.log" <<'PY'
import re, sys
def steps(p):
    # per stage: [(scale, skipped)] of the 3 steps (every stage's rank 0 prints the step line)
    return re.findall(r"^(?:\S+\[stage (\d)[^\]]*\]: )?step (\d+) loss \S+ scale (\d+) skipped (\d+)", open(p).read(), re.M)
a, b = steps(sys.argv[1]), steps(sys.argv[2])
sa = [(int(s), int(k)) for _, _, s, k in a]
sb = [(int(s), int(k)) for _, _, s, k in b]
msg = f"fp32 gradients (scale, skipped) per step {sa}; fp16 gradients {sb}"
if not sa or any(k for _, k in sa) or any(s != 1048576 for s, _ in sa): sys.exit(msg + ": the fp32 gradients overflowed")
if len(sb) < 3 or sb[0] != (524288, 1): sys.exit(msg + ": the fp16 sums' first step not skipped at 2^20")
print(msg)
PY
  ); then ok "loss scale 2^20: $msg"; else bad "loss scale 2^20: $msg"; fi
fi

# ---- (4) errors
for a in "--precision bf16 --grad-dtype fp16" "--grad-dtype fp16"; do
  "$BUILD/galvc" "$m" --batch 8 --seq 8 --target cpu --train $a -o "$T/e.mlir" >"$T/e.log" 2>&1
  rc=$?
  if [ $rc = 2 ] && [ "$(wc -l <"$T/e.log")" = 1 ] && grep -q "^galvc: error: --grad-dtype fp16: .*(give --train --precision fp16)" "$T/e.log"; then
    ok "$a: $(cat "$T/e.log")"
  else bad "$a: rc $rc: $(head -c 300 "$T/e.log")"; fi
done

echo "pipeline_grad_fp16: $pass passed, $fail failed"
[ $fail = 0 ]
