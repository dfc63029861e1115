// scratchplan layout --size 5,100,150 --dtype fp16 [--dim-order 1,0,2] [--dma] [--json]:
// prints the device layout of a host tensor (and its DMA descriptors).
#include <iostream>
#include <sstream>

#include "cli/options.h"
#include "cli/verbs.h"
#include "core/json_reader.h"
#include "layout/report.h"

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

// "5,100,150" -> {5, 100, 150}; an empty string is a scalar. (Ranges: layout::answer_layout.)
Result<std::vector<int64_t>> parse_list(const std::string& flag, const std::string& text) {
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
    out.push_back(v);
  }
  return out;
}

int run_layout(const LayoutArgs& a) {
  auto size = parse_list("--size", a.size);
  if (!size) return fail(size.error());
  auto strides = parse_list("--strides", a.strides);
  if (!strides) return fail(strides.error());
  auto order = parse_list("--dim-order", a.dim_order);
  if (!order) return fail(order.error());
  auto r = layout::answer_layout(*size, a.dtype, *order, *strides, a.dma);
  if (!r) return fail(r.error());
  if (a.json)
    std::cout << layout::layout_report_json(r->layout, a.dma, r->h2d, r->d2h).dump(1) << "\n";
  else
    std::cout << layout::layout_report_text(r->layout, a.dma, r->h2d, r->d2h);
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
