// Small builders shared by the alloc tests.
#pragma once

#include <string>
#include <utility>

#include "alloc/problem.h"

namespace sp::alloc::testing {

// A buffer live over [s, e) with no alignment, offset or spill cost of its own.
inline Buffer buf(std::string id, Size size, Time s, Time e) {
  Buffer b;
  b.id = std::move(id);
  b.size = size;
  b.start = s;
  b.end = e;
  return b;
}

}  // namespace sp::alloc::testing
