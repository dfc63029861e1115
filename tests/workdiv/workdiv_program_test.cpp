// Work division of whole programs (seed 001 rules with exact numbers), its compile-time errors,
// the candidate menu and the checker.
#include <gtest/gtest.h>

#include "program/layout_compat.h"
#include "program/builder.h"
#include "workdiv/workdiv.h"

namespace sp::workdiv {
namespace {

using program::Builder;
using program::IteratorType;
using program::OpKind;
using V = std::vector<Split>;

Division run(const std::string& example, int cores) {
  auto p = program::example_program(example);
  EXPECT_TRUE(p.ok());
  Options o;
  o.max_cores = cores;
  auto d = divide(*p, o);
  EXPECT_TRUE(d.ok()) << example << ": " << d.error().message;
  return d.ok() ? *d : Division{};
}

TEST(WorkdivSeed001, MatmulOutputDimsFirstByDecreasingSize) {
  Division d = run("matmul", 32);
  const OpDivision& mm = d.ops[0];
  // m=1024 (elements), n=4096 and k=4096 counted in sticks (64 each): m takes all 32 cores.
  EXPECT_EQ(mm.vars[1].adjusted, 64);
  EXPECT_EQ(mm.vars[2].adjusted, 64);
  EXPECT_EQ(mm.splits, (V{32, 1, 1}));
  EXPECT_EQ(mm.cores, 32);
  EXPECT_EQ(run("matmul", 6).ops[0].splits, (V{4, 1, 1}));  // largest divisor of 1024 <= 6
  EXPECT_EQ(run("matmul", 1).ops[0].splits, (V{1, 1, 1}));
}

TEST(WorkdivSeed001, ReductionSplitOnlyAfterOutputsAreExhausted) {
  Division d = run("softmax_dim0", 32);
  // col_max over x[4096, 1024]: the output var d1 has 16 sticks -> 16 cores; the remaining 2 go
  // to the one reduction var d0.
  EXPECT_EQ(d.ops[0].splits, (V{2, 16}));
  EXPECT_EQ(d.ops[1].splits, (V{32, 1}));  // pointwise: d0 (4096) before d1 (16 sticks)
  Division rows = run("softmax_lastdim", 32);
  EXPECT_EQ(rows.ops[0].splits, (V{32, 1}));  // row max: outputs absorb all cores, K unsplit
}

TEST(WorkdivSeed001, StickVarsUseTheLargestElemsPerStick) {
  Builder b("mixed");
  auto x = b.input("x", {64, 4096}, layout::DType::kFp32);  // 128 sticks of 32
  auto y = b.tensor("y", {64, 4096}, layout::DType::kFp8);   // 32 sticks of 128
  b.pointwise("cast", "cast", {x}, y);
  auto p = b.build();
  ASSERT_TRUE(p.ok());
  auto d = divide(*p, Options{});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->ops[0].vars[1].elems_per_stick, 128);
  EXPECT_EQ(d->ops[0].vars[1].adjusted, 32);
  EXPECT_EQ(d->ops[0].splits, (V{32, 1}));  // 64 rows beat 32 sticks
}

TEST(WorkdivSeed001, SpanReductionCommitsMinimumReductionSplit) {
  Division d = run("moe_mlp", 32);
  // expert_up: w_gate_up [8, 4096, 14336] fp16 has device [4096, 224, 8, 64]: 896 MiB per core
  // unsplit. The outermost device dim is K (64 sticks); K=2 leaves 448 MiB, K=4 fits (224 MiB).
  const OpDivision& up = d.ops[2];
  EXPECT_EQ(up.floors, (V{1, 1, 1, 4}));
  // Pass 2: K is committed, so no other reduction; the 8 remaining cores go to n (224 sticks).
  EXPECT_EQ(up.splits, (V{1, 1, 8, 4}));
  EXPECT_EQ(up.spans[1].span, Bytes{1024} * 224 * 8 * 128);
  EXPECT_EQ(output_partition(up, up.splits), 8);  // the K split does not cut the output
  EXPECT_LE(up.spans[1].span, kMaxSpanBytes);
  const OpDivision& down = d.ops[4];
  EXPECT_EQ(down.floors, (V{1, 1, 1, 4}));  // 14336 = 224 sticks; 4 is the smallest divisor that fits
  EXPECT_FALSE(d.ops[1].divided);  // opaque routing op
}

TEST(WorkdivSeed001, StickVarThatIsAlsoASpanVarWithNoValidCountIsAnError) {
  // d0 is the stick var of a [128] fp16 tensor (2 sticks: splits 1 or 2), the data operand of a
  // reduction along it, and the outermost device dim of a [1024, 128, 4096] operand, whose span
  // needs d0 split by more than 2. (That operand is read restickified, which frees its own stick
  // var d1 but not its span.)
  Builder b("conflict");
  auto vec = b.input("vec", {128});
  auto big = b.input("big", {1024, 128, 4096});
  auto out = b.tensor("out", {4096, 1024});
  b.generic("dot", OpKind::kReduction, "sum", {vec, big}, {out},
            {IteratorType::kReduction, IteratorType::kParallel, IteratorType::kParallel}, {{0}, {2, 0, 1}, {1, 2}});
  auto p = b.build();
  ASSERT_TRUE(p.ok()) << p.error().message;
  auto d = divide(*p, Options{});
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(d.error().message.find("stick variable"), std::string::npos) << d.error().message;
  EXPECT_NE(d.error().message.find("span variable"), std::string::npos) << d.error().message;
}

TEST(WorkdivSeed001, MoreThanOneReductionVarForSpanIsAnError) {
  // Reduce x[2^22, 8, 64] over d0 and d1: the outermost device dim is d1 (8), then d0 (2^22
  // rows x 128 B = 512 MiB): both reduction vars must be split.
  Builder b("two_reductions");
  auto x = b.input("x", {Dim{1} << 22, 8, 64});
  auto y = b.tensor("y", {64});
  b.reduce("sum", "sum", x, {0, 1}, y);
  auto p = b.build();
  ASSERT_TRUE(p.ok()) << p.error().message;
  auto d = divide(*p, Options{});
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("more than one reduction variable"), std::string::npos) << d.error().message;
}

