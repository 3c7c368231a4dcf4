"""Run every selected obligation and contract; optionally in worker processes.

One obligation's failure (bad spec, unknown, error) never stops the others. With ``jobs > 1`` the
work is submitted longest first (estimated from the previous run's ``.capproof/last-run.json``,
else from the number of cases and vector entries; contracts with a cached CrossHair verdict are
answered in the parent process), and results are reported in declared order. Short obligations
are decided a few to a worker process (:data:`BATCH_ITEMS`), each from a fresh Z3 context and the
module state the parent loaded; an item that breaks its process or ends in ``error`` is charged
alone, and the items after it, or after an item that left anything behind in the process
(:func:`_leftovers`), get fresh processes.
"""

from __future__ import annotations

import builtins
import collections.abc
import functools
import gc
import io
import json
import multiprocessing
import os
import pickle
import sys
import tempfile
import threading
import time
import types
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from .contracts import check_contract
from .loader import LoadError, load, load_file
from .obligation import Contract, Obligation
from .provenance import read_loaded_files, trusted_filename
from .prover import prove_obligation
from .verdict import EXIT_MISMATCH, EXIT_OK, EXIT_UNDECIDED, ContractResult, ObligationResult, Options, Verdict
from .verdict_cache import MODULE_DUNDERS

__all__ = [
    "RunResult",
    "Monitor",
    "Task",
    "run",
    "run_items",
    "run_tasks",
    "project_modules",
    "reaches",
    "item_roots",
    "default_jobs",
    "EXIT_OK",
    "EXIT_MISMATCH",
    "EXIT_UNDECIDED",
]

#: Where ``make verify`` keeps the last full run (read for longest-first scheduling).
LAST_RUN = os.path.join(".capproof", "last-run.json")


def default_jobs() -> int:
    """The CPU cores this process may run on (``os.sched_getaffinity``; ``os.cpu_count`` elsewhere)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _previous_seconds(path: str = LAST_RUN) -> dict[str, float]:
    """id -> seconds of the previous run (empty if there is none or it is unreadable); contract
    verdicts that came from the cache say nothing about their cost and are left out."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        return {
            e["id"]: float(e.get("seconds", 0.0))
            for e in [*data.get("obligations", []), *data.get("contracts", [])]
            if isinstance(e, dict) and "id" in e and not e.get("cached")
        }
    except (OSError, ValueError, TypeError, AttributeError, KeyError):
        return {}


def _estimate(kind: str, item: Obligation | Contract, previous: dict[str, float]) -> float:
    """Seconds this item is expected to take: the previous run's, else a rough size measure."""
    if item.id in previous:
        return previous[item.id]
    if kind == "contract":
        return 1000.0  # CrossHair explores until every path is done: the longest work we have
    cases = 1
    entries = 0
    for dom in item.domain.values():  # type: ignore[union-attr]
        if getattr(dom, "finite", False) and hasattr(dom, "cases"):
            try:
                cases *= len(dom.cases())
            except Exception:  # noqa: BLE001 - an estimate only
                pass
        entries += getattr(dom, "size", 0) or 0
    return cases * (1 + entries) / 1000.0


@dataclass
class RunResult:
    obligations: list[ObligationResult] = field(default_factory=list)
    contracts: list[ContractResult] = field(default_factory=list)
    usage_errors: list[str] = field(default_factory=list)

    def all_results(self) -> list[ObligationResult | ContractResult]:
        return [*self.obligations, *self.contracts]

    def counts(self) -> dict[str, int]:
        out = {v.value: 0 for v in Verdict}
        for r in self.all_results():
            out[r.verdict.value] += 1
        return out

    @property
    def ok(self) -> bool:
        return not self.usage_errors and all(r.ok for r in self.all_results())

    @property
    def exit_code(self) -> int:
        """0: every verdict as expected; 2: any unknown, vacuous or error (or bad usage); else 1."""
        undecided = {Verdict.UNKNOWN, Verdict.VACUOUS, Verdict.ERROR}
        if self.usage_errors or any(r.verdict in undecided and not r.ok for r in self.all_results()):
            return EXIT_UNDECIDED
        return EXIT_OK if self.ok else EXIT_MISMATCH

    def to_json(self) -> dict[str, Any]:
        counts = self.counts()
        return {
            "obligations": [r.to_json() for r in self.obligations],
            "contracts": [r.to_json() for r in self.contracts],
            "usage_errors": list(self.usage_errors),
            "summary": {"ok": self.ok, **counts, "exit_code": self.exit_code},
        }


def _load_error_result(err: LoadError) -> ObligationResult:
    return ObligationResult(
        id=err.file,
        case=None,
        sources=[],
        expect="proved",
        verdict=Verdict.ERROR,
        message=err.message,
        file=err.file,
    )


@dataclass(frozen=True)
class Task:
    """Work other than proving that the runner's processes do for each obligation, with the same
    time limit, fresh processes, fresh Z3 and module-state checks (``capproof bound``): ``decide(ob)``
    returns the item's result (an object with ``status`` and ``message``; it should not raise),
    ``error(ob, message)`` the result of an item that raised, ran over time or broke its process,
    ``weight(ob)``: above 0, the item gets a process of its own (long work; heaviest first), else it
    is batched with others (:data:`BATCH_ITEMS` to a process). ``options(ob)``: set (with ``kind``
    ``"obligation"``), ``decide(ob)`` is a proof of ``ob`` under these options (``capproof
    check-config``'s pins), and its verdict is checked as ``capproof prove``'s is (the fresh copy:
    the model's first evaluation in a process, :class:`_FreshCopy`)."""

    kind: str
    decide: Callable[[Obligation], Any]
    error: Callable[[Obligation, str], Any]
    weight: Callable[[Obligation], float] = lambda ob: 0.0
    options: Callable[[Obligation], Options] | None = None


def _is_error(outcome) -> bool:
    """Whether ``outcome`` (a verdict, or a :class:`Task`'s result with a ``status``) is an error."""
    verdict = getattr(outcome, "verdict", None)
    return verdict is Verdict.ERROR if verdict is not None else getattr(outcome, "status", None) == "error"


def _mark_error(outcome, message: str) -> None:
    if getattr(outcome, "verdict", None) is not None:
        outcome.verdict = Verdict.ERROR
    else:
        outcome.status = "error"
    outcome.message = message


def _decide(kind: str, item: Obligation | Contract, options: Options):
    """Decide one item; an obligation in a fresh Z3 context (the previous one restored after), so
    its terms, rlimit use and unsat cores do not depend on what this process decided before (which
    differs between --jobs settings and runs). Contracts keep the ambient context: CrossHair holds
    Z3 objects across calls."""
    if kind != "obligation":
        return check_contract(item, options)  # type: ignore[arg-type]
    from .symbolic import fresh_z3_context

    drawn = _global_generators()
    with fresh_z3_context(), _FilesRead() as read:
        outcome = prove_obligation(item, options)  # type: ignore[arg-type]
    _mark_changed(outcome, _drawn_from(drawn))
    return read.mark(outcome)


class _FilesRead:
    """While active, the files model code opens (Python's ``open`` audit event: ``open()``, ``io``,
    ``os.open``, ``pathlib``) or the directories it lists (``os.listdir``/``os.scandir``; not capproof's own reads) outside Python's installation, capproof, Z3
    and ``.capproof/``: a model reading an engine's config file at run time. :meth:`mark` sets ``uncacheable`` on an
    outcome that read one: its verdict depends on a file no cache key covers, so it is not
    stored (capproof.verdict_cache)."""

    active: list = []
    installed = [False]
    #: the audit events of a read: a file opened, or a directory listed (``os.listdir``,
    #: ``os.scandir``, and through them ``glob`` and ``pathlib``'s ``iterdir``)
    EVENTS = frozenset({"open", "os.listdir", "os.scandir"})

    def __enter__(self) -> "_FilesRead":
        if not self.installed[0]:
            self.installed[0] = True
            from ._audit import on

            on(_FilesRead._audit, _FilesRead.EVENTS)
        self.opened: list[str] = []
        _FilesRead.active.append(self.opened)
        return self

    def __exit__(self, *exc: object) -> None:
        _FilesRead.active.remove(self.opened)

    def mark(self, outcome):
        """Set ``uncacheable`` on ``outcome`` when the model read a file; make it an error when it
        wrote one (state its own later evaluations may read: a memo in a temporary file)."""
        if self.opened:
            try:
                outcome.uncacheable = f"read {self.opened[0][0]} while deciding it"
            except AttributeError:  # (an outcome without a __dict__)
                pass
        written = [path for path, writes in self.opened if writes]
        if written and not _is_error(outcome):
            _mark_error(
                outcome,
                f"the model wrote {written[0]} while deciding it: its own evaluations (the int probe's, the "
                "symbolic runs') may read what an earlier one wrote",
            )
        return outcome

    @staticmethod
    def _audit(event: str, args: tuple) -> None:
        if event not in _FilesRead.EVENTS or not _FilesRead.active or not args:
            return
        if args[0] is None:
            if event == "open":
                return
            args = (".",)
        try:
            path = os.path.abspath(os.fsdecode(args[0]) if not isinstance(args[0], int) else f"/proc/self/fd/{args[0]}")
        except Exception:  # noqa: BLE001 - a path that cannot be decoded: counted
            path = repr(args[0])
        if (path.startswith(_NOT_INPUTS()) or path.endswith(".pyc")) and not path.startswith(tempfile.gettempdir()):
            return
        if not _opened_by_project_code(sys._getframe(2)):  # (1: capproof._audit) capproof's or a library's own reads
            return
        mode = args[1] if len(args) > 1 else "r"
        writes = (
            any(c in mode for c in "wax+")
            if isinstance(mode, str)
            else isinstance(mode, int) and bool(mode & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND))
        )
        for opened in _FilesRead.active:
            opened.append((path, writes))


def _opened_by_project_code(frame) -> bool:
    """Whether the first frame from ``frame`` outward that is capproof's or the project's (a file
    under the working directory, not in a hidden directory) is the project's: the standard
    library's and installed libraries' frames are looked through."""
    root = os.path.abspath(os.getcwd()) + os.sep
    own = os.path.dirname(os.path.abspath(__file__)) + os.sep
    while frame is not None:
        name = os.path.abspath(trusted_filename(frame.f_code))
        if name.startswith(own):
            return False
        if name.startswith(root) and f"{os.sep}." not in name[len(root) - 1 :]:
            return True
        frame = frame.f_back
    return False


def _NOT_INPUTS() -> tuple[str, ...]:
    """Where opened files are no input of a verdict: Python's installation, capproof's and Z3's
    code, the caches under ``.capproof/``, the kernel's pseudo files."""
    import z3

    return tuple(
        os.path.join(os.path.abspath(p), "")
        for p in (
            sys.prefix,
            sys.base_prefix,
            os.path.dirname(os.path.abspath(__file__)),
            os.path.dirname(os.path.abspath(z3.__file__)),
            os.path.join(os.getcwd(), ".capproof"),
            "/proc",
            "/dev",
            "/sys",
        )
    )


