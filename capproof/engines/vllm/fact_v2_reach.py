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

from ..tracing.accesses import compact_source as _src
from ..tracing.accesses import parent_map
from .wheels import py_files

__all__ = ["V2_DIR", "Reach", "reach", "reach_sites", "entry_reach", "split_by_reach"]

V2_DIR = "vllm/v1/worker/gpu/"
#: The model's forward: its output rows are the input tokens it was given, not requests.
_MODEL_CALLS = frozenset(("self.model", "model"))
#: torch methods whose dimension-0 rows are the values of their index argument
_INDEX_METHODS = frozenset(("index_fill_", "index_copy_", "index_add_", "index_select"))
#: Kinds of a followed value: the batch object itself (a field read gives the field's kind), or a
#: value computed from the local request count (or from anything that may hold it).
BATCH, VAL = "batch", "val"


def _join(a: str | None, b: str | None) -> str | None:
    """The kind of a value that may be ``a`` or ``b``: VAL over BATCH over None."""
    return VAL if VAL in (a, b) else (a or b)


#: Methods that put their argument into the receiver (a container then holds the value).
_MUTATORS = frozenset(("append", "extend", "insert", "add", "update", "setdefault", "put", "appendleft"))


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

    def __init__(self, index: _Index, seed: ast.AST, pcp: bool, fields: set[str] | None = None, kind: str = "batch"):
        self.ix = index
        self.seed = seed
        #: id of each seed expression -> the kind it gives (the batch built at the site, or a count)
        self.seeds: dict[int, str] = {id(seed): kind}
        self.pcp = pcp
        #: the batch's fields that carry the local request count (None: every field)
        self.fields = None if fields is None else set(fields)
        # id(fn node) -> followed parameter names (``!name``: the parameter may be a value, not the batch)
        self.params: dict[int, set[str]] = {}
        # functions (id of node) whose return (None) or tuple element (index) is followed whatever
        # the arguments, and given followed arguments, with the kind followed
        self.returns: dict[int, dict[int | None, str]] = {}
        self.returns_if: dict[int, dict[int | None, str]] = {}
        self.attrs: set[tuple[str | None, str]] = set()  # (owner class, attribute chain without self.)
        self.val_attrs: set[tuple[str | None, str]] = set()  # those of attrs that may hold a value, not the batch
        #: ids of expression nodes that may hold a value computed from the local count (VAL), and
        #: of those that may be the batch object itself (BATCH)
        self.hot: set[int] = set()
        self.whole: set[int] = set()
        self.entered: dict[int, _Fn] = {}
        #: per file, the lines of statements (or compound statements' headers) that read a followed value
        self.touched: dict[str, set[int]] = {}
        self.without_params = False
        self.why: dict[int, str] = {}
        self.where = ""
        self.fn: _Fn | None = None
        self._attr_cache: dict[tuple, bool] = {}

    # -- expressions --
    def _attr_followed(self, chain: str) -> str | None:
        """The kind of the followed store that reading ``self.<chain>`` in the current function
        reads, None when none: one made in a related class on ``chain`` or a prefix of it, or, for
        ``self.a.<rest>``, one made by a class of attribute ``a`` on ``rest`` or a prefix. A prefix
        that holds the batch object gives the kind of the field read after it."""
        fn = self.fn
        if fn is None or fn.cls is None:
            return None
        key = (fn.cls, chain, len(self.attrs), len(self.val_attrs), None if self.fields is None else len(self.fields))
        if key in self._attr_cache:
            return self._attr_cache[key]
        head, _, rest = chain.partition(".")
        by_head = {}
        for owner, ch in self.attrs:
            if owner is not None:
                by_head.setdefault(ch.partition(".")[0], []).append((owner, ch))

        def kind(owner, ch, read):
            if (owner, ch) in self.val_attrs:
                return VAL
            if read == ch:
                return BATCH
            return self._field(read[len(ch) + 1 :].partition(".")[0])

        got = None
        for owner, ch in by_head.get(head, []):
            if fn.cls in self.ix.related({owner}) and (chain == ch or chain.startswith(ch + ".")):
                got = _join(got, kind(owner, ch, chain))
        if rest:
            holders = self.ix.related(self.ix.attr_classes.get(head, set()))
            for owner, ch in by_head.get(rest.partition(".")[0], []):
                if owner in holders and (rest == ch or rest.startswith(ch + ".")):
                    got = _join(got, kind(owner, ch, rest))
        self._attr_cache[key] = got
        return got

    def _returned(self, fn_call: ast.Call, live: set[str], index: int | None) -> str | None:
        """The kind (:data:`BATCH`/:data:`VAL`) of the value a call of the directory's code returns
        (or its element ``index``), None when it is not followed."""
        targets = self.ix.targets(self.fn, fn_call) if self.fn is not None else []
        if not targets:
            return None
        args = list(fn_call.args) + [k.value for k in fn_call.keywords]
        if isinstance(fn_call.func, ast.Attribute):
            args.append(fn_call.func.value)
        given = any(self.mentions(x, live) for x in args)
        out = None
        for t in targets:
            for table, need in ((self.returns, False), (self.returns_if, True)):
                got = table.get(id(t.node), {})
                if need and not given:
                    continue
                if index is None:
                    k = got.get(None, VAL if got else None)
                else:
                    k = got.get(index) or (VAL if None in got else None)
                out = _join(out, k)
        return out

    def _field(self, attr: str) -> str | None:
        """The kind of ``<batch>.<attr>``: :data:`VAL` for a field that carries the local request
        count (:attr:`fields`) or a name the directory defines as a function (a method or a
        property computes from any field), else None (a field the site left as the step's)."""
        if self.fields is None or attr in self.fields or attr in self.ix.by_name:
            return VAL
        return None

    def mentions(self, expr, live: set[str], index: int | None = None) -> str | None:
        """Whether ``expr`` (its element ``index`` when unpacked) holds a followed value, and its
        kind: :data:`BATCH` (the batch object itself: a field read gives the field's kind) or
        :data:`VAL` (anything else computed from it); None when it holds none."""
        if expr is None:
            return None
        if id(expr) in self.seeds:
            return self.seeds[id(expr)]
        if isinstance(expr, ast.Name):
            if expr.id not in live:
                return None
            return VAL if "!" + expr.id in live else BATCH
        if isinstance(expr, ast.Attribute):
            if isinstance(expr.ctx, ast.Load) and self.attrs:
                ch = _chain(expr)
                if ch:
                    k = self._attr_followed(ch)
                    if k:
                        return k
            k = self.mentions(expr.value, live)
            return self._field(expr.attr) if k == BATCH else k
        if isinstance(expr, (ast.Tuple, ast.List)) and index is not None and index < len(expr.elts):
            return self.mentions(expr.elts[index], live)
        if isinstance(expr, ast.Call):
            if _src(expr.func) in _MODEL_CALLS:
                return None
            targets = self.ix.targets(self.fn, expr) if self.fn is not None else []
            if targets:
                return self._returned(expr, live, index)
            # library code (or code outside the directory): its result carries what it was given
            if _callee(expr) == "replace" and expr.args and self.mentions(expr.args[0], live) == BATCH:
                # dataclasses.replace of the batch: the batch, with the fields it is given followed
                for k in expr.keywords:
                    if k.arg is None:
                        self.fields = None
                    elif self.mentions(k.value, live) and self.fields is not None:
                        self.fields.add(k.arg)
                return BATCH if len(expr.args) == 1 else VAL
            parts = list(expr.args) + [k.value for k in expr.keywords]
            if isinstance(expr.func, ast.Attribute):
                parts.append(expr.func.value)
            return VAL if any(self.mentions(x, live) for x in parts) else None
        if isinstance(expr, (ast.Lambda, ast.FunctionDef)):
            return None
        kinds = [self.mentions(c, live) for c in ast.iter_child_nodes(expr)]
        if VAL in kinds:
            return VAL
        if BATCH in kinds:
            # ``a or batch``, ``x if c else batch``, ``await``: the batch itself; any other
            # expression holding it (a tuple, a subscript) is followed without its field filter
            return BATCH if isinstance(expr, (ast.IfExp, ast.BoolOp, ast.Await, ast.NamedExpr)) else VAL
        return None

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
                cur = self.bind(fn, st.target, VAL if self.mentions(head, live) else None, cur)
            stored = {
                n.id for b in st.body for n in ast.walk(b) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            }
            for _ in range(2):
                if isinstance(st, ast.While) and self.mentions(st.test, cur):
                    # how often the body runs depends on a followed value: so may what it counts
                    cur |= stored | {"!" + n for n in stored}
                after, _through = self.block(fn, st.body, set(cur))
                cur |= after
            after, _ = self.block(fn, st.orelse, set(cur))
            return cur | after, True
        if isinstance(st, (ast.With, ast.AsyncWith)):
            for item in st.items:
                self.exprs(fn, item.context_expr, live)
                if item.optional_vars is not None:
                    live = self.bind(
                        fn, item.optional_vars, VAL if self.mentions(item.context_expr, live) else None, live
                    )
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
                {i: self.mentions(e, live) for i, e in enumerate(v.elts)}
                if isinstance(v, ast.Tuple)
                else {None: self.mentions(v, live)}
            )
            which = {i: k for i, k in which.items() if k}
            if which:
                self.enter(fn)
                # followed whatever the arguments (every caller gets it), or given followed arguments
                table = self.returns if self.without_params else self.returns_if
                have = table.setdefault(id(fn.node), {})
                for i, k in which.items():
                    have[i] = _join(have.get(i), k)
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
                live = self.bind(fn, st.target, VAL, live, st.value)
            return live, True
        return live, True

    def bind(self, fn: _Fn, target, followed: str | None, live: set[str], value=None) -> set[str]:
        """``live`` after storing a value of kind ``followed`` (None: not followed) into ``target``."""
        live = set(live)
        if isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                live = self.bind(fn, t, followed and VAL, live)
            return live
        if isinstance(target, ast.Starred):
            return self.bind(fn, target.value, followed and VAL, live)
        if isinstance(target, ast.Name):
            (live.add if followed else live.discard)(target.id)
            (live.add if followed == VAL else live.discard)("!" + target.id)
            return live
        if isinstance(target, (ast.Attribute, ast.Subscript)) and followed:
            self.enter(fn)
            r = _root(target)
            if r is not None and r not in ("self", "cls"):  # a store into a local object: it holds the value
                if isinstance(target, ast.Attribute) and self.mentions(target.value, live) == BATCH:
                    # a field of the batch set after the site: the field carries what it is given
                    if self.fields is not None:
                        self.fields.add(target.attr)
                    return live
                live |= {r, "!" + r}
                return live
            node = target
            while isinstance(node, ast.Subscript):  # self.x[i] = v: x holds the value
                node = node.value
            ch = _chain(node)
            if ch:
                if isinstance(node, ast.Attribute) and node is target:
                    holder = self.mentions(node.value, live) if isinstance(node.value, ast.Attribute) else None
                    if holder == BATCH and self.fields is not None:  # self.x.field = v, self.x the batch
                        self.fields.add(node.attr)
                kind = followed if node is target else VAL
                if (
                    isinstance(value, ast.Call)
                    and _callee(value) in self.ix.classes
                    and id(value) not in self.seeds
                    and not any(self.mentions(a, live) for a in value.args)
                ):
                    for k in value.keywords:
                        kk = self.mentions(k.value, live) if k.arg is not None else VAL
                        if kk:
                            self._store(fn.cls, ch if k.arg is None else f"{ch}.{k.arg}", kk)
                else:
                    self._store(fn.cls, ch, kind)
        return live

    def _store(self, owner: str | None, chain: str, kind: str) -> None:
        self.attrs.add((owner, chain))
        if kind == VAL:
            self.val_attrs.add((owner, chain))

    def exprs(self, fn: _Fn, node, live: set[str]) -> None:
        """Calls under ``node`` (not into nested statements' bodies) that hand on a followed value;
        the nodes of ``node`` that hold a followed value are recorded (:attr:`hot`, :attr:`whole`)
        and their lines **touched**."""
        self._record(fn, node, live)
        if any(id(n) in self.hot or id(n) in self.whole for n in ast.walk(node)):
            self.enter(fn)
            self.touched.setdefault(fn.rel, set()).update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
        for n in ast.walk(node):
            if not isinstance(n, ast.Call):
                continue
            margs = list(n.args) + [k.value for k in n.keywords]
            if (
                isinstance(n.func, ast.Attribute)
                and n.func.attr in _MUTATORS
                and any(self.mentions(a, live) for a in margs)
            ):
                r = _root(n.func.value)
                if r and r not in ("self", "cls"):
                    live |= {r, "!" + r}
                elif r in ("self", "cls") and _chain(n.func.value):
                    self._store(fn.cls, _chain(n.func.value), VAL)
            if any(self.mentions(a, live) for a in margs) and not self.ix.targets(fn, n):
                self._mutated(fn, n, live)
            pos = {i: self.mentions(a, live) for i, a in enumerate(n.args)}
            pos = {i: k for i, k in pos.items() if k}
            kws = {k.arg: self.mentions(k.value, live) for k in n.keywords}
            kws = {a: k for a, k in kws.items() if k}
            recv = self.mentions(n.func.value, live) if isinstance(n.func, ast.Attribute) else None
            if not (pos or kws or recv):
                continue
            for t in self.ix.targets(fn, n):
                names = t.params
                method = t.cls is not None and names[:1] in (["self"], ["cls"])
                off = 1 if method and isinstance(n.func, ast.Attribute) and not _is_init(t.node) else 0
                if _is_init(t.node):
                    off = 1
                got: dict[str, str] = {}

                def give(name, kind):
                    got[name] = _join(got.get(name), kind)

                for i, kind in pos.items():
                    if isinstance(n.args[i], ast.Starred):
                        for x in names[off:]:
                            give(x, VAL)
                    elif off + i < len(names):
                        give(names[off + i], kind)
                    elif t.node.args.vararg is not None:
                        give(t.node.args.vararg.arg, VAL)
                for k, kind in kws.items():
                    if k is None:
                        for x in names[off:] + [a.arg for a in t.node.args.kwonlyargs]:
                            give(x, VAL)
                    elif k in names or k in {a.arg for a in t.node.args.kwonlyargs}:
                        give(k, kind)
                    elif t.node.args.kwarg is not None:
                        give(t.node.args.kwarg.arg, VAL)
                if recv and method:
                    give(names[0], recv)
                add = set(got) | {"!" + x for x, kind in got.items() if kind == VAL}
                if add:
                    have = self.params.setdefault(id(t.node), set())
                    if not add <= have:
                        have |= add
                        self.enter(t, f"{fn.rel}:{n.lineno} {fn.node.name} -> {t.node.name}({sorted(got)})")

    def _mutated(self, fn: _Fn, call: ast.Call, live: set[str]) -> None:
        """A library call given a followed value writes it where it writes: its ``out=`` and, for an
        in-place method (``x.copy_(v)``, a name ending in ``_``), its receiver. A field of the batch
        written so carries the value."""
        dests = [k.value for k in call.keywords if k.arg == "out"]
        if isinstance(call.func, ast.Attribute) and call.func.attr.endswith("_") and not call.func.attr.startswith("_"):
            dests.append(call.func.value)
        if _callee(call) in ("setattr", "__setattr__") and call.args and self.mentions(call.args[0], live) == BATCH:
            self.fields = None
        for d in dests:
            node = d
            while isinstance(node, (ast.Subscript, ast.Call)):  # x[...], x.view(...): x
                if isinstance(node, ast.Subscript):
                    node = node.value
                elif isinstance(node.func, ast.Attribute):
                    node = node.func.value
                else:
                    break
            if isinstance(node, ast.Attribute) and self.mentions(node.value, live) == BATCH:
                if self.fields is not None:
                    self.fields.add(node.attr)
            elif isinstance(node, ast.Attribute) and _root(node) in ("self", "cls") and _chain(node):
                self._store(fn.cls, _chain(node), VAL)
            elif isinstance(node, ast.Name):
                live |= {node.id, "!" + node.id}

    def _record(self, fn: _Fn, node, live: set[str]) -> None:
        """Record the kind of every expression under ``node`` (names a comprehension binds from a
        followed iterable, and a lambda's parameters, are values)."""
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            inner = set(live)
            for g in node.generators:
                self._record(fn, g.iter, inner)
                inner = self.bind(fn, g.target, VAL if self.mentions(g.iter, inner) else None, inner)
                for c in g.ifs:
                    self._record(fn, c, inner)
            for part in (node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,):
                self._record(fn, part, inner)
            k = self.mentions(node, live)
            if k == VAL:
                self.hot.add(id(node))
            return
        if isinstance(node, ast.Lambda):
            a = node.args
            inner = set(live) | {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs}
            inner |= {"!" + p.arg for p in a.posonlyargs + a.args + a.kwonlyargs}
            self._record(fn, node.body, inner)
            return
        if isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Starred)):
            k = self.mentions(node, live)
            if k == VAL:
                self.hot.add(id(node))
            elif k == BATCH:
                self.whole.add(id(node))
        for c in ast.iter_child_nodes(node):
            self._record(fn, c, live)

    def enter(self, fn: _Fn, why: str = "") -> None:
        if id(fn.node) not in self.entered:
            self.entered[id(fn.node)] = fn
            self.why[id(fn.node)] = why or self.where

    def _candidates(self, start: _Fn) -> list[_Fn]:
        """Functions the reading can change: the start, those with followed parameters, those
        calling a function whose return is followed or reading a followed attribute."""
        attrs = {a.rsplit(".", 1)[-1] for _, a in self.attrs} | set(self.fields or ())
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
            frozenset((k, frozenset(v.items())) for k, v in self.returns.items()),
            frozenset((k, frozenset(v.items())) for k, v in self.returns_if.items()),
            frozenset(self.attrs),
            frozenset(self.val_attrs),
            None if self.fields is None else frozenset(self.fields),
            frozenset((k, frozenset(v)) for k, v in self.params.items()),
            frozenset(self.entered),
        )


