"""Whether a code object is really a library file's: code made under a library file's name.

capproof tells its own code, Z3's and the standard library's from a model's by the file a code
object names (``co_filename``): the model's code is audited (``type(a) is int``, an int slot called
directly, a thread it starts), the libraries' is not. A model can make code under any file name:
``compile(source, <stdlib>/bisect.py, "exec")``, ``compile`` of a syntax tree (no audit event),
``code.replace(co_filename=...)``, ``marshal.loads``, a ``.pyc`` imported from elsewhere. So a
library-named code object is the library's only when it is known to be: its module was executed
by the import system from that very file (the ``exec`` audit event seen from importlib's or
runpy's frame, the module's ``__file__`` equal to the code's file), or, for the modules loaded
before capproof (:func:`install` runs at ``import capproof``), it equals code compiled from the
file's own text. Any other code naming a library file is a model's.

Likewise ``dataclasses`` writes a class's methods from its own text under the name ``<string>``;
:func:`dataclass_code` is true only of code ``dataclasses._create_fn`` executed when called by
``dataclasses``' own code, not of any code that names ``<string>``.

A library file is the library's only as it was installed (:func:`unchanged`): a file created or
changed after capproof started (its status-change time, which no call sets back) is the run's, not
the library's, whatever directory it is in; under an installed distribution that lists its files
(Z3's ``RECORD``), the file must be listed there with the hash it has; a ``.pyc`` the import
system read that was written after capproof started must hold the code compiled from the file's
text. So a module a spec writes into Z3's or the standard library's directory and imports is the
model's code.

Not seen: a library's genuine code given a model's globals (``types.FunctionType(lib.__code__,
globals)``), a standard-library or capproof file changed by an earlier run (no list of their
files to compare with): docs/soundness.md.
"""

from __future__ import annotations

import os
import sys
import time
import types

__all__ = ["install", "library_named", "genuine", "trusted_filename", "dataclass_code", "unchanged"]

_STDLIB_DIR = os.path.dirname(os.path.abspath(os.__file__)) + os.sep
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
#: capproof's directory and Z3's (found without importing Z3: ``import capproof`` does not load it)
_OWN_DIRS = (_PACKAGE_DIR, *(os.path.join(p, "z3") + os.sep for p in sys.path if p.endswith("-packages")))

#: ``{id: code}`` of the library-named code objects the import system executed from their own file
#: (and the code nested in them), or reachable from a module loaded before :func:`install`
_REGISTERED: dict[int, types.CodeType] = {}
#: ``co_filename`` of the library-named modules loaded before :func:`install`: code naming them that
#: is not registered is compared with the file's own compiled code (``_OWN``, on first need)
_PRELOADED: set[str] = set()
_OWN: dict[str, frozenset] = {}
#: ``{id: (code, genuine?)}``: :func:`genuine`'s answers (the code kept, so an id is never reused)
_GENUINE: dict[int, tuple[types.CodeType, bool]] = {}
#: ``{id: code}`` of the code ``dataclasses._create_fn`` executed for ``dataclasses`` itself
_DATACLASS_CODE: dict[int, types.CodeType] = {}
_STATE = [False, False]  # [installed, inside the handler]
#: files whose status changed after this are not the library's: capproof's start, less a second
#: (file times come from the kernel's coarse clock, which may lag the process's by a tick)
_START_NS = time.time_ns() - 1_000_000_000
#: ``{site directory: {path relative to it: RECORD's sha256, or None}}`` of its distributions
_RECORDS: dict[str, dict[str, str | None]] = {}
#: ``{(path, ctime, size): listed with its hash}``: :func:`_as_recorded`'s answers
_RECORDED: dict[tuple, bool] = {}


def library_named(filename: str) -> bool:
    """Whether code naming ``filename`` is trusted as not a model's (when :func:`genuine`): the
    standard library's, capproof's or Z3's; an installed package's code is audited as the model's."""
    if not isinstance(filename, str) or filename.startswith("<"):
        return False
    name = os.path.abspath(filename)
    z3 = sys.modules.get("z3")
    z3_dir = os.path.dirname(os.path.abspath(z3.__file__)) + os.sep if getattr(z3, "__file__", None) else _PACKAGE_DIR
    return name.startswith((*_OWN_DIRS, z3_dir)) or (
        name.startswith(_STDLIB_DIR) and os.sep + "site-packages" + os.sep not in name
    )


