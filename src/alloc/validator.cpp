#include "alloc/validator.h"

#include <algorithm>
#include <limits>
#include <set>
#include <utility>

namespace sp::alloc {

const char* violation_name(ViolationKind v) {
  switch (v) {
    case ViolationKind::kWrongLength: return "wrong_length";
    case ViolationKind::kNegativeOffset: return "negative_offset";
    case ViolationKind::kMisaligned: return "misaligned";
    case ViolationKind::kOverCapacity: return "over_capacity";
    case ViolationKind::kFixedMoved: return "fixed_offset_moved";
    case ViolationKind::kForcedPlaced: return "forced_spill_placed";
    case ViolationKind::kOverlap: return "overlap";
    case ViolationKind::kBadInPlace: return "bad_in_place";
    case ViolationKind::kSpillRequired: return "spilled_in_pack";
    case ViolationKind::kGroupSplit: return "group_split";
  }
  return "unknown";
}

namespace {

constexpr std::size_t kMaxIssues = 32;

struct Reporter {
  const Problem& p;
  ValidationReport r;
  bool full() const { return r.violations.size() >= kMaxIssues; }
  void add(ViolationKind k, int a, int b, std::string msg) {
    if (full()) return;
    std::vector<std::string> involved;
    for (int i : {a, b})
      if (i >= 0) involved.push_back(p.buffers[i].id);
    r.violations.push_back({k, std::move(involved), std::move(msg), {a, b}});
  }
};

}  // namespace

// True when [o, o + size) ends past `cap`, without forming o + size (it may not fit in int64).
bool ends_past(Offset o, Size size, Size cap) { return size < 0 || o > cap || size > cap - o; }

ValidationReport validate(const Problem& p, const Placement& pl, bool require_all_placed, Size capacity) {
  const Size cap = capacity >= 0 ? capacity : p.capacity;
  Reporter rep{p, {}};
  const auto& bs = p.buffers;
  const int n = static_cast<int>(bs.size());
  if (static_cast<int>(pl.offsets.size()) != n) {
    rep.add(ViolationKind::kWrongLength, -1, -1,
            "plan has " + std::to_string(pl.offsets.size()) + " offsets for " + std::to_string(n) + " buffers");
    return rep.r;
  }
  // Per-buffer rules.
  for (int i = 0; i < n; ++i) {
    const Buffer& b = bs[i];
    const Offset o = pl.offsets[i];
    if (o == kSpilled) {
      if (b.fixed_offset != kNoFixedOffset) rep.add(ViolationKind::kFixedMoved, i, -1, "'" + b.id + "' has a fixed offset but was spilled");
      else if (require_all_placed && b.residency_reason.empty()) rep.add(ViolationKind::kSpillRequired, i, -1, "'" + b.id + "' was not placed");
      continue;
    }
    if (o < 0) { rep.add(ViolationKind::kNegativeOffset, i, -1, "'" + b.id + "' has negative offset"); continue; }
    if (b.alignment > 1 && o % b.alignment != 0)
      rep.add(ViolationKind::kMisaligned, i, -1, "'" + b.id + "' offset " + std::to_string(o) + " not a multiple of " + std::to_string(b.alignment));
    if (ends_past(o, b.size, cap))
      rep.add(ViolationKind::kOverCapacity, i, -1, "'" + b.id + "' at " + std::to_string(o) + " with size " + std::to_string(b.size) +
                                                   " ends past capacity " + std::to_string(cap));
    if (b.fixed_offset != kNoFixedOffset && o != b.fixed_offset)
      rep.add(ViolationKind::kFixedMoved, i, -1, "'" + b.id + "' must be at " + std::to_string(b.fixed_offset));
    if (!b.residency_reason.empty()) rep.add(ViolationKind::kForcedPlaced, i, -1, "'" + b.id + "' must be spilled: " + b.residency_reason);
  }
  // Atomic groups: a member placed and another spilled.
  {
    std::vector<int> placed_member(n, -1), spilled_member(n, -1);
    for (int i = 0; i < n; ++i) {
      const int g = bs[i].group;
      if (g < 0 || g >= n) continue;
      (pl.offsets[i] == kSpilled ? spilled_member : placed_member)[g] = i;
    }
    for (int g = 0; g < n; ++g)
      if (placed_member[g] >= 0 && spilled_member[g] >= 0)
        rep.add(ViolationKind::kGroupSplit, placed_member[g], spilled_member[g],
                "'" + bs[placed_member[g]].id + "' is placed but '" + bs[spilled_member[g]].id + "', paired with it, is spilled");
  }
  // Legal hand-offs: a placed child at a placed declared parent's exact base, no larger than the
  // parent, the parent ending at child.start+1; one child per parent. On that tick the parent's
  // whole footprint is live (torch-spyre keeps it: no third buffer and no sibling may use any of
  // its bytes, those above the child's size included) and the child lies inside it, so the child
  // enters the sweep one tick late and the parent keeps its full lifetime.
  std::vector<Time> eff_start(n);
  for (int i = 0; i < n; ++i) eff_start[i] = bs[i].start;
  std::vector<int> taken_by(n, -1);
  for (int c = 0; c < n; ++c) {
    if (pl.offsets[c] == kSpilled) continue;
    for (int q : bs[c].in_place_parents) {
      if (q < 0 || q >= n || pl.offsets[q] != pl.offsets[c] || bs[q].end != bs[c].start + 1 || bs[c].size > bs[q].size) continue;
      if (bs[c].size == 0 || bs[q].size == 0) continue;
      if (taken_by[q] != -1) {
        rep.add(ViolationKind::kBadInPlace, c, taken_by[q], "'" + bs[c].id + "' and '" + bs[taken_by[q]].id + "' both take the slot of '" + bs[q].id + "'");
        continue;
      }
      taken_by[q] = c;
      eff_start[c] = bs[c].start + 1;
      break;
    }
  }
  // Sweep over time; the live set holds disjoint address intervals keyed by offset.
  std::vector<int> order;
  order.reserve(n);
  for (int i = 0; i < n; ++i)
    if (pl.offsets[i] != kSpilled && pl.offsets[i] >= 0 && bs[i].size > 0 && bs[i].end > eff_start[i]) order.push_back(i);
  std::vector<std::pair<Time, int>> events;  // (time, +id+1 start | -(id+1) end); ends sort first
  events.reserve(order.size() * 2);
  for (int i : order) {
    events.push_back({eff_start[i], i + 1});
    events.push_back({bs[i].end, -(i + 1)});
  }
  std::sort(events.begin(), events.end());
  std::set<std::pair<Offset, int>> live;
  for (auto& [t, e] : events) {
    if (rep.full()) break;
    if (e < 0) {
      int i = -e - 1;
      live.erase({pl.offsets[i], i});
      continue;
    }
    int i = e - 1;
    // Compare offsets by differences that cannot overflow: both are >= 0 here, and a live
    // neighbour below `lo` overlaps iff lo - its offset < its size.
    Offset lo = pl.offsets[i];
    auto it = live.lower_bound({lo, -1});
    bool clash = false;
    if (it != live.end() && it->first - lo < bs[i].size) {
      rep.add(ViolationKind::kOverlap, i, it->second, "'" + bs[i].id + "' overlaps '" + bs[it->second].id + "' at tick " + std::to_string(t));
      clash = true;
    }
    if (!clash && it != live.begin()) {
      auto pr = std::prev(it);
      if (lo - pr->first < bs[pr->second].size) {
        rep.add(ViolationKind::kOverlap, i, pr->second, "'" + bs[i].id + "' overlaps '" + bs[pr->second].id + "' at tick " + std::to_string(t));
        clash = true;
      }
    }
    if (!clash) live.insert({lo, i});  // keep the live set disjoint so neighbour checks stay exact
  }
  return rep.r;
}

}  // namespace sp::alloc
