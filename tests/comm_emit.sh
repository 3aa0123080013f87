#!/usr/bin/env bash
# Emission of collectives by the CPU target (codegen/cpu/emit_comm.c) on a
# hand-written local program (tests/comm/spmd_2x2.mlir: a 2x2 dp x tp mesh,
# every collective of docs/sharding.md along leading and non-leading dims,
# shard_slice, axis_index, a sharded input and sharded parameters) run
# through galv-opt --passes=memory-plan and emitted by tests/comm/emit_ir.c:
# out/launch runs it on 4 ranks (mpirun, under timeout, GALV_COMM_SYNC=1),
# outputs equal numpy's global computation, --comm-stats bytes equal the
# ops' predicted `bytes`; a wrong prediction is one error line; a wrong rank
# count is one error line; the debug (ASan) build runs too.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/require.sh"
require_cmd "Debian libopenmpi-dev, openmpi-bin" mpicc mpirun
SAN=()
if grep -q '^GALV_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null; then
  SAN=(-fsanitize=address,undefined -fno-omit-frame-pointer)
fi
# MPI's plugins leak by design and are unloaded before LSan reports (their
# frames show as <unknown module>, which no suppression can name): leaks do
# not set the exit status; a leak with a frame in our own code fails (own_leaks).
export LSAN_OPTIONS=suppressions=$SRC/scripts/lsan.supp:print_suppressions=0:exitcode=0
own_leaks() { grep -E '^ +#[0-9]+ 0x[0-9a-f]+ in [A-Za-z_].*(runtime/|program\.c|test_comm\.c|emit_ir\.c)' <<<"$1"; }
export GALV_COMM_SYNC=1 OMPI_MCA_btl_vader_single_copy_mechanism=none OPENBLAS_NUM_THREADS=1
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
cc -std=gnu11 -g -Wall -Wextra -Werror "${SAN[@]}" -I"$SRC" -o "$T/emit_ir" "$SRC/tests/comm/emit_ir.c" \
  "$BUILD/libgalv_codegen.a" "$BUILD/libgalv_ir.a" "$BUILD/libgalv_npy.a" -lm || { echo "FAIL: building emit_ir"; exit 1; }
"$BUILD/galv-opt" --passes=memory-plan "$SRC/tests/comm/spmd_2x2.mlir" >"$T/p.mlir" || { echo "FAIL: galv-opt"; exit 1; }
LSAN_OPTIONS=suppressions=$SRC/scripts/lsan.supp "$T/emit_ir" "$T/p.mlir" "$T/out" || { echo "FAIL: emit"; exit 1; }
if ! make -C "$T/out" >"$T/make.log" 2>&1 || grep -q warning "$T/make.log"; then
  bad "make (mpicc): $(cat "$T/make.log")"
fi
grep -q '^COMM = mpi' "$T/out/Makefile" && ok "Makefile builds with mpicc + comm_mpi.c" || bad "Makefile does not pick comm_mpi.c"
python3 - "$T" <<'PY'
import sys, numpy as np
t = sys.argv[1]
x = (np.arange(48).reshape(8, 6) % 5 - 2).astype(np.float32) / 4
np.save(f"{t}/x.npy", x)
def param(k, shape):
    e = np.arange(int(np.prod(shape)))
    return (((e * 7 + k * 13) % 17 - 8) / 8).astype(np.float32).reshape(shape)
