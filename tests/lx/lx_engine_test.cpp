// The LX planners place buffers only through the alloc engine (alloc::solve, which validates
// every plan): with an observer on solve(), every LX address of a plan must be the offset one
// engine solve returned for that buffer, and the co-optimizer's scoring must call the engine
// once per assignment it scores. A planner that placed buffers by calling a placer directly
// (or computed addresses itself) fails here.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "alloc/solver.h"
#include "core/json_reader.h"
#include "core/rng.h"
#include "lx/coopt.h"
#include "lx/lx.h"
#include "program/builder.h"

namespace sp::lx {
namespace {

// Every placement solve() returned while the recorder lived: buffer id -> offset (placed ones).
class EngineRecorder {
 public:
  EngineRecorder() {
    alloc::set_solve_observer([this](const alloc::Problem& p, const alloc::SolveResult& r) {
      std::map<std::string, int64_t> placed;
      for (std::size_t i = 0; i < p.buffers.size(); ++i)
        if (r.placement.offsets[i] != alloc::kSpilled) placed[p.buffers[i].id] = r.placement.offsets[i];
      solves.push_back(std::move(placed));
    });
  }
  ~EngineRecorder() { alloc::set_solve_observer({}); }
  EngineRecorder(const EngineRecorder&) = delete;
  EngineRecorder& operator=(const EngineRecorder&) = delete;

