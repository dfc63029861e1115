// Evaluator speed: a 100-subgraph schedule of mlsys-2026-17 (the 5 ms target).
#include <benchmark/benchmark.h>

#include "mlsys/evaluator.h"

namespace {

using namespace sp::mlsys;

// One op per subgraph in topological order at native granularity, then adjacent producer ->
// sole-consumer pointwise pairs merged until `target` subgraphs remain. Every tensor is written out.
Solution simple_schedule(const Problem& p, std::size_t target) {
  std::vector<std::vector<OpId>> groups;
  for (OpId o : p.topo_order) groups.push_back({o});
  for (std::size_t i = 0; i + 1 < groups.size() && groups.size() > target;) {
    OpId a = groups[i].back();
    OpId b = groups[i + 1].front();
    TensorId t = p.ops[a].outputs[0];
    // Fuse only pointwise epilogues, which keeps every working set within capacity.
    bool chain = p.consumers[t].size() == 1 && p.consumers[t][0].op == b && groups[i].size() == 1 &&
                 !p.is_matmul(b);
    if (chain) {
      groups[i].push_back(b);
      groups.erase(groups.begin() + static_cast<long>(i) + 1);
    }
    ++i;
  }
  Solution s;
  for (auto& g : groups) {
    SubgraphSpec sg;
    sg.ops = g;
    int64_t k = p.native_k;
    for (OpId o : g)
      if (p.is_matmul(o)) k = std::min(k, p.reduction(o));
    sg.granularity = {p.native_w, p.native_h, k};
    s.subgraphs.push_back(sg);
  }
  return s;
}

void BM_Evaluate_Mlsys17_100Subgraphs(benchmark::State& state) {
  auto problem = read_problem(std::string(SCRATCHPLAN_DATA_DIR) + "/mlsys2026/benchmarks/mlsys-2026-17.json");
  if (!problem) {
    state.SkipWithError(problem.error().message.c_str());
    return;
  }
  Solution sol = simple_schedule(*problem, 100);
  Evaluator ev(*problem, RuleOptions{});
  Evaluation last;
  for (auto _ : state) {
    last = ev.evaluate(sol);
    benchmark::DoNotOptimize(last.total);
  }
  state.counters["subgraphs"] = static_cast<double>(sol.subgraphs.size());
  state.counters["valid"] = last.valid ? 1 : 0;
  int64_t steps = 0;
  for (const auto& s : last.subgraphs) steps += s.tiles * s.k_steps;
  state.counters["steps"] = static_cast<double>(steps);
}
BENCHMARK(BM_Evaluate_Mlsys17_100Subgraphs)->Unit(benchmark::kMillisecond);

}  // namespace
