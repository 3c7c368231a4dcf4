"""TensorRT-LLM CUDA-graph batch sizes vs the buffers sized from ``max_batch_size`` /
``max_num_tokens``.

Corpus case C6 ``trtllm-cudagraph-bs-vs-buffers``. Checked by Z3 (spec/specdec_graphs.py,
spec/per_batch_buffers.py). The corpus records the buggy behaviour and the invariant each fix
must establish, not the exact fix expressions (NVIDIA/TensorRT-LLM#10687, #5076, #16101 were
not re-read): the ``*_fixed`` functions below are the smallest formulas establishing those
invariants, and say so.

Units: ``max_batch_size``, capture batch sizes and ``num_generation_requests`` in **requests**;
``max_num_tokens``, ``num_context_tokens`` in **tokens**; ``cu_seqlen`` in **entries**
(``batch + 1``); ``max_draft_len`` / ``runtime_draft_len`` draft tokens per request.
"""

from __future__ import annotations

from capproof import minimum

__all__ = [
    "AUTODEPLOY_CAPTURE_SIZES_10688",
    "cu_seqlen_entries",
    "cu_seqlen_demand",
    "autodeploy_capture_size_fixed",
    "max_cuda_graph_bs_before_5076",
    "max_cuda_graph_bs_fixed",
    "graph_input_tokens",
    "scheduled_tokens_before_16101",
    "scheduled_tokens_16101",
    "forward_tokens",
]

#: Capture sizes ``update_cuda_graph_batch_sizes`` produced whatever ``max_batch_size`` was
#: (NVIDIA/TensorRT-LLM#10688, AutoDeploy; the reported prefix of the list).
AUTODEPLOY_CAPTURE_SIZES_10688 = (1, 17, 33, 49, 65, 81, 97, 113)


def cu_seqlen_entries(max_batch_size):
    """``cu_seqlen`` capacity: ``max_batch_size + 1`` entries (NVIDIA/TensorRT-LLM#10688)."""
    return max_batch_size + 1


def cu_seqlen_demand(capture_batch_size):
    """A graph captured at batch ``b`` fills ``b + 1`` cumulative-length entries."""
    return capture_batch_size + 1


def autodeploy_capture_size_fixed(capture_batch_size, max_batch_size):
    """Invariant of the #10687 fix, ``max(capture sizes) <= max_batch_size``, as a clamp (the exact
    fix expression is not recorded)."""
    return minimum(capture_batch_size, max_batch_size)


def max_cuda_graph_bs_before_5076(max_batch_size, max_num_tokens):
    """Before NVIDIA/TensorRT-LLM#5076: with a small ``max_num_tokens`` the largest graph batch is
    ``max_num_tokens`` (``min(max_batch_size, max_num_tokens)``), ignoring draft tokens."""
    return minimum(max_batch_size, max_num_tokens)


def max_cuda_graph_bs_fixed(max_batch_size, max_num_tokens, max_draft_len):
    """Invariant of #5076, ``(1 + max_draft_len) * max_cuda_graph_bs <= max_num_tokens``, as the
    largest batch satisfying it (exact fix expression not recorded)."""
    return minimum(max_batch_size, max_num_tokens // (1 + max_draft_len))


def graph_input_tokens(max_cuda_graph_bs, max_draft_len):
    """Tokens a generation graph at batch ``bs`` takes: ``(1 + max_draft_len) * bs``."""
    return (1 + max_draft_len) * max_cuda_graph_bs


def scheduled_tokens_before_16101(num_context_tokens, num_generation_requests, runtime_draft_len):
    """Tokens the scheduler charged before NVIDIA/TensorRT-LLM#16101 with ``MTP_EAGLE_ONE_MODEL``:
    its draft-token loop is skipped (``get_spec_drafter()`` is None), so one token per generation
    request."""
    del runtime_draft_len
    return num_context_tokens + num_generation_requests


def scheduled_tokens_16101(num_context_tokens, num_generation_requests, runtime_draft_len):
    """#16101: the scheduler reserves the draft tokens, ``1 + runtime_draft_len`` per generation
    request (invariant from the corpus; exact code not recorded)."""
    return num_context_tokens + num_generation_requests * (1 + runtime_draft_len)


def forward_tokens(num_context_tokens, num_generation_requests, runtime_draft_len):
    """Tokens the forward pass builds: ``1 + runtime_draft_len`` per generation request; the
    ``total_num_tokens <= max_num_tokens`` assertion checks this."""
    return num_context_tokens + num_generation_requests * (1 + runtime_draft_len)
