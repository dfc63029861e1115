// Reader, affine expressions and allocation formulas, with the seed's exact numbers.
#include "nki/check.h"
#include "nki/kernel.h"
#include "nki_test_util.h"

namespace sp::nki {
namespace {

using testing::load_example;
using testing::parse;

std::vector<Bytes> addrs(const std::vector<TilePlacement>& pl) {
  std::vector<Bytes> v;
  for (const auto& p : pl) v.push_back(p.byte_addr);
  return v;
}

TEST(NkiModel, Simple1dAllocFuncAddresses) {
  Kernel k = load_example("simple_1d_alloc_func.json");
  const Tensor& t = k.tensors[k.find_tensor("t")];
  EXPECT_EQ(t.fbytes(), 1024);  // fdim_size = 512 * sizeof(bfloat16)
  auto pl = evaluate_allocation(k, t);
  EXPECT_EQ(addrs(pl), (std::vector<Bytes>{0, 1024, 2048, 3072}));
  for (const auto& p : pl) EXPECT_EQ(p.start_partition, 0);
}

TEST(NkiModel, FactoryAllocatorBumpsInDeclarationOrder) {
  Kernel k = load_example("factory_alloc.json");
  auto t0 = evaluate_allocation(k, k.tensors[k.find_tensor("t0")]);
  auto t1 = evaluate_allocation(k, k.tensors[k.find_tensor("t1")]);
  EXPECT_EQ(t0.front().byte_addr, 0);
  EXPECT_EQ(t1.front().byte_addr, 4096);
  EXPECT_EQ(addrs(t1), (std::vector<Bytes>{4096, 5120, 6144, 7168}));
}

TEST(NkiModel, ModAllocTableOfTheSeed) {
  Kernel k = load_example("mod_alloc_double.json");
  auto pl = evaluate_allocation(k, k.tensors[k.find_tensor("t")]);
  EXPECT_EQ(addrs(pl), (std::vector<Bytes>{0, 1024, 0, 1024}));
  for (const auto& p : pl) EXPECT_EQ(p.start_partition, 0);
}

TEST(NkiModel, ModAllocPartitionTilesForSmallPdim) {
  auto k = parse(R"({"tensors": [{"name": "t", "blocks": [8], "partitions": 32, "free": [64], "dtype": "float32",
      "alloc": {"kind": "mod_alloc", "base_addr": 512, "num_par_tiles": [4], "num_free_tiles": [2]}}], "body": []})");
  ASSERT_TRUE(k.ok()) << k.error().message;
  auto pl = evaluate_allocation(*k, k->tensors[0]);
  // The SDK's reference model: the moduli apply independently, partition tile i mod 4 and free
  // tile i mod 2 (not one i mod 8 split in two).
  std::vector<Partition> sp;
  for (auto& p : pl) sp.push_back(p.start_partition);
  EXPECT_EQ(sp, (std::vector<Partition>{0, 32, 64, 96, 0, 32, 64, 96}));
  EXPECT_EQ(addrs(pl), (std::vector<Bytes>{512, 768, 512, 768, 512, 768, 512, 768}));
}

TEST(NkiModel, ModAllocPerDimensionModuliOnTwoBlockDims) {
  // blocks (3, 4), num_free_tiles (2, 3): free tile lin = (i0 mod 2) * 3 + (i1 mod 3).
  auto k = parse(R"({"tensors": [{"name": "t", "blocks": [3, 4], "partitions": 128, "free": [16], "dtype": "float32",
      "alloc": {"kind": "mod_alloc", "base_addr": 0, "num_free_tiles": [2, 3]}}], "body": []})");
  ASSERT_TRUE(k.ok()) << k.error().message;
  std::vector<Bytes> want;
  for (int i0 = 0; i0 < 3; ++i0)
    for (int i1 = 0; i1 < 4; ++i1) want.push_back(((i0 % 2) * 3 + (i1 % 3)) * 64);
  EXPECT_EQ(addrs(evaluate_allocation(*k, k->tensors[0])), want);
}

