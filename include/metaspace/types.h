/*
 * libmetaspace's public types: error codes, enums, flags, the settings, statistics, usage and
 * report-option structs, callback types and the opaque handles. The functions that take them are
 * declared in <metaspace/metaspace.h>, which includes this header; include that one. The library
 * itself includes this header alone (it never sees the API's declarations below its api/ layer).
 *
 * Every struct here is part of the ABI: fields are only ever appended (docs/abi.md).
 */
#ifndef METASPACE_TYPES_H
#define METASPACE_TYPES_H

#include <stddef.h>
#include <stdint.h>

/* Every function of the C API is noexcept to a C++ caller: no exception ever leaves it. */
#ifdef __cplusplus
#define MS__NOEXCEPT noexcept
#else
#define MS__NOEXCEPT
#endif

/* A C caller may pass any int where an enum is expected, and the library refuses values out of
 * range (MS_ERR_INVALID_ARGUMENT). In C++ (the library's language) such a value is only valid for
 * an enum with a fixed underlying type; without one, merely reading it is undefined. */
#ifdef __cplusplus
#define MS__INT_ENUM : int
#else
#define MS__INT_ENUM
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque handles: a metaspace, a loader of it, an archive builder. */
typedef struct ms_metaspace ms_metaspace_t;
typedef struct ms_loader ms_loader_t;
typedef struct ms_archive_builder ms_archive_builder_t;


typedef enum ms_error MS__INT_ENUM {
  MS_OK = 0,
  MS_ERR_INVALID_ARGUMENT,   /* NULL handle, size 0, bad enum value, bad setting */
  MS_ERR_TOO_LARGE,          /* request larger than a root chunk: never served */
  MS_ERR_LIMIT,              /* the max committed size (cap) would be exceeded */
  MS_ERR_CLASS_SPACE_FULL,   /* the compressed class space range is exhausted */
  MS_ERR_COMMIT_FAILED,      /* the kernel refused to commit memory */
  MS_ERR_RESERVE_FAILED,     /* the kernel refused to reserve address space */
  MS_ERR_NOT_OWNED,          /* pointer not allocated from this loader */
  MS_ERR_DOUBLE_FREE,        /* block is already free (detected in checked mode) */
  MS_ERR_OVERWRITE,          /* a fence, or a freed block, was written over (checked mode) */
  MS_ERR_DESTROYED,          /* the loader (or metaspace) was already destroyed */
  MS_ERR_CORRUPTED,          /* verification found a broken invariant */
  MS_ERR_OUT_OF_MEMORY,      /* the library's own bookkeeping could not be allocated */
  /* The class-data archive (docs/archive.md): why a file was refused. */
  MS_ERR_ARCHIVE_IO,         /* the file cannot be opened, read, written or mapped */
  MS_ERR_ARCHIVE_FORMAT,     /* not an archive: wrong magic, truncated, inconsistent layout,
                                a bitmap marking a word that points outside the archive */
  MS_ERR_ARCHIVE_VERSION,    /* another format version or library version wrote it */
  MS_ERR_ARCHIVE_MISMATCH,   /* dumped with other settings (class alignment, class space size,
                                root chunk size) */
  MS_ERR_ARCHIVE_CHECKSUM,   /* contents differ from what was written */
  MS_ERR_ARCHIVE_CHANGED     /* the file changed while it was being mapped */
} ms_error_t;

typedef enum ms_space MS__INT_ENUM { MS_SPACE_NONCLASS = 0, MS_SPACE_CLASS = 1 } ms_space_t;

typedef enum ms_loader_kind MS__INT_ENUM {
  MS_LOADER_BOOT = 0,     /* one per runtime, huge: large chunks from the start */
  MS_LOADER_STANDARD = 1, /* ordinary loaders: small chunks first, growing */
  MS_LOADER_MICRO = 2     /* one class each (reflection, hidden classes): tiny chunks, never grow */
} ms_loader_kind_t;

#define MS_LOADER_KIND_COUNT 3

