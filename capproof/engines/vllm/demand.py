"""Demands derived by running vLLM's own code on symbolic sizes (the ``demands`` of the inventory).

Where the code that computes an extent can run on a CPU, it is run here, in the real venv, on
capproof :class:`~capproof.symbolic.SymInt` values, once per path through its branches on them
(:func:`capproof.symbolic.explore`), and the result is printed in the shape expression language
(:func:`capproof.inventory.to_expression`) into the entry's ``demands``: ``{"dim", "extent",
"how": "executed", "from": [the engine code run], "binds": {capacity name: expression},
"facts": [{"fact", "checked", "paths"}]}``. ``make verify`` never imports vLLM: its obligations
(``spec/vllm_0_33_derived.py``) evaluate the recorded expressions with
:func:`capproof.inventory.demand` and compare them with the capacities; ``make verify-real``
re-runs this derivation (``capproof inventory --check``) and fails when the committed one is stale.

Derived in vLLM 0.33.0 (each function below cites what it runs):

- the block table's **columns** (``vllm/v1/worker/block_table.py::BlockTable.block_table``,
  dimension 1): the blocks a request's row holds are the KV cache manager's
  ``SingleTypeKVCacheManager.allocate_new_blocks`` (``single_type_kv_cache_manager.py:370-410``),
  run with a manager built by vLLM's own ``FullAttentionManager.__init__`` (whose block size is
  ``spec.block_size * dcp`` for a DCP-sharded spec); the width they are written into is the
  runner's ``kv_cache_spec.max_num_blocks_per_req`` (``kv_cache_interface.py:610-615``) widened by
  ``get_block_table_width`` (``block_table.py:29-41``), run with a symbolic ``math.gcd`` (the gcd of
  the power of two 128 and a symbolic size, an exact ``select`` chain; the only stand-in).
- the block table's **rows** (dimension 0): the padded request count of a CUDA-graph batch,
  ``CudagraphDispatcher._create_padded_batch_descriptor`` (``cudagraph_dispatcher.py:133-152``),
  run on every path (FULL/piecewise, uniform decode or not); the unpadded count, bounded on every
  path that sets it as :func:`unpadded_requests_bound` checks in the source (the scheduler's
  asserts, the runner dropping unscheduled requests, the dummy run's ``min``); row indices come
  from ``InputBatch._register_add_request``, whose ``assert new_req_index < self.max_num_reqs``
  (``gpu_input_batch.py:329``) is found in the source (AST).

- the **rows of one-dimensional per-request buffers** of the V1 runner and input batch
  (:func:`derive_request_rows`): the block table's row extent, given to an entry only when every
  access the inventory recorded for it is a slice whose stop is bound (AST, through assignments,
  parameters at every call site in the file, closures) to the step's request count, an index the
  engine asserts below ``max_num_reqs``, or a whole-buffer operation (:func:`request_rows_accesses`).
  Also judged: an in-file ``for i in range(n)`` index with ``n`` such a count; an access of another
  object's non-tensor field of the same name (:func:`_other_object`: not the buffer); in other files,
  reads through an ``InputBatch`` parameter (its ``num_reqs``, ``len(req_ids)``, ``req_id_to_index``
  values, loop indexes over them, :mod:`.batch_reads`) and the runner's
  ``np.repeat(self.arange_np[:n], ...)`` index arrays (:func:`_arange_values`).

What is not run is said in ``facts``: a fact with ``checked: false`` is **assumed**, with the
paths it was not checked on; ``capproof coverage`` lists it.
"""

from __future__ import annotations

import ast
import math
import os
import re
from types import SimpleNamespace
from typing import Callable

from ...symbolic import SymInt
from ..tracing.accesses import parent_map
from ..tracing.derive import all_paths as _paths
from ..tracing.derive import function as _function
from ..tracing.derive import src as _src

__all__ = ["derive_all", "derive_request_rows", "request_rows_accesses", "symbolic_gcd", "DERIVATIONS", "BLOCK_TABLE"]

BLOCK_TABLE = "vllm/v1/worker/block_table.py::BlockTable.block_table"
#: Names a derived expression may use beyond the tracer's (all sizes >= 1 except the flags).
EXTRA_POSITIVE = ("num_tokens_need_slot", "num_tokens_padded", "num_reqs", "uniform_decode_query_len")
FLAGS = ("dcp_sharded", "full_uniform_decode")


def symbolic_gcd(a, b):
    """``math.gcd`` that also takes one symbolic argument when the other is a concrete power of
    two ``p``: ``gcd(p, n)`` is the largest power of two ``2**k <= p`` dividing ``n`` (an exact
    ``select`` chain). Anything else goes to :func:`math.gcd` (raises TypeError on two symbolic)."""
    from ...arith import select

    if isinstance(a, SymInt) and not isinstance(b, SymInt):
        a, b = b, a
    if not isinstance(b, SymInt):
        return math.gcd(a, b)
    if isinstance(a, SymInt) or a <= 0 or a & (a - 1):
        raise TypeError(f"symbolic gcd needs a concrete power of two, got {a!r}")
    result = 1
    k = 2
    while k <= a:
        result = select(b % k == 0, k, result)
        k *= 2
    return result


def _positive() -> tuple[str, ...]:
    from .trace import POSITIVE

    return tuple(POSITIVE) + EXTRA_POSITIVE


def _expr(term) -> str:
    from ...inventory import to_expression

    return to_expression(term, _positive(), ("num_speculative_tokens",))


class _BlockPool:
    """Stand-in for ``BlockPool``: ``get_new_blocks(k)`` records ``k`` (blocks are ids only);
    ``null_block`` a placeholder the constructor keeps."""

    null_block = None

    def __init__(self):
        self.asked = 0

    def get_new_blocks(self, k):
        self.asked = self.asked + k
        return []


def block_table_columns(dcp_sharded: bool) -> tuple[str, str, list[str]]:
    """``(demand, width, notes)`` of the block table's columns for a spec with ``dcp_sharded``:
    the blocks ``allocate_new_blocks`` gives a request that needs ``num_tokens_need_slot`` slots
    (a fresh request: the row's last written column + 1), and the width the runner allocates."""
    import z3
    from vllm.v1.core.single_type_kv_cache_manager import FullAttentionManager
    from vllm.v1.kv_cache_interface import AttentionSpec
    from vllm.v1.worker import block_table as bt

    bs, dcp, n, L = (SymInt.var(x) for x in ("block_size", "dcp", "num_tokens_need_slot", "max_model_len"))
    assume = [z3.Int(x) >= 1 for x in ("block_size", "dcp", "num_tokens_need_slot", "max_model_len")]
    spec = SimpleNamespace(block_size=bs, dcp_sharded=dcp_sharded, sliding_window=None, attention_chunk_size=None)

    def blocks():
        pool = _BlockPool()
        mgr = FullAttentionManager(spec, pool, False, 0, bs, dcp_world_size=dcp, pcp_world_size=1)
        mgr.allocate_new_blocks("r", n, n)
        return len(mgr.req_to_blocks["r"]) + pool.asked

    demand, notes = _paths(blocks, assume)
    cfg = SimpleNamespace(parallel_config=SimpleNamespace(decode_context_parallel_size=dcp))
    saved = bt.math
    bt.math = SimpleNamespace(gcd=symbolic_gcd)
    try:
        width, wnotes = _paths(
            lambda: bt.get_block_table_width(AttentionSpec.max_num_blocks_per_req(spec, cfg, L), bs), assume
        )
    finally:
        bt.math = saved
    return _expr(demand), _expr(width), notes + wnotes


def padded_requests() -> tuple[str, list[str]]:
    """The request count of a padded CUDA-graph batch (``_create_padded_batch_descriptor`` of
    ``vllm/v1/cudagraph_dispatcher.py``), on every path: ``full_uniform_decode`` (1: uniform decode
    under a FULL graph) selects the branch; ``num_tokens_padded`` is the capture size the batch's
    tokens are padded to and ``uniform_decode_query_len`` = 1 + num_speculative_tokens."""
    import z3
    from vllm.v1.cudagraph_dispatcher import CudagraphDispatcher

    mnr, tp, q, full = (
        SymInt.var(x) for x in ("max_num_reqs", "num_tokens_padded", "uniform_decode_query_len", "full_uniform_decode")
    )
    assume = [
        z3.Int("max_num_reqs") >= 1,
        z3.Int("num_tokens_padded") >= 1,
        z3.Int("uniform_decode_query_len") >= 1,
        z3.Or(z3.Int("full_uniform_decode") == 0, z3.Int("full_uniform_decode") == 1),
    ]

    class _Sizes:
        def __getitem__(self, num_tokens):
            return tp

    class _Mode:
        def has_mode(self, mode):
            return full == 1

    me = SimpleNamespace(
        vllm_config=SimpleNamespace(scheduler_config=SimpleNamespace(max_num_seqs=mnr)),
        uniform_decode_query_len=q,
        _bs_to_padded_graph_size=_Sizes(),
        cudagraph_mode=_Mode(),
    )

    def reqs():
        desc = CudagraphDispatcher._create_padded_batch_descriptor(me, tp, True, False, 0)
        return desc.num_reqs

    value, notes = _paths(reqs, assume)
    return _expr(value), notes


