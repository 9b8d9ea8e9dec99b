//! A safe Rust API for libmetaspace: arena allocation for per-loader runtime metadata, with
//! memory that goes back to the operating system when loaders die (a re-creation of HotSpot's
//! Elastic Metaspace). Built on the raw bindings in [`sys`] (`metaspace-sys`).
//!
//! ```
//! use metaspace::{LoaderKind, Metaspace, Settings, Space};
//!
//! # fn main() -> Result<(), metaspace::Error> {
//! let ms = Metaspace::new(&Settings::new().options("granule=16k")?.checked(true))?;
//! let loader = ms.loader(LoaderKind::Standard)?;
//! let p = loader.allocate(64)?;                        // NonNull<u8>, 8-byte aligned
//! unsafe { p.as_ptr().write_bytes(0x5a, 64) };
//! let klass = loader.allocate_in(Space::Class, 600)?;
//! assert_eq!(ms.decode_class(ms.encode_class(klass.as_ptr())), klass.as_ptr());
//! unsafe { loader.deallocate(p, 64)? };
//! println!("{} bytes committed", ms.stats()?.total.committed_bytes);
//! assert!(ms.report(&Default::default())?.contains("Total usage"));
//! drop(loader);                                        // all its memory at once
//! # Ok(()) }
//! ```
//!
//! Ownership follows the C API: a [`Metaspace`] owns everything and destroys it on `Drop`; a
//! [`Loader`] borrows its metaspace, so it cannot outlive it, and destroys itself on `Drop`.
//! Calls on one `Loader` are serialized by the type system (`Send`, not `Sync`); a
//! [`SharedLoader`] (`MS_LOADER_SHARED`) may be used from many threads at once. Every failing
//! call returns an [`Error`] with the library's code and sentence.
//!
//! Blocks are raw pointers into the loader's memory: valid until they are deallocated, the
//! loader is dropped or destroyed, or the metaspace is dropped. Reading and writing them, and
//! handing them back ([`Loader::deallocate`]), is `unsafe`.
//!
//! A loader cannot outlive its metaspace:
//! ```compile_fail,E0597
//! let loader = {
//!     let ms = metaspace::Metaspace::with_defaults().unwrap();
//!     ms.loader(metaspace::LoaderKind::Standard).unwrap()
//! }; // error: `ms` does not live long enough
//! ```
//! and a loader that is not shared cannot be used from two threads at once:
//! ```compile_fail,E0277
//! let ms = metaspace::Metaspace::with_defaults().unwrap();
//! let loader = ms.loader(metaspace::LoaderKind::Standard).unwrap();
//! std::thread::scope(|s| {
//!     s.spawn(|| loader.allocate(8));   // error: `Loader` is not `Sync`
//!     loader.allocate(8)
//! });
//! ```
#![warn(missing_docs)]

use std::cell::Cell;
use std::ffi::{CStr, CString};
use std::fmt;
use std::marker::PhantomData;
use std::ops::Deref;
use std::os::raw::{c_char, c_void};
use std::path::Path;
use std::ptr::{self, NonNull};
use std::sync::Mutex;

pub use metaspace_sys as sys;

/// A consistent snapshot of a metaspace (`ms_stats_t`): `space[Space::NonClass as usize]`,
/// `space[Space::Class as usize]`, `total`, loaders, the archive, ...
pub type Stats = sys::ms_stats_t;
/// One space of [`Stats`] (`ms_space_stats_t`).
pub type SpaceStats = sys::ms_space_stats_t;
/// One loader's statistics (`ms_loader_stats_t`); the arrays are indexed by [`Space`].
pub type LoaderStats = sys::ms_loader_stats_t;
/// Usage in O(1) without loader locks (`ms_usage_t`).
pub type Usage = sys::ms_usage_t;
/// One space of [`Usage`] (`ms_space_usage_t`).
pub type SpaceUsage = sys::ms_space_usage_t;

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// The library's error codes (`ms_error_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// NULL or foreign handle, size 0, bad enum value, bad setting or option.
    InvalidArgument,
    /// A request larger than a root chunk: never served.
    TooLarge,
    /// The cap on committed memory (`max_committed_bytes`) would be exceeded.
    Limit,
    /// The compressed class space is exhausted.
    ClassSpaceFull,
    /// The kernel refused to commit memory.
    CommitFailed,
    /// The kernel refused to reserve address space.
    ReserveFailed,
    /// The pointer was not allocated from this loader.
    NotOwned,
    /// The block is already free (checked mode).
    DoubleFree,
    /// A fence or a freed block was written over (checked mode).
    Overwrite,
    /// The loader or metaspace was already destroyed.
    Destroyed,
    /// Verification found a broken invariant.
    Corrupted,
    /// The library's own bookkeeping could not be allocated.
    OutOfMemory,
    /// The archive cannot be opened, read, written or mapped.
    ArchiveIo,
    /// Not an archive: wrong magic, truncated, inconsistent.
    ArchiveFormat,
    /// Another format or library version wrote the archive.
    ArchiveVersion,
    /// The archive was dumped with other settings.
    ArchiveMismatch,
    /// The archive's contents differ from what was written.
    ArchiveChecksum,
    /// The archive file changed while it was being mapped.
    ArchiveChanged,
    /// A code this crate does not know (from a newer library).
    Other(i32),
}

