// Timelines in the Chrome trace event format, the JSON that Perfetto, chrome://tracing and the
// Neuron, PyTorch and XLA profilers read. Every verb that has a time axis (nki plan/check,
// schedule, evaluate, plan) writes its `--trace FILE.json` through this builder.
//
// Format facts (Trace Event Format): a file is {"traceEvents": [...]} plus free metadata; a
// complete event is ph "X" with ts and dur; a counter is ph "C" whose args hold one series per
// key; metadata events (ph "M") name processes and threads. ts and dur are in microseconds.
// A verb whose clock is not microseconds (cycles, the contest's latency unit) gives a scale
// (microseconds per unit) and its unit's name; both are written into "otherData" and into the
// process metadata so that a reader can convert back. Events are written sorted by track and
// time, so timestamps never go backwards on a track.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/json_reader.h"

namespace sp {

class TraceBuilder {
 public:
  // `unit` names the verb's clock ("us", "cycle", "latency unit"); `us_per_unit` converts it.
  TraceBuilder(std::string unit, double us_per_unit);

  // A process (one per core or engine group); returns its pid. Processes sort in creation order.
  int process(const std::string& name);
  // A thread (track) of `pid`; returns its tid. Threads sort in creation order.
  int thread(int pid, const std::string& name);

  // A complete event on (pid, tid) from `start` for `dur` (both in the verb's unit).
  void slice(int pid, int tid, const std::string& name, double start, double dur, Json args = Json::object(),
             const std::string& category = "");
  // One sample of counter `name` in `pid` at `ts`: each series key -> value.
  void counter(int pid, const std::string& name, double ts, const std::vector<std::pair<std::string, double>>& series);
  // Free-form facts about the run (totals the verb reported, the input's name) in "otherData".
  void note(const std::string& key, Json value);

  std::size_t slices() const { return slices_.size(); }
  // The finished JSON document.
  std::string to_json() const;

 private:
  struct Slice {
    int pid, tid;
    double ts, dur;  // microseconds
    std::string name, category;
    Json args;
  };
  struct Sample {
    int pid;
    std::string name;
    double ts;  // microseconds
    Json args;
  };
  std::string unit_;
  double scale_;
  std::vector<std::string> processes_;                 // index = pid - 1
  std::vector<std::pair<int, std::string>> threads_;  // index = tid - 1, with the owning pid
  std::vector<Slice> slices_;
  std::vector<Sample> samples_;
  Json other_ = Json::object();
};

}  // namespace sp