def _asserts_bound(root: str, file: str, function: str, name: str, bound: str) -> list[int]:
    """Lines of ``assert <name> < self.<bound>`` in ``function`` of ``file`` (AST)."""
    with open(os.path.join(root, file), encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == function:
            for sub in ast.walk(node):
                if (
                    isinstance(sub, ast.Assert)
                    and isinstance(sub.test, ast.Compare)
                    and len(sub.test.ops) == 1
                    and isinstance(sub.test.ops[0], ast.Lt)
                    and ast.unparse(sub.test.left) == name
                    and ast.unparse(sub.test.comparators[0]) == f"self.{bound}"
                ):
                    lines.append(sub.lineno)
    return lines


def _bounded_by_min(root: str, directory: str, method: str, bound: str) -> tuple[list[str], list[str]]:
    """Call sites of ``.<method>(request_id, num_tokens, ...)`` under ``directory``: those whose
    ``num_tokens`` argument is a name assigned, in the same function, only from
    ``min(..., self.<bound>)`` (checked) and the others (not checked), as ``file:line``."""
    checked, unchecked = [], []
    base = os.path.join(root, directory)
    for dirpath, _, files in os.walk(base):
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            try:
                tree = ast.parse(open(path, encoding="utf-8").read())
            except (OSError, SyntaxError):
                continue
            for fn in ast.walk(tree):
                if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                for call in ast.walk(fn):
                    if not (
                        isinstance(call, ast.Call)
                        and isinstance(call.func, ast.Attribute)
                        and call.func.attr == method
                        and len(call.args) >= 2
                    ):
                        continue
                    arg = call.args[1]
                    ok = False
                    if isinstance(arg, ast.Name):
                        sets = [
                            a
                            for a in ast.walk(fn)
                            if isinstance(a, ast.Assign)
                            and any(isinstance(t, ast.Name) and t.id == arg.id for t in a.targets)
                        ]
                        ok = bool(sets) and all(
                            isinstance(a.value, ast.Call)
                            and ast.unparse(a.value.func) == "min"
                            and any(ast.unparse(x) == f"self.{bound}" for x in a.value.args)
                            for a in sets
                        )
                    (checked if ok else unchecked).append(f"{rel}:{call.lineno}")
    return checked, unchecked


def unpadded_requests_bound(root: str) -> dict:
    """Whether the unpadded request count of a step is at most ``max_num_reqs`` on the paths that
    set it, each checked by reading vLLM's code (AST), as a fact record ``{"fact", "checked",
    "paths"}``:

    - a scheduled step: ``Scheduler.schedule`` asserts ``len(self.running) <= self.max_num_running_reqs``
      and that the scheduled requests are at most ``len(self.running)`` (the engine stops otherwise),
      ``max_num_running_reqs`` is ``scheduler_config.max_num_seqs``, every ``schedule`` override of
      ``vllm/v1/core/sched`` calls it, and the runner's ``_update_states`` removes every request not
      scheduled from its persistent batch (so its ``num_reqs`` counts scheduled requests);
    - a dummy run (``_dummy_run``): every assignment of ``num_reqs`` is a ``min`` with
      ``max_num_reqs`` (or ``num_decode_tokens + 1`` with ``num_decode_tokens = min(max_num_reqs - 1, ...)``),
      ``max_num_reqs = self.scheduler_config.max_num_seqs``.
    """
    checked: list[str] = []
    unchecked: list[str] = []
    sched = "vllm/v1/core/sched/scheduler.py"
    fn = _function(root, sched, "schedule", "Scheduler")
    asserts = [a for a in ast.walk(fn) if isinstance(a, ast.Assert)] if fn is not None else []
    running = [a.lineno for a in asserts if _src(a.test) == "len(self.running)<=self.max_num_running_reqs"]
    scheduled = [
        a.lineno
        for a in asserts
        if _src(a.test).endswith("<=len(self.running)") and "scheduled_running_reqs" in _src(a.test)
    ]
    init = _function(root, sched, "__init__", "Scheduler")
    cap = (
        [
            n.lineno
            for n in ast.walk(init)
            if isinstance(n, ast.Assign)
            and _src(n.targets[0]) == "self.max_num_running_reqs"
            and _src(n.value) == "self.scheduler_config.max_num_seqs"
        ]
        if init
        else []
    )
    (checked if running and scheduled and cap else unchecked).append(
        f"{sched}:{','.join(map(str, running + scheduled))} (assert len(running) <= max_num_running_reqs, scheduled <= "
        f"len(running); max_num_running_reqs = max_num_seqs at :{','.join(map(str, cap))})"
    )
    base = os.path.join(root, "vllm/v1/core/sched")
    for f in sorted(os.listdir(base)):
        if not f.endswith(".py") or f in ("scheduler.py", "interface.py"):
            continue
        tree = ast.parse(open(os.path.join(base, f), encoding="utf-8").read())
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name == "schedule":
                calls = any(isinstance(c, ast.Call) and _src(c.func) == "super().schedule" for c in ast.walk(node))
                (checked if calls else unchecked).append(
                    f"vllm/v1/core/sched/{f}:{node.lineno} (schedule override "
                    + ("calls super().schedule)" if calls else "does not call super().schedule)")
                )
    runner = "vllm/v1/worker/gpu_model_runner.py"
    upd = _function(root, runner, "_update_states", "GPUModelRunner")
    removes = (
        [
            n.lineno
            for n in ast.walk(upd)
            if isinstance(n, ast.For)
            and _src(n.iter) == "unscheduled_req_ids"
            and any(isinstance(c, ast.Call) and _src(c.func) == "self.input_batch.remove_request" for c in ast.walk(n))
        ]
        if upd
        else []
    )
    (checked if removes else unchecked).append(
        f"{runner}:{','.join(map(str, removes)) or '?'} (_update_states removes "
        "every unscheduled request from the persistent batch)"
    )
    dummy = _function(root, runner, "_dummy_run", "GPUModelRunner")
    ok_lines, bad_lines = [], []
    if dummy is not None:
        assigns = [n for n in ast.walk(dummy) if isinstance(n, ast.Assign) and len(n.targets) == 1]
        mnr = [n for n in assigns if _src(n.targets[0]) == "max_num_reqs"]
        mnr_ok = bool(mnr) and all(_src(n.value) == "self.scheduler_config.max_num_seqs" for n in mnr)
        decode_ok = all(
            _src(n.value).startswith("min(max_num_reqs-1,")
            for n in assigns
            if _src(n.targets[0]) == "num_decode_tokens"
        )
        for n in assigns:
            if _src(n.targets[0]) != "num_reqs":
                continue
            v = _src(n.value)
            good = mnr_ok and (
                (v.startswith("min(") and "max_num_reqs" in v.split("(", 1)[1].split(",")[0] + v.rsplit(",", 1)[-1])
                or (v == "num_decode_tokens+1" and decode_ok)
            )
            (ok_lines if good else bad_lines).append(n.lineno)
    (checked if ok_lines and not bad_lines else unchecked).append(
        f"{runner}:{','.join(map(str, ok_lines + bad_lines)) or '?'} (_dummy_run: num_reqs = min(..., max_num_reqs))"
        + (f"; not of that form: {bad_lines}" if bad_lines else "")
    )
    return {
        "fact": "num_reqs <= max_num_reqs (unpadded batch: scheduler's running requests, dummy run)",
        "checked": not unchecked,
        "engine_stops": "Python asserts (vLLM runs without -O)",
        "paths": {"checked (ast)": checked, "not checked": unchecked},
    }


def derive_block_table(root: str) -> list[dict]:
    """The ``demands`` of ``BlockTable.block_table`` (see the module docstring)."""
    cols = {flag: block_table_columns(flag) for flag in (True, False)}
    demand = f"select(dcp_sharded == 1, {cols[True][0]}, {cols[False][0]})"
    width = f"select(dcp_sharded == 1, {cols[True][1]}, {cols[False][1]})"
    checked, unchecked = _bounded_by_min(root, "vllm/v1/core", "allocate_new_blocks", "max_model_len")
    # the coordinator forwards its num_tokens to every group's manager: its own callers are the ones that bound it
    forwarded = [s for s in checked + unchecked if s.startswith("vllm/v1/core/kv_cache_coordinator.py")]
    callers = [s for s in checked if s not in forwarded]
    fact_cols = {
        "fact": "num_tokens_need_slot <= max_model_len",
        "checked": bool(callers) and not [s for s in unchecked if s not in forwarded],
        "paths": {
            "checked (ast: min(..., self.max_model_len))": callers,
            "forwarded unchanged (coordinator)": forwarded,
            "not checked": [s for s in unchecked if s not in forwarded]
            + [
                "vllm/v1/core/kv_cache_manager.py allocate_new_computed_blocks (prefix-cache hits; "
                "blocks for computed tokens <= num_tokens_need_slot, not run)"
            ],
        },
    }
    rows, row_notes = padded_requests()
    asserts = _asserts_bound(
        root, "vllm/v1/worker/gpu_input_batch.py", "_register_add_request", "new_req_index", "max_num_reqs"
    )
    unpadded = unpadded_requests_bound(root)
    # a fact checked on every path that sets the unpadded count bounds it in the extent: beyond
    # max_num_reqs the engine has stopped at the scheduler's assert (and a dummy run never gets there)
    plain = "select(num_reqs <= max_num_reqs, num_reqs, 0)" if unpadded["checked"] else "num_reqs"
    return [
        {
            "dim": 0,
            "how": "executed",
            "extent": f"select(padded == 1, {rows}, {plain})",
            "index_bound": "max_num_reqs" if asserts else "",
            "from": [
                "vllm/v1/cudagraph_dispatcher.py:133-152 _create_padded_batch_descriptor (executed, every path)",
                *(
                    f"vllm/v1/worker/gpu_input_batch.py:{ln} assert new_req_index < self.max_num_reqs (ast)"
                    for ln in asserts
                ),
                "vllm/v1/worker/gpu_model_runner.py:2305 get_device_tensor(num_reqs_padded), :5687 "
                "commit_block_table(num_reqs_padded), :1944 commit_block_table(num_reqs) (ast accesses)",
            ],
            "notes": row_notes,
            "facts": [unpadded],
        },
        {
            "dim": 1,
            "how": "executed",
            "extent": demand,
            "binds": {"block_table_width": width},
            "from": [
                "vllm/v1/core/single_type_kv_cache_manager.py:69-110 FullAttentionManager.__init__ (executed)",
                "vllm/v1/core/single_type_kv_cache_manager.py:370-410 allocate_new_blocks (executed, every path)",
                "vllm/v1/kv_cache_interface.py:610-615 AttentionSpec.max_num_blocks_per_req (executed)",
                "vllm/v1/worker/block_table.py:29-41 get_block_table_width (executed; math.gcd symbolic)",
                "vllm/v1/worker/block_table.py:125 append_row writes [row, start:start + num_blocks] (ast access)",
            ],
            "notes": cols[True][2] + cols[False][2],
            "facts": [fact_cols],
        },
    ]


KERNEL_BLOCK_TABLE = "vllm/v1/worker/utils.py::AttentionGroup.kernel_block_table"
KERNEL_BLOCK_OFFSETS = "vllm/v1/worker/utils.py::AttentionGroup.kernel_block_offsets"


class _Recorded:
    """What a stand-in call received (``torch.zeros`` shape, a builder's keyword arguments)."""

    def __init__(self):
        self.calls: list = []


def kernel_block_table_columns(
    group_sharded: bool, layer_sharded: bool, which: str = "columns"
) -> tuple[str, str, list[str]]:
    """``(demand, width, notes)`` of ``AttentionGroup.kernel_block_table``'s columns when the KV
    cache group is a ``UniformTypeKVCacheSpecs`` of two layer specs (the DSA indexer and MLA layers
    of one group, vLLM #50823) whose DCP sharding is ``group_sharded``/``layer_sharded``:

    - width: ``AttentionGroup.create_metadata_builders`` (``vllm/v1/worker/utils.py:284-336``) run
      with a per-layer spec, the kernel block size already chosen (``self.kernel_block_size``:
      ``select_common_block_size`` is not run) and stand-ins for ``torch.zeros`` (records the shape)
      and the backend's builder (records ``block_table_width``);
    - demand: ``map_to_kernel_block_table`` (``utils.py:380-395``) run on the runner's block table,
      whose width is the group spec's ``UniformTypeKVCacheSpecs.max_num_blocks_per_req``
      (``kv_cache_interface.py:1333-1345``: its members' method is run; the set it builds of their
      widths cannot hold symbolic values, so the common value and its assert are taken as that
      method states them) widened by ``get_block_table_width``; the extent is the column stop of
      the slice it writes. ``which="offsets"``: the kernel blocks per manager block the same call
      broadcasts ``kernel_block_offsets`` over (``out.unflatten(1, (cols, -1))``: the slice's width
      over the runner's columns). ``which="builder"``: the columns, against the
      ``block_table_width`` the same call hands the backend's builder (the DSA indexer's buffer)."""
    import z3
    from vllm.v1.kv_cache_interface import AttentionSpec
    from vllm.v1.worker import block_table as bt
    from vllm.v1.worker import utils as wu
    from vllm.v1.worker.utils import AttentionGroup

    bs, kbs, dcp, L, mnr = (
        SymInt.var(x) for x in ("block_size", "kernel_block_size", "dcp", "max_model_len", "max_num_reqs")
    )
    assume = [z3.Int(x) >= 1 for x in ("block_size", "kernel_block_size", "dcp", "max_model_len", "max_num_reqs")]
    assume.append(z3.Int("block_size") % z3.Int("kernel_block_size") == 0)

    def spec(sharded):
        me = SimpleNamespace(block_size=bs, dcp_sharded=sharded)
        me.max_num_blocks_per_req = lambda cfg, max_len: AttentionSpec.max_num_blocks_per_req(me, cfg, max_len)
        me.copy_with_new_block_size = lambda b: SimpleNamespace(block_size=b, dcp_sharded=sharded)
        return me

    cfg = SimpleNamespace(
        parallel_config=SimpleNamespace(decode_context_parallel_size=dcp),
        model_config=SimpleNamespace(max_model_len=L),
        scheduler_config=SimpleNamespace(max_num_seqs=mnr),
    )
    group = SimpleNamespace(kv_cache_specs={"indexer": spec(layer_sharded), "mla": spec(group_sharded)})

    def width():
        zeros = _Recorded()

        class Builder:
            requires_block_table_width = True

            def __init__(self, *args, **kwargs):
                zeros.calls.append(("builder", kwargs.get("block_table_width")))

        me = SimpleNamespace(
            kv_cache_spec=spec(layer_sharded),
            kernel_block_size=kbs,
            layer_names=["indexer"],
            backend=SimpleNamespace(get_builder_cls=lambda: Builder),
        )
        saved = wu.torch, bt.math, wu.get_block_table_width
        wu.torch = SimpleNamespace(
            zeros=lambda *shape, **kw: zeros.calls.append(("zeros", shape)), arange=lambda *a, **kw: None, int32=None
        )
        bt.math = SimpleNamespace(gcd=symbolic_gcd)
        try:
            AttentionGroup.create_metadata_builders(me, cfg, "cpu", kbs, 1)
        finally:
            wu.torch, bt.math, wu.get_block_table_width = saved
        shapes = [c[1] for c in zeros.calls if c[0] == "zeros"]
        built = [c[1] for c in zeros.calls if c[0] == "builder"]
        if not shapes or not built:
            raise RuntimeError("create_metadata_builders allocated no kernel block table")
        return built[0] if which == "builder" else shapes[0][2]

    def demand():
        saved = bt.math
        bt.math = SimpleNamespace(gcd=symbolic_gcd)
        try:
            # UniformTypeKVCacheSpecs.max_num_blocks_per_req puts its members' widths in a set (symbolic
            # values cannot be hashed): its members' own method runs, and the common value is returned
            # as that method does, with its assert (members agree) as an engine stop
            widths = [m.max_num_blocks_per_req(cfg, L) for m in group.kv_cache_specs.values()]
            if any(w != widths[0] for w in widths[1:]):
                raise AssertionError(
                    "All layers in the same KV cache group must need the same number of block table entries"
                )
            cols = bt.get_block_table_width(widths[0], bs)
        finally:
            bt.math = saved
        seen = []

        class Table:
            def __getitem__(self, key):
                seen.append(key)
                return SimpleNamespace(unflatten=lambda *a: None)

        me = SimpleNamespace(
            kernel_block_size=kbs,
            kernel_block_table=Table(),
            kernel_block_offsets=None,
            kv_cache_spec=spec(layer_sharded),
            kernel_block_stride=0,
        )
        saved = wu.torch
        wu.torch = SimpleNamespace(add=lambda *a, **kw: None)
        try:
            AttentionGroup.map_to_kernel_block_table(
                me, SimpleNamespace(shape=(mnr, cols), unsqueeze=lambda d: None), 0
            )
        finally:
            wu.torch = saved
        return (
            seen[0][2].stop if which in ("columns", "builder") else seen[0][2].stop // cols
        )  # unflatten(1, (cols, -1))

    w, wnotes = _paths(width, assume)
    d, dnotes = _paths(demand, assume)
    return _expr(d), _expr(w), wnotes + dnotes


def derive_kernel_block_table(root: str) -> list[dict]:
    """The column demand of ``AttentionGroup.kernel_block_table`` (dimension 2), for a group whose
    layers are both DCP-sharded or both not (``dcp_sharded``), and the engine's assert when they differ."""
    same = {flag: kernel_block_table_columns(flag, flag) for flag in (True, False)}
    mixed = kernel_block_table_columns(True, False)
    return [
        {
            "dim": 2,
            "how": "executed",
            "extent": f"select(dcp_sharded == 1, {same[True][0]}, {same[False][0]})",
            "binds": {"width": f"select(dcp_sharded == 1, {same[True][1]}, {same[False][1]})"},
            "from": [
                "vllm/v1/worker/utils.py:284-336 AttentionGroup.create_metadata_builders (executed; kernel block "
                "size given, backend builder and torch.zeros stand-ins)",
                "vllm/v1/worker/utils.py:380-395 map_to_kernel_block_table (executed; torch.add stand-in)",
                "vllm/v1/kv_cache_interface.py:1333-1345 UniformTypeKVCacheSpecs.max_num_blocks_per_req (members' "
                "method executed; the set of their widths and its assert restated: symbolic values cannot be hashed)",
                "vllm/v1/kv_cache_interface.py:610-615 AttentionSpec.max_num_blocks_per_req (executed)",
                "vllm/v1/worker/block_table.py:29-41 get_block_table_width (executed; math.gcd symbolic)",
            ],
            "notes": same[True][2]
            + same[False][2]
            + [
                f"layers of one group with different DCP sharding: demand {mixed[0]} (the group spec asserts they agree)"
            ],
            "facts": [],
        }
    ]


def derive_kernel_block_offsets(root: str) -> list[dict]:
    """The length ``map_to_kernel_block_table`` broadcasts ``AttentionGroup.kernel_block_offsets``
    over (dimension 0): kernel blocks per manager block, as that method computes it."""
    d, _, notes = kernel_block_table_columns(True, True, which="offsets")
    return [
        {
            "dim": 0,
            "how": "executed",
            "extent": d,
            "from": [
                "vllm/v1/worker/utils.py:380-395 map_to_kernel_block_table (executed; torch.add stand-in; the "
                "broadcast length is the written slice's width over the runner's columns, torch's unflatten -1)"
            ],
            "notes": notes,
            "facts": [],
        }
    ]


# ---------------------------------------------------------------------------------------------
# Request rows of the runner's and the input batch's one-dimensional per-request buffers.

#: Files whose per-request buffers' row counts are bound here, and how the extent names there are bound.
ROW_FILES = ("vllm/v1/worker/gpu_model_runner.py", "vllm/v1/worker/gpu_input_batch.py")
#: Ops of an access that touch at most the allocation (a slice with no stop, a whole-buffer copy).
WHOLE_OPS = ("copy_to_gpu", "fill_", "fill_.gpu", "fill_.cpu", "copy_", "copy_.gpu", "copy_.cpu", "zero_", "zero_.gpu")
SLICE_OPS = ("slice", "slice.np", "slice.cpu", "slice.gpu", "copy_to_gpu (slice)")
#: Shapes of the one-dimensional request-row buffers, each with the constant its slice stops may
#: add to a request count (``[1 + max_num_reqs]`` offsets rows are sliced ``[: num_reqs + 1]``).
ROW_SHAPES = {"max_num_reqs": 0, "1 + max_num_reqs": 1}


class _Rows:
    """How a request-count name in one file of the runner is bound (AST): ``kind(fn, expr)`` is
    ``"unpadded"`` (the persistent batch's ``num_reqs`` or the dummy run's, bounded by
    :func:`unpadded_requests_bound`), ``"padded"`` (the dispatcher's ``batch_desc.num_reqs`` with the
    unpadded count as its fallback), ``"none"`` (a ``None`` a later ``x = x or y`` replaces) or None
    (not derived: anything else). A parameter is bound by every call site of its method in the same
    file (``self.<method>(...)``); a method with no call site there is not derived."""

    def __init__(self, root: str, file: str):
        self.file = file
        with open(os.path.join(root, file), encoding="utf-8") as fh:
            self.tree = ast.parse(fh.read())
        self.functions = [n for n in ast.walk(self.tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        self.why: list[str] = []

    def enclosing(self, line: int):
        best = None
        for fn in self.functions:
            if fn.lineno <= line <= (fn.end_lineno or fn.lineno) and (best is None or fn.lineno > best.lineno):
                best = fn
        return best

    def kind(self, fn, expr: ast.AST, depth: int = 0):
        if depth > 6:
            return None
        src = _src(expr)
        if isinstance(expr, ast.Constant) and expr.value is None:
            return "none"
        if isinstance(expr, ast.Constant) and expr.value == 0 and type(expr.value) is int:
            return "unpadded"  # a literal 0: no rows
        if src == "self.input_batch.num_reqs":
            return "unpadded"
        if src == "self.num_reqs" and self.file.endswith("gpu_input_batch.py"):
            prop = _function_in(self.tree, "num_reqs", "InputBatch")
            ok = prop is not None and any(
                _src(r.value) == "len(self.req_id_to_index)" for r in ast.walk(prop) if isinstance(r, ast.Return)
            )
            return "unpadded" if ok else None
        if isinstance(expr, ast.IfExp):
            a, b = self.kind(fn, expr.body, depth + 1), self.kind(fn, expr.orelse, depth + 1)
            if src.startswith("batch_desc.num_reqsifbatch_desc.num_reqsisnotNoneelse"):
                return "padded" if b == "unpadded" else None
            return _join(a, b)
        if isinstance(expr, ast.Name):
            return self.name(fn, expr.id, depth)
        return None

    def name(self, fn, name: str, depth: int):
        if fn.name == "_dummy_run" and name == "num_reqs":
            return "unpadded"  # every assignment there is checked by unpadded_requests_bound
        assigns = [
            a
            for a in ast.walk(fn)
            if isinstance(a, (ast.Assign, ast.AnnAssign))
            and any(
                isinstance(t, ast.Name) and t.id == name
                for t in (a.targets if isinstance(a, ast.Assign) else [a.target])
            )
        ]
        params = [a.arg for a in fn.args.args + fn.args.kwonlyargs]
        kinds = []
        fallback = None
        for a in assigns:
            v = a.value
            if v is None:
                continue
            if (
                isinstance(v, ast.BoolOp)
                and isinstance(v.op, ast.Or)
                and len(v.values) == 2
                and _src(v.values[0]) == name
                and name in params
            ):
                fallback = self.kind(fn, v.values[1], depth + 1)
                kinds.append(fallback)
                continue
            kinds.append(self.kind(fn, v, depth + 1))
        if name in params:
            pk = self.param(fn, name, depth)
            kinds.append(None if pk is None else (fallback or "none" if pk == "none" else pk))
        elif not assigns:
            outer = self.outer(fn)
            return self.name(outer, name, depth + 1) if outer is not None else None
        out = kinds[0] if kinds else None
        for k in kinds[1:]:
            out = _join(out, k)
        return out

    def outer(self, fn):
        """The function ``fn`` is nested in (its closure's names are bound there), or None."""
        best = None
        for g in self.functions:
            if (
                g is not fn
                and g.lineno < fn.lineno
                and (fn.end_lineno or 0) <= (g.end_lineno or 0)
                and (best is None or g.lineno > best.lineno)
            ):
                best = g
        return best

    def param(self, fn, name: str, depth: int):
        index = [a.arg for a in fn.args.args].index(name) if name in [a.arg for a in fn.args.args] else None
        kinds = []
        for caller in self.functions:
            for call in ast.walk(caller):
                if not (isinstance(call, ast.Call) and _src(call.func) == f"self.{fn.name}"):
                    continue
                arg = next((k.value for k in call.keywords if k.arg == name), None)
                if arg is None and index is not None and 0 < index <= len(call.args):
                    arg = call.args[index - 1]
                if arg is None:
                    kinds.append("none")  # the default (None for these parameters), replaced by `or`
                    continue
                k = self.kind(caller, arg, depth + 1)
                self.why.append(f"{self.file}:{call.lineno} {fn.name}({name}={_src(arg)}) -> {k}")
                kinds.append(k)
        if not kinds:
            return None
        out = kinds[0]
        for k in kinds[1:]:
            out = _join(out, k)
        return out


def _join(a, b):
    if a is None or b is None:
        return None
    if a == b:
        return a
    if "none" in (a, b):
        return b if a == "none" else a  # a None stop slices the whole allocation: never beyond it
    return "padded"  # padded and unpadded: the padded extent bounds both


def _function_in(tree, name: str, cls: str):
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == name:
                    return item
    return None


def _copy_slice_ok(root: str) -> bool:
    """``vllm.v1.utils.copy_slice(from, to, length)`` copies ``to[:length]`` from ``from[:length]`` (AST)."""
    with open(os.path.join(root, "vllm/v1/utils.py"), encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "copy_slice"), None)
    return fn is not None and any(
        _src(r.value) == "to_tensor[:length].copy_(from_tensor[:length],non_blocking=True)"
        for r in ast.walk(fn)
        if isinstance(r, ast.Return)
    )


def _subscript_at(tree, attribute: str, line: int):
    """The slice or index of the one ``self.<attribute>[...]`` subscript on ``line`` (AST), or None."""
    found = [
        n.slice
        for n in ast.walk(tree)
        if isinstance(n, ast.Subscript)
        and n.lineno == line
        and _src(n.value)
        in (f"self.{attribute}", f"self.{attribute}.np", f"self.{attribute}.cpu", f"self.{attribute}.gpu")
    ]
    return found[0] if len(found) == 1 and not isinstance(found[0], ast.Tuple) else None


def _register_index(rt, fn, name: str) -> str | None:
    """Where index ``name`` of ``fn`` is bounded by ``max_num_reqs``: every assignment of it in ``fn``
    is ``self._register_add_request(...)``, whose ``assert new_req_index < self.max_num_reqs`` (and
    return of that name) is found in ``InputBatch`` (AST); else None."""
    if not name.isidentifier():
        return None
    assigns = [
        a
        for a in ast.walk(fn)
        if isinstance(a, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in a.targets)
    ]
    if not assigns or not all(
        isinstance(a.value, ast.Call) and _src(a.value.func) == "self._register_add_request" for a in assigns
    ):
        return None
    reg = _function_in(rt.tree, "_register_add_request", "InputBatch")
    if reg is None:
        return None
    asserts = [
        a.lineno
        for a in ast.walk(reg)
        if isinstance(a, ast.Assert) and _src(a.test) == "new_req_index<self.max_num_reqs"
    ]
    returns = [r for r in ast.walk(reg) if isinstance(r, ast.Return)]
    if not asserts or not returns or not all(r.value is not None and _src(r.value) == "new_req_index" for r in returns):
        return None
    return f"index < max_num_reqs: assert at {rt.file}:{asserts[0]}"


_MAP_STORE = re.compile(
    r"\b(input_batch|gpu_input_batch)\s*\.\s*req_id_to_index\s*(\[[^\]]*\]\s*=(?!=)|\.(update|setdefault)\(|=(?!=))"
)


def _map_values_bounded(root: str, batch) -> str | None:
    """Where every value of the V1 ``InputBatch.req_id_to_index`` is ``< max_num_reqs`` (AST), or
    None. Every store of ``self.req_id_to_index`` in ``InputBatch`` is one of: a name every
    assignment of which is ``self._register_add_request(...)`` (asserted ``< max_num_reqs``,
    :func:`_register_index`); the swap of two of its own values (a permutation); a name ``x`` after
    ``if x >= y: break`` in the same loop where ``y`` indexes ``self._req_ids`` before the store
    (:func:`_list_guarded`, with ``len(_req_ids) <= max_num_reqs``, :func:`_req_ids_bounded`). The
    map is created empty in ``__init__``, no other method rebinds it, and no other file of ``vllm/``
    stores into an ``input_batch.req_id_to_index``. ``batch``: the :class:`_Rows` of
    ``gpu_input_batch.py``."""
    cls = next((n for n in ast.walk(batch.tree) if isinstance(n, ast.ClassDef) and n.name == "InputBatch"), None)
    if cls is None or _req_ids_bounded(batch) is None:
        return None
    lines = []
    for node in ast.walk(cls):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if _src(node.func.value) == "self.req_id_to_index" and node.func.attr in ("update", "setdefault"):
                return None
        if not isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for t in targets:
            if _src(t) == "self.req_id_to_index":
                fn = batch.enclosing(node.lineno)
                if fn is None or fn.name != "__init__" or _src(node.value) != "{}":
                    return None
                continue
            stores = t.elts if isinstance(t, ast.Tuple) else [t]
            if not any(isinstance(x, ast.Subscript) and _src(x.value) == "self.req_id_to_index" for x in stores):
                continue
            fn = batch.enclosing(node.lineno)
            v = node.value
            if (
                isinstance(t, ast.Tuple)
                and isinstance(v, ast.Tuple)
                and len(t.elts) == len(v.elts) == 2
                and all(
                    isinstance(x, ast.Subscript) and _src(x.value) == "self.req_id_to_index" for x in t.elts + v.elts
                )
                and {_src(x.slice) for x in t.elts} == {_src(x.slice) for x in v.elts}
            ):
                lines.append(f"{node.lineno} (swap)")
                continue
            if isinstance(t, ast.Tuple) or not isinstance(v, ast.Name) or fn is None:
                return None
            if _register_index(batch, fn, v.id) is not None:
                lines.append(f"{node.lineno} (_register_add_request)")
                continue
            loop = next(
                (
                    w
                    for w in ast.walk(fn)
                    if isinstance(w, (ast.While, ast.For)) and any(c is node for b in w.body for c in ast.walk(b))
                ),
                None,
            )
            guard = None
            if loop is not None:
                for stmt in loop.body:
                    if stmt.lineno >= node.lineno:
                        break
                    if (
                        isinstance(stmt, ast.If)
                        and isinstance(stmt.test, ast.Compare)
                        and _src(stmt.test.left) == v.id
                        and len(stmt.test.ops) == 1
                        and isinstance(stmt.test.ops[0], ast.GtE)
                        and isinstance(stmt.test.comparators[0], ast.Name)
                        and isinstance(stmt.body[-1], (ast.Break, ast.Return, ast.Continue, ast.Raise))
                    ):
                        guard = stmt.test.comparators[0].id
            if guard is None or _list_guarded(batch, fn, guard, node.lineno) is None:
                return None
            lines.append(f"{node.lineno} ({v.id} < {guard}, {guard} indexes _req_ids)")
    if not lines:
        return None
    for dirpath, _dirs, files in os.walk(os.path.join(root, "vllm")):
        for f in sorted(files):
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            if f.endswith(".py") and rel != batch.file and "/v1/worker/gpu/" not in rel:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    if _MAP_STORE.search(fh.read()):
                        return None
    return f"req_id_to_index values < max_num_reqs: stores at {batch.file}:{', '.join(lines)}"


def _map_index(root: str, rows: dict, rt, fn, name: str) -> str | None:
    """Where index ``name`` of ``fn`` is a value of the V1 ``req_id_to_index`` (every assignment of
    it in ``fn`` is ``self.input_batch.req_id_to_index[...]`` in the runner, ``self.req_id_to_index[...]``
    or ``.pop(..., None)``/``.get(...)`` in ``InputBatch``; a ``None`` indexes a new axis, never past
    the allocation) and :func:`_map_values_bounded` holds, or None."""
    if not name.isidentifier():
        return None
    here = "self.input_batch.req_id_to_index" if rt.file.endswith("gpu_model_runner.py") else "self.req_id_to_index"
    assigns = [
        a
        for a in ast.walk(fn)
        if isinstance(a, (ast.Assign, ast.AnnAssign))
        and any(
            isinstance(t, ast.Name) and t.id == name for t in (a.targets if isinstance(a, ast.Assign) else [a.target])
        )
    ]
    params = [a.arg for a in fn.args.args + fn.args.kwonlyargs]

    def ok(v) -> bool:
        if isinstance(v, ast.Subscript) and _src(v.value) == here:
            return True
        return (
            isinstance(v, ast.Call)
            and isinstance(v.func, ast.Attribute)
            and _src(v.func.value) == here
            and (v.func.attr == "get" or (v.func.attr == "pop" and len(v.args) == 2 and _src(v.args[1]) == "None"))
        )

    if not assigns or name in params or not all(a.value is not None and ok(a.value) for a in assigns):
        return None
    key = "vllm/v1/worker/gpu_input_batch.py"
    if "map" not in rows:
        batch = rows.setdefault(key, _Rows(root, key))
        rows["map"] = _map_values_bounded(root, batch)
    return rows["map"]


def _prev_facts(root: str, rows: dict) -> str | None:
    """Where a previous-step row (a ``prev_req_id_to_index`` value, a ``prev_positions`` value) is
    below ``max_num_reqs`` or ``-1`` (:mod:`.fact_prev_rows`, with ``len(_req_ids) <= max_num_reqs``
    by :func:`_req_ids_bounded`), cached in ``rows``; None when either is not checked."""
    if "prev" not in rows:
        from .fact_prev_rows import prev_map_values, prev_positions_values

        key = "vllm/v1/worker/gpu_input_batch.py"
        length = _req_ids_bounded(rows.setdefault(key, _Rows(root, key)))
        values, _ = prev_map_values(root)
        positions, _ = prev_positions_values(root)
        rows["prev"] = f"{values}; {positions}; {length}" if length and values and positions else None
    return rows["prev"]


def _prev_index(root: str, rows: dict, rt, fn, name: str) -> str | None:
    """Where index ``name`` of ``fn`` in the runner is a previous-step row: every assignment of it is
    ``m.get(k)`` or ``m[k]`` with ``m`` the batch's ``prev_req_id_to_index`` or a local bound only
    to it, or ``X if test else None`` of such (None indexes a new axis, never an element), and
    :func:`_prev_facts` holds; else None."""
    if not name.isidentifier() or not rt.file.endswith("gpu_model_runner.py"):
        return None
    here = "self.input_batch.prev_req_id_to_index"
    from .batch_reads import bindings

    def the_map(m) -> bool:
        if _src(m) == here:
            return True
        if not isinstance(m, ast.Name):
            return False
        alias = bindings(fn, m.id)  # a local bound only to the field (its uses: fact_prev_rows)
        return len(alias) == 1 and isinstance(alias[0], ast.Assign) and _src(alias[0].value) == here

    def ok(v) -> bool:
        if isinstance(v, ast.IfExp):
            return ok(v.body) and isinstance(v.orelse, ast.Constant) and v.orelse.value is None
        if isinstance(v, ast.Subscript) and the_map(v.value):
            return True
        return (
            isinstance(v, ast.Call)
            and isinstance(v.func, ast.Attribute)
            and the_map(v.func.value)
            and v.func.attr == "get"
            and len(v.args) == 1
            and not v.keywords
        )

    sets = bindings(fn, name)
    if not sets or not all(isinstance(a, ast.Assign) and len(a.targets) == 1 and ok(a.value) for a in sets):
        return None
    fact = _prev_facts(root, rows)
    return f"{name} = {_src(sets[0].value)} (:{sets[0].lineno}); {fact}" if fact else None


def _prev_where(root: str, rows: dict, rt, fn, node) -> str | None:
    """Where index ``node`` of ``fn`` in the runner is ``np.where(c, 0, x)`` with ``x`` bound only to
    ``self.prev_positions.np[...]`` (values ``0``, ``-1`` or a previous row: :func:`_prev_facts`);
    else None."""
    if not (
        rt.file.endswith("gpu_model_runner.py")
        and isinstance(node, ast.Call)
        and _src(node.func) == "np.where"
        and len(node.args) == 3
        and not node.keywords
        and _src(node.args[1]) == "0"
        and isinstance(node.args[2], ast.Name)
    ):
        return None
    from .batch_reads import bindings

    sets = bindings(fn, node.args[2].id)
    if not (
        len(sets) == 1
        and isinstance(sets[0], ast.Assign)
        and isinstance(sets[0].value, ast.Subscript)
        and _src(sets[0].value.value) == "self.prev_positions.np"
    ):
        return None
    fact = _prev_facts(root, rows)
    return f"{_src(node)}, {node.args[2].id} = {_src(sets[0].value)} (:{sets[0].lineno}); {fact}" if fact else None


def _map_fact(root: str, rows: dict) -> str | None:
    """:func:`_map_values_bounded` of the input batch, cached in ``rows`` (as :func:`_map_index` does)."""
    key = "vllm/v1/worker/gpu_input_batch.py"
    if "map" not in rows:
        rows["map"] = _map_values_bounded(root, rows.setdefault(key, _Rows(root, key)))
    return rows["map"]


def _req_ids_bounded(rt) -> str | None:
    """Where ``len(InputBatch._req_ids) <= max_num_reqs`` is found (AST), or None: the list is
    created empty, grows only by ``self._req_ids.append`` inside ``if req_index == len(self._req_ids)``
    with ``req_index = self._register_add_request(...)`` (asserted ``< max_num_reqs``), is otherwise
    only cleared or written by subscript, and no other file of ``vllm/v1/`` names ``_req_ids``."""
    if not rt.file.endswith("gpu_input_batch.py"):
        return None
    cls = next((n for n in ast.walk(rt.tree) if isinstance(n, ast.ClassDef) and n.name == "InputBatch"), None)
    reg = _function_in(rt.tree, "_register_add_request", "InputBatch")
    if cls is None or reg is None:
        return None
    if not any(isinstance(a, ast.Assert) and _src(a.test) == "new_req_index<self.max_num_reqs" for a in ast.walk(reg)):
        return None
    rets = [r for r in ast.walk(reg) if isinstance(r, ast.Return)]
    if not rets or not all(r.value is not None and _src(r.value) == "new_req_index" for r in rets):
        return None
    grows = []
    for node in ast.walk(cls):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and _src(node.func.value) == "self._req_ids"
        ):
            if node.func.attr in ("insert", "extend", "__setitem__", "__iadd__"):
                return None
            if node.func.attr == "append":
                grows.append(node)
    if not grows:
        return None
    lines = []
    for call in grows:
        fn = rt.enclosing(call.lineno)
        guard = next(
            (
                n
                for n in ast.walk(fn)
                if isinstance(n, ast.If)
                and _src(n.test) == "req_index==len(self._req_ids)"
                and any(c is call for b in n.body for c in ast.walk(b))
            ),
            None,
        )
        sets = [
            a
            for a in ast.walk(fn)
            if isinstance(a, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "req_index" for t in a.targets)
        ]
        if guard is None or not sets or not all(_src(a.value).startswith("self._register_add_request(") for a in sets):
            return None
        lines.append(call.lineno)
    for node in ast.walk(cls):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if _src(t) == "self._req_ids":
                    fn = rt.enclosing(node.lineno)
                    if fn is None or fn.name != "__init__" or isinstance(node, ast.AugAssign):
                        return None
    return f"len(_req_ids) <= max_num_reqs: appended only at {rt.file}:{','.join(map(str, lines))} under req_index == len(_req_ids)"


#: Annotation words of a field that may hold a tensor (such a field is never judged another object's).
_TENSOR_WORDS = ("Tensor", "ndarray", "CpuGpuBuffer", "Any", "object", "Buffer")


def _other_object(root: str, rt, entry, line: int) -> str | None:
    """Why every ``<x>.<attribute>`` on ``line`` of the allocating file is another object's
    attribute of the same name (the access reader matches the name only), or None: each receiver is
    a parameter ``p`` of the enclosing function, never rebound, annotated with a class ``C`` other
    than the owner, found in this file or imported ``from m import C`` from a file of ``vllm/``, whose
    body declares ``<attribute>: T`` with ``T`` naming no tensor type (``dict[str, int]``, say): such
    a field never holds the buffer. ``self.<attribute>`` on the line: None (AST)."""
    from .batch_reads import bindings

    name = entry.attribute.rsplit(".", 1)[-1]
    fn = rt.enclosing(line)
    if fn is None:
        return None
    found = [n for n in ast.walk(fn) if isinstance(n, ast.Attribute) and n.attr == name and n.lineno == line]
    if not found:
        return None
    whys = set()
    for n in found:
        if not isinstance(n.value, ast.Name) or n.value.id == "self":
            return None
        p = n.value.id
        arg = next((a for a in fn.args.args + fn.args.kwonlyargs if a.arg == p), None)
        if (
            arg is None
            or arg.annotation is None
            or not all(b is fn or _same_type(rt.tree, b, p) for b in bindings(fn, p))
        ):
            return None
        cls = _src(arg.annotation).strip("'\"")
        if not cls.isidentifier() or cls == entry.owner:
            return None
        field = _declared_field(root, rt.tree, entry.file, cls, name)
        if field is None or any(w in field for w in _TENSOR_WORDS):
            return None
        whys.add(f"{p}: {cls}, which declares {name}: {field}")
    return "; ".join(sorted(whys))


def _same_type(tree, node, p: str) -> bool:
    """``node`` is ``p = replace(p, ...)`` with ``replace`` imported ``from dataclasses``: a copy of
    the same dataclass (the type stays ``p``'s)."""
    return (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.value, ast.Call)
        and _src(node.value.func) == "replace"
        and bool(node.value.args)
        and _src(node.value.args[0]) == p
        and any(
            isinstance(n, ast.ImportFrom)
            and n.module == "dataclasses"
            and any(a.name == "replace" and a.asname is None for a in n.names)
            for n in ast.walk(tree)
        )
    )


