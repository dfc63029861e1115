// Deterministic random numbers: the same seed gives the same sequence on every platform
// (std distributions are implementation-defined, so we derive values ourselves).
#pragma once

#include <cstdint>

namespace sp {

// splitmix64's step: a well-mixed 64-bit value of z (also a hash of small keys).
inline uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

class Rng {
 public:
  explicit Rng(uint64_t seed = 0x9E3779B97F4A7C15ULL) : state_(seed) {}
  uint64_t next() {
    const uint64_t z = splitmix64(state_);
    state_ += 0x9E3779B97F4A7C15ULL;
    return z;
  }
  // Uniform in [0, n); n > 0.
  uint64_t below(uint64_t n) { return next() % n; }
  // Uniform in [lo, hi].
  int64_t range(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(below(static_cast<uint64_t>(hi - lo) + 1)); }
  double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
  bool chance(double p) { return uniform() < p; }

 private:
  uint64_t state_;
};

}  // namespace sp
