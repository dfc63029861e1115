#!/usr/bin/env bash
# Fresh machine to first result: install packages, build, and run the main job on a bundled
# example (evaluate an MLSys 2026 schedule of the bundled MLP block).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target scratchplan
echo
echo "== scratchplan evaluate examples/mlsys/mlp_block.json examples/mlsys/mlp_block_solution.json --verbose"
./build/release/scratchplan evaluate examples/mlsys/mlp_block.json examples/mlsys/mlp_block_solution.json --verbose
echo
echo "== scratchplan plan examples/programs/softmax_lastdim.json --cores 32 -o build/plan.json --report"
./build/release/scratchplan plan examples/programs/softmax_lastdim.json --cores 32 -o build/plan.json --report
