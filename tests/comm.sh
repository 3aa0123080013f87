#!/usr/bin/env bash
# The communicator alone (runtime/galv_comm.h): tests/comm/test_comm.c built
# with mpicc + runtime/comm_mpi.c and run with mpirun -np 1, 2, 4 and 8
# (oversubscribed), every run under `timeout`: each collective on each axis
# group of the meshes that fit (2, 2x2, 4, 2x2x2, 2x4, 4x2, 8) against a
# locally computed expectation, byte counters against the header's formulas,
# grouped ring exchanges, galv_queue_sync_buf waiting for one buffer's send
# alone (3 ranks or more: waiting for the other send in flight would
# deadlock), all with GALV_COMM_SYNC=1 (synchronous sends, so
# ordering bugs fail instead of passing by MPI's buffering). An ungrouped
# ring under GALV_COMM_SYNC=1 must fail with one error line naming the
# deadlock (never hang); a mesh that does not match the rank count is one
# error line. The same test built with cc + runtime/comm_single.c (no MPI)
# passes on one rank. Also under ASan/UBSan when the build is sanitized
# (GALV_SANITIZE: the build dir's CMakeCache says so) with LSan suppressions.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/require.sh"
require_cmd "Debian libopenmpi-dev, openmpi-bin" mpicc mpirun
CFLAGS=(-std=gnu11 -O1 -g -Wall -Wextra -Werror -I"$SRC/runtime")
if grep -q '^GALV_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null; then
  CFLAGS+=(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  # MPI's plugins leak by design and are unloaded before LSan reports (frames
  # of <unknown module>, which no suppression can name): leaks do not set the
  # exit status; a leak with a frame in our own code fails the run (own_leaks)
  export LSAN_OPTIONS=suppressions=$SRC/scripts/lsan.supp:print_suppressions=0:exitcode=0
  echo "(sanitized build)"
fi
RT=("$SRC/runtime/io.c" "$SRC/runtime/npy.c" "$SRC/runtime/file.c" -lopenblas -lm)
mpicc "${CFLAGS[@]}" -o "$T/test_comm" "$SRC/tests/comm/test_comm.c" "$SRC/runtime/comm_mpi.c" "${RT[@]}" || {
  echo "FAIL: building test_comm with mpicc"
  exit 1
}
cc "${CFLAGS[@]}" -o "$T/test_comm_single" "$SRC/tests/comm/test_comm.c" "$SRC/runtime/comm_single.c" "${RT[@]}" || {
  echo "FAIL: building test_comm with comm_single.c"
  exit 1
}
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none -x GALV_COMM_SYNC -x LSAN_OPTIONS)
export GALV_COMM_SYNC=1 OMPI_MCA_btl_vader_single_copy_mechanism=none OPENBLAS_NUM_THREADS=1
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
own_leaks() { grep -E '^ +#[0-9]+ 0x[0-9a-f]+ in [A-Za-z_].*(runtime/|test_comm\.c)' <<<"$1"; }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }

if out=$(timeout 60 "$T/test_comm_single" 2>&1); then ok "comm_single.c, 1 rank: $out"; else bad "comm_single.c: $out"; fi
for np in 1 2 4 8; do
  if out=$(timeout 120 "${MPIRUN[@]}" -np $np "$T/test_comm" 2>&1) && ! own_leaks "$out"; then
    ok "mpirun -np $np: $(grep -c 'checks passed' <<<"$out") ranks passed ($(grep -m1 'checks passed' <<<"$out"))"
  else
    bad "mpirun -np $np (rc $?): $out"
  fi
done

# ungrouped ring with synchronous sends: detected deadlock, one error line
export GALV_COMM_TIMEOUT=3
for np in 2 4; do
  rc=0
  out=$(timeout 60 "${MPIRUN[@]}" -x GALV_COMM_TIMEOUT -np $np "$T/test_comm" ring 2>&1) || rc=$?
  errs=$(grep -c '^test_comm: error: ' <<<"$out")
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$errs" -ge 1 ] && grep -q 'did not complete within' <<<"$out" &&
    ! grep -q 'ungrouped ring passed' <<<"$out"; then
    ok "ungrouped ring, -np $np, GALV_COMM_SYNC=1: fails (rc $rc): $(grep -m1 '^test_comm: error' <<<"$out")"
  else
    bad "ungrouped ring, -np $np: rc $rc, expected a detected deadlock: $out"
  fi
done
unset GALV_COMM_TIMEOUT
# the same ring grouped is the 'all' mode above; without the sync mode the ungrouped ring passes (buffering)
if out=$(GALV_COMM_SYNC=0 timeout 60 "${MPIRUN[@]}" -np 2 "$T/test_comm" ring 2>&1); then
  ok "ungrouped ring without GALV_COMM_SYNC passes by buffering (why the test mode exists)"
else
  bad "ungrouped ring without GALV_COMM_SYNC: $out"
fi

# a mesh that does not match the rank count: one error line from each rank
rc=0
out=$(timeout 60 "${MPIRUN[@]}" -np 2 "$T/test_comm" mesh 2>&1) || rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -q '^test_comm: error: the program was partitioned for a mesh of 3 ranks (3x1), but 2 were started' <<<"$out"; then
  ok "mesh/rank-count mismatch: $(grep -m1 '^test_comm: error' <<<"$out")"
else
  bad "mesh/rank-count mismatch: rc $rc: $out"
fi
rc=0
out=$(timeout 60 "$T/test_comm_single" mesh 2>&1) || rc=$?
if [ "$rc" -eq 1 ] && [ "$(wc -l <<<"$out")" -eq 1 ] && grep -q 'built without MPI' <<<"$out"; then
  ok "comm_single.c with a 2-rank mesh: $out"
else
  bad "comm_single.c with a 2-rank mesh: rc $rc: $out"
fi

echo "comm: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
