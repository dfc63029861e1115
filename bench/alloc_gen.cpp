// Writes a generated allocation instance as MiniMalloc CSV (for the CLI-measured tables):
//   scratchplan_alloc_gen random|xla|somas|layers|chain|stream|scaled:TRACE.csv N SEED > instance.csv
// (scaled:TRACE.csv stretches a real trace to N buffers: generate_scaled)
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "alloc/generate.h"
#include "alloc/io.h"
#include "alloc/solver.h"

int main(int argc, char** argv) {
  using namespace sp::alloc;
  if (argc != 4) {
    std::fprintf(stderr, "usage: scratchplan_alloc_gen random|xla|somas|layers|chain|stream|scaled:TRACE.csv N SEED\n");
    return 2;
  }
  const std::string family = argv[1];
  const int n = std::atoi(argv[2]);
  const uint64_t seed = std::strtoull(argv[3], nullptr, 10);
  Problem p;
  if (family == "random") p = generate_random(n, seed);
  else if (family == "xla") p = generate_xla_trace(n, seed);
  else if (family == "somas") p = generate_somas_llm(n, seed);
  else if (family == "layers") p = generate_somas_layers(n, seed);
  else if (family == "chain") p = generate_activation_chain(n, seed);
  else if (family == "stream") p = generate_stream(n, seed);
  else if (family.rfind("scaled:", 0) == 0) {
    auto base = read_problem(family.substr(7));
    if (!base || base->buffers.empty()) {
      std::fprintf(stderr, "%s\n", base ? "empty trace" : base.error().message.c_str());
      return 2;
    }
    p = generate_scaled(*base, n, seed);
  } else {
    std::fprintf(stderr, "unknown family '%s' (random, xla, somas, layers, chain, stream, scaled:TRACE.csv)\n", family.c_str());
    return 2;
  }
  Placement none;
  none.offsets.assign(p.buffers.size(), kSpilled);
  std::string csv = plan_to_csv(p, none);
  // Instances carry no offsets: drop the plan's empty offset column.
  std::string out;
  out.reserve(csv.size());
  std::size_t pos = 0;
  bool first = true;
  while (pos < csv.size()) {
    std::size_t nl = csv.find('\n', pos);
    std::string line = csv.substr(pos, nl - pos);
    if (first) line = "id,lower,upper,size";
    else if (!line.empty() && line.back() == ',') line.pop_back();
    first = false;
    out += line + "\n";
    pos = nl + 1;
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}
