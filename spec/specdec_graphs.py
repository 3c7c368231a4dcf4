"""Speculative decoding and CUDA-graph padding vs token/row buffers (Family C: C1, C2, C6a, C6b).

Batches are ``Vector(1024, …, length="num_reqs")`` parameters: up to 1024 requests, each entry
one request's value (``seq_lens`` in tokens). Scheduler and allocator facts are named
assumptions, so a proof's unsat core says which of them it rests on.
"""

from capproof import Choice, Range, Vector, all_of, any_of, at_most, equal, max_of, obligation, total
from models.sglang.dsa_page_table import (
    clamped_copy_widths,
    page_table_width_round0,
    page_table_width_round1,
    page_table_width_round2,
    req_to_token_width,
    target_verify_max_seqlen_k,
)
from models.trtllm.cuda_graph import (
    AUTODEPLOY_CAPTURE_SIZES_10688,
    autodeploy_capture_size_fixed,
    cu_seqlen_demand,
    cu_seqlen_entries,
    graph_input_tokens,
    max_cuda_graph_bs_before_5076,
    max_cuda_graph_bs_fixed,
)
from models.vllm.spec_decode import proposer_arange_len_0_33, proposer_arange_len_16316, query_start_loc_entries
from spec._batches import BATCH, DECODE_BATCH_FACTS

# ---------------------------------------------------------------------------------------------
# C1 sglang-nsa-dsa-page-table-specdec: the graph page_table (destination) vs req_to_token
# (source) on target-verify replay. SGLang EAGLE (not UNO), DSA backend.

_C1 = {
    "context_len": Range(1024, 2**20),
    "speculative_num_draft_tokens": Range(1, 16),
    "speculative_num_steps": Range(1, 16),
    "speculative_eagle_topk": Choice(1, 4),
    "page_size": Choice(1, 64),
    "num_reqs": Range(1, BATCH),
    "seq_lens": Vector(BATCH, Range(1, 2**21), length="num_reqs"),
}
_C1_FACTS = {
    # The allocator keeps every verify write inside the row: req_to_token is sized with the
    # speculative headroom precisely so that committed length + drafts fit (§11.1; SGLang asserts
    # max(nxt) <= req_to_token.shape[1] in eagle_prepare_for_decode for page > 1, topk > 1).
    "verify writes fit the req_to_token row": lambda seq_lens, context_len, speculative_num_draft_tokens, speculative_num_steps, speculative_eagle_topk, page_size: (
        max_of(seq_lens) + speculative_num_draft_tokens
        <= req_to_token_width(
            context_len, speculative_num_draft_tokens, speculative_num_steps, speculative_eagle_topk, page_size
        )
    ),
}


def _c1_copy(dst_width, seq_lens, context_len, draft, steps, topk, page_size):
    k = target_verify_max_seqlen_k(seq_lens, draft)
    src_width = req_to_token_width(context_len, draft, steps, topk, page_size)
    dst_cols, src_cols = clamped_copy_widths(k, dst_width, src_width)
    return equal(dst_cols=dst_cols, src_cols=src_cols)


def _a_request_at(offset):
    """Witness: some request's seq_len is exactly ``context_len + offset``."""
    return lambda seq_lens, context_len: any_of(*(s == context_len + offset for s in seq_lens))


@obligation(
    domain=_C1,
    assumptions=_C1_FACTS,
    expect="counterexample",
    case="sglang-nsa-dsa-page-table-specdec",
    sources=[
        "sgl-project/sglang#18780",
        "sgl-project/sglang#18980",
        "sglang==0.5.23 sglang/srt/mem_cache/allocation_sizing.py",
    ],
    witnesses={"a request at context_len": _a_request_at(0)},
)
def page_table_copy_round0(
    context_len,
    speculative_num_draft_tokens,
    speculative_num_steps,
    speculative_eagle_topk,
    page_size,
    num_reqs,
    seq_lens,
):
    """Round 0: page_table has ``context_len`` columns, req_to_token ``context_len + extra``.

    The copy fails as soon as ``max(seq_lens) + draft > context_len``: only batches with a request
    within ``draft`` tokens of ``context_len`` (long generations), only on graph replay. With a
    request at exactly ``context_len`` and 2 draft tokens: 163840 vs 163842 (DeepSeek-V3.2 NVFP4,
    SGLang 0.5.8), 202752 vs 202754 (GLM-class); 3 draft tokens give the 163843 variant.
    """
    return _c1_copy(
        page_table_width_round0(context_len, speculative_num_draft_tokens),
        seq_lens,
        context_len,
        speculative_num_draft_tokens,
        speculative_num_steps,
        speculative_eagle_topk,
        page_size,
    )


