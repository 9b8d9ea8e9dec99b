#include "vspace/chunk_start_table.hpp"

#include "common/assert.hpp"
#include "common/error.hpp"
#include "common/units.hpp"
#include "common/verify.hpp"
#include "os/os_memory.hpp"
#include "vspace/node_bookkeeping.hpp"

namespace metaspace {

void ChunkStartTable::init(const char* base, size_t range_bytes, size_t unit_bytes,
                           size_t root_bytes, Slot* slots, uint16_t* page_states,
                           Slot* root_slots, NodeBookkeeping* header, const Options& options) {
  MS_ASSERT(slots_ == nullptr && is_aligned(slots, os::page_size()),
            "chunk start table set up twice or misaligned at %p", (void*)slots);
  base_ = base;
  slots_ = slots;
  page_states_ = page_states;
  root_slots_ = root_slots;
  areas_ = range_bytes / root_bytes;
  header_ = header;
  committed_ = header->committed_counter();
  return_at_once_ = options.return_at_once;
  page_bytes_ = os::page_size();
  slots_per_page_ = page_bytes_ / sizeof(Slot);
  slot_pages_ = align_up(range_bytes / unit_bytes, slots_per_page_) / slots_per_page_;
  MS_ASSERT(slots_per_page_ < kCounted, "%zu slots per page do not fit the page state",
            slots_per_page_);
  unit_shift_ = log2_of_power_of_2(unit_bytes);
  root_shift_ = log2_of_power_of_2(root_bytes);
  MS_ASSERT(range_bytes % root_bytes == 0, "node range %zu is not whole root areas of %zu",
            range_bytes, root_bytes);
  unsigned area_shift = root_shift_ - unit_shift_;
  size_t pieces = size_t{1} << area_shift;
  area_mask_ = pieces - 1;
  if (pieces <= slots_per_page_) {
    head_ = rest_ = pieces;  // slot_of is the identity
    aligned_shift_ = 0;
    aligned_mask_ = 0;
    return;
  }
  // With A = 8R (kHeadFirst) or R (kAlignedFirst): the head and the multiples of A beyond it fit
  // a page, H + (S - H) / A <= G, the head a multiple of A (so that beyond it, u and w are
  // multiples of A together).
  size_t a = (options.order == SlotOrder::kAlignedFirst ? 1 : kHeadFirstStride) *
             (pieces / slots_per_page_);
  aligned_shift_ = log2_of_power_of_2(a);
  aligned_mask_ = a - 1;
  head_ = options.order == SlotOrder::kAlignedFirst
              ? 0
              : (slots_per_page_ - pieces / a) * a / (a - 1) / a * a;
  rest_ = head_ + (pieces - head_) / a;
  MS_ASSERT(rest_ <= slots_per_page_, "chunk start head %zu of %zu pieces overflows a page",
            head_, pieces);
}

void ChunkStartTable::set_header_base(const char* header_base) {
  MS_ASSERT(header_base_ == nullptr || header_base_ == header_base || committed_pages_ == 0,
            "chunk header base moved from %p to %p with starts recorded", (const void*)header_base_,
            (const void*)header_base);
  header_base_ = header_base;
}

ChunkStartTable::Slot ChunkStartTable::encode(const Chunk* c) const {
  if (c == nullptr) return 0;
  const char* h = reinterpret_cast<const char*>(c);
  MS_ASSERT(header_base_ != nullptr && h > header_base_ &&
                static_cast<size_t>(h - header_base_) < kHeaderRangeBytes &&
                (static_cast<size_t>(h - header_base_) & ((size_t{1} << kHeaderShift) - 1)) == 0,
            "chunk header %p cannot be named from header base %p", (const void*)c,
            (const void*)header_base_);
  return static_cast<Slot>(static_cast<size_t>(h - header_base_) >> kHeaderShift);
}

void ChunkStartTable::set(const char* chunk_base, size_t chunk_bytes, Chunk* c) {
  MS_ASSERT(c != nullptr, "set() records a chunk; clear() forgets one");
  if (chunk_bytes == size_t{1} << root_shift_) {
    MS_ASSERT(is_area_base(chunk_base), "root chunk at %p off its area", (const void*)chunk_base);
    store_root_slot(chunk_base, encode(c));
    return;
  }
  store_slot(index(chunk_base), encode(c));
}

void ChunkStartTable::clear(const char* chunk_base) {
  if (is_area_base(chunk_base) &&
      __atomic_load_n(&root_slots_[area_of(chunk_base)], __ATOMIC_RELAXED) != 0) {
    store_root_slot(chunk_base, 0);
    return;
  }
  store_slot(index(chunk_base), 0);
}

void ChunkStartTable::set_root_start(const char* chunk_base, Chunk* c) {
  size_t i = index(chunk_base);
  MS_ASSERT(is_area_base(chunk_base) && __atomic_load_n(&slots_[i], __ATOMIC_RELAXED) == encode(c),
            "chunk %p grew to its root area without its start", (const void*)chunk_base);
  store_root_slot(chunk_base, encode(c));  // first: a lookup finds one or the other
  store_slot(i, 0);
}

void ChunkStartTable::store_root_slot(const char* area_base, Slot s) {
  Slot* r = &root_slots_[area_of(area_base)];
  header_->touch(r, sizeof(Slot));  // counts its header page if this is its first write
  __atomic_store_n(r, s, __ATOMIC_RELEASE);
}

void ChunkStartTable::store_slot(size_t i, Slot s) {
  Slot old = __atomic_load_n(&slots_[i], __ATOMIC_RELAXED);
  __atomic_store_n(&slots_[i], s, __ATOMIC_RELEASE);
  if ((old == 0) == (s == 0)) return;  // a chunk replaced by another: same count
  size_t p = i / slots_per_page_;
  uint16_t& state = page_states_[p];
  header_->touch(&state, sizeof(state));
  if (s != 0) {
    if ((state & kCounted) == 0) {
      state |= kCounted;
      committed_pages_++;
      committed_->fetch_add(page_bytes_, std::memory_order_relaxed);
    } else if (state == kCounted) {
      empty_pages_--;  // filled again before a purge gave it back
    }
    state++;
    return;
  }
  MS_ASSERT((state & ~kCounted) > 0, "slot page %zu has no start to clear", p);
  if (--state != kCounted) return;
  empty_pages_++;
  if (return_at_once_) (void)return_page(p);
}

bool ChunkStartTable::return_page(size_t p) {
  // Refused, the page stays counted and empty for the next purge; not the caller's error, which
  // is usually a merge that succeeded.
  KeepLastError keep;
  char* page = reinterpret_cast<char*>(slots_ + p * slots_per_page_);
  if (os::uncommit(page, page_bytes_, os::Uncommitted::kReadsZeros) != MS_OK) return false;
  page_states_[p] = 0;
  empty_pages_--;
  committed_pages_--;
  committed_->fetch_sub(page_bytes_, std::memory_order_relaxed);
  return true;
}

size_t ChunkStartTable::purge() {
  size_t returned = 0;
  for (size_t p = 0; p < slot_pages_ && empty_pages_ > 0; p++) {
    if (page_states_[p] == kCounted && return_page(p)) returned += page_bytes_;
  }
  return returned;
}

ChunkStartTable::~ChunkStartTable() {
  if (committed_ != nullptr) {
    committed_->fetch_sub(committed_bytes(), std::memory_order_relaxed);
  }
}

bool ChunkStartTable::verify() const {
  size_t counted = 0;
  size_t empty = 0;
  for (size_t p = 0; p < slot_pages_; p++) {
    // Pages never used are skipped: a check per ms_verify must not read a 1 GiB class space's 8
    // MiB of slots.
    if (page_states_[p] == 0) continue;
    size_t starts = 0;
    for (size_t s = 0; s < slots_per_page_; s++) {
      starts += __atomic_load_n(&slots_[p * slots_per_page_ + s], __ATOMIC_RELAXED) != 0;
    }
    uint16_t state = page_states_[p];
    MS_VERIFY(starts == static_cast<size_t>(state & ~kCounted),
              "slot page %zu holds %zu chunk starts, its count says %u", p, starts,
              static_cast<unsigned>(state & ~kCounted));
    MS_VERIFY(starts == 0 || (state & kCounted) != 0, "slot page %zu in use but not counted", p);
    counted += (state & kCounted) != 0;
    empty += state == kCounted;
  }
  MS_VERIFY(empty == empty_pages_, "%zu empty slot pages, the table says %zu", empty,
            empty_pages_);
  MS_VERIFY(counted == committed_pages_, "%zu slot pages counted, the table says %zu", counted,
            committed_pages_);
  // A whole-area chunk's start is in its root slot only: the area's first slot is empty then.
  for (size_t a = 0; a < areas_; a++) {
    if (__atomic_load_n(&root_slots_[a], __ATOMIC_RELAXED) == 0) continue;
    const char* area = base_ + (a << root_shift_);
    MS_VERIFY(__atomic_load_n(&slots_[index(area)], __ATOMIC_RELAXED) == 0,
              "root area %p has a whole-area chunk and a start in its slots", (const void*)area);
  }
  return true;
}

}  // namespace metaspace
