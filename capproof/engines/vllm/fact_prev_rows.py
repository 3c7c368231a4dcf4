"""The V1 runner's previous-step request rows, checked in vLLM's source (AST, ``how: ast``).

Under async scheduling and speculative decoding the V1 runner indexes per-request buffers by a
request's row *in the previous step*: ``InputBatch.prev_req_id_to_index`` maps a request id to
that row, and ``GPUModelRunner.prev_positions`` (a ``CpuGpuBuffer``) holds, per current row, the
previous row or ``-1``. Two facts bound those indexes, each checked over every site of vLLM 0.33.0
that stores them (a site of another form leaves the fact unchecked, and the index not bounded):

- :func:`prev_map_values` — every value of ``prev_req_id_to_index`` is below ``len(req_ids)`` of
  the batch it was built from: the field is stored only as ``None`` (``InputBatch.__init__``), a
  dict comprehension ``{req_id: i for i, req_id in enumerate(self.input_batch.req_ids) ...}``
  (``gpu_model_runner.py:3515``), or a local dict whose only stores are ``d[req_id] = i`` inside
  ``for i, req_id in enumerate(self.input_batch.req_ids)`` (``gpu_model_runner.py:4562-4574``);
  every other use of the field or of a local bound to it reads it (``get``, ``pop(k, None)``,
  ``items``/``values``/``keys``, ``[k]`` loaded, ``len``, a truth test). With
  ``len(InputBatch._req_ids) <= max_num_reqs`` (checked by the caller, :mod:`.demand`) a value is
  ``< max_num_reqs``.
- :func:`prev_positions_values` — every value of ``GPUModelRunner.prev_positions`` (``.np``,
  ``.cpu``, ``.gpu``) is ``0`` (``CpuGpuBuffer`` allocates with ``torch.zeros``), ``-1`` or a value
  of ``prev_req_id_to_index``: its only stores are, through a local ``p = self.prev_positions.np[:n]``,
  ``p.fill(-1)`` and ``p[i] = m.get(req_id, -1)`` with ``m`` bound only to
  ``self.input_batch.prev_req_id_to_index`` (``gpu_model_runner.py:1725-1738``), and
  ``copy_to_gpu`` (the GPU copy of those values); every other use reads it, or hands ``.gpu[:n]``
  to a module-level helper that only reads the parameter (``.clamp``, a comparison, ``.shape``).
  No other file of ``vllm/`` names a ``.prev_positions`` attribute. A value in ``[-1, max_num_reqs)``
  indexes a ``[max_num_reqs]`` row in bounds (``-1`` is the last row in NumPy and PyTorch).

Pure reading of the extracted wheel's sources; no vLLM import.
"""

from __future__ import annotations

import ast
import os
from functools import lru_cache

from ..tracing.accesses import compact_source as _src
from ..tracing.accesses import parent_map
from .batch_reads import bindings

__all__ = ["prev_map_values", "prev_positions_values", "RUNNER", "BATCH"]

RUNNER = "vllm/v1/worker/gpu_model_runner.py"
BATCH = "vllm/v1/worker/gpu_input_batch.py"
_ENUM_REQ_IDS = "enumerate(self.input_batch.req_ids)"
#: Method reads of a dict that neither store into it nor hand it on.
_DICT_READS = ("get", "items", "values", "keys")


@lru_cache(maxsize=64)
def _tree(path: str):
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return ast.parse(fh.read())
    except (OSError, SyntaxError):
        return None


def _functions(tree) -> list:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _enclosing(tree, node):
    best = None
    for fn in _functions(tree):
        if fn.lineno <= node.lineno <= (fn.end_lineno or fn.lineno):
            if best is None or fn.lineno >= best.lineno:
                best = fn
    return best


