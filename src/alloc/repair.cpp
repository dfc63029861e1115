// Height minimization for instances too large for the exact search: the multi-start (sweeps in
// lower-bound-guided orders, below), and for a fixed capacity iterated repair of the
// regions that reach above a target height (large neighbourhood search). The buffers around
// each region are taken out and placed again below the target by the indexed sweep, with every
// other buffer fixed where it is, in randomized size orders; the target moves towards the lower
// bound on success and back towards the incumbent on failure. Every committed step keeps the
// plan valid (the sweep never places over a fixed buffer), so the search is anytime.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <numeric>

#include "alloc/internal/heuristics.h"
#include "alloc/internal/repair.h"
#include "alloc/solver.h"
#include "core/rng.h"

namespace sp::alloc {
namespace {

struct Window {
  Time lo, hi;  // [lo, hi)
};

// Time clusters of the buffers whose top is above `goal` (merged overlapping lifetimes), cut
// into pieces at most `piece` ticks long so that each repair stays small.
std::vector<Window> hot_windows(const Problem& p, const Placement& pl, Size goal, Time piece) {
  std::vector<Window> w;
  for (std::size_t i = 0; i < p.buffers.size(); ++i)
    if (pl.offsets[i] != kSpilled && pl.offsets[i] + p.buffers[i].size > goal) w.push_back({p.buffers[i].start, p.buffers[i].end});
  std::sort(w.begin(), w.end(), [](const Window& a, const Window& b) { return a.lo < b.lo; });
  std::size_t k = 0;
  for (std::size_t r = 0; r < w.size(); ++r) {
    if (k > 0 && w[r].lo <= w[k - 1].hi) w[k - 1].hi = std::max(w[k - 1].hi, w[r].hi);
    else w[k++] = w[r];
  }
  w.resize(k);
  std::vector<Window> out;
  for (const Window& x : w)
    for (Time lo = x.lo; lo < x.hi; lo += piece) out.push_back({lo, std::min(x.hi, lo + piece)});
  return out;
}

}  // namespace

namespace {

// The distinct start and end times, sorted, and the load of each section [times[k], times[k+1]).
struct SectionLoads {
  std::vector<Time> times;
  std::vector<Size> load;
};
SectionLoads section_loads(const Problem& p) {
  const auto& bs = p.buffers;
  SectionLoads s;
  std::vector<Time>& times = s.times;
  times.reserve(2 * bs.size());
  for (const Buffer& b : bs) {
    times.push_back(b.start);
    times.push_back(b.end);
  }
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  const std::size_t m = times.size();
  auto at = [&](Time t) { return static_cast<std::size_t>(std::lower_bound(times.begin(), times.end(), t) - times.begin()); };
  std::vector<Size> delta(m + 1, 0);
  for (const Buffer& b : bs) {
    delta[at(b.start)] += b.size;
    delta[at(b.end)] -= b.size;
  }
  s.load.resize(m);
  Size cur = 0;
  for (std::size_t k = 0; k < m; ++k) s.load[k] = cur += delta[k];
  return s;
}

// Per buffer, the largest section load over its lifetime, from the section loads of `p`.
std::vector<Size> peak_over_sections(const Problem& p, const SectionLoads& sl) {
  const auto& bs = p.buffers;
  const std::size_t n = bs.size();
  const std::vector<Time>& times = sl.times;
  const std::size_t m = times.size();
  auto at = [&](Time t) { return static_cast<std::size_t>(std::lower_bound(times.begin(), times.end(), t) - times.begin()); };
  // Sparse table over the section loads for range maxima.
  std::vector<std::vector<Size>> table(1, sl.load);
  for (std::size_t j = 1; (std::size_t{1} << j) <= m; ++j) {
    const std::size_t half = std::size_t{1} << (j - 1);
    table.emplace_back(m - (std::size_t{1} << j) + 1);
    for (std::size_t k = 0; k + (std::size_t{1} << j) <= m; ++k) table[j][k] = std::max(table[j - 1][k], table[j - 1][k + half]);
  }
  std::vector<Size> out(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t a = at(bs[i].start), z = at(bs[i].end);  // sections [a, z)
    if (z <= a) continue;
    const int j = 63 - __builtin_clzll(z - a);
    out[i] = std::max(table[j][a], table[j][z - (std::size_t{1} << j)]);
  }
  return out;
}

}  // namespace

std::vector<Size> peak_load_over_lifetime(const Problem& p) { return peak_over_sections(p, section_loads(p)); }

namespace {

// Two-sided sweeps: buffers in start order, each at its lowest fit unless that lands on top of
// every buffer live with it; then it hangs from a target height instead. Why: on a chain (each
// buffer live with its predecessor and successor only) lowest fit in any order stacks neighbours
// ever higher, while alternating floor and ceiling meets the max load exactly. A failed target
// is raised halfway to the worker's best; a met one is lowered halfway to the last failure. The
// attempts stop when one fails before placing half of the buffers. Only on sparse instances (the
// solver's is_sparse): on dense families they fail early and hold worker 0's first round back.
// Measurements: docs/log/alloc-code-notes-log.md.
class TwoSided {
 public:
  TwoSided(const Problem& p, Size bound, bool enabled) : p_(p), failed_(bound - 1), active_(enabled) {
    if (!enabled) return;
    order_.resize(p.buffers.size());
    std::iota(order_.begin(), order_.end(), 0);
    const auto& bs = p.buffers;
    std::sort(order_.begin(), order_.end(), [&](int a, int b) {
      if (bs[a].start != bs[b].start) return bs[a].start < bs[b].start;
      return bs[a].size != bs[b].size ? bs[a].size > bs[b].size : a < b;
    });
  }
  bool active() const { return active_; }
  // One sweep at the next target: the bound first, then halfway between the highest failed
  // target and the lower of `best` (the worker's best height) and the last met target. Returns
  // the sweep (complete when the target was met); an empty plan when no target is left.
  Placement attempt(Size best, const Deadline& dl) {
    const Size hi = std::min(best, met_);
    const Size target = failed_ + (hi - 1 - failed_) / 2 + 1;
    if (!first_ && (target >= hi || hi - failed_ <= 1)) {
      active_ = false;
      return {};
    }
    Placement pl = place_sweep_in_order(p_, first_ ? failed_ + 1 : target, order_, false, &dl, true, true);
    const Size tried = first_ ? failed_ + 1 : target;
    first_ = false;
    if (dl.expired()) return pl;
    std::size_t placed = 0;
    for (std::size_t i = 0; i < pl.offsets.size(); ++i)
      placed += pl.offsets[i] != kSpilled || !p_.buffers[i].residency_reason.empty();
    if (all_placed(p_, pl)) {
      met_ = height(p_, pl);
    } else {
      failed_ = tried;
      if (2 * placed < pl.offsets.size()) active_ = false;  // far from fitting: not this instance's shape
    }
    return pl;
  }

