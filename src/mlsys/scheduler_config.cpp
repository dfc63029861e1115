// Granularity and traversal search for one subgraph. The working set grows with w, h and k, so
// shapes are tried fewest-tiles first and, per shape, k from the largest down until one fits;
// a shape dominated by one that did not fit at some k is not probed there again.
#include "mlsys/scheduler_config.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <tuple>

namespace sp::mlsys {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

void append_ids(std::string& s, const std::vector<int32_t>& ids) {
  const std::size_t at = s.size();
  s.resize(at + ids.size() * sizeof(int32_t));
  if (!ids.empty()) std::memcpy(s.data() + at, ids.data(), ids.size() * sizeof(int32_t));
  s.push_back('|');
}

}  // namespace

std::string config_key(const std::vector<OpId>& ops, const std::vector<TensorId>& resident,
                       const std::vector<TensorId>& retain) {
  std::string key;
  key.reserve((ops.size() + resident.size() + retain.size()) * 4 + 3);
  append_ids(key, ops);
  append_ids(key, resident);
  append_ids(key, retain);
  return key;
}

std::optional<std::vector<int64_t>> traversal_order(Traversal t, int64_t nx, int64_t ny) {
  if (t == Traversal::kRaster || nx <= 1 || ny <= 1) return std::nullopt;
  std::vector<int64_t> order;
  order.reserve(static_cast<std::size_t>(nx * ny));
  if (t == Traversal::kRowSnake) {
    for (int64_t y = 0; y < ny; ++y)
      for (int64_t i = 0; i < nx; ++i) order.push_back(y * nx + (y % 2 ? nx - 1 - i : i));
  } else {
    for (int64_t x = 0; x < nx; ++x)
      for (int64_t i = 0; i < ny; ++i) order.push_back((x % 2 ? ny - 1 - i : i) * nx + x);
  }
  return order;
}

std::vector<int64_t> tile_size_candidates(int64_t extent, int64_t native) {
  // Ladder in 128ths of native: the sizes engineers would try, plus whatever tile count each
  // implies; the actual size is the smallest one giving that tile count (least padding).
  static const int kLadder[] = {128, 112, 96, 80, 64, 56, 48, 40, 32, 24, 16, 12, 8, 4, 2, 1};
  std::vector<int64_t> out;
  const int64_t cap = std::min(extent, native);
  for (int l : kLadder) {
    int64_t target = std::max<int64_t>(1, native * l / 128);
    target = std::min(target, cap);
    const int64_t n = ceil_div(extent, target);
    const int64_t s = ceil_div(extent, n);
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  }
  std::sort(out.rbegin(), out.rend());
  return out;
}

void TimeGuard::record(int64_t steps, double seconds) {
  if (steps < 4096 || seconds <= 0) return;  // too short to time
  const double rate = seconds / static_cast<double>(steps);
  // Rising costs (a loaded machine) are taken at once, falling ones halfway.
  double cur = sec_per_step_.load(std::memory_order_relaxed);
  const double next = rate > cur ? rate : 0.5 * (cur + rate);
  sec_per_step_.compare_exchange_strong(cur, next, std::memory_order_relaxed);
}

std::optional<SubgraphConfig> ConfigCache::find(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(key);
  if (it == map_.end()) return std::nullopt;
  return it->second;
}

void ConfigCache::put(const std::string& key, const SubgraphConfig& cfg) {
  std::lock_guard<std::mutex> lock(mu_);
  map_.emplace(key, cfg);
}

std::size_t ConfigCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return map_.size();
}

ConfigSearcher::ConfigSearcher(const Problem& problem, const RuleOptions& rules, ConfigCache& cache,
                               const ConfigSearchOptions& opt)
    : p_(problem), ev_(problem, rules), cache_(cache), opt_(opt) {
  // Availability (V4) is the partition's job; here every tensor counts as loadable.
  state_.in_slow.assign(problem.num_tensors(), 1);
}

SubgraphConfig ConfigSearcher::best(const std::vector<OpId>& ops, const std::vector<TensorId>& resident,
                                    const std::vector<TensorId>& retain) {
  const std::string key = config_key(ops, resident, retain);
  if (auto hit = cache_.find(key)) return *hit;
  cut_short_ = false;
  SubgraphConfig cfg = search(ops, resident, retain);
  if ((!deadline_ || !deadline_->expired()) && !cut_short_) cache_.put(key, cfg);
  return cfg;
}

