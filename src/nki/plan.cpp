#include "nki/plan.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <queue>

#include "alloc/solver.h"
#include "core/deadline.h"
#include "nki/check.h"

namespace sp::nki {

namespace {

constexpr std::size_t kMaxSpans = 1'000'000;  // recorded per timeline (pictures use far fewer)

// Program-order facts the search needs, computed once.
struct Analysis {
  // Per tensor: live intervals [write event, last read event] of its logical tiles, by start.
  struct Interval {
    int64_t start, end, block;
  };
  std::vector<std::vector<Interval>> intervals;
  std::vector<int64_t> first, last;  // per tensor: first and last event touching it (-1: never)
  // Per tensor: the union of its intervals (sorted, disjoint). A tensor used only inside a loop
  // body is dead between iterations, and other tensors may use its bytes there.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> live;
  std::vector<char> hbm_raw;         // per HBM tensor: some block is read after being written
  std::string uninitialized;         // a read-before-write, described (plans cannot fix it)
};

Analysis analyse(const Kernel& k) {
  const int nt = static_cast<int>(k.tensors.size());
  Analysis an;
  an.intervals.resize(nt);
  an.first.assign(nt, -1);
  an.last.assign(nt, -1);
  an.hbm_raw.assign(nt, 0);
  an.live.resize(nt);
  std::vector<int64_t> base(nt + 1, 0);
  for (int t = 0; t < nt; ++t) base[t + 1] = base[t] + k.tensors[t].num_blocks();
  std::vector<int64_t> open_start(static_cast<std::size_t>(base[nt]), -1), open_end(open_start.size(), -1);
  int64_t ev = 0;
  for_each_execution(k, [&](int ii, const std::vector<int64_t>& vals) {
    const Instruction& ins = k.instrs[ii];
    for (const Access& a : ins.reads) {
      int64_t b = eval(a.linear, vals);
      std::size_t f = static_cast<std::size_t>(base[a.tensor] + b);
      if (an.first[a.tensor] < 0) an.first[a.tensor] = ev;
      an.last[a.tensor] = ev;
      if (open_start[f] >= 0) {
        open_end[f] = ev;
        if (k.tensors[a.tensor].buffer == Memory::kHbm) an.hbm_raw[a.tensor] = 1;
      } else if (an.uninitialized.empty() && !k.tensors[a.tensor].arrives_written())
        an.uninitialized = "tensor " + k.tensors[a.tensor].name + " block " +
                           block_string(k.tensors[a.tensor].unflatten(b)) + " is read by " + ins.name + " at " +
                           iteration_string(k, ins, vals) + " before anything writes it";
    }
    for (const Access& a : ins.writes) {
      int64_t b = eval(a.linear, vals);
      std::size_t f = static_cast<std::size_t>(base[a.tensor] + b);
      if (an.first[a.tensor] < 0) an.first[a.tensor] = ev;
      an.last[a.tensor] = ev;
      // PSUM += continues the accumulation group: the tile's lifetime goes on.
      if (a.accumulate && open_start[f] >= 0) {
        open_end[f] = ev;
        continue;
      }
      if (open_start[f] >= 0 && k.tensors[a.tensor].buffer != Memory::kHbm)
        an.intervals[a.tensor].push_back({open_start[f], open_end[f], b});
      open_start[f] = open_end[f] = ev;
    }
    ++ev;
    return true;
  });
  for (int t = 0; t < nt; ++t) {
    if (k.tensors[t].buffer == Memory::kHbm) continue;  // HBM blocks are not planned
    for (int64_t b = 0; b < k.tensors[t].num_blocks(); ++b) {
      std::size_t f = static_cast<std::size_t>(base[t] + b);
      if (open_start[f] >= 0) an.intervals[t].push_back({open_start[f], open_end[f], b});
    }
    std::sort(an.intervals[t].begin(), an.intervals[t].end(),
              [](const Analysis::Interval& x, const Analysis::Interval& y) { return x.start < y.start; });
    auto& lv = an.live[t];
    for (const auto& x : an.intervals[t])
      if (!lv.empty() && x.start <= lv.back().second + 1) lv.back().second = std::max(lv.back().second, x.end);
      else lv.push_back({x.start, x.end});
    if (lv.size() > 100'000) lv.clear();  // packing compares these per pair; the span then stands for them
  }
  return an;
}

// Modulo allocation with n tiles is legal iff no logical tile is written into a physical tile
// while another logical tile mapped there still has a read pending.
bool modulo_legal(const std::vector<Analysis::Interval>& iv, int64_t n) {
  std::vector<int64_t> max_end(static_cast<std::size_t>(n), -1);
  for (const auto& x : iv) {
    int64_t& m = max_end[static_cast<std::size_t>(x.block % n)];
    if (x.start < m) return false;
    m = std::max(m, x.end);
  }
  return true;
}

// A candidate: tile counts per tensor, addresses, and the sharing they imply.
struct CandidateAllocation {
  std::vector<int> tiles;                 // per tensor (HBM: one per block)
  std::vector<Bytes> offset;              // per tensor: SBUF byte / PSUM bank
  std::vector<Partition> part;            // per tensor: first partition
  std::vector<std::vector<int>> shares;   // per tensor: other tensors whose bytes intersect
  std::vector<std::vector<int>> map;      // per tensor: block -> tile; empty = modulo (block mod tiles)
  // Per physical tile (tensors' tiles in order): other tensors' tiles whose bytes meet it. Empty:
  // every tile of a sharing tensor counts (coarse; only extra waits).
  std::vector<std::vector<int64_t>> tile_shares;
  Bytes sbuf_top = 0, psum_top = 0;
  int64_t tile(TensorId t, int64_t block) const {
    return map.empty() || map[t].empty() ? block % tiles[t] : map[t][static_cast<std::size_t>(block)];
  }
};

struct Rect {
  Partition p0, p1;
  Bytes b0, b1;
};
bool meet(const Rect& a, const Rect& b) { return a.p0 < b.p1 && b.p0 < a.p1 && a.b0 < b.b1 && b.b0 < a.b1; }

// Fills cand.tile_shares from `rect(t, i)` (tile i of tensor t) for the tensors cand.shares pairs, so
// a write waits only for the tiles it overwrites: tensors whose lifetimes interleave share
// bytes every iteration, and a wait on all of the other's tiles would serialise them.
template <class R>
void link_tiles(CandidateAllocation& cand, R rect) {
  const std::size_t nt = cand.tiles.size();
  std::vector<int64_t> base(nt + 1, 0);
  int64_t work = 0;
  for (std::size_t t = 0; t < nt; ++t) {
    base[t + 1] = base[t] + cand.tiles[t];
    for (int u : cand.shares[t]) work += static_cast<int64_t>(cand.tiles[t]) * cand.tiles[u];
  }
  cand.tile_shares.clear();
  if (work > 4'000'000) return;  // coarse
  cand.tile_shares.assign(static_cast<std::size_t>(base[nt]), {});
  for (std::size_t t = 0; t < nt; ++t)
    for (int u : cand.shares[t])
      for (int i = 0; i < cand.tiles[t]; ++i)
        for (int j = 0; j < cand.tiles[u]; ++j)
          if (meet(rect(static_cast<int>(t), i), rect(u, j)))
            cand.tile_shares[static_cast<std::size_t>(base[t] + i)].push_back(base[u] + j);
}

struct Planner {
  const Kernel& k;
  const PlanOptions& opt;
  Analysis an;
  std::vector<Bytes> stride;  // SBUF tile stride (aligned); 1 bank for PSUM
  int evaluations = 0;
  Scheduler scheduler = Scheduler::kDataflow;  // the model in use (see plan_kernel)
  std::vector<std::vector<int>> fixed_map;              // kept tensors: block -> tile (else empty)
  std::vector<std::vector<TilePlacement>> fixed_tiles;  // kept tensors: distinct placements
  mutable EngineAnswers answers;                        // the allocation engine's answers so far

  bool planned(int t) const { return k.tensors[t].buffer != Memory::kHbm; }
  // HBM tensors are tracked on the timeline only when a block is read back after a write (RAW);
  // otherwise they order nothing, and a four-million-block input costs nothing per evaluation.
  bool tracked(int t) const { return planned(t) || an.hbm_raw[t]; }

  Result<CandidateAllocation> place(const std::vector<int>& tiles) const {
    CandidateAllocation cand;
    cand.tiles = tiles;
    const int nt = static_cast<int>(k.tensors.size());
    cand.offset.assign(nt, 0);
    cand.part.assign(nt, 0);
    cand.shares.assign(nt, {});
    cand.map = fixed_map;
    for (Memory buf : {Memory::kSbuf, Memory::kPsum}) {
      std::vector<int> ids;
      std::vector<BufferRequest> reqs;
      const bool sbuf = buf == Memory::kSbuf;
      for (int t = 0; t < nt; ++t)
        if (k.tensors[t].buffer == buf && !fixed_tiles[t].empty()) {
          // A kept tensor: each of its physical tiles is an obstacle where the input put it.
          const Tensor& ten = k.tensors[t];
          for (const TilePlacement& p : fixed_tiles[t]) {
            ids.push_back(t);
            BufferRequest r{ten.fbytes(), std::max<int64_t>(an.first[t], 0), std::max<int64_t>(an.last[t], 0), ten.pdim,
                            1, true, p.start_partition, p.byte_addr, an.live[t]};
            if (!sbuf) {  // in banks
              const Bytes bb = k.hw.psum_bank_bytes;
              r.at_offset = p.byte_addr / bb;
              r.size = (p.byte_addr % bb + ten.fbytes() + bb - 1) / bb;
            }
            reqs.push_back(r);
          }
        } else if (k.tensors[t].buffer == buf) {
          ids.push_back(t);
          const Partition pd = k.tensors[t].pdim;
          // SBUF tiles may start at any allowed quadrant; PSUM tiles start at partition 0.
          const Partition step = !sbuf ? k.hw.partitions : pd <= 32 ? 32 : pd <= 64 ? 64 : 128;
          reqs.push_back({tiles[t] * stride[t], std::max<int64_t>(an.first[t], 0), std::max<int64_t>(an.last[t], 0),
                          sbuf ? pd : k.hw.partitions, step, false, 0, 0, an.live[t]});
        }
      if (ids.empty()) continue;
      auto off = assign_offsets(reqs, sbuf ? k.hw.sbuf_usable() : k.hw.psum_banks, sbuf ? k.hw.sbuf_min_align : 1,
                                k.hw.partitions, &answers);
      if (!off) return off.error();
      for (std::size_t i = 0; i < ids.size(); ++i) {
        const BufferPlacement& a = (*off)[i];
        if (!reqs[i].fixed) {
          cand.offset[ids[i]] = a.offset;
          cand.part[ids[i]] = a.partition;
        }
        (sbuf ? cand.sbuf_top : cand.psum_top) = std::max(sbuf ? cand.sbuf_top : cand.psum_top, a.offset + reqs[i].size);
        for (std::size_t j = 0; j < ids.size(); ++j) {
          const BufferPlacement& b = (*off)[j];
          if (ids[j] != ids[i] && a.offset < b.offset + reqs[j].size && b.offset < a.offset + reqs[i].size &&
              a.partition < b.partition + reqs[j].partitions && b.partition < a.partition + reqs[i].partitions &&
              std::find(cand.shares[ids[i]].begin(), cand.shares[ids[i]].end(), ids[j]) == cand.shares[ids[i]].end())
            cand.shares[ids[i]].push_back(ids[j]);
        }
      }
    }
    link_tiles(cand, [&](int t, int i) -> Rect {
      const Tensor& ten = k.tensors[t];
      const bool psum = ten.buffer == Memory::kPsum;
      if (!fixed_tiles[t].empty()) {
        const TilePlacement& f = fixed_tiles[t][static_cast<std::size_t>(i)];
        return {f.start_partition, f.start_partition + ten.pdim, f.byte_addr, f.byte_addr + ten.fbytes()};
      }
      if (psum) {  // whole banks, all partitions
        const Bytes bb = k.hw.psum_bank_bytes;
        return {0, k.hw.partitions, (cand.offset[t] + i) * bb, (cand.offset[t] + i + 1) * bb};
      }
      const Bytes b0 = cand.offset[t] + i * stride[t];
      return {cand.part[t], cand.part[t] + ten.pdim, b0, b0 + ten.fbytes()};
    });
    return cand;
  }

  // Engine timeline: each engine queue runs its instructions in program order; an instruction
  // starts when its queue is free, the tiles it reads have been written (RAW), and the physical tiles
  // it writes are no longer read or written by earlier instructions (WAR/WAW), including other
  // tensors sharing those bytes.
  Timeline simulate(const CandidateAllocation& cand, bool record) {
    ++evaluations;
    return scheduler == Scheduler::kDataflow ? simulate_dataflow(cand, record) : simulate_in_order(cand, record);
  }

  Timeline simulate_in_order(const CandidateAllocation& cand, bool record) {
    const int nt = static_cast<int>(k.tensors.size());
    std::vector<int64_t> base(nt + 1, 0);
    for (int t = 0; t < nt; ++t) base[t + 1] = base[t] + cand.tiles[t];
    std::vector<Cycles> write_fin(static_cast<std::size_t>(base[nt]), 0), read_fin(write_fin.size(), 0);
    std::vector<Cycles> region_use(nt, 0);
    Timeline tl;
    std::array<std::vector<Cycles>, kNumEngines> lane_free;
    for (int e = 0; e < kNumEngines; ++e) {
      tl.lanes[e] = e == static_cast<int>(Engine::kDma) ? k.hw.dma_queues : 1;
      lane_free[e].assign(static_cast<std::size_t>(tl.lanes[e]), 0);
    }
    tl.war_stall.assign(nt, 0);
    int64_t ev = 0;
    for_each_execution(k, [&](int ii, const std::vector<int64_t>& vals) {
      const Instruction& ins = k.instrs[ii];
      const int e = static_cast<int>(ins.engine);
      const int64_t exec = ev++;
      // Each queue runs in program order; an instruction takes the queue that frees up first.
      auto lane = std::min_element(lane_free[e].begin(), lane_free[e].end());
      Cycles ready = *lane;
      for (const Access& a : ins.reads) {
        if (!cand.tiles[a.tensor]) continue;
        int64_t p = base[a.tensor] + cand.tile(a.tensor, eval(a.linear, vals));
        ready = std::max(ready, write_fin[p]);
      }
      Cycles war = 0;
      int war_tensor = -1;
      for (const Access& a : ins.writes) {
        if (!cand.tiles[a.tensor]) continue;
        int64_t p = base[a.tensor] + cand.tile(a.tensor, eval(a.linear, vals));
        Cycles w = std::max(read_fin[p], write_fin[p]);
        if (!cand.tile_shares.empty()) {
          for (int64_t q : cand.tile_shares[static_cast<std::size_t>(p)]) w = std::max({w, read_fin[q], write_fin[q]});
        } else {
          for (int u : cand.shares[a.tensor]) w = std::max(w, region_use[u]);
        }
        if (w > war) war = w, war_tensor = a.tensor;
      }
      if (war > ready && war_tensor >= 0) tl.war_stall[war_tensor] += war - ready;
      const Cycles start = std::max(ready, war);
      const Cycles end = start + ins.cost;
      for (const Access& a : ins.reads) {
        if (!cand.tiles[a.tensor]) continue;
        int64_t p = base[a.tensor] + cand.tile(a.tensor, eval(a.linear, vals));
        read_fin[p] = std::max(read_fin[p], end);
        region_use[a.tensor] = std::max(region_use[a.tensor], end);
      }
      for (const Access& a : ins.writes) {
        if (!cand.tiles[a.tensor]) continue;
        int64_t p = base[a.tensor] + cand.tile(a.tensor, eval(a.linear, vals));
        write_fin[p] = end;
        region_use[a.tensor] = std::max(region_use[a.tensor], end);
      }
      *lane = end;
      tl.busy[e] += ins.cost;
      tl.makespan = std::max(tl.makespan, end);
      if (record && tl.spans.size() < kMaxSpans)
        tl.spans.push_back({ii, static_cast<int>(lane - lane_free[e].begin()), start, end, exec});
      return true;
    });
    return tl;
  }

  // Dataflow timeline: the dependency graph of the program (RAW, WAR and WAW on physical tiles,
  // in program order, plus tensors sharing bytes) is list-scheduled on the engine queues: a
  // free queue takes the ready instruction that can start first (ties: program order). This is
  // what a compiler may do with affine_range iterations; tile reuse is what orders them.
  Timeline simulate_dataflow(const CandidateAllocation& cand, bool record) {
    const int nt = static_cast<int>(k.tensors.size());
    std::vector<int64_t> base(nt + 1, 0);
    for (int t = 0; t < nt; ++t) base[t + 1] = base[t] + cand.tiles[t];
    const std::size_t ntiles = static_cast<std::size_t>(base[nt]);
    std::vector<int64_t> last_writer(ntiles, -1);
    std::vector<std::vector<int64_t>> readers(ntiles);  // since the last write
    std::vector<int64_t> synced(ntiles, -1);  // last write of the tile ordered after the sharers' accesses
    struct Edge {
      int64_t from, to;
      int tensor;  // >= 0: a WAR/WAW edge that more tiles of this tensor would remove
    };
    std::vector<Edge> edges;
    std::vector<int> instr_of;
    for_each_execution(k, [&](int ii, const std::vector<int64_t>& vals) {
      const int64_t ev = static_cast<int64_t>(instr_of.size());
      instr_of.push_back(ii);
      const Instruction& ins = k.instrs[ii];
      for (const Access& a : ins.reads) {
        if (!cand.tiles[a.tensor]) continue;
        std::size_t p = static_cast<std::size_t>(base[a.tensor] + cand.tile(a.tensor, eval(a.linear, vals)));
        if (last_writer[p] >= 0) edges.push_back({last_writer[p], ev, -1});
      }
      for (const Access& a : ins.writes) {
        if (!cand.tiles[a.tensor]) continue;
        std::size_t p = static_cast<std::size_t>(base[a.tensor] + cand.tile(a.tensor, eval(a.linear, vals)));
        const int who = planned(a.tensor) ? a.tensor : -1;
        if (last_writer[p] >= 0 && last_writer[p] != ev) edges.push_back({last_writer[p], ev, who});
        for (int64_t r : readers[p])
          if (r != ev) edges.push_back({r, ev, who});
        // Every write waits for the accesses of tensors sharing its bytes (their lifetimes may
        // interleave with this tensor's, iteration by iteration) made since this tile's last
        // such write, which the WAW edge already orders before this one.
        if (!cand.shares[a.tensor].empty()) {
          const int64_t since = synced[p];
          auto after = [&](int64_t q) {
            if (last_writer[q] > since && last_writer[q] != ev) edges.push_back({last_writer[q], ev, -1});
            for (int64_t r : readers[q])
              if (r > since && r != ev) edges.push_back({r, ev, -1});
          };
          if (!cand.tile_shares.empty()) {
            for (int64_t q : cand.tile_shares[p]) after(q);
          } else {
            for (int u : cand.shares[a.tensor])
              for (int64_t q = base[u]; q < base[u + 1]; ++q) after(q);
          }
          synced[p] = ev;
        }
      }
      // Reads are recorded after the writes' edges: an instruction never waits for itself.
      for (const Access& a : ins.reads) {
        if (!cand.tiles[a.tensor]) continue;
        std::size_t p = static_cast<std::size_t>(base[a.tensor] + cand.tile(a.tensor, eval(a.linear, vals)));
        readers[p].push_back(ev);
      }
      for (const Access& a : ins.writes) {
        if (!cand.tiles[a.tensor]) continue;
        std::size_t p = static_cast<std::size_t>(base[a.tensor] + cand.tile(a.tensor, eval(a.linear, vals)));
        last_writer[p] = ev;
        readers[p].clear();
        for (const Access& r : ins.reads)  // a read-modify-write keeps its own read pending for later writers
          if (r.tensor == a.tensor && base[r.tensor] + cand.tile(r.tensor, eval(r.linear, vals)) == static_cast<int64_t>(p))
            readers[p].push_back(ev);
      }
      return true;
    });
    const std::size_t n = instr_of.size();
    // Successor lists (CSR) and in-degrees.
    std::vector<int64_t> first(n + 1, 0);
    for (const Edge& e : edges) ++first[static_cast<std::size_t>(e.from) + 1];
    for (std::size_t i = 0; i < n; ++i) first[i + 1] += first[i];
    std::vector<int64_t> fill(first.begin(), first.end() - 1);
    std::vector<std::size_t> succ(edges.size());
    for (std::size_t i = 0; i < edges.size(); ++i) succ[static_cast<std::size_t>(fill[edges[i].from]++)] = i;
    std::vector<int> indeg(n, 0);
    for (const Edge& e : edges) ++indeg[static_cast<std::size_t>(e.to)];
    std::vector<Cycles> raw_ready(n, 0), war_ready(n, 0), finish(n, 0);
    std::vector<int> war_tensor(n, -1);

    Timeline tl;
    tl.war_stall.assign(nt, 0);
    std::array<std::vector<Cycles>, kNumEngines> lane_free;
    using Item = std::pair<Cycles, int64_t>;  // (earliest start from dependencies, execution)
    std::array<std::priority_queue<Item, std::vector<Item>, std::greater<Item>>, kNumEngines> ready;
    for (int e = 0; e < kNumEngines; ++e) {
      tl.lanes[e] = e == static_cast<int>(Engine::kDma) ? k.hw.dma_queues : 1;
      lane_free[e].assign(static_cast<std::size_t>(tl.lanes[e]), 0);
    }
    auto engine_of = [&](std::size_t x) { return static_cast<int>(k.instrs[instr_of[x]].engine); };
    for (std::size_t x = 0; x < n; ++x)
      if (indeg[x] == 0) ready[engine_of(x)].push({0, static_cast<int64_t>(x)});
    for (std::size_t done = 0; done < n; ++done) {
      int best_e = -1;
      Cycles best_start = 0;
      int64_t best_x = 0;
      for (int e = 0; e < kNumEngines; ++e) {
        if (ready[e].empty()) continue;
        Cycles lane = *std::min_element(lane_free[e].begin(), lane_free[e].end());
        Cycles start = std::max(lane, ready[e].top().first);
        if (best_e < 0 || start < best_start || (start == best_start && ready[e].top().second < best_x)) {
          best_e = e;
          best_start = start;
          best_x = ready[e].top().second;
        }
      }
      if (best_e < 0) break;  // cannot happen: the graph follows program order
      ready[best_e].pop();
      const std::size_t x = static_cast<std::size_t>(best_x);
      auto lane = std::min_element(lane_free[best_e].begin(), lane_free[best_e].end());
      const Instruction& ins = k.instrs[instr_of[x]];
      const Cycles end = best_start + ins.cost;
      finish[x] = end;
      *lane = end;
      tl.busy[best_e] += ins.cost;
      tl.makespan = std::max(tl.makespan, end);
      if (war_tensor[x] >= 0 && war_ready[x] > raw_ready[x]) tl.war_stall[war_tensor[x]] += war_ready[x] - raw_ready[x];
      if (record && tl.spans.size() < kMaxSpans)
        tl.spans.push_back({instr_of[x], static_cast<int>(lane - lane_free[best_e].begin()), best_start, end,
                            static_cast<int64_t>(x)});
      for (int64_t i = first[x]; i < first[x + 1]; ++i) {
        const Edge& ed = edges[succ[static_cast<std::size_t>(i)]];
        const std::size_t y = static_cast<std::size_t>(ed.to);
        if (ed.tensor >= 0) {
          if (end > war_ready[y]) war_ready[y] = end, war_tensor[y] = ed.tensor;
        } else {
          raw_ready[y] = std::max(raw_ready[y], end);
        }
        if (--indeg[y] == 0) ready[engine_of(y)].push({std::max(raw_ready[y], war_ready[y]), static_cast<int64_t>(y)});
      }
    }
    return tl;
  }
};

}  // namespace

namespace {

// The candidate allocation of the kernel's own allocation: each tensor's distinct placements are its physical
// tiles (block -> tile through the map); tensors without placements (automatic) get a tile per
// block. Tensors share when their tiles intersect; with more than 4096 tiles in all that pairwise
// test is too slow, so tensors share when their bounding boxes meet (conservative: extra waits
// only) if `bounding`, else there is none.
std::optional<CandidateAllocation> own_allocation(const Planner& planner, const std::vector<std::vector<TilePlacement>>& placements,
                                 bool bounding) {
  const Kernel& k = planner.k;
  const int nt = static_cast<int>(k.tensors.size());
  CandidateAllocation cand;
  cand.tiles.assign(nt, 0);
  cand.map.assign(nt, {});
  cand.shares.assign(nt, {});
  std::vector<std::vector<Rect>> rects(nt);
  std::vector<Rect> box(nt);
  std::size_t total = 0;
  for (int t = 0; t < nt; ++t) {
    const Tensor& ten = k.tensors[t];
    if (!planner.planned(t) || placements[t].empty()) {
      cand.tiles[t] = planner.tracked(t) ? static_cast<int>(ten.num_blocks()) : 0;
      continue;
    }
    std::map<std::pair<Partition, Bytes>, int> seen;  // physical tile -> its index
    for (const TilePlacement& pl : placements[t]) {
      auto [it, fresh] = seen.try_emplace({pl.start_partition, pl.byte_addr}, static_cast<int>(seen.size()));
      if (fresh) rects[t].push_back({pl.start_partition, pl.start_partition + ten.pdim, pl.byte_addr, pl.byte_addr + ten.fbytes()});
      cand.map[t].push_back(it->second);
    }
    cand.tiles[t] = static_cast<int>(seen.size());
    total += seen.size();
    box[t] = rects[t].front();
    for (const Rect& r : rects[t])
      box[t] = {std::min(box[t].p0, r.p0), std::max(box[t].p1, r.p1), std::min(box[t].b0, r.b0), std::max(box[t].b1, r.b1)};
  }
  const bool exact = total <= 4096;
  if (!exact && !bounding) return std::nullopt;
  for (int t = 0; t < nt; ++t)
    for (int u = t + 1; u < nt; ++u) {
      if (rects[t].empty() || rects[u].empty() || k.tensors[u].buffer != k.tensors[t].buffer) continue;
      bool m = false;
      if (exact) {
        for (const Rect& a : rects[t])
          for (const Rect& b : rects[u]) m |= meet(a, b);
      } else {
        m = meet(box[t], box[u]);
      }
      if (m) {
        cand.shares[t].push_back(u);
        cand.shares[u].push_back(t);
      }
    }
  if (exact) link_tiles(cand, [&](int t, int i) { return rects[t][static_cast<std::size_t>(i)]; });
  return cand;
}

}  // namespace

Timeline simulate_allocation(const Kernel& k, const std::vector<std::vector<TilePlacement>>& placements,
                             Scheduler scheduler) {
  const PlanOptions opt;
  Planner planner{k, opt, analyse(k), {}, 0, scheduler, {}, {}, {}};
  if (scheduler == Scheduler::kDataflow && k.dynamic_instructions > kMaxDataflowExecutions)
    planner.scheduler = Scheduler::kInOrder;
  return planner.simulate(*own_allocation(planner, placements, true), true);
}

namespace {

// Whether two buffers are live at some common event (their live sets, else their spans).
bool live_together(const BufferRequest& a, const BufferRequest& b) {
  if (a.last < b.first || b.last < a.first) return false;
  if (a.live.empty() && b.live.empty()) return true;
  const std::pair<int64_t, int64_t> span_a{a.first, a.last}, span_b{b.first, b.last};
  const std::span<const std::pair<int64_t, int64_t>> x = a.live.empty() ? std::span(&span_a, 1) : a.live;
  const std::span<const std::pair<int64_t, int64_t>> y = b.live.empty() ? std::span(&span_b, 1) : b.live;
  std::size_t i = 0, j = 0;
  while (i < x.size() && j < y.size()) {
    if (x[i].second < y[j].first) ++i;
    else if (y[j].second < x[i].first) ++j;
    else return true;
  }
  return false;
}

enum class PackOrder { kArea, kStart };

// Where a buffer may go: a start row and whether it may meet placed buffers it is never live
// with. `busy` are the byte ranges [b0, b1) it must avoid there (merged, ascending).
struct Slot {
  Partition row = 0;
  bool shared = false;
  std::vector<std::pair<Bytes, Bytes>> busy;
};

// The engine's answer for one buffer: each slot is a time step of its own in one alloc problem,
// where the busy ranges are pinned obstacles and a copy of the buffer is placed by first fit
// (lowest aligned offset). Returns, per slot, the offset the engine chose. The search asks
// thousands of such questions: the problem is the session's, reused, and solved lean (the
// planner's final plan is validated by check_kernel, docs/nki.md "Addresses").
// The copies are named "row <row> apart|shared" (the test that the planner places through the
// engine reads them).
Result<std::vector<Bytes>> engine_offsets(const std::vector<Slot>& slots, Bytes size, Bytes align, alloc::Problem& prob) {
  std::size_t n = 0;
  auto next = [&]() -> alloc::Buffer& {
    if (n == prob.buffers.size()) prob.buffers.emplace_back();
    return prob.buffers[n++];
  };
  auto append_number = [](std::string& s, int64_t v) {
    char digits[24];
    auto end = std::to_chars(digits, digits + sizeof digits, v).ptr;
    s.append(digits, end);
  };
  for (std::size_t s = 0; s < slots.size(); ++s) {
    alloc::Buffer& copy = next();
    copy.id.assign("row ");
    append_number(copy.id, slots[s].row);
    copy.id += slots[s].shared ? " shared" : " apart";
    copy.size = size;
    copy.start = static_cast<alloc::Time>(s);
    copy.end = copy.start + 1;
    copy.alignment = std::max<Bytes>(align, 1);
    copy.fixed_offset = alloc::kNoFixedOffset;
  }
  for (std::size_t s = 0; s < slots.size(); ++s)
    for (auto [b0, b1] : slots[s].busy) {
      alloc::Buffer& obstacle = next();
      obstacle.id.assign("#");  // unique, short: no heap string
      append_number(obstacle.id, static_cast<int64_t>(n - 1));
      obstacle.size = b1 - b0;
      obstacle.start = static_cast<alloc::Time>(s);
      obstacle.end = obstacle.start + 1;
      obstacle.alignment = 1;
      obstacle.fixed_offset = b0;
    }
  prob.buffers.resize(n);
  prob.capacity = alloc::kUnbounded;  // the caller compares with its own
  alloc::SolveOptions o;
  o.solver = alloc::SolverKind::kFirstFit;
  o.lean = true;
  auto r = alloc::solve(prob, o);
  if (!r) return r.error();
  if (!r->feasible) return internal_error("the allocation engine left an NKI buffer unplaced");
  return std::vector<Bytes>(r->placement.offsets.begin(), r->placement.offsets.begin() + static_cast<std::ptrdiff_t>(slots.size()));
}

// The engine's offsets for a buffer of `size` at `slots`: remembered in `answers` (keyed by what
// the engine's first fit depends on: the size, the alignment and every slot's row, kind and busy
// ranges; not which tensor asks), else asked.
Result<const std::vector<Bytes>*> offsets_for(Bytes size, const std::vector<Slot>& slots, Bytes align,
                                              EngineAnswers& answers) {
  std::vector<int64_t>& key = answers.key;
  key.clear();
  key.push_back(size);
  key.push_back(align);
  for (const Slot& s : slots) {
    key.push_back(s.row * 2 + s.shared);
    key.push_back(static_cast<int64_t>(s.busy.size()));
    for (auto [b0, b1] : s.busy) key.push_back(b0), key.push_back(b1);
  }
  if (auto it = answers.by_query.find(key); it != answers.by_query.end()) return &it->second;
  auto at = engine_offsets(slots, size, align, answers.problem);
  if (!at) return at.error();
  if (answers.by_query.size() > 100'000) answers.by_query.clear();  // bounds the memory
  return &(answers.by_query[key] = std::move(*at));
}

// First fit by decreasing area, or by first use (`kStart`: buffers that come later in time
// take the space of dead ones, as in interval colouring, instead of fragmenting memory).
// `shared_ok`: a buffer may intersect placed buffers never live together with it, after trying
// room apart from every placed buffer unless `share_first` (then the lowest such offset wins).
// The order, the start rows and the conflicts are the planner's; every offset is the engine's.
Result<bool> pack(const std::vector<BufferRequest>& reqs, Bytes capacity, Bytes align, Partition rows, bool shared_ok,
                  std::vector<BufferPlacement>& out, PackOrder by, bool share_first, EngineAnswers& answers) {
  out.assign(reqs.size(), {});
  std::vector<std::size_t> order(reqs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (by == PackOrder::kStart && reqs[a].first != reqs[b].first) return reqs[a].first < reqs[b].first;
    return reqs[a].size * reqs[a].partitions > reqs[b].size * reqs[b].partitions;
  });
  std::vector<std::size_t> placed;
  for (std::size_t i = 0; i < reqs.size(); ++i)
    if (reqs[i].fixed) {
      out[i] = {reqs[i].at_partition, reqs[i].at_offset};
      placed.push_back(i);
    }
  std::erase_if(order, [&](std::size_t i) { return reqs[i].fixed; });
  // The placed buffers `r` must avoid at some row (rows aside), by offset; then, per start row p,
  // the byte ranges of those whose rows meet r's there (merged, ascending).
  struct Obstacle {
    Bytes b0, b1;
    Partition p0, p1;
  };
  std::vector<Obstacle> avoid;
  auto collect = [&](const BufferRequest& r, bool share) {
    avoid.clear();
    for (std::size_t j : placed)
      if (reqs[j].size > 0 && (!share || live_together(reqs[j], r)))
        avoid.push_back({out[j].offset, out[j].offset + reqs[j].size, out[j].partition, out[j].partition + reqs[j].partitions});
    std::sort(avoid.begin(), avoid.end(), [](const Obstacle& a, const Obstacle& b) { return a.b0 < b.b0; });
  };
  auto busy_at = [&](const BufferRequest& r, Partition p, std::vector<std::pair<Bytes, Bytes>>& merged) {
    merged.clear();
    for (const Obstacle& o : avoid) {
      if (!(o.p0 < p + r.partitions && p < o.p1)) continue;
      if (!merged.empty() && o.b0 <= merged.back().second) merged.back().second = std::max(merged.back().second, o.b1);
      else merged.push_back({o.b0, o.b1});
    }
  };
  std::vector<Slot> slots;
  for (std::size_t i : order) {
    const BufferRequest& r = reqs[i];
    // Apart from every placed buffer if it fits so, else shared; the lowest offset, then row.
    // (The engine answers each slot on its own, so asking for the shared slots only when no
    // slot apart fits gives the same plan.)
    int best = -1;
    for (bool share : {false, true}) {
      if ((share && !shared_ok) || (!share && shared_ok && share_first)) continue;
      collect(r, share);
      std::size_t ns = 0;
      for (Partition p = 0; p + r.partitions <= rows; p += std::max<Partition>(r.row_step, 1), ++ns) {
        if (ns == slots.size()) slots.emplace_back();
        slots[ns].row = p;
        slots[ns].shared = share;
        busy_at(r, p, slots[ns].busy);
      }
      slots.resize(ns);
      if (slots.empty()) return false;
      auto at = offsets_for(r.size, slots, align, answers);
      if (!at) return at.error();
      const std::vector<Bytes>& off = **at;
      for (std::size_t s = 0; s < slots.size(); ++s)
        if (off[s] + r.size <= capacity && (best < 0 || off[s] < off[static_cast<std::size_t>(best)])) best = static_cast<int>(s);
      if (best >= 0) {
        out[i] = {slots[static_cast<std::size_t>(best)].row, off[static_cast<std::size_t>(best)]};
        break;
      }
    }
    if (best < 0) return false;
    placed.push_back(i);
  }
  return true;
}

}  // namespace

std::size_t EngineAnswers::KeyHash::operator()(const std::vector<int64_t>& key) const {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the words, then a final mix
  for (int64_t v : key) h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
  return static_cast<std::size_t>(h ^ (h >> 29));
}

Result<std::vector<BufferPlacement>> assign_offsets(const std::vector<BufferRequest>& reqs, Bytes capacity, Bytes align,
                                                    Partition rows, EngineAnswers* answers) {
  EngineAnswers own;
  if (!answers) answers = &own;
  std::vector<BufferPlacement> out;
  // Apart; then shared where apart fails; by first use; by first use sharing first.
  const struct {
    bool shared_ok;
    PackOrder by;
    bool share_first;
  } passes[] = {{false, PackOrder::kArea, false}, {true, PackOrder::kArea, false}, {true, PackOrder::kStart, false},
                {true, PackOrder::kStart, true}};
  for (const auto& pass : passes) {
    auto fits = pack(reqs, capacity, align, rows, pass.shared_ok, out, pass.by, pass.share_first, *answers);
    if (!fits) return fits.error();
    if (*fits) return out;
  }
  Bytes total = 0;
  for (const auto& r : reqs) total += alloc::align_up(r.size, align) * r.partitions;
  return bad_input("does not fit: " + std::to_string(total) + " partition-units requested, capacity " +
                   std::to_string(capacity) + " units x " + std::to_string(rows) + " partitions");
}

namespace {

// Refuses what no plan can fix (a read before any write, an internal HBM tensor).
Status plannable(const Kernel& k, const Planner& planner) {
  if (!planner.an.uninitialized.empty()) return bad_input(k.source + ": cannot plan: " + planner.an.uninitialized);
  for (const Tensor& t : k.tensors)
    if (t.buffer == Memory::kHbm && t.role == HbmRole::kNone)
      return bad_input(k.source + ": cannot plan: HBM tensor " + t.name +
                       " is neither a kernel input nor an output, which direct allocation does not allow");
  return Ok{};
}

// --keep-direct: each directly allocated tensor keeps its physical tiles (and block -> tile map).
Status keep_direct_allocations(const Kernel& k, const PlanOptions& opt, Planner& planner) {
  const int nt = static_cast<int>(k.tensors.size());
  if (opt.keep_direct && k.uses_direct_allocation()) {
    // The kept allocations must be valid on their own (automatic tensors are what we add).
    auto in = check_kernel(k);
    if (!in) return in.error();
    for (const Violation& v : in->violations)
      if (v.kind != ViolationKind::kMixedAllocation)
        return bad_input(k.source + ": cannot keep the direct allocations: " + v.message);
    for (int t = 0; t < nt; ++t) {
      if (!planner.planned(t) || k.tensors[t].alloc.kind == AllocKind::kAuto) continue;
      for (const TilePlacement& pl : in->placements[t]) {
        auto& ft = planner.fixed_tiles[t];
        auto it = std::find_if(ft.begin(), ft.end(), [&](const TilePlacement& q) {
          return q.start_partition == pl.start_partition && q.byte_addr == pl.byte_addr;
        });
        if (it == ft.end()) it = ft.insert(ft.end(), pl);
        planner.fixed_map[t].push_back(static_cast<int>(it - ft.begin()));
      }
    }
  }
  return Ok{};
}

// Tile counts per tensor: the starting (smallest legal) count and the legal counts above it.
struct TileCounts {
  std::vector<int> tiles;               // per tensor: the smallest legal count (HBM: its blocks if tracked, else 0)
  std::vector<int> min_tiles;           // per tensor: the same for SBUF/PSUM tensors (1 for HBM)
  std::vector<std::vector<int>> legal;  // per tensor: legal counts above the minimum, ascending
};

// Also sets each tensor's tile stride.
Result<TileCounts> tile_counts(const Kernel& k, const PlanOptions& opt, Planner& planner) {
  const int nt = static_cast<int>(k.tensors.size());
  TileCounts c{std::vector<int>(nt, 1), std::vector<int>(nt, 1), std::vector<std::vector<int>>(nt)};
  std::vector<int>& tiles = c.tiles;
  std::vector<int>& min_tiles = c.min_tiles;
  std::vector<std::vector<int>>& legal = c.legal;
  for (int t = 0; t < nt; ++t) {
    const Tensor& ten = k.tensors[t];
    const int64_t nb = ten.num_blocks();
    if (!planner.planned(t)) {
      tiles[t] = planner.tracked(t) ? static_cast<int>(nb) : 0;
      continue;
    }
    if (!planner.fixed_tiles[t].empty()) {
      tiles[t] = min_tiles[t] = static_cast<int>(planner.fixed_tiles[t].size());
      continue;
    }
    if (ten.buffer == Memory::kPsum) {
      if (ten.fbytes() > k.hw.psum_bank_bytes)
        return bad_input(k.source + ": tensor " + ten.name + " needs " + std::to_string(ten.fbytes()) +
                         " bytes per partition; a PSUM tile must fit one " + std::to_string(k.hw.psum_bank_bytes) +
                         "-byte bank");
      planner.stride[t] = 1;
    } else {
      planner.stride[t] = alloc::align_up(ten.fbytes(), k.hw.sbuf_min_align);
    }
    const int64_t cap = std::min<int64_t>(nb, std::max(opt.max_buffers, 1));
    const auto& iv = planner.an.intervals[t];
    // The minimum is not bounded by --max-buffers (which bounds growth): a pipeline keeping 16
    // blocks live needs 16 tiles, not one per block. No count below the most blocks live at
    // once can be legal; the search above that is bounded in work, then a tile per block.
    int64_t live_max = 1;
    {
      std::priority_queue<int64_t, std::vector<int64_t>, std::greater<int64_t>> ends;
      for (const auto& x : iv) {
        while (!ends.empty() && ends.top() <= x.start) ends.pop();  // as modulo_legal: a read then a write may meet
        ends.push(x.end);
        live_max = std::max<int64_t>(live_max, static_cast<int64_t>(ends.size()));
      }
    }
    int64_t first = 0, work = 0;
    for (int64_t n = live_max; n <= nb && !first && work < 50'000'000; ++n, work += static_cast<int64_t>(iv.size()) + n)
      if (modulo_legal(iv, n)) first = n;
    for (int64_t n = first + 1; first && n <= cap; ++n)
      if (modulo_legal(iv, n)) legal[t].push_back(static_cast<int>(n));
    if (!first) first = nb;  // one tile per logical block is always legal
    tiles[t] = min_tiles[t] = static_cast<int>(first);
  }
  return c;
}

// The error when even the fewest legal tiles do not fit: names the largest requests (usually
// one tensor whose minimum is a tile per block).
Error no_fit_error(const Kernel& k, const Planner& planner, const std::vector<int>& tiles, const Error& why) {
  const int nt = static_cast<int>(k.tensors.size());
  std::vector<int> big;
  for (int t = 0; t < nt; ++t)
    if (planner.planned(t) && planner.fixed_tiles[t].empty()) big.push_back(t);
  auto area = [&](int t) { return tiles[t] * planner.stride[t] * k.tensors[t].pdim; };
  std::stable_sort(big.begin(), big.end(), [&](int a, int b) { return area(a) > area(b); });
  std::string names;
  for (std::size_t i = 0; i < big.size() && i < 3; ++i)
    names += (i ? ", " : "") + k.tensors[big[i]].name + " " + std::to_string(tiles[big[i]]) + " x " +
             std::to_string(planner.stride[big[i]]) + (k.tensors[big[i]].buffer == Memory::kPsum ? " bank" : " B");
  return bad_input(k.source + ": the kernel does not fit even with the fewest legal tiles per tensor: " +
                   why.message + " (largest: " + names + ")");
}

// The tensors used inside each loop (moves grow a whole pipeline at once).
std::vector<std::vector<int>> loop_groups(const Kernel& k, const Planner& planner) {
  std::vector<std::vector<int>> groups;
  {
    std::vector<std::vector<int>> by_loop(k.loops.size() + 1);
    for (const Instruction& ins : k.instrs) {
      std::vector<std::size_t> within(ins.loops.begin(), ins.loops.end());
      if (within.empty()) within.push_back(k.loops.size());
      for (std::size_t l : within) {
        auto& g = by_loop[l];
        for (const auto* list : {&ins.reads, &ins.writes})
          for (const Access& a : *list)
            if (planner.planned(a.tensor) && std::find(g.begin(), g.end(), a.tensor) == g.end()) g.push_back(a.tensor);
      }
    }
    for (auto& g : by_loop)
      if (g.size() > 1 && std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
  }
  return groups;
}

// Greedy growth: apply the move that shortens the timeline most, until none helps or time is
// up. Moves grow tile counts to the next legal value: one tensor (among those whose tiles made
// instructions wait), every waiting tensor at once, or every tensor used inside one loop at
// once (a pipeline only overlaps when all its stages have a spare tile). Then give back tiles
// that do not pay for themselves (group moves over-provision).
void search(const Kernel& k, const PlanOptions& opt, Planner& planner, const TileCounts& counts,
            const std::function<bool()>& out_of_time, CandidateAllocation& cur, Timeline& cur_tl) {
  const int nt = static_cast<int>(k.tensors.size());
  const std::vector<int>& min_tiles = counts.min_tiles;
  const std::vector<std::vector<int>>& legal = counts.legal;
  const std::vector<std::vector<int>> groups = loop_groups(k, planner);
  // A move: tensors and whether each jumps to its largest legal count instead of the next one.
  struct Move {
    std::vector<int> tensors;
    bool to_max = false;
  };
  auto grow = [&](const std::vector<int>& from, int t, bool to_max) {
    if (to_max) return legal[t].empty() ? from[t] : std::max(from[t], legal[t].back());
    for (int n : legal[t])
      if (n > from[t]) return n;
    return from[t];
  };
  while (opt.multi_buffer && !out_of_time()) {
    std::vector<int> stalled;
    for (int t = 0; t < nt; ++t)
      if (planner.planned(t) && cur_tl.war_stall[t] > 0) stalled.push_back(t);
    std::sort(stalled.begin(), stalled.end(), [&](int a, int b) { return cur_tl.war_stall[a] > cur_tl.war_stall[b]; });
    std::vector<Move> moves;
    // Jumps matter when the next count alone gains nothing (e.g. four DMA queues need four tiles).
    for (std::size_t i = 0; i < stalled.size() && i < 6; ++i) {
      moves.push_back({{stalled[i]}, false});
      moves.push_back({{stalled[i]}, true});
    }
    if (stalled.size() > 1) moves.push_back({stalled, false});
    for (const auto& g : groups) moves.push_back({g, false});
    Cycles best = cur_tl.makespan;
    CandidateAllocation best_alloc;
    Timeline best_tl;
    for (const auto& m : moves) {
      if (out_of_time()) break;
      std::vector<int> trial = cur.tiles;
      for (int t : m.tensors) trial[t] = grow(cur.tiles, t, m.to_max);
      if (trial == cur.tiles) continue;
      auto cand = planner.place(trial);
      if (!cand) continue;  // does not fit
      Timeline tl = planner.simulate(*cand, false);
      if (tl.makespan < best) {
        best = tl.makespan;
        best_alloc = std::move(*cand);
        best_tl = std::move(tl);
      }
    }
    if (best >= cur_tl.makespan) break;
    cur = std::move(best_alloc);
    cur_tl = std::move(best_tl);
  }
  // Give back tiles that do not pay for themselves (group moves over-provision).
  for (int t = 0; t < nt && opt.multi_buffer; ++t) {
    while (planner.planned(t) && cur.tiles[t] > min_tiles[t] && !out_of_time()) {
      std::vector<int> trial = cur.tiles;
      int lower = min_tiles[t];
      for (int n : legal[t])
        if (n < cur.tiles[t]) lower = n;
      trial[t] = lower;
      auto cand = planner.place(trial);
      if (!cand) break;
      Timeline tl = planner.simulate(*cand, false);
      if (tl.makespan > cur_tl.makespan) break;
      cur = std::move(*cand);
      cur_tl = std::move(tl);
    }
  }
}

// The allocation written for a planned tensor: its tiles at the candidate's address.
Allocation written_allocation(const Kernel& k, const Planner& planner, const CandidateAllocation& cur, int t) {
  const Tensor& ten = k.tensors[t];
  const int n = cur.tiles[t];
  Allocation a;
  const bool psum = ten.buffer == Memory::kPsum;
  // Block b -> tile b mod n over the row-major linear index is a mod_alloc when n factors
  // along the trailing block dims (each inner modulus divides its dim or takes all of it).
  std::vector<int64_t> mods(ten.blocks.size(), 1);
  int64_t rest = n;
  for (std::size_t d = ten.blocks.size(); d-- > 0 && rest > 1;) {
    // The outermost dim takes any modulus: (i0 mod m) * S + inner = b mod (m * S).
    if (d == 0 || ten.blocks[d] % rest == 0) mods[d] = rest, rest = 1;
    else if (rest % ten.blocks[d] == 0) mods[d] = ten.blocks[d], rest /= ten.blocks[d];
    else break;
  }
  if (rest == 1 && (psum || planner.stride[t] == ten.fbytes())) {
    a.kind = AllocKind::kModAlloc;
    if (psum) a.base_bank = static_cast<int>(cur.offset[t]);
    else a.base_addr = cur.offset[t];
    a.base_partition = cur.part[t];
    if (n > 1) (psum ? a.num_bank_tiles : a.num_free_tiles) = mods;
  } else {
    a.kind = AllocKind::kTable;
    for (int64_t b = 0; b < ten.num_blocks(); ++b) {
      const int64_t slot = cur.offset[t] + (b % n) * planner.stride[t];
      a.table.push_back({cur.part[t], psum ? slot * k.hw.psum_bank_bytes : slot});
    }
  }
  return a;
}

// What the kernel's own allocation is: none (some SBUF/PSUM tensor automatic, or none
// addressed), complete (every SBUF/PSUM tensor directly allocated), or with compiler-placed
// tensors (new API: the others have no address=, and the compiler places them).
enum class OwnAllocation { kNone, kComplete, kCompilerPlaced };
OwnAllocation own_allocation_kind(const Kernel& k) {
  bool direct = false, compiler = false;
  for (const Tensor& t : k.tensors) {
    if (t.buffer == Memory::kHbm) continue;
    if (t.alloc.kind != AllocKind::kAuto) direct = true;
    else if (t.alloc.compiler_placed) compiler = true;
    else return OwnAllocation::kNone;
  }
  return !direct ? OwnAllocation::kNone : compiler ? OwnAllocation::kCompilerPlaced : OwnAllocation::kComplete;
}

// Sets res.input (and the input's violations): a complete own allocation simulated on the
// planner's timeline when it is clean; with compiler-placed tensors, the keep-direct plan's
// timeline (`own_plan`, or res's own plan when it is that plan). The compiler's placement is not
// known to us, so that share is our planner's (input_compiler_placed_by_planner).
void own_allocation_timeline(Planner& planner, OwnAllocation kind, const PlanResult* own_plan, PlanResult& res) {
  const Kernel& k = planner.k;
  if (kind == OwnAllocation::kNone) return;
  auto in_check = check_kernel(k);
  if (!in_check.ok()) return;
  if (!in_check->clean()) {  // the report says the plan replaces a faulty allocation
    res.input_check.violations = in_check->violations;
    res.input_check.distinct_violations = in_check->distinct_violations;
    return;
  }
  if (kind == OwnAllocation::kCompilerPlaced) {
    const Timeline* own = own_plan ? &own_plan->planned : planner.opt.keep_direct ? &res.planned : nullptr;
    if (!own) return;
    res.input = *own;
    res.input.spans.clear();  // (as a simulation without spans)
    res.has_input = true;
    res.input_compiler_placed_by_planner = true;
  } else if (auto cand = own_allocation(planner, in_check->placements, false)) {
    res.input = planner.simulate(*cand, false);
    res.has_input = true;
  }
}

}  // namespace

Result<PlanResult> plan_kernel(const Kernel& k, const PlanOptions& opt) {
  Deadline deadline(opt.time_limit_s);
  Planner planner{k, opt, analyse(k), {}, 0, Scheduler::kDataflow, {}, {}, {}};
  // The dataflow model keeps the whole dependency graph in memory (~250 bytes per execution);
  // above kMaxDataflowExecutions the in-order model (constant memory per tile) is used instead.
  planner.scheduler = opt.scheduler == Scheduler::kDataflow && k.dynamic_instructions > kMaxDataflowExecutions
                    ? Scheduler::kInOrder
                    : opt.scheduler;
  if (Status st = plannable(k, planner); !st) return st.error();
  const int nt = static_cast<int>(k.tensors.size());
  planner.stride.assign(nt, 0);
  planner.fixed_map.assign(nt, {});
  planner.fixed_tiles.assign(nt, {});
  if (Status st = keep_direct_allocations(k, opt, planner); !st) return st.error();
  // A kernel that leaves some tensors to the compiler: its own allocation is the keep-direct
  // plan (its addresses kept, the compiler-placed tensors placed by this planner around them),
  // planned first with half of the limit; the free search then has the rest.
  const OwnAllocation own_kind = own_allocation_kind(k);
  std::optional<PlanResult> own_plan;
  if (own_kind == OwnAllocation::kCompilerPlaced && !opt.keep_direct && check_kernel(k).ok()) {
    PlanOptions keep = opt;
    keep.keep_direct = true;
    keep.time_limit_s = opt.time_limit_s / 2;
    if (auto kept = plan_kernel(k, keep)) own_plan = std::move(*kept);
  }
  auto counts = tile_counts(k, opt, planner);
  if (!counts) return counts.error();
  const std::vector<int>& min_tiles = counts->min_tiles;
  auto base_alloc = planner.place(counts->tiles);
  if (!base_alloc) return no_fit_error(k, planner, counts->tiles, base_alloc.error());
  CandidateAllocation cur = *base_alloc;
  const double before_eval = deadline.elapsed_seconds();
  // The baseline's timeline (with spans) is also where the search starts.
  Timeline base_tl = planner.simulate(cur, true);
  Timeline cur_tl = base_tl;
  // The limit covers the whole run: the search stops while there is still time for the fixed
  // tail (the planned and input timelines and the checker), about three evaluations.
  const double reserve = 3.0 * (deadline.elapsed_seconds() - before_eval);
  auto out_of_time = [&] { return deadline.expired() || deadline.remaining_seconds() < reserve; };
  search(k, opt, planner, *counts, out_of_time, cur, cur_tl);

  PlanResult res;
  res.kernel = k;
  res.scheduler = planner.scheduler;
  const bool unchanged = cur.tiles == base_alloc->tiles && cur.offset == base_alloc->offset && cur.part == base_alloc->part;
  res.planned = unchanged ? base_tl : planner.simulate(cur, true);
  res.baseline = std::move(base_tl);
  own_allocation_timeline(planner, own_kind, own_plan ? &*own_plan : nullptr, res);
  res.evaluations = planner.evaluations;
  res.sbuf_bytes = cur.sbuf_top;
  res.psum_banks = cur.psum_top;
  for (int t = 0; t < nt; ++t) {
    if (!planner.planned(t)) continue;
    Tensor& ten = res.kernel.tensors[t];
    const int n = cur.tiles[t];
    if (!planner.fixed_tiles[t].empty()) {  // kept as the input had it
      const TilePlacement& f = planner.fixed_tiles[t].front();
      res.plans.push_back({t, n, min_tiles[t], f.start_partition, f.byte_addr, 0, true});
      continue;
    }
    res.plans.push_back({t, n, min_tiles[t], cur.part[t], cur.offset[t], planner.stride[t]});
    ten.alloc = written_allocation(k, planner, cur, t);
  }
  // Never slower than the kernel's own allocation: when the search did not beat it, the plan is
  // that allocation (every tensor kept as it is; compiler-placed ones as placed around them).
  if (own_plan && res.has_input && res.input.makespan < res.planned.makespan) return std::move(*own_plan);
  if (res.has_input && res.input.makespan < res.planned.makespan && !opt.keep_direct) {
    PlanOptions keep = opt;
    keep.keep_direct = true;
    keep.time_limit_s = std::max(0.0, deadline.remaining_seconds());
    auto kept = plan_kernel(k, keep);
    if (kept && kept->planned.makespan <= res.input.makespan) return kept;
  }
  // The independent checker must accept the plan before anyone sees it.
  auto check = check_kernel(res.kernel);
  if (!check) return check.error();
  if (!check->clean())
    return internal_error(k.source + ": planner produced an invalid allocation: " + check->violations.front().message);
  return res;
}

}  // namespace sp::nki
