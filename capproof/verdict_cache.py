"""Verdict cache of obligations: ``capproof prove`` re-decides only what an edit can change.

A ``proved``, ``counterexample`` or ``vacuous`` result is stored in
``.capproof/verdicts/<key>.json`` under the working directory (the whole result as ``prove --json``
writes it: unsat core, counterexample, witnesses, density, so ``report`` renders proofs/ from it
without solving). The key is the SHA-256 of everything the verdict depends on:

- the obligation: its id, expectation, case, rlimit, fork budget, domain, assumption names;
- the run's options that can change a result (pins, rlimit, minimisation, density, cross-check,
  fork budget, aggregate/induction/probe, verdict-only, the largest bounded vector);
- the data its claim, assumptions and witnesses hold (closures, defaults) and the data of those
  modules, pickled (a table a spec read from a file at import); not picklable: not cached;
- the bytes of the source file of every project module the obligation can reach
  (:func:`capproof.runner.reaches`: its spec file, the models and helpers its claim, assumptions
  and witnesses call or read, transitively; every project module's when that cannot be bounded);
- capproof's own sources that can decide it (:mod:`capproof.own_sources`: the runner's and the
  prover's import closure and the capproof modules the reached project files import; not the
  command line, the renderers, the engine adapters), and the Python, Z3 and cvc5 versions;
- the environment variables a spec or model may read while deciding: all of them but the few a
  shell, make or pytest sets per session (``PWD``, ``SHLVL``, ``MAKEFLAGS``, ``PYTEST_CURRENT_TEST``,
  ...), so ``make verify`` and ``capproof prove`` share their verdicts.

So an edit to one model re-decides exactly the obligations that can reach it. Unknown and error
verdicts (time limits, load) are never stored; ``prove --no-cache`` re-decides everything (and
neither reads nor writes the cache). A key covers the code on disk: a model patched in memory (a test's
monkeypatch) is not seen, which is why the cache is on for ``capproof prove`` and off by default
for :func:`capproof.runner.run` (``Options.verdict_cache``).
"""

from __future__ import annotations

import collections
import gc
import hashlib
import io
import json
import os
import pickle
import sys
import types
from dataclasses import fields
from typing import Any, Iterable

from .own_sources import BOUNDING, DECIDING, capproof_sources
from .verdict import Counterexample, FirstCounterexample, ObligationResult, Options, Verdict, Witness

__all__ = [
    "obligation_key",
    "obligation_keys",
    "item_key",
    "portable_key",
    "load",
    "store",
    "load_entry",
    "store_entry",
    "result_from_json",
    "CACHEABLE",
]

#: Verdicts safe to reuse: they do not depend on how fast the machine was.
CACHEABLE = ("proved", "counterexample", "vacuous")

#: Options that do not change a result (how the run is scheduled and where it writes).
_SCHEDULING = {"jobs", "contracts", "crosshair_timeout", "crosshair_cache", "verdict_cache", "isolate", "timeout"}

_FILE_HASHES: dict[tuple[str, float, int], str] = {}


def _file_hash(path: str) -> str:
    """SHA-256 of a file's bytes (memoised on path, mtime and size)."""
    try:
        st = os.stat(path)
    except OSError:
        return "missing"
    memo = (path, st.st_mtime, st.st_size)
    if memo not in _FILE_HASHES:
        with open(path, "rb") as fh:
            _FILE_HASHES[memo] = hashlib.sha256(fh.read()).hexdigest()
    return _FILE_HASHES[memo]


#: environment variables a shell or pytest sets per session or per test, left out of the key (a
#: model that reads one of these is re-used across sessions; every other variable is in the key)
_SESSION_VARIABLES = frozenset(
    {
        "PWD",
        "OLDPWD",
        "SHLVL",
        "_",
        "COLUMNS",
        "LINES",
        "PYTEST_CURRENT_TEST",
        "PYTEST_XDIST_WORKER",
        "PYTEST_XDIST_TESTRUNUID",
        # what make passes to the commands of a recipe: its flags (the jobserver's file descriptors,
        # which change with the descriptors its caller had open, and any VAR=value given on make's
        # command line, e.g. BIN=) and its nesting level; a spec reads none of these
        "MAKEFLAGS",
        "MFLAGS",
        "GNUMAKEFLAGS",
        "MAKELEVEL",
        "MAKEOVERRIDES",
        "MAKE_TERMOUT",
        "MAKE_TERMERR",
        "MAKE_RESTARTS",
        # malloc tuning the Makefile exports (transparent huge pages): how fast, never what a value is
        "GLIBC_TUNABLES",
    }
)


