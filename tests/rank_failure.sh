#!/usr/bin/env bash
# A failing or dying rank ends the whole 2-rank SPMD job (mpirun) within
# 10 s with one line naming the rank and the cause: a rank killed by
# SIGKILL under ./launch (exit 137, "rank 1 on host H (DIR/program) was
# killed by signal 9 (SIGKILL)"); an input
# file that only rank 1 cannot read (galv_fatal_all: rank 0 does not see the
# error, rank 1 reports it under its own name "program[1]" and its exit
# stops rank 0); the same file missing on every rank (rank 0 reports it once,
# at once). Every run is bounded by timeout. Usage: rank_failure.sh BUILD_DIR
set -u
B=$(cd "${1:?build dir}" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
source "$SRC/tests/lib/mpi_env.sh" # skips without mpirun; ok / bad
unset GALV_COMM_SYNC GALV_COMM_TIMEOUT # a blocked collective must not end the job: the failing rank must
export MPIRUN="mpirun ${RUNAS[*]} --oversubscribe -x OPENBLAS_NUM_THREADS"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
python3 "$SRC/examples/make_model.py" gpt2 -o "$T/g.onnx" --no-verify >/dev/null || exit 1
P=$T/p
"$B/galvc" "$T/g.onnx" --batch 2 --seq 16 --gpus 2 --strategy tp --target cpu -q -o "$P/" || exit 1
make -s -C "$P" >/dev/null 2>&1 || { echo "FAIL make"; exit 1; }
python3 -c "import numpy as np; np.save('$T/ids.npy', np.random.RandomState(0).randint(0, 50, (2, 16)).astype(np.int64))"
ms() { echo $(($(date +%s%N) / 1000000)); }

# ---- kill -9 of rank 1 under ./launch
"$P/launch" --input input_ids="$T/ids.npy" --warmup 1000000 >"$T/out" 2>"$T/err" &
lpid=$!
r1=""
for _ in $(seq 100); do # rank 1's pid: the program process whose environment says rank 1
  for p in $(pgrep -f "^$P/program" || true); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1" && r1=$p
  done
  [ -n "$r1" ] && break
  sleep 0.1
done
if [ -z "$r1" ]; then
  bad "rank 1 of the launched job not found"
  kill $lpid 2>/dev/null
else
  sleep 1
  t0=$(ms)
  kill -9 "$r1"
  rc=0
  timeout 30 tail --pid=$lpid -f /dev/null || true
  wait $lpid || rc=$?
  dt=$(($(ms) - t0))
  if [ $rc = 137 ] && [ $dt -lt 10000 ] && [ "$(wc -l <"$T/err")" = 1 ] && grep -q "^launch: error: rank 1 on host $(hostname) ($P/program) was killed by signal 9 (SIGKILL)" "$T/err"; then
    ok "kill -9 rank 1: exit 137 after $dt ms: $(cat "$T/err")"
  else
    bad "kill -9 rank 1: rc $rc after $dt ms, stderr: $(head -c 500 "$T/err")"
  fi
fi

# ---- an input file only rank 1 cannot read (MPMD: rank 1 gets another path)
run_mpmd() { # ARG0 ARG1: rank 0's and rank 1's --input file
  local t0 rc=0
  t0=$(ms)
  timeout 60 $MPIRUN --quiet -np 1 "$P/program" --input input_ids="$1" : -np 1 "$P/program" --input input_ids="$2" \
    >"$T/out" 2>"$T/err" || rc=$?
  echo "$rc $(($(ms) - t0))"
}
read -r rc dt < <(run_mpmd "$T/ids.npy" "$T/missing.npy")
if [ "$rc" = 1 ] && [ "$dt" -lt 10000 ] && [ "$(wc -l <"$T/err")" = 1 ] &&
    grep -q "^program\[1\]: error: .*missing.npy: input 'input_ids': cannot open" "$T/err"; then
  ok "input missing on rank 1 only: exit 1 after $dt ms: $(cat "$T/err")"
else
  bad "input missing on rank 1 only: rc $rc after $dt ms, stderr: $(head -c 500 "$T/err")"
fi
read -r rc dt < <(run_mpmd "$T/missing.npy" "$T/missing.npy")
if [ "$rc" = 1 ] && [ "$dt" -lt 4000 ] && [ "$(wc -l <"$T/err")" = 1 ] &&
    grep -q "^program: error: .*missing.npy: input 'input_ids': cannot open" "$T/err"; then
  ok "input missing on every rank: exit 1 after $dt ms, one line from rank 0: $(cat "$T/err")"
else
  bad "input missing on every rank: rc $rc after $dt ms, stderr: $(head -c 500 "$T/err")"
fi
echo "rank_failure: $pass ok, $fail failed"
[ $fail = 0 ]
