// solve(): problem checks, solver dispatch, the annealing search, the `auto` portfolio, and the
// final independent validation of whatever is returned.
#include "alloc/internal/dive.h"
#include "alloc/internal/exact.h"
#include "alloc/internal/heuristics.h"
#include "alloc/internal/repair.h"
#include "alloc/internal/select_bound.h"
#include "alloc/solver.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <initializer_list>
#include <mutex>
#include <numeric>
#include <thread>

#include "alloc/validator.h"
#include "core/deadline.h"
#include "core/rng.h"

namespace sp::alloc {

Result<SolverKind> parse_solver_kind(const std::string& name) {
  static const std::pair<const char*, SolverKind> kNames[] = {
      {"greedy", SolverKind::kGreedy},         {"firstfit", SolverKind::kFirstFit}, {"bestfit", SolverKind::kBestFit},
      {"best-of-fits", SolverKind::kBestOfFits},
      {"greedy-by-size", SolverKind::kGreedyBySize}, {"sweep", SolverKind::kSweep}, {"online", SolverKind::kOnline}, {"annealing", SolverKind::kAnnealing},
      {"exact", SolverKind::kExact},           {"auto", SolverKind::kAuto}};
  for (auto& [n, k] : kNames)
    if (name == n) return k;
  return bad_input("unknown solver '" + name +
                   "' (greedy, firstfit, bestfit, best-of-fits, greedy-by-size, sweep, online, annealing, exact, auto)");
}

Status disable_exact_technique(ExactToggles& t, const std::string& name) {
  const std::pair<const char*, bool*> kToggles[] = {
      {"section_bound", &t.section_bound}, {"symmetry", &t.symmetry},       {"decompose", &t.decompose},
      {"dominance", &t.dominance},         {"lb_probe", &t.lb_probe},       {"fail_first", &t.fail_first},
      {"memo", &t.memo},                   {"lift_check", &t.lift_check},   {"memo_lift_key", &t.memo_lift_key},
      {"free_place", &t.free_place},       {"load_bound", &t.load_bound},   {"tight_holes", &t.tight_holes},
      {"restarts", &t.restarts},           {"minimalloc_dives", &t.minimalloc_dives},
      {"sparse_dives", &t.sparse_dives}};
  for (auto& [n, flag] : kToggles)
    if (name == n) {
      *flag = false;
      return ok_status();
    }
  return bad_input("unknown exact technique '" + name + "'");
}

Result<SolveOptions> solve_options(const SolveRequest& r) {
  if (r.objective != "pack" && r.objective != "select") return bad_input("--objective: " + r.objective + " not in {pack,select}");
  if (r.minimize && r.objective == "select")
    return bad_input("--minimize: applies to --objective pack only (select minimizes the spill cost)");
  auto kind = parse_solver_kind(r.solver);
  if (!kind) return bad_input("--solver: " + kind.error().message);
  if (!(r.time_limit >= 0 && r.time_limit <= 1e6)) return bad_input("--time-limit: expected seconds, a finite number 0..1e6");
  if (r.threads < 1 || r.threads > 256) return bad_input("--threads: expected an integer 1..256");
  auto used_by = [&](const char* flag, bool given, std::initializer_list<SolverKind> solvers, const char* names) {
    if (!given || std::find(solvers.begin(), solvers.end(), *kind) != solvers.end()) return ok_status();
    return Status(bad_input(std::string(flag) + ": applies to --solver " + names + " only, not " + r.solver));
  };
  for (Status st : {used_by("--exact-off", !r.exact_off.empty(), {SolverKind::kAuto, SolverKind::kExact}, "auto or exact"),
                    used_by("--threads", r.threads_given, {SolverKind::kAuto, SolverKind::kExact}, "auto or exact"),
                    used_by("--seed", r.seed_given, {SolverKind::kAuto, SolverKind::kAnnealing}, "auto or annealing"),
                    used_by("--iterations", r.iterations > 0, {SolverKind::kAuto, SolverKind::kAnnealing}, "auto or annealing")})
    if (!st) return st.error();
  SolveOptions o;
  o.solver = *kind;
  o.objective = r.objective == "select" ? Objective::kSelect : Objective::kPack;
  o.minimize = r.minimize;
  o.time_limit = r.time_limit;
  // Without --threads the exact search keeps one worker (small instances get reproducible plans)
  // and the multi-start, an anytime search that already depends on the clock, takes every core
  // (the budget is 10 s on 2 cores; docs/benchmarks.md measures both).
  o.threads = r.threads;
  o.sweep_threads = r.threads_given ? r.threads : 0;
  o.seed = r.seed;
  o.iterations = r.iterations;
  for (const auto& t : r.exact_off)
    if (Status st = disable_exact_technique(o.exact, t); !st) return bad_input("--exact-off: " + st.error().message);
  return o;
}

Result<SolveOptions> prepare_solve(Problem& p, const SolveRequest& r, const std::string& source, double spent_seconds) {
  auto o = solve_options(r);
  if (!o) return o.error();
  if (r.capacity >= 0) p.capacity = r.capacity;
  if (p.capacity == kUnbounded && !(r.minimize && r.objective == "pack"))
    return bad_input(source + ": no capacity (give --capacity N)");
  // Validating and writing the plan: 20 ms plus 1.5 us a buffer (measured after the solver:
  // about 1 us a buffer for a JSON plan at 100k and at 1M buffers).
  o->time_limit = std::max(0.0, r.time_limit - spent_seconds - 0.02 - 1.5e-6 * static_cast<double>(p.buffers.size()));
  return o;
}

const char* solver_kind_name(SolverKind k) {
  switch (k) {
    case SolverKind::kGreedy: return "greedy";
    case SolverKind::kFirstFit: return "firstfit";
    case SolverKind::kBestFit: return "bestfit";
    case SolverKind::kBestOfFits: return "best-of-fits";
    case SolverKind::kGreedyBySize: return "greedy-by-size";
    case SolverKind::kSweep: return "sweep";
    case SolverKind::kOnline: return "online";
    case SolverKind::kAnnealing: return "annealing";
    case SolverKind::kExact: return "exact";
    case SolverKind::kAuto: return "auto";
  }
  return "?";
}

namespace {

// Objective value of a plan: pack -> height if all placed (else "infinite"), select -> spill cost.
int64_t score(const Problem& p, const Placement& pl, Objective obj) {
  if (obj == Objective::kSelect) return spilled_cost(p, pl);
  return all_placed(p, pl) ? height(p, pl) : kUnbounded;
}

Placement run_heuristic(const Problem& p, SolverKind k, Size cap, const Deadline* dl) {
  switch (k) {
    case SolverKind::kGreedy: return place_greedy(p, cap, dl);
    case SolverKind::kFirstFit: return place_first_fit(p, cap, false, dl);
    case SolverKind::kBestFit: return place_first_fit(p, cap, true, dl);
    case SolverKind::kGreedyBySize: return place_greedy_by_size(p, cap, dl);
    case SolverKind::kOnline: return place_online(p, cap, dl);
    default: return place_sweep(p, cap, dl);
  }
}

// Above this many buffers `auto` skips the quadratic torch-spyre placers and the exact search:
// the sweep answers first, and iterated region repair uses the rest of the budget.
// (The exact search builds pairwise conflict lists: at 20k buffers that alone can take seconds.)
constexpr std::size_t kLargeInstance = 8000;
// From this many buffers a height minimization first spends most of the budget on the
// multi-start sweeps (below kLargeInstance the exact search gets the rest). Why: on stretched
// real traces of 6,000-8,000 buffers the exact search and annealing ended 0.3-1.5 % above the
// bound, where the multi-start gets within 0.5 % or proves the bound (docs/log/alloc-solver-log.md); below
// 2,000 the exact search settles the bundled instances within a second and keeps the budget.
constexpr std::size_t kMultiStartFrom = 2000;

// Selection at scale (large instances: the quadratic placers and the exact search do not fit the
// budget there). The sweep placer, O(n log n) a plan, decodes three orders: torch-spyre's
// first-fit order (by lifetime), the order by spill cost per byte-tick (a knapsack's value
// density: keeping a buffer costs its bytes over its whole lifetime) and the order by size; then
// noisy copies of the best order's ranks, lowest fit or tightest gap, until the deadline, keeping
// each better plan. Why: the size-order sweep alone spills more than the quadratic first-fit
// placer, and the first-fit order decoded by the sweep gives that plan in O(n log n)
// (docs/log/alloc-code-notes-log.md).
// `sweep` is the size-order lowest-fit plan the caller already has (the `sweep` solver's): it is
// the incumbent, and that decode is not repeated.
Placement select_at_scale(const Problem& p, const Placement& sweep, const Deadline& dl, uint64_t seed,
                          const std::function<void(Cost)>& report, Cost lower_bound) {
  if (dl.expired()) return {};
  const int n = static_cast<int>(p.buffers.size());
  std::vector<int> by_density(n);
  std::iota(by_density.begin(), by_density.end(), 0);
  auto density = [&](int i) {
    const Buffer& b = p.buffers[i];
    const long double area = static_cast<long double>(std::max<Size>(1, b.size)) * static_cast<long double>(b.end - b.start);
    return static_cast<long double>(spill_cost(b)) / area;
  };
  std::stable_sort(by_density.begin(), by_density.end(), [&](int a, int b) { return density(a) > density(b); });
  const std::vector<int> by_size = by_size_order(p);
  Placement best = sweep;
  Cost best_cost = spilled_cost(p, sweep);
  std::vector<int> best_order = by_size;
  bool best_fit = false;
  auto decode = [&](const std::vector<int>& order, bool tight) {
    if (dl.expired()) return;
    // (A plan cut short by the deadline spilled its tail for want of time; it is still a plan.)
    Placement pl = place_sweep_in_order(p, p.capacity, order, tight, &dl);
    keep_groups_whole(p, pl);
    const Cost c = spilled_cost(p, pl);
    if (c < best_cost) {
      best_cost = c;
      best = std::move(pl);
      best_order = order;
      best_fit = tight;
      if (report) report(c);
    }
  };
  decode(by_size, true);
  for (const auto& order : {first_fit_order(p), by_density})
    for (bool tight : {false, true}) decode(order, tight);
  // Noisy restarts around the best order: ranks jittered by a Gaussian of a few percent of n.
  Rng rng(seed);
  std::vector<double> key(n);
  const double spreads[] = {0.002, 0.01, 0.04};
  for (int round = 0; !best_order.empty() && !dl.expired() && best_cost > lower_bound; ++round) {
    const double sd = spreads[round % 3] * n;
    for (int k = 0; k < n; ++k) {
      // Box-Muller from two uniforms (deterministic for the seed on every platform)
      const double u1 = std::max(1e-12, rng.uniform()), u2 = rng.uniform();
      key[best_order[k]] = k + sd * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    }
    std::vector<int> order = best_order;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return key[a] < key[b]; });
    decode(order, round % 2 == 0 ? best_fit : !best_fit);
  }
  return best;
}

