// Internal to the alloc engine (heuristics.cpp): the heuristic placers, the orders they use and
// plan helpers. solve() composes them; tests and benchmarks call them directly. Not for other modules.
#pragma once

#include <functional>
#include <vector>

#include "alloc/problem.h"
#include "core/deadline.h"

namespace sp::alloc {

// Heuristic placers: buffers that do not fit below `capacity` are spilled (kSpilled + reason).
// With a deadline, buffers not reached when it expires are spilled ("time limit reached"): the
// plan stays valid, and pack scores it as unfinished. greedy, firstfit and bestfit are quadratic
// in the worst case; greedy-by-size and sweep query a bucketed time index (near-linear).
Placement place_greedy(const Problem& p, Size capacity, const Deadline* dl = nullptr);
Placement place_first_fit(const Problem& p, Size capacity, bool best_fit, const Deadline* dl = nullptr);
Placement place_greedy_by_size(const Problem& p, Size capacity, const Deadline* dl = nullptr);
Placement place_sweep(const Problem& p, Size capacity, const Deadline* dl = nullptr);
// Time-ordered best fit over a free-gap list, like a malloc (O(n log n); falls back to the sweep
// with fixed offsets or in-place edges). Lower quality, but a valid answer within a second at 1M.
Placement place_online(const Problem& p, Size capacity, const Deadline* dl = nullptr);
// Placement in a given order through the time index: lowest fit, or (best_fit) the tightest gap
// below the top, else on top. The improvement phase of `auto` on large instances uses it.
// stop_at_spill: the first buffer that does not fit ends the sweep (the rest stay unplaced,
// without a reason): the multi-start's rounds end as soon as they cannot beat a height.
// two_sided (lowest fit, under a capacity below kUnbounded): a buffer whose lowest fit lies on top of every
// placed buffer live with it hangs from the capacity instead (ends at it); see TwoSided in repair.cpp.
Placement place_sweep_in_order(const Problem& p, Size capacity, const std::vector<int>& order, bool best_fit,
                               const Deadline* dl = nullptr, bool stop_at_spill = false, bool two_sided = false);
// The same with the order drawn one buffer at a time (`next` sets the next index, or returns
// false at the order's end), so that an order can be sorted as it is consumed: the multi-start's
// rounds mostly stop early (repair.cpp).
Placement place_sweep_in_order(const Problem& p, Size capacity, const std::function<bool(int&)>& next, bool best_fit,
                               const Deadline* dl = nullptr, bool stop_at_spill = false, bool two_sided = false);
// First-fit (or best-fit) placement in a given order, in-place parents' slots tried first.
Placement place_first_fit_in_order(const Problem& p, Size capacity, const std::vector<int>& order, bool best_fit,
                                   const Deadline* dl = nullptr);

// First-fit decoder in a given order (annealing).
Placement place_in_order(const Problem& p, Size capacity, const std::vector<int>& order, const Deadline* dl = nullptr);
// Number of buffers placed at one of their in-place parents' address.
int in_place_handoffs(const Problem& p, const Placement& pl);
// Spills every member of an atomic group (Buffer::group) that has a spilled member: dropping
// buffers keeps a plan valid, and makes it respect the groups.
void keep_groups_whole(const Problem& p, Placement& pl);
// torch-spyre FirstFit/BestFit order: score sort then topological sort over in-place edges.
std::vector<int> first_fit_order(const Problem& p);
// Size-descending order, longer lifetimes first, then index (greedy-by-size and sweep).
std::vector<int> by_size_order(const Problem& p);

}  // namespace sp::alloc