TEST(NkiModel, ModAllocTupleLengthsFollowTheReferenceTruncation) {
  // Longer than the block index: zip truncates to the first entry (attn_fwd_v9 passes (n,) to
  // tensors without block dims: base_addr for every tile). Shorter: trailing dims ignored.
  auto k = parse(R"({"tensors": [
      {"name": "a", "partitions": 128, "free": [16], "alloc": {"kind": "mod_alloc", "base_addr": 64, "num_free_tiles": [4]}},
      {"name": "b", "blocks": [4], "partitions": 128, "free": [16], "alloc": {"kind": "mod_alloc", "base_addr": 0, "num_free_tiles": [2, 5, 7]}},
      {"name": "c", "blocks": [2, 3], "partitions": 128, "free": [16], "alloc": {"kind": "mod_alloc", "base_addr": 0, "num_free_tiles": [2]}}],
    "body": []})");
  ASSERT_TRUE(k.ok()) << k.error().message;
  EXPECT_EQ(addrs(evaluate_allocation(*k, k->tensors[0])), (std::vector<Bytes>{64}));
  EXPECT_EQ(addrs(evaluate_allocation(*k, k->tensors[1])), (std::vector<Bytes>{0, 32, 0, 32}));
  EXPECT_EQ(addrs(evaluate_allocation(*k, k->tensors[2])), (std::vector<Bytes>{0, 0, 0, 32, 32, 32}));
}

TEST(NkiModel, SbufAlignmentDefaultIsFourBytes) {
  // AWS's tested direct-allocation kernels place tiles at 260, 772, 4356: multiples of 4.
  auto k = parse(R"({"tensors": [
      {"name": "x", "buffer": "hbm", "role": "input", "partitions": 128, "free": [2]},
      {"name": "t", "blocks": [3], "partitions": 128, "free": [2], "alloc": {"kind": "table", "tiles": [[0, 260], [0, 772], [0, 4356]]}}],
    "body": [{"loop": "i", "trip": 3, "body": [{"engine": "DMA", "reads": [{"tensor": "x"}], "writes": [{"tensor": "t", "block": ["i"]}]}]}]})");
  ASSERT_TRUE(k.ok()) << k.error().message;
  EXPECT_EQ(k->hw.sbuf_min_align, 4);
  auto r = check_kernel(*k);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->clean()) << r->violations[0].message;
}

TEST(NkiModel, ModuloInAFuncAllocationIsOneClearLine) {
  auto k = parse(R"({"tensors": [{"name": "t", "blocks": [4], "partitions": 128, "free": [512],
      "alloc": {"kind": "func", "start_partition": 0, "byte_addr": "(idx % 2) * fdim_size"}}], "body": []})");
  ASSERT_FALSE(k.ok());
  const std::string& m = k.error().message;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  EXPECT_EQ(m.find("missing ')'"), std::string::npos) << m;
  EXPECT_NE(m.find("unsupported operator '%' at column 6"), std::string::npos) << m;
  EXPECT_NE(m.find("$.tensors[0].alloc.byte_addr"), std::string::npos) << m;
}

TEST(NkiModel, PsumModAllocUsesBanks) {
  auto k = parse(R"({"tensors": [{"name": "p", "buffer": "psum", "blocks": [4], "partitions": 128, "free": [512],
      "dtype": "float32", "alloc": {"kind": "mod_alloc", "base_bank": 2, "num_bank_tiles": [2]}}], "body": []})");
  ASSERT_TRUE(k.ok()) << k.error().message;
  EXPECT_EQ(addrs(evaluate_allocation(*k, k->tensors[0])), (std::vector<Bytes>{4096, 6144, 4096, 6144}));
}

