#include "chunks/chunk.hpp"

#include "chunks/chunk_level.hpp"
#include "common/units.hpp"
#include "common/verify.hpp"

namespace metaspace {

namespace {
constexpr bool power_of_2(size_t n) { return n != 0 && (n & (n - 1)) == 0; }
}  // namespace

bool Chunk::verify() const {
  MS_VERIFY(state == State::kFree || state == State::kInUse, "chunk %p: state %d", (void*)base,
            static_cast<int>(state));
  MS_VERIFY(base != nullptr, "chunk header %p has no memory", (const void*)this);
  MS_VERIFY(level < kMaxLevels && power_of_2(bytes) && bytes >= kMinChunkBytes &&
                power_of_2(size_t{bytes} << level) &&
                (size_t{bytes} << level) <= (kMinChunkBytes << (kMaxLevels - 1)),
            "chunk %p: %zu bytes at level %d", (void*)base, size_t{bytes}, int{level});
  MS_VERIFY(is_aligned(base, bytes), "chunk %p is not aligned to its %zu bytes", (void*)base,
            size_t{bytes});
  MS_VERIFY(committed_bytes <= bytes && used_bytes <= bytes,
            "chunk %p of %zu bytes: %zu committed, %zu used", (void*)base, size_t{bytes},
            size_t{committed_bytes}, size_t{used_bytes});
  if (state == State::kFree) {
    MS_VERIFY(owner_is(nullptr) && used_bytes == 0, "free chunk %p: an owner, or %zu bytes used",
              (void*)base, size_t{used_bytes});
  }
  const Chunk* before = prev_in_area;
  const Chunk* after = next_in_area;
  MS_VERIFY(before == nullptr || (before->next_in_area == this && before->end() == base),
            "chunk %p: its neighbour below (%p) does not end at it or link to it", (void*)base,
            before != nullptr ? (void*)before->base : nullptr);
  MS_VERIFY(after == nullptr || (after->prev_in_area == this && after->base == end()),
            "chunk %p: its neighbour above (%p) does not start at its end or link to it",
            (void*)base, after != nullptr ? (void*)after->base : nullptr);
  return true;
}

}  // namespace metaspace
