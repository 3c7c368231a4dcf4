"""Which forward modes and capture phases reach a backend buffer's slices (SGLang 0.5.23), so a
call site of the backend's CUDA-graph entry methods that cannot reach them drops out of the fact
``backend_bs <= padded_bs`` for that buffer.

A backend's ``init_forward_metadata_out_graph(forward_batch, in_capture=False)`` and
``init_forward_metadata_in_graph(forward_batch)`` branch on the batch's ``forward_mode``
(``forward_mode.is_target_verify()``, ...) and on ``in_capture``. :func:`use_contexts` walks
the backend's own source (AST) from each entry method, once per **context** ``(entry method,
in_capture, mode)``, and records the lines each context reaches:

- an ``if`` whose test reads only ``in_capture``, the batch's mode (``<fb>.forward_mode.is_X(...)``
  with constant arguments, ``== ForwardMode.X``), constants and ``not``/``and``/``or`` takes the one
  branch the context decides; the mode predicates are SGLang's own ``ForwardMode`` methods,
  **run** on each member (:func:`mode_table`); any other test takes both branches;
- a ``return``/``raise`` ends the path; loops, ``try``, ``with`` and nested functions are walked
  whole and never end it;
- ``super().m(...)`` walks the next definition of ``m`` in the order; a static or class method not
  handed ``self`` is not followed (it cannot reach the instance's buffers), a property's getter is
  walked where it is read; a method taken as a value (a callback that may run later, in another
  context) or another decorated method makes the walk unknown;
- a call ``self.m(...)`` walks ``m`` of the backend class (or a base in the same file) with the
  arguments bound: a literal ``True``/``False``, the caller's ``in_capture`` or the forward batch and
  its mode are passed on, a parameter the call does not give takes its literal default; anything
  else is unknown to the callee (both branches).

Methods resolve through the class's bases by name over srt (the caller gives the resolution,
:func:`class_methods`); every subclass is walked with its own resolution. The walk is **unknown**
(``None``: no site is dropped) when a reached ``self.m(...)`` resolves to no method and is not a
callable kept on the instance, an entry method is missing, or the walk goes deeper than
:data:`MAX_DEPTH`.

:func:`capproof.engines.sglang.graph_calls.site_context` reads a call site's context: ``in_capture`` from a literal (absent: the
method's default), the mode from the forward batch's every reaching binding in the calling
function when each is a construction ``X(forward_mode=<mode>, ...)`` with a mode that resolves
(``ForwardMode.X``, or ``self.A`` whose every store in srt is ``self.A = <mode>`` in the file),
otherwise every mode. A site is dropped for a buffer only when no context it may have reaches any
line that slices the buffer by the batch (:func:`unreachable`).
"""

from __future__ import annotations

import ast
from functools import lru_cache

from ..tracing.derive import src

__all__ = [
    "mode_table",
    "class_methods",
    "walk_contexts",
    "use_contexts",
    "forwarded_contexts",
    "entry_default",
    "may_reach",
    "unreachable",
    "MAX_DEPTH",
]

MAX_DEPTH = 12
OUT_GRAPH, IN_GRAPH = "init_forward_metadata_out_graph", "init_forward_metadata_in_graph"
FORWARD_MODE_MODULE = "sglang.srt.model_executor.forward_batch_info"


@lru_cache(maxsize=1)
def mode_table() -> tuple[tuple[str, ...], dict]:
    """``(members, predicates)``: the names of SGLang's ``ForwardMode`` members and a function
    ``pred(member, method, args, kwargs) -> bool`` that **runs** ``ForwardMode[member].method(*args,
    **kwargs)``. Needs SGLang importable (raises ImportError otherwise)."""
    import importlib

    fm = importlib.import_module(FORWARD_MODE_MODULE).ForwardMode

    def pred(member: str, method: str, args: tuple = (), kwargs: tuple = ()) -> bool:
        return bool(getattr(fm[member], method)(*args, **dict(kwargs)))

    return tuple(m.name for m in fm), pred


