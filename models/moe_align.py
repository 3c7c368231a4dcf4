"""MoE token-to-expert alignment buffers (`sorted_token_ids`, `expert_ids`) and their readers.

Units: entries of ``sorted_token_ids`` (one per routed token slot, padded per expert to a multiple
of ``block_size``), blocks of ``block_size`` entries for ``expert_ids``, rows for GEMM outputs.
``numel = topk_ids.numel() = num_tokens * topk``. A routing is given by per-expert token counts
``counts[e]`` (``cnt_e``), a Vector parameter; its facts (each id counted once, ids in range) are
assumptions of the obligations, never built into these formulas.

All arithmetic is checked by Z3 (spec/moe_align.py); no loops depend on symbolic values.
"""

from __future__ import annotations

from capproof import all_of, cdiv, fold, maximum, minimum, round_up, select, total

__all__ = [
    "vllm_sorted_ids_capacity",
    "vllm_sorted_ids_capacity_before_small_numel_min",
    "sglang_sorted_ids_capacity",
    "deepep_v2_sorted_ids_capacity",
    "num_tokens_post_pad",
    "moe_align_demand_bound",
    "expert_ids_capacity",
    "max_write_position",
    "align_writes",
    "gemm_max_read_offset",
    "ck_workspace_index",
    "ck_workspace_index_6242",
    "splitk_sentinel_row",
    "splitk_sorted_size",
]


def vllm_sorted_ids_capacity(numel, num_experts, block_size, pad_sorted_ids):
    """``len(sorted_token_ids)`` in entries, as vLLM 0.33.0 allocates it.

    Source: vLLM 0.33.0 ``vllm/model_executor/layers/fused_moe/moe_align_block_size.py``
    (``moe_align_block_size``, lines 137-143)::

        max_num_tokens_padded = topk_ids.numel() + num_experts * (block_size - 1)
        if pad_sorted_ids:
            max_num_tokens_padded = round_up(max_num_tokens_padded, block_size)
        if topk_ids.numel() < num_experts:
            max_num_tokens_padded = min(topk_ids.numel() * block_size, max_num_tokens_padded)

    ``pad_sorted_ids`` is 0 or 1 (a Python bool in vLLM; a finite parameter here).
    """
    cap = numel + num_experts * (block_size - 1)
    cap = select(pad_sorted_ids == 1, round_up(cap, block_size), cap)
    return select(numel < num_experts, minimum(numel * block_size, cap), cap)


def vllm_sorted_ids_capacity_before_small_numel_min(numel, num_experts, block_size, pad_sorted_ids):
    """The same without the small-``numel`` ``min`` (older vLLM; the corpus B0 "newer versions only").

    Source: vLLM ``moe_align_block_size.py`` before the ``numel < num_experts`` clause
    (vllm-project/vllm#4517 era). Larger, never smaller, than :func:`vllm_sorted_ids_capacity`.
    """
    cap = numel + num_experts * (block_size - 1)
    return select(pad_sorted_ids == 1, round_up(cap, block_size), cap)


def sglang_sorted_ids_capacity(numel, num_experts, block_size):
    """``len(sorted_ids)`` in entries, as SGLang 0.5.23 allocates it: ``E + 1`` buckets (the extra
    one absorbs ``-1`` ids of filtered experts under EP), rounded up to 4 for int4 stores.

    Source: SGLang 0.5.23 ``sglang/srt/layers/moe/moe_runner/triton_utils/moe_align_block_size.py``::

        n_buckets = num_experts + 1
        cap = numel * block_size if numel < n_buckets else numel + n_buckets * (block_size - 1)
        cap = round_up(cap, 4)
    """
    n_buckets = num_experts + 1
    cap = select(numel < n_buckets, numel * block_size, numel + n_buckets * (block_size - 1))
    return round_up(cap, 4)


def deepep_v2_sorted_ids_capacity(numel, local_num_experts, block_size):
    """``len(sorted_ids)`` of the DeepEP-v2 fused path, sized with the **local** expert count
    (entries; ``numel`` counts every received slot, valid or not).

    Source: vLLM 0.33.0 ``vllm/model_executor/layers/fused_moe/fused_globalize_align_block_size.py``::

        max_num_tokens_padded = numel + local_num_experts * (block_size - 1)
        if numel < local_num_experts:
            max_num_tokens_padded = min(numel * block_size, max_num_tokens_padded)
    """
    cap = numel + local_num_experts * (block_size - 1)
    return select(numel < local_num_experts, minimum(numel * block_size, cap), cap)


def num_tokens_post_pad(counts, block_size):
    """Entries the align kernel fills: ``sum_e round_up(cnt_e, block_size)``.

    Source: vLLM ``csrc/moe/moe_align_sum_kernels.cu`` (older public csrc; the corpus marks it
    indicative for 0.33.0): each expert's run of ids is padded to a whole block.
    """
    return total(_padded_count(c, block_size) for c in counts)


def _padded_count(count, block_size):
    """An expert's run of ``count`` ids padded to a whole number of blocks, in entries (the same
    kernel source as :func:`num_tokens_post_pad`)."""
    return round_up(count, block_size)


