"""Reading, in a file of vLLM, where an index or a slice stop is bounded by the V1 persistent batch.

Pure reading of the extracted wheel's sources (AST, ``how: ast``); no vLLM import. Shared by the
drafters' request rows (:mod:`.demand_drafter_rows`) and the judgement of a buffer's uses in
other files (:func:`capproof.engines.vllm.demand.judge_request_rows`):

- :func:`batch_count`: a name assigned only ``<p>.num_reqs`` with ``p`` a parameter annotated
  ``InputBatch`` (imported from ``vllm.v1.worker.gpu_input_batch``), never rebound;
- :func:`loop_index_bounded`: a loop index ``for i in range(n)`` with ``n`` such a count;
- :func:`req_ids_length`: a name assigned only ``len(<p>.req_ids)``, ``p`` such a parameter
  (``InputBatch.req_ids`` returns its ``_req_ids`` list, whose length the caller bounds);
- :func:`map_value`: a name assigned only ``m[key]`` or ``m.get(key)``, ``m`` the batch's
  ``req_id_to_index`` or a local alias of it that is only read.
"""

from __future__ import annotations

import ast

from ..tracing.accesses import compact_source as _src
from ..tracing.accesses import parent_map

__all__ = [
    "bindings",
    "imports_input_batch",
    "batch_count",
    "loop_index_bounded",
    "req_ids_length",
    "map_value",
    "enumerate_index",
]


def imports_input_batch(tree) -> bool:
    return any(
        isinstance(n, ast.ImportFrom)
        and n.module == "vllm.v1.worker.gpu_input_batch"
        and any(a.name == "InputBatch" and a.asname in (None, "InputBatch") for a in n.names)
        for n in ast.walk(tree)
    )


def bindings(fn, name: str) -> list:
    """Every node of ``fn`` that binds ``name``: assignments, loop and comprehension targets, ``with
    ... as``, walrus, and a parameter (the function node itself)."""
    out = []
    params = [a.arg for a in fn.args.args + fn.args.kwonlyargs + fn.args.posonlyargs]
    if name in params:
        out.append(fn)
    for n in ast.walk(fn):
        targets = []
        if isinstance(n, ast.Assign):
            targets = n.targets
        elif isinstance(n, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.comprehension)):
            targets = [n.target]
        elif isinstance(n, ast.withitem) and n.optional_vars is not None:
            targets = [n.optional_vars]
        elif isinstance(n, ast.NamedExpr):
            targets = [n.target]
        for t in targets:
            if any(isinstance(x, ast.Name) and x.id == name and isinstance(x.ctx, ast.Store) for x in ast.walk(t)):
                out.append(n)
    return out


def batch_count(tree, fn, expr) -> str | None:
    """Why ``expr`` in ``fn`` is the persistent batch's request count, or None: a name assigned only
    ``<p>.num_reqs`` (``p`` a parameter of ``fn`` annotated ``InputBatch``, imported from
    ``vllm.v1.worker.gpu_input_batch``, never rebound), or such an expression itself."""
    if not imports_input_batch(tree):
        return None

    def direct(v) -> str | None:
        if not (isinstance(v, ast.Attribute) and v.attr == "num_reqs" and isinstance(v.value, ast.Name)):
            return None
        p = v.value.id
        arg = next((a for a in fn.args.args + fn.args.kwonlyargs if a.arg == p), None)
        if arg is None or arg.annotation is None or _src(arg.annotation).strip("'\"") != "InputBatch":
            return None
        if bindings(fn, p) != [fn]:
            return None
        return f"{p}.num_reqs ({p}: InputBatch, the persistent batch)"

    got = direct(expr)
    if got or not isinstance(expr, ast.Name):
        return got
    sets = bindings(fn, expr.id)
    if not sets or any(not isinstance(s, ast.Assign) or len(s.targets) != 1 for s in sets):
        return None
    whys = [direct(s.value) for s in sets]
    if any(w is None for w in whys):
        return None
    return f"{expr.id} = " + "; ".join(f"{w} (:{s.lineno})" for w, s in zip(whys, sets))


def loop_index_bounded(tree, fn, name: str, line: int) -> str | None:
    """Why index ``name`` at ``line`` is below a batch count, or None: the only binding of ``name``
    in ``fn`` is ``for name in range(n)`` whose body holds ``line``, ``n`` a :func:`batch_count`."""
    sets = bindings(fn, name)
    if len(sets) != 1 or not isinstance(sets[0], ast.For):
        return None
    loop = sets[0]
    it = loop.iter
    if not (
        isinstance(loop.target, ast.Name)
        and isinstance(it, ast.Call)
        and _src(it.func) == "range"
        and len(it.args) == 1
        and not it.keywords
    ):
        return None
    if not any(b.lineno <= line <= (b.end_lineno or b.lineno) for b in loop.body):
        return None
    why = batch_count(tree, fn, it.args[0])
    return f"for {name} in range({_src(it.args[0])}) (:{loop.lineno}); {why}" if why else None


