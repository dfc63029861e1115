// Layout compatibility of a program's ops (program/layout_compat.cpp): choosing the layouts a program leaves open.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "program/layout_compat.h"
#include "core/json_reader.h"
#include "program/builder.h"

namespace sp::program {
namespace {


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

// Attention scores plus a folded bias table [heads, k, q] read transposed (like T5's relative
// position bias after a permute): with the default layout (sticked on q) the add restickifies
// it. Marked load_time, it is laid out once for its reader, sticked on k, and the fix is gone;
// unmarked (the caller supplies it per run) it keeps its layout and its fix.
TEST(LayoutCompat, LoadTimeInputsAreLaidOutForTheirReaders) {
  auto make = [](bool load_time) {
    Builder b("bias");
    TensorId s = b.input("scores", {4, 64, 128}), bias = b.input("bias", {4, 128, 64});
    TensorId y = b.tensor("y", {4, 64, 128});
    b.generic("add_bias", OpKind::kPointwise, "add", {s, bias}, {y}, {IteratorType::kParallel, IteratorType::kParallel, IteratorType::kParallel},
              {{0, 1, 2}, {0, 2, 1}, {0, 1, 2}});
    b.output(y);
    auto prog = b.build("test");
    EXPECT_TRUE(prog.ok()) << prog.error().message;
    prog->tensors[bias].load_time = load_time;
    return *prog;
  };
  auto bias_fixes = [](const Program& p) {
    auto issues = check_program_layouts(p);
    EXPECT_TRUE(issues.ok());
    int n = 0;
    for (const LayoutIssue& is : *issues) n += p.tensors[is.tensor].name == "bias";
    return n;
  };
  Program plain = make(false);
  EXPECT_EQ(bias_fixes(plain), 1);
  EXPECT_TRUE(infer_open_layouts(plain).empty());

  Program marked = make(true);
  EXPECT_EQ(bias_fixes(marked), 1);
  const std::vector<OpenLayout> chosen = infer_open_layouts(marked);
  ASSERT_EQ(chosen.size(), 1u);
  EXPECT_EQ(marked.tensors[chosen[0].tensor].name, "bias");
  EXPECT_EQ(chosen[0].dim_order, (std::vector<int>{0, 2, 1}));
  marked.tensors[chosen[0].tensor].dim_order = chosen[0].dim_order;
  EXPECT_EQ(bias_fixes(marked), 0);
  auto left = check_program_layouts(marked);
  ASSERT_TRUE(left.ok());
  EXPECT_TRUE(left->empty());
  // Laid out by the program: kept as given, even marked.
  EXPECT_TRUE(infer_open_layouts(marked).empty());
}

// A per-channel load-time operand broadcast over [c, h, w] (sticked on w) has a fix on c and no
// dense layout without one; sparse removes it. Within the byte cap (1 + 2 x fixes removed times
// the default) a [3, 1, 1] scale (3 sticks for 1) becomes sparse; a [96] bias (96 sticks for 2)
// keeps its default layout and its fix.
TEST(LayoutCompat, LoadTimeSparseLayoutsStayWithinTheByteCap) {
  Builder b("scale");
  TensorId x = b.input("x", {96, 64, 64}), bias = b.input("bias", {96}), y = b.tensor("y", {96, 64, 64});
  TensorId x3 = b.input("x3", {3, 64, 64}), scale = b.input("scale", {3, 1, 1}), z = b.tensor("z", {3, 64, 64});
  const std::vector<IteratorType> par(3, IteratorType::kParallel);
  b.generic("add_bias", OpKind::kPointwise, "add", {x, bias}, {y}, par, {{0, 1, 2}, {0}, {0, 1, 2}});
  b.pointwise("mul_scale", "mul", {x3, scale}, z);
  b.output(y);
  b.output(z);
  auto prog = b.build("test");
  ASSERT_TRUE(prog.ok()) << prog.error().message;
  prog->tensors[bias].load_time = prog->tensors[scale].load_time = true;
  auto before = check_program_layouts(*prog);
  ASSERT_TRUE(before.ok());
  ASSERT_EQ(before->size(), 2u);
  const std::vector<OpenLayout> chosen = infer_open_layouts(*prog);
  ASSERT_EQ(chosen.size(), 1u);
  EXPECT_EQ(chosen[0].tensor, scale);
  EXPECT_EQ(chosen[0].dim_order, (std::vector<int>{0, 1, 2, -1}));
  prog->tensors[scale].dim_order = chosen[0].dim_order;
  auto after = check_program_layouts(*prog);
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->size(), 1u);
  EXPECT_EQ((*after)[0].tensor, bias);
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

// A convolution is a reduction whose window sums (2*oh + r, 2*ow + s) index its input's stick
// dim and whose weight is sticked on a reduction var (s), like a matmul's A on K. It slides the
// window along the stick instead of reducing it away, so its output keeps the default layout,
// sticked on ow, with no fix (a sparse one would be 64 times larger). Sticked on the channel
// instead, the output is like a matmul's C sticked on N = k: the weight, indexed by k, is then
// its B and must be sticked on k, and the window does not contain k.
constexpr const char* kConv = R"J({"name": "conv", "tensors": [
    {"name": "x", "shape": [1, 8, 17, 17], "dtype": "fp16", "graph_input": true},
    {"name": "w", "shape": [16, 8, 3, 3], "dtype": "fp16", "graph_input": true},
    {"name": "y", "shape": [1, 16, 8, 8], "dtype": "fp16"YDIM},
    {"name": "r", "shape": [1, 16, 8, 8], "dtype": "fp16", "graph_output": true}],
   "ops": [{"name": "conv", "kind": "reduction", "payload": "conv2d", "inputs": ["x", "w"], "outputs": ["y"],
    "iterator_types": ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"],
    "indexing_maps": ["(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, 2*d2 + d5, d3 * 2 + d6)",
                      "(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)",
                      "(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)"]},
    {"name": "relu", "kind": "pointwise", "payload": "relu", "inputs": ["y"], "outputs": ["r"],
     "iterator_types": ["parallel", "parallel", "parallel", "parallel"],
     "indexing_maps": ["(d0, d1, d2, d3) -> (d0, d1, d2, d3)", "(d0, d1, d2, d3) -> (d0, d1, d2, d3)"]}]})J";