def _work(kind: str, file: str, ident: str, options: Options):
    """Worker entry point: reload the spec file in this process and decide one item."""
    from .loader import ensure_project_on_path

    ensure_project_on_path()
    items = load_file(file)
    if isinstance(items, LoadError):
        return _load_error_result(items)
    for item in items:
        if item.id == ident and not getattr(item, "problems", None):
            return _decide(kind, item, options)
    raise LookupError(f"{ident} vanished from {file}")


def _by_identity(*key: object) -> object:
    """What a fingerprint records for an object taken by identity (:class:`_Fingerprint`): the
    callable of its reduction, never called (a fingerprint is compared, not loaded)."""
    raise TypeError("a fingerprint is not loaded")


class _Fingerprint(pickle.Pickler):
    """Pickles data by value and functions, classes, modules and code by identity: a function of
    a spec module is not importable under its module's name (``capproof_spec.…``), and pickling
    it by reference made pickle search ``sys.path`` for that module (stat calls) on every value
    holding one, ~20 ms per fingerprint; the data it holds is now fingerprinted too. Locks, which
    pickle refuses, are taken by identity too, so an object holding one is still pickled by value.

    All of it is decided in ``reducer_override``, which pickle's C code does not call for the
    exact ``str``, ``bytes``, ``int``, ``float``, ``bool`` and ``None`` values: a
    ``persistent_id`` hook is called for every object, and those calls were most of a
    fingerprint of the inventory entries a spec module keeps (5.3 -> 2.3 ms of CPU,
    docs/performance.md). An object taken by identity is reduced to :func:`_by_identity` of its
    key (``("identity", id)``, or ``("lock", id, whether held)``)."""

    _BY_IDENTITY = (
        types.FunctionType,
        types.BuiltinFunctionType,
        types.MethodType,
        types.ModuleType,
        types.CodeType,
        type,
        type(threading.Lock()),
        type(threading.RLock()),
    )

    #: built-in value types (exactly these, not subclasses): never taken by identity
    _PLAIN = frozenset({int, float, complex, bool, str, bytes, type(None), tuple, list, dict, set, frozenset})

    def reducer_override(self, obj):  # noqa: D102 - pickle's hook
        if type(obj) in self._PLAIN:  # (called for every container: the common case first)
            return NotImplemented
        if isinstance(obj, self._BY_IDENTITY[-2:]):  # a lock: its identity and whether it is held
            return (_by_identity, ("lock", id(obj), repr(obj).split(" ", 1)[0]))
        if _bound_to_data(obj):
            # a method bound to an object (``it.__next__``, ``memo.append``): the function by identity,
            # the object by what it holds, which the method may change
            return (
                (getattr, (obj.__self__, obj.__name__))
                if isinstance(obj, types.BuiltinMethodType)
                else (types.MethodType, (obj.__func__, obj.__self__))
            )
        if isinstance(obj, self._BY_IDENTITY):
            # (the reduction's own callable by reference, as pickle saves a global)
            return NotImplemented if obj is _by_identity else (_by_identity, ("identity", id(obj)))
        # an instance of a class defined in Python is fingerprinted by what it holds as the garbage
        # collector sees it (its attributes' and items' values), never by its own ``__reduce__``,
        # ``__getstate__``, ``__dict__`` or ``copyreg`` entry, which may leave out what it holds
        if type(obj).__flags__ & (_MUTABLE_CLASS | _IMMUTABLE) == _MUTABLE_CLASS:
            if _holds_c_state(type(obj)):
                # a C base keeps state the garbage collector does not see (``random.Random``'s
                # generator): what the object's own reduction gives is fingerprinted too
                return (type(obj), (tuple(gc.get_referents(obj)), obj.__reduce_ex__(pickle.HIGHEST_PROTOCOL)))
            return (type(obj), tuple(gc.get_referents(obj)))
        return NotImplemented


class _TermsByText(_Fingerprint):
    """:class:`_Fingerprint` with a Z3 term (an ``AstRef``: immutable, but holding a ctypes pointer
    and its context, which pickle refuses) taken as its class, its S-expression and any other
    attribute set on it. Used only for an :class:`Opaque` value's contents."""

    def reducer_override(self, obj):  # noqa: D102 - pickle's hook
        z3 = sys.modules.get("z3")
        if z3 is not None and isinstance(obj, z3.AstRef):
            extra = {k: v for k, v in vars(obj).items() if k not in ("ast", "ctx")}
            return (tuple, ((type(obj), obj.sexpr(), extra),))
        return super().reducer_override(obj)


def _bound_to_data(obj: object) -> bool:
    """Whether ``obj`` is a method bound to an object that is neither a module nor a class."""
    if not isinstance(obj, (types.MethodType, types.BuiltinMethodType)):
        return False
    owner = getattr(obj, "__self__", None)
    return owner is not None and not isinstance(owner, (types.ModuleType, type))


#: ``Py_TPFLAGS_HEAPTYPE`` without ``Py_TPFLAGS_IMMUTABLETYPE``: a class whose instances Python code defines
_MUTABLE_CLASS, _IMMUTABLE = 1 << 9, 1 << 8

#: C classes whose instances' state the garbage collector sees (their items) or that hold none
_TRANSPARENT_C = (object, list, dict, set, frozenset, tuple, int, float, complex, str, bytes, bytearray, BaseException)


def _defined_in_c(cls: type) -> bool:
    """Whether ``cls`` comes from a C module (a built-in one or an extension), not Python source."""
    if cls.__flags__ & (_MUTABLE_CLASS | _IMMUTABLE) != _MUTABLE_CLASS:
        return True
    module = sys.modules.get(cls.__module__)
    return module is None or not str(getattr(module, "__file__", "") or "").endswith(".py")


def _holds_c_state(cls: type) -> bool:
    """Whether a Python class has a C base (other than :data:`_TRANSPARENT_C`) whose instances keep
    state outside their attributes: ``random.Random`` (``_random.Random``'s Mersenne Twister)."""
    return any(
        _defined_in_c(base) and base not in _TRANSPARENT_C and not issubclass(base, BaseException)
        for base in cls.__mro__[1:]
    )


class Opaque(tuple):
    """The fingerprint of a value pickle refuses (a generator, a socket, an object whose
    ``__reduce__`` raises): its identity and contents (:func:`_opaque_contents`: a repr, which an
    in-place change need not alter, unless only Z3 terms were refused). The
    runner fails closed on it: an item that can reach one is decided in a process of its own."""


