// Internal to the alloc engine (dive.cpp): canonical dives, the exact search's first branch
// without backtracking. Not for other modules.
#pragma once

#include <cstdint>

#include "alloc/problem.h"
#include "core/deadline.h"

namespace sp::alloc {

// Canonical dive (dive.cpp): the exact search's first branch, no backtracking, O((n + pairs) log n).
enum class DiveRule {
  kTightHoles,  // cover the hole at the lowest level: zero slack first, then the fewest candidates
  kLeastSlack,  // cover the hole at the lowest level with the least slack, then the fewest candidates
  kLowest,      // the lowest buffer, ties in the tie order (MiniMalloc's branching)
};
const char* dive_rule_name(DiveRule r);
struct DiveOptions {
  DiveRule rule = DiveRule::kTightHoles;
  bool twa_ties = false;            // ties: MiniMalloc's TWA order (else earliest start, then larger)
  Size target = 0;                  // the height the slack of a hole is measured against (the bound)
  Size give_up_above = kUnbounded;  // stop (empty plan) once the height would exceed this
  int64_t max_pairs = INT64_MAX;    // stop (empty plan) when the instance has more overlapping pairs
  bool block = true;                // a buffer that would break a bound under the target is first moved up (once)
};
// Every buffer placed (empty offsets if stopped: deadline, give_up_above, max_pairs, or fixed
// offsets / forced spills, which it does not handle). In-place hand-offs are treated as conflicts.
Placement canonical_dive(const Problem& p, const DiveOptions& o, const Deadline* dl = nullptr);
// Dives under every rule and tie order until one reaches `target` or the deadline; the lowest plan
// (empty offsets if none finished).
Placement dive_portfolio(const Problem& p, Size target, const Deadline& dl);

}  // namespace sp::alloc
