"""The Python bindings against the real shared library (METASPACE_LIBRARY or the loader path)."""
import ctypes
import json
import os
import re
import subprocess
import sys

import pytest

import metaspace
from metaspace import _lib


def header_version():
    here = os.path.dirname(os.path.abspath(__file__))
    header = os.path.join(here, "..", "..", "..", "include", "metaspace", "metaspace.h")
    text = open(header).read()
    return ".".join(re.search(r"#define MS_VERSION_%s (\d+)" % p, text).group(1)
                    for p in ("MAJOR", "MINOR", "PATCH"))


def test_versions_agree():
    assert metaspace.library_version() == header_version() == metaspace.__version__


def test_allocate_write_free_and_stats():
    with metaspace.Metaspace(options="granule=16k,reclaim=aggressive,count_allocations=1") as ms:
        loader = ms.loader()
        blocks = [(loader.allocate(n), n) for n in (8, 64, 600, 4096)]
        for p, n in blocks:
            ctypes.memset(p, 0x5A, n)
        klass = loader.allocate(600, metaspace.SPACE_CLASS)
        assert ms.is_class_space(klass)
        assert not ms.is_class_space(blocks[0][0])
        assert ms.contains(klass) and ms.contains(blocks[0][0])
        assert not ms.contains(ctypes.addressof(ctypes.c_int(0)))
        loader.deallocate(*blocks[1])
        st = ms.stats()
        assert st.commit_granule_bytes == 16 * 1024
        assert st.loaders == 1
        total = st.total
        assert total.committed_bytes == (total.used_bytes + total.free_in_chunks_bytes +
                                         total.free_chunks_bytes + total.free_blocks_bytes +
                                         total.fence_bytes + total.overhead_bytes)
        assert loader.stats().allocations == 5
        assert loader.stats().allocations_counted == 1
        assert st.allocations_counted == 1
        ms.verify()
        loader.destroy()
        assert ms.stats().loaders == 0


def test_allocations_are_not_counted_by_default():
    with metaspace.Metaspace() as ms:
        loader = ms.loader()
        for n in (8, 64, 600):
            loader.allocate(n)
        assert loader.stats().allocations_counted == 0
        assert loader.stats().allocations == 0
        assert ms.stats().allocations_counted == 0


def test_errors_are_exceptions_with_the_code():
    with metaspace.Metaspace() as ms:
        loader = ms.loader()
        with pytest.raises(metaspace.Error) as e:
            loader.allocate(0)
        assert e.value.name == "MS_ERR_INVALID_ARGUMENT"
        with pytest.raises(metaspace.Error) as e:
            loader.allocate(1 << 40)
        assert e.value.name == "MS_ERR_TOO_LARGE"
        with pytest.raises(metaspace.Error) as e:
            loader.deallocate(ctypes.addressof(ctypes.c_long()), 8)
        assert e.value.name == "MS_ERR_NOT_OWNED"
        handle = loader.handle
        loader.destroy()
        assert _lib.lib.ms_alloc(handle, 0, 16) is None
        assert _lib.lib.ms_last_error() == _lib.ERROR_NAMES.index("MS_ERR_DESTROYED")


def test_foreign_handle_over_nonzero_memory_is_refused():
    # A {begin, end} struct posing as a loader: refused, and left as it was.
    buf = ctypes.create_string_buffer(4096)
    fake = (ctypes.c_void_p * 64)()
    fake[0] = ctypes.addressof(buf)
    fake[1] = ctypes.addressof(buf) + 4096
    before = bytes(fake)
    with metaspace.Metaspace() as ms:
        assert _lib.lib.ms_alloc(ctypes.addressof(fake), 0, 64) is None
        assert _lib.lib.ms_last_error() == _lib.ERROR_NAMES.index("MS_ERR_INVALID_ARGUMENT")
        assert bytes(fake) == before
        assert _lib.lib.ms_alloc(ms._handle, 1, 16) is None  # the metaspace handle as a loader
        ms.verify()


def test_options_unknown_key_is_named():
    with pytest.raises(metaspace.Error) as e:
        metaspace.Metaspace(options="granule=16k,colour=blue")
    assert "unknown key 'colour'" in str(e.value)
    with pytest.raises(metaspace.Error) as e:
        metaspace.Metaspace(options="granule=3k")  # well-formed, out of range
    assert e.value.name == "MS_ERR_INVALID_ARGUMENT"


def test_options_from_environment(monkeypatch):
    monkeypatch.setenv("METASPACE_OPTIONS", "granule=64k,checked=1")
    with metaspace.Metaspace(from_env=True) as ms:
        assert ms.stats().commit_granule_bytes == 64 * 1024
    monkeypatch.setenv("METASPACE_OPTIONS", "granule=64k,bogus=1")
    with pytest.raises(metaspace.Error) as e:
        metaspace.Metaspace(from_env=True)
    assert "'bogus'" in str(e.value)


def test_reports_through_the_callback():
    with metaspace.Metaspace() as ms:
        loader = ms.loader(metaspace.LOADER_MICRO)
        loader.allocate(100)
        text = ms.report(per_loader=True, scale=b"K")
        assert "Total usage" in text
        doc = json.loads(ms.report(json=True))
        assert doc["schema"] == "libmetaspace.report"
        with pytest.raises(metaspace.Error):
            ms.report(scale=b"X")