def _read_only(node, parents) -> bool:
    """``node`` (a dict-valued expression) is only read where it stands."""
    up = parents.get(node)
    if isinstance(up, ast.Subscript) and up.value is node:
        return isinstance(up.ctx, ast.Load)
    if isinstance(up, ast.Attribute) and up.value is node:
        call = parents.get(up)
        if not (isinstance(call, ast.Call) and call.func is up):
            return False
        if up.attr in _DICT_READS:
            return True
        return up.attr == "pop" and len(call.args) == 2 and _src(call.args[1]) == "None"
    if isinstance(up, ast.Call) and _src(up.func) == "len" and up.args == [node]:
        return True
    if isinstance(up, (ast.If, ast.While, ast.IfExp, ast.Assert)) and up.test is node:
        return True
    if isinstance(up, ast.UnaryOp) and isinstance(up.op, ast.Not):
        return True
    if isinstance(up, ast.BoolOp):
        return _read_only(up, parents) or isinstance(parents.get(up), (ast.If, ast.While, ast.IfExp, ast.Assert))
    if isinstance(up, ast.Compare) and len(up.ops) == 1 and isinstance(up.ops[0], (ast.Is, ast.IsNot)):
        return True
    return False


def _local_alias_read_only(fn, name: str, parents) -> bool:
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) and not _read_only(n, parents):
            return False
    return True


def _built_from_req_ids(fn, name: str, parents) -> str | None:
    """Why local dict ``name`` of ``fn`` holds only indexes of ``enumerate(self.input_batch.req_ids)``."""
    sets = bindings(fn, name)
    if len(sets) != 1 or not isinstance(sets[0], (ast.Assign, ast.AnnAssign)):
        return None
    if sets[0].value is None or _src(sets[0].value) != "{}":
        return None
    stores = []
    for n in ast.walk(fn):
        if not (isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)):
            continue
        up = parents.get(n)
        if isinstance(up, ast.Subscript) and up.value is n and isinstance(up.ctx, ast.Store):
            assign = parents.get(up)
            loop = parents.get(assign)
            while loop is not None and not isinstance(loop, ast.For):
                loop = parents.get(loop)
            if not (
                isinstance(assign, ast.Assign)
                and len(assign.targets) == 1
                and isinstance(assign.value, ast.Name)
                and isinstance(loop, ast.For)
                and _src(loop.iter) == _ENUM_REQ_IDS
                and isinstance(loop.target, ast.Tuple)
                and _src(loop.target.elts[0]) == assign.value.id
                and bindings(fn, assign.value.id) == [loop]
            ):
                return None
            stores.append(assign.lineno)
            continue
        up_assign = parents.get(n)
        if isinstance(up_assign, ast.Assign) and up_assign.value is n:
            continue  # the dict handed to the field (checked by the caller)
        if not _read_only(n, parents):
            return None
    return f"{name}[...] = i in for i, _ in {_ENUM_REQ_IDS} (:{','.join(map(str, stores))})" if stores else None


def _field_sites(root: str, attr: str):
    """``(file, tree, node)`` for every ``.<attr>`` attribute node in ``vllm/``."""
    base = os.path.join(root, "vllm")
    for dirpath, _dirs, files in os.walk(base):
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            path = os.path.join(dirpath, f)
            with open(path, encoding="utf-8", errors="replace") as fh:
                if f".{attr}" not in fh.read():
                    continue
            tree = _tree(path)
            if tree is None:
                yield os.path.relpath(path, root).replace(os.sep, "/"), None, None
                continue
            for n in ast.walk(tree):
                if isinstance(n, ast.Attribute) and n.attr == attr:
                    yield os.path.relpath(path, root).replace(os.sep, "/"), tree, n


