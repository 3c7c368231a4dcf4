"""vLLM DSA indexer prefill: the workspace budget and the greedy chunk splitter.

Units: ``max_model_len``, ``workspace_size``, sequence and query lengths in **tokens** (rows of the
indexer's K gather workspace); ``max_logits_bytes`` in **bytes** (fp32 logits, 4 bytes each).

Sources: vLLM 0.33.0 ``vllm/v1/attention/backends/mla/indexer.py::get_max_prefill_buffer_size`` and
``DeepseekV32IndexerMetadataBuilder._split_indexer_prefill_chunks``; the workspace factor's
default from ``vllm/config/vllm.py`` (5 up to 256K context, else 2).
"""

from __future__ import annotations

from capproof import maximum, minimum, select

__all__ = [
    "ROWS_PER_TOKEN_PER_FACTOR",
    "default_prefill_workspace_factor",
    "get_max_prefill_buffer_size",
    "group_prefill_requests",
    "cut_query_rows",
    "split_indexer_prefill_chunks",
    "split_prefill_chunks_first_revision",
    "first_revision_chunks_fit",
    "chunks_fit_workspace",
    "chunks_fit_workspace_any_request",
    "query_pieces_fit_logits",
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


def group_prefill_requests(seq_lens, query_lens, workspace_size, max_logits_bytes):
    """Request slices ``[(req_start, req_stop, chunk_m, chunk_n), ...]`` of this step's prefill
    requests: the greedy walk of ``_split_indexer_prefill_chunks`` (vLLM 0.33.0 indexer.py:1381-1403).

    Request ``i`` joins the slice while the slice's summed sequence length ``chunk_n`` stays ``<=
    workspace_size`` and (summed queries ``chunk_m``) × ``chunk_n`` ``<= max_logits_bytes // 4``.
    A request that fits in no slice alone becomes its own slice (the workspace bound is then not
    enforced). Lengths in tokens; ``req_stop`` exclusive. Concrete lists only (Python loops).
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
        out.append((start, i, m, s))
    return out


def cut_query_rows(chunk_m, chunk_n, max_logits_bytes):
    """Query pieces ``[(q_start, q_stop), ...]`` of one request slice of ``chunk_m`` query rows and
    ``chunk_n`` sequence tokens: pieces of ``max(1, (max_logits_bytes // 4) // chunk_n)`` rows
    (``max(1, chunk_m)`` when ``chunk_n == 0``), the last one shorter (vLLM 0.33.0
    indexer.py:1406-1411). Rows, ``q_stop`` exclusive.
    """
    budget = max_logits_bytes // 4
    piece = maximum(1, budget // chunk_n) if chunk_n > 0 else maximum(1, chunk_m)
    out = []
    q0 = 0
    while q0 < chunk_m:  # range(0, m, piece) without range(): CrossHair's symbolic range needs ints
        out.append((q0, q0 + minimum(piece, chunk_m - q0)))
        q0 += piece
    return out


def split_indexer_prefill_chunks(seq_lens, query_lens, workspace_size, max_logits_bytes, request_offset=0):
    """Chunks ``[((req_start, req_stop), (q_start, q_stop)), ...]`` of this step's prefill requests
    (vLLM 0.33.0 ``_split_indexer_prefill_chunks``, indexer.py:1359-1415): each request slice of
    :func:`group_prefill_requests`, shifted by ``request_offset``, once per query piece of
    :func:`cut_query_rows`. Concrete lists only (Python loops).
    """
    return [
        ((start + request_offset, stop + request_offset), piece)
        for start, stop, chunk_m, chunk_n in group_prefill_requests(
            seq_lens, query_lens, workspace_size, max_logits_bytes
        )
        for piece in cut_query_rows(chunk_m, chunk_n, max_logits_bytes)
    ]


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
    """The largest summed sequence length (tokens) of a request slice of the splitter. Its query
    pieces all gather their slice's rows, so the slices alone decide it (the pieces have their own
    contract, :func:`query_pieces_fit_logits`)."""
    most = 0
    for r0, r1, _, _ in group_prefill_requests(seq_lens, query_lens, workspace_size, max_logits_bytes):
        most = max(most, sum(seq_lens[r0:r1]))
    return most


def chunks_fit_workspace(
    s0: int, s1: int, s2: int, q0: int, q1: int, q2: int, workspace_size: int, max_logits_bytes: int
) -> int:
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


def query_pieces_fit_logits(chunk_m: int, chunk_n: int, max_logits_bytes: int) -> bool:
    """Contract of vLLM 0.33.0's query cut (:func:`cut_query_rows`) on one request slice of
    ``chunk_m`` query rows and ``chunk_n`` sequence tokens, over the slices of
    :func:`chunks_fit_workspace`'s batches (up to 3 requests of up to 2 query rows and 16 tokens):
    the pieces tile ``[0, chunk_m)`` in order, each non-empty; each piece's logits ``rows *
    chunk_n`` fit ``max_logits_bytes // 4`` unless it is one row; and every piece but the last
    would break that budget with one more row. Checked by CrossHair.

    pre: 1 <= chunk_m <= 6
    pre: 0 <= chunk_n <= 48
    pre: 4 <= max_logits_bytes <= 256
    post: __return__
    """
    budget = max_logits_bytes // 4
    pieces = cut_query_rows(chunk_m, chunk_n, max_logits_bytes)
    before = 0
    for k, (q0, q1) in enumerate(pieces):
        rows = q1 - q0
        if q0 != before or rows < 1 or (rows > 1 and rows * chunk_n > budget):
            return False
        if k < len(pieces) - 1 and (rows + 1) * chunk_n <= budget:
            return False
        before = q1
    return before == chunk_m


def chunks_fit_workspace_any_request(
    s0: int, s1: int, s2: int, q0: int, q1: int, q2: int, workspace_size: int, max_logits_bytes: int
) -> int:
    """The same contract without the per-request precondition: a single request longer than the
    workspace is admitted whole (reference §5: ``seq = [5000]``, workspace 3500). CrossHair finds it.

    pre: 1 <= workspace_size <= 64
    pre: 4 <= max_logits_bytes <= 4096
    pre: 0 <= s0 and 0 <= s1 and 0 <= s2
    pre: 1 <= q0 <= 8 and 1 <= q1 <= 8 and 1 <= q2 <= 8
    post: __return__ <= workspace_size
    """
    return _max_chunk_seq([s0, s1, s2], [q0, q1, q2], workspace_size, max_logits_bytes)
