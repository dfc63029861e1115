// Internal to the alloc engine (exact.cpp): the exact branch-and-bound search over canonical
// solutions, pack and select. Not for other modules.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

#include "alloc/problem.h"
#include "alloc/solver.h"

namespace sp::alloc {

struct ExactResult {
  Placement placement;     // best plan found (empty offsets if none)
  bool found = false;      // a plan was found
  bool complete = false;   // search finished: pack -> infeasible if !found; best is optimal
  int64_t value = 0;       // pack-min: height; select: spill cost
  int64_t nodes = 0;
};
// Exact search. pack: every buffer within capacity (minimize: lowest height); select: min spill cost.
// `seed` varies the randomized restart orders (0: static orders first); `stop` aborts early.
// on_lower: pack-min of one part (no decomposition into parts), each lower height as it is found
// (from the searching thread), so that a long descent shows progress. `node_limit`: nodes over
// all parts and restarts, then the search stops as if out of time (a deterministic budget).
ExactResult exact_search(const Problem& p, Objective obj, bool minimize, const ExactToggles& t, double seconds,
                         const Placement* incumbent, uint64_t seed = 0, const std::atomic<bool>* stop = nullptr,
                         const std::function<void(int64_t)>& on_lower = {}, int64_t node_limit = INT64_MAX);

}  // namespace sp::alloc
