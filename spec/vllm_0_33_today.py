"""vLLM 0.33.0 as it is today: the ``(max_num_batched_tokens, …)`` buffers vs speculative decoding
and CUDA-graph padding (reference §3, §6, §9, §10; corpus C2, E6 on 0.33.0).

Batches are ``Vector(BATCH, …)`` parameters (``BATCH`` requests at most); the scheduler, config and
dispatcher facts each proof rests on are named assumptions and appear in its unsat core.
"""

from capproof import Choice, Range, Vector, all_of, any_of, at_most, claim, implies, max_of, obligation, total
from models.vllm.cudagraph import adjust_cudagraph_sizes_for_spec_decode, bs_to_padded_graph_size, padded_graph_size
from models.vllm.cudagraph_sizes import default_max_graph_size_cap, is_default_capture_size, spec_rounded_size
from models.vllm.indexer_buffers import (
    arange_buffer_len,
    decode_rows_capacity,
    has_padding_request,
    native_decode_view_rows,
    uniform_decode_split,
)
from models.vllm.spec_decode import proposer_arange_len_0_33, query_start_loc_entries, uniform_decode_query_len
from spec._batches import BATCH, DECODE_BATCH_FACTS, SPLIT_BATCH

_CONFIG = {
    "max_num_seqs": Range(1, BATCH),
    "max_num_batched_tokens": Range(1, 2**16),
}
_CONFIG_FACTS = {
    # vllm/config/scheduler.py raises otherwise
    "max_num_batched_tokens >= max_num_seqs": lambda max_num_batched_tokens, max_num_seqs: (
        max_num_batched_tokens >= max_num_seqs
    ),
    "num_reqs <= max_num_seqs": lambda num_reqs, max_num_seqs: num_reqs <= max_num_seqs,
}


# ---------------------------------------------------------------------------------------------
# C2 on 0.33.0: every slice of the proposer's arange is by request count.


@obligation(
    domain={**_CONFIG, "num_reqs": Range(1, BATCH)},
    assumptions=_CONFIG_FACTS,
    expect="proved",
    case="vllm-specdec-arange-query-start-loc",
    engine="vllm",
    versions="==0.33.0",
    requires=("spec_decode",),
    tags=("per_batch", "spec_decode"),
    batch_axis=("max_num_seqs", "num_reqs"),
    sources=[
        "vllm==0.33.0 vllm/v1/spec_decode/llm_base_proposer.py",
        "vllm==0.33.0 vllm/v1/spec_decode/utils.py",
        "vllm==0.33.0 vllm/v1/spec_decode/step3p5.py",
    ],
    covers=["vllm/v1/spec_decode/llm_base_proposer.py::SpecDecodeBaseProposer.arange"],
)
def proposer_arange_covers_request_query_start_loc(max_num_seqs, max_num_batched_tokens, num_reqs):
    """0.33.0 keeps ``max(max_batch_size + 1, mnbt)``, but every slice found in 0.33.0 is by
    requests: ``arange[: batch_size + 1]`` (``llm_base_proposer.py``, ``step3p5.py``) and
    ``arange[: len(query_start_loc)]`` (``extend_all_queries_by_N``); DFlash has its own
    ``arange(max_positions + 1)``. So ``num_reqs + 1 <= max_num_seqs + 1`` suffices. ASSUMPTION
    (unconfirmed, read not executed): no 0.33.0 path builds ``mnbt`` items; one that did would
    need ``mnbt + 1`` entries (the C2 counterexample in spec/specdec_graphs.py)."""
    return at_most(
        demand=query_start_loc_entries(num_reqs),
        capacity=proposer_arange_len_0_33(max_num_seqs, max_num_batched_tokens),
    )


# ---------------------------------------------------------------------------------------------
# E6 vllm-dsv4-indexer-arange-buffer on 0.33.0: arange_buffer is sliced [:actual_expanded].

_DECODES = {
    **_CONFIG,
    "num_speculative_tokens": Choice(range(1, 8)),
    "num_reqs": Range(1, BATCH),
    "decode_lens": Vector(BATCH, Range(1, 8), length="num_reqs"),
}
_DECODE_FACTS = {
    **_CONFIG_FACTS,
    **DECODE_BATCH_FACTS,
}