def _full_chain(node) -> str | None:
    """``a.b.c`` of a name or an attribute read, the root included (``self.x``), else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _base(node) -> str | None:
    """The chain a store or a view writes through: ``x`` of ``x[...]``, ``x.view(...)``, ``x.attr``."""
    while isinstance(node, (ast.Subscript, ast.Call)):
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node.func, ast.Attribute):
            node = node.func.value
        else:
            return None
    return _full_chain(node)


#: Tensor and array methods whose result shares the receiver's memory (torch and numpy semantics).
_VIEWS = frozenset(
    (
        "view",
        "view_as",
        "reshape",
        "flatten",
        "unflatten",
        "narrow",
        "numpy",
        "as_strided",
        "t",
        "transpose",
        "permute",
        "expand",
        "expand_as",
        "squeeze",
        "unsqueeze",
        "ravel",
        "contiguous",
        "detach",
        "unbind",
        "split",
        "chunk",
        "select",
        "diagonal",
        "movedim",
        "swapaxes",
        "swapdims",
        "T",
    )
)


def _view_of(v) -> str | None:
    """The chain ``v`` may share memory with: ``x`` of ``x``, ``x[...]`` or ``x.<view method>(...)``."""
    if isinstance(v, (ast.Name, ast.Attribute)):
        return _full_chain(v)
    if isinstance(v, ast.Subscript):
        return _view_of(v.value)
    if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr in _VIEWS:
        return _view_of(v.func.value)
    return None


def site_fields(fn: ast.AST, seed: ast.Call) -> set[str] | None:
    """The fields of the batch built by ``seed`` (``replace(batch, num_reqs=..., ...)`` in the
    function ``fn``) whose value may depend on its request count; None when that cannot be told
    (no ``num_reqs=``, a ``**`` argument, or the batch replaced is itself such a value).

    Read in ``fn`` only, flow-insensitively, over names and attribute chains (``x``,
    ``input_buffers.query_start_loc``): the count's names (those of ``num_reqs=``) and, for a count
    bound as ``n = len(x)``, the sequence ``x`` (its extent is the count) start the set; then a
    target of an assignment (or a ``for``/comprehension target) whose value names one of the set,
    the destination of a call given one of the set (``out=``, the receiver of an in-place method
    ``x.copy_(...)``, ``x[...] = v``), and the base of a view so written (``a = b[...]``: writing
    ``a`` writes ``b``) join it, until nothing changes. A keyword of ``seed`` whose value names one
    of the set is such a field; the fields ``seed`` does not pass keep the batch's own values."""
    kw = {k.arg: k.value for k in seed.keywords}
    if None in kw or "num_reqs" not in kw or any(isinstance(a, ast.Starred) for a in seed.args):
        return None
    hot: set[str] = set()

    def chains(expr) -> set[str]:
        return {c for c in (_full_chain(n) for n in ast.walk(expr) if isinstance(n, (ast.Name, ast.Attribute))) if c}

    def named(expr) -> bool:
        return any(c in hot or any(c.startswith(h + ".") for h in hot) for c in chains(expr))

    hot |= chains(kw["num_reqs"])
    if any(named(a) for a in seed.args):
        return None
    pairs: list[tuple[ast.AST, ast.AST]] = []
    views: dict[str, str] = {}
    calls: list[ast.Call] = []
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign):
            pairs += [(t, n.value) for t in n.targets]
        elif isinstance(n, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and n.value is not None:
            pairs.append((n.target, n.value))
        elif isinstance(n, (ast.For, ast.AsyncFor, ast.comprehension)):
            pairs.append((n.target, n.iter))
        elif isinstance(n, ast.Call):
            calls.append(n)
    for t, v in pairs:
        if isinstance(t, ast.Name) and _view_of(v):
            views[t.id] = _view_of(v)
    while True:
        before = len(hot)

        def written(chain: str | None) -> None:
            seen = set()
            while chain and chain not in seen:  # the chain and every base it is a view of
                seen.add(chain)
                hot.add(chain)
                chain = views.get(chain)

        for t, v in pairs:
            if isinstance(v, ast.Call) and _callee(v) == "len" and v.args and named(t) and _full_chain(v.args[0]):
                hot.add(_full_chain(v.args[0]))  # the sequence whose extent is the count
            if named(v):
                for e in ast.walk(t):
                    if isinstance(e, ast.Name) and isinstance(e.ctx, ast.Store):
                        hot.add(e.id)
                    elif isinstance(e, (ast.Subscript, ast.Attribute)) and isinstance(e.ctx, ast.Store):
                        written(_base(e))
        for c in calls:
            if not any(named(a) for a in list(c.args) + [k.value for k in c.keywords]) and not (
                isinstance(c.func, ast.Attribute) and named(c.func.value)
            ):
                continue
            for k in c.keywords:
                if k.arg == "out":
                    written(_base(k.value))
            if isinstance(c.func, ast.Attribute) and c.func.attr.endswith("_") and not c.func.attr.startswith("_"):
                written(_base(c.func.value))
        if len(hot) == before:
            break
    return {k for k, v in kw.items() if named(v)} | {"num_reqs"}


def _flow(ix: _Index, rel: str, line: int, callee: str = "replace") -> _Flow | None:
    """The reading of what the ``callee(...)`` call at ``rel:line`` is given or builds, run; None
    when the site is not found. For ``replace`` the value followed is the batch it builds (its
    fields filtered by :func:`site_fields`); for any other callee it is the count the call is
    given: every value bound, in the call's function, to a name among its arguments (kind VAL)."""
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
    if callee == "replace":
        fields = site_fields(fn.node, seeds[0])
        flow = _Flow(ix, seeds[0], pcp=os.path.basename(rel) == "pcp_manager.py", fields=fields)
    else:
        given = list(seeds[0].args) + [k.value for k in seeds[0].keywords]
        inner = {id(x.value) for a in given for x in ast.walk(a) if isinstance(x, ast.Attribute)}
        names = {
            n.id
            for a in given
            for n in ast.walk(a)
            if isinstance(n, ast.Name) and id(n) not in inner and n.id not in ("self", "cls")
        }
        values = [
            st.value
            for st in ast.walk(fn.node)
            if isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign))
            and st.value is not None
            and any(
                isinstance(t, ast.Name) and t.id in names
                for t in (st.targets if isinstance(st, ast.Assign) else [st.target])
            )
        ]
        params = [p for p in fn.params if p in names]
        if not values and not params:
            return None
        flow = _Flow(ix, values[0] if values else seeds[0], pcp=False, fields=None, kind=VAL)
        for v in values:
            flow.seeds[id(v)] = VAL
        if params:
            flow.params[id(fn.node)] = set(params) | {"!" + p for p in params}
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

    def __init__(self, ix: _Index, flow: _Flow, slots=None):
        self.ix = ix
        self.flow = flow
        # a demand_slots.SlotJudge when both slot facts are checked (an index whose values are
        # request slots stays below max_num_reqs whatever the batch's count), else None
        self.slots = slots
        self._slot_nodes: dict[str, dict] = {}
        self.slot_uses = 0
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

    def _slot_index(self, rel: str, expr) -> str | None:
        """``"slot"`` when ``expr`` (an index) is a request slot, ``"slots"`` when it is a slot array
        (:class:`.demand_slots.SlotJudge`, read on its own parse of the directory), None otherwise
        or without checked slot facts."""
        if self.slots is None or expr is None or isinstance(expr, (ast.Slice, ast.Tuple)):
            return None
        nodes = self._slot_nodes.get(rel)
        if nodes is None:
            nodes = {}
            for frel, tree, parents in self.slots.files:
                if frel == rel:
                    for n in ast.walk(tree):
                        if hasattr(n, "end_col_offset"):
                            nodes[(type(n), n.lineno, n.col_offset, n.end_lineno, n.end_col_offset)] = (n, parents)
            self._slot_nodes[rel] = nodes
        got = nodes.get((type(expr), expr.lineno, expr.col_offset, expr.end_lineno, expr.end_col_offset))
        if got is None:
            return None
        from .demand_slots import enclosing_function

        n, parents = got
        fn = enclosing_function(parents, n)
        if fn is None:
            return None
        if self.slots.scalar(rel, parents, fn, n):
            return "slot"
        if self.slots.array(rel, parents, fn, n):
            return "slots"
        return None

    def _count_in(self, rel: str, expr) -> str | None:
        """The source of the first part of ``expr`` that may hold the local count (a value the
        reading recorded, or the batch object used whole, not through a field), None when none."""
        if expr is None:
            return None
        p = self.parents[rel]
        for n in ast.walk(expr):
            if id(n) in self.flow.hot:
                return _src(n)[:60]
            if id(n) in self.flow.whole:
                up = p.get(n)
                if not (isinstance(up, ast.Attribute) and up.value is n):
                    return _src(n)[:60]
        return None

    def _call_count(self, rel: str, call: ast.Call, but=None) -> str | None:
        """The first argument (or receiver) of ``call`` other than ``but`` that may hold the local count."""
        parts = list(call.args) + [k.value for k in call.keywords]
        if isinstance(call.func, ast.Attribute):
            parts.append(call.func.value)
        for a in parts:
            if a is but:
                continue
            got = self._count_in(rel, a)
            if got:
                return got
        return None

    def _method_reads(self, d: _Fn, seen: set[int]) -> bool:
        """Whether ``d``, called with arguments that hold no local count, may still use one: a
        value it reads that the reading followed and that names none of its parameters (an
        attribute that holds the count, a call whose result is followed whatever its arguments),
        in ``d`` or in a function of the directory it calls that the reading entered. Values
        computed from its parameters are the call's arguments, judged at the call."""
        if id(d.node) in seen:
            return False
        seen.add(id(d.node))
        params = set(d.params) - {"self", "cls"}
        a = d.node.args
        params |= {x.arg for x in a.kwonlyargs} | {x.arg for x in (a.vararg, a.kwarg) if x is not None}
        for n in ast.walk(d.node):
            if id(n) not in self.flow.hot and id(n) not in self.flow.whole:
                continue
            if not {x.id for x in ast.walk(n) if isinstance(x, ast.Name)} & params:
                return True
            if isinstance(n, ast.Call) and any(id(t.node) in self.flow.returns for t in self.ix.targets(d, n)):
                return True
        for c in ast.walk(d.node):
            if isinstance(c, ast.Call):
                for t in self.ix.targets(d, c):
                    if id(t.node) in self.flow.entered and self._method_reads(t, seen):
                        return True
        return False

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
        self.slot_uses = 0
        owners = self.ix.related({owner}) or {owner}
        uses = [(rel, n) for rel, n in self.by_attr.get(attr, []) if self._receiver_ok(rel, n, owners)]
        for rel, n in uses:
            why = self._value(rel, n, 0)
            if why:
                return True, why, len(uses)
        slotted = (
            f" ({self.slot_uses} indexed by a request slot or slot array: below max_num_reqs by the checked "
            "slot facts, whatever the batch's count)"
            if self.slot_uses
            else ""
        )
        return False, f"none of its {len(uses)} uses under {V2_DIR} meets the batch{slotted}", len(uses)

    def _value(self, rel: str, node, depth: int) -> str | None:
        """Why the value at ``node`` (the buffer, a view or an alias) can meet the batch; None when it cannot."""
        if depth > _DEPTH:
            return f"{rel}:{node.lineno} not followed further (depth)"
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
                        if d.cls is not None and id(d.node) in self.flow.entered and self._method_reads(d, set()):
                            return f"{where} its method {d.cls}.{d.node.name} may use the local count"
                cur = parent  # a view (.gpu, .np) or a method of the buffer: its result may be the buffer
                continue
            if isinstance(parent, ast.Call) and parent.func is cur:
                if (
                    isinstance(cur, ast.Attribute)
                    and cur.attr in _INDEX_METHODS
                    and len(parent.args) >= 2
                    and _src(parent.args[0]) == "0"
                    and self._slot_index(rel, parent.args[1]) == "slots"
                    and not any(self._count_in(rel, a) for a in [*parent.args[2:], *(k.value for k in parent.keywords)])
                ):
                    # index_fill_/index_copy_/... along dimension 0 touch the rows a slot array names
                    self.slot_uses += 1
                    return None
                # a method of the buffer (or of a view): its arguments may index it
                got = self._call_count(rel, parent, but=cur.value if isinstance(cur, ast.Attribute) else None)
                if got:
                    return f"{where} {_src(parent.func)[:50]}(...) given {got}, which may hold the local count"
                cur = parent
                continue
            if isinstance(parent, ast.Subscript) and parent.slice is cur:
                return None  # the buffer indexes another one: its own elements are read, not past its end
            if isinstance(parent, ast.Subscript) and parent.value is cur:
                kind = self._slot_index(rel, parent.slice)
                if kind == "slots" or (kind == "slot" and self.ndim == 1):
                    # rows at request slots (< max_num_reqs by the slot facts, whatever the
                    # batch's count): an advanced index gathers or scatters, a copy; one element
                    self.slot_uses += 1
                    return None
                if kind == "slot":
                    self.slot_uses += 1
                    cur = parent  # one row at a slot: a view, its further indices judged on
                    continue
                got = self._count_in(rel, parent.slice)
                if got:
                    return f"{where} indexed by {got}, which may hold the local count"
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
                if not self.ix.by_name.get(_callee(call) or ""):
                    # library code or code outside the directory: it may index the buffer by its other arguments
                    got = self._call_count(rel, call, but=cur)
                    if got:
                        return f"{where} handed to {_src(call.func)[:50]} with {got}, which may hold the local count"
                why = self._handed(rel, call, cur, parent, depth)
                if why:
                    return why
                cur = call  # the call's result may be (a view of) the buffer
                continue
            if isinstance(
                parent,
                (
                    ast.Tuple,
                    ast.List,
                    ast.Set,
                    ast.Dict,
                    ast.IfExp,
                    ast.BoolOp,
                    ast.Await,
                    ast.ListComp,
                    ast.GeneratorExp,
                ),
            ):
                if isinstance(parent, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
                    # held with other values: where the container goes, they go along
                    for other in ast.iter_child_nodes(parent):
                        got = None if other is cur else self._count_in(rel, other)
                        if got:
                            return f"{where} held with {got}, which may hold the local count"
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


def entry_reach(ix: _Index, flow: _Flow, entries, slots=None) -> dict[str, tuple[bool, str]]:
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
    told** and counts as met (the sound side).

    ``slots`` (a :class:`.demand_slots.SlotJudge`, given only when both slot facts are checked):
    an index whose values are request slots (``req_id_to_index`` values, a slot array such as the
    local batch's ``idx_mapping``, ``local_to_global_req_idx``, a subset of the global batch's) or
    ``index_fill_(0, <slot array>)`` does not meet the batch: the rows it touches are slots, below
    ``max_num_reqs`` whatever the batch's count."""
    uses = _Uses(ix, flow, slots)
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


def _local_sites(fact: dict) -> dict[str, str]:
    """``file:line`` -> callee of the paths of ``fact`` under the directory that are not checked and
    set the count through a call (``replace(...)`` building a batch, ``make_dummy(num_reqs)``
    given one); in the order of the paths."""
    out: dict[str, str] = {}
    for p in fact["paths"]:
        if p["result"] == "checked" or not p["site"].startswith(V2_DIR) or p.get("given"):
            continue
        m = re.match(r"\s*(?:[\w.]+\.)?(\w+)\(", p["sets"])
        if "replace(" in p["sets"]:
            out.setdefault(p["site"], "replace")
        elif m:
            out.setdefault(p["site"], m.group(1))
    return out


def slot_judge_if_checked(root: str, executed: dict | None = None):
    """A :class:`.demand_slots.SlotJudge` over ``root`` when both slot facts hold on its code
    (:func:`.demand_slots.slot_fact`, :func:`.demand_slots.slot_array_fact` with the sharder's
    executed paths, :func:`.fact_slots.shard_paths`, run when not given), else None. Its count
    judge is the one :func:`.demand_v2_requests.derive_slot_rows` uses (a loop index over a
    bounded count is a slot; the count the PCP local batch makes is not bounded by it)."""
    from .demand_slots import SlotJudge, slot_array_fact, slot_fact
    from .demand_v2_requests import CountJudge, v2_requests_fact

    if not slot_fact(root)["checked"]:
        return None
    if executed is None:
        try:
            from .fact_slots import shard_paths

            executed = shard_paths(root)
        except Exception:  # noqa: BLE001 - the sharder not run: its slot arrays stay not checked
            executed = None
    requests = v2_requests_fact(root)
    if not slot_array_fact(root, requests, executed)["checked"]:
        return None
    slots = SlotJudge(root, arrays_ok=True)
    # `for i in range(n)` is a slot where the count judge bounds n, as in derive_slot_rows
    sched = not any(p.startswith("scheduler:") for p in requests.get("paths", {}).get("not checked", []))
    slots.counts = CountJudge(root, sched, induction=bool(requests.get("checked")))
    return slots


def split_by_reach(root: str, fact: dict, entries: list[dict] | None = None, slots="auto") -> list[dict]:
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
    ``reach``: per site, the files its batch enters (the reading's outcome). ``slots``: a
    :class:`.demand_slots.SlotJudge` (or None) for :func:`entry_reach`; by default
    :func:`slot_judge_if_checked`."""
    callees = _local_sites(fact)
    sites = list(callees)
    if not sites:
        return [fact]
    ix = _Index(root)
    if entries is not None:
        if slots == "auto":
            slots = slot_judge_if_checked(root)
        return _split_entries(ix, fact, callees, [e for e in entries if e["file"].startswith(V2_DIR)], slots)
    return _split_files(root, ix, fact, callees)


def _group_paths(fact: dict, sites: list[str], key: frozenset, why_not_met) -> list[dict]:
    """The paths of ``fact`` for the group of entries (or files) the batches of ``key`` meet: the
    fact's own paths but those of the sites not in ``key``, which are checked for the group, for the
    reason ``why_not_met(site)``."""
    from ...facts import path_record

    paths = []
    for p in fact["paths"]:
        g = p.get("given")
        if p["result"] != "checked" and g in sites and g not in key:
            # holds once the count given at g is bounded, and that count meets none of these entries
            paths.append(path_record(p["site"], p["sets"], "ast", "checked", f"given {g}: " + why_not_met(g)))
        elif p["site"] not in sites or p["site"] in key:
            paths.append(p)
    paths += [path_record(s, "the batch built here", "ast", "checked", why_not_met(s)) for s in sites if s not in key]
    return paths


def _group_counterexamples(fact: dict, key: frozenset) -> list[dict]:
    """The counterexamples of ``fact`` found at the sites in ``key``."""
    return [c for c in fact["counterexamples"] if any(c["site"].startswith(s.rsplit(":", 1)[0]) for s in key)]


def _split_entries(ix: _Index, fact: dict, callees: dict[str, str], entries: list[dict], slots=None) -> list[dict]:
    from ...facts import fact_record

    sites = list(callees)
    every = sorted(ix.trees)
    reached: dict[str, dict[str, tuple[bool, str]]] = {}
    files: dict[str, list[str]] = {}
    for s in sites:
        rel, _, line = s.rpartition(":")
        flow = _flow(ix, rel, int(line), callees[s]) if line.isdigit() else None
        if flow is None:
            reached[s] = {e["id"]: (True, "the site's reading failed: counts as reaching") for e in entries}
            files[s] = every
            continue
        reached[s] = entry_reach(ix, flow, entries, slots)
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


def _split_files(root: str, ix: _Index, fact: dict, callees: dict[str, str]) -> list[dict]:
    from ...facts import fact_record
    from .fact_attention import compact

    sites = list(callees)
    every = sorted(rel for rel, _ in py_files(root, V2_DIR.rstrip("/")))
    reached: dict[str, set[str]] = {}
    for s in sites:
        rel, _, line = s.rpartition(":")
        r = reach(root, rel, int(line), callees[s], index=ix) if line.isdigit() else None
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
