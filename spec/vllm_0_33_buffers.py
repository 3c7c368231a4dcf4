"""vLLM 0.33.0's pre-allocated buffers (the inventory) against the demand of their writers.

Every obligation here takes its capacity from the committed inventory
(``proofs/inventory/vllm-0.33.0.json``, ``capproof.inventory.capacity``): the shape string the
inventory traced from the wheel (or, for ``read`` entries, read from the allocation call), never a
transcription. The demand side is a family of ``spec/_families.py`` stated once with the
scheduler, CUDA-graph and dummy-run facts it rests on. ``table(file, FAMILY, {"Owner.attribute":
"writer lines"})`` declares one obligation per entry; the writer lines are the lines of the
entry's file that slice or index the buffer (its attribute or a ``.numpy()``/``.np``/``.gpu``/
``.cpu`` view of it), found by a text search of the file and read; each family was checked against
those slices (``[:num_reqs]``, ``[req_index]``, ``[:num_tokens_padded]``, …). Entries with no line
listed are written through a pointer by a kernel or through an alias the search does not follow;
their family is assigned from the owner's other buffers (per-request state of the V2 runner:
indexed by the request-state index, ``vllm/v1/worker/gpu/states.py:30,99-100``). These
assignments were not each confirmed by reading the kernel; a review should treat them as such.

``ALIASES`` binds a local name of a ``read`` shape (``max_num_tokens``) to the config name it is
assigned from, with that line; traced shapes use config names and need none.
"""

from __future__ import annotations

from spec._families import (
    ARANGE,
    DECODE_OFFSETS,
    DECODE_ROWS,
    QUERY_START_LOC,
    REQUESTS,
    TOKEN_OFFSETS,
    TOKEN_TOPK,
    TOKENS,
)
from spec._inventory import cover

INVENTORY = "proofs/inventory/vllm-0.33.0.json"
_V = "vllm==0.33.0 "

_TOKENS = "max_num_batched_tokens"
ALIASES = {
    "vllm/v1/worker/gpu_model_runner.py": {"max_num_tokens": (_TOKENS, "vllm/v1/worker/gpu_model_runner.py:524")},
    "vllm/v1/spec_decode/llm_base_proposer.py": {
        "max_num_tokens": (_TOKENS, "vllm/v1/spec_decode/llm_base_proposer.py:142"),
        "max_batch_size": ("max_num_reqs", "vllm/v1/spec_decode/llm_base_proposer.py:141"),
        "max_positions": (_TOKENS, "vllm/v1/spec_decode/llm_base_proposer.py:163 (= max_num_tokens)"),
    },
    "vllm/v1/spec_decode/extract_hidden_states.py": {
        "max_batch_size": ("max_num_reqs", "vllm/v1/spec_decode/llm_base_proposer.py:141"),
    },
    "vllm/v1/attention/backends/mla/sparse_swa.py": {
        "max_tokens": (_TOKENS, "vllm/v1/attention/backends/mla/sparse_swa.py:503")
    },
    "vllm/v1/worker/gpu/spec_decode/speculator.py": {
        "max_num_tokens": (_TOKENS, "vllm/v1/worker/gpu/spec_decode/speculator.py:119")
    },
    "vllm/v1/worker/gpu/spec_decode/dflash/speculator.py": {
        "max_num_tokens": (_TOKENS, "vllm/v1/worker/gpu/spec_decode/speculator.py:119 (inherited)")
    },
    "vllm/v1/worker/gpu/spec_decode/dspark/speculator.py": {
        "max_num_tokens": (_TOKENS, "vllm/v1/worker/gpu/spec_decode/speculator.py:119 (inherited)")
    },
    "vllm/v1/worker/gpu/spec_decode/multi_module_mtp/speculator.py": {
        "max_num_tokens": (_TOKENS, "vllm/v1/worker/gpu/spec_decode/speculator.py:119 (inherited)")
    },
    "vllm/v1/worker/gpu/spec_decode/target_dependent_ar/speculator.py": {
        "max_num_tokens": (_TOKENS, "vllm/v1/worker/gpu/spec_decode/speculator.py:119 (inherited)")
    },
    "vllm/v1/attention/backends/mla/flashinfer_mla_sparse_sm90.py": {
        "max_tokens": (
            _TOKENS,
            "vllm/v1/attention/backends/mla/flashinfer_mla_sparse_sm90.py:459-463 (_SM90State(..., max_num_batched_tokens))",
        )
    },
    "vllm/v1/attention/backends/rocm_octave_attn.py": {
        "max_tokens": (_TOKENS, "vllm/v1/attention/backends/rocm_octave_attn.py:190")
    },
    "vllm/v1/attention/backends/flash_attn.py": {
        "max_num_tokens": (_TOKENS, "vllm/v1/attention/backends/flash_attn.py:805")
    },
    "vllm/v1/attention/backends/flashinfer.py": {
        "max_num_tokens": (_TOKENS, "vllm/v1/attention/backends/flashinfer.py:2106")
    },
    "vllm/v1/worker/gpu/attn_utils.py": {
        "max_num_tokens": (
            _TOKENS,
            "vllm/v1/worker/gpu/model_runner.py:231,776-777 (FastPrefillHelper(..., self.max_num_tokens))",
        )
    },
    "vllm/v1/spec_decode/dflash.py": {
        "max_num_tokens": (_TOKENS, "vllm/v1/spec_decode/llm_base_proposer.py:142 (inherited)")
    },
    "vllm/v1/worker/gpu/input_batch.py": {
        "max_num_tokens": (
            _TOKENS,
            "vllm/v1/worker/gpu/model_runner.py:231 (InputBuffers(max_num_tokens=self.max_num_tokens))",
        )
    },
}


def table(file: str, family, entries: dict[str, str]) -> None:
    """One obligation per ``"Owner.attribute": "writer lines"`` of ``file`` (see the module docstring),
    declared at the line of its key in the call."""
    import inspect

    frame = inspect.getframeinfo(inspect.currentframe().f_back, 0)  # not stack(): it reads every frame's source
    source = open(frame.filename, encoding="utf-8").read().splitlines()
    for key, lines in entries.items():
        writers = [f"{_V}{file}:{ln}" for ln in lines.split()]
        line = next(
            (i for i in range(frame.lineno, len(source) + 1) if source[i - 1].lstrip().startswith(f'"{key}":')),
            frame.lineno,
        )
        cover(INVENTORY, f"{file}::{key}", family, writers, aliases=ALIASES.get(file), where=(frame.filename, line))


# =============================================================================================
# More aliases for read shapes whose local name is an expression over config names.

ALIASES["vllm/v1/worker/gpu_model_runner.py"]["arange_size"] = (
    "maximum(max_num_reqs + 1, max_num_batched_tokens)",
    "vllm/v1/worker/gpu_model_runner.py:855",
)
ALIASES["vllm/v1/spec_decode/llm_base_proposer.py"]["max_num_slots_for_arange"] = (
    "maximum(max_num_reqs + 1, max_num_batched_tokens)",
    "vllm/v1/spec_decode/llm_base_proposer.py:220",
)
ALIASES["vllm/v1/spec_decode/extract_hidden_states.py"]["max_num_tokens"] = (
    "max_num_batched_tokens + max_num_reqs",
    "vllm/v1/spec_decode/extract_hidden_states.py:56-58",
)
ALIASES["vllm/v1/attention/backends/mla/indexer.py"] = {
    "next_n": ("num_speculative_tokens + 1", "vllm/v1/attention/backends/mla/indexer.py:1030")
}
ALIASES["vllm/v1/spec_decode/dflash.py"].update(
    {
        "max_padded_query_tokens": (
            "maximum(max_num_reqs * (1 + num_speculative_tokens), max_cudagraph_capture_size)",
            "vllm/v1/spec_decode/dflash.py:41-45",
        ),
        "max_positions": (
            "max_num_batched_tokens + maximum(max_num_reqs * (1 + num_speculative_tokens), max_cudagraph_capture_size)",
            "vllm/v1/spec_decode/dflash.py:47",
        ),
    }
)

# vllm/v1/attention/backends/flash_attn.py
table(
    "vllm/v1/attention/backends/flash_attn.py",
    REQUESTS,
    {
        "FlashAttentionMetadataBuilder._dcp_context_kv_lens": "886 887 888",
        "FlashAttentionMetadataBuilder.persistent_rswa_prefix_lens": "1016",
    },
)
table(
    "vllm/v1/attention/backends/flash_attn.py",
    TOKENS,
    {
        "FlashAttentionMetadataBuilder.mm_prefix_query_ranges_cpu": "1001",
        "FlashAttentionMetadataBuilder.mm_prefix_query_ranges_gpu": "999",
    },
)

# vllm/v1/attention/backends/flashinfer.py
table(
    "vllm/v1/attention/backends/flashinfer.py",
    TOKENS,
    {
        "FlashInferImpl._nvfp4_fp8_out": "2427 2494 2603 2736",
    },
)
table(
    "vllm/v1/attention/backends/flashinfer.py",
    REQUESTS,
    {
        "FlashInferMetadataBuilder.paged_kv_last_page_len": "1473 1545",
    },
)

# vllm/v1/attention/backends/flex_attention.py
table(
    "vllm/v1/attention/backends/flex_attention.py",
    TOKENS,
    {
        "FlexAttentionMetadataBuilder.persistent_doc_ids": "",
    },
)
table(
    "vllm/v1/attention/backends/flex_attention.py",
    REQUESTS,
    {
        "FlexAttentionMetadataBuilder.persistent_offset_tensor": "",
        "FlexAttentionMetadataBuilder.persistent_rswa_prefix_lens": "",
        "FlexAttentionMetadataBuilder.persistent_seq_lens": "",
    },
)
table(
    "vllm/v1/attention/backends/flex_attention.py",
    QUERY_START_LOC,
    {
        "FlexAttentionMetadataBuilder.persistent_query_start_loc": "",
    },
)

# vllm/v1/attention/backends/gdn_attn.py
table(
    "vllm/v1/attention/backends/gdn_attn.py",
    DECODE_OFFSETS,
    {
        "GDNAttentionMetadataBuilder.non_spec_query_start_loc": "493 527 666 669 670 671",
        "GDNAttentionMetadataBuilder.spec_query_start_loc": "483 644 647 648 649",
    },
)
table(
    "vllm/v1/attention/backends/gdn_attn.py",
    DECODE_ROWS,
    {
        "GDNAttentionMetadataBuilder.non_spec_state_indices_tensor": "532 658 664 777 780",
        "GDNAttentionMetadataBuilder.num_accepted_tokens": "507 509 651 654 655",
        "GDNAttentionMetadataBuilder.spec_sequence_masks": "625 626 628 629",
        "GDNAttentionMetadataBuilder.spec_state_indices_tensor": "619 622 623 768 771",
    },
)

# vllm/v1/attention/backends/linear_attn.py
table(
    "vllm/v1/attention/backends/linear_attn.py",
    DECODE_ROWS,
    {
        "BailingLinearAttentionMetadataBuilder.decode_legacy_state_indices_tensor": "257",
        "BailingLinearAttentionMetadataBuilder.decode_num_accepted_tokens": "285 289",
        "BailingLinearAttentionMetadataBuilder.decode_state_indices_tensor": "250 254",
    },
)
table(
    "vllm/v1/attention/backends/linear_attn.py",
    DECODE_OFFSETS,
    {
        "BailingLinearAttentionMetadataBuilder.decode_query_start_loc": "277 282",
    },
)

# vllm/v1/attention/backends/mamba_attn.py
table(
    "vllm/v1/attention/backends/mamba_attn.py",
    DECODE_ROWS,
    {
        "BaseMambaAttentionMetadataBuilder.decode_is_flush_d": "679 683",
        "BaseMambaAttentionMetadataBuilder.decode_num_accepted_tokens": "661 664",
        "BaseMambaAttentionMetadataBuilder.decode_replayssm_state_indices_d": "697",
        "BaseMambaAttentionMetadataBuilder.decode_write_pos_d": "672 676",
        "BaseMambaAttentionMetadataBuilder.state_indices_tensor_d": "484 652 655 656 698 709 752",
    },
)

