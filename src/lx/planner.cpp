// LX planning of a graph: versioned liveness, eligibility with reasons, clones, in-place edges,
// placement through the alloc engine's selection objective, eviction segments, reordering,
// accounting and the roofline time. Programs are lowered to a Graph in program_plan.cpp.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "alloc/solver.h"
#include "core/deadline.h"
#include "lx/lx.h"
#include "lx/planner_internal.h"

namespace sp::lx {
namespace {


// One candidate LX residency: a whole value, or one segment of it when eviction splits it.
struct Item {
  int value = -1;
  OpIndex start = 0, end = 0;  // ops, inclusive
  bool reload = false;         // segment after an eviction
  Bytes saved = 0;             // HBM bytes saved when resident
};

struct Built {
  std::vector<PlanValue> values;
  std::vector<int64_t> elements;  // per value: host elements of its tensor
  std::vector<char> eligible;
};

// Versioned (SSA) liveness: each write starts a new value; reads refer to the latest version.
Result<Built> build_values(const Graph& g) {
  Built b;
  std::vector<int> cur(g.tensors.size(), -1);
  std::vector<int> versions(g.tensors.size(), 0);
  auto new_value = [&](int t, OpIndex def) {
    PlanValue v;
    v.tensor = t;
    v.def = def;
    v.name = g.tensors[t].name + (versions[t] ? "#" + std::to_string(versions[t]) : "");
    ++versions[t];
    v.bytes = g.tensors[t].bytes;
    b.values.push_back(std::move(v));
    b.elements.push_back(g.tensors[t].elements);
    cur[t] = static_cast<int>(b.values.size()) - 1;
  };
  for (std::size_t t = 0; t < g.tensors.size(); ++t)
    if (g.tensors[t].graph_input) new_value(static_cast<int>(t), -1);
  for (OpIndex i = 0; i < static_cast<OpIndex>(g.ops.size()); ++i) {
    const GOp& op = g.ops[i];
    for (const GOperand& r : op.reads) {
      if (r.tensor < 0 || r.tensor >= static_cast<int>(g.tensors.size()))
        return bad_input(g.name + ": op '" + op.name + "' reads a tensor that does not exist");
      if (cur[r.tensor] < 0)
        return bad_input(g.name + ": op '" + op.name + "' reads '" + g.tensors[r.tensor].name +
                         "' before any op produces it");
      b.values[cur[r.tensor]].uses.push_back(i);
    }
    for (const GOperand& w : op.writes) {
      if (w.tensor < 0 || w.tensor >= static_cast<int>(g.tensors.size()))
        return bad_input(g.name + ": op '" + op.name + "' writes a tensor that does not exist");
      new_value(w.tensor, i);
    }
  }
  return b;
}

const GOperand* write_operand(const Graph& g, const PlanValue& v) {
  for (const GOperand& w : g.ops[v.def].writes)
    if (w.tensor == v.tensor) return &w;
  return nullptr;
}
const GOperand* read_operand(const Graph& g, OpIndex op, int tensor) {
  for (const GOperand& r : g.ops[op].reads)
    if (r.tensor == tensor) return &r;
  return nullptr;
}

// Per value: whether it may live on LX, and if not, why (NOTES.md §1.3 order, adapted).
void decide_eligibility(const Graph& g, const Options& o, Bytes capacity, Bytes alignment, PlanState& s) {
  const int n = static_cast<int>(s.values.size());
  s.eligible.assign(n, 0);
  std::vector<int> last_version(g.tensors.size(), -1);
  for (int v = 0; v < n; ++v) last_version[s.values[v].tensor] = v;
  for (int v = 0; v < n; ++v) {
    PlanValue& pv = s.values[v];
    const GTensor& t = g.tensors[pv.tensor];
    pv.clone = pv.def >= 0 && g.ops[pv.def].kind == "clone";
    bool is_output = t.graph_output && last_version[pv.tensor] == v;
    // per-core size and slicing
    std::string slicing;
    Bytes per_core = 0;
    if (pv.def >= 0) {
      const GOperand* w = write_operand(g, pv);
      slicing = w->slicing;
      per_core = w->per_core;
    } else {
      for (OpIndex u : pv.uses) per_core = std::max(per_core, read_operand(g, u, pv.tensor)->per_core);
    }
    pv.per_core = per_core;  // addresses are aligned, sizes are not rounded
    (void)alignment;
    auto reason = [&]() -> std::string {
      if (!o.lx) return "LX planning off";
      if (pv.def < 0) return "graph input (no clone)";
      if (is_output && !(o.clone_outputs && !pv.uses.empty())) return "graph output (no clone)";
      const GOp& d = g.ops[pv.def];
      if (o.only_reduction_outputs && !d.reduction) return "not a reduction output (stage 2 pins only those)";
      if (!d.lx_capable) return "op not allowed: producer '" + d.name + "' is an opaque kernel";
      if (d.reduction_split)
        return "partial sums: '" + d.name + "' splits its reduction " + std::to_string(d.reduction_factor) +
               " ways; each core group writes a partial output, combined across cores through HBM";
      if (d.kind == "combine") return "reduction split: '" + d.name + "' sums the partial results in HBM";
      if (pv.uses.empty()) return "no consumer reads it from LX";
      for (OpIndex u : pv.uses) {
        const GOp& c = g.ops[u];
        if (!c.lx_capable) return "consumer '" + c.name + "' is an opaque kernel";
        for (const GOperand& r : c.reads)
          if (r.tensor == pv.tensor && r.slicing != slicing)
            return "core-div mismatch: '" + d.name + "' slices it " + (slicing.empty() ? "whole" : slicing) + ", '" +
                   c.name + "' reads it " + (r.slicing.empty() ? "whole" : r.slicing);
      }
      if (pv.per_core > capacity)
        return "does not fit: " + std::to_string(pv.per_core) + " B per core > " + std::to_string(capacity) +
               " B of LX";
      return "";
    };
    pv.reason = reason();
    pv.output_clone = is_output && pv.reason.empty();
    s.eligible[v] = pv.reason.empty();
    pv.uses.erase(std::unique(pv.uses.begin(), pv.uses.end()), pv.uses.end()) ;
  }
}

// Bytes a value moves over HBM when it never touches LX.
Bytes hbm_traffic_all_hbm(const Graph& g, const PlanValue& v) {
  int reads = 0;
  for (OpIndex u : v.uses)
    for (const GOperand& r : g.ops[u].reads) reads += r.tensor == v.tensor;
  return v.bytes * ((v.def >= 0 ? 1 : 0) + reads);
}

int reads_at(const Graph& g, const PlanValue& v, OpIndex u) {
  int k = 0;
  for (const GOperand& r : g.ops[u].reads) k += r.tensor == v.tensor;
  return k;
}

struct PlaceResult {
  std::vector<Item> items;
  std::vector<alloc::Offset> offsets;
  Bytes saved = 0;
  std::string solver;
  bool proven = false;
  Bytes lower_bound_unsaved = 0;  // selection lower bound on the spilled savings (no eviction)
};

// Runs the alloc engine on the items. in-place parents are passed through for whole values.
Result<PlaceResult> place_items(const Options& o, const PlanState& s, std::vector<Item> items,
                                Bytes capacity, Bytes alignment, double seconds, bool fast) {
  alloc::Problem p;
  p.capacity = capacity;
  std::map<int, int> whole_item;  // value -> item index (whole values only)
  for (std::size_t k = 0; k < items.size(); ++k) {
    const Item& it = items[k];
    const PlanValue& v = s.values[it.value];
    if (!it.reload && it.start == (v.def >= 0 ? v.def : 0) && it.end == v.uses.back()) whole_item[it.value] = static_cast<int>(k);
  }
  for (std::size_t k = 0; k < items.size(); ++k) {
    const Item& it = items[k];
    const PlanValue& v = s.values[it.value];
    alloc::Buffer b;
    b.id = v.name + (it.reload ? "@" + std::to_string(it.start) : "");
    b.size = v.per_core;
    b.start = it.start;
    b.end = it.end + 1;
    b.alignment = alignment;
    b.reads = 1;
    b.produced_on_chip = true;
    b.spill_cost = it.saved;
    if (o.in_place && v.in_place_parent >= 0) {
      auto pit = whole_item.find(v.in_place_parent);
      auto cit = whole_item.find(it.value);
      if (pit != whole_item.end() && cit != whole_item.end() && cit->second == static_cast<int>(k))
        b.in_place_parents.push_back(pit->second);
    }
    p.buffers.push_back(std::move(b));
  }
  PlaceResult r;
  r.items = std::move(items);
  if (p.buffers.empty()) {
    r.solver = "none";
    r.proven = true;
    return r;
  }
  alloc::SolveOptions so;
  so.objective = alloc::Objective::kSelect;
  so.solver = fast ? alloc::SolverKind::kBestFit : alloc::SolverKind::kAuto;
  so.threads = 1;
  so.seed = o.seed;
  // Large programs: a rolling horizon. Buffers in start order are placed in chunks of
  // kChunk; buffers of earlier chunks still live at a chunk's first start enter it pinned at
  // their address (spilled ones stay spilled). The placers are quadratic in the buffers they
  // see, so this keeps the fixed cost linear in the program; programs up to kChunk buffers are
  // placed in one piece as before. Time is shared by size.
  constexpr int kChunk = 1500;
  const int nb = static_cast<int>(p.buffers.size());
  std::vector<int> order(nb);
  std::iota(order.begin(), order.end(), 0);
  if (nb > kChunk)
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p.buffers[a].start < p.buffers[b].start; });
  r.offsets.assign(nb, alloc::kSpilled);
  r.proven = true;
  // The engine's work budget is drawn from the nominal seconds (its clock is a guard only).
  Budget dl(seconds);
  const auto place_budget = [&](double nominal) {
    if (fast) {
      so.time_limit = -1.0;  // one best-fit pass to its end (a zero limit stopped it after 64 buffers)
    } else if (!std::isfinite(nominal)) {
      so.time_limit = -1.0;  // no limit: every stage runs to its end
      so.work_limit = 0;
    } else {
      so.time_limit = WallGuard::seconds_left();
      so.work_limit = std::max<int64_t>(1, static_cast<int64_t>(std::min(nominal * kPlaceWorkPerSecond, 1e15)));
    }
  };
  std::size_t largest = 0;
  std::vector<int> local(nb, -1);
  std::vector<int> carried;  // placed buffers of earlier chunks that may still be live
  for (int lo = 0; lo < nb;) {
    const int hi = std::min(nb, lo + kChunk);
    const int64_t first = p.buffers[order[lo]].start;
    alloc::Problem sub;
    sub.capacity = capacity;
    std::vector<int> keep;
    for (int b : carried)
      if (p.buffers[b].end > first) {
        keep.push_back(b);
        local[b] = static_cast<int>(sub.buffers.size());
        sub.buffers.push_back(p.buffers[b]);
        sub.buffers.back().fixed_offset = r.offsets[b];
        sub.buffers.back().in_place_parents.clear();
      } else {
        local[b] = -1;
      }
    carried = std::move(keep);
    const int nfixed = static_cast<int>(sub.buffers.size());
    for (int k = lo; k < hi; ++k) {
      local[order[k]] = static_cast<int>(sub.buffers.size());
      sub.buffers.push_back(p.buffers[order[k]]);
    }
    for (int k = nfixed; k < static_cast<int>(sub.buffers.size()); ++k) {
      std::vector<int> parents;
      for (int q : sub.buffers[k].in_place_parents)
        if (local[q] >= 0) parents.push_back(local[q]);
      sub.buffers[k].in_place_parents = std::move(parents);
    }
    place_budget(left(dl) * static_cast<double>(hi - lo) / static_cast<double>(nb - lo));
    auto res = alloc::solve(sub, so);
    if (!res) return Error{ErrorKind::kInternal, "LX placement: " + res.error().message};
    const double nsub = static_cast<double>(sub.buffers.size());
    spend(static_cast<double>(res->work) / kPlaceWorkPerSecond + (fast ? 0.0 : nsub * nsub / kPlacePairsPerSecond));
    for (int k = lo; k < hi; ++k) {
      r.offsets[order[k]] = res->placement.offsets[nfixed + k - lo];
      if (r.offsets[order[k]] != alloc::kSpilled) carried.push_back(order[k]);
    }
    for (int k = lo; k < hi; ++k) local[order[k]] = -1;
    for (int b : carried) local[b] = -1;
    r.proven = r.proven && res->proven_optimal && nb <= kChunk;
    if (nb <= kChunk) r.lower_bound_unsaved = res->lower_bound;
    if (static_cast<std::size_t>(hi - lo) > largest) {
      largest = static_cast<std::size_t>(hi - lo);
      r.solver = res->solver + (nb > kChunk ? " (rolling horizon)" : "");
    }
    lo = hi;
  }
  for (std::size_t k = 0; k < r.items.size(); ++k)
    if (r.offsets[k] != alloc::kSpilled) r.saved += r.items[k].saved;
  return r;
}

