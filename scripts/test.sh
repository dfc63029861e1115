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
ctest --preset release

if [ "${SCRATCHPLAN_QUICK:-0}" = "1" ]; then exit 0; fi

echo "== AddressSanitizer + UndefinedBehaviorSanitizer build and tests"
cmake --preset asan >/dev/null
cmake --build --preset asan
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --preset asan

echo "== fuzz targets (${SCRATCHPLAN_FUZZ_SECONDS:-30} s each)"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz
bash scripts/run_fuzzers.sh "${SCRATCHPLAN_FUZZ_SECONDS:-30}"

echo "== all done in $(( $(date +%s) - start )) s"
