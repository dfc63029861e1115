#include "workdiv/workdiv.h"

#include <algorithm>

#include "program/layout_compat.h"

namespace sp::workdiv {
namespace {

Split product(const std::vector<Split>& s) {
  Split p = 1;
  for (Split x : s) p *= x;
  return p;
}

bool in_domain(const SplitSpace& s, int v, Split f) {
  if (f < 1 || s.sizes[v] % f != 0) return false;
  if (!s.blocked.empty() && s.blocked[v]) return f == 1;
  if (!s.allowed.empty() && !s.allowed[v].empty())
    return std::find(s.allowed[v].begin(), s.allowed[v].end(), f) != s.allowed[v].end();
  return true;
}

int split_reductions(const SplitSpace& s, const std::vector<Split>& splits) {
  int n = 0;
  for (std::size_t v = 0; v < splits.size(); ++v) n += s.reduction[v] && splits[v] > 1;
  return n;
}

bool spans_ok(const SplitSpace& s, const std::vector<Split>& splits) {
  for (const SpanTensor& t : s.tensors)
    if (per_core_span(t, splits) > s.span_limit) return false;
  return true;
}

Split floor_of(const SplitSpace& s, int v) { return s.min_splits.empty() ? 1 : s.min_splits[v]; }

std::string mib(Bytes b) { return std::to_string(b) + " bytes (" + std::to_string(b >> 20) + " MiB)"; }

bool lone_var(const program::AffineExpr& e) { return e.terms.size() == 1 && e.terms[0].coeff == 1; }

// Per operand (inputs then outputs): the op reads or writes it restickified (a layout fix of
// program::check_op_layouts), so its own sticks do not bind the op's splits. Why: a batch norm's
// per-channel statistics, dense and sticked on C, would cap its channel split at C / 64 while
// the op reads them broadcast (sparse) after the fix; it then split rows where the convolution
// beside it split channels, and the activation between them crossed HBM.
std::vector<char> restickified_operands(const program::Program& p, program::OpId o, const std::vector<layout::Layout>& layouts) {
  std::vector<char> fixed(p.ops[o].inputs.size() + p.ops[o].outputs.size(), 0);
  for (const program::LayoutIssue& is : program::check_op_layouts(p, o, layouts, false))
    if (is.fix == program::FixKind::kRestickify && is.operand >= 0 && static_cast<std::size_t>(is.operand) < fixed.size())
      fixed[is.operand] = 1;
  return fixed;
}

// The var of a non-plain result that slices its dim exactly, or -1: the var with the largest
// coefficient c when the other terms tile [0, c) densely (mixed radix: coefficients 1, r1,
// r1*r2, ... with c the product of the inner ranges), e.g. `d0 * 64 + d3` or a slice `d1 + 768`.
// Splitting it k ways gives each core a contiguous run of c * range / k indices. On the stick
// dim the run must start and end on sticks: c and the offset multiples of the elements per stick.
int outer_var(const program::AffineExpr& e, const std::vector<Dim>& ranges, int stick_eps) {
  if (e.terms.empty() || program::is_plain(e)) return -1;
  std::vector<program::AffineTerm> t = e.terms;
  std::sort(t.begin(), t.end(), [](const auto& a, const auto& b) { return a.coeff < b.coeff; });
  int64_t next = 1;
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    // Coefficients are <= 2^40 (parser), so a product above that can match none: stop before it overflows.
    if (t[i].coeff != next || ranges[t[i].var] > (int64_t{1} << 40) / next) return -1;
    next *= ranges[t[i].var];
  }
  const program::AffineTerm& o = t.back();
  if (o.coeff != next) return -1;
  // A lone var (a slice d + 768) stays a stick var: splits count whole sticks as for plain dims.
  if (stick_eps > 0 && (e.offset % stick_eps != 0 || (o.coeff % stick_eps != 0 && t.size() > 1) ||
                        (t.size() == 1 && o.coeff != 1 && o.coeff % stick_eps != 0)))
    return -1;
  return o.var;
}

}  // namespace

