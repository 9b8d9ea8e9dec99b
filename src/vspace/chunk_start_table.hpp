// Per node: which in-use chunk header starts at each address, for O(1) "block address → chunk".
//
// One slot per smallest chunk (1 KiB) of the node's range; the slot of an in-use chunk's base
// names its header, every other slot is 0 (free chunks record no start). The in-use chunk
// holding p, if any, is the chunk of level L that starts at align_down(p, size(L)) for the right
// L; checking the candidates from the smallest size up, the first non-zero slot is it (every
// smaller candidate lies inside that chunk, where no other chunk starts). If p lies in a free
// chunk, the first non-zero slot (if any) is an in-use chunk before it that ends at or below p:
// the chunk layer checks the chunk's end (ChunkManager::chunk_containing). So a lookup reads at
// most `levels` slots (≤ 17): constant, whatever the chunk's age, the node, or how many chunks
// there are. The chunk layer sets a chunk's start when it hands the chunk out and clears it when
// the chunk comes back (before merging), under its lock; enlarging in place keeps the base.
//
// A slot is 4 bytes: the header's offset from the base of the range chunk headers come from (the
// space's bookkeeping slabs, set_header_base) in 16-byte units, the slab allocator's alignment,
// so headers anywhere in 64 GiB of it can be named (the range is 4 GiB). Half the 8-byte pointer
// slots: a page of slots covers 1 MiB of node instead of 512 KiB, and a lookup decodes with one
// shift and add.
//
// Only in-use chunks, because the pages of slots are overhead: with free chunks' starts recorded
// too, the class space's guard (free 1 MiB and 2 MiB chunks beside it) and every split's free
// halves would keep pages of their own; an empty metaspace keeps 1 start page instead of 4.
//
// Readers do not take that lock (ms_deallocate checks ownership under the loader's lock only):
// slots are read and written atomically, and so is a chunk's size (Chunk::bytes, which the
// lookup compares). A reader asking about its own in-use chunk reads only slots that cannot
// change while it holds the chunk (its base and the zero slots inside it) and a size only its
// own arena changes (enlarging in place). The header base is set before the first start.
//
// The slots lie in the node's bookkeeping range (vspace/node_bookkeeping.hpp), read-write from the
// start, so a page never written reads as zeros and costs nothing: 4 bytes per KiB of node, 256
// KiB of address space for a 64 MiB node, 4 MiB for a 1 GiB class space. A page of slots (1 024
// of them, 1 MiB of node range at 4 KiB pages) is counted as overhead from its first chunk start
// on; once its last one is cleared (the in-use chunks starting there came back) it is given back
// (madvise) by the next purge, or at once with `return_at_once` (the aggressive policy). It reads
// as zeros again, so lock-free readers see no difference. The count of starts per page lives in
// the node's bookkeeping header.
//
// Slot order. Slots in address order put one chunk start per page wherever chunks are large: a
// page of slots covers 1 MiB of node, and at the lab's jdk25-javac-hello worst sample 7 start
// pages served 38 non-class chunks. Within each root area (S pieces of the smallest chunk size, G
// slots per page, R = S / G: 4096, 1024 and 4 for 4 MiB areas of 1 KiB pieces) the first page
// of slots holds the area's first H pieces in address order (H = 896: the first 896 KiB, where
// a small metaspace's chunks all lie) and the pieces beyond them at multiples of 8R (every chunk
// of 32 KiB or more); the other pieces follow in address order (slot_of). Each slot belongs to
// exactly one piece, so lookups, counts and the page bookkeeping do not depend on the order.
// A head of 896 KiB holds the class space's 4 KiB micro pool chunks of the lab's smaller traces
// on the first page; multiples of 8R rather than 16R or 32R keep the class chunks of 32 and 64 KiB
// there too, which a large class space would otherwise pay for; without a head the smallest
// traces' 1 and 2 KiB chunks and their larger ones would lie on two pages instead of one
// (bench/analysis.md, "Moved from code comments", has the replays).
//
// The non-class space orders its slots otherwise (SlotOrder::kAlignedFirst): the first page of an
// area holds its pieces at every multiple of R (4 KiB: every chunk of 4 KiB or more) and no head,
// the others follow in address order. Its chunks are rarely below 4 KiB (standard loaders start
// at 4 KiB, the micro pool's chunks are a granule, the boot loader's are large; only graduated
// micro loaders and some first chunks holding their loader's arenas take 1 or 2 KiB), while the
// class space's often are (micro and standard class chunks of 1 and 2 KiB), so the head serves
// the class space and the multiples of 4 KiB the non-class one (no trace's worst footprint/live
// is worse for it).
//
// Root chunks. An in-use chunk that is a whole root area (level 0: the boot loader's first 4 MiB
// chunk, any loader's chunk grown that large) records its start not in the slots but in a word
// per area in the node's bookkeeping header (root_slots, NodeBookkeeping), which is written
// anyway: a page of slots for one start would be 4 KiB of overhead for every such chunk (the boot
// loader's first chunk would hold a start page of its own). A
// lookup reads that word last, in place of the area's first slot at the root level; a chunk that
// grows to a whole area in place moves its start there (set_root_start: the word first, then the
// slot, so that a lock-free lookup finds one or the other, never neither).
//
// Why not one table per chunk level (a chunk's slot in its own level's table): pages would then
// follow the number of chunks of each level rather than the range they are spread over, but a
// small metaspace would pay a page per level in use in each space (the class space's guard alone
// splits into 10 levels), which keeps the lab's smallest real traces above footprint/live 1.05.
#pragma once