// Pairs of buffers live at once (each counted from the later start; equal starts both ways):
// what the exact search's conflict lists hold. O(n log n). Stops counting once above `limit`.
int64_t overlapping_pairs(const Problem& p, int64_t limit) {
  std::vector<Time> starts, ends;
  starts.reserve(p.buffers.size());
  ends.reserve(p.buffers.size());
  for (const Buffer& b : p.buffers) starts.push_back(b.start), ends.push_back(b.end);
  std::sort(starts.begin(), starts.end());
  std::sort(ends.begin(), ends.end());
  int64_t pairs = 0;
  for (const Buffer& b : p.buffers) {
    pairs += (std::upper_bound(starts.begin(), starts.end(), b.start) - starts.begin()) - 1 -
             (std::upper_bound(ends.begin(), ends.end(), b.start) - ends.begin());
    if (pairs > limit) break;
  }
  return pairs;
}

// Large instances with at most this many overlapping pairs per buffer are sparse: the exact
// search's conflict lists are small and its first dives cost little per node. Why 64: chains of
// activations (each buffer live with its neighbours, a few residual skips) have 1-2, the
// generated XLA and SOMAS families and the stretched real dumps 1,000-4,300 (measured at
// 12k-28k buffers).
constexpr int64_t kSparsePairsPerBuffer = 64;
bool is_sparse(const Problem& p) {
  const int64_t limit = kSparsePairsPerBuffer * static_cast<int64_t>(p.buffers.size());
  return overlapping_pairs(p, limit) <= limit;
}
// ... and up to this many buffers. Beyond, the probe does not finish a dive in a 10 s budget
// (each node scans the unplaced buffers: at 50,000 buffers it placed 14,700 in 9 s) and its
// memory grows with buffers x depth (100,000 buffers: 3 GB after 38,000 nodes in 30 s).
constexpr std::size_t kSparseProbeMax = 30000;

