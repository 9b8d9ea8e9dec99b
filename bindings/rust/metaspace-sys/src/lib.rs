//! Raw bindings to `include/metaspace/metaspace.h` 0.2: every constant, type and function of the
//! C API as `extern "C"` items and `#[repr(C)]` structs (checked against the header by
//! `tests/header.rs`, layouts included). For a safe API use the `metaspace` crate.
//!
//! Allocation goes through `ms_alloc`, the exported form of the header's inline `ms_allocate`
//! (`ms_allocate` here is that call). Structs are passed with `size_of` of these definitions to
//! the `*_sized` calls (`ms_settings_init_sized`, `ms_get_stats_sized`, ...), so that the library
//! touches only the bytes they have; the unsized `ms_settings_init`, `ms_get_stats`,
//! `ms_loader_get_stats` and `ms_report_options_init` assume the first 0.2 layout.
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_int, c_uint, c_void};

pub const MS_VERSION_MAJOR: c_int = 0;
pub const MS_VERSION_MINOR: c_int = 2;
pub const MS_VERSION_PATCH: c_int = 0;

/// `ms_error_t`: a C enum, passed as `int` (the library may return codes a newer header added).
pub type ms_error_t = c_int;
pub const MS_OK: ms_error_t = 0;
pub const MS_ERR_INVALID_ARGUMENT: ms_error_t = 1;
pub const MS_ERR_TOO_LARGE: ms_error_t = 2;
pub const MS_ERR_LIMIT: ms_error_t = 3;
pub const MS_ERR_CLASS_SPACE_FULL: ms_error_t = 4;
pub const MS_ERR_COMMIT_FAILED: ms_error_t = 5;
pub const MS_ERR_RESERVE_FAILED: ms_error_t = 6;
pub const MS_ERR_NOT_OWNED: ms_error_t = 7;
pub const MS_ERR_DOUBLE_FREE: ms_error_t = 8;
pub const MS_ERR_OVERWRITE: ms_error_t = 9;
pub const MS_ERR_DESTROYED: ms_error_t = 10;
pub const MS_ERR_CORRUPTED: ms_error_t = 11;
pub const MS_ERR_OUT_OF_MEMORY: ms_error_t = 12;
pub const MS_ERR_ARCHIVE_IO: ms_error_t = 13;
pub const MS_ERR_ARCHIVE_FORMAT: ms_error_t = 14;
pub const MS_ERR_ARCHIVE_VERSION: ms_error_t = 15;
pub const MS_ERR_ARCHIVE_MISMATCH: ms_error_t = 16;
pub const MS_ERR_ARCHIVE_CHECKSUM: ms_error_t = 17;
pub const MS_ERR_ARCHIVE_CHANGED: ms_error_t = 18;

pub type ms_space_t = c_int;
pub const MS_SPACE_NONCLASS: ms_space_t = 0;
pub const MS_SPACE_CLASS: ms_space_t = 1;

pub type ms_loader_kind_t = c_int;
pub const MS_LOADER_BOOT: ms_loader_kind_t = 0;
pub const MS_LOADER_STANDARD: ms_loader_kind_t = 1;
pub const MS_LOADER_MICRO: ms_loader_kind_t = 2;
pub const MS_LOADER_KIND_COUNT: usize = 3;

pub type ms_reclaim_t = c_int;
pub const MS_RECLAIM_NONE: ms_reclaim_t = 0;
pub const MS_RECLAIM_BALANCED: ms_reclaim_t = 1;
pub const MS_RECLAIM_AGGRESSIVE: ms_reclaim_t = 2;

/// Loader creation flag: calls on this loader may come from several threads at once.
pub const MS_LOADER_SHARED: c_uint = 1;

pub const MS_ARCHIVE_AUTO: c_int = 0;
pub const MS_ARCHIVE_REQUIRE: c_int = 1;
pub const MS_ARCHIVE_RELOCATE_AUTO: c_int = 0;
pub const MS_ARCHIVE_RELOCATE_EAGER: c_int = 1;
pub const MS_ARCHIVE_RELOCATE_LAZY: c_int = 2;
pub const MS_ARCHIVE_DEFAULT_BASE: usize = 0x800000000;

