#include "archive/archive_builder.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "archive/archive_checksum.hpp"
#include "common/error.hpp"
#include "common/units.hpp"
#include "common/verify.hpp"
#include "common/version.hpp"
#include "os/os_memory.hpp"
#include "os/unique_addresses.hpp"

namespace metaspace::archive {

namespace {

void set_bit(std::vector<uint64_t>& bits, size_t i) { bits[i / 64] |= uint64_t{1} << (i % 64); }
bool bit(const std::vector<uint64_t>& bits, size_t i) {
  return i / 64 < bits.size() && (bits[i / 64] >> (i % 64)) & 1;
}
uint64_t popcount(const std::vector<uint64_t>& bits) {
  uint64_t n = 0;
  for (uint64_t w : bits) n += static_cast<uint64_t>(__builtin_popcountll(w));
  return n;
}

ms_error_t write_all(int fd, const char* data, size_t bytes, const char* path) {
  while (bytes > 0) {
    ssize_t n = ::write(fd, data, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail(MS_ERR_ARCHIVE_IO, "archive %s: write failed: %s", path, strerror(errno));
    data += n;
    bytes -= static_cast<size_t>(n);
  }
  return MS_OK;
}

}  // namespace

void* ArchiveBuilder::operator new(size_t bytes) { return os::unique_addresses::take(bytes); }

void ArchiveBuilder::operator delete(void* p, size_t bytes) noexcept {
  os::unique_addresses::give_back(p, bytes);
}

std::unique_ptr<ArchiveBuilder> ArchiveBuilder::create(const BuilderConfig& config) {
  if (!is_power_of_2(config.class_alignment_bytes) || config.class_alignment_bytes < 8 ||
      config.class_alignment_bytes > KiB) {
    fail(MS_ERR_INVALID_ARGUMENT, "archive: class alignment %zu must be a power of 2, 8..1024",
         config.class_alignment_bytes);
    return nullptr;
  }
  if (config.requested_base % config.root_chunk_bytes != 0 || config.requested_base == 0) {
    fail(MS_ERR_INVALID_ARGUMENT, "archive: requested base %#zx must be non-zero and aligned to "
         "the root chunk size %zu", static_cast<size_t>(config.requested_base),
         config.root_chunk_bytes);
    return nullptr;
  }
  std::unique_ptr<ArchiveBuilder> b(new ArchiveBuilder(config));
  b->shift_ = log2_of_power_of_2(config.class_alignment_bytes);
  for (Buffer& buf : b->buffers_) {
    if (os::map_read_write(config.region_capacity_bytes, &buf.base) != MS_OK) return nullptr;
    buf.capacity = config.region_capacity_bytes;
  }
  return b;
}

ArchiveBuilder::~ArchiveBuilder() {
  magic_ = 0;
  for (Buffer& buf : buffers_) {
    if (buf.base != nullptr) (void)os::release(buf.base, buf.capacity);
  }
}

void* ArchiveBuilder::allocate(ms_space_t space, size_t bytes) {
  if (space != MS_SPACE_CLASS && space != MS_SPACE_NONCLASS) {
    fail(MS_ERR_INVALID_ARGUMENT, "archive: space %d is unknown", space);
    return nullptr;
  }
  if (bytes == 0) {
    fail(MS_ERR_INVALID_ARGUMENT, "archive: allocation of 0 bytes");
    return nullptr;
  }
  Buffer& buf = buffers_[space];
  size_t alignment = space == MS_SPACE_CLASS ? config_.class_alignment_bytes : kWordBytes;
  size_t start = align_up(buf.top, alignment);
  if (bytes > buf.capacity || start > buf.capacity - align_up(bytes, kWordBytes)) {
    fail(space == MS_SPACE_CLASS ? MS_ERR_CLASS_SPACE_FULL : MS_ERR_LIMIT,
         "archive: the %s region is full (%zu of %zu bytes used, %zu asked)",
         space == MS_SPACE_CLASS ? "class" : "non-class", buf.top, buf.capacity, bytes);
    return nullptr;
  }
  size_t end = start + align_up(bytes, kWordBytes);
  // Bits for every 4 bytes up to the new top (the vectors may throw bad_alloc: nothing changed yet).
  buf.pointers.resize((end / 8 + 63) / 64);
  buf.narrows.resize((end / 4 + 63) / 64);
  buf.top = end;
  return buf.base + start;
}

int ArchiveBuilder::buffer_of(const void* p, size_t bytes) const {
  auto a = reinterpret_cast<uintptr_t>(p);
  for (int s = 0; s < 2; s++) {
    auto base = reinterpret_cast<uintptr_t>(buffers_[s].base);
    if (a - base < buffers_[s].top && buffers_[s].top - (a - base) >= bytes) return s;
  }
  return -1;
}

ms_error_t ArchiveBuilder::mark_pointer(const void* slot) {
  int s = buffer_of(slot, 8);
  if (s < 0 || !is_aligned(slot, 8)) {
    return fail(MS_ERR_INVALID_ARGUMENT, "archive: pointer slot %p is not an 8-byte aligned word "
                "inside an archived block", slot);
  }
  set_bit(buffers_[s].pointers, static_cast<size_t>(static_cast<const char*>(slot) - buffers_[s].base) / 8);
  return MS_OK;
}

ms_error_t ArchiveBuilder::mark_narrow_class(const void* slot) {
  int s = buffer_of(slot, 4);
  if (s < 0 || !is_aligned(slot, 4)) {
    return fail(MS_ERR_INVALID_ARGUMENT, "archive: narrow class slot %p is not a 4-byte aligned "
                "slot inside an archived block", slot);
  }
  set_bit(buffers_[s].narrows, static_cast<size_t>(static_cast<const char*>(slot) - buffers_[s].base) / 4);
  return MS_OK;
}

uint32_t ArchiveBuilder::encode_class(const void* klass) const {
  if (klass == nullptr) return 0;
  const Buffer& cl = buffers_[MS_SPACE_CLASS];
  size_t offset = static_cast<size_t>(reinterpret_cast<uintptr_t>(klass) -
                                      reinterpret_cast<uintptr_t>(cl.base));
  if (buffer_of(klass, 1) != MS_SPACE_CLASS || offset % config_.class_alignment_bytes != 0) {
    fail(MS_ERR_INVALID_ARGUMENT, "archive: %p is not a class block of this archive", klass);
    return 0;
  }
  return static_cast<uint32_t>((kHeaderBytes + offset) >> shift_);
}

ms_error_t ArchiveBuilder::set_root(const char* name, const void* block) {
  if (name == nullptr || name[0] == '\0' || std::strlen(name) >= kRootNameBytes) {
    return fail(MS_ERR_INVALID_ARGUMENT, "archive: a root needs a name of 1..%zu bytes",
                kRootNameBytes - 1);
  }
  int s = buffer_of(block, 1);
  if (s < 0) {
    return fail(MS_ERR_INVALID_ARGUMENT, "archive: root '%s': %p is not inside an archived block",
                name, block);
  }
  if (roots_.size() >= kMaxRoots && roots_.find(name) == roots_.end()) {
    return fail(MS_ERR_LIMIT, "archive: at most %zu roots", kMaxRoots);
  }
  roots_[name] = {s, static_cast<size_t>(static_cast<const char*>(block) - buffers_[s].base)};
  return MS_OK;
}

bool ArchiveBuilder::file_offset_of(uintptr_t p, const uint64_t region_offset[2],
                                    uint64_t* out) const {
  int s = buffer_of(reinterpret_cast<const void*>(p), 1);
  if (s < 0) return false;
  *out = region_offset[s] + (p - reinterpret_cast<uintptr_t>(buffers_[s].base));
  return true;
}

ms_error_t ArchiveBuilder::write(const char* path) {
  if (path == nullptr || path[0] == '\0') return fail(MS_ERR_INVALID_ARGUMENT, "archive: no path");
  const Buffer& cl = buffers_[MS_SPACE_CLASS];
  const Buffer& nc = buffers_[MS_SPACE_NONCLASS];
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof h.magic);
  h.format_version = kFormatVersion;
  h.header_struct_bytes = sizeof(Header);
  std::snprintf(h.library_version, sizeof h.library_version, "%s", kLibraryVersion);
  h.requested_base = config_.requested_base;
  h.class_alignment_bytes = config_.class_alignment_bytes;
  h.class_space_bytes = config_.class_space_bytes;
  h.root_chunk_bytes = config_.root_chunk_bytes;
  h.class_region = {kHeaderBytes, align_up(cl.top, kHeaderBytes)};
  h.nonclass_region = {kHeaderBytes + h.class_region.bytes, align_up(nc.top, kHeaderBytes)};
  h.class_used_bytes = cl.top;
  h.nonclass_used_bytes = nc.top;
  uint64_t data_bytes = data_end(h) - data_begin(h);
  h.pointer_bitmap = {data_end(h), pointer_bitmap_bytes_for(data_bytes)};
  h.narrow_bitmap = {h.pointer_bitmap.offset + h.pointer_bitmap.bytes,
                     narrow_bitmap_bytes_for(data_bytes)};
  h.root_count = roots_.size();
  h.roots = {h.narrow_bitmap.offset + h.narrow_bitmap.bytes, roots_.size() * sizeof(Root)};
  h.file_bytes = h.roots.offset + h.roots.bytes;