TEST(WorkdivSeed001, CoresOutOfRangeAreRejected) {
  auto p = program::example_program("matmul");
  ASSERT_TRUE(p.ok());
  for (int c : {0, 33, -1}) {
    Options o;
    o.max_cores = c;
    auto d = divide(*p, o);
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.error().kind, ErrorKind::kBadInput);
  }
}

TEST(WorkdivMenu, CandidatesAreLegalDistinctAndStartWithTheDivision) {
  for (const auto& name : program::example_names()) {
    auto p = program::example_program(name);
    ASSERT_TRUE(p.ok());
    auto d = divide(*p, Options{});
    ASSERT_TRUE(d.ok()) << name << ": " << d.error().message;
    std::vector<layout::Layout> ls;
    for (const auto& t : p->tensors) ls.push_back(*program::tensor_layout(t));
    for (const auto& od : d->ops) {
      if (!od.divided) continue;
      ASSERT_FALSE(od.candidates.empty());
      EXPECT_EQ(od.candidates[0], od.splits);
      auto s = op_space(*p, od.op, ls, Options{}, nullptr);
      ASSERT_TRUE(s.ok());
      s->min_splits = od.floors;
      for (std::size_t i = 0; i < od.candidates.size(); ++i) {
        EXPECT_TRUE(proposed_legal(*s, od.candidates[i], 32)) << name << " op " << od.op;
        for (std::size_t j = 0; j < i; ++j) EXPECT_NE(od.candidates[i], od.candidates[j]);
      }
      EXPECT_GT(od.candidates.size(), 1u) << name << " op " << od.op;
    }
  }
}

TEST(WorkdivChecker, RejectsBrokenDivisions) {
  auto p = program::example_program("moe_mlp");
  ASSERT_TRUE(p.ok());
  auto d = divide(*p, Options{});
  ASSERT_TRUE(d.ok());
  std::vector<layout::Layout> ls;
  for (const auto& t : p->tensors) ls.push_back(*program::tensor_layout(t));
  EXPECT_TRUE(check_division(*p, ls, *d, Options{}).ok());
  Division bad = *d;
  bad.ops[2].splits = {1, 1, 32, 1};  // drops the span floor on K: w_gate_up spans 896 MiB
  EXPECT_FALSE(check_division(*p, ls, bad, Options{}).ok());
  bad = *d;
  bad.ops[0].splits = {3, 1, 1};  // 3 does not divide 256 rows
  EXPECT_FALSE(check_division(*p, ls, bad, Options{}).ok());
  bad = *d;
  bad.ops[3].splits = {8, 1, 8};  // 64 cores
  EXPECT_FALSE(check_division(*p, ls, bad, Options{}).ok());
}

TEST(LayoutCompat, BundledExamplesNeedNoRestickify) {
  for (const auto& name : program::example_names()) {
    auto p = program::example_program(name);
    ASSERT_TRUE(p.ok());
    auto issues = program::check_program_layouts(*p);
    ASSERT_TRUE(issues.ok());
    for (const auto& i : *issues) ADD_FAILURE() << name << ": " << i.message;
  }
}

