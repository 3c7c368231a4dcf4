"""Block-table **columns**: the width each block-table-like buffer gets and the columns its writers
and readers touch, both derived by running vLLM's own code on symbolic sizes.

The runner's table (``BlockTable.block_table``) and the kernel block table have their column
demand in :mod:`capproof.engines.vllm.demand`. This module adds the other block tables of the
vLLM 0.33.0 inventory, each as a ``demands`` record of its column dimension (dimension 1; family
``block-table columns``), so an entry is verified only when its columns are:

- ``BlockTables.block_tables[]`` (the V2 runner's per-group table): width = the statements of
  ``GPUModelRunner.initialize_kv_cache`` (``vllm/v1/worker/gpu/model_runner.py``) that compute
  ``max_num_blocks_per_group`` (``spec.max_num_blocks_per_req`` then ``get_block_table_width`` with
  the spec's own ``block_table_token_alignment``), **executed** on a real ``FullAttentionSpec`` whose
  block size is symbolic; demand = the blocks the KV cache manager gives one request
  (``FullAttentionManager.allocate_new_blocks``, executed: the same scheduler code as the V1
  runner's, :func:`capproof.engines.vllm.demand.block_table_columns`), which ``append_block_ids``
  writes at columns ``[start, start + len(block_ids))`` of the request's row.
- ``BlockTables.input_block_tables`` and ``PCPManager._local_block_tables``: width = their
  constructors (``torch.zeros_like(b.gpu)``; ``table.new_zeros((2 * max_num_reqs,
  table.shape[1]))``) executed with recording stand-ins on the V2 width above; demand = the columns
  ``_gather_block_tables_kernel`` writes into a destination row: the source's row stride, read from
  the ``block_table_strides`` list the constructor builds (executed) and used by the kernel as the
  destination's column count (``max_num_blocks = stride``, read from the kernel's source). The claim
  is equality (the kernel indexes destination rows with the source's stride).
- ``DeepseekV32IndexerMetadataBuilder.expanded_block_table_buffer`` (the DSA indexer, vLLM
  #50302/#50823): width = the ``block_table_width`` ``AttentionGroup.create_metadata_builders`` hands
  the builder (executed); demand = the width of the block table the builder receives: the runner's
  table (V1: the same run as the runner table's width; V2: the statements above) through
  ``AttentionGroup.map_to_kernel_block_table`` (executed). ``_prepare_decode_tensors`` copies
  ``expanded_bt_stride`` columns of each source row in the uniform path (a wider destination reads
  past the source row) and assigns ``repeat_interleave(block_table)`` in the variable path (torch
  requires equal widths): the claim is equality.

Not derived here (said in the report, never guessed): the encoder-decoder widths (the V2 runner
widens them to the encoder length; the cross-attention demand is the encoder's), the slot-mapping
kernels' column reads (their column is ``position // (block_size * dcp)``, a loaded position: a
fact about positions, not run), the dummy one-column tables and the ROCm tables.
"""

from __future__ import annotations

import ast
from types import SimpleNamespace

from ...symbolic import SymInt
from .demand import (
    BLOCK_TABLE,
    block_table_columns,
    expression,
    function_def,
    kernel_block_table_columns,
    run_paths,
    symbolic_gcd,
)

__all__ = [
    "FAMILY",
    "V2_TABLES",
    "V2_INPUT",
    "PCP_LOCAL",
    "EBT",
    "v2_widths",
    "derive_columns",
]

FAMILY = "block-table columns"
V2_RUNNER = "vllm/v1/worker/gpu/model_runner.py"
V2_BT = "vllm/v1/worker/gpu/block_table.py"
V2_TABLES = f"{V2_BT}::BlockTables.block_tables[]"
V2_INPUT = f"{V2_BT}::BlockTables.input_block_tables"
PCP_LOCAL = "vllm/v1/worker/gpu/pcp_manager.py::PCPManager._local_block_tables"
EBT = "vllm/v1/attention/backends/mla/indexer.py::DeepseekV32IndexerMetadataBuilder.expanded_block_table_buffer"
NAMES = ("block_size", "dcp", "max_model_len", "max_num_reqs", "max_num_batched_tokens")


