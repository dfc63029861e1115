// Allocation benchmarks: the scalable sweep on generated 100k / 1M-buffer streams, and
// proven-optimal selection on the torch-spyre co-optimization captures (read in place).
// The challenging / idealloc tables are measured through the CLI by bench/tables_alloc.py.
#include <benchmark/benchmark.h>

#include <cmath>
#include <map>

#include "alloc/generate.h"
#include "alloc/internal/heuristics.h"
#include "alloc/solver.h"
#include "alloc/validator.h"
#include "core/json_reader.h"

namespace {

using namespace sp::alloc;

void BM_AllocScale(benchmark::State& state) {
  Problem p = generate_stream(static_cast<int>(state.range(0)), 1);
  Placement pl;
  for (auto _ : state) pl = place_sweep(p, kUnbounded);
  const Size lb = max_load(p), h = height(p, pl);
  state.counters["buffers"] = static_cast<double>(p.buffers.size());
  state.counters["lower_bound"] = static_cast<double>(lb);
  state.counters["height"] = static_cast<double>(h);
  state.counters["gap_pct"] = 100.0 * static_cast<double>(h - lb) / static_cast<double>(lb);
  state.counters["valid"] = validate(p, pl).ok() ? 1 : 0;
}
BENCHMARK(BM_AllocScale)->Arg(100000)->Arg(1000000)->Iterations(1)->Unit(benchmark::kMillisecond);

// A capture graph as a selection problem: per-core size of the committed division (index 0),
// alignment 128, torch-spyre's spill costs; in-place edges that break the hand-off rules after
// division are dropped (they could not be honoured by any solver).
Problem capture_problem(const sp::Json& graph, Size& total) {
  Problem p;
  std::map<std::string, int> index;
  total = 0;
  for (const sp::Json& b : graph["inputs"]) {
    Size size = b["size"];
    int64_t part = 1;
    if (!b["core_divisions"].empty())
      for (auto& [k, v] : b["core_divisions"][0]["output_splits"].items()) part *= v.get<int64_t>();
    auto r = buffer_from_uses(b["name"], size < 0 ? 0 : (size + part - 1) / part, b["uses"].get<std::vector<Time>>(),
                              b.value("first_use_is_read", false));
    if (!r) continue;
    Buffer x = *r;
    x.alignment = 128;
    if (size < 0) x.residency_reason = "unsized";
    if (b.contains("residency_reason") && b["residency_reason"].is_string()) x.residency_reason = b["residency_reason"];
    index[x.id] = static_cast<int>(p.buffers.size());
    total += (x.size + 127) / 128 * 128;
    p.buffers.push_back(x);
  }
  for (const sp::Json& b : graph["inputs"]) {
    auto me = index.find(b["name"]);
    if (me == index.end()) continue;
    for (const sp::Json& q : b.value("in_place_parents", sp::Json::array())) {
      auto it = index.find(q.get<std::string>());
      if (it == index.end()) continue;
      Buffer& c = p.buffers[me->second];
      const Buffer& par = p.buffers[it->second];
      if (par.end == c.start + 1 && c.size <= par.size && (par.reads >= 1 || !par.produced_on_chip)) c.in_place_parents.push_back(it->second);
    }
  }
  return p;
}

void BM_AllocSelect(benchmark::State& state, sp::Json graph, int divisor) {
  Size total = 0;
  Problem p = capture_problem(graph, total);
  p.capacity = total / divisor;
  SolveOptions o;
  o.objective = Objective::kSelect;
  o.time_limit = 1.0;
  SolveResult r;
  for (auto _ : state) {
    auto res = solve(p, o);
    if (!res) {
      state.SkipWithError(res.error().message.c_str());
      return;
    }
    r = *res;
  }
  state.counters["buffers"] = static_cast<double>(p.buffers.size());
  state.counters["capacity"] = static_cast<double>(p.capacity);
  state.counters["spill_cost"] = static_cast<double>(r.spill_cost);
  state.counters["lower_bound"] = static_cast<double>(r.lower_bound);
  state.counters["proven"] = r.proven_optimal ? 1 : 0;
}

// Capture-sized synthetic selection: a generated stream of n buffers (1-3 reads each) at 60 %
// of its max load.
void BM_AllocSelectStream(benchmark::State& state) {
  Problem p = generate_stream(static_cast<int>(state.range(0)), 7, 2);
  for (std::size_t i = 0; i < p.buffers.size(); ++i) p.buffers[i].reads = 1 + static_cast<int>(i % 3);
  p.capacity = max_load(p) * 6 / 10;
  SolveOptions o;
  o.objective = Objective::kSelect;
  o.time_limit = 1.0;
  SolveResult r;
  for (auto _ : state) r = *solve(p, o);
  state.counters["buffers"] = static_cast<double>(p.buffers.size());
  state.counters["spill_cost"] = static_cast<double>(r.spill_cost);
  state.counters["lower_bound"] = static_cast<double>(r.lower_bound);
  state.counters["proven"] = r.proven_optimal ? 1 : 0;
}
BENCHMARK(BM_AllocSelectStream)->Arg(25)->Arg(50)->Arg(100)->Unit(benchmark::kMillisecond);

const int kRegistered = [] {
  auto j = sp::read_json_file(std::string(SCRATCHPLAN_DATA_DIR) + "/spyre/captures/cooptimization_captures.json");
  if (!j) return 0;
  for (auto& [name, graphs] : j->items()) {
    if (!graphs.is_array() || graphs.empty()) continue;
    for (int divisor : {1, 2, 4})
      benchmark::RegisterBenchmark(("BM_AllocSelect/" + name + "/tot_div_" + std::to_string(divisor)).c_str(), BM_AllocSelect, graphs[0], divisor)
          ->Unit(benchmark::kMillisecond);
  }
  return 1;
}();

}  // namespace