int multi_start_threads(const SolveOptions& o) {
  return o.sweep_threads > 0 ? o.sweep_threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// Simulated annealing over placement orders with the first-fit decoder.
Placement anneal(const Problem& p, Objective obj, Size cap, const SolveOptions& o, const Deadline& dl,
                 const std::atomic<bool>* stop) {
  const int n = static_cast<int>(p.buffers.size());
  std::vector<int> order;
  if (obj == Objective::kSelect) {
    order = first_fit_order(p);
  } else {
    order.resize(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p.buffers[a].size > p.buffers[b].size; });
  }
  Placement cur = place_in_order(p, cap, order, &dl), best = cur;
  if (n < 2) return best;
  int64_t cur_v = score(p, cur, obj), best_v = cur_v;
  Rng rng(o.seed);
  const int64_t budget = o.iterations > 0 ? o.iterations : INT64_MAX;
  double t0 = std::max(1.0, 0.02 * static_cast<double>(std::min<int64_t>(cur_v, kUnbounded / 2)));
  auto floor_of = [&](const Problem& q) -> int64_t { return obj == Objective::kSelect ? selection_lower_bound(q) : max_load(q); };
  const int64_t floor_v = !has_in_place(p) ? floor_of(p)
                          : std::max(floor_of(handoff_relaxation(p)),
                                     obj == Objective::kSelect ? floor_of(handoff_relaxation(p, Handoff::kParentEarly)) : 0);
  for (int64_t it = 0; it < budget && best_v > floor_v; ++it) {  // stop once provably optimal
    // The limit holds with --iterations too (a run it cuts short is no longer seed-determined).
    if (dl.expired() || (stop && stop->load())) break;  // a decode costs far more than a clock read
    double frac = o.iterations > 0 ? static_cast<double>(it) / static_cast<double>(budget)
                                   : std::min(1.0, dl.elapsed_seconds() / std::max(1e-3, o.time_limit));
    double temp = t0 * std::pow(1e-3, frac);
    int a = static_cast<int>(rng.below(n)), b = static_cast<int>(rng.below(n));
    if (a == b) continue;
    std::vector<int> next = order;
    if (rng.chance(0.5)) {
      std::swap(next[a], next[b]);
    } else {
      int v = next[a];
      next.erase(next.begin() + a);
      next.insert(next.begin() + b, v);
    }
    Placement cand = place_in_order(p, cap, next, &dl);
    int64_t v = score(p, cand, obj);
    if (v <= cur_v || rng.uniform() < std::exp(-static_cast<double>(v - cur_v) / temp)) {
      order.swap(next);
      cur = std::move(cand);
      cur_v = v;
      if (v < best_v) {
        best_v = v;
        best = cur;
      }
    }
  }
  return best;
}

// Time kept back from the repair phase for the final validation of the result (the validator
// is O(n log n): about 0.5 s for a million buffers), scaled from the elapsed heuristics' time.
// The validator costs about as much as the online placer (both O(n log n) over ordered sets).
double repair_reserve(double first_placer_seconds) { return 0.05 + 1.2 * first_placer_seconds; }

struct Candidate {
  Placement pl;
  std::string solver;
  int64_t value = kUnbounded;
};

// Collects candidate plans and reports each one better than all before (SolveOptions::on_improvement).
struct Pool {
  std::vector<Candidate>& c;
  const SolveOptions& o;
  const Deadline& dl;
  int64_t lower_bound = 0;
  int64_t best = kUnbounded;
  std::mutex mu;  // the exact search and the multi-start may report from two threads
  void report(int64_t v, const std::string& name) {
    std::lock_guard<std::mutex> lock(mu);
    if (v >= best || v >= kUnbounded) return;
    best = v;
    if (o.on_improvement) o.on_improvement({dl.elapsed_seconds(), name, v, lower_bound});
  }
};

// One solve() call: the problem, its bounds, the candidate plans and the strategies that add to
// them. solve() picks the strategies (its policy table); finish() picks and validates the best.
class Solve {
 public:
  // `dl` started when solve() did: the problem's checks count against the limit too.
  Solve(const Problem& p, const SolveOptions& o, const Deadline& dl)
      : p(p), o(o), dl(dl), obj(o.objective), pack(obj == Objective::kPack),
        hcap(pack ? kUnbounded : p.capacity), has_ip(has_in_place(p)),
        // (For a pack every buffer is kept, and the child-late relaxation is the tighter one; a
        // selection takes the better of both.)
        relaxed(has_ip ? handoff_relaxation(p) : Problem{}),
        relaxed_pe(has_ip && !pack ? handoff_relaxation(p, Handoff::kParentEarly) : Problem{}),
        pool{cands, o, dl, 0, kUnbounded, {}} {}

  // Bounds; false when the pack is infeasible by them (the result is then final).
  bool bound();
  // The strategies.
  void chosen_solver();   // a named solver, with the online placer as its fallback (pack)
  void best_of_fits(const Deadline* limit);  // bestfit and firstfit: the better plan is the candidate
  void auto_portfolio();  // auto: first answers, then the regime's improvement phase
  SolveResult finish_infeasible_by_bound();
  Result<SolveResult> finish(bool grouped);

 private:
  const Problem& p;
  const SolveOptions& o;
  const Deadline dl;
  const Objective obj;
  const bool pack;
  const Size hcap;  // heuristics pack without a ceiling, then compare
  // With in-place edges every bound is taken on the hand-off relaxation: the max load of `p`
  // counts a parent and its child twice at the hand-off tick, where a valid plan holds the
  // parent's footprint once (docs/alloc.md).
  const bool has_ip;
  const Problem relaxed, relaxed_pe;
  Size lb_pack = 0;
  SolveResult res;
  std::vector<Candidate> cands;
  Pool pool;
  bool exact_complete = false, exact_infeasible = false;
  double first_placer_s = 0;  // wall time of the first heuristic (sizes the validation reserve)
  int64_t exact_lb = 0;
  bool auto_anneal = false;  // auto: a short annealing pass before the exact search
  Placement anneal_inc;
  int64_t work = 0;  // work units spent (SolveOptions::work_limit)

  // A stage's share `f` of what `d` has left: by time, f of its seconds; by work (work_limit), f of
  // the work left, and the stage keeps the whole of d as its guard, so that the clock does not
  // decide where it stops.
  struct Share {
    double seconds;
    int64_t nodes;
  };
  Share share_of(const Deadline& d, double f) const {
    const double left = std::max(0.0, d.remaining_seconds());
    if (o.work_limit <= 0) return {f * left, INT64_MAX};
    return {left, static_cast<int64_t>(f * static_cast<double>(std::max<int64_t>(0, o.work_limit - work)))};
  }
  const Problem& bounded() const { return has_ip ? relaxed : p; }
  const Candidate& best_candidate() const {
    return *std::min_element(cands.begin(), cands.end(), [](auto& a, auto& b) { return a.value < b.value; });
  }
  void consider(Placement pl, const std::string& name);
  void consider_if_valid(Placement pl);
  ExactResult probe_at_bound(double secs);
  ExactResult par_exact(const Problem& q, bool mini, double secs, const Placement* inc, int64_t node_limit = INT64_MAX);
  void exact_on_restriction(double secs, int64_t nodes);
  const Placement* anneal_pass(const Placement* inc);
  void run_exact(const Placement* inc, double seconds, bool lb_probe = true);
  void exact_pack_at_capacity(double seconds, double share);
  void exact_pack_minimize(const Placement* inc, double seconds, bool lb_probe, double share);
  void exact_select(const Placement* inc, double seconds, double share);
  // auto's phases, in the order auto_portfolio() tries them.
  void first_answers(bool large, bool sweeps_next);
  bool sparse_dives(bool sparse, bool large);
  void large_select();
  void large_pack(bool sparse);
  void large_pack_sparse_minimize(Placement cur, double usable);
  bool sparse_probe();
  void sweeps_then_exact(bool sparse);
};

void Solve::consider(Placement pl, const std::string& name) {
  if (obj == Objective::kSelect) keep_groups_whole(p, pl);  // (a pack places every member anyway)
  int64_t v = score(p, pl, obj);
  cands.push_back({std::move(pl), name, v});
  pool.report(v, name);
}

