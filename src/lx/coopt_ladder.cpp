// torch-spyre's September joint contract (coopt.h): the objective ladder (residency, cuts, cores,
// balance, tile count) or a cost expression, minimized exactly while the choice space is small.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

#include "alloc/solver.h"
#include "core/deadline.h"
#include "lx/coopt.h"

namespace sp::lx {
namespace {

constexpr int64_t kMaxAssignments = 4096;      // division assignments enumerated exactly
constexpr int64_t kMaxResidencySets = 1 << 15;  // (assignment, resident set) pairs enumerated for a cost expression
const char* const kChosenSpill = "spilled by solver (no residency benefit / no room)";  // CP-SAT's words

struct Ctx {
  const CdProblem* p;
  const LadderOptions* o;
  std::vector<std::vector<int>> children;  // buffers listing b in `parents`
  std::vector<int64_t> weight;             // stage-1 spill cost per buffer
  Deadline* dl;
  bool proven = true;     // every placement used was proven optimal / exactly feasible
  bool relayouts = false;  // copies may be chosen (cost expression); sources' gates are checked per resident set
  std::vector<char> has_copy;  // b is the relayout_parent of some copy
};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t min_footprint(const CdBuffer& x) {
  if (x.divisions.empty()) return std::max<int64_t>(x.size, 0);
  int64_t m = std::numeric_limits<int64_t>::max();
  for (std::size_t d = 0; d < x.divisions.size(); ++d) m = std::min(m, per_core_footprint(x, static_cast<int>(d)));
  return m;
}

// Why b cannot be resident under `div`, before placement ("" when it may be).
std::string exclusion(const Ctx& c, const std::vector<int>& div, int b) {
  const CdBuffer& x = c.p->buffers[b];
  if (!x.residency_reason.empty()) return x.residency_reason;
  if (x.size < 0) return "unsized";
  if (x.uses.empty()) return "no consumer reads it from LX";
  if (x.relayout_copy && !c.relayouts) return "relayout copy not priced (pinned out by the objective ladder)";
  if (x.relayout_copy && x.relayout_source < 0) return "relayout copy without a relayout_parent";
  const int64_t m = min_footprint(x);
  if (m > c.p->capacity)
    return "min footprint " + std::to_string(m) + " B > LX capacity " + std::to_string(c.p->capacity) + " B";
  const int64_t fp = per_core_footprint(x, div[b]);
  if (fp > c.p->capacity)
    return "capacity: per-core footprint " + std::to_string(fp) + " B under division " + std::to_string(div[b]) +
           " exceeds LX capacity " + std::to_string(c.p->capacity) + " B";
  if (c.relayouts && c.has_copy[b]) return {};  // gate checked with the resident copies (relayout_valid)
  for (int ch : x.plain ? std::vector<int>{} : c.children[b]) {
    bool ok = false;
    for (const auto& [q, list] : c.p->buffers[ch].matches)
      if (q == b)
        for (auto [pd, cd] : list) ok = ok || (pd == div[b] && cd == div[ch]);
    if (!ok) return "core div mismatch";
  }
  return {};
}

// Reasons before placement, with atomic groups going out whole.
std::vector<std::string> exclusions(const Ctx& c, const std::vector<int>& div) {
  const CdProblem& p = *c.p;
  const int n = static_cast<int>(p.buffers.size());
  std::vector<std::string> why(n);
  for (int b = 0; b < n; ++b) why[b] = exclusion(c, div, b);
  send_groups_to_hbm_whole(p, why);
  return why;
}

struct Placed {
  std::vector<int64_t> address;  // -1 = HBM
  int64_t cost = 0;              // stage-1 cost of the spilled buffers
  bool proven = false;           // the placement is optimal for this assignment (or exactly feasible)
};

// Places the buffers with allowed[b] under `div`, minimizing the stage-1 cost of what does not fit.
Placed place(Ctx& c, const std::vector<int>& div, const std::vector<char>& allowed, double seconds, bool fast) {
  const CdProblem& p = *c.p;
  const int n = static_cast<int>(p.buffers.size());
  alloc::Problem ap;
  ap.capacity = p.capacity;
  std::vector<int> idx(n, -1), back;
  std::map<int, std::pair<int64_t, int64_t>> span;  // group -> union of members' lifetimes
  if (c.o->disjoint_groups)
    for (int b = 0; b < n; ++b)
      if (allowed[b] && p.buffers[b].group >= 0) {
        auto [it, fresh] = span.try_emplace(p.buffers[b].group, p.buffers[b].start, p.buffers[b].end);
        it->second = {std::min(it->second.first, p.buffers[b].start), std::max(it->second.second, p.buffers[b].end)};
      }
  for (int b = 0; b < n; ++b) {
    if (!allowed[b]) continue;
    const CdBuffer& x = p.buffers[b];
    alloc::Buffer ab;
    ab.id = x.name;
    ab.size = per_core_footprint(x, div[b]);
    ab.start = x.start;
    ab.end = x.end;
    if (c.o->disjoint_groups && x.group >= 0) std::tie(ab.start, ab.end) = span[x.group];
    ab.alignment = p.alignment;
    ab.spill_cost = std::max<int64_t>(c.weight[b], 0) + 0;  // ties among zero-weight buffers: alloc keeps what fits
    idx[b] = static_cast<int>(ap.buffers.size());
    back.push_back(b);
    ap.buffers.push_back(std::move(ab));
  }
  link_groups_and_in_place_edges(p, idx, back, ap);
  Placed r;
  r.address.assign(n, -1);
  alloc::Placement pl;
  if (ap.buffers.empty()) {
    r.proven = true;
  } else if (auto s = place_on_lx(ap, fast, seconds)) {  // (refused by the engine: all in HBM)
    pl = std::move(s->placement);
    r.proven = s->spill_cost == 0 || (!fast && s->proven_optimal);
  }
  for (std::size_t k = 0; k < ap.buffers.size(); ++k) r.address[back[k]] = pl.offsets.empty() ? -1 : pl.offsets[k];
  for (int b = 0; b < n; ++b)
    if (r.address[b] < 0) r.cost += std::max<int64_t>(c.weight[b], 0);
  return r;
}

// Ladder stages 2..5 of an assignment; cuts -1 = the pair table forbids it.
struct Static {
  int64_t cuts = 0, neg_cores = 0, split_sq = 0, tiles = 0;
  std::tuple<int64_t, int64_t, int64_t, int64_t> key() const { return {cuts, neg_cores, split_sq, tiles}; }
};

Static static_terms(const CdProblem& p, const std::vector<int>& div) {
  Static s;
  s.cuts = ladder_cuts(p, div);
  for (std::size_t b = 0; b < p.buffers.size(); ++b) {
    const CdBuffer& x = p.buffers[b];
    if (x.plain || x.divisions.empty()) continue;
    const CdDivision& d = x.divisions[div[b]];
    s.neg_cores -= d.cores;
    s.split_sq += d.split_sq;
    s.tiles += d.tile_count;
  }
  return s;
}

// Mixed-radix enumeration of assignments.
bool next_assignment(const CdProblem& p, std::vector<int>& a) {
  for (std::size_t b = a.size(); b-- > 0;) {
    if (++a[b] < static_cast<int>(p.buffers[b].divisions.size())) return true;
    a[b] = 0;
  }
  return false;
}

int64_t assignment_count(const CdProblem& p) {
  int64_t k = 1;
  for (const CdBuffer& x : p.buffers) {
    k *= std::max<int64_t>(1, static_cast<int64_t>(x.divisions.size()));
    if (k > kMaxAssignments) return kMaxAssignments + 1;
  }
  return k;
}

double eval(const CdExpr& e, const CdProblem& p, const std::vector<int>& div, const std::vector<char>& lx) {
  using Op = CdExpr::Op;
  auto arg = [&](std::size_t i) { return eval(e.args[i], p, div, lx); };
  switch (e.op) {
    case Op::kConst: return e.value;
    case Op::kIsLx: return lx[e.buffer] ? 1.0 : 0.0;
    case Op::kDivision: return div[e.buffer];
    case Op::kSplit: {
      const CdDivision& d = p.buffers[e.buffer].divisions[div[e.buffer]];
      for (auto [k, f] : d.reduction_splits)
        if (k == e.key) return static_cast<double>(f);
      for (auto [k, f] : d.output_splits)
        if (k == e.key) return static_cast<double>(f);
      return 1.0;
    }
    case Op::kAdd: {
      double s = 0;
      for (std::size_t i = 0; i < e.args.size(); ++i) s += arg(i);
      return s;
    }
    case Op::kMul: {
      double s = 1;
      for (std::size_t i = 0; i < e.args.size(); ++i) s *= arg(i);
      return s;
    }
    case Op::kPow: return std::pow(arg(0), arg(1));
    case Op::kMin: case Op::kMax: {
      double s = arg(0);
      for (std::size_t i = 1; i < e.args.size(); ++i) s = e.op == Op::kMin ? std::min(s, arg(i)) : std::max(s, arg(i));
      return s;
    }
    case Op::kAbs: return std::fabs(arg(0));
    case Op::kLog: return std::log(arg(0));
    case Op::kExp: return std::exp(arg(0));
    case Op::kFloor: return std::floor(arg(0));
    case Op::kCeil: return std::ceil(arg(0));
    case Op::kDelta: return arg(0) == arg(1) ? 1.0 : 0.0;
    case Op::kCharge: {
      const double on = arg(0), k = arg(1);
      if (on == 0) return 0;
      const double i = std::round(k);
      if (i < 0 || i + 2 >= static_cast<double>(e.args.size())) return 0;  // past the table
      return on * arg(static_cast<std::size_t>(i) + 2);
    }
    case Op::kPiecewise:
      for (std::size_t i = 0; i + 1 < e.args.size(); i += 2)
        if (arg(i + 1) != 0) return arg(i);
      return std::numeric_limits<double>::quiet_NaN();
    case Op::kLt: return arg(0) < arg(1);
    case Op::kLe: return arg(0) <= arg(1);
    case Op::kGt: return arg(0) > arg(1);
    case Op::kGe: return arg(0) >= arg(1);
    case Op::kEq: return arg(0) == arg(1);
    case Op::kNe: return arg(0) != arg(1);
    case Op::kAnd: {
      for (std::size_t i = 0; i < e.args.size(); ++i)
        if (arg(i) == 0) return 0;
      return 1;
    }
    case Op::kOr: {
      for (std::size_t i = 0; i < e.args.size(); ++i)
        if (arg(i) != 0) return 1;
      return 0;
    }
    case Op::kNot: return arg(0) == 0;
  }
  return 0;
}

// NaN (an unmatched Piecewise) ranks last.
double rank(double v) { return std::isnan(v) ? std::numeric_limits<double>::infinity() : v; }

// The relayout coupling under a resident set `lx`: each resident copy has its source resident under
// a priced division and serves at least one consumer through a listed option (a consumer reads a
// parent through at most one copy); each resident source's child edges match or are served.
bool relayout_valid(const Ctx& c, const std::vector<int>& div, const std::vector<char>& lx, std::vector<CdServed>& out) {
  const CdProblem& p = *c.p;
  const int n = static_cast<int>(p.buffers.size());
  out.clear();
  std::set<std::pair<int, int>> edges;
  for (int x = 0; x < n; ++x) {
    const CdBuffer& cp = p.buffers[x];
    if (!cp.relayout_copy || !lx[x]) continue;
    const int src = cp.relayout_source;
    if (src < 0 || !lx[src]) return false;
    int count = 0;
    for (const auto& o : cp.relayout_options)
      if (o.source_division == div[src] && o.consumer_division == div[o.consumer] && edges.emplace(o.consumer, src).second) {
        out.push_back({o.consumer, src, x});
        ++count;
      }
    if (count == 0) return false;
  }
  for (int b = 0; b < n; ++b) {
    if (!lx[b] || !c.has_copy[b] || p.buffers[b].plain) continue;
    for (int ch : c.children[b]) {
      bool ok = edges.count({ch, b}) > 0;
      for (const auto& [q, list] : p.buffers[ch].matches)
        if (q == b)
          for (auto [pd, cd] : list) ok = ok || (pd == div[b] && cd == div[ch]);
      if (!ok) return false;
    }
  }
  return true;
}

struct Best {
  std::vector<int> div;
  std::vector<int64_t> address;
  std::vector<std::string> why;  // pre-placement reasons
  int64_t residency = std::numeric_limits<int64_t>::max();
  Static st;
  double value = std::numeric_limits<double>::infinity();
  bool found = false;
  std::vector<CdServed> served;
};

// The objective ladder.
void solve_ladder(Ctx& c, Best& best, int64_t& scored) {
  const CdProblem& p = *c.p;
  const int n = static_cast<int>(p.buffers.size());
  struct Cand {
    int64_t forced;
    Static st;
    std::vector<int> div;
  };
  auto forced_cost = [&](const std::vector<std::string>& why) {
    int64_t f = 0;
    for (int b = 0; b < n; ++b)
      if (!why[b].empty()) f += std::max<int64_t>(c.weight[b], 0);
    return f;
  };
  auto consider = [&](const std::vector<int>& div, bool fast, double seconds) {
    Static st = static_terms(p, div);
    if (st.cuts < 0) return;
    std::vector<std::string> why = exclusions(c, div);
    const int64_t forced = forced_cost(why);
    if (best.found && std::make_tuple(forced, st.key()) >= std::make_tuple(best.residency, best.st.key())) return;
    std::vector<char> allowed(n);
    for (int b = 0; b < n; ++b) allowed[b] = why[b].empty();
    Placed pl = place(c, div, allowed, seconds, fast);
    ++scored;
    if (!pl.proven) c.proven = false;
    if (!best.found || std::make_tuple(pl.cost, st.key()) < std::make_tuple(best.residency, best.st.key())) {
      best.found = true;
      best.div = div;
      best.address = pl.address;
      best.why = why;
      best.residency = pl.cost;
      best.st = st;
    }
  };
  if (c.o->exact && assignment_count(p) <= kMaxAssignments) {
    std::vector<Cand> all;
    std::vector<int> a(n, 0);
    do {
      Static st = static_terms(p, a);
      if (st.cuts >= 0) all.push_back({forced_cost(exclusions(c, a)), st, a});
    } while (next_assignment(p, a));
    std::stable_sort(all.begin(), all.end(), [](const Cand& x, const Cand& y) {
      return std::make_tuple(x.forced, x.st.key()) < std::make_tuple(y.forced, y.st.key());
    });
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (best.found && std::make_tuple(all[i].forced, all[i].st.key()) >= std::make_tuple(best.residency, best.st.key()))
        break;  // sorted: nothing later can win
      if (c.dl->expired()) {
        c.proven = false;
        break;
      }
      const double slice = std::min(0.5, c.dl->remaining_seconds() / 4);
      consider(all[i].div, false, slice);
    }
    return;
  }
  // Too many choices: local search from the seed (single changes, each with its neighbours
  // re-matched), heuristic placements, then the full placement of the winner.
  c.proven = false;
  std::vector<int> cur(n, 0);
  consider(cur, true, 0);
  // A second start: each buffer's first untiled candidate. Untiled ops share no loop group, so it
  // satisfies the pair tables whenever every buffer has one (the seed may not).
  std::vector<int> untiled(n, 0);
  for (int b = 0; b < n; ++b)
    for (int d = 0; d < static_cast<int>(p.buffers[b].divisions.size()); ++d)
      if (p.buffers[b].divisions[d].tile_levels.empty()) {
        untiled[b] = d;
        break;
      }
  if (untiled != cur) consider(untiled, true, 0);
  if (best.found) cur = best.div;
  bool improved = true;
  while (improved && !c.dl->expired()) {
    improved = false;
    for (int b = 0; b < n && !c.dl->expired(); ++b)
      for (int d = 0; d < static_cast<int>(p.buffers[b].divisions.size()) && !c.dl->expired(); ++d) {
        if (d == cur[b]) continue;
        for (int mode = 0; mode < 2; ++mode) {
          std::vector<int> cand = cur;
          cand[b] = d;
          if (mode == 1) {  // re-match neighbours to the new choice where a listed pair allows
            for (int ch : c.children[b])
              for (const auto& [q, list] : p.buffers[ch].matches)
                if (q == b)
                  for (auto [pd, cd] : list)
                    if (pd == d) { cand[ch] = cd; break; }
            for (const auto& [q, list] : p.buffers[b].matches)
              for (auto [pd, cd] : list)
                if (cd == d) { cand[q] = pd; break; }
            if (cand == cur) continue;
          }
          const bool had = best.found;
          const auto before = std::make_tuple(best.residency, best.st.key());
          consider(cand, true, 0);
          if (best.found && (!had || std::make_tuple(best.residency, best.st.key()) < before)) {
            cur = best.div;
            improved = true;
          }
        }
      }
  }
  if (best.found) {  // full placement of the winner (never worse than the heuristic one)
    Best keep = best;
    best.found = false;
    consider(best.div, false, std::min(1.0, std::max(0.0, c.dl->remaining_seconds())));
    if (!best.found || std::make_tuple(keep.residency, keep.st.key()) < std::make_tuple(best.residency, best.st.key()))
      best = keep;
  }
  // The August engine's plan (solve_divisions: HBM bytes, its own search) with the relayout copies taken
  // out is a legal plan of this model too; it is kept when the ladder values it lower, so the
  // local search is never worse than solve_core_divisions' August path on the same buffers.
  // Not with disjoint groups (the August engine lets group members share bytes at other ticks).
  bool groups = false;
  for (const CdBuffer& x : p.buffers) groups = groups || x.group >= 0;
  if (c.relayouts || (groups && c.o->disjoint_groups)) return;
  auto aug = solve_divisions(p, std::max(0.0, c.dl->remaining_seconds()) / 4);
  if (!aug) return;
  Static st = static_terms(p, aug->division);
  if (st.cuts < 0) return;
  std::vector<int64_t> address = aug->address;
  int64_t cost = 0;
  for (int b = 0; b < n; ++b) {
    if (p.buffers[b].relayout_copy) address[b] = -1;
    if (address[b] < 0) cost += std::max<int64_t>(c.weight[b], 0);
  }
  if (best.found && std::make_tuple(cost, st.key()) >= std::make_tuple(best.residency, best.st.key())) return;
  best.found = true;
  best.div = aug->division;
  best.address = std::move(address);
  best.why = exclusions(c, best.div);
  best.residency = cost;
  best.st = st;
}

// The cost expression: every (assignment, resident set) while small, ascending by value, until
// one fits; else local search from the ladder's plan.
void solve_expression(Ctx& c, Best& best, int64_t& scored) {
  const CdProblem& p = *c.p;
  const int n = static_cast<int>(p.buffers.size());
  const CdExpr& f = *c.o->cost;
  auto fits = [&](const std::vector<int>& div, const std::vector<char>& lx, std::vector<int64_t>& address) {
    // A necessary condition first: at no tick do the resident footprints exceed the capacity.
    std::vector<std::pair<int64_t, int64_t>> events;  // (tick, +/- footprint), ends before starts
    for (int b = 0; b < n; ++b)
      if (lx[b]) {
        const int64_t f = per_core_footprint(p.buffers[b], div[b]);
        int64_t start = p.buffers[b].start;  // an in-place child lies inside its parent on the hand-off tick
        for (int q : p.buffers[b].in_place_parents)
          if (lx[q] && p.buffers[q].end == start + 1) start = p.buffers[b].start + 1;
        if (start >= p.buffers[b].end) continue;
        events.emplace_back(start, f);
        events.emplace_back(p.buffers[b].end, -f);
      }
    std::sort(events.begin(), events.end());
    int64_t load = 0;
    for (auto [t, d] : events)
      if ((load += d) > p.capacity) return false;  // a relaxation: never refuses a set that fits
    Placed pl = place(c, div, lx, std::min(0.5, c.dl->remaining_seconds() / 4), false);
    ++scored;
    for (int b = 0; b < n; ++b)
      if (lx[b] && pl.address[b] < 0) {
        if (!pl.proven) c.proven = false;  // maybe feasible after all
        return false;
      }
    address = pl.address;
    return true;
  };
  // The units of residency: a group goes in or out whole.
  auto units_of = [&](const std::vector<std::string>& why) {
    std::vector<std::vector<int>> units;
    std::map<int, int> gi;
    for (int b = 0; b < n; ++b) {
      if (!why[b].empty()) continue;
      const int g = p.buffers[b].group;
      if (g < 0) {
        units.push_back({b});
      } else {
        auto [it, fresh] = gi.try_emplace(g, static_cast<int>(units.size()));
        if (fresh) units.emplace_back();
        units[it->second].push_back(b);
      }
    }
    return units;
  };
  int64_t total = 0;
  std::vector<std::vector<int>> divs;
  if (c.o->exact && assignment_count(p) <= kMaxAssignments) {
    std::vector<int> a(n, 0);
    do {
      if (ladder_cuts(p, a) < 0) continue;
      const auto u = units_of(exclusions(c, a));
      total += u.size() >= 40 ? kMaxResidencySets + 1 : (int64_t{1} << u.size());
      divs.push_back(a);
    } while (next_assignment(p, a) && total <= kMaxResidencySets);
  }
  if (!divs.empty() && total <= kMaxResidencySets) {
    struct Choice {
      double v;
      int d;
      uint64_t mask;
    };
    std::vector<Choice> all;
    std::vector<std::vector<std::vector<int>>> units(divs.size());
    for (std::size_t d = 0; d < divs.size(); ++d) {
      units[d] = units_of(exclusions(c, divs[d]));
      for (uint64_t m = 0; m < (uint64_t{1} << units[d].size()); ++m) {
        std::vector<char> lx(n, 0);
        for (std::size_t u = 0; u < units[d].size(); ++u)
          if (m >> u & 1)
            for (int b : units[d][u]) lx[b] = 1;
        all.push_back({rank(eval(f, p, divs[d], lx)), static_cast<int>(d), m});
      }
    }
    std::stable_sort(all.begin(), all.end(), [](const Choice& x, const Choice& y) { return x.v < y.v; });
    for (const Choice& ch : all) {
      if (c.dl->expired()) {
        c.proven = false;
        break;
      }
      std::vector<char> lx(n, 0);
      for (std::size_t u = 0; u < units[ch.d].size(); ++u)
        if (ch.mask >> u & 1)
          for (int b : units[ch.d][u]) lx[b] = 1;
      std::vector<CdServed> served;
      if (c.relayouts && !relayout_valid(c, divs[ch.d], lx, served)) continue;
      std::vector<int64_t> address;
      if (!fits(divs[ch.d], lx, address)) continue;
      best.served = served;
      best.found = true;
      best.div = divs[ch.d];
      best.address = address;
      best.why = exclusions(c, best.div);
      best.value = ch.v;
      return;
    }
    if (best.found || c.dl->expired()) return;
  }
  // Local search from the ladder's plan: flip one buffer's residency or division, copies out;
  // then, when copies may be chosen, the same moves plus "serve a consumer through a copy" (the
  // copy, its source and the two divisions of one priced option set together). Every candidate
  // is valued by the expression and kept only when strictly lower, so the plan is never worse
  // than the best one found without relayouts.
  const bool with_copies = c.relayouts;
  c.proven = false;
  c.relayouts = false;
  solve_ladder(c, best, scored);
  if (!best.found) return;
  std::vector<char> lx(n);
  for (int b = 0; b < n; ++b) lx[b] = best.address[b] >= 0;
  best.value = rank(eval(f, p, best.div, lx));
  best.served.clear();
  // Copies that cannot serve anything under `div` leave LX (their source out, no option matching,
  // or every consumer edge already served by an earlier copy).
  auto drop_idle_copies = [&](const std::vector<int>& div, std::vector<char>& l) {
    std::set<std::pair<int, int>> edges;
    for (int x = 0; x < n; ++x) {
      const CdBuffer& cp = p.buffers[x];
      if (!cp.relayout_copy || !l[x]) continue;
      const int src = cp.relayout_source;
      bool serves = false;
      if (src >= 0 && l[src])
        for (const auto& o : cp.relayout_options)
          if (o.source_division == div[src] && o.consumer_division == div[o.consumer] && edges.emplace(o.consumer, src).second)
            serves = true;
      if (!serves) l[x] = 0;
    }
  };
  auto try_move = [&](const std::vector<int>& div, std::vector<char> l) {
    if (ladder_cuts(p, div) < 0) return false;
    std::vector<std::string> why = exclusions(c, div);
    for (int x = 0; x < n; ++x)
      if (!why[x].empty()) l[x] = 0;
    std::vector<CdServed> served;
    if (c.relayouts) {
      drop_idle_copies(div, l);
      if (!relayout_valid(c, div, l, served)) return false;
    }
    const double v = rank(eval(f, p, div, l));
    if (!(v < best.value)) return false;
    std::vector<int64_t> address;
    if (!fits(div, l, address)) return false;
    best.div = div;
    best.address = address;
    best.why = why;
    best.value = v;
    best.served = served;
    lx = l;
    return true;
  };
  auto with_group = [&](std::vector<char>& l, int b, char on) {  // a group goes in or out with b
    l[b] = on;
    if (p.buffers[b].group >= 0)
      for (int x = 0; x < n; ++x)
        if (p.buffers[x].group == p.buffers[b].group) l[x] = on;
  };
  auto rematch = [&](std::vector<int>& div, int b) {  // neighbours take a listed pair with b's division
    for (int ch : c.children[b])
      for (const auto& [q, list] : p.buffers[ch].matches)
        if (q == b)
          for (auto [pd, cd] : list)
            if (pd == div[b]) { div[ch] = cd; break; }
    for (const auto& [q, list] : p.buffers[b].matches)
      for (auto [pd, cd] : list)
        if (cd == div[b]) { div[q] = pd; break; }
  };
  auto descend = [&] {
    bool improved = true;
    while (improved && !c.dl->expired()) {
      improved = false;
      // Single changes: b's residency, or b's division (alone, resident, or with its neighbours
      // re-matched and b resident).
      for (int b = 0; b < n && !improved && !c.dl->expired(); ++b) {
        const int nd = static_cast<int>(p.buffers[b].divisions.size());
        for (int d = -1; d < nd && !improved; ++d) {  // -1: flip residency
          for (int mode = 0; mode < (d < 0 ? 1 : 3) && !improved; ++mode) {
            std::vector<int> div = best.div;
            std::vector<char> l = lx;
            if (d < 0) {
              with_group(l, b, !l[b]);
            } else {
              if (d == div[b] && mode == 0) continue;
              div[b] = d;
              if (mode == 2) rematch(div, b);
              if (mode >= 1) with_group(l, b, 1);
            }
            improved = try_move(div, std::move(l));
          }
        }
      }
      // Swaps: one resident unit out, another in (a full LX refuses single additions).
      for (int a = 0; a < n && !improved && !c.dl->expired(); ++a) {
        if (!lx[a]) continue;
        for (int b = 0; b < n && !improved && !c.dl->expired(); ++b) {
          if (lx[b] || p.buffers[b].relayout_copy) continue;
          std::vector<char> l = lx;
          with_group(l, a, 0);
          with_group(l, b, 1);
          improved = try_move(best.div, std::move(l));
        }
      }
      for (int x = 0; x < n && c.relayouts && !improved && !c.dl->expired(); ++x) {
        const CdBuffer& cp = p.buffers[x];
        if (!cp.relayout_copy || cp.relayout_source < 0) continue;
        for (const auto& o : cp.relayout_options) {
          std::vector<int> div = best.div;
          std::vector<char> l = lx;
          div[cp.relayout_source] = o.source_division;
          rematch(div, cp.relayout_source);  // the source's other readers take a listed pair where one exists
          div[o.consumer] = o.consumer_division;
          with_group(l, cp.relayout_source, 1);
          with_group(l, x, 1);
          if ((improved = try_move(div, std::move(l)))) break;
        }
      }
    }
  };
  auto both_phases = [&] {
    c.relayouts = false;
    descend();
    if (with_copies) {
      c.relayouts = true;
      descend();
      best.why = exclusions(c, best.div);  // copies left out are out by choice, not "not priced"
    }
  };
  both_phases();
  // A second start: everything in HBM under the ladder's divisions (the ladder's plan can sit
  // where single changes and swaps cannot leave it); the better end is kept.
  Best first = best;
  const std::vector<int> start = best.div;
  lx.assign(n, 0);
  best.address.assign(n, -1);
  best.served.clear();
  c.relayouts = false;
  best.why = exclusions(c, start);
  best.value = rank(eval(f, p, start, lx));
  both_phases();
  if (first.value <= best.value) best = std::move(first);
}

}  // namespace

