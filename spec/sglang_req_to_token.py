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
    "page_size": Choice(1, 16, 32, 64, 128),
}
_EAGLE = {
    "draft tokens - 1 <= topk + (steps - 1) * topk^2 (EAGLE candidates)": lambda speculative_num_draft_tokens, speculative_num_steps, speculative_eagle_topk: (
        speculative_num_draft_tokens - 1 <= _eagle_candidates(speculative_num_steps, speculative_eagle_topk)
    ),
}
_LAST_STEP = {
    "kv_committed_len <= context_len - 1": lambda kv_committed_len, context_len: kv_committed_len <= context_len - 1,
    "kv_allocated_len <= kv_committed_len": lambda kv_allocated_len, kv_committed_len: (
        kv_allocated_len <= kv_committed_len
    ),
}


@obligation(
    domain=_SPEC,
    assumptions=_EAGLE,
    expect="counterexample",
    case="sglang-req-to-token-hybrid-mamba-mirror",
    sources=[
        "sglang 0.5.23 sglang/srt/mem_cache/kv_cache_configurator.py:883",
        "sglang 0.5.23 sglang/srt/mem_cache/allocation_sizing.py",
    ],
    engine="sglang",
    requires=("spec_decode", "hybrid_mamba"),
    versions="==0.5.23",
)
def hybrid_mamba_width_mirrors_main_width(
    context_len, speculative_num_draft_tokens, speculative_num_steps, speculative_eagle_topk, page_size
):
    """The hybrid-Mamba paths claim to mirror the main width but drop the page/reserve term: with
    ``page_size > 1`` they are narrower (reference example: 163852 vs 164927 at context 163840,
    page 64, 3 steps, topk 4, 8 draft tokens)."""
    return equal(
        W_hybrid_mamba=hybrid_mamba_req_to_token_width(context_len, speculative_num_draft_tokens),
        W_req_to_token=req_to_token_width(
            context_len, speculative_num_draft_tokens, speculative_num_steps, speculative_eagle_topk, page_size
        ),
    )


@obligation(
    domain={**_SPEC, "kv_committed_len": Range(0, 2**21), "kv_allocated_len": Range(0, 2**21)},
    assumptions={**_EAGLE, **_LAST_STEP},
    expect="counterexample",
    case="sglang-req-to-token-hybrid-mamba-mirror",
    sources=[
        "sglang 0.5.23 sglang/srt/mem_cache/kv_cache_configurator.py:883",
        "sglang 0.5.23 sglang/srt/mem_cache/allocation_sizing.py::page_aligned_decode_alloc_lens",
    ],
    engine="sglang",
    requires=("spec_decode", "hybrid_mamba"),
    versions="==0.5.23",
)
def decode_alloc_fits_hybrid_mamba_row(
    context_len,
    speculative_num_draft_tokens,
    speculative_num_steps,
    speculative_eagle_topk,
    page_size,
    kv_committed_len,
    kv_allocated_len,
):
    """The decode over-allocation ``nxt`` against the hybrid-Mamba row width (reference example:
    committed 163839 -> nxt 164864 > 163852). A finding under the stated last-step assumption."""
    return at_most(
        nxt=decode_alloc_end(
            kv_committed_len,
            kv_allocated_len,
            speculative_num_draft_tokens,
            speculative_num_steps,
            speculative_eagle_topk,
            page_size,
        ),
        W_hybrid_mamba=hybrid_mamba_req_to_token_width(context_len, speculative_num_draft_tokens),
    )


@obligation(
    domain={**_SPEC, "kv_committed_len": Range(0, 2**21), "kv_allocated_len": Range(0, 2**21)},
    assumptions={**_EAGLE, **_LAST_STEP},
    expect="counterexample",
    case="sglang-req-to-token-hybrid-mamba-mirror",
    sources=["sglang 0.5.23 sglang/srt/mem_cache/allocation_sizing.py::get_req_to_token_extra_context_len"],
    engine="sglang",
    requires=("spec_decode",),
    versions="==0.5.23",
)
def decode_alloc_fits_req_to_token_row(
    context_len,
    speculative_num_draft_tokens,
    speculative_num_steps,
    speculative_eagle_topk,
    page_size,
    kv_committed_len,
    kv_allocated_len,
):
    """The same demand against the main width. Its page/reserve term is applied only when
    ``page_size > 1``: at page 1 the ``4 + draft`` headroom must cover the double reserve."""
    return at_most(
        nxt=decode_alloc_end(
            kv_committed_len,
            kv_allocated_len,
            speculative_num_draft_tokens,
            speculative_num_steps,
            speculative_eagle_topk,
            page_size,
        ),
        W_req_to_token=req_to_token_width(
            context_len, speculative_num_draft_tokens, speculative_num_steps, speculative_eagle_topk, page_size
        ),
    )