TEST(LayoutCompat, DetectsRestickifyAndPadding) {
  // Attention with K in its default layout (sticked on the head dim = K of Q @ K^T).
  Builder b("qk");
  auto q = b.input("q", {4, 256, 128}), k = b.input("k", {4, 256, 128});
  auto s = b.tensor("s", {4, 256, 256});
  b.matmul("qk", q, k, s, true);
  auto p = b.build();
  ASSERT_TRUE(p.ok());
  auto issues = program::check_program_layouts(*p);
  ASSERT_TRUE(issues.ok());
  ASSERT_EQ(issues->size(), 1u);
  EXPECT_EQ((*issues)[0].tensor, 1);
  EXPECT_EQ((*issues)[0].fix, program::FixKind::kRestickify);
  EXPECT_NE((*issues)[0].message.find("B must be sticked on N"), std::string::npos) << (*issues)[0].message;
  // Matmul with K = 150: B's K must be padded to 192 (3 sticks of A).
  Builder m("pad");
  auto a = m.input("a", {64, 150}), w = m.input("w", {150, 256});
  auto c = m.tensor("c", {64, 256});
  m.matmul("mm", a, w, c);
  auto pm = m.build();
  ASSERT_TRUE(pm.ok());
  auto pi = program::check_program_layouts(*pm);
  ASSERT_TRUE(pi.ok());
  ASSERT_EQ(pi->size(), 1u);
  EXPECT_EQ((*pi)[0].fix, program::FixKind::kPadding);
  EXPECT_NE((*pi)[0].message.find("padded with zeros to 192"), std::string::npos) << (*pi)[0].message;
  // Pointwise add of x and a transposed-layout y: y needs a restickify.
  Builder pw("pw");
  auto x = pw.input("x", {128, 256}), y = pw.input("y", {128, 256});
  pw.set_dim_order(y, {1, 0});
  auto z = pw.tensor("z", {128, 256});
  pw.pointwise("add", "add", {x, y}, z);
  auto pp = pw.build();
  ASSERT_TRUE(pp.ok());
  auto ppi = program::check_program_layouts(*pp);
  ASSERT_TRUE(ppi.ok());
  ASSERT_EQ(ppi->size(), 1u);
  EXPECT_EQ((*ppi)[0].tensor, 1);
  // A row reduction writing a dense output needs a sparse output instead.
  Builder r("red");
  auto xr = r.input("x", {128, 256});
  auto yr = r.tensor("y", {128});
  r.reduce("sum", "sum", xr, {1}, yr);
  auto pr = r.build();
  ASSERT_TRUE(pr.ok());
  auto pri = program::check_program_layouts(*pr);
  ASSERT_TRUE(pri.ok());
  ASSERT_EQ(pri->size(), 1u);
  EXPECT_NE((*pri)[0].message.find("must be sparse"), std::string::npos) << (*pri)[0].message;
}

TEST(WorkdivScale, SyntheticTenThousandOps) {
  auto p = program::synthetic_program(10000, 1);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->ops.size(), 10000u);
  auto d = divide(*p, Options{});
  ASSERT_TRUE(d.ok()) << d.error().message;
  for (const auto& od : d->ops) EXPECT_GE(od.cores, 1);
}

}  // namespace
}  // namespace sp::workdiv

namespace sp::workdiv {
namespace {

// Vars inside affine sums (conv's 2*h + r) are never split; batch, output and input channels are.
TEST(WorkdivSummed, ConvSplitsOnlyPlainVars) {
  const char* text = R"J({"name": "conv", "tensors": [
    {"name": "x", "shape": [2, 64, 58, 58], "dtype": "fp16", "graph_input": true},
    {"name": "w", "shape": [128, 64, 3, 3], "dtype": "fp16", "graph_input": true},
    {"name": "y", "shape": [2, 128, 28, 28], "dtype": "fp16", "graph_output": true}],
   "ops": [{"name": "conv", "kind": "reduction", "payload": "conv2d", "inputs": ["x", "w"], "outputs": ["y"],
    "iterator_types": ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"],
    "indexing_maps": ["(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 * 2 + d5, d3 * 2 + d6)",
                      "(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)",
                      "(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)"]}]})J";
  auto j = parse_json_text(text, "conv.json");
  ASSERT_TRUE(j.ok());
  auto p = program::program_from_json(*j, "conv.json");
  ASSERT_TRUE(p.ok()) << p.error().message;
  Options o;
  o.candidates = true;
  auto d = divide(*p, o);
  ASSERT_TRUE(d.ok()) << d.error().message;
  const OpDivision& od = d->ops[0];
  for (int v : {2, 3, 5, 6}) {
    EXPECT_TRUE(od.vars[v].summed) << v;
    EXPECT_TRUE(od.vars[v].blocked) << v;
    EXPECT_EQ(od.splits[v], 1) << v;
    for (std::size_t c = 0; c < od.candidates.size(); ++c) EXPECT_EQ(od.candidates[c][v], 1) << v;
  }
  EXPECT_GT(od.cores, 1);
  std::vector<layout::Layout> ls;
  for (const auto& t : p->tensors) ls.push_back(*program::tensor_layout(t));
  Division bad = *d;
  bad.ops[0].splits = {1, 1, 2, 1, 1, 1, 1};  // splitting h would need a halo
  auto st = check_division(*p, ls, bad, o);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("affine sum"), std::string::npos) << st.error().message;
}

