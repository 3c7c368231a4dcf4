"""SGLang 0.5.23's pre-allocated buffers (the inventory) against the demand of their writers.

Every obligation here takes its capacity from the committed inventory
(``proofs/inventory/sglang-0.5.23.json``, ``capproof.inventory.capacity``): the shape SGLang's own
constructor produced when traced on symbolic server arguments (``capproof inventory --engine
sglang==0.5.23``), never a transcription. The demand side is stated from SGLang's code path that
writes or reads the buffer (cited per family), with the facts it rests on as named assumptions.
None of them restates its claim: each fact bounds another quantity (a request's committed length,
the raw batch size the CUDA-graph runner accepts, the routing's token count) from which the demand
is computed.

Not here (stay uncovered in proofs/coverage.md): the buffers whose only demand argument would be
"the padded batch is at most the largest captured batch" (the graph runners' per-request and
per-token static inputs): that fact is the claim itself, so such an obligation would not count as
verified.
"""

from __future__ import annotations

from capproof import Choice, Range, minimum
from models.sglang.dsa_page_table import decode_alloc_end, get_req_to_token_extra_context_len
from spec._inventory import Family, cover

INVENTORY = "proofs/inventory/sglang-0.5.23.json"
_S = "sglang==0.5.23 "

#: Domains of SGLang's shape names (capproof/engines/sglang/trace.py's vocabulary).
CONFIG = {
    "context_len": Range(1, 2**21),
    "max_context_len": Range(1, 2**22),
    "req_pool_size": Range(1, 2**12),
    "max_bs": Range(1, 2**10),
    "captured_req_width": Choice(1),
    "page_size": Choice(1, 16, 32, 64, 128),
    "num_tokens": Range(1, 2**16),
    "top_k": Range(1, 16),
    "num_experts": Range(1, 1024),
    "block_size_m": Choice(16, 32, 64, 128),
}

# -- req_to_token rows vs one speculative decode step's allocation --------------------------------

REQ_TO_TOKEN_ROW = Family(
    name="sglang_decode_alloc_row",
    dim=1,
    demand=lambda kv_committed_len, kv_allocated_len, speculative_num_draft_tokens, speculative_num_steps, speculative_eagle_topk, page_size: (
        decode_alloc_end(
            kv_committed_len,
            kv_allocated_len,
            speculative_num_draft_tokens,
            speculative_num_steps,
            speculative_eagle_topk,
            page_size,
        )
    ),
    domain={
        "context_len": Range(1024, 2**21),
        "max_context_len": Range(1024, 2**22),
        "speculative_num_draft_tokens": Range(2, 16),
        "speculative_num_steps": Range(1, 8),
        "speculative_eagle_topk": Choice(1, 4),
        "page_size": Choice(1, 16, 32, 64, 128),
        "kv_committed_len": Range(0, 2**21),
        "kv_allocated_len": Range(0, 2**21),
    },
    facts={
        "row width = context_len + get_req_to_token_extra_context_len() (allocation_sizing.py)": lambda max_context_len, context_len, speculative_num_draft_tokens, speculative_num_steps, speculative_eagle_topk, page_size: (
            max_context_len
            == context_len
            + get_req_to_token_extra_context_len(
                speculative_num_draft_tokens, speculative_num_steps, speculative_eagle_topk, page_size
            )
        ),
        # organize_draft_results (speculative/eagle_utils.py:106-110) picks draft - 1 tokens among
        # topk + (steps - 1) * topk^2 candidates; topk 1 forces draft = steps + 1
        "draft tokens - 1 <= topk + (steps - 1) * topk^2 (EAGLE candidates)": lambda speculative_num_draft_tokens, speculative_num_steps, speculative_eagle_topk: (
            speculative_num_draft_tokens - 1
            <= speculative_eagle_topk + (speculative_num_steps - 1) * speculative_eagle_topk * speculative_eagle_topk
        ),
        "kv_committed_len <= context_len - 1 (a running request has room for one more token)": lambda kv_committed_len, context_len: (
            kv_committed_len <= context_len - 1
        ),
        "kv_allocated_len <= kv_committed_len (no over-allocation carried in)": lambda kv_allocated_len, kv_committed_len: (
            kv_allocated_len <= kv_committed_len
        ),
    },
    sources=[
        _S + "sglang/srt/mem_cache/allocation_sizing.py (get_req_to_token_extra_context_len, "
        "page_aligned_decode_alloc_lens)",
        "models/sglang/dsa_page_table.py::decode_alloc_end",
    ],
    doc="One speculative decode step writes a request's req_to_token row up to nxt = max(kv_allocated_len, "
    "ceil_to_page(kv_committed_len + reserve)).",
    demand_name="nxt",
    requires=("spec_decode",),
)
cover(
    INVENTORY,
    "sglang/srt/mem_cache/memory_pool.py::ReqToTokenPool.req_to_token",
    REQ_TO_TOKEN_ROW,
    [
        _S + "sglang/srt/speculative/eagle_utils.py::eagle_prepare_for_decode (asserts max(nxt) <= "
        "req_to_token.shape[1] only for page > 1 with topk > 1)"
    ],
    expect="counterexample",
)

