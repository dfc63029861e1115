#!/usr/bin/env bash
# Fresh machine to green tests: install packages, build and run the whole suite, then the same
# suite under AddressSanitizer + UndefinedBehaviorSanitizer, then each fuzz target for a bounded
# time. The pytest suite of the Python package (python/tests) runs right after the release ctest.
# Set SCRATCHPLAN_QUICK=1 to run the release suites (ctest + pytest) only. The closing line
# "tests: N passed, N failed" sums ctest (release, asan) and pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
start=$(date +%s)

echo "== release build and tests"
cmake --preset release >/dev/null
cmake --build --preset release
mkdir -p build
# A failing suite does not stop the others; the script fails at the end (after the summary).
status=0
ctest --preset release 2>&1 | tee build/ctest_release.log || status=1

echo "== Python package (pytest, Debian's interpreter)"
if ! ls build/release/python/scratchplan/_core*.so >/dev/null 2>&1; then
  echo "test: the release build did not build the Python module (needs python3-dev, pybind11-dev)" >&2
  exit 1
fi
PYTHONPATH="$PWD/build/release/python" /usr/bin/python3 -m pytest python/tests -q -p no:cacheprovider 2>&1 \
  | tee build/pytest.log || status=1

# "N passed, N failed" from ctest's summary line "..., F tests failed out of T".
passed_sum=0
failed_sum=0
summary() {
  local line total failed
  line=$(grep -E "tests failed out of [0-9]+" "$1" | tail -1)
  if [ -z "$line" ]; then  # no summary line: the suite did not finish
    failed_sum=$((failed_sum + 1))
    return
  fi
  total=${line##* out of }
  failed=$(echo "$line" | sed -E 's/.* ([0-9]+) tests failed.*/\1/')
  passed_sum=$((passed_sum + total - failed))
  failed_sum=$((failed_sum + failed))
}
# pytest's closing line: "12 passed, 1 failed, 2 skipped, 1 error in 3.4s" (errors count as failed).
pytest_summary() {
  local line n
  line=$(grep -E "[0-9]+ (passed|failed|error)" "$1" | tail -1)
  if [ -z "$line" ]; then
    failed_sum=$((failed_sum + 1))
    return
  fi
  n=$(echo "$line" | grep -oE "[0-9]+ passed" | grep -oE "[0-9]+" || true)
  passed_sum=$((passed_sum + ${n:-0}))
  for k in failed error errors; do
    n=$(echo "$line" | grep -oE "[0-9]+ $k\b" | grep -oE "[0-9]+" || true)
    failed_sum=$((failed_sum + ${n:-0}))
  done
}

if [ "${SCRATCHPLAN_QUICK:-0}" = "1" ]; then
  summary build/ctest_release.log
  pytest_summary build/pytest.log
  echo "tests: $passed_sum passed, $failed_sum failed"
  exit $status
fi

echo "== AddressSanitizer + UndefinedBehaviorSanitizer build and tests"
cmake --preset asan >/dev/null
cmake --build --preset asan
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --preset asan 2>&1 | tee build/ctest_asan.log || status=1

echo "== fuzz targets (${SCRATCHPLAN_FUZZ_SECONDS:-30} s each)"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz
bash scripts/run_fuzzers.sh "${SCRATCHPLAN_FUZZ_SECONDS:-30}" || status=1

echo "== all done in $(( $(date +%s) - start )) s"
summary build/ctest_release.log
summary build/ctest_asan.log
pytest_summary build/pytest.log
echo "tests: $passed_sum passed, $failed_sum failed"
exit $status