 private:
  const Problem& p_;
  std::vector<int> order_;  // by start, larger first among equal starts
  Size failed_;             // highest target that failed (one below the bound at first)
  Size met_ = kUnbounded;   // height of the last complete two-sided plan
  bool first_ = true;       // the first attempt targets the bound
  bool active_;
};

// A classed order (classed_order in solver.h) whose classes are sorted one at a time, as a sweep
// reaches them. Why: the multi-start's rounds mostly stop after 5-20 % of their order, and the
// sort of the whole order took 17-27 % of a 10 s run on the synthetic XLA 50k trace.
class ClassedOrder {
 public:
  // What every order of one problem shares, computed once per search.
  struct Times {
    double reach_cap;  // depths beyond this count as equal
    Time first_start;  // the earliest start
    explicit Times(const Problem& p);
  };
  // log_key: the natural log of each buffer's key (-inf for a key <= 0).
  ClassedOrder(const Problem& p, const Times& times, const std::vector<double>& log_key, double ratio, double offset,
               std::optional<Time> pivot, double reach_ratio, bool larger_first);
  bool next(int& i);  // sets the next buffer; false at the end
  std::size_t drawn() const { return pos_; }  // buffers handed out so far

 private:
  // Each buffer's (class, tier, depth, start or distance, side) as three unsigned words that
  // compare in the same order as those fields.
  struct Item {
    uint64_t cls;    // classes in descending key order (kNoClass: key <= 0, last)
    uint64_t depth;  // deepest first at the pivot (the sign bit: not live at the pivot)
    uint64_t larger; // with larger_first the size complemented (larger first), else 0
    uint64_t at;     // start (from the earliest) or distance from the pivot, then the side
    int i;           // buffer
  };
  static constexpr uint64_t kNoClass = std::numeric_limits<uint64_t>::max();
  std::vector<Item> items_;  // in class order; sorted whole before sorted_
  std::size_t pos_ = 0;      // the next item
  std::size_t sorted_ = 0;   // items before this are in their final order
};

// Reaches beyond an eighth of the mean lifetime count as equal (those buffers then go by start).
// Why: one whole sweep of stretched somas_tiny_bert 100k took 0.68 s in start order and 1.38 s
// deepest first uncapped (far from the pivot the bottom of the stack is no longer contiguous, so
// the sweep's floors stay low and each query walks more entries), 0.75 s capped.
ClassedOrder::Times::Times(const Problem& p) : first_start(std::numeric_limits<Time>::max()) {
  double mean_life = 0;
  for (const Buffer& b : p.buffers) {
    mean_life += static_cast<double>(b.end - b.start) / static_cast<double>(p.buffers.size());
    first_start = std::min(first_start, b.start);
  }
  reach_cap = std::max(1.0, 0.125 * mean_life);
}

ClassedOrder::ClassedOrder(const Problem& p, const Times& times, const std::vector<double>& log_key, double ratio,
                           double offset, std::optional<Time> pivot, double reach_ratio, bool larger_first) {
  const auto& bs = p.buffers;
  const double scale = 1.0 / std::log(std::max(ratio, 1.0 + 1e-9));
  std::vector<double> cls(log_key.size());
  for (std::size_t i = 0; i < log_key.size(); ++i)
    cls[i] = std::isfinite(log_key[i]) ? std::floor(log_key[i] * scale + offset) : -1e300;
  // Rank within a class: the start time, or with a pivot (0, depth, start) for buffers live at it
  // and (1, distance, side) for the others, the side after the pivot first at equal distance.
  const double reach_cap = times.reach_cap;
  const Time first_start = times.first_start;
  // Class numbers are whole numbers (floors) or -1e300 for keys <= 0, which go last.
  double top_class = -1e300;
  for (double c : cls) top_class = std::max(top_class, c);
  const auto class_word = [&](double c) -> uint64_t {
    return c <= -1e299 ? kNoClass : static_cast<uint64_t>(top_class - c);
  };
  // A non-negative double's bits order like the double; complemented, larger depths come first.
  const auto depth_word = [](double d) -> uint64_t { return ~std::bit_cast<uint64_t>(d); };
  const uint64_t elsewhere = uint64_t{1} << 63;  // tier 1 after every tier-0 depth word (sign bit clear)
  std::vector<Item>& items = items_;
  items.resize(log_key.size());
  for (std::size_t i = 0; i < log_key.size(); ++i) {
    const Buffer& b = bs[i];
    Item& it = items[i];
    it.cls = class_word(cls[i]);
    it.i = static_cast<int>(i);
    it.larger = larger_first ? ~static_cast<uint64_t>(b.size) : 0;  // (sizes are >= 0)
    // Times lie in [-2^61, 2^61], so a start less the earliest start or a distance fits in 62 bits.
    if (!pivot) {
      it.depth = depth_word(0.0) & ~elsewhere;
      it.at = static_cast<uint64_t>(b.start - first_start) << 1;
    } else if (b.start <= *pivot && *pivot < b.end) {
      const double left = static_cast<double>(*pivot - b.start + 1), right = static_cast<double>(b.end - *pivot);
      const double depth = reach_ratio > 0 ? std::min({reach_ratio * left, right, reach_cap}) : 0.0;
      it.depth = depth_word(depth) & ~elsewhere;
      it.at = static_cast<uint64_t>(b.start - first_start) << 1;
    } else if (b.start > *pivot) {
      it.depth = elsewhere;
      it.at = static_cast<uint64_t>(b.start - *pivot) << 1;
    } else {
      it.depth = elsewhere;
      it.at = static_cast<uint64_t>(*pivot - b.end) << 1 | 1;
    }
  }
  // Classes in order by a counting sort (a whole number per class); each class is sorted when
  // next() reaches it.
  uint64_t classes = 0;  // finite class words are below this; keys <= 0 go to the bucket after
  for (const Item& it : items)
    if (it.cls != kNoClass) classes = std::max(classes, it.cls + 1);
  if (classes > 4 * items.size() + 64) {  // classes far apart (a ratio near 1): sort by class instead
    std::sort(items.begin(), items.end(), [](const Item& x, const Item& y) { return x.cls < y.cls; });
    return;
  }
  std::vector<std::size_t> first(classes + 2, 0);
  const auto bucket = [&](uint64_t c) { return c == kNoClass ? classes : c; };
  for (const Item& it : items) ++first[bucket(it.cls) + 1];
  for (std::size_t c = 1; c < first.size(); ++c) first[c] += first[c - 1];
  std::vector<Item> by_class(items.size());
  for (const Item& it : items) by_class[first[bucket(it.cls)]++] = it;
  items.swap(by_class);
}

bool ClassedOrder::next(int& i) {
  if (pos_ == items_.size()) return false;
  if (pos_ == sorted_) {  // the next class: sort it whole
    std::size_t end = pos_ + 1;
    while (end < items_.size() && items_[end].cls == items_[pos_].cls) ++end;
    std::sort(items_.begin() + static_cast<std::ptrdiff_t>(pos_), items_.begin() + static_cast<std::ptrdiff_t>(end),
              [](const Item& x, const Item& y) {
                if (x.depth != y.depth) return x.depth < y.depth;
                if (x.larger != y.larger) return x.larger < y.larger;
                if (x.at != y.at) return x.at < y.at;
                return x.i < y.i;
              });
    sorted_ = end;
  }
  i = items_[pos_++].i;
  return true;
}

}  // namespace

std::vector<int> classed_order(const Problem& p, const std::vector<double>& key, double ratio, double offset, std::optional<Time> pivot,
                               double reach_ratio, bool larger_first) {
  std::vector<double> log_key(key.size());
  for (std::size_t i = 0; i < key.size(); ++i)
    log_key[i] = key[i] > 0 ? std::log(key[i]) : -std::numeric_limits<double>::infinity();
  ClassedOrder lazy(p, ClassedOrder::Times(p), log_key, ratio, offset, pivot, reach_ratio, larger_first);
  std::vector<int> order;
  order.reserve(key.size());
  for (int i; lazy.next(i);) order.push_back(i);
  return order;
}

namespace {

// Larger first (the worker's rounds): the share of exploring rounds that order their classes
// larger first starts at kLargerFirstShare and moves from it by kLargerFirstGain times the
// relative difference of how far the two kinds of round get before their cut, within [0.05, 0.9].
constexpr double kLargerFirstShare = 0.25;
constexpr double kLargerFirstGain = 8.0;
// A compaction that costs at most this share of the search's budget counts as cheap.
constexpr double kCheapCompaction = 0.02;
// Compaction rounds stop for good after this many in a row that did not beat the worker's best.
constexpr int kCompactionRoundsLost = 6;

// What makes a multi-start round's order, its key noise aside; kept for the worker's best plan.
struct Recipe {
  double e = 8.0;             // exponent of (peak load over the lifetime / max load) in the key
  double beta = 0.0;          // exponent of the lifetime in the key
  double noise = 0.0;         // relative amplitude of the key's noise
  double ratio = 4.0;         // the factor between key classes
  double class_offset = 0.0;  // the shift of the class boundaries, in [0, 1)
  std::optional<Time> pivot;  // the tick the classes run outwards from (none: start order)
  double reach = 0.0;         // at the pivot, deepest first: min(reach x left reach, right reach)
  bool larger_first = false;  // within a class and depth, larger buffers before earlier ones
};

}  // namespace

namespace {

// What the rounds of one time direction share, computed once per search. Reversed: every
// lifetime [s, e) becomes [T - e, T - s) (T the last end); two buffers overlap in time in one
// direction exactly when they do in the other, so a plan of either is a plan of both.
struct Direction {
  const Problem& q;                     // the problem in this direction
  SectionLoads sections;                // (also the pivots of classed orders)
  std::vector<Size> peak;               // each buffer's peak load over its lifetime
  ClassedOrder::Times order_times;
  Size max_load = 0;                    // the max load (the same in both directions)
  std::vector<double> log_share;        // log(peak / max load)
  Time peak_time = 0;                   // the first section at the max load
  std::vector<std::size_t> near_peak;   // sections within 2 % of the max load, nearest first

