// Layout compatibility (layout/compat.cpp): choosing the layouts a program leaves open.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "layout/compat.h"
#include "core/json_reader.h"
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

// A convolution is a reduction whose window sums index its input's stick dim (and whose weight is
// sticked on a reduction var, so the checker asks for a sparse output): its output keeps the
// default layout, which a sparse one would make 64 times larger.
TEST(LayoutCompat, ConvolutionOutputsKeepTheDefault) {
  const char* conv = R"J({"name": "conv", "tensors": [
    {"name": "x", "shape": [1, 8, 17, 17], "dtype": "fp16", "graph_input": true},
    {"name": "w", "shape": [16, 8, 3, 3], "dtype": "fp16", "graph_input": true},
    {"name": "y", "shape": [1, 16, 8, 8], "dtype": "fp16"},
    {"name": "r", "shape": [1, 16, 8, 8], "dtype": "fp16", "graph_output": true}],
   "ops": [{"name": "conv", "kind": "reduction", "payload": "conv2d", "inputs": ["x", "w"], "outputs": ["y"],
    "iterator_types": ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"],
    "indexing_maps": ["(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, 2*d2 + d5, d3 * 2 + d6)",
                      "(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)",
                      "(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)"]},
    {"name": "relu", "kind": "pointwise", "payload": "relu", "inputs": ["y"], "outputs": ["r"],
     "iterator_types": ["parallel", "parallel", "parallel", "parallel"],
     "indexing_maps": ["(d0, d1, d2, d3) -> (d0, d1, d2, d3)", "(d0, d1, d2, d3) -> (d0, d1, d2, d3)"]}]})J";
  auto j = parse_json_text(conv, "conv");
  ASSERT_TRUE(j.ok());
  auto prog = program::program_from_json(*j, "conv");
  ASSERT_TRUE(prog.ok()) << prog.error().message;
  auto issues = check_program_layouts(*prog);
  ASSERT_TRUE(issues.ok());
  bool asks_sparse = false;
  for (const LayoutIssue& is : *issues) asks_sparse = asks_sparse || (is.op == 0 && prog->tensors[is.tensor].name == "y");
  EXPECT_TRUE(asks_sparse);  // the rule that would misfire
  EXPECT_TRUE(infer_open_layouts(*prog).empty());
}

}  // namespace
}  // namespace sp::layout
