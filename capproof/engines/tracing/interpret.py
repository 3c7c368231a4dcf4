"""Run an engine's constructor body one statement at a time on symbolic values (engine-neutral).

:func:`construct` builds ``cls(*args, **kwargs)`` with ``cls.__init__``'s body run by
:func:`run_statements`: a statement that cannot run on symbolic values (a branch on a symbolic
value, a device query, a CUDA-only call) is skipped and every name it would assign is
:class:`Poisoned`, so every statement that runs sees exactly the values the engine's own code
computes. GPU-only packages an engine imports at module level are replaced by :class:`CudaOnly`
modules (:func:`install_cuda_only`).
"""

from __future__ import annotations

import ast
import os
import re
import sys
from dataclasses import dataclass, field
from types import SimpleNamespace

from ...errors import CapproofError
from . import fake as _fake

__all__ = [
    "Poisoned",
    "StepLog",
    "run_statements",
    "construct",
    "DeviceQuery",
    "Config",
    "CudaOnly",
    "install_cuda_only",
    "ENGINE_PACKAGES",
]

#: Top-level packages of the engines traced (their sources' root is the directory holding them).
ENGINE_PACKAGES = ("vllm", "sglang")


class Poisoned:
    """The value of a name whose defining statement could not run on symbolic values. Statements
    that read a poisoned name are not run (their own targets are poisoned in turn)."""

    def __init__(self, why: str):
        self.why = why

    def __repr__(self):
        return f"<not traced: {self.why}>"


@dataclass
class StepLog:
    """What :func:`run_statements` did: the statements skipped and why (first failure first)."""

    #: (file relative to the wheel, first line, last line, why)
    skipped: list[tuple[str, int, int, str]] = field(default_factory=list)


_MUTATORS = {
    "append",
    "extend",
    "insert",
    "update",
    "add",
    "pop",
    "popitem",
    "setdefault",
    "remove",
    "discard",
    "clear",
    "sort",
    "reverse",
    "register",
    "register_warmup",
}


def _stored_names(stmt: ast.stmt) -> tuple[set[str], set[str]]:
    """``(locals, self attributes)`` a statement may assign or mutate (``x =``, ``self.a =``,
    ``self.a[k] =``, ``x.append(...)``, ``for x in``, ``with ... as x``, augmented assignments)."""
    names: set[str] = set()
    attrs: set[str] = set()

    def target(t):
        while isinstance(t, (ast.Subscript, ast.Starred)):
            t = t.value
        if isinstance(t, ast.Attribute):
            chain = []
            node = t
            while isinstance(node, ast.Attribute):
                chain.append(node.attr)
                node = node.value
            if isinstance(node, ast.Name) and node.id == "self":
                attrs.add(chain[-1])
            elif isinstance(node, ast.Name):
                names.add(node.id)
        elif isinstance(t, ast.Name):
            names.add(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                target(e)

    for node in ast.walk(stmt):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                target(t)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            target(node.target)
        elif isinstance(node, (ast.For, ast.comprehension)):
            target(node.target)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            target(node.optional_vars)
        elif isinstance(node, ast.NamedExpr):
            target(node.target)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and (node.func.attr in _MUTATORS or node.func.attr.endswith("_"))
        ):
            target(node.func.value)  # x.append(...), self.buf.fill_(...): the receiver changes
    return names, attrs


def _loaded(stmt: ast.stmt) -> tuple[set[str], set[str]]:
    """``(names, self attributes)`` a statement reads."""
    names: set[str] = set()
    attrs: set[str] = set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            attrs.add(node.attr)
    return names, attrs


class _ReturnSignal(Exception):
    """A ``return`` inside a top-level statement of a traced body (``if not enabled: return``)."""


class _Returns(ast.NodeTransformer):
    """``return ...`` (not inside a nested function) -> ``raise __capproof_return__``: the body ends there."""

    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = visit_FunctionDef

    def visit_Return(self, node):
        return ast.copy_location(ast.Raise(exc=ast.Name("__capproof_return__", ast.Load()), cause=None), node)


class _ZeroArgSuper(ast.NodeTransformer):
    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "super" and not node.args:
            node.args = [ast.Name("__class__", ast.Load()), ast.Name("self", ast.Load())]
        return node


