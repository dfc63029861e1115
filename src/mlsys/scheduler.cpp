// The scheduler driver. Guide to the pieces (one concept per file):
//   scheduler_config     best [w,h,k] + traversal of one subgraph in context (exact, memoized)
//   scheduler_partition  DP cutting one topological order into subgraphs, with retention
//   scheduler_recompute  final pass: recompute cheap producers inside their consumers
//   scheduler_bounds     lower bounds and the default time budget
//   scheduler.cpp        this file: quick first schedule, seeded orders, annealing over orders
//                        (one chain per thread), publishing validated improvements
//   scheduler_run        the shared front end of `scratchplan schedule` and `mlsys`
//
// Phases: (1) every op alone with a quick granularity probe, published at once (anytime);
// (2) the DP on a few constructive orders (greedy: a DP pass, fusion + retention); (3) simulated
// annealing over orders, moves = move one op or one subgraph to another legal position, each
// order priced by the DP. With anneal=false (or --iterations 0) phase 3 is skipped.
#include "mlsys/scheduler.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <mutex>
#include <optional>

#include "core/deadline.h"
#include "core/rng.h"
#include "mlsys/scheduler_config.h"
#include "mlsys/scheduler_partition.h"

namespace sp::mlsys {

Solution recompute_pass(const Problem& problem, const RuleOptions& rules, ConfigSearcher& searcher,
                        const Solution& solution, const Deadline& deadline, const TimeGuard* guard);

namespace {

// Serializes validated improvements to the caller.
class Publisher {
 public:
  Publisher(const Problem& p, const RuleOptions& rules, const ImprovementCallback& cb, const Deadline& clock)
      : p_(p), rules_(rules), cb_(cb), clock_(clock) {}

  // Validates `sol` with the full evaluator, fixes the reported latencies to its numbers and,
  // if strictly better than anything published, hands it out. Returns the evaluated total
  // (infinity if invalid).
  double offer(Solution sol) {
    std::lock_guard<std::mutex> lock(mu_);
    const Evaluation ev = evaluate(p_, sol, rules_);
    return offer_locked(std::move(sol), ev);
  }
  // The same with the evaluation already done (by the caller, with the full evaluator).
  double offer_evaluated(Solution sol, const Evaluation& ev) {
    std::lock_guard<std::mutex> lock(mu_);
    return offer_locked(std::move(sol), ev);
  }
  double best() const {
    std::lock_guard<std::mutex> lock(mu_);
    return best_;
  }
  // Simulated steps of the best published schedule: what validating it again costs.
  int64_t best_steps() const {
    std::lock_guard<std::mutex> lock(mu_);
    return best_steps_;
  }
  // The evaluation of `sol` if it is the best published schedule (saves one full validation,
  // which is most of the work on a huge single subgraph).
  std::optional<Evaluation> evaluation_if_published(const Solution& sol) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (!same_schedule(sol, best_sol_)) return std::nullopt;
    return best_ev_;
  }
  double first_s() const { return first_s_; }
  double last_s() const { return last_s_; }
  int rejected() const { return rejected_; }

 private:
  double offer_locked(Solution sol, const Evaluation& ev) {
    if (!ev.valid) {
      ++rejected_;
      return std::numeric_limits<double>::infinity();
    }
    for (std::size_t i = 0; i < sol.subgraphs.size(); ++i) sol.subgraphs[i].reported_latency = ev.subgraphs[i].latency;
    if (ev.total < best_) {
      best_ = ev.total;
      best_sol_ = sol;
      best_ev_ = ev;
      best_steps_ = 0;
      for (const SubgraphEvaluation& e : ev.subgraphs) best_steps_ += e.tiles * e.k_steps;
      if (first_s_ < 0) first_s_ = clock_.elapsed_seconds();
      last_s_ = clock_.elapsed_seconds();
      if (cb_) cb_(sol, ev.total);
    }
    return ev.total;
  }