# -- MoE alignment (reference §8.2): the kernel pads each of num_experts + 1 buckets to block_size_m


def _moe_padded_total(num_tokens, top_k, num_experts, block_size_m):
    """The most sorted_ids entries the align kernel writes: every non-empty bucket (at most
    ``min(numel, num_experts + 1)`` of the E + 1 buckets) padded by at most ``block_size_m - 1``
    (``moe_align_block_size.py``: the kernels run with ``num_experts + 1`` buckets)."""
    numel = num_tokens * top_k
    return numel + minimum(numel, num_experts + 1) * (block_size_m - 1)


_MOE_DOMAIN = {
    "num_tokens": Range(1, 2**16),
    "top_k": Range(1, 16),
    "num_experts": Range(1, 1024),
    "block_size_m": Choice(16, 32, 64, 128),
}
_MOE_SOURCES = [
    _S + "sglang/srt/layers/moe/moe_runner/triton_utils/moe_align_block_size.py (E + 1 buckets)",
    "reference §8.2",
]

MOE_SORTED_IDS = Family(
    name="sglang_moe_sorted_ids",
    dim=0,
    demand=_moe_padded_total,
    domain=_MOE_DOMAIN,
    sources=_MOE_SOURCES,
    doc="sorted_ids holds the routing's numel token slots, each non-empty bucket padded to block_size_m.",
    demand_name="padded_total",
)
MOE_EXPERT_IDS = Family(
    name="sglang_moe_expert_ids",
    dim=0,
    demand=lambda num_tokens, top_k, num_experts, block_size_m: (
        _moe_padded_total(num_tokens, top_k, num_experts, block_size_m) // block_size_m
    ),
    domain=_MOE_DOMAIN,
    sources=_MOE_SOURCES,
    doc="expert_ids holds one entry per block_size_m block of the padded sorted_ids.",
    demand_name="num_blocks",
)
MOE_CUMSUM = Family(
    name="sglang_moe_cumsum",
    dim=0,
    demand=lambda num_experts: (num_experts + 1) + 1,
    domain={"num_experts": Range(1, 1024)},
    sources=_MOE_SOURCES,
    doc="cumsum_buffer holds the prefix sums of the E + 1 buckets' padded counts, with a leading 0.",
    demand_name="num_buckets_plus_one",
)
_MOE = "sglang/srt/layers/moe/moe_runner/triton_utils/moe_align_block_size.py::moe_align_block_size."
cover(INVENTORY, _MOE + "sorted_ids", MOE_SORTED_IDS, config=CONFIG)
cover(INVENTORY, _MOE + "expert_ids", MOE_EXPERT_IDS, config=CONFIG)
cover(INVENTORY, _MOE + "cumsum_buffer", MOE_CUMSUM, config=CONFIG)

# -- decode CUDA graphs: KV indices of a replayed batch ------------------------------------------

_GRAPH_FACTS = {
    "raw_bs <= padded_bs (the replay pads the batch up to a captured size)": lambda raw_bs, padded_bs: (
        raw_bs <= padded_bs
    ),
    "padded_bs <= max_bs (can_run: the batch fits the largest captured size)": lambda padded_bs, max_bs: (
        padded_bs <= max_bs
    ),
    "a decoding request's KV length is at most context_len (scheduler: input + output <= context_len)": lambda seq_len, context_len: (
        seq_len <= context_len
    ),
}
_GRAPH_SOURCES = [
    _S + "sglang/srt/model_executor/runner/decode_cuda_graph_runner.py:424-429 "
    "(max_num_token = max_bs * captured_req_width; init_cuda_graph_state)",
    _S + "sglang/srt/model_executor/runner/decode_cuda_graph_runner.py (replay: bs padded to a "
    "captured size, padded rows take seq_len_fill_value 1)",
]

TRITON_KV_INDICES = Family(
    name="sglang_decode_graph_kv_indices",
    dim=0,
    demand=lambda raw_bs, padded_bs, seq_len: raw_bs * seq_len + (padded_bs - raw_bs) * 1,
    domain={
        "raw_bs": Range(1, 2**10),
        "padded_bs": Range(1, 2**10),
        "seq_len": Range(1, 2**21),
        "max_bs": Range(1, 2**10),
        "context_len": Range(1, 2**21),
    },
    facts=_GRAPH_FACTS,
    sources=[
        *_GRAPH_SOURCES,
        _S + "sglang/srt/layers/attention/triton_backend.py (init_forward_metadata_replay_"
        "cuda_graph: kv_indptr = cumsum(seq_lens[:bs]), kv_indices filled from req_to_token)",
    ],
    doc="A decode replay writes the KV indices of every padded request: the real requests' lengths "
    "(each at most seq_len) and one slot per padding row.",
    demand_name="kv_index_count",
    requires=("sglang_attention_backend_triton",),
)
cover(
    INVENTORY,
    "sglang/srt/layers/attention/triton_backend.py::TritonAttnBackend.cuda_graph_kv_indices",
    TRITON_KV_INDICES,
    config=CONFIG,
)