def _width_statements(root: str) -> tuple[ast.Module, list[int]]:
    """The statements of the V2 runner's ``initialize_kv_cache`` from ``block_table_max_model_len =``
    through the loop that appends to ``max_num_blocks_per_group`` (RuntimeError when not found)."""
    fn = function_def(root, V2_RUNNER, "initialize_kv_cache", "GPUModelRunner")
    if fn is None:
        raise RuntimeError(f"{V2_RUNNER}: GPUModelRunner.initialize_kv_cache not found")
    body = fn.body
    start = next(
        (
            i
            for i, s in enumerate(body)
            if isinstance(s, ast.Assign) and ast.unparse(s.targets[0]) == "block_table_max_model_len"
        ),
        None,
    )
    end = next(
        (
            i
            for i, s in enumerate(body)
            if isinstance(s, ast.For) and "max_num_blocks_per_group.append" in ast.unparse(s)
        ),
        None,
    )
    if start is None or end is None or end < start:
        raise RuntimeError(f"{V2_RUNNER}: the block-table width loop of initialize_kv_cache not found")
    stmts = body[start : end + 1]
    module = ast.Module(body=stmts, type_ignores=[])
    return module, [stmts[0].lineno, stmts[-1].end_lineno]


def _spec(dcp_sharded: bool, bs):
    """A real ``FullAttentionSpec`` (the class of MLA and full-attention layers' widths) with a
    symbolic block size; its methods are vLLM's."""
    import torch
    from vllm.v1.kv_cache_interface import FullAttentionSpec

    return FullAttentionSpec(block_size=bs, num_kv_heads=1, head_size=64, dtype=torch.float16, dcp_sharded=dcp_sharded)


class _Fake:
    """A stand-in tensor that keeps its shape (and a contiguous row stride)."""

    def __init__(self, shape):
        self.shape = tuple(shape)
        self.gpu = self

    def stride(self, dim):
        out = 1
        for s in self.shape[dim + 1 :]:
            out = out * s
        return out

    def data_ptr(self):
        return 0

    def new_zeros(self, shape, **_):
        return _Fake(shape)


