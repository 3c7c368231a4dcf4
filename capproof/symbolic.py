"""Symbolic integers with Python's integer semantics, backed by Z3 ``Int`` terms.

``SymInt`` behaves like ``int`` wherever it can: ``+ - *``, floor ``//`` and ``%`` with Python's
signs (not SMT-LIB's Euclidean ones), unary ``-``, ``abs``, comparisons. Comparisons give a
``SymBool``. Anything that would need a concrete value is an error naming the model line:

- ``if``/``bool()``/``and``/``or`` on a ``SymBool`` -> :class:`SymbolicBranchError`, except
  inside :func:`explore`, where a branch *forks*: the function is re-executed once per feasible
  path, each branch point recording its condition, the direction taken and the model line
- ``int()``, indexing, ``range()``, ``math.gcd`` on a ``SymInt`` -> :class:`NotConcreteError`
- ``/`` or a float operand -> :class:`RealArithmeticError`

A division whose divisor is symbolic is recorded in the active :class:`Trace` so the prover can
check that the divisor is never zero under the obligation's assumptions; a divisor that may be
zero is reported (:class:`DivisorMayBeZero`), never modelled away.
"""

from __future__ import annotations

import _thread
import collections
import ctypes
import functools
import operator
import os
import sys
import threading
import types
from dataclasses import dataclass, field
from typing import NoReturn, Union

import z3

from .errors import NotAnIntegerError, NotConcreteError, RealArithmeticError, SymbolicBranchError, caller_location
from .provenance import genuine, library_named, trusted_filename

__all__ = [
    "SymInt",
    "SymBool",
    "Trace",
    "tracing",
    "to_z3_int",
    "to_z3_bool",
    "is_symbolic",
    "explore",
    "Exploration",
    "Path",
    "DEFAULT_FORK_BUDGET",
    "uninterpreted_constants",
    "fresh_z3_context",
]


class fresh_z3_context:
    """``with fresh_z3_context():`` runs the block with a fresh Z3 main context and restores the
    caller's afterwards.

    Z3's answers, models and unsat cores depend on the terms and queries made before in a context,
    so an obligation decided from a fresh one gives the same result whatever this process did
    before (any ``--jobs``); restoring the caller's context keeps the terms it holds usable. A Z3
    object the block returns keeps its own context alive. A class, not a generator under
    ``contextlib.contextmanager``: entered once per obligation before the int probe, whose first
    counterexample is timed in CPU microseconds: the generator's machinery is four more functions
    run cold there, and ~1 us more per use even warm (1.3 vs 0.26 us, timeit,
    docs/performance.md)."""

    __slots__ = ("previous",)

    def __enter__(self) -> None:
        self.previous = z3.z3._main_ctx
        z3.z3._main_ctx = None

    def __exit__(self, *exc: object) -> None:
        z3.z3._main_ctx = self.previous


def uninterpreted_constants(exprs: list[z3.ExprRef]) -> dict[str, z3.FuncDeclRef]:
    """The uninterpreted constants (the variables) under ``exprs``, by name: one walk over the
    shared DAG (used by the SMT-LIB export's declarations and by the batch analyses).

    The walk reads the terms through Z3's C API (kind, arguments, declaration: accessors of live
    terms, which build nothing) without a z3py wrapper per node (the wrappers' reference
    counting was most of the walk); only a constant found is wrapped (``e.decl()``). The same
    depth-first order as the z3py walk (``stack.extend(e.children())``, last child first), so the
    same names in the same order. Terms with a node that is neither an application nor a numeral
    (a quantifier, a bound variable) are walked with z3py."""
    ctx = exprs[0].ctx if exprs else None
    if ctx is None or any(e.ctx is not ctx for e in exprs):
        return _uninterpreted_constants_z3py(exprs)
    c = ctx.ref()
    seen: set[int] = set()
    out: dict[str, z3.FuncDeclRef] = {}
    stack = [e.as_ast() for e in exprs]
    app, numeral, uninterpreted = z3.Z3_APP_AST, _NUMERAL_AST, z3.Z3_OP_UNINTERPRETED
    while stack:
        a = stack.pop()
        i = get_ast_id(c, a)
        if i in seen:
            continue
        seen.add(i)
        kind = get_ast_kind(c, a)
        if kind != app and kind != numeral:  # a quantifier or a bound variable: z3py's walk throughout
            return _uninterpreted_constants_z3py(exprs)
        t = to_app(c, a)
        n = get_app_num_args(c, t)
        if n == 0:
            d = get_app_decl(c, t)
            if get_decl_kind(c, d) == uninterpreted:
                decl = z3.FuncDeclRef(d, ctx)
                out[decl.name()] = decl
            continue
        stack.extend([get_app_arg(c, t, k) for k in range(n)])
    return out


def _uninterpreted_constants_z3py(exprs: list[z3.ExprRef]) -> dict[str, z3.FuncDeclRef]:
    """:func:`uninterpreted_constants` walked with z3py's wrappers (terms of several contexts, or
    under a quantifier)."""
    seen: set[int] = set()
    out: dict[str, z3.FuncDeclRef] = {}
    stack = list(exprs)
    while stack:
        e = stack.pop()
        if e.get_id() in seen:
            continue
        seen.add(e.get_id())
        if z3.is_const(e) and e.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            out[e.decl().name()] = e.decl()
        else:
            stack.extend(e.children())
    return out


@dataclass
class Trace:
    """Side conditions collected while a model runs on symbolic values."""

    divisors: list[tuple[z3.ArithRef, str]] = field(default_factory=list)
    #: capproof errors raised on symbolic values; kept even if the model catches them.
    misuse: list[str] = field(default_factory=list)
    #: valid facts of integer arithmetic about the divisions built (e.g. ``0 <= a // b <= a`` for
    #: ``a >= 0, b >= 1``). They hold for every value, so adding them never changes a verdict; they
    #: spare Z3 the integer reasoning it finds slow over many divisions (1024 per-expert roundings).
    lemmas: list[z3.BoolRef] = field(default_factory=list)
    #: conditions under which capproof's encoding of an operation is exact (``bit_length`` and
    #: symbolic shifts below 2**BIT_WIDTH, ``math.ceil(a / b)`` with ``|a| < 2**53`` where Python
    #: rounds ``a / b`` to a float first), with what and where: the prover checks each one under
    #: the assumptions, like a divisor; one that can fail is an error, never modelled away.
    side_conditions: list[tuple[z3.BoolRef, "LazyText"]] = field(default_factory=list)
    #: ``min_of``/``max_of`` results over a padded batch, by the Z3 id of the result term:
    #: ``(kind, result term, batch entries, length)`` (``kind`` "min" or "max", the entries as Z3
    #: terms, the length an int or a Z3 term). Lets capproof.normalise recognise
    #: ``min_of(v) == max_of(v)`` however Z3's simplifier folded the padding into the tree.
    extrema: dict[int, tuple] = field(default_factory=dict)
    #: values the model derives from the shared symbolic inputs alone, remembered across the cases
    #: of one obligation (``arith.round_up``, ``total``, ``max_of``, ``min_of``; None: not remembered), set by
    #: :func:`capproof.encode.evaluate` (:class:`capproof.encode.SharedInputs`)
    derived: dict | None = None


trace_state = threading.local()
_SYMBOLIC_FILE = os.path.abspath(__file__)

# whose isinstance() sees a SymBool as SymBool, not bool (capproof's and Z3's code)
_OWN_DIRS = (
    os.path.dirname(os.path.abspath(__file__)) + os.sep,
    os.path.dirname(os.path.abspath(z3.__file__)) + os.sep,
)


def trace_marks(trace: Trace) -> tuple:
    """How much ``trace`` holds, and how many branches the path being explored has taken: what a
    call may add (divisors, lemmas, side conditions, extrema, misuse, branches). Equal marks before
    and after a call: it added nothing, so its value is a function of its arguments alone (the
    memos of :func:`capproof.encode.evaluate`'s witnesses and :mod:`capproof.arith`'s derived values)."""
    explorer = getattr(trace_state, "explorer", None)
    return (
        len(trace.divisors),
        len(trace.lemmas),
        len(trace.side_conditions),
        len(trace.extrema),
        len(trace.misuse),
        len(explorer.decisions) if explorer is not None else 0,
    )


class tracing:
    """``with tracing() as trace:`` collects the symbolic divisors, lemmas, side conditions and
    misuse seen while the body runs in a fresh :class:`Trace` (the enclosing one restored after).
    A class, not a ``contextlib.contextmanager`` generator, for the int probe's sake (see
    :class:`fresh_z3_context`)."""

    __slots__ = ("previous", "watch", "watching", "outer_watch", "outer_run")

    def __init__(self, watch: bool = False) -> None:
        #: watch the model's frames for exceptions raised on symbolic values (a symbolic run)
        self.watch = watch

    def __enter__(self) -> Trace:
        trace = Trace()
        self.previous = getattr(trace_state, "trace", None)
        trace_state.trace = trace
        # the outermost trace watches the model's frames for exceptions Python's C code raised on
        # a symbolic value (``int.__eq__(x, 3)``, an ``__index__`` returning one): see _watch_call
        self.watching = self.watch and sys.gettrace() is None
        #: an enclosing symbolic run's watch is on: it must still be on when this one ends
        self.outer_watch = self.watch and sys.gettrace() is _watch_call
        if self.watching:
            _guard_modules()
            changed = machinery_changed()
            if changed:
                trace.misuse.append(
                    f"capproof's symbolic machinery was changed after import ({', '.join(changed[:3])}): "
                    "a spec or model that patches it decides nothing"
                )
            sys.settrace(_watch_call)
            threading.settrace(_watch_call)  # a thread the model starts is watched too
            self.outer_run = _WATCHED_RUN[0]
            _WATCHED_RUN[0] = _WatchedRun()
        _CURRENT[0] = trace
        return trace

    def __exit__(self, *exc: object) -> None:
        if _PENDING_REPRS:
            _settle_reprs(None)
        if (self.watching or self.outer_watch) and sys.gettrace() is not _watch_call:
            # switched off: a model's settrace, or Python's own when the watch failed at the recursion limit
            trace_state.trace.misuse.append(
                "the exception watch was switched off during the symbolic run (sys.settrace, or the "
                "recursion limit reached): what the model caught there is unknown"
            )
        run = _WATCHED_RUN[0]
        if run is not None and (self.watching or self.outer_watch) and run.forked():
            trace_state.trace.misuse.append(
                "a process forked during the symbolic run (past every audited call: ctypes, C code) "
                "decided on symbolic values: its decisions stayed in the child"
            )
        if self.watching:
            if sys.gettrace() is _watch_call:  # a model that set its own keeps it
                sys.settrace(None)
            threading.settrace(None)
            _WATCHED_RUN[0] = self.outer_run
            run.close()
        trace_state.trace = _CURRENT[0] = self.previous


#: the innermost active trace of the process: where a thread the model started (which has no
#: trace of its own) records misuse
_CURRENT: list = [None]


class _WatchedRun:
    """The watched symbolic run active in this process: the thread that runs it, the process's id
    and a pipe through which a forked child reports that it went on deciding the run (a fork no
    audit event or fork hook shows: ctypes' ``fork()``, C code). Its decisions stay in the child;
    the child writes to the pipe at its first symbolic decision or misuse, before it can pass
    on an answer, and the end of each trace inside the run reads the pipe (:meth:`forked`)."""

    __slots__ = ("thread", "pid", "read", "write", "reported", "heard")

    def __init__(self) -> None:
        self.thread = threading.get_ident()
        self.pid = os.getpid()
        self.read, self.write = os.pipe()
        os.set_blocking(self.read, False)
        self.reported = False  # (in a child: it has written to the pipe)
        self.heard = False  # (in the run's process: a child wrote to the pipe)

    def in_child(self) -> bool:
        """Whether this is a process forked from the run's: reported once through the pipe."""
        if os.getpid() == self.pid:
            return False
        if not self.reported:
            self.reported = True
            try:
                os.write(self.write, b"f")
            except OSError:  # (the model closed the descriptor: the run's end finds it closed)
                pass
        return True

    def forked(self) -> bool:
        """Whether a forked child has reported so far (or the pipe was tampered with: closed)."""
        if not self.heard:
            try:
                self.heard = bool(os.read(self.read, 1))
            except BlockingIOError:
                pass
            except OSError:  # closed or replaced by the model: fail closed
                self.heard = True
        return self.heard

    def close(self) -> None:
        for fd in (self.read, self.write):
            try:
                os.close(fd)
            except OSError:
                pass


#: the watched symbolic run active in this process (:class:`_WatchedRun`), or None
_WATCHED_RUN: list = [None]


def _watched() -> bool:
    """Whether code in this thread runs inside a watched symbolic run: the run's own thread and
    the threads started through ``threading`` during it carry the watch as their trace function;
    any other thread while a run is active (one ``_thread.start_new_thread`` started, a pool's
    worker started before the run) carries none and is treated as watched too."""
    if sys.gettrace() is _watch_call:
        return True
    run = _WATCHED_RUN[0]
    return run is not None and threading.get_ident() != run.thread


def _forked_child() -> bool:
    """Whether this process is a child forked during the watched run (reported to the run)."""
    run = _WATCHED_RUN[0]
    return run is not None and run.in_child()


def _before_fork() -> None:
    """``os.register_at_fork`` hook (os.fork, multiprocessing, subprocess's ``preexec_fn``): a
    fork the model makes during a watched symbolic run is misuse."""
    if _WATCHED_RUN[0] is not None and _from_model(sys._getframe(1)):
        _misuse_here(
            "the model forks the process in a symbolic run: a forked child's branch decisions, divisors "
            "and checks stay in the child"
        )


os.register_at_fork(before=_before_fork)


def _start_thread(function, args, kwargs=None, _start=_thread.start_new_thread):
    """``_thread.start_new_thread`` (also ``_thread.start_new`` and ``threading``'s own binding of
    it): a thread started during a watched symbolic run runs under the run's exception watch from
    its first frame, as ``threading`` does for its threads (Python 3.11 raises no audit event for
    a raw thread, and without the watch an ``except TypeError`` there would go unrecorded)."""
    if _WATCHED_RUN[0] is None:
        return _start(function, args) if kwargs is None else _start(function, args, kwargs)

    def watched(*a, **k):
        sys.settrace(_watch_call)
        return function(*a, **k)

    return _start(watched, args) if kwargs is None else _start(watched, args, kwargs)


# it stands for _thread's function wherever a model finds it (and names none of capproof's machinery)
_start_thread.__module__, _start_thread.__name__, _start_thread.__qualname__ = (
    "_thread",
    "start_new_thread",
    "start_new_thread",
)
_thread.start_new_thread = _thread.start_new = threading._start_new_thread = _start_thread  # type: ignore[attr-defined]


_MODEL_CODE: dict = {}


def _is_model_code(code) -> bool:
    """Whether ``code`` is a model's (outside capproof, Z3 and the standard library), cached."""
    known = _MODEL_CODE.get(code)
    if known is None:
        known = _MODEL_CODE[code] = not (library_named(code.co_filename) and genuine(code))
    return known


#: exceptions capproof raises on a symbolic value exactly where Python raises them on the int
#: (``ZeroDivisionError``, a negative shift count): the exception watch lets a model catch these
_PYTHON_RAISES: collections.deque = collections.deque(maxlen=64)


def _as_python(error: BaseException) -> BaseException:
    """``error``, raised by capproof's symbolic code as Python raises it on the int (not misuse)."""
    _PYTHON_RAISES.append(error)
    return error


def _raised_by_symbolic_code(error: BaseException, tb) -> bool:
    """Whether ``error`` started in capproof's symbolic machinery or Z3 (not as Python raises it
    on the int): a symbolic value's own method failing where an int's would not (``__init__``)."""
    while tb.tb_next is not None:
        tb = tb.tb_next
    name = os.path.abspath(trusted_filename(tb.tb_frame.f_code))
    if not (name == _SYMBOLIC_FILE or name.startswith(_OWN_DIRS[1])):
        return False
    return not any(e is error for e in _PYTHON_RAISES)


def _names_a_symbolic_class(error: BaseException) -> bool:
    """Whether ``error``'s arguments name capproof's symbolic classes (as C code formats a type's
    name: ``'SymInt' object has no attribute 'x'``)."""
    try:
        args = BaseException.__getattribute__(error, "args")
    except Exception:  # noqa: BLE001 - an exception without args: nothing named
        return False
    # plain strings only (a message holding the value's repr is a stand-in, read only by its
    # reader), and the type's name as C quotes it, not the repr ``SymInt(...)``
    return any(type(a) is str and ("'SymInt'" in a or "'SymBool'" in a) for a in args)


