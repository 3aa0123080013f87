#!/usr/bin/env bash
# --clip-grad-norm X (torch's clip_grad_norm_ over every trained parameter,
# before the update), tiny GPT-2 (2 layers, hidden 32, vocab 64), 3 SGD
# steps (lr 0.1, momentum 0.9: the update is the clipped gradient itself)
# over 3 batches of 4 x 8:
#   single device = torch 1.13 with clip_grad_norm_(params, 0.5): losses
#     within 1e-4 relative, weights within 1e-4; torch's norm exceeds 0.5 at
#     every step (the clip bites) and the unclipped weights differ;
#   2 ranks tp, 2 ranks dp, 4 ranks zero, 4 ranks dp,tp = the single-device
#     clipped run (the norm is one global expression: sharded gradients'
#     squares are partial sums all-reduced once, replicated ones counted
#     once), and their bytes counted = predicted (the norm's all-reduces;
#     the program checks the bytes it hands to MPI against the planner's
#     prediction from the global program);
#   pipelines (the stages' runtime optimizer: one global norm over every
#     stage, each parameter counted once): pp=2, pp=2 x tp=2, pp=2 x dp=2
#     (1F1B, 2 microbatches), and pp=2 and pp=2 x tp=2 with tied embeddings
#     (wte held by both stages; under tp split alike, its gradient summed
#     block by block) = the single-device clipped run of the same model; an
#     unclipped pp=2 run differs;
#   bad input: --clip-grad-norm 0 / -1 / x, without --train: one error
#     line each.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
TORCH_PY=/usr/bin/python3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
require_torch "$TORCH_PY"
m=$T/gpt2.onnx
python3 "$SRC/examples/make_model.py" gpt2 -o "$m" --layers 2 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null ||
  { echo "FAIL make_model"; exit 1; }
python3 "$SRC/tests/train/onnx_dump.py" "$m" "$T/dump"
python3 -c "
import numpy as np, os
r = np.random.RandomState(5)
os.makedirs('$T/b')
np.save('$T/b/input_ids.npy', r.randint(0, 64, (3, 4, 8)).astype(np.int64))
np.save('$T/b/labels.npy', r.randint(0, 64, (3, 4, 8)).astype(np.int64))"
SGD=(--optimizer sgd --lr 0.1 --momentum 0.9 --weight-decay 0)
# build NAME GALVC_OPTIONS...; run NAME: 3 steps -> $T/NAME.log, $T/NAME.w
build() {
  local n=$1; shift
  timeout 300 "$BUILD/galvc" "$m" --batch 4 --seq 8 --train "${SGD[@]}" "$@" --target cpu -q -o "$T/$n/" 2>"$T/$n.err" ||
    { bad "$n: galvc $*: $(head -3 "$T/$n.err")"; return 1; }
}
run() {
  local n=$1 exe=program stats=--comm-stats
  [ -x "$T/$n/launch" ] && exe=launch
  [ -d "$T/$n/stage0" ] && stats= # a pipeline's stages check their own transfers
  timeout 300 "$T/$n/$exe" --batches "$T/b" --steps 3 -o "$T/$n.w" $stats </dev/null >"$T/$n.log" 2>"$T/$n.err" ||
    { bad "$n: run: $(grep -m3 error "$T/$n.err")"; return 1; }
}
same() { # REF RUN: losses and weights
  python3 - "$T" "$1" "$2" "$SRC/tests/lib" <<'PY'
import sys
sys.path.insert(0, sys.argv[4])
from same_training import check
t, a, b = sys.argv[1:4]
print(check(f"{t}/{a}.log", f"{t}/{b}.log", f"{t}/{a}.w", f"{t}/{b}.w"))
PY
}

if build clip --clip-grad-norm 0.5 && run clip && build noclip && run noclip; then
  GALV_TORCH_CLIP=0.5 "$TORCH_PY" "$SRC/tests/train/torch_train.py" "$T/dump" "$T/b/input_ids.npy" "$T/b/labels.npy" 3 \
    "$T/torch.w" sgd 0.1 0 0.9 0.999 1e-8 0.9 >"$T/torch.log"
  if r=$("$TORCH_PY" "$SRC/tests/train/compare.py" "$T/clip.log" "$T/torch.log" "$T/clip.w" "$T/torch.w" 1e-4 1e-4 2>&1); then
    ok "single device = torch clip_grad_norm_(0.5): $(tail -1 <<<"$r")"
  else bad "single device vs torch: $r"; fi
  norms=$(sed -n 's/^grad norm at step [0-9]*: //p' "$T/torch.log" | tr '\n' ' ')
  if python3 -c "import sys; n = [float(x) for x in sys.argv[1:]]; sys.exit(0 if len(n) == 3 and min(n) > 0.5 else 1)" $norms; then
    ok "the clip bites: torch's norms $norms> 0.5"
  else bad "torch's gradient norms '$norms' do not all exceed 0.5: the test would not see the clip"; fi
  if same clip noclip >/dev/null 2>&1; then bad "the unclipped run equals the clipped one"
  else ok "the unclipped weights differ"; fi
