// scratchplan evaluate PROBLEM.json SOLUTION.json [--trace FILE.json]: scores an MLSys 2026 schedule.
// Exit: 0 valid (and, with --check-reported, every claim matches), 2 invalid or bad input.
#include <iostream>

#include "cli/options.h"
#include "cli/verbs.h"
#include "core/outputs.h"
#include "mlsys/evaluator.h"
#include "mlsys/report.h"
#include "mlsys/trace.h"

namespace sp::cli {
namespace {

struct EvaluateArgs {
  std::string problem_path;
  std::string solution_path;
  std::string trace_path;
  bool json = false;
  bool verbose = false;
  bool check_reported = false;
  std::string mm_compute = "opk";
  mlsys::RuleOptions rules;
};

int run_evaluate(EvaluateArgs& a) {
  OutputSet outputs;
  if (Status st = outputs.add("--trace", a.trace_path); !st) return fail(st.error());
  auto problem = mlsys::read_problem(a.problem_path);
  if (!problem) return fail(problem.error());
  auto solution = mlsys::read_solution(a.solution_path, *problem);
  if (!solution) return fail(solution.error());
  a.rules.mm_compute = a.mm_compute == "native" ? mlsys::MatMulCompute::kNative : mlsys::MatMulCompute::kOpK;
  mlsys::Evaluation ev = mlsys::evaluate(*problem, *solution, a.rules);
  // An invalid schedule still gets its trace: seeing where it overflows is the point.
  if (!a.trace_path.empty()) {
    outputs.set(a.trace_path, mlsys::solution_trace(*problem, *solution, ev, "evaluate"));
    if (Status st = outputs.commit(); !st) return fail(st.error());
  }
  const std::vector<int> mismatches = a.check_reported ? mlsys::reported_mismatches(ev) : std::vector<int>{};
  std::ostream& human = outputs.uses_stdout() ? std::cerr : std::cout;  // --trace -
  if (a.json)
    human << mlsys::evaluation_report_json(ev, a.mm_compute, a.verbose, a.check_reported).dump(1) << "\n";
  else
    human << mlsys::evaluation_report_text(ev, a.verbose, a.check_reported);
  if (ev.valid && mismatches.empty()) return kExitOk;
  // Exit 2 always comes with one line on stderr (the report above has the details).
  const std::string sol = input_name(a.solution_path) + ": ";
  if (!ev.valid)
    return fail(bad_input(sol + "invalid schedule: " + (ev.errors.empty() ? std::string("see the report") : ev.errors.front())));
  return fail(bad_input(sol + std::to_string(mismatches.size()) + " reported latencies differ from the recomputed ones, first: subgraph " +
                        std::to_string(mismatches.front())));
}

}  // namespace

void register_evaluate(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<EvaluateArgs>();
  CLI::App* cmd = app.add_subcommand("evaluate", "Score an MLSys 2026 schedule exactly (RULES.md reading)");
  cmd->add_option("problem", args->problem_path, "Problem JSON")->required();
  cmd->add_option("solution", args->solution_path, "Solution JSON")->required();
  cmd->add_flag("--json", args->json, "Machine-readable output");
  cmd->add_option("--trace", args->trace_path,
                  "Write a Chrome trace (Perfetto): subgraphs with their compute and memory time, working set");
  cmd->add_flag("--verbose", args->verbose, "Per-subgraph breakdown");
  cmd->add_flag("--check-reported", args->check_reported, "Compare with the solution's subgraph_latencies");
  cmd->add_option("--mm-compute", args->mm_compute, "MatMul compute model: opk (default) or native")
      ->check(CLI::IsMember({"opk", "native"}));
  cmd->add_flag("--allow-super-native", args->rules.allow_super_native, "Accept w, h, k above native (D6)");
  cmd->add_flag("--spill-ephemeral", args->rules.spill_ephemeral,
                "Ephemerals with outside consumers are written to slow memory (D4)");
  cmd->add_flag("--resident-only-if-consumed", args->rules.resident_only_if_consumed,
                "A retained tensor occupies memory only if the next subgraph reads it (D5)");
  cmd->add_flag("--strict-ephemeral", args->rules.strict_ephemeral, "Recompute ephemeral regions every step (D12)");
  cmd->add_flag("--no-reuse-for-null-traversal", args->rules.no_reuse_for_null_traversal,
                "Superseded reading of Example 4A: no reuse between tiles in raster order (D2)");
  cmd->callback([args, &exit_code] { exit_code = run_evaluate(*args); });
}

}  // namespace sp::cli
