"""SGLang NSA/DSA backend: CUDA-graph ``page_table`` width vs the ``req_to_token`` row width.

Corpus case C1 ``sglang-nsa-dsa-page-table-specdec``. Checked by Z3 (spec/specdec_graphs.py).

Units: every width and length here is in **tokens** (``page_size == 1`` page-table columns are
token slots; a ``req_to_token`` row holds one KV slot per token position). ``page_size`` is in
tokens per page; ``speculative_*`` are counts.

- ``req_to_token`` row width (the copy's *source*): ``context_len +
  get_req_to_token_extra_context_len()`` (SGLang 0.5.23
  ``sglang/srt/mem_cache/allocation_sizing.py``).
- ``page_table`` width (the copy's *destination*), allocated in
  ``dsa_backend.py::init_cuda_graph_state``:
  round 0 ``context_len``; round 1 (sgl-project/sglang#19016 / #19641) ``context_len +
  speculative_num_draft_tokens``; round 2 (sgl-project/sglang#29379, SGLang 0.5.23)
  ``req_to_token.shape[1]``.
- Demand on target-verify replay: ``max_seqlen_k = max(seq_lens) + speculative_num_draft_tokens``
  and ``page_table[:, :max_seqlen_k].copy_(req_to_token[:, :max_seqlen_k])``: each slice clamps to
  its own tensor's width, so the copy raises unless both clamped widths are equal.
"""

from __future__ import annotations

from capproof import max_of, maximum, minimum

__all__ = [
    "get_alloc_len_per_decode",
    "get_alloc_reserve_per_decode",
    "get_req_to_token_extra_context_len",
    "req_to_token_width",
    "page_table_width_round0",
    "page_table_width_round1",
    "page_table_width_round2",
    "target_verify_max_seqlen_k",
    "clamped_copy_widths",
    "hybrid_mamba_req_to_token_width",
    "decode_alloc_end",
]


def get_alloc_len_per_decode(speculative_num_draft_tokens, speculative_num_steps, speculative_eagle_topk, page_size):
    """KV length one request may allocate in one decode step (EAGLE, draft KV cache present).

    SGLang 0.5.23 ``allocation_sizing.py::get_alloc_len_per_decode`` for a non-UNO speculative
    algorithm with a draft KV cache: ``max(steps * topk, draft)`` when ``page_size == 1`` or
    ``topk == 1``, else ``max(((page-1) + steps + page-1) // page * page * topk, draft)``.
    ``page_size`` is ``get_alloc_page_size()`` (``schedule.page_size * attn_dcp_size``) and must be
    concrete here (it is branched on), ``topk`` too.
    """
    if page_size == 1 or speculative_eagle_topk == 1:
        return maximum(speculative_num_steps * speculative_eagle_topk, speculative_num_draft_tokens)
    num_new_pages_per_topk = ((page_size - 1) + speculative_num_steps + page_size - 1) // page_size
    return maximum(num_new_pages_per_topk * page_size * speculative_eagle_topk, speculative_num_draft_tokens)


def get_alloc_reserve_per_decode(
    speculative_num_draft_tokens, speculative_num_steps, speculative_eagle_topk, page_size
):
    """``2 * get_alloc_len_per_decode()`` (SGLang 0.5.23; the overlap-mode double buffer)."""
    return 2 * get_alloc_len_per_decode(
        speculative_num_draft_tokens, speculative_num_steps, speculative_eagle_topk, page_size
    )


def get_req_to_token_extra_context_len(
    speculative_num_draft_tokens, speculative_num_steps, speculative_eagle_topk, page_size
):
    """Row headroom beyond ``context_len`` with EAGLE on (not UNO), in tokens.

    SGLang 0.5.23 ``allocation_sizing.py::get_req_to_token_extra_context_len``, verbatim for a set
    speculative algorithm: ``extra = 4 + draft``; if ``page_size > 1``, ``extra = max(extra,
    get_alloc_reserve_per_decode() + page_size - 1)``.
    """
    extra = 4 + speculative_num_draft_tokens
    if page_size > 1:
        extra = maximum(
            extra,
            get_alloc_reserve_per_decode(
                speculative_num_draft_tokens, speculative_num_steps, speculative_eagle_topk, page_size
            )
            + page_size
            - 1,
        )
    return extra


def req_to_token_width(
    context_len, speculative_num_draft_tokens, speculative_num_steps=1, speculative_eagle_topk=1, page_size=1
):
    """``req_to_token.shape[1] = context_len + get_req_to_token_extra_context_len()`` (tokens)."""
    return context_len + get_req_to_token_extra_context_len(
        speculative_num_draft_tokens, speculative_num_steps, speculative_eagle_topk, page_size
    )


def page_table_width_round0(context_len, speculative_num_draft_tokens):
    """Before sgl-project/sglang#19016: ``max_context_len = model_config.context_len``."""
    del speculative_num_draft_tokens
    return context_len


def page_table_width_round1(context_len, speculative_num_draft_tokens):
    """sgl-project/sglang#19016 (#19641 variant): ``context_len + speculative_num_draft_tokens``."""
    return context_len + speculative_num_draft_tokens


def page_table_width_round2(req_to_token_cols):
    """sgl-project/sglang#29379, SGLang 0.5.23: ``max_ctx_len = req_to_token.shape[1]``."""
    return req_to_token_cols


def target_verify_max_seqlen_k(seq_lens, speculative_num_draft_tokens):
    """``forward_batch.seq_lens.max() + draft_token_num`` on target-verify replay (tokens).

    SGLang 0.5.23 ``dsa_backend.py`` (``max_seqlen_k = int(seq_lens.max().item()) +
    draft_token_num``). ``seq_lens`` is the batch (padding entries 0 never raise the max).
    """
    return max_of(seq_lens) + speculative_num_draft_tokens


def clamped_copy_widths(max_seqlen_k, dst_width, src_width):
    """(destination columns, source columns) of ``dst[:, :k].copy_(src[:, :k])``: each slice
    clamps ``k`` to its own tensor's width (torch slicing); the copy needs them equal."""
    return minimum(max_seqlen_k, dst_width), minimum(max_seqlen_k, src_width)


def hybrid_mamba_req_to_token_width(context_len, speculative_num_draft_tokens):
    """``req_to_token`` row width of SGLang 0.5.23's hybrid-Mamba shared-pool paths (tokens):
    ``context_len + 4 + speculative_num_draft_tokens``. The code says it mirrors
    :func:`get_req_to_token_extra_context_len` but leaves out its page/reserve term.

    Source: SGLang 0.5.23 ``sglang/srt/mem_cache/kv_cache_configurator.py`` lines 883-886 and
    972-975 (``_init_unified_mamba_pools`` and its sibling).
    """
    return context_len + 4 + speculative_num_draft_tokens


def decode_alloc_end(
    kv_committed_len,
    kv_allocated_len,
    speculative_num_draft_tokens,
    speculative_num_steps,
    speculative_eagle_topk,
    page_size,
):
    """``nxt``, the end of a request's ``req_to_token`` row written by one speculative decode step
    (tokens): ``max(kv_allocated_len, ceil_to_page(kv_committed_len + reserve))``.

    Source: SGLang 0.5.23 ``sglang/srt/mem_cache/allocation_sizing.py::page_aligned_decode_alloc_lens``
    with ``reserve = get_alloc_reserve_per_decode()``.
    """
    reserve = get_alloc_reserve_per_decode(
        speculative_num_draft_tokens, speculative_num_steps, speculative_eagle_topk, page_size
    )
    return maximum(kv_allocated_len, (kv_committed_len + reserve + page_size - 1) // page_size * page_size)
