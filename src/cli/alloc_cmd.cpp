// scratchplan alloc INPUT --capacity N [--minimize] [--objective pack|select] [--solver NAME]
//   [--time-limit S] [--threads N] -o OUTPUT [--svg PICTURE.svg]
// Exit: 0 plan written (pack: feasible), 2 bad input or infeasible pack, 1 internal error.
#include <iostream>

#include "alloc/io.h"
#include "alloc/solver.h"
#include "alloc/validator.h"
#include "cli/verbs.h"
#include "core/atomic_file.h"

namespace sp::cli {
namespace {

struct AllocArgs {
  std::string input, output, svg, objective = "pack", solver = "auto";
  int64_t capacity = -1;
  bool minimize = false;
  double time_limit = 10.0;
  int threads = 1;
  uint64_t seed = 1;
  int64_t iterations = 0;
  std::vector<std::string> exact_off;
};

int run_alloc(const AllocArgs& a) {
  auto problem = alloc::read_problem(a.input);
  if (!problem) {
    std::cerr << "error: " << problem.error().message << "\n";
    return exit_code(problem.error());
  }
  alloc::Problem p = std::move(*problem);
  if (a.capacity >= 0) p.capacity = a.capacity;
  if (p.capacity == alloc::kUnbounded && !(a.minimize && a.objective == "pack")) {
    std::cerr << "error: " << a.input << ": no capacity (give --capacity N)\n";
    return kExitBadInput;
  }
  auto kind = alloc::parse_solver_kind(a.solver);
  if (!kind) {
    std::cerr << "error: " << kind.error().message << "\n";
    return kExitBadInput;
  }
  alloc::SolveOptions o;
  o.solver = *kind;
  o.objective = a.objective == "select" ? alloc::Objective::kSelect : alloc::Objective::kPack;
  o.minimize = a.minimize;
  o.time_limit = a.time_limit;
  o.threads = a.threads;
  o.seed = a.seed;
  o.iterations = a.iterations;
  for (const auto& t : a.exact_off) {
    if (Status st = alloc::disable_exact_technique(o.exact, t); !st) {
      std::cerr << "error: " << st.error().message << "\n";
      return kExitBadInput;
    }
  }
  auto r = alloc::solve(p, o);
  if (!r) {
    std::cerr << "error: " << r.error().message << "\n";
    return exit_code(r.error());
  }
  const bool pack = o.objective == alloc::Objective::kPack;
  // Independent check of what is written (the library already validated it).
  if (r->feasible || !pack) {
    alloc::Problem judged = p;
    if (pack && a.minimize && p.capacity == alloc::kUnbounded) judged.capacity = alloc::kUnbounded;
    auto rep = alloc::validate(judged, r->placement, pack);
    if (!rep.ok()) {
      std::cerr << "internal error: invalid plan: " << rep.issues[0].message << "\n";
      return kExitInternal;
    }
  }
  std::string body;
  bool csv_out = a.output.size() >= 4 && a.output.substr(a.output.size() - 4) == ".csv";
  if (csv_out) body = alloc::plan_to_csv(p, r->placement);
  else body = alloc::result_to_json(p, *r, o).dump(1) + "\n";
  if (pack && !r->feasible) {
    std::cout << "infeasible: no plan within capacity " << p.capacity
              << (r->proven_infeasible ? " (proven" : " (not proven") << "; lower bound " << r->lower_bound << ")\n";
  }
  if (!a.output.empty() && (r->feasible || !pack)) {
    if (Status st = write_file_atomic(a.output, body); !st) {
      std::cerr << "error: " << st.error().message << "\n";
      return kExitInternal;
    }
  }
  if (!a.svg.empty() && (r->feasible || !pack)) {
    if (Status st = write_file_atomic(a.svg, alloc::plan_to_svg(p, r->placement, a.input + " (" + r->solver + ")")); !st) {
      std::cerr << "error: " << st.error().message << "\n";
      return kExitInternal;
    }
  }
  std::cout << "solver: " << r->solver << "\n";
  if (pack) {
    std::cout << "height: " << r->height << " (lower bound " << r->lower_bound << (r->proven_optimal ? ", proven optimal" : "") << ")\n";
  } else {
    std::size_t spilled = 0;
    for (auto off : r->placement.offsets) spilled += off == alloc::kSpilled;
    std::cout << "spill cost: " << r->spill_cost << " (" << spilled << " spilled; lower bound " << r->lower_bound
              << (r->proven_optimal ? ", proven optimal" : "") << ")\n";
  }
  std::cout << "time: " << r->seconds << " s" << (r->nodes ? ", " + std::to_string(r->nodes) + " search nodes" : std::string()) << "\n";
  return pack && !r->feasible ? kExitBadInput : kExitOk;
}

}  // namespace

void register_alloc(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<AllocArgs>();
  CLI::App* cmd = app.add_subcommand("alloc", "Assign scratchpad offsets to buffers (pack or select)");
  cmd->add_option("input", a->input, "Problem: MiniMalloc CSV (.csv) or JSON")->required();
  cmd->add_option("--capacity", a->capacity, "Scratchpad capacity in bytes")->check(CLI::NonNegativeNumber);
  cmd->add_flag("--minimize", a->minimize, "pack: find the smallest height (capacity is the upper limit)");
  cmd->add_option("--objective", a->objective, "pack (place all) or select (minimize spill cost)")
      ->check(CLI::IsMember({"pack", "select"}));
  cmd->add_option("--solver", a->solver, "greedy, firstfit, bestfit, greedy-by-size, sweep, annealing, exact, auto");
  cmd->add_option("--time-limit", a->time_limit, "Seconds for anytime solvers")->check(CLI::NonNegativeNumber);
  cmd->add_option("--threads", a->threads, "Worker threads for auto")->check(CLI::Range(1, 256));
  cmd->add_option("--seed", a->seed, "Annealing seed");
  cmd->add_option("--iterations", a->iterations, "Annealing move budget (fixes the result for a seed)");
  cmd->add_option("--exact-off", a->exact_off,
                  "Switch off exact-search techniques: section_bound symmetry decompose dominance lb_probe fail_first memo restarts lift_check memo_lift_key free_place tight_holes minimalloc_dives load_bound");
  cmd->add_option("-o,--output", a->output, "Plan output (.csv: MiniMalloc CSV with offsets; else JSON)")->required();
  cmd->add_option("--svg", a->svg, "Write an address x time picture");
  cmd->callback([a, &exit_code] { exit_code = run_alloc(*a); });
}

}  // namespace sp::cli
