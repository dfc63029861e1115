// Fuzzes the MLSys problem reader: any bytes must give a Problem or a located error.
#include <cstdint>
#include <string>

#include "mlsys/problem.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto json = sp::parse_json_text(text, "fuzz.json");
  if (!json) return 0;
  auto problem = sp::mlsys::problem_from_json(*json, "fuzz.json");
  if (problem) (void)sp::mlsys::problem_to_json(*problem);
  return 0;
}
