"""Whether a code object is really a library file's: code made under a library file's name.

capproof tells its own code, Z3's and the standard library's from a model's by the file a code
object names (``co_filename``): the model's code is audited (``type(a) is int``, an int slot called
directly, a thread it starts), the libraries' is not. A model can make code under any file name:
``compile(source, <stdlib>/bisect.py, "exec")``, ``compile`` of a syntax tree (no audit event),
``code.replace(co_filename=...)``, ``marshal.loads``, a ``.pyc``, a loader whose ``get_data`` returns
its text, ``runpy`` or importlib's own functions called with a namespace naming the file. So a
library-named code object is the library's only when it *is* that file's code: equal (code
equality, nested code included) to the code of the file's installed text (:func:`genuine`; read
once per file per process), or reachable from a module loaded before capproof (:func:`install`
runs at ``import capproof``). Who executed the code, and the namespace it ran in, decide nothing.
In a pytest process, capproof's own files are also compared with pytest's rewriting of their text.

``dataclasses`` writes a class's methods from text built from the field names (``<string>``);
:func:`dataclass_method` trusts one only when its code equals what a private copy of
``dataclasses`` writes for the fields and options of the class it is found on, every field name a
plain identifier.

A library file is the library's only as it was installed (:func:`unchanged`): a file created or
changed after capproof started (its status-change time, which no call sets back) is the run's, not
the library's, whatever directory it is in; under an installed distribution that lists its files
(Z3's ``RECORD``), the file must be listed there with the hash it has; a ``.pyc`` written after
capproof started is not read (the text is compiled instead). So a module a spec writes into Z3's or the standard library's directory and imports is the
model's code.

Not seen: a library's genuine code given a model's globals or closure
(``types.FunctionType(lib.__code__, globals)``), a standard-library or capproof file changed by an earlier run (no list of their
files to compare with): docs/soundness.md.
"""

from __future__ import annotations

import os
import sys
import time
import types

from ._audit import quiet

__all__ = [
    "install",
    "library_named",
    "genuine",
    "trusted_filename",
    "dataclass_method",
    "unchanged",
    "read_loaded_files",
]

# Library directories as named (``abspath``) and as the file system resolves them (``realpath``):
# a file is judged by the path the operating system opens, and a name whose two forms disagree
# (a symbolic link in or out of a library directory) is not the library's (:func:`genuine`)
_STDLIB_DIR = os.path.dirname(os.path.abspath(os.__file__)) + os.sep
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
#: capproof's directory and Z3's (found without importing Z3: ``import capproof`` does not load it)
_OWN_DIRS = (_PACKAGE_DIR, *(os.path.join(p, "z3") + os.sep for p in sys.path if p.endswith("-packages")))
_REAL_STDLIB_DIR = os.path.realpath(_STDLIB_DIR) + os.sep
_REAL_OWN_DIRS = tuple(os.path.realpath(d) + os.sep for d in _OWN_DIRS)

#: ``{id: code}`` of the code reachable from a library module loaded before :func:`install`
_REGISTERED: dict[int, types.CodeType] = {}
#: ``co_filename`` of the library-named modules loaded before :func:`install`
_PRELOADED: set[str] = set()
#: ``{file: its installed code objects}`` (``"pytest:" + file``: as pytest's assertion rewriting makes them)
_OWN: dict[str, frozenset] = {}
#: ``{key of _OWN: pid}``: the process that read the entry, or found the file still unchanged since
_OWN_PID: dict[str, int] = {}
#: the module files :func:`read_loaded_files` has looked at (read, or found not a library's)
_LOOKED_AT: set[str] = set()
#: ``{id: (code, genuine?)}``: :func:`genuine`'s answers (the code kept, so an id is never reused)
_GENUINE: dict[int, tuple[types.CodeType, bool]] = {}
_STATE = [False]  # [installed]
#: taken at :func:`install`, before any model ran: the builtins, the ``typing`` and ``dataclasses``
#: modules, pytest's ``rewrite_asserts`` (in a pytest process)
_BUILTINS: dict = {}
_MODULES: dict = {}
_PYTEST_REWRITE: list = [None]
#: the mutation harness's own directory in the site directories capproof started with (mutmut's
#: trampolines call into it): trusted as a library's only for files its distribution lists
_HARNESS_DIRS = tuple(os.path.join(p, "mutmut") + os.sep for p in sys.path if p.endswith("-packages"))
_REAL_HARNESS_DIRS = tuple(os.path.realpath(d) + os.sep for d in _HARNESS_DIRS)
#: files whose status changed after this are not the library's: capproof's start, less a second
#: (file times come from the kernel's coarse clock, which may lag the process's by a tick)
_START_NS = time.time_ns() - 1_000_000_000
#: ``{site directory: {path relative to it: RECORD's sha256, or None}}`` of its distributions
_RECORDS: dict[str, dict[str, str | None]] = {}
#: ``{(path, ctime, size): listed with its hash}``: :func:`_as_recorded`'s answers
_RECORDED: dict[tuple, bool] = {}


