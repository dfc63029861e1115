// What `scratchplan layout` prints: the JSON (--json) and the readable text, shared by the CLI
// and the Python bindings.
#pragma once

#include <string>
#include <vector>

#include "core/json_reader.h"
#include "layout/dma.h"
#include "layout/layout.h"

namespace sp::layout {

// `dma`: include the descriptors in both directions (h2d, d2h).
Json layout_report_json(const Layout& l, bool dma, const std::vector<DmaDescriptor>& h2d,
                        const std::vector<DmaDescriptor>& d2h);
std::string layout_report_text(const Layout& l, bool dma, const std::vector<DmaDescriptor>& h2d,
                               const std::vector<DmaDescriptor>& d2h);

}  // namespace sp::layout
