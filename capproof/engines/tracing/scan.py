"""Static scan of an engine's sources for pre-allocated buffers (the ``read`` side of an inventory).

A buffer is **pre-allocated** when an allocation call's result is kept across steps: assigned to
an attribute of ``self`` (``self.x = torch.zeros(...)``, ``self.x: T = ...``, ``self.x[k] = ...``,
in any method: constructors, initialisers, lazily on first use), to a ``global`` of the function
(module caches) or to a module-level name. A value built inside the right-hand side
(``self.x = Wrapper(...)``, ``self.x = torch.zeros(...).to(d)``, ``self.xs = [torch.zeros(...) for
_ in ...]``) counts; a local temporary does not. Allocation calls: ``torch``/``np`` ``zeros``,
``empty``, ``full``, ``ones``, ``arange`` and their ``*_like``; ``x.new_zeros/new_empty/new_full/new_ones``;
and the engine's own buffer wrappers (``wrappers``, e.g. vLLM's ``CpuGpuBuffer``), whose own
definitions (``wrapper_definitions``) are not entries (the wrapper call is).

Engine-neutral: the engine modules (:mod:`capproof.engines.vllm.scan`, :mod:`capproof.engines.sglang.scan`)
give the scope and the wrappers.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field

__all__ = ["Allocation", "scan", "scan_file", "TORCH_ALLOC", "NEW_ALLOC", "MODULES"]

TORCH_ALLOC = {"zeros", "empty", "full", "ones", "arange", "zeros_like", "empty_like", "full_like", "ones_like"}
NEW_ALLOC = {"new_zeros", "new_empty", "new_full", "new_ones"}
MODULES = {"torch", "np", "numpy"}


@dataclass
class Allocation:
    """One allocation call kept across steps, as read from the source."""

    file: str  # path inside the wheel, e.g. vllm/v1/worker/block_table.py
    line: int
    owner: str  # enclosing class, or the module-level function
    attribute: str  # the self attribute (or the local name in an initialiser)
    function: str  # the enclosing function
    call: str  # the callee as written: torch.zeros, self._make_buffer, CpuGpuBuffer, ...
    args: list[str] = field(default_factory=list)  # the shape arguments' source text
    dtype: str = ""  # dtype keyword's text (torch.int32 -> int32), '' when not given
    source: str = ""  # the full call's source text

    @property
    def id(self) -> str:
        return f"{self.file}::{self.owner}.{self.attribute}"


def _callee(call: ast.Call, wrappers=frozenset()) -> str | None:
    """The allocation kind of ``call`` (its written name) or None; ``wrappers``: the engine's
    buffer wrappers' names."""
    f = call.func
    if isinstance(f, ast.Attribute):
        if f.attr in NEW_ALLOC:
            return ast.unparse(f)
        if f.attr in TORCH_ALLOC and isinstance(f.value, ast.Name) and f.value.id in MODULES:
            return ast.unparse(f)
        if f.attr in wrappers:
            return ast.unparse(f)
    if isinstance(f, ast.Name) and f.id in wrappers:
        return f.id
    return None


def _dtype_text(call: ast.Call, wrappers=frozenset()) -> str:
    for kw in call.keywords:
        if kw.arg == "dtype":
            text = ast.unparse(kw.value)
            return text.rsplit(".", 1)[-1] if text.startswith(("torch.", "np.", "numpy.")) else text
    name = _callee(call, wrappers) or ""
    if name.endswith("arange") and not call.keywords:
        return "int64"
    return ""


