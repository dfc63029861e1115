#include "program/program.h"

#include <algorithm>
#include <cctype>
#include <unordered_map>

namespace sp::program {
namespace {

std::string tpath(std::size_t t) { return "$.tensors[" + std::to_string(t) + "]"; }
std::string opath(std::size_t o) { return "$.ops[" + std::to_string(o) + "]"; }

}  // namespace

const char* op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::kPointwise: return "pointwise";
    case OpKind::kReduction: return "reduction";
    case OpKind::kMatmul: return "matmul";
    case OpKind::kOpaque: return "opaque";
  }
  return "?";
}

const char* iterator_name(IteratorType t) { return t == IteratorType::kParallel ? "parallel" : "reduction"; }

Result<std::vector<AffineExpr>> parse_affine_exprs(const std::string& text, int* num_vars) {
  // Grammar: "(" [d0 {"," d<i>}] ")" "->" "(" [sum {"," sum}] ")" with
  // sum = term {"+" term}, term = d<i> | int | int "*" d<i> | d<i> "*" int. The domain lists
  // d0, d1, ... in order; coefficients are >= 1, a var appears at most once per result.
  constexpr int64_t kMaxConst = int64_t{1} << 40;
  std::size_t i = 0;
  auto fail = [&](const std::string& what) -> Result<std::vector<AffineExpr>> {
    return bad_input("affine map \"" + text + "\": " + what + " at character " + std::to_string(i + 1));
  };
  auto skip = [&] {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  };
  auto expect = [&](char c) {
    skip();
    if (i < text.size() && text[i] == c) {
      ++i;
      return true;
    }
    return false;
  };
  // d<i>: returns i, or -1 when the next token is not a var, -2 on a malformed var.
  auto var = [&]() -> int64_t {
    skip();
    if (i >= text.size() || text[i] != 'd') return -1;
    ++i;
    std::size_t start = i;
    int64_t v = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && i - start < 6) v = v * 10 + (text[i++] - '0');
    return i > start ? v : -2;
  };
  // An integer literal (capped at 2^40 + 1 so the bound check below reports it); -1 if none.
  auto integer = [&]() -> int64_t {
    skip();
    if (i >= text.size() || !std::isdigit(static_cast<unsigned char>(text[i]))) return -1;
    int64_t v = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) v = std::min(kMaxConst + 1, v * 10 + (text[i++] - '0'));
    return v;
  };
  if (!expect('(')) return fail("expected '('");
  int n = 0;
  if (!expect(')')) {
    while (true) {
      int64_t v = var();
      if (v != n) return fail("expected d" + std::to_string(n));
      ++n;
      if (expect(')')) break;
      if (!expect(',')) return fail("expected ',' or ')'");
    }
  }
  skip();
  if (text.compare(i, 2, "->") != 0) return fail("expected '->'");
  i += 2;
  if (!expect('(')) return fail("expected '('");
  std::vector<AffineExpr> out;
  if (!expect(')')) {
    while (true) {
      AffineExpr e;
      bool has_const = false;
      while (true) {
        int64_t v = var();
        int64_t c = 1;
        if (v == -2) return fail("expected d<i>");
        if (v == -1) {
          c = integer();
          if (c < 0) return fail("expected d<i> or an integer");
          if (expect('*')) {
            v = var();
            if (v < 0) return fail("expected d<i> after '*'");
          }
        } else if (expect('*')) {
          c = integer();
          if (c < 0) return fail("expected an integer after '*'");
        }
        if (c > kMaxConst) return fail("constant above 2^40");
        if (v >= 0) {
          if (v >= n) return fail("d" + std::to_string(v) + " is not among the " + std::to_string(n) + " dims");
          if (c < 1) return fail("coefficient of d" + std::to_string(v) + " must be >= 1");
          for (const AffineTerm& t : e.terms)
            if (t.var == v) return fail("d" + std::to_string(v) + " appears twice in one result");
          e.terms.push_back({static_cast<VarId>(v), c});
        } else {
          if (has_const) return fail("at most one constant per result");
          has_const = true;
          e.offset = c;
        }
        if (!expect('+')) break;
      }
      out.push_back(std::move(e));
      if (expect(')')) break;
      if (!expect(',')) return fail("expected ',', '+' or ')'");
    }
  }
  skip();
  if (i != text.size()) return fail("unexpected text after the map");
  *num_vars = n;
  return out;
}

