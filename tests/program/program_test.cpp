// The tensor program format: bundled examples, JSON round trip, affine maps and bad input.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/atomic_file.h"
#include "program/builder.h"
#include "program/program.h"

namespace sp::program {
namespace {

std::string example_path(const std::string& name) {
  return std::string(SCRATCHPLAN_SOURCE_DIR) + "/examples/programs/" + name + ".json";
}

// examples/programs/*.json are exactly what the builders produce. SCRATCHPLAN_REGEN_EXAMPLES=1
// rewrites them.
TEST(ProgramExamples, BundledFilesMatchBuilders) {
  const bool regen = std::getenv("SCRATCHPLAN_REGEN_EXAMPLES") != nullptr;
  for (const auto& name : example_names()) {
    auto p = example_program(name);
    ASSERT_TRUE(p.ok()) << name << ": " << p.error().message;
    const std::string text = program_to_text(*p);
    if (regen) {
      ASSERT_TRUE(write_file_atomic(example_path(name), text).ok());
    }
    auto read = read_program(example_path(name));
    ASSERT_TRUE(read.ok()) << read.error().message;
    EXPECT_EQ(program_to_text(*read), text) << name;
    EXPECT_FALSE(read->ops.empty());
  }
}

TEST(ProgramExamples, ShapesOfIterationSpaces) {
  auto sm = example_program("softmax_lastdim");
  ASSERT_TRUE(sm.ok());
  const Op& mx = sm->ops[0];
  EXPECT_EQ(mx.kind, OpKind::kReduction);
  EXPECT_EQ(mx.ranges, (std::vector<Dim>{1024, 4096}));
  EXPECT_EQ(mx.iterators[1], IteratorType::kReduction);
  EXPECT_EQ(format_affine_map(mx.indexing_maps[1], 2), "(d0, d1) -> (d0, 0)");
  auto g = example_program("gqa");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->ops[0].ranges, (std::vector<Dim>{8, 4, 512, 512, 128}));
  auto bm = example_program("bmm");
  ASSERT_TRUE(bm.ok());
  EXPECT_EQ(format_affine_map(bm->ops[0].indexing_maps[1], 4), "(d0, d1, d2, d3) -> (d0, d3, d2)");
  auto moe = example_program("moe_mlp");
  ASSERT_TRUE(moe.ok());
  EXPECT_EQ(moe->ops[1].kind, OpKind::kOpaque);
  EXPECT_TRUE(moe->ops[1].ranges.empty());
  EXPECT_EQ(moe->producer[moe->ops[2].inputs[0]], 1);
}

TEST(ProgramFormat, AffineMaps) {
  int n = 0;
  auto m = parse_affine_map("(d0, d1, d2) -> (d0, 0, d2)", &n);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(n, 3);
  EXPECT_EQ(*m, (std::vector<VarId>{0, kConstZero, 2}));
  EXPECT_FALSE(parse_affine_map("(d0, d2) -> (d0)", &n).ok());
  EXPECT_FALSE(parse_affine_map("(d0) -> (d1)", &n).ok());
  EXPECT_FALSE(parse_affine_map("(d0) -> (d0 + 1)", &n).ok());
  EXPECT_FALSE(parse_affine_map("(d0) (d0)", &n).ok());
  auto empty = parse_affine_map("() -> ()", &n);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(n, 0);
}

Result<Program> parse(const std::string& text) {
  auto j = parse_json_text(text, "p.json");
  if (!j) return j.error();
  return program_from_json(*j, "p.json");
}

const char* kGood = R"J({"name": "t", "tensors": [
  {"name": "x", "shape": [8, 128], "dtype": "fp16", "graph_input": true},
  {"name": "y", "shape": [8, 128], "dtype": "fp16", "graph_output": true}],
 "ops": [{"name": "relu", "kind": "pointwise", "inputs": ["x"], "outputs": ["y"],
  "iterator_types": ["parallel", "parallel"], "indexing_maps": ["(d0, d1) -> (d0, d1)", "(d0, d1) -> (d0, d1)"]}]})J";

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  auto pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos) s.replace(pos, from.size(), to);
  return s;
}

