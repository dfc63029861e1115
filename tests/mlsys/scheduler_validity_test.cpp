// The scheduler on the PROBLEM.md examples and the public benchmarks, with small iteration
// budgets: every schedule is valid, reports the evaluator's own latencies, and on the worked
// examples is at least as good as the best public schedule (RULES.md).
#include <gtest/gtest.h>

#include "core/rng.h"
#include "mlsys/scheduler.h"
#include "mlsys/scheduler_config.h"
#include "mlsys/scheduler_partition.h"
#include "mlsys/scheduler_test_util.h"

namespace sp::mlsys {
namespace {

using testing::expect_exact;
using testing::load_problem;

SchedulerOptions quick_options(int64_t iterations = 50) {
  SchedulerOptions o;
  o.iterations = iterations;
  o.threads = 1;
  o.seed = 7;
  return o;
}

struct ExampleCase {
  const char* problem;
  double best_public;  // RULES.md "best public schedules" (or the PROBLEM.md best strategy)
};

class SchedulerExamples : public ::testing::TestWithParam<ExampleCase> {};

TEST_P(SchedulerExamples, ValidAndAtLeastAsGoodAsBestPublic) {
  const ExampleCase c = GetParam();
  Problem p = load_problem(std::string("examples/") + c.problem);
  auto r = schedule(p, quick_options());
  ASSERT_TRUE(r.ok()) << r.error().message;
  expect_exact(p, r->solution);
  EXPECT_LE(r->stats.total, c.best_public + 1e-6);
  EXPECT_GE(r->stats.total, r->stats.bounds.combined - 1e-6);  // the bound is a bound
}

INSTANTIATE_TEST_SUITE_P(Sched, SchedulerExamples,
                         ::testing::Values(ExampleCase{"ex1_problem.json", 3276.8}, ExampleCase{"ex2_problem.json", 13107.2},
                                           ExampleCase{"ex3_problem.json", 4500.0}, ExampleCase{"ex4_problem.json", 4915.2},
                                           ExampleCase{"ex5_problem.json", 6734.4}));

class SchedulerBenchmarks : public ::testing::TestWithParam<const char*> {};

TEST_P(SchedulerBenchmarks, ValidUnderBothComputeModels) {
  Problem p = load_problem(std::string("benchmarks/") + GetParam());
  for (MatMulCompute mode : {MatMulCompute::kOpK, MatMulCompute::kNative}) {
    SchedulerOptions o = quick_options(10);
    o.rules.mm_compute = mode;
    o.max_segment_ops = 3;  // keeps the test fast; the CLI default is longer
    auto r = schedule(p, o);
    ASSERT_TRUE(r.ok()) << r.error().message;
    expect_exact(p, r->solution, o.rules);
    EXPECT_GE(r->stats.total, r->stats.bounds.combined * (1 - 1e-9));
    EXPECT_GT(r->stats.bounds.compute, 0);
    EXPECT_GT(r->stats.bounds.memory, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Sched, SchedulerBenchmarks,
                         ::testing::Values("example_problem.json", "mlsys-2026-1.json", "mlsys-2026-5.json", "mlsys-2026-9.json",
                                           "mlsys-2026-13.json", "mlsys-2026-17.json"));

TEST(SchedFusion, FusionAndRetentionBeatEveryOpAlone) {
  Problem p = load_problem("benchmarks/mlsys-2026-5.json");
  SchedulerOptions alone = quick_options(0);
  alone.fusion = false;
  alone.retention = false;
  alone.recompute = false;
  auto a = schedule(p, alone);
  auto b = schedule(p, quick_options(0));
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  for (const SubgraphSpec& s : a->solution.subgraphs) EXPECT_EQ(s.ops.size(), 1u);
  EXPECT_LT(b->stats.total, 0.8 * a->stats.total);
}

TEST(SchedRetention, ExampleFiveUsesRetentionAndSplitK) {
  // RULES.md's best public Example 5 schedule retains tensor 3 with k below 128.
  Problem p = load_problem("examples/ex5_problem.json");
  auto r = schedule(p, quick_options());
  ASSERT_TRUE(r.ok());
  bool retains = false, split = false;
  for (const SubgraphSpec& s : r->solution.subgraphs) {
    retains |= !s.retain.empty();
    split |= s.granularity.k < 128;
  }
  EXPECT_TRUE(retains);
  EXPECT_TRUE(split);
}

TEST(SchedBounds, LowerBoundsOfExampleOne) {
  Problem p = load_problem("examples/ex1_problem.json");
  LowerBounds b = lower_bounds(p, {});
  EXPECT_DOUBLE_EQ(b.compute, 1100.0);
  EXPECT_DOUBLE_EQ(b.memory, 2 * 16384 / 10.0);
  EXPECT_DOUBLE_EQ(b.combined, 3276.8);
}

// Both operands of a MatMul with K = 4 x native are graph inputs larger than the fast memory:
// every k-step needs a new k-slice of each, so each tile re-reads a K-long strip of both.
TEST(SchedBounds, LargeMatMulOperandsAreStreamedOncePerTile) {
  Problem p;
  p.tensors = {{512, 256}, {256, 512}, {256, 256}};  // A: 256 rows x K=512, B: 512 x 256, C: 256 x 256
  p.ops = {{OpKind::kMatMul, {0, 1}, {2}, 100}};
  p.fast_memory_capacity = 100000;  // below either operand (131072 elements)
  p.slow_memory_bandwidth = 10;
  p.native_w = p.native_h = p.native_k = 128;
  ASSERT_TRUE(finalize(p).ok());
  LowerBounds b = lower_bounds(p, {});
  // A: 512 x 256 rows x 2 tile columns; B: 512 x 256 cols x 2 tile rows; C stored once.
  EXPECT_DOUBLE_EQ(b.memory, (512.0 * 256 * 2 + 512.0 * 256 * 2 + 256 * 256) / 10);
  auto r = schedule(p, quick_options());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_DOUBLE_EQ(r->stats.total, b.combined);  // 128 x 128 tiles reach it: the bound is tight here
  RuleOptions loose;
  loose.allow_super_native = true;  // k = K would read each operand strip once per tile, no bound
  EXPECT_DOUBLE_EQ(lower_bounds(p, loose).memory, (131072.0 * 2 + 65536) / 10);
}

// One MLP block (x·W1 -> pointwise -> ·W2 -> + x), every tensor above the capacity. The
// activation between the MatMuls is either stored and re-streamed or recomputed by a chain head
// that re-streams W1 per tile of the second MatMul; the floor takes the cheaper, coupled with
// W1's own stream, and never exceeds a valid schedule.
TEST(SchedBounds, ActivationBetweenMatMulsIsCoupledWithItsProducer) {
  Problem p;
  // 0 x 256x256, 1 W1 (K 256, N 512), 2 h 256x512, 3 g(h), 4 W2 (K 512, N 256), 5 y, 6 y + x
  p.tensors = {{256, 256}, {512, 256}, {512, 256}, {512, 256}, {256, 512}, {256, 256}, {256, 256}};
  p.ops = {{OpKind::kMatMul, {0, 1}, {2}, 10},
           {OpKind::kPointwise, {2}, {3}, 1},
           {OpKind::kMatMul, {3, 4}, {5}, 10},
           {OpKind::kPointwise, {5, 0}, {6}, 1}};
  p.fast_memory_capacity = 60000;
  p.slow_memory_bandwidth = 10;
  p.native_w = p.native_h = p.native_k = 128;
  ASSERT_TRUE(finalize(p).ok());
  LowerBounds b = lower_bounds(p, {});
  // x loaded once (two consumers: a root); output stored; W2 streamed: 512·256·2; g(h) as the
  // second MatMul's LHS: recomputed by the first as a chain head, W1 re-streamed in 256 x k
  // strips at each of 4 tiles x 512/k steps: 256·512·4 (cheaper than storing h, reloading it
  // 512·256·2 and streaming W1 once 256·512·2).
  EXPECT_DOUBLE_EQ(b.memory, (65536.0 + 65536 + 512.0 * 256 * 2 + 256.0 * 512 * 4) / 10);
  auto r = schedule(p, quick_options());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_GE(r->stats.total, b.combined);
}

// mlsys-2026-9: eight blocks x -> x·W1 (K 1024) -> pointwise -> ·W2 (K 4096) -> + x. Per block
// the floor counts four streams of 1024·1024·4096/128 = 33.5M elements (W1, W2, the
// activation between the MatMuls, and the residual x read by the next block's first MatMul,
// its designated consumer: the residual add that also reads x is shielded behind two MatMuls
// and reads x once more, 1M), the activation's store (4M) and the block output's store (1M).
// That is exactly the traffic of the scheduler's plan, which is therefore optimal.
TEST(SchedBounds, MlpChainFloorCountsResidualStreams) {
  Problem p = load_problem("benchmarks/mlsys-2026-9.json");
  const double stream = 1024.0 * 1024 * 4096 / 128;
  const double per_block = 4 * stream + 4096.0 * 1024 + 1024.0 * 1024 + 1024.0 * 1024;
  EXPECT_DOUBLE_EQ(lower_bounds(p, {}).memory, 8 * per_block / 25);
  auto r = schedule(p, quick_options(1));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_NEAR(r->stats.total, 8 * per_block / 25, 1e-6);  // sums of step latencies round differently
}

// Random residual MLP chains (the shape the designated-consumer rule of the floor is for, rare in
// the differential set): the floor stays below the scheduler's plans under several technique
// settings. A 300-problem run of this generator plus 4,500 random schedules found no violation
// when the rule was written (closest plan 4.5% above the floor).
TEST(SchedBounds, FloorHoldsOnRandomResidualMlps) {
  Rng rng(11);
  const int64_t dims[] = {128, 192, 256, 384, 512};
  for (int trial = 0; trial < 8; ++trial) {
    Problem p;
    const int64_t d = dims[rng.below(4)], f = dims[1 + rng.below(4)], rows = dims[rng.below(3)];
    auto tensor = [&](int64_t w, int64_t h) {
      p.tensors.push_back({w, h});
      return static_cast<TensorId>(p.tensors.size() - 1);
    };
    TensorId x = tensor(d, rows);
    for (int64_t b = rng.range(1, 3); b > 0; --b) {
      TensorId w1 = tensor(f, d), h = tensor(f, rows), g = tensor(f, rows), w2 = tensor(d, f), y = tensor(d, rows), z = tensor(d, rows);
      p.ops.push_back({OpKind::kMatMul, {x, w1}, {h}, 1000});
      p.ops.push_back({OpKind::kPointwise, {h}, {g}, 50});
      p.ops.push_back({OpKind::kMatMul, {g, w2}, {y}, 1000});
      p.ops.push_back({OpKind::kPointwise, {y, x}, {z}, 50});
      x = z;
    }
    const Elements caps[] = {20000, 35000, 50000, 100000};
    p.fast_memory_capacity = caps[rng.below(4)];
    p.slow_memory_bandwidth = rng.chance(0.5) ? 5 : 50;
    p.native_w = p.native_h = p.native_k = 128;
    ASSERT_TRUE(finalize(p).ok());
    const double floor = lower_bounds(p, {}).combined;
    for (int variant = 0; variant < 3; ++variant) {
      SchedulerOptions o = quick_options(10);
      o.fusion = variant != 1;
      o.recompute = variant != 2;
      auto r = schedule(p, o);
      ASSERT_TRUE(r.ok()) << r.error().message;
      EXPECT_GE(r->stats.total, floor * (1 - 1e-9)) << "trial " << trial << " variant " << variant;
    }
  }
}

// Issue 15 §2: the DP prunes transitions by lower bounds and candidate simulations stop early
// (OOM, latency cut-offs). Neither may change a result: the DP with a cutoff just above the
// optimum finds the same total as without one, a cutoff just below finds nothing, and both use
// fewer config searches; configs found with early exits are exactly re-scored by a fresh
// evaluator.
TEST(SchedPruning, CutoffIsExactAndEarlyExitsKeepExactLatencies) {
  for (const char* name : {"benchmarks/mlsys-2026-5.json", "benchmarks/mlsys-2026-1.json", "examples/ex5_problem.json"}) {
    Problem p = load_problem(name);
    RuleOptions rules;
    ConfigCache cache_a, cache_b;
    ConfigSearcher sa(p, rules, cache_a, ConfigSearchOptions{}), sb(p, rules, cache_b, ConfigSearchOptions{});
    PartitionOptions popt;
    popt.max_segment_ops = 4;
    const Deadline none;
    Partition full = Partitioner(p, sa, popt).solve(p.topo_order, none);
    ASSERT_TRUE(full.valid) << name;
    Partitioner pb(p, sb, popt);
    Partition cut = pb.solve(p.topo_order, none, full.total * (1 + 1e-9));
    ASSERT_TRUE(cut.valid) << name;
    EXPECT_DOUBLE_EQ(cut.total, full.total) << name;
    EXPECT_LE(cache_b.size(), cache_a.size()) << name;
    EXPECT_FALSE(Partitioner(p, sb, popt).solve(p.topo_order, none, full.total * (1 - 1e-6)).valid) << name;
    // Every cached latency is the exact evaluator's (the early exits never cut a chosen config).
    Evaluation ev = evaluate(p, to_solution(full), rules);
    ASSERT_TRUE(ev.valid) << (ev.errors.empty() ? "" : ev.errors.front());
    EXPECT_NEAR(ev.total, full.total, 1e-6 * full.total) << name;
  }
}

TEST(SchedInfeasible, OpTooLargeIsBadInputNamingTheOp) {
  Problem p;
  p.tensors = {{4, 4}, {4, 4}, {4, 4}, {4, 4}};
  p.ops = {{OpKind::kPointwise, {0}, {1}, 10}, {OpKind::kMatMul, {1, 2}, {3}, 10}};
  p.fast_memory_capacity = 2;  // the pointwise op fits at 1x1; the MatMul needs 3 elements
  p.slow_memory_bandwidth = 1;
  p.native_w = p.native_h = p.native_k = 128;
  ASSERT_TRUE(finalize(p).ok());
  auto r = schedule(p, quick_options());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(r.error().message.find("op 1 (MatMul)"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("needs 3 elements"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("fast_memory_capacity is 2"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace sp::mlsys