# -- alloc page sizes the domains above skip (Choice(1, 64)): 2 is what a page-1 deployment
# with attention DCP 2 pages by (get_alloc_page_size = schedule.page_size * attn_dcp_size), and 3 an odd
# page; 2 speculative steps (page 2: the page count's rounding) and 13 draft tokens (more than
# steps * topk + 1: SGLang's sizing functions assume no bound on it). Values recorded from SGLang
# 0.5.23's own allocation_sizing.py (EAGLE: has_draft_kv, not UNO; kv_committed_len 5), recomputed from
# the wheel by tests/test_real_engine.py (real tier). Pinned points: a check of the model, not of a
# deployment (no engine/versions: check-config does not apply it). Imported here, not at the top, so
# that the line links above stay.

from capproof import all_of, claim  # noqa: E402
from models.sglang.dsa_page_table import get_alloc_len_per_decode  # noqa: E402

#: (alloc page size, speculative_num_steps, speculative_eagle_topk, speculative_num_draft_tokens) ->
#: (get_alloc_len_per_decode(), get_req_to_token_extra_context_len(), nxt of page_aligned_decode_alloc_lens
#: at kv_committed_len 5 with kv_allocated_len 0, and with 40), tokens, from SGLang 0.5.23
SGLANG_0_5_23_ALLOC = {
    (1, 1, 1, 2): (2, 6, 9, 40),
    (1, 1, 1, 5): (5, 9, 15, 40),
    (1, 1, 1, 13): (13, 17, 31, 40),
    (1, 1, 4, 2): (4, 6, 13, 40),
    (1, 1, 4, 5): (5, 9, 15, 40),
    (1, 1, 4, 13): (13, 17, 31, 40),
    (1, 2, 1, 2): (2, 6, 9, 40),
    (1, 2, 1, 5): (5, 9, 15, 40),
    (1, 2, 1, 13): (13, 17, 31, 40),
    (1, 2, 4, 2): (8, 6, 21, 40),
    (1, 2, 4, 5): (8, 9, 21, 40),
    (1, 2, 4, 13): (13, 17, 31, 40),
    (1, 3, 1, 2): (3, 6, 11, 40),
    (1, 3, 1, 5): (5, 9, 15, 40),
    (1, 3, 1, 13): (13, 17, 31, 40),
    (1, 3, 4, 2): (12, 6, 29, 40),
    (1, 3, 4, 5): (12, 9, 29, 40),
    (1, 3, 4, 13): (13, 17, 31, 40),
    (2, 1, 1, 2): (2, 6, 10, 40),
    (2, 1, 1, 5): (5, 11, 16, 40),
    (2, 1, 1, 13): (13, 27, 32, 40),
    (2, 1, 4, 2): (8, 17, 22, 40),
    (2, 1, 4, 5): (8, 17, 22, 40),
    (2, 1, 4, 13): (13, 27, 32, 40),
    (2, 2, 1, 2): (2, 6, 10, 40),
    (2, 2, 1, 5): (5, 11, 16, 40),
    (2, 2, 1, 13): (13, 27, 32, 40),
    (2, 2, 4, 2): (16, 33, 38, 40),
    (2, 2, 4, 5): (16, 33, 38, 40),
    (2, 2, 4, 13): (16, 33, 38, 40),
    (2, 3, 1, 2): (3, 7, 12, 40),
    (2, 3, 1, 5): (5, 11, 16, 40),
    (2, 3, 1, 13): (13, 27, 32, 40),
    (2, 3, 4, 2): (16, 33, 38, 40),
    (2, 3, 4, 5): (16, 33, 38, 40),
    (2, 3, 4, 13): (16, 33, 38, 40),
    (3, 1, 1, 2): (2, 6, 9, 40),
    (3, 1, 1, 5): (5, 12, 15, 40),
    (3, 1, 1, 13): (13, 28, 33, 40),
    (3, 1, 4, 2): (12, 26, 30, 40),
    (3, 1, 4, 5): (12, 26, 30, 40),
    (3, 1, 4, 13): (13, 28, 33, 40),
    (3, 2, 1, 2): (2, 6, 9, 40),
    (3, 2, 1, 5): (5, 12, 15, 40),
    (3, 2, 1, 13): (13, 28, 33, 40),
    (3, 2, 4, 2): (24, 50, 54, 54),
    (3, 2, 4, 5): (24, 50, 54, 54),
    (3, 2, 4, 13): (24, 50, 54, 54),
    (3, 3, 1, 2): (3, 8, 12, 40),
    (3, 3, 1, 5): (5, 12, 15, 40),
    (3, 3, 1, 13): (13, 28, 33, 40),
    (3, 3, 4, 2): (24, 50, 54, 54),
    (3, 3, 4, 5): (24, 50, 54, 54),
    (3, 3, 4, 13): (24, 50, 54, 54),
}


