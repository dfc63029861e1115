// scratchplan.layout: device tensor layouts and DMA descriptors (src/layout), the `layout` verb.
#include <pybind11/stl.h>

#include "common.h"
#include "layout/report.h"

namespace sp::bindings {

using LayoutResult = layout::LayoutAnswer;

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
        return take(layout::answer_layout(size, dtype, dim_order.value_or(std::vector<int64_t>{}),
                                          strides.value_or(std::vector<int64_t>{}), dma));
      },
      py::arg("size"), py::arg("dtype"), py::arg("dim_order"), py::arg("strides"), py::arg("dma"));
}

}  // namespace sp::bindings
