#include "chunks/free_chunk_lists.hpp"

#include "common/verify.hpp"
#include "vspace/virtual_space_node.hpp"

namespace metaspace {

bool FreeChunkLists::holds_committed(const Chunk* c) const {
  if (c->committed_bytes > 0) return true;
  // The prefix is a lower bound: a merge can join an uncommitted leader to a committed follower.
  const VirtualSpaceNode* node = vslist_ != nullptr ? vslist_->node_containing(c->base) : nullptr;
  return node != nullptr && node->mask().committed_bytes_in(c->base, c->bytes) > 0;
}

void FreeChunkLists::add(Chunk* c) {
  List& l = lists_[static_cast<size_t>(c->level)];
  c->state = Chunk::State::kFree;
  Chunk* after = nullptr;  // insert behind this one; null: at the head
  if (c->fully_committed()) {
    if (l.dirty_tail == nullptr) l.dirty_tail = c;
  } else if (holds_committed(c)) {
    after = l.dirty_tail;
    l.dirty_tail = c;
  } else {
    after = l.tail;
  }
  c->prev = after;
  c->next = after != nullptr ? after->next : l.head;
  if (c->next != nullptr) c->next->prev = c; else l.tail = c;
  if (after != nullptr) after->next = c; else l.head = c;
  l.count++;
  total_count_++;
  total_bytes_ += c->bytes;
}

void FreeChunkLists::remove(Chunk* c) {
  List& l = lists_[static_cast<size_t>(c->level)];
  if (l.dirty_tail == c) l.dirty_tail = c->prev;  // everything before it holds memory too
  if (c->prev != nullptr) c->prev->next = c->next; else l.head = c->next;
  if (c->next != nullptr) c->next->prev = c->prev; else l.tail = c->prev;
  c->prev = c->next = nullptr;
  l.count--;
  total_count_--;
  total_bytes_ -= c->bytes;
}

Chunk* FreeChunkLists::find_committed(int level, size_t min_committed_bytes) const {
  Chunk* c = lists_[static_cast<size_t>(level)].head;
  // Only the head needs a look: fully committed chunks come first, and a partly committed head
  // is the best the list has unless it happens to suffice. A chunk with nothing committed is
  // never a committed chunk, even when the caller needs none: else the manager's committed-first
  // passes would take an uncommitted exact fit over a committed neighbour.
  if (c != nullptr && c->committed_bytes > 0 &&
      (c->fully_committed() || c->committed_bytes >= min_committed_bytes)) {
    return c;
  }
  return nullptr;
}

bool FreeChunkLists::verify() const {
  size_t n_total = 0;
  size_t bytes_total = 0;
  for (size_t level = 0; level < lists_.size(); level++) {
    const List& l = lists_[level];
    size_t n = 0;
    bool seen_partial = false;
    bool behind = l.dirty_tail == nullptr;  // past the chunks that hold committed memory
    bool dirty_tail_seen = l.dirty_tail == nullptr;
    Chunk* prev = nullptr;
    for (Chunk* c = l.head; c != nullptr; c = c->next) {
      MS_VERIFY(c->level == static_cast<int>(level), "chunk %p of level %d in list %zu",
                (void*)c->base, c->level, level);
      MS_VERIFY(c->is_free(), "chunk %p in free list is not free", (void*)c->base);
      MS_VERIFY(c->prev == prev, "broken back link at chunk %p", (void*)c->base);
      MS_VERIFY(!(seen_partial && c->fully_committed()),
                "committed chunk %p behind a partly committed one", (void*)c->base);
      if (!c->fully_committed()) seen_partial = true;
      MS_VERIFY(!(behind && c->committed_bytes > 0),
                "chunk %p with committed memory behind the list's uncommitted part",
                (void*)c->base);
      if (c == l.dirty_tail) behind = dirty_tail_seen = true;
      prev = c;
      n++;
      bytes_total += c->bytes;
    }
    MS_VERIFY(l.tail == prev, "list %zu tail is wrong", level);
    MS_VERIFY(dirty_tail_seen, "list %zu: its last chunk holding memory is not in it", level);
    MS_VERIFY(n == l.count, "list %zu counts %zu, holds %zu", level, l.count, n);
    n_total += n;
  }
  MS_VERIFY(n_total == total_count_, "total count %zu, holds %zu", total_count_, n_total);
  MS_VERIFY(bytes_total == total_bytes_, "total bytes %zu, holds %zu", total_bytes_, bytes_total);
  return true;
}

}  // namespace metaspace