SumSplits sum_splits(const program::Program& p, program::OpId o, const std::vector<layout::Layout>& layouts) {
  const program::Op& op = p.ops[o];
  SumSplits s;
  s.blocked.assign(op.ranges.size(), 0);
  const std::size_t noperands = op.inputs.size() + op.outputs.size();
  for (std::size_t m = 0; m < noperands && m < op.exprs.size(); ++m) {
    const program::TensorId t = m < op.inputs.size() ? op.inputs[m] : op.outputs[m - op.inputs.size()];
    const int sh = layout::stick_host_dim(layouts[t]);
    std::vector<int> voh(op.indexing_maps[m].begin(), op.indexing_maps[m].end());
    for (std::size_t d = 0; d < op.exprs[m].size(); ++d) {
      const program::AffineExpr& e = op.exprs[m][d];
      if (program::is_plain(e) || e.terms.empty()) continue;
      const int eps = static_cast<int>(d) == sh ? layout::elems_per_stick(layouts[t].dtype) : 0;
      const int v = outer_var(e, op.ranges, eps);
      voh[d] = v;
      for (const program::AffineTerm& term : e.terms)
        if (term.var != v) s.blocked[term.var] = 1;
    }
    s.var_of_host.push_back(std::move(voh));
  }
  return s;
}

SpanTensor span_tensor(const layout::Layout& l, const std::vector<int>& var_of_host_dim, program::TensorId id) {
  auto dec = layout::decompose(l);
  if (!dec) {
    SpanTensor t;
    t.tensor = id;
    return t;
  }
  return span_tensor(l, *dec, var_of_host_dim, id);
}

SpanTensor span_tensor(const layout::Layout& l, const layout::HostDimLevels& d, const std::vector<int>& var_of_host_dim,
                       program::TensorId id) {
  const layout::HostDimLevels* dec = &d;
  SpanTensor t;
  t.tensor = id;
  t.device_size = l.device_size;
  t.var_of_dim.assign(l.device_size.size(), -1);
  t.elems_per_stick = layout::elems_per_stick(l.dtype);
  const int bits = layout::dtype_info(l.dtype).bits;
  t.inner_bytes.assign(l.device_size.size(), 0);
  // Bytes of one step along dim k: prod(device_size[k+1:]) elements.
  Dim inner = 1;
  for (int k = static_cast<int>(l.device_size.size()) - 1; k >= 0; --k) {
    t.inner_bytes[k] = inner * bits / 8;
    inner *= l.device_size[k];
  }
  for (std::size_t h = 0; h < dec->levels.size(); ++h) {
    if (dec->levels[h].empty()) continue;
    // Cores slice a host dim at its outermost device dim (the stick-count slot for the stick dim).
    int hv = -1;
    if (dec->host_size.size() == l.host_size.size() && h < var_of_host_dim.size()) hv = var_of_host_dim[h];
    t.var_of_dim[dec->levels[h].back().device_dim] = hv;
  }
  const int last = static_cast<int>(l.device_size.size()) - 1;
  if (last >= 0 && dec->host_dim_of[last] >= 0 && dec->host_size.size() == l.host_size.size() &&
      static_cast<std::size_t>(dec->host_dim_of[last]) < var_of_host_dim.size())
    t.stick_var = var_of_host_dim[dec->host_dim_of[last]];
  return t;
}

Bytes per_core_span(const SpanTensor& t, const std::vector<Split>& splits, int* dim) {
  for (std::size_t k = 0; k < t.device_size.size(); ++k) {
    Dim e = t.device_size[k];
    const int v = t.var_of_dim[k];
    if (v >= 0 && static_cast<std::size_t>(v) < splits.size() && splits[v] > 1) e = (e + splits[v] - 1) / splits[v];
    if (e > 1) {
      if (dim) *dim = static_cast<int>(k);
      return e * t.inner_bytes[k];
    }
  }
  if (dim) *dim = -1;
  return layout::kBytesInStick;
}