FLASHMLA_PAGES = Family(
    name="sglang_decode_graph_flashmla_pages",
    dim=1,
    demand=lambda seq_len: (seq_len + 64 - 1) // 64,
    domain={"seq_len": Range(1, 2**21), "context_len": Range(1, 2**21)},
    facts={
        "a decoding request's KV length is at most context_len (scheduler: input + output <= context_len)": lambda seq_len, context_len: (
            seq_len <= context_len
        )
    },
    sources=[
        _S + "sglang/srt/layers/attention/flashmla_backend.py (PAGE_SIZE 64 block table of a decode replay: "
        "cdiv(seq_len, 64) pages per request)"
    ],
    doc="A decode replay's FlashMLA block table row holds cdiv(seq_len, 64) pages of one request.",
    demand_name="pages",
    requires=("sglang_attention_backend_flashmla",),
)
cover(
    INVENTORY,
    "sglang/srt/layers/attention/flashmla_backend.py::FlashMLABackend.cuda_graph_kv_indices",
    FLASHMLA_PAGES,
    config=CONFIG,
)


# -- indptr buffers sized by the request pool, sliced by a captured batch size --------------------

KV_INDPTR_GRAPH = Family(
    name="sglang_graph_indptr_over_pool",
    dim=0,
    demand=lambda padded_bs: padded_bs + 1,
    domain={"req_pool_size": Range(1, 2**12), "padded_bs": Range(1, 2**13), "mul_base": Choice(1, 2, 4, 8)},
    facts={
        "captured sizes <= ceil_align(req_to_token_pool.size, mul_base) (get_batch_sizes_to_capture)": lambda padded_bs, req_pool_size, mul_base: (
            padded_bs <= (req_pool_size + mul_base - 1) // mul_base * mul_base
        ),
        "captured sizes are multiples of mul_base (bs * alignment_width % mul_base == 0, width 1)": lambda padded_bs, mul_base: (
            padded_bs % mul_base == 0
        ),
    },
    sources=[
        _S + "sglang/srt/model_executor/runner/base_cuda_graph_runner.py:77-101 (get_batch_sizes_to_capture: "
        "num_max_requests = ceil_align(req_to_token_pool.size, mul_base), added to capture_bs 'to avoid being "
        "filtered out')",
        _S + "sglang/srt/utils/common.py:4168-4181 (get_cuda_graph_batch_size_alignment: x2 under two-batch "
        "overlap, x attn_tp_size with a gathered buffer, x attn_cp_size)",
        _S + "sglang/srt/layers/attention/triton_backend.py:1302,1335,1354,1379 (capture/replay: "
        "self.kv_indptr[: bs + 1], self.qo_indptr[: bs + 1], self.mask_indptr[: bs + 1])",
    ],
    doc="A captured CUDA graph slices the backend's indptr buffers to bs + 1 for its batch size bs; the "
    "buffers hold req_to_token_pool.size + 1 entries (Triton backend: max_bs = req_to_token_pool.size).",
    demand_name="indptr_len",
    requires=("sglang_graph_bs_alignment", "sglang_attention_backend_triton"),
)
for _attr in ("kv_indptr", "qo_indptr", "mask_indptr"):
    cover(
        INVENTORY,
        f"sglang/srt/layers/attention/triton_backend.py::TritonAttnBackend.{_attr}",
        KV_INDPTR_GRAPH,
        expect="counterexample",
        config=CONFIG,
    )

KV_INDPTR_DRAFT = Family(
    name="sglang_draft_indptr_over_pool",
    dim=1,
    demand=lambda padded_bs, speculative_eagle_topk: speculative_eagle_topk * padded_bs + 1,
    domain={
        "req_pool_size": Range(1, 2**12),
        "padded_bs": Range(1, 2**13),
        "mul_base": Choice(1, 2, 4, 8),
        "speculative_eagle_topk": Range(1, 8),
    },
    facts=KV_INDPTR_GRAPH.facts,
    sources=[
        *KV_INDPTR_GRAPH.sources[:2],
        _S + "sglang/srt/layers/attention/triton_backend.py:2570-2624 (TritonMultiStepDraftBackend.common_template: "
        "bs = topk * num_seqs, spec_info.kv_indptr = self.kv_indptr[i, : bs + 1])",
    ],
    doc="Each draft step slices its kv_indptr row to topk * num_seqs + 1 for the captured batch of num_seqs "
    "requests; the row holds 1 + req_to_token_pool.size * topk entries.",
    demand_name="indptr_len",
    requires=("spec_decode", "sglang_graph_bs_alignment", "sglang_attention_backend_triton"),
)
cover(
    INVENTORY,
    "sglang/srt/layers/attention/triton_backend.py::TritonMultiStepDraftBackend.kv_indptr",
    KV_INDPTR_DRAFT,
    expect="counterexample",
    config=CONFIG,
)
