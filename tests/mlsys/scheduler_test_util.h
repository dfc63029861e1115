// Helpers shared by the scheduler tests: problem paths in tests/data and an exactness check of a
// schedule against the evaluator.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "mlsys/evaluator.h"
#include "mlsys/problem.h"
#include "mlsys/solution.h"

namespace sp::mlsys::testing {

inline std::string data_path(const std::string& rel) { return std::string(SCRATCHPLAN_DATA_DIR) + "/mlsys2026/" + rel; }

inline Problem load_problem(const std::string& rel) {
  auto p = read_problem(data_path(rel));
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
  return p.ok() ? *p : Problem{};
}

// The schedule is valid and every reported latency equals the evaluator's exactly.
inline void expect_exact(const Problem& p, const Solution& s, const RuleOptions& rules = {}) {
  Evaluation ev = evaluate(p, s, rules);
  EXPECT_TRUE(ev.valid) << (ev.errors.empty() ? "" : ev.errors.front());
  ASSERT_EQ(ev.subgraphs.size(), s.subgraphs.size());
  for (std::size_t i = 0; i < s.subgraphs.size(); ++i)
    EXPECT_EQ(s.subgraphs[i].reported_latency, ev.subgraphs[i].latency) << "subgraph " << i;
}

}  // namespace sp::mlsys::testing