int64_t ladder_spill_cost(const CdBuffer& b, int64_t alignment) {
  if (b.size < 0) return 0;
  const int64_t n = static_cast<int64_t>(b.uses.size());
  const int64_t read_count = n - (b.first_use_is_read ? 0 : 1);
  const bool intermediate = b.boundary >= 0 ? b.boundary == 0 : !b.first_use_is_read;
  const int64_t k = read_count - (b.first_use_is_read ? 1 : 0) + (intermediate ? 1 : 0);
  return std::max<int64_t>(k, 0) * ceil_div(b.size, std::max<int64_t>(alignment, 1));
}

int64_t ladder_footprint(const CdBuffer& b, int d) { return per_core_footprint(b, d); }

int64_t ladder_cuts(const CdProblem& p, const std::vector<int>& div) {
  const int n = static_cast<int>(p.buffers.size());
  // 1. Nest ids: distinct level_counts, () = 0.
  std::map<std::vector<int64_t>, int> nest_ids{{{}, 0}};
  bool any_tiled = false;
  for (const CdBuffer& x : p.buffers)
    for (const CdDivision& d : x.divisions)
      if (!d.tile_levels.empty()) {
        any_tiled = true;
        nest_ids.try_emplace(d.tile_levels, static_cast<int>(nest_ids.size()));
      }
  if (!any_tiled) return 0;
  auto nest = [&](int b) { return p.buffers[b].divisions.empty() ? 0 : nest_ids.at(p.buffers[b].divisions[div[b]].tile_levels); };
  // 2. Tileable ops, 3. segments, 4. groups.
  std::vector<char> tileable(n, 0);
  std::vector<int> ops;
  for (int b = 0; b < n; ++b) {
    const CdBuffer& x = p.buffers[b];
    bool has_tiled = false;
    for (const CdDivision& d : x.divisions) has_tiled = has_tiled || !d.tile_levels.empty();
    if (!x.plain && !x.divisions.empty() && !x.uses.empty() && !x.first_use_is_read && !x.relayout_copy && has_tiled) {
      tileable[b] = 1;
      ops.push_back(b);
    }
  }
  std::stable_sort(ops.begin(), ops.end(), [&](int a, int b) { return p.buffers[a].uses[0] < p.buffers[b].uses[0]; });
  std::vector<int> segment(n, -1), group(n, -1);
  int seg = -1, grp = -1;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const int b = ops[i];
    const bool fresh = i == 0 || p.buffers[b].uses[0] != p.buffers[ops[i - 1]].uses[0] + 1;
    if (fresh) ++seg;
    const bool joins = !fresh && nest(b) == nest(ops[i - 1]) && nest(b) != 0;
    if (!joins) ++grp;
    segment[b] = seg;
    group[b] = grp;
  }
  // 5. Pair table inside a shared group; 6. cuts.
  std::vector<std::vector<int>> consumers(n);
  for (int c = 0; c < n; ++c)
    for (int q : p.buffers[c].parents) consumers[q].push_back(c);
  for (int c = 0; c < n; ++c)
    for (int q : p.buffers[c].parents) {
      if (!tileable[c] || !tileable[q] || segment[c] != segment[q] || group[c] != group[q]) continue;
      bool ok = false;
      for (const auto& [pq, list] : p.buffers[c].matches)
        if (pq == q)
          for (auto [pd, cd] : list) ok = ok || (pd == div[q] && cd == div[c]);
      if (!ok) return -1;
    }
  int64_t cuts = 0;
  for (int b = 0; b < n; ++b) {
    const bool tiled = nest(b) != 0;
    if (!tiled) continue;
    bool unshareable = p.buffers[b].boundary == 2 || !tileable[b];
    for (int c : consumers[b]) unshareable = unshareable || !tileable[c] || segment[c] != segment[b];
    if (unshareable || consumers[b].empty()) {
      ++cuts;
      continue;
    }
    bool split = false;
    for (int c : consumers[b]) split = split || group[c] != group[b];
    cuts += split ? 1 : 0;
  }
  return cuts;
}