const CODES: [(ErrorCode, sys::ms_error_t, &str); 18] = [
    (ErrorCode::InvalidArgument, sys::MS_ERR_INVALID_ARGUMENT, "MS_ERR_INVALID_ARGUMENT"),
    (ErrorCode::TooLarge, sys::MS_ERR_TOO_LARGE, "MS_ERR_TOO_LARGE"),
    (ErrorCode::Limit, sys::MS_ERR_LIMIT, "MS_ERR_LIMIT"),
    (ErrorCode::ClassSpaceFull, sys::MS_ERR_CLASS_SPACE_FULL, "MS_ERR_CLASS_SPACE_FULL"),
    (ErrorCode::CommitFailed, sys::MS_ERR_COMMIT_FAILED, "MS_ERR_COMMIT_FAILED"),
    (ErrorCode::ReserveFailed, sys::MS_ERR_RESERVE_FAILED, "MS_ERR_RESERVE_FAILED"),
    (ErrorCode::NotOwned, sys::MS_ERR_NOT_OWNED, "MS_ERR_NOT_OWNED"),
    (ErrorCode::DoubleFree, sys::MS_ERR_DOUBLE_FREE, "MS_ERR_DOUBLE_FREE"),
    (ErrorCode::Overwrite, sys::MS_ERR_OVERWRITE, "MS_ERR_OVERWRITE"),
    (ErrorCode::Destroyed, sys::MS_ERR_DESTROYED, "MS_ERR_DESTROYED"),
    (ErrorCode::Corrupted, sys::MS_ERR_CORRUPTED, "MS_ERR_CORRUPTED"),
    (ErrorCode::OutOfMemory, sys::MS_ERR_OUT_OF_MEMORY, "MS_ERR_OUT_OF_MEMORY"),
    (ErrorCode::ArchiveIo, sys::MS_ERR_ARCHIVE_IO, "MS_ERR_ARCHIVE_IO"),
    (ErrorCode::ArchiveFormat, sys::MS_ERR_ARCHIVE_FORMAT, "MS_ERR_ARCHIVE_FORMAT"),
    (ErrorCode::ArchiveVersion, sys::MS_ERR_ARCHIVE_VERSION, "MS_ERR_ARCHIVE_VERSION"),
    (ErrorCode::ArchiveMismatch, sys::MS_ERR_ARCHIVE_MISMATCH, "MS_ERR_ARCHIVE_MISMATCH"),
    (ErrorCode::ArchiveChecksum, sys::MS_ERR_ARCHIVE_CHECKSUM, "MS_ERR_ARCHIVE_CHECKSUM"),
    (ErrorCode::ArchiveChanged, sys::MS_ERR_ARCHIVE_CHANGED, "MS_ERR_ARCHIVE_CHANGED"),
];

impl ErrorCode {
    /// The code for a raw `ms_error_t`; `None` for `MS_OK`.
    pub fn from_raw(code: sys::ms_error_t) -> Option<ErrorCode> {
        if code == sys::MS_OK {
            return None;
        }
        Some(CODES.iter().find(|c| c.1 == code).map_or(ErrorCode::Other(code), |c| c.0))
    }

    /// The raw `ms_error_t`.
    pub fn raw(self) -> sys::ms_error_t {
        match self {
            ErrorCode::Other(code) => code,
            known => CODES.iter().find(|c| c.0 == known).unwrap().1,
        }
    }

    /// The C name, e.g. `"MS_ERR_DESTROYED"` (`"MS_ERR_UNKNOWN"` for [`ErrorCode::Other`]).
    pub fn name(self) -> &'static str {
        CODES.iter().find(|c| c.0 == self).map_or("MS_ERR_UNKNOWN", |c| c.2)
    }
}

