// Independent checker of LX plans. It shares no code with the planner: it re-derives value
// versions, liveness and HBM traffic from the op list and the stated residency segments.
#include <algorithm>
#include <map>

#include "lx/lx.h"

namespace sp::lx {
namespace {

struct Derived {
  int tensor;
  int def;                 // op index or -1
  std::vector<int> uses;   // op indices (with multiplicity)
};

// One violation (the checker stops at the first broken rule).
PlanCheck fail(PlanViolationKind kind, std::vector<std::string> involved, const std::string& message) {
  PlanCheck r;
  r.violations.push_back({kind, std::move(involved), message, {}});
  return r;
}

// The checker's state: the versions it re-derived and how the plan's values map onto them.
struct Checker {
  const Plan& p;
  const Graph& g = p.graph;
  std::vector<Derived> vals;
  std::vector<int> latest = std::vector<int>(g.tensors.size(), -1);  // per tensor: its last version
  std::vector<int> plan_of;  // per version: the plan value index

  PlanCheck derive_versions();
  PlanCheck partial_sums() const;
  PlanCheck match_values();
  PlanCheck segments_and_overlaps() const;
  PlanCheck traffic() const;
  bool covered(int pv, int op) const {
    for (const Segment& s : p.values[pv].lx)
      if (s.start <= op && op <= s.end) return true;
    return false;
  }
};

// 1. Re-derive versions.
PlanCheck Checker::derive_versions() {
  for (std::size_t t = 0; t < g.tensors.size(); ++t)
    if (g.tensors[t].graph_input) {
      vals.push_back({static_cast<int>(t), -1, {}});
      latest[t] = static_cast<int>(vals.size()) - 1;
    }
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    for (const GOperand& r : g.ops[i].reads) {
      if (r.tensor < 0 || r.tensor >= static_cast<int>(g.tensors.size()) || latest[r.tensor] < 0)
        return fail(PlanViolationKind::kGraph, {g.ops[i].name}, "op " + g.ops[i].name + " reads an undefined tensor");
      vals[latest[r.tensor]].uses.push_back(static_cast<int>(i));
    }
    for (const GOperand& w : g.ops[i].writes) {
      vals.push_back({w.tensor, static_cast<int>(i), {}});
      latest[w.tensor] = static_cast<int>(vals.size()) - 1;
    }
  }
  return {};
}

// Partial sums: a reduction split writes only partial tensors (factor x the final bytes), each
// summed by a later combine op that writes the final tensor; no other op writes partials.
PlanCheck Checker::partial_sums() const {
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const GOp& op = g.ops[i];
    if (op.reduction_split != (op.reduction_factor > 1))
      return fail(PlanViolationKind::kPartialSums, {op.name}, "op " + op.name + ": reduction split and reduction factor " + std::to_string(op.reduction_factor) + " disagree");
    for (const GOperand& w : op.writes) {
      const GTensor& t = g.tensors[w.tensor];
      if (!op.reduction_split) {
        if (t.partial_of >= 0)
          return fail(PlanViolationKind::kPartialSums, {op.name, t.name}, "op " + op.name + " writes partial sums without a reduction split");
        continue;
      }
      if (t.partial_of < 0) return fail(PlanViolationKind::kPartialSums, {op.name, t.name}, "reduction-split op " + op.name + " writes " + t.name + " without partial sums");
      if (t.bytes != g.tensors[t.partial_of].bytes * op.reduction_factor)
        return fail(PlanViolationKind::kPartialSums, {t.name}, t.name + ": partial sums of " + std::to_string(t.bytes) + " B, expected " +
                        std::to_string(op.reduction_factor) + " x " + std::to_string(g.tensors[t.partial_of].bytes));
      bool combined = false;
      for (std::size_t j = i + 1; j < g.ops.size() && !combined; ++j) {
        bool reads = false, writes = false;
        for (const GOperand& r : g.ops[j].reads) reads = reads || r.tensor == w.tensor;
        for (const GOperand& x : g.ops[j].writes) writes = writes || x.tensor == t.partial_of;
        combined = g.ops[j].kind == "combine" && reads && writes;
      }
      if (!combined)
        return fail(PlanViolationKind::kPartialSums, {t.name}, t.name + " is never combined into " + g.tensors[t.partial_of].name);
    }
  }
  return {};
}