def library_named(filename: str) -> bool:
    """Whether code naming ``filename`` is trusted as not a model's (when :func:`genuine`): the
    standard library's, capproof's, Z3's, or the mutation harness's installed in the site
    directories capproof started with; an installed package's code is audited as the model's."""
    if not isinstance(filename, str) or filename.startswith("<"):
        return False
    return _under_library(os.path.realpath(filename), real=True)


def _under_library(name: str, real: bool) -> bool:
    """Whether the absolute path ``name`` lies in a library directory (``real``: the directories
    resolved, for a resolved ``name``; else as named)."""
    z3 = sys.modules.get("z3")
    z3_file = getattr(z3, "__file__", None)
    if real:
        z3_dir = os.path.dirname(os.path.realpath(z3_file)) + os.sep if z3_file else _REAL_OWN_DIRS[0]
        dirs, stdlib = (*_REAL_OWN_DIRS, z3_dir, *_REAL_HARNESS_DIRS), _REAL_STDLIB_DIR
    else:
        z3_dir = os.path.dirname(os.path.abspath(z3_file)) + os.sep if z3_file else _PACKAGE_DIR
        dirs, stdlib = (*_OWN_DIRS, z3_dir, *_HARNESS_DIRS), _STDLIB_DIR
    return name.startswith(dirs) or (name.startswith(stdlib) and os.sep + "site-packages" + os.sep not in name)


def _named_as_resolved(filename: str) -> bool:
    """Whether ``filename`` names a library directory exactly when the file it resolves to lies in
    one: a symbolic link in a library directory to a model's file (or the other way round) is not."""
    return _under_library(os.path.abspath(filename), real=False) == library_named(filename)


def unchanged(filename: str) -> bool:
    """Whether ``filename`` is as its library installed it: its status (content, name, mode) last
    changed before capproof started, and, under a site directory whose distributions list its
    package's files (``*.dist-info/RECORD``), it is listed there with the sha256 its text has.
    False when it cannot be read. A file a spec writes (or rewrites) during the run is not."""
    try:
        real = os.path.realpath(filename)  # the file the operating system opens, judged as itself
        stat = os.stat(real)
    except (OSError, ValueError, TypeError):
        return False
    if stat.st_ctime_ns >= _START_NS:
        return False
    return _as_recorded(real, stat)


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


def _file_code(filename: str) -> types.CodeType | None:
    """The module code of ``filename`` as its library installed it: read from the ``.pyc`` the
    import system keeps for it when that was written before capproof started and matches the
    file's time and size, else compiled from the file's text; None when the file is not as
    installed (:func:`unchanged`) or cannot be read or compiled."""
    if not unchanged(filename):
        return None
    import importlib.util
    import marshal

    real = os.path.realpath(filename)
    try:
        stat = os.stat(real)
        pyc = importlib.util.cache_from_source(real)
        with open(pyc, "rb") as f:
            header = f.read(16)
            if (
                os.fstat(f.fileno()).st_ctime_ns < _START_NS
                and header[:4] == importlib.util.MAGIC_NUMBER
                and int.from_bytes(header[4:8], "little") == 0
                and int.from_bytes(header[8:12], "little") == int(stat.st_mtime) & 0xFFFFFFFF
                and int.from_bytes(header[12:16], "little") == stat.st_size & 0xFFFFFFFF
            ):
                code = marshal.loads(f.read())
                if isinstance(code, types.CodeType):
                    return code
    except (OSError, ValueError, EOFError, TypeError, NotImplementedError):
        pass
    try:
        with open(real, "rb") as f:
            return compile(f.read(), filename, "exec", dont_inherit=True)
    except (OSError, SyntaxError, ValueError):
        return None


