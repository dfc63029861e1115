// The independent checker of NKI kernels with explicit allocation: evaluates every tensor's
// allocation to one (start_partition, byte_addr) per logical block, checks the static rules
// (ranges, alignment, ISA start partitions, PSUM banks, mixing, HBM roles), then simulates the
// loop nest exactly in program order, tracking which logical tile each physical tile holds, so
// every lifetime conflict and every clobbering overlap between tensors is found.
// Shares no logic with the planner (plan.h): it is what validates the planner's output.
#pragma once

#include <string>
#include <vector>

#include "core/violations.h"
#include "nki/kernel.h"

namespace sp::nki {

struct TilePlacement {
  Partition start_partition = 0;  // first partition of the physical tile
  Bytes byte_addr = 0;            // byte offset inside each partition (PSUM: bank * bank_bytes + offset)
};

// One placement per logical block (row-major) for a directly allocated SBUF/PSUM tensor;
// empty for automatic allocation and HBM tensors.
std::vector<TilePlacement> evaluate_allocation(const Kernel& k, const Tensor& t);

enum class ViolationKind {
  kAddressRange,      // byte range outside the usable SBUF/PSUM of a partition
  kMisaligned,        // SBUF byte_addr not a multiple of sbuf_min_align
  kStartPartition,    // ISA start-partition rule (pdim <= 32: 0/32/64/96, <= 64: 0/64, else 0)
  kPartitionRange,    // start_partition + pdim beyond the last partition
  kPsumBankCrossing,  // a PSUM tile that crosses a bank boundary (or is larger than a bank)
  kPsumBase,          // PSUM mod_alloc with non-zero base_addr or base_partition
  kMixedAllocation,   // automatic allocation in a kernel that uses direct allocation
  kHbmNotOutput,      // internal HBM tensor in a kernel that uses direct allocation
  kReadBeforeWrite,   // a logical tile read before anything wrote it
  kLifetimeConflict,  // a physical tile overwritten by another logical tile of the same tensor while a read was pending
  kOverlap,           // another tensor's tile overwrote this live tile (their addresses overlap)
};
const char* violation_kind_name(ViolationKind k);

// What a violation states beyond its kind, the tensors involved and its message.
struct ViolationDetail {
  std::vector<int64_t> block;      // logical block index (empty: the whole tensor)
  std::string instruction;         // instruction involved (the pending read for lifetime kinds); "" if never accessed
  std::string iteration;           // its loop iteration, "{i=2}"
  int64_t occurrences = 1;         // dynamic executions that hit the same (kind, tensor, block, instruction)
  std::vector<int64_t> by_block;   // lifetime/overlap: the destroying tensor's block
  std::string by_instruction;      // the destroying write's instruction
  std::string by_iteration;        // and its loop iteration
  std::string tensor_source;       // "file:line" of the tensor's declaration ("" when not traced)
  std::string instruction_source;  // "file:line" of the instruction (the pending reader)
  std::string by_source;           // "file:line" of the destroying writer
};

// The checkers' common shape (core/violations.h). `involved`: the tensor concerned, then, for
// lifetime_conflict and overlap, the tensor whose write destroyed the tile (the same one for a
// lifetime conflict). The message is one line with all of it and the cause.
using Violation = sp::Violation<ViolationKind, ViolationDetail>;
inline const std::string& violated_tensor(const Violation& v) { return v.involved.front(); }
inline const std::string& destroying_tensor(const Violation& v) {
  static const std::string none;
  return v.involved.size() > 1 ? v.involved[1] : none;
}

struct CheckOptions {
  std::size_t max_violations = 10000;  // violations kept (counting continues)
};

struct CheckReport : sp::CheckResult<ViolationKind, ViolationDetail> {  // violations in order of discovery
  int64_t distinct_violations = 0;                   // including those beyond max_violations
  int64_t executions = 0;                            // instruction executions simulated
  std::vector<std::vector<TilePlacement>> placements;  // per tensor, as evaluated
  bool clean() const { return distinct_violations == 0; }
};

// Bad input only for problems the reader cannot see (too many overlapping tiles to check).
Result<CheckReport> check_kernel(const Kernel& k, const CheckOptions& opt = {});

}  // namespace sp::nki
