#include "stats/report_json.hpp"

#include "chunks/reclaim_policy.hpp"
#include "stats/json_writer.hpp"
#include "stats/kind_stats.hpp"
#include "stats/overhead_breakdown.hpp"

namespace metaspace {

namespace {

const char* const kSpaceKeys[2] = {"nonclass", "class"};

void space(JsonWriter& j, const char* key, const ms_space_stats_t& s, unsigned levels,
           size_t root_chunk_bytes, bool free_lists) {
  j.begin_object(key);
  j.number("reserved_bytes", s.reserved_bytes);
  j.number("committed_bytes", s.committed_bytes);
  j.number("used_bytes", s.used_bytes);
  j.number("free_bytes", free_bytes(s));
  j.number("waste_bytes", waste_bytes(s));
  j.number("free_in_chunks_bytes", s.free_in_chunks_bytes);
  j.number("free_chunks_bytes", s.free_chunks_bytes);
  j.number("free_blocks_bytes", s.free_blocks_bytes);
  j.number("free_blocks_count", s.free_blocks_count);
  j.number("deallocated_bytes", s.deallocated_bytes);
  j.number("salvaged_bytes", s.salvaged_bytes);
  j.number("alignment_gap_bytes", s.alignment_gap_bytes);
  j.number("fence_bytes", s.fence_bytes);
  j.number("overhead_bytes", s.overhead_bytes);
  j.number("nodes", s.nodes);
  j.number("root_chunks", s.root_chunks);
  j.number("chunks_in_use", s.chunks_in_use);
  j.number("free_chunks", s.free_chunks);
  if (free_lists) {
    j.begin_array("free_chunks_by_level");
    for (unsigned level = 0; level < levels; level++) {
      const ms_chunk_level_stats_t& l = s.free_chunks_by_level[level];
      j.begin_object();
      j.number("level", level);
      j.number("chunk_bytes", root_chunk_bytes >> level);
      j.number("count", l.count);
      j.number("bytes", l.bytes);
      j.number("committed_bytes", l.committed_bytes);
      j.end_object();
    }
    j.end_array();
  }
  j.end_object();
}

void settings(JsonWriter& j, const ReportInput& in) {
  const ms_settings_t& s = in.settings;
  j.begin_object("settings");
  j.string("reclaim", reclaim_name(s.reclaim));
  j.number("commit_granule_bytes", s.commit_granule_bytes);
  j.number("root_chunk_bytes", s.root_chunk_bytes);
  j.number("chunk_levels", in.snapshot.totals.chunk_levels);
  j.number("node_bytes", s.node_bytes);
  j.number("class_space_base", in.class_space_base);
  j.number("class_space_bytes", in.class_space_bytes);
  j.number("class_alignment_bytes", uint64_t{1} << in.class_shift);
  j.number("class_shift", in.class_shift);
  j.number("narrow_class_bits", in.narrow_class_bits);
  j.number("max_committed_bytes", s.max_committed_bytes);
  j.number("gc_threshold_bytes", in.gc_threshold_bytes);
  j.boolean("checked", s.checked != 0);
  j.boolean("count_allocations", s.count_allocations != 0);
  j.end_object();
}

void archive_object(JsonWriter& j, const ReportInput& in) {
  const ms_archive_stats_t& a = in.snapshot.totals.archive;
  j.begin_object("archive");
  j.string("path", in.archive_path);
  j.boolean("mapped", a.mapped != 0);
  if (!a.mapped) {
    j.string("error", ms_error_name(in.archive_error));
    j.string("reason", in.archive_reason);
  } else {
    j.number("base", a.base);
    j.number("requested_base", a.requested_base);
    j.boolean("relocated", a.relocated != 0);
    j.signed_number("relocation_delta", a.relocation_delta);
    if (a.relocated) {
      j.string("relocation", a.relocation == MS_ARCHIVE_RELOCATE_LAZY ? "lazy" : "eager");
      j.string("relocation_reason", a.relocation_reason != nullptr ? a.relocation_reason : "");
    }
    j.number("file_bytes", a.file_bytes);
    j.number("reserved_bytes", a.reserved_bytes);
    j.number("class_region_bytes", a.class_region_bytes);
    j.number("nonclass_region_bytes", a.nonclass_region_bytes);
    j.number("class_used_bytes", a.used_bytes[MS_SPACE_CLASS]);
    j.number("nonclass_used_bytes", a.used_bytes[MS_SPACE_NONCLASS]);
    j.number("pointers", a.pointers);
    j.number("narrow_pointers", a.narrow_pointers);
    j.number("roots", a.roots);
    j.number("resident_bytes", a.resident_bytes);
    j.number("deallocations_ignored", a.deallocations_ignored);
  }
  j.end_object();
}

// A loader's or kind's allocation count: null when the metaspace does not count them.
void allocations(JsonWriter& j, bool counted, uint64_t n) {
  if (counted) {
    j.number("allocations", n);
  } else {
    j.null("allocations");
  }
}

void per_kind(JsonWriter& j, const std::vector<LoaderStats>& loaders, bool counted) {
  auto kinds = stats_by_kind(loaders);
  j.begin_array("kinds");
  for (int k = 0; k < MS_LOADER_KIND_COUNT; k++) {
    const KindStats& ks = kinds[k];
    j.begin_object();
    j.string("kind", loader_kind_name(static_cast<ms_loader_kind_t>(k)));
    j.number("loaders", ks.loaders);
    allocations(j, counted, ks.allocations);
    for (int s = 0; s < 2; s++) {
      j.begin_object(kSpaceKeys[s]);
      j.number("used_bytes", ks.used_bytes[s]);
      j.number("committed_bytes", ks.committed_bytes[s]);
      j.number("capacity_bytes", ks.capacity_bytes[s]);
      j.number("free_blocks_bytes", ks.free_blocks_bytes[s]);
      j.number("chunks", ks.chunks[s]);
      j.end_object();
    }
    j.end_object();
  }
  j.end_array();
}

void per_loader(JsonWriter& j, const std::vector<LoaderStats>& loaders, unsigned levels,
                size_t root_chunk_bytes, bool counted) {
  j.begin_array("loaders");
  for (const LoaderStats& l : loaders) {
    j.begin_object();
    j.number("handle", reinterpret_cast<uintptr_t>(l.handle));
    j.string("kind", loader_kind_name(l.kind));
    allocations(j, counted, l.allocations);
    for (int s = 0; s < 2; s++) {
      const ArenaStats& a = l.arena[s];
      j.begin_object(kSpaceKeys[s]);
      j.number("used_bytes", l.used_bytes[s]);
      j.number("committed_bytes", a.committed_bytes);
      j.number("capacity_bytes", a.capacity_bytes);
      j.number("pooled_bytes", l.pooled_bytes[s]);
      j.number("free_blocks_bytes", l.free_blocks_bytes[s]);
      j.number("free_blocks_count", a.free_blocks_count);
      j.number("chunks", a.chunks);
      j.begin_array("chunks_by_level");
      for (unsigned level = 0; level < levels; level++) {
        if (a.chunks_by_level[level] == 0) continue;
        j.begin_object();
        j.number("level", level);
        j.number("chunk_bytes", root_chunk_bytes >> level);
        j.number("count", a.chunks_by_level[level]);
        j.end_object();
      }
      j.end_array();
      j.end_object();
    }
    j.end_object();
  }
  j.end_array();
}

}  // namespace

void write_report_json(FILE* out, const ReportInput& in, const ms_report_options_t& options) {
  const ms_stats_t& t = in.snapshot.totals;
  const size_t root = in.settings.root_chunk_bytes;
  JsonWriter j(out);
  j.begin_object();
  j.string("schema", kReportSchema);
  j.number("schema_version", kReportSchemaVersion);
  settings(j, in);
  j.number("loader_count", t.loaders);
  j.boolean("allocations_counted", t.allocations_counted != 0);
  j.begin_object("loaders_by_kind");
  for (int k = 0; k < MS_LOADER_KIND_COUNT; k++) {
    j.number(loader_kind_name(static_cast<ms_loader_kind_t>(k)), t.loaders_by_kind[k]);
  }
  j.end_object();
  j.number("commits", t.commits);
  j.number("uncommits", t.uncommits);
  j.begin_object("spaces");
  for (int s = 0; s < 2; s++) space(j, kSpaceKeys[s], t.space[s], t.chunk_levels, root, options.free_lists);
  space(j, "total", t.total, t.chunk_levels, root, options.free_lists);
  j.end_object();
  j.begin_object("overhead_breakdown");
  for (int s = 0; s < 2; s++) {
    j.begin_array(kSpaceKeys[s]);
    for (const OverheadRow& r : overhead_rows(in.snapshot.bookkeeping[s])) {
      j.begin_object();
      j.string("what", r.what.c_str());
      j.number("bytes", r.bytes);
      j.number("objects", r.objects);
      j.number("pages", r.pages);
      j.end_object();
    }
    j.end_array();
  }
  j.end_object();
  if (in.archive_path != nullptr) archive_object(j, in);
  if (options.per_kind) per_kind(j, in.snapshot.loaders, t.allocations_counted != 0);
  if (options.per_loader) {
    per_loader(j, in.snapshot.loaders, t.chunk_levels, root, t.allocations_counted != 0);
  }
  j.end_object();
}

}  // namespace metaspace
