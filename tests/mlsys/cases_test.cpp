// Every case of tests/data/mlsys2026/examples/cases.json (the PROBLEM.md examples and the
// negative/edge cases of RULES.md) gives the expected validity and total; for the PROBLEM.md
// examples the per-subgraph latencies equal those printed in the solution files.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "mlsys/evaluator.h"

namespace sp::mlsys {
namespace {

const std::string kExamples = std::string(SCRATCHPLAN_DATA_DIR) + "/mlsys2026/examples/";

RuleOptions rules_from_flags(const Json& flags) {
  RuleOptions r;
  for (std::size_t i = 0; i < flags.size(); ++i) {
    std::string f = flags[i].get<std::string>();
    if (f == "--mm-compute") r.mm_compute = flags[++i].get<std::string>() == "native" ? MatMulCompute::kNative : MatMulCompute::kOpK;
    else if (f == "--mm-compute=native") r.mm_compute = MatMulCompute::kNative;
    else if (f == "--allow-super-native") r.allow_super_native = true;
    else if (f == "--no-reuse-for-null-traversal") r.no_reuse_for_null_traversal = true;
    else if (f == "--strict-ephemeral") r.strict_ephemeral = true;
    else if (f == "--spill-ephemeral") r.spill_ephemeral = true;
    else if (f == "--resident-only-if-consumed") r.resident_only_if_consumed = true;
    else ADD_FAILURE() << "unknown flag in cases.json: " << f;
  }
  return r;
}

bool rel_close(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max({1.0, std::fabs(a), std::fabs(b)}); }

TEST(MlsysCases, AllCasesMatch) {
  auto cases = read_json_file(kExamples + "cases.json");
  ASSERT_TRUE(cases.ok()) << cases.error().message;
  int checked = 0, per_subgraph_checked = 0;
  for (const Json& c : *cases) {
    const std::string name = c["name"].get<std::string>();
    SCOPED_TRACE(name);
    auto problem = read_problem(kExamples + c["problem"].get<std::string>());
    ASSERT_TRUE(problem.ok()) << problem.error().message;
    auto sol = read_solution(kExamples + c["solution"].get<std::string>(), *problem);
    ASSERT_TRUE(sol.ok()) << sol.error().message;
    Json flags = c.contains("flags") ? c["flags"] : Json::array();
    Evaluation ev = evaluate(*problem, *sol, rules_from_flags(flags));
    EXPECT_EQ(ev.valid, c["expect_valid"].get<bool>()) << (ev.errors.empty() ? "" : ev.errors.front());
    if (!c["expect_total"].is_null()) {
      EXPECT_TRUE(rel_close(ev.total, c["expect_total"].get<double>())) << ev.total;
      if (c["expect_valid"].get<bool>() && flags.empty()) {
        for (const SubgraphEvaluation& s : ev.subgraphs) {
          EXPECT_TRUE(rel_close(s.latency, s.reported_latency)) << s.latency << " vs " << s.reported_latency;
          ++per_subgraph_checked;
        }
      }
    }
    ++checked;
  }
  EXPECT_GE(checked, 25);
  EXPECT_GE(per_subgraph_checked, 10);
}

// The worked numbers of PROBLEM.md that are not in the solution files: working sets.
TEST(MlsysCases, WorkingSetsOfWorkedExamples) {
  auto check = [](const std::string& prob, const std::string& sol, std::vector<Elements> peaks) {
    auto p = read_problem(kExamples + prob);
    ASSERT_TRUE(p.ok());
    auto s = read_solution(kExamples + sol, *p);
    ASSERT_TRUE(s.ok());
    Evaluation ev = evaluate(*p, *s);
    ASSERT_EQ(ev.subgraphs.size(), peaks.size());
    for (std::size_t i = 0; i < peaks.size(); ++i) EXPECT_EQ(ev.subgraphs[i].peak_working_set, peaks[i]) << sol << " " << i;
  };
  check("ex4_problem.json", "ex4b_solution.json", {20480});  // RULES.md 1.9
  check("ex5_problem.json", "ex5b_solution.json", {40960});  // PROBLEM.md Example 5B
  check("ex3_problem.json", "ex3b_solution.json", {32768, 49152});
  check("ex5_problem.json", "ex5a_solution_oom.json", {65536});
}

}  // namespace
}  // namespace sp::mlsys
