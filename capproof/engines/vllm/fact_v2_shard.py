"""The sampler's TP shard of a V2 batch: its request count is a subset count (vLLM's code, AST).

``BatchSharder.shard_sampler_inputs`` (``vllm/v1/worker/gpu/sample/batch_shard.py``, vLLM 0.33.0
``:165-300``) builds the rank-local batch ``replace(input_batch, num_reqs=num_local_reqs, ...)``
(``:284``) with (``:186-189``)::

    req_owner_np = input_batch.idx_mapping_np % tp_size
    local_req_indices_np = np.flatnonzero(req_owner_np == tp_rank)
    num_local_reqs = local_req_indices_np.shape[0]

``%`` and ``==`` with a scalar are elementwise (the result has the shape of
``input_batch.idx_mapping_np``) and ``np.flatnonzero`` returns the indices of the nonzero elements of
its argument, so ``num_local_reqs <= len(input_batch.idx_mapping_np)``: the shard is a subset of
its input batch's requests. :func:`shard_count` checks those statements (each bound once in the
function) and then the second link, ``len(idx_mapping_np) <= max_num_reqs`` for every V2 batch,
by :func:`slot_array_lengths`: every ``idx_mapping_np=`` passed to a batch constructor
(``InputBatch(...)``, ``cls(...)`` in ``InputBatch``, ``BatchReqState(...)``, ``replace(...)``)
under ``vllm/v1/worker/gpu/`` and every store ``<x>.idx_mapping_np = ...`` is one of:

- ``np.fromiter(..., count=n)`` with ``n`` a request count the V2 count reading bounds
  (:class:`.demand_v2_requests.CountJudge`, without induction);
- ``np.arange(n)`` with ``n`` the very name passed as the same call's ``num_reqs=`` (never rebound
  in the function): as long as the batch's count, itself a path of the V2 fact;
- a slice ``<b>.idx_mapping_np[a:b]`` or the subset ``<b>.idx_mapping_np[i]`` with ``i`` the
  ``np.flatnonzero`` of an elementwise comparison of that array (the statements above): no longer
  than another batch's slot array (induction over these sites);
- a field ``<b>.idx_mapping_np`` of another batch (induction), or a local bound only to the above.

The PCP manager's rank-local batch (``pcp_manager.py:694``, up to ``2 * max_num_reqs`` requests,
finding 10) is the one site left out: the shard's count is bounded for every input that is not
that batch or built from it, and where that batch goes is read per inventory entry
(:mod:`.fact_v2_reach`): an entry the PCP local batch does not reach sees no shard of it either (a
shard built from a followed batch is followed). This is a structural argument over the source,
not a run; a concrete run of the sharder is a test (:mod:`.fact_slots`).
"""

from __future__ import annotations

import ast

from .demand_slots import GPU_DIR, class_of, enclosing_function, source_text

__all__ = ["SHARD", "SHARD_COUNT", "PCP_SITE", "slot_array_lengths", "shard_count"]

SHARD = f"{GPU_DIR}/sample/batch_shard.py"
PCP = f"{GPU_DIR}/pcp_manager.py"
#: The PCP local batch's construction (the one site excluded, see the module docstring).
PCP_SITE = "PCPManager.partition_batch"
#: The statements of ``BatchSharder.shard_sampler_inputs`` that make the shard's count a subset count.
SHARD_COUNT = (
    ("req_owner_np", "input_batch.idx_mapping_np%tp_size"),
    ("local_req_indices_np", "np.flatnonzero(req_owner_np==tp_rank)"),
    ("num_local_reqs", "local_req_indices_np.shape[0]"),
)
_CONSTRUCTORS = ("InputBatch", "BatchReqState", "replace")


def _assigns(fn, name: str) -> list:
    """Every statement of ``fn`` that binds ``name`` (assignments, augmented, for targets, walrus)."""
    out = []
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign):
            targets = [e for t in n.targets for e in ast.walk(t) if isinstance(e, ast.Name)]
        elif isinstance(n, (ast.AugAssign, ast.AnnAssign, ast.For, ast.NamedExpr)):
            targets = [e for e in ast.walk(n.target) if isinstance(e, ast.Name)]
        else:
            continue
        if any(t.id == name and isinstance(t.ctx, ast.Store) for t in targets):
            out.append(n)
    return out


