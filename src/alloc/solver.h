// Allocation solvers behind one small interface: solve(problem, options) -> SolveResult.
// Each search technique of the exact solver is a named toggle in ExactToggles.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "alloc/problem.h"
#include "core/deadline.h"
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
  ExactToggles exact;         // exact-search techniques
  std::function<void(const Progress&)> on_improvement;  // optional: called on each better plan (CLI progress)
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

// Validates the problem, runs the solver, validates the result with the independent checker.
Result<SolveResult> solve(const Problem& p, const SolveOptions& o);

// Every plan solve() returns is shown to the observer, if one is set (tests use it to prove that
// a planner places its buffers through the engine). Set it only while no solve runs.
using SolveObserver = std::function<void(const Problem&, const SolveResult&)>;
void set_solve_observer(SolveObserver observer);  // an empty function removes it

// ---- building blocks (also used by tests and benchmarks) ----
// Heuristic placers: buffers that do not fit below `capacity` are spilled (kSpilled + reason).
// With a deadline, buffers not reached when it expires are spilled ("time limit reached"): the
// plan stays valid, and pack scores it as unfinished. greedy, firstfit and bestfit are quadratic
// in the worst case; greedy-by-size and sweep query a bucketed time index (near-linear).
Placement place_greedy(const Problem& p, Size capacity, const Deadline* dl = nullptr);
Placement place_first_fit(const Problem& p, Size capacity, bool best_fit, const Deadline* dl = nullptr);
Placement place_greedy_by_size(const Problem& p, Size capacity, const Deadline* dl = nullptr);
Placement place_sweep(const Problem& p, Size capacity, const Deadline* dl = nullptr);
// Time-ordered best fit over a free-gap list, like a malloc (O(n log n); falls back to the sweep
// with fixed offsets or in-place edges). Lower quality, but a valid answer within a second at 1M.
Placement place_online(const Problem& p, Size capacity, const Deadline* dl = nullptr);
// Placement in a given order through the time index: lowest fit, or (best_fit) the tightest gap
// below the top, else on top. The improvement phase of `auto` on large instances uses it.
// stop_at_spill: the first buffer that does not fit ends the sweep (the rest stay unplaced,
// without a reason): the multi-start's rounds end as soon as they cannot beat a height.
// two_sided (lowest fit, under a capacity below kUnbounded): a buffer whose lowest fit lies on top of every
// placed buffer live with it hangs from the capacity instead (ends at it); see TwoSided in repair.cpp.
Placement place_sweep_in_order(const Problem& p, Size capacity, const std::vector<int>& order, bool best_fit,
                               const Deadline* dl = nullptr, bool stop_at_spill = false, bool two_sided = false);
// The same with the order drawn one buffer at a time (`next` sets the next index, or returns
// false at the order's end), so that an order can be sorted as it is consumed: the multi-start's
// rounds mostly stop early (repair.cpp).
Placement place_sweep_in_order(const Problem& p, Size capacity, const std::function<bool(int&)>& next, bool best_fit,
                               const Deadline* dl = nullptr, bool stop_at_spill = false, bool two_sided = false);
// First-fit (or best-fit) placement in a given order, in-place parents' slots tried first.
Placement place_first_fit_in_order(const Problem& p, Size capacity, const std::vector<int>& order, bool best_fit,
                                   const Deadline* dl = nullptr);
// Iterated repair of the regions above a target height (large instances, pack-min): improves
// `pl` (a complete plan) in place until the deadline or the lower bound; every step stays valid.
struct RepairStats {
  Size height = 0;          // final height
  int64_t rounds = 0;       // target heights tried
  int64_t repairs = 0;      // region re-placements attempted
  int64_t improvements = 0; // heights lowered
};
RepairStats repair_height(const Problem& p, Placement& pl, Size lower_bound, const Deadline& dl, uint64_t seed,
                          const std::function<void(Size)>& on_improvement = {});
// Per buffer, the largest total size live at one instant of its lifetime (MiniMalloc's T).
std::vector<Size> peak_load_over_lifetime(const Problem& p);
// Buffers in classes of `key` a factor `ratio` apart (class boundaries shifted by `offset` in
// [0, 1)), highest class first, by start time within a class: for buffers of one size, lowest
// fit in this order is interval-graph colouring (it reaches the max load). With a `pivot` tick,
// a class runs outwards from it instead: the buffers live at the pivot first, then by distance
// from it (those starting after it by start, those ending before it by end, latest first), which
// is still interval-graph colouring on either side but packs the pivot first. Those live at the
// pivot go by start, or with a `reach_ratio` r > 0 deepest first: by min(r x ticks live up to
// the pivot, ticks live from it on), largest first, so that near the pivot the buffers still
// live form the bottom of its stack on both sides (r weighs one side against the other).
// larger_first: within a class, among equal depths, larger buffers go before the start or
// distance rule (near-equal sizes: the larger copies set the lanes the smaller ones then fit).
std::vector<int> classed_order(const Problem& p, const std::vector<double>& key, double ratio, double offset,
                               std::optional<Time> pivot = std::nullopt, double reach_ratio = 0.0, bool larger_first = false);
