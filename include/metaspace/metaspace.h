/*
 * libmetaspace — arena allocation for per-loader runtime metadata, with memory that goes back
 * to the operating system when loaders die (a re-creation of HotSpot's Elastic Metaspace).
 *
 * Threading contract
 *   - A metaspace may be used from any number of threads.
 *   - Calls on one loader must be serialized by the caller (a runtime holds its loader lock anyway),
 *     unless the loader was created with MS_LOADER_SHARED. This keeps the bump path free of atomics
 *     and locks for the common case.
 *   - MS_LOADER_SHARED loaders may be called from many threads at once: each thread bumps
 *     requests of up to 2 KiB in a window of its own per space (a TLAB; class space too at 8-byte
 *     class alignment, once the micro pool does not take the loader's Klasses), and only taking a
 *     new window, frees and other requests take the loader's lock.
 *     A freed block is reused when a thread next takes a window (best fit for its request). The
 *     unused rest of a thread's windows counts as used until they are retired (at most 66 KiB per
 *     thread and space); the window of a thread that exited is adopted by the next thread that
 *     needs one in that loader and space, or retired (its rest a free block) when a thread of the
 *     loader next takes a window of that space.
 *   - Loader death: ms_loader_destroy must not run concurrently with any other call on that loader
 *     from any thread. The caller orders it after them (a runtime destroys a loader only when no
 *     thread can load into it any more, and the threads that did have synchronized with the
 *     destroying one, e.g. through the runtime's own lock or a GC safepoint). Every window goes
 *     back with the loader's chunks; later calls with the dead handle fail (MS_ERR_DESTROYED).
 *   - Statistics, reports and verification may run concurrently with anything (docs/threads.md),
 *     ms_destroy of their metaspace included: it waits for the calls on that metaspace that are
 *     in flight on other threads, and later calls get MS_ERR_DESTROYED (a monitor may poll
 *     ms_get_usage until it sees that). Loader calls must still be over before ms_destroy.
 *   - fork() without exec may come at any time: it waits until no other thread is inside the
 *     library (pthread_atfork), so the child can go on using every metaspace and loader; its other
 *     threads count as ended there (docs/threads.md, "fork").
 *   - Not async-signal-safe, as malloc is not: a signal handler must not call the library when
 *     the code it interrupted may be inside it (its locks are not reentrant).
 *
 * Errors
 *   Functions that can fail return NULL or an ms_error_t and record the error for the calling
 *   thread: ms_last_error() / ms_last_error_text(). A failed call leaves all state consistent.
 *   No C++ exception ever leaves the library: a failed allocation of its own bookkeeping is
 *   MS_ERR_OUT_OF_MEMORY. Callbacks (GC threshold, report output) must not throw or longjmp.
 *
 * ABI (docs/abi.md)
 *   Structs the caller fills in (ms_settings_t, ms_report_options_t) start with `size`, set by
 *   their *_init function; structs the library fills in are passed with their size by the
 *   ms_get_stats / ms_loader_get_stats macros. New fields are only ever appended.
 */
#ifndef METASPACE_METASPACE_H
#define METASPACE_METASPACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#define MS__NOEXCEPT noexcept
#else
#define MS__NOEXCEPT
#endif

/* The library's version: the one place it is written (CMake reads it from here). While the major
 * version is 0, a new minor version may change the ABI (docs/abi.md). */
#define MS_VERSION_MAJOR 0
#define MS_VERSION_MINOR 2
#define MS_VERSION_PATCH 0

/* A C caller may pass any int where an enum is expected, and the library refuses values out of
 * range (MS_ERR_INVALID_ARGUMENT). In C++ (the library's language) such a value is only valid for
 * an enum with a fixed underlying type; without one, merely reading it is undefined. */
#ifdef __cplusplus
#define MS__INT_ENUM : int
#else
#define MS__INT_ENUM
#endif

typedef struct ms_metaspace ms_metaspace_t;
typedef struct ms_loader ms_loader_t;

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

/* Fills in the defaults (and `size`). Always call before changing fields. The macro passes the
 * caller's sizeof(ms_settings_t), so that a library newer than the caller's header writes only
 * the caller's bytes; FFI callers call ms_settings_init_sized with their struct's size (a size
 * below the 0.2 layout is MS_ERR_INVALID_ARGUMENT and nothing is written). The function
 * ms_settings_init assumes the 0.2 layout. */
