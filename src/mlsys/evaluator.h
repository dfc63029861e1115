// The exact MLSys 2026 schedule evaluator: validity rules V1-V9, tensor classes, the unified
// grid, backward region propagation, the per-k-step roofline, reuse between adjacent steps and
// the working set, as RULES.md specifies (docs/mlsys.md lists our reading and its flags).
//
// Two entry points: evaluate() scores a whole solution; Evaluator::evaluate_subgraph() scores
// one subgraph in a given context, reusing scratch memory, for search loops that try many
// candidates.
#pragma once

#include <string>
#include <vector>

#include "mlsys/problem.h"
#include "mlsys/solution.h"

namespace sp::mlsys {

enum class MatMulCompute {
  kOpK,     // base_cost * k / K_op per k-step: a spatial tile costs base_cost (default)
  kNative,  // base_cost * k / native_k per k-step: a tile costs base_cost * K_op / native_k
};

// One switch per alternative reading listed in RULES.md §1.10; defaults are the main reading.
struct RuleOptions {
  MatMulCompute mm_compute = MatMulCompute::kOpK;  // D1
  bool allow_super_native = false;           // D6: accept w, h, k above native
  bool no_reuse_for_null_traversal = false;  // D2: no reuse between tiles when traversal is null
  bool strict_ephemeral = false;             // D12: recompute ephemeral regions every step
  bool spill_ephemeral = false;              // D4: ephemerals with outside consumers are written out
  bool resident_only_if_consumed = false;    // D5: a retained tensor occupies memory only if read
  int64_t max_steps = 5'000'000;             // refuse subgraphs with more steps than this
};

struct SubgraphEvaluation {
  bool evaluated = false;        // false when a fatal error stopped the simulation
  double latency = 0;            // sum of step latencies
  double reported_latency = 0;   // what the solution claimed
  int64_t tiles = 0;             // spatial tiles of the unified grid
  int64_t k_steps = 1;           // k-steps per tile
  Elements peak_working_set = 0; // largest working set over the steps
  Elements load_elements = 0;    // elements loaded from slow memory
  Elements store_elements = 0;   // elements written to slow memory
  double compute = 0;            // sum of step compute times
  double memory = 0;             // sum of step transfer times ((load + store) / bandwidth per step)
  int64_t memory_bound_steps = 0;  // steps whose transfer time exceeded their compute time
  Granularity granularity;       // as given
  int errors = 0;                // validity errors raised by this subgraph
  bool cut_short = false;        // search mode stopped the simulation early: not a verdict
};

struct Evaluation {
  bool valid = false;                        // no validity error at all
  double total = 0;                          // sum of evaluated subgraph latencies
  std::vector<std::string> errors;           // every validity error
  std::vector<std::string> warnings;         // e.g. a retained graph output (still written)
  std::vector<SubgraphEvaluation> subgraphs; // one per subgraph, in order
};

// Memory state between two subgraphs: what is in slow memory and what the previous subgraph
// retained.
struct MemoryState {
  std::vector<char> in_slow;             // per tensor: a copy is in slow memory
  std::vector<TensorId> resident_prev;   // retained by the previous subgraph
};

class Evaluator {
 public:
  Evaluator(const Problem& problem, const RuleOptions& options);
  ~Evaluator();
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

  const Problem& problem() const { return problem_; }
  const RuleOptions& options() const { return options_; }

  // The state before the first subgraph: graph inputs in slow memory, nothing retained.
  MemoryState initial_state() const;

  // Evaluates subgraph `index` of a schedule in `state` and advances `state` past it.
  // Validity errors are appended to `errors` (and counted in the result).
  SubgraphEvaluation evaluate_subgraph(const SubgraphSpec& spec, int index, MemoryState& state,
                                       std::vector<std::string>& errors, std::vector<std::string>& warnings);

  // Scores a whole solution.
  Evaluation evaluate(const Solution& solution);

  // Search mode, for scoring candidates only (validation never uses it): stop a simulation as
  // soon as the working set exceeds the capacity (`stop_on_oom`; the OOM error is still
  // raised) or the latency so far exceeds `latency_cutoff` (then `cut_short` is set and the
  // result is no verdict). evaluate_subgraph() is cheaper on hopeless candidates.
  void set_early_exit(bool stop_on_oom, double latency_cutoff);

 private:
  struct Impl;
  const Problem& problem_;
  RuleOptions options_;
  Impl* impl_;
};

// Convenience wrapper around Evaluator.
Evaluation evaluate(const Problem& problem, const Solution& solution, const RuleOptions& options = {});

// Relative/absolute comparison used for reported latencies (as the reference evaluator does).
bool latency_close(double a, double b);

}  // namespace sp::mlsys
