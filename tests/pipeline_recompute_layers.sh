#!/usr/bin/env bash
# Recomputation per layer inside pipeline stage programs (docs/pipeline.md,
# "Recomputation per layer inside stages"): galvc --recompute=all|selective
# with --pipeline-stages runs the recompute pass on every stage's training
# function, so an earlier stage's stash holds only what the recomputed
# backward reads and its backward entry recomputes the layers. Under
# GALV_COMM_SYNC=1 and `timeout`, 2 AdamW steps of the tiny GPT-2 / Llama of
# tests/lib/tiny_lms.sh (batch 8 x seq 8) print the single device's losses and
# leave its weights (rtol 1e-4, atol 1e-5) for pp=2 with --recompute=all
# (1F1B; GPipe on pp=2 x dp=2, 4 ranks) and --recompute=selective (GPipe;
# Llama 1F1B); stage 0's stash per microbatch as the runtime allocates it
# (`saved activations in flight: ... x b bytes`) equals galvc's count of the
# backward entry's state and the stage DP's estimate, and is smaller than the
# same stage's stash without recomputation. With the stages chosen
# (--pipeline-stages auto) under a memory limit that no stashing stage 0
# meets, the stage DP picks per-layer recomputation for it (the choice line
# and the plan print) and the run equals the single device. plan.json (the
# default search's pipeline) records stage_layer_recompute and --plan replays
# an edited one. A middle stage of three layers (9-layer GPT-2, 3 stages)
# recomputes all three: its stash is their inputs only. Bad input: one error line. The attention cores stay four-op
# chains (--fused-attention off): fused, a core keeps no S x S value, so
# selective recomputation has nothing to drop (its stash equals the stash
# without recomputation; fused stages: tests/fused_attention.sh).
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
. "$SRC/tests/lib/tiny_lms.sh"
. "$SRC/tests/lib/rank_compare.sh"
tiny_lms "$T"
lm_batches "$T/b" 8 8
for fam in gpt2 llama; do
  single_program "$T/one-$fam" "$T/$fam.onnx" "--batches $T/b --steps 2" --input-shape input_ids=8x8 --train --fused-attention off
done

# galvc's stash line of stage 0: "B E" (bytes per microbatch, the stage DP's estimate)
stash_of() { sed -n 's/.*stage 0: forward and backward entries, stash [0-9]* values, \([0-9]*\) bytes per microbatch (the stage DP.s estimate \([0-9]*\)).*/\1 \2/p' "$1"; }
# the runtime's stash of stage 0 per microbatch (its first rank's line; ranks' lines may interleave)
run_stash_of() {
  grep -o 'stage 0, rank [0-9]*[^]]*\]: saved activations in flight: peak [0-9]* bytes ([0-9]* microbatches x [0-9]* bytes)' "$1" |
    head -1 | sed 's/.* x \([0-9]*\) bytes)$/\1/'
}
# the losses and weights of run $2 (log, weights dir) against the single device of family $1
same_as_one() { same_training "$T/one-$1.log" "$2.log" "$T/one-$1.w" "$2.w" | sed "s/== reference/== single device/"; }

# the stash without recomputation (the same stages, not built): the reference
declare -A none
# (the stash per microbatch does not depend on the schedule)
for v in gpt2:1 gpt2:4 llama:1; do
  IFS=: read -r fam g <<<"$v"
  st=()
  [ "$g" = 4 ] && st=(--gpus 4 --strategy dp)
  timeout 300 "$BUILD/galvc" "$T/$fam.onnx" --batch 8 --seq 8 --train --target cpu --fused-attention off --pipeline-stages 2 --microbatches 2 --schedule 1f1b \
    "${st[@]}" --no-build -o "$T/none-$fam-$g/" 2>"$T/none.err" || { bad "$fam: galvc without --recompute: $(head -3 "$T/none.err")"; continue; }
  read -r nb _ <<<"$(stash_of "$T/none.err")"
  none[$fam:$g]=$nb
done

