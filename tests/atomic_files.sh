#!/usr/bin/env bash
# Output files are replaced atomically and weights are checksummed
# (runtime/galv_file.h): galvc compiling a model with other weights into the
# directory of a running program leaves that program's mapped weights.bin alone (it
# finishes with the same outputs, no SIGBUS); no temporary file stays behind;
# a flipped byte, a truncated file or a file of another format in weights.bin
# is one error line naming the file, exit 1; on 2 ranks the damaged block is
# named by its rank. Usage: atomic_files.sh BUILD_DIR
set -u
B=$(cd "${1:?build dir}" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/require.sh" # without MPI the 2-rank part is a skipped part (exit 77; a failure under GALV_REQUIRE_ALL=1)
MPI=0
if have_cmd mpirun mpicc; then
  source "$SRC/tests/lib/mpi_env.sh"
  MPI=1
fi
export OPENBLAS_NUM_THREADS=1 # the same BLAS sums in every run: outputs compare bit for bit
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
one_line() { # NAME PATTERN RC CMD...: exit RC, exactly one stderr line matching PATTERN, no sanitizer report
  local name=$1 pat=$2 want=$3 rc=0
  shift 3
  timeout 60 "$@" >"$T/out" 2>"$T/err" || rc=$?
  if [ "$rc" = "$want" ] && [ "$(wc -l <"$T/err")" = 1 ] && grep -q -- "$pat" "$T/err" && ! grep -q Sanitizer "$T/err"; then
    ok "$name: $(cat "$T/err")"
  else
    bad "$name: rc $rc, stderr: $(cat "$T/err")"
  fi
}

python3 "$SRC/examples/make_model.py" gpt2 -o "$T/g.onnx" --no-verify >/dev/null || exit 1
# the same architecture with other weights: galvc writes a weights.bin of the same size, other bytes
python3 "$SRC/examples/make_model.py" gpt2 -o "$T/g2.onnx" --no-verify --seed 7 >/dev/null || exit 1
P="$T/p"
"$B/galvc" "$T/g.onnx" --batch 2 --seq 16 --target cpu -q -o "$P/" || exit 1
make -s -C "$P" >/dev/null 2>&1 || { echo "FAIL make"; exit 1; }
python3 -c "import numpy as np; np.save('$T/ids.npy', np.random.RandomState(0).randint(0, 50, (2, 16)).astype(np.int64))"
"$P/program" --input input_ids="$T/ids.npy" -o "$T/ref" >/dev/null || { echo "FAIL first run"; exit 1; }

# ---- recompiling into a running program's directory
# the program runs (warmup iterations) for about twice as long as galvc takes,
# and galvc writes the directory again meanwhile, from the model with other
# weights; the program must still be running when galvc is done, then finish
# normally with the logits of the weights it started with (writing the file
# in place ended it with SIGBUS, or changed its weights under it)
t0=$(date +%s%N)
"$B/galvc" "$T/g2.onnx" --batch 2 --seq 16 --target cpu -q -o "$T/q/" || exit 1
cp "$P/program" "$T/q/program" && "$T/q/program" --input input_ids="$T/ids.npy" -o "$T/ref2" >/dev/null || exit 1
tg=$((($(date +%s%N) - t0) / 1000000))
t0=$(date +%s%N)
"$P/program" --input input_ids="$T/ids.npy" --warmup 200 --iters 1 >/dev/null || exit 1
tp=$((($(date +%s%N) - t0) / 1000000 + 1))
n=$((200 * (2 * tg + 2000) / tp))
"$P/program" --input input_ids="$T/ids.npy" -o "$T/run" --warmup $n --iters 1 >"$T/run.log" 2>&1 &
pid=$!
sleep 0.3
"$B/galvc" "$T/g2.onnx" --batch 2 --seq 16 --target cpu -q -o "$P/" || bad "galvc into the running program's directory"
if kill -0 $pid 2>/dev/null; then
  wait $pid
  rc=$?
  if [ $rc = 0 ] && cmp -s "$T/ref/logits.npy" "$T/run/logits.npy"; then ok "recompiled during the run ($n iterations, galvc $tg ms): same logits"
  else bad "program running during the recompile: rc $rc: $(tail -3 "$T/run.log")"; fi
else
  wait $pid
  bad "the program (rc $?) ended before galvc did ($n iterations, galvc $tg ms): no check"
fi
left=$(find "$P" "$T/ref" -name '*.tmp.*' | wc -l)
[ "$left" = 0 ] && ok "no temporary files left" || bad "$left temporary files left: $(find "$P" -name '*.tmp.*' | head -3)"
"$P/program" --input input_ids="$T/ids.npy" -o "$T/after" >/dev/null && cmp -s "$T/ref2/logits.npy" "$T/after/logits.npy" &&
  ! cmp -s "$T/ref/logits.npy" "$T/after/logits.npy" && ok "a new run takes the new weights" || bad "recompiled directory: not the new weights' logits"

# ---- damaged weights: one line naming the file
W=$P/weights.bin
python3 - "$W" "$T/flip.bin" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read()); b[len(b) // 3] ^= 0x40
open(sys.argv[2], "wb").write(b)
PY
one_line "flipped byte" "flip.bin: weights checksum mismatch (CRC-32 [0-9a-f]*, computed [0-9a-f]*)" 1 \
  "$P/program" --input input_ids="$T/ids.npy" --weights "$T/flip.bin"
head -c $(($(stat -c %s "$W") - 1)) "$W" >"$T/short.bin"
one_line "truncated weights" "short.bin: weights file has [0-9]* bytes, the program expects" 1 \
  "$P/program" --input input_ids="$T/ids.npy" --weights "$T/short.bin"
python3 - "$W" "$T/trailer.bin" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read()); b[-3] ^= 1  # the trailer's magic
open(sys.argv[2], "wb").write(b)
PY
one_line "damaged trailer" "trailer.bin: no valid checksum trailer" 1 "$P/program" --input input_ids="$T/ids.npy" --weights "$T/trailer.bin"
one_line "weights not a regular file" "/dev/zero: the weights file is not a regular file" 1 \
  "$P/program" --input input_ids="$T/ids.npy" --weights /dev/zero