  explicit Direction(const Problem& prob)
      : q(prob), sections(section_loads(q)), peak(peak_over_sections(q, sections)), order_times(q) {
    const int n = static_cast<int>(q.buffers.size());
    for (Size t : peak) max_load = std::max(max_load, t);
    const double lb = std::max(1.0, static_cast<double>(max_load));
    log_share.resize(n);
    for (int i = 0; i < n; ++i) log_share[i] = peak[i] > 0 ? std::log(static_cast<double>(peak[i]) / lb) : 0.0;
    for (std::size_t k = 0; k < sections.load.size(); ++k)
      if (sections.load[k] == max_load) {
        peak_time = sections.times[k];
        break;
      }
    // Pivot candidates: the sections within 0.1-2 % of the max load, nearest first (a round
    // takes a prefix of this list and a random pivot in it).
    const Size floor_load = max_load - static_cast<Size>(0.02 * static_cast<double>(max_load));
    for (std::size_t k = 0; k < sections.load.size(); ++k)
      if (sections.load[k] >= floor_load) near_peak.push_back(k);
    std::stable_sort(near_peak.begin(), near_peak.end(),
                     [&](std::size_t a, std::size_t b) { return sections.load[a] > sections.load[b]; });
  }
};

}  // namespace

Problem time_reversed(const Problem& p) {
  Problem r = p;
  Time last = 0;
  for (const Buffer& b : p.buffers) last = std::max(last, b.end);
  for (Buffer& b : r.buffers) {
    const Time s = b.start;
    b.start = last - b.end;
    b.end = last - s;
  }
  return r;
}

namespace {

// What the workers of one multi_start search share: the problem in both directions, the keys'
// factors and the search's schedule (read only).
struct MultiStartShared {
  const Problem& p;
  const Deadline& dl;
  uint64_t seed;
  int workers;
  bool two_sided;
  const std::vector<std::unique_ptr<Direction>>& dirs;
  Size max_load_bound;                 // a plan at this height is optimal: stop there
  const std::vector<double>& log_size;  // the logs of the key's factors, per buffer
  const std::vector<double>& log_life;
  double exploit_from;                 // exploit rounds start (time)
  int64_t worker_rounds;               // each worker's rounds, 0: by time
  double first_compact_at, compact_from;  // the compaction probe, the late compactions (time)
  int64_t compact_round;               // with a round budget: the round that compacts
  double search_s;                     // the search's budget, seconds
};

// The best plan of all workers; equal heights keep the lower worker's plan (a fixed rule, not
// whichever finished first). Plans at the bound end the search; of those the one of the
// earliest (round, worker) wins, and a worker stops only before a round that comes later in
// that order, so the plan returned does not depend on which worker was faster.
struct MultiStartBest {
  std::mutex mu;
  Placement plan;
  Size height = 0;
  int worker = -1;
  std::atomic<int64_t> bound_key{0};
  const std::function<void(Size)>* on_improvement = nullptr;
};

// One worker of multi_start: its rounds, its compactions, its share of the two-sided sweeps.
class MultiStartWorker {
 public:
  MultiStartWorker(const MultiStartShared& shared, MultiStartBest& best, int w)
      : s_(shared),
        best_(best),
        w_(w),
        dir_(*shared.dirs[static_cast<std::size_t>(w) % shared.dirs.size()]),
        wp_(dir_.q),
        // Each worker's stream from a hash of (seed, worker). Why not seed + golden x worker: the
        // generator steps its state by that golden constant, so worker 1's stream was worker 0's
        // one draw later, and after round 0 (one draw fewer on worker 1) both drew the same orders.
        rng_(splitmix64(splitmix64(shared.seed ^ 0x5eedULL) ^ static_cast<uint64_t>(w))),
        n_(static_cast<int>(shared.p.buffers.size())),
        log_key_(n_),
        cur_u_(n_),
        two_(wp_, shared.max_load_bound, shared.two_sided && w == 0) {}

