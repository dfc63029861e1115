// Evaluator internals. The simulation walks the tiles in traversal order and, per tile, the
// k-steps; each step propagates regions backwards from the requested sink tile through the
// subgraph's ops (in reverse declared order), then prices the step.
//
// Key pieces:
//   Plan       static analysis of one subgraph: local tensor table, classes, grid.
//   propagate  one step's backward region propagation: compute, external slices, outputs.
//   simulate   the step loop: reuse against the previous step, stores, working set.
#include "mlsys/evaluator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <unordered_set>

namespace sp::mlsys {
namespace {

// A rectangle [r0,r1) x [c0,c1) of rows and columns.
struct Rect {
  int64_t r0 = 0, r1 = 0, c0 = 0, c1 = 0;
  Elements area() const { return (r1 - r0) * (c1 - c0); }
  bool operator==(const Rect&) const = default;
};

struct RectHash {
  std::size_t operator()(const Rect& r) const {
    uint64_t h = static_cast<uint64_t>(r.r0) * 0x9E3779B97F4A7C15ULL;
    h = (h ^ static_cast<uint64_t>(r.r1)) * 0xC2B2AE3D27D4EB4FULL;
    h = (h ^ static_cast<uint64_t>(r.c0)) * 0x165667B19E3779F9ULL;
    h = (h ^ static_cast<uint64_t>(r.c1)) * 0x9E3779B97F4A7C15ULL;
    return static_cast<std::size_t>(h ^ (h >> 29));
  }
};

enum class Ctx : uint8_t { kTile, kStrip };  // a grid tile of the unified grid, or a derived strip

struct Request {
  Rect rect;
  Ctx ctx;
};
struct Slice {
  int t;  // local tensor
  Rect rect;
  bool operator==(const Slice&) const = default;
};
struct ProducedRegion {
  int t;
  Rect rect;
  bool looped;  // output of a k-looped MatMul (complete only at the last k-step)
};

// Overflow-safe for a >= 0, b > 0.
int64_t ceil_div(int64_t a, int64_t b) { return a <= 0 ? 0 : (a - 1) / b + 1; }

// A fatal error for one subgraph: the reference evaluator skips the subgraph's latency.
struct SubgraphFatal : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct LocalTensor {
  TensorId id;
  int64_t width, height;
  bool produced = false;   // by an op of the subgraph
  bool consumed = false;   // by an op of the subgraph
  bool ephemeral = false;  // costs nothing (see RULES.md §1.4)
  bool retained = false;   // produced here and kept for the next subgraph
  bool stored = false;     // written to slow memory
  bool external = false;   // read here, produced elsewhere
  Rect full() const { return {0, height, 0, width}; }
};

struct LocalOp {
  OpId id;
  bool matmul;
  double base;
  int64_t reduction;        // K for MatMul
  std::vector<int> inputs;  // local tensor ids
  std::vector<int> outputs;
};

}  // namespace

struct Evaluator::Impl {
  const Problem& p;
  const RuleOptions& opt;
  std::vector<int> local_of;  // global tensor -> local id, -1 when untouched

  // Plan of the current subgraph.
  std::vector<LocalTensor> tensors;
  std::vector<LocalOp> ops;
  std::vector<int> sinks;
  int64_t w = 0, h = 0, k = 0, grid_w = 0, grid_h = 0, nx = 0, ny = 0;

  // Scratch for propagate().
  std::vector<std::vector<Request>> req;
  std::vector<int> req_touched;

  // Results of one propagate().
  double compute = 0;
  std::vector<Slice> ext;
  std::vector<ProducedRegion> produced;
  std::vector<Slice> looped;  // (output tensor, rect) of k-looped MatMuls
  std::vector<int> looped_ops;
  std::vector<Slice> eph_now;

  // Search mode (Evaluator::set_early_exit).
  bool stop_on_oom = false;
  double latency_cutoff = std::numeric_limits<double>::infinity();

  Impl(const Problem& problem, const RuleOptions& options) : p(problem), opt(options) {
    local_of.assign(problem.num_tensors(), -1);
  }

