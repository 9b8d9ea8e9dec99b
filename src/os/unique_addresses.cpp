#include "os/unique_addresses.hpp"

#include <sys/mman.h>

#include <cstdint>
#include <mutex>
#include <new>

#include "common/assert.hpp"
#include "os/os_memory.hpp"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define METASPACE_LSAN_ROOTS 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define METASPACE_LSAN_ROOTS 1
#endif
#ifdef METASPACE_LSAN_ROOTS
#include <sanitizer/lsan_interface.h>
#endif

namespace metaspace::os::unique_addresses {
namespace {

constexpr size_t kRangeBytes = size_t{16} << 20;

std::mutex& lock() {
  static std::mutex* m = new std::mutex;  // never destroyed: objects die in static destructors
  return *m;
}

// The unused rest of the current range (under the lock).
char* g_next = nullptr;
char* g_end = nullptr;

size_t pages_for(size_t bytes) {
  size_t page = page_size();
  return (bytes + page - 1) / page * page;
}

// A new range, for at least `size` bytes (under the lock). The rest of the old one stays reserved
// and unused: its addresses were never handed out.
bool open_range_locked(size_t size) {
  size_t range = size > kRangeBytes ? size : kRangeBytes;
  void* r = mmap(nullptr, range, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (r == MAP_FAILED) return false;
  g_next = static_cast<char*>(r);
  g_end = g_next + range;
  return true;
}

// The first range is reserved when the library is loaded, not inside the first ms_create: a
// caller that found a free range for its class space (and gave it back) to ask for it as
// class_space_base would otherwise see this reservation take it.
struct OpenAtLoad {
  OpenAtLoad() {
    std::lock_guard<std::mutex> guard(lock());
    if (g_next == nullptr) (void)open_range_locked(0);
  }
} g_open_at_load;

}  // namespace

void* take(size_t bytes) {
  MS_ASSERT(bytes > 0, "no object of 0 bytes");
  const size_t size = pages_for(bytes);
  char* p = nullptr;
  {
    std::lock_guard<std::mutex> guard(lock());
    if (static_cast<size_t>(g_end - g_next) < size && !open_range_locked(size)) {
      throw std::bad_alloc();
    }
    p = g_next;
    g_next += size;
  }
  if (mprotect(p, size, PROT_READ | PROT_WRITE) != 0) {
    // The pages stay reserved and unused: no address is handed out twice.
    throw std::bad_alloc();
  }
#ifdef METASPACE_LSAN_ROOTS
  // The object points to the library's heap blocks: the leak checker must look inside it.
  __lsan_register_root_region(p, size);
#endif
  return p;
}

void give_back(void* p, size_t bytes) noexcept {
  if (p == nullptr) return;
  const size_t size = pages_for(bytes);
#ifdef METASPACE_LSAN_ROOTS
  __lsan_unregister_root_region(p, size);
#endif
  // Memory back to the kernel; on failure it stays (a page), the address is never reused.
  (void)madvise(p, size, MADV_DONTNEED);
  (void)mprotect(p, size, PROT_NONE);
}

}  // namespace metaspace::os::unique_addresses
