#!/usr/bin/env bash
# The training mechanisms combined (docs/training.md, check (a)): every pair
# of mechanism choices in at least one N-rank CPU run, each run = the
# single-device program. The factors and their levels:
#   family   gpt2, llama (tests/lib/tiny_lms.sh: 2 layers, hidden 32, 4
#            heads, vocab 64; Llama with 4 KV heads so that tp 4 divides them)
#   plan     2 ranks: dp, zero1, zero2, zero3, tp,sp, pp2 (2 pipeline
#            stages, 1F1B); 4 ranks: dp,tp (dp=2 x tp=2), zero2,tp,sp,
#            zero3,tp, pp2dp2 (2 stages of dp=2: gradients reduced once per
#            step) (ZeRO stages, tensor, sequence and pipeline parallelism)
#   prec     fp32, bf16, bf16 with --grad-dtype bf16, fp16 (dynamic loss
#            scaling)
#   mb       --microbatches 1 or 2 (gradient accumulation)
#   clip     none or --clip-grad-norm 0.5
#   rc       --recompute=none, selective (with --fused-attention off: the
#            four-op cores it recomputes) or all
#   bucket   --bucket-mb 0 (one reduction per gradient) or 0.01 (buckets
#            posted while the backward computes)
#   delay    GALV_COMM_DELAY_US unset or 1000 (results withheld until their
#            wait, poisoned meanwhile: overlap judged by correctness)
# The cases are a pairwise covering set (every level of every factor with
# every level of every other factor in some case), built greedily here
# from a fixed seed: 40 runs, in CI (1-3 minutes on 2 shared cores). GALV_PAIRS=all runs every
# combination instead (thousands: bench only), GALV_PAIRS=singles each
# mechanism alone on GPT-2 / 2 ranks against dp (the table of
# docs/training.md), GALV_PAIRS_ONLY=K,K.. the listed case numbers.
# Each case, 2 AdamW steps (eps 1e-6) over 2 batches of 8 x 8 with ignored
# labels:
#   - against the single-device program of the same family, precision,
#     gradient dtype and clipping (one microbatch, no recomputation): fp32
#     losses rtol 1e-4 and every weight rtol 1e-4 / atol 1e-5
#     (tests/lib/same_training.py); 16-bit losses within 1e-3 (the bound
#     tests/cpu_bf16.sh sets for ranks against one device), and under fp16
#     the same loss-scale and skip decisions;
#   - the bytes rank 0 handed to MPI per collective kind = the planner's
#     prediction from the global program x 2 (tests/lib/comm_counted.py);
#     pipelines: every rank's stage collectives = its entries' predictions
#     and its cross-stage bytes = the transfer plan's (the runtime's own
#     checks, read again here);
#   - the predicted memory per device (--report-cost's total: parameters,
#     optimizer state, arena, constants, communication buffers and, 16-bit,
#     the CPU kernels' conversion scratch, which --target cpu prices) within
#     5 % of every rank's allocation tracker high-water mark (runtime/io.c:
#     the peak of its live buffers, the conversion scratch among them, + the
#     arena's measured high-water); pipelines: every rank's high-water
#     within 5 % of the stage plan's peak (its state bytes, the CPU
#     conversion scratch among them, + the microbatches the plan charges x
#     the bytes saved per microbatch).
# One line per case: its choices, the loss difference, the bytes and the
# memory predicted / measured.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
export CFLAGS=-O0 # tiny programs
export MPIRUN="$MPIRUN -x GALV_COMM_DELAY_US"
. "$SRC/tests/lib/tiny_lms.sh"
tiny_lms "$T" 4
python3 - "$T" <<'PY'
import numpy as np, os, sys
t = sys.argv[1]
r = np.random.RandomState(11)
os.makedirs(f"{t}/b")
np.save(f"{t}/b/input_ids.npy", r.randint(0, 64, (2, 8, 8)).astype(np.int64))
lab = r.randint(0, 64, (2, 8, 8)).astype(np.int64)
lab[0, 0, :] = -100
lab[1, 4, 2:] = -100
np.save(f"{t}/b/labels.npy", lab)
PY

# the cases: "K fam plan prec mb clip rc bucket delay" per line
python3 - "${GALV_PAIRS:-pairs}" >"$T/cases" <<'PY'
import itertools, random, sys
F = [("fam", ["gpt2", "llama"]),
     ("plan", ["dp", "zero1", "zero2", "zero3", "tp,sp", "pp2", "dp,tp", "zero2,tp,sp", "zero3,tp", "pp2dp2"]),
     ("prec", ["fp32", "bf16", "bf16g", "fp16"]),
     ("mb", ["1", "2"]),
     ("clip", ["0", "0.5"]),
     ("rc", ["none", "selective", "all"]),
     ("bucket", ["0", "0.01"]),
     ("delay", ["0", "1000"])]
levels = [l for _, l in F]
mode = sys.argv[1]
if mode == "all":
    cases = list(itertools.product(*levels))