  int local(TensorId t) {
    int& l = local_of[t];
    if (l < 0) {
      l = static_cast<int>(tensors.size());
      tensors.push_back({t, p.tensors[t].width, p.tensors[t].height});
    }
    return l;
  }

  void reset_plan() {
    for (const LocalTensor& lt : tensors) local_of[lt.id] = -1;
    tensors.clear();
    ops.clear();
    sinks.clear();
  }

  // Static analysis (RULES.md §1.3 V2, V3, V5; §1.4; §1.5). Appends validity errors; throws
  // SubgraphFatal where the reference evaluator gives up on the subgraph.
  void analyse(const SubgraphSpec& spec, int idx, std::vector<std::string>& errors,
               std::vector<std::string>& warnings) {
    reset_plan();
    const std::string sg = "subgraph " + std::to_string(idx);
    std::vector<int> pos(p.num_ops(), -1), last_pos(p.num_ops(), -1);
    bool duplicate = false;
    for (std::size_t i = 0; i < spec.ops.size(); ++i) {
      OpId o = spec.ops[i];
      if (pos[o] >= 0) duplicate = true;
      else pos[o] = static_cast<int>(i);
      last_pos[o] = static_cast<int>(i);
    }
    if (duplicate) errors.push_back(sg + ": duplicate op indices");
    // Declared order must be topological (the contest repository's issue #75).
    for (std::size_t i = 0; i < spec.ops.size(); ++i) {
      OpId o = spec.ops[i];
      for (TensorId t : p.ops[o].inputs) {
        OpId pr = p.producer[t];
        if (pr >= 0 && last_pos[pr] >= static_cast<int>(i))
          errors.push_back(sg + ": op " + std::to_string(o) + " listed before its producer op " + std::to_string(pr) +
                           " (declared order must be topological)");
      }
    }
    for (OpId o : spec.ops) {
      const Op& op = p.ops[o];
      LocalOp lo{o, op.kind == OpKind::kMatMul, op.base_cost, 0, {}, {}};
      if (lo.matmul) lo.reduction = p.reduction(o);
      for (TensorId t : op.inputs) {
        int l = local(t);
        tensors[l].consumed = true;
        lo.inputs.push_back(l);
      }
      for (TensorId t : op.outputs) {
        int l = local(t);
        tensors[l].produced = true;
        lo.outputs.push_back(l);
      }
      ops.push_back(std::move(lo));
    }
    // V2: connected through tensors produced and consumed inside the subgraph.
    {
      std::vector<int> parent(spec.ops.size());
      for (std::size_t i = 0; i < parent.size(); ++i) parent[i] = static_cast<int>(i);
      auto find = [&](int x) {
        while (parent[x] != x) x = parent[x] = parent[parent[x]];
        return x;
      };
      for (std::size_t i = 0; i < spec.ops.size(); ++i)
        for (TensorId t : p.ops[spec.ops[i]].inputs) {
          OpId pr = p.producer[t];
          if (pr >= 0 && pos[pr] >= 0) parent[find(static_cast<int>(i))] = find(pos[pr]);
        }
      // Duplicate ops are mapped to their first position; count distinct ops only.
      int distinct_roots = 0;
      for (std::size_t i = 0; i < spec.ops.size(); ++i)
        if (pos[spec.ops[i]] == static_cast<int>(i) && find(static_cast<int>(i)) == static_cast<int>(i)) ++distinct_roots;
      if (distinct_roots > 1) errors.push_back(sg + ": ops are not connected through internal tensors");
    }
    // V5: only tensors produced here may be retained.
    for (TensorId t : spec.retain) {
      int l = local_of[t];
      if (l < 0 || !tensors[l].produced) {
        errors.push_back(sg + ": retains tensor " + std::to_string(t) + " which no op of this subgraph produces");
        continue;
      }
      tensors[l].retained = true;
    }
    for (LocalTensor& lt : tensors) {
      const bool graph_out = p.is_graph_output[lt.id];
      lt.ephemeral = lt.produced && lt.consumed && !lt.retained && !graph_out;
      if (lt.ephemeral && opt.spill_ephemeral) {
        for (const Consumer& c : p.consumers[lt.id])
          if (pos[c.op] < 0) lt.ephemeral = false;
      }
      lt.external = lt.consumed && !lt.produced;
      const bool boundary = lt.produced && !lt.ephemeral;
      lt.stored = boundary && (!lt.retained || graph_out);
      if (lt.retained && graph_out)
        warnings.push_back(sg + ": graph output " + std::to_string(lt.id) +
                           " is retained; it is still charged a write-back to slow memory");
    }
    // Sinks: produced here and not consumed here. Sorted by tensor id like the reference.
    for (std::size_t l = 0; l < tensors.size(); ++l)
      if (tensors[l].produced && !tensors[l].consumed) sinks.push_back(static_cast<int>(l));
    std::sort(sinks.begin(), sinks.end(), [&](int a, int b) { return tensors[a].id < tensors[b].id; });
    if (sinks.empty()) throw SubgraphFatal(sg + ": no sink tensor (empty subgraph?)");
    w = spec.granularity.w;
    h = spec.granularity.h;
    k = spec.granularity.k;
    bool has_mm = false;
    for (const LocalOp& o : ops) has_mm |= o.matmul;
    if (!opt.allow_super_native) {
      if (w > p.native_w || h > p.native_h)
        errors.push_back(sg + ": spatial granularity " + std::to_string(w) + "x" + std::to_string(h) + " exceeds native " +
                         std::to_string(p.native_w) + "x" + std::to_string(p.native_h));
      if (has_mm && k > p.native_k)
        errors.push_back(sg + ": k=" + std::to_string(k) + " exceeds native k=" + std::to_string(p.native_k));
    }
    // Unified grid over the sinks. Sinks of different shapes (RULES.md D13, legal per the
    // organizer) share the grid of the largest extents; each sink is clipped to its own shape,
    // so a smaller sink simply has fewer tiles.
    grid_w = grid_h = 0;
    for (int s : sinks) {
      grid_w = std::max(grid_w, tensors[s].width);
      grid_h = std::max(grid_h, tensors[s].height);
    }
    nx = ceil_div(grid_w, w);
    ny = ceil_div(grid_h, h);
    req.resize(std::max(req.size(), tensors.size()));
  }

