// torch-spyre's solver-level cases (tests/data/spyre/lx_cases.json): solver_cases,
// certified_seed_cases and the pattern cases, with the semantics of the file's `conventions`.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "alloc/internal/heuristics.h"
#include "alloc/problem.h"
#include "alloc/solver.h"
#include "alloc/validator.h"
#include "core/json_reader.h"

namespace sp::alloc {
namespace {

const Json& lx_cases() {
  static Json j = [] {
    auto r = read_json_file(std::string(SCRATCHPLAN_DATA_DIR) + "/spyre/lx_cases.json");
    return r ? *r : Json();
  }();
  return j;
}

struct Case {
  Problem p;
  std::map<std::string, int> index;
  Status built = ok_status();
};

// Builds a problem from a case's buffers (uses, first_use_is_read, in_place_parents, ...).
Case build(const Json& c, const std::string& buffers_key = "buffers") {
  Case out;
  const Size al = c.contains("alignment") && c["alignment"].is_number() ? c["alignment"].get<Size>() : 1;
  out.p.capacity = c.contains("capacity") && c["capacity"].is_number() ? c["capacity"].get<Size>() : kUnbounded;
  for (const Json& b : c[buffers_key]) {
    Time over = b.contains("lifetime_end_override") && b["lifetime_end_override"].is_number() ? b["lifetime_end_override"].get<Time>() : kNoOverride;
    auto r = buffer_from_uses(b["name"], b["size"], b["uses"].get<std::vector<Time>>(), b.value("first_use_is_read", false), over);
    if (!r) {
      out.built = r.error();
      return out;
    }
    Buffer x = *r;
    x.alignment = al;
    if (b.contains("residency_reason") && b["residency_reason"].is_string()) x.residency_reason = b["residency_reason"];
    out.index[x.id] = static_cast<int>(out.p.buffers.size());
    out.p.buffers.push_back(x);
  }
  for (const Json& b : c[buffers_key])
    for (const Json& q : b.value("in_place_parents", Json::array())) {
      auto it = out.index.find(q.get<std::string>());
      if (it != out.index.end()) out.p.buffers[out.index[b["name"]]].in_place_parents.push_back(it->second);
    }
  return out;
}

std::optional<SolverKind> our_solver(const std::string& name) {
  if (name == "greedy") return SolverKind::kGreedy;
  if (name == "firstfit") return SolverKind::kFirstFit;
  if (name == "bestfit") return SolverKind::kBestFit;
  if (name == "simulated_annealing") return SolverKind::kAnnealing;
  if (name == "cpsat_placement_only") return SolverKind::kAuto;  // our proven-optimal selection
  return std::nullopt;
}

SolveOptions select_options(SolverKind k) {
  SolveOptions o;
  o.solver = k;
  o.objective = Objective::kSelect;
  o.time_limit = 5;
  o.iterations = 2000;
  return o;
}

Offset addr(const Case& c, const SolveResult& r, const std::string& name) { return r.placement.offsets[c.index.at(name)]; }

// Checks one expectation; returns "" or a description of the mismatch.
std::string check(const Case& c, const SolveResult& r, const Json& e, bool relaxed) {
  auto rep = validate(c.p, r.placement);
  if (!rep.ok()) return std::string("illegal layout: ") + rep.violations[0].message;
  const std::string kind = e.value("kind", "predicate");
  if (relaxed) {  // conventions.relaxed_solvers: legal + at least as many placed as the first tuple
    if (kind != "addresses") return "";
    std::size_t want = 0, got = 0;
    for (const Json& a : e["one_of"][0]) want += !a.is_null();
    for (Offset o : r.placement.offsets) got += o != kSpilled;
    return got >= want ? "" : "placed " + std::to_string(got) + " < " + std::to_string(want);
  }
  if (kind == "addresses") {
    for (const Json& tuple : e["one_of"]) {
      bool same = tuple.size() == r.placement.offsets.size();
      for (std::size_t i = 0; same && i < tuple.size(); ++i)
        same = tuple[i].is_null() ? r.placement.offsets[i] == kSpilled : r.placement.offsets[i] == tuple[i].get<Offset>();
      if (same) return "";
    }
    std::string got;
    for (Offset o : r.placement.offsets) got += (o == kSpilled ? std::string("null") : std::to_string(o)) + " ";
    return "addresses " + got + "not in " + e["one_of"].dump();
  }
  if (kind == "by_name") {
    for (auto& [name, v] : e["addresses"].items())
      if (addr(c, r, name) != (v.is_null() ? kSpilled : v.get<Offset>())) return name + " at " + std::to_string(addr(c, r, name));
    return "";
  }
  if (kind == "predicate" || kind == "spill_reasons") {
    for (const Json& n : e.value("placed", Json::array()))
      if (addr(c, r, n) == kSpilled) return n.get<std::string>() + " not placed";
    for (const Json& n : e.value("spilled", Json::array()))
      if (addr(c, r, n) != kSpilled) return n.get<std::string>() + " not spilled";
    for (const Json& pair : e.value("same_address", Json::array()))
      if (addr(c, r, pair[0]) != addr(c, r, pair[1])) return "not at the same address: " + pair.dump();
    if (e.contains("at_most_one_of_at_parent_address")) {
      int at = 0;
      for (const Json& n : e["at_most_one_of_at_parent_address"]) at += addr(c, r, n) == addr(c, r, "parent");
      if (at > 1) return "two children at the parent's address";
    }
    const Json reasons = e.value("spill_reason", Json::object());
    const Json contains = e.value("spill_reason_contains", Json::object());
    const Json greedy_reasons = e.value("reasons", Json::object());
    for (auto& [name, v] : reasons.items()) {
      const std::string& got = r.placement.spill_reasons[c.index.at(name)];
      if (v.is_null() ? !got.empty() : got != v.get<std::string>()) return name + " reason '" + got + "'";
    }
    for (auto& [name, v] : contains.items())
      if (r.placement.spill_reasons[c.index.at(name)].find(v.get<std::string>()) == std::string::npos)
        return name + " reason '" + r.placement.spill_reasons[c.index.at(name)] + "'";
    for (auto& [name, v] : greedy_reasons.items()) {
      std::string want = v;
      const std::string& got = r.placement.spill_reasons[c.index.at(name)];
      if (want.rfind("contains '", 0) == 0) want = want.substr(10, want.size() - 11);
      if (got.find(want) == std::string::npos) return name + " reason '" + got + "'";
    }
    return "";
  }
  return "";
}

// Spill cost in CP-SAT units: (reads_served + [produced]) x ceil(size / alignment).
Cost units_objective(const Problem& p, const Placement& pl, Size al) {
  Cost c = 0;
  for (std::size_t i = 0; i < p.buffers.size(); ++i)
    if (pl.offsets[i] == kSpilled) {
      Buffer b = p.buffers[i];
      b.size = (b.size + al - 1) / al;
      c += spill_cost(b);
    }
  return c;
}

TEST(AllocLxCases, FileIsReadable) {
  ASSERT_TRUE(lx_cases().is_object());
  EXPECT_EQ(lx_cases()["solver_cases"].size(), 69u);
  EXPECT_EQ(lx_cases()["certified_seed_cases"].size(), 16u);
}

// Every base case for greedy / firstfit / bestfit / annealing (exact expectations) and for
// cpsat_placement_only (the relaxed check), plus the in-place-check and data-model cases.
TEST(AllocLxCases, SolverCases) {
  int checked = 0;
  for (const Json& c : lx_cases()["solver_cases"]) {
    const std::string id = c["id"];
    const Json& applies = c["applies_to"];
    const Json& e = c["expect"];
    const std::string kind = e["kind"];
    Case cs = build(c);
    if (kind == "raises") {
      Status st = cs.built ? check_problem(cs.p) : cs.built;
      EXPECT_FALSE(st.ok()) << id;
      if (!st.ok() && e.contains("message_regex")) {
        // The file's patterns are plain phrases; a substring test avoids <regex>.
        EXPECT_NE(st.error().message.find(e["message_regex"].get<std::string>()), std::string::npos) << id << ": " << st.error().message;
      }
      ++checked;
      continue;
    }
    if (kind == "no_error" || kind == "solves_without_error") {
      ASSERT_TRUE(cs.built.ok()) << id;
      EXPECT_TRUE(check_problem(cs.p).ok()) << id;
      ++checked;
      if (kind == "no_error") continue;
    }
    if (kind == "semantics" || kind == "sequence" || kind == "order") continue;  // tests below
    ASSERT_TRUE(cs.built.ok()) << id;
    if (!check_problem(cs.p).ok()) continue;
    for (const Json& a : applies) {
      auto k = our_solver(a.get<std::string>());
      if (!k) continue;  // joint co-optimization and tiling cases belong to the LX planner
      const bool relaxed = a == "cpsat_placement_only" && std::string(id).rfind("cpsat_", 0) != 0;
      Json want = e;
      if (c.contains("per_solver_expect") && c["per_solver_expect"].contains(a.get<std::string>())) want = c["per_solver_expect"][a.get<std::string>()];
      auto r = solve(cs.p, select_options(*k));
      ASSERT_TRUE(r.ok()) << id << " " << a << ": " << r.error().message;
      if (kind == "deterministic") {
        auto r2 = solve(cs.p, select_options(*k));
        ASSERT_TRUE(r2.ok());
        EXPECT_EQ(r->placement.offsets, r2->placement.offsets) << id;
      }
      if (a == "simulated_annealing" && want["kind"] == "addresses") {
        // Our annealer decodes orders first-fit, not with torch-spyre's max-top packer: the
        // placed/spilled pattern must match one expected tuple; exact addresses may differ.
        Json pattern = want;
        bool any = false;
        for (const Json& tuple : want["one_of"]) {
          bool same = tuple.size() == r->placement.offsets.size();
          for (std::size_t i = 0; same && i < tuple.size(); ++i) same = tuple[i].is_null() == (r->placement.offsets[i] == kSpilled);
          any = any || same;
        }
        EXPECT_TRUE(any) << id << " / annealing spill pattern";
        EXPECT_TRUE(validate(cs.p, r->placement).ok()) << id;
        ++checked;
        continue;
      }
      std::string why = check(cs, *r, want, relaxed);
      EXPECT_EQ(why, "") << id << " / " << a.get<std::string>();
      ++checked;
    }
  }
  EXPECT_GE(checked, 100);
}

TEST(AllocLxCases, DataModelSemantics) {
  // drain_lifetime_override
  auto carry = buffer_from_uses("carry", 100, {0, 5}, false, 7);
  ASSERT_TRUE(carry.ok());
  EXPECT_EQ(carry->end, 7);
  auto sharer = buffer_from_uses("sharer", 100, {6}, false);
  EXPECT_TRUE(lifetimes_overlap(*carry, *sharer));
  EXPECT_FALSE(lifetimes_overlap(*buffer_from_uses("c", 100, {0, 5}, false), *sharer));
  EXPECT_EQ(buffer_from_uses("x", 1, {0, 9}, false, 12)->end, 12);
  EXPECT_FALSE(buffer_from_uses("x", 1, {0, 9}, false, 9).ok());
  // read_count_semantics
  EXPECT_EQ(buffer_from_uses("x", 1, {3, 5, 8}, false)->reads, 2);
  EXPECT_EQ(buffer_from_uses("x", 1, {3}, false)->reads, 0);
  EXPECT_EQ(buffer_from_uses("x", 1, {3, 5, 8}, true)->reads, 3);
  EXPECT_EQ(buffer_from_uses("x", 1, {3}, true)->reads, 1);
  EXPECT_FALSE(buffer_from_uses("x", 1, {3, 3}, false).ok());
  EXPECT_FALSE(buffer_from_uses("x", 1, {4, 3}, false).ok());
}

TEST(AllocLxCases, TopologicalOrderPutsParentsFirst) {
  for (const Json& c : lx_cases()["solver_cases"]) {
    if (c["expect"]["kind"] != "order") continue;
    Case cs = build(c);
    ASSERT_TRUE(cs.built.ok());
    std::vector<int> order = first_fit_order(cs.p);
    ASSERT_EQ(order.size(), cs.p.buffers.size());
    std::vector<int> pos(order.size());
    for (std::size_t k = 0; k < order.size(); ++k) pos[order[k]] = static_cast<int>(k);
    for (std::size_t i = 0; i < cs.p.buffers.size(); ++i)
      for (int q : cs.p.buffers[i].in_place_parents) EXPECT_LT(pos[q], pos[i]) << c["id"];
    if (c["expect"].contains("order")) {
      std::vector<std::string> names;
      for (int i : order) names.push_back(cs.p.buffers[i].id);
      EXPECT_EQ(names, c["expect"]["order"].get<std::vector<std::string>>()) << c["id"];
    }
  }
}

TEST(AllocLxCases, CertifiedSeedCases) {
  int checked = 0;
  for (const Json& c : lx_cases()["certified_seed_cases"]) {
    const std::string id = c["id"];
    const Json& e = c["expect"];
    Case cs = build(c);
    ASSERT_TRUE(cs.built.ok()) << id;
    if (e.contains("spill_cost")) {
      for (auto& [name, v] : e["spill_cost"].items()) {
        if (!cs.index.count(name)) continue;
        EXPECT_EQ(spill_cost(cs.p.buffers[cs.index[name]]), v.get<Cost>()) << id;
      }
    }
    if (!c.contains("capacity")) { ++checked; continue; }
    // Deliberately not adopted: CP-SAT's rounding of capacity to whole alignment units (we pack
    // bytes, so a buffer that fits below a non-multiple capacity is placed).
    if (id == "seed_limit_below_alignment" || id == "seed_limit_not_divisible_by_alignment") continue;
    const Size al = c.value("alignment", 1);
    const bool greedy_only = c["applies_to"][0] == "greedy";
    auto r = solve(cs.p, select_options(greedy_only ? SolverKind::kGreedy : SolverKind::kAuto));
    ASSERT_TRUE(r.ok()) << id;
    EXPECT_EQ(check(cs, *r, e, false), "") << id;
    if (e.contains("objective_units")) {
      EXPECT_EQ(units_objective(cs.p, r->placement, al), e["objective_units"].get<Cost>()) << id;
    }
    if (e.contains("objective_units_gt")) {
      EXPECT_GT(units_objective(cs.p, r->placement, al), e["objective_units_gt"].get<Cost>()) << id;
    }
    if (e.contains("cpsat_objective_units")) {
      EXPECT_EQ(units_objective(cs.p, r->placement, al), e["cpsat_objective_units"].get<Cost>()) << id;
      auto g = solve(cs.p, select_options(SolverKind::kGreedy));
      ASSERT_TRUE(g.ok());
      EXPECT_EQ(units_objective(cs.p, g->placement, al), e["greedy_objective_units"].get<Cost>()) << id;
      for (const Json& n : e["greedy_placed"]) {
        EXPECT_NE(g->placement.offsets[cs.index[n]], kSpilled) << id;
      }
    }
    if (!greedy_only && (e.value("hybrid_equals_cpsat_objective", false) || e.contains("objective_units"))) {
      EXPECT_TRUE(r->proven_optimal) << id;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 14);
}

// HBM bytes of planned buffers that are not resident (graph I/O is the same for every plan).
Cost planned_hbm(const Json& pc, const std::map<std::string, bool>& resident, const std::map<std::string, Size>& size) {
  Cost c = 0;
  for (const Json& op : pc["ops"]) {
    std::vector<std::string> names = op["inputs"].get<std::vector<std::string>>();
    names.push_back(op["output"]);
    for (auto& n : names) {
      auto it = resident.find(n);
      if (it != resident.end() && !it->second) c += size.at(n);
    }
  }
  return c;
}

// The five non-eviction target patterns reach the good HBM bytes at both capacities.
TEST(AllocLxCases, PatternCasesWithoutEviction) {
  int checked = 0;
  for (auto& [cap_name, cases] : lx_cases()["pattern_cases"].items()) {
    for (const Json& pc : cases) {
      if (pc["good_allocation"]["kind"] != "nonevicting") continue;
      Case cs = build(pc, "buffers_to_plan");
      ASSERT_TRUE(cs.built.ok());
      auto r = solve(cs.p, select_options(SolverKind::kAuto));
      ASSERT_TRUE(r.ok()) << pc["name"];
      std::map<std::string, bool> ours, good;
      std::map<std::string, Size> size;
      for (std::size_t i = 0; i < cs.p.buffers.size(); ++i) {
        const std::string& n = cs.p.buffers[i].id;
        ours[n] = r->placement.offsets[i] != kSpilled;
        const Json& ga = pc["good_allocation"]["addresses"];
        good[n] = ga.contains(n) && !ga[n].is_null();
        size[n] = cs.p.buffers[i].size;
      }
      EXPECT_LE(planned_hbm(pc, ours, size), planned_hbm(pc, good, size)) << cap_name << " " << pc["name"];
      ++checked;
    }
  }
  EXPECT_EQ(checked, 10);
}

}  // namespace
}  // namespace sp::alloc
