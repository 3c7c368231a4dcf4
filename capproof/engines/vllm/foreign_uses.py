"""Uses of a derived buffer outside its allocating file: every one must be checked, or no "verified".

The demand derivations of the V1 runner (request rows, token rows, the block table) read a
buffer's accesses in the file that allocates it. The same buffer is also reached from other files
through the object that holds it: ``self.input_batch.<attr>`` in a mixin of the runner,
``runner.<attr>`` in a proposer or a warm-up, ``self.<attr>`` in a subclass of the runner
defined elsewhere. This module finds those uses in every ``.py`` file of ``vllm/`` (AST, ``how:
ast``) and judges each; :func:`check_foreign_uses` marks the derived demand of any entry with a
use it cannot judge (``unchecked_uses``: the sites), so the entry is no longer counted as verified.

A receiver is the buffer's holder when it is, in a file other than the allocating one:

- ``self`` in a method of a class that derives (by the base's name, the file importing that name
  from the allocating module) from the owner, or of a base class of the owner defined elsewhere (a
  mixin: its ``self`` is the owner at run time);
- an expression whose last name is a **holder name** of the owner class: a name or attribute
  anywhere in ``vllm/`` annotated with the class (``input_batch: InputBatch``,
  ``runner: "GPUModelRunner"``) or assigned its constructor (``self.input_batch = InputBatch(...)``),
  plus ``runner``/``model_runner`` for the runner. A file that imports a class of the owner's name
  from another module (the V2 runner's own ``InputBatch``, ``GPUModelRunner``) and not from the
  allocating module is skipped: its holders are another class's.

A use is checked when it is a metadata read (``.shape``, ``.dtype``, ``.device``, ``.size()``,
...), a whole-buffer ``fill_``/``zero_``, or (request rows only) a slice ``[:n]`` of dimension 0
whose stop is bound, in that file, to the step's request count by the same reading the allocating
file gets (:class:`capproof.engines.vllm.demand.RowBinding`), or an index by a value of the V1
``req_id_to_index`` (:func:`capproof.engines.vllm.demand.map_index`). Anything else (an index, a slice
bound otherwise, the buffer handed to a call, stored in a local or returned) is **unchecked** and
named with its file and line. Pure reading of the extracted wheel sources; no vLLM import.
"""

from __future__ import annotations

import ast
import os
import re
from functools import lru_cache

from ..tracing.accesses import parent_map

__all__ = ["foreign_uses", "check_foreign_uses", "holder_names", "judge", "covers"]

#: Attribute reads that touch no element of the buffer.
METADATA = {
    "shape",
    "dtype",
    "device",
    "size",
    "stride",
    "numel",
    "dim",
    "ndim",
    "is_cuda",
    "nbytes",
    "element_size",
    "is_contiguous",
}
#: Whole-buffer writes: at most the allocation.
WHOLE = {"fill_", "zero_"}
VIEWS = {"np", "cpu", "gpu"}
#: Untyped holder names of the runner (proposers, warm-ups and workers keep it under these).
RUNNER_NAMES = {"runner", "model_runner", "_runner", "gpu_model_runner"}


def _src(node) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001 - a construct ast.unparse cannot print
        return "?"


def _module(file: str) -> str:
    return file[:-3].replace("/", ".") if file.endswith(".py") else file


@lru_cache(maxsize=4)
def _files(root: str) -> tuple[tuple[str, str], ...]:
    """``(rel, text)`` of every ``.py`` file under ``root/vllm`` (sorted)."""
    out = []
    for dirpath, _dirs, files in os.walk(os.path.join(root, "vllm")):
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    out.append((os.path.relpath(path, root).replace(os.sep, "/"), fh.read()))
    return tuple(sorted(out))


@lru_cache(maxsize=2048)
def _tree(root: str, rel: str):
    try:
        with open(os.path.join(root, rel), encoding="utf-8") as fh:
            return ast.parse(fh.read())
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None


@lru_cache(maxsize=4096)
def _imports(tree) -> dict[str, str]:
    """Imported name -> source module (``from m import X`` -> ``{"X": "m"}``)."""
    out = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.module:
            for a in n.names:
                out[a.asname or a.name] = n.module
    return out


def _names_class(annotation, cls: str) -> bool:
    """The annotation names ``cls`` (``cls``, ``"cls"``, ``cls | None``, ``Optional[cls]``, ``m.cls``)."""
    if annotation is None:
        return False
    text = _src(annotation)
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        text = annotation.value
    return any(part.strip().split(".")[-1] == cls for part in text.replace("[", "|").replace("]", "|").split("|"))


