#include "layout/report.h"

#include <sstream>

namespace sp::layout {

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
