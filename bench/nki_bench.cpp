// NKI checker and planner speed on a generated kernel of 50 tensors and 10 loops (issue 7's
// target: checked and planned in under 100 ms together).
#include <benchmark/benchmark.h>

#include "nki/check.h"
#include "nki/generate.h"
#include "nki/plan.h"

namespace {

using namespace sp::nki;

Kernel generated(const benchmark::State& state, uint64_t seed) {
  GenerateOptions g;
  g.max_trip = static_cast<int>(state.range(2));
  g.tensors = static_cast<int>(state.range(0));
  g.loops = static_cast<int>(state.range(1));
  g.seed = seed;
  auto k = kernel_from_json(generate_kernel_json(g), "generated.json");
  return k.ok() ? *k : Kernel{};
}

void counters(benchmark::State& state, const Kernel& k) {
  state.counters["tensors"] = static_cast<double>(k.tensors.size());
  state.counters["loops"] = static_cast<double>(k.loops.size());
  state.counters["executions"] = static_cast<double>(k.dynamic_instructions);
  state.counters["max_trip"] = static_cast<double>(state.range(2));
}

// Check of the planned kernel (every tensor directly allocated), then plan from scratch.
void BM_NkiCheckAndPlan(benchmark::State& state) {
  Kernel k = generated(state, 1);
  auto planned = plan_kernel(k);
  if (!planned.ok()) {
    state.SkipWithError(planned.error().message.c_str());
    return;
  }
  double speedup = 0;
  bool clean = false;
  for (auto _ : state) {
    auto r = check_kernel(planned->kernel);
    auto p = plan_kernel(k);
    clean = r.ok() && r->clean();
    speedup = p.ok() ? static_cast<double>(p->baseline.makespan) / static_cast<double>(p->planned.makespan) : 0;
    benchmark::DoNotOptimize(speedup);
  }
  counters(state, k);
  state.counters["speedup"] = speedup;
  state.counters["clean"] = clean;
}
BENCHMARK(BM_NkiCheckAndPlan)->Args({50, 10, 8})->Args({50, 10, 32})->Args({100, 20, 16})->Unit(benchmark::kMillisecond);

void BM_NkiCheck(benchmark::State& state) {
  Kernel k = generated(state, 1);
  auto planned = plan_kernel(k);
  if (!planned.ok()) {
    state.SkipWithError(planned.error().message.c_str());
    return;
  }
  for (auto _ : state) {
    auto r = check_kernel(planned->kernel);
    benchmark::DoNotOptimize(r.ok());
  }
  counters(state, k);
}
BENCHMARK(BM_NkiCheck)->Args({50, 10, 8})->Unit(benchmark::kMillisecond);

void BM_NkiPlan(benchmark::State& state) {
  Kernel k = generated(state, 1);
  int evaluations = 0;
  for (auto _ : state) {
    auto p = plan_kernel(k);
    evaluations = p.ok() ? p->evaluations : -1;
    benchmark::DoNotOptimize(evaluations);
  }
  counters(state, k);
  state.counters["evaluations"] = evaluations;
}
BENCHMARK(BM_NkiPlan)->Args({50, 10, 8})->Unit(benchmark::kMillisecond);

}  // namespace
