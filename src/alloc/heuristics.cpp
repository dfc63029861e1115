// Heuristic placers: torch-spyre's greedy / first-fit / best-fit, TFLite's greedy-by-size, the
// bucketed sweep for very large instances, and the first-fit decoder used by annealing.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <numeric>
#include <queue>
#include <tuple>
#include <limits>
#include <utility>

#include "alloc/internal/heuristics.h"
#include "alloc/solver.h"
#include "core/deadline.h"

namespace sp::alloc {
namespace {

struct Span {
  Offset lo, hi;  // [lo, hi)
};

std::string no_room(Size capacity) { return "no room on scratchpad (capacity " + std::to_string(capacity) + ")"; }

Placement empty_placement(const Problem& p) {
  Placement pl;
  pl.offsets.assign(p.buffers.size(), kSpilled);
  pl.spill_reasons.assign(p.buffers.size(), "");
  return pl;
}

// Deadline checks cost a clock read: the quadratic placers look every 64 buffers.
bool out_of_time(const Deadline* dl, std::size_t k) { return dl && (k & 63) == 0 && dl->expired(); }

// Marks every buffer not yet placed or spilled as spilled for lack of time (a partial plan is
// still valid; pack scores it as unfinished).
void spill_rest(const Problem& p, Placement& pl) {
  for (std::size_t i = 0; i < p.buffers.size(); ++i)
    if (pl.offsets[i] == kSpilled && pl.spill_reasons[i].empty()) pl.spill_reasons[i] = "time limit reached";
}

// Spills forced buffers; returns false for those (callers skip them).
bool placeable(const Problem& p, Placement& pl, int i) {
  const Buffer& b = p.buffers[i];
  if (!b.residency_reason.empty()) {
    pl.spill_reasons[i] = b.residency_reason;
    return false;
  }
  return true;
}

// Merges occupied spans that are already sorted by start.
void merge_sorted_spans(std::vector<Span>& s) {
  std::size_t w = 0;
  for (std::size_t r = 0; r < s.size(); ++r) {
    if (s[r].hi <= s[r].lo) continue;
    if (w > 0 && s[r].lo <= s[w - 1].hi) s[w - 1].hi = std::max(s[w - 1].hi, s[r].hi);
    else s[w++] = s[r];
  }
  s.resize(w);
}

// Sorts and merges occupied spans.
void merge_spans(std::vector<Span>& s) {
  std::sort(s.begin(), s.end(), [](const Span& a, const Span& b) { return a.lo < b.lo; });
  merge_sorted_spans(s);
}

// Free gaps [lo, hi) of [0, capacity) outside merged spans (hi may be capacity), into g.
void free_gaps(const std::vector<Span>& merged, Size capacity, std::vector<Span>& g) {
  g.clear();
  Offset cur = 0;
  for (const Span& s : merged) {
    if (s.lo > cur) g.push_back({cur, std::min(s.lo, capacity)});
    cur = std::max(cur, s.hi);
    if (cur >= capacity) break;
  }
  if (cur < capacity) g.push_back({cur, capacity});
}

// Records a placement at `at` (>= 0 and below capacity), else a spill; true when placed.
bool settle(Placement& pl, int i, Offset at, Size size, Size capacity) {
  if (at >= 0 && at + size <= capacity) {
    pl.offsets[i] = at;
    return true;
  }
  pl.spill_reasons[i] = no_room(capacity);
  return false;
}

// Pre-places buffers with fixed offsets; returns their indices.
std::vector<int> place_fixed(const Problem& p, Placement& pl) {
  std::vector<int> f;
  for (int i = 0; i < static_cast<int>(p.buffers.size()); ++i)
    if (p.buffers[i].fixed_offset != kNoFixedOffset && p.buffers[i].residency_reason.empty()) {
      pl.offsets[i] = p.buffers[i].fixed_offset;
      f.push_back(i);
    }
  return f;
}

// Bucketed time index over placed buffers: query returns the address spans of placed buffers
// overlapping [s, e). Entries are stored by value (cache friendly). Each bucket keeps two lists:
// the entries that start in it and the ones that continue into it from an earlier bucket. A
// query over buckets [a, z] reads both lists of bucket a and only the starting lists after it,
// so each entry is read once: with one list per bucket a long-lived query stepped over every
// long-lived entry once per bucket (on stretched SOMAS traces, 2 of a 100k sweep's 4 s).
class TimeIndex {
  struct Entry {
    Time s, e;
    Offset lo, hi;
  };
  // What a query needs to know of a chunk of entries (those of size zero left out).
  struct Summary {
    Offset top = 0;  // the highest end
    Offset lo = 0;   // the lowest start address
    Offset gap = 0;  // the widest gap inside the union of their address ranges
    Time min_end = std::numeric_limits<Time>::max();    // the earliest end time
    Time max_start = std::numeric_limits<Time>::min();  // the latest start time
  };
  struct Chunk {
    std::vector<Entry> e;  // by address, 1 to 2 * kChunk entries
    Summary sum;           // of e
  };
  // A list sorted by address, cut into chunks: an insertion moves and summarizes one chunk,
  // where a flat list moved its whole tail and took the summaries of every block after it again
  // (with flat lists of 16-entry blocks, insertion was half of a whole sweep at 100k buffers).
  struct List {
    std::vector<Chunk> chunks;
    void insert(const Entry& x) {
      if (chunks.empty()) {
        chunks.push_back({{x}, {}});
        summarize(chunks.back());
        return;
      }
      // The last chunk whose first entry lies at or below x (else the first chunk).
      auto it = std::upper_bound(chunks.begin(), chunks.end(), x.lo, [](Offset lo, const Chunk& c) { return lo < c.e.front().lo; });
      const auto at = std::max<std::ptrdiff_t>(0, it - chunks.begin() - 1);
      Chunk& c = chunks[static_cast<std::size_t>(at)];
      c.e.insert(std::upper_bound(c.e.begin(), c.e.end(), x, by_lo), x);
      if (c.e.size() <= 2 * kChunk) {
        summarize(c);
        return;
      }
      Chunk tail{std::vector<Entry>(c.e.begin() + kChunk, c.e.end()), {}};
      c.e.resize(kChunk);
      summarize(c);
      summarize(tail);
      chunks.insert(chunks.begin() + at + 1, std::move(tail));
    }
  };
  // A position in a list: the next entry and the end of its chunk.
  struct Cursor {
    const Chunk *c, *ce;  // the chunk, the list's end
    const Entry *p, *pe;  // the entry, the chunk's end
    bool done() const { return c == ce; }
    bool at_chunk_start() const { return p == c->e.data(); }
    void next_chunk() {
      if (++c != ce) p = c->e.data(), pe = p + c->e.size();
    }
    void next() {
      if (++p == pe) next_chunk();
    }
  };
  // The first entry of l whose address is at least lo.
  static Cursor seek(const List& l, Offset lo) {
    const Chunk* ce = l.chunks.data() + l.chunks.size();
    const Chunk* c = std::lower_bound(l.chunks.data(), ce, lo, [](const Chunk& k, Offset v) { return k.e.back().lo < v; });
    if (c == ce) return {ce, ce, nullptr, nullptr};
    const Entry* p = std::lower_bound(c->e.data(), c->e.data() + c->e.size(), Entry{0, 0, lo, 0}, by_lo);
    return {c, ce, p, c->e.data() + c->e.size()};
  }

