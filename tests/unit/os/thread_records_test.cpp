// verify_thread_records (os/thread_records.hpp): the records' free list and pages, with more
// threads at once than the static block holds, and a free record found inside the library.
#include "os/thread_records.hpp"

#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace metaspace {
namespace {

TEST(ThreadRecords, VerifyPassesWithRecordsFromTheStaticBlockAndFromPages) {
  EXPECT_TRUE(verify_thread_records()) << ms_last_error_text();
  // 300 threads holding a record at once: more than the 256 static ones, so pages are mapped.
  constexpr int kThreads = 300;
  std::atomic<int> holding{0};
  std::atomic<bool> release{false};
  std::atomic<int> without_record{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; i++) {
    threads.emplace_back([&] {
      if (current_thread_record() == nullptr) without_record++;
      holding++;
      while (!release.load()) std::this_thread::yield();
    });
  }
  while (holding.load() < kThreads) std::this_thread::yield();
  EXPECT_EQ(without_record.load(), 0);
  EXPECT_TRUE(verify_thread_records()) << ms_last_error_text();
  release = true;
  for (std::thread& t : threads) t.join();
  EXPECT_TRUE(verify_thread_records()) << ms_last_error_text() << " (all of them free again)";
}

TEST(ThreadRecords, VerifyFindsAFreeRecordInsideTheLibrary) {
  ThreadRecord* record = nullptr;
  std::thread([&] { record = current_thread_record(); }).join();
  ASSERT_NE(record, nullptr);
  EXPECT_TRUE(verify_thread_records()) << ms_last_error_text();
  // The thread ended: its record is free, and no thread is inside the library with it.
  record->inside.store(1);
  EXPECT_FALSE(verify_thread_records());
  EXPECT_NE(std::string(ms_last_error_text()).find("inside the library"), std::string::npos)
      << ms_last_error_text();
  record->inside.store(0);
  EXPECT_TRUE(verify_thread_records()) << ms_last_error_text();
}

}  // namespace
}  // namespace metaspace