@obligation(
    domain=_DECODES,
    assumptions=_DECODE_FACTS,
    expect="proved",
    case="vllm-dsv4-indexer-arange-buffer",
    engine="vllm",
    versions="==0.33.0",
    requires=("dsa_indexer", "spec_decode"),
    tags=("per_batch", "spec_decode"),
    batch_axis=("max_num_seqs", "num_reqs"),
    sources=[
        "vllm==0.33.0 vllm/v1/attention/backends/mla/indexer.py",
        "vllm-project/vllm#40983",
        "vllm-project/vllm#39277",
    ],
    covers=["vllm/v1/attention/backends/mla/indexer.py::DeepseekV32IndexerMetadataBuilder.arange_buffer"],
)
def indexer_arange_buffer_covers_decode_slices(
    max_num_seqs, max_num_batched_tokens, num_speculative_tokens, num_reqs, decode_lens
):
    """``arange(max(max_num_seqs * next_n, mnbt))`` vs its slices ``[:actual_expanded]``
    (``actual_expanded = sum(decode_lens)``, variable flatten path and DCP global seq lens): rests
    on the token budget only; the ``max_num_seqs * next_n`` term is slack for these slices. The
    pre-fix expression of #40983 is unconfirmed, so no buggy form is encoded."""
    return at_most(
        demand=total(decode_lens),
        capacity=arange_buffer_len(max_num_seqs, num_speculative_tokens, max_num_batched_tokens),
    )


# ---------------------------------------------------------------------------------------------
# (i)+(ii) The native next_n > 1 decode path views decode_seq_lens_buffer (mnbt,) as
# (num_decodes, max_decode_len), and the padded top-k path writes topk_indices_buffer
# [:num_decodes * max_decode_len] of (mnbt, index_topk).


def _padded_rows_fit(num_decodes, max_decode_len, max_num_batched_tokens):
    # the engine's product (a constant-size query on the aggregate abstraction and by induction;
    # the per-slot sum padded_decode_rows took 10-26 s at 1024 requests, docs/performance.md)
    rows = native_decode_view_rows(num_decodes, max_decode_len)
    cap = decode_rows_capacity(max_num_batched_tokens)
    return claim(rows <= cap, padded_rows=rows, decode_seq_lens_rows=cap, topk_indices_rows=cap)


@obligation(
    domain=_DECODES,
    assumptions=_DECODE_FACTS,
    expect="counterexample",
    sources=[
        "vllm==0.33.0 vllm/v1/attention/backends/mla/indexer.py",
        "vllm==0.33.0 vllm/model_executor/layers/sparse_attn_indexer.py",
    ],
    witnesses={
        "uniform decode lens (requires_padding False)": lambda decode_lens, num_reqs: all_of(
            *(implies(i < num_reqs, d == decode_lens[0]) for i, d in enumerate(decode_lens))
        )
    },
)
def padded_decode_rows_fit_without_uniform_split(
    max_num_seqs, max_num_batched_tokens, num_speculative_tokens, num_reqs, decode_lens
):
    """The scheduler facts alone (tokens within mnbt, requests within max_num_seqs, mnbt >=
    max_num_seqs, decode length <= 1 + K) do NOT bound the padded rows ``num_decodes *
    max_decode_len`` by mnbt: a non-uniform decode batch (some requests at their first decode or
    near max_model_len have fewer drafts) pads every request to the longest. Not a bug of 0.33.0:
    the native path only sees uniform decodes (next obligation); this is what that rests on."""
    return _padded_rows_fit(num_reqs, max_of(decode_lens), max_num_batched_tokens)


_SPLIT = {
    "max_num_seqs": Range(1, SPLIT_BATCH),
    "max_num_batched_tokens": Range(1, 2**16),
    "num_speculative_tokens": Choice(range(1, 8)),
    "num_reqs": Range(1, SPLIT_BATCH),
    "query_lens": Vector(SPLIT_BATCH, Range(0, 2**16), length="num_reqs"),
}
_SPLIT_FACTS = {
    **_CONFIG_FACTS,
    "sum of scheduled tokens <= max_num_batched_tokens": lambda query_lens, max_num_batched_tokens: (
        total(query_lens) <= max_num_batched_tokens
    ),
    # §10: zero-token requests are CUDA-graph padding of a FULL uniform-decode batch, whose request
    # count is min(padded // (1 + K), max_num_seqs) with padded <= max_cudagraph_capture_size <=
    # mnbt (proved below: cudagraph_* obligations).
    "zero-length requests only as uniform CUDA-graph padding": lambda query_lens, num_reqs, num_speculative_tokens, max_num_batched_tokens: (
        implies(
            has_padding_request(query_lens, num_reqs),
            num_reqs * uniform_decode_query_len(num_speculative_tokens) <= max_num_batched_tokens,
        )
    ),
    "the first request is not padding": lambda query_lens: query_lens[0] >= 1,
}


