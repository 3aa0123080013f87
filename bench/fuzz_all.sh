#!/usr/bin/env bash
# fuzz_all.sh N [WORKDIR] [TARGET[=N]...] — runs every reader's libFuzzer
# target (tests/fuzz/build.sh builds them into WORKDIR, default
# build-fuzz/) for N executions each (-runs=N; TARGET=N overrides one
# target's count), one after another, from WORKDIR/corpus/TARGET, with
# -timeout=10 (an input running 10 s is a hang) and -rss_limit_mb=2048, and
# prints per target: executions, coverage (cov: edges, ft: features),
# findings (crash, leak, timeout = hang, oom; their files under
# WORKDIR/budget-crashes/), wall and CPU seconds. A target stops at its
# first finding (its executions then say how far it got). Logs:
# WORKDIR/budget-TARGET.log. Exit status non-zero when any target found
# something. GALV_FUZZ_MAX_SECONDS=S also stops each target after S seconds
# (-max_total_time: a budget that must end by a deadline; the executions
# column says what ran); GALV_FUZZ_BUILD=0 skips the build (another
# fuzz_all.sh on the same WORKDIR built it). Example (the issue's budget, in the background):
#   nice -n 19 bash bench/fuzz_all.sh 1000000 build-fuzz frontend=10000000 ir=10000000 \
#     plan sharding cluster npy ckpt weights profile > fuzz_all.txt 2>&1 &
set -eu
N=${1:?usage: fuzz_all.sh N [WORKDIR] [TARGET[=N]...]}
SRC=$(cd "$(dirname "$0")/.." && pwd)
WORK=${2:-$SRC/build-fuzz}
shift $(($# > 2 ? 2 : $#))
SPECS=${*:-frontend ir plan sharding cluster npy ckpt weights profile}
[ "${GALV_FUZZ_BUILD:-1}" = 0 ] || bash "$SRC/tests/fuzz/build.sh" "$WORK" >/dev/null
maxt=()
[ -z "${GALV_FUZZ_MAX_SECONDS:-}" ] || maxt=(-max_total_time="$GALV_FUZZ_MAX_SECONDS")
mkdir -p "$WORK/budget-crashes"
printf '%-9s %12s %7s %8s %7s %6s %8s %5s %9s %9s\n' target executions cov ft crashes leaks timeouts ooms wall_s cpu_s
fail=0
for spec in $SPECS; do
  t=${spec%%=*}
  n=$N
  [ "$spec" = "$t" ] || n=${spec#*=}
  pre="$WORK/budget-crashes/$t-"
  rm -f "$pre"*
  log="$WORK/budget-$t.log"
  rc=0
  /usr/bin/time -f '%e %U %S' -o "$WORK/budget-$t.time" \
    "$WORK/fuzz_$t" "$WORK/corpus/$t" -runs="$n" "${maxt[@]}" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -close_fd_mask=2 \
    -artifact_prefix="$pre" -print_final_stats=1 >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  [ -n "$execs" ] || execs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#') # killed: its last status line
  covl=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1)
  cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$covl")
  ft=$(sed -n 's/.*ft: \([0-9]*\).*/\1/p' <<<"$covl")
  count() { ls "$pre$1"-* 2>/dev/null | wc -l; }
  c=$(count crash) l=$(count leak) h=$(count timeout) o=$(count oom)
  read -r wall u s < <(tail -1 "$WORK/budget-$t.time") || true # after "Command exited with non-zero status N"
  cpu=$(awk -v u="${u:-0}" -v s="${s:-0}" 'BEGIN { printf "%.1f", u + s }')
  printf '%-9s %12s %7s %8s %7s %6s %8s %5s %9s %9s\n' "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$c" "$l" "$h" "$o" "${wall:-?}" "$cpu"
  if [ "$rc" != 0 ] || [ $((c + l + h + o)) != 0 ]; then
    fail=1
    echo "  $t: exit $rc; $(ls "$pre"* 2>/dev/null | tr '\n' ' ')(log: $log)"
  fi
done
exit $fail