def _declared_field(root: str, tree, file: str, cls: str, name: str) -> str | None:
    """The annotation of ``name`` declared in the body of class ``cls`` (defined in ``tree`` or
    imported into it ``from vllm... import cls``), as source text; None when not found."""
    where = [(file, tree)]
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("vllm."):
            if any(a.name == cls and a.asname in (None, cls) for a in n.names):
                rel = n.module.replace(".", "/") + ".py"
                try:
                    with open(os.path.join(root, rel), encoding="utf-8") as fh:
                        where.append((rel, ast.parse(fh.read())))
                except (OSError, SyntaxError):
                    return None
    for _rel, t in where:
        for c in ast.walk(t):
            if isinstance(c, ast.ClassDef) and c.name == cls:
                for item in c.body:
                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.target.id == name:
                        return _src(item.annotation)
    return None


def _range_index(rt, fn, name: str, line: int) -> tuple[str | None, str | None]:
    """``(why, kind)`` when index ``name`` at ``line`` is the loop index of ``for name in range(n)``
    (its only binding in ``fn``; the loop's body holds ``line``) with ``n`` bound to the step's
    request count (:class:`_Rows`, kind ``unpadded``/``padded``): the index is below ``n``. Else
    ``(None, None)``."""
    from .batch_reads import bindings

    if not name.isidentifier():
        return None, None
    sets = bindings(fn, name)
    if len(sets) != 1 or not isinstance(sets[0], ast.For) or not isinstance(sets[0].target, ast.Name):
        return None, None
    loop, it = sets[0], sets[0].iter
    if not (isinstance(it, ast.Call) and _src(it.func) == "range" and len(it.args) == 1 and not it.keywords):
        return None, None
    if not any(b.lineno <= line <= (b.end_lineno or b.lineno) for b in loop.body):
        return None, None
    k = rt.kind(fn, it.args[0])
    if k not in ("unpadded", "padded"):
        return None, None
    return f"for {name} in range({_src(it.args[0])}) at :{loop.lineno}, {k}", k


