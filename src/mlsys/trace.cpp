#include "mlsys/trace.h"

#include "core/trace.h"

namespace sp::mlsys {

std::string solution_trace(const Problem& problem, const Solution& solution, const Evaluation& ev,
                           const std::string& verb) {
  // The contest has no physical time unit: one latency unit is drawn as one microsecond.
  TraceBuilder tb("latency unit", 1.0);
  const int pid = tb.process(verb);
  const int t_sub = tb.thread(pid, "subgraph");
  const int t_compute = tb.thread(pid, "compute");
  const int t_memory = tb.thread(pid, "memory");
  const double capacity = static_cast<double>(problem.fast_memory_capacity);
  double t = 0;
  for (std::size_t i = 0; i < ev.subgraphs.size(); ++i) {
    const SubgraphEvaluation& s = ev.subgraphs[i];
    const SubgraphSpec& spec = solution.subgraphs[i];
    const std::string name = "subgraph " + std::to_string(i);
    Json args = {{"ops", spec.ops},
                 {"granularity", {s.granularity.w, s.granularity.h, s.granularity.k}},
                 {"retain", spec.retain},
                 {"evaluated", s.evaluated},
                 {"reported_latency", s.reported_latency}};
    if (!s.evaluated) {
      // No latency counts towards the total (as the reference): a zero-length marker.
      tb.slice(pid, t_sub, name, t, 0, std::move(args), "error");
      continue;
    }
    const int64_t steps = s.tiles * s.k_steps;
    args["latency"] = s.latency;
    args["compute"] = s.compute;
    args["memory"] = s.memory;
    args["tiles"] = s.tiles;
    args["k_steps"] = s.k_steps;
    args["memory_bound_steps"] = s.memory_bound_steps;
    args["compute_bound_steps"] = steps - s.memory_bound_steps;
    args["load_elements"] = s.load_elements;
    args["store_elements"] = s.store_elements;
    args["peak_working_set"] = s.peak_working_set;
    const char* bound = s.memory_bound_steps == 0 ? "compute" : s.memory_bound_steps == steps ? "memory" : "mixed";
    args["bound"] = bound;
    tb.slice(pid, t_sub, name, t, s.latency, std::move(args), bound);
    tb.slice(pid, t_compute, name + " compute", t, s.compute, {{"compute", s.compute}});
    tb.slice(pid, t_memory, name + " memory", t, s.memory,
             {{"memory", s.memory}, {"load_elements", s.load_elements}, {"store_elements", s.store_elements}});
    tb.counter(pid, "fast memory working set (elements)", t,
               {{"peak", static_cast<double>(s.peak_working_set)}, {"capacity", capacity}});
    t += s.latency;
  }
  tb.counter(pid, "fast memory working set (elements)", t, {{"peak", 0.0}, {"capacity", capacity}});
  tb.note("verb", verb);
  tb.note("total_latency", ev.total);
  tb.note("valid", ev.valid);
  tb.note("subgraphs", ev.subgraphs.size());
  tb.note("fast_memory_capacity", problem.fast_memory_capacity);
  tb.note("slow_memory_bandwidth", problem.slow_memory_bandwidth);
  return tb.to_json();
}

}  // namespace sp::mlsys
