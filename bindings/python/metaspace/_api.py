"""The Pythonic API over metaspace._lib: objects that check their own state and arguments before
every call, turn every failure into metaspace.Error, and free what they own when collected."""
import ctypes
import difflib
import enum
import operator
import os
import sys
import traceback
import weakref

from . import _lib
from ._lib import lib

ErrorCode = enum.IntEnum("ErrorCode", [
    (name[len("MS_ERR_"):] if name.startswith("MS_ERR_") else name[len("MS_"):], code)
    for code, name in enumerate(_lib.ERROR_NAMES)])
ErrorCode.__doc__ = """The library's ms_error_t codes: ErrorCode.DESTROYED == 10 is MS_ERR_DESTROYED.
Error.code is one of these (an int)."""
ErrorCode.__module__ = "metaspace"


class Error(Exception):
    """A failed call. `code` is the library's error code (an ErrorCode, which is an int), `name`
    its C name ("MS_ERR_DESTROYED"), `text` the library's sentence (ms_last_error_text) or the
    binding's own for arguments it refused before calling in."""

    def __init__(self, code, text):
        super().__init__(code, text)
        try:
            self.code = ErrorCode(code)
            self.name = _lib.ERROR_NAMES[code]
        except ValueError:
            self.code = code
            self.name = "MS_ERR_%d" % code
        self.text = text

    def __str__(self):
        return "%s: %s" % (self.name, self.text)


def _raise_last():
    raise Error(lib.ms_last_error(), (lib.ms_last_error_text() or b"").decode(errors="replace"))


def _check(code):
    if code != _lib.OK:
        _raise_last()


def _invalid(text):
    return Error(ErrorCode.INVALID_ARGUMENT, text)


def _integer(value, what):
    """value as a Python int if it is an integer (int, or anything with __index__; not bool)."""
    if isinstance(value, bool):
        raise _invalid("%s must be an integer, not bool" % what)
    try:
        return operator.index(value)
    except TypeError:
        raise _invalid("%s must be an integer, not %s" % (what, type(value).__name__)) from None


def _in_range(value, what, low, high, too_large=ErrorCode.INVALID_ARGUMENT):
    n = _integer(value, what)
    if n < low:
        raise _invalid("%s must be %s, not %d" % (
            what, "non-negative" if low == 0 else "at least %d" % low, n))
    if n > high:
        raise Error(too_large, "%s %d does not fit in %d bits" % (what, n, high.bit_length()))
    return n


def _size(value, what, too_large=ErrorCode.INVALID_ARGUMENT):
    """A size_t: an integer in 0..SIZE_MAX."""
    return _in_range(value, what, 0, _lib.SIZE_MAX, too_large)


def _address(value, what="address"):
    return _in_range(value, what, 0, _lib.SIZE_MAX)


_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1


def _c_int(value, what):
    """An int argument (enum values: the library refuses those out of range)."""
    return _in_range(value, what, _INT_MIN, _INT_MAX)


def _name_bytes(value, what):
    if isinstance(value, str):
        value = value.encode()
    if not isinstance(value, bytes):
        raise _invalid("%s must be str or bytes, not %s" % (what, type(value).__name__))
    if b"\0" in value:
        raise _invalid("%s contains a NUL byte" % what)
    return value


def _path_bytes(value, what):
    try:
        value = os.fsencode(value)
    except TypeError:
        raise _invalid("%s must be a path (str, bytes or os.PathLike), not %s"
                       % (what, type(value).__name__)) from None
    return _name_bytes(value, what)


# ms_settings_t fields a caller may set by keyword, and how each value is checked.
_SETTING_CHECKS = {}
for _field, _ctype in _lib.Settings._fields_:
    if _field in ("size", "gc_callback", "gc_callback_user"):
        continue
    if _ctype is ctypes.c_size_t:
        _SETTING_CHECKS[_field] = _size
    elif _ctype is ctypes.c_uint:
        _SETTING_CHECKS[_field] = lambda v, what: _in_range(v, what, 0, (1 << 32) - 1)
    elif _ctype is ctypes.c_int:
        _SETTING_CHECKS[_field] = _c_int
    elif _field == "archive_path":
        _SETTING_CHECKS[_field] = lambda v, what: None if v is None else _path_bytes(v, what)
    else:  # pragma: no cover - a field added to Settings without a check here
        raise AssertionError("no check for setting %s" % _field)