TEST(NkiModel, AffineExpressions) {
  Affine a;
  std::string err;
  ASSERT_TRUE(parse_affine("2*i + j - 1 + 3*(i - j)", {"i", "j"}, {}, a, err)) << err;
  EXPECT_EQ(eval(a, {4, 1}), 2 * 4 + 1 - 1 + 3 * (4 - 1));
  ASSERT_TRUE(parse_affine("idx * fdim_size + 4096", {"idx"}, {{"fdim_size", 1024}}, a, err));
  EXPECT_EQ(eval(a, {3}), 3 * 1024 + 4096);
  EXPECT_FALSE(parse_affine("i * j", {"i", "j"}, {}, a, err));
  EXPECT_NE(err.find("not affine"), std::string::npos);
  EXPECT_FALSE(parse_affine("k + 1", {"i"}, {}, a, err));
  EXPECT_NE(err.find("unknown name 'k'"), std::string::npos);
  EXPECT_FALSE(parse_affine("i +", {"i"}, {}, a, err));
  EXPECT_FALSE(parse_affine("99999999999999999999", {}, {}, a, err));
}

TEST(NkiModel, RoundTripKeepsBehaviour) {
  for (const char* name : {"lifetime_conflict.json", "overlap_t0_t1.json", "matmul_psum.json", "factory_alloc.json",
                           "simple_1d_alloc_func.json", "lifetime_fixed.json"}) {
    Kernel k = load_example(name);
    auto again = kernel_from_json(kernel_to_json(k), "again.json");
    ASSERT_TRUE(again.ok()) << name << ": " << again.error().message;
    auto a = check_kernel(k), b = check_kernel(*again);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->distinct_violations, b->distinct_violations) << name;
    EXPECT_EQ(a->executions, b->executions) << name;
    for (std::size_t t = 0; t < k.tensors.size(); ++t)
      EXPECT_EQ(addrs(a->placements[t]), addrs(b->placements[t])) << name << " tensor " << t;
  }
}

struct BadCase {
  const char* what;
  const char* json;
  const char* expect;  // substring of the one-line error
};

TEST(NkiModel, BadInputIsOneLocatedLine) {
  const BadCase cases[] = {
      {"unknown engine",
       R"({"tensors": [], "body": [{"name": "x", "engine": "Warp", "cost": 1}]})", "$.body[0].engine: unknown engine \"Warp\""},
      {"block out of range",
       R"({"tensors": [{"name": "t", "blocks": [4], "partitions": 128, "free": [8]}],
           "body": [{"loop": "i", "trip": 4, "body": [{"engine": "Vector", "writes": [{"tensor": "t", "block": ["i + 1"]}]}]}]})",
       "ranges over [1, 4] but block dim 0 has size 4"},
      {"partition dim too large",
       R"({"tensors": [{"name": "t", "blocks": [4], "partitions": 129, "free": [8]}], "body": []})",
       "$.tensors[0].partitions: partition dim 129 exceeds the 128 partitions"},
      {"zero trip", R"({"tensors": [], "body": [{"loop": "i", "trip": 0, "body": []}]})",
       "$.body[0].trip: loop bound must be positive, got 0"},
      {"negative trip", R"({"tensors": [], "body": [{"loop": "i", "trip": -3, "body": []}]})", "got -3"},
      {"unknown tensor", R"({"tensors": [], "body": [{"engine": "DMA", "reads": [{"tensor": "q"}]}]})",
       "unknown tensor \"q\""},
      {"wrong index count",
       R"({"tensors": [{"name": "t", "blocks": [4, 2], "partitions": 1, "free": [8]}],
           "body": [{"engine": "Vector", "writes": [{"tensor": "t", "block": [0]}]}]})",
       "has 2 block dims, got 1 indices"},
      {"loop var out of scope",
       R"({"tensors": [{"name": "t", "blocks": [4], "partitions": 1, "free": [8]}],
           "body": [{"loop": "i", "trip": 4, "body": []}, {"engine": "Vector", "writes": [{"tensor": "t", "block": ["i"]}]}]})",
       "unknown name 'i'"},
      {"compute engine on HBM",
       R"({"tensors": [{"name": "h", "buffer": "hbm", "role": "input", "partitions": 1, "free": [8]}],
           "body": [{"engine": "Scalar", "reads": [{"tensor": "h"}]}]})",
       "only the DMA engine reads or writes HBM"},
      {"table length",
       R"({"tensors": [{"name": "t", "blocks": [3], "partitions": 1, "free": [8], "alloc": {"kind": "table", "tiles": [[0, 0]]}}], "body": []})",
       "expected one [start_partition, byte_addr] per logical block (3)"},
      {"non-affine block", R"({"tensors": [{"name": "t", "blocks": [16], "partitions": 1, "free": [8]}],
           "body": [{"loop": "i", "trip": 4, "body": [{"loop": "j", "trip": 4, "body": [
             {"engine": "Vector", "writes": [{"tensor": "t", "block": ["i*j"]}]}]}]}]})",
       "not affine"},
      {"huge nest", R"({"tensors": [], "body": [{"loop": "i", "trip": 100000, "body": [{"loop": "j", "trip": 100000, "body": [{"engine": "DMA"}]}]}]})",
       "too large to simulate exactly"},
  };
  for (const auto& c : cases) {
    auto k = parse(c.json);
    ASSERT_FALSE(k.ok()) << c.what;
    EXPECT_EQ(k.error().kind, ErrorKind::kBadInput) << c.what;
    EXPECT_NE(k.error().message.find(c.expect), std::string::npos) << c.what << ": " << k.error().message;
    EXPECT_EQ(k.error().message.find('\n'), std::string::npos) << c.what;
    EXPECT_EQ(k.error().message.rfind("inline.json: ", 0), 0u) << c.what << ": " << k.error().message;
  }
}

