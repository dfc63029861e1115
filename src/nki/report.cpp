#include "nki/report.h"

#include <cstdio>
#include <map>
#include <tuple>
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

// Violations that differ only in their block (one faulty allocation hit by every block of a loop)
// are one group: reported once, with the blocks listed. Groups keep the order of discovery.
struct Group {
  std::size_t first;                       // index of the violation reported
  std::vector<std::vector<int64_t>> blocks;  // every block of the group, in order
};

// Calls outside the tracer's API table, traced conservatively (tiles read, dst written): once each.
void generic_line(std::ostream& os, const Kernel& k) {
  if (k.generic_calls.empty()) return;
  os << "modelled generically (not in the API table: tile arguments read, dst written, cost by bytes):";
  for (std::size_t i = 0; i < k.generic_calls.size(); ++i)
    os << (i ? ", " : " ") << k.generic_calls[i].first
       << (k.generic_calls[i].second.empty() ? "" : " (" + k.generic_calls[i].second + ")");
  os << "\n";
}

Json generic_json(const Kernel& k) {
  Json g = Json::array();
  for (const auto& [call, src] : k.generic_calls) {
    Json e;
    e["call"] = call;
    e["source"] = src;
    g.push_back(e);
  }
  return g;
}

std::vector<Group> group_by_block(const std::vector<Violation>& vs) {
  std::vector<Group> groups;
  std::map<std::tuple<int, std::string, std::string, std::string, std::string, std::string>, std::size_t> at;
  for (std::size_t i = 0; i < vs.size(); ++i) {
    const Violation& v = vs[i];
    auto key = std::tuple{static_cast<int>(v.kind), violated_tensor(v), v.detail.instruction, v.detail.instruction_source,
                          destroying_tensor(v), v.detail.by_instruction};
    if (v.detail.block.empty()) {  // a whole-tensor violation stands alone
      groups.push_back({i, {}});
      continue;
    }
    auto [it, fresh] = at.emplace(key, groups.size());
    if (fresh) groups.push_back({i, {}});
    groups[it->second].blocks.push_back(v.detail.block);
  }
  return groups;
}

std::string block_list(const std::vector<int64_t>& b) {
  std::string s = "[";
  for (std::size_t i = 0; i < b.size(); ++i) s += (i ? ", " : "") + std::to_string(b[i]);
  return s + "]";
}

void violation_lines(std::ostringstream& os, const std::vector<Violation>& vs, int64_t distinct) {
  for (const Group& g : group_by_block(vs)) {
    os << "  " << vs[g.first].message;
    if (g.blocks.size() > 1) {
      os << " [same in " << g.blocks.size() << " blocks:";
      for (std::size_t i = 0; i < g.blocks.size() && i < 16; ++i) os << " " << block_list(g.blocks[i]);
      if (g.blocks.size() > 16) os << " ...";
      os << "]";
    }
    os << "\n";
  }
  if (static_cast<int64_t>(vs.size()) < distinct)
    os << "  ... " << distinct - static_cast<int64_t>(vs.size()) << " more\n";
}

Json violations_json(const std::vector<Violation>& vs) {
  Json arr = Json::array();
  for (const auto& v : vs) {
    const ViolationDetail& d = v.detail;
    Json vj = {{"kind", violation_kind_name(v.kind)}, {"tensor", violated_tensor(v)}, {"block", d.block},
               {"instruction", d.instruction}, {"iteration", d.iteration}, {"occurrences", d.occurrences},
               {"message", v.message}};
    if (!d.tensor_source.empty()) vj["declared_at"] = d.tensor_source;
    if (!d.instruction_source.empty()) vj["source"] = d.instruction_source;
    if (!destroying_tensor(v).empty()) {
      vj["overwritten_by"] = {{"tensor", destroying_tensor(v)}, {"block", d.by_block}, {"instruction", d.by_instruction},
                              {"iteration", d.by_iteration}};
      if (!d.by_source.empty()) vj["overwritten_by"]["source"] = d.by_source;
    }
    arr.push_back(vj);
  }
  return arr;
}

Json groups_json(const std::vector<Violation>& vs) {
  Json arr = Json::array();
  for (const Group& g : group_by_block(vs)) arr.push_back({{"message", vs[g.first].message}, {"blocks", g.blocks}});
  return arr;
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
  out["violations"] = violations_json(rep.violations);
  out["grouped"] = groups_json(rep.violations);
  out["modelled_generically"] = generic_json(k);
  return out;
}

