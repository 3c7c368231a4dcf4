"""vLLM speculative-decoding proposer buffers: the shared ``arange`` and the MTP top-k row layout.

Checked by Z3 (spec/specdec_graphs.py, spec/per_batch_buffers.py, spec/vllm_0_33_today.py).

Units: ``max_num_seqs`` (= the proposer's ``max_batch_size``) and ``num_reqs`` in **requests**;
``max_num_batched_tokens`` (= ``max_num_tokens``), query lengths and row indices in **tokens /
rows** (one row of ``topk_indices_buffer`` per token); ``num_speculative_tokens`` ``K`` a count.
"""

from __future__ import annotations

from capproof import fold, maximum, select, total

__all__ = [
    "uniform_decode_query_len",
    "proposer_arange_len_0_33",
    "proposer_arange_len_16316",
    "query_start_loc_entries",
    "pick",
    "query_start",
    "last_token_row",
    "mtp_reader_source_row_before_47238",
    "mtp_reader_source_row_47238",
]


def uniform_decode_query_len(num_speculative_tokens):
    """Tokens per request in a uniform spec-decode step: ``1 + num_speculative_tokens``.

    vLLM 0.33.0 ``vllm/config/vllm.py`` (``uniform_decode_query_len``) and the DSA indexer's
    ``next_n = K + 1`` (``vllm/v1/attention/backends/mla/indexer.py``); the CUDA-graph sizes are
    rounded to it (``adjust_cudagraph_sizes_for_spec_decode``).
    """
    return 1 + num_speculative_tokens


def proposer_arange_len_0_33(max_num_seqs, max_num_batched_tokens):
    """Entries of the proposer's ``arange``: ``max(max_batch_size + 1, max_num_tokens)``.

    vLLM 0.33.0 ``vllm/v1/spec_decode/llm_base_proposer.py`` (``max_num_slots_for_arange``), with
    ``max_batch_size = max_num_seqs`` and ``max_num_tokens = max_num_batched_tokens``; the
    expression vllm-project/vllm#56375 (closed) and vllm-project/vllm-ascend#16316 replace.
    """
    return maximum(max_num_seqs + 1, max_num_batched_tokens)


def proposer_arange_len_16316(max_num_seqs, max_num_batched_tokens):
    """The fix: ``max(max_batch_size, max_num_tokens) + 1`` (vllm-project/vllm-ascend#16316,
    as proposed in vllm-project/vllm#56375)."""
    return maximum(max_num_seqs, max_num_batched_tokens) + 1


def query_start_loc_entries(num_items):
    """``query_start_loc`` over ``num_items`` items is ``arange[: num_items + 1]``: ``num_items + 1``
    entries (``llm_base_proposer.py``: ``self.arange[: batch_size + 1]``)."""
    return num_items + 1


def pick(values, index):
    """``values[index]`` for a symbolic ``index`` (0 when out of range): one walk over ``values``
    (:func:`capproof.arith.fold`) adding the entry at ``index``."""
    return fold(lambda picked, i, v: picked + select(index == i, v, 0), 0, values)


def query_start(query_lens, j):
    """``query_start_loc[j]`` for a symbolic ``j``: the sum of the query lengths before request
    ``j``, one walk over the batch (a running offset). Its invariant (entries >= 0, ``j`` a
    request of the batch): the offset is at most the tokens seen."""
    return fold(
        lambda offset, i, q: offset + select(i < j, q, 0),
        0,
        query_lens,
        invariant=lambda offset, i, seen: offset <= total(seen),
    )


def last_token_row(query_lens, j):
    """Writer row of request ``j``'s last token when step 0 writes rows grouped per request
    (``a0 … aK, b0 …``): request ``j`` owns rows ``[query_start_loc[j], query_start_loc[j] +
    query_lens[j])``, so its last row is ``query_start_loc[j] + query_lens[j] - 1``."""
    return query_start(query_lens, j) + pick(query_lens, j) - 1


def mtp_reader_source_row_before_47238(query_lens, j):
    """Before vllm-project/vllm#47238: draft steps 1 … K−1 read row ``j`` of the shared
    ``topk_indices_buffer`` as written by step 0, i.e. writer row ``j``."""
    del query_lens
    return j


def mtp_reader_source_row_47238(query_lens, j):
    """vllm-project/vllm#47238 (vLLM 0.33.0): after step 0 the proposer calls
    ``compact_topk_indices(token_indices_to_sample)``, ``buf[:n] = buf[slot_ids]`` with
    ``token_indices_to_sample = query_start_loc[1:] - 1``
    (``vllm/v1/spec_decode/llm_base_proposer.py``, ``vllm/model_executor/models/deepseek_mtp.py``),
    so reader row ``j`` holds writer row ``query_start_loc[j + 1] - 1``."""
    return query_start(query_lens, j + 1) - 1
