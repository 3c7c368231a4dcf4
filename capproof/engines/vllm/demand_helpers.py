"""A runner buffer handed to a Python helper: the helper's own accesses, judged at the call site (AST).

The access reader records ``f(..., self.buf, ...)`` as one whole-buffer use, ``passed to f``:
what ``f`` touches is ``f``'s own indexing. For the one-dimensional request-row buffers of the V1
runner (:func:`capproof.engines.vllm.demand.request_rows_accesses`) this module reads that
indexing, so such a call is judged rather than refused:

- the callee is a plain (undecorated, or ``torch.compile``-decorated) module-level function of the
  allocating file or imported into it with ``from <module> import <name>`` from a module under the
  wheel's ``vllm/`` (a method, a lambda, a name bound otherwise: not followed);
- the buffer binds one parameter ``p`` (by position or keyword; no ``*args``/``**kwargs`` in the
  callee), never reassigned in the callee;
- every load of ``p`` in the callee (its ``.np``/``.cpu``/``.gpu`` views followed) is a metadata read
  (``.shape``, ``.dtype``, ...), a presence test (``p is None``), a whole-buffer
  ``fill_``/``zero_``/``copy_``/``copy_to_gpu()``, ``copy_to_gpu(n)``, a slice ``p[a:n]`` of dimension 0
  whose stop ``n`` is a bounded request count (``n + c`` recorded as kind ``plus<c>``), an index ``p[i]`` by a value of the runner's
  ``req_id_to_index`` (:func:`capproof.engines.vllm.demand.map_index`'s fact) or ``x.clamp(min=0)``
  of the runner's ``prev_positions.gpu[...]`` (:mod:`.fact_prev_rows`), or ``p`` handed on to
  another such helper (followed, two calls deep);
- a stop is bounded when, resolved through the callee's single assignments and its parameters
  (each replaced by the caller's argument at this call site), it is a count the runner's own
  reading (:class:`capproof.engines.vllm.demand.RowBinding`) calls ``unpadded`` or ``padded`` in the
  calling method, ``min(...)`` with such an argument, or ``len(<the runner's input batch>.req_id_to_index)``
  (``list(...)``/``.values()`` of it counted alike: ``InputBatch.num_reqs`` is that length, read in
  its source, and the runner's ``self.input_batch.num_reqs`` is the unpadded count).

Anything else is refused with the callee's file and line; the entry then keeps no derived demand.
Pure reading of the extracted wheel sources; no vLLM import.
"""

from __future__ import annotations

import ast
import os
from functools import lru_cache

from ..tracing.accesses import parent_map
from .foreign_uses import METADATA as FOREIGN_METADATA

__all__ = ["judge_passed", "resolve_callee"]

#: Attribute reads of a parameter that touch no element.
METADATA = FOREIGN_METADATA | {"data_ptr"}  # (a read of the address, no element)
#: Whole-buffer methods: at most the allocation.
WHOLE = {"fill_", "zero_", "fill", "copy_"}
VIEWS = {"np", "cpu", "gpu"}
#: Decorators that keep the function's semantics (a compiled function computes what its source says).
KEEPS = {"torch.compile"}
#: How deep helpers handing the buffer on are followed.
MAX_DEPTH = 2
INPUT_BATCH = "self.input_batch"
#: The runner's previous-row buffer (:mod:`.fact_prev_rows`): ``p.clamp(min=0)`` of it is a row.
PREV_POSITIONS = "prev_positions"


def _src(node) -> str:
    try:
        return ast.unparse(node).replace(" ", "")
    except Exception:  # noqa: BLE001 - a construct ast.unparse cannot print
        return "?"


@lru_cache(maxsize=256)
def _parsed(path: str):
    try:
        with open(path, encoding="utf-8") as fh:
            return ast.parse(fh.read())
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None