def req_ids_length(tree, fn, expr) -> str | None:
    """Why ``expr`` in ``fn`` is the length of the persistent batch's request-id list, or None: a
    name whose every binding in ``fn`` is ``len(<p>.req_ids)`` (a single-target assignment), ``p``
    a parameter of ``fn`` annotated ``InputBatch`` (imported from ``vllm.v1.worker.gpu_input_batch``)
    and never rebound. What bounds that length (``InputBatch.req_ids`` returns ``_req_ids``, which
    grows only past an asserted index) is the caller's to check."""
    if not imports_input_batch(tree) or not isinstance(expr, ast.Name):
        return None

    def direct(v) -> str | None:
        if not (
            isinstance(v, ast.Call)
            and _src(v.func) == "len"
            and len(v.args) == 1
            and not v.keywords
            and isinstance(v.args[0], ast.Attribute)
            and v.args[0].attr == "req_ids"
            and isinstance(v.args[0].value, ast.Name)
        ):
            return None
        p = v.args[0].value.id
        arg = next((a for a in fn.args.args + fn.args.kwonlyargs if a.arg == p), None)
        if arg is None or arg.annotation is None or _src(arg.annotation).strip("'\"") != "InputBatch":
            return None
        if bindings(fn, p) != [fn]:
            return None
        return f"len({p}.req_ids) ({p}: InputBatch, the persistent batch)"

    sets = bindings(fn, expr.id)
    if not sets or any(not isinstance(s, ast.Assign) or len(s.targets) != 1 for s in sets):
        return None
    whys = [direct(s.value) for s in sets]
    if any(w is None for w in whys):
        return None
    return f"{expr.id} = " + "; ".join(f"{w} (:{s.lineno})" for w, s in zip(whys, sets))


def _batch_param(tree, fn, holder) -> str | None:
    """``holder`` names the persistent batch in ``fn``: ``self.input_batch`` in a method (the
    runner's attribute; the caller decides the file is the runner's), or a parameter annotated
    ``InputBatch`` (imported from ``vllm.v1.worker.gpu_input_batch``) never rebound."""
    if _src(holder) == "self.input_batch":
        return "self.input_batch"
    if not (isinstance(holder, ast.Name) and imports_input_batch(tree)):
        return None
    arg = next((a for a in fn.args.args + fn.args.kwonlyargs if a.arg == holder.id), None)
    if arg is None or arg.annotation is None or _src(arg.annotation).strip("'\"") != "InputBatch":
        return None
    return f"{holder.id}: InputBatch" if bindings(fn, holder.id) == [fn] else None


#: Reads of a ``req_id_to_index`` alias that neither store into the map nor hand it on.
_ALIAS_READS = ("get", "items", "values", "keys")


def _map_alias(tree, fn, name: str) -> str | None:
    """Why local ``name`` of ``fn`` is the persistent batch's ``req_id_to_index`` itself, or None:
    its only binding is ``name = <b>.req_id_to_index`` (``b`` the batch, :func:`_batch_param`) and
    every other use of it in ``fn`` reads the map (``name[...]`` loaded, ``name.get/items/values/keys``,
    ``len(name)``, a truth test): nothing is stored into the map through the alias, nor is it handed on."""
    sets = bindings(fn, name)
    if len(sets) != 1 or not isinstance(sets[0], ast.Assign) or len(sets[0].targets) != 1:
        return None
    v = sets[0].value
    if not (isinstance(v, ast.Attribute) and v.attr == "req_id_to_index"):
        return None
    b = _batch_param(tree, fn, v.value)
    if b is None:
        return None
    parents = parent_map(fn)
    for n in ast.walk(fn):
        if not (isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)):
            continue
        up = parents.get(n)
        if isinstance(up, ast.Subscript) and up.value is n and isinstance(up.ctx, ast.Load):
            continue
        if isinstance(up, ast.Attribute) and up.attr in _ALIAS_READS and isinstance(parents.get(up), ast.Call):
            continue
        if isinstance(up, ast.Call) and _src(up.func) == "len" and up.args == [n]:
            continue
        if isinstance(up, (ast.If, ast.While)) and up.test is n:
            continue
        if isinstance(up, ast.UnaryOp) and isinstance(up.op, ast.Not):
            continue
        return None
    return f"{name} = {_src(v)} (:{sets[0].lineno}; {b}; only read)"


def _map_of_batch(tree, fn, m) -> str | None:
    """Why expression ``m`` is the batch's ``req_id_to_index`` (``<batch>.req_id_to_index`` or a
    local alias of it, :func:`_map_alias`), or None."""
    if isinstance(m, ast.Attribute) and m.attr == "req_id_to_index":
        return _batch_param(tree, fn, m.value)
    if isinstance(m, ast.Name):
        return _map_alias(tree, fn, m.id)
    return None


