"""Request-slot indices of vLLM's V2 runner (``vllm/v1/worker/gpu/``), read from the engine's code.

The V2 runner keeps per-request state in ``[max_num_reqs]`` buffers indexed by a request's *slot*:
``RequestState.add_request`` takes ``req_idx = self.free_indices.pop()`` from
``self.free_indices = list(range(max_num_reqs))`` and records it in ``req_id_to_index``;
``remove_request`` pops it from ``req_id_to_index`` and appends it back to ``free_indices``
(``vllm/v1/worker/gpu/states.py``). So every slot is in ``[0, max_num_reqs)``, an inductive
invariant that holds as long as nothing else writes either container. :func:`slot_fact` checks
exactly that in the source (AST): the initialisation, the two writers, and that no other site of
``vllm/v1/`` mutates ``free_indices`` or ``req_id_to_index`` of a ``RequestState``.

The batch's slot arrays (``idx_mapping_np``, ``idx_mapping``, ``expanded_idx_mapping`` of the
V2 ``InputBatch`` and the sampling context) hold slots: :func:`slot_array_fact` checks every value
stored into a field or keyword of those names under ``vllm/v1/worker/gpu/`` (a ``map`` of
``req_id_to_index.__getitem__``, a subset or copy of another slot array, a ``-1`` marker, or the
dummy batch's ``arange(num_reqs)``, whose ``num_reqs`` is the V2 request-count fact of
:mod:`.demand_v2_requests`, or ``zeros``), and every in-place write of such a name (markers ``-1``
and ``0``, ``copy_`` of a slot array); stores a Triton kernel fills are judged by running the
engine's code (:func:`.fact_slots.shard_paths`), passed in.

:func:`derive_slot_rows` gives a one-dimensional ``[max_num_reqs]`` buffer of the V2 runner the
row extent ``max_num_reqs`` (an index below ``max_num_reqs`` touches at most that many rows) only
when **every** use of its attribute name in every file under ``vllm/v1/worker/gpu/`` (not only
the allocating file: uses through ``req_states.<name>`` in the runner count) is one of:

- a subscript by a slot (a name bound, through assignments and every call site of its function
  under ``vllm/v1/worker/gpu/``, to ``req_id_to_index[...]``, ``free_indices.pop()`` or
  ``req_states.remove_request(...)`` (:meth:`SlotJudge.remove_returns_slot`)), or by a
  slot array (under :func:`slot_array_fact`), directly or through a ``CpuGpuBuffer``/UVA view
  (``.np``, ``.gpu``, ``.cpu``);
- ``stage_write_elem(slot, value)``;
- a whole-buffer operation (``[:]``, ``fill_``/numpy's ``fill``, ``zero_``, ``copy_(src)`` into
  the whole buffer, ``copy_to_uva()``, ``apply_write()``, ``copy_to_gpu()`` with no count,
  ``np.minimum``/``np.maximum`` of whole arrays), or a read of ``.shape``/``.dtype``/``.device``.

Anything else (the buffer or a view handed to a kernel or helper, an alias in a local, a slice by a
count) leaves the entry without a demand. Reading the source is ``how: ast``; name collisions
(another class's attribute of the same name) only make the check stricter. Calls from outside
``vllm/v1/worker/gpu/`` to a function whose parameter is a slot are not seen: the V2 states are
created and driven by the V2 runner only.
"""

from __future__ import annotations

import ast
import os
from functools import lru_cache

__all__ = [
    "GPU_DIR",
    "slot_fact",
    "slot_array_fact",
    "slot_rows_uses",
    "SlotJudge",
    "class_of",
    "enclosing_function",
    "parsed_files",
    "source_text",
    "STATES",
]

GPU_DIR = "vllm/v1/worker/gpu"
STATES = f"{GPU_DIR}/states.py"
VIEWS = {"np", "gpu", "cpu", "uva"}
WHOLE_METHODS = {"fill_", "zero_", "copy_to_uva", "apply_write", "copy_to_gpu"}
META = {"shape", "dtype", "device", "ndim"}
MUTATORS = {
    "pop",
    "append",
    "insert",
    "extend",
    "update",
    "setdefault",
    "clear",
    "remove",
    "popitem",
    "sort",
    "reverse",
}
READERS = {"__getitem__", "get", "keys", "values", "items", "__contains__", "__len__", "__iter__"}
SLOT_ARRAYS = ("idx_mapping_np", "idx_mapping", "expanded_idx_mapping")
#: torch methods whose dimension-0 rows are the values of their index argument
INDEX_METHODS = ("index_fill_", "index_copy_", "index_add_", "index_select")


def source_text(node) -> str:
    return "".join(ast.unparse(node).split())


@lru_cache(maxsize=8)
def parsed_files(root: str, directory: str) -> tuple:
    """``((rel, tree, parents), ...)`` of every ``.py`` file under ``directory`` (sorted)."""
    out = []
    for dirpath, dirs, files in os.walk(os.path.join(root, directory)):
        dirs.sort()
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            path = os.path.join(dirpath, f)
            try:
                with open(path, encoding="utf-8") as fh:
                    tree = ast.parse(fh.read())
            except (OSError, SyntaxError, UnicodeDecodeError):
                continue
            parents = {}
            for n in ast.walk(tree):
                for c in ast.iter_child_nodes(n):
                    parents[c] = n
            out.append((os.path.relpath(path, root).replace(os.sep, "/"), tree, parents))
    return tuple(out)


