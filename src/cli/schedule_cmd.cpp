// scratchplan schedule PROBLEM.json -o SOLUTION.json [--trace FILE.json]: plans an MLSys 2026 schedule.
// Exit: 0 written, 2 bad input or no valid schedule exists, 1 internal error.
#include "cli/options.h"
#include "cli/verbs.h"
#include "mlsys/scheduler.h"

namespace sp::cli {
namespace {

struct ScheduleArgs {
  mlsys::ScheduleRunOptions run;
  mlsys::SchedulerOptions opt;
  std::string mm_compute = "opk";
};

}  // namespace

void register_schedule(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<ScheduleArgs>();
  a->opt.threads = 0;  // all hardware threads unless given
  CLI::App* cmd = app.add_subcommand("schedule", "Plan an MLSys 2026 schedule (fusion, granularity, retention, traversal)");
  cmd->add_option("problem", a->run.problem_path, "Problem JSON (- for stdin)")->required();
  cmd->add_option("-o,--output", a->run.output_path,
                  "Solution JSON (rewritten atomically on every improvement; - for stdout, final schedule only)")
      ->required();
  cmd->add_option("--trace", a->run.trace_path,
                  "Write the final schedule as a Chrome trace (Perfetto): subgraphs with their compute and memory "
                  "time, working set");
  CLI::Option* time_limit = cmd->add_option("--time-limit", a->opt.time_limit_s, "Seconds to search (default: from the problem size)")
                                ->check(seconds());
  cmd->add_option("--iterations", a->opt.iterations, "Search moves instead of a time limit (deterministic)")
      ->check(count_in(0, int64_t{1} << 40))
      ->excludes(time_limit);
  cmd->add_option("--threads", a->opt.threads, "Search threads (default: all cores)")->check(thread_count());
  cmd->add_option("--seed", a->opt.seed, "Random seed")->check(count_in(0, INT64_MAX));
  cmd->add_option("--max-segment-ops", a->opt.max_segment_ops, "Longest run of ops fused into one subgraph")
      ->check(count_in(1, 4096));
  cmd->add_option("--mm-compute", a->mm_compute, "MatMul compute model: opk (default) or native")
      ->check(CLI::IsMember({"opk", "native"}));
  cmd->add_flag("--verbose", a->run.verbose, "Lower bounds and progress on stderr");
  cmd->callback([a, &exit_code] {
    a->opt.rules.mm_compute = a->mm_compute == "native" ? mlsys::MatMulCompute::kNative : mlsys::MatMulCompute::kOpK;
    exit_code = mlsys::run_schedule_to_file(a->run, a->opt);
  });
}

}  // namespace sp::cli
