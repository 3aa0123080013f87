#!/usr/bin/env bash
# The CUDA training step's --profile-out and the CUDA inference program's --trace under emulation
# (docs/cuda-target.md, "Traces"). Tiny GPT-2 (2 layers, hidden 32, vocab 64), batch 8 x 8, --target cuda, built
# with `make emu` (program.cu and runtime/cuda/ over the CPU execution layer, NCCL over MPI), run with mpirun:
#   training, --gpus 2 --strategy dp --bucket-mb 0.01, 3 AdamW steps with --profile-out FILE: the losses and weights
#            are the run's without it, bit for bit; FILE (rank 0) is runtime/prof.c's kernel profile with the CPU
#            training program's fields (program-cpu of the same directory, make cpu, writes it as reference): "run"
#            "training step", "runs" 2 (the steps after the first), one entry per call site of program.cu's
#            galv_kernels[] table in its order, each time finite and > 0 (under emulation every call takes host
#            time), their sum at most the step's mean time the program prints (the intervals lie inside the
#            step); bench/layer_profile.py turns it into a galvc --profile file as bench/gpu_check.sh does (both
#            layers, forward and backward times > 0);
#   inference, --gpus 2 --strategy tp, --warmup 1 --iters 2 with --trace FILE: the logits are the run's without
#            it, byte for byte; each rank's trace (FILE, FILE.rank1) passes tests/cuda_step_trace_check.py
#            --inference for the 3 runs (every kernel call site of program.cu on the compute stream and every
#            collective on the communication stream, in program order, each collective after the kernels
#            before its call site); the checker rejects the trace with two kernels swapped;
#   bad input: --trace with --profile-out (training; inference: with --profile-out or --profile) is one error
#            line and exit status 1, and no file is written; --help names the options.
# No time is judged beyond those bounds (2 shared cores).
# Usage: cuda_emu_prof_trace.sh BUILD_DIR
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
np.save('$T/b/labels.npy', r.randint(0, 64, (2, 8, 8)).astype(np.int64))
np.save('$T/ids.npy', r.randint(0, 64, (8, 8)).astype(np.int64))" || { echo "FAIL batches"; exit 1; }
d="$T/dp" i="$T/tp"
timeout 300 "$BUILD/galvc" "$m" --batch 8 --seq 8 --train --gpus 2 --strategy dp --bucket-mb 0.01 --target cuda --no-build \
  -q -o "$d/" </dev/null >"$T/dp.gen" 2>&1 || { echo "FAIL galvc (training): $(grep -m3 error "$T/dp.gen")"; exit 1; }
timeout 300 "$BUILD/galvc" "$m" --batch 8 --seq 8 --gpus 2 --strategy tp --target cuda --no-build -q -o "$i/" </dev/null \
  >"$T/tp.gen" 2>&1 || { echo "FAIL galvc (inference): $(grep -m3 error "$T/tp.gen")"; exit 1; }
nice make -s -C "$i" emu >"$T/tp.make" 2>&1 &
if ! nice make -s -C "$d" emu >"$T/dp.make" 2>&1; then wait; echo "FAIL make emu: $(tail -n 5 "$T/dp.make")"; exit 1; fi
if ! wait $!; then echo "FAIL make emu (inference): $(tail -n 5 "$T/tp.make")"; exit 1; fi
nice make -s -C "$d" cpu >"$T/cpu.make" 2>&1 || { echo "FAIL make cpu: $(tail -n 5 "$T/cpu.make")"; exit 1; }
echo "     built: $(($(date +%s) - t0)) s"

train() { # PROGRAM TAG [OPTIONS]: 3 steps -> $T/TAG.log, $T/TAG.w
  local prog=$1 tag=$2; shift 2
  GALV_PROGRAM=$prog timeout 300 "$d/launch" --batches "$T/b" --steps 3 -o "$T/$tag.w" "$@" </dev/null >"$T/$tag.log" 2>&1 ||
    { bad "$tag: run: rc $?: $(grep -m2 -i error "$T/$tag.log")"; return 1; }
}

