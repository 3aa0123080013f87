#!/usr/bin/env bash
# Shared parameters in pipeline training (docs/pipeline.md, "Shared
# parameters"): a parameter read by several stages — GPT-2's token embedding
# tied to the LM head (--tie-embeddings), a Llama whose norm weights are one
# merged initializer (--share-norms, as torch.onnx.export merges equal
# initializers) read by every stage — is held by each stage that reads it;
# the copies' gradients are summed across those stages every step before one
# identical update. Checked against the single-device program (3 AdamW steps):
# losses rtol 1e-4, every final weight rtol 1e-4 / atol 1e-5; galvc names the
# shared parameters; each run's root stage compares the copies after training
# (its line says how many, bit-identical, or the run fails); the bytes the
# gradient sums send match the hand-computed count for two cases. The last
# case once cut a stage of constants alone (an empty stage: cluster-layers
# now gives each constant its user's group).
# A tied embedding every holding stage splits alike (pp=2 x tp=2: the first
# stage's gather and the last stage's head both vocab-parallel) keeps its
# gradient split and is summed block by block (galvc says so; each rank
# sends its block, 3 x 4096 bytes fp32, 3 x 2048 with bf16 sums under
# --precision bf16 --grad-dtype bf16); the weights equal, bit for bit, those
# of the same pipeline with the whole path (GALV_PIPE_SHARED_WHOLE=1). The
# bf16 case's losses are held to 1e-3 of the fp32 single device
# (tests/cpu_bf16.sh's bound), its weights to 1e-2. Stages that split it
# differently (vocab 1024 under --memory-limit 2000000: stage 0 dp=2, stage
# 1 vocab=2) take the whole path (galvc says so; the root sends the whole
# gradient to 3 ranks). On the split cases stage 0's compiled program
# scatter-adds the embedding gradient into its 32 x 32 rows alone (the rank's
# vocab block: no 64 x 32 table, no shard_slice of a gather_grad's result,
# the position embedding's included). Stage programs of
# the two paths launched together
# fail before the steps with one line naming the parameter.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
STEPS=3
for fam in gpt2 llama gpt2v; do
  flags="--tie-embeddings" vocab=64
  [ "$fam" = llama ] && flags="--tie-embeddings --share-norms"
  [ "$fam" = gpt2v ] && vocab=1024
  python3 "$SRC/examples/make_model.py" "${fam%v}" -o "$T/$fam.onnx" --layers 2 --hidden 32 --heads 4 --vocab $vocab $flags --no-verify \
    >/dev/null || { echo "FAIL make_model $fam"; exit 1; }
done
python3 -c "
import numpy as np, os
r = np.random.RandomState(0)
os.makedirs('$T/b')
np.save('$T/b/input_ids.npy', r.randint(0, 64, ($STEPS, 8, 8)).astype(np.int64))
np.save('$T/b/labels.npy', r.randint(0, 64, ($STEPS, 8, 8)).astype(np.int64))" || { echo "FAIL batches"; exit 1; }
for fam in gpt2 llama gpt2v; do
  timeout 300 "$BUILD/galvc" "$T/$fam.onnx" --input-shape input_ids=8x8 --train --target cpu -q -o "$T/one-$fam/" 2>"$T/err" ||
    { echo "FAIL single $fam: $(cat "$T/err")"; exit 1; }
  timeout 120 "$T/one-$fam/program" --batches "$T/b" --steps $STEPS -o "$T/one-$fam.w" >"$T/one-$fam.log" 2>"$T/err" ||
    { echo "FAIL single run $fam: $(cat "$T/err")"; exit 1; }
done

