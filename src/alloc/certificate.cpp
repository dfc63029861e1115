#include "alloc/certificate.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <unordered_set>

namespace sp::alloc {

Result<HeightCertificate> certificate_from_json(const Json& j, const std::string& source) {
  try {
    JsonCursor root(j, source);
    root.expect_keys({"format", "version", "instance", "lower_bound", "buffers"});
    root.expect_format("scratchplan-alloc-height-certificate", 1);
    HeightCertificate c;
    if (root.has("instance")) c.instance = root.at("instance").as_string();
    c.lower_bound = root.at("lower_bound").as_int_at_least(0);
    for (const JsonCursor& b : root.at("buffers").elements()) {
      b.expect_keys({"id", "lower", "upper"});
      CertifiedBuffer cb;
      cb.id = b.at("id").as_string();
      cb.start = b.at("lower").as_int();
      cb.end = b.at("upper").as_int();
      if (cb.end <= cb.start) b.at("upper").fail("expected upper > lower");
      c.buffers.push_back(std::move(cb));
    }
    return c;
  } catch (const JsonInputError& e) {
    return bad_input(e.what());
  }
}

Result<HeightCertificate> read_certificate(const std::string& path) {
  auto j = read_json_file(path);
  if (!j) return j.error();
  return certificate_from_json(*j, input_name(path));
}

Json certificate_to_json(const HeightCertificate& c) {
  Json j = {{"format", "scratchplan-alloc-height-certificate"}, {"version", 1}, {"instance", c.instance},
            {"lower_bound", c.lower_bound}};
  Json bs = Json::array();
  for (const CertifiedBuffer& b : c.buffers) bs.push_back({{"id", b.id}, {"lower", b.start}, {"upper", b.end}});
  j["buffers"] = std::move(bs);
  return j;
}

namespace {

// The search of search_fit. Sizes are in units of their gcd g: every supported packing has
// offsets that are sums of sizes, so a packing below capacity C exists iff one below floor(C/g)
// units does.
//
// Why enumerating supported packings in (offset, index) order is complete (docs/log/alloc-bounds-log.md): a
// packing of least offset sum has every buffer at 0 or on the top of a co-live buffer (else it
// could drop one unit), so its offset is the highest top among the co-live buffers before it in
// that order. The search therefore builds the order: the next buffer goes at its floor (that
// highest top), which may not lie below the previous offset, nor equal it with a smaller index.
class FitSearcher {
 public:
  FitSearcher(const std::vector<Size>& size, const std::vector<int>& s0, const std::vector<int>& s1, int sections,
              Size cap, int64_t max_nodes, bool memo)
      : n_(static_cast<int>(size.size())), size_(size), s0_(s0), s1_(s1), cap_(cap), max_nodes_(max_nodes),
        use_memo_(memo), top_(sections, 0), rest_(sections, 0), placed_(n_, false), offset_(n_, 0), floor_(n_, 0) {
    live_.assign(sections, {});
    for (int i = 0; i < n_; ++i)
      for (int s = s0_[i]; s < s1_[i]; ++s) {
        rest_[s] += size_[i];
        live_[s].push_back(i);
      }
    // Identical buffers (size and lifetime) are interchangeable: the lower index goes lower.
    twin_before_.assign(n_, -1);
    std::map<std::tuple<Size, int, int>, int> last;
    for (int i = 0; i < n_; ++i) {
      auto key = std::make_tuple(size_[i], s0_[i], s1_[i]);
      auto it = last.find(key);
      if (it != last.end()) twin_before_[i] = it->second;
      last[key] = i;
    }
  }

  FitVerdict run() {
    bool fits = dfs(0, -1, 0);
    if (fits) return FitVerdict::kFits;
    return aborted_ ? FitVerdict::kUnknown : FitVerdict::kDoesNotFit;
  }
  int64_t nodes() const { return nodes_; }
  const std::vector<Size>& offsets() const { return offset_; }

 private:
  bool conflicts(int a, int b) const { return s0_[a] < s1_[b] && s0_[b] < s1_[a]; }