def _binds(fn, method: bool, call: ast.Call) -> bool:
    """Whether ``call`` can bind ``fn``'s parameters: False when it leaves a required parameter
    unbound or passes more positional arguments than ``fn`` takes (Python raises ``TypeError``
    before the body runs, so the call is not one of ``fn``'s). A ``*``/``**`` argument binds anything."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return True
    recv = call.func.value if isinstance(call.func, ast.Attribute) else None
    if method and (recv is None or (isinstance(recv, ast.Name) and recv.id[:1].isupper())):
        return True  # ``Cls.f(obj, ...)`` or a bare name: self may be passed explicitly
    a = fn.args
    positional = [p.arg for p in a.posonlyargs + a.args][1 if method else 0 :]
    n_default = len(a.defaults)
    required = positional[: len(positional) - n_default] if n_default else positional
    required += [p.arg for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is None]
    given = set(positional[: len(call.args)]) | {k.arg for k in call.keywords}
    if len(call.args) > len(positional) and a.vararg is None:
        return False
    return all(r in given for r in required)


def _annotated_param(parents, node, value) -> set[str]:
    """The classes (CamelCase names) a parameter ``value`` of the function enclosing ``node`` is
    annotated with; empty when ``value`` is not such a parameter (``None``/``Optional`` dropped)."""
    if not isinstance(value, ast.Name):
        return set()
    fn = enclosing_function(parents, node)
    if fn is None:
        return set()
    a = fn.args
    for p in a.posonlyargs + a.args + a.kwonlyargs:
        if p.arg == value.id and p.annotation is not None:
            names = {
                n.id if isinstance(n, ast.Name) else n.attr
                for n in ast.walk(p.annotation)
                if isinstance(n, (ast.Name, ast.Attribute))
            }
            return {x for x in names if x[:1].isupper() and x not in ("None", "Optional", "Any")}
    return set()


def enclosing_function(parents, node):
    while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        node = parents.get(node)
    return node


def class_of(parents, fn):
    node = parents.get(fn)
    while node is not None and not isinstance(node, ast.ClassDef):
        node = parents.get(node)
    return node.name if node is not None else None


# ---------------------------------------------------------------------------------------------
# The slot invariant


def _mutations(rel, tree, parents, attr: str, owner_ok, read_only=lambda kw: False) -> list[tuple[int, str]]:
    """``[(line, what)]`` of every site of ``<obj>.<attr>`` in ``tree`` (``owner_ok(obj_src)``
    selects the objects that are a ``RequestState``) other than a read: a subscript store/delete,
    an assignment to the attribute, a mutating method, the container passed or aliased whole."""
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and node.attr == attr and owner_ok(source_text(node.value))):
            continue
        parent = parents.get(node)
        line = node.lineno
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            out.append((line, f"assigns {source_text(node)}"))
        elif isinstance(parent, ast.Subscript) and parent.value is node:
            if isinstance(parent.ctx, (ast.Store, ast.Del)):
                out.append((line, f"writes {source_text(parent)}"))
        elif isinstance(parent, ast.Attribute) and parent.value is node:
            if parent.attr in MUTATORS:
                call = parents.get(parent)
                out.append((line, source_text(call) if isinstance(call, ast.Call) else source_text(parent)))
            elif parent.attr not in READERS:
                out.append((line, f"uses {source_text(parent)}"))
        elif isinstance(parent, ast.Call) and source_text(parent.func) in (
            "len",
            "list",
            "sorted",
            "iter",
            "set",
            "tuple",
        ):
            continue
        elif isinstance(parent, ast.Compare) and node in parent.comparators:
            continue  # `x in self.req_id_to_index`
        elif isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is node:
            continue
        elif isinstance(parent, ast.keyword) and read_only(parent):
            continue
        else:
            out.append((line, f"passes or aliases {source_text(node)}"))
    return out


def slot_fact(root: str) -> dict:
    """The fact "every V2 request slot is < max_num_reqs", checked in the source (AST), as
    ``{"fact", "checked", "paths"}``: ``RequestState.__init__`` sets ``self.free_indices =
    list(range(max_num_reqs))``; ``add_request`` stores ``self.free_indices.pop()`` into
    ``req_id_to_index``; ``remove_request`` appends back only what it popped from
    ``req_id_to_index`` (after ``if req_idx is None: return``); no other site of ``vllm/v1/``
    mutates either container of a ``RequestState`` (``self.`` in ``states.py``, ``*.req_states.``
    elsewhere); the runner builds its ``RequestState`` with ``max_num_reqs=self.max_num_reqs``,
    ``self.max_num_reqs = self.scheduler_config.max_num_seqs``."""
    checked, unchecked = [], []
    files = {rel: (tree, parents) for rel, tree, parents in parsed_files(root, "vllm/v1")}
    tree, parents = files.get(STATES, (None, None))
    cls = (
        next((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "RequestState"), None)
        if tree
        else None
    )
    methods = {f.name: f for f in (cls.body if cls else []) if isinstance(f, ast.FunctionDef)}

    def stmts(fn):
        return {source_text(s): s.lineno for s in ast.walk(fn) if isinstance(s, ast.stmt)} if fn else {}

    init, add, rem = (stmts(methods.get(m)) for m in ("__init__", "add_request", "remove_request"))
    need = [
        (init, "self.free_indices=list(range(max_num_reqs))", "__init__"),
        (add, "req_idx=self.free_indices.pop()", "add_request"),
        (add, "self.req_id_to_index[req_id]=req_idx", "add_request"),
        (rem, "req_idx=self.req_id_to_index.pop(req_id,None)", "remove_request"),
        (rem, "ifreq_idxisNone:returnNone", "remove_request"),  # whitespace removed by source_text
        (rem, "self.free_indices.append(req_idx)", "remove_request"),
    ]
    for table, text, where in need:
        (checked if text in table else unchecked).append(
            f"{STATES}:{table.get(text, '?')} {where}: {text}" + ("" if text in table else " (not found)")
        )
    allowed = {
        (add.get("req_idx=self.free_indices.pop()"), "self.free_indices.pop()"),
        (add.get("self.req_id_to_index[req_id]=req_idx"), "writes self.req_id_to_index[req_id]"),
        (rem.get("req_idx=self.req_id_to_index.pop(req_id,None)"), "self.req_id_to_index.pop(req_id,None)"),
        (rem.get("self.free_indices.append(req_idx)"), "self.free_indices.append(req_idx)"),
        (init.get("self.free_indices=list(range(max_num_reqs))"), "assigns self.free_indices"),
    }
    defs: dict[str, list] = {}
    for _rel, t, _p in parsed_files(root, "vllm/v1"):
        for n in ast.walk(t):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                defs.setdefault(n.name, []).append(n)

    def read_only(kw) -> bool:
        """``f(name=container)`` where every ``f`` defined in ``vllm/v1/`` only reads parameter ``name``."""
        call = None
        for _rel, _tree, p in parsed_files(root, "vllm/v1"):
            call = p.get(kw) if kw in p else call
        if not isinstance(call, ast.Call):
            return False
        fname = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
        found = defs.get(fname, [])
        for fn in found:
            params = [a.arg for a in fn.args.args + fn.args.kwonlyargs]
            if kw.arg not in params:
                return False
            fp = {c: n for n in ast.walk(fn) for c in ast.iter_child_nodes(n)}
            for use in ast.walk(fn):
                if isinstance(use, ast.Name) and use.id == kw.arg and isinstance(use.ctx, ast.Load):
                    up = fp.get(use)
                    if isinstance(up, ast.Attribute) and up.attr in READERS:
                        continue
                    if isinstance(up, ast.Subscript) and isinstance(up.ctx, ast.Load):
                        continue
                    if isinstance(up, ast.Compare) and use in up.comparators:
                        continue
                    return False
        return bool(found)

    init_fn = methods.get("__init__")
    init_lines = range(init_fn.lineno, (init_fn.end_lineno or 0) + 1) if init_fn else range(0)
    for rel, (t, p) in sorted(files.items()):
        for attr in ("free_indices", "req_id_to_index"):
            if rel == STATES:
                sites = _mutations(rel, t, p, attr, lambda o: o == "self")
            else:
                sites = _mutations(rel, t, p, attr, lambda o: o.endswith("req_states"), read_only)
            for line, what in sites:
                if rel == STATES and (
                    (line, what) in allowed or (what.startswith("assigns self.req_id_to_index") and line in init_lines)
                ):
                    continue
                unchecked.append(f"{rel}:{line} {what}")
    runner = f"{GPU_DIR}/model_runner.py"
    rt = files.get(runner, (None, None))[0]
    ok_ctor = ok_cap = None
    for n in ast.walk(rt) if rt else []:
        if isinstance(n, ast.Call) and source_text(n.func) == "RequestState":
            kw = {k.arg: source_text(k.value) for k in n.keywords}
            ok_ctor = n.lineno if kw.get("max_num_reqs") == "self.max_num_reqs" else ok_ctor
        if isinstance(n, ast.Assign) and source_text(n) == "self.max_num_reqs=self.scheduler_config.max_num_seqs":
            ok_cap = n.lineno
    (checked if ok_ctor and ok_cap else unchecked).append(
        f"{runner}:{ok_ctor or '?'},{ok_cap or '?'} RequestState(max_num_reqs=self.max_num_reqs), "
        "self.max_num_reqs = scheduler_config.max_num_seqs"
    )
    return {
        "fact": "every V2 request slot (RequestState.req_id_to_index value) is < max_num_reqs",
        "checked": not unchecked,
        "paths": {"checked (ast)": checked, "not checked": unchecked},
    }


# ---------------------------------------------------------------------------------------------
# Slot expressions


def _stores(fn, name: str) -> int:
    """How many times ``fn``'s body binds the plain name ``name`` (any store: assignment, loop
    target, ``with ... as``, walrus, augmented assignment)."""
    return sum(1 for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store))


class SlotJudge:
    """Which expressions of the V2 runner's files are slots (scalars) or slot arrays (AST)."""

    def __init__(self, root: str, arrays_ok: bool):
        self.files = parsed_files(root, GPU_DIR)
        self.arrays_ok = arrays_ok
        self.calls: dict[str, list] = {}
        self.classes: dict[str, list[str]] = {}  # class -> base names
        self.defines: dict[str, set[str]] = {}  # method name -> classes defining it
        for rel, tree, parents in self.files:
            for n in ast.walk(tree):
                if isinstance(n, ast.Call):
                    name = n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", None)
                    if name:
                        self.calls.setdefault(name, []).append((rel, parents, n))
                if isinstance(n, ast.ClassDef):
                    self.classes[n.name] = [source_text(b).rsplit(".", 1)[-1] for b in n.bases]
                    for item in n.body:
                        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                            self.defines.setdefault(item.name, set()).add(n.name)
        self._owners: dict[str, set[str]] = {}
        self._active: set = set()
        self.why: list[str] = []
        self.via_array = False  # set when a scalar slot was judged as an element of a slot array
        self.counts = None  # a count judge (demand_v2_requests.CountJudge) for `range(n)` loops
        # name -> the classes (CamelCase callees) its assignments construct; None when some
        # assignment of it is anything else (then it is not attributed by this map)
        self.ctor_of: dict[str, set[str] | None] = {}
        returns: dict[str, set[str]] = {}  # factory function -> classes its return annotation names
        for _rel, tree, _parents in parsed_files(root, "vllm/v1"):
            for d in ast.walk(tree):
                if isinstance(d, ast.FunctionDef) and d.returns is not None and d.name[:1].islower():
                    names = {
                        n.id if isinstance(n, ast.Name) else n.attr
                        for n in ast.walk(d.returns)
                        if isinstance(n, (ast.Name, ast.Attribute))
                    }
                    names = {x for x in names if x[:1].isupper() and x not in ("None", "Optional")}
                    if names:
                        returns.setdefault(d.name, set()).update(names)
        for _rel, tree, _parents in self.files:
            for n in ast.walk(tree):
                if not isinstance(n, ast.Assign) or len(n.targets) != 1:
                    continue
                t = n.targets[0]
                name = t.attr if isinstance(t, ast.Attribute) else t.id if isinstance(t, ast.Name) else None
                if name is None:
                    continue
                v = n.value
                if isinstance(v, ast.Constant) and v.value is None:
                    continue
                held = _annotated_param(_parents, n, v)
                if held:  # self.x = x with x a parameter annotated with classes: an instance of one of them
                    if self.ctor_of.get(name, set()) is not None:
                        self.ctor_of.setdefault(name, set()).update(held)
                    continue
                callee = source_text(v.func).rsplit(".", 1)[-1] if isinstance(v, ast.Call) else ""
                if callee in returns:
                    if self.ctor_of.get(name, set()) is not None:
                        self.ctor_of.setdefault(name, set()).update(returns[callee])
                elif callee[:1].isupper() and callee.lower() != callee:
                    if self.ctor_of.get(name, set()) is not None:
                        self.ctor_of.setdefault(name, set()).add(callee)
                else:
                    self.ctor_of[name] = None

    def remove_returns_slot(self) -> bool:
        """``RequestState.remove_request`` returns only ``None`` or a name bound only to
        ``self.req_id_to_index.pop(..., None)`` (a slot: :func:`slot_fact`)."""
        if not hasattr(self, "_remove_ok"):
            self._remove_ok = False
            for rel, tree, _parents in self.files:
                if rel != STATES:
                    continue
                for cls in ast.walk(tree):
                    if not (isinstance(cls, ast.ClassDef) and cls.name == "RequestState"):
                        continue
                    fn = next(
                        (f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "remove_request"), None
                    )
                    if fn is None:
                        continue
                    rets = [r.value for r in ast.walk(fn) if isinstance(r, ast.Return)]
                    names = {r.id for r in rets if isinstance(r, ast.Name)}
                    plain = all(r is None or source_text(r) == "None" or isinstance(r, ast.Name) for r in rets)
                    binds = [
                        a
                        for a in ast.walk(fn)
                        if isinstance(a, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.NamedExpr, ast.For))
                        and any(
                            isinstance(t, ast.Name) and t.id in names
                            for t in ast.walk(a.targets[0] if isinstance(a, ast.Assign) else a.target)
                        )
                    ]
                    self._remove_ok = (
                        plain
                        and bool(binds)
                        and all(
                            isinstance(a, ast.Assign)
                            and len(a.targets) == 1
                            and source_text(a.value).startswith("self.req_id_to_index.pop(")
                            for a in binds
                        )
                    )
        return self._remove_ok

    def family(self, cls: str) -> set[str]:
        """``cls``, its subclasses and its bases defined under ``vllm/v1/worker/gpu/`` (by name)."""
        out = {cls}
        changed = True
        while changed:
            changed = False
            for c, bases in self.classes.items():
                if c not in out and any(b in out for b in bases):
                    out.add(c)
                    changed = True
        return out | set(self.classes.get(cls, []))

    def _component(self, cls: str) -> set[str]:
        """Every class name connected to ``cls`` by inheritance under the directory (bases,
        subclasses, their bases, ...)."""
        out, todo = set(), [cls]
        while todo:
            c = todo.pop()
            if c in out:
                continue
            out.add(c)
            todo += self.classes.get(c, [])
            todo += [s for s, bases in self.classes.items() if c in bases]
        return out

    def owners(self, cls: str) -> set[str]:
        """Names an instance of ``cls`` (or a subclass) is stored under: targets of ``Cls(...)``,
        parameters and fields annotated with the class, and aliases of those (fixpoint)."""
        if cls in self._owners:
            return self._owners[cls]
        fam = self.family(cls)
        names: set[str] = set()

        def last(node) -> str | None:
            if isinstance(node, ast.Name):
                return node.id
            if isinstance(node, ast.Attribute):
                return node.attr
            return None

        if not hasattr(self, "_binders"):
            self._binders = [
                n
                for _rel, tree, _parents in self.files
                for n in ast.walk(tree)
                if isinstance(n, (ast.Assign, ast.AnnAssign, ast.arg))
            ]
        changed = True
        while changed:
            changed = False
            if True:
                for n in self._binders:
                    pairs = []
                    if isinstance(n, ast.Assign):
                        pairs = [(t, n.value) for t in n.targets]
                    elif isinstance(n, ast.AnnAssign):
                        ann = source_text(n.annotation)
                        if any(c in ann for c in fam):
                            pairs = [(n.target, None)]
                        elif n.value is not None:
                            pairs = [(n.target, n.value)]
                    elif isinstance(n, ast.arg) and n.annotation is not None:
                        if any(c in source_text(n.annotation) for c in fam) and n.arg not in names:
                            names.add(n.arg)
                            changed = True
                        continue
                    for t, v in pairs:
                        name = last(t)
                        if name is None or name in names:
                            continue
                        hit = v is None
                        if isinstance(v, ast.Call) and source_text(v.func).rsplit(".", 1)[-1] in fam:
                            hit = True
                        if last(v) in names if v is not None else False:
                            hit = True
                        if hit:
                            names.add(name)
                            changed = True
        self._owners[cls] = names
        return names

    def receiver_class(self, parents, node, candidates: set[str]) -> str:
        """``"yes"`` when the receiver ``node`` (of ``node.attr``) is an instance of one of
        ``candidates`` (``self`` in such a class, or a name it is stored under), ``"no"`` when it
        is ``self`` of another class or a name another class that has the same member is stored
        under, ``"unknown"`` otherwise."""
        recv = node.value
        fn = enclosing_function(parents, node)
        if source_text(recv) == "self" and fn is not None:
            cls = class_of(parents, fn)
            return "yes" if cls in candidates else "no"
        if source_text(recv) == "super()":
            fn_cls = class_of(parents, fn) if fn is not None else None
            if fn_cls in candidates:
                return "yes"
            # super() is an instance of the enclosing class: with no candidate connected to that
            # class by inheritance (bases, subclasses, their other bases), it is none of them
            if fn_cls is not None and not (self._component(fn_cls) & set(candidates)):
                return "no"
            return "unknown"
        name = recv.id if isinstance(recv, ast.Name) else recv.attr if isinstance(recv, ast.Attribute) else None
        if name is None:
            return "unknown"
        if any(name in self.owners(c) for c in candidates):
            return "yes"
        made = self.ctor_of.get(name)
        if made and not (made & candidates):
            return "no"  # every assignment of that name constructs another class
        others = [c for c in self.classes if c not in candidates and name in self.owners(c)]
        return "no" if others else "unknown"

    def scalar(self, rel, parents, fn, expr, depth: int = 0) -> bool:
        if depth > 8 or fn is None:
            return False
        s = source_text(expr)
        if isinstance(expr, ast.Subscript) and (
            source_text(expr.value).endswith("req_states.req_id_to_index")
            or (rel == STATES and source_text(expr.value) == "self.req_id_to_index")
        ):
            return True  # a KeyError (absent id) stops the engine
        if isinstance(expr, ast.Subscript) and not isinstance(expr.slice, (ast.Slice, ast.Tuple)):
            # a value of RequestState.req_id_to_index reached through a parameter or local
            # (``req_id_to_index[req_id]`` with every call site passing ``req_states.req_id_to_index``)
            if self.slot_map(rel, parents, fn, expr.value, depth + 1):
                return True
            # one element of a slot array (or of its ``.tolist()``): a slot (slot_array_fact);
            # an index past the array raises before the buffer is touched
            if self.slot_list(rel, parents, fn, expr.value, depth + 1):
                self.via_array = True
                return True
        if (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Attribute)
            and expr.func.attr == "get"
            and len(expr.args) == 1
            and not expr.keywords
            and self.slot_map(rel, parents, fn, expr.func.value, depth + 1)
        ):
            return True  # a slot, or None for an absent id (an index by None adds an axis)
        if rel == STATES and s == "self.free_indices.pop()":
            return True
        if (
            isinstance(expr, ast.Call)
            and (
                source_text(expr.func).endswith("req_states.remove_request")
                or (rel == STATES and source_text(expr.func) == "self.remove_request")
            )
            and self.remove_returns_slot()
        ):
            return True  # the freed slot, or None (an index by None adds an axis: no row past the end)
        if isinstance(expr, ast.Name):
            return self._name(rel, parents, fn, expr.id, depth, self.scalar)
        return False

    def array(self, rel, parents, fn, expr, depth: int = 0) -> bool:
        """A slot array: a field named in :data:`SLOT_ARRAYS` (its stores are checked by
        :func:`slot_array_fact`), or a local/parameter whose every binding is one (or a value
        that fact accepts)."""
        if not self.arrays_ok or depth > 8 or fn is None:
            return False
        if _array_value(rel, parents, fn, expr, None, depth)[0]:
            return True
        return self._h2d_of_slot_list(rel, parents, fn, expr, depth)

    def slot_map(self, rel, parents, fn, expr, depth: int = 0) -> bool:
        """``expr`` is ``RequestState.req_id_to_index`` (whose values :func:`slot_fact` checks):
        ``req_states.req_id_to_index``, or a parameter or local every binding and call site of
        which is one."""
        if depth > 8 or fn is None:
            return False
        s = source_text(expr)
        if s.endswith("req_states.req_id_to_index") or (rel == STATES and s == "self.req_id_to_index"):
            return True
        if isinstance(expr, ast.Name):
            return self._name(rel, parents, fn, expr.id, depth, self.slot_map)
        return False

    def slot_list(self, rel, parents, fn, expr, depth: int = 0) -> bool:
        """``expr`` is a slot array or its ``.tolist()`` (directly or through a local every
        assignment of which is one)."""
        if not self.arrays_ok or depth > 8 or fn is None:
            return False
        if (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Attribute)
            and expr.func.attr == "tolist"
            and not expr.args
            and not expr.keywords
        ):
            return self.array(rel, parents, fn, expr.func.value, depth + 1)
        if isinstance(expr, ast.Name) and expr.id not in self._params(fn):
            return self._name(rel, parents, fn, expr.id, depth, self.slot_list)
        return self.array(rel, parents, fn, expr, depth + 1)

    @staticmethod
    def _params(fn) -> list[str]:
        return [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]

    def _h2d_of_slot_list(self, rel, parents, fn, expr, depth: int) -> bool:
        """``async_tensor_h2d(self.L, ...)`` (directly or through a local bound only to it) where
        ``self.L`` is a list of slots: :meth:`slot_list_attr`."""
        if isinstance(expr, ast.Name) and expr.id not in self._params(fn):
            sets = [
                a.value
                for a in ast.walk(fn)
                if isinstance(a, ast.Assign) and any(isinstance(t, ast.Name) and t.id == expr.id for t in a.targets)
            ]
            others = [
                a
                for a in ast.walk(fn)
                if isinstance(a, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr, ast.For, ast.comprehension, ast.With))
                and any(
                    isinstance(t, ast.Name) and t.id == expr.id and isinstance(t.ctx, ast.Store) for t in ast.walk(a)
                )
            ]
            if len(sets) != 1 or others:
                return False
            expr = sets[0]
        if not (
            isinstance(expr, ast.Call)
            and source_text(expr.func) == "async_tensor_h2d"
            and expr.args
            and isinstance(expr.args[0], ast.Attribute)
            and source_text(expr.args[0].value) == "self"
        ):
            return False
        cls = class_of(parents, fn)
        return cls is not None and self.slot_list_attr(rel, cls, expr.args[0].attr, depth + 1)

    def slot_list_attr(self, rel, cls: str, attr: str, depth: int = 0) -> bool:
        """``self.<attr>`` of class ``cls`` (in file ``rel``) holds only slots: every store of it
        under the directory is ``[]`` in ``cls``; every other use is ``.append(x)`` with ``x`` a
        slot (:meth:`scalar`), ``.clear()``, a truth test, ``len(...)`` or the first argument of
        ``async_tensor_h2d`` (which copies the list). Any other use (another mutator, a subscript
        store, the list handed to other code) makes it not one."""
        key = ("slot-list", rel, cls, attr)
        if key in self._active:
            return True
        self._active.add(key)
        try:
            for frel, tree, parents in self.files:
                for node in ast.walk(tree):
                    if not (isinstance(node, ast.Attribute) and node.attr == attr):
                        continue
                    if self.receiver_class(parents, node, {cls}) == "no":
                        continue
                    fn = enclosing_function(parents, node)
                    if fn is None or class_of(parents, fn) != cls or frel != rel or source_text(node.value) != "self":
                        return False  # named outside the class: not followed
                    parent = parents.get(node)
                    if isinstance(node.ctx, ast.Store):
                        st = parents.get(node)
                        if not (
                            isinstance(st, ast.AnnAssign | ast.Assign)
                            and isinstance(st.value, ast.List)
                            and not st.value.elts
                        ):
                            return False
                        continue
                    if isinstance(parent, ast.Attribute) and parent.value is node:
                        call = parents.get(parent)
                        if not (isinstance(call, ast.Call) and call.func is parent):
                            return False
                        if parent.attr == "clear" and not call.args and not call.keywords:
                            continue
                        if (
                            parent.attr == "append"
                            and len(call.args) == 1
                            and not call.keywords
                            and self.scalar(frel, parents, fn, call.args[0], depth + 1)
                        ):
                            continue
                        return False
                    if isinstance(parent, (ast.If, ast.While)) and parent.test is node:
                        continue
                    if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not):
                        continue
                    if isinstance(parent, ast.Call) and parent.args[:1] == [node]:
                        if source_text(parent.func) in ("len", "async_tensor_h2d"):
                            continue
                    return False
            return True
        finally:
            self._active.discard(key)

    def _module_functions(self) -> dict:
        """``{name: [(rel, def, parents, jit)]}`` of every module-level function under the directory
        (``jit``: decorated ``@triton.jit``)."""
        if not hasattr(self, "_defs"):
            self._defs: dict = {}
            for rel, tree, parents in self.files:
                for d in tree.body:
                    if isinstance(d, ast.FunctionDef):
                        jit = any(source_text(x).split("(")[0] in ("triton.jit", "jit") for x in d.decorator_list)
                        self._defs.setdefault(d.name, []).append((rel, d, parents, jit))
        return self._defs

    def kernel_row(self, rel, parents, fn, call, arg) -> str | None:
        """Why the buffer ``arg`` (an argument of ``call``, in ``fn``) is indexed only by a slot in
        the Triton kernel it reaches, or None (AST, the pattern of vLLM's V2 sampling kernels):

        - ``call`` is a module-level function ``f`` (one definition under the directory) whose
          parameter bound to ``arg`` is used only as an argument of launches ``K[grid](...)`` of
          ``@triton.jit`` kernels of ``f``'s module, or for ``.stride``/``.shape``/``.dtype``;
        - in each ``K``, that parameter ``P`` appears only as ``tl.load(P + r, ...)`` or
          ``tl.store(P + r, ...)``, with ``r`` bound once, by ``r = tl.load(M + i)`` (no mask; a
          ``.to(...)`` cast allowed), ``M`` a kernel parameter ``K`` never rebinds, launched with
          a parameter of ``f`` that ``f`` never rebinds (nor the buffer's) and that ``call``
          passes a slot array (:meth:`array`).

        So every element the kernel touches is at a row that is a value of a slot array, below
        ``max_num_reqs`` under :func:`slot_array_fact`. Which element of the slot array is read
        (``i`` within its length) is that array's own access, not judged here."""
        if not isinstance(call.func, ast.Name) or fn is None:
            return None
        defs = [d for d in self._module_functions().get(call.func.id, []) if not d[3]]
        if (
            len(defs) != 1
            or any(isinstance(a, ast.Starred) for a in call.args)
            or any(k.arg is None for k in call.keywords)
        ):
            return None
        frel, f, fparents, _ = defs[0]
        names = [a.arg for a in f.args.posonlyargs + f.args.args]
        bound = {names[i]: a for i, a in enumerate(call.args) if i < len(names)}
        bound.update({k.arg: k.value for k in call.keywords})
        param = next((n for n, a in bound.items() if a is arg), None)
        if param is None:
            return None
        kernels = {x[1].name: x[1] for v in self._module_functions().values() for x in v if x[0] == frel and x[3]}
        launches = []
        for n in ast.walk(f):
            if not (isinstance(n, ast.Name) and n.id == param and isinstance(n.ctx, ast.Load)):
                continue
            up = fparents.get(n)
            if isinstance(up, ast.Attribute) and up.value is n and up.attr in ("stride", "shape", "dtype", "device"):
                continue
            launch = up if isinstance(up, ast.Call) else fparents.get(up) if isinstance(up, ast.keyword) else None
            if not (
                isinstance(launch, ast.Call)
                and isinstance(launch.func, ast.Subscript)
                and isinstance(launch.func.value, ast.Name)
                and launch.func.value.id in kernels
            ):
                return None
            launches.append((launch, n))
        if not launches:
            return None
        rows = []
        for launch, n in launches:
            k = kernels[launch.func.value.id]
            kparams = [a.arg for a in k.args.posonlyargs + k.args.args]
            host = {kparams[i]: a for i, a in enumerate(launch.args) if i < len(kparams)}
            host.update({kw.arg: kw.value for kw in launch.keywords if kw.arg})
            kp = next((name for name, a in host.items() if a is n), None)
            if kp is None:
                return None
            kpar = {c: x for x in ast.walk(k) for c in ast.iter_child_nodes(x)}
            for use in ast.walk(k):
                if not (isinstance(use, ast.Name) and use.id == kp and isinstance(use.ctx, ast.Load)):
                    continue
                add = kpar.get(use)
                mem = kpar.get(add)
                if not (
                    isinstance(add, ast.BinOp)
                    and isinstance(add.op, ast.Add)
                    and isinstance(mem, ast.Call)
                    and source_text(mem.func) in ("tl.load", "tl.store")
                    and mem.args
                    and mem.args[0] is add
                ):
                    return None
                r = add.right if add.left is use else add.left
                if not isinstance(r, ast.Name):
                    return None
                sets = [
                    a.value
                    for a in ast.walk(k)
                    if isinstance(a, ast.Assign)
                    and len(a.targets) == 1
                    and isinstance(a.targets[0], ast.Name)
                    and a.targets[0].id == r.id
                ]
                # bound exactly once, by that assignment (no loop, tuple, walrus or augmented store)
                if len(sets) != 1 or _stores(k, r.id) != 1:
                    return None
                v = sets[0]
                if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr == "to":
                    v = v.func.value
                if not (
                    isinstance(v, ast.Call)
                    and source_text(v.func) == "tl.load"
                    and len(v.args) == 1
                    and not v.keywords
                    and isinstance(v.args[0], ast.BinOp)
                    and isinstance(v.args[0].op, ast.Add)
                    and isinstance(v.args[0].left, ast.Name)
                ):
                    return None
                m = v.args[0].left.id
                margin = host.get(m)
                if not (
                    m in kparams
                    and not _stores(k, m)
                    and isinstance(margin, ast.Name)
                    and margin.id in bound
                    and not _stores(f, margin.id)
                    and not _stores(f, param)
                ):
                    return None
                if not self.array(rel, parents, fn, bound[margin.id]):
                    return None
                rows.append(f"{k.name}: {kp}[{r.id}], {r.id} = tl.load({m} + ...) of {source_text(bound[margin.id])}")
        return f"{call.func.id} -> " + "; ".join(sorted(set(rows)))

    def _name(self, rel, parents, fn, name, depth, judge) -> bool:
        assigns = [
            a
            for a in ast.walk(fn)
            if isinstance(a, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr))
            and any(
                isinstance(t, ast.Name) and t.id == name
                for t in (a.targets if isinstance(a, ast.Assign) else [a.target])
            )
        ]
        loops = [
            a
            for a in ast.walk(fn)
            if isinstance(a, (ast.For, ast.comprehension, ast.With))
            and name
            in {
                n.id
                for n in ast.walk(a.target if not isinstance(a, ast.With) else a)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            }
        ]
        if loops and judge == self.scalar and self.counts is not None:
            # `for x in range(n)`: x < n <= max_num_reqs when the count judge bounds n
            ranges = [
                lp
                for lp in loops
                if isinstance(lp, ast.For)
                and isinstance(lp.target, ast.Name)
                and isinstance(lp.iter, ast.Call)
                and source_text(lp.iter.func) == "range"
                and len(lp.iter.args) == 1
            ]
            if len(ranges) == len(loops) and all(
                self.counts.scalar(rel, parents, fn, lp.iter.args[0], depth + 1) for lp in ranges
            ):
                if not assigns:
                    return True
                loops = []
            elif len(ranges) == len(loops):
                self.why.append(
                    f"{rel}:{ranges[0].lineno} for {name} in {source_text(ranges[0].iter)}: count not bounded"
                )
                return False
        if loops or any(isinstance(a, ast.AugAssign) for a in assigns):
            return False
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
        if not assigns and name not in params:
            return False
        if not all(a.value is not None and judge(rel, parents, fn, a.value, depth + 1) for a in assigns):
            return False
        if name in params:
            return self._param(rel, parents, fn, name, depth, judge)
        return True

    def _param(self, rel, parents, fn, name, depth, judge) -> bool:
        """Every call site of ``fn`` passes a value ``judge`` accepts for parameter ``name``. A
        parameter already being judged up the stack (a cycle of calls) is taken as holding:
        a cycle brings no value from outside it, so the values are those of the other sites."""
        key = (id(fn), name, getattr(judge, "__name__", ""))
        if key in self._active:
            return True
        self._active.add(key)
        try:
            return self._param_sites(rel, parents, fn, name, depth, judge)
        finally:
            self._active.discard(key)

    def _param_sites(self, rel, parents, fn, name, depth, judge) -> bool:
        positional = [a.arg for a in fn.args.posonlyargs + fn.args.args]
        method = class_of(parents, fn) is not None and positional[:1] in (["self"], ["cls"])
        pos = positional.index(name) - (1 if method else 0) if name in positional else None
        cls = class_of(parents, fn)
        sites = self.calls.get(fn.name, [])
        if cls is not None and method:
            fam = self.family(cls)
            sites = [
                (crel, cparents, call)
                for crel, cparents, call in sites
                if not (isinstance(call.func, ast.Attribute) and self.receiver_class(cparents, call.func, fam) == "no")
            ]
        sites = [site for site in sites if _binds(fn, method, site[2])]
        if not sites:
            return False
        for crel, cparents, call in sites:
            if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
                return False
            arg = next((k.value for k in call.keywords if k.arg == name), None)
            if arg is None and pos is not None and 0 <= pos < len(call.args):
                arg = call.args[pos]
            if arg is None:
                return False  # a default value is not a slot
            caller = enclosing_function(cparents, call)
            if not judge(crel, cparents, caller, arg, depth + 1):
                self.why.append(f"{crel}:{call.lineno} {fn.name}({name}={source_text(arg)[:40]})")
                return False
        return True