# family:S:B:schedule:copies compared by the root stage:extra galvc flags (+ for spaces):root's bytes:another rank's
# bytes:the path galvc names (split: summed block by block, also run with GALV_PIPE_SHARED_WHOLE=1 and compared bit for
# bit; whole: the stages split it differently)
CASES=${GALV_PIPE_SHARED_CASES:-"gpt2:2:2:gpipe:1::24576:24576:
gpt2:2:4:1f1b:1:--pipeline-recompute:::
llama:3:4:gpipe:3:::
llama:4:4:1f1b:4:::
gpt2:2:2:1f1b:1:--gpus+4+--strategy+tp:12288:12288:split
gpt2:2:2:1f1b:1:--gpus+4+--strategy+tp+--precision+bf16+--grad-dtype+bf16:6144:6144:split
gpt2v:2:2:1f1b:1:--gpus+4+--memory-limit+2000000:1179648:393216:whole
llama:2:2:gpipe:2:--gpus+4+--strategy+dp:::
gpt2:2:2:1f1b:1:--gpus+3+--stage-devices+2,1+--strategy+tp:::
gpt2:2:1:gpipe:1:--stage-cost+analytic:::"}
# stage 0's embedding gradient: its 32 x 32 rows alone, no shard_slice of a gather_grad's result (the blocks of its
# compiled programs: a slice reading the arena buffer a gather_grad wrote, before the buffer is reused)
cat >"$T/rows.py" <<'PY'
import sys, re, glob
bad, rows = [], None
for f in sorted(glob.glob(sys.argv[1] + "/program*.c")):
    live = {}  # arena pointer -> the gather_grad whose result it holds
    for blk in re.split(r"\n  /\* ", open(f).read()):
        m = re.match(r"(\w+): node '([^']*)'", blk)
        if not m: continue
        kind, node = m.groups()
        if kind == "shard_slice":
            src = re.search(r"\(const char \*\)(\w+\(\d+\)) \+", blk)
            if src and src.group(1) in live: bad.append(f"a shard_slice of {live[src.group(1)]}'s result")
        res = re.findall(r"GALV_UNPOISON\((\w+\(\d+\)),", blk)  # the buffers the op's results take, first
        for p in res: live.pop(p, None)
        g = re.search(r"galv_gather_grad_f32\([^;]*?, (\d+), (\d+), \"node", blk)
        if kind == "gather_grad" and g and res:
            live[res[0]] = node
            if node == "/transformer/wte/Gather/grad": rows = (int(g.group(1)), int(g.group(2)))
if rows != (32, 32): bad.append(f"the wte gradient is {rows}, not its 32 x 32 rows")
if bad: sys.exit("; ".join(bad))
print("32 x 32 rows")
PY
MIX=
while IFS=: read -r fam S B SC NCOPY EXTRA RBYTES OBYTES PATHW; do
  [ -n "$fam" ] || continue
  name="$fam pp=$S B=$B $SC${EXTRA:+ ${EXTRA//+/ }}"
  d="$T/$fam-$S-$B-$SC-${#EXTRA}" rows=
  # shellcheck disable=SC2086
  if ! timeout 600 "$BUILD/galvc" "$T/$fam.onnx" --batch 8 --seq 8 --train --pipeline-stages "$S" --microbatches "$B" \
      --schedule "$SC" --target cpu ${EXTRA//+/ } -o "$d/" >"$d.galvc" 2>&1 </dev/null; then
    bad "$name: galvc: $(grep -m3 error "$d.galvc")"
    continue
  fi
  grep -q "parameter '.*' is read by stages .*: each holds a copy" "$d.galvc" || { bad "$name: galvc names no shared parameter"; continue; }
  if [ "$PATHW" = split ] && ! grep -q "every holding stage splits it alike: its gradient stays split" "$d.galvc"; then
    bad "$name: galvc does not sum it block by block: $(grep -m1 "holding stages" "$d.galvc")"
    continue
  fi
  if [ "$PATHW" = split ] && ! rows=$(python3 "$T/rows.py" "$d/stage0" 2>&1); then
    bad "$name: stage 0's embedding gradient is not computed on its rows: $rows"
    continue
  fi
  if [ "$PATHW" = whole ] && ! grep -q "the holding stages split it differently: its gradient summed whole" "$d.galvc"; then
    bad "$name: galvc does not name the stages' different splits"
    continue
  fi
  if ! timeout 120 "$d/launch" --batches "$T/b" --steps $STEPS -o "$d.w" >"$d.log" 2>"$T/err" </dev/null; then
    bad "$name: run: $(grep -m3 -i error "$T/err" "$d.log")"
    continue
  fi
  [ "$PATHW" = split ] && [ -z "$MIX" ] && MIX=$d
  if [ "$PATHW" = split ]; then # the whole path's pipeline: the same weights, bit for bit
    # shellcheck disable=SC2086
    if ! GALV_PIPE_SHARED_WHOLE=1 timeout 600 "$BUILD/galvc" "$T/$fam.onnx" --batch 8 --seq 8 --train --pipeline-stages "$S" \
        --microbatches "$B" --schedule "$SC" --target cpu ${EXTRA//+/ } -o "$d-whole/" >"$d-whole.galvc" 2>&1 </dev/null ||
      ! timeout 120 "$d-whole/launch" --batches "$T/b" --steps $STEPS -o "$d-whole.w" >"$d-whole.log" 2>"$T/err" </dev/null; then
      bad "$name, whole path: $(grep -m3 -i error "$d-whole.galvc" "$T/err")"
      continue
    fi
  fi
  if msg=$(python3 - "$T/one-$fam.log" "$d.log" "$T/one-$fam.w" "$d.w" "$NCOPY" "$RBYTES" "$OBYTES" "$SRC/tests/lib" "$PATHW" "$d-whole.w" "$EXTRA" 2>&1 <<'PY'
import sys, re, os
la, lb, wa, wb, ncopy, rbytes, obytes, lib, pathw, ww, extra = sys.argv[1:12]
sys.path.insert(0, lib)
from same_training import check
if "bf16" in extra:  # bf16 sums: tests/cpu_bf16.sh's loss bound against fp32, the weights to 1e-2
    same = check(la, lb, wa, wb, steps=[0, 1, 2], loss_rtol=1e-3 / 4.2, rtol=0, atol=1e-2)
else:
    same = check(la, lb, wa, wb, steps=[0, 1, 2])
if pathw == "split":
    check(lb, lb[:-4] + "-whole.log", wb, ww, steps=[0, 1, 2], exact=True)
    same += " (single device), the whole path's weights bit for bit"
else:
    same += " (single device)"
log = open(lb).read()
m = re.findall(r"shared parameters: (\d+) held with later stages, (\d+) copies compared: bit-identical; gradient sums sent by this rank: (\d+) bytes", log)
if len(m) != 1 or int(m[0][1]) != int(ncopy): sys.exit(f"root line {m}, expected {ncopy} copies compared")
others = [int(x) for x in re.findall(r"\]: shared parameters: gradient sums sent by this rank: (\d+) bytes", log)]
if rbytes and int(m[0][2]) != int(rbytes): sys.exit(f"root sent {m[0][2]} bytes of gradient sums, expected {rbytes}")
if obytes and (not others or any(o != int(obytes) for o in others)): sys.exit(f"other stages sent {others}, expected {obytes} each")
print(f"{same}, {m[0][1]} copies bit-identical, root sent {m[0][2]} bytes")
PY
); then
    ok "$name: $msg${rows:+; the embedding gradient of stage 0: $rows}"
  else
    bad "$name: $msg"
  fi
done <<<"$CASES"
# the first split case's stage 0 launched with the whole path's stage 1: one error line before the steps
if [ -n "$MIX" ] && [ -x "$MIX-whole/stage1/program" ]; then
  rm -rf "$T/mixed" && cp -r "$MIX" "$T/mixed" && rm -rf "$T/mixed/stage1" && cp -r "$MIX-whole/stage1" "$T/mixed/stage1"
  want="shared parameter 'transformer.wte.weight': stage 0's table sums its gradient block by block, stage 1's whole (rebuild with galvc)"
  if timeout 120 "$T/mixed/launch" --batches "$T/b" --steps 1 >"$T/mixed.log" 2>&1 </dev/null; then
    bad "stages of both paths launched together: ran"
  elif grep -qF "$want" "$T/mixed.log" && ! grep -q "^step" "$T/mixed.log"; then
    ok "stages of both paths launched together: fails before the steps: $want"
  else bad "stages of both paths launched together: $(grep -m2 -i error "$T/mixed.log")"; fi
fi
echo "pipeline_shared: $pass passed, $fail failed"
[ "$fail" = 0 ]