  Rect tile_rect(int64_t ti) const {
    int64_t ty = ti / nx, tx = ti % nx;
    return {ty * h, std::min((ty + 1) * h, grid_h), tx * w, std::min((tx + 1) * w, grid_w)};
  }

  void sink_seeds(const Rect& r, std::vector<Slice>& seeds) const {
    seeds.clear();
    for (int s : sinks) {
      const LocalTensor& t = tensors[s];
      Rect c{r.r0, std::min(r.r1, t.height), r.c0, std::min(r.c1, t.width)};
      if (c.r0 >= c.r1 || c.c0 >= c.c1) continue;  // tile outside a smaller sink (D13)
      seeds.push_back({s, c});
    }
  }

  void add_request(int t, const Rect& r, Ctx ctx) {
    auto& v = req[t];
    for (const Request& q : v) {
      if (q.rect == r) {
        if (q.ctx != ctx) throw SubgraphFatal("tensor " + std::to_string(tensors[t].id) + " requested in conflicting contexts");
        return;
      }
    }
    if (v.empty()) req_touched.push_back(t);
    v.push_back({r, ctx});
  }

  static bool contains(const std::vector<Slice>& v, int t, const Rect& r) {
    for (const Slice& s : v)
      if (s.t == t && s.rect == r) return true;
    return false;
  }

