#include "stats/overhead_breakdown.hpp"

#include "arena/free_blocks.hpp"
#include "arena/medium_bins.hpp"
#include "chunks/chunk.hpp"
#include "instance/dead_handles.hpp"
#include "loader/loader_arenas.hpp"

namespace metaspace {

namespace {

// The structures the slabs hold, by the size they ask for. A class may serve several (its label
// names them all); dead handles' storage doubles from 16 handles (inline) and lands in whichever
// class its size falls in.
struct Structure {
  const char* name;
  size_t bytes;
};

const Structure kStructures[] = {
    {"chunk headers", sizeof(Chunk)},
    {"loader arenas", sizeof(LoaderArenas)},
    {"class arenas", LoaderArenas::class_slot_bytes()},
    {"pooled-block figures", sizeof(LoaderArenas::Pooled)},
    {"free-block structures", sizeof(FreeBlocks)},
    {"medium bins", sizeof(MediumBins)},
};

std::string class_label(size_t object_bytes) {
  std::string names;
  for (const Structure& s : kStructures) {
    if (SlabAllocator::class_bytes(s.bytes) != object_bytes) continue;
    if (names.find(s.name) != std::string::npos) continue;
    names += names.empty() ? "" : ", ";
    names += s.name;
  }
  for (size_t handles : DeadHandles::kCapacities) {
    if (handles == DeadHandles::kInlineCapacity) continue;  // inside the metaspace object
    if (SlabAllocator::class_bytes(DeadHandles::storage_bytes(handles)) == object_bytes) {
      names += names.empty() ? "dead handles" : ", dead handles";
      break;
    }
  }
  if (names.empty()) names = "other";
  return names + " (" + std::to_string(object_bytes) + " B)";
}

}  // namespace

std::vector<OverheadRow> overhead_rows(const BookkeepingUsage& u) {
  std::vector<OverheadRow> rows;
  auto add = [&](std::string what, size_t bytes, size_t objects, size_t pages) {
    if (bytes > 0) rows.push_back({std::move(what), bytes, objects, pages});
  };
  add("node ranges (commit masks, chunk starts, node map)", u.node_bytes, 0, 0);
  const SlabAllocator::Usage& lo = u.loader_objects;
  add("loader objects", lo.committed_bytes(), lo.slab_objects(), lo.pages());
  add("arenas in their loader's first chunk", u.arenas_in_chunks_bytes, 0, 0);
  const SlabAllocator::Usage& s = u.slabs;
  for (int i = 0; i < s.class_count; i++) {
    const SlabAllocator::ClassUsage& c = s.classes[i];
    add(class_label(c.object_bytes), c.pages * s.page_bytes, c.objects, c.pages);
  }
  if (s.shared_pages > 0) {
    // One row for the shared pages, naming what they hold: "shared pages: loader arenas, class
    // arenas (304 B) x 8; free-block structures (672 B) x 1".
    std::string what = "shared pages:";
    size_t objects = 0;
    for (int i = 0; i < s.shared_class_count; i++) {
      const SlabAllocator::ClassUsage& c = s.shared_classes[i];
      what += (i == 0 ? " " : "; ") + class_label(c.object_bytes) + " x " +
              std::to_string(c.objects);
      objects += c.objects;
    }
    add(std::move(what), s.shared_pages * s.page_bytes, objects, s.shared_pages);
  }
  add("objects of whole pages (dead handles, ...)", s.large_pages * s.page_bytes, 0,
      s.large_pages);
  add("empty slab pages until the next purge", s.empty_pages * s.page_bytes, 0, s.empty_pages);
  return rows;
}

}  // namespace metaspace
