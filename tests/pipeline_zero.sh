#!/usr/bin/env bash
# ZeRO-1 inside pipeline stages (docs/pipeline.md, "ZeRO-1 inside stages"):
# galvc --pipeline-zero 1 splits each stage's AdamW moments over the stage's
# ranks that hold the same parameters; each rank updates its chunk of the
# parameters from the (whole) gradient sums and the chunks are all-gathered.
# Under GALV_COMM_SYNC=1 and `timeout`, on the pipeline_tp.sh training model
# (GPT-2: 2 layers, hidden 32, vocab 64; batch 8 x seq 32, B = 2, 2 AdamW
# steps, 1F1B; seq 32: at seq 8 the planner's plan of a one-block stage is
# tp over its 2 ranks, whose tp all-reduces move fewer bytes than dp's
# per-microbatch gradient all-reduce, and ZeRO-1 has no dp ranks to split over): pp=2 x dp=2 (--strategy dp), pp=2 x the planner's plan per
# stage, pp=2 x dp=2 x tp=2 (8 ranks) print the single device's losses and
# leave its weights (rtol 1e-4, atol 1e-5); every rank's all-gather bytes
# equal galvc's prediction x steps; the optimizer state per rank is half the
# run without ZeRO-1 (pp=2 x dp=2 without it: the reference); every rank's
# allocation tracker peak (runtime/io.c) is within 5 % either way of the
# stage plan's peak (its state bytes + the microbatches it charges x the
# bytes saved per microbatch; 4 ranks: the stage DP's plan is the compiled
# one); with --pipeline-recompute too (pp=2 x dp=2: stage 0
# recomputes, no backward entry, only its token ids saved; ZeRO-1 as
# above: the two touch different things). ZeRO-2 (--pipeline-zero 2: the
# stage programs leave the gradients unreduced over the ZeRO ranks, the
# runtime sums them locally and reduce-scatters once per step): pp=2 x the
# planner's plan, pp=2 x dp=2 and pp=2 x dp=2 x tp=2 = the single device as
# above; every rank's reduce-scatter bytes = galvc's prediction x steps, its
# chunk half the local sums, stage 0's in-program all-reduce bytes below
# ZeRO-1's; the memory check on the planner's plan only (a preset's program
# may compute whole what the planner's plan leaves unreduced). ZeRO-2 per
# microbatch (--zero-reduce per-microbatch: each microbatch's gradients
# reduce-scattered into the rank's chunk): the single device, reduce-scatter
# bytes = galvc's prediction x 2 microbatches x 2 steps, the gradient sums
# below 60 % of the per-step form's, memory within 5 %. --clip-grad-norm
# with ZeRO-2 (both forms: the global norm over the chunks, each parameter
# counted once) = the single device's clipped run, which differs from the
# unclipped one. The stage DP with a fixed --pipeline-stages 2 and
# --memory-limit 680000 (no --pipeline-zero: chosen; neither no ZeRO,
# ZeRO-1 nor ZeRO-2 once per step fits stage 0; 750000 until the stage's
# entries shared one weights buffer, 2026-12-06: ZeRO-2 once per step fits
# that since): stage 0 +zero-2/mb (per
# microbatch), stage 1 none (its gradients reduced once per step, which fits
# since its program leaves them unreduced), in plan.json (--plan-out: stage_zero [2, 0],
# stage_zero_reduce), --plan replays it, without the limit no ZeRO (the
# flags' choice); the run = the single device. The tied embedding on pp=2 x dp=2 x tp=2 (both stages split it
# over tp alike: summed across the stages block by block) without ZeRO (its block all-reduced once per step over
# dp, then summed across the stages) and with ZeRO-2 once per step and per microbatch (its block's step sum into
# the reduce-scatter after the sum across the stages): the single device, the ZeRO bytes = galvc's prediction.
# Bad input (--pipeline-zero without stages, 3, --zero-reduce with --pipeline-zero 1): one error line.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/mpi_env.sh"

m="$T/gpt2t.onnx"
python3 "$SRC/examples/make_model.py" gpt2 -o "$m" --layers 2 --hidden 32 --heads 4 --vocab 64 --no-verify >/dev/null ||
  { echo "FAIL make_model"; exit 1; }
