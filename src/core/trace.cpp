#include "core/trace.h"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace sp {

namespace {

// Microseconds rounded to nanoseconds: keeps files small and sums stable.
double round_us(double v) { return std::round(v * 1000.0) / 1000.0; }

}  // namespace

TraceBuilder::TraceBuilder(std::string unit, double us_per_unit) : unit_(std::move(unit)), scale_(us_per_unit) {}

int TraceBuilder::process(const std::string& name) {
  processes_.push_back(name);
  return static_cast<int>(processes_.size());
}

int TraceBuilder::thread(int pid, const std::string& name) {
  threads_.emplace_back(pid, name);
  return static_cast<int>(threads_.size());
}

void TraceBuilder::slice(int pid, int tid, const std::string& name, double start, double dur, Json args,
                         const std::string& category) {
  slices_.push_back({pid, tid, round_us(start * scale_), round_us(std::max(0.0, dur) * scale_), name, category,
                     std::move(args)});
}

void TraceBuilder::counter(int pid, const std::string& name, double ts,
                           const std::vector<std::pair<std::string, double>>& series) {
  Json a = Json::object();
  for (const auto& [k, v] : series) a[k] = v;
  samples_.push_back({pid, name, round_us(ts * scale_), std::move(a)});
}

void TraceBuilder::note(const std::string& key, Json value) { other_[key] = std::move(value); }

std::string TraceBuilder::to_json() const {
  Json events = Json::array();
  for (std::size_t i = 0; i < processes_.size(); ++i) {
    const int pid = static_cast<int>(i + 1);
    events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"tid", 0}, {"args", {{"name", processes_[i]}}}});
    events.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", pid}, {"tid", 0}, {"args", {{"sort_index", pid}}}});
  }
  for (std::size_t i = 0; i < threads_.size(); ++i) {
    const int tid = static_cast<int>(i + 1);
    const int pid = threads_[i].first;
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", threads_[i].second}}}});
    events.push_back({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", pid}, {"tid", tid}, {"args", {{"sort_index", tid}}}});
  }
  std::vector<std::size_t> order(slices_.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const Slice &x = slices_[a], &y = slices_[b];
    return std::tie(x.pid, x.tid, x.ts) < std::tie(y.pid, y.tid, y.ts);
  });
  for (std::size_t i : order) {
    const Slice& s = slices_[i];
    Json e = {{"ph", "X"}, {"name", s.name}, {"pid", s.pid}, {"tid", s.tid}, {"ts", s.ts}, {"dur", s.dur}};
    if (!s.category.empty()) e["cat"] = s.category;
    if (!s.args.empty()) e["args"] = s.args;
    events.push_back(std::move(e));
  }
  std::vector<std::size_t> corder(samples_.size());
  for (std::size_t i = 0; i < corder.size(); ++i) corder[i] = i;
  std::stable_sort(corder.begin(), corder.end(), [&](std::size_t a, std::size_t b) {
    const Sample &x = samples_[a], &y = samples_[b];
    return std::tie(x.pid, x.name, x.ts) < std::tie(y.pid, y.name, y.ts);
  });
  for (std::size_t i : corder) {
    const Sample& c = samples_[i];
    events.push_back({{"ph", "C"}, {"name", c.name}, {"pid", c.pid}, {"tid", 0}, {"ts", c.ts}, {"args", c.args}});
  }
  Json other = other_;
  other["time_unit"] = unit_;
  other["us_per_unit"] = scale_;
  Json doc = {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ns"}, {"otherData", std::move(other)}};
  return doc.dump() + "\n";
}

}  // namespace sp
