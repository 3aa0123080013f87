#!/usr/bin/env bash
# plan.json records the training numerics (docs/planner.md, "Report and
# plan.json"): "precision", "grad_dtype" and "clip_grad_norm", in the
# planner's plan and in the pipeline's; --plan FILE compiles them again.
# Tiny GPT-2 (2 layers, hidden 32, vocab 64), batch 8 x seq 8, --target cpu,
# written without building (--no-build):
#   (1) the planner's plan (--gpus 2) made under --precision bf16
#       --grad-dtype bf16 --clip-grad-norm 1, given back with --plan and no
#       such flags: program.c and weights.bin byte for byte those of the
#       planned compile (and not those of the same --plan compile with the
#       plan's numerics fields removed: the flags then default to fp32 and
#       no clipping, so the fields are what reproduces them);
#   (2) the same for a pipeline plan (--pipeline-stages 2 --microbatches 2,
#       --plan-out): every stage's programs, tables and weights alike, its
#       pipe_stage.c with the clipping norm;
#   (3) --fp16 with --grad-dtype fp16 recorded and reproduced alike;
#   (4) the plan with the same flags given again: the same program; a
#       conflicting --precision, --grad-dtype or --clip-grad-norm (or a clip
#       where the plan has none): one error line naming the plan file and
#       both values, exit 2, nothing written;
#   (5) a malformed field: one error line naming the file, line and field.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
m="$T/g.onnx"
python3 "$SRC/examples/make_model.py" gpt2 -o "$m" --layers 2 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null ||
  { echo "FAIL make_model"; exit 1; }
G=("$BUILD/galvc" "$m" --batch 8 --seq 8 --train --target cpu --no-build -q)
# same DIR1 DIR2: every program, table and weights file of DIR1 (stage directories included) byte-identical in DIR2
same() {
  local f n=0
  while IFS= read -r f; do
    cmp -s "$1/$f" "$2/$f" || return 1
    n=$((n + 1))
  done < <(cd "$1" && find . -name '*.c' -o -name '*.bin' | sort)
  [ $n -gt 0 ]
}
field() { python3 -c "import json, sys; print(json.load(open(sys.argv[1])).get(sys.argv[2]))" "$1" "$2"; }
strip() { # PLAN OUT: PLAN without the numerics fields (a plan.json of an earlier galvc)
  python3 -c "
import json, sys
p = json.load(open(sys.argv[1]))
for k in ('precision', 'grad_dtype', 'clip_grad_norm'): p.pop(k, None)
json.dump(p, open(sys.argv[2], 'w'), indent=2)" "$1" "$2"
}

# ---- (1) the planner's plan; (3) fp16
for c in bf16 fp16; do
  a=(--gpus 2 --precision "$c" --grad-dtype "$c" --clip-grad-norm 1)
  if ! "${G[@]}" "${a[@]}" -o "$T/p_$c/" >"$T/p_$c.log" 2>&1; then bad "planner $c: $(grep -m1 error "$T/p_$c.log")"; continue; fi
  got="$(field "$T/p_$c/plan.json" precision) $(field "$T/p_$c/plan.json" grad_dtype) $(field "$T/p_$c/plan.json" clip_grad_norm)"
  [ "$got" = "$c $c 1" ] || bad "planner $c: plan.json records '$got'"
  strip "$T/p_$c/plan.json" "$T/p_$c.old.json"
  if "${G[@]}" --gpus 2 --plan "$T/p_$c/plan.json" -o "$T/r_$c/" >"$T/r_$c.log" 2>&1 &&
     "${G[@]}" --gpus 2 --plan "$T/p_$c.old.json" -o "$T/o_$c/" >"$T/o_$c.log" 2>&1 &&
     same "$T/p_$c" "$T/r_$c" && ! same "$T/p_$c" "$T/o_$c"; then
    ok "planner (--gpus 2), --precision $c --grad-dtype $c --clip-grad-norm 1: plan.json records '$got'; --plan alone compiles the same program (without the fields: another)"
  else bad "planner $c: --plan: $(cat "$T/r_$c.log" "$T/o_$c.log" 2>/dev/null | grep -m1 error || echo 'programs differ')"; fi
done