@obligation(
    domain={
        "page_size": Choice(1, 2, 3),
        "speculative_num_steps": Choice(1, 2, 3),
        "speculative_eagle_topk": Choice(1, 4),
        "speculative_num_draft_tokens": Choice(2, 5, 13),
    },
    expect="proved",
    case="sglang-req-to-token-hybrid-mamba-mirror",
    sources=[
        "sglang==0.5.23 sglang/srt/mem_cache/allocation_sizing.py:22-25 (get_alloc_page_size), 28-61 "
        "(get_alloc_len_per_decode), 64-70 (reserve), 73-93 (page_aligned_decode_alloc_lens), 96-116 "
        "(get_req_to_token_extra_context_len)"
    ],
)
def dsa_alloc_sizes_at_small_pages_are_sglang_0_5_23s(
    page_size, speculative_num_steps, speculative_eagle_topk, speculative_num_draft_tokens
):
    """Two-sided (an equality with the engine's values): at alloc page sizes 1, 2 and 3 the model's
    per-decode allocation, ``req_to_token`` row headroom and decode end ``nxt`` (nothing allocated
    yet, and 40 tokens allocated already) are SGLang 0.5.23's. Page 2 is where the page-1 shortcut
    (``page_size == 1``) and the ``page_size > 1`` headroom first differ from page 1; the domains
    above, ``Choice(1, 64)``, never take it."""
    args = (speculative_num_draft_tokens, speculative_num_steps, speculative_eagle_topk, page_size)
    alloc, extra = get_alloc_len_per_decode(*args), get_req_to_token_extra_context_len(*args)
    nxt, nxt_40 = decode_alloc_end(5, 0, *args), decode_alloc_end(5, 40, *args)
    sg_alloc, sg_extra, sg_nxt, sg_nxt_40 = SGLANG_0_5_23_ALLOC[
        page_size, speculative_num_steps, speculative_eagle_topk, speculative_num_draft_tokens
    ]
    return claim(
        all_of(alloc == sg_alloc, extra == sg_extra, nxt == sg_nxt, nxt_40 == sg_nxt_40),
        alloc_len_per_decode=alloc,
        sglang_alloc_len=sg_alloc,
        extra_context_len=extra,
        sglang_extra=sg_extra,
        decode_end=nxt,
        sglang_decode_end=sg_nxt,
        decode_end_allocated_40=nxt_40,
        sglang_decode_end_allocated_40=sg_nxt_40,
    )


def _eagle_candidates(steps, topk):
    """The scored candidates SGLang picks the draft tokens after the root from: ``topk + (steps - 1) *
    topk^2`` (``speculative/eagle_utils.py:106-110``, ``organize_draft_results``:
    ``torch.topk(score_list, num_draft_token - 1)``); with topk 1 SGLang sets draft = steps + 1
    (``arg_groups/speculative_hook.py:1257``). The docs' EAGLE-2 line (steps 3, topk 4, draft 16)
    is within it."""
    return topk + (steps - 1) * topk * topk
