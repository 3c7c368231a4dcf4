"""A7 `vllm-kpool-tail-generic-slotmap`: a one-column table indexed as if paged.

Before vllm-project/vllm#57317 hybrid models sent the kpool-tail group through the generic
slot-mapping kernel, which reads column ``pos // (index_kpool * dcp)`` of a one-column table.
After it, only the ring mapping writes, and it reads column 0 and stays in the own block.
Not tagged with vLLM versions (so `check-config` does not apply them): which release carries
#57317 is not recorded, and the spec lives with the GLM-5.x model code.
"""

from capproof import Choice, Range, all_of, claim, less_than, obligation
from models.vllm.kpool_tail import KPOOL_TAIL_COLUMNS, generic_slot_mapping_column, kpool_tail_column, kpool_tail_slot

_DOMAIN = {
    "max_model_len": Range(1, 2**20),
    "index_kpool": Choice(4),
    "dcp": Choice(1, 2, 4, 8),
    "pos": Range(0, 2**20),
}
_POSITIONS = {"pos < max_model_len": lambda pos, max_model_len: pos < max_model_len}


@obligation(
    domain=_DOMAIN,
    assumptions=_POSITIONS,
    expect="counterexample",
    case="vllm-kpool-tail-generic-slotmap",
    sources=["vllm-project/vllm#57227", "vllm-project/vllm#56469", "vllm-project/vllm#53982"],
)
def generic_slot_mapping_reads_kpool_tail_table(max_model_len, index_kpool, dcp, pos):
    """The generic kernel's column is in range only for ``pos < index_kpool * dcp`` (4 here):
    the counterexample is the first such position; a 16,000-token chunk reaches column 3,999 and a
    500K prompt column 124,999. Faults appear later (about 53K) only because of memory layout."""
    return less_than(column=generic_slot_mapping_column(pos, index_kpool, dcp), columns=KPOOL_TAIL_COLUMNS)


@obligation(
    domain={**_DOMAIN, "own_block": Range(1, 2**24)},
    assumptions=_POSITIONS,
    expect="proved",
    case="vllm-kpool-tail-generic-slotmap",
    sources=["vllm-project/vllm#57317", "vllm 0.33.0 vllm/v1/attention/backends/mla/indexer.py"],
)
def ring_mapping_stays_in_own_block(max_model_len, index_kpool, dcp, pos, own_block):
    """After #57317 the ring mapping is the only writer: column 0 of the one-column table, and a
    slot inside the request's own block, for every position. (The open guards #54296/#56059 and
    the other defects of #57477/#56037 are not modelled.)"""
    slot = kpool_tail_slot(own_block, pos, index_kpool)
    column = kpool_tail_column(pos)
    return claim(
        all_of(column < KPOOL_TAIL_COLUMNS, slot >= own_block * index_kpool, slot < (own_block + 1) * index_kpool),
        column=column,
        slot=slot,
    )
