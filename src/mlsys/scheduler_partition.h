// Exact partition of one topological order into subgraphs: a dynamic program over cut points
// whose state is the set of tensors the last subgraph retained. Each segment must be a
// connected sub-DAG whose internal tensors are not needed elsewhere (unless retained for the
// very next subgraph, which must then hold all their other consumers).
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "core/deadline.h"
#include "mlsys/problem.h"
#include "mlsys/scheduler_config.h"

namespace sp::mlsys {

struct Segment {
  std::vector<OpId> ops;            // execution order
  std::vector<TensorId> resident;   // retained by the previous segment (sorted)
  std::vector<TensorId> retain;     // kept for the next segment (sorted)
  SubgraphConfig config;            // granularity, traversal, latency
};

struct Partition {
  bool valid = false;
  double total = std::numeric_limits<double>::infinity();
  std::vector<Segment> segments;
};

struct PartitionOptions {
  int max_segment_ops = 12;  // 1 = no fusion
  bool retention = true;
  int max_retain_choices = 4;  // retained-set alternatives tried per segment
};

class Partitioner {
 public:
  Partitioner(const Problem& problem, ConfigSearcher& searcher, const PartitionOptions& opt);

  // Best partition of `order` (a topological order of all ops). Returns an invalid partition
  // if none exists or the deadline passed.
  // Segments whose cost so far plus a lower bound on their own latency and on the rest of the
  // order reaches `cutoff` are not priced (no config search): the result is exact for every
  // partition cheaper than `cutoff`, and invalid when there is none.
  Partition solve(const std::vector<OpId>& order, const Deadline& deadline,
                  double cutoff = std::numeric_limits<double>::infinity());

  // Transitions skipped by the lower bounds (statistics).
  int64_t pruned() const { return pruned_; }

  // Warms the shared cache for `order`: prices every valid segment with nothing resident,
  // splitting the segments round-robin over `searchers` (one thread each). The DP then finds
  // most of its work done. Results do not depend on the thread count.
  void prefetch(const std::vector<OpId>& order, const std::vector<ConfigSearcher*>& searchers, const Deadline& deadline);

 private:
  // Calls visit(begin, end, ops, retain_choices) for every valid segment order[begin..end), in
  // increasing begin, then end.
  template <class F>
  void for_each_segment(const std::vector<OpId>& order, F&& visit);

  const Problem& p_;
  ConfigSearcher& searcher_;
  PartitionOptions opt_;
  std::vector<double> op_compute_lb_;  // per op: compute any schedule spends on it at least
  int64_t pruned_ = 0;
};

// Builds the output schedule of a partition (reported latencies are the cached ones).
Solution to_solution(const Partition& partition);

}  // namespace sp::mlsys
