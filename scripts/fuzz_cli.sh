#!/bin/bash
# Longer end-to-end fuzzing of the CLI (the ctest cli_e2e_fuzz runs 300 cases with seed 1):
#   bash scripts/fuzz_cli.sh [RUNS] [SEED]     (build first: cmake --build --preset release)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5000}
seed=${2:-$RANDOM}
exec /usr/bin/python3 tests/cli/fuzz_cli.py --cli build/release/scratchplan --mlsys build/release/mlsys \
  --runs "$runs" --seed "$seed"