  void run() {
    for (int round = 0; !s_.dl.expired() && (s_.worker_rounds == 0 || round < s_.worker_rounds); ++round) {
      const int64_t key_now = static_cast<int64_t>(round) * s_.workers + w_;  // (round, worker) order
      if (key_now > best_.bound_key.load()) break;
      if (compact_if_due(round, key_now)) break;
      // Worker 0 first tries a two-sided sweep at its current target (see TwoSided).
      if (two_.active() && my_best_ > s_.max_load_bound) {
        Placement cand = two_.attempt(compaction_pays_ == 1 ? round_best_ : my_best_, s_.dl);
        if (!cand.offsets.empty() && !s_.dl.expired() && all_placed(s_.p, cand)) {
          publish(cand, key_now, true);
          best_has_recipe_ = false;
          if (my_best_ <= s_.max_load_bound) break;
        }
        if (s_.dl.expired()) break;
      }
      one_round(round, key_now);
    }
  }

 private:
  // Publishes a finished plan: a round's (placed under the rounds' best height) or a compacted one.
  void publish(Placement& cand, int64_t key_now, bool from_round) {
    const Size h = height(s_.p, cand);
    my_best_ = std::min(my_best_, h);
    if (from_round) round_best_ = h, round_plan_ = cand;
    std::lock_guard<std::mutex> lock(best_.mu);
    const bool at_bound = h <= s_.max_load_bound;
    if (at_bound ? key_now < best_.bound_key.load()
                 : h < best_.height || (h == best_.height && best_.worker >= 0 && w_ < best_.worker)) {
      const bool lower = h < best_.height;
      best_.height = h;
      best_.worker = w_;
      best_.plan = std::move(cand);
      if (at_bound) best_.bound_key = key_now;
      if (lower && *best_.on_improvement) (*best_.on_improvement)(h);
    }
  }

  // Compaction: the best plan of the worker's rounds compacted by mirror, published when
  // lower. Worker 0 compacts at 15 % of the budget to learn whether it pays on this
  // instance (closes a quarter of the gap to the bound or more). Where it pays, every
  // worker compacts its rounds' new bests whenever the last compaction lowered its best
  // faster, per second, than its rounds have lowered theirs since, and its rounds stay cut
  // at their own best, not at the compacted one (which no order reaches: they would all be
  // cut). Elsewhere each worker compacts once at 85 % of the budget. With a round budget:
  // once, at 85 % of the worker's rounds (no decision may depend on the clock). Why: on
  // dumps with near-equal sizes (`layers`) the compaction is what reaches the bound; on the
  // XLA and stretched SOMAS families it closes little and costs sweeps
  // (docs/log/alloc-code-notes-log.md).
  // True when the search of this worker is over (the deadline, or a plan at the bound).
  bool compact_if_due(int round, int64_t key_now) {
    const double now = s_.dl.elapsed_seconds();
    const int pays = compaction_pays_;
    bool compact_now = false;
    if (round_plan_.offsets.empty() || my_best_ <= s_.max_load_bound || compacted_h_ == round_best_) {
      compact_now = false;  // nothing new to compact
    } else if (s_.worker_rounds > 0) {
      compact_now = !compacted_ && round >= s_.compact_round;
    } else if (pays == 1) {
      const double rounds_rate = static_cast<double>(rounds_from_h_ - round_best_) / std::max(1e-3, now - rounds_from_);
      compact_now = compact_rate_ < 0 || now >= s_.compact_from || compact_rate_ > rounds_rate;
    } else if (!compacted_) {
      compact_now = now >= s_.first_compact_at;  // the probe
    } else {
      compact_now = !compacted_late_ && now >= s_.compact_from;
    }
    if (!compact_now) return false;
    compacted_ = true;
    compacted_late_ = now >= s_.compact_from;
    const Size before = my_best_;
    Placement c = compact_by_mirror(wp_, round_plan_, s_.dl);
    if (height(s_.p, c) < my_best_) publish(c, key_now, false);
    const double after = s_.dl.elapsed_seconds();
    compact_rate_ = static_cast<double>(before - my_best_) / std::max(1e-3, after - now);
    rounds_from_ = after, rounds_from_h_ = round_best_, compacted_h_ = round_best_;
    if (pays < 0 && s_.worker_rounds == 0) {
      compaction_pays_ = 4 * (before - my_best_) >= before - s_.max_load_bound ? 1 : 0;
      compaction_rounds_ = after - now <= kCheapCompaction * s_.search_s;
    }
    return s_.dl.expired() || my_best_ <= s_.max_load_bound;
  }

