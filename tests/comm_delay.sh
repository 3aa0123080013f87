#!/usr/bin/env bash
# Overlap under injected communication delays (docs/cpu-target.md "Ranks",
# GALV_COMM_DELAY_US; docs/planner.md "Step time"): the collectives of a
# training program run while later ops compute, and only the sync points the
# emitters place (ir/comm_sync.h) wait for them. Under GALV_COMM_DELAY_US the
# communicator withholds every result until its wait (the caller's bytes
# poisoned with NaN meanwhile, the delay slept at the wait) and stops when a
# call's send bytes change while it is in flight; a program that read a
# result early or overwrote a buffer in flight computes other numbers or stops.
#   - tiny GPT-2- and Llama-style models (2 layers, hidden 32), 2 ranks,
#     plans dp, tp (dp,tp on 4 ranks: GPT-2) and zero3 (GPT-2 also in bf16:
#     its 16-bit gather copies prefetched with their gathers), 2 training steps:
#     the losses and weights with a 2 ms delay are bit for bit those without;
#   - gpt2 zero2 bf16: the gradient reduce-scatters in the overlap window
#     (at most two layers' in flight, galv_queue_sync_keep);
#   - the check has teeth: the same dp program with its first sync point
#     after a gradient reduction removed (program.c edited, rebuilt) runs
#     clean without the delay's poison only by luck, and with it differs or
#     stops; and without its window waits (galv_queue_sync_keep removed),
#     whose operands the memory plan frees there, it stops or differs;
#   - --trace FILE (tests/comm_trace_check.py): each rank's Chrome trace has a
#     compute stream and a communication stream; a collective is posted
#     before compute ops that run while it is in flight (overlap), every
#     collective completes at or after its post, before the step ends; under
#     ZeRO-3 a layer's gathers are posted before the previous layer's forward
#     ends (prefetched one layer ahead).
# Measured step times are printed, never judged (2 shared cores).
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
export CFLAGS=-O0
export MPIRUN="$MPIRUN -x GALV_COMM_DELAY_US"
DELAY=${GALV_TEST_DELAY_US:-2000}
. "$SRC/tests/lib/tiny_lms.sh"
tiny_lms "$T"
python3 - "$T" <<'PY'
import numpy as np, os, sys
t = sys.argv[1]
r = np.random.RandomState(5)
os.makedirs(f"{t}/b")
np.save(f"{t}/b/input_ids.npy", r.randint(0, 64, (2, 8, 8)).astype(np.int64))
np.save(f"{t}/b/labels.npy", r.randint(0, 64, (2, 8, 8)).astype(np.int64))
PY
build() { # NAME MODEL GALVC_OPTIONS...
  local n=$1 m=$2; shift 2
  timeout 300 "$BUILD/galvc" "$m" --batch 8 --seq 8 --train --eps 1e-6 "$@" --target cpu -o "$T/$n/" -q 2>"$T/$n.err" </dev/null ||
    { bad "$n: galvc $*: $(grep -m3 error "$T/$n.err")"; return 1; }
}
run() { # NAME TAG DELAY_US [PROGRAM OPTIONS]: 2 steps -> $T/NAME.TAG.log, $T/NAME.TAG.w
  local n=$1 tag=$2 d=$3; shift 3
  if [ "$d" = off ]; then unset GALV_COMM_DELAY_US; else export GALV_COMM_DELAY_US=$d; fi
  timeout 300 "$T/$n/launch" --batches "$T/b" --steps 2 -o "$T/$n.$tag.w" "$@" </dev/null >"$T/$n.$tag.log" 2>"$T/$n.$tag.err"
  local rc=$?
  unset GALV_COMM_DELAY_US
  return $rc
}
same() { # NAME TAG_A TAG_B: bit for bit
  python3 - "$T" "$1" "$2" "$3" "$SRC/tests/lib" <<'PY'
import sys
sys.path.insert(0, sys.argv[5])
from same_training import check
t, n, a, b = sys.argv[1:5]
print(check(f"{t}/{n}.{a}.log", f"{t}/{n}.{b}.log", f"{t}/{n}.{a}.w", f"{t}/{n}.{b}.w", loss_rtol=0, exact=True))
PY
}

for c in ${GALV_DELAY_CASES:-gpt2:2:dp gpt2:2:tp gpt2:4:dp,tp gpt2:2:zero3 llama:2:dp llama:2:zero3 gpt2:2:zero3:bf16 gpt2:2:zero2:bf16}; do
  IFS=: read -r fam n s prec <<<"$c"
  d="$fam-$n-${s/,/_}${prec:+-$prec}"
  opt=(--gpus "$n" --strategy "$s")
  [ -n "$prec" ] && opt+=(--precision "$prec") # bf16 ZeRO-3: 16-bit gather copies, prefetched with their gathers
  [ "$s" = dp,tp ] && opt+=(--mesh dp=2,tp=2)
  build "$d" "$T/$fam.onnx" "${opt[@]}" || continue
  run "$d" plain off || { bad "$d: run: $(grep -m2 error "$T/$d.plain.err")"; continue; }
  run "$d" delay "$DELAY" || { bad "$d: run with GALV_COMM_DELAY_US=$DELAY: $(grep -m2 error "$T/$d.delay.err")"; continue; }
  if r=$(same "$d" plain delay 2>&1); then ok "$d: GALV_COMM_DELAY_US=$DELAY = no delay: $r"
  else bad "$d: GALV_COMM_DELAY_US=$DELAY vs no delay: $r"; fi