typedef enum ms_reclaim MS__INT_ENUM {
  MS_RECLAIM_NONE = 0,       /* never merge, never uncommit: the pre-elastic behaviour */
  MS_RECLAIM_BALANCED = 1,   /* merge on return, uncommit in ms_purge() */
  MS_RECLAIM_AGGRESSIVE = 2  /* merge and uncommit as soon as a chunk is returned */
} ms_reclaim_t;

/* Loader creation flags. */
#define MS_LOADER_SHARED 1u /* calls on this loader may come from several threads at once */

typedef void (*ms_gc_callback_t)(ms_metaspace_t* ms, size_t committed_bytes, void* user);

typedef struct ms_settings {
  size_t size;                    /* sizeof(ms_settings_t) the caller was built with (set by
                                     ms_settings_init); 0 is read as the 0.2 layout */
  ms_reclaim_t reclaim;           /* default MS_RECLAIM_BALANCED */
  size_t commit_granule_bytes;    /* 0: the reclaim policy's default; else power of 2, page..1 MiB */
  size_t root_chunk_bytes;        /* default 4 MiB; power of 2, 64 KiB..64 MiB */
  size_t node_bytes;              /* non-class node reservation, multiple of root chunk; default 64 MiB */
  size_t class_space_bytes;       /* compressed class space; default 1 GiB, up to 4 GiB. With
                                     the node size it sizes the two bookkeeping ranges
                                     (class_space_bytes / 8 + node_bytes / 2 each, 32 MiB ..
                                     4 GiB): a metaspace reserves ~1.4 GiB of address space with
                                     the defaults, ~210 MiB with a 64 MiB class space
                                     (docs/design.md, "Address space") */
  uintptr_t class_space_base;     /* requested base address; 0: anywhere */
  size_t class_alignment_bytes;   /* 8..1024, power of 2; narrow pointer shift = log2 of it */
  size_t max_committed_bytes;     /* cap on committed memory, both spaces; 0: unlimited */
  size_t gc_threshold_bytes;      /* soft threshold reported to gc_callback; 0: none */
  ms_gc_callback_t gc_callback;   /* called (outside all locks) when committed crosses the threshold */
  void* gc_callback_user;
  int checked;                    /* 1: canaries, zapping, protection of dead memory */
  /* GC threshold policy (HotSpot's MinMetaspaceFreeRatio, MaxMetaspaceFreeRatio,
   * MinMetaspaceExpansion). After each gc_callback (and each ms_gc_done) the threshold moves into
   * [max(c / (1 - min_free), c + min_expansion), c / (1 - max_free)], c = committed bytes then,
   * rounded up to a granule, at most max_committed_bytes. All three 0: the threshold stays put. */
  unsigned gc_min_free_percent;   /* 0..99; default 40 */
  unsigned gc_max_free_percent;   /* gc_min_free_percent..100 (100: never lowered); default 70 */
  size_t gc_min_expansion_bytes;  /* default 256 KiB */
  int report_at_exit;             /* MS_REPORT_TEXT/JSON: the report goes to stderr at ms_destroy,
                                     or at process exit for a metaspace still alive then */
  int verbose;                    /* 1: one line on stderr at ms_create and ms_destroy */
  /* ---- appended after the first 0.2 layout (class-data archive, docs/archive.md) ---- */
  const char* archive_path;       /* archive to map at ms_create (copied); NULL: none */
  int archive_policy;             /* MS_ARCHIVE_AUTO (default): a refused archive is left out and
                                     ms_archive_status says why; MS_ARCHIVE_REQUIRE: ms_create fails
                                     with the refusal's MS_ERR_ARCHIVE_* code */
  int archive_verify;             /* 1 (default): checksum of the regions and every marked slot
                                     checked at ms_create (reads the whole file); 0: header,
                                     bitmaps and roots only, the regions stay untouched until used */
  /* ---- appended after the archive's layout (lazy relocation, docs/archive.md) ---- */
  int archive_relocation;         /* when the archive's base is taken: MS_ARCHIVE_RELOCATE_AUTO
                                     (default: lazy when archive_verify is 0, else eager),
                                     _EAGER (every pointer moved in ms_create), _LAZY (pages moved
                                     when first touched, userfaultfd; eager where refused) */
  /* ---- appended after lazy relocation (counters off the fast path, docs/statistics-and-lookups.md) */
  int count_allocations;          /* 1: count every block handed out, for ms_loader_stats_t and
                                     the reports' allocation counts; the loaders' inline fast path
                                     stays closed so that every block goes through the library
                                     (as in checked mode, which always counts). 0 (default): not
                                     counted, and the statistics say so (allocations_counted) */
} ms_settings_t;