// Whole-value items for every eligible value, with in-place parents decided.
std::vector<Item> whole_items(const Graph& g, const Options& o, PlanState& s) {
  std::vector<Item> items;
  const int n = static_cast<int>(s.values.size());
  for (int v = 0; v < n; ++v) {
    PlanValue& pv = s.values[v];
    pv.in_place_parent = -1;
    if (!s.eligible[v]) continue;
    Item it;
    it.value = v;
    it.start = pv.def;
    it.end = pv.uses.back();
    Bytes all = hbm_traffic_all_hbm(g, pv);
    if (pv.clone) all = pv.bytes * (all / std::max<Bytes>(1, pv.bytes) - 2);  // reads - 1: the clone's read stays
    if (pv.output_clone) all -= pv.bytes;  // the HBM copy is still written once
    it.saved = std::max<Bytes>(0, all);
    items.push_back(it);
  }
  if (o.in_place) {
    std::vector<std::vector<int>> read_values(g.ops.size());
    for (int v = 0; v < n; ++v)
      for (OpIndex u : s.values[v].uses) read_values[u].push_back(v);
    for (int v = 0; v < n; ++v) {
      PlanValue& c = s.values[v];
      if (!s.eligible[v] || c.def < 0 || !g.ops[c.def].in_placeable) continue;
      const GOperand* w = write_operand(g, c);
      for (const GOperand& r : g.ops[c.def].reads) {
        // the value read by this op: latest version of r.tensor defined before c.def
        int pv = -1;
        for (int u : read_values[c.def])
          if (s.values[u].tensor == r.tensor) pv = u;
        if (pv < 0 || !s.eligible[pv]) continue;
        const PlanValue& par = s.values[pv];
        if (par.uses.back() != c.def || par.def >= c.def) continue;
        if (r.slicing != w->slicing || par.per_core != c.per_core || par.bytes != c.bytes) continue;
        c.in_place_parent = pv;
        break;
      }
    }
  }
  return items;
}

