"""Machine integers: offsets GPU kernels compute in int32 / uint32.

Each obligation declares the width a kernel computes an offset in (``dtype=`` on the claim), so
the claim is that the exact offset fits that type *and* stays inside its buffer; a counterexample
shows the exact offset and the value the kernel gets (``<name>_int32``: two's complement, see
``capproof.arith.wrap``). The historical forms are kept as expected counterexamples:

- ``stride * rows`` past ``2**31 - 1``: the fused MoE output offset ``stride_cm * offs_token`` in
  int32 (corpus B6, ``moe-int32-index-space``; the report's DeepSeek-R1 numbers: hidden 7168,
  top-8, 56K tokens: ``7168 * 448000 = 3,211,264,000``), cast to int64 in vLLM 0.33.0;
- a 32-bit byte offset past 4 GiB: the UltraQuant decode kernel's buffer ``voffset`` with the KV
  block base in it (vLLM 0.33.0 folds the base into the 64-bit descriptor base instead).

The vLLM 0.33.0 forms are tagged ``engine="vllm", versions="==0.33.0"`` so ``check-config``
applies them to that release only, and only where the kernel runs: the fused MoE offset to models
with routed experts (``requires=("moe",)``: ``top_k`` from ``--model-config``), the UltraQuant
decode offset to ``--kv-cache-dtype ultraquant_4bit`` (``requires=("ultraquant",)``), the
slot-mapping row offset to every deployment (``max_model_len``, ``block_size``, ``dcp`` and
``max_num_seqs`` pinned from the flags). The historical forms (int32 ``offs_token`` before
vllm#13693 / sglang#4727; the block base inside the 32-bit voffset, which no release computes)
are what-ifs with no ``engine=`` tag: ``check-config`` does not apply them.
"""

from capproof import Choice, Range, fits, less_than, obligation
from models.vllm.block_table import runner_block_table_width
from models.vllm.kernel_offsets import (
    fused_moe_c_offset,
    slot_mapping_row_offset,
    ultraquant_cache_block_stride,
    ultraquant_cache_byte_offset_unfolded,
    ultraquant_in_block_byte_offset,
)

# --- fused MoE: C[offs_token, offs_cn], C = (M, top_k, N) ----------------------------------------

_MOE_DOMAIN = {
    "num_tokens": Range(1, 2**17),  # M: tokens in the step (chunked prefill up to 128K)
    "top_k": Choice(1, 2, 4, 6, 8),
    "N": Choice(2048, 4096, 7168),  # C's row length: 2 * moe_intermediate (w1) or hidden (w2); 7168 = DeepSeek-R1
    "offs_token": Range(0, 2**20),  # a row of the flattened M * top_k dim
    "offs_cn": Range(0, 2**13),  # a column
}
_MOE_ASSUMPTIONS = {
    "offs_token < num_valid_tokens = M * top_k (masked rows are not stored)": lambda offs_token, num_tokens, top_k: (
        offs_token < num_tokens * top_k
    ),
    "offs_cn < N (masked columns are not stored)": lambda offs_cn, N: offs_cn < N,
}


@obligation(
    domain=_MOE_DOMAIN,
    assumptions=_MOE_ASSUMPTIONS,
    expect="counterexample",
    case="moe-int32-index-space",
    sources=["vllm-project/vllm#13693", "sgl-project/sglang#4727", "vllm-project/vllm#12491"],
)
def fused_moe_c_offset_int32_before_13693(num_tokens, top_k, N, offs_token, offs_cn):
    """Before vllm#13693 / sglang#4727, ``offs_token`` was int32, so ``stride_cm * offs_token``
    was computed in int32: past ``2**31 - 1`` it wraps negative and the store lands outside C
    (the reports: DeepSeek-R1 prompts over ~32-40K tokens crash with an illegal memory access)."""
    return less_than(offset=fused_moe_c_offset(offs_token, offs_cn, N), numel=num_tokens * top_k * N, dtype="int32")


@obligation(
    domain=_MOE_DOMAIN,
    assumptions=_MOE_ASSUMPTIONS,
    expect="proved",
    case="moe-int32-index-space",
    sources=["vllm==0.33.0 vllm/model_executor/layers/fused_moe/fused_moe.py:162,292"],
    engine="vllm",
    versions="==0.33.0",
    requires=("moe",),
)
def fused_moe_c_offset_v0_33(num_tokens, top_k, N, offs_token, offs_cn):
    """vLLM 0.33.0 casts ``offs_token`` to int64 (fused_moe.py:162): the offset fits and every
    stored entry is inside ``C`` (``M * top_k * N`` elements)."""
    return less_than(offset=fused_moe_c_offset(offs_token, offs_cn, N), numel=num_tokens * top_k * N, dtype="int64")