#define MS_ARCHIVE_AUTO 0
#define MS_ARCHIVE_REQUIRE 1

#define MS_ARCHIVE_RELOCATE_AUTO 0
#define MS_ARCHIVE_RELOCATE_EAGER 1
#define MS_ARCHIVE_RELOCATE_LAZY 2

#define MS_REPORT_NONE 0
#define MS_REPORT_TEXT 1
#define MS_REPORT_JSON 2

#define MS_ARCHIVE_DEFAULT_BASE ((uintptr_t)0x800000000) /* 32 GiB, as HotSpot's SharedBaseAddress */

/* Statistics, as ms_get_stats and ms_loader_get_stats fill them in (the identity their figures
 * keep is written at ms_get_stats, metaspace.h). */
#define MS_MAX_CHUNK_LEVELS 17

typedef struct ms_chunk_level_stats {
  size_t count;
  size_t bytes;
  size_t committed_bytes;
} ms_chunk_level_stats_t;

typedef struct ms_space_stats {
  size_t reserved_bytes;
  size_t committed_bytes;
  size_t used_bytes;              /* handed out and not freed (each block rounded up to 8 bytes) */
  size_t free_in_chunks_bytes;    /* committed, not yet handed out, in chunks in use */
  size_t free_chunks_bytes;       /* committed part of free chunks */
  size_t free_blocks_bytes;       /* blocks awaiting reuse; the sum of the next three */
  size_t deallocated_bytes;       /*   premature deallocations */
  size_t salvaged_bytes;          /*   committed tails of retired chunks */
  size_t alignment_gap_bytes;     /*   gaps behind class blocks (class alignment > 8) */
  size_t free_blocks_count;
  size_t fence_bytes;             /* checked mode: the fence behind every block */
  size_t overhead_bytes;          /* the library's own bookkeeping, part of committed_bytes:
                                     loader objects (live and recently dead), loaders' arenas
                                     (some inside their first non-class chunk), chunk headers,
                                     free-block structures */
  size_t chunks_in_use;
  size_t free_chunks;
  size_t nodes;
  size_t root_chunks;
  ms_chunk_level_stats_t free_chunks_by_level[MS_MAX_CHUNK_LEVELS];
} ms_space_stats_t;

/* The class-data archive as mapped (docs/archive.md). It is not part of the spaces' committed or
 * used figures: its memory is the file's pages, shared with every process mapping the file. */
typedef struct ms_archive_stats {
  int mapped;                     /* 1: an archive is mapped */
  int relocated;                  /* 1: it is not at the base it was written for */
  uintptr_t base;                 /* where it is mapped (the narrow class encoding base) */
  uintptr_t requested_base;       /* where it was written for */
  intptr_t relocation_delta;      /* base - requested_base */
  size_t file_bytes;              /* size of the file, all mapped */
  size_t reserved_bytes;          /* address range below the class space (file rounded up to a
                                     root chunk) */
  size_t class_region_bytes;      /* Klass-like blocks, inside the narrow pointer range */
  size_t nonclass_region_bytes;
  size_t used_bytes[2];           /* handed out at dump time, by ms_space_t */
  size_t pointers;                /* full pointer slots (relocated when relocated) */
  size_t narrow_pointers;         /* narrow class pointer slots (never relocated) */
  size_t roots;
  size_t resident_bytes;          /* pages of the file in memory now (mincore: the page cache,
                                     shared, whether or not this process touched them) */
  size_t deallocations_ignored;   /* ms_deallocate calls on archived blocks */
  /* ---- appended (lazy relocation) ---- */
  int relocation;                 /* how a relocated archive is moved: MS_ARCHIVE_RELOCATE_EAGER or
                                     _LAZY; 0 when not relocated */
  const char* relocation_reason;  /* why that way (e.g. "userfaultfd ... refused: ..."): valid
                                     while the metaspace lives; NULL when not relocated */
} ms_archive_stats_t;