Result<CdExpr> cost_expr_from_json(const Json& j, const std::string& source, int buffers) {
  using Op = CdExpr::Op;
  static const std::map<std::string, Op> kOps = {
      {"add", Op::kAdd},     {"mul", Op::kMul},     {"pow", Op::kPow},       {"min", Op::kMin},
      {"max", Op::kMax},     {"abs", Op::kAbs},     {"log", Op::kLog},       {"exp", Op::kExp},
      {"floor", Op::kFloor}, {"ceiling", Op::kCeil}, {"delta", Op::kDelta},  {"charge", Op::kCharge},
      {"piecewise", Op::kPiecewise}, {"lt", Op::kLt}, {"le", Op::kLe}, {"gt", Op::kGt}, {"ge", Op::kGe},
      {"eq", Op::kEq},       {"ne", Op::kNe},       {"and", Op::kAnd},       {"or", Op::kOr}, {"not", Op::kNot}};
  std::function<CdExpr(const JsonCursor&, int)> read = [&](const JsonCursor& c, int depth) -> CdExpr {
    if (depth > 200) c.fail("expression nested deeper than 200");
    CdExpr e;
    if (c.node().is_number()) {
      e.value = c.as_number();
      return e;
    }
    if (!c.node().is_array() || c.array_size() == 0) c.fail("expected a number or [op, args...]");
    const std::string op = c.at(0).as_string();
    auto buffer = [&](std::size_t i) {
      int64_t b = c.at(i).as_int_at_least(0);
      if (b >= buffers) c.at(i).fail("buffer index out of range");
      return static_cast<int>(b);
    };
    if (op == "const") {
      e.value = c.at(1).as_number();
    } else if (op == "is_lx") {
      e.op = Op::kIsLx, e.buffer = buffer(1);
    } else if (op == "division") {
      e.op = Op::kDivision, e.buffer = buffer(1);
    } else if (op == "split") {
      e.op = Op::kSplit, e.buffer = buffer(1), e.key = c.at(2).as_int_at_least(0);
    } else {
      auto it = kOps.find(op);
      if (it == kOps.end()) c.at(0).fail("unknown operation '" + op + "'");
      e.op = it->second;
      for (std::size_t i = 1; i < c.array_size(); ++i) e.args.push_back(read(c.at(i), depth + 1));
      const std::size_t k = e.args.size();
      const bool unary = e.op == Op::kAbs || e.op == Op::kLog || e.op == Op::kExp || e.op == Op::kFloor ||
                         e.op == Op::kCeil || e.op == Op::kNot;
      const bool binary = e.op == Op::kPow || e.op == Op::kDelta || (e.op >= Op::kLt && e.op <= Op::kNe);
      if ((unary && k != 1) || (binary && k != 2) || k == 0 || (e.op == Op::kCharge && k < 2) ||
          (e.op == Op::kPiecewise && k % 2))
        c.fail("wrong number of operands for '" + op + "'");
    }
    return e;
  };
  try {
    return read(JsonCursor(j, source), 0);
  } catch (const JsonInputError& e) {
    return bad_input(e.what());
  }
}