def unchanged(filename: str) -> bool:
    """Whether ``filename`` is as its library installed it: its status (content, name, mode) last
    changed before capproof started, and, under a site directory whose distributions list its
    package's files (``*.dist-info/RECORD``), it is listed there with the sha256 its text has.
    False when it cannot be read. A file a spec writes (or rewrites) during the run is not."""
    try:
        stat = os.stat(filename)
    except (OSError, ValueError, TypeError):
        return False
    if stat.st_ctime_ns >= _START_NS:
        return False
    return _as_recorded(os.path.abspath(filename), stat)


def _written_since_start(filename: str) -> bool:
    """Whether ``filename`` exists and was created or changed after capproof started (a ``.pyc``:
    RECORD lists no hash for one)."""
    try:
        return os.stat(filename).st_ctime_ns >= _START_NS
    except (OSError, ValueError, TypeError):
        return False


def _as_recorded(path: str, stat: os.stat_result) -> bool:
    """Whether ``path`` (under a site directory) is listed with its hash by the distribution that
    installed its package; True outside site directories and for a package no ``RECORD`` lists."""
    marker = os.sep + "site-packages" + os.sep
    if marker not in path:
        return True
    site = path[: path.rindex(marker) + len(marker)]
    relative = path[len(site) :].replace(os.sep, "/")
    key = (path, stat.st_ctime_ns, stat.st_size)
    known = _RECORDED.get(key)
    if known is None:
        top = relative.split("/", 1)[0]
        records = _RECORDS.get(site + top)
        if records is None:
            records = _RECORDS[site + top] = _records_of(site, top)
        if relative in records:
            expected = records[relative]
            known = expected is not None and _sha256(path) == expected
        else:
            # a package a distribution lists files of: a file it does not list is not the package's
            known = not records
        _RECORDED[key] = known
    return known


def _records_of(site: str, top: str) -> dict[str, str | None]:
    """The ``RECORD`` entries under ``top`` (a top-level package or module) of the distributions
    installed in ``site``: path -> sha256 (urlsafe base64, unpadded, as RECORD writes it) or None.
    The distributions named like ``top`` or listing it in ``top_level.txt`` are read first; the
    others only when none of those lists it."""
    try:
        names = sorted(n for n in os.listdir(site) if n.endswith(".dist-info"))
    except OSError:
        return {}
    key = top.lower().replace("-", "_").split(".", 1)[0]

    def likely(name: str) -> bool:
        if name.lower().replace("-", "_").startswith(key):
            return True
        try:
            with open(os.path.join(site, name, "top_level.txt")) as f:
                return key in f.read().split()
        except OSError:
            return False

    first = [n for n in names if likely(n)]
    out = _read_records(site, first, top)
    return out or _read_records(site, [n for n in names if n not in first], top)


def _read_records(site: str, names: list[str], top: str) -> dict[str, str | None]:
    import csv

    out: dict[str, str | None] = {}
    for name in names:
        try:
            with open(os.path.join(site, name, "RECORD"), newline="") as f:
                rows = list(csv.reader(f))
        except OSError:
            continue
        for row in rows:
            if not row or not row[0]:
                continue
            entry = os.path.normpath(row[0]).replace(os.sep, "/")
            if entry == top or entry.startswith(top + "/") or entry.startswith(top + "."):
                digest = row[1] if len(row) > 1 else ""
                out[entry] = digest.split("=", 1)[1] if digest.startswith("sha256=") else None
    return out


def _sha256(path: str) -> str | None:
    import base64
    import hashlib

    try:
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).digest()
    except OSError:
        return None
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _codes(code: types.CodeType) -> list:
    out, stack = [], [code]
    while stack:
        c = stack.pop()
        out.append(c)
        stack += [k for k in c.co_consts if isinstance(k, types.CodeType)]
    return out


def _own_codes(filename: str) -> frozenset:
    """The code objects compiled from ``filename``'s text (none when it cannot be read or compiled,
    or is not as its library installed it: :func:`unchanged`)."""
    if not unchanged(filename):
        return frozenset()
    try:
        with open(filename, "rb") as f:
            text = f.read()
        return frozenset(_codes(compile(text, filename, "exec", dont_inherit=True)))
    except (OSError, SyntaxError, ValueError):
        return frozenset()


def _register_module(module: types.ModuleType) -> None:
    """Register the code reachable from ``module``'s functions and classes (a module loaded before
    the audit hook: its module code ran unseen)."""
    for value in list(vars(module).values()):
        for item in [value, *(vars(value).values() if isinstance(value, type) else ())]:
            if isinstance(item, (staticmethod, classmethod)):
                item = item.__func__
            if isinstance(item, property):
                item = item.fget
            code = getattr(item, "__code__", None)
            if isinstance(code, types.CodeType) and code.co_filename in _PRELOADED:
                for c in _codes(code):
                    _REGISTERED[id(c)] = c


