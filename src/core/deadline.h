// Time budgets for anytime search: a Deadline answers "is time up?" cheaply. It also answers
// "was the search cancelled?": a caller (the Python bindings on Ctrl-C) installs a cancellation
// flag for its thread with CancelScope; every Deadline created under it expires once the flag
// is set, so all anytime engines stop through the one mechanism they already observe.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <limits>
#include <thread>
#include <vector>

#include <pthread.h>

namespace sp {

// Installs `flag` as the calling thread's cancellation flag for the scope's lifetime (nested
// scopes restore the previous one). Threads an engine starts inherit it via CancelScope(current()).
class CancelScope {
 public:
  explicit CancelScope(const std::atomic<bool>* flag) : prev_(slot()) { slot() = flag; }
  ~CancelScope() { slot() = prev_; }
  CancelScope(const CancelScope&) = delete;
  CancelScope& operator=(const CancelScope&) = delete;
  static const std::atomic<bool>* current() { return slot(); }

 private:
  static const std::atomic<bool>*& slot() {
    static thread_local const std::atomic<bool>* flag = nullptr;
    return flag;
  }
  const std::atomic<bool>* prev_;
};

// Runs fn(0), ..., fn(n - 1) at once, fn(0) on the calling thread and the others on threads
// that inherit its cancellation flag (so Ctrl-C from Python reaches every worker's deadlines),
// and returns when all are done.
template <class F>
void run_workers(int n, F&& fn) {
  std::vector<std::thread> ws;
  for (int w = 1; w < n; ++w)
    ws.emplace_back([&fn, w, cancel = CancelScope::current()] {
      CancelScope scope(cancel);
      fn(w);
    });
  if (n > 0) fn(0);
  for (auto& t : ws) t.join();
}

// Runs fn on a thread with `bytes` of stack (reserved, committed as used) that inherits the
// calling thread's cancellation flag, and returns when it is done; without such a thread, on the
// caller's stack. For searches that recurse once per item (alloc's exact search).
inline void run_with_stack(std::size_t bytes, const std::function<void()>& fn) {
  const std::function<void()> body = [&fn, cancel = CancelScope::current()] {
    CancelScope scope(cancel);
    fn();
  };
  auto run = [](void* f) -> void* {
    (*static_cast<const std::function<void()>*>(f))();
    return nullptr;
  };
  pthread_attr_t attr;
  pthread_t thread;
  if (pthread_attr_init(&attr) != 0) return fn();
  const bool started = pthread_attr_setstacksize(&attr, bytes) == 0 &&
                       pthread_create(&thread, &attr, run, const_cast<std::function<void()>*>(&body)) == 0;
  pthread_attr_destroy(&attr);
  if (!started) return fn();
  pthread_join(thread, nullptr);
}

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;
  // A deadline `seconds` from now; a negative or infinite value means no limit. It also expires
  // when the thread's cancellation flag (CancelScope) is set.
  explicit Deadline(double seconds = -1.0) : start_(Clock::now()), cancel_(CancelScope::current()) {
    if (seconds >= 0 && seconds < 1e9)
      end_ = start_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    else
      end_ = Clock::time_point::max();
  }
  bool cancelled() const { return cancel_ && cancel_->load(std::memory_order_relaxed); }
  bool expired() const { return cancelled() || Clock::now() >= end_; }
  double elapsed_seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  double remaining_seconds() const {
    if (cancelled()) return 0.0;
    if (end_ == Clock::time_point::max()) return std::numeric_limits<double>::infinity();
    // Never negative: a budget derived from a spent one must not read as "no limit" (an
    // exact search started just after the multi-start's deadline ran unbounded that way).
    return std::max(0.0, std::chrono::duration<double>(end_ - Clock::now()).count());
  }

 private:
  Clock::time_point start_;
  Clock::time_point end_;
  const std::atomic<bool>* cancel_;  // set by the caller to stop the search early; may be null
};

}  // namespace sp
