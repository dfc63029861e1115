// scratchplan.layout: device tensor layouts and DMA descriptors (src/layout), the `layout` verb.
#include <pybind11/stl.h>

#include "common.h"
#include "layout/dma.h"
#include "layout/layout.h"
#include "layout/report.h"

namespace sp::bindings {
namespace {

struct LayoutResult {
  layout::Layout layout;
  bool dma = false;
  std::vector<layout::DmaDescriptor> h2d, d2h;
};

std::string joined(const std::vector<int64_t>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

// The CLI's list checks ("--size 5,0: 0 is below 1").
void check_list(const std::string& flag, const std::vector<int64_t>& v, int64_t min) {
  for (int64_t x : v)
    if (x < min) throw BadInputError(flag + " " + joined(v) + ": " + std::to_string(x) + " is below " + std::to_string(min));
}

}  // namespace

void bind_layout(py::module_& m) {
  py::class_<LayoutResult>(m, "LayoutResult")
      .def_property_readonly("host_size", [](const LayoutResult& r) { return r.layout.host_size; })
      .def_property_readonly("host_strides", [](const LayoutResult& r) { return r.layout.host_strides; })
      .def_property_readonly("device_size", [](const LayoutResult& r) { return r.layout.device_size; })
      .def_property_readonly("stride_map", [](const LayoutResult& r) { return r.layout.stride_map; })
      .def_property_readonly("device_bytes", [](const LayoutResult& r) { return layout::device_bytes(r.layout); })
      .def("to_json", [](const LayoutResult& r) { return layout::layout_report_json(r.layout, r.dma, r.h2d, r.d2h).dump(1) + "\n"; })
      .def("report", [](const LayoutResult& r) { return layout::layout_report_text(r.layout, r.dma, r.h2d, r.d2h); });
  m.def(
      "layout_layout",
      [](std::vector<int64_t> size, std::string dtype, std::optional<std::vector<int64_t>> dim_order,
         std::optional<std::vector<int64_t>> strides, bool dma) {
        check_list("--size", size, 1);
        auto dt = layout::parse_dtype(dtype);
        if (!dt) throw BadInputError("--dtype: " + dt.error().message);
        std::vector<int64_t> st = strides ? *strides : std::vector<int64_t>{};
        check_list("--strides", st, 0);
        LayoutResult r;
        r.dma = dma;
        // The CLI names its flags as the input ("--size 5,3 --dim-order 5,0: ..."); so do we.
        const std::string where = "--size " + joined(size) +
                                  (dim_order && !dim_order->empty() ? " --dim-order " + joined(*dim_order) : "") +
                                  (st.empty() ? "" : " --strides " + joined(st)) + ": ";
        auto named = [&](auto result) {
          if (!result) {
            Error e = result.error();
            e.message = where + e.message;
            raise(e);
          }
          return std::move(*result);
        };
        if (dim_order && !dim_order->empty()) {
          check_list("--dim-order", *dim_order, -1);
          std::vector<int> order;
          for (int64_t d : *dim_order) {
            if (d > 1'000'000) throw BadInputError("--dim-order " + joined(*dim_order) + ": " + std::to_string(d) + " is not a dimension");
            order.push_back(static_cast<int>(d));
          }
          r.layout = named(layout::layout_from_dim_order(size, *dt, order, st));
        } else {
          r.layout = named(layout::default_layout(size, *dt, st));
        }
        if (dma) {
          r.h2d = named(layout::dma_descriptors(r.layout, layout::DmaDirection::kHostToDevice));
          r.d2h = named(layout::dma_descriptors(r.layout, layout::DmaDirection::kDeviceToHost));
        }
        return r;
      },
      py::arg("size"), py::arg("dtype"), py::arg("dim_order"), py::arg("strides"), py::arg("dma"));
}

}  // namespace sp::bindings