Result<LadderSolution> solve_division_ladder(const CdProblem& p, const LadderOptions& o) {
  Deadline dl(o.time_limit > 0 ? o.time_limit : -1.0);
  const int n = static_cast<int>(p.buffers.size());
  Ctx c{&p, &o, std::vector<std::vector<int>>(n), std::vector<int64_t>(n), &dl, true, false, {}};
  c.has_copy.assign(n, 0);
  for (int b = 0; b < n; ++b) {
    for (int q : p.buffers[b].parents) c.children[q].push_back(b);
    c.weight[b] = ladder_spill_cost(p.buffers[b], p.alignment);
    if (p.buffers[b].relayout_copy && p.buffers[b].relayout_source >= 0) {
      c.has_copy[p.buffers[b].relayout_source] = 1;
      c.relayouts = o.cost != nullptr;  // the ladder pins copies out: an unpriced shuffle would look free
    }
  }
  LadderSolution s;
  // Model size, counted the way a CP model of this problem would be: a residency and an offset
  // per buffer and a literal per candidate; a no-overlap pair per co-live pair, a gate per edge,
  // one per in-place edge and per group member.
  s.variables = 2 * static_cast<int64_t>(n);
  for (const CdBuffer& x : p.buffers) s.variables += static_cast<int64_t>(x.divisions.size());
  for (int a = 0; a < n; ++a) {
    const CdBuffer& x = p.buffers[a];
    s.constraints += static_cast<int64_t>(x.parents.size() + x.in_place_parents.size()) + (x.group >= 0 ? 1 : 0);
    for (int b = a + 1; b < n; ++b) {
      const CdBuffer& y = p.buffers[b];
      if (!x.uses.empty() && !y.uses.empty() && x.start < y.end && y.start < x.end) ++s.constraints;
    }
  }
  Best best;
  if (n > 0) {
    if (o.cost) solve_expression(c, best, s.assignments);
    else solve_ladder(c, best, s.assignments);
    if (!best.found) return bad_input("no division choice satisfies the tiled pair tables (every shared loop nest uses an unlisted pair)");
  }
  s.division = n ? best.div : std::vector<int>{};
  s.address = n ? best.address : std::vector<int64_t>{};
  s.reason.assign(n, "");
  std::vector<char> lx(n, 0);
  for (int b = 0; b < n; ++b) {
    lx[b] = s.address[b] >= 0;
    if (!lx[b]) {
      s.reason[b] = best.why[b].empty() ? kChosenSpill : best.why[b];
      s.residency_cost += c.weight[b];
    }
  }
  if (n) {
    Static st = static_terms(p, s.division);
    s.cuts = st.cuts, s.cores = -st.neg_cores, s.split_sq = st.split_sq, s.tiles = st.tiles;
    if (o.cost) s.objective = eval(*o.cost, p, s.division, lx);
  }
  s.served = best.served;
  s.optimal = c.proven;
  s.seconds = dl.elapsed_seconds();
  if (Status st = check_division_plan(p, s.division, s.address, s.served); !st) return st.error();
  return s;
}

}  // namespace sp::lx
