// The MLSys 2026 scheduler: turns a Problem into a Solution (subgraphs, granularities,
// retention, traversal orders) with low total latency, as scored by the exact evaluator.
//
// Search in one paragraph: a schedule is a topological order of the ops cut into contiguous
// segments (each segment one subgraph, optionally retaining outputs for the next one). For a
// fixed order an exact dynamic program picks the best cuts and retention (scheduler_partition),
// pricing each segment with its best granularity and traversal (scheduler_config, scored by
// sp::mlsys::Evaluator and memoized). Simulated annealing over the order, one chain per thread,
// searches the orders (scheduler.cpp). Recomputation of cheap producers is a final pass.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/result.h"
#include "mlsys/evaluator.h"
#include "mlsys/problem.h"
#include "mlsys/solution.h"

namespace sp::mlsys {

struct SchedulerOptions {
  RuleOptions rules;              // the reading the solution must be valid under
  double time_limit_s = -1;       // wall-clock budget; < 0 means none (no budget at all: no annealing)
  int64_t iterations = -1;        // annealing moves over all threads; < 0 means until time limit
  int threads = 1;                // search chains run in parallel, one per thread
  uint64_t seed = 1;              // same seed + threads + iterations = same plan
  int max_segment_ops = 12;       // longest run of ops fused into one subgraph by the DP
  // Techniques, each a toggle (all on by default).
  bool fusion = true;             // segments longer than one op
  bool retention = true;          // keep outputs in fast memory for the next subgraph
  bool recompute = true;          // final pass: recompute cheap producers instead of loading
  bool snake = true;              // snake traversal orders (else raster only)
  bool split_k = true;            // k below the reduction (else the largest k that fits)
  bool anneal = true;             // search over topological orders (else greedy: one DP pass)
};

struct LowerBounds {
  double compute = 0;   // every op's cheapest compute, with no padding beyond the unavoidable
  double memory = 0;    // graph inputs loaded (large MatMul operands streamed), graph outputs stored
  double combined = 0;  // max of the two (subgraphs are serialized: latency >= both)
};

struct ScheduleStats {
  double total = 0;             // evaluator total of the returned solution
  double first_valid_s = 0;     // seconds until the first valid solution
  double final_s = 0;           // seconds until the returned solution was found
  int64_t iterations = 0;       // annealing moves made over all threads
  double anneal_s = 0;          // wall-clock seconds of the annealing phase (moves / anneal_s = moves/s)
  int64_t configs_evaluated = 0;  // subgraph simulations run by the config search
  LowerBounds bounds;
};

struct ScheduleResult {
  Solution solution;  // validated; reported latencies are the evaluator's own
  ScheduleStats stats;
};

// Called (serially) each time a strictly better validated solution is found.
using ImprovementCallback = std::function<void(const Solution&, double total)>;

LowerBounds lower_bounds(const Problem& problem, const RuleOptions& rules);

// Bad input (exit 2) when no valid schedule exists, naming the op and the capacity it needs.
Result<ScheduleResult> schedule(const Problem& problem, const SchedulerOptions& options,
                                const ImprovementCallback& on_improvement = {});

// What both command-line front ends do: read, schedule, write atomically on every improvement.
struct ScheduleRunOptions {
  std::string problem_path;
  std::string output_path;
  std::string trace_path;  // --trace: the final schedule as a Chrome trace (mlsys/trace.h); "" = none
  bool verbose = false;  // lower bounds and progress on stderr
  std::string program = "scratchplan";  // starts each error line, as the front end's other errors
};
// Returns the process exit code (0, 1 or 2) and prints errors to stderr.
int run_schedule_to_file(const ScheduleRunOptions& run, const SchedulerOptions& options);

// A default time budget from the problem size, like the contest's tiers.
double default_time_limit(const Problem& problem);

}  // namespace sp::mlsys
