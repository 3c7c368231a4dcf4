"""SGLang 0.5.23 today: the ``req_to_token`` row width vs the speculative decode over-allocation.

Reference §11.1. ``req_to_token`` rows are ``context_len + get_req_to_token_extra_context_len()``
wide; one speculative decode step writes a request's row up to ``nxt = max(kv_allocated_len,
ceil_to_page(kv_committed_len + reserve))`` (``page_aligned_decode_alloc_lens``). The hybrid-Mamba
shared-pool paths compute the width with a formula of their own that says it mirrors the main one.

Assumption of the demand obligations (unconfirmed, stated): at the last decode step a request may
have committed up to ``context_len - 1`` tokens and allocated no more than it needs. Whether the
scheduler retracts or finishes such requests before ``nxt`` is written is not modelled.
"""

from capproof import Choice, Range, at_most, equal, obligation
from models.sglang.dsa_page_table import (
    decode_alloc_end,
    get_req_to_token_extra_context_len,
    hybrid_mamba_req_to_token_width,
    req_to_token_width,
)

_SPEC = {
    "context_len": Range(1024, 2**21),
    "speculative_num_draft_tokens": Range(2, 16),
    "speculative_num_steps": Range(1, 8),
    "speculative_eagle_topk": Choice(1, 4),
    "page_size": Choice(1, 64),
}
_EAGLE = {
    "draft tokens = steps * topk + 1 at most": lambda speculative_num_draft_tokens, speculative_num_steps, speculative_eagle_topk:
        speculative_num_draft_tokens <= speculative_num_steps * speculative_eagle_topk + 1,
}
_LAST_STEP = {
    "kv_committed_len <= context_len - 1": lambda kv_committed_len, context_len: kv_committed_len <= context_len - 1,
    "kv_allocated_len <= kv_committed_len": lambda kv_allocated_len, kv_committed_len: kv_allocated_len <= kv_committed_len,
}


@obligation(
    domain=_SPEC,
    assumptions=_EAGLE,
    expect="counterexample",
    case="sglang-req-to-token-hybrid-mamba-mirror",
    sources=["sglang 0.5.23 sglang/srt/mem_cache/kv_cache_configurator.py:883", "sglang 0.5.23 sglang/srt/mem_cache/allocation_sizing.py"],
    engine="sglang", requires=("spec_decode", "hybrid_mamba"),
    versions="==0.5.23",
)
def hybrid_mamba_width_mirrors_main_width(context_len, speculative_num_draft_tokens, speculative_num_steps, speculative_eagle_topk, page_size):
    """The hybrid-Mamba paths claim to mirror the main width but drop the page/reserve term: with
    ``page_size > 1`` they are narrower (reference example: 163852 vs 164927 at context 163840,
    page 64, 3 steps, topk 4, 8 draft tokens)."""
    return equal(
        W_hybrid_mamba=hybrid_mamba_req_to_token_width(context_len, speculative_num_draft_tokens),
        W_req_to_token=req_to_token_width(context_len, speculative_num_draft_tokens, speculative_num_steps, speculative_eagle_topk, page_size),
    )


@obligation(
    domain={**_SPEC, "kv_committed_len": Range(0, 2**21), "kv_allocated_len": Range(0, 2**21)},
    assumptions={**_EAGLE, **_LAST_STEP},
    expect="counterexample",
    case="sglang-req-to-token-hybrid-mamba-mirror",
    sources=["sglang 0.5.23 sglang/srt/mem_cache/kv_cache_configurator.py:883", "sglang 0.5.23 sglang/srt/mem_cache/allocation_sizing.py::page_aligned_decode_alloc_lens"],
    engine="sglang", requires=("spec_decode", "hybrid_mamba"),
    versions="==0.5.23",
)
def decode_alloc_fits_hybrid_mamba_row(context_len, speculative_num_draft_tokens, speculative_num_steps, speculative_eagle_topk, page_size, kv_committed_len, kv_allocated_len):
    """The decode over-allocation ``nxt`` against the hybrid-Mamba row width (reference example:
    committed 163839 -> nxt 164864 > 163852). A finding under the stated last-step assumption."""
    return at_most(
        nxt=decode_alloc_end(kv_committed_len, kv_allocated_len, speculative_num_draft_tokens, speculative_num_steps, speculative_eagle_topk, page_size),
        W_hybrid_mamba=hybrid_mamba_req_to_token_width(context_len, speculative_num_draft_tokens),
    )


@obligation(
    domain={**_SPEC, "kv_committed_len": Range(0, 2**21), "kv_allocated_len": Range(0, 2**21)},
    assumptions={**_EAGLE, **_LAST_STEP},
    expect="counterexample",
    case="sglang-req-to-token-hybrid-mamba-mirror",
    sources=["sglang 0.5.23 sglang/srt/mem_cache/allocation_sizing.py::get_req_to_token_extra_context_len"],
    engine="sglang", requires=("spec_decode",),
    versions="==0.5.23",
)
def decode_alloc_fits_req_to_token_row(context_len, speculative_num_draft_tokens, speculative_num_steps, speculative_eagle_topk, page_size, kv_committed_len, kv_allocated_len):
    """The same demand against the main width. Its page/reserve term is applied only when
    ``page_size > 1``: at page 1 the ``4 + draft`` headroom must cover the double reserve."""
    return at_most(
        nxt=decode_alloc_end(kv_committed_len, kv_allocated_len, speculative_num_draft_tokens, speculative_num_steps, speculative_eagle_topk, page_size),
        W_req_to_token=req_to_token_width(context_len, speculative_num_draft_tokens, speculative_num_steps, speculative_eagle_topk, page_size),
    )
