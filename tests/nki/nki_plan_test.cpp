// The planner: finds double buffering on its own for load -> exp, respects capacity and
// lifetimes, and every plan it returns passes the independent checker.
#include <algorithm>
#include <map>

#include "nki/check.h"
#include "nki/generate.h"
#include "nki/plan.h"
#include "nki_test_util.h"

namespace sp::nki {
namespace {

using testing::load_example;

const TensorPlan& plan_of(const PlanResult& p, const std::string& name) {
  for (const auto& tp : p.plans)
    if (p.kernel.tensors[tp.tensor].name == name) return tp;
  static TensorPlan none;
  ADD_FAILURE() << "no plan for " << name;
  return none;
}

TEST(NkiPlan, LoadExpFindsDoubleBufferingOnItsOwn) {
  Kernel k = load_example("load_exp.json");  // 16 blocks, DMA and Scalar both 1000 cycles
  ASSERT_EQ(k.instrs[0].cost, k.instrs[1].cost);
  auto p = plan_kernel(k);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(plan_of(*p, "t").tiles, 2);
  EXPECT_EQ(plan_of(*p, "t").min_tiles, 1);
  // Single buffered: 16 x (load + exp) = 32000. Double: 16 exps back to back after the first load = 17000.
  EXPECT_EQ(p->baseline.makespan, 32000);
  EXPECT_EQ(p->planned.makespan, 17000);
  EXPECT_GE(static_cast<double>(p->baseline.makespan) / static_cast<double>(p->planned.makespan), 1.85);
  EXPECT_NEAR(p->planned.utilization(static_cast<int>(Engine::kScalar)), 16.0 / 17.0, 1e-9);
  EXPECT_NEAR(p->baseline.utilization(static_cast<int>(Engine::kScalar)), 0.5, 1e-9);
  // The written allocation is the seed's mod_alloc double buffering.
  const Tensor& t = p->kernel.tensors[k.find_tensor("t")];
  EXPECT_EQ(t.alloc.kind, AllocKind::kModAlloc);
  EXPECT_EQ(t.alloc.num_free_tiles, (std::vector<int64_t>{2}));
}

TEST(NkiPlan, LoadExpSameUnderBothTimelineModels) {
  PlanOptions o;
  o.scheduler = Scheduler::kInOrder;
  auto p = plan_kernel(load_example("load_exp.json"), o);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->baseline.makespan, 32000);
  EXPECT_EQ(p->planned.makespan, 17000);
}

TEST(NkiPlan, DataflowOverlapsIndependentStagesInOrderDoesNot) {
  // Generated stages are independent chains: a dataflow schedule overlaps them, per-queue
  // program order serialises much more.
  GenerateOptions g;
  g.seed = 3;
  auto k = kernel_from_json(generate_kernel_json(g), "gen.json");
  ASSERT_TRUE(k.ok());
  PlanOptions df, io;
  io.scheduler = Scheduler::kInOrder;
  df.multi_buffer = io.multi_buffer = false;
  auto a = plan_kernel(*k, df), b = plan_kernel(*k, io);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_LT(a->planned.makespan, b->planned.makespan);
  // Both are at least the busiest engine's work and at most fully serial execution.
  Cycles serial = 0, busiest = 0;
  for (int e = 0; e < kNumEngines; ++e) {
    serial += a->planned.busy[e];
    busiest = std::max(busiest, a->planned.busy[e] / a->planned.lanes[e]);
  }
  EXPECT_GE(a->planned.makespan, busiest);
  EXPECT_LE(b->planned.makespan, serial);
}

TEST(NkiPlan, ReportsTheInputsOwnAllocation) {
  // mod_alloc_double.json double-buffers t and y by hand: the planner finds the same time.
  auto p = plan_kernel(load_example("mod_alloc_double.json"));
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(p->has_input);
  EXPECT_EQ(p->input.makespan, p->planned.makespan);
  EXPECT_LT(p->input.makespan, p->baseline.makespan);
  // simple_1d_alloc_func.json gives every block its own tile: as fast as the plan.
  p = plan_kernel(load_example("simple_1d_alloc_func.json"));
  ASSERT_TRUE(p.ok() && p->has_input);
  EXPECT_EQ(p->input.makespan, p->planned.makespan);
  // Inputs with violations or automatic tensors have no such timing.
  p = plan_kernel(load_example("lifetime_conflict.json"));
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->has_input);
  p = plan_kernel(load_example("load_exp.json"));
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->has_input);
}