ms_error_t ms_settings_init_sized(ms_settings_t* settings, size_t size) MS__NOEXCEPT;
void ms_settings_init(ms_settings_t* settings) MS__NOEXCEPT;
#define ms_settings_init(settings) ms_settings_init_sized((settings), sizeof(ms_settings_t))

/* Options from text, mimalloc/jemalloc style: "key=value,key=value", applied over *settings.
 * Keys: reclaim=none|balanced|aggressive, granule=16k, root_chunk=4m, node=64m, class_space=1g,
 * class_base=0x..., class_alignment=8, max_committed=256m, gc_threshold=64m, checked=0|1,
 * report_at_exit=none|text|json, verbose=0|1, archive=PATH, archive_policy=auto|require,
 * archive_verify=0|1, archive_relocation=auto|eager|lazy, count_allocations=0|1 (sizes and
 * class_base: decimal digits with an optional k, m or g suffix, binary, or 0x and hex digits;
 * no sign, no whitespace, no leading zero: "010k" is refused, not read as octal; PATH may not
 * contain a comma; spaces and tabs around keys and values are ignored). An unknown key or a bad value is
 * MS_ERR_INVALID_ARGUMENT naming it, and *settings is left unchanged.
 * Values are range-checked by ms_create, as for settings set in code. */
ms_error_t ms_settings_parse(ms_settings_t* settings, const char* options) MS__NOEXCEPT;
/* ms_settings_parse of the environment variable METASPACE_OPTIONS (unset or empty: MS_OK, no
 * change). Read when called: a runtime that wants users to configure it calls this between
 * ms_settings_init and ms_create. */
ms_error_t ms_settings_from_env(ms_settings_t* settings) MS__NOEXCEPT;

ms_metaspace_t* ms_create(const ms_settings_t* settings) MS__NOEXCEPT;  /* NULL: defaults */
/* Releases every loader and unmaps all reserved memory. First the metaspace leaves the live ones,
 * then ms_destroy waits until the calls other threads have in flight on it (statistics, reports,
 * ms_verify; one delivering its GC callback) have returned. Every later call with the handle
 * that checks it (all but the narrow class pointer functions and ms_is_archived) fails with
 * MS_ERR_DESTROYED while it is among the process's last 64 destroyed metaspaces (a second
 * ms_destroy does nothing but set it), with MS_ERR_INVALID_ARGUMENT after; no metaspace is ever
 * placed at a destroyed one's address, so the handle never names a newer one. From its GC
 * callback ms_destroy is allowed; from within another call on it on the same thread (a report's
 * write callback) it is refused with MS_ERR_INVALID_ARGUMENT. */
void ms_destroy(ms_metaspace_t* ms) MS__NOEXCEPT;

ms_loader_t* ms_loader_create(ms_metaspace_t* ms, ms_loader_kind_t kind, unsigned flags) MS__NOEXCEPT;
/* Returns all the loader's memory at once. Later calls with this handle are errors. */
ms_error_t ms_loader_destroy(ms_loader_t* loader) MS__NOEXCEPT;

/* Out-of-line part of ms_allocate; call ms_allocate. */
void* ms_allocate_slow(ms_loader_t* loader, ms_space_t space, size_t bytes) MS__NOEXCEPT;

/* Premature deallocation: the block is kept for reuse by the same loader. bytes must be the size
 * that was requested. */
ms_error_t ms_deallocate(ms_loader_t* loader, void* p, size_t bytes) MS__NOEXCEPT;

/* Returns the memory of free chunks to the OS (balanced policy); cheap to call after unloading. */
void ms_purge(ms_metaspace_t* ms) MS__NOEXCEPT;

/* Narrow (compressed) class pointers: (p - base) >> shift. 0 encodes NULL. The base
 * (ms_class_space_base) is the class space's start, or the start of the class-data archive mapped
 * right below it; the bits cover both. */
uint32_t ms_encode_class(const ms_metaspace_t* ms, const void* p) MS__NOEXCEPT;
void* ms_decode_class(const ms_metaspace_t* ms, uint32_t narrow) MS__NOEXCEPT;
uintptr_t ms_class_space_base(const ms_metaspace_t* ms) MS__NOEXCEPT;
unsigned ms_class_shift(const ms_metaspace_t* ms) MS__NOEXCEPT;
unsigned ms_narrow_class_bits(const ms_metaspace_t* ms) MS__NOEXCEPT;  /* bits for the range */
int ms_is_class_space(const ms_metaspace_t* ms, const void* p) MS__NOEXCEPT;
/* 1 if p lies in address space this metaspace reserved: a node of either space (committed or
 * not, in use or free) or the mapped archive. Lock-free and O(1), for a runtime's "is this
 * metadata?" questions (HotSpot's Metaspace::contains); it says nothing about whether a block
 * lives at p. */
