#include "context/class_space.hpp"

#include "common/error.hpp"
#include "common/units.hpp"
#include "common/verify.hpp"
#include "vspace/virtual_space_node.hpp"

namespace metaspace {

ClassSpace::ClassSpace(const NodeGeometry& geometry, CommitLimiter& limiter,
                       ReclaimPolicy policy, uintptr_t wish, size_t alignment_bytes,
                       const ContextBookkeeping& bookkeeping)
    : shift_(log2_of_power_of_2(alignment_bytes)) {
  context_ =
      std::make_unique<Context>(MS_SPACE_CLASS, geometry, limiter, policy, wish, bookkeeping);
  if (!context_->ok() && wish != 0) {
    note("class space: %zu bytes at the requested base %#zx could not be reserved; "
         "placed anywhere instead", geometry.reserve_bytes, static_cast<size_t>(wish));
    context_ = std::make_unique<Context>(MS_SPACE_CLASS, geometry, limiter, policy, 0, bookkeeping);
  }
  if (!context_->ok()) return;
  const VirtualSpaceNode& node = *context_->vslist().nodes().front();
  base_ = reinterpret_cast<uintptr_t>(node.base());
  encoding_base_ = base_;
  bytes_ = node.reserved_bytes();
  ChunkManager& chunks = context_->chunks();
  // Uncommitted whatever the policy: the pre-elastic one commits every chunk it hands out, and a
  // committed guard would cost a granule that no arena accounts for. If it cannot be had
  // uncommitted the space is refused (the error stays recorded for ms_create).
  guard_ = chunks.get_uncommitted_chunk(chunks.geometry().level_fitting(geometry.granule_bytes));
}

ClassSpace::~ClassSpace() {
  // The guard is taken in the constructor and returned only here: it cannot have been returned.
  if (guard_ != nullptr) (void)context_->chunks().return_chunk(guard_);
}

bool ClassSpace::verify() const {
  MS_VERIFY(ok(), "class space without its reservation or guard");
  MS_VERIFY(base_ % (uintptr_t{1} << shift_) == 0, "base %#zx not aligned to the shift %u",
            static_cast<size_t>(base_), shift_);
  MS_VERIFY(reinterpret_cast<uintptr_t>(guard_->base) == base_,
            "guard at %p, not at the base %#zx", (void*)guard_->base, static_cast<size_t>(base_));
  MS_VERIFY(!guard_->is_free(), "the guard chunk is free: narrow 0 could be handed out");
  size_t committed = context_->chunks().read_committed_bytes(guard_);
  MS_VERIFY(committed == 0, "the guard holds %zu committed bytes", committed);
  return context_->verify();
}

unsigned ClassSpace::narrow_bits() const {
  return log2_ceil((base_ + bytes_ - encoding_base_) >> shift_);
}

}  // namespace metaspace