def _object_slots() -> frozenset[int]:
    """Ids of ``object`` and ``type`` and of what their own ``__dict__`` holds (their slot
    wrappers, method and getset descriptors): called on a symbolic value (or its type) they see
    the value itself, its real type and layout (``object.__sizeof__``, ``object``'s ``__class__``
    getset, ``type``'s ``__mro__`` and ``__name__`` getsets), not the int it stands for. The
    classes and their dicts live as long as the interpreter, so the ids stay theirs."""
    ids = {id(object), id(type)}
    for owner in (object, type):
        ids.update(id(v) for v in vars(owner).values() if type(v) is not str)
    return frozenset(ids)


_OBJECT_SLOT_IDS = _object_slots()


def _holds_object_slot(value: object) -> bool:
    """Whether ``value`` is ``object``, ``type`` or one of their own slots (:func:`_object_slots`),
    or a tuple, list, set or dict holding one directly."""
    if id(value) in _OBJECT_SLOT_IDS:
        return True
    kind = type(value)
    if kind is dict:
        value = value.values()
    elif kind not in (tuple, list, set, frozenset):
        return False
    try:
        return any(id(v) in _OBJECT_SLOT_IDS for v in value)
    except RuntimeError:  # (changed by another thread while read: not checked, fail closed)
        return True


_FROZEN_CODE: dict = {}


def _frozen_stdlib_code(code) -> bool:
    """Whether ``code`` is a frozen standard-library module's own (``<frozen _collections_abc>``:
    a function of that module or of a class it defines, or code nested in one), by identity
    with what the loaded module holds (a model compiling text under that name holds none of it)."""
    known = _FROZEN_CODE.get(id(code))
    if known is not None and known[0] is code:
        return known[1]
    name = code.co_filename
    found = False
    module = sys.modules.get(name[len("<frozen ") : -1]) if name.startswith("<frozen ") and name.endswith(">") else None
    if module is not None:
        stack = []
        for value in list(vars(module).values()):
            values = list(vars(value).values()) if isinstance(value, type) else [value]
            for v in values:
                v = getattr(v, "__func__", v)
                c = getattr(v, "__code__", None)
                if isinstance(c, types.CodeType):
                    stack.append(c)
        while stack and not found:
            c = stack.pop()
            found = c is code
            stack += [k for k in c.co_consts if isinstance(k, types.CodeType)]
    _FROZEN_CODE[id(code)] = (code, found)
    return found


def _object_slot_held(frame, event: str, arg) -> None:
    """Record as misuse a model frame that holds, when called or when it returns, ``object``,
    ``type`` or one of their own slots, however it reached them (a name, a lookup by a computed
    key in ``builtins.__dict__`` or a class's ``__dict__``, a comprehension over its items): the
    slot is decided by the object's identity, not by how the model named it. The closure names
    ``dataclasses`` gives the methods it writes (``__dataclass_builtins_object__``: a frozen
    class's ``object.__setattr__``; a field's type) are not the model's holding."""
    try:
        held = (event == "return" and _holds_object_slot(arg)) or any(
            _holds_object_slot(v) for k, v in frame.f_locals.items() if not k.startswith("__dataclass_")
        )
    except BaseException:  # noqa: BLE001 - not checked (the recursion limit): fail closed
        held = True
    if held:
        code = frame.f_code
        if _frozen_stdlib_code(code):  # (``_collections_abc`` walking a class's MRO to ``object``)
            return
        _misuse_here(
            f"{code.co_name} at {code.co_filename}:{frame.f_lineno} holds object or type or one of their own slots "
            "in a symbolic run (object.__sizeof__, its __class__ descriptor, type's __mro__/__name__ getsets): "
            "called on a symbolic value they see the value itself, not the int it stands for"
        )


def _watch_exception(frame, event: str, arg):
    if _PENDING_REPRS:
        _settle_reprs(arg[1] if event == "exception" else None)
    if event == "return":
        _object_slot_held(frame, event, arg)
    if event == "exception":
        error = arg[1]
        if getattr(error, "_capproof_recorded", False):  # recorded where raised, or in an inner frame
            return _watch_exception
        text = f"{type(error).__name__}: {error}"
        # any exception that started in a symbolic value's own code (not one Python raises on the
        # int too), and a RecursionError (a symbolic operation needs Python frames an int's does
        # not: at the recursion limit they fail apart)
        if isinstance(error, RecursionError) or (
            not isinstance(error, TypeError) and arg[2] is not None and _raised_by_symbolic_code(error, arg[2])
        ):
            record_misuse(
                NotConcreteError(
                    f"{text} raised by capproof's symbolic value (not by Python on the int) at "
                    f"{frame.f_code.co_filename}:{frame.f_lineno}"
                )
            )
            _mark_recorded(error)
            return _watch_exception
        # every TypeError: Python's C code raises one on capproof's stand-in where it would not on
        # the int, and its message may name ``int`` (``json.dumps``: ``Object of type int is not
        # JSON serializable``). A ValueError or KeyError whose message shows the value's repr
        # (``x is not in list``) is raised on the int it stands for too.
        if isinstance(error, TypeError):
            # a model's ``except`` would take a fallback the ints may not take
            record_misuse(
                NotConcreteError(f"{text} on a symbolic value at {frame.f_code.co_filename}:{frame.f_lineno}")
            )
            _mark_recorded(error)
        elif _names_a_symbolic_class(error):
            # C code formatting the value's real type into a message (``object.__setattr__``'s
            # "'SymInt' object has no attribute"): on the int the message names ``int``
            record_misuse(
                NotConcreteError(
                    f"{type(error).__name__} naming capproof's symbolic class at "
                    f"{frame.f_code.co_filename}:{frame.f_lineno}"
                )
            )
            _mark_recorded(error)
    return _watch_exception


def _watch_call(frame, event: str, arg):
    """Global trace function of a symbolic run: model frames get :func:`_watch_exception` (no line
    events), capproof's, Z3's and the standard library's none. A model frame called with
    capproof's symbolic class or module among its arguments (an ``abc`` ``__subclasshook__``, which
    Python calls with the real type of a value) is misuse: it tells a symbolic value from an int."""
    code = frame.f_code  # (read once: each read of f_code is an audit event)
    if event == "call" and _is_model_code(code):
        if _PENDING_REPRS:
            _settle_reprs(None)
        frame.f_trace_lines = False
        if code.co_argcount or code.co_flags & 0x0C:  # (arguments, *args, **kwargs)
            try:
                hidden = [v for v in frame.f_locals.values() if _hidden(v)]
            except BaseException:  # noqa: BLE001 - not checked (the recursion limit): fail closed
                hidden = ["?"]
            if not hidden:
                _object_slot_held(frame, event, arg)
            if hidden:
                _misuse_here(
                    f"{code.co_name} at {code.co_filename}:{frame.f_lineno} is called with "
                    f"capproof's {getattr(hidden[0], '__name__', hidden[0])!s}, the symbolic value's own type or module "
                    "(an abc __subclasshook__ sees it where an int's is int): it may take a branch the ints do not"
                )
        return _watch_exception
    if event == "call" and id(code) in _probing_codes():
        try:
            probed = any(_holds_symbolic(v) for v in frame.f_locals.values())
        except BaseException:  # noqa: BLE001 - not checked (the recursion limit): fail closed
            probed = True
        if probed:
            _misuse_here(
                f"the library's {code.co_qualname} ({code.co_filename}:{code.co_firstlineno}) asks a symbolic value "
                "for attributes by a name it was given (a runtime Protocol's members, a format field, pickle's module "
                "lookup), which may be one capproof's value has and an int lacks"
            )
    return None


def _holds_symbolic(value: object) -> bool:
    """Whether ``value`` is a symbolic value, or a tuple, list or dict holding one directly."""
    kind = type(value)
    if kind is SymInt or kind is SymBool:
        return True
    if kind in (tuple, list):
        return any(type(v) is SymInt or type(v) is SymBool for v in value)
    if kind is dict:
        return any(type(v) is SymInt or type(v) is SymBool for v in value.values())
    return False


@functools.lru_cache(maxsize=1)
def _probing_codes() -> frozenset[int]:
    """Ids of the standard library's functions that ask a value for attributes by names they are
    given rather than the model's code (typing's runtime ``Protocol`` check, ``string.Formatter``'s
    field lookup, ``pickle.whichmodule``): called with a symbolic value during a run, misuse. The
    functions stay alive (module attributes), so the ids stay theirs."""
    import pickle
    import string
    import typing

    funcs = [
        getattr(getattr(typing, "_ProtocolMeta", None), "__instancecheck__", None),
        getattr(string.Formatter, "get_field", None),
        getattr(pickle, "whichmodule", None),
    ]
    return frozenset(id(f.__code__) for f in funcs if isinstance(getattr(f, "__code__", None), types.CodeType))


def _hidden(value: object) -> bool:
    """Whether ``value`` is what a model must never hold: the symbolic classes or this module."""
    if isinstance(value, type):
        return issubclass(value, (SymInt, SymBool, _IntMethod))
    return value is _THIS_MODULE


class _GuardedModule(types.ModuleType):
    """The class of capproof's modules during a symbolic run: model code (not capproof's, Z3's or
    the standard library's on its behalf) that reads from one of them the symbolic classes, this
    module, a name that is not public (``__all__``; none of this module's) or ``__dict__``, by any
    route (``sys.modules[...]``, ``importlib``, ``getattr`` by a computed name), is misuse."""

    def __getattribute__(self, name: str):
        value = types.ModuleType.__getattribute__(self, name)
        # the cheap tests first: almost every read is capproof's own code reading a public name, and
        # only a read that would be misuse is worth finding who reads it (a walk of the stack)
        if not _watched():
            return value
        public = () if self is _THIS_MODULE else types.ModuleType.__getattribute__(self, "__dict__").get("__all__", ())
        if (
            _hidden(value)
            or name == "__dict__"
            or (name not in public and not name.startswith("__"))
            or (self is _THIS_MODULE and name not in ("__name__", "__spec__", "__loader__", "__path__", "__file__"))
        ) and _from_model(sys._getframe(1)):
            if not (self.__name__ == "capproof" and name in _PUBLIC_PACKAGE_NAMES()):
                record_misuse(
                    NotConcreteError(
                        f"the model reads {self.__name__}.{name}, capproof's own machinery (not its public API), "
                        "during a symbolic run: it may tell a symbolic value from an int"
                    )
                )
        return value


def _PUBLIC_PACKAGE_NAMES() -> frozenset:
    package = sys.modules.get("capproof")
    return frozenset(getattr(package, "_WHERE", ()))


def _from_model(frame) -> bool:
    """Whether the first frame from ``frame`` outward that is not the standard library's is a model's."""
    while frame is not None:
        code = frame.f_code
        if _is_own_code(code):
            return False
        if _is_model_code(code):
            return True
        frame = frame.f_back
    return False


def _on_models_behalf(frame) -> bool:
    """As :func:`_from_model`, failing closed: also True when no frame outward from ``frame`` is
    capproof's, Z3's or a model's (a thread whose frames are all the standard library's: a pool
    worker running a function the model submitted)."""
    while frame is not None:
        code = frame.f_code
        if _is_own_code(code):
            return False
        if _is_model_code(code):
            return True
        frame = frame.f_back
    return True


class _MachineReadingModule(types.ModuleType):
    """The class of the garbage collector's module ``gc`` once a symbolic run has started: a read
    of any of its functions or data (not a dunder but ``__dict__``/``__class__``) during a watched
    symbolic run on the model's behalf (:func:`_on_models_behalf`), by any route (``import gc``
    inside the model, ``importlib``, ``sys.modules``, ``getattr``), is misuse. Its functions see
    the object itself or the run's own allocations: ``gc.is_tracked`` (an int is untracked, a
    symbolic value tracked), ``gc.get_count`` (a symbolic run allocates Z3 terms), the referents;
    those with no audit event of their own are decided here, at the read."""

    def __getattribute__(self, name: str):
        value = types.ModuleType.__getattribute__(self, name)
        if (
            (name in ("__dict__", "__class__") or not name.startswith("__"))
            and _watched()
            and _on_models_behalf(sys._getframe(1))
        ):
            raise record_misuse(
                NotConcreteError(
                    f"the model reads {types.ModuleType.__getattribute__(self, '__name__')}.{name} in a symbolic "
                    "run: the garbage collector sees the object itself and the run's own allocations "
                    "(an int is untracked and refers to nothing, a symbolic value not)"
                )
            )
        return value


_OWN_CODE: dict = {}


def _is_own_code(code) -> bool:
    """Whether ``code`` is capproof's or Z3's (cached per code object, as :func:`_is_model_code`)."""
    known = _OWN_CODE.get(code)
    if known is None:
        known = _OWN_CODE[code] = os.path.abspath(code.co_filename).startswith(_OWN_DIRS) and genuine(code)
    return known


#: audit events by which code reaches the frames of the stack it runs on (capproof's, above a
#: model, differ between a symbolic and an int run) or the interpreter's hooks
_FRAME_EVENTS = frozenset(
    {
        "sys._getframe",
        "sys._current_frames",
        "sys.settrace",
        "sys.setprofile",
        "sys.addaudithook",
        "sys._getframemodulename",
    }
)
_FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back"})
#: audit events of a process the model makes in a symbolic run: a forked child holds copies of the
#: run's explorer and trace, so its branch decisions, divisors and misuse stay in the child
_PROCESS_EVENTS = frozenset(
    {
        "os.fork",
        "os.forkpty",
        "os.posix_spawn",
        "os.spawn",
        "os.exec",
        "os.system",
        # _posixsubprocess forks in C and runs a ``preexec_fn`` in the child
        "subprocess.Popen",
        # C functions loaded by name (libc's ``fork()``) run past every Python-level check
        "ctypes.dlopen",
        "ctypes.dlsym",
        "ctypes.dlsym/handle",
    }
)
#: audit events of the C functions that see an object itself rather than ask it, raised however
#: the function was reached (imported inside the model, ``importlib``, ``sys.modules``, a default
#: argument, called by ``map``): the garbage collector's references (an int refers to nothing, a
#: symbolic value to its term) and marshal's serialiser (an int marshals, a symbolic value not)
_OBJECT_EVENTS = frozenset({"gc.get_referents", "gc.get_referrers", "gc.get_objects", "marshal.dumps"})
_AUDITING = [False, False]  # [hook installed, inside the hook]


def _audit(event: str, args: tuple) -> None:
    """Audit hook: in a symbolic run, model code that reaches a frame (``sys._getframe``,
    ``inspect.stack``, ``traceback.extract_stack``, an exception's ``tb_frame``, a generator's
    ``gi_frame``) or sets a trace or profile function is misuse: the stack above a model holds
    capproof's frames in a symbolic run and others on ints. So is a call of a function that sees
    the object itself (:data:`_OBJECT_EVENTS`) on the model's behalf, decided at the call, by
    the function's own event, however the model reached it."""
    if _AUDITING[1] or not (
        event in _FRAME_EVENTS
        or event in _PROCESS_EVENTS
        or event in _OBJECT_EVENTS
        or (event == "object.__getattr__" and len(args) > 1 and args[1] in _FRAME_ATTRIBUTES)
    ):
        return
    if not _watched():
        return
    _AUDITING[1] = True
    try:
        if event in _OBJECT_EVENTS:
            # (the import system marshals the code it compiles: a code object holds no symbolic value)
            if not (event == "marshal.dumps" and type(args[0]) is types.CodeType) and _on_models_behalf(
                sys._getframe(2)
            ):
                _misuse_here(
                    f"the model calls {event} in a symbolic run: it sees the object itself (an int refers to "
                    "nothing and marshals, a symbolic value refers to its term and does not)"
                )
        elif event in _PROCESS_EVENTS and _from_model(sys._getframe(2)):
            _misuse_here(
                f"the model starts a process ({event}) in a symbolic run: a forked child's branch decisions, "
                "divisors and checks stay in the child"
            )
        elif _from_model(sys._getframe(2)):  # (1: the dispatching hook, capproof._audit)
            _misuse_here(
                f"the model reaches the stack's frames or the interpreter's hooks ({event}"
                f"{' ' + str(args[1]) if event == 'object.__getattr__' else ''}) in a symbolic run: above it are "
                "capproof's frames, on ints others"
            )
    except BaseException:  # noqa: BLE001 - not checked (the recursion limit): fail closed
        _misuse_here(f"{event} in a symbolic run could not be checked")
    finally:
        _AUDITING[1] = False


def _misuse_here(message: str) -> None:
    """Record ``message`` as misuse in the active trace without a frame of its own (an audit hook
    may run at the recursion limit)."""
    trace = getattr(trace_state, "trace", None) or _CURRENT[0]
    if trace is not None:
        trace.misuse.append(message)