@lru_cache(maxsize=64)
def holder_names(root: str, owner_file: str, cls: str) -> frozenset[str]:
    """Names that hold an instance of class ``cls`` (of ``owner_file``) somewhere in ``vllm/``:
    annotated with it or assigned its constructor (AST)."""
    names = set(RUNNER_NAMES) if cls.endswith("ModelRunner") else set()
    for rel, text in _files(root):
        if cls not in text:
            continue
        tree = _tree(root, rel)
        if tree is None or not _same_class(tree, rel, owner_file, cls):
            continue
        for n in ast.walk(tree):
            if isinstance(n, ast.arg) and _names_class(n.annotation, cls):
                names.add(n.arg)
            elif isinstance(n, ast.AnnAssign) and _names_class(n.annotation, cls):
                names.add(_src(n.target).rsplit(".", 1)[-1])
            elif isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and _src(n.value.func).endswith(cls):
                for t in n.targets:
                    names.add(_src(t).rsplit(".", 1)[-1])
    return frozenset(n for n in names if n.isidentifier() and n != "self")


def _same_class(tree, rel: str, owner_file: str, cls: str) -> bool:
    """Whether ``cls`` in this file is the owner's class: the allocating file itself, or a file
    that does not import a class of that name from another module."""
    if rel == owner_file:
        return True
    src = _imports(tree).get(cls)
    return src is None or src == _module(owner_file)


@lru_cache(maxsize=64)
def _family_classes(root: str, owner_file: str, cls: str) -> dict[str, set[str]]:
    """file -> names of its classes whose ``self`` is an instance of ``cls``: subclasses (by base
    name, transitively, the file's ``cls`` being the owner's) and the owner's bases defined in other
    files (resolved through the allocating file's imports)."""
    out: dict[str, set[str]] = {}
    todo, seen = [cls], {cls}
    while todo:
        base = todo.pop()
        for rel, text in _files(root):
            if base not in text or rel == owner_file:
                continue
            tree = _tree(root, rel)
            if tree is None or not _same_class(tree, rel, owner_file, cls):
                continue
            for c in ast.walk(tree):
                if isinstance(c, ast.ClassDef) and any(_src(b).split(".")[-1] == base for b in c.bases):
                    out.setdefault(rel, set()).add(c.name)
                    if c.name not in seen:
                        seen.add(c.name)
                        todo.append(c.name)
    tree = _tree(root, owner_file)
    imports = _imports(tree) if tree is not None else {}
    for c in ast.walk(tree) if tree is not None else []:
        if isinstance(c, ast.ClassDef) and c.name == cls:
            for b in c.bases:
                name = _src(b).split(".")[-1]
                mod = imports.get(name)
                if mod:
                    out.setdefault(mod.replace(".", "/") + ".py", set()).add(name)
    return out


def foreign_uses(root: str, entry) -> list[dict]:
    """Every use of ``entry``'s buffer outside its allocating file: ``[{"file", "line", "op",
    "extent", "node", "fn"}]`` (``op`` as the access reader spells it; ``node`` the subscript key or
    None; ``fn`` the enclosing function node)."""
    cls = entry.owner
    name = entry.attribute.rsplit(".", 1)[-1]
    holders = holder_names(root, entry.file, cls)
    family = _family_classes(root, entry.file, cls)
    out = []
    # a file can hold a use only if its text names ``.<name>`` and a holder (or ``self.<name>`` in
    # a family class's file); the text test is a superset of the AST's, so nothing is skipped wrongly
    words = re.compile(rf"\b({'|'.join(sorted(holders))})\b") if holders else None
    for rel, text in _files(root):
        if rel == entry.file or f".{name}" not in text:
            continue
        if not (rel in family and f"self.{name}" in text) and not (words and words.search(text)):
            continue
        tree = _tree(root, rel)
        if tree is None or not _same_class(tree, rel, entry.file, cls):
            continue
        selfs = _self_nodes(tree, family.get(rel, set()))
        # a name bound anywhere in the file to a holder (``ib = runner.input_batch``) is one too
        local = set(holders)
        for a in ast.walk(tree):
            if isinstance(a, ast.Assign) and len(a.targets) == 1 and isinstance(a.targets[0], ast.Name):
                v = a.value
                last = v.attr if isinstance(v, ast.Attribute) else v.id if isinstance(v, ast.Name) else ""
                if last in holders:
                    local.add(a.targets[0].id)
        parents = None
        for n in ast.walk(tree):
            if not (isinstance(n, ast.Attribute) and n.attr == name):
                continue
            recv = n.value
            last = recv.attr if isinstance(recv, ast.Attribute) else recv.id if isinstance(recv, ast.Name) else ""
            if not (last in local or id(recv) in selfs):
                continue
            parents = parents or parent_map(tree)
            out.append(_classify(rel, n, parents))
    return out


