// Same problem, seed, thread count and iteration budget: the same schedule, byte for byte.
#include <gtest/gtest.h>

#include "mlsys/scheduler.h"
#include "mlsys/scheduler_config.h"
#include "mlsys/scheduler_test_util.h"

namespace sp::mlsys {
namespace {

std::string run_once(const Problem& p, int threads, uint64_t seed) {
  SchedulerOptions o;
  o.iterations = 24;
  o.threads = threads;
  o.seed = seed;
  o.max_segment_ops = 4;
  auto r = schedule(p, o);
  EXPECT_TRUE(r.ok());
  return r.ok() ? solution_to_json(r->solution).dump() : std::string();
}

TEST(SchedDeterminism, SameSeedThreadsAndIterationsGiveTheSamePlan) {
  Problem p = testing::load_problem("benchmarks/mlsys-2026-5.json");
  EXPECT_EQ(run_once(p, 1, 3), run_once(p, 1, 3));
  EXPECT_EQ(run_once(p, 2, 3), run_once(p, 2, 3));
}

TEST(SchedDeterminism, ImprovementsAreStrictlyDecreasingAndValid) {
  Problem p = testing::load_problem("benchmarks/mlsys-2026-5.json");
  SchedulerOptions o;
  o.iterations = 24;
  o.max_segment_ops = 4;
  std::vector<double> seen;
  auto r = schedule(p, o, [&](const Solution& s, double total) {
    testing::expect_exact(p, s);
    seen.push_back(total);
  });
  ASSERT_TRUE(r.ok());
  ASSERT_FALSE(seen.empty());
  for (std::size_t i = 1; i < seen.size(); ++i) EXPECT_LT(seen[i], seen[i - 1]);
  EXPECT_DOUBLE_EQ(seen.back(), r->stats.total);
}

TEST(SchedConfig, TileSizesCoverNonPowersOfTwoUpToNative) {
  auto s = tile_size_candidates(512, 128);
  EXPECT_EQ(s.front(), 128);
  EXPECT_NE(std::find(s.begin(), s.end(), 103), s.end());  // 5 tiles of 103 (last one clipped)
  for (int64_t v : s) EXPECT_LE(v, 128);
  auto small = tile_size_candidates(20, 128);
  EXPECT_EQ(small.front(), 20);
}

TEST(SchedConfig, SnakeOrdersArePermutationsThatMoveOneStepAtATime) {
  for (Traversal t : {Traversal::kRowSnake, Traversal::kColSnake}) {
    auto order = traversal_order(t, 4, 3);
    ASSERT_TRUE(order.has_value());
    std::vector<int64_t> sorted = *order;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(sorted[i], i);
    for (std::size_t i = 1; i < order->size(); ++i) {
      const int64_t a = (*order)[i - 1], b = (*order)[i];
      EXPECT_EQ(std::abs(a / 4 - b / 4) + std::abs(a % 4 - b % 4), 1);  // grid neighbours
    }
  }
  EXPECT_FALSE(traversal_order(Traversal::kRaster, 4, 3).has_value());
}

}  // namespace
}  // namespace sp::mlsys