// The plan's values are the derived versions, matched by (tensor, def).
PlanCheck Checker::match_values() {
  if (vals.size() != p.values.size())
    return fail(PlanViolationKind::kValues, {}, "plan lists " + std::to_string(p.values.size()) + " values, the ops define " + std::to_string(vals.size()));
  std::map<std::pair<int, int>, int> idx;
  for (std::size_t k = 0; k < vals.size(); ++k) idx[{vals[k].tensor, vals[k].def}] = static_cast<int>(k);
  plan_of.assign(vals.size(), -1);
  for (std::size_t k = 0; k < p.values.size(); ++k) {
    auto it = idx.find({p.values[k].tensor, p.values[k].def});
    if (it == idx.end())
      return fail(PlanViolationKind::kValues, {p.values[k].name}, "value " + p.values[k].name + " has no defining op in the plan's op list");
    plan_of[it->second] = static_cast<int>(k);
  }
  return {};
}

// 2. Segments: geometry, eligibility. 3. No two co-live LX ranges overlap, except an in-place
// hand-off at the same base.
PlanCheck Checker::segments_and_overlaps() const {
  const Bytes cap = p.capacity;
  const Bytes align = std::max<Bytes>(1, p.hw.alignment);
  struct Rect { int value; int t0, t1; Bytes a0, a1; };
  std::vector<Rect> rects;
  for (std::size_t k = 0; k < vals.size(); ++k) {
    const Derived& d = vals[k];
    const PlanValue& v = p.values[plan_of[k]];
    if (v.lx.empty()) continue;
    const std::string n = v.name;
    if (!p.options.lx) return fail(PlanViolationKind::kResidency, {n}, n + " is on LX although LX planning is off");
    if (d.def < 0) return fail(PlanViolationKind::kResidency, {n}, n + " is a graph input placed on LX without a clone");
    const GOp& def = g.ops[d.def];
    if (!def.lx_capable || def.reduction_split || def.kind == "combine")
      return fail(PlanViolationKind::kResidency, {n, def.name}, n + " is produced by an op that cannot write LX (opaque, partial sums or their combine)");
    const GOperand* w = nullptr;
    for (const GOperand& o : def.writes)
      if (o.tensor == d.tensor) w = &o;
    Bytes need = w->per_core;
    if (v.per_core < need)
      return fail(PlanViolationKind::kSize, {n}, n + " per-core size " + std::to_string(v.per_core) + " < " + std::to_string(need));
    bool is_out = g.tensors[d.tensor].graph_output && latest[d.tensor] == static_cast<int>(k);
    if (is_out && !v.output_clone) return fail(PlanViolationKind::kResidency, {n}, n + " is a graph output kept on LX without an HBM copy");
    int prev_end = -1;
    for (std::size_t s = 0; s < v.lx.size(); ++s) {
      const Segment& sg = v.lx[s];
      if (sg.address < 0 || sg.address % align)
        return fail(PlanViolationKind::kAddress, {n}, n + " LX address " + std::to_string(sg.address) + " not aligned");
      if (sg.address + v.per_core > cap)
        return fail(PlanViolationKind::kAddress, {n}, n + " exceeds LX capacity at address " + std::to_string(sg.address));
      if (sg.start > sg.end || sg.start <= prev_end) return fail(PlanViolationKind::kSegments, {n}, n + " has overlapping or reversed segments");
      prev_end = sg.end;
      if (!sg.reload && (s != 0 || sg.start != d.def))
        return fail(PlanViolationKind::kSegments, {n}, n + " LX segment does not start at its producer");
      if (sg.reload && std::find(d.uses.begin(), d.uses.end(), sg.start) == d.uses.end())
        return fail(PlanViolationKind::kSegments, {n}, n + " reload segment does not start at a use");
      if (sg.end != d.def && std::find(d.uses.begin(), d.uses.end(), sg.end) == d.uses.end())
        return fail(PlanViolationKind::kSegments, {n}, n + " LX segment does not end at a use");
      rects.push_back({plan_of[k], sg.start, sg.end, sg.address, sg.address + v.per_core});
    }
    for (int u : d.uses) {
      if (!covered(plan_of[k], u)) continue;
      const GOp& c = g.ops[u];
      if (!c.lx_capable) return fail(PlanViolationKind::kResidency, {n, c.name}, n + " is read from LX by opaque op " + c.name);
      for (const GOperand& r : c.reads)
        if (r.tensor == d.tensor && r.slicing != w->slicing)
          return fail(PlanViolationKind::kResidency, {n, c.name}, n + " is read from LX by " + c.name + " with a different core slicing");
    }
  }
  std::sort(rects.begin(), rects.end(), [](const Rect& a, const Rect& b) { return a.t0 < b.t0; });
  for (std::size_t a = 0; a < rects.size(); ++a)
    for (std::size_t b = a + 1; b < rects.size() && rects[b].t0 <= rects[a].t1; ++b) {
      const Rect &x = rects[a], &y = rects[b];
      if (x.a1 <= y.a0 || y.a1 <= x.a0) continue;
      // y starts at x's last op: allowed iff y is x's declared in-place child at the same base and
      // no larger (x's whole range stays live at that op, so anything else touching it overlaps)
      const PlanValue& yv = p.values[y.value];
      bool handoff = x.t1 == y.t0 && x.a0 == y.a0 && y.a1 <= x.a1 && yv.in_place_parent == x.value && yv.def == y.t0 &&
                     g.ops[yv.def].in_placeable;
      if (!handoff)
        return fail(PlanViolationKind::kOverlap, {p.values[x.value].name, yv.name},
                    "LX overlap: " + p.values[x.value].name + " and " + yv.name + " share addresses while both live");
    }
  return {};
}