TEST(NkiModel, HardwareFromJsonAndBuiltin) {
  auto hw = read_hardware_file(testing::example("hardware_small.json"));
  ASSERT_TRUE(hw.ok()) << hw.error().message;
  EXPECT_EQ(hw->sbuf_usable(), 4096);
  EXPECT_EQ(hw->psum_banks, 4);
  auto v2 = builtin_hardware("neuroncore-v2");
  ASSERT_TRUE(v2.ok());
  EXPECT_EQ(v2->sbuf_usable(), 176 * 1024);
  EXPECT_EQ(v2->psum_bytes(), 16 * 1024);
  EXPECT_FALSE(builtin_hardware("neuroncore-v9").ok());
}

TEST(NkiModel, Trn2AndItsDescriptionRoundTrip) {
  auto t2 = builtin_hardware("trn2");
  ASSERT_TRUE(t2.ok());
  EXPECT_EQ(t2->sbuf_usable(), 212992);  // nl.tile_size.total_available_sbuf_size on trn2
  EXPECT_EQ(t2->psum_bytes(), 16 * 1024);
  EXPECT_TRUE(is_builtin_hardware_name("trn1") && is_builtin_hardware_name("trn2") && !is_builtin_hardware_name("tpu"));
  auto back = hardware_from_json(JsonCursor(hardware_to_json(*t2), "hw"));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->sbuf_usable(), 212992);
  EXPECT_EQ(back->name, "trn2");
}

TEST(NkiModel, PerUseAlignmentAndGenericCallsRoundTrip) {
  // A bf16 address= tile at byte 2 states its own alignment (2): clean; without it the
  // hardware's sbuf_min_align (4) applies.
  const char* text = R"({"modelled_generically": [{"call": "nisa.frob", "source": "k.py:9"}],
    "tensors": [{"name": "t", "partitions": 128, "free": [4], "dtype": "bfloat16", "alloc": {"kind": "table", "tiles": [[0, 2]], "align": 2}}],
    "body": [{"engine": "Vector", "writes": [{"tensor": "t"}]}, {"engine": "Vector", "reads": [{"tensor": "t"}]}]})";
  auto k = parse(text);
  ASSERT_TRUE(k.ok()) << k.error().message;
  EXPECT_EQ(k->tensors[0].alloc.align, 2);
  ASSERT_EQ(k->generic_calls.size(), 1u);
  EXPECT_EQ(k->generic_calls[0].first, "nisa.frob");
  auto rep = check_kernel(*k);
  ASSERT_TRUE(rep.ok());
  EXPECT_TRUE(rep->clean());
  Json j = kernel_to_json(*k);
  auto again = kernel_from_json(j, "again.json");
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(kernel_to_json(*again), j);
  std::string no_align = text;
  no_align.replace(no_align.find(", \"align\": 2"), 12, "");
  auto k4 = parse(no_align);
  ASSERT_TRUE(k4.ok()) << k4.error().message;
  auto rep4 = check_kernel(*k4);
  ASSERT_TRUE(rep4.ok());
  ASSERT_FALSE(rep4->clean());
  EXPECT_EQ(rep4->violations[0].kind, ViolationKind::kMisaligned);
  EXPECT_FALSE(parse(R"({"tensors": [{"name": "t", "partitions": 128, "free": [4], "alloc": {"kind": "table", "tiles": [[0, 0]], "align": 0}}], "body": []})").ok());
}

}  // namespace
}  // namespace sp::nki

