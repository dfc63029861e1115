// The front end shared by `scratchplan schedule` and the contest executable `mlsys`: read the
// problem, schedule, and write every improvement atomically so the output file is always a
// complete, validated schedule.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <thread>

#include "core/atomic_file.h"
#include "core/outputs.h"
#include "core/deadline.h"
#include "mlsys/scheduler.h"
#include "mlsys/trace.h"

namespace sp::mlsys {

int run_schedule_to_file(const ScheduleRunOptions& run, const SchedulerOptions& options_in) {
  // Output paths are checked before any work: a bad path fails now, not after the budget.
  // The trace comes first in the set: should the final commit fail half way, it is the trace
  // that is removed, never the schedule written by an earlier improvement.
  OutputSet outputs;
  for (const auto& [flag, path] : {std::pair{"--trace", run.trace_path}, std::pair{"-o", run.output_path}})
    if (Status st = outputs.add(flag, path); !st) {
      std::cerr << run.program << ": " << st.error().message << "\n";
      return exit_code(st.error());
    }
  // "-": only the final schedule goes to standard output; the summary goes to stderr.
  const bool to_stdout = run.output_path == "-";
  auto problem = read_problem(run.problem_path);
  if (!problem) {
    std::cerr << run.program << ": " << problem.error().message << "\n";
    return exit_code(problem.error());
  }
  SchedulerOptions options = options_in;
  if (options.time_limit_s < 0 && options.iterations < 0) options.time_limit_s = default_time_limit(*problem);
  if (options.threads <= 0) options.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const LowerBounds lb = lower_bounds(*problem, options.rules);
  if (run.verbose) {
    std::fprintf(stderr, "lower bounds: compute %.1f, memory %.1f, combined %.1f\n", lb.compute, lb.memory, lb.combined);
    std::fprintf(stderr, "budget: %s, %d thread(s), seed %llu\n",
                 options.iterations >= 0 ? (std::to_string(options.iterations) + " iterations").c_str()
                                         : (std::to_string(options.time_limit_s) + " s").c_str(),
                 options.threads, static_cast<unsigned long long>(options.seed));
  }
  Status write_status = ok_status();
  const Deadline clock;
  auto write = [&](const Solution& sol, double total) {
    if (!to_stdout) {
      Status st = write_file_atomic(run.output_path, solution_to_json(sol).dump(1) + "\n");
      if (!st.ok()) write_status = st;
    }
    if (run.verbose) std::fprintf(stderr, "%8.3f s  total %.1f  (%zu subgraphs)\n", clock.elapsed_seconds(), total, sol.subgraphs.size());
  };
  auto result = schedule(*problem, options, write);
  if (!result) {
    // The scheduler says what cannot be scheduled; the file is named here.
    const std::string name = input_name(run.problem_path);
    const std::string& m = result.error().message;
    std::cerr << run.program << ": " << (m.rfind(name + ":", 0) == 0 ? m : name + ": " + m) << "\n";
    return exit_code(result.error());
  }
  // The final pick is deterministic; write it even if an equal-cost schedule was written first.
  // It is committed together with the trace (standard output last).
  outputs.set(run.output_path, solution_to_json(result->solution).dump(1) + "\n");
  if (!run.trace_path.empty())
    outputs.set(run.trace_path,
                solution_trace(*problem, result->solution, evaluate(*problem, result->solution, options.rules), "schedule"));
  if (Status st = outputs.commit(); !st) write_status = st;
  if (run.verbose)
    std::fprintf(stderr, "%8.3f s  total %.1f  (%zu subgraphs)\n", clock.elapsed_seconds(), result->stats.total,
                 result->solution.subgraphs.size());
  if (!write_status.ok()) {
    std::cerr << run.program << ": " << write_status.error().message << "\n";
    return exit_code(write_status.error());
  }
  if (run.verbose) {
    const auto& s = result->stats;
    std::fprintf(stderr,
                 "final total %.1f (lower bound %.1f, gap %.2f%%); first valid %.3f s, final %.3f s; %lld moves, %lld "
                 "subgraph simulations; %.0f moves/s over %.2f s of annealing\n",
                 s.total, lb.combined, lb.combined > 0 ? std::max(0.0, 100.0 * (s.total / lb.combined - 1.0)) : 0.0, s.first_valid_s,
                 s.final_s, static_cast<long long>(s.iterations), static_cast<long long>(s.configs_evaluated),
                 s.anneal_s > 0 ? static_cast<double>(s.iterations) / s.anneal_s : 0.0, s.anneal_s);
  }
  std::fprintf(outputs.uses_stdout() ? stderr : stdout, "total latency: %.1f (%zu subgraphs)\n", result->stats.total,
               result->solution.subgraphs.size());
  return kExitOk;
}

}  // namespace sp::mlsys
