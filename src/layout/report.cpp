#include "layout/report.h"

#include <sstream>

namespace sp::layout {

namespace {
std::string joined(const std::vector<int64_t>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

Status check_list(const std::string& flag, const std::vector<int64_t>& v, int64_t min) {
  for (int64_t x : v)
    if (x < min) return bad_input(flag + " " + joined(v) + ": " + std::to_string(x) + " is below " + std::to_string(min));
  return ok_status();
}
}  // namespace

Result<LayoutAnswer> answer_layout(const std::vector<int64_t>& size, const std::string& dtype,
                                   const std::vector<int64_t>& dim_order, const std::vector<int64_t>& strides, bool dma) {
  if (Status st = check_list("--size", size, 1); !st) return st.error();
  auto dt = parse_dtype(dtype);
  if (!dt) return bad_input("--dtype: " + dt.error().message);
  if (Status st = check_list("--strides", strides, 0); !st) return st.error();
  if (Status st = check_list("--dim-order", dim_order, -1); !st) return st.error();
  const std::string where = "--size " + joined(size) + (dim_order.empty() ? "" : " --dim-order " + joined(dim_order)) +
                            (strides.empty() ? "" : " --strides " + joined(strides)) + ": ";
  auto named = [&](Error e) {
    e.message = where + e.message;  // keeps the kind: a failed DMA self-check stays internal
    return e;
  };
  LayoutAnswer a;
  a.dma = dma;
  Result<Layout> l = bad_input("unset");
  if (!dim_order.empty()) {
    std::vector<int> order;
    for (int64_t d : dim_order) {
      if (d > 1'000'000) return bad_input("--dim-order " + joined(dim_order) + ": " + std::to_string(d) + " is not a dimension");
      order.push_back(static_cast<int>(d));
    }
    l = layout_from_dim_order(size, *dt, order, strides);
  } else {
    l = default_layout(size, *dt, strides);
  }
  if (!l) return named(l.error());
  a.layout = std::move(*l);
  if (dma) {
    auto h2d = dma_descriptors(a.layout, DmaDirection::kHostToDevice);
    if (!h2d) return named(h2d.error());
    auto d2h = dma_descriptors(a.layout, DmaDirection::kDeviceToHost);
    if (!d2h) return named(d2h.error());
    a.h2d = std::move(*h2d);
    a.d2h = std::move(*d2h);
  }
  return a;
}

Json layout_report_json(const Layout& l, bool dma, const std::vector<DmaDescriptor>& h2d,
                        const std::vector<DmaDescriptor>& d2h) {
  Json j;
  j["format"] = "scratchplan-layout";
  j["version"] = 1;
  j["host_size"] = l.host_size;
  j["host_strides"] = l.host_strides;
  j["dtype"] = dtype_name(l.dtype);
  j["elems_per_stick"] = elems_per_stick(l.dtype);
  j["device_size"] = l.device_size;
  j["stride_map"] = l.stride_map;
  j["device_strides"] = device_strides(l);
  j["device_bytes"] = device_bytes(l);
  j["stick_host_dim"] = stick_host_dim(l);
  if (dma) {
    for (auto* dir : {&h2d, &d2h}) {
      Json arr = Json::array();
      for (const auto& d : *dir)
        arr.push_back({{"host_offset", d.host_offset},
                       {"device_offset", d.device_offset},
                       {"ranges", d.ranges},
                       {"device_strides", d.device_strides},
                       {"host_strides", d.host_strides}});
      j[dir == &h2d ? "dma_host_to_device" : "dma_device_to_host"] = arr;
    }
  }
  return j;
}

std::string layout_report_text(const Layout& l, bool dma, const std::vector<DmaDescriptor>& h2d,
                               const std::vector<DmaDescriptor>& d2h) {
  std::ostringstream os;
  os << to_string(l) << "\n";
  os << "host size " << format_dims(l.host_size) << ", strides " << format_dims(l.host_strides) << "; "
     << elems_per_stick(l.dtype) << " elements per stick\n";
  os << "device strides " << format_dims(device_strides(l)) << "; " << device_bytes(l) << " bytes on device\n";
  if (dma) {
    os << "DMA host->device ((ranges), (device strides), (host strides)):\n";
    for (const auto& d : h2d) os << "  " << to_string(d) << "\n";
    os << "DMA device->host:\n";
    for (const auto& d : d2h) os << "  " << to_string(d) << "\n";
  }
  return os.str();
}

}  // namespace sp::layout
