"""N1 `vllm-indexer-prefill-chunk-split`: the DSA indexer prefill splitter vs its K workspace.

The splitter is an algorithm with data-dependent loops, so its contract is checked by CrossHair
(bounded batches of up to 4 requests); the arithmetic fact its safety rests on, that no single
request's compressed length exceeds the workspace budget, is proved by Z3 for every config.
"""

from capproof import Choice, Range, at_most, cdiv, claim, contract, obligation
from models.vllm.indexer_prefill import default_prefill_workspace_factor, get_max_prefill_buffer_size

contracts = [
    contract(
        "models/vllm/indexer_prefill.py::first_revision_chunks_fit",
        expect="counterexample",
        case="vllm-indexer-prefill-chunk-split",
        sources=["vllm-project/vllm#25999"],
    ),
    # The request slices (the greedy walk) and the query pieces of one slice have a contract each:
    # the slices alone decide the largest chunk, and one contract over both walked the product of
    # their path trees (41-61 s of CPU against 2 s for the two; docs/performance.md).
    contract(
        "models/vllm/indexer_prefill.py::chunks_fit_workspace",
        case="vllm-indexer-prefill-chunk-split",
        sources=["vllm 0.33.0 vllm/v1/attention/backends/mla/indexer.py"],
    ),
    contract(
        "models/vllm/indexer_prefill.py::query_pieces_fit_logits",
        case="vllm-indexer-prefill-chunk-split",
        sources=["vllm 0.33.0 vllm/v1/attention/backends/mla/indexer.py:1406-1411"],
    ),
    contract(
        "models/vllm/indexer_prefill.py::chunks_fit_workspace_any_request",
        expect="counterexample",
        case="vllm-indexer-prefill-chunk-split",
        sources=["vllm 0.33.0 vllm/v1/attention/backends/mla/indexer.py"],
    ),
]


@obligation(
    domain={
        "max_model_len": Range(1, 2**21),
        "compress_ratio": Choice(1, 4, 128),
        "num_speculative_tokens": Range(0, 15),
        "seq_len": Range(1, 2**21 + 15),
    },
    assumptions={
        "seq_len <= max_model_len + num_speculative_tokens (async-spec extend rows)": lambda seq_len, max_model_len, num_speculative_tokens: (
            seq_len <= max_model_len + num_speculative_tokens
        ),
        "max_model_len >= compress_ratio": lambda max_model_len, compress_ratio: max_model_len >= compress_ratio,
    },
    expect="proved",
    case="vllm-indexer-prefill-chunk-split",
    sources=[
        "vllm 0.33.0 vllm/v1/attention/backends/mla/indexer.py::get_max_prefill_buffer_size",
        "vllm 0.33.0 vllm/config/vllm.py",
    ],
    engine="vllm",
    requires=("dsa_indexer",),
    versions=">=0.27",
)
def single_request_fits_prefill_workspace(max_model_len, compress_ratio, num_speculative_tokens, seq_len):
    """vLLM 0.33.0's splitter enforces the workspace only for requests that fit it alone, so safety
    rests on this: one request's compressed length ``cdiv(seq_len, compress_ratio)`` (rounded up:
    the conservative choice) is at most ``get_max_prefill_buffer_size(cfg) // compress_ratio`` with
    the default factor (5 up to 256K context, else 2)."""
    budget = (
        get_max_prefill_buffer_size(max_model_len, default_prefill_workspace_factor(max_model_len)) // compress_ratio
    )
    return at_most(compressed_seq_len=cdiv(seq_len, compress_ratio), workspace_size=budget)


@obligation(
    domain={"max_model_len": Choice(256 * 1024, 256 * 1024 + 1)},
    expect="proved",
    case="vllm-indexer-prefill-chunk-split",
    sources=[
        "vllm==0.33.0 vllm/config/vllm.py:1872-1874 (5 if max_model_len <= 256 * 1024 else 2)",
        "vllm==0.33.0 vllm/v1/attention/backends/mla/indexer.py:916-927 (max_model_len * (576 * 2 // 132) * factor)",
    ],
    # two pinned lengths: a check of the model's factor step, not of a deployment (check-config does not apply it)
)
def prefill_workspace_at_the_256k_step(max_model_len):
    """The default factor's step (the domains above cross it only inside a Range, where
    the one-sided claims do not bind): at ``max_model_len = 256 Ki`` the indexer prefill workspace
    is ``262144 * 8 * 5 = 10485760`` rows, at ``256 Ki + 1`` it is ``262145 * 8 * 2 = 4194320``
    rows: vLLM 0.33.0's values (``get_max_prefill_buffer_size`` with the factor the config sets)."""
    rows = get_max_prefill_buffer_size(max_model_len, default_prefill_workspace_factor(max_model_len))
    vllm_rows = {256 * 1024: 10485760, 256 * 1024 + 1: 4194320}[max_model_len]
    return claim(rows == vllm_rows, workspace_rows=rows, vllm_0_33_rows=vllm_rows)


