#include "stats/report.hpp"

#include <string>

#include "chunks/reclaim_policy.hpp"
#include "common/units.hpp"
#include "stats/kind_stats.hpp"
#include "stats/overhead_breakdown.hpp"
#include "stats/scale.hpp"

namespace metaspace {

ms_report_options_t default_report_options() {
  ms_report_options_t o{};
  o.scale = 0;
  o.per_loader = 0;
  o.per_kind = 1;
  o.free_lists = 1;
  return o;
}

namespace {

const char* const kSpaceNames[3] = {"non-class", "class", "both"};

class TextReport {
 public:
  TextReport(FILE* out, const ReportInput& in, const ms_report_options_t& options)
      : out_(out), in_(in), totals_(in.snapshot.totals), options_(options), scale_(options.scale) {}

  void print() {
    if (options_.per_loader) per_loader();
    if (options_.per_kind) per_kind();
    total_usage();
    virtual_space();
    chunk_freelists();
    waste();
    overhead();
    archive_section();
    settings();
  }

 private:
  // Spaces in print order: non-class, class, both.
  const ms_space_stats_t& space(int i) const {
    return i < 2 ? totals_.space[i] : totals_.total;
  }
  std::string sz(size_t bytes) const { return scale_.format(bytes); }
  // An allocation count, or "-" when the metaspace does not count (settings count_allocations).
  std::string count(uint64_t n) const {
    return totals_.allocations_counted ? std::to_string(n) : std::string("-");
  }
  // A size and its share of `of`, for the waste table.
  std::string share(size_t bytes, size_t of) const {
    char buf[24];
    std::snprintf(buf, sizeof buf, " (%5.1f%%)", of == 0 ? 0.0 : 100.0 * double(bytes) / double(of));
    return sz(bytes) + buf;
  }
  size_t chunk_bytes(int level) const { return in_.settings.root_chunk_bytes >> level; }
  // Chunk sizes are powers of 2 from 1 KiB: "64K", "4M".
  std::string chunk_size(int level) const {
    size_t b = chunk_bytes(level);
    return b >= MiB ? std::to_string(b / MiB) + "M" : std::to_string(b / KiB) + "K";
  }

  void per_loader() {
    const auto& loaders = in_.snapshot.loaders;
    std::fprintf(out_, "Usage per loader (%zu loaders, newest first):\n", loaders.size());
    std::fprintf(out_, "  %-18s %-8s %11s | %-9s %12s %12s %12s | %s\n", "loader", "kind",
                 "allocations", "space", "used", "committed", "capacity", "chunks by size");
    for (const LoaderStats& l : loaders) {
      for (int s = 0; s < 2; s++) {
        std::string chunks;
        for (int level = 0; level < MS_MAX_CHUNK_LEVELS; level++) {
          size_t n = l.arena[s].chunks_by_level[level];
          if (n == 0) continue;
          if (!chunks.empty()) chunks += ' ';
          chunks += chunk_size(level) + "x" + std::to_string(n);
        }
        if (s == 0) {
          char id[24];
          std::snprintf(id, sizeof id, "%p", l.handle);
          std::fprintf(out_, "  %-18s %-8s %11s", id, loader_kind_name(l.kind),
                       count(l.allocations).c_str());
        } else {
          std::fprintf(out_, "  %-18s %-8s %11s", "", "", "");
        }
        std::fprintf(out_, " | %-9s %12s %12s %12s | %s\n", kSpaceNames[s],
                     sz(l.used_bytes[s]).c_str(), sz(l.arena[s].committed_bytes).c_str(),
                     sz(l.arena[s].capacity_bytes).c_str(), chunks.empty() ? "-" : chunks.c_str());
      }
    }
    std::fprintf(out_, "\n");
  }