# Keys of the options text (ms_settings_parse) that differ from the field names: named in the
# error when one is passed as a keyword.
_OPTION_KEYS = {
    "granule": "commit_granule_bytes", "root_chunk": "root_chunk_bytes", "node": "node_bytes",
    "class_space": "class_space_bytes", "class_base": "class_space_base",
    "class_alignment": "class_alignment_bytes", "max_committed": "max_committed_bytes",
    "gc_threshold": "gc_threshold_bytes", "archive": "archive_path",
}

SETTINGS = tuple(_SETTING_CHECKS) + ("gc_callback",)


def _hint(key):
    if key in _OPTION_KEYS:
        return " (%s=... or options=\"%s=...\")" % (_OPTION_KEYS[key], key)
    close = difflib.get_close_matches(key, SETTINGS, n=1)
    return " (did you mean %s?)" % close[0] if close else ""


def _settings(options=None, from_env=False, fields=None, allow_callback=False):
    """An ms_settings_t: the defaults, then METASPACE_OPTIONS (from_env), then the options text,
    then the fields by keyword, each checked. Returns (settings, keepalive, gc_callback)."""
    fields = fields or {}
    unknown = [k for k in fields if k not in _SETTING_CHECKS and
               not (allow_callback and k == "gc_callback")]
    if unknown:
        raise _invalid("unknown setting%s %s; the settings are: %s" % (
            "s" if len(unknown) > 1 else "",
            ", ".join("'%s'%s" % (k, _hint(k)) for k in unknown), ", ".join(SETTINGS)))
    s = _lib.Settings()
    _check(lib.ms_settings_init_sized(ctypes.byref(s), ctypes.sizeof(s)))
    if from_env:
        _check(lib.ms_settings_from_env(ctypes.byref(s)))
    if options is not None:
        _check(lib.ms_settings_parse(ctypes.byref(s), _name_bytes(options, "options")))
    keepalive = []
    callback = None
    for key, value in fields.items():
        if key == "gc_callback":
            if value is not None and not callable(value):
                raise _invalid("gc_callback must be callable, not %s" % type(value).__name__)
            callback = value
            continue
        value = _SETTING_CHECKS[key](value, key)
        if isinstance(value, bytes):
            keepalive.append(value)  # the struct points into it until ms_create copied it
        setattr(s, key, value)
    return s, keepalive, callback


def _destroy_metaspace(handle, state):
    lib.ms_destroy(handle)
    state.clear()  # the GC callbacks, alive until ms_destroy returned


def _gc_trampoline(metaspace_ref, callback):
    """A C GC callback that calls callback(metaspace, committed_bytes) and never raises into C."""

    def call(handle, committed, user):
        try:
            ms = metaspace_ref()
            if ms is not None:
                callback(ms, committed)
        except BaseException:  # noqa: B902 - nothing may unwind through the library
            traceback.print_exc(file=sys.stderr)

    return _lib.GC_CALLBACK(call)


