#include "loader/thread_records.hpp"

#include <pthread.h>

#include <mutex>

#include "os/os_memory.hpp"

namespace metaspace {

namespace {

constexpr size_t kStaticRecords = 256;

// Every record ever made is here or held by a live thread. Under g_lock: the free list, the
// static block's next unused record, the page being carved.
std::mutex g_lock;
ThreadRecord g_static_records[kStaticRecords];
size_t g_static_used = 0;
ThreadRecord* g_free = nullptr;
ThreadRecord* g_page_next = nullptr;
ThreadRecord* g_page_end = nullptr;
// The mapped pages, newest first: each page's first record is not handed out, its next_free
// links to the page before (for the child of a fork, which visits every record).
ThreadRecord* g_pages = nullptr;
std::atomic<uint64_t> g_exits{0};

// The calling thread's record, or null (none yet, or it could not get one). Initial-exec, as the
// window cache (shared_windows.hpp), so reading it calls nothing.
constinit thread_local ThreadRecord* t_record __attribute__((tls_model("initial-exec"))) =
    nullptr;
// A thread that could not get a record: its address names it (never ends).
constinit thread_local char t_fallback __attribute__((tls_model("initial-exec"))) = 0;

void give_back(ThreadRecord* r) {
  std::lock_guard<std::mutex> guard(g_lock);
  r->next_free = g_free;
  g_free = r;
}

void on_thread_exit(void* value) {
  auto* r = static_cast<ThreadRecord*>(value);
  // Release: the thread's last window tops are published with the new serial.
  r->serial.fetch_add(1, std::memory_order_release);
  g_exits.fetch_add(1, std::memory_order_release);
  t_record = nullptr;
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
  std::lock_guard<std::mutex> guard(g_lock);
  if (g_free != nullptr) {
    ThreadRecord* r = g_free;
    g_free = r->next_free;
    return r;
  }
  if (g_static_used < kStaticRecords) return &g_static_records[g_static_used++];
  if (g_page_next == g_page_end) {
    char* page = nullptr;
    if (os::map_read_write(os::page_size(), &page) != MS_OK) return nullptr;
    ThreadRecord* records = new (page) ThreadRecord[os::page_size() / sizeof(ThreadRecord)];
    records[0].next_free = g_pages;
    g_pages = records;
    g_page_next = records + 1;
    g_page_end = records + os::page_size() / sizeof(ThreadRecord);
  }
  return g_page_next++;
}

}  // namespace

ThreadIdentity current_thread_identity() {
  ThreadRecord* r = t_record;
  if (r == nullptr) {
    ExitKey& key = exit_key();
    if (key.made) {
      r = take_record();
      if (r != nullptr && pthread_setspecific(key.key, r) != 0) {
        give_back(r);
        r = nullptr;
      }
      t_record = r;
    }
  }
  if (r == nullptr) return {nullptr, reinterpret_cast<uintptr_t>(&t_fallback)};
  return {r, r->serial.load(std::memory_order_relaxed)};
}

uint64_t thread_exits() { return g_exits.load(std::memory_order_acquire); }

void thread_records_lock_for_fork() { g_lock.lock(); }

void thread_records_unlock_after_fork(ForkSide side) {
  if (side == ForkSide::kChild) {
    // Every record handed out so far, free or held, except the caller's: ended and free.
    g_free = nullptr;
    auto end_and_free = [](ThreadRecord* r) {
      if (r == t_record) return;
      r->serial.fetch_add(1, std::memory_order_relaxed);
      r->next_free = g_free;
      g_free = r;
    };
    for (size_t i = 0; i < g_static_used; i++) end_and_free(&g_static_records[i]);
    for (ThreadRecord* page = g_pages; page != nullptr; page = page->next_free) {
      ThreadRecord* end = page + os::page_size() / sizeof(ThreadRecord);
      if (g_page_end == end) end = g_page_next;  // the page being carved: its used part
      for (ThreadRecord* r = page + 1; r != end; r++) end_and_free(r);
    }
    g_exits.fetch_add(1, std::memory_order_release);
  }
  g_lock.unlock();
}

}  // namespace metaspace
