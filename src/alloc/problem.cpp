#include "alloc/problem.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace sp::alloc {

Cost default_spill_cost(const Buffer& b) {
  // reads_served = read_count - [first use is a read]; the producing write also costs a transfer.
  int reads_served = b.produced_on_chip ? b.reads : std::max(0, b.reads - 1);
  Cost c;  // saturated: check_problem rejects totals past kMaxTotalCost
  if (__builtin_mul_overflow(static_cast<Cost>(reads_served) + (b.produced_on_chip ? 1 : 0), b.size, &c))
    return std::numeric_limits<Cost>::max();
  return c;
}

Result<Buffer> buffer_from_uses(std::string id, Size size, const std::vector<Time>& uses, bool first_use_is_read,
                                Time end_override, Time start_override) {
  if (uses.empty()) return bad_input("buffer '" + id + "': uses must not be empty");
  for (std::size_t i = 1; i < uses.size(); ++i)
    if (uses[i] <= uses[i - 1]) return bad_input("buffer '" + id + "': uses must be strictly increasing");
  if (end_override != kNoOverride && end_override < uses.back() + 1)
    return bad_input("buffer '" + id + "': lifetime_end_override " + std::to_string(end_override) +
                     " is below uses[-1]+1 = " + std::to_string(uses.back() + 1));
  if (start_override != kNoOverride && start_override > uses.front())
    return bad_input("buffer '" + id + "': lifetime_start_override " + std::to_string(start_override) +
                     " is after uses[0] = " + std::to_string(uses.front()));
  Buffer b;
  b.id = std::move(id);
  b.size = size;
  b.start = start_override != kNoOverride ? start_override : uses.front();
  b.end = end_override != kNoOverride ? end_override : uses.back() + 1;
  b.produced_on_chip = !first_use_is_read;
  b.reads = static_cast<int>(uses.size()) - (first_use_is_read ? 0 : 1);
  return b;
}

std::string in_place_edge_error(const std::string& child, const std::string& parent, Time parent_end, Time child_start,
                                bool parent_read_after_write, Size child_size, Size parent_size) {
  if (parent_end != child_start + 1)
    return "in-place parent '" + parent + "' of '" + child + "' must end at the hand-off tick: its end " +
           std::to_string(parent_end) + " != child start " + std::to_string(child_start) + " + 1";
  if (!parent_read_after_write)
    return "in-place parent '" + parent + "' of '" + child +
           "' is a computed buffer that is never read (no use after its write)";
  if (child_size > parent_size)
    return "in-place child '" + child + "' (" + std::to_string(child_size) + " B) is larger than its parent '" + parent +
           "' (" + std::to_string(parent_size) + " B)";
  return {};
}

bool has_groups(const Problem& p) {
  for (const Buffer& b : p.buffers)
    if (b.group >= 0) return true;
  return false;
}

std::vector<int> group_ids(int n, const std::vector<std::pair<int, int>>& pairs) {
  std::vector<int> up(n);
  std::iota(up.begin(), up.end(), 0);
  auto root = [&](int x) {
    while (up[x] != x) x = up[x] = up[up[x]];
    return x;
  };
  for (auto [a, b] : pairs) {
    const int x = root(a), y = root(b);
    if (x != y) up[std::max(x, y)] = std::min(x, y);  // the lowest index names the group
  }
  std::vector<int> members(n, 0), out(n, -1);
  for (int i = 0; i < n; ++i) ++members[root(i)];
  for (int i = 0; i < n; ++i)
    if (members[root(i)] > 1) out[i] = root(i);
  return out;
}

bool add_group_reasons(Problem& p) {
  std::unordered_map<int, int> forced;  // group -> a member with a residency reason
  for (int i = 0; i < static_cast<int>(p.buffers.size()); ++i)
    if (p.buffers[i].group >= 0 && !p.buffers[i].residency_reason.empty()) forced.emplace(p.buffers[i].group, i);
  bool added = false;
  for (Buffer& b : p.buffers) {
    auto it = b.group >= 0 ? forced.find(b.group) : forced.end();
    if (it == forced.end() || !b.residency_reason.empty()) continue;
    const Buffer& m = p.buffers[it->second];
    b.residency_reason = "paired with '" + m.id + "', which stays in HBM: " + m.residency_reason;
    added = true;
  }
  return added;
}

