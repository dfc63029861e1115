// What `scratchplan layout` computes and prints (the request's layout and DMA descriptors, the
// JSON and the readable text), shared by the CLI and the Python bindings.
#pragma once

#include <string>
#include <vector>

#include "core/json_reader.h"
#include "layout/dma.h"
#include "layout/layout.h"

namespace sp::layout {

// The answer to one `layout` request.
struct LayoutAnswer {
  Layout layout;                         // the device layout
  bool dma = false;                      // descriptors were asked for
  std::vector<DmaDescriptor> h2d, d2h;   // host->device and device->host descriptors (with dma)
};

// The `layout` verb for both front ends: checks the request (sizes >= 1, strides >= 0, dim order
// entries >= -1, a known dtype), builds the layout and, with `dma`, its descriptors. An error of
// the layout itself names the request as the CLI spells it ("--size 5,3 --dim-order 5,0: ..."):
// the flags are this verb's input. Empty dim_order / strides: the defaults.
Result<LayoutAnswer> answer_layout(const std::vector<int64_t>& size, const std::string& dtype,
                                   const std::vector<int64_t>& dim_order, const std::vector<int64_t>& strides, bool dma);

// `dma`: include the descriptors in both directions (h2d, d2h).
Json layout_report_json(const Layout& l, bool dma, const std::vector<DmaDescriptor>& h2d,
                        const std::vector<DmaDescriptor>& d2h);
std::string layout_report_text(const Layout& l, bool dma, const std::vector<DmaDescriptor>& h2d,
                               const std::vector<DmaDescriptor>& d2h);

}  // namespace sp::layout
