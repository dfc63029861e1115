// LX planning end to end on softmax: the seed's four stages, multi-core residency.
#include <gtest/gtest.h>

#include "lx/lx.h"
#include "program/builder.h"

namespace sp::lx {
namespace {

using program::Builder;
using program::TensorId;

program::Program softmax_dim0(int64_t m, int64_t n) {
  auto p = program::softmax_dim0_program(m, n);
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
  return *p;
}

program::Program softmax_lastdim(int64_t m, int64_t n) {
  Builder b("softmax_lastdim");
  TensorId x = b.input("x", {m, n});
  TensorId mx = b.tensor("max", {m, 1}), xs = b.tensor("shifted", {m, n}), e = b.tensor("exp", {m, n});
  TensorId sum = b.tensor("sum", {m, 1}), y = b.tensor("out", {m, n});
  b.reduce("row_max", "max", x, {1}, mx);
  b.pointwise("sub_max", "sub", {x, mx}, xs);
  b.pointwise("exp", "exp", {xs}, e);
  b.reduce("row_sum", "sum", e, {1}, sum);
  b.pointwise("normalize", "div", {e, sum}, y);
  b.output(y);
  auto p = b.build("test softmax");
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
  return *p;
}

const PlanValue& value(const Plan& p, const std::string& name) {
  for (const auto& v : p.values)
    if (v.name == name) return v;
  static PlanValue none;
  ADD_FAILURE() << "no value " << name;
  return none;
}

TEST(LxSoftmax, FourSeedStagesMoveExactlyTheSeedElementCounts) {
  const int64_t M = 512, N = 1024;
  auto prog = softmax_dim0(M, N);
  const int64_t expected[5] = {0, 8 * M * N + 4 * N, 8 * M * N, 3 * M * N, 2 * M * N};
  for (int stage = 1; stage <= 4; ++stage) {
    Options o = stage_options(stage);
    o.cores = 1;
    auto plan = plan_program(prog, Hardware{}, o);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    EXPECT_EQ(plan->totals.hbm_elements, expected[stage]) << "stage " << stage;
    EXPECT_EQ(plan->totals.baseline_elements, 8 * M * N + 4 * N);
    EXPECT_TRUE(check_plan(*plan).ok());
    // fp16 dense layouts: bytes are exactly twice the elements
    EXPECT_EQ(plan->totals.hbm_read + plan->totals.hbm_write, 2 * expected[stage]) << "stage " << stage;
  }
}

TEST(LxSoftmax, StagesPlaceWhatTheSeedSays) {
  auto prog = softmax_dim0(512, 1024);
  Options o = stage_options(2);
  o.cores = 1;
  auto s2 = plan_program(prog, Hardware{}, o);
  ASSERT_TRUE(s2.ok());
  EXPECT_FALSE(value(*s2, "max").lx.empty());
  EXPECT_FALSE(value(*s2, "sum").lx.empty());
  EXPECT_TRUE(value(*s2, "shifted").lx.empty());
  EXPECT_NE(value(*s2, "shifted").reason.find("reduction"), std::string::npos);
  o = stage_options(3);
  o.cores = 1;
  auto s3 = plan_program(prog, Hardware{}, o);
  ASSERT_TRUE(s3.ok());
  EXPECT_EQ(value(*s3, "exp").in_place_parent >= 0 ? s3->values[value(*s3, "exp").in_place_parent].name : "", "shifted");
  EXPECT_EQ(value(*s3, "x").reason, "graph input (no clone)");
  EXPECT_EQ(value(*s3, "out").reason, "graph output (no clone)");
  o = stage_options(4);
  o.cores = 1;
  auto s4 = plan_program(prog, Hardware{}, o);
  ASSERT_TRUE(s4.ok());
  EXPECT_EQ(s4->clones, 1);
  const PlanValue& cl = value(*s4, "x.lx");
  EXPECT_TRUE(cl.clone);
  ASSERT_FALSE(cl.lx.empty());
  // the clone hands its slot to sub's output, which hands it to exp's
  EXPECT_EQ(s4->values[value(*s4, "shifted").in_place_parent].name, "x.lx");
  EXPECT_EQ(value(*s4, "exp").lx.front().address, cl.lx.front().address);
  EXPECT_LT(s4->totals.time_s, s4->totals.baseline_time_s);
}

TEST(LxSoftmax, FourCoresKeepIntermediatesOnLx) {
  auto prog = softmax_lastdim(1024, 2048);  // 4 MB: too big for one core's LX
  Options o;
  o.cores = 4;
  o.coopt = false;
  o.infer_layouts = false;  // the reduction outputs stay dense (default layout): see the end
  // work division alone: the dense reduction outputs are read restickified, so their few sticks
  // no longer cap the row splits of the ops around them (they split rows vs sticks before, and the
  // intermediates crossed HBM as core-div mismatches)
  auto seed = plan_program(prog, Hardware{}, o);
  ASSERT_TRUE(seed.ok()) << seed.error().message;
  for (const char* n : {"shifted", "exp"})
    EXPECT_EQ(value(*seed, n).reason.find("core-div mismatch"), std::string::npos) << n << ": " << value(*seed, n).reason;
  o.coopt = true;
  auto plan = plan_program(prog, Hardware{}, o);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  for (const char* n : {"max", "shifted", "exp", "sum"}) {
    const PlanValue& v = value(*plan, n);
    EXPECT_FALSE(v.lx.empty()) << n << ": " << v.reason;
  }
  EXPECT_EQ(value(*plan, "shifted").per_core, 1024 * 2048 * 2 / 4);
  for (const auto& op : plan->graph.ops) EXPECT_EQ(op.cores, 4) << op.name;
  // only the input read (once, through the clone), the output write and the restickify of the
  // two dense reduction outputs (a reduction along the stick should write a sparse one) remain
  Bytes fixes = 0;
  for (const auto& op : plan->graph.ops)
    for (const LayoutFix& f : op.layout_fixes) fixes += 2 * f.fixed_bytes;
  EXPECT_GT(fixes, 0);
  EXPECT_EQ(plan->totals.hbm_read + plan->totals.hbm_write, 2 * 1024 * 2048 * 2 + fixes);
  // on one core the same program cannot keep them
  o.cores = 1;
  auto one = plan_program(prog, Hardware{}, o);
  ASSERT_TRUE(one.ok());
  EXPECT_TRUE(value(*one, "shifted").lx.empty());
  // with the open layouts chosen (the default), the two reduction outputs are sparse: no fix is
  // left, only the input read and the output write
  o.cores = 4;
  o.infer_layouts = true;
  auto inferred = plan_program(prog, Hardware{}, o);
  ASSERT_TRUE(inferred.ok());
  EXPECT_EQ(inferred->inferred_layouts.size(), 2u);
  EXPECT_EQ(inferred->totals.hbm_read + inferred->totals.hbm_write, 2 * 1024 * 2048 * 2);
}

TEST(LxHardware, SpyreCapacityFollowsTheFormula) {
  Hardware h;
  EXPECT_EQ(lx_capacity(h), 1625344);
  h.reserved_fraction = 0.0;
  EXPECT_EQ(lx_capacity(h), 2031616);
  h.reserved_fraction = 1.0;
  EXPECT_EQ(lx_capacity(h), 0);
  auto j = parse_json_text(R"({"reserved_fraction": 1.5})", "hw.json");
  ASSERT_TRUE(j.ok());
  auto bad = hardware_from_json(*j, "hw.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("hw.json: $.reserved_fraction"), std::string::npos) << bad.error().message;
}

}  // namespace
}  // namespace sp::lx
