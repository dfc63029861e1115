// `scratchplan evaluate` end to end: results, exit codes, and bad input (one-line errors
// naming the file and the location, exit 2, never a crash).
#include <gtest/gtest.h>

#include "cli/cli_test_util.h"
#include "core/json_reader.h"

namespace sp {
namespace {

using testing::count_lines;
using testing::run_cli;
using testing::temp_file;

const std::string kProblem = R"({
  "widths": [128,128,128], "heights": [128,128,128],
  "inputs": [[0],[1]], "outputs": [[1],[2]],
  "base_costs": [1000,100], "op_types": ["Pointwise","Pointwise"],
  "fast_memory_capacity": 35000, "slow_memory_bandwidth": 10, "native_granularity": [128,128]})";
const std::string kSolution = R"({"subgraphs": [[0,1]], "granularities": [[128,128,1]],
  "tensors_to_retain": [[]], "traversal_orders": [null], "subgraph_latencies": [3276.8]})";

TEST(CliEvaluate, ValidScheduleExitsZero) {
  auto r = run_cli("evaluate " + temp_file("p.json", kProblem) + " " + temp_file("s.json", kSolution) + " --check-reported");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("total latency: 3276.8"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("valid: yes"), std::string::npos);
}

TEST(CliEvaluate, JsonOutputParses) {
  auto r = run_cli("evaluate " + temp_file("p.json", kProblem) + " " + temp_file("s.json", kSolution) + " --json --verbose");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = Json::parse(r.out);
  EXPECT_TRUE(j["valid"].get<bool>());
  EXPECT_DOUBLE_EQ(j["total"].get<double>(), 3276.8);
  EXPECT_EQ(j["subgraphs"][0]["peak_working_set"].get<int64_t>(), 32768);
}

TEST(CliEvaluate, InvalidScheduleExitsTwoAndListsErrors) {
  std::string sol = R"({"subgraphs": [[1],[0]], "granularities": [[256,128,1],[128,128,1]],
    "tensors_to_retain": [[],[]], "subgraph_latencies": [0,0]})";
  auto r = run_cli("evaluate " + temp_file("p.json", kProblem) + " " + temp_file("bad_s.json", sol));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("valid: no"), std::string::npos);
  EXPECT_NE(r.out.find("exceeds native"), std::string::npos);
  EXPECT_NE(r.out.find("not available"), std::string::npos);
}

TEST(CliEvaluate, MismatchedReportedLatencyIsFlagged) {
  std::string sol = R"({"subgraphs": [[0,1]], "granularities": [[128,128,1]],
    "tensors_to_retain": [[]], "subgraph_latencies": [1.0]})";
  auto r = run_cli("evaluate " + temp_file("p.json", kProblem) + " " + temp_file("m.json", sol) + " --check-reported");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("differ from the recomputed ones: 1 of 1"), std::string::npos) << r.out;
}

struct BadCase {
  std::string name;      // test label
  std::string problem;   // problem JSON text
  std::string solution;  // solution JSON text
  std::string expect;    // substring of the error line
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class CliEvaluateBadInput : public ::testing::TestWithParam<BadCase> {};

TEST_P(CliEvaluateBadInput, OneLineErrorExitTwo) {
  const BadCase& c = GetParam();
  std::string pf = temp_file(c.name + "_p.json", c.problem);
  std::string sf = temp_file(c.name + "_s.json", c.solution);
  auto r = run_cli("evaluate " + pf + " " + sf);
  EXPECT_EQ(r.exit_code, 2) << r.err << r.out;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(c.expect), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(c.name + "_"), std::string::npos) << "error must name the file: " << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  auto pos = s.find(from);
  if (pos != std::string::npos) s.replace(pos, from.size(), to);
  return s;
}

INSTANTIATE_TEST_SUITE_P(
    Cli, CliEvaluateBadInput,
    ::testing::Values(
        BadCase{"truncated", kProblem.substr(0, 60), kSolution, "invalid JSON"},
        BadCase{"empty", "", kSolution, "empty file"},
        BadCase{"wrongtype", replace(kProblem, "[128,128,128], \"heights\"", "[128,\"x\",128], \"heights\""), kSolution,
                "$.widths[1]: expected an integer"},
        BadCase{"missingfield", replace(kProblem, "\"slow_memory_bandwidth\": 10,", ""), kSolution,
                "missing required field \"slow_memory_bandwidth\""},
        BadCase{"negative", replace(kProblem, "[128,128,128], \"heights\"", "[128,-5,128], \"heights\""), kSolution,
                "$.widths[1]: expected a positive integer"},
        BadCase{"zero", replace(kProblem, "\"heights\": [128,128,128]", "\"heights\": [128,0,128]"), kSolution,
                "$.heights[1]: expected a positive integer"},
        BadCase{"missingtensor", replace(kProblem, "[[0],[1]]", "[[0],[7]]"), kSolution, "tensor 7 does not exist"},
        BadCase{"producedtwice", replace(kProblem, "[[1],[2]]", "[[1],[1]]"), kSolution, "produced twice"},
        BadCase{"cycle", replace(replace(kProblem, "[[0],[1]]", "[[2],[1]]"), "[[1],[2]]", "[[1],[2]]"), kSolution, "cycle"},
        BadCase{"badoptype", replace(kProblem, "\"Pointwise\",\"Pointwise\"", "\"Pointwise\",\"Conv\""), kSolution,
                "expected \"MatMul\" or \"Pointwise\""},
        BadCase{"zerocapacity", replace(kProblem, "35000", "0"), kSolution, "fast_memory_capacity"},
        BadCase{"travcount", kProblem, replace(kSolution, "[null]", "[null, null]"), "$.traversal_orders: expected 1"},
        BadCase{"solmissing", kProblem, replace(kSolution, "\"tensors_to_retain\": [[]],", ""), "tensors_to_retain"},
        BadCase{"solbadop", kProblem, replace(kSolution, "[[0,1]]", "[[0,9]]"), "op 9 does not exist"},
        BadCase{"solzerogran", kProblem, replace(kSolution, "[[128,128,1]]", "[[128,0,1]]"),
                "$.granularities[0][1]: expected a positive integer"},
        BadCase{"solgranlen", kProblem, replace(kSolution, "[[128,128,1]]", "[[128,128]]"), "expected [w, h, k]"},
        BadCase{"solnotobject", kProblem, "[1,2,3]", "expected an object"}),
    [](const ::testing::TestParamInfo<BadCase>& i) { return i.param.name; });

TEST(CliEvaluate, MissingFileAndUnknownFlag) {
  auto r = run_cli("evaluate /nonexistent/p.json /nonexistent/s.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent/p.json"), std::string::npos);
  auto u = run_cli("evaluate a b --frobnicate");
  EXPECT_EQ(u.exit_code, 2);
  auto m = run_cli("evaluate a b --mm-compute fast");
  EXPECT_EQ(m.exit_code, 2);
}

}  // namespace
}  // namespace sp
