"""vLLM 0.33.0 DSA indexer per-batch buffers sized from ``max_num_batched_tokens`` (``mnbt``) rows,
and the decode demand placed on them.

Checked by Z3 (spec/vllm_0_33_today.py, spec/per_batch_buffers.py).

Sources (vLLM 0.33.0): ``vllm/v1/attention/backends/mla/indexer.py``
(``DeepseekV32IndexerMetadataBuilder.__init__``, ``build``, ``_prepare_decode_tensors``),
``vllm/v1/attention/backends/utils.py::split_decodes_and_prefills``,
``vllm/model_executor/layers/sparse_attn_indexer.py`` (decode top-k), and the shared
``topk_indices_buffer = empty(mnbt, index_topk)`` (``vllm/models/deepseek_v32/nvidia/model.py``).

Units: ``max_num_seqs``, ``num_reqs``, ``num_decodes`` in **requests**; query / decode lengths,
``max_num_batched_tokens`` and buffer capacities in **rows = tokens** (one int32 entry or one
top-k row per token); ``num_speculative_tokens`` (``K``) a count, ``next_n = 1 + K``.
"""

from __future__ import annotations

from capproof import all_of, any_of, fold, implies, maximum, select, total
from models.vllm.spec_decode import uniform_decode_query_len

__all__ = [
    "arange_buffer_len",
    "decode_rows_capacity",
    "native_decode_view_rows",
    "padded_decode_rows",
    "split_decodes_require_uniform",
    "uniform_decode_split",
    "has_padding_request",
]


def arange_buffer_len(max_num_seqs, num_speculative_tokens, max_num_batched_tokens):
    """``arange_buffer = arange(max(max_num_seqs * next_n, max_num_batched_tokens))`` (vLLM 0.33.0
    ``indexer.py``; corpus E6). The variable decode path slices it ``[:actual_expanded]``."""
    return maximum(max_num_seqs * uniform_decode_query_len(num_speculative_tokens), max_num_batched_tokens)


def decode_rows_capacity(max_num_batched_tokens):
    """Rows of ``decode_seq_lens_buffer``, ``decode_lens_buffer``, … ``(mnbt,)`` and of the shared
    ``topk_indices_buffer`` ``(mnbt, index_topk)``: ``max_num_batched_tokens``."""
    return max_num_batched_tokens


def native_decode_view_rows(num_decodes, max_decode_len):
    """Rows the native ``next_n > 1`` path needs: ``decode_seq_lens_buffer[: num_decodes *
    max_decode_len].view(num_decodes, max_decode_len)`` (a short slice makes ``.view`` raise), and
    on the padded top-k path ``topk_indices_buffer[:num_padded_tokens]`` with ``num_padded_tokens =
    batch_size * next_n_eff = num_decodes * max_decode_len`` (the packed Q shape)."""
    return num_decodes * max_decode_len


def padded_decode_rows(num_decodes, max_decode_len, size):
    """:func:`native_decode_view_rows` as a sum over the padded view's request rows:
    ``sum(max_decode_len for each of the num_decodes requests)`` over a batch vector of ``size``
    entries. Equal to ``num_decodes * max_decode_len`` for ``0 <= num_decodes <= size``; written
    as a sum so that Z3 stays in linear arithmetic (the product of two symbolic counts is not)."""
    return total(select(i < num_decodes, max_decode_len, 0) for i in range(size))


def has_padding_request(query_lens, num_reqs):
    """Whether some request among the first ``num_reqs`` has query length 0 (a CUDA-graph padding
    request of a uniform-decode batch, vLLM 0.33.0 ``vllm/v1/cudagraph_dispatcher.py``): a walk
    over the batch (:func:`capproof.arith.fold`), bool."""
    return fold(lambda padded, i, ql: any_of(padded, all_of(i < num_reqs, ql == 0)), False, query_lens)


def uniform_decode_split(query_lens, num_reqs, num_speculative_tokens):
    """``(num_decodes, max_decode_len)`` of ``split_decodes_and_prefills(decode_threshold=next_n,
    require_uniform=True, treat_short_extends_as_decodes=True)`` (vLLM 0.33.0
    ``vllm/v1/attention/backends/utils.py``), the call the DSA indexer makes when neither
    flattening nor varlen is in use (the native path), for ``next_n > 1``; both in requests /
    tokens, ``max_decode_len = int(decode_lens_cpu.max())`` over the decodes (0 with none).

    The fast path needs ``decode_threshold <= 1`` under ``require_uniform``, so it is not taken.
    If ``query_lens[0] > next_n``: 0 decodes. Otherwise the decodes are the leading requests whose
    query length equals ``query_lens[0]`` or is 0 (CUDA-graph padding requests); the first other
    request is the first prefill (``is_prefill = (ql != ql[0]) & (ql != 0)``; ``argmax``).

    One walk over the batch (state: still leading, decodes so far, their longest length). Its
    invariant (capproof.induction proves claims on it for every batch size; checked on ints by
    tests/test_induction.py): the walk is still leading exactly when every entry seen was a
    decode; the longest decode is ``query_lens[0]`` once there is one; and the padded rows
    ``decodes * longest`` are the tokens seen, unless a padding request was seen.
    """
    threshold = uniform_decode_query_len(num_speculative_tokens)
    first = query_lens[0]

    def step(state, i, ql):
        leading, decodes, longest = state
        leading = all_of(leading, i < num_reqs, any_of(ql == first, ql == 0))
        return leading, decodes + select(leading, 1, 0), select(leading, maximum(longest, ql), longest)

    def invariant(state, i, seen):
        leading, decodes, longest = state
        return all_of(
            leading == (decodes == i),
            0 <= decodes,
            decodes <= i,
            decodes <= num_reqs,
            0 <= longest,
            longest <= maximum(first, 0),
            implies(decodes >= 1, longest == first),
            any_of(decodes * longest <= total(seen), has_padding_request(seen, num_reqs)),
        )

    _, decodes, longest = fold(step, (True, 0, 0), query_lens, invariant=invariant)
    return select(first > threshold, 0, decodes), select(first > threshold, 0, longest)


def split_decodes_require_uniform(query_lens, num_reqs, num_speculative_tokens):
    """``num_decodes`` of :func:`uniform_decode_split` (requests)."""
    return uniform_decode_split(query_lens, num_reqs, num_speculative_tokens)[0]
