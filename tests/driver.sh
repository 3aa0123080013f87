#!/usr/bin/env bash
# The galvc and galv-opt command lines: help, version, and one clear error
# line with exit status 2 (usage) or 1 (input) for each misuse.
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/lib/require.sh"
pass=0 fail=0

# expect STATUS SUBSTRING -- command...
expect() {
  local want=$1 sub=$2; shift 3
  "$@" >"$T/out" 2>"$T/err"; local rc=$?
  local lines; lines=$(wc -l <"$T/err")
  if [ "$rc" -ne "$want" ]; then
    echo "FAIL: '$*' exited $rc, expected $want"; cat "$T/err"; fail=$((fail + 1)); return
  fi
  if [ "$want" -ne 0 ] && { [ "$lines" -ne 1 ] || ! grep -qF -- "$sub" "$T/err"; }; then
    echo "FAIL: '$*': expected one error line containing '$sub', got:"; cat "$T/err"; fail=$((fail + 1)); return
  fi
  if [ "$want" -eq 0 ] && ! grep -qF -- "$sub" "$T/out"; then
    echo "FAIL: '$*': stdout lacks '$sub'"; fail=$((fail + 1)); return
  fi
  pass=$((pass + 1))
}

python3 "$SRC/examples/make_model.py" gpt2 -o "$T/gpt2.onnx" --no-verify >/dev/null

expect 0 "usage: galvc" -- "$BUILD/galvc" --help
expect 0 "fold-constants" -- "$BUILD/galvc" --help
expect 0 "galvc 0." -- "$BUILD/galvc" --version
expect 0 "usage: galv-opt" -- "$BUILD/galv-opt" --help
expect 2 "unknown option '--frobnicate'" -- "$BUILD/galvc" "$T/gpt2.onnx" --frobnicate
expect 2 "--gpus expects a positive integer" -- "$BUILD/galvc" "$T/gpt2.onnx" --gpus zero
expect 2 "--gpus expects a positive integer" -- "$BUILD/galvc" "$T/gpt2.onnx" --gpus -4
expect 2 "--input-shape expects NAME=DIMS" -- "$BUILD/galvc" "$T/gpt2.onnx" --input-shape 8x128
expect 2 "dims must be positive integers" -- "$BUILD/galvc" "$T/gpt2.onnx" --input-shape input_ids=8xq
expect 2 "--emit=llvm: unknown output kind" -- "$BUILD/galvc" "$T/gpt2.onnx" --emit=llvm
expect 2 "--dump-ir-after=nope: no such pass" -- "$BUILD/galvc" "$T/gpt2.onnx" --dump-ir-after=nope
expect 2 "more than one model" -- "$BUILD/galvc" "$T/gpt2.onnx" "$T/gpt2.onnx"
expect 1 "no-such.onnx" -- "$BUILD/galvc" "$T/no-such.onnx"
expect 2 "unknown pass 'nope'" -- "$BUILD/galv-opt" --passes=nope "$T/x.mlir"
expect 1 "missing.mlir: cannot open: No such file or directory" -- "$BUILD/galv-opt" "$T/missing.mlir"

expect 2 "unknown option '--foo'" -- "$BUILD/galv-mlir-check" --foo
expect 0 "usage: galv-mlir-check" -- "$BUILD/galv-mlir-check" --help
expect 2 "--passes needs a value" -- "$BUILD/galv-opt" "$T/x.mlir" --passes
expect 2 "--seq needs a value" -- "$BUILD/galv-eval" "$T/gpt2.onnx" --seq
# galv-eval: an input file of another shape than the bound one is named before the passes run
python3 -c "import numpy as np; np.save('$T/ids3x5.npy', np.zeros((3, 5), np.int64))"
expect 1 "has shape 3x5, but the model's input is bound to tensor<1x128xi64> (--batch 1, --seq 128): give --batch / --seq or --input-shape input_ids=3x5" -- "$BUILD/galv-eval" "$T/gpt2.onnx" --input input_ids="$T/ids3x5.npy"
"$BUILD/galv-eval" "$T/gpt2.onnx" --batch 3 --seq 5 --input input_ids="$T/ids3x5.npy" -o "$T/ev/" 2>"$T/err"
if [ -s "$T/ev/logits.npy" ]; then pass=$((pass + 1)); else echo "FAIL: galv-eval --batch 3 --seq 5:"; cat "$T/err"; fail=$((fail + 1)); fi
# galv-opt takes --passes VALUE as well as --passes=VALUE
"$BUILD/galvc" "$T/gpt2.onnx" -q --batch 1 --seq 4 --dump-ir-after=dce --dump-dir "$T/gd" -o /dev/null
"$BUILD/galv-opt" "$T/gd/05-dce.mlir" --passes fuse,memory-plan >"$T/opt.mlir"
if ! grep -q 'galv.arena' "$T/gd/05-dce.mlir" && grep -q 'galv.arena' "$T/opt.mlir"; then pass=$((pass + 1)); else echo "FAIL: galv-opt --passes LIST"; fail=$((fail + 1)); fi

