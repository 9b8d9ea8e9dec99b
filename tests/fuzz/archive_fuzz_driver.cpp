#include "fuzz/archive_fuzz_driver.hpp"

#include <metaspace/metaspace.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "archive/archive_checksum.hpp"
#include "archive/archive_format.hpp"

namespace metaspace::fuzz {

namespace {

#define FUZZ_CHECK(cond)                                                              \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      std::fprintf(stderr, "archive fuzz: %s failed: %s\n", #cond, ms_last_error_text()); \
      std::abort();                                                                   \
    }                                                                                 \
  } while (0)

ms_settings_t fuzz_settings() {
  ms_settings_t s;
  ms_settings_init(&s);
  s.class_space_bytes = 16u << 20;
  s.class_alignment_bytes = 64;
  s.archive_policy = MS_ARCHIVE_AUTO;
  return s;
}

// A small valid archive: classes with a super pointer and a narrow self pointer, methods pointing
// back; built once per process.
const std::vector<uint8_t>& valid_archive() {
  static std::vector<uint8_t> bytes = [] {
    ms_settings_t s = fuzz_settings();
    ms_archive_builder_t* b = ms_archive_begin(&s, 0);
    FUZZ_CHECK(b != nullptr);
    void** prev = nullptr;
    for (int i = 0; i < 12; i++) {
      auto** k = static_cast<void**>(ms_archive_allocate(b, MS_SPACE_CLASS, 96));
      auto** m = static_cast<void**>(ms_archive_allocate(b, MS_SPACE_NONCLASS, 40));
      FUZZ_CHECK(k != nullptr && m != nullptr);
      k[0] = prev;
      k[1] = m;
      m[0] = k;
      uint32_t narrow = ms_archive_encode_class(b, k);
      std::memcpy(&m[1], &narrow, 4);
      FUZZ_CHECK(ms_archive_mark_pointer(b, &k[0]) == MS_OK);
      FUZZ_CHECK(ms_archive_mark_pointer(b, &k[1]) == MS_OK);
      FUZZ_CHECK(ms_archive_mark_pointer(b, &m[0]) == MS_OK);
      FUZZ_CHECK(ms_archive_mark_narrow_class(b, &m[1]) == MS_OK);
      char name[16];
      std::snprintf(name, sizeof name, "k%d", i);
      FUZZ_CHECK(ms_archive_set_root(b, name, k) == MS_OK);
      prev = k;
    }
    char path[] = "/tmp/ms_archive_fuzz_XXXXXX";
    int fd = mkstemp(path);
    FUZZ_CHECK(fd >= 0);
    close(fd);
    FUZZ_CHECK(ms_archive_write(b, path) == MS_OK);
    ms_archive_discard(b);
    FILE* f = std::fopen(path, "rb");
    std::vector<uint8_t> out;
    int c;
    while ((c = std::fgetc(f)) != EOF) out.push_back(static_cast<uint8_t>(c));
    std::fclose(f);
    unlink(path);
    return out;
  }();
  return bytes;
}

void reseal(std::vector<uint8_t>& bytes) {
  archive::Header h;
  if (bytes.size() < sizeof h) return;
  std::memcpy(&h, bytes.data(), sizeof h);
  if (archive::data_begin(h) > archive::data_end(h) || archive::data_end(h) > bytes.size()) return;
  h.data_checksum = archive::checksum_of(bytes.data() + archive::data_begin(h),
                                         archive::data_end(h) - archive::data_begin(h));
  std::memcpy(bytes.data(), &h, sizeof h);
  archive::Checksum meta;
  meta.add(bytes.data() + archive::kMetaChecksumFrom, sizeof h - archive::kMetaChecksumFrom);
  meta.add(bytes.data() + archive::data_end(h), bytes.size() - archive::data_end(h));
  h.meta_checksum = meta.value();
  std::memcpy(bytes.data(), &h, sizeof h);
}

bool file_is_mapped(const std::string& path) {
  FILE* maps = std::fopen("/proc/self/maps", "r");
  char line[512];
  bool found = false;
  while (maps != nullptr && std::fgets(line, sizeof line, maps) != nullptr) {
    if (std::strstr(line, path.c_str()) != nullptr) found = true;
  }
  if (maps != nullptr) std::fclose(maps);
  return found;
}

void discard(void*, const char*, size_t) {}

}  // namespace

// archive_path naming no regular file: a FIFO without a writer (opening it used to block for
// ever), a symlink to one, a directory, a character device. Refused with MS_ERR_ARCHIVE_IO under
// both policies, at once.
void run_special_file(uint8_t which) {
  char dir[] = "/tmp/ms_archive_fuzz_dir_XXXXXX";
  FUZZ_CHECK(mkdtemp(dir) != nullptr);
  std::string fifo = std::string(dir) + "/fifo";
  std::string link = std::string(dir) + "/link";
  FUZZ_CHECK(mkfifo(fifo.c_str(), 0600) == 0);
  FUZZ_CHECK(symlink(fifo.c_str(), link.c_str()) == 0);
  const std::string paths[] = {fifo, link, dir, "/dev/null", "/dev/zero"};
  const std::string& path = paths[which % 5];
  ms_settings_t s = fuzz_settings();
  s.archive_path = path.c_str();
  s.archive_policy = (which & 8) ? MS_ARCHIVE_REQUIRE : MS_ARCHIVE_AUTO;
  alarm(30);  // a hang is a failure, not a stuck run
  ms_metaspace_t* ms = ms_create(&s);
  alarm(0);
  if (s.archive_policy == MS_ARCHIVE_REQUIRE) {
    FUZZ_CHECK(ms == nullptr && ms_last_error() == MS_ERR_ARCHIVE_IO);
  } else {
    FUZZ_CHECK(ms != nullptr);
    FUZZ_CHECK(ms_archive_status(ms, nullptr) == MS_ERR_ARCHIVE_IO);
    FUZZ_CHECK(ms_verify(ms) == MS_OK);
    ms_destroy(ms);
  }
  unlink(link.c_str());
  unlink(fifo.c_str());
  rmdir(dir);
}

