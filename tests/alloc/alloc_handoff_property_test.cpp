// Property test of the in-place hand-off rule: random in-place chains with third buffers and
// sibling children live on the hand-off ticks, at tight capacities. Every solver's plan must
// pass a pairwise checker written here from torch-spyre's rule (independent of the library's
// validator), and every bound and "proven" claim must agree with a brute-force optimum.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>

#include "alloc/problem.h"
#include "alloc/solver.h"
#include "alloc/validator.h"
#include "core/json_reader.h"
#include "core/rng.h"

namespace sp::alloc {
namespace {

// torch-spyre's legality, pairwise: co-live placed buffers are address-disjoint unless one is a
// declared in-place child of the other at the same base, starting on the parent's last tick and
// no larger (they then share only that tick, where the parent's whole footprint is live).
bool legal(const Problem& p, const std::vector<Offset>& off) {
  const int n = static_cast<int>(p.buffers.size());
  auto handoff = [&](int par, int chd) {
    const Buffer &a = p.buffers[par], &c = p.buffers[chd];
    return off[par] == off[chd] && a.end == c.start + 1 && c.size <= a.size &&
           std::find(c.in_place_parents.begin(), c.in_place_parents.end(), par) != c.in_place_parents.end();
  };
  for (int i = 0; i < n; ++i) {
    const Buffer& a = p.buffers[i];
    if (off[i] == kSpilled) {
      if (a.group >= 0)
        for (int j = 0; j < n; ++j)
          if (p.buffers[j].group == a.group && off[j] != kSpilled) return false;
      continue;
    }
    if (!a.residency_reason.empty() || off[i] < 0 || off[i] % a.alignment || off[i] + a.size > p.capacity) return false;
    for (int j = i + 1; j < n; ++j) {
      const Buffer& b = p.buffers[j];
      if (off[j] == kSpilled || a.size == 0 || b.size == 0) continue;
      if (!(a.start < b.end && b.start < a.end)) continue;
      if (off[i] + a.size <= off[j] || off[j] + b.size <= off[i]) continue;
      if (!handoff(i, j) && !handoff(j, i)) return false;
    }
  }
  return true;
}

Cost cost(const Problem& p, const std::vector<Offset>& off) {
  Cost c = 0;
  for (std::size_t i = 0; i < off.size(); ++i)
    if (off[i] == kSpilled) c += spill_cost(p.buffers[i]);
  return c;
}

// The optimum over every offset assignment (each buffer spilled or at an aligned offset).
Cost brute_force(const Problem& p) {
  const int n = static_cast<int>(p.buffers.size());
  std::vector<Offset> off(n, kSpilled);
  Cost best = cost(p, off);
  std::function<void(int)> rec = [&](int i) {
    if (i == n) {
      if (legal(p, off)) best = std::min(best, cost(p, off));
      return;
    }
    off[i] = kSpilled;
    rec(i + 1);
    const Buffer& b = p.buffers[i];
    if (!b.residency_reason.empty()) return;
    for (Offset o = 0; o + b.size <= p.capacity; o += b.alignment) {
      off[i] = o;
      rec(i + 1);
    }
    off[i] = kSpilled;
  };
  rec(0);
  return best;
}

// A chain P -> C (-> D) of in-place hand-offs, third buffers and siblings live at the hand-off
// ticks, sometimes a pair grouped (paired_with).
Problem random_instance(uint64_t seed) {
  Rng rng(seed);
  Problem p;
  const Size align = rng.chance(0.5) ? 1 : 2;
  auto add = [&](const std::string& id, Size size, Time s, Time e) {
    Buffer b;
    b.id = id;
    b.size = size;
    b.start = s;
    b.end = e;
    b.alignment = align;
    b.reads = static_cast<int>(e - s) - 1;  // a use at every tick: the first writes it
    p.buffers.push_back(b);
    return static_cast<int>(p.buffers.size()) - 1;
  };
  Time t = 0;
  const int parent = add("P", rng.range(3, 6), t, t + 2);
  int prev = parent;
  const int links = static_cast<int>(rng.range(1, 2));
  for (int k = 0; k < links; ++k) {
    const Size par_size = p.buffers[prev].size;  // (copied: add() may move the buffers)
    const Time h = p.buffers[prev].end - 1;        // the hand-off tick
    // (two ticks at least: it may be the next link's parent, which must be read after its write)
    const int c = add("C" + std::to_string(k), rng.range(1, par_size), h, h + rng.range(2, 3));
    p.buffers[c].in_place_parents = {prev};
    if (rng.chance(0.4)) {  // a sibling child of the same parent
      const int s = add("sib" + std::to_string(k), rng.range(1, par_size), h, h + rng.range(1, 2));
      p.buffers[s].in_place_parents = {prev};
    }
    add("S" + std::to_string(k), rng.range(1, 3), h, h + 1);  // a third buffer on the hand-off tick
    prev = c;
  }
  const int n = static_cast<int>(p.buffers.size());
  if (n >= 5 && rng.chance(0.3)) p.buffers[n - 1].group = p.buffers[n - 2].group = n - 2;
  p.capacity = rng.range(4, 9);
  return p;
}

TEST(AllocHandOffProperty, EveryPlanLegalAndEveryProofTrue) {
  int proofs = 0, instances = 0;
  for (uint64_t seed = 1; seed <= 120; ++seed) {
    Problem p = random_instance(seed);
    if (p.buffers.size() > 6) continue;  // keeps the brute force small
    ASSERT_TRUE(check_problem(p).ok()) << seed << ": " << check_problem(p).error().message;
    ++instances;
    const Cost opt = brute_force(p);
    for (SolverKind k : {SolverKind::kAuto, SolverKind::kExact, SolverKind::kGreedy, SolverKind::kFirstFit,
                         SolverKind::kBestFit, SolverKind::kAnnealing}) {
      SolveOptions o;
      o.objective = Objective::kSelect;
      o.solver = k;
      o.time_limit = 0.05;
      o.iterations = k == SolverKind::kAnnealing ? 200 : 0;
      auto r = solve(p, o);
      ASSERT_TRUE(r.ok()) << seed << " " << solver_kind_name(k) << ": " << r.error().message;
      EXPECT_TRUE(legal(p, r->placement.offsets)) << "seed " << seed << " " << solver_kind_name(k);
      EXPECT_TRUE(validate(p, r->placement).ok()) << "seed " << seed << " " << solver_kind_name(k);
      EXPECT_EQ(r->spill_cost, cost(p, r->placement.offsets));
      EXPECT_LE(r->lower_bound, opt) << "seed " << seed << " " << solver_kind_name(k);
      EXPECT_GE(r->spill_cost, opt);
      if (r->proven_optimal) {
        EXPECT_EQ(r->spill_cost, opt) << "seed " << seed << " " << solver_kind_name(k);
        ++proofs;
      }
    }
  }
  EXPECT_GE(instances, 60);
  EXPECT_GT(proofs, 0);  // the property is exercised on proofs, not only on plans
}

// The library's validator agrees with the pairwise rule on random offset assignments of the same
// instances (both directions: it neither accepts an illegal plan nor rejects a legal one).
TEST(AllocHandOffProperty, ValidatorAgreesWithThePairwiseRule) {
  int legal_seen = 0, illegal_seen = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    Problem p = random_instance(seed);
    Rng rng(seed * 7919);
    for (int trial = 0; trial < 50; ++trial) {
      Placement pl;
      for (const Buffer& b : p.buffers) {
        Offset o = kSpilled;
        if (b.residency_reason.empty() && !rng.chance(0.25) && b.size <= p.capacity)
          o = rng.range(0, (p.capacity - b.size) / b.alignment) * b.alignment;
        pl.offsets.push_back(o);
        pl.spill_reasons.emplace_back();
      }
      const bool want = legal(p, pl.offsets);
      (want ? legal_seen : illegal_seen)++;
      EXPECT_EQ(validate(p, pl).ok(), want) << "seed " << seed << " trial " << trial;
    }
  }
  EXPECT_GT(legal_seen, 100);
  EXPECT_GT(illegal_seen, 100);
}

// torch-spyre's sdpa capture (tests/data/spyre/captures) at a quarter of its per-core footprint:
// 22 resident candidates, 11 hand-offs. Its optimum is 4096 B of spill cost (an exhaustive
// search over the 4096-byte lattice finds it, every chain of hand-offs at one base). The
// per-instant bound of the problem itself counts each hand-off pair twice and says 12288, which
// the portfolio used to report as "proven optimal" for its 12288 plan; the bounds are now taken
// on the hand-off relaxations, and the exact search on the hand-off restriction finds the 4096
// plan.
TEST(AllocHandOffProperty, SdpaCaptureReachesItsTrueOptimum) {
  auto j = read_json_file(std::string(SCRATCHPLAN_DATA_DIR) + "/spyre/captures/cooptimization_captures.json");
  ASSERT_TRUE(j.ok());
  Problem p;
  std::map<std::string, int> index;
  Size total = 0;
  for (const Json& b : (*j)["sdpa"][0]["inputs"]) {
    if (b["uses"].empty()) continue;
    Size size = b["size"], part = 1;
    for (auto& [k, v] : b["core_divisions"][0]["output_splits"].items()) part *= v.get<Size>();
    auto x = buffer_from_uses(b["name"], size < 0 ? 0 : (size + part - 1) / part, b["uses"].get<std::vector<Time>>(),
                              b.value("first_use_is_read", false));
    ASSERT_TRUE(x.ok());
    x->alignment = 128;
    if (size < 0) x->residency_reason = "unsized";
    if (b.contains("residency_reason") && b["residency_reason"].is_string()) x->residency_reason = b["residency_reason"];
    index[x->id] = static_cast<int>(p.buffers.size());
    total += (x->size + 127) / 128 * 128;
    p.buffers.push_back(*x);
  }
  for (const Json& b : (*j)["sdpa"][0]["inputs"]) {
    if (!index.count(b["name"])) continue;
    Buffer& c = p.buffers[index[b["name"]]];
    for (const Json& q : b.value("in_place_parents", Json::array())) {
      if (!index.count(q)) continue;
      const Buffer& par = p.buffers[index[q]];
      if (par.end == c.start + 1 && c.size <= par.size) c.in_place_parents.push_back(index[q]);
    }
  }
  p.capacity = total / 4;
  ASSERT_TRUE(check_problem(p).ok());
  EXPECT_EQ(selection_lower_bound(p), 12288);  // the double count: above the optimum
  SolveOptions o;
  o.objective = Objective::kSelect;
  o.time_limit = 1.0;
  auto r = solve(p, o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(legal(p, r->placement.offsets));
  EXPECT_EQ(r->spill_cost, 4096);
  EXPECT_EQ(r->lower_bound, 4096);
  EXPECT_TRUE(r->proven_optimal);
}

}  // namespace
}  // namespace sp::alloc
