"""ctypes declarations of include/metaspace/metaspace.h (version 0.2) and a small Pythonic API."""
import ctypes
import ctypes.util
import os

HEADER_VERSION = (0, 2)

# ms_error_t
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
ARCHIVE_AUTO, ARCHIVE_REQUIRE = 0, 1
ARCHIVE_RELOCATE_AUTO, ARCHIVE_RELOCATE_EAGER, ARCHIVE_RELOCATE_LAZY = 0, 1, 2
MAX_CHUNK_LEVELS = 17
LOADER_KIND_COUNT = 3

GC_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)
WRITE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(ctypes.c_char), ctypes.c_size_t)


class Settings(ctypes.Structure):
    # Fields appended to ms_settings_t by later headers are simply absent here: `size` tells the
    # library how far this layout goes, and it takes defaults for the rest.
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


class ChunkLevelStats(ctypes.Structure):
    _fields_ = [("count", ctypes.c_size_t), ("bytes", ctypes.c_size_t),
                ("committed_bytes", ctypes.c_size_t)]


class SpaceStats(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "reserved_bytes", "committed_bytes", "used_bytes", "free_in_chunks_bytes",
        "free_chunks_bytes", "free_blocks_bytes", "deallocated_bytes", "salvaged_bytes",
        "alignment_gap_bytes", "free_blocks_count", "fence_bytes", "overhead_bytes",
        "chunks_in_use", "free_chunks", "nodes", "root_chunks")] + [
        ("free_chunks_by_level", ChunkLevelStats * MAX_CHUNK_LEVELS)]


class ArchiveStats(ctypes.Structure):
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


class Stats(ctypes.Structure):
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


class LoaderStats(ctypes.Structure):
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


class ReportOptions(ctypes.Structure):
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
for name, res, args in [
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
    ("ms_is_class_space", ctypes.c_int, [_P, _P]),
    ("ms_encode_class", ctypes.c_uint32, [_P, _P]),
    ("ms_decode_class", _P, [_P, ctypes.c_uint32]),
    ("ms_report_options_init_sized", _E, [ctypes.POINTER(ReportOptions), _SZ]),
    ("ms_print_report_cb", _E, [_P, WRITE_FN, _P, ctypes.POINTER(ReportOptions)]),
    ("ms_write_report_json_cb", _E, [_P, WRITE_FN, _P, ctypes.POINTER(ReportOptions)]),
    ("ms_archive_begin", _P, [ctypes.POINTER(Settings), ctypes.c_size_t]),
    ("ms_archive_allocate", _P, [_P, _E, _SZ]),
    ("ms_archive_mark_pointer", _E, [_P, _P]),
    ("ms_archive_mark_narrow_class", _E, [_P, _P]),
    ("ms_archive_encode_class", ctypes.c_uint32, [_P, _P]),
    ("ms_archive_set_root", _E, [_P, ctypes.c_char_p, _P]),
    ("ms_archive_write", _E, [_P, ctypes.c_char_p]),
    ("ms_archive_discard", None, [_P]),
    ("ms_archive_root", _P, [_P, ctypes.c_char_p]),
    ("ms_is_archived", ctypes.c_int, [_P, _P]),
    ("ms_archive_status", _E, [_P, ctypes.POINTER(ctypes.c_char_p)]),
]:
    fn = getattr(lib, name)
    fn.restype = res
    fn.argtypes = args


def library_version():
    return lib.ms_version().decode()


_major, _minor = (int(x) for x in library_version().split(".")[:2])
if (_major, _minor) != HEADER_VERSION:
    raise ImportError("libmetaspace %s loaded, these bindings describe %d.%d"
                      % (library_version(), *HEADER_VERSION))


class Error(Exception):
    def __init__(self, code, text):
        super().__init__(text)
        self.code = code
        self.name = ERROR_NAMES[code] if 0 <= code < len(ERROR_NAMES) else str(code)


def _raise_last():
    raise Error(lib.ms_last_error(), lib.ms_last_error_text().decode())


def _check(code):
    if code != OK:
        _raise_last()


class Loader:
    def __init__(self, metaspace, kind, flags):
        self._metaspace = metaspace  # keeps the metaspace alive while the loader is
        self._handle = lib.ms_loader_create(metaspace._handle, kind, flags)
        if not self._handle:
            _raise_last()

    @property
    def handle(self):
        return self._handle

    def allocate(self, size, space=SPACE_NONCLASS):
        p = lib.ms_alloc(self._handle, space, size)
        if not p:
            _raise_last()
        return p

    def deallocate(self, address, size):
        _check(lib.ms_deallocate(self._handle, address, size))

    def stats(self):
        s = LoaderStats()
        _check(lib.ms_loader_get_stats_sized(self._handle, ctypes.byref(s), ctypes.sizeof(s)))
        return s

    def destroy(self):
        if self._handle:
            handle, self._handle = self._handle, None
            _check(lib.ms_loader_destroy(handle))


