// scratchplan divide PROGRAM.json --cores N [--json] [--candidates]: work division of every op
// (pass 1 floors, final splits, per-core spans, candidate menu) plus layout compatibility issues.
#include <iostream>

#include "cli/verbs.h"
#include "layout/compat.h"
#include "program/program.h"
#include "workdiv/workdiv.h"

namespace sp::cli {
namespace {

struct DivideArgs {
  std::string program_path;
  int cores = workdiv::kMaxCores;
  bool json = false;
  bool candidates = false;
  bool no_span_reduction = false;
  bool no_work_distribution = false;
};

std::string splits_text(const workdiv::OpDivision& od, const std::vector<workdiv::Split>& s) {
  std::string t;
  for (std::size_t v = 0; v < s.size(); ++v) t += (v ? " " : "") + od.vars[v].name + "=" + std::to_string(s[v]);
  return t;
}

int run_divide(const DivideArgs& a) {
  auto fail = [](const Error& e) {
    std::cerr << "error: " << e.message << "\n";
    return exit_code(e);
  };
  if (a.cores < 1 || a.cores > workdiv::kMaxCores)
    return fail(bad_input("--cores " + std::to_string(a.cores) + ": expected 1..32 (SENCORES range)"));
  auto p = program::read_program(a.program_path);
  if (!p) return fail(p.error());
  workdiv::Options opt;
  opt.max_cores = a.cores;
  opt.candidates = a.candidates || a.json;
  opt.span_reduction = !a.no_span_reduction;
  opt.work_distribution = !a.no_work_distribution;
  auto d = workdiv::divide(*p, opt);
  if (!d) return fail(d.error());
  auto issues = layout::check_program_layouts(*p);
  if (!issues) return fail(issues.error());
  if (a.json) {
    Json j;
    j["program"] = p->name;
    j["max_cores"] = d->max_cores;
    Json ops = Json::array();
    for (const auto& od : d->ops) {
      const auto& op = p->ops[od.op];
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
          spans.push_back({{"tensor", p->tensors[s.tensor].name}, {"span_bytes", s.span}, {"device_dim", s.device_dim}});
        x["spans"] = spans;
        Json menu = Json::array(), parts = Json::array();
        for (std::size_t i = 0; i < od.candidates.size(); ++i) {
          menu.push_back(od.candidates[i]);
          parts.push_back(workdiv::output_partition(od, od.candidates[i]));
        }
        x["candidates"] = menu;
        x["candidate_output_partitions"] = parts;
      }
      ops.push_back(std::move(x));
    }
    j["ops"] = ops;
    Json li = Json::array();
    for (const auto& i : *issues)
      li.push_back({{"op", p->ops[i.op].name}, {"tensor", p->tensors[i.tensor].name},
                    {"fix", i.fix == layout::FixKind::kRestickify ? "restickify" : "padding"}, {"message", i.message}});
    j["layout_issues"] = li;
    std::cout << j.dump(1) << "\n";
    return kExitOk;
  }
  std::cout << "program " << p->name << ": " << p->ops.size() << " ops, up to " << d->max_cores << " cores\n";
  for (const auto& od : d->ops) {
    const auto& op = p->ops[od.op];
    std::cout << op.name << " (" << program::op_kind_name(op.kind) << "): ";
    if (!od.divided) {
      std::cout << "not divided (one unit)\n";
      continue;
    }
    std::cout << od.cores << " cores, splits " << splits_text(od, od.splits);
    bool any_floor = false;
    for (auto f : od.floors) any_floor = any_floor || f > 1;
    if (any_floor) std::cout << " (span floors " << splits_text(od, od.floors) << ")";
    std::cout << "\n  vars:";
    for (const auto& v : od.vars) {
      std::cout << " " << v.name << "=" << v.size;
      if (v.elems_per_stick) std::cout << " (" << v.adjusted << " sticks)";
      if (v.reduction) std::cout << " red";
      if (v.blocked) std::cout << " blocked";
    }
    std::cout << "\n  per-core span:";
    for (const auto& s : od.spans) std::cout << " " << p->tensors[s.tensor].name << " " << s.span << " B";
    std::cout << "\n";
    if (a.candidates) {
      std::cout << "  candidates (" << od.candidates.size() << "):";
      for (std::size_t i = 0; i < od.candidates.size(); ++i) std::cout << " [" << splits_text(od, od.candidates[i]) << "]";
      std::cout << "\n";
    }
  }
  std::cout << "layout issues: " << issues->size() << "\n";
  for (const auto& i : *issues) std::cout << "  " << i.message << "\n";
  return kExitOk;
}

}  // namespace

void register_divide(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<DivideArgs>();
  CLI::App* cmd = app.add_subcommand("divide", "Multi-core work division of a tensor program (docs/workdiv.md)");
  cmd->add_option("program", args->program_path, "Program JSON (docs/program.md)")->required();
  cmd->add_option("--cores", args->cores, "Maximum cores, 1..32 (default 32)");
  cmd->add_flag("--json", args->json, "Machine-readable output (includes the candidate menus)");
  cmd->add_flag("--candidates", args->candidates, "Print each op's candidate menu");
  cmd->add_flag("--no-span-reduction", args->no_span_reduction, "Skip pass 1 (experiments only)");
  cmd->add_flag("--no-work-distribution", args->no_work_distribution, "Skip pass 2: keep the pass 1 floors");
  cmd->callback([args, &exit_code] { exit_code = run_divide(*args); });
}

}  // namespace sp::cli