 public:
  explicit TimeIndex(const Problem& p) {
    if (p.buffers.empty()) return;
    t0_ = p.buffers[0].start;
    Time t1 = p.buffers[0].end;
    double total = 0;
    for (const Buffer& b : p.buffers) {
      t0_ = std::min(t0_, b.start);
      t1 = std::max(t1, b.end);
      total += static_cast<double>(b.end - b.start);
    }
    // Bucket width ~ the mean lifetime keeps both per-bucket lists and buckets per buffer small.
    width_ = std::max<Time>(1, static_cast<Time>(total / static_cast<double>(p.buffers.size())));
    // Sparse time axes (short lifetimes far apart) would need a bucket per tick: at most ~4n buckets.
    width_ = std::max<Time>(width_, (t1 - t0_) / (4 * static_cast<Time>(p.buffers.size())) + 1);
    const auto nb = static_cast<std::size_t>((t1 - t0_) / width_ + 1);
    starts_.resize(nb);
    conts_.resize(nb);
    widest_.assign(nb, 0);
    // Floors are kept per slice of a bucket, at most ~4n slices: more entries cover a short
    // time range whole, so its floor is higher and a query skips more of the entries below it.
    // Measured, one whole sweep: XLA 100k 3.8 -> 2.2 s, 50k 1.16 -> 0.6-0.8 s with 256 slices per
    // bucket (16: 3.3 and 0.86 s; 1,024: 2.9 and 0.88 s, the slice loops start to cost).
    slice_ = std::max<Time>({1, width_ / kSlicesPerBucket, (t1 - t0_) / (4 * static_cast<Time>(p.buffers.size())) + 1});
    floor_.assign(static_cast<std::size_t>((t1 - t0_) / slice_ + 1), 0);
    floor_block_.assign(floor_.size() / kFloorBlock + 1, 0);
  }
  // Lists stay sorted by address so a query merges sorted runs instead of sorting. Each slice
  // of time also keeps its floor: [0, floor) is covered by entries live over the slice's whole
  // range, so no buffer live in the slice can go below it (queries start there).
  void add(const Buffer& b, Offset off) {
    Time a = (b.start - t0_) / width_, z = (b.end - 1 - t0_) / width_;
    Entry e{b.start, b.end, off, off + b.size};
    for (Time k = a; k <= z; ++k) {
      (k == a ? starts_[k] : conts_[k]).insert(e);
      widest_[k] = std::max(widest_[k], e.hi - e.lo);
    }
    // Only the slices e covers whole (it is a floor entry there), and only those whose floor
    // reaches e: a scan that passes whole blocks of lower floors, as long-lived entries span
    // thousands of slices.
    for (Time j = (b.start - t0_ + slice_ - 1) / slice_, jz = (b.end - t0_) / slice_ - 1; j <= jz; ++j) {
      if (j % kFloorBlock == 0 && floor_block_[j / kFloorBlock] < e.lo) {  // no floor of the block reaches e
        j += kFloorBlock - 1;
        continue;
      }
      if (e.lo > floor_[static_cast<std::size_t>(j)]) continue;
      // Raise the floor through the covering entries that now touch it (entries starting below
      // floor - widest end below the old floor). They are live at the slice's start, so they
      // sit in the lists of the bucket holding it; the two lists in turn until neither raises it.
      const Time k = j * slice_ / width_;
      Offset& fl = floor_[j];
      for (Offset before = -1; before != fl;) {
        before = fl;
        for (const List* list : {&starts_[k], &conts_[k]})
          for (Cursor c = seek(*list, fl - widest_[k]); !c.done() && c.p->lo <= fl; c.next())
            if (covers(*c.p, j)) fl = std::max(fl, c.p->hi);
      }
      floor_block_[j / kFloorBlock] = std::max(floor_block_[j / kFloorBlock], fl);
    }
  }
  // Appends the overlapping spans sorted by start address. Each list gives a sorted run; runs
  // are merged pairwise in rounds (O(m log runs)): merging them one after another was
  // quadratic in the buckets a long lifetime spans (40 % of the sweep's time on XLA traces).
  void overlaps(const Buffer& b, std::vector<Span>& out) const {
    Time a = (b.start - t0_) / width_, z = (b.end - 1 - t0_) / width_;
    const std::size_t base = out.size();
    runs_.clear();
    runs_.push_back(base);
    auto take = [&](const List& list) {
      for (const Chunk& c : list.chunks)
        for (const Entry& e : c.e)
          if (e.s < b.end && b.start < e.e && e.hi > e.lo) out.push_back({e.lo, e.hi});
      if (out.size() > runs_.back()) runs_.push_back(out.size());
    };
    take(conts_[a]);
    for (Time k = a; k <= z; ++k) take(starts_[k]);
    auto by_span_lo = [](const Span& x, const Span& y) { return x.lo < y.lo; };
    while (runs_.size() > 2) {  // runs_ holds run boundaries: [runs_[i], runs_[i+1])
      scratch_.resize(out.size() - base);
      next_.clear();
      next_.push_back(base);
      for (std::size_t i = 0; i + 1 < runs_.size(); i += 2) {
        const std::size_t lo = runs_[i], mid = runs_[i + 1], hi = i + 2 < runs_.size() ? runs_[i + 2] : mid;
        std::merge(out.begin() + static_cast<std::ptrdiff_t>(lo), out.begin() + static_cast<std::ptrdiff_t>(mid),
                   out.begin() + static_cast<std::ptrdiff_t>(mid), out.begin() + static_cast<std::ptrdiff_t>(hi),
                   scratch_.begin() + static_cast<std::ptrdiff_t>(lo - base), by_span_lo);
        next_.push_back(hi);
      }
      std::copy(scratch_.begin(), scratch_.end(), out.begin() + static_cast<std::ptrdiff_t>(base));
      runs_.swap(next_);
    }
  }
  // Lowest aligned offset where [o, o + size) avoids every span overlapping b's lifetime: the
  // lists are merged lazily through a heap, lowest address first, and the walk stops at the
  // first gap that holds the buffer (about half the spans are above it), without copying.
  // The same offsets as a first fit over overlaps() (AllocLimits.SweepLowestFitEqualsFirstFit).
  // `limit`: the fit must end at or below it; the walk stops (returning an offset past it) as
  // soon as none can, so a buffer that a capacity spills costs no walk to the top of its stack
  // (measurements: docs/log/alloc-code-notes-log.md).
  Offset lowest_fit(const Buffer& b, Size size, Size align, bool* on_top = nullptr, Offset limit = kUnbounded) const {
    const Time a = (b.start - t0_) / width_, z = (b.end - 1 - t0_) / width_;
    auto counts = [&](const Entry& x) { return x.s < b.end && b.start < x.e && x.hi > x.lo; };
    Offset cur = 0;  // every address below a slice's floor is taken at some instant of b's
    for (Time j = (b.start - t0_) / slice_, jz = (b.end - 1 - t0_) / slice_; j <= jz; ++j) {
      if (j % kFloorBlock == 0 && j + kFloorBlock - 1 <= jz) {  // a whole block: its highest floor
        cur = std::max(cur, floor_block_[j / kFloorBlock]);
        j += kFloorBlock - 1;
      } else {
        cur = std::max(cur, floor_[j]);
      }
    }
    heap_.clear();
    if (on_top) *on_top = false;
    if (align_up(cur, align) > limit - size) return align_up(cur, align);
    // A cursor moves to the next entry that is live with b and ends above cur; entries ending
    // at or below cur cannot move it (cur only grows). A whole chunk is passed at once when it
    // ends at or below cur (on stretched SOMAS traces two thirds of the entries the walk took
    // were such, small buffers nested below a large one), or when its entries all live with b,
    // its first one already blocks b and no gap in its address union holds b: then every offset
    // up to its top is taken. (The walk took 1,000-5,000 entries per query on the XLA and
    // stretched SOMAS traces at 100k, most of them a dense stack passed this way.)
    auto skip_chunk = [&](Cursor& c) {
      if (!c.at_chunk_start()) return false;
      const Summary& k = c.c->sum;
      if (k.top > cur) {
        if (!(k.gap < size && k.lo < align_up(cur, align) + size && k.min_end > b.start && k.max_start < b.end)) return false;
        cur = k.top;
      }
      c.next_chunk();
      return true;
    };
    auto advance = [&](Cursor& c) {
      while (!c.done()) {
        if (skip_chunk(c)) continue;
        if (c.p->hi > cur && counts(*c.p)) return;
        c.next();
      }
    };
    auto push = [&](const List& l, Time k) {
      // Entries starting below cur - widest end below cur: they cannot move it.
      Cursor c = seek(l, cur - widest_[k]);
      advance(c);
      if (!c.done()) heap_.push_back(c);
    };
    push(conts_[a], a);
    for (Time k = a; k <= z; ++k) push(starts_[k], k);
    auto later = [](const Cursor& x, const Cursor& y) { return x.p->lo > y.p->lo; };
    std::make_heap(heap_.begin(), heap_.end(), later);
    while (!heap_.empty()) {
      const Entry& low = *heap_.front().p;
      if (align_up(cur, align) + size <= low.lo) break;
      std::pop_heap(heap_.begin(), heap_.end(), later);
      Cursor& c = heap_.back();
      if (!skip_chunk(c)) {
        cur = std::max(cur, c.p->hi);
        c.next();
      }
      if (align_up(cur, align) > limit - size) return align_up(cur, align);  // no fit below the limit
      advance(c);
      if (c.done()) heap_.pop_back();
      else std::push_heap(heap_.begin(), heap_.end(), later);
    }
    if (on_top) *on_top = heap_.empty();
    return align_up(cur, align);
  }

