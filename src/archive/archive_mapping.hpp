// Start-up: the archive file mapped copy-on-write (MAP_PRIVATE, read-write: untouched pages stay
// the page cache's and are shared by every process mapping the file) at the start of one range
// that also holds the class space, right above it. The narrow class encoding base is the
// archive's start, so one base and shift cover archived and new classes.
//
//   base ─┬─ archive file (header, class region, non-class region, bitmaps, roots) ─┐
//         │  reserved, never touched, up to the next root chunk boundary            │ reserved_bytes
//         └──────────────────────────────────────────────────────────────────────────┘
//   base + reserved_bytes: the class space (its own reservation, made by ClassSpace)
//
// If the requested base is taken the range goes elsewhere and every marked pointer is moved by the
// difference (delta); narrow values are offsets from the archive's start and never change.
// What is checked before the archive is used, and what cannot be, is in docs/archive.md.
// A refusal leaves nothing mapped.
#pragma once

#include <metaspace/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "archive/archive_format.hpp"
#include "archive/lazy_relocation.hpp"

namespace metaspace::archive {

struct MapRequest {
  const char* path = nullptr;
  size_t class_alignment_bytes = 8;
  size_t class_space_bytes = 0;
  size_t root_chunk_bytes = 0;
  uintptr_t class_space_base = 0;  // 0: the archive's requested base decides
  bool verify_data = true;         // checksum of the regions and every marked slot checked
  int relocation = MS_ARCHIVE_RELOCATE_AUTO;  // when the base is taken: eager, lazy, or auto
};

class ArchiveMapping {
 public:
  // Null with the error recorded (MS_ERR_ARCHIVE_*, MS_ERR_RESERVE_FAILED).
  static std::unique_ptr<ArchiveMapping> map(const MapRequest& request);
  ~ArchiveMapping();
  ArchiveMapping(const ArchiveMapping&) = delete;
  ArchiveMapping& operator=(const ArchiveMapping&) = delete;

  // Where the class space must go: right above the archive's reserved range. That range is held
  // (PROT_NONE) until release_class_space_range(), called just before the class space reserves it.
  uintptr_t class_space_wish() const { return base_ + reserved_bytes_; }
  void release_class_space_range();

  uintptr_t base() const { return base_; }
  size_t reserved_bytes() const { return reserved_bytes_; }
  size_t file_bytes() const { return file_bytes_; }
  // The header as read and checked at ms_create (a copy: reading the mapped file after another
  // process truncated it would raise SIGBUS).
  const Header& header() const { return header_; }
  // O(1): one subtraction and one compare, whatever the archive's size.
  bool contains(const void* p) const {
    return reinterpret_cast<uintptr_t>(p) - base_ < file_bytes_;
  }
  // The root named `name`, or null (binary search: the roots are sorted by name).
  void* root(const char* name) const;
  void count_ignored_deallocation() { deallocations_ignored_.fetch_add(1, std::memory_order_relaxed); }
  // Includes resident pages (mincore: O(pages of the file)).
  ms_archive_stats_t stats() const;
  // The range is where it was put and agrees with the header as checked (the copy: the mapped
  // pages are not read, a truncated file would fault there). False with the reason in the last
  // error.
  bool verify() const;

  // The lazy relocation's handler, if the archive is relocated lazily (tests).
  LazyRelocation* lazy_relocation() { return lazy_.get(); }

  // Test seam: called after the file is mapped and before it is checked (a test changes the file
  // there). Null in production.
  static void (*after_map_hook)(const char* path);

 private:
  ArchiveMapping() = default;
  // The checks, and relocation: false with the error recorded. Every byte checked is read from
  // the file with pread, never through the mapping: a file truncated meanwhile by another
  // process gives a short read (MS_ERR_ARCHIVE_CHANGED), where a read of the mapping's lost pages
  // would raise SIGBUS.
  bool check_and_relocate(const MapRequest& request, int fd);
  // Moves every marked pointer now, in a private copy of the file read into anonymous memory
  // that replaces the file's mapping (relocation writes nearly every page anyway: the copy costs
  // what copy-on-write did, and leaves no page of the file mapped to fault). False if the file is
  // shorter than checked or a marked word holds an address outside the archive.
  bool relocate_eagerly(int fd);
  // Lazy relocation if asked for and possible; else records why not (relocation_reason_).
  bool try_lazy(const MapRequest& request, int fd);

  Header header_{};                 // as read at ms_create
  std::vector<char> tail_;          // the bitmaps and roots as read and checked: [data_end, file end)
  uintptr_t base_ = 0;
  size_t reserved_bytes_ = 0;       // the archive's part of the range
  size_t class_space_bytes_ = 0;    // the class space's part, held until released
  size_t file_bytes_ = 0;
  intptr_t delta_ = 0;
  std::atomic<size_t> deallocations_ignored_{0};
  int relocation_ = 0;              // MS_ARCHIVE_RELOCATE_EAGER / _LAZY once relocated
  std::string relocation_reason_;
  std::unique_ptr<LazyRelocation> lazy_;  // stopped before the range is released
};

}  // namespace metaspace::archive