done

# broken NAME WHAT: the dp program edited in $T/NAME (a wait removed) rebuilt and run with the delay must stop, or
# compute other numbers than the plain dp run; WHAT names the edit in the lines printed
broken() {
  local n=$1 what=$2 r
  if ! make -s -C "$T/$n" >"$T/$n.make" 2>&1; then bad "$n: rebuild failed: $(head -3 "$T/$n.make")"; return; fi
  if ! run "$n" delay "$DELAY"; then
    ok "$n: $what: the run stops under GALV_COMM_DELAY_US=$DELAY: $(grep -m1 -i 'overwritten\|error\|nan' "$T/$n.delay.err" "$T/$n.delay.log" | head -1)"
    return
  fi
  if r=$(python3 - "$T" "$SRC/tests/lib" "$n" <<'PY' 2>&1
import sys
sys.path.insert(0, sys.argv[2])
from same_training import check
t, n = sys.argv[1], sys.argv[3]
print(check(f"{t}/gpt2-2-dp.plain.log", f"{t}/{n}.delay.log", f"{t}/gpt2-2-dp.plain.w", f"{t}/{n}.delay.w", loss_rtol=0, exact=True))
PY
  ); then bad "$n: $what: the program computes the same numbers under GALV_COMM_DELAY_US: $r"
  else ok "$n: $what: the numbers differ under GALV_COMM_DELAY_US=$DELAY: $r"; fi
}

# teeth: the dp program without the sync point after its first gradient reduction
d=gpt2-2-dp
if [ -f "$T/$d/program.c" ]; then
  cp -r "$T/$d" "$T/nosync"
  python3 - "$T/nosync/program.c" <<'PY' || bad "nosync: no reduction followed by a sync point found in program.c"
import re, sys
p = sys.argv[1]
lines = open(p).read().split("\n")
for i, l in enumerate(lines):  # the first gradient all_reduce of the backward or optimizer, then its first real sync
    if "galv_all_reduce(" in l and i > 0 and any("/grad'" in x or "optimizer/" in x for x in lines[max(0, i - 3):i]):
        depth = 0
        for j in range(i + 1, len(lines)):
            s = lines[j].strip()
            if s.startswith("#if"): depth += 1
            elif s.startswith("#endif"): depth -= 1
            elif s == "galv_queue_sync(galv_q);" and depth == 0:
                lines[j] = "  /* sync removed by tests/comm_delay.sh */"
                open(p, "w").write("\n".join(lines))
                sys.exit(0)
sys.exit(1)
PY
  broken nosync "a read before the sync"
fi

# teeth for the overlap window (ir/comm_sync.h): the dp program waits for the layer before the previous one's gradient
# reductions (galv_queue_sync_keep) where the memory plan frees their operands; without those waits a later op writes
# over a buffer still in flight, which GALV_COMM_DELAY_US stops (or the numbers differ)
d=gpt2-2-dp
if [ -f "$T/$d/program.c" ]; then
  cp -r "$T/$d" "$T/nokeep"
  nk=$(grep -c '^  galv_queue_sync_keep(galv_q, [0-9]*);' "$T/nokeep/program.c")
  sed -i 's|^  galv_queue_sync_keep(galv_q, [0-9]*);|  /* window wait removed by tests/comm_delay.sh */|' "$T/nokeep/program.c"
  if [ "$nk" = 0 ]; then bad "nokeep: the dp program has no galv_queue_sync_keep (the overlap window's wait)"
  else broken nokeep "without its $nk window waits"
  fi
fi

# the trace: both streams, a gradient reduction posted while the backward computes (dp, zero3; 2 ranks)
for d in gpt2-2-dp gpt2-2-zero3 llama-2-dp; do
  [ -x "$T/$d/launch" ] || continue
  if ! run "$d" trace off --trace "$T/$d.trace.json"; then bad "$d: --trace: $(grep -m2 error "$T/$d.trace.err")"; continue; fi
  if r=$(same "$d" plain trace 2>&1); then :; else bad "$d: --trace changes the numbers: $r"; continue; fi
  for f in "$T/$d.trace.json" "$T/$d.trace.json.rank1"; do
    pf=(); [[ $d == *zero3 ]] && pf=(--prefetch)
    if r=$(python3 "$SRC/tests/comm_trace_check.py" "$f" 2 "${pf[@]}" 2>&1); then ok "$d: trace $(basename "$f"): $(tr '\n' ' ' <<<"$r")"
    else bad "$d: trace $(basename "$f"): $r"; fi
  done
  grep -h 'took .* ms (measured' "$T/$d.trace.log" | sed "s/^/  $d: /"
done

echo "comm_delay: $pass passed, $fail failed"
[ "$fail" = 0 ]
