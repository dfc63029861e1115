// Evaluator behaviour on small hand-built problems: the rules of RULES.md one at a time, the
// D13 extension (sinks of different shapes), and the incremental per-subgraph API.
#include "mlsys/evaluator.h"

#include <gtest/gtest.h>

#include "mlsys/trace.h"

namespace sp::mlsys {
namespace {

Problem chain(int64_t size, int64_t capacity) {
  // t0 -> op0 -> t1 -> op1 -> t2, pointwise.
  Problem p;
  p.tensors = {{size, size}, {size, size}, {size, size}};
  p.ops = {{OpKind::kPointwise, {0}, {1}, 1000}, {OpKind::kPointwise, {1}, {2}, 100}};
  p.fast_memory_capacity = capacity;
  p.slow_memory_bandwidth = 10;
  p.native_w = p.native_h = 128;
  EXPECT_TRUE(finalize(p).ok());
  return p;
}

SubgraphSpec sg(std::vector<OpId> ops, Granularity g, std::vector<TensorId> retain = {}) {
  SubgraphSpec s;
  s.ops = std::move(ops);
  s.granularity = g;
  s.retain = std::move(retain);
  return s;
}

TEST(MlsysEvaluator, FusedChainIsMemoryBound) {
  Problem p = chain(128, 35000);
  Solution s{{sg({0, 1}, {128, 128, 1})}};
  Evaluation ev = evaluate(p, s);
  EXPECT_TRUE(ev.valid);
  EXPECT_DOUBLE_EQ(ev.total, 2 * 16384 / 10.0);
  EXPECT_EQ(ev.subgraphs[0].peak_working_set, 2 * 16384);
}

TEST(MlsysEvaluator, ReportsEveryErrorNotJustTheFirst) {
  Problem p = chain(128, 1000);  // everything OOMs
  Solution s{{sg({1}, {256, 128, 1}), sg({0}, {128, 128, 1})}};  // wrong order, w > native, OOM
  Evaluation ev = evaluate(p, s);
  EXPECT_FALSE(ev.valid);
  int oom = 0, order = 0, native = 0;
  for (const auto& e : ev.errors) {
    oom += e.find("OOM") != std::string::npos;
    order += e.find("not available") != std::string::npos;
    native += e.find("exceeds native") != std::string::npos;
  }
  EXPECT_EQ(oom, 2);
  EXPECT_EQ(order, 1);
  EXPECT_EQ(native, 1);
}

TEST(MlsysEvaluator, RetentionLastsOneSubgraph) {
  Problem p = chain(128, 100000);
  // Retained t1 is free for op1 in the next subgraph.
  Solution ok{{sg({0}, {128, 128, 1}, {1}), sg({1}, {128, 128, 1})}};
  Evaluation a = evaluate(p, ok);
  EXPECT_TRUE(a.valid);
  EXPECT_EQ(a.subgraphs[1].load_elements, 0);
  EXPECT_EQ(a.subgraphs[0].store_elements, 0);
}

TEST(MlsysEvaluator, MixedSinkShapesUseTheLargestGrid) {
  // op0: t0 -> t1 (pointwise); op1: t1 @ t2 -> t3 (384 wide); op2: t1 -> t4 (256 wide).
  // Sinks t3 and t4 differ in shape (RULES.md D13): the grid spans the larger one and the
  // smaller sink is produced only in the tiles it covers.
  Problem p;
  p.tensors = {{256, 128}, {256, 128}, {384, 256}, {384, 128}, {256, 128}};
  p.ops = {{OpKind::kPointwise, {0}, {1}, 100},
           {OpKind::kMatMul, {1, 2}, {3}, 1000},
           {OpKind::kPointwise, {1}, {4}, 100}};
  p.fast_memory_capacity = 1 << 20;
  p.slow_memory_bandwidth = 10;
  p.native_w = p.native_h = 128;
  ASSERT_TRUE(finalize(p).ok());
  Solution s{{sg({0, 1, 2}, {128, 128, 64})}};
  Evaluation ev = evaluate(p, s);
  ASSERT_EQ(ev.subgraphs.size(), 1u);
  EXPECT_TRUE(ev.valid) << (ev.errors.empty() ? "" : ev.errors.front());
  EXPECT_EQ(ev.subgraphs[0].tiles, 3);
  EXPECT_EQ(ev.subgraphs[0].k_steps, 4);
  EXPECT_EQ(ev.subgraphs[0].store_elements, 384 * 128 + 256 * 128);
}

TEST(MlsysEvaluator, IncrementalApiMatchesWholeEvaluation) {
  Problem p = chain(256, 100000);
  Solution s{{sg({0}, {128, 128, 1}, {1}), sg({1}, {64, 128, 1})}};
  Evaluation whole = evaluate(p, s);
  Evaluator ev(p, RuleOptions{});
  MemoryState state = ev.initial_state();
  std::vector<std::string> errors, warnings;
  double total = 0;
  for (std::size_t i = 0; i < s.subgraphs.size(); ++i)
    total += ev.evaluate_subgraph(s.subgraphs[i], static_cast<int>(i), state, errors, warnings).latency;
  EXPECT_DOUBLE_EQ(total, whole.total);
  EXPECT_EQ(errors.empty(), whole.valid);
}

TEST(MlsysEvaluator, MemoryTimeAndBoundStepsBracketTheLatency) {
  // Per 128x128 tile of one op: 2 x 16384 elements moved; compute 1000 (op0) or 100 (op1).
  for (double bandwidth : {10.0, 1000.0}) {
    Problem p = chain(256, 100000);
    p.slow_memory_bandwidth = bandwidth;
    Solution s{{sg({0}, {128, 128, 1}), sg({1}, {128, 128, 1})}};
    Evaluation ev = evaluate(p, s);
    ASSERT_TRUE(ev.valid);
    for (const SubgraphEvaluation& e : ev.subgraphs) {
      EXPECT_NEAR(e.memory, static_cast<double>(e.load_elements + e.store_elements) / bandwidth, 1e-6);
      EXPECT_LE(std::max(e.compute, e.memory), e.latency * (1 + 1e-12));
      EXPECT_LE(e.latency, (e.compute + e.memory) * (1 + 1e-12));
      // 3276.8 per tile at bandwidth 10 (memory-bound), 32.768 at 1000 (compute-bound)
      EXPECT_EQ(e.memory_bound_steps, bandwidth == 10.0 ? e.tiles * e.k_steps : 0);
    }
  }
}

TEST(MlsysTrace, SubgraphsBackToBackWithTheirComputeAndMemory) {
  Problem p = chain(256, 100000);
  Solution s{{sg({0}, {128, 128, 1}), sg({1}, {128, 128, 1})}};
  Evaluation ev = evaluate(p, s);
  const Json d = Json::parse(solution_trace(p, s, ev, "evaluate"));
  EXPECT_EQ(d["otherData"]["time_unit"], "latency unit");
  EXPECT_DOUBLE_EQ(d["otherData"]["total_latency"].get<double>(), ev.total);
  double end = 0;
  int subgraphs = 0, parts = 0;
  for (const Json& e : d["traceEvents"]) {
    if (e["ph"] != "X") continue;
    if (e["tid"] == 1) {  // "subgraph", the first thread
      EXPECT_NEAR(e["ts"].get<double>(), end, 1e-3);
      end = e["ts"].get<double>() + e["dur"].get<double>();
      ++subgraphs;
    } else {
      ++parts;
    }
  }
  EXPECT_EQ(subgraphs, 2);
  EXPECT_EQ(parts, 4);
  EXPECT_NEAR(end, ev.total, 2e-3);
}

}  // namespace
}  // namespace sp::mlsys
