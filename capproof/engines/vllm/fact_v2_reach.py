"""Which V2-runner code a batch built at one site can reach, read from vLLM's source (AST).

The V2 request-count fact (:mod:`.fact_requests`, ``vllm/v1/worker/gpu/``) has three construction
sites that make a batch other than the step's: the PCP manager's rank-local batch
(``pcp_manager.py``, ``partition_batch``), a micro-batch's sub-batch (``ubatch_utils.py``,
``_slice_input_batch``) and the sampler's TP shard (``sample/batch_shard.py``,
``shard_sampler_inputs``). A buffer is only at risk from such a count when the batch (or a value
computed from it) reaches the code that slices or indexes the buffer. :func:`reach` decides that
from the engine's code, by following the value built at the site:

- **within a function**, statement by statement: an assignment whose value mentions a followed
  name, a followed call result or a followed attribute binds its targets (tuple targets included);
  an assignment of anything else **unbinds** them (``input_batch = self.pcp_manager.global_batch``
  hands the global batch on, not the local one); both arms of an ``if`` are followed and joined, a
  loop body twice, ``try`` bodies and handlers joined, a ``return`` ends its arm. For the PCP
  batch only, an ``if`` on ``<x>.pcp_manager is not None`` (or ``is None``) takes the PCP arm: the
  local batch exists only when the runner has a PCP manager (``partition_batch`` is its method).
- **across functions**: a followed value passed as an argument (positional or keyword, ``*``/``**``
  conservatively to every parameter) follows the matching parameter of **every** function of that
  name under ``vllm/v1/worker/gpu/`` (a name match over-approximates the callee); a call on a
  followed receiver (``batch.f()``) follows ``self`` in every ``f``; a call of an object
  (``self.sampler(...)``) follows ``__call__`` and ``forward`` of the classes that attribute is
  assigned (``self.sampler = Sampler(...)``) or annotated with; a followed ``return`` makes every
  call of that function name a followed value in its callers; a followed value stored as
  ``self.x = ...`` makes every read of ``.x`` followed, and ``self.x = C(k=value, ...)`` only the
  reads of ``.x.k`` (``ExecuteModelState(input_batch=...)``: the sampled step reads
  ``execute_model_state.input_batch`` but also ``execute_model_state.hidden_states``, which is not
  the batch).
- calls of library code (``torch``, ``np``, ``triton``, builtins: a root name that is an imported
  module or not a function of the directory) are not followed: library code holds no engine
  buffer. A call of a name that resolves to nothing and is not library code is **unresolved**;
  :func:`reach` then returns ``None`` for that site (every V2 file counts as reached: the split
  degrades to the single fact).

The result is the set of files of the functions entered. The analysis is a may-reach
over-approximation; it is not a proof that a count stays small, only of where it can go.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field

from ..tracing.accesses import parent_map
from .wheels import py_files

__all__ = ["V2_DIR", "Reach", "reach", "reach_sites", "entry_reach", "split_by_reach"]

V2_DIR = "vllm/v1/worker/gpu/"
#: The model's forward: its output rows are the input tokens it was given, not requests.
_MODEL_CALLS = frozenset(("self.model", "model"))
#: Methods that put their argument into the receiver (a container then holds the value).
_MUTATORS = frozenset(("append", "extend", "insert", "add", "update", "setdefault", "put", "appendleft"))


def _src(node) -> str:
    return ast.unparse(node).replace(" ", "")


def _callee(call: ast.Call) -> str | None:
    """The name a call resolves by: ``f`` of ``f(...)``, ``x.f(...)`` and ``k[grid](...)``."""
    f = call.func
    if isinstance(f, ast.Subscript):
        f = f.value
    if isinstance(f, ast.Attribute):
        return f.attr
    if isinstance(f, ast.Name):
        return f.id
    return None


def _root(node) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _chain(node) -> str | None:
    """``a.b.c`` of an attribute read (``self.`` dropped), else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or not parts:
        return None
    if node.id not in ("self", "cls"):
        parts.append(node.id)
    return ".".join(reversed(parts))


@dataclass
class _Fn:
    rel: str
    cls: str | None
    node: ast.FunctionDef | ast.AsyncFunctionDef

    @property
    def params(self) -> list[str]:
        a = self.node.args
        return [p.arg for p in a.posonlyargs + a.args]


@dataclass
class Reach:
    """The outcome of :func:`reach`: ``files`` entered (sorted), the functions entered
    (``file:qualname``), and ``unresolved`` calls (``file:line callee``) that stop the reading."""

    files: list[str]
    functions: list[str]
    unresolved: list[str] = field(default_factory=list)


