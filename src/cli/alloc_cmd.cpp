// scratchplan alloc INPUT --capacity N [--minimize] [--objective pack|select] [--solver NAME]
//   [--time-limit S] [--threads N] -o OUTPUT [--svg PICTURE.svg]
// Exit: 0 plan written (pack: feasible), 2 bad input or infeasible pack, 1 internal error.
#include <algorithm>
#include <initializer_list>
#include <iostream>

#include "alloc/io.h"
#include "alloc/solver.h"
#include "alloc/validator.h"
#include "cli/options.h"
#include "core/json_reader.h"
#include "cli/verbs.h"
#include "core/outputs.h"

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
  bool threads_given = false, seed_given = false;  // set after parsing (they have defaults)
};

int run_alloc(const AllocArgs& a) {
  if (a.minimize && a.objective == "select")
    return fail(bad_input("--minimize: applies to --objective pack only (select minimizes the spill cost)"));
  auto kind = alloc::parse_solver_kind(a.solver);
  if (!kind) return fail(bad_input("--solver: " + kind.error().message));
  // A flag the chosen solver would ignore is rejected, never silently dropped.
  using alloc::SolverKind;
  const SolverKind k = *kind;
  auto used_by = [&](const char* flag, bool given, std::initializer_list<SolverKind> solvers, const char* names) {
    if (!given || std::find(solvers.begin(), solvers.end(), k) != solvers.end()) return ok_status();
    return Status(bad_input(std::string(flag) + ": applies to --solver " + names + " only, not " + a.solver));
  };
  for (Status st : {used_by("--exact-off", !a.exact_off.empty(), {SolverKind::kAuto, SolverKind::kExact}, "auto or exact"),
                    used_by("--threads", a.threads_given, {SolverKind::kAuto, SolverKind::kExact}, "auto or exact"),
                    used_by("--seed", a.seed_given, {SolverKind::kAuto, SolverKind::kAnnealing}, "auto or annealing"),
                    used_by("--iterations", a.iterations > 0, {SolverKind::kAuto, SolverKind::kAnnealing}, "auto or annealing")})
    if (!st) return fail(st.error());
  alloc::ExactToggles exact;
  for (const auto& t : a.exact_off)
    if (Status st = alloc::disable_exact_technique(exact, t); !st) return fail(bad_input("--exact-off: " + st.error().message));
  OutputSet outputs;
  if (Status st = outputs.add("-o", a.output); !st) return fail(st.error());
  if (Status st = outputs.add("--svg", a.svg); !st) return fail(st.error());
  std::ostream& human = outputs.uses_stdout() ? std::cerr : std::cout;
  auto problem = alloc::read_problem(a.input);
  if (!problem) return fail(problem.error());
  alloc::Problem p = std::move(*problem);
  if (a.capacity >= 0) p.capacity = a.capacity;
  if (p.capacity == alloc::kUnbounded && !(a.minimize && a.objective == "pack"))
    return fail(bad_input(input_name(a.input) + ": no capacity (give --capacity N)"));
  alloc::SolveOptions o;
  o.solver = *kind;
  o.objective = a.objective == "select" ? alloc::Objective::kSelect : alloc::Objective::kPack;
  o.minimize = a.minimize;
  o.time_limit = a.time_limit;
  o.threads = a.threads;
  o.seed = a.seed;
  o.iterations = a.iterations;
  o.exact = exact;
  auto r = alloc::solve(p, o);
  if (!r) return fail(located(r.error(), a.input));
  const bool pack = o.objective == alloc::Objective::kPack;
  // Independent check of what is written (the library already validated it).
  if (r->feasible || !pack) {
    alloc::Problem judged = p;
    if (pack && a.minimize && p.capacity == alloc::kUnbounded) judged.capacity = alloc::kUnbounded;
    auto rep = alloc::validate(judged, r->placement, pack);
    if (!rep.ok()) {
      return fail(internal_error("internal error: invalid plan: " + rep.issues[0].message));
    }
  }
  if (pack && !r->feasible)  // exit 2 with one line: no summary of a plan that is not written
    return fail(bad_input(input_name(a.input) + ": no plan within capacity " + std::to_string(p.capacity) +
                          (r->proven_infeasible ? " (proven infeasible: lower bound " + std::to_string(r->lower_bound) + ")"
                                                : " (search gave up; lower bound " + std::to_string(r->lower_bound) + ")") +
                          "; no output written"));
  const bool csv_out = a.output.size() >= 4 && a.output.substr(a.output.size() - 4) == ".csv";
  outputs.set(a.output, csv_out ? alloc::plan_to_csv(p, r->placement) : alloc::result_to_json(p, *r, o).dump(1) + "\n");
  if (!a.svg.empty()) outputs.set(a.svg, alloc::plan_to_svg(p, r->placement, input_name(a.input) + " (" + r->solver + ")"));
  if (Status st = outputs.commit(); !st) return fail(st.error());
  human << "solver: " << r->solver << "\n";
  if (pack) {
    human << "height: " << r->height << " (lower bound " << r->lower_bound << (r->proven_optimal ? ", proven optimal" : "") << ")\n";
  } else {
    std::size_t spilled = 0;
    for (auto off : r->placement.offsets) spilled += off == alloc::kSpilled;
    human << "spill cost: " << r->spill_cost << " (" << spilled << " spilled; lower bound " << r->lower_bound
              << (r->proven_optimal ? ", proven optimal" : "") << ")\n";
  }
  human << "time: " << r->seconds << " s" << (r->nodes ? ", " + std::to_string(r->nodes) + " search nodes" : std::string()) << "\n";
  return kExitOk;
}

}  // namespace

void register_alloc(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<AllocArgs>();
  CLI::App* cmd = app.add_subcommand("alloc", "Assign scratchpad offsets to buffers (pack or select)");
  cmd->add_option("input", a->input, "Problem: MiniMalloc CSV (.csv) or JSON")->required();
  cmd->add_option("--capacity", a->capacity, "Scratchpad capacity in bytes")->check(byte_size());
  cmd->add_flag("--minimize", a->minimize, "pack: find the smallest height (capacity is the upper limit)");
  cmd->add_option("--objective", a->objective, "pack (place all) or select (minimize spill cost)")
      ->check(CLI::IsMember({"pack", "select"}));
  cmd->add_option("--solver", a->solver, "greedy, firstfit, bestfit, greedy-by-size, sweep, annealing, exact, auto");
  cmd->add_option("--time-limit", a->time_limit, "Seconds for anytime solvers")->check(seconds());
  CLI::Option* threads = cmd->add_option("--threads", a->threads, "Worker threads of auto and exact")->check(thread_count());
  CLI::Option* seed = cmd->add_option("--seed", a->seed, "Annealing seed (auto, annealing)")->check(count_in(0, INT64_MAX));
  cmd->add_option("--iterations", a->iterations, "Annealing move budget (fixes the result for a seed)")
      ->check(count_in(1, int64_t{1} << 40));
  cmd->add_option("--exact-off", a->exact_off,
                  "Switch off exact-search techniques: section_bound symmetry decompose dominance lb_probe fail_first memo restarts lift_check memo_lift_key free_place tight_holes minimalloc_dives load_bound");
  cmd->add_option("-o,--output", a->output, "Plan output (.csv: MiniMalloc CSV with offsets; else JSON; - for stdout)")->required();
  cmd->add_option("--svg", a->svg, "Write an address x time picture");
  cmd->callback([a, threads, seed, &exit_code] {
    a->threads_given = threads->count() > 0;
    a->seed_given = seed->count() > 0;
    exit_code = run_alloc(*a);
  });
}

}  // namespace sp::cli