# ---- training: --profile-out
if train program-emu plain && train program-emu prof --profile-out "$T/prof.json" &&
   train program-cpu cpu --profile-out "$T/cpu.json"; then
  if r=$(python3 - "$T" "$SRC/tests/lib" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
from same_training import check
t = sys.argv[1]
print(check(f"{t}/plain.log", f"{t}/prof.log", f"{t}/plain.w", f"{t}/prof.w", loss_rtol=0, exact=True))
PY
  ); then ok "training: --profile-out leaves the numbers unchanged: $r"; else bad "training: --profile-out changes the numbers: $r"; fi
  grep -q "wrote the kernel profile $T/prof.json (2 steps timed)" "$T/prof.log" ||
    bad "training: no 'wrote the kernel profile' line: $(grep -m1 profile "$T/prof.log")"
  if r=$(python3 - "$d/program.cu" "$T/prof.json" "$T/cpu.json" "$T/prof.log" <<'PY'
import json, math, re, sys
prog, path, cpu, log = sys.argv[1:5]
src = open(prog).read()
tab = re.search(r"const galv_kernel_info galv_kernels\[\] = \{\n(.*?)\n\};", src, re.S).group(1)
sites = [(k, n.encode().decode("unicode_escape")) for k, n in re.findall(r'^\s*\{"([^"]*)", "((?:[^"\\]|\\.)*)"\}', tab, re.M)]
p, c = json.load(open(path)), json.load(open(cpu))
if sorted(p) != sorted(c):
    sys.exit(f"fields {sorted(p)}, the CPU program's {sorted(c)}")
for key in ("format", "version", "run", "runs"):
    if p[key] != c[key]:
        sys.exit(f"{key} {p[key]!r}, the CPU program's {c[key]!r}")
if (p["run"], p["runs"]) != ("training step", 2):
    sys.exit(f"run {p['run']!r}, runs {p['runs']}: want 'training step', 2")
if any(sorted(e) != sorted(c["kernels"][0]) for e in p["kernels"]):
    sys.exit(f"an entry's fields differ from the CPU program's {sorted(c['kernels'][0])}")
got = [(e["kind"], e["node"]) for e in p["kernels"]]
if got != sites:
    i = next((j for j, (a, b) in enumerate(zip(got, sites)) if a != b), min(len(got), len(sites)))
    sys.exit(f"{len(got)} entries, want the {len(sites)} call sites of program.cu in order; first difference at {i}")
ms = [e["ms"] for e in p["kernels"]]
badt = [e for e in p["kernels"] if not (isinstance(e["ms"], (int, float)) and math.isfinite(e["ms"]) and e["ms"] > 0)]
if badt:
    sys.exit(f"{len(badt)} call sites without a positive time, e.g. {badt[0]}")
step = float(re.search(r"training step: mean ([0-9.]+) ms", open(log).read()).group(1))
if sum(ms) > step + 0.0005 + 1e-6 * len(ms):
    sys.exit(f"call sites sum to {sum(ms):.3f} ms, more than the step's mean {step:.3f} ms")
print(f"{len(ms)} call sites in program order, the CPU program's fields; sum {sum(ms):.1f} ms of the step's {step:.1f} ms, "
      f"max {max(ms):.1f} ms ({p['kernels'][ms.index(max(ms))]['kind']})")
PY
  ); then ok "training: the kernel profile: $r"; else bad "training: the kernel profile: $r"; fi
  # as bench/gpu_check.sh uses it
  if python3 "$SRC/bench/layer_profile.py" -o "$T/layers.json" --point "$T/prof.json,4" --layers 2 --hidden 32 --seq 8 \
       --vocab 64 >"$T/lp.log" 2>&1 &&
     r=$(python3 - "$T/layers.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
assert p["format"] == "galvc-profile" and p["model"]["layers"] == 2, p
(lp,) = p["layer"]["points"]
assert lp["microbatch"] == 4 and lp["forward_ms"] > 0 and lp["backward_ms"] > 0, lp
print(f"layer forward {lp['forward_ms']:.2f} ms, backward {lp['backward_ms']:.2f} ms")
PY
     ) && grep -q "over 2 layers" "$T/lp.log"; then
    ok "training: bench/layer_profile.py takes the profile: $r"
  else bad "training: bench/layer_profile.py: $(cat "$T/lp.log") $r"; fi
fi

