#include "vspace/node_bookkeeping.hpp"

#include <cstring>

#include "commit/commit_mask.hpp"
#include "common/assert.hpp"
#include "common/error.hpp"
#include "common/units.hpp"
#include "os/fault_injection.hpp"
#include "os/os_memory.hpp"

namespace metaspace {

ms_error_t NodeBookkeeping::init(const Layout& layout, std::atomic<size_t>* committed) {
  MS_ASSERT(base_ == nullptr && committed != nullptr, "node bookkeeping set up twice");
  size_t page = os::page_size();
  size_t mask_bytes = CommitMask::words_for(layout.range_bytes / layout.granule_bytes) *
                      sizeof(uint64_t);
  size_t flag_bytes = align_up(layout.range_bytes / layout.root_bytes, sizeof(uint64_t));
  size_t slot_bytes = align_up(layout.range_bytes / layout.unit_bytes * sizeof(uint32_t), page);
  size_t state_bytes = slot_bytes / page * sizeof(uint16_t);
  // Last: a root slot is written only for a chunk that is a whole area (ChunkStartTable), so in
  // a class space's 9-page header it does not push the mask of the first granules to a page more.
  size_t root_slot_bytes = layout.range_bytes / layout.root_bytes * sizeof(uint32_t);
  size_t mask_offset = flag_bytes + align_up(state_bytes, sizeof(uint64_t));
  size_t root_slot_offset = mask_offset + mask_bytes;
  size_t header_bytes = align_up(root_slot_offset + root_slot_bytes, page);
  if (os::fault_now(os::FaultPoint::kBookkeeping)) {
    return fail(MS_ERR_OUT_OF_MEMORY, "node bookkeeping of %zu bytes failed (injected)",
                header_bytes + slot_bytes);
  }
  // Read-write at once: the slots are read by lock-free lookups anywhere in the table (a
  // never-written page reads as zeros, costing nothing), and one kernel call keeps the range one
  // mapping.
  char* base = nullptr;
  if (ms_error_t err = os::map_read_write(header_bytes + slot_bytes, &base); err != MS_OK) {
    return err;
  }
  base_ = base;
  page_shift_ = log2_of_power_of_2(page);
  header_bytes_ = header_bytes;
  slot_bytes_ = slot_bytes;
  // The small parts first, the mask after them: a node uses its range from the bottom, so the
  // flags, the page states and the mask words of the first granules share the first page. A
  // 1 GiB class space (256 flags, 2 KiB of page states, 32 KiB of mask) then writes one header
  // page until it has 56 MiB in use; with the mask first it wrote two (the mask's first page and
  // the one holding flags and states): 4 KiB of every metaspace's overhead.
  area_flags_ = reinterpret_cast<uint8_t*>(base);
  page_states_ = reinterpret_cast<uint16_t*>(base + flag_bytes);
  mask_words_ = reinterpret_cast<uint64_t*>(base + mask_offset);
  root_slots_ = reinterpret_cast<uint32_t*>(base + root_slot_offset);
  slots_ = reinterpret_cast<uint32_t*>(base + header_bytes);
  committed_ = committed;
  if (header_bytes / page > kTrackedPages) {
    // Too large to track page by page (a node of over 128 GiB at 4 KiB granules): written whole
    // now, so that what is counted is what the process holds.
    std::memset(base, 0, header_bytes);
    for (size_t i = 0; i < kTrackedPages / 64; i++) touched_[i] = ~uint64_t{0};
    counted_header_bytes_ = header_bytes;
    committed_->fetch_add(header_bytes, std::memory_order_relaxed);
  }
  return MS_OK;
}

void NodeBookkeeping::count_page(size_t index) {
  MS_ASSERT(index < kTrackedPages, "header page %zu beyond the tracked ones", index);
  touched_[index / 64] |= uint64_t{1} << (index % 64);
  size_t page = size_t{1} << page_shift_;
  counted_header_bytes_ += page;
  committed_->fetch_add(page, std::memory_order_relaxed);
}

NodeBookkeeping::~NodeBookkeeping() {
  if (base_ == nullptr) return;
  committed_->fetch_sub(counted_header_bytes_, std::memory_order_relaxed);
  // The slot pages still counted are the chunk start table's to give back (it is destroyed
  // first, see VirtualSpaceNode). A refused munmap leaks address space, never memory.
  KeepLastError keep;
  if (os::release(base_, header_bytes_ + slot_bytes_) != MS_OK) {
    (void)os::uncommit(base_, header_bytes_ + slot_bytes_, os::Uncommitted::kReadsZeros);
  }
}

}  // namespace metaspace
