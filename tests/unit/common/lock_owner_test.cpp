// MS_ASSERT_LOCKED (common/assert.hpp): each lock type knows whether the calling thread holds it,
// and a `*_locked` function called without its lock stops the process in assert builds.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <mutex>
#include <thread>

#include "common/assert.hpp"
#include "common/mutex.hpp"
#include "loader/loader_lock.hpp"
#include "loader/loader_metaspace.hpp"
#include "os/thread_records.hpp"
#include "support/layer_fixtures.hpp"

namespace metaspace {
namespace {

#ifdef METASPACE_ASSERTS

template <typename Lock>
class LockOwnerTest : public ::testing::Test {};
using LockTypes = ::testing::Types<std::mutex, Mutex, LoaderLock>;
TYPED_TEST_SUITE(LockOwnerTest, LockTypes);

TYPED_TEST(LockOwnerTest, OnlyTheHolderHoldsIt) {
  TypeParam lock;
  EXPECT_FALSE(held_by_current_thread(lock)) << "free";
  lock.lock();
  EXPECT_TRUE(held_by_current_thread(lock));
  bool other_thread_holds = true;
  std::thread([&] { other_thread_holds = held_by_current_thread(lock); }).join();
  EXPECT_FALSE(other_thread_holds) << "held, but by another thread";
  lock.unlock();
  EXPECT_FALSE(held_by_current_thread(lock)) << "released";
  ASSERT_TRUE(lock.try_lock());
  EXPECT_TRUE(held_by_current_thread(lock)) << "taken by try_lock";
  lock.unlock();
}

TYPED_TEST(LockOwnerTest, AThreadThatTookItAfterAnotherHoldsItAlone) {
  TypeParam lock;
  std::thread([&] {
    std::lock_guard<TypeParam> guard(lock);
    EXPECT_TRUE(held_by_current_thread(lock));
  }).join();
  EXPECT_FALSE(held_by_current_thread(lock));
  std::lock_guard<TypeParam> guard(lock);
  EXPECT_TRUE(held_by_current_thread(lock));
}

// The thread records' lock is taken before a fork and released in the child
// (os/fork_gate.hpp): there the forking thread, with a new kernel thread id, still holds it.
TEST(LockOwner, AMutexTakenBeforeAForkIsHeldByTheSameThreadInTheChild) {
  Mutex lock;
  lock.lock();
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    bool held = held_by_current_thread(lock);
    lock.unlock();
    _exit(held && !held_by_current_thread(lock) ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  lock.unlock();
}

class LockedFunctionDeathTest : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

// A chunk manager's lock (std::mutex), the thread records' lock (Mutex) and a loader's lock
// (LoaderLock): each function runs fine under its lock and stops the process without it.
TEST_F(LockedFunctionDeathTest, ChunkManagerFunctionWithoutTheManagersLock) {
  test::Space space(test::SpaceConfig{});
  {
    std::lock_guard<std::mutex> guard(space.chunks.lock());
    EXPECT_EQ(space.chunks.chunks_in_use_locked(), 0u);
  }
  EXPECT_DEATH((void)space.chunks.chunks_in_use_locked(),
               "assertion failed at .*chunk_manager.hpp.*does not hold lock_");
  EXPECT_DEATH((void)space.chunks.verify_locked(), "does not hold lock_");
}

TEST_F(LockedFunctionDeathTest, ThreadRecordsFunctionWithoutTheRecordsLock) {
  lock_thread_records();
  for_each_thread_record_locked([](ThreadRecord&) {});
  unlock_thread_records();
  EXPECT_DEATH(for_each_thread_record_locked([](ThreadRecord&) {}),
               "assertion failed at .*thread_records.cpp.*does not hold g_lock");
}

TEST_F(LockedFunctionDeathTest, LoaderFunctionWithoutTheLoaderLock) {
  ms_settings_t s;
  ms_settings_init(&s);
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr) << ms_last_error_text();
  ms_loader_t* handle = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  ASSERT_NE(handle, nullptr) << ms_last_error_text();
  ASSERT_NE(ms_allocate(handle, MS_SPACE_NONCLASS, 64), nullptr);
  LoaderMetaspace& l = *LoaderMetaspace::object_of(reinterpret_cast<uintptr_t>(handle));
  {
    std::lock_guard<LoaderLock> guard(l.lock());
    EXPECT_TRUE(l.verify_locked()) << ms_last_error_text();
  }
  EXPECT_DEATH((void)l.verify_locked(),
               "assertion failed at .*loader_metaspace.cpp.*does not hold lock_");
  ms_destroy(ms);
}

#else

TEST(LockedFunctionDeathTest, NeedsAnAssertBuild) {
  GTEST_SKIP() << "MS_ASSERT_LOCKED checks in the debug and sanitizer builds only";
}

#endif

}  // namespace
}  // namespace metaspace