def prev_map_values(root: str) -> tuple[str | None, list[str]]:
    """``(why, refused)``: why every value of ``InputBatch.prev_req_id_to_index`` is an index of
    ``enumerate(self.input_batch.req_ids)`` (module docstring), or None with the sites refused."""
    refused: list[str] = []
    stores: list[str] = []
    parents_of: dict = {}
    for file, tree, node in _field_sites(root, "prev_req_id_to_index"):
        if tree is None:
            refused.append(f"{file}: not parsed")
            continue
        parents = parents_of.setdefault(file, parent_map(tree))
        up = parents.get(node)
        where = f"{file}:{node.lineno}"
        if isinstance(node.ctx, ast.Store):
            v = up.value if isinstance(up, (ast.Assign, ast.AnnAssign)) else None
            fn = _enclosing(tree, node)
            if v is not None and isinstance(v, ast.Constant) and v.value is None:
                stores.append(f"{where} None")
                continue
            if (
                isinstance(v, ast.DictComp)
                and isinstance(v.value, ast.Name)
                and len(v.generators) == 1
                and _src(v.generators[0].iter) == _ENUM_REQ_IDS
                and isinstance(v.generators[0].target, ast.Tuple)
                and _src(v.generators[0].target.elts[0]) == v.value.id
            ):
                stores.append(f"{where} {{req_id: i for i, req_id in {_ENUM_REQ_IDS}}}")
                continue
            if isinstance(v, ast.Name) and fn is not None:
                why = _built_from_req_ids(fn, v.id, parents)
                if why:
                    stores.append(f"{where} {v.id}: {why}")
                    continue
            refused.append(f"{where} stored otherwise")
            continue
        if _read_only(node, parents):
            continue
        if (
            isinstance(up, ast.Assign)
            and up.value is node
            and len(up.targets) == 1
            and isinstance(up.targets[0], ast.Name)
        ):
            fn = _enclosing(tree, node)
            name = up.targets[0].id
            if fn is not None and len(bindings(fn, name)) == 1 and _local_alias_read_only(fn, name, parents):
                continue
        refused.append(f"{where} {_src(up)[:80]}")
    if refused or not stores:
        return None, refused or ["no store of prev_req_id_to_index found"]
    return "prev_req_id_to_index values are indexes of req_ids: " + "; ".join(stores), []


def prev_positions_values(root: str) -> tuple[str | None, list[str]]:
    """``(why, refused)``: why every value of ``GPUModelRunner.prev_positions`` is ``0``, ``-1`` or a
    value of ``prev_req_id_to_index`` (module docstring), or None with the sites refused."""
    from .demand_helpers import resolve_callee

    refused: list[str] = []
    writes: list[str] = []
    for file, _t, node in _field_sites(root, "prev_positions"):
        if file != RUNNER:
            refused.append(f"{file}:{getattr(node, 'lineno', '?')} names .prev_positions")
    tree = _tree(os.path.join(root, RUNNER))
    if tree is None:
        return None, [f"{RUNNER}: not parsed"]
    parents = parent_map(tree)
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and node.attr == "prev_positions" and _src(node.value) == "self"):
            continue
        where = f"{RUNNER}:{node.lineno}"
        up = parents.get(node)
        fn = _enclosing(tree, node)
        if isinstance(node.ctx, ast.Store):
            v = up.value if isinstance(up, ast.Assign) else None
            if (
                fn is not None
                and fn.name == "__init__"
                and isinstance(v, ast.Call)
                and _src(v.func) == "self._make_buffer"
                and not any(k.arg == "numpy" for k in v.keywords)
                and _zeros(root)
            ):
                writes.append(f"{where} allocated (CpuGpuBuffer: torch.zeros)")
                continue
            refused.append(f"{where} stored otherwise")
            continue
        call = parents.get(up)
        if isinstance(up, ast.Attribute) and up.attr == "copy_to_gpu" and isinstance(call, ast.Call):
            writes.append(f"{where} copy_to_gpu (the CPU values)")
            continue
        if not (isinstance(up, ast.Attribute) and up.attr in ("np", "gpu", "cpu")):
            refused.append(f"{where} {_src(up)[:80]}")
            continue
        sub = parents.get(up)
        if not (isinstance(sub, ast.Subscript) and sub.value is up and isinstance(sub.ctx, ast.Load)):
            refused.append(f"{where} {_src(sub)[:80]}")
            continue
        holder = parents.get(sub)
        if isinstance(holder, ast.Assign) and len(holder.targets) == 1 and isinstance(holder.targets[0], ast.Name):
            name = holder.targets[0].id
            got = _positions_alias(fn, name, parents) if fn is not None else None
            if got is None:
                refused.append(f"{where} {name} = {_src(sub)} used otherwise")
                continue
            writes += [f"{RUNNER}:{w}" for w in got]
            continue
        if isinstance(holder, ast.Call) and sub in holder.args and up.attr == "gpu":
            why = _helper_reads(root, holder, holder.args.index(sub), resolve_callee)
            if why is None:
                refused.append(f"{where} handed to {_src(holder.func)}")
                continue
            continue
        if isinstance(holder, ast.Compare) or (isinstance(holder, ast.Subscript) and isinstance(holder.ctx, ast.Load)):
            continue  # read: a comparison, an element or sub-slice loaded
        refused.append(f"{where} {_src(holder)[:80]}")
    if refused:
        return None, refused
    return "prev_positions values are 0, -1 or prev_req_id_to_index values: " + "; ".join(writes), []


