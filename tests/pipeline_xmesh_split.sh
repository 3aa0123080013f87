#!/usr/bin/env bash
# Crossing values kept split over the batch (docs/pipeline.md, "Cross-mesh
# transfers"): pp=2 x dp=2 (--strategy dp, stages of 2 devices each), GPT-2
# tiny (2 layers, hidden 32, vocab 64, batch 8 x seq 8, B = 2 microbatches of
# 4), under GALV_COMM_SYNC=1 and `timeout`. The sending stage's program
# returns its rows of the residual stream (no all-gather in it), the
# receiving stage takes its rows as its input (no all-gather after the
# receive) and each sending rank sends only its rows; gradients the same way
# back. Checked:
#   - inference logits == the single device (rtol 1e-4, atol 1e-5); training
#     (2 steps of SGD, lr 0.1, momentum 0.9; GPipe and 1F1B) losses and
#     weights == the single device (as tests/pipeline_xmesh.sh);
#   - per sending rank and direction: measured == planned, and == its rows,
#     computed here from the model's dims: microbatch x seq x hidden x 4 /
#     dp bytes per microbatch (x microbatches x steps), every sender alike;
#     the runtime reports the value kept split (1 kept split, 0 whole);
#   - the sending stage's inference program has no all_gather (before, it
#     gathered the value to return it whole);
#   - the fallback: stages of 2 and 4 devices (dp degrees differ) keep the
#     replicated path (0 kept split, 1 whole: tiles then an all-gather in
#     the receiving stage), logits == the single device.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
. "$SRC/tests/lib/rank_compare.sh"

xmesh_fixture

BATCH=8 SEQ=8 HIDDEN=32 B=2
# rows: LOG DIRS (forward / forward,gradients) RUNS (microbatches x steps) DP SPLIT (1: kept split, 0: whole)
rows() {
  python3 - "$@" "$((BATCH / B))" "$SEQ" "$HIDDEN" <<'PY'
import sys, re
log, dirs, runs, dp, split, mb, seq, hid = open(sys.argv[1]).read(), sys.argv[2].split(","), *map(int, sys.argv[3:])
pat = re.compile(r"\[stage (\d+), rank \d+(?:, stage rank \d+)?\]: cross-stage (\w+) bytes sent by this rank: (\d+) measured, "
                 r"(\d+) planned; by the stage: (\d+) planned, (\d+) naive \(\d+ microbatches\); values kept split over the "
                 r"batch (\d+), whole (\d+)")
whole = mb * seq * hid * 4  # the residual stream per microbatch, fp32: computed from the model's dims
want = whole // dp * runs if split else None  # kept split: each sender its rows, no more
out = []
for d in dirs:
    st = 0 if d == "forward" else 1
    got = [g for g in pat.findall(log) if int(g[0]) == st and g[1] == d]
    if len(got) != 2: sys.exit(f"{d}: {len(got)} byte reports from stage {st}, want 2")
    for _, _, meas, plan, splan, naive, ks, kw in got:
        meas, plan, splan, ks, kw = int(meas), int(plan), int(splan), int(ks), int(kw)
        if meas != plan: sys.exit(f"{d}: measured {meas} != planned {plan}")
        if (ks, kw) != ((1, 0) if split else (0, 1)): sys.exit(f"{d}: {ks} values kept split, {kw} whole")
        if splan != whole * runs: sys.exit(f"{d}: the stage plans {splan} bytes, the value is {whole * runs}")
        if want is not None and meas != want:
            sys.exit(f"{d}: a sender sent {meas} bytes, its rows are {want} (microbatch x seq x hidden x 4 / dp x runs)")
    out.append(f"{d} {got[0][2]} bytes per sender == planned" + (f" == its rows ({mb}x{seq}x{hid}x4/{dp} x {runs})" if split else ""))
print("; ".join(out))
PY
}

# inference, kept split (2,2) and the fallback (2,4: dp degrees differ)
for c in 2,2:1 2,4:0; do
  IFS=: read -r devs split <<<"$c"
  d="$T/inf-$devs" n=$(( ${devs%,*} + ${devs#*,} ))
  if ! timeout 600 "$BUILD/galvc" "$m" --batch $BATCH --seq $SEQ --pipeline-stages 2 --microbatches $B --gpus "$n" \
      --stage-devices "$devs" --strategy dp --target cpu -q -o "$d/" 2>"$T/err"; then
    bad "inference $devs: galvc: $(head -3 "$T/err")"
    continue
  fi
  if ! timeout 120 "$d/launch" --input "input_ids=$T/ids.npy" -o "$d/res" >"$T/out" 2>"$T/err"; then
    bad "inference $devs: run: $(grep -m3 -i error "$T/err" "$T/out")"
    continue
  fi
  if ! msg=$(same_outputs "$T/one/res" "$d/res"); then
    bad "inference $devs: $msg"
    continue
  fi
  if ! b=$(rows "$T/out" forward $B "${devs%,*}" "$split" 2>&1); then
    bad "inference $devs: $b"
    continue
  fi
  g=$(grep -c "galv_all_gather(" "$d/stage0/program.c")
  if [ "$split" = 1 ] && [ "$g" != 0 ]; then bad "inference $devs: the sending stage's program has $g all_gathers"; continue; fi
  if [ "$split" = 0 ] && [ "$g" = 0 ]; then bad "inference $devs: the replicated path's sender has no all_gather"; continue; fi
  ok "inference pp=2 dp, stages of $devs devices ($([ "$split" = 1 ] && echo "kept split" || echo "replicated: dp degrees differ")): $msg; $b; sender all_gathers $g"
done

for SC in gpipe 1f1b; do
  d="$T/tr-$SC"
  if ! timeout 600 "$BUILD/galvc" "$m" --batch $BATCH --seq $SEQ --train "${OPT[@]}" --pipeline-stages 2 --microbatches $B \
      --schedule "$SC" --gpus 4 --stage-devices 2,2 --strategy dp --target cpu -q -o "$d/" 2>"$T/err"; then
    bad "training $SC: galvc: $(head -3 "$T/err")"
    continue
  fi
  if ! timeout 120 "$d/launch" --batches "$T/b" --steps 2 -o "$d.w" >"$d.log" 2>"$T/err"; then
    bad "training $SC: run: $(grep -m3 -i error "$T/err" "$d.log")"
    continue
  fi
  if ! msg=$(same_training "$T/tone.log" "$d.log" "$T/tone.w" "$d.w"); then
    bad "training $SC: $msg"
    continue
  fi
  if b=$(rows "$d.log" forward,gradients $((B * 2)) 2 1 2>&1); then ok "training pp=2 x dp=2 $SC, kept split: $msg; $b"
  else bad "training $SC: $b"; fi
done
echo "pipeline_xmesh_split: $pass passed, $fail failed"
[ "$fail" = 0 ]
