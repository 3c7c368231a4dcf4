"""Capacity against a demand derived from vLLM 0.33.0's own code, per dimension.

Both sides come from the committed inventory (``proofs/inventory/vllm-0.33.0.json``): the capacity
is the allocation's traced shape (``capproof.inventory.capacity``), the demand is what
``capproof inventory`` derived by running the engine's code on symbolic sizes
(``capproof/engines/vllm/demand.py``; ``capproof.inventory.demand``), and a capacity name the
tracer left free (``block_table_width``) is bound to the expression the same run derived
(``capproof.inventory.bound_name``). No formula is written here. Each fact a demand rests on is
the derivation's own record: ``checked`` facts were checked on every path that sets the quantity,
the others are **assumed** (a named assumption below, listed in proofs/coverage.md with the paths
not checked). ``make verify-real`` re-derives the records and fails when they are stale.
"""

from capproof import Choice, Range, at_most, equal, obligation
from capproof.inventory import bound_name, capacity, demand, derived, load

INV = "proofs/inventory/vllm-0.33.0.json"
BT = "vllm/v1/worker/block_table.py::BlockTable.block_table"
_ENTRIES = load(INV)

#: vLLM's attention block sizes (multiples of 16 up to 256; the kernel block size splits them later).
BLOCK_SIZES = Choice(range(16, 257, 16))
DCP = Choice(1, 2, 4, 8)
FLAG = Choice(0, 1)


def _facts(dim: int) -> dict:
    """The derivation's facts that are not checked, as named assumptions (each a function of the
    names it compares); checked facts need no assumption."""
    out = {}
    for f in derived(_ENTRIES, BT, dim).get("facts", []):
        if f.get("checked"):
            continue
        left, _, right = f["fact"].split(" (")[0].partition(" <= ")
        out[f"assumed: {f['fact']}"] = _le(left.strip(), right.strip())
    return out


def _le(left: str, right: str):
    def fact(**kw):
        return kw[left] <= kw[right]

    import inspect

    fact.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in (left, right)]
    )
    return fact


@obligation(
    domain={
        "max_model_len": Range(1, 2**21),
        "num_tokens_need_slot": Range(1, 2**21),
        "block_size": BLOCK_SIZES,
        "dcp": DCP,
        "dcp_sharded": FLAG,
    },
    assumptions=_facts(1),
    expect="proved",
    sources=[f"inventory: {INV}::{BT}", f"demand: {INV}::{BT}[1]", *derived(_ENTRIES, BT, 1)["from"]],
    covers=[BT],
    engine="vllm",
    versions="==0.33.0",
    tags=("inventory", "derived"),
)
def block_table_columns_fit(max_model_len, num_tokens_need_slot, block_size, dcp, dcp_sharded):
    """The blocks the KV cache manager gives a request (vLLM's ``allocate_new_blocks``, run) fit the
    runner's block-table width (vLLM's ``max_num_blocks_per_req`` + ``get_block_table_width``, run)
    for DCP-sharded and unsharded specs, every block size and DCP size."""
    names = dict(max_model_len=max_model_len, block_size=block_size, dcp=dcp, dcp_sharded=dcp_sharded)
    width = bound_name(_ENTRIES, BT, 1, "block_table_width", **names)
    return at_most(
        blocks=demand(_ENTRIES, BT, 1, num_tokens_need_slot=num_tokens_need_slot, **names),
        width=capacity(_ENTRIES, BT, 1, block_table_width=width),
    )


@obligation(
    domain={
        "max_num_reqs": Range(1, 2**12),
        "num_reqs": Range(1, 2**12),
        "num_tokens_padded": Range(1, 2**17),
        "uniform_decode_query_len": Range(1, 65),
        "full_uniform_decode": FLAG,
        "padded": FLAG,
    },
    assumptions=_facts(0),
    expect="proved",
    sources=[f"inventory: {INV}::{BT}", f"demand: {INV}::{BT}[0]", *derived(_ENTRIES, BT, 0)["from"]],
    covers=[BT],
    engine="vllm",
    versions="==0.33.0",
    tags=("inventory", "derived"),
)
def block_table_rows_fit(
    max_num_reqs, num_reqs, num_tokens_padded, uniform_decode_query_len, full_uniform_decode, padded
):
    """The rows a step reads or copies (``[:num_reqs_padded]``, the dispatcher's padded request
    count, run on every path; ``[:num_reqs]`` unpadded) fit the table's ``max_num_reqs`` rows."""
    rows = demand(
        _ENTRIES,
        BT,
        0,
        max_num_reqs=max_num_reqs,
        num_reqs=num_reqs,
        num_tokens_padded=num_tokens_padded,
        uniform_decode_query_len=uniform_decode_query_len,
        full_uniform_decode=full_uniform_decode,
        padded=padded,
    )
    return at_most(rows=rows, max_num_reqs=capacity(_ENTRIES, BT, 0, max_num_reqs=max_num_reqs))


KBT = "vllm/v1/worker/utils.py::AttentionGroup.kernel_block_table"


