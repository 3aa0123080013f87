#!/usr/bin/env bash
# Sequence parallelism (galvc --strategy tp,sp / dp,tp,sp, Megatron-SP;
# docs/sharding.md, "Sequence parallelism"): tiny GPT-2- and Llama-style
# models (2 layers, hidden 32, 4 heads, vocab 64), batch 8 x seq 8, AdamW
# (eps 1e-6, as tests/spmd_train.sh):
#   - 2 training steps on 2 and 4 CPU ranks (tp,sp 2 and 4, dp,tp,sp 2x2)
#     = the single-device program (losses and weights rtol 1e-4 / atol
#     1e-5), and the bytes the communicator counted = the prediction x
#     steps (checked by the program; the test reads the counters again);
#   - inference logits on 2 and 4 ranks = the single-device program's;
#   - 2 pipeline stages of 2 tp,sp ranks each = the single-device program;
#   - plan.json's per-unit "sp" (--plan): on every unit the preset's
#     program (the same collective table); on layer 1 only, its region
#     alone (reduce_scatters only in h.1), 2 steps = one device, recorded
#     in the plan.json galvc writes back;
#   - the collective table against plain tp on the same ranks: every
#     activation all_reduce of tp (a [B, S, H] tensor over tp) is gone and
#     becomes one reduce_scatter (half its bytes) + one all_gather; the
#     all_reduces left are the loss's row statistics and the gradients of
#     the norms', biases' and embedding tables' parameters (their tokens are
#     split: each rank's part is a partial sum); one figure
#     by hand: GPT-2, 2 ranks, the reduce_scatter of c_proj's [8, 8, 32] f32
#     sum is (p-1)/p x 8192 = 4096 bytes, tp's all_reduce 2 (p-1)/p x 8192;
#   - the activation arena (printed by the program) is smaller than tp's;
#   - bad input: sp without tp, a sequence the tp degree does not divide,
#     a plan.json unit with "sp": true but no tp_axis: one error line each.
# Training-mode Dropout under tp,sp (a mask per sequence shard equal to the
# one device's): tests/train_dropout.sh.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
export CFLAGS=-O0 # tiny programs: the -O3 compiles are cpu_models.sh's
AD=(--eps 1e-6)
B=8 S=8
# build NAME MODEL GALVC_OPTIONS... (the collective table in NAME.err)
build() {
  local n=$1 m=$2; shift 2
  timeout 300 "$BUILD/galvc" "$m" --batch $B --seq $S "$@" --target cpu -o "$T/$n/" 2>"$T/$n.err" </dev/null ||
    { bad "$n: galvc $*: $(grep -m3 error "$T/$n.err")"; return 1; }
}
run() { # NAME BATCHES: 2 training steps -> NAME.log, NAME.w
  local n=$1 exe=program
  [ -x "$T/$n/launch" ] && exe=launch
  timeout 300 "$T/$n/$exe" --batches "$2" --steps 2 -o "$T/$n.w" --comm-stats </dev/null >"$T/$n.log" 2>&1 ||
    { bad "$n: run: $(grep -m3 error "$T/$n.log")"; return 1; }
}
infer() { # NAME: logits of the seeded inputs -> NAME.res
  local n=$1 exe=program
  [ -x "$T/$n/launch" ] && exe=launch
  timeout 300 "$T/$n/$exe" --input input_ids="$T/ids.npy" -o "$T/$n.res" --comm-stats </dev/null >"$T/$n.log" 2>&1 ||
    { bad "$n: run: $(grep -m3 error "$T/$n.log")"; return 1; }
}
same() { # REF RUN: losses and weights
  python3 - "$T" "$1" "$2" "$SRC/tests/lib" <<'PY'
import sys
sys.path.insert(0, sys.argv[4])
from same_training import check
t, a, b = sys.argv[1:4]
print(check(f"{t}/{a}.log", f"{t}/{b}.log", f"{t}/{a}.w", f"{t}/{b}.w"))
PY
}
# counted RUN RUNS: the bytes rank 0 sent per kind, checked = the global prediction x RUNS (else exit 1)
counted() { python3 "$SRC/tests/lib/comm_counted.py" "$T/$1.log" "$2"; }
# table NAME: "kind shape bytes node" per collective of the table in NAME.err
table() { sed -n 's/^galvc: spmd: \(all_reduce\|all_gather\|reduce_scatter\|all_to_all\) \+\([a-z,]*\) \+\(tensor<[^ ]*>\) \+\([0-9]*\)  \(.*\)$/\1 \2 \3 \4 \5/p' "$T/$1.err"; }
arena() { sed -n 's/^program\(\[0\]\)\?: training step: .* arena \([0-9]*\) bytes.*/\2/p' "$T/$1.log" | head -1; }