  std::vector<char> image(h.file_bytes);
  const uint64_t region_offset[2] = {h.nonclass_region.offset, h.class_region.offset};
  static_assert(MS_SPACE_NONCLASS == 0 && MS_SPACE_CLASS == 1);
  std::memcpy(image.data() + h.class_region.offset, cl.base, cl.top);
  std::memcpy(image.data() + h.nonclass_region.offset, nc.base, nc.top);

  // The bitmaps over the data range, pointers rewritten to their mapped addresses.
  std::vector<uint64_t> pointers(h.pointer_bitmap.bytes / 8), narrows(h.narrow_bitmap.bytes / 8);
  for (int s = 0; s < 2; s++) {
    const Buffer& buf = buffers_[s];
    uint64_t word0 = (region_offset[s] - data_begin(h)) / 8;
    for (size_t w = 0; w < buf.top / 8; w++) {
      if (!bit(buf.pointers, w)) continue;
      char* slot = image.data() + region_offset[s] + w * 8;
      uint64_t value;
      std::memcpy(&value, slot, 8);
      if (value == 0) continue;  // NULL stays NULL wherever the archive goes: no bit
      uint64_t target = 0;
      if (!file_offset_of(value, region_offset, &target)) {
        return fail(MS_ERR_INVALID_ARGUMENT, "archive: the pointer slot %p holds %#llx, which is "
                    "neither NULL nor inside an archived block", (void*)(buf.base + w * 8),
                    static_cast<unsigned long long>(value));
      }
      value = h.requested_base + target;
      std::memcpy(slot, &value, 8);
      set_bit(pointers, word0 + w);
    }
    uint64_t slot0 = (region_offset[s] - data_begin(h)) / 4;
    for (size_t n = 0; n < buf.top / 4; n++) {
      if (!bit(buf.narrows, n)) continue;
      uint32_t value;
      std::memcpy(&value, buf.base + n * 4, 4);
      if (value == 0) continue;
      uint64_t offset = uint64_t{value} << shift_;
      if (offset < h.class_region.offset || offset >= h.class_region.offset + cl.top) {
        return fail(MS_ERR_INVALID_ARGUMENT, "archive: the narrow class slot %p holds %#x, which "
                    "names no archived class block", (void*)(buf.base + n * 4), value);
      }
      set_bit(narrows, slot0 + n);
    }
  }
  h.pointer_count = popcount(pointers);
  h.narrow_count = popcount(narrows);
  std::memcpy(image.data() + h.pointer_bitmap.offset, pointers.data(), h.pointer_bitmap.bytes);
  std::memcpy(image.data() + h.narrow_bitmap.offset, narrows.data(), h.narrow_bitmap.bytes);
  char* root_out = image.data() + h.roots.offset;
  for (const auto& [name, where] : roots_) {
    Root r{};
    std::memcpy(r.name, name.c_str(), name.size());
    r.offset = region_offset[where.first] + where.second;
    std::memcpy(root_out, &r, sizeof r);
    root_out += sizeof r;
  }
  h.data_checksum = checksum_of(image.data() + data_begin(h), data_bytes);
  std::memcpy(image.data(), &h, sizeof h);
  Checksum meta;
  meta.add(image.data() + kMetaChecksumFrom, sizeof(Header) - kMetaChecksumFrom);
  meta.add(image.data() + data_end(h), h.file_bytes - data_end(h));
  h.meta_checksum = meta.value();
  std::memcpy(image.data(), &h, sizeof h);

