#include "core/deadline.h"

#include <gtest/gtest.h>

#include <thread>

namespace sp {
namespace {

// A spent deadline has nothing left, and a budget made from what is left of it is spent too:
// a negative remainder would have made Deadline(remaining) a deadline without limit (an exact
// search started just after the multi-start's deadline once ran for minutes that way).
TEST(Deadline, ASpentBudgetPassesOnAsSpentNotAsUnlimited) {
  const Deadline spent(0.001);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(spent.expired());
  EXPECT_EQ(spent.remaining_seconds(), 0.0);
  EXPECT_TRUE(Deadline(spent.remaining_seconds() / 8).expired());
  EXPECT_FALSE(Deadline().expired());  // the default is no limit
  EXPECT_GT(Deadline(60).remaining_seconds(), 59.0);
}

}  // namespace
}  // namespace sp