@obligation(
    domain=_C1,
    assumptions=_C1_FACTS,
    expect="counterexample",
    case="sglang-nsa-dsa-page-table-specdec",
    sources=["sgl-project/sglang#19016", "sgl-project/sglang#19641"],
    witnesses={
        "no request past context_len": lambda seq_lens, context_len: all_of(*(s <= context_len for s in seq_lens))
    },
)
def page_table_copy_round1(
    context_len,
    speculative_num_draft_tokens,
    speculative_num_steps,
    speculative_eagle_topk,
    page_size,
    num_reqs,
    seq_lens,
):
    """Round 1 (#19016): ``context_len + draft`` columns, still narrower than ``context_len + 4 +
    draft`` (or more with page > 1). Fails once a request's seq_len passes ``context_len`` (the
    allocator's headroom allows it): 90006 vs 90007 (GLM-5.2-NVFP4, EAGLE, long generations; any
    split of 90006 into ``context_len + draft``). The witness shows no batch of requests within
    ``context_len`` fails: round 1 fixed the reported round-0 trigger only.
    """
    return _c1_copy(
        page_table_width_round1(context_len, speculative_num_draft_tokens),
        seq_lens,
        context_len,
        speculative_num_draft_tokens,
        speculative_num_steps,
        speculative_eagle_topk,
        page_size,
    )


@obligation(
    domain=_C1,
    assumptions=_C1_FACTS,
    expect="proved",
    case="sglang-nsa-dsa-page-table-specdec",
    sources=["sgl-project/sglang#29379", "sglang==0.5.23 sglang/srt/layers/attention/dsa_backend.py"],
)
def page_table_copy_round2(
    context_len,
    speculative_num_draft_tokens,
    speculative_num_steps,
    speculative_eagle_topk,
    page_size,
    num_reqs,
    seq_lens,
):
    """Round 2 (#29379, SGLang 0.5.23): ``max_ctx_len = req_to_token.shape[1]``: the destination
    takes its width from the source, so both slices clamp alike for every batch. Rests on no
    assumption (equal widths clamp equally); the allocator fact only restricts the batches.
    """
    src = req_to_token_width(
        context_len, speculative_num_draft_tokens, speculative_num_steps, speculative_eagle_topk, page_size
    )
    return _c1_copy(
        page_table_width_round2(src),
        seq_lens,
        context_len,
        speculative_num_draft_tokens,
        speculative_num_steps,
        speculative_eagle_topk,
        page_size,
    )


# ---------------------------------------------------------------------------------------------
# C2 vllm-specdec-arange-query-start-loc: the proposer's arange, sliced to build query_start_loc.
# The vLLM-Ascend FULL_DECODE_ONLY draft path builds query_start_loc over *tokens* (one item per
# token), so a saturated decode batch needs total(decode_lens) + 1 entries.

_C2 = {
    "max_num_seqs": Range(1, BATCH),
    "max_num_batched_tokens": Range(1, 2**16),
    "num_speculative_tokens": Range(1, 7),
    "num_reqs": Range(1, BATCH),
    "decode_lens": Vector(BATCH, Range(1, 8), length="num_reqs"),
}
_C2_FACTS = {
    "num_reqs <= max_num_seqs": lambda num_reqs, max_num_seqs: num_reqs <= max_num_seqs,
    "max_num_batched_tokens >= max_num_seqs": lambda max_num_batched_tokens, max_num_seqs: (
        max_num_batched_tokens >= max_num_seqs
    ),
    **DECODE_BATCH_FACTS,
}


@obligation(
    domain=_C2,
    assumptions=_C2_FACTS,
    expect="counterexample",
    case="vllm-specdec-arange-query-start-loc",
    sources=[
        "vllm-project/vllm-ascend#16316",
        "vllm-project/vllm#56375",
        "vllm==0.33.0 vllm/v1/spec_decode/llm_base_proposer.py",
    ],
    # vLLM-Ascend inherits this proposer; #16316 fixed it there, in a release capproof cannot name
    engine="vllm-ascend",
    requires=("spec_decode",),
    tags=("fix-release-unknown",),
)
def arange_covers_token_query_start_loc_before_16316(
    max_num_seqs, max_num_batched_tokens, num_speculative_tokens, num_reqs, decode_lens
):
    """``max(max_batch_size + 1, max_num_tokens)`` entries vs ``num_tokens + 1`` needed.

    Short iff ``mnbt >= max_num_seqs + 1`` and the batch saturates ``mnbt``. The Ascend CI job
    (DeepSeek-V4 Flash, max_num_seqs 60, mnbt 240, MTP 3): 60 requests x 4 tokens = 240 tokens
    need 241 entries of a 240-entry buffer (reported as 240 vs 239: a slice from index 1, derived).
    """
    return at_most(
        demand=query_start_loc_entries(total(decode_lens)),
        capacity=proposer_arange_len_0_33(max_num_seqs, max_num_batched_tokens),
    )


