"""vLLM block-table widths: the runner's table and the DSA indexer's expanded copy of it.

All widths are in **blocks per request row** (columns of an int32 ``(rows, width)`` table);
``max_model_len`` and ``max_len`` are in **tokens**; ``block_size`` and ``kernel_block_size`` in
tokens per block; ``dcp`` is the decode-context-parallel world size (a count).

The family's history, which these functions transcribe version by version:

- base: ``max_num_blocks_per_req = cdiv(max_len, block_size * dcp)``
  (``vllm/v1/kv_cache_interface.py::AttentionSpec``).
- vllm-project/vllm#39324: the runner aligns its width to 128 tokens with ``128 // block_size``
  (``vllm/v1/worker/block_table.py``, MRV1 ``MultiGroupBlockTable``); the indexer's
  ``expanded_block_table_buffer`` kept ``cdiv(max_model_len, block_size * dcp)``
  (``vllm/v1/attention/backends/mla/indexer.py``) -> corpus case vllm-dsa-ebt-128align.
- vllm-project/vllm#50302: one helper ``get_block_table_width`` (gcd alignment, kernel-block
  split) for both sides.
- vllm-project/vllm#50823: ``UniformTypeKVCacheSpecs.max_num_blocks_per_req`` divides by ``dcp``
  like ``AttentionSpec``; before it, the runner's width for DSA's merged group was undivided
  -> corpus case vllm-dsa-ebt-dcp-uniformtype.
- vLLM 0.33.0: ``get_block_table_width(max_num_blocks, block_size, token_alignment=128)``
  without the kernel factor, which callers apply (``vllm/v1/worker/utils.py``).

Every function raises ZeroDivisionError for a zero ``block_size``/``dcp``/``kernel_block_size``
on ints; on symbolic ints capproof reports a divisor that can be zero.
"""

from __future__ import annotations

from capproof import cdiv, gcd, maximum

__all__ = [
    "max_num_blocks_per_req",
    "max_num_blocks_per_req_base",
    "uniform_type_max_num_blocks_per_req_before_50823",
    "indexer_block_table_width_before_50302",
    "runner_block_table_width_39324",
    "get_block_table_width_50302",
    "get_block_table_width",
    "runner_block_table_width",
    "indexer_block_table_width",
    "slot_mapping_max_column",
]

#: Token alignment of a block-table row (vLLM's default ``token_alignment``), in tokens.
TOKEN_ALIGNMENT = 128


def max_num_blocks_per_req(max_len, block_size, dcp=1):
    """Blocks per request for an attention spec sharded over DCP ranks.

    ``cdiv(max_len, block_size * dcp)``. Source: vLLM 0.33.0
    ``vllm/v1/kv_cache_interface.py::AttentionSpec.max_num_blocks_per_req`` (``kv_shard_count =
    decode_context_parallel_size`` when ``dcp_sharded``); the same formula since the DCP support
    (the "base" width of the corpus).
    """
    return cdiv(max_len, block_size * dcp)


def max_num_blocks_per_req_base(max_len, block_size):
    """Blocks per request of the base ``KVCacheSpec``: ``cdiv(max_len, block_size)``, no DCP divisor.

    Source: vLLM 0.33.0 ``vllm/v1/kv_cache_interface.py::KVCacheSpec.max_num_blocks_per_req``.
    """
    return cdiv(max_len, block_size)


def uniform_type_max_num_blocks_per_req_before_50823(max_len, block_size, dcp=1):
    """``UniformTypeKVCacheSpecs.max_num_blocks_per_req`` before vllm-project/vllm#50823.

    The class did not override the method, so DSA's merged indexer+MLA group fell back to the
    base formula and ignored ``dcp`` (vllm-project/vllm#50825). ``dcp`` is accepted and unused,
    exactly as in the engine.
    """
    del dcp
    return max_num_blocks_per_req_base(max_len, block_size)


def indexer_block_table_width_before_50302(max_model_len, block_size, dcp=1):
    """Width of the indexer's ``expanded_block_table_buffer`` before vllm-project/vllm#50302.

    ``cdiv(max_model_len, block_size * get_total_cp_world_size())`` computed by
    ``DeepseekV32IndexerMetadataBuilder`` itself, with no 128-token alignment
    (``vllm/v1/attention/backends/mla/indexer.py``, as quoted in vllm-project/vllm#48404 and
    vllm-project/vllm#50050).
    """
    return cdiv(max_model_len, block_size * dcp)


