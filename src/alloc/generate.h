// Deterministic synthetic instances for scale benchmarks and tests: a stream of tensors produced
// one after another, mostly short-lived with a tail of long-lived ones, sizes log-uniform.
#pragma once

#include <cstdint>

#include "alloc/problem.h"

namespace sp::alloc {

// n buffers, about `per_tick` starting per tick; sizes multiples of 64 in [64, 256 KiB].
Problem generate_stream(int n, uint64_t seed, int per_tick = 4);

}  // namespace sp::alloc
