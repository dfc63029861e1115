// Internal to the alloc engine (conflicts.cpp): time sections and conflict lists of a buffer
// subset (the exact search's and the dives' input). Not for other modules.
#pragma once

#include <cstdint>
#include <vector>

#include "alloc/problem.h"
#include "core/deadline.h"

namespace sp::alloc {

// Time sections of buffers `ids` (the intervals between their consecutive distinct start and end
// times) and their conflict lists; buffer k is ids[k]. Built by a sweep in start order, O(n log n)
// plus the pairs. False (c incomplete) when the deadline expires or there are more than max_pairs.
struct Conflicts {
  int sections = 0;                   // number of time sections
  std::vector<int> s0, s1;            // per buffer: the sections it covers, [s0, s1)
  std::vector<int> by_start;          // buffers by first section, then by k
  std::vector<std::vector<int>> adj;  // per buffer: the buffers live with it, in start order
};
bool build_conflicts(const Problem& p, const std::vector<int>& ids, Conflicts& c, const Deadline* dl = nullptr,
                     int64_t max_pairs = INT64_MAX);

}  // namespace sp::alloc