python3 -c "
import numpy as np, os
r = np.random.RandomState(0)
os.makedirs('$T/b')
np.save('$T/b/input_ids.npy', r.randint(0, 64, (2, 8, 32)).astype(np.int64))
np.save('$T/b/labels.npy', r.randint(0, 64, (2, 8, 32)).astype(np.int64))" || { echo "FAIL batches"; exit 1; }
timeout 300 "$BUILD/galvc" "$m" --input-shape input_ids=8x32 --train --target cpu -q -o "$T/one/" 2>"$T/err" ||
  { echo "FAIL single: $(cat "$T/err")"; exit 1; }
timeout 120 "$T/one/program" --batches "$T/b" --steps 2 -o "$T/one.w" >"$T/one.log" 2>"$T/err" ||
  { echo "FAIL single run: $(cat "$T/err")"; exit 1; }
CLIP=0.01 # the reference of the clipping cases: the single device clipped (the clip bites: its losses differ)
timeout 300 "$BUILD/galvc" "$m" --input-shape input_ids=8x32 --train --clip-grad-norm $CLIP --target cpu -q -o "$T/onec/" 2>"$T/err" ||
  { echo "FAIL single clipped: $(cat "$T/err")"; exit 1; }
timeout 120 "$T/onec/program" --batches "$T/b" --steps 2 -o "$T/onec.w" >"$T/onec.log" 2>"$T/err" ||
  { echo "FAIL single clipped run: $(cat "$T/err")"; exit 1; }
if cmp -s <(grep "^step 1 " "$T/one.log") <(grep "^step 1 " "$T/onec.log"); then bad "--clip-grad-norm $CLIP does not bite"; fi
# the tied-embedding model of the "tie" cases (its embedding held by both stages), on the single device
python3 "$SRC/examples/make_model.py" gpt2 -o "$T/tie.onnx" --layers 2 --hidden 32 --heads 4 --vocab 64 --tie-embeddings \
  --no-verify >/dev/null || { echo "FAIL make_model tie"; exit 1; }
timeout 300 "$BUILD/galvc" "$T/tie.onnx" --input-shape input_ids=8x32 --train --target cpu -q -o "$T/onet/" 2>"$T/err" ||
  { echo "FAIL single tied: $(cat "$T/err")"; exit 1; }
timeout 120 "$T/onet/program" --batches "$T/b" --steps 2 -o "$T/onet.w" >"$T/onet.log" 2>"$T/err" ||
  { echo "FAIL single tied run: $(cat "$T/err")"; exit 1; }