// Whole-instance lowest-fit sweeps in lower-bound-guided orders (size x (peak load over the
// lifetime / max load)^e, in classes run outwards from a pivot near the peak) on `threads`
// workers, until the deadline or the max-load bound; odd workers sweep the time-reversed problem
// (time_reversed), and plans are compacted (compact_by_mirror) where that pays. Returns the best
// plan, `incumbent` if none is lower. on_improvement is called under a lock (one call at a time).
// two_sided: worker 0 also tries two-sided sweeps (for sparse instances, chains: see TwoSided in
// repair.cpp). rounds > 0: a budget of that many rounds, ceil(rounds / threads) per worker, the
// second half of each worker's rounds counting as the second half of the budget; then the plan
// depends only on the input, seed, threads and rounds, unless the deadline cuts the rounds short.
Placement multi_start(const Problem& p, const Placement& incumbent, const Deadline& dl, uint64_t seed,
                      const std::function<void(Size)>& on_improvement = {}, int threads = 1, bool two_sided = true,
                      int64_t rounds = 0);
// The problem run backwards in time: every lifetime [s, e) becomes [T - e, T - s), T the last
// end. Two buffers overlap in one exactly when they overlap in the other, so a plan of either is
// a plan of both, with the same height.
Problem time_reversed(const Problem& p);
// Compaction by mirror: each pass places every buffer again by lowest fit in the order of its
// offset in the plan turned upside down (height - offset - size). Every buffer placed before one
// lay above it in the plan, so each lands at or below its mirrored offset and the height does not
// grow; a pass may drop buffers into holes. Each pass runs under the height, so one that would
// rise (alignment or fixed offsets can make it) stops and is dropped. Passes alternate until two
// in a row gain nothing or the deadline; the plan of the last whole pass, no higher than `plan`.
Placement compact_by_mirror(const Problem& p, const Placement& plan, const Deadline& dl);
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
// Canonical dive (dive.cpp): the exact search's first branch, no backtracking, O((n + pairs) log n).
enum class DiveRule {
  kTightHoles,  // cover the hole at the lowest level: zero slack first, then the fewest candidates
  kLeastSlack,  // cover the hole at the lowest level with the least slack, then the fewest candidates
  kLowest,      // the lowest buffer, ties in the tie order (MiniMalloc's branching)
};
const char* dive_rule_name(DiveRule r);
struct DiveOptions {
  DiveRule rule = DiveRule::kTightHoles;
  bool twa_ties = false;            // ties: MiniMalloc's TWA order (else earliest start, then larger)
  Size target = 0;                  // the height the slack of a hole is measured against (the bound)
  Size give_up_above = kUnbounded;  // stop (empty plan) once the height would exceed this
  int64_t max_pairs = INT64_MAX;    // stop (empty plan) when the instance has more overlapping pairs
  bool block = true;                // a buffer that would break a bound under the target is first moved up (once)
};
// Every buffer placed (empty offsets if stopped: deadline, give_up_above, max_pairs, or fixed
// offsets / forced spills, which it does not handle). In-place hand-offs are treated as conflicts.
Placement canonical_dive(const Problem& p, const DiveOptions& o, const Deadline* dl = nullptr);
// Dives under every rule and tie order until one reaches `target` or the deadline; the lowest plan
// (empty offsets if none finished).
Placement dive_portfolio(const Problem& p, Size target, const Deadline& dl);
// First-fit decoder in a given order (annealing).
Placement place_in_order(const Problem& p, Size capacity, const std::vector<int>& order, const Deadline* dl = nullptr);
// Number of buffers placed at one of their in-place parents' address.
int in_place_handoffs(const Problem& p, const Placement& pl);
// Spills every member of an atomic group (Buffer::group) that has a spilled member: dropping
// buffers keeps a plan valid, and makes it respect the groups.
void keep_groups_whole(const Problem& p, Placement& pl);
// torch-spyre FirstFit/BestFit order: score sort then topological sort over in-place edges.
std::vector<int> first_fit_order(const Problem& p);
// Size-descending order, longer lifetimes first, then index (greedy-by-size and sweep).
std::vector<int> by_size_order(const Problem& p);
// Selection lower bound: forced spills plus, per instant, the cheapest fractional removal of the excess load.
Cost selection_lower_bound(const Problem& p);

// Load relaxation of selection: spill a set so that at every instant the placed load fits under
// the capacity (addresses ignored; in-place parents end at their children's start). Its optimum
// is a lower bound on the spill cost of every valid plan. Exact branch and bound with a
// Lagrangian (LP) bound, looking only for relaxed solutions cheaper than `upper`.
struct LoadRelaxation {
  Cost bound = 0;          // proven lower bound on the spill cost (<= upper)
  Cost root_bound = 0;     // Lagrangian bound at the root (forced spills included)
  bool complete = false;   // the search finished: bound is the relaxation optimum (or upper)
  bool found = false;      // complete and a relaxed solution below `upper` exists: `spill` is optimal
  std::vector<char> spill; // per buffer, 1 = spilled in the optimal relaxed solution (forced ones too)
  int64_t nodes = 0;
};
LoadRelaxation load_relaxation(const Problem& p, Cost upper, double seconds, int64_t node_limit = INT64_MAX);

struct ExactResult {
  Placement placement;     // best plan found (empty offsets if none)
  bool found = false;      // a plan was found
  bool complete = false;   // search finished: pack -> infeasible if !found; best is optimal
  int64_t value = 0;       // pack-min: height; select: spill cost
  int64_t nodes = 0;
};
// Exact search. pack: every buffer within capacity (minimize: lowest height); select: min spill cost.
// `seed` varies the randomized restart orders (0: static orders first); `stop` aborts early.
// on_lower: pack-min of one part (no decomposition into parts), each lower height as it is found
// (from the searching thread), so that a long descent shows progress.
ExactResult exact_search(const Problem& p, Objective obj, bool minimize, const ExactToggles& t, double seconds,
                         const Placement* incumbent, uint64_t seed = 0, const std::atomic<bool>* stop = nullptr,
                         const std::function<void(int64_t)>& on_lower = {});

}  // namespace sp::alloc