# ---- inference: --trace
infer() { # TAG [OPTIONS] -> $T/TAG.log, $T/TAG.out
  local tag=$1; shift
  GALV_PROGRAM=program-emu timeout 300 "$i/launch" --input input_ids="$T/ids.npy" --warmup 1 --iters 2 -o "$T/$tag.out" "$@" \
    </dev/null >"$T/$tag.log" 2>&1 || { bad "$tag: run: rc $?: $(grep -m2 -i error "$T/$tag.log")"; return 1; }
}
if infer iplain && infer itrace --trace "$T/i.trace.json"; then
  if cmp -s "$T/iplain.out/logits.npy" "$T/itrace.out/logits.npy"; then ok "inference: --trace leaves the logits unchanged (byte for byte)"
  else bad "inference: --trace changes the logits"; fi
  grep -q "rank 0: wrote the trace $T/i.trace.json (a compute and a communication stream)" "$T/itrace.log" ||
    bad "inference: no 'wrote the trace' line: $(grep -m1 trace "$T/itrace.log")"
  for f in "$T/i.trace.json" "$T/i.trace.json.rank1"; do
    if out=$(python3 "$CHECK" "$i/program.cu" "$f" 3 --inference 2>&1); then ok "inference: $(basename "$f"): $out"
    else bad "inference: $(basename "$f"): $out"; fi
  done
  # teeth: two kernels of the first run swapped
  python3 - "$T/i.trace.json" "$T/i.swap.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
ev = sorted((e for e in t["traceEvents"] if e.get("ph") == "X" and e["tid"] == 0 and e["cat"] == "compute"
             and e["args"]["step"] == 0), key=lambda e: e["ts"])
a, b = next((x, y) for x, y in zip(ev, ev[1:]) if x["name"] != y["name"])
a["ts"], b["ts"] = b["ts"], a["ts"]
a["dur"], b["dur"] = b["dur"], a["dur"]
json.dump(t, open(sys.argv[2], "w"))
PY
  if out=$(python3 "$CHECK" "$i/program.cu" "$T/i.swap.json" 3 --inference 2>&1); then bad "checker accepted two swapped kernels: $out"
  else ok "checker rejects two swapped kernels: $out"; fi
fi

# ---- bad input: one error line, exit 1, no file
refused() { # TAG LAUNCH_DIR EXPECTED OPTIONS...
  local tag=$1 dir=$2 want=$3; shift 3
  rm -f "$T/x.json" "$T/y.json"
  GALV_PROGRAM=program-emu timeout 120 "$dir/launch" "$@" </dev/null >"$T/$tag.err" 2>&1
  local rc=$?
  if [ $rc = 1 ] && [ "$(wc -l <"$T/$tag.err")" = 1 ] && grep -q "error: $want" "$T/$tag.err" &&
     [ ! -e "$T/x.json" ] && [ ! -e "$T/y.json" ]; then ok "$tag: $(cat "$T/$tag.err")"
  else bad "$tag: rc $rc, want 1 and one line '$want': $(head -c 400 "$T/$tag.err")"; fi
}
refused "training: --trace with --profile-out" "$d" "--trace and --profile-out time the same marks: give one of them" \
  --batches "$T/b" --trace "$T/x.json" --profile-out "$T/y.json"
refused "inference: --trace with --profile-out" "$i" "--trace and --profile-out time the same marks: give one of them" \
  --input input_ids="$T/ids.npy" --trace "$T/x.json" --profile-out "$T/y.json"
refused "inference: --trace with --profile" "$i" "--trace and --profile time the same marks: give one of them" \
  --input input_ids="$T/ids.npy" --profile --trace "$T/x.json"
GALV_PROGRAM=program-emu "$d/launch" --help >"$T/dp.help" 2>&1
GALV_PROGRAM=program-emu "$i/launch" --help >"$T/tp.help" 2>&1
if grep -q "its CUDA events' interval on the compute stream" "$T/dp.help" &&
   grep -q "^  --trace FILE  .*a Chrome trace of every run" "$T/tp.help"; then
  ok "--help: the training step's --profile-out, the inference program's --trace"
else bad "--help does not describe --profile-out (training) and --trace (inference)"; fi
echo "     total: $(($(date +%s) - t0)) s"
echo "cuda_emu_prof_trace: $pass passed, $fail failed"
[ "$fail" = 0 ]
