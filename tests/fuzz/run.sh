#!/usr/bin/env bash
# run.sh [SECONDS] [WORKDIR] [TARGET...] — builds the readers' libFuzzer
# targets (build.sh) and fuzzes each for SECONDS (default
# $GALV_FUZZ_SECONDS, else 30): frontend (ONNX), ir (the IR text parser's
# round trip), plan (plan.json), sharding, cluster (cluster JSON), npy (.npy
# and .pb inputs), ckpt (checkpoints), weights (weights.bin), profile
# (--profile files). First each
# target runs its regression inputs (tests/fuzz/regress/TARGET/: inputs that
# once crashed or hung a reader). Findings go to WORKDIR/crashes/TARGET-*
# (default WORKDIR build-fuzz/). Exit status non-zero when any target found a
# crash, leak, timeout (10 s) or out-of-memory (2 GB). Called by
# scripts/test.sh; not part of ctest.
set -eu
SECS=${1:-${GALV_FUZZ_SECONDS:-30}}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${2:-$SRC/build-fuzz}
shift $(($# > 2 ? 2 : $#))
TARGETS=${*:-frontend ir plan sharding cluster npy ckpt weights profile}
bash "$SRC/tests/fuzz/build.sh" "$WORK"
fail=0
for t in $TARGETS; do
  reg="$SRC/tests/fuzz/regress/$t"
  # -close_fd_mask=2: the readers' one-line errors would flood the log;
  # libFuzzer keeps its own and the sanitizers' reports on a duplicate fd
  opts=(-rss_limit_mb=2048 -timeout=10 -close_fd_mask=2 -artifact_prefix="$WORK/crashes/$t-")
  if [ -d "$reg" ] && ls "$reg"/* >/dev/null 2>&1; then
    if ! "$WORK/fuzz_$t" "${opts[@]}" "$reg"/* >"$WORK/regress-$t.log" 2>&1; then
      echo "run.sh: $t: a regression input fails again:" >&2
      tail -30 "$WORK/regress-$t.log" >&2
      fail=1
      continue
    fi
  fi
  echo "run.sh: fuzzing $t for $SECS s ($(ls "$WORK/corpus/$t" | wc -l) corpus files)"
  if ! "$WORK/fuzz_$t" "$WORK/corpus/$t" "${opts[@]}" -max_total_time="$SECS" -max_len=65536 -print_final_stats=1 \
    >"$WORK/fuzz-$t.log" 2>&1; then
    echo "run.sh: $t: finding (artifact in $WORK/crashes/):" >&2
    tail -40 "$WORK/fuzz-$t.log" >&2
    fail=1
  else
    grep -E '^#[0-9]+.*DONE|stat::number_of_executed_units' "$WORK/fuzz-$t.log" | tr '\n' ' ' | sed "s/^/run.sh: $t: /;s/ *$/\n/"
  fi
done
exit $fail