/// A failed call: the library's code and its sentence (`ms_last_error_text`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    code: ErrorCode,
    text: String,
}

impl Error {
    /// What failed, as the library's code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The library's sentence, e.g. "metaspace limit reached: committing 65536 more bytes ...".
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The calling thread's last error (`ms_last_error`, `ms_last_error_text`).
    fn last() -> Error {
        unsafe {
            let code = ErrorCode::from_raw(sys::ms_last_error())
                .unwrap_or(ErrorCode::Other(sys::MS_OK));
            let text = sys::ms_last_error_text();
            let text = if text.is_null() {
                String::new()
            } else {
                CStr::from_ptr(text).to_string_lossy().into_owned()
            };
            Error { code, text }
        }
    }

    fn invalid(text: String) -> Error {
        Error { code: ErrorCode::InvalidArgument, text }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.text, self.code.name())
    }
}

impl std::error::Error for Error {}

fn check(code: sys::ms_error_t) -> Result<()> {
    if code == sys::MS_OK {
        Ok(())
    } else {
        Err(Error::last())
    }
}

fn c_string(text: &str, what: &str) -> Result<CString> {
    CString::new(text).map_err(|_| Error::invalid(format!("{} contains a NUL byte", what)))
}

/// The version of the linked library, "MAJOR.MINOR.PATCH".
pub fn library_version() -> &'static str {
    unsafe { CStr::from_ptr(sys::ms_version()).to_str().unwrap_or("?") }
}

/// The two spaces: non-class metadata and the compressed class space (Klass-like blocks that
/// narrow class pointers reach).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Space {
    /// `MS_SPACE_NONCLASS`.
    NonClass = 0,
    /// `MS_SPACE_CLASS`.
    Class = 1,
}

/// How a loader takes its chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LoaderKind {
    /// One per runtime, huge: large chunks from the start.
    Boot = 0,
    /// Ordinary loaders: small chunks first, growing.
    Standard = 1,
    /// One class each (reflection, hidden classes): tiny chunks, never grow.
    Micro = 2,
}

/// When freed memory goes back to the operating system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reclaim {
    /// Never merge, never uncommit.
    None = 0,
    /// Merge on return, uncommit in [`Metaspace::purge`] (the default).
    Balanced = 1,
    /// Merge and uncommit as soon as a chunk is returned.
    Aggressive = 2,
}

/// The report a metaspace writes to stderr when it is destroyed (or at process exit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReportAtExit {
    /// None (the default).
    None = 0,
    /// The text report.
    Text = 1,
    /// The JSON report.
    Json = 2,
}

/// What [`Metaspace::new`] does with an archive it cannot map.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArchivePolicy {
    /// Leave it out; [`Metaspace::archive_status`] says why (the default).
    Auto = 0,
    /// Fail with the refusal's error.
    Require = 1,
}

/// How an archive whose base is taken is moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArchiveRelocation {
    /// Lazy when `archive_verify` is off, else eager (the default).
    Auto = 0,
    /// Every pointer moved at creation.
    Eager = 1,
    /// Pages moved when first touched (userfaultfd; eager where refused).
    Lazy = 2,
}

/// Settings for [`Metaspace::new`] and [`ArchiveBuilder::new`]: the library's defaults
/// (`ms_settings_init`), changed by the options text ([`Settings::options`], the keys of
/// `METASPACE_OPTIONS`) or by the builder methods. Values are range-checked at creation.
///
/// ```
/// let s = metaspace::Settings::new()
///     .options("granule=16k,reclaim=aggressive")?
///     .max_committed_bytes(256 << 20)
///     .count_allocations(true);
/// let ms = metaspace::Metaspace::new(&s)?;
/// assert_eq!(ms.stats()?.commit_granule_bytes, 16 << 10);
/// # Ok::<(), metaspace::Error>(())
/// ```
#[derive(Clone)]
pub struct Settings {
    raw: sys::ms_settings_t,
    archive_path: Option<CString>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings::new()
    }
}

impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Settings").field("raw", &self.raw)
            .field("archive_path", &self.archive_path).finish()
    }
}