VarId simple_var(const AffineExpr& e) {
  if (e.terms.empty() && e.offset == 0) return kConstZero;
  return is_plain(e) ? e.terms[0].var : kSummed;
}

bool is_plain(const AffineExpr& e) {
  return e.terms.size() == 1 && e.terms[0].coeff == 1 && e.offset == 0 && !e.prefix;
}

int64_t expr_max(const AffineExpr& e, const std::vector<Dim>& extent) {
  __extension__ using Wide = __int128;  // coeff x extent sums may pass int64 before the cap check
  constexpr Wide kCap = Wide{1} << 62;
  Wide m = e.offset;
  for (const AffineTerm& t : e.terms) {
    const Dim x = t.var >= 0 && static_cast<std::size_t>(t.var) < extent.size() ? extent[t.var] : 1;
    m += static_cast<Wide>(t.coeff) * (x > 0 ? x - 1 : 0);
    if (m > kCap) return static_cast<int64_t>(kCap);
  }
  return static_cast<int64_t>(m);
}

std::vector<char> summed_vars(const Op& op) {
  std::vector<char> out(op.iterators.size(), 0);
  for (const auto& map : op.exprs)
    for (const AffineExpr& e : map)
      if (!is_plain(e))
        for (const AffineTerm& t : e.terms)
          if (t.var >= 0 && static_cast<std::size_t>(t.var) < out.size()) out[t.var] = 1;
  return out;
}

Result<std::vector<VarId>> parse_affine_map(const std::string& text, int* num_vars) {
  auto e = parse_affine_exprs(text, num_vars);
  if (!e) return e.error();
  std::vector<VarId> out;
  for (const AffineExpr& x : *e) {
    const VarId v = simple_var(x);
    if (v == kSummed) return bad_input("affine map \"" + text + "\": expected d<i> or 0 for every result (no sums)");
    out.push_back(v);
  }
  return out;
}

std::string format_affine_map(const std::vector<VarId>& results, int num_vars) {
  std::string s = "(";
  for (int v = 0; v < num_vars; ++v) s += (v ? ", d" : "d") + std::to_string(v);
  s += ") -> (";
  for (std::size_t i = 0; i < results.size(); ++i)
    s += (i ? ", " : "") + (results[i] == kConstZero ? std::string("0") : "d" + std::to_string(results[i]));
  return s + ")";
}

std::string format_affine_exprs(const std::vector<AffineExpr>& results, int num_vars) {
  std::string s = "(";
  for (int v = 0; v < num_vars; ++v) s += (v ? ", d" : "d") + std::to_string(v);
  s += ") -> (";
  for (std::size_t i = 0; i < results.size(); ++i) {
    std::string r;
    for (const AffineTerm& t : results[i].terms)
      r += (r.empty() ? "d" : " + d") + std::to_string(t.var) + (t.coeff != 1 ? " * " + std::to_string(t.coeff) : "");
    if (results[i].offset != 0 || r.empty()) r += (r.empty() ? "" : " + ") + std::to_string(results[i].offset);
    s += (i ? ", " : "") + r;
  }
  return s + ")";
}

Result<layout::Layout> tensor_layout(const Tensor& t) {
  if (t.layout)
    return layout::explicit_layout(t.shape, {}, t.dtype, t.layout->device_size, t.layout->stride_map);
  if (!t.dim_order.empty()) return layout::layout_from_dim_order(t.shape, t.dtype, t.dim_order);
  return layout::default_layout(t.shape, t.dtype);
}