#include <metaspace/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace metaspace {

struct Chunk;  // chunks/chunk.hpp: the table only stores and compares pointers to headers
class NodeBookkeeping;

class ChunkStartTable {
 public:
  ChunkStartTable() = default;
  ~ChunkStartTable();  // uncounts the pages still held (the node unmaps them)
  ChunkStartTable(const ChunkStartTable&) = delete;
  ChunkStartTable& operator=(const ChunkStartTable&) = delete;

  using Slot = uint32_t;
  // Headers lie above the header base, 16-byte aligned, below it + 2^32 units.
  static constexpr unsigned kHeaderShift = 4;
  static constexpr size_t kHeaderRangeBytes = size_t{1} << (32 + kHeaderShift);

  // Slots for [base, base + range_bytes) at `unit_bytes` (the smallest chunk) per slot, chunks at
  // most `root_bytes`. `slots` (zero, read-write, page-aligned) and `page_states` (zero, one per
  // page of slots) come from the node's bookkeeping range `header`, whose counter counts the
  // pages in use.
  // `root_slots` (zero, one per root area) lies in the header too.
  enum class SlotOrder : uint8_t {
    kHeadFirst,     // an area's first 896 KiB and its multiples of 32 KiB on its first page
    kAlignedFirst,  // an area's multiples of 4 KiB on its first page
  };
  // kHeadFirst: the multiples of this many R (slot pages per area) share the head's page.
  static constexpr size_t kHeadFirstStride = 8;
  struct Options {
    bool return_at_once = false;  // give an emptied page back at once, not at the next purge
    SlotOrder order = SlotOrder::kHeadFirst;
  };
  void init(const char* base, size_t range_bytes, size_t unit_bytes, size_t root_bytes,
            Slot* slots, uint16_t* page_states, Slot* root_slots, NodeBookkeeping* header,
            const Options& options);
  // Where the chunk headers come from (the base of the chunk layer's slab range): headers are
  // named by their offset from it. Set once, before the first start.
  void set_header_base(const char* header_base);
  const char* header_base() const { return header_base_; }

  // Caller holds the chunk layer's lock (writers are serialized). The in-use chunk c of
  // `chunk_bytes` starts at chunk_base (a whole root area: in the area's root slot).
  void set(const char* chunk_base, size_t chunk_bytes, Chunk* c);
  void clear(const char* chunk_base);
  // The in-use chunk starting at chunk_base grew in place to a whole root area.
  void set_root_start(const char* chunk_base, Chunk* c);
  Chunk* at(const char* chunk_base) const {
    Slot s = __atomic_load_n(&slots_[index(chunk_base)], __ATOMIC_ACQUIRE);
    if (s == 0 && is_area_base(chunk_base)) {
      s = __atomic_load_n(&root_slots_[area_of(chunk_base)], __ATOMIC_ACQUIRE);
    }
    return decode(s);
  }