class _Index:
    """Every function and class of ``vllm/v1/worker/gpu/`` (parsed once), with what a call's
    receiver can be: the enclosing class (``self``), an attribute's classes (assigned a constructor
    or a factory annotated to return a class, or annotated), a parameter's annotation."""

    def __init__(self, root: str):
        self.root = root
        self.fns: list[_Fn] = []
        self.by_name: dict[str, list[_Fn]] = {}
        self.classes: dict[str, list[tuple[str, ast.ClassDef]]] = {}
        self.bases: dict[str, set[str]] = {}
        self.attr_classes: dict[str, set[str]] = {}
        self.returns_class: dict[str, set[str]] = {}
        self.known: set[int] = set()
        self.trees: dict[str, ast.Module] = {}
        #: per file, the names it imports and the module each comes from
        self.imports: dict[str, dict[str, str]] = {}
        self.uses: dict[int, tuple[set[str], set[str]]] = {}
        self._resolved: dict[tuple[int, int], list[_Fn]] = {}
        self._related: dict[frozenset, set[str]] = {}
        assigned: list[tuple[str, ast.Call]] = []
        for rel, path in py_files(root, V2_DIR.rstrip("/")):
            with open(path, encoding="utf-8") as fh:
                tree = ast.parse(fh.read())
            self.trees[rel] = tree
            names = self.imports.setdefault(rel, {})
            for n in ast.walk(tree):
                if isinstance(n, ast.Import):
                    for a in n.names:
                        names[(a.asname or a.name).split(".")[0]] = a.name
                elif isinstance(n, ast.ImportFrom):
                    for a in n.names:
                        names[a.asname or a.name] = "." * n.level + (n.module or "")
            for n in ast.walk(tree):
                if isinstance(n, ast.ClassDef):
                    self.classes.setdefault(n.name, []).append((rel, n))
                    self.bases.setdefault(n.name, set()).update(
                        b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in n.bases
                    )
                    for m in n.body:
                        if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)):
                            self._add(_Fn(rel, n.name, m))
                elif isinstance(n, ast.Assign):
                    for t in n.targets:
                        if isinstance(t, ast.Attribute) and isinstance(n.value, ast.Call):
                            assigned.append((t.attr, n.value))
                elif isinstance(n, ast.AnnAssign) and isinstance(n.target, (ast.Attribute, ast.Name)):
                    name = n.target.attr if isinstance(n.target, ast.Attribute) else n.target.id
                    self.attr_classes.setdefault(name, set()).update(_names(n.annotation))
            for n in tree.body:
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    self._add(_Fn(rel, None, n))
        for f in self.fns:
            if f.node.returns is not None:
                self.returns_class.setdefault(f.node.name, set()).update(_names(f.node.returns) & set(self.classes))
        for attr, call in assigned:
            c = _callee(call)
            if c in self.classes:
                self.attr_classes.setdefault(attr, set()).add(c)
            elif c in self.returns_class:
                self.attr_classes.setdefault(attr, set()).update(self.returns_class[c])
        self.subclasses: dict[str, set[str]] = {}
        for c, bs in self.bases.items():
            for b in bs:
                self.subclasses.setdefault(b, set()).add(c)

    def _add(self, fn: _Fn) -> None:
        self.fns.append(fn)
        self.by_name.setdefault(fn.node.name, []).append(fn)
        self.known.add(id(fn.node))
        calls = {c for c in (_callee(n) for n in ast.walk(fn.node) if isinstance(n, ast.Call)) if c}
        reads = {n.attr for n in ast.walk(fn.node) if isinstance(n, ast.Attribute)}
        self.uses[id(fn.node)] = (calls, reads)

    def related(self, classes: set[str]) -> set[str]:
        """``classes`` with their base and derived classes defined in the directory."""
        key = frozenset(classes)
        if key not in self._related:
            self._related[key] = self._related_of(key)
        return self._related[key]

    def _related_of(self, classes: frozenset) -> set[str]:
        out, todo = set(), [c for c in classes if c in self.classes]
        while todo:
            c = todo.pop()
            if c in out:
                continue
            out.add(c)
            todo += [b for b in self.bases.get(c, ()) if b in self.classes]
            todo += list(self.subclasses.get(c, ()))
        return out

    def ancestors(self, cls: str) -> set[str]:
        """The base classes of ``cls`` defined in the directory (transitively)."""
        out, todo = set(), [b for b in self.bases.get(cls, ()) if b in self.classes]
        while todo:
            c = todo.pop()
            if c not in out:
                out.add(c)
                todo += [b for b in self.bases.get(c, ()) if b in self.classes]
        return out

    def at(self, rel: str, line: int) -> _Fn | None:
        inner = [f for f in self.fns if f.rel == rel and f.node.lineno <= line <= (f.node.end_lineno or 0)]
        return max(inner, key=lambda f: f.node.lineno) if inner else None

    def receiver_classes(self, fn: _Fn, recv) -> set[str] | None:
        """The classes ``recv`` can be an instance of, None when not known."""
        if isinstance(recv, ast.Name) and recv.id in ("self", "cls") and fn.cls:
            return self.related({fn.cls})
        if isinstance(recv, ast.Call) and _src(recv.func) == "super" and fn.cls:
            return self.ancestors(fn.cls)
        if isinstance(recv, ast.Attribute) and isinstance(recv.value, ast.Name) and recv.value.id in ("self", "cls"):
            got = self.related(self.attr_classes.get(recv.attr, set()))
            return got or None
        if isinstance(recv, ast.Name):
            a = fn.node.args
            for p in a.posonlyargs + a.args + a.kwonlyargs:
                if p.arg == recv.id and p.annotation is not None:
                    got = self.related(_names(p.annotation))
                    return got or None
        return None

    def targets(self, fn: _Fn, call: ast.Call) -> list[_Fn]:
        """The functions of the directory a call may enter (``[]``: library code or code outside)."""
        key = (id(fn.node), id(call))
        if key in self._resolved:
            return self._resolved[key]
        name = _callee(call)
        out: list[_Fn] = []
        if name is not None:
            func = call.func.value if isinstance(call.func, ast.Subscript) else call.func
            methods = [f for f in self.by_name.get(name, []) if f.cls is not None]
            plain = [f for f in self.by_name.get(name, []) if f.cls is None]
            if isinstance(func, ast.Attribute):
                classes = self.receiver_classes(fn, func.value)
                if classes is not None:
                    out = [f for f in methods if f.cls in classes]
                    if not out:  # calling an attribute that holds an object: its __call__/forward
                        objs = self.related(self.attr_classes.get(name, set()))
                        out = [f for f in self.fns if f.cls in objs and f.node.name in ("__call__", "forward")]
                else:
                    out = methods + plain
            elif name in self.classes:
                out = [f for f in self.fns if f.cls == name and f.node.name == "__init__"]
            else:
                same = [f for f in plain if f.rel == fn.rel]
                out = same or plain
        self._resolved[key] = out
        return out


