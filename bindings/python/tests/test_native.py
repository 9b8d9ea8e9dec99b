"""What makes the binding safe and native: state checked before every call, arguments checked
before they reach ctypes, unknown keywords refused, every failure a metaspace.Error with the
library's code, objects freed when collected, documentation, reprs and an out-of-tree build."""
import ctypes
import gc
import glob
import os
import pydoc
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

import metaspace
from metaspace import _lib

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.dirname(HERE)
REPO = os.path.abspath(os.path.join(PACKAGE, "..", ".."))


def raises(code, fn, *args, **kwargs):
    """Calls fn and returns the metaspace.Error it raised, which must carry `code`."""
    with pytest.raises(metaspace.Error) as e:
        fn(*args, **kwargs)
    assert e.value.code == code, str(e.value)
    assert e.value.name == _lib.ERROR_NAMES[code]
    assert e.value.name in str(e.value)
    return e.value


# ---- state checked before every call -----------------------------------------------------------

def _metaspace_calls(ms, klass):
    """Every public call on a Metaspace, with valid arguments."""
    return {
        "loader": lambda: ms.loader(),
        "stats": ms.stats, "usage": ms.usage, "verify": ms.verify, "purge": ms.purge,
        "gc_done": ms.gc_done,
        "set_gc_threshold": lambda: ms.set_gc_threshold(1 << 20, lambda m, c: None),
        "is_class_space": lambda: ms.is_class_space(klass),
        "contains": lambda: ms.contains(klass),
        "is_archived": lambda: ms.is_archived(klass),
        "encode_class": lambda: ms.encode_class(klass),
        "decode_class": lambda: ms.decode_class(1),
        "class_space_base": lambda: ms.class_space_base,
        "class_shift": lambda: ms.class_shift,
        "narrow_class_bits": lambda: ms.narrow_class_bits,
        "archive_root": lambda: ms.archive_root("x"),
        "archive_status": ms.archive_status,
        "report": ms.report, "report_json": lambda: ms.report(json=True),
    }


def test_every_metaspace_call_works_while_open_and_raises_destroyed_after_close():
    ms = metaspace.Metaspace()
    loader = ms.loader()
    klass = loader.allocate(64, metaspace.SPACE_CLASS)
    calls = _metaspace_calls(ms, klass)
    public = {n for n in dir(metaspace.Metaspace) if not n.startswith("_")}
    assert public - set(calls) == {"close", "closed", "handle", "loaders"}, "a call not tested"
    for name, call in calls.items():
        call()
    assert ms.decode_class(ms.encode_class(klass)) == klass
    ms.close()
    assert ms.closed and ms.handle is None and ms.loaders == []
    for name, call in calls.items():
        e = raises(metaspace.ErrorCode.DESTROYED, call)
        assert "closed" in e.text, name
    ms.close()  # again: nothing


def test_loader_calls_after_destroy_and_after_close_raise_destroyed():
    with metaspace.Metaspace() as ms:
        loader = ms.loader()
        p = loader.allocate(64)
        loader.destroy()
        assert loader.destroyed and loader not in ms.loaders
        # The README's promise: allocating from a destroyed loader is MS_ERR_DESTROYED.
        e = raises(metaspace.ErrorCode.DESTROYED, loader.allocate, 64)
        assert e.name == "MS_ERR_DESTROYED" and "destroyed" in e.text
        raises(metaspace.ErrorCode.DESTROYED, loader.deallocate, p, 64)
        raises(metaspace.ErrorCode.DESTROYED, loader.stats)
        loader.destroy()  # again: nothing
        other = ms.loader()
    e = raises(metaspace.ErrorCode.DESTROYED, other.allocate, 8)
    assert "metaspace was closed" in e.text
    raises(metaspace.ErrorCode.DESTROYED, other.stats)
    other.destroy()  # released with the metaspace: nothing left to do
    assert "closed" in repr(other)


def test_loader_as_context_manager_destroys_itself():
    with metaspace.Metaspace() as ms:
        with ms.loader(metaspace.LOADER_MICRO) as loader:
            loader.allocate(100)
            assert ms.stats().loaders == 1
        assert ms.stats().loaders == 0
        raises(metaspace.ErrorCode.DESTROYED, loader.allocate, 8)


