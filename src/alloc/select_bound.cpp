// Load relaxation of selection: choose the spilled set so that, at every instant, the placed
// buffers' total size fits under the capacity (addresses and fragmentation ignored). Every valid
// plan satisfies these constraints, so the relaxation's optimum is a lower bound on the spill cost.
// Solved exactly by a depth-first branch and bound whose node bound is the Lagrangian relaxation
// of the per-instant covering constraints (equal to the LP bound at optimal multipliers).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "alloc/internal/select_bound.h"
#include "alloc/solver.h"
#include "core/deadline.h"

namespace sp::alloc {
namespace {

struct Relax {
  // Covering form: y_i = 1 (spill) for buffer i; every constraint s needs
  // sum_{i in s} size_i y_i >= need_s (its load above the capacity).
  int n = 0, m = 0;
  std::vector<Size> size;
  std::vector<Cost> cost;
  std::vector<std::vector<int>> cons_of;  // buffer -> constraints it covers
  std::vector<std::vector<int>> vars_of;  // constraint -> buffers in it
  std::vector<Size> need;                 // constraint -> load above capacity
  // search state
  std::vector<signed char> fix;           // -1 free, 0 kept, 1 spilled
  std::vector<Size> r;                    // residual need
  std::vector<Size> avail;                // free size in the constraint
  Cost fixed_cost = 0;
  Cost all_cost = 0;                      // cost of spilling every buffer (a feasible solution)
  Cost best = 0;                          // incumbent (only solutions < best are recorded)
  bool have = false;
  std::vector<signed char> best_y;
  std::vector<double> u0;                 // root multipliers
  int64_t nodes = 0, node_limit = 0;
  bool aborted = false;
  const Deadline* dl = nullptr;
  std::vector<double> U;                  // per buffer: sum of its constraints' multipliers
  std::vector<double> d;                  // reduced costs

  // Lagrangian value for multipliers u at the current node (constraints already satisfied
  // get multiplier 0, which can only raise the value). Fills U, d.
  double lagrange(const std::vector<double>& u) {
    double v = static_cast<double>(fixed_cost);
    for (int s = 0; s < m; ++s)
      if (r[s] > 0) v += u[s] * static_cast<double>(r[s]);
    for (int i = 0; i < n; ++i) {
      if (fix[i] != -1) continue;
      double t = 0;
      for (int s : cons_of[i])
        if (r[s] > 0) t += u[s];
      U[i] = t;
      d[i] = static_cast<double>(cost[i]) - static_cast<double>(size[i]) * t;
      if (d[i] < 0) v += d[i];
    }
    return v;
  }

  // Subgradient ascent from u (modified in place); returns the best value seen (valid bound).
  double ascend(std::vector<double>& u, int iters, double target) {
    std::vector<double> bu = u;
    double bv = lagrange(u), theta = 1.0;
    int stall = 0;
    std::vector<double> g(m);
    for (int it = 0; it < iters; ++it) {
      if (dl->expired()) break;  // large root ascents must respect the time limit too
      double v = lagrange(u);
      if (v > bv + 1e-9) {
        bv = v;
        bu = u;
        stall = 0;
      } else if (++stall >= 8) {
        theta *= 0.5;
        stall = 0;
        if (theta < 1e-4) break;
      }
      if (bv >= target - 1e-6) break;
      double norm = 0;
      for (int s = 0; s < m; ++s) {
        if (r[s] <= 0) { g[s] = 0; continue; }
        double cov = 0;
        for (int i : vars_of[s])
          if (fix[i] == -1 && d[i] < 0) cov += static_cast<double>(size[i]);
        g[s] = static_cast<double>(r[s]) - cov;
        if (u[s] <= 0 && g[s] < 0) g[s] = 0;
        norm += g[s] * g[s];
      }
      if (norm <= 0) break;  // the Lagrangian solution is feasible: v is the optimum here
      double step = theta * std::max(target - v, 1.0) / norm;
      for (int s = 0; s < m; ++s) u[s] = std::max(0.0, u[s] + step * g[s]);
    }
    u = bu;
    lagrange(u);  // leave U, d for the best multipliers
    return bv;
  }

  void set_fix(int i, signed char v) {
    fix[i] = v;
    for (int s : cons_of[i]) {
      avail[s] -= size[i];
      if (v == 1) r[s] -= size[i];
    }
    if (v == 1) fixed_cost += cost[i];
  }
  void unfix(int i) {
    signed char v = fix[i];
    fix[i] = -1;
    for (int s : cons_of[i]) {
      avail[s] += size[i];
      if (v == 1) r[s] += size[i];
    }
    if (v == 1) fixed_cost -= cost[i];
  }

  static Cost ceil_cost(double v) { return static_cast<Cost>(std::ceil(v - 1e-6 * std::max(1.0, std::fabs(v)))); }

