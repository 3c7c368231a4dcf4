"""Access sites of the inventory's buffers in the engine's own source: where the code reads or writes each one.

Engine-neutral (vLLM and SGLang inventories both use it): a reading of the extracted wheel's
Python sources, no engine import.

For an inventory entry (``file::Owner.attribute``) this finds, in the file that allocates it, every
use of the attribute (``self.attribute`` or ``obj.attribute``; the ``.np``/``.cpu``/``.gpu``
views of a vLLM ``CpuGpuBuffer`` followed through), and records per dimension what it touches:

- a subscript ``buf[i, a:b]``: one access per dimension of the key, ``op`` ``index`` (extent: the
  index expression; the access needs ``index < capacity``) or ``slice`` (extent: the stop, the access
  needs ``stop <= capacity``; ``:`` is the whole dimension and recorded as ``whole``), ``write``
  when it is an assignment target;
- a method call on it (``copy_``, ``index_select``, ``gather``, ``scatter_``, ``fill_``,
  ``view``/``reshape``, ``CpuGpuBuffer.copy_to_gpu(n)`` (extent ``n`` on dimension 0) ...): ``op``
  the method's name;
- the buffer handed to a call as an argument (a Triton/CUDA kernel, a FlashInfer wrapper, a
  helper): ``op`` ``passed to <callee>``, extent ``whole`` (what the callee touches is the callee's
  own indexing, not read here).

Each access is ``{"file", "line", "dim", "extent", "op", "how": "ast"}`` (``dim`` ``None`` when
the access is of the whole buffer). This is a reading of the source (``how: ast``): it follows
the attribute by name within its allocating file, not aliases held in locals, lists or other
files; with ``receiver`` (SGLang's inventory) only the uses whose receiver is the buffer: ``self``
in the owning class's methods, locals bound from it and views (:func:`receiver_nodes`). Subscripts made while the tracer ran the engine's code (the fake tensors record their
own subscripts, followed through ``.to(device)`` and views) come first as ``how: executed``, in
any file; each engine's ``demand`` module (:mod:`capproof.engines.vllm.demand`,
:mod:`capproof.engines.sglang.demand`) runs the engine's code where a demand is derived.
Pure function of the extracted wheel sources; no torch needed.
"""

from __future__ import annotations

import ast
import collections
import os
import re
from functools import lru_cache
from typing import Iterable

__all__ = ["attribute_name", "accesses_in_file", "accesses_of", "annotate"]

#: ``CpuGpuBuffer`` views whose subscripts index the buffer itself.
VIEWS = {"np", "cpu", "gpu"}
#: Calls of these methods on a buffer are recorded (others, e.g. ``.stride()`` or ``.dtype``, touch no element).
METHODS = {
    "copy_",
    "index_select",
    "gather",
    "scatter_",
    "scatter",
    "scatter_add_",
    "index_copy_",
    "index_fill_",
    "index_put_",
    "masked_fill_",
    "fill_",
    "zero_",
    "view",
    "reshape",
    "flatten",
    "unsqueeze",
    "narrow",
    "copy_to_gpu",
    "copy_to_cpu",
    "to",
    "tolist",
    "numpy",
    "cumsum",
    "put_",
    "repeat_interleave",
}
#: Cap on the accesses kept per entry (the first ones by line), so the inventory stays readable.
MAX_PER_ENTRY = 40


def attribute_name(attribute: str) -> str:
    """The attribute as the code spells it: ``_dcp_verify_buffers#2`` -> ``_dcp_verify_buffers``,
    ``tables[]`` -> ``tables``, ``input_batch.prev_sampled_token_ids`` -> ``prev_sampled_token_ids``."""
    name = re.sub(r"#\d+$", "", attribute).replace("[]", "")
    return name.rsplit(".", 1)[-1]


def compact_source(node: ast.AST) -> str:
    """``node``'s source as ``ast.unparse`` writes it, without spaces: the form the engine
    readers compare expressions in (``self.max_num_reqs+1``)."""
    return ast.unparse(node).replace(" ", "")


