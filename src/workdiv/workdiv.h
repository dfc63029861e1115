// Multi-core work division (torch-spyre's two passes, seed 001): each op's iteration variables
// get slice counts whose product is the number of cores. Stick variables are counted in sticks
// (largest elements-per-stick among the tensors sticked on them) so cores get whole sticks.
// Pass 1 (span reduction) commits the minimum splits that bring every tensor's per-core span
// under 256 MiB; pass 2 (work distribution) spreads the remaining cores over output variables by
// decreasing size, then at most one reduction variable. Also the candidate menu of alternative
// valid splits per op, for the LX co-optimizer. docs/workdiv.md documents the rules.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "layout/layout.h"
#include "program/program.h"

namespace sp::workdiv {

using layout::Bytes;
using layout::Dim;
using Split = int64_t;  // slice count of one iteration variable

inline constexpr Bytes kMaxSpanBytes = Bytes{256} << 20;
inline constexpr int kMaxCores = 32;

// Technique toggles and limits.
struct Options {
  int max_cores = kMaxCores;         // SENCORES: 1..32
  Bytes span_limit = kMaxSpanBytes;  // per-core addressable device span
  bool span_reduction = true;        // pass 1 (mandatory in torch-spyre; off only for experiments)
  bool work_distribution = true;     // pass 2 (off: keep the pass 1 floors only)
  bool candidates = true;            // build the per-op candidate menu
  std::size_t max_candidates = 512;  // menu cap per op (enumeration order is deterministic)
};

// One tensor as work division sees it: device dims and the variable that slices each one.
struct SpanTensor {
  program::TensorId tensor = -1;  // program tensor, or -1 for synthetic cases
  std::vector<Dim> device_size;   // the tensor's device layout
  std::vector<int> var_of_dim;    // per device dim: sliced iteration var, or -1
  std::vector<Bytes> inner_bytes; // per device dim: bytes of one step along it (prod of inner dims)
  int stick_var = -1;             // var indexing the stick dim, or -1 (sparse / broadcast)
  int elems_per_stick = 0;        // of this tensor's dtype
};

// The split problem of one op, independent of programs (the level of torch-spyre's
// multi_dim_iteration_space_split / WorkDivisionContext).
struct SplitSpace {
  std::vector<std::string> names;           // variable names, for messages
  std::vector<Dim> sizes;                   // stick-adjusted extents
  std::vector<char> reduction;              // reduction variable?
  std::vector<char> blocked;                // may not be split (only 1 is legal)
  std::vector<std::vector<Split>> allowed;  // legal domain per var; empty = any divisor
  std::vector<Split> min_splits;            // committed floors (1 = none)
  std::vector<SpanTensor> tensors;          // for the span limit; empty = no span check
  Bytes span_limit = kMaxSpanBytes;         // per-core span limit
};

// Builds a SpanTensor from a layout and the iteration variable of each host dim (-1 = constant).
SpanTensor span_tensor(const layout::Layout& l, const std::vector<int>& var_of_host_dim, program::TensorId id = -1);
// Same, with the layout's decomposition already computed (layout::decompose).
SpanTensor span_tensor(const layout::Layout& l, const layout::HostDimLevels& dec, const std::vector<int>& var_of_host_dim,
                       program::TensorId id);
// Per-core span in bytes: extent of the outermost device dim with per-core extent > 1, times
// the bytes of one step along it. Sets *dim to that device dim when non-null.
Bytes per_core_span(const SpanTensor& t, const std::vector<Split>& splits, int* dim = nullptr);

// Largest divisor of `size` that is <= max_cores (legacy core_split).
Split core_split(Dim size, int64_t max_cores);
// Legal slice counts of var v, ascending: divisors of the adjusted size, <= max_cores, in the
// allowed domain; {1} when blocked.
std::vector<Split> legal_domain(const SplitSpace& s, int v, int max_cores);

// Pass 2 core (multi_dim_iteration_space_split): floors first, then the largest legal factor per
// output var in priority order within the core budget, then the single most splittable
// reduction var among `reduction_vars`. Errors: two split reduction vars, an empty domain.
Result<std::vector<Split>> distribute(const SplitSpace& s, const std::vector<int>& output_priority,
                                      const std::vector<int>& reduction_vars, int max_cores);
// Pass 1 (must_split_vars): minimum floors bringing every tensor within the span limit.
Result<std::vector<Split>> span_floors(const SplitSpace& s, int max_cores);

// Legal as a committed division: domains, floors, at most one split reduction var.
bool committed_legal(const SplitSpace& s, const std::vector<Split>& splits);
// Legal as a proposal: committed_legal, within the core budget and the span limit.
bool proposed_legal(const SplitSpace& s, const std::vector<Split>& splits, int max_cores);
// The candidate menu: the cross product of legal domains (first var outermost) that is
// proposed-legal, where a split reduction var is only combined with unsplit output vars.
std::vector<std::vector<Split>> enumerate_candidates(const SplitSpace& s, int max_cores, std::size_t cap);

// A menu stored flat, one row of `width` splits per candidate: menus are built for every op and
// one small vector per candidate dominated the cost (allocation) at 10,000 ops.
struct Menu {
  std::size_t width = 0;    // splits per candidate (the op's number of vars)
  std::vector<Split> flat;  // candidates, row-major
  std::size_t size() const { return width ? flat.size() / width : 0; }
  bool empty() const { return size() == 0; }
  std::vector<Split> operator[](std::size_t i) const {
    return {flat.begin() + static_cast<std::ptrdiff_t>(i * width), flat.begin() + static_cast<std::ptrdiff_t>((i + 1) * width)};
  }
};
// Appends the enumeration to `menu` (same order and rules), skipping a row equal to `skip`.
void enumerate_into(const SplitSpace& s, int max_cores, std::size_t cap, const std::vector<Split>& skip, Menu& menu);

// How the affine sums of an op's maps may be divided (docs/workdiv.md, "Affine sums").
struct SumSplits {
  std::vector<std::vector<int>> var_of_host;  // per operand, per host dim: the var slicing it (plain or outer var), else < 0
  std::vector<char> blocked;                  // per var: in a sum it does not slice exactly: never split
};
SumSplits sum_splits(const program::Program& p, program::OpId o, const std::vector<layout::Layout>& layouts);

struct VarInfo {
  std::string name;         // d<i>
  Dim size = 0;             // iteration extent in elements
  Dim adjusted = 0;         // in sticks for stick vars, else = size
  int elems_per_stick = 0;  // largest eps among tensors sticked on it; 0 if not a stick var
  bool reduction = false;   // reduction iterator
  bool blocked = false;     // never split: a reduction stick var with a partial stick, or summed
  bool summed = false;      // appears in an affine-sum result of some operand (docs/workdiv.md)
};

struct TensorSpanInfo {
  program::TensorId tensor = -1;  // operand
  Bytes span = 0;                 // per-core span under the final splits
  int device_dim = -1;            // device dim that determines it
};

struct OpDivision {
  program::OpId op = -1;
  bool divided = false;                        // false: opaque op, runs as one unit
  std::vector<VarInfo> vars;                   // iteration variables
  std::vector<Split> floors;                   // pass 1 minimum splits
  std::vector<Split> splits;                   // final splits (pass 2)
  int64_t cores = 1;                           // product of splits
  std::vector<TensorSpanInfo> spans;           // per operand tensor
  Menu candidates;                             // menu; index 0 is `splits`
};

struct Division {
  int max_cores = kMaxCores;
  std::vector<OpDivision> ops;  // one per program op
};

// Product of the splits of non-reduction vars: how many parts the op's output is cut into (a
// buffer's per-core footprint is ceil(bytes / output_partition); reduction splits do not shrink it).
int64_t output_partition(const OpDivision& od, const std::vector<Split>& splits);

// The split space of one op (vars, stick adjustment, blocked vars, operand spans).
// `decs` (optional) caches layout::decompose of every tensor.
Result<SplitSpace> op_space(const program::Program& p, program::OpId o, const std::vector<layout::Layout>& layouts,
                            const Options& opt, std::vector<VarInfo>* vars,
                            const std::vector<layout::HostDimLevels>* decs = nullptr);
// Both passes over every op; the result passed check_division.
Result<Division> divide(const program::Program& p, const Options& opt);
// Independent checker: splits divide the adjusted extents, <= max_cores, one reduction split at
// most, every operand's per-core device address range within the span limit.
Status check_division(const program::Program& p, const std::vector<layout::Layout>& layouts, const Division& d,
                      const Options& opt);

// HBM bytes of a (batched) matmul as the cost-model planner counts them:
// (B*M*K + K*N [* B if weights are per batch]) * operand_bytes + B*M*N * output_bytes.
Bytes matmul_hbm_bytes(Dim b, Dim m, Dim n, Dim k, int operand_bytes, int output_bytes, bool shared_weight);

}  // namespace sp::workdiv
