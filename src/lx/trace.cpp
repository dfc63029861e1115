// `plan --trace`: the plan's roofline timeline as a Chrome trace (core/trace.h).
#include <algorithm>

#include "core/trace.h"
#include "lx/lx.h"

namespace sp::lx {
namespace {

// Cores a value occupies: 0..n-1 of its writer's n cores (work division numbers an op's cores
// from 0; plan_svg draws the same convention). A value without writer is on one core.
int value_cores(const Plan& p, const PlanValue& v) { return v.def >= 0 ? std::max(1, p.graph.ops[v.def].cores) : 1; }

// Bytes covered by the union of [address, address + size) intervals (an in-place hand-off shares
// its base, so the handing-off op is not counted twice).
Bytes union_bytes(std::vector<std::pair<Bytes, Bytes>>& iv) {
  std::sort(iv.begin(), iv.end());
  Bytes total = 0, lo = 0, hi = -1;
  for (const auto& [a, b] : iv) {
    if (a > hi) {
      if (hi > lo) total += hi - lo;
      lo = a;
      hi = b;
    } else {
      hi = std::max(hi, b);
    }
  }
  if (hi > lo) total += hi - lo;
  return total;
}

}  // namespace

std::string plan_trace(const Plan& p) {
  TraceBuilder tb("us", 1.0);
  const std::size_t nops = p.graph.ops.size();
  int ncores = 1;
  for (const GOp& op : p.graph.ops) ncores = std::max(ncores, op.cores);
  const int plan_pid = tb.process("plan");
  const int plan_tid = tb.thread(plan_pid, "ops");
  std::vector<int> core_pid(ncores), core_tid(ncores);
  for (int c = 0; c < ncores; ++c) {
    core_pid[c] = tb.process("core " + std::to_string(c));
    core_tid[c] = tb.thread(core_pid[c], "ops");
  }
  // Live LX intervals per op (address, end, cores of the value).
  struct Live {
    Bytes lo, hi;
    int cores;
  };
  std::vector<std::vector<Live>> live(nops);
  for (const PlanValue& v : p.values) {
    const int n = value_cores(p, v);
    for (const Segment& s : v.lx)
      for (OpIndex i = std::max<OpIndex>(0, s.start); i <= s.end && i < static_cast<OpIndex>(nops); ++i)
        live[i].push_back({s.address, s.address + v.per_core, n});
  }
  const std::string lx_counter = "LX bytes";
  const double cap = static_cast<double>(p.capacity);
  std::vector<double> last_in_use(ncores, -1);
  auto sample = [&](int c, double at_us, double in_use) {
    if (in_use == last_in_use[c]) return;  // a counter holds its value until the next sample
    last_in_use[c] = in_use;
    tb.counter(core_pid[c], lx_counter, at_us, {{"in_use", in_use}, {"capacity", cap}});
  };
  double t_s = 0;  // accumulated as Totals::time_s is, so the last end is the plan's estimate
  std::vector<std::pair<Bytes, Bytes>> iv;
  for (std::size_t i = 0; i < nops; ++i) {
    const GOp& op = p.graph.ops[i];
    const OpTime ot = op_time(p, i);
    const double start = t_s * 1e6;
    t_s += ot.total();
    const double dur = t_s * 1e6 - start;
    Json reads = Json::array(), writes = Json::array();
    for (const GOperand& r : op.reads) reads.push_back(p.graph.tensors[r.tensor].name);
    for (const GOperand& w : op.writes) writes.push_back(p.graph.tensors[w.tensor].name);
    const char* bound = ot.compute_s >= ot.hbm_s ? "compute" : "hbm";
    Json args = {{"index", i},           {"kind", op.kind},         {"cores", op.cores},
                 {"splits", op.splits},  {"hbm_bytes", p.op_hbm[i]}, {"flops", op.flops},
                 {"compute_us", ot.compute_s * 1e6}, {"hbm_us", ot.hbm_s * 1e6},
                 {"overhead_us", ot.overhead_s * 1e6}, {"bound", bound}, {"reads", reads}, {"writes", writes}};
    if (!op.layout_fixes.empty()) args["layout_fixes"] = op.layout_fixes.size();
    if (op.ring_bytes > 0) args["ring_bytes"] = op.ring_bytes;  // compute_us holds the ring time
    tb.slice(plan_pid, plan_tid, op.name, start, dur, std::move(args), op.kind);
    const std::string share = "of " + std::to_string(std::max(1, op.cores)) + " cores";
    for (int c = 0; c < std::max(1, op.cores); ++c)
      tb.slice(core_pid[c], core_tid[c], op.name, start, dur,
               {{"index", i}, {"kind", op.kind}, {"core", std::to_string(c) + " " + share}, {"splits", op.splits}},
               op.kind);
    for (int c = 0; c < ncores; ++c) {
      iv.clear();
      for (const Live& l : live[i])
        if (c < l.cores) iv.emplace_back(l.lo, l.hi);
      sample(c, start, static_cast<double>(union_bytes(iv)));
    }
  }
  for (int c = 0; c < ncores; ++c) sample(c, t_s * 1e6, 0);
  const Totals& t = p.totals;
  tb.note("program", p.graph.name);
  tb.note("hbm_bytes", t.hbm_read + t.hbm_write);
  tb.note("hbm_read_bytes", t.hbm_read);
  tb.note("hbm_write_bytes", t.hbm_write);
  tb.note("baseline_hbm_bytes", t.baseline_hbm);
  tb.note("estimated_time_us", t.time_s * 1e6);
  tb.note("baseline_time_us", t.baseline_time_s * 1e6);
  tb.note("capacity_per_core", p.capacity);
  tb.note("cores", ncores);
  tb.note("ops", nops);
  return tb.to_json();
}

}  // namespace sp::lx
