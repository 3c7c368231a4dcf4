"""Engine-neutral pieces of demand derivation: run the engine's own code on every path, read its source.

Used by :mod:`capproof.engines.vllm.demand` and :mod:`capproof.engines.sglang.demand` (each knows
its engine's code paths; nothing here names an engine):

- :func:`all_paths` runs a function of capproof SymInts on every path through its branches on them
  (:func:`capproof.symbolic.explore`) and returns its value as one Z3 term, a path that stops at
  an ``AssertionError`` (the engine refuses there: nothing is accessed) contributing 0;
- :func:`src` and :func:`function` read the engine's source (AST) for the facts a derivation
  checks without running them.
"""

from __future__ import annotations

import ast
import os
from typing import Callable

__all__ = ["all_paths", "src", "function", "without_assert_messages"]


def all_paths(fn: Callable[[], object], assume, budget: int | None = None) -> tuple[object, list[str]]:
    """Run ``fn`` on every path (:func:`capproof.symbolic.explore`); the value as one Z3 term
    (``If`` over the paths' conditions) and notes on paths that raised an ``AssertionError``
    (the engine stops there: no access, extent 0 on that path's condition). Raises RuntimeError
    when the exploration is incomplete or a path fails otherwise (never a demand from a partial run).
    ``budget`` caps the paths explored (the explorer's default when None)."""
    import z3

    from ...symbolic import explore, to_z3_int

    exploration = explore(fn, assume=assume) if budget is None else explore(fn, assume=assume, budget=budget)
    if not exploration.complete:
        raise RuntimeError(f"{exploration.unexplored} paths unexplored (budget {exploration.budget})")
    value = None
    stops: list[str] = []
    for path in reversed(exploration.paths):
        cond = (
            z3.And(*[c if taken else z3.Not(c) for _, c, taken in path.decisions])
            if path.decisions
            else z3.BoolVal(True)
        )
        if path.error is not None:
            if not isinstance(path.error, AssertionError):
                raise RuntimeError(f"{type(path.error).__name__}: {path.error}"[:240])
            stops.append(path.decisions[-1][0] if path.decisions else "?")
            term = z3.IntVal(0)  # the engine stops at its assert: nothing is accessed on this path
        else:
            term = to_z3_int(path.value)
        value = term if value is None else z3.If(cond, term, value)
    if value is None:
        raise RuntimeError("no path returned a value")
    notes = (
        [f"{len(stops)} of {len(exploration.paths)} paths stop at an engine assert (extent 0: no access there)"]
        if stops
        else []
    )
    return value, notes


def without_assert_messages(fn: Callable, raises: bool = False) -> Callable:
    """``fn`` (a plain function or staticmethod of the engine) recompiled from its own source with
    the messages of its ``assert`` statements dropped, in its own module's globals: the same code
    on every path that passes its asserts, and an ``AssertionError`` on every path that fails one
    (an f-string message would otherwise format a symbolic size and fail differently). With
    ``raises``, the arguments of ``raise X(...)`` are dropped as well (``raise X``: the same
    exception class on the same paths, without its message). Raises TypeError for a function whose
    source cannot be read or that closes over variables."""
    import inspect
    import textwrap

    fn = getattr(fn, "__func__", fn)
    if fn.__code__.co_freevars:
        raise TypeError(f"{fn.__qualname__} closes over {fn.__code__.co_freevars}")
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError) as exc:
        raise TypeError(f"source of {fn.__qualname__}: {exc}") from None
    node = tree.body[0]
    node.decorator_list = []
    for a in ast.walk(node):
        if isinstance(a, ast.Assert):
            a.msg = None
        elif raises and isinstance(a, ast.Raise) and isinstance(a.exc, ast.Call):
            a.exc = a.exc.func
    ast.increment_lineno(tree, fn.__code__.co_firstlineno - node.lineno)
    namespace: dict = {}
    exec(compile(tree, fn.__code__.co_filename, "exec"), fn.__globals__, namespace)  # noqa: S102 - the engine's own code
    return namespace[node.name]


def assigned(node) -> list:
    """The targets ``node`` stores to when it is an assignment (``=``, ``+=``-style, annotated),
    else ``[]``: the expressions as written (``self.x``, a tuple of names, a subscript)."""
    if isinstance(node, ast.Assign):
        return list(node.targets)
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        return [node.target]
    return []


def src(node) -> str:
    """The source of an AST node without spaces (for exact comparisons with an expected form)."""
    return ast.unparse(node).replace(" ", "")


def function(root: str, file: str, name: str, cls: str | None = None):
    """The ``def name`` (in class ``cls`` when given) of ``file`` under ``root``, or None."""
    with open(os.path.join(root, file), encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and cls is not None and node.name != cls:
            continue
        scope = node.body if isinstance(node, ast.ClassDef) else (tree.body if node is tree else [])
        for item in scope:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == name:
                return item
    return None
