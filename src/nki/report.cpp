#include "nki/report.h"

#include <cstdio>
#include <sstream>

namespace sp::nki {
namespace {

std::string pct(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f%%", 100 * v);
  return b;
}

template <class... A>
std::string fmt(const char* f, A... a) {
  char b[512];
  std::snprintf(b, sizeof b, f, a...);
  return b;
}

}  // namespace

Json check_report_to_json(const std::string& kernel_label, const Kernel& k, const CheckReport& rep) {
  Json out;
  out["format"] = "scratchplan-nki-check";
  out["version"] = 1;
  out["kernel"] = kernel_label;
  out["hardware"] = k.hw.name;
  out["clean"] = rep.clean();
  out["executions"] = rep.executions;
  out["distinct_violations"] = rep.distinct_violations;
  Json vs = Json::array();
  for (const auto& v : rep.violations) {
    Json vj = {{"kind", violation_kind_name(v.kind)}, {"tensor", v.tensor}, {"block", v.block},
               {"instruction", v.instruction}, {"iteration", v.iteration}, {"occurrences", v.occurrences},
               {"message", v.message}};
    if (!v.tensor_source.empty()) vj["declared_at"] = v.tensor_source;
    if (!v.instruction_source.empty()) vj["source"] = v.instruction_source;
    if (!v.by_tensor.empty()) {
      vj["overwritten_by"] = {{"tensor", v.by_tensor}, {"block", v.by_block}, {"instruction", v.by_instruction},
                              {"iteration", v.by_iteration}};
      if (!v.by_source.empty()) vj["overwritten_by"]["source"] = v.by_source;
    }
    vs.push_back(vj);
  }
  out["violations"] = vs;
  return out;
}

std::string check_report_text(const std::string& kernel_label, const Kernel& k, const CheckReport& rep) {
  std::ostringstream os;
  os << "kernel: " << kernel_label << " (" << k.hw.name << "), " << k.tensors.size() << " tensors, " << k.loops.size()
     << " loops, " << rep.executions << " instruction executions simulated\n";
  int automatic = 0;
  for (const auto& t : k.tensors) automatic += t.buffer != Buffer::kHbm && t.alloc.kind == AllocKind::kAuto;
  if (automatic > 0)
    os << automatic << " tensors use automatic allocation: their addresses are the compiler's, not checked\n";
  os << "violations: " << rep.distinct_violations << "\n";
  for (const auto& v : rep.violations) os << "  " << v.message << "\n";
  if (static_cast<int64_t>(rep.violations.size()) < rep.distinct_violations)
    os << "  ... " << rep.distinct_violations - static_cast<int64_t>(rep.violations.size()) << " more\n";
  return os.str();
}

Json plan_result_to_json(const std::string& kernel_label, const PlanResult& p) {
  const double speedup = p.planned.makespan ? static_cast<double>(p.baseline.makespan) / p.planned.makespan : 1.0;
  Json out;
  out["format"] = "scratchplan-nki-plan-summary";
  out["version"] = 1;
  out["kernel"] = kernel_label;
  out["hardware"] = p.kernel.hw.name;
  out["simulated_cycles"] = p.planned.makespan;
  out["single_buffered_cycles"] = p.baseline.makespan;
  out["speedup"] = speedup;
  out["sbuf_bytes_per_partition"] = p.sbuf_bytes;
  out["psum_banks"] = p.psum_banks;
  out["evaluations"] = p.evaluations;
  out["timeline"] = p.scheduler == Scheduler::kInOrder ? "in-order" : "dataflow";
  out["input_allocation_cycles"] = p.has_input ? Json(p.input.makespan) : Json(nullptr);
  Json util;
  for (int e = 0; e < kNumEngines; ++e)
    util[engine_name(static_cast<Engine>(e))] = {{"planned", p.planned.utilization(e)},
                                                 {"single_buffered", p.baseline.utilization(e)}};
  out["utilization"] = util;
  Json ts = Json::array();
  const Json planned = kernel_to_json(p.kernel);
  for (const auto& tp : p.plans) {
    const auto& t = p.kernel.tensors[tp.tensor];
    ts.push_back({{"tensor", t.name}, {"buffer", buffer_name(t.buffer)}, {"tiles", tp.tiles},
                  {"min_tiles", tp.min_tiles}, {"kept", tp.kept}, {"partition", tp.partition}, {"base", tp.base},
                  {"stride", tp.stride}, {"alloc", planned["tensors"][tp.tensor]["alloc"]}});
  }
  out["tensors"] = ts;
  return out;
}

std::string plan_result_text(const std::string& kernel_label, const PlanResult& p) {
  const Kernel& k = p.kernel;
  const double speedup = p.planned.makespan ? static_cast<double>(p.baseline.makespan) / p.planned.makespan : 1.0;
  std::string s = "kernel: " + kernel_label + " (" + k.hw.name + ")\n";
  s += fmt("%-16s %-5s %6s %6s %10s  %s\n", "tensor", "buf", "tiles", "min", "tile size", "allocation");
  for (const auto& tp : p.plans) {
    const auto& t = k.tensors[tp.tensor];
    const auto& al = t.alloc;
    const bool psum = t.buffer == Buffer::kPsum;
    std::string how;
    if (tp.kept)
      how = std::string("kept: ") + alloc_kind_name(al.kind) + " (" + std::to_string(tp.tiles) + " physical tiles)";
    else if (al.kind == AllocKind::kModAlloc) {
      auto tuple = [](const std::vector<int64_t>& v) {
        std::string r = "(";
        for (std::size_t i = 0; i < v.size(); ++i) r += (i ? ", " : "") + std::to_string(v[i]);
        return r + (v.size() == 1 ? ",)" : ")");
      };
      how = psum ? "mod_alloc(base_bank=" + std::to_string(al.base_bank) + ", num_bank_tiles=" + tuple(al.num_bank_tiles) + ")"
                 : "mod_alloc(base_addr=" + std::to_string(al.base_addr) + ", base_partition=" +
                       std::to_string(al.base_partition) + ", num_free_tiles=" + tuple(al.num_free_tiles) + ")";
    }
    else
      how = "table: block b -> " + std::string(psum ? "bank " : "byte ") + std::to_string(tp.base) + " + (b mod " +
            std::to_string(tp.tiles) + ")" + (psum ? "" : " * " + std::to_string(tp.stride)) + ", partition " +
            std::to_string(tp.partition);
    // The allocation text can be long: appended outside the fixed-size format buffer.
    s += fmt("%-16s %-5s %6d %6d %10s  ", t.name.c_str(), buffer_name(t.buffer), tp.tiles, tp.min_tiles,
             (std::to_string(t.fbytes()) + " B").c_str());
    s += how + "\n";
  }
  s += fmt("SBUF used: %lld of %lld bytes per partition; PSUM banks used: %lld of %d\n",
           static_cast<long long>(p.sbuf_bytes), static_cast<long long>(k.hw.sbuf_usable()),
           static_cast<long long>(p.psum_banks), k.hw.psum_banks);
  s += fmt("simulated time: %lld cycles (all single-buffered: %lld cycles, speedup %.3fx; %s timeline)\n",
           static_cast<long long>(p.planned.makespan), static_cast<long long>(p.baseline.makespan), speedup,
           p.scheduler == Scheduler::kInOrder ? "in-order" : "dataflow");
  if (p.has_input) s += fmt("the kernel's own allocation: %lld cycles\n", static_cast<long long>(p.input.makespan));
  s += "engine utilization (planned / single-buffered):";
  for (int e = 0; e < kNumEngines; ++e)
    if (p.planned.busy[e] > 0)
      s += std::string(" ") + engine_name(static_cast<Engine>(e)) + " " + pct(p.planned.utilization(e)) + " / " +
           pct(p.baseline.utilization(e));
  s += "\nvalidated by nki check: clean\n";
  return s;
}

}  // namespace sp::nki