  double bell() {  // about normal, deviation 0.58
    double g = -2.0;
    for (int k = 0; k < 4; ++k) g += rng_.uniform();
    return g;
  }

  // An exploring round's recipe.
  Recipe explore_recipe(int round) {
    Recipe r;
    // Lower-bound-guided orders: size x (peak load over the lifetime / max load)^e, so buffers
    // live at the peak go first among equals and the peak is packed before the slack regions.
    // e = 8 first, then log-uniform in [1, 32] with a little noise: no single e is best on
    // every family. From round 3 on, half the rounds draw e near the exponent of the
    // worker's best plan (log2 e +- 0.7), so the search keeps to what works on this instance
    // without tuning one in. Lifetime exponent beta (key x lifetime^beta): from round 2 on,
    // half the rounds draw it in [0, 0.3]. Why: on the XLA traces the plans' tops are small
    // buffers live across the peak, stacked over holes only shorter buffers could use; a
    // slight preference for long lifetimes puts them lower, while elsewhere beta = 0 stays
    // best, so the search adapts it as e. Measurements: docs/log/alloc-code-notes-log.md.
    r.e = round <= 1 ? 8.0 : std::exp2(5.0 * rng_.uniform());
    r.beta = round <= 1 || rng_.uniform() < 0.5 ? 0.0 : 0.3 * rng_.uniform();
    if (round >= 3 && rng_.uniform() < 0.5) {
      const double g = bell();
      r.e = std::clamp(best_recipe_.e * std::exp2(1.2 * g), 1.0, 64.0);
      r.beta = best_recipe_.beta == 0.0 ? 0.0 : std::clamp(best_recipe_.beta * std::exp2(g), 0.0, 0.5);
    }
    r.noise = round <= 1 ? 0.0 : 0.1 * rng_.uniform();
    // Classed orders: the keys grouped into classes a factor `ratio` apart, by start time
    // within a class. For buffers of one size, lowest fit in start order is interval-graph
    // colouring, which never needs more slots than the most that overlap; in key order the
    // copies of a size take their slots out of time order and leave gaps that only another
    // copy could fill. Every round is classed: plain key orders cost more rounds than they
    // found (docs/log/alloc-solver-log.md, round schedule).
    r.ratio = round <= 1 ? 4.0 : std::exp(std::log(3.0) + rng_.uniform() * std::log(5.0 / 3.0));
    r.class_offset = rng_.uniform();
    // Pivots: the classes run outwards from a pivot tick (worker 0's round 0: the first
    // max-load section; from round 1 on a random section whose load is within 0.1-2 % of
    // the max load; worker 1's round 0 keeps start order). Why: lowest fit in start order
    // settles the lanes of a class's copies by what came before, so at the peak some lanes
    // are empty (between two copies) under buffers that live across it; from the pivot
    // outwards the copies live there are stacked first. A random pivot, not the best of
    // drafts: rounds are the scarce resource.
    // Reach ratio: the buffers live at the pivot go deepest first (classed_order), so that
    // on both sides of it those still live keep the bottom of the stack. Which side weighs
    // more differs by family, so the ratio is drawn log-uniform in [1/4, 8] (rounds 0 and 1:
    // 1); exploit rounds move the best plan's. Measurements: docs/log/alloc-code-notes-log.md
    // and docs/log/alloc-solver-log.md ("Deepest first at the pivot").
    r.reach = round <= 1 ? 1.0 : std::exp2(-2.0 + 5.0 * rng_.uniform());
    if (round == 0 && w_ == 0) {
      r.pivot = dir_.peak_time;
    } else if (round >= 1 && !dir_.near_peak.empty()) {
      const double within = std::pow(10.0, -3.0 + 1.3 * rng_.uniform());
      const Size floor_now = s_.max_load_bound - static_cast<Size>(within * static_cast<double>(s_.max_load_bound));
      std::size_t m = 1;  // the candidates at or above floor_now lead near_peak
      while (m < dir_.near_peak.size() && dir_.sections.load[dir_.near_peak[m]] >= floor_now) ++m;
      r.pivot = dir_.sections.times[dir_.near_peak[static_cast<std::size_t>(rng_.uniform() * static_cast<double>(m))]];
    }
    // Larger first within a class (classed_order): from round 2 on, at first a quarter of
    // the rounds, then a share that follows how far such rounds get before their cut against
    // start-order rounds (moving averages of the share of buffers placed; kLargerFirstGain).
    // Why: where thousands of near-equal sizes cross the peak (`layers`), start order lets a
    // smaller copy open a lane that a larger one later cannot reuse; larger first, the larger
    // copies set the lanes. Elsewhere it breaks the interval-graph colouring of start order,
    // hence the share learnt per worker (measurements: docs/log/alloc-code-notes-log.md).
    if (round >= 2) {
      double share = kLargerFirstShare;
      if (tried_[0] >= 3 && tried_[1] >= 3)
        share = std::clamp(kLargerFirstShare + kLargerFirstGain * (placed_avg_[1] - placed_avg_[0]) /
                                                   std::max(1e-9, placed_avg_[0] + placed_avg_[1]),
                           0.05, 0.9);
      r.larger_first = rng_.uniform() < share;
    }
    return r;
  }

