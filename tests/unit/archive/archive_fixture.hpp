// A small class graph dumped into an archive and checked after mapping: what a runtime would put
// there (Klass-like blocks in the class region pointing at their methods and super class,
// methods pointing back at their holder by full and by narrow pointer), the file in a temporary
// directory, and free addresses to ask for (so that "not relocated" does not depend on luck).
#pragma once

#include <gtest/gtest.h>
#include <metaspace/metaspace.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "support/ms_assertions.hpp"

namespace metaspace::test {

struct ArchivedKlass {
  uint64_t id;
  ArchivedKlass* super;
  struct ArchivedMethod* methods;
  uint32_t narrow_self;
  uint32_t method_count;
};

struct ArchivedMethod {
  uint64_t id;
  ArchivedKlass* holder;
  ArchivedMethod* next;
  uint32_t narrow_holder;
  uint32_t unused;
};

inline ms_settings_t archive_settings(size_t class_alignment = 64) {
  ms_settings_t s;
  ms_settings_init(&s);
  s.class_space_bytes = 64 << 20;
  s.class_alignment_bytes = class_alignment;
  s.archive_policy = MS_ARCHIVE_REQUIRE;
  return s;
}

// An address where `bytes` are free now, aligned to 4 MiB (the root chunk size).
inline uintptr_t free_address(size_t bytes) {
  const size_t align = 4u << 20;
  void* p = mmap(nullptr, bytes + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  EXPECT_NE(p, MAP_FAILED);
  uintptr_t a = (reinterpret_cast<uintptr_t>(p) + align - 1) & ~(uintptr_t)(align - 1);
  munmap(p, bytes + align);
  return a;
}

// Someone else sits at `base` (1 MiB, no access) while it lives: an archive asking for that base
// must be relocated.
class BaseSquatter {
 public:
  explicit BaseSquatter(uintptr_t base)
      : p_(mmap(reinterpret_cast<void*>(base), kBytes, PROT_NONE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0)) {}
  ~BaseSquatter() { release(); }
  BaseSquatter(const BaseSquatter&) = delete;
  BaseSquatter& operator=(const BaseSquatter&) = delete;
  bool holds(uintptr_t base) const { return p_ == reinterpret_cast<void*>(base); }
  void release() {
    if (p_ != MAP_FAILED && p_ != nullptr) munmap(p_, kBytes);
    p_ = nullptr;
  }

 private:
  static constexpr size_t kBytes = 1 << 20;
  void* p_;
};

class TempDir {
 public:
  TempDir() {
    char templ[] = "/tmp/ms_archive_XXXXXX";
    path_ = mkdtemp(templ);
  }
  ~TempDir() { std::system(("rm -rf " + path_).c_str()); }
  std::string file(const char* name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Dumps `classes` classes with `methods` methods each; roots "first" and "last".
inline void dump_graph(ms_archive_builder_t* b, size_t classes, size_t methods,
                       size_t klass_bytes = 576) {
  ArchivedKlass* prev = nullptr;
  for (size_t i = 0; i < classes; i++) {
    auto* k = static_cast<ArchivedKlass*>(ms_archive_allocate(b, MS_SPACE_CLASS, klass_bytes));
    ASSERT_NE(k, nullptr) << ms_last_error_text();
    k->id = i;
    k->super = prev;
    ASSERT_MS_OK(ms_archive_mark_pointer(b, &k->super));
    k->narrow_self = ms_archive_encode_class(b, k);
    ASSERT_NE(k->narrow_self, 0u) << ms_last_error_text();
    ASSERT_MS_OK(ms_archive_mark_narrow_class(b, &k->narrow_self));
    k->method_count = static_cast<uint32_t>(methods);
    ArchivedMethod* next = nullptr;
    for (size_t m = 0; m < methods; m++) {
      auto* me = static_cast<ArchivedMethod*>(ms_archive_allocate(b, MS_SPACE_NONCLASS, 88));
      ASSERT_NE(me, nullptr);
      me->id = i * 1000 + m;
      me->holder = k;
      me->next = next;
      me->narrow_holder = k->narrow_self;
      ASSERT_MS_OK(ms_archive_mark_pointer(b, &me->holder));
      ASSERT_MS_OK(ms_archive_mark_pointer(b, &me->next));
      ASSERT_MS_OK(ms_archive_mark_narrow_class(b, &me->narrow_holder));
      next = me;
    }
    k->methods = next;
    ASSERT_MS_OK(ms_archive_mark_pointer(b, &k->methods));
    if (i == 0) ASSERT_MS_OK(ms_archive_set_root(b, "first", k));
    prev = k;
  }
  ASSERT_MS_OK(ms_archive_set_root(b, "last", prev));
}

inline void write_graph(const std::string& path, const ms_settings_t& s, uintptr_t base,
                        size_t classes, size_t methods) {
  ms_archive_builder_t* b = ms_archive_begin(&s, base);
  ASSERT_NE(b, nullptr) << ms_last_error_text();
  dump_graph(b, classes, methods);
  ASSERT_MS_OK(ms_archive_write(b, path.c_str()));
  ms_archive_discard(b);
}

// The graph dumped at a free base into dir/a.msa and mapped with `s` (ms null on failure, the
// error recorded).
struct MappedGraph {
  std::string path;
  uintptr_t base;
  ms_metaspace_t* ms;
};

inline MappedGraph dump_and_map(const TempDir& dir, ms_settings_t s, size_t classes,
                                size_t methods) {
  MappedGraph g{dir.file("a.msa"), free_address(256u << 20), nullptr};
  write_graph(g.path, s, g.base, classes, methods);
  s.archive_path = g.path.c_str();
  g.ms = ms_create(&s);
  return g;
}

// Walks the graph from "last" to "first" through the mapped archive: every pointer, narrow
// pointer and root as dumped.
inline void check_graph(ms_metaspace_t* ms, size_t classes, size_t methods) {
  auto* last = static_cast<ArchivedKlass*>(ms_archive_root(ms, "last"));
  auto* first = static_cast<ArchivedKlass*>(ms_archive_root(ms, "first"));
  ASSERT_NE(last, nullptr) << ms_last_error_text();
  ASSERT_NE(first, nullptr);
  size_t seen = 0;
  for (ArchivedKlass* k = last; k != nullptr; k = k->super) {
    ASSERT_EQ(k->id, classes - 1 - seen);
    ASSERT_TRUE(ms_is_archived(ms, k));
    ASSERT_EQ(ms_encode_class(ms, k), k->narrow_self);
    ASSERT_EQ(ms_decode_class(ms, k->narrow_self), k);
    size_t m = 0;
    for (ArchivedMethod* me = k->methods; me != nullptr; me = me->next, m++) {
      ASSERT_TRUE(ms_is_archived(ms, me));
      ASSERT_EQ(me->holder, k);
      ASSERT_EQ(ms_decode_class(ms, me->narrow_holder), k);
    }
    ASSERT_EQ(m, methods);
    if (k->super == nullptr) ASSERT_EQ(k, first);
    seen++;
  }
  ASSERT_EQ(seen, classes);
}

struct FileMemory {
  size_t rss_kib = 0;
  size_t pss_kib = 0;
};

// Rss and Pss of this process's mappings of `path` (/proc/self/smaps): the pages this process
// has in its page tables, unlike mincore, which tells what of the file is in the page cache.
inline FileMemory file_memory(const std::string& path) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool ours = false;
  FileMemory m;
  while (std::getline(smaps, line)) {
    if (!line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) &&
        line.find('-') < 16) {
      ours = line.find(path) != std::string::npos;
      continue;
    }
    if (!ours) continue;
    std::istringstream in(line);
    std::string key;
    size_t kib = 0;
    in >> key >> kib;
    if (key == "Rss:") m.rss_kib += kib;
    if (key == "Pss:") m.pss_kib += kib;
  }
  return m;
}

inline std::vector<char> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

inline void write_bytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace metaspace::test
