// Independent checker for allocation plans: shares no logic with the solvers. Every result the
// library returns or the CLI writes goes through validate() first.
#pragma once

#include <string>
#include <vector>

#include "alloc/problem.h"
#include "core/violations.h"

namespace sp::alloc {

enum class ViolationKind {
  kWrongLength,      // offsets vector does not have one entry per buffer
  kNegativeOffset,   // offset < 0 (other than kSpilled)
  kMisaligned,       // offset not a multiple of the buffer's alignment
  kOverCapacity,     // offset + size > capacity
  kFixedMoved,       // buffer with a fixed offset placed elsewhere or spilled
  kForcedPlaced,     // buffer with a residency reason was placed
  kOverlap,          // two co-live buffers share addresses (and are not a legal in-place hand-off)
  kBadInPlace,       // same-address hand-off that is not declared, or a parent slot taken twice
  kSpillRequired,    // pack objective: a buffer was spilled
  kGroupSplit,       // an atomic group (paired_with) has members placed and members spilled
};

const char* violation_name(ViolationKind v);

// Which buffers a violation involves, by index (its `involved` names them).
struct ViolationBuffers {
  int buffer = -1;  // first buffer involved
  int other = -1;   // second buffer involved (overlaps, split groups, a slot taken twice), or -1
};
// The core checker shape (core/violations.h): violations = empty when valid (capped at a few dozen).
using ValidationIssue = sp::Violation<ViolationKind, ViolationBuffers>;
using ValidationReport = sp::CheckResult<ViolationKind, ViolationBuffers>;

// Checks `pl` against `p`: alignment, capacity, fixed offsets, forced spills, and that no two
// co-live placed buffers overlap in address space, except an in-place child at its declared
// parent's exact base address during the single hand-off tick (at most one child per parent).
// On that tick the parent's whole footprint is live: no other buffer (a sibling child included)
// may use any of its bytes, also those above the child's size (torch-spyre's rule).
// With require_all_placed, any spilled buffer is a violation (the pack objective). `capacity`
// >= 0 replaces p.capacity (pack plans are judged without a ceiling, then on their height).
// Overflow-safe for any offsets and sizes: an end past INT64_MAX is over capacity, and the
// overlap test never adds two untrusted values.
ValidationReport validate(const Problem& p, const Placement& pl, bool require_all_placed = false, Size capacity = -1);

}  // namespace sp::alloc
