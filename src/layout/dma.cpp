#include "layout/dma.h"

#include <sstream>

namespace sp::layout {
namespace {

struct Piece {
  int device_dim;  // which device dim
  Dim start;       // first coordinate
  Dim count;       // number of coordinates
};
using Box = std::vector<Piece>;

// Boxes covering the valid positions of levels[0..i] under bound b (see HostDimLevels).
std::vector<Box> boxes(const Layout& l, const std::vector<Level>& lv, int i, Dim b) {
  if (i < 0) return b > 0 ? std::vector<Box>{Box{}} : std::vector<Box>{};
  const Dim c = lv[static_cast<std::size_t>(i)].coef;
  const int k = lv[static_cast<std::size_t>(i)].device_dim;
  const Dim n = l.device_size[static_cast<std::size_t>(k)];
  const Dim q = std::min(n, b / c);
  std::vector<Box> out;
  if (q > 0)
    for (Box inner : boxes(l, lv, i - 1, c)) {
      inner.push_back({k, 0, q});
      out.push_back(std::move(inner));
    }
  if (q < n && b - q * c > 0)
    for (Box inner : boxes(l, lv, i - 1, b - q * c)) {
      inner.push_back({k, q, 1});
      out.push_back(std::move(inner));
    }
  return out;
}

}  // namespace

Result<std::vector<DmaDescriptor>> dma_descriptors(const Layout& l, DmaDirection dir) {
  if (auto st = validate(l); !st) return st.error();
  std::vector<DmaDescriptor> out;
  if (host_elements(l) == 0 || device_elements(l) == 0) return out;
  auto dec = decompose(l);
  if (!dec) return dec.error();
  const std::size_t rank = l.device_size.size();
  const std::vector<Offset> dstr = device_strides(l);
  // Unmapped dims: synthetic and size-1 dims hold data at 0 only; broadcast dims are copied.
  std::vector<Dim> base_start(rank, 0), base_count(rank, 1);
  for (std::size_t k = 0; k < rank; ++k)
    if (dec->host_dim_of[k] < 0 && l.stride_map[k] == 0 && dir == DmaDirection::kHostToDevice)
      base_count[k] = l.device_size[k];
  // Cartesian product over host dims of their box lists.
  std::vector<std::vector<Box>> per_dim;
  for (std::size_t h = 0; h < dec->levels.size(); ++h) {
    const auto& lv = dec->levels[h];
    if (lv.empty()) continue;
    per_dim.push_back(boxes(l, lv, static_cast<int>(lv.size()) - 1, dec->host_size[h]));
  }
  std::vector<std::size_t> pick(per_dim.size(), 0);
  while (true) {
    std::vector<Dim> start = base_start, count = base_count;
    for (std::size_t j = 0; j < per_dim.size(); ++j)
      for (const Piece& p : per_dim[j][pick[j]]) {
        start[static_cast<std::size_t>(p.device_dim)] = p.start;
        count[static_cast<std::size_t>(p.device_dim)] = p.count;
      }
    DmaDescriptor d;
    for (std::size_t k = 0; k < rank; ++k) {
      const Stride hs = l.stride_map[k] > 0 ? l.stride_map[k] : 0;
      d.host_offset += start[k] * hs;
      d.device_offset += start[k] * dstr[k];
      d.ranges.push_back(count[k]);
      d.device_strides.push_back(dstr[k]);
      d.host_strides.push_back(hs);
    }
    out.push_back(std::move(d));
    std::size_t j = per_dim.size();
    while (j > 0 && ++pick[j - 1] == per_dim[j - 1].size()) pick[--j] = 0;
    if (j == 0) break;
  }
  if (auto st = check_dma(l, out, dir); !st) return internal_error("DMA descriptors failed their check: " + st.error().message);
  return out;
}

Status check_dma(const Layout& l, const std::vector<DmaDescriptor>& descs, DmaDirection dir) {
  const Dim dev_n = device_elements(l);
  Offset host_max = 0;
  for (std::size_t h = 0; h < l.host_size.size(); ++h)
    if (l.host_size[h] > 0) host_max += (l.host_size[h] - 1) * std::max<Stride>(l.host_strides[h], 0);
  Dim moved = 0;
  for (std::size_t i = 0; i < descs.size(); ++i) {
    const auto& d = descs[i];
    const std::string at = "descriptor " + std::to_string(i) + ": ";
    if (d.ranges.size() != l.device_size.size() || d.host_strides.size() != d.ranges.size() ||
        d.device_strides.size() != d.ranges.size())
      return bad_input(at + "has " + std::to_string(d.ranges.size()) + " loops for device rank " +
                       std::to_string(l.device_size.size()));
    Offset hi_dev = d.device_offset, hi_host = d.host_offset;
    Dim elems = 1;
    for (std::size_t k = 0; k < d.ranges.size(); ++k) {
      if (d.ranges[k] <= 0) return bad_input(at + "empty loop " + std::to_string(k));
      if (k > 0 && d.device_strides[k] > d.device_strides[k - 1])
        return bad_input(at + "loops are not in decreasing device-stride order");
      hi_dev += (d.ranges[k] - 1) * d.device_strides[k];
      hi_host += (d.ranges[k] - 1) * d.host_strides[k];
      if (d.host_strides[k] != 0) elems *= d.ranges[k];
      else if (dir == DmaDirection::kDeviceToHost && d.ranges[k] != 1)
        return bad_input(at + "device-to-host loop " + std::to_string(k) + " has no host stride but range " +
                         std::to_string(d.ranges[k]));
    }
    if (d.device_offset < 0 || hi_dev >= dev_n) return bad_input(at + "reaches outside the device tensor");
    if (d.host_offset < 0 || hi_host > host_max) return bad_input(at + "reaches outside the host tensor");
    moved += elems;
  }
  if (moved != distinct_host_elements(l))
    return bad_input("descriptors move " + std::to_string(moved) + " host elements, the tensor has " +
                     std::to_string(distinct_host_elements(l)));
  return ok_status();
}

std::string to_string(const DmaDescriptor& d) {
  auto tup = [](const std::vector<int64_t>& v) {
    std::ostringstream o;
    o << "(";
    for (std::size_t i = 0; i < v.size(); ++i) o << (i ? ", " : "") << v[i];
    o << (v.size() == 1 ? ",)" : ")");
    return o.str();
  };
  std::string s = "(" + tup(d.ranges) + ", " + tup(d.device_strides) + ", " + tup(d.host_strides) + ")";
  if (d.host_offset != 0 || d.device_offset != 0)
    s += " at host " + std::to_string(d.host_offset) + ", device " + std::to_string(d.device_offset);
  return s;
}

}  // namespace sp::layout
