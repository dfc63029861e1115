#!/usr/bin/env bash
# Runs every built fuzz target for the given number of seconds from its seed corpus.
# A crash, leak or sanitizer report fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
status=0
for bin in build/fuzz/fuzz/fuzz_*; do
  name=$(basename "$bin"); name=${name#fuzz_}
  work=$(mktemp -d)
  cp -r "fuzz/corpus/$name/." "$work/" 2>/dev/null || true
  echo "-- fuzz_$name for ${seconds}s"
  if ! "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=0 \
       -artifact_prefix="$work/" "$work" > "$work.log" 2>&1; then
    echo "fuzz_$name FAILED"; tail -40 "$work.log"; status=1
  else
    grep -E "^#[0-9]+.*DONE" "$work.log" | tail -1 || true
  fi
  rm -rf "$work" "$work.log"
done
exit $status
