// Ring transfers (docs/lx.md "Ring transfers"): a value its readers slice differently than its
// writer moves LX-to-LX over the inter-core ring instead of through HBM, only when that is faster.
#include <gtest/gtest.h>

#include <optional>
#include <random>

#include "core/json_reader.h"
#include "lx/lx.h"

namespace sp::lx {
namespace {

// x (input) -> p0 -> a (sliced "rows") -> p1 reads a as "cols" -> b -> p2 -> y (output); plus
// optional extra mismatched hand-offs a -> p3 ("k") for the reference.
struct Builder {
  Graph g;
  int tensor(const std::string& n, Bytes bytes, bool in, bool out) {
    g.tensors.push_back(GTensor{n, bytes, bytes / 2, in, out});
    return static_cast<int>(g.tensors.size()) - 1;
  }
  void op(const std::string& n, int cores, int in, const std::string& in_slice, int out, const std::string& out_slice,
          double flops = 0) {
    GOp o;
    o.name = n;
    o.kind = "pointwise";
    o.cores = cores;
    o.flops = flops;
    o.reads.push_back(GOperand{in, in_slice, g.tensors[in].bytes / cores});
    o.writes.push_back(GOperand{out, out_slice, g.tensors[out].bytes / cores});
    g.ops.push_back(o);
  }
};

Graph chain() {
  Builder b;
  const int x = b.tensor("x", 1 << 22, true, false), a = b.tensor("a", 1 << 22, false, false);
  const int c = b.tensor("c", 1 << 22, false, false), y = b.tensor("y", 1 << 22, false, true);
  b.op("p0", 8, x, "rows", a, "rows");
  b.op("p1", 8, a, "cols", c, "cols");  // reads a sliced differently: a core-div mismatch
  b.op("p2", 8, c, "cols", y, "cols");
  b.g.name = "ring_chain";
  return b.g;
}

Options options() {
  Options o;
  o.clone_inputs = false;
  o.reorder = false;
  o.time_limit = 0.5;
  return o;
}

int rings(const Plan& p) {
  int n = 0;
  for (const GOp& op : p.graph.ops) n += op.kind == "ring";
  return n;
}

Bytes hbm(const Plan& p) { return p.totals.hbm_read + p.totals.hbm_write; }

TEST(LxRing, ChosenWhenFasterThanHbmAndShownEverywhere) {
  Hardware hw;
  hw.ring_bytes_per_s = 1e12;  // a fast ring: 512 KiB per core in 0.5 us (the HBM round trip of a: 41 us)
  auto with = plan_graph(chain(), hw, options());
  ASSERT_TRUE(with.ok()) << with.error().message;
  Options off = options();
  off.ring_transfers = false;
  auto without = plan_graph(chain(), hw, off);
  ASSERT_TRUE(without.ok());
  EXPECT_EQ(rings(*without), 0);
  ASSERT_EQ(rings(*with), 1);
  EXPECT_EQ(with->ring_transfers, 1);
  EXPECT_LT(hbm(*with), hbm(*without));  // a's write and read saved
  EXPECT_EQ(hbm(*without) - hbm(*with), 2 * (1 << 22));
  EXPECT_LT(with->totals.time_s, without->totals.time_s);
  EXPECT_TRUE(check_plan(*with).ok());
  EXPECT_LE(with->totals.lower_bound_hbm, hbm(*with));
  EXPECT_LE(with->totals.split_lower_bound_hbm, hbm(*with));
  // priced: the ring op's time is its bytes over the ring bandwidth (plus the launch overhead)
  for (std::size_t i = 0; i < with->graph.ops.size(); ++i)
    if (with->graph.ops[i].kind == "ring") {
      EXPECT_EQ(with->graph.ops[i].ring_bytes, (1 << 22) / 8);
      EXPECT_DOUBLE_EQ(op_time(*with, i).compute_s, (1 << 19) / 1e12);
      EXPECT_EQ(with->op_hbm[i], 0);
    }
  // shown: report, JSON (ops and search), picture, trace
  EXPECT_NE(plan_report(*with).find("ring transfer: a -> a.ring0"), std::string::npos);
  const Json j = plan_to_json(*with);
  EXPECT_EQ(j["search"]["ring_transfers"], 1);
  bool listed = false;
  for (const auto& op : j["ops"]) listed = listed || (op["kind"] == "ring" && op["ring_bytes"] == (1 << 19));
  EXPECT_TRUE(listed);
  EXPECT_EQ(plan_json_text(*with), j.dump(1) + "\n");
  EXPECT_NE(plan_svg(*with).find("moved over the core ring"), std::string::npos);
  EXPECT_NE(plan_trace(*with).find("\"ring_bytes\""), std::string::npos);
}

TEST(LxRing, NotChosenWhenHbmIsFaster) {
  Hardware hw;
  hw.ring_bytes_per_s = 1e6;  // a slow ring: 0.5 s per transfer, far above the HBM round trip
  auto p = plan_graph(chain(), hw, options());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(rings(*p), 0);
  EXPECT_EQ(p->ring_transfers, 0);
  Hardware none;  // no ring in the hardware: never considered
  auto q = plan_graph(chain(), none, options());
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(rings(*q), 0);
  EXPECT_EQ(hbm(*p), hbm(*q));
  EXPECT_DOUBLE_EQ(p->totals.time_s, q->totals.time_s);
}

TEST(LxRing, HardwareFileCarriesTheRingBandwidth) {
  auto j = parse_json_text(R"({"ring_bytes_per_s": 5e10})", "<hw>");
  auto h = hardware_from_json(*j, "<hw>");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->ring_bytes_per_s, 5e10);
  EXPECT_EQ(hardware_to_json(*h)["ring_bytes_per_s"], 5e10);
  auto bad = hardware_from_json(*parse_json_text(R"({"ring_bytes_per_s": -1})", "<hw>"), "<hw>");
  EXPECT_FALSE(bad.ok());
}

// Exact reference: every subset of the ring candidates planned in full (rings switched off inside),
// the best by the planner's order (time, then HBM bytes); the planner must reach it.
TEST(LxRing, MatchesTheExactReferenceOnSmallGraphs) {
  std::mt19937 rng(54);
  int chosen_some = 0, chosen_none = 0;
  for (int trial = 0; trial < 24; ++trial) {
    Builder b;
    const int n = 3 + static_cast<int>(rng() % 3);
    const std::vector<std::string> slices = {"rows", "cols", "k"};
    int prev = b.tensor("x", 1 << 14, true, false);
    std::string prev_slice = "rows";
    for (int i = 0; i < n; ++i) {
      const bool last = i == n - 1;
      const Bytes bytes = Bytes{1} << (16 + rng() % 7);
      const int t = b.tensor("t" + std::to_string(i), bytes, false, last);
      const std::string read = slices[rng() % 3], write = slices[rng() % 3];
      b.op("op" + std::to_string(i), 4, prev, rng() % 2 ? read : prev_slice, t, write, static_cast<double>(rng() % 4) * 1e6);
      prev = t;
      prev_slice = write;
    }
    b.g.name = "ring_ref";
    Hardware hw;
    hw.capacity_override = Bytes{1} << (17 + rng() % 5);
    hw.ring_bytes_per_s = std::vector<double>{2e8, 2e9, 2e10, 2e11, 2e12}[rng() % 5];
    Options o = options();
    auto cands = ring_candidates(b.g, lx_capacity(hw));
    auto plan = plan_graph(b.g, hw, o);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    Options off = o;
    off.ring_transfers = false;
    std::optional<Plan> best;
    for (int m = 0; m < (1 << cands.size()); ++m) {
      std::vector<char> keep(cands.size());
      for (std::size_t k = 0; k < cands.size(); ++k) keep[k] = m >> k & 1;
      auto p = plan_graph(insert_rings(b.g, cands, keep), hw, off);
      ASSERT_TRUE(p.ok()) << p.error().message;
      if (!best || p->totals.time_s < best->totals.time_s * (1 - 1e-9) ||
          (p->totals.time_s <= best->totals.time_s * (1 + 1e-9) && hbm(*p) < hbm(*best)))
        best = std::move(*p);
    }
    EXPECT_NEAR(plan->totals.time_s, best->totals.time_s, best->totals.time_s * 1e-9) << "trial " << trial;
    EXPECT_EQ(hbm(*plan), hbm(*best)) << "trial " << trial;
    (rings(*plan) ? chosen_some : chosen_none)++;
  }
  // the generator exercises both outcomes
  EXPECT_GT(chosen_some, 0);
  EXPECT_GT(chosen_none, 0);
}

TEST(LxRing, ManyCandidatesArePrunedOneByOne) {
  // 7 hand-offs alternating rows/cols (6 candidates, beyond the exact subset search): large values
  // on a fast ring all move LX-to-LX; on a slow ring none does.
  Builder b;
  int prev = b.tensor("x", 1 << 22, true, false);
  for (int i = 0; i < 7; ++i) {
    const int t = b.tensor("t" + std::to_string(i), 1 << 22, false, i == 6);
    b.op("op" + std::to_string(i), 8, prev, i % 2 ? "rows" : "cols", t, i % 2 ? "rows" : "cols");
    prev = t;
  }
  b.g.name = "ring_many";
  Hardware fast;
  fast.ring_bytes_per_s = 1e12;
  EXPECT_EQ(ring_candidates(b.g, lx_capacity(fast)).size(), 6u);
  auto p = plan_graph(b.g, fast, options());
  ASSERT_TRUE(p.ok()) << p.error().message;
  Options off = options();
  off.ring_transfers = false;
  auto q = plan_graph(b.g, fast, off);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(rings(*p), 6);
  EXPECT_LT(p->totals.time_s, q->totals.time_s);
  EXPECT_TRUE(check_plan(*p).ok());
  Hardware slow;
  slow.ring_bytes_per_s = 1e6;
  auto r = plan_graph(b.g, slow, options());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(rings(*r), 0);
  EXPECT_DOUBLE_EQ(r->totals.time_s, q->totals.time_s);
}

}  // namespace
}  // namespace sp::lx