pub const MS_REPORT_NONE: c_int = 0;
pub const MS_REPORT_TEXT: c_int = 1;
pub const MS_REPORT_JSON: c_int = 2;

pub const MS_MAX_CHUNK_LEVELS: usize = 17;

#[repr(C)]
pub struct ms_metaspace_t {
    _private: [u8; 0],
}
#[repr(C)]
pub struct ms_loader_t {
    _private: [u8; 0],
}
#[repr(C)]
pub struct ms_archive_builder_t {
    _private: [u8; 0],
}
/// C's `FILE` (opaque), for `ms_print_report` and `ms_write_report_json`.
#[repr(C)]
pub struct FILE {
    _private: [u8; 0],
}

pub type ms_gc_callback_t =
    Option<unsafe extern "C" fn(ms: *mut ms_metaspace_t, committed_bytes: usize, user: *mut c_void)>;
pub type ms_write_fn =
    Option<unsafe extern "C" fn(user: *mut c_void, text: *const c_char, length: usize)>;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ms_settings_t {
    pub size: usize,
    pub reclaim: ms_reclaim_t,
    pub commit_granule_bytes: usize,
    pub root_chunk_bytes: usize,
    pub node_bytes: usize,
    pub class_space_bytes: usize,
    pub class_space_base: usize,
    pub class_alignment_bytes: usize,
    pub max_committed_bytes: usize,
    pub gc_threshold_bytes: usize,
    pub gc_callback: ms_gc_callback_t,
    pub gc_callback_user: *mut c_void,
    pub checked: c_int,
    pub gc_min_free_percent: c_uint,
    pub gc_max_free_percent: c_uint,
    pub gc_min_expansion_bytes: usize,
    pub report_at_exit: c_int,
    pub verbose: c_int,
    // appended: the class-data archive (docs/archive.md)
    pub archive_path: *const c_char,
    pub archive_policy: c_int,
    pub archive_verify: c_int,
    // appended: lazy relocation
    pub archive_relocation: c_int,
    // appended: per-block allocation counts, which close the inline fast path
    pub count_allocations: c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ms_chunk_level_stats_t {
    pub count: usize,
    pub bytes: usize,
    pub committed_bytes: usize,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ms_space_stats_t {
    pub reserved_bytes: usize,
    pub committed_bytes: usize,
    pub used_bytes: usize,
    pub free_in_chunks_bytes: usize,
    pub free_chunks_bytes: usize,
    pub free_blocks_bytes: usize,
    pub deallocated_bytes: usize,
    pub salvaged_bytes: usize,
    pub alignment_gap_bytes: usize,
    pub free_blocks_count: usize,
    pub fence_bytes: usize,
    pub overhead_bytes: usize,
    pub chunks_in_use: usize,
    pub free_chunks: usize,
    pub nodes: usize,
    pub root_chunks: usize,
    pub free_chunks_by_level: [ms_chunk_level_stats_t; MS_MAX_CHUNK_LEVELS],
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ms_archive_stats_t {
    pub mapped: c_int,
    pub relocated: c_int,
    pub base: usize,
    pub requested_base: usize,
    pub relocation_delta: isize,
    pub file_bytes: usize,
    pub reserved_bytes: usize,
    pub class_region_bytes: usize,
    pub nonclass_region_bytes: usize,
    pub used_bytes: [usize; 2],
    pub pointers: usize,
    pub narrow_pointers: usize,
    pub roots: usize,
    pub resident_bytes: usize,
    pub deallocations_ignored: usize,
    // appended (lazy relocation)
    pub relocation: c_int,
    pub relocation_reason: *const c_char,
}

impl Default for ms_archive_stats_t {
    fn default() -> Self {
        // All zero (no archive): plain integers and a null pointer.
        unsafe { std::mem::zeroed() }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ms_stats_t {
    pub space: [ms_space_stats_t; 2],
    pub total: ms_space_stats_t,
    pub chunk_levels: c_uint,
    pub loaders: usize,
    pub loaders_by_kind: [usize; MS_LOADER_KIND_COUNT],
    pub commit_granule_bytes: usize,
    pub commits: usize,
    pub uncommits: usize,
    // appended
    pub archive: ms_archive_stats_t,
    pub allocations_counted: c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ms_loader_stats_t {
    pub kind: ms_loader_kind_t,
    pub allocations: u64,
    pub used_bytes: [usize; 2],
    pub committed_bytes: [usize; 2],
    pub capacity_bytes: [usize; 2],
    pub free_blocks_bytes: [usize; 2],
    pub free_blocks_count: [usize; 2],
    pub chunks: [usize; 2],
    pub chunks_by_level: [[usize; MS_MAX_CHUNK_LEVELS]; 2],
    // appended (counters off the fast path)
    pub allocations_counted: c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ms_space_usage_t {
    pub reserved_bytes: usize,
    pub committed_bytes: usize,
    pub used_bytes: usize,
    pub overhead_bytes: usize,
}

/// Set `size` to `size_of::<ms_usage_t>()` before `ms_get_usage` (`Default` does).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ms_usage_t {
    pub size: usize,
    pub space: [ms_space_usage_t; 2],
    pub total: ms_space_usage_t,
}

impl Default for ms_usage_t {
    fn default() -> Self {
        ms_usage_t {
            size: std::mem::size_of::<ms_usage_t>(),
            space: [ms_space_usage_t::default(); 2],
            total: ms_space_usage_t::default(),
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ms_report_options_t {
    pub size: usize,
    pub scale: c_char,
    pub per_loader: c_int,
    pub per_kind: c_int,
    pub free_lists: c_int,
}

extern "C" {
    pub fn ms_settings_init_sized(settings: *mut ms_settings_t, size: usize) -> ms_error_t;
    /// Assumes the first 0.2 layout: prefer `ms_settings_init_sized` with `size_of`.
    pub fn ms_settings_init(settings: *mut ms_settings_t);
    pub fn ms_settings_parse(settings: *mut ms_settings_t, options: *const c_char) -> ms_error_t;
    pub fn ms_settings_from_env(settings: *mut ms_settings_t) -> ms_error_t;

    pub fn ms_create(settings: *const ms_settings_t) -> *mut ms_metaspace_t;
    pub fn ms_destroy(ms: *mut ms_metaspace_t);

    pub fn ms_loader_create(ms: *mut ms_metaspace_t, kind: ms_loader_kind_t, flags: c_uint)
        -> *mut ms_loader_t;
    pub fn ms_loader_destroy(loader: *mut ms_loader_t) -> ms_error_t;

    pub fn ms_allocate_slow(loader: *mut ms_loader_t, space: ms_space_t, bytes: usize)
        -> *mut c_void;
    pub fn ms_alloc(loader: *mut ms_loader_t, space: ms_space_t, bytes: usize) -> *mut c_void;
    pub fn ms_deallocate(loader: *mut ms_loader_t, p: *mut c_void, bytes: usize) -> ms_error_t;
    pub fn ms_purge(ms: *mut ms_metaspace_t);

    pub fn ms_encode_class(ms: *const ms_metaspace_t, p: *const c_void) -> u32;
    pub fn ms_decode_class(ms: *const ms_metaspace_t, narrow: u32) -> *mut c_void;
    pub fn ms_class_space_base(ms: *const ms_metaspace_t) -> usize;
    pub fn ms_class_shift(ms: *const ms_metaspace_t) -> c_uint;
    pub fn ms_narrow_class_bits(ms: *const ms_metaspace_t) -> c_uint;
    pub fn ms_is_class_space(ms: *const ms_metaspace_t, p: *const c_void) -> c_int;
    pub fn ms_contains(ms: *const ms_metaspace_t, p: *const c_void) -> c_int;

    pub fn ms_set_gc_threshold(ms: *mut ms_metaspace_t, bytes: usize, cb: ms_gc_callback_t,
                               user: *mut c_void);
    pub fn ms_gc_done(ms: *mut ms_metaspace_t) -> usize;

    pub fn ms_get_stats_sized(ms: *mut ms_metaspace_t, out: *mut ms_stats_t, out_size: usize)
        -> ms_error_t;
    /// Assumes the first 0.2 layout: prefer `ms_get_stats_sized` with `size_of`.
    pub fn ms_get_stats(ms: *mut ms_metaspace_t, out: *mut ms_stats_t) -> ms_error_t;
    pub fn ms_loader_get_stats_sized(loader: *mut ms_loader_t, out: *mut ms_loader_stats_t,
                                     out_size: usize) -> ms_error_t;
    /// Assumes the first 0.2 layout: prefer `ms_loader_get_stats_sized` with `size_of`.
    pub fn ms_loader_get_stats(loader: *mut ms_loader_t, out: *mut ms_loader_stats_t)
        -> ms_error_t;
    pub fn ms_get_usage(ms: *mut ms_metaspace_t, usage: *mut ms_usage_t) -> ms_error_t;

    pub fn ms_report_options_init_sized(options: *mut ms_report_options_t, size: usize)
        -> ms_error_t;
    /// Assumes the first 0.2 layout: prefer `ms_report_options_init_sized` with `size_of`.
    pub fn ms_report_options_init(options: *mut ms_report_options_t);
    pub fn ms_print_report(ms: *mut ms_metaspace_t, out: *mut FILE,
                           options: *const ms_report_options_t) -> ms_error_t;
    pub fn ms_write_report_json(ms: *mut ms_metaspace_t, out: *mut FILE,
                                options: *const ms_report_options_t) -> ms_error_t;
    pub fn ms_print_report_cb(ms: *mut ms_metaspace_t, write: ms_write_fn, user: *mut c_void,
                              options: *const ms_report_options_t) -> ms_error_t;
    pub fn ms_write_report_json_cb(ms: *mut ms_metaspace_t, write: ms_write_fn,
                                   user: *mut c_void, options: *const ms_report_options_t)
        -> ms_error_t;

    pub fn ms_verify(ms: *mut ms_metaspace_t) -> ms_error_t;
    pub fn ms_last_error() -> ms_error_t;
    pub fn ms_last_error_text() -> *const c_char;
    pub fn ms_version() -> *const c_char;
    pub fn ms_error_name(e: ms_error_t) -> *const c_char;

    pub fn ms_archive_begin(settings: *const ms_settings_t, requested_base: usize)
        -> *mut ms_archive_builder_t;
    pub fn ms_archive_allocate(builder: *mut ms_archive_builder_t, space: ms_space_t,
                               bytes: usize) -> *mut c_void;
    pub fn ms_archive_mark_pointer(builder: *mut ms_archive_builder_t, slot: *mut c_void)
        -> ms_error_t;
    pub fn ms_archive_mark_narrow_class(builder: *mut ms_archive_builder_t, slot: *mut c_void)
        -> ms_error_t;
    pub fn ms_archive_encode_class(builder: *mut ms_archive_builder_t, klass: *const c_void)
        -> u32;
    pub fn ms_archive_set_root(builder: *mut ms_archive_builder_t, name: *const c_char,
                               block: *const c_void) -> ms_error_t;
    pub fn ms_archive_write(builder: *mut ms_archive_builder_t, path: *const c_char)
        -> ms_error_t;
    pub fn ms_archive_discard(builder: *mut ms_archive_builder_t);
    pub fn ms_archive_root(ms: *mut ms_metaspace_t, name: *const c_char) -> *mut c_void;
    pub fn ms_is_archived(ms: *const ms_metaspace_t, p: *const c_void) -> c_int;
    pub fn ms_archive_status(ms: *mut ms_metaspace_t, reason: *mut *const c_char) -> ms_error_t;
}

/// The header's inline `ms_allocate`, which cannot be inlined across languages: the exported
/// `ms_alloc` (same contract).
///
/// # Safety
/// `loader` must be a loader handle, or a pointer the library may check (as for `ms_alloc`).
#[inline]
pub unsafe fn ms_allocate(loader: *mut ms_loader_t, space: ms_space_t, bytes: usize)
    -> *mut c_void {
    ms_alloc(loader, space, bytes)
}