# vllm/v1/attention/backends/mla/flashinfer_mla_sparse_sm90.py
table(
    "vllm/v1/attention/backends/mla/flashinfer_mla_sparse_sm90.py",
    TOKEN_OFFSETS,
    {
        "_SM90State._arange_cpu": "",
        "_SM90State._kv_cpu": "358 359 362",
        "_SM90State._qo_cpu": "",
        "_SM90State.kv_indptr": "",
    },
)
table(
    "vllm/v1/attention/backends/mla/flashinfer_mla_sparse_sm90.py",
    TOKENS,
    {
        "_SM90State._lens_cpu": "333 357",
    },
)

# vllm/v1/attention/backends/mla/flashmla.py
table(
    "vllm/v1/attention/backends/mla/flashmla.py",
    QUERY_START_LOC,
    {
        "FlashMLAMetadataBuilder.cg_buf_num_splits": "194 195",
    },
)

# vllm/v1/attention/backends/mla/flashmla_sparse.py
table(
    "vllm/v1/attention/backends/mla/flashmla_sparse.py",
    REQUESTS,
    {
        "FlashMLASparseMetadataBuilder.dummy_block_table": "501 678",
        "FlashMLASparseMetadataBuilder.max_model_len_tensor": "500 679",
        "FlashMLASparseMetadataBuilder.topk_tokens_tensor": "",
    },
)
table(
    "vllm/v1/attention/backends/mla/flashmla_sparse.py",
    QUERY_START_LOC,
    {
        "FlashMLASparseMetadataBuilder.num_splits_buffer": "",
    },
)

# vllm/v1/attention/backends/mla/indexer.py
table(
    "vllm/v1/attention/backends/mla/indexer.py",
    TOKENS,
    {
        "DeepseekV32IndexerMetadataBuilder.compressed_slot_mapping_buffer": "1456",
        "DeepseekV32IndexerMetadataBuilder.decode_indices_buffer": "1686",
        "DeepseekV32IndexerMetadataBuilder.decode_lens_buffer": "1206 1252 1253 1604 1607 1609 1685",
        "DeepseekV32IndexerMetadataBuilder.decode_seq_lens_buffer": "1164 1203 1204 1232 1235 1236 1683",
        "DeepseekV32IndexerMetadataBuilder.expanded_block_table_buffer": "1205 1240 1249 1684",
        "DeepseekV32IndexerMetadataBuilder.expanded_seq_lens_buffer": "1732 1735 1736",
        "DeepseekV32IndexerMetadataBuilder.global_decode_seq_lens_buffer": "1305 1308 1309 1689",
        "DeepseekV32IndexerMetadataBuilder.per_req_decode_lens_buffer": "1606 1764",
        "KpoolTailMetadataBuilder.slot_mapping_buffer": "",
    },
)

# vllm/v1/attention/backends/mla/rocm_aiter_mla.py
table(
    "vllm/v1/attention/backends/mla/rocm_aiter_mla.py",
    QUERY_START_LOC,
    {
        "AiterMLAMetadataBuilder._g_kv_indptr_buf": "1680 1687",
        "AiterMLAMetadataBuilder.paged_kv_indptr": "1642 1645 1646 1787",
        "AiterMLAMetadataBuilder.qo_indptr": "1657 1660 1661",
    },
)
table(
    "vllm/v1/attention/backends/mla/rocm_aiter_mla.py",
    REQUESTS,
    {
        "AiterMLAMetadataBuilder._graph_seq_lens": "1566 1569",
        "AiterMLAMetadataBuilder.paged_kv_last_page_len": "1573",
    },
)

# vllm/v1/attention/backends/mla/rocm_aiter_mla_sparse.py
table(
    "vllm/v1/attention/backends/mla/rocm_aiter_mla_sparse.py",
    TOKEN_OFFSETS,
    {
        "ROCMAiterMLASparseMetadataBuilder.paged_kv_indptr": "638 640 641 646 1105",
    },
)
table(
    "vllm/v1/attention/backends/mla/rocm_aiter_mla_sparse.py",
    TOKENS,
    {
        "ROCMAiterMLASparseMetadataBuilder.paged_kv_last_page_len": "645",
        "ROCMAiterMLASparseMetadataBuilder.req_id_per_token_buffer": "616 625 643",
    },
)

# vllm/v1/attention/backends/mla/sparse_swa.py
table(
    "vllm/v1/attention/backends/mla/sparse_swa.py",
    TOKENS,
    {
        "DeepseekSparseSWAMetadataBuilder.decode_swa_indices": "759",
        "DeepseekSparseSWAMetadataBuilder.decode_swa_lens": "636 760",
        "DeepseekSparseSWAMetadataBuilder.is_valid_token": "624",
        "DeepseekSparseSWAMetadataBuilder.left_visible": "837",
        "DeepseekSparseSWAMetadataBuilder.prefill_swa_indices": "713 763",
        "DeepseekSparseSWAMetadataBuilder.prefill_swa_lens": "714 768",
        "DeepseekSparseSWAMetadataBuilder.right_visible": "837",
        "DeepseekSparseSWAMetadataBuilder.span_ends": "823",
        "DeepseekSparseSWAMetadataBuilder.span_starts": "822",
        "DeepseekSparseSWAMetadataBuilder.token_to_req_indices": "",
    },
)
table(
    "vllm/v1/attention/backends/mla/sparse_swa.py",
    QUERY_START_LOC,
    {
        "DeepseekSparseSWAMetadataBuilder.no_replay_start": "",
        "DeepseekSparseSWAMetadataBuilder.span_indptr": "820",
    },
)

# vllm/v1/attention/backends/mla/xpu_mla_sparse.py
table(
    "vllm/v1/attention/backends/mla/xpu_mla_sparse.py",
    TOKENS,
    {
        "XPUMLASparseMetadataBuilder.req_id_per_token_buffer": "168 172",
    },
)

# vllm/v1/attention/backends/rocm_aiter_fa.py
table(
    "vllm/v1/attention/backends/rocm_aiter_fa.py",
    REQUESTS,
    {
        "AiterFlashAttentionMetadataBuilder._swa_block_table": "573",
        "AiterFlashAttentionMetadataBuilder._swa_seq_lens": "575",
    },
)

# vllm/v1/attention/backends/rocm_octave_attn.py
table(
    "vllm/v1/attention/backends/rocm_octave_attn.py",
    TOKENS,
    {
        "RocmOctaveMetadataBuilder._q_to_klen": "227",
        "RocmOctaveMetadataBuilder._q_to_req": "226",
    },
)

# vllm/v1/attention/backends/short_conv_attn.py
table(
    "vllm/v1/attention/backends/short_conv_attn.py",
    DECODE_ROWS,
    {
        "PleShortConvAttentionMetadataBuilder.has_initial_states_d": "213 216 219",
        "PleShortConvAttentionMetadataBuilder.num_accepted_tokens": "335 375 466 469 470",
        "PleShortConvAttentionMetadataBuilder.spec_sequence_masks": "452 453 455",
        "PleShortConvAttentionMetadataBuilder.spec_state_indices_tensor": "446 449 450",
    },
)
table(
    "vllm/v1/attention/backends/short_conv_attn.py",
    DECODE_OFFSETS,
    {
        "PleShortConvAttentionMetadataBuilder.spec_query_start_loc": "382 458 461 462 463",
    },
)

# vllm/v1/attention/backends/triton_attn.py
table(
    "vllm/v1/attention/backends/triton_attn.py",
    REQUESTS,
    {
        "TritonAttentionMetadataBuilder.persistent_rswa_prefix_lens": "295",
    },
)

# vllm/v1/spec_decode/dflash.py
table(
    "vllm/v1/spec_decode/dflash.py",
    TOKENS,
    {
        "DFlashProposer._context_positions_buffer": "249 285",
        "DFlashProposer._context_slot_mapping_buffer": "286",
    },
)

# vllm/v1/spec_decode/extract_hidden_states.py
table(
    "vllm/v1/spec_decode/extract_hidden_states.py",
    REQUESTS,
    {
        "ExtractHiddenStatesProposer.backup_next_token_ids": "332 336",
    },
)

# vllm/v1/spec_decode/llm_base_proposer.py
table(
    "vllm/v1/spec_decode/llm_base_proposer.py",
    TOKENS,
    {
        "SpecDecodeBaseProposer._slot_mapping_buffer": "413 415 417 797 800",
        "SpecDecodeBaseProposer.hidden_states": "642 720 737 760 851 921 927 928 983 1671",
        "SpecDecodeBaseProposer.input_ids": "719 727 843 846 966 974 1662",
        "SpecDecodeBaseProposer.inputs_embeds": "722 725 965 972 1660",
        "SpecDecodeBaseProposer.is_masked_token_mask": "923",
        "SpecDecodeBaseProposer.is_rejected_token_mask": "",
        "SpecDecodeBaseProposer.positions": "389 399 400 641 648 785 789 805 937",
        "SpecDecodeBaseProposer.token_arange_np": "676 1226",
    },
)
table(
    "vllm/v1/spec_decode/llm_base_proposer.py",
    REQUESTS,
    {
        "SpecDecodeBaseProposer.backup_next_token_ids": "1064",
    },
)

# vllm/v1/spec_decode/ngram_proposer.py
table(
    "vllm/v1/spec_decode/ngram_proposer.py",
    REQUESTS,
    {
        "NgramProposer.valid_ngram_draft": "131 206",
        "NgramProposer.valid_ngram_num_drafts": "129 131 204",
    },
)

# vllm/v1/worker/block_table.py
table(
    "vllm/v1/worker/block_table.py",
    REQUESTS,
    {
        "BlockTable.block_table": "125 134 151 190",
        "BlockTable.num_blocks_per_row": "123 124 128 132 135 138 141 146 150",
    },
)
table(
    "vllm/v1/worker/block_table.py",
    TOKENS,
    {
        "BlockTable.slot_mapping": "",
    },
)

# vllm/v1/worker/gpu/attn_utils.py
table(
    "vllm/v1/worker/gpu/attn_utils.py",
    TOKENS,
    {
        "FastPrefillHelper.logits_indices_buf": "",
    },
)

# vllm/v1/worker/gpu/input_batch.py
table(
    "vllm/v1/worker/gpu/input_batch.py",
    REQUESTS,
    {
        "InputBuffers.dcp_local_seq_lens": "",
        "InputBuffers.seq_lens": "165 166 168 169",
    },
)
table(
    "vllm/v1/worker/gpu/input_batch.py",
    TOKENS,
    {
        "InputBuffers.input_ids": "182",
        "InputBuffers.is_padding": "185 186",
        "InputBuffers.positions": "183",
    },
)
table(
    "vllm/v1/worker/gpu/input_batch.py",
    QUERY_START_LOC,
    {
        "InputBuffers.query_start_loc": "174 176 179 180 188",
    },
)

# vllm/v1/worker/gpu/lora_utils.py
table(
    "vllm/v1/worker/gpu/lora_utils.py",
    REQUESTS,
    {
        "LoraState.lora_ids": "87 89 100",
    },
)

# vllm/v1/worker/gpu/mm/encoder_runner.py
table(
    "vllm/v1/worker/gpu/mm/encoder_runner.py",
    TOKENS,
    {
        "EncoderRunner.inputs_embeds": "307",
    },
)

# vllm/v1/worker/gpu/mm/rope.py
table(
    "vllm/v1/worker/gpu/mm/rope.py",
    REQUESTS,
    {
        "RopeState.prefill_delta": "69 96",
    },
)

# vllm/v1/worker/gpu/model_states/encoder_decoder.py
table(
    "vllm/v1/worker/gpu/model_states/encoder_decoder.py",
    REQUESTS,
    {
        "EncoderDecoderModelState.encoder_seq_lens_gpu": "37 182 183 184",
    },
)

