// Planner techniques on hand-built graphs: eviction and reload, reordering, eligibility reasons.
#include <gtest/gtest.h>

#include "lx/lx.h"

namespace sp::lx {
namespace {

struct G {
  Graph g;
  int t(const std::string& name, Bytes bytes, bool in = false, bool out = false) {
    g.tensors.push_back(GTensor{name, bytes, bytes / 2, in, out});
    return static_cast<int>(g.tensors.size()) - 1;
  }
  void op(const std::string& name, std::vector<int> reads, int write, bool in_place = false) {
    GOp o;
    o.name = name;
    o.kind = "pointwise";
    o.in_placeable = in_place;
    for (int r : reads) o.reads.push_back(GOperand{r, "", g.tensors[r].bytes});
    o.writes.push_back(GOperand{write, "", g.tensors[write].bytes});
    g.ops.push_back(o);
  }
};

Options plain() {
  Options o;
  o.cores = 1;
  o.clone_inputs = o.clone_outputs = o.coopt = o.reorder = false;
  return o;
}

TEST(LxGraph, DormantValueIsEvictedAndReloadedWhenTheRoundTripPays) {
  const Bytes S = 1 << 20;
  G b;
  int ain = b.t("A_in", S, true), bin = b.t("B_in", S, true), a = b.t("A", S), bb = b.t("B", S);
  std::vector<int> outs;
  for (int i = 0; i < 7; ++i) outs.push_back(b.t("o" + std::to_string(i), 256, false, true));
  b.op("loadA", {ain}, a);
  b.op("a1", {a}, outs[0]);
  b.op("a2", {a}, outs[1]);
  b.op("loadB", {bin}, bb);
  b.op("b1", {bb}, outs[2]);
  b.op("b2", {bb}, outs[3]);
  b.op("a3", {a}, outs[4]);
  b.op("a4", {a}, outs[5]);
  b.op("a5", {a}, outs[6]);
  Hardware hw;
  hw.capacity_override = S;
  Options o = plain();
  o.eviction = false;
  auto keep = plan_graph(b.g, hw, o);
  ASSERT_TRUE(keep.ok()) << keep.error().message;
  o.eviction = true;
  auto ev = plan_graph(b.g, hw, o);
  ASSERT_TRUE(ev.ok()) << ev.error().message;
  EXPECT_TRUE(check_plan(*ev).ok());
  const Bytes without = keep->totals.hbm_read + keep->totals.hbm_write;
  const Bytes with = ev->totals.hbm_read + ev->totals.hbm_write;
  // without eviction A (6 S saved) beats B (3 S); with it A yields its slot to B: one
  // write-back and one reload instead of B's three transfers
  EXPECT_EQ(without - with, S);
  EXPECT_EQ(ev->evictions, 1);
  bool reloaded = false;
  for (const auto& v : ev->values)
    if (v.name == "A") reloaded = v.lx.size() == 2 && v.lx[1].reload && v.lx[1].start == 6;
  EXPECT_TRUE(reloaded);
}

TEST(LxGraph, ReorderingIndependentOpsShortensOverlappingLifetimes) {
  const Bytes S = 1 << 20;
  G b;
  int in1 = b.t("in1", S, true), in2 = b.t("in2", S, true), t = b.t("T", S), u = b.t("U", S);
  int o1 = b.t("o1", 256, false, true), o2 = b.t("o2", 256, false, true), o3 = b.t("o3", 256, false, true);
  b.op("makeT", {in1}, t);
  b.op("makeU", {in2}, u);
  b.op("useT", {t}, o1);
  b.op("useT2", {t}, o3);
  b.op("useU", {u}, o2);
  Hardware hw;
  hw.capacity_override = S;
  Options o = plain();
  auto fixed = plan_graph(b.g, hw, o);
  ASSERT_TRUE(fixed.ok());
  o.reorder = true;
  auto moved = plan_graph(b.g, hw, o);
  ASSERT_TRUE(moved.ok()) << moved.error().message;
  EXPECT_TRUE(check_plan(*moved).ok());
  EXPECT_GE(moved->reorders, 1);
  EXPECT_LT(moved->totals.hbm_read + moved->totals.hbm_write, fixed->totals.hbm_read + fixed->totals.hbm_write);
  for (const auto& v : moved->values)
    if (v.name == "T" || v.name == "U") {
      EXPECT_FALSE(v.lx.empty()) << v.name;
    }
}

TEST(LxGraph, EveryHbmValueHasAReason) {
  const Bytes S = 4096;
  G b;
  int x = b.t("x", S, true), m = b.t("m", S), y = b.t("y", S, false, true), dead = b.t("dead", S);
  b.op("f", {x}, m);
  b.op("g", {m}, y);
  b.op("h", {x}, dead);
  b.g.ops[0].writes[0].slicing = "4x1/c4";  // producer slices m differently from its consumer
  Hardware hw;
  auto plan = plan_graph(b.g, hw, plain());
  ASSERT_TRUE(plan.ok());
  for (const auto& v : plan->values) {
    if (v.lx.empty()) {
      EXPECT_FALSE(v.reason.empty()) << v.name;
    }
    if (v.name == "m") {
      EXPECT_EQ(v.reason.rfind("core-div mismatch", 0), 0u) << v.reason;
    }
    if (v.name == "dead") {
      EXPECT_EQ(v.reason, "no consumer reads it from LX");
    }
    if (v.name == "x") {
      EXPECT_EQ(v.reason, "graph input (no clone)");
    }
    if (v.name == "y") {
      EXPECT_EQ(v.reason, "graph output (no clone)");
    }
  }
}

TEST(LxGraph, CheckerRejectsOverlapsAndWrongTotals) {
  const Bytes S = 4096;
  G b;
  int x = b.t("x", S, true), m = b.t("m", S), n = b.t("n", S), y = b.t("y", S, false, true);
  b.op("f", {x}, m);
  b.op("g", {x}, n);
  b.op("h", {m, n}, y);
  auto plan = plan_graph(b.g, Hardware{}, plain());
  ASSERT_TRUE(plan.ok());
  ASSERT_TRUE(check_plan(*plan).ok());
  Plan bad = *plan;
  for (auto& v : bad.values)
    if (!v.lx.empty()) v.lx.front().address = 0;  // m and n are co-live: now they collide
  const PlanCheck collide = check_plan(bad);
  ASSERT_EQ(collide.violations.size(), 1u);
  EXPECT_EQ(collide.violations[0].kind, PlanViolationKind::kOverlap);
  EXPECT_EQ(collide.violations[0].involved.size(), 2u);  // the two values, by name
  EXPECT_NE(collide.violations[0].message.find("LX overlap: "), std::string::npos);
  bad = *plan;
  bad.totals.hbm_read -= 1;
  const PlanCheck traffic = check_plan(bad);
  ASSERT_FALSE(traffic.ok());
  EXPECT_EQ(traffic.violations[0].kind, PlanViolationKind::kTraffic);
}

}  // namespace
}  // namespace sp::lx
