// The NKI planner: chooses how many physical tiles each SBUF/PSUM tensor gets (single, double,
// multi-buffering, as modulo allocation over its logical blocks) and all addresses, to maximise
// overlap between engines under SBUF and PSUM capacity. Candidates are scored by an engine
// timeline simulation; the result is validated by the independent checker (check.h).
#pragma once

#include <array>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "alloc/problem.h"
#include "nki/check.h"
#include "nki/kernel.h"

namespace sp::nki {

// How the timeline orders instructions of one engine queue.
enum class Scheduler {
  kDataflow,  // list scheduling of the dependency graph (the compiler may interleave iterations)
  kInOrder,   // program order per queue (the instruction stream as written)
};

// Above this many instruction executions the dataflow model is replaced by the in-order one.
inline constexpr int64_t kMaxDataflowExecutions = 2'000'000;

struct PlanOptions {
  Scheduler scheduler = Scheduler::kDataflow;  // timeline model used for scoring and reporting
  int max_buffers = 8;          // most physical tiles per tensor the search tries
  double time_limit_s = 10.0;   // search budget (the plan so far is returned when it runs out)
  bool multi_buffer = true;     // off: every tensor keeps its smallest legal tile count
  bool keep_direct = false;     // keep the input's direct allocations; plan only automatic tensors
};

// One instruction execution on the timeline.
struct EngineSpan {
  int instr = 0;       // instruction index
  int lane = 0;        // queue of its engine (DMA has several)
  Cycles start = 0;    // first cycle
  Cycles end = 0;      // one past the last cycle
  int64_t exec = 0;    // program-order execution index (names its loop iteration in traces)
};

struct Timeline {
  Cycles makespan = 0;                        // end of the last instruction
  std::array<Cycles, kNumEngines> busy{};     // cycles each engine executes (summed over its queues)
  std::array<int, kNumEngines> lanes{};       // queues per engine
  std::vector<Cycles> war_stall;              // per tensor: cycles instructions waited for a tile to be released
  std::vector<EngineSpan> spans;              // filled when recording (at most the first million)
  // Busy fraction of the engine's capacity (all of its queues) over the whole run.
  double utilization(int engine) const {
    return makespan ? static_cast<double>(busy[engine]) / static_cast<double>(makespan * lanes[engine]) : 0.0;
  }
};

// Where a tensor's physical tiles went.
struct TensorPlan {
  TensorId tensor = -1;
  int tiles = 1;          // physical tiles (logical block b uses tile b mod tiles)
  int min_tiles = 1;      // smallest legal count (all logical tiles that must coexist)
  Partition partition = 0;  // first partition of every tile
  Bytes base = 0;         // SBUF: first byte; PSUM: first bank
  Bytes stride = 0;       // SBUF: bytes between tiles (fbytes rounded up to the alignment); PSUM: 1 bank
  bool kept = false;      // the input's direct allocation was kept (keep_direct)
};

struct PlanResult {
  Kernel kernel;                    // the input with every SBUF/PSUM tensor directly allocated
  Scheduler scheduler = Scheduler::kDataflow;  // timeline model actually used
  std::vector<TensorPlan> plans;    // SBUF/PSUM tensors, in declaration order
  Timeline planned;                 // timeline of the plan (spans recorded)
  Timeline baseline;                // every tensor at its smallest legal count (spans recorded)
  bool has_input = false;           // the input's own allocation is known: clean, and complete or with compiler-placed tensors
  Timeline input;                   // then: its own allocation on the same timeline
  bool input_compiler_placed_by_planner = false;  // input: its compiler-placed tensors placed by this planner (keep_direct)
  CheckReport input_check;          // the checker's report on the input's own (complete) direct allocation
  Bytes sbuf_bytes = 0;             // highest SBUF byte used per partition
  Bytes psum_banks = 0;             // highest PSUM bank used + 1
  int evaluations = 0;              // timeline simulations run by the search
};

Result<PlanResult> plan_kernel(const Kernel& k, const PlanOptions& opt = {});

// The kernel's own allocation (`placements`, one per logical block as the checker evaluated
// them) on the planner's timeline with spans recorded: what `nki check --trace` shows. Tensors
// without placements (automatic) get one tile per logical block, so only true dependencies
// order them. The dataflow model gives way to in-order above kMaxDataflowExecutions, as in plan.
Timeline simulate_allocation(const Kernel& k, const std::vector<std::vector<TilePlacement>>& placements,
                             Scheduler scheduler = Scheduler::kDataflow);

// Address assignment for the planner: places buffers of `size` units (bytes or banks) spanning
// `partitions` rows, live over program-order events [first, last], inside rows [0, rows) x units
// [0, capacity); every offset is the allocation engine's (alloc::solve, first fit). A buffer
// starts at a row that is a multiple of `row_step` (the ISA start-partition quadrant) and at a
// unit offset that is a multiple of `align`. Buffers live at the same time never intersect; if
// everything fits without any sharing, nothing shares (no false dependencies). Buffers whose
// `live` sets are disjoint may share even when their [first, last] spans interleave.
struct BufferRequest {
  Bytes size = 0;              // units along the free axis
  int64_t first = 0;           // first event that touches it
  int64_t last = 0;            // last event that touches it
  Partition partitions = 128;  // rows it spans
  Partition row_step = 128;    // allowed start rows: multiples of this
  bool fixed = false;          // already placed at `at` (an obstacle; capacity not checked)
  Partition at_partition = 0;  // fixed: first row
  Bytes at_offset = 0;         // fixed: first unit
  // When not empty: the events it is live, as sorted disjoint closed intervals within
  // [first, last] (a tensor declared in a loop is dead between iterations, so others fit there).
  // A view: the intervals must outlive the call.
  std::span<const std::pair<int64_t, int64_t>> live = {};
};
struct BufferPlacement {
  Partition partition = 0;  // first row
  Bytes offset = 0;         // first unit
};
// A planner's session with the allocation engine. The answers by query (a buffer's size among
// the byte ranges it must avoid at each start row): a search places the same tensors among the
// same neighbours many times, and the engine is deterministic, so an answer is asked for once.
// The problem handed to the engine is reused from query to query (its buffers keep their memory).
struct EngineAnswers {
  struct KeyHash {
    std::size_t operator()(const std::vector<int64_t>& key) const;
  };
  std::unordered_map<std::vector<int64_t>, std::vector<Bytes>, KeyHash> by_query;  // query key -> offset per slot
  std::vector<int64_t> key;  // the query being asked (reused)
  alloc::Problem problem;    // the engine's problem for it (reused)
};
Result<std::vector<BufferPlacement>> assign_offsets(const std::vector<BufferRequest>& reqs, Bytes capacity, Bytes align,
                                                    Partition rows = 128, EngineAnswers* answers = nullptr);

}  // namespace sp::nki
