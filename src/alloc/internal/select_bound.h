// Internal to the alloc engine (select_bound.cpp): the load relaxation of selection, an exact
// lower bound on the spill cost. Not for other modules.
#pragma once

#include <cstdint>
#include <vector>

#include "alloc/problem.h"

namespace sp::alloc {

// Load relaxation of selection: spill a set so that at every instant the placed load fits under
// the capacity (addresses ignored; in-place parents end at their children's start). Its optimum
// is a lower bound on the spill cost of every valid plan. Exact branch and bound with a
// Lagrangian (LP) bound, looking only for relaxed solutions cheaper than `upper`.
struct LoadRelaxation {
  Cost bound = 0;          // proven lower bound on the spill cost (<= upper)
  Cost root_bound = 0;     // Lagrangian bound at the root (forced spills included)
  bool complete = false;   // the search finished: bound is the relaxation optimum (or upper)
  bool found = false;      // complete and a relaxed solution below `upper` exists: `spill` is optimal
  std::vector<char> spill; // per buffer, 1 = spilled in the optimal relaxed solution (forced ones too)
  int64_t nodes = 0;
};
LoadRelaxation load_relaxation(const Problem& p, Cost upper, double seconds, int64_t node_limit = INT64_MAX);

}  // namespace sp::alloc