// Eviction: a value that did not fit whole is offered as segments split at dormant gaps; a
// later segment pays one reload, and the first segment's write-back replaces the producer's write.
std::vector<Item> eviction_items(const Graph& g, const PlanState& s, int v) {
  const PlanValue& pv = s.values[v];
  std::vector<Item> out;
  if (pv.clone || pv.def < 0 || pv.output_clone) return out;
  std::vector<std::vector<OpIndex>> groups{{}};
  OpIndex prev = pv.def;
  for (OpIndex u : pv.uses) {
    if (u - prev >= 2 && !groups.back().empty()) groups.emplace_back();
    groups.back().push_back(u);
    prev = u;
  }
  if (groups.size() < 2) return out;
  for (std::size_t k = 0; k < groups.size(); ++k) {
    int reads = 0;
    for (OpIndex u : groups[k]) reads += reads_at(g, pv, u);
    Item it;
    it.value = v;
    it.reload = k > 0;
    it.start = k == 0 ? pv.def : groups[k].front();
    it.end = groups[k].back();
    it.saved = pv.bytes * (k == 0 ? reads : reads - 1);
    if (it.saved > 0) out.push_back(it);
  }
  return out;
}

}  // namespace

Result<Plan> plan_graph_once(Graph graph, const Hardware& hw, const Options& o, double seconds, bool fast) {
  Budget dl(seconds);
  auto built = build_values(graph);
  if (!built) return built.error();
  spend(static_cast<double>(graph.ops.size() + built->values.size()) / kGraphItemsPerSecond);
  Plan plan;
  plan.graph = std::move(graph);  // moved, not copied: the search plans thousands of windows
  const Graph& g = plan.graph;
  plan.hw = hw;
  plan.capacity = lx_capacity(hw);
  plan.options = o;
  PlanState s;
  s.values = std::move(built->values);
  decide_eligibility(g, o, plan.capacity, hw.alignment, s);
  std::vector<Item> items = whole_items(g, o, s);
  // No time at all (--time-limit 0, or the budget is spent): one heuristic placement and no
  // eviction variants, so the fixed part stays one linear pass (docs/lx.md, "Time limit").
  const bool heuristic = fast || seconds == 0.0;
  auto placed = place_items(o, s, items, plan.capacity, hw.alignment, heuristic ? 0.0 : left(dl) * 0.6, heuristic);
  if (!placed) return placed.error();
  PlaceResult best = *placed;
  if (o.lx && o.eviction && !heuristic) {
    // Two candidate splits: only the values that did not fit, or every value with a dormant gap
    // (lets a resident value yield its slot while dormant). The better plan wins.
    for (int variant = 0; variant < 2; ++variant) {
      std::vector<Item> split;
      bool any = false;
      for (std::size_t k = 0; k < items.size(); ++k) {
        bool spilled = placed->offsets[k] == alloc::kSpilled;
        auto segs = (variant == 1 || spilled) ? eviction_items(g, s, items[k].value) : std::vector<Item>{};
        if (segs.empty()) {
          split.push_back(items[k]);
        } else {
          any = true;
          split.insert(split.end(), segs.begin(), segs.end());
        }
      }
      if (!any) continue;
      auto again = place_items(o, s, split, plan.capacity, hw.alignment, left(dl) * 0.4, false);
      if (!again) return again.error();
      if (again->saved > best.saved) best = std::move(*again);
    }
  }
  plan.solver = best.solver;
  plan.proven_optimal = best.proven;
  // Residency segments.
  for (std::size_t k = 0; k < best.items.size(); ++k) {
    if (best.offsets[k] == alloc::kSpilled) continue;
    const Item& it = best.items[k];
    s.values[it.value].lx.push_back(Segment{it.start, it.end, best.offsets[k], it.reload});
  }
  std::vector<Bytes> whole_saving(s.values.size(), 0);
  for (const Item& it : items) whole_saving[it.value] = it.saved;
  for (std::size_t v = 0; v < s.values.size(); ++v) {
    PlanValue& pv = s.values[v];
    std::sort(pv.lx.begin(), pv.lx.end(), [](const Segment& a, const Segment& b) { return a.start < b.start; });
    if (s.eligible[v]) {
      pv.spill_cost = whole_saving[v];
      if (pv.lx.empty()) {
        pv.reason = "did not fit: LX is full during its lifetime (would save " + std::to_string(pv.spill_cost) +
                    " B of HBM traffic)";
      } else if (pv.lx.size() > 1 || pv.lx.front().reload) {
        pv.reason = "evicted while dormant and reloaded";
        plan.evictions += static_cast<int>(pv.lx.size()) - (pv.lx.front().reload ? 0 : 1);
      }
      pv.output_clone = pv.output_clone && !pv.lx.empty();
    }
    // in-place parent only if both ended up at the same address
    if (pv.in_place_parent >= 0) {
      const PlanValue& par = s.values[pv.in_place_parent];
      bool same = !pv.lx.empty() && !par.lx.empty() && pv.lx.front().address == par.lx.back().address &&
                  par.lx.back().end == pv.def && pv.lx.front().start == pv.def;
      if (!same) pv.in_place_parent = -1;
    }
  }
  plan.values = std::move(s.values);
  account(plan);
  // Heuristic plans that only score a search move are not returned; every returned plan is checked.
  if (!fast)
    if (PlanCheck c = check_plan(plan); !c.ok())
      return internal_error("LX plan failed the independent check: " + c.violations.front().message);
  return plan;
}