  std::string tmp = std::string(path) + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return fail(MS_ERR_ARCHIVE_IO, "archive %s: cannot create: %s", tmp.c_str(), strerror(errno));
  }
  ms_error_t e = write_all(fd, image.data(), image.size(), tmp.c_str());
  if (::close(fd) != 0 && e == MS_OK) {
    e = fail(MS_ERR_ARCHIVE_IO, "archive %s: close failed: %s", tmp.c_str(), strerror(errno));
  }
  if (e == MS_OK && ::rename(tmp.c_str(), path) != 0) {
    e = fail(MS_ERR_ARCHIVE_IO, "archive %s: rename failed: %s", path, strerror(errno));
  }
  if (e != MS_OK) ::unlink(tmp.c_str());
  return e;
}

bool ArchiveBuilder::verify() const {
  MS_VERIFY(valid_handle(), "archive builder %p: bad magic", (const void*)this);
  for (int s = 0; s < 2; s++) {
    const Buffer& b = buffers_[s];
    MS_VERIFY(b.base != nullptr && b.top <= b.capacity && b.top % kWordBytes == 0,
              "region %d: top %zu, capacity %zu", s, b.top, b.capacity);
    MS_VERIFY(b.pointers.size() * 64 * 8 >= b.top && b.narrows.size() * 64 * 4 >= b.top,
              "region %d: bitmaps shorter than the %zu bytes handed out", s, b.top);
  }
  for (const auto& [name, where] : roots_) {
    MS_VERIFY(where.second < buffers_[where.first].top, "root '%s' beyond its region", name.c_str());
  }
  return true;
}

}  // namespace metaspace::archive
