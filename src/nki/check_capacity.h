// Capacity of the tensors the compiler places (new API: SBUF and PSUM tensors without address=
// in a kernel that addresses others). Their addresses are the compiler's, so the checker cannot
// check overlaps; it checks that they can fit: at every instant, the live compiler-placed tensors
// fit in what the live addressed tensors leave free (PSUM: a bank each at least; SBUF: their
// bytes per partition). A tensor is live from its first to its last access in program order.
#pragma once

#include <string>
#include <vector>

#include "nki/check.h"

namespace sp::nki {

struct CapacityShortfall {
  TensorId tensor = -1;  // the compiler-placed tensor whose start overflows the free space
  std::string message;   // one line: how many are live, what they need, what is free
};

// `first` / `last`: per tensor, the first and last simulated event that accessed it (-1: never).
// At most one shortfall per memory (the first instant it happens).
std::vector<CapacityShortfall> compiler_placed_shortfalls(const Kernel& k,
                                                          const std::vector<std::vector<TilePlacement>>& placements,
                                                          const std::vector<int64_t>& first,
                                                          const std::vector<int64_t>& last);

}  // namespace sp::nki
