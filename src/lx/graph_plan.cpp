// plan_graph: clone insertion and pruning around the placement, then op reordering.
#include <algorithm>
#include <map>
#include <string>

#include "core/deadline.h"
#include "lx/lx.h"
#include "lx/planner_internal.h"

namespace sp::lx {

Graph insert_clones(const Graph& g, const std::vector<char>& keep, Bytes capacity) {
  // One pass over the ops collects, per graph input, its reads, first reader and whether every
  // reader can share one LX copy (linear in the program: 100k-op programs replan this often).
  const std::size_t nt = g.tensors.size();
  std::vector<int> reads(nt, 0), first_reader(nt, -1), first_operand(nt, -1);
  std::vector<char> ok(nt, 1), written(nt, 0);
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const GOp& op = g.ops[i];
    for (const GOperand& w : op.writes) written[w.tensor] = 1;  // an op re-writing its input counts
    for (std::size_t k = 0; k < op.reads.size(); ++k) {
      const int t = op.reads[k].tensor;
      if (!g.tensors[t].graph_input || !keep[t]) continue;
      if (written[t]) ok[t] = 0;  // redefined input: keep the simple case only
      ++reads[t];
      if (first_reader[t] < 0) {
        first_reader[t] = static_cast<int>(i);
        first_operand[t] = static_cast<int>(k);
      } else if (op.reads[k].slicing != g.ops[first_reader[t]].reads[first_operand[t]].slicing) {
        ok[t] = 0;  // consumers slice it differently: one LX copy cannot serve them all
      }
      if (!op.lx_capable) ok[t] = 0;
    }
  }
  Graph out;
  out.name = g.name;
  out.tensors = g.tensors;
  std::vector<int> clone_of(nt, -1);
  std::vector<std::vector<int>> before(g.ops.size());  // clone ops (by input tensor) before op i
  for (std::size_t t = 0; t < nt; ++t) {
    if (!g.tensors[t].graph_input || !keep[t] || !ok[t] || reads[t] < 2 || first_reader[t] < 0) continue;
    if (g.ops[first_reader[t]].reads[first_operand[t]].per_core > capacity) continue;
    GTensor c;
    c.name = g.tensors[t].name + ".lx";
    c.bytes = g.tensors[t].bytes;
    c.elements = g.tensors[t].elements;
    out.tensors.push_back(c);
    clone_of[t] = static_cast<int>(out.tensors.size()) - 1;
    before[first_reader[t]].push_back(static_cast<int>(t));
  }
  out.ops.reserve(g.ops.size() + out.tensors.size() - nt);
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    for (int t : before[i]) {
      const GOperand& first = g.ops[i].reads[first_operand[t]];
      GOp op;
      op.name = "clone_" + g.tensors[t].name;
      op.kind = "clone";
      op.reads.push_back(GOperand{t, first.slicing, first.per_core});  // each core reads its own slice
      op.writes.push_back(GOperand{clone_of[t], first.slicing, first.per_core});
      op.cores = g.ops[i].cores;
      op.splits = g.ops[i].splits;
      out.ops.push_back(std::move(op));
    }
    GOp op = g.ops[i];
    for (GOperand& r : op.reads)
      if (clone_of[r.tensor] >= 0) r.tensor = clone_of[r.tensor];
    out.ops.push_back(std::move(op));
  }
  return out;
}