int ms_contains(const ms_metaspace_t* ms, const void* p) MS__NOEXCEPT;

void ms_set_gc_threshold(ms_metaspace_t* ms, size_t bytes, ms_gc_callback_t cb, void* user) MS__NOEXCEPT;
/* The GC threshold contract: gc_callback runs (outside all locks) when committed memory reaches
 * the threshold, and also whenever the cap (max_committed_bytes) refuses a commit; after a
 * refusal the allocation is tried once more, so MS_ERR_LIMIT comes only after the runtime was
 * told and had its chance to unload. After the callback returns, the threshold moves by the
 * policy in ms_settings_t. ms_gc_done applies the policy now (a runtime that collects
 * asynchronously calls it when the collection finished; from the callback it tells the new
 * threshold) and returns the new threshold (0: none set). The callback may call the library
 * (statistics, ms_purge, loader calls); if it destroys the loader whose ms_allocate called it,
 * or the whole metaspace (ms_destroy), that ms_allocate returns NULL with MS_ERR_DESTROYED and
 * touches nothing of either afterwards. It is not entered again from within
 * itself on the same thread: a refusal there is MS_ERR_LIMIT at once. */
size_t ms_gc_done(ms_metaspace_t* ms) MS__NOEXCEPT;

/* Statistics. The totals come from counters read consistently under the two chunk managers'
 * locks, after every loader was visited (one at a time, never two loader locks at once) to bring
 * its counters up to date; per space and in total, exactly:
 *   committed = used + free_in_chunks + free_chunks + free_blocks + fence + overhead
 * Memory is charged to the space it lies in: non-class data placed in class alignment gaps
 * counts as class space. */
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

/* The library fills in the first out_size bytes (sizeof(ms_stats_t) of the caller's header), so
 * that a caller built against an older header, with a shorter struct, keeps working. The macro
 * passes that size; the function ms_get_stats (for FFI) assumes the 0.2 layout. */
ms_error_t ms_get_stats_sized(ms_metaspace_t* ms, ms_stats_t* out, size_t out_size) MS__NOEXCEPT;
ms_error_t ms_get_stats(ms_metaspace_t* ms, ms_stats_t* out) MS__NOEXCEPT;
#define ms_get_stats(ms, out) ms_get_stats_sized((ms), (out), sizeof(ms_stats_t))

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

/* As ms_get_stats: the macro passes the caller's struct size. */
ms_error_t ms_loader_get_stats_sized(ms_loader_t* loader, ms_loader_stats_t* out,
                                     size_t out_size) MS__NOEXCEPT;
ms_error_t ms_loader_get_stats(ms_loader_t* loader, ms_loader_stats_t* out) MS__NOEXCEPT;
#define ms_loader_get_stats(loader, out) \
  ms_loader_get_stats_sized((loader), (out), sizeof(ms_loader_stats_t))

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

ms_error_t ms_get_usage(ms_metaspace_t* ms, ms_usage_t* usage) MS__NOEXCEPT;

/* Reports in the spirit of jcmd VM.metaspace, from one snapshot. The text report has sections
 * Total usage, Virtual space, Chunk freelists, Waste, Settings, and optionally usage per loader
 * kind and per loader; the JSON report has the same data in bytes (schema "libmetaspace.report",
 * docs/report-schema.md). NULL options: dynamic scale, per-kind table and per-level freelists on,
 * per-loader table off. Output errors are the stream's (ferror). */
typedef struct ms_report_options {
  size_t size;     /* sizeof(ms_report_options_t) the caller was built with (ms_report_options_init);
                      0 is read as the 0.2 layout */
  char scale;      /* 0 = dynamic, 'B', 'K', 'M', 'G' (binary multiples); text report only */
  int per_loader;  /* table of live loaders: kind, allocations (when counted),
                      used/committed/capacity, chunks */
  int per_kind;    /* the same summed per loader kind */
  int free_lists;  /* free chunks per level, not only per space */
} ms_report_options_t;

/* The defaults that NULL options stand for (and `size`); sized like ms_settings_init. */
ms_error_t ms_report_options_init_sized(ms_report_options_t* options, size_t size) MS__NOEXCEPT;
void ms_report_options_init(ms_report_options_t* options) MS__NOEXCEPT;
#define ms_report_options_init(options) \
  ms_report_options_init_sized((options), sizeof(ms_report_options_t))

