// Time budgets for anytime search: a Deadline answers "is time up?" cheaply.
#pragma once

#include <chrono>
#include <limits>

namespace sp {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;
  // A deadline `seconds` from now; a negative or infinite value means no limit.
  explicit Deadline(double seconds = -1.0) : start_(Clock::now()) {
    if (seconds >= 0 && seconds < 1e9)
      end_ = start_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    else
      end_ = Clock::time_point::max();
  }
  bool expired() const { return Clock::now() >= end_; }
  double elapsed_seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  double remaining_seconds() const {
    if (end_ == Clock::time_point::max()) return std::numeric_limits<double>::infinity();
    return std::chrono::duration<double>(end_ - Clock::now()).count();
  }

 private:
  Clock::time_point start_;
  Clock::time_point end_;
};

}  // namespace sp