  const Problem& p_;
  const RuleOptions& rules_;
  const ImprovementCallback& cb_;
  const Deadline& clock_;
  mutable std::mutex mu_;
  static bool same_schedule(const Solution& a, const Solution& b) {
    if (a.subgraphs.size() != b.subgraphs.size()) return false;
    for (std::size_t i = 0; i < a.subgraphs.size(); ++i) {
      const SubgraphSpec &x = a.subgraphs[i], &y = b.subgraphs[i];
      if (x.ops != y.ops || !(x.granularity == y.granularity) || x.retain != y.retain || x.traversal != y.traversal) return false;
    }
    return true;
  }
  double best_ = std::numeric_limits<double>::infinity();
  Solution best_sol_;
  Evaluation best_ev_;
  int64_t best_steps_ = 0;
  double first_s_ = -1, last_s_ = 0;
  int rejected_ = 0;
};

// A topological order that keeps producer-consumer chains adjacent: after each op, prefer a
// ready op that reads what was just produced (then the lowest id).
std::vector<OpId> chain_order(const Problem& p) {
  const int n = p.num_ops();
  std::vector<int> missing(n, 0);
  for (int o = 0; o < n; ++o)
    for (TensorId t : p.ops[o].inputs) missing[o] += p.producer[t] >= 0;
  std::vector<char> ready(n, 0), done(n, 0);
  for (int o = 0; o < n; ++o) ready[o] = missing[o] == 0;
  std::vector<OpId> order;
  OpId last = -1;
  while (static_cast<int>(order.size()) < n) {
    OpId pick = -1;
    if (last >= 0)
      for (TensorId t : p.ops[last].outputs)
        for (const Consumer& c : p.consumers[t])
          if (ready[c.op] && !done[c.op] && (pick < 0 || c.op < pick)) pick = c.op;
    if (pick < 0)
      for (int o = 0; o < n && pick < 0; ++o)
        if (ready[o] && !done[o]) pick = o;
    done[pick] = 1;
    order.push_back(pick);
    last = pick;
    for (TensorId t : p.ops[pick].outputs)
      for (const Consumer& c : p.consumers[t])
        if (--missing[c.op] == 0) ready[c.op] = 1;
  }
  return order;
}

// The same walk backwards from the graph outputs: after each op, prefer a producer of one of
// its inputs. Reversed, it schedules every op as late as its chain allows, which keeps a branch
// next to the op that joins it.
std::vector<OpId> reverse_chain_order(const Problem& p) {
  const int n = p.num_ops();
  std::vector<int> pending(n, 0);  // consumers not yet placed (counted per consuming op slot)
  for (int o = 0; o < n; ++o)
    for (TensorId t : p.ops[o].outputs) pending[o] += static_cast<int>(p.consumers[t].size());
  std::vector<char> done(n, 0);
  std::vector<OpId> order;
  OpId last = -1;
  while (static_cast<int>(order.size()) < n) {
    OpId pick = -1;
    if (last >= 0)
      for (TensorId t : p.ops[last].inputs) {
        const OpId pr = p.producer[t];
        if (pr >= 0 && !done[pr] && pending[pr] == 0 && pr > pick) pick = pr;
      }
    if (pick < 0)
      for (int o = n - 1; o >= 0 && pick < 0; --o)
        if (!done[o] && pending[o] == 0) pick = o;
    done[pick] = 1;
    order.push_back(pick);
    last = pick;
    for (TensorId t : p.ops[pick].inputs)
      if (p.producer[t] >= 0) --pending[p.producer[t]];
  }
  std::reverse(order.begin(), order.end());
  return order;
}

bool is_topological(const Problem& p, const std::vector<OpId>& order, std::vector<int>& pos) {
  pos.assign(p.num_ops(), -1);
  for (int i = 0; i < static_cast<int>(order.size()); ++i) pos[order[i]] = i;
  for (int i = 0; i < static_cast<int>(order.size()); ++i)
    for (TensorId t : p.ops[order[i]].inputs) {
      const OpId pr = p.producer[t];
      if (pr >= 0 && pos[pr] > i) return false;
    }
  return true;
}

// One random legal move on `order`; false if the drawn move was illegal.
bool propose(const Problem& p, const Partition& cur, std::vector<OpId>& order, Rng& rng) {
  const int n = static_cast<int>(order.size());
  if (n < 2) return false;
  std::vector<int> pos;
  if (rng.chance(0.6) || cur.segments.size() < 2) {
    const int i = static_cast<int>(rng.below(n));
    const OpId o = order[i];
    is_topological(p, order, pos);
    int lo = 0, hi = n - 1;
    for (TensorId t : p.ops[o].inputs)
      if (p.producer[t] >= 0) lo = std::max(lo, pos[p.producer[t]] + 1);
    for (TensorId t : p.ops[o].outputs)
      for (const Consumer& c : p.consumers[t]) hi = std::min(hi, pos[c.op] - 1);
    if (hi <= lo) return false;
    int f = static_cast<int>(rng.range(lo, hi));
    if (f == i) return false;
    if (f < i) std::rotate(order.begin() + f, order.begin() + i, order.begin() + i + 1);
    else std::rotate(order.begin() + i, order.begin() + i + 1, order.begin() + f + 1);
    return true;
  }
  // Move a whole current subgraph (a contiguous run) elsewhere.
  int a = 0;
  const std::size_t s = rng.below(cur.segments.size());
  for (std::size_t k = 0; k < s; ++k) a += static_cast<int>(cur.segments[k].ops.size());
  const int b = a + static_cast<int>(cur.segments[s].ops.size());
  const int f = static_cast<int>(rng.below(n + 1));
  if (f >= a && f <= b) return false;
  std::vector<OpId> next = order;
  if (f < a) std::rotate(next.begin() + f, next.begin() + a, next.begin() + b);
  else std::rotate(next.begin() + a, next.begin() + b, next.begin() + f);
  if (!is_topological(p, next, pos)) return false;
  order.swap(next);
  return true;
}

struct ChainResult {
  Partition best;
  std::vector<OpId> best_order;
  int64_t moves = 0;
  int64_t simulations = 0;
};

// The first op that fits no granularity alone, explained: its smallest working set exceeds the
// capacity, or the search gave up within `probe_steps` steps a candidate.
std::optional<Error> first_unschedulable_op(const Problem& problem, ConfigSearcher& fallback, int64_t probe_steps) {
  for (OpId o : problem.topo_order) {
    if (fallback.best({o}, {}, {}).valid) continue;
    const Op& op = problem.ops[o];
    Elements need = 1;  // smallest granularity: 1x1 output, 1x1 (and k=1) input slices
    if (op.kind == OpKind::kMatMul) need += 2;
    else {
      std::vector<TensorId> in = op.inputs;
      std::sort(in.begin(), in.end());
      need += std::unique(in.begin(), in.end()) - in.begin();
    }
    std::string msg = "op " + std::to_string(o) + " (" + op_kind_name(op.kind) + ") cannot be scheduled: ";
    if (need > problem.fast_memory_capacity)
      msg += "its smallest working set needs " + std::to_string(need) + " elements of fast memory but fast_memory_capacity is " +
             std::to_string(problem.fast_memory_capacity);
    else
      msg += "the search gave up: no granularity of at most " + std::to_string(probe_steps) +
             " steps fits fast_memory_capacity " + std::to_string(problem.fast_memory_capacity) +
             " (finer ones were not tried; no proof that none fits)";
    return bad_input(msg);
  }
  return std::nullopt;
}

// One annealing chain over op orders, from the best plan so far. Shared with the other chains:
// the publisher and `proven` (one chain at the bound stops all when searching by time).
struct AnnealChain {
  const Problem& problem;
  const SchedulerOptions& options;
  const PartitionOptions& popt;
  const Deadline& search_clock;
  double search_s;
  int64_t per_thread;       // moves per chain, -1: by time
  double proven_at;         // a total at or below it is optimal
  std::atomic<bool>& proven;
  Publisher& pub;
  TimeGuard& search_guard;