# -- the splitter itself: what vLLM 0.33.0's _split_indexer_prefill_chunks guarantees ----------
# The splitter loops on the lengths' values, so it runs on ints: every batch of up to three prefill
# requests over small lengths is enumerated inside the claim (a deployment is not in question: the
# budgets are pinned, and check-config does not apply these obligations: no engine/versions tags).
# Imported here, not at the top, so that the line links of the obligations above stay.

import itertools  # noqa: E402

from models.vllm.indexer_prefill import split_indexer_prefill_chunks  # noqa: E402

#: compressed sequence lengths (0: a request with no compressed token yet) and query lengths of the
#: enumerated batches, tokens; with the budgets below they reach both constraints at equality and
#: past it, and single requests over the workspace and over the logits budget
_CHUNK_SEQS = (0, 1, 2, 4, 7)
_CHUNK_QUERIES = (1, 3)


def _chunk_batches(num_requests):
    """Every ``(seq_lens, query_lens)`` batch of ``num_requests`` prefill requests over the lengths above."""
    return [
        (list(s), list(q))
        for s in itertools.product(_CHUNK_SEQS, repeat=num_requests)
        for q in itertools.product(_CHUNK_QUERIES, repeat=num_requests)
    ]


def _split_violations(seq_lens, query_lens, workspace_size, max_logits_bytes, request_offset):
    """What ``split_indexer_prefill_chunks`` breaks on one batch, as counts ``(cover, budget,
    maximal)``, 0 each when it keeps vLLM 0.33.0's guarantees (indexer.py:1359-1415):

    - cover: the request slices, in order, tile ``[offset, offset + n)`` (each non-empty, the query
      pieces of one slice consecutive from 0 to the slice's summed query rows, each non-empty, int
      bounds): every query row of every request is scored exactly once;
    - budget: a request slice fits ``sum(seq) <= workspace_size`` and ``sum(query) * sum(seq) <=
      max_logits_bytes // 4`` unless it is a single request that fits neither alone, and each query
      piece's logits ``rows * sum(seq)`` fit ``max_logits_bytes // 4`` unless it is one row;
    - maximal (the other side: the greedy packs as much as the budgets allow): a request slice
      followed by another would break a constraint with the next request added, and every query
      piece but a slice's last would break the logits budget with one more row."""
    n, elems = len(seq_lens), max_logits_bytes // 4
    chunks = split_indexer_prefill_chunks(seq_lens, query_lens, workspace_size, max_logits_bytes, request_offset)
    slices = []  # [(req_start, req_stop, [(q_start, q_stop), ...])] in order, consecutive equal slices merged
    for (r0, r1), (q0, q1) in chunks:
        if slices and (slices[-1][0], slices[-1][1]) == (r0, r1):
            slices[-1][2].append((q0, q1))
        else:
            slices.append((r0, r1, [(q0, q1)]))
    cover = budget = maximal = 0
    stops = [request_offset] + [r1 for _, r1, _ in slices]
    cover += sum(1 for (r0, r1, _), before in zip(slices, stops) if not (r0 == before < r1))
    cover += stops[-1] != request_offset + n
    for r0, r1, pieces in slices:
        a, b = max(r0 - request_offset, 0), max(r1 - request_offset, 0)
        m, s = sum(query_lens[a:b]), sum(seq_lens[a:b])
        bounds = [0] + [q1 for _, q1 in pieces]
        cover += sum(
            1
            for (q0, q1), before in zip(pieces, bounds)
            if not (type(q0) is int and type(q1) is int and q0 == before < q1)
        )
        cover += bounds[-1] != m
        single = b - a == 1
        budget += not (single or (s <= workspace_size and m * s <= elems))
        budget += sum(1 for q0, q1 in pieces if (q1 - q0) * s > elems and q1 - q0 != 1)
        maximal += sum(1 for q0, q1 in pieces[:-1] if (q1 - q0 + 1) * s <= elems)
        if b < n:
            maximal += s + seq_lens[b] <= workspace_size and (m + query_lens[b]) * (s + seq_lens[b]) <= elems
    return cover, budget, maximal