OpTime op_time(const Plan& p, std::size_t i) {
  const GOp& op = p.graph.ops[i];
  const double ring = op.ring_bytes > 0 && p.hw.ring_bytes_per_s > 0 ? op.ring_bytes / p.hw.ring_bytes_per_s : 0.0;
  return {op.flops / (std::max(1, op.cores) * p.hw.core_flops_per_s) + ring,
          static_cast<double>(p.op_hbm[i]) / p.hw.hbm_bytes_per_s, p.hw.op_overhead_s};
}

// Accounting (planner side): per-op HBM bytes, totals, baseline and roofline time.
void account(Plan& plan) {
  const Graph& g = plan.graph;
  const std::size_t nops = g.ops.size();
  plan.op_hbm.assign(nops, 0);
  std::vector<Bytes> base(nops, 0);
  Totals t;
  std::map<int, int64_t> elems;
  for (const PlanValue& v : plan.values) elems[v.tensor] = g.tensors[v.tensor].elements;
  auto covered = [](const PlanValue& v, OpIndex i) {
    for (const Segment& sg : v.lx)
      if (sg.start <= i && i <= sg.end) return true;
    return false;
  };
  for (const PlanValue& v : plan.values) {
    const int64_t e = g.tensors[v.tensor].elements;
    if (v.def >= 0) {
      base[v.def] += v.bytes;
      t.baseline_elements += e;
      bool lx_def = !v.lx.empty() && v.lx.front().start == v.def && !v.lx.front().reload;
      if (!lx_def || v.output_clone) {
        plan.op_hbm[v.def] += v.bytes;
        t.hbm_write += v.bytes;
        t.hbm_elements += e;
      }
      bool need_copy = false;
      for (OpIndex u : v.uses) need_copy = need_copy || !covered(v, u);
      for (const Segment& sg : v.lx) need_copy = need_copy || sg.reload;
      if (lx_def && need_copy && !v.output_clone) {  // eviction write-back
        plan.op_hbm[v.lx.front().end] += v.bytes;
        t.hbm_write += v.bytes;
        t.hbm_elements += e;
      }
    }
    for (OpIndex u : v.uses) {
      int k = reads_at(g, v, u);
      base[u] += v.bytes * k;
      t.baseline_elements += e * k;
      if (!covered(v, u)) {
        plan.op_hbm[u] += v.bytes * k;
        t.hbm_read += v.bytes * k;
        t.hbm_elements += e * k;
      }
    }
    for (const Segment& sg : v.lx)
      if (sg.reload) {
        plan.op_hbm[sg.start] += v.bytes;
        t.hbm_read += v.bytes;
        t.hbm_elements += e;
      }
  }
  // Layout fixes: the fixed copy is written and read once more (the op's own read of the
  // operand becomes the fix's read).
  Bytes fixes = 0;
  for (std::size_t i = 0; i < nops; ++i)
    for (const LayoutFix& f : g.ops[i].layout_fixes) {
      plan.op_hbm[i] += 2 * f.fixed_bytes;
      base[i] += 2 * f.fixed_bytes;
      t.hbm_read += f.fixed_bytes;
      t.hbm_write += f.fixed_bytes;
      t.hbm_elements += 2 * g.tensors[f.tensor].elements;
      t.baseline_elements += 2 * g.tensors[f.tensor].elements;
      fixes += 2 * f.fixed_bytes;
    }
  // Clones are planner-inserted: the baseline is the graph without them (their input reads
  // are reads of the consumers there), so the baseline counts the clone op's read as the
  // consumers' reads: recompute it from the uses of clone values.
  // Ring ops likewise (their value's readers read the original there).
  for (const PlanValue& v : plan.values) {
    if (!v.clone && !(v.def >= 0 && g.ops[v.def].kind == "ring")) continue;
    // clone op read 1x input, wrote 1x; consumers read k times: baseline should be k reads only.
    int reads = 0;
    for (OpIndex u : v.uses) reads += reads_at(g, v, u);
    base[v.def] -= 2 * v.bytes;  // clone's read of the input and its write
    t.baseline_elements -= 2 * g.tensors[v.tensor].elements;
    (void)reads;
  }
  for (Bytes b : base) t.baseline_hbm += b;
  t.saved = t.baseline_hbm - (t.hbm_read + t.hbm_write);
  // Roofline: per op max(compute, HBM transfer) + fixed overhead.
  for (std::size_t i = 0; i < nops; ++i) {
    const OpTime ot = op_time(plan, i);
    double mem0 = static_cast<double>(std::max<Bytes>(0, base[i])) / plan.hw.hbm_bytes_per_s;
    t.time_s += ot.total();
    if (g.ops[i].kind != "clone" && g.ops[i].kind != "ring") t.baseline_time_s += std::max(ot.compute_s, mem0) + ot.overhead_s;
  }
  // Lower bound for this split choice and op order: inputs read once, outputs written once,
  // values that can never be on LX move fully.
  Bytes lb = 0;
  for (const PlanValue& v : plan.values) {
    const GTensor& ten = g.tensors[v.tensor];
    if (v.clone) continue;
    if (v.def < 0) {
      Bytes per_core = 0;
      for (OpIndex u : v.uses)
        for (const GOperand& r : g.ops[u].reads)
          if (r.tensor == v.tensor) per_core = std::max(per_core, r.per_core);
      bool clonable = plan.options.lx && plan.options.clone_inputs && per_core <= plan.capacity;
      if (!v.uses.empty()) lb += clonable ? v.bytes : hbm_traffic_all_hbm(g, v);
      continue;
    }
    bool forced = !v.reason.empty() && v.reason.rfind("did not fit", 0) != 0 && v.reason.rfind("evicted", 0) != 0;
    // With a ring, a mismatch can be moved LX-to-LX: not forced over the plans with ring choices.
    if (plan.hw.ring_bytes_per_s > 0 && plan.options.ring_transfers && v.reason.rfind("core-div mismatch", 0) == 0)
      forced = false;
    if (forced && v.lx.empty()) lb += hbm_traffic_all_hbm(g, v);
    else if (ten.graph_output && v.output_clone) lb += v.bytes;
  }
  lb += fixes;  // the layouts are the program's: every split and order pays the fixes
  t.split_lower_bound_hbm = std::min(lb, t.hbm_read + t.hbm_write);
  // Over every split choice: only traffic no split can avoid (graph inputs read once if they
  // can be cloned, outputs written once, values touched by opaque kernels, LX off).
  Bytes glb = fixes;
  const Options& o = plan.options;
  for (const PlanValue& v : plan.values) {
    // partial sums depend on the split choice (plan_program adds what every choice must move)
    if (v.clone || g.tensors[v.tensor].partial_of >= 0) continue;
    const GTensor& ten = g.tensors[v.tensor];
    bool opaque = v.def >= 0 && !g.ops[v.def].lx_capable;
    for (OpIndex u : v.uses) opaque = opaque || !g.ops[u].lx_capable;
    const Bytes all = hbm_traffic_all_hbm(g, v);
    if (!o.lx || opaque) glb += all;
    else if (v.def < 0) glb += v.uses.empty() ? 0 : (o.clone_inputs ? v.bytes : all);
    else if (ten.graph_output && v.reason.rfind("graph output", 0) == 0) glb += all;
    else if (ten.graph_output) glb += v.bytes;
    else if (o.only_reduction_outputs && !g.ops[v.def].reduction) glb += all;
  }
  t.lower_bound_hbm = std::min(glb, t.split_lower_bound_hbm);
  // A graph has no split choices: plan_program replaces these two with its menus' bounds.
  t.cores_lower_bound_hbm = t.time_lower_bound_hbm = t.lower_bound_hbm;
  plan.totals = t;
}

}  // namespace sp::lx