// A plan of a derived problem (a relaxation, the restriction) counts only when it is valid here.
void Solve::consider_if_valid(Placement pl) {
  if (!pack) keep_groups_whole(p, pl);
  if (validate(p, pl, pack, pack ? kUnbounded : -1).ok()) consider(std::move(pl), "exact");
}

bool Solve::bound() {
  lb_pack = max_load(bounded());
  Size biggest = 0;
  for (const Buffer& b : p.buffers)
    if (b.residency_reason.empty()) biggest = std::max(biggest, b.size);
  lb_pack = std::max(lb_pack, biggest);
  const Cost lb_sel = pack ? 0 : std::max(selection_lower_bound(bounded()), has_ip ? selection_lower_bound(relaxed_pe) : 0);
  res.lower_bound = pack ? lb_pack : lb_sel;
  pool.lower_bound = res.lower_bound;
  exact_lb = res.lower_bound;
  // A pack whose lower bound is above the capacity is infeasible: answer before any heuristic runs
  // (they place below kUnbounded = 2^61, which one buffer of up to 2^62 bytes can exceed).
  return !(pack && lb_pack > p.capacity);
}

SolveResult Solve::finish_infeasible_by_bound() {
  res.placement.offsets.assign(p.buffers.size(), kSpilled);
  res.placement.spill_reasons.assign(p.buffers.size(), "no plan found");
  res.solver = solver_kind_name(o.solver);
  res.proven_infeasible = true;
  res.seconds = dl.elapsed_seconds();
  return res;
}

// The exact search at the max-load capacity from scratch, on one thread (sparse instances):
// a plan it finds is optimal. MiniMalloc's branching (the lowest buffer first, no fail-first
// holes) gets the first 40 %, then the default search the rest. Why: on some chains only
// lowest-first packs at the bound in time, on others only fail-first
// (docs/log/alloc-code-notes-log.md).
ExactResult Solve::probe_at_bound(double secs) {
  Problem q = p;
  q.capacity = lb_pack;
  const Deadline probe(std::max(0.0, secs));
  if (!o.exact.fail_first) return exact_search(q, obj, false, o.exact, probe.remaining_seconds(), nullptr);
  ExactToggles lowest_first = o.exact;
  lowest_first.fail_first = false;
  ExactResult first = exact_search(q, obj, false, lowest_first, 0.4 * probe.remaining_seconds(), nullptr);
  if (first.found || first.complete) return first;
  ExactResult then = exact_search(q, obj, false, o.exact, std::max(0.0, probe.remaining_seconds()), nullptr);
  then.nodes += first.nodes;
  return then;
}

// Exact search on `threads` workers with different restart seeds; the first to finish
// (a plan for a fixed-capacity pack, or a completed search) stops the others.
ExactResult Solve::par_exact(const Problem& q, bool mini, double secs, const Placement* inc, int64_t node_limit) {
  secs = std::max(0.0, secs);  // a spent budget must not read as "no limit" (Deadline(-1))
  const int T = std::max(1, o.threads);
  // Lower heights of a descent are reported as found (a relaxed problem's are not plans of p).
  std::function<void(int64_t)> on_lower;
  if (mini && &q == &p) on_lower = [&](int64_t h) { pool.report(h, "exact"); };
  if (T == 1) return exact_search(q, obj, mini, o.exact, secs, inc, 0, nullptr, on_lower, node_limit);
  std::atomic<bool> stop{false};
  std::vector<ExactResult> rs(T);
  run_workers(T, [&](int t) {
    rs[t] = exact_search(q, obj, mini, o.exact, secs, inc, static_cast<uint64_t>(t), &stop, on_lower, node_limit);
    if (rs[t].complete || (rs[t].found && obj == Objective::kPack && !mini)) stop = true;
  });
  ExactResult best = rs[0];
  int64_t nodes = 0;
  bool complete = false;
  for (auto& r : rs) {
    nodes += r.nodes;
    complete = complete || r.complete;
    if (r.found && (!best.found || r.value < best.value)) best = r;
  }
  best.nodes = nodes;
  best.complete = complete;
  return best;
}

// The hand-off restriction's exact plan, expanded: every chain of hand-offs at one base.
void Solve::exact_on_restriction(double secs, int64_t nodes) {
  std::vector<int> merged_of;
  Problem m = handoff_restriction(p, merged_of);
  if (m.buffers.size() == p.buffers.size() || !check_problem(m)) return;
  ExactResult e = par_exact(m, pack && o.minimize, secs, nullptr, nodes);
  res.nodes += e.nodes;
  work += e.nodes;
  if (!e.found) return;
  Placement pl;
  pl.offsets.resize(p.buffers.size());
  pl.spill_reasons.resize(p.buffers.size());
  for (std::size_t i = 0; i < p.buffers.size(); ++i) {
    pl.offsets[i] = e.placement.offsets[merged_of[i]];
    pl.spill_reasons[i] = e.placement.spill_reasons[merged_of[i]];
  }
  consider_if_valid(std::move(pl));
}

// auto: a short annealing pass on problems too big to settle by search alone may improve the
// incumbent (select, or pack-min after the lower-bound probe failed).
const Placement* Solve::anneal_pass(const Placement* inc) {
  if (!auto_anneal || p.buffers.size() <= 64) return inc;
  SolveOptions so = o;
  so.time_limit = std::clamp(0.1 * dl.remaining_seconds(), 0.0, 0.5);
  if (o.work_limit > 0) {  // by work: a tenth of the work left in moves (a move decodes every buffer)
    const int64_t n = static_cast<int64_t>(p.buffers.size());
    so.iterations = share_of(dl, 0.1).nodes / n;
    if (so.iterations <= 0) return inc;
    so.time_limit = std::max(0.0, dl.remaining_seconds());
    work += so.iterations * n;
  }
  Deadline sa_dl(so.time_limit);
  Placement sa = anneal(p, obj, hcap, so, sa_dl, nullptr);
  const int64_t v = score(p, sa, obj), inc_v = inc ? score(p, *inc, obj) : kUnbounded;
  consider(sa, "annealing");
  if (v >= inc_v || (pack && v > p.capacity)) return inc;
  anneal_inc = std::move(sa);
  return &anneal_inc;
}

// The exact search treats an in-place pair as an ordinary conflict, so its plans are valid but
// its proofs ignore hand-offs. With in-place edges, proofs come from the hand-off relaxations
// instead (problem.h); their optima are lower bounds, and their plans are used too when the
// validator accepts them for the real problem.
// lb_probe: first look for a plan at the max-load bound (skipped after a multi-start, which
// stops there when it finds one).
void Solve::run_exact(const Placement* inc, double seconds, bool lb_probe) {
  const double share = has_ip ? 0.5 : 1.0;
  if (pack && !o.minimize) return exact_pack_at_capacity(seconds, share);
  if (pack) return exact_pack_minimize(inc, seconds, lb_probe, share);
  exact_select(inc, seconds, share);
}

