"""Block-table columns of vLLM 0.33.0: each block-table-like buffer's width against the columns its
writers and readers touch, both derived from the engine's own code.

The widths and demands are the inventory's (``proofs/inventory/vllm-0.33.0.json``, the ``block-table
columns`` demands that ``capproof/engines/vllm/demand_columns.py`` derives by running vLLM's code on
symbolic sizes): the V2 runner's per-group tables, the tables its gather kernel fills (its own
input tables and the PCP manager's local ones), and the DSA indexer's expanded block table (the
buffer of vLLM #50302/#50823). No formula is written here: the capacity is the traced shape with
its free name bound to what the same run computed (``bound_name``), the demand the recorded
extent. A fact a demand rests on is the derivation's own record; one not checked on every path is
a named assumption ("assumed: ..."), listed in proofs/coverage.md, and its entry is not verified.
The runner's own table and the kernel block table are in ``spec/vllm_0_33_derived.py``.
"""

import inspect

from capproof import Choice, Range, at_most, equal, obligation
from capproof.inventory import bound_name, capacity, demand, derived, load

INV = "proofs/inventory/vllm-0.33.0.json"
_ENTRIES = load(INV)

V2_TABLES = "vllm/v1/worker/gpu/block_table.py::BlockTables.block_tables[]"
V2_INPUT = "vllm/v1/worker/gpu/block_table.py::BlockTables.input_block_tables"
PCP_LOCAL = "vllm/v1/worker/gpu/pcp_manager.py::PCPManager._local_block_tables"
EBT = "vllm/v1/attention/backends/mla/indexer.py::DeepseekV32IndexerMetadataBuilder.expanded_block_table_buffer"

#: vLLM's attention block sizes (multiples of 16 up to 256; a kernel block size splits them later).
BLOCK_SIZES = Choice(range(16, 257, 16))
DCP = Choice(1, 2, 4, 8)
FLAG = Choice(0, 1)
#: A flag kept symbolic (one query covers both values).
BIT = Range(0, 1)
LEN = Range(1, 2**21)


def _sources(entry_id: str) -> list[str]:
    return [f"inventory: {INV}::{entry_id}", f"demand: {INV}::{entry_id}[1]", *derived(_ENTRIES, entry_id, 1)["from"]]


def _le(left: str, right: str):
    def fact(**kw):
        return kw[left] <= kw[right]

    fact.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in (left, right)]
    )
    return fact


def _assumed(entry_id: str) -> dict:
    """The facts of the column derivation that are not checked, as named assumptions."""
    out = {}
    for f in derived(_ENTRIES, entry_id, 1).get("facts", []):
        if not f.get("checked"):
            left, _, right = f["fact"].split(" (")[0].partition(" <= ")
            out[f"assumed: {f['fact']}"] = _le(left.strip(), right.strip())
    return out


@obligation(
    domain={
        "max_model_len": LEN,
        "num_tokens_need_slot": LEN,
        "block_size": BLOCK_SIZES,
        "dcp": DCP,
        "dcp_sharded": FLAG,
        # the KV cache group's spec: full attention (and MLA), sliding window, chunked local, circular
        # buffer (a Range: one query covers the four kinds)
        "kv_spec": Range(0, 3),
    },
    assumptions=_assumed(V2_TABLES),
    expect="proved",
    sources=_sources(V2_TABLES),
    covers=[V2_TABLES],
    engine="vllm",
    versions="==0.33.0",
    tags=("inventory", "derived", "columns"),
)
def v2_block_table_columns_fit(max_model_len, num_tokens_need_slot, block_size, dcp, dcp_sharded, kv_spec):
    """The blocks the group's KV cache manager gives a request (its ``allocate_new_blocks``, run),
    which ``BlockTables.append_block_ids`` writes into the request's row, fit the V2 runner's width
    for that group (``initialize_kv_cache``'s ``max_num_blocks_per_req`` + ``get_block_table_width``
    with the spec's alignment, run on a real spec object). Beyond it the engine raises (``exceeds
    row capacity``): a crash, so the claim is that it never happens. Mamba and HiSparse groups and
    encoder-decoder models are not derived (the record's ``not_derived_for``)."""
    names = dict(max_model_len=max_model_len, block_size=block_size, dcp=dcp, dcp_sharded=dcp_sharded, kv_spec=kv_spec)
    width = bound_name(_ENTRIES, V2_TABLES, 1, "max_num_blocks", **names)
    return at_most(
        blocks=demand(_ENTRIES, V2_TABLES, 1, num_tokens_need_slot=num_tokens_need_slot, **names),
        width=capacity(_ENTRIES, V2_TABLES, 1, max_num_blocks=width),
    )


def _gathered(entry_id: str, what: str):
    attribute = entry_id.split("::", 1)[1].replace(".", "_")

    def claim(max_num_blocks):
        return equal(
            kernel_columns=demand(_ENTRIES, entry_id, 1, max_num_blocks=max_num_blocks),
            width=capacity(_ENTRIES, entry_id, 1, max_num_blocks=max_num_blocks),
        )

    claim.__name__ = f"gathered_columns_match__{attribute}"
    claim.__doc__ = (
        f"``_gather_block_tables_kernel`` writes each row of {what} with the source table's row "
        "stride as its column count (``max_num_blocks = stride``): the destination's width (its "
        "constructor, run) equals that stride (``block_table_strides``, run), for every group width."
    )
    return obligation(
        domain={"max_num_blocks": Range(1, 2**21)},
        assumptions=_assumed(entry_id),
        expect="proved",
        sources=_sources(entry_id),
        covers=[entry_id],
        engine="vllm",
        versions="==0.33.0",
        tags=("inventory", "derived", "columns"),
    )(claim)


GATHERED = [
    _gathered(V2_INPUT, "the V2 runner's input block tables"),
    _gathered(PCP_LOCAL, "the PCP manager's local block tables"),
]


@obligation(
    domain={
        "max_model_len": LEN,
        "block_size": BLOCK_SIZES,
        "kernel_block_size": Choice(16, 32, 64),
        "dcp": DCP,
        "dcp_sharded": BIT,
        "v2_runner": BIT,
    },
    assumptions=_assumed(EBT),
    expect="proved",
    case="vllm-dsa-ebt-128align",
    sources=_sources(EBT),
    covers=[EBT],
    engine="vllm",
    versions="==0.33.0",
    tags=("inventory", "derived", "columns"),
)
def indexer_expanded_block_table_columns_match(
    max_model_len, block_size, kernel_block_size, dcp, dcp_sharded, v2_runner
):
    """The DSA indexer copies whole block-table rows into ``expanded_block_table_buffer``: the
    uniform path's Triton copy reads the buffer's width of columns from each source row, the
    variable path assigns ``repeat_interleave(block_table)`` (torch requires equal widths). The
    source is the runner's table (V1 or V2, each run) through ``map_to_kernel_block_table`` (run);
    the width is the ``block_table_width`` ``create_metadata_builders`` hands the builder (run).
    Equal on every block size, kernel block size, DCP size and sharding: the #50302 (alignment)
    and #50823 (DCP divisor) mismatches cannot recur in 0.33.0."""
    names = dict(
        max_model_len=max_model_len,
        block_size=block_size,
        kernel_block_size=kernel_block_size,
        dcp=dcp,
        dcp_sharded=dcp_sharded,
    )
    width = bound_name(_ENTRIES, EBT, 1, "block_table_width", **names)
    return equal(
        source_columns=demand(_ENTRIES, EBT, 1, v2_runner=v2_runner, **names),
        width=capacity(_ENTRIES, EBT, 1, block_table_width=width),
    )
