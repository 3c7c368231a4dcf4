"""vLLM CUDA-graph capture sizes: rounding for speculative decoding and batch-size padding.

Units: every size is a **token count** (rows of a padded batch); ``q`` is the uniform decode query
length ``1 + num_speculative_tokens`` (tokens per request). Lists are concrete (they are
configuration, not batch); the padded size of one batch is a closed form that also runs on
symbolic ints.

Sources: vLLM 0.33.0 ``vllm/config/compilation.py::CompilationConfig.adjust_cudagraph_sizes_for_spec_decode``
and ``vllm/v1/cudagraph_dispatcher.py::CudagraphDispatcher._compute_bs_to_padded_graph_size``.
"""

from __future__ import annotations

from capproof import round_up, select

__all__ = ["adjust_cudagraph_sizes_for_spec_decode", "bs_to_padded_graph_size", "padded_graph_size"]


def adjust_cudagraph_sizes_for_spec_decode(capture_sizes, max_capture_size, q):
    """``(sizes, max_size)`` after rounding every capture size up to a multiple of ``q``.

    Sizes whose rounded value exceeds ``max_capture_size`` are dropped; an empty result falls back
    to ``[q]`` when ``q <= max_capture_size``, else ValueError (vLLM raises "No valid cudagraph
    sizes after rounding"). ``q <= 1`` or no sizes: unchanged. The new maximum is the largest
    rounded size. Source: vLLM 0.33.0 ``vllm/config/compilation.py``.
    """
    if not capture_sizes or q <= 1:
        return list(capture_sizes or []), max_capture_size
    rounded = sorted({round_up(s, q) for s in capture_sizes if round_up(s, q) <= max_capture_size})
    if not rounded:
        if q > max_capture_size:
            raise ValueError(f"no capture size is a multiple of {q} within {max_capture_size}")
        rounded = [q]
    return rounded, rounded[-1]


def bs_to_padded_graph_size(capture_sizes, max_capture_size):
    """Table ``t[n]`` for ``n in 0..max_capture_size``: the smallest capture size ``>= n`` (``t[0] = 0``).

    Source: vLLM 0.33.0 ``vllm/v1/cudagraph_dispatcher.py::_compute_bs_to_padded_graph_size``
    (sizes sorted ascending, the last one equal to ``max_capture_size``).
    """
    table = []
    for n in range(max_capture_size + 1):
        table.append(padded_graph_size(n, capture_sizes, max_capture_size))
    return table


def padded_graph_size(num_tokens, capture_sizes, max_capture_size):
    """Tokens after CUDA-graph padding for a batch of ``num_tokens <= max_capture_size`` tokens.

    The smallest capture size ``>= num_tokens``; ``0`` stays ``0``; sizes past the last capture
    size (not listed) pad to ``max_capture_size + 1`` exactly as the engine's table does. Runs on a
    symbolic ``num_tokens`` (nested ``select``), the capture list being concrete.
    """
    result = max_capture_size + 1
    for size in sorted(capture_sizes, reverse=True):
        result = select(num_tokens <= size, size, result)
    return select(num_tokens == 0, 0, result)