  void run(ConfigSearcher& searcher, int t, const Partition& best, const std::vector<OpId>& best_order,
           ChainResult& out) const {
    Rng rng(options.seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(t) * 0xD1B54A32D192ED03ULL + 1);
    Partitioner part(problem, searcher, popt);
    std::vector<OpId> order = best_order;
    Partition cur = best;
    out.best = best;
    out.best_order = best_order;
    const double t0 = 0.02 * best.total;
    for (int64_t it = 0; per_thread < 0 || it < per_thread; ++it) {
      if (search_clock.expired() || out.best.total <= proven_at || (per_thread < 0 && proven.load())) break;
      const double progress = per_thread > 0 ? static_cast<double>(it) / static_cast<double>(per_thread)
                                             : std::min(1.0, search_clock.elapsed_seconds() / std::max(1e-3, search_s));
      const double temp = t0 * (1.0 - progress) * (1.0 - progress) + 1e-9;
      std::vector<OpId> next = order;
      ++out.moves;
      if (!propose(problem, cur, next, rng)) continue;
      // No cutoff here: pruning orders worse than cur + 7 temperatures was measured to halve
      // the moves/s on mlsys-2026-5 (the chain stalls on rejected moves; accepted neighbours
      // share cached segments) and to end worse (529,745.0 against 511,722.6 at 5 s).
      Partition cand = part.solve(next, search_clock);
      if (!cand.valid) continue;
      const double delta = cand.total - cur.total;
      if (delta <= 0 || rng.uniform() < std::exp(-delta / temp)) {
        order.swap(next);
        cur = std::move(cand);
        if (cur.total < out.best.total) {
          out.best = cur;
          out.best_order = order;
          if (cur.total <= proven_at) proven = true;
          if (cur.total < pub.best() && search_guard.allows(pub.best_steps())) pub.offer(to_solution(cur));
        }
      }
    }
  }
};

}  // namespace