def _environment() -> str:
    """The Python, Z3 and cvc5 versions (once per process)."""
    global _ENV
    if _ENV is None:
        import z3

        try:
            import cvc5  # noqa: F401

            cvc = getattr(sys.modules["cvc5"], "__version__", "?")
        except ImportError:
            cvc = "-"
        _ENV = "\n".join([sys.version, z3.get_version_string(), cvc])
    return _ENV


_ENV: str | None = None


def _reduction_of(*_args):  # noqa: D401 - the callable a key's reductions name; keys are never unpickled
    """Never called: the function a key's pickle names for a value it takes apart itself."""
    raise TypeError("a cache key is not unpickled")


#: built-in value types (exactly these): pickled as they are, never taken apart
_VALUES = frozenset({int, float, complex, bool, str, bytes, type(None)})

#: ``Py_TPFLAGS_HEAPTYPE`` without ``Py_TPFLAGS_IMMUTABLETYPE``: a class whose instances Python code defines
_MUTABLE_CLASS, _IMMUTABLE = 1 << 9, 1 << 8

#: class attributes not keyed: what Python makes for every class, and ``abc``'s C registry
_CLASS_SKIPPED = frozenset({"__dict__", "__weakref__", "__doc__", "__module__", "__qualname__", "_abc_impl"})

#: a container with more items than this is digested once per run and named by its digest
_SHARED_SIZE = 32


class _Walk:
    """What the pickles of one run share: the project's modules (``project``, by name), the digest
    of each project function, class and object and of each larger container (``done``: id ->
    (object, digest); the objects are held, so no id is reused), the objects being digested
    (``busy``) and, per digest under way, the busy objects it met again (``hits``: a digest that
    met a cycle through an object outside it is not complete on its own and is not kept)."""

    def __init__(self, project: dict[str, types.ModuleType] | None, portable: bool):
        self.project = project or {}
        self.dicts = {id(vars(m)) for m in self.project.values()}
        self.portable = portable
        self.done: dict[int, tuple[object, str]] = {}
        self.busy: set[int] = set()
        self.hits: list[set[int]] = [set()]

    def digest(self, value: object, top: object = None) -> str:
        """SHA-256 of ``value`` pickled by :class:`_Stable` (raises what pickle raises)."""
        buf = io.BytesIO()
        pickler = (_Portable if self.portable else _Stable)(buf, protocol=pickle.HIGHEST_PROTOCOL)
        pickler.walk, pickler.top = self, top
        if self.portable:
            pickler.root = os.path.abspath(os.getcwd()) + os.sep  # type: ignore[attr-defined]
        pickler.dump(value)
        return hashlib.sha256(buf.getvalue()).hexdigest()

    def shared(self, obj: object, held) -> str:
        """The digest of ``obj`` by what ``held()`` returns, once per run."""
        key = id(obj)
        if key in self.done:
            return self.done[key][1]
        if key in self.busy:  # a cycle: what it holds is in the digest under way
            self.hits[-1].add(key)
            return "cycle"
        self.busy.add(key)
        self.hits.append(set())
        try:
            made = self.digest(held(), top=obj)
        finally:
            self.busy.discard(key)
            hits = self.hits.pop()
        hits.discard(key)
        if hits:
            self.hits[-1] |= hits
        else:
            self.done[key] = (obj, made)
        return made


def _keyed_by_module(obj: object) -> bool:
    """Whether a function or class outside the project is its loaded module's, whose file
    :func:`library_inputs` keys: the module named by ``__module__`` is in ``sys.modules`` and holds
    the function's globals (a class: the module is loaded; builtins and C types included)."""
    module = sys.modules.get(getattr(obj, "__module__", None) or "")
    if module is None:
        return False
    if isinstance(obj, types.FunctionType):
        return obj.__globals__ is getattr(module, "__dict__", None)
    return True