namespace {

// Op `op`'s indexing maps against its operands: one map per operand, plain and summed results,
// the iterator ranges they imply (or that are given), every result inside its dim.
Status finalize_op_maps(const Program& p, Op& op, const std::string& at, const std::string& source) {
  auto fail = [&](const std::string& where, const std::string& what) -> Status {
    return bad_input(source + ": " + where + ": " + what);
  };
  const std::size_t noperands = op.inputs.size() + op.outputs.size();
  const std::size_t nmaps = op.exprs.empty() ? op.indexing_maps.size() : op.exprs.size();
  if (nmaps != noperands)
    return fail(at + ".indexing_maps", "expected " + std::to_string(noperands) + " maps (inputs then outputs), got " +
                                           std::to_string(nmaps));
  const std::size_t nv = op.iterators.size();
  // The full results: from the parsed sums, or built from the plain maps (builders).
  if (op.exprs.empty()) {
    for (const auto& map : op.indexing_maps) {
      std::vector<AffineExpr> es;
      for (VarId v : map) {
        AffineExpr e;
        if (v != kConstZero) e.terms.push_back({v, 1});
        es.push_back(std::move(e));
      }
      op.exprs.push_back(std::move(es));
    }
  } else {
    op.indexing_maps.clear();
    for (const auto& map : op.exprs) {
      std::vector<VarId> vs;
      for (const AffineExpr& e : map) vs.push_back(simple_var(e));
      op.indexing_maps.push_back(std::move(vs));
    }
  }
  op.ranges.assign(nv, -1);
  std::vector<std::string> first_use(nv);
  if (!op.given_ranges.empty()) {
    if (op.given_ranges.size() != nv)
      return fail(at + ".ranges", "expected " + std::to_string(nv) + " ranges (one per iterator), got " + std::to_string(op.given_ranges.size()));
    for (std::size_t v = 0; v < nv; ++v) {
      if (op.given_ranges[v] < 1 || op.given_ranges[v] > layout::kMaxExtent)
        return fail(at + ".ranges[" + std::to_string(v) + "]", "expected a range in 1..2^40, got " + std::to_string(op.given_ranges[v]));
      op.ranges[v] = op.given_ranges[v];
      first_use[v] = "the given range";
    }
  }
  for (std::size_t m = 0; m < noperands; ++m) {
    const TensorId t = m < op.inputs.size() ? op.inputs[m] : op.outputs[m - op.inputs.size()];
    const Tensor& x = p.tensors[t];
    const auto& map = op.exprs[m];
    const std::string mp = at + ".indexing_maps[" + std::to_string(m) + "]";
    if (map.size() != x.shape.size())
      return fail(mp, "map has " + std::to_string(map.size()) + " results but tensor '" + x.name + "' has rank " +
                          std::to_string(x.shape.size()));
    for (std::size_t d = 0; d < map.size(); ++d) {
      const AffineExpr& e = map[d];
      for (const AffineTerm& term : e.terms)
        if (term.var < 0 || static_cast<std::size_t>(term.var) >= nv)
          return fail(mp, "d" + std::to_string(term.var) + " is not one of the " + std::to_string(nv) + " iterators");
      if (e.terms.empty()) {
        // A constant: 0 for a size-1 dim (broadcast, kept reduced dim); an input may also
        // read one index of a larger dim (a select).
        const bool output = m >= op.inputs.size();
        if (e.offset >= x.shape[d] || (output && x.shape[d] != 1))
          return fail(mp, "constant " + std::to_string(e.offset) + " indexes dim " + std::to_string(d) + " of '" + x.name +
                              "', which has size " + std::to_string(x.shape[d]) +
                              (output ? " (an output dim of size > 1 needs an iteration variable)" : " (must be below the size)"));
        continue;
      }
      op.exprs[m][d].prefix = false;
      if (!is_plain(e)) continue;  // summed: bounds checked once the ranges are known
      const VarId v = e.terms[0].var;
      const std::string here = "dim " + std::to_string(d) + " of '" + x.name + "'";
      if (!op.given_ranges.empty() && op.ranges[v] < x.shape[d]) {
        op.exprs[m][d].prefix = true;  // with explicit ranges, d<i> may read a prefix slice
        continue;
      }
      if (op.ranges[v] < 0) {
        op.ranges[v] = x.shape[d];
        first_use[v] = here;
      } else if (op.ranges[v] != x.shape[d]) {
        return fail(mp, "d" + std::to_string(v) + " indexes " + here + " (size " + std::to_string(x.shape[d]) +
                            ") but also " + first_use[v] + " (size " + std::to_string(op.ranges[v]) + ")");
      }
    }
  }
  for (std::size_t v = 0; v < nv; ++v)
    if (op.ranges[v] < 0)
      return fail(at + ".iterator_types", "d" + std::to_string(v) + " indexes no operand dim on its own (give \"ranges\" when a var appears only in sums)");
  for (std::size_t m = 0; m < noperands; ++m)
    for (std::size_t d = 0; d < op.exprs[m].size(); ++d) op.indexing_maps[m][d] = simple_var(op.exprs[m][d]);
  // Summed and offset results stay inside their dims over the whole iteration box.
  for (std::size_t m = 0; m < noperands; ++m) {
    const TensorId t = m < op.inputs.size() ? op.inputs[m] : op.outputs[m - op.inputs.size()];
    const Tensor& x = p.tensors[t];
    for (std::size_t d = 0; d < op.exprs[m].size(); ++d) {
      const AffineExpr& e = op.exprs[m][d];
      if (e.terms.empty() || is_plain(e)) continue;
      const int64_t hi = expr_max(e, op.ranges);
      if (hi >= x.shape[d])
        return fail(at + ".indexing_maps[" + std::to_string(m) + "]",
                    "result " + std::to_string(d) + " reaches index " + std::to_string(hi) + " of dim " + std::to_string(d) +
                        " of '" + x.name + "', which has size " + std::to_string(x.shape[d]));
    }
  }
  return ok_status();
}

// The kind rules: reductions index no output, parallel iterators index one, pointwise ops have
// no reduction, reductions have one, matmuls have their shape.
Status check_op_kind(const Op& op, const std::string& at, const std::string& source) {
  auto fail = [&](const std::string& where, const std::string& what) -> Status {
    return bad_input(source + ": " + where + ": " + what);
  };
  const std::size_t noperands = op.inputs.size() + op.outputs.size();
  const std::size_t nv = op.iterators.size();
  std::vector<char> in_output(nv, 0);
  for (std::size_t m = op.inputs.size(); m < noperands; ++m)
    for (const AffineExpr& e : op.exprs[m])
      for (const AffineTerm& term : e.terms) in_output[term.var] = 1;
  int reductions = 0;
  for (std::size_t v = 0; v < nv; ++v) {
    const bool red = op.iterators[v] == IteratorType::kReduction;
    reductions += red;
    if (red && in_output[v]) return fail(at + ".iterator_types[" + std::to_string(v) + "]", "reduction iterator d" + std::to_string(v) + " indexes an output");
    if (!red && !in_output[v] && op.kind != OpKind::kOpaque)
      return fail(at + ".iterator_types[" + std::to_string(v) + "]", "parallel iterator d" + std::to_string(v) + " indexes no output");
  }
  if (op.kind == OpKind::kPointwise && reductions > 0) return fail(at + ".kind", "a pointwise op has only parallel iterators");
  if (op.kind == OpKind::kReduction && reductions == 0) return fail(at + ".kind", "a reduction needs a reduction iterator");
  if (op.kind == OpKind::kMatmul) {
    if (op.inputs.size() != 2 || op.outputs.size() != 1) return fail(at + ".kind", "a matmul has 2 inputs and 1 output");
    if (reductions != 1) return fail(at + ".iterator_types", "a matmul has exactly one reduction iterator (K)");
    if (op.indexing_maps[0].empty() || op.indexing_maps[1].size() < 2 || op.indexing_maps[2].size() < 2)
      return fail(at + ".indexing_maps", "matmul operands need rank >= 2 (A may be rank 1)");
  }
  return ok_status();
}

}  // namespace

