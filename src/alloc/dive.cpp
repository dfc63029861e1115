// Canonical dive: one branch of the exact search (exact.cpp) without backtracking, with nodes
// that cost the buffers they touch instead of every unplaced one. Buffers go in non-decreasing
// offset order, each on the highest top of its placed co-live buffers; the next one covers the
// best hole at the lowest level (fail first, as the exact search's first dive). Why: on sparse
// instances (chains of activations) that dive packs at the max-load bound, but each exact-search
// node scans every unplaced buffer, so 50,000 buffers did not finish in 10 s; here a placement
// updates the sections and neighbours of the buffer placed, O((n + pairs) log n) in all.
#include <algorithm>
#include <numeric>
#include <tuple>

#include "alloc/internal/conflicts.h"
#include "alloc/internal/dive.h"
#include "alloc/internal/repair.h"
#include "alloc/solver.h"

namespace sp::alloc {

const char* dive_rule_name(DiveRule r) {
  switch (r) {
    case DiveRule::kTightHoles: return "tight-holes";
    case DiveRule::kLeastSlack: return "least-slack";
    case DiveRule::kLowest: return "lowest";
  }
  return "?";
}

namespace {

using Entry = std::pair<Offset, int>;  // (lowest offset, tie rank) of an unplaced buffer

// Per section, its unplaced buffers sorted by Entry, in one flat array: a section never holds more
// than the buffers that cover it, so each gets a fixed slice. Why not a set per section: every
// node of those sets cost a cache miss (a 1,000,000-buffer chain: half the dive's time in them).
struct SectionLists {
  std::vector<int64_t> first;  // per section: where its slice starts (one more entry at the end)
  std::vector<int> count;      // per section: entries in use
  std::vector<Entry> e;

  bool empty(int s) const { return count[s] == 0; }
  const Entry* begin(int s) const { return e.data() + first[s]; }
  const Entry* end(int s) const { return begin(s) + count[s]; }
  void insert(int s, Entry x) {
    Entry* b = e.data() + first[s];
    Entry* pos = std::upper_bound(b, b + count[s], x);
    std::move_backward(pos, b + count[s], b + count[s] + 1);
    *pos = x;
    ++count[s];
  }
  void erase(int s, Entry x) {
    Entry* b = e.data() + first[s];
    Entry* pos = std::lower_bound(b, b + count[s], x);
    std::move(pos + 1, b + count[s], pos);
    --count[s];
  }
};

// Min-heap of ids 0..n-1 whose keys change in place; each id is in it at most once.
template <class Key>
class IndexedHeap {
 public:
  void reset(int n) {
    key_.assign(static_cast<std::size_t>(n), Key{});
    pos_.assign(static_cast<std::size_t>(n), -1);
    heap_.clear();
  }
  int top() const { return heap_.front(); }
  bool contains(int id) const { return pos_[id] >= 0; }
  void set(int id, const Key& k) {
    key_[id] = k;
    if (pos_[id] < 0) {
      pos_[id] = static_cast<int>(heap_.size());
      heap_.push_back(id);
    }
    sift_down(sift_up(pos_[id]));
  }
  void erase(int id) {
    const int i = pos_[id], last = heap_.back();
    heap_.pop_back();
    pos_[id] = -1;
    if (last == id) return;
    put(i, last);
    sift_down(sift_up(i));
  }