macro_rules! setters {
    ($($(#[$doc:meta])* $name:ident: $t:ty => $field:ident $(as $conv:ty)?;)*) => {
        $(
            $(#[$doc])*
            pub fn $name(mut self, value: $t) -> Self {
                self.raw.$field = value $(as $conv)?;
                self
            }
        )*
    };
}

impl Settings {
    /// The library's defaults.
    pub fn new() -> Settings {
        let mut raw = std::mem::MaybeUninit::<sys::ms_settings_t>::zeroed();
        let code = unsafe {
            sys::ms_settings_init_sized(raw.as_mut_ptr(), std::mem::size_of::<sys::ms_settings_t>())
        };
        assert_eq!(code, sys::MS_OK, "ms_settings_init_sized refused this crate's layout");
        Settings { raw: unsafe { raw.assume_init() }, archive_path: None }
    }

    /// The defaults changed by the environment variable `METASPACE_OPTIONS` (unset: defaults).
    pub fn from_env() -> Result<Settings> {
        let mut s = Settings::new();
        check(unsafe { sys::ms_settings_from_env(&mut s.raw) })?;
        Ok(s)
    }

    /// Applies options text, "key=value,key=value" (granule=16k, reclaim=aggressive,
    /// max_committed=256m, checked=1, archive=PATH, ...). An unknown key or a bad value is
    /// [`ErrorCode::InvalidArgument`] naming it, and nothing changes.
    pub fn options(mut self, text: &str) -> Result<Settings> {
        let c = c_string(text, "options")?;
        let before = self.raw.archive_path;
        check(unsafe { sys::ms_settings_parse(&mut self.raw, c.as_ptr()) })?;
        if self.raw.archive_path != before {
            self.archive_path = None; // the library keeps the parsed path
        }
        Ok(self)
    }

    /// The class-data archive to map at creation (copied by the library then).
    pub fn archive_path(mut self, path: impl AsRef<Path>) -> Result<Settings> {
        use std::os::unix::ffi::OsStrExt;
        let c = CString::new(path.as_ref().as_os_str().as_bytes())
            .map_err(|_| Error::invalid("archive path contains a NUL byte".into()))?;
        self.raw.archive_path = c.as_ptr();
        self.archive_path = Some(c);
        Ok(self)
    }

    setters! {
        /// When freed memory goes back to the OS.
        reclaim: Reclaim => reclaim as sys::ms_reclaim_t;
        /// Commit granule: a power of 2, page size .. 1 MiB (0: the reclaim policy's default).
        commit_granule_bytes: usize => commit_granule_bytes;
        /// Root chunk size: a power of 2, 64 KiB .. 64 MiB (default 4 MiB).
        root_chunk_bytes: usize => root_chunk_bytes;
        /// Non-class node reservation, a multiple of the root chunk (default 64 MiB).
        node_bytes: usize => node_bytes;
        /// Compressed class space size (default 1 GiB, up to 4 GiB).
        class_space_bytes: usize => class_space_bytes;
        /// Requested class space base address (0: anywhere).
        class_space_base: usize => class_space_base;
        /// Class alignment 8..1024, a power of 2: the narrow pointer shift is its log2.
        class_alignment_bytes: usize => class_alignment_bytes;
        /// Cap on committed memory, both spaces (0: unlimited).
        max_committed_bytes: usize => max_committed_bytes;
        /// Soft GC threshold (see [`Metaspace::set_gc_threshold`]).
        gc_threshold_bytes: usize => gc_threshold_bytes;
        /// Checked mode: canaries, zapping, protection of dead memory.
        checked: bool => checked as std::os::raw::c_int;
        /// GC policy: free percentage at least (0..99, default 40).
        gc_min_free_percent: u32 => gc_min_free_percent;
        /// GC policy: free percentage at most (default 70; 100: never lowered).
        gc_max_free_percent: u32 => gc_max_free_percent;
        /// GC policy: the threshold grows by at least this much (default 256 KiB).
        gc_min_expansion_bytes: usize => gc_min_expansion_bytes;
        /// A report on stderr when the metaspace is destroyed.
        report_at_exit: ReportAtExit => report_at_exit as std::os::raw::c_int;
        /// One line on stderr at creation and destruction.
        verbose: bool => verbose as std::os::raw::c_int;
        /// What to do with an archive that cannot be mapped.
        archive_policy: ArchivePolicy => archive_policy as std::os::raw::c_int;
        /// Check the archive's checksum at creation (default on).
        archive_verify: bool => archive_verify as std::os::raw::c_int;
        /// How an archive whose base is taken is moved.
        archive_relocation: ArchiveRelocation => archive_relocation as std::os::raw::c_int;
        /// Count every block handed out (closes the inline fast path).
        count_allocations: bool => count_allocations as std::os::raw::c_int;
    }

    /// The raw struct, with `archive_path` pointing into this value (valid while it lives).
    pub fn to_raw(&self) -> sys::ms_settings_t {
        let mut raw = self.raw;
        if let Some(path) = &self.archive_path {
            raw.archive_path = path.as_ptr(); // a clone's own copy, not the original's
        }
        raw
    }
}

type GcCallback = Box<dyn Fn(usize) + Send + Sync>;

unsafe extern "C" fn gc_trampoline(_ms: *mut sys::ms_metaspace_t, committed: usize,
                                   user: *mut c_void) {
    let callback = &*(user as *const GcCallback);
    // A panic must not unwind into the library: it ends the process instead.
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| callback(committed))).is_err() {
        std::process::abort();
    }
}

/// A metaspace: reserved address space, loaders that allocate from it, and memory that goes
/// back to the operating system as loaders die. Dropping it destroys every loader and unmaps
/// everything. It may be used from any number of threads.
pub struct Metaspace {
    raw: NonNull<sys::ms_metaspace_t>,
    // Every callback ever given to set_gc_threshold: a call in flight on another thread may
    // still use a replaced one, so they live as long as the metaspace. Boxed twice: the library
    // holds a thin pointer to the inner (fat) box, which must not move when the Vec grows.
    #[allow(clippy::vec_box)]
    callbacks: Mutex<Vec<Box<GcCallback>>>,
}

// The C API: a metaspace may be used from any number of threads.
unsafe impl Send for Metaspace {}
unsafe impl Sync for Metaspace {}

impl fmt::Debug for Metaspace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Metaspace({:p})", self.raw)
    }
}

