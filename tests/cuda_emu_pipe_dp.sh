#!/usr/bin/env bash
# Data-parallel pipeline stages on the CUDA target (docs/cuda-target.md, "Pipeline stages"; docs/pipeline.md,
# "Gradients reduced once per step", "ZeRO-1 inside stages", ZeRO-2): pp=2 x dp=2 (--gpus 4 --strategy dp, 4 ranks),
# tiny GPT-2 (tests/lib/rank_compare.sh's lm_model 32 / lm_batches 8 x 8), B = 4 microbatches, 1F1B, 2 AdamW steps.
# Each case is compiled twice, --target cuda (make emu per stage: program.cu and runtime/cuda/ over the CPU execution
# layer, NCCL over MPI; runtime/pipe.c through pipe_cuda.cu's device hooks) and --target cpu, and both are run:
#   dp    no ZeRO: the stage programs leave the dp gradients unreduced, the runtime sums the microbatches locally and
#         all-reduces the step's sums once (galv_pipe_zero 4);
#   z2    --pipeline-zero 2 (the step's sums reduce-scattered once, the optimizer state split: ZeRO-1's update and
#         all-gather);
# and, named in GALV_CUDA_PIPE_DP_CASES (default "dp z2 sg": each case is 4 builds, about 50 s on a loaded 2-core machine;
# e.g. GALV_CUDA_PIPE_DP_CASES="dp bf z1 z2 z2e" runs them all):
#   bf    dp with bf16 gradient sums (--precision bf16 --grad-dtype bf16): the once-per-step all-reduce in bf16;
#   z1    --pipeline-zero 1 (the optimizer state split, the gradients all-reduced per microbatch in the program);
#   z2e   --pipeline-zero 2 --zero-reduce per-microbatch (each microbatch's gradients reduce-scattered);
#   sg    (run by default) pp=2 x dp=2 x tp=2 on 8 ranks, 4 devices per node (--mesh dp=2,tp=2 --strategy dp,tp): the
#         crossing blocks scattered over the 2 tp ranks and gathered in place inside the receiving stage
#         (docs/pipeline.md, "Scattered over tp, gathered in place"), through the CUDA hooks and the staged backend.
# Checked per case: the CUDA program's losses and weights = the single-device CPU program's (fp32: losses rtol 1e-4,
# weights rtol 1e-4 / atol 1e-5; bf: losses within 1e-3, tests/cpu_bf16.sh's bound) and = the CPU target's
# pipeline's (fp32 as above; bf: losses within 1e-3); on every rank the bytes counted at the communicator equal the
# CPU run's: the runtime's once-per-step all-reduce / ZeRO reduce-scatter and all-gather, the stage programs' own
# collectives (all_reduce, all_gather, reduce_scatter, all_to_all) and the cross-stage bytes; the case's runtime
# reduction is there (dp, bf: stage 0's once-per-step all-reduce = galvc's prediction x 2 steps; bf: half of dp's
# bytes); with z1 run, dp against z1 (whose programs all-reduce each microbatch): stage 0's programs' all_reduce bytes
# drop by B x the runtime's per-step all-reduce (within 10 %: the runtime's buffer is the parameters' span, padded).
# Usage: cuda_emu_pipe_dp.sh BUILD_DIR
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
. "$SRC/tests/lib/rank_compare.sh"
fail=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fail=1; }
t0=$(date +%s)

m="$T/g.onnx"
lm_model "$m" 32
lm_batches "$T/b" 8 8
single_program "$T/one" "$m" "--batches $T/b --steps 2" --input-shape input_ids=8x8 --train

