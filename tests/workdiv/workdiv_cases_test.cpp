// Every adopted vector of tests/data/spyre/workdiv_cases.json (docs/workdiv.md lists the ones not
// adopted and why). Cases are read in place with key order preserved (var order matters).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "layout/layout.h"
#include "program/builder.h"
#include "workdiv/workdiv.h"

namespace sp::workdiv {
namespace {

using OJson = nlohmann::ordered_json;

const OJson& cases() {
  static const OJson c = [] {
    std::ifstream f(std::string(SCRATCHPLAN_DATA_DIR) + "/spyre/workdiv_cases.json");
    return f.good() ? OJson::parse(f) : OJson::object();
  }();
  return c;
}

const OJson& find_case(const std::string& id) {
  static const OJson none;
  for (const auto& c : cases()["cases"])
    if (c["id"] == id) return c;
  ADD_FAILURE() << "case " << id << " not found";
  return none;
}

// A split space from an {name: size} object; everything else is filled by the caller.
SplitSpace space_of(const OJson& it_space) {
  SplitSpace s;
  for (auto it = it_space.begin(); it != it_space.end(); ++it) {
    s.names.push_back(it.key());
    s.sizes.push_back(it.value().get<Dim>());
  }
  const std::size_t n = s.names.size();
  s.reduction.assign(n, 0);
  s.blocked.assign(n, 0);
  s.allowed.assign(n, {});
  s.min_splits.assign(n, 1);
  return s;
}

int index_of(const SplitSpace& s, const std::string& name) {
  for (std::size_t i = 0; i < s.names.size(); ++i)
    if (s.names[i] == name) return static_cast<int>(i);
  return -1;
}

std::vector<Split> splits_of(const SplitSpace& s, const OJson& obj, bool* valid_names = nullptr) {
  std::vector<Split> v(s.names.size(), 1);
  if (valid_names) *valid_names = true;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const int i = index_of(s, it.key());
    if (i < 0) {
      if (valid_names) *valid_names = false;
      continue;
    }
    v[i] = it.value().get<Split>();
  }
  return v;
}

void apply_common(SplitSpace& s, const OJson& in) {
  if (in.contains("it_space_adjusted"))
    for (auto it = in["it_space_adjusted"].begin(); it != in["it_space_adjusted"].end(); ++it)
      s.sizes[index_of(s, it.key())] = it.value().get<Dim>();
  for (const char* key : {"min_splits", "span_min_splits"})
    if (in.contains(key))
      for (auto it = in[key].begin(); it != in[key].end(); ++it) s.min_splits[index_of(s, it.key())] = it.value().get<Split>();
  if (in.contains("allowed_splits"))
    for (auto it = in["allowed_splits"].begin(); it != in["allowed_splits"].end(); ++it)
      s.allowed[index_of(s, it.key())] = it.value().get<std::vector<Split>>();
  if (in.contains("blocked"))
    for (const auto& b : in["blocked"]) s.blocked[index_of(s, b.get<std::string>())] = 1;
}

TEST(WorkdivCases, LegacyMultiDimSplit) {
  for (const char* id : {"legacy_msplit_real_split", "legacy_msplit_budget"}) {
    const OJson& c = find_case(id);
    SplitSpace s = space_of(c["input"]["iteration_space"]);
    std::vector<int> prio;
    for (const auto& p : c["input"]["priorities"]) prio.push_back(index_of(s, p.get<std::string>()));
    const int cores = c["input"]["max_cores"].get<int>();
    auto r = distribute(s, prio, {}, cores);
    ASSERT_TRUE(r.ok()) << id;
    Split prod = 1;
    for (Split x : *r) prod *= x;
    EXPECT_GT(prod, 1) << id;
    EXPECT_LE(prod, cores) << id;
    EXPECT_EQ(*r, splits_of(s, c["derived"])) << id;
    if (c["asserted"].contains("mb")) {
      EXPECT_EQ((*r)[index_of(s, "mb")], c["asserted"]["mb"].get<Split>());
    }
  }
}

TEST(WorkdivCases, LegacyCoreSplitWithPriorities) {
  for (const char* id : {"legacy_core_split_all_cores", "legacy_core_split_negative_priority"}) {
    const OJson& c = find_case(id);
    const auto sizes = c["input"]["sizes"].get<std::vector<Dim>>();
    const auto prio = c["input"]["priorities"].get<std::vector<int>>();
    SplitSpace s;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      s.names.push_back("s" + std::to_string(i));
      s.sizes.push_back(sizes[i]);
      s.reduction.push_back(0);
      s.blocked.push_back(prio[i] < 0);  // a negative priority disables the dimension
    }
    std::vector<int> order;
    for (std::size_t i = 0; i < sizes.size(); ++i)
      if (prio[i] >= 0) order.push_back(static_cast<int>(i));
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return prio[a] > prio[b]; });
    auto r = distribute(s, order, {}, c["input"]["max_cores"].get<int>());
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r, c["derived"].get<std::vector<Split>>()) << id;
  }
}