impl Drop for Metaspace {
    fn drop(&mut self) {
        unsafe { sys::ms_destroy(self.raw.as_ptr()) }
    }
}

/// Options for [`Metaspace::report`] and [`Metaspace::report_json`]; the default is the
/// library's (dynamic scale, per-kind table and free lists on, per-loader table off).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReportOptions {
    /// `None`: dynamic; else `b'B'`, `b'K'`, `b'M'` or `b'G'` (text report only).
    pub scale: Option<u8>,
    /// A table of live loaders.
    pub per_loader: bool,
    /// The same summed per loader kind.
    pub per_kind: bool,
    /// Free chunks per level, not only per space.
    pub free_lists: bool,
}

impl Default for ReportOptions {
    fn default() -> Self {
        let mut raw = sys::ms_report_options_t::default();
        unsafe {
            sys::ms_report_options_init_sized(&mut raw,
                                              std::mem::size_of::<sys::ms_report_options_t>());
        }
        ReportOptions {
            scale: if raw.scale == 0 { None } else { Some(raw.scale as u8) },
            per_loader: raw.per_loader != 0,
            per_kind: raw.per_kind != 0,
            free_lists: raw.free_lists != 0,
        }
    }
}

unsafe extern "C" fn append(user: *mut c_void, text: *const c_char, length: usize) {
    let out = &mut *(user as *mut Vec<u8>);
    out.extend_from_slice(std::slice::from_raw_parts(text as *const u8, length));
}

impl Metaspace {
    /// A metaspace with these settings.
    pub fn new(settings: &Settings) -> Result<Metaspace> {
        let raw = unsafe { sys::ms_create(&settings.to_raw()) };
        let raw = NonNull::new(raw).ok_or_else(Error::last)?;
        Ok(Metaspace { raw, callbacks: Mutex::new(Vec::new()) })
    }

    /// A metaspace with the library's defaults.
    pub fn with_defaults() -> Result<Metaspace> {
        Metaspace::new(&Settings::new())
    }

    /// A metaspace with the defaults changed by options text ("granule=16k,checked=1").
    pub fn from_options(text: &str) -> Result<Metaspace> {
        Metaspace::new(&Settings::new().options(text)?)
    }

    /// The raw handle, for calls through [`sys`]; valid while `self` lives.
    pub fn as_raw(&self) -> *mut sys::ms_metaspace_t {
        self.raw.as_ptr()
    }

    fn create_loader(&self, kind: LoaderKind, flags: u32) -> Result<NonNull<sys::ms_loader_t>> {
        let raw = unsafe { sys::ms_loader_create(self.as_raw(), kind as sys::ms_loader_kind_t,
                                                 flags) };
        NonNull::new(raw).ok_or_else(Error::last)
    }

