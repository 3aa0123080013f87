#!/usr/bin/env bash
# Sequence parallelism's memory in the search's estimate (docs/planner.md,
# "Sequence parallelism's memory"). On repeated layers the search costs
# candidates on reduced programs (GALV_PLAN_LAYERS=reduced: from 5 layers
# on) and prices sp per layer from realisations with sp on every layer
# (their full-program memory, as for the ZeRO stages), not from the
# activations a layer keeps alone:
#   - 2 and 4 CPU ranks: GPT-2 and Llama of 6 layers (hidden 64, 4 heads,
#     vocab 64; Llama with 4 key/value heads), batch 4 x seq 64, 4
#     microbatches, no recomputation, AdamW, --mesh tp=N under a memory limit
#     the plans without sp exceed: the search picks sp on every layer; its
#     estimate ("search's prediction ... bytes") within 2 % of the chosen
#     plan realised (plan.json's memory_per_device total); compiled and run
#     for one step, the measured memory (state + arena high-water; rank 0
#     prints it, the other ranks of a tp plan hold the same blocks) within 5 %
#     of --report-cost's parameters + optimizer state + arena, and
#     within 5 % of the search's estimate less what the CPU runtime does not
#     allocate (constants, communication buffers, 16-bit conversion scratch);
#   - weight-free GPT of 12 layers (hidden 4096, 32 heads, vocab 51200, seq
#     2048, bf16) on 64 a100-80g as dp=8 x tp=8, batch 64, one microbatch, no
#     recomputation, --memory-limit 30e9, --plan-only: sp on every layer, the
#     search's estimate within 2 % of the plan realised (the kept
#     activations alone priced it 7 % under: the embedding table's gradient,
#     a partial sum over the sequence split, is all-reduced whole and sizes
#     the communication buffers).
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"
export CFLAGS=-O0 # tiny programs
for fam in gpt2 llama; do
  extra=()
  [ $fam = llama ] && extra=(--kv-heads 4)
  python3 "$SRC/examples/make_model.py" $fam -o "$T/$fam.onnx" --layers 6 --hidden 64 --heads 4 --vocab 64 "${extra[@]}" \
    --no-verify >/dev/null || { echo "FAIL make_model $fam"; exit 1; }
done
python3 -c "
import numpy as np, os
r = np.random.RandomState(0)
os.makedirs('$T/b')
np.save('$T/b/input_ids.npy', r.randint(0, 64, (1, 4, 64)).astype(np.int64))
np.save('$T/b/labels.npy', r.randint(0, 64, (1, 4, 64)).astype(np.int64))" || { echo "FAIL batches"; exit 1; }

# check NAME DIR: the search's choice (DIR.err), plan.json, --report-cost (DIR.cost) and, when DIR.log exists, the
# measured memory
check() {
  python3 - "$1" "$2" <<'PY'
import json, os, re, sys
name, d = sys.argv[1:3]
err = open(d + ".err").read()
lay = re.findall(r"^plan:   (layers? [\d-]+): (\S+)$", err, re.M)
if not lay or any("+sp(" not in s for _, s in lay):
    sys.exit(f"not sp on every layer: {lay}")
m = re.findall(r"search's prediction [\d.]+ ms, (\d+) bytes\)", err)
if len(m) != 1:
    sys.exit(f"search's predictions: {m}")
est = int(m[0])
real = json.load(open(os.path.join(d, "plan.json")))["memory_per_device"]["total"]
dev = 100 * (est - real) / real
if abs(dev) > 2:
    sys.exit(f"search's estimate {est} vs realised {real}: {dev:+.2f}% (bound 2%)")
out = f"sp on every layer; search's estimate {est}, realised {real} ({dev:+.2f}%)"
if os.path.exists(d + ".log"):
    c = open(d + ".cost").read()
    r = re.search(r"^memory per device: parameters (\d+), optimizer state (\d+), arena (\d+) .*constants (\d+), "
                  r"communication buffers (\d+), 16-bit conversion scratch (\d+), total (\d+)", c, re.M)
    if not r:
        sys.exit("no --report-cost memory line")
    p, o, a, k, cb, cv, tot = map(int, r.groups())
    if tot != real:
        sys.exit(f"--report-cost total {tot} != plan.json's {real}")
    got = [int(x) for x in re.findall(r"memory: state \d+ bytes \+ arena high-water \d+ bytes .* = (\d+) bytes", open(d + ".log").read())]
    if len(got) != 1:
        sys.exit(f"measured memory lines: {got}")
    w, pred, pest = got[0], p + o + a, est - k - cb - cv
    for what, want in (("realised", pred), ("search's estimate", pest)):
        if abs(w - want) > 0.05 * want:
            sys.exit(f"measured {w} vs {what} {want}: {100 * (w - want) / want:+.2f}% (bound 5%)")
    out += (f"; measured {w} bytes: realised {pred} ({100 * (w - pred) / pred:+.2f}%), "
            f"search's estimate less buffers {pest} ({100 * (w - pest) / pest:+.2f}%)")
print(out)
PY
}