  void per_kind() {
    auto kinds = stats_by_kind(in_.snapshot.loaders);
    std::fprintf(out_, "Usage per loader kind:\n");
    std::fprintf(out_, "  %-8s %7s %11s | %-9s %12s %12s %12s %12s %7s\n", "kind", "loaders",
                 "allocations", "space", "used", "committed", "capacity", "free blocks",
                 "chunks");
    for (int k = 0; k < MS_LOADER_KIND_COUNT; k++) {
      const KindStats& ks = kinds[k];
      for (int s = 0; s < 2; s++) {
        if (s == 0) {
          std::fprintf(out_, "  %-8s %7zu %11s", loader_kind_name(static_cast<ms_loader_kind_t>(k)),
                       ks.loaders, count(ks.allocations).c_str());
        } else {
          std::fprintf(out_, "  %-8s %7s %11s", "", "", "");
        }
        std::fprintf(out_, " | %-9s %12s %12s %12s %12s %7zu\n", kSpaceNames[s],
                     sz(ks.used_bytes[s]).c_str(), sz(ks.committed_bytes[s]).c_str(),
                     sz(ks.capacity_bytes[s]).c_str(), sz(ks.free_blocks_bytes[s]).c_str(),
                     ks.chunks[s]);
      }
    }
    std::fprintf(out_, "\n");
  }

  void total_usage() {
    uint64_t allocations = 0;
    for (const LoaderStats& l : in_.snapshot.loaders) allocations += l.allocations;
    std::string counted = totals_.allocations_counted
                              ? std::to_string(allocations) + " allocations"
                              : std::string("allocations not counted");
    std::fprintf(out_, "Total usage - %zu loaders (%zu boot, %zu standard, %zu micro), %s:\n",
                 totals_.loaders, totals_.loaders_by_kind[MS_LOADER_BOOT],
                 totals_.loaders_by_kind[MS_LOADER_STANDARD],
                 totals_.loaders_by_kind[MS_LOADER_MICRO], counted.c_str());
    std::fprintf(out_, "  %-10s %12s %12s %12s %12s %12s %12s\n", "", "reserved", "committed",
                 "used", "free", "waste", "overhead");
    for (int i = 0; i < 3; i++) {
      const ms_space_stats_t& s = space(i);
      std::fprintf(out_, "  %-10s %12s %12s %12s %12s %12s %12s\n",
                   (std::string(kSpaceNames[i]) + ":").c_str(), sz(s.reserved_bytes).c_str(),
                   sz(s.committed_bytes).c_str(), sz(s.used_bytes).c_str(),
                   sz(free_bytes(s)).c_str(), sz(waste_bytes(s)).c_str(),
                   sz(s.overhead_bytes).c_str());
    }
    std::fprintf(out_, "  (committed = used + free + waste + overhead; free: ready for any "
                       "request; waste: see below; overhead: the library's own bookkeeping)\n\n");
  }

  void virtual_space() {
    std::fprintf(out_, "Virtual space:\n");
    std::fprintf(out_, "  %-10s %12s %12s %6s %12s %14s %12s\n", "", "reserved", "committed",
                 "nodes", "root chunks", "chunks in use", "free chunks");
    for (int i = 0; i < 3; i++) {
      const ms_space_stats_t& s = space(i);
      std::fprintf(out_, "  %-10s %12s %12s %6zu %12zu %14zu %12zu\n",
                   (std::string(kSpaceNames[i]) + ":").c_str(), sz(s.reserved_bytes).c_str(),
                   sz(s.committed_bytes).c_str(), s.nodes, s.root_chunks, s.chunks_in_use,
                   s.free_chunks);
    }
    std::fprintf(out_, "  Kernel calls: %zu commits, %zu uncommits\n\n", totals_.commits,
                 totals_.uncommits);
  }

  void chunk_freelists() {
    std::fprintf(out_, "Chunk freelists:\n");
    for (int i = 0; i < 2; i++) {
      const ms_space_stats_t& s = space(i);
      size_t bytes = 0;
      for (int level = 0; level < MS_MAX_CHUNK_LEVELS; level++) {
        bytes += s.free_chunks_by_level[level].bytes;
      }
      std::fprintf(out_, "  %s: %zu chunks, %s, %s committed\n", kSpaceNames[i], s.free_chunks,
                   sz(bytes).c_str(), sz(s.free_chunks_bytes).c_str());
      if (!options_.free_lists) continue;
      for (unsigned level = 0; level < totals_.chunk_levels; level++) {
        const ms_chunk_level_stats_t& l = s.free_chunks_by_level[level];
        if (l.count == 0) continue;
        std::fprintf(out_, "    level %2u (%5s): %6zu chunks, %12s, %12s committed\n", level,
                     chunk_size(static_cast<int>(level)).c_str(), l.count,
                     sz(l.bytes).c_str(), sz(l.committed_bytes).c_str());
      }
    }
    std::fprintf(out_, "\n");
  }