  // One step of backward region propagation (RULES.md §1.6-1.7).
  void propagate(const std::vector<Slice>& seeds, int64_t k_lo, int64_t k_hi, const std::vector<Slice>& prev_eph) {
    for (int t : req_touched) req[t].clear();
    req_touched.clear();
    for (const Slice& s : seeds) add_request(s.t, s.rect, Ctx::kTile);
    compute = 0;
    ext.clear();
    produced.clear();
    looped.clear();
    looped_ops.clear();
    eph_now.clear();
    for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
      const LocalOp& o = *it;
      for (int t : o.outputs) {
        // Requests of t may grow while we iterate (only through inputs, which differ from
        // outputs in a DAG), so index rather than hold iterators.
        for (std::size_t qi = 0; qi < req[t].size(); ++qi) {
          const Rect r = req[t][qi].rect;
          const Ctx ctx = req[t][qi].ctx;
          const bool k_looped = o.matmul && ctx == Ctx::kTile;
          const bool eph = tensors[t].ephemeral;
          if (eph && !k_looped && !opt.strict_ephemeral && contains(prev_eph, t, r)) {
            eph_now.push_back({t, r});  // computed in the previous step, still there (the contest repository's issue #85)
            continue;
          }
          if (eph && !k_looped) eph_now.push_back({t, r});
          const int64_t rh = r.r1 - r.r0, rw = r.c1 - r.c0;
          if (o.matmul) {
            const int64_t K = o.reduction;
            Rect lr, rr;
            if (k_looped) {
              // Output-stationary accumulation over k-slices of its own reduction.
              if (k_hi > K) throw SubgraphFatal("k-slice exceeds K of op " + std::to_string(o.id));
              const double keff = static_cast<double>(k_hi - k_lo);
              compute += opt.mm_compute == MatMulCompute::kOpK ? o.base * keff / static_cast<double>(K)
                                                               : o.base * keff / static_cast<double>(p.native_k);
              lr = {r.r0, r.r1, k_lo, k_hi};
              rr = {k_lo, k_hi, r.c0, r.c1};
              looped.push_back({t, r});
              looped_ops.push_back(o.id);
              produced.push_back({t, r, true});
            } else {
              // A derived strip with the full reduction, priced by its area (Example 5).
              double c = o.base * static_cast<double>(rh * rw) / static_cast<double>(p.native_h * p.native_w);
              if (opt.mm_compute == MatMulCompute::kNative) c *= static_cast<double>(K) / static_cast<double>(p.native_k);
              compute += c;
              lr = {r.r0, r.r1, 0, K};
              rr = {0, K, r.c0, r.c1};
              produced.push_back({t, r, false});
            }
            add_request(o.inputs[0], lr, Ctx::kStrip);
            add_request(o.inputs[1], rr, Ctx::kStrip);
          } else {
            // Pointwise: one native pass per native tile covered; smaller regions are padded.
            compute += o.base * static_cast<double>(ceil_div(rh, p.native_h) * ceil_div(rw, p.native_w));
            produced.push_back({t, r, false});
            for (int ti : o.inputs) add_request(ti, r, ctx);
          }
        }
      }
    }
    for (int t : req_touched)
      if (tensors[t].external)
        for (const Request& q : req[t]) ext.push_back({t, q.rect});
  }

  SubgraphEvaluation run(const SubgraphSpec& spec, int idx, MemoryState& state, std::vector<std::string>& errors,
                         std::vector<std::string>& warnings) {
    SubgraphEvaluation ev;
    ev.granularity = spec.granularity;
    ev.reported_latency = spec.reported_latency;
    const std::size_t errors_before = errors.size();
    const std::string sg = "subgraph " + std::to_string(idx);
    try {
      analyse(spec, idx, errors, warnings);
      simulate(spec, idx, state, errors, ev);
      ev.evaluated = true;
    } catch (const SubgraphFatal& e) {
      std::string msg = e.what();
      if (msg.rfind("subgraph ", 0) != 0) msg = sg + ": " + msg;
      errors.push_back(msg);
      ev.evaluated = false;
    }
    ev.errors = static_cast<int>(errors.size() - errors_before);
    if (ev.evaluated) {
      for (const LocalTensor& lt : tensors)
        if (lt.stored) state.in_slow[lt.id] = 1;
      state.resident_prev.clear();
      for (const LocalTensor& lt : tensors)
        if (lt.retained) state.resident_prev.push_back(lt.id);
    } else {
      // Like the reference: what the subgraph asked to retain is taken at its word.
      state.resident_prev = spec.retain;
    }
    return ev;
  }

