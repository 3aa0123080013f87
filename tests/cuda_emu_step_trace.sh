#!/usr/bin/env bash
# The one-program CUDA training step's --trace under emulation (docs/cuda-target.md, "Traces"): the compute stream's
# kernels and waits and the communication stream's collectives, each timed by two CUDA events, written as the CPU
# target's Chrome trace (runtime/prof.c; rank 0: FILE, rank R: FILE.rankR). Tiny GPT-2 (2 layers, hidden 32, vocab
# 64), batch 8 x 8, --gpus 2 --strategy dp --bucket-mb 0.01 (gradient buckets: a concat packing the gradients, one
# all-reduce each, posted while the backward computes), --target cuda, built with `make emu` (program.cu and
# runtime/cuda/ over the CPU execution layer), 2 AdamW steps:
#   nccl     (NCCL over MPI: the collectives on the communication stream): the traced run's losses and weights are
#            the untraced run's, bit for bit; each rank's trace passes tests/cuda_step_trace_check.py (both
#            streams; every kernel call site of program.cu on the compute stream and every collective on the
#            communication stream, in program order; each collective starting after the kernels before its call
#            site, a bucket's all-reduce after the backward kernels and the concat that produce it; buckets posted
#            before backward kernels that follow them); the checker rejects the trace with a bucket's all-reduce
#            moved before its concat ends, and with a collective moved onto the compute stream;
#   staged   (make emu COMM=staged: runtime/comm_mpi.c under the device buffers) traced under GALV_COMM_DELAY_US
#            (every result withheld until its wait, the delay slept there): the losses and weights are the untraced
#            run's without the delay, bit for bit, the trace passes the same checker, and each collective's span
#            holds the injected delay (it lasts at least DELAY us: a sleep's lower bound, not a timing judged).
#   one device (no collectives): the compute stream only, every kernel call site in program order.
# On 2 shared cores no time is judged otherwise; the measured step times are printed.
# Usage: cuda_emu_step_trace.sh BUILD_DIR
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$SRC/tests/lib/require.sh"
require_cmd "g++ (build-essential)" g++
require_cmd "OpenMPI (mpicc, mpirun)" mpicc mpirun
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export OPENBLAS_NUM_THREADS=1 CFLAGS=-O0
. "$SRC/tests/lib/mpi_env.sh"
export MPIRUN="$MPIRUN -x GALV_COMM_DELAY_US"
DELAY=${GALV_TEST_DELAY_US:-2000}
CHECK=$SRC/tests/cuda_step_trace_check.py
t0=$(date +%s)
m="$T/g.onnx"
python3 "$SRC/examples/make_model.py" gpt2 -o "$m" --layers 2 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null ||
  { echo "FAIL make_model"; exit 1; }
python3 -c "
import numpy as np, os
r = np.random.RandomState(0)
os.makedirs('$T/b')
np.save('$T/b/input_ids.npy', r.randint(0, 64, (2, 8, 8)).astype(np.int64))
np.save('$T/b/labels.npy', r.randint(0, 64, (2, 8, 8)).astype(np.int64))" || { echo "FAIL batches"; exit 1; }
d="$T/dp"
if ! timeout 300 "$BUILD/galvc" "$m" --batch 8 --seq 8 --train --gpus 2 --strategy dp --bucket-mb 0.01 --target cuda \
     --no-build -o "$d/" </dev/null >"$T/gen.log" 2>&1; then
  echo "FAIL galvc: $(grep -m3 error "$T/gen.log")"; exit 1
fi
grep -q '^bucket: [0-9]* gradient reductions in [0-9]* buckets' "$T/gen.log" || { echo "FAIL no buckets: $(grep -m2 '^bucket' "$T/gen.log")"; exit 1; }
timeout 300 "$BUILD/galvc" "$m" --batch 8 --seq 8 --train --target cuda --no-build -q -o "$T/one/" </dev/null >"$T/one.gen" 2>&1 ||
  { echo "FAIL galvc (one device): $(grep -m3 error "$T/one.gen")"; exit 1; }
cp -r "$d" "$T/st"
nice make -s -C "$T/st" emu COMM=staged >"$T/st.make" 2>&1 &
if ! nice make -s -C "$d" emu >"$T/dp.make" 2>&1; then wait; echo "FAIL make emu: $(tail -n 5 "$T/dp.make")"; exit 1; fi
if ! wait $!; then echo "FAIL make emu COMM=staged: $(tail -n 5 "$T/st.make")"; exit 1; fi
nice make -s -C "$T/one" emu >"$T/one.make" 2>&1 || { echo "FAIL make emu (one device): $(tail -n 5 "$T/one.make")"; exit 1; }
echo "     built: $(($(date +%s) - t0)) s; $(grep -m1 '^bucket: [0-9]' "$T/gen.log")"

