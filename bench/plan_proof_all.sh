#!/usr/bin/env bash
# bash bench/plan_proof_all.sh [BUILD]: the whole proof matrix (docs/planner.md
# "Proof matrix"): tests/plan_proof.sh with --all, i.e. the memory ladders of
# GPT-2 and Llama on 2 and 4 CPU ranks with every distinct plan kind the
# default search chooses compiled and run for 2 training steps against the
# single device, plus the pipeline kinds CI leaves out (1F1B chosen where
# ZB-H1's best plan under the limit is slower). Prints each case and the ladders; the planning
# and running take 10-30 minutes on 2 busy cores.
set -uo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$SRC/build}
GALV_SOURCE_DIR=$SRC exec bash "$SRC/tests/plan_proof.sh" "$BUILD" --all