def parent_map(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    """``{node: its parent}`` for every node of ``tree`` below its root."""
    out: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            out[child] = node
    return out


def _callee(call: ast.Call) -> str:
    try:
        return ast.unparse(call.func)
    except Exception:  # noqa: BLE001 - a construct ast.unparse cannot print
        return "?"


def _key_accesses(key: ast.AST) -> list[tuple[int | None, str, str]]:
    """``[(dim, extent, op)]`` of a subscript key."""
    elts = key.elts if isinstance(key, ast.Tuple) else [key]
    out: list[tuple[int | None, str, str]] = []
    dim = 0
    for e in elts:
        if isinstance(e, ast.Constant) and e.value is Ellipsis:
            return out + [(None, "...", "slice")]
        if isinstance(e, ast.Constant) and e.value is None:  # buf[None]: a new axis, no dimension consumed
            continue
        if isinstance(e, ast.Slice):
            stop = ast.unparse(e.upper) if e.upper is not None else "whole"
            start = ast.unparse(e.lower) if e.lower is not None else ""
            out.append((dim, stop if not start or stop == "whole" else f"{start}:{stop}", "slice"))
        else:
            out.append((dim, ast.unparse(e), "index"))
        dim += 1
    return out


def accesses_in_file(
    path: str, rel: str, name: str, owner: str | None = None, holder: str = "", item: bool = False
) -> list[dict]:
    """Access sites of attribute ``name`` in the source file ``path`` (``rel`` its path inside the wheel).

    Without ``owner``, every ``<anything>.name`` in the file. With ``owner`` (the allocating class or
    function, :func:`receiver_nodes`), only the uses whose receiver is that buffer. ``item``: the
    entry is an element of a list or dict kept under ``name`` (``xs[]``): ``xs[k]`` is the buffer."""
    tree = _tree(path)
    if tree is None:
        return []
    parents = parent_map(tree)
    if owner is None:
        nodes = [(n, "") for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == name]
    else:
        nodes = receiver_nodes(tree, name, owner, holder)
    out: list[dict] = []
    for node, alias in nodes:
        target, via = node, alias
        parent = parents.get(target)
        if item and isinstance(parent, ast.Subscript) and parent.value is target:
            alias += f"[{_src(parent.slice)}]"
            target, via = parent, alias
            parent = parents.get(target)
        if isinstance(parent, ast.Attribute) and parent.value is target and parent.attr in VIEWS:
            target, via = parent, via + "." + parent.attr
            parent = parents.get(target)
        line = getattr(node, "lineno", 0)
        if isinstance(parent, ast.Subscript) and parent.value is target:
            write = isinstance(parent.ctx, (ast.Store, ast.Del)) or _aug_target(parent, parents)
            for dim, extent, op in _key_accesses(parent.slice):
                out.append(
                    {
                        "file": rel,
                        "line": line,
                        "dim": dim,
                        "extent": extent,
                        "op": f"{op}{via}" + (" write" if write else " read"),
                        "how": "ast",
                    }
                )
        elif isinstance(parent, ast.Attribute) and parent.value is target and parent.attr in METHODS:
            call = parents.get(parent)
            if isinstance(call, ast.Call) and call.func is parent:
                if parent.attr == "copy_to_gpu" and call.args:
                    out.append(
                        {
                            "file": rel,
                            "line": line,
                            "dim": 0,
                            "extent": ast.unparse(call.args[0]),
                            "op": "copy_to_gpu (slice)",
                            "how": "ast",
                        }
                    )
                else:
                    out.append(
                        {
                            "file": rel,
                            "line": line,
                            "dim": None,
                            "extent": "whole",
                            "op": f"{parent.attr}{via}",
                            "how": "ast",
                        }
                    )
        elif isinstance(parent, (ast.Call, ast.keyword)):
            call = parent if isinstance(parent, ast.Call) else parents.get(parent)
            if isinstance(call, ast.Call) and call.func is not target:
                out.append(
                    {
                        "file": rel,
                        "line": line,
                        "dim": None,
                        "extent": "whole",
                        "op": f"passed to {_callee(call)}{alias}",
                        "how": "ast",
                    }
                )
    out.sort(key=lambda a: (a["line"], -1 if a["dim"] is None else a["dim"], a["op"]))
    return out


def _owner_scopes(tree: ast.AST, owner: str) -> tuple[list[ast.AST], bool]:
    """``(scopes, is_class)``: the methods of class ``owner``, of its ancestors in the file and of
    the file's classes deriving from it (by name), or the function ``owner`` itself."""
    classes = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
    if owner in classes:
        # the owner's ancestors in the file (their methods run on the owner's instances) and the
        # classes deriving from it
        family, todo = {owner}, [owner]
        while todo:
            for b in classes[todo.pop()].bases:
                if _base_name(b) in classes and _base_name(b) not in family:
                    family.add(_base_name(b))
                    todo.append(_base_name(b))
        descendants, grew = {owner}, True
        while grew:
            grew = False
            for c in classes.values():
                if c.name not in descendants and any(_base_name(b) in descendants for b in c.bases):
                    descendants.add(c.name)
                    grew = True
        family |= descendants
        scopes = [
            item
            for c in classes.values()
            if c.name in family
            for item in c.body
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
        ]
        return scopes, True
    funcs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == owner]
    return funcs, False


def _base_name(base: ast.AST) -> str:
    return base.attr if isinstance(base, ast.Attribute) else base.id if isinstance(base, ast.Name) else ""