  bool dfs(Size level, int last, int placed_count) {
    if (placed_count == n_) return true;
    if (++nodes_ > max_nodes_) {
      aborted_ = true;
      return false;
    }
    // Every unplaced buffer live in section s lies above max(level, top of s) and below cap.
    for (std::size_t s = 0; s < top_.size(); ++s)
      if (rest_[s] > 0 && std::max(level, top_[s]) + rest_[s] > cap_) return false;
    std::vector<int> candidates;
    for (int i = 0; i < n_; ++i) {
      if (placed_[i]) continue;
      Size f = 0;
      for (int s = s0_[i]; s < s1_[i]; ++s) f = std::max(f, top_[s]);
      floor_[i] = f;
      const bool placeable_now = f > level || (f == level && i > last);
      if (!placeable_now) {
        // It must end higher than its floor: some unplaced co-live buffer has to lift it.
        bool lifter = false;
        for (int j = 0; j < n_ && !lifter; ++j) lifter = j != i && !placed_[j] && conflicts(i, j);
        if (!lifter) return false;
        continue;
      }
      if (f + size_[i] > cap_) continue;
      if (twin_before_[i] >= 0 && !placed_[twin_before_[i]]) continue;
      candidates.push_back(i);
    }
    if (candidates.empty()) return false;
    // Sharper per section: the unplaced buffers live there with floor >= f all lie in [f, cap).
    std::vector<std::pair<Size, Size>> floors;  // (floor, size) of the unplaced buffers of a section
    for (std::size_t s = 0; s < live_.size(); ++s) {
      if (rest_[s] == 0) continue;
      floors.clear();
      for (int i : live_[s])
        if (!placed_[i]) floors.push_back({std::max(floor_[i], level), size_[i]});
      std::sort(floors.begin(), floors.end(), std::greater<>());
      Size above = 0;
      for (const auto& [f, sz] : floors) {
        above += sz;
        if (f + above > cap_) return false;
      }
    }
    std::vector<int64_t> key;
    if (use_memo_) {
      key = state_key(level, last);
      if (failed_.count(key)) return false;
    }
    std::stable_sort(candidates.begin(), candidates.end(), [&](int a, int b) {
      if (floor_[a] != floor_[b]) return floor_[a] < floor_[b];
      return size_[a] > size_[b];
    });
    // floor_ is overwritten by deeper nodes: keep this node's floors.
    std::vector<Size> at(candidates.size());
    for (std::size_t k = 0; k < candidates.size(); ++k) at[k] = floor_[candidates[k]];
    std::vector<Size> saved;
    for (std::size_t k = 0; k < candidates.size(); ++k) {
      const int i = candidates[k];
      const Size o = at[k];
      saved.assign(top_.begin() + s0_[i], top_.begin() + s1_[i]);
      for (int s = s0_[i]; s < s1_[i]; ++s) {
        top_[s] = o + size_[i];
        rest_[s] -= size_[i];
      }
      placed_[i] = true;
      offset_[i] = o;
      if (dfs(o, i, placed_count + 1)) return true;
      placed_[i] = false;
      for (int s = s0_[i]; s < s1_[i]; ++s) {
        top_[s] = saved[s - s0_[i]];
        rest_[s] += size_[i];
      }
      if (aborted_) return false;
    }
    if (use_memo_ && failed_.size() < kMaxMemo) failed_.insert(std::move(key));
    return false;
  }

  // Everything the subtree depends on: the level, the last index, which buffers are placed and
  // the tops of the sections (the floors follow from them).
  std::vector<int64_t> state_key(Size level, int last) const {
    std::vector<int64_t> k;
    k.reserve(2 + top_.size() + n_ / 64 + 1);
    k.push_back(level);
    k.push_back(last);
    int64_t word = 0;
    for (int i = 0; i < n_; ++i) {
      if (placed_[i]) word |= int64_t{1} << (i % 64);
      if (i % 64 == 63 || i == n_ - 1) {
        k.push_back(word);
        word = 0;
      }
    }
    k.insert(k.end(), top_.begin(), top_.end());
    return k;
  }