class _Unknown(Exception):
    """The walk cannot decide which lines a context reaches."""


def class_methods(mro: list) -> tuple[dict, frozenset]:
    """``(methods, external)`` of a class from its resolution order ``[(key, tree, class name)]``
    (nearest first; ``key`` names the file): ``{name: (FunctionDef, key)}``, the nearest definition
    of each, and the attributes stored on ``self`` in those classes that are no method and never
    hold ``self`` or an attribute of it (:func:`_external`)."""
    methods: dict = {}
    nodes = []
    #: for ``super().m(...)``: the place in the order of every definition, and each name's definitions
    place: dict = {}
    defs: dict = {}
    for i, (key, tree, name) in enumerate(mro):
        for n in ast.walk(tree):
            if isinstance(n, ast.ClassDef) and n.name == name:
                nodes.append(n)
                for b in n.body:
                    if isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        place[id(b)] = i
                        defs.setdefault(b.name, []).append((i, b, key))
                        methods.setdefault(b.name, (b, key))
    methods[_SUPER] = (place, defs)
    return methods, _external(nodes, methods)


#: the key of :func:`class_methods`' table for ``super()`` calls
_SUPER = ("super",)


def _decorators(fn) -> str:
    return ", ".join("@" + src(d) for d in fn.decorator_list) or "method"


def _kind(fn) -> str:
    """``plain`` (no decorator, or only ``torch.no_grad()``-style ones), ``contextmanager`` (runs its
    body with the call's arguments), ``property`` (``property``/``cached_property``: the getter runs
    on attribute access), ``static``, ``class`` (neither sees the instance unless handed it), or
    ``other`` (a cache or wrapper, which may take its arguments otherwise)."""
    names = {src(d).split("(", 1)[0].rsplit(".", 1)[-1] for d in fn.decorator_list} - {"no_grad", "inference_mode"}
    if not names:
        return "plain"
    kinds = {"contextmanager": "contextmanager", "property": "property", "cached_property": "property"}
    kinds.update(staticmethod="static", classmethod="class")
    return kinds.get(names.pop(), "other") if len(names) == 1 else "other"


def _const(node):
    return node.value if isinstance(node, ast.Constant) else _NOT_CONST


_NOT_CONST = object()


