// scratchplan evaluate PROBLEM.json SOLUTION.json: scores an MLSys 2026 schedule.
// Exit: 0 valid (and, with --check-reported, every claim matches), 2 invalid or bad input.
#include <cstdio>
#include <iostream>

#include "cli/verbs.h"
#include "mlsys/evaluator.h"

namespace sp::cli {
namespace {

struct EvaluateArgs {
  std::string problem_path;
  std::string solution_path;
  bool json = false;
  bool verbose = false;
  bool check_reported = false;
  std::string mm_compute = "opk";
  mlsys::RuleOptions rules;
};

std::string fmt(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6f", v);
  return buf;
}

int run_evaluate(EvaluateArgs& a) {
  auto problem = mlsys::read_problem(a.problem_path);
  if (!problem) {
    std::cerr << "error: " << problem.error().message << "\n";
    return exit_code(problem.error());
  }
  auto solution = mlsys::read_solution(a.solution_path, *problem);
  if (!solution) {
    std::cerr << "error: " << solution.error().message << "\n";
    return exit_code(solution.error());
  }
  a.rules.mm_compute = a.mm_compute == "native" ? mlsys::MatMulCompute::kNative : mlsys::MatMulCompute::kOpK;
  mlsys::Evaluation ev = mlsys::evaluate(*problem, *solution, a.rules);
  std::vector<int> mismatches;
  double claimed_total = 0;
  for (std::size_t i = 0; i < ev.subgraphs.size(); ++i) {
    const auto& s = ev.subgraphs[i];
    claimed_total += s.reported_latency;
    if (a.check_reported && (!s.evaluated || !mlsys::latency_close(s.latency, s.reported_latency)))
      mismatches.push_back(static_cast<int>(i));
  }
  if (a.json) {
    Json out;
    out["valid"] = ev.valid;
    out["total"] = ev.total;
    out["claimed_total"] = claimed_total;
    out["mm_compute"] = a.mm_compute;
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
      if (a.verbose) {
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
    if (a.check_reported) out["reported_mismatches"] = mismatches;
    std::cout << out.dump(1) << "\n";
  } else {
    std::cout << "total latency: " << fmt(ev.total) << "\n";
    std::cout << "claimed total: " << fmt(claimed_total) << "\n";
    std::cout << "valid: " << (ev.valid ? "yes" : "no") << "\n";
    for (std::size_t i = 0; i < ev.subgraphs.size(); ++i) {
      const auto& s = ev.subgraphs[i];
      std::cout << "subgraph " << i << ": latency " << (s.evaluated ? fmt(s.latency) : std::string("n/a"))
                << ", working-set peak " << s.peak_working_set;
      if (a.verbose)
        std::cout << ", granularity [" << s.granularity.w << "," << s.granularity.h << "," << s.granularity.k << "], "
                  << s.tiles << " tiles x " << s.k_steps << " k-steps, loaded " << s.load_elements << ", stored "
                  << s.store_elements << ", compute " << fmt(s.compute);
      std::cout << "\n";
    }
    for (const auto& e : ev.errors) std::cout << "ERROR: " << e << "\n";
    for (const auto& w : ev.warnings) std::cout << "WARNING: " << w << "\n";
    if (a.check_reported) {
      std::cout << "reported latencies that differ from the recomputed ones: " << mismatches.size() << " of "
                << ev.subgraphs.size() << "\n";
      for (int i : mismatches)
        std::cout << "  subgraph " << i << ": reported " << fmt(ev.subgraphs[i].reported_latency) << ", recomputed "
                  << (ev.subgraphs[i].evaluated ? fmt(ev.subgraphs[i].latency) : std::string("n/a")) << "\n";
    }
  }
  return ev.valid && mismatches.empty() ? kExitOk : kExitBadInput;
}

}  // namespace

void register_evaluate(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<EvaluateArgs>();
  CLI::App* cmd = app.add_subcommand("evaluate", "Score an MLSys 2026 schedule exactly (RULES.md reading)");
  cmd->add_option("problem", args->problem_path, "Problem JSON")->required();
  cmd->add_option("solution", args->solution_path, "Solution JSON")->required();
  cmd->add_flag("--json", args->json, "Machine-readable output");
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