@obligation(
    domain=_SPLIT,
    assumptions=_SPLIT_FACTS,
    expect="proved",
    engine="vllm",
    versions="==0.33.0",
    requires=("dsa_indexer", "spec_decode"),
    tags=("per_batch", "spec_decode"),
    batch_axis=("max_num_seqs", "num_reqs"),
    sources=[
        "vllm==0.33.0 vllm/v1/attention/backends/utils.py",
        "vllm==0.33.0 vllm/v1/attention/backends/mla/indexer.py",
        "vllm==0.33.0 vllm/model_executor/layers/sparse_attn_indexer.py",
        "vllm==0.33.0 vllm/v1/cudagraph_dispatcher.py",
    ],
    covers=["vllm/v1/attention/backends/mla/indexer.py::DeepseekV32IndexerMetadataBuilder.decode_seq_lens_buffer"],
)
def padded_decode_rows_fit_0_33(max_num_seqs, max_num_batched_tokens, num_speculative_tokens, num_reqs, query_lens):
    """(i) ``decode_seq_lens_buffer[: num_decodes * max_decode_len].view(...)`` and (ii)
    ``topk_indices_buffer[:num_padded_tokens]`` fit ``mnbt`` rows on 0.33.0's native path.

    The indexer calls ``split_decodes_and_prefills(require_uniform=True)`` there, so the decodes
    are the leading requests of length ``query_lens[0]`` (or 0: padding): padded rows = real
    decode tokens, or a uniform CUDA-graph batch. Rests on the token budget and the padding fact
    (``query_lens[0] >= 1`` is not needed); the flatten and varlen paths write ``num_decode_tokens <= mnbt`` rows.
    The split is one walk over the batch (``uniform_decode_split``), so the claim is proved for
    every batch size by induction over the batch (capproof.induction, on the walk's invariant);
    ``SPLIT_BATCH`` only sizes the bounded encoding used if induction does not apply.
    """
    num_decodes, max_decode_len = uniform_decode_split(query_lens, num_reqs, num_speculative_tokens)
    return _padded_rows_fit(num_decodes, max_decode_len, max_num_batched_tokens)


# ---------------------------------------------------------------------------------------------
# (iii) CUDA-graph capture sizes (default list, spec-decode rounding, padding) vs mnbt.

_GRAPHS = {
    "max_num_seqs": Range(1, 4096),
    "max_num_batched_tokens": Range(1, 2**17),
    "num_speculative_tokens": Choice(range(0, 8)),
    "default_max_graph_size": Choice(512, 1024),
    "size": Range(1, 2**17),
    "n": Range(1, 4096),
}
_GRAPH_FACTS = {
    "max_num_batched_tokens >= max_num_seqs": lambda max_num_batched_tokens, max_num_seqs: (
        max_num_batched_tokens >= max_num_seqs
    ),
}


@obligation(
    domain=_GRAPHS,
    assumptions={
        **_GRAPH_FACTS,
        "size is a default capture size": lambda size, n, max_num_seqs, num_speculative_tokens, max_num_batched_tokens, default_max_graph_size: (
            is_default_capture_size(
                size, n, max_num_seqs, num_speculative_tokens, max_num_batched_tokens, default_max_graph_size
            )
        ),
    },
    expect="proved",
    sources=["vllm==0.33.0 vllm/config/vllm.py"],
    engine="vllm",
    versions="==0.33.0",
    requires=("default_capture_sizes",),
    tags=("cuda_graphs",),
)
def cudagraph_default_sizes_fit_mnbt(
    max_num_seqs, max_num_batched_tokens, num_speculative_tokens, default_max_graph_size, size, n
):
    """Every default capture size (grid, ``mnbt`` itself, uniform-decode ``n * (1 + K)``) is
    ``<= mnbt``, so ``max_cudagraph_capture_size <= mnbt``."""
    return at_most(capture_size=size, max_num_batched_tokens=max_num_batched_tokens)