def _single(fn, name: str):
    """The value of the one plain ``name = value`` of ``fn``, None when bound otherwise or more than once."""
    got = _assigns(fn, name)
    if len(got) == 1 and isinstance(got[0], ast.Assign) and len(got[0].targets) == 1:
        if isinstance(got[0].targets[0], ast.Name):
            return got[0].value
    return None


def _scheduled_len(fn, n) -> bool:
    """``n`` is bound once to ``len(d)`` with ``d`` bound once to ``scheduler_output.num_scheduled_tokens``
    (the scheduler output's request count, a path of the V2 fact)."""
    if not isinstance(n, ast.Name):
        return False
    v = _single(fn, n.id)
    if not (isinstance(v, ast.Call) and source_text(v.func) == "len" and len(v.args) == 1):
        return False
    d = v.args[0]
    if isinstance(d, ast.Name):
        d = _single(fn, d.id)
    return d is not None and source_text(d) == "scheduler_output.num_scheduled_tokens"


def _subset_index(fn, index, array: str) -> bool:
    """``index`` is a name bound once to ``np.flatnonzero(m == s)`` with ``m`` bound once to
    ``<array> % k`` (elementwise: the shape of ``array``), so it selects elements of ``array``."""
    if not isinstance(index, ast.Name):
        return False
    v = _single(fn, index.id)
    if not (isinstance(v, ast.Call) and source_text(v.func) == "np.flatnonzero" and len(v.args) == 1):
        return False
    cmp = v.args[0]
    if not (isinstance(cmp, ast.Compare) and len(cmp.ops) == 1 and isinstance(cmp.ops[0], ast.Eq)):
        return False
    if not (isinstance(cmp.left, ast.Name) and isinstance(cmp.comparators[0], (ast.Name, ast.Constant))):
        return False
    m = _single(fn, cmp.left.id)
    return (
        isinstance(m, ast.BinOp)
        and isinstance(m.op, ast.Mod)
        and source_text(m.left) == array
        and isinstance(m.right, (ast.Name, ast.Constant))
    )


def _length(counts, rel, parents, fn, value, call, depth: int = 0, checked: frozenset = frozenset()) -> str | None:
    """Why ``value`` (an ``idx_mapping_np``) is no longer than ``max_num_reqs`` or than another
    batch's slot array, or None (module docstring)."""
    if depth > 6 or fn is None:
        return None
    if isinstance(value, ast.Name):
        sets = _assigns(fn, value.id)
        if not sets or not all(isinstance(s, ast.Assign) and len(s.targets) == 1 for s in sets):
            return None
        whys = [_length(counts, rel, parents, fn, s.value, call, depth + 1, checked) for s in sets]
        return "; ".join(whys) if all(whys) else None
    if isinstance(value, ast.Call):
        f = source_text(value.func)
        if f == "np.fromiter":
            n = next((k.value for k in value.keywords if k.arg == "count"), None)
            counts.why.clear()
            if n is not None and counts.scalar(rel, parents, fn, n):
                return f"np.fromiter(count={source_text(n)}), a bounded request count"
            if n is not None and _scheduled_len(fn, n) and counts.scheduler_checked:
                return f"np.fromiter(count={source_text(n)}), len(scheduler_output.num_scheduled_tokens)"
            return None
        if f == "np.arange" and value.args and isinstance(value.args[0], ast.Name):
            n = value.args[0].id
            given = next((k.value for k in (call.keywords if call is not None else []) if k.arg == "num_reqs"), None)
            site = f"{rel}:{call.lineno}" if call is not None else ""
            if given is not None and source_text(given) == n and not _assigns(fn, n) and site in checked:
                return f"np.arange({n}), the batch's own num_reqs (a path of the V2 fact)"
            return None
        return None
    if isinstance(value, ast.Subscript) and source_text(value.value).endswith(".idx_mapping_np"):
        key = value.slice
        if isinstance(key, ast.Slice) and key.step is None:
            return f"a slice of {source_text(value.value)}"
        if _subset_index(fn, key, source_text(value.value)):
            return f"{source_text(value.value)}[{source_text(key)}], a subset (np.flatnonzero of an elementwise mask)"
        return None
    if isinstance(value, ast.Attribute) and value.attr == "idx_mapping_np":
        return f"{source_text(value)}, another batch's slot array"
    return None