void expect_error(const std::string& text, const std::string& fragment) {
  auto p = parse(text);
  ASSERT_FALSE(p.ok()) << "accepted: " << text;
  EXPECT_EQ(p.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(p.error().message.find(fragment), std::string::npos) << p.error().message;
  EXPECT_EQ(p.error().message.find('\n'), std::string::npos);
  EXPECT_EQ(p.error().message.rfind("p.json", 0), 0u) << p.error().message;
}

TEST(ProgramFormat, GoodProgramRoundTrips) {
  auto p = parse(kGood);
  ASSERT_TRUE(p.ok()) << p.error().message;
  auto again = program_from_json(program_to_json(*p), "again");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(program_to_json(*again), program_to_json(*p));
}

TEST(ProgramFormat, BadInputIsOneLocatedLine) {
  expect_error(replaced(kGood, "[8, 128], \"dtype\": \"fp16\", \"graph_input\"", "[8, 0], \"dtype\": \"fp16\", \"graph_input\""),
               "$.tensors[0].shape[1]");
  expect_error(replaced(kGood, "[8, 128], \"dtype\": \"fp16\", \"graph_input\"", "[-8, 128], \"dtype\": \"fp16\", \"graph_input\""),
               "$.tensors[0].shape[0]");
  expect_error(replaced(kGood, "\"fp16\", \"graph_input\"", "\"fp17\", \"graph_input\""), "unknown dtype 'fp17'");
  expect_error(replaced(kGood, "\"graph_input\": true}", "\"graph_input\": true, \"dim_order\": [0, 0]}"),
               "not a permutation");
  expect_error(replaced(kGood, "\"(d0, d1) -> (d0, d1)\", \"(d0", "\"(d0, d1) -> (d0)\", \"(d0"),
               "map has 1 results but tensor 'x' has rank 2");
  expect_error(replaced(kGood, "\"(d0, d1) -> (d0, d1)\", \"(d0", "\"(d0, d1) -> (d1, d0)\", \"(d0"),
               "d0 indexes dim 0 of 'y' (size 8) but also dim 1 of 'x' (size 128)");
  expect_error(replaced(kGood, "\"inputs\": [\"x\"]", "\"inputs\": [\"z\"]"), "no tensor named 'z'");
  expect_error(replaced(kGood, "\"pointwise\"", "\"conv\""), "expected \"pointwise\"");
  expect_error(replaced(kGood, "[\"parallel\", \"parallel\"]", "[\"parallel\", \"reduction\"]"),
               "reduction iterator d1 indexes an output");
  expect_error(replaced(kGood, ", \"graph_input\": true", ""), "read before any op writes it");
  expect_error(replaced(kGood, "\"tensors\"", "\"tensorz\""), "unknown key \"tensorz\" (did you mean \"tensors\"?)");
}

// load_time marks a graph input known when the model is loaded; anywhere else it is bad input.
TEST(ProgramFormat, LoadTimeOnlyOnGraphInputs) {
  auto p = parse(replaced(kGood, "\"graph_input\": true}", "\"graph_input\": true, \"load_time\": true}"));
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_TRUE(p->tensors[0].load_time);
  auto again = program_from_json(program_to_json(*p), "again");
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->tensors[0].load_time);
  EXPECT_NE(program_to_text(*p).find("\"load_time\": true"), std::string::npos);
  expect_error(replaced(kGood, "\"graph_output\": true}", "\"graph_output\": true, \"load_time\": true}"),
               "$.tensors[1].load_time: expected only on a graph input");
  expect_error(replaced(kGood, "\"graph_input\": true}", "\"graph_input\": true, \"load_time\": 1}"),
               "$.tensors[0].load_time");
}


// A stride-2 3x3 convolution over a pre-padded input, written with linalg's affine sums.
const char* kConv = R"J({"name": "conv", "tensors": [
  {"name": "x", "shape": [1, 8, 17, 17], "dtype": "fp16", "graph_input": true},
  {"name": "w", "shape": [16, 8, 3, 3], "dtype": "fp16", "graph_input": true},
  {"name": "y", "shape": [1, 16, 8, 8], "dtype": "fp16", "graph_output": true}],
 "ops": [{"name": "conv", "kind": "reduction", "payload": "conv2d", "inputs": ["x", "w"], "outputs": ["y"],
  "iterator_types": ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"],
  "indexing_maps": ["(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, 2*d2 + d5, d3 * 2 + d6)",
                    "(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)",
                    "(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)"]}]})J";

TEST(ProgramFormat, AffineSums) {
  int n = 0;
  auto e = parse_affine_exprs("(d0, d1, d2) -> (d0 * 2 + d1, 3*d2 + 5, 7, d1)", &n);
  ASSERT_TRUE(e.ok()) << e.error().message;
  ASSERT_EQ(e->size(), 4u);
  EXPECT_EQ((*e)[0].terms.size(), 2u);
  EXPECT_EQ((*e)[0].terms[0].coeff, 2);
  EXPECT_EQ((*e)[1].offset, 5);
  EXPECT_TRUE((*e)[2].terms.empty());
  EXPECT_EQ(simple_var((*e)[3]), 1);
  EXPECT_EQ(simple_var((*e)[0]), kSummed);
  EXPECT_EQ(format_affine_exprs(*e, 3), "(d0, d1, d2) -> (d0 * 2 + d1, d2 * 3 + 5, 7, d1)");
  EXPECT_EQ(expr_max((*e)[0], {4, 3, 1}), 3 * 2 + 2);
  EXPECT_FALSE(parse_affine_exprs("(d0) -> (d0 + d0)", &n).ok());
  EXPECT_FALSE(parse_affine_exprs("(d0) -> (0 * d0)", &n).ok());
  EXPECT_FALSE(parse_affine_exprs("(d0) -> (d0 + 1 + 2)", &n).ok());
  EXPECT_FALSE(parse_affine_exprs("(d0) -> (d0 - 1)", &n).ok());
  EXPECT_FALSE(parse_affine_exprs("(d0) -> (d0 * 99999999999999)", &n).ok());
  EXPECT_FALSE(parse_affine_map("(d0, d1) -> (d0 + d1)", &n).ok());  // the plain parser keeps rejecting sums
}