Split core_split(Dim size, int64_t max_cores) {
  for (Split f = std::min<Dim>(size, max_cores); f > 1; --f)
    if (size % f == 0) return f;
  return 1;
}

std::vector<Split> legal_domain(const SplitSpace& s, int v, int max_cores) {
  std::vector<Split> out;
  for (Split f = 1; f <= max_cores && f <= s.sizes[v]; ++f)
    if (in_domain(s, v, f)) out.push_back(f);
  return out;
}

Result<std::vector<Split>> distribute(const SplitSpace& s, const std::vector<int>& output_priority,
                                      const std::vector<int>& reduction_vars, int max_cores) {
  const int n = static_cast<int>(s.sizes.size());
  std::vector<Split> splits(n, 1);
  std::vector<std::vector<Split>> dom(n);
  for (int v = 0; v < n; ++v) {
    dom[v] = legal_domain(s, v, max_cores);
    const Split fl = floor_of(s, v);
    if (!s.blocked.empty() && s.blocked[v] && fl > 1)
      return bad_input("iteration variable " + s.names[v] + " is a blocked dim but has a committed split of " +
                       std::to_string(fl));
    auto it = std::find_if(dom[v].begin(), dom[v].end(), [&](Split f) { return f >= fl; });
    if (it == dom[v].end())
      return bad_input("iteration variable " + s.names[v] + " (size " + std::to_string(s.sizes[v]) +
                       ") has no legal split >= " + std::to_string(fl) + " within " + std::to_string(max_cores) + " cores");
    splits[v] = *it;
  }
  if (split_reductions(s, splits) > 1)
    return bad_input("at most one split reduction variable is supported; the committed splits need " +
                     std::to_string(split_reductions(s, splits)));
  for (int v : output_priority) {
    const Split others = product(splits) / splits[v];
    for (auto it = dom[v].rbegin(); it != dom[v].rend(); ++it)
      if (*it >= splits[v] && *it * others <= max_cores) {
        splits[v] = *it;
        break;
      }
  }
  if (split_reductions(s, splits) == 0) {
    const Split remaining = max_cores / product(splits);
    int best = -1;
    Split best_f = 1;
    for (int r : reduction_vars) {
      Split f = 1;
      for (Split x : dom[r])
        if (x <= remaining) f = x;
      if (f > best_f) {
        best = r;
        best_f = f;
      }
    }
    if (best >= 0) splits[best] = best_f;
  }
  return splits;
}