def _zeros(root: str) -> bool:
    """``CpuGpuBuffer.__init__`` (``vllm/v1/utils.py``) allocates ``self.cpu`` with ``torch.zeros``
    and ``self.gpu`` with ``torch.zeros_like`` (read in its source)."""
    tree = _tree(os.path.join(root, "vllm/v1/utils.py"))
    cls = (
        next((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "CpuGpuBuffer"), None)
        if tree
        else None
    )
    init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None) if cls else None
    if init is None:
        return False
    sets = {
        _src(a.targets[0]): a.value
        for a in ast.walk(init)
        if isinstance(a, ast.Assign) and len(a.targets) == 1 and _src(a.targets[0]) in ("self.cpu", "self.gpu")
    }
    cpu, gpu = sets.get("self.cpu"), sets.get("self.gpu")
    return (
        isinstance(cpu, ast.Call)
        and _src(cpu.func) == "torch.zeros"
        and isinstance(gpu, ast.Call)
        and _src(gpu.func) == "torch.zeros_like"
    )


def _positions_alias(fn, name: str, parents) -> list[str] | None:
    """Lines of the stores through local ``name`` (``self.prev_positions.<view>[...]``) when each is
    ``name.fill(-1)`` or ``name[i] = m.get(k, -1)`` (``m`` bound only to the batch's
    ``prev_req_id_to_index``) and every other use reads it; else None."""
    if len(bindings(fn, name)) != 1:
        return None
    lines = []
    for n in ast.walk(fn):
        if not (isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)):
            continue
        up = parents.get(n)
        if isinstance(up, ast.Attribute) and up.attr == "fill":
            call = parents.get(up)
            if isinstance(call, ast.Call) and len(call.args) == 1 and _src(call.args[0]) == "-1":
                lines.append(f"{call.lineno} fill(-1)")
                continue
            return None
        if isinstance(up, ast.Subscript) and up.value is n and isinstance(up.ctx, ast.Store):
            assign = parents.get(up)
            v = assign.value if isinstance(assign, ast.Assign) else None
            if not (
                isinstance(v, ast.Call)
                and isinstance(v.func, ast.Attribute)
                and v.func.attr == "get"
                and len(v.args) == 2
                and _src(v.args[1]) == "-1"
                and isinstance(v.func.value, ast.Name)
            ):
                return None
            m = bindings(fn, v.func.value.id)
            if not (
                len(m) == 1
                and isinstance(m[0], ast.Assign)
                and _src(m[0].value) == "self.input_batch.prev_req_id_to_index"
            ):
                return None
            lines.append(f"{assign.lineno} {_src(v)}")
            continue
        if isinstance(up, ast.Subscript) and up.value is n and isinstance(up.ctx, ast.Load):
            continue
        if isinstance(up, ast.Compare):
            continue
        if isinstance(up, ast.Call) and up.args and n in up.args and _src(up.func) in ("np.where",):
            continue
        return None
    return lines


def _helper_reads(root: str, call: ast.Call, index: int, resolve_callee) -> str | None:
    """Why the helper ``call`` hands position ``index`` to only reads that parameter, or None."""
    callee = resolve_callee(root, RUNNER, call.func)
    if callee is None:
        return None
    fn = callee[1] if isinstance(callee, tuple) else callee
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    if fn.args.vararg or fn.args.kwarg or index >= len(params):
        return None
    p = params[index]
    if bindings(fn, p) != [fn]:
        return None
    parents = parent_map(fn)
    for n in ast.walk(fn):
        if not (isinstance(n, ast.Name) and n.id == p and isinstance(n.ctx, ast.Load)):
            continue
        up = parents.get(n)
        if isinstance(up, ast.Compare):
            continue
        if isinstance(up, ast.Attribute) and up.attr == "shape":
            continue
        if isinstance(up, ast.Attribute) and up.attr == "clamp" and isinstance(parents.get(up), ast.Call):
            continue
        return None
    return f"{fn.name} reads {p} only"