def moe_align_demand_bound(numel, active_experts, block_size):
    """Entries the align kernel writes at most: ``numel + min(numel, active) * (block_size - 1)``.

    Each of at most ``min(numel, active)`` non-empty experts pads its count up to a multiple of
    ``block_size`` (reference §8.1, derived from the kernel; unconfirmed for 0.33.0's csrc). The
    obligations in spec/moe_align.py prove :func:`num_tokens_post_pad` against the capacity
    directly; this closed form is the bound the corpus states (B0).
    """
    return numel + minimum(numel, active_experts) * (block_size - 1)


def expert_ids_capacity(sorted_ids_capacity, block_size):
    """``len(expert_ids)`` in blocks: ``cdiv(max_num_tokens_padded, block_size)`` (vLLM 0.33.0,
    ``moe_align_block_size.py`` line 147, ``triton.cdiv``)."""
    return cdiv(sorted_ids_capacity, block_size)


def max_write_position(counts, expert, block_size):
    """The last ``sorted_token_ids`` index written for ``expert``'s tokens (``rank_post_pad``):
    its padded prefix ``cumsum[expert]`` plus its own count minus one; ``-1`` if it has none.

    Source: vLLM ``csrc/moe/moe_align_sum_kernels.cu`` ``count_and_sort_expert_tokens_kernel``
    (``cumsum_buffer[expert] + rank``), as quoted in vllm-project/vllm#27917. ``expert`` is a
    concrete index.
    """
    prefix = total(_padded_count(c, block_size) for c in counts[:expert])
    return _last_write(prefix, counts[expert])


def _last_write(prefix, count):
    """``rank_post_pad`` of an expert's last token: its padded prefix plus its count minus one."""
    return prefix + count - 1


def align_writes(counts, num_experts, block_size):
    """``(num_tokens_post_pad, last_write)``: the entries the align kernel fills and the largest
    ``sorted_token_ids`` index it writes over the first ``num_experts`` experts (the largest
    :func:`max_write_position`; ``-1`` with no expert), in entries, by one walk over ``counts``
    (:func:`capproof.arith.fold`; same sources as :func:`max_write_position` and
    :func:`num_tokens_post_pad`).

    Invariant (capproof.induction proves claims on it for every number of experts; checked on
    ints by tests/test_model_values.py): every write so far is below the padded prefix, and the
    prefix is at most ``total + experts*(block_size - 1)`` and ``block_size * total`` of the counts
    seen (each expert pads by less than a block, and a non-empty one to at most ``block_size``
    times its count). Entries past ``num_experts`` (padding, count 0) add nothing.
    """

    def step(state, i, c):
        prefix, last = state
        return prefix + _padded_count(c, block_size), select(
            i < num_experts, maximum(last, _last_write(prefix, c)), last
        )

    def invariant(state, i, seen):
        prefix, last = state
        return all_of(
            last <= prefix - 1,
            0 <= prefix,
            prefix <= total(seen) + minimum(i, num_experts) * (block_size - 1),
            prefix <= block_size * total(seen),
        )

    return fold(step, (0, -1), counts, invariant=invariant)


def gemm_max_read_offset(post_pad, block_size_m):
    """The largest ``offset_m = blockIdx.x * BLOCK_SIZE_M + m`` a GEMM grid of
    ``cdiv(num_tokens_post_pad, BLOCK_SIZE_M)`` blocks reads from ``sorted_token_ids``.

    Source: vLLM ``csrc/moe/moe_wna16.cu`` ``moe_wna16_gemm`` (vllm-project/vllm#45496): the only
    guard is ``blockIdx.x < num_token_blocks``. ``-1`` when nothing is read.
    """
    return cdiv(post_pad, block_size_m) * block_size_m - 1


def ck_workspace_index(expert_id):
    """The per-expert workspace slot the CK MoE sorting kernel writes for ``expert_id``, before
    ROCm/rocm-libraries#6242: the id itself, so ``-1`` (an idle or padded row) writes slot ``-1``.

    Returns the slot written (an index into ``[0, num_experts)``).
    """
    return expert_id


def ck_workspace_index_6242(expert_id, num_experts):
    """After ROCm/rocm-libraries#6242: ids outside ``[0, num_experts)`` are skipped. Returns the
    slot written, or ``0`` (no write; slot 0 stands for "in range") for a skipped id."""
    valid = all_of(expert_id >= 0, expert_id < num_experts)
    return select(valid, expert_id, 0)


def splitk_sentinel_row(token_num, topk):
    """The output row a padding entry of ``sorted_token_ids`` scatters to in aiter's split-K
    ``ck_moe_stage1``: the sentinel ``(topk << 24) | token_num`` decodes to
    ``token_num * topk + topk`` (ROCm/aiter#2547)."""
    return token_num * topk + topk


def splitk_sorted_size(token_num, topk, block_m, sorted_ids_len):
    """The kernel's M extent and the rows ROCm/aiter#2547 proposes to allocate:
    ``min(token_num * topk * block_m, sorted_token_ids.shape[0])``."""
    return minimum(token_num * topk * block_m, sorted_ids_len)
