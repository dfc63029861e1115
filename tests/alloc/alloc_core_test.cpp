// Model checks, the independent validator, CSV/JSON readers and the solvers on small instances
// (exact results compared with brute force over all first-fit orders).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "alloc/generate.h"
#include "alloc/internal/exact.h"
#include "alloc/internal/heuristics.h"
#include "alloc/internal/select_bound.h"
#include "alloc/io.h"
#include "alloc/problem.h"
#include "alloc/solver.h"
#include "alloc/validator.h"
#include "alloc_test_util.h"
#include "core/rng.h"

namespace sp::alloc {
namespace {

// The CLI's direct JSON writer prints what the library's JSON tree prints, byte for byte:
// placed and spilled buffers, ids that need escaping (quotes, backslashes, control and
// non-ASCII characters), and a plan without buffers.
TEST(AllocIo, DirectJsonTextMatchesTheJsonTree) {
  Problem p;
  p.capacity = 96;
  p.buffers.push_back(testing::buf("plain", 64, 0, 2));
  p.buffers.push_back(testing::buf("quote\"back\\slash", 64, 1, 3));
  p.buffers.push_back(testing::buf("tab\there \xc3\xa9t\xc3\xa9", 32, 0, 3));
  SolveOptions o;
  o.objective = Objective::kSelect;
  o.time_limit = 1.0;
  auto r = solve(p, o);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(std::count(r->placement.offsets.begin(), r->placement.offsets.end(), kSpilled), 1);
  EXPECT_EQ(result_to_json_text(p, *r, o), result_to_json(p, *r, o).dump(1) + "\n");
  Problem none;
  SolveResult empty;
  EXPECT_EQ(result_to_json_text(none, empty, o), result_to_json(none, empty, o).dump(1) + "\n");
  // No capacity (kUnbounded) is written as null by both writers, not as the sentinel.
  EXPECT_TRUE(result_to_json(none, empty, o)["capacity"].is_null());
  EXPECT_NE(result_to_json_text(none, empty, o).find("\"capacity\": null,"), std::string::npos);
  EXPECT_EQ(result_to_json(p, *r, o)["capacity"], 96);
}

using testing::buf;

Problem random_problem(Rng& rng, int n, Time horizon, Size max_size) {
  Problem p;
  for (int i = 0; i < n; ++i) {
    Time s = rng.range(0, horizon - 1);
    p.buffers.push_back(buf("b" + std::to_string(i), rng.range(1, max_size), s, s + rng.range(1, 4)));
  }
  return p;
}

// Optimal height by brute force: every gravity solution is a lowest-fit over some order.
Size brute_force_height(const Problem& p) {
  std::vector<int> order(p.buffers.size());
  std::iota(order.begin(), order.end(), 0);
  Size best = kUnbounded;
  do {
    best = std::min(best, height(p, place_in_order(p, kUnbounded, order)));
  } while (std::next_permutation(order.begin(), order.end()));
  return best;
}

TEST(AllocModel, SpillCostFollowsTorchSpyre) {
  auto input = buffer_from_uses("input", 8, {0, 2, 4, 6}, true);
  auto inter = buffer_from_uses("intermediate", 8, {0, 2, 4}, false);
  ASSERT_TRUE(input.ok() && inter.ok());
  EXPECT_EQ(spill_cost(*input), 24);  // reads 4, served 3, not produced on chip
  EXPECT_EQ(spill_cost(*inter), 24);  // reads 2, + the producing write
  Buffer b = *inter;
  b.spill_cost = 5;
  EXPECT_EQ(spill_cost(b), 5);
}

TEST(AllocModel, CheckProblemRejectsBadInput) {
  Problem p;
  p.buffers = {buf("a", 4, 0, 2), buf("a", 4, 1, 3)};
  EXPECT_NE(check_problem(p).error().message.find("duplicate"), std::string::npos);
  p.buffers = {buf("a", -1, 0, 2)};
  EXPECT_NE(check_problem(p).error().message.find("negative size"), std::string::npos);
  p.buffers = {buf("a", 1, 2, 2)};
  EXPECT_NE(check_problem(p).error().message.find("<= start"), std::string::npos);
  p.buffers = {buf("a", 4, 0, 2), buf("b", 4, 1, 3)};
  p.buffers[0].fixed_offset = 0;
  p.buffers[1].fixed_offset = 2;
  EXPECT_NE(check_problem(p).error().message.find("collide"), std::string::npos);
  p.buffers[1].fixed_offset = 4;
  EXPECT_TRUE(check_problem(p).ok());
  // Two one-tick buffers that are each other's in-place parent: a cycle.
  p.buffers = {buf("a", 4, 0, 1), buf("b", 4, 0, 1)};
  p.buffers[0].in_place_parents = {1};
  p.buffers[1].in_place_parents = {0};
  EXPECT_NE(check_problem(p).error().message.find("cycle"), std::string::npos);
  p.buffers[1].in_place_parents = {};
  p.buffers[0].in_place_parents = {7};
  EXPECT_NE(check_problem(p).error().message.find("does not exist"), std::string::npos);
}

TEST(AllocModel, MaxLoadIsPeakLiveSize) {
  Problem p;
  p.buffers = {buf("a", 4, 0, 2), buf("b", 3, 1, 3), buf("c", 5, 2, 4)};
  EXPECT_EQ(max_load(p), 8);  // b + c at t=2 (a has ended)
}

TEST(AllocValidator, DetectsEachViolation) {
  Problem p;
  p.capacity = 10;
  p.buffers = {buf("a", 4, 0, 2), buf("b", 4, 1, 3)};
  p.buffers[1].alignment = 4;
  auto kinds = [&](const Placement& pl, bool all = false) {
    std::vector<ViolationKind> v;
    for (auto& i : validate(p, pl, all).violations) v.push_back(i.kind);
    return v;
  };
  EXPECT_TRUE(validate(p, {{0, 4}, {"", ""}}).ok());
  EXPECT_EQ(kinds({{0, 2}, {"", ""}}), (std::vector<ViolationKind>{ViolationKind::kMisaligned, ViolationKind::kOverlap}));
  EXPECT_EQ(kinds({{0, 8}, {"", ""}}), std::vector<ViolationKind>{ViolationKind::kOverCapacity});
  EXPECT_EQ(kinds({{0}, {""}}), std::vector<ViolationKind>{ViolationKind::kWrongLength});
  EXPECT_EQ(kinds({{-5, 4}, {"", ""}}), std::vector<ViolationKind>{ViolationKind::kNegativeOffset});
  EXPECT_EQ(kinds({{0, kSpilled}, {"", "x"}}, true), std::vector<ViolationKind>{ViolationKind::kSpillRequired});
  p.buffers[0].residency_reason = "barred";
  EXPECT_EQ(kinds({{0, 4}, {"", ""}}), std::vector<ViolationKind>{ViolationKind::kForcedPlaced});
  p.buffers[0].residency_reason.clear();
  p.buffers[0].fixed_offset = 4;
  EXPECT_EQ(kinds({{0, 4}, {"", ""}}), std::vector<ViolationKind>{ViolationKind::kFixedMoved});
}

TEST(AllocValidator, InPlaceHandOffOnlyAtParentBaseOnce) {
  Problem p;
  p.capacity = 100;
  p.buffers = {buf("parent", 40, 0, 2), buf("first", 20, 1, 4), buf("second", 5, 1, 2)};
  p.buffers[1].in_place_parents = {0};
  p.buffers[2].in_place_parents = {0};
  EXPECT_TRUE(validate(p, {{0, 0, 40}, {"", "", ""}}).ok());
  EXPECT_FALSE(validate(p, {{0, 10, 40}, {"", "", ""}}).ok());  // not at the base: overlap
  auto rep = validate(p, {{0, 0, 0}, {"", "", ""}});                // both children take the slot
  ASSERT_FALSE(rep.ok());
  EXPECT_EQ(rep.violations[0].kind, ViolationKind::kBadInPlace);
  p.buffers[1].in_place_parents.clear();  // undeclared: plain overlap
  EXPECT_EQ(validate(p, {{0, 0, 40}, {"", "", ""}}).violations.at(0).kind, ViolationKind::kOverlap);
}

TEST(AllocIo, CsvReadsAndReportsLines) {
  auto p = problem_from_csv("id,lower,upper,size\n0,0,3,10\n1,2,5,4\n", "t.csv");
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->buffers.size(), 2u);
  EXPECT_EQ(p->buffers[1].start, 2);
  EXPECT_EQ(p->buffers[1].end, 5);
  auto fixed = problem_from_csv("id,lower,upper,size,offset\n0,0,3,10,16\n1,2,5,4,\n", "t.csv");
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(fixed->buffers[0].fixed_offset, 16);
  EXPECT_EQ(fixed->buffers[1].fixed_offset, kNoFixedOffset);
  EXPECT_EQ(problem_from_csv("id,lower,upper\n", "t.csv").error().message, "t.csv:1: expected header 'id,lower,upper,size[,offset]'");
  EXPECT_EQ(problem_from_csv("id,lower,upper,size\n0,0,3,x\n", "t.csv").error().message, "t.csv:2: size: expected an integer, got 'x'");
  EXPECT_EQ(problem_from_csv("id,lower,upper,size\n0,0,3,-4\n", "t.csv").error().message, "t.csv:2: size: expected >= 0, got -4");
  EXPECT_EQ(problem_from_csv("id,lower,upper,size\n0,3,3,4\n", "t.csv").error().message, "t.csv:2: upper must be greater than lower");
  EXPECT_NE(problem_from_csv("id,lower,upper,size\n0,0,3,4\n0,1,2,4\n", "t.csv").error().message.find("duplicate id '0'"), std::string::npos);
  EXPECT_FALSE(problem_from_csv("id,lower,upper,size\n0,0,3\n", "t.csv").ok());
}

TEST(AllocIo, JsonReadsSpyreFieldsAndLocatesErrors) {
  auto j = parse_json_text(R"({"capacity": 512, "alignment": 128, "buffers": [
      {"id": "p", "size": 200, "uses": [0, 3]},
      {"id": "c", "size": 100, "uses": [3], "in_place_parents": ["p"], "spill_cost": 7},
      {"id": "x", "size": 1, "start": 1, "end": 2, "alignment": 1, "residency_reason": "op not allowed"}]})",
                           "t.json");
  ASSERT_TRUE(j.ok());
  auto p = problem_from_json(*j, "t.json");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->capacity, 512);
  EXPECT_EQ(p->buffers[0].end, 4);
  EXPECT_EQ(p->buffers[0].alignment, 128);
  EXPECT_EQ(p->buffers[1].in_place_parents, std::vector<int>{0});
  EXPECT_EQ(spill_cost(p->buffers[1]), 7);
  EXPECT_EQ(p->buffers[2].residency_reason, "op not allowed");
  auto round = problem_from_json(problem_to_json(*p), "round");
  ASSERT_TRUE(round.ok());
  EXPECT_EQ(round->buffers[1].in_place_parents, std::vector<int>{0});
  auto err = [](const char* text) {
    auto jj = parse_json_text(text, "t.json");
    return jj ? problem_from_json(*jj, "t.json").error().message : jj.error().message;
  };
  EXPECT_NE(err(R"({"buffers": [{"id": "a", "size": 1, "start": 0, "end": 1, "alignment": 3}]})").find("$.buffers[0].alignment: expected a power of two"), std::string::npos);
  EXPECT_NE(err(R"({"buffers": [{"id": "a", "size": -1, "start": 0, "end": 1}]})").find("$.buffers[0].size"), std::string::npos);
  EXPECT_NE(err(R"({"buffers": [{"id": "a", "size": 1, "start": 3, "end": 1}]})").find("$.buffers[0].end: expected end > start"), std::string::npos);
  EXPECT_NE(err(R"({"buffers": [{"id": "a", "size": 1, "start": 0, "end": 1, "in_place_parents": ["zz"]}]})").find("'zz' does not exist"), std::string::npos);
  EXPECT_NE(err(R"({"buffers": [{"id": "a", "size": 1, "uses": [2, 1]}]})").find("strictly increasing"), std::string::npos);
}