  // The header of the in-use chunk starting nearest below p among p's aligned candidates (p
  // inside the range): the in-use chunk holding p if there is one; if p lies in a free chunk or
  // where nothing was carved, null or an in-use chunk that ends at or below p, which the caller
  // tells apart by the chunk's end (ChunkManager::chunk_containing).
  Chunk* find(const void* p) const {
    size_t unit = (reinterpret_cast<uintptr_t>(p) - reinterpret_cast<uintptr_t>(base_)) >>
                  unit_shift_;
    for (unsigned shift = 0; shift < root_shift_ - unit_shift_; shift++) {
      Slot s = __atomic_load_n(&slots_[slot_of(unit >> shift << shift)], __ATOMIC_ACQUIRE);
      if (s != 0) return decode(s);
    }
    // The root level: the area's first slot, or its root slot (a whole-area chunk).
    Slot s = __atomic_load_n(&slots_[slot_of(unit >> (root_shift_ - unit_shift_)
                                                 << (root_shift_ - unit_shift_))],
                             __ATOMIC_ACQUIRE);
    if (s != 0) return decode(s);
    return decode(__atomic_load_n(&root_slots_[unit >> (root_shift_ - unit_shift_)],
                                  __ATOMIC_ACQUIRE));
  }

  // Gives back the pages whose last chunk start went; the bytes returned. Caller holds the
  // writers' lock. Looks at the pages' states only when there is an empty page.
  size_t purge();

  // Bytes of slot pages holding a chunk start, or empty and not yet returned: counted.
  size_t committed_bytes() const { return committed_pages_ * page_bytes_; }
  size_t slot_pages() const { return slot_pages_; }

  // The per-page counts agree with the slots, the committed pages with the counts. Caller holds
  // the writers' lock.
  bool verify() const;

 private:
  // Per page of slots: non-null slots in it (low 15 bits) and whether it is counted (top bit).
  static constexpr uint16_t kCounted = 0x8000;
  // Uncommits page `p` (counted, empty); false if the kernel refused (it stays counted).
  bool return_page(size_t p);
  bool is_area_base(const char* p) const {
    return ((static_cast<size_t>(p - base_) >> unit_shift_) & area_mask_) == 0;
  }
  size_t area_of(const char* p) const { return static_cast<size_t>(p - base_) >> root_shift_; }
  // Slot s of the table at index i: counts the page's starts (first start: the page is counted).
  void store_slot(size_t i, Slot s);
  // Slot s in the root slot of the area starting at area_base.
  void store_root_slot(const char* area_base, Slot s);
  size_t index(const char* p) const {
    return slot_of(static_cast<size_t>(p - base_) >> unit_shift_);
  }
  // The slot of the unit-sized piece `unit` of the range (see "Slot order" above). Within its
  // root area: the first head_ pieces in address order, then the pieces beyond them at multiples
  // of 2R (R = the area's pieces / slots per page), together one page; then the other pieces
  // beyond the head in address order. The identity when an area fits a page (head_ = the area).
  size_t slot_of(size_t unit) const {
    size_t w = unit & area_mask_;
    size_t slot;
    if (w < head_) {
      slot = w;
    } else {
      size_t u = w - head_;
      // Before a piece u off the multiples lie u - ceil(u / 2R) others beyond the head.
      slot = (u & aligned_mask_) == 0 ? head_ + (u >> aligned_shift_)
                                      : rest_ + u - ((u + aligned_mask_) >> aligned_shift_);
    }
    return (unit & ~area_mask_) | slot;
  }
  Slot encode(const Chunk* c) const;
  Chunk* decode(Slot s) const {
    return s == 0 ? nullptr
                  : reinterpret_cast<Chunk*>(const_cast<char*>(header_base_) +
                                             (size_t{s} << kHeaderShift));
  }

  const char* base_ = nullptr;
  const char* header_base_ = nullptr;
  Slot* slots_ = nullptr;
  Slot* root_slots_ = nullptr;  // one per root area, in the node's bookkeeping header
  size_t areas_ = 0;
  uint16_t* page_states_ = nullptr;
  std::atomic<size_t>* committed_ = nullptr;
  NodeBookkeeping* header_ = nullptr;
  size_t page_bytes_ = 0;
  size_t slots_per_page_ = 0;
  size_t slot_pages_ = 0;
  size_t committed_pages_ = 0;
  size_t empty_pages_ = 0;  // counted, no chunk start left
  bool return_at_once_ = false;
  unsigned unit_shift_ = 0;
  unsigned root_shift_ = 0;
  // slot_of(): pieces per root area - 1; pieces in address order at its start; the multiples
  // beyond them (2R - 1 and log2 2R); the first slot of the other pieces.
  size_t area_mask_ = 0;
  size_t head_ = 0;
  size_t aligned_mask_ = 0;
  unsigned aligned_shift_ = 0;
  size_t rest_ = 0;
};

}  // namespace metaspace
