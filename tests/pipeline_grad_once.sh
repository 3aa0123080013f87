#!/usr/bin/env bash
# Data-parallel gradients reduced once per step in pipeline stages (docs/pipeline.md, "Gradients reduced once per
# step"): without --pipeline-zero, a training stage over more than one rank leaves its parameter gradients unreduced
# over the ranks holding equal parameters (no all-reduce per microbatch inside the stage program); runtime/pipe.c sums
# the microbatches locally and all-reduces the step's sums once (galv_pipe_zero 4). On the pipeline_zero.sh model
# (GPT-2: 2 layers, hidden 32, vocab 64; batch 8 x seq 8, B = 4 microbatches, 2 AdamW steps, 1F1B): pp=2 x dp=2
# (--strategy dp, 4 ranks) and pp=2 x dp=2 x tp=2 (--mesh dp=2,tp=2 --strategy dp,tp, 8 ranks) print the single
# device's losses and leave its weights (rtol 1e-4, atol 1e-5); every rank's once-per-step all-reduce bytes = galvc's
# prediction x 2 steps; against the same pipeline with --pipeline-zero 1 (whose stage programs still all-reduce each
# microbatch's gradients) the stage programs' all-reduce bytes drop by B x the runtime's per-step all-reduce (within
# 10 %: the runtime's buffer is the parameters' span, 64-byte slots, padded to the ranks), i.e. the gradient
# reduction moves B times fewer bytes per step. Also --clip-grad-norm (the norm of the reduced sums) = the single
# device clipped. The tied model on pp=2 x dp=2 x tp=2 (its embedding split alike by both stages: its block left
# unreduced over dp, all-reduced once per step, then summed across the stages block by block) as the others.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
fail=0
bad() { echo "FAIL $*"; fail=1; }

. "$SRC/tests/lib/rank_compare.sh"
m="$T/gpt2t.onnx"
lm_model "$m" 32
lm_batches "$T/b" 8 8
# the tied-embedding model of the "tie" cases (its embedding held by both stages; the gradient the stage programs
# leave unreduced too, all-reduced once per step before the sum across the stages), on the single device
mt="$T/tie.onnx"
lm_model "$mt" 32 --tie-embeddings
single_program "$T/onet" "$mt" "--batches $T/b --steps 2" --input-shape input_ids=8x8 --train
CLIP=0.05
for v in one onec; do
  extra=()
  [ $v = onec ] && extra=(--clip-grad-norm $CLIP)
  timeout 300 "$BUILD/galvc" "$m" --input-shape input_ids=8x8 --train "${extra[@]}" --target cpu -q -o "$T/$v/" 2>"$T/err" ||
    { echo "FAIL single $v: $(cat "$T/err")"; exit 1; }
  timeout 120 "$T/$v/program" --batches "$T/b" --steps 2 -o "$T/$v.w" >"$T/$v.log" 2>"$T/err" ||
    { echo "FAIL single run $v: $(cat "$T/err")"; exit 1; }
done