class Loader:
    """A class loader's arena in a Metaspace (made by Metaspace.loader()).

    Blocks come from allocate() as addresses (ints) and stay valid until deallocate(), destroy()
    of the loader, or the end of its metaspace. The loader keeps its metaspace alive, and the
    metaspace its loaders: a loader is freed by destroy() or with its metaspace. Calls on one
    loader must not overlap unless it was created shared. As a context manager it destroys
    itself at the end of the block."""

    def __init__(self, metaspace, kind, flags):
        self._metaspace = metaspace  # keeps the metaspace alive while the loader is
        self._kind = kind
        self._flags = flags
        self._gone = None  # why the handle is None: "destroyed" or "closed"
        self._handle = None
        handle = lib.ms_loader_create(metaspace._live(), kind, flags)
        if not handle:
            _raise_last()
        self._handle = handle

    def _live(self):
        if self._handle is None:
            if self._gone == "closed":
                raise Error(ErrorCode.DESTROYED, "the loader's metaspace was closed")
            raise Error(ErrorCode.DESTROYED, "the loader was destroyed")
        return self._handle

    @property
    def handle(self):
        """The ms_loader_t* as an int (None once destroyed)."""
        return self._handle

    @property
    def kind(self):
        """LOADER_BOOT, LOADER_STANDARD or LOADER_MICRO."""
        return self._kind

    @property
    def shared(self):
        """True if calls on this loader may come from several threads at once."""
        return bool(self._flags & _lib.LOADER_SHARED)

    @property
    def destroyed(self):
        """True once destroy() ran or the metaspace was closed."""
        return self._handle is None

    @property
    def metaspace(self):
        """The Metaspace this loader belongs to."""
        return self._metaspace

    def allocate(self, size, space=_lib.SPACE_NONCLASS):
        """A block of `size` bytes (rounded up to 8, or to the class alignment in class space)
        in SPACE_NONCLASS or SPACE_CLASS: its address, an int. Raises Error: INVALID_ARGUMENT
        (size 0, not an integer, bad space), TOO_LARGE (above a root chunk), LIMIT,
        CLASS_SPACE_FULL, COMMIT_FAILED, DESTROYED (loader destroyed or metaspace closed)."""
        size = _size(size, "size", ErrorCode.TOO_LARGE)
        space = _c_int(space, "space")
        p = lib.ms_alloc(self._live(), space, size)
        if not p:
            _raise_last()
        return p

    def deallocate(self, address, size):
        """Gives a block back early for reuse by this loader; `size` is the size it was
        allocated with. Raises Error: NOT_OWNED, and in checked mode DOUBLE_FREE or OVERWRITE."""
        address = _address(address)
        size = _size(size, "size")
        _check(lib.ms_deallocate(self._live(), address, size))

    def stats(self):
        """This loader's LoaderStats (used, committed, capacity, free blocks, chunks per space)."""
        s = _lib.LoaderStats()
        _check(lib.ms_loader_get_stats_sized(self._live(), ctypes.byref(s), ctypes.sizeof(s)))
        return s

    def destroy(self):
        """Returns all of the loader's memory at once. Later calls raise Error(DESTROYED);
        destroying again does nothing."""
        if self._handle is None:
            return
        handle, self._handle, self._gone = self._handle, None, "destroyed"
        self._metaspace._loaders.discard(self)
        _check(lib.ms_loader_destroy(handle))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()

    def __repr__(self):
        kind = {_lib.LOADER_BOOT: "boot", _lib.LOADER_STANDARD: "standard",
                _lib.LOADER_MICRO: "micro"}.get(self._kind, str(self._kind))
        state = ("%s at %#x" % ("shared" if self.shared else "live", self._handle)
                 if self._handle else self._gone)
        return "<metaspace.Loader %s, %s>" % (kind, state)


