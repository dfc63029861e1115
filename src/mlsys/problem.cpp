#include "mlsys/problem.h"

#include <algorithm>

namespace sp::mlsys {

const char* op_kind_name(OpKind kind) { return kind == OpKind::kMatMul ? "MatMul" : "Pointwise"; }

Status finalize(Problem& p, const std::string& source) {
  const int nt = p.num_tensors();
  const int nop = p.num_ops();
  auto fail = [&](const std::string& where, const std::string& what) -> Status {
    return bad_input(source + ": " + where + ": " + what);
  };
  if (p.fast_memory_capacity <= 0) return fail("$.fast_memory_capacity", "expected a positive capacity");
  if (!(p.slow_memory_bandwidth >= kMinBandwidth && p.slow_memory_bandwidth <= kMaxBandwidth))
    return fail("$.slow_memory_bandwidth", "expected a bandwidth between 1e-100 and 1e100 (latencies must stay finite)");
  if (p.native_w <= 0 || p.native_h <= 0) return fail("$.native_granularity", "expected positive sizes");
  if (p.native_k <= 0) p.native_k = p.native_w;
  for (int t = 0; t < nt; ++t) {
    // Dimensions are bounded so that element counts of whole schedules fit in 64 bits.
    if (p.tensors[t].width > kMaxDimension || p.tensors[t].height > kMaxDimension)
      return fail("tensor " + std::to_string(t), "dimensions above " + std::to_string(kMaxDimension) + " are not supported");
    if (p.tensors[t].width <= 0) return fail("$.widths[" + std::to_string(t) + "]", "expected a positive width");
    if (p.tensors[t].height <= 0) return fail("$.heights[" + std::to_string(t) + "]", "expected a positive height");
  }
  p.producer.assign(nt, -1);
  p.consumers.assign(nt, {});
  for (int o = 0; o < nop; ++o) {
    const Op& op = p.ops[o];
    const std::string at = "op " + std::to_string(o);
    if (!(op.base_cost >= 0 && op.base_cost <= kMaxBaseCost))
      return fail("$.base_costs[" + std::to_string(o) + "]", "expected a cost between 0 and 1e100 (latencies must stay finite)");
    if (op.outputs.empty()) return fail("$.outputs[" + std::to_string(o) + "]", "an op must produce at least one tensor");
    if (op.inputs.empty()) return fail("$.inputs[" + std::to_string(o) + "]", "an op must consume at least one tensor");
    for (std::size_t i = 0; i < op.inputs.size(); ++i) {
      TensorId t = op.inputs[i];
      if (t < 0 || t >= nt)
        return fail("$.inputs[" + std::to_string(o) + "][" + std::to_string(i) + "]",
                    "tensor " + std::to_string(t) + " does not exist (" + std::to_string(nt) + " tensors)");
      p.consumers[t].push_back({o, static_cast<int>(i)});
    }
    for (std::size_t i = 0; i < op.outputs.size(); ++i) {
      TensorId t = op.outputs[i];
      std::string where = "$.outputs[" + std::to_string(o) + "][" + std::to_string(i) + "]";
      if (t < 0 || t >= nt)
        return fail(where, "tensor " + std::to_string(t) + " does not exist (" + std::to_string(nt) + " tensors)");
      if (p.producer[t] >= 0)
        return fail(where, "tensor " + std::to_string(t) + " is produced twice (by op " + std::to_string(p.producer[t]) +
                               " and op " + std::to_string(o) + ")");
      p.producer[t] = o;
    }
    if (op.kind == OpKind::kMatMul) {
      if (op.inputs.size() != 2 || op.outputs.size() != 1)
        return fail("$.inputs[" + std::to_string(o) + "]", at + " is a MatMul: expected 2 inputs and 1 output");
      const Tensor& l = p.tensors[op.inputs[0]];
      const Tensor& r = p.tensors[op.inputs[1]];
      const Tensor& out = p.tensors[op.outputs[0]];
      if (l.width != r.height || out.height != l.height || out.width != r.width)
        return fail("$.inputs[" + std::to_string(o) + "]",
                    at + " is a MatMul with inconsistent shapes: LHS " + std::to_string(l.height) + "x" +
                        std::to_string(l.width) + ", RHS " + std::to_string(r.height) + "x" + std::to_string(r.width) +
                        ", output " + std::to_string(out.height) + "x" + std::to_string(out.width) +
                        " (expected H×K @ K×N = H×N)");
    } else {
      const Tensor& first = p.tensors[op.outputs[0]];
      for (TensorId t : op.inputs)
        if (p.tensors[t].width != first.width || p.tensors[t].height != first.height)
          return fail("$.inputs[" + std::to_string(o) + "]",
                      at + " is Pointwise but tensor " + std::to_string(t) + " is " + std::to_string(p.tensors[t].height) +
                          "x" + std::to_string(p.tensors[t].width) + ", its output " + std::to_string(first.height) + "x" +
                          std::to_string(first.width) + " (all operands must have one shape)");
      for (TensorId t : op.outputs)
        if (p.tensors[t].width != first.width || p.tensors[t].height != first.height)
          return fail("$.outputs[" + std::to_string(o) + "]", at + " is Pointwise with outputs of different shapes");
    }
  }
  p.is_graph_input.assign(nt, 0);
  p.is_graph_output.assign(nt, 0);
  for (int t = 0; t < nt; ++t) {
    p.is_graph_input[t] = p.producer[t] < 0;
    p.is_graph_output[t] = p.consumers[t].empty();
  }
  // Kahn's algorithm; ops left over lie on a cycle.
  std::vector<int> pending(nop, 0);
  for (int o = 0; o < nop; ++o)
    for (TensorId t : p.ops[o].inputs)
      if (p.producer[t] >= 0) ++pending[o];
  p.topo_order.clear();
  std::vector<OpId> ready;
  for (int o = nop - 1; o >= 0; --o)
    if (pending[o] == 0) ready.push_back(o);
  while (!ready.empty()) {
    OpId o = ready.back();
    ready.pop_back();
    p.topo_order.push_back(o);
    for (TensorId t : p.ops[o].outputs)
      for (const Consumer& c : p.consumers[t])
        if (--pending[c.op] == 0) ready.push_back(c.op);
  }
  if (static_cast<int>(p.topo_order.size()) != nop) {
    for (int o = 0; o < nop; ++o)
      if (pending[o] > 0) return fail("op " + std::to_string(o), "the graph has a cycle through this op");
  }
  return ok_status();
}

Result<Problem> problem_from_json(const Json& json, const std::string& source) {
  try {
    JsonCursor root(json, source);
    root.expect_keys({"format", "version", "widths", "heights", "inputs", "outputs", "base_costs", "op_types",
                      "fast_memory_capacity", "slow_memory_bandwidth", "native_granularity"});
    root.expect_format("mlsys2026-problem", 1);
    Problem p;
    auto widths = root.at("widths").as_int_array(1);
    auto heights = root.at("heights").as_int_array(1);
    if (widths.size() != heights.size())
      root.at("heights").fail("expected " + std::to_string(widths.size()) + " entries like widths, got " +
                              std::to_string(heights.size()));
    for (std::size_t i = 0; i < widths.size(); ++i) p.tensors.push_back({widths[i], heights[i]});
    auto inputs = root.at("inputs");
    auto outputs = root.at("outputs");
    auto costs = root.at("base_costs");
    auto types = root.at("op_types");
    std::size_t nop = inputs.array_size();
    for (auto* c : {&outputs, &costs, &types})
      if (c->array_size() != nop)
        c->fail("expected " + std::to_string(nop) + " entries (one per op, like inputs), got " +
                std::to_string(c->array_size()));
    for (std::size_t o = 0; o < nop; ++o) {
      Op op;
      std::string kind = types.at(o).as_string();
      if (kind == "MatMul") op.kind = OpKind::kMatMul;
      else if (kind == "Pointwise") op.kind = OpKind::kPointwise;
      else types.at(o).fail("expected \"MatMul\" or \"Pointwise\", got \"" + kind + "\"");
      for (int64_t t : inputs.at(o).as_int_array(0)) op.inputs.push_back(static_cast<TensorId>(std::min<int64_t>(t, INT32_MAX)));
      for (int64_t t : outputs.at(o).as_int_array(0)) op.outputs.push_back(static_cast<TensorId>(std::min<int64_t>(t, INT32_MAX)));
      op.base_cost = costs.at(o).as_number();
      if (!(op.base_cost >= 0 && op.base_cost <= kMaxBaseCost))
        costs.at(o).fail("expected a cost between 0 and 1e100 (latencies must stay finite)");
      p.ops.push_back(std::move(op));
    }
    p.fast_memory_capacity = root.at("fast_memory_capacity").as_int_at_least(1);
    p.slow_memory_bandwidth = root.at("slow_memory_bandwidth").as_number();
    if (!(p.slow_memory_bandwidth >= kMinBandwidth && p.slow_memory_bandwidth <= kMaxBandwidth))
      root.at("slow_memory_bandwidth").fail("expected a bandwidth between 1e-100 and 1e100 (latencies must stay finite)");
    auto native = root.at("native_granularity");
    if (native.array_size() != 2)  // a third entry would be silently ignored (native k = w)
      native.fail("expected [w, h], got " + std::to_string(native.array_size()) + " entries");
    p.native_w = native.at(0).as_int_at_least(1);
    p.native_h = native.at(1).as_int_at_least(1);
    p.native_k = p.native_w;  // final PROBLEM.md: native w, h and k are one number
    auto st = finalize(p, source);
    if (!st) return st.error();
    return p;
  } catch (const JsonInputError& e) {
    return bad_input(e.what());
  }
}

Result<Problem> read_problem(const std::string& path) {
  auto json = read_json_file(path);
  if (!json) return json.error();
  return problem_from_json(*json, input_name(path));
}

Json problem_to_json(const Problem& p) {
  Json j;
  j["format"] = "mlsys2026-problem";
  j["version"] = 1;
  Json widths = Json::array(), heights = Json::array(), inputs = Json::array(), outputs = Json::array(),
       costs = Json::array(), types = Json::array();
  for (const Tensor& t : p.tensors) {
    widths.push_back(t.width);
    heights.push_back(t.height);
  }
  for (const Op& op : p.ops) {
    inputs.push_back(op.inputs);
    outputs.push_back(op.outputs);
    costs.push_back(op.base_cost);
    types.push_back(op_kind_name(op.kind));
  }
  j["widths"] = widths;
  j["heights"] = heights;
  j["inputs"] = inputs;
  j["outputs"] = outputs;
  j["base_costs"] = costs;
  j["op_types"] = types;
  j["fast_memory_capacity"] = p.fast_memory_capacity;
  j["slow_memory_bandwidth"] = p.slow_memory_bandwidth;
  j["native_granularity"] = {p.native_w, p.native_h};
  return j;
}

}  // namespace sp::mlsys