# ---- (2) a pipeline plan
a=(--pipeline-stages 2 --microbatches 2 --precision bf16 --grad-dtype bf16 --clip-grad-norm 1)
if "${G[@]}" "${a[@]}" -o "$T/pp/" --plan-out "$T/pp.json" >"$T/pp.log" 2>&1; then
  got="$(field "$T/pp.json" precision) $(field "$T/pp.json" grad_dtype) $(field "$T/pp.json" clip_grad_norm)"
  clip=$(grep -c "galv_pipe_clip = 1;" "$T/pp/stage0/pipe_stage.c")
  if [ "$got" = "bf16 bf16 1" ] && [ "$clip" = 1 ] && "${G[@]}" --plan "$T/pp.json" -o "$T/pr/" >"$T/pr.log" 2>&1 &&
     same "$T/pp" "$T/pr" && [ -f "$T/pr/stage1/program.c" ]; then
    ok "pipeline plan (2 stages): records '$got'; --plan alone compiles the same stages (programs, tables with the clipping norm, weights)"
  else bad "pipeline plan: records '$got', clip lines $clip: $(grep -m1 error "$T/pr.log" || echo 'stages differ')"; fi
else bad "pipeline: $(grep -m1 error "$T/pp.log")"; fi

# ---- (4) the same flags again; conflicting flags
P="$T/p_bf16/plan.json"
if "${G[@]}" --gpus 2 --plan "$P" --precision bf16 --grad-dtype bf16 --clip-grad-norm 1 -o "$T/s/" >"$T/s.log" 2>&1 &&
   same "$T/p_bf16" "$T/s"; then ok "--plan with the plan's own flags: the same program"
else bad "--plan with the plan's own flags: $(grep -m1 error "$T/s.log" || echo 'programs differ')"; fi
conflict() { # WANT-IN-MESSAGE PLAN ARGS...
  local want=$1 plan=$2
  shift 2
  "${G[@]}" --plan "$plan" "$@" -o "$T/x/" >"$T/x.log" 2>&1
  local rc=$? n
  n=$(grep -c "error" "$T/x.log")
  if [ $rc = 2 ] && [ "$n" = 1 ] && grep -q "^galvc: error: $plan: .*$want" "$T/x.log" && [ ! -e "$T/x/program.c" ]; then
    ok "--plan with $*: $(cat "$T/x.log")"
  else bad "--plan with $*: rc $rc, $n error lines: $(head -c 300 "$T/x.log")"; fi
  rm -rf "$T/x"
}
conflict "made with --precision bf16, but --precision fp16 is given" "$P" --gpus 2 --precision fp16
conflict "made with --grad-dtype bf16, but --grad-dtype fp32 is given" "$P" --gpus 2 --grad-dtype fp32
conflict "made with --clip-grad-norm 1, but --clip-grad-norm 0.5 is given" "$P" --gpus 2 --clip-grad-norm 0.5
conflict "made with --precision bf16, but --precision fp32 is given" "$T/pp.json" --precision fp32
if "${G[@]}" --gpus 2 -o "$T/n/" >"$T/n.log" 2>&1; then
  conflict "made without --clip-grad-norm, but --clip-grad-norm 1 is given" "$T/n/plan.json" --gpus 2 --clip-grad-norm 1
else bad "fp32 plan: $(grep -m1 error "$T/n.log")"; fi

# ---- (5) a malformed field
python3 -c "
import json, sys
p = json.load(open(sys.argv[1])); p['grad_dtype'] = 'f16'
json.dump(p, open(sys.argv[2], 'w'), indent=2)" "$P" "$T/badf.json"
"${G[@]}" --gpus 2 --plan "$T/badf.json" -o "$T/y/" >"$T/y.log" 2>&1
rc=$?
if [ $rc != 0 ] && [ "$(grep -c error "$T/y.log")" = 1 ] && grep -q "badf.json: line [0-9]*: field 'grad_dtype'" "$T/y.log"; then
  ok "malformed field: $(cat "$T/y.log")"
else bad "malformed field: rc $rc: $(head -c 300 "$T/y.log")"; fi

echo "plan_numerics: $pass passed, $fail failed"
[ $fail = 0 ]