for fam in gpt2 llama; do
  extra=()
  [ $fam = llama ] && extra=(--kv-heads 4) # 4 key/value heads: tp 4 divides them
  python3 "$SRC/examples/make_model.py" $fam -o "$T/$fam.onnx" --layers 2 --hidden 32 --heads 4 --vocab 64 "${extra[@]}" \
    --no-verify >/dev/null || bad "$fam: make_model"
done
python3 - "$T" <<'PY'
import numpy as np, os, sys
t = sys.argv[1]
r = np.random.RandomState(11)
os.makedirs(f"{t}/b")
np.save(f"{t}/b/input_ids.npy", r.randint(0, 64, (2, 8, 8)).astype(np.int64))
lab = r.randint(0, 64, (2, 8, 8)).astype(np.int64)
lab[0, 0, :3] = -100  # ignored labels count too
np.save(f"{t}/b/labels.npy", lab)
np.save(f"{t}/ids.npy", r.randint(0, 64, (8, 8)).astype(np.int64))
PY

# training: one device, plain tp (the reference table and arena), tp,sp and dp,tp,sp
for fam in gpt2 llama; do
  build "$fam-1" "$T/$fam.onnx" --train "${AD[@]}" -q && run "$fam-1" "$T/b"
  build "$fam-2-tp" "$T/$fam.onnx" --train "${AD[@]}" --gpus 2 --strategy tp && run "$fam-2-tp" "$T/b"
done
for c in ${GALV_SP_CASES:-gpt2:2:tp,sp llama:2:tp,sp gpt2:4:tp,sp gpt2:4:dp,tp,sp llama:4:dp,tp,sp}; do
  IFS=: read -r fam n s <<<"$c"
  d="$fam-$n-${s//,/_}"
  mesh=()
  [ "$s" = dp,tp,sp ] && mesh=(--mesh dp=2,tp=$((n / 2)))
  build "$d" "$T/$fam.onnx" --train "${AD[@]}" --gpus "$n" --strategy "$s" "${mesh[@]}" && run "$d" "$T/b" || continue
  if ! by=$(counted "$d" 2 2>&1); then bad "$d: bytes: $by"; continue; fi
  if r=$(same "$fam-1" "$d" 2>&1); then ok "$fam $n ranks $s, 2 AdamW steps = one device: $r; bytes counted = predicted: $by"
  else bad "$fam $n ranks $s vs one device: $r"; fi
done

# pipeline stages of 2 tp,sp ranks each (the stage passes run the same preset per stage)
if build gpt2-pp "$T/gpt2.onnx" --train "${AD[@]}" --pipeline-stages 2 --gpus 4 --strategy tp,sp &&
   timeout 300 "$T/gpt2-pp/launch" --batches "$T/b" --steps 2 -o "$T/gpt2-pp.w" </dev/null >"$T/gpt2-pp.log" 2>&1; then
  nrs=$(grep -c '^galvc: spmd: reduce_scatter' "$T/gpt2-pp.err")
  if r=$(same gpt2-1 gpt2-pp 2>&1) && [ "$nrs" -ge 4 ]; then ok "gpt2 2 pipeline stages x tp,sp 2 = one device: $r; $nrs reduce_scatters"
  else bad "gpt2 2 pipeline stages x tp,sp 2: $r ($nrs reduce_scatters)"; fi
