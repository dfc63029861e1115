// Property tests: random shapes, dtypes, dim orders (dense and sparse) and host memory orders.
// The expected padding is derived here from the construction rule alone (stick slots), not from
// the library's decomposition, and the stride_map walk must visit every host element once.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "core/rng.h"
#include "layout/dma.h"
#include "layout/layout.h"

namespace sp::layout {
namespace {

struct Case {
  std::vector<Dim> size;
  std::vector<Stride> strides;
  std::vector<int> order;
  DType dtype;
};

Case random_case(Rng& rng) {
  Case c;
  const int rank = static_cast<int>(rng.range(1, 4));
  Dim total = 1;
  for (int i = 0; i < rank; ++i) {
    Dim s = rng.chance(0.2) ? 1 : rng.range(2, 150);
    while (total * s > 6000) s = std::max<Dim>(1, s / 2);
    c.size.push_back(s);
    total *= s;
  }
  // Host memory order: a random permutation of contiguous strides.
  std::vector<int> mem(rank);
  std::iota(mem.begin(), mem.end(), 0);
  if (rng.chance(0.5))
    for (int i = rank - 1; i > 0; --i) std::swap(mem[i], mem[rng.below(i + 1)]);
  c.strides.assign(rank, 1);
  Stride acc = 1;
  for (int i = rank - 1; i >= 0; --i) {
    c.strides[mem[i]] = acc;
    acc *= c.size[mem[i]];
  }
  c.order.resize(rank);
  std::iota(c.order.begin(), c.order.end(), 0);
  for (int i = rank - 1; i > 0; --i) std::swap(c.order[i], c.order[rng.below(i + 1)]);
  if (rng.chance(0.2)) c.order.push_back(-1);
  const auto& dts = all_dtypes();
  c.dtype = dts[rng.below(dts.size())].dtype;
  return c;
}

TEST(LayoutProperty, StrideMapWalkVisitsEachHostElementOnceAndPadsExactly) {
  Rng rng(2026);
  int tested = 0;
  for (int iter = 0; iter < 400; ++iter) {
    Case c = random_case(rng);
    auto l = layout_from_dim_order(c.size, c.dtype, c.order, c.strides);
    ASSERT_TRUE(l.ok()) << l.error().message;
    if (device_elements(*l) > 400000) continue;
    ++tested;
    const Dim eps = elems_per_stick(c.dtype);
    const int stick = c.order.back();
    const bool stick_real = stick >= 0 && c.size[stick] != 1;
    const std::size_t rank = l->device_size.size();
    const std::size_t count_slot = rank - 2;  // the stick-count slot precedes dim_order[0] (or the stick)
    const std::size_t count_pos = c.order.size() == 1 ? 0 : rank - 3;
    (void)count_slot;
    auto dec = decompose(*l);
    ASSERT_TRUE(dec.ok());
    const Dim n = host_elements(*l);
    std::vector<int> visits(static_cast<std::size_t>(n), 0);
    std::vector<Dim> coord(rank, 0);
    Dim padding = 0;
    for (Dim v = 0; v < device_elements(*l); ++v) {
      Dim rem = v;
      for (int k = static_cast<int>(rank) - 1; k >= 0; --k) {
        coord[k] = rem % l->device_size[k];
        rem /= l->device_size[k];
      }
      bool pad;
      if (stick_real) pad = coord[count_pos] * eps + coord[rank - 1] >= c.size[stick];
      else pad = coord[rank - 1] > 0;
      Offset lib_off = -1;
      const bool lib_valid = device_position_valid(*l, *dec, coord, &lib_off);
      ASSERT_EQ(lib_valid, !pad) << to_string(*l) << " device " << v;
      if (pad) {
        ++padding;
        continue;
      }
      Offset off = 0;
      for (std::size_t k = 0; k < rank; ++k)
        if (l->stride_map[k] > 0) off += coord[k] * l->stride_map[k];
      ASSERT_EQ(off, lib_off);
      ASSERT_GE(off, 0);
      ASSERT_LT(off, n);
      ++visits[static_cast<std::size_t>(off)];
    }
    for (Dim e = 0; e < n; ++e) ASSERT_EQ(visits[e], 1) << to_string(*l) << " host element " << e;
    EXPECT_EQ(padding, device_elements(*l) - n);
    // Bytes: one 128-byte stick per device row.
    EXPECT_EQ(device_bytes(*l) * 8, device_elements(*l) * dtype_info(c.dtype).bits);
  }
  EXPECT_GT(tested, 300);
}

TEST(LayoutProperty, DmaRoundTripHostDeviceHost) {
  Rng rng(7);
  int tested = 0;
  for (int iter = 0; iter < 300; ++iter) {
    Case c = random_case(rng);
    auto l = rng.chance(0.3) ? default_layout(c.size, c.dtype, c.strides)
                             : layout_from_dim_order(c.size, c.dtype, c.order, c.strides);
    ASSERT_TRUE(l.ok()) << l.error().message;
    if (device_elements(*l) > 400000) continue;
    ++tested;
    for (auto dir : {DmaDirection::kHostToDevice, DmaDirection::kDeviceToHost}) {
      auto d = dma_descriptors(*l, dir);
      ASSERT_TRUE(d.ok()) << to_string(*l) << ": " << d.error().message;
    }
    auto h2d = *dma_descriptors(*l, DmaDirection::kHostToDevice);
    auto d2h = *dma_descriptors(*l, DmaDirection::kDeviceToHost);
    const Dim n = host_elements(*l);
    std::vector<int64_t> host(static_cast<std::size_t>(n)), back(host.size(), -1);
    for (Dim i = 0; i < n; ++i) host[i] = i * 7 + 3;
    std::vector<int64_t> dev(static_cast<std::size_t>(device_elements(*l)), -5);
    run_dma(h2d, DmaDirection::kHostToDevice, host.data(), dev.data());
    run_dma(d2h, DmaDirection::kDeviceToHost, back.data(), dev.data());
    ASSERT_EQ(back, host) << to_string(*l);
    const auto untouched = std::count(dev.begin(), dev.end(), -5);
    EXPECT_EQ(untouched, device_elements(*l) - n) << to_string(*l);  // padding stays untouched
    // A descriptor set with a wrong element count fails the checker.
    auto broken = h2d;
    for (std::size_t k = 0; k < broken[0].ranges.size(); ++k)
      if (broken[0].host_strides[k] != 0) {
        broken[0].ranges[k] += 1;
        EXPECT_FALSE(check_dma(*l, broken, DmaDirection::kHostToDevice).ok()) << to_string(*l);
        break;
      }
  }
  EXPECT_GT(tested, 200);
}

}  // namespace
}  // namespace sp::layout