def slot_array_lengths(root: str, counts, checked_sites=()) -> tuple[list[str], list[str], list[str]]:
    """``(checked, not checked, left out)`` sites (``"<file>:<line> <why>"``) of every
    ``idx_mapping_np`` a V2 batch is given (module docstring); ``counts`` a
    :class:`.demand_v2_requests.CountJudge` without induction; ``checked_sites``: the
    ``<file>:<line>`` of the V2 fact's checked paths (a batch's own ``num_reqs=`` counts only there)."""
    checked_sites = frozenset(checked_sites)
    checked, unchecked, left = [], [], []
    for rel, tree, parents in counts.files:
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                f = source_text(node.func).rsplit(".", 1)[-1]
                fn = enclosing_function(parents, node)
                is_cls = f == "cls" and fn is not None and class_of(parents, fn) == "InputBatch"
                if not (f in _CONSTRUCTORS or is_cls):
                    continue
                if any(k.arg is None for k in node.keywords) and f != "replace":
                    unchecked.append(f"{rel}:{node.lineno} {f}(**...): fields not read")
                    continue
                value = next((k.value for k in node.keywords if k.arg == "idx_mapping_np"), None)
                if value is None:
                    if node.args and f != "replace":
                        unchecked.append(f"{rel}:{node.lineno} {f}(...) positional: fields not read")
                    continue  # replace keeps the batch's own array
                call = node
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if not any(isinstance(t, ast.Attribute) and t.attr == "idx_mapping_np" for t in targets):
                    continue
                value, call, fn = node.value, None, enclosing_function(parents, node)
                if isinstance(node, ast.AugAssign) or value is None:
                    unchecked.append(f"{rel}:{node.lineno} in-place update of .idx_mapping_np")
                    continue
            else:
                continue
            site = f"{rel}:{node.lineno}"
            if rel == PCP and fn is not None and fn.name == "partition_batch":
                left.append(f"{site} the PCP local batch (finding 10; its reach is read per entry)")
                continue
            why = _length(counts, rel, parents, fn, value, call, checked=checked_sites)
            (checked if why else unchecked).append(f"{site} {why or source_text(value)[:80]}")
    return checked, unchecked, left


def shard_count(root: str, checked_sites=(), counts=None) -> tuple[str, str]:
    """``(result, why)`` of the shard's path ``batch_shard.py:284`` of the V2 fact: ``checked``
    when the subset statements and every slot array's length hold (module docstring), else ``not
    checked`` with where the reading stopped. ``checked_sites``: as :func:`slot_array_lengths`."""
    from .demand_v2_requests import CountJudge

    if counts is None:
        from .demand import unpadded_requests_bound

        counts = CountJudge(root, bool(unpadded_requests_bound(root).get("checked")), induction=False)
    files = {rel: (tree, parents) for rel, tree, parents in counts.files}
    if SHARD not in files:
        return "not checked", f"{SHARD} not found"
    tree, parents = files[SHARD]
    fn = next(
        (
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef)
            and n.name == "shard_sampler_inputs"
            and class_of(parents, n) == "BatchSharder"
        ),
        None,
    )
    if fn is None:
        return "not checked", "BatchSharder.shard_sampler_inputs not found"
    lines = []
    for name, value in SHARD_COUNT:
        got = _single(fn, name)
        if got is None or source_text(got) != value:
            return "not checked", f"shard_sampler_inputs: {name} = {value} not found (bound once)"
        lines.append(str(got.lineno))
    rep = [
        c
        for c in ast.walk(fn)
        if isinstance(c, ast.Call)
        and source_text(c.func) == "replace"
        and any(k.arg == "num_reqs" and source_text(k.value) == "num_local_reqs" for k in c.keywords)
        and c.args
        and source_text(c.args[0]) == "input_batch"
    ]
    if len(rep) != 1 or _assigns(fn, "input_batch"):
        return "not checked", "shard_sampler_inputs: replace(input_batch, num_reqs=num_local_reqs) not found once"
    ok, bad, left = slot_array_lengths(root, counts, checked_sites)
    if bad:
        return (
            "not checked",
            f"num_local_reqs <= len(input_batch.idx_mapping_np) (read); slot array length not read at {bad[0]}",
        )
    return (
        "checked",
        f"num_local_reqs = np.flatnonzero(input_batch.idx_mapping_np % tp_size == tp_rank).shape[0] "
        f"(batch_shard.py:{','.join(lines)}) <= len(input_batch.idx_mapping_np): a subset; every slot array a "
        f"V2 batch is given is bounded ({len(ok)} sites: {', '.join(s.split(' ', 1)[0].rsplit('/', 1)[-1] for s in ok)}); "
        f"left out: {'; '.join(s.split(' ', 1)[0] for s in left) or 'none'} (the PCP local batch, read per entry)",
    )