std::vector<LayoutIssue> conv_issues(const std::string& y_dim_order) {
  std::string text = kConv;
  text.replace(text.find("YDIM"), 4, y_dim_order.empty() ? "" : ", \"dim_order\": " + y_dim_order);
  auto j = parse_json_text(text, "conv");
  EXPECT_TRUE(j.ok());
  auto prog = program::program_from_json(*j, "conv");
  EXPECT_TRUE(prog.ok()) << prog.error().message;
  if (!prog.ok()) return {};
  EXPECT_TRUE(infer_open_layouts(*prog).empty());
  auto issues = check_program_layouts(*prog);
  EXPECT_TRUE(issues.ok());
  return issues.ok() ? *issues : std::vector<LayoutIssue>{};
}

TEST(LayoutCompat, ConvolutionOutputsKeepTheDefault) {
  EXPECT_TRUE(conv_issues("").empty());  // y sticked on ow (d3), the window's outer var
  // Channel last: y sticked on d1, which x's window 2*d3 + d6 does not contain.
  std::vector<LayoutIssue> at_conv;
  for (const LayoutIssue& is : conv_issues("[0, 2, 3, 1]"))
    if (is.op == 0) at_conv.push_back(is);
  ASSERT_EQ(at_conv.size(), 2u);
  EXPECT_EQ(at_conv[0].operand, 0);
  EXPECT_NE(at_conv[0].message.find("without the output's stick var d1"), std::string::npos) << at_conv[0].message;
  EXPECT_EQ(at_conv[1].operand, 1);
  EXPECT_NE(at_conv[1].message.find("sticked on d6, the op's output is sticked on d1"), std::string::npos)
      << at_conv[1].message;
}