def receiver_nodes(tree: ast.AST, name: str, owner: str, holder: str = "") -> list[tuple[ast.AST, str]]:
    """The expressions in ``tree`` that are the buffer ``owner.<holder.>name``: ``[(node, via)]``.

    - a class ``owner`` (with its ancestors and descendants in the file): ``self.<holder.>name`` in their
      methods (nested functions included); a local bound to it (``buf = self.name``) and, for a
      ``holder``, a local bound to the holder (``buffers = self.buffers``) followed in that method;
      a local bound to a view of it (``x = self.name[:n]``, ``.view(...)``) followed with ``via``
      `` (view x)``;
    - a function ``owner`` (a module-level or function-local allocation): the local ``name``;
    - another object's attribute of the same name is not this buffer and is not returned.
    """
    scopes, is_class = _owner_scopes(tree, owner)
    receiver = "self" + (f".{holder}" if holder else "")
    out: list[tuple[ast.AST, str]] = []
    for fn in scopes:
        if not is_class:
            out += [(n, "") for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == name]
            continue
        holders, aliases, views = {receiver}, set(), {}
        # a local counts only when every binding of it in the method binds it to the buffer
        stores = collections.Counter(
            n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))
        )
        stores.update(a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg))
        bound: collections.Counter = collections.Counter()
        for a in ast.walk(fn):
            if not (isinstance(a, ast.Assign) and len(a.targets) == 1 and isinstance(a.targets[0], ast.Name)):
                continue
            text, local = _src(a.value), a.targets[0].id
            if holder and text == receiver:
                holders.add(local)
            elif text == f"{receiver}.{name}":
                aliases.add(local)
            elif _is_view_of(a.value, f"{receiver}.{name}"):
                views[local] = f" (view {local})"
            else:
                continue
            bound[local] += 1
        rebound = {x for x in bound if stores[x] != bound[x]}
        holders -= rebound
        aliases -= rebound
        views = {k: v for k, v in views.items() if k not in rebound}
        for n in ast.walk(fn):
            if isinstance(n, ast.Attribute) and n.attr == name and _src(n.value) in holders:
                out.append((n, ""))
            elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in aliases:
                out.append((n, ""))
            elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in views:
                out.append((n, views[n.id]))
    seen: set[int] = set()
    return [(n, v) for n, v in out if not (id(n) in seen or seen.add(id(n)))]


def _is_view_of(value: ast.AST, text: str) -> bool:
    """``value`` is ``<text>[...]`` or ``<text>.view/reshape/flatten/narrow(...)``."""
    if isinstance(value, ast.Subscript):
        return _src(value.value) == text
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        return (
            value.func.attr in ("view", "reshape", "flatten", "narrow", "unsqueeze") and _src(value.func.value) == text
        )
    return False


def _src(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001
        return "?"


def _aug_target(sub: ast.Subscript, parents) -> bool:
    parent = parents.get(sub)
    return isinstance(parent, ast.AugAssign) and parent.target is sub


@lru_cache(maxsize=512)
def _tree(path: str) -> ast.AST | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return ast.parse(fh.read(), filename=path)
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None


def accesses_of(root: str, file: str, attribute: str, owner: str | None = None) -> list[dict]:
    """The access sites of one inventory entry (its allocating ``file`` under the wheel ``root``),
    allocation lines excluded, at most :data:`MAX_PER_ENTRY` (first by line). With ``owner`` (the
    entry's owning class or function) only the uses whose receiver is the buffer
    (:func:`receiver_nodes`); without, every attribute of that name in the file."""
    holder, item = "", False
    if owner is not None:
        bare = re.sub(r"#\d+$", "", attribute)
        item = bare.endswith("[]")
        path = bare.replace("[]", "").split(".")
        holder = ".".join(path[:-1])
    found = accesses_in_file(os.path.join(root, file), file, attribute_name(attribute), owner, holder, item)
    return found[:MAX_PER_ENTRY]


def annotate(entries: Iterable, root: str, receiver: bool = False) -> None:
    """Add to ``accesses`` of every inventory entry (``capproof.inventory.Entry``) the ones read from
    the sources under ``root``; an access the tracer saw executed (``how: executed``, set by
    :func:`capproof.engines.tracing.run.executed_accesses`) is kept and not repeated from the AST.
    ``receiver``: follow the buffer's receiver (the owning class's ``self``, locals bound from it,
    views; :func:`receiver_nodes`) instead of matching the attribute name on any object."""
    for e in entries:
        executed = [a for a in e.accesses if a.get("how") == "executed"]
        seen = {(a["file"], a["line"], a["dim"]) for a in executed}
        read = [
            a
            for a in accesses_of(root, e.file, e.attribute, e.owner if receiver else None)
            if a["line"] != e.line and (a["file"], a["line"], a["dim"]) not in seen
        ]
        e.accesses = sorted(executed + read, key=lambda a: (a["line"], -1 if a["dim"] is None else a["dim"], a["op"]))
