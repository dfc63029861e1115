#include "nki/trace.h"

#include <algorithm>
#include <set>

#include "core/trace.h"

namespace sp::nki {

namespace {

// Microseconds per timeline cycle: the timeline counts cycles of the reference clock.
double us_per_cycle(const Hardware& hw) {
  for (const auto& [name, v] : hw.cycle_model)
    if (name == "reference_clock_ghz" && v > 0) return 1e-3 / v;
  return 1e-3 / 1.4;
}

double clock_ghz(const Hardware& hw) { return 1e-3 / us_per_cycle(hw); }

// Tracks in the order a profiler lists a NeuronCore: DMA queues, then the compute engines.
constexpr Engine kTrackOrder[] = {Engine::kDma, Engine::kTensor, Engine::kVector, Engine::kScalar, Engine::kGpSimd};

// One process: a track per engine queue with the recorded spans, and the bytes per partition
// of SBUF and PSUM held by live tensors. A tensor is live from the start of the first recorded
// execution that touches it to the end of the last one (the planner reserves whole tensors
// over that range); its bytes are its distinct physical tiles in `placements`.
void add_timeline(TraceBuilder& tb, const std::string& process, const Kernel& k, const Timeline& tl,
                  const std::vector<std::vector<TilePlacement>>& placements) {
  const int pid = tb.process(process);
  std::array<std::vector<int>, kNumEngines> tid;
  for (Engine e : kTrackOrder) {
    const int ei = static_cast<int>(e);
    if (tl.busy[ei] == 0) continue;
    for (int l = 0; l < tl.lanes[ei]; ++l)
      tid[ei].push_back(tb.thread(pid, std::string(engine_name(e)) + (tl.lanes[ei] > 1 ? " queue " + std::to_string(l) : "")));
  }
  // Loop iterations of the recorded executions, in one pass over the nest.
  std::vector<std::pair<int64_t, std::size_t>> want;
  want.reserve(tl.spans.size());
  for (std::size_t i = 0; i < tl.spans.size(); ++i) want.push_back({tl.spans[i].exec, i});
  std::sort(want.begin(), want.end());
  std::vector<std::string> iteration(tl.spans.size());
  std::size_t next = 0;
  int64_t ev = 0;
  for_each_execution(k, [&](int ii, const std::vector<int64_t>& vals) {
    while (next < want.size() && want[next].first == ev) iteration[want[next++].second] = iteration_string(k, k.instrs[ii], vals);
    ++ev;
    return next < want.size();
  });
  const int nt = static_cast<int>(k.tensors.size());
  std::vector<std::vector<TensorId>> touches(k.instrs.size());
  for (std::size_t i = 0; i < k.instrs.size(); ++i) {
    for (const auto* list : {&k.instrs[i].reads, &k.instrs[i].writes})
      for (const Access& a : *list) touches[i].push_back(a.tensor);
    std::sort(touches[i].begin(), touches[i].end());
    touches[i].erase(std::unique(touches[i].begin(), touches[i].end()), touches[i].end());
  }
  std::vector<Cycles> live_from(nt, -1), live_to(nt, -1);
  for (std::size_t i = 0; i < tl.spans.size(); ++i) {
    const EngineSpan& s = tl.spans[i];
    const Instruction& ins = k.instrs[s.instr];
    const int e = static_cast<int>(ins.engine);
    const std::string name = ins.source.empty() ? ins.name : ins.source + " " + ins.name;
    Json args = {{"op", ins.name}, {"iteration", iteration[i]}, {"cycles", s.end - s.start}};
    if (!ins.source.empty()) args["source"] = ins.source;
    if (s.lane < static_cast<int>(tid[e].size()))
      tb.slice(pid, tid[e][s.lane], name, static_cast<double>(s.start), static_cast<double>(s.end - s.start),
               std::move(args), engine_name(ins.engine));
    for (TensorId t : touches[s.instr]) {
      live_from[t] = live_from[t] < 0 ? s.start : std::min(live_from[t], s.start);
      live_to[t] = std::max(live_to[t], s.end);
    }
  }
  // Counters, one per on-chip buffer: "in use" is the fullest partition's bytes held by live
  // tensors; "highest" the end of the highest live tile (SBUF: rounded to the alignment, PSUM:
  // to its bank), which peaks at the bytes (banks) the plan reports.
  const Partition P = std::max<Partition>(k.hw.partitions, 1);
  for (Memory buf : {Memory::kSbuf, Memory::kPsum}) {
    const bool sbuf = buf == Memory::kSbuf;
    const Bytes round = sbuf ? std::max<Bytes>(k.hw.sbuf_min_align, 1) : std::max<Bytes>(k.hw.psum_bank_bytes, 1);
    std::vector<std::vector<Bytes>> per(nt);
    std::vector<Bytes> top(nt, 0);
    struct Change {
      Cycles at;
      bool add;
      TensorId t;
    };
    std::vector<Change> changes;
    for (int t = 0; t < nt; ++t) {
      const Tensor& ten = k.tensors[t];
      if (ten.buffer != buf || static_cast<std::size_t>(t) >= placements.size() || placements[t].empty() ||
          live_from[t] < 0)
        continue;
      per[t].assign(static_cast<std::size_t>(P), 0);
      std::set<std::pair<Partition, Bytes>> seen;
      for (const TilePlacement& pl : placements[t]) {
        if (!seen.insert({pl.start_partition, pl.byte_addr}).second) continue;
        for (Partition p = std::max<Partition>(pl.start_partition, 0); p < std::min(pl.start_partition + ten.pdim, P); ++p)
          per[t][static_cast<std::size_t>(p)] += ten.fbytes();
        top[t] = std::max(top[t], (pl.byte_addr + ten.fbytes() + round - 1) / round * round);
      }
      changes.push_back({live_from[t], true, t});
      changes.push_back({live_to[t], false, t});
    }
    if (changes.empty()) continue;
    // Releases before acquisitions at the same cycle: those tensors are not live together.
    std::sort(changes.begin(), changes.end(),
              [](const Change& a, const Change& b) { return a.at != b.at ? a.at < b.at : a.add < b.add; });
    const std::string counter = std::string(sbuf ? "SBUF" : "PSUM") + " bytes per partition";
    std::vector<Bytes> use(static_cast<std::size_t>(P), 0);
    std::multiset<Bytes> tops;
    if (changes.front().at > 0) tb.counter(pid, counter, 0, {{"in use", 0}, {"highest", 0}});
    for (std::size_t i = 0; i < changes.size();) {
      const Cycles at = changes[i].at;
      for (; i < changes.size() && changes[i].at == at; ++i) {
        const Change& c = changes[i];
        for (std::size_t p = 0; p < use.size(); ++p) use[p] += c.add ? per[c.t][p] : -per[c.t][p];
        if (c.add) tops.insert(top[c.t]);
        else tops.erase(tops.find(top[c.t]));
      }
      const Bytes in_use = *std::max_element(use.begin(), use.end());
      tb.counter(pid, counter, static_cast<double>(at),
                 {{"in use", static_cast<double>(in_use)}, {"highest", tops.empty() ? 0.0 : static_cast<double>(*tops.rbegin())}});
    }
  }
}

Json engine_totals(const Timeline& tl) {
  Json busy = Json::object();
  for (Engine e : kTrackOrder)
    if (tl.busy[static_cast<int>(e)] > 0) busy[engine_name(e)] = tl.busy[static_cast<int>(e)];
  return busy;
}

void note_common(TraceBuilder& tb, const std::string& label, const Kernel& k, const Timeline& tl, Scheduler s) {
  tb.note("kernel", label);
  tb.note("hardware", k.hw.name);
  tb.note("clock_ghz", clock_ghz(k.hw));
  tb.note("timeline", s == Scheduler::kInOrder ? "in-order" : "dataflow");
  tb.note("makespan_cycles", tl.makespan);
  tb.note("busy_cycles", engine_totals(tl));
  tb.note("dma_queues", tl.lanes[static_cast<int>(Engine::kDma)]);
  tb.note("executions", k.dynamic_instructions);
  // The timeline records at most a million spans; past that the slices are the first ones.
  tb.note("slices", static_cast<int64_t>(tl.spans.size()));
  tb.note("slices_truncated", static_cast<int64_t>(tl.spans.size()) < k.dynamic_instructions);
}

}  // namespace

std::string plan_trace(const std::string& kernel_label, const PlanResult& plan) {
  const Kernel& k = plan.kernel;
  TraceBuilder tb("cycle", us_per_cycle(k.hw));
  std::vector<std::vector<TilePlacement>> placements(k.tensors.size());
  for (const TensorPlan& tp : plan.plans) placements[tp.tensor] = evaluate_allocation(k, k.tensors[tp.tensor]);
  add_timeline(tb, kernel_label + ": planned", k, plan.planned, placements);
  note_common(tb, kernel_label, k, plan.planned, plan.scheduler);
  tb.note("verb", "nki plan");
  tb.note("single_buffered_cycles", plan.baseline.makespan);
  tb.note("sbuf_bytes_per_partition", plan.sbuf_bytes);
  tb.note("psum_banks", plan.psum_banks);
  return tb.to_json();
}

std::string check_trace(const std::string& kernel_label, const Kernel& k, const CheckReport& report) {
  TraceBuilder tb("cycle", us_per_cycle(k.hw));
  const Timeline tl = simulate_allocation(k, report.placements);
  add_timeline(tb, kernel_label + ": own allocation", k, tl, report.placements);
  note_common(tb, kernel_label, k, tl,
              k.dynamic_instructions > kMaxDataflowExecutions ? Scheduler::kInOrder : Scheduler::kDataflow);
  tb.note("verb", "nki check");
  tb.note("clean", report.clean());
  tb.note("distinct_violations", report.distinct_violations);
  return tb.to_json();
}

std::string plan_trace(const std::string& kernel_label, const std::vector<const PlanResult*>& cores) {
  if (cores.size() == 1) return plan_trace(kernel_label, *cores.front());
  if (cores.empty()) return {};
  const Kernel& k0 = cores.front()->kernel;
  TraceBuilder tb("cycle", us_per_cycle(k0.hw));
  Json makespan = Json::array(), single = Json::array(), sbuf = Json::array(), psum = Json::array();
  for (std::size_t c = 0; c < cores.size(); ++c) {
    const PlanResult& plan = *cores[c];
    const Kernel& k = plan.kernel;
    std::vector<std::vector<TilePlacement>> placements(k.tensors.size());
    for (const TensorPlan& tp : plan.plans) placements[tp.tensor] = evaluate_allocation(k, k.tensors[tp.tensor]);
    add_timeline(tb, kernel_label + ": logical core " + std::to_string(c) + ": planned", k, plan.planned, placements);
    makespan.push_back(plan.planned.makespan);
    single.push_back(plan.baseline.makespan);
    sbuf.push_back(plan.sbuf_bytes);
    psum.push_back(plan.psum_banks);
  }
  tb.note("kernel", kernel_label);
  tb.note("hardware", k0.hw.name);
  tb.note("clock_ghz", clock_ghz(k0.hw));
  tb.note("timeline", cores.front()->scheduler == Scheduler::kInOrder ? "in-order" : "dataflow");
  tb.note("verb", "nki plan");
  tb.note("logical_cores", static_cast<int64_t>(cores.size()));
  tb.note("makespan_cycles", makespan);  // per core, in core order
  tb.note("single_buffered_cycles", single);
  tb.note("sbuf_bytes_per_partition", sbuf);
  tb.note("psum_banks", psum);
  return tb.to_json();
}

std::string check_trace(const std::string& kernel_label, const std::vector<const Kernel*>& cores,
                        const std::vector<const CheckReport*>& reports) {
  if (cores.size() == 1 && reports.size() == 1) return check_trace(kernel_label, *cores.front(), *reports.front());
  if (cores.empty() || cores.size() != reports.size()) return {};
  TraceBuilder tb("cycle", us_per_cycle(cores.front()->hw));
  Json makespan = Json::array(), clean = Json::array(), distinct = Json::array();
  for (std::size_t c = 0; c < cores.size(); ++c) {
    const Timeline tl = simulate_allocation(*cores[c], reports[c]->placements);
    add_timeline(tb, kernel_label + ": logical core " + std::to_string(c) + ": own allocation", *cores[c], tl,
                 reports[c]->placements);
    makespan.push_back(tl.makespan);
    clean.push_back(reports[c]->clean());
    distinct.push_back(reports[c]->distinct_violations);
  }
  tb.note("kernel", kernel_label);
  tb.note("hardware", cores.front()->hw.name);
  tb.note("clock_ghz", clock_ghz(cores.front()->hw));
  tb.note("verb", "nki check");
  tb.note("logical_cores", static_cast<int64_t>(cores.size()));
  tb.note("makespan_cycles", makespan);  // per core, in core order
  tb.note("clean", clean);
  tb.note("distinct_violations", distinct);
  return tb.to_json();
}

}  // namespace sp::nki
