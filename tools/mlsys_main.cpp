// mlsys INPUT.json OUTPUT.json: the contest's entry point, running the same scheduler as
// `scratchplan schedule`. Time budget: --time-limit, else $MLSYS_TIME_LIMIT (seconds), else a
// default from the problem size like the contest tiers.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>

#include "cli/options.h"
#include "core/result.h"
#include "mlsys/scheduler.h"

int main(int argc, char** argv) {
  CLI::App app{"mlsys: MLSys 2026 contest scheduler (same engine as `scratchplan schedule`)", "mlsys"};
  sp::mlsys::ScheduleRunOptions run;
  run.program = "mlsys";
  sp::mlsys::SchedulerOptions opt;
  opt.threads = 0;
  std::string mm_compute = "opk";
  app.add_option("input", run.problem_path, "Problem JSON (- for stdin)")->required();
  app.add_option("output", run.output_path, "Solution JSON (- for stdout)")->required();
  app.add_option("--trace", run.trace_path, "Also write the final schedule as a Chrome trace (Perfetto)");
  app.add_option("--time-limit", opt.time_limit_s, "Seconds (default: $MLSYS_TIME_LIMIT or by problem size)")
      ->check(sp::cli::seconds());
  app.add_option("--threads", opt.threads, "Search threads (default: all cores)")->check(sp::cli::thread_count());
  app.add_option("--seed", opt.seed, "Random seed")->check(sp::cli::count_in(0, INT64_MAX));
  app.add_option("--mm-compute", mm_compute, "opk (default) or native")->check(CLI::IsMember({"opk", "native"}));
  app.add_flag("--verbose", run.verbose, "Progress on stderr");
  app.set_version_flag("--version", "mlsys (scratchplan 0.1.0)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::cerr << "mlsys: " << e.what() << " (see --help)\n";
    return sp::kExitBadInput;
  }
  if (opt.time_limit_s < 0) {
    if (const char* env = std::getenv("MLSYS_TIME_LIMIT")) {
      char* end = nullptr;
      const double v = std::strtod(env, &end);
      if (end == env || *end != '\0' || !(v > 0 && v <= sp::cli::kMaxSeconds)) {
        std::cerr << "mlsys: MLSYS_TIME_LIMIT must be a positive number of seconds, got '" << env << "'\n";
        return sp::kExitBadInput;
      }
      opt.time_limit_s = v;
    }
  }
  opt.rules.mm_compute = mm_compute == "native" ? sp::mlsys::MatMulCompute::kNative : sp::mlsys::MatMulCompute::kOpK;
  return sp::mlsys::run_schedule_to_file(run, opt);
}
