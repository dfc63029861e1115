// Golden plan summaries of the bundled example programs (32 cores, every technique on), the
// plan verb end to end, and bad input through the CLI (exit 2, one-line errors).
#include <gtest/gtest.h>

#include <fstream>

#include "cli/cli_test_util.h"
#include "lx/lx.h"
#include "program/builder.h"
#include "program/program.h"

namespace sp::lx {
namespace {

struct Golden {
  const char* name;
  Bytes hbm, baseline, bound;
  int on_lx, values, clones;
};

// Regenerate with: scratchplan plan examples/programs/<name>.json -o plan.json (totals, search).
const Golden kGolden[] = {
    {"softmax_lastdim", 16777216, 67633152, 16777216, 5, 7, 1},
    {"softmax_dim0", 16777216, 67117056, 16777216, 5, 7, 1},
    {"layernorm", 33570816, 219693056, 33570816, 8, 12, 1},
    {"rmsnorm", 33562624, 135274496, 33562624, 5, 8, 1},
    {"mlp", 71303168, 104857600, 71303168, 2, 6, 0},
    {"swiglu", 73400320, 121634816, 73400320, 5, 10, 1},
    {"sdpa", 16777216, 427819008, 16777216, 7, 11, 0},
    {"gqa", 10485760, 220200960, 10485760, 7, 11, 0},
    {"moe_mlp", 2083065856, 2112425984, 2083065856, 1, 13, 0},  // partial sums of two K splits (span limit)
    {"matmul", 50331648, 50331648, 50331648, 0, 3, 0},
    {"bmm", 25165824, 25165824, 25165824, 0, 3, 0},
};

TEST(LxExamples, BundledProgramsMatchTheirGoldenPlanSummaries) {
  for (const Golden& g : kGolden) {
    auto prog = program::read_program(std::string(SCRATCHPLAN_SOURCE_DIR) + "/examples/programs/" + g.name + ".json");
    ASSERT_TRUE(prog.ok()) << prog.error().message;
    Options o;
    o.time_limit = 5.0;
    auto plan = plan_program(*prog, Hardware{}, o);
    ASSERT_TRUE(plan.ok()) << g.name << ": " << plan.error().message;
    EXPECT_TRUE(check_plan(*plan).ok());
    int on = 0;
    for (const auto& v : plan->values) on += !v.lx.empty();
    EXPECT_EQ(plan->totals.hbm_read + plan->totals.hbm_write, g.hbm) << g.name;
    EXPECT_EQ(plan->totals.baseline_hbm, g.baseline) << g.name;
    EXPECT_EQ(plan->totals.lower_bound_hbm, g.bound) << g.name;
    EXPECT_EQ(on, g.on_lx) << g.name;
    EXPECT_EQ(static_cast<int>(plan->values.size()), g.values) << g.name;
    EXPECT_EQ(plan->clones, g.clones) << g.name;
    EXPECT_LE(plan->totals.time_s, plan->totals.baseline_time_s) << g.name;
  }
}

TEST(LxExamples, PlanVerbWritesPlanReportAndSvg) {
  std::string out = testing::temp_file("lx_plan.json", "");
  std::string svg = testing::temp_file("lx_plan.svg", "");
  auto r = testing::run_cli("plan " + std::string(SCRATCHPLAN_SOURCE_DIR) +
                            "/examples/programs/softmax_lastdim.json --cores 32 -o " + out + " --svg " + svg + " --report");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("HBM:"), std::string::npos);
  EXPECT_NE(r.out.find("LX @"), std::string::npos);
  auto j = read_json_file(out);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["format"], "scratchplan-lx-plan");
  EXPECT_EQ((*j)["totals"]["hbm_bytes"], 16777216);
  std::ifstream in(svg);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("<svg"), std::string::npos);
  EXPECT_NE(text.find("<rect"), std::string::npos);
  // stage flags select the seed's stages
  auto s1 = testing::run_cli("plan " + std::string(SCRATCHPLAN_SOURCE_DIR) + "/examples/programs/softmax_lastdim.json --stage 1");
  ASSERT_EQ(s1.exit_code, 0) << s1.err;
  EXPECT_NE(s1.out.find("HBM 67633152 B"), std::string::npos) << s1.out;
}

std::string program_text(const std::string& tensors, const std::string& ops) {
  return R"({"format": "scratchplan-program", "version": 1, "name": "bad", "tensors": [)" + tensors +
         R"(], "ops": [)" + ops + "]}";
}

void expect_bad(const std::string& file, const std::string& args, const std::string& needle) {
  auto r = testing::run_cli("plan " + file + " " + args);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(testing::count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
}

TEST(LxExamples, BadInputExitsTwoWithOneLineErrors) {
  const std::string x = R"({"name": "x", "shape": [64, 64], "dtype": "fp16", "graph_input": true})";
  const std::string y = R"({"name": "y", "shape": [64, 64], "dtype": "fp16", "graph_output": true})";
  const std::string t = R"({"name": "t", "shape": [64, 64], "dtype": "fp16"})";
  auto pw = [](const std::string& name, const std::string& in, const std::string& out) {
    return R"({"name": ")" + name + R"(", "kind": "pointwise", "payload": "exp", "inputs": [")" + in +
           R"("], "outputs": [")" + out +
           R"J("], "iterator_types": ["parallel", "parallel"], "indexing_maps": ["(d0, d1) -> (d0, d1)", "(d0, d1) -> (d0, d1)"]})J";
  };
  // missing tensor
  expect_bad(testing::temp_file("lx_missing.json", program_text(x + "," + y, pw("a", "nope", "y"))), "", "nope");
  // use before produce
  expect_bad(testing::temp_file("lx_order.json", program_text(x + "," + t + "," + y, pw("a", "t", "y") + "," + pw("b", "x", "t"))),
             "", "t");
  // inconsistent shapes
  const std::string z = R"({"name": "z", "shape": [64, 32], "dtype": "fp16", "graph_output": true})";
  expect_bad(testing::temp_file("lx_shape.json", program_text(x + "," + z, pw("a", "x", "z"))), "", "z");
  // more cores than the hardware has
  std::string good = testing::temp_file("lx_good.json", program_text(x + "," + y, pw("a", "x", "y")));
  expect_bad(good, "--cores 33", "--cores: expected an integer 1..32, got 33");
  std::string hw = testing::temp_file("lx_hw.json", R"({"max_cores": 8})");
  expect_bad(good, "--hardware " + hw + " --cores 16", "1..8");
  expect_bad(good, "--hardware " + testing::temp_file("lx_hw_bad.json", R"({"alignment": 0})"), "alignment");
  auto ok = testing::run_cli("plan " + good + " --hardware " + hw + " --cores 8");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

}  // namespace
}  // namespace sp::lx