def run_statements(
    fn, owner_cls, self_obj, arguments: dict, log: StepLog | None = None, overrides: dict | None = None
) -> StepLog:
    """Run the body of ``fn`` (a method of ``owner_cls``, e.g. ``__init__``) one top-level statement
    at a time, in a namespace of its module's globals, ``self`` and ``arguments``.

    A statement that raises (a branch on a symbolic value, ``range`` of a symbolic int, a device
    query, ...) or on which the engine caught a capproof error is skipped, and every name and
    ``self`` attribute it may assign or mutate is poisoned; a later statement that reads a poisoned
    name is skipped the same way. So every statement that runs sees exactly the values vLLM's own
    code computes. ``return`` ends the body. Returns the log of skipped statements (line, why).
    """
    import inspect
    import textwrap

    from ...symbolic import trace_state

    log = log or StepLog()
    fn = inspect.unwrap(fn)
    source = textwrap.dedent(inspect.getsource(fn))
    filename = inspect.getsourcefile(fn)
    first = fn.__code__.co_firstlineno
    tree = ast.parse(source)
    ast.increment_lineno(tree, first - 1)
    fdef = tree.body[0]
    ns = dict(fn.__globals__)
    ns["__class__"] = owner_cls
    ns["self"] = self_obj
    ns.update(overrides or {})
    ns.update(arguments)
    poisoned_names: dict[str, str] = {}
    poisoned_attrs: dict[str, str] = {}
    body = fdef.body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        body = body[1:]  # docstring
    for stmt in body:
        if isinstance(stmt, ast.Return):
            break
        reads, attr_reads = _loaded(stmt)
        # sorted: the same statement names the same poisoned input in every run (sets are unordered)
        bad = sorted(n for n in reads if n in poisoned_names) + sorted(
            f"self.{a}" for a in attr_reads if a in poisoned_attrs
        )
        why = None
        if bad:
            why = f"reads {bad[0]}, not traced ({(poisoned_names | {('self.' + k): v for k, v in poisoned_attrs.items()})[bad[0]]})"
        elif _is_super_init(stmt) and _parent_init(owner_cls) is not None:
            # super().__init__(...): run the parent's body statement by statement too, so what it
            # cannot trace is poisoned attribute by attribute (not the whole object)
            parent, parent_init = _parent_init(owner_cls)
            call = stmt.value
            try:
                args_code = compile(
                    ast.fix_missing_locations(
                        ast.Expression(ast.Call(ast.Name("__capture__", ast.Load()), call.args, call.keywords))
                    ),
                    filename,
                    "eval",
                )
                ns["__capture__"] = lambda *a, **k: (a, k)
                pargs, pkwargs = eval(args_code, ns)
                sig = inspect.signature(parent_init)
                bound = sig.bind(self_obj, *pargs, **pkwargs)
                bound.apply_defaults()
                parguments = dict(bound.arguments)
                parguments.pop(next(iter(sig.parameters)))
            except Exception as exc:  # noqa: BLE001
                why = f"{type(exc).__name__}: {exc}"
            else:
                run_statements(parent_init, parent, self_obj, parguments, log, overrides)
                for a in list(vars(self_obj)) if hasattr(self_obj, "__dict__") else []:
                    if isinstance(getattr(self_obj, a, None), Poisoned):
                        poisoned_attrs.setdefault(a, "skipped in the parent constructor")
        else:
            module = ast.fix_missing_locations(
                ast.Module([_Returns().visit(_ZeroArgSuper().visit(stmt))], type_ignores=[])
            )
            ns["__capproof_return__"] = _ReturnSignal
            trace = getattr(trace_state, "trace", None)
            before = len(trace.misuse) if trace is not None else 0
            active = _fake.active()
            made = len(active.records) if active is not None else 0
            raised = None
            try:
                # a statement holding a nested ``return`` (``if x: return y``) does not compile
                # alone: it is skipped like one that raises, its targets poisoned
                code = compile(module, filename, "exec")
                exec(code, ns)
            except _ReturnSignal:
                break
            except Exception as exc:  # noqa: BLE001 - the statement is skipped, its targets poisoned
                raised = exc
                why = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            # allocations made before the statement raised are exact, unless the engine caught an
            # earlier capproof error in it (a try/except may have taken a fallback path)
            caught = (len(trace.misuse) - before) if trace is not None else 0
            if raised is not None and isinstance(raised, CapproofError):
                caught -= 1
            if caught > 0:
                why = why or f"caught by the engine: {trace.misuse[before]}"
                if active is not None:
                    for r in active.records[made:]:
                        r.untrusted = True
        if why is not None:
            why = re.sub(r"\S*?((?:%s)/\S+\.py:\d+)" % "|".join(ENGINE_PACKAGES), r"\1", why)[:200]
            rel = os.path.relpath(filename, _root_of(filename)).replace(os.sep, "/")
            where = f"{rel}:{stmt.lineno}"
            log.skipped.append(
                (rel, stmt.lineno, stmt.end_lineno or stmt.lineno, f"statement at {where} not traced: {why}")
            )
            names, attrs = _stored_names(stmt)
            for n in names - {"self"}:
                poisoned_names[n] = f"{where} skipped"
                ns[n] = Poisoned(where)
            for a in attrs:
                poisoned_attrs[a] = f"{where} skipped"
                try:
                    object.__setattr__(self_obj, a, Poisoned(where))
                except Exception:  # noqa: BLE001 - slots or properties: the name stays poisoned anyway
                    pass
    return log