typedef struct ms_stats {
  ms_space_stats_t space[2];      /* indexed by ms_space_t */
  ms_space_stats_t total;
  unsigned chunk_levels;          /* levels in use: root chunk (0) down to 1 KiB */
  size_t loaders;
  size_t loaders_by_kind[MS_LOADER_KIND_COUNT];
  size_t commit_granule_bytes;
  size_t commits, uncommits;      /* calls into the kernel so far */
  /* ---- appended after the first 0.2 layout ---- */
  ms_archive_stats_t archive;     /* the class-data archive; all 0 when none is mapped */
  /* ---- appended (counters off the fast path) ---- */
  int allocations_counted;        /* 1: loaders' `allocations` are exact counts (settings
                                     count_allocations or checked); 0: not counted, read as 0 */
} ms_stats_t;

typedef struct ms_loader_stats {
  ms_loader_kind_t kind;
  uint64_t allocations;           /* blocks handed out, if allocations_counted; else 0 */
  size_t used_bytes[2];
  size_t committed_bytes[2];
  size_t capacity_bytes[2];       /* sum of the chunks' sizes (+ a micro loader's bytes in shared chunks) */
  size_t free_blocks_bytes[2];
  size_t free_blocks_count[2];
  size_t chunks[2];
  size_t chunks_by_level[2][MS_MAX_CHUNK_LEVELS];
  /* ---- appended (counters off the fast path) ---- */
  int allocations_counted;        /* as ms_stats_t.allocations_counted */
} ms_loader_stats_t;

/* Usage in O(1), for callers that poll (a memory MXBean read): counters kept up to date as the
 * library works, read without any loader lock, so it never waits for a loader and never makes
 * one wait. `used` lags, per loader, by what it bumped on the inline fast path (at most the
 * committed rest of its current chunk) and by less than 64 KiB of frees and reuses since its
 * counters were last brought up to date; ms_get_stats brings them all up to date. `overhead` is the
 * library's own bookkeeping, part of
 * `committed`. Set `size` to sizeof(ms_usage_t) before the call (callers built against an older,
 * shorter struct get only the fields they know). */
typedef struct ms_space_usage {
  size_t reserved_bytes;
  size_t committed_bytes;
  size_t used_bytes;
  size_t overhead_bytes;
} ms_space_usage_t;

typedef struct ms_usage {
  size_t size;                    /* in: sizeof(ms_usage_t) as the caller knows it */
  ms_space_usage_t space[2];      /* indexed by ms_space_t */
  ms_space_usage_t total;
} ms_usage_t;

/* What the reports show (ms_print_report and the others). NULL options stand for the defaults:
 * dynamic scale, per-kind table and per-level freelists on, per-loader table off. */
typedef struct ms_report_options {
  size_t size;     /* sizeof(ms_report_options_t) the caller was built with (ms_report_options_init);
                      0 is read as the 0.2 layout */
  char scale;      /* 0 = dynamic, 'B', 'K', 'M', 'G' (binary multiples); text report only */
  int per_loader;  /* table of live loaders: kind, allocations (when counted),
                      used/committed/capacity, chunks */
  int per_kind;    /* the same summed per loader kind */
  int free_lists;  /* free chunks per level, not only per space */
} ms_report_options_t;

/* Receives a report piece by piece (ms_print_report_cb): text that is not NUL-terminated. */
typedef void (*ms_write_fn)(void* user, const char* text, size_t length);

#ifdef __cplusplus
}
#endif

#endif /* METASPACE_TYPES_H */
