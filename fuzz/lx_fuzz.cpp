// Fuzzes the LX planner's readers and everything downstream: a tensor program is planned end to
// end (small budget), a JSON array is read as a co-optimization capture and solved, an object
// with "buffers_to_plan" as a pattern case, anything else as a hardware description. Any bytes
// must give a checked plan or a clean error.
#include <cstdint>
#include <string>

#include "lx/coopt.h"
#include "lx/lx.h"
#include "program/program.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto json = sp::parse_json_text(text, "fuzz.json");
  if (!json) return 0;
  const sp::Json& j = *json;
  sp::lx::Options o;
  o.cores = 4;
  o.time_limit = 0.01;
  if (j.is_array()) {
    auto p = sp::lx::division_problem_from_json(j, "fuzz.json", 4096);
    if (p && p->buffers.size() <= 64) {
      (void)sp::lx::solve_divisions(*p, 0.01);
      sp::lx::LadderOptions lo;  // the September engine (objective ladder, cut stage, relayout copies)
      lo.time_limit = 0.01;
      (void)sp::lx::solve_division_ladder(*p, lo);
    }
    return 0;
  }
  if (j.is_object() && j.contains("buffers_to_plan")) {
    auto g = sp::lx::graph_from_pattern(j, "fuzz.json");
    if (g && g->ops.size() <= 64) {
      (void)sp::lx::plan_graph(*g, sp::lx::Hardware{}, o);
      sp::lx::Hardware ring;  // with a ring: ring transfers for mismatched slicings
      ring.ring_bytes_per_s = 1e11;
      (void)sp::lx::plan_graph(*g, ring, o);
    }
    return 0;
  }
  if (j.is_object() && j.contains("format")) {
    auto p = sp::program::program_from_json(j, "fuzz.json");
    if (p && p->ops.size() <= 64) (void)sp::lx::plan_program(*p, sp::lx::Hardware{}, o);
    return 0;
  }
  (void)sp::lx::hardware_from_json(j, "fuzz.json");
  return 0;
}