def _shape_args(call: ast.Call, wrappers=frozenset()) -> list[str]:
    name = _callee(call, wrappers) or ""
    args = call.args
    if name.endswith(("full", "new_full")):
        args = args[:1]
    if name.endswith("_like"):
        return [f"shape of {ast.unparse(args[0])}"] if args else []
    if len(args) == 1 and isinstance(args[0], (ast.Tuple, ast.List)):
        return [ast.unparse(a) for a in args[0].elts]
    if name.endswith("arange") and len(args) >= 2:
        step = next((k.value for k in call.keywords if k.arg == "step"), None)
        return [_arange_length(*args[:3]) if step is None or len(args) > 2 else _arange_length(*args[:2], step)]
    out = [ast.unparse(a) for a in args]
    if not out:
        for kw in call.keywords:
            if kw.arg in ("size", "shape", "end"):
                out = [ast.unparse(kw.value)]
    return out


def _arange_length(start: ast.expr, end: ast.expr, step: ast.expr | None = None) -> str:
    """The one dimension of ``arange(start, end[, step])`` (``torch.arange``/``np.arange``): ``end``
    when ``start`` is 0, ``X`` for ``arange(k, X + k)`` or ``arange(k, k + X)``, else ``end - (start)``; with a step,
    ``cdiv(length, step)`` (the shape language's ceiling division; a positive step assumed, as
    every allocation of the scanned engines uses). Elements, not the arguments as dimensions."""
    a, b = ast.unparse(start), ast.unparse(end)
    if a == "0":
        length = b
    elif isinstance(end, ast.BinOp) and isinstance(end.op, ast.Add) and ast.unparse(end.right) == a:
        length = ast.unparse(end.left)
    elif isinstance(end, ast.BinOp) and isinstance(end.op, ast.Add) and ast.unparse(end.left) == a:
        length = ast.unparse(end.right)
    else:
        length = f"{b} - {a}" if isinstance(start, ast.Name) else f"{b} - ({a})"
    if step is None or ast.unparse(step) == "1":
        return length
    return f"cdiv({length}, {ast.unparse(step)})"


def _target_name(t: ast.expr) -> tuple[str, bool] | None:
    """``(name, on_self)`` for an assignment target: ``self.x`` / ``self.x[k]`` / a local name."""
    base = t
    suffix = ""
    while isinstance(base, ast.Subscript):
        key = base.slice
        if isinstance(key, ast.Slice) or (
            isinstance(key, ast.Tuple) and any(isinstance(k, ast.Slice) for k in key.elts)
        ):
            return None  # `buf[:n] = ...` copies into an existing buffer
        suffix = "[]" + suffix
        base = base.value
    if isinstance(base, ast.Attribute):
        chain = []
        node: ast.expr = base
        while isinstance(node, ast.Attribute):
            chain.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id in ("self", "cls"):
            return ".".join(reversed(chain)) + suffix, True
        return None
    if isinstance(base, ast.Name):
        return base.id + suffix, False
    return None