run() { # DIR TAG DELAY_US [OPTIONS]: 2 steps -> $T/TAG.log, $T/TAG.w
  local dir=$1 tag=$2 dl=$3; shift 3
  if [ "$dl" = off ]; then unset GALV_COMM_DELAY_US; else export GALV_COMM_DELAY_US=$dl; fi
  GALV_PROGRAM=program-emu timeout 300 "$dir/launch" --batches "$T/b" --steps 2 -o "$T/$tag.w" "$@" </dev/null >"$T/$tag.log" 2>&1
  local rc=$?
  unset GALV_COMM_DELAY_US
  [ $rc = 0 ] || bad "$tag: run: rc $rc: $(grep -m2 -i error "$T/$tag.log")"
  return $rc
}
same() { # TAG_A TAG_B: losses and weights bit for bit
  python3 - "$T" "$1" "$2" "$SRC/tests/lib" <<'PY'
import sys
sys.path.insert(0, sys.argv[4])
from same_training import check
t, a, b = sys.argv[1:4]
print(check(f"{t}/{a}.log", f"{t}/{b}.log", f"{t}/{a}.w", f"{t}/{b}.w", loss_rtol=0, exact=True))
PY
}
trace_ok() { # DIR TAG: both ranks' traces
  for f in "$T/$2.trace.json" "$T/$2.trace.json.rank1"; do
    if r=$(python3 "$CHECK" "$1/program.cu" "$f" 2 2>&1); then ok "$2: $(basename "$f"): $r"
    else bad "$2: $(basename "$f"): $r"; fi
  done
  grep -h 'took .* ms (measured' "$T/$2.log" | sed "s/^/     $2: /"
}

# nccl: traced = untraced; the trace's streams and order
if run "$d" plain off && run "$d" nccl off --trace "$T/nccl.trace.json"; then
  if r=$(same plain nccl 2>&1); then ok "nccl: --trace leaves the numbers unchanged: $r"; else bad "nccl: --trace changes the numbers: $r"; fi
  grep -q "wrote the trace $T/nccl.trace.json (a compute and a communication stream)" "$T/nccl.log" ||
    bad "nccl: no 'wrote the trace' line: $(grep -m1 trace "$T/nccl.log")"
  trace_ok "$d" nccl
  # teeth: the checker rejects a bucket's all-reduce moved before its concat ends, and a collective on the compute stream
  for mut in early tid; do
    python3 - "$T/nccl.trace.json" "$T/mut.$mut.json" "$mut" <<'PY'
import json, sys
src, dst, mut = sys.argv[1:4]
t = json.load(open(src))
ev = [e for e in t["traceEvents"] if e.get("ph") == "X" and e["args"]["step"] == 0]
if mut == "early":  # the first all-reduce right after a concat of its node: starts inside that concat
    ev.sort(key=lambda e: e["ts"])
    cat = [e for e in ev if e["name"] == "concat" and e["tid"] == 0]
    ar = next(e for e in ev if e["tid"] == 1 and any(c["args"]["node"] == e["args"]["node"] for c in cat))
    c = next(c for c in cat if c["args"]["node"] == ar["args"]["node"])
    ar["ts"] = c["ts"] + c["dur"] / 2 - 0.5
else:  # the first collective on the compute stream
    next(e for e in ev if e["tid"] == 1)["tid"] = 0
json.dump(t, open(dst, "w"))
PY
    if r=$(python3 "$CHECK" "$d/program.cu" "$T/mut.$mut.json" 2 2>&1); then bad "checker accepted the '$mut' trace: $r"
    else ok "checker rejects the '$mut' trace: $r"; fi
  done
fi

# staged under the injected delay: = the untraced staged run without it; the delay inside every collective's span
if run "$T/st" st.plain off && run "$T/st" st.delay "$DELAY" --trace "$T/st.delay.trace.json"; then
  if r=$(same st.plain st.delay 2>&1); then ok "staged: traced under GALV_COMM_DELAY_US=$DELAY = untraced without: $r"
  else bad "staged: traced under GALV_COMM_DELAY_US=$DELAY vs untraced: $r"; fi
  if r=$(same plain st.plain 2>&1); then ok "staged = nccl: $r"; else bad "staged vs nccl: $r"; fi
  trace_ok "$T/st" st.delay
  if r=$(python3 - "$T/st.delay.trace.json" "$DELAY" <<'PY'
import json, sys
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X" and e["tid"] == 1]
short = [e for e in ev if e["dur"] < float(sys.argv[2])]
if not ev or short:
    sys.exit(f"{len(short)} of {len(ev)} collectives shorter than the delay: {short[:1]}")
print(f"{len(ev)} collectives, each at least {sys.argv[2]} us (shortest {min(e['dur'] for e in ev):.0f} us)")
PY
  ); then ok "staged: the delay inside each collective's span: $r"; else bad "staged: delay: $r"; fi
fi
# one device: the compute stream only, every kernel call site in program order
if timeout 300 "$T/one/program-emu" --batches "$T/b" --steps 2 --trace "$T/one.trace.json" </dev/null >"$T/one.log" 2>&1; then
  if r=$(python3 "$CHECK" "$T/one/program.cu" "$T/one.trace.json" 2 2>&1); then ok "one device: $r"; else bad "one device: $r"; fi
else bad "one device: run: $(grep -m2 -i error "$T/one.log")"; fi
echo "     total: $(($(date +%s) - t0)) s"
echo "cuda_emu_step_trace: $pass passed, $fail failed"
[ "$fail" = 0 ]
