#!/usr/bin/env bash
# Counts, per commit, the ctest entries and how many of them report a pass
# without running their checks when a tool (MPI, nvcc, torch) is missing,
# read from the committed test scripts (no build, nothing run):
#   entries      unit/test_*.c + lit + tests/*.sh (tests/CMakeLists.txt's globs)
#   skip-as-pass entries whose missing-tool branch exits 0: a line that
#                says it skips followed within 3 lines by `exit 0` before
#                any `exit 77`, in the script or in a tests/lib/*.sh it sources
#   77 declared  whether tests/CMakeLists.txt sets SKIP_RETURN_CODE 77 (else
#                an exit 77 is an ordinary failure, not a skip)
#   CI strict    whether scripts/test.sh sets GALV_REQUIRE_ALL=1 (a skip in CI
#                is a failure)
#   part skips   scripts that guard a part on a tool (have_cmd or a bare
#                `command -v`) without ending through galv_exit, which
#                exits 77 when a part was skipped (else the part's absence
#                is a silent pass); the skip-as-pass scripts not counted again
#   bench/mutate.sh [NAME ...] is the dynamic side: which tests fail for
#   each decisive source mutation.
#   bench/check_count.sh [REV ...]   (default: 2568f0d HEAD)
set -euo pipefail
cd "$(dirname "$0")/.."
revs=("$@")
[ ${#revs[@]} -gt 0 ] || revs=(2568f0d HEAD)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
skip_exit0() { # FILE: prints FILE when a skip branch exits 0
  awk -v F="$1" 'tolower($0) ~ /skip/ {s = NR} /exit 77/ {s = 0}
                 /exit 0/ && s && NR - s <= 3 {print F; exit}' "$1"
}
for r in "${revs[@]}"; do
  d="$T/$(git rev-parse --short "$r")"
  mkdir -p "$d"
  git archive "$r" tests scripts | tar -x -C "$d"
  (
    cd "$d"
    units=$(ls tests/unit/test_*.c | wc -l) scripts=$(ls tests/*.sh | wc -l)
    libs=$(for f in tests/lib/*.sh; do [ -f "$f" ] && skip_exit0 "$f"; done)
    pass=()
    for f in tests/*.sh; do
      hit=$(skip_exit0 "$f")
      for l in $libs; do grep -q "$(basename "$l")" "$f" && hit=$f; done
      [ -n "$hit" ] && pass+=("$(basename "$f" .sh)")
    done
    parts=()
    for f in $(grep -l 'have_cmd\|command -v' tests/*.sh 2>/dev/null); do
      n=$(basename "$f" .sh)
      [[ " ${pass[*]} " == *" $n "* ]] || grep -q galv_exit "$f" || parts+=("$n")
    done
    grep -q 'SKIP_RETURN_CODE 77' tests/CMakeLists.txt && rc77=yes || rc77=no
    grep -q 'GALV_REQUIRE_ALL=1' scripts/test.sh && strict=yes || strict=no
    echo "$(git -C "$OLDPWD" log -1 --format='%h %ad' --date=short "$r"): entries $((units + 1 + scripts))" \
      "(unit $units, lit 1, scripts $scripts); skip-as-pass ${#pass[@]}${pass[*]:+ (${pass[*]})};" \
      "77 declared $rc77; CI strict $strict; part skips not reported ${#parts[@]}${parts[*]:+ (${parts[*]})}"
  )
done