TEST(NkiPlan, SoftmaxReachesTheScalarBound) {
  // Scalar (exp_sum, 2100 per block) is the busiest engine. No schedule beats: the first block's
  // load and row max (2200 + 1100), then eight exp_sums back to back (16800), then the last
  // block's recip, scale and store (60 + 1800 + 2200) = 24160 cycles. The plan reaches it.
  auto p = plan_kernel(load_example("softmax_rows.json"));
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->planned.makespan, 2200 + 1100 + 8 * 2100 + 60 + 1800 + 2200);
  EXPECT_EQ(p->baseline.makespan, 47260);
}

TEST(NkiPlan, SingleFlagKeepsTheBaseline) {
  PlanOptions o;
  o.multi_buffer = false;
  auto p = plan_kernel(load_example("load_exp.json"), o);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->planned.makespan, 32000);
  EXPECT_EQ(plan_of(*p, "t").tiles, 1);
}

TEST(NkiPlan, TilesThatMustCoexistGetTheirOwnPhysicalTiles) {
  auto p = plan_kernel(load_example("lifetime_conflict.json"));  // its own 2-tile allocation is ignored
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(plan_of(*p, "t1").min_tiles, 8);
  EXPECT_EQ(plan_of(*p, "t1").tiles, 8);
  auto r = check_kernel(p->kernel);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->clean());
}

TEST(NkiPlan, CapacityLimitsBuffering) {
  // Usable SBUF 2048 bytes per partition: t and y (1024 bytes each) fit once, never twice.
  Hardware hw;
  hw.sbuf_partition_bytes = hw.sbuf_reserved_bytes + 2048;
  auto k = read_kernel(testing::example("load_exp.json"), &hw);
  ASSERT_TRUE(k.ok());
  auto p = plan_kernel(*k);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(plan_of(*p, "t").tiles, 1);
  EXPECT_LE(p->sbuf_bytes, 2048);
  EXPECT_EQ(p->planned.makespan, 32000);
  // With 3072 bytes the second tile of t fits.
  hw.sbuf_partition_bytes = hw.sbuf_reserved_bytes + 3072;
  k = read_kernel(testing::example("load_exp.json"), &hw);
  ASSERT_TRUE(k.ok());
  p = plan_kernel(*k);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(plan_of(*p, "t").tiles, 2);
  EXPECT_EQ(p->planned.makespan, 17000);
}

TEST(NkiPlan, InfeasibleIsBadInput) {
  auto hw = read_hardware_file(testing::example("hardware_small.json"));  // 4 KiB usable
  ASSERT_TRUE(hw.ok());
  auto k = read_kernel(testing::example("lifetime_conflict.json"), &*hw);  // t1 needs 8 KiB live at once
  ASSERT_TRUE(k.ok());
  auto p = plan_kernel(*k);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(p.error().message.find("does not fit"), std::string::npos) << p.error().message;
}

TEST(NkiPlan, PsumTilesGetWholeBanks) {
  auto p = plan_kernel(load_example("matmul_psum.json"));
  ASSERT_TRUE(p.ok()) << p.error().message;
  const Tensor& acc = p->kernel.tensors[p->kernel.find_tensor("acc")];
  auto pl = evaluate_allocation(p->kernel, acc);
  for (const auto& x : pl) EXPECT_EQ(x.byte_addr % p->kernel.hw.psum_bank_bytes, 0);
  EXPECT_LE(p->psum_banks, p->kernel.hw.psum_banks);
  EXPECT_LE(p->planned.makespan, p->baseline.makespan);
}