class _Stable(pickle.Pickler):
    """Pickles data by value, and what the project's own code holds (its functions' closures,
    defaults, attributes and code; its classes' attributes, nested classes and methods; its objects'
    attributes as the garbage collector sees them, never their own ``__reduce__``; a ``partial``'s
    arguments; a bound method's object) by value too: a table read from a file at import may be held
    in any of them. A function, class or module outside the project is named (the same in every
    process; its code is keyed by its file, :func:`library_inputs`), a lock as "a lock". Refuses
    (not cacheable) a filled ``lru_cache`` of a project function: what it holds cannot be read.
    Project code and larger containers are digested once per run (:class:`_Walk`)."""

    walk: _Walk
    top: object = None

    def _own(self, obj: object) -> bool:
        """Whether ``obj`` (a function or class) is the project's own code."""
        if isinstance(obj, types.FunctionType):
            return id(obj.__globals__) in self.walk.dicts or obj.__module__ in self.walk.project
        return getattr(obj, "__module__", None) in self.walk.project

    def persistent_id(self, obj):  # noqa: D102 - pickle's hook
        kind = type(obj)
        if kind in _VALUES:  # (called for every object pickled: the common case first)
            return None
        if kind in (list, dict, tuple):
            if len(obj) > _SHARED_SIZE and obj is not self.top:
                return ("shared", self.walk.shared(obj, lambda: obj))
            return None
        if kind is types.FunctionType or isinstance(obj, type):
            if not self._own(obj):
                if not _keyed_by_module(obj):
                    # code run from a file without a module left in sys.modules (runpy.run_path,
                    # exec in a fresh namespace): neither its name nor a module's file keys it
                    raise pickle.PicklingError(f"{obj.__qualname__} belongs to no loaded module: its code is not keyed")
                return ("named", getattr(obj, "__module__", None), obj.__qualname__)
            if obj is not self.top:
                return ("shared", self.walk.shared(obj, lambda: obj))
            return None
        if kind is types.BuiltinFunctionType and (obj.__self__ is None or isinstance(obj.__self__, types.ModuleType)):
            return ("named", getattr(obj, "__module__", None), obj.__qualname__)
        if isinstance(obj, types.ModuleType):
            return ("module", obj.__name__)
        if kind.__name__ in ("lock", "RLock"):
            return ("lock",)
        if isinstance(obj, (set, frozenset)) and obj:
            # in a canonical order: a set of strings iterates in an order that changes with the
            # process's hash seed (elements by their own digest: a repr may hold an address)
            return ("set", kind.__name__, sorted(self.walk.digest(v) for v in obj))
        if obj is not self.top and kind.__flags__ & (_MUTABLE_CLASS | _IMMUTABLE) == _MUTABLE_CLASS and self._own(kind):
            return ("shared", self.walk.shared(obj, lambda: obj))
        return None

    def reducer_override(self, obj):  # noqa: D102 - pickle's hook
        kind = type(obj)
        if kind is types.FunctionType:  # a project function (others are named): what it holds
            cells = []
            for cell in obj.__closure__ or ():
                try:
                    cells.append(cell.cell_contents)
                except ValueError:  # an empty cell
                    cells.append(_reduction_of)
            held = (obj.__code__, obj.__defaults__, obj.__kwdefaults__, tuple(cells), obj.__dict__)
            return (_reduction_of, ("function", obj.__module__, obj.__qualname__), held)
        if isinstance(obj, type):  # a project class: its bases and attributes, nested classes included
            attrs = sorted(
                (k, v)
                for k, v in vars(obj).items()
                if k not in _CLASS_SKIPPED
                and (
                    not k.startswith("__")
                    or isinstance(v, (types.FunctionType, staticmethod, classmethod, property, type))
                )
            )
            return (_reduction_of, ("class", obj.__module__, obj.__qualname__), (obj.__bases__, attrs))
        if kind is types.CodeType:  # its constants too (code made by ``exec`` of a string read at import)
            name = self._path(obj.co_filename)
            return (_reduction_of, ("code", name, obj.co_firstlineno, obj.co_code, obj.co_names), obj.co_consts)
        if kind is types.MethodType:
            return (_reduction_of, ("method",), (obj.__func__, obj.__self__))
        if kind is types.BuiltinMethodType:  # bound to data (``TABLE.get``): its object
            return (_reduction_of, ("method", obj.__name__), obj.__self__)
        if kind in (staticmethod, classmethod):
            return (_reduction_of, (kind.__name__,), obj.__func__)
        if kind is property:
            return (_reduction_of, ("property",), (obj.fget, obj.fset, obj.fdel))
        wrapped = getattr(obj, "__wrapped__", None) if callable(getattr(obj, "cache_info", None)) else None
        if wrapped is not None:  # an lru_cache wrapper
            if obj.cache_info().currsize and self._own(wrapped):
                raise pickle.PicklingError("an lru_cache filled at import: what it holds cannot be read")
            return (_reduction_of, ("lru_cache",), vars(obj))
        if kind.__flags__ & (_MUTABLE_CLASS | _IMMUTABLE) == _MUTABLE_CLASS and self._own(kind):
            # an object of a project class: what it holds as the garbage collector sees it (its
            # attributes' values, slots), never its own ``__reduce__``/``__getstate__`` (which may
            # name a path to load again rather than what was loaded), with its items if a container
            items: object = ()
            if isinstance(obj, dict):
                items = dict(obj)
            elif isinstance(obj, (set, frozenset)):
                items = set(obj)
            elif isinstance(obj, (list, tuple, collections.deque)):
                items = list(obj)
            try:  # (its attributes as a dict: the same referents whether or not they were read as one)
                object.__getattribute__(obj, "__dict__")
            except AttributeError:
                pass
            return (_reduction_of, ("instance",), (kind, tuple(gc.get_referents(obj)), items))
        return NotImplemented

    def _path(self, path: str) -> str:
        return path


