#!/usr/bin/env bash
# Ranks killed (SIGKILL) at named points of N-rank training runs end the
# whole job within 10 s, with a non-zero exit and one line naming the rank,
# its host and the signal, under both launchers (the generated launch and
# a bare mpirun); a checkpoint save interrupted that way leaves the previous
# checkpoint intact and loadable. The rank dies by the runtime's test hook
# GALV_TEST_DIE=POINT:RANK[:N] (runtime/io.c: SIGKILL at the N-th pass
# through the point, exactly where kill -9 would have to land by luck):
#   - inside a collective: rank 1 of a 2-rank tp training step, at its 5th
#     all-reduce (its part posted, rank 0 waiting in the same all-reduce);
#     under ./launch and under mpirun itself;
#   - during a checkpoint save: rank 0 (the writer) of the 2-rank program,
#     after the first tensor of the new checkpoint is written;
#   - a pipeline stage: the stage-1 rank of a 2-stage pipeline training run,
#     at its 3rd send (a gradient to stage 0), and during the pipeline's
#     checkpoint (stage 1 appending its tensors);
#   - the CUDA program (2-rank tp training, built with make emu and run on
#     the CPU execution layer): rank 1 at its 5th NCCL all-reduce.
# Every run is bounded by timeout. Usage: rank_kill.sh BUILD_DIR
set -u
B=$(cd "${1:?build dir}" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
source "$SRC/tests/lib/mpi_env.sh" # skips without mpirun; ok / bad
unset GALV_COMM_SYNC GALV_COMM_TIMEOUT MPIRUN # the launch scripts' own mpirun; a blocked collective must not end the job: the dying rank must
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
HOST=$(hostname)
python3 "$SRC/examples/make_model.py" gpt2 -o "$T/m.onnx" --layers 2 --hidden 32 --heads 4 --vocab 64 --no-verify \
  >/dev/null || { echo "FAIL make_model"; exit 1; }
python3 -c "
import numpy as np, os
r = np.random.RandomState(0)
os.makedirs('$T/b')
np.save('$T/b/input_ids.npy', r.randint(0, 64, (3, 8, 8)).astype(np.int64))
np.save('$T/b/labels.npy', r.randint(0, 64, (3, 8, 8)).astype(np.int64))" || { echo "FAIL batches"; exit 1; }
build() { # NAME ARGS...
  local n=$1
  shift
  "$B/galvc" "$T/m.onnx" --train --target cpu -q --batch 8 --seq 8 "$@" -o "$T/$n/" 2>"$T/err" </dev/null ||
    { echo "FAIL galvc $n: $(head -3 "$T/err")"; exit 1; }
}
build tp2 --gpus 2 --strategy tp
build pp --pipeline-stages 2 --microbatches 2
ms() { echo $(($(date +%s%N) / 1000000)); }

# run LABEL DIE LINE_RE CMD...: the job under GALV_TEST_DIE=DIE must end in
# < 10 s, non-zero, with LINE_RE matching; "one" in LABEL: exactly one line
run() {
  local label=$1 die=$2 want=$3 t0 rc=0 dt
  shift 3
  t0=$(ms)
  GALV_TEST_DIE=$die timeout 60 "$@" >"$T/out" 2>"$T/err" </dev/null || rc=$?
  dt=$(($(ms) - t0))
  local lines
  lines=$(wc -l <"$T/err")
  if [ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$dt" -lt 10000 ] && grep -qE "$want" "$T/err" &&
    { [[ "$label" != *"(one line)"* ]] || [ "$lines" = 1 ]; }; then
    ok "$label: exit $rc after $dt ms: $(grep -E "$want" "$T/err" | head -1)"
  else
    bad "$label: exit $rc after $dt ms, $lines lines on stderr: $(head -c 600 "$T/err")"
  fi
}
KILLED="was killed by signal 9 \(SIGKILL\)"

# ---- inside a collective
run "tp=2, rank 1 killed inside its 5th all-reduce, ./launch (one line)" all_reduce:1:5 \
  "^launch: error: rank 1 on host $HOST \($T/tp2/program\) $KILLED; mpirun stopped the other ranks\$" \
  "$T/tp2/launch" --batches "$T/b" --steps 3
run "tp=2, rank 1 killed inside its 5th all-reduce, bare mpirun" all_reduce:1:5 \
  "^mpirun noticed that process rank 1 with PID [0-9]+ on node $HOST exited on signal 9" \
  mpirun ${RUNAS[@]+"${RUNAS[@]}"} --oversubscribe --bind-to none -np 2 "$T/tp2/program" --batches "$T/b" --steps 3

# ---- during a checkpoint save: the previous checkpoint stays, whole and loadable
if timeout 60 "$T/tp2/launch" --batches "$T/b" --steps 1 --save-checkpoint "$T/tp2.ck" >"$T/out" 2>"$T/err" </dev/null; then
  cp "$T/tp2.ck" "$T/tp2.ck.before"
  run "tp=2, rank 0 killed while writing the checkpoint, ./launch (one line)" checkpoint:0 \
    "^launch: error: rank 0 on host $HOST \($T/tp2/program\) $KILLED" \
    "$T/tp2/launch" --batches "$T/b" --steps 1 --load-checkpoint "$T/tp2.ck" --save-checkpoint "$T/tp2.ck"
  if cmp -s "$T/tp2.ck" "$T/tp2.ck.before"; then ok "tp=2: the previous checkpoint is unchanged under its name"
  else bad "tp=2: the checkpoint under its name changed ($(stat -c %s "$T/tp2.ck" 2>&1) bytes, was $(stat -c %s "$T/tp2.ck.before"))"; fi
  if timeout 60 "$T/tp2/launch" --batches "$T/b" --steps 1 --load-checkpoint "$T/tp2.ck" >"$T/out" 2>"$T/err" </dev/null &&
    grep -q "^step 1 loss" "$T/out"; then ok "tp=2: the previous checkpoint loads ($(grep -m1 "^step 1 loss" "$T/out"))"
  else bad "tp=2: the previous checkpoint does not load: $(head -3 "$T/err")"; fi
else
  bad "tp=2: first checkpoint: $(head -3 "$T/err")"
fi

# ---- a pipeline stage
run "pp=2, stage 1 killed at its 3rd send, ./launch (one line)" send:1:3 \
  "^launch: error: rank 1 on host $HOST \($T/pp/stage1/program\) $KILLED; mpirun stopped the other ranks\$" \
  "$T/pp/launch" --batches "$T/b" --steps 3
if timeout 60 "$T/pp/launch" --batches "$T/b" --steps 1 --save-checkpoint "$T/pp.ck" >"$T/out" 2>"$T/err" </dev/null; then
  cp "$T/pp.ck" "$T/pp.ck.before"
  run "pp=2, stage 1 killed while appending to the checkpoint, ./launch (one line)" checkpoint:1 \
    "^launch: error: rank 1 on host $HOST \($T/pp/stage1/program\) $KILLED" \
    "$T/pp/launch" --batches "$T/b" --steps 1 --load-checkpoint "$T/pp.ck" --save-checkpoint "$T/pp.ck"
  if cmp -s "$T/pp.ck" "$T/pp.ck.before" &&
    timeout 60 "$T/pp/launch" --batches "$T/b" --steps 1 --load-checkpoint "$T/pp.ck" >"$T/out" 2>"$T/err" </dev/null; then
    ok "pp=2: the previous checkpoint is unchanged and loads"
  else bad "pp=2: the previous checkpoint changed or does not load: $(head -3 "$T/err")"; fi
else
  bad "pp=2: first checkpoint: $(head -3 "$T/err")"
fi

# ---- the CUDA program (runtime/cuda/comm_nccl.cu's hooks) under the execution layer, when g++ is there
if have_cmd g++; then # else a skipped part (tests/lib/require.sh)
  if "$B/galvc" "$T/m.onnx" --train --target cuda --no-build -q --batch 8 --seq 8 --gpus 2 --strategy tp -o "$T/cu/" \
       2>"$T/err" </dev/null && make -s -C "$T/cu" emu >"$T/cu.log" 2>&1; then
    GALV_PROGRAM=program-emu run "cuda tp=2 (program-emu), rank 1 killed inside its 5th NCCL all-reduce, ./launch (one line)" \
      all_reduce:1:5 "^launch: error: rank 1 on host $HOST \($T/cu/program-emu\) $KILLED; mpirun stopped the other ranks\$" \
      "$T/cu/launch" --batches "$T/b" --steps 3
  else bad "cuda tp=2: build: $(head -3 "$T/err" "$T/cu.log")"; fi
fi
echo "rank_kill: $pass ok, $fail failed"
galv_exit "$fail"