std::vector<Bytes> offsets(const std::vector<BufferPlacement>& v) {
  std::vector<Bytes> o;
  for (const auto& p : v) o.push_back(p.offset);
  return o;
}

TEST(NkiPlan, AssignOffsetsSharesOnlyDisjointLifetimes) {
  // Fits side by side: nothing shares.
  auto a = assign_offsets({{100, 0, 5}, {50, 3, 9}}, 1000, 32);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(offsets(*a), (std::vector<Bytes>{0, 128}));
  // Too big side by side: the disjoint pair shares, the overlapping one does not.
  a = assign_offsets({{600, 0, 4}, {600, 5, 9}, {300, 3, 6}}, 1000, 1);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(offsets(*a), (std::vector<Bytes>{0, 0, 600}));
  EXPECT_FALSE(assign_offsets({{600, 0, 9}, {600, 0, 9}}, 1000, 1).ok());
  // Only what must share does: b still fits apart from a, c then shares with (dead) a.
  a = assign_offsets({{600, 0, 4}, {300, 5, 9}, {300, 5, 9}}, 1000, 1);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(offsets(*a), (std::vector<Bytes>{0, 600, 0}));
}

TEST(NkiPlan, AssignOffsetsStacksSmallPartitionBuffersInQuadrants) {
  // Four 32-partition buffers live together fit in one byte range, one quadrant each;
  // a 64-partition one may start at 0 or 64 only.
  std::vector<BufferRequest> reqs;
  for (int i = 0; i < 4; ++i) reqs.push_back({256, 0, 9, 32, 32});
  auto a = assign_offsets(reqs, 256, 32);
  ASSERT_TRUE(a.ok()) << a.error().message;
  std::vector<Partition> parts;
  for (const auto& p : *a) parts.push_back(p.partition);
  std::sort(parts.begin(), parts.end());
  EXPECT_EQ(parts, (std::vector<Partition>{0, 32, 64, 96}));
  EXPECT_EQ(offsets(*a), (std::vector<Bytes>{0, 0, 0, 0}));
  auto b = assign_offsets({{256, 0, 9, 64, 64}, {256, 0, 9, 48, 64}}, 256, 32);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)[0].partition + (*b)[1].partition, 64);
  EXPECT_FALSE(assign_offsets({{256, 0, 9, 128, 128}, {256, 0, 9, 32, 32}}, 256, 32).ok());
}

TEST(NkiPlan, SmallPartitionTensorsSharePartitionsOfOneByteRange) {
  auto k = testing::parse(R"({"hardware": {"sbuf_partition_bytes": 17408},
    "tensors": [
      {"name": "x", "buffer": "hbm", "role": "input", "blocks": [4], "partitions": 32, "free": [256]},
      {"name": "a", "blocks": [4], "partitions": 32, "free": [256]},
      {"name": "b", "blocks": [4], "partitions": 32, "free": [256]},
      {"name": "c", "blocks": [4], "partitions": 32, "free": [256]},
      {"name": "d", "blocks": [4], "partitions": 32, "free": [256]}],
    "body": [{"loop": "i", "trip": 4, "body": [
      {"name": "ld", "engine": "DMA", "cost": 100, "reads": [{"tensor": "x", "block": ["i"]}], "writes": [{"tensor": "a", "block": ["i"]}]},
      {"name": "f", "engine": "Scalar", "cost": 100, "reads": [{"tensor": "a", "block": ["i"]}], "writes": [{"tensor": "b", "block": ["i"]}]},
      {"name": "g", "engine": "Vector", "cost": 100, "reads": [{"tensor": "b", "block": ["i"]}], "writes": [{"tensor": "c", "block": ["i"]}]},
      {"name": "h", "engine": "GpSimd", "cost": 100, "reads": [{"tensor": "c", "block": ["i"]}], "writes": [{"tensor": "d", "block": ["i"]}]}]}]})");
  ASSERT_TRUE(k.ok()) << k.error().message;
  ASSERT_EQ(k->hw.sbuf_usable(), 1024);  // two 512-byte tiles per partition: only quadrants make room for four tensors
  auto p = plan_kernel(*k);
  ASSERT_TRUE(p.ok()) << p.error().message;
  std::vector<Partition> parts;
  for (const auto& tp : p->plans) parts.push_back(tp.partition);
  std::sort(parts.begin(), parts.end());
  EXPECT_NE(parts.front(), parts.back());
  auto r = check_kernel(p->kernel);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->clean()) << r->violations.front().message;
  EXPECT_LT(p->planned.makespan, p->baseline.makespan);
}