 private:
  void put(int i, int id) {
    heap_[i] = id;
    pos_[id] = i;
  }
  int sift_up(int i) {
    const int id = heap_[i];
    while (i > 0 && key_[id] < key_[heap_[(i - 1) / 2]]) {
      put(i, heap_[(i - 1) / 2]);
      i = (i - 1) / 2;
    }
    put(i, id);
    return i;
  }
  void sift_down(int i) {
    const int id = heap_[i], size = static_cast<int>(heap_.size());
    for (int c = 2 * i + 1; c < size; c = 2 * i + 1) {
      if (c + 1 < size && key_[heap_[c + 1]] < key_[heap_[c]]) ++c;
      if (!(key_[heap_[c]] < key_[id])) break;
      put(i, heap_[c]);
      i = c;
    }
    put(i, id);
  }
  std::vector<Key> key_;
  std::vector<int> pos_;   // per id: its index in heap_, or -1
  std::vector<int> heap_;  // ids
};

// What the dives of one portfolio share besides the conflicts: the tie orders (TWA needs the
// peak load over every lifetime) and where each section's slice starts. Built once, not per dive.
struct DiveShared {
  const Problem& p;
  const Conflicts& g;
  std::vector<int> start_order;    // earliest start, then larger (the exact search's first preorder)
  std::vector<int> twa_order;      // MiniMalloc's TWA: largest load over the lifetime, longest, largest area
  std::vector<int64_t> slice_first;  // SectionLists::first: per section, the buffers covering the ones before

  DiveShared(const Problem& pr, const Conflicts& conflicts) : p(pr), g(conflicts) {
    start_order = g.by_start;
    std::stable_sort(start_order.begin(), start_order.end(), [&](int a, int c) {
      return g.s0[a] != g.s0[c] ? g.s0[a] < g.s0[c] : p.buffers[a].size > p.buffers[c].size;
    });
    slice_first.assign(static_cast<std::size_t>(g.sections) + 1, 0);
    for (std::size_t k = 0; k < g.s0.size(); ++k)
      for (int s = g.s0[k]; s < g.s1[k]; ++s) ++slice_first[s + 1];
    for (int s = 0; s < g.sections; ++s) slice_first[s + 1] += slice_first[s];
  }
  const std::vector<int>& order(bool twa) {
    if (!twa) return start_order;
    if (twa_order.empty() && !p.buffers.empty()) {
      const std::vector<Size> t = peak_load_over_lifetime(p);
      auto w = [&](int k) { return p.buffers[k].end - p.buffers[k].start; };
      twa_order = g.by_start;
      std::stable_sort(twa_order.begin(), twa_order.end(), [&](int a, int c) {
        return std::make_tuple(t[a], w(a), p.buffers[a].size * w(a)) > std::make_tuple(t[c], w(c), p.buffers[c].size * w(c));
      });
    }
    return twa_order;
  }
};

struct Dive {
  const Problem& p;
  const DiveOptions& o;
  const Conflicts& g;                       // sections and co-live buffers (shared by the dives)
  const std::vector<int>& s0 = g.s0;        // sections covered [s0, s1)
  const std::vector<int>& s1 = g.s1;
  const std::vector<std::vector<int>>& adj = g.adj;
  int n = 0, nsec = 0;
  std::vector<int> rank;                    // tie rank (lower first)
  std::vector<Offset> mino;                 // lowest offset each unplaced buffer can take
  std::vector<char> placed;
  SectionLists live;                        // per section: its unplaced buffers
  IndexedHeap<Entry> lowest;                // every unplaced buffer by Entry (kLowest)
  std::vector<int> by_rank;                 // rank -> buffer
  std::vector<Size> rem;                    // per section: unplaced bytes
  using SecKey = std::tuple<Offset, int, Size, Size, int>;  // (low, class, first, second, section)
  // Sections with unplaced buffers, best hole on top. Indexed, so that a rekey moves the
  // section's one entry: a heap of pushed keys (stale ones dropped when they surfaced) held
  // millions of entries on a 1,000,000-buffer chain, and its sift-downs were a third of the dive.
  IndexedHeap<SecKey> holes;
  std::vector<uint32_t> stamp;
  uint32_t now = 0;
  std::vector<int> touched;

