// The checker: the seed's failure examples are flagged with tensor, block, instruction and
// iteration; the corrected forms are clean; every static rule fires on a minimal kernel.
#include <algorithm>

#include "nki/check.h"
#include "nki_test_util.h"

namespace sp::nki {
namespace {

using testing::load_example;
using testing::parse;

CheckReport check_ok(const Kernel& k) {
  auto r = check_kernel(k);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : CheckReport{};
}

int count(const CheckReport& r, ViolationKind kind) {
  return static_cast<int>(std::count_if(r.violations.begin(), r.violations.end(), [&](auto& v) { return v.kind == kind; }));
}

TEST(NkiCheck, SeedExamplesThatAreCorrectAreClean) {
  for (const char* name : {"simple_1d_alloc_func.json", "factory_alloc.json", "mod_alloc_double.json", "lifetime_fixed.json"}) {
    CheckReport r = check_ok(load_example(name));
    EXPECT_TRUE(r.clean()) << name << ": " << (r.violations.empty() ? "" : r.violations[0].message);
    EXPECT_GT(r.executions, 0);
  }
}

TEST(NkiCheck, EightTilesOnTwoPhysicalTilesIsALifetimeConflict) {
  CheckReport r = check_ok(load_example("lifetime_conflict.json"));
  ASSERT_EQ(r.distinct_violations, 6);  // blocks 0..5 are overwritten before the second loop reads them
  for (int b = 0; b < 6; ++b) {
    const Violation& v = r.violations[b];
    EXPECT_EQ(v.kind, ViolationKind::kLifetimeConflict);
    EXPECT_EQ(violated_tensor(v), "t1");
    EXPECT_EQ(v.detail.block, (std::vector<int64_t>{b}));
    EXPECT_EQ(v.detail.instruction, "exp");
    EXPECT_EQ(v.detail.iteration, "{j=" + std::to_string(b) + "}");
    // The first overwrite: block b + 2 by the load at i = b + 2.
    EXPECT_NE(v.message.find("overwritten by block (" + std::to_string(b + 2) + ",) (load at {i=" + std::to_string(b + 2) + "})"),
              std::string::npos)
        << v.message;
  }
}

TEST(NkiCheck, CorrectedLifetimeFormIsClean) {
  CheckReport r = check_ok(load_example("lifetime_fixed.json"));
  EXPECT_TRUE(r.clean());
  EXPECT_EQ(r.executions, 24);
}

TEST(NkiCheck, OverlappingT0T1AreFlagged) {
  CheckReport r = check_ok(load_example("overlap_t0_t1.json"));
  ASSERT_EQ(count(r, ViolationKind::kOverlap), 2);
  const Violation& v = r.violations[0];
  EXPECT_EQ(violated_tensor(v), "t0");
  EXPECT_EQ(v.detail.block, (std::vector<int64_t>{1}));
  EXPECT_EQ(v.detail.instruction, "sum4");
  EXPECT_EQ(v.detail.iteration, "{i=0}");
  EXPECT_NE(v.message.find("tensor t1 block (0,) (load_b0 at {i=0})"), std::string::npos) << v.message;
}

TEST(NkiCheck, OverlapOnlyMattersWhileLive) {
  // The same two overlapping allocations, used one after the other: nothing is clobbered.
  auto k = parse(R"({"tensors": [
      {"name": "x", "buffer": "hbm", "role": "input", "blocks": [4], "partitions": 128, "free": [512]},
      {"name": "t0", "blocks": [4], "partitions": 128, "free": [512], "alloc": {"kind": "mod_alloc", "base_addr": 0, "num_free_tiles": [2]}},
      {"name": "t1", "blocks": [4], "partitions": 128, "free": [512], "alloc": {"kind": "mod_alloc", "base_addr": 1024, "num_free_tiles": [2]}},
      {"name": "o", "buffer": "hbm", "role": "output", "blocks": [4], "partitions": 128, "free": [512]}],
    "body": [
      {"loop": "i", "trip": 4, "body": [
        {"name": "ld", "engine": "DMA", "reads": [{"tensor": "x", "block": ["i"]}], "writes": [{"tensor": "t0", "block": ["i"]}]},
        {"name": "cp", "engine": "Vector", "reads": [{"tensor": "t0", "block": ["i"]}], "writes": [{"tensor": "t1", "block": ["i"]}]},
        {"name": "st", "engine": "DMA", "reads": [{"tensor": "t1", "block": ["i"]}], "writes": [{"tensor": "o", "block": ["i"]}]}]}]})");
  ASSERT_TRUE(k.ok()) << k.error().message;
  // i=1: cp writes t1[1] at 2048 (free); i=2: ld writes t0[2] at 0; cp writes t1[2] at 1024, clobbering t0[1] (already read).
  EXPECT_TRUE(check_ok(*k).clean());
}