def _module_bindings(tree, name: str) -> list:
    """Every statement anywhere in module ``tree`` that binds ``name`` at module level or imports
    it (defs, classes, assignments, imports; nested scopes' own names excluded)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            out.append(node)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out += [node for a in node.names if (a.asname or a.name.split(".")[0]) == name]
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(name in _bound_names(t) for t in targets):
                out.append(node)
    return out


def resolve_callee(root: str, file: str, func: ast.AST):
    """``(file, FunctionDef)`` of the module-level function ``func`` names in ``file`` (defined
    there, or imported ``from <module> import <name>`` from a module of the wheel), or None. The
    name must be bound once in each module on the way (one ``def`` or one import: a fallback
    definition, a re-assignment or a wrapper leaves it unresolved)."""
    if not isinstance(func, ast.Name):
        return None
    tree = _parsed(os.path.join(root, file))
    if tree is None:
        return None
    found = _module_bindings(tree, func.id)
    if len(found) != 1:
        return None
    node = found[0]
    if isinstance(node, ast.FunctionDef) and node in tree.body:
        return file, node
    if not (isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node in tree.body):
        return None
    alias = next(a for a in node.names if (a.asname or a.name) == func.id)
    rel = node.module.replace(".", "/") + ".py"
    other = _parsed(os.path.join(root, rel))
    if other is None:
        return None
    there = _module_bindings(other, alias.name)
    if len(there) == 1 and isinstance(there[0], ast.FunctionDef) and there[0] in other.body:
        return rel, there[0]
    return None


class _Frame:
    """One helper being read: its file, definition and parameter bindings (name -> the argument's
    expression in the frame that called it, with that frame)."""

    def __init__(self, file: str, fn, binds: dict, caller):
        self.file, self.fn, self.binds, self.caller = file, fn, binds, caller
        #: name -> the statements binding it (assignments, loop and ``with`` targets, ``:=``, ``del``)
        self.stores: dict[str, list] = {}
        for a in ast.walk(fn):
            if isinstance(a, ast.Assign):
                targets = a.targets
            elif isinstance(a, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.comprehension, ast.NamedExpr)):
                targets = [a.target]
            elif isinstance(a, (ast.With, ast.AsyncWith)):
                targets = [i.optional_vars for i in a.items if i.optional_vars is not None]
            elif isinstance(a, ast.Delete):
                targets = a.targets
            else:
                continue
            for t in targets:
                for n in _bound_names(t):
                    self.stores.setdefault(n, []).append(a)
        self.params = {a.arg for a in fn.args.args + fn.args.kwonlyargs + fn.args.posonlyargs}


def _bound_names(target) -> list[str]:
    """The names a binding target binds (through tuples, lists and ``*x``; not a subscript's or an
    attribute's receiver, which is stored into, not rebound)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in _bound_names(e)]
    if isinstance(target, ast.Starred):
        return _bound_names(target.value)
    return []


def _bind(fn, call: ast.Call) -> dict | None:
    """Parameter name -> argument expression of ``call`` (defaults for the rest), or None when the
    callee takes ``*args``/``**kwargs`` or the call unpacks."""
    a = fn.args
    if (
        a.vararg
        or a.kwarg
        or any(isinstance(x, ast.Starred) for x in call.args)
        or any(k.arg is None for k in call.keywords)
    ):
        return None
    positional = a.posonlyargs + a.args
    out: dict = {}
    if len(call.args) > len(positional):
        return None
    for p, v in zip(positional, call.args):
        out[p.arg] = v
    for k in call.keywords:
        out[k.arg] = k.value
    defaults = dict(zip([p.arg for p in positional][len(positional) - len(a.defaults) :], a.defaults))
    defaults.update({p.arg: d for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
    for name, d in defaults.items():
        out.setdefault(name, d)
    return out


class _Judge:
    """Judges one call site of the runner (``rt``: its :class:`RowBinding`; ``caller``: the method)."""

    def __init__(self, root: str, rt, caller, map_fact, prev_fact=None):
        self.root, self.rt, self.caller, self.map_fact = root, rt, caller, map_fact
        self.prev_fact = prev_fact
        self.sites: list[str] = []
        self.kinds: set[str] = set()
        self.why = ""

    # -- expressions -----------------------------------------------------------------------
    def resolve(self, frame: _Frame | None, expr, depth: int = 0):
        """``expr`` of ``frame`` rewritten into the runner method's terms (parameters replaced by the
        arguments, single assignments by their values), or None."""
        if depth > 12:
            return None
        if frame is None:
            return expr
        if isinstance(expr, ast.Name):
            stores = frame.stores.get(expr.id, [])
            if expr.id in frame.params:
                if stores or expr.id not in frame.binds:
                    return None
                return self.resolve(frame.caller, frame.binds[expr.id], depth + 1)
            if len(stores) == 1 and isinstance(stores[0], ast.Assign) and len(stores[0].targets) == 1:
                if isinstance(stores[0].targets[0], ast.Name):
                    return self.resolve(frame, stores[0].value, depth + 1)
            return None
        if isinstance(expr, ast.Constant):
            return expr
        if isinstance(expr, ast.Attribute):
            inner = self.resolve(frame, expr.value, depth + 1)
            return None if inner is None else ast.Attribute(value=inner, attr=expr.attr, ctx=ast.Load())
        if isinstance(expr, ast.Call):
            func = expr.func
            if isinstance(func, ast.Attribute):
                inner = self.resolve(frame, func.value, depth + 1)
                if inner is None:
                    return None
                func = ast.Attribute(value=inner, attr=func.attr, ctx=ast.Load())
            elif not (isinstance(func, ast.Name) and func.id in ("len", "list", "min", "int")):
                return None
            args = [self.resolve(frame, x, depth + 1) for x in expr.args]
            if expr.keywords or any(x is None for x in args):
                return None
            return ast.Call(func=func, args=args, keywords=[])
        if isinstance(expr, ast.Subscript):
            inner = self.resolve(frame, expr.value, depth + 1)
            return None if inner is None else ast.Subscript(value=inner, slice=expr.slice, ctx=ast.Load())
        return None

    def _num_reqs_is_len_map(self) -> bool:
        """``InputBatch.num_reqs`` returns ``len(self.req_id_to_index)`` (read in its source)."""
        tree = _parsed(os.path.join(self.root, "vllm/v1/worker/gpu_input_batch.py"))
        for cls in ast.walk(tree) if tree is not None else []:
            if isinstance(cls, ast.ClassDef) and cls.name == "InputBatch":
                for fn in cls.body:
                    if isinstance(fn, ast.FunctionDef) and fn.name == "num_reqs":
                        return any(
                            isinstance(r, ast.Return)
                            and r.value is not None
                            and _src(r.value) == "len(self.req_id_to_index)"
                            for r in ast.walk(fn)
                        )
        return False

    def count_kind(self, expr) -> str | None:
        """The runner's kind of a resolved count expression (module docstring), or None."""
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name):
            if expr.func.id == "min":
                kinds = [self.count_kind(a) for a in expr.args]
                good = [k for k in kinds if k in ("unpadded", "padded")]
                return ("unpadded" if "unpadded" in good else good[0]) if good else None
            if expr.func.id == "len" and len(expr.args) == 1:
                inner = expr.args[0]
                while True:
                    if (
                        isinstance(inner, ast.Call)
                        and isinstance(inner.func, ast.Name)
                        and inner.func.id == "list"
                        and len(inner.args) == 1
                    ):
                        inner = inner.args[0]
                    elif (
                        isinstance(inner, ast.Call)
                        and isinstance(inner.func, ast.Attribute)
                        and inner.func.attr in ("values", "keys")
                        and not inner.args
                    ):
                        inner = inner.func.value
                    else:
                        break
                if _src(inner) == f"{INPUT_BATCH}.req_id_to_index" and self._num_reqs_is_len_map():
                    return "unpadded"
                return None
        k = self.rt.kind(self.caller, expr)
        return k if k in ("unpadded", "padded", "none") else None

    def index_bounded(self, frame: _Frame, expr) -> str | None:
        """Why index ``expr`` of ``frame`` is a value of the runner's ``req_id_to_index``, or None."""
        if not isinstance(expr, ast.Name) or expr.id in frame.params:
            return None
        stores = frame.stores.get(expr.id, [])
        if not stores or not all(isinstance(s, ast.Assign) and len(s.targets) == 1 for s in stores):
            return None
        if len(stores) == 1 and self.prev_fact is not None:
            v = stores[0].value
            if (
                isinstance(v, ast.Call)
                and isinstance(v.func, ast.Attribute)
                and v.func.attr == "clamp"
                and not v.args
                and [(k.arg, _src(k.value)) for k in v.keywords] == [("min", "0")]
            ):
                resolved = self.resolve(frame, v.func.value)
                if (
                    isinstance(resolved, ast.Subscript)
                    and _src(resolved.value) == f"self.{PREV_POSITIONS}.gpu"
                    and self.caller is not None
                ):
                    fact = self.prev_fact()
                    if fact:
                        return f"{expr.id} = {_src(v)}, {_src(v.func.value)} = {_src(resolved)}; {fact}"
        for s in stores:
            v = s.value
            if isinstance(v, ast.Subscript):
                base = v.value
            elif (
                isinstance(v, ast.Call)
                and isinstance(v.func, ast.Attribute)
                and (v.func.attr == "get" or (v.func.attr == "pop" and len(v.args) == 2 and _src(v.args[1]) == "None"))
            ):
                base = v.func.value
            else:
                return None
            resolved = self.resolve(frame, base)
            if resolved is None or _src(resolved) != f"{INPUT_BATCH}.req_id_to_index":
                return None
        return self.map_fact()

    # -- uses of the parameter -------------------------------------------------------------
    def param_uses(self, frame: _Frame, name: str, depth: int) -> bool:
        """Every load of parameter ``name`` in ``frame`` is judged (module docstring)."""
        if frame.stores.get(name):
            self.why = f"{frame.file}:{frame.fn.lineno} {frame.fn.name} reassigns {name}"
            return False
        parents = parent_map(frame.fn)
        for node in ast.walk(frame.fn):
            if not (isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)):
                continue
            if not self.use(frame, node, parents, depth):
                return False
        return True

    def use(self, frame: _Frame, node, parents, depth: int) -> bool:
        where = f"{frame.file}:{node.lineno}"
        target, parent = node, parents.get(node)
        if isinstance(parent, ast.Attribute) and parent.value is target and parent.attr in VIEWS:
            target, parent = parent, parents.get(parent)
        if isinstance(parent, ast.Compare) and all(isinstance(o, (ast.Is, ast.IsNot)) for o in parent.ops):
            return True
        if isinstance(parent, ast.Attribute) and parent.value is target:
            call = parents.get(parent)
            is_call = isinstance(call, ast.Call) and call.func is parent
            if parent.attr in METADATA:
                return True
            if is_call and parent.attr in WHOLE:
                self.sites.append(f"{where} {parent.attr} (whole: at most the allocation)")
                return True
            if is_call and parent.attr == "copy_to_gpu":
                if not call.args:
                    self.sites.append(f"{where} copy_to_gpu() (whole)")
                    return True
                return self.stop(frame, call.args[0], where, "copy_to_gpu")
            self.why = f"{where} .{parent.attr} of the buffer"
            return False
        if isinstance(parent, ast.Subscript) and parent.value is target:
            key = parent.slice
            if isinstance(key, ast.Tuple):
                self.why = f"{where} a multi-dimensional key on a one-dimensional buffer"
                return False
            if isinstance(key, ast.Slice):
                if key.step is not None:
                    self.why = f"{where} a stepped slice"
                    return False
                if key.upper is None:
                    self.sites.append(f"{where} [{_src(key)}] (whole)")
                    return True
                return self.stop(frame, key.upper, where, "slice")
            why = self.index_bounded(frame, key)
            if why is None:
                self.why = f"{where} index [{_src(key)}] not a value of req_id_to_index"
                return False
            self.kinds.add("indexed")
            self.sites.append(f"{where} [{_src(key)}] in {frame.fn.name} ({why})")
            return True
        call = (
            parent if isinstance(parent, ast.Call) else parents.get(parent) if isinstance(parent, ast.keyword) else None
        )
        if isinstance(call, ast.Call) and call.func is not target and target is node:
            return self.hand_on(frame, call, node, depth)
        self.why = f"{where} {type(parent).__name__} of the buffer (not followed)"
        return False

    def stop(self, frame: _Frame, expr, where: str, op: str) -> bool:
        """A slice stop (or ``copy_to_gpu`` count) ``expr``: a bounded request count, plus an integer
        constant ``c`` recorded as kind ``plus<c>`` (the caller decides which constants its shape allows)."""
        full = expr
        if (
            isinstance(expr, ast.BinOp)
            and isinstance(expr.op, ast.Add)
            and isinstance(expr.right, ast.Constant)
            and type(expr.right.value) is int
            and expr.right.value > 0
        ):
            self.kinds.add(f"plus{expr.right.value}")
            expr = expr.left
        resolved = self.resolve(frame, expr)
        k = self.count_kind(resolved) if resolved is not None else None
        if k not in ("unpadded", "padded", "none"):
            self.why = f"{where} {op} stop {_src(expr)} not a bounded request count"
            return False
        if k != "none":
            self.kinds.add(k)
        self.sites.append(
            f"{where} {op} [:{_src(full)}] in {frame.fn.name} ({k}: {_src(resolved)} in {self.caller.name})"
        )
        return True

    def hand_on(self, frame: _Frame, call: ast.Call, node, depth: int) -> bool:
        """The parameter handed on to another helper: followed (``depth`` below :data:`MAX_DEPTH`)."""
        if depth + 1 >= MAX_DEPTH:
            self.why = f"{frame.file}:{call.lineno} handed on to {_src(call.func)} (deeper than {MAX_DEPTH} calls)"
            return False
        found = resolve_callee(self.root, frame.file, call.func)
        return self.enter(found, call, node, frame, depth + 1)

    def enter(self, found, call: ast.Call, arg, caller: _Frame | None, depth: int) -> bool:
        where = f"{caller.file if caller else self.rt.file}:{call.lineno}"
        if found is None:
            self.why = f"{where} {_src(call.func)} is not a module-level function of the wheel"
            return False
        file, fn = found
        if any(_src(d.func if isinstance(d, ast.Call) else d) not in KEEPS for d in fn.decorator_list):
            self.why = f"{file}:{fn.lineno} {fn.name} is decorated"
            return False
        binds = _bind(fn, call)
        if binds is None:
            self.why = f"{where} {fn.name} takes *args/**kwargs or the call unpacks"
            return False
        names = [n for n, v in binds.items() if v is arg]
        if len(names) != 1:
            self.why = f"{where} the buffer binds {len(names)} parameters of {fn.name}"
            return False
        frame = _Frame(file, fn, binds, caller)
        ok = self.param_uses(frame, names[0], depth)
        if ok:
            self.sites.append(f"{where} passed to {fn.name} ({file}:{fn.lineno}) as {names[0]}")
        return ok


def judge_passed(root: str, rt, entry, line: int, map_fact, prev_fact=None) -> tuple[set[str], list[str], str]:
    """``(kinds, sites, why not)`` for the call at ``line`` of the allocating file that hands
    ``self.<attribute>`` (or a view ``.np``/``.cpu``/``.gpu`` of it) to a helper: kinds and sites
    of the helper's accesses when every one is judged (module docstring), else an empty kinds set
    and the reason. ``rt``: the file's :class:`capproof.engines.vllm.demand.RowBinding`;
    ``map_fact()``: where the runner's ``req_id_to_index`` values are checked below ``max_num_reqs``,
    or None (the caller's check, cached by it); ``prev_fact()``, likewise, where the runner's
    ``prev_positions`` values are checked in ``[-1, max_num_reqs)`` (an index
    ``p.clamp(min=0)`` of its ``.gpu[...]`` is then in ``[0, max_num_reqs)``)."""
    attr = entry.attribute.rsplit(".", 1)[-1]
    forms = {f"self.{attr}"} | {f"self.{attr}.{v}" for v in VIEWS}
    calls = []
    for c in ast.walk(rt.tree):
        if isinstance(c, ast.Call) and c.lineno <= line <= (c.end_lineno or c.lineno):
            args = [x for x in c.args] + [k.value for k in c.keywords]
            hits = [x for x in args if _src(x) in forms]
            if hits:
                calls.append((c, hits))
    if len(calls) != 1 or len(calls[0][1]) != 1:
        return set(), [], f"{entry.file}:{line}: {len(calls)} calls hand the buffer on"
    call, (arg,) = calls[0]
    caller = rt.enclosing(call.lineno)
    if caller is None:
        return set(), [], f"{entry.file}:{line}: not in a function"
    if isinstance(call.func, ast.Name) and _Frame("", caller, {}, None).stores.get(call.func.id):
        return set(), [], f"{entry.file}:{line}: {call.func.id} is rebound in {caller.name}"
    j = _Judge(root, rt, caller, map_fact, prev_fact)
    if not j.enter(resolve_callee(root, entry.file, call.func), call, arg, None, 0):
        return set(), [], j.why
    return j.kinds or {"whole"}, j.sites, ""