@obligation(
    domain={
        "workspace_size": Choice(4, 7),
        "max_logits_bytes": Choice(4 * 2, 4 * 3, 4 * 10, 4 * 40),
        "request_offset": Choice(0, 2),
        "num_requests": Choice(0, 1, 2, 3),
    },
    expect="proved",
    case="vllm-indexer-prefill-chunk-split",
    sources=[
        "vllm==0.33.0 vllm/v1/attention/backends/mla/indexer.py:1359-1415 "
        "(DeepseekV32IndexerMetadataBuilder._split_indexer_prefill_chunks)",
        "vllm==0.33.0 vllm/v1/attention/backends/mla/indexer.py:1537-1573 (build: one prefill chunk metadata per "
        "(req_slice, query_slice), request_offset = num_decodes)",
    ],
    # pinned budgets and enumerated batches: a check of the model, not of a deployment (check-config does not apply it)
)
def indexer_prefill_chunks_cover_every_row_within_budget(
    workspace_size, max_logits_bytes, request_offset, num_requests
):
    """Two-sided, on every batch of ``num_requests`` prefill requests over small lengths: the chunks
    cover every request and every query row exactly once, in order, with non-empty pieces; each
    chunk fits the workspace and the logits budget (``M * N * 4 <= max_logits_bytes``) unless it is
    one request that alone does not (then one query row per piece at most over it); and the greedy
    is maximal (no chunk or piece stops before a constraint binds). Counts of the batches that break
    each, 0 when kept."""
    cover = budget = maximal = 0
    for seq_lens, query_lens in _chunk_batches(num_requests):
        c, b, m = _split_violations(seq_lens, query_lens, workspace_size, max_logits_bytes, request_offset)
        cover, budget, maximal = cover + (c > 0), budget + (b > 0), maximal + (m > 0)
    return claim(
        cover + budget + maximal == 0,
        batches=len(_chunk_batches(num_requests)),
        batches_not_covered=cover,
        batches_over_budget=budget,
        batches_not_maximal=maximal,
    )


from models.vllm.indexer_prefill import (  # noqa: E402
    chunks_fit_workspace,
    chunks_fit_workspace_any_request,
    first_revision_chunks_fit,
    split_prefill_chunks_first_revision,
)


@obligation(
    domain={"workspace_size": Choice(4, 7), "max_logits_bytes": Choice(4 * 3, 4 * 10, 4 * 40)},
    expect="proved",
    case="vllm-indexer-prefill-chunk-split",
    sources=["vllm==0.33.0 vllm/v1/attention/backends/mla/indexer.py:1359-1415 (_split_indexer_prefill_chunks)"],
    # pinned budgets and enumerated batches: a check of the model, not of a deployment (check-config does not apply it)
)
def indexer_prefill_largest_chunk_is_a_chunk_within_the_workspace(workspace_size, max_logits_bytes):
    """The quantity the CrossHair contracts bound (``chunks_fit_workspace``, ``..._any_request``:
    the largest chunk's summed sequence length, the K-gather rows one chunk needs), decided on every
    batch of three requests over small lengths: it is the sum of one chunk and at least every
    chunk's (the largest, so at least every single request's); at most ``workspace_size`` when
    every request fits it alone (the N1 precondition), else at most the longest request (an
    oversized request is a chunk of its own). Counts of the batches that break each, 0 when kept."""
    not_largest = over = 0
    for seq_lens, query_lens in _chunk_batches(3):
        chunks = split_indexer_prefill_chunks(seq_lens, query_lens, workspace_size, max_logits_bytes)
        sums = [sum(seq_lens[r0:r1]) for (r0, r1), _ in chunks]
        fits = all(s <= workspace_size for s in seq_lens)
        most = (chunks_fit_workspace if fits else chunks_fit_workspace_any_request)(
            *seq_lens, *query_lens, workspace_size, max_logits_bytes
        )
        not_largest += not (most in sums and all(s <= most for s in sums))
        over += most > max([workspace_size] + ([] if fits else seq_lens))
    return claim(
        not_largest + over == 0,
        batches=len(_chunk_batches(3)),
        batches_not_the_largest_chunk=not_largest,
        batches_over_the_workspace=over,
    )