# CASE = name:gpus:zero:strategy[:mesh]; zero 1: the reference (each microbatch's gradients all-reduced in the program)
for c in ${GALV_GRAD_ONCE_CASES:-dpz1:4:1:dp dp:4:0:dp dptpz1:8:1:dp,tp:dp=2,tp=2 dptp:8:0:dp,tp:dp=2,tp=2 dpclip:4:0:dp tiez1:4:1:dp tie:4:0:dp tietpz1:8:1:dp,tp:dp=2,tp=2 tietp:8:0:dp,tp:dp=2,tp=2}; do
  IFS=: read -r name gpus zero st mesh <<<"$c"
  d="$T/tr-$name"
  # equal cuts: the run and its ZeRO-1 reference hold the same stages (the stage DP's cuts follow the prices, which
  # differ between them on this tiny model), so their programs' collectives compare
  opts=(--gpus "$gpus" --strategy "$st" --stage-cuts equal)
  [ -n "$mesh" ] && opts+=(--mesh "$mesh")
  [ "$zero" = 1 ] && opts+=(--pipeline-zero 1)
  ra="$T/one.log" rw="$T/one.w"
  [[ $name == *clip ]] && opts+=(--clip-grad-norm $CLIP) ra="$T/onec.log" rw="$T/onec.w"
  mm=$m
  [[ $name == tie* ]] && mm=$mt ra="$T/onet.log" rw="$T/onet.w"
  if ! timeout 600 "$BUILD/galvc" "$mm" --batch 8 --seq 8 --train --pipeline-stages 2 --microbatches 4 --schedule 1f1b \
      "${opts[@]}" --target cpu -o "$d/" </dev/null >"$d.galvc" 2>&1; then
    bad "$name: galvc: $(grep -m3 error "$d.galvc")"
    continue
  fi
  if ! GALV_COMM_SYNC=1 timeout 120 "$d/launch" --batches "$T/b" --steps 2 -o "$d.w" </dev/null >"$d.log" 2>"$T/err"; then
    bad "$name: run: $(grep -m3 -i error "$T/err" "$d.log")"
    continue
  fi
  ref=none
  [ "$zero" = 0 ] && [[ $name != *clip ]] && ref="$T/tr-${name}z1.log"
  if msg=$(python3 - "$ra" "$d.log" "$rw" "$d.w" "$d.galvc" "$gpus" "$zero" "$ref" <<'PY'
import sys, os, re, numpy as np
la, lb, wa, wb, gl, gpus, zero, ref = sys.argv[1:9]
gpus, zero, B = int(gpus), int(zero), 4
def losses(p): return [float(x) for x in re.findall(r"^step \d+ loss (\S+)", open(p).read(), re.M)]
a, b = losses(la), losses(lb)
if len(a) != 2 or len(b) != 2 or not np.allclose(b, a, rtol=1e-4, atol=0): sys.exit(f"losses {b} != single device {a}")
worst = 0.0
for f in sorted(os.listdir(wa)):
    x, y = np.load(os.path.join(wa, f)), np.load(os.path.join(wb, f))
    if x.shape != y.shape or not np.allclose(y, x, rtol=1e-4, atol=1e-5): sys.exit(f"{f}: differs from the single device")
    worst = max(worst, float(np.abs(x - y).max()))
log, gtxt = open(lb).read(), open(gl).read()
once = {(int(s), int(r)): int(got) for s, r, got in re.findall(
    r"\[stage (\d), rank (\d+), stage rank \d+\]: gradients reduced once per step over 2 ranks: .*all-reduce (\d+) bytes sent in 2 steps", log)}
pred = {int(s): int(n) for s, n in re.findall(r"galvc: stage (\d): gradients reduced once per step over 2 ranks \(\d+ of \d+ "
                                              r"parameters' gradients left unreduced by the stage program\), all-reduce (\d+) bytes", gtxt)}
def coll(t):  # per (stage, rank): the stage programs' (all_reduce, all_gather) bytes in the 2 steps
    return {(int(s), int(r)): (int(x), int(y)) for s, r, x, y in re.findall(
        r"\[stage (\d), rank (\d+), stage rank \d+\]: stage collectives sent by this rank in 2 steps: all_reduce (\d+), "
        r"all_gather (\d+)", t)}
prog = coll(log)
if zero == 1:
    if once or pred: sys.exit("ZeRO-1: the gradients reduced once per step (expected: per microbatch in the program)")
    print(f"reference: stage programs' all_reduce {sorted(prog.items())}"); sys.exit(0)
# stage 0 leaves its gradients unreduced; a stage whose program computes every gradient whole (stage 1 under --strategy
# dp: its inputs gathered) has nothing to reduce (galvc says so) and no runtime all-reduce
whole = {int(s) for s in re.findall(r"galvc: stage (\d): every parameter gradient whole in the stage program", gtxt)}
if 0 not in pred or sorted(set(pred) | whole) != [0, 1] or set(pred) & whole:
    sys.exit(f"once-per-step all-reduce predicted for stages {sorted(pred)}, all gradients whole in {sorted(whole)}")
if sorted(once) != sorted(k for k in prog if k[0] in pred): sys.exit(f"once-per-step all-reduce on ranks {sorted(once)}")
for (s, r), got in once.items():
    if got != 2 * pred[s]: sys.exit(f"stage {s} rank {r}: all-reduce {got} bytes in 2 steps, predicted 2 x {pred[s]}")
extra = ""
if os.path.exists(ref):
    rprog = coll(open(ref).read())
    for k in prog:
        if k[0] in whole and rprog.get(k) != prog[k]: sys.exit(f"stage {k[0]} rank {k[1]}: collectives {prog[k]}, with ZeRO-1 {rprog.get(k)}")
    for k, got in once.items():
        # the per-microbatch gradient all-reduces the program no longer runs: B x the runtime's once-per-step one (within
        # 10 %; on dp x tp at least that: a replicated parameter's gradient, all-reduced over the 4 ranks per microbatch
        # before, 2 x 3/4 of its bytes, is now reduced over tp in the program, 2 x 1/2, and over dp once per step); the
        # program's all-gathers unchanged (a tp-split parameter's gradient stays its block: no gather)
        moved = rprog[k][0] - prog[k][0]
        if rprog[k][1] != prog[k][1]: sys.exit(f"stage {k[0]} rank {k[1]}: all_gather {prog[k][1]} bytes, with ZeRO-1 {rprog[k][1]}")
        if not 0.9 * B * got <= moved <= (1.1 if gpus == 4 else 2) * B * got:
            sys.exit(f"stage {k[0]} rank {k[1]}: the stage programs' all_reduce dropped by {moved} bytes, expected ~{B} x {got}")
        if sum(prog[k]) + got >= sum(rprog[k]):
            sys.exit(f"stage {k[0]} rank {k[1]}: {prog[k]} + {got} bytes, with the per-microbatch reduction {rprog[k]}")
    k = (0, 0)
    extra = (f"; stage 0 rank 0: program all_reduce {rprog[k][0]} -> {prog[k][0]} bytes (+ {once[k]} once per step, "
             f"{moved / once[k]:.2f} x fewer per step), all_gather {rprog[k][1]} -> {prog[k][1]}")
print(f"losses {b}, weights within {worst:.1e}; all-reduce once per step = predicted {pred} per rank per step{extra}")
PY
  ); then echo "ok $name: $msg"; else bad "$name: $msg"; fi
done
[ $fail = 0 ] && echo "PASS pipeline_grad_once"
exit $fail
