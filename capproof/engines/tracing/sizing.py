"""The sizing code of an inventory entry: its allocation call and the statements its size depends on.

A release diff (``capproof inventory --diff A B``) compares this code between two wheels, not the
allocation's line: a buffer whose allocation call and size-determining statements read the same in
both releases has the same sizing code, wherever they moved in the file.

:func:`sizing_code` reads the entry's file in the wheel's extracted sources and finds the
allocation call at the entry's line (a ``torch``/``np`` allocation starting there, else the
outermost call starting there, e.g. an engine's buffer wrapper; when the line holds no call for
the entry any more, the assignment of ``self.<attribute>`` in the owner's class). From the call's
arguments it follows, backwards, the names the size is computed from:

- a local name: every assignment to it in the enclosing function before the allocation (``=``,
  annotated, augmented, ``for`` and ``with`` targets), with the tests of the ``if``/``while``
  blocks that hold the assignment (a size chosen by a branch depends on the branch's condition);
  a parameter: its name and default;
- ``self.x``: its assignments in the function before the allocation, else every assignment of
  ``self.x`` (the attribute itself, not ``self.x.y = ...``) in the owner class's methods.

A name read only as an object (``config.max_num_seqs``, ``self.input_batch.num_reqs``) is not
followed: where the object came from does not size the buffer. The allocation call is taken
without its placement keywords (:data:`PLACEMENT`: ``device``, ``pin_memory``, ...). The
allocation's own guards (the ``if`` blocks and conditional expressions around it) decide whether
it happens, not its size: they are not part of it, nor are they counted as guards of the
dependencies they also hold. Each statement is normalised
by :func:`ast.unparse` (comments, line breaks, parenthesisation and quotes do not count); a
compound statement contributes its header only. The result is sorted (order is not compared)
and deduplicated. Bodies of called helper functions are not followed: for a ``traced`` entry the
tracer ran them, and :func:`capproof.inventory.diff` compares the traced shapes too.
"""

from __future__ import annotations

import ast
import copy
import functools
import os
from typing import Iterable

from ...inventory import Entry
from .scan import MODULES, NEW_ALLOC, TORCH_ALLOC

__all__ = ["PLACEMENT", "Release", "sizing_code", "sizing_codes"]

#: How many statements one entry's sizing code may hold (a runaway slice through a long
#: function is cut; the result is still deterministic).
MAX_STATEMENTS = 200

#: Keyword arguments of an allocation call that neither size nor type the buffer (where it lives).
PLACEMENT = frozenset({"device", "pin_memory", "requires_grad", "layout", "non_blocking", "memory_format"})

_SIMPLE = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Return)
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