def _self_nodes(tree, classes: set[str]) -> set[int]:
    ids = set()
    for c in ast.walk(tree):
        if isinstance(c, ast.ClassDef) and c.name in classes:
            for n in ast.walk(c):
                if isinstance(n, ast.Name) and n.id == "self":
                    ids.add(id(n))
    return ids


def _enclosing(tree, line: int):
    best = None
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.lineno <= line <= (fn.end_lineno or 0):
            if best is None or fn.lineno > best.lineno:
                best = fn
    return best


def _classify(rel: str, node, parents) -> dict:
    target, via = node, ""
    parent = parents.get(target)
    if isinstance(parent, ast.Attribute) and parent.value is target and parent.attr in VIEWS:
        target, via = parent, "." + parent.attr
        parent = parents.get(target)
    use = {"file": rel, "line": node.lineno, "op": "use", "extent": "whole", "node": None, "text": _src(parent)}
    if isinstance(parent, ast.Subscript) and parent.value is target:
        write = isinstance(parent.ctx, (ast.Store, ast.Del))
        key = parent.slice
        if isinstance(key, ast.Slice) and key.lower is None and key.step is None:
            use.update(op=f"slice{via}" + (" write" if write else " read"), node=key.upper)
            use["extent"] = "whole" if key.upper is None else _src(key.upper)
        else:
            use.update(op=f"index{via}" + (" write" if write else " read"), extent=_src(key), node=key)
    elif isinstance(parent, ast.Attribute) and parent.value is target:
        call = parents.get(parent)
        is_call = isinstance(call, ast.Call) and call.func is parent
        if parent.attr in METADATA:
            use.update(op=f"metadata .{parent.attr}")
        elif parent.attr in WHOLE and is_call:
            use.update(op=f"{parent.attr}{via}")
        else:
            use.update(op=f".{parent.attr}{'()' if is_call else ''}{via}")
    elif isinstance(parent, (ast.Call, ast.keyword)):
        call = parent if isinstance(parent, ast.Call) else parents.get(parent)
        use.update(op=f"passed to {_src(call.func) if isinstance(call, ast.Call) else '?'}{via}")
    elif isinstance(parent, (ast.Assign, ast.AnnAssign)) and getattr(parent, "value", None) is target:
        use.update(op=f"bound to {_src(parent.targets[0] if isinstance(parent, ast.Assign) else parent.target)}{via}")
    elif isinstance(parent, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        use.update(op=f"assigned{via}")
    else:
        use.update(op=f"{type(parent).__name__.lower()}{via}")
    return use


def judge(root: str, entry, use: dict, family: str, tables: dict, request_rows=None) -> tuple[str, str] | None:
    """``(why, kind)`` when ``use`` is checked, else None (unchecked). ``kind`` is what bounds it:
    ``whole`` (no element beyond the allocation), ``unpadded``/``padded`` (a slice by the step's
    request count, unpadded or the dispatcher's padded one) or ``indexed`` (an index below
    ``max_num_reqs``); the derived extent must cover that kind (:func:`covers`). A use of a
    one-dimensional ``request rows`` buffer is judged by ``request_rows(root, tables, use)``
    (:func:`capproof.engines.vllm.demand.judge_request_rows`, which reads the runner's request-count
    bindings; passed in so this module stays below the demand derivation), unchecked without it."""
    op = use["op"]
    if op.startswith("metadata ") or op in ("fill_", "zero_", "fill_.gpu", "fill_.cpu", "fill_.np"):
        return "no element beyond the allocation", "whole"
    if op.startswith("slice") and use["extent"] == "whole":
        return "the whole allocation", "whole"
    if family == "request rows" and use["node"] is not None and len(entry.shape) == 1 and request_rows is not None:
        return request_rows(root, tables, use)
    return None


def covers(extent: str, kind: str) -> bool:
    """Whether a request-row ``extent`` (as :func:`capproof.engines.vllm.demand.derive_request_rows`
    writes it) bounds a use of ``kind``: the padded count only under its ``padded == 1`` select,
    an index only where the extent is (or takes the maximum with) ``max_num_reqs``, the unpadded
    count always (it is the extent's own ``num_reqs``, or below ``max_num_reqs`` by the checked
    fact)."""
    if kind in ("whole", "unpadded"):
        return True
    if kind == "padded":
        return "padded == 1" in extent
    if kind == "indexed":
        return extent == "max_num_reqs" or (extent.startswith("maximum(") and extent.endswith(", max_num_reqs)"))
    return False


#: How a buffer leaves the access reader's sight in its own file: a local bound to it, a return,
#: a yield, a container that holds it (:func:`_classify`'s ``op``).
ESCAPES = ("bound to", "return", "yield", "tuple", "list", "dict", "set", "starred")


def escapes_in_file(root: str, entry) -> list[dict]:
    """Uses of ``self.<attribute>`` (or a ``CpuGpuBuffer`` view of it) in the allocating file that
    the access reader does not follow (:data:`ESCAPES`): each is unchecked."""
    tree = _tree(root, entry.file)
    if tree is None:
        return []
    name = entry.attribute.rsplit(".", 1)[-1]
    parents = None
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute) and n.attr == name and isinstance(n.value, ast.Name) and n.value.id == "self":
            parents = parents or parent_map(tree)
            use = _classify(entry.file, n, parents)
            if use["op"].startswith(ESCAPES):
                out.append(use)
    return out