    /// A new loader, for calls from one thread at a time.
    pub fn loader(&self, kind: LoaderKind) -> Result<Loader<'_>> {
        Ok(Loader { raw: self.create_loader(kind, 0)?, ms: self, not_sync: PhantomData })
    }

    /// A new shared loader (`MS_LOADER_SHARED`): calls may come from many threads at once, each
    /// thread bumping in a window of its own.
    pub fn shared_loader(&self, kind: LoaderKind) -> Result<SharedLoader<'_>> {
        let raw = self.create_loader(kind, sys::MS_LOADER_SHARED)?;
        Ok(SharedLoader(Loader { raw, ms: self, not_sync: PhantomData }))
    }

    /// A consistent snapshot of every counter.
    pub fn stats(&self) -> Result<Stats> {
        let mut s = Stats::default();
        check(unsafe {
            sys::ms_get_stats_sized(self.as_raw(), &mut s, std::mem::size_of::<Stats>())
        })?;
        Ok(s)
    }

    /// Usage in O(1), without loader locks: `used` may lag slightly (see the header).
    pub fn usage(&self) -> Result<Usage> {
        let mut u = Usage::default();
        check(unsafe { sys::ms_get_usage(self.as_raw(), &mut u) })?;
        Ok(u)
    }

    /// Checks every invariant: [`ErrorCode::Corrupted`] or [`ErrorCode::Overwrite`] with the
    /// details.
    pub fn verify(&self) -> Result<()> {
        check(unsafe { sys::ms_verify(self.as_raw()) })
    }

    /// Returns the memory of free chunks to the operating system.
    pub fn purge(&self) {
        unsafe { sys::ms_purge(self.as_raw()) }
    }

    /// Calls `callback(committed_bytes)` when committed memory reaches `bytes` (0: no
    /// threshold), and when the cap refuses a commit; `None` removes the callback. The callback
    /// runs on the allocating thread, outside the library's locks; a panic in it aborts.
    pub fn set_gc_threshold<F>(&self, bytes: usize, callback: Option<F>)
    where
        F: Fn(usize) + Send + Sync + 'static,
    {
        let mut callbacks = self.callbacks.lock().unwrap();
        match callback {
            Some(f) => {
                let boxed: Box<GcCallback> = Box::new(Box::new(f));
                let user = &*boxed as *const GcCallback as *mut c_void;
                callbacks.push(boxed);
                unsafe { sys::ms_set_gc_threshold(self.as_raw(), bytes, Some(gc_trampoline), user) }
            }
            None => unsafe {
                sys::ms_set_gc_threshold(self.as_raw(), bytes, None, ptr::null_mut())
            },
        }
    }

    /// Tells the library a collection finished: the threshold moves by the GC policy. Returns
    /// the new threshold (0: none).
    pub fn gc_done(&self) -> usize {
        unsafe { sys::ms_gc_done(self.as_raw()) }
    }

    /// Whether `p` lies in the compressed class space.
    pub fn is_class_space(&self, p: *const u8) -> bool {
        unsafe { sys::ms_is_class_space(self.as_raw(), p as *const c_void) != 0 }
    }

    /// Whether `p` lies in address space this metaspace reserved (either space or the archive).
    pub fn contains(&self, p: *const u8) -> bool {
        unsafe { sys::ms_contains(self.as_raw(), p as *const c_void) != 0 }
    }

    /// The narrow class pointer of a class-space block (0 for NULL).
    pub fn encode_class(&self, p: *const u8) -> u32 {
        unsafe { sys::ms_encode_class(self.as_raw(), p as *const c_void) }
    }

    /// The block a narrow class pointer stands for (NULL for 0).
    pub fn decode_class(&self, narrow: u32) -> *mut u8 {
        unsafe { sys::ms_decode_class(self.as_raw(), narrow) as *mut u8 }
    }

    /// The narrow class pointer base.
    pub fn class_space_base(&self) -> usize {
        unsafe { sys::ms_class_space_base(self.as_raw()) }
    }

    /// The narrow class pointer shift (log2 of the class alignment).
    pub fn class_shift(&self) -> u32 {
        unsafe { sys::ms_class_shift(self.as_raw()) }
    }

    /// The bits a narrow class pointer needs for the whole range.
    pub fn narrow_class_bits(&self) -> u32 {
        unsafe { sys::ms_narrow_class_bits(self.as_raw()) }
    }

    /// Whether `p` lies in the mapped class-data archive.
    pub fn is_archived(&self, p: *const u8) -> bool {
        unsafe { sys::ms_is_archived(self.as_raw(), p as *const c_void) != 0 }
    }

    /// The archived block named `name`, if any.
    pub fn archive_root(&self, name: &str) -> Option<NonNull<u8>> {
        let name = CString::new(name).ok()?;
        NonNull::new(unsafe { sys::ms_archive_root(self.as_raw(), name.as_ptr()) } as *mut u8)
    }

    /// `Ok` if the archive asked for is mapped (or none was); else why it was left out.
    pub fn archive_status(&self) -> Result<()> {
        let mut reason: *const c_char = ptr::null();
        let code = unsafe { sys::ms_archive_status(self.as_raw(), &mut reason) };
        match ErrorCode::from_raw(code) {
            None => Ok(()),
            Some(code) => Err(Error {
                code,
                text: if reason.is_null() {
                    String::new()
                } else {
                    unsafe { CStr::from_ptr(reason) }.to_string_lossy().into_owned()
                },
            }),
        }
    }

    fn report_with(&self, options: &ReportOptions, json: bool) -> Result<String> {
        let mut raw = sys::ms_report_options_t::default();
        check(unsafe {
            sys::ms_report_options_init_sized(&mut raw,
                                              std::mem::size_of::<sys::ms_report_options_t>())
        })?;
        raw.scale = options.scale.unwrap_or(0) as c_char;
        raw.per_loader = options.per_loader as _;
        raw.per_kind = options.per_kind as _;
        raw.free_lists = options.free_lists as _;
        let mut out = Vec::<u8>::new();
        let user = &mut out as *mut Vec<u8> as *mut c_void;
        check(unsafe {
            if json {
                sys::ms_write_report_json_cb(self.as_raw(), Some(append), user, &raw)
            } else {
                sys::ms_print_report_cb(self.as_raw(), Some(append), user, &raw)
            }
        })?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// The text report (sections as `jcmd VM.metaspace`).
    pub fn report(&self, options: &ReportOptions) -> Result<String> {
        self.report_with(options, false)
    }

    /// The JSON report (schema "libmetaspace.report", sizes in bytes).
    pub fn report_json(&self, options: &ReportOptions) -> Result<String> {
        self.report_with(options, true)
    }
}