TEST(AllocSolvers, HeuristicsGiveValidPlans) {
  Rng rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    Problem p = random_problem(rng, 40, 30, 50);
    p.capacity = max_load(p) + 20;
    for (auto k : {SolverKind::kGreedy, SolverKind::kFirstFit, SolverKind::kBestFit, SolverKind::kGreedyBySize, SolverKind::kSweep}) {
      SolveOptions o;
      o.solver = k;
      o.objective = Objective::kSelect;
      auto r = solve(p, o);
      ASSERT_TRUE(r.ok()) << solver_kind_name(k);
      EXPECT_TRUE(validate(p, r->placement).ok()) << solver_kind_name(k);
      o.objective = Objective::kPack;
      auto q = solve(p, o);
      ASSERT_TRUE(q.ok());
      EXPECT_GE(q->height, max_load(p));
    }
  }
}

// A lean solve (a planner's inner loop) is the named placer's plan as the full solve returns it,
// valid, without the checks around it; it refuses what is not a heuristic placer's pack.
TEST(AllocSolvers, LeanSolveIsThePlacersPlan) {
  Rng rng(9);
  for (int trial = 0; trial < 20; ++trial) {
    Problem p = random_problem(rng, 30, 30, 50);
    p.buffers[0].fixed_offset = 0;  // a pinned obstacle, as the NKI planner's questions have
    p.capacity = max_load(p) + 20;
    for (auto k : {SolverKind::kGreedy, SolverKind::kFirstFit, SolverKind::kBestFit, SolverKind::kGreedyBySize,
                   SolverKind::kSweep, SolverKind::kOnline}) {
      SolveOptions o;
      o.solver = k;
      auto full = solve(p, o);
      o.lean = true;
      auto lean = solve(p, o);
      ASSERT_TRUE(full.ok() && lean.ok()) << solver_kind_name(k);
      EXPECT_EQ(lean->placement.offsets, full->placement.offsets) << solver_kind_name(k);
      EXPECT_EQ(lean->height, full->height);
      EXPECT_EQ(lean->feasible, full->feasible);
      EXPECT_TRUE(validate(p, lean->placement, true, kUnbounded).ok()) << solver_kind_name(k);  // as solve() judges a pack
    }
  }
  Problem p = random_problem(rng, 5, 5, 5);
  SolveOptions o;
  o.lean = true;
  for (auto k : {SolverKind::kAuto, SolverKind::kExact, SolverKind::kAnnealing, SolverKind::kBestOfFits}) {
    o.solver = k;
    auto r = solve(p, o);
    ASSERT_FALSE(r.ok()) << solver_kind_name(k);
    EXPECT_NE(r.error().message.find("lean solve"), std::string::npos);
  }
  o.solver = SolverKind::kFirstFit;
  o.objective = Objective::kSelect;
  EXPECT_FALSE(solve(p, o).ok());
}