 private:
  static void summarize(Chunk& c) {
    Summary k;
    bool any = false;
    for (const Entry& x : c.e) {
      if (x.hi <= x.lo) continue;
      if (!any) k.lo = x.lo, any = true;
      else k.gap = std::max(k.gap, x.lo - k.top);
      k.top = std::max(k.top, x.hi);
      k.min_end = std::min(k.min_end, x.e);
      k.max_start = std::max(k.max_start, x.s);
    }
    c.sum = k;
  }
  // A chunk of 2 * kChunk + 1 entries is split in two. One whole sweep on five instances: kChunk
  // 16 was 5-16 % slower on every one, 4 was 0-10 % slower on four and 6 % faster on one.
  static constexpr std::size_t kChunk = 8;
  static bool by_lo(const Entry& x, const Entry& y) { return x.lo < y.lo; }
  // Entry x is live over slice j's whole time range.
  bool covers(const Entry& x, Time j) const { return x.s <= t0_ + j * slice_ && x.e >= t0_ + (j + 1) * slice_; }
  static constexpr Time kSlicesPerBucket = 256;
  Time slice_ = 1;             // floor slice width (ticks)
  std::vector<Offset> floor_;  // per slice: [0, floor) is taken over the slice's whole range
  // Per block of kFloorBlock slices, the highest floor in it. Why: scanning the floors of every
  // slice a buffer covers, once to start its query and once after its insertion, took a quarter
  // of the multi-start's time on the synthetic XLA 50k trace (long lifetimes cover thousands).
  static constexpr Time kFloorBlock = 64;
  std::vector<Offset> floor_block_;
  std::vector<Size> widest_;   // per bucket: the largest entry size
  mutable std::vector<Cursor> heap_;  // lowest_fit scratch
  Time t0_ = 0, width_ = 1;
  std::vector<List> starts_;  // per bucket: entries starting in it
  std::vector<List> conts_;   // per bucket: entries from earlier buckets
  mutable std::vector<std::size_t> runs_, next_;  // query scratch: run boundaries
  mutable std::vector<Span> scratch_;             // query scratch: merge target
};

}  // namespace

// Size-descending order, longer lifetimes first, then index (greedy-by-size and sweep).
std::vector<int> by_size_order(const Problem& p) {
  const auto& bs = p.buffers;
  std::vector<int> order(bs.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    if (bs[a].size != bs[b].size) return bs[a].size > bs[b].size;
    if (bs[a].end - bs[a].start != bs[b].end - bs[b].start) return bs[a].end - bs[a].start > bs[b].end - bs[b].start;
    return a < b;
  });
  return order;
}

