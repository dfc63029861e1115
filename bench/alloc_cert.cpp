// Height certificates for pack --minimize (src/alloc/certificate.h), from the command line:
//   scratchplan_alloc_cert search X.csv [MAX_NODES [MAX_SECTIONS]] > cert.json   find one (time windows)
//   scratchplan_alloc_cert verify X.csv cert.json [MAX_NODES]                 re-check one
//   scratchplan_alloc_cert window X.csv LOWER UPPER HEIGHT [MAX_NODES]       does [LOWER, UPPER) fit below HEIGHT?
// Exit 0: found / verified / fits; 3: not proven (budget); 2: bad input or refuted.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "alloc/certificate.h"
#include "alloc/io.h"

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: scratchplan_alloc_cert search X.csv [MAX_NODES [MAX_SECTIONS]] | verify X.csv CERT.json [MAX_NODES] |"
               " window X.csv LOWER UPPER HEIGHT [MAX_NODES]\n");
  return 2;
}

const char* verdict_name(sp::alloc::FitVerdict v) {
  switch (v) {
    case sp::alloc::FitVerdict::kFits: return "fits";
    case sp::alloc::FitVerdict::kDoesNotFit: return "does not fit";
    case sp::alloc::FitVerdict::kUnknown: return "unknown (node budget)";
  }
  return "?";
}

std::string base_name(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

}  // namespace

int main(int argc, char** argv) {
  using namespace sp::alloc;
  if (argc < 3) return usage();
  const std::string mode = argv[1];
  auto p = read_problem(argv[2]);
  if (!p) {
    std::fprintf(stderr, "%s\n", p.error().message.c_str());
    return 2;
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  if (mode == "search") {
    WindowSearchOptions o;
    if (argc > 3) o.max_nodes = std::atoll(argv[3]);
    if (argc > 4) o.max_sections = std::atoi(argv[4]);
    HeightCertificate c = find_window_certificate(*p, o);
    c.instance = base_name(argv[2]);
    std::cout << certificate_to_json(c).dump(1) << "\n";
    std::fprintf(stderr, "lower bound %lld from %zu buffers in %.2f s\n", static_cast<long long>(c.lower_bound),
                 c.buffers.size(), seconds());
    return 0;
  }
  if (mode == "verify" && argc >= 4) {
    auto c = read_certificate(argv[3]);
    if (!c) {
      std::fprintf(stderr, "%s\n", c.error().message.c_str());
      return 2;
    }
    auto r = check_certificate(*p, *c, argc > 4 ? std::atoll(argv[4]) : INT64_MAX);
    if (!r) {
      std::fprintf(stderr, "%s\n", r.error().message.c_str());
      return 2;
    }
    std::printf("%s: %zu buffers below %lld: %s (%lld nodes, %.2f s)\n", base_name(argv[3]).c_str(), c->buffers.size(),
                static_cast<long long>(c->lower_bound), verdict_name(r->verdict), static_cast<long long>(r->nodes),
                seconds());
    return r->verdict == FitVerdict::kDoesNotFit ? 0 : r->verdict == FitVerdict::kUnknown ? 3 : 2;
  }
  if (mode == "window" && argc >= 6) {
    const Time a = std::atoll(argv[3]), b = std::atoll(argv[4]);
    const Size h = std::atoll(argv[5]);
    HeightCertificate c;
    c.lower_bound = h;
    for (const Buffer& x : p->buffers)
      if (x.size > 0 && x.start < b && a < x.end) c.buffers.push_back({x.id, std::max(x.start, a), std::min(x.end, b)});
    auto r = check_certificate(*p, c, argc > 6 ? std::atoll(argv[6]) : INT64_MAX);
    if (!r) {
      std::fprintf(stderr, "%s\n", r.error().message.c_str());
      return 2;
    }
    std::printf("window [%lld, %lld): %zu buffers below %lld: %s (%lld nodes, %.2f s)\n", static_cast<long long>(a),
                static_cast<long long>(b), c.buffers.size(), static_cast<long long>(h), verdict_name(r->verdict),
                static_cast<long long>(r->nodes), seconds());
    return r->verdict == FitVerdict::kFits ? 0 : r->verdict == FitVerdict::kUnknown ? 3 : 2;
  }
  return usage();
}