TEST(NkiCheck, StaticRules) {
  auto k = parse(R"({"tensors": [
      {"name": "x", "buffer": "hbm", "role": "input", "blocks": [2], "partitions": 64, "free": [100]},
      {"name": "mis", "blocks": [2], "partitions": 64, "free": [100], "alloc": {"kind": "table", "tiles": [[0, 0], [0, 202]]}},
      {"name": "sp", "blocks": [2], "partitions": 64, "free": [16], "alloc": {"kind": "table", "tiles": [[64, 4096], [32, 8192]]}},
      {"name": "far", "partitions": 128, "free": [1024], "alloc": {"kind": "func", "start_partition": 0, "byte_addr": "180000"}},
      {"name": "ps", "buffer": "psum", "blocks": [2], "partitions": 128, "free": [512], "dtype": "float32",
       "alloc": {"kind": "table", "tiles": [[0, 0], [0, 1024]]}},
      {"name": "pb", "buffer": "psum", "partitions": 128, "free": [8], "dtype": "float32",
       "alloc": {"kind": "mod_alloc", "base_bank": 3, "base_addr": 64}},
      {"name": "au", "partitions": 16, "free": [8]},
      {"name": "hb", "buffer": "hbm", "partitions": 16, "free": [8]}],
    "body": [
      {"loop": "i", "trip": 2, "body": [
        {"name": "ld", "engine": "DMA", "reads": [{"tensor": "x", "block": ["i"]}], "writes": [{"tensor": "mis", "block": ["i"]}, {"tensor": "sp", "block": ["i"]}]},
        {"name": "mm", "engine": "Tensor", "reads": [{"tensor": "mis", "block": ["i"]}, {"tensor": "sp", "block": ["i"]}], "writes": [{"tensor": "ps", "block": ["i"]}]}]},
      {"name": "use", "engine": "Vector", "reads": [{"tensor": "au"}], "writes": [{"tensor": "far"}]}]})");
  ASSERT_TRUE(k.ok()) << k.error().message;
  CheckReport r = check_ok(*k);
  auto find = [&](ViolationKind kind, const std::string& tensor) -> const Violation* {
    for (const auto& v : r.violations)
      if (v.kind == kind && violated_tensor(v) == tensor) return &v;
    return nullptr;
  };
  const Violation* v = find(ViolationKind::kMisaligned, "mis");  // 202 is not a multiple of 4
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->detail.block, (std::vector<int64_t>{1}));
  EXPECT_EQ(v->detail.instruction, "ld");
  EXPECT_EQ(v->detail.iteration, "{i=1}");
  v = find(ViolationKind::kStartPartition, "sp");  // 64 partitions may start at 0 or 64, not 32
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->detail.block, (std::vector<int64_t>{1}));
  EXPECT_EQ(count(r, ViolationKind::kStartPartition), 1);
  EXPECT_EQ(count(r, ViolationKind::kPartitionRange), 0);  // 32 + 64 and 64 + 64 both fit in 128
  v = find(ViolationKind::kAddressRange, "far");  // 180000 + 2048 > 176 KiB
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->detail.instruction, "use");
  v = find(ViolationKind::kPsumBankCrossing, "ps");  // 2048 bytes starting at 1024
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->detail.block, (std::vector<int64_t>{1}));
  EXPECT_NE(find(ViolationKind::kPsumBase, "pb"), nullptr);
  EXPECT_NE(find(ViolationKind::kMixedAllocation, "au"), nullptr);
  EXPECT_NE(find(ViolationKind::kHbmNotOutput, "hb"), nullptr);
  EXPECT_EQ(find(ViolationKind::kHbmNotOutput, "x"), nullptr);  // inputs are fine
  v = find(ViolationKind::kReadBeforeWrite, "au");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->detail.instruction, "use");
  for (const auto& x : r.violations) EXPECT_EQ(x.message.find('\n'), std::string::npos);
}