# CASE = name:zero:strategy[:mesh]; strategy "plan": no --strategy (each stage's plan from the planner); a name
# ending in "rc": with --pipeline-recompute (the earlier stage recomputes: ZeRO-1 and recomputation together);
# containing "mb": --zero-reduce per-microbatch; containing "clip": --clip-grad-norm (the clipped single device the
# reference); containing "tie": the tied-embedding model (the embedding's gradient summed across the stages, then
# reduce-scattered: per microbatch one pass more per step); zero "lim": no --pipeline-zero, --memory-limit 680000 (the stage DP chooses ZeRO-2 for the fixed stages)
for c in ${GALV_PIPE_ZERO_CASES:-dp0:0:dp dp:1:dp dprc:1:dp plan:1:plan dptp:1:dp,tp:dp=2,tp=2 z2plan:2:plan z2:2:dp z2tp:2:dp,tp:dp=2,tp=2 z2mb:2:plan z2clip:2:plan z2mbclip:2:plan z1clip:1:plan z2mbtie:2:plan z2lim:lim:plan dp0tptie:0:dp,tp:dp=2,tp=2 z2tptie:2:dp,tp:dp=2,tp=2 z2mbtptie:2:dp,tp:dp=2,tp=2}; do
  IFS=: read -r name zero st mesh <<<"$c"
  d="$T/tr-$name"
  gpus=4 meshopt=() strat=(--strategy "$st") label="pp=2 x dp=2 (--strategy dp)" rcopt=() zopt=(--pipeline-zero "$zero") form=once
  [ "$st" = plan ] && strat=() label="pp=2 x the planner's plan"
  [ -n "$mesh" ] && gpus=8 meshopt=(--mesh "$mesh") label="pp=2 x dp=2 x tp=2"
  label="$label, --pipeline-zero $zero"
  if [ "$zero" = lim ]; then
    zopt=(--memory-limit 680000 --recompute none --pipeline-recompute=off --plan-out "$d.json") zero=2 form=any
    label="pp=2 x the planner's plan, --memory-limit 680000 (ZeRO chosen by the stage DP)"
  fi
  [[ $name == *rc ]] && rcopt=(--pipeline-recompute) label="$label --pipeline-recompute"
  [[ $name == *mb* ]] && zopt+=(--zero-reduce per-microbatch) form=mb label="$label --zero-reduce per-microbatch"
  ra="$T/one.log" rw="$T/one.w" mm=$m
  [[ $name == *tie* ]] && ra="$T/onet.log" rw="$T/onet.w" mm="$T/tie.onnx" label="$label, tied embeddings"
  [[ $name == *clip* ]] && zopt+=(--clip-grad-norm $CLIP) ra="$T/onec.log" rw="$T/onec.w" label="$label --clip-grad-norm $CLIP"
  if ! timeout 600 "$BUILD/galvc" "$mm" --batch 8 --seq 32 --train --pipeline-stages 2 --microbatches 2 --schedule 1f1b \
      --gpus "$gpus" "${meshopt[@]}" "${strat[@]}" "${zopt[@]}" "${rcopt[@]}" --target cpu -o "$d/" </dev/null >"$d.galvc" 2>&1; then
    bad "$label: galvc: $(grep -m3 error "$d.galvc")"
    continue
  fi
  if ! timeout 120 "$d/launch" --batches "$T/b" --steps 2 -o "$d.w" </dev/null >"$d.log" 2>"$T/err"; then
    bad "$label: run: $(grep -m3 -i error "$T/err" "$d.log")"
    continue
  fi
  if [ ${#rcopt[@]} -gt 0 ] && { [ -e "$d/stage0/program_bwd.c" ] || ! grep -q "saved activations in flight: peak 1024 bytes (2 microbatches x 512 bytes)" "$d.log"; }; then
    bad "$label: stage 0 does not recompute (a backward entry, or more than its token ids saved per microbatch)"
    continue
  fi
  ref="$T/tr-dp0.log" # the optimizer state per rank against the run without ZeRO-1 (recomputing: other cuts, none)
  [ ${#rcopt[@]} -gt 0 ] && ref=none
  [[ $name == *tie* ]] && ref=none # another model (the embedding's copy on stage 1)
  z1=none # ZeRO-2: the same pipeline with ZeRO-1 (its stage collectives and gradient sums)
  [ "$zero" = 2 ] && z1="$T/tr-${name/z2/dp}.log" && [ "$st" = plan ] && z1="$T/tr-plan.log"
  [[ $name == *clip* || $name == *lim || $name == *tie* ]] && z1=none
  if [[ $name == *lim ]]; then # the stage DP's choice: reported, in plan.json, replayed by --plan; not without the limit
    want="strategies dp=2 +zero-2/mb | dp=2," # stage 1: no ZeRO (its gradients reduced once per step) fits and is chosen
    timeout 300 "$BUILD/galvc" --plan "$d.json" "$m" --batch 8 --seq 32 --train --gpus 4 --target cpu --plan-only -o "$T/re/" \
      </dev/null >"$d.re" 2>&1
    timeout 300 "$BUILD/galvc" "$m" --batch 8 --seq 32 --train --pipeline-stages 2 --microbatches 2 --schedule 1f1b --gpus 4 \
      --recompute none --pipeline-recompute=off --target cpu --plan-only -o "$T/nolim/" </dev/null >"$d.nolim" 2>&1
    if ! grep -q "$want" "$d.galvc" || ! grep -q '"stage_zero": \[2, 0\], "stage_zero_reduce": \["per-microbatch", "once"\]' "$d.json"; then
      bad "$label: the stage DP's choice: $(grep -m1 -o 'strategies.*' "$d.galvc"); $(grep -o '"stage_zero.*"stage_layer' "$d.json")"
      continue
    elif ! grep -q "$want" "$d.re"; then
      bad "$label: --plan replays $(grep -m1 -o 'strategies.*' "$d.re") $(grep -m1 error "$d.re")"
      continue
    # (the step line names its ZeRO part, 0 ms without ZeRO: every other mention of ZeRO is a choice of it)
    elif grep -v -E 'predicted step .* \+ ZeRO 0\.000 ms' "$d.nolim" | grep -E "ZeRO|zero-" >/dev/null ||
         ! grep -q "stage 1: groups" "$d.nolim"; then
      bad "$label: without the limit ZeRO is chosen too (the flags' choice expected): $(grep -m1 -E 'ZeRO|error' "$d.nolim")"
      continue
    fi
  fi
  z2o=none # ZeRO-2 per microbatch: the per-step form's gradient sums
  [ "$form" = mb ] && [[ $name != *tie* ]] && z2o="$T/tr-z2plan.log"
  if msg=$(python3 - "$ra" "$d.log" "$rw" "$d.w" "$d.galvc" "$zero" "$gpus" "$ref" "$z1" "$st" "$form" "$z2o" "$name" 2>&1 <<'PY'
import sys, os, re, numpy as np
la, lb, wa, wb, gl, zero, gpus, ref, z1, st, form, z2o, name = sys.argv[1:14]
zero, gpus = int(zero), int(gpus)
zs2 = [0] if name.endswith("lim") else [0, 1]  # the stages with ZeRO; the limit case: stage 0 only (stage 1: none, reduced once)
def losses(p): return [float(x) for x in re.findall(r"^step \d+ loss (\S+)", open(p).read(), re.M)]
a, b = losses(la), losses(lb)
if len(a) != 2 or len(b) != 2 or not np.allclose(b, a, rtol=1e-4, atol=0):
    sys.exit(f"losses {b} != single device {a}")
worst, n = 0.0, 0
for f in sorted(os.listdir(wa)):
    if not os.path.exists(os.path.join(wb, f)): sys.exit(f"no final weight {f}")
    x, y = np.load(os.path.join(wa, f)), np.load(os.path.join(wb, f))
    if x.shape != y.shape or not np.allclose(y, x, rtol=1e-4, atol=1e-5):
        sys.exit(f"{f}: max abs diff {np.abs(x - y).max() if x.shape == y.shape else y.shape}")
    worst, n = max(worst, float(np.abs(x - y).max())), n + 1
log = open(lb).read()
mem = re.findall(r"\[stage (\d), rank (\d+), stage rank \d+\]: memory per rank: (\d+) bytes \(.*optimizer state (\d+).*; "
                 r"predicted (\d+) \+", log)
if len(mem) != gpus: sys.exit(f"{len(mem)} of {gpus} ranks report their memory")
worst_mem = 0.0
# the stage DP prices the planner's plan of each stage; with --mesh the compile partitions by the preset (dp x tp)
# instead (docs/pipeline.md, "Stages of more than one device"), so its prediction is of another program
# (ZeRO-2 under a preset: the planner's plan leaves unreduced what the preset's may compute whole, from gathered
# values: stage 1 of --strategy dp; so only the planner's plan is compared there)
# (tied embeddings: the stage cost counts the runtime's whole-gradient buffers of a parameter several stages hold,
# accw and wtmp in runtime/pipe.c: compared too)
# (no ZeRO: the stage cost prices the program with its gradients unreduced, as ZeRO-2's, since the runtime reduces them
# once per step: docs/pipeline.md, "Gradients reduced once per step"; under the preset likewise only ZeRO-1 compared)
memcheck = gpus == 4 and (zero == 1 or st == "plan")
peaks = re.findall(r"\[stage (\d), rank (\d+), stage rank \d+\]: memory peak (\d+) bytes \(tracker\), the stage plan's peak (\d+) ", log)
if len(peaks) != gpus: sys.exit(f"{len(peaks)} of {gpus} ranks report their tracked memory peak")
for st, rank, meas, pred in peaks:
    meas, pred = int(meas), int(pred)
    if memcheck and abs(meas - pred) > 0.05 * pred:
        sys.exit(f"stage {st} rank {rank}: the stage plan's peak {pred} bytes, the tracker's {meas} (bound: within 5 %)")
    if abs(meas - pred) / pred > abs(worst_mem): worst_mem = (meas - pred) / pred
zs = re.findall(r"\[stage (\d), rank (\d+), stage rank \d+\]: ZeRO-%d over (\d+) ranks: optimizer .* all-gather (\d+) bytes sent in 2 steps"
                % max(zero, 1), log)
pz = {int(s): int(b) for s, b in re.findall(r"galvc: stage (\d): ZeRO-1: optimizer state split over 2 ranks \(\d+ floats each\), "
                                            r"all-gather (\d+) bytes sent per rank per step", open(gl).read())}
extra = ""
if zero:
    if len(zs) != gpus * len(zs2) // 2 or any(g != "2" for _, _, g, _ in zs): sys.exit(f"ZeRO-{zero} over 2 ranks on {len(zs)} of {gpus} ranks")
    if sorted(pz) != zs2: sys.exit(f"galvc predicts the all-gather of stages {sorted(pz)}")
    if 1 not in pz: pz[1] = 0
    for st, rank, _, got in zs:
        if int(got) != 2 * pz[int(st)]: sys.exit(f"stage {st} rank {rank}: all-gather {got} bytes, predicted 2 x {pz[int(st)]}")
    extra = f"; all-gather bytes = predicted ({pz[0]}, {pz[1]} per rank per step)"
    if os.path.exists(ref) and gpus == 4:  # the optimizer state per rank: half of the run without ZeRO-1
        full = {int(s): int(o) for s, _, _, o, _ in re.findall(r"\[stage (\d), rank (\d+), stage rank \d+\]: memory per rank: (\d+) "
                                                                r"bytes \(.*optimizer state (\d+).*; predicted (\d+) \+", open(ref).read())}
        for st, rank, _, opt, _ in mem:  # (a stage the DP left without ZeRO keeps it whole)
            if int(st) in zs2 and not 0 < int(opt) <= (full[int(st)] + 256) // 2 or int(st) not in zs2 and int(opt) != full[int(st)]:
                sys.exit(f"stage {st} rank {rank}: optimizer state {opt} bytes, without ZeRO-1 {full[int(st)]}")
        extra += f"; optimizer state per rank {mem[0][3]} of {full[int(mem[0][0])]} bytes"
elif zs:
    sys.exit("ZeRO-1 without --pipeline-zero 1")
if zero == 2:  # per stage, its form: the step's sums reduce-scattered once (bytes = galvc's prediction x 2 steps), or each
    # microbatch's gradients (x 2 microbatches x 2 steps); fewer stage collective bytes than ZeRO-1's
    gtxt = open(gl).read()
    rs, pr = {}, {}
    for st_, rank, sums, npart, ntr, chunk, got in re.findall(
            r"\[stage (\d), rank (\d+), stage rank \d+\]: ZeRO-2 over 2 ranks: gradient sums (\d+) bytes summed locally "
            r"\((\d+) of (\d+) trained .*this rank's chunk (\d+) bytes; reduce-scatter (\d+) bytes sent in 2 steps", log):
        rs[(int(st_), int(rank))] = ("once", int(npart), int(got), int(sums), int(chunk))
    for st_, rank, npart, ntr, chunk, got in re.findall(
            r"\[stage (\d), rank (\d+), stage rank \d+\]: ZeRO-2 over 2 ranks: each microbatch's gradients reduce-scattered "
            r"\((\d+) of (\d+) trained .*chunk sums (\d+) bytes.*; reduce-scatter (\d+) bytes sent in 2 steps", log):
        rs[(int(st_), int(rank))] = ("mb", int(npart), int(got), 0, int(chunk))
    for st_, nu, nb in re.findall(r"galvc: stage (\d): ZeRO-2: gradient sums reduce-scattered over 2 ranks once per step \((\d+) of \d+ "
                                r"parameters.*, reduce-scatter (\d+) bytes sent", gtxt):
        pr[int(st_)] = ("once", int(nu), int(nb))
    for st_, nu, nb, more in re.findall(r"galvc: stage (\d): ZeRO-2: each microbatch's gradients reduce-scattered over 2 ranks .*"
                                      r"\((\d+) of \d+ parameters.*reduce-scatter (\d+) bytes sent per rank per microbatch( and once "
                                      r"more per step)?", gtxt):
        pr[int(st_)] = ("mb" + ("+1" if more else ""), int(nu), int(nb))
    if len(rs) != gpus * len(zs2) // 2 or sorted(pr) != zs2: sys.exit(f"ZeRO-2 lines: {len(rs)} of {gpus} ranks, galvc's for stages {sorted(pr)}")
    if 1 not in pr: pr[1] = ("none", 0, 0)
    if form != "any" and any(f[:2] != form[:2] for f, _, _ in pr.values()): sys.exit(f"ZeRO-2 forms {pr}, expected {form}")
    for (st_, rank), (f, npart, got, sums, chunk) in rs.items():
        passes = 2 if f == "once" else 6 if pr[st_][0] == "mb+1" else 4  # per step: 1, 2 microbatches, + 1 (shared)
        if f != pr[st_][0][:len(f)] or got != passes * pr[st_][2] or npart != pr[st_][1]:
            sys.exit(f"stage {st_} rank {rank}: {f} reduce-scatter {got} bytes ({npart} unreduced), predicted {pr[st_]} x 2 steps"
                     f"{'' if f == 'once' else ' x 2 microbatches'}")
        if f == "once" and not sums <= 2 * chunk <= sums + 256: sys.exit(f"stage {st_} rank {rank}: chunk {chunk} of sums {sums}")
    if pr[0][1] == 0: sys.exit("stage 0 leaves no gradient unreduced")
    col = r"\[stage (\d), rank (\d+), stage rank \d+\]: stage collectives sent by this rank in 2 steps: all_reduce (\d+), all_gather (\d+)"
    extra += (f"; reduce-scatter bytes = predicted (stage 0 {pr[0][0]} {pr[0][2]}, stage 1 {pr[1][0]} {pr[1][2]} per rank per "
              f"step / microbatch; {pr[0][1]}, {pr[1][1]} gradients unreduced)")
    if form == "mb" and os.path.exists(z2o):  # the gradient sums against the per-step form's (local sums + chunk)
        sums = lambda p: {int(s): int(g) for s, g in re.findall(r"\[stage (\d), rank \d+, stage rank \d+\]: memory per rank: \d+ bytes "
                                                               r"\(.*gradient sums (\d+),", open(p).read())}
        a1, a2 = sums(lb), sums(z2o)
        for k in (0, 1):
            if not a1[k] < 0.6 * a2[k]: sys.exit(f"stage {k}: gradient sums {a1[k]} bytes, the per-step form's {a2[k]}")
        extra += f"; gradient sums {a1[0]} / {a1[1]} bytes (per step: {a2[0]} / {a2[1]})"
    if os.path.exists(z1):
        c1 = {(int(s), int(r)): int(a) for s, r, a, _ in re.findall(col, open(z1).read())}
        c2 = {(int(s), int(r)): int(a) for s, r, a, _ in re.findall(col, log)}
        k = (0, 0)
        if k not in c1 or k not in c2 or not c2[k] < c1[k]: sys.exit(f"stage 0 all-reduce bytes {c2.get(k)} vs ZeRO-1 {c1.get(k)}")
        r00 = rs[(0, 0)][2]
        extra += f"; stage 0 rank 0 all-reduce {c2[k]} + reduce-scatter {r00} bytes vs ZeRO-1's all-reduce {c1[k]}"
memtxt = (f"tracked memory peak within {100 * worst_mem:+.1f} % of the stage plan's" if memcheck else
          f"tracked memory peak {max(int(x[2]) for x in peaks)} bytes per rank at most (the prediction, "
          "of the planner's plan rather than the preset's, is not compared)")
print(f"losses {b[0]:.8f} {b[1]:.8f} == single device, {n} weights max abs diff {worst:.2g}; {memtxt}{extra}")
PY
); then
    ok "$label ($gpus ranks): $msg"
  else
    bad "$label: $msg"
  fi
done

# bad input: one error line
for args in "--pipeline-zero 2 --train" "--pipeline-zero 1 --train" "--pipeline-zero 3 --pipeline-stages 2 --train" \
  "--pipeline-zero 1 --pipeline-stages 2 --gpus 4 --zero-reduce per-microbatch --train"; do
  # shellcheck disable=SC2086
  if timeout 120 "$BUILD/galvc" "$m" --batch 8 --seq 32 $args --target cpu -q -o "$T/bad/" </dev/null >/dev/null 2>"$T/err"; then
    bad "$args: succeeded"
  elif [ "$(wc -l <"$T/err")" = 1 ] && grep -q -- "--pipeline-zero" "$T/err"; then
    ok "$args: $(cat "$T/err")"
  else
    bad "$args: $(head -3 "$T/err")"
  fi
done
echo "pipeline_zero: $pass passed, $fail failed"
[ "$fail" = 0 ]
