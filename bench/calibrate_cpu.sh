#!/bin/bash
# calibrate_cpu.sh [OUT.json] [RANKS] — measures this machine for the
# cpu-local cluster preset (docs/cluster.md): builds bench/calibrate_cpu.c with
# mpicc + OpenBLAS, runs it on RANKS local MPI ranks (default 2) with one BLAS
# thread each, and writes the cluster JSON (default ./cpu-local.json).
# Use it with: galvc MODEL.onnx --cluster ./cpu-local.json --report-cost
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-cpu-local.json}
ranks=${2:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mpicc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -o "$tmp/calibrate_cpu" "$here/calibrate_cpu.c" -lopenblas
case "$out" in /*) abs=$out ;; *) abs=$PWD/$out ;; esac
OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 mpirun --allow-run-as-root --oversubscribe -np "$ranks" \
  "$tmp/calibrate_cpu" "$abs"
