// A loader handle that is not one must be refused by the inline ms_allocate before it reads or
// writes anything beyond the handle's first word (docs/guarantees.md). The
// handles here are NON-ZERO memory that looks like a loader's fast-path head: a {begin, end}
// slice struct, the metaspace handle itself, a copy of a live loader's head, a self-pointing
// word. Before the cookie check, each one was "served": the slice's begin advanced by 64, the
// metaspace's settings rewritten.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "support/api_fixtures.hpp"

namespace {

struct Slice {  // what a runtime might hand over by mistake: [begin, end) plus bookkeeping
  char* begin;
  char* end;
  size_t count;
  size_t capacity;
  char pad[256];
};

std::string json_report(ms_metaspace_t* ms) {
  std::string text;
  ms_write_report_json_cb(
      ms, [](void* user, const char* s, size_t n) { static_cast<std::string*>(user)->append(s, n); },
      &text, nullptr);
  return text;
}

class ForeignHandles : public metaspace::test::MetaspaceByMode {
 protected:
  void TearDown() override {
    EXPECT_EQ(ms_verify(ms_), MS_OK) << ms_last_error_text();
    MetaspaceByMode::TearDown();
  }
  // The call is refused with MS_ERR_INVALID_ARGUMENT and the memory behind the handle is as it was.
  void expect_refused(void* handle, size_t bytes_to_compare) {
    std::string before(static_cast<char*>(handle), bytes_to_compare);
    for (ms_space_t space : {MS_SPACE_NONCLASS, MS_SPACE_CLASS}) {
      for (size_t n : {size_t{8}, size_t{16}, size_t{64}, size_t{600}}) {
        void* p = ms_allocate(static_cast<ms_loader_t*>(handle), space, n);
        EXPECT_EQ(p, nullptr) << "space " << space << ", " << n << " bytes";
        EXPECT_EQ(ms_last_error(), MS_ERR_INVALID_ARGUMENT) << ms_last_error_text();
        EXPECT_EQ(ms_alloc(static_cast<ms_loader_t*>(handle), space, n), nullptr);
        EXPECT_EQ(ms_last_error(), MS_ERR_INVALID_ARGUMENT) << ms_last_error_text();
      }
    }
    // The inline ms_deallocate: neither the handle's memory nor the "block" is written.
    alignas(8) static unsigned char block[128];
    std::memset(block, 0x77, sizeof block);
    for (size_t n : {size_t{8}, size_t{64}, size_t{128}}) {
      EXPECT_EQ(ms_deallocate(static_cast<ms_loader_t*>(handle), block, n), MS_ERR_INVALID_ARGUMENT);
    }
    for (unsigned char c : block) ASSERT_EQ(c, 0x77) << "a foreign handle's free wrote the block";
    EXPECT_EQ(std::string(static_cast<char*>(handle), bytes_to_compare), before)
        << "the library wrote into memory that is not a loader";
  }

};

TEST_P(ForeignHandles, SliceStructWithReadableNonZeroWordsIsRefused) {
  static char buffer[4096];
  Slice slice{};
  slice.begin = buffer;
  slice.end = buffer + sizeof buffer;
  slice.count = 1;
  slice.capacity = sizeof buffer;
  expect_refused(&slice, sizeof slice);
  EXPECT_EQ(slice.begin, buffer);
}

TEST_P(ForeignHandles, MetaspaceHandleCastToALoaderIsRefused) {
  std::string report_before = json_report(ms_);
  ms_stats_t before;
  ASSERT_EQ(ms_get_stats(ms_, &before), MS_OK);
  for (int i = 0; i < 3; i++) {
    for (ms_space_t space : {MS_SPACE_NONCLASS, MS_SPACE_CLASS}) {
      EXPECT_EQ(ms_allocate(reinterpret_cast<ms_loader_t*>(ms_), space, 16), nullptr);
      EXPECT_EQ(ms_last_error(), MS_ERR_INVALID_ARGUMENT) << ms_last_error_text();
    }
  }
  // The settings and everything else the report shows are as they were.
  EXPECT_EQ(json_report(ms_), report_before);
  // A real loader still gets class space where it should.
  ms_loader_t* l = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  ASSERT_NE(l, nullptr);
  void* k = ms_allocate(l, MS_SPACE_CLASS, 600);
  ASSERT_NE(k, nullptr) << ms_last_error_text();
  EXPECT_TRUE(ms_is_class_space(ms_, k));
  EXPECT_EQ(ms_loader_destroy(l), MS_OK);
}

TEST_P(ForeignHandles, CopyOfALiveLoaderHeadIsRefused) {
  ms_loader_t* l = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  ASSERT_NE(l, nullptr);
  ASSERT_NE(ms_allocate(l, MS_SPACE_NONCLASS, 64), nullptr);  // the window is open
  alignas(64) static unsigned char copy[4096];
  std::memcpy(copy, l, sizeof(ms__loader_head));  // cookie, top, end: all of a live loader
  expect_refused(copy, sizeof copy);
  EXPECT_EQ(ms_loader_destroy(l), MS_OK);
}

TEST_P(ForeignHandles, CopyOfALoaderHeadWithPublishedBinsIsRefused) {
  // A head whose bins pointer is set (the loader freed something): a copy must not reach them.
  ms_loader_t* l = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  ASSERT_NE(l, nullptr);
  void* p = ms_allocate(l, MS_SPACE_NONCLASS, 64);
  ASSERT_NE(ms_allocate(l, MS_SPACE_NONCLASS, 8), nullptr);
  ASSERT_EQ(ms_deallocate(l, p, 64), MS_OK);
  alignas(64) static unsigned char copy[4096];
  std::memcpy(copy, l, sizeof(ms__loader_head));
  expect_refused(copy, sizeof copy);
  // The live loader's bins are as they were: the freed block is still the one reused (checked
  // mode keeps a fence behind every block, so the freed one does not fit a new block and fence).
  void* again = ms_allocate(l, MS_SPACE_NONCLASS, 64);
  if (GetParam() == 0) EXPECT_EQ(again, p);
  EXPECT_EQ(ms_loader_destroy(l), MS_OK);
  EXPECT_EQ(ms_deallocate(l, p, 64), MS_ERR_DESTROYED) << "a dead loader's inline free";
}

TEST_P(ForeignHandles, SelfPointingWordsAreRefused) {
  // An empty intrusive list head points to itself; any fixed pattern must not pass either.
  alignas(64) static uintptr_t words[512];
  for (uintptr_t pattern : {uintptr_t{0}, ~uintptr_t{0}, uintptr_t{0x9E3779B97F4A7C17u}}) {
    for (size_t i = 0; i < 512; i++) words[i] = reinterpret_cast<uintptr_t>(&words[i]) ^ pattern;
    expect_refused(words, sizeof words);
  }
}

TEST_P(ForeignHandles, DestroyedLoaderIsRefusedByTheFastPath) {
  ms_loader_t* l = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  ASSERT_NE(l, nullptr);
  ASSERT_NE(ms_allocate(l, MS_SPACE_NONCLASS, 64), nullptr);
  ASSERT_EQ(ms_loader_destroy(l), MS_OK);
  EXPECT_EQ(ms_allocate(l, MS_SPACE_NONCLASS, 64), nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_DESTROYED) << ms_last_error_text();
}

TEST_P(ForeignHandles, LiveLoadersStillTakeTheFastPath) {
  ms_loader_t* l = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  ASSERT_NE(l, nullptr);
  char* first = static_cast<char*>(ms_allocate(l, MS_SPACE_NONCLASS, 64));
  ASSERT_NE(first, nullptr);
  // Normal mode: the next block follows by a pointer bump in the inline path (its window is the
  // head's top/end); checked mode has no inline path but must serve the same sequence.
  char* second = static_cast<char*>(ms_allocate(l, MS_SPACE_NONCLASS, 64));
  ASSERT_NE(second, nullptr);
  if (GetParam() == 0) {
    EXPECT_EQ(second, first + 64);
    const auto* head = ms__head_of(l);
    EXPECT_EQ(head->bump[MS_SPACE_NONCLASS].top, second + 64);
  }
  EXPECT_EQ(ms_loader_destroy(l), MS_OK);
}

INSTANTIATE_TEST_SUITE_P(Modes, ForeignHandles, ::testing::Values(0, 1),
                         [](const auto& info) { return info.param ? "Checked" : "Normal"; });

}  // namespace