class _Visitor(ast.NodeVisitor):
    def __init__(
        self,
        file: str,
        source: str,
        locals_kept: bool = False,
        wrappers=frozenset(),
        wrapper_definitions=frozenset(),
        returned_fields: bool = False,
    ):
        self.file = file
        self.returned_fields = returned_fields
        self.wrappers = wrappers
        self.wrapper_definitions = wrapper_definitions
        #: a file named in the scope by itself (moe_align_block_size.py): its functions' allocations
        #: are the per-call buffers the kernels are sized by, listed too
        self.locals_kept = locals_kept
        self.source = source
        self.classes: list[str] = []
        self.functions: list[str] = []
        self.found: list[Allocation] = []
        self.seen_calls: set[int] = set()
        self.globals: list[set[str]] = []
        #: per function: local name -> the self attribute it is stored into (``self.xs.append(x)``)
        self.escapes: list[dict[str, str]] = []

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if node.name in self.wrapper_definitions:
            return
        self.classes.append(node.name)
        self.generic_visit(node)
        self.classes.pop()

    def visit_FunctionDef(self, node) -> None:
        if node.name in self.wrapper_definitions:
            return
        self.functions.append(node.name)
        self.globals.append({n for g in ast.walk(node) if isinstance(g, ast.Global) for n in g.names})
        self.escapes.append(_escapes(node, self.returned_fields))
        self.generic_visit(node)
        self.escapes.pop()
        self.globals.pop()
        self.functions.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def _kept(self, name: str, on_self: bool) -> bool:
        """Kept across steps: a ``self`` attribute, a ``global`` of the function, or a module-level name."""
        if on_self or self.locals_kept:
            return True
        bare = name.split("[", 1)[0]
        if self.escapes and bare in self.escapes[-1]:
            return True
        return not self.functions or (bool(self.globals) and bare in self.globals[-1])

    def _assign(self, targets: list[ast.expr], value: ast.expr | None) -> None:
        if value is None:
            return
        names: list[tuple[str, bool]] = []
        for t in targets:
            for e in t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]:
                n = _target_name(e)
                if n:
                    names.append(n)
        kept = [(n, s) for n, s in names if self._kept(n, s)]
        if not kept:
            return
        calls = [c for c in ast.walk(value) if isinstance(c, ast.Call) and _callee(c, self.wrappers)]
        if not calls:
            return
        # `self.a, self.b = torch.zeros(..), torch.zeros(..)`: pair targets and calls
        pair = len(names) > 1 and len(names) == len(calls)
        owner = self.classes[-1] if self.classes else (self.functions[0] if self.functions else "<module>")
        function = self.functions[-1] if self.functions else "<module>"
        for i, call in enumerate(calls):
            if id(call) in self.seen_calls:
                continue
            name, on_self = names[i] if pair else kept[0]
            if not self._kept(name, on_self):
                continue
            if not on_self and self.escapes and name.split("[", 1)[0] in self.escapes[-1]:
                name = self.escapes[-1][name.split("[", 1)[0]]
            if self.returned_fields and not pair:
                name = name + _field_of(value, call)
            self.seen_calls.add(id(call))
            self.found.append(
                Allocation(
                    file=self.file,
                    line=call.lineno,
                    owner=owner,
                    attribute=name,
                    function=function,
                    call=_callee(call, self.wrappers) or "",
                    args=_shape_args(call, self.wrappers),
                    dtype=_dtype_text(call, self.wrappers),
                    source=ast.get_source_segment(self.source, call) or ast.unparse(call),
                )
            )

    def visit_Assign(self, node: ast.Assign) -> None:
        self._assign(node.targets, node.value)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._assign([node.target], node.value)
        self.generic_visit(node)


def _field_of(value: ast.expr, call: ast.Call) -> str:
    """``.field`` when ``call`` is (inside) the keyword argument ``field=`` of the object built on
    the right-hand side (``self.buffers = Buffers(input_ids=torch.zeros(...), ...)`` ->
    ``.input_ids``), else ''."""
    if isinstance(value, ast.Call) and value is not call:
        for kw in value.keywords:
            if kw.arg and any(node is call for node in ast.walk(kw.value)):
                return "." + kw.arg
    return ""


def _list_head(value: ast.expr) -> str | None:
    """The local name ``x`` of ``[x, ...]`` or ``[x] + ...``, else None."""
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
        value = value.left
    if isinstance(value, ast.List) and value.elts and isinstance(value.elts[0], ast.Name):
        return value.elts[0].id
    return None


