// Fuzzes the tensor program reader and everything downstream of it: any bytes must give a
// Program or a located error, and a Program must divide (or fail cleanly) without crashing.
#include <cstdint>
#include <string>

#include "program/layout_compat.h"
#include "program/program.h"
#include "workdiv/workdiv.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto json = sp::parse_json_text(text, "fuzz.json");
  if (!json) return 0;
  auto p = sp::program::program_from_json(*json, "fuzz.json");
  if (!p) return 0;
  (void)sp::program::program_to_text(*p);
  (void)sp::program::check_program_layouts(*p);
  sp::workdiv::Options o;
  o.max_candidates = 64;
  (void)sp::workdiv::divide(*p, o);
  return 0;
}