def _list_guarded(rt, fn, name: str, line: int) -> str | None:
    """``name`` indexes the buffer after a statement of the same or an enclosing block of ``fn``
    that subscripts ``self._req_ids[name]`` (a list: Python raises IndexError past its end, so
    the engine stops before the buffer access), with no assignment of ``name`` in between (AST)."""
    if not name.isidentifier():
        return None
    parents = {}
    for n in ast.walk(fn):
        for c in ast.iter_child_nodes(n):
            parents[c] = n
    holding = [
        n
        for n in ast.walk(fn)
        if isinstance(n, ast.stmt) and n is not fn and n.lineno <= line <= (n.end_lineno or n.lineno)
    ]
    target = max(holding, key=lambda n: n.lineno) if holding else None  # the innermost statement
    node = target
    while node is not None and node is not fn:
        up = parents.get(node)
        for field in ("body", "orelse", "finalbody"):
            block = getattr(up, field, None)
            if isinstance(block, list) and node in block:
                for prev in reversed(block[: block.index(node)]):
                    if (
                        isinstance(prev, ast.If)
                        and not prev.orelse
                        and isinstance(prev.body[-1], (ast.Continue, ast.Return, ast.Raise, ast.Break))
                    ):
                        continue  # a branch that never falls through to the access
                    if any(
                        isinstance(t, ast.Name) and t.id == name
                        for a in ast.walk(prev)
                        if isinstance(a, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                        for t in (a.targets if isinstance(a, ast.Assign) else [a.target])
                    ):
                        return None  # reassigned between a guard and the access
                    if isinstance(prev, (ast.Assign, ast.Expr, ast.AnnAssign)) and any(
                        isinstance(sub, ast.Subscript)
                        and _src(sub.value) == "self._req_ids"
                        and _src(sub.slice) == name
                        for sub in ast.walk(prev)
                    ):
                        return f"self._req_ids[{name}] at {rt.file}:{prev.lineno} (IndexError past the list)"
        node = up
    return None


def _named_elsewhere(root: str, file: str, name: str) -> str | None:
    """The first ``.py`` file of ``vllm/`` other than ``file`` that names attribute ``.name``, or None."""
    for dirpath, _dirs, files in os.walk(os.path.join(root, "vllm")):
        for f in sorted(files):
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            if f.endswith(".py") and rel != file:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    if re.search(rf"\.{name}\b", fh.read()):
                        return rel
    return None


def _numpy_alias(entry, root: str, rt, line: int, rows: dict, reasons) -> tuple[list[str], list[str]] | None:
    """``self.<alias> = self.<attribute>.numpy()`` at ``line``: the alias shares the buffer's
    memory, so every access of the alias in the allocating file is judged like the buffer's own,
    and so is every use of the alias in other files through the owner's holders
    (:func:`capproof.engines.vllm.foreign_uses.judge`; one unchecked use refuses the entry)."""
    import dataclasses

    from ..tracing.accesses import accesses_in_file

    node = next(
        (
            n
            for n in ast.walk(rt.tree)
            if isinstance(n, ast.Assign)
            and n.lineno == line
            and len(n.targets) == 1
            and _src(n.value) == f"self.{entry.attribute.rsplit('.', 1)[-1]}.numpy()"
            and _src(n.targets[0]).startswith("self.")
        ),
        None,
    )
    if node is None:
        return None
    alias = _src(node.targets[0])[len("self.") :]
    from .foreign_uses import foreign_uses, judge

    uses = [x for x in accesses_in_file(os.path.join(root, entry.file), entry.file, alias) if x["line"] != line]
    twin = dataclasses.replace(entry, attribute=alias, accesses=uses)
    # the alias's uses in other files (through the holders of the owner) are judged here; the
    # tensor's own are judged for every derived entry afterwards (foreign_uses.check_foreign_uses)
    elsewhere, kinds = [], set()
    for u in foreign_uses(root, twin):
        got = judge(root, twin, u, "request rows", rows, judge_request_rows)
        if got is None:
            if reasons is not None:
                reasons[entry.id] = f".{alias} used at {u['file']}:{u['line']} {u['op']} (not checked)"
            return None
        elsewhere.append(f"{u['file']}:{u['line']} {u['op']} ({got[0]})")
        kinds.add(got[1])
    found = request_rows_accesses(twin, root, rows, reasons, _alias_depth=1)
    if found is None:
        return None
    kinds = sorted((set(found[0]) | kinds) - {"whole"})
    return kinds, [f"{s} (through self.{alias} = .numpy() at {entry.file}:{line})" for s in found[1] + elsewhere]


def request_rows_accesses(
    entry, root: str, rows: dict, reasons: dict | None = None, _alias_depth: int = 0
) -> tuple[list[str], list[str]] | None:
    """Whether every recorded access of a one-dimensional per-request buffer of :data:`ROW_FILES`
    is bounded by the step's request count: ``(kinds seen, sites)``, or None when some access is
    not (an index by a name, an alias such as ``.numpy()``, a call other than ``copy_slice`` that
    receives the buffer, a slice by a name bound otherwise): that entry gets no derived rows.
    A ``[1 + max_num_reqs]`` buffer (a cumulative-offsets row) may also be sliced ``[a : n + 1]``
    by a request count ``n`` (kind ``plus1``); an index by the literal ``0`` is kind ``index0``."""
    if entry.file not in ROW_FILES or len(entry.shape) != 1 or entry.shape[0] not in ROW_SHAPES:
        return None
    plus_ok = ROW_SHAPES[entry.shape[0]]
    acc = [a for a in (entry.accesses or []) if isinstance(a, dict)]
    if not acc:
        return None
    rt = rows.setdefault(entry.file, _Rows(root, entry.file))
    kinds, sites = set(), []
    copy_slice = None
    for a in acc:
        op, ext, line = a.get("op", ""), a.get("extent", ""), int(a.get("line") or 0)
        op = op.rsplit(" ", 1)[0] if op.endswith((" read", " write")) else op
        shown = ""  # the constant a stop adds to the request count, as the site shows it
        other = _other_object(root, rt, entry, line)
        if other is not None:
            sites.append(f"{entry.file}:{line} {op}: not this buffer ({other})")
            continue
        if op == "numpy" and ext == "whole" and not _alias_depth:
            found = _numpy_alias(entry, root, rt, line, rows, reasons)
            if found is None:
                if reasons is not None and entry.id in reasons:
                    reasons[entry.id] = f"through .numpy() alias: {reasons[entry.id]}"
                    return None
                return _reject(reasons, entry, a)
            kinds |= set(found[0])
            sites += found[1]
            continue
        if ext == "whole" and (op in WHOLE_OPS or op in SLICE_OPS):
            sites.append(f"{entry.file}:{line} {op} (whole: at most the allocation)")
            continue
        if a.get("how") == "executed":
            # an executed subscript records one run's value: the line's own expression is read instead
            sub = _subscript_at(rt.tree, entry.attribute.rsplit(".", 1)[-1], line)
            if sub is None:
                return _reject(reasons, entry, a)
            if isinstance(sub, ast.Slice):
                if sub.lower is not None or sub.step is not None:
                    return _reject(reasons, entry, a)
                ext, op = ("whole" if sub.upper is None else _src(sub.upper)), "slice"
            else:
                ext, op = _src(sub), "index"
            if ext == "whole":
                sites.append(f"{entry.file}:{line} slice (whole: at most the allocation)")
                continue
        if op in ("index", "index.np", "index.cpu", "index.gpu") and a.get("dim") == 0 and str(ext) == "0":
            kinds.add("index0")  # the first row: every allocation has one (max_num_reqs >= 1)
            sites.append(f"{entry.file}:{line} {op} [0] (the first row)")
            continue
        if op in ("index", "index.np", "index.cpu", "index.gpu") and a.get("dim") == 0:
            fn = rt.enclosing(line)
            bound = _register_index(rt, fn, str(ext)) if fn is not None else None
            if bound is None and fn is not None:
                bound = _map_index(root, rows, rt, fn, str(ext))
            if bound is None and fn is not None:
                bound = _prev_index(root, rows, rt, fn, str(ext))
            if bound is None and fn is not None:
                bound, k = _range_index(rt, fn, str(ext), line)
                if bound is not None:
                    kinds.add(k)
                    sites.append(f"{entry.file}:{line} {op} [{ext}] in {fn.name} ({bound})")
                    continue
            if bound is None and fn is not None:
                guard = _list_guarded(rt, fn, str(ext), line)
                length = _req_ids_bounded(rt) if guard else None
                # uses of the buffer in other files are judged by foreign_uses.check_foreign_uses
                bound = f"{guard}; {length}" if guard and length else None
            if bound is None:
                return _reject(reasons, entry, a)
            kinds.add("indexed")
            sites.append(f"{entry.file}:{line} {op} [{ext}] in {fn.name} ({bound})")
            continue
        if op == "passed to copy_slice":
            if copy_slice is None:
                copy_slice = _copy_slice_ok(root)
            call = next(
                (
                    c
                    for c in ast.walk(rt.tree)
                    if isinstance(c, ast.Call)
                    and _src(c.func) == "copy_slice"
                    and c.lineno <= line <= (c.end_lineno or c.lineno)
                    and len(c.args) == 3
                ),
                None,
            )
            if not copy_slice or call is None:
                return _reject(reasons, entry, a)
            expr = call.args[2]
        elif op in SLICE_OPS and a.get("dim") == 0:
            try:
                # a start does not move the stop: ``[a : n]`` touches rows below n
                expr = ast.parse(str(ext).rsplit(":", 1)[-1], mode="eval").body
            except SyntaxError:
                return _reject(reasons, entry, a)
            if (
                plus_ok
                and isinstance(expr, ast.BinOp)
                and isinstance(expr.op, ast.Add)
                and isinstance(expr.right, ast.Constant)
                and type(expr.right.value) is int
                and 0 < expr.right.value <= plus_ok
            ):
                kinds.add(f"plus{expr.right.value}")
                shown = f" + {expr.right.value}"
                expr = expr.left
        elif op.startswith("passed to ") and ext == "whole":
            # a Python helper receiving the buffer: its own accesses, judged at this call site
            from .demand_helpers import judge_passed

            got, helper_sites, why = judge_passed(
                root, rt, entry, line, lambda: _map_fact(root, rows), lambda: _prev_facts(root, rows)
            )
            over = [k for k in got if k.startswith("plus") and int(k[4:]) > plus_ok]
            if not got or over:
                if reasons is not None:
                    reasons[entry.id] = f"{line} {op}: {why or 'a helper slices past the request count: ' + over[0]}"
                return None
            kinds |= got - {"whole"}
            sites += helper_sites
            continue
        else:
            return _reject(reasons, entry, a)
        fn = rt.enclosing(line)
        k = rt.kind(fn, expr) if fn is not None else None
        if k not in ("unpadded", "padded"):
            return _reject(reasons, entry, a)
        kinds.add(k)
        sites.append(f"{entry.file}:{line} {op} [:{_src(expr)}{shown}] in {fn.name} ({k})")
    if not _alias_depth:
        # uses of the buffer in other files, through the owner's holders: each must be checked, and
        # its kind joins the extent (the post-pass foreign_uses.check_foreign_uses re-checks them)
        from .foreign_uses import foreign_uses, judge

        for u in foreign_uses(root, entry):
            got = judge(root, entry, u, "request rows", rows, judge_request_rows)
            if got is None:
                if reasons is not None:
                    reasons[entry.id] = f"used at {u['file']}:{u['line']} {u['op']} (not checked)"
                return None
            if got[1] != "whole":
                kinds.add(got[1])
            sites.append(f"{u['file']}:{u['line']} {u['op']} ({got[0]})")
    if not kinds:
        return _reject(reasons, entry, a)
    return sorted(kinds), sites


def _reject(reasons, entry, access) -> None:
    if reasons is not None:
        reasons[entry.id] = f"{access.get('line')} {access.get('op')} {access.get('extent')!r}"
    return None


def derive_request_rows(entries: list, root: str) -> list[str]:
    """Set the dimension-0 ``demands`` of every one-dimensional ``[max_num_reqs]`` buffer of
    :data:`ROW_FILES` whose recorded accesses are all bounded by the step's request count
    (:func:`request_rows_accesses`): the extent is the block table's row extent (the dispatcher's
    padded count, run on every path; the unpadded count under :func:`unpadded_requests_bound`).
    Returns the ids derived."""
    rows_expr, row_notes = padded_requests()
    unpadded = unpadded_requests_bound(root)
    plain = "select(num_reqs <= max_num_reqs, num_reqs, 0)" if unpadded["checked"] else "num_reqs"
    tables: dict = {}
    done = []
    for e in entries:
        if e.id in DERIVATIONS or e.demands:
            continue
        found = request_rows_accesses(e, root, tables)
        if found is None:
            continue
        kinds, sites = found
        extent = f"select(padded == 1, {rows_expr}, {plain})" if "padded" in kinds else plain
        if "indexed" in kinds:
            # an index the engine asserts below max_num_reqs touches at most max_num_reqs rows
            extent = f"maximum({extent}, max_num_reqs)" if kinds != ["indexed"] else "max_num_reqs"
        if "plus1" in kinds:
            extent = f"1 + {extent}"  # a [a : n + 1] slice of the offsets row
        if "index0" in kinds:
            extent = f"maximum({extent}, 1)"  # row 0 is read or written
        e.demands = [
            {
                "dim": 0,
                "how": "ast",
                "family": "request rows",
                "extent": extent,
                "from": [
                    "vllm/v1/cudagraph_dispatcher.py:133-152 _create_padded_batch_descriptor (executed, every path)"
                    if "padded" in kinds
                    else "the persistent batch's num_reqs (unpadded)",
                    *sites,
                ],
                "notes": row_notes if "padded" in kinds else [],
                "facts": [unpadded],
            }
        ]
        done.append(e.id)
    return done


#: entry id -> derivation (``root -> demands``)
DERIVATIONS: dict[str, Callable[[str], list[dict]]] = {
    BLOCK_TABLE: derive_block_table,
    KERNEL_BLOCK_TABLE: derive_kernel_block_table,
    KERNEL_BLOCK_OFFSETS: derive_kernel_block_offsets,
}


def derive_all(entries: list, root: str) -> list[str]:
    """Set ``demands`` of the entries :data:`DERIVATIONS` knows (the real venv's vLLM must be
    importable: the tracer activated it); return one problem line per derivation that failed
    (that entry keeps no derived demand: never a demand from a guess)."""
    problems = []
    by_id = {e.id: e for e in entries}
    for ident, derive in DERIVATIONS.items():
        entry = by_id.get(ident)
        if entry is None:
            problems.append(f"demand: {ident} is not in the inventory")
            continue
        try:
            entry.demands = derive(root)
        except Exception as exc:  # noqa: BLE001 - one line per entry not derived
            entry.demands = []
            problems.append(f"demand of {ident} not derived: {type(exc).__name__}: {exc}"[:300])
    try:
        derive_request_rows(entries, root)
    except Exception as exc:  # noqa: BLE001 - one line: the request-row family is not derived
        problems.append(f"request rows not derived: {type(exc).__name__}: {exc}"[:300])
    from .demand_backends import derive_backends
    from .demand_drafting import derive_drafting
    from .fact_guards import derive_gdn_decode

    problems += derive_drafting(entries, root) + derive_backends(entries, root) + derive_gdn_decode(entries, root)
    return problems


# Public names of the helpers other derivations (``demand_requests.py``, ``demand_columns.py``) build on.
RecordingBlockPool = _BlockPool
run_paths = _paths
expression = _expr
function_def = _function
source_text = _src
join_kinds = _join
RowBinding = _Rows
map_index = _map_index


def judge_request_rows(root: str, tables: dict, use: dict) -> tuple[str, str] | None:
    """A use of a one-dimensional request-rows buffer in a file of the runner (``use`` as
    :func:`capproof.engines.vllm.foreign_uses.foreign_uses` gives it; ``tables`` caches one
    :class:`RowBinding` per file): ``(why, kind)`` for a slice bound to the step's request count
    (``unpadded``/``padded``) or an index by a value below ``max_num_reqs`` (``indexed``), else None."""
    rt = tables.setdefault(use["file"], _Rows(root, use["file"]))
    fn = rt.enclosing(use["line"])
    if fn is None:
        return None
    if use["op"].startswith("slice"):
        kind = rt.kind(fn, use["node"])
        if kind in ("unpadded", "padded"):
            return f"slice stop bound to the step's request count ({kind})", kind
        return _batch_read(root, tables, rt, fn, use)
    elif use["op"].startswith("index") and isinstance(use["node"], ast.Name):
        why = _map_index(root, tables, rt, fn, use["node"].id) or _prev_index(root, tables, rt, fn, use["node"].id)
        if why:
            return why, "indexed"
        why, kind = _arange_values(root, rt, fn, use["node"].id)
        return (why, kind) if why else _batch_read(root, tables, rt, fn, use)
    elif use["op"].startswith("index") and isinstance(use["node"], ast.Call):
        why = _prev_where(root, tables, rt, fn, use["node"])
        return (why, "indexed") if why else None
    elif use["op"].startswith("index") and isinstance(use["node"], ast.Tuple):
        # ``[:n, None]``: rows below n, then a new axis (no element of the buffer)
        first, *rest = use["node"].elts
        if (
            isinstance(first, ast.Slice)
            and first.lower is None
            and first.step is None
            and first.upper is not None
            and rest
            and all(isinstance(x, ast.Constant) and x.value is None for x in rest)
        ):
            got = judge_request_rows(root, tables, dict(use, op="slice" + use["op"][len("index") :], node=first.upper))
            return (f"{got[0]} (then new axes)", got[1]) if got else None
    return None


def _arange_values(root: str, rt, fn, name: str) -> tuple[str | None, str | None]:
    """``(why, kind)`` when index array ``name`` of ``fn`` in the runner holds values below a
    request count ``n``: its only binding is ``np.repeat(self.arange_np[:n], ...)`` (a repeat of the
    first ``n`` entries) with ``n`` bound to the step's request count (:class:`_Rows`), and the
    runner's ``arange_np`` is ``np.arange(...)``, assigned once (``__init__``) and never written
    by subscript in ``vllm/`` (so entry ``k`` is ``k``). Else ``(None, None)`` (AST)."""
    from .batch_reads import bindings

    if not rt.file.endswith("gpu_model_runner.py"):
        return None, None
    sets = bindings(fn, name)
    if len(sets) != 1 or not isinstance(sets[0], ast.Assign) or len(sets[0].targets) != 1:
        return None, None
    v = sets[0].value
    if not (isinstance(v, ast.Call) and _src(v.func) == "np.repeat" and v.args):
        return None, None
    head = v.args[0]
    if not (
        isinstance(head, ast.Subscript)
        and _src(head.value) == "self.arange_np"
        and isinstance(head.slice, ast.Slice)
        and head.slice.lower is None
        and head.slice.step is None
        and head.slice.upper is not None
    ):
        return None, None
    kind = rt.kind(fn, head.slice.upper)
    if kind not in ("unpadded", "padded"):
        return None, None
    inits = [
        a
        for a in ast.walk(rt.tree)
        if isinstance(a, (ast.Assign, ast.AugAssign, ast.AnnAssign))
        and "self.arange_np" in [_src(t) for t in (a.targets if isinstance(a, ast.Assign) else [a.target])]
    ]
    init = inits[0] if len(inits) == 1 else None
    owner_fn = rt.enclosing(init.lineno) if init is not None else None
    if (
        init is None
        or owner_fn is None
        or owner_fn.name != "__init__"
        or not isinstance(init.value, ast.Call)
        or _src(init.value.func) != "np.arange"
    ):
        return None, None
    for _dirpath, _dirs, files in os.walk(os.path.join(root, "vllm")):
        for f in files:
            if not f.endswith(".py"):
                continue
            with open(os.path.join(_dirpath, f), encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            if ".arange_np" not in text:
                continue
            try:
                tree = ast.parse(text)
            except SyntaxError:
                return None, None
            parents = parent_map(tree)
            for n in ast.walk(tree):
                if not (isinstance(n, ast.Attribute) and n.attr == "arange_np"):
                    continue
                up = parents.get(n)
                if isinstance(up, ast.Subscript) and up.value is n and isinstance(up.ctx, ast.Load):
                    continue  # a read of some entries
                if isinstance(n.ctx, ast.Store) and isinstance(up, ast.Assign) and isinstance(up.value, ast.Call):
                    if _src(up.value.func) == "np.arange":
                        continue  # an allocation (the runner's is the one above)
                return None, None  # written, passed on or aliased: its entries are not read here
    return (
        f"{name} = np.repeat(self.arange_np[:{_src(head.slice.upper)}], ...) (:{sets[0].lineno}): values below "
        f"the count; arange_np = np.arange(...) at {rt.file}:{init.lineno}, never written",
        kind,
    )


def _batch_read(root: str, tables: dict, rt, fn, use: dict) -> tuple[str, str] | None:
    """A use in a function that receives the persistent batch as a parameter annotated
    ``InputBatch`` (:mod:`.batch_reads`, AST): a slice whose stop is ``<p>.num_reqs`` (``unpadded``:
    the property is ``len(self.req_id_to_index)``, read in its source) or ``len(<p>.req_ids)``
    (``indexed``: at most ``max_num_reqs``, by :func:`_req_ids_bounded`; the property returns
    ``self._req_ids``), or an index by ``i`` of ``for i in range(<p>.num_reqs)`` whose body holds
    the use (``unpadded``). Anything else: None."""
    from .batch_reads import batch_count, enumerate_index, loop_index_bounded, map_value, req_ids_length

    node = use["node"]
    batch = tables.setdefault("vllm/v1/worker/gpu_input_batch.py", _Rows(root, "vllm/v1/worker/gpu_input_batch.py"))
    prop = _function_in(batch.tree, "num_reqs", "InputBatch")
    counts = prop is not None and all(
        _src(r.value) == "len(self.req_id_to_index)" for r in ast.walk(prop) if isinstance(r, ast.Return)
    )
    if use["op"].startswith("slice"):
        why = batch_count(rt.tree, fn, node) if counts else None
        if why:
            return f"slice stop {why}", "unpadded"
        why = req_ids_length(rt.tree, fn, node)
        ids = _function_in(batch.tree, "req_ids", "InputBatch")
        returns = [r for r in ast.walk(ids) if isinstance(r, ast.Return)] if ids is not None else []
        own = bool(returns) and all(
            r.value is not None and _src(r.value) in ("self._req_ids", "cast(list[str],self._req_ids)") for r in returns
        )
        length = _req_ids_bounded(batch) if why and own else None
        if length:
            return f"slice stop {why}; {length}", "indexed"
        return None
    if isinstance(node, ast.Name) and counts:
        why = loop_index_bounded(rt.tree, fn, node.id, use["line"])
        if why:
            return f"index {why}", "unpadded"
    if isinstance(node, ast.Name):
        why = map_value(rt.tree, fn, node.id)
        fact = _map_fact(root, tables) if why else None
        if fact:
            return f"index {why}; {fact}", "indexed"
        why = enumerate_index(rt.tree, fn, node.id, use["line"])
        length = _req_ids_bounded(batch) if why else None
        if length:
            return f"index {why}; {length}", "indexed"
    return None
