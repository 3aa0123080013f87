#!/usr/bin/env bash
# Pipeline (inter-operator) programs (docs/pipeline.md, "Per-stage
# executables"): galvc --pipeline-stages S --microbatches B writes one CPU
# program per stage (OUT/stageI/) and OUT/launch (mpirun MPMD); run under
# GALV_COMM_SYNC=1 (synchronous sends: an ordering that could deadlock
# times out instead of passing by buffering) and `timeout`, the logits equal
# the single-device program's (rtol 1e-4, atol 1e-5). The runtime's and the
# cost model's Chrome traces are valid JSON with an "X" event per stage and
# microbatch. Bad input: more stages than layer groups, a memory limit no
# partition fits, --train with an unknown optimizer, a batch that B does not
# divide, --pipeline-recompute without --train. `--pipeline-stages 2 --gpus 4` (2x2): stages of 2 ranks, each
# planned by the intra-operator planner. `--pipeline-stages auto
# --microbatches auto --gpus 4`: the stage DP chooses the stages, the
# devices per stage and B | 8 with stage costs from the planner, prints the
# choice, and the programs equal the single device too; so does auto over 3
# ranks (nodes of 4) on a ViT with a 30,000-class head, whose stages may get
# different device counts (the DP's free choice; 1,2 today). `2a:2`: the
# stages costed by the analytic formula (--stage-cost analytic: no stage
# program planned) equal the single device too.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
CASES=${GALV_PIPE_CASES:-2:2 2:4 3:2 4:4 2x2:2 2x2:8 auto:auto 2a:2}
fam=gpt2
m="$T/$fam.onnx"
python3 "$SRC/examples/make_model.py" "$fam" -o "$m" --no-verify >/dev/null || { echo "FAIL make_model"; exit 1; }
timeout 300 "$BUILD/galvc" "$m" --batch 8 --seq 16 --target cpu -q -o "$T/one/" 2>"$T/err" || { echo "FAIL single: $(cat "$T/err")"; exit 1; }
python3 - "$SRC" "$m" "$T/in" >"$T/args" 2>"$T/err" <<'PY' || { echo "FAIL inputs: $(cat "$T/err")"; exit 1; }
import sys, onnx, numpy as np
sys.path.insert(0, sys.argv[1] + "/tests")
from model_inputs import make_inputs
args = []
for i, (name, a) in enumerate(make_inputs(onnx.load(sys.argv[2], load_external_data=False), 8, 16).items()):
    fn = f"{sys.argv[3]}_{i}.npy"
    np.save(fn, a)
    args.append(f"--input {name}={fn}")