TEST(AllocSolvers, ExactMinimizeMatchesBruteForce) {
  Rng rng(11);
  for (int trial = 0; trial < 40; ++trial) {
    Problem p = random_problem(rng, static_cast<int>(rng.range(3, 6)), 6, 6);
    p.capacity = 1000;
    Size want = brute_force_height(p);
    for (int variant = 0; variant < 8; ++variant) {
      SolveOptions o;
      o.solver = SolverKind::kExact;
      o.minimize = true;
      o.exact.memo = variant != 1;
      o.exact.decompose = variant != 2;
      o.exact.lb_probe = variant == 0;
      o.exact.lift_check = variant != 3;
      o.exact.memo_lift_key = variant != 4;
      o.exact.free_place = variant != 5;
      o.exact.tight_holes = variant != 6;
      o.exact.fail_first = variant != 7;  // MiniMalloc's own branching (the minimalloc_dives attempts)
      auto r = solve(p, o);
      ASSERT_TRUE(r.ok());
      EXPECT_EQ(r->height, want) << "trial " << trial << " variant " << variant;
      EXPECT_TRUE(r->proven_optimal);
    }
    // Feasibility at the optimum and proven infeasibility one byte below.
    SolveOptions o;
    o.solver = SolverKind::kExact;
    p.capacity = want;
    EXPECT_TRUE(solve(p, o)->feasible);
    p.capacity = want - 1;
    auto r = solve(p, o);
    EXPECT_FALSE(r->feasible);
    EXPECT_TRUE(r->proven_infeasible);
  }
}

