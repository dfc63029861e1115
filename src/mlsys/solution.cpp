#include "mlsys/solution.h"

namespace sp::mlsys {

Result<Solution> solution_from_json(const Json& json, const Problem& problem, const std::string& source) {
  try {
    JsonCursor root(json, source);
    root.expect_keys({"format", "version", "subgraphs", "granularities", "tensors_to_retain", "subgraph_latencies",
                      "traversal_orders"});
    root.expect_format("mlsys2026-solution", 1);
    auto subgraphs = root.at("subgraphs");
    auto grans = root.at("granularities");
    auto retains = root.at("tensors_to_retain");
    auto lats = root.at("subgraph_latencies");
    const std::size_t n = subgraphs.array_size();
    for (auto* c : {&grans, &retains, &lats})
      if (c->array_size() != n)
        c->fail("expected " + std::to_string(n) + " entries (one per subgraph), got " + std::to_string(c->array_size()));
    bool has_traversal = root.has("traversal_orders");
    if (has_traversal && root.at("traversal_orders").array_size() != n)
      root.at("traversal_orders")
          .fail("expected " + std::to_string(n) + " entries (one per subgraph), got " +
                std::to_string(root.at("traversal_orders").array_size()));
    Solution sol;
    sol.subgraphs.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      SubgraphSpec& sg = sol.subgraphs[i];
      for (const auto& e : subgraphs.at(i).elements()) {
        int64_t o = e.as_int_at_least(0);
        if (o >= problem.num_ops())
          e.fail("op " + std::to_string(o) + " does not exist (" + std::to_string(problem.num_ops()) + " ops)");
        sg.ops.push_back(static_cast<OpId>(o));
      }
      auto g = grans.at(i);
      if (g.array_size() != 3) g.fail("expected [w, h, k], got " + std::to_string(g.array_size()) + " entries");
      sg.granularity = {g.at(0).as_int_at_least(1), g.at(1).as_int_at_least(1), g.at(2).as_int_at_least(1)};
      for (const auto& e : retains.at(i).elements()) {
        int64_t t = e.as_int_at_least(0);
        if (t >= problem.num_tensors())
          e.fail("tensor " + std::to_string(t) + " does not exist (" + std::to_string(problem.num_tensors()) +
                 " tensors)");
        sg.retain.push_back(static_cast<TensorId>(t));
      }
      if (has_traversal) {
        auto tr = root.at("traversal_orders").at(i);
        if (!tr.is_null()) {
          // Any integers: a non-permutation is a validity error (V7), not malformed input.
          std::vector<int64_t> order;
          for (const auto& e : tr.elements()) order.push_back(e.as_int());
          sg.traversal = std::move(order);
        }
      }
      sg.reported_latency = lats.at(i).as_number();
    }
    return sol;
  } catch (const JsonInputError& e) {
    return bad_input(e.what());
  }
}

Result<Solution> read_solution(const std::string& path, const Problem& problem) {
  auto json = read_json_file(path);
  if (!json) return json.error();
  return solution_from_json(*json, problem, input_name(path));
}

Json solution_to_json(const Solution& s) {
  Json subgraphs = Json::array(), grans = Json::array(), retains = Json::array(), travs = Json::array(),
       lats = Json::array();
  for (const SubgraphSpec& sg : s.subgraphs) {
    subgraphs.push_back(sg.ops);
    grans.push_back({sg.granularity.w, sg.granularity.h, sg.granularity.k});
    retains.push_back(sg.retain);
    travs.push_back(sg.traversal ? Json(*sg.traversal) : Json(nullptr));
    lats.push_back(sg.reported_latency);
  }
  Json j;
  j["format"] = "mlsys2026-solution";  // extra keys are ignored by the contest's evaluator
  j["version"] = 1;
  j["subgraphs"] = subgraphs;
  j["granularities"] = grans;
  j["tensors_to_retain"] = retains;
  j["traversal_orders"] = travs;
  j["subgraph_latencies"] = lats;
  return j;
}

}  // namespace sp::mlsys