def _own_codes(filename: str) -> frozenset:
    """The code objects compiled from ``filename``'s installed text (none when it is not as its
    library installed it: :func:`unchanged`)."""
    code = _file_code(filename)
    return frozenset(_codes(code)) if code is not None else frozenset()


def _rewritten_codes(filename: str) -> frozenset:
    """In a pytest process, the code pytest's assertion rewriting makes from ``filename``'s
    installed text (pytest rewrites the asserts of its plugins' modules: capproof's own)."""
    rewrite = _PYTEST_REWRITE[0]
    if rewrite is None or not unchanged(filename):
        return frozenset()
    import ast

    try:
        with open(os.path.realpath(filename), "rb") as f:
            text = f.read()
        tree = ast.parse(text, filename)
        rewrite(tree, text, filename, None)
        return frozenset(_codes(compile(tree, filename, "exec", dont_inherit=True)))
    except Exception:  # noqa: BLE001 - not rewritable: the code is not known to be the file's
        return frozenset()


def _register_module(module: types.ModuleType) -> None:
    """Register the code reachable from ``module``'s functions and classes (a module loaded before
    capproof: no model has run yet)."""
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


def install() -> None:
    """Register the library code loaded before capproof (once per process; capproof's package
    import calls it, before any model's module is imported) and keep what later checks must not
    take from a model's reach (pytest's assertion rewriter, the builtins)."""
    if _STATE[0]:
        return
    _STATE[0] = True
    import builtins

    _BUILTINS.update(vars(builtins))
    for name in ("typing", "dataclasses"):
        if name in sys.modules:
            _MODULES[name] = sys.modules[name]
    rewriter = sys.modules.get("_pytest.assertion.rewrite")
    if callable(getattr(rewriter, "rewrite_asserts", None)):
        _PYTEST_REWRITE[0] = rewriter.rewrite_asserts
    modules = [m for m in list(sys.modules.values()) if isinstance(getattr(m, "__file__", None), str)]
    _PRELOADED.update(m.__file__ for m in modules if library_named(m.__file__))
    for module in modules:
        if module.__file__ in _PRELOADED:
            try:
                _register_module(module)
            except Exception:  # noqa: BLE001 - an odd module: its code takes the slow path
                pass


def genuine(code: types.CodeType) -> bool:
    """Whether ``code`` is its file's own code: true when it names no library file
    (:func:`library_named`), or it equals (code equality, nested code included) code compiled
    from that file's installed text (:func:`unchanged`), or it was loaded before capproof; else
    it is a model's code, however it was executed (by an import, a loader, ``runpy``). A name
    whose form as written and resolved disagree on being a library's (a symbolic link) is not."""
    entry = _GENUINE.get(id(code))
    if entry is not None and entry[0] is code:
        return entry[1]
    name = code.co_filename
    if _REGISTERED.get(id(code)) is code:
        known = True
    elif not _named_as_resolved(name):
        known = False  # a library's name for another file, or a model's name for a library's file
    elif not library_named(name):
        known = True
    else:
        known = code in _installed(name, name, _own_codes)
        if not known and os.path.realpath(name).startswith(_REAL_OWN_DIRS[0]) and _PYTEST_REWRITE[0] is not None:
            known = code in _installed("pytest:" + name, name, _rewritten_codes)
    _GENUINE[id(code)] = (code, known)
    return known


def _installed(key: str, filename: str, read) -> frozenset:
    """``_OWN[key]``: ``read(filename)``, once per file per process. An entry this process
    inherited (read before a fork: :func:`read_loaded_files`) holds only while the file is still
    :func:`unchanged`, checked on its first use here: a file changed after capproof started is
    not the library's, whenever that was."""
    own = _OWN.get(key)
    pid = os.getpid()
    if own is None:
        with quiet():
            own = _OWN[key] = read(filename)
        _OWN_PID[key] = pid
    elif _OWN_PID.get(key) != pid:
        with quiet():
            if not unchanged(filename):
                own = _OWN[key] = frozenset()
        _OWN_PID[key] = pid
    return own