@obligation(
    domain=_C2,
    assumptions=_C2_FACTS,
    expect="proved",
    case="vllm-specdec-arange-query-start-loc",
    sources=["vllm-project/vllm-ascend#16316"],
)
def arange_covers_token_query_start_loc_16316(
    max_num_seqs, max_num_batched_tokens, num_speculative_tokens, num_reqs, decode_lens
):
    """The fix ``max(max_batch_size, max_num_tokens) + 1``: rests on the token budget alone."""
    return at_most(
        demand=query_start_loc_entries(total(decode_lens)),
        capacity=proposer_arange_len_16316(max_num_seqs, max_num_batched_tokens),
    )


# ---------------------------------------------------------------------------------------------
# C6 trtllm-cudagraph-bs-vs-buffers, sub-cases a and b (static: the configuration decides).


@obligation(
    domain={"max_batch_size": Range(1, 4096), "capture_batch_size": Choice(AUTODEPLOY_CAPTURE_SIZES_10688)},
    expect="counterexample",
    case="trtllm-cudagraph-bs-vs-buffers",
    sources=["NVIDIA/TensorRT-LLM#10688"],
)
def autodeploy_capture_fits_cu_seqlen_before_10687(max_batch_size, capture_batch_size):
    """a) AutoDeploy captured {1, 17, 33, …, 113} whatever ``max_batch_size`` was; ``cu_seqlen``
    has ``max_batch_size + 1`` entries. ``max_batch_size=4``, warm-up at 113: 114 > 5."""
    return at_most(demand=cu_seqlen_demand(capture_batch_size), capacity=cu_seqlen_entries(max_batch_size))


@obligation(
    domain={"max_batch_size": Range(1, 4096), "capture_batch_size": Choice(AUTODEPLOY_CAPTURE_SIZES_10688)},
    expect="proved",
    case="trtllm-cudagraph-bs-vs-buffers",
    sources=["NVIDIA/TensorRT-LLM#10687"],
)
def autodeploy_capture_fits_cu_seqlen_fixed(max_batch_size, capture_batch_size):
    """a) The invariant ``max(capture sizes) <= max_batch_size`` (exact fix not recorded; modelled
    as a clamp) makes every captured ``cu_seqlen`` fit. Rests on no assumption."""
    return at_most(
        demand=cu_seqlen_demand(autodeploy_capture_size_fixed(capture_batch_size, max_batch_size)),
        capacity=cu_seqlen_entries(max_batch_size),
    )


_C6B = {"max_batch_size": Range(1, 4096), "max_num_tokens": Range(1, 2**17), "max_draft_len": Choice(range(0, 8))}


@obligation(
    domain=_C6B, expect="counterexample", case="trtllm-cudagraph-bs-vs-buffers", sources=["NVIDIA/TensorRT-LLM#5076"]
)
def graph_tokens_fit_max_num_tokens_before_5076(max_batch_size, max_num_tokens, max_draft_len):
    """b) ``max_cuda_graph_bs = min(max_batch_size, max_num_tokens)`` ignores the draft tokens:
    the graph takes ``(1 + max_draft_len) * bs > max_num_tokens`` (no reported numbers)."""
    bs = max_cuda_graph_bs_before_5076(max_batch_size, max_num_tokens)
    return at_most(demand=graph_input_tokens(bs, max_draft_len), capacity=max_num_tokens)


@obligation(domain=_C6B, expect="proved", case="trtllm-cudagraph-bs-vs-buffers", sources=["NVIDIA/TensorRT-LLM#5076"])
def graph_tokens_fit_max_num_tokens_fixed(max_batch_size, max_num_tokens, max_draft_len):
    """b) ``min(max_batch_size, max_num_tokens // (1 + max_draft_len))`` establishes the
    invariant (exact fix expression not recorded). Rests on no assumption."""
    bs = max_cuda_graph_bs_fixed(max_batch_size, max_num_tokens, max_draft_len)
    return at_most(demand=graph_input_tokens(bs, max_draft_len), capacity=max_num_tokens)
