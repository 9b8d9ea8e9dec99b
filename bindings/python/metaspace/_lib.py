"""ctypes declarations of include/metaspace/metaspace.h (version 0.2): the raw C API.

Nothing here checks its arguments: the classes in metaspace._api do that before they call in.
"""
import ctypes
import ctypes.util
import os

HEADER_VERSION = (0, 2)

# ms_error_t, in the header's order (the value is the index).
OK = 0
ERROR_NAMES = [
    "MS_OK", "MS_ERR_INVALID_ARGUMENT", "MS_ERR_TOO_LARGE", "MS_ERR_LIMIT",
    "MS_ERR_CLASS_SPACE_FULL", "MS_ERR_COMMIT_FAILED", "MS_ERR_RESERVE_FAILED",
    "MS_ERR_NOT_OWNED", "MS_ERR_DOUBLE_FREE", "MS_ERR_OVERWRITE", "MS_ERR_DESTROYED",
    "MS_ERR_CORRUPTED", "MS_ERR_OUT_OF_MEMORY",
    "MS_ERR_ARCHIVE_IO", "MS_ERR_ARCHIVE_FORMAT", "MS_ERR_ARCHIVE_VERSION",
    "MS_ERR_ARCHIVE_MISMATCH", "MS_ERR_ARCHIVE_CHECKSUM", "MS_ERR_ARCHIVE_CHANGED",
]
SPACE_NONCLASS, SPACE_CLASS = 0, 1
LOADER_BOOT, LOADER_STANDARD, LOADER_MICRO = 0, 1, 2
LOADER_SHARED = 1
RECLAIM_NONE, RECLAIM_BALANCED, RECLAIM_AGGRESSIVE = 0, 1, 2
REPORT_NONE, REPORT_TEXT, REPORT_JSON = 0, 1, 2
ARCHIVE_AUTO, ARCHIVE_REQUIRE = 0, 1
ARCHIVE_RELOCATE_AUTO, ARCHIVE_RELOCATE_EAGER, ARCHIVE_RELOCATE_LAZY = 0, 1, 2
ARCHIVE_DEFAULT_BASE = 0x800000000
MAX_CHUNK_LEVELS = 17
LOADER_KIND_COUNT = 3

SIZE_MAX = (1 << (8 * ctypes.sizeof(ctypes.c_size_t))) - 1
UINT32_MAX = (1 << 32) - 1

GC_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)
WRITE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(ctypes.c_char), ctypes.c_size_t)


def _plain(value):
    """A field's value as plain Python data: arrays as lists, structs as dicts, bytes as str."""
    if isinstance(value, ctypes.Array):
        return [_plain(v) for v in value]
    if isinstance(value, _Struct):
        return value.as_dict()
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return value


def _repr(value):
    if isinstance(value, ctypes.Array):
        return "[%s]" % ", ".join(_repr(v) for v in value)
    return repr(value)


class _Struct(ctypes.Structure):
    """A ctypes struct that prints its fields and converts to a dict."""

    def as_dict(self):
        """The fields as a dict of plain Python values (nested structs as dicts, arrays as lists)."""
        return {name: _plain(getattr(self, name)) for name, *_ in self._fields_}

    def __repr__(self):
        fields = ", ".join("%s=%s" % (name, _repr(getattr(self, name)))
                           for name, *_ in self._fields_)
        return "%s(%s)" % (type(self).__name__, fields)


class Settings(_Struct):
    """ms_settings_t. Fields appended by later headers are absent here: `size` tells the library
    how far this layout goes, and it takes defaults for the rest."""
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("reclaim", ctypes.c_int),
        ("commit_granule_bytes", ctypes.c_size_t),
        ("root_chunk_bytes", ctypes.c_size_t),
        ("node_bytes", ctypes.c_size_t),
        ("class_space_bytes", ctypes.c_size_t),
        ("class_space_base", ctypes.c_size_t),
        ("class_alignment_bytes", ctypes.c_size_t),
        ("max_committed_bytes", ctypes.c_size_t),
        ("gc_threshold_bytes", ctypes.c_size_t),
        ("gc_callback", ctypes.c_void_p),
        ("gc_callback_user", ctypes.c_void_p),
        ("checked", ctypes.c_int),
        ("gc_min_free_percent", ctypes.c_uint),
        ("gc_max_free_percent", ctypes.c_uint),
        ("gc_min_expansion_bytes", ctypes.c_size_t),
        ("report_at_exit", ctypes.c_int),
        ("verbose", ctypes.c_int),
        # appended: the class-data archive (docs/archive.md)
        ("archive_path", ctypes.c_char_p),
        ("archive_policy", ctypes.c_int),
        ("archive_verify", ctypes.c_int),
        ("archive_relocation", ctypes.c_int),
        # appended: per-block allocation counts, which close the inline fast path
        ("count_allocations", ctypes.c_int),
    ]