def read_loaded_files() -> None:
    """Read now what :func:`genuine` compares with for every library-named ``.py`` file a loaded
    module names (its installed code; in a pytest process, also pytest's rewriting of capproof's
    files that pytest rewrote and that hold an ``assert``), so that processes forked from this one
    start with it rather than each reading the same files again (the runner calls this before it
    forks). Files already read are skipped; the answers are those reading on first use gives, and
    a forked process still checks each inherited file is :func:`unchanged` before using it."""
    rewriter = _PYTEST_REWRITE[0] is not None
    for module in list(sys.modules.values()):
        name = getattr(module, "__file__", None)
        if not isinstance(name, str) or name in _LOOKED_AT or not name.endswith(".py"):
            continue
        _LOOKED_AT.add(name)
        if not library_named(name) or not _named_as_resolved(name):
            continue  # (not the library's: genuine reads nothing for it)
        _installed(name, name, _own_codes)
        loader = getattr(module, "__loader__", None)
        if (
            rewriter
            and os.path.realpath(name).startswith(_REAL_OWN_DIRS[0])
            and type(loader).__name__ == "AssertionRewritingHook"
            and _has_assert(name)
        ):
            _installed("pytest:" + name, name, _rewritten_codes)


def _has_assert(filename: str) -> bool:
    """Whether ``filename``'s text has the word ``assert`` (else pytest's rewriting leaves every
    function's code as compiling the text makes it, and only the module's own code differs)."""
    try:
        with quiet(), open(filename, "rb") as f:
            return b"assert" in f.read()
    except OSError:
        return False


def trusted_filename(code: types.CodeType) -> str:
    """``code.co_filename`` when :func:`genuine`, else a name no check trusts (no directory)."""
    name = code.co_filename
    if genuine(code):
        return name
    return f"<{os.path.basename(name)} as made by a model>"


#: names ``dataclasses`` gives the generated methods' own locals: a field so named would make the
#: text compare the model's values (``x is _HAS_DEFAULT_FACTORY`` against a parameter)
_DATACLASS_LOCALS = frozenset({"MISSING", "_HAS_DEFAULT_FACTORY", "_return_type", "BUILTINS", "__create_fn__"})
#: ``{signature: {method name: code}}``: what :func:`_dataclass_written` generated
_DATACLASS_WRITTEN: dict[tuple, dict] = {}
_DATACLASSES: list = [None]  # the private copy of ``dataclasses`` (its globals out of a model's reach)


def dataclass_method(cls: type, name: str, value: object) -> bool:
    """Whether ``value``, ``cls``'s own attribute ``name``, is a method whose code equals the code
    ``dataclasses`` writes for ``cls``'s fields (``__dataclass_fields__``: names, each an exact
    ``str`` identifier, and flags) and class options (``__dataclass_params__``): regenerated by a
    private copy of ``dataclasses`` compiled from its installed text, so a method written for other
    fields (a name spliced into its text), moved from another class, or kept after the fields
    were re-keyed is not one, whoever executed it."""
    code = getattr(value, "__code__", None)
    if not isinstance(code, types.CodeType) or code.co_filename != "<string>":
        return False
    try:
        signature = _dataclass_signature(cls)
    except Exception:  # noqa: BLE001 - fields or options not as dataclasses writes them
        return False
    if signature is None:
        return False
    written = _DATACLASS_WRITTEN.get(signature)
    if written is None:
        try:
            with quiet():
                written = _dataclass_written(signature)
        except Exception:  # noqa: BLE001 - not regenerated: not known to be dataclasses' method
            written = {}
        _DATACLASS_WRITTEN[signature] = written
    return written.get(name) == code


