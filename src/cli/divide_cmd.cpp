// scratchplan divide PROGRAM.json --cores N [--json] [--candidates]: work division of every op
// (pass 1 floors, final splits, per-core spans, candidate menu) plus layout compatibility issues.
#include <iostream>

#include "cli/options.h"
#include "cli/verbs.h"
#include "program/layout_compat.h"
#include "program/program.h"
#include "workdiv/report.h"
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

int run_divide(const DivideArgs& a) {
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
  if (!d) return fail(located(d.error(), a.program_path));
  auto issues = program::check_program_layouts(*p);
  if (!issues) return fail(located(issues.error(), a.program_path));
  if (a.json)
    std::cout << workdiv::division_report_json(*p, *d, *issues).dump(1) << "\n";
  else
    std::cout << workdiv::division_report_text(*p, *d, *issues, a.candidates);
  return kExitOk;
}

}  // namespace

void register_divide(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<DivideArgs>();
  CLI::App* cmd = app.add_subcommand("divide", "Multi-core work division of a tensor program (docs/workdiv.md)");
  cmd->add_option("program", args->program_path, "Program JSON (docs/program.md; - for stdin)")->required();
  cmd->add_option("--cores", args->cores, "Maximum cores, 1..32 (default 32)")->check(count_in(1, workdiv::kMaxCores));
  cmd->add_flag("--json", args->json, "Machine-readable output (includes the candidate menus)");
  cmd->add_flag("--candidates", args->candidates, "Print each op's candidate menu");
  cmd->add_flag("--no-span-reduction", args->no_span_reduction, "Skip pass 1 (experiments only)");
  cmd->add_flag("--no-work-distribution", args->no_work_distribution, "Skip pass 2: keep the pass 1 floors");
  cmd->callback([args, &exit_code] { exit_code = run_divide(*args); });
}

}  // namespace sp::cli