class ChunkLevelStats(_Struct):
    """ms_chunk_level_stats_t: free chunks of one level."""
    _fields_ = [("count", ctypes.c_size_t), ("bytes", ctypes.c_size_t),
                ("committed_bytes", ctypes.c_size_t)]


class SpaceStats(_Struct):
    """ms_space_stats_t: one space (or the total). committed = used + free_in_chunks +
    free_chunks + free_blocks + fence + overhead."""
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "reserved_bytes", "committed_bytes", "used_bytes", "free_in_chunks_bytes",
        "free_chunks_bytes", "free_blocks_bytes", "deallocated_bytes", "salvaged_bytes",
        "alignment_gap_bytes", "free_blocks_count", "fence_bytes", "overhead_bytes",
        "chunks_in_use", "free_chunks", "nodes", "root_chunks")] + [
        ("free_chunks_by_level", ChunkLevelStats * MAX_CHUNK_LEVELS)]


class ArchiveStats(_Struct):
    """ms_archive_stats_t: the class-data archive as mapped (all 0 when none is)."""
    _fields_ = [
        ("mapped", ctypes.c_int),
        ("relocated", ctypes.c_int),
        ("base", ctypes.c_size_t),
        ("requested_base", ctypes.c_size_t),
        ("relocation_delta", ctypes.c_ssize_t),
        ("file_bytes", ctypes.c_size_t),
        ("reserved_bytes", ctypes.c_size_t),
        ("class_region_bytes", ctypes.c_size_t),
        ("nonclass_region_bytes", ctypes.c_size_t),
        ("used_bytes", ctypes.c_size_t * 2),
        ("pointers", ctypes.c_size_t),
        ("narrow_pointers", ctypes.c_size_t),
        ("roots", ctypes.c_size_t),
        ("resident_bytes", ctypes.c_size_t),
        ("deallocations_ignored", ctypes.c_size_t),
        ("relocation", ctypes.c_int),
        ("relocation_reason", ctypes.c_char_p),
    ]


class Stats(_Struct):
    """ms_stats_t: a consistent snapshot of a metaspace (space[SPACE_NONCLASS], space[SPACE_CLASS],
    total, loaders, archive, ...)."""
    _fields_ = [
        ("space", SpaceStats * 2),
        ("total", SpaceStats),
        ("chunk_levels", ctypes.c_uint),
        ("loaders", ctypes.c_size_t),
        ("loaders_by_kind", ctypes.c_size_t * LOADER_KIND_COUNT),
        ("commit_granule_bytes", ctypes.c_size_t),
        ("commits", ctypes.c_size_t),
        ("uncommits", ctypes.c_size_t),
        # appended
        ("archive", ArchiveStats),
        ("allocations_counted", ctypes.c_int),
    ]


class LoaderStats(_Struct):
    """ms_loader_stats_t: one loader; the arrays are indexed by space."""
    _fields_ = [
        ("kind", ctypes.c_int),
        ("allocations", ctypes.c_uint64),
        ("used_bytes", ctypes.c_size_t * 2),
        ("committed_bytes", ctypes.c_size_t * 2),
        ("capacity_bytes", ctypes.c_size_t * 2),
        ("free_blocks_bytes", ctypes.c_size_t * 2),
        ("free_blocks_count", ctypes.c_size_t * 2),
        ("chunks", ctypes.c_size_t * 2),
        ("chunks_by_level", (ctypes.c_size_t * MAX_CHUNK_LEVELS) * 2),
        # appended: 1 if `allocations` is counted (settings count_allocations or checked)
        ("allocations_counted", ctypes.c_int),
    ]


class SpaceUsage(_Struct):
    """ms_space_usage_t: reserved, committed, used and overhead bytes of one space."""
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "reserved_bytes", "committed_bytes", "used_bytes", "overhead_bytes")]


class Usage(_Struct):
    """ms_usage_t: usage in O(1), without any loader lock (`used` may lag slightly)."""
    _fields_ = [("size", ctypes.c_size_t), ("space", SpaceUsage * 2), ("total", SpaceUsage)]


class ReportOptions(_Struct):
    """ms_report_options_t."""
    _fields_ = [("size", ctypes.c_size_t), ("scale", ctypes.c_char),
                ("per_loader", ctypes.c_int), ("per_kind", ctypes.c_int),
                ("free_lists", ctypes.c_int)]


