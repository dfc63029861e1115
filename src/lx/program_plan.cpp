// Programs -> planning graphs (layouts, work division, per-operand core slicing) and the
// co-optimization of core splits with placement, scored by the roofline cost model.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <climits>
#include <cmath>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <numeric>

#include "core/deadline.h"
#include "core/rng.h"
#include "program/layout_compat.h"
#include "layout/layout.h"
#include "lx/lx.h"
#include "lx/planner_internal.h"
#include "workdiv/workdiv.h"

namespace sp::lx {
namespace {

struct Model {
  const program::Program* prog = nullptr;
  std::vector<Bytes> bytes;          // per tensor: device bytes
  std::vector<int64_t> elements;     // per tensor: host elements
  workdiv::Division div;             // seed division + menus
  std::vector<std::vector<LayoutFix>> fixes;  // per op: layout fixes (program tensor ids)
  mutable std::vector<std::vector<std::vector<std::string>>> slicings;  // [op][entry][operand], lazily
  mutable std::vector<std::vector<uint64_t>> op_sigs;  // [op][entry]: lowered op's hash without tensor ids, lazily
};

std::string join_splits(const workdiv::OpDivision& od, const std::vector<workdiv::Split>& s) {
  std::string t;
  for (std::size_t v = 0; v < s.size(); ++v) t += (v ? " " : "") + od.vars[v].name + "=" + std::to_string(s[v]);
  return t;
}

GOperand operand(const Model& m, const program::Op& op, const workdiv::OpDivision& od,
                 const std::vector<workdiv::Split>& s, int cores, std::size_t slot, program::TensorId t) {
  GOperand g;
  g.tensor = t;
  int64_t parts = 1;
  if (od.divided && cores > 1) {
    std::string f;
    for (program::VarId var : op.indexing_maps[slot]) {
      int64_t k = var >= 0 ? s[var] : 1;
      parts *= k;
      f += (f.empty() ? "" : "x") + std::to_string(k);
    }
    g.slicing = f + "/c" + std::to_string(cores);
  }
  g.per_core = (m.bytes[t] + parts - 1) / parts;
  // Summed, offset and constant results touch only part of their dim: a slice (d + 64), a select
  // (a constant), a strided window (2*h + r), a reshape (h * 64 + d). The extent over one core's
  // tile is max - offset + 1 with each var over its per-core range (only outer vars of dense sums
  // are ever split, workdiv::sum_splits).
  if (slot < op.exprs.size()) {
    double frac = 1;
    const auto& shape = m.prog->tensors[t].shape;
    std::vector<program::Dim> tile = op.ranges;
    if (od.divided && cores > 1)
      for (std::size_t v = 0; v < tile.size() && v < s.size(); ++v) tile[v] = (tile[v] + s[v] - 1) / s[v];
    for (std::size_t d = 0; d < op.exprs[slot].size() && d < shape.size(); ++d) {
      const program::AffineExpr& e = op.exprs[slot][d];
      if (program::is_plain(e)) continue;
      const int64_t extent = program::expr_max(e, tile) - e.offset + 1;
      frac *= std::min(1.0, static_cast<double>(extent) / static_cast<double>(shape[d]));
    }
    if (frac < 1) g.per_core = std::max<Bytes>(1, static_cast<Bytes>(std::ceil(static_cast<double>(g.per_core) * frac)));
  }
  return g;
}

// Work of op o for the roofline: the iteration space (or its outputs' elements), x2 for a matmul.
double op_flops(const Model& m, std::size_t o) {
  const program::Op& op = m.prog->ops[o];
  double work = 1;
  for (auto r : op.ranges) work *= static_cast<double>(r);
  if (op.ranges.empty())
    for (auto t : op.outputs) work = static_cast<double>(m.elements[t]);
  return work * (op.kind == program::OpKind::kMatmul ? 2.0 : 1.0);
}

// Op o lowered under its menu entry `entry` (labels: the readable split; only plans that are
// returned need it, the search scores windows).
GOp lower_op_entry(const Model& m, int entry, std::size_t o, bool labels) {
  const program::Op& op = m.prog->ops[o];
  const workdiv::OpDivision& od = m.div.ops[o];
  GOp x;
  x.name = op.name;
  x.kind = program::op_kind_name(op.kind);
  x.source_op = static_cast<int>(o);
  x.in_placeable = op.kind == program::OpKind::kPointwise;
  x.reduction = op.kind == program::OpKind::kReduction;
  x.lx_capable = op.kind != program::OpKind::kOpaque;
  std::vector<workdiv::Split> s;
  if (od.divided) {
    s = entry > 0 && entry < static_cast<int>(od.candidates.size()) ? od.candidates[entry] : od.splits;
  }
  int64_t cores = 1;
  for (auto k : s) cores *= k;
  x.cores = static_cast<int>(cores);
  if (labels) x.splits = od.divided ? join_splits(od, s) : "not divided";
  for (std::size_t v = 0; v < s.size(); ++v)
    if (od.vars[v].reduction && s[v] > 1) {
      x.reduction_split = true;
      x.reduction_factor *= s[v];
    }
  x.flops = op_flops(m, o);
  if (labels) {
    x.layout_fixes = m.fixes[o];
  } else {
    for (const LayoutFix& f : m.fixes[o]) x.layout_fixes.push_back({f.tensor, f.padding, f.fixed_bytes, {}});  // bytes only
  }
  for (std::size_t k = 0; k < op.inputs.size(); ++k)
    x.reads.push_back(operand(m, op, od, s, x.cores, k, op.inputs[k]));
  for (std::size_t k = 0; k < op.outputs.size(); ++k)
    x.writes.push_back(operand(m, op, od, s, x.cores, op.inputs.size() + k, op.outputs[k]));
  return x;
}

GOp lower_op(const Model& m, const std::vector<int>& choice, std::size_t o, bool labels = true) {
  return lower_op_entry(m, choice.empty() ? 0 : choice[o], o, labels);
}

GTensor lower_tensor(const Model& m, program::TensorId t) {
  const auto& pt = m.prog->tensors[t];
  return GTensor{pt.name, m.bytes[t], m.elements[t], pt.graph_input, pt.graph_output};
}

// Appends op o to g, and for a reduction split the combine of its partial sums: the op writes
// `T.partial` (reduction_factor x T's bytes: every core group holds a full partial of its output
// slice) and an inserted `<op>.combine` reads the partials and writes T. Partial sums cross cores,
// so both stay in HBM (docs/lx.md, "Reduction splits"). `tid` maps program tensors to g's.
template <class Tid>
void lower_op_into(const Model& m, const std::vector<int>& choice, std::size_t o, Graph& g, Tid tid, bool labels = true) {
  GOp x = lower_op(m, choice, o, labels);
  for (auto& r : x.reads) r.tensor = tid(r.tensor);
  for (auto& w : x.writes) w.tensor = tid(w.tensor);
  for (auto& f : x.layout_fixes) f.tensor = tid(f.tensor);
  if (!x.reduction_split) {
    g.ops.push_back(std::move(x));
    return;
  }
  GOp c;
  c.name = x.name + ".combine";
  c.kind = "combine";
  c.reduction = x.reduction;
  c.cores = x.cores;
  c.splits = x.splits;
  for (GOperand& w : x.writes) {
    GTensor pt;
    pt.name = g.tensors[w.tensor].name + ".partial";
    pt.bytes = g.tensors[w.tensor].bytes * x.reduction_factor;  // extents <= 2^40, factor <= 32: no overflow
    pt.elements = g.tensors[w.tensor].elements * x.reduction_factor;
    pt.partial_of = w.tensor;
    g.tensors.push_back(pt);
    const int pi = static_cast<int>(g.tensors.size()) - 1;
    c.reads.push_back(GOperand{pi, w.slicing, w.per_core});
    c.writes.push_back(GOperand{w.tensor, w.slicing, w.per_core});
    c.flops += static_cast<double>(pt.elements);  // one add per partial element
    w.tensor = pi;
  }
  g.ops.push_back(std::move(x));
  g.ops.push_back(std::move(c));
}

Graph lower(const Model& m, const std::vector<int>& choice) {
  const program::Program& p = *m.prog;
  Graph g;
  g.name = p.name;
  for (std::size_t t = 0; t < p.tensors.size(); ++t) g.tensors.push_back(lower_tensor(m, static_cast<program::TensorId>(t)));
  g.ops.reserve(p.ops.size());
  for (std::size_t o = 0; o < p.ops.size(); ++o) lower_op_into(m, choice, o, g, [](program::TensorId t) { return static_cast<int>(t); });
  return g;
}

// Ops a..b as a graph of their own: values from earlier ops are inputs, values read after b
// are outputs. The co-optimizer scores moves on such windows in large programs.
Graph lower_window(const Model& m, const std::vector<int>& choice, int a, int b) {
  const program::Program& p = *m.prog;
  Graph g;
  g.name = p.name;
  std::map<program::TensorId, int> tmap;
  auto tid = [&](program::TensorId t) {
    auto it = tmap.find(t);
    if (it != tmap.end()) return it->second;
    GTensor x = lower_tensor(m, t);
    x.graph_input = x.graph_input || p.producer[t] < a;
    for (program::OpId c : p.consumers[t]) x.graph_output = x.graph_output || c > b;
    g.tensors.push_back(x);
    return tmap[t] = static_cast<int>(g.tensors.size()) - 1;
  };
  for (int o = a; o <= b; ++o) lower_op_into(m, choice, static_cast<std::size_t>(o), g, tid, false);
  return g;
}

// What the search compares: a plan's roofline time and HBM bytes, lexicographically.
struct Score {
  double time_s = 0;
  Bytes bytes = 0;
};
Score score_of(const Plan& p) { return {p.totals.time_s, p.totals.hbm_read + p.totals.hbm_write}; }
bool better(const Score& a, const Score& b) {
  if (a.time_s < b.time_s * (1 - 1e-9)) return true;
  if (a.time_s > b.time_s * (1 + 1e-9)) return false;
  return a.bytes < b.bytes;
}
bool better(const Plan& a, const Plan& b) { return better(score_of(a), score_of(b)); }

// Order-dependent 64-bit hash for the structural keys below.
struct Hasher {
  uint64_t h = 0;
  void mix(uint64_t x) { h = splitmix64(h ^ x); }
  void mix(const std::string& s) {
    mix(s.size());
    for (char c : s) mix(static_cast<uint64_t>(static_cast<unsigned char>(c)));
  }
  void mix(double d) {
    uint64_t u;
    std::memcpy(&u, &d, sizeof u);
    mix(u);
  }
};

// Hash of lower_op(o) under entry c without its tensor ids (kept per (op, entry)).
uint64_t op_signature(const Model& m, int o, int c) {
  auto& per_op = m.op_sigs[static_cast<std::size_t>(o)];
  if (per_op.empty()) per_op.assign(std::max<std::size_t>(1, m.div.ops[o].candidates.size()), 0);
  uint64_t& sig = per_op[static_cast<std::size_t>(c)];
  if (sig != 0) return sig;
  const GOp x = lower_op_entry(m, c, static_cast<std::size_t>(o), false);
  Hasher h;
  h.mix(x.kind);
  for (const auto* side : {&x.reads, &x.writes}) {
    h.mix(side->size());
    for (const GOperand& r : *side) {
      h.mix(r.slicing);
      h.mix(static_cast<uint64_t>(r.per_core));
    }
  }
  h.mix(static_cast<uint64_t>(x.in_placeable) | static_cast<uint64_t>(x.reduction) << 1 |
        static_cast<uint64_t>(x.lx_capable) << 2 | static_cast<uint64_t>(x.reduction_split) << 3);
  h.mix(static_cast<uint64_t>(x.reduction_factor));
  h.mix(static_cast<uint64_t>(x.cores));
  h.mix(x.flops);
  h.mix(x.layout_fixes.size());
  for (const LayoutFix& f : x.layout_fixes) {
    h.mix(static_cast<uint64_t>(f.padding));
    h.mix(static_cast<uint64_t>(f.fixed_bytes));
  }
  return sig = h.h | 1;  // never 0 (0 = not computed)
}

// Structural key of lower_window(m, choice, a, b), computed without lowering: every op's own
// hash, and its tensors numbered in order of first use (reads, writes, fixes: the order
// lower_op_into maps them) with the attributes the window gives them. Programs repeat their
// layers, so the search meets most windows again at another depth; it keeps their scores by
// this key (a collision could only misjudge one move: the final plan is planned in full and
// checked). `local` is scratch: one -1 per program tensor, restored on return.
uint64_t window_key(const Model& m, const std::vector<int>& choice, int a, int b, std::vector<int>& local) {
  const program::Program& p = *m.prog;
  if (local.size() != p.tensors.size()) local.assign(p.tensors.size(), -1);
  std::vector<program::TensorId> touched;
  Hasher h;
  h.mix(static_cast<uint64_t>(b - a));
  auto tensor = [&](program::TensorId t) {
    int& id = local[t];
    if (id < 0) {
      id = static_cast<int>(touched.size());
      touched.push_back(t);
      h.mix(static_cast<uint64_t>(m.bytes[t]));
      h.mix(static_cast<uint64_t>(m.elements[t]));
      bool out = p.tensors[t].graph_output;
      for (program::OpId c : p.consumers[t]) out = out || c > b;
      h.mix(static_cast<uint64_t>(p.tensors[t].graph_input || p.producer[t] < a) | static_cast<uint64_t>(out) << 1);
    }
    h.mix(static_cast<uint64_t>(id));
  };
  for (int o = a; o <= b; ++o) {
    const program::Op& op = p.ops[o];
    h.mix(op_signature(m, o, m.div.ops[o].divided ? choice[o] : 0));
    for (program::TensorId t : op.inputs) tensor(t);
    for (program::TensorId t : op.outputs) tensor(t);
    for (const LayoutFix& f : m.fixes[o]) tensor(f.tensor);
  }
  for (program::TensorId t : touched) local[t] = -1;
  return h.h;
}

// The read slicing of tensor t by op o under candidate c (or its write slicing).
const std::string& slicing_of(const Model& m, int o, int c, program::TensorId t, bool write) {
  static const std::string kWhole;
  const program::Op& op = m.prog->ops[o];
  const workdiv::OpDivision& od = m.div.ops[o];
  if (!od.divided) return kWhole;
  // Memoized per (op, entry): the search asks for the same slicings many times.
  auto& per_op = m.slicings[o];
  if (per_op.empty()) per_op.resize(std::max<std::size_t>(1, od.candidates.size()));
  auto& sl = per_op[static_cast<std::size_t>(c)];
  if (sl.empty()) {
    const auto s = c > 0 ? od.candidates[c] : od.splits;
    int64_t cores = 1;
    for (auto k : s) cores *= k;
    const std::size_t n = op.inputs.size() + op.outputs.size();
    sl.reserve(n);
    for (std::size_t k = 0; k < n; ++k) {
      const program::TensorId x = k < op.inputs.size() ? op.inputs[k] : op.outputs[k - op.inputs.size()];
      sl.push_back(operand(m, op, od, s, static_cast<int>(cores), k, x).slicing);
    }
  }
  const auto& list = write ? op.outputs : op.inputs;
  for (std::size_t k = 0; k < list.size(); ++k)
    if (list[k] == t) return sl[write ? op.inputs.size() + k : k];
  return kWhole;
}

// A view of entry c's splits (no copy: the menu is stored flat).
std::span<const workdiv::Split> splits_of(const Model& m, int o, int c) {
  const workdiv::OpDivision& od = m.div.ops[o];
  const workdiv::Menu& menu = od.candidates;
  if (c > 0 && c < static_cast<int>(menu.size()))
    return {menu.flat.data() + static_cast<std::size_t>(c) * menu.width, menu.width};
  return od.splits;
}
int64_t cores_of(const Model& m, int o, int c) {
  int64_t k = 1;
  for (auto x : splits_of(m, o, c)) k *= x;
  return k;
}
bool reduction_split(const Model& m, int o, int c) {
  const workdiv::OpDivision& od = m.div.ops[o];
  if (!od.divided) return false;
  const auto& s = splits_of(m, o, c);
  for (std::size_t v = 0; v < s.size(); ++v)
    if (od.vars[v].reduction && s[v] > 1) return true;
  return false;
}

// A move: ops re-split to new menu entries (op, entry), applied over the current choice.
using Moves = std::vector<std::pair<int, int>>;

// Region move: after op `start` is re-split to `entry`, neighbours that now disagree on a shared
// tensor are re-split to agree (most cores first; producers without reduction splits), breadth
// first. Returns the whole move (start first); the queue is small, so lookups are linear.
Moves propagate(const Model& m, const std::vector<int>& choice, int start, int entry) {
  const program::Program& p = *m.prog;
  Moves mv{{start, entry}};
  std::vector<int> seen{start};
  auto entry_of = [&](int y) {
    for (const auto& [op, c] : mv)
      if (op == y) return c;
    return choice[y];
  };
  std::vector<int> queue{start};
  for (std::size_t qi = 0; qi < queue.size() && queue.size() < 48; ++qi) {
    int x = queue[qi];
    auto fix = [&](int y, program::TensorId t, bool y_writes, const std::string& want) {
      if (y < 0 || !m.div.ops[y].divided || std::find(seen.begin(), seen.end(), y) != seen.end()) return;
      seen.push_back(y);
      const int cy = entry_of(y);
      if (slicing_of(m, y, cy, t, y_writes) == want && !(y_writes && reduction_split(m, y, cy))) return;
      int best = -1;
      for (int c = 0; c < static_cast<int>(m.div.ops[y].candidates.size()); ++c) {
        if (y_writes && reduction_split(m, y, c)) continue;
        if (slicing_of(m, y, c, t, y_writes) != want) continue;
        if (best < 0 || cores_of(m, y, c) > cores_of(m, y, best)) best = c;
      }
      if (best >= 0) {
        mv.emplace_back(y, best);  // y was not in the move yet (seen)
        queue.push_back(y);
      }
    };
    const int cx = entry_of(x);
    for (program::TensorId t : p.ops[x].inputs)
      if (p.producer[t] >= 0) fix(p.producer[t], t, true, slicing_of(m, x, cx, t, false));
    for (program::TensorId t : p.ops[x].outputs)
      for (program::OpId y : p.consumers[t]) fix(y, t, false, slicing_of(m, x, cx, t, true));
  }
  return mv;
}

// ceil(bytes x to / from) without overflow (bytes and extents are below 2^44).
Bytes padded_bytes(Bytes bytes, int64_t from, int64_t to) {
  __extension__ using Wide = __int128;
  return static_cast<Bytes>((static_cast<Wide>(bytes) * to + from - 1) / from);
}

int64_t reduction_factor(const Model& m, int o, int c) {
  const workdiv::OpDivision& od = m.div.ops[o];
  if (!od.divided) return 1;
  const auto& s = splits_of(m, o, c);
  int64_t r = 1;
  for (std::size_t v = 0; v < s.size(); ++v)
    if (od.vars[v].reduction) r *= s[v];
  return r;
}

// What every split choice (among the menu entries `allowed` admits) must move beyond account()'s
// compulsory bound, as a constant plus, per op, a cost for each admitted entry (each cost is
// traffic that entry alone forces, disjoint from every other op's, so any assignment moves at
// least the constant plus the sum of its entries' costs):
// - partial sums of a producer's reduction split (2 x factor x bytes: written, then read by the
//   combine), charged to the producer's entry;
// - values nobody reads (their write), constant;
// - intermediates (not graph I/O, not touched by opaque ops) kept off LX, by a star bound: each
//   such value is charged to the star of its first consumer u. Under an entry c of u, the value
//   can be on LX only if u's read slicing under c is one that some admitted producer entry
//   (without a reduction split, fitting LX) writes and every other consumer can read with an
//   admitted entry of its own. It sees that one op cannot read two differently-produced operands
//   alike (a matmul's A and B at once).
// Chains (issue 44): the star of op u charges the value t it reads that costs most to the edge
// from t's producer q instead: t stays on LX only if u's read slicing is one every consumer can
// read (the star's set) and q's entry writes exactly that slicing. Every op has at most one such
// parent, earlier than itself, so the ops form a forest and a dynamic program over it finds the
// best assignment exactly (ops of no edge stay independent, as before).
struct TreeOp {
  int parent = -1;                 // producer of the linked value, or -1
  double link_cost = 0;            // the linked value's cost when it cannot stay on LX
  int groups = 0;                  // distinct slicings u's entries read the linked value with, in the star's set
  std::vector<int> group;          // per entry: its slicing's group, or -1 (not in the set: off the link)
  std::vector<int> parent_group;   // per entry of the parent: the group it writes, or -1 (none, or split)
  std::vector<double> bytes, seconds;  // per admitted entry, without the linked value
  std::vector<int> children;       // ops linked to this one
};
struct MenuCosts {
  Bytes constant = 0;  // forced whatever the entries
  Bytes min_sum = 0;   // sum over independent ops of their cheapest admitted entry's bytes
  // Per independent op (when timed): (bytes, seconds) of its admitted entries, Pareto-reduced:
  // bytes ascending, seconds descending (an entry no cheaper and no faster than another adds nothing).
  std::vector<std::vector<std::pair<double, double>>> frontier;
  std::vector<TreeOp> tree;    // per op; used when in_tree
  std::vector<char> in_tree;   // per op: on a link (parent or children)
  // The forest's best assignment of bytes + lambda x seconds (exact dynamic program).
  std::vector<std::size_t> offset;  // per op: its entries' first slot in forest()'s flat array
  double forest(double lambda) const {
    double total = 0;
    if (offset.empty()) return total;
    std::vector<double> flat(offset.back(), 0.0);  // one allocation per call (70 calls per bound)
    std::vector<double> by_group;
    for (std::size_t u = tree.size(); u-- > 0;) {
      if (!in_tree[u]) continue;
      const TreeOp& t = tree[u];
      const std::span<double> fu(flat.data() + offset[u], t.bytes.size());
      for (std::size_t i = 0; i < fu.size(); ++i) fu[i] += t.bytes[i] + lambda * t.seconds[i];
      if (t.parent < 0) {
        if (!fu.empty()) total += *std::min_element(fu.begin(), fu.end());
        continue;
      }
      // Fold into the parent: per parent entry, u off the link (min f + cost) or on it (the best
      // entry of u reading what the parent entry writes).
      double any = INFINITY;
      by_group.assign(static_cast<std::size_t>(t.groups), INFINITY);
      for (std::size_t i = 0; i < fu.size(); ++i) {
        any = std::min(any, fu[i]);
        if (t.group[i] >= 0) by_group[t.group[i]] = std::min(by_group[t.group[i]], fu[i]);
      }
      const auto q = static_cast<std::size_t>(t.parent);
      const std::span<double> fq(flat.data() + offset[q], tree[q].bytes.size());
      for (std::size_t a = 0; a < fq.size(); ++a) {
        const int g = t.parent_group[a];
        fq[a] += g >= 0 ? std::min(any + t.link_cost, by_group[g]) : any + t.link_cost;
      }
    }
    return total;
  }
  // The best assignment at lambda = 0 (bytes are whole numbers, exact in double below 2^53).
  Bytes bound() const { return constant + min_sum + static_cast<Bytes>(std::floor(forest(0.0) + 0.5)); }
};

// Lower bound on op o's roofline time under its entries (launch overhead excluded), given the
// HBM bytes `own` an entry forces it to read: the larger of its compute time on the entry's cores
// and the time of the bytes it must move (`fixed_bytes`: its layout fixes' round trips and the
// graph inputs it is the first reader of; `own`; a reduction split's partials); a reduction split
// adds its combine (overhead, reading the partials and writing the sum, one add per element).
struct OpTimer {
  double flops = 0, out_bytes = 0, out_elements = 0, fixed_bytes = 0;
  OpTimer(const Model& m, int o, double fixed) : fixed_bytes(fixed) {
    const program::Op& op = m.prog->ops[o];
    flops = op_flops(m, static_cast<std::size_t>(o));
    for (auto t : op.outputs) out_bytes += static_cast<double>(m.bytes[t]), out_elements += static_cast<double>(m.elements[t]);
  }
  double seconds(const Hardware& hw, int64_t cores, int64_t r, Bytes own) const {
    const double ncores = static_cast<double>(std::max<int64_t>(1, cores)), rr = static_cast<double>(r);
    const double moved = fixed_bytes + static_cast<double>(own) + (r > 1 ? rr * out_bytes : 0.0);
    double t = std::max(flops / (ncores * hw.core_flops_per_s), moved / hw.hbm_bytes_per_s);
    if (r > 1)
      t += hw.op_overhead_s +
           std::max(rr * out_elements / (ncores * hw.core_flops_per_s), (rr + 1) * out_bytes / hw.hbm_bytes_per_s);
    return t;
  }
};

// Bytes op o moves under every entry: its layout fixes' round trips, and the graph inputs it is
// the first reader of (read by the op, or by their clone op, whose time is outside the op's but
// adds at least the same: max(c, a) + b >= max(c, a + b)).
double fixed_op_bytes(const Model& m, int o) {
  const program::Program& p = *m.prog;
  const program::Op& op = p.ops[o];
  double fixed = 0;
  for (const LayoutFix& f : m.fixes[o]) fixed += 2.0 * static_cast<double>(f.fixed_bytes);
  for (std::size_t k = 0; k < op.inputs.size(); ++k) {
    const program::TensorId t = op.inputs[k];
    if (!p.tensors[t].graph_input || p.producer[t] >= 0) continue;
    if (*std::min_element(p.consumers[t].begin(), p.consumers[t].end()) != static_cast<program::OpId>(o)) continue;
    if (std::find(op.inputs.begin(), op.inputs.begin() + static_cast<std::ptrdiff_t>(k), t) !=
        op.inputs.begin() + static_cast<std::ptrdiff_t>(k))
      continue;
    fixed += static_cast<double>(m.bytes[t]);
  }
  return fixed;
}

// A chain through the edge prod -> cons (cons < 0: through prod alone): ops linked producer ->
// consumer, backwards by the first input a divided op produces, forwards by the first divided
// reader of the first output; at most 32 ops over at most 96 op indices (the window a large
// program's move is scored on spans its ops +-8 and at most 120).
std::vector<int> chain_through(const Model& m, int prod, int cons) {
  const program::Program& p = *m.prog;
  std::vector<int> back{prod}, fwd;
  if (cons >= 0) fwd.push_back(cons);
  const int last = cons >= 0 ? cons : prod;
  auto room = [&](int lo, int hi) { return back.size() + fwd.size() < 32 && hi - lo <= 96; };
  for (int x = prod; room(x, last);) {
    int y = -1;
    for (program::TensorId t : p.ops[x].inputs)
      if (p.producer[t] >= 0 && m.div.ops[p.producer[t]].divided) { y = p.producer[t]; break; }
    if (y < 0 || !room(y, last)) break;
    back.push_back(y);
    x = y;
  }
  const int lo = back.back();
  for (int x = last; room(lo, x) && !p.ops[x].outputs.empty();) {
    int y = -1;
    for (program::OpId c : p.consumers[p.ops[x].outputs[0]])
      if (c > x && m.div.ops[c].divided && (y < 0 || c < y)) y = c;
    if (y < 0 || !room(lo, y)) break;
    fwd.push_back(y);
    x = y;
  }
  std::vector<int> chain(back.rbegin(), back.rend());
  chain.insert(chain.end(), fwd.begin(), fwd.end());
  return chain;
}

// Chain move: one menu entry per op of `chain`, chosen jointly by dynamic programming over the
// chain (exact for this cost): each op's roofline time under its entry (compute on its cores, its
// layout fixes and first-read inputs, a reduction split's partials and combine) plus, for every
// tensor an op writes and the next op reads, `weight` x its HBM round trip when the two slice it
// differently or the writer splits a reduction (it cannot stay on LX). weight >> 1 keeps one
// slicing along the chain wherever the menus share one. Returns every op's entry (it does not
// depend on the current choice, so the search keeps it per chain).
Moves chain_move(const Model& m, const Hardware& hw, const std::vector<int>& chain, double weight) {
  const program::Program& p = *m.prog;
  const std::size_t n = chain.size();
  std::vector<std::vector<double>> cost(n);
  std::vector<std::vector<int>> from(n);
  auto entries = [&](int o) { return std::max<int>(1, static_cast<int>(m.div.ops[o].candidates.size())); };
  // Slicings by number per hand-off (string compares in the k x k loop dominated the search).
  std::unordered_map<std::string, int> ids;
  auto id_of = [&](const std::string& sl) { return ids.try_emplace(sl, static_cast<int>(ids.size())).first->second; };
  std::vector<int> wid, rid;
  for (std::size_t i = 0; i < n; ++i) {
    const int o = chain[i], k = entries(o);
    const OpTimer timer(m, o, fixed_op_bytes(m, o));
    cost[i].assign(static_cast<std::size_t>(k), 0.0);
    from[i].assign(static_cast<std::size_t>(k), -1);
    for (int c = 0; c < k; ++c)
      cost[i][c] = timer.seconds(hw, cores_of(m, o, c), reduction_factor(m, o, c), 0) + hw.op_overhead_s;
    if (i == 0) continue;
    const int q = chain[i - 1], kq = entries(q);
    std::vector<double> link(static_cast<std::size_t>(kq) * k, 0.0);  // [a * k + c]
    for (program::TensorId t : p.ops[q].outputs) {
      if (std::find(p.ops[o].inputs.begin(), p.ops[o].inputs.end(), t) == p.ops[o].inputs.end()) continue;
      const double trip = weight * 2.0 * static_cast<double>(m.bytes[t]) / hw.hbm_bytes_per_s;
      wid.assign(kq, -1);
      rid.assign(k, -2);
      for (int a = 0; a < kq; ++a)
        if (!reduction_split(m, q, a)) wid[a] = id_of(slicing_of(m, q, a, t, true));
      for (int c = 0; c < k; ++c) rid[c] = id_of(slicing_of(m, o, c, t, false));
      for (int a = 0; a < kq; ++a)
        for (int c = 0; c < k; ++c)
          if (wid[a] != rid[c]) link[static_cast<std::size_t>(a) * k + c] += trip;
    }
    for (int c = 0; c < k; ++c) {
      double best = INFINITY;
      for (int a = 0; a < kq; ++a) {
        const double v = cost[i - 1][a] + link[static_cast<std::size_t>(a) * k + c];
        if (v < best) best = v, from[i][c] = a;
      }
      cost[i][c] += best;
    }
  }
  int c = static_cast<int>(std::min_element(cost[n - 1].begin(), cost[n - 1].end()) - cost[n - 1].begin());
  Moves mv;
  for (std::size_t i = n; i-- > 0;) {
    mv.emplace_back(chain[i], c);
    c = from[i][c];
  }
  return mv;
}

// `timed`: also build each op's (bytes, seconds) frontier on that hardware (time_limited_bound).
// `rings`: mismatched slicings can be moved LX-to-LX (docs/lx.md "Ring transfers"), so a value
// costs HBM only when no slicing its producer can write fits (a relaxation: the bound stays valid).
MenuCosts menu_costs(const Model& m, Bytes capacity, const Options& o, const std::function<bool(int, int)>& allowed,
                     const Hardware* timed = nullptr, bool rings = false) {
  const program::Program& p = *m.prog;
  MenuCosts mc;
  std::vector<std::vector<int>> admitted(p.ops.size());
  for (std::size_t op = 0; op < p.ops.size(); ++op) {
    const workdiv::OpDivision& od = m.div.ops[op];
    const int n = od.divided ? std::max<int>(1, static_cast<int>(od.candidates.size())) : 1;
    for (int c = 0; c < n; ++c)
      if (allowed(static_cast<int>(op), c)) admitted[op].push_back(c);
  }
  std::vector<Bytes> partial_bytes(p.ops.size(), 0);  // per producer: bytes of its outputs (partials if split)
  // Slicings by number: sets of strings were a third of the fixed part at 20,000 ops (allocations).
  std::unordered_map<std::string, int> slicing_id;
  auto id_of = [&](const std::string& sl) { return slicing_id.try_emplace(sl, static_cast<int>(slicing_id.size())).first->second; };
  auto known_id = [&](const std::string& sl) {
    auto it = slicing_id.find(sl);
    return it == slicing_id.end() ? -1 : it->second;
  };
  auto sort_unique = [](std::vector<int>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  };
  // star of op u: (tensor, sorted slicing ids under which it can stay on LX, cost if it cannot)
  struct Member { program::TensorId t; std::vector<int> ok; Bytes cost, own_read; };
  std::vector<std::vector<Member>> stars(p.ops.size());
  for (std::size_t ti = 0; ti < p.tensors.size(); ++ti) {
    const auto t = static_cast<program::TensorId>(ti);
    const int prod = p.producer[t];
    if (prod < 0) continue;
    partial_bytes[prod] += m.bytes[t];
    if (!o.lx || p.tensors[t].graph_output || p.tensors[t].graph_input) continue;
    bool opaque = p.ops[prod].kind == program::OpKind::kOpaque;
    for (program::OpId c : p.consumers[t]) opaque = opaque || p.ops[c].kind == program::OpKind::kOpaque;
    if (opaque) continue;
    if (o.only_reduction_outputs && p.ops[prod].kind != program::OpKind::kReduction) continue;
    int nreads = 0;
    for (program::OpId c : p.consumers[t])
      for (program::TensorId x : p.ops[c].inputs) nreads += x == t;
    if (p.consumers[t].empty()) {
      mc.constant += m.bytes[t];
      continue;
    }
    // slicings the producer can hand over
    std::vector<int> ok;
    const program::Op& op = p.ops[prod];
    std::size_t slot = op.inputs.size();
    for (std::size_t k = 0; k < op.outputs.size(); ++k)
      if (op.outputs[k] == t) slot = op.inputs.size() + k;
    for (int c : admitted[prod]) {
      if (reduction_split(m, prod, c)) continue;
      const auto sp = splits_of(m, prod, c);
      const std::vector<workdiv::Split> s(sp.begin(), sp.end());
      int64_t cores = 1;
      for (auto k : s) cores *= k;
      GOperand w = operand(m, op, m.div.ops[prod], s, static_cast<int>(cores), slot, t);
      if (w.per_core <= capacity) ok.push_back(id_of(w.slicing));
    }
    sort_unique(ok);
    const program::OpId first = *std::min_element(p.consumers[t].begin(), p.consumers[t].end());
    std::vector<int> reads, both;
    for (program::OpId u : p.consumers[t]) {
      if (u == first || ok.empty() || rings) continue;
      reads.clear();
      for (int c : admitted[u]) {
        const int id = known_id(slicing_of(m, u, c, t, false));  // unknown: the producer cannot write it
        if (id >= 0) reads.push_back(id);
      }
      sort_unique(reads);
      both.clear();
      std::set_intersection(ok.begin(), ok.end(), reads.begin(), reads.end(), std::back_inserter(both));
      ok.swap(both);
    }
    int first_reads = 0;
    for (program::TensorId x : p.ops[first].inputs) first_reads += x == t;
    stars[first].push_back({t, std::move(ok), m.bytes[t] * (1 + nreads), m.bytes[t] * first_reads});
  }
  if (timed) mc.frontier.resize(p.ops.size());
  // Links: per op, its costliest star member whose producer is divided and has entries.
  mc.tree.assign(p.ops.size(), {});
  mc.in_tree.assign(p.ops.size(), 0);
  std::vector<int> linked(p.ops.size(), -1);  // index in stars[u]
  for (std::size_t u = 0; u < p.ops.size(); ++u) {
    if (admitted[u].empty()) continue;
    for (std::size_t i = 0; i < stars[u].size(); ++i) {
      const Member& x = stars[u][i];
      const int q = p.producer[x.t];
      if (rings || x.ok.empty() || q < 0 || q == static_cast<int>(u) || !m.div.ops[q].divided || admitted[q].empty()) continue;
      if (linked[u] < 0 || x.cost > stars[u][static_cast<std::size_t>(linked[u])].cost) linked[u] = static_cast<int>(i);
    }
    if (linked[u] < 0) continue;
    const Member& x = stars[u][static_cast<std::size_t>(linked[u])];
    TreeOp& t = mc.tree[u];
    t.parent = p.producer[x.t];
    t.link_cost = static_cast<double>(x.cost);
    std::vector<int> ids;  // group -> slicing id
    for (int c : admitted[u]) {
      const int id = known_id(slicing_of(m, static_cast<int>(u), c, x.t, false));
      int g = -1;
      if (id >= 0 && std::binary_search(x.ok.begin(), x.ok.end(), id)) {
        g = static_cast<int>(std::find(ids.begin(), ids.end(), id) - ids.begin());
        if (g == static_cast<int>(ids.size())) ids.push_back(id);
      }
      t.group.push_back(g);
    }
    t.groups = static_cast<int>(ids.size());
    for (int c : admitted[t.parent]) {
      int g = -1;
      if (!reduction_split(m, t.parent, c)) {
        const int id = known_id(slicing_of(m, t.parent, c, x.t, true));
        const auto it = std::find(ids.begin(), ids.end(), id);
        if (id >= 0 && it != ids.end()) g = static_cast<int>(it - ids.begin());
      }
      t.parent_group.push_back(g);
    }
    mc.in_tree[u] = mc.in_tree[t.parent] = 1;
  }
  struct Entry { double seconds; int k; int64_t cores, r; };  // seconds before star reads
  std::vector<Entry> order;
  for (std::size_t u = 0; u < p.ops.size(); ++u) {
    const std::vector<int>& adm = admitted[u];
    if (adm.empty()) continue;
    const workdiv::OpDivision& od = m.div.ops[u];
    std::optional<OpTimer> timer;
    if (timed) timer.emplace(m, static_cast<int>(u), fixed_op_bytes(m, static_cast<int>(u)));
    // Entries fastest first (without star reads): once one costs nothing, every later entry is
    // no cheaper and no faster, so neither the minimum nor the frontier can change.
    order.clear();
    for (std::size_t k = 0; k < adm.size(); ++k) {
      const int c = adm[k];
      const int64_t cores = od.divided ? cores_of(m, static_cast<int>(u), c) : 1;
      const int64_t r = reduction_factor(m, static_cast<int>(u), c);
      order.push_back({timer ? timer->seconds(*timed, cores, r, 0) : 0.0, static_cast<int>(k), cores, r});
    }
    if (timed) std::stable_sort(order.begin(), order.end(), [](const Entry& a, const Entry& b) { return a.seconds < b.seconds; });
    Bytes cheapest = -1;
    std::vector<std::pair<double, double>> pts;  // (bytes, seconds)
    TreeOp& tu = mc.tree[u];
    if (mc.in_tree[u]) tu.bytes.assign(adm.size(), 0.0), tu.seconds.assign(adm.size(), 0.0);
    for (const Entry& en : order) {
      const int c = adm[static_cast<std::size_t>(en.k)];
      Bytes cost = en.r > 1 ? 2 * en.r * partial_bytes[u] : 0, own = 0;
      for (std::size_t i = 0; i < stars[u].size(); ++i) {
        if (static_cast<int>(i) == linked[u]) continue;  // charged on its link
        const Member& x = stars[u][i];
        const int id = x.ok.empty() ? -1 : known_id(slicing_of(m, static_cast<int>(u), c, x.t, false));
        if (rings ? x.ok.empty() : (id < 0 || !std::binary_search(x.ok.begin(), x.ok.end(), id)))
          cost += x.cost, own += x.own_read;
      }
      const double secs = timer ? (own > 0 ? timer->seconds(*timed, en.cores, en.r, own) : en.seconds) : 0.0;
      if (mc.in_tree[u]) {  // every entry counts: the links decide
        tu.bytes[static_cast<std::size_t>(en.k)] = static_cast<double>(cost);
        tu.seconds[static_cast<std::size_t>(en.k)] = secs;
        continue;
      }
      cheapest = cheapest < 0 ? cost : std::min(cheapest, cost);
      if (timer) pts.emplace_back(static_cast<double>(cost), secs);
      if (cost == 0) break;
    }
    if (mc.in_tree[u]) continue;
    mc.min_sum += cheapest;
    if (!timed) continue;
    std::sort(pts.begin(), pts.end());
    for (const auto& pt : pts)
      if (mc.frontier[u].empty() || pt.second < mc.frontier[u].back().second) mc.frontier[u].push_back(pt);
  }
  mc.offset.assign(p.ops.size() + 1, 0);
  for (std::size_t u = 0; u < p.ops.size(); ++u) mc.offset[u + 1] = mc.offset[u] + (mc.in_tree[u] ? mc.tree[u].bytes.size() : 0);
  return mc;
}

// The bound over every split choice of the plans whose roofline time is at most `time_s`. Each
// program op takes at least the launch overhead plus OpTimer::seconds of its entry, so such a
// plan's entries satisfy: sum of those <= budget = time_s - ops x overhead (the
// roofline of account(), ops as lower_op_into inserts them). Lagrangian relaxation of that
// budget: for every lambda >= 0 the minimum over entries of (bytes + lambda x seconds), summed
// over ops, minus lambda x budget, is a valid bound (lambda = 0: the bound over every split).
// The best lambda is searched on a log grid, then refined (the function is concave).
Bytes time_limited_bound(const MenuCosts& mc, std::size_t ops, const Hardware& hw, double time_s) {
  const double budget = time_s - static_cast<double>(ops) * hw.op_overhead_s;
  const Bytes any = mc.bound();
  if (!(budget > 0)) return any;
  auto value = [&](double lambda) {
    double v = static_cast<double>(mc.constant) - lambda * budget + mc.forest(lambda);
    for (const auto& f : mc.frontier) {
      double best = INFINITY;
      for (const auto& [bytes, seconds] : f) best = std::min(best, bytes + lambda * seconds);
      if (!f.empty()) v += best;
    }
    return v;
  };
  // lambda in bytes per second: from far below to far above the HBM bandwidth.
  double best_l = 0, best_v = static_cast<double>(any);
  const double l0 = hw.hbm_bytes_per_s * 1e-6;
  for (int i = 0; i <= 40; ++i) {
    const double l = l0 * std::pow(10.0, i * 0.3);
    const double v = value(l);
    if (v > best_v) best_v = v, best_l = l;
  }
  if (best_l > 0) {  // golden-section refinement between the grid neighbours
    double a = best_l / std::pow(10.0, 0.3), b = best_l * std::pow(10.0, 0.3);
    for (int it = 0; it < 30; ++it) {
      const double x1 = b - 0.618 * (b - a), x2 = a + 0.618 * (b - a);
      if (value(x1) < value(x2)) a = x1; else b = x2;
    }
    best_v = std::max(best_v, value(0.5 * (a + b)));
  }
  // Rounding margin: the sums above are in double (relative error far below 1e-9).
  const double safe = best_v - 1e-9 * std::fabs(best_v) - 1.0;
  return std::max(any, static_cast<Bytes>(std::floor(safe)));
}

// One planning run at a fixed core budget (o.cores), with what the bounds need once the run
// whose plan is returned is known.
struct CoreRun {
  Plan plan;
  Bytes compulsory = 0;    // account()'s compulsory traffic of the run's plan
  MenuCosts every;         // costs over every entry of this run's menus, timed
  bool bounded = false;    // every and the bounds were computed (co-optimization on)
  double fixed_s = 0;      // seconds outside the budget: division, bounds, checker
  std::vector<int> choice;  // menu entry per op of the returned plan (a continued run starts here)
};

// `base` holds the program's bytes, elements and layout fixes (the same at every core count).
// `start`, when given, is an earlier run's choice at the same count: the search continues from it.
// `seconds` is the run's budget in nominal seconds of the work clock (planner_internal.h), so the
// run's result does not depend on the wall clock. `guard` (>= seconds) is how long, on that clock,
// the run may take when its steps overrun their shares; the wall clock cuts only past WallGuard.
Result<CoreRun> plan_at_cores(const Model& base, const Hardware& hw, const Options& o, double seconds, double guard,
                              const std::vector<int>* start = nullptr) {
  const program::Program& p = *base.prog;
  Budget dl(seconds);
  const Budget hard(seconds < 0 ? seconds : std::max(seconds, guard));
  Model m;
  m.prog = base.prog;
  m.bytes = base.bytes;
  m.elements = base.elements;
  m.fixes = base.fixes;
  workdiv::Options wo;
  wo.max_cores = o.cores;
  wo.span_limit = hw.span_limit;
  wo.candidates = o.coopt;
  wo.max_candidates = 64;
  auto d = workdiv::divide(p, wo);
  if (!d) return d.error();
  int64_t menu_entries = 0;
  for (const auto& od : d->ops) menu_entries += static_cast<int64_t>(od.candidates.size()) + 1;
  spend(0.2 * static_cast<double>(menu_entries) / kMenuEntriesPerSecond);  // division (a fifth), bounds below
  const double divide_s = dl.elapsed();
  m.div = std::move(*d);
  m.slicings.assign(p.ops.size(), {});
  m.op_sigs.assign(p.ops.size(), {});
  std::vector<int> choice(p.ops.size(), 0);
  if (start && start->size() == choice.size()) choice = *start;  // same count, same menus
  // Large programs: the seed plan is a fallback that co-optimization usually replaces, so it gets
  // less of the budget than the split search (which is anytime and still improving at 0.8 s).
  const bool small_program = p.ops.size() <= 200;
  const double before_seed = dl.elapsed();
  auto seed_plan = plan_graph_impl(lower(m, choice), hw, o, o.coopt ? left(dl) * (small_program ? 0.25 : 0.1) : left(dl), false);
  const double seed_seconds = dl.elapsed() - before_seed;
  if (!seed_plan) return seed_plan.error();
  if (!o.coopt || !o.lx) {
    CoreRun run;
    run.plan = std::move(*seed_plan);
    run.fixed_s = divide_s;
    return run;
  }
  // Co-optimization: repair core-div mismatches by re-splitting the producer or the consumer,
  // trying every menu entry that slices the shared tensor alike (this covers dim flips,
  // multi-dim splits, fewer cores and reduction splits); accept a move when the roofline improves.
  const bool small = p.ops.size() <= 200;
  const int64_t nops_total = static_cast<int64_t>(p.ops.size());
  // The search stops at a work budget (ops planned while scoring, search_ops_per_second per second
  // of its budget) before its deadline, so its result does not depend on the machine's load or on
  // where the time runs out; the deadline only guards the limit on a slow machine.
  int64_t work = 0, max_work = 0;
  auto fast_eval = [&](const std::vector<int>& ch) {
    work += nops_total;
    return plan_graph_impl(lower(m, ch), hw, o, 0.0, true);
  };
  std::optional<Plan> cur;  // small programs: the current full plan (exact scoring)
  if (small) {
    auto c0 = fast_eval(choice);
    if (!c0) return c0.error();
    cur = std::move(*c0);
  }
  int changes = 0;
  std::vector<std::string> notes;
  // The rest of the limit plans the final choice in full and computes the bounds: at least
  // twice what the seed plan took (measured: at 8,000 ops a quarter of 0.8 s was not enough).
  const double budget = std::max(0.0, std::min(left(dl) * (small ? 0.5 : 0.75), left(dl) - 2.5 * seed_seconds));
  // On the work clock too (budgets here are nominal seconds, docs/lx.md "Time limit"); the wall
  // clock ends it only past the run's guard (mnasnet0_5 at 8 cores with four busy loops beside it:
  // a wall-clock cut stopped the search at 43 % of its work, 470.4 us against 467.5).
  Budget search(seconds < 0 ? -1.0 : std::max(budget, left(hard) - (seconds - budget - dl.elapsed())));
  // From the run's budget, not from measured times (the seed plan's time varies with the load).
  max_work = seconds < 0 ? INT64_MAX
                         : static_cast<int64_t>(std::min(seconds * (small ? 0.5 : 0.75) * o.search_ops_per_second, 1e15));
  auto stop = [&] { return work >= max_work || search.expired(); };
  const int nops = static_cast<int>(p.ops.size());
  struct Edge { int prod, cons; program::TensorId t; };
  // Blocked values under a split choice: (producer, consumer, tensor) pairs that slice a value
  // differently, and (producer, -1, tensor) for reduction-split producers.
  auto blocked = [&](const std::vector<int>& ch) {
    std::vector<Edge> edges;
    for (std::size_t t = 0; t < p.tensors.size(); ++t) {
      int prod = p.producer[t];
      if (prod < 0 || !m.div.ops[prod].divided) continue;
      if (reduction_split(m, prod, ch[prod])) {
        edges.push_back({prod, -1, static_cast<program::TensorId>(t)});
        continue;
      }
      std::string w = slicing_of(m, prod, ch[prod], static_cast<program::TensorId>(t), true);
      for (program::OpId c : p.consumers[t])
        if (m.div.ops[c].divided && slicing_of(m, c, ch[c], static_cast<program::TensorId>(t), false) != w)
          edges.push_back({prod, c, static_cast<program::TensorId>(t)});
    }
    return edges;
  };
  // Split choices already scored, by a 64-bit Zobrist hash (updated per move: a full copy or
  // rehash per candidate dominated the search at 2,000 ops); a collision only skips one
  // candidate, deterministically.
  std::unordered_set<uint64_t> tried;
  std::unordered_map<uint64_t, Score> window_scores;  // by window_key
  std::unordered_map<uint64_t, Moves> chain_moves;     // by chain and weight
  std::vector<int> key_scratch;
  auto zobrist = [](int op, int entry) {
    return splitmix64(static_cast<uint64_t>(op) << 32 ^ static_cast<uint64_t>(entry + 1));
  };
  uint64_t choice_hash = 0;
  for (int k = 0; k < nops; ++k) choice_hash ^= zobrist(k, choice[k]);
  // Descent: repair blocked edges, taking the best move per edge, until no move improves.
  bool chains = false;
  auto descend = [&]() -> Status {
    bool improved = true;
    while (improved && !stop()) {
      improved = false;
      std::vector<Edge> edges = blocked(choice);
      for (std::size_t e = 0; e < edges.size() && !stop(); ++e) {
        const Edge ed = edges[e];
        // still blocked under the current choice?
        if (ed.cons >= 0 ? slicing_of(m, ed.prod, choice[ed.prod], ed.t, true) == slicing_of(m, ed.cons, choice[ed.cons], ed.t, false)
                         : !reduction_split(m, ed.prod, choice[ed.prod]))
          continue;
        Moves best_move;
        std::optional<Plan> best_plan;  // small programs
        std::optional<Score> base, best_score;  // large programs: the window of the current choice, the best move's
        int win_a = 0, win_b = nops - 1;
        auto consider = [&](const Moves& mv) -> Status {
          // Zobrist hash of the choice after the move (O(move), not O(ops)).
          uint64_t h = choice_hash;
          int lo = nops, hi = -1;
          for (const auto& [op, c] : mv) {
            if (c == choice[op]) continue;
            h ^= zobrist(op, choice[op]) ^ zobrist(op, c);
            lo = std::min(lo, op), hi = std::max(hi, op);
          }
          if (hi < 0 || !tried.insert(h).second) return ok_status();
          if (small) {
            std::vector<int> ch = choice;
            for (const auto& [op, c] : mv) ch[op] = c;
            auto r = fast_eval(ch);
            if (!r) return r.error();
            if (better(*r, best_plan ? *best_plan : *cur)) {
              best_plan = std::move(*r);
              best_move = mv;
            }
            return ok_status();
          }
          if (hi - lo > 120) return ok_status();
          int a = std::max(0, std::min({lo, ed.prod, ed.cons >= 0 ? ed.cons : ed.prod}) - 8);
          int b = std::min(nops - 1, std::max({hi, ed.prod, ed.cons}) + 8);
          auto window_score = [&]() -> Result<Score> {
            work += 1 + (b - a + 1) / 8;  // the key (a hit costs this much too)
            const uint64_t sig = window_key(m, choice, a, b, key_scratch);
            if (auto it = window_scores.find(sig); it != window_scores.end()) return it->second;
            work += b - a + 1;
            auto r = plan_graph_impl(lower_window(m, choice, a, b), hw, o, 0.0, true);
            if (!r) return r.error();
            return window_scores[sig] = score_of(*r);
          };
          if (!base || a != win_a || b != win_b) {
            auto r0 = window_score();
            if (!r0) return r0.error();
            base = *r0;
            win_a = a, win_b = b;
            best_score.reset();
            best_move.clear();
          }
          // Score the window with the move applied in place, then undo it.
          Moves undo;
          for (const auto& [op, c] : mv) undo.emplace_back(op, choice[op]), choice[op] = c;
          auto r = window_score();
          for (auto it = undo.rbegin(); it != undo.rend(); ++it) choice[it->first] = it->second;
          if (!r) return r.error();
          if (better(*r, best_score ? *best_score : *base)) {
            best_score = *r;
            best_move = mv;
          }
          return ok_status();
        };
        for (int side = 0; side < 2; ++side) {
          if (side == 0 && ed.cons < 0) continue;
          int op = side == 0 ? ed.cons : ed.prod;
          std::string want = side == 0 ? slicing_of(m, ed.prod, choice[ed.prod], ed.t, true)
                                       : (ed.cons >= 0 ? slicing_of(m, ed.cons, choice[ed.cons], ed.t, false) : "");
          const auto& menu = m.div.ops[op].candidates;
          std::vector<int> matching;
          for (int c = 0; c < static_cast<int>(menu.size()); ++c) {
            if (c == choice[op]) continue;
            if (side == 1 && reduction_split(m, op, c)) continue;
            if (ed.cons >= 0 && slicing_of(m, op, c, ed.t, side == 1) != want) continue;
            matching.push_back(c);
          }
          // most cores first: region moves only for the first few
          std::stable_sort(matching.begin(), matching.end(), [&](int a, int b) { return cores_of(m, op, a) > cores_of(m, op, b); });
          for (std::size_t k = 0; k < matching.size() && !stop(); ++k) {
            if (Status st = consider({{op, matching[k]}}); !st) return st.error();
            if (k < 4) {
              if (Status st = consider(propagate(m, choice, op, matching[k])); !st) return st.error();
            }
          }
        }
        // Chain moves: the whole chain through this edge re-split jointly (its ops keep one slicing
        // where their menus share one), once trading mismatches against op time, once keeping them.
        if (chains && !stop()) {
          const std::vector<int> chain = chain_through(m, ed.prod, ed.cons);
          for (double weight : {1.0, 64.0}) {
            uint64_t key = weight > 1.0 ? 1 : 2;
            for (int x : chain) key = splitmix64(key ^ static_cast<uint64_t>(x));
            auto it = chain_moves.find(key);
            if (it == chain_moves.end()) {
              work += static_cast<int64_t>(chain.size());
              it = chain_moves.emplace(key, chain_move(m, hw, chain, weight)).first;
            }
            if (Status st = consider(it->second); !st) return st.error();
          }
        }
        if (!best_move.empty()) {
          std::vector<int> best_choice = choice;
          for (const auto& [op, c] : best_move) best_choice[op] = c;
          for (std::size_t k = 0; k < choice.size(); ++k)
            if (choice[k] != best_choice[k]) {
              notes.push_back("co-opt: op '" + p.ops[k].name + "' re-split " + join_splits(m.div.ops[k], m.div.ops[k].splits) +
                              " -> " + join_splits(m.div.ops[k], m.div.ops[k].candidates[best_choice[k]]));
              choice_hash ^= zobrist(static_cast<int>(k), choice[k]) ^ zobrist(static_cast<int>(k), best_choice[k]);
            }
          choice = std::move(best_choice);
          if (small) cur = std::move(*best_plan);
          ++changes;
          improved = true;
          if (small) break;
        }
      }
    }
    return ok_status();
  };
  // First without chain moves, then with them. The first optimum is planned in full too: moves
  // are scored by fast plans (one heuristic placement), and a chain move or a perturbation that
  // wins there can lose once placed exactly (measured on a converted mobilenet_v2: 556.5 us
  // without chain moves, 580.5 us with them; regnet_x_400mf: 938.6 -> 896.4 us).
  if (Status st = descend(); !st) return st.error();
  const std::vector<int> descent_choice = choice;
  const int descent_changes = changes;
  const std::size_t descent_notes = notes.size();
  chains = true;
  if (Status st = descend(); !st) return st.error();
  // Perturbation (small programs, exact scores): from the best choice, re-split a random op to a
  // random entry with its region, descend again, keep the result only if it is better. Stops at
  // the search budget or after 8 rounds in a row without a gain (a small program then plans in
  // well under its limit); deterministic given the seed as long as the budget is not the cause.
  if (small && m.div.ops.size() > 0) {
    Rng rng(o.seed ^ 0x6c78636f6f7074ULL);
    std::vector<int> ops_with_menus;
    for (int k = 0; k < nops; ++k)
      if (m.div.ops[k].divided && m.div.ops[k].candidates.size() > 1) ops_with_menus.push_back(k);
    for (int stale = 0; stale < 8 && !ops_with_menus.empty() && !stop(); ++stale) {
      const std::vector<int> keep_choice = choice;
      const uint64_t keep_hash = choice_hash;
      Plan keep_plan = *cur;
      const int keep_changes = changes;
      const std::size_t keep_notes = notes.size();
      const int op = ops_with_menus[rng.below(ops_with_menus.size())];
      const int k = static_cast<int>(m.div.ops[op].candidates.size());
      int entry = static_cast<int>(rng.below(static_cast<uint64_t>(k - 1)));
      if (entry >= choice[op]) ++entry;
      for (const auto& [x, c] : propagate(m, choice, op, entry)) {
        choice_hash ^= zobrist(x, choice[x]) ^ zobrist(x, c);
        choice[x] = c;
      }
      auto r = fast_eval(choice);
      if (!r) return r.error();
      cur = std::move(*r);
      if (Status st = descend(); !st) return st.error();
      if (better(*cur, keep_plan)) {
        stale = -1;
        ++changes;
        notes.push_back("co-opt: perturbation at op '" + p.ops[op].name + "' kept");
        continue;
      }
      choice = keep_choice;
      choice_hash = keep_hash;
      cur = std::move(keep_plan);
      changes = keep_changes;
      notes.resize(keep_notes);
    }
  }
  Result<Plan> result = seed_plan;
  std::vector<int> result_choice = start && start->size() == choice.size() ? *start : std::vector<int>(p.ops.size(), 0);
  // Final plans of the search's result and, when chain moves or perturbations moved it, of the
  // first descent's optimum (each with an equal share of the time left); the best of them and the seed wins.
  std::vector<std::pair<const std::vector<int>*, int>> finals;
  if (changes > 0) finals.emplace_back(&choice, changes);
  if (descent_changes > 0 && descent_choice != choice) finals.emplace_back(&descent_choice, descent_changes);
  for (std::size_t k = 0; k < finals.size(); ++k) {
    const auto& [ch, count] = finals[k];
    // At least a quarter of the run's budget, within the guard, even when the search overran
    // (a final plan with no time left is one heuristic placement).
    const double final_s = std::min(left(hard), std::max(left(dl), 0.25 * seconds));
    auto final_plan = plan_graph_impl(lower(m, *ch), hw, o, final_s / static_cast<double>(finals.size() - k), false);
    if (!final_plan) return final_plan.error();
    if (better(*final_plan, *result)) {  // never worse than the seed division
      final_plan->coopt_changes = count;
      const std::size_t keep = ch == &choice ? notes.size() : descent_notes;
      for (std::size_t i = 0; i < keep; ++i) final_plan->notes.push_back(notes[i]);
      result = std::move(final_plan);
      result_choice = *ch;
    }
  }
  const double before_bounds = dl.elapsed();
  spend(0.8 * static_cast<double>(menu_entries) / kMenuEntriesPerSecond);
  CoreRun run;
  // The bound over every split choice also counts what no menu entry can keep on LX.
  run.compulsory = result->totals.lower_bound_hbm;
  const bool rings = hw.ring_bytes_per_s > 0 && o.ring_transfers && o.lx;
  run.every = menu_costs(m, lx_capacity(hw), o, [](int, int) { return true; }, &hw, rings);
  result->totals.lower_bound_hbm += run.every.bound();
  // The same over the splits that keep every op on the core count the plan gives it.
  result->totals.cores_lower_bound_hbm =
      run.compulsory + menu_costs(m, lx_capacity(hw), o, [&](int op, int c) {
                         return cores_of(m, op, c) == cores_of(m, op, result_choice[op]);
                       }, nullptr, rings).bound();
  // And over every split choice of the plans no slower than this one.
  result->totals.time_lower_bound_hbm =
      run.compulsory + time_limited_bound(run.every, p.ops.size(), hw, result->totals.time_s);
  run.plan = std::move(*result);
  run.choice = std::move(result_choice);
  run.bounded = true;
  run.fixed_s = divide_s + dl.elapsed() - before_bounds;
  return run;
}

// Core budgets tried for --cores n: n, then the powers of two below it. A plan at n may lose to
// one at fewer cores (the search starts from the seed division, which spreads every op over all
// n cores, and repairs mismatches locally), and "at most n cores" admits both.
std::vector<int> core_budgets(const Options& o) {
  std::vector<int> counts{o.cores};
  if (!o.fewer_cores || !o.coopt || !o.lx) return counts;
  int k = 1;
  while (k * 2 < o.cores) k *= 2;
  for (; k >= 1; k /= 2)
    if (k < o.cores) counts.push_back(k);
  return counts;
}

// The program's tensor bytes, elements and layout fixes (the same at every core count).
Result<Model> base_model(const program::Program& p) {
  Model m;
  m.prog = &p;
  std::vector<layout::Layout> layouts;
  layouts.reserve(p.tensors.size());
  for (const auto& t : p.tensors) {
    auto l = program::tensor_layout(t);
    if (!l) return bad_input(p.name + ": tensor '" + t.name + "': " + l.error().message);
    m.bytes.push_back(layout::device_bytes(*l));
    layouts.push_back(std::move(*l));
    int64_t e = 1;
    for (auto d : t.shape) e *= d;
    m.elements.push_back(e);
  }
  // Layout incompatibilities (what `divide` reports): each costs the fixed copy's round trip.
  m.fixes.assign(p.ops.size(), {});
  for (std::size_t oi = 0; oi < p.ops.size(); ++oi)
    for (const program::LayoutIssue& is : program::check_op_layouts(p, static_cast<program::OpId>(oi), layouts)) {
      LayoutFix f;
      f.tensor = is.tensor;
      f.padding = is.fix == program::FixKind::kPadding;
      f.fixed_bytes = m.bytes[is.tensor];
      if (f.padding && is.pad_from > 0 && is.pad_to > is.pad_from)
        f.fixed_bytes = padded_bytes(m.bytes[is.tensor], is.pad_from, is.pad_to);
      f.message = is.message;
      m.fixes[oi].push_back(std::move(f));
    }
  return m;
}

// Exhaustive reference (tests): every assignment of menu entries at exactly o.cores, each planned
// in full with `seconds_each`; the best by the search's order. Refused above max_assignments.
Result<ExactReference> exact_split_reference_impl(const program::Program& p, const Hardware& hw, const Options& o,
                                                  int64_t max_assignments, double seconds_each) {
  auto base = base_model(p);
  if (!base) return base.error();
  Model& m = *base;
  workdiv::Options wo;
  wo.max_cores = o.cores;
  wo.span_limit = hw.span_limit;
  wo.candidates = true;
  wo.max_candidates = 64;  // the planner's menus
  auto d = workdiv::divide(p, wo);
  if (!d) return d.error();
  m.div = std::move(*d);
  m.slicings.assign(p.ops.size(), {});
  m.op_sigs.assign(p.ops.size(), {});
  std::vector<int> sizes;
  int64_t total = 1;
  for (const auto& od : m.div.ops) {
    sizes.push_back(od.divided ? std::max<int>(1, static_cast<int>(od.candidates.size())) : 1);
    total *= sizes.back();
    if (total > max_assignments) return bad_input("exact reference: more than " + std::to_string(max_assignments) + " assignments");
  }
  ExactReference ref;
  std::vector<int> choice(p.ops.size(), 0);
  for (int64_t n = 0; n < total; ++n) {
    auto r = plan_graph_impl(lower(m, choice), hw, o, seconds_each, false);
    if (!r) return r.error();
    if (!ref.best || better(*r, *ref.best)) ref.best = std::move(*r);
    ++ref.assignments;
    for (std::size_t k = 0; k < choice.size() && ++choice[k] == sizes[k]; ++k) choice[k] = 0;  // odometer
  }
  return ref;
}

}  // namespace

Result<ExactReference> exact_split_reference(const program::Program& p, const Hardware& hw, const Options& o,
                                             int64_t max_assignments, double seconds_each) {
  return exact_split_reference_impl(p, hw, o, max_assignments, seconds_each);
}

Result<Plan> plan_program(const program::Program& p, const Hardware& hw, const Options& o) {
  // Open layouts first: the plan is made for the program with the layouts chosen, and says which
  // (the compiler must honour them). Why: a reduction along the stick dim writes a sparse output
  // natively; left at the default dense layout, its output needs a restickify, and a dense
  // [seq, 1] output has few sticks, which caps the row splits of every op reading it (the dense
  // generated transformer: 38.9 % above the bound over every split, 13.3 % with the layouts
  // chosen; docs/lx.md).
  if (o.infer_layouts) {
    const std::vector<program::OpenLayout> chosen = program::infer_open_layouts(p);
    if (!chosen.empty()) {
      program::Program q = p;
      for (const auto& c : chosen) q.tensors[c.tensor].dim_order = c.dim_order;
      Options inner = o;
      inner.infer_layouts = false;
      auto plan = plan_program(q, hw, inner);
      if (!plan) return plan;
      plan->options.infer_layouts = true;
      for (const auto& c : chosen) plan->inferred_layouts.push_back({q.tensors[c.tensor].name, c.dim_order});
      return plan;
    }
  }
  const WallGuard wall(o.time_limit);
  Budget dl(o.time_limit);
  if (o.cores < 1 || o.cores > hw.max_cores)
    return bad_input("--cores " + std::to_string(o.cores) + ": hardware '" + hw.name + "' has 1.." +
                     std::to_string(hw.max_cores) + " cores");
  auto base = base_model(p);
  if (!base) return base.error();
  const Model& m = *base;
  // Budget, in two passes (the search is cut by time on large programs, so a count's result
  // depends on the time it gets; docs/lx.md "Core budgets"). The schedule does not depend on N,
  // so --cores N repeats the work --cores K < N does at each count K and keeps the best over more
  // counts. First pass: every count gets a fixed slot, half the limit over the number of counts
  // the hardware's largest N tries. Second pass: every count continues its search from
  // its first-pass choice for 0.8 of a slot. Every run gets its budget after
  // the part no budget controls (division, bounds, checker: the largest measured so far, with a
  // 25 % margin) and starts only if that part still fits, so the limit holds at any program size.
  const std::vector<int> counts = core_budgets(o);
  std::vector<CoreRun> runs;
  std::size_t best = 0;
  double fixed_est = 0;
  std::vector<std::string> skipped;
  Options widest = o;
  widest.cores = hw.max_cores;
  const bool unlimited = o.time_limit < 0;  // every run converges: one pass
  // Over 2,000 ops a slot does not cover one run's unbudgeted part (8,000 ops: a 0.8 s limit left
  // no time for a second pass): the run at N gets half the limit, the others share the rest.
  const bool huge = p.ops.size() > 2000;
  const double limit = std::max(0.0, o.time_limit);
  const double slot = unlimited ? -1.0 : 0.5 * limit / static_cast<double>(std::max(counts.size(), core_budgets(widest).size()));
  auto run_at = [&](int cores, double budget, const std::vector<int>* start) -> Result<CoreRun> {
    Options oc = o;
    oc.cores = cores;
    const double t0 = dl.elapsed();
    // A run may stretch to three times its budget (nominal: work clock) while the limit allows it
    // (the rest of the limit less the fixed part and a tenth of the limit for what follows).
    const double guard = unlimited || huge ? budget : std::max(budget, std::min(3.0 * budget, left(dl) - 1.25 * fixed_est - 0.1 * limit));
    auto r = plan_at_cores(m, hw, oc, budget, guard, start);
    if (r) fixed_est = std::max(fixed_est, r->fixed_s + std::max(0.0, dl.elapsed() - t0 - budget));
    return r;
  };
  for (std::size_t i = 0; i < counts.size(); ++i) {
    double budget = counts.size() == 1 || unlimited ? o.time_limit : huge ? 0.5 * left(dl) : slot;
    if (i > 0 && !unlimited && huge) {
      if (left(dl) <= 1.25 * fixed_est) break;
      budget = (left(dl) - 1.25 * fixed_est) / static_cast<double>(counts.size() - i);
    } else if (i > 0 && !unlimited) {
      // The rest of the first pass and a continuation must fit, else the runs so far go to the
      // second pass (large programs: the fixed part takes most of the limit).
      const double runs_left = static_cast<double>(counts.size() - i + 1);
      if (left(dl) <= runs_left * (slot + 1.25 * fixed_est)) break;
      budget = std::min(slot, left(dl) - 1.25 * fixed_est);
    }
    auto r = run_at(counts[i], budget, nullptr);
    if (!r) {
      // Fewer cores can be infeasible (an operand's per-core span over the limit): skip them.
      if (i == 0 || r.error().kind != ErrorKind::kBadInput) return r.error();
      skipped.push_back(std::to_string(counts[i]) + ": " + r.error().message);
      continue;
    }
    runs.push_back(std::move(*r));
    if (runs.size() > 1 && better(runs.back().plan, runs[best].plan)) best = runs.size() - 1;
  }
  if (counts.size() > 1 && !unlimited && !huge) {
    // Every count continues with the same slot whatever N (in count order, the largest first), so
    // --cores N repeats the continuation --cores K < N gives each count K. Ends by 90 % of the limit
    // (writing the plan comes after).
    const double end = 0.9 * limit, continue_slot = 0.8 * slot;
    for (std::size_t k = 0; k < runs.size(); ++k) {
      const double budget = std::min({continue_slot, end - dl.elapsed(), left(dl) - 1.25 * fixed_est});
      if (budget <= 0) break;
      auto r = run_at(runs[k].plan.options.cores, budget, &runs[k].choice);
      if (!r) return r.error();  // the same count planned before
      if (better(r->plan, runs[k].plan)) runs[k] = std::move(*r);
      if (better(runs[k].plan, runs[best].plan)) best = k;
    }
  }
  std::vector<Plan::CoreBudgetRun> tried;
  for (const CoreRun& r : runs)
    tried.push_back({r.plan.options.cores, r.plan.totals.time_s, r.plan.totals.hbm_read + r.plan.totals.hbm_write});
  CoreRun& win = runs[best];
  Plan result = std::move(win.plan);
  result.planned_cores = result.options.cores;
  result.options.cores = o.cores;
  result.core_runs = std::move(tried);
  if (runs.size() > 1 && win.bounded) {
    // Each run's bounds hold over its own menus (menus are capped, so the menu at n cores need
    // not hold every entry of the menu at fewer): the minimum over the runs holds for any plan
    // this call can return.
    Bytes every = INT64_MAX, timed = INT64_MAX;
    for (const CoreRun& r : runs) {
      if (!r.bounded) continue;
      every = std::min(every, r.compulsory + r.every.bound());
      timed = std::min(timed, r.compulsory + time_limited_bound(r.every, p.ops.size(), hw, result.totals.time_s));
    }
    result.totals.lower_bound_hbm = every;
    result.totals.time_lower_bound_hbm = timed;
  }
  if (counts.size() > 1) {
    std::string tried;
    for (const auto& c : result.core_runs) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "%s%d: %.1f us", tried.empty() ? "" : ", ", c.cores, c.time_s * 1e6);
      tried += buf;
    }
    for (const auto& s : skipped) tried += ", " + s;
    if (runs.size() + skipped.size() < counts.size()) tried += ", fewer not tried: time limit";
    result.notes.push_back("cores: best at " + std::to_string(result.planned_cores) + " of at most " +
                           std::to_string(o.cores) + " cores (" + tried + ")");
  }
  if (PlanCheck c = check_plan(result); !c.ok())
    return internal_error("LX plan failed the independent check: " + c.violations.front().message);
  return result;
}

}  // namespace sp::lx
