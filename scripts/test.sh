#!/usr/bin/env bash
# The test command: installs what is needed, builds galvc with AddressSanitizer
# and UndefinedBehaviorSanitizer, runs every test (ctest: C unit tests, lit +
# FileCheck pass tests, model import and bad-input tests), then fuzzes every
# reader (tests/fuzz/run.sh: ONNX, IR text, plan.json, sharding file, cluster
# JSON, .npy/.pb, checkpoint, weights.bin) for $GALV_FUZZ_SECONDS (default
# 30) seconds each.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

bash scripts/setup.sh

BUILD=${GALV_TEST_BUILD:-build-test}
echo "== configure + build ($BUILD, ASan+UBSan, -Werror)"
cmake -S . -B "$BUILD" -DGALV_SANITIZE=ON -DGALV_WERROR=ON -DCMAKE_BUILD_TYPE=Debug >"$BUILD.cmake.log" 2>&1 ||
  { cat "$BUILD.cmake.log"; exit 1; }
grep -E '✓|✗' "$BUILD.cmake.log" || true
cmake --build "$BUILD" -j2

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=suppressions=$ROOT/scripts/lsan.supp:print_suppressions=0

# setup.sh installed every dependency (and the machine has the CUDA
# toolkit): a test that would skip for a missing tool fails instead
# (tests/lib/require.sh).
export GALV_REQUIRE_ALL=1

echo "== ctest"
(cd "$BUILD" && ctest --output-on-failure -j2)
# the emitted programs' builds went through ccache (tests/CMakeLists.txt; cache in $BUILD/ccache)
if command -v ccache >/dev/null && [ -d "$BUILD/ccache" ]; then
  echo "== ccache ($BUILD/ccache): $(CCACHE_DIR=$BUILD/ccache ccache -s | grep -E '^ *(Hits|Misses):' | tr -s ' ' | paste -sd, -)"
fi

if [ -f tests/fuzz/run.sh ]; then
  echo "== fuzz every reader for ${GALV_FUZZ_SECONDS:-30} s each"
  bash tests/fuzz/run.sh "${GALV_FUZZ_SECONDS:-30}"
fi
echo "== all tests passed"