Result<std::vector<Split>> span_floors(const SplitSpace& s, int max_cores) {
  const int n = static_cast<int>(s.sizes.size());
  std::vector<Split> floors(n, 1);
  for (int v = 0; v < n; ++v) floors[v] = floor_of(s, v);
  for (const SpanTensor& t : s.tensors) {
    if (per_core_span(t, floors) <= s.span_limit) continue;
    bool fits = false;
    for (std::size_t k = 0; k < t.device_size.size() && !fits; ++k) {
      const int v = t.var_of_dim[k];
      if (v < 0) continue;
      // Divisors >= the committed floor; prefer the smallest that fits (fewest cores), else the
      // one with the smallest span (most progress), then move to the next device dim.
      Split best_fit = 0, best_progress = 0;
      Bytes progress_span = 0;
      for (Split f : legal_domain(s, v, max_cores)) {
        if (f < floors[v] || product(floors) / floors[v] * f > max_cores) continue;
        std::vector<Split> trial = floors;
        trial[v] = f;
        const Bytes sp = per_core_span(t, trial);
        if (sp <= s.span_limit) {
          best_fit = f;
          break;
        }
        if (best_progress == 0 || sp < progress_span) {
          best_progress = f;
          progress_span = sp;
        }
      }
      if (best_fit) {
        floors[v] = best_fit;
        fits = true;
      } else if (best_progress) {
        floors[v] = best_progress;
      }
    }
    if (!fits) {
      int dim = -1;
      const Bytes sp = per_core_span(t, floors, &dim);
      const int v = dim >= 0 ? t.var_of_dim[dim] : -1;
      // A stick var counted in sticks may have no whole-stick slice count that a span var needs.
      if (v >= 0) {
        for (const SpanTensor& o : s.tensors)
          if (o.stick_var == v && &o != &t)
            return bad_input("iteration variable " + s.names[v] + " is the stick variable of another operand (" +
                             std::to_string(s.sizes[v]) + " sticks) and the span variable of this one; no valid slice count brings its per-core span (" +
                             mib(sp) + ") within " + mib(s.span_limit));
      }
      const bool blocked = v >= 0 && !s.blocked.empty() && s.blocked[v];
      return bad_input("no split within " + std::to_string(max_cores) + " cores brings an operand's per-core span (" +
                       mib(sp) + ") within " + mib(s.span_limit) +
                       (blocked ? "; " + s.names[v] + " sets the span but may not be split (a reduction over a partial stick)"
                                : std::string()));
    }
  }
  if (split_reductions(s, floors) > 1)
    return bad_input("the 256 MiB span limit needs more than one reduction variable split (" +
                     std::to_string(split_reductions(s, floors)) + "); at most one is supported");
  return floors;
}

bool committed_legal(const SplitSpace& s, const std::vector<Split>& splits) {
  if (splits.size() != s.sizes.size()) return false;
  for (std::size_t v = 0; v < splits.size(); ++v)
    if (!in_domain(s, static_cast<int>(v), splits[v]) || splits[v] < floor_of(s, static_cast<int>(v))) return false;
  return split_reductions(s, splits) <= 1;
}

bool proposed_legal(const SplitSpace& s, const std::vector<Split>& splits, int max_cores) {
  return committed_legal(s, splits) && product(splits) <= max_cores && spans_ok(s, splits);
}

void enumerate_into(const SplitSpace& s, int max_cores, std::size_t cap, const std::vector<Split>& skip, Menu& menu) {
  const int n = static_cast<int>(s.sizes.size());
  menu.width = static_cast<std::size_t>(n);
  std::vector<std::vector<Split>> dom(n);
  for (int v = 0; v < n; ++v) {
    for (Split f : legal_domain(s, v, max_cores))
      if (f >= floor_of(s, v)) dom[v].push_back(f);
    if (dom[v].empty()) return;
  }
  // Depth-first in var order (first var outermost), domains ascending: a product over the
  // budget prunes the rest of the domain, so the walk stays small for any number of vars.
  std::vector<Split> cur(n, 1);
  std::size_t found = 0;
  auto rec = [&](auto&& self, int v, Split prod, bool red, bool outsplit) -> void {
    if (found >= cap) return;
    if (v == n) {
      if (cur != skip && spans_ok(s, cur)) {
        menu.flat.insert(menu.flat.end(), cur.begin(), cur.end());
        ++found;
      }
      return;
    }
    for (Split f : dom[v]) {
      if (prod * f > max_cores) break;
      const bool r = red || (s.reduction[v] && f > 1);
      const bool o = outsplit || (!s.reduction[v] && f > 1);
      // At most one split reduction var, and only with unsplit output vars.
      if (f > 1 && s.reduction[v] && red) continue;
      if (r && o) continue;
      cur[v] = f;
      self(self, v + 1, prod * f, r, o);
    }
    cur[v] = 1;
  };
  rec(rec, 0, 1, false, false);
}

std::vector<std::vector<Split>> enumerate_candidates(const SplitSpace& s, int max_cores, std::size_t cap) {
  Menu m;
  enumerate_into(s, max_cores, cap, {}, m);
  std::vector<std::vector<Split>> out;
  for (std::size_t i = 0; i < m.size(); ++i) out.push_back(m[i]);
  return out;
}