def _guard_modules() -> None:
    """Give every loaded capproof module the class :class:`_GuardedModule` (once each); install
    :func:`_audit` (once)."""
    if not _AUDITING[0]:
        _AUDITING[0] = True
        from ._audit import on

        on(_audit, _FRAME_EVENTS | _PROCESS_EVENTS | _OBJECT_EVENTS, _FRAME_ATTRIBUTES)
        collector = sys.modules.get("gc")
        if collector is not None and type(collector) is types.ModuleType:
            collector.__class__ = _MachineReadingModule
    if len(sys.modules) == _GUARDED[0]:
        return
    _GUARDED[0] = len(sys.modules)
    for name, module in list(sys.modules.items()):
        if (name == "capproof" or name.startswith("capproof.")) and type(module) is types.ModuleType:
            module.__class__ = _GuardedModule


_GUARDED = [0]
_THIS_MODULE = sys.modules[__name__]

#: what capproof's machinery bound once loaded, and changes found since (:func:`note_tampering`)
_TAMPERED: list[tuple] = []


def machinery_bindings() -> dict[tuple, int]:
    """``{(module, name, attribute or None): id}`` of what capproof's loaded modules and the classes
    they define bind (and Z3's expression classes): compared before and after a spec file is
    imported (:func:`note_tampering`)."""
    out: dict[tuple, int] = {}
    for modname, module in list(sys.modules.items()):
        if not (modname == "capproof" or modname.startswith("capproof.") or modname == "z3.z3"):
            continue
        for name, value in list(types.ModuleType.__getattribute__(module, "__dict__").items()):
            out[(modname, name, None)] = id(value)
            if isinstance(value, type) and value.__module__ == modname:
                out.update(((modname, name, k), id(v)) for k, v in list(vars(value).items()))
    return out


def _bound_now(key: tuple) -> int | None:
    modname, name, attr = key
    held = getattr(sys.modules.get(modname), "__dict__", {})
    if name not in held:
        return None
    value = held[name]
    if attr is None:
        return id(value)
    return id(vars(value)[attr]) if isinstance(value, type) and attr in vars(value) else None


def note_tampering(before: dict[tuple, int], what: str) -> list[str]:
    """Compare :func:`machinery_bindings` with ``before`` (names bound since are new modules or
    lazily computed values, not changes): a binding changed makes every later symbolic run misuse
    while it stays changed (:func:`machinery_changed`). Returns the changed names."""
    now = machinery_bindings()
    changed = [(k, v) for k, v in before.items() if now.get(k, v) != v]
    _TAMPERED.extend((k, v, what) for k, v in changed)
    return [".".join(p for p in k if p) for k, _ in changed]


def machinery_changed() -> list[str]:
    """What was changed of capproof's symbolic classes since import, and what spec files changed
    of capproof's or Z3's modules (:func:`note_tampering`)."""
    found = [
        f"{cls.__name__}.{k}" for cls, held in _CLASS_BINDINGS for k, v in held.items() if vars(cls).get(k) is not v
    ]
    found += [f"{cls.__name__}.{k}" for cls, held in _CLASS_BINDINGS for k in vars(cls).keys() - held.keys()]
    return found + [f"{'.'.join(p for p in k if p)} by {what}" for k, v, what in _TAMPERED if _bound_now(k) != v]


def active_trace() -> "Trace | None":
    """The trace this thread records into: its own, or, in a thread the model started during a
    symbolic run (which has none), the process's innermost one, so that a divisor or side
    condition met there is checked as in the model's own thread."""
    return getattr(trace_state, "trace", None) or _CURRENT[0]


#: reprs of symbolic values asked for by code not capproof's or Z3's during a watched symbolic run,
#: not yet settled: (trace, text, where)
_PENDING_REPRS: list = []


def _repr_outside_capproof(term) -> None:
    """Note that a symbolic value's repr was asked for, during a watched symbolic run, by code not
    capproof's or Z3's: a model's ``str([n])``, ``"%s" % (n,)``, a dataclass's or namedtuple's repr,
    an error message Python formats in C (``list.index``'s ``"%R is not in list"``). Each gives
    the int's digits on ints. The next event of a model frame settles it (:func:`_settle_reprs`):
    an exception whose message holds the text carries it on, readable only as misuse; anything else
    is misuse."""
    trace = active_trace()
    if trace is None or not _watched():
        return
    frame = sys._getframe(2)
    # a repr capproof makes on the caller's behalf (a Vector's ``Padded.__repr__`` runs tuple's
    # C repr of its entries) is read by whoever asked for that repr
    while frame is not None and frame.f_code.co_name in _FORMATTERS and _is_own_code(frame.f_code):
        frame = frame.f_back
    if frame is None or (frame.f_code.co_filename.startswith(_OWN_DIRS) and genuine(frame.f_code)):
        return
    _PENDING_REPRS.append((trace, f"{term}", caller_location()))


#: the methods by which an object of capproof's is shown as text
_FORMATTERS = frozenset({"__repr__", "__str__", "__format__"})


def _settle_reprs(error: BaseException | None) -> None:
    """Settle the pending reprs (:func:`_repr_outside_capproof`): when ``error`` (an exception just
    raised into a model frame) has a message holding every one, its text arguments become
    :class:`_ReprText` (reading them in a symbolic run is misuse); otherwise each is misuse now."""
    pending = list(_PENDING_REPRS)
    _PENDING_REPRS.clear()
    if error is not None and pending:
        args = getattr(error, "args", ())
        texts = [a for a in args if isinstance(a, str)]
        if texts and all(any(t in a for a in texts) for _, t, _ in pending):
            try:
                error.args = tuple(_ReprText(a) if isinstance(a, str) else a for a in args)
                return
            except BaseException:  # noqa: BLE001 - args that cannot be replaced: misuse below
                pass
    for trace, text, where in pending:
        trace.misuse.append(f"repr() of symbolic {text} (the int's digits on ints) read at {where}")