TEST(NkiPlan, GeneratedKernelsArePlannedValidAndNoSlower) {
  int differential_cases = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    GenerateOptions g;
    g.seed = seed;
    g.tensors = 12 + static_cast<int>(seed % 5) * 8;
    g.loops = 2 + static_cast<int>(seed % 4) * 2;
    auto k = kernel_from_json(generate_kernel_json(g), "gen.json");
    ASSERT_TRUE(k.ok()) << k.error().message;
    if (seed % 3 == 0) {  // the in-order model plans valid kernels too
      PlanOptions io;
      io.scheduler = Scheduler::kInOrder;
      auto q = plan_kernel(*k, io);
      ASSERT_TRUE(q.ok()) << "seed " << seed << ": " << q.error().message;
      EXPECT_LE(q->planned.makespan, q->baseline.makespan) << "seed " << seed;
    }
    auto p = plan_kernel(*k);
    ASSERT_TRUE(p.ok()) << "seed " << seed << ": " << p.error().message;
    EXPECT_LE(p->planned.makespan, p->baseline.makespan) << "seed " << seed;
    // The recorded timeline: one span per execution, no two spans overlap on a queue.
    ASSERT_EQ(static_cast<int64_t>(p->planned.spans.size()), k->dynamic_instructions);
    std::map<std::pair<int, int>, std::vector<std::pair<Cycles, Cycles>>> by_lane;
    for (const auto& sp : p->planned.spans)
      by_lane[{static_cast<int>(k->instrs[sp.instr].engine), sp.lane}].push_back({sp.start, sp.end});
    for (auto& [lane, v] : by_lane) {
      std::sort(v.begin(), v.end());
      for (std::size_t i = 1; i < v.size(); ++i) EXPECT_LE(v[i - 1].second, v[i].first) << "seed " << seed;
    }
    auto r = check_kernel(p->kernel);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->clean()) << "seed " << seed << ": " << r->violations.front().message;
    // Keeping the planned allocation (read back as the checker evaluates it) times the same.
    PlanOptions keep;
    keep.keep_direct = true;
    auto again = plan_kernel(p->kernel, keep);
    ASSERT_TRUE(again.ok()) << again.error().message;
    EXPECT_EQ(again->planned.makespan, p->planned.makespan) << "seed " << seed;
    ASSERT_TRUE(again->has_input);
    EXPECT_EQ(again->input.makespan, p->planned.makespan) << "seed " << seed;
    // Differential: the planner's interval-based legality against the checker's simulation.
    // Every count below a tensor's minimum must make the checker report a lifetime conflict.
    for (const auto& tp : p->plans) {
      for (int n = 1; n < tp.min_tiles && n <= 4; ++n) {
        Kernel broken = p->kernel;
        Tensor& t = broken.tensors[tp.tensor];
        t.alloc = Allocation{};
        t.alloc.kind = AllocKind::kTable;
        for (int64_t b = 0; b < t.num_blocks(); ++b) {
          Bytes slot = tp.base + (b % n) * tp.stride;
          t.alloc.table.push_back({0, t.buffer == Memory::kPsum ? slot * broken.hw.psum_bank_bytes : slot});
        }
        auto rb = check_kernel(broken);
        ASSERT_TRUE(rb.ok());
        bool flagged = std::any_of(rb->violations.begin(), rb->violations.end(), [&](const Violation& v) {
          return v.kind == ViolationKind::kLifetimeConflict && violated_tensor(v) == t.name;
        });
        EXPECT_TRUE(flagged) << "seed " << seed << " tensor " << t.name << " with " << n << " tiles";
        ++differential_cases;
      }
    }
  }
  EXPECT_GT(differential_cases, 0);
}