ms_error_t ms_print_report(ms_metaspace_t* ms, FILE* out,
                           const ms_report_options_t* options) MS__NOEXCEPT;
ms_error_t ms_write_report_json(ms_metaspace_t* ms, FILE* out,
                                const ms_report_options_t* options) MS__NOEXCEPT;

/* The same reports delivered to a callback, piece by piece (no FILE* needed: a runtime's own
 * logger, or a language without C stdio). `write` is called with text that is not
 * NUL-terminated; it runs in the calling thread while the report is being formatted (the
 * snapshot is taken first, no library lock is held) and must not call back into this metaspace. */
typedef void (*ms_write_fn)(void* user, const char* text, size_t length);
ms_error_t ms_print_report_cb(ms_metaspace_t* ms, ms_write_fn write, void* user,
                              const ms_report_options_t* options) MS__NOEXCEPT;
ms_error_t ms_write_report_json_cb(ms_metaspace_t* ms, ms_write_fn write, void* user,
                                   const ms_report_options_t* options) MS__NOEXCEPT;

/* Checks every invariant; MS_OK or MS_ERR_CORRUPTED/MS_ERR_OVERWRITE (details in last error text). */
ms_error_t ms_verify(ms_metaspace_t* ms) MS__NOEXCEPT;

ms_error_t ms_last_error(void) MS__NOEXCEPT;
const char* ms_last_error_text(void) MS__NOEXCEPT;
/* The version of the library actually linked, "MAJOR.MINOR.PATCH" (the header's macros say which
 * one the caller was compiled against). */
const char* ms_version(void) MS__NOEXCEPT;
const char* ms_error_name(ms_error_t e) MS__NOEXCEPT;

/* ms_allocate as a real, exported function: for FFI callers (Python, Rust, Go...), compilers
 * without GNU builtins and anyone who cannot compile the inline fast path. Same contract. */
void* ms_alloc(ms_loader_t* loader, ms_space_t space, size_t bytes) MS__NOEXCEPT;

/* ---- Class-data archive (docs/archive.md) ----
 * Dump: a runtime fills a builder the way it fills a loader, then writes a file. At start-up
 * ms_create (settings.archive_path) maps that file copy-on-write directly below the class space,
 * so that one narrow base and shift cover archived and new classes; if its base is taken it is
 * mapped elsewhere and every marked pointer is moved by the difference. Archived blocks are never
 * freed. */
typedef struct ms_archive_builder ms_archive_builder_t;

#define MS_ARCHIVE_DEFAULT_BASE ((uintptr_t)0x800000000) /* 32 GiB, as HotSpot's SharedBaseAddress */

/* A builder for the settings the archive will be mapped with (class alignment, class space size
 * and root chunk size must match at ms_create; NULL: defaults). requested_base: where the file is
 * meant to be mapped, aligned to the root chunk size; 0: MS_ARCHIVE_DEFAULT_BASE. */
ms_archive_builder_t* ms_archive_begin(const ms_settings_t* settings,
                                       uintptr_t requested_base) MS__NOEXCEPT;
/* A zeroed block of the archive: class space (aligned to the class alignment) or non-class. */
void* ms_archive_allocate(ms_archive_builder_t* builder, ms_space_t space, size_t bytes) MS__NOEXCEPT;
/* `slot`, an aligned word inside a block, holds (by ms_archive_write) NULL or a pointer into a
 * block of this builder; it is rewritten to the block's mapped address. */
ms_error_t ms_archive_mark_pointer(ms_archive_builder_t* builder, void* slot) MS__NOEXCEPT;
/* `slot`, 4-byte aligned inside a block, holds 0 or ms_archive_encode_class of a class block. */
ms_error_t ms_archive_mark_narrow_class(ms_archive_builder_t* builder, void* slot) MS__NOEXCEPT;
/* The narrow class pointer `klass` will have once mapped (ms_encode_class then returns the same);
 * 0 with MS_ERR_INVALID_ARGUMENT if it is not a class block of this builder. */
uint32_t ms_archive_encode_class(ms_archive_builder_t* builder, const void* klass) MS__NOEXCEPT;
/* Names a block (names up to 55 bytes; a name set again is replaced). */
ms_error_t ms_archive_set_root(ms_archive_builder_t* builder, const char* name,
                               const void* block) MS__NOEXCEPT;