Result<SplitSpace> op_space(const program::Program& p, program::OpId o, const std::vector<layout::Layout>& layouts,
                            const Options& opt, std::vector<VarInfo>* vars_out,
                            const std::vector<layout::HostDimLevels>* decs) {
  const program::Op& op = p.ops[o];
  const int n = static_cast<int>(op.ranges.size());
  SplitSpace s;
  s.span_limit = opt.span_limit;
  std::vector<VarInfo> vars(n);
  for (int v = 0; v < n; ++v) {
    vars[v].name = "d" + std::to_string(v);
    vars[v].size = op.ranges[v];
    vars[v].reduction = op.iterators[v] == program::IteratorType::kReduction;
  }
  std::vector<std::pair<program::TensorId, std::vector<int>>> seen;
  const std::size_t noperands = op.inputs.size() + op.outputs.size();
  const SumSplits sums = sum_splits(p, o, layouts);
  const std::vector<char> fixed = restickified_operands(p, o, layouts);
  for (std::size_t m = 0; m < noperands; ++m) {
    const program::TensorId t = m < op.inputs.size() ? op.inputs[m] : op.outputs[m - op.inputs.size()];
    // x * x reads x once; x read through two different maps (x[i, k] - x[i, j]) is two operands.
    std::pair<program::TensorId, std::vector<int>> key{t, sums.var_of_host[m]};
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(std::move(key));
    const std::vector<int>& var_of_host = sums.var_of_host[m];
    SpanTensor st = decs ? span_tensor(layouts[t], (*decs)[t], var_of_host, t) : span_tensor(layouts[t], var_of_host, t);
    // An outer var on the stick dim slices whole sticks (checked by sum_splits): no stick rounding.
    const int sh = layout::stick_host_dim(layouts[t]);
    if (sh >= 0 && static_cast<std::size_t>(sh) < op.indexing_maps[m].size() && op.indexing_maps[m][sh] == program::kSummed &&
        !lone_var(op.exprs[m][sh]))
      st.stick_var = -1;
    // An operand the op reads restickified (program::check_op_layouts) does not bind its sticks.
    if (fixed[m]) st.stick_var = -1;
    if (st.stick_var >= 0)
      vars[st.stick_var].elems_per_stick = std::max(vars[st.stick_var].elems_per_stick, st.elems_per_stick);
    s.tensors.push_back(std::move(st));
  }
  for (int v = 0; v < n; ++v) {
    VarInfo& vi = vars[v];
    vi.adjusted = vi.elems_per_stick > 0 ? (vi.size + vi.elems_per_stick - 1) / vi.elems_per_stick : vi.size;
    // A reduction over a partial stick would mask coordinates mid-core: never split it.
    vi.blocked = vi.reduction && vi.elems_per_stick > 0 && vi.size % vi.elems_per_stick != 0;
    // A var inside an affine sum is split only when it is the outer var of a dense mixed-radix
    // sum (a reshape's h of 64*h + d, a slice's d of d + 768): then each core reads a contiguous
    // run. Any other var of a sum (conv's h in 2*h + r: a halo; the inner d) is never split.
    vi.summed = sums.blocked[v] != 0;
    vi.blocked = vi.blocked || vi.summed;
    s.names.push_back(vi.name);
    s.sizes.push_back(vi.adjusted);
    s.reduction.push_back(vi.reduction);
    s.blocked.push_back(vi.blocked);
  }
  s.min_splits.assign(n, 1);
  if (vars_out) *vars_out = std::move(vars);
  return s;
}

