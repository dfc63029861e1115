// scratchplan layout --size 5,100,150 --dtype fp16 [--dim-order 1,0,2] [--dma] [--json]:
// prints the device layout of a host tensor (and its DMA descriptors).
#include <iostream>
#include <sstream>

#include "cli/verbs.h"
#include "core/json_reader.h"
#include "layout/dma.h"
#include "layout/layout.h"

namespace sp::cli {
namespace {

struct LayoutArgs {
  std::string size;
  std::string dtype = "fp16";
  std::string dim_order;
  std::string strides;
  bool dma = false;
  bool json = false;
};

// "5,100,150" -> {5, 100, 150}; an empty string is a scalar.
Result<std::vector<int64_t>> parse_list(const std::string& flag, const std::string& text, int64_t min) {
  std::vector<int64_t> out;
  if (text.empty()) return out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (...) {
      used = 0;
    }
    if (used == 0 || used != item.size())
      return bad_input(flag + " " + text + ": '" + item + "' is not an integer");
    if (v < min) return bad_input(flag + " " + text + ": " + std::to_string(v) + " is below " + std::to_string(min));
    out.push_back(v);
  }
  return out;
}

int run_layout(const LayoutArgs& a) {
  auto fail = [](const Error& e) {
    std::cerr << "error: " << e.message << "\n";
    return exit_code(e);
  };
  auto size = parse_list("--size", a.size, 1);
  if (!size) return fail(size.error());
  auto dt = layout::parse_dtype(a.dtype);
  if (!dt) return fail(bad_input("--dtype: " + dt.error().message));
  auto strides = parse_list("--strides", a.strides, 0);
  if (!strides) return fail(strides.error());
  Result<layout::Layout> l = bad_input("unset");
  if (!a.dim_order.empty()) {
    auto order = parse_list("--dim-order", a.dim_order, -1);
    if (!order) return fail(order.error());
    l = layout::layout_from_dim_order(*size, *dt, std::vector<int>(order->begin(), order->end()), *strides);
  } else {
    l = layout::default_layout(*size, *dt, *strides);
  }
  if (!l) return fail(l.error());
  std::vector<layout::DmaDescriptor> h2d, d2h;
  if (a.dma) {
    auto x = layout::dma_descriptors(*l, layout::DmaDirection::kHostToDevice);
    if (!x) return fail(x.error());
    auto y = layout::dma_descriptors(*l, layout::DmaDirection::kDeviceToHost);
    if (!y) return fail(y.error());
    h2d = std::move(*x);
    d2h = std::move(*y);
  }
  if (a.json) {
    Json j;
    j["host_size"] = l->host_size;
    j["host_strides"] = l->host_strides;
    j["dtype"] = layout::dtype_name(l->dtype);
    j["elems_per_stick"] = layout::elems_per_stick(l->dtype);
    j["device_size"] = l->device_size;
    j["stride_map"] = l->stride_map;
    j["device_strides"] = layout::device_strides(*l);
    j["device_bytes"] = layout::device_bytes(*l);
    j["stick_host_dim"] = layout::stick_host_dim(*l);
    if (a.dma) {
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
    std::cout << j.dump(1) << "\n";
    return kExitOk;
  }
  std::cout << layout::to_string(*l) << "\n";
  std::cout << "host size " << layout::format_dims(l->host_size) << ", strides " << layout::format_dims(l->host_strides)
            << "; " << layout::elems_per_stick(l->dtype) << " elements per stick\n";
  std::cout << "device strides " << layout::format_dims(layout::device_strides(*l)) << "; "
            << layout::device_bytes(*l) << " bytes on device\n";
  if (a.dma) {
    std::cout << "DMA host->device ((ranges), (device strides), (host strides)):\n";
    for (const auto& d : h2d) std::cout << "  " << layout::to_string(d) << "\n";
    std::cout << "DMA device->host:\n";
    for (const auto& d : d2h) std::cout << "  " << layout::to_string(d) << "\n";
  }
  return kExitOk;
}

}  // namespace

void register_layout(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<LayoutArgs>();
  CLI::App* cmd = app.add_subcommand("layout", "Device layout (device_size, stride_map) of a host tensor");
  cmd->add_option("--size", args->size, "Host sizes, comma-separated (e.g. 5,100,150)")->required();
  cmd->add_option("--dtype", args->dtype, "fp16, bf16, fp32, fp8, int4, int2, int8, int32, int64, bool");
  cmd->add_option("--dim-order", args->dim_order, "Host dims outermost..innermost (last = stick dim; trailing -1 = sparse)");
  cmd->add_option("--strides", args->strides, "Host strides (default: contiguous)");
  cmd->add_flag("--dma", args->dma, "Also print the DMA (DCI) descriptors");
  cmd->add_flag("--json", args->json, "Machine-readable output");
  cmd->callback([args, &exit_code] { exit_code = run_layout(*args); });
}

}  // namespace sp::cli
