// Exact reference (issue 44): on small conv -> norm -> activation -> conv chains, an exhaustive
// search over every assignment of the planner's menu entries gives the true optimum of the
// planner's objective; the plan must reach it and every bound must stay below it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/rng.h"
#include "lx/lx.h"
#include "program/builder.h"

namespace sp::lx {
namespace {

using program::Builder;
using program::TensorId;

Bytes hbm(const Plan& p) { return p.totals.hbm_read + p.totals.hbm_write; }

// A convolution block as a CNN front end lowers it, on [pixels, channels]: a 1x1 convolution
// (matmul), the folded BatchNorm (per-channel scale and shift), an activation, a second 1x1
// convolution; pixels and channels from the seed (small, so the menus are small).
program::Program conv_chain(uint64_t seed) {
  Rng rng(seed);
  Builder b("conv_chain_" + std::to_string(seed));
  const int64_t px = 256 * rng.range(1, 16), c0 = 64 * rng.range(1, 3), c1 = 64 * rng.range(1, 4), c2 = 64 * rng.range(1, 2);
  TensorId x = b.input("x", {px, c0}), w0 = b.input("w0", {c0, c1}), w1 = b.input("w1", {c1, c2});
  TensorId sc = b.input("scale", {c1}), sh = b.input("shift", {c1});
  TensorId y = b.tensor("conv0", {px, c1}), z = b.tensor("bn", {px, c1}), a = b.tensor("act", {px, c1});
  TensorId out = b.tensor("conv1", {px, c2});
  b.matmul("conv0", x, w0, y);
  b.pointwise("bn", "mul_add", {y, sc, sh}, z);
  b.pointwise("act", "relu", {z}, a);
  b.matmul("conv1", a, w1, out);
  b.output(out);
  auto p = b.build("test");
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
  return p.ok() ? *p : program::Program{};
}

// A residual block: conv -> activation -> conv -> add(activation, conv): the activation has two
// readers, so the chain bound's links form a tree with a branch.
program::Program residual_block(uint64_t seed) {
  Rng rng(seed);
  Builder b("residual_" + std::to_string(seed));
  const int64_t px = 256 * rng.range(1, 16), c0 = 64 * rng.range(1, 3), c1 = 64 * rng.range(1, 2);
  TensorId x = b.input("x", {px, c0}), w0 = b.input("w0", {c0, c1}), w1 = b.input("w1", {c1, c1});
  TensorId y = b.tensor("conv0", {px, c1}), a = b.tensor("act", {px, c1}), z = b.tensor("conv1", {px, c1});
  TensorId out = b.tensor("sum", {px, c1});
  b.matmul("conv0", x, w0, y);
  b.pointwise("act", "relu", {y}, a);
  b.matmul("conv1", a, w1, z);
  b.pointwise("sum", "add", {a, z}, out);
  b.output(out);
  auto p = b.build("test");
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
  return p.ok() ? *p : program::Program{};
}

TEST(LxExact, PlanReachesTheExhaustiveOptimumAndBoundsStayBelowIt) {
  std::vector<program::Program> progs;
  for (uint64_t seed = 1; seed <= 6; ++seed) progs.push_back(conv_chain(seed));
  for (uint64_t seed = 1; seed <= 4; ++seed) progs.push_back(residual_block(seed));
  for (const program::Program& prog : progs) {
    Options o;
    o.cores = 4;
    o.fewer_cores = false;  // the reference searches the menus at exactly these cores
    o.time_limit = 1.0;
    auto ref = exact_split_reference(prog, Hardware{}, o, 20000);
    ASSERT_TRUE(ref.ok()) << prog.name << ": " << ref.error().message;
    ASSERT_TRUE(ref->best.has_value());
    EXPECT_GT(ref->assignments, 1) << prog.name;  // a real choice
    auto plan = plan_program(prog, Hardware{}, o);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    const Plan& best = *ref->best;
    // At the optimum: as fast (the search's first criterion), then no more bytes.
    EXPECT_NEAR(plan->totals.time_s, best.totals.time_s, 1e-9 * best.totals.time_s) << prog.name;
    if (plan->totals.time_s <= best.totals.time_s * (1 + 1e-9)) {
      EXPECT_LE(hbm(*plan), hbm(best)) << prog.name;
    }
    // Bounds below the optimum (the optimum is a plan no slower than ours).
    EXPECT_LE(plan->totals.lower_bound_hbm, hbm(best)) << prog.name;
    EXPECT_LE(plan->totals.time_lower_bound_hbm, hbm(best)) << prog.name;
    std::printf("%s: %lld assignments, optimum %.2f us %lld B, plan %.2f us %lld B, time bound %lld B\n",
                prog.name.c_str(), static_cast<long long>(ref->assignments), best.totals.time_s * 1e6,
                static_cast<long long>(hbm(best)), plan->totals.time_s * 1e6, static_cast<long long>(hbm(*plan)),
                static_cast<long long>(plan->totals.time_lower_bound_hbm));
  }
}

}  // namespace
}  // namespace sp::lx