else bad "gpt2 2 pipeline stages x tp,sp 2: $(grep -m3 error "$T/gpt2-pp.err" "$T/gpt2-pp.log" 2>/dev/null)"; fi

# plan.json's per-unit "sp" (--plan): every unit = the tp,sp preset's program (the same collective
# table); sp on layer 1 only: its region alone is split (reduce_scatters only at h.1), 2 steps = one
# device, and the plan.json galvc writes back records it
python3 - "$T" <<'PY'
import json, sys
for name, sp in (("all", [True, True, True]), ("l1", [False, False, True]), ("notp", [False, True, False])):
    json.dump({"mesh": {"axes": ["tp"], "shape": [2]}, "batch_axes": [], "tp_axis": None if name == "notp" else "tp",
               "vocab_axis": "tp", "units": [{"unit": u, "zero": False, "sp": s} for u, s in zip(["outer", "layer 0", "layer 1"], sp)]},
              open(f"{sys.argv[1]}/plan-{name}.json", "w"), indent=1)
PY
if build gpt2-plan-all "$T/gpt2.onnx" --train "${AD[@]}" --gpus 2 --plan "$T/plan-all.json" && [ -f "$T/gpt2-2-tp_sp.err" ]; then
  if [ "$(table gpt2-plan-all)" = "$(table gpt2-2-tp_sp)" ] && [ -n "$(table gpt2-plan-all)" ] &&
     grep -q '^plan:   layers 0-1: tp(tp)+sp(tp)$' "$T/gpt2-plan-all.err"; then
    ok "plan.json with \"sp\": true on every unit = --strategy tp,sp ($(grep -c . <<<"$(table gpt2-plan-all)") collectives, the same table)"
  else bad "plan.json sp on every unit differs from tp,sp: $(diff <(table gpt2-plan-all) <(table gpt2-2-tp_sp) | head -3)"; fi
fi
if build gpt2-plan-l1 "$T/gpt2.onnx" --train "${AD[@]}" --gpus 2 --plan "$T/plan-l1.json" && run gpt2-plan-l1 "$T/b"; then
  at=$(table gpt2-plan-l1 | awk '$1 == "reduce_scatter" {print $5}' | sed 's|^/transformer/\(h\.[0-9]*\)/.*|\1|' | sort | uniq -c | tr -s ' ' | tr '\n' ';')
  if ! by=$(counted gpt2-plan-l1 2 2>&1); then bad "plan sp on layer 1: bytes: $by"
  elif r=$(same gpt2-1 gpt2-plan-l1 2>&1) && [ "$at" = " 4 h.1;" ] &&
       grep -q '"unit": "layer 1", "strategy": "tp(tp)+sp(tp)", "zero": 0, "sp": true}' "$T/gpt2-plan-l1/plan.json" &&
       grep -q '"unit": "layer 0", "strategy": "tp(tp)", "zero": 0, "sp": false}' "$T/gpt2-plan-l1/plan.json"; then
    ok "plan.json sp on layer 1 only: reduce_scatters at$at 2 steps = one device: $r; bytes counted = predicted: $by; plan.json written back records it"
  else bad "plan sp on layer 1: $r; reduce_scatters at '$at'; $(grep '"sp"' "$T/gpt2-plan-l1/plan.json" | tr -s ' ')"; fi
fi