class _Portable(_Stable):
    """:class:`_Stable` with every path under the working directory made relative to it (a table
    a spec memoises under its file's absolute path): the same digest in every checkout."""

    root = ""

    def persistent_id(self, obj):  # noqa: D102 - pickle's hook
        if isinstance(obj, str) and self.root and obj.startswith(self.root):
            return ("path", os.path.relpath(obj, self.root))
        return super().persistent_id(obj)

    def _path(self, path: str) -> str:
        return os.path.relpath(path, self.root) if self.root and path.startswith(self.root) else path


def _digest(value: object, walk: _Walk) -> str | None:
    """SHA-256 of ``value`` pickled by :class:`_Stable` within ``walk``; None: it cannot be pickled."""
    try:
        return walk.digest(value)
    except Exception:  # noqa: BLE001 - not picklable (or too deep): no key
        walk.hits[-1].clear()
        return None


def _walk(held: dict[Any, Any] | None, project: dict[str, types.ModuleType], portable: bool) -> _Walk:
    """The run's :class:`_Walk` (kept in the per-run memo ``held``)."""
    held = {} if held is None else held
    key = ("walk", portable)
    if key not in held or held[key].project is not project:
        held[key] = _Walk(project, portable)
    return held[key]


def _held_digest(ob: Any, walk: _Walk) -> str | None:
    """What the obligation's claim, assumptions and witnesses hold (closures, defaults, attributes,
    code: :class:`_Stable`), each digested once per run (generated obligations share them)."""
    parts = [_digest(fn, walk) for fn in [ob.func, *ob.assumptions.values(), *ob.witnesses.values()]]
    return None if None in parts else hashlib.sha256("".join(parts).encode()).hexdigest()  # type: ignore[arg-type]


#: What Python sets on every module (the rest of a module's names, dunders included, is keyed here
#: and fingerprinted by :mod:`capproof.runner`)
MODULE_DUNDERS = frozenset(
    {
        "__name__",
        "__doc__",
        "__package__",
        "__loader__",
        "__spec__",
        "__file__",
        "__cached__",
        "__builtins__",
        "__path__",
    }
)