# vllm/v1/worker/gpu/model_states/encoder_only.py
table(
    "vllm/v1/worker/gpu/model_states/encoder_only.py",
    REQUESTS,
    {
        "EncoderOnlyModelState._dummy_block_table": "217",
    },
)
table(
    "vllm/v1/worker/gpu/model_states/encoder_only.py",
    TOKENS,
    {
        "EncoderOnlyModelState._dummy_slot_mapping": "218",
    },
)

# vllm/v1/worker/gpu/model_states/mamba_hybrid.py
table(
    "vllm/v1/worker/gpu/model_states/mamba_hybrid.py",
    REQUESTS,
    {
        "MambaHybridModelState._mamba_src_col_gpu": "",
        "MambaHybridModelState._mamba_src_off_gpu": "",
        "MambaHybridModelState._mamba_state_idx_gpu": "123",
        "MambaHybridModelState.num_accepted_tokens_gpu": "115",
    },
)

# vllm/v1/worker/gpu/model_states/prompt_embeds.py
table(
    "vllm/v1/worker/gpu/model_states/prompt_embeds.py",
    REQUESTS,
    {
        "PromptEmbedsState.embeds_lens": "48 60",
        "PromptEmbedsState.embeds_ptrs": "58",
        "PromptEmbedsState.mask_ptrs": "59",
    },
)

# vllm/v1/worker/gpu/pp_utils.py
table(
    "vllm/v1/worker/gpu/pp_utils.py",
    REQUESTS,
    {
        "PPHandler.req_idx_gen_np": "102 145 188",
    },
)

# vllm/v1/worker/gpu/sample/bad_words.py
table(
    "vllm/v1/worker/gpu/sample/bad_words.py",
    REQUESTS,
    {
        "BadWordsState.bad_word_offsets": "",
        "BadWordsState.bad_word_token_ids": "",
        "BadWordsState.num_bad_words": "43 71 80",
    },
)

# vllm/v1/worker/gpu/sample/logit_bias.py
table(
    "vllm/v1/worker/gpu/sample/logit_bias.py",
    REQUESTS,
    {
        "LogitBiasState.allowed_token_ids": "",
        "LogitBiasState.logit_bias": "",
        "LogitBiasState.logit_bias_token_ids": "",
        "LogitBiasState.min_lens": "96",
        "LogitBiasState.num_allowed_token_ids": "71 75",
        "LogitBiasState.num_logit_bias": "86 91",
        "LogitBiasState.num_stop_token_ids": "105 112",
        "LogitBiasState.restore_when_all_masked": "107 113 137",
        "LogitBiasState.stop_token_ids": "",
        "LogitBiasState.use_logit_bias": "115 132",
    },
)

# vllm/v1/worker/gpu/sample/logprob.py
table(
    "vllm/v1/worker/gpu/sample/logprob.py",
    REQUESTS,
    {
        "LogprobTokenIdsState.num_token_ids": "256 263 271",
        "LogprobTokenIdsState.token_ids": "",
    },
)

# vllm/v1/worker/gpu/sample/penalties.py
table(
    "vllm/v1/worker/gpu/sample/penalties.py",
    REQUESTS,
    {
        "PenaltiesState.frequency_penalty": "56",
        "PenaltiesState.output_bin_counts": "",
        "PenaltiesState.presence_penalty": "57",
        "PenaltiesState.prompt_bin_mask": "",
        "PenaltiesState.repetition_penalty": "55",
        "PenaltiesState.use_penalty": "60 89",
    },
)

# vllm/v1/worker/gpu/sample/prompt_logprob.py
table(
    "vllm/v1/worker/gpu/sample/prompt_logprob.py",
    REQUESTS,
    {
        "PromptLogprobsWorker.num_prompt_logprobs": "52 138 150 185",
        "PromptLogprobsWorker.uses_prompt_logprobs": "51 133",
    },
)

# vllm/v1/worker/gpu/sample/sampler.py
table(
    "vllm/v1/worker/gpu/sample/sampler.py",
    REQUESTS,
    {
        "Sampler.needs_logits_processing": "103 238",
    },
)

# vllm/v1/worker/gpu/sample/states.py
table(
    "vllm/v1/worker/gpu/sample/states.py",
    REQUESTS,
    {
        "SamplingStates.min_p": "52 100",
        "SamplingStates.num_logprobs": "65 145",
        "SamplingStates.seeds": "58",
        "SamplingStates.seeds_set": "55 142",
        "SamplingStates.temperature": "47 87 139",
        "SamplingStates.top_k": "51 112 116",
        "SamplingStates.top_p": "48 113 117",
    },
)

# vllm/v1/worker/gpu/sample/thinking_budget.py
table(
    "vllm/v1/worker/gpu/sample/thinking_budget.py",
    REQUESTS,
    {
        "ThinkingBudgetState.cached_last_end": "",
        "ThinkingBudgetState.cached_last_start": "",
        "ThinkingBudgetState.cached_scan_pos": "",
        "ThinkingBudgetState.thinking_token_budget": "93 94",
        "ThinkingBudgetState.use_thinking_budget": "87 115",
    },
)

# vllm/v1/worker/gpu/sample/trace_replay.py
table(
    "vllm/v1/worker/gpu/sample/trace_replay.py",
    REQUESTS,
    {
        "TraceReplayState.trace_len": "37 40",
        "TraceReplayState.trace_token_ids": "",
    },
)

# vllm/v1/worker/gpu/spec_decode/acceptance_estimator.py
table(
    "vllm/v1/worker/gpu/spec_decode/acceptance_estimator.py",
    REQUESTS,
    {
        "OnlineAcceptanceEstimator.features": "",
        "OnlineAcceptanceEstimator.predictions": "",
    },
)

# vllm/v1/worker/gpu/spec_decode/adaptive_verification.py
table(
    "vllm/v1/worker/gpu/spec_decode/adaptive_verification.py",
    REQUESTS,
    {
        "AdaptiveVerificationManager._admitted_drafts_cpu": "474",
        "AdaptiveVerificationManager._batch_draft_capacity": "440",
        "AdaptiveVerificationManager._confidence_probs": "209 295",
        "AdaptiveVerificationManager._stale_confidences": "207 289 296 332",
    },
)

# vllm/v1/worker/gpu/spec_decode/dflash/speculator.py
table(
    "vllm/v1/worker/gpu/spec_decode/dflash/speculator.py",
    TOKENS,
    {
        "DFlashSpeculator.context_positions": "393 489",
        "DFlashSpeculator.hidden_states": "197 392 423 488",
    },
)

# vllm/v1/worker/gpu/spec_decode/dflash2/speculator.py
table(
    "vllm/v1/worker/gpu/spec_decode/dflash2/speculator.py",
    REQUESTS,
    {
        "CandidateSampler.scores": "248",
    },
)

# vllm/v1/worker/gpu/spec_decode/dspark/speculator.py
table(
    "vllm/v1/worker/gpu/spec_decode/dspark/speculator.py",
    REQUESTS,
    {
        "DSparkSpeculator._anchor_idx": "185 233",
        "DSparkSpeculator._draft_scatter_buf": "132",
    },
)
table(
    "vllm/v1/worker/gpu/spec_decode/dspark/speculator.py",
    TOKENS,
    {
        "DSparkSpeculator.hidden_states": "",
    },
)

# vllm/v1/worker/gpu/spec_decode/extract_hidden_states.py
table(
    "vllm/v1/worker/gpu/spec_decode/extract_hidden_states.py",
    TOKENS,
    {
        "ExtractHiddenStatesSpeculator.hidden_states": "135 153",
    },
)

# vllm/v1/worker/gpu/spec_decode/lilicorr/speculator.py
table(
    "vllm/v1/worker/gpu/spec_decode/lilicorr/speculator.py",
    REQUESTS,
    {
        "LiLiCorrSpeculator._num_rejected": "",
        "LiLiCorrSpeculator.anchor_hidden": "84 100",
        "LiLiCorrSpeculator.anchor_valid": "87 101",
    },
)

# vllm/v1/worker/gpu/spec_decode/multi_module_mtp/speculator.py
table(
    "vllm/v1/worker/gpu/spec_decode/multi_module_mtp/speculator.py",
    REQUESTS,
    {
        "MultiModuleMTPSpeculator.cached_draft_input_embeds": "",
        "MultiModuleMTPSpeculator.cached_draft_input_ids": "",
        "MultiModuleMTPSpeculator.cached_target_hidden_states": "",
        "MultiModuleMTPSpeculator.draft_input_id_overrides": "458",
        "MultiModuleMTPSpeculator.last_token_indices": "233 401",
    },
)
table(
    "vllm/v1/worker/gpu/spec_decode/multi_module_mtp/speculator.py",
    TOKENS,
    {
        "MultiModuleMTPSpeculator.hidden_states": "299 455",
        "MultiModuleMTPSpeculator.inputs_embeds": "301 372",
    },
)

# vllm/v1/worker/gpu/spec_decode/ngram/speculator.py
table(
    "vllm/v1/worker/gpu/spec_decode/ngram/speculator.py",
    REQUESTS,
    {
        "NgramGPUSpeculator.drafts": "238 279",
        "NgramGPUSpeculator.scratch": "",
    },
)

# vllm/v1/worker/gpu/spec_decode/speculator.py
table(
    "vllm/v1/worker/gpu/spec_decode/speculator.py",
    QUERY_START_LOC,
    {
        "DraftModelSpeculator.arange_np": "582",
    },
)
table(
    "vllm/v1/worker/gpu/spec_decode/speculator.py",
    REQUESTS,
    {
        "DraftModelSpeculator.draft_is_prefilling": "404",
        "DraftModelSpeculator.draft_logits": "",
        "DraftModelSpeculator.draft_tokens": "",
        "DraftModelSpeculator.idx_mapping": "550 551",
        "DraftModelSpeculator.seeds": "",
        "DraftModelSpeculator.temperature": "",
    },
)

# vllm/v1/worker/gpu/spec_decode/standalone_ar/speculator.py
table(
    "vllm/v1/worker/gpu/spec_decode/standalone_ar/speculator.py",
    QUERY_START_LOC,
    {
        "StandaloneARSpeculator.arange_gpu": "285",
    },
)
table(
    "vllm/v1/worker/gpu/spec_decode/standalone_ar/speculator.py",
    REQUESTS,
    {
        "StandaloneARSpeculator.last_token_indices": "181 246 271",
    },
)

# vllm/v1/worker/gpu/spec_decode/target_dependent_ar/speculator.py
table(
    "vllm/v1/worker/gpu/spec_decode/target_dependent_ar/speculator.py",
    TOKENS,
    {
        "TargetDependentARSpeculator.hidden_states": "246 418 486 488",
        "TargetDependentARSpeculator.inputs_embeds": "408 413",
    },
)
table(
    "vllm/v1/worker/gpu/spec_decode/target_dependent_ar/speculator.py",
    REQUESTS,
    {
        "TargetDependentARSpeculator.last_token_indices": "451",
        "TargetDependentARSpeculator.sample_src_positions": "490 658",
    },
)

# vllm/v1/worker/gpu/spec_decode/xpress/speculator.py
table(
    "vllm/v1/worker/gpu/spec_decode/xpress/speculator.py",
    REQUESTS,
    {
        "XPressSpeculator._anchor_idx": "88",
    },
)

# vllm/v1/worker/gpu/states.py
table(
    "vllm/v1/worker/gpu/states.py",
    REQUESTS,
    {
        "RequestState.all_token_ids": "",
        "RequestState.draft_tokens": "118",
        "RequestState.last_sampled_tokens": "",
        "RequestState.max_seq_len": "104",
        "RequestState.num_computed_prefill_tokens": "113",
        "RequestState.num_computed_tokens": "",
        "RequestState.num_computed_tokens_np": "114",
        "RequestState.prefill_len": "110",
        "RequestState.prompt_len": "105",
        "RequestState.total_len": "",
    },
)