def _runs(frame, module: str, name: str) -> bool:
    """Whether ``frame`` runs the function ``module.name`` (``Class.method`` for a method; its own
    code object, by identity)."""
    func = sys.modules.get(module)
    for part in name.split("."):
        func = getattr(func, part, None)
    return frame is not None and getattr(func, "__code__", None) is frame.f_code


def _audit(event: str, args: tuple) -> None:
    if _STATE[1] or not args or not isinstance(args[0], types.CodeType):
        return
    _STATE[1] = True
    try:
        code = args[0]
        frame = sys._getframe(2)  # (1: the dispatching hook) the frame that called exec
        if _runs(frame, "_frozen_importlib", "_call_with_frames_removed"):
            # an import executing a module's code: ``_call_with_frames_removed(exec, code, module.__dict__)``
            held = frame.f_locals.get("args", ())
            namespace = held[1] if len(held) > 1 and isinstance(held[1], dict) else {}
            _register(code, namespace)
        elif _runs(frame, "runpy", "_run_code"):
            _register(code, frame.f_locals.get("run_globals") or {})
        elif _runs(frame, "_pytest.assertion.rewrite", "AssertionRewritingHook.exec_module"):
            # pytest rewrites the asserts of the packages registered as its plugins (capproof's own
            # modules in a test process): the file's code as pytest compiled it (from the file's
            # text; its cache is pytest's, not the import system's)
            module = frame.f_locals.get("module")
            _register(code, getattr(module, "__dict__", {}), cached=False)
        elif _runs(frame, "dataclasses", "_create_fn"):
            caller = sys._getframe(3).f_code
            dataclasses = sys.modules.get("dataclasses")
            if caller.co_filename == getattr(dataclasses, "__file__", None) and genuine(caller):
                for c in _codes(code):
                    _DATACLASS_CODE[id(c)] = c
    finally:
        _STATE[1] = False


def _register(code: types.CodeType, namespace: dict, cached: bool = True) -> None:
    """Register ``code`` (a module's, executed by the import system) when it names the file its
    module was loaded from, that file is as its library installed it (:func:`unchanged`), and
    the ``.pyc`` the import system may have read it from was written before capproof started or
    holds the code compiled from the file's text."""
    name = code.co_filename
    if namespace.get("__file__") != name or not library_named(name) or not unchanged(name):
        return
    pyc = namespace.get("__cached__") if cached else None
    if isinstance(pyc, str) and _written_since_start(pyc) and code not in _own_codes(name):
        return
    for c in _codes(code):
        _REGISTERED[id(c)] = c


def install() -> None:
    """Watch modules being executed (once per process; capproof's package import calls it, before
    any model's module is imported)."""
    if _STATE[0]:
        return
    _STATE[0] = True
    from ._audit import on

    on(_audit, frozenset({"exec"}))
    modules = [m for m in list(sys.modules.values()) if isinstance(getattr(m, "__file__", None), str)]
    _PRELOADED.update(m.__file__ for m in modules if library_named(m.__file__))
    for module in modules:
        if module.__file__ in _PRELOADED:
            try:
                _register_module(module)
            except Exception:  # noqa: BLE001 - an odd module: its code takes the slow path
                pass


def genuine(code: types.CodeType) -> bool:
    """Whether ``code`` is its file's own code: true when it names no standard-library, capproof
    or Z3 file, or the import system executed it from that file (or, for a module loaded before
    capproof, it equals code compiled from the file's text); else it is a model's code."""
    entry = _GENUINE.get(id(code))
    if entry is not None and entry[0] is code:
        return entry[1]
    name = code.co_filename
    if _REGISTERED.get(id(code)) is code or not library_named(name):
        known = True
    elif name in _PRELOADED:
        own = _OWN.get(name)
        if own is None:
            own = _OWN[name] = _own_codes(name)
        known = code in own
    else:
        known = False
    _GENUINE[id(code)] = (code, known)
    return known


def trusted_filename(code: types.CodeType) -> str:
    """``code.co_filename`` when :func:`genuine`, else a name no check trusts (no directory)."""
    name = code.co_filename
    if genuine(code):
        return name
    return f"<{os.path.basename(name)} as made by a model>"


def dataclass_code(code: object) -> bool:
    """Whether ``code`` is a method ``dataclasses`` wrote for a class (executed by
    ``dataclasses._create_fn`` when ``dataclasses``' own code called it), not code that merely
    names ``<string>``."""
    return isinstance(code, types.CodeType) and _DATACLASS_CODE.get(id(code)) is code