  void dfs(std::vector<double> u, int iters) {
    if (aborted) return;
    if (++nodes > node_limit || dl->expired()) {  // a node costs far more than a clock read
      aborted = true;
      return;
    }
    for (int s = 0; s < m; ++s)
      if (r[s] > avail[s]) return;  // cannot be covered any more
    if (fixed_cost >= best) return;
    double lb = ascend(u, iters, static_cast<double>(std::min(best, all_cost + 1)));
    if (ceil_cost(lb) >= best) return;
    // Branch: the constraint most violated by the Lagrangian solution, on its largest free
    // buffer not spilled by the Lagrangian solution, spilled first.
    int worst = -1;
    double worst_gap = 0;
    for (int s = 0; s < m; ++s) {
      if (r[s] <= 0) continue;
      double cov = 0;
      for (int i : vars_of[s])
        if (fix[i] == -1 && d[i] < 0) cov += static_cast<double>(size[i]);
      double gap = static_cast<double>(r[s]) - cov;
      if (gap > worst_gap) {
        worst_gap = gap;
        worst = s;
      }
    }
    int b = -1;
    if (worst < 0) {
      // The Lagrangian solution covers every constraint: it is feasible.
      Cost c = fixed_cost;
      for (int i = 0; i < n; ++i)
        if (fix[i] == -1 && d[i] < 0) c += cost[i];
      if (c < best) {
        best = c;
        have = true;
        best_y = fix;
        for (int i = 0; i < n; ++i)
          if (fix[i] == -1) best_y[i] = d[i] < 0 ? 1 : 0;
      }
      if (ceil_cost(lb) >= best) return;
      // Not proven optimal here: branch on a free buffer with the most negative reduced cost.
      for (int i = 0; i < n; ++i)
        if (fix[i] == -1 && d[i] < 0 && (b < 0 || d[i] < d[b])) b = i;
      if (b < 0) return;
    } else {
      // Largest first: the LP gap comes from fractionally spilled large buffers, so fixing them
      // first closes it fastest (Stream/100: 15k nodes instead of > 6M in 5 s).
      for (int i : vars_of[worst])
        if (fix[i] == -1 && d[i] >= 0 && size[i] > 0 && (b < 0 || size[i] > size[b])) b = i;
      if (b < 0) return;
    }
    set_fix(b, 1);
    dfs(u, iters);
    unfix(b);
    if (aborted) return;
    set_fix(b, 0);
    dfs(u, iters);
    unfix(b);
  }
};

// An instant whose load exceeds the capacity: one constraint of the relaxation.
struct Instant {
  Size excess;        // load - capacity
  Time t;             // the start time it is taken at
  int live;           // buffers live there (the constraint's nonzeros)
  std::size_t event;  // index of its last event in the sweep
};

// Which instants give constraints: all, or when their nonzeros add up to more than `max_nonzeros`,
// those of largest excess up to that many (any subset is still a relaxation).
std::vector<char> largest_excess_first(const std::vector<Instant>& over, std::size_t max_nonzeros) {
  std::vector<char> keep(over.size(), 1);
  std::size_t total = 0;
  for (const Instant& x : over) total += static_cast<std::size_t>(x.live);
  if (total <= max_nonzeros) return keep;
  std::vector<std::size_t> by(over.size());
  std::iota(by.begin(), by.end(), 0);
  std::stable_sort(by.begin(), by.end(), [&](std::size_t a, std::size_t b) { return over[a].excess > over[b].excess; });
  std::fill(keep.begin(), keep.end(), 0);
  std::size_t nnz = 0;
  for (std::size_t i : by) {
    if (nnz + static_cast<std::size_t>(over[i].live) > max_nonzeros) continue;
    nnz += static_cast<std::size_t>(over[i].live);
    keep[i] = 1;
  }
  return keep;
}

}  // namespace

LoadRelaxation load_relaxation(const Problem& p, Cost upper, double seconds, int64_t node_limit) {
  // In-place hand-offs: a child at its parent's base lies inside the parent's footprint at the
  // hand-off tick, so the load is counted on the hand-off relaxation (never above what a valid
  // plan occupies at any instant).
  if (has_in_place(p)) {  // both relaxations, half the time each; the higher bound wins
    LoadRelaxation a = load_relaxation(handoff_relaxation(p, Handoff::kChildLate), upper, seconds / 2, node_limit);
    LoadRelaxation b = load_relaxation(handoff_relaxation(p, Handoff::kParentEarly), upper, seconds / 2, node_limit);
    return b.bound > a.bound ? b : a;
  }
  LoadRelaxation out;
  Deadline dl(seconds);
  const auto& bs = p.buffers;
  const int N = static_cast<int>(bs.size());
  out.spill.assign(N, 0);
  std::vector<Time> end(N);
  for (int i = 0; i < N; ++i) end[i] = bs[i].end;
  Cost forced = 0;
  std::vector<int> vars;
  for (int i = 0; i < N; ++i) {
    if (!bs[i].residency_reason.empty() || bs[i].size > p.capacity) {
      forced += spill_cost(bs[i]);
      out.spill[i] = 1;
    } else if (bs[i].size > 0 && end[i] > bs[i].start) {
      vars.push_back(i);
    }
  }
  // Constraints at the distinct start times (the live set at any instant is contained in the one
  // at the latest start before it), only where the load exceeds the capacity.
  Relax R;
  R.n = static_cast<int>(vars.size());
  R.cons_of.assign(R.n, {});
  for (int k = 0; k < R.n; ++k) {
    R.size.push_back(bs[vars[k]].size);
    R.cost.push_back(spill_cost(bs[vars[k]]));
  }
  // The live set at each start, by one sweep (ends first at equal times); only the instants whose
  // load exceeds the capacity give constraints. Any subset of them is still a relaxation, so on
  // large instances the constraints are those of largest excess, up to 4M nonzeros (before, such
  // instances got no bound beyond the forced spills).
  std::vector<std::pair<Time, int>> ev;  // (time, +k+1 start | -(k+1) end)
  ev.reserve(2 * static_cast<std::size_t>(R.n));
  for (int k = 0; k < R.n; ++k) {
    ev.push_back({bs[vars[k]].start, k + 1});
    ev.push_back({end[vars[k]], -(k + 1)});
  }
  std::sort(ev.begin(), ev.end());
  std::vector<Instant> over;
  {
    Size load = 0;
    int live = 0;
    for (std::size_t e = 0; e < ev.size(); ++e) {
      const int k = ev[e].second > 0 ? ev[e].second - 1 : -ev[e].second - 1;
      load += ev[e].second > 0 ? R.size[k] : -R.size[k];
      live += ev[e].second > 0 ? 1 : -1;
      const bool last_at_t = e + 1 == ev.size() || ev[e + 1].first != ev[e].first;
      if (last_at_t && ev[e].second > 0 && load > p.capacity) over.push_back({load - p.capacity, ev[e].first, live, e});
    }
  }
  const std::vector<char> keep = largest_excess_first(over, 4'000'000);
  std::vector<std::vector<int>> sets;
  {
    std::vector<int> live_list, pos(R.n, -1);  // the live set, O(1) insert and erase
    std::size_t next = 0;
    for (std::size_t e = 0; e < ev.size() && next < over.size(); ++e) {
      const int k = ev[e].second > 0 ? ev[e].second - 1 : -ev[e].second - 1;
      if (ev[e].second > 0) {
        pos[k] = static_cast<int>(live_list.size());
        live_list.push_back(k);
      } else if (pos[k] >= 0) {
        const int last = live_list.back();
        live_list[pos[k]] = last;
        pos[last] = pos[k];
        live_list.pop_back();
        pos[k] = -1;
      }
      if (e != over[next].event) continue;
      if ((e & 1023) == 0 && dl.expired()) {  // building alone can take a share at 200k buffers
        out.bound = out.root_bound = std::min(forced, upper);
        return out;
      }
      if (keep[next]) {
        std::vector<int> live = live_list;
        std::sort(live.begin(), live.end());
        // Skip a constraint equal to the previous one (same live set).
        if (sets.empty() || sets.back() != live) {
          sets.push_back(std::move(live));
          R.need.push_back(over[next].excess);
        }
      }
      ++next;
    }
  }
  R.m = static_cast<int>(sets.size());
  R.vars_of = sets;
  for (int s = 0; s < R.m; ++s)
    for (int k : sets[s]) R.cons_of[k].push_back(s);
  R.fix.assign(R.n, -1);
  R.r = R.need;
  R.avail.assign(R.m, 0);
  for (int s = 0; s < R.m; ++s)
    for (int k : sets[s]) R.avail[s] += R.size[k];
  R.U.assign(R.n, 0);
  R.d.assign(R.n, 0);
  R.dl = &dl;
  R.node_limit = node_limit;
  const Cost up = upper - forced;  // search for relaxed solutions strictly below this
  R.best = up;
  // Spilling every buffer is feasible: a finite target for the ascent's step sizes even when
  // no upper limit is given.
  Cost all = 0;
  for (Cost c : R.cost) all += c;
  R.all_cost = all;
  std::vector<double> u(R.m, 0.0);
  // Start each multiplier at the cheapest cost per byte in its constraint.
  for (int s = 0; s < R.m; ++s) {
    double lo = 1e300;
    for (int k : sets[s]) lo = std::min(lo, static_cast<double>(R.cost[k]) / static_cast<double>(R.size[k]));
    u[s] = lo == 1e300 ? 0 : lo / 2;
  }
  double root = R.ascend(u, 400, static_cast<double>(std::min(up, all + 1)));
  out.root_bound = forced + std::max<Cost>(0, Relax::ceil_cost(root));
  R.dfs(u, 10);  // a few ascent steps per node, warm-started from the parent's multipliers
  out.nodes = R.nodes;
  out.complete = !R.aborted;
  if (out.complete) {
    out.bound = forced + (R.have ? R.best : up);
    out.found = R.have;
    if (R.have)
      for (int k = 0; k < R.n; ++k) out.spill[vars[k]] = R.best_y[k];
  } else {
    out.bound = std::min(out.root_bound, upper);
  }
  return out;
}

}  // namespace sp::alloc