// Input: byte 0 selects the mode (bit 0: edit the valid archive rather than use the bytes raw;
// bit 1: recompute the checksums after the edits; bit 2: no full verification; bit 3: a special
// file instead, byte 1 choosing it; bit 4: another thread truncates the file while ms_create
// reads it, byte 1 choosing how far and when); then, editing, records of 4 bytes: a 24-bit
// offset into the file (modulo its size) and a byte to xor there; a record with offset 0xFFFFFF
// truncates the file at the xor byte's share of its size.
ArchiveRunStats run_archive_input(const uint8_t* data, size_t size) {
  ArchiveRunStats result;
  if (size == 0) return result;
  uint8_t mode = data[0];
  if (mode & 8) {
    run_special_file(size > 1 ? data[1] : 0);
    result.refusal = MS_ERR_ARCHIVE_IO;
    return result;
  }
  const bool truncate_meanwhile = (mode & 16) != 0;
  const uint8_t truncation = size > 1 ? data[1] : 0;
  std::vector<uint8_t> file;
  if ((mode & 1) == 0) {
    file.assign(data + 1, data + size);
  } else {
    file = valid_archive();
    for (size_t i = 1; i + 4 <= size; i += 4) {
      uint32_t offset = data[i] | (uint32_t{data[i + 1]} << 8) | (uint32_t{data[i + 2]} << 16);
      if (offset == 0xFFFFFF) {
        file.resize(file.size() * data[i + 3] / 256);
      } else if (!file.empty()) {
        file[offset % file.size()] ^= data[i + 3];
      }
    }
    if (mode & 2) reseal(file);
  }
  char path[] = "/tmp/ms_archive_fuzz_in_XXXXXX";
  int fd = mkstemp(path);
  FUZZ_CHECK(fd >= 0);
  FUZZ_CHECK(file.empty() || write(fd, file.data(), file.size()) == static_cast<ssize_t>(file.size()));
  close(fd);
  ms_settings_t s = fuzz_settings();
  s.archive_path = path;
  s.archive_verify = (mode & 4) ? 0 : 1;
  // Truncated by another thread after up to ~250 us (ms_create of the small archive takes about
  // that): no signal may leave the library; what it maps after the truncation is not read here.
  std::thread truncator;
  if (truncate_meanwhile) {
    truncator = std::thread([&path, &file, truncation] {
      std::this_thread::sleep_for(std::chrono::microseconds((truncation & 0x1F) * 8));
      (void)::truncate(path, static_cast<off_t>(file.size() * (truncation >> 5) / 8));
    });
  }
  ms_metaspace_t* ms = ms_create(&s);
  if (truncator.joinable()) truncator.join();
  FUZZ_CHECK(ms != nullptr);
  if (truncate_meanwhile) {
    const char* why = nullptr;
    ms_error_t status = ms_archive_status(ms, &why);
    FUZZ_CHECK(status == MS_OK || status == MS_ERR_ARCHIVE_CHANGED || status == MS_ERR_ARCHIVE_FORMAT ||
               status == MS_ERR_ARCHIVE_CHECKSUM || status == MS_ERR_ARCHIVE_VERSION ||
               status == MS_ERR_ARCHIVE_MISMATCH || status == MS_ERR_ARCHIVE_IO);
    if (status != MS_OK) FUZZ_CHECK(!file_is_mapped(path));
    result.mapped = status == MS_OK;
    result.refusal = status;
    FUZZ_CHECK(ms_verify(ms) == MS_OK);
    ms_destroy(ms);
    unlink(path);
    FUZZ_CHECK(!file_is_mapped(path));
    return result;
  }
  const char* reason = nullptr;
  ms_error_t status = ms_archive_status(ms, &reason);
  ms_stats_t st;
  FUZZ_CHECK(ms_get_stats(ms, &st) == MS_OK);
  FUZZ_CHECK((status == MS_OK) == (st.archive.mapped == 1));
  if (status != MS_OK) FUZZ_CHECK(!file_is_mapped(path));
  result.mapped = status == MS_OK;
  result.refusal = status;
  if (result.mapped) {
    void* root = ms_archive_root(ms, "k0");
    FUZZ_CHECK(root == nullptr || ms_is_archived(ms, root));
    ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
    void* k = ms_allocate(l, MS_SPACE_CLASS, 100);
    FUZZ_CHECK(k != nullptr && ms_decode_class(ms, ms_encode_class(ms, k)) == k);
  }
  FUZZ_CHECK(ms_verify(ms) == MS_OK);
  FUZZ_CHECK(ms_print_report_cb(ms, discard, nullptr, nullptr) == MS_OK);
  FUZZ_CHECK(ms_write_report_json_cb(ms, discard, nullptr, nullptr) == MS_OK);
  ms_destroy(ms);
  unlink(path);
  FUZZ_CHECK(!file_is_mapped(path));
  return result;
}

}  // namespace metaspace::fuzz