def _fingerprint(value: object) -> object:
    buf = io.BytesIO()
    try:
        _Fingerprint(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
        return buf.getvalue()
    except Exception:  # noqa: BLE001 - not picklable: compare by identity and contents (and fail closed)
        return Opaque((id(value), _opaque_contents(value)))


def _opaque_contents(value: object) -> object:
    """What an :class:`Opaque` value is compared by besides its identity: its pickle with each Z3
    term taken by its S-expression (:class:`_TermsByText`) when that is the only thing pickle
    refused, else its repr (the first 10,000 characters). A Z3 term's repr is Z3's Python
    pretty-printer, which took seconds for the terms a test module keeps (50 s of one fast-tier
    test's 100 s) and elides deep subterms; its S-expression is Z3's own printer, whole."""
    buf = io.BytesIO()
    try:
        _TermsByText(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
        return buf.getvalue()
    except Exception:  # noqa: BLE001 - something else pickle refuses (a generator, a socket)
        try:
            return repr(value)[:10_000]
        except Exception:  # noqa: BLE001
            return "?"


def _project_module(modname: str, module: types.ModuleType, root: str) -> bool:
    """Whether ``module`` is one of the project's own: its file under ``root``, not in a hidden
    directory such as ``.venv``, and not capproof's."""
    path = _absolute(getattr(module, "__file__", None) or "/")
    if modname.startswith("capproof_spec."):  # a spec file, wherever it is (given by its path)
        return True
    return (
        path.startswith(root)
        and f"{os.sep}." not in path[len(root) - 1 :]
        and not modname.startswith("capproof.")
        and not path.startswith(_CAPPROOF_DIR)  # capproof's own, also as ``__main__`` (``python -m capproof``)
    )


def _absolute(path: str) -> str:
    """``os.path.abspath(path)``; an absolute path's (it does not depend on the working directory) is
    computed once per process: the runner asks it of every loaded module two or three times per item."""
    if type(path) is not str or not path.startswith(os.sep):  # (a str subclass could hash as it likes)
        return os.path.abspath(path)
    return _normalised(path)


@functools.lru_cache(maxsize=65536)
def _normalised(path: str) -> str:
    return os.path.abspath(path)


_CAPPROOF_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def project_modules() -> dict[str, types.ModuleType]:
    """The project's own loaded modules by name (spec files, models, helpers: files under the working
    directory, not in a hidden directory, not capproof's)."""
    return _project_modules()


def _project_modules() -> dict[str, types.ModuleType]:
    root = os.path.abspath(os.getcwd()) + os.sep
    return {
        name: mod
        for name, mod in list(sys.modules.items())
        if isinstance(mod, types.ModuleType) and _project_module(name, mod, root)
    }


def module_data(modules: Iterable[str] | None = None) -> dict[str, dict[str, object]]:
    """A fingerprint of the data (not the functions or classes) held by the project's own modules
    (spec files, models): ``{"module": {"name": digest}}``, for the modules named in ``modules``
    (those an item can reach, :func:`reaches`; None: every project module). Compared before and
    after deciding an item. A value pickle refuses has an :class:`Opaque` digest."""
    project = _project_modules()
    names = project if modules is None else [m for m in modules if m in project]
    out: dict[str, dict[str, object]] = {}
    for modname in names:
        out[modname] = {
            name: _fingerprint(_made_module_data(value) if isinstance(value, types.ModuleType) else value)
            for name, value in list(vars(project[modname]).items())
            if name not in MODULE_DUNDERS and not _code(value) and not _imported(value)
        }
    return out


def _imported(value: object) -> bool:
    """A module imported (in ``sys.modules`` under its name, with an import spec): its data is
    fingerprinted as a project module's, or is a library's; a module object made by code
    (``types.ModuleType``, even put into ``sys.modules``) is data."""
    return (
        isinstance(value, types.ModuleType)
        and sys.modules.get(value.__name__) is value
        and getattr(value, "__spec__", None) is not None
    )


def _made_module_data(module: types.ModuleType) -> dict[str, object]:
    """The data a module object made by code holds, as a module's data is fingerprinted."""
    return {k: v for k, v in list(vars(module).items()) if k not in MODULE_DUNDERS and not _code(v)}


def _code(value: object) -> bool:
    """Whether a module's ``value`` is code, compared by identity and what it holds
    (:func:`_leftovers`), not data: a function, a class, a C function of a module, a project
    function's ``lru_cache`` wrapper. Any other callable is data, fingerprinted by what it holds: a
    bound method's object (``itertools.count().__next__``), a ``functools.partial``'s arguments, a
    ``sqlite3`` connection (which pickle refuses: fails closed)."""
    if isinstance(value, (types.FunctionType, type)):
        return True
    if isinstance(value, types.BuiltinFunctionType):
        return value.__self__ is None or isinstance(value.__self__, types.ModuleType)
    return callable(getattr(value, "cache_info", None)) and isinstance(
        getattr(value, "__wrapped__", None), types.FunctionType
    )


def module_state(modules: Iterable[str] | None = None) -> dict[str, object]:
    """:func:`module_data` flat: ``{"module.name": digest}``."""
    return _flat(module_data(modules))


def _flat(data: dict[str, dict[str, object]], modules: Iterable[str] | None = None) -> dict[str, object]:
    """``data`` (:func:`module_data`) for ``modules`` (None: all), keyed ``"module.name"``."""
    picked = data if modules is None else {m: data[m] for m in modules if m in data}
    return {f"{m}.{name}": v for m, held in picked.items() for name, v in held.items()}


def opaque_state(state: dict[str, object]) -> list[str]:
    """The names in a :func:`module_state` whose value could not be fingerprinted."""
    return sorted(k for k, v in state.items() if isinstance(v, Opaque))


#: Names in a model's code that reach modules other than through its globals (``sys.modules``,
#: ``importlib``, frames, the garbage collector, ``eval``, capproof's registry of every declared
#: obligation and loaded spec file): an item whose code says one reaches every project module.
_DYNAMIC_NAMES = frozenset(
    {
        "sys",
        "modules",
        "importlib",
        "import_module",
        "__import__",
        "reload",
        "exec",
        "eval",
        "compile",
        "gc",
        "get_referents",
        "get_referrers",
        "inspect",
        "currentframe",
        "_getframe",
        "f_back",
        "f_globals",
        "f_locals",
        "tb_frame",
        "builtins",
        "__builtins__",
        "globals",
        "vars",
        "CREATED",
        "_loaded",
        "loader",
        "ctypes",
        "pickle",
        "marshal",
        "runpy",
        "__subclasses__",
        "__loader__",
        "__spec__",
    }
)

_ATOMS = (int, float, complex, str, bytes, bool, type(None), range, slice)
_ATOM_TYPES = frozenset(_ATOMS)


def _code_names(code: types.CodeType, out: set[str]) -> None:
    out.update(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _code_names(const, out)


class _Reach:
    """The walk behind :func:`reaches`, over ``(object, names)`` pairs: ``names`` are the names the
    code that reached a module says (the attributes of it that code can read); None: all of them.
    ``everything`` is set when the walk cannot bound what is reached (fail closed)."""

    def __init__(self, project: dict[str, types.ModuleType], budget: int = 2_000_000):
        self.project = project
        self.by_dict = {id(vars(m)): name for name, m in project.items()}
        self.everything = False
        #: set when the walk meets state outside the project's modules that no fingerprint
        #: covers (a library's module, class, function or object; see :func:`_sealed_module`)
        self.foreign = False
        #: the library classes (written in Python) the walk met as values (``inspect.Parameter.empty``):
        #: what they bind is compared after each item of a batch (:func:`_leftovers`)
        self.classes: dict[int, type] = {}
        self.budget = budget
        #: id -> (the object, what it reaches) for the objects many items share (project functions
        #: and classes, larger containers), each walked once; the objects are held, so no id is reused
        self.memo: dict[int, tuple[object, frozenset[str]]] = {}
        self.busy: set[int] = set()
        #: the modules outside the project the walk met (a module, a library function's or class's):
        #: inputs the verdict cache keys or refuses (capproof.verdict_cache)
        self.libraries: set[str] = set()

    def _shared(self, obj: object) -> bool:
        if isinstance(obj, types.FunctionType):
            return id(getattr(obj, "__globals__", None)) in self.by_dict
        if isinstance(obj, type):
            return obj.__module__ in self.project
        if isinstance(obj, (dict, list, tuple, set, frozenset)):
            return len(obj) > 8
        # a dataclass instance (an inventory entry, a family of obligations) is held by many items'
        # closures and tables: walked once (what it reaches does not depend on the path to it)
        return _is_dataclass_instance(type(obj))

    def walk(self, roots: Iterable[tuple[object, frozenset[str] | None]], depth: int = 0) -> set[str]:
        """The project modules the ``(object, names)`` pairs ``roots`` reach."""
        out: set[str] = set()
        seen: set[tuple[int, int]] = set()
        stack = list(roots)
        while stack and not self.everything:
            self.budget -= 1
            if self.budget < 0:
                self.everything = True  # too much to walk: fail closed (every module)
                break
            obj, names = stack.pop()
            if isinstance(obj, _ATOMS):
                continue
            oid = id(obj)
            key = (oid, id(names))
            if key in seen:
                continue
            seen.add(key)
            if names is None and depth < 40 and oid not in self.busy and self._shared(obj):
                record = self.memo.get(oid)
                if record is None:
                    self.busy.add(oid)
                    outer, self.foreign = self.foreign, False
                    outer_libraries, self.libraries = self.libraries, set()
                    try:
                        mine: set[str] = set()
                        below = self._children(obj, None, mine)
                        mine |= self.walk(below, depth + 1)
                        if not self.everything:  # (a walk cut short is no record)
                            record = self.memo[oid] = (obj, frozenset(mine), self.foreign, frozenset(self.libraries))
                    finally:
                        self.busy.discard(oid)
                        self.foreign |= outer
                        self.libraries |= outer_libraries
                if record is not None:
                    out |= record[1]
                    self.foreign |= record[2]
                    self.libraries |= record[3]
            else:
                stack.extend(self._children(obj, names, out))
        return out

    def _children(self, obj: object, names: frozenset[str] | None, out: set[str]) -> list:
        """Add to ``out`` the project module ``obj`` belongs to; return the ``(object, names)`` pairs
        it holds or its code names."""
        if isinstance(obj, types.ModuleType):
            if obj.__name__ not in self.project:
                self.foreign |= not _sealed_module(obj, names)
                # ``module:attribute`` for each attribute the code reads of it (``os:environ``)
                held = vars(obj)
                read = [n for n in names if n in held] if names is not None else []
                self.libraries.update([f"{obj.__name__}:{n}" for n in read] or [obj.__name__])
                return []
            out.add(obj.__name__)
            held = vars(obj)
            return [(v, names) for v in (held.values() if names is None else [held[n] for n in names if n in held])]
        if isinstance(obj, (types.FunctionType, types.MethodType)):
            fn = getattr(obj, "__func__", obj)
            found: list[tuple[object, frozenset[str] | None]] = [(getattr(obj, "__self__", None), None)]
            globs = getattr(fn, "__globals__", None)
            if globs is not None and id(globs) not in self.by_dict and not _capproofs(globs.get("__name__")):
                # a library's function: what it binds is compared after each item, the module data
                # its code names must be what no item changes (not a registry: logging.getLogger)
                library = sys.modules.get(globs.get("__name__"))
                self.libraries.add(str(globs.get("__name__")))
                said = set()
                _code_names(fn.__code__, said)
                self.classes[id(fn)] = fn
                self.foreign |= (
                    library is None or vars(library) is not globs or not _sealed_module(library, frozenset(said))
                )
            if globs is not None and id(globs) in self.by_dict:  # a project function: what its code names
                modname = self.by_dict[id(globs)]
                out.add(modname)
                said: set[str] = set()
                _code_names(fn.__code__, said)
                if said & _DYNAMIC_NAMES:
                    self.everything = True
                    return []
                # a module it names is read by attribute (the names it says), or by a computed name (all)
                context = None if said & _COMPUTED_NAMES else frozenset(said)
                found += [(globs[n], context) for n in said if n in globs]
                package = modname.rpartition(".")[0]
                for mod, module in self.project.items():  # modules imported inside the function
                    parent, _, last = mod.rpartition(".")
                    if mod in said or (last in said and (parent in said or parent == package)):
                        found.append((module, context))
            found += [(c.cell_contents, None) for c in (getattr(fn, "__closure__", None) or ()) if _filled(c)]
            found += [(v, None) for v in getattr(fn, "__defaults__", None) or ()]
            found += [(v, None) for v in (getattr(fn, "__kwdefaults__", None) or {}).values()]
            found += [(v, None) for v in getattr(fn, "__dict__", {}).values()]
            return found
        if isinstance(obj, type):
            if obj.__module__ not in self.project:  # capproof's or a library's class: its code is not read
                self.libraries.add(obj.__module__)
                if not (_capproofs(obj.__module__) or obj.__flags__ & _IMMUTABLE):
                    # (a dunder's content can be changed only by code naming it, which reaches everything)
                    if all(_inert_attribute(v) or k.startswith("__") and not callable(v) for k, v in vars(obj).items()):
                        self.classes[id(obj)] = obj
                    else:  # a registry held by a library class (logging.Logger.manager)
                        self.foreign = True
                return []
            out.add(obj.__module__)
            return [(c, None) for c in obj.__mro__[1:]] + [
                (v, None) for k, v in vars(obj).items() if k not in ("__dict__", "__weakref__")
            ]
        if isinstance(obj, (staticmethod, classmethod, property)):
            return [(getattr(obj, a, None), None) for a in ("__func__", "fget", "fset", "fdel")]
        # (an element of an atom's exact type reaches nothing: :meth:`walk` skips every atom, these
        # are left out before the stack, the bulk of an inventory's entries)
        if isinstance(obj, dict):
            return [(v, None) for kv in obj.items() for v in kv if type(v) not in _ATOM_TYPES]
        if isinstance(obj, (list, tuple, set, frozenset)):
            return [(v, None) for v in obj if type(v) not in _ATOM_TYPES]
        if isinstance(obj, types.BuiltinFunctionType):  # (math.floor; random.random: a method of an object)
            owner = getattr(obj, "__self__", None)
            return (
                []
                if owner is None
                or owner is builtins
                or isinstance(owner, types.ModuleType)
                and _sealed_module(owner, None)
                else [(owner, None)]
            )
        # an object of a class Python code cannot change (a lock, a deque) may still hold state no
        # fingerprint reads (whether the lock is held): only the plain containers are walked
        self.foreign |= bool(type(obj).__flags__ & _IMMUTABLE) and not isinstance(obj, _PLAIN)
        found = [(type(obj), None)]  # an instance: its class's methods, then its data
        for attr in ("__dict__", "func", "args", "keywords"):  # (functools.partial: func/args/keywords)
            try:
                held = getattr(obj, attr, None)
            except Exception:  # noqa: BLE001 - a property that raises
                continue
            if held is not None:
                found.append((held, None))
        for slot in getattr(type(obj), "__slots__", ()) or ():
            try:
                found.append((getattr(obj, slot), None))
            except Exception:  # noqa: BLE001 - an empty slot
                pass
        if isinstance(obj, collections.abc.Collection):
            try:
                found += [(v, None) for v in list(obj)]
            except Exception:  # noqa: BLE001 - a collection that cannot be listed: cannot be bounded
                self.everything = True
        return found


#: Names with which code reads an attribute or global it does not spell (``getattr(models, name)``):
#: a module such code names is walked whole.
_COMPUTED_NAMES = frozenset({"getattr", "__dict__", "__getattribute__", "attrgetter", "hasattr", "dir"})


#: objects of classes Python code cannot change whose state the fingerprint reads whole
_PLAIN = (dict, list, tuple, set, frozenset, bytes, types.CellType, types.MappingProxyType)


@functools.lru_cache(maxsize=None)
def _is_dataclass_instance(cls: type) -> bool:
    """Whether objects of ``cls`` are dataclass instances (a class in whose MRO dataclasses put
    ``__dataclass_fields__``), read from the classes' own dicts (no attribute lookup runs code)."""
    return any("__dataclass_fields__" in vars(c) for c in cls.__mro__ if c is not object)


def _capproofs(modname: object) -> bool:
    return isinstance(modname, str) and (modname == "capproof" or modname.startswith("capproof."))


def _inert_attribute(value: object) -> bool:
    """A class attribute whose identity tells all a model can change of it: an atom, a function
    without attributes, a descriptor of C code."""
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    if isinstance(value, types.FunctionType):
        return all(isinstance(v, (types.FunctionType, *_ATOMS)) for v in value.__dict__.values())
    return isinstance(value, _ATOMS) or type(value).__flags__ & _IMMUTABLE and not isinstance(value, _PLAIN[:5])


def _sealed_module(module: types.ModuleType, names: frozenset[str] | None, depth: int = 0) -> bool:
    """Whether code reading the attributes ``names`` (None: any) of a module that is not the project's
    finds only what no item can change for the next: capproof's modules (their bindings and tables
    are checked after each item, :func:`_leftovers`), or atoms and functions and classes written in C
    (``math``, ``itertools``), not a library's functions, classes, objects or registries written in
    Python (``logging``, ``copyreg``), which an item of a batch could change for the next."""
    if _capproofs(module.__name__):
        return True
    held = vars(module)
    for name in held if names is None else [n for n in names if n in held]:
        value = held[name]
        if name.startswith("__") or isinstance(value, _ATOMS):
            continue
        if isinstance(value, types.BuiltinFunctionType) and isinstance(
            getattr(value, "__self__", None), types.ModuleType
        ):
            continue
        if isinstance(value, type) and value.__flags__ & _IMMUTABLE:
            continue
        if isinstance(value, types.ModuleType) and value is not module and depth < 3:  # (``_thread.get_ident``)
            if _sealed_module(value, names, depth + 1):
                continue
        return False
    return True


def _filled(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - reading an empty cell raises ValueError
        return True
    except ValueError:
        return False


def reaches(roots: Iterable[Iterable[object]]) -> list[frozenset[str] | None]:
    """For each list of objects in ``roots`` (an obligation's claim, assumptions and witnesses), the
    project modules (names) they can reach: the modules of the project functions and classes they
    hold or call, what those functions' code names (globals; modules imported at module level or
    inside the function, and the attributes it reads of them), the data and functions those hold,
    transitively. None: every project module (code naming a way to reach modules dynamically,
    :data:`_DYNAMIC_NAMES`, or more objects than the walk's budget). :func:`module_state`
    fingerprints these for an item: a module it cannot reach it can neither change nor read. One
    walk for all: what several share is walked once."""
    walker = _Reach(_project_modules())
    out: list[frozenset[str] | None] = []
    for group in roots:
        walker.everything = walker.foreign = False
        walker.libraries = set()
        found = walker.walk([(r, None) for r in group])
        reach = None if walker.everything else Reach(found, sealed=not walker.foreign)
        if reach is not None:
            reach.libraries = frozenset(m for m in walker.libraries if not _capproofs(m))
        out.append(reach)
    classes = tuple(walker.classes.values())
    for reach in out:
        if reach is not None:
            reach.classes = classes
    return out


class Reach(frozenset):
    """The project modules an item can reach (:func:`reaches`); ``sealed``: nothing else it reaches
    can carry state to the next item of a process (else it is decided in a fork of its own)."""

    sealed: bool = True
    #: library classes the walk met, whose bindings :func:`_leftovers` compares
    classes: tuple = ()
    #: the modules outside the project the walk met (capproof's left out): keyed or refused by the
    #: verdict cache (:func:`capproof.verdict_cache.library_inputs`)
    libraries: frozenset = frozenset()

    def __new__(cls, names: Iterable[str] = (), sealed: bool = True):  # noqa: D102
        made = super().__new__(cls, names)
        made.sealed = sealed
        return made

    def __reduce__(self):
        return (_reach, (frozenset(self), self.sealed, self.classes, self.libraries))


def _reach(names: frozenset[str], sealed: bool, classes: tuple, libraries: frozenset = frozenset()) -> Reach:
    made = Reach(names, sealed)
    made.classes = classes
    made.libraries = libraries
    return made


def item_roots(item: Obligation | Contract) -> list[object]:
    """What an item runs: an obligation's claim, assumptions and witnesses; a contract's target's
    module (when loaded; else nothing loaded yet: CrossHair imports it in the item's process)."""
    if isinstance(item, Obligation):
        return [item.func, *item.assumptions.values(), *item.witnesses.values()]
    target = item.target.split("::")[0]
    mod = (target[:-3] if target.endswith(".py") else target).replace("/", ".").replace(os.sep, ".")
    return [sys.modules[mod]] if mod in sys.modules else []


def _import_what_the_second_opinion_seeds() -> None:
    """Do here, once, what deciding the first item of a process would otherwise do in every
    process, before the state an item starts from is read:

    - import what deciding imports on first use: Hypothesis (the second opinion) seeds NumPy's
      global generator when ``numpy`` is loaded, importing ``numpy.random`` on its first example;
      the file-read check imports ``capproof._audit``; the guard imports ``faulthandler``; the
      prover imports the aggregate, induction, purity and density modules when an obligation needs
      them. A module imported inside an item is a new ``sys.modules`` entry, which ends its batch (each item after
      it then gets a process of its own) and, for ``numpy.random``, binds ``numpy.random`` and makes
      Cython modules: state changed while deciding;
    - compute Hypothesis's constants of the local modules (its generator draws them into the second
      opinion's examples): it reads and parses the source of every loaded module outside
      site-packages on its first example in a process, and again in each forked process when not
      done before the fork (the same modules, so the same constants and the same examples).

    Measured in docs/performance.md."""
    if "numpy" in sys.modules and "numpy.random" not in sys.modules:
        import numpy.random  # noqa: F401
    import dis  # noqa: F401
    import faulthandler  # noqa: F401

    from . import aggregate, density, guard, induction, purity  # noqa: F401
    from ._audit import on  # noqa: F401

    try:  # (a private function of Hypothesis: its cache fills on first use whatever this does)
        from hypothesis.internal.conjecture.providers import _get_local_constants

        _get_local_constants()
    except Exception:  # noqa: BLE001, S110 - only a cost: each process computes them itself
        pass


def _leftovers(z3_params: list[int], classes: Iterable[type] = (), modules: Iterable[str] | None = None) -> tuple:
    """What an item could leave behind for the next item of its batch besides the data
    :func:`module_state` fingerprints (a change there is an error verdict already): which function or
    class each name of capproof's and the project's modules is bound to (a monkeypatched
    ``capproof.arith.cdiv``), for capproof's any value (``capproof.domain.MAX_CASES``) and the content
    of its public tables (``capproof.arith.DTYPES``), the functions of ``builtins`` and of the modules
    the project's modules name (``math.isqrt``), the data the project's functions and classes hold
    (class attributes, defaults, closures, ``__dict__``, ``lru_cache`` fill), ``os.environ``, the
    working directory, ``sys.path``, the running threads, the interval timers (``signal.alarm``), the
    signal handlers, the recursion and int-to-str limits, the warnings filters, the standard streams,
    the trace and profile functions, and ``z3_params``: how many times Z3's global parameters were
    set or reset (:func:`_count_z3_param_calls`). A difference from the process's start ends the
    batch after that item (its verdict stands: it started from the parent's state); the items after
    it get fresh processes. ``modules``: the project modules the items of the batch can reach
    (:func:`reaches`, their union; None: all): a project module none of them can reach, and what only
    it names, is no item's state (in a test process, the test modules: 54 ms a call against 2 ms)."""
    import builtins
    import signal
    import threading

    root = os.path.abspath(os.getcwd()) + os.sep
    walked = None if modules is None else frozenset(modules)
    bound: dict[str, int] = {}
    held: dict[str, object] = {}
    named = {"builtins": builtins}  # and the modules the project's modules name (``import math``): their functions
    for modname, module in list(sys.modules.items()):
        if walked is not None and modname not in walked and not _capproofs(modname):
            continue  # (a library's, or a project module no item can reach)
        project = _project_module(modname, module, root)
        if not (project or modname == "capproof" or modname.startswith("capproof.")):
            continue
        if project:
            named.update((v.__name__, v) for v in list(vars(module).values()) if isinstance(v, types.ModuleType))
        for name, value in list(vars(module).items()):
            # a project module's data is module_state's; None is how capproof marks a value it computes once
            if (
                name.startswith("__")
                or isinstance(value, types.ModuleType)
                or value is None
                or (project and not callable(value))
            ):
                continue
            bound[f"{modname}.{name}"] = id(value)
            if project and getattr(value, "__module__", None) == modname:
                held[f"{modname}.{name}"] = _held_by(value)
            elif not project and name.isupper() and name[0] != "_" and name != "CREATED" and not callable(value):
                # capproof's public tables, by value (not CREATED: every declared obligation, ~10 ms)
                held[f"{modname}.{name}"] = _fingerprint(value)
    for modname, module in named.items():
        if not (modname == "capproof" or modname.startswith("capproof.") or _project_module(modname, module, root)):
            bound.update(
                (f"{modname}.{name}", id(value))
                for name, value in list(vars(module).items())
                if callable(value) and not name.startswith("__")
            )
            # the names a library module and its classes bind (``json.seen = True``, an attribute
            # set on a library class): a model can leave a flag there for the next item
            held[f"{modname} names"] = sorted(vars(module))
            held.update(
                (f"{modname}.{name} names", sorted(vars(value)))
                for name, value in list(vars(module).items())
                if isinstance(value, type) and not name.startswith("__")
            )
    for cls in classes:  # the library classes and functions the items reach: what each binds, by identity
        bindings = list(vars(cls).items()) if isinstance(cls, type) else [("", cls)]
        held[f"library {cls.__module__}.{cls.__qualname__}"] = sorted(
            (k, id(v), id(getattr(v, "__code__", None)), id(getattr(v, "__defaults__", None)))
            + tuple(sorted((a, id(b)) for a, b in (getattr(v, "__dict__", None) or {}).items()))
            for k, v in bindings
        )
    timers = [signal.getitimer(which) for which in (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF)]
    handlers = [
        id(signal.getsignal(sig))
        for sig in sorted(signal.valid_signals())
        if sig not in (signal.SIGKILL, signal.SIGSTOP)
    ]
    interpreter = (
        sys.getrecursionlimit(),
        sys.get_int_max_str_digits(),
        list(warnings.filters),
        id(sys.stdin),
        id(sys.stdout),
        id(sys.stderr),
        id(sys.gettrace()),
        id(sys.getprofile()),
    )
    return (
        bound,
        held,
        sorted(sys.modules),  # a module the item imported or planted (``sys.modules[...] = ...``)
        dict(os.environ),
        os.getcwd(),
        list(sys.path),
        sorted(t.ident or 0 for t in threading.enumerate()),
        timers,
        handlers,
        interpreter,
        z3_params[0],
    )


def _held_by(value: Any) -> list:
    """Fingerprints of what a function or class holds: a class's attributes (dunders included:
    ``__doc__``); a function's code (by identity), defaults, attributes, closure cells and
    ``lru_cache`` fill."""
    if isinstance(value, type):
        return [
            (k, _abc_registry(value) if k == "_abc_impl" else _fingerprint(v))
            for k, v in vars(value).items()
            if k not in ("__dict__", "__weakref__")
        ]
    parts = [
        ("code", id(getattr(value, "__code__", None))),
        getattr(value, "__defaults__", None),
        getattr(value, "__kwdefaults__", None),
        getattr(value, "__dict__", None),
        value.cache_info().currsize if callable(getattr(value, "cache_info", None)) else None,
    ]
    for cell in getattr(value, "__closure__", None) or ():
        try:
            parts.append(cell.cell_contents)
        except ValueError:  # an empty cell
            parts.append(None)
    return [_fingerprint(part) for part in parts]


def _abc_registry(cls: type) -> object:
    """An ABC's registered classes by identity (``register``), not its caches, which every
    ``isinstance`` fills without changing an answer."""
    import abc

    try:
        return sorted(id(ref()) for ref in abc._get_dump(cls)[0])  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - not an ABC's data after all
        return _fingerprint(vars(cls).get("_abc_impl"))


def _left_behind(start: tuple, now: tuple) -> bool:
    """Whether :func:`_leftovers` ``now`` differs from ``start`` (names bound since are no difference:
    a module imported while deciding is imported afresh in a process of its own too)."""
    (bound0, held0, *rest0), (bound1, held1, *rest1) = start, now
    return (
        any(bound1.get(k) != v for k, v in bound0.items())
        or any(held1.get(k) != v for k, v in held0.items())
        or rest0 != rest1
    )


_LEFTOVER_PARTS = (
    "bindings",
    "data of functions, classes and tables",
    "sys.modules",
    "os.environ",
    "the working directory",
    "sys.path",
    "threads",
    "interval timers",
    "signal handlers",
    "interpreter limits, filters, streams or hooks",
    "Z3's global parameters",
)


def changed_while_deciding(start: tuple, now: tuple, modules: Iterable[str] | None = None) -> list[str]:
    """What differs between :func:`_leftovers` ``start`` (before an item) and ``now`` (after it)
    besides modules imported and names bound since: state the item's own evaluations (the int
    probe's, then the symbolic runs') may have passed on to each other (a memo kept as a library
    module's attribute, a class attribute, a closure cell), so its verdict is an error.
    ``modules``: the project modules the item can reach (:func:`reaches`; None: all); the functions
    and classes of a project module it cannot reach are not its state (a test module's
    Hypothesis-wrapped functions, say)."""
    (bound0, held0, *rest0), (bound1, held1, *rest1) = start, now
    unreached = () if modules is None else tuple(f"{m}." for m in _project_modules() if m not in set(modules))

    def mine(key: str) -> bool:
        # (not capproof's own tables, which it fills while deciding: a model cannot reach them but as
        # misuse, capproof.symbolic._GuardedModule)
        return not _capproofs(key) and not key.startswith(unreached)

    out = [k for k, v in bound0.items() if bound1.get(k, v) != v and mine(k)]
    out += [k for k, v in held0.items() if held1.get(k, v) != v and mine(k)]
    out += [part for part, a, b in zip(_LEFTOVER_PARTS[2:], rest0, rest1) if a != b and part != "sys.modules"]
    # a module imported while deciding is imported afresh in a process of its own too; one that code
    # made and put there (no import spec) is state the model's later evaluations read
    out += [
        f"sys.modules[{name!r}] (a module made while deciding, not imported)"
        for name in sorted(set(rest1[0]) - set(rest0[0]))
        if name in sys.modules and getattr(sys.modules[name], "__spec__", None) is None
    ]
    return out


def _mark_changed(outcome, changed: list[str]) -> None:
    if changed and not _is_error(outcome):
        _mark_error(
            outcome,
            f"state changed while deciding it ({', '.join(changed[:3])}): the model's own evaluations (the "
            "int probe's, the symbolic runs') may have passed it on to each other; keep models and claims free of it",
        )


def _count_z3_param_calls() -> list[int]:
    """Count, in this process, the calls that set or reset Z3's global parameters (``z3.set_param``,
    ``z3.reset_params``): they outlive the Z3 context and cannot be listed back; ``[count]``."""
    import z3.z3
    import z3.z3core

    calls = [0]
    for name in ("Z3_global_param_set", "Z3_global_param_reset_all"):
        real = getattr(z3.z3core, name)

        def counted(*args, _real=real):
            calls[0] += 1
            return _real(*args)

        setattr(z3.z3, name, counted)
        setattr(z3.z3core, name, counted)
    return calls


def _regular_files_open() -> dict[int, os.stat_result]:
    """The regular files this process holds open, by descriptor (Linux; elsewhere none)."""
    import stat

    out: dict[int, os.stat_result] = {}
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return out
    for name in names:
        try:
            st = os.fstat(int(name))
        except (OSError, ValueError):
            continue
        if stat.S_ISREG(st.st_mode):
            out[int(name)] = st
    return out


#: The files held open before any spec or model was imported: the caller's redirections and the
#: copies of them a test runner keeps (pytest's saved standard streams; a log file another process
#: appends to changes while an item decides, without the model writing to it).
_OPEN_BEFORE_MODELS = frozenset((st.st_dev, st.st_ino) for st in _regular_files_open().values())


def _files_held_open() -> dict[int, tuple[int, int, int, int]]:
    """The regular files this process holds open (not its standard streams, nor those open before
    capproof loaded any model), by descriptor: ``(device, inode, size, modification time)``. A model
    writing through a descriptor it opened at import (``os.write``: no audit event) changes one."""
    import stat

    out: dict[int, tuple[int, int, int, int]] = {}
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:  # (not Linux: not checked)
        return out
    streams = set()
    for std in (0, 1, 2):
        try:
            st = os.fstat(std)
            streams.add((st.st_dev, st.st_ino))
        except OSError:
            pass
    for name in names:
        try:
            st = os.fstat(int(name))
        except (OSError, ValueError):
            continue
        if stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) not in streams | _OPEN_BEFORE_MODELS:
            out[int(name)] = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    return out


def _written_while_open(before: dict[int, tuple[int, int, int, int]]) -> list[str]:
    """The files of :func:`_files_held_open` ``before`` that changed since (same descriptor, same file)."""
    now = _files_held_open()
    return [
        f"a file held open at descriptor {fd} (written while deciding)"
        for fd, was in before.items()
        if fd in now and now[fd][:2] == was[:2] and now[fd] != was
    ]


def _global_generators() -> dict[str, object]:
    """The state of each pseudo-random generator a model can draw from without holding it: the
    ``random`` module's own (``random.random()``, ``from random import randint``), NumPy's global
    one (``numpy.random.rand``) and PyTorch's CPU default generator (``torch.rand``), the last two
    when loaded. Each model evaluation (the int probe's, the symbolic runs', the second opinion's)
    that draws from one sees the state the previous one left, where a fresh interpreter's first
    call sees the state after import: :func:`_drawn_from` makes such a verdict an error.
    capproof's own code draws from none while deciding (Hypothesis restores what it seeds)."""
    import random

    out: dict[str, object] = {"the random module's global generator": random.getstate()}
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        try:
            name, keys, *rest = numpy_random.get_state(legacy=True)
            out["numpy.random's global generator"] = (name, keys.tobytes(), *rest)
        except Exception as exc:  # noqa: BLE001 - a partly imported numpy: what it says, compared
            out["numpy.random's global generator"] = repr(exc)
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            out["torch's default generator"] = bytes(torch.random.get_rng_state().numpy())
        except Exception as exc:  # noqa: BLE001 - a partly imported torch
            out["torch's default generator"] = repr(exc)
    return out


def _drawn_from(before: dict[str, object]) -> list[str]:
    """The generators of :func:`_global_generators` whose state differs from ``before``."""
    now = _global_generators()
    return [
        f"{name} (drawn from: make a random.Random(seed) inside the model)"
        for name, v in before.items()
        if now.get(name) != v
    ]


def changed_state(before: dict[str, object], after: dict[str, object]) -> list[str]:
    """Names whose fingerprint differs (or that appeared or vanished)."""
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


class Monitor:
    """What a run is doing, for progress displays (``capproof prove`` on a terminal): override any.

    ``planned(total)`` once, before anything is decided; ``started(kind, ident)`` when an
    obligation or contract starts being decided (kind ``"obligation"``/``"contract"``);
    ``finished(result)`` as each result arrives, in completion order (the ``progress`` callback of
    :func:`run` gets them in declared order).
    """

    def planned(self, total: int) -> None:
        pass

    def started(self, kind: str, ident: str) -> None:
        pass

    def finished(self, result: ObligationResult | ContractResult) -> None:
        pass


def run(
    paths: Iterable[str] = ("spec",),
    options: Options | None = None,
    keyword: str | None = None,
    progress: Callable[[ObligationResult | ContractResult], None] | None = None,
    monitor: Monitor | None = None,
) -> RunResult:
    """Load ``paths``, then prove every obligation and check every contract selected by ``keyword``."""
    items, errors = load(list(paths), keyword)
    return run_items(items, errors, options, progress, monitor)


def run_items(
    items: Iterable[Obligation | Contract],
    errors: Iterable[LoadError] = (),
    options: Options | None = None,
    progress: Callable[[ObligationResult | ContractResult], None] | None = None,
    monitor: Monitor | None = None,
) -> RunResult:
    """Prove ``items`` (loaded obligations and contracts, e.g. by :func:`capproof.loader.load`);
    ``errors`` (files that did not load) become error results. Pins naming no parameter of the
    obligations are usage errors and nothing runs."""
    options = options or Options()
    monitor = monitor or Monitor()
    items, errors = list(items), list(errors)
    result = RunResult()
    for err in errors:
        r = _load_error_result(err)
        result.obligations.append(r)
        if progress:
            progress(r)

    obligations = [it for it in items if isinstance(it, Obligation)]
    contracts = [it for it in items if isinstance(it, Contract)] if options.contracts else []
    known = {name for ob in obligations for name in ob.domain}
    for name in options.pins:
        if name not in known:
            result.usage_errors.append(f"--set {name}: no selected obligation has a parameter named {name!r}")
    if result.usage_errors:  # a mistyped pin: nothing runs (the run would not be the one asked for)
        return result
    if not obligations and not contracts and not errors:
        result.usage_errors.append("nothing selected: no obligation or contract matches the paths and -k")
    work: list[tuple[str, Obligation | Contract]] = [("obligation", ob) for ob in obligations]
    work += [("contract", c) for c in contracts]
    monitor.planned(len(work))
    if not options.isolate:
        outcomes = []
        for kind, it in work:
            monitor.started(kind, it.id)
            outcome = _decide(kind, it, options)
            monitor.finished(outcome)
            outcomes.append(outcome)
            if progress:
                progress(outcome)
    else:
        # Answered here: items with declaration problems (no process needed) and cached contracts.
        done: dict[int, ObligationResult | ContractResult] = {}
        for i, (kind, it) in enumerate(work):
            if getattr(it, "problems", None):
                done[i] = prove_obligation(it, options)  # type: ignore[arg-type]
            elif kind == "contract" and options.crosshair_cache:
                cached = check_contract(it, options, cache_only=True)  # type: ignore[arg-type]
                if cached is not None:
                    done[i] = cached
        # the project modules each item can reach: what its process fingerprints, and what keys its verdict
        todo = [i for i in range(len(work)) if i not in done]
        reach_of = dict(zip(todo, reaches([item_roots(work[i][1]) for i in todo])))
        keys: dict[int, str] = {}
        if options.verdict_cache:  # answered from the verdict cache: nothing it can reach changed
            from . import verdict_cache

            obligations_todo = [i for i in todo if work[i][0] == "obligation"]
            found = verdict_cache.obligation_keys(
                [work[i][1] for i in obligations_todo],
                options,
                [reach_of[i] for i in obligations_todo],
                _project_modules(),
            )
            for i, key in zip(obligations_todo, found):
                hit = verdict_cache.load(key) if key else None
                if hit is not None:
                    done[i] = hit
                elif key:
                    keys[i] = key
        for i in sorted(done):
            monitor.finished(done[i])
        previous = _previous_seconds()
        order = sorted(
            (i for i in range(len(work)) if i not in done), key=lambda i: -_estimate(work[i][0], work[i][1], previous)
        )
        outcomes = _run_isolated(work, order, done, options, progress, monitor, previous, reach_of)
        if keys:
            from . import verdict_cache

            for i, key in keys.items():
                verdict_cache.store(key, outcomes[i])
    for outcome in outcomes:
        (result.contracts if isinstance(outcome, ContractResult) else result.obligations).append(outcome)
    return result


def prove(obligation: Obligation, options: Options | None = None) -> ObligationResult:
    """Prove one loaded obligation as ``capproof prove`` does (the Python API's ``capproof.prove``):
    in a worker process forked from this one, with its time limit and module-state checks (state
    the model changes while deciding it, or cannot be fingerprinted, makes the verdict an
    ``error``; nothing it changes reaches this process). With ``options.isolate`` off: in this
    process, unchecked (:func:`capproof.prover.prove_obligation`). Never raises: a pin naming no
    parameter of the obligation is left to :func:`~capproof.prover.prove_obligation` (in this
    process: nothing of the model runs)."""
    result = run_items([obligation], options=options)
    if result.usage_errors:
        return prove_obligation(obligation, options)
    return result.obligations[0]


def run_tasks(
    obligations: list[Obligation],
    task: Task,
    options: Options,
    progress: Callable[[Any], None] | None = None,
    reach_of: list[frozenset[str] | None] | None = None,
) -> list[Any]:
    """``task.decide`` of each of ``obligations`` in the runner's worker processes (results in the
    given order): the processes, batches, time limit (``options.timeout``), fresh Z3 context and
    module-state checks of :func:`run_items`, ``options.jobs`` at a time; the items of positive
    ``task.weight`` first, heaviest first, a process each, then the others in the given order. ``reach_of``: the project modules each can
    reach (:func:`reaches`; computed when None). Without ``fork`` (Windows), or with
    ``options.isolate`` off: in this process, in order, without a time limit."""
    import multiprocessing

    work: list[tuple[str, Obligation | Contract]] = [(task.kind, ob) for ob in obligations]
    if not options.isolate or "fork" not in multiprocessing.get_all_start_methods():
        outcomes = []
        for ob in obligations:
            outcomes.append(task.decide(ob))
            if progress:
                progress(outcomes[-1])
        return outcomes
    if reach_of is None:
        reach_of = reaches([item_roots(ob) for ob in obligations])
    order = _task_order(obligations, task)
    return _run_isolated(work, order, {}, options, progress, None, {}, dict(enumerate(reach_of)), task)


def _task_order(obligations: list[Obligation], task: Task) -> list[int]:
    """Indices of ``obligations``: those of positive ``task.weight`` heaviest first, then the others in order."""
    weights = [task.weight(ob) for ob in obligations]
    heavy = sorted((i for i, w in enumerate(weights) if w > 0), key=lambda i: -weights[i])
    return heavy + [i for i, w in enumerate(weights) if w <= 0]


def obligation_error(ob: Obligation, message: str) -> ObligationResult:
    """The ``error`` result of ``ob`` with ``message`` (an item that raised, ran over time or broke its process)."""
    return _error_outcome("obligation", ob, message)


def _error_outcome(kind: str, item: Obligation | Contract, message: str, task: Task | None = None):
    if task is not None and kind == task.kind:
        return task.error(item, message)  # type: ignore[arg-type]
    if kind == "obligation":
        ob: Obligation = item  # type: ignore[assignment]
        return ObligationResult(
            id=ob.id,
            case=ob.case,
            sources=ob.sources,
            expect=ob.expect,
            verdict=Verdict.ERROR,
            message=message,
            assumptions=list(ob.assumptions),
            doc=ob.doc,
            file=ob.file,
            line=ob.line,
        )
    return ContractResult(
        id=item.id,
        expect=item.expect,
        verdict=Verdict.ERROR,
        message=message,
        case=item.case,
        sources=item.sources,
        file=item.file,
        line=item.line,
    )


def _checked_fresh(kind: str, task: Task | None) -> bool:
    """Whether an item of ``kind`` has its verdict checked by a :class:`_FreshCopy`: an obligation
    proved (by ``capproof prove``, or a ``task`` of that kind with ``options``)."""
    own = task is not None and kind == task.kind
    return kind == "obligation" and (not own or task.options is not None)  # type: ignore[union-attr]


def _decide_isolated(
    kind: str,
    item: Obligation | Contract,
    options: Options,
    before: dict[str, dict[str, object]] | None = None,
    modules: frozenset[str] | None = None,
    loaded: set[str] | None = None,
    later: frozenset[str] | None | bool = False,
    task: Task | None = None,
    fresh: tuple[_FreshCopy, int] | None = None,
):
    """Decide one item in this (child) process (``task``: with ``task.decide`` when it is of its kind): a fresh Z3 context, and the data of the project
    modules it can reach (``modules``, :func:`reaches`; None: all) checked, with the project modules
    imported since the process started (``loaded``: the module names then). ``before``: the
    fingerprint (:func:`module_data`) the forking parent took of the state this process starts
    from; None: taken here, and ``modules`` computed here. ``later``: the modules the items after it
    in this process can reach (None: all; False: no item after it). Returns ``(outcome, clean)``:
    ``clean`` is False when what the later items can reach changed too, or holds a value that
    cannot be fingerprinted (the process then stops: fail closed). ``fresh``: the copy of the
    process (:class:`_FreshCopy`) and the item's index there, which checks an obligation's verdict
    against the model's first evaluation; None: a copy is forked here for it."""
    import z3

    if kind != "contract":  # its Z3 terms, rlimit use and unsat cores do not depend on what ran before
        z3.z3._main_ctx = None  # (contracts keep it: CrossHair, imported by the parent, holds Z3 objects)
    if before is None:
        _import_what_the_second_opinion_seeds()
        modules = reaches([item_roots(item)])[0]
        before = module_data(modules)
        loaded = set(sys.modules)
    # (first, before this process evaluates the model: see _FreshCopy)
    own_copy = None
    if fresh is None and _checked_fresh(kind, task):
        own_copy = _FreshCopy.start({0: item}, options, task)  # type: ignore[dict-item]
        fresh = (own_copy, 0) if own_copy is not None else None
    deciding = os.getpid()
    drawn = _global_generators() if kind != "contract" else None
    held_open = _files_held_open()
    try:
        with _FilesRead() as read:
            if task is not None and kind == task.kind:
                outcome = task.decide(item)  # type: ignore[arg-type]
            elif kind == "obligation":
                outcome = prove_obligation(item, options)  # type: ignore[arg-type]
            else:
                outcome = check_contract(item, options)  # type: ignore[arg-type]
    except BaseException:
        if own_copy is not None and os.getpid() == deciding:
            own_copy.close()  # nothing to check: the copy exits
        raise
    read.mark(outcome)
    if fresh is not None and os.getpid() == deciding:  # (not in a copy of this process the model forked)
        fresh[0].check(fresh[1], outcome)
    if own_copy is not None and os.getpid() == deciding:
        own_copy.close()
    new = [m for m in _project_modules() if loaded is not None and m not in loaded]
    mine = None if modules is None else {*modules, *new}
    watched = None if mine is None or later is None else {*mine, *(later or ())}
    after = module_data(watched)
    changed = changed_state(_flat(before, mine), _flat(after, mine))
    # a value no fingerprint reads (a generator) may have changed between the model's own
    # evaluations (the int probe's, the symbolic runs'): fail closed
    changed += [
        f"{name} (cannot be fingerprinted: a generator, a socket?)" for name in opaque_state(_flat(after, mine))
    ]
    if drawn is not None:
        changed += _drawn_from(drawn)
    changed += _written_while_open(held_open)
    if changed and not _is_error(outcome):
        _mark_error(
            outcome,
            f"module state changed while deciding it ({', '.join(changed[:3])}): a verdict that depends on "
            "what ran before (-k, --jobs, case order) is no verdict; keep models and claims free of global state",
        )
    clean = True
    if later is not False:
        rest = _flat(after, None if later is None else {*later, *new})
        clean = not changed_state(_flat(before, None if later is None else {*later, *new}), rest) and not opaque_state(
            rest
        )
    return outcome, clean


def _child(
    conn,
    batch: list[tuple[int, str, Any, frozenset[str] | None]],
    options: Options,
    before: dict[str, dict[str, object]] | None = None,
    task: Task | None = None,
    forked: frozenset[int] = frozenset(),
) -> None:
    """Entry point of a process deciding the items of ``batch`` (``[(index, kind, item, modules),
    ...]``; an item is ``(file, id)`` under ``spawn``; ``modules``: the project modules it can reach,
    :func:`reaches`) one after another: for each it sends ``("start", index)``, then ``("done",
    index, result)`` (a one-line error result when deciding raised).

    It stops after an item whose verdict is ``error``: that item may have left module state or Z3
    behind (a changed module state is an error verdict, and so is an exception), so the items after
    it are not decided here; the parent gives each of them a fresh process. Before every item the
    module state is the ``before`` the parent took (checked after each), and each obligation gets a
    fresh Z3 context: what the process decided before cannot reach it. It also stops after an item
    that changed data the items after it can reach, or left there a value that cannot be
    fingerprinted (fail closed), or left anything else behind (:func:`_leftovers`: a class
    attribute, ``os.environ``, a thread, a timer, a patched capproof function, Z3's global
    parameters). A copy of this process forked while deciding an item (by the model) exits without
    sending anything. An item in ``forked`` (indices) is decided in a fork of this process
    (:func:`_decide_in_fork`), which leaves nothing behind here."""
    pid = os.getpid()
    loaded = set(sys.modules)
    forked = frozenset(forked) & {index for index, *_ in batch} if len(batch) > 1 else frozenset()
    shared = any(index not in forked for index, *_ in batch[:-1])  # (an item decided here before another)
    z3_params = _count_z3_param_calls() if shared else [0]
    classes = {id(c): c for *_, m in batch for c in getattr(m, "classes", ())}.values()
    from .guard import installed_tables

    installed_tables()  # (the guard's cache, rebound when sys.modules changed size: not inside the first item)
    reached = None if any(m is None for *_, m in batch) else frozenset().union(*(m for *_, m in batch))
    start = _leftovers(z3_params, classes, reached) if shared else None
    # one copy of this process, forked before any item, checks each obligation's verdict (_FreshCopy)
    checked = {
        index: payload
        for index, kind, payload, _ in batch
        if not isinstance(payload, tuple) and _checked_fresh(kind, task)
    }
    copy = _FreshCopy.start(checked, options, task) if checked else None
    for k, (index, kind, payload, modules) in enumerate(batch):
        if copy is not None and not copy.alive():
            # (a model ended it from one of its forks: a new one, from the state this item starts from)
            copy.close()
            copy = _FreshCopy.start(checked, options, task)
        fresh = (copy, index) if copy is not None and index in checked else None
        conn.send(("start", index))
        if index in forked and not isinstance(payload, tuple):
            # a fresh copy of this process decides it: nothing it changes (a library's registry, an
            # object no fingerprint reads whole) reaches the next item
            code = _decide_in_fork(conn, index, kind, payload, options, before, modules, loaded, task, fresh)
            if code != 0:  # it ended without its verdict: this process ends the same way (the
                os._exit(code or 1)  # parent charges the item, the rest get processes of their own)
            continue
        clean = True
        rest = [m for *_, m in batch[k + 1 :]]
        later: frozenset[str] | None | bool = (
            False if not rest else (None if any(m is None for m in rest) else frozenset().union(*rest))
        )
        try:
            if isinstance(payload, tuple):  # spawn: reload the spec file here
                from .loader import ensure_project_on_path

                ensure_project_on_path()
                file, ident = payload
                items = load_file(file)
                if isinstance(items, LoadError):
                    conn.send(("done", index, _load_error_result(items)))
                    break
                payload = next(it for it in items if it.id == ident)
                outcome, clean = _decide_isolated(kind, payload, options, later=later, task=task)
            else:
                pre = start if start is not None else _leftovers(z3_params, classes, reached)
                outcome, clean = _decide_isolated(kind, payload, options, before, modules, loaded, later, task, fresh)
                now = _leftovers(z3_params, classes, reached)
                _mark_changed(outcome, changed_while_deciding(pre, now, modules))
        except BaseException as exc:  # noqa: BLE001 - reported as the item's error
            from .encode import describe_exception

            outcome = _error_outcome(
                kind, payload if not isinstance(payload, tuple) else _Stub(*payload), describe_exception(exc), task
            )  # type: ignore[arg-type]
        if os.getpid() != pid:  # a fork made by the model: only the process the parent started answers
            os._exit(0)
        conn.send(("done", index, outcome))
        if (
            _is_error(outcome)
            or not clean
            or (start is not None and index != batch[-1][0] and _left_behind(start, now))
        ):
            break
    if copy is not None:
        copy.close()
    conn.close()


def _can_fork_items() -> bool:
    """Whether this process can decide each item of its batch in a fork of its own that dies with it
    (Linux: ``os.fork`` and ``prctl(PR_SET_PDEATHSIG)``, so a time limit that kills this process
    kills the item's too)."""
    if not hasattr(os, "fork") or not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        return hasattr(ctypes.CDLL(None), "prctl")
    except (ImportError, OSError):
        return False


def _decide_in_fork(conn, index, kind, item, options, before, modules, loaded, task, fresh=None) -> int:
    """Decide ``item`` in a fork of this process, which sends ``("done", index, outcome)`` on
    ``conn`` and exits; returns its exit status (0: it sent its verdict). ``fresh``: as for
    :func:`_decide_isolated`."""
    import ctypes
    import signal

    parent = os.getpid()
    child = os.fork()
    if child == 0:
        code = 1
        try:
            ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: killed when this process is
            if os.getppid() != parent:
                os._exit(1)
            me = os.getpid()
            try:
                classes = getattr(modules, "classes", ())
                pre = _leftovers([0], classes, modules)
                outcome, _ = _decide_isolated(kind, item, options, before, modules, loaded, False, task, fresh)
                _mark_changed(outcome, changed_while_deciding(pre, _leftovers([0], classes, modules), modules))
            except BaseException as exc:  # noqa: BLE001 - reported as the item's error
                from .encode import describe_exception

                outcome = _error_outcome(kind, item, describe_exception(exc), task)
            if os.getpid() != me:  # a fork made by the model: only this process answers
                os._exit(0)
            conn.send(("done", index, outcome))
            code = 0
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except BaseException:  # noqa: BLE001, S110 - a stream the model closed
                    pass
            os._exit(code)
    _, status = os.waitpid(child, 0)
    return os.waitstatus_to_exitcode(status)


class _FreshCopy:
    """A copy of an item process forked before it decides anything, which waits: after each
    item's verdict, a fork of the copy evaluates the model again starting from the state the
    process started from (the runner's parent's, before any item of the batch ran), so that the
    model's FIRST evaluation in a process is what that verdict is checked against.

    Deciding evaluates a model many times in one process (the int probe first, then the symbolic
    runs, the replays, the second opinion); an evaluation can leave state behind that no
    fingerprint reads (a logger created lazily, ``decimal``'s context, ``sys.setswitchinterval``,
    an ``atexit`` callback, a registry inside a library or in C), so the symbolic run a proof
    rests on may see what an earlier evaluation left, where a fresh interpreter's first
    evaluation would not. Rather than list such state (every C module keeps some), the verdict is
    checked in another ORDER from the same starting state:

    - ``proved``/``vacuous``: decided again in the copy with the symbolic run first (no int
      probe, no second opinion): any other verdict (a counterexample that the first evaluation
      shows, an error, unknown) makes it an ``error``;
    - ``counterexample``: its point is evaluated on ints as the FIRST evaluation of a fresh copy,
      padded and alone (one copy each): the claim must fail there, every assumption holding.

    One copy serves every item of a batch (:meth:`check` forks it once per verdict): an item after
    the first starts from the state the items before it left, which the runner checks as far as
    fingerprints go; the copy starts from the state before all of them, so what they left where no
    fingerprint reads is not in the state the verdict is checked against either. Only the process
    that started deciding an item asks (a copy of it that the model forked does not).

    Linux only (``fork`` and ``PR_SET_PDEATHSIG``: the copy dies with the item's process, and its
    forks with it, so the item's time limit covers them); elsewhere :meth:`start` returns None and
    nothing is checked."""

    def __init__(self, conn, pid: int):
        self.conn, self.pid = conn, pid

    @classmethod
    def start(cls, items: dict[int, Obligation], options: Options, task: Task | None = None) -> "_FreshCopy | None":
        """Fork the copy; it holds ``items`` (by index), ``options`` and ``task`` (an item of
        ``task.kind`` is proved under ``task.options(item)``): only indices and verdicts cross the pipe."""
        if not _can_fork_items():
            return None
        mine, theirs = multiprocessing.Pipe()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the copy: serves the checks until the pipe closes, exits (never returns)
            code = 1
            try:
                _die_with_parent()
                if os.getppid() == parent:
                    mine.close()
                    cls._serve(theirs, items, options, task)
                    code = 0
            except BaseException:  # noqa: BLE001, S110 - the item's process reads a missing answer as a failed check
                pass
            finally:
                os._exit(code)
        theirs.close()
        return cls(mine, pid)

    @classmethod
    def _serve(cls, conn, items: dict[int, Obligation], options: Options, task: Task | None) -> None:
        """In the copy: for each ``(index, verdict, params)`` received, fork, check there, and send
        the answer (:meth:`_check`; the fork's state is this process's, never changed by a check)."""
        me = os.getpid()
        while True:
            try:
                job = conn.recv()
            except (EOFError, OSError):
                return
            if job is None:
                return
            index, verdict, params = job
            item = items[index]
            proves = task is not None and task.kind == "obligation" and task.options is not None
            opts = task.options(item) if proves else options  # type: ignore[union-attr, misc]
            answers, into = multiprocessing.Pipe(duplex=False)
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    _die_with_parent()
                    if os.getppid() == me:
                        answers.close()
                        import z3

                        z3.z3._main_ctx = None  # (as the item's process: a fresh Z3 context)
                        found = cls._check(item, opts, verdict, params)
                        if os.getppid() == me:  # (not a fork the model made)
                            into.send(("found", found))
                        code = 0
                except BaseException:  # noqa: BLE001, S110 - no answer: a failed check
                    pass
                finally:
                    os._exit(code)
            into.close()
            try:
                kind, found = answers.recv()
            except (EOFError, OSError) as exc:
                found = f"the fresh copy gave no answer ({exc!r})"
            answers.close()
            os.waitpid(pid, 0)
            conn.send(found)

    @staticmethod
    def _check(item: Obligation, options: Options, verdict: str, params: dict | None) -> str | None:
        """In the copy: None if the first evaluation agrees with ``verdict``; else what it found."""
        import dataclasses

        if verdict == Verdict.COUNTEREXAMPLE.value:
            vectors = any(isinstance(v, (list, tuple)) for v in (params or {}).values())
            for padding in (True, False) if vectors else (True,):
                code = _first_evaluation_fails(item, params or {}, padding)
                if code != 0:
                    how = "padded" if padding else "alone"
                    return (
                        f"the counterexample {params} does not fail on the model's first evaluation in a fresh "
                        f"process ({how}: "
                        + {1: "the claim holds there", 2: "an assumption is false there"}.get(code, "it raised there")
                        + ")"
                    )
            return None
        again = prove_obligation(
            item,
            dataclasses.replace(
                options,
                probe=False,
                second_opinion=None,
                verdict_only=True,
                minimize=False,
                density="off",
                verdict_cache=False,
                smt2_dir=None,
                cross_check=None,
            ),
        )
        if again.verdict.value == verdict:
            return None
        shown = f" at {again.counterexample.params}" if again.counterexample is not None else ""
        return f"decided again with the symbolic run as the model's first evaluation: {again.verdict.value}{shown}"

    def check(self, index: int, outcome) -> None:
        """Have a fork of the copy check ``outcome``'s verdict for item ``index`` (nothing to check
        for another verdict), and make ``outcome`` an error when the first evaluation disagrees (or
        the copy gave no answer)."""
        verdict = getattr(outcome, "verdict", None)
        if not (
            verdict in (Verdict.PROVED, Verdict.VACUOUS)
            or (verdict is Verdict.COUNTEREXAMPLE and getattr(outcome, "counterexample", None) is not None)
        ):
            return
        params = outcome.counterexample.params if verdict is Verdict.COUNTEREXAMPLE else None
        try:
            self.conn.send((index, verdict.value, params))
            found = self.conn.recv()
        except (EOFError, OSError) as exc:
            found = f"the fresh copy gave no answer ({exc!r})"
        except Exception as exc:  # noqa: BLE001 - an answer that does not read (the pipe written to by another)
            found = f"the fresh copy's answer does not read ({exc!r})"
        if found is not None and not _is_error(outcome):
            _mark_error(
                outcome,
                f"{verdict.value} in this process, but {found}: the model keeps "
                "state between its evaluations that the runner cannot read (a registry filled through a library's "
                "API, process state set through C functions); keep models free of it",
            )

    def alive(self) -> bool:
        """Whether the copy still runs (in the process that started it)."""
        try:
            return os.waitpid(self.pid, os.WNOHANG) == (0, 0)
        except ChildProcessError:
            return False

    def close(self) -> None:
        """End the copy (in the process that started it, after its last item) and reap it."""
        try:
            self.conn.send(None)
        except (OSError, ValueError):
            pass
        self.conn.close()
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass


def _die_with_parent() -> None:
    """``prctl(PR_SET_PDEATHSIG, SIGKILL)``: this (forked) process is killed when its parent ends."""
    import ctypes
    import signal

    ctypes.CDLL(None).prctl(1, signal.SIGKILL)


def _first_evaluation_fails(item: Obligation, params: dict, padding: bool) -> int:
    """Evaluate ``item`` at ``params`` on ints as the first evaluation of a fresh fork of this
    process: 0 when the claim fails with every assumption holding; 1 when the claim holds, 2 when
    an assumption is false, 3 when it raised (or the fork ended otherwise)."""
    from .encode import replay

    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            holds, _, failed = replay(item, params, padding=padding)
            code = 2 if failed else (1 if holds else 0)
        except BaseException:  # noqa: BLE001, S110 - a point where the model raises
            pass
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


@dataclass
class _Stub:
    file: str
    id: str
    expect: str = "proved"
    case: str | None = None
    sources: list = field(default_factory=list)
    line: int = 0


#: Obligations expected to take at most this many seconds (the previous run's time, else the size
#: estimate) are decided up to :data:`BATCH_ITEMS` to a process, each still from a fresh Z3
#: context and the parent's module state (checked after each). Most of spec/'s obligations are
#: pinned scalar claims decided in milliseconds, where a process each cost more than deciding
#: them: spec/vllm_0_33_buffers.py's 334 took 22-25 s of CPU, 9 s in one process
#: (docs/performance.md). Contracts and longer obligations keep a process each.
BATCH_SECONDS = 0.25
BATCH_ITEMS = 12


def _units(
    work: list[tuple[str, Obligation | Contract]],
    order: list[int],
    previous: dict[str, float],
    batch: bool,
    alone: set[int] = frozenset(),
    task: Task | None = None,
) -> list[list[int]]:  # type: ignore[assignment]
    """``order`` (longest first) cut into the lists of indices each process decides: a contract, an
    obligation estimated over :data:`BATCH_SECONDS`, declared outside the working directory or in
    ``alone`` (it can reach data that cannot be fingerprinted) alone, the others :data:`BATCH_ITEMS`
    to a process in that order (all alone when not ``batch``); a ``task``'s item alone when its
    ``task.weight`` is positive, else batched."""
    units: list[list[int]] = []
    light: list[int] = []
    root = os.path.abspath(os.getcwd()) + os.sep
    for i in order:
        kind, it = work[i]
        # (a spec file outside the working directory: its module state is not fingerprinted, :func:`module_state`)
        if task is not None and kind == task.kind:
            light_item = task.weight(it) <= 0  # type: ignore[arg-type]
        else:
            light_item = kind == "obligation" and _estimate(kind, it, previous) <= BATCH_SECONDS
        if batch and light_item and i not in alone and os.path.abspath(it.file).startswith(root):
            light.append(i)
        else:
            units.append([i])
    units += [light[k : k + BATCH_ITEMS] for k in range(0, len(light), BATCH_ITEMS)]
    return units


@dataclass
class _Running:
    """A process deciding ``left`` (indices in order; the first is being decided once ``started``;
    ``since``: when it started, or when the one before it finished)."""

    proc: Any
    left: list[int]
    since: float
    started: bool = False
    alone: bool = False  # launched for one item


def _run_isolated(
    work: list[tuple[str, Obligation | Contract]],
    order: list[int],
    done: dict[int, ObligationResult | ContractResult],
    options: Options,
    progress: Callable[[ObligationResult | ContractResult], None] | None,
    monitor: Monitor | None = None,
    previous: dict[str, float] | None = None,
    reach_of: dict[int, frozenset[str] | None] | None = None,
    task: Task | None = None,
):
    """Decide the items in worker processes (:func:`_units`: short obligations a few to a process),
    at most ``options.jobs`` processes at a time, each item within ``options.timeout`` seconds
    (then its process is killed: an ``error`` verdict). A process that dies without a result
    (``os._exit``, a crash in Z3) is an ``error`` verdict for the item it was deciding (none, when
    it was between items). The items after it in its process, and after an ``error`` verdict or an
    item that left anything behind there (:func:`_leftovers`), are each decided again in a process
    of their own; the other items still run.

    With the ``fork`` start method (Linux) each process starts from the loaded spec files, so one
    item's module state never reaches another's; elsewhere each process imports its spec file (and
    decides one item).
    """
    from multiprocessing.connection import wait

    monitor = monitor or Monitor()

    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    by_reference = ctx.get_start_method() == "fork"
    # a forked process starts from this process's module state: fingerprint it once here, not in
    # each process (nothing below changes it: this loop only starts processes and collects results)
    if order:  # (a run answered from the caches starts none)
        _import_what_the_second_opinion_seeds()
        # the installed code of the library files the items' processes compare code with (the
        # library-code check): read once here, not again in each forked process
        read_loaded_files()
    before = None
    alone: set[int] = set()
    forked: frozenset[int] = frozenset()
    if by_reference:
        # the project modules each item can reach: the only ones its process fingerprints for it
        todo = [i for i in range(len(work)) if i not in done]
        if reach_of is None:
            reach_of = dict(zip(todo, reaches([item_roots(work[i][1]) for i in todo])))
        found = [reach_of[i] for i in todo]
        before = module_data(None if any(r is None for r in found) else frozenset().union(*found))
        # fail closed: an item that can reach a value that cannot be fingerprinted (an object
        # holding a generator or a socket) is decided in a process of its own, so an in-place change
        # of it reaches no other item
        opaque = {m for m, held in before.items() if any(isinstance(v, Opaque) for v in held.values())}
        alone = {i for i, r in reach_of.items() if opaque and (r is None or r & opaque)}
        # and so is an item that can reach state outside the project's modules (a library's
        # registry, a lock) or reach modules by a computed name: each in a fork of a batch's
        # process (which itself never runs a model), or a process of its own
        alone |= {i for i, r in reach_of.items() if r is None or not getattr(r, "sealed", True)}
        if _can_fork_items():
            forked, alone = frozenset(alone), set()
    if order:
        from .guard import installed_tables

        # the guard's table of installed packages' containers (a path resolved per module): computed
        # once here, so each forked process starts with it (and with the resolved paths) rather
        # than computing it again
        installed_tables()
    if by_reference:  # the objects loaded so far stay out of the garbage collector's passes, which in each
        gc.freeze()  # forked process would touch (copy) every page of them: less system time per process
    outcomes: list = [done.get(i) for i in range(len(work))]
    try:
        pending = _units(
            work, order, previous or {}, by_reference, alone, task
        )  # longest first; results still reported in declared order
        running: dict[Any, _Running] = {}
        shown = 0

        def finish(i: int, outcome) -> None:
            outcomes[i] = outcome
            monitor.finished(outcome)

        def stop(conn, run: _Running, outcome_of_current) -> None:
            """``conn``'s process is over: the item it was deciding gets ``outcome_of_current(kind, item)``,
            the items it had not started go back to ``pending``, one to a process."""
            del running[conn]
            conn.close()
            if run.left and (run.started or run.alone):  # (a process of its own: charged, never re-queued)
                i = run.left.pop(0)
                finish(i, outcome_of_current(*work[i]))
            pending[:0] = [[i] for i in run.left]

        while pending or running:
            while pending and len(running) < max(1, options.jobs):
                unit = pending.pop(0)
                recv, send = ctx.Pipe(duplex=False)
                batch = [
                    (
                        i,
                        work[i][0],
                        work[i][1] if by_reference else (_item_file(work[i][1]), work[i][1].id),
                        (reach_of or {}).get(i),
                    )
                    for i in unit
                ]
                proc = ctx.Process(target=_child, args=(send, batch, options, before, task, forked), daemon=True)
                proc.start()
                send.close()
                running[recv] = _Running(proc, list(unit), time.monotonic(), alone=len(unit) == 1)
            if running:
                now = time.monotonic()
                deadline = min(run.since for run in running.values()) + options.timeout
                ready = wait(list(running), timeout=max(0.0, deadline - now))
                for conn in ready:
                    run = running[conn]
                    try:
                        message = conn.recv()
                    except (EOFError, OSError):
                        run.proc.join(5)
                        code = run.proc.exitcode
                        stop(
                            conn,
                            run,
                            lambda kind, it: _error_outcome(
                                kind,
                                it,
                                (
                                    f"the process deciding it exited with code {code} before giving a verdict "
                                    "(os._exit, sys.exit or a crash in the model or the solver)"
                                ),
                                task,
                            ),
                        )
                        if run.proc.is_alive():
                            run.proc.kill()
                        run.proc.join()
                        continue
                    if message[0] == "start":
                        run.started, run.since = True, time.monotonic()
                        kind, it = work[message[1]]
                        monitor.started(kind, it.id)
                        continue
                    _, i, outcome = message
                    if i not in run.left:  # (not sent by the process this loop started)
                        continue
                    run.left.remove(i)
                    run.started, run.since = False, time.monotonic()
                    finish(i, outcome)
                    if not run.left:
                        del running[conn]
                        conn.close()
                        run.proc.join(5)
                        if run.proc.is_alive():
                            run.proc.kill()
                            run.proc.join()
                now = time.monotonic()
                for conn, run in list(running.items()):
                    if now - run.since >= options.timeout:
                        run.proc.kill()
                        run.proc.join()
                        # the item it was deciding is the one over time; a process between the items of a
                        # batch was deciding none: they are not charged, they get processes of their own
                        stop(
                            conn,
                            run,
                            lambda kind, it: _error_outcome(
                                kind,
                                it,
                                (
                                    f"time limit: no verdict within {options.timeout:g} s (stopped; an endless loop in the model? "
                                    "raise --timeout if it is only slow)"
                                ),
                                task,
                            ),
                        )
            while shown < len(outcomes) and outcomes[shown] is not None:
                if progress:
                    progress(outcomes[shown])
                shown += 1
        for outcome in outcomes[shown:]:  # (every item answered before any process: from the caches)
            if progress and outcome is not None:
                progress(outcome)
    finally:
        if by_reference:
            gc.unfreeze()
    return outcomes


def _item_file(item: Obligation | Contract) -> str:
    return item.file if os.path.exists(item.file) else os.path.abspath(item.file)