Placement place_greedy(const Problem& p, Size capacity, const Deadline* dl) {
  const auto& bs = p.buffers;
  const int n = static_cast<int>(bs.size());
  Placement pl = empty_placement(p);
  std::vector<int> fixed = place_fixed(p, pl);
  // Events: at each time, deallocations first, then allocations in input order.
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return bs[a].start < bs[b].start; });
  std::vector<int> in_use;  // placed, live buffers
  std::vector<char> handed_off(n, 0);
  std::size_t step = 0;
  for (int i : order) {
    if (out_of_time(dl, ++step)) {
      spill_rest(p, pl);
      break;
    }
    const Buffer& b = bs[i];
    if (b.fixed_offset != kNoFixedOffset) {
      if (!placeable(p, pl, i)) continue;
      in_use.push_back(i);
      continue;
    }
    in_use.erase(std::remove_if(in_use.begin(), in_use.end(), [&](int j) { return bs[j].end <= b.start; }), in_use.end());
    if (!placeable(p, pl, i)) continue;
    // 1. in-place reuse of a live parent's slot
    bool done = false;
    for (int q : b.in_place_parents) {
      if (pl.offsets[q] == kSpilled || handed_off[q] || bs[q].end <= b.start || b.size > bs[q].size) continue;
      if (std::find(in_use.begin(), in_use.end(), q) == in_use.end()) continue;
      pl.offsets[i] = pl.offsets[q];
      handed_off[q] = 1;
      in_use.push_back(i);
      done = true;
      break;
    }
    if (done) continue;
    // 2. free-block search: address 0, above the high-water mark, then the first gap.
    std::vector<Span> used;
    for (int j : in_use) used.push_back({pl.offsets[j], pl.offsets[j] + bs[j].size});
    for (int j : fixed)
      if (j != i && lifetimes_overlap(b, bs[j])) used.push_back({pl.offsets[j], pl.offsets[j] + bs[j].size});
    merge_spans(used);
    Offset at = -1;
    if (used.empty() || used.front().lo >= b.size) {
      at = 0;
    } else {
      Offset top = align_up(used.back().hi, b.alignment);
      if (top + b.size <= capacity) {
        at = top;
      } else {
        for (std::size_t k = 0; k + 1 < used.size(); ++k) {
          Offset o = align_up(used[k].hi, b.alignment);
          if (o + b.size <= used[k + 1].lo) { at = o; break; }
        }
      }
    }
    if (settle(pl, i, at, b.size, capacity)) in_use.push_back(i);
  }
  return pl;
}