def _dataclass_signature(cls: type) -> tuple | None:
    """What the code ``dataclasses`` writes for ``cls`` depends on: per field (name, kind, default
    or factory, init, repr, hash, compare, kw_only), the class options, a ``__post_init__``; None
    when a name is not a plain identifier or a flag not a plain bool (or None for hash)."""
    own = vars(cls)
    fields, params = own.get("__dataclass_fields__"), own.get("__dataclass_params__")
    real = _stdlib_module("dataclasses")
    if real is None or type(fields) is not dict or type(params) is not getattr(real, "_DataclassParams", None):
        return None
    import keyword

    rows = []
    for key, f in fields.items():
        if type(f) is not real.Field:
            return None
        name = f.name
        if not (type(key) is str and type(name) is str and key == name):
            return None
        if not name.isidentifier() or keyword.iskeyword(name) or name in _DATACLASS_LOCALS:
            return None
        if name.startswith(("_dflt_", "_type_", "__dataclass_")):
            return None
        kind = getattr(getattr(f, "_field_type", None), "name", None)
        kw_only = None if kind == "_FIELD_CLASSVAR" and f.kw_only is _dataclasses_missing() else f.kw_only
        flags = (f.init, f.repr, f.compare)
        if kind not in ("_FIELD", "_FIELD_CLASSVAR", "_FIELD_INITVAR") or any(type(x) is not bool for x in flags):
            return None
        if kw_only is not None and type(kw_only) is not bool:
            return None
        flags = (*flags, kw_only)
        if f.hash is not None and type(f.hash) is not bool:
            return None
        default = "factory" if f.default_factory is not _dataclasses_missing() else "default"
        if default == "default" and f.default is _dataclasses_missing():
            default = None
        rows.append((name, kind, default, f.hash, *flags))
    options = tuple(getattr(params, k) for k in ("init", "repr", "eq", "order", "unsafe_hash", "frozen"))
    if any(type(x) is not bool for x in options):
        return None
    return (tuple(rows), options, hasattr(cls, "__post_init__"))


def _stdlib_module(name: str) -> types.ModuleType | None:
    """The standard library's module ``name`` as loaded (the one :func:`install` saw, if it was
    loaded then), or None when ``sys.modules`` holds something else under its name."""
    module = sys.modules.get(name)
    if type(module) is not types.ModuleType or _MODULES.get(name, module) is not module:
        return None
    if getattr(module, "__file__", None) != os.path.join(_STDLIB_DIR, name + ".py"):
        return None
    return module


def _dataclasses_missing() -> object:
    module = sys.modules.get("dataclasses")
    return getattr(module, "MISSING", None)


def _dataclass_written(signature: tuple) -> dict:
    """``{method name: code}`` the private copy of ``dataclasses`` writes for ``signature``'s fields
    and options (the code objects taken as ``_create_fn`` makes them)."""
    rows, options, post_init = signature
    typing, real = _stdlib_module("typing"), _stdlib_module("dataclasses")
    if typing is None or real is None or not (type(real.InitVar) is type and genuine(real.InitVar.__init__.__code__)):
        return {}
    copy = _DATACLASSES[0]
    if copy is None:
        module_code = _file_code(real.__file__)
        if module_code is None:
            return {}
        copy = {"__name__": "dataclasses", "__builtins__": dict(_BUILTINS)}
        exec(module_code, copy)
        _DATACLASSES[0] = copy
    made: dict = {}
    create = copy["_create_fn"]

    def record(name, args, body, **kwargs):
        fn = create(name, args, body, **kwargs)
        made.setdefault(name, fn.__code__)
        return fn

    kinds = {"_FIELD": int, "_FIELD_CLASSVAR": typing.ClassVar[int], "_FIELD_INITVAR": real.InitVar(int)}
    namespace: dict = {"__annotations__": {}, "__doc__": "regenerated", "__module__": __name__}
    for name, kind, default, hash_, init, repr_, compare, kw_only in rows:
        namespace["__annotations__"][name] = kinds[kind]
        given = {"default": 0} if default == "default" else {"default_factory": int} if default else {}
        if kw_only is not None:
            given["kw_only"] = kw_only
        namespace[name] = copy["field"](**given, init=init, repr=repr_, hash=hash_, compare=compare)
    if post_init:
        namespace["__post_init__"] = lambda self, *args: None
    init, repr_, eq, order, unsafe_hash, frozen = options
    copy["_create_fn"] = record
    try:
        copy["dataclass"](init=init, repr=repr_, eq=eq, order=order, unsafe_hash=unsafe_hash, frozen=frozen)(
            type("Regenerated", (), namespace)
        )
    finally:
        copy["_create_fn"] = create
    return made
