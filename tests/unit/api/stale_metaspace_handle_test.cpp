// Metaspace handles that name no live metaspace (docs/guarantees.md): a destroyed metaspace's
// handle gets MS_ERR_DESTROYED from every call that takes a metaspace handle (a second ms_destroy
// included) while it is among the last 64 destroyed, and a pointer that is no metaspace gets
// MS_ERR_INVALID_ARGUMENT; nothing is read or written at either (ASan sees every read of the
// freed object). A new metaspace is never placed at a remembered address.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

namespace {

void ignore_write(void*, const char*, size_t) {}

// ms_get_usage's result for the handle (the call a runtime's monitoring polls).
ms_error_t usage_result(ms_metaspace_t* ms) {
  ms_usage_t u{};
  u.size = sizeof u;
  return ms_get_usage(ms, &u);
}

// Every call with a metaspace handle that checks it, and the error it leaves.
void expect_refused(ms_metaspace_t* ms, ms_error_t expected) {
  EXPECT_EQ(usage_result(ms), expected);
  ms_stats_t st;
  EXPECT_EQ(ms_get_stats(ms, &st), expected);
  EXPECT_EQ(ms_verify(ms), expected);
  EXPECT_EQ(ms_loader_create(ms, MS_LOADER_STANDARD, 0), nullptr);
  EXPECT_EQ(ms_last_error(), expected) << ms_last_error_text();
  EXPECT_EQ(ms_print_report_cb(ms, ignore_write, nullptr, nullptr), expected);
  EXPECT_EQ(ms_write_report_json_cb(ms, ignore_write, nullptr, nullptr), expected);
  FILE* out = std::fopen("/dev/null", "w");
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(ms_print_report(ms, out, nullptr), expected);
  EXPECT_EQ(ms_write_report_json(ms, out, nullptr), expected);
  std::fclose(out);
  EXPECT_EQ(ms_gc_done(ms), 0u);
  EXPECT_EQ(ms_last_error(), expected) << ms_last_error_text();
  EXPECT_EQ(ms_archive_root(ms, "root"), nullptr);
  EXPECT_EQ(ms_last_error(), expected) << ms_last_error_text();
  const char* reason = nullptr;
  EXPECT_EQ(ms_archive_status(ms, &reason), expected);
  EXPECT_NE(reason, nullptr);
  // The calls without a result: nothing happens but the error.
  ms_purge(ms);
  EXPECT_EQ(ms_last_error(), expected) << ms_last_error_text();
  ms_set_gc_threshold(ms, 1 << 20, nullptr, nullptr);
  EXPECT_EQ(ms_last_error(), expected) << ms_last_error_text();
  ms_destroy(ms);
  EXPECT_EQ(ms_last_error(), expected) << ms_last_error_text();
}

TEST(StaleMetaspaceHandles, EveryCallWithADestroyedMetaspaceSaysDestroyed) {
  ms_metaspace_t* ms = ms_create(nullptr);
  ASSERT_NE(ms, nullptr) << ms_last_error_text();
  ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  ASSERT_NE(l, nullptr);
  ASSERT_NE(ms_allocate(l, MS_SPACE_NONCLASS, 64), nullptr);
  ms_destroy(ms);
  expect_refused(ms, MS_ERR_DESTROYED);
  // A second ms_destroy changed nothing: a new metaspace works as ever.
  ms_metaspace_t* next = ms_create(nullptr);
  ASSERT_NE(next, nullptr) << ms_last_error_text();
  EXPECT_EQ(ms_verify(next), MS_OK);
  ms_destroy(next);
}

TEST(StaleMetaspaceHandles, APointerThatIsNoMetaspaceIsInvalidAndUntouched) {
  ms_metaspace_t* live = ms_create(nullptr);  // one live, so the check has something to miss
  ASSERT_NE(live, nullptr) << ms_last_error_text();
  alignas(64) unsigned char bytes[4096];
  std::memset(bytes, 0xA5, sizeof bytes);
  expect_refused(reinterpret_cast<ms_metaspace_t*>(bytes), MS_ERR_INVALID_ARGUMENT);
  for (unsigned char b : bytes) ASSERT_EQ(b, 0xA5);
  // A loader handle is no metaspace handle either.
  ms_loader_t* l = ms_loader_create(live, MS_LOADER_STANDARD, 0);
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(usage_result(reinterpret_cast<ms_metaspace_t*>(l)), MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ms_verify(live), MS_OK);
  ms_destroy(live);
}

TEST(StaleMetaspaceHandles, ANewMetaspaceNeverTakesARememberedAddress) {
  // malloc hands a freed block of the same size straight back: without the refusal in
  // Metaspace::operator new, each new metaspace here lands where the previous one was.
  std::set<uintptr_t> dead;
  for (int i = 0; i < 20; i++) {
    ms_metaspace_t* ms = ms_create(nullptr);
    ASSERT_NE(ms, nullptr) << ms_last_error_text();
    EXPECT_EQ(dead.count(reinterpret_cast<uintptr_t>(ms)), 0u) << "metaspace " << i;
    ms_destroy(ms);
    dead.insert(reinterpret_cast<uintptr_t>(ms));
  }
  ms_metaspace_t* live = ms_create(nullptr);
  ASSERT_NE(live, nullptr);
  for (uintptr_t h : dead) {
    EXPECT_EQ(usage_result(reinterpret_cast<ms_metaspace_t*>(h)), MS_ERR_DESTROYED);
  }
  EXPECT_EQ(ms_verify(live), MS_OK);
  ms_destroy(live);
}

TEST(StaleMetaspaceHandles, OnlyTheLast64AreRemembered) {
  ms_metaspace_t* first = ms_create(nullptr);
  ASSERT_NE(first, nullptr);
  ms_destroy(first);
  EXPECT_EQ(usage_result(first), MS_ERR_DESTROYED);
  for (int i = 0; i < 64; i++) {
    ms_metaspace_t* ms = ms_create(nullptr);
    ASSERT_NE(ms, nullptr);
    ms_destroy(ms);
  }
  // 64 destructions later the first handle is forgotten: no longer "destroyed", still refused.
  EXPECT_EQ(usage_result(first), MS_ERR_INVALID_ARGUMENT);
}

TEST(StaleMetaspaceHandles, ManyLiveMetaspacesAreAllFound) {
  // More than the lock-free slots (16): the rest are found under the lock.
  std::vector<ms_metaspace_t*> all;
  ms_settings_t s;
  ms_settings_init(&s);
  s.class_space_bytes = 16u << 20;  // 40 metaspaces of 1 GiB class space each would be 40 GiB
  for (int i = 0; i < 40; i++) {
    ms_metaspace_t* ms = ms_create(&s);
    ASSERT_NE(ms, nullptr) << ms_last_error_text();
    all.push_back(ms);
  }
  for (ms_metaspace_t* ms : all) {
    ms_loader_t* l = ms_loader_create(ms, MS_LOADER_MICRO, 0);
    ASSERT_NE(l, nullptr) << ms_last_error_text();
    ASSERT_NE(ms_allocate(l, MS_SPACE_CLASS, 528), nullptr);
    ms_usage_t u{};
    u.size = sizeof u;
    ASSERT_EQ(ms_get_usage(ms, &u), MS_OK);
    EXPECT_GT(u.space[MS_SPACE_CLASS].used_bytes, 0u);
  }
  // Destroyed in creation order: the slots empty while later metaspaces are still found.
  for (size_t i = 0; i < all.size(); i++) {
    ms_destroy(all[i]);
    EXPECT_EQ(ms_verify(all[i]), MS_ERR_DESTROYED);
    for (size_t j = i + 1; j < all.size(); j++) ASSERT_EQ(ms_verify(all[j]), MS_OK) << j;
  }
}

}  // namespace