# vllm/v1/worker/gpu/ubatch_utils.py
table(
    "vllm/v1/worker/gpu/ubatch_utils.py",
    REQUESTS,
    {
        "UBatchRunner.ubatch_dcp_local_seq_lens": "362",
        "UBatchRunner.ubatch_seq_lens": "361",
    },
)
table(
    "vllm/v1/worker/gpu/ubatch_utils.py",
    QUERY_START_LOC,
    {
        "UBatchRunner.ubatch_query_start_loc": "360",
    },
)

# vllm/v1/worker/gpu_input_batch.py
table(
    "vllm/v1/worker/gpu_input_batch.py",
    REQUESTS,
    {
        "InputBatch.allowed_token_ids_mask": "923",
        "InputBatch.allowed_token_ids_mask_cpu_tensor": "458 460 575 689 690 815 816 818",
        "InputBatch.frequency_penalties": "944",
        "InputBatch.frequency_penalties_cpu_tensor": "413 668 669 670 797",
        "InputBatch.is_token_ids_tensor": "373 377 379 383 520 631 759",
        "InputBatch.logits_processing_needs_token_ids": "474 882",
        "InputBatch.num_accepted_tokens_cpu_tensor": "479 680 681 682 806",
        "InputBatch.num_computed_tokens_cpu_tensor": "392 616 617 618 774",
        "InputBatch.num_prompt_tokens_cpu_tensor": "367 607 608 609 769 972 981 993",
        "InputBatch.num_tokens_no_spec_cpu_tensor": "385 517 603 604 605 694 766",
        "InputBatch.presence_penalties": "945",
        "InputBatch.presence_penalties_cpu_tensor": "416 672 673 674 800",
        "InputBatch.repetition_penalties": "946",
        "InputBatch.repetition_penalties_cpu_tensor": "419 676 677 678 803",
        "InputBatch.replayssm_decode_base_cpu_tensor": "390 612 613 614 771",
        "InputBatch.request_lora_mapping": "487 492 545 552 649 650 651 779 1012",
        "InputBatch.temperature": "",
        "InputBatch.temperature_cpu_tensor": "398 401 662 663 664 794",
        "InputBatch.token_ids_cpu_tensor": "371 382 519 622 623 625 626 629 756 989",
        "InputBatch.top_k": "939",
        "InputBatch.top_k_cpu_tensor": "412 667 796",
        "InputBatch.top_p": "938",
        "InputBatch.top_p_cpu_tensor": "404 666 795",
    },
)

# vllm/v1/worker/gpu_model_runner.py
table(
    "vllm/v1/worker/gpu_model_runner.py",
    REQUESTS,
    {
        "GPUModelRunner.dcp_local_seq_lens": "2383 2389 2392",
        "GPUModelRunner.discard_request_mask": "2062 3463 3903 4560",
        "GPUModelRunner.draft_token_ids_cpu": "4628 4633",
        "GPUModelRunner.encoder_seq_lens": "1890 1898 1907 1916 1919 1920",
        "GPUModelRunner.num_accepted_tokens": "1566 1590 2081 2086 2088 2092 2095 2119 2440 4073",
        "GPUModelRunner.num_computed_tokens": "1337 2126 2140 2144 2179",
        "GPUModelRunner.num_decode_draft_tokens": "2214 2233 2234",
        "GPUModelRunner.num_scheduled_tokens": "2000 2136 2138 2213 2223 2549 2988 3982",
        "GPUModelRunner.num_tokens_no_spec_gpu": "1542 4773",
        "GPUModelRunner.optimistic_seq_lens_cpu": "1086 2048 2050 2063 2322 2384 3189 5659 5660",
        "GPUModelRunner.prev_num_draft_tokens": "1376",
        "GPUModelRunner.prev_positions": "1728 1731 1738 1753 1772 1783 2079 2120",
        "GPUModelRunner.sampled_token_ids_pinned_cpu": "7129",
        "GPUModelRunner.seq_lens": "1085 2143 2146 2366",
        "GPUModelRunner.token_ids_gpu_tensor": "4774",
    },
)
table(
    "vllm/v1/worker/gpu_model_runner.py",
    TOKENS,
    {
        "GPUModelRunner.input_ids": "1837 1983 2653 3251 3277 3305 3321 3354 3366 4889 4906 4927",
        "GPUModelRunner.inputs_embeds": "3255 3313 3314 3327 3356 3358 5726",
        "GPUModelRunner.is_padding": "3242",
        "GPUModelRunner.is_token_ids": "1820 1991 3302 3349 3547 4572",
        "GPUModelRunner.kv_sharing_fast_prefill_logits_indices": "2673 2679",
        "GPUModelRunner.positions": "993 997 2139 2151 2377 3373 3375 5735",
        "GPUModelRunner.req_indices": "2131 2133",
    },
)
table(
    "vllm/v1/worker/gpu_model_runner.py",
    QUERY_START_LOC,
    {
        "GPUModelRunner.query_start_loc": "2033 2034 2037 2039 2150 2195 2364 2365 3196 5312 5666 5667",
    },
)


# Entries whose read shape needs an expression alias (above).
table(
    "vllm/v1/worker/gpu_model_runner.py",
    ARANGE,
    {
        "GPUModelRunner.arange_np": "1718 1948",
        "GPUModelRunner.query_pos": "1951 1959 2141",
        "GPUModelRunner._arange_scratch": "2612 2621 2628 2637",
    },
)
table("vllm/v1/spec_decode/llm_base_proposer.py", QUERY_START_LOC, {"SpecDecodeBaseProposer.arange": "674"})
table(
    "vllm/v1/attention/backends/mla/indexer.py",
    TOKENS,
    {"DeepseekV32IndexerMetadataBuilder.arange_buffer": "1233 1306 1803 1810"},
)
table("vllm/v1/spec_decode/dflash.py", QUERY_START_LOC, {"DFlashProposer.arange": "180"})


# =============================================================================================
# Writers that do more than their family's demand: their own obligations.

from capproof import Choice, Range, maximum, minimum, select  # noqa: E402
from spec._inventory import Family  # noqa: E402

_PROPOSER = "vllm/v1/spec_decode/llm_base_proposer.py"
_SCHED = {
    "num_reqs <= max_num_reqs (scheduler)": lambda num_reqs, max_num_reqs: num_reqs <= max_num_reqs,
    "every scheduled request has at least one token": lambda num_reqs, num_scheduled_tokens: (
        num_reqs <= num_scheduled_tokens
    ),
    "scheduled tokens <= max_num_batched_tokens (scheduler budget)": lambda num_scheduled_tokens, max_num_batched_tokens: (
        num_scheduled_tokens <= max_num_batched_tokens
    ),
    "max_num_batched_tokens >= max_num_reqs (vllm/config/scheduler.py)": lambda max_num_batched_tokens, max_num_reqs: (
        max_num_batched_tokens >= max_num_reqs
    ),
    "num_speculative_tokens + 1 < max_num_batched_tokens (DFlash lookahead, vllm/config/vllm.py:642-645)": lambda num_speculative_tokens, max_num_batched_tokens: (
        num_speculative_tokens + 1 < max_num_batched_tokens
    ),
}

_DFLASH_SOURCES = [
    _V + "vllm/v1/spec_decode/dflash.py:124-127 (num_query_total = batch_size * (1 + num_speculative_tokens))",
    _V + "vllm/v1/spec_decode/dflash.py:154 (out_input_ids_ptr=self.input_ids)",
    _V + "vllm/v1/spec_decode/utils.py:721-734,808-810 (query_out = req_idx * num_query_per_req + query_off, "
    "one program per request of query_start_loc; no bound)",
]
DFLASH_QUERY = Family(
    name="dflash_query_ids",
    dim=0,
    demand=lambda num_reqs, num_speculative_tokens: num_reqs * (1 + num_speculative_tokens),
    domain={
        "max_num_batched_tokens": Range(1, 2**17),
        "max_num_reqs": Range(1, 2**12),
        "num_reqs": Range(1, 2**12),
        "num_scheduled_tokens": Range(1, 2**17),
        "num_speculative_tokens": Range(1, 31),
    },
    facts={
        **_SCHED,
        "num_reqs <= max_num_active_seqs = max_num_batched_tokens // (1 + K) (DFlash override; admission)": lambda num_reqs, num_speculative_tokens, max_num_batched_tokens: (
            num_reqs <= max_num_batched_tokens // (1 + num_speculative_tokens)
        ),
    },
    sources=[
        *_DFLASH_SOURCES,
        _V + "vllm/config/vllm.py:2377-2394 (DFlash/DSpark: max_num_active_seqs = mnbt // num_lookahead_tokens, "
        "num_lookahead_tokens = K + 1 (vllm.py:642-645))",
        _V + "vllm/v1/core/sched/scheduler.py:134-138,1073 (admission into RUNNING stops at max_num_active_reqs)",
    ],
    doc="DFlash's first pass writes each request's query ids [bonus, mask * K] into the base proposer's "
    "input_ids (max_num_tokens = max_num_batched_tokens rows) at req_idx * (1 + K) + j: num_reqs * (1 + K) rows. "
    "The token budget alone does not bound that (a batch of many short requests); vLLM 0.33.0 caps the "
    "running requests at max_num_batched_tokens // (1 + K) for DFlash (the unsat core shows the proof needs it).",
    demand_name="query_ids",
    requires=("dflash",),
)
cover(INVENTORY, f"{_PROPOSER}::SpecDecodeBaseProposer.input_ids", DFLASH_QUERY, aliases=ALIASES[_PROPOSER])

DFLASH_QUERY_FULL = Family(
    name="dflash_query_ids_full_graph_mixed",
    dim=0,
    demand=lambda num_reqs_padded, num_speculative_tokens: num_reqs_padded * (1 + num_speculative_tokens),
    domain={
        "max_num_batched_tokens": Range(1, 2**17),
        "max_num_reqs": Range(1, 2**12),
        "num_reqs_padded": Range(1, 2**12),
        "padded_tokens": Range(1, 2**17),
        "num_speculative_tokens": Range(1, 31),
    },
    facts={
        "FULL graph, mixed batch: num_reqs_padded = min(padded_tokens, max_num_seqs) (cudagraph_dispatcher.py:146)": lambda num_reqs_padded, padded_tokens, max_num_reqs: (
            num_reqs_padded == minimum(padded_tokens, max_num_reqs)
        ),
        "padded tokens <= max_cudagraph_capture_size <= max_num_batched_tokens": lambda padded_tokens, max_num_batched_tokens: (
            padded_tokens <= max_num_batched_tokens
        ),
        "max_num_batched_tokens >= max_num_reqs (vllm/config/scheduler.py)": lambda max_num_batched_tokens, max_num_reqs: (
            max_num_batched_tokens >= max_num_reqs
        ),
        "num_speculative_tokens + 1 < max_num_batched_tokens (vllm/config/vllm.py:2371)": lambda num_speculative_tokens, max_num_batched_tokens: (
            num_speculative_tokens + 1 < max_num_batched_tokens
        ),
    },
    sources=[
        *_DFLASH_SOURCES,
        _V + "vllm/v1/cudagraph_dispatcher.py:144-146 (non-uniform FULL batch: num_reqs = min(padded, max_num_seqs))",
        _V + "vllm/v1/worker/gpu_model_runner.py:4110 (attention metadata padded to num_reqs_padded under FULL graphs)",
    ],
    doc="The same writer when the target batch runs a FULL CUDA graph for a mixed (non-uniform) batch "
    "(cudagraph_mode=FULL): the attention metadata, hence DFlash's batch_size, counts the padded requests "
    "min(padded_tokens, max_num_seqs), which the max_num_active_seqs cap does not bound. A finding candidate, "
    "conditional on cudagraph_mode=FULL with DFlash (docs/findings.md).",
    demand_name="query_ids",
    requires=("dflash", "cudagraph_full", "v1_runner"),
)
cover(
    INVENTORY,
    f"{_PROPOSER}::SpecDecodeBaseProposer.input_ids",
    DFLASH_QUERY_FULL,
    expect="counterexample",
    aliases=ALIASES[_PROPOSER],
)


