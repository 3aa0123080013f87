#!/usr/bin/env bash
# Mutation check: flips a handful of decisive lines of galvc, one at a time,
# rebuilds, runs the tests that should notice, and prints which of them
# failed. A mutation no test catches is a hole in the suite. Works on a copy
# of the tree (the checkout is never touched); Release build, incremental
# between mutations.
#   bench/mutate.sh [MUTATION-NAME ...]     (default: all)
# Prints one line per mutation and test: "caught" (the test failed, as it
# should) or "NOT CAUGHT". Figures only: it exits 0 either way.
set -uo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir "$T/src"
(cd "$SRC" && git ls-files -z | xargs -0 cp --parents -t "$T/src")
W="$T/src"
B="$T/build"
echo "mutate: building a copy of the tree ($W)"
cmake -S "$W" -B "$B" -DCMAKE_BUILD_TYPE=Release >"$T/cmake.log" 2>&1 && cmake --build "$B" -j2 >"$T/build.log" 2>&1 ||
  { echo "mutate: the unmutated build fails"; tail -20 "$T/build.log"; exit 1; }

# NAME|FILE|the exact line to find|its replacement|tests (tests/NAME.sh, unit/NAME, or lit: the lit + FileCheck
# suite), space-separated ("||" as ~~). grad-sub-sign lists the finite-difference unit test only: no
# model's training reaches Sub's second-operand rule (canonicalize turns the decomposed LayerNorm /
# RMSNorm into single ops; the max-shift of a hand-written softmax has a zero gradient either way), so
# the end-to-end tests cannot see it; grad-neg-sign flips a rule they do reach (Llama's rotary Neg).
MUTATIONS=(
  "grad-sub-sign|ir/grad.c|  case GV_OP_SUB: ga = g, gb = need[1] ? un(&c, GV_OP_NEG, g) : NULL; break;|  case GV_OP_SUB: ga = g, gb = need[1] ? g : NULL; break;|unit/test_grad"
  "grad-neg-sign|ir/grad.c|  case GV_OP_NEG: r = un(&c, GV_OP_NEG, g); break;|  case GV_OP_NEG: r = g; break;|unit/test_grad train_torch"
  "mean-divisor|passes/spmd_partition.c|  gv_value *c = gvb_cst(&b, res->type.dtype, 1.0 / (double)p);|  gv_value *c = gvb_cst(&b, res->type.dtype, 1.0);|reductions_dp"
  "wire-all-reduce-bytes|runtime/comm_mpi.c|  counters.all_reduce += 2 * (p - 1) * wire_bytes(count, t) / p;|  counters.all_reduce += (p - 1) * wire_bytes(count, t) / p;|comm_emit spmd_train"
  "predicted-all-gather|planner/comm_predict.c|  case GV_COLL_ALL_GATHER: out[1] += (p - 1) * b; break;|  case GV_COLL_ALL_GATHER: out[1] += p * b; break;|lit spmd_train"
  "partitioned-all-to-all-bytes|passes/spmd_partition.c|  int64_t nb = code == GV_OP_ALL_GATHER ? type_bytes(&o->res[0]->type) : type_bytes(&x->type);|  int64_t nb = code == GV_OP_ALL_TO_ALL ? type_bytes(&o->res[0]->type) * 2 : code == GV_OP_ALL_GATHER ? type_bytes(&o->res[0]->type) : type_bytes(&x->type);|lit"
  "stage-cut|passes/stage_extract.c|      if (l >= first[i] && l < first[i + 1]) s = i;|      if (l > first[i] && l < first[i + 1]) s = i;|pipeline_train"
  "shared-gradient-sum|runtime/pipe.c|      shared_grad_sum(world, q, p, accw[p], wtmp, wb / 4);|      (void)shared_grad_sum;|pipeline_shared"
  "ce-microbatch-weight|runtime/pipe.c|      for (int j = 0; j < B; j++) mbw[j] = tot ? mbw[j] * B / (double)tot : 1.0;|      for (int j = 0; j < B; j++) mbw[j] = 1.0;|pipeline_inputs"
  "checkpoint-skips-moments|runtime/pipe.c|      if (k >= 0 && (!trains[p] ~~ !dst)) continue;|      if (k >= 0) continue;|checkpoints"
  "frozen-trains|passes/autodiff.c|    active[body->args[i]->id] = gv_arg_trains(f, i) && gv_dtype_is_float(body->args[i]->type.dtype);|    active[body->args[i]->id] = f->arg_is_param[i] && gv_dtype_is_float(body->args[i]->type.dtype);|train_freeze"
  "accum-mse-weight|passes/accumulate.c|    gv_value *wk = w ? reshape(&b, slice1(&b, w, 0, k), 0, NULL) : gvb_cst(&b, seed->res[0]->type.dtype, 1.0 / (double)B);|    gv_value *wk = w ? reshape(&b, slice1(&b, w, 0, k), 0, NULL) : gvb_cst(&b, seed->res[0]->type.dtype, 1.0);|train_accum"
  "selective-redirect|passes/recompute.c|        if (op->opnds[i]->id >= 0 && op->opnds[i]->id < nv && map[op->opnds[i]->id]) op->opnds[i] = map[op->opnds[i]->id];|        (void)i;|lit train_recompute"
  "xmesh-no-local-allgather|planner/cross_mesh.c|  if (local_allgather && q > 1) {|  if (0 && local_allgather && q > 1) {|pipeline_xmesh"
  "interleaved-warmup|runtime/galv_pipe_sched.h|  int w = B == P ? tot : (P - d - 1) * 2 + (V - 1) * P, na = 0;|  int w = B == P ? tot : (P - d - 1) + (V - 1) * P, na = 0;|unit/test_pipeline pipeline_interleaved"
)
only=("$@")
for m in "${MUTATIONS[@]}"; do
  IFS='|' read -r name file find repl tests <<<"$m"
  if [ ${#only[@]} -gt 0 ] && [[ ! " ${only[*]} " == *" $name "* ]]; then continue; fi
  find=${find//\~\~/||} repl=${repl//\~\~/||} # "||" is written ~~ (| separates the fields)
  cp "$W/$file" "$T/orig"
  if ! python3 - "$W/$file" "$find" "$repl" <<'PY'
import sys
p, a, b = sys.argv[1:4]
s = open(p).read()
if s.count(a) != 1: sys.exit(f"line found {s.count(a)} times")
open(p, "w").write(s.replace(a, b))
PY
  then
    echo "mutate: $name: the line to mutate is not in $file (update bench/mutate.sh)"
    continue
  fi
  if ! cmake --build "$B" -j2 >"$T/mbuild.log" 2>&1; then
    echo "$name: the mutated tree does not build (a compile error is not a test catch)"
  else
    for t in $tests; do
      t0=$(date +%s)
      if [ "$t" = lit ]; then
        (cd "$B" && timeout 900 ctest -R '^lit$' --output-on-failure >"$T/out" 2>&1)
      elif [[ $t == unit/* ]]; then
        (cd "$B" && GALV_SOURCE_DIR="$W" timeout 900 "./tests/${t#unit/}" >"$T/out" 2>&1)
      else
        GALV_SOURCE_DIR="$W" timeout 1800 bash "$W/tests/$t.sh" "$B" >"$T/out" 2>&1
      fi
      rc=$?
      if [ "$rc" != 0 ] && [ "$rc" != 77 ]; then
        why=$(grep -m1 -E '^FAIL|^✗' "$T/out" || grep -m1 -E 'error|mismatch|differ' "$T/out")
        echo "$name ($file): $t caught it ($(($(date +%s) - t0)) s): ${why:0:200}"
      else
        echo "$name ($file): $t NOT CAUGHT (exit $rc)"
      fi
    done
  fi
  cp "$T/orig" "$W/$file"
done
cmake --build "$B" -j2 >/dev/null 2>&1
echo "mutate: done"
