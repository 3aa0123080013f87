#!/usr/bin/env bash
# Input files that galvc and the programs read (plan.json, the --sharding
# file, a --cluster JSON file, .npy inputs) are read strictly and with
# limits: /dev/zero, a directory, an unterminated or over-long line, junk
# after a value, a value named twice, an overflowing or repeated mesh axis, a
# truncated .npy header, a model or IR file that is a device, directory,
# FIFO or larger than its reader's cap: each is one error line naming the file (and the line
# where there is one), a non-zero exit, within seconds, and no sanitizer
# report. Conflicting options (--plan with another --mesh) are an error too.
# Usage: bad_files.sh BUILD_DIR
set -u
B=$(cd "${1:?build dir}" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
M=$SRC/examples/models/torch/gpt2_op17.onnx
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
check() { # NAME RC PATTERN CMD...: exit RC (within 20 s), exactly one stderr line matching PATTERN, nothing else
  local name=$1 want=$2 pat=$3 rc=0
  shift 3
  timeout 20 "$@" >"$T/out" 2>"$T/err" </dev/null || rc=$?
  if [ "$rc" = "$want" ] && [ "$(wc -l <"$T/err")" = 1 ] && grep -q -- "$pat" "$T/err" && ! grep -q Sanitizer "$T/err"; then
    echo "ok   $name: $(cat "$T/err")"; pass=$((pass + 1))
  else
    echo "FAIL $name: rc $rc (want $want), stderr: $(head -c 600 "$T/err")"; fail=$((fail + 1))
  fi
}
C=(--batch 4 --seq 8 --gpus 4 --target cpu)
G=("$B/galvc" "$M" "${C[@]}" -q)

# ---- plan.json (--plan)
check "--plan /dev/zero" 1 "/dev/zero: not a regular file" "${G[@]}" --plan /dev/zero --plan-only
check "--plan DIR" 1 "$T: not a regular file (a directory)" "${G[@]}" --plan "$T" --plan-only
"${G[@]}" --plan-only --plan-out "$T/plan.json" || { echo "FAIL --plan-out"; exit 1; }
plan_edit() { # OUT PYTHON-EXPR-ON-p
  python3 - "$T/plan.json" "$1" "$2" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
exec(sys.argv[3])
open(sys.argv[2], "w").write(json.dumps(p, indent=2))
PY
}
plan_edit "$T/huge.json" 'p["mesh"]["shape"][0] = 4611686018427387904'
check "mesh dim 2^62" 1 "huge.json: line [0-9]*: field 'mesh': axis 0 needs a short name and an integer size from 1 to" \
  "${G[@]}" --plan "$T/huge.json" --plan-only
plan_edit "$T/big.json" 'p["mesh"]["shape"][0] = 1e300'
check "mesh dim 1e300" 1 "big.json: line [0-9]*: field 'mesh': axis 0" "${G[@]}" --plan "$T/big.json" --plan-only
plan_edit "$T/dpdp.json" 'p["batch_axes"] = ["dp", "dp"]'
check "batch_axes twice" 1 "dpdp.json: line [0-9]*: field 'batch_axes': axis 'dp' given twice" "${G[@]}" --plan "$T/dpdp.json" --plan-only
plan_edit "$T/axes2.json" 'p["mesh"] = {"axes": ["dp", "dp"], "shape": [2, 2]}'
check "mesh axis named twice" 1 "axes2.json: line [0-9]*: field 'mesh': axis name 'dp' given twice" "${G[@]}" --plan "$T/axes2.json" --plan-only
printf '{"mesh": {"axes": ["dp"], "shape": [4]}} junk\n' >"$T/junk.json"
check "plan with trailing junk" 1 "junk.json: not valid JSON" "${G[@]}" --plan "$T/junk.json" --plan-only
check "--plan with another --mesh" 1 "plan.json: the plan's mesh dp=4 conflicts with --mesh dp=2,tp=2" \
  "${G[@]}" --plan "$T/plan.json" --mesh dp=2,tp=2 --plan-only
rc=0; "${G[@]}" --plan "$T/plan.json" --plan-only 2>"$T/err" || rc=$?
[ $rc = 0 ] && [ ! -s "$T/err" ] && { echo "ok   valid plan accepted, -q silent"; pass=$((pass + 1)); } || { echo "FAIL valid plan: rc $rc $(cat "$T/err")"; fail=$((fail + 1)); }

# ---- sharding file (--sharding)
S=("$B/galvc" "$M" --batch 2 --seq 8 --gpus 2 --target cpu -q --emit=ir -o "$T/o.mlir" --sharding)
check "--sharding /dev/zero" 1 "/dev/zero: cannot read the sharding file: not a regular file" "${S[@]}" /dev/zero
check "--sharding DIR" 1 "cannot read the sharding file: not a regular file (a directory)" "${S[@]}" "$T"
printf 'input_ids [{"dp"}, {}' >"$T/unterminated.txt"
check "unterminated line" 1 "unterminated.txt:1: 'input_ids': the line ends before its closing ']'" "${S[@]}" "$T/unterminated.txt"
printf '# pins\ninput_ids [{"dp"}, {"dp\n' >"$T/unterm2.txt"
check "unterminated axis" 1 "unterm2.txt:2: 'input_ids': bad or repeated mesh axis" "${S[@]}" "$T/unterm2.txt"
printf 'input_ids [{"dp"}, {}] junk\n' >"$T/junk.txt"
check "trailing junk" 1 "junk.txt:1: 'input_ids': unexpected text after the closing ']'" "${S[@]}" "$T/junk.txt"
printf 'input_ids [{"dp"} {}]\n' >"$T/comma.txt"
check "missing comma" 1 "comma.txt:1: 'input_ids': expected ',' or ']'" "${S[@]}" "$T/comma.txt"
printf 'input_ids [{"dp"}, {}]\n\ninput_ids [{}, {}]\n' >"$T/twice.txt"
check "one name twice" 1 "twice.txt:3: 'input_ids' is given a sharding twice (first on line 1)" "${S[@]}" "$T/twice.txt"
python3 -c "import sys; open(sys.argv[1], 'w').write('input_ids [' + '{}, ' * 2000 + ']\n')" "$T/long.txt"
check "over-long line" 1 "long.txt:1: line longer than 4095 bytes" "${S[@]}" "$T/long.txt"
printf 'input_ids [{"dp"}, {}]  # batch split\n' >"$T/ok.txt"
rc=0; "${S[@]}" "$T/ok.txt" 2>"$T/err" || rc=$?
[ $rc = 0 ] && [ ! -s "$T/err" ] && { echo "ok   valid sharding file with a comment accepted"; pass=$((pass + 1)); } || { echo "FAIL valid sharding file: rc $rc $(cat "$T/err")"; fail=$((fail + 1)); }

# ---- cluster JSON (--cluster FILE)
check "--cluster /dev/zero" 2 "/dev/zero: cannot read cluster file: not a regular file" "${G[@]}" --cluster /dev/zero --plan-only
check "--cluster DIR" 2 "cannot read cluster file: not a regular file (a directory)" "${G[@]}" --cluster "$T/" --plan-only

# ---- .npy inputs (galv-eval reads them with the programs' reader, runtime/npy.c)
python3 - "$T" <<'PY'
import sys, numpy as np, io
t = sys.argv[1]
a = np.zeros((2, 8), np.int64)
np.save(f"{t}/ids.npy", a)
b = open(f"{t}/ids.npy", "rb").read()
hl = b[8] | b[9] << 8
h = b[10:10 + hl].decode("latin1")
i = h.rindex("}")
open(f"{t}/nobrace.npy", "wb").write(b[:10] + (h[:i] + " " + h[i + 1:]).encode("latin1") + b[10 + hl:])
open(f"{t}/longer.npy", "wb").write(b + b"\0" * 8)
open(f"{t}/shorter.npy", "wb").write(b[:-8])
PY
E=("$B/galv-eval" "$M" --batch 2 --seq 8)
check ".npy header without '}'" 1 "nobrace.npy: malformed header" "${E[@]}" --input input_ids="$T/nobrace.npy"
check ".npy longer than its shape" 1 "longer.npy: file longer than its shape says" "${E[@]}" --input input_ids="$T/longer.npy"
check ".npy shorter than its shape" 1 "shorter.npy: file shorter than its shape says" "${E[@]}" --input input_ids="$T/shorter.npy"
check ".npy /dev/zero" 1 "/dev/zero: not a regular file" "${E[@]}" --input input_ids=/dev/zero

# ---- the ONNX model and galv-opt's IR text
check "model /dev/zero" 1 "/dev/zero: not a regular file" "$B/galvc" /dev/zero "${C[@]}" --plan-only
check "model DIR" 1 "$T: not a regular file" "$B/galvc" "$T" "${C[@]}" --plan-only
mkfifo "$T/fifo.onnx"
check "model FIFO" 1 "fifo.onnx: not a regular file" "$B/galvc" "$T/fifo.onnx" "${C[@]}" --plan-only
truncate -s 3G "$T/huge.onnx" # sparse: no disk used
check "model over 2 GiB" 1 "huge.onnx: file of 3221225472 bytes, larger than the 2 GiB" "$B/galvc" "$T/huge.onnx" "${C[@]}" --plan-only
rm -f "$T/huge.onnx"
check "galv-opt /dev/zero" 1 "/dev/zero: not a regular file" "$B/galv-opt" /dev/zero --passes dce
check "galv-opt DIR" 1 "$T: not a regular file (a directory)" "$B/galv-opt" "$T" --passes dce
check "galv-opt FIFO" 1 "fifo.onnx: not a regular file" "$B/galv-opt" "$T/fifo.onnx" --passes dce
truncate -s 1100M "$T/huge.mlir"
check "galv-opt over 1 GiB" 1 "huge.mlir: file of 1153433600 bytes, larger than the 1073741824 bytes" "$B/galv-opt" "$T/huge.mlir" --passes dce
rm -f "$T/huge.mlir"
echo "bad_files: $pass ok, $fail failed"
[ $fail = 0 ]
