// The placement engine's public interface: solve(problem, options) -> SolveResult, the request
// builder both front ends use, and an observer of every plan solve() returns. Each search
// technique of the exact solver is a named toggle in ExactToggles. The solvers' building blocks
// are internal (alloc/internal/*.h: for the engine, its tests and benchmarks only).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "alloc/problem.h"
#include "core/result.h"

namespace sp::alloc {

enum class SolverKind {
  kGreedy,        // torch-spyre GreedyLayoutSolver: time sweep, in-place reuse, address 0 / top / first gap
  kFirstFit,      // torch-spyre FirstFit: score order + in-place topological order, first fitting gap
  kBestFit,       // torch-spyre BestFit: same order, gap with the smallest remainder
  kBestOfFits,    // bestfit and firstfit, the better plan (ties: bestfit): a fast answer that honours hand-offs
  kGreedyBySize,  // TFLite: size-descending, best-fitting gap among time-overlapping placed buffers
  kSweep,         // scalable: greedy-by-size lowest fit over a bucketed time index (100k-1M buffers)
  kOnline,        // malloc-style: time order, best-fitting free gap (O(n log n)); the first answer on huge inputs
  kAnnealing,     // simulated annealing over placement orders, first-fit decoder
  kExact,         // complete branch-and-bound over canonical solutions (pack and select)
  kAuto,          // portfolio: heuristics, then exact (and annealing) under the time limit
};

enum class Objective {
  kPack,    // place every buffer (within capacity); with minimize, the smallest height
  kSelect,  // place a subset within capacity minimizing the spill cost of the rest
};

// Exact-search techniques; each can be switched off to measure what it buys.
struct ExactToggles {
  bool section_bound = true;  // per time section: max(floor, last offset) + remaining sizes <= capacity
  bool symmetry = true;       // identical buffers (size, lifetime) are placed in index order
  bool decompose = true;      // solve independent time segments separately
  bool dominance = true;      // a buffer skipped at an offset must be lifted by a later conflict
  bool lb_probe = true;       // minimize: first try capacity = max-load lower bound
  bool fail_first = true;     // branch on the buffer covering the tightest section first
  bool restarts = true;       // round-robin static preorders with growing node budgets
  bool memo = true;           // remember failed search states (placement-order independent)
  bool memo_lift_key = true;  // memo key: floors + must-be-lifted flags, not the current level
  bool lift_check = true;     // with dominance: fail as soon as a blocked buffer has no co-live lifter left
  bool tight_holes = true;    // fail_first: zero-slack holes first, then fewest candidates
  bool minimalloc_dives = true;  // restarts: also MiniMalloc's own branching in (perturbed) TWA order
  bool free_place = true;     // a placement that lifts no unplaced buffer is not branched on
  bool load_bound = true;     // select: exact load relaxation (knapsack B&B) as lower bound; pack its optimal set first
  bool sparse_dives = true;   // auto, pack from 2,000 buffers, sparse: canonical dives (dive.cpp) at the bound first
};

// One improvement of the best plan so far (pack: all placed; select: any), reported while solving.
struct Progress {
  double seconds = 0;         // since solve() started
  std::string solver;         // the solver or phase that found it
  int64_t value = 0;          // pack: height; select: spill cost
  int64_t lower_bound = 0;    // the bound known at the start (max load / selection bound)
};

struct SolveOptions {
  SolverKind solver = SolverKind::kAuto;
  Objective objective = Objective::kPack;
  bool minimize = false;      // pack: minimize the height (capacity is the upper limit)
  double time_limit = 10.0;   // seconds for anytime solvers (exact, annealing, auto); negative: no limit
  int threads = 1;            // auto and exact: exact-search workers
  int sweep_threads = 0;      // auto, pack --minimize from 2,000 buffers: multi-start workers (0: all hardware threads)
  uint64_t seed = 1;          // annealing
  int64_t iterations = 0;     // 0 = by time; annealing: moves; auto pack --minimize from 2,000 buffers: multi-start rounds
  int64_t work_limit = 0;     // auto, select up to 8,000 buffers: work units (search nodes, annealing moves x buffers) for the anytime stages, time_limit then only a guard; 0: by time
  ExactToggles exact;         // exact-search techniques
  std::function<void(const Progress&)> on_improvement;  // optional: called on each better plan (CLI progress)
  // For a planner's inner loop: many small pack problems it builds itself, whose final plan its
  // own checker validates (nki::check_kernel). The named heuristic placer alone, run to the end:
  // no problem checks, bounds, fallback placer or validation, the time limit not consulted.
  // bad_input with auto, exact, annealing, best-of-fits or select.
  bool lean = false;
};

struct SolveResult {
  Placement placement;        // validated plan (offsets kSpilled for spilled buffers)
  std::string solver;         // solver that produced it
  bool feasible = false;      // pack: every buffer placed within capacity
  Size height = 0;            // highest placed offset+size
  Cost spill_cost = 0;        // select: sum of spill costs of spilled buffers
  int64_t lower_bound = 0;    // pack: height lower bound; select: spill-cost lower bound
  bool proven_optimal = false;  // objective value equals a proven bound (or search completed)
  bool proven_infeasible = false;  // pack at fixed capacity: no plan exists
  double seconds = 0;         // wall time
  int64_t nodes = 0;          // exact search nodes
  int64_t work = 0;           // work units spent (SolveOptions::work_limit's)
};

Result<SolverKind> parse_solver_kind(const std::string& name);
// Switches off the exact-search technique named like its ExactToggles field (--exact-off);
// bad_input "unknown exact technique 'x'" for any other name.
Status disable_exact_technique(ExactToggles& t, const std::string& name);

// One solve as a front end receives it (CLI flags, Python keywords). solve_options() checks it with
// one set of rules and the CLI's words, so both front ends refuse the same requests the same way;
// a flag the chosen solver would ignore is refused, never silently dropped.
struct SolveRequest {
  std::string objective = "pack";      // pack | select
  std::string solver = "auto";         // a parse_solver_kind name
  bool minimize = false;               // pack only
  double time_limit = 10.0;            // seconds, 0..1e6
  int threads = 1;                     // auto and exact only, when given
  bool threads_given = false;          // the user set threads
  uint64_t seed = 1;                   // auto and annealing only, when given
  bool seed_given = false;             // the user set seed
  int64_t iterations = 0;              // auto and annealing only (0 = by time)
  std::vector<std::string> exact_off;  // exact-search techniques to switch off (auto and exact only)
  int64_t capacity = -1;               // bytes, over the problem's own; -1: the problem's
};
Result<SolveOptions> solve_options(const SolveRequest& r);
// A solve of `p` (read from `source`) as the request asks, the same for every front end: the
// request's checks (solve_options), its capacity over the problem's, the refusal of a request
// that needs a capacity and has none, and the time limit less the `spent_seconds` of reading and
// what validating and writing a plan of p's size take (the limit bounds the whole run).
Result<SolveOptions> prepare_solve(Problem& p, const SolveRequest& r, const std::string& source, double spent_seconds);

const char* solver_kind_name(SolverKind k);

// Validates the problem, runs the solver, validates the result with the independent checker
// (SolveOptions::lean: the placer alone; the caller validates its final plan).
Result<SolveResult> solve(const Problem& p, const SolveOptions& o);

// Every plan solve() returns is shown to the observer, if one is set (tests use it to prove that
// a planner places its buffers through the engine). Set it only while no solve runs.
using SolveObserver = std::function<void(const Problem&, const SolveResult&)>;
void set_solve_observer(SolveObserver observer);  // an empty function removes it

}  // namespace sp::alloc