def _names(annotation) -> set[str]:
    out = set()
    for a in ast.walk(annotation):
        if isinstance(a, ast.Name):
            out.add(a.id)
        elif isinstance(a, ast.Attribute):
            out.add(a.attr)
        elif isinstance(a, ast.Constant) and isinstance(a.value, str):
            out |= {x.strip() for x in a.value.replace("|", ",").split(",")}
    return out


def _is_init(m) -> bool:
    return isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name == "__init__"


class _Flow:
    """The may-reach reading of one site (module docstring)."""

    def __init__(self, index: _Index, seed: ast.AST, pcp: bool):
        self.ix = index
        self.seed = seed
        self.pcp = pcp
        self.params: dict[int, set[str]] = {}  # id(fn node) -> followed parameter names
        # functions (id of node) whose return (None) or tuple element (index) is followed whatever
        # the arguments, and given followed arguments
        self.returns: dict[int, set[int | None]] = {}
        self.returns_if: dict[int, set[int | None]] = {}
        self.attrs: set[tuple[str | None, str]] = set()  # (owner class, attribute chain without self.)
        self.entered: dict[int, _Fn] = {}
        #: per file, the lines of statements (or compound statements' headers) that read a followed value
        self.touched: dict[str, set[int]] = {}
        self.without_params = False
        self.why: dict[int, str] = {}
        self.where = ""
        self.fn: _Fn | None = None
        self._attr_cache: dict[tuple, bool] = {}

    # -- expressions --
    def _attr_followed(self, chain: str) -> bool:
        """Whether reading ``self.<chain>`` in the current function reads a followed store: one
        made in a related class on a prefix of ``chain``, or, for ``self.a.<rest>``, one made by a
        class of attribute ``a`` on a prefix of ``rest``."""
        fn = self.fn
        if fn is None or fn.cls is None:
            return False
        key = (fn.cls, chain, len(self.attrs))
        if key in self._attr_cache:
            return self._attr_cache[key]
        head, _, rest = chain.partition(".")
        by_head = {}
        for owner, ch in self.attrs:
            if owner is not None:
                by_head.setdefault(ch.partition(".")[0], []).append((owner, ch))
        got = any(
            fn.cls in self.ix.related({owner}) and (chain == ch or chain.startswith(ch + "."))
            for owner, ch in by_head.get(head, [])
        )
        if not got and rest:
            holders = self.ix.related(self.ix.attr_classes.get(head, set()))
            got = any(
                owner in holders and (rest == ch or rest.startswith(ch + "."))
                for owner, ch in by_head.get(rest.partition(".")[0], [])
            )
        self._attr_cache[key] = got
        return got

    def _returned(self, fn_call: ast.Call, live: set[str], index: int | None) -> bool:
        """Whether the value a call of the directory's code returns (or its element ``index``) is followed."""
        targets = self.ix.targets(self.fn, fn_call) if self.fn is not None else []
        if not targets:
            return False
        args = list(fn_call.args) + [k.value for k in fn_call.keywords]
        if isinstance(fn_call.func, ast.Attribute):
            args.append(fn_call.func.value)
        given = any(self.mentions(x, live) for x in args)
        for t in targets:
            for table, need in ((self.returns, False), (self.returns_if, True)):
                got = table.get(id(t.node), set())
                if (not need or given) and (None in got or index in got or (index is None and got)):
                    return True
        return False

    def mentions(self, expr, live: set[str], index: int | None = None) -> bool:
        """Whether ``expr`` (its element ``index`` when unpacked) holds a followed value."""
        if expr is None:
            return False
        if expr is self.seed:
            return True
        if isinstance(expr, ast.Name):
            return expr.id in live
        if isinstance(expr, ast.Attribute):
            if isinstance(expr.ctx, ast.Load) and self.attrs:
                ch = _chain(expr)
                if ch and self._attr_followed(ch):
                    return True
            return self.mentions(expr.value, live)
        if isinstance(expr, (ast.Tuple, ast.List)) and index is not None and index < len(expr.elts):
            return self.mentions(expr.elts[index], live)
        if isinstance(expr, ast.Call):
            if _src(expr.func) in _MODEL_CALLS:
                return False
            targets = self.ix.targets(self.fn, expr) if self.fn is not None else []
            if targets:
                return self._returned(expr, live, index)
            # library code (or code outside the directory): its result carries what it was given
            parts = list(expr.args) + [k.value for k in expr.keywords]
            if isinstance(expr.func, ast.Attribute):
                parts.append(expr.func.value)
            return any(self.mentions(x, live) for x in parts)
        if isinstance(expr, (ast.Lambda, ast.FunctionDef)):
            return False
        return any(self.mentions(c, live) for c in ast.iter_child_nodes(expr))

    def _pcp_arm(self, test) -> bool | None:
        """True/False for the arm a PCP reading takes at ``if test``, None for both."""
        if not self.pcp:
            return None
        s = _src(test)
        if s.endswith("pcp_manager is not None".replace(" ", "")) or s.endswith("pcp_managerisnotNone"):
            return True
        if s.endswith("pcp_managerisNone"):
            return False
        return None

    # -- statements --
    def block(self, fn: _Fn, body: list, live: set[str]) -> tuple[set[str], bool]:
        """Follow ``body`` from ``live``; returns the names followed after it and whether it falls through."""
        for st in body:
            live, through = self.stmt(fn, st, live)
            if not through:
                return live, False
        return live, True

    def stmt(self, fn: _Fn, st, live: set[str]) -> tuple[set[str], bool]:
        if isinstance(st, ast.If):
            self.exprs(fn, st.test, live)
            arm = self._pcp_arm(st.test)
            a, ta = self.block(fn, st.body, set(live)) if arm is not False else (set(), False)
            b, tb = self.block(fn, st.orelse, set(live)) if arm is not True else (set(), False)
            return (a if ta else set()) | (b if tb else set()), ta or tb
        if isinstance(st, (ast.For, ast.AsyncFor, ast.While)):
            head = st.iter if isinstance(st, (ast.For, ast.AsyncFor)) else st.test
            self.exprs(fn, head, live)
            cur = set(live)
            if isinstance(st, (ast.For, ast.AsyncFor)):
                cur = self.bind(fn, st.target, self.mentions(head, live), cur)
            for _ in range(2):
                after, _through = self.block(fn, st.body, set(cur))
                cur |= after
            after, _ = self.block(fn, st.orelse, set(cur))
            return cur | after, True
        if isinstance(st, (ast.With, ast.AsyncWith)):
            for item in st.items:
                self.exprs(fn, item.context_expr, live)
                if item.optional_vars is not None:
                    live = self.bind(fn, item.optional_vars, self.mentions(item.context_expr, live), live)
            return self.block(fn, st.body, live)
        if isinstance(st, ast.Try):
            a, ta = self.block(fn, st.body, set(live))
            out, through = (a if ta else set()), ta
            for h in st.handlers:
                b, tb = self.block(fn, h.body, live | a)
                out |= b if tb else set()
                through = through or tb
            if st.orelse:
                c, tc = self.block(fn, st.orelse, set(a))
                out |= c if tc else set()
            if st.finalbody:
                d, td = self.block(fn, st.finalbody, out | live)
                return d, through and td
            return out, through
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):  # a closure: its body sees the names
            self.block(fn, st.body, set(live))
            return live, True
        if isinstance(st, ast.ClassDef):
            return live, True
        # a simple statement
        self.exprs(fn, st, live)
        if isinstance(st, ast.Return):
            v = st.value
            which = (
                [i for i, e in enumerate(v.elts) if self.mentions(e, live)]
                if isinstance(v, ast.Tuple)
                else ([None] if self.mentions(v, live) else [])
            )
            if which:
                self.enter(fn)
                # followed whatever the arguments (every caller gets it), or given followed arguments
                table = self.returns if self.without_params else self.returns_if
                table.setdefault(id(fn.node), set()).update(which)
            return live, False
        if isinstance(st, ast.Raise):
            return live, False
        if isinstance(st, ast.Assign):
            for t in st.targets:
                if isinstance(t, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in t.elts):
                    for i, e in enumerate(t.elts):
                        live = self.bind(fn, e, self.mentions(st.value, live, i), live)
                else:
                    live = self.bind(fn, t, self.mentions(st.value, live), live, st.value)
            return live, True
        if isinstance(st, ast.AnnAssign) and st.value is not None:
            return self.bind(fn, st.target, self.mentions(st.value, live), live, st.value), True
        if isinstance(st, ast.AugAssign):
            if self.mentions(st.value, live):
                live = self.bind(fn, st.target, True, live, st.value)
            return live, True
        return live, True

    def bind(self, fn: _Fn, target, followed: bool, live: set[str], value=None) -> set[str]:
        live = set(live)
        if isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                live = self.bind(fn, t, followed, live)
            return live
        if isinstance(target, ast.Starred):
            return self.bind(fn, target.value, followed, live)
        if isinstance(target, ast.Name):
            (live.add if followed else live.discard)(target.id)
            return live
        if isinstance(target, (ast.Attribute, ast.Subscript)) and followed:
            self.enter(fn)
            r = _root(target)
            if r is not None and r not in ("self", "cls"):  # a store into a local object: it holds the value
                live.add(r)
                return live
            node = target
            while isinstance(node, ast.Subscript):  # self.x[i] = v: x holds the value
                node = node.value
            ch = _chain(node)
            if ch:
                if (
                    isinstance(value, ast.Call)
                    and _callee(value) in self.ix.classes
                    and value is not self.seed
                    and not any(self.mentions(a, live) for a in value.args)
                ):
                    for k in value.keywords:
                        if k.arg is None or self.mentions(k.value, live):
                            self.attrs.add((fn.cls, ch if k.arg is None else f"{ch}.{k.arg}"))
                else:
                    self.attrs.add((fn.cls, ch))
        return live

    def exprs(self, fn: _Fn, node, live: set[str]) -> None:
        """Calls under ``node`` (not into nested statements' bodies) that hand on a followed value;
        the lines of ``node`` are **touched** when it reads a followed value (a name, an attribute
        or the result of a call)."""
        if any(self.mentions(n, live) for n in ast.walk(node) if isinstance(n, (ast.Name, ast.Attribute, ast.Call))):
            self.enter(fn)
            self.touched.setdefault(fn.rel, set()).update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
        for n in ast.walk(node):
            if not isinstance(n, ast.Call):
                continue
            if (
                isinstance(n.func, ast.Attribute)
                and n.func.attr in _MUTATORS
                and any(self.mentions(a, live) for a in list(n.args) + [k.value for k in n.keywords])
            ):
                r = _root(n.func.value)
                if r and r not in ("self", "cls"):
                    live.add(r)
                elif r in ("self", "cls") and _chain(n.func.value):
                    self.attrs.add((fn.cls, _chain(n.func.value)))
            pos = [i for i, a in enumerate(n.args) if self.mentions(a, live)]
            kws = [k.arg for k in n.keywords if self.mentions(k.value, live)]
            recv = isinstance(n.func, ast.Attribute) and self.mentions(n.func.value, live)
            if not (pos or kws or recv):
                continue
            for t in self.ix.targets(fn, n):
                names = t.params
                method = t.cls is not None and names[:1] in (["self"], ["cls"])
                off = 1 if method and isinstance(n.func, ast.Attribute) and not _is_init(t.node) else 0
                if _is_init(t.node):
                    off = 1
                got = set()
                for i in pos:
                    if isinstance(n.args[i], ast.Starred):
                        got |= set(names[off:])
                    elif off + i < len(names):
                        got.add(names[off + i])
                    elif t.node.args.vararg is not None:
                        got.add(t.node.args.vararg.arg)
                for k in kws:
                    if k is None:
                        got |= set(names[off:]) | {a.arg for a in t.node.args.kwonlyargs}
                    elif k in names or k in {a.arg for a in t.node.args.kwonlyargs}:
                        got.add(k)
                    elif t.node.args.kwarg is not None:
                        got.add(t.node.args.kwarg.arg)
                if recv and method:
                    got.add(names[0])
                if got:
                    have = self.params.setdefault(id(t.node), set())
                    if not got <= have:
                        have |= got
                        self.enter(t, f"{fn.rel}:{n.lineno} {fn.node.name} -> {t.node.name}({sorted(got)})")

    def enter(self, fn: _Fn, why: str = "") -> None:
        if id(fn.node) not in self.entered:
            self.entered[id(fn.node)] = fn
            self.why[id(fn.node)] = why or self.where

    def _candidates(self, start: _Fn) -> list[_Fn]:
        """Functions the reading can change: the start, those with followed parameters, those
        calling a function whose return is followed or reading a followed attribute."""
        attrs = {a.rsplit(".", 1)[-1] for _, a in self.attrs}
        names = {f.node.name for f in self.ix.fns if id(f.node) in self.returns}
        out = [start]
        for fn in self.ix.fns:
            calls, reads = self.ix.uses[id(fn.node)]
            if id(fn.node) in self.params or calls & names or reads & attrs:
                out.append(fn)
        out += [f for f in self.entered.values() if id(f.node) not in self.ix.known]
        return out

    def run(self, start: _Fn) -> None:
        self.enter(start)
        before = None
        while before != self._state():
            before = self._state()
            for fn in self._candidates(start):
                self.fn = fn
                self.where = (
                    f"{fn.rel}:{fn.node.name} (returns {sorted(self.returns)[:8]}, attrs {sorted(self.attrs)[:8]})"
                )
                self.without_params = True
                self.block(fn, fn.node.body, set())
                self.without_params = False
                if self.params.get(id(fn.node)):
                    self.block(fn, fn.node.body, set(self.params[id(fn.node)]))

    def _state(self):
        return (
            frozenset((k, frozenset(v)) for k, v in self.returns.items()),
            frozenset((k, frozenset(v)) for k, v in self.returns_if.items()),
            frozenset(self.attrs),
            frozenset((k, frozenset(v)) for k, v in self.params.items()),
            frozenset(self.entered),
        )