  void waste_row(const char* what, size_t ms_space_stats_t::*field) {
    std::fprintf(out_, "  %-26s", what);
    for (int i = 0; i < 3; i++) {
      const ms_space_stats_t& s = space(i);
      std::fprintf(out_, " %22s", share(s.*field, s.committed_bytes).c_str());
    }
    std::fprintf(out_, "\n");
  }

  void waste() {
    std::fprintf(out_, "Waste (committed memory not holding live blocks; %% of committed):\n");
    std::fprintf(out_, "  %-26s %22s %22s %22s\n", "", "non-class", "class", "both");
    waste_row("free in chunks in use:", &ms_space_stats_t::free_in_chunks_bytes);
    waste_row("free chunks (committed):", &ms_space_stats_t::free_chunks_bytes);
    std::fprintf(out_, "  %-26s", "free blocks, count:");
    for (int i = 0; i < 3; i++) std::fprintf(out_, " %22zu", space(i).free_blocks_count);
    std::fprintf(out_, "\n");
    waste_row("  deallocated blocks:", &ms_space_stats_t::deallocated_bytes);
    waste_row("  salvaged chunk tails:", &ms_space_stats_t::salvaged_bytes);
    waste_row("  class alignment gaps:", &ms_space_stats_t::alignment_gap_bytes);
    waste_row("fences (checked mode):", &ms_space_stats_t::fence_bytes);
    std::fprintf(out_, "  %-26s", "total (committed - used):");
    for (int i = 0; i < 3; i++) {
      const ms_space_stats_t& s = space(i);
      std::fprintf(out_, " %22s", share(s.committed_bytes - s.used_bytes, s.committed_bytes).c_str());
    }
    std::fprintf(out_, "\n");
    waste_row("overhead (bookkeeping):", &ms_space_stats_t::overhead_bytes);
    std::fprintf(out_, "  (salvaged chunk tails: free blocks, and tails below 1 KiB left in place, "
                       "not counted as blocks, while their loader has no free-block structure)\n");
    std::fprintf(out_, "  (overhead: loader objects and arenas (some inside their first chunk), "
                       "chunk headers, free-block structures, commit masks, chunk start tables, "
                       "node map; in committed)\n\n");
  }

  // Where the overhead lies, per space; the rows add up to the overhead above.
  void overhead() {
    std::fprintf(out_, "Overhead (bookkeeping), where it lies:\n");
    for (int i = 0; i < 2; i++) {
      std::fprintf(out_, "  %s: %s\n", kSpaceNames[i], sz(space(i).overhead_bytes).c_str());
      for (const OverheadRow& r : overhead_rows(in_.snapshot.bookkeeping[i])) {
        std::string detail;
        if (r.objects > 0) {
          detail += std::to_string(r.objects) + (r.objects == 1 ? " object" : " objects");
        }
        if (r.pages > 0) {
          detail += (detail.empty() ? "" : " on ") + std::to_string(r.pages) +
                    (r.pages == 1 ? " page" : " pages");
        }
        std::fprintf(out_, "    %-56s %12s  %s\n", (r.what + ":").c_str(), sz(r.bytes).c_str(),
                     detail.c_str());
      }
    }
    std::fprintf(out_, "\n");
  }

