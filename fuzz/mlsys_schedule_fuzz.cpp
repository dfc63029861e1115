// Fuzzes the solution reader and the evaluator: the input is {"problem": ..., "solution": ...}.
#include <cstdint>
#include <string>

#include "mlsys/evaluator.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto json = sp::parse_json_text(text, "fuzz.json");
  if (!json || !json->is_object() || !json->contains("problem") || !json->contains("solution")) return 0;
  auto problem = sp::mlsys::problem_from_json((*json)["problem"], "fuzz.json");
  if (!problem) return 0;
  auto solution = sp::mlsys::solution_from_json((*json)["solution"], *problem, "fuzz.json");
  if (!solution) return 0;
  sp::mlsys::RuleOptions rules;
  rules.max_steps = 20000;  // keep each input fast
  (void)sp::mlsys::evaluate(*problem, *solution, rules);
  rules.mm_compute = sp::mlsys::MatMulCompute::kNative;
  rules.spill_ephemeral = rules.strict_ephemeral = true;
  (void)sp::mlsys::evaluate(*problem, *solution, rules);
  return 0;
}