def _load():
    path = os.environ.get("METASPACE_LIBRARY")
    names = [path] if path else [
        "libmetaspace.so.%d.%d" % HEADER_VERSION, ctypes.util.find_library("metaspace")]
    errors = []
    for name in names:
        if not name:
            continue
        try:
            return ctypes.CDLL(name)
        except OSError as e:
            errors.append(str(e))
    raise ImportError("libmetaspace not found (set METASPACE_LIBRARY to the .so): "
                      + "; ".join(errors))


lib = _load()

_P = ctypes.c_void_p
_SZ = ctypes.c_size_t
_E = ctypes.c_int
_U32 = ctypes.c_uint32
FUNCTIONS = [
    ("ms_version", ctypes.c_char_p, []),
    ("ms_last_error", _E, []),
    ("ms_last_error_text", ctypes.c_char_p, []),
    ("ms_error_name", ctypes.c_char_p, [_E]),
    ("ms_settings_init_sized", _E, [ctypes.POINTER(Settings), _SZ]),
    ("ms_settings_parse", _E, [ctypes.POINTER(Settings), ctypes.c_char_p]),
    ("ms_settings_from_env", _E, [ctypes.POINTER(Settings)]),
    ("ms_create", _P, [ctypes.POINTER(Settings)]),
    ("ms_destroy", None, [_P]),
    ("ms_loader_create", _P, [_P, _E, ctypes.c_uint]),
    ("ms_loader_destroy", _E, [_P]),
    ("ms_alloc", _P, [_P, _E, _SZ]),
    ("ms_deallocate", _E, [_P, _P, _SZ]),
    ("ms_purge", None, [_P]),
    ("ms_verify", _E, [_P]),
    ("ms_get_stats_sized", _E, [_P, ctypes.POINTER(Stats), _SZ]),
    ("ms_loader_get_stats_sized", _E, [_P, ctypes.POINTER(LoaderStats), _SZ]),
    ("ms_get_usage", _E, [_P, ctypes.POINTER(Usage)]),
    ("ms_set_gc_threshold", None, [_P, _SZ, GC_CALLBACK, _P]),
    ("ms_gc_done", _SZ, [_P]),
    ("ms_is_class_space", ctypes.c_int, [_P, _P]),
    ("ms_contains", ctypes.c_int, [_P, _P]),
    ("ms_encode_class", _U32, [_P, _P]),
    ("ms_decode_class", _P, [_P, _U32]),
    ("ms_class_space_base", _SZ, [_P]),
    ("ms_class_shift", ctypes.c_uint, [_P]),
    ("ms_narrow_class_bits", ctypes.c_uint, [_P]),
    ("ms_report_options_init_sized", _E, [ctypes.POINTER(ReportOptions), _SZ]),
    ("ms_print_report_cb", _E, [_P, WRITE_FN, _P, ctypes.POINTER(ReportOptions)]),
    ("ms_write_report_json_cb", _E, [_P, WRITE_FN, _P, ctypes.POINTER(ReportOptions)]),
    ("ms_archive_begin", _P, [ctypes.POINTER(Settings), _SZ]),
    ("ms_archive_allocate", _P, [_P, _E, _SZ]),
    ("ms_archive_mark_pointer", _E, [_P, _P]),
    ("ms_archive_mark_narrow_class", _E, [_P, _P]),
    ("ms_archive_encode_class", _U32, [_P, _P]),
    ("ms_archive_set_root", _E, [_P, ctypes.c_char_p, _P]),
    ("ms_archive_write", _E, [_P, ctypes.c_char_p]),
    ("ms_archive_discard", None, [_P]),
    ("ms_archive_root", _P, [_P, ctypes.c_char_p]),
    ("ms_is_archived", ctypes.c_int, [_P, _P]),
    ("ms_archive_status", _E, [_P, ctypes.POINTER(ctypes.c_char_p)]),
]
for _name, _res, _args in FUNCTIONS:
    _fn = getattr(lib, _name)
    _fn.restype = _res
    _fn.argtypes = _args


def library_version():
    """The version of the loaded shared library, "MAJOR.MINOR.PATCH"."""
    return lib.ms_version().decode()


_major, _minor = (int(x) for x in library_version().split(".")[:2])
if (_major, _minor) != HEADER_VERSION:
    raise ImportError("libmetaspace %s loaded, these bindings describe %d.%d"
                      % (library_version(), *HEADER_VERSION))