class _Walk:
    def __init__(self, methods: dict, modes: tuple, pred, external: frozenset = frozenset()):
        self.methods, self.modes, self.pred = methods, modes, pred
        self.external = external
        #: contexts handed on by entry-method calls on other objects (a wrapper's children)
        self.forwards: set = set()
        #: the methods being walked, innermost last
        self.stack: list = []
        #: ``(file key, line)`` reached
        self.lines: set[tuple] = set()
        self.active: set = set()
        self.done: set = set()

    # env: name -> ("cap", bool) | ("fb",) | ("mode",) | ("test", expr); self.mode: the context's mode
    def run(self, fn, file: str, env: dict, mode: str, depth: int):
        key = (id(fn), tuple(sorted(env.items())), mode)
        if key in self.done or key in self.active:
            return
        if depth > MAX_DEPTH:
            raise _Unknown(f"deeper than {MAX_DEPTH} calls")
        self.active.add(key)
        self.stack.append(fn)
        try:
            self._block(fn.body, file, self._locals(fn, env), mode, depth)
        finally:
            self.active.discard(key)
            self.stack.pop()
        self.done.add(key)

    def _locals(self, fn, env: dict) -> dict:
        """``env`` plus locals every binding of which is ``<fb>.forward_mode``; a name bound any
        other way loses what it carried."""
        env = dict(env)
        binds: dict[str, list] = {}
        for n in ast.walk(fn):
            targets = []
            if isinstance(n, ast.Assign):
                targets = [(t, n.value) for t in n.targets]
            elif isinstance(n, (ast.AnnAssign, ast.AugAssign)):
                targets = [(n.target, None)]
            elif isinstance(n, (ast.For, ast.comprehension)):
                targets = [(n.target, None)]
            elif isinstance(n, ast.NamedExpr):
                targets = [(n.target, n.value)]
            for t, v in targets:
                for name in [x.id for x in ast.walk(t) if isinstance(x, ast.Name)]:
                    binds.setdefault(name, []).append(v if isinstance(t, ast.Name) else None)
        for name, values in binds.items():
            if all(v is not None and self._is_mode(v, env) for v in values) and name not in env:
                env[name] = ("mode",)
            else:
                env.pop(name, None)
        for name, values in binds.items():
            if name not in env and len(values) == 1 and self._mode_test(values[0], env):
                # bound once to a test of the mode (``is_verify = forward_mode.is_target_verify()``):
                # the context decides it as it decides the test itself
                env[name] = ("test", values[0])
        return env

    def _mode_test(self, node, env) -> bool:
        """``node`` is a mode predicate call, a comparison of the mode, or a ``not``/``and``/``or``
        of such tests (nothing else)."""
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return self._mode_test(node.operand, env)
        if isinstance(node, ast.BoolOp):
            return all(self._mode_test(v, env) for v in node.values)
        if isinstance(node, ast.Call):
            return (
                isinstance(node.func, ast.Attribute)
                and node.func.attr.startswith("is_")
                and self._is_mode(node.func.value, env)
            )
        if isinstance(node, ast.Compare):
            return len(node.ops) == 1 and self._is_mode(node.left, env)
        return False

    def _is_mode(self, node, env) -> bool:
        if isinstance(node, ast.Name):
            return env.get(node.id) == ("mode",)
        return (
            isinstance(node, ast.Attribute)
            and node.attr == "forward_mode"
            and isinstance(node.value, ast.Name)
            and env.get(node.value.id) == ("fb",)
        )

    def test(self, node, env: dict, mode: str):
        """True/False when the context decides ``node``, else None."""
        if isinstance(node, ast.Constant):
            return bool(node.value)
        if isinstance(node, ast.Name):
            v = env.get(node.id)
            if v and v[0] == "test":
                return self.test(v[1], env, mode)
            return v[1] if v and v[0] == "cap" else None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            v = self.test(node.operand, env, mode)
            return None if v is None else not v
        if isinstance(node, ast.BoolOp):
            vals = [self.test(v, env, mode) for v in node.values]
            if isinstance(node.op, ast.And):
                return False if False in vals else (True if all(v is True for v in vals) else None)
            return True if True in vals else (False if all(v is False for v in vals) else None)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr.startswith("is_")
            and self._is_mode(node.func.value, env)
        ):
            args = tuple(_const(a) for a in node.args)
            kwargs = tuple((k.arg, _const(k.value)) for k in node.keywords)
            if any(a is _NOT_CONST for a in args) or any(k is None or v is _NOT_CONST for k, v in kwargs):
                return None
            return self.pred(mode, node.func.attr, args, kwargs)
        if (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and isinstance(node.ops[0], (ast.Eq, ast.NotEq, ast.Is, ast.IsNot))
            and self._is_mode(node.left, env)
        ):
            right = node.comparators[0]
            if isinstance(right, ast.Attribute) and src(right.value) == "ForwardMode" and right.attr in self.modes:
                same = mode == right.attr
                return same if isinstance(node.ops[0], (ast.Eq, ast.Is)) else not same
        return None

    def _mark(self, node, file: str, env: dict, mode: str, depth: int):
        called = {id(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}
        for n in ast.walk(node):
            if hasattr(n, "lineno"):
                self.lines.add((file, n.lineno))
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and src(n.func.value) == "super()":
                self._super(n, env, mode, depth)
            if (
                isinstance(n, ast.Attribute)
                and id(n) not in called
                and src(n.value) == "self"
                and n.attr in self.methods
                and isinstance(n.ctx, ast.Load)
            ):
                fn, where = self.methods[n.attr]
                if _kind(fn) != "property":
                    # a method taken as a value (a callback) may run later, in another context
                    raise _Unknown(f"self.{n.attr} at {n.lineno}: a method taken as a value")
                self.run(fn, where, {}, mode, depth + 1)  # a property's getter runs here
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and src(n.func.value) == "self":
                if n.func.attr not in (OUT_GRAPH, IN_GRAPH) or n.func.attr in self.methods:
                    self._call(n, env, mode, depth)
            if (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr in (OUT_GRAPH, IN_GRAPH)
                and src(n.func.value) != "self"
            ):
                self.forwards.add(self._forward(n, env, mode))

    def _forward(self, call: ast.Call, env: dict, mode: str) -> tuple:
        """The context an entry-method call made here hands on: ``(method, in_capture, mode)``,
        ``in_capture`` ``"default"`` when not given and None when unknown, the mode None unless
        the call passes this context's forward batch."""
        method = call.func.attr
        cap = None
        if method == OUT_GRAPH:
            arg = (
                call.args[1]
                if len(call.args) > 1
                else next((k.value for k in call.keywords if k.arg == "in_capture"), None)
            )
            if arg is None:
                cap = "default"
            else:
                v = self.test(arg, env, mode) if isinstance(arg, (ast.Constant, ast.Name)) else None
                cap = v
        fb = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "forward_batch"), None)
        same = isinstance(fb, ast.Name) and env.get(fb.id) == ("fb",)
        return method, cap, (mode if same else None)

    def _super(self, call: ast.Call, env: dict, mode: str, depth: int):
        """``super().m(...)`` in the method being walked: the first definition of ``m`` after that
        method's class in the order."""
        place, defs = self.methods.get(_SUPER, ({}, {}))
        here = place.get(id(self.stack[-1])) if self.stack else None
        after = [d for d in defs.get(call.func.attr, []) if here is not None and d[0] > here]
        if not after:
            if call.func.attr in (OUT_GRAPH, IN_GRAPH):
                return  # handed on (recorded by _forward) to a base outside srt's order
            raise _Unknown(f"super().{call.func.attr}(...) at {call.lineno}: no definition after its class")
        self._call(call, env, mode, depth, target=after[0][1:])

    def _call(self, call: ast.Call, env: dict, mode: str, depth: int, target=None):
        name = call.func.attr
        fn, file = target or self.methods.get(name, (None, None))
        kind = _kind(fn) if fn is not None else "plain"
        if kind in ("static", "class") and not any(
            src(a) == "self" for a in [*call.args, *(k.value for k in call.keywords)]
        ):
            return  # no instance in it: nothing of ``self`` is touched
        if kind not in ("plain", "contextmanager"):
            raise _Unknown(f"self.{name}(...) at {call.lineno}: a {_decorators(fn)}")
        if fn is None and name in self.external and not any(src(a) == "self" for a in call.args):
            return  # a callable kept on the instance, never one of its methods, not handed the instance
        if fn is None:
            raise _Unknown(f"self.{name}(...) at {call.lineno}: no method of the class in the file")
        params = [a.arg for a in fn.args.args[1:]]
        defaults = dict(zip(reversed(params), reversed(fn.args.defaults)))
        given: dict = dict(zip(params, call.args))
        given.update({k.arg: k.value for k in call.keywords if k.arg})
        kwonly = {a.arg: d for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults)}
        new: dict = {}
        for p in params + list(kwonly):
            arg = given.get(p)
            if arg is None:
                d = defaults.get(p, kwonly.get(p))
                if isinstance(d, ast.Constant) and isinstance(d.value, bool):
                    new[p] = ("cap", d.value)
                continue
            if isinstance(arg, ast.Constant) and isinstance(arg.value, bool):
                new[p] = ("cap", arg.value)
            elif isinstance(arg, ast.Name) and env.get(arg.id, ("",))[0] == "test":
                v = self.test(arg, env, mode)  # decided here, in the caller's names
                if v is not None:
                    new[p] = ("cap", v)
            elif isinstance(arg, ast.Name) and arg.id in env:
                new[p] = env[arg.id]
            elif self._is_mode(arg, env):
                new[p] = ("mode",)
        self.run(fn, file, new, mode, depth + 1)

    def _block(self, body: list, file: str, env: dict, mode: str, depth: int) -> bool:
        """Walk statements; True when control may fall off the end."""
        for st in body:
            if isinstance(st, ast.If):
                self._mark(st.test, file, env, mode, depth)
                v = self.test(st.test, env, mode)
                if v is True:
                    through = self._block(st.body, file, env, mode, depth)
                elif v is False:
                    through = self._block(st.orelse, file, env, mode, depth)
                else:
                    a = self._block(st.body, file, env, mode, depth)
                    b = self._block(st.orelse, file, env, mode, depth)
                    through = a or b
                if not through:
                    return False
            elif isinstance(st, (ast.Return, ast.Raise)):
                self._mark(st, file, env, mode, depth)
                return False
            elif isinstance(st, ast.Assert):
                # an assert the context decides false raises here: nothing after it runs (SGLang
                # runs with assertions on; ``python -O`` would strip them)
                self._mark(st, file, env, mode, depth)
                if self.test(st.test, env, mode) is False:
                    return False
            elif isinstance(st, (ast.Break, ast.Continue)):
                return False
            elif isinstance(st, (ast.For, ast.AsyncFor, ast.While)):
                self._mark(st.iter if not isinstance(st, ast.While) else st.test, file, env, mode, depth)
                if not isinstance(st, ast.While):
                    self._mark(st.target, file, env, mode, depth)
                self._block(st.body, file, env, mode, depth)
                self._block(st.orelse, file, env, mode, depth)
            elif isinstance(st, (ast.With, ast.AsyncWith)):
                for item in st.items:
                    self._mark(item, file, env, mode, depth)
                self._block(st.body, file, env, mode, depth)
            elif isinstance(st, (ast.Try, getattr(ast, "TryStar", ast.Try))):
                self._block(st.body, file, env, mode, depth)
                for h in st.handlers:
                    self._block(h.body, file, env, mode, depth)
                self._block(st.orelse, file, env, mode, depth)
                self._block(st.finalbody, file, env, mode, depth)
            elif isinstance(st, getattr(ast, "Match", ())):
                self._mark(st.subject, file, env, mode, depth)
                for case in st.cases:
                    self._block(case.body, file, env, mode, depth)
            elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                # a nested function may run later in this context: walked whole
                self._block(st.body, file, env, mode, depth)
            else:
                self._mark(st, file, env, mode, depth)
        return True