/* Writes the file (to path.tmp, renamed over path). The builder stays usable. */
ms_error_t ms_archive_write(ms_archive_builder_t* builder, const char* path) MS__NOEXCEPT;
/* Frees the builder. Its handle is checked by every builder call: MS_ERR_DESTROYED after the
 * discard (while among the last 64 discarded; a second discard does nothing but set it),
 * MS_ERR_INVALID_ARGUMENT for anything that is no builder; no builder is ever placed at a
 * discarded one's address. One builder is for one thread at a time. */
void ms_archive_discard(ms_archive_builder_t* builder) MS__NOEXCEPT;

/* The block named `name` in the mapped archive; NULL (MS_ERR_INVALID_ARGUMENT) if none. */
void* ms_archive_root(ms_metaspace_t* ms, const char* name) MS__NOEXCEPT;
/* 1 if p lies in the mapped archive (a range check). */
int ms_is_archived(const ms_metaspace_t* ms, const void* p) MS__NOEXCEPT;
/* MS_OK if the archive asked for is mapped (or none was asked for); else the MS_ERR_ARCHIVE_*
 * (or reservation) error that kept it out under MS_ARCHIVE_AUTO, with the sentence in *reason
 * (valid while ms lives; reason may be NULL). */
ms_error_t ms_archive_status(ms_metaspace_t* ms, const char** reason) MS__NOEXCEPT;

/* ---- inline fast path ----
 * Private layout: only this header's inline code may touch it. It is part of the ABI of one
 * soname (docs/abi.md): a change of it changes the soname and the symbol version, so an
 * executable compiled against another layout never runs against this library. */

struct ms__bump {
  char* top;         /* next free byte of the current chunk */
  char* end;         /* end of its committed part; top == end == NULL while the fast path is off */
  /* Not used by the inline paths. They used to count their blocks here (a store per block; named
   * allocs, then unused_allocs) and no longer count (ms_settings_t.count_allocations); kept so that
   * the layout, and the soname, stay. An executable built against an older header may still
   * write it while it bumps, so the library reads it only where no inline path bumps: a shared
   * loader's bump[MS_SPACE_NONCLASS].spare holds the key to its threads' windows. */
  uint64_t spare;
};

/* A non-class arena's exact-size bins of freed blocks, made when the loader first frees
 * something, published (ms__loader_head.bins) only for loaders the inline paths may serve: not
 * shared, not checked. Small bins hold 1..32 words; the medium bins (33..128 words) come with the
 * first free of such a size. A free block's first word links to the next block of its bin; the
 * link's low 3 bits are a tag, 0 for a block the runtime freed that lies in the loader's own
 * non-class chunks: the only blocks the inline paths file and take. Everything else (other tags,
 * the size tree above 128 words, the counters by origin) is the library's, out of line. */
struct ms__free_bin {
  uintptr_t first;   /* first block, or 0 */
  size_t count;      /* blocks in the bin (read by statistics from other threads: atomic) */
};

struct ms__medium_bins {
  uint64_t mask[2];               /* bit i: bin of 33 + i words is not empty */
  struct ms__free_bin bin[96];    /* 33..128 words */
};

struct ms__free_bins {
  uint64_t mask;       /* bit i: bin of i + 1 words is not empty */
  uint32_t busy;       /* 1 while the owner is inside an inline free or reuse */
  uint32_t excluded;   /* non-zero while ms_verify walks the lists: the inline paths step aside */
  intptr_t budget;     /* bytes inline frees and reuses may still move before the space counters
                          must be brought up to date (out of line) */
  uintptr_t current_lo;  /* start of the current chunk: [current_lo, bump.top) is handed out */
  uintptr_t retired_lo;  /* a retired chunk's handed-out part [retired_lo, retired_hi): the */
  uintptr_t retired_hi;  /* last one an out-of-line free found a block in (frees cluster) */
  struct ms__medium_bins* medium;  /* NULL until the first free of 33..128 words */
  struct ms__free_bin bin[32];     /* 1..32 words */
};

/* A loader handle is the address of the loader's head (16-byte aligned) plus a tag in its low 4
 * bits, chosen when the loader is created so that no live handle equals one of the 1 024 handles
 * that died last: a destroyed loader's object is reused at once, and a stale handle to it still
 * gets MS_ERR_DESTROYED (docs/guarantees.md). The inline paths clear the tag to reach the head. */
#define MS__HANDLE_TAG_MASK ((uintptr_t)15u)

