#include "instance/settings.hpp"

#include "chunks/reclaim_policy.hpp"
#include "common/error.hpp"
#include "common/units.hpp"
#include "context/context.hpp"
#include "os/os_memory.hpp"

namespace metaspace {

namespace {
constexpr size_t kMaxNodeBytes = 4 * GiB;
}  // namespace

ms_settings_t default_settings() {
  ms_settings_t s{};
  s.reclaim = MS_RECLAIM_BALANCED;
  s.commit_granule_bytes = 0;
  s.root_chunk_bytes = 4 * MiB;
  s.node_bytes = 64 * MiB;
  s.class_space_bytes = 1 * GiB;
  s.class_space_base = 0;
  s.class_alignment_bytes = 8;
  s.max_committed_bytes = 0;
  s.gc_threshold_bytes = 0;
  s.gc_callback = nullptr;
  s.gc_callback_user = nullptr;
  s.checked = 0;
  // HotSpot's defaults for MinMetaspaceFreeRatio and MaxMetaspaceFreeRatio; MinMetaspaceExpansion
  // is 256 K words there, 256 KiB here (a metaspace holds more small loaders than a JVM's).
  s.gc_min_free_percent = 40;
  s.gc_max_free_percent = 70;
  s.gc_min_expansion_bytes = 256 * KiB;
  s.archive_path = nullptr;
  s.archive_policy = MS_ARCHIVE_AUTO;
  s.archive_verify = 1;
  s.archive_relocation = MS_ARCHIVE_RELOCATE_AUTO;
  s.count_allocations = 0;
  return s;
}

ms_error_t complete_settings(const ms_settings_t& in, ms_settings_t* out) {
  ms_settings_t s = in;
  if (s.reclaim != MS_RECLAIM_NONE && s.reclaim != MS_RECLAIM_BALANCED &&
      s.reclaim != MS_RECLAIM_AGGRESSIVE) {
    return fail(MS_ERR_INVALID_ARGUMENT, "reclaim policy %d is unknown", s.reclaim);
  }
  if (!is_power_of_2(s.root_chunk_bytes) || s.root_chunk_bytes < 64 * KiB ||
      s.root_chunk_bytes > 64 * MiB) {
    return fail(MS_ERR_INVALID_ARGUMENT,
                "root chunk size %zu: must be a power of 2 from 64 KiB to 64 MiB",
                s.root_chunk_bytes);
  }
  if (s.commit_granule_bytes == 0) {
    s.commit_granule_bytes = ReclaimPolicy::of(s.reclaim).default_granule_bytes();
    if (s.commit_granule_bytes < os::page_size()) s.commit_granule_bytes = os::page_size();
  }
  if (!is_power_of_2(s.commit_granule_bytes) || s.commit_granule_bytes < os::page_size() ||
      s.commit_granule_bytes > 1 * MiB || s.commit_granule_bytes > s.root_chunk_bytes) {
    return fail(MS_ERR_INVALID_ARGUMENT,
                "commit granule %zu: must be a power of 2 from the page size (%zu) to 1 MiB "
                "and at most the root chunk size", s.commit_granule_bytes, os::page_size());
  }
  if (s.checked != 0 && s.checked != 1) {
    return fail(MS_ERR_INVALID_ARGUMENT, "checked %d: must be 0 (off) or 1 (on)", s.checked);
  }
  if (s.count_allocations != 0 && s.count_allocations != 1) {
    return fail(MS_ERR_INVALID_ARGUMENT, "count_allocations %d: must be 0 (off) or 1 (on)",
                s.count_allocations);
  }
  // A node's commit mask is allocated whole when the node is reserved (one bit per granule):
  // 4 GiB in 4 KiB granules is 128 KiB of bits. 2^44 bytes took 515 MiB of bitmap and 2 s.
  if (s.node_bytes == 0 || s.node_bytes % s.root_chunk_bytes != 0 || s.node_bytes > kMaxNodeBytes) {
    return fail(MS_ERR_INVALID_ARGUMENT, "node size %zu: must be a non-zero multiple of the "
                "root chunk size %zu, at most %zu (4 GiB)", s.node_bytes, s.root_chunk_bytes,
                kMaxNodeBytes);
  }
  if (s.class_space_bytes == 0 || s.class_space_bytes % s.root_chunk_bytes != 0 ||
      s.class_space_bytes > 4 * GiB) {
    return fail(MS_ERR_INVALID_ARGUMENT, "class space size %zu: must be a non-zero multiple of "
                "the root chunk size, at most 4 GiB", s.class_space_bytes);
  }
  // The class space's first granule is a guard (narrow pointer 0 means NULL): a space of one
  // granule would be all guard and never hold a class.
  if (s.class_space_bytes <= s.commit_granule_bytes) {
    return fail(MS_ERR_INVALID_ARGUMENT, "class space size %zu: must be larger than the commit "
                "granule (%zu), whose first granule is a guard", s.class_space_bytes,
                s.commit_granule_bytes);
  }
  if (!is_power_of_2(s.class_alignment_bytes) || s.class_alignment_bytes < 8 ||
      s.class_alignment_bytes > 1 * KiB) {
    return fail(MS_ERR_INVALID_ARGUMENT, "class alignment %zu: must be a power of 2 from 8 to "
                "1024", s.class_alignment_bytes);
  }
  if (s.class_space_base % s.root_chunk_bytes != 0) {
    return fail(MS_ERR_INVALID_ARGUMENT, "class space base %#zx: must be aligned to the root "
                "chunk size", static_cast<size_t>(s.class_space_base));
  }
  if (s.max_committed_bytes != 0 && s.max_committed_bytes < s.commit_granule_bytes) {
    return fail(MS_ERR_INVALID_ARGUMENT, "max committed size %zu is below one granule (%zu): "
                "nothing could ever be allocated", s.max_committed_bytes,
                s.commit_granule_bytes);
  }
  bool fixed_threshold = s.gc_min_free_percent == 0 && s.gc_max_free_percent == 0 &&
                         s.gc_min_expansion_bytes == 0;
  if (!fixed_threshold && (s.gc_min_free_percent > 99 || s.gc_max_free_percent > 100 ||
                           s.gc_max_free_percent < s.gc_min_free_percent)) {
    return fail(MS_ERR_INVALID_ARGUMENT, "GC free ratios %u..%u percent: the minimum must be "
                "0..99 and the maximum from the minimum to 100 (all GC policy fields 0: a "
                "fixed threshold)", s.gc_min_free_percent, s.gc_max_free_percent);
  }
  if (s.archive_policy != MS_ARCHIVE_AUTO && s.archive_policy != MS_ARCHIVE_REQUIRE) {
    return fail(MS_ERR_INVALID_ARGUMENT, "archive policy %d: must be MS_ARCHIVE_AUTO (0) or "
                "MS_ARCHIVE_REQUIRE (1)", s.archive_policy);
  }
  if (s.archive_verify != 0 && s.archive_verify != 1) {
    return fail(MS_ERR_INVALID_ARGUMENT, "archive_verify %d: must be 0 or 1", s.archive_verify);
  }
  if (s.archive_relocation != MS_ARCHIVE_RELOCATE_AUTO && s.archive_relocation != MS_ARCHIVE_RELOCATE_EAGER &&
      s.archive_relocation != MS_ARCHIVE_RELOCATE_LAZY) {
    return fail(MS_ERR_INVALID_ARGUMENT, "archive_relocation %d: must be MS_ARCHIVE_RELOCATE_AUTO (0), "
                "_EAGER (1) or _LAZY (2)", s.archive_relocation);
  }
  *out = s;
  return MS_OK;
}

size_t bookkeeping_range_bytes(const ms_settings_t& s) {
  size_t bytes = s.class_space_bytes / 8 + s.node_bytes / 2;
  bytes = align_up(bytes, MiB);
  if (bytes < kMinBookkeepingRangeBytes) bytes = kMinBookkeepingRangeBytes;
  if (bytes > kBookkeepingReserveBytes) bytes = kBookkeepingReserveBytes;
  return bytes;
}

}  // namespace metaspace
