"""Block-table **columns**: the width each block-table-like buffer gets and the columns its writers
and readers touch, both derived by running vLLM's own code on symbolic sizes.

The runner's table (``BlockTable.block_table``) and the kernel block table have their column
demand in :mod:`capproof.engines.vllm.demand`. This module adds the other block tables of the
vLLM 0.33.0 inventory, each as a ``demands`` record of its column dimension (dimension 1; family
``block-table columns``; ``claim`` says whether the obligation is ``at most`` or ``equal``), so an
entry is verified only when its columns are:

- ``BlockTables.block_tables[]`` (the V2 runner's per-group table): width = the statements of
  ``GPUModelRunner.initialize_kv_cache`` (``vllm/v1/worker/gpu/model_runner.py``) that compute
  ``max_num_blocks_per_group`` (``spec.max_num_blocks_per_req`` then ``get_block_table_width`` with
  the spec's own ``block_table_token_alignment``), **executed** on a real spec object of each kind
  in :data:`SPEC_KINDS` with a symbolic block size; demand = the blocks that kind's KV cache
  manager gives one request (its ``allocate_new_blocks``, executed with a recording block pool),
  which ``append_block_ids`` writes at columns ``[start, start + len(block_ids))`` of the row.
  Kinds not run (Mamba, HiSparse, encoder-decoder cross attention) are listed in the record's
  ``not_derived_for``: the coverage does not count such a dimension as derived.
- ``BlockTables.input_block_tables`` and ``PCPManager._local_block_tables``: their constructors
  (``torch.zeros_like(b.gpu)``; ``table.new_zeros((2 * max_num_reqs, table.shape[1]))``) and
  ``init_block_table_layout_tensors`` (``block_table_strides``) executed with recording stand-ins on
  an opaque group width ``max_num_blocks``; demand = the columns ``_gather_block_tables_kernel``
  writes into a destination row, the source's row stride (``max_num_blocks = stride`` in the
  kernel, read from its source). The claim is equality, for every group width.
- ``DeepseekV32IndexerMetadataBuilder.expanded_block_table_buffer`` (the DSA indexer, vLLM
  #50302/#50823): width = the ``block_table_width`` ``AttentionGroup.create_metadata_builders`` hands
  the builder (executed); demand = the width of the block table the builder receives: the runner's
  table (V1: :func:`capproof.engines.vllm.demand.kernel_block_table_columns`; V2: the statements
  above on an MLA spec) through ``AttentionGroup.map_to_kernel_block_table`` (executed).
  ``_prepare_decode_tensors`` copies ``expanded_bt_stride`` columns of each source row in the
  uniform path (a wider destination reads past the source row) and assigns
  ``repeat_interleave(block_table)`` in the variable path (torch requires equal widths): the claim
  is equality.

Not derived here (listed in the records and docs/explanation/block-table-columns.md, never
guessed): the slot-mapping kernels' column reads (``position // (block_size * dcp)`` of a loaded
position), the one-column dummy tables (a kernel ignores them when sparse indices are given: a
CUDA kernel's behaviour, not modelled), the ROCm tables.
"""

from __future__ import annotations

import ast
from types import SimpleNamespace