  Dive(const Problem& pr, const DiveOptions& opt, DiveShared& shared) : p(pr), o(opt), g(shared.g) {
    n = static_cast<int>(p.buffers.size());
    nsec = g.sections;
    by_rank = shared.order(o.twa_ties);  // tie order among buffers at one level
    rank.resize(n);
    for (int r = 0; r < n; ++r) rank[by_rank[r]] = r;
    mino.assign(n, 0);
    placed.assign(n, 0);
    rem.assign(nsec, 0);
    live.first = shared.slice_first;
    live.count.assign(nsec, 0);
    live.e.resize(static_cast<std::size_t>(live.first[nsec]));
    if (o.rule == DiveRule::kLowest) lowest.reset(n);
    for (int k : by_rank) {  // in rank order, so each slice starts sorted
      for (int s = s0[k]; s < s1[k]; ++s) {
        live.e[live.first[s] + live.count[s]++] = {0, rank[k]};
        rem[s] += p.buffers[k].size;
      }
      if (o.rule == DiveRule::kLowest) lowest.set(k, {0, rank[k]});
    }
    holes.reset(nsec);
    stamp.assign(nsec, 0);
    for (int s = 0; s < nsec; ++s) rekey(s);
  }

  // Recomputes a section's hole key: its lowest offset, then (tight holes) zero slack first,
  // fewest candidates at that offset, least slack; (least slack) least slack, fewest candidates.
  void rekey(int s) {
    if (o.rule == DiveRule::kLowest) return;
    if (live.empty(s)) {
      if (holes.contains(s)) holes.erase(s);
      return;
    }
    const Offset low = live.begin(s)->first;
    Size cnt = 0;
    for (const Entry* it = live.begin(s); it != live.end(s) && it->first == low; ++it) ++cnt;
    const Size slack = o.target - low - rem[s];
    holes.set(s, o.rule == DiveRule::kTightHoles ? SecKey{low, slack <= 0 ? 0 : 1, cnt, slack, s}
                                                 : SecKey{low, 0, slack, cnt, s});
  }
  void touch(int s) {
    if (stamp[s] == now) return;
    stamp[s] = now;
    touched.push_back(s);
  }

  int next() {
    if (o.rule == DiveRule::kLowest) return lowest.top();
    const int s = holes.top();
    return by_rank[live.begin(s)->second];
  }

  // Moves an unplaced buffer's entries to a new lowest offset.
  void move(int j, Offset m) {
    for (int s = s0[j]; s < s1[j]; ++s) {
      live.erase(s, {mino[j], rank[j]});
      live.insert(s, {m, rank[j]});
      touch(s);
    }
    if (o.rule == DiveRule::kLowest) {
      lowest.set(j, {m, rank[j]});
    }
    mino[j] = m;
  }
  void begin_step() {
    ++now;
    touched.clear();
    lifted.clear();
  }
  std::vector<std::pair<int, Offset>> lifted;  // this step's neighbours and their old offsets

