// LX planning benchmarks: co-optimization captures (target: each under 50 ms) and a generated
// 2,000-op transformer on 32 cores (target: under 1 s, with the bound on the remaining gap), and the
// dense one on fewer cores (what the bytes cost in time).
#include <benchmark/benchmark.h>

#include <string>

#include "core/json_reader.h"
#include "lx/coopt.h"
#include "lx/lx.h"
#include "program/builder.h"

namespace {

const sp::Json& captures() {
  static sp::Json j = [] {
    auto r = sp::read_json_file(std::string(SCRATCHPLAN_DATA_DIR) + "/spyre/captures/cooptimization_captures.json");
    return r.ok() ? *r : sp::Json::object();
  }();
  return j;
}

void BM_LxCapture(benchmark::State& st, std::string name, int fraction) {
  const sp::Json& g = captures()[name][0];
  auto p0 = sp::lx::division_problem_from_json(g["inputs"], name, 1625344);
  if (!p0) {
    st.SkipWithError(p0.error().message.c_str());
    return;
  }
  sp::lx::CdProblem p = *p0;
  if (fraction > 0) p.capacity = std::max<int64_t>(1, sp::lx::seed_footprint_total(p) / fraction);
  sp::lx::CdSolution s;
  for (auto _ : st) {
    auto r = sp::lx::solve_divisions(p, 1.0);
    if (!r) {
      st.SkipWithError(r.error().message.c_str());
      return;
    }
    s = *r;
  }
  st.counters["buffers"] = static_cast<double>(p.buffers.size());
  st.counters["hbm_bytes"] = static_cast<double>(s.hbm_bytes);
  st.counters["seed_hbm_bytes"] = static_cast<double>(s.seed_hbm_bytes);
  st.counters["lower_bound"] = static_cast<double>(s.lower_bound);
  st.counters["evaluations"] = static_cast<double>(s.evaluations);
  st.counters["capacity"] = static_cast<double>(p.capacity);
}

void BM_LxTransformer(benchmark::State& st) {
  const int ops = static_cast<int>(st.range(0));
  const int64_t seq = st.range(1), hidden = st.range(2);
  const bool sparse = st.range(3) != 0;
  auto prog = sp::lx::transformer_program(ops, seq, hidden, sparse);
  if (!prog) {
    st.SkipWithError(prog.error().message.c_str());
    return;
  }
  sp::lx::Options o;
  o.cores = static_cast<int>(st.range(5));
  o.time_limit = static_cast<double>(st.range(4)) / 1000.0;
  o.infer_layouts = st.range(6) != 0;
  sp::lx::Plan plan;
  for (auto _ : st) {
    auto r = sp::lx::plan_program(*prog, sp::lx::Hardware{}, o);
    if (!r) {
      st.SkipWithError(r.error().message.c_str());
      return;
    }
    plan = std::move(*r);
  }
  const auto& t = plan.totals;
  st.counters["ops"] = static_cast<double>(prog->ops.size());
  st.counters["seq"] = static_cast<double>(seq);
  st.counters["hidden"] = static_cast<double>(hidden);
  st.counters["sparse_reductions"] = sparse;
  st.counters["infer_layouts"] = o.infer_layouts;
  st.counters["inferred_layouts"] = static_cast<double>(plan.inferred_layouts.size());
  st.counters["cores"] = o.cores;
  st.counters["time_limit_s"] = o.time_limit;
  st.counters["hbm_bytes"] = static_cast<double>(t.hbm_read + t.hbm_write);
  st.counters["baseline_hbm_bytes"] = static_cast<double>(t.baseline_hbm);
  st.counters["lower_bound"] = static_cast<double>(t.lower_bound_hbm);
  st.counters["split_lower_bound"] = static_cast<double>(t.split_lower_bound_hbm);
  st.counters["cores_lower_bound"] = static_cast<double>(t.cores_lower_bound_hbm);
  st.counters["time_lower_bound"] = static_cast<double>(t.time_lower_bound_hbm);
  st.counters["coopt_changes"] = plan.coopt_changes;
  st.counters["time_us"] = t.time_s * 1e6;
  st.counters["baseline_time_us"] = t.baseline_time_s * 1e6;
  int partial_ops = 0, fixes = 0;
  for (const auto& op : plan.graph.ops) {
    partial_ops += op.reduction_split;
    fixes += static_cast<int>(op.layout_fixes.size());
  }
  st.counters["reduction_splits"] = partial_ops;
  st.counters["layout_fixes"] = fixes;
}

// The fixed part of `plan` (issue 11 item 3): a generated program planned with time limit 0,
// so only the parts the limit does not bound run (layouts, division, menus, one heuristic
// placement, the checker).
void BM_LxPlanFixed(benchmark::State& st) {
  const int ops = static_cast<int>(st.range(0));
  auto prog = sp::program::synthetic_program(ops, 1);
  if (!prog) {
    st.SkipWithError(prog.error().message.c_str());
    return;
  }
  sp::lx::Options o;
  o.cores = 32;
  o.time_limit = 0.0;
  sp::lx::Plan plan;
  for (auto _ : st) {
    auto r = sp::lx::plan_program(*prog, sp::lx::Hardware{}, o);
    if (!r) {
      st.SkipWithError(r.error().message.c_str());
      return;
    }
    plan = std::move(*r);
  }
  st.counters["ops"] = static_cast<double>(prog->ops.size());
  st.counters["hbm_bytes"] = static_cast<double>(plan.totals.hbm_read + plan.totals.hbm_write);
  st.counters["lower_bound"] = static_cast<double>(plan.totals.lower_bound_hbm);
}

int reg = [] {
  for (const char* n : {"softmax", "mlp", "swiglu", "sdpa", "rms_norm", "simple_attn", "flash_attention"}) {
    benchmark::RegisterBenchmark((std::string("BM_LxCapture/") + n).c_str(), BM_LxCapture, std::string(n), 0)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((std::string("BM_LxCaptureQuarter/") + n).c_str(), BM_LxCapture, std::string(n), 4)
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RegisterBenchmark("BM_LxTransformer", BM_LxTransformer)
      ->Args({500, 256, 512, 1, 800, 32, 1})->Args({2000, 256, 512, 1, 800, 32, 1})->Args({8000, 256, 512, 1, 800, 32, 1})
      ->Args({2000, 1024, 2048, 1, 800, 32, 1})->Args({2000, 256, 512, 0, 800, 32, 1})->Args({2000, 256, 512, 0, 5000, 32, 1})
      ->Args({2000, 256, 512, 0, 800, 32, 0})->Args({2000, 256, 512, 0, 5000, 32, 0})
      ->Args({2000, 256, 512, 0, 800, 16, 0})->Args({2000, 256, 512, 0, 800, 4, 0})->Args({2000, 256, 512, 0, 800, 1, 0})
      ->Iterations(1)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_LxPlanFixed", BM_LxPlanFixed)->Arg(20000)->Arg(100000)->Iterations(1)->Unit(benchmark::kMillisecond);
  return 0;
}();

}  // namespace