class Metaspace:
    """A metaspace: reserved address space, loaders that allocate from it, and memory that goes
    back to the operating system as loaders die.

    Settings come from the defaults, then METASPACE_OPTIONS (from_env=True), then `options`
    ("granule=16k,reclaim=aggressive", the keys of ms_settings_parse), then keywords named like
    the fields of ms_settings_t (commit_granule_bytes=16384, checked=1, ...; gc_callback=f calls
    f(metaspace, committed_bytes) when committed memory crosses gc_threshold_bytes). An unknown
    keyword or a value that is not an integer in range raises Error(INVALID_ARGUMENT).

    close() (or the end of a `with` block) destroys it with every loader; a metaspace that is
    collected without close() is destroyed then. Every call after close() raises
    Error(DESTROYED). Addresses handed out are plain ints: they must not be used after their
    loader or metaspace is gone."""

    def __init__(self, options=None, from_env=False, **settings):
        s, keepalive, callback = _settings(options, from_env, settings, allow_callback=True)
        self._handle = None
        self._loaders = set()
        self._callbacks = []  # C callbacks, alive until ms_destroy returned
        if callback is not None:
            c = _gc_trampoline(weakref.ref(self), callback)
            self._callbacks.append(c)
            s.gc_callback = ctypes.cast(c, ctypes.c_void_p)
        handle = lib.ms_create(ctypes.byref(s))
        del keepalive  # copied by ms_create
        if not handle:
            _raise_last()
        self._handle = handle
        self._finalizer = weakref.finalize(self, _destroy_metaspace, handle, self._callbacks)

    def _live(self):
        if self._handle is None:
            raise Error(ErrorCode.DESTROYED, "the metaspace was closed")
        return self._handle

    @property
    def handle(self):
        """The ms_metaspace_t* as an int (None once closed)."""
        return self._handle

    @property
    def closed(self):
        """True once close() ran."""
        return self._handle is None

    @property
    def loaders(self):
        """The live loaders made through this object."""
        return list(self._loaders)

    def close(self):
        """Destroys the metaspace: every loader and all reserved memory. Closing again does
        nothing."""
        if self._handle is None:
            return
        for loader in self._loaders:
            loader._handle, loader._gone = None, "closed"  # ms_destroy releases them
        self._loaders = set()
        self._handle = None
        self._finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        if self._handle is None:
            return "<metaspace.Metaspace closed>"
        return "<metaspace.Metaspace at %#x, %d loaders>" % (self._handle, len(self._loaders))

    def loader(self, kind=_lib.LOADER_STANDARD, shared=False, flags=0):
        """A new Loader of `kind` (LOADER_BOOT, LOADER_STANDARD, LOADER_MICRO); shared=True (or
        flags=LOADER_SHARED) lets several threads call it at once."""
        kind = _c_int(kind, "kind")
        flags = _in_range(flags, "flags", 0, (1 << 32) - 1) | (_lib.LOADER_SHARED if shared else 0)
        loader = Loader(self, kind, flags)
        self._loaders.add(loader)
        return loader

    def stats(self):
        """A consistent Stats snapshot (space[SPACE_NONCLASS], space[SPACE_CLASS], total, ...)."""
        s = _lib.Stats()
        _check(lib.ms_get_stats_sized(self._live(), ctypes.byref(s), ctypes.sizeof(s)))
        return s

    def usage(self):
        """Usage in O(1) without loader locks (reserved, committed, used, overhead per space);
        `used` may lag by what loaders bumped since their counters were last brought up to date."""
        u = _lib.Usage()
        u.size = ctypes.sizeof(u)
        _check(lib.ms_get_usage(self._live(), ctypes.byref(u)))
        return u

    def verify(self):
        """Checks every invariant; raises Error(CORRUPTED or OVERWRITE) with the details."""
        _check(lib.ms_verify(self._live()))

    def purge(self):
        """Returns the memory of free chunks to the operating system."""
        lib.ms_purge(self._live())

    def set_gc_threshold(self, threshold_bytes, callback=None):
        """Calls callback(metaspace, committed_bytes) when committed memory reaches
        threshold_bytes (0: no threshold), and when the cap refuses a commit. The callback must
        not close this metaspace; an exception in it is printed, not raised."""
        threshold_bytes = _size(threshold_bytes, "threshold_bytes")
        handle = self._live()
        if callback is not None and not callable(callback):
            raise _invalid("callback must be callable, not %s" % type(callback).__name__)
        c = (_gc_trampoline(weakref.ref(self), callback) if callback is not None
             else _lib.GC_CALLBACK())
        self._callbacks.append(c)
        lib.ms_set_gc_threshold(handle, threshold_bytes, c, None)

    def gc_done(self):
        """Tells the library a collection finished: the threshold moves by the GC policy.
        Returns the new threshold (0: none)."""
        return lib.ms_gc_done(self._live())

    def contains(self, address):
        """True if address lies in address space this metaspace reserved (either space or the
        archive)."""
        address = _address(address)
        return bool(lib.ms_contains(self._live(), address))

    def is_class_space(self, address):
        """True if address lies in the compressed class space."""
        address = _address(address)
        return bool(lib.ms_is_class_space(self._live(), address))

    def is_archived(self, address):
        """True if address lies in the mapped class-data archive."""
        address = _address(address)
        return bool(lib.ms_is_archived(self._live(), address))

    def encode_class(self, address):
        """The narrow class pointer of a class-space block (0 for address 0)."""
        address = _address(address)
        return lib.ms_encode_class(self._live(), address)

    def decode_class(self, narrow):
        """The address a narrow class pointer stands for (None for 0)."""
        narrow = _in_range(narrow, "narrow", 0, _lib.UINT32_MAX)
        return lib.ms_decode_class(self._live(), narrow)

    @property
    def class_space_base(self):
        """The narrow class pointer base (class space start, or the archive right below it)."""
        return lib.ms_class_space_base(self._live())

    @property
    def class_shift(self):
        """The narrow class pointer shift: log2 of the class alignment."""
        return lib.ms_class_shift(self._live())

    @property
    def narrow_class_bits(self):
        """The bits a narrow class pointer needs for the whole range."""
        return lib.ms_narrow_class_bits(self._live())

    def archive_root(self, name):
        """The address of the archived block named `name`, or None."""
        name = _name_bytes(name, "name")
        return lib.ms_archive_root(self._live(), name) or None

    def archive_status(self):
        """(error name, reason): ("MS_OK", "") when the archive asked for is mapped or none was."""
        reason = ctypes.c_char_p()
        code = lib.ms_archive_status(self._live(), ctypes.byref(reason))
        return _lib.ERROR_NAMES[code], (reason.value or b"").decode(errors="replace")

    def report(self, json=False, per_loader=False, per_kind=True, free_lists=True, scale=None):
        """The report as text (jcmd VM.metaspace style) or JSON (schema libmetaspace.report).
        scale: None (dynamic), "B", "K", "M" or "G"; text only."""
        if scale in (None, "", b"", b"\0"):
            scale = b"\0"
        elif isinstance(scale, str):
            scale = scale.encode()
        if not isinstance(scale, bytes) or len(scale) != 1:
            raise _invalid("scale must be None or one of 'B', 'K', 'M', 'G', not %r" % (scale,))
        pieces = []

        def write(user, text, length):  # must not raise into C
            try:
                pieces.append(ctypes.string_at(text, length))
            except BaseException:  # noqa: B902
                pass

        o = _lib.ReportOptions()
        _check(lib.ms_report_options_init_sized(ctypes.byref(o), ctypes.sizeof(o)))
        o.per_loader = int(bool(per_loader))
        o.per_kind = int(bool(per_kind))
        o.free_lists = int(bool(free_lists))
        o.scale = scale
        fn = lib.ms_write_report_json_cb if json else lib.ms_print_report_cb
        callback = _lib.WRITE_FN(write)  # referenced until the call returns
        _check(fn(self._live(), callback, None, ctypes.byref(o)))
        return b"".join(pieces).decode(errors="replace")