def check_foreign_uses(entries: list, root: str, request_rows=None) -> list[str]:
    """For every entry with a derived demand, find its uses outside the allocating file
    (:func:`foreign_uses`) and add them to its ``accesses``; when some use is unchecked
    (:func:`judge`, or not covered by the extent, :func:`covers`) or the buffer escapes the access
    reader in its own file (:func:`escapes_in_file`), each derived demand keeps its extent (its obligation still compares it) and
    gets ``unchecked_uses`` (the sites, at most 20) and ``unchecked_uses_count``: the coverage
    (:func:`capproof.coverage.derived_dims`) then does not count that dimension as derived, so the
    entry is not verified. ``request_rows`` judges a request-rows use (:func:`judge`). A use at a
    site the derivation judged itself (the demand's ``judged_uses``, one ``"<file>:<line>"`` per
    use it judged there, e.g. the V2 runner's slot-indexed uses) is checked when the line holds no
    more uses than that. Returns one line per such entry."""
    lines = []
    tables: dict = {}
    for e in entries:
        derived = [d for d in e.demands if isinstance(d, dict) and d.get("how") in ("executed", "ast")]
        if not derived or e.owner in ("", None) or not e.owner[:1].isupper():
            continue
        uses = foreign_uses(root, e)
        escapes = escapes_in_file(root, e)
        if not uses and not escapes:
            continue
        unchecked = [f"{u['file']}:{u['line']} {u['op']} {u['text'][:80]}" for u in escapes]
        per_line: dict[str, int] = {}
        for u in uses:
            per_line[f"{u['file']}:{u['line']}"] = per_line.get(f"{u['file']}:{u['line']}", 0) + 1
        for u in uses:
            ok = True
            for d in derived:
                # a use the derivation itself judged (``judged_uses``: "<file>:<line>" once per use
                # it judged there); a line with more uses than it judged is not taken
                site = f"{u['file']}:{u['line']}"
                judged = d.get("judged_uses") or []
                if site in judged and per_line[site] <= judged.count(site):
                    continue
                got = judge(root, e, u, d.get("family") or "", tables, request_rows)
                if got is None or not covers(str(d.get("extent")), got[1]):
                    ok = False
                    break
            if not ok:
                unchecked.append(f"{u['file']}:{u['line']} {u['op']} {u['text'][:80]}")
        known = {(a.get("file"), a.get("line"), a.get("op")) for a in e.accesses}
        for u in uses:
            key = (u["file"], u["line"], u["op"])
            if key not in known:
                e.accesses.append(
                    {
                        "file": u["file"],
                        "line": u["line"],
                        "dim": None,
                        "extent": u["extent"],
                        "op": u["op"],
                        "how": "ast",
                    }
                )
                known.add(key)
        if unchecked:
            for d in derived:
                d["unchecked_uses"] = unchecked[:20]
                d["unchecked_uses_count"] = len(unchecked)
            lines.append(f"{e.id}: {len(unchecked)} uses not checked, e.g. {unchecked[0][:140]}")
    return lines