TEST(WorkdivCases, MultiDimIterationSpaceSplit) {
  int n = 0;
  for (const auto& c : cases()["cases"]) {
    const std::string id = c["id"];
    if (id.rfind("msplit_", 0) != 0) continue;
    ++n;
    const OJson& in = c["input"];
    SplitSpace s = space_of(in["iteration_space"]);
    apply_common(s, in);
    std::vector<int> outs, reds;
    for (const auto& o : in["output_dims"]) outs.push_back(index_of(s, o.get<std::string>()));
    for (const auto& r : in["reduction_dims"]) reds.push_back(index_of(s, r.get<std::string>()));
    for (std::size_t v = 0; v < s.names.size(); ++v)  // every var that is not an output dim reduces
      s.reduction[v] = std::find(outs.begin(), outs.end(), static_cast<int>(v)) == outs.end();
    auto r = distribute(s, outs, reds, in["max_cores"].get<int>());
    const OJson& a = c["asserted"];
    if (a.contains("raises")) {
      ASSERT_FALSE(r.ok()) << id;
      EXPECT_NE(r.error().message.find("at most one split reduction"), std::string::npos) << r.error().message;
      continue;
    }
    ASSERT_TRUE(r.ok()) << id << ": " << r.error().message;
    Split prod = 1;
    int red = 0;
    for (std::size_t v = 0; v < r->size(); ++v) {
      prod *= (*r)[v];
      red += s.reduction[v] && (*r)[v] > 1;
    }
    if (a.contains("product")) {
      EXPECT_EQ(prod, a["product"].get<Split>()) << id;
    }
    EXPECT_LE(red, 1) << id;
    for (auto it = a.begin(); it != a.end(); ++it)
      if (index_of(s, it.key()) >= 0) {
        EXPECT_EQ((*r)[index_of(s, it.key())], it.value().get<Split>()) << id << " " << it.key();
      }
    if (c.contains("derived")) {
      EXPECT_EQ(*r, splits_of(s, c["derived"])) << id;
    }
  }
  EXPECT_EQ(n, 8);
}

std::vector<std::vector<Split>> expected_candidates(const SplitSpace& s, const OJson& list) {
  std::vector<std::vector<Split>> out;
  for (const auto& c : list) out.push_back(splits_of(s, c));
  return out;
}

TEST(WorkdivCases, EnumerateCandidates) {
  for (const char* id : {"enum_span_floor_simple", "enum_legal_domain"}) {
    const OJson& c = find_case(id);
    SplitSpace s = space_of(c["input"]["it_space"]);
    apply_common(s, c["input"]);
    EXPECT_EQ(enumerate_candidates(s, c["input"]["max_cores"].get<int>(), 1000),
              expected_candidates(s, c["asserted"]["candidates"]))
        << id;
  }
}

TEST(WorkdivCases, WorkDivisionContext) {
  int n = 0;
  for (const auto& c : cases()["cases"]) {
    const std::string id = c["id"];
    if (id.rfind("ctx_", 0) != 0) continue;
    ++n;
    const OJson& in = c["input"];
    SplitSpace s = space_of(in["it_space"]);
    apply_common(s, in);
    // Vars that index no output are reduction vars.
    std::set<std::string> out_syms;
    if (in.contains("output"))
      for (const auto& x : in["output"]["index_symbols"]) out_syms.insert(x.get<std::string>());
    if (in.contains("output"))
      for (std::size_t v = 0; v < s.names.size(); ++v) s.reduction[v] = !out_syms.count(s.names[v]);
    // The span limit, from the output's default layout (x and y index its host dims in order).
    if (in.contains("output") && in["output"].contains("default_layout")) {
      const auto& o = in["output"];
      auto l = layout::default_layout(o["shape"].get<std::vector<Dim>>(), layout::DType::kFp16);
      ASSERT_TRUE(l.ok());
      EXPECT_EQ(l->device_size, o["default_layout"]["device_size"].get<std::vector<Dim>>());
      EXPECT_EQ(l->stride_map, o["default_layout"]["stride_map"].get<std::vector<layout::Stride>>());
      std::vector<int> vars;
      for (const auto& x : o["index_symbols"]) vars.push_back(index_of(s, x.get<std::string>()));
      s.tensors.push_back(span_tensor(*l, vars));
      EXPECT_EQ(per_core_span(s.tensors[0], {1, 1}), c["derived"]["per_core_span_bytes(x=1,y=1)"].get<Bytes>());
      EXPECT_EQ(per_core_span(s.tensors[0], {1, 2}), c["derived"]["per_core_span_bytes(x=1,y=2)"].get<Bytes>());
    }
    const int cores = in["max_cores"].get<int>();
    EXPECT_EQ(enumerate_candidates(s, cores, 1000), expected_candidates(s, c["asserted"]["candidates"])) << id;
    for (const auto& p : c["asserted"]["probes"]) {
      const auto sp = splits_of(s, p["splits"]);
      EXPECT_EQ(committed_legal(s, sp), p["committed_legal"].get<bool>()) << id << " " << p.dump();
      EXPECT_EQ(proposed_legal(s, sp, cores), p["proposed_legal"].get<bool>()) << id << " " << p.dump();
    }
    for (const auto& p : c["asserted"].value("is_legal", OJson::array())) {
      bool names_ok = true;
      auto sp = splits_of(s, p["splits"], &names_ok);
      EXPECT_EQ(names_ok && proposed_legal(s, sp, cores), p["legal"].get<bool>()) << id << " " << p.dump();
    }
  }
  EXPECT_EQ(n, 6);
}

