#include "nki/check_capacity.h"

#include <algorithm>
#include <utility>

namespace sp::nki {

namespace {

// Bytes of [lo, hi) ranges covered at least once (the ranges may overlap).
Bytes union_length(std::vector<std::pair<Bytes, Bytes>> ranges) {
  std::sort(ranges.begin(), ranges.end());
  Bytes total = 0, end = INT64_MIN;
  for (auto [lo, hi] : ranges) {
    if (hi <= end) continue;
    total += hi - std::max(lo, end);
    end = hi;
  }
  return total;
}

class MemorySweep {
 public:
  MemorySweep(const Kernel& k, const std::vector<std::vector<TilePlacement>>& placements, Memory memory)
      : k_(k), placements_(placements), memory_(memory) {}

  // The first instant the live compiler-placed tensors need more than the live addressed ones
  // leave free, or none.
  std::vector<CapacityShortfall> run(const std::vector<int64_t>& first, const std::vector<int64_t>& last) {
    std::vector<TensorId> order;
    for (TensorId t = 0; t < static_cast<TensorId>(k_.tensors.size()); ++t)
      if (k_.tensors[t].buffer == memory_ && first[t] >= 0 && (placed(t) || addressed(t))) order.push_back(t);
    std::stable_sort(order.begin(), order.end(), [&](TensorId a, TensorId b) { return first[a] < first[b]; });
    std::vector<TensorId> live;
    for (TensorId t : order) {
      const int64_t now = first[t];
      live.erase(std::remove_if(live.begin(), live.end(), [&](TensorId u) { return last[u] < now; }), live.end());
      live.push_back(t);
      Bytes need = 0;
      int count = 0;
      std::vector<std::pair<Bytes, Bytes>> used;
      for (TensorId u : live) {
        if (placed(u)) {
          need += footprint(u);
          ++count;
        } else {
          for (const TilePlacement& p : placements_[u]) used.push_back(occupied(u, p));
        }
      }
      if (count == 0) continue;
      const Bytes capacity = memory_ == Memory::kPsum ? k_.hw.psum_bytes() : k_.hw.sbuf_usable();
      const Bytes taken = union_length(std::move(used));
      if (need <= capacity - taken) continue;
      const TensorId blamed = placed(t) ? t : *std::find_if(live.begin(), live.end(), [&](TensorId u) { return placed(u); });
      return {{blamed, describe(count, need, taken, capacity)}};
    }
    return {};
  }

 private:
  bool placed(TensorId t) const {
    const Tensor& x = k_.tensors[t];
    return x.alloc.kind == AllocKind::kAuto && x.alloc.compiler_placed;
  }
  bool addressed(TensorId t) const { return k_.tensors[t].alloc.kind != AllocKind::kAuto && !placements_[t].empty(); }

  // What a compiler-placed tensor needs per partition: PSUM whole banks (a matmul accumulates in
  // one bank), SBUF its bytes rounded up to 4.
  Bytes footprint(TensorId t) const {
    const Tensor& x = k_.tensors[t];
    const Bytes bytes = std::max<Bytes>(x.fbytes(), 1) * std::max<int64_t>(x.num_blocks(), 1);
    if (memory_ == Memory::kPsum) {
      const Bytes bank = k_.hw.psum_bank_bytes;
      return (bytes + bank - 1) / bank * bank;
    }
    return (bytes + 3) / 4 * 4;
  }
  // The bytes an addressed tile keeps from the compiler (PSUM: the whole banks it touches), in
  // every partition (a compiler-placed tensor spans the partitions from 0).
  std::pair<Bytes, Bytes> occupied(TensorId t, const TilePlacement& p) const {
    const Bytes lo = std::max<Bytes>(p.byte_addr, 0), hi = lo + std::max<Bytes>(k_.tensors[t].fbytes(), 1);
    if (memory_ != Memory::kPsum) return {lo, hi};
    const Bytes bank = k_.hw.psum_bank_bytes;
    return {lo / bank * bank, (hi + bank - 1) / bank * bank};
  }

  std::string describe(int count, Bytes need, Bytes taken, Bytes capacity) const {
    if (memory_ == Memory::kPsum) {
      const Bytes bank = k_.hw.psum_bank_bytes;
      return std::to_string(count) + " PSUM tensor(s) without address= are live together and need " +
             std::to_string(need / bank) + " bank(s), but the addressed PSUM tensors live then leave " +
             std::to_string((capacity - taken) / bank) + " of the " + std::to_string(k_.hw.psum_banks) + " banks free";
    }
    return std::to_string(count) + " SBUF tensor(s) without address= are live together and need " +
           std::to_string(need) + " bytes per partition, but the addressed SBUF tensors live then leave " +
           std::to_string(capacity - taken) + " of the " + std::to_string(capacity) + " usable bytes free";
  }

  const Kernel& k_;
  const std::vector<std::vector<TilePlacement>>& placements_;
  Memory memory_;
};

}  // namespace

std::vector<CapacityShortfall> compiler_placed_shortfalls(const Kernel& k,
                                                          const std::vector<std::vector<TilePlacement>>& placements,
                                                          const std::vector<int64_t>& first,
                                                          const std::vector<int64_t>& last) {
  std::vector<CapacityShortfall> out;
  if (std::none_of(k.tensors.begin(), k.tensors.end(), [](const Tensor& t) { return t.alloc.compiler_placed; }))
    return out;  // nothing the compiler places: nothing to sweep
  for (Memory memory : {Memory::kPsum, Memory::kSbuf}) {
    auto s = MemorySweep(k, placements, memory).run(first, last);
    out.insert(out.end(), s.begin(), s.end());
  }
  return out;
}

}  // namespace sp::nki