def test_archive_builder_calls_after_discard_raise_destroyed(tmp_path):
    b = metaspace.ArchiveBuilder(class_alignment_bytes=64)
    k = b.allocate(128, metaspace.SPACE_CLASS)
    b.discard()
    assert b.discarded
    for call in (lambda: b.allocate(8), lambda: b.mark_pointer(k), lambda: b.mark_narrow_class(k),
                 lambda: b.encode_class(k), lambda: b.set_root("k", k),
                 lambda: b.write(tmp_path / "a.msa")):
        raises(metaspace.ErrorCode.DESTROYED, call)
    b.discard()


# ---- arguments checked before they reach ctypes ------------------------------------------------

class Index:
    """An integer that is not an int (numpy scalars are such)."""

    def __init__(self, n):
        self.n = n

    def __index__(self):
        return self.n


BAD_SIZES = [
    (2 ** 64 + 8, metaspace.ErrorCode.TOO_LARGE),  # would wrap to 8 in ctypes
    (2 ** 64, metaspace.ErrorCode.TOO_LARGE),
    (2 ** 200, metaspace.ErrorCode.TOO_LARGE),
    (-1, metaspace.ErrorCode.INVALID_ARGUMENT),     # would wrap to SIZE_MAX
    (-(2 ** 64) + 8, metaspace.ErrorCode.INVALID_ARGUMENT),
    ("x", metaspace.ErrorCode.INVALID_ARGUMENT),    # ctypes.ArgumentError without the check
    (8.0, metaspace.ErrorCode.INVALID_ARGUMENT),
    (None, metaspace.ErrorCode.INVALID_ARGUMENT),
    (True, metaspace.ErrorCode.INVALID_ARGUMENT),
    (b"8", metaspace.ErrorCode.INVALID_ARGUMENT),
]


@pytest.mark.parametrize("size,code", BAD_SIZES)
def test_allocate_refuses_sizes_outside_size_t_and_non_integers(size, code):
    with metaspace.Metaspace(count_allocations=1) as ms:
        loader = ms.loader()
        raises(code, loader.allocate, size)
        raises(code, loader.allocate, size, metaspace.SPACE_CLASS)
        st = loader.stats()
        assert st.allocations == 0 and st.used_bytes[0] == st.used_bytes[1] == 0
        p = loader.allocate(Index(24))
        assert loader.stats().allocations == 1 and loader.stats().used_bytes[0] == 24
        if code != metaspace.ErrorCode.TOO_LARGE:  # deallocate takes a size, not a request
            raises(code, loader.deallocate, p, size)
        raises(metaspace.ErrorCode.INVALID_ARGUMENT, loader.allocate, 8, "class")
        raises(metaspace.ErrorCode.INVALID_ARGUMENT, loader.allocate, 8, 2 ** 40)
        raises(metaspace.ErrorCode.INVALID_ARGUMENT, loader.allocate, 8, 7)  # by the library


def test_addresses_and_narrow_pointers_are_checked():
    with metaspace.Metaspace() as ms:
        loader = ms.loader()
        for bad in (-8, 2 ** 64, "0x10", 1.0):
            raises(metaspace.ErrorCode.INVALID_ARGUMENT, ms.is_class_space, bad)
            raises(metaspace.ErrorCode.INVALID_ARGUMENT, ms.encode_class, bad)
            raises(metaspace.ErrorCode.INVALID_ARGUMENT, loader.deallocate, bad, 8)
        for bad in (-1, 2 ** 32, "1"):
            raises(metaspace.ErrorCode.INVALID_ARGUMENT, ms.decode_class, bad)
        assert ms.decode_class(0) is None
        raises(metaspace.ErrorCode.INVALID_ARGUMENT, ms.loader, "standard")
        raises(metaspace.ErrorCode.INVALID_ARGUMENT, ms.loader, 3)  # by the library
        raises(metaspace.ErrorCode.INVALID_ARGUMENT, ms.loader, flags=-1)
        raises(metaspace.ErrorCode.INVALID_ARGUMENT, ms.report, scale="X")
        raises(metaspace.ErrorCode.INVALID_ARGUMENT, ms.archive_root, 5)
        raises(metaspace.ErrorCode.INVALID_ARGUMENT, ms.set_gc_threshold, 1, callback=5)
        assert ms.loader(shared=True).shared