# CASE = family:schedule:mode:gpus (4: pp=2 x dp=2, --strategy dp)
for c in ${GALV_PIPE_RC_CASES:-gpt2:1f1b:all:1 gpt2:gpipe:selective:1 gpt2:gpipe:all:4 llama:1f1b:selective:1}; do
  IFS=: read -r fam sc mode g <<<"$c"
  label="$fam pp=2$([ "$g" = 4 ] && echo " x dp=2") $sc --recompute=$mode"
  d="$T/$fam-$sc-$mode-$g"
  st=()
  [ "$g" = 4 ] && st=(--gpus 4 --strategy dp)
  if ! timeout 600 "$BUILD/galvc" "$T/$fam.onnx" --batch 8 --seq 8 --train --target cpu --fused-attention off --pipeline-stages 2 --microbatches 2 --schedule "$sc" \
      "${st[@]}" --recompute="$mode" -o "$d/" </dev/null 2>"$d.galvc"; then
    bad "$label: galvc: $(grep -m3 error "$d.galvc")"
    continue
  fi
  if ! timeout 120 "$d/launch" --batches "$T/b" --steps 2 -o "$d.w" </dev/null >"$d.log" 2>"$T/err"; then
    bad "$label: run: $(grep -m3 -i error "$T/err" "$d.log")"
    continue
  fi
  if msg=$(same_as_one "$fam" "$d" 2>&1); then ok "$label: $msg"; else bad "$label: $msg"; fi
  read -r b e <<<"$(stash_of "$d.galvc")"
  r=$(run_stash_of "$d.log")
  n=${none[$fam:$g]:-}
  if [ -z "$b" ] || [ -z "$r" ] || [ -z "$n" ]; then
    bad "$label: stash lines missing (galvc '$b', runtime '$r', without recomputation '$n')"
  elif [ "$r" = "$b" ] && [ "$b" = "$e" ] && [ "$b" -lt "$n" ]; then
    ok "$label: stage 0 stash $r bytes per microbatch = galvc's $b = the stage DP's estimate $e < $n without recomputation"
  else
    bad "$label: stage 0 stash: runtime $r, galvc $b, estimate $e, without recomputation $n"
  fi
done

# a middle stage of three layers recomputes all three: its first layer reads the stage's input (an argument, where
# the next layers read the layer before) and is found as the same block, so the stash holds the three layers' inputs
# only (9-layer GPT-2, 3 stages of 3 blocks; the build before took the first layer for no layer and stashed its
# activations: 13 values, 61952 bytes)
m9="$T/gpt2-9.onnx"
if python3 "$SRC/examples/make_model.py" gpt2 -o "$m9" --layers 9 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null &&
   timeout 300 "$BUILD/galvc" "$m9" --batch 8 --seq 8 --train --target cpu --pipeline-stages 3 --layers blocks --stage-cuts equal \
     --microbatches 2 --schedule 1f1b --recompute=all --no-build -o "$T/s9/" </dev/null 2>"$T/s9.err"; then
  l=$(sed -n 's/.*stage 1: forward and backward entries, stash \([0-9]*\) values, \([0-9]*\) bytes per microbatch.*/\1 \2/p' "$T/s9.err")
  # three values of [4, 8, 32] f32 (a microbatch of 4 sequences of 8 tokens, hidden 32)
  if [ "$l" = "3 12288" ]; then ok "9 layers, 3 stages, --recompute=all: stage 1 stashes its 3 layers' inputs ($l bytes)"
  else bad "9 layers, 3 stages, --recompute=all: stage 1's stash '$l' (values, bytes), expected '3 12288'"; fi
else
  bad "9 layers, 3 stages: galvc: $(grep -m2 error "$T/s9.err")"
fi

# the stage DP's choice: under a limit no stashing stage 0 meets, per-layer recomputation (GPT-2, 2 devices)
d="$T/auto"
lim=${GALV_PIPE_RC_LIMIT:-500000}
if ! timeout 600 "$BUILD/galvc" "$T/gpt2.onnx" --batch 8 --seq 8 --train --target cpu --fused-attention off --pipeline-stages auto --gpus 2 --microbatches 2 \
    --schedule 1f1b --memory-limit "$lim" -o "$d/" </dev/null >"$d.galvc" 2>&1; then
  bad "auto, limit $lim: galvc: $(grep -m3 error "$d.galvc")"