def _external(nodes, methods: dict) -> frozenset:
    """Attributes ``self.A`` of the file that are not methods and every store of which is a value
    other than ``self`` or an attribute of it (an imported function, None): calling one never runs
    a method of the instance unless it is handed the instance."""
    stores: dict[str, list] = {}
    for n in (x for node in nodes for x in ast.walk(node)):
        if isinstance(n, ast.Assign):
            for t in n.targets:
                if isinstance(t, ast.Attribute) and src(t.value) == "self":
                    stores.setdefault(t.attr, []).append(n.value)
    return frozenset(
        a
        for a, vals in stores.items()
        if a not in methods and all(not src(v).startswith("self") and not isinstance(v, ast.Lambda) for v in vals)
    )


def walk_contexts(methods: dict, external: frozenset, modes: tuple, pred) -> dict | None:
    """``{(entry, in_capture, mode): (lines, forwards)}`` for one class (:func:`class_methods`): per
    context, the ``(file key, line)`` its walk from the entry method reaches and the contexts its
    entry-method calls on other objects hand on (:meth:`_Walk._forward`); ``in_capture`` is None for
    the in-graph entry. None when an entry method is missing or a walk is unknown."""
    out: dict = {}
    for entry in (OUT_GRAPH, IN_GRAPH):
        fn, file = methods.get(entry, (None, None))
        if fn is None:
            return None
        params = [a.arg for a in fn.args.args[1:]]
        for cap in (True, False) if entry == OUT_GRAPH else (None,):
            if not params or (cap is not None and len(params) < 2):
                return None
            for mode in modes:
                w = _Walk(methods, modes, pred, external)
                env: dict = {params[0]: ("fb",)}
                if cap is not None:
                    env[params[1]] = ("cap", cap)
                try:
                    w.run(fn, file, env, mode, 0)
                except _Unknown:
                    return None
                out[(entry, cap, mode)] = (frozenset(w.lines), frozenset(w.forwards))
    return out


