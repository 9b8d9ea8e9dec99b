// The class-data archive file (docs/archive.md): a header page, the class region, the non-class
// region, the pointer bitmaps and the named roots. Pointers inside the regions hold the addresses
// they will have when the file is mapped at `requested_base`; the bitmaps say which words to move
// when it is mapped elsewhere.
//
//   offset 0        header (one page; this struct, then zeros)
//   kHeaderBytes    class region      (Klass-like blocks, aligned to the class alignment)
//   ...             non-class region  (everything else, 8-byte aligned)
//   ...             pointer bitmap: one bit per 8-byte word of the two regions ("a full pointer
//                   into the archive"), narrow bitmap: one bit per 4-byte slot ("a narrow class
//                   pointer"), then the roots (name, offset)
//
// Both regions are page-aligned in the file, so the regions are also page-aligned when mapped.
// Narrow class pointers are (offset in the file) >> shift: the narrow encoding base is the
// archive's start wherever it is mapped, so narrow values never need relocation.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace metaspace::archive {

inline constexpr char kMagic[8] = {'M', 'S', 'A', 'R', 'C', 'H', 'I', 'V'};
// Raised whenever the layout of the file changes; an archive of another version is refused.
inline constexpr uint32_t kFormatVersion = 1;
// The header page; also the class region's offset, so narrow values of archived classes are
// never 0 (the header, never a class, is where narrow 0 would point).
inline constexpr size_t kHeaderBytes = 4096;
// HotSpot's default SharedBaseAddress: 32 GiB, with the class space right above the archive.
inline constexpr uintptr_t kDefaultRequestedBase = 0x800000000;
inline constexpr size_t kRootNameBytes = 56;
inline constexpr size_t kMaxRoots = 4096;

struct FileRange {
  uint64_t offset;
  uint64_t bytes;
};

struct Header {
  char magic[8];
  uint32_t format_version;
  uint32_t header_struct_bytes;  // sizeof(Header) of the writer
  // Hash of the header from `library_version` on, the bitmaps and the roots: always checked.
  uint64_t meta_checksum;
  // Hash of both regions: checked when the settings ask for full verification (the default).
  uint64_t data_checksum;
  // ---- covered by meta_checksum from here
  char library_version[16];      // the writer's library version (ms_version()), NUL-terminated
  uint64_t file_bytes;
  uint64_t requested_base;
  // The settings that decide where and how archived blocks can be used.
  uint64_t class_alignment_bytes;
  uint64_t class_space_bytes;
  uint64_t root_chunk_bytes;
  FileRange class_region;        // offset kHeaderBytes
  FileRange nonclass_region;     // right after the class region
  FileRange pointer_bitmap;      // one bit per word of [class_region.offset, nonclass end)
  FileRange narrow_bitmap;       // one bit per 4 bytes of the same range
  FileRange roots;               // root_count Root records
  uint64_t root_count;
  uint64_t pointer_count;        // bits set in the pointer bitmap
  uint64_t narrow_count;         // bits set in the narrow bitmap
  uint64_t class_used_bytes;     // bytes handed out in the class region (rest: padding)
  uint64_t nonclass_used_bytes;
};

inline constexpr size_t kMetaChecksumFrom = offsetof(Header, library_version);

struct Root {
  char name[kRootNameBytes];     // NUL-terminated
  uint64_t offset;               // of the block, from the start of the file
};

// The data range both bitmaps describe.
inline uint64_t data_begin(const Header& h) { return h.class_region.offset; }
inline uint64_t data_end(const Header& h) {
  return h.nonclass_region.offset + h.nonclass_region.bytes;
}
inline uint64_t pointer_bitmap_bytes_for(uint64_t data_bytes) {
  return (data_bytes / 8 + 63) / 64 * 8;
}
inline uint64_t narrow_bitmap_bytes_for(uint64_t data_bytes) {
  return (data_bytes / 4 + 63) / 64 * 8;
}

// Calls f(b) for every set bit b in [first, last) of a bitmap (bit b is bit b % 64 of word
// b / 64), in order: the walk of the pointer and narrow bitmaps by the checks, the eager
// relocation and each cluster of the lazy one. Stops at the first f that returns false and
// returns false.
template <typename F>
bool for_each_marked(const uint64_t* bitmap, uint64_t first, uint64_t last, F f) {
  for (uint64_t i = first / 64; i < (last + 63) / 64; i++) {
    for (uint64_t bits = bitmap[i]; bits != 0; bits &= bits - 1) {
      const uint64_t b = i * 64 + static_cast<unsigned>(std::countr_zero(bits));
      if (b < first) continue;
      if (b >= last) return true;
      if (!f(b)) return false;
    }
  }
  return true;
}

}  // namespace metaspace::archive
