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
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
STEPS=3
for fam in gpt2 llama; do
  flags="--tie-embeddings"
  [ "$fam" = llama ] && flags="--tie-embeddings --share-norms"
  python3 "$SRC/examples/make_model.py" "$fam" -o "$T/$fam.onnx" --layers 2 --hidden 32 --heads 4 --vocab 64 $flags --no-verify \
    >/dev/null || { echo "FAIL make_model $fam"; exit 1; }
done
python3 -c "
import numpy as np, os
r = np.random.RandomState(0)
os.makedirs('$T/b')
np.save('$T/b/input_ids.npy', r.randint(0, 64, ($STEPS, 8, 8)).astype(np.int64))
np.save('$T/b/labels.npy', r.randint(0, 64, ($STEPS, 8, 8)).astype(np.int64))" || { echo "FAIL batches"; exit 1; }
for fam in gpt2 llama; do
  timeout 300 "$BUILD/galvc" "$T/$fam.onnx" --input-shape input_ids=8x8 --train --target cpu -q -o "$T/one-$fam/" 2>"$T/err" ||
    { echo "FAIL single $fam: $(cat "$T/err")"; exit 1; }
  timeout 120 "$T/one-$fam/program" --batches "$T/b" --steps $STEPS -o "$T/one-$fam.w" >"$T/one-$fam.log" 2>"$T/err" ||
    { echo "FAIL single run $fam: $(cat "$T/err")"; exit 1; }
done

# family:S:B:schedule:copies compared by the root stage:extra galvc flags (+ for spaces):root's bytes:another rank's bytes
CASES=${GALV_PIPE_SHARED_CASES:-"gpt2:2:2:gpipe:1::24576:24576
gpt2:2:4:1f1b:1:--pipeline-recompute::
llama:3:4:gpipe:3::
llama:4:4:1f1b:4::
gpt2:2:2:1f1b:1:--gpus+4+--strategy+tp:73728:24576
llama:2:2:gpipe:2:--gpus+4+--strategy+dp::
gpt2:2:2:1f1b:1:--gpus+3+--stage-devices+2,1+--strategy+tp::
gpt2:2:1:gpipe:1:--stage-cost+analytic::"}
while IFS=: read -r fam S B SC NCOPY EXTRA RBYTES OBYTES; do
  [ -n "$fam" ] || continue
  name="$fam pp=$S B=$B $SC${EXTRA:+ ${EXTRA//+/ }}"
  d="$T/$fam-$S-$B-$SC-${#EXTRA}"
  # shellcheck disable=SC2086
  if ! timeout 600 "$BUILD/galvc" "$T/$fam.onnx" --batch 8 --seq 8 --train --pipeline-stages "$S" --microbatches "$B" \
      --schedule "$SC" --target cpu ${EXTRA//+/ } -o "$d/" >"$d.galvc" 2>&1 </dev/null; then
    bad "$name: galvc: $(grep -m3 error "$d.galvc")"
    continue
  fi
  grep -q "parameter '.*' is read by stages .*: each holds a copy" "$d.galvc" || { bad "$name: galvc names no shared parameter"; continue; }
  if ! timeout 120 "$d/launch" --batches "$T/b" --steps $STEPS -o "$d.w" >"$d.log" 2>"$T/err" </dev/null; then
    bad "$name: run: $(grep -m3 -i error "$T/err" "$d.log")"
    continue
  fi
  if msg=$(python3 - "$T/one-$fam.log" "$d.log" "$T/one-$fam.w" "$d.w" "$NCOPY" "$RBYTES" "$OBYTES" "$SRC/tests/lib" 2>&1 <<'PY'
import sys, re
la, lb, wa, wb, ncopy, rbytes, obytes, lib = sys.argv[1:9]
sys.path.insert(0, lib)
from same_training import check
same = check(la, lb, wa, wb, steps=[0, 1, 2])
log = open(lb).read()
m = re.findall(r"shared parameters: (\d+) held with later stages, (\d+) copies compared: bit-identical; gradient sums sent by this rank: (\d+) bytes", log)
if len(m) != 1 or int(m[0][1]) != int(ncopy): sys.exit(f"root line {m}, expected {ncopy} copies compared")
others = [int(x) for x in re.findall(r"\]: shared parameters: gradient sums sent by this rank: (\d+) bytes", log)]
if rbytes and int(m[0][2]) != int(rbytes): sys.exit(f"root sent {m[0][2]} bytes of gradient sums, expected {rbytes}")
if obytes and (not others or any(o != int(obytes) for o in others)): sys.exit(f"other stages sent {others}, expected {obytes} each")
print(f"{same} (single device), {m[0][1]} copies bit-identical, root sent {m[0][2]} bytes")
PY
); then
    ok "$name: $msg"
  else
    bad "$name: $msg"
  fi
done <<<"$CASES"
echo "pipeline_shared: $pass passed, $fail failed"
[ "$fail" = 0 ]
