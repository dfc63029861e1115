// Joint core-division + LX placement over buffer sets with division menus (torch-spyre's
// co-optimization captures): each buffer picks a menu entry (its per-core footprint follows) and
// may be LX-resident only when every child edge slices it compatibly (cd_parent_matches).
// Objective: HBM bytes = sum over non-resident sized buffers of size x len(uses). docs/lx.md.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/json_reader.h"
#include "core/result.h"

namespace sp::lx {

struct CdDivision {
  std::vector<std::pair<int64_t, int64_t>> output_splits;     // (stride, factor)
  std::vector<std::pair<int64_t, int64_t>> reduction_splits;  // (stride, factor)
  int64_t output_partition = 1;  // product of output factors (a stride also split as reduction does not count)
};

struct CdBuffer {
  std::string name;
  int64_t size = 0;                      // bytes; -1 = unsized (never resident)
  std::vector<int64_t> uses;             // strictly increasing op indices
  int64_t start = 0, end = 0;            // lifetime [start, end): uses widened by the overrides
  bool first_use_is_read = false;
  int group = -1;                        // atomic residency group (paired_with): lowest member index
  std::vector<int> in_place_parents;     // buffer indices
  std::string residency_reason;          // non-empty: forced to HBM
  std::vector<int> parents;              // buffer indices
  std::vector<CdDivision> divisions;     // menu; 0 = seed
  std::vector<std::pair<int, std::vector<std::pair<int, int>>>> matches;  // parent -> (parent div, this div)
};

struct CdProblem {
  std::vector<CdBuffer> buffers;
  int64_t capacity = 0;   // per-core LX bytes
  int64_t alignment = 128;
};

struct CdSolution {
  std::vector<int> division;        // per buffer
  std::vector<int64_t> address;     // per buffer, -1 = HBM
  int64_t hbm_bytes = 0;            // objective
  int64_t seed_hbm_bytes = 0;       // best plan with every buffer at division 0
  std::vector<std::string> reason;  // per buffer: why it is in HBM ("" when resident)
  int64_t lower_bound = 0;          // proven: no division choice and placement does better
  int64_t evaluations = 0;          // division assignments scored
  bool proven_optimal = false;      // hbm_bytes == lower_bound
};

// Reads the "inputs" array of a capture graph (or a synthetic graph's buffer list).
Result<CdProblem> cd_problem_from_json(const Json& buffers, const std::string& source, int64_t capacity,
                                       int64_t alignment = 128);
// Per-core footprint of buffer b under division d: ceil(size / output_partition).
int64_t cd_footprint(const CdBuffer& b, int d);
// Sum of per-core footprints under division 0 (torch-spyre's "tot").
int64_t cd_seed_footprint(const CdProblem& p);
// The objective of a (division, address) assignment (does not check validity).
int64_t cd_hbm_bytes(const CdProblem& p, const std::vector<char>& resident);
// Independent check: menu indices, residency gate, forced spills, atomic groups, alignment,
// capacity, and no overlap of co-live residents except a declared in-place child (no larger than
// its parent, starting at the parent's last tick) at its parent's exact base address: on that
// hand-off tick the parent's whole footprint stays live (torch-spyre's rule).
Status cd_check(const CdProblem& p, const std::vector<int>& division, const std::vector<int64_t>& address);
// Anytime search from the seed division; the result passed cd_check and is never worse than the seed.
Result<CdSolution> cd_solve(const CdProblem& p, double time_limit);

}  // namespace sp::lx
