#include "alloc/validator.h"

#include <algorithm>
#include <limits>
#include <set>
#include <utility>

namespace sp::alloc {

const char* violation_name(Violation v) {
  switch (v) {
    case Violation::kWrongLength: return "wrong_length";
    case Violation::kNegativeOffset: return "negative_offset";
    case Violation::kMisaligned: return "misaligned";
    case Violation::kOverCapacity: return "over_capacity";
    case Violation::kFixedMoved: return "fixed_offset_moved";
    case Violation::kForcedPlaced: return "forced_spill_placed";
    case Violation::kOverlap: return "overlap";
    case Violation::kBadInPlace: return "bad_in_place";
    case Violation::kSpillRequired: return "spilled_in_pack";
    case Violation::kGroupSplit: return "group_split";
  }
  return "unknown";
}

namespace {

constexpr std::size_t kMaxIssues = 32;

struct Reporter {
  ValidationReport r;
  bool full() const { return r.issues.size() >= kMaxIssues; }
  void add(Violation k, int a, int b, std::string msg) {
    if (!full()) r.issues.push_back({k, a, b, std::move(msg)});
  }
};

}  // namespace

// True when [o, o + size) ends past `cap`, without forming o + size (it may not fit in int64).
bool ends_past(Offset o, Size size, Size cap) { return size < 0 || o > cap || size > cap - o; }

ValidationReport validate(const Problem& p, const Placement& pl, bool require_all_placed, Size capacity) {
  const Size cap = capacity >= 0 ? capacity : p.capacity;
  Reporter rep;
  const auto& bs = p.buffers;
  const int n = static_cast<int>(bs.size());
  if (static_cast<int>(pl.offsets.size()) != n) {
    rep.add(Violation::kWrongLength, -1, -1,
            "plan has " + std::to_string(pl.offsets.size()) + " offsets for " + std::to_string(n) + " buffers");
    return rep.r;
  }
  // Per-buffer rules.
  for (int i = 0; i < n; ++i) {
    const Buffer& b = bs[i];
    const Offset o = pl.offsets[i];
    if (o == kSpilled) {
      if (b.fixed_offset != kNoFixedOffset) rep.add(Violation::kFixedMoved, i, -1, "'" + b.id + "' has a fixed offset but was spilled");
      else if (require_all_placed && b.residency_reason.empty()) rep.add(Violation::kSpillRequired, i, -1, "'" + b.id + "' was not placed");
      continue;
    }
    if (o < 0) { rep.add(Violation::kNegativeOffset, i, -1, "'" + b.id + "' has negative offset"); continue; }
    if (b.alignment > 1 && o % b.alignment != 0)
      rep.add(Violation::kMisaligned, i, -1, "'" + b.id + "' offset " + std::to_string(o) + " not a multiple of " + std::to_string(b.alignment));
    if (ends_past(o, b.size, cap))
      rep.add(Violation::kOverCapacity, i, -1, "'" + b.id + "' at " + std::to_string(o) + " with size " + std::to_string(b.size) +
                                                   " ends past capacity " + std::to_string(cap));
    if (b.fixed_offset != kNoFixedOffset && o != b.fixed_offset)
      rep.add(Violation::kFixedMoved, i, -1, "'" + b.id + "' must be at " + std::to_string(b.fixed_offset));
    if (!b.residency_reason.empty()) rep.add(Violation::kForcedPlaced, i, -1, "'" + b.id + "' must be spilled: " + b.residency_reason);
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
        rep.add(Violation::kGroupSplit, placed_member[g], spilled_member[g],
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
        rep.add(Violation::kBadInPlace, c, taken_by[q], "'" + bs[c].id + "' and '" + bs[taken_by[q]].id + "' both take the slot of '" + bs[q].id + "'");
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
      rep.add(Violation::kOverlap, i, it->second, "'" + bs[i].id + "' overlaps '" + bs[it->second].id + "' at tick " + std::to_string(t));
      clash = true;
    }
    if (!clash && it != live.begin()) {
      auto pr = std::prev(it);
      if (lo - pr->first < bs[pr->second].size) {
        rep.add(Violation::kOverlap, i, pr->second, "'" + bs[i].id + "' overlaps '" + bs[pr->second].id + "' at tick " + std::to_string(t));
        clash = true;
      }
    }
    if (!clash) live.insert({lo, i});  // keep the live set disjoint so neighbour checks stay exact
  }
  return rep.r;
}

}  // namespace sp::alloc