def _net_slots(method, num_speculative_tokens):
    """The proposer's net new slots per request (llm_base_proposer.py:113-118): extra = K if
    parallel drafting else 1, minus 1 when hidden states are passed (EAGLE-style, not DFlash).
    method: 0 EAGLE/EAGLE3/MTP, 1 P-EAGLE (parallel EAGLE3), 2 draft model, 3 PARD (parallel draft model)."""
    parallel = (method == 1) | (method == 3)
    hidden = (method == 0) | (method == 1)
    extra = select(parallel, num_speculative_tokens, 1)
    return extra - select(hidden, 1, 0)


def _draft_slots(method, num_speculative_tokens):
    """The scheduler's reserved slots per request, max_num_new_slots_for_drafting
    (vllm/config/speculative.py:2080-2098): EAGLE/MTP 0, P-EAGLE K - 1, draft model 1, PARD K."""
    return select(
        method == 0, 0, select(method == 1, num_speculative_tokens - 1, select(method == 2, 1, num_speculative_tokens))
    )


_SLOTS_DOMAIN = {
    "max_num_batched_tokens": Range(1, 2**17),
    "num_reqs": Range(1, 2**12),
    "num_scheduled_tokens": Range(1, 2**17),
    "num_speculative_tokens": Range(1, 15),
    "method": Choice(0, 1, 2, 3),
}
_SLOTS_SOURCES = [
    _V
    + "vllm/v1/spec_decode/llm_base_proposer.py:872-874 (total_num_output_tokens = total_num_input_tokens + net * batch_size)",
    _V
    + "vllm/v1/spec_decode/llm_base_proposer.py:923-939 (is_masked_token_mask, hidden_states, positions, is_rejected_token_mask "
    "[:total_num_output_tokens])",
    _V
    + "vllm/v1/core/sched/scheduler.py:721,847,1003 (each request consumes num_new_tokens + draft_slots of the budget)",
]
SPEC_SLOTS = Family(
    name="spec_slots",
    dim=0,
    demand=lambda num_scheduled_tokens, num_reqs, method, num_speculative_tokens: (
        num_scheduled_tokens + _net_slots(method, num_speculative_tokens) * num_reqs
    ),
    domain=_SLOTS_DOMAIN,
    facts={
        "scheduled tokens + draft slots of every request <= max_num_batched_tokens (scheduler budget)": lambda num_scheduled_tokens, num_reqs, method, num_speculative_tokens, max_num_batched_tokens: (
            num_scheduled_tokens + _draft_slots(method, num_speculative_tokens) * num_reqs <= max_num_batched_tokens
        ),
        "every scheduled request has at least one token": lambda num_reqs, num_scheduled_tokens: (
            num_reqs <= num_scheduled_tokens
        ),
    },
    sources=_SLOTS_SOURCES,
    doc="EAGLE/P-EAGLE/draft-model/PARD extra input slots, batch not padded (eager, piecewise graphs): the "
    "proposer's net slots per request equal the scheduler's reserved drafting slots for every method, so "
    "the expanded batch stays within the budget.",
    demand_name="total_num_output_tokens",
    requires=("spec_decode",),
)

SPEC_SLOTS_PADDED = Family(
    name="spec_slots_full_graph",
    dim=0,
    demand=lambda padded_reqs, method, num_speculative_tokens: (
        padded_reqs * (1 + num_speculative_tokens) + _net_slots(method, num_speculative_tokens) * padded_reqs
    ),
    domain={**_SLOTS_DOMAIN, "padded_reqs": Range(1, 2**12)},
    facts={
        "the real batch fits the budget (tokens + draft slots)": lambda num_scheduled_tokens, num_reqs, method, num_speculative_tokens, max_num_batched_tokens: (
            num_scheduled_tokens + _draft_slots(method, num_speculative_tokens) * num_reqs <= max_num_batched_tokens
        ),
        "a uniform decode batch: every request has 1 + num_speculative_tokens tokens": lambda num_scheduled_tokens, num_reqs, num_speculative_tokens: (
            num_scheduled_tokens == num_reqs * (1 + num_speculative_tokens)
        ),
        "padded to a FULL-graph uniform size p = padded_reqs * (1 + K) >= the batch, p <= max_num_batched_tokens": lambda padded_reqs, num_reqs, num_speculative_tokens, max_num_batched_tokens: (
            (padded_reqs >= num_reqs) & (padded_reqs * (1 + num_speculative_tokens) <= max_num_batched_tokens)
        ),
    },
    sources=[
        *_SLOTS_SOURCES,
        _V
        + "vllm/v1/worker/gpu_model_runner.py:4915-4926 (padded drafter batch: target_token_ids = input_ids[:num_actual_tokens], "
        "the padded count under FULL graphs)",
        _V + "vllm/v1/cudagraph_dispatcher.py:139-143 (FULL uniform decode: num_reqs = min(padded // q, max_num_seqs))",
    ],
    doc="The same writers under a FULL CUDA graph for uniform decode: target tokens and requests are the padded "
    "ones. With the default capture sizes every uniform size n * (1 + K) is a capture size, so padded_reqs == "
    "num_reqs; user-given sizes (cudagraph_capture_sizes) or DP padding to another rank's size can pad further, and "
    "the padded requests' extra slots were never reserved. A finding candidate (docs/findings.md).",
    demand_name="total_num_output_tokens",
    requires=("drafting_slots", "extra_graph_padding"),
)

for _attr, _lines in (
    ("input_ids", "843 966"),
    ("positions", "937"),
    ("hidden_states", "927 928"),
    ("is_masked_token_mask", "923"),
    ("is_rejected_token_mask", "938-939"),
):
    _alias = ALIASES[_PROPOSER]
    cover(
        INVENTORY,
        f"{_PROPOSER}::SpecDecodeBaseProposer.{_attr}",
        SPEC_SLOTS,
        [f"{_V}{_PROPOSER}:{ln}" for ln in _lines.split()],
        aliases=_alias,
    )
    cover(
        INVENTORY,
        f"{_PROPOSER}::SpecDecodeBaseProposer.{_attr}",
        SPEC_SLOTS_PADDED,
        expect="counterexample",
        aliases=_alias,
    )


# ---------------------------------------------------------------------------------------------
# FlashInfer: paged_kv_indptr is also sliced by decode *tokens*; paged_kv_indices holds every page.

_FI = "vllm/v1/attention/backends/flashinfer.py"
ALIASES[_FI]["max_num_pages"] = ("max_num_reqs * cdiv(max_model_len, block_size)", f"{_FI}:898-903")

FI_INDPTR = Family(
    name="flashinfer_indptr",
    dim=0,
    demand=lambda num_reqs, num_decodes, num_decode_tokens, fa2_native: (
        maximum(num_reqs, select(fa2_native == 1, num_decodes, num_decode_tokens)) + 1
    ),
    domain={
        "max_num_reqs": Range(1, 2**12),
        "num_reqs": Range(1, 2**12),
        "num_decodes": Range(0, 2**12),
        "num_decode_tokens": Range(0, 2**17),
        "fa2_native": Choice(0, 1),
    },
    facts={
        "num_reqs <= max_num_reqs (padded requests included)": lambda num_reqs, max_num_reqs: num_reqs <= max_num_reqs,
        "decodes are among the requests": lambda num_decodes, num_reqs: num_decodes <= num_reqs,
        "without spec-as-decode (reorder_batch_threshold 1) a native-decode request has one token": lambda fa2_native, num_decodes, num_decode_tokens: (
            (fa2_native == 1) | (num_decode_tokens == num_decodes)
        ),
    },
    sources=[
        _V + f"{_FI}:1528-1530 (paged_kv_indptr.np[1 : num_reqs + 1])",
        _V + f"{_FI}:1944-1960 (native decode: paged_kv_indptr.cpu[: num_input_tokens + 1], num_input_tokens = "
        "num_decode_tokens, or num_decodes with fa2 native decode)",
        _V + f"{_FI}:1053-1060 (reorder_batch_threshold 1 unless the trtllm decode kernel or fa2 native decode "
        "takes spec decodes; the trtllm branch does not use this buffer)",
    ],
    doc="FlashInfer's indptr over requests, and over decode tokens on the native decode path: decode tokens "
    "equal decode requests there, because speculative requests are prefills unless fa2 native decode "
    "(which plans per request) or trtllm (other branch) takes them.",
    demand_name="entries",
)
cover(INVENTORY, f"{_FI}::FlashInferMetadataBuilder.paged_kv_indptr", FI_INDPTR, aliases=ALIASES[_FI])
FI_LAST_PAGE = Family(
    name="flashinfer_last_page_len",
    dim=0,
    demand=lambda num_reqs, num_decodes, num_decode_tokens, fa2_native: maximum(
        num_reqs, select(fa2_native == 1, num_decodes, num_decode_tokens)
    ),
    domain=FI_INDPTR.domain,
    facts=FI_INDPTR.facts,
    sources=[
        _V + f"{_FI}:1545 (paged_kv_last_page_len.np[:num_reqs])",
        _V + f"{_FI}:1961-1963 ([:num_input_tokens])",
        *FI_INDPTR.sources[2:],
    ],
    doc="FlashInfer's last-page lengths: per request, and per decode token on the native decode path.",
    demand_name="entries",
)
cover(INVENTORY, f"{_FI}::FlashInferMetadataBuilder.paged_kv_last_page_len", FI_LAST_PAGE, aliases=ALIASES[_FI])

_PAGES = 2**12  # requests in the batch vector: max_num_reqs's bound (decided on the aggregates, for every size)


def _pages(seq_lens, block_size):
    from capproof import total

    return total(cdiv(s, block_size) for s in seq_lens)


from capproof import Vector, all_of, cdiv  # noqa: E402

FI_INDICES = Family(
    name="flashinfer_pages",
    dim=0,
    demand=_pages,
    domain={
        "max_num_reqs": Range(1, 2**12),
        "max_model_len": Range(1, 2**21),
        "block_size": Choice(16, 32, 64),
        "num_reqs": Range(1, _PAGES),
        "seq_lens": Vector(_PAGES, Range(0, 2**21), length="num_reqs"),
    },
    facts={
        "num_reqs <= max_num_reqs": lambda num_reqs, max_num_reqs: num_reqs <= max_num_reqs,
        "a request's (rank-local) sequence fits max_model_len (scheduler caps positions)": lambda seq_lens, max_model_len: (
            all_of(*(s <= max_model_len for s in seq_lens))
        ),
    },
    sources=[
        _V + f"{_FI}:1708-1710 (num_blocks_np = cdiv(seq_lens, page_size))",
        _V + f"{_FI}:1527-1536 (paged_kv_indices[:num_actual_pages], num_actual_pages = sum of num_blocks)",
        _V + f"{_FI}:945 (page_size = kv_cache_spec.block_size, the block size of max_num_pages)",
        _V + "vllm/v1/core/sched/scheduler.py:852-857 (positions < max_model_len)",
    ],
    doc="Every page of every request: sum of cdiv(seq_len, page_size) over the batch <= max_num_reqs * "
    "cdiv(max_model_len, block_size), for every batch of up to max_num_reqs requests (decided on the "
    "batch's aggregates: the per-request page count is monotone in seq_len, so it is bounded through "
    "each request's bound; capproof.aggregate's mapped totals).",
    demand_name="pages",
)
cover(
    INVENTORY,
    f"{_FI}::FlashInferMetadataBuilder.paged_kv_indices",
    FI_INDICES,
    [_V + f"{_FI}:1534"],
    aliases=ALIASES[_FI],
)


# ---------------------------------------------------------------------------------------------
# SM-count rows: scheduler metadata of DeepGEMM and FlashMLA.

