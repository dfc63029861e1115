// Fuzzes the allocation readers (CSV and JSON) and, on success, the solvers and the validator:
// any bytes must give a problem or a located error, and every returned plan must validate.
#include <cstdint>
#include <string>

#include "alloc/io.h"
#include "alloc/solver.h"
#include "alloc/validator.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  sp::Result<sp::alloc::Problem> p = text.rfind("id,", 0) == 0 ? sp::alloc::problem_from_csv(text, "fuzz.csv") : [&] {
    auto j = sp::parse_json_text(text, "fuzz.json");
    return j ? sp::alloc::problem_from_json(*j, "fuzz.json") : sp::Result<sp::alloc::Problem>(j.error());
  }();
  if (!p || p->buffers.size() > 64) return 0;
  for (auto& b : p->buffers)
    if (b.size > (1 << 20) || b.end - b.start > 1000 || b.start < -1000000 || b.start > 1000000) return 0;
  if (p->capacity == sp::alloc::kUnbounded) p->capacity = 1 << 16;
  sp::alloc::SolveOptions o;
  o.objective = sp::alloc::Objective::kSelect;
  o.time_limit = 0.05;
  auto r = sp::alloc::solve(*p, o);
  if (r && !sp::alloc::validate(*p, r->placement).ok()) __builtin_trap();
  return 0;
}
