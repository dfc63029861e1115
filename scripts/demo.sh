#!/usr/bin/env bash
# Fresh machine to first result: install packages, build, and run the main jobs on bundled
# examples: plan the scratchpad of a tensor program (layouts, work division, LX placement),
# convert a torchvision model with the PyTorch front end and pipe it into the planner,
# then schedule an MLSys 2026 problem and check the schedule with the independent evaluator.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake --preset release >/dev/null
# scratchplan_core: the Python package (extension + sources) in build/release/python.
cmake --build --preset release --target scratchplan scratchplan_core
out=build/demo
mkdir -p "$out"
run() { echo; echo "\$ $*"; "$@"; }
run ./build/release/scratchplan plan examples/programs/softmax_lastdim.json --cores 32 -o "$out/softmax_plan.json" --report
# A torchvision model (weights=None: nothing downloaded) traced on meta tensors, converted to a
# program on stdout (-o -) and planned from stdin (plan -).
export PYTHONPATH="$PWD/build/release/python${PYTHONPATH:+:$PYTHONPATH}"
echo
echo "\$ python3 -m scratchplan.torch torchvision.models:resnet18 --input 1,3,224,224 -o - \\"
echo "    | ./build/release/scratchplan plan - --cores 32 -o $out/resnet18_plan.json --report"
/usr/bin/python3 -m scratchplan.torch torchvision.models:resnet18 --input 1,3,224,224 -o - \
    | ./build/release/scratchplan plan - --cores 32 -o "$out/resnet18_plan.json" --report
run ./build/release/scratchplan schedule examples/mlsys/mlp_block.json -o "$out/mlp_block_schedule.json" \
    --time-limit 2 --verbose
run ./build/release/scratchplan evaluate examples/mlsys/mlp_block.json "$out/mlp_block_schedule.json" --check-reported