std::vector<int> first_fit_order(const Problem& p) {
  const auto& bs = p.buffers;
  const int n = static_cast<int>(bs.size());
  std::vector<char> is_parent(n, 0);
  for (const Buffer& b : bs)
    for (int q : b.in_place_parents) is_parent[q] = 1;
  std::vector<double> key(n);
  for (int i = 0; i < n; ++i) {
    const Buffer& b = bs[i];
    double span = static_cast<double>(b.end - b.start);
    double uses = b.reads + (b.produced_on_chip ? 1 : 0);
    key[i] = (span - 0.25 * !b.in_place_parents.empty() - 0.25 * is_parent[i]) / (uses + 0.5 * b.produced_on_chip);
  }
  std::vector<int> sorted(n);
  std::iota(sorted.begin(), sorted.end(), 0);
  std::stable_sort(sorted.begin(), sorted.end(), [&](int a, int b) {
    return std::make_pair(key[a], bs[a].end - bs[a].start) < std::make_pair(key[b], bs[b].end - bs[b].start);
  });
  if (!has_in_place(p)) return sorted;  // (what the topological sort below returns then)
  // Kahn's algorithm over in-place edges (parent before child), ties by position in `sorted`.
  std::vector<int> pos(n), indeg(n, 0);
  for (int k = 0; k < n; ++k) pos[sorted[k]] = k;
  std::vector<std::vector<int>> kids(n);
  for (int c = 0; c < n; ++c)
    for (int q : bs[c].in_place_parents) {
      kids[q].push_back(c);
      ++indeg[c];
    }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i)
    if (indeg[i] == 0) ready.push(pos[i]);
  std::vector<int> out;
  out.reserve(n);
  while (!ready.empty()) {
    int v = sorted[ready.top()];
    ready.pop();
    out.push_back(v);
    for (int c : kids[v])
      if (--indeg[c] == 0) ready.push(pos[c]);
  }
  return out;
}

