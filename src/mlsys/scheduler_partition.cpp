// The segment DP. states[i] holds, per retained set R, the cheapest schedule of order[0..i)
// whose last subgraph retains R. A transition appends segment order[j..i) to a state at j whose
// retained tensors are all consumed inside the segment (and nowhere later).
#include "mlsys/scheduler_partition.h"

#include <algorithm>
#include <numeric>

namespace sp::mlsys {
namespace {

struct State {
  std::vector<TensorId> retained;  // sorted
  double cost = 0;
  int prev_pos = -1;    // where the last segment starts
  int prev_state = -1;  // index into states[prev_pos]
  SubgraphConfig config;
};

// Per tensor, the last position of `order` that reads it (-1 if none): how long a retained
// tensor is needed.
std::vector<int> last_uses(const Problem& p, const std::vector<OpId>& order, std::vector<int>& pos) {
  pos.assign(p.num_ops(), -1);
  for (int i = 0; i < static_cast<int>(order.size()); ++i) pos[order[i]] = i;
  std::vector<int> last_use(p.num_tensors(), -1);
  for (int t = 0; t < p.num_tensors(); ++t)
    for (const Consumer& c : p.consumers[t]) last_use[t] = std::max(last_use[t], pos[c.op]);
  return last_use;
}

}  // namespace

Partitioner::Partitioner(const Problem& problem, ConfigSearcher& searcher, const PartitionOptions& opt)
    : p_(problem), searcher_(searcher), opt_(opt) {
  // Every output element is computed at least once and compute is priced per area at best
  // (padding and recomputed strips only add): base * W*H / (native_w*native_h), times K/native_k
  // for a MatMul under the native model.
  const bool native = searcher.rules().mm_compute == MatMulCompute::kNative;
  op_compute_lb_.assign(problem.num_ops(), 0);
  for (int o = 0; o < problem.num_ops(); ++o) {
    const Op& op = problem.ops[o];
    const Tensor& out = problem.tensors[op.outputs[0]];
    double c = op.base_cost * static_cast<double>(out.width) * static_cast<double>(out.height) /
               (static_cast<double>(problem.native_w) * static_cast<double>(problem.native_h));
    if (native && op.kind == OpKind::kMatMul) c *= static_cast<double>(problem.reduction(o)) / static_cast<double>(problem.native_k);
    op_compute_lb_[o] = c;
  }
}

template <class F>
void Partitioner::for_each_segment(const std::vector<OpId>& order, F&& visit) {
  const int n = static_cast<int>(order.size());
  std::vector<int> pos;
  const std::vector<int> last_use = last_uses(p_, order, pos);
  const int L = std::max(1, opt_.max_segment_ops);
  std::vector<int> parent;
  std::vector<OpId> seg;
  std::vector<TensorId> mandatory, optional;
  std::vector<std::vector<TensorId>> choices;
  for (int j = 0; j < n; ++j) {
    parent.clear();
    seg.clear();
    int comps = 0;
    auto find = [&](int x) {
      while (parent[x] != x) x = parent[x] = parent[parent[x]];
      return x;
    };
    for (int end = j + 1; end <= std::min(n, j + L); ++end) {
      const OpId o = order[end - 1];
      seg.push_back(o);
      parent.push_back(end - 1 - j);
      ++comps;
      for (TensorId t : p_.ops[o].inputs) {
        const OpId pr = p_.producer[t];
        if (pr < 0 || pos[pr] < j) continue;
        const int a = find(pos[pr] - j), b = find(end - 1 - j);
        if (a != b) {
          parent[b] = a;
          --comps;
        }
      }
      if (comps != 1) continue;
      // Classify the segment's outputs.
      mandatory.clear();
      optional.clear();
      bool ok = true;
      for (OpId so : seg)
        for (TensorId t : p_.ops[so].outputs) {
          int inside = 0;
          for (const Consumer& c : p_.consumers[t]) inside += pos[c.op] >= j && pos[c.op] < end;
          const int total = static_cast<int>(p_.consumers[t].size());
          if (inside > 0 && inside < total) {
            // Ephemeral here but needed outside: only legal if retained for the next segment.
            if (!opt_.retention || last_use[t] >= end + L) ok = false;
            mandatory.push_back(t);
          } else if (inside == 0 && total > 0 && opt_.retention && last_use[t] < end + L) {
            optional.push_back(t);
          }
        }
      if (!ok) continue;
      std::sort(mandatory.begin(), mandatory.end());
      choices.assign(1, mandatory);
      for (TensorId t : optional) {
        if (static_cast<int>(choices.size()) >= opt_.max_retain_choices) break;
        std::vector<TensorId> c = mandatory;
        c.push_back(t);
        std::sort(c.begin(), c.end());
        choices.push_back(std::move(c));
      }
      if (optional.size() > 1) {
        std::vector<TensorId> c = mandatory;
        c.insert(c.end(), optional.begin(), optional.end());
        std::sort(c.begin(), c.end());
        choices.push_back(std::move(c));
      }
      visit(j, end, seg, choices);
    }
  }
}

void Partitioner::prefetch(const std::vector<OpId>& order, const std::vector<ConfigSearcher*>& searchers,
                           const Deadline& deadline) {
  struct Job {
    std::vector<OpId> ops;
    std::vector<TensorId> retain;
  };
  std::vector<Job> jobs;
  for_each_segment(order, [&](int, int, const std::vector<OpId>& seg, const std::vector<std::vector<TensorId>>& choices) {
    for (const auto& c : choices) jobs.push_back({seg, c});
  });
  run_workers(static_cast<int>(searchers.size()), [&](int t) {
    for (std::size_t i = static_cast<std::size_t>(t); i < jobs.size() && !deadline.expired(); i += searchers.size())
      searchers[t]->best(jobs[i].ops, {}, jobs[i].retain);
  });
}

Partition Partitioner::solve(const std::vector<OpId>& order, const Deadline& deadline, double cutoff) {
  const int n = static_cast<int>(order.size());
  std::vector<int> pos;
  const std::vector<int> last_use = last_uses(p_, order, pos);
  // Lower bounds: compute of order[i..n) (suffix sums), and per segment max(compute, loads of
  // its inputs from outside that are not resident / bandwidth); latency >= both per subgraph.
  std::vector<double> suffix(n + 1, 0);
  for (int i = n - 1; i >= 0; --i) suffix[i] = suffix[i + 1] + op_compute_lb_[order[i]];
  std::vector<TensorId> ext;

  std::vector<std::vector<State>> states(n + 1);
  states[0].push_back({});
  bool expired = false;
  for_each_segment(order, [&](int j, int end, const std::vector<OpId>& seg,
                              const std::vector<std::vector<TensorId>>& choices) {
    if (states[j].empty() || expired) return;
    if (deadline.expired()) {
      expired = true;
      return;
    }
    ext.clear();
    for (OpId o : seg)
      for (TensorId t : p_.ops[o].inputs) {
        const OpId pr = p_.producer[t];
        if ((pr < 0 || pos[pr] < j) && std::find(ext.begin(), ext.end(), t) == ext.end()) ext.push_back(t);
      }
    const double seg_compute = suffix[j] - suffix[end];
    for (int si = 0; si < static_cast<int>(states[j].size()); ++si) {
      const State& in = states[j][si];
      bool consumed_here = true;
      for (TensorId t : in.retained) consumed_here &= last_use[t] < end;
      if (!consumed_here) continue;
      Elements loads = 0;
      for (TensorId t : ext)
        if (!std::binary_search(in.retained.begin(), in.retained.end(), t)) loads += p_.tensors[t].size();
      const double seg_lb = std::max(seg_compute, static_cast<double>(loads) / p_.slow_memory_bandwidth);
      const double reach = in.cost + seg_lb;
      if (reach + suffix[end] >= cutoff) {
        ++pruned_;
        continue;
      }
      for (const auto& retain : choices) {
        {
          // A state at `end` with this retained set that is already no dearer than the bound wins.
          const auto& dst = states[end];
          auto it = std::find_if(dst.begin(), dst.end(), [&](const State& s) { return s.retained == retain; });
          if (it != dst.end() && it->cost <= reach) {
            ++pruned_;
            continue;
          }
        }
        SubgraphConfig cfg = searcher_.best(seg, in.retained, retain);
        if (!cfg.valid) continue;
        const double cost = in.cost + cfg.latency;
        auto& dst = states[end];
        auto it = std::find_if(dst.begin(), dst.end(), [&](const State& s) { return s.retained == retain; });
        if (it == dst.end()) {
          dst.push_back({retain, cost, j, si, cfg});
        } else if (cost < it->cost) {
          *it = {retain, cost, j, si, cfg};
        }
      }
    }
  });
  if (expired) return {};
  Partition out;
  int si = -1;
  for (int i = 0; i < static_cast<int>(states[n].size()); ++i)
    if (states[n][i].retained.empty()) si = i;
  if (si < 0 || states[n][si].cost >= cutoff) return out;
  out.valid = true;
  out.total = states[n][si].cost;
  int at = n;
  while (at > 0) {
    const State& s = states[at][si];
    Segment g;
    g.ops.assign(order.begin() + s.prev_pos, order.begin() + at);
    g.retain = s.retained;
    g.resident = states[s.prev_pos][s.prev_state].retained;
    g.config = s.config;
    out.segments.push_back(std::move(g));
    si = s.prev_state;
    at = s.prev_pos;
  }
  std::reverse(out.segments.begin(), out.segments.end());
  return out;
}

Solution to_solution(const Partition& partition) {
  Solution sol;
  for (const Segment& g : partition.segments) {
    SubgraphSpec s;
    s.ops = g.ops;
    s.granularity = g.config.granularity;
    s.retain = g.retain;
    s.traversal = traversal_order(g.config.traversal, g.config.nx, g.config.ny);
    s.reported_latency = g.config.latency;
    sol.subgraphs.push_back(std::move(s));
  }
  return sol;
}

}  // namespace sp::mlsys