std::vector<RingCandidate> ring_candidates(const Graph& g, Bytes capacity) {
  // A value written once by an op that can write LX, read by ops that can read it, some of them
  // under another slicing than the write's. Graph inputs (no producer on chip) and values
  // redefined later are left as they are.
  const std::size_t nt = g.tensors.size();
  std::vector<int> writer(nt, -1), writes(nt, 0);
  std::vector<const GOperand*> wop(nt, nullptr);
  for (std::size_t i = 0; i < g.ops.size(); ++i)
    for (const GOperand& w : g.ops[i].writes) {
      ++writes[w.tensor];
      writer[w.tensor] = static_cast<int>(i);
      wop[w.tensor] = &w;
    }
  std::vector<RingCandidate> out;
  std::vector<std::vector<std::string>> seen(nt);
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const GOp& c = g.ops[i];
    if (!c.lx_capable) continue;
    for (const GOperand& r : c.reads) {
      const int t = r.tensor;
      if (writes[t] != 1 || writer[t] < 0 || writer[t] >= static_cast<int>(i)) continue;
      const GOp& d = g.ops[writer[t]];
      if (!d.lx_capable || d.reduction_split || d.kind == "combine" || g.tensors[t].partial_of >= 0) continue;
      if (r.slicing == wop[t]->slicing || wop[t]->per_core > capacity || r.per_core > capacity) continue;
      if (std::find(seen[t].begin(), seen[t].end(), r.slicing) != seen[t].end()) continue;
      seen[t].push_back(r.slicing);
      out.push_back({t, r.slicing, static_cast<int>(i)});
    }
  }
  return out;
}

Graph insert_rings(const Graph& g, const std::vector<RingCandidate>& cands, const std::vector<char>& keep) {
  Graph out;
  out.name = g.name;
  out.tensors = g.tensors;
  std::vector<std::vector<int>> before(g.ops.size());  // kept candidates whose ring op goes before op i
  std::map<std::pair<int, std::string>, int> moved;    // (tensor, slicing) -> ring tensor
  std::vector<const GOperand*> written(g.tensors.size(), nullptr);  // each value's write operand
  for (const GOp& op : g.ops)
    for (const GOperand& w : op.writes) written[w.tensor] = &w;
  for (std::size_t k = 0; k < cands.size(); ++k) {
    if (!keep[k]) continue;
    const RingCandidate& c = cands[k];
    GTensor x = g.tensors[c.tensor];
    x.name = g.tensors[c.tensor].name + ".ring" + std::to_string(k);
    x.graph_input = x.graph_output = false;
    out.tensors.push_back(x);
    moved[{c.tensor, c.slicing}] = static_cast<int>(out.tensors.size()) - 1;
    before[c.first_reader].push_back(static_cast<int>(k));
  }
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    for (int k : before[i]) {
      const RingCandidate& c = cands[k];
      const GOperand* src = written[c.tensor];
      const GOperand* dst = nullptr;
      for (const GOperand& r : g.ops[i].reads)
        if (r.tensor == c.tensor && r.slicing == c.slicing) dst = &r;
      GOp op;
      op.name = "ring_" + g.tensors[c.tensor].name + "_" + std::to_string(k);
      op.kind = "ring";
      op.reads.push_back(*src);  // read on LX as its producer wrote it
      op.writes.push_back(GOperand{moved[{c.tensor, c.slicing}], c.slicing, dst->per_core});
      op.cores = g.ops[i].cores;
      op.splits = g.ops[i].splits;
      op.ring_bytes = dst->per_core;  // every core receives its whole new slice (an upper bound)
      out.ops.push_back(std::move(op));
    }
    GOp op = g.ops[i];
    for (GOperand& r : op.reads) {
      auto it = moved.find({r.tensor, r.slicing});
      if (it != moved.end()) r.tensor = it->second;
    }
    out.ops.push_back(std::move(op));
  }
  return out;
}