# NAME TARGET GALVC-ARGS...: the pipeline compiled and built in $T/NAME-TARGET/, run 2 steps (log, weights)
pipe() {
  local n=$1 tg=$2 d="$T/$1-$2" s
  shift 2
  local mesh=(--gpus 4 --strategy dp) # sg: its own (the case's arguments)
  [ "$n" = sg ] && mesh=()
  timeout 300 nice "$BUILD/galvc" "$m" --batch 8 --seq 8 --train --pipeline-stages 2 --microbatches 4 --schedule 1f1b \
    "${mesh[@]}" "$@" --target "$tg" --no-build -o "$d/" </dev/null >"$d.gen" 2>&1 || { echo "galvc: $(grep -m3 error "$d.gen")"; return 1; }
  local goal=all
  [ "$tg" = cuda ] && goal=emu
  nice make -s -C "$d/stage0" $goal >"$d.make0" 2>&1 & # the two stages built side by side
  nice make -s -C "$d/stage1" $goal >"$d.make1" 2>&1 || { wait; echo "make $goal stage1: $(tail -n 5 "$d.make1")"; return 1; }
  wait $! || { echo "make $goal stage0: $(tail -n 5 "$d.make0")"; return 1; }
  local prog=program
  [ "$tg" = cuda ] && prog=program-emu
  GALV_PROGRAM=$prog GALV_COMM_SYNC=1 timeout 120 "$d/launch" --batches "$T/b" --steps 2 -o "$d.w" </dev/null >"$d.log" 2>&1 ||
    { echo "run: $(grep -m3 -i error "$d.log")"; return 1; }
}

for c in ${GALV_CUDA_PIPE_DP_CASES:-dp z2 sg}; do
  case $c in
  dp) a=() ;;
  bf) a=(--precision bf16 --grad-dtype bf16) ;;
  z1) a=(--pipeline-zero 1) ;;
  z2) a=(--pipeline-zero 2 --zero-reduce once) ;;
  z2e) a=(--pipeline-zero 2 --zero-reduce per-microbatch) ;;
  sg) a=(--gpus 8 --gpus-per-node 4 --mesh dp=2,tp=2 --strategy dp,tp) ;;
  *) bad "unknown case $c"; continue ;;
  esac
  if ! r=$(pipe "$c" cuda "${a[@]}") || ! r=$(pipe "$c" cpu "${a[@]}"); then
    bad "$c: $r"
    continue
  fi
  if [ "$c" = bf ]; then
    r1=$(python3 - "$T/one.log" "$T/$c-cpu.log" "$T/$c-cuda.log" <<'PY'
import re, sys
def losses(p): return [float(x) for x in re.findall(r"^step \d+ loss (\S+)", open(p).read(), re.M)]
one, cpu, cu = (losses(p) for p in sys.argv[1:4])
if len(cu) != 2 or len(cpu) != 2: sys.exit(f"losses {cu}, cpu pipeline {cpu}")
for ref, what in ((one, "the fp32 single device"), (cpu, "the cpu target's bf16 pipeline")):
    if any(abs(x - y) > 1e-3 * abs(y) for x, y in zip(cu, ref)): sys.exit(f"losses {cu} vs {what} {ref}: beyond 1e-3")
print(f"losses {cu} within 1e-3 of the fp32 single device {one} and the cpu pipeline {cpu}")
PY
    ) && ok "$c (cuda, bf16 sums): $r1" || bad "$c: $r1"
  else
    r1=$(same_training "$T/one.log" "$T/$c-cuda.log" "$T/one.w" "$T/$c-cuda.w") && ok "$c (cuda) vs single device: $r1" ||
      bad "$c (cuda) vs single device: $r1"
    r1=$(same_training "$T/$c-cpu.log" "$T/$c-cuda.log" "$T/$c-cpu.w" "$T/$c-cuda.w") && ok "$c (cuda) vs cpu pipeline: $r1" ||
      bad "$c (cuda) vs cpu pipeline: $r1"
  fi
  if r1=$(python3 - "$c" "$T" <<'PY'
import re, sys
c, t = sys.argv[1], sys.argv[2]
# per (stage, rank): the lines of the bytes the communicator counted (the runtime's reductions, the stage programs'
# collectives, the cross-stage transfers)
pat = re.compile(r"^\S+\[stage (\d), rank (\d+), stage rank \d+\]: (.*(?:bytes sent in 2 steps|stage collectives sent|"
                 r"cross-stage).*)$", re.M)
def lines(p):
    d = {}
    for s, r, txt in pat.findall(open(p).read()):
        d.setdefault((int(s), int(r)), []).append(txt)
    return {k: sorted(v) for k, v in d.items()}
cu, cpu = lines(f"{t}/{c}-cuda.log"), lines(f"{t}/{c}-cpu.log")
ranks = [(0, 0), (0, 1), (0, 2), (0, 3), (1, 4), (1, 5), (1, 6), (1, 7)] if c == "sg" else [(0, 0), (0, 1), (1, 2), (1, 3)]
if sorted(cu) != ranks or sorted(cpu) != sorted(cu): sys.exit(f"ranks {sorted(cu)}, cpu {sorted(cpu)}")
for k in cu:
    if cu[k] != cpu[k]: sys.exit(f"stage {k[0]} rank {k[1]}: cuda {cu[k]} != cpu {cpu[k]}")
want = {"dp": "gradients reduced once per step over 2 ranks", "bf": "gradients reduced once per step over 2 ranks",
        "z1": "ZeRO-1 over 2 ranks", "z2": "ZeRO-2 over 2 ranks: gradient sums",
        "z2e": "ZeRO-2 over 2 ranks: each microbatch's gradients reduce-scattered",
        "sg": "scattered over the ranks of a block 1"}[c]
for r in (0, 1):
    if not any(want in x for x in cu[(0, r)]): sys.exit(f"stage 0 rank {r}: no '{want}' line")
def once(lg):
    return {k: int(re.search(r"all-reduce (\d+) bytes sent in 2 steps", x).group(1)) for k, v in lg.items() for x in v
            if "gradients reduced once per step" in x}
msg = ""
if c in ("dp", "bf"):
    g = open(f"{t}/{c}-cuda.gen").read()
    pred = {int(s): int(n) for s, n in re.findall(r"galvc: stage (\d): gradients reduced once per step over 2 ranks \(\d+ of \d+ "
                                                  r"parameters' gradients left unreduced by the stage program\), all-reduce (\d+) bytes", g)}
    o = once(cu)
    if 0 not in pred or any(o.get((0, r)) != 2 * pred[0] for r in (0, 1)):
        sys.exit(f"once-per-step all-reduce {o}, galvc predicted {pred} per step")
    msg = f"; stage 0 all-reduce once per step {o[(0, 0)]} bytes in 2 steps = 2 x galvc's {pred[0]}"
print(f"{sum(len(v) for v in cu.values())} byte counts over the {len(cu)} ranks = the cpu run's{msg}")
PY
  ); then ok "$c: bytes at the communicator: $r1"; else bad "$c: bytes: $r1"; fi
  echo "     $c: $(($(date +%s) - t0)) s"