struct ms__loader_head {
  /* (uintptr_t)handle ^ ms__handle_secret while the loader is alive, else 0: the handle, tag
   * included, so a stale handle to a reused object does not match its new cookie. A handle that is
   * not a live loader (another struct, the metaspace handle, freed memory) almost surely has
   * something else in its first word, so the fast path refuses it without touching it further
   * and the slow path reports MS_ERR_INVALID_ARGUMENT or MS_ERR_DESTROYED. The address binding
   * refuses copies and self-pointing words; the per-process secret, patterns fixed at compile
   * time. */
  uintptr_t cookie;
  struct ms__bump bump[2];  /* indexed by ms_space_t */
  /* Largest block awaiting reuse, by space: requests up to it go where best fit is. At least the
   * largest free block's size (an inline reuse may leave it higher until the next slow path)
   * wherever the window may open; 0 where it never does (shared loaders, checked or counting
   * mode: every request goes out of line there anyway). */
  uint32_t fit_max[2];
  struct ms__free_bins* bins; /* the non-class bins the inline paths may use, or NULL */
};

/* Chosen at random when the first metaspace is created, never changed after (loaders exist only
 * after that); non-zero before. Read by the inline fast path only. */
extern uintptr_t ms__handle_secret;

/* The head a loader handle names: the handle without its tag (MS__HANDLE_TAG_MASK). */
static inline struct ms__loader_head* ms__head_of(ms_loader_t* loader) MS__NOEXCEPT {
  return (struct ms__loader_head*)((uintptr_t)loader & ~MS__HANDLE_TAG_MASK);
}

#if defined(__GNUC__) && !defined(MS_NO_INLINE_FAST_PATH)
#define MS__LIKELY(x) __builtin_expect(!!(x), 1)

/* The owner's side of the exclusion from ms_verify (docs/threads.md): a plain store and a load,
 * ordered against ms_verify's store and load by the membarrier() that ms_verify issues. 0: a
 * reader is walking the lists, take the out-of-line path (it waits on the loader's lock). */
static inline int ms__bins_enter(struct ms__free_bins* f) MS__NOEXCEPT {
  __atomic_store_n(&f->busy, 1u, __ATOMIC_RELAXED);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  if (__atomic_load_n(&f->excluded, __ATOMIC_ACQUIRE) == 0) return 1;
  __atomic_store_n(&f->busy, 0u, __ATOMIC_RELEASE);
  return 0;
}

static inline void ms__bins_leave(struct ms__free_bins* f) MS__NOEXCEPT {
  __atomic_store_n(&f->busy, 0u, __ATOMIC_RELEASE);
}

/* Whether f has a bin of w words (1..128): the small ones always, the medium ones (33..128)
 * once the first block of such a size was freed. */
static inline int ms__bin_exists(const struct ms__free_bins* f, size_t w) MS__NOEXCEPT {
  return ((uintptr_t)f->medium | (uintptr_t)(w <= 32u)) != 0;
}

/* The bin of w words in f, which exists (ms__bin_exists). Small or medium is chosen by a
 * conditional move, not a branch: in the size mix the two come in random order (89 % small),
 * and the mispredicted branch was ~15 % of an inline reuse's samples. Each kind's base is its
 * array moved back by its first size, so the bin is base + w entries for both (computed as
 * integers: the medium base is formed, never used, while there are no medium bins). */
static inline struct ms__free_bin* ms__bin_at(struct ms__free_bins* f, size_t w) MS__NOEXCEPT {
  uintptr_t small_base = (uintptr_t)f->bin - 1u * sizeof(struct ms__free_bin);
  uintptr_t medium_base = (uintptr_t)f->medium + offsetof(struct ms__medium_bins, bin) -
                          33u * sizeof(struct ms__free_bin);
  uintptr_t small = w <= 32u;
  /* Opaque to the optimizer (no instruction): otherwise it may thread the caller's later test of
   * the same size into a branch here, as it did in the inline free. */
  __asm__("" : "+r"(small));
  uintptr_t base = small ? small_base : medium_base;
  return (struct ms__free_bin*)(base + w * sizeof(struct ms__free_bin));
}

/* The non-empty mask word of the bin of w words, and its bit. Only when a bin empties or fills,
 * so not on the way of a push or pop to a bin that keeps blocks. */