namespace {

Bytes hbm_of(const Plan& p) { return p.totals.hbm_read + p.totals.hbm_write; }

// The planner's order: estimated time, then HBM bytes.
bool faster(const Plan& a, const Plan& b) {
  if (a.totals.time_s < b.totals.time_s * (1 - 1e-9)) return true;
  if (a.totals.time_s > b.totals.time_s * (1 + 1e-9)) return false;
  return hbm_of(a) < hbm_of(b);
}

Result<Plan> plan_with_clones(const Graph& g, const Hardware& hw, const Options& o, double seconds, bool fast);

// Ring transfers: every subset of the candidates while there are at most kExactRings (each
// planned in full), else all of them, then those whose two ends are not both on LX dropped, then
// each remaining one dropped when the plan without it is no slower; the plan without any ring is
// always a candidate, so a ring is kept only when it makes the plan faster (or, as fast, lighter
// on HBM) than sending the value through HBM.
constexpr int kExactRings = 4;

Result<Plan> plan_with_rings(const Graph& g, const Hardware& hw, const Options& o, double seconds, bool fast) {
  std::vector<RingCandidate> cands;
  if (!fast && o.lx && o.ring_transfers && hw.ring_bytes_per_s > 0) cands = ring_candidates(g, lx_capacity(hw));
  if (cands.empty()) return plan_with_clones(g, hw, o, seconds, fast);
  Budget dl(seconds);
  const int n = static_cast<int>(cands.size());
  auto plan_mask = [&](const std::vector<char>& keep, double s) -> Result<Plan> {
    auto p = plan_with_clones(insert_rings(g, cands, keep), hw, o, s, false);
    if (p) {
      p->ring_transfers = static_cast<int>(std::count(keep.begin(), keep.end(), 1));
      if (p->ring_transfers)
        p->notes.push_back("ring transfers: " + std::to_string(p->ring_transfers) + " of " + std::to_string(n) +
                           " mismatched slicings moved LX-to-LX instead of through HBM");
    }
    return p;
  };
  auto best = plan_mask(std::vector<char>(n, 0), left(dl) / (n <= kExactRings ? (1 << n) : n + 3));
  if (!best) return best;
  if (n <= kExactRings) {
    for (int m = 1; m < (1 << n); ++m) {
      std::vector<char> keep(n);
      for (int k = 0; k < n; ++k) keep[k] = m >> k & 1;
      auto p = plan_mask(keep, left(dl) / ((1 << n) - m));
      if (!p) return p;
      if (faster(*p, *best)) best = std::move(p);
    }
    return best;
  }
  std::vector<char> keep(n, 1);
  auto all = plan_mask(keep, left(dl) / (n + 2));
  if (!all) return all;
  // Drop the rings whose source or copy did not get LX (they move the value through HBM anyway).
  for (const PlanValue& v : all->values) {
    if (v.def < 0 || all->graph.ops[v.def].kind != "ring") continue;
    const std::string& name = all->graph.tensors[v.tensor].name;
    const int k = std::stoi(name.substr(name.rfind(".ring") + 5));
    bool src_lx = false;
    for (const PlanValue& u : all->values)
      if (u.tensor == cands[k].tensor && !u.lx.empty()) src_lx = true;
    if (v.lx.empty() || !src_lx) keep[k] = 0;
  }
  auto cur = plan_mask(keep, left(dl) / (n + 1));
  if (!cur) return cur;
  // Each remaining ring on its own, at most kRingDropTests of them (each test is a full plan).
  constexpr int kRingDropTests = 16;
  for (int k = 0, tests = 0; k < n && tests < kRingDropTests && !dl.expired(); ++k) {
    if (!keep[k]) continue;
    ++tests;
    keep[k] = 0;
    auto p = plan_mask(keep, left(dl) / (n - k + 1));
    if (!p) return p;
    if (!faster(*cur, *p)) cur = std::move(p);
    else keep[k] = 1;
  }
  return faster(*cur, *best) ? cur : best;
}

// Plans with clone pruning: a clone whose copy did not get LX is removed and the graph replanned.
Result<Plan> plan_with_clones(const Graph& g, const Hardware& hw, const Options& o, double seconds, bool fast) {
  Budget dl(seconds);
  std::vector<char> keep(g.tensors.size(), o.lx && o.clone_inputs ? 1 : 0);
  Result<Plan> plan = internal_error("no plan");
  for (int round = 0; round < 6; ++round) {
    Graph gg = insert_clones(g, keep, lx_capacity(hw));
    plan = plan_graph_once(std::move(gg), hw, o, left(dl) / 2, fast);
    if (!plan) return plan;
    bool dropped = false;
    for (const PlanValue& v : plan->values) {
      if (!v.clone || !v.lx.empty()) continue;
      int src = plan->graph.ops[v.def].reads[0].tensor;
      keep[src] = 0;
      dropped = true;
    }
    if (!dropped) break;
  }
  int clones = 0;
  for (const PlanValue& v : plan->values) clones += v.clone;
  plan->clones = clones;
  return plan;
}

// Ops i and j conflict when they touch a common tensor and one of them writes it.
bool conflict(const GOp& a, const GOp& b) {
  auto touches = [](const GOp& op, int t, bool* writes) {
    bool any = false;
    for (const GOperand& r : op.reads) any = any || r.tensor == t;
    for (const GOperand& w : op.writes)
      if (w.tensor == t) any = *writes = true;
    return any;
  };
  for (const GOp* x : {&a, &b}) {
    const GOp* y = x == &a ? &b : &a;
    for (const GOperand& w : x->writes) {
      bool yw = false;
      if (touches(*y, w.tensor, &yw)) return true;
    }
  }
  return false;
}

Graph move_op(const Graph& g, int from, int to) {
  Graph h = g;
  GOp op = h.ops[from];
  h.ops.erase(h.ops.begin() + from);
  h.ops.insert(h.ops.begin() + to, std::move(op));
  return h;
}

}  // namespace