@pytest.mark.parametrize("fields", [
    {"commit_granule_bytes": 2 ** 64 + 16384},
    {"max_committed_bytes": -1},
    {"class_space_bytes": "1g"},
    {"checked": 2 ** 40},
    {"gc_min_free_percent": -1},
    {"archive_path": 5},
    {"gc_callback": "not callable"},
])
def test_settings_values_are_checked(fields):
    raises(metaspace.ErrorCode.INVALID_ARGUMENT, metaspace.Metaspace, **fields)


# ---- unknown keywords refused -----------------------------------------------------------------

def test_unknown_keywords_are_refused_by_name():
    e = raises(metaspace.ErrorCode.INVALID_ARGUMENT, metaspace.Metaspace, max_commited_bytes=1)
    assert "'max_commited_bytes'" in e.text and "max_committed_bytes?" in e.text
    e = raises(metaspace.ErrorCode.INVALID_ARGUMENT, metaspace.Metaspace,
               granule=5, totally_bogus="x")
    assert "'granule'" in e.text and "'totally_bogus'" in e.text
    assert 'options="granule=..."' in e.text  # an options key given as a keyword
    for private in ("size", "gc_callback_user"):
        raises(metaspace.ErrorCode.INVALID_ARGUMENT, metaspace.Metaspace, **{private: 1})
    e = raises(metaspace.ErrorCode.INVALID_ARGUMENT, metaspace.ArchiveBuilder, colour="blue")
    assert "'colour'" in e.text
    raises(metaspace.ErrorCode.INVALID_ARGUMENT, metaspace.ArchiveBuilder,
           gc_callback=lambda m, c: None)


def test_every_settings_field_can_be_set_by_keyword():
    names = [n for n, _ in _lib.Settings._fields_ if n not in ("size", "gc_callback_user")]
    assert sorted(names) == sorted(metaspace.SETTINGS)
    with metaspace.Metaspace(commit_granule_bytes=65536, class_alignment_bytes=64,
                             count_allocations=1, reclaim=metaspace.RECLAIM_AGGRESSIVE) as ms:
        st = ms.stats()
        assert st.commit_granule_bytes == 65536 and st.allocations_counted == 1
        assert ms.class_shift == 6
        assert ms.class_space_base and ms.narrow_class_bits > 0


# ---- every failure a metaspace.Error with the library's code ----------------------------------

def _header_error_names():
    """The ms_error_t enumerators, in order, from every C header under include/metaspace/."""
    names = []
    for path in sorted(glob.glob(os.path.join(REPO, "include", "metaspace", "*.h"))):
        text = re.sub(r"/\*.*?\*/", "", open(path).read(), flags=re.S)
        for body in re.findall(r"enum\s+ms_error\b[^{]*\{(.*?)\}", text, flags=re.S):
            names += [item.split("=")[0].strip() for item in body.split(",") if item.strip()]
    return names


def test_error_codes_follow_the_header_and_the_library():
    names = _header_error_names()
    assert names and names == _lib.ERROR_NAMES
    assert [m.name for m in metaspace.ErrorCode] == [
        n[len("MS_ERR_"):] if n.startswith("MS_ERR_") else n[len("MS_"):] for n in names]
    for code, name in enumerate(names):
        e = metaspace.Error(code, "text")
        assert e.code == code and e.name == name and str(e) == name + ": text"
        assert isinstance(e.code, metaspace.ErrorCode)
    assert metaspace.Error(99, "?").name == "MS_ERR_99"


def _archive(path, **fields):
    with metaspace.ArchiveBuilder(**fields) as b:
        k = b.allocate(128, metaspace.SPACE_CLASS)
        b.set_root("k", k)
        b.write(path)


