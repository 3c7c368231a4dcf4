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
    "split_prefill_chunks_first_revision",
    "first_revision_chunks_fit",
    "chunks_fit_workspace",
    "chunks_fit_workspace_any_request",
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
        q0 = 0
        while q0 < m:  # range(0, m, piece) without range(): CrossHair's symbolic range needs ints
            out.append(((start + request_offset, i + request_offset), (q0, q0 + minimum(piece, m - q0))))
            q0 += piece
    return out


def split_prefill_chunks_first_revision(seq_lens, max_prefill_buffer_size):
    """Chunk boundaries ``[(start, stop), ...]`` from the first revision of vllm-project/vllm#25999
    (as shown in review; corpus case N1), with the tail emitted after the loop (unconfirmed)::

        for i in range(reqs_start, len(seq_lens_cpu)):
            total_seq_lens += seq_lens_cpu[i]
            if total_seq_lens > max_prefill_buffer_size:
                chunk_seq_ids.append((reqs_start, i))
                reqs_start = i
                total_seq_lens = 0

    Lengths in tokens. Concrete lists only (a data-dependent loop): checked by CrossHair.
    """
    chunks = []
    reqs_start, total_seq_lens = 0, 0
    for i in range(len(seq_lens)):
        total_seq_lens += seq_lens[i]
        if total_seq_lens > max_prefill_buffer_size:
            chunks.append((reqs_start, i))
            reqs_start = i
            total_seq_lens = 0
    if reqs_start < len(seq_lens):
        chunks.append((reqs_start, len(seq_lens)))
    return chunks


def first_revision_chunks_fit(s0: int, s1: int, s2: int, max_prefill_buffer_size: int) -> bool:
    """Contract of the first revision on a batch of three prefill requests (lengths ``s0..s2``,
    tokens): every emitted chunk sums to at most the budget, given that every single request fits
    it. Checked by CrossHair (spec/vllm_indexer_prefill.py); it fails: the sum restarts at 0 after
    a split although the new chunk already holds request ``i`` (corpus example: budget 10,
    ``[6, 6, 9]`` -> a chunk of 15).

    pre: 1 <= max_prefill_buffer_size <= 64
    pre: 0 <= s0 <= max_prefill_buffer_size
    pre: 0 <= s1 <= max_prefill_buffer_size
    pre: 0 <= s2 <= max_prefill_buffer_size
    post: __return__
    """
    seq_lens = [s0, s1, s2]
    chunks = split_prefill_chunks_first_revision(seq_lens, max_prefill_buffer_size)
    return all(sum(seq_lens[a:b]) <= max_prefill_buffer_size for a, b in chunks)


def _max_chunk_seq(seq_lens, query_lens, workspace_size, max_logits_bytes):
    most = 0
    for (r0, r1), _ in split_indexer_prefill_chunks(seq_lens, query_lens, workspace_size, max_logits_bytes):
        most = max(most, sum(seq_lens[r0:r1]))
    return most


def chunks_fit_workspace(s0: int, s1: int, s2: int, q0: int, q1: int, q2: int, workspace_size: int, max_logits_bytes: int) -> int:
    """Contract of vLLM 0.33.0's splitter on a batch of three prefill requests (sequence lengths
    ``s0..s2`` and query lengths ``q0..q2``, tokens): the largest chunk's summed sequence length
    (the K-gather rows it needs) is at most ``workspace_size`` **provided every single request's
    compressed length is** (the corpus N1 precondition; in vLLM it rests on ``seq <=
    max_model_len`` and the default budget, proved by Z3 in spec/vllm_indexer_prefill.py).
    Checked by CrossHair.

    pre: 1 <= workspace_size <= 16
    pre: 4 <= max_logits_bytes <= 256
    pre: 0 <= s0 <= workspace_size and 0 <= s1 <= workspace_size and 0 <= s2 <= workspace_size
    pre: 1 <= q0 <= 2 and 1 <= q1 <= 2 and 1 <= q2 <= 2
    post: __return__ <= workspace_size
    """
    return _max_chunk_seq([s0, s1, s2], [q0, q1, q2], workspace_size, max_logits_bytes)


def chunks_fit_workspace_any_request(s0: int, s1: int, s2: int, q0: int, q1: int, q2: int, workspace_size: int, max_logits_bytes: int) -> int:
    """The same contract without the per-request precondition: a single request longer than the
    workspace is admitted whole (reference §5: ``seq = [5000]``, workspace 3500). CrossHair finds it.

    pre: 1 <= workspace_size <= 64
    pre: 4 <= max_logits_bytes <= 4096
    pre: 0 <= s0 and 0 <= s1 and 0 <= s2
    pre: 1 <= q0 <= 8 and 1 <= q1 <= 8 and 1 <= q2 <= 8
    post: __return__ <= workspace_size
    """
    return _max_chunk_seq([s0, s1, s2], [q0, q1, q2], workspace_size, max_logits_bytes)