def _module_digest(module: types.ModuleType, walk: _Walk) -> str | None:
    """Everything a module holds (:class:`_Stable`): its data (a table a spec read from a file at
    import) and what its own functions and classes hold (closures, defaults, function attributes,
    class attributes of nested classes, objects, ``partial`` arguments: an engine config read into
    ``Limits.MAX_NUM_SEQS``, ``def cap(limit=_load(...))`` or ``lambda: v``). None: some of it
    cannot be read (not cacheable)."""
    held = sorted((k, v) for k, v in list(vars(module).items()) if k not in MODULE_DUNDERS)
    return _digest(held, walk)


def obligation_keys(
    obs: list[Any], options: Options, reached: list[frozenset[str] | None], project: dict[str, types.ModuleType]
) -> list[str | None]:
    """:func:`obligation_key` of each of ``obs`` (``reached``: the project modules each can reach;
    ``project``: the project's modules by name); each module's data is pickled once."""
    memo: dict[Any, str | None] = {}
    held: dict[Any, tuple[object, str | None]] = {}
    return [obligation_key(ob, options, modules, project, memo, held) for ob, modules in zip(obs, reached)]


def obligation_key(
    ob: Any,
    options: Options,
    modules: frozenset[str] | None,
    project: dict[str, types.ModuleType],
    memo: dict[Any, str | None] | None = None,
    held: dict[Any, tuple[object, str | None]] | None = None,
) -> str | None:
    """The cache key of obligation ``ob`` under ``options``; ``modules``: the project modules it can
    reach (None: every project module). None: not cacheable (queries written to ``--smt2``, data
    that cannot be pickled)."""
    if options.smt2_dir:
        return None
    opts = {f.name: getattr(options, f.name) for f in fields(options) if f.name not in _SCHEDULING}
    return item_key("capproof-verdict-cache-v1", ob, opts, modules, project, memo, held)


