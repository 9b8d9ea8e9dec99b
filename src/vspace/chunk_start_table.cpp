#include "vspace/chunk_start_table.hpp"

#include "common/assert.hpp"
#include "common/error.hpp"
#include "common/units.hpp"
#include "common/verify.hpp"
#include "os/os_memory.hpp"

namespace metaspace {

void ChunkStartTable::init(const char* base, size_t range_bytes, size_t unit_bytes,
                           size_t root_bytes, Chunk** slots, uint16_t* page_states,
                           std::atomic<size_t>* committed) {
  MS_ASSERT(slots_ == nullptr && is_aligned(slots, os::page_size()),
            "chunk start table set up twice or misaligned at %p", (void*)slots);
  base_ = base;
  slots_ = slots;
  page_states_ = page_states;
  committed_ = committed;
  page_bytes_ = os::page_size();
  slots_per_page_ = page_bytes_ / sizeof(Chunk*);
  slot_pages_ = align_up(range_bytes / unit_bytes, slots_per_page_) / slots_per_page_;
  MS_ASSERT(slots_per_page_ < kCounted, "%zu slots per page do not fit the page state",
            slots_per_page_);
  unit_shift_ = log2_of_power_of_2(unit_bytes);
  root_shift_ = log2_of_power_of_2(root_bytes);
}

void ChunkStartTable::set(const char* chunk_base, Chunk* c) {
  size_t i = index(chunk_base);
  Chunk* old = __atomic_load_n(&slots_[i], __ATOMIC_RELAXED);
  __atomic_store_n(&slots_[i], c, __ATOMIC_RELEASE);
  if ((old == nullptr) == (c == nullptr)) return;  // a chunk replaced by another: same count
  uint16_t& state = page_states_[i / slots_per_page_];
  if (c != nullptr) {
    if ((state & kCounted) == 0) {
      state |= kCounted;
      committed_pages_++;
      committed_->fetch_add(page_bytes_, std::memory_order_relaxed);
    }
    state++;
    return;
  }
  MS_ASSERT((state & ~kCounted) > 0, "slot page %zu has no start to clear", i / slots_per_page_);
  if (--state != kCounted) return;
  // The page's last start is gone: give it back. Refused, it stays counted (and is retried when
  // its next last start goes); not the caller's error, which is usually a merge that succeeded.
  KeepLastError keep;
  char* page = reinterpret_cast<char*>(slots_ + align_down(i, slots_per_page_));
  if (os::uncommit(page, page_bytes_, os::Uncommitted::kReadsZeros) == MS_OK) {
    state = 0;
    committed_pages_--;
    committed_->fetch_sub(page_bytes_, std::memory_order_relaxed);
  }
}

ChunkStartTable::~ChunkStartTable() {
  if (committed_ != nullptr) {
    committed_->fetch_sub(committed_bytes(), std::memory_order_relaxed);
  }
}

bool ChunkStartTable::verify() const {
  size_t counted = 0;
  for (size_t p = 0; p < slot_pages_; p++) {
    // Pages never used are skipped: a check per ms_verify must not read a 1 GiB class space's 8
    // MiB of slots.
    if (page_states_[p] == 0) continue;
    size_t starts = 0;
    for (size_t s = 0; s < slots_per_page_; s++) {
      starts += __atomic_load_n(&slots_[p * slots_per_page_ + s], __ATOMIC_RELAXED) != nullptr;
    }
    uint16_t state = page_states_[p];
    MS_VERIFY(starts == static_cast<size_t>(state & ~kCounted),
              "slot page %zu holds %zu chunk starts, its count says %u", p, starts,
              static_cast<unsigned>(state & ~kCounted));
    MS_VERIFY(starts == 0 || (state & kCounted) != 0, "slot page %zu in use but not counted", p);
    counted += (state & kCounted) != 0;
  }
  MS_VERIFY(counted == committed_pages_, "%zu slot pages counted, the table says %zu", counted,
            committed_pages_);
  return true;
}

}  // namespace metaspace