TEST(NkiCheck, PartitionRangeBeyondLastPartition) {
  auto k = parse(R"({"tensors": [{"name": "t", "partitions": 32, "free": [8], "alloc": {"kind": "table", "tiles": [[96, 0]]}},
                                 {"name": "u", "partitions": 128, "free": [8], "alloc": {"kind": "table", "tiles": [[0, 64]]}}],
                     "hardware": {"name": "half", "partitions": 112}, "body": [{"engine": "Vector", "writes": [{"tensor": "t"}, {"tensor": "u"}]}]})");
  ASSERT_FALSE(k.ok());  // u has 128 partitions on a 112-partition core
  k = parse(R"({"tensors": [{"name": "t", "partitions": 32, "free": [8], "alloc": {"kind": "table", "tiles": [[96, 0]]}}],
                "hardware": {"name": "half", "partitions": 112}, "body": [{"engine": "Vector", "writes": [{"tensor": "t"}]}]})");
  ASSERT_TRUE(k.ok()) << k.error().message;
  CheckReport r = check_ok(*k);
  EXPECT_EQ(count(r, ViolationKind::kPartitionRange), 1);
}

TEST(NkiCheck, RepeatedViolationsAreCountedOnce) {
  // A 2-tile ring read with a lag of 2 blocks: every read of the steady state is clobbered.
  auto k = parse(R"({"tensors": [
      {"name": "x", "buffer": "hbm", "role": "input", "blocks": [64], "partitions": 128, "free": [64]},
      {"name": "t", "blocks": [64], "partitions": 128, "free": [64], "alloc": {"kind": "mod_alloc", "base_addr": 0, "num_free_tiles": [2]}},
      {"name": "y", "blocks": [2], "partitions": 128, "free": [64], "alloc": {"kind": "mod_alloc", "base_addr": 4096, "num_free_tiles": [2]}}],
    "body": [{"loop": "r", "trip": 3, "body": [{"loop": "i", "trip": 62, "body": [
      {"name": "ld", "engine": "DMA", "reads": [{"tensor": "x", "block": ["i + 2"]}], "writes": [{"tensor": "t", "block": ["i + 2"]}]},
      {"name": "use", "engine": "Vector", "reads": [{"tensor": "t", "block": ["i"]}], "writes": [{"tensor": "y", "block": [0]}]}]}]}]})");
  ASSERT_TRUE(k.ok()) << k.error().message;
  CheckReport r = check_ok(*k);
  // Blocks 0 and 1 are never written (read before write in every round); blocks 2..61 are
  // clobbered by block i + 2 just before their read, in every round.
  EXPECT_EQ(count(r, ViolationKind::kReadBeforeWrite), 2);
  EXPECT_EQ(count(r, ViolationKind::kLifetimeConflict), 60);
  EXPECT_EQ(r.distinct_violations, 62);
  for (const auto& v : r.violations) EXPECT_EQ(v.detail.occurrences, 3) << v.message;
}

}  // namespace
}  // namespace sp::nki

namespace sp::nki {
namespace {

TEST(NkiCheck, PartiallyOverlappingTilesOfOneTensor) {
  // Two distinct placements of one tensor that share bytes [512, 1024): writing block 1 destroys
  // block 0 before its read.
  auto k = testing::parse(R"({"tensors": [
      {"name": "x", "buffer": "hbm", "role": "input", "blocks": [2], "partitions": 128, "free": [512]},
      {"name": "t", "blocks": [2], "partitions": 128, "free": [512], "alloc": {"kind": "table", "tiles": [[0, 0], [0, 512]]}},
      {"name": "o", "buffer": "hbm", "role": "output", "blocks": [2], "partitions": 128, "free": [512]}],
    "body": [
      {"loop": "i", "trip": 2, "body": [{"name": "ld", "engine": "DMA", "reads": [{"tensor": "x", "block": ["i"]}], "writes": [{"tensor": "t", "block": ["i"]}]}]},
      {"loop": "j", "trip": 2, "body": [{"name": "st", "engine": "DMA", "reads": [{"tensor": "t", "block": ["j"]}], "writes": [{"tensor": "o", "block": ["j"]}]}]}]})");
  ASSERT_TRUE(k.ok()) << k.error().message;
  auto r = check_kernel(*k);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->distinct_violations, 1);
  EXPECT_EQ(r->violations[0].kind, ViolationKind::kLifetimeConflict);
  EXPECT_EQ(r->violations[0].detail.block, (std::vector<int64_t>{0}));
  EXPECT_EQ(r->violations[0].detail.iteration, "{j=0}");
}

