// Every vector of tests/data/spyre/layout_cases.json and every example of seed 004 (tensor layouts).
#include <gtest/gtest.h>

#include <fstream>
#include <numeric>

#include "core/json_reader.h"
#include "layout/dma.h"
#include "layout/layout.h"

namespace sp::layout {
namespace {

Json load_cases() {
  std::ifstream f(std::string(SCRATCHPLAN_DATA_DIR) + "/spyre/layout_cases.json");
  EXPECT_TRUE(f.good()) << "layout_cases.json not found";
  return f.good() ? Json::parse(f) : Json::object();
}

DType dt(const std::string& name) {
  auto d = parse_dtype(name);
  EXPECT_TRUE(d.ok()) << name;
  return d.ok() ? *d : DType::kFp16;
}

std::vector<int64_t> ints(const Json& j) { return j.get<std::vector<int64_t>>(); }

// Host -> device -> host through the descriptors; every host element must come back and every
// device position the decomposition calls padding must stay untouched.
void expect_round_trip(const Layout& l) {
  auto h2d = dma_descriptors(l, DmaDirection::kHostToDevice);
  auto d2h = dma_descriptors(l, DmaDirection::kDeviceToHost);
  ASSERT_TRUE(h2d.ok()) << h2d.error().message;
  ASSERT_TRUE(d2h.ok()) << d2h.error().message;
  // Large (heavily padded) layouts: the descriptors passed check_dma; skip the element walk.
  if (device_elements(l) > (Dim{1} << 21)) return;
  Offset host_span = 1;
  for (std::size_t h = 0; h < l.host_size.size(); ++h) host_span += (l.host_size[h] - 1) * l.host_strides[h];
  std::vector<int64_t> host(static_cast<std::size_t>(host_span)), back(host.size(), -7);
  std::iota(host.begin(), host.end(), 1);
  std::vector<int64_t> dev(static_cast<std::size_t>(device_elements(l)), 0);
  run_dma(*h2d, DmaDirection::kHostToDevice, host.data(), dev.data());
  run_dma(*d2h, DmaDirection::kDeviceToHost, back.data(), dev.data());
  // Every host element (reachable through host strides) comes back.
  std::vector<Dim> idx(l.host_size.size(), 0);
  const Dim n = host_elements(l);
  for (Dim e = 0; e < n; ++e) {
    Offset off = 0;
    Dim rem = e;
    for (int h = static_cast<int>(l.host_size.size()) - 1; h >= 0; --h) {
      off += (rem % l.host_size[h]) * l.host_strides[h];
      rem /= l.host_size[h];
    }
    ASSERT_EQ(back[off], host[off]) << to_string(l) << " host offset " << off;
  }
  auto dec = decompose(l);
  ASSERT_TRUE(dec.ok());
  std::vector<Dim> coord(l.device_size.size(), 0);
  const auto dstr = device_strides(l);
  for (Dim v = 0; v < device_elements(l); ++v) {
    Dim rem = v;
    for (int k = static_cast<int>(coord.size()) - 1; k >= 0; --k) {
      coord[k] = rem % l.device_size[k];
      rem /= l.device_size[k];
    }
    Offset hoff = -1;
    if (device_position_valid(l, *dec, coord, &hoff)) {
      EXPECT_EQ(dev[v], host[hoff]) << to_string(l) << " device " << v;
    } else {
      EXPECT_EQ(dev[v], 0) << to_string(l) << " padding at device " << v;
    }
  }
}

TEST(LayoutCases, ElemsPerStick) {
  Json c = load_cases();
  for (auto& [name, v] : c["elems_per_stick"].items()) {
    if (v.is_array()) {
      for (auto& ng : v) {
        auto r = parse_dtype(ng.get<std::string>());
        ASSERT_FALSE(r.ok()) << ng;
        EXPECT_NE(r.error().message.find("no device stick geometry"), std::string::npos);
      }
      continue;
    }
    auto d = parse_dtype(name);
    ASSERT_TRUE(d.ok()) << name;
    EXPECT_EQ(elems_per_stick(*d), v.get<int>()) << name;
    EXPECT_EQ(elems_per_stick(*d) * dtype_info(*d).bits, 1024) << name;  // 128 bytes per stick
  }
}

TEST(LayoutCases, DefaultLayouts) {
  Json c = load_cases();
  ASSERT_FALSE(c["default_layout"].empty());
  for (auto& k : c["default_layout"]) {
    auto l = default_layout(ints(k["host_size"]), dt(k["dtype"]));
    ASSERT_TRUE(l.ok()) << k.dump() << l.error().message;
    EXPECT_EQ(l->device_size, ints(k["device_size"])) << k.dump();
    EXPECT_EQ(l->stride_map, ints(k["stride_map"])) << k.dump();
    Bytes expect = 128;
    for (std::size_t i = 0; i + 1 < l->device_size.size(); ++i) expect *= l->device_size[i];
    EXPECT_EQ(device_bytes(*l), expect);
    expect_round_trip(*l);
  }
}

TEST(LayoutCases, DimOrderLayouts) {
  Json c = load_cases();
  int checked = 0;
  for (auto& k : c["layout_with_dim_order"]) {
    auto l = layout_from_dim_order(ints(k["host_size"]), dt(k["dtype"]),
                                   k["dim_order"].get<std::vector<int>>(), ints(k["host_strides"]));
    ASSERT_TRUE(l.ok()) << k.dump() << l.error().message;
    if (!k["device_size"].is_null()) {
      EXPECT_EQ(l->device_size, ints(k["device_size"])) << k.dump();
    }
    if (!k["stride_map"].is_null()) {
      EXPECT_EQ(l->stride_map, ints(k["stride_map"])) << k.dump();
    }
    expect_round_trip(*l);
    ++checked;
  }
  EXPECT_EQ(checked, 23);
}

TEST(LayoutCases, ExplicitLayoutsRoundTrip) {
  Json c = load_cases();
  int checked = 0;
  for (auto& k : c["explicit_layouts_that_roundtrip_host_device"]) {
    std::vector<Dim> size = ints(k["host_size"]);
    // "sliced_batch": the test transfers the second half of dim 0; the transferred view is that half.
    if (k["group"].get<std::string>().rfind("sliced_batch", 0) == 0) size[0] /= 2;
    auto l = explicit_layout(size, ints(k["host_strides"]), dt(k["dtype"]), ints(k["device_size"]),
                             ints(k["stride_map"]));
    ASSERT_TRUE(l.ok()) << k.dump() << " " << l.error().message;
    expect_round_trip(*l);
    ++checked;
  }
  EXPECT_EQ(checked, 64);
}

TEST(LayoutCases, StrFormat) {
  Json c = load_cases();
  auto l = default_layout({512, 256}, DType::kFp16);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(to_string(*l), c["str_format"].get<std::string>());
}

TEST(LayoutCases, Validation) {
  auto neg = explicit_layout({4}, {}, DType::kFp16, {-1, 64}, {64, 1});
  ASSERT_FALSE(neg.ok());
  EXPECT_EQ(neg.error().message, "device dimension 0 has negative size -1");
  auto len = explicit_layout({4}, {}, DType::kFp16, {1, 1, 64}, {64, 1});
  ASSERT_FALSE(len.ok());
  EXPECT_EQ(len.error().message, "stride_map has 2 entries for 3");
  auto empty = default_layout({0, 128}, DType::kFp16);  // size-0 dims are legal, 0 bytes
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(device_bytes(*empty), 0);
  auto minus_and_zero = explicit_layout({60}, {}, DType::kFp16, {1, 512, 64}, {-1, 0, 1});
  EXPECT_TRUE(minus_and_zero.ok());
  auto uncovered = explicit_layout({200}, {}, DType::kFp16, {2, 64}, {64, 1});
  ASSERT_FALSE(uncovered.ok());
  EXPECT_NE(uncovered.error().message.find("holds 128 of the 200"), std::string::npos) << uncovered.error().message;
  auto wrong_eps = explicit_layout({60}, {}, DType::kFp32, {1, 64}, {64, 1});
  ASSERT_FALSE(wrong_eps.ok());
  EXPECT_NE(wrong_eps.error().message.find("fp32 needs 32"), std::string::npos);
}

TEST(LayoutCases, BroadcastHostTensor) {
  // An expanded host tensor (stride 0) gets a broadcast device dim: stride_map 0.
  auto l = default_layout({4, 128}, DType::kFp16, {0, 1});
  ASSERT_TRUE(l.ok()) << l.error().message;
  EXPECT_EQ(l->device_size, (std::vector<Dim>{2, 4, 64}));
  EXPECT_EQ(l->stride_map, (std::vector<Stride>{64, 0, 1}));
  auto h2d = dma_descriptors(*l, DmaDirection::kHostToDevice);
  auto d2h = dma_descriptors(*l, DmaDirection::kDeviceToHost);
  ASSERT_TRUE(h2d.ok() && d2h.ok());
  EXPECT_EQ((*h2d)[0].ranges, (std::vector<Dim>{2, 4, 64}));  // every copy is written
  EXPECT_EQ((*d2h)[0].ranges, (std::vector<Dim>{2, 1, 64}));  // and read back once
  expect_round_trip(*l);
}

TEST(LayoutCases, TileMapExample) {
  Json c = load_cases();
  const Json& k = c["dma_tile_map_example"];
  // Sizes marked "*" are free; 3 stands in for them.
  auto l = explicit_layout({3, 4, 80}, ints(k["host_strides"]), DType::kFp16, {4, 2, 3, 64}, ints(k["stride_map"]));
  ASSERT_TRUE(l.ok()) << l.error().message;
  auto dec = decompose(*l);
  ASSERT_TRUE(dec.ok());
  EXPECT_EQ(std::vector<int64_t>(dec->host_dim_of.begin(), dec->host_dim_of.end()), ints(k["dim_map"]));
  for (std::size_t h = 0; h < 3; ++h) {
    std::vector<int64_t> dims;
    for (const Level& lv : dec->levels[h]) dims.push_back(lv.device_dim);
    EXPECT_EQ(dims, ints(k["tile_map"][h])) << "host dim " << h;
  }
  expect_round_trip(*l);
}

TEST(LayoutCases, LegacyDimMapEra) {
  // v1 device strides are the row-major strides of device_size in every era.
  Json c = load_cases();
  for (auto& k : c["legacy_dim_map_era"]["v1(device_strides, StickFormat)"]) {
    Layout l;
    l.device_size = ints(k["device_size"]);
    EXPECT_EQ(device_strides(l), ints(k["device_strides"]));
  }
  // v2 dim_maps that describe today's layouts: the decomposition's host dim per device dim.
  for (auto& k : c["legacy_dim_map_era"]["v2(dim_map, host_stick_dim)"]) {
    if (!k.contains("host") || (k.contains("dim_order") && k["dim_order"].size() != k["host"].size())) continue;
    std::vector<int> order(k["host"].size());
    std::iota(order.begin(), order.end(), 0);
    if (k.contains("dim_order")) order = k["dim_order"].get<std::vector<int>>();
    auto l = layout_from_dim_order(ints(k["host"]), DType::kFp16, order);
    ASSERT_TRUE(l.ok());
    EXPECT_EQ(l->device_size, ints(k["device_size"]));
    auto dec = decompose(*l);
    ASSERT_TRUE(dec.ok());
    EXPECT_EQ(std::vector<int64_t>(dec->host_dim_of.begin(), dec->host_dim_of.end()), ints(k["dim_map"]));
    EXPECT_EQ(stick_host_dim(*l), k["host_stick_dim"].get<int>());
  }
}

// Seed 004 examples.
TEST(LayoutSeed004, DefaultAndDimOrder) {
  auto l = default_layout({5, 100, 150}, DType::kFp16);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->device_size, (std::vector<Dim>{100, 3, 5, 64}));
  EXPECT_EQ(l->stride_map, (std::vector<Stride>{150, 64, 15000, 1}));
  EXPECT_EQ(to_string(*l),
            "SpyreTensorLayout(device_size=[100, 3, 5, 64], stride_map =[150, 64, 15000, 1], "
            "device_dtype=DataFormats.SEN169_FP16)");
  auto o = layout_from_dim_order({5, 100, 150}, DType::kFp16, {1, 0, 2});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->device_size, (std::vector<Dim>{5, 3, 100, 64}));
  EXPECT_EQ(o->stride_map, (std::vector<Stride>{15000, 64, 150, 1}));
  auto big = default_layout({128, 256, 512}, DType::kFp16);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->device_size, (std::vector<Dim>{256, 8, 128, 64}));
  EXPECT_EQ(big->stride_map, (std::vector<Stride>{512, 64, 131072, 1}));
  auto e2e = default_layout({50, 10, 200}, DType::kFp16);
  ASSERT_TRUE(e2e.ok());
  EXPECT_EQ(e2e->device_size, (std::vector<Dim>{10, 4, 50, 64}));
  // The same device layout serves a smaller [100, 200, 500] tensor with padding.
  auto padded = explicit_layout({100, 200, 500}, {131072, 512, 1}, DType::kFp16, {256, 8, 128, 64}, {512, 64, 131072, 1});
  ASSERT_TRUE(padded.ok()) << padded.error().message;
  auto padded_dma = dma_descriptors(*padded, DmaDirection::kHostToDevice);
  ASSERT_TRUE(padded_dma.ok());  // checked: moves exactly 100*200*500 elements, all in bounds
  EXPECT_EQ(padded_dma->size(), 2u);  // 500 = 7 full sticks + a 52-element tail
  EXPECT_EQ((*padded_dma)[1].ranges, (std::vector<Dim>{200, 1, 100, 52}));
  // Size-1 dims do not contribute: [512, 1, 256] has the default layout of [512, 256].
  auto with_one = default_layout({512, 1, 256}, DType::kFp16);
  ASSERT_TRUE(with_one.ok());
  EXPECT_EQ(with_one->device_size, (std::vector<Dim>{4, 512, 64}));
  EXPECT_EQ(with_one->stride_map, (std::vector<Stride>{64, 256, 1}));
  // 150 fp16 values pad to 192: 3 sticks.
  EXPECT_EQ(device_bytes(*l), 100 * 3 * 5 * 128);
}

