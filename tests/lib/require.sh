# Sourced by the test scripts that need a tool the build does not provide
# (MPI, nvcc, torch). A missing tool is a skip, never a pass: the script
# exits 77, which tests/CMakeLists.txt declares as SKIP_RETURN_CODE, so ctest
# reports it as "Not Run" instead of counting it among the passed tests.
# Under GALV_REQUIRE_ALL=1 (scripts/test.sh, after scripts/setup.sh has
# installed every dependency) a missing tool is a failure with one line
# naming it: CI cannot go green with half the suite skipped.
#
#   require_cmd WHAT CMD...  skip the whole script unless every CMD is on PATH
#   require_torch PY         skip the whole script unless PY imports torch
#   have_cmd CMD...          0 when every CMD is on PATH; else records a
#                            skipped part (or, under GALV_REQUIRE_ALL=1, a
#                            missing dependency) and returns 1
#   galv_exit FAILED         the script's exit: 1 on failures or a required
#                            part missing, 77 when a part was skipped, else 0
GALV_TEST=$(basename "$0" .sh)
galv_skipped_parts=0 galv_missing_parts=0

galv_skip() { # WHY...: the whole script cannot run
  if [ "${GALV_REQUIRE_ALL:-0}" = 1 ]; then
    echo "FAIL $GALV_TEST: $* (GALV_REQUIRE_ALL=1: a missing dependency is a failure, not a skip)"
    exit 1
  fi
  echo "SKIP $GALV_TEST: $*"
  exit 77
}

require_cmd() { # WHAT CMD...
  local what=$1 c; shift
  for c in "$@"; do
    command -v "$c" >/dev/null || galv_skip "$c not found ($what)"
  done
}

require_torch() { # PY
  "$1" -c "import torch" 2>/dev/null || galv_skip "$1 cannot import torch (Debian python3-torch)"
}

have_cmd() { # CMD...: for a part of a script
  local c
  for c in "$@"; do
    if ! command -v "$c" >/dev/null; then
      if [ "${GALV_REQUIRE_ALL:-0}" = 1 ]; then
        echo "FAIL $GALV_TEST: $c not found: part of the test cannot run (GALV_REQUIRE_ALL=1)"
        galv_missing_parts=$((galv_missing_parts + 1))
      else
        echo "SKIP part of $GALV_TEST: $c not found"
        galv_skipped_parts=$((galv_skipped_parts + 1))
      fi
      return 1
    fi
  done
  return 0
}

galv_exit() { # FAILED: the number of failed checks
  if [ "${1:-0}" != 0 ] || [ "$galv_missing_parts" != 0 ]; then exit 1; fi
  if [ "$galv_skipped_parts" != 0 ]; then
    echo "SKIP $GALV_TEST: $galv_skipped_parts part(s) skipped (checks above that ran passed)"
    exit 77
  fi
  exit 0
}