else
  line=$(grep -m1 "^pipeline auto:" "$d.galvc")
  if [[ $line == *"+recompute=all"* || $line == *"+recompute=selective"* ]] && grep -q "^  stage 0: .*, recompute=" "$d.galvc"; then
    ok "auto, limit $lim: the stage DP chose per-layer recomputation (strategies${line#*strategies})"
  else
    bad "auto, limit $lim: no per-layer recomputation chosen: $line"
  fi
  if timeout 120 "$d/launch" --batches "$T/b" --steps 2 -o "$d.w" </dev/null >"$d.log" 2>"$T/err"; then
    if msg=$(same_as_one gpt2 "$d" 2>&1); then ok "auto, limit $lim: $msg"; else bad "auto, limit $lim: $msg"; fi
  else
    bad "auto, limit $lim: run: $(grep -m3 -i error "$T/err" "$d.log")"
  fi
fi

# plan.json (the default search's pipeline: one device per node, a 1 MB/s link between nodes and a memory limit below
# the replicated plan's state, as tests/plan_joint.sh) records each stage's per-layer recomputation; --plan replays an
# edited one (stage 0 at all), refuses a bad value
python3 -c "
import json
c = json.load(open('$SRC/data/clusters/cpu-local.json'))
c['name'] = 'cpu-slow-net'; c['devices_per_node'] = 1; c['nodes'] = 4; c['inter_node']['bandwidth_gbps'] = 0.001
json.dump(c, open('$T/slow.json', 'w'), indent=1)"
J=(--batch 8 --seq 8 --train --target cpu --fused-attention off --gpus-per-node 1 --cluster "$T/slow.json" --memory-limit 520000)
if timeout 300 "$BUILD/galvc" "$T/gpt2.onnx" "${J[@]}" --gpus 2 --plan-only --plan-out "$T/pj.json" </dev/null >"$T/pj.out" 2>&1 &&
   rec=$(python3 - "$T/pj.json" "$T/pj2.json" "$T/pj3.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
l = p["pipeline"]["stage_layer_recompute"]
if l != ["none"] * p["pipeline"]["stages"]: sys.exit(f"recorded {l}")
p["pipeline"]["stage_layer_recompute"] = ["all"] + l[1:]
json.dump(p, open(sys.argv[2], "w"))
p["pipeline"]["stage_layer_recompute"] = ["most"] + l[1:]
json.dump(p, open(sys.argv[3], "w"))
print(l)
PY
); then
  ok "plan.json records stage_layer_recompute $rec"
  if timeout 300 "$BUILD/galvc" "$T/gpt2.onnx" "${J[@]}" --plan "$T/pj2.json" --plan-only </dev/null >"$T/pj2.out" 2>&1 &&
     grep -q "^  stage 0: .*, recompute=all)" "$T/pj2.out"; then
    ok "--plan replays stage 0 at recompute=all: $(grep -m1 '^  stage 0:' "$T/pj2.out" | sed 's/:[^:]*$//')"
  else
    bad "--plan with stage 0 at all: $(grep -m1 -e '^  stage 0:' -e error "$T/pj2.out")"
  fi
  if timeout 300 "$BUILD/galvc" "$T/gpt2.onnx" "${J[@]}" --plan "$T/pj3.json" --plan-only </dev/null >"$T/pj3.out" 2>&1; then
    bad "--plan with stage_layer_recompute \"most\": accepted"
  elif [ "$(grep -c error "$T/pj3.out")" = 1 ] && grep -q "stage_layer_recompute" "$T/pj3.out"; then
    ok "--plan with stage_layer_recompute \"most\": $(grep error "$T/pj3.out")"
  else
    bad "--plan with stage_layer_recompute \"most\": $(head -3 "$T/pj3.out")"
  fi
else
  bad "plan.json of the default search's pipeline: ${rec:-$(grep -m3 error "$T/pj.out")}"
fi

# bad input: one error line, non-zero exit (per-layer recomputation under the interleaved schedule runs:
# tests/pipeline_interleaved.sh)
for v in "--schedule zb-h1 --recompute=all"; do
  if timeout 60 "$BUILD/galvc" "$T/gpt2.onnx" --batch 8 --seq 8 --train --target cpu --fused-attention off --pipeline-stages 2 --microbatches 2 $v --plan-only \
      >"$T/bad.out" 2>"$T/bad.err"; then
    bad "$v: accepted"
  elif [ "$(grep -c "error" "$T/bad.err")" = 1 ] && grep -q "recompute=" "$T/bad.err"; then
    ok "$v: $(grep error "$T/bad.err")"
  else
    bad "$v: $(head -3 "$T/bad.err")"
  fi
done
echo "pipeline_recompute_layers: $pass passed, $fail failed"
[ "$fail" = 0 ]