@obligation(
    domain={**_GRAPHS, "max_size": Range(1, 2**17), "m": Range(1, 4096), "num_tokens": Range(1, 2**17)},
    assumptions={
        **_GRAPH_FACTS,
        "max_size is a default capture size": lambda max_size, m, max_num_seqs, num_speculative_tokens, max_num_batched_tokens, default_max_graph_size: (
            is_default_capture_size(
                max_size, m, max_num_seqs, num_speculative_tokens, max_num_batched_tokens, default_max_graph_size
            )
        ),
        "size is a default capture size": lambda size, n, max_num_seqs, num_speculative_tokens, max_num_batched_tokens, default_max_graph_size: (
            is_default_capture_size(
                size, n, max_num_seqs, num_speculative_tokens, max_num_batched_tokens, default_max_graph_size
            )
        ),
        "the rounded size is kept (<= max_cudagraph_capture_size)": lambda size, max_size, num_speculative_tokens: (
            spec_rounded_size(size, num_speculative_tokens) <= max_size
        ),
        "num_tokens pads to it (bs_to_padded_graph_size)": lambda num_tokens, size, num_speculative_tokens: (
            num_tokens <= spec_rounded_size(size, num_speculative_tokens)
        ),
    },
    expect="proved",
    sources=["vllm==0.33.0 vllm/config/compilation.py", "vllm==0.33.0 vllm/v1/cudagraph_dispatcher.py"],
    engine="vllm",
    versions="==0.33.0",
    requires=("default_capture_sizes",),
    tags=("cuda_graphs",),
)
def cudagraph_padded_tokens_fit_mnbt(
    max_num_seqs,
    max_num_batched_tokens,
    num_speculative_tokens,
    default_max_graph_size,
    size,
    n,
    max_size,
    m,
    num_tokens,
):
    """A batch padded to a capture size after ``adjust_cudagraph_sizes_for_spec_decode`` (sizes
    rounded up to ``1 + K``, kept if ``<= max_cudagraph_capture_size``, itself a default size) has
    at most ``mnbt`` tokens: every ``(mnbt, …)`` buffer holds it. Batches above the largest size
    run without a graph, unpadded. (The ``[q]`` fallback: ``q <= max_size`` likewise.)"""
    return at_most(
        padded_tokens=spec_rounded_size(size, num_speculative_tokens), max_num_batched_tokens=max_num_batched_tokens
    )


# ---------------------------------------------------------------------------------------------
# (iv) User CUDA-graph capture sizes (--cudagraph-capture-sizes, -cc cudagraph_capture_sizes):
# each size of the list is a token count the dispatcher pads a batch to; check-config checks the
# list member by member (cudagraph_capture_size over the given sizes).


@obligation(
    domain={
        "max_num_batched_tokens": Range(1, 2**17),
        "num_speculative_tokens": Choice(range(0, 16)),
        "cudagraph_capture_size": Range(1, 2**17),
        "max_cudagraph_capture_size": Range(1, 2**17),
    },
    assumptions={
        "max_cudagraph_capture_size <= max_num_batched_tokens (user sizes above max_num_tokens dropped; the largest kept)": lambda max_cudagraph_capture_size, max_num_batched_tokens: (
            max_cudagraph_capture_size <= max_num_batched_tokens
        ),
    },
    expect="proved",
    engine="vllm",
    versions="==0.33.0",
    requires=("user_capture_sizes",),
    tags=("cuda_graphs",),
    sources=[
        "vllm==0.33.0 vllm/config/vllm.py:2552-2631 (user sizes kept if <= max_num_tokens; max_cudagraph_capture_size = the largest kept)",
        "vllm==0.33.0 vllm/config/compilation.py:1537-1565 (adjust_cudagraph_sizes_for_spec_decode: round_up(size, 1 + K), kept if "
        "<= max_cudagraph_capture_size; [1 + K] when none is left)",
        "vllm==0.33.0 vllm/v1/cudagraph_dispatcher.py:139 (a batch is padded to the smallest capture size >= its tokens)",
    ],
)
def user_capture_sizes_fit_mnbt(
    max_num_batched_tokens, num_speculative_tokens, cudagraph_capture_size, max_cudagraph_capture_size
):
    """A batch padded to a user-given capture size (after the spec-decode rounding vLLM applies,
    when vLLM keeps it) has at most ``mnbt`` tokens, so every ``(mnbt, …)`` buffer holds it. A size
    vLLM drops (above ``mnbt``, or rounded above ``max_cudagraph_capture_size``) is never padded to:
    the implication holds there. The ``[1 + K]`` fallback is ``<= max_cudagraph_capture_size``."""
    padded = spec_rounded_size(cudagraph_capture_size, num_speculative_tokens)
    return claim(
        implies(padded <= max_cudagraph_capture_size, padded <= max_num_batched_tokens),
        padded_tokens=padded,
        max_num_batched_tokens=max_num_batched_tokens,
    )


