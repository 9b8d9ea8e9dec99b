#include "vspace/chunk_start_table.hpp"

#include <sys/mman.h>

#include "common/assert.hpp"
#include "common/error.hpp"
#include "common/units.hpp"
#include "os/fault_injection.hpp"
#include "os/os_memory.hpp"

namespace metaspace {

// Bookkeeping, not metaspace memory: mapped read-write at once (the kernel supplies zero pages
// as slots are first written), so it costs neither a commit call nor a kernel mapping per area.
ms_error_t ChunkStartTable::init(const char* base, size_t range_bytes, size_t unit_bytes,
                                 size_t root_bytes) {
  size_t bytes = align_up(range_bytes / unit_bytes * sizeof(Chunk*), os::page_size());
  void* p = os::fault_now(os::FaultPoint::kBookkeeping)
                ? MAP_FAILED
                : mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    return fail(MS_ERR_OUT_OF_MEMORY, "chunk start table of %zu bytes could not be mapped",
                bytes);
  }
  base_ = base;
  slots_ = static_cast<Chunk**>(p);
  mapped_bytes_ = bytes;
  unit_shift_ = log2_of_power_of_2(unit_bytes);
  root_shift_ = log2_of_power_of_2(root_bytes);
  return MS_OK;
}

void ChunkStartTable::release_area(const char* area_base, size_t bytes) {
  MS_ASSERT(at(area_base) != nullptr, "area %p has no chunk at its base", (const void*)area_base);
  // Keep the page of the first slot (it holds the area's chunk); give back whole pages after it.
  char* first = reinterpret_cast<char*>(&slots_[index(area_base)]);
  char* from = align_up(first + sizeof(Chunk*), os::page_size());
  char* to = align_down(first + (bytes >> unit_shift_) * sizeof(Chunk*), os::page_size());
  if (from < to) (void)madvise(from, static_cast<size_t>(to - from), MADV_DONTNEED);
}

ChunkStartTable::~ChunkStartTable() {
  if (slots_ != nullptr) munmap(slots_, mapped_bytes_);
}

}  // namespace metaspace