def test_report_at_exit_from_the_environment():
    # A child process: the JSON report arrives on stderr when the process exits.
    code = ("import metaspace; ms = metaspace.Metaspace(from_env=True); "
            "ms.loader().allocate(64)")
    env = dict(os.environ, METASPACE_OPTIONS="report_at_exit=json")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    doc = json.loads(out.stderr[out.stderr.index("{"):])
    assert doc["schema"] == "libmetaspace.report"


def test_every_error_code_the_library_names_is_known_here():
    # The table above must follow the header: each code has the library's own description, and
    # the first code past the table is one the library does not know either.
    for code in range(1, len(_lib.ERROR_NAMES)):
        assert not _lib.lib.ms_error_name(code).startswith(b"unknown"), _lib.ERROR_NAMES[code]
    assert _lib.lib.ms_error_name(len(_lib.ERROR_NAMES)).startswith(b"unknown")


def _dump_tiny_archive(path, classes=3):
    """Each class: a Klass (class space) whose word 0 points at its method block and whose word 1
    points at the previous Klass; the method block holds the Klass by full and narrow pointer."""
    with metaspace.ArchiveBuilder(class_alignment_bytes=64) as b:
        prev = None
        for i in range(classes):
            k = b.allocate(128, metaspace.SPACE_CLASS)
            m = b.allocate(32)
            kw = (ctypes.c_size_t * 16).from_address(k)
            mw = (ctypes.c_size_t * 4).from_address(m)
            kw[0], kw[1], kw[2] = m, prev or 0, 1000 + i
            b.mark_pointer(k)
            if prev:
                b.mark_pointer(k + 8)
            mw[0] = k
            b.mark_pointer(m)
            narrow = ctypes.c_uint32.from_address(m + 8)
            narrow.value = b.encode_class(k)
            b.mark_narrow_class(m + 8)
            prev = k
        b.set_root("last", prev)
        b.write(path)


def _walk(ms, classes=3):
    k = ms.archive_root("last")
    for i in reversed(range(classes)):
        assert k and ms.is_archived(k)
        kw = (ctypes.c_size_t * 3).from_address(k)
        assert kw[2] == 1000 + i
        m = kw[0]
        assert ms.is_archived(m)
        assert ctypes.c_size_t.from_address(m).value == k
        assert ms.decode_class(ctypes.c_uint32.from_address(m + 8).value) == k
        assert ms.encode_class(k) == ctypes.c_uint32.from_address(m + 8).value
        k = kw[1]
    assert not k


def test_maps_an_archive_written_through_the_dump_api(tmp_path):
    path = str(tmp_path / "tiny.msa")
    _dump_tiny_archive(path)
    with metaspace.Metaspace(class_alignment_bytes=64, archive_path=path,
                             archive_policy=metaspace.ARCHIVE_REQUIRE) as ms:
        assert ms.archive_status() == ("MS_OK", "")
        st = ms.stats().archive
        assert st.mapped == 1 and st.relocated == 0 and st.relocation_delta == 0
        assert st.roots == 1 and st.narrow_pointers == 3 and st.pointers == 3 * 3 - 1
        assert st.relocation == 0 and st.relocation_reason is None
        _walk(ms)
        ms.verify()
        assert "Archive:" in ms.report()
        assert json.loads(ms.report(json=True))["archive"]["mapped"] is True


@pytest.mark.parametrize("relocation,expected", [
    (metaspace.ARCHIVE_RELOCATE_EAGER, metaspace.ARCHIVE_RELOCATE_EAGER),
    (metaspace.ARCHIVE_RELOCATE_LAZY, None),  # lazy, or eager where userfaultfd is refused
])
def test_relocates_an_archive_whose_base_is_taken(tmp_path, relocation, expected):
    path = str(tmp_path / "tiny.msa")
    _dump_tiny_archive(path)
    with metaspace.Metaspace(class_alignment_bytes=64, archive_path=path) as ms:
        requested = ms.stats().archive.requested_base
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                          ctypes.c_long]
    MAP_PRIVATE, MAP_ANONYMOUS, MAP_FIXED_NOREPLACE = 0x02, 0x20, 0x100000
    squat = libc.mmap(requested, 1 << 20, 0, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0)
    assert squat == requested
    try:
        with metaspace.Metaspace(class_alignment_bytes=64, archive_path=path, archive_verify=0,
                                 archive_relocation=relocation,
                                 archive_policy=metaspace.ARCHIVE_REQUIRE) as ms:
            st = ms.stats().archive
            assert st.relocated == 1 and st.relocation_delta == st.base - requested != 0
            assert st.relocation in (expected,) if expected else st.relocation in (
                metaspace.ARCHIVE_RELOCATE_EAGER, metaspace.ARCHIVE_RELOCATE_LAZY)
            assert st.relocation_reason
            _walk(ms)
            ms.verify()
    finally:
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        libc.munmap(ctypes.c_void_p(squat), 1 << 20)


def test_refused_archive_is_left_out_with_the_reason(tmp_path):
    path = tmp_path / "bad.msa"
    path.write_bytes(b"not an archive" * 400)
    with metaspace.Metaspace(archive_path=str(path)) as ms:
        name, reason = ms.archive_status()
        assert name == "MS_ERR_ARCHIVE_FORMAT" and "magic" in reason
        assert ms.stats().archive.mapped == 0
