// Internals shared by the LX planner's translation units (not a public API).
#pragma once

#include <algorithm>
#include <vector>

#include "core/deadline.h"

#include "lx/lx.h"

namespace sp::lx {

// Seconds left, never negative (a negative budget means "no limit" to Deadline).
inline double left(const Deadline& d) { return std::max(0.0, d.remaining_seconds()); }

struct PlanState {
  std::vector<PlanValue> values;  // versioned values
  std::vector<char> eligible;     // per value: may live on LX
};

// One placement of a fixed graph (no clone pruning); fast = heuristic placement only.
Result<Plan> plan_graph_once(Graph g, const Hardware& hw, const Options& o, double seconds, bool fast);
// Fills op_hbm and totals from the residency (planner-side accounting).
void account(Plan& plan);
// Graph with clone ops inserted for multi-use graph inputs; `keep` filters by input tensor.
Graph insert_clones(const Graph& g, const std::vector<char>& keep, Bytes capacity);
// Plans with clone pruning, eviction and reordering (what plan_graph does), `fast` for search.
Result<Plan> plan_graph_impl(const Graph& g, const Hardware& hw, const Options& o, double seconds, bool fast);

}  // namespace sp::lx
