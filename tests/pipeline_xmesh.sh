#!/usr/bin/env bash
# Cross-mesh transfers between pipeline stages of several devices
# (docs/pipeline.md, "Cross-mesh transfers"): every value crossing stages
# moves as the tiles of planner/cross_mesh.c's plan, each byte once between
# the stages, then an all-gather inside the receiving stage. On GPT-2 tiny
# (2 layers, hidden 32, vocab 64, batch 8 x seq 8, B = 2), under
# GALV_COMM_SYNC=1 (synchronous sends) and `timeout`:
#   inference pp=2 x tp=2, pp=2 x dp=2 and stages of 1 and 4 devices
#   (--stage-devices 1,4, B = 4: the microbatch of 2 does not split 4 ways,
#   so the tiles cut the sequence dim: packed, staged and gathered out of
#   place): logits equal the single device (rtol 1e-4, atol 1e-5);
#   training (2 steps of SGD, lr 0.1, momentum 0.9: the weights move by the
#   gradients themselves, so a misplaced tile shows; AdamW's first steps
#   amplify reduction-order noise of near-zero gradients, eps 1e-8) pp=2 x
#   tp=2 1F1B, pp=2 x dp=2 GPipe and stages of 1 and 2 devices 1F1B (the
#   gradients from 2 ranks to 1: each sends half): the single device's
#   losses and weights;
# and per sending stage and direction (forward values, gradients): the bytes
# the communicator counted (summed over the stage's ranks, each rank equal
# to its share of the plan, the same for every sender) == the plan ==
# naive / k, naive = every receiving rank gets the whole value, k = the
# receiving stage's devices; and, independently of the plan's tables
# (planner/cross_mesh.c, which the runtime's planned and naive figures and
# its sends all come from), the stage's bytes per direction equal the one
# value GPT-2 carries across its cut, the residual stream, computed here
# from the model's dims: batch x seq x hidden x 4 (fp32) = 8192 bytes per
# step whatever B, the strategy or the stages' devices (the communicator
# counts at the MPI boundary, runtime/comm_mpi.c).
# Bad input: --stage-devices not summing to --gpus, or not one per stage.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
. "$SRC/tests/lib/rank_compare.sh"

xmesh_fixture

# bytes: LOG DEVS (e.g. 2,1) DIRS (forward / forward,gradients) STEPS
RESIDUAL=$((8 * 8 * 32 * 4)) # batch x seq x hidden x fp32: the residual stream crossing the cut, per step
bytes_check() {
  python3 - "$@" "$RESIDUAL" <<'PY'
import sys, re
log, devs, dirs = open(sys.argv[1]).read(), [int(x) for x in sys.argv[2].split(",")], sys.argv[3].split(",")
want = int(sys.argv[4]) * int(sys.argv[5])  # steps x the residual stream's bytes: hand-computed, not from the plan
pat = re.compile(r"\[stage (\d+), rank (\d+)(?:, stage rank \d+)?\]: cross-stage (\w+) bytes sent by this rank: (\d+) measured, "
                 r"(\d+) planned; by the stage: (\d+) planned, (\d+) naive")
seen = {}
for st, rank, d, meas, plan, splan, snaive in pat.findall(log):
    st, meas, plan, splan, snaive = int(st), int(meas), int(plan), int(splan), int(snaive)
    if meas != plan: sys.exit(f"stage {st} rank {rank} {d}: measured {meas} != planned {plan}")
    e = seen.setdefault((st, d), [0, 0, splan, snaive, []])
    e[0] += meas; e[1] += 1; e[4].append(meas)
    if (e[2], e[3]) != (splan, snaive): sys.exit(f"stage {st} {d}: ranks disagree on the stage's plan")
out = []
for d in dirs:
    st = 0 if d == "forward" else len(devs) - 1
    peer = st + 1 if d == "forward" else st - 1
    if (st, d) not in seen: sys.exit(f"no {d} byte report from stage {st}")
    meas, nranks, splan, snaive, per = seen[(st, d)]
    if nranks != devs[st]: sys.exit(f"stage {st} {d}: {nranks} ranks reported, the stage has {devs[st]}")
    if meas != splan or splan <= 0: sys.exit(f"stage {st} {d}: measured {meas} != planned {splan}")
    if splan * devs[peer] != snaive: sys.exit(f"stage {st} {d}: planned {splan} x {devs[peer]} receivers != naive {snaive}")
    if min(per) != max(per): sys.exit(f"stage {st} {d}: senders unbalanced, {per} bytes per rank")
    if meas != want: sys.exit(f"stage {st} {d}: measured {meas} bytes, the residual stream is {want} (batch x seq x hidden x 4 x steps)")
    out.append(f"{d} {meas} measured == planned == batch x seq x hidden x 4 x steps ({per[0]} per sender), naive {snaive} = {devs[peer]} x")
print("; ".join(out))
PY
}

