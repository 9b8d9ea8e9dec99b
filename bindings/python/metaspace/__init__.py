"""Python bindings for libmetaspace (ctypes over the shared library).

What any FFI caller needs to do, shown here for Python:
  * load libmetaspace.so.<major>.<minor> and check ms_version() against the header version the
    struct layouts below were written for;
  * allocate through ms_alloc (the exported form of the header's inline ms_allocate);
  * initialize ms_settings_t / ms_report_options_t with ms_settings_init_sized /
    ms_report_options_init_sized and pass the struct size to ms_get_stats_sized /
    ms_loader_get_stats_sized: the library then reads and writes only the bytes this struct has;
  * keep callbacks alive as long as the library may call them, and never raise through them.
"""
from ._lib import (  # noqa: F401
    ArchiveBuilder,
    Error,
    Loader,
    Metaspace,
    LOADER_BOOT,
    LOADER_STANDARD,
    LOADER_MICRO,
    LOADER_SHARED,
    SPACE_NONCLASS,
    SPACE_CLASS,
    RECLAIM_NONE,
    RECLAIM_BALANCED,
    RECLAIM_AGGRESSIVE,
    ARCHIVE_AUTO,
    ARCHIVE_REQUIRE,
    ARCHIVE_RELOCATE_AUTO,
    ARCHIVE_RELOCATE_EAGER,
    ARCHIVE_RELOCATE_LAZY,
    library_version,
    lib,
)

__version__ = "0.2.0"