# The committed GPT-2 export has 64 positions: the default --seq 128 is out of range, and the error says what to bind
expect 1 "gather index 64 out of range for axis 0 of size 64 (if the index follows from an input's shape" -- "$BUILD/galvc" "$SRC/examples/models/torch/gpt2_op17.onnx" -q
expect 0 "tensor<1x64x128xf32>" -- "$BUILD/galvc" "$SRC/examples/models/torch/gpt2_op17.onnx" -q --seq 64

# Binding: --input-shape overrides, --batch/--seq bind symbolic dims.
expect 0 "tensor<3x5xi64>" -- "$BUILD/galvc" "$T/gpt2.onnx" -q --input-shape input_ids=3x5
expect 0 "tensor<4x7xi64>" -- "$BUILD/galvc" "$T/gpt2.onnx" -q --batch 4 --seq 7
expect 1 "input_ids" -- "$BUILD/galvc" "$T/gpt2.onnx" -q --input-shape input_ids=3x5x2
# A static batch given another size: a graph that builds its batch in (a Reshape to [2, -1], as a static RNN export's
# initial state) is refused, one line naming the input and the output; a graph that does not (Relu) takes it.
python3 - "$T" <<'PY2'
import sys, numpy as np, onnx
from onnx import helper as h, TensorProto as TP, numpy_helper as nh
t = sys.argv[1]
x = h.make_tensor_value_info("x", TP.FLOAT, [2, 4])
shp = nh.from_array(np.array([2, -1], np.int64), "shp")
g = h.make_graph([h.make_node("Reshape", ["x", "shp"], ["y"])], "baked", [x], [h.make_tensor_value_info("y", TP.FLOAT, [2, 4])], [shp])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), t + "/baked.onnx")
g = h.make_graph([h.make_node("Relu", ["x"], ["y"])], "free", [x], [h.make_tensor_value_info("y", TP.FLOAT, [2, 4])])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), t + "/free.onnx")
PY2
expect 1 "input 'x': dim 0 is fixed at 2 in the model and given 1, but output 'y' keeps 2 rows" -- "$BUILD/galvc" "$T/baked.onnx" -q --input-shape x=1x4 --emit=ir
expect 0 "tensor<1x4xf32>" -- "$BUILD/galvc" "$T/free.onnx" -q --input-shape x=1x4

# Dumps: one numbered file per pass, after import and each pass.
"$BUILD/galvc" "$T/gpt2.onnx" -q --dump-ir-after=all --dump-dir "$T/d" -o "$T/o.mlir"
# The expected files follow the pipeline that --help prints.
want="00-import.mlir "
i=1
for p in $("$BUILD/galvc" --help | sed -n 's/^Pipeline: .*passes\/): \(.*\) -> output\.$/\1/p' | tr -d ','); do
  want+="$(printf '%02d' $i)-$p.mlir "
  i=$((i + 1))
done
if [ "$i" -gt 4 ] && [ "$(ls "$T/d" | tr '\n' ' ')" = "$want" ]; then
  pass=$((pass + 1))
else
  echo "FAIL: dump files: $(ls "$T/d" | tr '\n' ' ') (want: $want)"; fail=$((fail + 1))
fi
"$BUILD/galvc" "$T/gpt2.onnx" -q --dump-ir-after=fold-constants --dump-dir "$T/d2" -o "$T/o.mlir"
if [ "$(ls "$T/d2")" = "03-fold-constants.mlir" ]; then pass=$((pass + 1)); else echo "FAIL: single dump"; fail=$((fail + 1)); fi
# -o DIR/ writes the program there (sources, weights, Makefile) — --no-build
# here; tests/cpu_models.sh builds and runs programs. --emit=ir -o DIR/ writes
# DIR/MODEL.mlir.
"$BUILD/galvc" "$T/gpt2.onnx" -q --no-build -o "$T/outdir/"
if [ -s "$T/outdir/program.c" ] && [ -s "$T/outdir/weights.bin" ] && [ -s "$T/outdir/Makefile" ]; then
  pass=$((pass + 1))