def test_failures_carry_the_documented_codes(tmp_path):
    E = metaspace.ErrorCode
    with metaspace.Metaspace() as ms:
        loader = ms.loader()
        raises(E.INVALID_ARGUMENT, loader.allocate, 0)
        raises(E.TOO_LARGE, loader.allocate, 64 << 20)
        raises(E.NOT_OWNED, loader.deallocate, ctypes.addressof(ctypes.c_long()), 8)
        raises(E.INVALID_ARGUMENT, metaspace.Metaspace, options="granule=16k,colour=blue")
    with metaspace.Metaspace(options="max_committed=1m") as ms:
        loader = ms.loader()
        with pytest.raises(metaspace.Error) as e:
            for _ in range(64):
                loader.allocate(64 << 10)
        assert e.value.code == E.LIMIT
    with metaspace.Metaspace(class_space_bytes=4 << 20) as ms:
        loader = ms.loader()
        with pytest.raises(metaspace.Error) as e:
            for _ in range(8):
                loader.allocate(1 << 20, metaspace.SPACE_CLASS)
        assert e.value.code == E.CLASS_SPACE_FULL
    with metaspace.Metaspace(checked=1) as ms:
        loader = ms.loader()
        p = loader.allocate(64)
        loader.deallocate(p, 64)
        raises(E.DOUBLE_FREE, loader.deallocate, p, 64)
        q = loader.allocate(64)
        ctypes.memset(q, 1, 80)  # over the fence behind the block
        raises(E.OVERWRITE, ms.verify)
    raises(E.ARCHIVE_IO, metaspace.Metaspace, archive_path=tmp_path / "none.msa",
           archive_policy=metaspace.ARCHIVE_REQUIRE)
    path = tmp_path / "a.msa"
    _archive(path, class_alignment_bytes=64)
    raises(E.ARCHIVE_MISMATCH, metaspace.Metaspace, archive_path=path,
           archive_policy=metaspace.ARCHIVE_REQUIRE)  # other class alignment
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF  # inside the regions: only the checksum notices
    path.write_bytes(bytes(data))
    e = raises(E.ARCHIVE_CHECKSUM, metaspace.Metaspace, archive_path=str(path),
               class_alignment_bytes=64, archive_policy=metaspace.ARCHIVE_REQUIRE)
    assert "checksum" in e.text