Result<ScheduleResult> schedule(const Problem& problem, const SchedulerOptions& options,
                                const ImprovementCallback& on_improvement) {
  try {
    // The search stops at 85% of the budget; the recompute pass and final validation use the
    // rest, so the last file is written before the limit.
    const Deadline clock(options.time_limit_s < 0 ? -1.0 : 0.95 * options.time_limit_s);
    const double search_s = options.time_limit_s < 0 ? -1.0 : 0.85 * options.time_limit_s;
    const Deadline search_clock(search_s);
    const int threads = std::max(1, options.threads);
    Publisher pub(problem, options.rules, on_improvement, clock);
    ScheduleResult result;
    result.stats.bounds = lower_bounds(problem, options.rules);
    // Guards: no simulation starts that would overrun the search (or, in the final pass, the
    // whole) budget; phase 1 goes past them only until each op has one fitting configuration.
    TimeGuard search_guard(&search_clock), final_guard(&clock);

    // Phase 1: every op alone, quick probe (own cache: its configs are not the best ones).
    ConfigCache quick_cache;
    ConfigSearchOptions quick_opt;
    quick_opt.ensure_one = true;
    quick_opt.fitting_shapes = 1;
    quick_opt.snake = options.snake;
    quick_opt.split_k = false;
    quick_opt.max_steps = 4096;
    quick_opt.probe_steps = 1024;
    quick_opt.max_simulations = 12;
    ConfigSearcher quick(problem, options.rules, quick_cache, quick_opt);
    quick.set_guard(&final_guard);
    PartitionOptions single{1, false, 1};
    const Deadline no_limit;
    Partition first = Partitioner(problem, quick, single).solve(problem.topo_order, no_limit);
    ConfigCache fallback_cache;
    // The fallback looks much finer (tiny capacities need tiny tiles): up to 1M steps a candidate.
    ConfigSearchOptions fallback_opt;
    fallback_opt.ensure_one = true;
    fallback_opt.fitting_shapes = 1;
    fallback_opt.probe_steps = 1'000'000;
    fallback_opt.max_steps = 1'000'000;
    ConfigSearcher fallback(problem, options.rules, fallback_cache, fallback_opt);
    fallback.set_guard(&final_guard);
    if (!first.valid) first = Partitioner(problem, fallback, single).solve(problem.topo_order, no_limit);
    if (!first.valid) {
      if (std::optional<Error> e = first_unschedulable_op(problem, fallback, fallback_opt.probe_steps)) return *e;
      return bad_input("no valid schedule found for the ops in topological order");
    }
    pub.offer(to_solution(first));
    // Validating and writing the final schedule must fit after the search: reserve twice what
    // validating this one costs.
    search_guard.set_reserve(2 * search_guard.predict(pub.best_steps()));
    final_guard.set_reserve(search_guard.predict(pub.best_steps()));
    Partition best = first;
    std::vector<OpId> best_order = problem.topo_order;
    result.stats.configs_evaluated += quick.simulations();

    // Phase 2: the DP with fusion and retention on constructive orders.
    ConfigCache cache;
    ConfigSearchOptions full_opt;
    full_opt.snake = options.snake;
    full_opt.split_k = options.split_k;
    PartitionOptions popt;
    const int max_len = options.fusion ? std::max(1, options.max_segment_ops) : 1;
    popt.retention = options.retention;
    std::vector<std::unique_ptr<ConfigSearcher>> searchers;
    for (int t = 0; t < threads; ++t) {
      searchers.push_back(std::make_unique<ConfigSearcher>(problem, options.rules, cache, full_opt));
      searchers.back()->set_deadline(&search_clock);
      searchers.back()->set_guard(&search_guard);
    }
    std::vector<ConfigSearcher*> pool;
    for (const auto& sr : searchers) pool.push_back(sr.get());
    // Iterative deepening on the longest segment: short segments price fast and already carry
    // most of the gain, so a valid fused schedule exists early even on large graphs.
    std::vector<int> lengths;
    for (int len = 2; len < max_len; len *= 2) lengths.push_back(len);
    lengths.push_back(max_len);
    int done_len = 1;
    const std::vector<std::vector<OpId>> orders{chain_order(problem), reverse_chain_order(problem), problem.topo_order};
    for (int len : lengths) {
      if (best.total <= result.stats.bounds.combined * (1.0 + 1e-9)) break;  // optimal already
      popt.max_segment_ops = len;
      bool complete = true;
      for (std::size_t oi = 0; oi < orders.size(); ++oi) {
        const std::vector<OpId>& order = orders[oi];
        if (std::find(orders.begin(), orders.begin() + static_cast<std::ptrdiff_t>(oi), order) != orders.begin() + static_cast<std::ptrdiff_t>(oi)) continue;
        if (threads > 1) Partitioner(problem, *searchers[0], popt).prefetch(order, pool, search_clock);
        Partition part = Partitioner(problem, *searchers[0], popt).solve(order, search_clock, best.total);
        if (!part.valid) complete = false;
        if (part.valid && part.total < best.total) {
          if (search_guard.allows(pub.best_steps())) pub.offer(to_solution(part));  // validation must fit too
          best = part;
          best_order = order;
        }
      }
      if (!complete && search_clock.expired()) break;
      done_len = len;
    }
    popt.max_segment_ops = done_len;

    // Phase 3: annealing over orders, one independent chain per thread.
    // Without any budget the search would never end: then only the constructive phases run.
    const bool budgeted = options.iterations >= 0 || options.time_limit_s >= 0;
    const bool anneal = options.anneal && budgeted && options.iterations != 0 && problem.num_ops() > 1;
    std::vector<ChainResult> chains(threads);
    std::atomic<int64_t> moves_total{0};
    const double anneal_start = search_clock.elapsed_seconds();
    // A schedule at the lower bound is optimal: the search stops there. (Totals are sums of
    // doubles: equal within a relative 1e-9.) By time, one chain at the bound stops all; by
    // iterations, each chain stops only at its own, so the plan stays the budget's.
    const double proven_at = result.stats.bounds.combined * (1.0 + 1e-9);
    std::atomic<bool> proven{best.total <= proven_at};
    if (anneal && !search_clock.expired() && !proven.load()) {
      const int64_t per_thread = options.iterations < 0 ? -1 : (options.iterations + threads - 1) / threads;
      const AnnealChain chain{problem, options, popt, search_clock, search_s, per_thread, proven_at, proven, pub, search_guard};
      auto run_chain = [&](int t) {
        chain.run(*searchers[t], t, best, best_order, chains[t]);
        moves_total += chains[t].moves;
      };
      run_workers(threads, run_chain);
      // Deterministic pick: lowest total, then lowest thread index.
      for (const ChainResult& c : chains)
        if (c.best.valid && c.best.total < best.total) {
          best = c.best;
          best_order = c.best_order;
        }
    }
    result.stats.iterations = moves_total.load();
    result.stats.anneal_s = search_clock.elapsed_seconds() - anneal_start;

    // Final pass: recompute cheap producers where that saves loads.
    Solution sol = to_solution(best);
    searchers[0]->set_deadline(&clock);
    searchers[0]->set_guard(&final_guard);
    final_guard.set_reserve(search_guard.predict(pub.best_steps()));
    // Each recompute candidate is validated in full: only when that fits before the deadline.
    if (options.recompute && final_guard.allows(2 * pub.best_steps()))
      sol = recompute_pass(problem, options.rules, *searchers[0], sol, clock, &final_guard);
    const std::optional<Evaluation> known = pub.evaluation_if_published(sol);
    Evaluation ev = known ? *known : evaluate(problem, sol, options.rules);
    if (!ev.valid) return internal_error("scheduler produced an invalid schedule: " + ev.errors.front());
    for (std::size_t i = 0; i < sol.subgraphs.size(); ++i) sol.subgraphs[i].reported_latency = ev.subgraphs[i].latency;
    pub.offer_evaluated(sol, ev);
    for (const auto& s : searchers) result.stats.configs_evaluated += s->simulations();
    result.solution = std::move(sol);
    result.stats.total = ev.total;
    result.stats.first_valid_s = pub.first_s();
    result.stats.final_s = pub.last_s();
    return result;
  } catch (const std::exception& e) {
    return internal_error(std::string("scheduler: ") + e.what());
  }
}

}  // namespace sp::mlsys