Placement place_first_fit(const Problem& p, Size capacity, bool best_fit, const Deadline* dl) {
  return place_first_fit_in_order(p, capacity, first_fit_order(p), best_fit, dl);
}

Placement place_first_fit_in_order(const Problem& p, Size capacity, const std::vector<int>& order, bool best_fit,
                                   const Deadline* dl) {
  const auto& bs = p.buffers;
  Placement pl = empty_placement(p);
  std::vector<int> placed = place_fixed(p, pl);
  std::vector<int> taken(bs.size(), 0);  // parent slot already handed to a child
  std::vector<Span> spans, gaps;         // per buffer (kept for their memory)
  std::size_t step = 0;
  for (int i : order) {
    if (out_of_time(dl, ++step)) {
      spill_rest(p, pl);
      break;
    }
    const Buffer& b = bs[i];
    if (b.fixed_offset != kNoFixedOffset || !placeable(p, pl, i)) continue;
    auto spans_except = [&](int skip) -> const std::vector<Span>& {
      spans.clear();
      for (int j : placed)
        if (j != skip && lifetimes_overlap(b, bs[j]) && bs[j].size > 0) spans.push_back({pl.offsets[j], pl.offsets[j] + bs[j].size});
      merge_spans(spans);
      return spans;
    };
    Offset at = -1;
    for (int q : b.in_place_parents) {  // try the parent's exact address first
      if (pl.offsets[q] == kSpilled || taken[q] || b.size > bs[q].size || bs[q].end != b.start + 1) continue;
      Offset o = pl.offsets[q];
      if (o % b.alignment != 0 || o + b.size > capacity) continue;
      bool free = true;
      for (const Span& s : spans_except(q))
        if (s.lo < o + b.size && o < s.hi) { free = false; break; }
      if (free) { at = o; taken[q] = 1; break; }
    }
    if (at < 0) {
      free_gaps(spans_except(-1), capacity, gaps);
      Offset best_waste = -1;
      for (const Span& g : gaps) {
        Offset o = align_up(g.lo, b.alignment);
        if (o + b.size > g.hi) continue;
        Offset waste = g.hi - o - b.size;
        if (!best_fit) { at = o; break; }
        if (best_waste < 0 || waste < best_waste) { best_waste = waste; at = o; }
      }
    }
    if (settle(pl, i, at, b.size, capacity)) placed.push_back(i);
  }
  return pl;
}

// Size-descending placement through the bucketed time index. best_fit: the tightest gap between
// placed co-live spans, else on top (TFLite greedy-by-size); otherwise the lowest fit (sweep).
Placement place_sweep_in_order(const Problem& p, Size capacity, const std::vector<int>& order, bool best_fit,
                               const Deadline* dl, bool stop_at_spill, bool two_sided) {
  std::size_t k = 0;
  return place_sweep_in_order(
      p, capacity, [&](int& i) { return k < order.size() ? (i = order[k++], true) : false; }, best_fit, dl, stop_at_spill,
      two_sided);
}