from ...symbolic import SymInt
from .demand import (
    BLOCK_TABLE,
    RecordingBlockPool,
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
    "SPEC_KINDS",
    "gathered_columns",
    "v2_width",
    "v2_columns",
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


#: KV cache spec kinds whose V2 table columns are derived: (selector value, spec class, manager
#: class, extra spec fields). The managers are the ones ``register_all_kvcache_specs``
#: (``single_type_kv_cache_manager.py``) registers for these spec classes.
SPEC_KINDS = (
    (0, "FullAttentionSpec", "FullAttentionManager", ()),
    (1, "SlidingWindowSpec", "SlidingWindowManager", ("sliding_window",)),
    (2, "ChunkedLocalAttentionSpec", "ChunkedLocalAttentionManager", ("attention_chunk_size",)),
    (3, "CircularBufferSpec", "CircularBufferManager", ()),
)
#: What the V2 table's column derivation does not run (the dimension then does not count as derived).
NOT_DERIVED_FOR = (
    "MambaSpec groups (width cdiv(L, block_size) + speculative blocks, or the state's pages; "
    "MambaManager.allocate_new_blocks not run)",
    "HiSparse groups (HiSparseHotSpec/HiSparseResidentSpec widths and managers not run)",
    "encoder-decoder models (the width grows to the encoder length; the cross-attention demand is the "
    "encoder's, not run)",
)


def _spec(kind: str, dcp_sharded: bool, extra: tuple = ()):
    """A real vLLM spec object of class ``kind`` with a symbolic ``block_size`` (and symbolic
    ``extra`` fields); its methods are vLLM's."""
    import torch
    from vllm.v1 import kv_cache_interface as ki

    fields = {f: SymInt.var(f) for f in extra}
    return getattr(ki, kind)(
        block_size=SymInt.var("block_size"),
        num_kv_heads=1,
        head_size=64,
        dtype=torch.float16,
        dcp_sharded=dcp_sharded,
        **fields,
    )


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


def gathered_columns() -> dict:
    """Run ``BlockTables.__init__`` (with ``init_block_table_layout_tensors``) and
    ``PCPManager.set_block_tables`` with recording stand-ins on one group of an opaque width
    ``max_num_blocks``: ``{"input", "local", "stride"}`` as expressions (the column counts of
    ``input_block_tables[0]`` and ``_local_block_tables[0]``; ``block_table_strides[0]``, the
    gather kernel's column count; ``stride`` None when the constructor built no strides)."""
    from vllm.v1.worker.gpu import block_table as v2bt
    from vllm.v1.worker.gpu import pcp_manager as pcp

    v = {n: SymInt.var(n) for n in (*NAMES, "max_num_blocks")}
    recorded: list = []

    def stand_tensor(data, **_):
        recorded.append(data)
        return _Fake((len(data),) if isinstance(data, list) else ())

    def shape_of(shape):
        return shape[0] if len(shape) == 1 and isinstance(shape[0], tuple) else shape

    fake_torch = SimpleNamespace(
        tensor=stand_tensor,
        zeros=lambda *shape, **kw: _Fake(shape_of(shape)),
        zeros_like=lambda t, **kw: _Fake(t.shape),
        ones=lambda *shape, **kw: _Fake(shape_of(shape)),
        empty=lambda *shape, **kw: _Fake(shape_of(shape)),
        int32="int32",
        int64="int64",
        uint64="uint64",
        bool="bool",
    )
    names = ("torch", "StagedWriteTensor", "UvaBackedTensor", "FusedStagedWriter", "InputBuffers")
    saved = {m: {k: getattr(m, k) for k in names if hasattr(m, k)} for m in (v2bt, pcp)}
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
            max_num_blocks_per_group=[v["max_num_blocks"]],
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
    strides = [t for t in recorded if isinstance(t, list) and t and isinstance(t[0], SymInt)]
    return {
        "input": expression(tables.input_block_tables[0].shape[1]),
        "local": expression(me._local_block_tables[0].shape[1]),
        "stride": expression(strides[0][0]) if strides else None,
    }


def v2_width(root: str, spec):
    """The V2 runner's width for one KV cache group of ``spec`` (a SymInt term; call inside a run):
    its own statements (:func:`_width_statements`) executed with ``math.gcd`` symbolic, decoder-only
    (``is_encoder_decoder`` False), ``max_model_len`` and ``dcp`` symbolic."""
    from vllm.v1.worker import block_table as v1bt
    from vllm.v1.worker.gpu import model_runner as mr

    module, _ = _width_statements(root)
    code = compile(ast.fix_missing_locations(module), V2_RUNNER, "exec")
    cfg = SimpleNamespace(parallel_config=SimpleNamespace(decode_context_parallel_size=SymInt.var("dcp")))
    me = SimpleNamespace(max_model_len=SymInt.var("max_model_len"), is_encoder_decoder=False, vllm_config=cfg)
    scope = {"self": me, "kv_cache_config": SimpleNamespace(kv_cache_groups=[SimpleNamespace(kv_cache_spec=spec)])}
    saved = v1bt.math
    v1bt.math = SimpleNamespace(gcd=symbolic_gcd)
    try:
        exec(code, dict(mr.__dict__), scope)  # noqa: S102 - vLLM's own statements
    finally:
        v1bt.math = saved
    return scope["max_num_blocks_per_group"][0]


def v2_columns(root: str, kind: str, manager: str, extra: tuple, dcp_sharded: bool) -> tuple[str, str, list[str]]:
    """``(demand, width, notes)`` of a V2 table for a group of spec class ``kind``: the blocks
    ``manager.allocate_new_blocks`` gives a request needing ``num_tokens_need_slot`` slots (a fresh
    request; the row's end column), and :func:`v2_width`; each run on every path."""
    import z3
    from vllm.v1.core import single_type_kv_cache_manager as sm

    names = ("block_size", "dcp", "max_model_len", "num_tokens_need_slot", *extra)
    assume = [z3.Int(n) >= 1 for n in names]
    n = SymInt.var("num_tokens_need_slot")

    def blocks():
        pool = RecordingBlockPool()
        spec = _spec(kind, dcp_sharded, extra)
        mgr = getattr(sm, manager)(
            spec,
            block_pool=pool,
            enable_caching=False,
            kv_cache_group_id=0,
            scheduler_block_size=spec.block_size,
            dcp_world_size=SymInt.var("dcp"),
            pcp_world_size=1,
        )
        mgr.allocate_new_blocks("r", n, n)
        return len(mgr.req_to_blocks["r"]) + pool.asked

    d, notes = run_paths(blocks, assume)
    w, wnotes = run_paths(lambda: v2_width(root, _spec(kind, dcp_sharded, extra)), assume)
    return expression(d), expression(w), notes + wnotes


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
    out = {
        "dim": 1,
        "how": "executed",
        "family": FAMILY,
        "claim": claim,
        "extent": extent,
        "from": sources,
        "notes": notes,
        "facts": facts,
    }
    if binds:
        out["binds"] = binds
    return out


def _sel(flag: str, a: str, b: str) -> str:
    return a if a == b else f"select({flag} == 1, {a}, {b})"


def _by_kind(values: dict) -> str:
    """One expression over the selector ``kv_spec`` (:data:`SPEC_KINDS`) of per-kind expressions."""
    kinds = sorted(values)
    out = values[kinds[-1]]
    for k in reversed(kinds[:-1]):
        out = f"select(kv_spec == {k}, {values[k]}, {out})"
    return out


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
    lines = None
    try:
        _, lines = _width_statements(root)
        run_width = (
            f"{V2_RUNNER}:{lines[0]}-{lines[1]} GPUModelRunner.initialize_kv_cache: block_table_max_model_len, "
            "max_num_blocks_per_req, get_block_table_width(token_alignment=spec.block_table_token_alignment) "
            "(executed on real spec objects with a symbolic block size; math.gcd symbolic; decoder-only)"
        )
        cols = {
            (k, flag): v2_columns(root, kind, manager, extra, flag)
            for k, kind, manager, extra in SPEC_KINDS
            for flag in (True, False)
        }
        demand_of = {k: _sel("dcp_sharded", cols[k, True][0], cols[k, False][0]) for k, *_ in SPEC_KINDS}
        width_of = {k: _sel("dcp_sharded", cols[k, True][1], cols[k, False][1]) for k, *_ in SPEC_KINDS}
        rec = _record(
            _by_kind(demand_of),
            {"max_num_blocks": _by_kind(width_of)},
            [
                run_width,
                "vllm/v1/core/single_type_kv_cache_manager.py:69-110 SingleTypeKVCacheManager.__init__ "
                "(block size times dcp for a DCP-sharded spec; executed)",
                "vllm/v1/core/single_type_kv_cache_manager.py:370-410,1216-1219 allocate_new_blocks of "
                + ", ".join(f"{m} (kv_spec {k}: {s})" for k, s, m, _ in SPEC_KINDS)
                + " (executed, every path; a recording block pool)",
                f"{V2_BT}:118-137 append_block_ids writes [req, start:start + len(block_ids)] and raises past "
                "the row capacity (ast)",
            ],
            [n for v in cols.values() for n in v[2]],
            [dict(tokens_fact)] if tokens_fact else [],
            "at most",
        )
        rec["not_derived_for"] = list(NOT_DERIVED_FOR)
        out[V2_TABLES] = rec
    except Exception as exc:  # noqa: BLE001 - one line: this entry is not derived
        problems.append(f"demand of {V2_TABLES} not derived: {type(exc).__name__}: {exc}"[:300])
    try:
        kernel_line = _kernel_stride_line(root)
        if kernel_line is None:
            raise RuntimeError(f"{V2_BT}: _gather_block_tables_kernel has no max_num_blocks = stride")
        got = gathered_columns()
        if got["stride"] is None:
            raise RuntimeError("BlockTables.__init__ built no block_table_strides")
        for ident, key, ctor in (
            (
                V2_INPUT,
                "input",
                f"{V2_BT}:84-87 BlockTables.__init__ torch.zeros_like(b.gpu) (executed, stand-in torch)",
            ),
            (
                PCP_LOCAL,
                "local",
                "vllm/v1/worker/gpu/pcp_manager.py:111-125 PCPManager.set_block_tables table.new_zeros("
                "(max_num_local_reqs, table.shape[1])) (executed, stand-in torch)",
            ),
        ):
            if got[key] != "max_num_blocks":
                raise RuntimeError(f"{ident}: width {got[key]}, not the group's max_num_blocks")
            out[ident] = _record(
                got["stride"],
                {},
                [
                    f"{V2_BT}:105-112 init_block_table_layout_tensors: block_table_strides = [b.gpu.stride(0) ...] "
                    "(executed, stand-in torch, an opaque group width max_num_blocks)",
                    ctor,
                    f"{V2_BT}:{kernel_line} _gather_block_tables_kernel: max_num_blocks = stride; stores to "
                    "dst_row_ptr + batch_idx * stride + [0, max_num_blocks) (ast)",
                ],
                [],
                [],
                "equal",
            )
    except Exception as exc:  # noqa: BLE001
        problems.append(f"demand of {V2_INPUT}, {PCP_LOCAL} not derived: {type(exc).__name__}: {exc}"[:300])
    try:
        v1 = {flag: kernel_block_table_columns(flag, flag, which="builder") for flag in (True, False)}
        srcs = [
            "vllm/v1/worker/utils.py:284-336 AttentionGroup.create_metadata_builders: block_table_width handed to "
            "the builder (executed; kernel block size given, backend builder and torch.zeros stand-ins)",
            "vllm/v1/worker/utils.py:368-395 _with_kernel_block_table / map_to_kernel_block_table: the table the "
            "builder receives (executed; torch.add stand-in)",
            "vllm/v1/worker/block_table.py:29-41 get_block_table_width, vllm/v1/kv_cache_interface.py:610-615 "
            "AttentionSpec.max_num_blocks_per_req (executed; V1 runner width, decoder-only)",
            "vllm/v1/attention/backends/mla/indexer.py:1195-1203 _PREPARE_UNIFORM_DECODE_KERNEL copies "
            "expanded_bt_stride columns of each source row; :1238-1242 repeat_interleave(block_table) assigned to "
            "[:actual_expanded] (ast)",
        ]
        demand_v1 = _sel("dcp_sharded", v1[True][0], v1[False][0])
        v2cols = {
            flag: _mapped_columns(lambda f=flag: v2_width(root, _spec("MLAAttentionSpec", f)), flag)
            for flag in (True, False)
        }
        srcs.insert(
            2, f"{V2_RUNNER}:{lines[0]}-{lines[1]} V2 runner width on an MLAAttentionSpec (executed)" if lines else ""
        )
        out[EBT] = _record(
            f"select(v2_runner == 1, {_sel('dcp_sharded', v2cols[True], v2cols[False])}, {demand_v1})",
            {"block_table_width": _sel("dcp_sharded", v1[True][1], v1[False][1])},
            [s for s in srcs if s],
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
