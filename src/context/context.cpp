#include "context/context.hpp"

namespace metaspace {

namespace {

// The nodes' chunk start tables need one slot per smallest chunk, which only this layer knows,
// return their empty pages as the policy returns memory, and order their slots for the chunk
// sizes of their space (ChunkStartTable, "SlotOrder").
NodeGeometry with_chunk_unit(NodeGeometry g, const ReclaimPolicy& policy, ms_space_t space) {
  g.min_chunk_bytes = kMinChunkBytes;
  g.return_bookkeeping_at_once = policy.uncommit_on_return;
  g.slot_order = space == MS_SPACE_NONCLASS ? ChunkStartTable::SlotOrder::kAlignedFirst
                                            : ChunkStartTable::SlotOrder::kHeadFirst;
  return g;
}

}  // namespace

Context::Context(ms_space_t space, const NodeGeometry& geometry, CommitLimiter& limiter,
                 ReclaimPolicy policy, uintptr_t wish, const ContextBookkeeping& bookkeeping)
    : space_(space),
      vslist_(with_chunk_unit(geometry, policy, space), limiter,
              {.expandable = space == MS_SPACE_NONCLASS, .wish = wish}),
      own_bookkeeping_(bookkeeping.shared != nullptr
                           ? nullptr
                           : std::make_unique<SlabAllocator>(SlabAllocator::Options{
                                 .reserve_bytes = bookkeeping.reserve_bytes,
                                 .return_at_once = policy.uncommit_on_return,
                                 .name = bookkeeping.name})),
      bookkeeping_(bookkeeping.shared != nullptr ? bookkeeping.shared : own_bookkeeping_.get()),
      counts_bookkeeping_(bookkeeping.counted),
      chunks_(vslist_, ChunkGeometry(geometry.root_chunk_bytes), policy, *bookkeeping_) {}

}  // namespace metaspace
