"""vLLM-Ascend slot-mapping buffers with DCP and MTP: ``BlockTable.slot_mapping`` and the
proposer's ``slot_mapping_group``.

Corpus case C3 ``vllm-ascend-mtp-slot-mapping-capacity``. Checked by Z3
(spec/per_batch_buffers.py). Formulas as recorded in the corpus from
vllm-project/vllm-ascend#14024 (main) and #14114 (v0.26.0rc backport); the Ascend sources were
not re-read here.

Units: capacities and demand in **slot-mapping entries** (one per token slot);
``max_num_reqs`` / ``num_reqs`` in requests; ``max_num_batched_tokens`` in tokens.
"""

from __future__ import annotations

from capproof import maximum, select, total

__all__ = [
    "slot_mapping_capacity_before_14024",
    "slot_mapping_capacity_14024",
    "slot_mapping_demand",
]


def slot_mapping_capacity_before_14024(max_num_batched_tokens, max_num_reqs):
    """``max_num_batched_tokens + 2 * max_num_reqs``: the ``2 * max_num_reqs`` reserve is a leftover
    of the removed PCP padding (before vllm-project/vllm-ascend#14024)."""
    return max_num_batched_tokens + 2 * max_num_reqs


def slot_mapping_capacity_14024(max_num_batched_tokens, max_num_reqs, num_speculative_tokens):
    """vllm-project/vllm-ascend#14024 / #14114: ``max_num_batched_tokens +
    max(num_speculative_tokens - 1, 0) * max_num_reqs``, on both buffers (static allocation, so
    graph addresses do not move)."""
    return max_num_batched_tokens + maximum(num_speculative_tokens - 1, 0) * max_num_reqs


def slot_mapping_demand(query_lens, num_reqs, num_speculative_tokens, dcp):
    """Slots prepared for one step: the scheduled tokens, plus, with DCP and MTP both on, up to
    ``K - 1`` appended positions for each active request (corpus C3 demand)."""
    extra = select(dcp > 1, maximum(num_speculative_tokens - 1, 0) * num_reqs, 0)
    return total(query_lens) + extra