Placement place_sweep_in_order(const Problem& p, Size capacity, const std::function<bool(int&)>& next, bool best_fit,
                               const Deadline* dl, bool stop_at_spill, bool two_sided) {
  const auto& bs = p.buffers;
  Placement pl = empty_placement(p);
  TimeIndex index(p);
  for (int i : place_fixed(p, pl)) index.add(bs[i], pl.offsets[i]);
  std::vector<Span> s;
  std::size_t step = 0;
  for (int i; next(i);) {
    if (out_of_time(dl, ++step)) {  // every 64: long-lived buffers late in an order cost ~1 ms each
      spill_rest(p, pl);
      break;
    }
    const Buffer& b = bs[i];
    if (b.fixed_offset != kNoFixedOffset || !placeable(p, pl, i)) continue;
    Offset at = -1;
    if (!best_fit) {
      bool on_top = false;
      at = index.lowest_fit(b, b.size, b.alignment, &on_top, capacity);
      if (at + b.size > capacity) at = -1;
      else if (two_sided && on_top && capacity < kUnbounded) at = (capacity - b.size) / b.alignment * b.alignment;
    } else {
      s.clear();
      index.overlaps(b, s);
      merge_sorted_spans(s);
      Offset best = -1, cur = 0;
      for (const Span& sp : s) {
        Offset o = align_up(cur, b.alignment);
        if (o + b.size <= sp.lo && (best < 0 || sp.lo - o - b.size < best)) { best = sp.lo - o - b.size; at = o; }
        cur = std::max(cur, sp.hi);
      }
      if (at < 0) at = align_up(cur, b.alignment);
    }
    if (settle(pl, i, at, b.size, capacity)) index.add(b, at);
    else if (stop_at_spill) break;
  }
  return pl;
}

Placement place_greedy_by_size(const Problem& p, Size capacity, const Deadline* dl) {
  return place_sweep_in_order(p, capacity, by_size_order(p), true, dl);
}

Placement place_sweep(const Problem& p, Size capacity, const Deadline* dl) {
  return place_sweep_in_order(p, capacity, by_size_order(p), false, dl);
}

Placement place_online(const Problem& p, Size capacity, const Deadline* dl) {
  const auto& bs = p.buffers;
  const int n = static_cast<int>(bs.size());
  Placement pl = empty_placement(p);
  for (const Buffer& b : bs)
    if (b.fixed_offset != kNoFixedOffset || !b.in_place_parents.empty()) return place_sweep(p, capacity, dl);
  // Free gaps below the top, by address (lo -> hi) and by length (best fit); no gap touches top.
  std::map<Offset, Offset> by_addr;
  std::set<std::pair<Size, Offset>> by_len;
  Offset top = 0;
  auto add_gap = [&](Offset lo, Offset hi) {
    if (hi <= lo) return;
    by_addr[lo] = hi;
    by_len.insert({hi - lo, lo});
  };
  auto drop_gap = [&](std::map<Offset, Offset>::iterator it) {
    by_len.erase({it->second - it->first, it->first});
    return by_addr.erase(it);
  };
  auto release = [&](Offset lo, Offset hi) {
    auto next = by_addr.lower_bound(lo);
    if (next != by_addr.end() && next->first == hi) {  // merge with the gap above
      hi = next->second;
      next = drop_gap(next);
    }
    if (next != by_addr.begin()) {
      auto prev = std::prev(next);
      if (prev->second == lo) {  // merge with the gap below
        lo = prev->first;
        drop_gap(prev);
      }
    }
    if (hi >= top) top = lo;
    else add_gap(lo, hi);
  };
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    if (bs[a].start != bs[b].start) return bs[a].start < bs[b].start;
    return bs[a].size > bs[b].size || (bs[a].size == bs[b].size && a < b);
  });
  using Live = std::pair<Time, int>;  // (end, buffer)
  std::priority_queue<Live, std::vector<Live>, std::greater<Live>> live;
  std::size_t step = 0;
  for (int i : order) {
    if (dl && (++step & 4095) == 0 && dl->expired()) {
      spill_rest(p, pl);
      break;
    }
    const Buffer& b = bs[i];
    while (!live.empty() && live.top().first <= b.start) {  // ends before starts (half-open lifetimes)
      const int j = live.top().second;
      live.pop();
      release(pl.offsets[j], pl.offsets[j] + bs[j].size);
    }
    if (!placeable(p, pl, i)) continue;
    if (b.size == 0) {
      pl.offsets[i] = 0;
      continue;
    }
    // Best fit: the shortest gap that holds the aligned buffer (a few candidates), else the top.
    Offset at = -1;
    int tries = 0;
    for (auto it = by_len.lower_bound({b.size, std::numeric_limits<Offset>::min()}); it != by_len.end() && tries < 8; ++it, ++tries) {
      const Offset lo = it->second, hi = lo + it->first, o = align_up(lo, b.alignment);
      if (o + b.size > hi) continue;
      drop_gap(by_addr.find(lo));
      add_gap(lo, o);
      add_gap(o + b.size, hi);
      at = o;
      break;
    }
    if (at < 0) {
      at = align_up(top, b.alignment);
      if (at + b.size > capacity) {
        settle(pl, i, -1, b.size, capacity);
        continue;
      }
      add_gap(top, at);
      top = at + b.size;
    } else if (at + b.size > capacity) {  // (a gap lies below the top, itself within capacity)
      settle(pl, i, -1, b.size, capacity);
      continue;
    }
    pl.offsets[i] = at;
    live.push({b.end, i});
  }
  return pl;
}