# the collectives, tp,sp against tp on 2 ranks (one step's program): tp's activation all_reduces
# ([8, 8, 32] over tp) are gone; as many reduce_scatters of those sums at half the bytes, and the
# all_gathers of the sequence split before the column-parallel dots
for fam in gpt2 llama; do
  [ -f "$T/$fam-2-tp.err" ] && [ -f "$T/$fam-2-tp_sp.err" ] || continue
  act="tensor<$B""x$S""x32xf32>"
  tp_ar=$(table "$fam-2-tp" | awk -v a="$act" '$1 == "all_reduce" && $3 == a' | wc -l)
  tp_ar_b=$(table "$fam-2-tp" | awk -v a="$act" '$1 == "all_reduce" && $3 == a {print $4}' | sort -u | tr '\n' ' ')
  sp_ar=$(table "$fam-2-tp_sp" | awk -v a="$act" '$1 == "all_reduce" && $3 == a' | wc -l)
  sp_rs=$(table "$fam-2-tp_sp" | awk -v a="$act" '$1 == "reduce_scatter" && $3 == a' | wc -l)
  sp_rs_b=$(table "$fam-2-tp_sp" | awk -v a="$act" '$1 == "reduce_scatter" && $3 == a {print $4}' | sort -u | tr '\n' ' ')
  sp_ag=$(table "$fam-2-tp_sp" | awk '$1 == "all_gather" && $3 == "tensor<8x4x32xf32>"' | wc -l)
  # what all_reduces remain: the loss's row statistics and parameter gradients (no [B, S, H] activation): the norms'
  # and biases' and the embedding tables' (gather_grad: each rank scatter-adds its own tokens' rows, a partial sum)
  rest=$(table "$fam-2-tp_sp" | awk '$1 == "all_reduce" && $5 != "loss/cross_entropy" && ($3 ~ /^tensor<(1x1x)?32xf32>$/ || ($3 ~ /^tensor<[0-9]+x32xf32>$/ && $5 ~ /\/Gather\/grad$/))' | wc -l)
  all=$(table "$fam-2-tp_sp" | awk '$1 == "all_reduce"' | wc -l)
  ce=$(table "$fam-2-tp_sp" | awk '$1 == "all_reduce" && $5 == "loss/cross_entropy"' | wc -l)
  if [ "$tp_ar" -ge 8 ] && [ "$sp_ar" = 0 ] && [ "$sp_rs" = "$tp_ar" ] && [ "$tp_ar_b" = "8192 " ] && [ "$sp_rs_b" = "4096 " ] &&
     [ "$sp_ag" -gt 0 ] && [ "$ce" = 3 ] && [ $((rest + ce)) = "$all" ]; then
    ok "$fam 2 ranks: tp's $tp_ar activation all_reduces (8192 bytes each) -> tp,sp: $sp_rs reduce_scatters (4096) + $sp_ag all_gathers; all_reduces left: $ce cross-entropy rows, $rest parameter gradients (norms, biases)"
  else
    bad "$fam 2 ranks: tp all_reduces $tp_ar ($tp_ar_b), tp,sp all_reduces of activations $sp_ar, reduce_scatters $sp_rs ($sp_rs_b), all_gathers $sp_ag, all_reduces $all = $ce cross-entropy + $rest gradients?"
  fi
done
# one figure by hand: GPT-2's attention output projection, [8, 8, 32] f32 = 8192 bytes over p = 2 ranks
if [ -f "$T/gpt2-2-tp_sp.err" ]; then
  n=$((B * S * 32 * 4)) p=2
  rs=$(table gpt2-2-tp_sp | awk '$1 == "reduce_scatter" && $5 == "/transformer/h.0/attn/c_proj/Add" {print $4}')
  ar=$(table gpt2-2-tp | awk '$1 == "all_reduce" && $5 == "/transformer/h.0/attn/c_proj/Add" {print $4}')
  ag=$(table gpt2-2-tp_sp | awk '$1 == "all_gather" && $5 == "/transformer/h.0/mlp/c_fc/MatMul" {print $4}')
  if [ "$rs" = $(((p - 1) * n / p)) ] && [ "$ag" = $(((p - 1) * n / p)) ] && [ "$ar" = $((2 * (p - 1) * n / p)) ]; then
    ok "by hand: h.0 c_proj's sum [8,8,32] f32 (n = $n bytes, p = 2): reduce_scatter (p-1)n/p = $rs, the next all_gather $ag; tp's all_reduce 2(p-1)n/p = $ar"
  else bad "by hand: reduce_scatter '$rs', all_gather '$ag', all_reduce '$ar' (want $(((p - 1) * n / p)), $(((p - 1) * n / p)), $((2 * (p - 1) * n / p)))"; fi