def test_a_reservation_the_kernel_refuses_is_reserve_failed():
    # In a child: an address-space limit 512 MiB above what the interpreter has, and a 4 GiB
    # class space that cannot fit under it.
    code = textwrap.dedent("""
        import resource, metaspace
        vm = int(open("/proc/self/status").read().split("VmSize:")[1].split()[0]) * 1024
        resource.setrlimit(resource.RLIMIT_AS, (vm + (512 << 20),) * 2)
        try:
            metaspace.Metaspace(class_space_bytes=4 << 30)
        except metaspace.Error as e:
            print(e.name)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=dict(os.environ, PYTHONPATH=PACKAGE))
    assert out.stdout.strip() == "MS_ERR_RESERVE_FAILED", out.stderr


def test_an_exception_in_the_gc_callback_does_not_unwind_into_the_library(capfd):
    seen = []

    def callback(ms, committed):
        seen.append((ms, committed))
        raise RuntimeError("from the callback")

    with metaspace.Metaspace(gc_threshold_bytes=256 << 10, gc_callback=callback) as ms:
        loader = ms.loader()
        for _ in range(16):
            loader.allocate(64 << 10)
        assert seen and seen[0][0] is ms and seen[0][1] >= 256 << 10
        assert "RuntimeError: from the callback" in capfd.readouterr().err
        seen.clear()
        ms.set_gc_threshold(ms.usage().total.committed_bytes + (128 << 10),
                            lambda m, c: seen.append(c))
        for _ in range(16):
            loader.allocate(64 << 10)
        assert seen
        assert ms.gc_done() > 0


# ---- freed when collected ---------------------------------------------------------------------

def _vm_size():
    with open("/proc/self/status") as f:
        return int(re.search(r"VmSize:\s+(\d+) kB", f.read()).group(1)) * 1024


def _mappings():
    with open("/proc/self/maps") as f:
        return sum(1 for _ in f)


def test_metaspaces_dropped_without_close_leave_no_address_space_reserved():
    gc.collect()
    before, maps_before = _vm_size(), _mappings()
    spaces = []
    for i in range(300):
        ms = metaspace.Metaspace()
        loader = ms.loader()  # metaspace <-> loader: a cycle only the collector frees
        loader.allocate(64)
        if i % 2:
            del loader
        spaces.append(ms)
    reserved = spaces[0].stats().total.reserved_bytes
    peak = _vm_size()
    assert peak - before >= 300 * reserved > 0
    del spaces, ms
    gc.collect()
    after = _vm_size()
    # What is left is the interpreter's own (a few MiB at most), not 300 metaspaces' worth.
    assert after - before < reserved, (before, peak, after)
    assert _mappings() - maps_before < 300


def test_metaspace_dropped_without_cycle_is_freed_at_once():
    gc.collect()
    before = _vm_size()
    ms = metaspace.Metaspace()
    finalizer = ms._finalizer
    assert _vm_size() > before and finalizer.alive
    del ms
    assert not finalizer.alive and _vm_size() - before < (64 << 20)


def test_archive_builder_dropped_without_discard_is_freed():
    b = metaspace.ArchiveBuilder()
    b.allocate(64)
    finalizer = b._finalizer
    del b
    gc.collect()
    assert not finalizer.alive


# ---- documentation and reprs ------------------------------------------------------------------

def test_all_names_exist_and_public_objects_are_documented():
    assert sorted(set(metaspace.__all__)) == sorted(metaspace.__all__)
    for name in metaspace.__all__:
        assert hasattr(metaspace, name), name
    for cls in (metaspace.Metaspace, metaspace.Loader, metaspace.ArchiveBuilder,
                metaspace.Error, metaspace.ErrorCode, metaspace.Stats, metaspace.SpaceStats,
                metaspace.LoaderStats, metaspace.Usage, metaspace.ArchiveStats):
        assert cls.__doc__ and len(cls.__doc__) > 20, cls
        for attr, value in vars(cls).items():
            if attr.startswith("_") or not (callable(value) or isinstance(value, property)):
                continue
            assert value.__doc__, "%s.%s" % (cls.__name__, attr)
    assert metaspace.library_version.__doc__


def test_help_describes_the_api():
    text = pydoc.render_doc(metaspace, renderer=pydoc.plaintext)
    for needle in ("class Metaspace", "class Loader", "allocate(self, size", "MS_ERR_DESTROYED",
                   "weakref.finalize", "METASPACE_LIBRARY", "encode_class"):
        assert needle in text, needle


def test_stats_and_objects_print_their_fields():
    with metaspace.Metaspace(count_allocations=1) as ms:
        loader = ms.loader()
        loader.allocate(64)
        st = ms.stats()
        text = repr(st)
        assert text.startswith("Stats(space=[SpaceStats(reserved_bytes=")
        assert "object at 0x" not in text
        assert "total=SpaceStats(" in text and "loaders=1" in text
        assert "archive=ArchiveStats(mapped=0" in text
        assert "committed_bytes=%d" % st.total.committed_bytes in text
        ls = repr(loader.stats())
        assert ls.startswith("LoaderStats(kind=1, allocations=1, used_bytes=[64, 0]")
        assert repr(ms.usage()).startswith("Usage(size=")
        assert st.as_dict()["total"]["committed_bytes"] == st.total.committed_bytes
        assert re.fullmatch(r"<metaspace.Metaspace at 0x[0-9a-f]+, 1 loaders>", repr(ms))
        assert re.fullmatch(r"<metaspace.Loader standard, live at 0x[0-9a-f]+>", repr(loader))
    assert repr(ms) == "<metaspace.Metaspace closed>"


# ---- out-of-tree build ------------------------------------------------------------------------

def _tree(root):
    found = set()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        found |= {os.path.relpath(os.path.join(dirpath, f), root) for f in filenames}
        found |= {os.path.relpath(os.path.join(dirpath, d), root) + "/" for d in dirnames}
    return found


def test_pip_install_writes_nothing_into_the_source_tree(tmp_path):
    pytest.importorskip("hatchling", reason="the build backend (scripts/install-deps.sh)")
    before = _tree(PACKAGE)
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--no-index", "--target", str(target), PACKAGE],
                   check=True, cwd=str(tmp_path))
    assert _tree(PACKAGE) == before
    assert (target / "metaspace" / "_api.py").exists()
    assert not (target / "tests").exists()
    code = ("import metaspace, sys; m = metaspace.Metaspace(); print(m.loader().allocate(8) > 0, "
            "metaspace.__file__.startswith(sys.argv[1]))")
    env = dict(os.environ, PYTHONPATH=str(target))
    out = subprocess.run([sys.executable, "-c", code, str(target)], env=env, capture_output=True,
                         text=True, check=True, cwd=str(tmp_path))
    assert out.stdout.split() == ["True", "True"]
    shutil.rmtree(target)