# ---------------------------------------------------------------------------------------------
# (v) The dispatcher's padding on vLLM's own capture list (models/vllm/cudagraph.py
# had no obligation). Each case is one deployment: the default list (the membership predicate of
# models/vllm/cudagraph_sizes.py enumerated on ints), rounded by adjust_cudagraph_sizes_for_spec_decode
# as compilation.py:1502-1508 does for FULL decode graphs with 1 + K > 1, and the padding table the
# dispatcher indexes (cudagraph_dispatcher.py:71-90, 139). Few deployments: each is enumerated on ints
# at every evaluation of the claim (no cache: a cached list would hide a mutated model).

_DEPLOYMENTS = {
    "max_num_seqs": Choice(5, 256),
    "num_speculative_tokens": Choice(0, 1, 2, 3),
    "max_num_batched_tokens": Choice(8192),
    "default_max_graph_size": Choice(512, 1024),
}


def default_capture_list(
    max_num_seqs, num_speculative_tokens, max_num_batched_tokens, default_max_graph_size, limit=None
):
    """vLLM 0.33.0's default ``cudagraph_capture_sizes`` (``VllmConfig._set_cudagraph_sizes``), in
    ascending order: the sizes ``s`` in ``1..limit`` that ``is_default_capture_size`` admits, each
    tried with the one request count that can make it a uniform-decode size, ``s // (1 + K)``.
    ``limit`` defaults to ``min(mnbt, cap)`` (``cap`` = ``default_max_graph_size_cap``), past every
    element (``cudagraph_default_sizes_fit_mnbt``; the uniform sizes are ``<= cap``). On ints only
    (a deployment is configuration, not batch). Units: tokens."""
    q = uniform_decode_query_len(num_speculative_tokens)
    if limit is None:
        limit = min(
            max_num_batched_tokens,
            default_max_graph_size_cap(max_num_seqs, num_speculative_tokens, default_max_graph_size),
        )
    return [
        s
        for s in range(1, limit + 1)
        if is_default_capture_size(
            s,
            s // q if num_speculative_tokens and s % q == 0 else 1,
            max_num_seqs,
            num_speculative_tokens,
            max_num_batched_tokens,
            default_max_graph_size,
        )
    ]


def dispatched_capture_list(
    max_num_seqs, num_speculative_tokens, max_num_batched_tokens, default_max_graph_size, rounded=True
):
    """``(default list, capture sizes, max_cudagraph_capture_size)`` the dispatcher sees: the
    default list (its last element the maximum, ``_set_cudagraph_sizes``), rounded by
    ``adjust_cudagraph_sizes_for_spec_decode`` (a no-op at ``K = 0``) unless ``rounded`` is false
    (vLLM before the fix of vllm#28207). Units: tokens."""
    default = default_capture_list(max_num_seqs, num_speculative_tokens, max_num_batched_tokens, default_max_graph_size)
    if not rounded:
        return default, default, default[-1]
    sizes, max_size = adjust_cudagraph_sizes_for_spec_decode(
        default, default[-1], uniform_decode_query_len(num_speculative_tokens)
    )
    return default, sizes, max_size