Status finalize(Program& p, const std::string& source) {
  auto fail = [&](const std::string& where, const std::string& what) -> Status {
    return bad_input(source + ": " + where + ": " + what);
  };
  const std::size_t nt = p.tensors.size();
  std::unordered_map<std::string, std::size_t> names;
  for (std::size_t t = 0; t < nt; ++t) {
    const Tensor& x = p.tensors[t];
    if (x.name.empty()) return fail(tpath(t) + ".name", "expected a non-empty name");
    if (!names.emplace(x.name, t).second) return fail(tpath(t) + ".name", "tensor '" + x.name + "' is defined twice");
    for (std::size_t d = 0; d < x.shape.size(); ++d)
      if (x.shape[d] < 1 || x.shape[d] > layout::kMaxExtent)
        return fail(tpath(t) + ".shape[" + std::to_string(d) + "]",
                    "expected a size in 1..2^40, got " + std::to_string(x.shape[d]));
    if (x.layout && !x.dim_order.empty()) return fail(tpath(t), "give either dim_order or layout, not both");
    if (x.load_time && !x.graph_input)
      return fail(tpath(t) + ".load_time", "expected only on a graph input (known when the model is loaded); tensor '" +
                                               x.name + "' is not one");
    auto l = tensor_layout(x);
    if (!l) return fail(tpath(t) + (x.layout ? ".layout" : x.dim_order.empty() ? ".shape" : ".dim_order"), l.error().message);
  }
  p.producer.assign(nt, -1);
  p.consumers.assign(nt, {});
  std::unordered_map<std::string, std::size_t> op_names;
  for (std::size_t o = 0; o < p.ops.size(); ++o) {
    Op& op = p.ops[o];
    const std::string at = opath(o);
    if (op.name.empty()) return fail(at + ".name", "expected a non-empty name");
    if (!op_names.emplace(op.name, o).second) return fail(at + ".name", "op '" + op.name + "' is defined twice");
    if (op.outputs.empty()) return fail(at + ".outputs", "an op must write at least one tensor");
    for (std::size_t i = 0; i < op.inputs.size(); ++i) {
      const TensorId t = op.inputs[i];
      if (t < 0 || static_cast<std::size_t>(t) >= nt) return fail(at + ".inputs[" + std::to_string(i) + "]", "no such tensor");
      if (p.producer[t] < 0 && !p.tensors[t].graph_input)
        return fail(at + ".inputs[" + std::to_string(i) + "]",
                    "tensor '" + p.tensors[t].name + "' is read before any op writes it and is not a graph input");
      if (p.consumers[t].empty() || p.consumers[t].back() != static_cast<OpId>(o)) p.consumers[t].push_back(static_cast<OpId>(o));
    }
    for (std::size_t i = 0; i < op.outputs.size(); ++i) {
      const TensorId t = op.outputs[i];
      const std::string w = at + ".outputs[" + std::to_string(i) + "]";
      if (t < 0 || static_cast<std::size_t>(t) >= nt) return fail(w, "no such tensor");
      if (p.tensors[t].graph_input) return fail(w, "tensor '" + p.tensors[t].name + "' is a graph input and cannot be written");
      if (p.producer[t] >= 0)
        return fail(w, "tensor '" + p.tensors[t].name + "' is already written by op '" + p.ops[p.producer[t]].name + "'");
      if (std::find(op.inputs.begin(), op.inputs.end(), t) != op.inputs.end())
        return fail(w, "tensor '" + p.tensors[t].name + "' is both read and written by this op");
      p.producer[t] = static_cast<OpId>(o);
    }
    op.ranges.clear();
    if (op.kind == OpKind::kOpaque && op.iterators.empty() && op.indexing_maps.empty() && op.exprs.empty()) continue;
    if (Status st = finalize_op_maps(p, op, at, source); !st) return st;
    if (Status st = check_op_kind(op, at, source); !st) return st;
  }
  for (std::size_t t = 0; t < nt; ++t)
    if (p.producer[t] < 0 && !p.tensors[t].graph_input)
      return fail(tpath(t), "tensor '" + p.tensors[t].name + "' is never written and is not a graph input");
  return ok_status();
}

