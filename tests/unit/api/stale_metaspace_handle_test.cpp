// Metaspace handles that name no live metaspace (docs/guarantees.md): a destroyed metaspace's
// handle gets MS_ERR_DESTROYED from every call that takes a metaspace handle (a second ms_destroy
// included) while it is among the last 64 destroyed, and a pointer that is no metaspace gets
// MS_ERR_INVALID_ARGUMENT; nothing is read or written at either (a destroyed metaspace's pages
// are inaccessible). A new metaspace is never placed where one was; so is a new archive builder.
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
  // malloc hands a freed block of the same size straight back: with metaspace objects from
  // malloc, each new metaspace here landed where the previous one was (os/unique_addresses).
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

// No metaspace is ever placed where one was, however many are destroyed in between: a stale
// handle older than the last 64 is refused (MS_ERR_INVALID_ARGUMENT) and never names a newer
// metaspace. With only the 64 addresses remembered, the 65th metaspace on landed at the first
// one's address again: ms_get_stats(stale) succeeded and ms_destroy(stale) destroyed it.
TEST(StaleMetaspaceHandles, AStaleHandleNeverNamesANewerMetaspace) {
  ms_settings_t s;
  ms_settings_init(&s);
  s.class_space_bytes = 16u << 20;
  ms_metaspace_t* first = ms_create(&s);
  ASSERT_NE(first, nullptr) << ms_last_error_text();
  ms_destroy(first);
  std::set<uintptr_t> used{reinterpret_cast<uintptr_t>(first)};
  for (int i = 0; i < 300; i++) {
    ms_metaspace_t* ms = ms_create(&s);
    ASSERT_NE(ms, nullptr) << ms_last_error_text();
    ASSERT_EQ(used.count(reinterpret_cast<uintptr_t>(ms)), 0u) << "metaspace " << i
                                                                << " took a used address";
    used.insert(reinterpret_cast<uintptr_t>(ms));
    ms_destroy(ms);
  }
  ms_metaspace_t* live = ms_create(&s);
  ASSERT_NE(live, nullptr);
  EXPECT_EQ(usage_result(first), MS_ERR_INVALID_ARGUMENT);
  ms_destroy(first);  // refused: the live metaspace is not touched
  EXPECT_EQ(ms_last_error(), MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ms_verify(live), MS_OK) << ms_last_error_text();
  ms_destroy(live);
}

// An archive builder's handle is checked like the others: after ms_archive_discard it gets
// MS_ERR_DESTROYED from every builder call (a second discard does nothing), nothing is read at
// it, and no new builder is placed at its address (the next ms_archive_begin used to get the same
// address, and the old handle drove, and a second discard freed, the new builder).
TEST(StaleMetaspaceHandles, ADiscardedBuilderHandleIsRefusedAndNeverNamesANewerBuilder) {
  ms_archive_builder_t* old = ms_archive_begin(nullptr, 0);
  ASSERT_NE(old, nullptr) << ms_last_error_text();
  ASSERT_NE(ms_archive_allocate(old, MS_SPACE_NONCLASS, 64), nullptr);
  ms_archive_discard(old);
  ms_archive_builder_t* next = ms_archive_begin(nullptr, 0);
  ASSERT_NE(next, nullptr) << ms_last_error_text();
  EXPECT_NE(next, old);
  EXPECT_EQ(ms_archive_allocate(old, MS_SPACE_NONCLASS, 64), nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_DESTROYED) << ms_last_error_text();
  int word = 0;
  EXPECT_EQ(ms_archive_mark_pointer(old, &word), MS_ERR_DESTROYED);
  EXPECT_EQ(ms_archive_mark_narrow_class(old, &word), MS_ERR_DESTROYED);
  EXPECT_EQ(ms_archive_encode_class(old, &word), 0u);
  EXPECT_EQ(ms_last_error(), MS_ERR_DESTROYED);
  EXPECT_EQ(ms_archive_set_root(old, "root", &word), MS_ERR_DESTROYED);
  EXPECT_EQ(ms_archive_write(old, "/nonexistent/a.msa"), MS_ERR_DESTROYED);
  ms_archive_discard(old);
  EXPECT_EQ(ms_last_error(), MS_ERR_DESTROYED);
  // The new builder is untouched by all of that.
  void* block = ms_archive_allocate(next, MS_SPACE_NONCLASS, 64);
  ASSERT_NE(block, nullptr) << ms_last_error_text();
  EXPECT_EQ(ms_archive_set_root(next, "root", block), MS_OK) << ms_last_error_text();
  std::set<uintptr_t> used{reinterpret_cast<uintptr_t>(old), reinterpret_cast<uintptr_t>(next)};
  ms_archive_discard(next);
  for (int i = 0; i < 100; i++) {
    ms_archive_builder_t* b = ms_archive_begin(nullptr, 0);
    ASSERT_NE(b, nullptr) << ms_last_error_text();
    ASSERT_EQ(used.count(reinterpret_cast<uintptr_t>(b)), 0u) << "builder " << i;
    used.insert(reinterpret_cast<uintptr_t>(b));
    ms_archive_discard(b);
  }
  // Beyond the last 64 discards: refused as no builder, still never read.
  EXPECT_EQ(ms_archive_allocate(old, MS_SPACE_NONCLASS, 64), nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_INVALID_ARGUMENT);
}