@obligation(
    domain={**_DEPLOYMENTS, "num_tokens": Range(1, 2**17)},
    expect="proved",  # pinned configurations: a check of the model, not of a deployment (check-config does not apply it)
    sources=[
        "vllm==0.33.0 vllm/v1/cudagraph_dispatcher.py:71-90 (_compute_bs_to_padded_graph_size), :139 (the lookup)",
        "vllm==0.33.0 vllm/config/compilation.py:1502-1508, 1537-1565 (adjust_cudagraph_sizes_for_spec_decode)",
        "vllm==0.33.0 vllm/config/vllm.py::VllmConfig._set_cudagraph_sizes (the default list)",
    ],
)
def cudagraph_padding_is_the_smallest_capture_size(
    max_num_seqs, num_speculative_tokens, max_num_batched_tokens, default_max_graph_size, num_tokens
):
    """Two-sided: a batch of ``num_tokens <= max_cudagraph_capture_size`` tokens (larger ones run
    without a graph) is padded to a capture size of the rounded list that is ``>= num_tokens``, and
    to the smallest such (no capture size in ``[num_tokens, padded)``): it fits the ``(mnbt, …)``
    buffers. The dispatcher's table (``bs_to_padded_graph_size``, indexed by ``num_tokens``) holds at
    each ``i`` the smallest capture size ``>= i`` (checked on ints: it is configuration), the
    rounding keeps every default size that is already a multiple of ``1 + K`` (``round_up`` leaves
    it, and it is ``<=`` the maximum) and lists multiples of ``1 + K`` only, and the rounded maximum is the rounded list's last element, at
    most the default list's."""
    default, sizes, max_size = dispatched_capture_list(
        max_num_seqs, num_speculative_tokens, max_num_batched_tokens, default_max_graph_size
    )
    table = bs_to_padded_graph_size(sizes, max_size)
    smallest = [0] + [min(s for s in sizes if s >= i) for i in range(1, max_size + 1)]
    padded = padded_graph_size(num_tokens, sizes, max_size)
    graph = all_of(
        any_of(*(padded == s for s in sizes)),
        num_tokens <= padded,
        all_of(*(implies(num_tokens <= s, padded <= s) for s in sizes)),
        padded <= max_num_batched_tokens,
    )
    q = uniform_decode_query_len(num_speculative_tokens)
    kept = all(s in sizes for s in default if s % q == 0)  # the rounding keeps every size already a multiple of q
    multiples = all(s % q == 0 for s in sizes)  # ... and leaves no other
    return claim(
        all_of(
            table == smallest,
            kept,
            multiples,
            max_size == sizes[-1],
            max_size <= default[-1],
            implies(num_tokens <= max_size, graph),
        ),
        num_tokens=num_tokens,
        padded_tokens=padded,
        max_cudagraph_capture_size=max_size,
    )


_UNIFORM_DECODE = {**_DEPLOYMENTS, "num_reqs": Range(1, 2**16)}
_UNIFORM_DECODE_FACTS = {"num_reqs <= max_num_seqs": lambda num_reqs, max_num_seqs: num_reqs <= max_num_seqs}