/// A class loader's arena, borrowed from its [`Metaspace`]. Dropping it returns all its memory
/// at once ([`Loader::destroy`] does the same and reports an error, e.g. an overwrite found in
/// checked mode). Calls on one loader are serialized: `Send` but not `Sync`.
pub struct Loader<'ms> {
    raw: NonNull<sys::ms_loader_t>,
    ms: &'ms Metaspace,
    not_sync: PhantomData<Cell<()>>,
}

// A loader may move to another thread; calls on it are serialized by `&self` without `Sync`.
unsafe impl Send for Loader<'_> {}

impl fmt::Debug for Loader<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Loader({:p} in {:?})", self.raw, self.ms)
    }
}

impl Drop for Loader<'_> {
    fn drop(&mut self) {
        unsafe {
            sys::ms_loader_destroy(self.raw.as_ptr());
        }
    }
}

impl<'ms> Loader<'ms> {
    /// A block of `bytes` (rounded up to 8) in non-class space.
    pub fn allocate(&self, bytes: usize) -> Result<NonNull<u8>> {
        self.allocate_in(Space::NonClass, bytes)
    }

    /// A block of `bytes` in `space` (class space: aligned to the class alignment).
    /// [`ErrorCode::InvalidArgument`] for 0, [`ErrorCode::TooLarge`] above a root chunk,
    /// [`ErrorCode::Limit`], [`ErrorCode::ClassSpaceFull`], [`ErrorCode::CommitFailed`].
    pub fn allocate_in(&self, space: Space, bytes: usize) -> Result<NonNull<u8>> {
        let p = unsafe { sys::ms_alloc(self.as_raw(), space as sys::ms_space_t, bytes) };
        NonNull::new(p as *mut u8).ok_or_else(Error::last)
    }

    /// Gives a block back early, for reuse by this loader. A pointer this loader did not hand
    /// out is [`ErrorCode::NotOwned`].
    ///
    /// # Safety
    /// `p` must not be used after this call, and `bytes` must be the size it was allocated
    /// with; freeing a block twice or with another size is undefined outside checked mode (in
    /// checked mode: [`ErrorCode::DoubleFree`], [`ErrorCode::Overwrite`]).
    pub unsafe fn deallocate(&self, p: NonNull<u8>, bytes: usize) -> Result<()> {
        check(sys::ms_deallocate(self.as_raw(), p.as_ptr() as *mut c_void, bytes))
    }

    /// This loader's statistics.
    pub fn stats(&self) -> Result<LoaderStats> {
        let mut s = LoaderStats::default();
        check(unsafe {
            sys::ms_loader_get_stats_sized(self.as_raw(), &mut s, std::mem::size_of::<LoaderStats>())
        })?;
        Ok(s)
    }