def v2_widths(root: str, dcp_sharded: bool) -> dict:
    """Run the V2 runner's width statements, ``BlockTables.__init__`` and
    ``PCPManager.set_block_tables`` on symbolic sizes (one KV cache group, a ``FullAttentionSpec``
    with ``dcp_sharded``): ``{"width", "input", "stride", "local", "lines", "notes"}`` as expressions
    (``width``: the group's ``max_num_blocks``; ``input``/``local``: the column count of
    ``input_block_tables[0]``/``_local_block_tables[0]``; ``stride``: ``block_table_strides[0]``, the
    gather kernel's column count). Needs vLLM importable."""
    import z3
    from vllm.v1.worker.gpu import block_table as v2bt
    from vllm.v1.worker.gpu import pcp_manager as pcp

    _, lines = _width_statements(root)
    v = {n: SymInt.var(n) for n in NAMES}
    assume = [z3.Int(n) >= 1 for n in NAMES]

    w, notes = run_paths(lambda: _v2_width_value(root, dcp_sharded), assume)
    w_expr = expression(w)
    # the constructors on that width (one path: nothing branches on it)
    recorded: dict = {}

    def stand_tensor(data, **_):
        recorded.setdefault("tensor", []).append(data)
        return _Fake((len(data),) if isinstance(data, list) else ())

    fake_torch = SimpleNamespace(
        tensor=stand_tensor,
        zeros=lambda *shape, **kw: _Fake(shape[0] if len(shape) == 1 and isinstance(shape[0], tuple) else shape),
        zeros_like=lambda t, **kw: _Fake(t.shape),
        ones=lambda *shape, **kw: _Fake(shape),
        empty=lambda *shape, **kw: _Fake(shape[0] if len(shape) == 1 and isinstance(shape[0], tuple) else shape),
        int32="int32",
        int64="int64",
        uint64="uint64",
        bool="bool",
        device=lambda *a, **k: "cpu",
    )
    width_term = SymInt.var("block_table_width_v2")
    saved = {
        m: {
            k: getattr(m, k)
            for k in ("torch", "StagedWriteTensor", "UvaBackedTensor", "FusedStagedWriter", "InputBuffers")
            if hasattr(m, k)
        }
        for m in (v2bt, pcp)
    }
    v2bt.torch = pcp.torch = fake_torch
    v2bt.StagedWriteTensor = lambda size, **kw: _Fake(size)
    v2bt.UvaBackedTensor = lambda size, **kw: _Fake(size)
    v2bt.FusedStagedWriter = lambda *a, **kw: None
    if hasattr(pcp, "InputBuffers"):
        pcp.InputBuffers = lambda *a, **kw: None
    try:
        tables = v2bt.BlockTables(
            block_sizes=[v["block_size"]],
            max_num_reqs=v["max_num_reqs"],
            max_num_batched_tokens=v["max_num_batched_tokens"],
            max_num_blocks_per_group=[width_term],
            device="cpu",
            cp_size=v["dcp"],
        )
        me = SimpleNamespace(
            _max_num_local_reqs=2 * v["max_num_reqs"],
            _max_num_tokens=v["max_num_batched_tokens"],
            device="cpu",
            pcp_world_size=1,
        )
        pcp.PCPManager.set_block_tables(me, tables)
    finally:
        for m, attrs in saved.items():
            for k, val in attrs.items():
                setattr(m, k, val)
    strides = [t for t in recorded.get("tensor", []) if isinstance(t, list) and t and isinstance(t[0], SymInt)]

    def sub(x):
        if not isinstance(x, SymInt):
            return str(x)
        text = expression(x)
        return text.replace("block_table_width_v2", f"({w_expr})")

    return {
        "width": w_expr,
        "input": sub(tables.input_block_tables[0].shape[1]),
        "local": sub(me._local_block_tables[0].shape[1]),
        "stride": sub(strides[0][0]) if strides else None,
        "lines": lines,
        "notes": notes,
    }


def _kernel_stride_line(root: str) -> int | None:
    """The line of ``max_num_blocks = stride`` in ``_gather_block_tables_kernel`` (AST), or None."""
    fn = function_def(root, V2_BT, "_gather_block_tables_kernel")
    if fn is None:
        return None
    for node in ast.walk(fn):
        if (
            isinstance(node, ast.Assign)
            and ast.unparse(node.targets[0]) == "max_num_blocks"
            and ast.unparse(node.value) == "stride"
        ):
            return node.lineno
    return None


def _mapped_columns(cols_of, flag: bool) -> str:
    """The columns ``AttentionGroup.map_to_kernel_block_table`` hands a builder for a runner table
    of ``cols_of()`` columns (executed on every path; a ``torch.add`` stand-in)."""
    import z3
    from vllm.v1.worker import utils as wu
    from vllm.v1.worker.utils import AttentionGroup

    bs, kbs, mnr = (SymInt.var(x) for x in ("block_size", "kernel_block_size", "max_num_reqs"))
    assume = [z3.Int(x) >= 1 for x in (*NAMES, "kernel_block_size")]
    assume.append(z3.Int("block_size") % z3.Int("kernel_block_size") == 0)

    def demand():
        cols = cols_of()
        seen = []

        class Table:
            def __getitem__(self, key):
                seen.append(key)
                return SimpleNamespace(unflatten=lambda *a: None)

        # the engine sets kernel_block_size only when it differs from the spec's (create_metadata_builders)
        me = SimpleNamespace(
            kernel_block_size=kbs,
            kernel_block_table=Table(),
            kernel_block_offsets=None,
            kv_cache_spec=SimpleNamespace(block_size=bs, dcp_sharded=flag),
            kernel_block_stride=0,
        )
        saved = wu.torch
        wu.torch = SimpleNamespace(add=lambda *a, **kw: None)
        try:
            out = AttentionGroup.map_to_kernel_block_table(
                me, SimpleNamespace(shape=(mnr, cols), unsqueeze=lambda d: None), 0
            )
        finally:
            wu.torch = saved
        return seen[0][2].stop if seen else out.shape[1]

    term, _ = run_paths(demand, assume)
    return expression(term)