def _map_values_of(tree, fn, it) -> str | None:
    """Why ``it`` is ``m.values()`` with ``m`` the batch's ``req_id_to_index`` (or an alias of it,
    :func:`_map_alias`), or None."""
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr == "values"):
        return None
    if it.args or it.keywords:
        return None
    b = _map_of_batch(tree, fn, it.func.value)
    return f"{_src(it)} ({b})" if b else None


def _values_loop(tree, fn, loop, name: str) -> str | None:
    """Why loop index ``name`` (the only binding, ``for name in X``) runs over the map's values, or
    None: ``X`` is ``m.values()`` or ``list(m.values())`` (:func:`_map_values_of`) or a local whose only binding is
    ``list(m.values())`` and whose every other use reads it whole without changing it (a loop over
    it, ``len``, ``torch.as_tensor``/``torch.tensor``/``np.array`` of it)."""
    if not isinstance(loop.target, ast.Name):
        return None
    it = loop.iter
    if isinstance(it, ast.Call) and _src(it.func) == "list" and len(it.args) == 1 and not it.keywords:
        it = it.args[0]  # a copy of the values, iterated at once
    why = _map_values_of(tree, fn, it)
    if why:
        return f"for {name} in {why} (:{loop.lineno})"
    if not isinstance(it, ast.Name):
        return None
    sets = bindings(fn, it.id)
    if len(sets) != 1 or not isinstance(sets[0], ast.Assign) or len(sets[0].targets) != 1:
        return None
    v = sets[0].value
    if not (isinstance(v, ast.Call) and _src(v.func) == "list" and len(v.args) == 1 and not v.keywords):
        return None
    why = _map_values_of(tree, fn, v.args[0])
    if why is None:
        return None
    parents = parent_map(fn)
    readers = ("len", "torch.as_tensor", "torch.tensor", "np.array", "np.asarray")
    for n in ast.walk(fn):
        if not (isinstance(n, ast.Name) and n.id == it.id and isinstance(n.ctx, ast.Load)):
            continue
        up = parents.get(n)
        if isinstance(up, (ast.For, ast.comprehension)) and up.iter is n:
            continue
        if isinstance(up, ast.Call) and _src(up.func) in readers and up.args and up.args[0] is n:
            continue
        return None
    return f"for {name} in {it.id} (:{loop.lineno}), {it.id} = list({why}) (:{sets[0].lineno}; only read)"


def map_value(tree, fn, name: str) -> str | None:
    """Why index ``name`` of ``fn`` is a value of the persistent batch's ``req_id_to_index``, or
    None: every binding of it in ``fn`` is ``m[...]`` or ``m.get(key)`` (a single-target
    assignment; a missing key gives None, which indexes a new axis, never an element) with ``m``
    either ``<b>.req_id_to_index`` (``b`` the batch, :func:`_batch_param`) or a local only ever
    bound to it and only read (:func:`_map_alias`). The bound on the map's values is the caller's
    to check."""
    sets = bindings(fn, name)
    if len(sets) == 1 and isinstance(sets[0], ast.For):
        return _values_loop(tree, fn, sets[0], name)
    if not sets or any(not isinstance(s, ast.Assign) or len(s.targets) != 1 for s in sets):
        return None
    whys = []
    for s in sets:
        v = s.value
        if isinstance(v, ast.Subscript):
            m = v.value
        elif (
            isinstance(v, ast.Call)
            and isinstance(v.func, ast.Attribute)
            and v.func.attr == "get"
            and len(v.args) == 1
            and not v.keywords
        ):
            m = v.func.value
        else:
            return None
        b = _map_of_batch(tree, fn, m)
        if b is None:
            return None
        whys.append(f"{_src(v)} (:{s.lineno}; {b})")
    return f"{name} = " + "; ".join(whys)


def enumerate_index(tree, fn, name: str, line: int) -> str | None:
    """Why index ``name`` at ``line`` is below ``len(<b>.req_ids)``, or None: its only binding in
    ``fn`` is the first target of ``for name, _ in enumerate(<b>.req_ids)`` (``b`` the batch,
    :func:`_batch_param`) whose body holds ``line``. The bound on that length is the caller's."""
    sets = bindings(fn, name)
    if len(sets) != 1 or not isinstance(sets[0], ast.For):
        return None
    loop = sets[0]
    it = loop.iter
    if not (
        isinstance(loop.target, ast.Tuple)
        and len(loop.target.elts) == 2
        and isinstance(loop.target.elts[0], ast.Name)
        and loop.target.elts[0].id == name
        and isinstance(it, ast.Call)
        and _src(it.func) == "enumerate"
        and len(it.args) == 1
        and not it.keywords
        and isinstance(it.args[0], ast.Attribute)
        and it.args[0].attr == "req_ids"
    ):
        return None
    b = _batch_param(tree, fn, it.args[0].value)
    if b is None or not any(x.lineno <= line <= (x.end_lineno or x.lineno) for x in loop.body):
        return None
    return f"for {name}, _ in enumerate({_src(it.args[0])}) (:{loop.lineno}; {b})"
