#!/bin/bash
# cluster_errors.sh BUILD_DIR — bad --cluster files and names: one error
# line naming the file and the field, a non-zero exit, never a crash.
set -u
build=${1:?usage: cluster_errors.sh BUILD_DIR}
src=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
galvc=$build/galvc
model=$src/examples/models/torch/gpt2_op17.onnx
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

good='{"name": "t", "nodes": 1, "devices_per_node": 2, "peak_tflops": {"f32": 1, "bf16": 2, "f16": 2},
 "memory_bytes": 1000000000, "memory_bandwidth_gbps": 10,
 "intra_node": {"bus_bandwidth_gbps": 5, "latency_us": 1},
 "inter_node": {"bandwidth_gbps": 1, "latency_us": 2}}'

# expect NAME FILE_CONTENT WANT (a substring of the one error line)
expect() {
  local name=$1 content=$2 want=$3 f=$tmp/$1.json
  printf '%s' "$content" > "$f"
  "$galvc" "$model" --seq 8 --cluster "$f" --report-cost -q > "$tmp/out" 2> "$tmp/err"
  local rc=$? lines
  lines=$(wc -l < "$tmp/err")
  if [ $rc -eq 0 ] || [ $rc -ge 128 ] || [ "$lines" -ne 1 ] || ! grep -qF -- "$want" "$tmp/err" || ! grep -qF "$f" "$tmp/err"; then
    echo "FAIL $name (rc $rc, $lines lines): want '$want'"; sed 's/^/  | /' "$tmp/err"; fails=$((fails + 1))
  else
    echo "ok   $name: $(cat "$tmp/err")"
  fi
}
edit() { printf '%s' "$good" | sed "s|$1|$2|"; }

expect empty '' 'not valid JSON: line 1: unexpected end of input'
expect not-json 'name = "x"' 'not valid JSON: line 1: unexpected character'
expect truncated "${good%?}" "expected ',' or '}'"
expect array '[1, 2]' "field '(root)'"
expect missing-name "$(edit '"name": "t", ' '')" "field 'name': missing"
expect name-number "$(edit '"name": "t"' '"name": 7')" "field 'name': line 1: expected a string"
expect nodes-zero "$(edit '"nodes": 1' '"nodes": 0')" "field 'nodes'"
expect nodes-fraction "$(edit '"devices_per_node": 2' '"devices_per_node": 2.5')" "field 'devices_per_node': line 1: expected a positive integer"
expect peak-missing "$(edit '"f32": 1, ' '')" "field 'peak_tflops.f32': missing"
expect peak-string "$(edit '"bf16": 2' '"bf16": "fast"')" "field 'peak_tflops.bf16': line 1: expected a number, got a string"
expect peak-negative "$(edit '"f16": 2' '"f16": -2')" "field 'peak_tflops.f16'"
expect unknown-dtype "$(edit '"f16": 2}' '"f16": 2, "fp8": 4}')" "field 'peak_tflops.fp8': unknown field"
expect memory-fraction "$(edit '"memory_bytes": 1000000000' '"memory_bytes": 1.5')" "field 'memory_bytes'"
expect bandwidth-null "$(edit '"memory_bandwidth_gbps": 10' '"memory_bandwidth_gbps": null')" "field 'memory_bandwidth_gbps'"
expect intra-missing "$(edit '"bus_bandwidth_gbps": 5, ' '')" "field 'intra_node.bus_bandwidth_gbps': missing"
expect latency-negative "$(edit '"latency_us": 2' '"latency_us": -2')" "field 'inter_node.latency_us'"
expect inter-not-object "$(edit '"inter_node": {"bandwidth_gbps": 1, "latency_us": 2}' '"inter_node": 3')" "field 'inter_node': line 4: expected an object"
expect typo "$(edit '"nodes"' '"ndoes": 1, "nodes"')" "field 'ndoes': unknown field"
expect efficiency "$(edit '"nodes"' '"compute_efficiency": 2, "nodes"')" "field 'compute_efficiency'"
expect overlap-below-1 "$(edit '"nodes"' '"overlap_slowdown": 0.9, "nodes"')" "field 'overlap_slowdown': line 1: 0.9 is out of range (expected >= 1 and <= 100)"
expect overlap-string "$(edit '"nodes"' '"overlap_slowdown": "1.1", "nodes"')" "field 'overlap_slowdown': line 1: expected a number, got a string"
expect source-unknown "$(edit '"nodes"' '"sources": {"speed": "x"}, "nodes"')" "field 'sources.speed': line 1: names no field"
expect source-number "$(edit '"nodes"' '"sources": {"nodes": 1}, "nodes"')" "field 'sources.nodes'"
expect duplicate "$(edit '"nodes": 1' '"nodes": 1, "nodes": 2')" "duplicate key"
expect multiline "$(printf '{\n"name": "t",\n"nodes": 1,\n"devices_per_node": 2,\n"peak_tflops": [1]}')" "field 'peak_tflops': line 5: expected an object"

# a missing file, a directory, an unknown preset
for spec in "$tmp/none.json" "$tmp/" "tpu-v9"; do
  "$galvc" "$model" --seq 8 --cluster "$spec" --report-cost -q > /dev/null 2> "$tmp/err"
  rc=$?
  if [ $rc -eq 0 ] || [ $rc -ge 128 ] || [ "$(wc -l < "$tmp/err")" -ne 1 ] || ! grep -qF -- "$spec" "$tmp/err"; then
    echo "FAIL --cluster $spec (rc $rc)"; cat "$tmp/err"; fails=$((fails + 1))
  else
    echo "ok   --cluster $spec: $(cat "$tmp/err")"
  fi
done

# the good file and every preset work
printf '%s' "$good" > "$tmp/good.json"
for spec in "$tmp/good.json" a100-40g a100-80g h100-sxm h200 cpu-local; do
  if ! "$galvc" "$model" --seq 8 --cluster "$spec" --report-cost -q > "$tmp/out" 2> "$tmp/err" || ! grep -q '^total: ' "$tmp/out"; then
    echo "FAIL --cluster $spec should work"; cat "$tmp/err"; fails=$((fails + 1))
  fi
done

[ $fails -eq 0 ] && echo "cluster_errors: ok" || { echo "cluster_errors: $fails failures"; exit 1; }
