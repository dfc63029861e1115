#include "workdiv/report.h"

#include <sstream>

namespace sp::workdiv {
namespace {

std::string splits_text(const OpDivision& od, const std::vector<Split>& s) {
  std::string t;
  for (std::size_t v = 0; v < s.size(); ++v) t += (v ? " " : "") + od.vars[v].name + "=" + std::to_string(s[v]);
  return t;
}

}  // namespace

Json division_report_json(const program::Program& p, const Division& d, const std::vector<program::LayoutIssue>& issues) {
  Json j;
  j["format"] = "scratchplan-division";
  j["version"] = 1;
  j["program"] = p.name;
  j["max_cores"] = d.max_cores;
  Json ops = Json::array();
  for (const auto& od : d.ops) {
    const auto& op = p.ops[od.op];
    Json x;
    x["op"] = op.name;
    x["kind"] = program::op_kind_name(op.kind);
    x["divided"] = od.divided;
    x["cores"] = od.cores;
    if (od.divided) {
      Json vars = Json::array();
      for (std::size_t v = 0; v < od.vars.size(); ++v) {
        const auto& vi = od.vars[v];
        vars.push_back({{"name", vi.name}, {"size", vi.size}, {"adjusted", vi.adjusted},
                        {"elems_per_stick", vi.elems_per_stick}, {"reduction", vi.reduction},
                        {"blocked", vi.blocked}, {"floor", od.floors[v]}, {"split", od.splits[v]}});
      }
      x["vars"] = vars;
      Json spans = Json::array();
      for (const auto& s : od.spans)
        spans.push_back({{"tensor", p.tensors[s.tensor].name}, {"span_bytes", s.span}, {"device_dim", s.device_dim}});
      x["spans"] = spans;
      Json menu = Json::array(), parts = Json::array();
      for (std::size_t i = 0; i < od.candidates.size(); ++i) {
        menu.push_back(od.candidates[i]);
        parts.push_back(output_partition(od, od.candidates[i]));
      }
      x["candidates"] = menu;
      x["candidate_output_partitions"] = parts;
    }
    ops.push_back(std::move(x));
  }
  j["ops"] = ops;
  Json li = Json::array();
  for (const auto& i : issues)
    li.push_back({{"op", p.ops[i.op].name}, {"tensor", p.tensors[i.tensor].name},
                  {"fix", i.fix == program::FixKind::kRestickify ? "restickify" : "padding"}, {"message", i.message}});
  j["layout_issues"] = li;
  return j;
}

std::string division_report_text(const program::Program& p, const Division& d,
                                 const std::vector<program::LayoutIssue>& issues, bool candidates) {
  std::ostringstream os;
  os << "program " << p.name << ": " << p.ops.size() << " ops, up to " << d.max_cores << " cores\n";
  for (const auto& od : d.ops) {
    const auto& op = p.ops[od.op];
    os << op.name << " (" << program::op_kind_name(op.kind) << "): ";
    if (!od.divided) {
      os << "not divided (one unit)\n";
      continue;
    }
    os << od.cores << " cores, splits " << splits_text(od, od.splits);
    bool any_floor = false;
    for (auto f : od.floors) any_floor = any_floor || f > 1;
    if (any_floor) os << " (span floors " << splits_text(od, od.floors) << ")";
    os << "\n  vars:";
    for (const auto& v : od.vars) {
      os << " " << v.name << "=" << v.size;
      if (v.elems_per_stick) os << " (" << v.adjusted << " sticks)";
      if (v.reduction) os << " red";
      if (v.blocked) os << (v.summed ? " blocked (summed)" : " blocked");
    }
    os << "\n  per-core span:";
    for (const auto& s : od.spans) os << " " << p.tensors[s.tensor].name << " " << s.span << " B";
    os << "\n";
    if (candidates) {
      os << "  candidates (" << od.candidates.size() << "):";
      for (std::size_t i = 0; i < od.candidates.size(); ++i) os << " [" << splits_text(od, od.candidates[i]) << "]";
      os << "\n";
    }
  }
  os << "layout issues: " << issues.size() << "\n";
  for (const auto& i : issues) os << "  " << i.message << "\n";
  return os.str();
}

}  // namespace sp::workdiv
