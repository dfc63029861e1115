// Fuzzes the NKI kernel reader and the checker: any bytes must give a kernel or a located
// error, and every kernel read must check without crashing. Planning runs on small kernels.
#include <cstdint>
#include <string>

#include "nki/check.h"
#include "nki/kernel.h"
#include "nki/plan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto json = sp::parse_json_text(text, "fuzz.json");
  if (!json) return 0;
  auto kernel = sp::nki::kernel_from_json(*json, "fuzz.json");
  if (!kernel || kernel->dynamic_instructions > 100000) return 0;
  int64_t blocks = 0;
  for (const auto& t : kernel->tensors) blocks += t.num_blocks();
  if (blocks > 100000) return 0;
  (void)sp::nki::check_kernel(*kernel);
  (void)sp::nki::kernel_to_json(*kernel);
  sp::nki::PlanOptions opt;
  opt.time_limit_s = 0.5;
  (void)sp::nki::plan_kernel(*kernel, opt);
  return 0;
}
