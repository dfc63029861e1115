#!/bin/bash
# Longer end-to-end fuzzing of the CLI (the ctest cli_e2e_fuzz runs 1500 cases with seed 1):
#   bash scripts/fuzz_cli.sh [RUNS] [SEED] [--scale]   (build first: cmake --build --preset release)
# --scale adds large alloc instances (20k..120k buffers) that check the time limit at scale.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5000}
seed=${2:-$RANDOM}
shift $(( $# < 2 ? $# : 2 ))
exec /usr/bin/python3 tests/cli/fuzz_cli.py --cli build/release/scratchplan --mlsys build/release/mlsys \
  --runs "$runs" --seed "$seed" "$@"