std::vector<LayoutIssue> issues_of(const std::string& text) {
  auto j = parse_json_text(text, "t");
  EXPECT_TRUE(j.ok());
  auto prog = program::program_from_json(*j, "t");
  EXPECT_TRUE(prog.ok()) << prog.error().message;
  if (!prog.ok()) return {};
  auto issues = check_program_layouts(*prog);
  EXPECT_TRUE(issues.ok());
  return issues.ok() ? *issues : std::vector<LayoutIssue>{};
}

// A 1x1 convolution's filter w[k, c] is sticked on c, the reduction var, and not indexed by the
// output's stick var (w): a contraction operand, read like a matmul's A on K, needs no fix. An
// operand of a reduction that the output's stick var indexes (a row-wise dot product's second
// factor) must still share that var, and a pointwise op still needs a broadcast vector sparse.
TEST(LayoutCompat, ContractionOperandsOfReductionsKeepTheirReductionStick) {
  EXPECT_TRUE(issues_of(R"J({"name": "c1", "tensors": [
    {"name": "x", "shape": [1, 16, 8, 8], "dtype": "fp16", "graph_input": true},
    {"name": "w", "shape": [32, 16], "dtype": "fp16", "graph_input": true},
    {"name": "y", "shape": [1, 32, 8, 8], "dtype": "fp16", "graph_output": true}],
   "ops": [{"name": "conv", "kind": "reduction", "payload": "conv2d", "inputs": ["x", "w"], "outputs": ["y"],
    "iterator_types": ["parallel", "parallel", "parallel", "reduction"],
    "indexing_maps": ["(d0, d1, d2, d3) -> (0, d3, d1, d2)", "(d0, d1, d2, d3) -> (d0, d3)",
                      "(d0, d1, d2, d3) -> (0, d0, d1, d2)"]}]})J")
                  .empty());
  const auto dot = issues_of(R"J({"name": "dot", "tensors": [
    {"name": "x", "shape": [64, 128], "dtype": "fp16", "graph_input": true, "dim_order": [1, 0]},
    {"name": "v", "shape": [64, 128], "dtype": "fp16", "graph_input": true},
    {"name": "y", "shape": [64], "dtype": "fp16", "graph_output": true}],
   "ops": [{"name": "dot", "kind": "reduction", "payload": "sum", "inputs": ["x", "v"], "outputs": ["y"],
    "iterator_types": ["parallel", "reduction"],
    "indexing_maps": ["(d0, d1) -> (d0, d1)", "(d0, d1) -> (d0, d1)", "(d0, d1) -> (d0)"]}]})J");
  ASSERT_EQ(dot.size(), 1u);
  EXPECT_EQ(dot[0].operand, 1);
  const auto scale = issues_of(R"J({"name": "scale", "tensors": [
    {"name": "x", "shape": [64, 128], "dtype": "fp16", "graph_input": true},
    {"name": "g", "shape": [64], "dtype": "fp16", "graph_input": true},
    {"name": "y", "shape": [64, 128], "dtype": "fp16", "graph_output": true}],
   "ops": [{"name": "scale", "kind": "pointwise", "payload": "mul", "inputs": ["x", "g"], "outputs": ["y"],
    "iterator_types": ["parallel", "parallel"],
    "indexing_maps": ["(d0, d1) -> (d0, d1)", "(d0, d1) -> (d0)", "(d0, d1) -> (d0, d1)"]}]})J");
  ASSERT_EQ(scale.size(), 1u);
  EXPECT_EQ(scale[0].operand, 1);
}

}  // namespace
}  // namespace sp::program