# ---------------------------------------------------------------------------------------------
# Slot arrays


def _array_value(rel, parents, fn, v, requests_fact, depth=0) -> tuple[bool, str]:
    """``(holds slots, why)`` of value ``v`` (see :func:`slot_array_fact`); ``requests_fact`` None
    means the dummy batch's ``arange(num_reqs)`` is accepted as a slot array field (its store is
    judged by the fact itself)."""
    s = source_text(v)
    if depth > 6:
        return False, "too deep"
    if isinstance(v, ast.Attribute) and v.attr in SLOT_ARRAYS:
        return True, "field of a slot array"
    if isinstance(v, ast.Subscript) and _array_value(rel, parents, fn, v.value, requests_fact, depth + 1)[0]:
        return True, "subset of a slot array"
    if isinstance(v, ast.Call):
        f = source_text(v.func)
        if f == "np.fromiter" and v.args:
            a = v.args[0]
            if isinstance(a, ast.Name) and fn is not None:
                sets = [
                    x.value
                    for x in ast.walk(fn)
                    if isinstance(x, ast.Assign) and any(isinstance(t, ast.Name) and t.id == a.id for t in x.targets)
                ]
                a = sets[0] if len(sets) == 1 else a
            if source_text(a).startswith("map(self.req_states.req_id_to_index.__getitem__,"):
                return True, "map(req_states.req_id_to_index.__getitem__, ...)"
        if f in ("async_tensor_h2d",) and v.args:
            return _array_value(rel, parents, fn, v.args[0], requests_fact, depth + 1)
        if f.endswith(".contiguous") and isinstance(v.func, ast.Attribute):
            return _array_value(rel, parents, fn, v.func.value, requests_fact, depth + 1)
        if f == "np.where" and len(v.args) == 3 and source_text(v.args[1]) == "-1":
            return _array_value(rel, parents, fn, v.args[2], requests_fact, depth + 1)
        if f in ("torch.zeros", "np.zeros"):
            # every element 0, a slot (max_num_reqs >= 1); later in-place writes are paths of their own
            return True, "zeros (slot 0)"
        if (
            f in ("np.arange", "torch.arange")
            and v.args
            and source_text(v.args[0]) == "num_reqs"
            and fn is not None
            and fn.name == "make_dummy"
        ):
            # the values are < the num_reqs every make_dummy(...) call passes: those calls are paths
            # of the request-count fact, so it is enough that each of them is checked
            rebound = any(
                isinstance(x, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                and any(source_text(t) == "num_reqs" for t in (x.targets if isinstance(x, ast.Assign) else [x.target]))
                for x in ast.walk(fn)
            )
            calls_checked = requests_fact is not None and not any(
                "make_dummy(" in p for p in requests_fact.get("paths", {}).get("not checked", [])
            )
            good = requests_fact is None or bool(requests_fact.get("checked")) or (calls_checked and not rebound)
            return good, "arange(num_reqs) of the dummy batch" + (
                " (every make_dummy call's count checked)" if good else " (request count not checked)"
            )
    if isinstance(v, ast.Name) and fn is not None:
        sets = [
            x.value
            for x in ast.walk(fn)
            if isinstance(x, (ast.Assign, ast.AnnAssign))
            and any(
                isinstance(t, ast.Name) and t.id == v.id
                for t in (x.targets if isinstance(x, ast.Assign) else [x.target])
            )
            and x.value is not None
        ]
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
        if v.id in SLOT_ARRAYS and v.id in params and not sets:
            return True, "parameter of that name (its stores are checked where they are made)"
        if sets:
            results = [_array_value(rel, parents, fn, x, requests_fact, depth + 1) for x in sets]
            if all(r[0] for r in results):
                return True, "; ".join(sorted({r[1] for r in results}))
            return False, "; ".join(r[1] for r in results if not r[0])
    return False, f"not a slot array: {s}"


#: Values an in-place write may put into a slot array: ``-1`` (a marker; a Python index wraps to
#: the last row, within the allocation) and ``0`` (a slot: ``max_num_reqs >= 1``).
MARKERS = ("-1", "0")


def _in_place_writes(rel, tree, parents):
    """``[(node, line, kind, value)]`` of every in-place write of a name or attribute named in
    :data:`SLOT_ARRAYS` (directly or through a subscript): a subscript store (``value`` the stored
    expression), a call of a method ending in ``_`` (torch's in-place methods: ``kind`` its name,
    ``value`` the call), or the array passed as ``out=`` (``kind`` ``"out="``)."""
    out = []
    for n in ast.walk(tree):
        named = (isinstance(n, ast.Attribute) and n.attr in SLOT_ARRAYS) or (
            isinstance(n, ast.Name) and n.id in SLOT_ARRAYS
        )
        if not named:
            continue
        if isinstance(getattr(n, "ctx", None), ast.Store):
            if isinstance(parents.get(n), ast.AugAssign):
                out.append((n, n.lineno, "augmented assignment", None))
            continue
        target, parent = n, parents.get(n)
        if isinstance(parent, ast.Subscript) and parent.value is target:
            if isinstance(parent.ctx, ast.Store):
                stmt = parents.get(parent)
                value = stmt.value if isinstance(stmt, (ast.Assign, ast.AugAssign)) else None
                out.append((n, n.lineno, "store", value if isinstance(stmt, ast.Assign) else None))
                continue
            target, parent = parent, parents.get(parent)
        if isinstance(parent, ast.Attribute) and parent.value is target and parent.attr.endswith("_"):
            call = parents.get(parent)
            out.append((n, n.lineno, parent.attr, call if isinstance(call, ast.Call) else None))
        elif isinstance(parent, ast.keyword) and parent.arg == "out":
            out.append((n, n.lineno, "out=", None))
    return out


def slot_array_fact(root: str, requests_fact: dict | None, executed: dict | None = None) -> dict:
    """Whether every value stored into a field or keyword named ``idx_mapping_np``,
    ``idx_mapping`` or ``expanded_idx_mapping`` under ``vllm/v1/worker/gpu/`` holds slots (AST):
    ``np.fromiter`` of ``map(req_states.req_id_to_index.__getitem__, ...)``, a subscript of
    another slot array, ``async_tensor_h2d``/``.contiguous()`` of one, ``np.where(mask, -1, array)``
    (``-1`` indexes the last row: within the allocation), ``torch.zeros``/``np.zeros`` (slot 0),
    or ``arange(num_reqs)`` in the dummy batch (values < num_reqs, which ``requests_fact`` bounds
    by ``max_num_reqs``). A store a kernel fills is judged by ``executed`` (``{"<file>:<line>":
    (checked, why)}``, the engine's code run: :func:`.fact_slots.shard_paths`), not read here.

    Every **in-place write** of such a name (a subscript store, a torch in-place method, ``out=``)
    is a path too: ``fill_``/a store of a marker (:data:`MARKERS`), ``zero_()``, or ``copy_`` of a
    slot array (a parameter: every call site's argument, through :class:`SlotJudge`); anything
    else is not checked."""
    checked, unchecked = [], []
    slots = SlotJudge(root, arrays_ok=True)
    executed = executed or {}

    def ok(rel, parents, fn, v, depth=0):
        return _array_value(rel, parents, fn, v, requests_fact, depth)

    def source_ok(rel, parents, fn, v) -> tuple[bool, str]:
        good, why = ok(rel, parents, fn, v)
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs] if fn else []
        if isinstance(v, ast.Name) and v.id in params:
            # a parameter: judged at every call site (not by its name)
            def judge(crel, cparents, caller, arg, depth):
                return caller is not None and ok(crel, cparents, caller, arg, depth)[0]

            slots.why.clear()
            good = slots._param(rel, parents, fn, v.id, 0, judge)
            why = (
                "every call site passes a slot array"
                if good
                else "a call site passes " + (slots.why[-1] if slots.why else "no slot array")
            )
        return good, why

    for rel, tree, parents in slots.files:
        for n, line, kind, value in _in_place_writes(rel, tree, parents):
            fn = enclosing_function(parents, n)
            what = f"{rel}:{line} in-place {kind} of {source_text(n)}"
            args = value.args if isinstance(value, ast.Call) else []
            if kind == "zero_" and not args:
                checked.append(f"{what} (zero: slot 0)")
            elif kind == "fill_" and len(args) == 1 and source_text(args[0]) in MARKERS:
                checked.append(f"{what} (fill_({source_text(args[0])}): a marker)")
            elif kind == "store" and value is not None and source_text(value) in MARKERS:
                checked.append(f"{what} (stores {source_text(value)}: a marker)")
            elif kind in ("copy_", "store") and fn is not None and (args or value is not None):
                src = args[0] if kind == "copy_" else value
                good, why = source_ok(rel, parents, fn, src)
                (checked if good else unchecked).append(f"{what} from {source_text(src)[:60]} ({why})")
            else:
                unchecked.append(f"{what} (not a marker, a zero or a copy of a slot array)")

    for rel, tree, parents in slots.files:
        for n in ast.walk(tree):
            values = []
            if isinstance(n, ast.keyword) and n.arg in SLOT_ARRAYS:
                values.append((n.value, n.value.lineno))
            if isinstance(n, (ast.Assign, ast.AnnAssign)):
                for t in n.targets if isinstance(n, ast.Assign) else [n.target]:
                    if isinstance(t, ast.Attribute) and t.attr in SLOT_ARRAYS and n.value is not None:
                        values.append((n.value, n.lineno))
            for v, line in values:
                fn = enclosing_function(parents, n)
                lines = [line]
                if isinstance(v, ast.Name) and fn is not None:  # a local: where it is made
                    lines += [
                        x.lineno
                        for x in ast.walk(fn)
                        if isinstance(x, ast.Assign) and any(source_text(t) == v.id for t in x.targets)
                    ]
                hit = next((f"{rel}:{x}" for x in lines if f"{rel}:{x}" in executed), None)
                if hit is not None and len(lines) <= 2:
                    good, why = executed[hit]
                    (checked if good else unchecked).append(f"{rel}:{line} {source_text(v)[:80]} ({why})")
                    continue
                good, why = ok(rel, parents, fn, v)
                (checked if good else unchecked).append(f"{rel}:{line} {source_text(v)[:80]} ({why})")
    return {
        "fact": "every V2 slot array (idx_mapping_np, idx_mapping, expanded_idx_mapping) holds slots < max_num_reqs",
        "checked": not unchecked,
        "paths": {"checked (ast)": checked, "not checked": unchecked},
    }