def use_contexts(walks: list, file: str, lines) -> dict:
    """``{line: {(entry, in_capture, mode), ...}}``: the contexts of any of ``walks``
    (:func:`walk_contexts` of a class and of each subclass) reaching ``line`` of ``file``."""
    out: dict = {ln: set() for ln in lines}
    for table in walks:
        for ctx, (reached, _fw) in table.items():
            for ln in lines:
                if (file, ln) in reached:
                    out[ln].add(ctx)
    return out


def forwarded_contexts(walks: list) -> dict:
    """``{(entry, in_capture, mode): {handed-on context, ...}}`` over ``walks`` (a wrapper class and
    its subclasses)."""
    out: dict = {}
    for table in walks:
        for ctx, (_reached, fw) in table.items():
            out.setdefault(ctx, set()).update(fw)
    return out


def entry_default(methods: dict) -> bool | None:
    """The literal default of ``in_capture`` in a class's out-of-graph entry (:func:`class_methods`),
    else None."""
    fn = methods.get(OUT_GRAPH, (None, None))[0]
    if fn is None or len(fn.args.args) < 3:
        return None
    defaults = dict(zip(reversed([a.arg for a in fn.args.args]), reversed(fn.args.defaults)))
    d = defaults.get(fn.args.args[2].arg)
    return d.value if isinstance(d, ast.Constant) and isinstance(d.value, bool) else None