done

# the reduction moved out of the programs: dp's stage 0 programs all-reduce B x the runtime's per-step bytes fewer than
# z1's (which all-reduce each microbatch's gradients); bf16 sums: half of dp's once-per-step bytes
if [ -f "$T/dp-cuda.log" ] && { [ -f "$T/z1-cuda.log" ] || [ -f "$T/bf-cuda.log" ]; }; then
  if r=$(python3 - "$T" <<'PY'
import os, re, sys
t, B = sys.argv[1], 4
def get(p, what):
    return {int(r): int(n) for r, n in re.findall(r"\[stage 0, rank (\d+), stage rank \d+\]: " + what, open(p).read())}
prog = lambda c: get(f"{t}/{c}-cuda.log", r"stage collectives sent by this rank in 2 steps: all_reduce (\d+)")
once = lambda c: get(f"{t}/{c}-cuda.log", r"gradients reduced once per step over 2 ranks: .*all-reduce (\d+) bytes")
o, out = once("dp"), []
if os.path.exists(f"{t}/z1-cuda.log"):
    dp, z1 = prog("dp"), prog("z1")
    for r in (0, 1):
        moved = z1[r] - dp[r]
        if not 0.9 * B * o[r] <= moved <= 1.1 * B * o[r]:
            sys.exit(f"rank {r}: programs' all_reduce {z1[r]} (z1) -> {dp[r]} (dp), runtime {o[r]}")
        out.append(f"stage 0 rank {r}: programs' all_reduce with ZeRO-1 {z1[r]} -> {dp[r]} bytes (+ {o[r]} once per step, "
                   f"{moved / o[r]:.2f} x fewer)")
if os.path.exists(f"{t}/bf-cuda.log"):
    b = once("bf")
    if any(2 * b[r] != o[r] for r in (0, 1)): sys.exit(f"bf16 once-per-step all-reduce {b}, fp32 {o}")
    out.append(f"bf16 sums' once-per-step all-reduce {b[0]} bytes = half of fp32's {o[0]}")
print("; ".join(out))
PY
  ); then ok "$r"; else bad "per-microbatch vs once per step: $r"; fi
fi
echo "     total: $(($(date +%s) - t0)) s"
[ $fail = 0 ] && echo "PASS cuda_emu_pipe_dp"
exit $fail
