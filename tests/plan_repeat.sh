#!/usr/bin/env bash
# Repeatable planning (docs/planner.md, "Repeatable planning"): galvc's
# default training search planned twice gives the same plan.json and the
# same report (timings aside); so does a run whose heap starts filled with
# another byte (MALLOC_PERTURB_: a choice that read memory nobody wrote
# would change), and, in one process, the plan a later run of the pass takes
# from an earlier run's kept search (passes/plan_sharding.c kept_find) is
# the plan a fresh search of that point finds.
# Case: GPT-2 (2 layers, hidden 128, vocab 512) on 8 h100-sxm, batch 16 x
# seq 64, bf16, under a memory limit that makes the search try a second
# microbatch count and compile the first again from its kept search.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
m="$T/gpt2.onnx"
python3 "$SRC/examples/make_model.py" gpt2 -o "$m" --layers 2 --hidden 128 --heads 4 --vocab 512 --no-weights \
  --no-verify >/dev/null || { echo "FAIL make_model"; exit 1; }
A=(--train --plan-only --no-weights --precision bf16 --gpus 8 --batch 16 --seq 64 --memory-limit 9000000)
# plan NAME [ENV=VALUE ...] -- ARGS: plan.json and the report (stderr) of one run
plan() {
  local d=$1
  shift
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  if ! env "${envs[@]}" timeout 300 "$BUILD/galvc" "$m" "$@" -o "$T/$d/" </dev/null >/dev/null 2>"$T/$d.err"; then
    bad "$d: galvc failed: $(grep -m1 error "$T/$d.err")"
    return 1
  fi
}
# the report and plan.json without what a clock measures (and the output directory)
norm() {
  sed -E 's/[0-9]+\.[0-9]+ s\b/T s/g; s/"planning_seconds": [0-9.]+/"planning_seconds": T/' "$1" | sed "s|$T/[a-z0-9]*/|DIR/|g"
}
same() { # NAME A B WHAT
  if diff <(norm "$2") <(norm "$3") >"$T/diff"; then ok "$1: the same $4 ($(wc -l <"$2") lines)"
  else bad "$1: $4 differs: $(head -6 "$T/diff" | tr '\n' ' ')"; fi
}
plan r1 -- "${A[@]}" && plan r2 -- "${A[@]}" && plan r3 MALLOC_PERTURB_=165 -- "${A[@]}" || { echo "plan_repeat: $pass passed, $fail failed"; exit 1; }
if grep -q "plan: the same program as an earlier run" "$T/r1.err" && grep -q "trying 2" "$T/r1.err"; then
  ok "the search tried 2 microbatches and took its first point's kept search"
else bad "the case no longer exercises the kept search: $(grep -m2 'galvc: [0-9]* microbatch' "$T/r1.err" | tr '\n' ' ')"; fi
same "twice" "$T/r1/plan.json" "$T/r2/plan.json" plan.json
same "twice" "$T/r1.err" "$T/r2.err" report
same "heap perturbed" "$T/r1/plan.json" "$T/r3/plan.json" plan.json
same "heap perturbed" "$T/r1.err" "$T/r3.err" report
# the point the search chose, planned alone (one fresh search): the plan the kept search gave
read -r B R < <(sed -nE 's/^galvc: default search: one program: .*\(([0-9]+) microbatch[a-z]*, recompute=([a-z]+).*/\1 \2/p' "$T/r1.err")
if [ -n "${B:-}" ] && plan f -- "${A[@]}" --microbatches "$B" --recompute "$R"; then
  # what the kept search's run does not redo: the candidates realised (plan.json's count, the report's) and timings
  for x in r1 f; do grep -v '"candidates"' "$T/$x/plan.json" >"$T/$x.plan"; done
  same "kept search ($B microbatch(es), recompute=$R) = fresh search" "$T/r1.plan" "$T/f.plan" plan.json
else bad "no one-program choice in the report (or its fresh run failed)"; fi
echo "plan_repeat: $pass passed, $fail failed"
[ $fail = 0 ]