# --- UltraQuant D=256 decode (ROCm FlyDSL): 32-bit buffer voffset, in bytes ------------------------

_UQ_DOMAIN = {
    "num_blocks": Range(1, 2**24),  # KV-cache blocks of one layer's cache view
    "phys_block": Range(0, 2**24),  # a block id read from the block table
    "slot": Range(0, 255),  # token within the block
    "kv_h": Range(0, 7),  # KV head (per rank)
    "chunk_in_tok": Range(0, 3),  # lane % 4
    "half": Range(0, 1),  # HALVES = 2 for head_dim 256
    "block_size": Choice(64, 128, 256),  # 64 pinned by UltraQuantAttentionBackend; 128/256 for hybrid models
    "num_kv_heads": Choice(1, 2, 4, 8),
    "padded_slot": Choice(272),  # slot_size(256) (ultraquant/format.py:195), unpadded
}
_UQ_ASSUMPTIONS = {
    "phys_block < num_blocks": lambda phys_block, num_blocks: phys_block < num_blocks,
    "slot < block_size": lambda slot, block_size: slot < block_size,
    "kv_h < num_kv_heads": lambda kv_h, num_kv_heads: kv_h < num_kv_heads,
}
_UQ_SOURCE = "vllm==0.33.0 vllm/v1/attention/ops/flydsl_kernels/ultraquant_decode_hd256.py:171-173,450-462"


@obligation(domain=_UQ_DOMAIN, assumptions=_UQ_ASSUMPTIONS, expect="counterexample", sources=[_UQ_SOURCE])
def ultraquant_byte_offset_uint32_with_block_base(
    num_blocks, phys_block, slot, kv_h, chunk_in_tok, half, block_size, num_kv_heads, padded_slot
):
    """The form the 0.33.0 comment says wraps: the block base ``phys_block * _stride_cache_block``
    inside the 32-bit voffset. Past 4 GiB of cache view the offset wraps and the load reads a
    block in the first 4 GiB: no fault, wrong K codes."""
    return less_than(
        byte=ultraquant_cache_byte_offset_unfolded(
            phys_block, slot, kv_h, chunk_in_tok, half, block_size, num_kv_heads, padded_slot
        ),
        cache_bytes=num_blocks * ultraquant_cache_block_stride(block_size, num_kv_heads, padded_slot),
        dtype="uint32",
    )


@obligation(
    domain={k: v for k, v in _UQ_DOMAIN.items() if k not in ("num_blocks", "phys_block")},
    assumptions={k: v for k, v in _UQ_ASSUMPTIONS.items() if k != "phys_block < num_blocks"},
    expect="proved",
    sources=[_UQ_SOURCE],
    engine="vllm",
    versions="==0.33.0",
    requires=("ultraquant",),
)
def ultraquant_in_block_byte_offset_v0_33(slot, kv_h, chunk_in_tok, half, block_size, num_kv_heads, padded_slot):
    """vLLM 0.33.0 folds the block base into the descriptor's 64-bit base: the 32-bit voffset of
    a K-code load is the in-block byte offset, which fits uint32 whatever the cache size (that it
    stays inside the block is ``slot < block_size``, an assumption)."""
    return fits(
        "uint32", voffset=ultraquant_in_block_byte_offset(slot, kv_h, chunk_in_tok, half, num_kv_heads, padded_slot)
    )


# --- the slot-mapping kernel's row offset (vLLM 0.33.0 block_table.py:352), int32 ----------------


@obligation(
    domain={
        "max_num_reqs": Range(1, 2**12),
        "req_idx": Range(0, 2**12),
        "max_model_len": Range(1, 2**21),
        "block_size": Choice(16, 32, 64, 128, 256),
        "dcp": Choice(1, 2, 4, 8),
    },
    assumptions={
        "req_idx < max_num_reqs (the padding program returns first)": lambda req_idx, max_num_reqs: (
            req_idx < max_num_reqs
        )
    },
    expect="proved",
    sources=["vllm==0.33.0 vllm/v1/worker/block_table.py:352"],
    engine="vllm",
    versions="==0.33.0",
)
def slot_mapping_row_offset_fits_int32_v0_33(max_num_reqs, req_idx, max_model_len, block_size, dcp):
    """``row_offset = req_idx * block_table_stride`` is an int32 product (``tl.program_id`` times
    an int32 argument): it does not overflow for up to 4096 requests of up to 2**21 tokens."""
    width = runner_block_table_width(max_model_len, block_size, dcp)
    return fits("int32", row_offset=slot_mapping_row_offset(req_idx, width))