elif mode == "singles":
    base = ["gpt2", "dp", "fp32", "1", "0", "none", "0", "0"]
    cases = [tuple(base)]
    for i, l in enumerate(levels):
        for v in l[1:]:
            c = list(base)
            c[i] = v
            if i == 0:  # the family: its dp baseline
                continue
            cases.append(tuple(c))
    cases.insert(1, ("llama",) + tuple(base[1:]))
else:  # pairwise: greedy, each new case the candidate covering the most uncovered pairs
    rng = random.Random(15)
    todo = {(i, a, j, b) for i, j in itertools.combinations(range(len(levels)), 2) for a in levels[i] for b in levels[j]}
    cases = []
    while todo:
        i, a, j, b = min(todo)
        best, gain = None, -1
        for _ in range(200):
            c = [rng.choice(l) for l in levels]
            c[i], c[j] = a, b
            g = sum((x, c[x], y, c[y]) in todo for x, y in itertools.combinations(range(len(c)), 2))
            if g > gain:
                best, gain = c, g
        cases.append(tuple(best))
        todo -= {(x, best[x], y, best[y]) for x, y in itertools.combinations(range(len(best)), 2)}
for k, c in enumerate(cases):
    print(k, *c)
PY
ncases=$(wc -l <"$T/cases")
echo "train_pairs: ${GALV_PAIRS:-pairs}: $ncases cases"

opts() { # PLAN PREC MB CLIP RC BUCKET: galvc's options (the single device: PLAN "one")
  local plan=$1 prec=$2 mb=$3 clip=$4 rc=$5 bucket=$6 o=()
  case $plan in
  one) ;;
  dp | zero1 | zero2 | zero3) o+=(--gpus 2 --strategy "$plan") ;;
  tp,sp) o+=(--gpus 2 --strategy tp,sp) ;;
  pp2) o+=(--pipeline-stages 2) ;;
  pp2dp2) o+=(--pipeline-stages 2 --gpus 4 --strategy dp) ;;
  *) o+=(--gpus 4 --mesh dp=2,tp=2 --strategy "$plan") ;;
  esac
  case $prec in
  bf16) o+=(--precision bf16) ;;
  bf16g) o+=(--precision bf16 --grad-dtype bf16) ;;
  fp16) o+=(--precision fp16) ;;
  esac
  [ "$mb" = 1 ] || o+=(--microbatches "$mb")
  [ "$clip" = 0 ] || o+=(--clip-grad-norm "$clip")
  case $rc in
  selective) o+=(--recompute=selective --fused-attention off) ;;
  all) o+=(--recompute=all) ;;
  esac
  [ "$plan" = one ] || [ "$bucket" = 0 ] || o+=(--bucket-mb "$bucket")
  echo "${o[@]}"
}
compile() { # DIR MODEL OPTIONS..: the program in DIR/, --report-cost in DIR.cost
  local d=$1 m=$2; shift 2
  timeout 300 "$BUILD/galvc" "$m" --batch 8 --seq 8 --train --eps 1e-6 "$@" --report-cost --target cpu -o "$d/" \
    >"$d.cost" 2>"$d.err" </dev/null
}
run() { # DIR DELAY: 2 steps -> DIR.log, DIR.w
  local d=$1 exe=program
  [ -x "$d/launch" ] && exe=launch
  if [ "$2" = 0 ]; then unset GALV_COMM_DELAY_US; else export GALV_COMM_DELAY_US=$2; fi
  local stats=(--comm-stats)
  [ -d "$d/stage0" ] && stats=() # a pipeline: its runtime prints and checks its counts itself
  timeout 300 "$d/$exe" --batches "$T/b" --steps 2 -o "$d.w" "${stats[@]}" </dev/null >"$d.log" 2>&1
  local rc=$?
  unset GALV_COMM_DELAY_US
  return $rc
}
check() { # REF RUN PREC: losses (and weights, fp32; decisions, fp16), bytes, memory -> one summary line
  python3 - "$1" "$2" "$3" "$SRC/tests/lib" <<'PY'
import re, subprocess, sys
ref, run, prec, lib = sys.argv[1:5]
sys.path.insert(0, lib)
from same_training import check, losses
out = []
if prec == "fp32":
    s = check(f"{ref}.log", f"{run}.log", f"{ref}.w", f"{run}.w")
    out.append("= one device (" + s.split("== reference, ")[1] + ")")
else:
    a, b = losses(f"{ref}.log"), losses(f"{run}.log")
    if sorted(a) != [0, 1] or sorted(b) != [0, 1]:
        sys.exit(f"losses {b} vs one device {a}")
    d = max(abs(a[k] - b[k]) for k in a)
    if d > 1e-3:
        sys.exit(f"losses {b} differ from one device's {a} by {d:.2g} (bound 1e-3)")
    if prec == "fp16":
        dec = lambda p: re.findall(r"^step \d+ loss \S+ (scale \S+ skipped \S+)", open(p).read(), re.M)
        if dec(f"{ref}.log") != dec(f"{run}.log") or len(dec(f"{run}.log")) != 2:
            sys.exit(f"loss-scale decisions {dec(run + '.log')} != one device's {dec(ref + '.log')}")
    out.append(f"losses within {d:.1e} of one device")
log = open(f"{run}.log").read()
if "memory per rank:" in log:  # a pipeline
    coll = re.findall(r"stage collectives sent by this rank in 2 steps: all_reduce (\d+), all_gather (\d+), reduce_scatter (\d+), "
                      r"all_to_all (\d+) bytes \(predicted by the entries: (\d+), (\d+), (\d+), (\d+)\)", log)
    xs = re.findall(r"cross-stage \w+ bytes sent by this rank: (\d+) measured, (\d+) planned", log)
    if not xs or any(c[:4] != c[4:] for c in coll) or any(a != b for a, b in xs):  # one device per stage: no stage collectives
        sys.exit(f"pipeline bytes: stage collectives {coll}, cross-stage {xs}")
    out.append(f"bytes = planned ({len(coll)} ranks' stage collectives, {len(xs)} cross-stage counts)")
    mem = [(int(a), int(b)) for a, b in re.findall(r"memory peak (\d+) bytes \(tracker\), the stage plan's peak (\d+) ", log)]
    if len(mem) != len(re.findall(r"memory tracker: peak", log)) or not mem:
        sys.exit("no pipeline memory lines")
    w = max(mem, key=lambda x: abs(x[0] - x[1]) / x[1])
    if abs(w[0] - w[1]) > 0.05 * w[1]:
        sys.exit(f"memory peak {w[0]} (tracker) vs the stage plan's peak {w[1]}: {100 * (w[0] - w[1]) / w[1]:+.2f}% (bound 5%)")
    out.append(f"memory measured {w[0]} vs stage plan {w[1]} ({100 * (w[0] - w[1]) / w[1]:+.2f}% at worst of {len(mem)} ranks)")
    print(", ".join(out))
    sys.exit(0)
r = subprocess.run([sys.executable, f"{lib}/comm_counted.py", f"{run}.log", "2"], capture_output=True, text=True)
if r.returncode:
    sys.exit("bytes: " + (r.stderr or r.stdout).strip())
out.append("bytes = predicted (" + r.stdout.strip() + ")")
c = open(f"{run}.cost").read()
m = re.search(r"^memory per device: .* 16-bit conversion scratch (\d+), total (\d+) of", c, re.M)
if not m:
    sys.exit("no --report-cost memory line")
# the whole total: under --target cpu the conversion scratch predicted is the CPU kernels' (16-bit operands widened
# to fp32), which the tracker counts (kind "16-bit conversion scratch"): the same buffers on both sides
p = int(m.group(2))
log = open(f"{run}.log").read()
got = [int(x) for x in re.findall(r"memory tracker: peak (\d+) bytes", log)]
if not got:
    sys.exit("no measured memory line")
cv = {int(x) for x in re.findall(r"memory tracker: .*16-bit conversion scratch (\d+)\)", log)}
if int(m.group(1)) and cv != {int(m.group(1))}:
    sys.exit(f"16-bit conversion scratch predicted {m.group(1)}, tracked {sorted(cv)}")
w = max(got, key=lambda g: abs(g - p))
if abs(w - p) > 0.05 * p:
    sys.exit(f"memory measured {w} vs predicted {p}: {100 * (w - p) / p:+.2f}% (bound 5%)")
out.append(f"memory predicted {p} measured {min(got)}-{max(got)} ({100 * (w - p) / p:+.2f}%)")
print(", ".join(out))
PY
}