Result<Program> program_from_json(const Json& j, const std::string& source) {
  try {
    JsonCursor root(j, source);
    root.expect_keys({"format", "version", "name", "tensors", "ops"});
    Program p;
    if (root.has("name")) p.name = root.at("name").as_string();
    root.expect_format("scratchplan-program", 1);
    std::unordered_map<std::string, TensorId> ids;
    for (const JsonCursor& tc : root.at("tensors").elements()) {
      tc.expect_keys({"name", "shape", "dtype", "dim_order", "layout", "graph_input", "load_time", "graph_output"});
      Tensor t;
      t.name = tc.at("name").as_string();
      t.shape = tc.at("shape").as_int_array(1);
      auto dt = layout::parse_dtype(tc.at("dtype").as_string());
      if (!dt) tc.at("dtype").fail(dt.error().message);
      t.dtype = *dt;
      if (tc.has("dim_order"))
        for (int64_t d : tc.at("dim_order").as_int_array(-1)) t.dim_order.push_back(static_cast<int>(std::min<int64_t>(d, 1 << 20)));
      if (tc.has("layout")) {
        JsonCursor lc = tc.at("layout");
        lc.expect_keys({"device_size", "stride_map"});
        ExplicitLayout el;
        el.device_size = lc.at("device_size").as_int_array(0);
        el.stride_map = lc.at("stride_map").as_int_array(-1);
        t.layout = el;
      }
      if (tc.has("graph_input")) t.graph_input = tc.at("graph_input").as_bool();
      if (tc.has("load_time")) t.load_time = tc.at("load_time").as_bool();
      if (tc.has("graph_output")) t.graph_output = tc.at("graph_output").as_bool();
      if (!ids.emplace(t.name, static_cast<TensorId>(p.tensors.size())).second)
        tc.at("name").fail("tensor '" + t.name + "' is defined twice");
      p.tensors.push_back(std::move(t));
    }
    auto tensor_ref = [&](const JsonCursor& c) {
      const std::string n = c.as_string();
      auto it = ids.find(n);
      if (it == ids.end()) c.fail("no tensor named '" + n + "'");
      return it->second;
    };
    for (const JsonCursor& oc : root.at("ops").elements()) {
      oc.expect_keys({"name", "kind", "payload", "inputs", "outputs", "iterator_types", "indexing_maps", "ranges"});
      Op op;
      op.name = oc.at("name").as_string();
      const std::string kind = oc.at("kind").as_string();
      if (kind == "pointwise") op.kind = OpKind::kPointwise;
      else if (kind == "reduction") op.kind = OpKind::kReduction;
      else if (kind == "matmul") op.kind = OpKind::kMatmul;
      else if (kind == "opaque") op.kind = OpKind::kOpaque;
      else oc.at("kind").fail("expected \"pointwise\", \"reduction\", \"matmul\" or \"opaque\", got \"" + kind + "\"");
      if (oc.has("payload")) op.payload = oc.at("payload").as_string();
      for (const JsonCursor& c : oc.at("inputs").elements()) op.inputs.push_back(tensor_ref(c));
      for (const JsonCursor& c : oc.at("outputs").elements()) op.outputs.push_back(tensor_ref(c));
      const bool needs_space = op.kind != OpKind::kOpaque || oc.has("indexing_maps") || oc.has("iterator_types");
      if (needs_space) {
        for (const JsonCursor& c : oc.at("iterator_types").elements()) {
          const std::string s = c.as_string();
          if (s == "parallel") op.iterators.push_back(IteratorType::kParallel);
          else if (s == "reduction") op.iterators.push_back(IteratorType::kReduction);
          else c.fail("expected \"parallel\" or \"reduction\", got \"" + s + "\"");
        }
        for (const JsonCursor& c : oc.at("indexing_maps").elements()) {
          int nv = 0;
          auto m = parse_affine_exprs(c.as_string(), &nv);
          if (!m) c.fail(m.error().message);
          if (static_cast<std::size_t>(nv) != op.iterators.size())
            c.fail("map has " + std::to_string(nv) + " dims but the op has " + std::to_string(op.iterators.size()) +
                   " iterator types");
          op.exprs.push_back(std::move(*m));
        }
        if (oc.has("ranges")) op.given_ranges = oc.at("ranges").as_int_array(1);
      }
      p.ops.push_back(std::move(op));
    }
    if (auto st = finalize(p, source); !st) return st.error();
    return p;
  } catch (const JsonInputError& e) {
    return bad_input(e.what());
  }
}

