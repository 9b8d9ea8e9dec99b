#include "os/thread_records.hpp"

#include <pthread.h>

#include <mutex>

#include "common/mutex.hpp"
#include "common/units.hpp"
#include "common/verify.hpp"
#include "os/os_memory.hpp"

namespace metaspace {

constinit thread_local ThreadRecord* t_thread_record __attribute__((tls_model("initial-exec"))) =
    nullptr;

namespace {

constexpr size_t kStaticRecords = 256;

// Every record ever made is here or held by a live thread. Under g_lock: the free list, the
// static block's next unused record, the page being carved.
Mutex g_lock;
ThreadRecord g_static_records[kStaticRecords];
size_t g_static_used = 0;
ThreadRecord* g_free = nullptr;
ThreadRecord* g_page_next = nullptr;
ThreadRecord* g_page_end = nullptr;
// The mapped pages, newest first: each page's first record is not handed out, its next_free
// links to the page before (for fork, which visits every record).
ThreadRecord* g_pages = nullptr;
std::atomic<uint64_t> g_exits{0};

// A thread that could not get a record: its address names it (never ends).
constinit thread_local char t_fallback __attribute__((tls_model("initial-exec"))) = 0;

size_t records_per_page() { return os::page_size() / sizeof(ThreadRecord); }

void give_back(ThreadRecord* r) {
  std::lock_guard<Mutex> guard(g_lock);
  r->next_free = g_free;
  g_free = r;
}

void on_thread_exit(void* value) {
  auto* r = static_cast<ThreadRecord*>(value);
  // Release: the thread's last window tops are published with the new serial.
  r->serial.fetch_add(1, std::memory_order_release);
  g_exits.fetch_add(1, std::memory_order_release);
  t_thread_record = nullptr;
  give_back(r);
}

// The key whose destructor returns a thread's record; made once. False if the process has no
// key left (PTHREAD_KEYS_MAX).
struct ExitKey {
  pthread_key_t key{};
  bool made = pthread_key_create(&key, on_thread_exit) == 0;
  // At the library's unload (dlclose) or the process's exit: threads that end later must not
  // call into code that may be gone. Their records are not returned then.
  ~ExitKey() {
    if (made) pthread_key_delete(key);
  }
};

ExitKey& exit_key() {
  static ExitKey key;
  return key;
}

ThreadRecord* take_record() {
  std::lock_guard<Mutex> guard(g_lock);
  if (g_free != nullptr) {
    ThreadRecord* r = g_free;
    g_free = r->next_free;
    return r;
  }
  if (g_static_used < kStaticRecords) return &g_static_records[g_static_used++];
  if (g_page_next == g_page_end) {
    char* page = nullptr;
    if (os::map_read_write(os::page_size(), &page) != MS_OK) return nullptr;
    ThreadRecord* records = new (page) ThreadRecord[records_per_page()];
    records[0].next_free = g_pages;
    g_pages = records;
    g_page_next = records + 1;
    g_page_end = records + records_per_page();
  }
  return g_page_next++;
}

}  // namespace

ThreadRecord* current_thread_record() {
  ThreadRecord* r = t_thread_record;
  if (r == nullptr) {
    ExitKey& key = exit_key();
    if (key.made) {
      r = take_record();
      if (r != nullptr && pthread_setspecific(key.key, r) != 0) {
        give_back(r);
        r = nullptr;
      }
      t_thread_record = r;
    }
  }
  return r;
}

ThreadIdentity current_thread_identity() {
  ThreadRecord* r = current_thread_record();
  if (r == nullptr) return {nullptr, reinterpret_cast<uintptr_t>(&t_fallback)};
  return {r, r->serial.load(std::memory_order_relaxed)};
}

uint64_t thread_exits() { return g_exits.load(std::memory_order_acquire); }

void lock_thread_records() { g_lock.lock(); }
void unlock_thread_records() { g_lock.unlock(); }

void for_each_thread_record_locked(void (*f)(ThreadRecord&)) {
  MS_ASSERT_LOCKED(g_lock);
  for (size_t i = 0; i < g_static_used; i++) f(g_static_records[i]);
  for (ThreadRecord* page = g_pages; page != nullptr; page = page->next_free) {
    // The page being carved: its used part. Its first record links the pages.
    ThreadRecord* end = page + records_per_page() == g_page_end ? g_page_next
                                                                : page + records_per_page();
    for (ThreadRecord* r = page + 1; r != end; r++) f(*r);
  }
}

void end_other_threads_locked() {
  MS_ASSERT_LOCKED(g_lock);
  g_free = nullptr;
  for_each_thread_record_locked([](ThreadRecord& r) {
    if (&r == t_thread_record) return;
    r.serial.fetch_add(1, std::memory_order_relaxed);
    r.inside.store(0, std::memory_order_relaxed);
    r.next_free = g_free;
    g_free = &r;
  });
  g_exits.fetch_add(1, std::memory_order_release);
}

namespace {

// Whether r is a record carved so far: in the static block's used part, or in a page's carved
// part (not its first record, which links the pages). Caller holds the lock.
bool carved(const ThreadRecord* r) {
  if (r >= g_static_records && r < g_static_records + g_static_used) return true;
  for (ThreadRecord* page = g_pages; page != nullptr; page = page->next_free) {
    ThreadRecord* end = page + records_per_page() == g_page_end ? g_page_next
                                                                : page + records_per_page();
    if (r > page && r < end) return true;
  }
  return false;
}

}  // namespace

bool verify_thread_records() {
  std::lock_guard<Mutex> guard(g_lock);
  MS_VERIFY(g_static_used <= kStaticRecords, "%zu static records used of %zu", g_static_used,
            kStaticRecords);
  size_t carved_records = g_static_used;
  for (ThreadRecord* page = g_pages; page != nullptr; page = page->next_free) {
    MS_VERIFY(is_aligned(page, os::page_size()), "records page %p is not page-aligned",
              (void*)page);
    MS_VERIFY(g_static_used == kStaticRecords, "records page %p mapped before the static block "
              "was used up (%zu of %zu)", (void*)page, g_static_used, kStaticRecords);
    carved_records += (page == g_pages ? static_cast<size_t>(g_page_next - page)
                                       : records_per_page()) - 1;
  }
  MS_VERIFY(g_pages == nullptr ? g_page_next == nullptr && g_page_end == nullptr
                               : g_page_end == g_pages + records_per_page() &&
                                     g_page_next > g_pages && g_page_next <= g_page_end,
            "the page being carved (%p) and its next record %p, end %p disagree", (void*)g_pages,
            (void*)g_page_next, (void*)g_page_end);
  size_t free_records = 0;
  for (const ThreadRecord* r = g_free; r != nullptr; r = r->next_free) {
    MS_VERIFY(++free_records <= carved_records,
              "the free list is longer than the %zu records carved (a cycle?)", carved_records);
    MS_VERIFY(carved(r), "free record %p was never carved", (const void*)r);
    MS_VERIFY(r->inside.load(std::memory_order_relaxed) == 0,
              "free record %p is inside the library %u times", (const void*)r,
              r->inside.load(std::memory_order_relaxed));
    MS_VERIFY(r != t_thread_record, "the calling thread's record %p is free", (const void*)r);
  }
  return true;
}

}  // namespace metaspace