// One search of ConfigSearcher::search: the subgraph's tile context, the candidate shapes, and
// what the simulations so far showed.
class SubgraphSearch {
 public:
  SubgraphSearch(ConfigSearcher& owner, const std::vector<OpId>& ops, const std::vector<TensorId>& resident,
                 const std::vector<TensorId>& retain)
      : o_(owner), p_(owner.p_), ops_(ops), resident_(resident), retain_(retain) {}

  SubgraphConfig run_search() {
    if (!find_tile_context()) return SubgraphConfig{};
    prepare_candidates();
    if (!find_first_fit()) return SubgraphConfig{};
    int fitted = 0;
    for (std::size_t si = 0; si < shapes_.size() && fitted < o_.opt_.fitting_shapes && !structural_; ++si)
      if (explore_shape(si)) ++fitted;
    return best_;
  }

 private:
  struct Shape {
    int64_t w, h, tiles;
    int first_fit = -1;  // index into ks of the largest fitting k; -2 none fits; -1 unknown
  };

  static bool has(const std::vector<TensorId>& v, TensorId t) { return std::find(v.begin(), v.end(), t) != v.end(); }
  Shape shape_of(int64_t w, int64_t h) const { return {w, h, ceil_div(W_, w) * ceil_div(H_, h)}; }

  // The pinned tensors fit, the sinks share one shape, the k-looped MatMuls share one K.
  bool find_tile_context() {
    // Resident tensors stay for the whole subgraph and retained ones are complete by its end:
    // together they must fit before any tile is considered.
    Elements pinned = 0;
    for (TensorId t : resident_) pinned += p_.tensors[t].size();
    for (TensorId t : retain_) pinned += p_.tensors[t].size();
    if (pinned >= p_.fast_memory_capacity) return false;
    // Sinks and the reduction of the k-looped MatMuls (those whose output is requested as a grid
    // tile: a sink, or reached from a sink through pointwise ops only).
    for (OpId o : ops_) {
      for (TensorId t : p_.ops[o].outputs) produced_.push_back(t);
      for (TensorId t : p_.ops[o].inputs) consumed_.push_back(t);
    }
    for (TensorId t : produced_) {
      if (has(consumed_, t)) continue;
      if (W_ < 0) {
        W_ = p_.tensors[t].width;
        H_ = p_.tensors[t].height;
      } else if (W_ != p_.tensors[t].width || H_ != p_.tensors[t].height) {
        return false;  // sinks of different shapes: unsupported by the reference reading (V9)
      }
      tile_ctx_.push_back(t);
    }
    if (W_ < 0) return false;
    for (auto it = ops_.rbegin(); it != ops_.rend(); ++it) {
      const Op& op = p_.ops[*it];
      bool tile = false;
      for (TensorId t : op.outputs) tile |= has(tile_ctx_, t);
      if (!tile) continue;
      if (op.kind == OpKind::kMatMul) {
        const int64_t K = p_.reduction(*it);
        if (std::find(loop_k_.begin(), loop_k_.end(), K) == loop_k_.end()) loop_k_.push_back(K);
      } else {
        for (TensorId t : op.inputs)
          if (has(produced_, t) && !has(tile_ctx_, t)) tile_ctx_.push_back(t);
      }
    }
    return loop_k_.size() <= 1;  // k-looped MatMuls must share K
  }

  // Tile sizes, shapes fewest tiles first, step budgets and the working-set bound's operands.
  void prepare_candidates() {
    ws_ = tile_size_candidates(W_, p_.native_w);
    hs_ = tile_size_candidates(H_, p_.native_h);
    ks_ = {1};
    if (!loop_k_.empty()) {
      K_ = loop_k_[0];
      ks_ = tile_size_candidates(K_, p_.native_k);
    }
    for (int64_t w : ws_)
      for (int64_t h : hs_) shapes_.push_back(shape_of(w, h));
    std::stable_sort(shapes_.begin(), shapes_.end(), [](const Shape& a, const Shape& b) {
      if (a.tiles != b.tiles) return a.tiles < b.tiles;
      return std::min(a.w, a.h) > std::min(b.w, b.h);
    });
    sims_start_ = o_.simulations_;
    // Step budgets scale with the fewest steps any granularity can take, so large grids stay
    // schedulable (the evaluator itself allows millions of steps).
    const int64_t min_steps = ceil_div(W_, ws_.front()) * ceil_div(H_, hs_.front()) * ceil_div(K_, ks_.front());
    max_steps_ = std::max(o_.opt_.max_steps, 4 * min_steps);
    probe_steps_ = std::max(o_.opt_.probe_steps, 2 * min_steps);
    collect_loaded_operands();
  }