def _first_revision_batches(budget):
    """Every batch of up to three prefill requests over ``_CHUNK_SEQS`` each at most ``budget`` (tokens)."""
    return [list(s) for n in range(4) for s in itertools.product([s for s in _CHUNK_SEQS if s <= budget], repeat=n)]


@obligation(
    domain={"max_prefill_buffer_size": Choice(2, 4, 7)},
    expect="proved",
    case="vllm-indexer-prefill-chunk-split",
    sources=["vllm-project/vllm#25999"],
    # pinned budgets and enumerated batches: a check of the model, not of a deployment (check-config does not apply it)
)
def first_revision_chunks_tile_the_requests(max_prefill_buffer_size):
    """What the first revision of vllm#25999 did keep (its bug is the sum, not the cover), on every
    batch of up to three requests each within the budget: the chunks tile the requests in order,
    each non-empty (none for no request); each chunk is cut exactly where the sum the revision keeps
    passes the budget, that sum leaving out the request the previous cut was at (the bug: the
    request is in the new chunk, its length is not); the contract ``first_revision_chunks_fit``
    holds when the whole batch fits the budget (one chunk), and fails only on batches where a chunk
    sums past it (on the batches of three, the contract's). Counts of the batches that break each,
    0 when kept."""
    not_tiled = wrong_cut = wrong_verdict = 0
    for seq_lens in _first_revision_batches(max_prefill_buffer_size):
        n = len(seq_lens)
        chunks = split_prefill_chunks_first_revision(seq_lens, max_prefill_buffer_size)
        stops = [0] + [b for _, b in chunks]
        not_tiled += not (all(a == before < b for (a, b), before in zip(chunks, stops)) and stops[-1] == n)
        for k, (a, b) in enumerate(chunks):
            counted = a + 1 if k else 0  # the first request of a later chunk is not counted
            kept = [sum(seq_lens[counted : j + 1]) for j in range(counted, min(b + 1, n))]  # the running sums
            cut = b < n  # a chunk before the last is cut at b, where the running sum first passes the budget
            wrong_cut += not (
                all(s <= max_prefill_buffer_size for s in kept[: len(kept) - cut])
                and (not cut or kept[-1] > max_prefill_buffer_size)
            )
        over = any(sum(seq_lens[a:b]) > max_prefill_buffer_size for a, b in chunks)
        one = sum(seq_lens) <= max_prefill_buffer_size
        if n == 3:  # the contract's batch
            fits = first_revision_chunks_fit(*seq_lens, max_prefill_buffer_size)
            wrong_verdict += (not fits and not over) or (one and not (fits and chunks == [(0, 3)]))
    return claim(
        not_tiled + wrong_cut + wrong_verdict == 0,
        batches=len(_first_revision_batches(max_prefill_buffer_size)),
        batches_not_tiled=not_tiled,
        chunks_cut_elsewhere=wrong_cut,
        batches_wrong_verdict=wrong_verdict,
    )


@obligation(
    domain={"max_prefill_buffer_size": Choice(10)},
    expect="proved",
    case="vllm-indexer-prefill-chunk-split",
    sources=["vllm-project/vllm#25999"],
    # the corpus example, pinned: a check of the model, not of a deployment (check-config does not apply it)
)
def first_revision_overflows_at_the_corpus_example(max_prefill_buffer_size):
    """The N1 corpus example on the first revision, exactly: budget 10, requests ``[6, 6, 9]``. The
    split at request 1 restarts the running sum at 0 although the new chunk already holds request 1,
    so the chunks are ``[0, 1)`` and ``[1, 3)``, the second summing to 15 > 10, and the contract
    ``first_revision_chunks_fit`` fails there (its CrossHair check expects that counterexample)."""
    seq_lens = [6, 6, 9]
    chunks = split_prefill_chunks_first_revision(seq_lens, max_prefill_buffer_size)
    largest = max(sum(seq_lens[a:b]) for a, b in chunks)
    fits = first_revision_chunks_fit(*seq_lens, max_prefill_buffer_size)
    return claim(
        not fits and largest == 15 and chunks == [(0, 1), (1, 3)],
        largest_chunk_tokens=largest,
        budget_tokens=max_prefill_buffer_size,
        chunks=len(chunks),
    )