// A long exact descent shows progress: each lower height as found, strictly decreasing, the
// last one the answer's (the CLI prints them on stderr).
TEST(AllocSolvers, ExactDescentReportsEachLowerHeight) {
  auto read = read_problem(std::string(SCRATCHPLAN_DATA_DIR) + "/dsa/challenging/D.1048576.csv");
  ASSERT_TRUE(read.ok());
  Problem p = read.value();
  p.capacity = kUnbounded;
  const Placement inc = place_greedy_by_size(p, kUnbounded);
  const Size start = height(p, inc);
  std::vector<int64_t> seen;
  ExactToggles t;
  // Stopped after three lower heights, not by the clock (23 came within a second here; a
  // sanitizer build is several times slower).
  std::atomic<bool> stop{false};
  ExactResult r = exact_search(p, Objective::kPack, true, t, 60.0, &inc, 0, &stop, [&](int64_t h) {
    seen.push_back(h);
    if (seen.size() >= 3) stop = true;
  });
  ASSERT_TRUE(r.found);
  ASSERT_GE(seen.size(), 3u);
  EXPECT_LE(seen.front(), start);  // (the search first looks for a plan no higher than the incumbent)
  for (std::size_t k = 1; k < seen.size(); ++k) EXPECT_LT(seen[k], seen[k - 1]);
  EXPECT_EQ(seen.back(), r.value);
  EXPECT_TRUE(validate(p, r.placement, true).ok());
}

// Optimal spill cost by brute force over subsets (each subset packed exactly).
Cost brute_force_selection(const Problem& p) {
  const int n = static_cast<int>(p.buffers.size());
  Cost best = -1;
  for (int mask = 0; mask < (1 << n); ++mask) {
    Problem q;
    q.capacity = p.capacity;
    Cost spilled = 0;
    for (int i = 0; i < n; ++i) {
      if (mask >> i & 1) q.buffers.push_back(p.buffers[i]);
      else spilled += spill_cost(p.buffers[i]);
    }
    if (best >= 0 && spilled >= best) continue;
    if (q.buffers.empty() || brute_force_height(q) <= q.capacity) best = spilled;
  }
  return best;
}

TEST(AllocSolvers, ExactSelectionMatchesBruteForce) {
  Rng rng(5);
  for (int trial = 0; trial < 25; ++trial) {
    Problem p = random_problem(rng, static_cast<int>(rng.range(3, 6)), 5, 8);
    for (auto& b : p.buffers) b.reads = static_cast<int>(rng.range(1, 3));
    p.capacity = std::max<Size>(1, max_load(p) * 2 / 3);
    const Cost want = brute_force_selection(p);
    for (bool load_bound : {true, false}) {
      SolveOptions o;
      o.solver = SolverKind::kExact;
      o.objective = Objective::kSelect;
      o.exact.load_bound = load_bound;
      auto r = solve(p, o);
      ASSERT_TRUE(r.ok());
      EXPECT_EQ(r->spill_cost, want) << "trial " << trial << " load_bound " << load_bound;
      EXPECT_TRUE(r->proven_optimal);
      EXPECT_TRUE(validate(p, r->placement).ok());
    }
  }
}

// The load relaxation is a lower bound: never above the brute-force optimum, whatever the
// upper limit it searches below; complete searches report a spill set of exactly that cost.
TEST(AllocSolvers, LoadRelaxationBoundIsBelowBruteForce) {
  Rng rng(23);
  for (int trial = 0; trial < 40; ++trial) {
    Problem p = random_problem(rng, static_cast<int>(rng.range(3, 7)), 5, 8);
    for (auto& b : p.buffers) b.reads = static_cast<int>(rng.range(1, 3));
    p.capacity = std::max<Size>(1, max_load(p) * static_cast<Size>(rng.range(3, 9)) / 10);
    const Cost want = brute_force_selection(p);
    EXPECT_LE(selection_lower_bound(p), want) << "trial " << trial;
    for (Cost upper : {want + 1, want, kUnbounded}) {
      LoadRelaxation lr = load_relaxation(p, upper, 10.0);
      ASSERT_TRUE(lr.complete);
      EXPECT_LE(lr.bound, want) << "trial " << trial << " upper " << upper;
      EXPECT_LE(lr.root_bound, want) << "trial " << trial;
      if (lr.found) {
        Cost c = 0;
        for (std::size_t i = 0; i < p.buffers.size(); ++i)
          if (lr.spill[i]) c += spill_cost(p.buffers[i]);
        EXPECT_EQ(c, lr.bound);
      }
    }
  }
}