@obligation(
    domain={
        "max_model_len": Range(1, 2**21),
        "block_size": BLOCK_SIZES,
        "kernel_block_size": Choice(16, 32, 64, 128, 256),
        "dcp": DCP,
        "dcp_sharded": FLAG,
    },
    assumptions={
        "assumed: kernel_block_size divides block_size (prepare_kernel_block_sizes picks a divisor; not run)": lambda block_size, kernel_block_size: (
            block_size % kernel_block_size == 0
        )
    },
    expect="proved",
    sources=[f"inventory: {INV}::{KBT}", f"demand: {INV}::{KBT}[2]", *derived(_ENTRIES, KBT, 2)["from"]],
    covers=[KBT],
    engine="vllm",
    versions="==0.33.0",
    tags=("inventory", "derived"),
)
def kernel_block_table_columns_fit(max_model_len, block_size, kernel_block_size, dcp, dcp_sharded):
    """The columns ``map_to_kernel_block_table`` writes (the runner table's width, from the KV cache
    group's spec, times ``block_size // kernel_block_size``: vLLM's code, run) fit the kernel block
    table ``create_metadata_builders`` allocated from the layer's spec (vLLM's code, run): the
    #50823 mismatch (group width without the DCP divisor) cannot recur in 0.33.0."""
    names = dict(
        max_model_len=max_model_len,
        block_size=block_size,
        kernel_block_size=kernel_block_size,
        dcp=dcp,
        dcp_sharded=dcp_sharded,
    )
    width = bound_name(_ENTRIES, KBT, 2, "width", **names)
    return at_most(columns=demand(_ENTRIES, KBT, 2, **names), width=capacity(_ENTRIES, KBT, 2, width=width))


KBO = "vllm/v1/worker/utils.py::AttentionGroup.kernel_block_offsets"


@obligation(
    domain={"block_size": BLOCK_SIZES, "kernel_block_size": Choice(16, 32, 64, 128, 256)},
    expect="proved",
    sources=[f"inventory: {INV}::{KBO}", f"demand: {INV}::{KBO}[0]", *derived(_ENTRIES, KBO, 0)["from"]],
    covers=[KBO],
    engine="vllm",
    versions="==0.33.0",
    tags=("inventory", "derived"),
)
def kernel_block_offsets_broadcast(block_size, kernel_block_size):
    """``torch.add(self.kernel_block_offsets, block_table.unsqueeze(-1), out=out.unflatten(1, (cols, -1)))``
    broadcasts the offsets over the kernel blocks per manager block the same method derives: the
    lengths must be equal (a broadcast, not a slice)."""
    names = dict(block_size=block_size, kernel_block_size=kernel_block_size)
    return equal(broadcast=demand(_ENTRIES, KBO, 0, **names), offsets=capacity(_ENTRIES, KBO, 0, **names))


# ---------------------------------------------------------------------------------------------
# Request rows of one-dimensional per-request buffers (the runner's and the input batch's): every
# access the inventory recorded is a slice whose stop is the step's request count, bound (AST) to
# the persistent batch's num_reqs, the dummy run's, or the dispatcher's padded count (run on every
# path): `capproof/engines/vllm/demand.py::derive_request_rows`. One obligation per entry derived.

ROW_DOMAIN = {
    "max_num_reqs": Range(1, 2**12),
    "num_reqs": Range(1, 2**12),
    "num_tokens_padded": Range(1, 2**17),
    "uniform_decode_query_len": Range(1, 65),
    "full_uniform_decode": FLAG,
    "padded": FLAG,
}


def _row_facts(entry_id: str) -> dict:
    out = {}
    for f in derived(_ENTRIES, entry_id, 0).get("facts", []):
        if not f.get("checked"):
            left, _, right = f["fact"].split(" (")[0].partition(" <= ")
            out[f"assumed: {f['fact']}"] = _le(left.strip(), right.strip())
    return out


def _request_rows(entry_id: str):
    attribute = entry_id.split("::", 1)[1]
    rows_shape = next(e.shape[0] for e in _ENTRIES if e.id == entry_id)

    def claim(max_num_reqs, num_reqs, num_tokens_padded, uniform_decode_query_len, full_uniform_decode, padded):
        rows = demand(
            _ENTRIES,
            entry_id,
            0,
            max_num_reqs=max_num_reqs,
            num_reqs=num_reqs,
            num_tokens_padded=num_tokens_padded,
            uniform_decode_query_len=uniform_decode_query_len,
            full_uniform_decode=full_uniform_decode,
            padded=padded,
        )
        return at_most(rows=rows, max_num_reqs=capacity(_ENTRIES, entry_id, 0, max_num_reqs=max_num_reqs))

    claim.__name__ = "request_rows_fit__" + attribute.replace(".", "_")
    claim.__doc__ = (
        f"The rows every recorded access of `{attribute}` slices (the step's request count: "
        f"unpadded, or the dispatcher's padded count, derived) fit its `{rows_shape}` rows."
    )
    return obligation(
        domain=ROW_DOMAIN,
        assumptions=_row_facts(entry_id),
        expect="proved",
        sources=[
            f"inventory: {INV}::{entry_id}",
            f"demand: {INV}::{entry_id}[0]",
            *derived(_ENTRIES, entry_id, 0)["from"],
        ],
        covers=[entry_id],
        engine="vllm",
        versions="==0.33.0",
        tags=("inventory", "derived"),
    )(claim)


REQUEST_ROWS = [
    _request_rows(e.id)
    for e in _ENTRIES
    if any(isinstance(d, dict) and d.get("family") == "request rows" for d in e.demands)
]
