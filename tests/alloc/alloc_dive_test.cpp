// Canonical dives (alloc/dive.cpp): valid plans under every rule, the bound on chains, and the
// cases they refuse.
#include <gtest/gtest.h>

#include "alloc/generate.h"
#include "alloc/internal/dive.h"
#include "alloc/solver.h"
#include "alloc/validator.h"
#include "alloc/alloc_test_util.h"
#include "core/rng.h"

namespace sp::alloc {
namespace {

using testing::buf;

constexpr DiveRule kRules[] = {DiveRule::kTightHoles, DiveRule::kLeastSlack, DiveRule::kLowest};

// Random buffers with overlapping lifetimes of every length: each rule and tie order gives a
// complete plan the validator accepts, and no plan is below the max load.
TEST(AllocDive, EveryRuleGivesValidPlans) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Rng rng(seed);
    Problem p;
    const int n = 20 + static_cast<int>(rng.range(0, 60));
    for (int i = 0; i < n; ++i) {
      const Time s = rng.range(0, 40);
      Buffer b = buf("b" + std::to_string(i), rng.range(0, 1000), s, s + rng.range(1, 15));
      b.alignment = rng.range(1, 3) == 1 ? 8 : 1;
      p.buffers.push_back(b);
    }
    for (DiveRule rule : kRules)
      for (bool twa : {false, true}) {
        DiveOptions o;
        o.rule = rule;
        o.twa_ties = twa;
        o.target = max_load(p);
        const Placement pl = canonical_dive(p, o);
        ASSERT_TRUE(all_placed(p, pl)) << seed << dive_rule_name(rule);
        EXPECT_TRUE(validate(p, pl, true).ok()) << seed << dive_rule_name(rule) << twa;
        EXPECT_GE(height(p, pl), max_load(p));
      }
  }
}

// Chains (each buffer live with its neighbours; random sizes, or ResNet-like stages with residual
// skips): the portfolio packs them at the max load.
TEST(AllocDive, PortfolioPacksChainsAtTheBound) {
  Problem chain;
  Rng rng(4);
  for (int i = 0; i < 3000; ++i) chain.buffers.push_back(buf("c" + std::to_string(i), rng.range(1, 1 << 30), i, i + 2));
  for (const Problem& p : {chain, generate_activation_chain(5000, 2), generate_activation_chain(20000, 5)}) {
    const Placement pl = dive_portfolio(p, max_load(p), Deadline(60.0));
    ASSERT_TRUE(all_placed(p, pl));
    EXPECT_EQ(height(p, pl), max_load(p));
    EXPECT_TRUE(validate(p, pl, true).ok());
  }
}

// Blocking (moving a buffer up once when placing it would break the target's bounds) is what
// packs the ResNet-like chain: without it the same dive ends far above the bound.
TEST(AllocDive, BlockingKeepsTheDiveUnderTheTarget) {
  const Problem p = generate_activation_chain(50000, 1);
  DiveOptions o;
  o.target = max_load(p);
  const Placement with = canonical_dive(p, o);
  o.block = false;
  const Placement without = canonical_dive(p, o);
  ASSERT_TRUE(all_placed(p, with) && all_placed(p, without));
  EXPECT_EQ(height(p, with), max_load(p));
  EXPECT_GT(height(p, without), max_load(p) + max_load(p) / 10);
  EXPECT_TRUE(validate(p, with, true).ok() && validate(p, without, true).ok());
}

// What the dive does not handle, it refuses with an empty plan instead of a wrong one.
TEST(AllocDive, RefusesWhatItCannotPlace) {
  Problem p;
  for (int i = 0; i < 10; ++i) p.buffers.push_back(buf("b" + std::to_string(i), 100, i, i + 3));
  DiveOptions o;
  o.target = max_load(p);
  EXPECT_TRUE(all_placed(p, canonical_dive(p, o)));
  o.max_pairs = 5;  // more overlapping pairs than that
  EXPECT_TRUE(canonical_dive(p, o).offsets.empty());
  o.max_pairs = INT64_MAX;
  o.give_up_above = max_load(p) - 1;  // cannot be met
  EXPECT_TRUE(canonical_dive(p, o).offsets.empty());
  o.give_up_above = kUnbounded;
  Problem pinned = p;
  pinned.buffers[3].fixed_offset = 0;
  EXPECT_TRUE(canonical_dive(pinned, o).offsets.empty());
  Problem forced = p;
  forced.buffers[2].residency_reason = "host only";
  EXPECT_TRUE(canonical_dive(forced, o).offsets.empty());
  Deadline over(0.0);
  EXPECT_TRUE(canonical_dive(p, o, &over).offsets.empty());
}

// In-place hand-offs are treated as conflicts: the plan is valid (no shared slot).
TEST(AllocDive, InPlaceEdgesStayValid) {
  Problem p;
  p.buffers.push_back(buf("a", 100, 0, 3));
  Buffer b = buf("b", 100, 2, 5);
  b.in_place_parents = {0};
  p.buffers.push_back(b);
  p.buffers.push_back(buf("c", 50, 1, 4));
  ASSERT_TRUE(check_problem(p).ok());
  DiveOptions o;
  o.target = max_load(p);
  const Placement pl = canonical_dive(p, o);
  ASSERT_TRUE(all_placed(p, pl));
  EXPECT_TRUE(validate(p, pl, true).ok());
}

}  // namespace
}  // namespace sp::alloc
