// LX scratchpad planning of whole programs (issue 6): which values live in each core's LX
// scratchpad and at which per-core address, which stay in HBM and why, each op's core split,
// inserted clones, evictions/reloads, and the resulting HBM traffic and roofline time.
// Pipeline: layouts -> work division -> versioned liveness -> eligibility -> buffers ->
// placement (alloc engine, selection objective) -> eviction -> cost -> independent check.
// docs/lx.md documents the plan format, the cost model and every decision.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json_reader.h"
#include "core/result.h"
#include "core/violations.h"
#include "program/program.h"

namespace sp::lx {

using Bytes = int64_t;   // byte count
using OpIndex = int32_t; // position in the planned op order
using ValueId = int32_t; // one version of a tensor (each write starts a new one)

// Largest byte count a hardware file may give (the CLI's bytes rule).
inline constexpr Bytes kMaxHardwareBytes = Bytes{1} << 62;

// Hardware description; every cost-model parameter lives here (docs/lx.md).
struct Hardware {
  std::string name = "spyre";          // label
  Bytes lx_bytes = Bytes{2} << 20;     // LX scratchpad per core
  Bytes lx_backend_bytes = 64 << 10;   // LX the backend keeps before the reserved fraction applies
  double reserved_fraction = 0.2;      // DXP_LX_FRAC_AVAIL
  Bytes capacity_override = -1;        // >= 0: usable LX per core, bypassing the formula
  Bytes alignment = 128;               // LX address alignment (one stick)
  int max_cores = 32;                  // SENCORES upper bound
  Bytes span_limit = Bytes{256} << 20; // per-core HBM span limit
  double hbm_bytes_per_s = 204.8e9;    // HBM bandwidth shared by all cores
  double core_flops_per_s = 1.0e12;    // per-core compute throughput (fp16 FLOP/s)
  double op_overhead_s = 2.0e-6;       // fixed per-op launch/bundle overhead
  double ring_bytes_per_s = 0;         // inter-core data ring: bytes per second into each core (0 = no ring transfers)
};

// round_up(int((lx_bytes - lx_backend_bytes) * (1 - reserved_fraction)), alignment), or the override.
Bytes lx_capacity(const Hardware& h);
// "spyre" (built-in) or a JSON file; fields absent from the file keep spyre's values.
Result<Hardware> load_hardware(const std::string& name_or_path);
Result<Hardware> hardware_from_json(const Json& j, const std::string& source);
Json hardware_to_json(const Hardware& h);

// The seed's stages plus the techniques beyond it; each is a named toggle.
struct Options {
  bool lx = true;                  // stage 1 off: everything through HBM
  bool only_reduction_outputs = false;  // stage 2: pin only reduction outputs
  bool in_place = true;            // stage 3: pointwise outputs may take a dying input's address
  bool clone_inputs = true;        // stage 4: multi-use graph inputs cloned to LX when it pays
  bool clone_outputs = true;       // graph outputs read later: computed on LX, written to HBM once
  bool eviction = true;            // dormant values may be evicted and reloaded when it pays
  bool reorder = true;             // move independent ops when it lowers HBM traffic
  bool coopt = true;               // co-optimize core splits with placement
  bool ring_transfers = true;      // LX-to-LX ring transfers for mismatched slicings (when the hardware has a ring)
  bool infer_layouts = true;       // choose the layouts the program leaves open (program::infer_open_layouts)
  int cores = 32;                  // cores available to work division (at most; see fewer_cores)
  bool fewer_cores = true;         // also plan at the powers of two below `cores` and keep the best
  double time_limit = 1.0;         // seconds for the whole plan (anytime)
  double search_ops_per_second = 2e5;  // split search's work budget: ops planned per second of its time (docs/lx.md)
  uint64_t seed = 1;               // for any randomized search
};
// Options for seed stage 1..4 (1 = LX off, 4 = clone inputs); techniques beyond the seed off.
Options stage_options(int stage);

// ---- program-independent planning model (programs and the pattern cases both lower to it) ----
struct GTensor {
  std::string name;        // tensor name
  Bytes bytes = 0;         // device bytes (whole tensor, all cores)
  int64_t elements = 0;    // host elements (for element counts)
  bool graph_input = false;
  bool graph_output = false;
  int partial_of = -1;     // partial sums of this tensor (a reduction split's per-core results), or -1
};

struct GOperand {
  int tensor = -1;         // GTensor index
  std::string slicing;     // how this op slices the tensor over cores ("" = whole, one core)
  Bytes per_core = 0;      // bytes one core holds under that slicing (unaligned)
};

// A layout incompatibility of one operand (program::check_op_layouts): the operand is re-laid-out
// (restickify) or padded before the op; the fixed copy makes one extra HBM round trip.
struct LayoutFix {
  int tensor = -1;         // GTensor index of the operand
  bool padding = false;    // padded (true) or restickified (false)
  Bytes fixed_bytes = 0;   // bytes of the fixed copy (padded size, or the tensor's bytes)
  std::string message;     // program::LayoutIssue's one-line message
};

struct GOp {
  std::string name;            // op name
  std::string kind;            // pointwise / reduction / matmul / opaque / load / clone / combine
  std::vector<GOperand> reads; // with multiplicity
  std::vector<GOperand> writes;
  bool in_placeable = false;   // output may take a dying input's address
  bool reduction = false;      // produces a reduction output (stage 2)
  bool lx_capable = true;      // false: extern/opaque kernel, operands stay in HBM
  bool reduction_split = false;// writes partial sums (tensors with partial_of), combined through HBM
  int64_t reduction_factor = 1;// split factor of the reduction variable (partial results per output element)
  int cores = 1;               // cores it runs on
  std::string splits;          // readable split, e.g. "d0=4 d1=1"
  double flops = 0;            // work, for the roofline
  int source_op = -1;          // program op index (-1 for inserted clones and combines)
  std::vector<LayoutFix> layout_fixes;  // operands re-laid-out or padded before this op
  Bytes ring_bytes = 0;        // kind "ring": bytes each core receives over the inter-core ring
};

struct Graph {
  std::string name;
  std::vector<GTensor> tensors;
  std::vector<GOp> ops;        // in execution order
};

// ---- the plan ----
struct Segment {
  OpIndex start = 0;        // first op of the LX residency (def, clone or reload)
  OpIndex end = 0;          // last op using it on LX (inclusive)
  Bytes address = -1;       // per-core LX address
  bool reload = false;      // starts with a reload from HBM
};

struct PlanValue {
  std::string name;         // tensor name, with #k for the k-th redefinition
  int tensor = -1;          // GTensor index
  OpIndex def = -1;         // op writing it (-1: graph input)
  std::vector<OpIndex> uses;// reading ops (with multiplicity)
  Bytes bytes = 0;          // whole-tensor device bytes
  Bytes per_core = 0;       // aligned per-core bytes
  bool clone = false;       // LX copy of a graph input made by an inserted clone op
  bool output_clone = false;// graph output computed on LX and written to HBM once
  int in_place_parent = -1; // value whose address it took at hand-off
  std::vector<Segment> lx;  // LX residency (empty = HBM)
  std::string reason;       // why it is (partly) in HBM; empty when fully on LX
  Bytes spill_cost = 0;     // HBM bytes it would save if placed (for "did not fit")
};

struct Totals {
  Bytes hbm_read = 0, hbm_write = 0;    // bytes
  int64_t hbm_elements = 0;             // host elements moved
  Bytes baseline_hbm = 0;               // all-HBM plan with the same splits
  int64_t baseline_elements = 0;
  Bytes saved = 0;                      // baseline - ours
  Bytes lower_bound_hbm = 0;            // proven lower bound over every split choice (compulsory traffic)
  Bytes split_lower_bound_hbm = 0;      // proven lower bound for the chosen splits
  Bytes cores_lower_bound_hbm = 0;      // proven lower bound over the splits with the plan's core count per op
  Bytes time_lower_bound_hbm = 0;       // proven lower bound over every split of plans whose estimated time is at most ours
  double time_s = 0, baseline_time_s = 0;  // roofline estimate
};

struct Plan {
  Graph graph;                  // ops as planned (clones inserted, reordered)
  Hardware hw;
  Bytes capacity = 0;           // usable LX per core
  Options options;
  std::vector<PlanValue> values;
  std::vector<Bytes> op_hbm;    // HBM bytes per op
  Totals totals;
  std::string solver;           // alloc solver used
  bool proven_optimal = false;  // placement matched its bound
  int evictions = 0, clones = 0, reorders = 0, coopt_changes = 0;
  int ring_transfers = 0;       // inserted ring ops (LX-to-LX relayouts instead of HBM round trips)
  std::vector<std::string> notes;  // decisions worth showing (co-opt moves, reorders)
  int planned_cores = 0;           // core budget of the run this plan comes from (<= options.cores)
  struct CoreBudgetRun {
    int cores = 0;                 // core budget of one planning run
    double time_s = 0;             // its plan's estimated time
    Bytes hbm = 0;                 // its plan's HBM bytes
  };
  std::vector<CoreBudgetRun> core_runs;  // every run plan_program made, in order (the best is returned)
  struct InferredLayout {
    std::string tensor;            // a tensor the program left without dim_order or layout
    std::vector<int> dim_order;    // the layout the plan assumes for it (program format)
  };
  std::vector<InferredLayout> inferred_layouts;  // the compiler must lay these tensors out so
};

// Roofline time of op `i` of a plan (docs/lx.md "Cost model"): compute and HBM transfer overlap,
// the launch overhead adds. Totals::time_s is the sum of total() over the ops, in order.
struct OpTime {
  double compute_s = 0, hbm_s = 0, overhead_s = 0;
  double total() const { return (compute_s > hbm_s ? compute_s : hbm_s) + overhead_s; }
};
OpTime op_time(const Plan& p, std::size_t i);

// Builds the planning graph of a program under the given per-op split choice (index into each
// op's candidate menu; empty = seed division).
struct ProgramModel;  // layouts + division + menus (opaque; planner.cpp)

// Plans a graph (pattern cases, tests). The result passed check_plan.
Result<Plan> plan_graph(const Graph& g, const Hardware& hw, const Options& o);
// Plans a program end to end: layouts, work division, co-optimized splits, placement.
Result<Plan> plan_program(const program::Program& p, const Hardware& hw, const Options& o);

// Exhaustive reference for small programs (tests, issue 44): every assignment of menu entries
// at exactly o.cores (the planner's menus), each planned in full (placement, eviction, ...) with
// `seconds_each`; the best by the planner's order (estimated time, then HBM bytes). Bad input
// when the menus admit more than max_assignments assignments.
struct ExactReference {
  std::optional<Plan> best;   // the optimum over split choices
  int64_t assignments = 0;    // assignments planned
};
Result<ExactReference> exact_split_reference(const program::Program& p, const Hardware& hw, const Options& o,
                                             int64_t max_assignments, double seconds_each = 0.05);

// Ring transfers (docs/lx.md "Ring transfers"): a value written under one core slicing and read
// under another goes through HBM; with a ring, an inserted op (kind "ring") moves it LX-to-LX into
// a new value sliced as its readers slice it. One candidate per (value, reader slicing).
struct RingCandidate {
  int tensor = -1;         // GTensor index of the mismatched value
  std::string slicing;     // the readers' slicing it is moved to
  int first_reader = -1;   // op index of the first reader with that slicing (the ring op goes before it)
};
std::vector<RingCandidate> ring_candidates(const Graph& g, Bytes capacity);
// `g` with the ring ops of the candidates whose keep flag is set.
Graph insert_rings(const Graph& g, const std::vector<RingCandidate>& cands, const std::vector<char>& keep);

// Independent checker: re-derives liveness and HBM traffic from the plan's op list and residency
// (no planner code), checks addresses (alignment, capacity, no overlap of co-live values except an
// in-place hand-off at the same base) and that the reported totals match. It stops at the first
// broken rule: the result holds at most one violation.
enum class PlanViolationKind {
  kGraph,        // an op reads a tensor no op or graph input defines
  kPartialSums,  // a reduction split's partial sums are malformed or never combined
  kValues,       // the plan's values are not the versions the op list defines
  kResidency,    // a value may not be on LX there (LX off, graph input, op that cannot write or read LX, output without HBM copy)
  kSize,         // a value's per-core size is below what its producer writes
  kAddress,      // an LX address is misaligned or past the capacity
  kSegments,     // residency segments reversed, overlapping, or not starting / ending at a def or use
  kOverlap,      // two co-live values share LX bytes (not an in-place hand-off)
  kTraffic,      // the re-derived HBM traffic differs from the plan's totals (or a layout fix is too small)
  kBound,        // a reported lower bound is above the plan's traffic
};
using PlanCheck = CheckResult<PlanViolationKind>;
PlanCheck check_plan(const Plan& p);

// Output.
// arrays = false leaves out "ops" and "buffers" (plan_json_text streams them).
Json plan_to_json(const Plan& p, bool arrays = true);
// plan_to_json(p).dump(1) + "\n", byte for byte, without building the two large arrays as a tree.
std::string plan_json_text(const Plan& p);
std::string plan_report(const Plan& p);
std::string plan_svg(const Plan& p);
// Chrome trace (core/trace.h) in microseconds: one process per core with the ops it runs and its
// LX bytes in use as a counter, and a "plan" process with every op once (HBM bytes in its args).
std::string plan_trace(const Plan& p);

// A transformer program of exactly num_ops ops: blocks of attention (norm, q/k/v projections,
// scores, softmax, PV, output projection, residual) and MLP (norm, up, gelu, down, residual).
// sparse_reductions: row reductions write sparse outputs (dim_order ending in -1, as a compiler
// lays them out); false keeps them dense, which costs a restickify per reduction.
Result<program::Program> transformer_program(int num_ops, int64_t seq = 256, int64_t hidden = 512,
                                             bool sparse_reductions = true);

// Pattern cases of lx_cases.json: ops with inputs/output names (redefinition allowed).
Result<Graph> graph_from_pattern(const Json& j, const std::string& source);

}  // namespace sp::lx
