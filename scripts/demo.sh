#!/usr/bin/env bash
# Fresh machine to first result: install packages, build, and run the main jobs on bundled
# examples: plan the scratchpad of a tensor program (layouts, work division, LX placement),
# then schedule an MLSys 2026 problem and check the schedule with the independent evaluator.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target scratchplan
out=build/demo
mkdir -p "$out"
run() { echo; echo "\$ $*"; "$@"; }
run ./build/release/scratchplan plan examples/programs/softmax_lastdim.json --cores 32 -o "$out/softmax_plan.json" --report
run ./build/release/scratchplan schedule examples/mlsys/mlp_block.json -o "$out/mlp_block_schedule.json" \
    --time-limit 2 --verbose
run ./build/release/scratchplan evaluate examples/mlsys/mlp_block.json "$out/mlp_block_schedule.json" --check-reported