# ---------------------------------------------------------------------------------------------
# Linking every use of a buffer to slots


def slot_rows_uses(entry, root: str, slots: SlotJudge, reasons: dict | None = None) -> list[str] | None:
    """The sites of every use of ``entry``'s attribute name under ``vllm/v1/worker/gpu/``, each
    judged (see the module docstring), or None when some use is not of a checked form."""
    if not entry.file.startswith(GPU_DIR + "/") or len(entry.shape) != 1 or entry.shape[0] != "max_num_reqs":
        return None
    name = entry.attribute.rsplit(".", 1)[-1].replace("[]", "")
    sites: list[str] = []

    def reject(rel, node, why):
        if reasons is not None:
            reasons[entry.id] = f"{rel}:{node.lineno} {why}"
        return None

    owner_family = slots.family(entry.owner.split(".")[0])
    for rel, tree, parents in slots.files:
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and node.attr == name):
                continue
            if slots.receiver_class(parents, node, owner_family) != "yes":
                continue  # another object's attribute of the same name (see the module docstring)
            if isinstance(node.ctx, ast.Store):
                if rel == entry.file and abs(node.lineno - entry.line) <= 3:
                    continue  # the allocation
                return reject(rel, node, f"assigned: {source_text(node)}")
            fn = enclosing_function(parents, node)
            target, parent = node, parents.get(node)
            if isinstance(parent, ast.Attribute) and parent.value is target and parent.attr in VIEWS:
                target, parent = parent, parents.get(parent)
            where = f"{rel}:{node.lineno}"
            if isinstance(parent, ast.Attribute) and parent.value is target and parent.attr in META:
                continue
            if isinstance(parent, ast.Subscript) and parent.value is target:
                key = parent.slice
                slots.why.clear()
                if isinstance(key, ast.Slice) and key.lower is None and key.upper is None and key.step is None:
                    sites.append(f"{where} [:] (whole)")
                    continue
                if isinstance(key, ast.Slice) or isinstance(key, ast.Tuple):
                    return reject(rel, node, f"subscript {source_text(parent)}")
                slots.via_array = False
                if slots.scalar(rel, parents, fn, key):
                    kind = " (a slot array) element: a slot" if slots.via_array else " (a slot)"
                    sites.append(f"{where} [{source_text(key)}] in {fn.name}{kind}")
                    continue
                if slots.array(rel, parents, fn, key):
                    sites.append(f"{where} [{source_text(key)}] in {fn.name} (a slot array)")
                    continue
                return reject(
                    rel,
                    node,
                    f"index {source_text(key)} is not a slot" + (f" (via {slots.why[0]})" if slots.why else ""),
                )
            if isinstance(parent, ast.Attribute) and parent.value is target:
                call = parents.get(parent)
                if not (isinstance(call, ast.Call) and call.func is parent):
                    return reject(rel, node, f"uses {source_text(parent)}")
                if parent.attr in WHOLE_METHODS and not call.args and not call.keywords:
                    sites.append(f"{where} {parent.attr}() (whole)")
                    continue
                if parent.attr in ("fill_", "fill") and len(call.args) == 1 and not call.keywords:
                    # torch's fill_, numpy's fill: every element, none beyond the allocation
                    sites.append(f"{where} {parent.attr} (whole)")
                    continue
                if parent.attr == "copy_" and len(call.args) == 1 and not call.keywords:
                    # the whole buffer as copy_'s destination: torch raises unless the source
                    # broadcasts to its shape, so no element beyond the allocation is written
                    sites.append(f"{where} copy_ into the whole buffer")
                    continue
                if (
                    parent.attr in INDEX_METHODS
                    and len(call.args) >= 2
                    and source_text(call.args[0]) == "0"
                    and slots.array(rel, parents, fn, call.args[1])
                ):
                    # torch's index_fill_/index_copy_/index_add_/index_select along dimension 0
                    # touch the rows the index tensor names: slots
                    sites.append(f"{where} {parent.attr}(0, {source_text(call.args[1])}) in {fn.name} (a slot array)")
                    continue
                if (
                    parent.attr == "stage_write_elem"
                    and len(call.args) == 2
                    and slots.scalar(rel, parents, fn, call.args[0])
                ):
                    sites.append(f"{where} stage_write_elem({source_text(call.args[0])}) in {fn.name} (a slot)")
                    continue
                return reject(rel, node, f"call {source_text(call)[:80]}")
            if isinstance(parent, (ast.Call, ast.keyword)):
                call = parent if isinstance(parent, ast.Call) else parents.get(parent)
                if isinstance(call, ast.Call) and source_text(call.func) in ("np.minimum", "np.maximum"):
                    sites.append(f"{where} {source_text(call.func)} of whole arrays")
                    continue
                kernel = (
                    slots.kernel_row(rel, parents, fn, call, target if isinstance(parent, ast.Call) else parent.value)
                    if isinstance(call, ast.Call) and (isinstance(parent, ast.keyword) or call.func is not target)
                    else None
                )
                if kernel is not None:
                    sites.append(f"{where} {kernel} in {fn.name} (a slot array)")
                    continue
            return reject(rel, node, f"{type(parent).__name__}: {source_text(parent)[:80]}")
    return sites or None