  // One round: its recipe (exploring or exploiting), its order, a sweep cut at this worker's best.
  void one_round(int round, int64_t key_now) {
    // Exploit rounds: in the second half of the budget, three rounds in four redraw the key
    // noise of the worker's best recipe (exponents, classes, pivot), with an amplitude of at
    // least 20 %, and move its reach ratio by a factor 2^(+-0.5) about. Why: orders made the
    // same way land close together, so the best of many draws says which recipe suits the
    // instance (exploration comes first). Not before round 8, so that a plan at the bound
    // found early does not depend on the clock (the switch is a time). Measurements:
    // docs/log/alloc-code-notes-log.md.
    const bool second_half =
        s_.worker_rounds > 0 ? round >= s_.worker_rounds / 2 : s_.dl.elapsed_seconds() >= s_.exploit_from;
    const bool exploit = best_has_recipe_ && round >= 8 && second_half && rng_.uniform() < 0.75;
    Recipe r;
    // Local rounds: half the exploit rounds keep the best plan's noise draws and redraw those
    // of 5 % of the buffers (and keep its reach), a step from that plan rather than a new
    // draw of its recipe (measurements: docs/log/alloc-code-notes-log.md).
    const bool local = exploit && !best_u_.empty() && rng_.uniform() < 0.5;
    if (exploit) {
      r = best_recipe_;
      r.noise = std::max(r.noise, 0.2);
      if (!local) r.reach *= std::exp2(0.86 * bell());
    } else {
      r = explore_recipe(round);
    }
    // The key's log, from the logs of its factors (computed once: pow took 6 % of a run).
    for (int i = 0; i < n_; ++i) {
      double u = rng_.uniform();  // drawn whatever the noise, so the stream stays aligned
      if (local && rng_.uniform() >= 0.05) u = best_u_[i];
      cur_u_[i] = u;
      log_key_[i] = s_.log_size[i] + r.e * dir_.log_share[i] + (r.beta == 0.0 ? 0.0 : r.beta * s_.log_life[i]) +
                    (r.noise == 0.0 ? 0.0 : std::log1p(r.noise * (u - 0.5)));
    }
    ClassedOrder order(wp_, dir_.order_times, log_key_, r.ratio, r.class_offset, r.pivot, r.reach, r.larger_first);
    // The round ends at the first buffer that would reach this worker's best height: heights
    // only grow as buffers are added, so it could not beat it. (Its own best, not the shared
    // one, so that a worker's rounds do not depend on how fast the others are.) Measured on
    // XLA 50k: rounds stop after 5-20 % of their order, and the height is set there anyway
    // (a whole sweep's top is within 0.001 % of its final value after 35 % of the order).
    const Size cut = compaction_pays_ == 1 ? round_best_ : my_best_;
    // Compaction rounds: where the probe's compaction was cheap (kCheapCompaction), every
    // other round runs to its end unless it rises 1 % above the bound, and is compacted
    // (compact_by_mirror). Why: on `layers` the best plans are often rigid while ordinary
    // ones are not, and compacted they can end lower (docs/log/alloc-code-notes-log.md).
    const bool compaction_round = compaction_rounds_ && round % 2 == 1;
    const Size sweep_cut = compaction_round ? std::max(cut, s_.max_load_bound + s_.max_load_bound / 100) : cut;
    Placement cand = place_sweep_in_order(wp_, sweep_cut - 1, [&](int& i) { return order.next(i); }, false, &s_.dl, true);
    if (!exploit && !compaction_round && round >= 2 && !s_.dl.expired()) {
      // (The order hands out one buffer past the last placed when the cut stops the sweep.)
      double& avg = placed_avg_[r.larger_first];
      const double share_placed = static_cast<double>(order.drawn()) / std::max(1, n_);
      avg = tried_[r.larger_first]++ == 0 ? share_placed : 0.95 * avg + 0.05 * share_placed;
    }
    if (!all_placed(s_.p, cand)) return;  // cut by the deadline, or it cannot beat this worker's best
    Placement compacted;
    if (compaction_round) compacted = compact_by_mirror(wp_, cand, s_.dl);
    const Size h = height(s_.p, cand);
    const bool round_wins = h < cut;
    const bool compaction_wins = compaction_round && height(s_.p, compacted) < std::min(h, my_best_);
    if (compaction_round) {
      compactions_lost_ = compaction_wins ? 0 : compactions_lost_ + 1;
      if (compactions_lost_ >= kCompactionRoundsLost) compaction_rounds_ = false;
    }
    if (!round_wins && !compaction_wins) return;
    best_recipe_ = r, best_has_recipe_ = true;
    best_u_ = cur_u_;
    if (round_wins) publish(cand, key_now, true);
    if (compaction_wins) publish(compacted, key_now, false);
  }