  // The archive is the file's pages, not committed memory of either space: its own section.
  void archive_section() {
    if (in_.archive_path == nullptr) return;
    const ms_archive_stats_t& a = totals_.archive;
    std::fprintf(out_, "Archive: %s\n", in_.archive_path);
    if (!a.mapped) {
      std::fprintf(out_, "  not mapped: %s (%s)\n\n", in_.archive_reason,
                   ms_error_name(in_.archive_error));
      return;
    }
    std::fprintf(out_, "  mapped at %#llx, %s (requested %#llx, relocation delta %+lld, %zu "
                       "pointers)\n",
                 static_cast<unsigned long long>(a.base), a.relocated ? "relocated" : "not relocated",
                 static_cast<unsigned long long>(a.requested_base),
                 static_cast<long long>(a.relocation_delta), a.pointers);
    if (a.relocated) {
      std::fprintf(out_, "  relocation: %s (%s)\n", a.relocation == MS_ARCHIVE_RELOCATE_LAZY ? "lazy" : "eager",
                   a.relocation_reason != nullptr ? a.relocation_reason : "");
    }
    std::fprintf(out_, "  %-10s %12s %12s\n", "", "region", "used");
    std::fprintf(out_, "  %-10s %12s %12s\n", "class:", sz(a.class_region_bytes).c_str(),
                 sz(a.used_bytes[MS_SPACE_CLASS]).c_str());
    std::fprintf(out_, "  %-10s %12s %12s\n", "non-class:", sz(a.nonclass_region_bytes).c_str(),
                 sz(a.used_bytes[MS_SPACE_NONCLASS]).c_str());
    std::fprintf(out_, "  file %s, reserved %s, resident %s; %zu narrow class pointers, %zu roots, "
                       "%zu deallocations ignored\n\n",
                 sz(a.file_bytes).c_str(), sz(a.reserved_bytes).c_str(),
                 sz(a.resident_bytes).c_str(), a.narrow_pointers, a.roots,
                 a.deallocations_ignored);
  }

  void settings() {
    const ms_settings_t& s = in_.settings;
    size_t alignment = size_t{1} << in_.class_shift;
    std::fprintf(out_, "Settings:\n");
    std::fprintf(out_, "  reclaim policy:        %s%s\n", reclaim_name(s.reclaim),
                 s.checked && s.reclaim != MS_RECLAIM_NONE ? " (checked: uncommit on return)" : "");
    std::fprintf(out_, "  commit granule:        %s\n", Scale(0).format(s.commit_granule_bytes).c_str());
    std::fprintf(out_, "  root chunk:            %s (%u levels, smallest %s)\n",
                 Scale(0).format(s.root_chunk_bytes).c_str(), totals_.chunk_levels,
                 Scale(0).format(chunk_bytes(static_cast<int>(totals_.chunk_levels) - 1)).c_str());
    std::fprintf(out_, "  non-class node:        %s\n", Scale(0).format(s.node_bytes).c_str());
    std::fprintf(out_, "  class space:           %s at %#llx\n",
                 Scale(0).format(in_.class_space_bytes).c_str(),
                 static_cast<unsigned long long>(in_.class_space_base));
    std::fprintf(out_, "  class alignment:       %zu bytes (narrow pointer shift %u, %u bits)\n",
                 alignment, in_.class_shift, in_.narrow_class_bits);
    if (s.max_committed_bytes == 0) {
      std::fprintf(out_, "  max committed:         unlimited\n");
    } else {
      std::fprintf(out_, "  max committed:         %s\n", Scale(0).format(s.max_committed_bytes).c_str());
    }
    if (in_.gc_threshold_bytes == 0) {
      std::fprintf(out_, "  GC threshold:          none\n");
    } else {
      std::fprintf(out_, "  GC threshold:          %s\n", Scale(0).format(in_.gc_threshold_bytes).c_str());
    }
    std::fprintf(out_, "  checked mode:          %s\n",
                 s.checked ? "on (fences, zapping, dead memory uncommitted)" : "off");
    std::fprintf(out_, "  allocations counted:   %s\n",
                 !totals_.allocations_counted ? "no (count_allocations=1 counts them)"
                 : s.checked                  ? "yes (checked mode; inline fast path closed)"
                                              : "yes (inline fast path closed)");
  }

  FILE* out_;
  const ReportInput& in_;
  const ms_stats_t& totals_;
  const ms_report_options_t& options_;
  Scale scale_;
};

}  // namespace

void print_report(FILE* out, const ReportInput& in, const ms_report_options_t& options) {
  TextReport(out, in, options).print();
}

}  // namespace metaspace