else
  echo "FAIL: -o DIR/ did not write program.c, weights.bin, Makefile"; fail=$((fail + 1))
fi
"$BUILD/galvc" "$T/gpt2.onnx" -q --emit=ir -o "$T/irdir/"
if [ -s "$T/irdir/gpt2.mlir" ]; then pass=$((pass + 1)); else echo "FAIL: --emit=ir -o DIR/"; fail=$((fail + 1)); fi
# --gpus asks for GPUs: the cuda target is the default then (written, not built here).
"$BUILD/galvc" "$T/gpt2.onnx" -q --gpus 2 --strategy dp --no-build -o "$T/gpudir/"
if [ -s "$T/gpudir/program.cu" ]; then pass=$((pass + 1)); else echo "FAIL: --gpus 2 did not default to the cuda target"; fail=$((fail + 1)); fi
"$BUILD/galvc" "$T/gpt2.onnx" -q --gpus 2 --strategy dp --target cpu --no-build -o "$T/cpudir/"
if [ -s "$T/cpudir/program.c" ] && [ ! -e "$T/cpudir/program.cu" ]; then pass=$((pass + 1)); else echo "FAIL: --target cpu with --gpus"; fail=$((fail + 1)); fi
# The planner's default cluster: h100-sxm for the cuda target, cpu-local for --target cpu.
"$BUILD/galvc" "$T/gpt2.onnx" --gpus 2 --plan-only -o "$T/pc/" 2>"$T/err" >/dev/null
if grep -q "^plan: mesh .* on h100-sxm (8 per node)" "$T/err"; then pass=$((pass + 1)); else echo "FAIL: --gpus 2 (cuda) did not plan on h100-sxm: $(grep '^plan: mesh' "$T/err")"; fail=$((fail + 1)); fi
"$BUILD/galvc" "$T/gpt2.onnx" --gpus 2 --target cpu --plan-only -o "$T/pc/" 2>"$T/err" >/dev/null
if grep -q "^plan: mesh .* on cpu-local " "$T/err"; then pass=$((pass + 1)); else echo "FAIL: --target cpu did not plan on cpu-local: $(grep '^plan: mesh' "$T/err")"; fail=$((fail + 1)); fi
# -o FILE (the IR) with the planner: plan.json next to FILE, none in the working directory.
mkdir -p "$T/irf" "$T/cwd"
(cd "$T/cwd" && "$BUILD/galvc" "$T/gpt2.onnx" -q --gpus 2 -o "$T/irf/m.mlir")
if [ -s "$T/irf/m.mlir" ] && [ -s "$T/irf/plan.json" ] && [ ! -e "$T/cwd/plan.json" ]; then pass=$((pass + 1)); else echo "FAIL: -o FILE: plan.json not next to FILE"; fail=$((fail + 1)); fi
# pipeline stages with --gpus: CUDA stage programs (program.cu, the stage's pipe_stage.c) and the launcher
"$BUILD/galvc" "$T/gpt2.onnx" -q --gpus 2 --pipeline-stages 2 --no-build -o "$T/pp/"
if [ -s "$T/pp/stage0/program.cu" ] && [ -s "$T/pp/stage1/pipe_stage.c" ] && grep -q "pipe_cuda.cu" "$T/pp/stage1/Makefile" &&
   [ -x "$T/pp/launch" ]; then pass=$((pass + 1)); else echo "FAIL: --gpus 2 --pipeline-stages 2 did not write CUDA stages"; fail=$((fail + 1)); fi
# --cuda-arch: each listed architecture becomes a -gencode of the Makefile; a malformed list (an empty
# entry included: it would leave no -gencode) is one error line
"$BUILD/galvc" "$T/gpt2.onnx" -q --target cuda --cuda-arch sm_90a,sm_80 --no-build -o "$T/arch/"
if grep -q '^ARCH ?= -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_80,code=sm_80$' "$T/arch/Makefile"; then
  pass=$((pass + 1))
else
  echo "FAIL: --cuda-arch sm_90a,sm_80: $(grep '^ARCH' "$T/arch/Makefile")"; fail=$((fail + 1))
