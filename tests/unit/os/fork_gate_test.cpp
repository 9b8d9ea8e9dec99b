// verify_fork_gate (os/fork_gate.hpp): the gate is open or closed, nothing else.
#include "os/fork_gate.hpp"

#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <string>

#include "os/process_barrier.hpp"

namespace metaspace::os {
namespace {

TEST(ForkGate, VerifyPassesOpenAndFindsAGateThatIsNeitherOpenNorClosed) {
  EXPECT_TRUE(verify_fork_gate()) << ms_last_error_text();
  // Nothing calls the library meanwhile: no entry waits at a gate that is not open.
  fork_gate_detail::g_closed.store(5);
  EXPECT_FALSE(verify_fork_gate());
  EXPECT_NE(std::string(ms_last_error_text()).find("fork gate reads 5"), std::string::npos)
      << ms_last_error_text();
  fork_gate_detail::g_closed.store(0);
  EXPECT_TRUE(verify_fork_gate()) << ms_last_error_text();
}

TEST(ForkGate, VerifyFindsEntriesWithoutAFenceWhereNoBarrierOrdersThem) {
  bool fenced = fork_gate_detail::g_entries_fence.load();
  fork_gate_detail::g_entries_fence.store(false);
  EXPECT_EQ(verify_fork_gate(), process_barrier_available()) << ms_last_error_text();
  fork_gate_detail::g_entries_fence.store(true);
  EXPECT_TRUE(verify_fork_gate()) << ms_last_error_text() << " (fenced entries need no barrier)";
  fork_gate_detail::g_entries_fence.store(fenced);
}

}  // namespace
}  // namespace metaspace::os