std::string check_report_text(const std::string& kernel_label, const Kernel& k, const CheckReport& rep) {
  std::ostringstream os;
  os << "kernel: " << kernel_label << " (" << k.hw.name << "), " << k.tensors.size() << " tensors, " << k.loops.size()
     << " loops, " << rep.executions << " instruction executions simulated\n";
  int automatic = 0, placed = 0;
  for (const auto& t : k.tensors) {
    automatic += t.buffer != Memory::kHbm && t.alloc.kind == AllocKind::kAuto && !t.alloc.compiler_placed;
    placed += t.buffer != Memory::kHbm && t.alloc.kind == AllocKind::kAuto && t.alloc.compiler_placed;
  }
  if (automatic > 0)
    os << automatic << " tensors use automatic allocation: their addresses are the compiler's, not checked\n";
  if (placed > 0)
    os << placed << " tensors without address= beside addressed ones: the compiler places them; checked that they "
       << "fit beside the addressed tensors live at the same time, not for overlaps\n";
  generic_line(os, k);
  os << "violations: " << rep.distinct_violations << "\n";
  violation_lines(os, rep.violations, rep.distinct_violations);
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
  out["modelled_generically"] = generic_json(p.kernel);
  out["timeline"] = p.scheduler == Scheduler::kInOrder ? "in-order" : "dataflow";
  out["input_allocation_cycles"] = p.has_input ? Json(p.input.makespan) : Json(nullptr);
  if (p.input_compiler_placed_by_planner) out["input_compiler_placed_by_planner"] = true;  // (absent: false)
  out["input_distinct_violations"] = p.input_check.distinct_violations;
  out["input_violations"] = violations_json(p.input_check.violations);
  Json util;
  for (int e = 0; e < kNumEngines; ++e)
    util[engine_name(static_cast<Engine>(e))] = {{"planned", p.planned.utilization(e)},
                                                 {"single_buffered", p.baseline.utilization(e)}};
  out["utilization"] = util;
  Json ts = Json::array();
  const Json planned = kernel_to_json(p.kernel);
  for (const auto& tp : p.plans) {
    const auto& t = p.kernel.tensors[tp.tensor];
    ts.push_back({{"tensor", t.name}, {"buffer", memory_name(t.buffer)}, {"tiles", tp.tiles},
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
  {
    std::ostringstream gs;
    generic_line(gs, k);
    s += gs.str();
  }
  if (!p.input_check.clean()) {
    std::ostringstream os;
    os << "the kernel's own allocation has " << p.input_check.distinct_violations
       << " violation(s); the plan below replaces it:\n";
    violation_lines(os, p.input_check.violations, p.input_check.distinct_violations);
    s += os.str();
  }
  s += fmt("%-16s %-5s %6s %6s %10s  %s\n", "tensor", "buf", "tiles", "min", "tile size", "allocation");
  for (const auto& tp : p.plans) {
    const auto& t = k.tensors[tp.tensor];
    const auto& al = t.alloc;
    const bool psum = t.buffer == Memory::kPsum;
    std::string how;
    // One logical tile (the new API's tensors have no block dims): in its own terms, address=(p, byte).
    auto address = [&](Partition part, Bytes byte) {
      return "address=(" + std::to_string(part) + ", " + std::to_string(byte) + ")";
    };
    if (t.num_blocks() == 1 && tp.kept && al.kind == AllocKind::kTable && al.table.size() == 1)
      how = "kept: " + address(al.table[0].first, al.table[0].second);
    else if (t.num_blocks() == 1 && !tp.kept)
      how = address(tp.partition, psum ? tp.base * k.hw.psum_bank_bytes : tp.base);
    else if (tp.kept)
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
    s += fmt("%-16s %-5s %6d %6d %10s  ", t.name.c_str(), memory_name(t.buffer), tp.tiles, tp.min_tiles,
             (std::to_string(t.fbytes()) + " B").c_str());
    s += how + "\n";
  }
  s += fmt("SBUF used: %lld of %lld bytes per partition; PSUM banks used: %lld of %d\n",
           static_cast<long long>(p.sbuf_bytes), static_cast<long long>(k.hw.sbuf_usable()),
           static_cast<long long>(p.psum_banks), k.hw.psum_banks);
  s += fmt("simulated time: %lld cycles (all single-buffered: %lld cycles, speedup %.3fx; %s timeline)\n",
           static_cast<long long>(p.planned.makespan), static_cast<long long>(p.baseline.makespan), speedup,
           p.scheduler == Scheduler::kInOrder ? "in-order" : "dataflow");
  if (p.has_input)
    s += fmt("the kernel's own allocation: %lld cycles%s\n", static_cast<long long>(p.input.makespan),
             p.input_compiler_placed_by_planner ? " (its addresses; its compiler-placed tensors placed by this planner)" : "");
  s += "engine utilization (planned / single-buffered):";
  for (int e = 0; e < kNumEngines; ++e)
    if (p.planned.busy[e] > 0)
      s += std::string(" ") + engine_name(static_cast<Engine>(e)) + " " + pct(p.planned.utilization(e)) + " / " +
           pct(p.baseline.utilization(e));
  s += "\nvalidated by nki check: clean\n";
  return s;
}

}  // namespace sp::nki