fi
expect 1 "--cuda-arch sm_x9: expected a list like sm_90,sm_80" -- "$BUILD/galvc" "$T/gpt2.onnx" -q --target cuda --cuda-arch sm_x9 --no-build -o "$T/arch2/"
expect 1 "--cuda-arch sm_90,: expected a list like sm_90,sm_80" -- "$BUILD/galvc" "$T/gpt2.onnx" -q --target cuda --cuda-arch sm_90, --no-build -o "$T/arch3/"
# a plan file of another model (2 layers) for a 4-layer one: one line naming the unit counts
python3 "$SRC/examples/make_model.py" gpt2 -o "$T/gpt2_4l.onnx" --layers 4 --no-verify >/dev/null
"$BUILD/galvc" "$T/gpt2.onnx" -q --batch 4 --seq 16 --gpus 4 --plan-only --plan-out "$T/plan2l.json" 2>/dev/null
expect 1 "plan2l.json: line 9: field 'units': the plan has 3 units, the model 5 (outer + 4 layers)" -- "$BUILD/galvc" "$T/gpt2_4l.onnx" --batch 4 --seq 16 --gpus 4 --plan "$T/plan2l.json" --plan-only -q
expect 2 "bf16 inference stages are not supported on the cuda target yet" -- "$BUILD/galvc" "$T/gpt2.onnx" --gpus 2 --pipeline-stages 2 --precision bf16 -o "$T/pp2/"
# (--grad-dtype bf16 with --pipeline-stages runs since, with ZeRO-1 / ZeRO-2 stages too: tests/pipeline_grad_bf16.sh;
# ZeRO-2 stages with --clip-grad-norm too: tests/pipeline_zero.sh runs them against the clipped single device)
# --strategy dp stages of 2 devices at one sample per microbatch (no dp split of it): the stage cost prices the
# planner's own plan there and galvc compiles that plan, so the pipeline plans (it answered "no stage ... can run on
# any sub-mesh"); tests/pipeline_dp_one_sample.sh runs such a pipeline against the single device
expect 0 "pipeline: 2 stages" -- bash -c '"$0" "$@" 2>&1' "$BUILD/galvc" "$T/gpt2.onnx" --train --target cpu --pipeline-stages 2 --gpus 4 --strategy dp --pipeline-zero 2 --clip-grad-norm 1 --no-build -o "$T/pp2g/"
expect 2 "--target tpu: unknown target" -- "$BUILD/galvc" "$T/gpt2.onnx" --target tpu
# An option that takes a value, given last: it names the option (not "unknown option").
expect 2 "--gpus needs a value" -- "$BUILD/galvc" "$T/gpt2.onnx" --gpus
expect 2 "-o needs a value" -- "$BUILD/galvc" "$T/gpt2.onnx" -o
# The mesh's axes multiply to --gpus.
expect 2 "mesh 2x4 has 8 devices, not --gpus 4" -- "$BUILD/galvc" "$T/gpt2.onnx" --gpus 4 --mesh dp=2,tp=4
# -o DIR/ creates missing parents; the last lines say how to build and run the program.
"$BUILD/galvc" "$T/gpt2.onnx" --no-build -o "$T/new/deep/dir/" 2>"$T/err"
if [ -s "$T/new/deep/dir/program.c" ] && grep -qF "galvc: build: make -C $T/new/deep/dir/" "$T/err" &&
   grep -qF "galvc: run: $T/new/deep/dir/program --input input_ids=FILE.npy -o results/" "$T/err" &&
   grep -qF "galvc: inputs input_ids tensor<1x128xi64>" "$T/err"; then
  pass=$((pass + 1))
else
  echo "FAIL: -o DIR/ with missing parents, or the closing build/run lines:"; cat "$T/err"; fail=$((fail + 1))
fi
# DIR/README: the command, the inputs with the shapes the files hold, how to build and run
if grep -qF -- "--no-build -o $T/new/deep/dir/" "$T/new/deep/dir/README" && grep -qF "input_ids tensor<1x128xi64>" "$T/new/deep/dir/README" &&
   grep -qF "run:    ./program --input input_ids=FILE.npy -o results/" "$T/new/deep/dir/README"; then
  pass=$((pass + 1))
else
  echo "FAIL: DIR/README:"; cat "$T/new/deep/dir/README"; fail=$((fail + 1))
fi
# --emit=program -o NEW (no trailing '/'): a new directory
"$BUILD/galvc" "$T/gpt2.onnx" -q --no-build --emit=program -o "$T/newdir"
if [ -s "$T/newdir/program.c" ]; then pass=$((pass + 1)); else echo "FAIL: --emit=program -o NEW"; fail=$((fail + 1)); fi
"$BUILD/galvc" "$T/gpt2.onnx" --gpus 2 --strategy dp --train --target cpu --no-build -o "$T/tr2/" 2>"$T/err"
if grep -qF "galvc: run: $T/tr2/launch --batches DIR/ --steps N" "$T/err" && grep -qF "for input_ids, labels" "$T/err" &&
   grep -qF "input_ids tensor<1x128xi64>, labels tensor<1x128xi64>" "$T/tr2/README" && grep -qF "run:    ./launch --batches" "$T/tr2/README"; then
  pass=$((pass + 1))