print(" ".join(args))
PY
# shellcheck disable=SC2046
timeout 60 "$T/one/program" $(cat "$T/args") -o "$T/one/res" >/dev/null 2>"$T/err" || { echo "FAIL single run: $(cat "$T/err")"; exit 1; }
# check_devices PLAN LAUNCH S MAX: the printed devices per stage ("k devices per stage" or "devices per stage
# a,b,..") are out/launch's -np per stage, in order, at most MAX ranks in all
check_devices() {
  local want
  want=$(grep -m1 -o 'devices per stage [0-9,]*' "$1" | sed 's/devices per stage //')
  if [ -z "$want" ]; then
    local k
    k=$(grep -m1 -o '[0-9]* devices* per stage' "$1" | cut -d' ' -f1)
    [ -n "$k" ] || return 1
    want=$(for _ in $(seq "$3"); do printf '%s,' "$k"; done)
    want=${want%,}
  fi
  local got
  got=$(grep -o -- '-np [0-9]*' "$2" | awk '{print $2}' | paste -sd, -)
  [ "$got" = "$want" ] && [ "$(tr ',' '\n' <<<"$got" | awk '{s += $1} END {print s}')" -le "$4" ]
}
for c in $CASES; do
  S=${c%%:*} B=${c#*:}
  d="$T/pp$S-$B"
  extra=()
  [ "$S" = auto ] && extra=(--gpus 4 --target cpu) # the DP chooses the stages, devices per stage and B | 8
  if [ "$S" = 2x2 ]; then # 2 stages of 2 devices, each stage's plan from the intra-operator planner
    S=2 extra=(--gpus 4 --target cpu --stage-cuts dp)
  fi
  q=(-q)
  if [ "$S" = 2a ]; then # the analytic stage cost instead of the planner's: its report, no stage program planned
    S=2 q=() cost=(--stage-cost analytic)
  else cost=(); fi
  if ! timeout 600 "$BUILD/galvc" "$m" --batch 8 --seq 16 --pipeline-stages "$S" --microbatches "$B" "${extra[@]}" "${cost[@]}" \
      --trace-plan "$d.plan.json" "${q[@]}" -o "$d/" >"$T/plan" 2>"$T/err"; then
    bad "pp=$S B=$B ${cost[*]}: galvc: $(grep -m3 error "$T/err")"
    continue
  fi
  if [ ${#cost[@]} -gt 0 ]; then
    if grep -q 'stage programs planned' "$T/err" || ! grep -q '^pipeline: 2 stages' "$T/err"; then
      bad "pp=2 B=$B --stage-cost analytic: the planner costed the stages, or no pipeline report: $(grep -m2 'stage' "$T/err")"
      continue
    fi
    ok "pp=2 B=$B --stage-cost analytic: $(grep -m1 '^pipeline: 2 stages' "$T/err"), no stage program planned"
  fi
  if [ "$S" = auto ]; then # the choice is printed: "pipeline auto: S stages (chosen), cuts ..., B microbatches (chosen), predicted step X ms
    # (stage ms/microbatch ...), K devices per stage (chosen), strategies ..., planned in T s"
    line=$(grep -m1 '^pipeline auto: [0-9]* stages (chosen), cuts at groups .* [0-9]* microbatches (chosen), predicted step [0-9.]* ms (.*), \([0-9]* devices* per stage\|devices per stage [0-9,]*\) (chosen), strategies .*, planned in [0-9.]* s$' "$T/plan")
    if [ -z "$line" ]; then bad "pp=auto: no choice printed: $(head -3 "$T/plan")"; continue; fi
    S=$(echo "$line" | sed 's/^pipeline auto: \([0-9]*\) stages.*/\1/') B=$(echo "$line" | sed 's/.* \([0-9]*\) microbatches.*/\1/')
    [ "$(ls -d "$d"/stage* | wc -l)" = "$S" ] || { bad "pp=auto: $S stages printed, $(ls -d "$d"/stage* | wc -l) written"; continue; }
    echo "     $line"
  fi
  if [ ${#extra[@]} -gt 0 ] && ! check_devices "$T/plan" "$d/launch" "$S" 4; then
    bad "pp=$S: $(grep -m1 -o '[0-9]* devices* per stage\|devices per stage [0-9,]*' "$T/plan") printed, launch: $(tail -1 "$d/launch")"
    continue
  fi
  if [ ${#extra[@]} -gt 0 ]; then
    [ "${c%%:*}" = 2x2 ] && echo "     $(grep -m1 '^pipeline dp cuts' "$T/plan")"
  fi
  # shellcheck disable=SC2046
  if ! timeout 120 "$d/launch" $(cat "$T/args") -o "$d/res" --trace "$d.trace.json" >"$T/out" 2>"$T/err"; then
    bad "pp=$S B=$B: run: $(grep -m3 -i error "$T/err" "$T/out")"
    continue
  fi
  if msg=$(python3 - "$T/one/res" "$d/res" "$d.trace.json" "$d.plan.json" "$S" "$B" 2>&1 <<'PY'
import sys, os, json, numpy as np
a, b, tr, pl, S, B = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
for f in sorted(os.listdir(a)):
    x, y = np.load(os.path.join(a, f)), np.load(os.path.join(b, f))
    if x.shape != y.shape or not np.allclose(y, x, rtol=1e-4, atol=1e-5):
        sys.exit(f"{f}: max abs diff {np.abs(x.astype(np.float64) - y).max() if x.shape == y.shape else 'shape ' + str(y.shape)}")
for path in (tr, pl):
    ev = json.load(open(path))["traceEvents"]
    fw = {(e["pid"], e["name"]) for e in ev if e["ph"] == "X" and e["name"].startswith("forward")}
    if len(fw) != S * B or any(e["dur"] < 0 for e in ev):
        sys.exit(f"{path}: {len(fw)} forward events, expected {S * B}")
print("logits equal, traces", S * B, "forward events")
PY
); then
    ok "pp=$S B=$B: $msg; $(grep -c 'high-water' "$T/out") stages report arena high-water"
  else
    bad "pp=$S B=$B: $msg"
  fi
done
# auto over 3 ranks in nodes of 4 on a ViT with a heavy head (8 blocks, hidden 128, 30,000 classes): the stage
# DP's free choice may give the stages different device counts; they are what out/launch starts, and the logits
# equal the single device's
if [ -z "${GALV_PIPE_CASES:-}" ]; then
  v="$T/vit.onnx"
  python3 "$SRC/examples/make_model.py" vit -o "$v" --layers 8 --hidden 128 --heads 4 --classes 30000 --no-verify >/dev/null &&
    python3 -c "import numpy as np; np.save('$T/px.npy', np.random.default_rng(0).standard_normal((8, 3, 32, 32)).astype(np.float32))" &&
    timeout 300 "$BUILD/galvc" "$v" --batch 8 --target cpu -q -o "$T/vone/" 2>"$T/err" &&
    timeout 60 "$T/vone/program" --input pixel_values="$T/px.npy" -o "$T/vone/res" >/dev/null 2>>"$T/err" ||
    bad "vit single device: $(head -3 "$T/err")"
  if ! timeout 600 "$BUILD/galvc" "$v" --batch 8 --pipeline-stages auto --microbatches auto --gpus 3 --gpus-per-node 4 \
      --target cpu -q -o "$T/vauto/" >"$T/plan" 2>"$T/err"; then
    bad "vit auto: galvc: $(head -3 "$T/err")"
  elif ! S=$(sed -n 's/^pipeline auto: \([0-9]*\) stages (chosen).*/\1/p' "$T/plan") || [ -z "$S" ] ||
      ! check_devices "$T/plan" "$T/vauto/launch" "$S" 3; then
    bad "vit auto: $(head -1 "$T/plan"), launch: $(tail -1 "$T/vauto/launch")"
  elif ! timeout 120 "$T/vauto/launch" --input pixel_values="$T/px.npy" -o "$T/vauto/res" >"$T/out" 2>"$T/err"; then
    bad "vit auto: run: $(grep -m3 -i error "$T/err" "$T/out")"
  elif msg=$(python3 -c "
import sys, numpy as np
x, y = np.load('$T/vone/res/logits.npy'), np.load('$T/vauto/res/logits.npy')
if x.shape != y.shape or not np.allclose(y, x, rtol=1e-4, atol=1e-5): sys.exit(f'max abs diff {np.abs(x - y).max()}')
print(f'logits equal the single device (max abs diff {np.abs(x - y).max():.2g})')" 2>&1); then
    ok "vit auto on 3 ranks: $msg; $(head -1 "$T/plan")"
  else
    bad "vit auto: $msg"
  fi
fi
# bad input: one error line, exit 1
expect_err() { # WANT ARGS...
  local want=$1
  shift
  if timeout 120 "$BUILD/galvc" "$m" --batch 8 --seq 16 -q "$@" -o "$T/bad/" >/dev/null 2>"$T/err"; then
    bad "galvc $*: succeeded"
  elif [ "$(wc -l <"$T/err")" = 1 ] && grep -q "$want" "$T/err"; then
    ok "galvc $*: $(cat "$T/err")"
  else
    bad "galvc $*: $(head -3 "$T/err")"
  fi
}
expect_err "more stages than layers" --pipeline-stages 3 --layers 2
expect_err "no partition fits the memory limit" --pipeline-stages 2 --memory-limit 1000
expect_err "input .input_ids.: its batch (dim 0) of 8 does not split into --microbatches 3" --pipeline-stages 2 --microbatches 3
expect_err "expected adamw or sgd" --pipeline-stages 2 --train --optimizer lamb
expect_err "expected 1f1b, gpipe, zb-h1, interleaved or auto" --pipeline-stages 2 --schedule zigzag
expect_err "needs --train and --pipeline-stages" --pipeline-stages 2 --pipeline-recompute
echo "pipeline_models: $pass passed, $fail failed"
[ "$fail" = 0 ]
