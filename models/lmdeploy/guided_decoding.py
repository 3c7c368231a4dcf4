"""Guided-decoding token bitmask rows vs logits rows (LMDeploy TurboMind; TensorRT-LLM variant).

Corpus case E2 ``lmdeploy-bitmask-vs-logits-rows``. Checked by Z3 (spec/per_batch_buffers.py).

Units: **rows** (one per request in LMDeploy; one per request and draft position in
TensorRT-LLM). ``generating`` is a per-request flag: 1 = still generating, 0 = finished but still waiting in
the batch (its matcher is still there).
``apply_token_bitmask_inplace_cuda.cu`` requires equal first dimensions and aborts otherwise.
"""

from __future__ import annotations

from capproof import minimum, total

__all__ = [
    "bitmask_rows_before_4456",
    "bitmask_rows_4456",
    "logits_rows",
    "trtllm_bitmask_rows_before_15023",
    "trtllm_bitmask_rows_15023",
    "trtllm_logits_rows",
]


def logits_rows(generating, num_reqs):
    """``generation_size``: logits are cut to the requests still generating (``generation.cc``)."""
    del num_reqs
    return total(generating)


def bitmask_rows_before_4456(generating, num_reqs):
    """``d.matchers.size()`` (``guided_decoding.cc``): one matcher per request in the batch,
    finished ones included (before InternLM/lmdeploy#4456)."""
    del generating
    return num_reqs


def bitmask_rows_4456(generating, num_reqs):
    """InternLM/lmdeploy#4456: the bitmask is sliced to the logits batch size."""
    return minimum(bitmask_rows_before_4456(generating, num_reqs), logits_rows(generating, num_reqs))


def trtllm_logits_rows(num_generation_requests, runtime_draft_len):
    """TensorRT-LLM logits rows with a draft-length schedule: ``1 + runtime_draft_len`` per request."""
    return num_generation_requests * (1 + runtime_draft_len)


def trtllm_bitmask_rows_before_15023(num_generation_requests, max_draft_len, runtime_draft_len):
    """Before NVIDIA/TensorRT-LLM#15023 the bitmask followed the configured draft length."""
    del runtime_draft_len
    return num_generation_requests * (1 + max_draft_len)


def trtllm_bitmask_rows_15023(num_generation_requests, max_draft_len, runtime_draft_len):
    """#15023 passes ``runtime_draft_len`` to ``add_batch`` (exact row formula not recorded)."""
    del max_draft_len
    return num_generation_requests * (1 + runtime_draft_len)
