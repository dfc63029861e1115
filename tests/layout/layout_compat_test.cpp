// Layout compatibility (layout/compat.cpp): choosing the layouts a program leaves open.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "layout/compat.h"
#include "program/builder.h"

namespace sp::layout {
namespace {

using program::Builder;
using program::TensorId;

std::vector<int> order_of(const program::Program& p, const std::string& name) {
  for (const auto& t : p.tensors)
    if (t.name == name) return t.dim_order;
  ADD_FAILURE() << name;
  return {};
}

// An RMS norm whose statistics have no layout: the row reduction's output and the pointwise op
// on it become sparse, which leaves no fix; the tensors the program laid out, the graph's inputs
// and outputs and the dense intermediates keep theirs.
TEST(LayoutCompat, OpenReductionOutputsBecomeSparse) {
  Builder b("norm");
  TensorId x = b.input("x", {256, 512});
  TensorId sq = b.tensor("sq", {256, 512}), ms = b.tensor("ms", {256, 1}), rs = b.tensor("rs", {256, 1});
  TensorId given = b.tensor("given", {256, 1}), y = b.tensor("y", {256, 512}), out = b.tensor("out", {256, 1});
  b.set_dim_order(given, {0, 1});  // laid out by the program: kept, fix and all
  b.pointwise("square", "mul", {x, x}, sq);
  b.reduce("mean_sq", "mean", sq, {1}, ms);
  b.pointwise("rsqrt", "rsqrt", {ms}, rs);
  b.pointwise("normalize", "mul", {x, rs}, y);
  b.reduce("row_max", "max", sq, {1}, given);
  b.reduce("row_sum", "sum", y, {1}, out);
  b.output(out);  // read by the caller: its layout is the caller's
  auto prog = b.build("test");
  ASSERT_TRUE(prog.ok()) << prog.error().message;
  auto issues = check_program_layouts(*prog);
  ASSERT_TRUE(issues.ok());
  const std::size_t before = issues->size();

  program::Program p = *prog;
  const std::vector<OpenLayout> chosen = infer_open_layouts(p);
  ASSERT_EQ(chosen.size(), 2u);
  for (const OpenLayout& c : chosen) p.tensors[c.tensor].dim_order = c.dim_order;
  EXPECT_EQ(order_of(p, "ms"), (std::vector<int>{0, 1, -1}));
  EXPECT_EQ(order_of(p, "rs"), (std::vector<int>{0, 1, -1}));
  EXPECT_EQ(order_of(p, "given"), (std::vector<int>{0, 1}));
  EXPECT_TRUE(order_of(p, "out").empty());
  EXPECT_TRUE(order_of(p, "sq").empty());
  EXPECT_TRUE(order_of(p, "y").empty());
  auto left = check_program_layouts(p);
  ASSERT_TRUE(left.ok());
  EXPECT_LT(left->size(), before);
  for (const LayoutIssue& is : *left) {
    EXPECT_NE(p.tensors[is.tensor].name, "ms");
    EXPECT_NE(p.tensors[is.tensor].name, "rs");
  }
  // A program with nothing left open is returned unchanged.
  EXPECT_TRUE(infer_open_layouts(p).empty());
}

// Dense pointwise chains have no fix to remove: nothing changes.
TEST(LayoutCompat, CompatibleProgramsKeepTheirLayouts) {
  Builder b("chain");
  TensorId x = b.input("x", {128, 256}), h = b.tensor("h", {128, 256}), y = b.tensor("y", {128, 256});
  b.pointwise("exp", "exp", {x}, h);
  b.pointwise("neg", "neg", {h}, y);
  b.output(y);
  auto prog = b.build("test");
  ASSERT_TRUE(prog.ok());
  EXPECT_TRUE(infer_open_layouts(*prog).empty());
}

}  // namespace
}  // namespace sp::layout
