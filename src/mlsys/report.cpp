#include "mlsys/report.h"

#include <cstdio>
#include <sstream>

namespace sp::mlsys {
namespace {

std::string fmt(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6f", v);
  return buf;
}

}  // namespace

double claimed_total(const Evaluation& ev) {
  double t = 0;
  for (const auto& s : ev.subgraphs) t += s.reported_latency;
  return t;
}

std::vector<int> reported_mismatches(const Evaluation& ev) {
  std::vector<int> out;
  for (std::size_t i = 0; i < ev.subgraphs.size(); ++i) {
    const auto& s = ev.subgraphs[i];
    if (!s.evaluated || !latency_close(s.latency, s.reported_latency)) out.push_back(static_cast<int>(i));
  }
  return out;
}

Json evaluation_report_json(const Evaluation& ev, const std::string& mm_compute, bool verbose, bool check_reported) {
  const double claimed = claimed_total(ev);
  const std::vector<int> mismatches = check_reported ? reported_mismatches(ev) : std::vector<int>{};
  Json out;
  out["format"] = "scratchplan-evaluation";
  out["version"] = 1;
  out["valid"] = ev.valid;
  out["total"] = ev.total;
  out["claimed_total"] = claimed;
  out["mm_compute"] = mm_compute;
  out["errors"] = ev.errors;
  out["warnings"] = ev.warnings;
  Json subs = Json::array();
  for (std::size_t i = 0; i < ev.subgraphs.size(); ++i) {
    const auto& s = ev.subgraphs[i];
    Json js;
    js["index"] = i;
    js["latency"] = s.evaluated ? Json(s.latency) : Json(nullptr);
    js["reported"] = s.reported_latency;
    js["peak_working_set"] = s.peak_working_set;
    if (verbose) {
      js["tiles"] = s.tiles;
      js["k_steps"] = s.k_steps;
      js["load_elements"] = s.load_elements;
      js["store_elements"] = s.store_elements;
      js["compute"] = s.compute;
      js["granularity"] = {s.granularity.w, s.granularity.h, s.granularity.k};
    }
    subs.push_back(js);
  }
  out["subgraphs"] = subs;
  if (check_reported) out["reported_mismatches"] = mismatches;
  return out;
}

std::string evaluation_report_text(const Evaluation& ev, bool verbose, bool check_reported) {
  const double claimed = claimed_total(ev);
  const std::vector<int> mismatches = check_reported ? reported_mismatches(ev) : std::vector<int>{};
  std::ostringstream os;
  os << "total latency: " << fmt(ev.total) << "\n";
  os << "claimed total: " << fmt(claimed) << "\n";
  os << "valid: " << (ev.valid ? "yes" : "no") << "\n";
  for (std::size_t i = 0; i < ev.subgraphs.size(); ++i) {
    const auto& s = ev.subgraphs[i];
    os << "subgraph " << i << ": latency " << (s.evaluated ? fmt(s.latency) : std::string("n/a"))
              << ", working-set peak " << s.peak_working_set;
    if (verbose)
      os << ", granularity [" << s.granularity.w << "," << s.granularity.h << "," << s.granularity.k << "], "
                << s.tiles << " tiles x " << s.k_steps << " k-steps, loaded " << s.load_elements << ", stored "
                << s.store_elements << ", compute " << fmt(s.compute);
    os << "\n";
  }
  for (const auto& e : ev.errors) os << "ERROR: " << e << "\n";
  for (const auto& w : ev.warnings) os << "WARNING: " << w << "\n";
  if (check_reported) {
    os << "reported latencies that differ from the recomputed ones: " << mismatches.size() << " of "
              << ev.subgraphs.size() << "\n";
    for (int i : mismatches)
      os << "  subgraph " << i << ": reported " << fmt(ev.subgraphs[i].reported_latency) << ", recomputed "
                << (ev.subgraphs[i].evaluated ? fmt(ev.subgraphs[i].latency) : std::string("n/a")) << "\n";
  }
  return os.str();
}

}  // namespace sp::mlsys