  struct KeyHash {
    std::size_t operator()(const std::vector<int64_t>& v) const {
      uint64_t h = 1469598103934665603ull;
      for (int64_t x : v) h = (h ^ static_cast<uint64_t>(x)) * 1099511628211ull;
      return static_cast<std::size_t>(h);
    }
  };
  static constexpr std::size_t kMaxMemo = 4'000'000;

  int n_;
  const std::vector<Size>& size_;
  const std::vector<int>& s0_;
  const std::vector<int>& s1_;
  Size cap_;
  int64_t max_nodes_;
  bool use_memo_;
  std::vector<Size> top_;                // per section: highest top of a placed buffer live there
  std::vector<Size> rest_;               // per section: summed size of unplaced buffers live there
  std::vector<std::vector<int>> live_;   // per section: its buffers
  std::vector<bool> placed_;             // per buffer
  std::vector<Size> offset_;             // per placed buffer, in units
  std::vector<Size> floor_;              // per unplaced buffer at the current node
  std::vector<int> twin_before_;         // the identical buffer just before it, or -1
  std::unordered_set<std::vector<int64_t>, KeyHash> failed_;  // states whose subtree has no packing
  int64_t nodes_ = 0;
  bool aborted_ = false;
};

}  // namespace

FitSearch search_fit(const Problem& p, Size capacity, int64_t max_nodes, bool memo) {
  FitSearch out;
  const int n = static_cast<int>(p.buffers.size());
  out.offsets.assign(n, 0);
  std::vector<int> used;  // buffers with bytes (a zero-size buffer fits at 0)
  Size g = 0;
  for (int i = 0; i < n; ++i)
    if (p.buffers[i].size > 0) {
      used.push_back(i);
      g = std::gcd(g, p.buffers[i].size);
    }
  if (used.empty()) {
    out.verdict = FitVerdict::kFits;
    return out;
  }
  if (capacity < 0) {
    out.verdict = FitVerdict::kDoesNotFit;
    return out;
  }
  std::vector<Time> ticks;
  for (int i : used) {
    ticks.push_back(p.buffers[i].start);
    ticks.push_back(p.buffers[i].end);
  }
  std::sort(ticks.begin(), ticks.end());
  ticks.erase(std::unique(ticks.begin(), ticks.end()), ticks.end());
  auto section = [&](Time t) { return static_cast<int>(std::lower_bound(ticks.begin(), ticks.end(), t) - ticks.begin()); };
  std::vector<Size> size;
  std::vector<int> s0, s1;
  for (int i : used) {
    size.push_back(p.buffers[i].size / g);
    s0.push_back(section(p.buffers[i].start));
    s1.push_back(section(p.buffers[i].end));
  }
  FitSearcher search(size, s0, s1, static_cast<int>(ticks.size()) - 1, capacity / g, max_nodes, memo);
  out.verdict = search.run();
  out.nodes = search.nodes();
  if (out.verdict == FitVerdict::kFits)
    for (std::size_t k = 0; k < used.size(); ++k) out.offsets[used[k]] = search.offsets()[k] * g;
  return out;
}

Result<Problem> certificate_subproblem(const Problem& p, const HeightCertificate& c) {
  std::map<std::string, int> index;
  for (int i = 0; i < static_cast<int>(p.buffers.size()); ++i) index.emplace(p.buffers[i].id, i);
  std::vector<bool> seen(p.buffers.size(), false);
  Problem sub;
  for (std::size_t k = 0; k < c.buffers.size(); ++k) {
    const CertifiedBuffer& cb = c.buffers[k];
    const std::string where = "certificate buffer " + std::to_string(k) + " ('" + cb.id + "'): ";
    auto it = index.find(cb.id);
    if (it == index.end()) return bad_input(where + "expected the id of a buffer of the instance");
    if (seen[it->second]) return bad_input(where + "expected each buffer once");
    seen[it->second] = true;
    const Buffer& b = p.buffers[it->second];
    if (cb.start < b.start || cb.end > b.end || cb.end <= cb.start)
      return bad_input(where + "expected a lifetime inside [" + std::to_string(b.start) + ", " + std::to_string(b.end) + ")");
    if (b.alignment > 1 || b.fixed_offset != kNoFixedOffset || !b.in_place_parents.empty() || !b.residency_reason.empty())
      return bad_input(where + "expected a plain buffer (no alignment, pinned offset, hand-off or forced spill)");
    Buffer s;
    s.id = b.id;
    s.size = b.size;
    s.start = cb.start;
    s.end = cb.end;
    sub.buffers.push_back(std::move(s));
  }
  return sub;
}

Result<FitSearch> check_certificate(const Problem& p, const HeightCertificate& c, int64_t max_nodes) {
  auto sub = certificate_subproblem(p, c);
  if (!sub) return sub.error();
  if (c.lower_bound <= 0) return bad_input("certificate: expected a positive lower_bound");
  return search_fit(*sub, c.lower_bound - 1, max_nodes);
}

namespace {

// The buffers live in [a, b), clipped to it.
HeightCertificate window_certificate(const Problem& p, Time a, Time b, Size lower_bound) {
  HeightCertificate c;
  c.lower_bound = lower_bound;
  for (const Buffer& x : p.buffers)
    if (x.size > 0 && x.start < b && a < x.end) c.buffers.push_back({x.id, std::max(x.start, a), std::min(x.end, b)});
  return c;
}

bool proves(const Problem& p, const HeightCertificate& c, int64_t max_nodes) {
  auto r = check_certificate(p, c, max_nodes);
  return r && r->verdict == FitVerdict::kDoesNotFit;
}

}  // namespace

HeightCertificate find_window_certificate(const Problem& p, const WindowSearchOptions& o) {
  Size g = 0;
  for (const Buffer& b : p.buffers) g = std::gcd(g, b.size);
  std::vector<Time> ticks;
  for (const Buffer& b : p.buffers) {
    ticks.push_back(b.start);
    ticks.push_back(b.end);
  }
  std::sort(ticks.begin(), ticks.end());
  ticks.erase(std::unique(ticks.begin(), ticks.end()), ticks.end());
  const int sections = static_cast<int>(ticks.size()) - 1;
  std::vector<Size> load(std::max(sections, 0), 0);
  for (const Buffer& b : p.buffers) {
    int s0 = static_cast<int>(std::lower_bound(ticks.begin(), ticks.end(), b.start) - ticks.begin());
    int s1 = static_cast<int>(std::lower_bound(ticks.begin(), ticks.end(), b.end) - ticks.begin());
    for (int s = s0; s < s1; ++s) load[s] += b.size;
  }
  const Size peak = load.empty() ? 0 : *std::max_element(load.begin(), load.end());
  if (g == 0) return {};
  // The max-load bound: the buffers of a peak section.
  const int k0 = static_cast<int>(std::find(load.begin(), load.end(), peak) - load.begin());
  HeightCertificate best = window_certificate(p, ticks[k0], ticks[k0 + 1], peak);
  for (int k = 0; k < sections; ++k) {
    if (load[k] != peak) continue;
    for (int w = 0; w <= o.max_sections; ++w) {
      const int a = std::max(0, k - w), b = std::min(sections, k + w + 1);
      for (int raise = 0; raise < o.max_raise; ++raise) {
        HeightCertificate c = window_certificate(p, ticks[a], ticks[b], best.lower_bound + g);
        if (!proves(p, c, o.max_nodes)) break;
        best = std::move(c);
      }
    }
  }
  if (!o.shrink || best.buffers.empty()) return best;
  for (std::size_t k = best.buffers.size(); k-- > 0;) {
    HeightCertificate c = best;
    c.buffers.erase(c.buffers.begin() + static_cast<std::ptrdiff_t>(k));
    if (proves(p, c, o.max_nodes)) best = std::move(c);
  }
  return best;
}

}  // namespace sp::alloc