only=",${GALV_PAIRS_ONLY:-},"
while read -r k fam plan prec mb clip rc bucket delay; do
  [ "$only" = ",," ] || [[ $only == *",$k,"* ]] || continue
  desc="$k: $fam $plan $prec mb=$mb clip=$clip rc=$rc bucket=$bucket delay=$delay"
  rk="$T/ref-$fam-$prec-$clip"
  if [ ! -f "$rk.log" ] && [ ! -f "$rk.bad" ]; then
    # shellcheck disable=SC2046
    if ! compile "$rk" "$T/$fam.onnx" $(opts one "$prec" 1 "$clip" none 0) || ! run "$rk" 0; then
      touch "$rk.bad"
      bad "one device $fam $prec clip=$clip: $(grep -m2 -i error "$rk.err" "$rk.log" 2>/dev/null | head -2)"
    fi
  fi
  [ -f "$rk.bad" ] && { bad "$desc: no single-device reference"; continue; }
  d="$T/case$k"
  # shellcheck disable=SC2046
  o=$(opts "$plan" "$prec" "$mb" "$clip" "$rc" "$bucket")
  # shellcheck disable=SC2086
  if ! compile "$d" "$T/$fam.onnx" $o; then bad "$desc: galvc $o: $(grep -m2 error "$d.err")"; continue; fi
  if ! run "$d" "$delay"; then bad "$desc: run: $(grep -m2 -i error "$d.log")"; continue; fi
  if r=$(check "$rk" "$d" "${prec%g}" 2>&1); then ok "$desc: $r"; else bad "$desc: $r"; fi
  rm -rf "$d" "$d.w"
done <"$T/cases"

echo "train_pairs: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