SM_ROWS_DEEPGEMM = Family(
    name="sm_rows",
    dim=0,
    demand=lambda num_sms: num_sms + 1,
    domain={"num_sms": Range(1, 1024)},
    sources=[
        _V + "vllm/v1/attention/backends/mla/indexer.py:1747-1753 (get_paged_mqa_logits_metadata(..., self.num_sms); "
        "scheduler_metadata_buffer[: metadata.shape[0]] = metadata)"
    ],
    doc="DeepGEMM's paged-MQA scheduling metadata has num_sms + 1 rows for the num_sms it is given (the "
    "builder passes its own num_sms). ASSUMPTION (unconfirmed: DeepGEMM is compiled, not in the wheel): "
    "the metadata has exactly num_sms + 1 rows.",
    demand_name="metadata_rows",
)
cover(
    INVENTORY,
    "vllm/v1/attention/backends/mla/indexer.py::DeepseekV32IndexerMetadataBuilder.scheduler_metadata_buffer",
    SM_ROWS_DEEPGEMM,
    config={"num_sms": Range(1, 1024)},
)

SM_PARTS_FLASHMLA_SPARSE = Family(
    name="sm_parts",
    dim=0,
    demand=lambda num_sms, s_q, h_q, sm100, head128: select(
        sm100 == 1, select(head128 == 1, (num_sms // s_q) // 2, num_sms // s_q), (num_sms // s_q) // (h_q // 64)
    ),
    domain={
        "num_sms": Range(1, 1024),
        "s_q": Range(1, 64),
        "h_q": Choice(64, 128),
        "sm100": Choice(0, 1),
        "head128": Choice(0, 1),
    },
    facts={"head128 kernels have 128 padded heads": lambda head128, h_q: (head128 == 0) | (h_q == 128)},
    sources=[
        _V + "vllm/v1/attention/backends/mla/flashmla_sparse.py:411-431 (max_num_sm_parts; the FlashMLA "
        "csrc/api/sparse_decode.h formulas quoted in its comment)"
    ],
    doc="FlashMLA sparse FP8 decode's tile-scheduler rows, num_sm_parts = num_sms / s_q / (h_q / 64) on SM90, "
    "num_sms / s_q (/ 2 for head128) on SM100, against the buffer sized for s_q = 1. ASSUMPTION "
    "(unconfirmed: FlashMLA is compiled): the kernel uses the formulas the comment quotes.",
    demand_name="num_sm_parts",
)
cover(
    INVENTORY,
    "vllm/v1/attention/backends/mla/flashmla_sparse.py::FlashMLASparseMetadataBuilder.tile_scheduler_metadata_buffer",
    SM_PARTS_FLASHMLA_SPARSE,
    aliases={
        "max_num_sm_parts": (
            "select(sm100 == 1, num_sms, num_sms // maximum(1, h_q // 64))",
            "vllm/v1/attention/backends/mla/flashmla_sparse.py:418-424",
        )
    },
    config={"num_sms": Range(1, 1024), "h_q": Choice(64, 128), "sm100": Choice(0, 1)},
)

SM_TILES_FLASHMLA = Family(
    name="sm_tiles",
    dim=0,
    demand=lambda n: n,
    domain={"n": Range(1, 2048)},
    facts={
        "the copy is guarded: assert n <= cg_buf_tile_scheduler_metadata.size(0)": lambda n, capacity: n <= capacity
    },
    sources=[
        _V
        + "vllm/v1/attention/backends/mla/flashmla.py:186-189 (n = tile_scheduler_metadata.size(0); assert n <= size)"
    ],
    doc="FlashMLA dense FP8 tile-scheduler rows copied into the CUDA-graph buffer: an assert guards the copy "
    "(a failing batch stops with an AssertionError, it does not overflow).",
    demand_name="n",
)
cover(
    INVENTORY,
    "vllm/v1/attention/backends/mla/flashmla.py::FlashMLAMetadataBuilder.cg_buf_tile_scheduler_metadata",
    SM_TILES_FLASHMLA,
    config={"num_sms": Range(1, 1024)},
)


# ---------------------------------------------------------------------------------------------
# The DSA indexer's offsets: [:max_decode_len] only on the native path, taken when it fits.

_IDX = "vllm/v1/attention/backends/mla/indexer.py"
INDEXER_OFFSETS = Family(
    name="indexer_offsets",
    dim=0,
    demand=lambda max_decode_len: max_decode_len,
    domain={"num_speculative_tokens": Range(0, 31), "max_decode_len": Range(1, 2**10)},
    facts={
        "the native path is taken only when max_decode_len <= next_n (indexer.py:1638-1642)": lambda max_decode_len, num_speculative_tokens: (
            max_decode_len <= num_speculative_tokens + 1
        )
    },
    sources=[_V + f"{_IDX}:1638-1642 (use_native = ... and max_decode_len <= next_n)", _V + f"{_IDX}:1278"],
    doc="offsets_buffer = arange(next_n), sliced [:max_decode_len] on the native next_n > 1 path.",
    demand_name="max_decode_len",
)
cover(INVENTORY, f"{_IDX}::DeepseekV32IndexerMetadataBuilder.offsets_buffer", INDEXER_OFFSETS, aliases=ALIASES[_IDX])


# ---------------------------------------------------------------------------------------------
# Second dimensions: tokens along dim 1, requests along dim 1, per-request token columns.

from spec._families import PADDED_REQS_FIT, SPEC_COLUMNS, TOKEN_COLUMNS  # noqa: E402

cover(
    INVENTORY,
    "vllm/v1/worker/gpu_model_runner.py::GPUModelRunner.mrope_positions",
    TOKENS,
    [_V + "vllm/v1/worker/gpu_model_runner.py:992 2174 2186 5733"],
    dim=1,
    name="tokens_dim1__GPUModelRunner_mrope_positions",
    aliases=ALIASES["vllm/v1/worker/gpu_model_runner.py"],
)
cover(
    INVENTORY,
    f"{_PROPOSER}::SpecDecodeBaseProposer.mrope_positions",
    TOKENS,
    [_V + f"{_PROPOSER}:388 393"],
    dim=1,
    name="tokens_dim1__SpecDecodeBaseProposer_mrope_positions",
    aliases=ALIASES[_PROPOSER],
)
cover(
    INVENTORY,
    "vllm/v1/worker/gpu/block_table.py::BlockTables.slot_mappings",
    TOKENS,
    [_V + "vllm/v1/worker/gpu/block_table.py:260 271"],
    dim=1,
    name="tokens_dim1__BlockTables_slot_mappings",
)
cover(
    INVENTORY,
    "vllm/v1/worker/gpu/block_table.py::BlockTables.num_blocks",
    REQUESTS,
    [_V + "vllm/v1/worker/gpu/block_table.py:132 144"],
    dim=1,
    name="requests_dim1__BlockTables_num_blocks",
)
for _owner, _file, _lines in (
    ("InputBatch.token_ids_cpu_tensor", "vllm/v1/worker/gpu_input_batch.py", "371 382 519"),
    ("InputBatch.is_token_ids_tensor", "vllm/v1/worker/gpu_input_batch.py", "373 383 520"),
    ("GPUModelRunner.token_ids_gpu_tensor", "vllm/v1/worker/gpu_model_runner.py", "4774"),
):
    cover(
        INVENTORY,
        f"{_file}::{_owner}",
        TOKEN_COLUMNS,
        [f"{_V}{_file}:{ln}" for ln in _lines.split()],
        name=f"token_columns__{_owner.replace('.', '_')}",
    )
cover(
    INVENTORY,
    "vllm/v1/worker/gpu_model_runner.py::GPUModelRunner.draft_token_ids_cpu",
    SPEC_COLUMNS,
    [_V + "vllm/v1/worker/gpu_model_runner.py:4628 4633"],
)


# ---------------------------------------------------------------------------------------------
# Constant-size buffers whose writers touch a constant extent.


def _const(extent: int, what: str) -> Family:
    return Family(
        name=f"const{extent}",
        dim=0,
        demand=lambda: extent,
        domain={},
        sources=[],
        doc=f"A constant-size buffer; its writer touches {extent} element(s): {what}.",
        demand_name="extent",
    )


for _file, _key, _extent, _where in (
    (
        "vllm/v1/attention/backends/turboquant_attn.py",
        "TurboQuantAttentionImpl._cu_2",
        2,
        "803 (_cu_2[1:2] = q_len; cu_seqlens of one sequence)",
    ),
    (
        "vllm/v1/attention/backends/turboquant_attn.py",
        "TurboQuantAttentionImpl._cu_2#2",
        2,
        "776, 803 (the lazy re-allocation, same writer)",
    ),
    ("vllm/v1/attention/backends/turboquant_attn.py", "TurboQuantAttentionImpl._cu_2_q", 2, "1065 (_cu_2_q[1:2])"),
    ("vllm/v1/attention/backends/turboquant_attn.py", "TurboQuantAttentionImpl._cu_2_k", 2, "1066 (_cu_2_k[1:2])"),
    ("vllm/v1/attention/backends/ultraquant_attn.py", "UltraQuantAttentionImpl._cu_2", 2, "409 (_cu_2[1:2])"),
    (
        "vllm/v1/attention/backends/ultraquant_attn.py",
        "UltraQuantAttentionImpl._cu_2#2",
        2,
        "409 (the lazy re-allocation, same writer)",
    ),
    (
        "vllm/model_executor/layers/fused_moe/moe_align_block_size.py",
        "moe_align_block_size.num_tokens_post_pad",
        1,
        "151-159 (the align kernel's single total)",
    ),
    (
        "vllm/model_executor/layers/fused_moe/moe_align_block_size.py",
        "batched_moe_align_block_size.num_tokens_post_pad",
        1,
        "247 (the batched align kernel's single total)",
    ),
    (
        "vllm/v1/worker/gpu/spec_decode/acceptance_estimator.py",
        "OnlineAcceptanceEstimator.slope",
        1,
        "437, 487 (one slope)",
    ),
):
    cover(
        INVENTORY,
        f"{_file}::{_key}",
        _const(_extent, f"{_file}:{_where}"),
        [f"{_V}{_file}:{_where}"],
        name=f"const__{_key.replace('.', '_').replace('#', '_')}",
    )


# ---------------------------------------------------------------------------------------------
# DFlash's query buffers (positions, slot mapping): num_reqs * (1 + K) rows, sized for it.

ALIASES["vllm/v1/spec_decode/dflash.py"]["max_cudagraph_capture_size"] = (
    "max_cudagraph_capture_size",
    "vllm/config/compilation.py (max_cudagraph_capture_size)",
)
DFLASH_OWN = Family(
    name="dflash_query_rows",
    dim=0,
    demand=lambda num_reqs, num_speculative_tokens: num_reqs * (1 + num_speculative_tokens),
    domain={
        "max_num_reqs": Range(1, 2**12),
        "num_reqs": Range(1, 2**12),
        "num_speculative_tokens": Range(1, 31),
        "max_cudagraph_capture_size": Range(0, 2**17),
    },
    facts={"num_reqs <= max_num_reqs (scheduler)": lambda num_reqs, max_num_reqs: num_reqs <= max_num_reqs},
    sources=_DFLASH_SOURCES[:1]
    + [
        _V + "vllm/v1/spec_decode/dflash.py:154-158 (out_query_positions_ptr=self.positions, "
        "out_query_slot_mapping_ptr=self._slot_mapping_buffer)",
        _V + "vllm/v1/spec_decode/dflash.py:179 (_slot_mapping_buffer[:num_query_total])",
    ],
    doc="DFlash's own query buffers are sized max(max_num_reqs * (1 + K), max_cudagraph_capture_size): they hold "
    "the query rows (unlike the base proposer's input_ids, see dflash_query_ids).",
    demand_name="query_rows",
    requires=("dflash",),
)
for _key in ("DFlashProposer.positions", "DFlashProposer._slot_mapping_buffer"):
    cover(
        INVENTORY,
        f"vllm/v1/spec_decode/dflash.py::{_key}",
        DFLASH_OWN,
        aliases=ALIASES["vllm/v1/spec_decode/dflash.py"],
    )


# ---------------------------------------------------------------------------------------------
# DeepSeek V4.1 sparse indexer rows: by batch token, sized like arange_buffer.

_SPARSE = "vllm/v1/attention/backends/mla/sparse_indexer.py"
ALIASES[_SPARSE] = {
    "max_rows": (
        "maximum(max_num_reqs * (num_speculative_tokens + 1), max_num_batched_tokens)",
        f"{_SPARSE}:166 (max_rows = self.arange_buffer.shape[0]; indexer.py:1078)",
    )
}
table(
    _SPARSE,
    TOKENS,
    {
        "DeepseekV41SparseIndexerMetadataBuilder.sparse_indices_buffer": "189",
        "DeepseekV41SparseIndexerMetadataBuilder.end_buffer": "190",
        "DeepseekV41SparseIndexerMetadataBuilder.col_indices_buffer": "191",
        "DeepseekV41SparseIndexerMetadataBuilder.zero_row_ks": "216",
    },
)


# ---------------------------------------------------------------------------------------------
# V2 DFlash speculator: per-mask-token sampling rows, num_reqs * K.

_V2DF = "vllm/v1/worker/gpu/spec_decode/dflash/speculator.py"
ALIASES[_V2DF]["max_num_sampled_tokens"] = ("max_num_reqs * num_speculative_tokens", f"{_V2DF}:111")
SAMPLE_ROWS = Family(
    name="sample_rows",
    dim=0,
    demand=lambda num_reqs, num_speculative_tokens: num_reqs * num_speculative_tokens,
    domain={"max_num_reqs": Range(1, 2**12), "num_reqs": Range(1, 2**12), "num_speculative_tokens": Range(1, 31)},
    facts={"num_reqs <= max_num_reqs (scheduler)": lambda num_reqs, max_num_reqs: num_reqs <= max_num_reqs},
    sources=[_V + f"{_V2DF}:357-365 (num_sample = num_reqs * num_speculative_steps; [:num_sample])"],
    doc="One sampling row per mask token: num_reqs * num_speculative_steps (= K) rows.",
    demand_name="num_sample",
    requires=("dflash",),
)
for _key in ("DFlashSpeculator.sample_indices", "DFlashSpeculator.sample_pos", "DFlashSpeculator.sample_idx_mapping"):
    cover(INVENTORY, f"{_V2DF}::{_key}", SAMPLE_ROWS, aliases=ALIASES[_V2DF])


# ---------------------------------------------------------------------------------------------
# A few more request-indexed buffers whose writers the text search did not find in the owner's file.

table(
    "vllm/v1/worker/gpu_model_runner.py",
    REQUESTS,
    {
        "GPUModelRunner.valid_sampled_token_count_cpu": "4663 4664 4680 4682",
    },
)
cover(
    INVENTORY,
    "vllm/v1/worker/gpu_model_runner.py::GPUModelRunner._num_valid_draft_tokens_cpu",
    REQUESTS,
    [
        _V + "vllm/v1/worker/gpu_model_runner.py:1328",
        _V + "vllm/v1/spec_decode/ngram_proposer_gpu.py:490-501 "
        "(num_valid_draft_tokens_cpu[req_index], req_index from input_batch.req_id_to_index)",
    ],
    aliases=ALIASES["vllm/v1/worker/gpu_model_runner.py"],
)
cover(
    INVENTORY,
    "vllm/v1/worker/gpu/block_table.py::BlockTables.block_tables[]",
    REQUESTS,
    [_V + "vllm/v1/worker/gpu/block_table.py:143 (stage_write(req_index, start, block_ids))"],
)

# GDN's spec-decode token indices under the FULL-graph guard.
_GDN = "vllm/v1/attention/backends/gdn_attn.py"
GDN_SPEC_TOKENS = Family(
    name="gdn_spec_tokens",
    dim=0,
    demand=lambda num_spec_decode_tokens: num_spec_decode_tokens,
    domain={
        "num_spec_decode_tokens": Range(1, 2**14),
        "decode_cudagraph_max_bs": Range(1, 2**17),
        "max_num_reqs": Range(1, 2**12),
        "num_speculative_tokens": Range(0, 64),
        "max_cudagraph_capture_size": Range(1, 2**17),
    },
    facts={
        "staged only when num_spec_decode_tokens <= decode_cudagraph_max_bs (gdn_attn.py:714-720)": lambda num_spec_decode_tokens, decode_cudagraph_max_bs: (
            num_spec_decode_tokens <= decode_cudagraph_max_bs
        ),
        "decode_cudagraph_max_bs = min(max_num_seqs * (num_spec + 1), max_cudagraph_capture_size) (gdn_attn.py:195-202)": lambda decode_cudagraph_max_bs, max_num_reqs, num_speculative_tokens, max_cudagraph_capture_size: (
            decode_cudagraph_max_bs == minimum(max_num_reqs * (num_speculative_tokens + 1), max_cudagraph_capture_size)
        ),
    },
    sources=[
        _V + f"{_GDN}:706-720 (_stage_spec_decode guard)",
        _V + f"{_GDN}:639-642 (spec_token_indx[: spec_token_indx.size(0)])",
        _V + f"{_GDN}:195-202 (decode_cudagraph_max_bs)",
    ],
    doc="GDN's spec-decode token indices (one per spec-decode token) are staged into the FULL-graph buffer "
    "(decode_cudagraph_max_bs * (num_spec + 1)) only when there are at most decode_cudagraph_max_bs of them.",
    demand_name="spec_tokens",
)
cover(
    INVENTORY,
    f"{_GDN}::GDNAttentionMetadataBuilder.spec_token_indx",
    GDN_SPEC_TOKENS,
    aliases={"num_spec": ("num_speculative_tokens", f"{_GDN}:173")},
)

table("vllm/v1/worker/gpu/block_table.py", REQUESTS, {"BlockTables.input_block_tables": "186 187 190 196 210"})

_SO = "vllm/v1/worker/gpu/structured_outputs.py"
GRAMMAR_ROWS = Family(
    name="grammar_rows",
    dim=0,
    demand=lambda num_grammar_reqs, num_speculative_tokens: num_grammar_reqs * (num_speculative_tokens + 1),
    domain={
        "max_num_reqs": Range(1, 2**10),
        "num_grammar_reqs": Range(1, 2**10),
        "num_speculative_tokens": Range(0, 31),
    },
    facts={
        "grammar requests are requests of the batch (<= max_num_reqs)": lambda num_grammar_reqs, max_num_reqs: (
            num_grammar_reqs <= max_num_reqs
        )
    },
    sources=[
        _V
        + f"{_SO}:90-101 (mapping: one entry per grammar request and position < mask_stride; logits_indices[: len(mapping)])",
        _V + "vllm/v1/worker/gpu/model_runner.py:528-532 (max_num_logits = max_num_reqs * decode_query_len, "
        "mask_stride = decode_query_len)",
        _V + "vllm/v1/worker/gpu/model_runner.py:439-442 (decode_query_len = num_speculative_steps + "
        "model_state.num_new_sampled_tokens_per_step; the latter is 1, gpu/model_states/interface.py:254)",
    ],
    doc="Structured-output logits indices: mask_stride (= decode_query_len = num_speculative_tokens + 1) rows per "
    "grammar request.",
    demand_name="mapping",
)
cover(
    INVENTORY,
    f"{_SO}::StructuredOutputsWorker.logits_indices",
    GRAMMAR_ROWS,
    aliases={
        "max_num_logits": ("max_num_reqs * (num_speculative_tokens + 1)", "vllm/v1/worker/gpu/model_runner.py:529,439")
    },
)
cover(
    INVENTORY,
    f"{_SO}::StructuredOutputsWorker.grammar_bitmask",
    GRAMMAR_ROWS,
    [_V + f"{_SO}:83 (grammar_bitmask[: grammar_bitmask.shape[0]], one row per mapping entry)"],
    aliases={
        "max_num_logits": ("max_num_reqs * (num_speculative_tokens + 1)", "vllm/v1/worker/gpu/model_runner.py:529,439")
    },
)


# =============================================================================================
# Worker / V2 runner / spec-decode entries traced by capproof/engines/vllm/harness_worker.py
# Each writer line below was read; the family's demand is what it touches.

_AE = "vllm/v1/worker/gpu/spec_decode/acceptance_estimator.py"
SPEC_STEPS = Family(
    name="spec_steps",
    dim=0,
    relation="less_than",
    demand=lambda step: step,
    domain={"num_speculative_tokens": Range(1, 64), "step": Range(0, 63)},
    facts={
        "a speculative step is < num_speculative_steps (kernel grid / mask, the drafting loop)": lambda step, num_speculative_tokens: (
            step < num_speculative_tokens
        )
    },
    sources=[
        _V + "vllm/v1/worker/gpu/spec_decode/speculator.py:111 (num_speculative_steps = "
        "speculative_config.num_speculative_tokens), :261-263 (OnlineAcceptanceEstimator(max_num_reqs, "
        "num_speculative_steps, device))",
        _V + f"{_AE}:413 (_accumulate_kernel grid (num_speculative_steps,)), :38 (step = program_id(0))",
        _V + f"{_AE}:105-106 (_refit_kernel: k < NUM_SPECULATIVE_STEPS masks every load/store)",
    ],
    doc="Per-speculative-step state: entry [step] for step < num_speculative_steps.",
    demand_name="step",
    requires=("spec_decode",),
)
for _key, _where in (
    ("OnlineAcceptanceEstimator.info", "83-85 (info[step * 3 + c]), 109-111 (masked by k)"),
    ("OnlineAcceptanceEstimator.grad", "86-87 (grad[step * 2 + c]), 113-114 (masked by k)"),
    ("OnlineAcceptanceEstimator.counts", "88 (counts[step]), 116, 168 (masked by k)"),
    ("OnlineAcceptanceEstimator.intercepts", "120, 152 (masked by k), 307 (intercepts[step])"),
):
    cover(INVENTORY, f"{_AE}::{_key}", SPEC_STEPS, [f"{_V}{_AE}:{_where}"])
cover(
    INVENTORY,
    "vllm/v1/worker/gpu/spec_decode/dspark/speculator.py::DSparkSpeculator._step_cols",
    SPEC_STEPS,
    [
        _V + "vllm/v1/worker/gpu/spec_decode/dspark/speculator.py:123, 152 (_step_cols[step]), 170, 187, 196 "
        "(step = i in range(n_spec), n_spec = num_speculative_steps)"
    ],
)

cover(
    INVENTORY,
    f"{_V2DF}::DFlashSpeculator.sample_col",
    SAMPLE_ROWS,
    [_V + f"{_V2DF}:357, 367 (sample_col[:num_sample], num_sample = num_reqs * num_speculative_steps)"],
)
cover(
    INVENTORY,
    "vllm/v1/worker/gpu/spec_decode/dflash2/speculator.py::CandidateSampler.cached_candidate_ids",
    REQUESTS,
    [
        _V + "vllm/v1/worker/gpu/spec_decode/dflash2/speculator.py:173-177 (_cache_draft_logits_kernel writes "
        "cached_candidate_ids at the request-state row of idx_mapping, like scores)"
    ],
)
cover(
    INVENTORY,
    "vllm/v1/worker/gpu/spec_decode/speculator.py::DraftModelSpeculator.draft_token_confidence_probs",
    REQUESTS,
    [
        _V + "vllm/v1/worker/gpu/spec_decode/dspark/speculator.py:207, 256 (draft_token_confidence_probs[:num_reqs])",
        _V + "vllm/v1/worker/gpu/spec_decode/speculator.py:491",
    ],
)

_AV = "vllm/v1/worker/gpu/spec_decode/adaptive_verification.py"
cover(
    INVENTORY,
    f"{_AV}::AdaptiveVerificationManager._num_non_draft_tokens",
    REQUESTS,
    [_V + f"{_AV}:454 (_num_non_draft_tokens[:num_reqs])"],
)
cover(
    INVENTORY,
    f"{_AV}::AdaptiveVerificationManager._cu_num_logits",
    QUERY_START_LOC,
    [_V + f"{_AV}:456, 460, 484 (_cu_num_logits[:1], [1 : num_reqs + 1], [: num_reqs + 1])"],
)

table(
    "vllm/v1/worker/gpu_model_runner.py",
    REQUESTS,
    {
        "GPUModelRunner._ngram_pinned_idx_buf": "1510",
        "GPUModelRunner._ngram_pinned_val_buf": "1511",
    },
)
cover(
    INVENTORY,
    "vllm/v1/worker/gpu/model_states/default.py::DefaultModelState.inputs_embeds",
    TOKENS,
    [_V + "vllm/v1/worker/gpu/model_states/default.py:96 (inputs_embeds[:num_tokens], dummy runs)"],
)
cover(
    INVENTORY,
    "vllm/v1/worker/gpu/mm/rope.py::RopeState.positions",
    TOKENS,
    [_V + "vllm/v1/worker/gpu/mm/rope.py:80 (positions[:, :num_tokens])"],
    dim=1,
)
cover(
    INVENTORY,
    "vllm/v1/worker/gpu/states.py::RequestState.next_prefill_tokens",
    REQUESTS,
    [_V + "vllm/v1/worker/gpu/input_batch.py:320-325 (next_prefill_tokens[lookahead, req_state_idx])"],
    dim=1,
)


# =============================================================================================
# Attention-backend entries traced by capproof/engines/vllm/harness_attention.py.

# ROCm sparse MLA: one query row per token; the top-k lists are flattened per token.
table(
    "vllm/v1/attention/backends/mla/rocm_aiter_mla_sparse.py",
    TOKEN_OFFSETS,
    {
        "ROCMAiterMLASparseMetadataBuilder.qo_indptr": "644",
    },
)
table(
    "vllm/v1/attention/backends/mla/rocm_aiter_mla_sparse.py",
    TOKEN_TOPK,
    {
        "ROCMAiterMLASparseMetadataBuilder.paged_kv_indices": "614 620 647",
    },
)

# ROCm MXFP4 indexer: context lengths per request, decode block ends per flattened decode row
# (one row per decode token: use_flattening, rocm_paged_mxfp4_indexer.py:356-358).
table(
    "vllm/v1/attention/backends/mla/rocm_paged_mxfp4_indexer.py",
    REQUESTS,
    {
        "RocmMxfp4IndexerMetadataBuilder.context_lens_buffer": "414 415 416",
    },
)
table(
    "vllm/v1/attention/backends/mla/rocm_paged_mxfp4_indexer.py",
    TOKENS,
    {
        "RocmMxfp4IndexerMetadataBuilder.decode_block_ends_buffer": "423 424 425",
    },
)

# Mamba ReplaySSM B·C scratch: [:num_decodes] eagerly (605), [:padded_bs] under the decode
# CUDA-graph guard (687); both count requests of the batch.
table(
    "vllm/v1/attention/backends/mamba_attn.py",
    REQUESTS,
    {
        "BaseMambaAttentionMetadataBuilder.decode_bc_pre_scratch": "605 687",
    },
)

# GDN's non-spec token indices are staged into the FULL-graph buffer only under the spec-decode
# guard, which requires no prefills and no (non-spec) decodes: the list is then empty.
GDN_NON_SPEC_TOKENS = Family(
    name="gdn_non_spec_tokens",
    dim=0,
    demand=lambda num_non_spec_tokens: num_non_spec_tokens,
    domain={
        "num_non_spec_tokens": Range(0, 2**17),
        "num_prefills": Range(0, 2**12),
        "num_decodes": Range(0, 2**12),
        "num_prefill_tokens": Range(0, 2**17),
        "num_decode_tokens": Range(0, 2**17),
    },
    facts={
        "staged only when num_prefills == 0 and num_decodes == 0 (gdn_attn.py:714-717)": lambda num_prefills, num_decodes: (
            (num_prefills == 0) & (num_decodes == 0)
        ),
        "a request class with no requests has no tokens": lambda num_prefills, num_decodes, num_prefill_tokens, num_decode_tokens: (
            ((num_prefills > 0) | (num_prefill_tokens == 0)) & ((num_decodes > 0) | (num_decode_tokens == 0))
        ),
        "the non-spec tokens are the prefill and decode tokens (gdn_attn.py:464; 442 gives an empty list)": lambda num_non_spec_tokens, num_prefill_tokens, num_decode_tokens: (
            num_non_spec_tokens == num_prefill_tokens + num_decode_tokens
        ),
    },
    sources=[
        _V + f"{_GDN}:706-720 (_stage_spec_decode guard)",
        _V + f"{_GDN}:432-444,464-465 (non_spec_token_indx)",
        _V + f"{_GDN}:632-637 (non_spec_token_indx[: non_spec_token_indx.size(0)])",
    ],
    doc="GDN's non-spec token indices in the FULL-graph buffer: staged only for pure spec-decode batches, "
    "where they are empty.",
    demand_name="non_spec_tokens",
)
cover(INVENTORY, f"{_GDN}::GDNAttentionMetadataBuilder.non_spec_token_indx", GDN_NON_SPEC_TOKENS)

# FlashAttention 3's AOT scheduler metadata, staged into the FULL-graph buffer.
_FA = "vllm/v1/attention/backends/flash_attn.py"
FA3_SCHEDULER_METADATA = Family(
    name="fa3_scheduler_metadata",
    dim=0,
    demand=lambda num_reqs_padded: 1 + ((num_reqs_padded + 3) // 4) * 4 * 4,
    domain={"max_num_reqs": Range(1, 2**12), "num_reqs_padded": Range(1, 2**12)},
    facts=PADDED_REQS_FIT,
    sources=[
        _V + f"{_FA}:670-682 (_store_scheduler_metadata: scheduler_metadata[:n] = the FA3 metadata, n its length)",
        _V + f"{_FA}:927-945 (get_scheduler_metadata(batch_size=num_reqs, ...))",
        _V + f"{_FA}:753-757 (the size formula 1 + round_up(batch_size, 4) * 4, quoting flash-attention "
        "hopper/flash_api.cpp:664-671)",
    ],
    doc="FA3's scheduler metadata for a batch of num_reqs requests has 1 + round_up(num_reqs, 4) * 4 entries "
    "(tile-count semaphore + 4 vectors per request). ASSUMPTION (unconfirmed: FA3 is compiled, not in the "
    "wheel): the kernel's metadata has the length the builder's comment quotes.",
    demand_name="metadata_entries",
)
cover(
    INVENTORY,
    f"{_FA}::FlashAttentionMetadataBuilder.scheduler_metadata",
    FA3_SCHEDULER_METADATA,
    [_V + f"{_FA}:676 (scheduler_metadata[:n] = scheduler_metadata)"],
)

# TurboQuant's position arange: reused only while longer than the step's longest sequence,
# else re-allocated (turboquant_attn.py:779-784); read as [cached_len + 1 : seq_len + 1] (837).
_TQ = "vllm/v1/attention/backends/turboquant_attn.py"
REGROWN_ARANGE = Family(
    name="regrown_arange",
    dim=0,
    demand=lambda seq_len: seq_len + 1,
    domain={"seq_len": Range(1, 2**21), "max_seq_len": Range(1, 2**21)},
    facts={
        "a request's sequence is at most the step's longest (attn_metadata.max_seq_len)": lambda seq_len, max_seq_len: (
            seq_len <= max_seq_len
        ),
        "the cached arange is used only when longer than max_seq_len, else re-allocated to max_seq_len + 1 "
        "(turboquant_attn.py:779-784)": lambda capacity, max_seq_len: capacity > max_seq_len,
    },
    sources=[
        _V + f"{_TQ}:779-785 (_ac reused if _ac.shape[0] > _max_seq, else torch.arange(0, _max_seq + 1))",
        _V + f"{_TQ}:837 (synth_seq_lens = _arange_cache[cached_len + 1 : seq_len + 1])",
    ],
    doc="A lazily regrown arange: the step's reader slices [: seq_len + 1] of a cache that is longer than the "
    "step's longest sequence (the guard binds the capacity itself).",
    demand_name="slice_end",
)
cover(
    INVENTORY,
    f"{_TQ}::TurboQuantAttentionImpl._arange_cache",
    REGROWN_ARANGE,
    [_V + f"{_TQ}:432 (pre-allocated for FlyDSL CUDA-graph capture; the same reader reuses it)"],
)
cover(INVENTORY, f"{_TQ}::TurboQuantAttentionImpl._arange_cache#2", REGROWN_ARANGE)

# FlashInfer sparse MLA on SM90: FlashInfer's CUDA-graph plan() copies the full staging tensors
# into the reserved buffers with exact-size copy_ (flashinfer_mla_sparse_sm90.py:341-346).
_SM90 = "vllm/v1/attention/backends/mla/flashinfer_mla_sparse_sm90.py"


def _staging(extra):
    return Family(
        name="full_staging" if extra == 0 else "full_staging_offsets",
        dim=0,
        demand=lambda max_num_batched_tokens: max_num_batched_tokens + extra,
        domain={"max_num_batched_tokens": Range(1, 2**17)},
        sources=[
            _V + f"{_SM90}:341-355 (plan() passes the full _qo_cpu / _lens_cpu staging tensors; use_cuda_graph=True "
            "copies them into the reserved buffers with exact-size copy_)",
            _V + f"{_SM90}:290-294 (staging sizes: _qo_cpu max_tokens + 1, _lens_cpu max_tokens; max_tokens = "
            "max_num_batched_tokens, 459-463)",
        ],
        doc="A reserved FlashInfer buffer receives a full-size copy of a staging tensor: the staging length "
        "(traced: max_num_batched_tokens" + (" + 1" if extra else "") + ") must fit.",
        demand_name="staging_len",
    )


cover(INVENTORY, f"{_SM90}::_SM90State.wrapper", _staging(1), [_V + f"{_SM90}:283 (qo_indptr reserved buffer)"])
cover(INVENTORY, f"{_SM90}::_SM90State.kv_len_arr", _staging(0), [_V + f"{_SM90}:286 (kv_len_arr reserved buffer)"])

# ROCm AITER MLA: one flat page per token (page_size 1), all requests' pages back to back.
_AMLA = "vllm/v1/attention/backends/mla/rocm_aiter_mla.py"
FLAT_TOKEN_PAGES = Family(
    name="flat_token_pages",
    dim=0,
    demand=lambda total_seq_tokens: total_seq_tokens,
    domain={
        "total_seq_tokens": Range(1, 2**33),
        "num_reqs_padded": Range(1, 2**12),
        "max_num_reqs": Range(1, 2**12),
        "max_model_len": Range(1, 2**21),
    },
    facts={
        **PADDED_REQS_FIT,
        "each request's sequence is at most max_model_len (scheduler; the total sums num_reqs of them)": lambda total_seq_tokens, num_reqs_padded, max_model_len: (
            total_seq_tokens <= num_reqs_padded * max_model_len
        ),
    },
    sources=[
        _V + f"{_AMLA}:1575-1580 (paged_kv_indptr = cumsum of seq_lens, one page per token)",
        _V + f"{_AMLA}:1626-1639 (_expand_page_indices_kernel writes paged_kv_indices[indptr[r] : indptr[r + 1]])",
        _V + "vllm/v1/core/sched/scheduler.py:852-857 (a request's tokens stay within max_model_len)",
    ],
    doc="AITER MLA's flat page list: the sum of the requests' sequence lengths. Without adaptive varlen verify "
    "(the traced configuration; with it the allocation adds max_num_reqs * K pages, rocm_aiter_mla.py:920-925, "
    "and the kernel lengths are padded by max_qo_len - qo_len).",
    demand_name="pages",
)
cover(INVENTORY, f"{_AMLA}::AiterMLAMetadataBuilder.paged_kv_indices", FLAT_TOKEN_PAGES)
