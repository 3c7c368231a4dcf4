"""Offsets that GPU kernels compute in fixed-width integers.

A Triton or CUDA kernel forms an element or byte offset as ``stride * row + column`` in the
integer type of its operands: int32 for Triton's program ids, loaded int32 index tensors and
integer arguments below 2**31; uint32 for an AMD buffer descriptor's ``voffset``. Past the type's
range the product wraps (two's complement) and the kernel reads or writes another element, often
without faulting. These functions give the **exact** offsets (unbounded Python ints, in the units
named); the obligations in spec/kernel_offsets.py declare the width each kernel computes them in
(``less_than(..., dtype="int32")``), so capproof checks that they fit and shows the wrapped value
(:func:`capproof.arith.wrap`) in a counterexample.
"""

from __future__ import annotations


def fused_moe_c_offset(offs_token, offs_cn, stride_cm, stride_cn=1):
    """Element offset of the output entry ``C[offs_token, offs_cn]`` that ``fused_moe_kernel``
    stores: ``stride_cm * offs_token + stride_cn * offs_cn`` (elements of C).

    ``C`` is ``intermediate_cache1``/``intermediate_cache3``, a ``(M, top_k, N)`` view of
    ``cache13`` (``fused_moe.py:1754``), passed with ``stride_cm = C.stride(1) = N`` and
    ``stride_cn = C.stride(2) = 1``; ``offs_token`` is a row of the flattened ``M * top_k`` dim
    (a sorted token id below ``num_valid_tokens = M * top_k``), ``offs_cn`` a column below ``N``.

    Source: vLLM 0.33.0 ``vllm/model_executor/layers/fused_moe/fused_moe.py:292``
    (``c_ptrs = c_ptr + stride_cm * offs_token[:, None] + stride_cn * offs_cn[None, :]``);
    ``offs_token`` is cast to int64 at line 162 ("to prevent overflow in stride*offset
    products"). Before vllm-project/vllm#13693 and sgl-project/sglang#4727 it was the int32
    loaded from ``sorted_token_ids`` (corpus B6, ``moe-int32-index-space``).
    """
    return stride_cm * offs_token + stride_cn * offs_cn


def ultraquant_cache_block_stride(block_size, num_kv_heads, padded_slot):
    """Bytes of one KV-cache block of the UltraQuant D=256 decode kernel:
    ``block_size * num_kv_heads * padded_slot`` (cache layout
    ``[num_blocks, block_size, num_kv_heads, padded_slot]`` uint8, ``padded_slot`` bytes per
    (token, head) slot, >= 272).

    Source: vLLM 0.33.0 ``vllm/v1/attention/ops/flydsl_kernels/ultraquant_decode_hd256.py:171-173``
    (``_stride_cache_head``, ``_stride_cache_pos``, ``_stride_cache_block``).
    """
    return block_size * num_kv_heads * padded_slot


def ultraquant_in_block_byte_offset(slot, kv_h, chunk_in_tok, half, num_kv_heads, padded_slot):
    """Byte offset, from the start of its KV-cache block, of the last byte of one 16-byte K-code
    load of the UltraQuant D=256 decode kernel (vLLM 0.33.0): ``slot * _stride_cache_pos +
    kv_h * _stride_cache_head + chunk_in_tok * LANE_CODE_BYTES + half * 16 + 15``, with
    ``LANE_CODE_BYTES = 32`` (``ultraquant_decode_hd256.py:55``), ``slot`` the token within the
    block, ``kv_h`` the KV head, ``chunk_in_tok`` in ``0..3`` and ``half`` in ``0..HALVES-1 = 0..1``.

    In vLLM 0.33.0 this is the 32-bit ``voffset`` of the buffer load: the block's base
    (``phys_block * _stride_cache_block``) is folded into the descriptor's 64-bit base pointer
    (``ultraquant_decode_hd256.py:450-455``, "a buffer descriptor addresses with a 32-bit voffset,
    so ``phys_block * c_block`` wraps once the cache view exceeds 4 GiB").
    """
    stride_cache_head = padded_slot
    stride_cache_pos = num_kv_heads * padded_slot
    return slot * stride_cache_pos + kv_h * stride_cache_head + chunk_in_tok * 32 + half * 16 + 15


def ultraquant_cache_byte_offset_unfolded(
    phys_block, slot, kv_h, chunk_in_tok, half, block_size, num_kv_heads, padded_slot
):
    """The same byte with the block base in the offset (the form the 0.33.0 comment says wraps):
    ``phys_block * _stride_cache_block + ultraquant_in_block_byte_offset(...)``, bytes from the
    start of the layer's cache view."""
    return phys_block * ultraquant_cache_block_stride(
        block_size, num_kv_heads, padded_slot
    ) + ultraquant_in_block_byte_offset(slot, kv_h, chunk_in_tok, half, num_kv_heads, padded_slot)


def slot_mapping_row_offset(req_idx, block_table_stride):
    """``row_offset = req_idx * block_table_stride`` of the slot-mapping kernel (elements of the
    flat int32 block table): ``req_idx`` is ``tl.program_id(0)`` (int32) and
    ``block_table_stride`` the table's row stride (= its width, an int argument Triton passes as
    int32 below 2**31), so the product is computed in int32.

    Source: vLLM 0.33.0 ``vllm/v1/worker/block_table.py:352`` (``_compute_slot_mapping_kernel``).
    """
    return req_idx * block_table_stride
