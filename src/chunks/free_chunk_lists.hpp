// One list of free chunks per level. Fully committed chunks are kept at the front and the others
// at the back, so "a committed chunk of level L" is a look at one list head.
#pragma once

#include <cstddef>
#include <vector>

#include "chunks/chunk.hpp"

namespace metaspace {

class FreeChunkLists {
 public:
  explicit FreeChunkLists(int levels) : lists_(static_cast<size_t>(levels)) {}

  void add(Chunk* c);
  void remove(Chunk* c);

  // The first chunk of `level` with at least `min_committed_bytes` (and at least one byte)
  // committed, or null.
  Chunk* find_committed(int level, size_t min_committed_bytes) const;
  Chunk* first(int level) const { return lists_[static_cast<size_t>(level)].head; }

  size_t count(int level) const { return lists_[static_cast<size_t>(level)].count; }
  size_t count() const { return total_count_; }
  size_t bytes() const { return total_bytes_; }
  int levels() const { return static_cast<int>(lists_.size()); }

  bool verify() const;

 private:
  struct List {
    Chunk* head = nullptr;
    Chunk* tail = nullptr;
    size_t count = 0;
  };
  std::vector<List> lists_;
  size_t total_count_ = 0;
  size_t total_bytes_ = 0;
};

}  // namespace metaspace
