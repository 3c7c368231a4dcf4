"""The GLM-5.x indexer's kpool tail: a one-column block table read by two slot mappings.

Units: positions in tokens; block-table columns; slots in KV-cache entries.
``KpoolTailSpec`` has ``max_num_blocks_per_req() == 1`` and ``block_size == index_kpool`` (e.g. 4),
so its block table is ``(max_num_reqs, 1)``: one own block per request, used as a ring buffer.
Checked by Z3 (spec/vllm_kpool_tail.py).
"""

from __future__ import annotations

__all__ = ["KPOOL_TAIL_COLUMNS", "generic_slot_mapping_column", "kpool_tail_slot", "kpool_tail_column"]

#: Block-table columns of the kpool-tail group (``max_num_blocks_per_req() == 1``).
KPOOL_TAIL_COLUMNS = 1


def generic_slot_mapping_column(pos, index_kpool, dcp):
    """Column the generic slot-mapping kernel loads for ``pos``: ``pos // virtual_block_size`` with
    ``virtual_block_size = block_size * TOTAL_CP_WORLD_SIZE`` and ``block_size == index_kpool``,
    loaded without a bound (vllm-project/vllm#56469, #57227; vLLM 0.33.0
    ``vllm/v1/worker/block_table.py`` slot-mapping kernel)."""
    return pos // (index_kpool * dcp)


def kpool_tail_column(pos):
    """Column the ring mapping reads: always the request's own block, column 0 (vLLM 0.33.0
    ``vllm/v1/attention/backends/mla/indexer.py::compute_kpool_tail_slot_mapping``,
    ``block_table[:num_reqs, 0]``). ``pos`` does not matter."""
    return pos * 0


def kpool_tail_slot(own_block, pos, index_kpool):
    """Slot written for ``pos``: ``own_block * kpool + pos % kpool`` (same source), inside the
    request's own block ``[own_block * kpool, (own_block + 1) * kpool)``."""
    return own_block * index_kpool + pos % index_kpool
