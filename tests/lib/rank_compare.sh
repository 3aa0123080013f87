# Sourced by the tests that compile a model for several MPI ranks (or
# another target), run it and compare it with the single-device program
# (tests/pipeline_tp.sh, pipeline_xmesh.sh, pipeline_grad_split.sh,
# pipeline_recompute_layers.sh, pipeline_dp_one_sample.sh, cuda_emu_fattn.sh):
# the scaffolding they each repeated. Needs $BUILD, $SRC and $T.
#   single_program DIR MODEL RUNARGS GALVC-ARGS..: the single-device program in
#       DIR/ (galvc MODEL GALVC-ARGS --target cpu -q) run once with RUNARGS
#       (one word list, e.g. "--input input_ids=FILE"), its outputs in DIR/res;
#       training (--train among GALVC-ARGS): RUNARGS the run's arguments, e.g.
#       "--batches DIR --steps 2", its weights in DIR.w and its log DIR.log.
#       Every comparison needs it: a failure ends the script (FAIL, exit 1).
#   stage_ranks LAUNCH N0 N1: LAUNCH (a pipeline's out/launch) starts -np N0
#       ranks of stage 0 and -np N1 of stage 1.
#   same_outputs REF DIR: every output REF/NAME.npy equals DIR/NAME.npy within
#       rtol 1e-4, atol 1e-5 (prints the largest difference; else one line
#       naming the output, status 1).
#   same_training REF_LOG LOG REF_W W [ATOL [RTOL [LOSS_RTOL]]]:
#       tests/lib/same_training.py's check (the losses rtol LOSS_RTOL, default
#       1e-4; every weight rtol RTOL / atol ATOL, default 1e-4 / 1e-5): its
#       summary, else the first difference and status 1.
#   lm_batches DIR B S [SEED]: DIR/input_ids.npy and DIR/labels.npy, 2 steps of
#       B x S tokens of the tiny LMs' vocabulary 64 (numpy RandomState(SEED),
#       default 0: the ids drawn first); a failure ends the script.
#   lm_model FILE HIDDEN [MAKE-MODEL-ARGS..]: a GPT-2 of 2 layers, HIDDEN wide,
#       4 heads, vocabulary 64 (examples/make_model.py, e.g. --tie-embeddings;
#       tests/lib/tiny_lms.sh: HIDDEN 32); a failure ends the script.

single_program() {
  local d=$1 model=$2 run=$3
  shift 3
  timeout 300 "$BUILD/galvc" "$model" "$@" --target cpu -q -o "$d/" 2>"$T/err" </dev/null ||
    { echo "FAIL single device ($d): $(cat "$T/err")"; exit 1; }
  local train=0 a
  for a in "$@"; do [ "$a" = --train ] && train=1; done
  if [ $train = 1 ]; then
    # shellcheck disable=SC2086
    timeout 120 "$d/program" $run -o "$d.w" >"$d.log" 2>"$T/err" </dev/null ||
      { echo "FAIL single device run ($d): $(cat "$T/err")"; exit 1; }
  else
    # shellcheck disable=SC2086
    timeout 60 "$d/program" $run -o "$d/res" >/dev/null 2>"$T/err" </dev/null ||
      { echo "FAIL single device run ($d): $(cat "$T/err")"; exit 1; }
  fi
}

stage_ranks() {
  grep -q -- "-np $2 .*stage0/program.* : -np $3 .*stage1/program" "$1"
}

same_outputs() {
  python3 - "$1" "$2" 2>&1 <<'PY'
import sys, os, numpy as np
a, b = sys.argv[1], sys.argv[2]
worst = 0.0
for f in sorted(os.listdir(a)):
    if not os.path.exists(os.path.join(b, f)): sys.exit(f"no output {f}")
    x, y = np.load(os.path.join(a, f)), np.load(os.path.join(b, f))
    if x.shape != y.shape or not np.allclose(y, x, rtol=1e-4, atol=1e-5):
        sys.exit(f"{f}: max abs diff {np.abs(x.astype(np.float64) - y).max() if x.shape == y.shape else 'shape ' + str(y.shape)}")
    worst = max(worst, float(np.abs(x.astype(np.float64) - y).max()))
print(f"logits == single device (max abs diff {worst:.2g})")
PY
}

same_training() {
  python3 - "$SRC/tests/lib" "$@" 2>&1 <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from same_training import check
t = [float(x) for x in sys.argv[6:9]]
print(check(*sys.argv[2:6], **dict(zip(("atol", "rtol", "loss_rtol"), t))))
PY
}

lm_batches() {
  python3 - "$1" "$2" "$3" "${4:-0}" <<'PY' || { echo "FAIL batches"; exit 1; }
import numpy as np, os, sys
d, B, S, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
r = np.random.RandomState(seed)
os.makedirs(d)
np.save(d + "/input_ids.npy", r.randint(0, 64, (2, B, S)).astype(np.int64))
np.save(d + "/labels.npy", r.randint(0, 64, (2, B, S)).astype(np.int64))
PY
}

lm_model() {
  local f=$1 h=$2
  shift 2
  python3 "$SRC/examples/make_model.py" gpt2 -o "$f" --layers 2 --hidden "$h" --heads 4 --vocab 64 "$@" --no-verify >/dev/null ||
    { echo "FAIL make_model"; exit 1; }
}

# The cross-mesh tests' fixture (pipeline_xmesh.sh, pipeline_xmesh_split.sh): GPT-2 tiny (2 layers, hidden 32,
# vocab 64) at $T/gpt2.onnx, inputs $T/ids.npy (8 x 8) and two batches in $T/b, and the single device's inference
# ($T/one) and 2 SGD training steps ($T/tone) to compare with; OPT holds the optimizer flags.
xmesh_fixture() {
  m="$T/gpt2.onnx"
  lm_model "$m" 32
  python3 -c "
import numpy as np, os
r = np.random.RandomState(0)
os.makedirs('$T/b')
np.save('$T/ids.npy', r.randint(0, 64, (8, 8)).astype(np.int64))
np.save('$T/b/input_ids.npy', r.randint(0, 64, (2, 8, 8)).astype(np.int64))
np.save('$T/b/labels.npy', r.randint(0, 64, (2, 8, 8)).astype(np.int64))" || { echo "FAIL inputs"; exit 1; }
  single_program "$T/one" "$m" "--input input_ids=$T/ids.npy" --batch 8 --seq 8
  OPT=(--optimizer sgd --lr 0.1 --momentum 0.9)
  single_program "$T/tone" "$m" "--batches $T/b --steps 2" --input-shape input_ids=8x8 --train "${OPT[@]}"
}
