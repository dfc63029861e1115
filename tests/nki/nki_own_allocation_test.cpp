// The kernel's own allocation when some tensors are left to the compiler (new API: no address=):
// its addressed tensors kept where it puts them, the compiler-placed ones placed by the planner
// around them (the keep-direct plan), on the same timeline; the plan is never slower than it.
#include "nki/generate.h"
#include "nki/plan.h"
#include "nki_test_util.h"

namespace sp::nki {
namespace {

// A generated kernel planned, then every other SBUF/PSUM tensor handed back to the compiler:
// the addressed half keeps the planner's (multi-buffered) tiles.
Kernel mixed_kernel(uint64_t seed) {
  GenerateOptions g;
  g.seed = seed;
  g.tensors = 16;
  g.loops = 4;
  g.max_trip = 8;
  auto k = kernel_from_json(generate_kernel_json(g), "gen.json");
  EXPECT_TRUE(k.ok());
  auto p = plan_kernel(*k);
  EXPECT_TRUE(p.ok());
  Kernel mixed = p->kernel;
  int n = 0;
  for (Tensor& t : mixed.tensors)
    if (t.buffer != Memory::kHbm && n++ % 2 == 1) {
      t.alloc = Allocation{};
      t.alloc.compiler_placed = true;
    }
  return mixed;
}

TEST(NkiOwnAllocation, CompilerPlacedShareIsPlacedByThePlannerAndNeverBeaten) {
  int fell_back = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const Kernel k = mixed_kernel(seed);
    auto in = check_kernel(k);
    ASSERT_TRUE(in.ok());
    ASSERT_TRUE(in->clean()) << "seed " << seed << ": " << in->violations.front().message;
    auto free = plan_kernel(k);
    ASSERT_TRUE(free.ok()) << free.error().message;
    ASSERT_TRUE(free->has_input) << "seed " << seed;
    EXPECT_TRUE(free->input_compiler_placed_by_planner);
    EXPECT_LE(free->planned.makespan, free->input.makespan) << "seed " << seed;
    // The own allocation is the keep-direct plan.
    PlanOptions keep;
    keep.keep_direct = true;
    auto kept = plan_kernel(k, keep);
    ASSERT_TRUE(kept.ok()) << kept.error().message;
    EXPECT_EQ(kept->planned.makespan, free->input.makespan) << "seed " << seed;
    ASSERT_TRUE(kept->has_input);
    EXPECT_EQ(kept->input.makespan, kept->planned.makespan);
    EXPECT_TRUE(kept->input_compiler_placed_by_planner);
    // Single-buffered, the free plan loses to the kept multi-buffered tiles: the plan is then the
    // own allocation itself (its addressed tensors kept).
    PlanOptions single;
    single.multi_buffer = false;
    auto s = plan_kernel(k, single);
    ASSERT_TRUE(s.ok()) << s.error().message;
    ASSERT_TRUE(s->has_input);
    EXPECT_LE(s->planned.makespan, s->input.makespan) << "seed " << seed;
    if (s->planned.makespan == s->input.makespan && s->plans.front().kept) ++fell_back;
    auto out = check_kernel(s->kernel);
    ASSERT_TRUE(out.ok());
    EXPECT_TRUE(out->clean());
  }
  EXPECT_GT(fell_back, 0);  // the fallback was taken at least once
}

TEST(NkiOwnAllocation, CompleteAndAutomaticKernelsAreNotMarked) {
  GenerateOptions g;
  g.tensors = 12;
  g.loops = 3;
  auto k = kernel_from_json(generate_kernel_json(g), "gen.json");
  ASSERT_TRUE(k.ok());
  auto automatic = plan_kernel(*k);  // no address anywhere: no own allocation
  ASSERT_TRUE(automatic.ok());
  EXPECT_FALSE(automatic->has_input);
  auto complete = plan_kernel(automatic->kernel);  // every tensor addressed: its own, as it is
  ASSERT_TRUE(complete.ok());
  EXPECT_TRUE(complete->has_input);
  EXPECT_FALSE(complete->input_compiler_placed_by_planner);
}

}  // namespace
}  // namespace sp::nki
