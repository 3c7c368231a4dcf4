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
files. Subscripts made while the tracer ran the engine's code (the fake tensors record their
own subscripts, followed through ``.to(device)`` and views) come first as ``how: executed``, in
any file; each engine's ``demand`` module (:mod:`capproof.engines.vllm.demand`,
:mod:`capproof.engines.sglang.demand`) runs the engine's code where a demand is derived.
Pure function of the extracted wheel sources; no torch needed.
"""

from __future__ import annotations

import ast
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


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
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


def accesses_in_file(path: str, rel: str, name: str) -> list[dict]:
    """Access sites of attribute ``name`` in the source file ``path`` (``rel`` its path inside the wheel)."""
    tree = _tree(path)
    if tree is None:
        return []
    parents = _parents(tree)
    out: list[dict] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and node.attr == name):
            continue
        target, via = node, ""
        parent = parents.get(target)
        if isinstance(parent, ast.Attribute) and parent.value is target and parent.attr in VIEWS:
            target, via = parent, "." + parent.attr
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
                        "op": f"passed to {_callee(call)}",
                        "how": "ast",
                    }
                )
    out.sort(key=lambda a: (a["line"], -1 if a["dim"] is None else a["dim"], a["op"]))
    return out


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


def accesses_of(root: str, file: str, attribute: str) -> list[dict]:
    """The access sites of one inventory entry (its allocating ``file`` under the wheel ``root``),
    allocation lines excluded, at most :data:`MAX_PER_ENTRY` (first by line)."""
    found = accesses_in_file(os.path.join(root, file), file, attribute_name(attribute))
    return found[:MAX_PER_ENTRY]


def annotate(entries: Iterable, root: str) -> None:
    """Add to ``accesses`` of every inventory entry (``capproof.inventory.Entry``) the ones read from
    the sources under ``root``; an access the tracer saw executed (``how: executed``, set by
    :func:`capproof.engines.tracing.run.executed_accesses`) is kept and not repeated from the AST."""
    for e in entries:
        executed = [a for a in e.accesses if a.get("how") == "executed"]
        seen = {(a["file"], a["line"], a["dim"]) for a in executed}
        read = [
            a
            for a in accesses_of(root, e.file, e.attribute)
            if a["line"] != e.line and (a["file"], a["line"], a["dim"]) not in seen
        ]
        e.accesses = sorted(executed + read, key=lambda a: (a["line"], -1 if a["dim"] is None else a["dim"], a["op"]))