  void simulate(const SubgraphSpec& spec, int idx, MemoryState& state, std::vector<std::string>& errors,
                SubgraphEvaluation& ev) {
    const std::string sg = "subgraph " + std::to_string(idx);
    // V4: inputs must be in slow memory or retained by the previous subgraph.
    {
      std::vector<TensorId> missing;
      for (const LocalTensor& lt : tensors) {
        if (!lt.external) continue;
        bool resident = std::find(state.resident_prev.begin(), state.resident_prev.end(), lt.id) != state.resident_prev.end();
        if (!resident && !state.in_slow[lt.id]) missing.push_back(lt.id);
      }
      std::sort(missing.begin(), missing.end());
      for (TensorId t : missing)
        errors.push_back(sg + ": input tensor " + std::to_string(t) + " is not available (not in slow memory" +
                         (idx == 0 ? std::string(", and no subgraph runs before this one to retain it)")
                                   : " and not retained by subgraph " + std::to_string(idx - 1) + ")"));
    }
    const int64_t ntiles = nx * ny;
    // V7: traversal order (checked before anything is allocated for it).
    const std::vector<int64_t>* order = spec.traversal ? &*spec.traversal : nullptr;
    if (order) {
      bool perm = static_cast<int64_t>(order->size()) == ntiles;
      if (perm) {
        std::vector<char> seen(order->size(), 0);
        for (int64_t x : *order) {
          if (x < 0 || x >= ntiles || seen[x]) {
            perm = false;
            break;
          }
          seen[x] = 1;
        }
      }
      if (!perm) throw SubgraphFatal(sg + ": traversal order is not a permutation of 0.." + std::to_string(ntiles - 1));
    }
    // Dry run on tile 0 to find the k-looped MatMuls and their shared K.
    std::vector<Slice> seeds, no_eph;
    sink_seeds(tile_rect(0), seeds);
    propagate(seeds, 0, 0, no_eph);
    int64_t Kl = 0, nk = 1, kstep = 0;
    {
      std::vector<int64_t> ks;
      for (OpId o : looped_ops) ks.push_back(p.reduction(o));
      std::sort(ks.begin(), ks.end());
      ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
      if (ks.size() > 1) throw SubgraphFatal(sg + ": k-looped MatMuls with different reduction sizes");
      if (!ks.empty()) {
        Kl = ks[0];
        if (k > Kl)
          errors.push_back(sg + ": k=" + std::to_string(k) + " exceeds the reduction dimension K=" + std::to_string(Kl) +
                           " of its MatMul");
        kstep = std::min(k, Kl);
        nk = ceil_div(Kl, kstep);
      }
    }
    if (nk > opt.max_steps / ntiles)
      throw SubgraphFatal(sg + ": " + std::to_string(ntiles * nk) + " steps exceeds evaluator limit");
    ev.tiles = ntiles;
    ev.k_steps = nk;

    // Tensors retained by the previous subgraph occupy memory for the whole subgraph.
    std::vector<TensorId> resident = state.resident_prev;
    std::sort(resident.begin(), resident.end());
    resident.erase(std::unique(resident.begin(), resident.end()), resident.end());
    std::vector<char> resident_full(tensors.size(), 0);
    Elements res_area = 0;
    for (TensorId t : resident) {
      const int l = local_of[t];
      if (opt.resident_only_if_consumed && !(l >= 0 && tensors[l].external)) continue;
      if (l >= 0) resident_full[l] = 1;
      res_area += p.tensors[t].size();
    }

    std::vector<Slice> prev_slices, cur, cur_ws, prev_eph, looped_seeds;
    // Regions already retained / stored, per tensor: a set (a linear search made many-tile
    // simulations quadratic in the tile count), with the area each covers so far.
    std::vector<std::unordered_set<Rect, RectHash>> retained_acc(tensors.size()), stored_rects(tensors.size());
    std::vector<Elements> retained_sum(tensors.size(), 0), stored_sum(tensors.size(), 0);
    Elements retained_area = 0;
    double lat = 0, tot_compute = 0, tot_mem = 0;
    int64_t mem_bound = 0;
    Elements peak = 0, tot_load = 0, tot_store = 0;
    const bool reset_each_tile = opt.no_reuse_for_null_traversal && !spec.traversal;

    bool cut = false;  // search mode: stopped early
    for (int64_t seq = 0; seq < ntiles && !cut; ++seq) {
      const Rect tile = tile_rect(order ? (*order)[seq] : seq);
      if (reset_each_tile) prev_slices.clear();
      bool have_looped_seeds = false;
      for (int64_t ks = 0; ks < nk; ++ks) {
        int64_t k_lo = 0, k_hi = 0;
        if (nk > 1) {
          k_lo = ks * kstep;
          k_hi = std::min((ks + 1) * kstep, Kl);
        } else if (Kl) {
          k_hi = Kl;
        }
        const bool last = ks == nk - 1;
        if (nk > 1 && !last) {
          // Before the last k-slice only the k-looped MatMuls (and what feeds them) run; the
          // epilogue fires once per tile at the last k-slice (the contest repository's issue #82).
          if (!have_looped_seeds) {
            sink_seeds(tile, seeds);
            propagate(seeds, 0, Kl, no_eph);
            looped_seeds = looped;
            have_looped_seeds = true;
          }
          propagate(looped_seeds, k_lo, k_hi, prev_eph);
        } else {
          sink_seeds(tile, seeds);
          propagate(seeds, k_lo, k_hi, prev_eph);
        }
        prev_eph.swap(eph_now);

        // Loads: slices not resident in the previous step (exact match or whole tensor).
        Elements load = 0;
        cur.clear();
        for (const Slice& s : ext) {
          if (resident_full[s.t]) continue;
          if (contains(cur, s.t, s.rect)) continue;
          cur.push_back(s);
          const Rect full = tensors[s.t].full();
          if (contains(prev_slices, s.t, s.rect) || contains(prev_slices, s.t, full)) continue;
          load += s.rect.area();
        }
        // A whole tensor present now serves its partial slices; a whole tensor present in the
        // previous step and still needed (partially) stays.
        cur_ws.clear();
        for (const Slice& s : cur) {
          const Rect full = tensors[s.t].full();
          const bool t_full_now = contains(cur, s.t, full);
          if (!t_full_now || s.rect == full) cur_ws.push_back(s);
        }
        for (const Slice& s : cur) {
          const Rect full = tensors[s.t].full();
          if (contains(cur, s.t, full)) continue;
          if (contains(prev_slices, s.t, full) && !contains(cur_ws, s.t, full)) cur_ws.push_back({s.t, full});
        }
        prev_slices = cur_ws;

        // Stores, output tiles and accumulators.
        Elements store = 0, out_ws = 0;
        for (const ProducedRegion& pr : produced) {
          const LocalTensor& lt = tensors[pr.t];
          if (lt.ephemeral) {
            if (pr.looped && nk > 1) out_ws += pr.rect.area();  // split-k partial sums live in fast memory
            continue;
          }
          if (lt.retained) {
            if (retained_acc[pr.t].insert(pr.rect).second) {
              retained_area += pr.rect.area();
              retained_sum[pr.t] += pr.rect.area();
            }
          } else {
            out_ws += pr.rect.area();
          }
          if (lt.stored && (!pr.looped || last)) {
            if (stored_rects[pr.t].insert(pr.rect).second) {
              store += pr.rect.area();
              stored_sum[pr.t] += pr.rect.area();
            }
          }
        }
        Elements ws = res_area + retained_area + out_ws;
        for (const Slice& s : cur_ws) ws += s.rect.area();
        peak = std::max(peak, ws);
        const double mem = static_cast<double>(load + store) / p.slow_memory_bandwidth;
        lat += std::max(compute, mem);
        tot_mem += mem;
        mem_bound += mem > compute;
        tot_load += load;
        tot_store += store;
        tot_compute += compute;
        if ((stop_on_oom && peak > p.fast_memory_capacity) || lat > latency_cutoff) {
          cut = true;
          break;
        }
      }
    }
    ev.cut_short = cut;
    // Bounded inputs keep latencies finite (problem.h); an overflow would still be refused here.
    if (!std::isfinite(lat)) errors.push_back(sg + ": latency is not a finite number (bandwidth or costs out of range)");
    ev.latency = lat;
    ev.peak_working_set = peak;
    ev.load_elements = tot_load;
    ev.store_elements = tot_store;
    ev.compute = tot_compute;
    ev.memory = tot_mem;
    ev.memory_bound_steps = mem_bound;
    if (peak > p.fast_memory_capacity)
      errors.push_back(sg + ": working set " + std::to_string(peak) + " exceeds fast_memory_capacity " +
                       std::to_string(p.fast_memory_capacity) + " (OOM)");
    for (std::size_t l = 0; l < tensors.size() && !cut; ++l) {
      const LocalTensor& lt = tensors[l];
      if (lt.stored) {
        const Elements a = stored_sum[l];
        if (a < p.tensors[lt.id].size())
          errors.push_back(sg + ": output tensor " + std::to_string(lt.id) + " only partially produced (" + std::to_string(a) +
                           " of " + std::to_string(p.tensors[lt.id].size()) + " elements)");
      }
      if (lt.retained) {
        const Elements a = retained_sum[l];
        if (a < p.tensors[lt.id].size())
          errors.push_back(sg + ": retained tensor " + std::to_string(lt.id) + " only partially produced");
      }
    }
  }
};