def _is_super_init(stmt: ast.stmt) -> bool:
    """``super().__init__(...)`` (zero-argument super) as a statement."""
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    f = stmt.value.func
    return (
        isinstance(f, ast.Attribute)
        and f.attr == "__init__"
        and isinstance(f.value, ast.Call)
        and isinstance(f.value.func, ast.Name)
        and f.value.func.id == "super"
        and not f.value.args
    )


def _parent_init(owner_cls):
    """``(class, __init__)`` the zero-argument ``super().__init__`` of ``owner_cls`` reaches, when it
    is Python code (not ``object.__init__`` or a C/generic base)."""
    import inspect

    mro = owner_cls.__mro__
    for k in mro[1:]:
        init = k.__dict__.get("__init__")
        if init is None:
            continue
        if k is object or not inspect.isfunction(init):
            return None
        try:
            inspect.getsource(init)
        except (OSError, TypeError):
            return None
        return k, init
    return None


def _root_of(filename: str) -> str:
    parts = filename.replace(os.sep, "/").split("/")
    for package in ENGINE_PACKAGES:
        if package in parts:
            return "/".join(parts[: len(parts) - 1 - parts[::-1].index(package)]) or "/"
    return os.path.dirname(filename)


def construct(cls, *args, _overrides: dict | None = None, **kwargs):
    """``cls(*args, **kwargs)`` with ``cls.__init__`` run statement by statement
    (:func:`run_statements`); ``_overrides`` replaces module-level names for the body (device
    queries: ``num_compute_units`` -> ``num_sms``); returns ``(instance, log)``."""
    import inspect

    abstract = getattr(cls, "__abstractmethods__", frozenset())
    if abstract:  # an abstract runner class: its constructor still runs as written
        cls.__abstractmethods__ = frozenset()
    try:
        obj = cls.__new__(cls)
    finally:
        if abstract:
            cls.__abstractmethods__ = abstract
    init = cls.__init__
    sig = inspect.signature(init)
    bound = sig.bind(obj, *args, **kwargs)
    bound.apply_defaults()
    arguments = dict(bound.arguments)
    arguments.pop(next(iter(sig.parameters)))
    for name, p in sig.parameters.items():
        if p.kind == p.VAR_KEYWORD and name in arguments:
            pass
    owner = next(k for k in cls.__mro__ if "__init__" in k.__dict__)
    overrides = {"current_platform": DeviceQuery()}
    overrides.update(_overrides or {})
    return obj, run_statements(owner.__dict__["__init__"], owner, obj, arguments, overrides=overrides)


class DeviceQuery:
    """Stands in for ``current_platform`` in a traced constructor body: any question to it is a
    device query a CPU cannot answer for the deployment (compute capability, CUDA, ...), so the
    statement asking is skipped and the buffers it sizes stay ``read``."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise CapproofError(f"device query current_platform.{name} (a CPU cannot answer it for the deployment)")


class Config(SimpleNamespace):
    """A duck-typed vLLM config object: only the fields a harness gives; reading any other field
    raises AttributeError naming it (so the statement that reads it is reported, not guessed)."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"duck-typed config has no field {name!r}")


class CudaOnly:
    """A stand-in for a GPU-only package or any name imported from it: using it raises."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr):
        if attr.startswith("__") and attr not in ("__call__",):
            raise AttributeError(attr)
        return CudaOnly(f"{self._name}.{attr}")

    def __call__(self, *args, **kwargs):
        raise CapproofError(f"CUDA-only call {self._name}() (no CPU build of its package)")

    def __mro_entries__(self, bases):  # `class X(flashinfer.Foo)`: a plain base
        return (object,)

    def __or__(self, other):  # annotations `flashinfer.Foo | None`
        return self

    __ror__ = __or__

    def __getitem__(self, item):  # annotations `Foo[...]`
        return self


def install_cuda_only(package: str) -> None:
    """Put a :class:`CudaOnly` module named ``package`` in ``sys.modules`` (importing it succeeds;
    using anything from it raises)."""
    import importlib.machinery
    import types

    module = types.ModuleType(package)
    module.__spec__ = importlib.machinery.ModuleSpec(package, None)
    module.__path__ = []
    module.__file__ = None

    def attribute(attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return CudaOnly(f"{package}.{attr}")

    module.__getattr__ = attribute
    sys.modules[package] = module