// torch-spyre's hand-off rule: on the hand-off tick the parent's whole footprint is live. A third
// buffer in the parent's bytes above the child's size, or a sibling child in that remainder, is
// an overlap; the legal hand-off and a third buffer beside the parent pass.
TEST(AllocValidator, HandOffKeepsTheParentsWholeFootprint) {
  Problem p;
  p.capacity = 400;
  p.buffers = {buf("P", 130, 0, 2), buf("C", 10, 1, 3), buf("S", 10, 1, 2)};
  p.buffers[1].in_place_parents = {0};
  for (auto& b : p.buffers) b.alignment = 128;
  EXPECT_TRUE(validate(p, {{0, 0, 256}, {"", "", ""}}).ok());
  auto third = validate(p, {{0, 0, 128}, {"", "", ""}});  // S inside P's remainder at tick 1
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.violations[0].kind, ViolationKind::kOverlap);
  EXPECT_EQ(validate(p, {{0, kSpilled, 128}, {"", "", ""}}).violations.at(0).kind, ViolationKind::kOverlap);  // spilled child too
  // A sibling child in the parent's remainder, beside the child at the base.
  Problem q;
  q.capacity = 400;
  q.buffers = {buf("P", 40, 0, 2), buf("first", 20, 1, 4), buf("second", 5, 1, 3)};
  q.buffers[1].in_place_parents = {0};
  q.buffers[2].in_place_parents = {0};
  EXPECT_FALSE(validate(q, {{0, 0, 30}, {"", "", ""}}).ok());
  EXPECT_TRUE(validate(q, {{0, 0, 40}, {"", "", ""}}).ok());
}

// The smallest case of the bug: every solver's plan is legal, and "proven" only comes with the
// true optimum (S spilled: 10; P or C off chip would cost more).
TEST(AllocSolvers, HandOffThirdBufferNeverOverlapsTheParent) {
  Problem p;
  p.capacity = 144;
  p.buffers = {*buffer_from_uses("P", 130, {0, 1}, false), *buffer_from_uses("C", 10, {1, 2}, false),
               *buffer_from_uses("S", 10, {1}, false)};
  p.buffers[1].in_place_parents = {0};
  for (auto& b : p.buffers) b.alignment = 128;
  for (SolverKind k : {SolverKind::kAuto, SolverKind::kExact, SolverKind::kGreedy, SolverKind::kFirstFit,
                       SolverKind::kBestFit, SolverKind::kAnnealing}) {
    SolveOptions o;
    o.objective = Objective::kSelect;
    o.solver = k;
    o.time_limit = 0.3;
    auto r = solve(p, o);
    ASSERT_TRUE(r.ok()) << solver_kind_name(k);
    EXPECT_TRUE(validate(p, r->placement).ok()) << solver_kind_name(k);
    EXPECT_LE(r->lower_bound, 10) << solver_kind_name(k);
    if (r->proven_optimal) {
      EXPECT_EQ(r->spill_cost, 10) << solver_kind_name(k);
    }
  }
  SolveOptions o;
  o.objective = Objective::kSelect;
  auto r = solve(p, o);
  EXPECT_EQ(r->spill_cost, 10);
  EXPECT_TRUE(r->proven_optimal);  // the hand-off relaxation's bound reaches it
}

// A pack with a hand-off: the max-load bound counts the parent once at the hand-off tick, so a
// capacity of one buffer is feasible, not "proven infeasible".
TEST(AllocSolvers, PackBoundCountsAHandOffOnce) {
  Problem p;
  p.capacity = 64;
  p.buffers = {buf("parent", 64, 0, 2), buf("child", 64, 1, 3)};
  p.buffers[1].in_place_parents = {0};
  SolveOptions o;
  o.objective = Objective::kPack;
  auto r = solve(p, o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->feasible);
  EXPECT_EQ(r->placement.offsets, (std::vector<Offset>{0, 0}));
  EXPECT_EQ(max_load(handoff_relaxation(p)), 64);
}

