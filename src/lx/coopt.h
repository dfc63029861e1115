// Joint core-division + LX placement over buffer sets with division menus (torch-spyre's
// co-optimization captures): each buffer picks a menu entry (its per-core footprint follows) and
// may be LX-resident only when every child edge slices it compatibly (cd_parent_matches).
// Objective: HBM bytes = sum over non-resident sized buffers of size x len(uses). docs/lx.md.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "alloc/problem.h"
#include "alloc/solver.h"
#include "core/json_reader.h"
#include "core/result.h"

namespace sp::lx {

struct CdDivision {
  std::vector<std::pair<int64_t, int64_t>> output_splits;     // (stride, factor)
  std::vector<std::pair<int64_t, int64_t>> reduction_splits;  // (stride, factor)
  int64_t output_partition = 1;  // product of output factors (a stride also split as reduction does not count)
  int64_t cores = 1;             // cores_used: product of all factors (output and reduction, each key once)
  int64_t split_sq = 0;          // balance term: sum over all split entries of factor^2 (an explicit 1 adds 1)
  std::vector<int64_t> tile_levels;  // coarse tiling: trip count per level, outermost first (empty = untiled)
  int64_t output_tile_count = 1;     // product of the non-reduction tile counts (divides the footprint)
  int64_t tile_count = 1;            // product of all tile counts
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
  int boundary = -1;                     // torch-spyre BufferType: 0 Intermediate, 1 Input, 2 Output; -1 = none given
  bool plain = false;                    // placement-only buffer (no candidates): no gate, no ladder terms
  bool relayout_copy = false;            // a RelayoutCopyBuffer (LX destination of one relayout group)
  int relayout_source = -1;              // copy: the buffer it relayouts (its relayout_parent)
  struct RelayoutOption {
    int source_division;                 // the source's division this price holds for
    int consumer;                        // buffer index of a consumer the copy can serve
    int consumer_division;               // the consumer's division it serves
  };
  std::vector<RelayoutOption> relayout_options;  // copy: its priced candidates
};

// A consumer reading a parent through a resident relayout copy.
struct CdServed {
  int consumer, parent, copy;  // buffer indices
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
Result<CdProblem> division_problem_from_json(const Json& buffers, const std::string& source, int64_t capacity,
                                       int64_t alignment = 128);
// Per-core footprint of buffer b under division d: ceil(size / output_partition).
int64_t per_core_footprint(const CdBuffer& b, int d);
// Atomic groups go to HBM whole: a member without a reason of its own, in a group with a member
// that has one, gets "paired with X, which stays in HBM" (`why`: one reason per buffer, "" = eligible).
void send_groups_to_hbm_whole(const CdProblem& p, std::vector<std::string>& why);
// The eligible buffers in `ap` (`back[k]`: ap buffer k's cd buffer; `idx[b]`: cd buffer b's index
// in ap, or -1) get their atomic groups and the in-place edges torch-spyre allows (parent ends at
// the child's start + 1, child no larger, parent read after its write).
void link_groups_and_in_place_edges(const CdProblem& p, const std::vector<int>& idx, const std::vector<int>& back,
                           alloc::Problem& ap);
// Places the eligible buffers `ap` (a selection at ap.capacity) through the alloc engine, which
// validates every plan: fast = best-of-fits run to the end (the local searches score many
// assignments), else the auto portfolio within `seconds`.
Result<alloc::SolveResult> place_on_lx(const alloc::Problem& ap, bool fast, double seconds);
// Sum of per-core footprints under division 0 (torch-spyre's "tot").
int64_t seed_footprint_total(const CdProblem& p);
// The objective of a (division, address) assignment (does not check validity).
int64_t hbm_bytes_of(const CdProblem& p, const std::vector<char>& resident);
// Independent check: menu indices, residency gate, forced spills, atomic groups, alignment,
// capacity, and no overlap of co-live residents except a declared in-place child (no larger than
// its parent, starting at the parent's last tick) at its parent's exact base address: on that
// hand-off tick the parent's whole footprint stays live (torch-spyre's rule).
// With `served`, a resident relayout copy is legal when its source is resident under a priced
// division and it serves at least one consumer through a listed option; a served edge relaxes the
// source's gate; a consumer reads each parent through at most one copy. Without it, copies stay out.
Status check_division_plan(const CdProblem& p, const std::vector<int>& division, const std::vector<int64_t>& address,
                const std::vector<CdServed>& served = {});
// Anytime search from the seed division; the result passed check_division_plan and is never worse than the seed.
Result<CdSolution> solve_divisions(const CdProblem& p, double time_limit);

// ---- torch-spyre's September joint contract (docs/lx.md, "The September contract") ----

// A cost expression over the solver's symbols (torch-spyre's sympy objective, lowered by the
// Python front end into this tree). Evaluated exactly, in doubles.
struct CdExpr {
  enum class Op {
    kConst, kIsLx, kSplit, kDivision,         // leaves: value / buffer's residency, split factor of `key`, index
    kAdd, kMul, kPow, kMin, kMax, kAbs,       // arithmetic
    kLog, kExp, kFloor, kCeil,                // natural log, exp, floor, ceiling
    kDelta, kCharge, kPiecewise,              // KroneckerDelta(a, b); RelayoutCharge(is_lx, div, p0..pn); (v, cond)...
    kLt, kLe, kGt, kGe, kEq, kNe, kAnd, kOr, kNot,  // relations and logic (1 or 0)
  };
  Op op = Op::kConst;
  double value = 0;           // kConst
  int buffer = -1;            // kIsLx, kSplit, kDivision
  int64_t key = 0;            // kSplit: the split key's id
  std::vector<CdExpr> args;   // operands (kPiecewise: value, condition, value, condition, ...)
};
// Reads the JSON form: a number, or [op, args...] with op one of "const", "is_lx" <buffer index>,
// "split" <buffer index> <key>, "division" <buffer index>, "add", "mul", "pow", "min", "max",
// "abs", "log", "exp", "floor", "ceiling", "delta", "charge", "piecewise", "lt", "le", "gt",
// "ge", "eq", "ne", "and", "or", "not".
Result<CdExpr> cost_expr_from_json(const Json& j, const std::string& source, int buffers);

struct LadderOptions {
  double time_limit = 30;          // seconds (0 = no limit; the search is then bounded by its size caps)
  const CdExpr* cost = nullptr;    // minimize this alone (no ladder) when given
  bool disjoint_groups = false;    // members of a paired_with group never share bytes (relayout source/destinations)
  bool exact = true;               // enumerate every choice while small; false: the local search used beyond
};

struct LadderSolution {
  std::vector<int> division;        // per buffer: chosen candidate index
  std::vector<int64_t> address;     // per buffer: bytes, -1 = HBM
  std::vector<std::string> reason;  // per buffer: why in HBM ("" when resident)
  int64_t residency_cost = 0;       // stage 1: sum of spill_cost of spilled buffers (alignment units)
  int64_t cuts = 0;                 // stage 2: loop-group cuts
  int64_t cores = 0;                // stage 3: sum of cores_used (maximized)
  int64_t split_sq = 0;             // stage 4: sum of split^2
  int64_t tiles = 0;                // stage 5: sum of tile_count
  double objective = 0;             // the cost expression's value (when one was given)
  bool optimal = false;             // every choice enumerated and every placement proven
  int64_t variables = 0;            // model size: residency + offset per buffer + one per candidate
  int64_t constraints = 0;          // model size: co-live pairs + edges + in-place edges + group links
  int64_t assignments = 0;          // division assignments scored
  double seconds = 0;               // wall time
  std::vector<CdServed> served;     // relayouts chosen (cost expression only: the ladder keeps copies out)
};

// torch-spyre's stage-1 weight: (read_count - [first_use_is_read] + [is_intermediate]) x ceil(size/alignment).
int64_t ladder_spill_cost(const CdBuffer& b, int64_t alignment);
// Per-core footprint: ceil(size / (output_partition x output_tile_count)).
int64_t ladder_footprint(const CdBuffer& b, int d);
// Loop-group cuts of an assignment (1.14.2), or -1 when a shared nest uses a pair its table does not list.
int64_t ladder_cuts(const CdProblem& p, const std::vector<int>& division);
// Exact (enumerates every division choice and, for a cost expression, every residency set, while
// small; local search beyond) minimization of the lexicographic ladder (residency, cuts, -cores,
// split^2, tile count) or of the cost expression. The result passed check_division_plan.
Result<LadderSolution> solve_division_ladder(const CdProblem& p, const LadderOptions& o);

}  // namespace sp::lx