TEST(WorkdivCases, BlockedDimWithCommittedSplitIsRejected) {
  // constraint_collect_intersection: "blocked r0 with committed r0=2" -> Unsupported 'blocked dim'.
  SplitSpace s = space_of(OJson::parse(R"({"r0": 8, "o0": 4})"));
  s.blocked[0] = 1;
  s.reduction[0] = 1;
  s.min_splits[0] = 2;
  auto r = distribute(s, {1}, {0}, 32);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("blocked dim"), std::string::npos);
}

TEST(WorkdivCases, SpanSearchExcludesBlockedDims) {
  // span_reduction_blocked_passthrough: the blocked outer var is never split by pass 1; the span
  // search moves on to the next device dim's var.
  auto l = layout::default_layout({4, 8192, 8192}, layout::DType::kFp16);  // device [8192, 128, 4, 64]
  ASSERT_TRUE(l.ok());
  SplitSpace s = space_of(OJson::parse(R"({"b": 4, "r0": 8192, "n": 128})"));
  s.blocked[1] = 1;
  s.tensors.push_back(span_tensor(*l, {0, 1, 2}));
  EXPECT_EQ(per_core_span(s.tensors[0], {1, 1, 1}), Bytes{8192} * 128 * 4 * 128);
  auto f = span_floors(s, 32);
  ASSERT_FALSE(f.ok());  // only r0 could shrink the outermost dim, and it is blocked
  EXPECT_NE(f.error().message.find("r0 sets the span but may not be split"), std::string::npos) << f.error().message;
  s.blocked[1] = 0;
  auto g = span_floors(s, 32);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(*g, (std::vector<Split>{1, 2, 1}));  // 256 MiB exactly at r0 = 2
}

TEST(WorkdivCases, CoordinateMaskBlocksPartialStickReductions) {
  const OJson& c = find_case("constraint_coordinate_mask");
  for (const auto& k : c["asserted"]) {
    // A reduction over r0 (the stick dim when stick_vars names it) into a [4] output.
    const Dim r = k["r0_range"].get<Dim>();
    const bool stick = k["stick_vars"].contains("r0");
    program::Builder b("mask");
    auto x = b.input("x", stick ? std::vector<Dim>{4, r} : std::vector<Dim>{r, 4});
    auto y = b.tensor("y", {4});
    b.reduce("sum", "sum", x, {stick ? 1 : 0}, y);
    auto p = b.build();
    ASSERT_TRUE(p.ok()) << p.error().message;
    std::vector<layout::Layout> ls;
    for (const auto& t : p->tensors) ls.push_back(*program::tensor_layout(t));
    std::vector<VarInfo> vars;
    auto s = op_space(*p, 0, ls, Options{}, &vars);
    ASSERT_TRUE(s.ok());
    const int rv = stick ? 1 : 0;
    EXPECT_EQ(vars[rv].blocked, !k["blocked"].empty()) << k.dump();
  }
}

TEST(WorkdivCases, MatmulHbmBytes) {
  const OJson& a = find_case("matmul_split_cost_hbm_bytes")["asserted"];
  EXPECT_EQ(matmul_hbm_bytes(1, 8, 12800, 4096, 2, 2, true), a["shared_weight flat fp16 bytes"].get<Bytes>());
  EXPECT_EQ(matmul_hbm_bytes(1, 8, 12800, 4096, 1, 2, true), a["shared_weight operand_bytes=1 output_bytes=2"].get<Bytes>());
  EXPECT_EQ(matmul_hbm_bytes(2, 8, 12800, 4096, 1, 2, false),
            a["separate weights B=2,m=1,n=8,k=1 operand 1 output 2"].get<Bytes>());
}

TEST(WorkdivCases, Constants) {
  EXPECT_EQ(kMaxSpanBytes, cases()["constants"]["MAX_SPAN_BYTES"].get<Bytes>());
  EXPECT_EQ(kMaxCores, cases()["constants"]["sencores_default"].get<int>());
}

}  // namespace
}  // namespace sp::workdiv