  void consider(const SubgraphConfig& c) {
    if (c.valid && (!best_.valid || c.latency < best_.latency)) best_ = c;
  }

  // Simulates [s.w, s.h, k] with traversal t once (`tried` remembers it); `cutoff`: stop
  // simulating once the latency exceeds it (the candidate is then not better).
  SubgraphConfig run(const Shape& s, int64_t k, Traversal t, double cutoff = std::numeric_limits<double>::infinity()) {
    SubgraphConfig c;
    c.nx = ceil_div(W_, s.w);
    c.ny = ceil_div(H_, s.h);
    const Traversal eff = (c.nx <= 1 || c.ny <= 1) ? Traversal::kRaster : t;
    for (const SubgraphConfig& d : tried_)
      if (d.granularity.w == s.w && d.granularity.h == s.h && d.granularity.k == k && d.traversal == eff) return d;
    const int64_t steps = s.tiles * ceil_div(K_, k);
    if ((o_.deadline_ && o_.deadline_->expired()) || steps > std::max(max_steps_, probe_steps_) ||
        o_.simulations_ - sims_start_ >= o_.opt_.max_simulations)
      return c;  // invalid: over budget
    if (o_.guard_ && !(o_.opt_.ensure_one && !best_.valid) && !o_.guard_->allows(steps)) {
      o_.cut_short_ = true;
      return c;
    }
    c.granularity = {s.w, s.h, k};
    c.traversal = t;
    SubgraphSpec spec;
    spec.ops = ops_;
    spec.granularity = c.granularity;
    spec.retain = retain_;
    spec.traversal = traversal_order(t, c.nx, c.ny);
    if (!spec.traversal) c.traversal = Traversal::kRaster;
    o_.state_.resident_prev = resident_;
    o_.errors_.clear();
    o_.warnings_.clear();
    ++o_.simulations_;
    const auto t0 = std::chrono::steady_clock::now();
    o_.ev_.set_early_exit(true, cutoff);
    SubgraphEvaluation e = o_.ev_.evaluate_subgraph(spec, 0, o_.state_, o_.errors_, o_.warnings_);
    if (o_.guard_ && !e.cut_short)
      o_.guard_->record(steps, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    c.valid = e.evaluated && o_.errors_.empty() && !e.cut_short;
    // Anything but running out of memory fails every granularity alike.
    if (!e.evaluated) structural_ = true;
    for (const std::string& msg : o_.errors_)
      if (msg.find("(OOM)") == std::string::npos) structural_ = true;
    c.latency = e.latency;
    c.peak = e.peak_working_set;
    if (!e.cut_short || !o_.errors_.empty()) tried_.push_back(c);  // a latency cut-off depends on the cutoff
    return c;
  }

  // A lower bound on the working set of [w,h,k], used only to skip hopeless candidates: every
  // sink's first tile (always full size) plus, per loaded operand of a k-looped MatMul (not
  // produced here, not resident), its first slice (h x k or k x w), each tensor counted once.
  void collect_loaded_operands() {
    for (OpId o : ops_) {
      const Op& op = p_.ops[o];
      if (op.kind != OpKind::kMatMul || !has(tile_ctx_, op.outputs[0])) continue;
      for (int side = 0; side < 2; ++side) {
        const TensorId t = op.inputs[side];
        if (has(produced_, t) || has(resident_, t)) continue;
        auto it = std::find_if(loaded_operands_.begin(), loaded_operands_.end(), [&](const auto& e) { return e.first == t; });
        if (it == loaded_operands_.end()) loaded_operands_.push_back({t, side});
        else if (it->second != side) it->second = 2;
      }
    }
    sinks_ = static_cast<Elements>(std::count_if(produced_.begin(), produced_.end(), [&](TensorId t) { return !has(consumed_, t); }));
    // At the first step: the tensors retained by the previous subgraph, the first (full-size) tiles
    // and slices; what this subgraph retains is not complete yet, so it is not counted.
    if (!o_.ev_.options().resident_only_if_consumed)
      for (TensorId t : resident_) resident_size_ += p_.tensors[t].size();
  }
  Elements ws_lower_bound(int64_t w, int64_t h, int64_t k) const {
    Elements lb = resident_size_ + sinks_ * w * h;
    if (!loop_k_.empty())
      for (const auto& [t, side] : loaded_operands_) lb += side == 0 ? h * k : side == 1 ? k * w : std::max(h, w) * k;
    return lb;
  }

  // The smallest shape whose steps at k stay within the probe budget.
  Shape smallest_affordable_shape(int64_t k) const {
    std::size_t i = ws_.size(), j = hs_.size();
    Shape sh = shape_of(ws_[i - 1], hs_[j - 1]);
    while (sh.tiles * ceil_div(K_, k) > probe_steps_ && (i > 1 || j > 1)) {
      if (i > 1) --i;
      if (j > 1) --j;
      sh = shape_of(ws_[i - 1], hs_[j - 1]);
    }
    return sh;
  }

  // Feasibility first: the two classic probes, then among the granularities within the probe's
  // step budget the ones with the smallest working-set bound (a small shape with a deep k, or a
  // wider one with a shallow k). If none fits, nothing practical does.
  bool find_first_fit() {
    struct Cand {
      int64_t w, h, k;
      Elements lb;
      int64_t steps;
    };
    // The two classic probes first (the smallest shape at the largest affordable k, the smallest
    // k at the smallest affordable shape): the bound ignores strips and pointwise inputs, so it
    // can rank a candidate first that does not fit while these do.
    const Shape tiny = shape_of(ws_.back(), hs_.back());
    int kfit = static_cast<int>(ks_.size()) - 1;
    while (kfit > 0 && tiny.tiles * ceil_div(K_, ks_[kfit]) > probe_steps_) --kfit;
    SubgraphConfig c = run(smallest_affordable_shape(ks_[kfit]), ks_[kfit], Traversal::kRaster);
    if (!c.valid && !structural_ && kfit + 1 < static_cast<int>(ks_.size()))
      c = run(smallest_affordable_shape(ks_.back()), ks_.back(), Traversal::kRaster);
    std::vector<Cand> cands;  // only when the classic probes fail (most keys never get here)
    if (!c.valid && !structural_) {
      const int64_t step_cap = std::min(probe_steps_, o_.ev_.options().max_steps);
      for (int64_t w : ws_)
        for (int64_t h : hs_)
          for (int64_t k : ks_) {
            const int64_t steps = ceil_div(W_, w) * ceil_div(H_, h) * ceil_div(K_, k);
            if (steps <= step_cap) cands.push_back({w, h, k, ws_lower_bound(w, h, k), steps});
          }
      std::sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) {
        if (a.lb != b.lb) return a.lb < b.lb;
        if (a.steps != b.steps) return a.steps < b.steps;
        return std::tie(a.w, a.h, a.k) > std::tie(b.w, b.h, b.k);
      });
    }
    std::vector<Cand> failed;
    for (const Cand& cd : cands) {
      if (c.valid) break;
      if (failed.size() >= 3 || structural_) break;
      if (cd.lb > p_.fast_memory_capacity) break;  // sorted: nothing after fits either
      bool dominated = false;  // a larger granularity than one that did not fit
      for (const Cand& f : failed) dominated |= cd.w >= f.w && cd.h >= f.h && cd.k >= f.k;
      if (dominated) continue;
      c = run(shape_of(cd.w, cd.h), cd.k, Traversal::kRaster);
      if (c.valid) break;
      failed.push_back(cd);
    }
    if (structural_ || !c.valid) return false;
    consider(c);
    return true;
  }

  // Finds shape si's largest fitting k, then its best traversal and split k. True if it fits.
  bool explore_shape(std::size_t si) {
    Shape& s = shapes_[si];
    // The working set grows with w, h and k. A larger shape that fits at some k proves this
    // one fits there too (an upper index); a smaller one bounds from below, or shows this
    // shape hopeless when it fits at no k.
    int lo = 0, hi = -1;
    bool hopeless = false;
    for (std::size_t j = 0; j < si; ++j) {
      const Shape& d = shapes_[j];
      if (d.first_fit == -1) continue;
      if (d.w <= s.w && d.h <= s.h) {
        if (d.first_fit == -2) hopeless = true;
        else lo = std::max(lo, d.first_fit);
      }
      if (d.w >= s.w && d.h >= s.h && d.first_fit >= 0 && (hi < 0 || d.first_fit < hi)) hi = d.first_fit;
    }
    const int64_t nx = ceil_div(W_, s.w), ny = ceil_div(H_, s.h);
    const Traversal probe_t = o_.opt_.snake && nx > 1 && ny > 1 ? Traversal::kRowSnake : Traversal::kRaster;
    s.first_fit = -2;
    if (hopeless) return false;
    int kmin = static_cast<int>(ks_.size()) - 1;  // smallest k within the step budget
    while (kmin >= 0 && s.tiles * ceil_div(K_, ks_[kmin]) > max_steps_) --kmin;
    if (kmin < lo) return false;
    if (ws_lower_bound(s.w, s.h, ks_[kmin]) > p_.fast_memory_capacity) return false;  // fits at no k
    // Largest k first (fewest steps, cheapest); then the smallest k decides hopelessness.
    SubgraphConfig fit = run(s, ks_[lo], probe_t);
    if (fit.valid) {
      hi = lo;
    } else if (hi < 0 || hi > kmin) {
      if (lo == kmin) return false;
      fit = run(s, ks_[kmin], probe_t);
      if (!fit.valid) return false;  // fits at no k: hopeless
      hi = kmin;
      ++lo;
    } else {
      ++lo;
    }
    // Binary search for the largest fitting k (smallest index) in [lo, hi]; hi fits.
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      SubgraphConfig c = run(s, ks_[mid], probe_t);
      if (c.valid) {
        hi = mid;
        fit = c;
      } else {
        lo = mid + 1;
      }
    }
    if (!fit.valid || fit.granularity.k != ks_[hi]) fit = run(s, ks_[hi], probe_t);
    if (!fit.valid) return false;
    s.first_fit = hi;
    consider(fit);
    improve_fitting_shape(s, probe_t, fit.latency, nx, ny);
    return true;
  }

  // Other traversals of a fitting shape, then smaller k's while they help.
  void improve_fitting_shape(const Shape& s, Traversal probe_t, double fit_latency, int64_t nx, int64_t ny) {
    Traversal best_t = probe_t;
    double best_lat = fit_latency;
    if (o_.opt_.snake && nx > 1 && ny > 1) {
      for (Traversal t : {Traversal::kColSnake, Traversal::kRaster}) {
        SubgraphConfig c = run(s, ks_[s.first_fit], t, best_lat);
        consider(c);
        if (c.valid && c.latency < best_lat) {
          best_lat = c.latency;
          best_t = t;
        }
      }
    }
    if (o_.opt_.split_k && !loop_k_.empty()) {
      // A smaller k can overlap the one-off loads and stores of a tile with more compute-bound
      // steps (Example 5); stop when it no longer helps.
      for (int i = s.first_fit + 1; i < static_cast<int>(ks_.size()) && i <= s.first_fit + 3; ++i) {
        SubgraphConfig c = run(s, ks_[i], best_t, best_lat);
        if (!c.valid) break;
        const bool better = c.latency < best_lat;
        consider(c);
        if (!better) break;
        best_lat = c.latency;
      }
    }
  }

  ConfigSearcher& o_;
  const Problem& p_;
  const std::vector<OpId>& ops_;
  const std::vector<TensorId>& resident_;
  const std::vector<TensorId>& retain_;
  std::vector<TensorId> produced_, consumed_, tile_ctx_;  // tile_ctx_: sinks and what they tile
  int64_t W_ = -1, H_ = -1, K_ = 1;                        // sink shape and the looped reduction
  std::vector<int64_t> loop_k_, ws_, hs_, ks_;             // reductions; candidate tile sizes
  std::vector<Shape> shapes_;                              // (w, h) fewest tiles first
  int64_t sims_start_ = 0, max_steps_ = 0, probe_steps_ = 0;
  bool structural_ = false;             // a failure every granularity shares
  SubgraphConfig best_;                 // best valid configuration so far
  std::vector<SubgraphConfig> tried_;   // simulated in this search: never simulate one twice
  std::vector<std::pair<TensorId, int>> loaded_operands_;  // (tensor, 0 = LHS / 1 = RHS / 2 = both)
  Elements sinks_ = 0, resident_size_ = 0;
};

SubgraphConfig ConfigSearcher::search(const std::vector<OpId>& ops, const std::vector<TensorId>& resident,
                                      const std::vector<TensorId>& retain) {
  return SubgraphSearch(*this, ops, resident, retain).run_search();
}

}  // namespace sp::mlsys