Status check_problem(const Problem& p) {
  const auto& bs = p.buffers;
  const int n = static_cast<int>(bs.size());
  if (p.capacity < 0) return bad_input("capacity must be >= 0");
  std::unordered_map<std::string_view, int> names;  // views into bs: no copy per buffer
  names.reserve(bs.size());
  Size total_bytes = 0;  // sizes + padding so far, <= kMaxTotalBytes (each term is checked first)
  Cost total_cost = 0;   // spill costs so far, <= kMaxTotalCost
  for (int i = 0; i < n; ++i) {
    const Buffer& b = bs[i];
    auto who = [&] { return "buffer '" + b.id + "'"; };  // (built only for an error: 1M buffers are checked twice)
    if (!names.emplace(b.id, i).second) return bad_input(who() + ": duplicate id");
    if (b.size < 0) return bad_input(who() + ": negative size " + std::to_string(b.size));
    if (b.size > kMaxTotalBytes || b.alignment > kMaxTotalBytes || b.fixed_offset > kMaxTotalBytes - b.size)
      return bad_input(who() + ": size, alignment or pinned end above 2^60 bytes");
    if (b.alignment > 0) total_bytes += b.size + b.alignment - 1;
    if (total_bytes > kMaxTotalBytes)
      return bad_input(who() + ": the buffers' sizes (with alignment padding) add up to more than 2^60 bytes");
    Cost c = 0;
    if (b.spill_cost >= 0) c = b.spill_cost;
    else if (__builtin_mul_overflow(static_cast<Cost>(b.produced_on_chip ? b.reads + Cost{1} : std::max(0, b.reads - 1)),
                                    b.size, &c))
      c = kMaxTotalCost + 1;
    if (c > kMaxTotalCost || (total_cost += c) > kMaxTotalCost)
      return bad_input(who() + ": the spill costs add up to more than 2^62");
    if (b.start < -kMaxTime || b.end > kMaxTime)
      return bad_input(who() + ": lifetime outside [-2^61, 2^61]");
    if (b.reads < 0) return bad_input(who() + ": negative read count");
    if (b.end <= b.start) return bad_input(who() + ": end " + std::to_string(b.end) + " <= start " + std::to_string(b.start));
    if (b.alignment <= 0) return bad_input(who() + ": alignment must be positive");
    if (b.group < -1 || b.group >= n) return bad_input(who() + ": group must be -1 or a buffer index");
    if (b.fixed_offset != kNoFixedOffset && (b.fixed_offset < 0 || b.fixed_offset % b.alignment != 0))
      return bad_input(who() + ": fixed offset " + std::to_string(b.fixed_offset) + " is negative or not aligned");
    // A pinned buffer is always placed: one that ends past the capacity makes every plan invalid.
    if (b.fixed_offset != kNoFixedOffset && b.fixed_offset + b.size > p.capacity)
      return bad_input(who() + ": pinned at offset " + std::to_string(b.fixed_offset) + " with size " + std::to_string(b.size) +
                       ", it ends at " + std::to_string(b.fixed_offset + b.size) + ", past the capacity " + std::to_string(p.capacity));
    for (int q : b.in_place_parents) {
      if (q < 0 || q >= n) return bad_input(who() + ": in-place parent does not exist");
      if (q == i) return bad_input(who() + ": is its own in-place parent");
      const Buffer& par = bs[q];
      std::string why = in_place_edge_error(b.id, par.id, par.end, b.start, !par.produced_on_chip || par.reads >= 1, b.size,
                                            par.size);
      if (!why.empty()) return bad_input(who() + ": " + why);
    }
  }
  // Parent edges go from an earlier end to a later start, so a cycle is impossible once the
  // end == start+1 rule holds (parent.start < parent.end = child.start+1 <= child.end); still,
  // parents with start >= child start and a zero-length overlap could loop, so check directly.
  std::vector<int> state(n, 0);
  std::vector<std::pair<int, std::size_t>> stack;
  for (int s = 0; s < n; ++s) {
    if (state[s]) continue;
    if (bs[s].in_place_parents.empty()) {  // no edges: nothing to walk (and no allocation per buffer)
      state[s] = 2;
      continue;
    }
    stack.assign(1, {s, 0});
    state[s] = 1;
    while (!stack.empty()) {
      auto& [v, k] = stack.back();
      if (k < bs[v].in_place_parents.size()) {
        int w = bs[v].in_place_parents[k++];
        if (state[w] == 1) return bad_input("buffer '" + bs[v].id + "': in-place parents form a cycle");
        if (state[w] == 0) {
          state[w] = 1;
          stack.push_back({w, 0});
        }
      } else {
        state[v] = 2;
        stack.pop_back();
      }
    }
  }
  // Fixed offsets must not collide with each other (in time and space).
  std::vector<int> fixed;
  for (int i = 0; i < n; ++i)
    if (bs[i].fixed_offset != kNoFixedOffset) fixed.push_back(i);
  std::sort(fixed.begin(), fixed.end(), [&](int a, int b) { return bs[a].start < bs[b].start; });
  for (std::size_t a = 0; a < fixed.size(); ++a)
    for (std::size_t c = a + 1; c < fixed.size() && bs[fixed[c]].start < bs[fixed[a]].end; ++c) {
      const Buffer& x = bs[fixed[a]];
      const Buffer& y = bs[fixed[c]];
      if (x.size > 0 && y.size > 0 && x.fixed_offset < y.fixed_offset + y.size && y.fixed_offset < x.fixed_offset + x.size)
        return bad_input("fixed offsets of '" + x.id + "' and '" + y.id + "' collide");
    }
  return ok_status();
}