Result<Plan> plan_graph_impl(const Graph& g, const Hardware& hw, const Options& o, double seconds, bool fast) {
  Budget dl(seconds);
  if (!o.lx || !o.reorder || fast || g.ops.size() > 200)
    return plan_with_rings(g, hw, o, left(dl), fast);
  // Reordering: hill-climb over single-op moves to the ends of each op's legal window, scored
  // by a fast heuristic placement; the final plan is kept only if the full planner agrees.
  auto base_fast = plan_with_clones(g, hw, o, 0.0, true);
  if (!base_fast) return base_fast;
  Graph cur = g;
  Bytes cur_cost = hbm_of(*base_fast);
  int moves = 0;
  std::vector<std::string> notes;
  const double search_budget = left(dl) * 0.4;
  Budget search(search_budget);
  bool improved = true;
  while (improved && !search.expired()) {
    improved = false;
    const int n = static_cast<int>(cur.ops.size());
    for (int i = 0; i < n && !search.expired(); ++i) {
      int lo = i, hi = i;
      while (lo > 0 && !conflict(cur.ops[lo - 1], cur.ops[i])) --lo;
      while (hi + 1 < n && !conflict(cur.ops[hi + 1], cur.ops[i])) ++hi;
      for (int to : {lo, hi}) {
        if (to == i) continue;
        Graph h = move_op(cur, i, to);
        auto p = plan_with_clones(h, hw, o, 0.0, true);
        if (!p) return p;
        if (hbm_of(*p) < cur_cost) {
          notes.push_back("moved op '" + cur.ops[i].name + "' from position " + std::to_string(i) + " to " +
                          std::to_string(to));
          cur = std::move(h);
          cur_cost = hbm_of(*p);
          ++moves;
          improved = true;
          break;
        }
      }
    }
  }
  auto plain = plan_with_rings(g, hw, o, moves ? left(dl) / 2 : left(dl), false);
  if (!plain || moves == 0) return plain;
  auto reordered = plan_with_rings(cur, hw, o, left(dl), false);
  if (!reordered) return reordered;
  if (hbm_of(*reordered) < hbm_of(*plain)) {
    reordered->reorders = moves;
    for (auto& s : notes) reordered->notes.push_back(s);
    return reordered;
  }
  return plain;
}

Result<Plan> plan_graph(const Graph& g, const Hardware& hw, const Options& o) {
  if (o.cores < 1 || o.cores > hw.max_cores)
    return bad_input("--cores " + std::to_string(o.cores) + ": hardware '" + hw.name + "' has 1.." +
                     std::to_string(hw.max_cores) + " cores");
  const WallGuard wall(o.time_limit);
  return plan_graph_impl(g, hw, o, o.time_limit, false);
}

}  // namespace sp::lx
