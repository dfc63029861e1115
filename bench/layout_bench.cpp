// Layouts + work division speed: a generated 10,000-op program (the 100 ms target),
// with and without the candidate menus, plus single-layout and DMA descriptor costs.
#include <benchmark/benchmark.h>

#include "layout/dma.h"
#include "layout/layout.h"
#include "program/builder.h"
#include "workdiv/workdiv.h"

namespace {

using namespace sp;

void divide_bench(benchmark::State& state, bool candidates) {
  auto p = program::synthetic_program(static_cast<int>(state.range(0)), 1);
  if (!p) {
    state.SkipWithError(p.error().message.c_str());
    return;
  }
  workdiv::Options o;
  o.candidates = candidates;
  std::size_t menu = 0;
  for (auto _ : state) {
    auto d = workdiv::divide(*p, o);  // every tensor's layout, both passes, the checker
    if (!d) {
      state.SkipWithError(d.error().message.c_str());
      return;
    }
    menu = 0;
    for (const auto& od : d->ops) menu += od.candidates.size();
    benchmark::DoNotOptimize(d);
  }
  state.counters["ops"] = static_cast<double>(p->ops.size());
  state.counters["tensors"] = static_cast<double>(p->tensors.size());
  state.counters["menu_entries"] = static_cast<double>(menu);
}

void BM_Divide_Synthetic(benchmark::State& state) { divide_bench(state, false); }
void BM_DivideWithMenus_Synthetic(benchmark::State& state) { divide_bench(state, true); }
BENCHMARK(BM_Divide_Synthetic)->Arg(10000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DivideWithMenus_Synthetic)->Arg(10000)->Unit(benchmark::kMillisecond);

void BM_DefaultLayout(benchmark::State& state) {
  for (auto _ : state) {
    auto l = layout::default_layout({5, 100, 150}, layout::DType::kFp16);
    benchmark::DoNotOptimize(l);
  }
}
BENCHMARK(BM_DefaultLayout);

void BM_DmaDescriptors(benchmark::State& state) {
  auto l = layout::default_layout({5, 100, 150}, layout::DType::kFp16);
  for (auto _ : state) {
    auto d = layout::dma_descriptors(*l, layout::DmaDirection::kHostToDevice);
    benchmark::DoNotOptimize(d);
  }
}
BENCHMARK(BM_DmaDescriptors);

}  // namespace