void Solve::exact_pack_at_capacity(double seconds, double share) {
  if (lb_pack > p.capacity) {
    exact_complete = exact_infeasible = true;
    return;
  }
  ExactResult e = par_exact(p, false, seconds * share, nullptr);
  res.nodes += e.nodes;
  if (e.found) consider(e.placement, "exact");
  if (e.found || !e.complete) return;
  if (has_ip) {
    ExactResult r = par_exact(relaxed, false, seconds * share, nullptr);
    res.nodes += r.nodes;
    if (r.found) consider_if_valid(r.placement);
    e = r;
  }
  if (!e.found && e.complete) exact_complete = exact_infeasible = true;
}

void Solve::exact_pack_minimize(const Placement* inc, double seconds, bool lb_probe, double share) {
  const Problem& proof = bounded();
  double t_start = dl.elapsed_seconds();
  if (lb_probe && o.exact.lb_probe && lb_pack <= p.capacity) {  // most real instances pack at the max load
    Problem q = p;
    q.capacity = lb_pack;
    ExactResult e = par_exact(q, false, seconds * 0.5, nullptr);
    res.nodes += e.nodes;
    if (e.found) {
      consider(e.placement, "exact");
      exact_complete = true;
      return;
    }
    if (e.complete && !has_ip) exact_lb = lb_pack + 1;
  }
  inc = anneal_pass(inc);
  double left = std::max(0.0, seconds - (dl.elapsed_seconds() - t_start));
  ExactResult e = par_exact(p, true, left * share, inc);
  res.nodes += e.nodes;
  if (e.found) consider(e.placement, "exact");
  if (has_ip) {
    ExactResult r = par_exact(proof, true, std::max(0.0, dl.remaining_seconds()), nullptr);
    res.nodes += r.nodes;
    if (r.found) consider_if_valid(r.placement);
    e = r;
    if (e.complete && e.found) exact_lb = std::max<int64_t>(exact_lb, e.value);
    if (e.complete && !e.found) exact_infeasible = true;
    return;
  }
  if (e.complete) {
    exact_complete = true;
    if (!e.found) exact_infeasible = true;
  }
}

// A selection keeps to `seconds` (callers reserve time for the validation after it).
void Solve::exact_select(const Placement* inc, double seconds, double share) {
  const Deadline sdl(std::max(0.0, seconds));
  Placement relax_plan;
  if (o.exact.load_bound) {
    // Load relaxation (addresses ignored): its optimum is a lower bound. If its optimal set
    // packs at the capacity, that plan meets the bound and is optimal.
    const Cost upper = inc ? score(p, *inc, obj) : kUnbounded;
    const Share lr_share = share_of(sdl, 0.25);
    LoadRelaxation lr = load_relaxation(p, upper, lr_share.seconds, lr_share.nodes);
    work += lr.nodes;
    exact_lb = std::max<int64_t>(exact_lb, lr.bound);
    if (lr.bound >= upper) {  // the incumbent is optimal
      if (inc) consider(*inc, "exact");  // (kExact has no other candidate)
      return;
    }
    if (lr.found) {
      Problem q = p;
      for (std::size_t i = 0; i < q.buffers.size(); ++i)
        if (lr.spill[i] && q.buffers[i].residency_reason.empty())
          q.buffers[i].residency_reason = q.buffers[i].size > p.capacity
                                              ? "larger than capacity " + std::to_string(p.capacity)
                                              : "spilled by exact selection: no room within capacity " + std::to_string(p.capacity);
      const Share pk = share_of(sdl, 0.25);
      ExactResult e = exact_search(q, Objective::kPack, false, o.exact, pk.seconds, nullptr, 0, nullptr, {}, pk.nodes);
      res.nodes += e.nodes;
      work += e.nodes;
      if (e.found) {  // (spill reasons: the ones set on q)
        consider(e.placement, "exact");
        if (spilled_cost(p, e.placement) <= exact_lb) return;
        relax_plan = e.placement;  // (a copy: cands may reallocate)
        inc = &relax_plan;
      }
    }
  }
  inc = anneal_pass(inc);
  const Share main = share_of(sdl, share);
  ExactResult e = par_exact(p, false, main.seconds, inc, main.nodes);
  res.nodes += e.nodes;
  work += e.nodes;
  if (e.found) consider(e.placement, "exact");
  if (!has_ip) {
    exact_complete = e.complete && e.found;
    return;
  }
  // Plans with every hand-off chain at one base (the exact search itself knows no hand-offs),
  // then bounds from both hand-off relaxations (each is loose where the other is exact).
  const Share rs = share_of(sdl, 0.3);
  exact_on_restriction(rs.seconds, rs.nodes);
  const Share rl = share_of(sdl, 0.5);
  ExactResult r = par_exact(relaxed, false, rl.seconds, nullptr, rl.nodes);
  res.nodes += r.nodes;
  work += r.nodes;
  if (r.found) consider_if_valid(r.placement);
  if (r.complete && r.found) exact_lb = std::max<int64_t>(exact_lb, r.value);
  const Share rp = share_of(sdl, 1.0);
  ExactResult r2 = par_exact(relaxed_pe, false, rp.seconds, nullptr, rp.nodes);
  res.nodes += r2.nodes;
  work += r2.nodes;
  if (r2.found) consider_if_valid(r2.placement);
  if (r2.complete && r2.found) exact_lb = std::max<int64_t>(exact_lb, r2.value);
}

// Every solver but auto answers at every size: a pack whose chosen solver does not finish
// within the limit (a quadratic placer, annealing's first-fit decoder, the exact search at
// 100k buffers) falls back on the online placer's plan, made first (O(n log n), about a second
// at 1M buffers) and used only when the chosen solver has no complete plan.
void Solve::chosen_solver() {
  Placement fallback;
  if (pack && o.solver != SolverKind::kOnline) {
    fallback = run_heuristic(p, SolverKind::kOnline, hcap, nullptr);
    first_placer_s = dl.elapsed_seconds();
  }
  // What the chosen solver may use of the limit: the rest, less the final validation's time.
  const Deadline chosen(std::max(0.0, dl.remaining_seconds() - (pack ? repair_reserve(first_placer_s) - 0.05 : 0.0)));
  switch (o.solver) {
    case SolverKind::kAnnealing:
      consider(anneal(p, obj, hcap, o, pack ? chosen : dl, nullptr), "annealing");
      break;
    case SolverKind::kBestOfFits:
      best_of_fits(!pack ? &dl : &chosen);
      break;
    case SolverKind::kExact: {
      // (Under the deadline: a selection's incumbent cut short is still a plan; a pack's is no incumbent.)
      Placement inc = place_greedy_by_size(p, hcap, pack ? &chosen : &dl);
      const Placement* incp = pack ? (all_placed(p, inc) && height(p, inc) <= p.capacity ? &inc : nullptr) : &inc;
      if (!incp && pack && !fallback.offsets.empty() && all_placed(p, fallback) && height(p, fallback) <= p.capacity)
        incp = &fallback;
      // A selection keeps back what the final validation and the search's teardown take: at 50k
      // random buffers the search overran a 3 s limit by 0.5 s on a busy machine; a quarter of
      // the greedy incumbent's time (0.2 s there) keeps it inside and leaves the load
      // relaxation its share (its bound: 0.43 G, against 0.02 G with a full repair reserve).
      run_exact(incp, pack ? chosen.remaining_seconds() : dl.remaining_seconds() - 0.05 - 0.25 * dl.elapsed_seconds());
      // A selection always has an answer: the search's incumbent when it found nothing better in time.
      if (!pack) consider(std::move(inc), "exact");
      break;
    }
    default:
      // (The online placer is the fallback itself: it always runs to the end.)
      consider(run_heuristic(p, o.solver, hcap, !pack ? &dl : o.solver == SolverKind::kOnline ? nullptr : &chosen),
               solver_kind_name(o.solver));
  }
  if (!fallback.offsets.empty() &&
      std::none_of(cands.begin(), cands.end(), [&](const Candidate& c) { return c.value < kUnbounded && all_placed(p, c.pl); }))
    consider(std::move(fallback), std::string("online (") + solver_kind_name(o.solver) + " found no plan in time)");
}