def _uniform_decode_padding_claim(
    max_num_seqs, num_speculative_tokens, max_num_batched_tokens, default_max_graph_size, num_reqs, rounded
):
    """The dispatcher's assertion (``cudagraph_dispatcher.py:139-141``) on a uniform-decode batch of
    ``num_reqs`` requests of ``q = 1 + K`` tokens dispatched to a FULL graph (``num_reqs * q <=
    max_cudagraph_capture_size``): the padded size is a multiple of ``q`` and holds the batch's
    ``num_reqs`` requests (``padded // q >= num_reqs``)."""
    q = uniform_decode_query_len(num_speculative_tokens)
    _, sizes, max_size = dispatched_capture_list(
        max_num_seqs, num_speculative_tokens, max_num_batched_tokens, default_max_graph_size, rounded
    )
    padded = padded_graph_size(num_reqs * q, sizes, max_size)
    return claim(
        implies(num_reqs * q <= max_size, all_of(padded % q == 0, num_reqs <= padded // q)),
        padded_tokens=padded,
        query_len=q,
        num_reqs=num_reqs,
        max_cudagraph_capture_size=max_size,
    )


@obligation(
    domain=_UNIFORM_DECODE,
    assumptions=_UNIFORM_DECODE_FACTS,
    expect="proved",  # pinned configurations: a check of the model, not of a deployment (check-config does not apply it)
    sources=[
        "vllm==0.33.0 vllm/v1/cudagraph_dispatcher.py:139-141 (num_reqs = min(padded // q, max_num_seqs); "
        "assert padded % q == 0)",
        "vllm==0.33.0 vllm/config/compilation.py:1496-1508 (adjust_cudagraph_sizes_for_spec_decode, vllm#28207)",
    ],
)
def cudagraph_uniform_decode_padding_is_a_multiple_of_q(
    max_num_seqs, num_speculative_tokens, max_num_batched_tokens, default_max_graph_size, num_reqs
):
    """A uniform-decode batch padded on the list after ``adjust_cudagraph_sizes_for_spec_decode``
    passes the dispatcher's ``assert num_tokens_padded % uniform_decode_query_len == 0``."""
    return _uniform_decode_padding_claim(
        max_num_seqs, num_speculative_tokens, max_num_batched_tokens, default_max_graph_size, num_reqs, rounded=True
    )


@obligation(
    # one deployment where the grid and the uniform sizes differ (q = 3; the request counts of 40
    # are 1, 2, 4, 8, ..., 40): each claim evaluation enumerates the list, and the density runs it
    # on every num_reqs
    domain={
        "max_num_seqs": Choice(40),
        "num_speculative_tokens": Choice(2),
        "max_num_batched_tokens": Choice(8192),
        "default_max_graph_size": Choice(512),
        "num_reqs": Range(1, 64),
    },
    assumptions=_UNIFORM_DECODE_FACTS,
    expect="counterexample",  # pinned configurations: a check of the model, not of a deployment (check-config does not apply it)
    sources=[
        "vllm==0.33.0 vllm/v1/cudagraph_dispatcher.py:139-141",
        "vllm#28207 (a padded uniform-decode batch not a multiple of 1 + K; fixed by rounding the capture sizes, "
        "vllm/config/compilation.py:1496-1508)",
    ],
)
def cudagraph_uniform_decode_padding_unrounded_before_28207(
    max_num_seqs, num_speculative_tokens, max_num_batched_tokens, default_max_graph_size, num_reqs
):
    """The same assertion on the default list NOT rounded (vLLM before the fix of vllm#28207): a
    uniform-decode batch whose token count is not itself a capture size pads onto the grid of
    multiples of 8 or 16, not a multiple of ``q`` in general."""
    return _uniform_decode_padding_claim(
        max_num_seqs, num_speculative_tokens, max_num_batched_tokens, default_max_graph_size, num_reqs, rounded=False
    )


#: vLLM 0.33.0's default capture list (``VllmConfig._set_cudagraph_sizes``, default path, run on
#: the engine's own code by tests/test_real_engine.py::vllm_default_capture_sizes) at
#: ``max_num_batched_tokens = 8192``: ``(max_num_seqs, num_speculative_tokens, default_max_graph_size)
#: -> (members, sum of the members, largest member)``. Chosen where the uniform-decode sizes ``n * (1
#: + K)`` fall off the 8/16 grid (K = 1 with an odd request count, K = 2), where the request counts
#: meet 4, 8 and 256 and the ``n == max_reqs`` clause, and where the capture ceiling is exactly 256.
_RECORDED_DEFAULT_LISTS = {
    (5, 1, 512): (6, 41, 16),
    (5, 2, 512): (10, 91, 24),
    (9, 2, 512): (13, 223, 48),
    (87, 2, 512): (55, 10785, 512),
    (128, 0, 512): (35, 4231, 256),
    (300, 2, 1024): (98, 41800, 1024),
}


@obligation(
    domain={
        "max_num_seqs": Choice(5, 9, 87, 128, 300),
        "num_speculative_tokens": Choice(0, 1, 2),
        "max_num_batched_tokens": Choice(8192),
        "default_max_graph_size": Choice(512, 1024),
    },
    assumptions={
        "a recorded deployment": lambda max_num_seqs, num_speculative_tokens, default_max_graph_size: (
            (max_num_seqs, num_speculative_tokens, default_max_graph_size) in _RECORDED_DEFAULT_LISTS
        )
    },
    expect="proved",  # pinned configurations: a check of the model, not of a deployment (check-config does not apply it)
    sources=["vllm==0.33.0 vllm/config/vllm.py:2487-2494 (request_counts), 2540-2597 (the default list)"],
)
def cudagraph_default_list_is_vllm_0_33s_at_the_clause_boundaries(
    max_num_seqs, num_speculative_tokens, max_num_batched_tokens, default_max_graph_size
):
    """Two-sided (``cudagraph_default_sizes_fit_mnbt`` only bounds the members): the
    sizes the membership predicates admit are as many as vLLM 0.33.0 lists, with the same sum and
    the same largest member (``max_cudagraph_capture_size``), at deployments where each clause of
    ``is_request_count``, ``is_uniform_decode_size`` and ``is_default_capture_size`` decides a
    member. An equality with the engine's recorded output, not a restatement of the clauses."""
    sizes = default_capture_list(max_num_seqs, num_speculative_tokens, max_num_batched_tokens, default_max_graph_size)
    # -1 (no list has it) off the recorded deployments: excluded by the assumption, but bound --check
    # evaluates the claim on every case to confirm it is not a capacity claim
    members, total_, largest = _RECORDED_DEFAULT_LISTS.get(
        (max_num_seqs, num_speculative_tokens, default_max_graph_size), (-1,) * 3
    )
    return claim(
        all_of(len(sizes) == members, sum(sizes) == total_, sizes[-1] == largest),
        members=len(sizes),
        vllm_members=members,
        sum_of_sizes=sum(sizes),
        vllm_sum=total_,
        max_cudagraph_capture_size=sizes[-1],
        vllm_max=largest,
    )


# -- the DSA indexer's decode split on ints, two-sided (the claims above only bound its rows).
# Enumerated small batches: a check of the model, not of a deployment (no engine/versions: check-config
# does not apply it). Imported here, not at the top, so that the line links above stay.

import itertools  # noqa: E402

from models.vllm.indexer_buffers import padded_decode_rows, split_decodes_require_uniform  # noqa: E402

#: query lengths of the enumerated batches (0: a CUDA-graph padding request), tokens
_SPLIT_QUERY_LENS = (0, 1, 2, 3, 5)


@obligation(
    domain={"num_speculative_tokens": Choice(1, 2), "size": Choice(1, 2, 3, 4)},
    expect="proved",  # enumerated batches: a check of the model, not of a deployment (check-config does not apply it)
    sources=[
        "vllm==0.33.0 vllm/v1/attention/backends/utils.py::split_decodes_and_prefills (require_uniform=True: "
        "is_prefill = (ql != ql[0]) & (ql != 0), the first prefill by argmax; 0 decodes when ql[0] > decode_threshold)",
        "vllm==0.33.0 vllm/v1/attention/backends/mla/indexer.py (decode_lens_cpu.max(); the padded decode view)",
    ],
)
def uniform_decode_split_is_the_leading_uniform_run(num_speculative_tokens, size):
    """Two-sided, on every batch vector of ``size`` entries over query lengths {0, 1, 2, 3, 5} and
    every ``num_reqs <= size`` (the entries past it are padding of the vector): ``num_decodes``
    (``uniform_decode_split``, ``split_decodes_require_uniform``) is 0 when ``ql[0] > 1 + K``, else
    the leading requests of length ``ql[0]`` or 0 are all decodes and the next request, if any
    among the ``num_reqs``, is not one (the first prefill); ``max_decode_len`` is the longest
    decode (0 with none); ``has_padding_request`` is whether a request among the ``num_reqs`` has
    length 0; and the padded view's rows ``padded_decode_rows`` are ``num_decodes *
    max_decode_len``. Counts of the batches that break each, 0 when kept."""
    threshold = uniform_decode_query_len(num_speculative_tokens)
    wrong_split = wrong_padding = wrong_rows = batches = 0
    for query_lens in itertools.product(_SPLIT_QUERY_LENS, repeat=size):
        query_lens = list(query_lens)
        for num_reqs in range(1, size + 1):
            batches += 1
            decodes, longest = uniform_decode_split(query_lens, num_reqs, num_speculative_tokens)
            run = [ql for ql in query_lens[:decodes]]
            uniform = all(ql in (query_lens[0], 0) for ql in run)
            stops = decodes == num_reqs or query_lens[decodes] not in (query_lens[0], 0)
            expected = decodes == 0 if query_lens[0] > threshold else (uniform and stops and 0 <= decodes <= num_reqs)
            wrong_split += not (
                expected
                and longest == max(run, default=0)
                and split_decodes_require_uniform(query_lens, num_reqs, num_speculative_tokens) == decodes
            )
            wrong_padding += has_padding_request(query_lens, num_reqs) != (0 in query_lens[:num_reqs])
            wrong_rows += padded_decode_rows(decodes, longest, size) != decodes * longest
    return claim(
        wrong_split + wrong_padding + wrong_rows == 0,
        batches=batches,
        batches_wrong_split=wrong_split,
        batches_wrong_padding_request=wrong_padding,
        batches_wrong_padded_rows=wrong_rows,
    )