static inline uint64_t* ms__bin_mask_of(struct ms__free_bins* f, size_t w,
                                        uint64_t* bit) MS__NOEXCEPT {
  if (w <= 32u) {
    *bit = (uint64_t)1 << (w - 1u);
    return &f->mask;
  }
  *bit = (uint64_t)1 << ((w - 33u) % 64u);
  return &f->medium->mask[(w - 33u) / 64u];
}

/* Pops a block of exactly n bytes (8..1024, a multiple of 8) off f's bin of that size if the
 * bin's first block has tag 0 and the budget allows; NULL otherwise (the caller takes the
 * library's path). Shared by the inline reuse (non-class bins) and the library's owner path for
 * class space (docs/threads.md). Counts nothing: the bins are published only while allocations
 * are not counted. */
__attribute__((always_inline, unused)) static inline void* ms__bins_pop(
    struct ms__free_bins* f, size_t n) MS__NOEXCEPT {
  size_t w = n / 8u;
  if (!ms__bins_enter(f)) return NULL;
  if (!ms__bin_exists(f, w)) {
    ms__bins_leave(f);
    return NULL;
  }
  struct ms__free_bin* bin = ms__bin_at(f, w);
  uintptr_t block = bin->first;
  intptr_t budget = __atomic_load_n(&f->budget, __ATOMIC_RELAXED);
  /* The block's own link carries its tag: only tag 0 (freed here, own space) is taken. */
  uintptr_t next = block != 0 ? *(uintptr_t*)block : 7u;
  if ((next & 7u) == 0 && budget >= (intptr_t)n) {
    bin->first = next;
    if (next == 0) {
      uint64_t bit;
      uint64_t* mask = ms__bin_mask_of(f, w, &bit);
      *mask &= ~bit;
    }
    __atomic_store_n(&bin->count, bin->count - 1u, __ATOMIC_RELAXED);
    __atomic_store_n(&f->budget, budget - (intptr_t)n, __ATOMIC_RELAXED);
    ms__bins_leave(f);
    return (void*)block;
  }
  ms__bins_leave(f);
  return NULL;
}

/* Pushes the block p of n bytes (8..1024, a multiple of 8, p 8-byte aligned) on f's bin of its
 * size if it lies in the handed-out part of the current chunk, [f->current_lo, top), or of the
 * retired chunk [f->retired_lo, f->retired_hi), its bin exists and the budget allows; raises
 * *fit_max. 1 if filed, 0: the caller takes the library's path. Shared by the inline free
 * (non-class bins) and the library's owner path for class space (docs/threads.md). */
__attribute__((always_inline, unused)) static inline int ms__bins_push(
    struct ms__free_bins* f, uintptr_t top, void* p, size_t n, uint32_t* fit_max) MS__NOEXCEPT {
  uintptr_t a = (uintptr_t)p;
  /* Inside [lo, hi) with all n bytes: three compares, safe against wrap-around. */
  int owned = (a >= f->current_lo && a < top && n <= top - a) ||
              (a >= f->retired_lo && a < f->retired_hi && n <= f->retired_hi - a);
  if (!owned || !ms__bins_enter(f)) return 0;
  size_t w = n / 8u;
  intptr_t budget = __atomic_load_n(&f->budget, __ATOMIC_RELAXED);
  if (ms__bin_exists(f, w) && budget >= (intptr_t)n) {
    struct ms__free_bin* bin = ms__bin_at(f, w);
    uintptr_t first = bin->first;
    *(uintptr_t*)p = first;
    bin->first = a;
    if (first == 0) {
      uint64_t bit;
      uint64_t* mask = ms__bin_mask_of(f, w, &bit);
      *mask |= bit;
    }
    __atomic_store_n(&bin->count, bin->count + 1u, __ATOMIC_RELAXED);
    __atomic_store_n(&f->budget, budget - (intptr_t)n, __ATOMIC_RELAXED);
    if (n > *fit_max) __atomic_store_n(fit_max, (uint32_t)n, __ATOMIC_RELAXED);
    ms__bins_leave(f);
    return 1;
  }
  ms__bins_leave(f);
  return 0;
}

/* The part of ms_allocate behind the bump: a request that a freed block of exactly its size can
 * serve pops that block (an exact fit is a best fit); anything else is the library's. Kept out
 * of ms_allocate's body, so that the bump stays small enough to be inlined at every call site. */