def may_reach(ctx: tuple, reach: dict) -> bool:
    """Whether a call in context ``ctx`` (``(method, in_capture, modes)``, ``in_capture``
    ``"default"`` when not given, ``modes`` a set or None for any) may reach the buffer's slices
    through any class of ``reach``: ``{class: ("uses", uses, default) | ("wrapper", forwarded,
    default) | None}`` (None: unknown, it may). The contexts wrappers hand on are closed over (a
    wrapper handing a context on to itself adds nothing new)."""
    todo = [(ctx[0], ctx[1], None if ctx[2] is None else frozenset(ctx[2]))]
    seen: set = set()
    while todo:
        cur = todo.pop()
        if cur in seen:
            continue
        seen.add(cur)
        method, cap, modes = cur
        for info in reach.values():
            if info is None:
                return True
            kind, table, default = info
            c = default if cap == "default" else cap
            if kind == "uses":
                if not unreachable((method, c, modes), table, {method: c}):
                    return True
                continue
            for (entry, ec, em), handed in table.items():
                if entry != method or (method == OUT_GRAPH and c is not None and ec != c):
                    continue
                if modes is not None and em not in modes:
                    continue
                for m2, c2, mode2 in handed:
                    todo.append((m2, c2, None if mode2 is None else frozenset({mode2})))
    return False


def unreachable(site: tuple, uses: dict, defaults: dict) -> bool:
    """The call site's context (:func:`capproof.engines.sglang.graph_calls.site_context`) reaches none of ``uses`` (:func:`use_contexts`);
    ``defaults`` maps an entry method to its ``in_capture`` default (a bool, or None: unknown)."""
    method, cap, modes = site
    if cap == "default":
        cap = defaults.get(method)
    for ctxs in uses.values():
        for entry, c, m in ctxs:
            if entry != method:
                continue
            if method == OUT_GRAPH and cap is not None and c != cap:
                continue
            if modes is not None and m not in modes:
                continue
            return False
    return True