class _ReprText:
    """An exception message Python formatted in C with a symbolic value's repr, in place of the
    text: reporting ``str`` as its class (``isinstance(msg, str)`` as on ints), and no str at all
    to C code. Every read of it during a symbolic run by code not capproof's (an attribute, a
    method, an operator, ``str()``, C code taking it as a str: a TypeError the exception watch
    records) is misuse: on ints it shows the int's digits. capproof's own code reads the text."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        object.__setattr__(self, "text", text)

    @property
    def __class__(self):  # noqa: D105 - isinstance(msg, str) is True, as on ints
        return str

    def __getattribute__(self, name: str):
        if name != "__class__":
            _repr_text_read(f"attribute {name!r}")
        return object.__getattribute__(self, name)

    def __setattr__(self, name: str, value: object) -> None:
        _repr_text_read(f"setting attribute {name!r}")
        object.__setattr__(self, name, value)


def _repr_text_read(how: str) -> None:
    """A :class:`_ReprText` read ``how`` by the caller of its method: misuse during a symbolic run
    unless the reader is capproof's (or Z3's) code."""
    code = sys._getframe(2).f_code
    if active_trace() is not None and not (code.co_filename.startswith(_OWN_DIRS) and genuine(code)):
        raise record_misuse(
            NotConcreteError(f"{how} of an error message that shows a symbolic value's repr at {caller_location()}")
        )


def _repr_text_method(name: str):
    base = getattr(str, name)

    def method(self, *args, **kwargs):
        _repr_text_read(f"str.{name}")
        return base(object.__getattribute__(self, "text"), *args, **kwargs)

    method.__name__ = name
    return method


_REPR_TEXT_SLOTS = (
    "__str__",
    "__repr__",
    "__format__",
    "__eq__",
    "__ne__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
    "__hash__",
    "__len__",
    "__contains__",
    "__getitem__",
    "__iter__",
    "__add__",
    "__mul__",
    "__rmul__",
    "__mod__",
    "__rmod__",
    "__sizeof__",
    "__reduce__",
    "__reduce_ex__",
    "__getnewargs__",
    "__dir__",
)
for _name in _REPR_TEXT_SLOTS:
    setattr(_ReprText, _name, _repr_text_method(_name))
del _name


def _repr_text_radd(self, other):
    _repr_text_read("str.__add__")
    return other + object.__getattribute__(self, "text")


_ReprText.__radd__ = _repr_text_radd  # (str has no __radd__: ``"" + msg`` reaches this one)


def _repr_text_bool(self) -> bool:
    _repr_text_read("bool()")
    return bool(object.__getattribute__(self, "text"))


_ReprText.__bool__ = _repr_text_bool


def _record_divisor(term: z3.ArithRef) -> None:
    trace = active_trace()
    if trace is not None:
        trace.divisors.append((term, caller_location()))


#: A symbolic value a model needs as a Python int (an index, a dict key, ``int()``) is split into
#: one path per value when the path so far admits at most this many values (else misuse)
CASE_SPLIT_LIMIT = 64

_HANDLERS: dict = {}


def _handler_ranges(code) -> list[tuple[int, int]]:
    """The instruction offsets of ``code`` that an exception handler covers (``try``, ``with``)."""
    known = _HANDLERS.get(code)
    if known is None:
        import dis

        try:
            entries = dis._parse_exception_table(code)  # type: ignore[attr-defined]
        except Exception:  # noqa: BLE001 - a Python without exception tables: assume covered
            entries = None
        known = _HANDLERS[code] = [(0, 1 << 30)] if entries is None else [(e.start, e.end) for e in entries]
    return known


def _in_handler(base) -> bool:
    """Whether a model frame between here and ``base`` (the fork exploration's frame) is inside a
    ``try`` (or ``with``) block: a ``ZeroDivisionError`` raised here may be caught there, so a
    zero divisor is a path to follow."""
    frame = sys._getframe(2)
    while frame is not None and frame is not base:
        code = frame.f_code
        if _is_model_code(code) and any(lo <= frame.f_lasti < hi for lo, hi in _handler_ranges(code)):
            return True
        frame = frame.f_back
    return False


def _python_zero_division(op) -> ZeroDivisionError:
    """The ``ZeroDivisionError`` Python raises for ``op`` (``operator.mod``, ...) by a zero int
    divisor, message included (it differs between operators and Python versions)."""
    try:
        op(1, 0)
    except ZeroDivisionError as exc:
        return _as_python(ZeroDivisionError(*exc.args))  # type: ignore[return-value]
    raise AssertionError(f"{op} by zero did not raise")  # pragma: no cover


def _zero_divisor_path(divisor: z3.ArithRef, op=operator.floordiv) -> None:
    """Inside a fork exploration, where a model may catch it: follow ``divisor == 0`` as a path
    of its own that raises ``ZeroDivisionError`` as Python does (``try: a // b except
    ZeroDivisionError:``); the other path goes on with ``divisor != 0`` among its decisions."""
    explorer = getattr(trace_state, "explorer", None)
    if explorer is None or not getattr(explorer, "split", True):
        return
    if not _in_handler(explorer.base) or not explorer.feasible(divisor == 0):
        return
    if explorer.decide(divisor == 0, caller_location()):
        raise _python_zero_division(op)


def _case_split(term: z3.ArithRef) -> int | None:
    """The value of ``term`` on this path, forking one path per value (``term == v`` a decision)
    when the domain and the decisions so far admit at most :data:`CASE_SPLIT_LIMIT` values; None
    outside a fork exploration, or when there are more (or Z3 cannot bound them)."""
    explorer = getattr(trace_state, "explorer", None)
    if explorer is None or not getattr(explorer, "split", True):
        return None
    bounds = explorer.bounds(term)
    if bounds is None or bounds[1] - bounds[0] + 1 > CASE_SPLIT_LIMIT:
        return None
    where = caller_location()
    for value in range(bounds[0], bounds[1]):
        if explorer.decide(term == value, where):
            return value
    explorer.decide(term == bounds[1], where)  # the last value: every other one was decided against
    return bounds[1]


# Lemma terms are built straight through Z3's C API: the same ASTs as ``z3.And``/``z3.Implies``/
# ``>=`` build (so the solver sees identical queries), without the Python layer's coercions,
# which made the lemmas most of the cost of building a 1024-expert routing case.


def ast_array(args):
    arr = (z3.Ast * len(args))()
    for i, a in enumerate(args):
        arr[i] = a.as_ast()
    return arr


def z3_and(*args: z3.BoolRef) -> z3.BoolRef:
    ctx = args[0].ctx
    return z3.BoolRef(z3.z3core.Z3_mk_and(ctx.ref(), len(args), ast_array(args)), ctx)


def z3_implies(a: z3.BoolRef, b: z3.BoolRef) -> z3.BoolRef:
    return z3.BoolRef(z3.z3core.Z3_mk_implies(a.ctx.ref(), a.as_ast(), b.as_ast()), a.ctx)


def z3_ge(a: z3.ArithRef, b: z3.ArithRef | int) -> z3.BoolRef:
    b = b if isinstance(b, z3.ExprRef) else z3.IntVal(b, a.ctx)
    return z3.BoolRef(z3.z3core.Z3_mk_ge(a.ctx.ref(), a.as_ast(), b.as_ast()), a.ctx)


def z3_le(a: z3.ArithRef, b: z3.ArithRef | int) -> z3.BoolRef:
    b = b if isinstance(b, z3.ExprRef) else z3.IntVal(b, a.ctx)
    return z3.BoolRef(z3.z3core.Z3_mk_le(a.ctx.ref(), a.as_ast(), b.as_ast()), a.ctx)


def _neg(a: z3.ArithRef) -> z3.ArithRef:
    return z3.ArithRef(z3.z3core.Z3_mk_unary_minus(a.ctx.ref(), a.as_ast()), a.ctx)


def _unchecked(wrapper):
    """The ctypes function a ``z3core`` wrapper calls (kept in its ``_elems`` default), without
    the wrapper's error check after each call (a Python call and a call into Z3 per operation), or
    the wrapper itself when this z3 build has no such default. :class:`RawTerms` checks its results."""
    elems = (wrapper.__defaults__ or (None,))[-1]
    return getattr(elems, "f", wrapper)


_z3core = z3.z3core
_inc_ref, _mk_int_sort = _unchecked(_z3core.Z3_inc_ref), _unchecked(_z3core.Z3_mk_int_sort)
_mk_ge, _mk_le, _mk_implies = (
    _unchecked(_z3core.Z3_mk_ge),
    _unchecked(_z3core.Z3_mk_le),
    _unchecked(_z3core.Z3_mk_implies),
)
_mk_numeral, _simplify = _unchecked(_z3core.Z3_mk_numeral), _unchecked(_z3core.Z3_simplify)
get_ast_kind = _unchecked(_z3core.Z3_get_ast_kind)  # reads a live term: cannot fail
_dec_ref = _unchecked(_z3core.Z3_dec_ref)  # releases a term this module holds: cannot fail
#: a model's value of a term (returns False, not an error, when it cannot evaluate: callers check)
_model_eval = _unchecked(_z3core.Z3_model_eval)
_mk_distinct, _mk_and = _unchecked(_z3core.Z3_mk_distinct), _unchecked(_z3core.Z3_mk_and)
_mk_or = _unchecked(_z3core.Z3_mk_or)
_mk_eq = _unchecked(_z3core.Z3_mk_eq)
_mk_const = _unchecked(_z3core.Z3_mk_const)
#: :func:`int_relation`'s operators: the C function and z3py's own operator (other operands)
_INT_RELATIONS = {"==": (_mk_eq, operator.eq), "<=": (_mk_le, operator.le), ">=": (_mk_ge, operator.ge)}
#: accessors of live terms (cannot fail), for walks over a term's DAG without z3py's wrappers
get_ast_id, to_app = _unchecked(_z3core.Z3_get_ast_id), _unchecked(_z3core.Z3_to_app)
get_app_num_args, get_app_arg = _unchecked(_z3core.Z3_get_app_num_args), _unchecked(_z3core.Z3_get_app_arg)
get_app_decl, get_decl_kind = _unchecked(_z3core.Z3_get_app_decl), _unchecked(_z3core.Z3_get_decl_kind)
get_sort, get_sort_kind = _unchecked(_z3core.Z3_get_sort), _unchecked(_z3core.Z3_get_sort_kind)


_get_numeral_int64 = _unchecked(_z3core.Z3_get_numeral_int64)  # reads a live numeral: False if it cannot
_INT64 = ctypes.c_longlong()


def model_int(model: z3.ModelRef, term: z3.ArithRef) -> int:
    """``model.eval(term, model_completion=True).as_long()`` for an Int term: Z3's evaluation
    (``Z3_model_eval``, the one call that makes a term: the value) then a read of the numeral (as a
    64-bit int where it fits, else as text), without z3py's wrapper of the value, its sort checks
    and its text (the values of every model read, ~2,000 per run of the heaviest
    obligations). The wrapper's reference would be taken and dropped with the value alive in
    between, freeing nothing: the same terms and ids. Other terms take z3py's path."""
    if not isinstance(term, z3.ArithRef) or term.ctx is not model.ctx:
        return model.eval(term, model_completion=True).as_long()
    ref = model.ctx.ref()
    out = (z3.Ast * 1)()
    if not _model_eval(ref, model.model, term.ast, True, out):  # the C function, no error check
        raise z3.Z3Exception("failed to evaluate expression in the model")
    if get_ast_kind(ref, out[0]) != _NUMERAL_AST:  # not a numeral: z3py's own error
        return z3.z3._to_expr_ref(out[0], model.ctx).as_long()  # type: ignore[attr-defined]
    if _get_numeral_int64(ref, out[0], ctypes.byref(_INT64)):
        return _INT64.value
    return int(_z3core.Z3_get_numeral_string(ref, out[0]))


def model_true(model: z3.ModelRef, term: z3.BoolRef) -> bool:
    """``z3.is_true(model.eval(term, model_completion=True))``: the evaluation, then whether the
    value is the application ``true`` (z3py's reads of it, without its wrapper)."""
    if not isinstance(term, z3.BoolRef) or term.ctx is not model.ctx:
        return z3.is_true(model.eval(term, model_completion=True))
    ref = model.ctx.ref()
    out = (z3.Ast * 1)()
    if not _model_eval(ref, model.model, term.ast, True, out):
        raise z3.Z3Exception("failed to evaluate expression in the model")
    value = out[0]
    return (
        get_ast_kind(ref, value) == z3.Z3_APP_AST
        and get_decl_kind(ref, get_app_decl(ref, to_app(ref, value))) == z3.Z3_OP_TRUE
    )


def _wrapped(cls, ast, ctx: z3.Context, ref):
    """``cls(ast, ctx)`` for a z3py term class without an ``__init__`` of its own (``BoolRef``,
    ``ArithRef``, ``IntNumRef``): ``AstRef.__init__``'s one call into Z3 (``Z3_inc_ref``) made
    through the unchecked C function, without z3py's per-call error check (a wrapper
    per built term). The same Z3 call, so the same reference counts and ids; z3py's ``__del__``
    releases it as usual. ``ref`` is ``ctx.ref()``; ``ast`` a live term (the caller checked it)."""
    out = object.__new__(cls)
    out.ast = ast
    out.ctx = ctx
    _inc_ref(ref, ast)
    return out


#: z3core's wrapper converts the numeral's text to bytes; the ctypes function takes bytes
_NUMERAL_TEXT = bytes if _mk_numeral is not _z3core.Z3_mk_numeral else str


def _int_numeral(ref, value: int):
    """``Z3_mk_numeral(ref, str(value), Int)`` through the unchecked C function (its text as bytes
    where the ctypes function takes bytes); not yet checked: the caller passes it to :func:`_checked`."""
    text = str(value)
    return _mk_numeral(ref, text.encode() if _NUMERAL_TEXT is bytes else text, _mk_int_sort(ref))


def _checked(ref, ast):
    """``ast``, a term just returned by one of Z3's C functions called without z3core's check
    (:func:`_unchecked`); raises z3core's error when it is NULL (Z3 could not build it)."""
    if not ast:
        code = _z3core.Z3_get_error_code(ref)
        raise z3.Z3Exception(_z3core.Z3_get_error_msg(ref, code) if code != z3.Z3_OK else "Z3 built no term")
    return ast


class RawTerms:
    """Builds one term from raw ASTs through Z3's C API, each intermediate term referenced until
    :meth:`done` wraps the result: the same Z3 calls in the same order as the wrapped helpers above
    (``z3_and``, ``z3_ge``, ... and ``z3.IntVal``), without a Python wrapper per intermediate term.
    Only for terms whose intermediates all end up inside the result (nothing is freed, so Z3
    assigns the same ids).

    The calls go to Z3's C functions directly, not through z3core's wrappers: instead of their
    check of the context's error code after every call, :meth:`keep` checks each new term (Z3
    returns NULL, and sets the error code, when it cannot build one: :func:`_checked`)."""

    __slots__ = ("ref", "ctx", "held")

    def __init__(self, ctx: z3.Context):
        self.ref, self.ctx, self.held = ctx.ref(), ctx, []

    def keep(self, ast):
        _inc_ref(self.ref, _checked(self.ref, ast))
        self.held.append(ast)
        return ast

    def num(self, value: int):
        return self.keep(_int_numeral(self.ref, value))

    def ge(self, a, b):
        return self.keep(_mk_ge(self.ref, a, b))

    def le(self, a, b):
        return self.keep(_mk_le(self.ref, a, b))

    def implies(self, a, b):
        return self.keep(_mk_implies(self.ref, a, b))

    def nary(self, mk, *args):
        arr = (z3.Ast * len(args))(*args)
        return self.keep(mk(self.ref, len(args), arr))

    def done(self, ast) -> z3.BoolRef:
        out = _wrapped(z3.BoolRef, _checked(self.ref, ast), self.ctx, self.ref)
        for held in self.held:
            _dec_ref(self.ref, held)
        return out


def int_relation(term: z3.ArithRef, op: str, value: int) -> z3.BoolRef:
    """``term == value``, ``term <= value`` or ``term >= value`` (``op``) for an ``ArithRef`` term
    and a Python int, as z3py builds it (the numeral ``z3.IntVal(value)``, then ``Z3_mk_eq``/
    ``Z3_mk_le``/``Z3_mk_ge`` of the term and the numeral, the numeral's wrapper released after
    the relation is held), through the C API without z3py's coercion and sort checks
    (pinning a 64-entry batch to a point is 65 equalities, twice per minimisation; the bounds of
    each minimisation and density query). Any other operand takes z3py's own path."""
    mk, z3py = _INT_RELATIONS[op]
    if type(term) is not z3.ArithRef or type(value) is not int:
        return z3py(term, value)
    raw = RawTerms(term.ctx)
    return raw.done(raw.keep(mk(raw.ref, term.ast, raw.num(value))))


def equal_int(term: z3.ArithRef, value: int) -> z3.BoolRef:
    """``term == value``, as z3py builds it (:func:`int_relation`)."""
    return int_relation(term, "==", value)


def differs_from(model: z3.ModelRef, terms: list, anywhere: bool = False) -> z3.BoolRef:
    """``z3.And(*[t != model.eval(t, model_completion=True) for t in terms])`` (``terms`` not
    empty, Int terms of the model's context): "a point that differs from ``model`` in every one of
    ``terms``" (with ``anywhere``: ``z3.Or`` of them, "in one of ``terms`` at least", the aggregate
    path's second probe point; z3.Or makes z3.And's calls with ``Z3_mk_or``), through Z3's C API (z3py's wrappers, coercions and sort
    checks per term were most of the semantics probe's second point on a 64-request batch).

    The same Z3 calls in the same order as the z3py expression: per term ``Z3_model_eval`` then
    ``Z3_mk_distinct`` (its arguments in z3py's order: ``value != t`` is Python's reflected
    comparison for an ``ArithRef`` t and an ``IntNumRef`` value), the evaluated value held until the disequality holds it (where z3py frees
    its wrapper), then one ``Z3_mk_and``, the disequalities released after the result is held. No
    other call saves a result (z3py's sort checks only read), so Z3 creates and frees the same
    terms in the same order and assigns the same ids (tests/test_symbolic_fast.py compares them)."""
    ctx = model.ctx
    ref, m = ctx.ref(), model.model
    out = (z3.Ast * 1)()
    pair = (z3.Ast * 2)()
    held = []
    # the C functions without z3core's error check after each call: a failed
    # evaluation returns False and a failed construction NULL (_checked raises z3core's error)
    try:
        for t in terms:
            a = t.as_ast()
            if not _model_eval(ref, m, a, True, out):
                raise z3.Z3Exception("failed to evaluate expression in the model")
            value = out[0]
            _inc_ref(ref, value)
            # Python calls the reflected ``value != t`` first when value's wrapper (IntNumRef for a
            # numeral) is a proper subclass of t's (ArithRef): z3py then builds ``distinct(value, t)``
            numeral = get_ast_kind(ref, value) == _NUMERAL_AST
            if numeral and type(t) is not z3.IntNumRef and issubclass(z3.IntNumRef, type(t)):
                pair[0], pair[1] = value, a
            else:
                pair[0], pair[1] = a, value
            ne = _mk_distinct(ref, 2, pair)
            if ne:
                _inc_ref(ref, ne)
            _dec_ref(ref, value)
            held.append(_checked(ref, ne))
        join = _mk_or if anywhere else _mk_and
        conj = _wrapped(z3.BoolRef, _checked(ref, join(ref, len(held), (z3.Ast * len(held))(*held))), ctx, ref)
    finally:
        for d in held:
            _dec_ref(ref, d)
    return conj


def _positive_division_lemma(a: z3.ArithRef, q: z3.ArithRef) -> z3.BoolRef:
    """``division_lemma(a, c, q)`` for a constant ``c >= 1``, through :class:`RawTerms` (the calls of
    ``z3_and(z3_implies(z3_ge(a, 0), z3_and(z3_ge(q, 0), z3_le(q, a))), z3_implies(z3_le(a, 0), z3_and(z3_ge(q, a),
    z3_le(q, 0))))`` in order)."""
    r = RawTerms(a.ctx)
    A, Q = a.ast, q.ast
    g1 = r.ge(A, r.num(0))
    i1 = r.implies(g1, r.nary(_core.Z3_mk_and, r.ge(Q, r.num(0)), r.le(Q, A)))
    g4 = r.le(A, r.num(0))
    g5 = r.ge(Q, A)
    i2 = r.implies(g4, r.nary(_core.Z3_mk_and, g5, r.le(Q, r.num(0))))
    return r.done(_core.Z3_mk_and(r.ref, 2, (z3.Ast * 2)(i1, i2)))


def division_lemma(a: z3.ArithRef, b: z3.ArithRef | int, q: z3.ArithRef) -> z3.BoolRef:
    """Facts true of ``q = a // b`` (Python floor division) for all integers ``a`` and ``b != 0``.

    ``|q| <= |a|`` with the sign of ``a * b``; stated piecewise so it stays linear in ``a`` and
    ``q``. For a constant divisor (a Python int or a Z3 int value) only the two implications of
    its sign are built: the other two have a false premise (building four implications per
    division was a fifth of the time of building the MoE cases). Checked valid by
    ``tests/test_batches.py::test_division_lemma_is_valid_*``.
    """
    if isinstance(b, int) or z3.is_int_value(b):
        c = b if isinstance(b, int) else b.as_long()
        if c >= 1:
            if type(a) in (z3.ArithRef, z3.IntNumRef) and type(q) in (z3.ArithRef, z3.IntNumRef) and a.ctx is q.ctx:
                return _positive_division_lemma(a, q)
            return z3_and(
                z3_implies(z3_ge(a, 0), z3_and(z3_ge(q, 0), z3_le(q, a))),
                z3_implies(z3_le(a, 0), z3_and(z3_ge(q, a), z3_le(q, 0))),
            )
        if c <= -1:
            return z3_and(
                z3_implies(z3_ge(a, 0), z3_and(z3_ge(q, _neg(a)), z3_le(q, 0))),
                z3_implies(z3_le(a, 0), z3_and(z3_ge(q, 0), z3_le(q, _neg(a)))),
            )
        raise ZeroDivisionError("division_lemma: divisor 0")
    return z3.And(
        z3.Implies(z3.And(b >= 1, a >= 0), z3.And(q >= 0, q <= a)),
        z3.Implies(z3.And(b >= 1, a <= 0), z3.And(q >= a, q <= 0)),
        z3.Implies(z3.And(b <= -1, a >= 0), z3.And(q >= -a, q <= 0)),
        z3.Implies(z3.And(b <= -1, a <= 0), z3.And(q >= 0, q <= -a)),
    )


def record_nonzero(term: z3.ArithRef, where: str) -> None:
    """Record a symbolic value that must not be zero (checked as divisors are; ``where`` says why)."""
    trace = active_trace()
    if trace is not None:
        trace.divisors.append((term, where))


def _record_lemma(a: z3.ArithRef, b: z3.ArithRef | int, q: z3.ArithRef) -> None:
    record_lemma(division_lemma(a, b, q))


def record_lemma(fact: z3.BoolRef) -> None:
    """Add a *valid* fact (true for every value of its variables) to the active trace.

    Only for capproof's vocabulary: each lemma template has a validity test in
    tests/test_semantics.py, since an invalid lemma would make proofs unsound.
    """
    trace = getattr(trace_state, "trace", None)
    if trace is not None:
        trace.lemmas.append(fact)


class LazyText:
    """A message formatted only when shown (``str()``/``format()``): printing a Z3 term is linear
    in its size, and a side condition or divisor over a large term is recorded on every symbolic
    run but reported only when its check fails (formatting eagerly made a shift of a nested term
    cost ~1 s). ``fn`` must not depend on state that changes later."""

    __slots__ = ("fn", "_text")

    def __init__(self, fn):
        self.fn, self._text = fn, None

    def __str__(self) -> str:
        if self._text is None:
            self._text = self.fn()
        return self._text

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def __repr__(self) -> str:
        return repr(str(self))

    def __eq__(self, other: object) -> bool:
        return str(self) == (str(other) if isinstance(other, LazyText) else other)

    def __hash__(self) -> int:
        return hash(str(self))

    def startswith(self, prefix) -> bool:
        return str(self).startswith(prefix)

    def __contains__(self, item: str) -> bool:
        return item in str(self)


def _side_condition(condition: z3.BoolRef, what) -> None:
    """Record that the encoding just built is exact only where ``condition`` holds (``what``: a
    str, or a callable giving it, formatted only if the condition is reported)."""
    condition = z3.simplify(condition)
    if z3.is_true(condition):
        return
    trace = active_trace()
    if trace is not None:
        where = caller_location()
        text = what if isinstance(what, str) else None
        trace.side_conditions.append(
            (condition, LazyText(lambda: f"{text if text is not None else what()} at {where}"))
        )


#: ``bit_length()`` and shifts by a symbolic count are encoded exactly for magnitudes below
#: ``2**BIT_WIDTH`` and counts in ``0..BIT_WIDTH`` (recorded side conditions say so).
BIT_WIDTH = 64

#: Python rounds ``a / b`` of ints to a float; ``math.ceil``/``floor``/``trunc`` of it equal the
#: exact rational results when ``|a| < 2**53`` (then a non-integer quotient is at least ``1/|b|``,
#: more than half an ulp of ``a/b``, away from every integer, so rounding cannot reach one).
FLOAT_EXACT = 2**53
#: ... and when ``|b| < 2**1000``: a nonzero quotient is then above the smallest subnormal float
#: (``1 / 2**1076`` rounds to ``0.0``, whose ceiling is 0, not 1)
FLOAT_DIVISOR = 2**1000


def _pow2(k: z3.ArithRef) -> z3.ArithRef:
    """``2**k`` for a symbolic ``k`` in ``0..BIT_WIDTH`` (an ``If`` chain)."""
    out: z3.ArithRef = z3.IntVal(2**BIT_WIDTH)
    for i in reversed(range(BIT_WIDTH)):
        out = z3.If(k == i, z3.IntVal(2**i), out)
    return out


def _concrete_int(value: object) -> bool:
    """Whether ``value`` is a concrete int operand (bools included); an int subclass with its own
    operators is refused (:func:`_refuse_own_operators`)."""
    if isinstance(value, int) and not isinstance(value, SymInt):
        _refuse_own_operators(value)
        return True
    return False


def _refuse_own_operators(value: int) -> None:
    """Raise (recorded) when ``value`` is of an int subclass that defines any of
    :data:`INT_OPERATORS` itself: against an int Python calls the subclass's reflected operator
    first (``37 ** W(1)`` runs ``W.__rpow__``), never against a symbolic value, so every operator of
    a symbolic value asks this before it reads a concrete operand as the int it holds."""
    kind = type(value)
    if kind is not int and kind is not bool and kind is not SymBool and _overrides_operators(kind):
        raise record_misuse(
            NotConcreteError(
                f"an operand of {kind.__name__}, an int subclass with its own operators, at "
                f"{caller_location()}: Python calls them first against an int, never against a symbolic value"
            )
        )


def record_misuse(error: Exception) -> Exception:
    """Record ``error`` in the active trace (a model's ``except`` cannot hide it), return it."""
    run = _WATCHED_RUN[0]
    if run is not None and run.pid != os.getpid():  # (no frame of its own: the recursion limit)
        run.in_child()
    trace = getattr(trace_state, "trace", None) or _CURRENT[0]
    if trace is not None:
        trace.misuse.append(str(error))
    _mark_recorded(error)
    return error


def _mark_recorded(error: BaseException) -> None:
    """Mark ``error`` as recorded, so the exception watch of a symbolic run does not record it
    again in each model frame it passes through."""
    try:
        error._capproof_recorded = True  # type: ignore[attr-defined]
    except AttributeError:  # an exception type without a __dict__
        pass


IntLike = Union[int, "SymInt"]


def _reject_float(value: object) -> None:
    if isinstance(value, float):
        raise record_misuse(
            RealArithmeticError(
                f"real arithmetic: float {value!r} in an integer model at {caller_location()} (use // or cdiv)"
            )
        )


def to_z3_int(value: object) -> z3.ArithRef:
    """The Z3 Int term for an int or SymInt. Raises RealArithmeticError for floats."""
    if isinstance(value, SymInt):
        return _int_term(value)
    if isinstance(value, bool):
        return z3.IntVal(int(value))
    if isinstance(value, int):
        _refuse_own_operators(value)
        # z3.IntVal parses str(value): an int subclass's own __str__ could show another number, so
        # its value is read by int's own slot (an exact int, whatever the subclass overrides)
        return z3.IntVal(value if type(value) is int else int.__int__(value))
    if isinstance(value, SymBool):  # True + 1 == 2: a bool is an int in Python
        return z3.If(_bool_term(value), z3.IntVal(1), z3.IntVal(0))
    _reject_float(value)
    raise record_misuse(NotAnIntegerError(f"not an integer: {value!r} ({type(value).__name__}) at {caller_location()}"))


#: ``int``'s binary operators, reflected ones included. An int subclass may override them: Python
#: calls a subclass's override first when the other operand is an int (``37 + Saturating(5)`` runs
#: ``Saturating.__radd__``), but a symbolic value is no int to that rule. Called directly on an int
#: (``(16).__mul__(n)``), each tests its other operand's real type and returns ``NotImplemented``
#: for a symbolic value (:mod:`capproof.guard` finds such calls)
INT_OPERATORS = tuple(
    f"__{r}{op}__"
    for op in (
        "add",
        "sub",
        "mul",
        "floordiv",
        "truediv",
        "mod",
        "divmod",
        "pow",
        "lshift",
        "rshift",
        "and",
        "or",
        "xor",
    )
    for r in ("", "r")
) + ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__")


def _overrides_operators(kind: type) -> bool:
    """Whether int subclass ``kind`` defines any of :data:`INT_OPERATORS` itself, read at each
    operand: a class can gain or lose an operator between two uses, and a metaclass can make two
    classes compare and hash equal, so no answer is remembered per class. Looked up on the type's
    own ``__mro__`` dicts (a metaclass ``__getattribute__`` cannot answer for it)."""
    for klass in type.__getattribute__(kind, "__mro__"):
        if klass is int:
            return False
        held = type.__getattribute__(klass, "__dict__")
        if any(n in held for n in INT_OPERATORS):
            return True
    return False


def to_z3_bool(value: object) -> z3.BoolRef:
    """The Z3 Bool term for a bool or SymBool."""
    if isinstance(value, SymBool):
        return _bool_term(value)
    if isinstance(value, bool):
        return z3.BoolVal(value)
    raise record_misuse(NotAnIntegerError(f"not a boolean: {value!r} ({type(value).__name__}) at {caller_location()}"))


def is_symbolic(value: object) -> bool:
    return isinstance(value, (SymInt, SymBool))


def _wrap_int(term: z3.ArithRef) -> "SymInt":
    return SymInt(z3.simplify(term))


# Fast paths of the arithmetic and comparisons of SymInt: the same Z3 calls, in the same order,
# as ``z3.simplify(a + z3.IntVal(b))`` (and ``-``, ``*``, ``<=``, ...) make through z3py (a numeral
# for a Python int operand, the application, ``Z3_simplify``), so the terms are the same ASTs
# (tests/test_symbolic_fast.py compares them), without z3py's coercions and the wrapper of each
# intermediate term: a 1024-expert routing case builds ~30,000 of them.
# Only for a plain ``int`` or a SymInt of the same context; anything else takes the z3py path.

_core = z3.z3core
_NUMERAL_AST = z3.Z3_NUMERAL_AST


def _operand(ctx: z3.Context, other: object):
    """The Z3 AST of ``other`` for a fast operation in ``ctx`` (a new numeral for an int, made as
    ``z3.IntVal`` makes it), or None when the z3py path must be taken."""
    kind = type(other)
    if kind is int:
        ref = ctx.ref()
        return _checked(ref, _int_numeral(ref, other))
    if kind is SymInt and _int_term(other).ctx is ctx:
        return _int_term(other).ast
    return None


def simplified(ref, made, ctx: z3.Context, boolean: bool = False):
    """``z3.simplify`` of the new term ``made`` (a raw AST): held while Z3 simplifies it and
    released after the result is wrapped, where z3py releases its wrapper (Z3 frees the
    rewriter's cache first; freeing ``made`` with it would reorder the ids Z3 reuses, and
    ``simplify`` orders the arguments of ``Or`` by id)."""
    _inc_ref(ref, made)
    simple = _checked(ref, _simplify(ref, made))
    out = SymBool(_wrapped(z3.BoolRef, simple, ctx, ref)) if boolean else _sym_int(simple, ctx, ref)
    _dec_ref(ref, made)
    return out


def sum_of_terms(values) -> "SymInt":
    """``SymInt(z3.simplify(z3.Sum([to_z3_int(v) for v in values])))`` (``values`` not empty): z3.Sum's
    Z3 calls without its per-term coercions. The terms' wrappers are released before
    the simplification, where z3.Sum's caller released them, so that Z3 frees (and reuses the
    ids of) the same terms in the same order."""
    terms = [to_z3_int(v) for v in values]
    ctx = terms[0].ctx
    if not all(t.ctx is ctx for t in terms):
        return SymInt(z3.simplify(z3.Sum(terms)))
    ref = ctx.ref()
    made = _core.Z3_mk_add(ref, len(terms), ast_array(terms))
    del terms
    return simplified(ref, made, ctx)


def _sym_int(ast, ctx: z3.Context, ref=None) -> "SymInt":
    """A SymInt over the Int AST ``ast`` (wrapped as ``z3.simplify`` wraps it: ``IntNumRef`` for a
    numeral, else ``ArithRef``). ``ref``: ``ctx.ref()`` if the caller has it."""
    out = object.__new__(SymInt)
    ref = ctx.ref() if ref is None else ref
    _INT_SLOT.__set__(
        out, _wrapped(z3.IntNumRef if get_ast_kind(ref, ast) == _NUMERAL_AST else z3.ArithRef, ast, ctx, ref)
    )
    return out


def _fast_nary(mk, term: z3.ArithRef, other: object, reverse: bool) -> "SymInt | None":
    """``simplify(term op other)`` (``other op term`` if ``reverse``) for ``mk`` one of
    ``Z3_mk_add``/``Z3_mk_sub``/``Z3_mk_mul``; None when ``other`` needs the z3py path."""
    ctx = term.ctx
    o = _operand(ctx, other)
    if o is None:
        return None
    ref = ctx.ref()
    args = (z3.Ast * 2)()
    if reverse:
        args[0], args[1] = o, term.ast
    else:
        args[0], args[1] = term.ast, o
    return simplified(ref, mk(ref, 2, args), ctx)


#: The comparison Python calls instead when the right operand's wrapper is an ``IntNumRef`` (a
#: subclass of the left's ``ArithRef``): a reflected rich comparison has priority then, so
#: ``x >= z3.IntVal(c)`` builds ``c <= x`` (and ``x == c`` builds ``c == x``).
_REFLECTED = {}


def _fast_compare(mk, term: z3.ArithRef, other: object) -> "SymBool | None":
    """``simplify(term cmp to_z3_int(other))`` for ``mk`` one of ``Z3_mk_le``/``lt``/``gt``/``ge``/
    ``eq``/``distinct``, as z3py builds it (reflected, see :data:`_REFLECTED`); None when ``other``
    needs the z3py path."""
    ctx = term.ctx
    o = _operand(ctx, other)
    if o is None:
        return None
    ref = ctx.ref()
    if type(term) is z3.ArithRef and (type(other) is int or type(other.term) is z3.IntNumRef):
        mk, first, second = _REFLECTED[mk], o, term.ast
    else:
        first, second = term.ast, o
    if mk is _core.Z3_mk_distinct:
        args = (z3.Ast * 2)()
        args[0], args[1] = first, second
        made = mk(ref, 2, args)
    else:
        made = mk(ref, first, second)
    return simplified(ref, made, ctx, boolean=True)


_REFLECTED.update(
    {
        _core.Z3_mk_le: _core.Z3_mk_ge,
        _core.Z3_mk_ge: _core.Z3_mk_le,
        _core.Z3_mk_lt: _core.Z3_mk_gt,
        _core.Z3_mk_gt: _core.Z3_mk_lt,
        _core.Z3_mk_eq: _core.Z3_mk_eq,
        _core.Z3_mk_distinct: _core.Z3_mk_distinct,
    }
)


def py_floordiv(a: z3.ArithRef, b: IntLike, op=operator.floordiv) -> z3.ArithRef:
    """Python's ``a // b`` on a Z3 term (floor division, sign of the divisor); ``op``: the int
    operator whose ``ZeroDivisionError`` a zero divisor raises."""
    if _concrete_int(b):
        if b == 0:
            raise _python_zero_division(op)
        # SMT-LIB div is floor division for a positive divisor.
        q = a / b if b > 0 else (-a) / (-b)
        _record_lemma(a, b, q)
        return q
    bt = to_z3_int(b)
    _zero_divisor_path(bt, op)
    _record_divisor(bt)
    q = z3.If(bt > 0, a / bt, (-a) / (-bt))
    _record_lemma(a, bt, q)
    return q


def py_mod(a: z3.ArithRef, b: IntLike) -> z3.ArithRef:
    """Python's ``a % b`` on a Z3 term (result has the sign of the divisor)."""
    if _concrete_int(b):
        if b == 0:
            raise _python_zero_division(operator.mod)
        if b > 0:
            return a % b  # SMT-LIB mod is in [0, b) for b > 0, as in Python
        return a - b * py_floordiv(a, b, operator.mod)
    bt = to_z3_int(b)
    return a - bt * py_floordiv(a, b, operator.mod)


class _SymbolicType(type):
    """The metaclass of :class:`SymInt` and :class:`SymBool`: their own type, which ``type(x)``
    gives where ``x.__class__`` says ``int`` (or ``bool``), observed during a watched symbolic run
    by code on the model's behalf (:func:`_from_model`: the model's own code, or the standard
    library's it called) is misuse unless the observation answers as for ``int`` (``bool``).
    Library code that dispatches on ``type(x)`` (its name: ``reprlib``; an attribute: ``pprint``'s
    ``type(x).__repr__``; a table keyed by it: ``copy``'s, a model's ``functools`` registry) decides
    for an int and its stand-in differently and may call the model's code for one only. Trust is
    the executing code's, never its caller's: a model's function a library calls is audited as the
    model's (:func:`_watch_call`), and a library's read of the real type on a model's behalf is the
    model's read. An attribute read both types answer alike (``hasattr(type(x),
    "__dataclass_fields__")``: neither has it) and ``copy``'s dispatch with its own tables (an int
    and its stand-in both copy as themselves) are not misuse. An identity test (``type(x) is int``)
    calls no method and is not seen (docs/soundness.md)."""

    def __getattribute__(cls, name: str):
        if _WATCHED_RUN[0] is not None or sys.gettrace() is _watch_call:
            _type_observed(cls, f"type(x).{name}", name)
        return type.__getattribute__(cls, name)

    def __hash__(cls) -> int:
        if _WATCHED_RUN[0] is not None or sys.gettrace() is _watch_call:
            _type_observed(cls, "hash(type(x)) (a lookup keyed by the type)")
        return type.__hash__(cls)

    def __eq__(cls, other: object):
        if _WATCHED_RUN[0] is not None or sys.gettrace() is _watch_call:
            _type_observed(cls, "type(x) == ... (a comparison of the type)")
        return type.__eq__(cls, other)

    def __ne__(cls, other: object):
        if _WATCHED_RUN[0] is not None or sys.gettrace() is _watch_call:
            _type_observed(cls, "type(x) != ... (a comparison of the type)")
        return type.__ne__(cls, other)

    def __repr__(cls) -> str:
        if _WATCHED_RUN[0] is not None or sys.gettrace() is _watch_call:
            _type_observed(cls, "repr(type(x))")
        return type.__repr__(cls)

    def __instancecheck__(cls, instance: object) -> bool:
        if _WATCHED_RUN[0] is not None or sys.gettrace() is _watch_call:
            _type_observed(cls, "isinstance(..., type(x)) (a type test against the type)")
        return type.__instancecheck__(cls, instance)

    def __subclasscheck__(cls, subclass: type) -> bool:
        if _WATCHED_RUN[0] is not None or sys.gettrace() is _watch_call:
            _type_observed(cls, "issubclass(..., type(x)) (a type test against the type)")
        return type.__subclasscheck__(cls, subclass)


_OBSERVING = [False]
_ABSENT = object()


def _type_observed(cls: type, what: str, attribute: str | None = None) -> None:
    """Record as misuse that code on the model's behalf (the caller's caller, and outward past the
    standard library's frames) observed ``cls``, a symbolic value's own type, by ``what`` (reading
    ``attribute`` of it), unless ``int`` (``bool``) answers alike or ``copy`` dispatches as for int."""
    if _OBSERVING[0] or not _watched():
        return
    _OBSERVING[0] = True
    try:
        frame = sys._getframe(2)
        if _from_model(frame) and not _copy_dispatch(frame.f_code):
            if attribute is not None and _answers_alike(cls, attribute):
                return
            code = frame.f_code
            _misuse_here(
                f"{code.co_name} at {code.co_filename}:{frame.f_lineno} reads {what} of a symbolic value "
                f"on the model's behalf: the type is capproof's {type.__getattribute__(cls, '__name__')}, "
                "not int or bool, and a dispatch on it may take a path (or call the model's code) the ints do not"
            )
    except BaseException:  # noqa: BLE001 - not checked (the recursion limit): fail closed
        _misuse_here(f"{what} of a symbolic value in a symbolic run could not be checked")
    finally:
        _OBSERVING[0] = False


def _answers_alike(cls: type, name: str) -> bool:
    """Whether ``cls.name`` and the same attribute of the int type it stands for are one object,
    or both missing."""
    try:
        own = type.__getattribute__(cls, name)
    except AttributeError:
        own = _ABSENT
    try:
        theirs = getattr(bool if cls is SymBool else types.BuiltinMethodType if cls is _IntMethod else int, name)
    except AttributeError:
        theirs = _ABSENT
    return own is theirs


def _copy_tables() -> tuple:
    """``copy``'s functions and the atomic copiers its tables map ``int`` and ``bool`` to, with
    their code, as loaded before any model (``dataclasses`` imports ``copy`` before capproof's
    symbolic module runs)."""
    import copy

    atomic = (copy._copy_immutable, copy._deepcopy_atomic)  # type: ignore[attr-defined]
    return (
        frozenset({copy.copy.__code__, copy.deepcopy.__code__}),
        copy,
        atomic,
        tuple(f.__code__ for f in atomic),
    )


_COPY = _copy_tables()


def _copy_dispatch(code) -> bool:
    """Whether ``code`` is ``copy.copy``'s or ``copy.deepcopy``'s own while ``copy``'s tables map
    ``int`` and ``bool`` to its own atomic copiers: they copy an int as itself, and its stand-in
    (no table entry) as itself too (``SymInt.__copy__``/``__deepcopy__``)."""
    codes, copy, (immutable, atomic), (immutable_code, atomic_code) = _COPY
    if code not in codes:
        return False
    shallow = vars(copy).get("_copy_dispatch", {})
    deep = vars(copy).get("_deepcopy_dispatch", {})
    return (
        immutable.__code__ is immutable_code
        and atomic.__code__ is atomic_code
        and all(shallow.get(t) is immutable and deep.get(t) is atomic for t in (int, bool))
    )


def _refuse_write(name: str, what: str, of: str = "value") -> NoReturn:
    """Refuse a write or deletion (``what``) of attribute ``name`` of a symbolic value (``of``:
    ``"value"`` or its ``"method"``), whoever asks: on an int or a C method it raises
    ``AttributeError``, which a model can catch, while the slot of a symbolic value would take it
    and change what the value means on the symbolic run only. Recorded misuse (an ``error``)."""
    raise record_misuse(
        AttributeError(
            f"the model {what} attribute {name!r} of a symbolic {of} at {caller_location()}: an int's "
            "attributes (and its methods') cannot be written or deleted"
        )
    )


class SymInt(metaclass=_SymbolicType):
    """A symbolic integer (a Z3 ``Int`` term) with Python ``int`` semantics.

    ``isinstance(x, int)`` is True (``__class__`` reports ``int``, as CrossHair's proxies do), so
    ``isinstance`` checks in a model take the branch they take on ints. Any error Python raises on
    it that a model could catch (a missing method: ``AttributeError``; an unsupported operator:
    ``TypeError``) is recorded in the active :class:`Trace` first, so an ``except`` fallback
    cannot turn a false claim into a proof.
    """

    __slots__ = ("term",)

    @property  # type: ignore[misc]
    def __class__(self):  # noqa: D105 - isinstance(x, int) is True, as on ints
        return int

    def __getattr__(self, name: str):
        raise record_misuse(
            AttributeError(
                f"symbolic integer has no attribute {name!r} (capproof supports +, -, *, //, %, divmod, abs, "
                f"comparisons, >>/<<, & | ^ with constant ints, ~, bit_length()) at {caller_location()}"
            )
        )

    def __new__(cls, term: z3.ArithRef) -> "SymInt":
        # the term is set here, once: ``__init__`` is ``object``'s, as an int's (a second
        # ``b.__init__(t)`` changes nothing), and a write of the slot is refused (``__setattr__``)
        if not z3.is_int(term):
            raise TypeError(f"SymInt needs a Z3 Int term, got {term.sort()}")
        out = object.__new__(cls)
        _INT_SLOT.__set__(out, term)
        return out

    def __setattr__(self, name: str, value: object) -> None:
        _refuse_write(name, "writes")

    def __delattr__(self, name: str) -> None:
        _refuse_write(name, "deletes")

    @classmethod
    def var(cls, name: str) -> "SymInt":
        """``SymInt(z3.Int(name))``: z3py's calls (the name's symbol, the Int sort, the constant,
        the wrapper's reference) without its wrappers and checks (every scalar and
        batch entry of every case and aggregate batch). The same constant, hence the same id."""
        if cls is not SymInt or type(name) is not str:
            return cls(z3.Int(name))
        ctx = z3.main_ctx()
        ref = ctx.ref()
        const = _checked(ref, _mk_const(ref, _z3core.Z3_mk_string_symbol(ref, name), _mk_int_sort(ref)))
        out = object.__new__(SymInt)
        _INT_SLOT.__set__(out, _wrapped(z3.ArithRef, const, ctx, ref))
        return out

    def __repr__(self) -> str:
        _repr_outside_capproof(_int_term(self))
        return f"SymInt({_int_term(self)})"

    def __copy__(self):  # an int is immutable: copy.copy(5) is 5
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce_ex__(self, protocol):
        raise record_misuse(
            NotConcreteError(
                f"pickling (pickle, copyreg, a ForkingPickler) of symbolic {_int_term(self)} at {caller_location()}"
            )
        )

    def __reduce__(self):
        return self.__reduce_ex__(2)

    def __sizeof__(self) -> int:
        raise record_misuse(
            NotConcreteError(f"sys.getsizeof()/__sizeof__ of symbolic {_int_term(self)} at {caller_location()}")
        )

    def __str__(self) -> str:
        raise record_misuse(NotConcreteError(f"str() of symbolic {_int_term(self)} at {caller_location()}"))

    def __hash__(self) -> int:
        value = _case_split(_int_term(self))  # a dict or set lookup: one path per value the key can take
        if value is None:
            raise record_misuse(
                NotConcreteError(
                    f"a symbolic integer in a set or dict key at {caller_location()} (hashing cannot compare "
                    f"symbolic values; more than {CASE_SPLIT_LIMIT} values to split)"
                )
            )
        return hash(value)

    def __format__(self, spec: str) -> str:
        raise record_misuse(NotConcreteError(f"str()/format() of symbolic {_int_term(self)} at {caller_location()}"))

    # arithmetic -----------------------------------------------------------------------------
    def __add__(self, other: IntLike) -> "SymInt":
        out = _fast_nary(_core.Z3_mk_add, _int_term(self), other, False)
        return out if out is not None else _wrap_int(_int_term(self) + to_z3_int(other))

    def __radd__(self, other: IntLike) -> "SymInt":
        out = _fast_nary(_core.Z3_mk_add, _int_term(self), other, True)
        return out if out is not None else _wrap_int(to_z3_int(other) + _int_term(self))

    def __sub__(self, other: IntLike) -> "SymInt":
        out = _fast_nary(_core.Z3_mk_sub, _int_term(self), other, False)
        return out if out is not None else _wrap_int(_int_term(self) - to_z3_int(other))

    def __rsub__(self, other: IntLike) -> "SymInt":
        out = _fast_nary(_core.Z3_mk_sub, _int_term(self), other, True)
        return out if out is not None else _wrap_int(to_z3_int(other) - _int_term(self))

    def __mul__(self, other: IntLike) -> "SymInt":
        out = _fast_nary(_core.Z3_mk_mul, _int_term(self), other, False)
        return out if out is not None else _wrap_int(_int_term(self) * to_z3_int(other))

    def __rmul__(self, other: IntLike) -> "SymInt":
        out = _fast_nary(_core.Z3_mk_mul, _int_term(self), other, True)
        return out if out is not None else _wrap_int(to_z3_int(other) * _int_term(self))

    def __floordiv__(self, other: IntLike) -> "SymInt":
        if type(other) is int and other > 0:  # py_floordiv's calls for a positive constant, through the C API
            ctx = _int_term(self).ctx
            ref = ctx.ref()
            q = _sym_int(
                _core.Z3_mk_div(
                    ref, _int_term(self).ast, _core.Z3_mk_numeral(ref, str(other), _core.Z3_mk_int_sort(ref))
                ),
                ctx,
            ).term
            _record_lemma(_int_term(self), other, q)
            return _sym_int(_core.Z3_simplify(ref, q.ast), ctx)
        _reject_float(other)
        return _wrap_int(py_floordiv(_int_term(self), other))

    def __rfloordiv__(self, other: IntLike) -> "SymInt":
        _reject_float(other)
        return _wrap_int(py_floordiv(to_z3_int(other), self))

    def __mod__(self, other: IntLike) -> "SymInt":
        _reject_float(other)
        return _wrap_int(py_mod(_int_term(self), other))

    def __rmod__(self, other: IntLike) -> "SymInt":
        _reject_float(other)
        return _wrap_int(py_mod(to_z3_int(other), self))

    def __truediv__(self, other: object) -> "Quotient":
        return Quotient(self, other)

    def __rtruediv__(self, other: object) -> "Quotient":
        return Quotient(other, self)

    def __divmod__(self, other: IntLike) -> tuple:
        return self // other, self % other

    def __rdivmod__(self, other: IntLike) -> tuple:
        return other // self, other % self

    # bit operations (Python's two's-complement semantics on unbounded ints) -------------------
    def __rshift__(self, other: IntLike) -> "SymInt":
        """``x >> k`` = ``x // 2**k`` (floor, also for negative ``x``)."""
        if _concrete_int(other):
            if other < 0:
                raise _as_python(ValueError("negative shift count"))
            return self // (2**other)
        k = to_z3_int(other)
        _side_condition(z3.And(k >= 0, k <= BIT_WIDTH), lambda: f"shift count {k} in 0..{BIT_WIDTH}")
        return _wrap_int(_int_term(self) / _pow2(k))  # SMT-LIB div floors for a positive divisor

    def __rrshift__(self, other: IntLike) -> "SymInt":
        return SymInt(to_z3_int(other)) >> self

    def __lshift__(self, other: IntLike) -> "SymInt":
        """``x << k`` = ``x * 2**k``."""
        if _concrete_int(other):
            if other < 0:
                raise _as_python(ValueError("negative shift count"))
            return self * (2**other)
        k = to_z3_int(other)
        _side_condition(z3.And(k >= 0, k <= BIT_WIDTH), lambda: f"shift count {k} in 0..{BIT_WIDTH}")
        return _wrap_int(_int_term(self) * _pow2(k))

    def __rlshift__(self, other: IntLike) -> "SymInt":
        return SymInt(to_z3_int(other)) << self

    def __and__(self, other: object) -> "SymInt":
        """``x & c`` for a constant int ``c`` (Python's two's-complement semantics on unbounded
        ints, negative ``x`` and ``c`` included): ``x mod 2**k`` for ``c = 2**k - 1``, ``x``
        rounded down to a multiple of ``2**k`` for ``c = ~(2**k - 1)``, and otherwise the sum of
        the bits of ``x`` that ``c`` keeps (``(x // 2**i) % 2`` for each bit ``i`` of ``c``, or of
        ``~c`` for a negative ``c``; exact, linear). ``c`` beyond ``BIT_WIDTH`` bits, or a
        symbolic ``c``, is a recorded error."""
        if _concrete_int(other):
            return self._mask(int(other), "&")
        raise record_misuse(
            NotConcreteError(
                f"`&` of a symbolic integer with {other!r} at {caller_location()}: only a constant int mask "
                "is supported"
            )
        )

    __rand__ = __and__

    def _mask(self, m: int, op: str) -> "SymInt":
        """``self & m`` for a concrete int ``m`` (see ``__and__``)."""
        if m >= 0 and m & (m + 1) == 0:
            return self % (m + 1)
        if m < 0 and (-m) & (-m - 1) == 0:
            return (self // -m) * -m
        kept = m if m >= 0 else ~m
        if kept.bit_length() > BIT_WIDTH:
            raise record_misuse(
                NotConcreteError(
                    f"`{op}` of a symbolic integer with a constant of more than {BIT_WIDTH} bits at {caller_location()}"
                )
            )
        bits = z3.Sum(
            [z3.IntVal(1 << i) * ((_int_term(self) / (1 << i)) % 2) for i in range(kept.bit_length()) if kept >> i & 1]
        )
        # SMT-LIB div/mod by a positive constant floor, as Python's // and % do
        return _wrap_int(bits if m >= 0 else _int_term(self) - bits)

    def __or__(self, other: object) -> "SymInt":
        """``x | c`` for a constant int ``c``: ``x + c - (x & c)`` (exact for every sign)."""
        if _concrete_int(other):
            return _wrap_int(_int_term(self) + int(other) - self._mask(int(other), "|").term)
        self._unsupported(other, "|")

    __ror__ = __or__

    def __xor__(self, other: object) -> "SymInt":
        """``x ^ c`` for a constant int ``c``: ``x + c - 2 * (x & c)`` (exact for every sign)."""
        if _concrete_int(other):
            return _wrap_int(_int_term(self) + int(other) - 2 * self._mask(int(other), "^").term)
        self._unsupported(other, "^")

    __rxor__ = __xor__

    def _unsupported(self, other: object = None, op: str = "?") -> "SymInt":
        raise record_misuse(TypeError(f"`{op}` on a symbolic integer is not supported at {caller_location()}"))

    def __matmul__(self, other: object):
        self._unsupported(other, "@")

    __rmatmul__ = __matmul__

    def __round__(self, ndigits: object = None) -> "SymInt":
        """``round(x)`` and ``round(x, n >= 0)`` are ``x`` (as for ints); a negative ``n`` is unsupported."""
        if ndigits is None or (_concrete_int(ndigits) and ndigits >= 0):
            return self
        self._unsupported(ndigits, "round() to a negative number of digits")

    # No ``__len__``, ``__iter__``, ``__getitem__``, ``__contains__`` or ``__call__``: an int has
    # none, and C code tests for the slot without calling it (``"%s" % x`` asks whether ``x`` is a
    # mapping, ``callable(x)`` whether it can be called): ``len(x)``, ``x[0]``, ``x()`` raise
    # Python's own TypeError, as on the int, which the exception watch records as misuse.

    def __invert__(self) -> "SymInt":
        """``~x`` = ``-x - 1``."""
        return _wrap_int(-_int_term(self) - 1)

    def bit_length(self) -> "SymInt":
        """``int.bit_length``: bits of ``abs(x)`` (0 for 0), exact for ``|x| < 2**BIT_WIDTH``
        (a recorded side condition)."""
        a = z3.If(_int_term(self) >= 0, _int_term(self), -_int_term(self))
        _side_condition(a < 2**BIT_WIDTH, lambda: f"|{_int_term(self)}| < 2**{BIT_WIDTH} for bit_length()")
        return _wrap_int(z3.Sum([z3.If(a >= 2**i, z3.IntVal(1), z3.IntVal(0)) for i in range(BIT_WIDTH)]))

    def __trunc__(self) -> "SymInt":
        return self

    __floor__ = __ceil__ = __trunc__

    # the attributes ints have (so ``hasattr`` answers as on ints)
    @property
    def numerator(self) -> "SymInt":
        return self

    @property
    def denominator(self) -> int:
        return 1

    real = numerator

    @property
    def imag(self) -> int:
        return 0

    def conjugate(self) -> "SymInt":
        return self

    def __neg__(self) -> "SymInt":
        ctx = _int_term(self).ctx
        ref = ctx.ref()
        return simplified(ref, _core.Z3_mk_unary_minus(ref, _int_term(self).ast), ctx)

    def __pos__(self) -> "SymInt":
        return self

    def __abs__(self) -> "SymInt":
        return _wrap_int(z3.If(_int_term(self) >= 0, _int_term(self), -_int_term(self)))

    def __pow__(self, other: object, modulo: object = None) -> "SymInt":
        if modulo is None and _concrete_int(other) and other >= 0:
            result: z3.ArithRef = z3.IntVal(1)
            for _ in range(other):
                result = result * _int_term(self)
            return _wrap_int(result)
        raise record_misuse(
            NotConcreteError(
                f"`**`/pow() needs a concrete non-negative int exponent (and no modulus) at {caller_location()}"
            )
        )

    def __rpow__(self, other: object, modulo: object = None) -> "SymInt":
        """``b ** k`` for a concrete int base and a symbolic exponent ``k`` in ``0..BIT_WIDTH``
        (a recorded side condition; a negative ``k`` gives a float in Python)."""
        if modulo is None and _concrete_int(other) and not isinstance(other, bool):
            k = _int_term(self)
            _side_condition(z3.And(k >= 0, k <= BIT_WIDTH), lambda: f"exponent {k} in 0..{BIT_WIDTH}")
            out: z3.ArithRef = z3.IntVal(other**BIT_WIDTH)
            for i in reversed(range(BIT_WIDTH)):
                out = z3.If(k == i, z3.IntVal(other**i), out)
            return _wrap_int(out)
        raise record_misuse(
            NotConcreteError(
                f"`**`/pow() of {other!r} with a symbolic exponent at {caller_location()}: only a concrete int base "
                "and no modulus are supported"
            )
        )

    # comparisons ----------------------------------------------------------------------------
    def __eq__(self, other: object) -> "SymBool":  # type: ignore[override]
        if not isinstance(other, (int, float, SymInt, SymBool)):
            return _foreign_equality(self, other, "==")  # as int == "a": False, by identity
        out = _fast_compare(_core.Z3_mk_eq, _int_term(self), other)
        return out if out is not None else SymBool(z3.simplify(_int_term(self) == to_z3_int(other)))

    def __ne__(self, other: object) -> "SymBool":  # type: ignore[override]
        if not isinstance(other, (int, float, SymInt, SymBool)):
            return _foreign_equality(self, other, "!=")
        out = _fast_compare(_core.Z3_mk_distinct, _int_term(self), other)
        return out if out is not None else SymBool(z3.simplify(_int_term(self) != to_z3_int(other)))

    def __lt__(self, other: IntLike) -> "SymBool":
        out = _fast_compare(_core.Z3_mk_lt, _int_term(self), other)
        return out if out is not None else SymBool(z3.simplify(_int_term(self) < to_z3_int(other)))

    def __le__(self, other: IntLike) -> "SymBool":
        out = _fast_compare(_core.Z3_mk_le, _int_term(self), other)
        return out if out is not None else SymBool(z3.simplify(_int_term(self) <= to_z3_int(other)))

    def __gt__(self, other: IntLike) -> "SymBool":
        out = _fast_compare(_core.Z3_mk_gt, _int_term(self), other)
        return out if out is not None else SymBool(z3.simplify(_int_term(self) > to_z3_int(other)))

    def __ge__(self, other: IntLike) -> "SymBool":
        out = _fast_compare(_core.Z3_mk_ge, _int_term(self), other)
        return out if out is not None else SymBool(z3.simplify(_int_term(self) >= to_z3_int(other)))

    # things that need a concrete value --------------------------------------------------------
    def _concrete(self, what: str):
        raise record_misuse(
            NotConcreteError(f"{what} needs a concrete int, got symbolic {_int_term(self)} at {caller_location()}")
        )

    def __index__(self) -> int:
        value = _case_split(_int_term(self))
        if value is None:
            self._concrete("an index, range() or math.gcd")
        return value  # type: ignore[return-value]

    def __int__(self) -> int:
        value = _case_split(_int_term(self))
        if value is None:
            self._concrete("int()")
        return value  # type: ignore[return-value]

    def __float__(self) -> float:
        raise record_misuse(
            RealArithmeticError(f"real arithmetic: float() of a symbolic integer at {caller_location()}")
        )

    def __bool__(self) -> bool:
        explorer = getattr(trace_state, "explorer", None)
        if explorer is not None:  # ``if n:`` means ``n != 0``
            return explorer.decide(_int_term(self) != 0, caller_location())
        raise record_misuse(
            SymbolicBranchError(
                f"branch on symbolic value {_int_term(self)} at {caller_location()} "
                "(use capproof.select for branches on symbolic values)"
            )
        )


class SymBool(metaclass=_SymbolicType):
    """A symbolic condition (a Z3 ``Bool`` term) with Python ``bool`` semantics.

    Combine conditions with ``&``, ``|``, ``^`` (or :func:`capproof.all_of`/``any_of``/``not_``),
    never with ``if``/``and``/``or`` outside :func:`explore`. Everything else a ``bool`` does is
    done as Python does it, since a bool is the int 0 or 1: arithmetic, ``//``, ``%``, unary
    ``-``/``+``, ``abs``, ``~`` (``~True == -2``: int inversion, not a logical not), comparisons
    with ints, ``&``/``|``/``^`` with an int (an int result), ``math.floor``, ``bit_length()``;
    each gives a :class:`SymInt` (or a ``SymBool`` where Python gives a bool). ``isinstance(c,
    bool)`` and ``isinstance(c, int)`` are True and ``c.__class__`` is ``bool`` in a model's code
    (capproof's and Z3's own code see ``SymBool``). What cannot be matched (a hash, ``int()``, an
    index, ``type(c)``, ``c is True``) is recorded as misuse (:func:`_misuse`) or found statically
    (:func:`introspections`): the obligation is an error whatever the model catches.
    """

    __slots__ = ("term",)

    @property  # type: ignore[misc]
    def __class__(self):  # noqa: D105 - a bool in a model's eyes, SymBool in capproof's and Z3's
        caller = sys._getframe(1).f_code
        if caller.co_filename.startswith(_OWN_DIRS) and genuine(caller):
            return SymBool
        return bool

    def __new__(cls, term: z3.BoolRef) -> "SymBool":
        # as SymInt's: the term set once, ``__init__`` is ``object``'s, a write of the slot refused
        out = object.__new__(cls)
        _BOOL_SLOT.__set__(out, term)
        return out

    def __setattr__(self, name: str, value: object) -> None:
        _refuse_write(name, "writes")

    def __delattr__(self, name: str) -> None:
        _refuse_write(name, "deletes")

    def __repr__(self) -> str:
        _repr_outside_capproof(_bool_term(self))
        return f"SymBool({_bool_term(self)})"

    def __copy__(self):  # an int is immutable: copy.copy(5) is 5
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce_ex__(self, protocol):
        raise record_misuse(
            NotConcreteError(
                f"pickling (pickle, copyreg, a ForkingPickler) of symbolic {_bool_term(self)} at {caller_location()}"
            )
        )

    def __reduce__(self):
        return self.__reduce_ex__(2)

    def __sizeof__(self) -> int:
        raise record_misuse(
            NotConcreteError(f"sys.getsizeof()/__sizeof__ of symbolic {_bool_term(self)} at {caller_location()}")
        )

    def __str__(self) -> str:  # "True"/"False" on a bool: not matchable
        raise record_misuse(
            NotConcreteError(f"str() of symbolic condition ({_bool_term(self)}) at {caller_location()}")
        )

    def __format__(self, spec: str) -> str:
        raise record_misuse(
            NotConcreteError(f"str()/format() of symbolic condition ({_bool_term(self)}) at {caller_location()}")
        )

    def __hash__(self) -> int:
        explorer = getattr(trace_state, "explorer", None)
        if explorer is None:
            raise record_misuse(NotConcreteError(f"a symbolic condition in a set or dict key at {caller_location()}"))
        return hash(explorer.decide(_bool_term(self), caller_location()))  # hash(True) == 1, as an int key

    def __getattr__(self, name: str):
        if not name.startswith("_") and hasattr(int, name):  # bit_length(), numerator, real, ...: as on ints
            return getattr(self._as_int(), name)
        raise record_misuse(AttributeError(f"symbolic condition has no attribute {name!r} at {caller_location()}"))

    def __int__(self) -> int:
        explorer = getattr(trace_state, "explorer", None)
        if explorer is None:
            raise record_misuse(
                NotConcreteError(f"int() of symbolic condition ({_bool_term(self)}) at {caller_location()}")
            )
        return int(explorer.decide(_bool_term(self), caller_location()))  # one path per truth value

    __index__ = __int__

    def __float__(self) -> float:
        raise record_misuse(
            RealArithmeticError(f"real arithmetic: float() of a symbolic condition at {caller_location()}")
        )

    # a bool is the int 0 or 1 in arithmetic (``sum(x > 0 for x in xs)`` counts)
    def _as_int(self) -> "SymInt":
        return SymInt(z3.If(_bool_term(self), z3.IntVal(1), z3.IntVal(0)))

    def __bool__(self) -> bool:
        explorer = getattr(trace_state, "explorer", None)
        if explorer is not None:
            return explorer.decide(_bool_term(self), caller_location())
        raise record_misuse(
            SymbolicBranchError(
                f"branch on symbolic condition ({_bool_term(self)}) at {caller_location()} "
                "(use capproof.select for branches on symbolic values)"
            )
        )

    # bool op bool is a bool; bool op int is an int (``True & 3 == 1``)
    def __and__(self, other: object) -> "SymBool | SymInt":
        if _is_boolean(other):
            return SymBool(z3.simplify(z3.And(_bool_term(self), to_z3_bool(other))))
        return self._as_int() & other

    __rand__ = __and__

    def __or__(self, other: object) -> "SymBool | SymInt":
        if _is_boolean(other):
            return SymBool(z3.simplify(z3.Or(_bool_term(self), to_z3_bool(other))))
        return self._as_int() | other

    __ror__ = __or__

    def __xor__(self, other: object) -> "SymBool | SymInt":
        if _is_boolean(other):
            return SymBool(z3.simplify(z3.Xor(_bool_term(self), to_z3_bool(other))))
        return self._as_int() ^ other

    __rxor__ = __xor__

    def __invert__(self) -> "SymInt":
        """``~c`` is ``-c - 1`` as on a bool (``~True == -2``, truthy): not a logical not (use
        :func:`capproof.not_`)."""
        return ~self._as_int()

    def __eq__(self, other: object) -> "SymBool":  # type: ignore[override]
        if _is_boolean(other):
            return SymBool(z3.simplify(_bool_term(self) == to_z3_bool(other)))
        if isinstance(other, (int, float, SymInt)):
            return self._as_int() == other
        return _foreign_equality(self, other, "==")  # as True == "a": False, by identity

    def __ne__(self, other: object) -> "SymBool":  # type: ignore[override]
        if _is_boolean(other):
            return SymBool(z3.simplify(_bool_term(self) != to_z3_bool(other)))
        if isinstance(other, (int, float, SymInt)):
            return self._as_int() != other
        return _foreign_equality(self, other, "!=")


def _foreign_equality(value: "SymInt | SymBool", other: object, op: str):
    """``value == other`` (``op``) for an ``other`` that is no int, float or symbolic value, as
    Python continues on an int: ``other``'s own reflected comparison (one written in Python is left
    to Python, which calls it once, as on the int). Where a C one answers for an int
    but not for the symbolic value (``complex.__eq__``: NotImplemented for a non-int, then identity:
    ``37 == 37+0j`` is True, the symbolic one False) the comparison is misuse, not a silent False."""
    method = type(other).__eq__ if op == "==" else type(other).__ne__
    if method is object.__eq__ or method is object.__ne__:
        return NotImplemented  # identity on both sides
    if not isinstance(method, _C_METHODS):
        # a comparison written in Python is the model's own code, run on the symbolic value as on
        # the int: Python calls it (reflected) exactly once after this NotImplemented, as after int's
        return NotImplemented
    answer = method(other, value)
    if answer is NotImplemented:
        if method(other, 0) is NotImplemented:
            return NotImplemented  # (a str, a list, a dataclass of another class: identity on ints too)
        raise record_misuse(
            NotConcreteError(
                f"{op} of a symbolic value with {type(other).__name__} at {caller_location()}: its own comparison "
                "answers for an int and not for a symbolic value"
            )
        )
    return answer


#: the types of a comparison implemented in C (a slot of a builtin or extension type): called here
#: with the symbolic value and with 0, without an effect a model could count
_C_METHODS = (
    types.WrapperDescriptorType,
    types.MethodWrapperType,
    types.BuiltinFunctionType,
    types.MethodDescriptorType,
)


def _is_boolean(value: object) -> bool:
    return type(value) is bool or type(value) is SymBool


def _as_int_method(name: str):
    def method(self, *args):
        return getattr(self._as_int(), name)(*args)

    method.__name__ = name
    method.__doc__ = f"``{name}`` of the int 0 or 1 the condition stands for, as on a bool."
    return method


# every other operator of an int, on the int 0 or 1 (``-c``, ``abs(c)``, ``c // 2``, ``c < 1``,
# ``math.floor(c)``, ``round(c)``): a bool is an int in all of them
for _name in (
    "__add__",
    "__radd__",
    "__sub__",
    "__rsub__",
    "__mul__",
    "__rmul__",
    "__floordiv__",
    "__rfloordiv__",
    "__mod__",
    "__rmod__",
    "__divmod__",
    "__rdivmod__",
    "__truediv__",
    "__rtruediv__",
    "__pow__",
    "__rpow__",
    "__lshift__",
    "__rlshift__",
    "__rshift__",
    "__rrshift__",
    "__neg__",
    "__pos__",
    "__abs__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
    "__floor__",
    "__ceil__",
    "__trunc__",
    "__round__",
):
    setattr(SymBool, _name, _as_int_method(_name))
del _name


class _AsOnInt:
    """A class attribute of SymInt/SymBool that an int instance answers otherwise: read on a
    symbolic value it answers as the int does (``(5).__slots__`` raises AttributeError, then the
    class's ``__getattr__`` records the read as misuse; ``(5).__doc__`` is int's docstring); read
    on the class it is the class's own."""

    __slots__ = ("name", "own", "missing")

    def __init__(self, name: str, own: object, missing: bool):
        self.name, self.own, self.missing = name, own, missing

    def __get__(self, instance, owner=None):
        if instance is None:
            return self.own
        if self.missing:
            raise AttributeError(f"'int' object has no attribute '{self.name}'")
        return getattr(int, self.name)


for _cls in (SymInt, SymBool):
    # not ``__module__``: ``type`` reads that one from the class dict without ``__get__``, and
    # capproof reads ``type(x).__module__`` (the static guard flags a model's read of it)
    for _name, _missing in (("__slots__", True), ("__doc__", False)):
        type.__setattr__(_cls, _name, _AsOnInt(_name, _cls.__dict__.get(_name), _missing))
del _cls, _name, _missing


# --------------------------------------------------------------------------------------------
# What a model reads from a symbolic value: only what an int (a bool) has, of the same kind.
# --------------------------------------------------------------------------------------------


def _int_attribute_kinds(example: int) -> dict[str, str]:
    """``{name: "method" | "data"}`` for every attribute an instance of ``type(example)`` has: a
    method is what an int gives as a C method (``builtin_function_or_method``, ``method-wrapper``)."""
    kinds = {}
    for name in dir(example):
        value = getattr(example, name)
        kinds[name] = "method" if isinstance(value, (types.BuiltinMethodType, types.MethodWrapperType)) else "data"
    return kinds


#: per type a symbolic value stands for, the kind of each attribute its instances have
_INT_KINDS = {int: _int_attribute_kinds(5), bool: _int_attribute_kinds(True)}

_GENERIC_READ = object.__getattribute__


def _read_by_model(frame) -> bool:
    """Whether an attribute read whose caller is ``frame`` (C code's caller when C reads it: a
    ``str.format`` field, ``operator.attrgetter``, ``hasattr``) is on the model's behalf."""
    if frame is not None and frame.f_code is _METHOD_CALL_CODE:
        frame = frame.f_back  # a method of the value the model called (``a.__getattribute__(...)``)
    return _from_model(frame)


def _model_read(value: "SymInt | SymBool", name: str, found: object):
    """What a model's read of ``name`` of a symbolic value gives: the attributes an int (a bool)
    has as data (``numerator``, ``real``, ``__class__``, ``__doc__``) as on the int, the methods it
    has as a C method (``bit_length``, ``__floor__``) as a :class:`_IntMethod` whose own attributes
    are misuse; everything else (an attribute an int lacks: ``term``; an int's C method that is
    ``object``'s own slot here: ``__init_subclass__``, ``__setattr__``) is recorded misuse."""
    stands_for = bool if type(value) is SymBool else int
    kind = _INT_KINDS[stands_for].get(name)
    if kind == "data":
        if name == "__class__":
            return stands_for
        if type(found) in (SymInt, SymBool, int, bool, str):
            return found
    elif kind == "method" and type(found) is types.MethodType:
        func = found.__func__
        if (
            found.__self__ is not None
            and type(func) is types.FunctionType
            and func.__code__.co_filename == _SYMBOLIC_FILE
            and type(found.__self__) in (SymInt, SymBool)
        ):
            return _IntMethod(found)
    raise record_misuse(
        AttributeError(
            f"the model reads attribute {name!r} of a symbolic value at {caller_location()}: an int "
            + ("has no such attribute" if kind is None else "has it as another kind of object")
            + " (capproof allows an int's own data attributes and calling its methods)"
        )
    )


def _sym_int_getattribute(self, name: str):
    found = _GENERIC_READ(self, name)
    if _WATCHED_RUN[0] is None and sys.gettrace() is not _watch_call:
        return found
    if not _read_by_model(sys._getframe(1)):
        return found
    return _model_read(self, name, found)


def _sym_bool_getattribute(self, name: str):
    if name == "__class__":  # a bool in a model's eyes, SymBool in capproof's and Z3's
        frame = sys._getframe(1)
        if frame.f_code is _METHOD_CALL_CODE:
            frame = frame.f_back
        caller = frame.f_code
        return SymBool if caller.co_filename.startswith(_OWN_DIRS) and genuine(caller) else bool
    if _WATCHED_RUN[0] is None and sys.gettrace() is not _watch_call:
        return _GENERIC_READ(self, name)
    if not _read_by_model(sys._getframe(1)):
        return _GENERIC_READ(self, name)
    try:
        found = _GENERIC_READ(self, name)
    except AttributeError:
        if name.startswith("_") or name not in _INT_KINDS[bool]:
            raise  # (the class's __getattr__: misuse)
        found = getattr(self._as_int(), name)  # bit_length, numerator: the int 0 or 1's
    return _model_read(self, name, found)


class _IntMethod(metaclass=_SymbolicType):
    """A method of a symbolic value as a model reads it (``a.bit_length``, ``c.__bool__``): an
    int's is a C method, a symbolic value's a bound Python function, so their attributes differ
    (``__func__``, ``__code__``, ``__qualname__``, ``__text_signature__``, ``inspect.signature``,
    a ``str.format`` field ``{0.bit_length.__qualname__}``). Calling it calls the method; any other
    use of it by the model (an attribute, its repr, a comparison, a hash) is recorded misuse."""

    __slots__ = ("_method",)

    def __new__(cls, method: types.MethodType) -> "_IntMethod":
        out = object.__new__(cls)
        _METHOD_SLOT.__set__(out, method)
        return out

    def __setattr__(self, name: str, value: object) -> None:
        _refuse_write(name, "writes", "method")

    def __delattr__(self, name: str) -> None:
        _refuse_write(name, "deletes", "method")

    def __sizeof__(self) -> int:
        # an int's method is a C method of another size; ``sys.getsizeof`` asks this
        raise record_misuse(
            NotConcreteError(f"sys.getsizeof()/__sizeof__ of a symbolic value's method at {caller_location()}")
        )

    def __call__(self, *args, **kwargs):
        return _METHOD_SLOT.__get__(self)(*args, **kwargs)

    def __getattribute__(self, name: str):
        if _watched() and _from_model(sys._getframe(1)):
            raise record_misuse(
                AttributeError(
                    f"the model reads attribute {name!r} of a symbolic value's method at {caller_location()}: "
                    "an int's methods are C methods, a symbolic value's are not (call it, do not inspect it)"
                )
            )
        return object.__getattribute__(self, name)

    def _misused(self, what: str) -> None:
        if _watched() and _from_model(sys._getframe(2)):
            raise record_misuse(
                NotConcreteError(
                    f"{what} of a symbolic value's method at {caller_location()} (call it, do not inspect it)"
                )
            )

    def __repr__(self) -> str:
        self._misused("repr()")
        return f"_IntMethod({_METHOD_SLOT.__get__(self)!r})"

    def __eq__(self, other: object) -> bool:
        self._misused("a comparison")
        return self is other

    def __ne__(self, other: object) -> bool:
        self._misused("a comparison")
        return self is not other

    def __hash__(self) -> int:
        self._misused("hash()")
        return id(self)

    def __reduce_ex__(self, protocol):
        raise record_misuse(NotConcreteError(f"pickling a symbolic value's method at {caller_location()}"))


#: a symbolic value's own term read past its ``__getattribute__`` (capproof's hot path: every operation)
_int_term = SymInt.__dict__["term"].__get__
_bool_term = SymBool.__dict__["term"].__get__
#: the slots themselves: capproof's only writes of them (a value's ``__setattr__`` refuses every write)
_INT_SLOT = SymInt.__dict__["term"]
_BOOL_SLOT = SymBool.__dict__["term"]
_METHOD_SLOT = _IntMethod.__dict__["_method"]


class _ReadOnlySlot:
    """A symbolic value's slot as its class holds it once capproof has taken the slot's own
    descriptor (above): a read gives the slot's value, a write or deletion by any route is refused
    (:func:`_refuse_write`): ``object.__setattr__(b, "term", t)``, a frozen dataclass's generated
    ``__init__``, ``setattr`` called by C (``map``), which pass by the value's own ``__setattr__``."""

    __slots__ = ("read", "name", "of")

    def __init__(self, slot, of: str) -> None:
        self.read, self.name, self.of = slot.__get__, slot.__name__, of

    def __get__(self, instance, owner=None):
        return self if instance is None else self.read(instance)

    def __set__(self, instance, value) -> None:
        _refuse_write(self.name, "writes", self.of)

    def __delete__(self, instance) -> None:
        _refuse_write(self.name, "deletes", self.of)


for _cls, _slot, _of in (
    (SymInt, _INT_SLOT, "value"),
    (SymBool, _BOOL_SLOT, "value"),
    (_IntMethod, _METHOD_SLOT, "method"),
):
    type.__setattr__(_cls, _slot.__name__, _ReadOnlySlot(_slot, _of))
del _cls, _slot, _of
_METHOD_CALL_CODE = _IntMethod.__call__.__code__
type.__setattr__(SymInt, "__getattribute__", _sym_int_getattribute)
type.__setattr__(SymBool, "__getattribute__", _sym_bool_getattribute)


class Quotient:
    """``a / b`` with an integer numerator and divisor, at least one symbolic.

    Python computes a float; capproof keeps the exact quotient and allows only what gives an
    integer again: ``math.floor`` (``a // b``), ``math.ceil`` (``-(-a // b)``) and ``math.trunc``.
    These equal Python's float-based results when ``|a| < 2**53`` and ``|b| < 2**1000`` (recorded as
    side conditions).
    Any other use (arithmetic, comparison, ``int()``, ``float()``) is a recorded
    :class:`RealArithmeticError`. A zero divisor raises ``ZeroDivisionError`` at ``/`` as in
    Python; a symbolic divisor is recorded for the prover's zero check.
    """

    __slots__ = ("num", "den", "where")

    def __init__(self, num: object, den: object):
        _reject_float(num)
        _reject_float(den)
        if not (isinstance(num, (int, SymInt)) and isinstance(den, (int, SymInt))):
            raise record_misuse(TypeError(f"unsupported `/` operands {num!r}, {den!r} at {caller_location()}"))
        if _concrete_int(den) and den == 0:
            raise _python_zero_division(operator.truediv)
        if isinstance(den, SymInt):
            _zero_divisor_path(den.term, operator.truediv)
            _record_divisor(den.term)
        self.num, self.den, self.where = num, den, caller_location()

    def _exact(self) -> None:
        a, b = to_z3_int(self.num), to_z3_int(self.den)
        _side_condition(
            z3.And(a > -FLOAT_EXACT, a < FLOAT_EXACT),
            lambda: f"|{a}| < 2**53 so that Python's float quotient rounds exactly",
        )
        # and no underflow: a nonzero quotient below the smallest subnormal (2**-1074) rounds to 0.0
        _side_condition(
            z3.And(b > -FLOAT_DIVISOR, b < FLOAT_DIVISOR),
            lambda: f"|{b}| < 2**1000 so that Python's float quotient does not underflow to 0.0",
        )

    def __floor__(self) -> IntLike:
        self._exact()
        return self.num // self.den

    def __ceil__(self) -> IntLike:
        self._exact()
        return -(-self.num // self.den)

    def __trunc__(self) -> IntLike:
        self._exact()
        q = self.num // self.den
        inexact = (self.num % self.den) != 0
        negative = to_z3_bool(self.num < 0) != to_z3_bool(self.den < 0)
        return SymInt(z3.simplify(z3.If(z3.And(to_z3_bool(inexact), negative), to_z3_int(q) + 1, to_z3_int(q))))

    def _real(self, *_: object, **__: object):
        raise record_misuse(
            RealArithmeticError(
                f"real arithmetic: `/` at {self.where} used other than in math.floor/ceil/trunc "
                f"(at {caller_location()}; use //, cdiv or math.ceil(a / b))"
            )
        )

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _real
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pow__ = __rpow__ = __neg__ = __pos__ = __abs__ = _real
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = __bool__ = __int__ = __float__ = __index__ = _real
    __round__ = __hash__ = __str__ = __format__ = _real

    def __repr__(self) -> str:
        return f"Quotient({self.num!r}, {self.den!r})"

    def __getattr__(self, name: str):
        raise record_misuse(AttributeError(f"quotient a / b has no attribute {name!r} at {caller_location()}"))


# --------------------------------------------------------------------------------------------
# Forking: symbolic execution of a function by re-execution with a decision prefix.
# --------------------------------------------------------------------------------------------

#: Paths explored per :func:`explore` call (per case, in the prover) unless told otherwise.
DEFAULT_FORK_BUDGET = 64

#: Resource limit of one feasibility query at a branch point (deterministic; ``unknown`` is
#: treated as feasible, so the limit trades speed against exploring paths that are infeasible).
FEASIBILITY_RLIMIT = 2_000_000

Decision = tuple  # (location: str, condition: z3.BoolRef, taken: bool)


@dataclass
class Path:
    """One execution path of an explored function.

    ``decisions``: ``(location, condition, taken)`` for each branch on a symbolic value, in
    execution order (``location`` is the model's ``file:line``); ``value`` is what the function
    returned on this path, ``error`` the exception it raised instead (``None`` if it returned).
    """

    decisions: list[Decision]
    value: object = None
    error: BaseException | None = None
    #: what this path recorded (divisors, side conditions, misuse: an error raised on a symbolic
    #: value that the function caught makes ``value`` untrustworthy); also copied to the trace
    #: active around :func:`explore`, if any
    trace: Trace = field(default_factory=Trace)

    @property
    def literals(self) -> list[z3.BoolRef]:
        """Each decision as the Z3 fact that holds on this path (``c`` or ``Not(c)``)."""
        return [decision_literal(c, taken) for _, c, taken in self.decisions]

    @property
    def condition(self) -> "SymBool":
        """The path condition: the conjunction of the decisions (``True`` without branches)."""
        return SymBool(z3.And(*self.literals) if self.decisions else z3.BoolVal(True))

    def describe(self) -> str:
        """The path condition as one readable line, e.g. ``dcp > 1 at models/x.py:12``."""
        return " and ".join(f"{show_decision(c, taken)} at {loc}" for loc, c, taken in self.decisions) or "(no branch)"


def decision_literal(condition: z3.BoolRef, taken: bool) -> z3.BoolRef:
    if taken:
        return condition
    return condition.arg(0) if z3.is_not(condition) else z3.Not(condition)


_FLIP = {z3.Z3_OP_LT: ">=", z3.Z3_OP_LE: ">", z3.Z3_OP_GT: "<=", z3.Z3_OP_GE: "<", z3.Z3_OP_EQ: "!="}


def show_decision(condition: z3.BoolRef, taken: bool) -> str:
    """``condition`` (or its negation, a comparison flipped: ``x <= 1`` for not ``x > 1``)."""
    kind = condition.decl().kind() if z3.is_app(condition) else None
    if kind == z3.Z3_OP_NOT:
        return show_decision(condition.arg(0), not taken)
    if taken:
        return str(condition)
    if kind in _FLIP and condition.num_args() == 2:
        return f"{condition.arg(0)} {_FLIP[kind]} {condition.arg(1)}"
    return f"not ({condition})"


@dataclass
class Exploration:
    """The paths of :func:`explore`. Their conditions are pairwise disjoint and, when
    ``complete``, their union is everything ``assume`` admits (minus paths proven infeasible)."""

    paths: list[Path]
    #: False when the fork budget was exhausted before every path was explored
    complete: bool = True
    #: paths left unexplored when the budget ran out
    unexplored: int = 0
    budget: int = DEFAULT_FORK_BUDGET

    @property
    def forked(self) -> bool:
        return len(self.paths) > 1 or any(p.decisions for p in self.paths) or not self.complete


def _same_condition(condition: z3.BoolRef, expected: z3.BoolRef, rlimit: int) -> bool:
    """Whether a replayed branch condition is the one the forking run recorded: structurally
    (``eq``, the fast path) or, failing that, logically (``condition != expected`` is unsat with no
    assumption). A re-execution can rebuild an equivalent condition whose terms differ in form:
    ``z3.simplify`` orders the arguments of an ``Or`` by term ids, which depend on the terms
    created before. Only ``unsat`` counts as the same condition; ``sat`` or ``unknown`` (the
    ``rlimit`` ran out) is a divergence, so a non-deterministic function is never taken for a
    deterministic one."""
    if condition.eq(expected):
        return True
    s = z3.Solver()
    s.set("rlimit", rlimit, "random_seed", 0)  # one call, as encode.new_solver
    s.add(z3.Xor(condition, expected))
    return s.check() == z3.unsat


class _Explorer:
    def __init__(self, prefix: list[Decision], assume: list[z3.BoolRef], check: bool, rlimit: int):
        self.prefix = prefix
        self.decisions: list[Decision] = []
        self.pending: list[list[Decision]] = []
        self.assume = assume
        self.check = check
        self.rlimit = rlimit
        self.infeasible = False
        self.diverged: str | None = None
        #: the frame of :func:`explore` that runs the function (what the model's code is below)
        self.base = None

    def feasible(self, fact: z3.BoolRef) -> bool:
        """Whether ``fact`` may hold on this path (True when feasibility is not checked)."""
        return self._feasible(fact)

    def _feasible(self, fact: z3.BoolRef) -> bool:
        if not self.check:
            return True
        s = z3.Solver()
        s.set("rlimit", self.rlimit, "random_seed", 0)  # one call, as encode.new_solver
        s.add(*self.assume)
        s.add(*[decision_literal(c, t) for _, c, t in self.decisions])
        s.add(fact)
        return s.check() != z3.unsat  # unknown: explore it (sound)

    def bounds(self, term: z3.ArithRef) -> tuple[int, int] | None:
        """The least and greatest value of ``term`` under ``assume`` and the decisions so far
        (None when Z3 cannot tell, or it is unbounded). Deterministic: a re-execution asks the
        same question at the same point of its prefix."""
        simple = z3.simplify(term)
        if z3.is_int_value(simple):
            return simple.as_long(), simple.as_long()
        out = []
        for maximize in (False, True):
            opt = z3.Optimize()
            opt.set("rlimit", self.rlimit)
            opt.add(*self.assume)
            opt.add(*[decision_literal(c, t) for _, c, t in self.decisions])
            handle = opt.maximize(term) if maximize else opt.minimize(term)
            if opt.check() != z3.sat:
                return None
            value = handle.value()
            if not z3.is_int_value(value):
                return None
            out.append(value.as_long())
        return out[0], out[1]

    def decide(self, condition: z3.BoolRef, location: str) -> bool:
        _forked_child()  # a child forked past every audited call reports its first decision
        simple = z3.simplify(condition)
        if z3.is_true(simple):
            return True
        if z3.is_false(simple):
            return False
        i = len(self.decisions)
        if i < len(self.prefix):
            _, expected, taken = self.prefix[i]
            if self.diverged is None and not _same_condition(condition, expected, self.rlimit):
                self.diverged = (
                    f"branch {i + 1} at {location} is on {condition}, but the run that "
                    f"forked it branched on {expected} (the function is not deterministic)"
                )
        else:
            yes, no = self._feasible(condition), self._feasible(z3.Not(condition))
            if yes and no:
                self.pending.append([*self.decisions, (location, condition, False)])
            elif not yes and not no:  # the path so far is infeasible (an earlier check was unknown)
                self.infeasible = True
            taken = yes or not no
        self.decisions.append((location, condition, taken))
        return taken


def explore(
    fn,
    *,
    budget: int = DEFAULT_FORK_BUDGET,
    assume=(),
    check_feasible: bool = True,
    rlimit: int = FEASIBILITY_RLIMIT,
    watch: bool = True,
    split: bool = True,
) -> Exploration:
    """Run ``fn()`` once per path through its branches on symbolic values.

    Inside, ``bool()`` of a :class:`SymBool` (``if``, ``and``/``or``/``not``, ``x if c else y``,
    builtin ``min``/``max``, ...) does not raise: the first run takes ``True`` at each new branch
    point, and every branch point whose other direction is feasible queues a re-execution with
    that decision prefix and the other direction (depth first). A condition that simplifies to a
    constant is no branch point. ``assume`` (Z3 Bool terms, e.g. domain bounds) and the decisions
    so far decide feasibility with a cheap solver query per direction (``check_feasible``); only
    an ``unsat`` answer prunes a direction, ``unknown`` explores it. At most ``budget`` paths are
    run; more pending paths give ``complete=False`` (the caller must then not conclude anything
    about the unexplored part). ``fn`` must be deterministic: a re-execution that reaches a
    condition at a replayed branch that is not equivalent to the recorded one (structurally equal,
    else ``a != b`` unsat within ``rlimit``) gets a :class:`SymbolicBranchError` as its error.

    Exceptions raised by ``fn`` (except ``KeyboardInterrupt``) become the path's ``error``; what
    each run recorded (divisors, side conditions, caught misuse) is the path's ``trace``. With
    ``watch`` (a model's symbolic run) every TypeError ``fn``'s own frames catch is recorded as
    misuse (:func:`_watch_call`); the engine tracer runs an engine's constructors without it (an
    engine's own ``except TypeError`` would poison whole constructors; docs/soundness.md).
    ``split`` (a model's symbolic run) forks a value needed as an int into one path per value
    (:data:`CASE_SPLIT_LIMIT`) and a zero divisor under a ``try`` into a path of its own; the
    engine tracer runs without it (an engine constructor's int() of a size would spend its fork
    budget on values; the statement stays untraced instead).
    """
    if budget < 1:
        raise ValueError(f"fork budget must be at least 1, got {budget}")
    assume = [to_z3_bool(a) if not isinstance(a, z3.BoolRef) else a for a in assume]
    pending: list[list[Decision]] = [[]]
    paths: list[Path] = []
    while pending and len(paths) < budget:
        prefix = pending.pop()
        explorer = _Explorer(prefix, assume, check_feasible, rlimit)
        explorer.base = sys._getframe()
        explorer.split = split
        previous = getattr(trace_state, "explorer", None)
        outer = getattr(trace_state, "trace", None)
        trace_state.explorer = explorer
        value: object = None
        error: BaseException | None = None
        with tracing(watch=watch) as path_trace:
            try:
                value = fn()
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # noqa: BLE001 - the path's outcome, reported by the caller
                error = exc
            finally:
                trace_state.explorer = previous
                explorer.base = None
        if outer is not None:
            outer.divisors += path_trace.divisors
            outer.misuse += path_trace.misuse
            outer.lemmas += path_trace.lemmas
            outer.side_conditions += path_trace.side_conditions
        pending.extend(explorer.pending)  # depth first: the deepest fork next
        if explorer.infeasible:
            continue
        if explorer.diverged:
            value, error = None, SymbolicBranchError(explorer.diverged)
        paths.append(Path(explorer.decisions, value, error, path_trace))
    return Exploration(paths, complete=not pending, unexplored=len(pending), budget=budget)


# Python makes a class's ``__annotations__`` on its first read (``typing``'s Protocol check reads
# it on every class of an MRO): made here, so that read changes nothing checked below
for _cls in (SymInt, SymBool):
    _cls.__annotations__ = {}
del _cls
_CLASS_BINDINGS = [(cls, dict(vars(cls))) for cls in (SymInt, SymBool)]


#: the object slots Python calls on the type (past ``__getattribute__``) that answer for any object:
#: on a batch stand-in they would answer where the ints' tuple compares, hashes or prints its entries
_OBJECT_SLOTS = (
    "__eq__",
    "__ne__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
    "__hash__",
    "__repr__",
    "__str__",
    "__format__",
    "__sizeof__",
    "__reduce__",
    "__reduce_ex__",
    "__getstate__",
    "__dir__",
    "__copy__",
    "__deepcopy__",
)


def refuse_object_slots(refuse):
    """Class decorator for a batch stand-in (the aggregate abstraction's, induction's): every object
    slot of :data:`_OBJECT_SLOTS` raises ``refuse(why)`` (an exception recorded as misuse), and the
    class is a registered ``Sequence`` so a ``match`` sequence pattern tests it as it tests the
    ints' tuple (then asks its ``len()``, which the stand-in refuses)."""
    import collections.abc

    def decorate(cls):
        for slot in _OBJECT_SLOTS:

            def method(self, *args, _slot=slot, **kwargs):
                raise refuse(f"{_slot} of batch {object.__getattribute__(self, 'name')}")

            method.__name__ = slot
            setattr(cls, slot, method)
        collections.abc.Sequence.register(cls)
        return cls

    return decorate
