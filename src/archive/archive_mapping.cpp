#include "archive/archive_mapping.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <vector>

#include "archive/archive_checksum.hpp"
#include "common/error.hpp"
#include "common/units.hpp"
#include "common/verify.hpp"
#include "common/version.hpp"
#include "os/os_memory.hpp"

namespace metaspace::archive {

void (*ArchiveMapping::after_map_hook)(const char* path) = nullptr;

namespace {

// Closes the descriptor on every path out of map().
struct FileDescriptor {
  int fd = -1;
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
};

bool same_file_state(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino && a.st_size == b.st_size &&
         a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec;
}

bool range_is(const FileRange& r, uint64_t offset, uint64_t bytes) {
  return r.offset == offset && r.bytes == bytes;
}

// Everything the header says, checked against the file's size and the settings before anything
// is mapped. Arithmetic cannot overflow: every size is checked against the file size first.
ms_error_t check_header(const Header& h, uint64_t file_size, const MapRequest& r) {
  const char* path = r.path;
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0) {
    return fail(MS_ERR_ARCHIVE_FORMAT, "archive %s: not a libmetaspace archive (wrong magic)", path);
  }
  if (h.format_version != kFormatVersion || h.header_struct_bytes != sizeof(Header)) {
    return fail(MS_ERR_ARCHIVE_VERSION, "archive %s: format version %u (header %u bytes); this "
                "library reads version %u (%zu bytes)", path, h.format_version,
                h.header_struct_bytes, kFormatVersion, sizeof(Header));
  }
  if (file_size < kHeaderBytes) {
    return fail(MS_ERR_ARCHIVE_FORMAT, "archive %s: truncated (%llu bytes, less than its header)",
                path, static_cast<unsigned long long>(file_size));
  }
  if (std::memchr(h.library_version, '\0', sizeof h.library_version) == nullptr ||
      std::strcmp(h.library_version, kLibraryVersion) != 0) {
    return fail(MS_ERR_ARCHIVE_VERSION, "archive %s: written by libmetaspace %.15s, this is %s",
                path, h.library_version, kLibraryVersion);
  }
  if (h.file_bytes != file_size) {
    return fail(MS_ERR_ARCHIVE_FORMAT, "archive %s: %s (%llu bytes, the header says %llu)", path,
                file_size < h.file_bytes ? "truncated" : "longer than written",
                static_cast<unsigned long long>(file_size),
                static_cast<unsigned long long>(h.file_bytes));
  }
  const uint64_t size = file_size;
  bool layout_ok =
      h.class_region.offset == kHeaderBytes && h.class_region.bytes <= size &&
      h.class_region.bytes % kHeaderBytes == 0 &&
      h.nonclass_region.offset == h.class_region.offset + h.class_region.bytes &&
      h.nonclass_region.bytes <= size && h.nonclass_region.bytes % kHeaderBytes == 0 &&
      data_end(h) <= size && h.class_used_bytes <= h.class_region.bytes &&
      h.nonclass_used_bytes <= h.nonclass_region.bytes &&
      range_is(h.pointer_bitmap, data_end(h), pointer_bitmap_bytes_for(data_end(h) - data_begin(h))) &&
      h.pointer_bitmap.bytes <= size &&
      range_is(h.narrow_bitmap, h.pointer_bitmap.offset + h.pointer_bitmap.bytes,
               narrow_bitmap_bytes_for(data_end(h) - data_begin(h))) &&
      h.narrow_bitmap.bytes <= size && h.root_count <= kMaxRoots &&
      range_is(h.roots, h.narrow_bitmap.offset + h.narrow_bitmap.bytes, h.root_count * sizeof(Root)) &&
      h.roots.offset + h.roots.bytes == size;
  if (!layout_ok) {
    return fail(MS_ERR_ARCHIVE_FORMAT, "archive %s: the header's regions, bitmaps and roots do not "
                "tile the file (%llu bytes)", path, static_cast<unsigned long long>(size));
  }
  if (h.class_alignment_bytes != r.class_alignment_bytes ||
      h.class_space_bytes != r.class_space_bytes || h.root_chunk_bytes != r.root_chunk_bytes) {
    return fail(MS_ERR_ARCHIVE_MISMATCH, "archive %s: dumped with class alignment %llu, class "
                "space %llu, root chunk %llu bytes; these settings have %zu, %zu, %zu", path,
                static_cast<unsigned long long>(h.class_alignment_bytes),
                static_cast<unsigned long long>(h.class_space_bytes),
                static_cast<unsigned long long>(h.root_chunk_bytes), r.class_alignment_bytes,
                r.class_space_bytes, r.root_chunk_bytes);
  }
  if (h.requested_base == 0 || h.requested_base % r.root_chunk_bytes != 0) {
    return fail(MS_ERR_ARCHIVE_FORMAT, "archive %s: requested base %#llx is not aligned to the "
                "root chunk size", path, static_cast<unsigned long long>(h.requested_base));
  }
  return MS_OK;
}

bool pointer_outside(const Header& h, uint64_t word, uint64_t value) {
  fail(MS_ERR_ARCHIVE_FORMAT, "archive: the bitmap marks the word at offset %#llx, which holds %#llx, outside "
       "the archive", static_cast<unsigned long long>(data_begin(h) + word * 8), static_cast<unsigned long long>(value));
  return false;
}

}  // namespace