def _record(extent: str, binds: dict, sources: list[str], notes: list[str], facts: list[dict], claim: str) -> dict:
    return {
        "dim": 1,
        "how": "executed",
        "family": FAMILY,
        "claim": claim,
        "extent": extent,
        "binds": binds,
        "from": sources,
        "notes": notes,
        "facts": facts,
    }


def _sel(flag: str, a: str, b: str) -> str:
    return a if a == b else f"select({flag} == 1, {a}, {b})"


def derive_columns(entries: list, root: str) -> list[str]:
    """Add (or replace) the ``block-table columns`` demand of each entry this module derives;
    return one problem line per entry not derived (it keeps no column demand). The V2 table's
    demand rests on the runner table's fact ``num_tokens_need_slot <= max_model_len`` (the same
    scheduler code allocates both runners' blocks): its record, as the runner table's derivation
    made it, is copied (checked or not)."""
    by_id = {e.id: e for e in entries}
    runner = by_id.get(BLOCK_TABLE)
    tokens_fact = next(
        (
            f
            for d in (runner.demands if runner else [])
            if isinstance(d, dict) and d.get("dim") == 1
            for f in d.get("facts", [])
            if f.get("fact", "").startswith("num_tokens_need_slot <= max_model_len")
        ),
        None,
    )
    problems: list[str] = []
    out: dict[str, dict] = {}
    try:
        v2 = {flag: v2_widths(root, flag) for flag in (True, False)}
        lines = v2[True]["lines"]
        kernel_line = _kernel_stride_line(root)
        width = _sel("dcp_sharded", v2[True]["width"], v2[False]["width"])
        blocks = {flag: block_table_columns(flag)[0] for flag in (True, False)}
        run_width = f"{V2_RUNNER}:{lines[0]}-{lines[1]} GPUModelRunner.initialize_kv_cache: block_table_max_model_len, max_num_blocks_per_req, get_block_table_width(token_alignment=spec.block_table_token_alignment) (executed on a FullAttentionSpec with a symbolic block size; math.gcd symbolic; decoder-only)"
        out[V2_TABLES] = _record(
            _sel("dcp_sharded", blocks[True], blocks[False]),
            {"max_num_blocks": width},
            [
                run_width,
                "vllm/v1/core/single_type_kv_cache_manager.py:69-110 FullAttentionManager.__init__ (executed)",
                "vllm/v1/core/single_type_kv_cache_manager.py:370-410 allocate_new_blocks (executed, every path)",
                f"{V2_BT}:118-137 append_block_ids writes [req, start:start + len(block_ids)] and raises past the row capacity (ast)",
            ],
            v2[True]["notes"] + v2[False]["notes"],
            [dict(tokens_fact)] if tokens_fact else [],
            "at most",
        )
        if kernel_line is None:
            problems.append(
                f"demand of {V2_INPUT}, {PCP_LOCAL}: {V2_BT} _gather_block_tables_kernel has no max_num_blocks = stride"
            )
        else:
            for ident, key, ctor in (
                (
                    V2_INPUT,
                    "input",
                    f"{V2_BT}:84-87 BlockTables.__init__ torch.zeros_like(b.gpu) (executed, stand-in torch)",
                ),
                (
                    PCP_LOCAL,
                    "local",
                    "vllm/v1/worker/gpu/pcp_manager.py:111-125 PCPManager.set_block_tables table.new_zeros((max_num_local_reqs, table.shape[1])) (executed, stand-in torch)",
                ),
            ):
                if any(v2[f]["stride"] is None for f in v2):
                    problems.append(f"demand of {ident} not derived: BlockTables.__init__ built no block_table_strides")
                    continue
                out[ident] = _record(
                    _sel("dcp_sharded", v2[True]["stride"], v2[False]["stride"]),
                    {"max_num_blocks": _sel("dcp_sharded", v2[True][key], v2[False][key])},
                    [
                        run_width,
                        f"{V2_BT}:105-112 init_block_table_layout_tensors: block_table_strides = [b.gpu.stride(0) ...] (executed, stand-in torch)",
                        ctor,
                        f"{V2_BT}:{kernel_line} _gather_block_tables_kernel: max_num_blocks = stride, stores dst_row_ptr + batch_idx * stride + [0, max_num_blocks) (ast)",
                    ],
                    [],
                    [],
                    "equal",
                )
    except Exception as exc:  # noqa: BLE001 - one line: these entries are not derived
        problems.append(f"V2 block-table columns not derived: {type(exc).__name__}: {exc}"[:300])
        v2 = None
    try:
        v1 = {flag: kernel_block_table_columns(flag, flag, which="builder") for flag in (True, False)}
        srcs = [
            "vllm/v1/worker/utils.py:284-336 AttentionGroup.create_metadata_builders: block_table_width handed to the builder (executed; kernel block size given, backend builder and torch.zeros stand-ins)",
            "vllm/v1/worker/utils.py:368-395 _with_kernel_block_table / map_to_kernel_block_table: the table the builder receives (executed; torch.add stand-in)",
            "vllm/v1/worker/block_table.py:29-41 get_block_table_width, vllm/v1/kv_cache_interface.py:610-615 AttentionSpec.max_num_blocks_per_req (executed; V1 runner width)",
            "vllm/v1/attention/backends/mla/indexer.py:1195-1203 _PREPARE_UNIFORM_DECODE_KERNEL copies expanded_bt_stride columns of each source row; :1238-1242 repeat_interleave(block_table) assigned to [:actual_expanded] (ast)",
        ]
        demand_v1 = _sel("dcp_sharded", v1[True][0], v1[False][0])
        extent = demand_v1
        if v2 is not None:
            v2cols = {flag: _mapped_columns(lambda f=flag: _v2_width_value(root, f), flag) for flag in (True, False)}
            extent = f"select(v2_runner == 1, {_sel('dcp_sharded', v2cols[True], v2cols[False])}, {demand_v1})"
            srcs.insert(2, run_width)
        out[EBT] = _record(
            extent,
            {"block_table_width": _sel("dcp_sharded", v1[True][1], v1[False][1])},
            srcs,
            v1[True][2] + v1[False][2],
            [],
            "equal",
        )
    except Exception as exc:  # noqa: BLE001
        problems.append(f"demand of {EBT} not derived: {type(exc).__name__}: {exc}"[:300])
    for ident, rec in out.items():
        entry = by_id.get(ident)
        if entry is None:
            problems.append(f"demand: {ident} is not in the inventory")
            continue
        entry.demands = [d for d in entry.demands if not (isinstance(d, dict) and d.get("family") == FAMILY)] + [rec]
    return problems


def _v2_width_value(root: str, dcp_sharded: bool):
    """The V2 runner's width as a SymInt (the width statements executed once; used inside a run)."""
    from vllm.v1.worker import block_table as v1bt
    from vllm.v1.worker.gpu import model_runner as mr

    module, _ = _width_statements(root)
    code = compile(ast.fix_missing_locations(module), V2_RUNNER, "exec")
    cfg = SimpleNamespace(parallel_config=SimpleNamespace(decode_context_parallel_size=SymInt.var("dcp")))
    me = SimpleNamespace(max_model_len=SymInt.var("max_model_len"), is_encoder_decoder=False, vllm_config=cfg)
    scope = {
        "self": me,
        "kv_cache_config": SimpleNamespace(
            kv_cache_groups=[SimpleNamespace(kv_cache_spec=_spec(dcp_sharded, SymInt.var("block_size")))]
        ),
    }
    saved = v1bt.math
    v1bt.math = SimpleNamespace(gcd=symbolic_gcd)
    try:
        exec(code, dict(mr.__dict__), scope)  # noqa: S102 - vLLM's own statements
    finally:
        v1bt.math = saved
    return scope["max_num_blocks_per_group"][0]
