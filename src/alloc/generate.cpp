#include "alloc/generate.h"

#include <cmath>

#include "core/rng.h"

namespace sp::alloc {

Problem generate_stream(int n, uint64_t seed, int per_tick) {
  Rng rng(seed);
  Problem p;
  p.buffers.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    Buffer b;
    b.id = std::to_string(i);
    b.start = i / per_tick;
    // 90% live a few ticks (activations), 10% much longer (skip connections, weights).
    Time life = rng.chance(0.9) ? rng.range(1, 8) : rng.range(20, 400);
    b.end = b.start + life;
    double lg = 6.0 + rng.uniform() * 12.0;  // 2^6 .. 2^18 bytes
    b.size = std::max<Size>(64, static_cast<Size>(std::pow(2.0, lg)) / 64 * 64);
    p.buffers.push_back(std::move(b));
  }
  return p;
}

}  // namespace sp::alloc
