// Random graphs through the whole planner: every plan passes the independent checker, never moves
// more HBM bytes than the all-HBM baseline, and never less than its lower bounds.
#include <gtest/gtest.h>

#include "core/rng.h"
#include "lx/lx.h"

namespace sp::lx {
namespace {

Graph random_graph(Rng& rng) {
  Graph g;
  g.name = "random";
  const int inputs = static_cast<int>(rng.range(1, 3)), ops = static_cast<int>(rng.range(2, 14));
  const char* slicings[] = {"", "", "", "2x1/c2"};
  for (int i = 0; i < inputs; ++i) {
    Bytes b = 128 * rng.range(1, 64);
    g.tensors.push_back(GTensor{"in" + std::to_string(i), b, b / 2, true, false});
  }
  for (int k = 0; k < ops; ++k) {
    GOp op;
    op.name = "op" + std::to_string(k);
    op.kind = rng.chance(0.2) ? "reduction" : "pointwise";
    op.reduction = op.kind == "reduction";
    op.in_placeable = !op.reduction;
    op.lx_capable = !rng.chance(0.05);
    op.flops = static_cast<double>(rng.range(1, 1 << 20));
    int nreads = static_cast<int>(rng.range(1, 3));
    for (int r = 0; r < nreads; ++r) {
      int t = static_cast<int>(rng.below(g.tensors.size()));
      op.reads.push_back(GOperand{t, slicings[rng.below(4)], g.tensors[t].bytes});
    }
    Bytes b = 128 * rng.range(1, 64);
    bool out = rng.chance(0.25) || k == ops - 1;
    g.tensors.push_back(GTensor{"t" + std::to_string(k), b, b / 2, false, out});
    op.writes.push_back(GOperand{static_cast<int>(g.tensors.size()) - 1, slicings[rng.below(4)], b});
    g.ops.push_back(op);
  }
  return g;
}

TEST(LxProperty, RandomGraphsGiveCheckedPlansWithinTheirBounds) {
  Rng rng(7);
  for (int iter = 0; iter < 300; ++iter) {
    Graph g = random_graph(rng);
    Hardware hw;
    hw.capacity_override = 128 * rng.range(1, 100);
    Options o;
    o.cores = 1;
    o.coopt = false;
    o.time_limit = 0.02;
    o.in_place = rng.chance(0.7);
    o.clone_inputs = rng.chance(0.7);
    o.clone_outputs = rng.chance(0.7);
    o.eviction = rng.chance(0.7);
    o.reorder = rng.chance(0.5);
    auto plan = plan_graph(g, hw, o);
    ASSERT_TRUE(plan.ok()) << iter << ": " << plan.error().message;
    ASSERT_TRUE(check_plan(*plan).ok()) << iter;
    const Bytes hbm = plan->totals.hbm_read + plan->totals.hbm_write;
    EXPECT_LE(hbm, plan->totals.baseline_hbm) << iter;
    EXPECT_LE(plan->totals.lower_bound_hbm, hbm) << iter;
    EXPECT_LE(plan->totals.split_lower_bound_hbm, hbm) << iter;
    EXPECT_LE(plan->totals.lower_bound_hbm, plan->totals.split_lower_bound_hbm) << iter;
    // LX off reproduces the baseline exactly
    Options off = o;
    off.lx = false;
    auto base = plan_graph(g, hw, off);
    ASSERT_TRUE(base.ok());
    EXPECT_EQ(base->totals.hbm_read + base->totals.hbm_write, base->totals.baseline_hbm) << iter;
  }
}

}  // namespace
}  // namespace sp::lx