TEST(LayoutSeed004, PyTorchStridesCanonicalFormAndDimMap) {
  // (4, 6) row-major: strides (6, 1); element (1, 2) sits at offset 8.
  EXPECT_EQ(contiguous_strides({4, 6}), (std::vector<Stride>{6, 1}));
  // (size=[512, 1, 256], stride=[256, 256, 1]) canonicalizes to ([512, 256], [256, 1]).
  std::vector<Dim> size = {512, 1, 256};
  std::vector<Stride> strides = contiguous_strides(size);
  EXPECT_EQ(strides, (std::vector<Stride>{256, 256, 1}));
  canonicalize(size, strides);
  EXPECT_EQ(size, (std::vector<Dim>{512, 256}));
  EXPECT_EQ(strides, (std::vector<Stride>{256, 1}));
  // The legacy dim_map of [128, 256, 512] / device [256, 8, 128, 64] is [1, 2, 0, 2].
  auto l = default_layout({128, 256, 512}, DType::kFp16);
  ASSERT_TRUE(l.ok());
  auto dec = decompose(*l);
  ASSERT_TRUE(dec.ok());
  EXPECT_EQ(dec->host_dim_of, (std::vector<int>{1, 2, 0, 2}));
  // offset = dot(device_coordinates, stride_map): device (3, 2, 5, 7) is host (5, 3, 135).
  Offset off = -1;
  ASSERT_TRUE(device_position_valid(*l, *dec, {3, 2, 5, 7}, &off));
  EXPECT_EQ(off, 5 * 131072 + 3 * 512 + 2 * 64 + 7);
}