  // True when one recorded solve placed exactly `resident` (id -> address): the same buffers at
  // the same offsets, none more.
  bool one_solve_placed(const std::map<std::string, int64_t>& resident) const {
    for (const auto& s : solves)
      if (s == resident) return true;
    return false;
  }
  // True when every (id, address) of `resident` is the offset some recorded solve gave that id.
  bool each_placed_by_a_solve(const std::map<std::string, int64_t>& resident, std::string& missing) const {
    for (const auto& [id, address] : resident) {
      bool found = false;
      for (const auto& s : solves) {
        auto it = s.find(id);
        found = found || (it != s.end() && it->second == address);
      }
      if (!found) {
        missing = id + " at " + std::to_string(address);
        return false;
      }
    }
    return true;
  }
  std::vector<std::map<std::string, int64_t>> solves;
};

// A division problem of our own: chains with skips, menus of 1-3 entries with match tables,
// in-place edges torch-spyre allows, paired groups, a forced spill now and then.
CdProblem generated_division_problem(Rng& rng, int n, int64_t capacity) {
  CdProblem p;
  p.capacity = capacity;
  p.alignment = 128;
  int64_t t = 0;
  for (int i = 0; i < n; ++i) {
    CdBuffer b;
    b.name = "b" + std::to_string(i);
    b.size = 1024 * rng.range(1, 48);
    const int64_t start = t;
    t += rng.range(0, 2);
    b.uses = {start};
    for (int64_t u = start + 1, k = rng.range(0, 3); k > 0; --k, u += rng.range(1, 3)) b.uses.push_back(u);
    b.start = b.uses.front();
    b.end = b.uses.back() + 1;
    b.first_use_is_read = rng.chance(0.15);
    if (rng.chance(0.08)) b.residency_reason = "pinned by the caller";
    for (int d = static_cast<int>(rng.range(1, 3)); d > 0; --d) {
      CdDivision div;  // (as division_problem_from_json derives it from one output split)
      const int64_t factor = int64_t{1} << rng.range(0, 3);
      div.output_splits = {{0, factor}};
      div.output_partition = div.cores = factor;
      div.split_sq = factor * factor;
      b.divisions.push_back(div);
    }
    for (int q = std::max(0, i - 4); q < i; ++q) {
      if (!rng.chance(0.4)) continue;
      b.parents.push_back(q);
      std::vector<std::pair<int, int>> pairs;
      for (int pd = 0; pd < static_cast<int>(p.buffers[q].divisions.size()); ++pd)
        for (int cd = 0; cd < static_cast<int>(b.divisions.size()); ++cd)
          if (pd == cd || rng.chance(0.3)) pairs.emplace_back(pd, cd);
      if (pairs.empty()) pairs.emplace_back(0, 0);
      b.matches.emplace_back(q, std::move(pairs));
    }
    if (i > 0) {
      const CdBuffer& par = p.buffers[i - 1];
      const bool read_after_write = par.first_use_is_read || par.uses.size() >= 2;
      if (par.end == b.start + 1 && b.size <= par.size && read_after_write && rng.chance(0.5))
        b.in_place_parents.push_back(i - 1);
    }
    p.buffers.push_back(std::move(b));
  }
  for (int k = 0; k < n / 8; ++k) {  // paired groups, each named by its lowest member
    const int a = static_cast<int>(rng.below(n)), c = static_cast<int>(rng.below(n));
    if (a == c || p.buffers[a].group >= 0 || p.buffers[c].group >= 0) continue;
    p.buffers[a].group = p.buffers[c].group = std::min(a, c);
  }
  return p;
}

std::map<std::string, int64_t> resident_of(const CdProblem& p, const std::vector<int64_t>& address) {
  std::map<std::string, int64_t> out;
  for (std::size_t b = 0; b < p.buffers.size(); ++b)
    if (address[b] >= 0) out[p.buffers[b].name] = address[b];
  return out;
}

TEST(LxEngine, TheAugustCoOptimizerPlacesOnlyThroughTheEngine) {
  Rng rng(56);
  int resident = 0;
  for (int round = 0; round < 12; ++round) {
    const int64_t capacity = int64_t{1} << rng.range(14, 17);
    CdProblem p = generated_division_problem(rng, static_cast<int>(rng.range(6, 30)), capacity);
    EngineRecorder engine;
    auto s = solve_divisions(p, 2.0);
    ASSERT_TRUE(s.ok()) << s.error().message;
    // Each scored assignment is one engine solve, and the seed's full placement one more.
    EXPECT_GE(static_cast<int64_t>(engine.solves.size()), s->evaluations + 1) << round;
    const auto placed = resident_of(p, s->address);
    resident += static_cast<int>(placed.size());
    EXPECT_TRUE(engine.one_solve_placed(placed)) << "round " << round << ": the plan's LX addresses are no engine plan";
  }
  EXPECT_GT(resident, 50);  // the check compared real placements
}

TEST(LxEngine, TheSeptemberLadderPlacesOnlyThroughTheEngine) {
  Rng rng(54);
  int resident = 0;
  for (int round = 0; round < 8; ++round) {
    CdProblem p = generated_division_problem(rng, static_cast<int>(rng.range(5, 14)), int64_t{1} << rng.range(14, 16));
    EngineRecorder engine;
    LadderOptions o;
    o.time_limit = 2.0;
    auto s = solve_division_ladder(p, o);
    ASSERT_TRUE(s.ok()) << s.error().message;
    ASSERT_FALSE(engine.solves.empty());
    const auto placed = resident_of(p, s->address);
    resident += static_cast<int>(placed.size());
    EXPECT_TRUE(engine.one_solve_placed(placed)) << "round " << round << ": the plan's LX addresses are no engine plan";
  }
  EXPECT_GT(resident, 20);
}

TEST(LxEngine, ProgramPlansPlaceOnlyThroughTheEngine) {
  std::vector<program::Program> programs;
  for (auto [ops, seed] : {std::pair{30, 1}, std::pair{80, 2}, std::pair{200, 3}}) {
    auto prog = program::synthetic_program(ops, seed);
    ASSERT_TRUE(prog.ok());
    programs.push_back(std::move(*prog));
  }
  auto transformer = transformer_program(60);
  ASSERT_TRUE(transformer.ok());
  programs.push_back(std::move(*transformer));
  int resident = 0;
  for (const program::Program& prog : programs) {
    for (bool coopt : {false, true}) {
      EngineRecorder engine;
      Options o;
      o.cores = 8;
      o.time_limit = 0.3;
      o.coopt = coopt;
      auto plan = plan_program(prog, Hardware{}, o);
      ASSERT_TRUE(plan.ok()) << plan.error().message;
      ASSERT_FALSE(engine.solves.empty());
      std::map<std::string, int64_t> placed;
      for (const PlanValue& v : plan->values)
        for (const Segment& seg : v.lx) placed[v.name + (seg.reload ? "@" + std::to_string(seg.start) : "")] = seg.address;
      resident += static_cast<int>(placed.size());
      std::string missing;
      EXPECT_TRUE(engine.each_placed_by_a_solve(placed, missing)) << "no engine solve placed " << missing;
    }
  }
  EXPECT_GT(resident, 50);
}

}  // namespace
}  // namespace sp::lx