// paired_with: an atomic group is placed whole or spilled whole; a member forced off chip takes
// the group with it; the validator names a split group.
TEST(AllocSolvers, PairedGroupsArePlacedWholeOrSpilledWhole) {
  Problem p;
  p.capacity = 130;  // any two fit; apart, spilling a (60) would be best
  p.buffers = {buf("a", 60, 0, 3), buf("b", 60, 1, 4), buf("c", 70, 0, 4)};
  p.buffers[0].group = p.buffers[1].group = 0;
  for (auto& b : p.buffers) b.spill_cost = b.size;
  auto split = validate(p, {{0, kSpilled, 60}, {"", "", ""}});
  ASSERT_FALSE(split.ok());
  EXPECT_EQ(split.violations[0].kind, ViolationKind::kGroupSplit);
  SolveOptions o;
  o.objective = Objective::kSelect;
  o.time_limit = 0.5;
  auto r = solve(p, o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(validate(p, r->placement).ok());
  EXPECT_EQ(r->spill_cost, 70);  // a and b together (120 B), c off chip
  p.buffers[1].residency_reason = "op not allowed";
  r = solve(p, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->placement.offsets[0], kSpilled);
  EXPECT_NE(r->placement.offsets[2], kSpilled);
  EXPECT_NE(r->placement.spill_reasons[0].find("paired with 'b'"), std::string::npos);
}

// best-of-fits (the LX co-optimizer's fast answer): exactly the better of torch-spyre's two
// placers run to the end, groups kept whole, bestfit on a tie, validated by solve(); on
// selections with in-place edges, groups and tight capacities, and on packs.
TEST(AllocSolvers, BestOfFitsIsTheBetterOfTheTwoFitPlacers) {
  Rng rng(56);
  int firstfit_won = 0;
  for (int round = 0; round < 300; ++round) {
    Problem p = random_problem(rng, static_cast<int>(rng.range(2, 30)), 12, 64);
    for (std::size_t i = 1; i < p.buffers.size(); ++i) {
      Buffer& b = p.buffers[i];
      Buffer& q = p.buffers[i - 1];
      if (rng.chance(0.3)) {  // an in-place child: starts on its parent's last tick, no larger
        b.start = q.end - 1;
        b.end = b.start + rng.range(1, 4);
        b.size = std::min(b.size, q.size);
        b.in_place_parents.push_back(static_cast<int>(i - 1));
      }
      if (rng.chance(0.1)) b.group = q.group = q.group >= 0 ? q.group : static_cast<int>(i - 1);
      b.spill_cost = rng.range(0, 500);
    }
    p.capacity = rng.range(32, 200);
    const bool select = round % 4 != 0;
    SolveOptions o;
    o.solver = SolverKind::kBestOfFits;
    o.objective = select ? Objective::kSelect : Objective::kPack;
    o.time_limit = -1;
    auto r = solve(p, o);
    ASSERT_TRUE(r.ok()) << r.error().message;
    Placement best = place_first_fit(p, p.capacity, true), first = place_first_fit(p, p.capacity, false);
    if (!select) continue;  // (a pack compares heights of complete plans; checked valid by solve)
    keep_groups_whole(p, best);
    keep_groups_whole(p, first);
    const bool take_first = spilled_cost(p, first) < spilled_cost(p, best);
    firstfit_won += take_first;
    EXPECT_EQ(r->placement.offsets, (take_first ? first : best).offsets) << round;
    EXPECT_EQ(r->solver, take_first ? "firstfit" : "bestfit");
  }
  EXPECT_GT(firstfit_won, 0);  // both branches of the choice were exercised
}

// Lifetime overrides widen a lifetime; one that would narrow it is refused, as torch-spyre asserts.
TEST(AllocModel, LifetimeOverridesOnlyWiden) {
  auto b = buffer_from_uses("x", 8, {4, 6}, false, 9, 2);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->start, 2);
  EXPECT_EQ(b->end, 9);
  EXPECT_FALSE(buffer_from_uses("x", 8, {4, 6}, false, kNoOverride, 5).ok());
  EXPECT_FALSE(buffer_from_uses("x", 8, {4, 6}, false, 6).ok());
}

// In-place hand-off: the child shares its parent's bytes at the hand-off tick, so the load
// relaxation must not count both there (capacity = one buffer, nothing has to be spilled).
TEST(AllocSolvers, LoadRelaxationHonoursInPlaceHandOff) {
  Problem p;
  p.capacity = 64;
  p.buffers.push_back(buf("parent", 64, 0, 2));
  p.buffers.push_back(buf("child", 64, 1, 3));
  p.buffers[1].in_place_parents = {0};
  ASSERT_TRUE(check_problem(p).ok());
  EXPECT_EQ(load_relaxation(p, kUnbounded, 1.0).bound, 0);
  SolveOptions o;
  o.objective = Objective::kSelect;
  auto r = solve(p, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->spill_cost, 0);
  EXPECT_EQ(r->lower_bound, 0);
}

// The benchmark's Stream/25 selection (generated stream, 60 % of the max load) is proven optimal.
TEST(AllocSolvers, SelectStream25IsProvenOptimal) {
  Problem p = generate_stream(25, 7, 2);
  for (std::size_t i = 0; i < p.buffers.size(); ++i) p.buffers[i].reads = 1 + static_cast<int>(i % 3);
  p.capacity = max_load(p) * 6 / 10;
  SolveOptions o;
  o.objective = Objective::kSelect;
  o.time_limit = 1.0;
  auto r = solve(p, o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->proven_optimal);
  EXPECT_EQ(r->spill_cost, r->lower_bound);
  EXPECT_EQ(r->spill_cost, 923520);
  EXPECT_TRUE(validate(p, r->placement).ok());
}

TEST(AllocSolvers, AnnealingIsDeterministicForSeedAndBudget) {
  Rng rng(3);
  Problem p = random_problem(rng, 30, 20, 40);
  p.capacity = max_load(p);
  SolveOptions o;
  o.solver = SolverKind::kAnnealing;
  o.objective = Objective::kSelect;
  o.iterations = 500;
  o.seed = 42;
  auto a = solve(p, o), b = solve(p, o);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->placement.offsets, b->placement.offsets);
  SolveOptions f;
  f.solver = SolverKind::kFirstFit;
  f.objective = Objective::kSelect;
  EXPECT_LE(a->spill_cost, solve(p, f)->spill_cost + spilled_cost(p, place_in_order(p, p.capacity, first_fit_order(p))));
}