  // Places c at its lowest offset; lifts its unplaced neighbours above it.
  void place(int c) {
    const Size z = p.buffers[c].size;
    placed[c] = 1;
    const Offset top = mino[c] + z;
    for (int s = s0[c]; s < s1[c]; ++s) {
      live.erase(s, {mino[c], rank[c]});
      rem[s] -= z;
      touch(s);
    }
    if (o.rule == DiveRule::kLowest) lowest.erase(c);
    for (int j : adj[c]) {
      if (placed[j]) continue;
      const Offset m = align_up(std::max(mino[j], top), p.buffers[j].alignment);
      if (m == mino[j]) continue;
      lifted.push_back({j, mino[j]});
      move(j, m);
    }
    for (int s : touched) rekey(s);
  }
  // Takes back the placement of this step.
  void unplace(int c) {
    for (auto it = lifted.rbegin(); it != lifted.rend(); ++it) move(it->first, it->second);
    placed[c] = 0;
    for (int s = s0[c]; s < s1[c]; ++s) {
      live.insert(s, {mino[c], rank[c]});
      rem[s] += p.buffers[c].size;
    }
    if (o.rule == DiveRule::kLowest) lowest.set(c, {mino[c], rank[c]});
    for (int s : touched) rekey(s);
  }
  // After place(c): does every bound still hold under the target? (c and the buffers it lifted
  // end below it; every touched section's lowest offset plus its unplaced bytes fit.)
  bool within_target(int c) const {
    if (mino[c] + p.buffers[c].size > o.target) return false;
    for (auto& [j, old] : lifted)
      if (mino[j] + p.buffers[j].size > o.target) return false;
    for (int s : touched)
      if (!live.empty(s) && live.begin(s)->first + rem[s] > o.target) return false;
    return true;
  }
};

bool dive_can_place(const Problem& p) {
  for (const Buffer& b : p.buffers)
    if (b.fixed_offset != kNoFixedOffset || !b.residency_reason.empty()) return false;
  return true;
}

bool all_conflicts(const Problem& p, Conflicts& g, const Deadline* dl, int64_t max_pairs) {
  std::vector<int> ids(p.buffers.size());
  std::iota(ids.begin(), ids.end(), 0);
  return build_conflicts(p, ids, g, dl, max_pairs);
}

// One dive over prebuilt conflicts (the caller checked dive_can_place).
Placement dive_with(const Problem& p, const DiveOptions& o, DiveShared& shared, const Deadline* dl) {
  Placement pl;
  Dive d(p, o, shared);
  pl.offsets.assign(p.buffers.size(), kSpilled);
  pl.spill_reasons.assign(p.buffers.size(), "");
  // Blocking (the exact search's second branch, taken once per buffer and never undone): a
  // buffer whose placement would break a bound under the target moves one byte up, so that a
  // co-live buffer placed at this level can lift it instead.
  std::vector<char> blocked(p.buffers.size(), 0);
  Size h = 0;
  for (int placed = 0, steps = 0; placed < d.n; ++steps) {
    if ((steps & 255) == 0 && dl && dl->expired()) return {};
    const int c = d.next();
    d.begin_step();
    d.place(c);
    if (o.block && h <= o.target && !blocked[c] && !d.within_target(c)) {
      d.unplace(c);
      blocked[c] = 1;
      d.begin_step();
      d.move(c, align_up(d.mino[c] + 1, p.buffers[c].alignment));
      for (int s : d.touched) d.rekey(s);
      continue;
    }
    pl.offsets[c] = d.mino[c];
    h = std::max(h, d.mino[c] + p.buffers[c].size);
    if (h > o.give_up_above) return {};
    ++placed;
  }
  return pl;
}

}  // namespace

Placement canonical_dive(const Problem& p, const DiveOptions& o, const Deadline* dl) {
  Conflicts g;
  if (!dive_can_place(p) || !all_conflicts(p, g, dl, o.max_pairs)) return {};
  DiveShared shared(p, g);
  return dive_with(p, o, shared, dl);
}

Placement dive_portfolio(const Problem& p, Size target, const Deadline& dl) {
  // Each rule and tie order packs chains the others do not (measured on generated chains of
  // 20,000 buffers: tight holes in start order packs the ResNet-like family at the bound, the
  // lowest buffer first packs a chain without skips that tight holes leaves 33 % above).
  const std::pair<DiveRule, bool> kVariants[] = {
      {DiveRule::kTightHoles, false}, {DiveRule::kLowest, false}, {DiveRule::kLeastSlack, false},
      {DiveRule::kTightHoles, true},  {DiveRule::kLeastSlack, true}, {DiveRule::kLowest, true}};
  Placement best;
  Size best_h = kUnbounded;
  Conflicts g;  // built once: the variants differ in order only
  if (!dive_can_place(p) || !all_conflicts(p, g, &dl, INT64_MAX)) return best;
  DiveShared shared(p, g);
  for (auto [rule, twa] : kVariants) {
    if (dl.expired() || best_h <= target) break;
    DiveOptions o;
    o.rule = rule;
    o.twa_ties = twa;
    o.target = target;
    o.give_up_above = best_h - 1;
    Placement pl = dive_with(p, o, shared, &dl);
    if (pl.offsets.empty()) continue;
    best_h = height(p, pl);
    best = std::move(pl);
  }
  return best;
}

}  // namespace sp::alloc
