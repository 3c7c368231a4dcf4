"""Fused-MoE ``moe_align_block_size`` buffer capacities, SGLang and vLLM.

Units: ``numel`` = tokens × top-k (entries of ``topk_ids``); ``block_size`` in entries per block;
results in **entries** of ``sorted_token_ids`` (or blocks for ``expert_ids``).
"""

from __future__ import annotations

from capproof.arith import cdiv, minimum, round_up, select

__all__ = ["sglang_sorted_ids_capacity", "sglang_expert_ids_capacity", "vllm_sorted_ids_capacity", "moe_align_demand_bound"]


def sglang_sorted_ids_capacity(numel, num_experts, block_size):
    """``sorted_ids`` length in SGLang 0.5.23 (``sglang/srt/layers/moe/moe_runner/triton_utils/moe_align_block_size.py``).

    ``E + 1`` buckets (the extra one absorbs filtered experts, id -1): ``numel * block_size`` when
    ``numel < E + 1``, else ``numel + (E + 1) * (block_size - 1)``; rounded up to 4 (int4 stores).
    """
    buckets = num_experts + 1
    cap = select(numel < buckets, numel * block_size, numel + buckets * (block_size - 1))
    return round_up(cap, 4)


def sglang_expert_ids_capacity(numel, num_experts, block_size):
    """``expert_ids`` length in SGLang 0.5.23: ``cdiv(sorted_ids capacity, block_size)``."""
    return cdiv(sglang_sorted_ids_capacity(numel, num_experts, block_size), block_size)


def vllm_sorted_ids_capacity(numel, num_experts, block_size, pad_sorted_ids=False):
    """``max_num_tokens_padded`` in vLLM 0.33.0 (``vllm/model_executor/layers/fused_moe/moe_align_block_size.py``).

    ``numel + E * (block_size - 1)``, rounded up to ``block_size`` if ``pad_sorted_ids``, then
    ``min(numel * block_size, ·)`` when ``numel < E``.
    """
    cap = numel + num_experts * (block_size - 1)
    if pad_sorted_ids:
        cap = round_up(cap, block_size)
    return select(numel < num_experts, minimum(numel * block_size, cap), cap)


def moe_align_demand_bound(numel, active_experts, block_size):
    """Entries the align kernel writes at most: ``numel + min(numel, active) * (block_size - 1)``.

    Each of at most ``min(numel, active)`` non-empty experts pads its count up to a multiple of
    ``block_size`` (reference §8.1, derived from the kernel; unconfirmed for 0.33.0's csrc).
    """
    return numel + minimum(numel, active_experts) * (block_size - 1)
