// The fault-injection seam itself: "the n-th call from now fails", once, and 0 disarms.
#include "os/fault_injection.hpp"

#include <gtest/gtest.h>

#include "support/layer_fixtures.hpp"

namespace metaspace {
namespace {

TEST(FaultInjection, FailsExactlyTheNthCallOnce) {
  test::FaultGuard guard(os::FaultPoint::kCommit, 3);
  uint64_t calls = os::fault_point_calls(os::FaultPoint::kCommit);
  EXPECT_FALSE(os::fault_now(os::FaultPoint::kCommit));
  EXPECT_FALSE(os::fault_now(os::FaultPoint::kCommit));
  EXPECT_TRUE(os::fault_now(os::FaultPoint::kCommit));
  EXPECT_FALSE(os::fault_now(os::FaultPoint::kCommit));
  EXPECT_EQ(os::fault_point_calls(os::FaultPoint::kCommit), calls + 4);
}

TEST(FaultInjection, ZeroDisarmsAndPointsAreIndependent) {
  os::inject_fault(os::FaultPoint::kReserve, 1);
  os::inject_fault(os::FaultPoint::kReserve, 0);
  EXPECT_FALSE(os::fault_now(os::FaultPoint::kReserve));
  test::FaultGuard guard(os::FaultPoint::kReserve, 1);
  EXPECT_FALSE(os::fault_now(os::FaultPoint::kCommit));
  EXPECT_TRUE(os::fault_now(os::FaultPoint::kReserve));
}

}  // namespace
}  // namespace metaspace