def _flow(ix: _Index, rel: str, line: int, callee: str = "replace") -> _Flow | None:
    """The reading of the batch built by the ``callee(...)`` call at ``rel:line``, run; None when
    the site is not found."""
    fn = ix.at(rel, line)
    if fn is None:
        return None
    seeds = [
        n
        for n in ast.walk(fn.node)
        if isinstance(n, ast.Call) and _callee(n) == callee and n.lineno <= line <= (n.end_lineno or n.lineno)
    ]
    if not seeds:
        return None
    flow = _Flow(ix, seeds[0], pcp=os.path.basename(rel) == "pcp_manager.py")
    flow.run(fn)
    return flow


def reach(root: str, rel: str, line: int, callee: str = "replace", index: _Index | None = None) -> Reach | None:
    """Where the batch built by the ``callee(...)`` call at ``rel:line`` can go (module docstring);
    None when the site is not found or a call on the way is unresolved."""
    flow = _flow(index or _Index(root), rel, line, callee)
    if flow is None:
        return None
    fns = sorted({f"{f.rel}:{f.cls + '.' if f.cls else ''}{f.node.name}" for f in flow.entered.values()})
    return Reach(sorted({f.rel for f in flow.entered.values()}), fns)


#: Modules whose functions hold no engine state: a buffer handed to them meets no batch there
#: (their result may still be a view of it, and is followed).
_LIBRARIES = ("torch", "numpy", "triton", "math", "itertools", "functools", "operator", "builtins", "typing")
#: Attribute reads that give the buffer's metadata, not its elements.
_META = frozenset(("shape", "dtype", "device", "ndim", "is_cuda", "numel", "size", "stride", "data_ptr", "dim"))
_IDENT = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
#: Depth of aliases and callee parameters followed before the reading gives up (then: reached).
_DEPTH = 8