    /// The metaspace this loader belongs to.
    pub fn metaspace(&self) -> &'ms Metaspace {
        self.ms
    }

    /// The raw handle, for calls through [`sys`]; valid while `self` lives.
    pub fn as_raw(&self) -> *mut sys::ms_loader_t {
        self.raw.as_ptr()
    }

    /// Returns all of the loader's memory at once, with the library's verdict.
    pub fn destroy(self) -> Result<()> {
        let raw = self.raw;
        std::mem::forget(self);
        check(unsafe { sys::ms_loader_destroy(raw.as_ptr()) })
    }
}

/// A loader that many threads may call at once (`MS_LOADER_SHARED`): everything a [`Loader`]
/// does, and `Sync`.
pub struct SharedLoader<'ms>(Loader<'ms>);

// The C API: calls on a shared loader may come from several threads at once.
unsafe impl Sync for SharedLoader<'_> {}

impl<'ms> Deref for SharedLoader<'ms> {
    type Target = Loader<'ms>;

    fn deref(&self) -> &Loader<'ms> {
        &self.0
    }
}

impl fmt::Debug for SharedLoader<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Shared{:?}", self.0)
    }
}

impl SharedLoader<'_> {
    /// Returns all of the loader's memory at once, with the library's verdict.
    pub fn destroy(self) -> Result<()> {
        self.0.destroy()
    }
}

/// Dump time of a class-data archive: blocks allocated, pointer slots marked, roots named, then
/// written to a file that a metaspace maps ([`Settings::archive_path`]). Dropping it discards it.
pub struct ArchiveBuilder {
    raw: NonNull<sys::ms_archive_builder_t>,
}

unsafe impl Send for ArchiveBuilder {}

impl Drop for ArchiveBuilder {
    fn drop(&mut self) {
        unsafe { sys::ms_archive_discard(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for ArchiveBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ArchiveBuilder({:p})", self.raw)
    }
}

impl ArchiveBuilder {
    /// A builder for an archive to be mapped with these settings (class alignment, class space
    /// size and root chunk size must match then); `requested_base` 0: the default base.
    pub fn new(settings: &Settings, requested_base: usize) -> Result<ArchiveBuilder> {
        let raw = unsafe { sys::ms_archive_begin(&settings.to_raw(), requested_base) };
        Ok(ArchiveBuilder { raw: NonNull::new(raw).ok_or_else(Error::last)? })
    }

    /// A zeroed block of the archive.
    pub fn allocate(&mut self, space: Space, bytes: usize) -> Result<NonNull<u8>> {
        let p = unsafe {
            sys::ms_archive_allocate(self.raw.as_ptr(), space as sys::ms_space_t, bytes)
        };
        NonNull::new(p as *mut u8).ok_or_else(Error::last)
    }

    /// Marks the aligned word at `slot` as a pointer into this builder's blocks (or NULL).
    pub fn mark_pointer(&mut self, slot: *mut u8) -> Result<()> {
        check(unsafe { sys::ms_archive_mark_pointer(self.raw.as_ptr(), slot as *mut c_void) })
    }

    /// Marks the 4-byte word at `slot` as a narrow class pointer (or 0).
    pub fn mark_narrow_class(&mut self, slot: *mut u8) -> Result<()> {
        check(unsafe {
            sys::ms_archive_mark_narrow_class(self.raw.as_ptr(), slot as *mut c_void)
        })
    }

    /// The narrow class pointer `klass` will have once mapped.
    pub fn encode_class(&self, klass: *const u8) -> Result<u32> {
        let n = unsafe { sys::ms_archive_encode_class(self.raw.as_ptr(), klass as *const c_void) };
        if n == 0 && !klass.is_null() {
            return Err(Error::last());
        }
        Ok(n)
    }

    /// Names a block (up to 55 bytes; a name set again is replaced).
    pub fn set_root(&mut self, name: &str, block: *const u8) -> Result<()> {
        let name = c_string(name, "root name")?;
        check(unsafe {
            sys::ms_archive_set_root(self.raw.as_ptr(), name.as_ptr(), block as *const c_void)
        })
    }

    /// Writes the file (via path.tmp, renamed). The builder stays usable.
    pub fn write(&mut self, path: impl AsRef<Path>) -> Result<()> {
        use std::os::unix::ffi::OsStrExt;
        let path = CString::new(path.as_ref().as_os_str().as_bytes())
            .map_err(|_| Error::invalid("archive path contains a NUL byte".into()))?;
        check(unsafe { sys::ms_archive_write(self.raw.as_ptr(), path.as_ptr()) })
    }
}
