// Joint division + placement search for buffer sets with division menus (see coopt.h).
#include "lx/coopt.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <unordered_set>

#include "alloc/solver.h"
#include "alloc/validator.h"
#include "core/deadline.h"

namespace sp::lx {
namespace {

struct Ctx {
  const CdProblem* p;
  std::vector<std::vector<int>> children;  // per buffer: buffers listing it as a parent
};

const std::vector<std::pair<int, int>>* match_list(const CdBuffer& child, int parent) {
  for (const auto& [q, list] : child.matches)
    if (q == parent) return &list;
  return nullptr;
}

int64_t cost_of(const CdBuffer& b) { return b.size < 0 ? 0 : b.size * static_cast<int64_t>(b.uses.size()); }

struct Eval {
  int64_t cost = 0;
  std::vector<int64_t> address;
  std::vector<std::string> reason;  // per buffer, "" when resident
};

// Why a buffer cannot be resident under `div` before any placement ("" when it may be).
std::string exclusion(const Ctx& c, const std::vector<int>& div, int b) {
  const CdBuffer& x = c.p->buffers[b];
  if (!x.residency_reason.empty()) return x.residency_reason;
  if (x.size < 0) return "unsized";
  if (x.uses.empty()) return "no consumer reads it from LX";
  const int64_t fp = per_core_footprint(x, div[b]);
  if (fp > c.p->capacity)
    return "capacity: per-core footprint " + std::to_string(fp) + " B exceeds LX capacity " + std::to_string(c.p->capacity);
  for (int ch : c.children[b]) {
    const auto* l = match_list(c.p->buffers[ch], b);
    bool ok = false;
    if (l)
      for (auto [pd, cd] : *l) ok = ok || (pd == div[b] && cd == div[ch]);
    if (!ok) return "core div mismatch";  // torch-spyre's words (a consumer slices it differently)
  }
  return {};
}

// Scores a division assignment: eligible buffers go to the alloc engine's selection objective.
Eval evaluate(const Ctx& c, const std::vector<int>& div, bool fast, double seconds) {
  const CdProblem& p = *c.p;
  const int n = static_cast<int>(p.buffers.size());
  std::vector<std::string> why(n);
  for (int b = 0; b < n; ++b) why[b] = exclusion(c, div, b);
  send_groups_to_hbm_whole(p, why);
  alloc::Problem ap;
  ap.capacity = p.capacity;
  std::vector<int> idx(n, -1), back;
  for (int b = 0; b < n; ++b) {
    const CdBuffer& x = p.buffers[b];
    if (!why[b].empty()) continue;
    alloc::Buffer ab;
    ab.id = x.name;
    ab.size = per_core_footprint(x, div[b]);
    ab.start = x.start;
    ab.end = x.end;
    ab.alignment = p.alignment;
    ab.spill_cost = cost_of(x);
    idx[b] = static_cast<int>(ap.buffers.size());
    back.push_back(b);
    ap.buffers.push_back(std::move(ab));
  }
  link_groups_and_in_place_edges(p, idx, back, ap);
  Eval e;
  e.address.assign(n, -1);
  // (An engine that refuses the problem leaves every eligible buffer in HBM, with its reason.)
  auto placed = place_on_lx(ap, fast, seconds);
  alloc::Placement pl;
  if (placed) {
    pl = std::move(placed->placement);
  } else {
    pl.offsets.assign(ap.buffers.size(), alloc::kSpilled);
    pl.spill_reasons.assign(ap.buffers.size(), "LX placement failed: " + placed.error().message);
  }
  for (std::size_t k = 0; k < ap.buffers.size(); ++k) {
    e.address[back[k]] = pl.offsets[k];
    if (pl.offsets[k] == alloc::kSpilled)
      why[back[k]] = k < pl.spill_reasons.size() && !pl.spill_reasons[k].empty()
                         ? pl.spill_reasons[k]
                         : "no room on scratchpad (capacity " + std::to_string(p.capacity) + ")";
  }
  for (int b = 0; b < n; ++b)
    if (e.address[b] < 0) e.cost += cost_of(p.buffers[b]);
  e.reason = std::move(why);
  return e;
}

// Propagates division d of `anchor` through the match edges (both directions), keeping
// neighbours that already match and otherwise picking the matching entry with the largest
// output partition (smallest footprint).
std::vector<int> recolor(const Ctx& c, const std::vector<int>& cur, int anchor, int d) {
  const CdProblem& p = *c.p;
  std::vector<int> a = cur;
  a[anchor] = d;
  std::vector<char> seen(p.buffers.size(), 0);
  std::vector<int> queue{anchor};
  seen[anchor] = 1;
  auto pick = [&](int b, const std::vector<int>& options) {
    if (options.empty()) return -1;
    if (std::find(options.begin(), options.end(), a[b]) != options.end()) return -1;  // already fine
    int best = options[0];
    for (int o : options)
      if (p.buffers[b].divisions[o].output_partition > p.buffers[b].divisions[best].output_partition) best = o;
    return best;
  };
  for (std::size_t qi = 0; qi < queue.size(); ++qi) {
    int x = queue[qi];
    for (int ch : c.children[x]) {
      if (seen[ch]) continue;
      const auto* l = match_list(p.buffers[ch], x);
      if (!l) continue;
      std::vector<int> opts;
      for (auto [pd, cd] : *l)
        if (pd == a[x]) opts.push_back(cd);
      int v = pick(ch, opts);
      seen[ch] = 1;
      if (v >= 0) {
        a[ch] = v;
        queue.push_back(ch);
      }
    }
    for (int q : p.buffers[x].parents) {
      if (seen[q]) continue;
      const auto* l = match_list(p.buffers[x], q);
      if (!l) continue;
      std::vector<int> opts;
      for (auto [pd, cd] : *l)
        if (cd == a[x]) opts.push_back(pd);
      int v = pick(q, opts);
      seen[q] = 1;
      if (v >= 0) {
        a[q] = v;
        queue.push_back(q);
      }
    }
  }
  return a;
}

struct VecHash {
  std::size_t operator()(const std::vector<int>& v) const {
    std::size_t h = 1469598103934665603ULL;
    for (int x : v) h = (h ^ static_cast<std::size_t>(x + 1)) * 1099511628211ULL;
    return h;
  }
};

// Relaxation: every buffer at its smallest footprint, no residency gate, in-place children
// shortened by their hand-off tick; forced spills charged in full.
int64_t lower_bound(const CdProblem& p) {
  alloc::Problem ap;
  ap.capacity = p.capacity;
  int64_t forced = 0;
  for (const CdBuffer& x : p.buffers) {
    if (!x.residency_reason.empty() || x.size < 0 || x.uses.empty()) {
      forced += cost_of(x);
      continue;
    }
    int64_t fp = per_core_footprint(x, 0);
    for (std::size_t d = 1; d < x.divisions.size(); ++d) fp = std::min(fp, per_core_footprint(x, static_cast<int>(d)));
    alloc::Buffer ab;
    ab.id = x.name;
    ab.size = fp;
    ab.start = x.start + (x.in_place_parents.empty() ? 0 : 1);  // inside its parent at the hand-off tick
    ab.end = x.end;
    if (ab.start >= ab.end) continue;  // lives only at its hand-off tick: may share its parent's slot
    ab.alignment = 1;
    ab.spill_cost = cost_of(x);
    ap.buffers.push_back(std::move(ab));
  }
  return forced + alloc::selection_lower_bound(ap);
}

// A split map {"<dim>": factor}: dim keys are non-negative integers, factors 1..1024.
std::vector<std::pair<int64_t, int64_t>> read_splits(const JsonCursor& m) {
  std::vector<std::pair<int64_t, int64_t>> out;
  m.require_object();
  for (const auto& [k, v] : m.node().items()) {
    JsonCursor f(v, m.source(), m.path() + "." + k);
    int64_t dim = -1;
    auto [ptr, ec] = std::from_chars(k.data(), k.data() + k.size(), dim);
    if (k.empty() || ec != std::errc() || ptr != k.data() + k.size() || dim < 0)
      f.fail("expected a non-negative integer as the key");
    int64_t factor = f.as_int_at_least(1);
    if (factor > 1024) f.fail("expected a split factor 1..1024, got " + std::to_string(factor));
    out.emplace_back(dim, factor);
  }
  return out;
}

// One menu entry of the capture format: its splits, coarse tiling, and the derived footprint divisor,
// cores and balance term.
CdDivision read_division(const JsonCursor& d) {
  static const std::vector<std::string> kDivisionKeys = {"reduction_splits", "output_splits", "reduction_syms", "splits",
                                                         "tiling"};
  d.expect_keys(kDivisionKeys);
  CdDivision cd;
  // Coarse tiling: [[count, is_reduction], ...] outermost first (empty = untiled).
  if (d.has("tiling"))
    for (const auto& lv : d.at("tiling").elements()) {
      if (lv.array_size() != 2) lv.fail("expected [count, is_reduction]");
      int64_t count = lv.at(0).as_int_at_least(1);
      if (count > 1024) lv.at(0).fail("expected a tile count 1..1024, got " + std::to_string(count));
      cd.tile_levels.push_back(count);
      cd.tile_count = std::min<int64_t>(cd.tile_count * count, int64_t{1} << 40);
      if (!lv.at(1).as_bool()) cd.output_tile_count = std::min<int64_t>(cd.output_tile_count * count, int64_t{1} << 40);
    }
  std::map<int64_t, int64_t> all;  // every split entry once: cores_used and the balance term
  std::set<int64_t> red;
  for (auto [dim, f] : read_splits(d.at("reduction_splits"))) {
    cd.reduction_splits.emplace_back(dim, f);
    red.insert(dim);
    all[dim] = f;
  }
  for (auto [dim, f] : read_splits(d.at("output_splits"))) {
    cd.output_splits.emplace_back(dim, f);
    // Many factors could overflow; the product is capped (it only divides sizes).
    if (!red.count(dim)) cd.output_partition = std::min<int64_t>(cd.output_partition * f, int64_t{1} << 40);
    all.emplace(dim, f);
  }
  for (auto [dim, f] : all) {
    cd.cores = std::min<int64_t>(cd.cores * f, int64_t{1} << 40);
    cd.split_sq += f * f;
  }
  return cd;
}

}  // namespace

Result<alloc::SolveResult> place_on_lx(const alloc::Problem& ap, bool fast, double seconds) {
  alloc::SolveOptions so;
  so.objective = alloc::Objective::kSelect;
  so.solver = fast ? alloc::SolverKind::kBestOfFits : alloc::SolverKind::kAuto;
  so.time_limit = fast ? -1.0 : std::max(0.0, seconds);  // the fast answer runs to the end
  return alloc::solve(ap, so);
}

void send_groups_to_hbm_whole(const CdProblem& p, std::vector<std::string>& why) {
  const int n = static_cast<int>(p.buffers.size());
  std::vector<int> out_member(n, -1);  // per group: its first member with a reason
  for (int b = 0; b < n; ++b)
    if (p.buffers[b].group >= 0 && !why[b].empty() && out_member[p.buffers[b].group] < 0) out_member[p.buffers[b].group] = b;
  for (int b = 0; b < n; ++b) {
    const int g = p.buffers[b].group;
    if (g >= 0 && why[b].empty() && out_member[g] >= 0)
      why[b] = "paired with " + p.buffers[out_member[g]].name + ", which stays in HBM";
  }
}

void link_groups_and_in_place_edges(const CdProblem& p, const std::vector<int>& idx, const std::vector<int>& back,
                           alloc::Problem& ap) {
  std::vector<int> first_in_ap(p.buffers.size(), -1);  // cd group -> its lowest member in `ap` (the group's id there)
  for (std::size_t k = 0; k < ap.buffers.size(); ++k) {
    const CdBuffer& x = p.buffers[back[k]];
    if (x.group >= 0) {
      if (first_in_ap[x.group] < 0) first_in_ap[x.group] = static_cast<int>(k);
      ap.buffers[k].group = first_in_ap[x.group];
    }
    for (int q : x.in_place_parents) {
      if (idx[q] < 0) continue;
      const alloc::Buffer& pa = ap.buffers[idx[q]];
      const CdBuffer& qb = p.buffers[q];
      const bool read_after_write = qb.uses.size() >= 2 || qb.first_use_is_read;
      if (pa.end == ap.buffers[k].start + 1 && ap.buffers[k].size <= pa.size && read_after_write)
        ap.buffers[k].in_place_parents.push_back(idx[q]);
    }
  }
}

int64_t per_core_footprint(const CdBuffer& b, int d) {
  if (b.size < 0) return 0;
  int64_t part = b.divisions.empty() ? 1 : b.divisions[d].output_partition * b.divisions[d].output_tile_count;
  part = std::max<int64_t>(1, part);
  return (b.size + part - 1) / part;
}

int64_t seed_footprint_total(const CdProblem& p) {
  int64_t t = 0;
  for (const CdBuffer& b : p.buffers) t += per_core_footprint(b, 0);
  return t;
}

int64_t hbm_bytes_of(const CdProblem& p, const std::vector<char>& resident) {
  int64_t t = 0;
  for (std::size_t b = 0; b < p.buffers.size(); ++b)
    if (!resident[b]) t += cost_of(p.buffers[b]);
  return t;
}

Result<CdProblem> division_problem_from_json(const Json& buffers, const std::string& source, int64_t capacity,
                                       int64_t alignment) {
  try {
    JsonCursor c(buffers, source);
    CdProblem p;
    p.capacity = capacity;
    p.alignment = alignment;
    std::map<std::string, int> id;
    auto list = c.elements();
    for (std::size_t i = 0; i < list.size(); ++i)
      if (!id.emplace(list[i].at("name").as_string(), static_cast<int>(i)).second)
        list[i].at("name").fail("duplicate buffer name '" + list[i].at("name").as_string() + "'");
    auto ref = [&](const JsonCursor& x) {
      auto it = id.find(x.as_string());
      if (it == id.end()) x.fail("expected the name of a buffer in this graph");
      return it->second;
    };
    // Keys of torch-spyre's capture format; the ones after "cd_parent_matches" are recorded by
    // the capture but not needed here (accepted, not read). Anything else is a typo.
    static const std::vector<std::string> kKeys = {
        "name", "size", "uses", "first_use_is_read", "in_place_parents", "residency_reason", "parents", "core_divisions",
        "cd_parent_matches", "lifetime_end_override", "lifetime_start_override", "paired_with", "start", "end", "boundary",
        "placement", "boundary_cost", "spill_write_cost", "plain", "relayout_copy", "relayout_parent",
        "relayout_options"};
    for (const auto& b : list) {
      b.expect_keys(kKeys);
      CdBuffer x;
      x.name = b.at("name").as_string();
      x.size = b.at("size").as_int_at_least(-1);
      if (x.size > (int64_t{1} << 50)) b.at("size").fail("expected at most 2^50 bytes");
      x.uses = b.at("uses").as_int_array(0);
      for (std::size_t k = 1; k < x.uses.size(); ++k)
        if (x.uses[k] <= x.uses[k - 1]) b.at("uses").fail("expected strictly increasing op indices");
      x.first_use_is_read = b.has("first_use_is_read") && b.at("first_use_is_read").as_bool();
      // The lifetime: [uses[0], uses[-1]+1), widened by the overrides, by the alloc engine's rule
      // (an override that would narrow it is refused, as torch-spyre asserts). A graph input's
      // empty use list has no lifetime on LX.
      if (!x.uses.empty()) {
        auto over = [&](const char* key) { return b.has(key) ? b.at(key).as_int() : alloc::kNoOverride; };
        auto life = alloc::buffer_from_uses(x.name, 0, x.uses, x.first_use_is_read, over("lifetime_end_override"),
                                            over("lifetime_start_override"));
        if (!life) b.fail(life.error().message);
        x.start = life->start;
        x.end = life->end;
        if (x.start < -(int64_t{1} << 50) || x.end > (int64_t{1} << 50)) b.fail("expected a lifetime within [-2^50, 2^50]");
      }
      if (b.has("in_place_parents"))
        for (const auto& q : b.at("in_place_parents").elements()) x.in_place_parents.push_back(ref(q));
      if (b.has("residency_reason")) x.residency_reason = b.at("residency_reason").as_string();
      if (b.has("boundary")) {
        JsonCursor bc = b.at("boundary");
        static const std::vector<std::string> kTypes = {"Intermediate", "Input", "Output"};
        if (bc.node().is_string()) {
          auto it = std::find(kTypes.begin(), kTypes.end(), bc.as_string());
          if (it == kTypes.end()) bc.fail("expected Intermediate, Input or Output");
          x.boundary = static_cast<int>(it - kTypes.begin());
        } else {
          int64_t v = bc.as_int_at_least(0);
          if (v > 2) bc.fail("expected a BufferType 0..2 (Intermediate, Input, Output)");
          x.boundary = static_cast<int>(v);
        }
      }
      x.plain = b.has("plain") && b.at("plain").as_bool();
      x.relayout_copy = b.has("relayout_copy") && b.at("relayout_copy").as_bool();
      if (b.has("relayout_parent")) {
        if (!x.relayout_copy) b.at("relayout_parent").fail("only a relayout copy has a relayout_parent");
        x.relayout_source = ref(b.at("relayout_parent"));
      }
      if (b.has("relayout_options")) {
        if (x.relayout_source < 0) b.at("relayout_options").fail("relayout options need a relayout_parent");
        auto menu_size = [&](int k) {
          return static_cast<int64_t>(list[k].has("core_divisions") ? list[k].at("core_divisions").array_size() : 1);
        };
        for (const auto& o : b.at("relayout_options").elements()) {
          if (o.array_size() != 3) o.fail("expected [source division, consumer, consumer division]");
          CdBuffer::RelayoutOption r;
          int64_t sd = o.at(0).as_int_at_least(0), cd = o.at(2).as_int_at_least(0);
          r.consumer = ref(o.at(1));
          if (sd >= menu_size(x.relayout_source)) o.at(0).fail("source division index out of range");
          if (cd >= menu_size(r.consumer)) o.at(2).fail("consumer division index out of range");
          r.source_division = static_cast<int>(sd);
          r.consumer_division = static_cast<int>(cd);
          x.relayout_options.push_back(r);
        }
      }
      if (b.has("parents"))
        for (const auto& q : b.at("parents").elements()) x.parents.push_back(ref(q));
      const std::size_t ndiv = b.at("core_divisions").array_size();
      if (ndiv == 0) b.at("core_divisions").fail("expected at least one core division (index 0 is the committed one)");
      for (const auto& d : b.at("core_divisions").elements()) x.divisions.push_back(read_division(d));
      if (b.has("cd_parent_matches")) {
        JsonCursor m = b.at("cd_parent_matches");
        m.require_object();
        for (const auto& [k, v] : m.node().items()) {
          JsonCursor entry(v, m.source(), m.path() + "." + k);
          auto it = id.find(k);
          if (it == id.end()) entry.fail("unknown parent '" + k + "'");
          const int64_t parent_divs = std::max<int64_t>(1, list[it->second].has("core_divisions")
                                                               ? list[it->second].at("core_divisions").array_size()
                                                               : 0);
          std::vector<std::pair<int, int>> pairs;
          for (const auto& pr : entry.elements()) {
            if (pr.array_size() != 2) pr.fail("expected [parent division, division]");
            int64_t pd = pr.at(0).as_int_at_least(0), cd = pr.at(1).as_int_at_least(0);
            if (pd >= parent_divs) pr.at(0).fail("parent division index out of range");
            if (cd >= static_cast<int64_t>(std::max<std::size_t>(1, ndiv))) pr.at(1).fail("division index out of range");
            pairs.emplace_back(static_cast<int>(pd), static_cast<int>(cd));
          }
          x.matches.emplace_back(it->second, std::move(pairs));
        }
      }
      p.buffers.push_back(std::move(x));
    }
    // torch-spyre's in-place rules on every edge, then the paired_with groups.
    for (std::size_t i = 0; i < list.size(); ++i) {
      const CdBuffer& ch = p.buffers[i];
      for (int q : ch.in_place_parents) {
        const CdBuffer& par = p.buffers[q];
        const bool read_after_write = par.first_use_is_read || par.uses.size() >= 2;
        const int64_t csize = ch.size < 0 ? 0 : ch.size, psize = par.size < 0 ? INT64_MAX : par.size;
        std::string why = alloc::in_place_edge_error(ch.name, par.name, par.end, ch.start, read_after_write, csize, psize);
        if (par.uses.empty()) why = "in-place parent '" + par.name + "' of '" + ch.name + "' has no uses";
        if (!why.empty()) list[i].at("in_place_parents").fail(why);
      }
    }
    std::vector<std::pair<int, int>> paired;
    for (std::size_t i = 0; i < list.size(); ++i)
      if (list[i].has("paired_with"))
        for (const auto& q : list[i].at("paired_with").elements()) paired.emplace_back(static_cast<int>(i), ref(q));
    if (!paired.empty()) {
      std::vector<int> g = alloc::group_ids(static_cast<int>(list.size()), paired);
      for (std::size_t i = 0; i < list.size(); ++i) p.buffers[i].group = g[i];
    }
    return p;
  } catch (const JsonInputError& e) {
    return bad_input(e.what());
  }
}

Status check_division_plan(const CdProblem& p, const std::vector<int>& division, const std::vector<int64_t>& address,
                const std::vector<CdServed>& served) {
  const int n = static_cast<int>(p.buffers.size());
  if (static_cast<int>(division.size()) != n || static_cast<int>(address.size()) != n)
    return internal_error("co-opt solution has the wrong length");
  std::vector<std::vector<int>> children(n);
  for (int b = 0; b < n; ++b)
    for (int q : p.buffers[b].parents) children[q].push_back(b);
  for (int b = 0; b < n; ++b)
    if (division[b] < 0 || division[b] >= static_cast<int>(p.buffers[b].divisions.size()))
      return internal_error(p.buffers[b].name + ": division index out of its menu");
  // Per-core footprints, re-derived from the splits (a stride split as reduction does not count).
  std::vector<int64_t> fp(n, 0);
  for (int b = 0; b < n; ++b) {
    const CdBuffer& x = p.buffers[b];
    int64_t part = 1;
    std::set<int64_t> red;
    for (auto [st, f] : x.divisions[division[b]].reduction_splits) red.insert(st);
    for (auto [st, f] : x.divisions[division[b]].output_splits)
      if (!red.count(st)) part = std::min<int64_t>(part * f, int64_t{1} << 40);
    part *= x.divisions[division[b]].output_tile_count;  // coarse tiling: one output tile resident at a time
    fp[b] = x.size < 0 ? 0 : (x.size + part - 1) / part;
  }
  // Atomic groups: all members resident or none.
  std::map<int, std::pair<int, int>> group_state;  // group -> (a resident member, a spilled one)
  for (int b = 0; b < n; ++b) {
    if (p.buffers[b].group < 0) continue;
    auto& [in, out] = group_state.try_emplace(p.buffers[b].group, -1, -1).first->second;
    (address[b] < 0 ? out : in) = b;
  }
  for (auto& [g, st] : group_state)
    if (st.first >= 0 && st.second >= 0)
      return internal_error(p.buffers[st.first].name + " is resident but " + p.buffers[st.second].name + ", paired with it, is not");
  for (int b = 0; b < n; ++b) {
    const CdBuffer& x = p.buffers[b];
    if (address[b] < 0) continue;
    if (!x.residency_reason.empty() || x.size < 0 || x.uses.empty())
      return internal_error(x.name + " is resident despite a forced spill");
    if (x.relayout_copy) {
      bool serves = false;
      for (const CdServed& v : served) serves = serves || v.copy == b;
      if (!serves) return internal_error(x.name + ": a resident relayout copy that serves no consumer");
    }
    if (address[b] % p.alignment) return internal_error(x.name + " is not aligned");
    if (fp[b] > p.capacity || address[b] > p.capacity - fp[b]) return internal_error(x.name + " exceeds the capacity");
    for (int ch : children[b]) {
      bool ok = false;
      for (const CdServed& v : served) ok = ok || (v.consumer == ch && v.parent == b);
      for (const auto& [q, list] : p.buffers[ch].matches)
        if (q == b)
          for (auto [pd, cd] : list) ok = ok || (pd == division[b] && cd == division[ch]);
      if (!ok) return internal_error(x.name + " is resident but child " + p.buffers[ch].name + " slices it differently");
    }
  }
  // Relayouts: each served edge goes through a resident copy of that parent, under a listed option.
  std::set<std::pair<int, int>> edges;
  for (const CdServed& v : served) {
    if (v.copy < 0 || v.copy >= n || v.consumer < 0 || v.consumer >= n || v.parent < 0 || v.parent >= n)
      return internal_error("relayout refers to a buffer out of range");
    const CdBuffer& x = p.buffers[v.copy];
    if (!x.relayout_copy || x.relayout_source != v.parent) return internal_error(x.name + " is not a relayout copy of that parent");
    if (address[v.copy] < 0 || address[v.parent] < 0) return internal_error(x.name + ": serves while it or its source is in HBM");
    bool listed = false;
    for (const auto& o : x.relayout_options)
      listed = listed || (o.consumer == v.consumer && o.source_division == division[v.parent] &&
                          o.consumer_division == division[v.consumer]);
    if (!listed) return internal_error(x.name + ": serves " + p.buffers[v.consumer].name + " under an unpriced pair");
    if (!edges.emplace(v.consumer, v.parent).second)
      return internal_error(p.buffers[v.consumer].name + " reads one parent through two relayout copies");
  }
  // Co-live residents are address-disjoint, except a declared in-place child at its parent's base
  // that starts on the parent's last tick and is no larger: they share only that tick, inside the
  // parent's footprint. A third buffer or a sibling touching any byte of the parent then is an overlap.
  auto handoff = [&](int par, int chd) {
    const CdBuffer& c = p.buffers[chd];
    return address[par] == address[chd] && p.buffers[par].end == c.start + 1 && fp[chd] <= fp[par] &&
           std::find(c.in_place_parents.begin(), c.in_place_parents.end(), par) != c.in_place_parents.end();
  };
  for (int b = 0; b < n; ++b) {
    if (address[b] < 0 || fp[b] == 0) continue;
    for (int o = b + 1; o < n; ++o) {
      if (address[o] < 0 || fp[o] == 0) continue;
      const CdBuffer &x = p.buffers[b], &y = p.buffers[o];
      if (!(x.start < y.end && y.start < x.end)) continue;
      if (address[b] - address[o] >= fp[o] || address[o] - address[b] >= fp[b]) continue;
      if (!handoff(b, o) && !handoff(o, b)) return internal_error(x.name + " and " + y.name + " overlap on LX while both live");
    }
  }
  // At most one child takes a parent's slot (two at its base would overlap each other too).
  std::vector<int> takers(n, 0);
  for (int c = 0; c < n; ++c)
    for (int q : p.buffers[c].in_place_parents)
      if (address[c] >= 0 && address[q] >= 0 && fp[c] > 0 && handoff(q, c) && ++takers[q] > 1)
        return internal_error("two in-place children take the slot of " + p.buffers[q].name);
  return ok_status();
}

Result<CdSolution> solve_divisions(const CdProblem& p, double time_limit) {
  Deadline dl(time_limit);
  Ctx c{&p, std::vector<std::vector<int>>(p.buffers.size())};
  for (std::size_t b = 0; b < p.buffers.size(); ++b)
    for (int q : p.buffers[b].parents) c.children[q].push_back(static_cast<int>(b));
  CdSolution s;
  s.lower_bound = lower_bound(p);
  std::vector<int> cur(p.buffers.size(), 0);
  Eval best = evaluate(c, cur, true, 0);
  std::unordered_set<std::vector<int>, VecHash> seen{cur};
  s.evaluations = 1;
  bool improved = true;
  while (improved && best.cost > s.lower_bound && !dl.expired()) {
    improved = false;
    for (int b = 0; b < static_cast<int>(p.buffers.size()) && !improved && !dl.expired(); ++b) {
      for (int d = 0; d < static_cast<int>(p.buffers[b].divisions.size()) && !improved; ++d) {
        for (int mode = 0; mode < 2 && !improved; ++mode) {
          std::vector<int> cand = cur;
          if (mode == 0) cand[b] = d;
          else cand = recolor(c, cur, b, d);
          if (!seen.insert(cand).second) continue;
          Eval e = evaluate(c, cand, true, 0);
          ++s.evaluations;
          if (e.cost < best.cost) {
            best = std::move(e);
            cur = std::move(cand);
            improved = true;
          }
        }
      }
    }
  }
  // Final placement with the full alloc portfolio, for both the seed and the search result.
  std::vector<int> seed(p.buffers.size(), 0);
  double left = std::max(0.0, dl.remaining_seconds());
  Eval seed_full = evaluate(c, seed, false, std::min(left * 0.3, 0.02));
  Eval final_full = cur == seed ? seed_full : evaluate(c, cur, false, std::min(std::max(0.0, dl.remaining_seconds()), 0.05));
  if (best.cost < final_full.cost) final_full = best;  // the heuristic placement was better
  if (seed_full.cost < final_full.cost) {
    final_full = seed_full;
    cur = seed;
  }
  s.seed_hbm_bytes = seed_full.cost;
  s.division = cur;
  s.address = final_full.address;
  s.reason = final_full.reason;
  s.hbm_bytes = final_full.cost;
  s.proven_optimal = s.hbm_bytes <= s.lower_bound;
  if (Status st = check_division_plan(p, s.division, s.address); !st) return st.error();
  return s;
}

}  // namespace sp::lx
