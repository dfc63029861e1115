// Fuzzes the NKI kernel reader, checker, planner and pictures: any bytes must give a kernel or
// a located error, and every small kernel read must check, plan and draw without crashing.
#include <cstdint>
#include <string>

#include "nki/check.h"
#include "nki/kernel.h"
#include "nki/plan.h"
#include "nki/svg.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto json = sp::parse_json_text(text, "fuzz.json");
  if (!json) return 0;
  auto kernel = sp::nki::kernel_from_json(*json, "fuzz.json");
  if (!kernel || kernel->dynamic_instructions > 100000) return 0;
  int64_t blocks = 0;
  for (const auto& t : kernel->tensors) blocks += t.num_blocks();
  if (blocks > 100000) return 0;
  auto report = sp::nki::check_kernel(*kernel);
  if (report) (void)sp::nki::check_svg(*kernel, *report);
  (void)sp::nki::kernel_to_json(*kernel);
  sp::nki::PlanOptions opt;
  opt.time_limit_s = 0.5;
  opt.scheduler = size % 2 ? sp::nki::Scheduler::kInOrder : sp::nki::Scheduler::kDataflow;
  opt.keep_direct = size % 3 == 0;
  auto plan = sp::nki::plan_kernel(*kernel, opt);
  if (plan) (void)sp::nki::plan_svg(*plan);
  return 0;
}