Evaluator::Evaluator(const Problem& problem, const RuleOptions& options)
    : problem_(problem), options_(options), impl_(new Impl(problem, options_)) {}

Evaluator::~Evaluator() { delete impl_; }

MemoryState Evaluator::initial_state() const {
  MemoryState s;
  s.in_slow.assign(problem_.num_tensors(), 0);
  for (int t = 0; t < problem_.num_tensors(); ++t) s.in_slow[t] = problem_.is_graph_input[t];
  return s;
}

SubgraphEvaluation Evaluator::evaluate_subgraph(const SubgraphSpec& spec, int index, MemoryState& state,
                                                std::vector<std::string>& errors, std::vector<std::string>& warnings) {
  return impl_->run(spec, index, state, errors, warnings);
}

void Evaluator::set_early_exit(bool stop_on_oom, double latency_cutoff) {
  impl_->stop_on_oom = stop_on_oom;
  impl_->latency_cutoff = latency_cutoff;
}

Evaluation Evaluator::evaluate(const Solution& solution) {
  Evaluation out;
  std::vector<char> covered(problem_.num_ops(), 0);
  for (const SubgraphSpec& sg : solution.subgraphs)
    for (OpId o : sg.ops) covered[o] = 1;
  for (int o = 0; o < problem_.num_ops(); ++o)
    if (!covered[o]) out.errors.push_back("op " + std::to_string(o) + " is not in any subgraph");
  MemoryState state = initial_state();
  for (std::size_t i = 0; i < solution.subgraphs.size(); ++i) {
    SubgraphEvaluation ev = evaluate_subgraph(solution.subgraphs[i], static_cast<int>(i), state, out.errors, out.warnings);
    if (ev.evaluated) out.total += ev.latency;
    out.subgraphs.push_back(ev);
  }
  for (int t = 0; t < problem_.num_tensors(); ++t)
    if (problem_.is_graph_output[t] && !state.in_slow[t])
      out.errors.push_back("graph output tensor " + std::to_string(t) + " never written to slow memory");
  out.valid = out.errors.empty();
  return out;
}

Evaluation evaluate(const Problem& problem, const Solution& solution, const RuleOptions& options) {
  Evaluator ev(problem, options);
  return ev.evaluate(solution);
}

bool latency_close(double a, double b) {
  return std::fabs(a - b) <= std::max(1e-3, 1e-6 * std::max(std::fabs(a), std::fabs(b)));
}

}  // namespace sp::mlsys
