#include "nki/check.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "nki/check_capacity.h"

namespace sp::nki {

namespace {

constexpr int64_t kMaxOverlapPairs = 20'000'000;
constexpr Bytes kBadAddr = INT64_MAX / 4;  // stands for an address that overflowed

Bytes checked_eval(const Affine& a, const std::vector<int64_t>& idx) {
  int64_t v = a.constant;
  for (auto [d, c] : a.terms) {
    int64_t p = 0;
    if (__builtin_mul_overflow(c, idx[d], &p) || __builtin_add_overflow(v, p, &v)) return kBadAddr;
  }
  return std::clamp<int64_t>(v, -kBadAddr, kBadAddr);
}

struct PhysTile {
  TensorId tensor;
  Memory buffer;
  Partition p0, p1;  // [p0, p1)
  Bytes b0, b1;      // [b0, b1)
};

// What a physical tile currently holds: the logical tile last written to it, or the write of
// another tile that overlapped it.
struct Content {
  TensorId tensor = -1;  // writer's tensor (-1: nothing written yet)
  int64_t block = -1;    // writer's linear block
  int64_t event = -1;    // writer's execution number
  int instr = -1;        // writer's instruction
};

struct Pending {  // a violation found during simulation, strings filled in afterwards
  ViolationKind kind;
  TensorId tensor;
  int64_t block;
  int instr;
  int64_t event;           // the read
  Content by;              // the overwrite (lifetime / overlap)
  int64_t occurrences = 1;
};

// " (kernel.py:12)" or "" when the kernel was not traced from source.
std::string at(const std::string& source, const char* what = "") {
  return source.empty() ? "" : std::string(" (") + what + source + ")";
}

}  // namespace

const char* violation_kind_name(ViolationKind k) {
  switch (k) {
    case ViolationKind::kAddressRange: return "address_range";
    case ViolationKind::kMisaligned: return "misaligned";
    case ViolationKind::kStartPartition: return "start_partition";
    case ViolationKind::kPartitionRange: return "partition_range";
    case ViolationKind::kPsumBankCrossing: return "psum_bank_crossing";
    case ViolationKind::kPsumBase: return "psum_base";
    case ViolationKind::kMixedAllocation: return "mixed_allocation";
    case ViolationKind::kHbmNotOutput: return "hbm_not_output";
    case ViolationKind::kReadBeforeWrite: return "read_before_write";
    case ViolationKind::kLifetimeConflict: return "lifetime_conflict";
    case ViolationKind::kOverlap: return "overlap";
  }
  return "?";
}

std::vector<TilePlacement> evaluate_allocation(const Kernel& k, const Tensor& t) {
  std::vector<TilePlacement> out;
  if (t.buffer == Memory::kHbm || t.alloc.kind == AllocKind::kAuto) return out;
  const Allocation& a = t.alloc;
  const int64_t n = t.num_blocks();
  const Bytes fb = t.fbytes();
  out.resize(static_cast<std::size_t>(n));
  for (int64_t b = 0; b < n; ++b) {
    std::vector<int64_t> idx = t.unflatten(b);
    TilePlacement& p = out[static_cast<std::size_t>(b)];
    switch (a.kind) {
      case AllocKind::kAuto: break;
      case AllocKind::kModAlloc: {
        // The SDK's reference model: each modulus applies to its own block dim (zip-truncated),
        // and the partition, free (and PSUM bank) tiles are independent linearisations.
        const int64_t par = modulo_linear(a.num_par_tiles, idx);
        const int64_t fr = modulo_linear(a.num_free_tiles, idx);
        p.start_partition = std::clamp<int64_t>(a.base_partition + par * t.pdim, -kBadAddr, kBadAddr);
        int64_t off = 0;
        if (__builtin_mul_overflow(fr, fb, &off) || __builtin_add_overflow(off, a.base_addr, &off)) off = kBadAddr;
        if (t.buffer == Memory::kPsum) {
          const int64_t bank = a.base_bank + modulo_linear(a.num_bank_tiles, idx);
          int64_t b = 0;
          if (__builtin_mul_overflow(bank, k.hw.psum_bank_bytes, &b) || __builtin_add_overflow(b, off, &off)) off = kBadAddr;
        }
        p.byte_addr = std::clamp<int64_t>(off, -kBadAddr, kBadAddr);
        break;
      }
      case AllocKind::kFunc:
        p.start_partition = checked_eval(a.start_partition_fn, idx);
        p.byte_addr = checked_eval(a.byte_addr_fn, idx);
        break;
      case AllocKind::kFactory:
        p.start_partition = 0;
        p.byte_addr = a.base_addr + b * fb;
        break;
      case AllocKind::kTable:
        p.start_partition = a.table[static_cast<std::size_t>(b)].first;
        p.byte_addr = a.table[static_cast<std::size_t>(b)].second;
        break;
    }
  }
  return out;
}

namespace {

// The physical tiles (each tensor's distinct placements) and, per tensor, logical block -> tile.
struct PhysicalTiles {
  std::vector<PhysTile> tiles;
  std::vector<std::vector<int>> tile_of;  // per tensor: logical block -> physical tile id
  std::vector<int64_t> block_base;        // flat index of (tensor, block): block_base[t] + block
};

PhysicalTiles physical_tiles(const Kernel& k, const std::vector<std::vector<TilePlacement>>& placements) {
  const int nt = static_cast<int>(k.tensors.size());
  PhysicalTiles pt;
  pt.tile_of.resize(nt);
  pt.block_base.assign(nt + 1, 0);
  for (int t = 0; t < nt; ++t) {
    pt.block_base[t + 1] = pt.block_base[t] + k.tensors[t].num_blocks();
    const auto& pl = placements[t];
    if (pl.empty()) continue;
    const Tensor& ten = k.tensors[t];
    std::map<std::pair<Partition, Bytes>, int> seen;
    pt.tile_of[t].resize(pl.size());
    for (std::size_t b = 0; b < pl.size(); ++b) {
      auto key = std::pair{pl[b].start_partition, pl[b].byte_addr};
      auto [it, fresh] = seen.emplace(key, static_cast<int>(pt.tiles.size()));
      if (fresh)
        pt.tiles.push_back({t, ten.buffer, key.first, key.first + ten.pdim, key.second,
                            std::min(kBadAddr, key.second + std::max<Bytes>(ten.fbytes(), 1))});
      pt.tile_of[t][b] = it->second;
    }
  }
  return pt;
}

// Overlaps between physical tiles of the same buffer: a sweep over byte ranges.
Result<std::vector<std::vector<int>>> overlap_graph(const Kernel& k, const std::vector<PhysTile>& phys) {
  std::vector<std::vector<int>> overlaps(phys.size());
  std::vector<int> order(phys.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return std::tie(phys[a].buffer, phys[a].b0) < std::tie(phys[b].buffer, phys[b].b0);
  });
  int64_t pairs = 0;
  for (std::size_t x = 0; x < order.size(); ++x) {
    const PhysTile& A = phys[order[x]];
    for (std::size_t y = x + 1; y < order.size(); ++y) {
      const PhysTile& B = phys[order[y]];
      if (B.buffer != A.buffer || B.b0 >= A.b1) break;
      if (B.p0 < A.p1 && A.p0 < B.p1) {
        overlaps[order[x]].push_back(order[y]);
        overlaps[order[y]].push_back(order[x]);
        if (++pairs > kMaxOverlapPairs)
          return bad_input(k.source + ": more than " + std::to_string(kMaxOverlapPairs) +
                           " overlapping pairs of physical tiles; too many to check");
      }
    }
  }
  return overlaps;
}

// What the program-order simulation found.
struct Simulation {
  std::vector<Pending> pending;     // violations kept (at most max_violations), in order of discovery
  int64_t distinct = 0;             // distinct violations found, kept or not
  int64_t executions = 0;           // instruction executions simulated
  std::vector<int64_t> first_event;  // per flat block: its first access (-1: never)
  std::vector<int> first_instr;     // and that access's instruction
  std::vector<int64_t> tensor_first, tensor_last;  // per tensor: its first and last access (-1: never)
};

// Exact program-order simulation: each physical tile holds the logical tile last written to it;
// a read of a logical tile its physical tile no longer holds is a violation.
Simulation simulate(const Kernel& k, const PhysicalTiles& pt, const std::vector<std::vector<int>>& overlaps,
                    const CheckOptions& opt) {
  const std::vector<PhysTile>& phys = pt.tiles;
  const auto& tile_of = pt.tile_of;
  const auto& block_base = pt.block_base;
  const std::size_t nflat = static_cast<std::size_t>(block_base.back());
  Simulation sim;
  sim.first_event.assign(nflat, -1);
  sim.first_instr.assign(nflat, -1);
  sim.tensor_first.assign(k.tensors.size(), -1);
  sim.tensor_last.assign(k.tensors.size(), -1);
  std::vector<Content> content(phys.size());
  std::vector<char> written(nflat, 0);
  std::vector<Content> first_clobber(nflat);
  std::map<std::tuple<int, TensorId, int64_t, int>, std::size_t> seen_violation;
  int64_t event = 0;
  auto report = [&](ViolationKind kind, TensorId t, int64_t b, int instr, int64_t ev, Content by) {
    auto key = std::tuple{static_cast<int>(kind), t, b, instr};
    auto it = seen_violation.find(key);
    if (it != seen_violation.end()) {
      if (it->second < sim.pending.size()) ++sim.pending[it->second].occurrences;
      return;
    }
    ++sim.distinct;
    seen_violation.emplace(key, sim.pending.size() < opt.max_violations ? sim.pending.size() : SIZE_MAX);
    if (sim.pending.size() < opt.max_violations) sim.pending.push_back({kind, t, b, instr, ev, by});
  };
  for_each_execution(k, [&](int ii, const std::vector<int64_t>& vals) {
    const Instruction& ins = k.instrs[ii];
    auto touch = [&](const Access& a) {
      int64_t b = eval(a.linear, vals);
      std::size_t flat = static_cast<std::size_t>(block_base[a.tensor] + b);
      if (sim.first_event[flat] < 0) {
        sim.first_event[flat] = event;
        sim.first_instr[flat] = ii;
      }
      if (sim.tensor_first[a.tensor] < 0) sim.tensor_first[a.tensor] = event;
      sim.tensor_last[a.tensor] = event;
      return b;
    };
    auto check_read = [&](const Access& a, int64_t b) {
      if (!written[block_base[a.tensor] + b]) {
        // An input holds data; HBM another logical core shares may hold what that core wrote.
        if (!k.tensors[a.tensor].arrives_written()) report(ViolationKind::kReadBeforeWrite, a.tensor, b, ii, event, {});
        return;
      }
      if (tile_of[a.tensor].empty()) return;
      const Content& cur = content[tile_of[a.tensor][b]];
      if (cur.tensor == a.tensor && cur.block == b) return;
      const Content& c = first_clobber[block_base[a.tensor] + b];
      report(c.tensor == a.tensor ? ViolationKind::kLifetimeConflict : ViolationKind::kOverlap, a.tensor, b, ii, event, c);
    };
    for (const Access& a : ins.reads) check_read(a, touch(a));
    for (const Access& a : ins.writes) {
      int64_t b = touch(a);
      const std::size_t flat = static_cast<std::size_t>(block_base[a.tensor] + b);
      // PSUM +=: continues the accumulation group, so the tile must still hold it.
      if (a.accumulate && written[flat]) check_read(a, b);
      written[flat] = 1;
      if (tile_of[a.tensor].empty()) continue;
      first_clobber[flat] = Content{};
      int p = tile_of[a.tensor][b];
      Content c{a.tensor, b, event, ii};
      // A logical tile is destroyed only when its own physical tile is written over; the
      // content of a tile overlapped by another tensor's write is that write, which must not
      // be blamed again when a neighbour later overwrites the same bytes (issue 11, item 7).
      auto replace = [&](int q) {
        const Content& old = content[q];
        if (old.tensor >= 0 && (old.tensor != a.tensor || old.block != b) &&
            tile_of[old.tensor][static_cast<std::size_t>(old.block)] == q) {
          Content& fc = first_clobber[static_cast<std::size_t>(block_base[old.tensor] + old.block)];
          if (fc.tensor < 0) fc = c;
        }
        content[q] = c;
      };
      replace(p);
      // A partial write destroys only the tiles its own rectangle meets.
      const PhysTile& P = phys[p];
      const Partition wp0 = P.p0 + a.p0, wp1 = a.p1 < 0 ? P.p1 : P.p0 + a.p1;
      const Bytes wb0 = P.b0 + a.b0, wb1 = a.b1 < 0 ? P.b1 : P.b0 + a.b1;
      for (int q : overlaps[p])
        if (phys[q].p0 < wp1 && wp0 < phys[q].p1 && phys[q].b0 < wb1 && wb0 < phys[q].b1) replace(q);
    }
    ++event;
    return true;
  });
  sim.executions = event;
  return sim;
}

// A static rule broken, attributed to the block's first access.
struct Static {
  ViolationKind kind;
  TensorId t;
  int64_t b;  // -1: the whole tensor
  std::string why;
};

// The rules of each logical block's placement (ranges, alignment, ISA start partitions, banks).
void placement_rules(const Kernel& k, TensorId t, const std::vector<TilePlacement>& placements,
                     std::vector<Static>& statics) {
  const Tensor& ten = k.tensors[t];
  const Bytes fb = ten.fbytes();
  const Partition quad = ten.pdim <= 32 ? 32 : ten.pdim <= 64 ? 64 : 128;
  for (std::size_t b = 0; b < placements.size(); ++b) {
    const TilePlacement& p = placements[b];
    const int64_t bi = static_cast<int64_t>(b);
    std::string where = "tile at partition " + std::to_string(p.start_partition) + ", byte " + std::to_string(p.byte_addr);
    if (p.start_partition < 0 || p.start_partition % quad != 0 || p.start_partition >= 128)
      statics.push_back({ViolationKind::kStartPartition, t, bi,
                         "start partition " + std::to_string(p.start_partition) + " is not allowed for " +
                             std::to_string(ten.pdim) + " partitions (" +
                             (quad == 32 ? "0/32/64/96" : quad == 64 ? "0/64" : "0 only") + ")"});
    if (p.start_partition >= 0 && p.start_partition + ten.pdim > k.hw.partitions)
      statics.push_back({ViolationKind::kPartitionRange, t, bi,
                         "partitions [" + std::to_string(p.start_partition) + ", " +
                             std::to_string(p.start_partition + ten.pdim) + ") exceed the " +
                             std::to_string(k.hw.partitions) + " partitions"});
    if (ten.buffer == Memory::kSbuf) {
      if (p.byte_addr < 0 || p.byte_addr > k.hw.sbuf_usable() - fb)
        statics.push_back({ViolationKind::kAddressRange, t, bi,
                           where + ": bytes [" + std::to_string(p.byte_addr) + ", " + std::to_string(p.byte_addr + fb) +
                               ") are outside the usable SBUF [0, " + std::to_string(k.hw.sbuf_usable()) + ")"});
      // per use: an address= tensor of the new API states its own alignment (its element size)
      const Bytes align = ten.alloc.align > 0 ? ten.alloc.align : k.hw.sbuf_min_align;
      if (p.byte_addr % align != 0)
        statics.push_back({ViolationKind::kMisaligned, t, bi,
                           where + ": byte_addr is not a multiple of " +
                               (ten.alloc.align > 0 ? "the alignment its use requires " : "sbuf_min_align ") +
                               std::to_string(align)});
    } else {
      const Bytes bank = k.hw.psum_bank_bytes;
      if (p.byte_addr < 0 || p.byte_addr > k.hw.psum_bytes() - fb)
        statics.push_back({ViolationKind::kAddressRange, t, bi,
                           where + ": bytes [" + std::to_string(p.byte_addr) + ", " + std::to_string(p.byte_addr + fb) +
                               ") are outside PSUM [0, " + std::to_string(k.hw.psum_bytes()) + ")"});
      else if (fb > bank || p.byte_addr / bank != (p.byte_addr + fb - 1) / bank)
        statics.push_back({ViolationKind::kPsumBankCrossing, t, bi,
                           where + ": " + std::to_string(fb) + " bytes per partition cross a " + std::to_string(bank) +
                               "-byte PSUM bank boundary"});
    }
  }
}

// The static rules: per tensor (HBM roles, mixing, PSUM mod_alloc bases), then per block.
std::vector<Static> static_rules(const Kernel& k, const std::vector<std::vector<TilePlacement>>& placements,
                                 const Simulation& sim) {
  const int nt = static_cast<int>(k.tensors.size());
  std::vector<Static> statics;
  const bool direct = k.uses_direct_allocation();
  // Tensors the compiler places (new API, no address=) must fit beside the addressed ones.
  for (const CapacityShortfall& c : compiler_placed_shortfalls(k, placements, sim.tensor_first, sim.tensor_last))
    statics.push_back({ViolationKind::kAddressRange, c.tensor, -1, c.message});
  for (int t = 0; t < nt; ++t) {
    const Tensor& ten = k.tensors[t];
    if (ten.buffer == Memory::kHbm) {
      if (direct && ten.role == HbmRole::kNone)
        statics.push_back({ViolationKind::kHbmNotOutput, t, -1,
                           "HBM tensor is neither a kernel input nor an output, which direct allocation does not allow"});
      continue;
    }
    if (ten.alloc.kind == AllocKind::kAuto) {
      if (direct && !ten.alloc.compiler_placed)
        statics.push_back({ViolationKind::kMixedAllocation, t, -1,
                           "automatically allocated while other tensors use direct allocation; their addresses may collide"});
      continue;
    }
    auto all_ones = [](const std::vector<int64_t>& v) {
      return std::all_of(v.begin(), v.end(), [](int64_t x) { return x == 1; });
    };
    if (ten.buffer == Memory::kPsum && ten.alloc.kind == AllocKind::kModAlloc &&
        (ten.alloc.base_addr != 0 || ten.alloc.base_partition != 0 || !all_ones(ten.alloc.num_par_tiles) ||
         !all_ones(ten.alloc.num_free_tiles)))
      statics.push_back({ViolationKind::kPsumBase, t, -1,
                         "PSUM mod_alloc needs base_addr 0, base_partition 0 and num_par_tiles/num_free_tiles empty "
                         "or all ones (only banks rotate), got base_addr " +
                             std::to_string(ten.alloc.base_addr) + " and base_partition " +
                             std::to_string(ten.alloc.base_partition)});
    placement_rules(k, t, placements[t], statics);
  }
  return statics;
}

// The loop iteration of each event that a violation names: a second walk collects their values.
std::unordered_map<int64_t, std::string> name_iterations(const Kernel& k, const PhysicalTiles& pt, const Simulation& sim,
                                                         const std::vector<Static>& statics) {
  const auto& block_base = pt.block_base;
  std::set<int64_t> wanted;
  for (const Pending& p : sim.pending) {
    wanted.insert(p.event);
    if (p.by.event >= 0) wanted.insert(p.by.event);
  }
  for (const Static& s : statics) {
    if (s.b >= 0) {
      int64_t fe = sim.first_event[block_base[s.t] + s.b];
      if (fe >= 0) wanted.insert(fe);
    } else {
      for (int64_t b = block_base[s.t]; b < block_base[s.t + 1]; ++b)
        if (sim.first_event[b] >= 0) {
          wanted.insert(sim.first_event[b]);
          break;
        }
    }
  }
  std::unordered_map<int64_t, std::string> iter;
  if (!wanted.empty()) {
    int64_t ev = 0;
    auto next = wanted.begin();
    for_each_execution(k, [&](int ii, const std::vector<int64_t>& vals) {
      if (ev == *next) {
        iter[ev] = iteration_string(k, k.instrs[ii], vals);
        if (++next == wanted.end()) return false;
      }
      ++ev;
      return true;
    });
  }
  return iter;
}

std::vector<int64_t> block_of(const Kernel& k, TensorId t, int64_t b) {
  return b < 0 ? std::vector<int64_t>{} : k.tensors[t].unflatten(b);
}

// A static rule's violation, named by the first access of its block (or of the tensor).
Violation static_violation(const Kernel& k, const PhysicalTiles& pt, const Simulation& sim,
                           std::unordered_map<int64_t, std::string>& iter, const Static& s) {
  const auto& block_base = pt.block_base;
  Violation v;
  ViolationDetail& d = v.detail;
  v.kind = s.kind;
  v.involved = {k.tensors[s.t].name};
  d.block = block_of(k, s.t, s.b);
  int64_t fe = -1;
  int fi = -1;
  for (int64_t b = s.b >= 0 ? block_base[s.t] + s.b : block_base[s.t]; b < (s.b >= 0 ? block_base[s.t] + s.b + 1 : block_base[s.t + 1]); ++b)
    if (sim.first_event[b] >= 0 && (fe < 0 || sim.first_event[b] < fe)) {
      fe = sim.first_event[b];
      fi = sim.first_instr[b];
    }
  d.tensor_source = k.tensors[s.t].source;
  if (fi >= 0) {
    d.instruction = k.instrs[fi].name;
    d.instruction_source = k.instrs[fi].source;
    d.iteration = iter.count(fe) ? iter[fe] : "";
  }
  v.message = std::string(violation_kind_name(s.kind)) + ": tensor " + v.involved[0] + at(d.tensor_source, "declared at ") +
              (s.b >= 0 ? " block " + block_string(d.block) : "") + ": " + s.why +
              (fi >= 0 ? " (first used by " + d.instruction + at(d.instruction_source) + " at " + d.iteration + ")"
                       : " (never used)");
  return v;
}

// A violation the simulation found: the pending read and, for lifetime kinds, the write that
// destroyed the tile.
Violation simulated_violation(const Kernel& k, const std::vector<std::vector<TilePlacement>>& placements,
                              std::unordered_map<int64_t, std::string>& iter, const Pending& p) {
  Violation v;
  ViolationDetail& d = v.detail;
  v.kind = p.kind;
  v.involved = {k.tensors[p.tensor].name};
  d.block = block_of(k, p.tensor, p.block);
  d.instruction = k.instrs[p.instr].name;
  d.instruction_source = k.instrs[p.instr].source;
  d.tensor_source = k.tensors[p.tensor].source;
  d.iteration = iter[p.event];
  d.occurrences = p.occurrences;
  std::string head = std::string(violation_kind_name(p.kind)) + ": tensor " + v.involved[0] +
                     at(d.tensor_source, "declared at ") + " block " + block_string(d.block) + " is read by " +
                     d.instruction + at(d.instruction_source) + " at " + d.iteration;
  if (p.kind == ViolationKind::kReadBeforeWrite) {
    v.message = head + " before any instruction wrote it";
  } else {
    const TilePlacement& pl = placements[p.tensor][p.block];
    std::string tile = "its physical tile (partition " + std::to_string(pl.start_partition) + ", byte " +
                       std::to_string(pl.byte_addr) + ")";
    v.involved.push_back(k.tensors[p.by.tensor].name);
    d.by_block = block_of(k, p.by.tensor, p.by.block);
    d.by_instruction = k.instrs[p.by.instr].name;
    d.by_source = k.instrs[p.by.instr].source;
    d.by_iteration = iter[p.by.event];
    std::string by = (p.by.tensor == p.tensor ? "block " : "tensor " + k.tensors[p.by.tensor].name + " block ") +
                     block_string(block_of(k, p.by.tensor, p.by.block)) + " (" + d.by_instruction + at(d.by_source) +
                     " at " + d.by_iteration + ")";
    v.message = head + ", but " + tile + " was overwritten by " + by + " while that read was pending";
  }
  if (p.occurrences > 1) v.message += " [" + std::to_string(p.occurrences) + " times]";
  return v;
}

}  // namespace

Result<CheckReport> check_kernel(const Kernel& k, const CheckOptions& opt) {
  CheckReport rep;
  const int nt = static_cast<int>(k.tensors.size());
  rep.placements.resize(nt);
  for (int t = 0; t < nt; ++t) rep.placements[t] = evaluate_allocation(k, k.tensors[t]);
  const PhysicalTiles pt = physical_tiles(k, rep.placements);
  auto overlaps = overlap_graph(k, pt.tiles);
  if (!overlaps) return overlaps.error();
  const Simulation sim = simulate(k, pt, *overlaps, opt);
  rep.executions = sim.executions;
  rep.distinct_violations = sim.distinct;
  const std::vector<Static> statics = static_rules(k, rep.placements, sim);
  auto iter = name_iterations(k, pt, sim, statics);
  // Static violations first, then the simulation's, each list in order of discovery.
  for (const Static& s : statics) {
    ++rep.distinct_violations;
    if (rep.violations.size() < opt.max_violations) rep.violations.push_back(static_violation(k, pt, sim, iter, s));
  }
  for (const Pending& p : sim.pending)
    if (rep.violations.size() < opt.max_violations) rep.violations.push_back(simulated_violation(k, rep.placements, iter, p));
  return rep;
}

}  // namespace sp::nki