@functools.lru_cache(maxsize=256)
def _indexed(path: str):
    """``(tree, {child: parent})`` of the Python file at ``path``; None when unreadable."""
    try:
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
    except (OSError, SyntaxError, ValueError):
        return None
    return tree, {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


class _NoPlacement(ast.NodeTransformer):
    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        node.keywords = [k for k in node.keywords if k.arg not in PLACEMENT]
        return node


def _without_placement(node: ast.AST) -> ast.AST:
    """A copy of ``node`` whose calls lack their :data:`PLACEMENT` keywords."""
    return _NoPlacement().visit(copy.deepcopy(node))


def _header(node: ast.AST) -> str:
    """A statement's normalised text; a compound statement's header only."""
    if isinstance(node, (ast.If, ast.While)):
        return f"{'if' if isinstance(node, ast.If) else 'while'} {ast.unparse(node.test)}:"
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return f"for {ast.unparse(node.target)} in {ast.unparse(node.iter)}:"
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return "with " + ", ".join(ast.unparse(i) for i in node.items) + ":"
    if isinstance(node, _FUNCS):
        return f"def {node.name}({ast.unparse(node.args)}):"
    if isinstance(node, ast.ClassDef):
        return f"class {node.name}({', '.join(ast.unparse(b) for b in node.bases)}):"
    if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
        return "try:"
    if isinstance(node, ast.Match):
        return f"match {ast.unparse(node.subject)}:"
    return ast.unparse(node)


def _self_attr(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _target_leaves(t: ast.expr) -> list[ast.expr]:
    if isinstance(t, (ast.Tuple, ast.List)):
        return [x for e in t.elts for x in _target_leaves(e)]
    if isinstance(t, ast.Starred):
        return _target_leaves(t.value)
    return [t]


def _targets(stmt: ast.AST) -> list[ast.expr]:
    if isinstance(stmt, ast.Assign):
        raw = list(stmt.targets)
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
        raw = [stmt.target]
    elif isinstance(stmt, (ast.With, ast.AsyncWith)):
        raw = [i.optional_vars for i in stmt.items if i.optional_vars is not None]
    else:
        raw = []
    return [x for t in raw for x in _target_leaves(t)]


def _assigned(stmt: ast.AST) -> set[str]:
    """Local names (``n``) and self attributes (``self.n``) a statement assigns; ``self.x[k] = ...``
    assigns ``self.x``, ``self.x.y = ...`` does not."""
    out: set[str] = set()
    for t in _targets(stmt):
        while isinstance(t, ast.Subscript):
            t = t.value
        if isinstance(t, ast.Name):
            out.add(t.id)
        elif _self_attr(t) is not None:
            out.add("self." + t.attr)
    return out


def _value_roots(node: ast.AST) -> list[ast.AST]:
    """The parts of a statement whose value it reads (the right-hand side, a header's expression)."""
    if isinstance(node, ast.Assign):
        return [node.value] + [s.slice for t in node.targets for s in ast.walk(t) if isinstance(s, ast.Subscript)]
    if isinstance(node, ast.AnnAssign):
        return [node.value] if node.value is not None else []
    if isinstance(node, ast.AugAssign):
        return [node.value, node.target]
    if isinstance(node, (ast.If, ast.While)):
        return [node.test]
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return [node.iter]
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return [i.context_expr for i in node.items]
    return [node]


def _read(node: ast.AST) -> set[str]:
    """Local names and ``self.x`` attributes whose values ``node`` reads (an object only read for
    an attribute, ``cfg.x`` or ``self.obj.x``, or tested with ``is``/``is not``, is not a value
    read)."""
    out: set[str] = set()
    for root in _value_roots(node):
        bases = {id(n.value) for n in ast.walk(root) if isinstance(n, ast.Attribute)}
        # `x is None` / `x is not None` tests whether an object is there, not a size
        bases |= {
            id(side)
            for n in ast.walk(root)
            if isinstance(n, ast.Compare) and all(isinstance(op, (ast.Is, ast.IsNot)) for op in n.ops)
            for side in [n.left, *n.comparators]
        }
        for n in ast.walk(root):
            if id(n) in bases:
                continue
            a = _self_attr(n)
            if a is not None:
                out.add("self." + a)
            elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id != "self":
                out.add(n.id)
    return out


def _enclosing(node: ast.AST, parents: dict, kinds) -> ast.AST | None:
    p = parents.get(node)
    while p is not None and not isinstance(p, kinds):
        p = parents.get(p)
    return p


def _guards(node: ast.AST, fn: ast.AST | None, parents: dict) -> list[ast.stmt]:
    """The ``if``/``while`` blocks (inside ``fn``) that hold ``node``."""
    out = []
    p = parents.get(node)
    while p is not None and p is not fn:
        if isinstance(p, (ast.If, ast.While)):
            out.append(p)
        p = parents.get(p)
    return out


def _statements(fn: ast.AST) -> list[ast.stmt]:
    """Every statement of ``fn``'s body, nested functions' and classes' bodies excluded."""
    out = []
    stack = list(reversed(getattr(fn, "body", [])))
    while stack:
        s = stack.pop()
        out.append(s)
        if isinstance(s, (*_FUNCS, ast.ClassDef)):
            continue
        for name in ("body", "orelse", "finalbody", "handlers"):
            stack.extend(reversed(getattr(s, name, []) or []))
    return out


def _parameters(fn: ast.AST) -> dict[str, str]:
    """``{name: "param name = default"}`` of ``fn``'s parameters (one parameter's text each: a
    parameter added to the signature does not change the others'; annotations do not size)."""
    a = fn.args
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    pairs = list(zip(positional, defaults)) + list(zip(a.kwonlyargs, a.kw_defaults))
    pairs += [(x, None) for x in (a.vararg, a.kwarg) if x is not None]
    out = {}
    for arg, default in pairs:
        text = f"param {arg.arg}"
        if default is not None:
            text += f" = {ast.unparse(default)}"
        out[arg.arg] = text
    return out


def _is_torch_alloc(call: ast.Call) -> bool:
    f = call.func
    if isinstance(f, ast.Attribute):
        if f.attr in NEW_ALLOC:
            return True
        return f.attr in TORCH_ALLOC and isinstance(f.value, ast.Name) and f.value.id in MODULES
    return False


def _call_at(stmt: ast.stmt, line: int) -> ast.Call | None:
    """The allocation call of ``stmt`` at ``line``: the innermost torch/numpy allocation starting
    there, else the outermost call starting there (a buffer wrapper), else None."""
    calls = [c for c in ast.walk(stmt) if isinstance(c, ast.Call) and c.lineno == line]
    torch_calls = [c for c in calls if _is_torch_alloc(c)]
    if torch_calls:
        return torch_calls[-1]
    return calls[0] if calls else None


def _locate(tree: ast.Module, entry: Entry) -> tuple[ast.stmt, ast.Call | None] | None:
    """The statement holding the entry's allocation and its allocation call."""
    best = None
    for node in ast.walk(tree):
        if isinstance(node, _SIMPLE) and node.lineno <= entry.line <= (node.end_lineno or node.lineno):
            if best is None or node.lineno >= best.lineno:
                best = node
    if best is not None:
        call = _call_at(best, entry.line)
        if call is not None:
            return best, call
    # the line holds no call any more: the assignment of the attribute in the owner's class
    attribute = entry.attribute.split("[", 1)[0].split(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == entry.owner:
            for s in ast.walk(node):
                if isinstance(s, (ast.Assign, ast.AnnAssign)) and "self." + attribute in _assigned(s):
                    calls = [c for c in ast.walk(s) if isinstance(c, ast.Call)]
                    torch_calls = [c for c in calls if _is_torch_alloc(c)]
                    return s, (torch_calls or calls or [None])[0]
    return (best, None) if best is not None else None


def _name_of(node: ast.AST) -> str | None:
    """``n`` for a local name, ``self.n`` for a self attribute, else None."""
    if isinstance(node, ast.Name):
        return node.id
    a = _self_attr(node)
    return None if a is None else "self." + a


def _copied(stmt: ast.stmt, name: str) -> str | None:
    """The name ``stmt`` copies into ``name`` (``name = other``, ``a, name = x, other``), or None."""
    if isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        pairs = [(stmt.target, stmt.value)]
    elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        t, v = stmt.targets[0], stmt.value
        if isinstance(t, (ast.Tuple, ast.List)) and isinstance(v, (ast.Tuple, ast.List)) and len(t.elts) == len(v.elts):
            pairs = list(zip(t.elts, v.elts))
        else:
            pairs = [(t, v)]
    else:
        return None
    for t, v in pairs:
        if _name_of(t) == name:
            return _name_of(v)
    return None


class _Slice:
    """Backward slice of one allocation through the statements of its class (or module)."""

    def __init__(self, tree: ast.Module, parents: dict, stmt: ast.stmt):
        self.parents = parents
        cls = _enclosing(stmt, parents, ast.ClassDef)
        self.methods = [m for m in cls.body if isinstance(m, _FUNCS)] if cls is not None else []
        self.module = tree

    def body(self, fn) -> list[ast.stmt]:
        return _statements(fn) if fn is not None else list(self.module.body)

    def definitions(self, name: str, fn, line: int) -> list[tuple[ast.stmt, object]]:
        """The statements assigning ``name`` before ``line`` in ``fn``; for ``self.x`` defined
        nowhere there, its assignments in every method of the class."""
        found = [(s, fn) for s in self.body(fn) if s.lineno < line and name in _assigned(s)]
        if not found and name.startswith("self."):
            found = [(s, m) for m in self.methods for s in _statements(m) if name in _assigned(s)]
        return found

    def copy_source(self, name: str, fn, line: int):
        """``(other, its function, its line)`` when ``name``'s only definition is an unguarded copy
        ``name = other``; else None."""
        defs = self.definitions(name, fn, line)
        if len(defs) != 1:
            return None
        s, f = defs[0]
        other = _copied(s, name)
        if other is None or other == name and f is fn or _guards(s, f, self.parents):
            return None
        return other, f, s.lineno

    def terminal(self, name: str, fn, line: int):
        """``(name, fn, line)`` at the end of ``name``'s chain of copies (at most 20 links)."""
        for _ in range(20):
            nxt = self.copy_source(name, fn, line)
            if nxt is None:
                break
            name, fn, line = nxt
        return name, fn, line


class _Rename(ast.NodeTransformer):
    """Value reads renamed to the end of their copy chains (``self.n`` -> ``n`` when ``self.n`` is
    a copy of the parameter ``n``)."""

    def __init__(self, renames: dict[str, str]):
        self.renames = renames

    def _new(self, node):
        name = _name_of(node)
        if name in self.renames and self.renames[name] != name:
            new = self.renames[name]
            if new.startswith("self."):
                return ast.Attribute(value=ast.Name(id="self", ctx=ast.Load()), attr=new[5:], ctx=ast.Load())
            return ast.Name(id=new, ctx=ast.Load())
        return None

    def visit_Attribute(self, node):
        new = self._new(node) if isinstance(node.ctx, ast.Load) else None
        return new if new is not None else self.generic_visit(node)

    def visit_Name(self, node):
        new = self._new(node) if isinstance(node.ctx, ast.Load) else None
        return new if new is not None else node


def _text(node: ast.AST, renames: dict[str, str]) -> str:
    return _header(_Rename(renames).visit(copy.deepcopy(node)))


def sizing_code(root: str, entry: Entry) -> tuple[str, ...] | None:
    """The normalised, sorted statements that size ``entry`` in the sources under ``root``
    (``root/entry.file``): ``alloc <call>``, the dependency statements and ``param ...`` lines. A dependency that only copies
    another name (``self.n = n``, ``n = self._n``) is not listed: reads through it are renamed to
    the end of the chain, so moving a size through attributes or locals is no change. None when
    the file cannot be read or holds no statement for the entry."""
    indexed = _indexed(os.path.join(root, entry.file))
    if indexed is None:
        return None
    tree, parents = indexed
    found = _locate(tree, entry)
    if found is None:
        return None
    stmt, call = found
    sl = _Slice(tree, parents, stmt)
    fn = _enclosing(stmt, parents, _FUNCS)
    node: ast.AST = _without_placement(call if call is not None else stmt)
    texts: set[str] = set()
    # (statement or allocation, its function, its line, prefix) still to print and follow
    todo: list[tuple[ast.AST, object, int, str]] = [(node, fn, stmt.lineno, "alloc " if call is not None else "")]
    # the allocation's own guards decide whether it happens, not its size: a dependency inside
    # them is not guarded by them (a guard around both does not choose between sizes)
    chosen: set[int] = {id(stmt)} | {id(g) for g in _guards(stmt, fn, parents)}
    seen: set[tuple[str, int]] = set()
    while todo and len(texts) < MAX_STATEMENTS:
        s, f, line, prefix = todo.pop(0)
        renames = {}
        follow = []
        for name in sorted(_read(s)):
            end, ef, eline = sl.terminal(name, f, line)
            renames[name] = end
            follow.append((end, ef, eline))
        texts.add(prefix + _text(s, renames))
        for name, ef, eline in follow:
            if (name, id(ef)) in seen:
                continue
            seen.add((name, id(ef)))
            defs = sl.definitions(name, ef, eline)
            if not defs and ef is not None:
                params = _parameters(ef)
                if name in params:
                    texts.add(params[name])
            for d, df in defs:
                if id(d) in chosen:
                    continue
                chosen.add(id(d))
                todo.append((d, df, d.lineno, ""))
                for g in _guards(d, df, parents):
                    if id(g) not in chosen:
                        chosen.add(id(g))
                        todo.append((g, df, g.lineno, ""))
    return tuple(sorted(texts))


def sizing_codes(root: str, entries: Iterable[Entry]) -> dict[str, tuple[str, ...]]:
    """``{entry id: sizing_code(root, entry)}`` for the entries whose sizing code can be read."""
    out = {}
    for e in entries:
        code = sizing_code(root, e)
        if code is not None:
            out[e.id] = code
    return out


def _statement_spanning(tree: ast.Module, line: int) -> ast.stmt | None:
    best = None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.lineno <= line <= (node.end_lineno or node.lineno):
            if isinstance(node, (*_FUNCS, ast.ClassDef)) and line > node.lineno:
                continue  # inside a body: a nested statement holds the line
            if best is None or node.lineno >= best.lineno:
                best = node
    return best


class Release:
    """One release's extracted sources under ``root``, as :func:`capproof.inventory.diff` reads
    them: an entry's sizing code, the statement at an access site, every statement of a file.
    Statements are normalised (:func:`ast.unparse`; a compound statement: its header)."""

    def __init__(self, root: str):
        self.root = root

    def sizing(self, entry: Entry) -> tuple[str, ...] | None:
        """:func:`sizing_code` of ``entry`` in this release."""
        return sizing_code(self.root, entry)

    def statement(self, file: str, line: int) -> str | None:
        """The normalised statement holding ``file:line`` (its innermost one), or None."""
        indexed = _indexed(os.path.join(self.root, file))
        if indexed is None or not isinstance(line, int):
            return None
        node = _statement_spanning(indexed[0], line)
        return None if node is None else _header(node)

    def statements(self, file: str) -> frozenset[str]:
        """Every normalised statement of ``file`` (empty when it cannot be read)."""
        return _all_statements(os.path.join(self.root, file))


@functools.lru_cache(maxsize=256)
def _all_statements(path: str) -> frozenset[str]:
    indexed = _indexed(path)
    if indexed is None:
        return frozenset()
    return frozenset(_header(n) for n in ast.walk(indexed[0]) if isinstance(n, ast.stmt))