// torch-spyre's two placers, one candidate: the better plan, bestfit on a tie (a selection's
// groups kept whole before comparing). The fast answer of the LX co-optimizer's local search.
void Solve::best_of_fits(const Deadline* limit) {
  Placement best_fit = run_heuristic(p, SolverKind::kBestFit, hcap, limit);
  Placement first_fit = run_heuristic(p, SolverKind::kFirstFit, hcap, limit);
  if (!pack) {
    keep_groups_whole(p, best_fit);
    keep_groups_whole(p, first_fit);
  }
  if (score(p, first_fit, obj) < score(p, best_fit, obj)) consider(std::move(first_fit), "firstfit");
  else consider(std::move(best_fit), "bestfit");
}

// auto's policy. A valid answer first (first_answers), then one improvement phase chosen by the
// problem: (size, objective, sparsity) -> phase
//   any, the best plan already meets the bound (or the capacity, at a fixed pack) -> stop
//   pack, sparse, from 2,000 buffers              -> canonical dives at the bound (then on)
//   above 8,000 buffers, select                   -> load relaxation bound, then select_at_scale
//   above 8,000 buffers, pack                     -> large_pack (multi-start or region repair)
//   2,000-8,000, sparse pack                      -> exact probe at the bound (then on)
//   2,000-8,000, pack --minimize                  -> multi-start, then exact beside it
//   otherwise (small, or select)                  -> exact search (with a short annealing pass)
void Solve::auto_portfolio() {
  const bool large = p.buffers.size() > kLargeInstance;
  const bool sweeps_next = !large && pack && o.minimize && p.buffers.size() >= kMultiStartFrom;
  first_answers(large, sweeps_next);
  auto done = [&] {
    const int64_t v = best_candidate().value;
    return pack ? (v <= p.capacity && (!o.minimize || v <= res.lower_bound)) : v <= res.lower_bound;
  };
  if (done()) return;
  const bool sparse = pack && (large || sweeps_next) && is_sparse(p);
  if (sparse_dives(sparse, large)) return;
  if (large && !pack) return large_select();
  if (large) return large_pack(sparse);
  if (sparse && best_candidate().value <= p.capacity && sparse_probe()) return;
  if (sweeps_next && best_candidate().value <= p.capacity) return sweeps_then_exact(sparse);
  auto_anneal = true;
  Placement inc = best_candidate().pl;
  const int64_t inc_v = best_candidate().value;
  const Placement* incp = pack ? (inc_v <= p.capacity ? &inc : nullptr) : &inc;
  run_exact(incp, dl.remaining_seconds());
}

// A valid answer first: the first placer runs to completion whatever the limit (there is
// always an answer), later ones stop at the deadline (a plan cut short is no candidate).
void Solve::first_answers(bool large, bool sweeps_next) {
  if (!large) {
    // Greedy-by-size (indexed, near-linear) first; then the quadratic torch-spyre placers.
    // Ties keep the earlier plan: the first-fit family first (it honours in-place hand-offs).
    // (The sweep is not a candidate here: with it, the selection incumbent of Stream/100
    // changes and the load relaxation's search took 8x longer.)
    // (When the multi-start follows, the quadratic placers are skipped: at 8,000 buffers
    // they took 0.7 s and ended 4-7 % above the bound, which its first round beats.)
    Placement by_size = run_heuristic(p, SolverKind::kGreedyBySize, hcap, nullptr);
    pool.report(score(p, by_size, obj), "greedy-by-size");
    if (!sweeps_next)
      for (SolverKind k : {SolverKind::kFirstFit, SolverKind::kBestFit})
        consider(run_heuristic(p, k, hcap, &dl), solver_kind_name(k));
    consider(std::move(by_size), "greedy-by-size");
    if (!sweeps_next) consider(run_heuristic(p, SolverKind::kGreedy, hcap, &dl), "greedy");
  } else if (!pack) {
    // Selection: the size-order sweep is the first answer. Why: the online placer's plan
    // spills more, and one sweep takes most of a short budget at 200k buffers, so the online
    // placer first left it no time to finish (docs/log/alloc-code-notes-log.md).
    // A sweep cut short by the deadline is still a plan (it spills what it did not reach,
    // the smallest buffers in size order), so it needs no guaranteed placer before it; it
    // gets the deadline the `sweep` solver alone gets. The reserve of what follows keeps
    // time for the final validation (about 0.5 us a buffer).
    first_placer_s = 0.5e-6 * static_cast<double>(p.buffers.size());
    consider(run_heuristic(p, SolverKind::kSweep, hcap, &dl), "sweep");
    pool.report(cands.back().value, "sweep");
  } else {
    // The O(n log n) online placer, then the sweep under a deadline that leaves time for
    // the final validation. (Greedy-by-size is skipped: the multi-start orders below
    // dominate it on these sizes.)
    Placement online = run_heuristic(p, SolverKind::kOnline, hcap, nullptr);
    pool.report(score(p, online, obj), "online");
    first_placer_s = dl.elapsed_seconds();
    // With --minimize the size-order sweep is skipped: the lower-bound-guided multi-start
    // below starts at once with its best order (measured on the XLA family: one size-order
    // sweep is 1.5 s at 50k and 3 s at 100k, and never ended best).
    if (!(pack && o.minimize)) {
      const Deadline work(std::max(0.0, dl.remaining_seconds() - repair_reserve(first_placer_s)));
      consider(run_heuristic(p, SolverKind::kSweep, hcap, &work), "sweep");
    }
    consider(std::move(online), "online");
  }
}

// Sparse pack (chains of activations, each buffer live with a few others): canonical dives
// at the max-load bound first (at most half of the budget; about 0.3 s for 100,000
// buffers). Why: they pack the generated chains of 5,000-100,000 buffers at the bound in
// 0.01-0.3 s, where the multi-start ends 15-30 % above it and the exact search's nodes
// scan every unplaced buffer (docs/log/alloc-solver-log.md). True when a dive's plan ends the solve.
bool Solve::sparse_dives(bool sparse, bool /*large*/) {
  if (!sparse || !o.exact.sparse_dives) return false;
  const Deadline ddl(0.5 * std::max(0.0, dl.remaining_seconds()));
  Placement dive = dive_portfolio(p, lb_pack, ddl);
  if (dive.offsets.empty() || height(p, dive) >= best_candidate().value) return false;
  const Size h = height(p, dive);
  consider(std::move(dive), "dive");
  return h <= p.capacity && (!o.minimize || h <= res.lower_bound);
}

