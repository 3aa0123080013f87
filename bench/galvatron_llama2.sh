#!/usr/bin/env bash
# galvatron_llama2.sh [BUILD] [GPUS...] — issue 16 item 6(b): galvc against Galvatron on Llama2-7B, side by side.
# Llama2-7B weight-free (examples/make_model.py llama --layers 32 --hidden 4096 --heads 32 --kv-heads 32 --ffn 11008
# --vocab 32000 --no-weights), --train --precision bf16 --seq 2048, global batch 8 per GPU, 8 GPUs per node, the
# attention core fused (--fused-attention on, priced under --plan-only: the CUDA target's default leaves it unfused, its
# kernels being opt-in; FUSED=off prices the unfused program), Galvatron's profile (--profile bench/galvatron/planner_inputs.json, the anchor's
# planner_inputs.json), its hardware numbers as a cluster (bench/galvatron/a100-galvatron.json) and its usable memory
# (--memory-limit 36 / 80 GiB --memory-reserve 0.2,1073741824: 20 % and 1 GiB held back, as Galvatron plans).
# Per case (GPUS x GIB):
#   galvc:     the search with the profile (the planner's default training search: recomputation and microbatch
#              count searched; RECOMPUTE=galvatron fixes the recomputation to Galvatron's: all at 36 GiB, none at
#              80 GiB), accumulated gradients reduce-scattered per microbatch as Galvatron's ZeRO-2 does
#              (galvc's default form since 2026-12-07; ZERO_REDUCE=once: ZeRO-3's whole gradient sums reduced once);
#   galvatron: Galvatron's chosen plan (anchors README / planner_inputs.json runs_*GB) given with --plan and priced by
#              galvc with the same profile: dp over every device, its ZeRO-3 / ZeRO-2 split by layer, the embedding /
#              head at its ZeRO stage (its Ulysses split is not expressible), its chunks as gradient-accumulation
#              microbatches reduce-scattered per microbatch (ZeRO-2 under accumulation as Galvatron's), --recompute
#              per layer as its plan recomputes (all at 36 GiB, none at 80 GiB; 16 GPUs / 80 GiB its first
#              layer only: --recompute=first:1).
# Prints per row: galvc's plan, its step, memory per device against the usable memory, planning CPU seconds;
# Galvatron's plan priced by galvc, its step, memory; the ratio (Galvatron's plan priced by galvc / galvc's plan:
# >= 1.00 when galvc's search is at least as fast); Galvatron's own prediction. Then per row the terms: galvc's
# (compute, overlap slowdown, exposed communication, all communication, for both plans) and Galvatron's
# (bench/galvatron/galvatron_terms.py: its cost model's compute, exposed data-parallel communication, tp, residual).
# Figures only (never a pass or fail).
# Environment: GIBS (default "36 80"), FUSED (on | off, default on), ZERO_REDUCE (per-microbatch | once), JOBS (cases run at once, default 2), RECOMPUTE (search | galvatron),
# CPU_LIMIT (CPU seconds per galvc search, default 3600), OUT (keep the plans and logs there; default a temp dir),
# SUMMARY_ONLY (1: print the table from OUT's files, run nothing).
# GPUS default: 8 16 32 64. Every galvc runs under nice -n 19.
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$SRC/build}
shift $(($# > 0 ? 1 : 0))
GPUS=${*:-8 16 32 64}
GIBS=${GIBS:-36 80}
JOBS=${JOBS:-2}
RECOMPUTE=${RECOMPUTE:-search}
CPU_LIMIT=${CPU_LIMIT:-3600}
FUSED=${FUSED:-on}
ZERO_REDUCE=${ZERO_REDUCE:-per-microbatch}
G=$BUILD/galvc
if [ -n "${OUT:-}" ]; then T=$OUT; mkdir -p "$T"; else T=$(mktemp -d); trap 'rm -rf "$T"' EXIT; fi
M=$T/llama7b.onnx
[ -f "$M" ] || python3 "$SRC/examples/make_model.py" llama -o "$M" --layers 32 --hidden 4096 --heads 32 --kv-heads 32 \
  --ffn 11008 --vocab 32000 --no-weights --no-verify >/dev/null || exit 1
PROF=$SRC/bench/galvatron/planner_inputs.json
CL=$SRC/bench/galvatron/a100-galvatron.json
TERMS=$SRC/bench/galvatron/galvatron_terms.py

# one case: $1 GPUs, $2 GiB, $3 which (galvc | galvatron); writes $T/$3_$1_$2.{json,log,time}
one() {
  local g=$1 gib=$2 which=$3 base=$T/$3_$1_$2
  local common=(--train --plan-only --no-weights --precision bf16 --gpus "$g" --gpus-per-node 8 --cluster "$CL"
                --batch $((8 * g)) --seq 2048 --memory-limit $((gib * 1073741824)) --memory-reserve 0.2,1073741824
                --profile "$PROF" --fused-attention "$FUSED")
  local rec=$([ "$gib" = 36 ] && echo all || echo none) extra=()
  if [ "$which" = galvatron ]; then
    python3 - "$PROF" "$g" "$gib" "$base.plan.json" <<'PY' || return
import json, sys
inp, g, gib, out = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3], sys.argv[4]
run = inp[f"runs_{gib}GB"][g]
zero, ckpt = [], []
for part in run["layers"].split(","):
    n, kind = part.strip().split(" ", 1)
    if n.isdigit(): zero += [3 if "ZeRO-3" in kind else 2] * int(n); ckpt += ["+ckpt" in kind] * int(n)
# its recomputation per layer (the groups in layer order): all, none, or its first K layers (--recompute=first:K);
# else the layers by index
k = sum(ckpt)
rec = "all" if k == len(ckpt) else "none" if not k else f"first:{k}" if all(ckpt[:k]) else ",".join(str(i) for i, c in enumerate(ckpt) if c)
open(out + ".rec", "w").write(rec)
units = [{"unit": "outer0", "zero": 3 if "ZeRO-3" in run["emb"] else 2}] + [{"unit": f"layer {i}", "zero": z} for i, z in enumerate(zero)]
p = {"mesh": {"axes": ["dp"], "shape": [run["dp"]]}, "batch_axes": ["dp"], "tp_axis": None, "vocab_axis": None, "units": units}
if run["chunks"] > 1: p.update(microbatches=run["chunks"], zero_reduce="per-microbatch")
json.dump(p, open(out, "w"))
PY
    rec=$(cat "$base.plan.json.rec")
    extra=(--recompute="$rec" --plan "$base.plan.json")
  else
    extra=(--zero-reduce "$ZERO_REDUCE")
    [ "$RECOMPUTE" = galvatron ] && extra+=(--recompute="$rec")
  fi
  rm -f "$base.json"
  ( ulimit -t "$CPU_LIMIT"; /usr/bin/time -f "%U %S %e %M" -o "$base.time" nice -n 19 "$G" "$M" "${common[@]}" "${extra[@]}" \
      --plan-out "$base.json" </dev/null >"$base.log" 2>&1 )
}

# Galvatron's plans first (seconds each), then galvc's searches, JOBS at a time (SUMMARY_ONLY=1 with OUT: the table
# from an earlier run's files)
if [ -z "${SUMMARY_ONLY:-}" ]; then
  for g in $GPUS; do for gib in $GIBS; do one "$g" "$gib" galvatron; done; done
  for g in $GPUS; do
    for gib in $GIBS; do
      while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
      one "$g" "$gib" galvc &
    done
  done
  wait
fi

python3 - "$T" "$PROF" "$TERMS" "$GPUS" "$GIBS" <<'PY'
import json, os, subprocess, sys
T, prof, terms, gpus, gibs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(), sys.argv[5].split()

def load(which, g, gib):
    base = f"{T}/{which}_{g}_{gib}"
    p = json.load(open(base + ".json")) if os.path.exists(base + ".json") else None
    err = ""
    if p is None and os.path.exists(base + ".log"):
        err = next((l.strip() for l in open(base + ".log") if "error" in l), "no plan yet (still searching, or stopped by CPU_LIMIT)")[:300]
    cpu = wall = None
    if os.path.exists(base + ".time"):
        for l in open(base + ".time"):
            f = l.split()
            if len(f) == 4 and f[0].replace(".", "").isdigit(): cpu, wall = float(f[0]) + float(f[1]), float(f[2])
    usable = None
    if os.path.exists(base + ".log"):
        for l in open(base + ".log"):
            if l.startswith("galvc: usable memory per device:"): usable = int(l.split()[5])
    return p, err, cpu, wall, usable

def plan_str(p):
    z = [u["zero"] for u in p["units"][1:]]
    zs = " + ".join(f"{z.count(s)} ZeRO-{s}" if s else f"{z.count(s)} none" for s in sorted(set(z), reverse=True))
    mesh = " x ".join(f"{a}={n}" for a, n in zip(p["mesh"]["axes"], p["mesh"]["shape"]))
    sp = sum(1 for u in p["units"][1:] if u.get("sp"))
    return (f"{mesh}{f', sp {sp}' if sp else ''}; {zs}; "
            f"outer ZeRO-{p['units'][0]['zero']}; rc {p.get('recompute', 'none')}; mb {p.get('microbatches', 1)}")

GiB = 2 ** 30
rows, term_rows = [], []
print(f"{'GPUs':<5}{'GiB':<4} {'galvc plan':<62} {'step ms':>9} {'mem/usable GiB':>15} {'CPU s':>7} | "
      f"{'Galvatron plan in galvc':>10} {'mem GiB':>8} {'ratio':>6} | {'Galvatron':>9}")
for g in gpus:
    for gib in gibs:
        a, aerr, acpu, awall, usable = load("galvc", g, gib)
        b, berr, _, _, busable = load("galvatron", g, gib)
        usable = usable or busable
        t = json.loads(subprocess.check_output([sys.executable, terms, prof, g, gib, "--json"]))
        us = f"{usable / GiB:.1f}" if usable else "?"
        if a and acpu is None:  # plan.json of a count searched so far; the search still runs (or was stopped)
            aerr, a = f"unfinished: so far {plan_str(a)}, {a['predicted']['step_ns'] / 1e6:.1f} ms", None
        left = (f"{plan_str(a):<62} {a['predicted']['step_ns'] / 1e6:9.1f} "
                f"{a['memory_per_device']['total'] / GiB:6.1f}/{us:>6} {acpu:7.1f}") if a else f"{aerr:<100}"
        if b:
            bm = b["memory_per_device"]["total"]
            over = "" if not usable or bm <= usable else "!"
            right = f"{b['predicted']['step_ns'] / 1e6:10.1f} {bm / GiB:7.1f}{over or ' '}"
        else:
            right = berr[:60]
        ratio = f"{b['predicted']['step_ns'] / a['predicted']['step_ns']:6.3f}" if a and b else "     -"
        print(f"{g:<5}{gib:<4} {left} | {right} {ratio} | {t['galvatron_ms']:9.1f}")
        for name, p in (("galvc's plan", a), ("Galvatron's plan", b)):
            if not p: continue
            q = p["predicted"]
            term_rows.append(f"  {g:>3} GPUs {gib} GiB, {name} priced by galvc: compute {q['compute_ns'] / 1e6:.1f} + overlap slowdown "
                             f"{q['overlap_slowdown_ns'] / 1e6:.1f} + exposed communication {q['exposed_communication_ns'] / 1e6:.1f} "
                             f"(all communication {q['communication_ns'] / 1e6:.1f}; collectives "
                             + ", ".join(f"{k} {v['count']} x {v['bytes'] / 1e9:.1f} GB" for k, v in p["collectives"].items() if v["count"])
                             + f") = {q['step_ns'] / 1e6:.1f} ms")
        term_rows.append(f"  {g:>3} GPUs {gib} GiB, Galvatron's cost model: compute {t['compute_ms']:.1f} + exposed dp "
                         f"{t['exposed_dp_ms']:.1f} (ZeRO-3 gathers; all-reduce {t['dp_allreduce_ms']:.1f} hidden under a "
                         f"backward of {t['backward_ms']:.1f} per chunk, k {t['overlap_coe']:.4f}) + tp 0 + residual "
                         f"{t['residual_ms']:.1f} = {t['galvatron_ms']:.1f} ms")
print("(mem: ! = over the usable memory; ratio: Galvatron's plan priced by galvc / galvc's plan, >= 1 when galvc's is at least as fast)")
print("terms (ms):")
print("\n".join(term_rows))
PY