TEST(NkiCheck, MultiDimFuncAndPartitionQuadrants) {
  // blocks (2, 4), 32 partitions: quadrant idx1, byte offset idx0 * fdim_size: eight disjoint tiles.
  auto k = testing::parse(R"({"tensors": [
      {"name": "x", "buffer": "hbm", "role": "input", "blocks": [2, 4], "partitions": 32, "free": [64], "dtype": "float32"},
      {"name": "t", "blocks": [2, 4], "partitions": 32, "free": [64], "dtype": "float32",
       "alloc": {"kind": "func", "start_partition": "idx1 * pdim_size", "byte_addr": "idx0 * fdim_size + 1024"}},
      {"name": "o", "buffer": "hbm", "role": "output", "blocks": [2, 4], "partitions": 32, "free": [64], "dtype": "float32"}],
    "body": [
      {"loop": "a", "trip": 2, "body": [{"loop": "b", "trip": 4, "body": [
        {"name": "ld", "engine": "DMA", "reads": [{"tensor": "x", "block": ["a", "b"]}], "writes": [{"tensor": "t", "block": ["a", "b"]}]}]}]},
      {"loop": "c", "trip": 2, "body": [{"loop": "d", "trip": 4, "body": [
        {"name": "st", "engine": "DMA", "reads": [{"tensor": "t", "block": ["c", "3 - d"]}], "writes": [{"tensor": "o", "block": ["c", "d"]}]}]}]}]})");
  ASSERT_TRUE(k.ok()) << k.error().message;
  auto r = check_kernel(*k);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->clean()) << r->violations.front().message;
  const auto& pl = r->placements[1];
  EXPECT_EQ(pl[5].start_partition, 32);  // block (1, 1)
  EXPECT_EQ(pl[5].byte_addr, 1024 + 256);
  // With 64 partitions the same function breaks the ISA rule for odd idx1 (32, 96).
  auto k2 = testing::parse(R"({"tensors": [{"name": "t", "blocks": [2], "partitions": 64, "free": [8],
      "alloc": {"kind": "func", "start_partition": "idx * 32", "byte_addr": 0}}], "body": []})");
  ASSERT_TRUE(k2.ok()) << k2.error().message;
  auto r2 = check_kernel(*k2);
  ASSERT_TRUE(r2.ok());
  ASSERT_EQ(r2->distinct_violations, 1);
  EXPECT_EQ(r2->violations[0].kind, ViolationKind::kStartPartition);
  EXPECT_NE(r2->violations[0].message.find("(never used)"), std::string::npos);
}

}  // namespace
}  // namespace sp::nki

namespace sp::nki {
namespace {

// Issue 11 item 7: one write (b) destroys two adjacent tiles of a; before that, the load of a[1]
// wrote over bytes that the load of a[0] had also written (both overlap b's tile). Each victim
// must name b's write, not a's neighbouring load.
TEST(NkiCheck, EveryDestroyedReadNamesTheWriteThatDestroyedIt) {
  auto k = testing::parse(R"({"tensors": [
      {"name": "x", "buffer": "hbm", "role": "input", "partitions": 128, "free": [512]},
      {"name": "a", "blocks": [2], "partitions": 128, "free": [512], "source": "k.py:5",
       "alloc": {"kind": "table", "tiles": [[0, 0], [0, 1024]]}},
      {"name": "b", "partitions": 128, "free": [512], "source": "k.py:6", "alloc": {"kind": "table", "tiles": [[0, 512]]}},
      {"name": "o", "buffer": "hbm", "role": "output", "partitions": 128, "free": [512]}],
    "body": [
      {"name": "load_a0", "engine": "DMA", "source": "k.py:8", "reads": [{"tensor": "x"}], "writes": [{"tensor": "a", "block": [0]}]},
      {"name": "load_a1", "engine": "DMA", "source": "k.py:9", "reads": [{"tensor": "x"}], "writes": [{"tensor": "a", "block": [1]}]},
      {"name": "load_b", "engine": "DMA", "source": "k.py:10", "reads": [{"tensor": "x"}], "writes": [{"tensor": "b"}]},
      {"name": "use", "engine": "Vector", "source": "k.py:11", "reads": [{"tensor": "a", "block": [0]}, {"tensor": "a", "block": [1]}, {"tensor": "b"}],
       "writes": [{"tensor": "b"}]},
      {"name": "st", "engine": "DMA", "reads": [{"tensor": "b"}], "writes": [{"tensor": "o"}]}]})");
  ASSERT_TRUE(k.ok()) << k.error().message;
  auto r = check_kernel(*k);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->distinct_violations, 2);
  for (const Violation& v : r->violations) {
    EXPECT_EQ(v.kind, ViolationKind::kOverlap) << v.message;
    EXPECT_EQ(violated_tensor(v), "a");
    EXPECT_EQ(destroying_tensor(v), "b") << v.message;
    EXPECT_EQ(v.detail.by_instruction, "load_b");
    EXPECT_EQ(v.detail.by_source, "k.py:10");
    EXPECT_EQ(v.detail.instruction_source, "k.py:11");
    EXPECT_EQ(v.detail.tensor_source, "k.py:5");
    EXPECT_NE(v.message.find("tensor a (declared at k.py:5)"), std::string::npos) << v.message;
    EXPECT_NE(v.message.find("read by use (k.py:11)"), std::string::npos) << v.message;
    EXPECT_NE(v.message.find("(load_b (k.py:10) at {})"), std::string::npos) << v.message;
  }
}