fi
# activation memory: the arena (the program's own figure) below tp's
for fam in gpt2 llama; do
  a=$(arena "$fam-2-tp") b=$(arena "$fam-2-tp_sp")
  if [ -n "$a" ] && [ -n "$b" ] && [ "$b" -lt "$a" ]; then ok "$fam 2 ranks: arena tp $a bytes, tp,sp $b"
  else bad "$fam 2 ranks: arena tp '$a', tp,sp '$b'"; fi
done

# inference: logits = one device
for c in gpt2:2:tp,sp llama:4:dp,tp,sp; do
  IFS=: read -r fam n s <<<"$c"
  d="inf-$fam-$n-${s//,/_}"
  mesh=()
  [ "$s" = dp,tp,sp ] && mesh=(--mesh dp=2,tp=$((n / 2)))
  build "inf-$fam-1" "$T/$fam.onnx" -q && infer "inf-$fam-1" || continue
  build "$d" "$T/$fam.onnx" --gpus "$n" --strategy "$s" "${mesh[@]}" && infer "$d" || continue
  rs=$(table "$d" | awk '$1 == "reduce_scatter"' | wc -l)
  if ! by=$(counted "$d" 1 2>&1); then bad "$d: bytes: $by"; continue; fi
  if r=$(python3 - "$T/inf-$fam-1.res" "$T/$d.res" 2>&1 <<'PY'
import sys, glob, os, numpy as np
fs = sorted(glob.glob(sys.argv[1] + "/*.npy"))
for f in fs:
    x, y = np.load(f), np.load(os.path.join(sys.argv[2], os.path.basename(f)))
    if x.shape != y.shape or not np.allclose(y, x, rtol=1e-4, atol=1e-5):
        sys.exit(f"{os.path.basename(f)} differs")
print(f"{len(fs)} outputs equal, shape {np.load(fs[0]).shape}")
sys.exit(0 if fs else 1)
PY
  ) && [ "$rs" -ge 4 ]; then ok "$fam $n ranks $s inference = one device: $r; $rs reduce_scatters; bytes counted = predicted: $by"
  else bad "$fam $n ranks $s inference: $r ($rs reduce_scatters)"; fi
done

# bad input: one error line each, exit 2 (options) or 1 (the model)
chk() { # WANT_RC PATTERN GALVC_ARGS...
  local want=$1 pat=$2; shift 2
  "$BUILD/galvc" "$T/gpt2.onnx" --batch $B "$@" --target cpu -q -o "$T/bad.mlir" >/dev/null 2>"$T/bad.err" </dev/null
  local rc=$?
  if [ $rc = "$want" ] && [ "$(wc -l <"$T/bad.err")" = 1 ] && grep -q -- "$pat" "$T/bad.err"; then ok "$*: $(cat "$T/bad.err")"
  else bad "$*: rc $rc, $(wc -l <"$T/bad.err") lines: $(head -3 "$T/bad.err")"; fi
}
chk 2 "^galvc: error: --strategy sp: sp (sequence parallelism) splits the values between tensor-parallel blocks over the sequence: it needs tp" \
  --seq 8 --gpus 2 --strategy sp
chk 2 "^galvc: error: --strategy dp,sp: sp (sequence parallelism) .* it needs tp" --seq 8 --gpus 4 --strategy dp,sp --mesh dp=4
chk 1 "^galvc: error: .*node '[^']*' ([A-Za-z_]*): sequence parallelism: the token dim 1 of this tensor<8x7x32xf32> does not divide into 2 shards (tp 2); the sequence length must be a multiple of the tp degree$" \
  --seq 7 --train --gpus 2 --strategy tp,sp
chk 1 "sequence parallelism: the token dim 1 of this tensor<8x6x32xf32> does not divide into 4 shards (tp 4)" --seq 6 --gpus 4 --strategy tp,sp
chk 1 "^galvc: error: $T/plan-notp.json: line [0-9]*: field 'units': \"sp\": true needs a tp_axis (sequence parallelism splits the values between tensor-parallel blocks)$" \
  --seq 8 --train --gpus 2 --plan "$T/plan-notp.json"
echo "train_sp: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
