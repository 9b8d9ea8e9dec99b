#include "os/os_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.hpp"
#include "common/units.hpp"
#include "os/fault_injection.hpp"

namespace metaspace::os {

size_t query_page_size() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

namespace {

// Transparent huge pages would undo what commit granules are for. Where the kernel's THP mode is
// `always` (the default of some server distributions), the first touch of a page in a 2 MiB-aligned
// read-write range may be given a whole huge page, and khugepaged collapses sparse ranges into
// them: one 4 KiB page touched in each of 32 aligned 2 MiB blocks can cost 64 MiB of RSS
// instead of 128 KiB. Every range the library maps is therefore marked. A kernel
// without THP refuses the advice (EINVAL); nothing depends on it.
void refuse_huge_pages(void* p, size_t bytes) { (void)madvise(p, bytes, MADV_NOHUGEPAGE); }

char* map_none(size_t bytes, void* hint, int extra_flags) {
  void* p = mmap(hint, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | extra_flags,
                 -1, 0);
  if (p == MAP_FAILED) return nullptr;
  refuse_huge_pages(p, bytes);
  return static_cast<char*>(p);
}

}  // namespace

ms_error_t reserve(size_t bytes, size_t alignment, uintptr_t wish, char** out) {
  *out = nullptr;
  if (bytes == 0 || bytes % page_size() != 0 || !is_power_of_2(alignment) ||
      alignment < page_size()) {
    return fail(MS_ERR_INVALID_ARGUMENT, "reserve of %zu bytes aligned to %zu", bytes, alignment);
  }
  if (fault_now(FaultPoint::kReserve)) {
    return fail(MS_ERR_RESERVE_FAILED, "reserve of %zu bytes failed (injected)", bytes);
  }
  if (wish != 0) {
    if (wish % alignment != 0) {
      return fail(MS_ERR_INVALID_ARGUMENT, "requested base %#zx is not aligned to %zu",
                  static_cast<size_t>(wish), alignment);
    }
    // MAP_FIXED_NOREPLACE refuses to clobber an existing mapping, which is what lets a runtime
    // ask for a base and fall back cleanly when the range is taken.
    char* p = map_none(bytes, reinterpret_cast<void*>(wish), MAP_FIXED_NOREPLACE);
    if (p == nullptr || reinterpret_cast<uintptr_t>(p) != wish) {
      int err = errno;
      if (p != nullptr) munmap(p, bytes);  // old kernels treat the flag as a mere hint
      return fail(MS_ERR_RESERVE_FAILED, "cannot reserve %zu bytes at %#zx: %s", bytes,
                  static_cast<size_t>(wish), p == nullptr ? strerror(err) : "range taken");
    }
    *out = p;
    return MS_OK;
  }
  // Over-reserve and trim both ends: the only portable way to get alignment beyond a page.
  size_t padded = bytes + (alignment > page_size() ? alignment : 0);
  char* raw = map_none(padded, nullptr, 0);
  if (raw == nullptr) {
    return fail(MS_ERR_RESERVE_FAILED, "cannot reserve %zu bytes: %s", bytes, strerror(errno));
  }
  char* base = align_up(raw, alignment);
  if (base > raw) munmap(raw, static_cast<size_t>(base - raw));
  char* end = base + bytes;
  if (raw + padded > end) munmap(end, static_cast<size_t>(raw + padded - end));
  *out = base;
  return MS_OK;
}

ms_error_t map_read_write(size_t bytes, char** out) {
  *out = nullptr;
  if (bytes == 0 || bytes % page_size() != 0) {
    return fail(MS_ERR_INVALID_ARGUMENT, "read-write mapping of %zu bytes", bytes);
  }
  if (fault_now(FaultPoint::kReserve)) {
    return fail(MS_ERR_RESERVE_FAILED, "read-write mapping of %zu bytes failed (injected)", bytes);
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    return fail(MS_ERR_RESERVE_FAILED, "cannot map %zu bytes read-write: %s", bytes,
                strerror(errno));
  }
  refuse_huge_pages(p, bytes);
  *out = static_cast<char*>(p);
  return MS_OK;
}

ms_error_t release(char* base, size_t bytes) {
  if (base == nullptr) return MS_OK;
  if (fault_now(FaultPoint::kRelease)) {
    return fail(MS_ERR_RESERVE_FAILED, "release of %zu bytes at %p failed (injected)", bytes,
                static_cast<void*>(base));
  }
  if (munmap(base, bytes) != 0) {
    return fail(MS_ERR_RESERVE_FAILED, "release of %zu bytes at %p: %s", bytes,
                static_cast<void*>(base), strerror(errno));
  }
  return MS_OK;
}

ms_error_t map_file_over(char* p, size_t bytes, int fd, uint64_t offset) {
  if (fault_now(FaultPoint::kReserve)) {
    return fail(MS_ERR_RESERVE_FAILED, "mapping %zu bytes of a file at %p failed (injected)",
                bytes, static_cast<void*>(p));
  }
  void* q = mmap(p, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd,
                 static_cast<off_t>(offset));
  if (q == MAP_FAILED) {
    return fail(MS_ERR_RESERVE_FAILED, "cannot map %zu bytes of a file at %p: %s", bytes,
                static_cast<void*>(p), strerror(errno));
  }
  refuse_huge_pages(q, bytes);
  return MS_OK;
}

ms_error_t map_anonymous_over(char* p, size_t bytes) {
  if (fault_now(FaultPoint::kReserve)) {
    return fail(MS_ERR_RESERVE_FAILED, "mapping %zu fresh bytes at %p failed (injected)", bytes,
                static_cast<void*>(p));
  }
  void* q = mmap(p, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  if (q == MAP_FAILED) {
    return fail(MS_ERR_RESERVE_FAILED, "cannot map %zu fresh bytes at %p: %s", bytes,
                static_cast<void*>(p), strerror(errno));
  }
  refuse_huge_pages(q, bytes);
  return MS_OK;
}

ms_error_t map_file_read_only(size_t bytes, int fd, uint64_t offset, const char** out) {
  *out = nullptr;
  if (fault_now(FaultPoint::kReserve)) {
    return fail(MS_ERR_RESERVE_FAILED, "read-only view of %zu bytes of a file failed (injected)",
                bytes);
  }
  void* q = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(offset));
  if (q == MAP_FAILED) {
    return fail(MS_ERR_RESERVE_FAILED, "cannot map a read-only view of %zu bytes of a file: %s",
                bytes, strerror(errno));
  }
  refuse_huge_pages(q, bytes);
  *out = static_cast<const char*>(q);
  return MS_OK;
}

bool populate_for_write(char* p, size_t bytes) {
#ifdef MADV_POPULATE_WRITE
  return madvise(p, bytes, MADV_POPULATE_WRITE) == 0;
#else
  (void)p;
  (void)bytes;
  return false;
#endif
}

ms_error_t commit(char* p, size_t bytes) {
  if (fault_now(FaultPoint::kCommit)) {
    return fail(MS_ERR_COMMIT_FAILED, "commit of %zu bytes at %p failed (injected)", bytes,
                static_cast<void*>(p));
  }
  if (mprotect(p, bytes, PROT_READ | PROT_WRITE) != 0) {
    return fail(MS_ERR_COMMIT_FAILED, "commit of %zu bytes at %p: %s", bytes,
                static_cast<void*>(p), strerror(errno));
  }
  return MS_OK;
}

ms_error_t uncommit(char* p, size_t bytes, Uncommitted after) {
  // A refusal must leave the range exactly as committed as before as far as the caller can tell:
  // the caller keeps counting it as committed and retries later (see VirtualSpaceNode::uncommit).
  if (fault_now(FaultPoint::kUncommit)) {
    return fail(MS_ERR_COMMIT_FAILED, "uncommit of %zu bytes at %p failed (injected)", bytes,
                static_cast<void*>(p));
  }
  if (madvise(p, bytes, MADV_DONTNEED) != 0) {
    return fail(MS_ERR_COMMIT_FAILED, "uncommit of %zu bytes at %p: %s", bytes,
                static_cast<void*>(p), strerror(errno));
  }
  if (after == Uncommitted::kReadsZeros) return MS_OK;
  // The memory is gone already (it reads as zeros); only the protection failed. The caller still
  // counts it as committed, which over-counts by at most this range until the next attempt.
  if (fault_now(FaultPoint::kProtect)) {
    return fail(MS_ERR_COMMIT_FAILED, "protecting %zu bytes at %p failed (injected)", bytes,
                static_cast<void*>(p));
  }
  if (mprotect(p, bytes, PROT_NONE) != 0) {
    return fail(MS_ERR_COMMIT_FAILED, "protecting %zu bytes at %p: %s", bytes,
                static_cast<void*>(p), strerror(errno));
  }
  return MS_OK;
}

}  // namespace metaspace::os
