// Buffer allocation model: buffers with half-open lifetimes that must get non-overlapping
// addresses in a scratchpad (packing), or a subset of them must (selection at fixed capacity).
// Used by the alloc CLI verb and, as a library, by the LX planner (see docs/alloc.md).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"

namespace sp::alloc {

using Offset = int64_t;  // byte address in the scratchpad
using Size = int64_t;    // bytes
using Time = int64_t;    // op index / tick
using Cost = int64_t;    // spill cost (bytes of slow-memory traffic)

inline constexpr Offset kSpilled = -1;  // Placement::offsets value of a buffer left off chip
inline constexpr Offset kNoFixedOffset = -1;
inline constexpr Size kUnbounded = std::numeric_limits<Size>::max() / 4;  // "no capacity" for pack-min
// Bound on a problem's bytes: the sizes plus alignment padding of all buffers, and every pinned
// end (offset + size), stay <= 2^60, so no height, offset or load any solver forms can overflow
// (and stays below kUnbounded); spill costs (each and summed) stay <= 2^62.
inline constexpr Size kMaxTotalBytes = Size{1} << 60;
inline constexpr Cost kMaxTotalCost = Cost{1} << 62;
inline constexpr Time kMaxTime = Time{1} << 61;  // lifetimes lie in [-2^61, 2^61]: differences fit

struct Buffer {
  std::string id;                      // unique name
  Size size = 0;                       // bytes, >= 0
  Time start = 0;                      // first tick live (inclusive)
  Time end = 1;                        // first tick no longer live (exclusive), > start
  Size alignment = 1;                  // offset must be a multiple of this (> 0)
  Offset fixed_offset = kNoFixedOffset;  // pinned address, or kNoFixedOffset
  std::vector<int> in_place_parents;   // indices of buffers whose slot this one may take at hand-off
  int reads = 1;                       // reads served from the scratchpad if resident
  bool produced_on_chip = true;        // first use is the producing write (not a graph-input read)
  Cost spill_cost = -1;                // cost when spilled; -1 = default rule (see default_spill_cost)
  std::string residency_reason;        // non-empty: must be spilled (forced exclusion), with this reason
  int group = -1;                      // atomic residency group (torch-spyre's paired_with), or -1:
                                       // all members placed or all spilled
};

struct Problem {
  std::vector<Buffer> buffers;  // indices are buffer handles everywhere
  Size capacity = kUnbounded;   // addresses must lie in [0, capacity)
};

// Result of a solver: an offset per buffer (kSpilled if not resident).
struct Placement {
  std::vector<Offset> offsets;             // one per buffer
  std::vector<std::string> spill_reasons;  // one per buffer; empty when placed
};

// torch-spyre's rule: (reads served + [produced on chip]) x size; an explicit spill_cost wins.
Cost default_spill_cost(const Buffer& b);
inline Cost spill_cost(const Buffer& b) { return b.spill_cost >= 0 ? b.spill_cost : default_spill_cost(b); }

// Builds a buffer from torch-spyre uses (strictly increasing op indices). start = min(uses[0],
// start_override), end = max(uses.back()+1, end_override) (each override only widens the
// lifetime; one that would narrow it is an error, as torch-spyre asserts); reads = len(uses) -
// [!first_use_is_read]. Fails on empty/non-increasing uses.
inline constexpr Time kNoOverride = std::numeric_limits<Time>::min();
Result<Buffer> buffer_from_uses(std::string id, Size size, const std::vector<Time>& uses, bool first_use_is_read,
                                Time end_override = kNoOverride, Time start_override = kNoOverride);

// torch-spyre's in-place edge rules in the order it checks them (_check_in_place_relationships):
// the parent ends at child.start+1, a computed parent is read after its write, the child is no
// larger. Empty when the edge is legal, else the reason in torch-spyre's words.
std::string in_place_edge_error(const std::string& child, const std::string& parent, Time parent_end, Time child_start,
                                bool parent_read_after_write, Size child_size, Size parent_size);

// Groups: members of a group with a forced spill get a residency reason naming it (so that the
// solvers see the whole group forced off chip). Returns whether it gave any buffer a reason.
bool has_groups(const Problem& p);
bool add_group_reasons(Problem& p);
// Atomic groups from paired_with pairs over n buffers: the connected components of the pairing
// relation, each named by its lowest member; -1 for a buffer paired with none.
std::vector<int> group_ids(int n, const std::vector<std::pair<int, int>>& pairs);

// Structural checks (the kMaxTotalBytes / kMaxTotalCost bounds, sizes, lifetimes, alignment > 0, parents exist, no parent cycles, fixed
// offsets aligned and not colliding) plus torch-spyre's in-place rules (parent.end == child.start+1,
// parent read after write or first use a read, child.size <= parent.size). One-line bad_input errors.
Status check_problem(const Problem& p);

// True when some buffer declares an in-place parent.
bool has_in_place(const Problem& p);
// The hand-off relaxations: every plan valid for `p` is valid for each at the same cost, so their
// bounds bound `p`; in-place edges are dropped. At a hand-off tick the parent's whole footprint
// stays live and a child at its base lies inside it. kChildLate: each child with declared parents
// starts one tick later (exact when the parent is kept; loose when it is spilled, since the child
// then still holds its bytes at that tick). kParentEarly: each parent with children ends one tick
// earlier (exact when the parent is spilled; loose when it is kept and larger than its child).
// A buffer left without a tick keeps no footprint but its spill cost. docs/alloc.md.
enum class Handoff { kChildLate, kParentEarly };
Problem handoff_relaxation(const Problem& p, Handoff which = Handoff::kChildLate);

// The hand-off restriction: each chain of hand-offs (a matching: one child per parent, one parent
// per child, in buffer order) becomes one buffer over the chain's lifetime, as large as its
// largest member, costing their summed spill costs. A plan of it, expanded (`merged_of[i]` is
// buffer i's buffer there), puts every chain at one base: legal hand-offs, kept or spilled
// whole. So it gives plans for `p` (not bounds), which an exact search without hand-offs then
// finds. Forced, pinned and grouped buffers, and edges between two alignments, are not merged.
Problem handoff_restriction(const Problem& p, std::vector<int>& merged_of);

// Max-load lower bound: the largest total size live at one instant (alignment ignored), and at
// least every pinned buffer's end (fixed_offset + size). With
// in-place edges, take it on handoff_relaxation(p): a hand-off pair counts the parent once.
Size max_load(const Problem& p);
// Selection lower bound: forced spills plus, per instant, the cheapest fractional removal of the excess load.
Cost selection_lower_bound(const Problem& p);
// True when a and b are live at a common tick.
inline bool lifetimes_overlap(const Buffer& a, const Buffer& b) { return a.start < b.end && b.start < a.end; }
// Highest offset+size over placed buffers (0 if none).
Size height(const Problem& p, const Placement& pl);
// Every buffer placed, except those forced off chip (residency_reason): a complete pack plan.
bool all_placed(const Problem& p, const Placement& pl);
// Sum of spill costs of spilled buffers.
Cost spilled_cost(const Problem& p, const Placement& pl);
// Rounds x up to a multiple of a (a > 0).
inline Offset align_up(Offset x, Size a) { return a <= 1 ? x : (x + a - 1) / a * a; }

}  // namespace sp::alloc