  const MultiStartShared& s_;
  MultiStartBest& best_;
  const int w_;
  const Direction& dir_;
  const Problem& wp_;  // this worker's direction (its plans are plans of p too)
  Rng rng_;
  const int n_;
  std::vector<double> log_key_;
  std::vector<double> cur_u_, best_u_;  // the key noise draws of this round, of the best plan
  Size my_best_ = kUnbounded;     // this worker's best height (its rounds' or a compaction's)
  Size round_best_ = kUnbounded;  // the best height of its rounds: they are cut there
  Placement round_plan_;          // the plan of round_best (compacted when it pays, below)
  bool compacted_ = false;        // a compaction has run
  bool compacted_late_ = false;   // one has run from 85 % of the budget on
  Size compacted_h_ = -1;         // the round best last compacted
  double compact_rate_ = -1.0;    // bytes a second the last compaction took off the worker's best (-1: none yet)
  double rounds_from_ = 0.0;      // when the last compaction ended
  Size rounds_from_h_ = 0;        // the rounds' best then
  int compaction_pays_ = -1;      // this worker's probe (above): -1 until it has run
  bool compaction_rounds_ = false;  // the probe was cheap: every other round is compacted (below)
  int compactions_lost_ = 0;        // compaction rounds in a row that did not beat the worker's best
  Recipe best_recipe_;              // the recipe of this worker's best plan
  int64_t tried_[2] = {0, 0};       // exploring rounds from round 2 on, by larger_first
  double placed_avg_[2] = {0, 0};   // their moving average of the share of buffers placed before the cut
  bool best_has_recipe_ = false;    // (false while that plan is a two-sided one, or none)
  TwoSided two_;
};

}  // namespace

Placement multi_start(const Problem& p, const Placement& incumbent, const Deadline& dl, uint64_t seed,
                      const std::function<void(Size)>& on_improvement, int threads, bool two_sided, int64_t rounds) {
  const auto& bs = p.buffers;
  const int n = static_cast<int>(bs.size());
  if (dl.expired()) return incumbent;  // (the peak table below costs a sort and O(n log n) memory)
  const int workers = std::clamp(threads, 1, 256);
  // Odd workers search the time-reversed problem. Why: lowest fit in time order places a buffer
  // on what is live at its start, so the buffers that live to the end (weight gradients of a
  // training step, started one after another) sit on what the ones below leave and seal holes
  // under them; reversed, they are the ones that start first and stack at the bottom
  // (measurements: docs/log/alloc-code-notes-log.md).
  // (Not with in-place hand-offs: a child starts on its parent's last tick, which reversed time
  // turns into a different rule.) Forwards the search reads `p` itself; only the reversed copy is made.
  const Problem reversed = workers >= 2 && !has_in_place(p) ? time_reversed(p) : Problem{};
  std::vector<std::unique_ptr<Direction>> dirs;
  dirs.push_back(std::make_unique<Direction>(p));
  if (!reversed.buffers.empty()) dirs.push_back(std::make_unique<Direction>(reversed));
  const Size max_load_bound = dirs[0]->max_load;  // a plan at this height is optimal: stop there
  // The logs of the key's factors (see the worker's rounds): size, peak load over the lifetime /
  // max load, lifetime. A buffer of size 0 gets no class (-inf), as a key of 0 did.
  std::vector<double> log_size(n), log_life(n);
  for (int i = 0; i < n; ++i) {
    const double size = static_cast<double>(bs[i].size);
    log_size[i] = size > 0 ? std::log(size) : -std::numeric_limits<double>::infinity();
    log_life[i] = std::log(static_cast<double>(bs[i].end - bs[i].start));
  }

  MultiStartBest best;
  best.plan = incumbent;
  best.height = height(p, best.plan);
  best.bound_key = best.height <= max_load_bound ? -1 : std::numeric_limits<int64_t>::max();
  best.on_improvement = &on_improvement;
  // Exploit rounds (below) start halfway through the budget: the time limit's, or with a round
  // budget each worker's own rounds (so that no decision of a round depends on the clock).
  const double exploit_from = dl.elapsed_seconds() + 0.5 * dl.remaining_seconds();
  const int64_t worker_rounds = rounds > 0 ? (rounds + workers - 1) / workers : 0;  // 0: by time
  // Compactions (below): each worker probes at 15 % of the budget whether compacting pays in its
  // direction (1: its compaction closed at least a quarter of its gap to the bound; 0: not).
  const double first_compact_at = dl.elapsed_seconds() + 0.15 * dl.remaining_seconds();
  const double compact_from = dl.elapsed_seconds() + 0.85 * dl.remaining_seconds();
  const int64_t compact_round = worker_rounds * 85 / 100;
  const double search_s = dl.remaining_seconds();
  const MultiStartShared shared{p, dl, seed, workers, two_sided, dirs, max_load_bound, log_size, log_life,
                                exploit_from, worker_rounds, first_compact_at, compact_from, compact_round, search_s};
  run_workers(workers, [&](int w) { MultiStartWorker(shared, best, w).run(); });
  return best.plan;
}

Placement compact_by_mirror(const Problem& p, const Placement& plan, const Deadline& dl) {
  const auto& bs = p.buffers;
  const int n = static_cast<int>(bs.size());
  Placement cur = plan;
  Size h = height(p, cur);
  std::vector<int> order(n);
  std::vector<Offset> mirrored(n);
  for (int idle = 0; idle < 2 && !dl.expired();) {
    for (int i = 0; i < n; ++i) mirrored[i] = h - cur.offsets[i] - bs[i].size;
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(),
              [&](int a, int b) { return mirrored[a] != mirrored[b] ? mirrored[a] < mirrored[b] : a < b; });
    // Under a capacity of h: a pass cut by the deadline, or one that would rise (an aligned
    // buffer may not fit at or below its mirrored offset), stops incomplete and is dropped.
    Placement next = place_sweep_in_order(p, h, order, false, &dl, true);
    if (!all_placed(p, next)) break;
    const Size h2 = height(p, next);
    idle = h2 < h ? 0 : idle + 1;
    h = h2;
    cur = std::move(next);
  }
  return cur;
}