Placement place_in_order(const Problem& p, Size capacity, const std::vector<int>& order, const Deadline* dl) {
  return place_first_fit_in_order(p, capacity, order, false, dl);
}

int in_place_handoffs(const Problem& p, const Placement& pl) {
  int k = 0;
  for (std::size_t c = 0; c < p.buffers.size(); ++c)
    for (int q : p.buffers[c].in_place_parents)
      if (pl.offsets[c] != kSpilled && pl.offsets[c] == pl.offsets[q]) {
        ++k;
        break;
      }
  return k;
}

void keep_groups_whole(const Problem& p, Placement& pl) {
  const int n = static_cast<int>(p.buffers.size());
  std::vector<int> spilled(n, -1);  // group -> a spilled member
  for (int i = 0; i < n; ++i)
    if (p.buffers[i].group >= 0 && pl.offsets[i] == kSpilled && spilled[p.buffers[i].group] < 0) spilled[p.buffers[i].group] = i;
  for (int i = 0; i < n; ++i) {
    const int g = p.buffers[i].group;
    if (g < 0 || spilled[g] < 0 || pl.offsets[i] == kSpilled) continue;
    pl.offsets[i] = kSpilled;
    if (pl.spill_reasons.size() == pl.offsets.size())
      pl.spill_reasons[i] = "spilled with its paired group ('" + p.buffers[spilled[g]].id + "' did not fit within capacity " + std::to_string(p.capacity) + ")";
  }
}

Cost selection_lower_bound(const Problem& p) {
  const auto& bs = p.buffers;
  Cost forced = 0;
  std::vector<int> cand;
  for (int i = 0; i < static_cast<int>(bs.size()); ++i) {
    if (!bs[i].residency_reason.empty() || bs[i].size > p.capacity) forced += spill_cost(bs[i]);
    else cand.push_back(i);
  }
  // Per event time: the live load above capacity must be removed; the cheapest fractional removal
  // (by cost per byte) is a valid bound for that instant. Take the max over instants.
  // The load at every start, by a sweep over starts and ends (ends first at equal times).
  std::vector<std::pair<Time, Size>> ev;
  ev.reserve(cand.size() * 2);
  for (int i : cand) {
    ev.push_back({bs[i].start, bs[i].size});
    ev.push_back({bs[i].end, -bs[i].size});
  }
  std::sort(ev.begin(), ev.end());
  std::vector<std::pair<Size, Time>> excess;  // (load - capacity, start time), where positive
  Size load = 0;
  for (std::size_t k = 0; k < ev.size(); ++k) {
    load += ev[k].second;
    const bool last_at_t = k + 1 == ev.size() || ev[k + 1].first != ev[k].first;
    if (last_at_t && ev[k].second > 0 && load > p.capacity) excess.push_back({load - p.capacity, ev[k].first});
  }
  if (excess.empty()) return forced;
  std::vector<int> by_ratio = cand;
  std::sort(by_ratio.begin(), by_ratio.end(), [&](int a, int b) {
    // cost_a/size_a < cost_b/size_b, zero sizes last
    return static_cast<long double>(spill_cost(bs[a])) * bs[b].size < static_cast<long double>(spill_cost(bs[b])) * bs[a].size;
  });
  long double best = 0;
  // Every instant at the cheapest ratio of all (exact when every byte costs the same, as in CSV
  // instances), O(n log n); then the exact removal at the instants of largest excess, as many as
  // 50M buffer visits allow (all of them on small instances).
  long double min_ratio = -1;
  for (int i : by_ratio)
    if (bs[i].size > 0) {
      min_ratio = static_cast<long double>(spill_cost(bs[i])) / bs[i].size;
      break;
    }
  for (const auto& [x, t] : excess) best = std::max(best, min_ratio * x);
  std::sort(excess.begin(), excess.end(), std::greater<>());
  const std::size_t instants = std::max<std::size_t>(1, 50'000'000ULL / std::max<std::size_t>(1, by_ratio.size()));
  for (std::size_t k = 0; k < excess.size() && k < instants; ++k) {
    const Time t = excess[k].second;
    Size left = excess[k].first;
    long double c = 0;
    for (int i : by_ratio) {
      if (!(bs[i].start <= t && t < bs[i].end) || bs[i].size == 0) continue;
      Size take = std::min(left, bs[i].size);
      c += static_cast<long double>(spill_cost(bs[i])) * take / bs[i].size;
      left -= take;
      if (left == 0) break;
    }
    best = std::max(best, c);
  }
  return forced + static_cast<Cost>(std::ceil(best - 1e-9L));
}

}  // namespace sp::alloc
