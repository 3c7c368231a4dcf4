"""vLLM DSA indexer prefill: the workspace budget and the greedy chunk splitter.

Units: ``max_model_len``, ``workspace_size``, sequence and query lengths in **tokens** (rows of the
indexer's K gather workspace); ``max_logits_bytes`` in **bytes** (fp32 logits, 4 bytes each).

Sources: vLLM 0.33.0 ``vllm/v1/attention/backends/mla/indexer.py::get_max_prefill_buffer_size`` and
``DeepseekV32IndexerMetadataBuilder._split_indexer_prefill_chunks``; the workspace factor's
default from ``vllm/config/vllm.py`` (5 up to 256K context, else 2).
"""

from __future__ import annotations

from capproof.arith import maximum, minimum, select

__all__ = [
    "ROWS_PER_TOKEN_PER_FACTOR",
    "default_prefill_workspace_factor",
    "get_max_prefill_buffer_size",
    "split_indexer_prefill_chunks",
]

#: ``576 * 2 // 132``: FlashMLA-sparse workspace bytes per token (576 bf16) over the indexer's
#: 132-byte K entry (128 fp8 + 4 scale) -> 8 indexer rows per token and unit of factor.
ROWS_PER_TOKEN_PER_FACTOR = 576 * 2 // 132


def default_prefill_workspace_factor(max_model_len):
    """``sparse_mla_prefill_workspace_factor`` when unset: 5 for ``L <= 256 * 1024``, else 2."""
    return select(max_model_len <= 256 * 1024, 5, 2)


def get_max_prefill_buffer_size(max_model_len, factor):
    """Indexer prefill K-workspace rows: ``max_model_len * 8 * factor`` (``factor >= 2``)."""
    return max_model_len * ROWS_PER_TOKEN_PER_FACTOR * factor


def split_indexer_prefill_chunks(seq_lens, query_lens, workspace_size, max_logits_bytes, request_offset=0):
    """Chunks ``[((req_start, req_stop), (q_start, q_stop)), ...]`` of this step's prefill requests.

    Greedy over requests: request ``i`` joins the chunk while the chunk's summed sequence length
    stays ``<= workspace_size`` and (summed queries) × (summed sequence) ``<= max_logits_bytes // 4``.
    A request that fits in no chunk alone becomes its own chunk (the workspace bound is then not
    enforced). Each chunk is cut along queries into pieces of ``max(1, (max_logits_bytes // 4) //
    chunk_seq)`` rows. Concrete lists only (Python loops).
    """
    budget = max_logits_bytes // 4
    out = []
    i, n = 0, len(seq_lens)
    while i < n:
        start, m, s = i, 0, 0
        while i < n and s + seq_lens[i] <= workspace_size and (m + query_lens[i]) * (s + seq_lens[i]) <= budget:
            m, s = m + query_lens[i], s + seq_lens[i]
            i += 1
        if i == start:  # oversized single request: a chunk of its own
            m, s = query_lens[i], seq_lens[i]
            i += 1
        piece = maximum(1, budget // s) if s > 0 else maximum(1, m)
        for q0 in range(0, m, piece):
            out.append(((start + request_offset, i + request_offset), (q0, q0 + minimum(piece, m - q0))))
    return out