# ---- 2 ranks: each rank checks its own block
if [ $MPI = 1 ]; then
  P2=$T/p2
  "$B/galvc" "$T/g.onnx" --batch 2 --seq 16 --target cpu --gpus 2 --strategy tp -q -o "$P2/" || exit 1
  make -s -C "$P2" >/dev/null 2>&1 || { echo "FAIL make (2 ranks)"; exit 1; }
  timeout 60 "$P2/launch" --input input_ids="$T/ids.npy" -o "$T/r2" >/dev/null 2>&1 && ok "2-rank program runs" || bad "2-rank program"
  size=$(stat -c %s "$P2/weights.bin")
  python3 - "$P2/weights.bin" "$T/flip2.bin" <<'PY'
import sys, struct
b = bytearray(open(sys.argv[1], "rb").read())
blk, n = struct.unpack_from("<qI", b, len(b) - 24)  # the trailer's footer: block bytes, blocks
stride = (blk + 4095) // 4096 * 4096
b[stride + blk // 2] ^= 0x40  # rank 1's block
open(sys.argv[2], "wb").write(b)
PY
  cp "$T/flip2.bin" "$P2/weights.bin.bad" && mv "$P2/weights.bin.bad" "$P2/weights.bin"
  one_line "2 ranks, rank 1's block flipped" "weights.bin: weights checksum mismatch in rank 1's block" 1 \
    "$P2/launch" --input input_ids="$T/ids.npy"
fi
echo "atomic_files: $pass ok, $fail failed"
galv_exit "$fail"