TEST(LayoutSeed004, DmaSpec1024x256) {
  auto l = default_layout({1024, 256}, DType::kFp16);
  ASSERT_TRUE(l.ok());
  auto d = dma_descriptors(*l, DmaDirection::kHostToDevice);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->size(), 1u);
  EXPECT_EQ((*d)[0].ranges, (std::vector<Dim>{4, 1024, 64}));
  EXPECT_EQ((*d)[0].device_strides, (std::vector<Offset>{65536, 64, 1}));
  EXPECT_EQ((*d)[0].host_strides, (std::vector<Stride>{64, 256, 1}));
  EXPECT_EQ(to_string((*d)[0]), "((4, 1024, 64), (65536, 64, 1), (64, 256, 1))");
}

TEST(LayoutSeed004, DmaPartialTile) {
  auto l = default_layout({5, 100, 150}, DType::kFp16);
  ASSERT_TRUE(l.ok());
  auto d = dma_descriptors(*l, DmaDirection::kHostToDevice);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->size(), 2u);  // two full sticks, then the 22-element tail
  EXPECT_EQ((*d)[0].ranges, (std::vector<Dim>{100, 2, 5, 64}));
  EXPECT_EQ((*d)[1].ranges, (std::vector<Dim>{100, 1, 5, 22}));
  EXPECT_EQ((*d)[1].host_offset, 128);
  EXPECT_EQ((*d)[1].device_offset, 2 * 5 * 64);
  expect_round_trip(*l);
}

}  // namespace
}  // namespace sp::layout