// Heads read through a reshape, x[s, h * 64 + d]: h is the outer var of a dense sum on whole
// sticks, so it splits exactly; d (inner) never does. With 32-element heads a core's run would
// end mid-stick (fp16 sticks hold 64), so h is blocked too.
TEST(WorkdivSummed, OuterVarOfDenseSumSplits) {
  auto make = [](int hd) {
    const std::string n = std::to_string(768 / hd), d = std::to_string(hd);
    return std::string(R"J({"name": "heads", "tensors": [
      {"name": "x", "shape": [197, 768], "dtype": "fp16", "graph_input": true},
      {"name": "y", "shape": [)J") + n + ", 197, " + d + R"J(], "dtype": "fp16", "graph_output": true}],
     "ops": [{"name": "split_heads", "kind": "pointwise", "inputs": ["x"], "outputs": ["y"],
      "iterator_types": ["parallel", "parallel", "parallel"],
      "indexing_maps": ["(d0, d1, d2) -> (d1, d0 * )J" + d + R"J( + d2)", "(d0, d1, d2) -> (d0, d1, d2)"]}]})J";
  };
  for (int hd : {64, 32}) {
    auto j = parse_json_text(make(hd), "heads.json");
    ASSERT_TRUE(j.ok());
    auto p = program::program_from_json(*j, "heads.json");
    ASSERT_TRUE(p.ok()) << p.error().message;
    Options o;
    o.candidates = true;
    auto d = divide(*p, o);
    ASSERT_TRUE(d.ok()) << d.error().message;
    const OpDivision& od = d->ops[0];
    EXPECT_TRUE(od.vars[2].blocked);
    EXPECT_EQ(od.vars[0].blocked, hd == 32) << hd;
    bool h_split = false;
    for (std::size_t c = 0; c < od.candidates.size(); ++c) {
      EXPECT_EQ(od.candidates[c][2], 1);
      h_split = h_split || od.candidates[c][0] > 1;
    }
    EXPECT_EQ(h_split, hd == 64) << hd;
  }
}

// One tensor read through two maps (swin's relative positions: x[i, k] - x[i, j]) counts as two
// operands, each with its own stick var (a division used to fail its own check).
TEST(WorkdivSummed, SameTensorThroughTwoMaps) {
  const char* text = R"J({"name": "pairs", "tensors": [
    {"name": "x", "shape": [16, 49], "dtype": "fp16", "graph_input": true},
    {"name": "y", "shape": [16, 49, 49], "dtype": "fp16", "graph_output": true}],
   "ops": [{"name": "sub", "kind": "pointwise", "inputs": ["x", "x"], "outputs": ["y"],
    "iterator_types": ["parallel", "parallel", "parallel"],
    "indexing_maps": ["(d0, d1, d2) -> (d0, d2)", "(d0, d1, d2) -> (d0, d1)", "(d0, d1, d2) -> (d0, d1, d2)"]}]})J";
  auto j = parse_json_text(text, "pairs.json");
  ASSERT_TRUE(j.ok());
  auto p = program::program_from_json(*j, "pairs.json");
  ASSERT_TRUE(p.ok()) << p.error().message;
  auto d = divide(*p, Options{});
  ASSERT_TRUE(d.ok()) << d.error().message;
  // x[i, j] is sticked on j = d1 while the output is sticked on d2: the op reads that operand
  // restickified (sparse), so only x[i, k] and y bind their stick var d2 (49 elements, one stick)
  // and d1 splits freely.
  EXPECT_EQ(d->ops[0].vars[2].elems_per_stick, 64);
  EXPECT_EQ(d->ops[0].splits[2], 1);
  EXPECT_EQ(d->ops[0].vars[1].elems_per_stick, 0);  // (divide returns only checked divisions)
}

}  // namespace
}  // namespace sp::workdiv
