// Per-subgraph configuration search for the scheduler: given an op set (in execution order),
// what the previous subgraph retained and what this one retains, find the granularity [w,h,k]
// and traversal order with the lowest exact latency that fits in fast memory. Every candidate
// is scored by sp::mlsys::Evaluator; results are memoized in a cache shared by all threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/deadline.h"
#include "mlsys/evaluator.h"
#include "mlsys/problem.h"
#include "mlsys/solution.h"

namespace sp::mlsys {

enum class Traversal : uint8_t {
  kRaster,    // row-major (null in the output)
  kRowSnake,  // rows alternate direction: one new strip per step, LHS rows reused along a row
  kColSnake,  // columns alternate direction: RHS columns reused down a column
};

struct SubgraphConfig {
  bool valid = false;             // a fitting configuration exists
  Granularity granularity;        // chosen [w,h,k]
  Traversal traversal = Traversal::kRaster;
  int64_t nx = 1, ny = 1;         // tile grid of the sinks
  double latency = 0;             // exact evaluator latency in this context
  Elements peak = 0;              // peak working set
};

// The tile order of a traversal kind on an nx-by-ny grid; nullopt for raster.
std::optional<std::vector<int64_t>> traversal_order(Traversal t, int64_t nx, int64_t ny);

// Distinct tile sizes up to `native` for an extent: ceil(extent/n) for the tile counts n that
// come closest to a ladder of sizes (native, 7/8 native, ..., 1). Descending.
std::vector<int64_t> tile_size_candidates(int64_t extent, int64_t native);

// Thread-safe memo of subgraph configurations keyed by (ops, resident, retained).
class ConfigCache {
 public:
  std::optional<SubgraphConfig> find(const std::string& key) const;
  void put(const std::string& key, const SubgraphConfig& cfg);
  std::size_t size() const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, SubgraphConfig> map_;
};

// Keeps every simulation inside the time limit on any problem size: the cost of one simulated
// step is measured online (shared by all threads), and a simulation starts only if its predicted
// cost plus the reserve (what validating and writing the best schedule will take) fits in what
// is left of the deadline.
class TimeGuard {
 public:
  explicit TimeGuard(const Deadline* deadline) : deadline_(deadline) {}
  const Deadline* deadline() const { return deadline_; }
  double predict(int64_t steps) const { return static_cast<double>(steps) * sec_per_step_.load(std::memory_order_relaxed); }
  // True if `steps` simulated steps (and then the reserve) still fit before the deadline.
  bool allows(int64_t steps) const {
    return !deadline_->expired() && deadline_->remaining_seconds() > predict(steps) + reserve_s_.load(std::memory_order_relaxed);
  }
  void record(int64_t steps, double seconds);
  void set_reserve(double seconds) { reserve_s_.store(seconds, std::memory_order_relaxed); }

 private:
  const Deadline* deadline_;
  std::atomic<double> sec_per_step_{1.5e-7};  // pessimistic until measured
  std::atomic<double> reserve_s_{0};
};

struct ConfigSearchOptions {
  bool snake = true;    // try snake orders
  bool split_k = true;  // try k below the largest fitting one
  int fitting_shapes = 8;  // (w,h) shapes that fit to evaluate fully, fewest tiles first
  int64_t max_steps = 20'000;     // skip configurations with more steps than this
  int64_t probe_steps = 8192;     // budget of the up-front feasibility probe
  int64_t max_simulations = 100;  // per subgraph search
  bool ensure_one = false;  // simulate past the guard until one configuration fits (the fallback)
};

// One per thread: owns an Evaluator (which keeps scratch state) and shares the cache.
class ConfigSearcher {
 public:
  ConfigSearcher(const Problem& problem, const RuleOptions& rules, ConfigCache& cache, const ConfigSearchOptions& opt);

  // Best configuration of `ops` (execution order) when `resident` was retained by the previous
  // subgraph and `retain` is kept for the next. Invalid when nothing fits.
  SubgraphConfig best(const std::vector<OpId>& ops, const std::vector<TensorId>& resident,
                      const std::vector<TensorId>& retain);

  int64_t simulations() const { return simulations_; }
  const RuleOptions& rules() const { return ev_.options(); }

  // After `deadline` no more candidates are simulated (what is unfinished is not cached).
  void set_deadline(const Deadline* deadline) { deadline_ = deadline; }
  // Skip simulations the guard predicts would overrun; searches cut short are not cached.
  void set_guard(TimeGuard* guard) { guard_ = guard; }

 private:
  friend class SubgraphSearch;
  SubgraphConfig search(const std::vector<OpId>& ops, const std::vector<TensorId>& resident,
                        const std::vector<TensorId>& retain);

  const Problem& p_;
  Evaluator ev_;
  ConfigCache& cache_;
  ConfigSearchOptions opt_;
  MemoryState state_;
  std::vector<std::string> errors_, warnings_;
  int64_t simulations_ = 0;
  const Deadline* deadline_ = nullptr;
  TimeGuard* guard_ = nullptr;
  bool cut_short_ = false;  // the current search skipped a simulation for time
};

std::string config_key(const std::vector<OpId>& ops, const std::vector<TensorId>& resident,
                       const std::vector<TensorId>& retain);

}  // namespace sp::mlsys