TEST(NkiPlan, Deterministic) {
  GenerateOptions g;
  g.seed = 7;
  auto k = kernel_from_json(generate_kernel_json(g), "gen.json");
  ASSERT_TRUE(k.ok());
  auto a = plan_kernel(*k), b = plan_kernel(*k);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(kernel_to_json(a->kernel), kernel_to_json(b->kernel));
  EXPECT_EQ(a->planned.makespan, b->planned.makespan);
}

TEST(NkiPlan, UninitializedReadCannotBePlanned) {
  auto k = testing::parse(R"({"tensors": [{"name": "t", "partitions": 8, "free": [8]}, {"name": "u", "partitions": 8, "free": [8]}],
                              "body": [{"engine": "Vector", "reads": [{"tensor": "t"}], "writes": [{"tensor": "u"}]}]})");
  ASSERT_TRUE(k.ok());
  auto p = plan_kernel(*k);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("before anything writes it"), std::string::npos);
}

}  // namespace
}  // namespace sp::nki

namespace sp::nki {
namespace {

TEST(NkiPlan, TensorsWithDisjointLifetimesShareBytesUnderPressure) {
  // Usable SBUF 2048 bytes: stage one's a and stage two's b (1024-byte tiles) cannot both be
  // double-buffered side by side, but they are never live together (stage two starts from the
  // last block stage one writes, so overlapping the stages gains nothing).
  const char* text = R"({"hardware": {"sbuf_partition_bytes": 18432},
    "tensors": [
      {"name": "x", "buffer": "hbm", "role": "input", "blocks": [8], "partitions": 128, "free": [512]},
      {"name": "a", "blocks": [8], "partitions": 128, "free": [512]},
      {"name": "b", "blocks": [8], "partitions": 128, "free": [512]},
      {"name": "o", "buffer": "hbm", "role": "output", "blocks": [8], "partitions": 128, "free": [512]}],
    "body": [
      {"loop": "i", "trip": 8, "body": [
        {"name": "ld", "engine": "DMA", "cost": 100, "reads": [{"tensor": "x", "block": ["i"]}], "writes": [{"tensor": "a", "block": ["i"]}]},
        {"name": "st", "engine": "Scalar", "cost": 100, "reads": [{"tensor": "a", "block": ["i"]}], "writes": [{"tensor": "o", "block": ["i"]}]}]},
      {"loop": "j", "trip": 8, "body": [
        {"name": "ld2", "engine": "DMA", "cost": 100, "reads": [{"tensor": "o", "block": ["7 - j"]}], "writes": [{"tensor": "b", "block": ["j"]}]},
        {"name": "st2", "engine": "Vector", "cost": 100, "reads": [{"tensor": "b", "block": ["j"]}], "writes": [{"tensor": "o", "block": ["j"]}]}]}]})";
  auto k = testing::parse(text);
  ASSERT_FALSE(k.ok());  // Scalar and Vector may not write HBM
  std::string fixed = text;
  for (const char* e : {"\"Scalar\"", "\"Vector\""}) fixed.replace(fixed.find(e), std::string(e).size(), "\"DMA\"");
  k = testing::parse(fixed);
  ASSERT_TRUE(k.ok()) << k.error().message;
  for (auto sched : {Scheduler::kDataflow, Scheduler::kInOrder}) {
    PlanOptions o;
    o.scheduler = sched;
    auto p = plan_kernel(*k, o);
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_EQ(p->plans[0].tiles, 2);
    EXPECT_EQ(p->plans[1].tiles, 2);
    EXPECT_EQ(p->plans[0].base, p->plans[1].base);  // shared bytes
    EXPECT_LE(p->sbuf_bytes, 2048);
    auto r = check_kernel(p->kernel);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->clean()) << r->violations.front().message;
    // b's first load waits until a's last read is done.
    Cycles a_last = 0, b_first = INT64_MAX;
    for (const auto& s : p->planned.spans) {
      const std::string& n = p->kernel.instrs[s.instr].name;
      if (n == "st") a_last = std::max(a_last, s.end);
      if (n == "ld2") b_first = std::min(b_first, s.start);
    }
    EXPECT_GE(b_first, a_last);
  }
}

}  // namespace
}  // namespace sp::nki