else
  echo "FAIL: the run line of a 2-rank training program:"; cat "$T/err"; fail=$((fail + 1))
fi
# An output directory under a regular file: one error line, exit 1 (program, and the planner's plan.json)
touch "$T/plainfile"
expect 1 "plainfile/sub/: cannot create output directory: Not a directory" -- "$BUILD/galvc" "$T/gpt2.onnx" -q -o "$T/plainfile/sub/"
expect 1 "plainfile/: cannot create output directory: Not a directory" -- "$BUILD/galvc" "$T/gpt2.onnx" -q --gpus 2 -o "$T/plainfile/"
# A file -o gets the IR text, and the progress line says so.
"$BUILD/galvc" "$T/gpt2.onnx" -o "$T/notadir" 2>"$T/err"
if grep -qF "wrote $T/notadir (IR text; -o DIR/ writes the program)" "$T/err"; then pass=$((pass + 1)); else echo "FAIL: -o FILE message"; cat "$T/err"; fail=$((fail + 1)); fi
# A pipeline's launch runs as root and on fewer cores than ranks without MPIRUN set (as the SPMD launch does).
"$BUILD/galvc" "$T/gpt2.onnx" --pipeline-stages 2 --target cpu --batch 2 --seq 8 --no-build -o "$T/pp2/" 2>"$T/err"
if grep -q -- 'ROOT=--allow-run-as-root' "$T/pp2/launch" && grep -q -- '--oversubscribe' "$T/pp2/launch" &&
   grep -qF "galvc: run: $T/pp2/launch --input NAME=FILE.npy" "$T/err"; then
  pass=$((pass + 1))
else
  echo "FAIL: pipeline launch / run line:"; cat "$T/pp2/launch" "$T/err"; fail=$((fail + 1))
fi
# A 2-rank program answers --help without mpirun, listing the global input shape (what the file holds),
# and names the file each output goes to.
if have_cmd mpicc; then
  "$BUILD/galvc" "$T/gpt2.onnx" -q --gpus 2 --strategy dp --target cpu --batch 4 --seq 8 -o "$T/dp2/" &&
    "$T/dp2/program" --help >"$T/out" 2>"$T/err"
  if grep -qF "input_ids: tensor<4x8xi64>" "$T/out"; then pass=$((pass + 1)); else echo "FAIL: 2-rank program --help:"; cat "$T/out" "$T/err"; fail=$((fail + 1)); fi
  # a pipeline stage answers --help by itself: the options and the inputs it reads (the microbatch's shape)
  "$BUILD/galvc" "$T/gpt2.onnx" -q --pipeline-stages 2 --microbatches 2 --target cpu --batch 2 --seq 8 -o "$T/pph/" &&
    "$T/pph/stage0/program" --help >"$T/out" 2>"$T/err"
  if grep -qF "pipeline stage 0 of 2, 2 microbatches" "$T/out" && grep -qF "input_ids: 1x8 i64" "$T/out"; then
    pass=$((pass + 1))
  else
    echo "FAIL: pipeline stage --help:"; cat "$T/out" "$T/err"; fail=$((fail + 1))
  fi
  # launch runs $GALV_PROGRAM (a CUDA directory's program-cpu) and says when it is not built
  expect 1 "launch: error: $T/dp2/program-cpu not built (run make -C $T/dp2 program-cpu)" -- env GALV_PROGRAM=program-cpu "$T/dp2/launch"
fi
# The N-rank CUDA Makefile's default goal is the program (make -n: nothing is compiled here):
# program.cu compiled by nvcc to its object, linked into ./program.
make -n -C "$T/gpudir" >"$T/make-n" 2>/dev/null
if grep -q 'nvcc .* -c -o nvcc.d/program.o program.cu' "$T/make-n" &&
   grep -q 'nvcc .* -o program nvcc.d/program.o ' "$T/make-n"; then
  pass=$((pass + 1))
else
  echo "FAIL: 'make' in a 2-rank CUDA program directory does not build ./program"; cat "$T/make-n"; fail=$((fail + 1))
fi

echo "driver: $pass passed, $fail failed"
galv_exit "$fail"