Result<Division> divide(const program::Program& p, const Options& opt) {
  if (opt.max_cores < 1 || opt.max_cores > kMaxCores)
    return bad_input("--cores " + std::to_string(opt.max_cores) + ": expected 1..32 cores");
  std::vector<layout::Layout> layouts;
  std::vector<layout::HostDimLevels> decs;
  layouts.reserve(p.tensors.size());
  decs.reserve(p.tensors.size());
  for (const auto& t : p.tensors) {
    auto l = program::tensor_layout(t);
    if (!l) return bad_input("tensor '" + t.name + "': " + l.error().message);
    auto dec = layout::decompose(*l);
    if (!dec) return bad_input("tensor '" + t.name + "': " + dec.error().message);
    layouts.push_back(std::move(*l));
    decs.push_back(std::move(*dec));
  }
  Division d;
  d.max_cores = opt.max_cores;
  d.ops.resize(p.ops.size());
  for (std::size_t o = 0; o < p.ops.size(); ++o) {
    const program::Op& op = p.ops[o];
    OpDivision& od = d.ops[o];
    od.op = static_cast<program::OpId>(o);
    if (op.kind == program::OpKind::kOpaque || op.ranges.empty()) continue;
    od.divided = true;
    auto s = op_space(p, od.op, layouts, opt, &od.vars, &decs);
    if (!s) return s.error();
    auto fail = [&](const Error& e) { return bad_input("op '" + op.name + "': " + e.message); };
    std::vector<Split> floors(s->sizes.size(), 1);
    if (opt.span_reduction) {
      auto f = span_floors(*s, opt.max_cores);
      if (!f) return fail(f.error());
      floors = *f;
    }
    od.floors = floors;
    s->min_splits = floors;
    od.splits = floors;
    if (opt.work_distribution) {
      // Output vars by decreasing adjusted size; reduction vars only if pass 1 split none.
      std::vector<int> outs, reds;
      bool committed_red = false;
      for (std::size_t v = 0; v < od.vars.size(); ++v) {
        if (!od.vars[v].reduction) outs.push_back(static_cast<int>(v));
        else {
          reds.push_back(static_cast<int>(v));
          committed_red = committed_red || floors[v] > 1;
        }
      }
      std::stable_sort(outs.begin(), outs.end(), [&](int a, int b) { return s->sizes[a] > s->sizes[b]; });
      if (committed_red) reds.clear();
      auto sp = distribute(*s, outs, reds, opt.max_cores);
      if (!sp) return fail(sp.error());
      od.splits = *sp;
    }
    od.cores = product(od.splits);
    for (const SpanTensor& t : s->tensors) {
      TensorSpanInfo ti;
      ti.tensor = t.tensor;
      ti.span = per_core_span(t, od.splits, &ti.device_dim);
      od.spans.push_back(ti);
    }
    if (opt.candidates) {
      od.candidates.width = od.splits.size();
      od.candidates.flat = od.splits;
      enumerate_into(*s, opt.max_cores, opt.max_candidates, od.splits, od.candidates);
    }
  }
  if (auto st = check_division(p, layouts, d, opt); !st)
    return internal_error("work division failed its check: " + st.error().message);
  return d;
}

