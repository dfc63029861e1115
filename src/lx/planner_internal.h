// Internals shared by the LX planner's translation units (not a public API).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/deadline.h"

#include "lx/lx.h"

namespace sp::lx {

// Seconds left, never negative (a negative budget means "no limit" to Deadline).
inline double left(const Deadline& d) { return std::max(0.0, d.remaining_seconds()); }

// The planner's deterministic clock (docs/lx.md, "Time limit"): nominal seconds of work done on
// this thread, advanced by what each step costs on a quiet reference machine (ops and values of
// every graph planned, the placement engine's work units), never by the wall clock. Every budget
// inside plan is drawn on it, so the same input, seed and budget give the same plan whatever the
// machine's load; the wall clock only guards (WallGuard).
constexpr double kGraphItemsPerSecond = 8e5;    // ops + values of a graph planned (bookkeeping)
constexpr double kPlacePairsPerSecond = 2e8;    // buffers squared of a placement's first answers (quadratic placers)
constexpr double kPlaceWorkPerSecond = 2e5;     // alloc work units (search nodes, annealing moves x buffers)
constexpr double kMenuEntriesPerSecond = 4e5;   // work division's menu entries: division and bounds
constexpr double kGuardFactor = 8.0;          // the wall-clock guard: this many times the limit ...
constexpr double kGuardSlack = 1.0;             // ... plus this many seconds (the fixed part is on top of the limit)
inline double& work_clock() {
  static thread_local double nominal = 0;
  return nominal;
}
inline void spend(double nominal_seconds) { work_clock() += nominal_seconds; }

// The run's wall-clock guard for the calling thread (plan_program and plan_graph install it at
// kGuardFactor times the limit plus kGuardSlack): past it a machine far slower than nominal stops searching and
// places by heuristics, so the limit still bounds the run; before it, the clock decides nothing.
class WallGuard {
 public:
  explicit WallGuard(double limit_seconds)
      : dl_(limit_seconds < 0 ? -1.0 : kGuardFactor * limit_seconds + kGuardSlack), prev_(slot()) {
    slot() = &dl_;
  }
  ~WallGuard() { slot() = prev_; }
  WallGuard(const WallGuard&) = delete;
  WallGuard& operator=(const WallGuard&) = delete;
  static bool expired() { return slot() && slot()->expired(); }
  // Seconds to the guard (a time limit for the engine), -1 without a guard or limit.
  static double seconds_left() {
    if (!slot()) return -1.0;
    const double r = slot()->remaining_seconds();
    return std::isfinite(r) ? std::max(0.0, r) : -1.0;
  }

 private:
  static const Deadline*& slot() {
    static thread_local const Deadline* d = nullptr;
    return d;
  }
  Deadline dl_;
  const Deadline* prev_;
};

// A budget of nominal seconds on the work clock (negative: no limit). Expired when spent, or
// when the wall-clock guard has passed.
class Budget {
 public:
  explicit Budget(double seconds) : start_(work_clock()), seconds_(seconds < 0 || seconds >= 1e9 ? -1.0 : seconds) {}
  double remaining() const {
    if (seconds_ < 0) return std::numeric_limits<double>::infinity();
    return std::max(0.0, seconds_ - (work_clock() - start_));
  }
  double elapsed() const { return work_clock() - start_; }
  bool expired() const { return (seconds_ >= 0 && remaining() <= 0) || WallGuard::expired(); }

 private:
  double start_, seconds_;
};
inline double left(const Budget& b) { return b.remaining(); }

struct PlanState {
  std::vector<PlanValue> values;  // versioned values
  std::vector<char> eligible;     // per value: may live on LX
};

// One placement of a fixed graph (no clone pruning); fast = heuristic placement only.
Result<Plan> plan_graph_once(Graph g, const Hardware& hw, const Options& o, double seconds, bool fast);
// Fills op_hbm and totals from the residency (planner-side accounting).
void account(Plan& plan);
// Graph with clone ops inserted for multi-use graph inputs; `keep` filters by input tensor.
Graph insert_clones(const Graph& g, const std::vector<char>& keep, Bytes capacity);
// Plans with clone pruning, eviction and reordering (what plan_graph does), `fast` for search.
Result<Plan> plan_graph_impl(const Graph& g, const Hardware& hw, const Options& o, double seconds, bool fast);

}  // namespace sp::lx