// A spent time budget must stop every phase (a negative budget once read as "no limit").
TEST(AllocSolvers, ZeroTimeLimitStillReturnsAValidPlan) {
  auto p = read_problem(std::string(SCRATCHPLAN_DATA_DIR) + "/dsa/challenging/K.1048576.csv");
  ASSERT_TRUE(p.ok());
  p->capacity = 1048576;
  for (bool minimize : {false, true}) {
    SolveOptions o;
    o.time_limit = 0;
    o.minimize = minimize;
    auto r = solve(*p, o);
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r->proven_optimal);  // K needs a search; with no time there is no proof
    if (r->feasible) {
      EXPECT_TRUE(validate(*p, r->placement, true).ok());
    }
  }
  SolveOptions o;
  o.time_limit = 0;
  o.objective = Objective::kSelect;
  auto r = solve(*p, o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(validate(*p, r->placement).ok());
}

// A pinned buffer is always placed: one that ends past the capacity is bad input naming it (it
// used to reach the solvers and come back as "solver 'firstfit' produced an invalid plan").
TEST(AllocModel, PinPastTheCapacityIsBadInputNamingTheBuffer) {
  Problem p;
  p.capacity = 100;
  p.buffers.push_back(testing::buf("pin", 40, 0, 4));
  p.buffers.back().fixed_offset = 80;
  p.buffers.push_back(testing::buf("free", 10, 0, 4));
  for (Objective obj : {Objective::kPack, Objective::kSelect})
    for (SolverKind k : {SolverKind::kAuto, SolverKind::kFirstFit, SolverKind::kExact, SolverKind::kAnnealing}) {
      SolveOptions o;
      o.objective = obj;
      o.solver = k;
      o.time_limit = 1;
      auto r = solve(p, o);
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(r.error().kind, ErrorKind::kBadInput);
      EXPECT_EQ(r.error().message, "buffer 'pin': pinned at offset 80 with size 40, it ends at 120, past the capacity 100");
    }
  p.capacity = 120;  // at the capacity: fine, and the select plan keeps the pin
  SolveOptions o;
  o.objective = Objective::kSelect;
  o.time_limit = 1;
  auto r = solve(p, o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->placement.offsets[0], 80);
  EXPECT_TRUE(validate(p, r->placement).ok());
}

// Every height bound counts pinned ends: 40 B pinned at 80 beside a 10 B buffer needs 120, and
// a plan of 120 is proven (it was reported as "height 120 (lower bound 50)").
TEST(AllocSolvers, BoundsCountPinnedEnds) {
  Problem p;
  p.buffers.push_back(testing::buf("pin", 40, 0, 4));
  p.buffers.back().fixed_offset = 80;
  p.buffers.push_back(testing::buf("free", 10, 0, 4));
  EXPECT_EQ(max_load(p), 120);
  for (SolverKind k : {SolverKind::kAuto, SolverKind::kExact, SolverKind::kFirstFit}) {
    SolveOptions o;
    o.minimize = true;
    o.solver = k;
    o.time_limit = 1;
    auto r = solve(p, o);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->height, 120);
    EXPECT_EQ(r->lower_bound, 120) << solver_kind_name(k);
    EXPECT_TRUE(r->proven_optimal) << solver_kind_name(k);
  }
}

// Anytime at every size: with no time at all, every solver still returns a valid complete pack
// (the chosen solver's plan when it finishes, else the online placer's); a quadratic placer or
// annealing's first-fit decoder cut short is not an answer (it was: "no plan within capacity
// 2305843009213693951" for annealing and exact from about 50k buffers).
TEST(AllocSolvers, EverySolverAnswersAPackWithNoTime) {
  Problem p = generate_random(1200, 7);
  for (SolverKind k : {SolverKind::kGreedy, SolverKind::kFirstFit, SolverKind::kBestFit, SolverKind::kGreedyBySize,
                       SolverKind::kSweep, SolverKind::kOnline, SolverKind::kAnnealing, SolverKind::kExact}) {
    SolveOptions o;
    o.solver = k;
    o.minimize = true;
    o.time_limit = 0;
    auto r = solve(p, o);
    ASSERT_TRUE(r.ok()) << solver_kind_name(k);
    EXPECT_TRUE(r->feasible) << solver_kind_name(k);
    EXPECT_TRUE(validate(p, r->placement, true).ok()) << solver_kind_name(k);
    EXPECT_GE(r->height, r->lower_bound);
    // Given time, the chosen solver answers itself.
    o.time_limit = k == SolverKind::kExact || k == SolverKind::kAuto ? 0.3 : 5;
    o.iterations = k == SolverKind::kAnnealing ? 5 : 0;
    auto timed = solve(p, o);
    ASSERT_TRUE(timed.ok());
    EXPECT_TRUE(timed->feasible);
    if (k != SolverKind::kExact) {
      EXPECT_EQ(timed->solver, solver_kind_name(k));
    }
  }
}