def _escapes(fn: ast.AST, returned_fields: bool = False) -> dict[str, str]:
    """Local names a function stores into ``self``: ``self.xs.append(x)`` / ``self.xs[k] = x`` /
    ``self.x = x`` (-> ``xs[]`` / ``xs[]`` / ``x``); with ``returned_fields``, also the locals a
    classmethod factory passes by keyword to the object it returns (``return cls(input_ids=input_ids, ...)``
    -> ``input_ids``: a field of the buffers object the caller keeps) and a local stored as the
    head of a list (``self.xs = [x] + [x.clone() ...]`` -> ``xs[]``)."""
    out: dict[str, str] = {}
    for node in ast.walk(fn):
        if (
            returned_fields
            and isinstance(node, ast.Return)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id == "cls"
        ):
            for kw in node.value.keywords:
                if kw.arg and isinstance(kw.value, ast.Name):
                    out.setdefault(kw.value.id, kw.arg)
        elif returned_fields and isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            # ``self.buffers = Buffers(input_ids=input_ids, ...)`` -> ``buffers.input_ids``
            for tgt in node.targets:
                t = _target_name(tgt)
                if t and t[1]:
                    for kw in node.value.keywords:
                        if kw.arg and isinstance(kw.value, ast.Name):
                            out.setdefault(kw.value.id, f"{t[0]}.{kw.arg}")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("append", "extend")
            and len(node.args) == 1
            and isinstance(node.args[0], ast.Name)
        ):
            t = _target_name(node.func.value)
            if t and t[1]:
                out.setdefault(node.args[0].id, t[0] + "[]")
        elif returned_fields and isinstance(node, ast.Assign) and _list_head(node.value) is not None:
            # ``self.xs = [x] + [x.clone() for ...]`` -> ``xs[]`` (one buffer per wrapper, the
            # first the allocation itself)
            for tgt in node.targets:
                t = _target_name(tgt)
                if t and t[1]:
                    out.setdefault(_list_head(node.value), t[0] + "[]")
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Name):
            for tgt in node.targets:
                t = _target_name(tgt)
                if t and t[1]:
                    out.setdefault(node.value.id, t[0])
    return out


def scan_file(
    root: str,
    rel: str,
    locals_kept: bool = False,
    wrappers=frozenset(),
    wrapper_definitions=frozenset(),
    returned_fields: bool = False,
) -> list[Allocation]:
    """The pre-allocations of one file (``rel`` is relative to ``root``, the wheel's source root);
    ``locals_kept``: also the allocations bound to local names (a file named in the scope itself);
    ``wrappers``/``wrapper_definitions``: the engine's buffer wrappers (module docstring);
    ``returned_fields``: also the locals a factory returns as keyword fields (:func:`_escapes`)."""
    path = os.path.join(root, rel)
    with open(path, encoding="utf-8") as fh:
        source = fh.read()
    v = _Visitor(rel, source, locals_kept, wrappers, wrapper_definitions, returned_fields)
    v.visit(ast.parse(source, filename=rel))
    # one id per allocation: repeated attributes get '#2', '#3' in source order
    seen: dict[str, int] = {}
    for a in sorted(v.found, key=lambda a: a.line):
        k = seen.get(a.id, 0) + 1
        seen[a.id] = k
        if k > 1:
            a.attribute = f"{a.attribute}#{k}"
    return sorted(v.found, key=lambda a: a.line)


def scan(
    root: str, scope, wrappers=frozenset(), wrapper_definitions=frozenset(), returned_fields: bool = False
) -> list[Allocation]:
    """Every pre-allocation in ``scope`` (directories and files relative to ``root``, the extracted
    wheel) under ``root``, sorted by file and line; a file named in ``scope`` itself also lists the
    allocations bound to local names."""
    files: list[str] = []
    single: set[str] = set()
    for item in scope:
        full = os.path.join(root, item)
        if os.path.isfile(full):
            files.append(item)
            single.add(item)
            continue
        for dirpath, _, names in os.walk(full):
            for n in names:
                if n.endswith(".py"):
                    files.append(os.path.relpath(os.path.join(dirpath, n), root))
    out: list[Allocation] = []
    for rel in sorted(set(f.replace(os.sep, "/") for f in files)):
        rel = rel.replace(os.sep, "/")
        out.extend(
            scan_file(
                root,
                rel,
                locals_kept=rel in single,
                wrappers=wrappers,
                wrapper_definitions=wrapper_definitions,
                returned_fields=returned_fields,
            )
        )
    return out