def _discard_builder(handle):
    lib.ms_archive_discard(handle)


class ArchiveBuilder:
    """Dump time of a class-data archive: blocks allocated, pointer slots marked, roots named,
    then written to a file that Metaspace(archive_path=...) maps. Keywords as for Metaspace
    (class alignment, class space size and root chunk size must match at mapping time); base is
    where the archive is meant to be mapped (0: ARCHIVE_DEFAULT_BASE). discard() (or the end of
    a `with` block, or collection) frees the builder; later calls raise Error(DESTROYED)."""

    def __init__(self, base=0, options=None, **settings):
        s, keepalive, _ = _settings(options, False, settings)
        base = _address(base, "base")
        handle = lib.ms_archive_begin(ctypes.byref(s), base)
        del keepalive
        self._handle = None
        if not handle:
            _raise_last()
        self._handle = handle
        self._finalizer = weakref.finalize(self, _discard_builder, handle)

    def _live(self):
        if self._handle is None:
            raise Error(ErrorCode.DESTROYED, "the archive builder was discarded")
        return self._handle

    @property
    def discarded(self):
        """True once discard() ran."""
        return self._handle is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.discard()

    def __repr__(self):
        if self._handle is None:
            return "<metaspace.ArchiveBuilder discarded>"
        return "<metaspace.ArchiveBuilder at %#x>" % self._handle

    def allocate(self, size, space=_lib.SPACE_NONCLASS):
        """A zeroed block of the archive (class space blocks aligned to the class alignment)."""
        size = _size(size, "size", ErrorCode.TOO_LARGE)
        space = _c_int(space, "space")
        p = lib.ms_archive_allocate(self._live(), space, size)
        if not p:
            _raise_last()
        return p

    def mark_pointer(self, slot):
        """The aligned word at `slot` holds 0 or a pointer into a block of this builder."""
        slot = _address(slot, "slot")
        _check(lib.ms_archive_mark_pointer(self._live(), slot))

    def mark_narrow_class(self, slot):
        """The 4-byte word at `slot` holds 0 or encode_class() of a class block."""
        slot = _address(slot, "slot")
        _check(lib.ms_archive_mark_narrow_class(self._live(), slot))

    def encode_class(self, klass):
        """The narrow class pointer `klass` will have once mapped."""
        klass = _address(klass, "klass")
        narrow = lib.ms_archive_encode_class(self._live(), klass)
        if narrow == 0 and klass != 0:
            _raise_last()
        return narrow

    def set_root(self, name, block):
        """Names a block (up to 55 bytes; a name set again is replaced)."""
        name = _name_bytes(name, "name")
        block = _address(block, "block")
        _check(lib.ms_archive_set_root(self._live(), name, block))

    def write(self, path):
        """Writes the file (via path.tmp, renamed). The builder stays usable."""
        path = _path_bytes(path, "path")
        _check(lib.ms_archive_write(self._live(), path))

    def discard(self):
        """Frees the builder; discarding again does nothing."""
        if self._handle is None:
            return
        self._handle = None
        self._finalizer()
