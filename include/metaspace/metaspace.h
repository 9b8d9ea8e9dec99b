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

#include <stdio.h>

#include "types.h" /* error codes, enums, settings, statistics: every type the API names */

/* The library's version: the one place it is written (CMake reads it from here). While the major
 * version is 0, a new minor version may change the ABI (docs/abi.md). */
#define MS_VERSION_MAJOR 0
#define MS_VERSION_MINOR 2
#define MS_VERSION_PATCH 0

#ifdef __cplusplus
extern "C" {
#endif

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
 * that was requested. A macro of the same name does a plain push inline (detail/fast_path.h). */
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

/* Statistics (ms_stats_t, ms_loader_stats_t in types.h). The totals come from counters read
 * consistently under the two chunk managers' locks, after every loader was visited (one at a time,
 * never two loader locks at once) to bring its counters up to date; per space and in total,
 * exactly:
 *   committed = used + free_in_chunks + free_chunks + free_blocks + fence + overhead
 * Memory is charged to the space it lies in: non-class data placed in class alignment gaps
 * counts as class space. */

/* The library fills in the first out_size bytes (sizeof(ms_stats_t) of the caller's header), so
 * that a caller built against an older header, with a shorter struct, keeps working. The macro
 * passes that size; the function ms_get_stats (for FFI) assumes the 0.2 layout. */
ms_error_t ms_get_stats_sized(ms_metaspace_t* ms, ms_stats_t* out, size_t out_size) MS__NOEXCEPT;
ms_error_t ms_get_stats(ms_metaspace_t* ms, ms_stats_t* out) MS__NOEXCEPT;
#define ms_get_stats(ms, out) ms_get_stats_sized((ms), (out), sizeof(ms_stats_t))

/* As ms_get_stats: the macro passes the caller's struct size. */
ms_error_t ms_loader_get_stats_sized(ms_loader_t* loader, ms_loader_stats_t* out,
                                     size_t out_size) MS__NOEXCEPT;
ms_error_t ms_loader_get_stats(ms_loader_t* loader, ms_loader_stats_t* out) MS__NOEXCEPT;
#define ms_loader_get_stats(loader, out) \
  ms_loader_get_stats_sized((loader), (out), sizeof(ms_loader_stats_t))

/* Usage in O(1) (ms_usage_t in types.h). Set `size` to sizeof(ms_usage_t) before the call. */
ms_error_t ms_get_usage(ms_metaspace_t* ms, ms_usage_t* usage) MS__NOEXCEPT;

/* Reports in the spirit of jcmd VM.metaspace, from one snapshot. The text report has sections
 * Total usage, Virtual space, Chunk freelists, Waste, Settings, and optionally usage per loader
 * kind and per loader; the JSON report has the same data in bytes (schema "libmetaspace.report",
 * docs/report-schema.md). NULL options: the defaults of ms_report_options_init. Output errors are
 * the stream's (ferror). */
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

#ifdef __cplusplus
}
#endif

/* ---- inline fast path ----
 * The loader's private layout and the inline code that reads it live in metaspace/detail/; only
 * that code may touch the layout (docs/abi.md). */
#include "detail/fast_path.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Allocates bytes (rounded up to 8, or to the class alignment in class space) from the loader.
 * NULL on failure with the reason in ms_last_error(). Inline: a pointer bump, then an exact-size
 * reuse of a freed block, then the library (detail/fast_path.h). */
static inline void* ms_allocate(ms_loader_t* loader, ms_space_t space, size_t bytes) MS__NOEXCEPT {
  return ms__allocate_inline(loader, space, bytes);
}

#ifdef __cplusplus
}
#endif

#endif /* METASPACE_METASPACE_H */
