// One list of free chunks per level, in three parts: fully committed chunks first, then chunks
// holding some committed memory, then chunks holding none. "A committed chunk of level L" is a
// look at one list head, and purge visits only the first two parts (up to dirty_tail), so its
// cost follows the committed memory it can return, not the number of free chunks (which after
// many loaders died in random order can be large: buddies of live chunks do not merge).
#pragma once

#include <cstddef>
#include <vector>

#include "chunks/chunk.hpp"
#include "vspace/virtual_space_list.hpp"

namespace metaspace {

class FreeChunkLists {
 public:
  // `vslist`: where a chunk whose committed prefix is not all of it looks up its commit mask
  // (the node holding it), to be filed among the chunks that hold committed memory; without it
  // (unit tests of the lists alone) the prefix decides.
  explicit FreeChunkLists(int levels, const VirtualSpaceList* vslist = nullptr)
      : lists_(static_cast<size_t>(levels)), vslist_(vslist) {}

  void add(Chunk* c);
  void remove(Chunk* c);

  // The first chunk of `level` with at least `min_committed_bytes` (and at least one byte)
  // committed, or null.
  Chunk* find_committed(int level, size_t min_committed_bytes) const;
  Chunk* first(int level) const { return lists_[static_cast<size_t>(level)].head; }
  // The last chunk of `level` that held committed memory when it was filed (all before it did
  // too), or null.
  Chunk* last_committed(int level) const {
    return lists_[static_cast<size_t>(level)].dirty_tail;
  }

  size_t count(int level) const { return lists_[static_cast<size_t>(level)].count; }
  size_t count() const { return total_count_; }
  size_t bytes() const { return total_bytes_; }
  int levels() const { return static_cast<int>(lists_.size()); }

  bool verify() const;

 private:
  struct List {
    Chunk* head = nullptr;
    Chunk* tail = nullptr;
    Chunk* dirty_tail = nullptr;
    size_t count = 0;
  };
  bool holds_committed(const Chunk* c) const;

  std::vector<List> lists_;
  const VirtualSpaceList* const vslist_;
  size_t total_count_ = 0;
  size_t total_bytes_ = 0;
};

}  // namespace metaspace