std::unique_ptr<ArchiveMapping> ArchiveMapping::map(const MapRequest& r) {
  FileDescriptor file;
  // O_NONBLOCK: opening a FIFO without a writer (or a device) must not wait; the type is checked
  // before anything is read, and reads of a regular file ignore the flag.
  file.fd = ::open(r.path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (file.fd < 0) {
    fail(MS_ERR_ARCHIVE_IO, "archive %s: cannot open: %s", r.path, strerror(errno));
    return nullptr;
  }
  struct stat before {};
  if (::fstat(file.fd, &before) != 0 || !S_ISREG(before.st_mode)) {
    fail(MS_ERR_ARCHIVE_IO, "archive %s: not a regular file", r.path);
    return nullptr;
  }
  Header h{};
  ssize_t got = ::pread(file.fd, &h, sizeof h, 0);
  if (got < 0) {
    fail(MS_ERR_ARCHIVE_IO, "archive %s: cannot read: %s", r.path, strerror(errno));
    return nullptr;
  }
  if (static_cast<size_t>(got) < sizeof h) {
    fail(MS_ERR_ARCHIVE_FORMAT, "archive %s: truncated (%zd bytes, less than its header)", r.path,
         got);
    return nullptr;
  }
  if (check_header(h, static_cast<uint64_t>(before.st_size), r) != MS_OK) return nullptr;

  // The archive's range ends on a root chunk boundary, where the class space starts. Narrow
  // pointers must name every slot of both: at most 2^32 slots of the class alignment.
  std::unique_ptr<ArchiveMapping> m(new ArchiveMapping());
  m->header_ = h;
  m->file_bytes_ = h.file_bytes;
  m->reserved_bytes_ = align_up(h.file_bytes, r.root_chunk_bytes);
  m->class_space_bytes_ = r.class_space_bytes;
  size_t total = m->reserved_bytes_ + r.class_space_bytes;
  unsigned shift = log2_of_power_of_2(r.class_alignment_bytes);
  if ((total >> shift) > (uint64_t{1} << 32)) {
    fail(MS_ERR_ARCHIVE_MISMATCH, "archive %s: %zu bytes of archive and class space are more than "
         "32-bit narrow pointers reach at class alignment %zu", r.path, total,
         r.class_alignment_bytes);
    return nullptr;
  }
  uintptr_t wish = h.requested_base;
  if (r.class_space_base != 0) {
    wish = r.class_space_base >= m->reserved_bytes_ ? r.class_space_base - m->reserved_bytes_ : 0;
  }
  char* range = nullptr;
  if (wish == 0 || os::reserve(total, r.root_chunk_bytes, wish, &range) != MS_OK) {
    if (os::reserve(total, r.root_chunk_bytes, 0, &range) != MS_OK) return nullptr;
    note("archive %s: the range at %#zx is taken; mapped at %p and relocated", r.path,
         static_cast<size_t>(wish), static_cast<void*>(range));
  }
  m->base_ = reinterpret_cast<uintptr_t>(range);
  m->delta_ = static_cast<intptr_t>(m->base_ - h.requested_base);
  // From here the destructor gives the range back on any refusal: nothing stays half-mapped.
  if (os::map_file_over(range, h.file_bytes, file.fd, 0) != MS_OK) {
    std::string why = ms_last_error_text();
    fail(MS_ERR_ARCHIVE_IO, "archive %s: mmap of %llu bytes failed: %s", r.path,
         static_cast<unsigned long long>(h.file_bytes), why.c_str());
    return nullptr;
  }
  if (after_map_hook != nullptr) after_map_hook(r.path);
  // A writer that replaced the file's contents (not the file: a rename leaves our mapping on the
  // old inode) between open and now shows here; the checksums catch what it changed in pages
  // we read below.
  struct stat after {};
  if (::fstat(file.fd, &after) != 0 || !same_file_state(before, after)) {
    fail(MS_ERR_ARCHIVE_CHANGED, "archive %s: the file changed while it was being mapped", r.path);
    return nullptr;
  }
  if (!m->check_and_relocate(r, file.fd)) {
    // The file may have been written after the checks above (size and time unchanged is not
    // proof): say so rather than blame the file.
    struct stat now {};
    if (::fstat(file.fd, &now) == 0 && !same_file_state(before, now)) {
      fail(MS_ERR_ARCHIVE_CHANGED, "archive %s: the file changed while it was being mapped", r.path);
    }
    return nullptr;
  }
  // Truncated or rewritten while it was read, yet every read was whole: refused all the same.
  // Nothing of ms_create reads the mapped file after this.
  struct stat checked {};
  if (::fstat(file.fd, &checked) != 0 || !same_file_state(before, checked)) {
    fail(MS_ERR_ARCHIVE_CHANGED, "archive %s: the file changed while it was being checked", r.path);
    return nullptr;
  }
  return m;
}

namespace {

// Reads exactly `bytes` at `offset`; a short read means the file is shorter than when it was
// checked (truncated meanwhile). False with the error recorded.
bool read_exact(int fd, void* out, size_t bytes, uint64_t offset) {
  auto* p = static_cast<char*>(out);
  while (bytes > 0) {
    ssize_t got = ::pread(fd, p, bytes, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      fail(MS_ERR_ARCHIVE_IO, "archive: cannot read %zu bytes at %llu: %s", bytes,
           static_cast<unsigned long long>(offset), strerror(errno));
      return false;
    }
    if (got == 0) {
      fail(MS_ERR_ARCHIVE_CHANGED, "archive: the file became shorter while it was being read "
           "(truncated at %llu bytes or before)", static_cast<unsigned long long>(offset));
      return false;
    }
    p += got;
    bytes -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
  return true;
}

// The regions are read in pieces of this many bytes: a multiple of 512, so that a piece's words
// start on a bitmap word of both bitmaps (64 words, 128 narrow slots).
constexpr size_t kReadPieceBytes = size_t{1} << 20;

}  // namespace

bool ArchiveMapping::check_and_relocate(const MapRequest& request, int fd) {
  const bool verify_data = request.verify_data;
  const Header& h = header();
  // The bitmaps and roots: read once, kept (root lookups, relocation) and checked here.
  tail_.resize(h.file_bytes - data_end(h));
  if (!read_exact(fd, tail_.data(), tail_.size(), data_end(h))) return false;
  const char* tail = tail_.data();
  auto in_tail = [&](uint64_t file_offset) { return tail + (file_offset - data_end(h)); };
  Checksum meta;
  meta.add(reinterpret_cast<const char*>(&h) + kMetaChecksumFrom, sizeof(Header) - kMetaChecksumFrom);
  meta.add(tail, tail_.size());
  if (meta.value() != h.meta_checksum) {
    fail(MS_ERR_ARCHIVE_CHECKSUM, "archive: the checksum of the header, bitmaps and roots does not "
         "match (damaged file)");
    return false;
  }
  // Roots: sorted by name (lookups are a binary search), named, inside the data.
  const auto* roots = reinterpret_cast<const Root*>(in_tail(h.roots.offset));
  for (uint64_t i = 0; i < h.root_count; i++) {
    const Root& root = roots[i];
    if (std::memchr(root.name, '\0', kRootNameBytes) == nullptr || root.name[0] == '\0' ||
        root.offset < data_begin(h) || root.offset >= data_end(h) ||
        (i > 0 && std::strcmp(roots[i - 1].name, root.name) >= 0)) {
      fail(MS_ERR_ARCHIVE_FORMAT, "archive: root %llu is unnamed, out of order or outside the "
           "regions", static_cast<unsigned long long>(i));
      return false;
    }
  }
  // Pointer bitmap: no bit beyond the data; every marked word, read only when it must be checked
  // or moved, holds an address inside the data as written.
  const uint64_t data_words = (data_end(h) - data_begin(h)) / 8;
  const uint64_t data_slots = (data_end(h) - data_begin(h)) / 4;
  const auto* pbits = reinterpret_cast<const uint64_t*>(in_tail(h.pointer_bitmap.offset));
  const auto* nbits = reinterpret_cast<const uint64_t*>(in_tail(h.narrow_bitmap.offset));
  if ((data_words % 64 != 0 && (pbits[data_words / 64] >> (data_words % 64)) != 0) ||
      (data_slots % 64 != 0 && (nbits[data_slots / 64] >> (data_slots % 64)) != 0)) {
    fail(MS_ERR_ARCHIVE_FORMAT, "archive: a bitmap marks a slot beyond the regions");
    return false;
  }
  if (verify_data) {
    // The regions, a piece at a time: their checksum, and every marked word and narrow slot
    // (read only, before any relocation).
    const uint64_t low = h.requested_base + data_begin(h), high = h.requested_base + data_end(h);
    const unsigned shift = log2_of_power_of_2(h.class_alignment_bytes);
    std::vector<char> piece(std::min<uint64_t>(kReadPieceBytes, data_end(h) - data_begin(h)));
    Checksum data;
    for (uint64_t at = data_begin(h); at < data_end(h); at += piece.size()) {
      const size_t bytes = static_cast<size_t>(std::min<uint64_t>(piece.size(), data_end(h) - at));
      if (!read_exact(fd, piece.data(), bytes, at)) return false;
      data.add(piece.data(), bytes);
      const uint64_t first_word = (at - data_begin(h)) / 8;
      const auto* words = reinterpret_cast<const uint64_t*>(piece.data());
      bool inside = for_each_marked(pbits, first_word, first_word + bytes / 8, [&](uint64_t w) {
        uint64_t value = words[w - first_word];
        return (value >= low && value < high) || pointer_outside(h, w, value);
      });
      if (!inside) return false;
      const uint64_t first_slot = first_word * 2;
      const auto* slots = reinterpret_cast<const uint32_t*>(piece.data());
      bool named = for_each_marked(nbits, first_slot, first_slot + bytes / 4, [&](uint64_t n) {
        uint64_t offset = uint64_t{slots[n - first_slot]} << shift;
        if (offset >= h.class_region.offset && offset < h.class_region.offset + h.class_used_bytes) {
          return true;
        }
        fail(MS_ERR_ARCHIVE_FORMAT, "archive: the narrow bitmap marks the slot at offset %#llx, "
             "which names no archived class", static_cast<unsigned long long>(data_begin(h) + n * 4));
        return false;
      });
      if (!named) return false;
    }
    if (data.value() != h.data_checksum) {
      fail(MS_ERR_ARCHIVE_CHECKSUM, "archive: the checksum of the class and non-class regions does "
           "not match (damaged file)");
      return false;
    }
  }
  if (delta_ == 0) return true;
  if (try_lazy(request, fd)) return true;
  return relocate_eagerly(fd);
}

bool ArchiveMapping::try_lazy(const MapRequest& request, int fd) {
  if (request.relocation == MS_ARCHIVE_RELOCATE_EAGER) {
    relocation_reason_ = "archive_relocation=eager";
  } else if (request.relocation == MS_ARCHIVE_RELOCATE_AUTO && request.verify_data) {
    relocation_reason_ = "archive_relocation=auto with archive_verify=1 (every page is read at start-up anyway)";
  } else if (os::page_size() != LazyRelocation::kPageBytes) {
    relocation_reason_ = "lazy relocation needs 4 KiB pages";
  } else {
    const Header& h = header();
    LazyRelocationRequest lr;
    lr.range = base_ + data_begin(h);
    lr.bytes = data_end(h) - data_begin(h);
    lr.fd = fd;
    lr.file_offset = data_begin(h);
    lr.pointer_bits = reinterpret_cast<const uint64_t*>(tail_.data() + (h.pointer_bitmap.offset - data_end(h)));
    lr.delta = delta_;
    lr.low = h.requested_base + data_begin(h);
    lr.high = h.requested_base + data_end(h);
    std::string why_not;
    lazy_ = LazyRelocation::start(lr, &why_not);
    if (lazy_ != nullptr) {
      relocation_ = MS_ARCHIVE_RELOCATE_LAZY;
      relocation_reason_ = "userfaultfd: pages moved when first touched";
      return true;
    }
    relocation_reason_ = "eager, lazy refused: " + why_not;
    note("archive: %s", relocation_reason_.c_str());
  }
  return false;
}

bool ArchiveMapping::relocate_eagerly(int fd) {
  const Header& h = header();
  relocation_ = MS_ARCHIVE_RELOCATE_EAGER;
  const size_t bytes = align_up(file_bytes_, os::page_size());
  // The regions are relocated in anonymous memory filled with pread, never through the file's
  // mapping: a file truncated meanwhile is a short read, not a SIGBUS.
  char* copy = reinterpret_cast<char*>(base_);
  if (os::map_anonymous_over(copy, bytes) != MS_OK) {
    fail(MS_ERR_ARCHIVE_IO, "archive: %zu bytes of memory for the relocated copy: %s", bytes,
         ms_last_error_text());
    return false;
  }
  // Relocation writes nearly every page: one call faults them all in. A hint only.
  (void)os::populate_for_write(copy, bytes);
  if (!read_exact(fd, copy, file_bytes_, 0)) return false;
  // The copy is the file as checked only if the file did not change meanwhile: the header and the
  // bitmaps and roots are compared, the rest is the caller's fstat check's.
  if (std::memcmp(copy, &h, sizeof h) != 0 ||
      std::memcmp(copy + data_end(h), tail_.data(), tail_.size()) != 0) {
    fail(MS_ERR_ARCHIVE_CHANGED, "archive: the file changed while it was being read");
    return false;
  }
  const uint64_t low = h.requested_base + data_begin(h), high = h.requested_base + data_end(h);
  const auto* pbits = reinterpret_cast<const uint64_t*>(tail_.data() + (h.pointer_bitmap.offset - data_end(h)));
  auto* words = reinterpret_cast<uint64_t*>(base_ + data_begin(h));
  return for_each_marked(pbits, 0, h.pointer_bitmap.bytes * 8, [&](uint64_t w) {
    uint64_t value = words[w];
    if (value < low || value >= high) return pointer_outside(h, w, value);
    words[w] = value + static_cast<uint64_t>(delta_);
    return true;
  });
}

void ArchiveMapping::release_class_space_range() {
  if (class_space_bytes_ == 0) return;
  KeepLastError keep;
  if (os::release(reinterpret_cast<char*>(base_ + reserved_bytes_), class_space_bytes_) == MS_OK) {
    class_space_bytes_ = 0;
  }
}

ArchiveMapping::~ArchiveMapping() {
  if (base_ == 0) return;
  // The caller is usually returning its own error (a refusal): ours would replace it.
  KeepLastError keep;
  lazy_.reset();  // the handler stopped before its range goes
  (void)os::release(reinterpret_cast<char*>(base_), reserved_bytes_ + class_space_bytes_);
}

void* ArchiveMapping::root(const char* name) const {
  if (name == nullptr) return nullptr;
  const Header& h = header();
  const auto* roots = reinterpret_cast<const Root*>(tail_.data() + (h.roots.offset - data_end(h)));
  size_t lo = 0, hi = h.root_count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = std::strncmp(name, roots[mid].name, kRootNameBytes);
    if (c == 0) return reinterpret_cast<void*>(base_ + roots[mid].offset);
    if (c < 0) hi = mid; else lo = mid + 1;
  }
  return nullptr;
}

ms_archive_stats_t ArchiveMapping::stats() const {
  const Header& h = header();
  ms_archive_stats_t s{};
  s.mapped = 1;
  s.relocated = delta_ != 0;
  s.base = base_;
  s.requested_base = h.requested_base;
  s.relocation_delta = delta_;
  s.file_bytes = file_bytes_;
  s.reserved_bytes = reserved_bytes_;
  s.class_region_bytes = h.class_region.bytes;
  s.nonclass_region_bytes = h.nonclass_region.bytes;
  s.used_bytes[MS_SPACE_CLASS] = h.class_used_bytes;
  s.used_bytes[MS_SPACE_NONCLASS] = h.nonclass_used_bytes;
  s.pointers = h.pointer_count;
  s.narrow_pointers = h.narrow_count;
  s.roots = h.root_count;
  s.deallocations_ignored = deallocations_ignored_.load(std::memory_order_relaxed);
  if (delta_ != 0) {
    s.relocation = relocation_;
    s.relocation_reason = relocation_reason_.c_str();
  }
  size_t page = os::page_size();
  size_t pages = align_up(file_bytes_, page) / page;
  std::vector<unsigned char> resident(pages);
  if (mincore(reinterpret_cast<void*>(base_), pages * page, resident.data()) == 0) {
    for (unsigned char c : resident) s.resident_bytes += (c & 1) ? page : 0;
  }
  return s;
}

bool ArchiveMapping::verify() const {
  MS_VERIFY(base_ != 0 && base_ % header().root_chunk_bytes == 0,
            "archive mapped at %#zx, not on a root chunk boundary", static_cast<size_t>(base_));
  const Header& h = header();
  MS_VERIFY(std::memcmp(h.magic, kMagic, sizeof kMagic) == 0 && h.file_bytes == file_bytes_,
            "the archive's header copy for %#zx was overwritten", static_cast<size_t>(base_));
  MS_VERIFY(reserved_bytes_ >= file_bytes_ && reserved_bytes_ % h.root_chunk_bytes == 0,
            "reserved %zu bytes for a file of %zu", reserved_bytes_, file_bytes_);
  MS_VERIFY(static_cast<uintptr_t>(delta_) == base_ - h.requested_base,
            "relocation delta %zd does not match base %#zx", static_cast<ssize_t>(delta_),
            static_cast<size_t>(base_));
  MS_VERIFY(delta_ == 0 || relocation_ == MS_ARCHIVE_RELOCATE_EAGER || relocation_ == MS_ARCHIVE_RELOCATE_LAZY,
            "relocated archive with relocation mode %d", relocation_);
  MS_VERIFY((lazy_ != nullptr) == (relocation_ == MS_ARCHIVE_RELOCATE_LAZY),
            "lazy relocation handler %p with relocation mode %d", static_cast<void*>(lazy_.get()), relocation_);
  return true;
}

}  // namespace metaspace::archive
