// Internal to the alloc engine (repair.cpp): region repair, the multi-start sweeps and their
// orders, time reversal and compaction by mirror. Not for other modules.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "alloc/problem.h"
#include "core/deadline.h"

namespace sp::alloc {

// Iterated repair of the regions above a target height (large instances, pack-min): improves
// `pl` (a complete plan) in place until the deadline or the lower bound; every step stays valid.
struct RepairStats {
  Size height = 0;          // final height
  int64_t rounds = 0;       // target heights tried
  int64_t repairs = 0;      // region re-placements attempted
  int64_t improvements = 0; // heights lowered
};
RepairStats repair_height(const Problem& p, Placement& pl, Size lower_bound, const Deadline& dl, uint64_t seed,
                          const std::function<void(Size)>& on_improvement = {});
// Per buffer, the largest total size live at one instant of its lifetime (MiniMalloc's T).
std::vector<Size> peak_load_over_lifetime(const Problem& p);
// Buffers in classes of `key` a factor `ratio` apart (class boundaries shifted by `offset` in
// [0, 1)), highest class first, by start time within a class: for buffers of one size, lowest
// fit in this order is interval-graph colouring (it reaches the max load). With a `pivot` tick,
// a class runs outwards from it instead: the buffers live at the pivot first, then by distance
// from it (those starting after it by start, those ending before it by end, latest first), which
// is still interval-graph colouring on either side but packs the pivot first. Those live at the
// pivot go by start, or with a `reach_ratio` r > 0 deepest first: by min(r x ticks live up to
// the pivot, ticks live from it on), largest first, so that near the pivot the buffers still
// live form the bottom of its stack on both sides (r weighs one side against the other).
// larger_first: within a class, among equal depths, larger buffers go before the start or
// distance rule (near-equal sizes: the larger copies set the lanes the smaller ones then fit).
std::vector<int> classed_order(const Problem& p, const std::vector<double>& key, double ratio, double offset,
                               std::optional<Time> pivot = std::nullopt, double reach_ratio = 0.0, bool larger_first = false);
// Whole-instance lowest-fit sweeps in lower-bound-guided orders (size x (peak load over the
// lifetime / max load)^e, in classes run outwards from a pivot near the peak) on `threads`
// workers, until the deadline or the max-load bound; odd workers sweep the time-reversed problem
// (time_reversed), and plans are compacted (compact_by_mirror) where that pays. Returns the best
// plan, `incumbent` if none is lower. on_improvement is called under a lock (one call at a time).
// two_sided: worker 0 also tries two-sided sweeps (for sparse instances, chains: see TwoSided in
// repair.cpp). rounds > 0: a budget of that many rounds, ceil(rounds / threads) per worker, the
// second half of each worker's rounds counting as the second half of the budget; then the plan
// depends only on the input, seed, threads and rounds, unless the deadline cuts the rounds short.
Placement multi_start(const Problem& p, const Placement& incumbent, const Deadline& dl, uint64_t seed,
                      const std::function<void(Size)>& on_improvement = {}, int threads = 1, bool two_sided = true,
                      int64_t rounds = 0);
// The problem run backwards in time: every lifetime [s, e) becomes [T - e, T - s), T the last
// end. Two buffers overlap in one exactly when they overlap in the other, so a plan of either is
// a plan of both, with the same height.
Problem time_reversed(const Problem& p);
// Compaction by mirror: each pass places every buffer again by lowest fit in the order of its
// offset in the plan turned upside down (height - offset - size). Every buffer placed before one
// lay above it in the plan, so each lands at or below its mirrored offset and the height does not
// grow; a pass may drop buffers into holes. Each pass runs under the height, so one that would
// rise (alignment or fixed offsets can make it) stops and is dropped. Passes alternate until two
// in a row gain nothing or the deadline; the plan of the last whole pass, no higher than `plan`.
Placement compact_by_mirror(const Problem& p, const Placement& plan, const Deadline& dl);

}  // namespace sp::alloc
