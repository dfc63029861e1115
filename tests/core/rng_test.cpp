#include "core/rng.h"

#include <gtest/gtest.h>

namespace sp {
namespace {

TEST(Rng, SameSeedSameSequenceAndBounds) {
  Rng a(42), b(42), c(43);
  bool differs = false;
  for (int i = 0; i < 1000; ++i) {
    uint64_t x = a.next();
    EXPECT_EQ(x, b.next());
    differs |= x != c.next();
  }
  EXPECT_TRUE(differs);
  for (int i = 0; i < 1000; ++i) {
    int64_t v = a.range(-3, 5);
    EXPECT_GE(v, -3);
    EXPECT_LE(v, 5);
  }
}

}  // namespace
}  // namespace sp