w, w2 = param(0, (6, 4)), param(1, (4, 6))
xw = x @ w
xww = xw @ w2
ref = {"xw": xw, "xww": xww, "xww_rs": xww, "xww_rs0": xww, "xw_a2a": xw, "imax": np.int64(3), "isum": np.int64(6)}
np.savez(f"{t}/ref.npz", **ref)
PY
check() { # DIR
  python3 - "$T" "$1" <<'PY'
import sys, numpy as np
t, d = sys.argv[1], sys.argv[2]
ref = np.load(f"{t}/ref.npz")
bad = []
for k in ref.files:
    try:
        got = np.load(f"{d}/{k}.npy")
    except Exception as e:
        bad.append(f"{k}: {e}"); continue
    if got.shape != ref[k].shape or not np.allclose(got, ref[k], rtol=1e-5, atol=1e-5):
        bad.append(f"{k}: got {got.shape} {got.ravel()[:6]}, expected {ref[k].shape} {ref[k].ravel()[:6]}")
print("; ".join(bad) if bad else "all outputs equal")
sys.exit(1 if bad else 0)
PY
}
run() { timeout 120 "$@" 2>&1; }
out=$(MPIRUN="mpirun -x GALV_COMM_SYNC -x LSAN_OPTIONS" run "$T/out/launch" --input x="$T/x.npy" -o "$T/res" --comm-stats --iters 2)
rc=$?
if [ $rc -eq 0 ] && r=$(check "$T/res"); then ok "4 ranks: $r"; else bad "4 ranks (rc $rc): $out ${r:-}"; fi
stats=$(grep 'comm bytes' <<<"$out")
# predicted per run: all_reduce 96+12+12, all_gather 32+64+96+48+96+144+32+64, reduce_scatter 48+48, all_to_all 16; 3 runs
if grep -q 'in 2 runs: all_reduce 240, all_gather 1152, reduce_scatter 192, all_to_all 32, send 0 (predicted per run: 120, 576, 96, 16)' <<<"$stats"; then
  ok "--comm-stats: counted == predicted: $stats"
else
  bad "--comm-stats: $stats"
fi
# wrong prediction: one error line per rank, same text
sed '0,/bytes = 96 : i64/s//bytes = 95 : i64/' "$T/p.mlir" >"$T/p2.mlir"
LSAN_OPTIONS=suppressions=$SRC/scripts/lsan.supp "$T/emit_ir" "$T/p2.mlir" "$T/out2" && make -C "$T/out2" >/dev/null 2>&1
rc=0
out=$(MPIRUN="mpirun -x GALV_COMM_SYNC" run "$T/out2/launch" --input x="$T/x.npy") || rc=$?
if [ $rc -ne 0 ] && grep -q "error: rank .: all_reduce moved 120 bytes in 1 runs, the planner predicted 119 per run" <<<"$out"; then
  ok "wrong prediction: $(grep -m1 error <<<"$out")"
else
  bad "wrong prediction: rc $rc: $out"
fi
# rank count
rc=0
out=$(run "$T/out/launch" -np 2 --input x="$T/x.npy") || rc=$?
if [ $rc -eq 1 ] && [ "$(wc -l <<<"$out")" -eq 1 ] && grep -q 'partitioned for 4 ranks, -np 2 given' <<<"$out"; then ok "launch -np 2: $out"; else bad "launch -np 2: rc $rc: $out"; fi
rc=0
out=$(run mpirun --allow-run-as-root --oversubscribe --quiet -np 2 "$T/out/program" --input x="$T/x.npy") || rc=$?
if [ $rc -ne 0 ] && grep -q 'partitioned for 4 ranks, but 2 were started' <<<"$out"; then ok "mpirun -np 2 program: $(grep -m1 error <<<"$out")"; else bad "mpirun -np 2 program: rc $rc: $out"; fi
# wrong global input shape: one error (per rank)
python3 -c "import numpy as np; np.save('$T/x4.npy', np.zeros((4, 6), np.float32))"
rc=0
out=$(MPIRUN="mpirun -x GALV_COMM_SYNC" run "$T/out/launch" --input x="$T/x4.npy") || rc=$?
if [ $rc -ne 0 ] && grep -q "input 'x' has shape 4x6, the program expects 8x6" <<<"$out"; then ok "local-shaped input: $(grep -m1 error <<<"$out")"; else bad "local-shaped input: rc $rc: $out"; fi
# debug build: ASan + UBSan, values poisoned after their last use
if make -C "$T/out" debug >"$T/makedbg.log" 2>&1; then
  out=$(run mpirun --allow-run-as-root --oversubscribe --quiet -x GALV_COMM_SYNC -x LSAN_OPTIONS -np 4 "$T/out/program-debug" --input x="$T/x.npy" -o "$T/resd")
  rc=$?
  if [ $rc -eq 0 ] && ! own_leaks "$out" && ! grep -q 'ERROR: AddressSanitizer\|runtime error' <<<"$out" && r=$(check "$T/resd"); then
    ok "debug build (ASan + UBSan), 4 ranks: $r"
  else
    bad "debug build (rc $rc): $(own_leaks "$out") $out ${r:-}"
  fi
else
  bad "make debug: $(tail -5 "$T/makedbg.log")"
fi
echo "comm_emit: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
