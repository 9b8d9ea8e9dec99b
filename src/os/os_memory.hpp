// Layer 1: address space and memory from the kernel.
//
// Reserve maps PROT_NONE + MAP_NORESERVE: address space without memory. Commit makes pages
// read-write. Uncommit gives the pages back with madvise(MADV_DONTNEED) and leaves them read-write:
// the kernel drops the memory (RSS falls) but the mapping stays one VMA. Re-protecting or re-mapping
// on uncommit would split a node into one mapping per commit run (HotSpot dropped 16 KiB granules
// over exactly that); the cost is that uncommitted memory stays addressable and reads zeros. The
// checked mode asks for `protect` to make it fault instead, accepting the extra mappings.
#pragma once

#include <metaspace/types.h>

#include <cstddef>
#include <cstdint>

namespace metaspace::os {

// The kernel's page size. Inline (a load and a test once initialized): the slab allocator asks
// for it on paths that run per loader object (SlabAllocator::slab_of), where an out-of-line
// call would be a tenth of a loader's create and destroy.
size_t query_page_size();
inline size_t page_size() {
  static const size_t size = query_page_size();
  return size;
}

// Reserves `bytes` aligned to `alignment` (a power of 2 ≥ page size). With a non-zero `wish` the
// range must start exactly there; if the kernel cannot give it, nothing stays mapped.
ms_error_t reserve(size_t bytes, size_t alignment, uintptr_t wish, char** out);
// Maps `bytes` (a multiple of the page size) read-write at once, MAP_NORESERVE: for the library's
// own tables, whose pages cost memory only once written and go back with uncommit. One kernel
// call and one mapping. Fault point kReserve; MS_ERR_RESERVE_FAILED on refusal.
ms_error_t map_read_write(size_t bytes, char** out);
// Unmaps a reservation (or a range from map_read_write). On failure (MS_ERR_RESERVE_FAILED) the range stays reserved: the caller
// may keep it and try again later, or leak address space (never memory: it is uncommitted).
ms_error_t release(char* base, size_t bytes);

ms_error_t commit(char* p, size_t bytes);
// What a touch of uncommitted memory does afterwards: read fresh zero pages, or fault (checked
// mode: the range is made inaccessible, which costs kernel mappings).
enum class Uncommitted { kReadsZeros, kFaults };

// On failure (MS_ERR_COMMIT_FAILED) the caller must go on treating the range as committed.
ms_error_t uncommit(char* p, size_t bytes, Uncommitted after);

// The class-data archive's mappings (archive/): a file's bytes, or fresh memory, in place of
// part of a range the caller holds, and a view of a file. Each range is advised
// MADV_NOHUGEPAGE like every other; each mapping is fault point kReserve and fails with
// MS_ERR_RESERVE_FAILED. `p` is page-aligned; the kernel rounds `bytes` up to whole pages.
//
// `bytes` of file `fd` from `offset` (a page multiple) replace [p, p + bytes) (MAP_FIXED),
// private and read-write: writes stay in this process, the file is never written. On failure
// that part of the range is in no known state: the caller maps over it again or releases it.
ms_error_t map_file_over(char* p, size_t bytes, int fd, uint64_t offset);
// Fresh anonymous memory replaces [p, p + bytes) (MAP_FIXED, read-write, MAP_NORESERVE): zeros,
// backed once touched. On failure as map_file_over.
ms_error_t map_anonymous_over(char* p, size_t bytes);
// A shared read-only view of `bytes` of file `fd` from `offset`, anywhere. Given back with
// release().
ms_error_t map_file_read_only(size_t bytes, int fd, uint64_t offset, const char** out);
// Faults every page of the read-write range [p, p + bytes) in for writing now
// (MADV_POPULATE_WRITE): a pass that writes most of them takes one call instead of a trap per
// page. A hint: false where the kernel cannot (before Linux 5.14), and the writes fault in as
// usual.
bool populate_for_write(char* p, size_t bytes);

}  // namespace metaspace::os
