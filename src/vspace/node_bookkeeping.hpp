// Layer 3: a node's own bookkeeping, in one range the library maps itself (os layer) and counts.
//
// A node needs, besides its reserved range: the commit mask (a bit per granule), a flag per root
// chunk area (made read-write), and the chunk start table (a 4-byte slot per smallest chunk, for
// O(1) address → chunk) with a use count per table page. All of it lies in one reservation per
// node, made read-write at once (one kernel mapping, as the chunk start table's own mmap was
// before):
//
//   [ header: area flags | table page states | mask words | root slots ]  [ chunk start slots ... ]
//   base_                                                    slots_ (page-aligned)
//
// The header is counted a page at a time as it is first written (touch(), called by the node
// before it writes mask words or an area flag and by the chunk start table before it writes a
// page state): 1 page for a 64 MiB node at 4 KiB granules (16 flags, 64 page states, 2 KiB of
// mask); of a 1 GiB class space's 9 pages (256 flags, 2 KiB of page states, 32 KiB of mask) only
// those under the part in use: 1 while under 56 MiB are used (counting all of it, with the start
// table's pages, would keep two of the lab's smallest real traces above footprint/live 1.05; the
// flags and states come before the mask so that they share its first page). The slots are counted
// a page at a time while the page holds a chunk start or waits for a purge (ChunkStartTable).
// Everything goes back when the node dies: the counter drops by what it held and the range is
// unmapped.
//
// `committed` (the space's bookkeeping counter, read lock-free by ms_get_usage) follows both.
#pragma once

#include <metaspace/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace metaspace {

struct Chunk;

class NodeBookkeeping {
 public:
  struct Layout {
    size_t range_bytes;    // the node's reserved range
    size_t granule_bytes;  // commit granule
    size_t root_bytes;     // root chunk area
    size_t unit_bytes;     // smallest chunk: one chunk start slot each
  };

  NodeBookkeeping() = default;
  ~NodeBookkeeping();
  NodeBookkeeping(const NodeBookkeeping&) = delete;
  NodeBookkeeping& operator=(const NodeBookkeeping&) = delete;

  // Maps and counts the range. MS_OK, or MS_ERR_OUT_OF_MEMORY (the kBookkeeping fault point) or
  // MS_ERR_RESERVE_FAILED from the os layer, with nothing held.
  ms_error_t init(const Layout& layout, std::atomic<size_t>* committed);

  uint64_t* mask_words() const { return mask_words_; }
  uint8_t* area_flags() const { return area_flags_; }
  uint16_t* table_page_states() const { return page_states_; }
  // One chunk start slot per root area, for a chunk that is the whole area (ChunkStartTable).
  uint32_t* root_slots() const { return root_slots_; }
  // Chunk start slots (ChunkStartTable::Slot), one per unit of the range (all 0 at first),
  // page-aligned.
  uint32_t* slots() const { return slots_; }
  size_t slot_bytes() const { return slot_bytes_; }
  // Header bytes counted (its pages written so far).
  size_t header_bytes() const { return counted_header_bytes_; }
  // [p, p + bytes) of the header is about to be written: counts the pages not counted yet.
  void touch(const void* p, size_t bytes) {
    size_t first = static_cast<size_t>(static_cast<const char*>(p) - base_) >> page_shift_;
    size_t last = static_cast<size_t>(static_cast<const char*>(p) + bytes - 1 - base_) >>
                  page_shift_;
    for (size_t i = first; i <= last; i++) {
      if ((touched_[i / 64] >> (i % 64) & 1) == 0) count_page(i);
    }
  }
  std::atomic<size_t>* committed_counter() const { return committed_; }

 private:
  char* base_ = nullptr;
  void count_page(size_t index);
  static constexpr size_t kTrackedPages = 256;  // a larger header is counted whole at once

  size_t header_bytes_ = 0;
  size_t counted_header_bytes_ = 0;
  unsigned page_shift_ = 0;
  uint64_t touched_[kTrackedPages / 64] = {};
  size_t slot_bytes_ = 0;
  uint64_t* mask_words_ = nullptr;
  uint8_t* area_flags_ = nullptr;
  uint16_t* page_states_ = nullptr;
  uint32_t* root_slots_ = nullptr;
  uint32_t* slots_ = nullptr;
  std::atomic<size_t>* committed_ = nullptr;
};

}  // namespace metaspace
