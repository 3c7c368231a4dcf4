"""vLLM gated-delta-net (GDN) spec-decode state index: ``num_accepted_tokens - 1`` without a floor.

Corpus case C5 ``vllm-gdn-num-accepted-minus-one``. Checked by Z3 (spec/per_batch_buffers.py).

Units: ``num_accepted_tokens`` and ``num_speculative_tokens`` (``K``) are token counts; the
result is a **column** of the request's row of ``ssm_state_indices`` (valid columns ``0 .. K``).
"""

from __future__ import annotations

from capproof import maximum

__all__ = ["state_index_column", "state_index_column_fixed"]


def state_index_column(num_accepted_tokens):
    """``i_t = num_accepted_tokens[i_n] - 1`` in ``fused_recurrent_gated_delta_rule_fwd_kernel`` and
    ``fused_sigmoid_gating_delta_rule_update_kernel`` (vLLM, as quoted in vllm-project/vllm#50021
    and vllm-project/vllm#48475)."""
    return num_accepted_tokens - 1


def state_index_column_fixed(num_accepted_tokens):
    """The proposed fix (vllm-project/vllm#50021, open): ``max(num_accepted - 1, 0)``, as
    ``src_off = tl.maximum(num_accepted - 1, 0)`` in vLLM ``vllm/v1/worker/mamba_utils.py``."""
    return maximum(num_accepted_tokens - 1, 0)
