#!/usr/bin/env bash
# The launch script's mpirun filter (codegen/comm.c cg_launch_mpirun_sh): the
# ranks' own lines pass; mpirun's dash-framed banners and its help-aggregation
# notes are dropped, with or without the "[host:pid] " prefix OpenMPI puts on
# them (a "[vm:25628] Set MCA parameter ..." line once came ahead of a
# program's --help under load); a rank killed by a signal becomes one line.
# A fake mpirun prints what OpenMPI prints; the function is the emitted
# launch script's own.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
"$BUILD/galvc" "$SRC/examples/models/torch/gpt2_op17.onnx" --batch 4 --seq 8 --target cpu --gpus 2 --strategy tp --no-build \
  -o "$T/p/" -q </dev/null || { echo "FAIL galvc"; exit 1; }
sed -n '/^galv_mpirun() {$/,/^}$/p' "$T/p/launch" >"$T/fn.sh"
[ -s "$T/fn.sh" ] || { echo "FAIL no galv_mpirun in the launch script"; exit 1; }
cat >"$T/fake" <<'SH'
#!/bin/sh
# what mpirun and the ranks print: $1 the case
echo "usage: program --input NAME=FILE.npy ..."
case "$1" in
notes)
  echo "--------------------------------------------------------------------------" >&2
  echo "A system call failed during shared memory initialization." >&2
  echo "--------------------------------------------------------------------------" >&2
  echo "[vm:25628] 3 more processes have sent help message help-opal-shmem-mmap.txt / sys call fail" >&2
  echo "[vm:25628] Set MCA parameter \"orte_base_help_aggregate\" to 0 to see all help / error messages" >&2
  echo "Set MCA parameter \"orte_base_help_aggregate\" to 0 to see all help / error messages" >&2
  exit 0 ;;
signal)
  echo "--------------------------------------------------------------------------" >&2
  echo "mpirun noticed that process rank 1 with PID 4242 on node vm exited on signal 11 (Segmentation fault)." >&2
  echo "--------------------------------------------------------------------------" >&2
  exit 139 ;;
esac
SH
chmod +x "$T/fake"
run() { # CASE: galv_mpirun over the fake, stderr and stdout apart
  (GALV_WHO=program; . "$T/fn.sh"; galv_mpirun "$T/fake" "$1") >"$T/out" 2>"$T/err"
}
run notes; rc=$?
if [ $rc = 0 ] && [ "$(cat "$T/out")" = "usage: program --input NAME=FILE.npy ..." ] && [ ! -s "$T/err" ]; then
  ok "mpirun's banner and help notes (with and without [host:pid]) dropped, the rank's line kept"
else bad "notes: rc $rc, stdout $(head -2 "$T/out"), stderr $(head -3 "$T/err")"; fi
run signal; rc=$?
if [ $rc = 139 ] && [ "$(wc -l <"$T/err")" = 1 ] &&
  grep -q "^launch: error: rank 1 on host vm (program) was killed by signal 11 (SIGSEGV)" "$T/err"; then
  ok "a rank killed by a signal: $(cat "$T/err")"
else bad "signal: rc $rc, stderr $(head -3 "$T/err")"; fi
echo "launch_filter: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
