"""A library file is the library's only as installed: capproof/provenance.py's ``unchanged``.

A file created or changed after capproof started is not (whatever directory it is in), and a file
under a site directory whose package a distribution's ``RECORD`` lists must be listed there with
the hash its text has. The site directory below is a temporary copy laid out as pip lays one out;
nothing is written into an installed directory.
"""

from __future__ import annotations

import base64
import hashlib
import os
import time

import z3

from capproof import provenance


def _sha(text: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(text).digest()).rstrip(b"=").decode()


def _site(tmp_path):
    """A site directory holding ``pkg`` (its ``__init__.py`` and ``core.py`` listed with their
    hashes by ``pkg-1.0.dist-info/RECORD``) and ``loose`` (no distribution lists it)."""
    site = tmp_path / "lib" / "python3.11" / "site-packages"
    (site / "pkg").mkdir(parents=True)
    (site / "loose").mkdir()
    (site / "pkg-1.0.dist-info").mkdir()
    files = {"pkg/__init__.py": b"", "pkg/core.py": b"def f(a):\n    return a\n"}
    for name, text in files.items():
        (site / name).write_bytes(text)
    (site / "loose" / "__init__.py").write_bytes(b"")
    record = "".join(f"{n},sha256={_sha(t)},{len(t)}\n" for n, t in files.items())
    (site / "pkg-1.0.dist-info" / "RECORD").write_text(record + "pkg-1.0.dist-info/RECORD,,\n")
    return site


def _recorded(path) -> bool:
    return provenance._as_recorded(os.path.abspath(path), os.stat(path))


def test_installed_library_files_are_unchanged():
    assert provenance.unchanged(os.__file__)
    assert provenance.unchanged(z3.__file__)
    assert provenance.unchanged(os.path.join(os.path.dirname(z3.__file__), "z3.py"))


def test_a_file_written_after_capproof_started_is_not_the_librarys(tmp_path):
    path = tmp_path / "lib" / "python3.11" / "site-packages" / "z3" / "helper.py"
    path.parent.mkdir(parents=True)
    path.write_text("def probe(a):\n    return a\n")
    assert not provenance.unchanged(str(path))
    assert not provenance.unchanged(str(tmp_path / "missing.py"))


def test_a_file_its_distribution_does_not_list_with_that_hash_is_not_the_librarys(tmp_path):
    site = _site(tmp_path)
    assert _recorded(site / "pkg" / "core.py")
    assert _recorded(site / "loose" / "__init__.py")  # no RECORD lists the package: the time decides
    (site / "pkg" / "probe.py").write_text("def probe(a):\n    return type(a) is not int\n")
    assert not _recorded(site / "pkg" / "probe.py")  # not listed
    (site / "pkg" / "core.py").write_text("def f(a):\n    return type(a) is not int\n")
    assert not _recorded(site / "pkg" / "core.py")  # listed, with another hash


def test_library_named_code_is_the_librarys_only_when_it_is_the_files_own_code():
    """Code naming a library file is the library's when it equals the code compiled from the
    file's installed text (nested code included), however it was executed: the import system's
    frames, a loader or a ``.pyc`` decide nothing."""
    name = os.path.join(os.path.dirname(os.__file__), "colorsys.py")
    with open(name, "rb") as f:
        own = compile(f.read(), name, "exec", dont_inherit=True)
    other = compile("def probe(a):\n    return type(a) is not int\n", name, "exec", dont_inherit=True)
    namespace = {"__file__": name}
    exec(other, namespace)
    exec(own, namespace)
    assert not provenance.genuine(other) and not provenance.genuine(other.co_consts[0])
    assert provenance.genuine(own)
    assert all(provenance.genuine(c) for c in own.co_consts if isinstance(c, type(own)))


def test_a_file_name_under_a_harness_directory_elsewhere_is_not_a_librarys():
    """The mutation harness's directory is trusted only in the site directories capproof started
    with; the same name anywhere else is a model's file."""
    assert not provenance.library_named("/tmp/adv/site-packages/mutmut/probe.py")


def _in_a_fork(check) -> bool:
    """``check()`` in a forked process (as the runner's item processes are): its answer."""
    pid = os.fork()
    if pid == 0:
        ok = False
        try:
            ok = check()
        finally:
            os._exit(0 if ok else 1)
    return os.waitpid(pid, 0)[1] == 0


def test_code_read_before_a_fork_is_trusted_there_only_while_its_file_is_unchanged(tmp_path, monkeypatch):
    """The runner reads the library files' code before it forks (``read_loaded_files``); a forked
    process checks on first use that each file it inherited is still as installed, so a file
    changed after the fork (by a model, say) is not the library's there."""
    path = tmp_path / "helper.py"
    path.write_text("def probe(a):\n    return a\n")
    time.sleep(0.05)  # (file times come from a coarse clock)
    monkeypatch.setattr(provenance, "_START_NS", time.time_ns())
    time.sleep(0.05)
    name = str(path)
    try:
        read = provenance._installed(name, name, provenance._own_codes)
        assert read and read == provenance._own_codes(name)

        def changed() -> bool:
            path.write_text("def probe(a):\n    return type(a) is not int\n")
            return provenance._installed(name, name, provenance._own_codes) == frozenset()

        assert _in_a_fork(lambda: provenance._installed(name, name, provenance._own_codes) == read)
        assert _in_a_fork(changed)
    finally:
        provenance._OWN.pop(name, None)
        provenance._OWN_PID.pop(name, None)


def test_the_loaded_library_files_are_read_before_a_fork_as_on_first_use():
    provenance.read_loaded_files()
    some = [m.__file__ for m in (os, z3, provenance) if m.__file__ in provenance._OWN]
    assert len(some) == 3
    for name in some:
        assert provenance._OWN[name] == provenance._own_codes(name)
    assert provenance._OWN[provenance.__file__]  # capproof's own file, as installed