fi

for c in ${GALV_CLIP_CASES:-tp:2 dp:2 zero:4 dp,tp:4}; do
  s=${c%:*} n=${c#*:} d="clip-$s-$n"
  mesh=()
  [ "$s" = dp,tp ] && mesh=(--mesh dp=2,tp=2)
  build "$d" --clip-grad-norm 0.5 --gpus "$n" --strategy "$s" "${mesh[@]}" || continue
  run "$d" || continue
  if ! grep -q "(predicted per run: .*) from the global program$" "$T/$d.log"; then
    bad "$n ranks $s: the program's byte check is not against the planner's global prediction: $(grep -m1 'predicted per run' "$T/$d.log")"
  elif r=$(same clip "$d" 2>&1); then
    ok "$n ranks $s = single device: $r; $(grep -m1 -o 'all_reduce [0-9]*, all_gather [0-9]*, reduce_scatter [0-9]*' "$T/$d.log")"
  else bad "$n ranks $s vs single device: $r"; fi
done

# pipelines: the runtime's optimizer clips by the norm over every stage
PP=(--pipeline-stages 2 --microbatches 2 --schedule 1f1b)
for c in ${GALV_CLIP_PIPE_CASES:-pp:2 tp:4 dp:4}; do
  s=${c%:*} n=${c#*:} d="clip-pp2-$s-$n"
  strat=()
  [ "$s" != pp ] && strat=(--gpus "$n" --strategy "$s")
  build "$d" --clip-grad-norm 0.5 "${PP[@]}" "${strat[@]}" || continue
  run "$d" || continue
  if r=$(same clip "$d" 2>&1); then ok "pp=2${strat:+ x $s=2} ($n ranks) = single device: $r"
  else bad "pp=2${strat:+ x $s=2} vs single device: $r"; fi
done
if build noclip-pp2 "${PP[@]}" && run noclip-pp2; then
  if same noclip noclip-pp2 >/dev/null 2>&1 && ! same clip noclip-pp2 >/dev/null 2>&1; then
    ok "unclipped pp=2 = the unclipped single device, not the clipped one"
  else bad "unclipped pp=2: $(same noclip noclip-pp2 2>&1)"; fi
fi
# tied embeddings: wte in the first and the last stage, its gradient summed across them and counted once
mt=$T/gpt2-tied.onnx
python3 "$SRC/examples/make_model.py" gpt2 -o "$mt" --layers 2 --hidden 32 --heads 4 --vocab 64 --tie-embeddings --no-verify \
  >/dev/null || bad "make_model --tie-embeddings"
if m=$mt build tied --clip-grad-norm 0.5 && run tied && m=$mt build tied-pp2 --clip-grad-norm 0.5 "${PP[@]}" && run tied-pp2; then
  if grep -q 'shared parameters: 1 held' "$T/tied-pp2.log" && r=$(same tied tied-pp2 2>&1); then
    ok "tied embeddings, pp=2 = single device: $r"
  else bad "tied embeddings, pp=2 vs single device: $(same tied tied-pp2 2>&1); $(grep -m1 'shared parameters' "$T/tied-pp2.log")"; fi
  # pp=2 x tp=2: the embedding split alike by both stages, its gradient summed block by block, each block counted once
  if m=$mt build tied-pp2-tp --clip-grad-norm 0.5 "${PP[@]}" --gpus 4 --strategy tp && run tied-pp2-tp; then
    if grep -q 'shared parameters: 1 held' "$T/tied-pp2-tp.log" && grep -q 'gradient sums sent by this rank: 12288 bytes' "$T/tied-pp2-tp.log" &&
      r=$(same tied tied-pp2-tp 2>&1); then
      ok "tied embeddings, pp=2 x tp=2 (summed block by block) = single device: $r"
    else bad "tied embeddings, pp=2 x tp=2 vs single device: $(same tied tied-pp2-tp 2>&1); $(grep -m1 'shared parameters' "$T/tied-pp2-tp.log")"; fi
  fi
fi

# bad input
for a in "--clip-grad-norm 0 --train" "--clip-grad-norm -1 --train" "--clip-grad-norm x --train" "--clip-grad-norm 1"; do
  # shellcheck disable=SC2086
  out=$("$BUILD/galvc" "$m" --batch 4 --seq 8 $a --target cpu -q -o "$T/bad/" 2>&1 </dev/null); rc=$?
  if [ "$rc" != 0 ] && [ "$(grep -c 'error:' <<<"$out")" = 1 ] && [ "$(wc -l <<<"$out")" = 1 ]; then ok "$a: $out"
  else bad "$a: exit $rc: $out"; fi
done
echo "train_clip: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