// Select: first the load relaxation's bound with a fifth of the budget (the per-instant
// bound alone can be far below: 23.6 M against the relaxation's 122.7 M on 10k random
// buffers at 60 % of the max load), so that progress is measured against it; then sweep
// decodes of better orders, from the sweep's plan.
void Solve::large_select() {
  const double share = std::max(0.0, 0.2 * (dl.remaining_seconds() - repair_reserve(first_placer_s)));
  if (o.exact.load_bound && share >= 0.02) {
    LoadRelaxation lr = load_relaxation(p, best_candidate().value, share);
    exact_lb = std::max<int64_t>(exact_lb, lr.bound);
    std::lock_guard<std::mutex> lock(pool.mu);
    pool.lower_bound = std::max<int64_t>(pool.lower_bound, lr.bound);
  }
  if (best_candidate().value <= exact_lb) return;
  const Deadline sdl(std::max(0.0, dl.remaining_seconds() - repair_reserve(first_placer_s)));
  Placement sel = select_at_scale(p, cands.front().pl, sdl, o.seed, [&](Cost c) { pool.report(c, "select-orders"); },
                                  exact_lb);
  if (!sel.offsets.empty()) consider(std::move(sel), "select-orders");
}

// Pack: lower the height by region repair for the rest of the budget (at a fixed capacity,
// only while the best plan is above it); with --minimize, whole-instance sweeps in
// lower-bound-guided orders instead.
void Solve::large_pack(bool sparse) {
  if (best_candidate().value >= kUnbounded) return;
  const double usable = std::max(0.0, dl.remaining_seconds() - repair_reserve(first_placer_s));
  if (usable <= 0) return;  // no time left to improve: skip copying a million-entry plan
  Placement cur = best_candidate().pl;
  if (o.minimize) {
    // (Region repair gets no share here: it has not lowered a minimized plan on any family.)
    if (p.buffers.size() > kSparseProbeMax || !sparse) {
      const Size before = height(p, cur);
      Deadline mdl(usable);
      cur = multi_start(p, cur, mdl, o.seed, [&](Size h) { pool.report(h, "multi-start"); }, multi_start_threads(o), sparse,
                        o.iterations);
      if (height(p, cur) < before) consider(std::move(cur), "multi-start");
      return;
    }
    return large_pack_sparse_minimize(std::move(cur), usable);
  }
  Deadline rdl(std::max(0.0, dl.remaining_seconds() - repair_reserve(first_placer_s)));
  RepairStats rs = repair_height(p, cur, std::max(lb_pack, p.capacity), rdl, o.seed, [&](Size h) { pool.report(h, "repair"); });
  res.nodes += rs.repairs;
  if (rs.improvements > 0) consider(std::move(cur), "repair");
}

