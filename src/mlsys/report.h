// What `scratchplan evaluate` prints: the JSON (--json) and the readable text, shared by the CLI
// and the Python bindings.
#pragma once

#include <string>
#include <vector>

#include "core/json_reader.h"
#include "mlsys/evaluator.h"

namespace sp::mlsys {

// Sum of the solution's reported subgraph latencies.
double claimed_total(const Evaluation& ev);
// Subgraphs whose reported latency differs from the recomputed one (--check-reported).
std::vector<int> reported_mismatches(const Evaluation& ev);
Json evaluation_report_json(const Evaluation& ev, const std::string& mm_compute, bool verbose, bool check_reported);
std::string evaluation_report_text(const Evaluation& ev, bool verbose, bool check_reported);

}  // namespace sp::mlsys
