// torch-spyre's September joint contract (lx/coopt.h): the objective ladder, the cut stage,
// cost expressions and relayout copies, on small problems whose optimum is known by hand.
#include <gtest/gtest.h>

#include "core/json_reader.h"
#include "lx/coopt.h"

namespace sp::lx {
namespace {

CdProblem problem(const std::string& text, int64_t capacity, int64_t alignment = 1) {
  auto j = parse_json_text(text, "<test>");
  EXPECT_TRUE(j.ok());
  auto p = division_problem_from_json(*j, "<test>", capacity, alignment);
  EXPECT_TRUE(p.ok()) << p.error().message;
  return p.ok() ? *p : CdProblem{};
}

const char* kWhole = R"({"output_splits": {}, "reduction_splits": {}})";

TEST(LxLadder, BalanceAmongEqualCores) {
  // a: [{1:4}, {1:2,2:2}]: both 4 cores; the balanced one (sum of squares 8 < 16) wins.
  CdProblem p = problem(R"([{"name": "a", "size": 64, "uses": [0, 1], "residency_reason": "barred",
      "core_divisions": [{"output_splits": {"1": 4}, "reduction_splits": {}},
                         {"output_splits": {"1": 2, "2": 2}, "reduction_splits": {}}]}])", 256);
  auto s = solve_division_ladder(p, {});
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->division, std::vector<int>{1});
  EXPECT_EQ(s->cores, 4);
  EXPECT_EQ(s->split_sq, 8);
  EXPECT_TRUE(s->optimal);
}

TEST(LxLadder, CutsOfATiledOutputAndThePairTable) {
  // out (Output) [whole, tiled d0:2]; c tiled only, pairs (0,0),(1,0); a whole-only sink after c.
  const std::string text = std::string(R"([
      {"name": "out", "size": 64, "uses": [0, 1], "boundary": "Output", "residency_reason": "x",
       "core_divisions": [)") + kWhole + R"(, {"output_splits": {"1": 2}, "reduction_splits": {}, "tiling": [[2, false]]}]},
      {"name": "c", "size": 64, "uses": [1, 2], "parents": ["out"], "cd_parent_matches": {"out": [[0, 0], [1, 0]]},
       "residency_reason": "x", "core_divisions": [{"output_splits": {}, "reduction_splits": {}, "tiling": [[2, false]]}]},
      {"name": "sink", "size": 16, "uses": [2, 3], "parents": ["c"], "cd_parent_matches": {"c": [[0, 0]]},
       "residency_reason": "x", "core_divisions": [)" + kWhole + "]}]";
  CdProblem p = problem(text, 1 << 20);
  EXPECT_EQ(ladder_cuts(p, {0, 0, 0}), 1);  // c (its reader is untileable)
  EXPECT_EQ(ladder_cuts(p, {1, 0, 0}), 2);  // a tiled graph output is always a cut
  auto s = solve_division_ladder(p, {});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->division[0], 0);
  EXPECT_EQ(s->cuts, 1);
  // Tiling divides the footprint by the output tile count: 64 B split 2 and tiled 2 = 16 B.
  EXPECT_EQ(ladder_footprint(p.buffers[0], 1), 16);
}

TEST(LxLadder, ExpressionIsTheOnlyObjective) {
  CdProblem p = problem(std::string(R"([{"name": "b0", "size": 128, "uses": [0, 2], "core_divisions": [)") + kWhole +
                            R"(]}, {"name": "b1", "size": 128, "uses": [1, 3], "core_divisions": [)" + kWhole + "]}]",
                        1 << 20);
  // 5 * is_lx(b1) - is_lx(b0): b1 out, b0 in, although both fit.
  auto e = cost_expr_from_json(*parse_json_text(R"(["add", ["mul", 5, ["is_lx", 1]], ["mul", -1, ["is_lx", 0]]])", "<e>"),
                             "<e>", 2);
  ASSERT_TRUE(e.ok()) << e.error().message;
  LadderOptions o;
  o.cost = &*e;
  auto s = solve_division_ladder(p, o);
  ASSERT_TRUE(s.ok());
  EXPECT_GE(s->address[0], 0);
  EXPECT_EQ(s->address[1], -1);
  EXPECT_EQ(s->objective, -1.0);
  EXPECT_TRUE(s->optimal);
}

TEST(LxLadder, ExpressionReaderRefusesBadTrees) {
  for (const char* bad : {R"(["nosuch", 1])", R"(["is_lx", 5])", R"(["pow", 1])", R"("x")", R"([])"}) {
    auto j = parse_json_text(bad, "<e>");
    ASSERT_TRUE(j.ok());
    EXPECT_FALSE(cost_expr_from_json(*j, "<e>", 2).ok()) << bad;
  }
}

TEST(LxLadder, RelayoutCopyCoupling) {
  // S -> C with only (0,0) listed; copy X serves C at (0,1). C must not take 0 (penalty).
  const std::string text = R"([
      {"name": "S", "size": 128, "uses": [0, 1], "core_divisions": [{"output_splits": {"1": 2}, "reduction_splits": {}},
                                                                   {"output_splits": {"2": 2}, "reduction_splits": {}}]},
      {"name": "C", "size": 128, "uses": [1, 2], "parents": ["S"], "cd_parent_matches": {"S": [[0, 0]]},
       "core_divisions": [{"output_splits": {"1": 2}, "reduction_splits": {}}, {"output_splits": {"2": 2}, "reduction_splits": {}}]},
      {"name": "X", "size": 128, "uses": [1], "relayout_copy": true, "relayout_parent": "S",
       "relayout_options": [[0, "C", 1]], "core_divisions": [{"output_splits": {"9": 2}, "reduction_splits": {}}]}])";
  CdProblem p = problem(text, 1 << 20);
  // 500 (1 - is_lx S) + 1000 [division C == 0] + is_lx X * [100][division S]
  auto e = cost_expr_from_json(*parse_json_text(R"(["add", ["mul", 500, ["add", 1, ["mul", -1, ["is_lx", 0]]]],
      ["mul", 1000, ["delta", ["division", 1], 0]], ["charge", ["is_lx", 2], ["division", 0], 100]])", "<e>"), "<e>", 3);
  ASSERT_TRUE(e.ok()) << e.error().message;
  LadderOptions o;
  o.cost = &*e;
  auto s = solve_division_ladder(p, o);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->objective, 100.0);
  ASSERT_EQ(s->served.size(), 1u);
  EXPECT_EQ(s->served[0].copy, 2);
  // The checker: without the served edge the same plan breaks S's gate and X serves nothing.
  EXPECT_FALSE(check_division_plan(p, s->division, s->address).ok());
  EXPECT_TRUE(check_division_plan(p, s->division, s->address, s->served).ok());
  // The ladder keeps the copy out.
  auto l = solve_division_ladder(p, {});
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->address[2], -1);
  EXPECT_TRUE(l->served.empty());
}

}  // namespace
}  // namespace sp::lx