Result<Program> read_program(const std::string& path) {
  auto j = read_json_file(path);
  if (!j) return j.error();
  return program_from_json(*j, input_name(path));
}

Json program_to_json(const Program& p) {
  Json j;
  j["format"] = "scratchplan-program";
  j["version"] = 1;
  j["name"] = p.name;
  Json ts = Json::array();
  for (const Tensor& t : p.tensors) {
    Json x;
    x["name"] = t.name;
    x["shape"] = t.shape;
    x["dtype"] = layout::dtype_name(t.dtype);
    if (!t.dim_order.empty()) x["dim_order"] = t.dim_order;
    if (t.layout) x["layout"] = {{"device_size", t.layout->device_size}, {"stride_map", t.layout->stride_map}};
    if (t.graph_input) x["graph_input"] = true;
    if (t.load_time) x["load_time"] = true;
    if (t.graph_output) x["graph_output"] = true;
    ts.push_back(std::move(x));
  }
  j["tensors"] = std::move(ts);
  Json os = Json::array();
  for (const Op& op : p.ops) {
    Json x;
    x["name"] = op.name;
    x["kind"] = op_kind_name(op.kind);
    if (!op.payload.empty()) x["payload"] = op.payload;
    Json in = Json::array(), out = Json::array();
    for (TensorId t : op.inputs) in.push_back(p.tensors[t].name);
    for (TensorId t : op.outputs) out.push_back(p.tensors[t].name);
    x["inputs"] = std::move(in);
    x["outputs"] = std::move(out);
    if (!op.iterators.empty() || !op.indexing_maps.empty()) {
      Json it = Json::array(), maps = Json::array();
      for (IteratorType t : op.iterators) it.push_back(iterator_name(t));
      const int nv = static_cast<int>(op.iterators.size());
      if (!op.exprs.empty())
        for (const auto& m : op.exprs) maps.push_back(format_affine_exprs(m, nv));
      else
        for (const auto& m : op.indexing_maps) maps.push_back(format_affine_map(m, nv));
      x["iterator_types"] = std::move(it);
      x["indexing_maps"] = std::move(maps);
      // Ranges are written only when some var has no plain dim to take its extent from.
      std::vector<char> plain(op.iterators.size(), 0);
      for (const auto& m : op.exprs)
        for (const AffineExpr& e : m)
          if (is_plain(e) && static_cast<std::size_t>(e.terms[0].var) < plain.size()) plain[e.terms[0].var] = 1;
      bool any_prefix = false;
      for (const auto& m : op.exprs)
        for (const AffineExpr& e : m) any_prefix = any_prefix || e.prefix;
      const bool need = !op.exprs.empty() && (any_prefix || std::find(plain.begin(), plain.end(), 0) != plain.end());
      if (need && op.ranges.size() == op.iterators.size()) x["ranges"] = op.ranges;
      else if (need && !op.given_ranges.empty()) x["ranges"] = op.given_ranges;
    }
    os.push_back(std::move(x));
  }
  j["ops"] = std::move(os);
  return j;
}