# FAMILY RANKS LIMIT: --mesh tp=RANKS
for c in "gpt2 2 5000000" "llama 2 5000000" "gpt2 4 4000000" "llama 4 4000000"; do
  read -r fam n lim <<<"$c"
  name="$fam tp=$n limit $lim"
  d="$T/$fam-$n"
  # the search on the program of 4 microbatches itself (GALV_COUNT_FULL: not on its stand-in of 2, whose memory
  # estimate for 4 has its own error, corrected by the realisation at 4): the sp estimate is what is checked
  if ! GALV_PLAN_LAYERS=reduced GALV_COUNT_FULL=1 timeout 300 "$BUILD/galvc" "$T/$fam.onnx" --batch 4 --seq 64 --train --eps 1e-6 --gpus "$n" \
      --mesh "tp=$n" --memory-limit "$lim" --microbatches 4 --recompute=none --report-cost --target cpu -o "$d/" \
      >"$d.cost" 2>"$d.err" </dev/null; then
    bad "$name: galvc: $(grep -m3 error "$d.err")"
    continue
  fi
  exe=program
  [ -x "$d/launch" ] && exe=launch
  if ! timeout 300 "$d/$exe" --batches "$T/b" --steps 1 -o "$d.w" </dev/null >"$d.log" 2>&1; then
    bad "$name: run: $(grep -m3 -i error "$d.log")"
    continue
  fi
  if msg=$(check "$name" "$d" 2>&1); then ok "$name: $msg"; else bad "$name: $msg"; fi
done

# weight-free GPT, 12 layers (the reduced programs by default), planning only
python3 "$SRC/examples/make_model.py" gpt2 --layers 12 --hidden 4096 --heads 32 --vocab 51200 --max-pos 2048 --no-weights \
  --tie-embeddings --qkv-layout megatron -o "$T/g12.onnx" >/dev/null || bad "make_model g12"
d="$T/g12"
mkdir -p "$d"
if timeout 600 "$BUILD/galvc" "$T/g12.onnx" --train --no-weights --precision bf16 --seq 2048 --batch 64 --gpus 64 --gpus-per-node 8 \
    --cluster a100-80g --mesh dp=8,tp=8 --microbatches 1 --recompute=none --memory-limit 30000000000 --plan-only \
    --plan-out "$d/plan.json" >"$d.out" 2>"$d.err" </dev/null; then
  if msg=$(check g12 "$d" 2>&1); then ok "GPT 12 layers hidden 4096, dp=8 x tp=8, --plan-only: $msg"; else bad "GPT 12 layers: $msg"; fi
else
  bad "GPT 12 layers: galvc: $(grep -m3 error "$d.err")"
fi
echo "plan_sp_memory: $pass passed, $fail failed"
[ "$fail" = 0 ]