namespace sp::nki {
namespace {

TEST(NkiPlan, KeepDirectCompletesAMixedKernel) {
  // t is directly allocated (double buffering at byte 0), y is automatic: the checker flags
  // the mix; planning with keep_direct allocates y around t and leaves t alone.
  auto k = testing::parse(R"({
    "tensors": [
      {"name": "x", "buffer": "hbm", "role": "input", "blocks": [16], "partitions": 128, "free": [512]},
      {"name": "t", "blocks": [16], "partitions": 128, "free": [512], "alloc": {"kind": "mod_alloc", "base_addr": 0, "num_free_tiles": [2]}},
      {"name": "y", "blocks": [16], "partitions": 128, "free": [512]}],
    "body": [{"loop": "i", "trip": 16, "body": [
      {"name": "load", "engine": "DMA", "cost": 1000, "reads": [{"tensor": "x", "block": ["i"]}], "writes": [{"tensor": "t", "block": ["i"]}]},
      {"name": "exp", "engine": "Scalar", "cost": 1000, "reads": [{"tensor": "t", "block": ["i"]}], "writes": [{"tensor": "y", "block": ["i"]}]}]}]})");
  ASSERT_TRUE(k.ok()) << k.error().message;
  auto in = check_kernel(*k);
  ASSERT_TRUE(in.ok());
  ASSERT_EQ(in->distinct_violations, 1);
  EXPECT_EQ(in->violations[0].kind, ViolationKind::kMixedAllocation);
  PlanOptions o;
  o.keep_direct = true;
  auto p = plan_kernel(*k, o);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_TRUE(p->plans[0].kept);
  EXPECT_EQ(p->plans[0].tiles, 2);
  EXPECT_FALSE(p->plans[1].kept);
  const Tensor& t = p->kernel.tensors[1];
  EXPECT_EQ(t.alloc.kind, AllocKind::kModAlloc);
  EXPECT_EQ(t.alloc.base_addr, 0);
  EXPECT_EQ(t.alloc.num_free_tiles, (std::vector<int64_t>{2}));
  EXPECT_GE(p->plans[1].base, 2048);  // y stays clear of t's two tiles
  EXPECT_EQ(p->planned.makespan, 17000);
  auto out = check_kernel(p->kernel);
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->clean());
  // A kept allocation with its own violation cannot be completed.
  auto bad = testing::parse(R"({"tensors": [
      {"name": "t", "partitions": 64, "free": [8], "alloc": {"kind": "table", "tiles": [[32, 0]]}},
      {"name": "u", "partitions": 8, "free": [8]}],
    "body": [{"engine": "Vector", "writes": [{"tensor": "t"}]}, {"engine": "Vector", "reads": [{"tensor": "t"}], "writes": [{"tensor": "u"}]}]})");
  ASSERT_TRUE(bad.ok());
  auto pb = plan_kernel(*bad, o);
  ASSERT_FALSE(pb.ok());
  EXPECT_EQ(pb.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(pb.error().message.find("cannot keep the direct allocations: start_partition"), std::string::npos)
      << pb.error().message;
}

}  // namespace
}  // namespace sp::nki
