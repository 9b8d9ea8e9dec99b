// Dump time: a runtime fills an ArchiveBuilder the way it fills a loader (allocate class and
// non-class blocks, write its metadata into them, mark which words are pointers to other archived
// blocks and which 4-byte slots are narrow class pointers, name its root blocks), then writes the
// file. Blocks live in two private buffers (reserved address space, touched as used); at write
// time every marked pointer is rewritten to the address its target will have when the file is
// mapped at the requested base, and anything that cannot be (a marked word holding an address
// outside the archive, a narrow slot naming no archived class) refuses the write.
#pragma once

#include <metaspace/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "archive/archive_format.hpp"

namespace metaspace::archive {

struct BuilderConfig {
  size_t class_alignment_bytes = 8;
  size_t class_space_bytes = 0;
  size_t root_chunk_bytes = 0;
  uintptr_t requested_base = kDefaultRequestedBase;
  // Address space reserved per region; memory is used only as blocks are handed out.
  size_t region_capacity_bytes = 1ull << 30;
};

class ArchiveBuilder {
 public:
  // Null with the error recorded (bad settings, no address space).
  static std::unique_ptr<ArchiveBuilder> create(const BuilderConfig& config);
  ~ArchiveBuilder();
  // Never at an address a builder of this process had (os/unique_addresses): a discarded
  // builder's handle never names a newer one.
  static void* operator new(size_t bytes);
  static void operator delete(void* p, size_t bytes) noexcept;
  ArchiveBuilder(const ArchiveBuilder&) = delete;
  ArchiveBuilder& operator=(const ArchiveBuilder&) = delete;

  // Zeroed, aligned to 8 (non-class) or the class alignment. Null with the error recorded.
  void* allocate(ms_space_t space, size_t bytes);
  // `slot` is an 8-byte-aligned word inside a block; at write time it must hold NULL or an
  // address inside an archived block.
  ms_error_t mark_pointer(const void* slot);
  // `slot` is a 4-byte-aligned slot inside a block; at write time it must hold 0 or the narrow
  // value (encode_class) of an archived class block.
  ms_error_t mark_narrow_class(const void* slot);
  // The narrow value `klass` (a class block of this builder) will have once mapped; 0 with
  // MS_ERR_INVALID_ARGUMENT for anything else.
  uint32_t encode_class(const void* klass) const;
  ms_error_t set_root(const char* name, const void* block);
  // Writes path.tmp and renames it over path (a process that has the old file mapped keeps it).
  ms_error_t write(const char* path);
  bool verify() const;

  bool valid_handle() const { return magic_ == kMagicWord; }
  size_t used_bytes(ms_space_t space) const { return buffers_[space].top; }

 private:
  static constexpr uint64_t kMagicWord = 0x4d53415243424c44ull;  // "MSARCBLD"
  struct Buffer {
    char* base = nullptr;
    size_t capacity = 0;
    size_t top = 0;                  // bytes handed out
    std::vector<uint64_t> pointers;  // one bit per 8 bytes of [base, base + top)
    std::vector<uint64_t> narrows;   // one bit per 4 bytes
  };
  explicit ArchiveBuilder(const BuilderConfig& config) : config_(config) {}
  // The buffer holding [p, p + bytes), or -1.
  int buffer_of(const void* p, size_t bytes) const;
  // The offset in the file `p` will have, or false.
  bool file_offset_of(uintptr_t p, const uint64_t region_offset[2], uint64_t* out) const;

  uint64_t magic_ = kMagicWord;
  BuilderConfig config_;
  unsigned shift_ = 3;
  Buffer buffers_[2];  // indexed by ms_space_t
  std::map<std::string, std::pair<int, size_t>> roots_;  // name -> buffer, offset in it
};

}  // namespace metaspace::archive