def item_key(
    kind: str,
    ob: Any,
    settings: dict[str, Any],
    modules: frozenset[str] | None,
    project: dict[str, types.ModuleType],
    memo: dict[Any, str | None] | None = None,
    held: dict[Any, tuple[object, str | None]] | None = None,
    roots: tuple[str, ...] = DECIDING,
) -> str | None:
    """The key of what ``kind`` of work (a verdict, a bound) computes for obligation ``ob`` with
    ``settings`` (the options that can change it, JSON-able or repr-able): the SHA-256 of the
    obligation's declaration, the bytes and data of the project modules it can reach
    (``modules``; None: every module of ``project``), the data its functions hold, capproof's
    sources that ``roots`` and those modules can import (:func:`capproof.own_sources.capproof_sources`),
    the working directory, the Python and solvers' versions and the environment. None: some of that
    data cannot be pickled (not cacheable). ``memo``/``held``: per-run memos shared by the
    obligations of a run."""
    if modules is None:  # code naming sys, eval, importlib...: what it reads is not bounded (sys.argv)
        return None
    core = _key_parts(kind, ob, settings, modules, project, memo, held, roots, portable=False)
    if core is None:
        return None
    parts = [
        *core,
        os.getcwd(),
        _environment(),
        # settings a model or spec may read at run time (CAPPROOF_BATCH=1024, an engine's VLLM_*
        # variables, mutmut's active mutant): the whole environment but what a shell sets per session
        repr(sorted((k, v) for k, v in os.environ.items() if k not in _SESSION_VARIABLES)),
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def portable_key(
    kind: str,
    ob: Any,
    settings: dict[str, Any],
    modules: frozenset[str] | None,
    project: dict[str, types.ModuleType],
    memo: dict[Any, str | None] | None = None,
    held: dict[Any, tuple[object, str | None]] | None = None,
    roots: tuple[str, ...] = BOUNDING,
) -> str | None:
    """:func:`item_key` without what differs between checkouts of the same sources: paths are
    relative to the working directory (the project's root), and neither the working directory, the
    Python version nor the environment is in it; Z3's full version is. What ``proofs/bounds.json``
    records per obligation (a key the same on a clean clone), so ``bound --check`` re-bounds only the
    obligations whose key changed. None: some data cannot be pickled."""
    import z3

    core = _key_parts(kind, ob, settings, modules, project, memo, held, roots, portable=True)
    if core is None:
        return None
    return hashlib.sha256("\n".join([*core, z3.get_full_version()]).encode()).hexdigest()


#: Standard-library modules whose functions compute from their arguments only (no file system,
#: clock, process or machine state; a file they open raises the ``open`` audit event, which makes a
#: verdict uncacheable already). A model reaching any other standard-library module (``os``,
#: ``time``, ``platform``, ``socket``...) may read the machine: its verdict is not cached.
_DETERMINISTIC = frozenset(
    {
        "builtins",
        "abc",
        "array",
        "bisect",
        "cmath",
        "collections",
        "collections_abc",
        "contextlib",
        "copy",
        "copyreg",
        "dataclasses",
        "decimal",
        "enum",
        "fractions",
        "functools",
        "heapq",
        "inspect",
        "itertools",
        "json",
        "keyword",
        "math",
        "numbers",
        "operator",
        "re",
        "statistics",
        "string",
        "struct",
        "textwrap",
        "types",
        "typing",
        "warnings",
        "weakref",
    }
)


#: Reads of a machine-reading module that the key covers otherwise (the environment is in it)
_KEYED_READS = frozenset({"os:environ", "os:getenv", "os:environb"})


def library_inputs(libraries: Iterable[str], portable: bool = False) -> list[str] | None:
    """The part of a cache key for the modules outside the project an obligation reaches
    (:attr:`capproof.runner.Reach.libraries`): for a package outside the standard library (an
    engine, a vendored helper on ``sys.path``), each of its loaded module files with its size and
    modification time (``portable``: its size alone), so an edited or upgraded package keys anew.
    None (not cacheable) when one is a standard-library module not in :data:`_DETERMINISTIC`: what
    it reads (``os.stat``, the CPU affinity, the clock) raises no audit event."""
    packages: set[str] = set()
    for name in libraries:  # a module, or ``module:attribute`` read of it
        raw = name.partition(":")[0].split(".")[0]
        if raw in sys.stdlib_module_names or raw == "builtins":
            if raw.lstrip("_") not in _DETERMINISTIC and raw not in _DETERMINISTIC and name not in _KEYED_READS:
                return None
            continue
        packages.add(raw)
    out: list[str] = []
    for top in sorted(packages):
        for modname, module in sorted(list(sys.modules.items()), key=lambda kv: kv[0]):
            path = getattr(module, "__file__", None)
            if not (modname == top or modname.startswith(top + ".")) or not isinstance(path, str):
                continue
            try:
                st = os.stat(path)
            except OSError:
                out.append(f"{modname}: missing")
                continue
            out.append(f"{modname}:{st.st_size}" if portable else f"{modname}:{path}:{st.st_size}:{st.st_mtime_ns}")
    return out


def _key_parts(
    kind: str,
    ob: Any,
    settings: dict[str, Any],
    modules: frozenset[str] | None,
    project: dict[str, types.ModuleType],
    memo: dict[Any, str | None] | None,
    held: dict[Any, tuple[object, str | None]] | None,
    roots: tuple[str, ...],
    portable: bool,
) -> list[str] | None:
    """What :func:`item_key` and :func:`portable_key` share: paths relative to the working directory
    (:func:`item_key` adds the working directory itself), so the data of a module or a closure is
    pickled once for both (``memo``, ``held``); ``portable`` says how the obligation's own file is
    named. None: some data cannot be pickled."""
    memo = {} if memo is None else memo
    names = [m for m in sorted(project if modules is None else modules) if m in project]
    files = {m: os.path.abspath(project[m].__file__) for m in names if getattr(project[m], "__file__", None)}
    root = os.path.abspath(os.getcwd()) + os.sep
    shown = {m: (os.path.relpath(f, root) if f.startswith(root) else f) for m, f in files.items()}
    sources = [f"{m}:{shown[m]}={_file_hash(f)}" for m, f in files.items()]
    walk = _walk(held, project, portable=True)
    for m in names:
        if m not in memo:
            memo[m] = _module_digest(project[m], walk)
    data = [_held_digest(ob, walk), *(memo[m] for m in names)]
    if None in data:
        return None
    libraries = library_inputs(getattr(modules, "libraries", ()), portable)
    if libraries is None:
        return None
    return [
        kind,
        ob.id,
        ob.expect,
        repr(ob.case),
        repr(ob.rlimit),
        repr(ob.fork_budget),
        repr(sorted((k, repr(v)) for k, v in ob.domain.items())),
        repr(sorted(ob.assumptions)),
        repr(sorted(ob.witnesses)),
        repr(os.path.relpath(ob.file, root) if portable and os.path.isabs(ob.file) else ob.file),
        repr(ob.line),
        json.dumps(settings, sort_keys=True, default=repr),
        *sources,
        *data,  # type: ignore[list-item]
        *libraries,
        # (a portable key records bounds, read back by capproof.bound: the keying code is not in it)
        capproof_sources(roots, files.values(), keying=not portable),
    ]


def load_entry(folder: str, key: str) -> dict[str, Any] | None:
    """The JSON object stored under ``key`` in ``.capproof/<folder>/`` (None: none, or unreadable)."""
    try:
        with open(os.path.join(os.getcwd(), ".capproof", folder, f"{key}.json"), encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def store_entry(folder: str, key: str, data: dict[str, Any]) -> None:
    """Store the JSON object ``data`` under ``key`` in ``.capproof/<folder>/`` (written to a
    temporary file, then renamed: a reader never sees half of it; a read-only checkout: not stored)."""
    path = os.path.join(os.getcwd(), ".capproof", folder, f"{key}.json")
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(data, fh)
        os.replace(tmp, path)
    except OSError:
        pass


def load(key: str) -> ObligationResult | None:
    """The result stored under ``key`` (``cached`` set), or None."""
    data = load_entry("verdicts", key)
    if data is None or data.get("verdict") not in CACHEABLE:
        return None
    try:
        result = result_from_json(data)
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    result.cached = True
    return result


def store(key: str, result: ObligationResult) -> None:
    """Store ``result`` under ``key`` if its verdict is cacheable (a read-only checkout: not stored)."""
    if (
        result.verdict.value not in CACHEABLE
        or getattr(result, "cached", False)
        or getattr(result, "uncacheable", None)
    ):
        return  # (uncacheable: the model read a file while deciding it, capproof.runner._FilesRead)
    store_entry("verdicts", key, result.to_json())


def result_from_json(data: dict[str, Any]) -> ObligationResult:
    """The :class:`ObligationResult` whose ``to_json()`` is ``data``."""
    cx = data.get("counterexample")
    first = data.get("first_counterexample")
    return ObligationResult(
        id=data["id"],
        case=data["case"],
        sources=list(data["sources"]),
        expect=data["expect"],
        verdict=Verdict(data["verdict"]),
        message=data["message"],
        cases=data["cases"],
        excluded=data["excluded_cases"],
        failing_cases=data["failing_cases"],
        unknown_cases=data["unknown_cases"],
        counterexample=Counterexample(
            params=cx["params"], values=cx["values"], minimized=cx["minimized"], path=cx.get("path", "")
        )
        if cx
        else None,
        witnesses=[Witness(**w) for w in data["witnesses"]],
        density=data["density"],
        cross_check=data["cross_check"],
        assumptions_used=list(data["assumptions_used"]),
        restating=list(data["restating_assumptions"]),
        relation=data["relation"],
        domain=dict(data["domain"]),
        pins=dict(data["pins"]),
        assumptions=list(data["assumptions"]),
        models=list(data["models"]),
        claim_source=data["claim_source"],
        doc=data["doc"],
        file=data["file"],
        line=data["line"],
        rlimit=data["rlimit"],
        seconds=data["seconds"],
        covers=list(data["covers"]),
        paths=data["paths"],
        encoding=data["encoding"],
        encoding_note=data["encoding_note"],
        normalised=list(data["normalised"]),
        first_counterexample=FirstCounterexample(**first) if first else None,
    )