__attribute__((noinline, unused)) static void* ms__allocate_reuse(
    ms_loader_t* loader, ms_space_t space, size_t bytes, size_t n) MS__NOEXCEPT {
  struct ms__free_bins* f = ms__head_of(loader)->bins;
  /* Non-class space and 8..1024 bytes in one test (space is 0 or 1 here). fit_max is not tested
   * again: no bin holds a block above it (it is at least the largest free block), so a request
   * above it that comes here because the bump is out of room finds its bin empty; an exact fit
   * it finds is a best fit whatever fit_max says. */
  if (f != NULL && ((n - 1u) | ((size_t)space << 10)) < 1024u) {
    void* p = ms__bins_pop(f, n);
    if (p != NULL) return p;
  }
  return ms_allocate_slow(loader, space, bytes);
}

/* Allocates bytes (rounded up to 8, or to the class alignment in class space) from the loader.
 * NULL on failure with the reason in ms_last_error(). The fast path is a pointer bump; then the
 * exact-size reuse above; then the library. Neither counts the block: per-block counts are kept
 * only with ms_settings_t.count_allocations (or checked mode), which keeps this path closed. */
static inline void* ms_allocate(ms_loader_t* loader, ms_space_t space, size_t bytes) MS__NOEXCEPT {
  struct ms__loader_head* head = ms__head_of(loader);
  if (MS__LIKELY(loader != NULL && (unsigned)space <= 1u &&
                 __atomic_load_n(&head->cookie, __ATOMIC_RELAXED) ==
                     ((uintptr_t)loader ^ ms__handle_secret))) {
    size_t n = (bytes + 7u) & ~(size_t)7u;
    /* A request that some free block could hold goes to the reuse or the slow path. Tested before
     * the window is read, so that such a request (every one of a loader that reuses freed
     * blocks) leaves at once (reuse 108 -> 99 instructions a block). A loader whose window never
     * opens (shared, checked) keeps fit_max at 0: it passes this test every time and fails the
     * room test every time, two branches the CPU predicts. n == 0 (bytes == 0, or a size that
     * overflowed while rounding) is never above fit_max, so n <= end - top is then the whole
     * room test (top == end == NULL while the window is closed). */
    if (MS__LIKELY(n > __atomic_load_n(&head->fit_max[space], __ATOMIC_RELAXED))) {
      struct ms__bump* b = &head->bump[space];
      char* top = __atomic_load_n(&b->top, __ATOMIC_RELAXED);
      char* end = __atomic_load_n(&b->end, __ATOMIC_RELAXED);
      if (MS__LIKELY(n <= (size_t)(end - top))) {
        __atomic_store_n(&b->top, top + n, __ATOMIC_RELAXED);
        return top;
      }
    }
    return ms__allocate_reuse(loader, space, bytes, n);
  }
  return ms_allocate_slow(loader, space, bytes);
}

/* Premature deallocation, inline when it is a plain push: a block of up to 128 words that lies in
 * the loader's current chunk or the retired chunk its last out-of-line free hit goes to the head
 * of its exact-size bin. Everything else (other chunks, class space, checked mode, shared loaders,
 * bad input) is the exported ms_deallocate (which pushes class space blocks the same way, on the
 * class arena's bins, without the loader lock). */
static inline ms_error_t ms__deallocate_inline(ms_loader_t* loader, void* p,
                                               size_t bytes) MS__NOEXCEPT {
  struct ms__loader_head* head = ms__head_of(loader);
  if (MS__LIKELY(loader != NULL && __atomic_load_n(&head->cookie, __ATOMIC_RELAXED) ==
                                       ((uintptr_t)loader ^ ms__handle_secret))) {
    struct ms__free_bins* f = head->bins;
    size_t n = (bytes + 7u) & ~(size_t)7u;
    if (f != NULL && n - 1u < 1024u && ((uintptr_t)p & 7u) == 0) {
      uintptr_t top = (uintptr_t)__atomic_load_n(&head->bump[MS_SPACE_NONCLASS].top,
                                                 __ATOMIC_RELAXED);
      if (ms__bins_push(f, top, p, n, &head->fit_max[MS_SPACE_NONCLASS])) return MS_OK;
    }
  }
  return (ms_deallocate)(loader, p, bytes);
}
#define ms_deallocate(loader, p, bytes) ms__deallocate_inline((loader), (p), (bytes))
#else
/* Without GNU atomics builtins (or with MS_NO_INLINE_FAST_PATH): the exported calls. */
static inline void* ms_allocate(ms_loader_t* loader, ms_space_t space, size_t bytes) MS__NOEXCEPT {
  return ms_alloc(loader, space, bytes);
}
#endif

#ifdef __cplusplus
}
#endif

#endif /* METASPACE_METASPACE_H */