// A partial write destroys only the tiles its own rectangle meets.
TEST(NkiCheck, PartialWritesDestroyOnlyWhatTheyTouch) {
  auto k = testing::parse(R"({"tensors": [
      {"name": "x", "buffer": "hbm", "role": "input", "partitions": 128, "free": [512]},
      {"name": "a", "partitions": 128, "free": [256], "alloc": {"kind": "table", "tiles": [[0, 0]]}},
      {"name": "b", "partitions": 128, "free": [512], "alloc": {"kind": "table", "tiles": [[0, 256]]}},
      {"name": "o", "buffer": "hbm", "role": "output", "partitions": 128, "free": [512]}],
    "body": [
      {"name": "la", "engine": "DMA", "reads": [{"tensor": "x"}], "writes": [{"tensor": "a"}]},
      {"name": "lb", "engine": "DMA", "reads": [{"tensor": "x"}], "writes": [{"tensor": "b", "bytes": [512, 1024]}]},
      {"name": "sa", "engine": "DMA", "reads": [{"tensor": "a"}], "writes": [{"tensor": "o"}]},
      {"name": "lb2", "engine": "DMA", "reads": [{"tensor": "x"}], "writes": [{"tensor": "b", "partitions": [0, 64], "bytes": [0, 512]}]},
      {"name": "sa2", "engine": "DMA", "reads": [{"tensor": "a"}], "writes": [{"tensor": "o"}]}]})");
  ASSERT_TRUE(k.ok()) << k.error().message;
  auto r = check_kernel(*k);
  ASSERT_TRUE(r.ok());
  // lb writes bytes [768, 1280): a ([0, 512)) survives; lb2 writes [256, 768) on 64 partitions: a is hit.
  ASSERT_EQ(r->distinct_violations, 1);
  EXPECT_EQ(r->violations[0].detail.instruction, "sa2");
  EXPECT_EQ(r->violations[0].detail.by_instruction, "lb2");
}

}  // namespace
}  // namespace sp::nki

namespace sp::nki {
namespace {

// A mask on loop indices switches whole instructions off in some iterations ("when": g >= 0).
TEST(NkiCheck, GuardedInstructionsRunOnlyWhereTheMaskHolds) {
  auto k = testing::parse(R"({"tensors": [
      {"name": "x", "buffer": "hbm", "role": "input", "partitions": 128, "free": [512]},
      {"name": "t", "blocks": [4], "partitions": 128, "free": [512], "alloc": {"kind": "mod_alloc", "base_addr": 0, "num_free_tiles": [2]}},
      {"name": "o", "buffer": "hbm", "role": "output", "partitions": 128, "free": [512]}],
    "body": [
      {"loop": "i", "trip": 4, "body": [
        {"name": "ld", "engine": "DMA", "when": ["1 - i"], "reads": [{"tensor": "x"}], "writes": [{"tensor": "t", "block": ["i"]}]}]},
      {"loop": "j", "trip": 2, "body": [
        {"name": "st", "engine": "DMA", "reads": [{"tensor": "t", "block": ["j"]}], "writes": [{"tensor": "o"}]}]}]})");
  ASSERT_TRUE(k.ok()) << k.error().message;
  auto r = check_kernel(*k);
  ASSERT_TRUE(r.ok());
  // Only blocks 0 and 1 are loaded (i <= 1), so nothing overwrites them before the stores.
  EXPECT_EQ(r->executions, 4);
  EXPECT_TRUE(r->clean()) << r->violations[0].message;
  auto j = kernel_to_json(*k);
  EXPECT_EQ(j["body"][0]["body"][0]["when"][0], "-i + 1");
  auto again = kernel_from_json(j, "again.json");
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(check_kernel(*again)->executions, 4);
}

}  // namespace
}  // namespace sp::nki