TEST(ProgramFormat, ConvolutionMapsValidateAndRoundTrip) {
  auto p = parse(kConv);
  ASSERT_TRUE(p.ok()) << p.error().message;
  const Op& op = p->ops[0];
  EXPECT_EQ(op.ranges, (std::vector<Dim>{1, 16, 8, 8, 8, 3, 3}));
  EXPECT_EQ(op.indexing_maps[0], (std::vector<VarId>{0, 4, kSummed, kSummed}));
  EXPECT_EQ(summed_vars(op), (std::vector<char>{0, 0, 1, 1, 0, 1, 1}));
  auto again = program_from_json(program_to_json(*p), "again");
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(program_to_text(*again), program_to_text(*p));
  // Out of bounds: 2*7 + 2 = 16 fits 17 rows, not 16.
  expect_error(replaced(kConv, "[1, 8, 17, 17]", "[1, 8, 16, 17]"), "reaches index 16 of dim 2 of 'x'");
  // A var that appears only in sums needs explicit ranges.
  const std::string flat = replaced(replaced(kConv, "[1, 16, 8, 8], \"dtype\": \"fp16\", \"graph_output\"",
                                             "[1, 16, 64], \"dtype\": \"fp16\", \"graph_output\""),
                                    "-> (d0, d1, d2, d3)\"]", "-> (d0, d1, d2 * 8 + d3)\"]");
  expect_error(flat, "d2 indexes no operand dim on its own");
  auto ranged = parse(replaced(flat, "\"indexing_maps\"", "\"ranges\": [1, 16, 8, 8, 8, 3, 3], \"indexing_maps\""));
  ASSERT_TRUE(ranged.ok()) << ranged.error().message;
  EXPECT_NE(program_to_text(*ranged).find("\"ranges\": [1, 16, 8, 8, 8, 3, 3]"), std::string::npos);
  expect_error(replaced(flat, "\"indexing_maps\"", "\"ranges\": [1, 16, 8, 9, 8, 3, 3], \"indexing_maps\""),
               "reaches index");
}

TEST(ProgramFormat, ConstantsSelectOnInputsOnly) {
  // An input may read one index of a larger dim (a select); an output dim > 1 needs a var.
  auto sel = parse(replaced(replaced(kGood, "[8, 128], \"dtype\": \"fp16\", \"graph_input\"", "[3, 8, 128], \"dtype\": \"fp16\", \"graph_input\""),
                            "[\"(d0, d1) -> (d0, d1)\",", "[\"(d0, d1) -> (2, d0, d1 + 0)\","));
  ASSERT_TRUE(sel.ok()) << sel.error().message;
  expect_error(replaced(kGood, "\"(d0, d1) -> (d0, d1)\"]", "\"(d0, d1) -> (d0, 0)\"]"), "needs an iteration variable");
}

TEST(ProgramFormat, GivenRangesAllowPrefixSlices) {
  // x[:, :128] read with explicit ranges: d1 is a prefix of x's dim, so it is not plain there.
  const std::string wide = replaced(kGood, "[8, 128], \"dtype\": \"fp16\", \"graph_input\"", "[8, 256], \"dtype\": \"fp16\", \"graph_input\"");
  expect_error(wide, "d1 indexes");
  auto p = parse(replaced(wide, "\"indexing_maps\"", "\"ranges\": [8, 128], \"indexing_maps\""));
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->ops[0].indexing_maps[0], (std::vector<VarId>{0, kSummed}));
  EXPECT_EQ(summed_vars(p->ops[0]), (std::vector<char>{0, 1}));
  auto again = program_from_json(program_to_json(*p), "again");
  ASSERT_TRUE(again.ok()) << again.error().message;
  expect_error(replaced(wide, "\"indexing_maps\"", "\"ranges\": [8, 300], \"indexing_maps\""), "d1 indexes");
}

}  // namespace
}  // namespace sp::program