class Metaspace:
    def __init__(self, options=None, from_env=False, **fields):
        s = Settings()
        _check(lib.ms_settings_init_sized(ctypes.byref(s), ctypes.sizeof(s)))
        if from_env:
            _check(lib.ms_settings_from_env(ctypes.byref(s)))
        if options:
            _check(lib.ms_settings_parse(ctypes.byref(s), options.encode()))
        for key, value in fields.items():
            if key == "archive_path" and isinstance(value, str):
                value = value.encode()
            setattr(s, key, value)  # a bytes archive_path lives in `fields` until ms_create copied it
        self._handle = lib.ms_create(ctypes.byref(s))
        if not self._handle:
            _raise_last()
        self._loaders = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self._handle:
            for loader in self._loaders:
                loader._handle = None  # ms_destroy releases them
            self._loaders = []
            handle, self._handle = self._handle, None
            lib.ms_destroy(handle)

    def loader(self, kind=LOADER_STANDARD, flags=0):
        loader = Loader(self, kind, flags)
        self._loaders.append(loader)
        return loader

    def stats(self):
        s = Stats()
        _check(lib.ms_get_stats_sized(self._handle, ctypes.byref(s), ctypes.sizeof(s)))
        return s

    def verify(self):
        _check(lib.ms_verify(self._handle))

    def purge(self):
        lib.ms_purge(self._handle)

    def is_class_space(self, address):
        return bool(lib.ms_is_class_space(self._handle, address))

    def is_archived(self, address):
        return bool(lib.ms_is_archived(self._handle, address))

    def archive_root(self, name):
        """The address of the archived block named `name`, or None."""
        return lib.ms_archive_root(self._handle, name.encode()) or None

    def archive_status(self):
        """(error name, reason): ("MS_OK", "") when the archive asked for is mapped."""
        reason = ctypes.c_char_p()
        code = lib.ms_archive_status(self._handle, ctypes.byref(reason))
        return ERROR_NAMES[code], (reason.value or b"").decode()

    def encode_class(self, address):
        return lib.ms_encode_class(self._handle, address)

    def decode_class(self, narrow):
        return lib.ms_decode_class(self._handle, narrow)

    def report(self, json=False, per_loader=False, scale=b"\0"):
        pieces = []

        def write(user, text, length):  # must not raise into C
            try:
                pieces.append(ctypes.string_at(text, length))
            except BaseException:  # noqa: B902
                pass

        o = ReportOptions()
        _check(lib.ms_report_options_init_sized(ctypes.byref(o), ctypes.sizeof(o)))
        o.per_loader = int(per_loader)
        o.scale = scale
        fn = lib.ms_write_report_json_cb if json else lib.ms_print_report_cb
        callback = WRITE_FN(write)  # referenced until the call returns
        _check(fn(self._handle, callback, None, ctypes.byref(o)))
        return b"".join(pieces).decode()


class ArchiveBuilder:
    """Dump time: blocks allocated, pointer slots marked, roots named, then written to a file."""

    def __init__(self, base=0, **fields):
        s = Settings()
        _check(lib.ms_settings_init_sized(ctypes.byref(s), ctypes.sizeof(s)))
        for key, value in fields.items():
            setattr(s, key, value)
        self._handle = lib.ms_archive_begin(ctypes.byref(s), base)
        if not self._handle:
            _raise_last()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.discard()

    def allocate(self, size, space=SPACE_NONCLASS):
        p = lib.ms_archive_allocate(self._handle, space, size)
        if not p:
            _raise_last()
        return p

    def mark_pointer(self, slot):
        _check(lib.ms_archive_mark_pointer(self._handle, slot))

    def mark_narrow_class(self, slot):
        _check(lib.ms_archive_mark_narrow_class(self._handle, slot))

    def encode_class(self, klass):
        return lib.ms_archive_encode_class(self._handle, klass)

    def set_root(self, name, block):
        _check(lib.ms_archive_set_root(self._handle, name.encode(), block))

    def write(self, path):
        _check(lib.ms_archive_write(self._handle, os.fsencode(path)))

    def discard(self):
        if self._handle:
            handle, self._handle = self._handle, None
            lib.ms_archive_discard(handle)
