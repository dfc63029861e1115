// scratchplan alloc INPUT --capacity N [--minimize] [--objective pack|select] [--solver NAME]
//   [--time-limit S] [--threads N] -o OUTPUT [--svg PICTURE.svg]
// Exit: 0 plan written (pack: feasible), 2 bad input or infeasible pack, 1 internal error.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "alloc/io.h"
#include "alloc/solver.h"
#include "alloc/validator.h"
#include "cli/options.h"
#include "core/json_reader.h"
#include "cli/verbs.h"
#include "core/deadline.h"
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
  alloc::SolveRequest req;
  req.objective = a.objective, req.solver = a.solver, req.minimize = a.minimize;
  req.time_limit = a.time_limit, req.threads = a.threads, req.threads_given = a.threads_given;
  req.seed = a.seed, req.seed_given = a.seed_given, req.iterations = a.iterations, req.exact_off = a.exact_off;
  req.capacity = a.capacity;
  if (auto checked = alloc::solve_options(req); !checked) return fail(checked.error());  // a bad flag costs no reading
  OutputSet outputs;
  if (Status st = outputs.add("-o", a.output); !st) return fail(st.error());
  if (Status st = outputs.add("--svg", a.svg); !st) return fail(st.error());
  std::ostream& human = outputs.uses_stdout() ? std::cerr : std::cout;
  const Deadline wall(a.time_limit);  // the limit covers reading the input too
  auto problem = alloc::read_problem(a.input);
  if (!problem) return fail(problem.error());
  alloc::Problem p = std::move(*problem);
  auto prepared = alloc::prepare_solve(p, req, input_name(a.input), wall.elapsed_seconds());
  if (!prepared) return fail(prepared.error());
  alloc::SolveOptions o = std::move(*prepared);
  const bool pack = o.objective == alloc::Objective::kPack;
  // Progress on stderr for long runs: improvements found after the first half second, at most
  // two lines a second (one line rewritten in place when stderr is a terminal). At a fixed pack
  // capacity only plans within it count, so a failed pack still ends with its one error line.
  const bool tty = isatty(STDERR_FILENO) != 0;
  bool progress_open = false;
  double last_line = -1.0;
  // Time to target: when the first plan within 0.1 % of the lower bound was found (the benchmark's
  // measure of a run; every improvement passes here, before the progress lines' rate limit).
  double near_bound_at = -1.0;
  o.on_improvement = [&](const alloc::Progress& pr) {
    if (near_bound_at < 0 && pack && a.minimize && pr.lower_bound > 0 &&
        static_cast<double>(pr.value) <= 1.001 * static_cast<double>(pr.lower_bound))
      near_bound_at = pr.seconds;
    if (pr.seconds < 0.5 || pr.seconds - last_line < 0.5) return;
    if (pack && !a.minimize && pr.value > p.capacity) return;
    last_line = pr.seconds;
    const double gap = pr.lower_bound > 0 ? 100.0 * static_cast<double>(pr.value - pr.lower_bound) / static_cast<double>(pr.lower_bound) : 0.0;
    char line[256];
    std::snprintf(line, sizeof line, "progress: %.1f s, %s %lld (%.3f %% above lower bound %lld) by %s", pr.seconds,
                  pack ? "height" : "spill cost", static_cast<long long>(pr.value), gap, static_cast<long long>(pr.lower_bound),
                  pr.solver.c_str());
    if (tty) std::fprintf(stderr, "\r\033[K%s", line);
    else std::fprintf(stderr, "%s\n", line);
    std::fflush(stderr);
    progress_open = tty;
  };
  auto r = alloc::solve(p, o);
  if (progress_open) std::fprintf(stderr, "\n");
  if (!r) return fail(located(r.error(), a.input));
  // (solve() ran the independent validator on this plan before returning it; the capacity
  // check of a pack plan is its height, compared in solve() as well.)
  if (pack && !r->feasible)  // exit 2 comes with one line on stderr and nothing written
    return fail(bad_input(alloc::no_plan_message(input_name(a.input), p, *r)));
  std::string body;
  bool csv_out = a.output.size() >= 4 && a.output.substr(a.output.size() - 4) == ".csv";
  if (csv_out) body = alloc::plan_to_csv(p, r->placement);
  else body = alloc::result_to_json_text(p, *r, o);
  outputs.set(a.output, body);
  if (!a.svg.empty())
    outputs.set(a.svg, alloc::plan_to_svg(p, r->placement, input_name(a.input) + " (" + r->solver + ")",
                                          pack && a.minimize ? r->lower_bound : -1));
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
  if (pack && a.minimize && near_bound_at >= 0) human << "within 0.1 % of the lower bound at: " << near_bound_at << " s\n";
  human << "time: " << r->seconds << " s" << (r->nodes ? ", " + std::to_string(r->nodes) + " search nodes" : std::string()) << "\n";
  return kExitOk;
}

}  // namespace

void register_alloc(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<AllocArgs>();
  CLI::App* cmd = app.add_subcommand("alloc", "Assign scratchpad offsets to buffers (pack or select)");
  cmd->add_option("input", a->input, "Problem: MiniMalloc CSV or JSON (.csv / .json by name, other names and - for standard input by content)")->required();
  cmd->add_option("--capacity", a->capacity, "Scratchpad capacity in bytes")->check(byte_size());
  cmd->add_flag("--minimize", a->minimize, "pack: find the smallest height (capacity is the upper limit)");
  cmd->add_option("--objective", a->objective, "pack (place all) or select (minimize spill cost)")
      ->check(CLI::IsMember({"pack", "select"}));
  cmd->add_option("--solver", a->solver, "greedy, firstfit, bestfit, best-of-fits, greedy-by-size, sweep, online, annealing, exact, auto (default: auto)");
  cmd->add_option("--time-limit", a->time_limit, "Seconds for the whole run, reading and writing included (default: 10)")->check(seconds());
  CLI::Option* threads = cmd->add_option("--threads", a->threads, "Worker threads of auto and exact")->check(thread_count());
  CLI::Option* seed = cmd->add_option("--seed", a->seed, "Annealing seed (auto, annealing)")->check(count_in(0, INT64_MAX));
  cmd->add_option("--iterations", a->iterations, "A budget instead of time: annealing moves; auto --minimize from 2,000 buffers: multi-start rounds (fixes the plan for a seed and thread count)")
      ->check(count_in(1, int64_t{1} << 40));
  cmd->add_option("--exact-off", a->exact_off,
                  "Switch off exact-search techniques: section_bound symmetry decompose dominance lb_probe fail_first memo restarts lift_check memo_lift_key free_place tight_holes minimalloc_dives load_bound sparse_dives");
  cmd->add_option("-o,--output", a->output, "Plan output (.csv: MiniMalloc CSV with offsets; else JSON; - for stdout)")->required();
  cmd->add_option("--svg", a->svg, "Write an address x time picture");
  cmd->callback([a, threads, seed, &exit_code] {
    a->threads_given = threads->count() > 0;
    a->seed_given = seed->count() > 0;
    exit_code = run_alloc(*a);
  });
}

}  // namespace sp::cli