class _Uses:
    """Whether a batch's reading (:class:`_Flow`, run) meets the buffer of an inventory entry:
    :meth:`judge` follows every use of the entry's attribute under ``vllm/v1/worker/gpu/`` (module
    docstring of :func:`entry_reach`)."""

    def __init__(self, ix: _Index, flow: _Flow):
        self.ix = ix
        self.flow = flow
        self._outside: set[str] | None = None
        self.ndim = 0
        self.parents = {rel: parent_map(t) for rel, t in ix.trees.items()}
        self.by_attr: dict[str, list[tuple[str, ast.Attribute]]] = {}
        for rel, tree in ix.trees.items():
            for n in ast.walk(tree):
                if isinstance(n, ast.Attribute):
                    self.by_attr.setdefault(n.attr, []).append((rel, n))

    def _fn(self, rel: str, node) -> _Fn | None:
        p = self.parents[rel]
        while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node = p.get(node)
        if node is None:
            return None
        return next((f for f in self.ix.by_name.get(node.name, []) if f.node is node), None)

    def _touched(self, rel: str, node) -> bool:
        lines = self.flow.touched.get(rel, ())
        return any(n in lines for n in range(node.lineno, (node.end_lineno or node.lineno) + 1))

    def _library(self, rel: str, call: ast.Call) -> bool:
        """The call enters no code of vLLM: a builtin, a method of a library object, or a
        function of an imported library module (:data:`_LIBRARIES`)."""
        r = _root(call.func)
        mod = self.ix.imports.get(rel, {}).get(r or "")
        if mod is None:
            return True  # a builtin, a local or a method of a library value (the buffer's own methods)
        return mod.split(".")[0] in _LIBRARIES or mod.startswith("vllm.triton_utils")

    def _receiver_ok(self, rel: str, node: ast.Attribute, owners: set[str]) -> bool:
        """Whether ``node`` (``<recv>.<attr>``) may read the entry's attribute: not when its
        receiver is known to be an instance of an unrelated class (a parameter annotated only
        with classes unrelated to the owner, e.g. ``sampling_params: SamplingParams``)."""
        fn = self._fn(rel, node)
        if fn is None:
            return True
        classes = self.ix.receiver_classes(fn, node.value)
        if classes is not None:
            return bool(classes & owners)
        if isinstance(node.value, ast.Name):
            a = fn.node.args
            for p in a.posonlyargs + a.args + a.kwonlyargs:
                if p.arg == node.value.id and p.annotation is not None:
                    named = _names(p.annotation) - {"None", "Optional", "Union"}
                    # the owner's classes and every base they name (an outside base may be annotated)
                    kin = set(owners) | {b for c in owners for b in self.ix.bases.get(c, ())}
                    return not named or bool(named & kin) or bool(named & {"Any", "object"})
        return True

    def judge(self, owner: str, attr: str, ndim: int = 0) -> tuple[bool, str, int]:
        """``(reached, why, uses)`` for the attribute ``attr`` of instances of ``owner``; ``ndim``
        the buffer's number of dimensions when known (1: an index that is not a slice reads an
        element or a copy, never a view)."""
        self.ndim = ndim
        owners = self.ix.related({owner}) or {owner}
        uses = [(rel, n) for rel, n in self.by_attr.get(attr, []) if self._receiver_ok(rel, n, owners)]
        for rel, n in uses:
            why = self._value(rel, n, 0)
            if why:
                return True, why, len(uses)
        return False, f"none of its {len(uses)} uses under {V2_DIR} meets the batch", len(uses)

    def _value(self, rel: str, node, depth: int) -> str | None:
        """Why the value at ``node`` (the buffer, a view or an alias) can meet the batch; None when it cannot."""
        if depth > _DEPTH:
            return f"{rel}:{node.lineno} not followed further (depth)"
        if self._touched(rel, node):
            return f"{rel}:{node.lineno} used in a statement that reads the batch"
        p = self.parents[rel]
        cur = node
        while True:
            parent = p.get(cur)
            where = f"{rel}:{getattr(parent, 'lineno', node.lineno)}"
            if isinstance(parent, ast.Attribute) and parent.value is cur:
                if parent.attr in _META:
                    return None
                call = p.get(parent)
                if isinstance(call, ast.Call) and call.func is parent:
                    for d in self.ix.by_name.get(parent.attr, []):
                        if d.cls is not None and id(d.node) in self.flow.entered:
                            return f"{where} its method {d.cls}.{d.node.name} reads the batch"
                cur = parent  # a view (.gpu, .np) or a method of the buffer: its result may be the buffer
                continue
            if isinstance(parent, ast.Call) and parent.func is cur:
                cur = parent
                continue
            if isinstance(parent, ast.Subscript) and parent.value is cur:
                if self.ndim == 1 and not isinstance(parent.slice, (ast.Slice, ast.Tuple)):
                    # a one-dimensional buffer indexed by an int or an index array: an element or
                    # a copy, never a view of the buffer (its index is judged by this statement)
                    return None
                cur = parent  # a view, indexed by values the batch does not reach
                continue
            if isinstance(parent, (ast.keyword, ast.Starred)) or (isinstance(parent, ast.Call) and cur in parent.args):
                call = parent if isinstance(parent, ast.Call) else p.get(parent)
                if isinstance(parent, ast.Starred):
                    return f"{where} unpacked into a call: not followed"
                why = self._handed(rel, call, cur, parent, depth)
                if why:
                    return why
                cur = call  # the call's result may be (a view of) the buffer
                continue
            if isinstance(
                parent, (ast.Tuple, ast.List, ast.Set, ast.IfExp, ast.BoolOp, ast.Await, ast.ListComp, ast.GeneratorExp)
            ):
                cur = parent
                continue
            if isinstance(parent, ast.Dict):
                cur = parent
                continue
            if isinstance(parent, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.JoinedStr, ast.FormattedValue)):
                return None  # a new value computed from the buffer's elements
            if isinstance(parent, (ast.Expr, ast.Delete, ast.If, ast.While, ast.Assert)):
                return None
            if isinstance(parent, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
                if parent.value is not cur:
                    return None  # the buffer is stored to (its own binding or an element)
                targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
                return self._aliases(rel, targets, node, depth)
            if isinstance(parent, (ast.For, ast.AsyncFor, ast.comprehension)) and parent.iter is cur:
                return self._aliases(rel, [parent.target], node, depth)
            if isinstance(parent, ast.Return):
                return self._returned(rel, node, depth)
            if isinstance(parent, (ast.With, ast.withitem)):
                return f"{where} a context manager: not followed"
            return f"{where} {type(parent).__name__}: not followed (returned or stored)"

    def _outside_names(self) -> set[str]:
        """Every identifier named in a ``.py`` file of ``vllm/`` outside the directory (read once)."""
        if self._outside is None:
            names: set[str] = set()
            base = os.path.join(self.ix.root, "vllm")
            for dirpath, _dirs, fs in os.walk(base):
                rel = os.path.relpath(dirpath, self.ix.root).replace(os.sep, "/") + "/"
                if rel.startswith(V2_DIR):
                    continue
                for f in fs:
                    if f.endswith(".py"):
                        with open(os.path.join(dirpath, f), encoding="utf-8", errors="replace") as fh:
                            names.update(_IDENT.findall(fh.read()))
            self._outside = names
        return self._outside

    def _returned(self, rel: str, node, depth: int) -> str | None:
        """Follow a returned buffer to the value of every call of its function in the directory;
        met when vLLM code outside the directory may call it (its name, or for ``__call__``/
        ``forward`` an attribute holding its class, appears there)."""
        fn = self._fn(rel, node)
        where = f"{rel}:{node.lineno}"
        if fn is None:
            return f"{where} returned outside a function: not followed"
        names = {fn.node.name}
        if fn.node.name in ("__call__", "forward") and fn.cls:
            names = {a for a, cs in self.ix.attr_classes.items() if fn.cls in self.ix.related(cs)}
        if names & self._outside_names():
            return f"{where} returned by {fn.node.name}, which vLLM code outside {V2_DIR} may call: not followed"
        for crel, tree in self.ix.trees.items():
            for call in ast.walk(tree):
                if not isinstance(call, ast.Call):
                    continue
                caller = self._fn(crel, call)
                if caller is None or fn not in self.ix.targets(caller, call):
                    continue
                why = self._value(crel, call, depth + 1)
                if why:
                    return why
        return None

    def _aliases(self, rel: str, targets, node, depth: int) -> str | None:
        fn = self._fn(rel, node)
        for t in targets:
            for e in ast.walk(t):
                if isinstance(e, (ast.Attribute, ast.Subscript)) and isinstance(e.ctx, ast.Store):
                    return f"{rel}:{node.lineno} stored as {_src(e)}: not followed"
        names = {e.id for t in targets for e in ast.walk(t) if isinstance(e, ast.Name)}
        if fn is None:
            return f"{rel}:{node.lineno} bound outside a function: not followed"
        for n in ast.walk(fn.node):
            if isinstance(n, ast.Name) and n.id in names and isinstance(n.ctx, ast.Load):
                why = self._value(rel, n, depth + 1)
                if why:
                    return why
        return None

    def _handed(self, rel: str, call: ast.Call, arg, holder, depth: int) -> str | None:
        """Why handing the buffer (``arg``, an argument of ``call``) can meet the batch in the callee."""
        where = f"{rel}:{call.lineno}"
        name = _callee(call)
        defs = self.ix.by_name.get(name or "", [])
        if not defs:
            if name in self.ix.classes:
                return f"{where} stored into a {name} (a field of another object): not followed"
            if self._library(rel, call):
                return None
            return f"{where} handed to {_src(call.func)[:60]} (vLLM code outside {V2_DIR}): not followed"
        for d in defs:
            if id(d.node) in self.flow.entered:
                return f"{where} handed to {d.rel}:{d.node.name}, which the batch enters"
            names = d.params
            method = d.cls is not None and names[:1] in (["self"], ["cls"])
            off = 1 if method and (isinstance(call.func, ast.Attribute) or _is_init(d.node)) else 0
            if name in self.ix.classes:
                off = 1
            if isinstance(holder, ast.keyword):
                param = holder.arg
            else:
                i = call.args.index(arg)
                param = names[off + i] if off + i < len(names) else None
            if param is None:
                return f"{where} handed to {d.node.name} as *args/**kwargs: not followed"
            for n in ast.walk(d.node):
                if isinstance(n, ast.Name) and n.id == param and isinstance(n.ctx, ast.Load):
                    why = self._value(d.rel, n, depth + 1)
                    if why:
                        return why
        return None


def entry_reach(ix: _Index, flow: _Flow, entries) -> dict[str, tuple[bool, str]]:
    """Per inventory entry of ``vllm/v1/worker/gpu/`` (``id``, ``owner``, ``attribute``, optionally
    ``shape``), whether
    the batch of ``flow`` can meet its buffer, and why (``file:line`` of the first use that can, or
    the number of uses judged).

    Every read of the attribute's name under the directory is a use, unless its receiver is known
    to be an instance of a class unrelated to the owner. A use meets the batch when its statement is
    **touched** (reads a followed value: an index, an extent, a value stored or a call argument
    from the batch). Otherwise its value is followed: a view (``.gpu``, ``.np``, a slice, a method's
    result), a local alias (every read of the name in the function), a callee's parameter (every
    read in every function of that name; a callee the batch enters counts as met), a container
    holding it; a metadata read (``.shape``) or arithmetic on its elements ends the use. Anything
    else (returned, stored into an attribute or container of another object, handed to vLLM code
    outside the directory, ``*args``, a context manager, beyond :data:`_DEPTH` links) **cannot be
    told** and counts as met (the sound side)."""
    uses = _Uses(ix, flow)
    out = {}
    for e in entries:
        attr = e["attribute"].rsplit(".", 1)[-1].replace("[]", "").split("#")[0]
        owner = (e.get("owner") or "").split(".")[0]
        shape = e.get("shape")
        hit, why, _n = uses.judge(owner, attr, len(shape) if isinstance(shape, list) else 0)
        out[e["id"]] = (hit, why)
    return out


def reach_sites(root: str, sites: list[str]) -> dict[str, Reach | None]:
    """:func:`reach` of every ``file:line`` in ``sites`` (one parse of the directory)."""
    ix = _Index(root)
    out = {}
    for s in sites:
        rel, _, line = s.rpartition(":")
        out[s] = reach(root, rel, int(line), index=ix) if line.isdigit() else None
    return out


def _local_sites(fact: dict) -> list[str]:
    """``file:line`` of the paths of ``fact`` that are not checked and build a batch with ``replace``."""
    out = []
    for p in fact["paths"]:
        if p["result"] != "checked" and p["site"].startswith(V2_DIR) and "replace(" in p["sets"]:
            if p["site"] not in out:
                out.append(p["site"])
    return out


def split_by_reach(root: str, fact: dict, entries: list[dict] | None = None) -> list[dict]:
    """The V2 request-count ``fact`` split by what its unchecked batch-building sites reach.

    With ``entries`` (inventory entries: ``id``, ``file``, ``owner``, ``attribute``), the entries
    allocated under ``vllm/v1/worker/gpu/`` are grouped by the set of those sites whose batch can
    meet the entry's buffer (:func:`entry_reach`: its uses, not its file); each group gives one
    fact whose scope is its entry ids, with ``reach_entries``: per entry, per site, why the batch
    does or does not meet it. Without ``entries``, every ``.py`` file of the directory is grouped
    by the sites whose batch (:func:`reach`) enters it. A site whose reading fails counts as
    reaching everything. Each group's fact holds the paths of the sites that reach it, the fact's
    other paths, and for each site that does not reach it a path ``checked`` (``ast``) saying so.
    With one group the fact is returned with its original scope. Every returned fact carries
    ``reach``: per site, the files its batch enters (the reading's outcome)."""
    sites = _local_sites(fact)
    if not sites:
        return [fact]
    ix = _Index(root)
    if entries is not None:
        return _split_entries(ix, fact, sites, [e for e in entries if e["file"].startswith(V2_DIR)])
    return _split_files(root, ix, fact, sites)


def _group_paths(fact: dict, sites: list[str], key: frozenset, why_not_met) -> list[dict]:
    """The paths of ``fact`` for the group of entries (or files) the batches of ``key`` meet: the
    fact's own paths but those of the sites not in ``key``, which are checked for the group, for the
    reason ``why_not_met(site)``."""
    from ...facts import path_record

    paths = [p for p in fact["paths"] if p["site"] not in sites or p["site"] in key]
    paths += [path_record(s, "the batch built here", "ast", "checked", why_not_met(s)) for s in sites if s not in key]
    return paths


def _group_counterexamples(fact: dict, key: frozenset) -> list[dict]:
    """The counterexamples of ``fact`` found at the sites in ``key``."""
    return [c for c in fact["counterexamples"] if any(c["site"].startswith(s.rsplit(":", 1)[0]) for s in key)]


def _split_entries(ix: _Index, fact: dict, sites: list[str], entries: list[dict]) -> list[dict]:
    from ...facts import fact_record

    every = sorted(ix.trees)
    reached: dict[str, dict[str, tuple[bool, str]]] = {}
    files: dict[str, list[str]] = {}
    for s in sites:
        rel, _, line = s.rpartition(":")
        flow = _flow(ix, rel, int(line)) if line.isdigit() else None
        if flow is None:
            reached[s] = {e["id"]: (True, "the site's reading failed: counts as reaching") for e in entries}
            files[s] = every
            continue
        reached[s] = entry_reach(ix, flow, entries)
        files[s] = sorted({f.rel for f in flow.entered.values()} | {rel})
    groups: dict[frozenset, list[str]] = {}
    for e in entries:
        groups.setdefault(frozenset(s for s in sites if reached[s][e["id"]][0]), []).append(e["id"])

    def why(ids) -> dict:
        return {
            i: {s: ("meets: " if reached[s][i][0] else "does not meet: ") + reached[s][i][1] for s in sites}
            for i in sorted(ids)
        }

    if len(groups) <= 1:
        return [{**fact, "reach": {s: files[s] for s in sites}, "reach_entries": why(next(iter(groups.values()), []))}]
    out = []
    for key, ids in sorted(groups.items(), key=lambda kv: sorted(kv[0])):
        paths = _group_paths(
            fact,
            sites,
            key,
            lambda s: (
                f"meets none of these {len(ids)} entries' buffers (fact_v2_reach.entry_reach: every use "
                f"under {V2_DIR} followed; the batch enters {len(files[s])} files)"
            ),
        )
        label = ", ".join(s.rsplit("/", 1)[-1] for s in sorted(key))
        rec = fact_record(
            f"{fact['fact']}; "
            + (f"entries the batches of {label} can meet" if key else "entries no such batch meets"),
            fact["assumptions"],
            ids,
            paths,
            _group_counterexamples(fact, key),
        )
        rec["reach"] = {s: files[s] for s in sites}
        rec["reach_entries"] = why(ids)
        out.append(rec)
    return out


def _split_files(root: str, ix: _Index, fact: dict, sites: list[str]) -> list[dict]:
    from ...facts import fact_record
    from .fact_attention import compact

    every = sorted(rel for rel, _ in py_files(root, V2_DIR.rstrip("/")))
    reached: dict[str, set[str]] = {}
    for s in sites:
        rel, _, line = s.rpartition(":")
        r = reach(root, rel, int(line), index=ix) if line.isdigit() else None
        reached[s] = set(every) if r is None else set(r.files) | {rel}
    record = {s: sorted(reached[s]) for s in sites}
    groups: dict[frozenset, list[str]] = {}
    for f in every:
        groups.setdefault(frozenset(s for s in sites if f in reached[s]), []).append(f)
    if len(groups) == 1:
        return [{**fact, "reach": record}]
    out = []
    for key, files in sorted(groups.items(), key=lambda kv: sorted(kv[0])):
        paths = _group_paths(
            fact,
            sites,
            key,
            lambda s: f"does not reach this scope (fact_v2_reach: reaches {len(reached[s])} files of {V2_DIR})",
        )
        label = ", ".join(s.rsplit("/", 1)[-1] for s in sorted(key)) or "none"
        rec = fact_record(
            f"{fact['fact']}; files reached by the batches of: {label}",
            fact["assumptions"],
            compact(files, every, V2_DIR),
            paths,
            _group_counterexamples(fact, key),
        )
        out.append({**rec, "reach": record})
    return out