namespace {

// Compact JSON with a space after ',' and ':' (nlohmann's compact form has none).
std::string spaced(const Json& j) {
  if (j.is_array()) {
    std::string s = "[";
    for (std::size_t i = 0; i < j.size(); ++i) s += (i ? ", " : "") + spaced(j[i]);
    return s + "]";
  }
  if (j.is_object()) {
    std::string s = "{";
    bool first = true;
    for (auto it = j.begin(); it != j.end(); ++it) {
      s += (first ? "" : ", ") + Json(it.key()).dump() + ": " + spaced(it.value());
      first = false;
    }
    return s + "}";
  }
  return j.dump();
}

std::string fields(const Json& j, const std::vector<const char*>& order) {
  std::string s;
  for (const char* k : order)
    if (j.contains(k)) s += (s.empty() ? "" : ", ") + Json(k).dump() + ": " + spaced(j.at(k));
  return s;
}

}  // namespace

std::string program_to_text(const Program& p) {
  const Json j = program_to_json(p);
  std::string s = "{\n \"format\": \"scratchplan-program\",\n \"version\": 1,\n \"name\": " + Json(p.name).dump() +
                  ",\n \"tensors\": [\n";
  for (std::size_t t = 0; t < j["tensors"].size(); ++t)
    s += "  {" + fields(j["tensors"][t], {"name", "shape", "dtype", "dim_order", "layout", "graph_input", "load_time", "graph_output"}) +
         "}" + (t + 1 < j["tensors"].size() ? "," : "") + "\n";
  s += " ],\n \"ops\": [\n";
  for (std::size_t o = 0; o < j["ops"].size(); ++o) {
    const Json& op = j["ops"][o];
    s += "  {" + fields(op, {"name", "kind", "payload", "inputs", "outputs"});
    if (op.contains("iterator_types"))
      s += ",\n   " + fields(op, {"iterator_types"}) + ",\n   " + fields(op, {"indexing_maps", "ranges"});
    s += std::string("}") + (o + 1 < j["ops"].size() ? "," : "") + "\n";
  }
  return s + " ]\n}\n";
}

}  // namespace sp::program
