// Recomputation pass: a subgraph that loads a tensor may instead run the tensor's producer
// itself (the producer's inputs are loaded instead and the tensor becomes ephemeral), as in
// PROBLEM.md Example 3B. Each rewrite is kept only if the whole schedule stays valid and its
// exact total drops.
#include <algorithm>

#include "mlsys/scheduler_config.h"
#include "mlsys/solution.h"
#include "core/deadline.h"
#include "mlsys/evaluator.h"

namespace sp::mlsys {

Solution recompute_pass(const Problem& p, const RuleOptions& rules, ConfigSearcher& searcher, const Solution& solution,
                        const Deadline& deadline, const TimeGuard* guard) {
  Solution best = solution;
  // The base total is needed only once a candidate exists (a validation of a huge schedule is
  // not free).
  double best_total = 0;
  int64_t steps = -1;  // what one full validation simulates; -1 until evaluated
  auto ensure_base = [&] {
    if (steps >= 0) return true;
    Evaluation base = evaluate(p, best, rules);
    if (!base.valid) return false;
    best_total = base.total;
    steps = 0;
    for (const SubgraphEvaluation& e : base.subgraphs) steps += e.tiles * e.k_steps;
    return true;
  };
  for (std::size_t s = 0; s < best.subgraphs.size(); ++s) {
    bool improved = true;
    while (improved && !deadline.expired()) {
      improved = false;
      const SubgraphSpec& sg = best.subgraphs[s];
      const std::vector<TensorId> resident = s > 0 ? best.subgraphs[s - 1].retain : std::vector<TensorId>{};
      std::vector<OpId> in_sg = sg.ops;
      for (std::size_t i = 0; i < sg.ops.size() && !improved; ++i) {
        for (TensorId t : p.ops[sg.ops[i]].inputs) {
          const OpId pr = p.producer[t];
          if (pr < 0 || std::find(in_sg.begin(), in_sg.end(), pr) != in_sg.end()) continue;
          if (std::find(resident.begin(), resident.end(), t) != resident.end()) continue;
          bool cyclic = false;  // the producer must not read anything this subgraph makes
          for (TensorId u : p.ops[pr].inputs) {
            const OpId q = p.producer[u];
            cyclic |= q >= 0 && std::find(in_sg.begin(), in_sg.end(), q) != in_sg.end();
          }
          if (cyclic) continue;
          std::vector<OpId> ops = sg.ops;
          ops.insert(ops.begin() + static_cast<std::ptrdiff_t>(i), pr);
          std::vector<TensorId> retain = sg.retain;
          SubgraphConfig cfg = searcher.best(ops, resident, retain);
          if (!cfg.valid) continue;
          if (!ensure_base()) return best;
          if (guard && !guard->allows(steps + cfg.nx * cfg.ny)) return best;
          Solution cand = best;
          SubgraphSpec& c = cand.subgraphs[s];
          c.ops = ops;
          c.granularity = cfg.granularity;
          c.traversal = traversal_order(cfg.traversal, cfg.nx, cfg.ny);
          Evaluation ev = evaluate(p, cand, rules);
          if (ev.valid && ev.total < best_total - 1e-9) {
            best = std::move(cand);
            best_total = ev.total;
            improved = true;
            break;
          }
        }
      }
    }
  }
  return best;
}

}  // namespace sp::mlsys