// Sparse: after a tenth of the budget of multi-start (at most 1 s: its two-sided
// attempts settle plain chains within milliseconds), the exact search probes the
// max-load bound beside it (one thread each; on one thread the probe first, for 40 %
// of what is left). Why: on chains with residual skips every order of the multi-start
// ends far above the bound, while the exact search's first dive packs them at the
// bound with hardly a backtrack (docs/log/alloc-code-notes-log.md). A plan of the probe
// (at the bound: optimal) stops the multi-start and is preferred to the multi-start's;
// the multi-start does not stop the probe, so which plan is returned does not depend on
// which thread is faster.
// With --iterations: the multi-start's rounds first, then the probe alone (a plan it
// finds does not depend on the clock, only whether it finds one in time does).
void Solve::large_pack_sparse_minimize(Placement cur, double usable) {
  const bool sparse = true;
  const Size before = height(p, cur);
  const int workers = multi_start_threads(o);
  auto report = [&](Size h) { pool.report(h, "multi-start"); };
  Deadline warm(o.iterations > 0 ? usable : std::min(1.0, 0.1 * usable));
  cur = multi_start(p, cur, warm, o.seed, report, workers, sparse, o.iterations);
  if (height(p, cur) <= lb_pack || dl.expired()) {
    if (height(p, cur) < before) consider(std::move(cur), "multi-start");
    return;
  }
  const double rest = std::max(0.0, dl.remaining_seconds() - repair_reserve(first_placer_s));
  if (o.iterations > 0) {
    ExactResult probe = probe_at_bound(rest);
    res.nodes += probe.nodes;
    if (probe.found) consider(std::move(probe.placement), "exact");
    if (height(p, cur) < before) consider(std::move(cur), "multi-start");
    return;
  }
  std::atomic<bool> stop_sweeps{false};
  ExactResult probe;
  Placement more;
  if (workers >= 2) {
    run_workers(2, [&](int k) {
      if (k == 0) {
        probe = probe_at_bound(rest);
        // Ctrl-C reaches this thread's deadlines; pass it on to the sweeps' own flag.
        const Deadline here(rest);
        if (probe.found) stop_sweeps = true;
        while (!stop_sweeps.load() && !here.expired()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        stop_sweeps = true;
      } else {
        CancelScope scope(&stop_sweeps);
        Deadline mdl(rest);
        more = multi_start(p, cur, mdl, o.seed + 1, report, workers - 1, sparse);
        stop_sweeps = true;  // (ends the waiting above)
      }
    });
  } else {
    probe = probe_at_bound(0.4 * rest);
    if (!probe.found) {
      Deadline mdl(std::max(0.0, dl.remaining_seconds() - repair_reserve(first_placer_s)));
      more = multi_start(p, cur, mdl, o.seed + 1, report, 1, sparse);
    }
  }
  res.nodes += probe.nodes;
  if (probe.found) consider(std::move(probe.placement), "exact");
  if (height(p, cur) < before) consider(std::move(cur), "multi-start");
  if (!more.offsets.empty() && all_placed(p, more)) consider(std::move(more), "multi-start");
}

// Sparse (as above the large threshold): first the exact search at the max-load bound
// for a quarter of the budget. Why: on chains with residual skips its first dive packs
// them at the bound in milliseconds, while the path below (the multi-start, then the
// exact search beside it to the limit) answered the same plan only at the limit.
// True when its plan ends the solve.
bool Solve::sparse_probe() {
  ExactResult probe = probe_at_bound(0.25 * dl.remaining_seconds());
  res.nodes += probe.nodes;
  if (!probe.found) return false;
  consider(std::move(probe.placement), "exact");
  return true;
}

// The multi-start on every worker for 45 % of what is left (it stops at the max-load
// bound), then the exact search from its plan beside the multi-start on the other
// workers (on one thread: more multi-start only while it still improves, then the exact
// search). Neither stops the other at the bound: the run then ends at the limit with a
// proven plan. Why both: on some families the multi-start keeps improving and the exact
// search never lowers its plan, on others the multi-start stalls and the exact search's
// dives from its plan get much closer (docs/log/alloc-code-notes-log.md).
void Solve::sweeps_then_exact(bool sparse) {
  double last_gain = dl.elapsed_seconds();  // when the multi-start last lowered the height
  auto report = [&](Size h) {
    last_gain = dl.elapsed_seconds();
    pool.report(h, "multi-start");
  };
  const int workers = multi_start_threads(o);
  const double start = dl.elapsed_seconds();
  // With --iterations: its rounds only (the exact search after it is bounded by the clock).
  Deadline first((o.iterations > 0 ? 1.0 : 0.45) * std::max(0.0, dl.remaining_seconds()));
  const int64_t incumbent = best_candidate().value;
  Placement cur = multi_start(p, best_candidate().pl, first, o.seed, report, workers, sparse, o.iterations);
  Size h = height(p, cur);
  if (h < incumbent) consider(cur, "multi-start");
  if (h <= res.lower_bound || o.iterations > 0) return;  // at the max-load bound: optimal
  Placement more;
  const double rest = std::max(0.0, dl.remaining_seconds());
  if (workers >= 2) {
    run_workers(2, [&](int k) {
      if (k == 0) {
        run_exact(&cur, rest, false);  // (on the calling thread: it adds candidates)
      } else {
        Deadline d(rest);
        more = multi_start(p, cur, d, o.seed + 1, report, workers - 1, sparse);
      }
    });
  } else {  // one thread: more multi-start only if it still improved in its second half
    const double now = dl.elapsed_seconds();
    if (last_gain >= 0.5 * (start + now)) {
      Deadline d(0.5 * rest);
      more = multi_start(p, cur, d, o.seed + 1, report, 1, sparse);
    }
    run_exact(!more.offsets.empty() && height(p, more) < h ? &more : &cur, std::max(0.0, dl.remaining_seconds()), false);
  }
  if (!more.offsets.empty() && height(p, more) < h) consider(std::move(more), "multi-start");
}

// Picks the best candidate, then runs the independent validator on it (once: for a million
// buffers a validation costs about half a second). An invalid plan is an internal error.
Result<SolveResult> Solve::finish(bool grouped) {
  int best = -1;
  for (std::size_t i = 0; i < cands.size(); ++i) {
    if (pack && cands[i].value >= kUnbounded) continue;  // cut short by the deadline: not a plan
    // Equal objective: prefer more in-place hand-offs (torch-spyre's preference), then list order.
    if (best >= 0 && (cands[i].value > cands[best].value ||
                      (cands[i].value == cands[best].value &&
                       in_place_handoffs(p, cands[i].pl) <= in_place_handoffs(p, cands[best].pl))))
      continue;
    // A heuristic that could not place every buffer below 2^61 (huge alignments or fixed offsets)
    // has no plan to offer; that is not an invalid plan.
    if (pack && !all_placed(p, cands[i].pl)) continue;
    best = static_cast<int>(i);
  }
  if (best >= 0) {
    // Pack plans are judged without a ceiling here, then on their height below.
    ValidationReport rep = validate(p, cands[best].pl, pack, pack ? kUnbounded : -1);
    if (!rep.ok())
      return internal_error(std::string("solver '") + cands[best].solver + "' produced an invalid plan: " + rep.violations[0].message);
  }
  res.seconds = dl.elapsed_seconds();
  res.work = work;
  if (best < 0) {  // exact found nothing (infeasible or out of time)
    res.placement.offsets.assign(p.buffers.size(), kSpilled);
    res.placement.spill_reasons.assign(p.buffers.size(), "no plan found");
    res.spill_cost = spilled_cost(p, res.placement);
    res.solver = solver_kind_name(o.solver);
    res.proven_infeasible = exact_infeasible;
    if (exact_infeasible && pack) res.lower_bound = std::max<int64_t>(res.lower_bound, p.capacity + 1);
    return res;
  }
  Candidate& c = cands[best];
  res.placement = std::move(c.pl);
  res.solver = c.solver;
  res.height = height(p, res.placement);
  res.spill_cost = spilled_cost(p, res.placement);
  res.lower_bound = std::max(res.lower_bound, exact_lb);
  // The exact search ignores groups: its completed search proves nothing for a grouped selection
  // (its bounds stay valid: the groups only remove plans).
  if (grouped && !pack) exact_complete = false;
  if (pack) {
    res.feasible = all_placed(p, res.placement) && res.height <= p.capacity;
    if (res.feasible) {
      res.proven_optimal = res.height <= res.lower_bound || (exact_complete && o.minimize);
      if (res.proven_optimal) res.lower_bound = res.height;
    } else {
      res.proven_infeasible = exact_infeasible;
      if (exact_infeasible) res.lower_bound = std::max<int64_t>(res.lower_bound, p.capacity + 1);
    }
  } else {
    res.feasible = true;
    res.proven_optimal = res.spill_cost <= res.lower_bound || exact_complete;
    if (res.proven_optimal) res.lower_bound = res.spill_cost;
  }
  return res;
}

SolveObserver& solve_observer() {
  static SolveObserver observer;
  return observer;
}

// SolveOptions::lean: the named placer's plan as it is (the caller checks its final plan).
Result<SolveResult> solve_lean(const Problem& p, const SolveOptions& o) {
  switch (o.solver) {
    case SolverKind::kGreedy: case SolverKind::kFirstFit: case SolverKind::kBestFit:
    case SolverKind::kGreedyBySize: case SolverKind::kSweep: case SolverKind::kOnline:
      break;
    default:
      return bad_input(std::string("lean solve: solver ") + solver_kind_name(o.solver) + " is not a heuristic placer");
  }
  if (o.objective != Objective::kPack) return bad_input("lean solve: objective pack only");
  SolveResult res;
  res.placement = run_heuristic(p, o.solver, kUnbounded, nullptr);
  res.solver = solver_kind_name(o.solver);
  res.height = height(p, res.placement);
  res.feasible = all_placed(p, res.placement) && res.height <= p.capacity;
  return res;
}

Result<SolveResult> solve_unobserved(const Problem& p, const SolveOptions& o) {
  if (o.lean) return solve_lean(p, o);
  const Deadline dl(o.time_limit);
  if (Status st = check_problem(p); !st) return st.error();
  // A group with a member forced off chip goes off chip whole: solve with that stated.
  if (has_groups(p)) {
    Problem q = p;
    if (add_group_reasons(q)) return solve_unobserved(q, o);
  }
  Solve s(p, o, dl);
  if (!s.bound()) return s.finish_infeasible_by_bound();
  if (o.solver == SolverKind::kAuto) s.auto_portfolio();
  else s.chosen_solver();
  return s.finish(has_groups(p));
}

}  // namespace

void set_solve_observer(SolveObserver observer) { solve_observer() = std::move(observer); }

Result<SolveResult> solve(const Problem& p, const SolveOptions& o) {
  Result<SolveResult> r = solve_unobserved(p, o);
  if (r.ok() && solve_observer()) solve_observer()(p, r.value());
  return r;
}

}  // namespace sp::alloc
