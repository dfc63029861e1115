// `--trace` of `schedule` and `evaluate`: a schedule as a Chrome trace (core/trace.h). Subgraphs
// run one after another on a time axis in the contest's latency unit; each subgraph's latency is
// the sum over its steps of max(compute, transfer), so its compute and memory slices (the sums of
// the two over the steps) each fit inside it and overlap where the evaluator hides one under the
// other. The working-set counter shows each subgraph's peak against the fast memory capacity.
#pragma once

#include <string>

#include "mlsys/evaluator.h"
#include "mlsys/problem.h"
#include "mlsys/solution.h"

namespace sp::mlsys {

// `verb` ("schedule" or "evaluate") names the process; `ev` is evaluate(problem, solution).
std::string solution_trace(const Problem& problem, const Solution& solution, const Evaluation& ev,
                           const std::string& verb);

}  // namespace sp::mlsys