bool has_in_place(const Problem& p) {
  for (const Buffer& b : p.buffers)
    if (!b.in_place_parents.empty()) return true;
  return false;
}

Problem handoff_relaxation(const Problem& p, Handoff which) {
  Problem r = p;
  std::vector<char> is_parent(p.buffers.size(), 0);
  for (const Buffer& b : p.buffers)
    for (int q : b.in_place_parents) is_parent[q] = 1;
  for (std::size_t i = 0; i < r.buffers.size(); ++i) {
    Buffer& b = r.buffers[i];
    const bool shift = which == Handoff::kChildLate ? !b.in_place_parents.empty() : is_parent[i] != 0;
    b.in_place_parents.clear();
    if (!shift) continue;
    if (b.start + 1 < b.end) {
      if (which == Handoff::kChildLate) ++b.start;
      else --b.end;
    } else {  // live only at the hand-off tick: it may share its bytes there, so no footprint
      b.spill_cost = spill_cost(b);  // (the cost stays: spilling it still costs the same)
      b.size = 0;
    }
  }
  return r;
}

Problem handoff_restriction(const Problem& p, std::vector<int>& merged_of) {
  const int n = static_cast<int>(p.buffers.size());
  std::vector<int> head(n), next(n, -1), prev(n, -1);
  auto mergeable = [&](const Buffer& b) {
    return b.residency_reason.empty() && b.fixed_offset == kNoFixedOffset && b.group < 0;
  };
  for (int c = 0; c < n; ++c)
    for (int q : p.buffers[c].in_place_parents)
      if (next[q] < 0 && prev[c] < 0 && mergeable(p.buffers[c]) && mergeable(p.buffers[q]) &&
          p.buffers[c].alignment == p.buffers[q].alignment) {
        next[q] = c;
        prev[c] = q;
        break;
      }
  Problem r;
  r.capacity = p.capacity;
  merged_of.assign(n, -1);
  for (int i = 0; i < n; ++i) {
    if (prev[i] >= 0) continue;  // not a chain's first member
    Buffer m = p.buffers[i];
    m.in_place_parents.clear();
    Cost cost = spill_cost(p.buffers[i]);
    for (int j = next[i]; j >= 0; j = next[j]) {
      const Buffer& b = p.buffers[j];
      m.size = std::max(m.size, b.size);
      m.start = std::min(m.start, b.start);
      m.end = std::max(m.end, b.end);
      cost += spill_cost(b);
    }
    m.spill_cost = std::min(cost, kMaxTotalCost);
    for (int j = i; j >= 0; j = next[j]) merged_of[j] = static_cast<int>(r.buffers.size());
    r.buffers.push_back(std::move(m));
  }
  return r;
}

Size max_load(const Problem& p) {
  std::vector<std::pair<Time, Size>> ev;
  ev.reserve(p.buffers.size() * 2);
  Size best = 0;  // a pinned buffer's end bounds every height too
  for (const Buffer& b : p.buffers) {
    ev.push_back({b.start, b.size});
    ev.push_back({b.end, -b.size});
    if (b.fixed_offset != kNoFixedOffset) best = std::max(best, b.fixed_offset + b.size);
  }
  std::sort(ev.begin(), ev.end());  // at equal times the negative (ending) deltas come first
  Size cur = 0;
  for (auto& [t, d] : ev) {
    cur += d;
    best = std::max(best, cur);
  }
  return best;
}

bool all_placed(const Problem& p, const Placement& pl) {
  for (std::size_t i = 0; i < p.buffers.size(); ++i)
    if (pl.offsets[i] == kSpilled && p.buffers[i].residency_reason.empty()) return false;
  return true;
}

Size height(const Problem& p, const Placement& pl) {
  Size h = 0;
  for (std::size_t i = 0; i < p.buffers.size() && i < pl.offsets.size(); ++i)
    if (pl.offsets[i] != kSpilled) h = std::max(h, pl.offsets[i] + p.buffers[i].size);
  return h;
}

Cost spilled_cost(const Problem& p, const Placement& pl) {
  Cost c = 0;
  for (std::size_t i = 0; i < p.buffers.size() && i < pl.offsets.size(); ++i)
    if (pl.offsets[i] == kSpilled) c += spill_cost(p.buffers[i]);
  return c;
}

}  // namespace sp::alloc