// MiniMalloc's K (454 buffers, 108 of 242 time sections at zero slack) was not solved in 10 s
// before the minimalloc_dives attempts; one thread now packs it in well under a second.
TEST(AllocSolvers, ChallengingKPacksAtCapacity) {
  auto p = read_problem(std::string(SCRATCHPLAN_DATA_DIR) + "/dsa/challenging/K.1048576.csv");
  ASSERT_TRUE(p.ok());
  p->capacity = 1048576;
  for (bool minimize : {false, true}) {
    SolveOptions o;
    o.time_limit = 60;  // generous for sanitizer builds; release needs about 0.1 s
    o.minimize = minimize;
    auto r = solve(*p, o);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->feasible) << "minimize " << minimize;
    EXPECT_EQ(r->height, 1048576);
    EXPECT_TRUE(r->proven_optimal);  // max-load bound met
    EXPECT_TRUE(validate(*p, r->placement, true).ok());
  }
}

TEST(AllocSolvers, PackInfeasibleBelowMaxLoadIsProvenByBound) {
  Problem p;
  p.buffers = {buf("a", 4, 0, 2), buf("b", 4, 1, 3)};
  p.capacity = 7;
  SolveOptions o;
  auto r = solve(p, o);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->feasible);
  EXPECT_TRUE(r->proven_infeasible);
  EXPECT_EQ(r->lower_bound, 8);
}

}  // namespace
}  // namespace sp::alloc

namespace sp::alloc {
namespace {

// A buffer of 2^62 bytes (the largest a reader accepts) under a small capacity: proven
// infeasible, not an internal error (the heuristics place below 2^61). Found by the Python fuzzer.
TEST(AllocSolve, HugeBufferAboveCapacityIsProvenInfeasible) {
  Problem p;
  p.capacity = 64;
  p.buffers = {Buffer{}, Buffer{}};
  p.buffers[0].id = "a", p.buffers[0].size = 8, p.buffers[0].start = 0, p.buffers[0].end = 2;
  p.buffers[1].id = "b", p.buffers[1].size = int64_t{1} << 59, p.buffers[1].start = 1, p.buffers[1].end = 3;
  for (SolverKind k : {SolverKind::kAuto, SolverKind::kFirstFit, SolverKind::kGreedy, SolverKind::kExact}) {
    SolveOptions o;
    o.solver = k;
    o.time_limit = 1;
    auto r = solve(p, o);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_FALSE(r->feasible);
    EXPECT_TRUE(r->proven_infeasible);
  }
  // Two co-live buffers aligned to 2^58 (padded sum within the 2^60 bound): the second sits at 2^58; the
  // height 2^58 + 8 is computed without overflow.
  p.capacity = kUnbounded;
  p.buffers[1].size = 8;
  for (auto& b : p.buffers) b.alignment = int64_t{1} << 58;
  SolveOptions o;
  o.minimize = true;
  o.time_limit = 0.2;
  auto r = solve(p, o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(r->feasible);
  EXPECT_EQ(r->height, (int64_t{1} << 58) + 8);
  // Past the bound the problem is refused, not solved with wrapped sums.
  for (auto& b : p.buffers) b.alignment = int64_t{1} << 62;
  EXPECT_FALSE(solve(p, o).ok());
}

}  // namespace
}  // namespace sp::alloc

namespace sp::alloc {
namespace {

// The per-instant selection bound at any size: with every byte costing the same (CSV instances,
// spill cost 2 x size) it is exactly 2 x (max load - capacity), also where there are too many
// instants for the exact removal at each (it once returned 0 above 50M buffer visits).
TEST(AllocSolvers, SelectionBoundScalesAndStaysValid) {
  for (int n : {2000, 60000}) {
    Problem p = generate_random(n, 3);
    const Size peak = max_load(p);
    p.capacity = peak * 6 / 10;
    EXPECT_EQ(selection_lower_bound(p), 2 * (peak - p.capacity)) << n;
  }
  // Mixed costs: still below a plan's cost.
  Problem p = generate_random(60000, 4);
  p.capacity = max_load(p) / 2;
  for (std::size_t i = 0; i < p.buffers.size(); ++i) p.buffers[i].spill_cost = static_cast<Cost>(i % 7) * p.buffers[i].size;
  const Cost lb = selection_lower_bound(p);
  Placement pl = place_sweep(p, p.capacity);
  EXPECT_GT(lb, 0);
  EXPECT_LE(lb, spilled_cost(p, pl));
}

// auto on a large selection uses its budget on better orders and the load relaxation's bound: it
// is never worse than the size-order sweep or the first-fit placer alone, and its bound is at
// least the per-instant one. The limit leaves room for the members' orders to be decoded under
// ASan on a loaded machine (at 1.5 s the first-fit order was once cut by the deadline there).
TEST(AllocSolvers, LargeSelectionPortfolioBeatsItsMembers) {
  Problem p = generate_random(9000, 5);
  p.capacity = max_load(p) * 6 / 10;
  SolveOptions o;
  o.objective = Objective::kSelect;
  o.time_limit = 4.0;
  auto r = solve(p, o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(validate(p, r->placement).ok());
  EXPECT_LE(r->spill_cost, spilled_cost(p, place_sweep(p, p.capacity)));
  EXPECT_LE(r->spill_cost, spilled_cost(p, place_first_fit(p, p.capacity, false)));
  EXPECT_GE(r->lower_bound, selection_lower_bound(p));
  EXPECT_LE(r->lower_bound, r->spill_cost);
}

}  // namespace
}  // namespace sp::alloc
