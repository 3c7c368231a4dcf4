"""vLLM 0.33.0 CUDA-graph capture sizes as membership predicates (default list, uniform-decode sizes).

Checked by Z3 (spec/vllm_0_33_today.py). Reference §10.

Sources (vLLM 0.33.0): ``vllm/config/vllm.py::VllmConfig._set_cudagraph_sizes`` (default list,
``request_counts``, uniform-decode sizes), ``vllm/config/compilation.py::
CompilationConfig.adjust_cudagraph_sizes_for_spec_decode`` (rounding), and
``vllm/v1/cudagraph_dispatcher.py`` (``_compute_bs_to_padded_graph_size``: a batch of ``bs <=
max_cudagraph_capture_size`` tokens is padded to the smallest capture size ``>= bs``; larger
batches run without a graph, unpadded).

A list whose bounds are symbolic cannot be built, so each list is a **membership predicate**:
``is_…(size, …)`` is true exactly when ``size`` is an element. ``n`` is the request count of a
uniform-decode size ``n * (1 + K)`` (a free variable the caller quantifies over).

Units: capture sizes, ``max_num_batched_tokens`` and caps in **tokens**; ``max_num_seqs`` and
``n`` in **requests**; ``num_speculative_tokens`` a count. Only the default path is modelled:
no user ``cudagraph_capture_sizes`` / ``max_cudagraph_capture_size``, ``performance_mode`` not
``interactivity``, no dynamic speculative decoding tiers.
"""

from __future__ import annotations

from capproof import all_of, any_of, minimum, round_up
from models.vllm.spec_decode import uniform_decode_query_len

__all__ = [
    "default_max_graph_size_cap",
    "is_request_count",
    "is_uniform_decode_size",
    "is_default_capture_size",
    "spec_rounded_size",
]


def default_max_graph_size_cap(max_num_seqs, num_speculative_tokens, default_max_graph_size):
    """``min(max_num_seqs * decode_query_len * 2, default_max_graph_size)`` (1024 on SM100, else 512)."""
    return minimum(max_num_seqs * uniform_decode_query_len(num_speculative_tokens) * 2, default_max_graph_size)


def is_request_count(n, max_reqs, default_max_graph_size):
    """``n in request_counts(max_reqs)``: ``max_reqs = min(max_reqs, default)``; ``{1, 2, 4} <=
    max_reqs``, ``range(8, min(max_reqs + 1, 256), 8)``, ``range(256, max_reqs + 1, 16)``, and
    ``max_reqs`` itself."""
    m = minimum(max_reqs, default_max_graph_size)
    return any_of(
        all_of(any_of(n == 1, n == 2, n == 4), n <= m),
        all_of(n % 8 == 0, n >= 8, n < minimum(m + 1, 256)),
        all_of(n % 16 == 0, n >= 256, n <= m),
        n == m,
    )


def is_uniform_decode_size(size, n, max_num_seqs, num_speculative_tokens, default_max_graph_size):
    """``size in uniform_decode_sizes``: ``n * query_len`` for ``n`` in ``request_counts(max_num_seqs)``
    with ``n * query_len <= max_cudagraph_capture_size`` (the cap before the ``mnbt`` clamp), when
    ``query_len = 1 + K > 1``; with ``K == 0``, ``[max_num_seqs]`` if it fits the cap."""
    q = uniform_decode_query_len(num_speculative_tokens)
    cap = default_max_graph_size_cap(max_num_seqs, num_speculative_tokens, default_max_graph_size)
    if q > 1:
        return all_of(is_request_count(n, max_num_seqs, default_max_graph_size), size == n * q, size <= cap)
    return all_of(size == max_num_seqs, max_num_seqs <= cap)


def is_default_capture_size(
    size, n, max_num_seqs, num_speculative_tokens, max_num_batched_tokens, default_max_graph_size
):
    """``size in cudagraph_capture_sizes`` after ``_set_cudagraph_sizes`` (default path).

    ``cap = min(max_num_batched_tokens, cap0)``; ``[1, 2, 4]`` up to ``cap``; ``range(8, min(cap +
    1, 256), 8)`` if ``cap >= 8``; ``range(256, cap + 1, 16)`` if ``cap >= 256``;
    ``max_num_batched_tokens`` if ``<= cap``; uniform-decode sizes ``<= max_num_batched_tokens``.
    """
    cap0 = default_max_graph_size_cap(max_num_seqs, num_speculative_tokens, default_max_graph_size)
    cap = minimum(max_num_batched_tokens, cap0)
    return any_of(
        all_of(any_of(size == 1, size == 2, size == 4), size <= cap),
        all_of(cap >= 8, size % 8 == 0, size >= 8, size < minimum(cap + 1, 256)),
        all_of(cap >= 256, size % 16 == 0, size >= 256, size <= cap),
        all_of(size == max_num_batched_tokens, max_num_batched_tokens <= cap),
        all_of(
            is_uniform_decode_size(size, n, max_num_seqs, num_speculative_tokens, default_max_graph_size),
            size <= max_num_batched_tokens,
        ),
    )


def spec_rounded_size(size, num_speculative_tokens):
    """``round_up(size, uniform_decode_query_len)`` (``adjust_cudagraph_sizes_for_spec_decode``);
    the rounded size is kept only if ``<= max_cudagraph_capture_size`` (the list's largest element
    before rounding); an empty result falls back to ``[q]`` when ``q <= max_cudagraph_capture_size``."""
    return round_up(size, uniform_decode_query_len(num_speculative_tokens))