RepairStats repair_height(const Problem& p, Placement& pl, Size lower_bound, const Deadline& dl, uint64_t seed,
                          const std::function<void(Size)>& on_improvement) {
  RepairStats st;
  const auto& bs = p.buffers;
  const int n = static_cast<int>(bs.size());
  Size h = height(p, pl);
  st.height = h;
  if (n == 0 || h <= lower_bound || dl.expired()) return st;
  // Buffers by start time, so a window's buffers are a short scan from a binary search.
  std::vector<int> by_start(n);
  std::iota(by_start.begin(), by_start.end(), 0);
  std::sort(by_start.begin(), by_start.end(), [&](int a, int b) { return bs[a].start < bs[b].start; });
  Time max_life = 1;
  std::vector<Time> lives;
  lives.reserve(n);
  for (const Buffer& b : bs) {
    max_life = std::max(max_life, b.end - b.start);
    lives.push_back(b.end - b.start);
  }
  std::nth_element(lives.begin(), lives.begin() + n / 2, lives.end());
  const Time median_life = std::max<Time>(1, lives[n / 2]);
  Rng rng(seed);
  // Pieces hold a few hundred movable buffers: the horizon's start rate sets their length.
  Time t0 = bs[by_start.front()].start, t1 = t0 + 1;
  for (const Buffer& b : bs) t1 = std::max(t1, b.end);
  const double rate = static_cast<double>(n) / static_cast<double>(t1 - t0);
  const Time base_piece = std::max<Time>(1, static_cast<Time>(400.0 / rate) - median_life);
  Size step = std::max<Size>(1, (h - lower_bound) / 8);  // how far below the incumbent to aim
  Size goal = std::max(lower_bound, h - step);
  double widen = 1.0;  // window margin and piece length factor; grows while repairs keep failing
  std::vector<int> free_ids, order;
  std::vector<char> is_free(n, 0);
  Problem sub;
  Placement trial;
  while (!dl.expired() && h > lower_bound) {
    ++st.rounds;
    // One round: clear every region above the goal, committing each repaired region.
    const Time piece = std::max<Time>(1, static_cast<Time>(static_cast<double>(base_piece) * widen));
    std::vector<Window> hot = hot_windows(p, pl, goal, piece);
    bool all_done = true, any_done = false;
    for (const Window& w0 : hot) {
      if (dl.expired()) { all_done = false; break; }
      bool done = false;
      for (int attempt = 0; attempt < 3 && !done && !dl.expired(); ++attempt) {
        ++st.repairs;
        const Time m = static_cast<Time>(std::ceil(static_cast<double>(median_life) * (0.1 + 0.3 * rng.uniform())));
        const Window w{w0.lo - m, w0.hi + m};
        const Time len = w.hi - w.lo;
        // Free: placed, movable buffers live in the window and not much longer than it.
        free_ids.clear();
        Time flo = w.lo, fhi = w.hi;
        auto first = std::lower_bound(by_start.begin(), by_start.end(), w.lo - max_life,
                                      [&](int i, Time t) { return bs[i].start < t; });
        for (auto it = first; it != by_start.end() && bs[*it].start < w.hi; ++it) {
          const Buffer& b = bs[*it];
          if (b.end <= w.lo || pl.offsets[*it] == kSpilled || b.fixed_offset != kNoFixedOffset) continue;
          // Long-lived buffers stay pinned unless they reach above the goal (those must move).
          if (b.end - b.start > 2 * len + median_life && pl.offsets[*it] + b.size <= goal) continue;
          free_ids.push_back(*it);
          flo = std::min(flo, b.start);
          fhi = std::max(fhi, b.end);
        }
        if (free_ids.empty()) break;
        for (int i : free_ids) is_free[i] = 1;
        // Subproblem: the free buffers plus every other placed buffer live in their span, pinned.
        sub.buffers.clear();
        std::vector<int> sub_to;
        for (auto it = first; it != by_start.end() && bs[*it].start < fhi; ++it) {
          const int i = *it;
          if (bs[i].end <= flo || pl.offsets[i] == kSpilled || bs[i].size == 0) continue;
          Buffer b;
          b.size = bs[i].size;
          b.start = bs[i].start;
          b.end = bs[i].end;
          b.alignment = bs[i].alignment;
          if (!is_free[i]) b.fixed_offset = pl.offsets[i];
          sub.buffers.push_back(std::move(b));
          sub_to.push_back(i);
        }
        // Buffers that started before the scan range but are still live (long-lived) are pinned too.
        auto early = std::lower_bound(by_start.begin(), first, flo - max_life, [&](int i, Time t) { return bs[i].start < t; });
        for (auto it = early; it != first; ++it) {
          const int i = *it;
          if (bs[i].end <= flo || pl.offsets[i] == kSpilled || bs[i].size == 0) continue;
          Buffer b;
          b.size = bs[i].size;
          b.start = bs[i].start;
          b.end = bs[i].end;
          b.fixed_offset = pl.offsets[i];
          sub.buffers.push_back(std::move(b));
          sub_to.push_back(i);
        }
        // Randomized size-descending order: sizes perturbed by up to +-35 %, and sometimes by area.
        order.clear();
        std::vector<double> key(sub.buffers.size(), 0.0);
        const bool by_area = rng.chance(0.25);
        for (int k = 0; k < static_cast<int>(sub.buffers.size()); ++k) {
          const Buffer& b = sub.buffers[k];
          if (b.fixed_offset != kNoFixedOffset) continue;
          double base = static_cast<double>(b.size) * (by_area ? std::sqrt(static_cast<double>(b.end - b.start)) : 1.0);
          key[k] = attempt == 0 && st.rounds == 1 ? base : base * (0.65 + 0.7 * rng.uniform());
          order.push_back(k);
        }
        std::sort(order.begin(), order.end(), [&](int a, int b) { return key[a] != key[b] ? key[a] > key[b] : a < b; });
        trial = place_sweep_in_order(sub, goal, order, rng.chance(0.5));
        bool fits = true;
        for (int k : order)
          if (trial.offsets[k] == kSpilled) { fits = false; break; }
        if (fits)
          for (int k : order) pl.offsets[sub_to[k]] = trial.offsets[k];
        for (int i : free_ids) is_free[i] = 0;
        done = fits;
      }
      all_done = all_done && done;
      any_done = any_done || done;
    }
    const Size nh = height(p, pl);
    if (nh < h) {
      h = nh;
      ++st.improvements;
      if (on_improvement) on_improvement(h);
    }
    if (all_done) {  // the goal is reached: aim further down
      widen = 1.0;
      step = std::max<Size>(1, std::min(h - lower_bound, step + step / 2));
    } else if (!any_done) {  // nothing moved: take bigger regions, then aim closer
      if (widen < 64.0) {
        widen *= 4.0;
      } else {
        widen = 1.0;
        step = std::max<Size>(1, step / 2);
      }
    }  // else: some regions came down; the same goal again clears the rest
    goal = std::max(lower_bound, h - step);
    if (goal >= h) break;
  }
  st.height = h;
  return st;
}

}  // namespace sp::alloc
