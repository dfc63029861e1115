#!/usr/bin/env bash
# Fresh machine to green tests: install packages, build and run the whole suite, then the same
# suite under AddressSanitizer + UndefinedBehaviorSanitizer, then each fuzz target for a bounded
# time. Set SCRATCHPLAN_QUICK=1 to run the release suite only.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
start=$(date +%s)

echo "== release build and tests"
cmake --preset release >/dev/null
cmake --build --preset release
mkdir -p build
ctest --preset release | tee build/ctest_release.log

# "N passed, N failed" from ctest's summary line "..., F tests failed out of T".
passed_sum=0
failed_sum=0
summary() {
  local line total failed
  line=$(grep -E "tests failed out of [0-9]+" "$1" | tail -1)
  total=${line##* out of }
  failed=$(echo "$line" | sed -E 's/.* ([0-9]+) tests failed.*/\1/')
  passed_sum=$((passed_sum + total - failed))
  failed_sum=$((failed_sum + failed))
}

if [ "${SCRATCHPLAN_QUICK:-0}" = "1" ]; then
  summary build/ctest_release.log
  echo "tests: $passed_sum passed, $failed_sum failed"
  exit 0
fi

echo "== AddressSanitizer + UndefinedBehaviorSanitizer build and tests"
cmake --preset asan >/dev/null
cmake --build --preset asan
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --preset asan | tee build/ctest_asan.log

echo "== fuzz targets (${SCRATCHPLAN_FUZZ_SECONDS:-30} s each)"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz
bash scripts/run_fuzzers.sh "${SCRATCHPLAN_FUZZ_SECONDS:-30}"

echo "== all done in $(( $(date +%s) - start )) s"
summary build/ctest_release.log
summary build/ctest_asan.log
echo "tests: $passed_sum passed, $failed_sum failed"