namespace sp::nki {
namespace {

TEST(NkiModel, EmptyLoopsAreDroppedSoHugeTripsCostNothing) {
  auto k = testing::parse(R"({"tensors": [], "body": [{"loop": "i", "trip": 4000000000000000000, "body": [
      {"loop": "j", "trip": 4000000000000000000, "body": []}]}, {"engine": "DMA", "cost": 3}]})");
  ASSERT_TRUE(k.ok()) << k.error().message;
  EXPECT_EQ(k->dynamic_instructions, 1);
  int n = 0;
  for_each_execution(*k, [&](int, const std::vector<int64_t>&) { return ++n, true; });
  EXPECT_EQ(n, 1);
}

}  // namespace
}  // namespace sp::nki

namespace sp::nki {
namespace {

// What the tracer adds to the model survives kernel_to_json: sources, partial rectangles,
// accumulating writes, loop kinds and the hardware's cycle model.
TEST(NkiModel, TracerFieldsRoundTrip) {
  const char* text = R"({"hardware": {"cycle_model": {"dma_fixed": 10}},
    "tensors": [
      {"name": "x", "buffer": "hbm", "role": "input", "partitions": 128, "free": [512], "source": "k.py:3"},
      {"name": "p", "buffer": "psum", "blocks": [2], "partitions": 128, "free": [512], "dtype": "float32", "source": "k.py:5",
       "alloc": {"kind": "mod_alloc", "base_bank": 1, "num_bank_tiles": [2]}}],
    "body": [{"loop": "i", "trip": 2, "kind": "sequential", "body": [
      {"name": "mm", "engine": "Tensor", "source": "k.py:7", "reads": [],
       "writes": [{"tensor": "p", "block": ["i"], "partitions": [0, 64], "bytes": [0, 1024], "accumulate": true}]}]}]})";
  auto k = parse(text);
  ASSERT_TRUE(k.ok()) << k.error().message;
  EXPECT_EQ(k->tensors[1].source, "k.py:5");
  EXPECT_EQ(k->instrs[0].source, "k.py:7");
  EXPECT_TRUE(k->instrs[0].writes[0].accumulate);
  EXPECT_EQ(k->instrs[0].writes[0].p1, 64);
  EXPECT_EQ(k->loops[0].kind, "sequential");
  Json j = kernel_to_json(*k);
  auto again = kernel_from_json(j, "again.json");
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(kernel_to_json(*again), j);
  EXPECT_EQ(j["hardware"]["cycle_model"]["dma_fixed"], 10.0);
  EXPECT_EQ(j["hardware"]["cycle_model"]["min_ii"], 64.0);
  // Strict keys hold in the new objects too.
  auto bad = parse(R"({"hardware": {"cycle_model": {"dma_fixd": 1}}, "tensors": [], "body": []})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("did you mean \"dma_fixed\""), std::string::npos) << bad.error().message;
  auto rect = parse(R"({"tensors": [{"name": "t", "partitions": 128, "free": [4], "alloc": {"kind": "table", "tiles": [[0, 0]]}}],
    "body": [{"engine": "Vector", "writes": [{"tensor": "t", "bytes": [0, 9]}]}]})");
  ASSERT_FALSE(rect.ok());
  EXPECT_NE(rect.error().message.find("expected [lo, hi) with 0 <= lo < hi <= 8"), std::string::npos) << rect.error().message;
}

}  // namespace
}  // namespace sp::nki