for c in ${GALV_PIPE_XMESH_INFER:-tp:2,2:2 dp:2,2:2 tp:1,4:4}; do
  IFS=: read -r st devs B <<<"$c"
  d="$T/inf-$st-$devs" n=$(( ${devs%,*} + ${devs#*,} ))
  if ! timeout 600 "$BUILD/galvc" "$m" --batch 8 --seq 8 --pipeline-stages 2 --microbatches "$B" --gpus "$n" --stage-devices "$devs" \
      --strategy "$st" --target cpu -q -o "$d/" 2>"$T/err"; then
    bad "inference $st $devs: galvc: $(head -3 "$T/err")"
    continue
  fi
  if ! stage_ranks "$d/launch" "${devs%,*}" "${devs#*,}"; then
    bad "inference $st $devs: launch is not -np ${devs%,*} : -np ${devs#*,}"
    continue
  fi
  if ! timeout 120 "$d/launch" --input "input_ids=$T/ids.npy" -o "$d/res" >"$T/out" 2>"$T/err"; then
    bad "inference $st $devs: run: $(grep -m3 -i error "$T/err" "$T/out")"
    continue
  fi
  if ! msg=$(same_outputs "$T/one/res" "$d/res"); then
    bad "inference $st $devs: $msg"
    continue
  fi
  if b=$(bytes_check "$T/out" "$devs" forward 1 2>&1); then ok "inference pp=2 $st, stages of $devs devices, B=$B: $msg; $b"
  else bad "inference $st $devs: $b"; fi
done

for c in ${GALV_PIPE_XMESH_TRAIN:-tp:2,2:1f1b dp:2,2:gpipe tp:1,2:1f1b}; do
  IFS=: read -r st devs SC <<<"$c"
  d="$T/tr-$st-$devs" n=$(( ${devs%,*} + ${devs#*,} ))
  if ! timeout 600 "$BUILD/galvc" "$m" --batch 8 --seq 8 --train "${OPT[@]}" --pipeline-stages 2 --microbatches 2 --schedule "$SC" \
      --gpus "$n" --stage-devices "$devs" --strategy "$st" --target cpu -q -o "$d/" 2>"$T/err"; then
    bad "training $st $devs $SC: galvc: $(head -3 "$T/err")"
    continue
  fi
  if ! timeout 120 "$d/launch" --batches "$T/b" --steps 2 -o "$d.w" >"$d.log" 2>"$T/err"; then
    bad "training $st $devs $SC: run: $(grep -m3 -i error "$T/err" "$d.log")"
    continue
  fi
  if ! msg=$(same_training "$T/tone.log" "$d.log" "$T/tone.w" "$d.w"); then
    bad "training $st $devs $SC: $msg"
    continue
  fi
  if b=$(bytes_check "$d.log" "$devs" forward,gradients 2 2>&1); then ok "training pp=2 $st $SC, stages of $devs devices: $msg; $b"
  else bad "training $st $devs $SC: $b"; fi
done

# bad input: one error line each
one_line() { # NAME GREP ARGS...
  local name=$1 pat=$2
  shift 2
  if timeout 120 "$BUILD/galvc" "$m" --batch 8 --seq 8 --pipeline-stages 2 --target cpu -q -o "$T/bad/" "$@" >/dev/null 2>"$T/err"; then
    bad "$name: succeeded"
  elif [ "$(wc -l <"$T/err")" = 1 ] && grep -q -- "$pat" "$T/err"; then
    ok "$name: $(cat "$T/err")"
  else
    bad "$name: $(head -3 "$T/err")"
  fi
}
one_line "--stage-devices 2,1 with --gpus 4" "3 devices in all, but --gpus is 4" --gpus 4 --stage-devices 2,1 --strategy tp
one_line "--stage-devices 1,1,1 with 2 stages" "needs a fixed --pipeline-stages with as many" --stage-devices 1,1,1
one_line "--stage-devices 2,x" "expected one positive device count per stage" --stage-devices 2,x --strategy tp
echo "pipeline_xmesh: $pass passed, $fail failed"
[ "$fail" = 0 ]
