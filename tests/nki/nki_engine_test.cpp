// The NKI planner places its SBUF and PSUM tiles through the allocation engine and nowhere else:
// with an observer on alloc::solve, every address of a plan is one the engine returned for a
// buffer of that tensor's size (its tiles, in bytes or banks) at that start partition. (The
// planner remembers answers by question, not by tensor: tensors of one size among the same
// obstacles share the engine's answer.)
#include <map>
#include <set>
#include <tuple>

#include "alloc/solver.h"
#include "nki/generate.h"
#include "nki/plan.h"
#include "nki_test_util.h"

namespace sp::nki {
namespace {

TEST(NkiEngine, EveryPlannedAddressIsTheEnginesAnswer) {
  // (size, start row) -> offsets the engine chose for a buffer of that size there.
  std::map<std::pair<alloc::Size, Partition>, std::set<Bytes>> answers;
  int solves = 0;
  alloc::set_solve_observer([&](const alloc::Problem& p, const alloc::SolveResult& r) {
    ++solves;
    for (std::size_t i = 0; i < p.buffers.size(); ++i) {
      const std::string& id = p.buffers[i].id;  // "row <row> apart|shared"
      if (id.rfind("row ", 0) != 0 || p.buffers[i].fixed_offset != alloc::kNoFixedOffset) continue;
      const Partition row = std::stoll(id.substr(4));
      answers[{p.buffers[i].size, row}].insert(r.placement.offsets[i]);
    }
  });
  int checked = 0, kernels = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    GenerateOptions g;
    g.tensors = 16;
    g.loops = 4;
    g.max_trip = 4;
    g.seed = seed;
    auto k = kernel_from_json(generate_kernel_json(g), "gen.json");
    ASSERT_TRUE(k.ok()) << k.error().message;
    answers.clear();
    solves = 0;
    auto p = plan_kernel(*k);
    ASSERT_TRUE(p.ok()) << p.error().message;
    ++kernels;
    EXPECT_GT(solves, 0) << "seed " << seed << ": the planner never called the allocation engine";
    for (const TensorPlan& tp : p->plans) {
      ASSERT_FALSE(tp.kept);
      const std::string& name = p->kernel.tensors[tp.tensor].name;
      const alloc::Size size = static_cast<alloc::Size>(tp.tiles) * tp.stride;  // bytes; PSUM: banks (stride 1)
      auto it = answers.find({size, tp.partition});
      ASSERT_NE(it, answers.end()) << "seed " << seed << ": the engine never placed " << size << " units of " << name
                                   << " at partition " << tp.partition;
      EXPECT_TRUE(it->second.count(tp.base)) << "seed " << seed << ": " << name << " planned at " << tp.base
                                             << ", an address the engine never returned for it";
      ++checked;
    }
  }
  alloc::set_solve_observer({});
  EXPECT_EQ(kernels, 4);
  EXPECT_GT(checked, 20);  // SBUF and PSUM tensors of four kernels
}

}  // namespace
}  // namespace sp::nki
