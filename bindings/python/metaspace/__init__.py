"""libmetaspace for Python: arena allocation for per-loader runtime metadata (ctypes over the
shared library libmetaspace.so.0.2, found through METASPACE_LIBRARY or the loader's path).

    import metaspace
    with metaspace.Metaspace(options="granule=16k", checked=1) as ms:
        loader = ms.loader()                    # a class loader's arena
        p = loader.allocate(64)                 # an address (int)
        k = loader.allocate(600, metaspace.SPACE_CLASS)
        narrow = ms.encode_class(k)             # compressed class pointer
        loader.deallocate(p, 64)
        print(ms.stats().total)                 # SpaceStats(reserved_bytes=..., ...)
        print(ms.report())                      # jcmd VM.metaspace style
        loader.destroy()                        # all its memory at once

Classes: Metaspace, Loader (from Metaspace.loader()), ArchiveBuilder (class-data archives),
Error (every failure; .code is an ErrorCode, .name the C name such as "MS_ERR_DESTROYED").
Statistics are ctypes structs that print their fields: Stats, SpaceStats, LoaderStats, Usage.

Every object checks its own state and arguments before it calls the library: a call after
close(), destroy() or discard() raises Error(DESTROYED); a size that is not an integer, is
negative or does not fit in size_t raises Error(INVALID_ARGUMENT or TOO_LARGE); unknown
keywords are refused by name. A Metaspace or ArchiveBuilder that is collected without close()
or discard() is freed then (weakref.finalize). Addresses are plain ints: valid only while the
block's loader and metaspace live.

For other FFI callers, what this package does: load libmetaspace.so.<major>.<minor> and check
ms_version() against the header version its struct layouts follow; allocate through ms_alloc
(the exported form of the header's inline ms_allocate); initialize structs with
ms_settings_init_sized / ms_report_options_init_sized and pass the struct size to
ms_get_stats_sized / ms_loader_get_stats_sized; keep callbacks alive as long as the library may
call them, and never raise through them. The raw declarations are in metaspace._lib.
"""
from ._api import ArchiveBuilder, Error, ErrorCode, Loader, Metaspace, SETTINGS
from ._lib import (
    ARCHIVE_AUTO,
    ARCHIVE_DEFAULT_BASE,
    ARCHIVE_RELOCATE_AUTO,
    ARCHIVE_RELOCATE_EAGER,
    ARCHIVE_RELOCATE_LAZY,
    ARCHIVE_REQUIRE,
    ArchiveStats,
    ChunkLevelStats,
    LOADER_BOOT,
    LOADER_MICRO,
    LOADER_SHARED,
    LOADER_STANDARD,
    LoaderStats,
    RECLAIM_AGGRESSIVE,
    RECLAIM_BALANCED,
    RECLAIM_NONE,
    REPORT_JSON,
    REPORT_NONE,
    REPORT_TEXT,
    SPACE_CLASS,
    SPACE_NONCLASS,
    SpaceStats,
    SpaceUsage,
    Stats,
    Usage,
    lib,
    library_version,
)

__version__ = "0.2.0"

__all__ = [
    "Metaspace", "Loader", "ArchiveBuilder", "Error", "ErrorCode", "SETTINGS",
    "Stats", "SpaceStats", "ChunkLevelStats", "ArchiveStats", "LoaderStats", "Usage", "SpaceUsage",
    "SPACE_NONCLASS", "SPACE_CLASS",
    "LOADER_BOOT", "LOADER_STANDARD", "LOADER_MICRO", "LOADER_SHARED",
    "RECLAIM_NONE", "RECLAIM_BALANCED", "RECLAIM_AGGRESSIVE",
    "REPORT_NONE", "REPORT_TEXT", "REPORT_JSON",
    "ARCHIVE_AUTO", "ARCHIVE_REQUIRE", "ARCHIVE_DEFAULT_BASE",
    "ARCHIVE_RELOCATE_AUTO", "ARCHIVE_RELOCATE_EAGER", "ARCHIVE_RELOCATE_LAZY",
    "library_version",
]