def runner_block_table_width_39324(max_num_blocks, block_size):
    """Runner block-table width after vllm-project/vllm#39324 (before #50302).

    ``cdiv(n, 128 // block_size) * (128 // block_size)`` when ``block_size <= 128``, else ``n``
    (``vllm/v1/worker/block_table.py``, MRV1). ``block_size`` must be concrete (it is branched on).
    """
    if block_size <= TOKEN_ALIGNMENT:
        block_alignment = TOKEN_ALIGNMENT // block_size
        return cdiv(max_num_blocks, block_alignment) * block_alignment
    return max_num_blocks


def get_block_table_width_50302(max_num_blocks, block_size, kernel_block_size):
    """``get_block_table_width`` as introduced by vllm-project/vllm#50302 (kernel split included).

    ``block_alignment = 128 // gcd(128, block_size)``; ``n = cdiv(n, a) * a``;
    ``return n * block_size // kernel_block_size`` (``vllm/v1/worker/block_table.py``).
    ``block_size`` must be concrete (``gcd``).
    """
    block_alignment = TOKEN_ALIGNMENT // gcd(TOKEN_ALIGNMENT, block_size)
    max_num_blocks = cdiv(max_num_blocks, block_alignment) * block_alignment
    return max_num_blocks * block_size // kernel_block_size


def get_block_table_width(max_num_blocks, block_size, token_alignment=TOKEN_ALIGNMENT):
    """``get_block_table_width`` of vLLM 0.33.0 (``vllm/v1/worker/block_table.py``), verbatim.

    Raises ValueError for ``token_alignment <= 0``; ``token_alignment=None`` returns the count
    unaligned. ``block_size`` must be concrete (``math.gcd``).
    """
    if token_alignment is not None:
        if token_alignment <= 0:
            raise ValueError("token_alignment must be positive")
        block_alignment = token_alignment // gcd(token_alignment, block_size)
        max_num_blocks = cdiv(max_num_blocks, block_alignment) * block_alignment
    return max_num_blocks


def runner_block_table_width(max_model_len, block_size, dcp=1, max_encoder_len=0):
    """Path 1 of vLLM 0.33.0: the V1 runner's ``MultiGroupBlockTable`` width (blocks per row).

    ``get_block_table_width(spec.max_num_blocks_per_req(cfg, max(max_model_len, max_encoder_len)),
    block_size)`` (``vllm/v1/worker/gpu_model_runner.py::may_reinitialize_input_batch``,
    ``vllm/v1/worker/block_table.py::MultiGroupBlockTable``) for an ``AttentionSpec``.
    """
    return get_block_table_width(
        max_num_blocks_per_req(maximum(max_model_len, max_encoder_len), block_size, dcp), block_size
    )


def indexer_block_table_width(max_model_len, block_size, dcp=1, kernel_block_size=None):
    """Path 3 of vLLM 0.33.0: ``block_table_width`` handed to the indexer's metadata builder.

    ``width = get_block_table_width(spec.max_num_blocks_per_req(cfg, max_model_len),
    spec.block_size)``; ``width *= block_size // kernel_block_size`` when a kernel block size
    applies (``vllm/v1/worker/utils.py::AttentionGroup.create_metadata_builders``). Sizes
    ``expanded_block_table_buffer`` ``(max_num_batched_tokens, width)`` and ``kernel_block_table``.
    """
    width = get_block_table_width(max_num_blocks_per_req(max_model_len, block_size, dcp), block_size)
    if kernel_block_size is not None:
        width *= block_size // kernel_block_size
    return width


def slot_mapping_max_column(max_model_len, block_size, dcp=1):
    """Largest block-table column the slot-mapping kernel reads: ``(max_model_len - 1) // (block_size * dcp)``.

    The Triton ``ComputeSlotMappingKernel`` reads ``block_table[req, pos // (block_size * dcp)]``
    for ``pos < max_model_len`` (vLLM 0.33.0 ``vllm/v1/worker/block_table.py``).
    """
    return (max_model_len - 1) // (block_size * dcp)
