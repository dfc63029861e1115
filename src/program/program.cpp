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

Result<std::vector<VarId>> parse_affine_map(const std::string& text, int* num_vars) {
  // Grammar: "(" [d<i> {"," d<j>}] ")" "->" "(" [d<k> | 0 {"," ...}] ")"; dims in the domain must
  // be d0, d1, ... in order.
  std::size_t i = 0;
  auto fail = [&](const std::string& what) -> Result<std::vector<VarId>> {
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
  // Reads d<i> (returns i) or the constant 0 (returns kConstZero when allowed); -2 on error.
  auto term = [&](bool allow_zero) -> int64_t {
    skip();
    if (i < text.size() && text[i] == 'd') {
      ++i;
      std::size_t start = i;
      int64_t v = 0;
      while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && i - start < 6) v = v * 10 + (text[i++] - '0');
      return i > start ? v : -2;
    }
    if (allow_zero && i < text.size() && text[i] == '0') {
      ++i;
      return kConstZero;
    }
    return -2;
  };
  if (!expect('(')) return fail("expected '('");
  int n = 0;
  if (!expect(')')) {
    while (true) {
      int64_t v = term(false);
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
  std::vector<VarId> out;
  if (!expect(')')) {
    while (true) {
      int64_t v = term(true);
      if (v == -2) return fail("expected d<i> or 0");
      if (v >= n) return fail("d" + std::to_string(v) + " is not among the " + std::to_string(n) + " dims");
      out.push_back(static_cast<VarId>(v));
      if (expect(')')) break;
      if (!expect(',')) return fail("expected ',' or ')'");
    }
  }
  skip();
  if (i != text.size()) return fail("unexpected text after the map");
  *num_vars = n;
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

Result<layout::Layout> tensor_layout(const Tensor& t) {
  if (t.layout)
    return layout::explicit_layout(t.shape, {}, t.dtype, t.layout->device_size, t.layout->stride_map);
  if (!t.dim_order.empty()) return layout::layout_from_dim_order(t.shape, t.dtype, t.dim_order);
  return layout::default_layout(t.shape, t.dtype);
}

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
    if (op.kind == OpKind::kOpaque && op.iterators.empty() && op.indexing_maps.empty()) continue;
    const std::size_t noperands = op.inputs.size() + op.outputs.size();
    if (op.indexing_maps.size() != noperands)
      return fail(at + ".indexing_maps", "expected " + std::to_string(noperands) + " maps (inputs then outputs), got " +
                                             std::to_string(op.indexing_maps.size()));
    const std::size_t nv = op.iterators.size();
    op.ranges.assign(nv, -1);
    std::vector<std::string> first_use(nv);
    for (std::size_t m = 0; m < noperands; ++m) {
      const TensorId t = m < op.inputs.size() ? op.inputs[m] : op.outputs[m - op.inputs.size()];
      const Tensor& x = p.tensors[t];
      const auto& map = op.indexing_maps[m];
      const std::string mp = at + ".indexing_maps[" + std::to_string(m) + "]";
      if (map.size() != x.shape.size())
        return fail(mp, "map has " + std::to_string(map.size()) + " results but tensor '" + x.name + "' has rank " +
                            std::to_string(x.shape.size()));
      for (std::size_t d = 0; d < map.size(); ++d) {
        const VarId v = map[d];
        if (v == kConstZero) {
          if (x.shape[d] != 1)
            return fail(mp, "constant 0 indexes dim " + std::to_string(d) + " of '" + x.name + "', which has size " +
                                std::to_string(x.shape[d]) + " (only size-1 dims may be constant)");
          continue;
        }
        if (v < 0 || static_cast<std::size_t>(v) >= nv)
          return fail(mp, "d" + std::to_string(v) + " is not one of the " + std::to_string(nv) + " iterators");
        const std::string here = "dim " + std::to_string(d) + " of '" + x.name + "'";
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
      if (op.ranges[v] < 0) return fail(at + ".iterator_types", "d" + std::to_string(v) + " indexes no operand");
    // Kind rules.
    std::vector<char> in_output(nv, 0);
    for (std::size_t m = op.inputs.size(); m < noperands; ++m)
      for (VarId v : op.indexing_maps[m])
        if (v >= 0) in_output[v] = 1;
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
      tc.expect_keys({"name", "shape", "dtype", "dim_order", "layout", "graph_input", "graph_output"});
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
      oc.expect_keys({"name", "kind", "payload", "inputs", "outputs", "iterator_types", "indexing_maps"});
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
          auto m = parse_affine_map(c.as_string(), &nv);
          if (!m) c.fail(m.error().message);
          if (static_cast<std::size_t>(nv) != op.iterators.size())
            c.fail("map has " + std::to_string(nv) + " dims but the op has " + std::to_string(op.iterators.size()) +
                   " iterator types");
          op.indexing_maps.push_back(std::move(*m));
        }
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
      for (const auto& m : op.indexing_maps) maps.push_back(format_affine_map(m, static_cast<int>(op.iterators.size())));
      x["iterator_types"] = std::move(it);
      x["indexing_maps"] = std::move(maps);
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
    s += "  {" + fields(j["tensors"][t], {"name", "shape", "dtype", "dim_order", "layout", "graph_input", "graph_output"}) +
         "}" + (t + 1 < j["tensors"].size() ? "," : "") + "\n";
  s += " ],\n \"ops\": [\n";
  for (std::size_t o = 0; o < j["ops"].size(); ++o) {
    const Json& op = j["ops"][o];
    s += "  {" + fields(op, {"name", "kind", "payload", "inputs", "outputs"});
    if (op.contains("iterator_types"))
      s += ",\n   " + fields(op, {"iterator_types"}) + ",\n   " + fields(op, {"indexing_maps"});
    s += std::string("}") + (o + 1 < j["ops"].size() ? "," : "") + "\n";
  }
  return s + " ]\n}\n";
}

}  // namespace sp::program