// 4. Traffic: re-derived HBM bytes equal the plan's totals, and no bound is above them.
PlanCheck Checker::traffic() const {
  Bytes rd = 0, wr = 0;
  for (std::size_t k = 0; k < vals.size(); ++k) {
    const Derived& d = vals[k];
    const int pv = plan_of[k];
    const PlanValue& v = p.values[pv];
    const Bytes bytes = g.tensors[d.tensor].bytes;
    bool on_lx_at_def = d.def >= 0 && covered(pv, d.def) && !v.lx.front().reload;
    if (d.def >= 0 && (!on_lx_at_def || v.output_clone)) wr += bytes;
    bool hbm_copy_needed = false;
    for (int u : d.uses)
      if (!covered(pv, u)) {
        rd += bytes;
        hbm_copy_needed = true;
      }
    for (const Segment& s : v.lx)
      if (s.reload) {
        rd += bytes;
        hbm_copy_needed = true;
      }
    if (on_lx_at_def && hbm_copy_needed && !v.output_clone) wr += bytes;
  }
  for (const GOp& op : g.ops)
    for (const LayoutFix& f : op.layout_fixes) {
      if (f.tensor < 0 || f.fixed_bytes < g.tensors[f.tensor].bytes)
        return fail(PlanViolationKind::kTraffic, {op.name}, "op " + op.name + ": layout fix smaller than its tensor");
      rd += f.fixed_bytes;  // the op reads the fixed copy
      wr += f.fixed_bytes;  // which the restickify / padding wrote
    }
  if (rd != p.totals.hbm_read || wr != p.totals.hbm_write)
    return fail(PlanViolationKind::kTraffic, {}, "HBM traffic mismatch: checker reads " + std::to_string(rd) + " writes " + std::to_string(wr) +
                ", plan reports " + std::to_string(p.totals.hbm_read) + " / " + std::to_string(p.totals.hbm_write));
  if (p.totals.lower_bound_hbm > rd + wr || p.totals.cores_lower_bound_hbm > rd + wr || p.totals.time_lower_bound_hbm > rd + wr ||
      p.totals.split_lower_bound_hbm > rd + wr)
    return fail(PlanViolationKind::kBound, {}, "a lower bound is above the plan's traffic");
  return {};
}

}  // namespace

PlanCheck check_plan(const Plan& p) {
  Checker c{p};
  if (PlanCheck r = c.derive_versions(); !r.ok()) return r;
  if (PlanCheck r = c.partial_sums(); !r.ok()) return r;
  if (PlanCheck r = c.match_values(); !r.ok()) return r;
  if (PlanCheck r = c.segments_and_overlaps(); !r.ok()) return r;
  return c.traffic();
}

}  // namespace sp::lx
