// A schedule for an MLSys 2026 problem: subgraphs in execution order, each with its
// granularity [w,h,k], the outputs it retains in fast memory, an optional traversal order of
// its tiles, and the latency its author claims.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/json_reader.h"
#include "core/result.h"
#include "mlsys/problem.h"

namespace sp::mlsys {

struct Granularity {
  int64_t w = 0;  // output tile width (columns)
  int64_t h = 0;  // output tile height (rows)
  int64_t k = 0;  // reduction step of the k-looped MatMul (ignored without one)
  bool operator==(const Granularity&) const = default;
};

struct SubgraphSpec {
  std::vector<OpId> ops;                          // in declared (execution) order
  Granularity granularity;                        // unified grid of the subgraph
  std::vector<TensorId> retain;                   // outputs kept in fast memory for the next subgraph
  std::optional<std::vector<int64_t>> traversal;  // permutation of tile indices; nullopt = raster
  double reported_latency = 0;                    // the solution's own claim
};

struct Solution {
  std::vector<SubgraphSpec> subgraphs;  // executed one after another
};

// Reads a solution; ids are checked against `problem` (out-of-range ids are bad input).
Result<Solution> solution_from_json(const Json& json, const Problem& problem, const std::string& source);
Result<Solution> read_solution(const std::string& path, const Problem& problem);
Json solution_to_json(const Solution& solution);

}  // namespace sp::mlsys