Status check_division(const program::Program& p, const std::vector<layout::Layout>& layouts, const Division& d,
                      const Options& opt) {
  if (d.ops.size() != p.ops.size()) return bad_input("division has " + std::to_string(d.ops.size()) + " ops");
  for (std::size_t o = 0; o < p.ops.size(); ++o) {
    const program::Op& op = p.ops[o];
    const OpDivision& od = d.ops[o];
    const std::string at = "op '" + op.name + "': ";
    if (!od.divided) continue;
    const std::size_t n = op.ranges.size();
    if (od.splits.size() != n) return bad_input(at + "splits do not match the iteration space");
    // Elements per stick of each var, recomputed from the operands' stick dims.
    std::vector<int64_t> eps(n, 0);
    const std::size_t noperands = op.inputs.size() + op.outputs.size();
    const std::vector<char> fixed = restickified_operands(p, static_cast<program::OpId>(o), layouts);
    for (std::size_t m = 0; m < noperands; ++m) {
      if (fixed[m]) continue;
      const program::TensorId t = m < op.inputs.size() ? op.inputs[m] : op.outputs[m - op.inputs.size()];
      const int sh = layout::stick_host_dim(layouts[t]);
      int sv = sh >= 0 ? op.indexing_maps[m][sh] : -1;
      if (sv == program::kSummed && lone_var(op.exprs[m][sh])) sv = op.exprs[m][sh].terms[0].var;  // a slice of sticks
      if (sv >= 0) eps[sv] = std::max<int64_t>(eps[sv], layout::elems_per_stick(layouts[t].dtype));
    }
    int64_t cores = 1;
    int red = 0;
    for (std::size_t v = 0; v < n; ++v) {
      const Split f = od.splits[v];
      const Dim units = eps[v] ? (op.ranges[v] + eps[v] - 1) / eps[v] : op.ranges[v];
      if (f < 1 || units % f != 0)
        return bad_input(at + "d" + std::to_string(v) + " split " + std::to_string(f) + " does not divide its " +
                         std::to_string(units) + (eps[v] ? " sticks" : " elements"));
      cores *= f;
      red += op.iterators[v] == program::IteratorType::kReduction && f > 1;
    }
    if (cores > opt.max_cores) return bad_input(at + "uses " + std::to_string(cores) + " cores");
    if (red > 1) return bad_input(at + "splits " + std::to_string(red) + " reduction variables");
    const SumSplits sums = sum_splits(p, static_cast<program::OpId>(o), layouts);
    for (std::size_t v = 0; v < n && v < sums.blocked.size(); ++v)
      if (sums.blocked[v] && od.splits[v] > 1)
        return bad_input(at + "d" + std::to_string(v) + " appears in an affine sum it does not slice exactly but is split " +
                         std::to_string(od.splits[v]) + " ways");
    // Per-core device address range: sum over device dims of (extent - 1) * stride, one core's box.
    for (std::size_t m = 0; m < noperands; ++m) {
      const program::TensorId t = m < op.inputs.size() ? op.inputs[m] : op.outputs[m - op.inputs.size()];
      const layout::Layout& l = layouts[t];
      auto dec = layout::decompose(l);
      if (!dec) continue;
      const auto strides = layout::device_strides(l);
      std::vector<Dim> ext = l.device_size;
      for (std::size_t h = 0; h < dec->levels.size() && dec->host_size.size() == l.host_size.size(); ++h) {
        if (dec->levels[h].empty()) continue;
        const int v = m < sums.var_of_host.size() && h < sums.var_of_host[m].size() ? sums.var_of_host[m][h] : -1;
        const int k = dec->levels[h].back().device_dim;
        if (v >= 0) ext[k] = (ext[k] + od.splits[v] - 1) / od.splits[v];
      }
      Dim range = 1;
      for (std::size_t k = 0; k < ext.size(); ++k) range += (ext[k] - 1) * strides[k];
      const Bytes bytes = range * layout::dtype_info(l.dtype).bits / 8;
      if (bytes > opt.span_limit && opt.span_reduction)
        return bad_input(at + "tensor '" + p.tensors[t].name + "' spans " + std::to_string(bytes) + " bytes per core");
    }
  }
  return ok_status();
}

int64_t output_partition(const OpDivision& od, const std::vector<Split>& splits) {
  int64_t p = 1;
  for (std::size_t v = 0; v < splits.size() && v < od.vars.size(); ++v)
    if (!od.vars[v].reduction) p *= splits[v];
  return p;
}

Bytes matmul_hbm_bytes(Dim b, Dim m, Dim n, Dim k, int operand_bytes, int output_bytes, bool shared_weight) {
  const Dim weights = shared_weight ? k * n : b * k * n;
  return (b * m * k + weights) * operand_bytes + b * m * n * output_bytes;
}

}  // namespace sp::workdiv
