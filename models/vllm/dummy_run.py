"""vLLM 0.33.0 V2 model runner: the request and token counts of a non-uniform dummy run.

Checked by Z3 (spec/vllm_0_33_v2_dummy_runs.py); the real tier compares it with vLLM's own
``_dummy_run`` statements run on symbolic sizes (``capproof/engines/vllm/fact_v2_dummy_tokens.py``).

Source: vLLM 0.33.0 ``vllm/v1/worker/gpu/model_runner.py:862-879`` (``GPUModelRunner._dummy_run``,
the ``elif self.speculator is not None:`` branch; ``uniform_decode`` false, as in ``profile_run``,
``:1034-1039``). Units: ``num_tokens``, ``max_num_tokens`` (= ``max_num_batched_tokens``) in
**tokens**; ``max_num_reqs`` (= ``max_num_seqs``) and the returned request count in **requests**;
``num_query_per_req`` / ``num_extra_query_per_req`` the speculator's query rows per request
(``StandaloneARSpeculator``, method ``draft_model``: 1 and 1,
``vllm/v1/worker/gpu/spec_decode/standalone_ar/speculator.py:38``).
"""

from __future__ import annotations

from capproof import minimum

__all__ = ["speculator_dummy_counts"]


def speculator_dummy_counts(num_tokens, max_num_reqs, max_num_tokens, num_query_per_req, num_extra_query_per_req):
    """``(num_reqs, num_tokens)`` of a non-uniform V2 dummy run with a speculator.

    ``num_reqs = min(num_tokens, max_num_reqs)``, capped at ``max_num_tokens // num_query_per_req``;
    ``num_tokens`` capped at ``max_num_tokens - num_reqs * num_extra_query_per_req`` (vLLM 0.33.0
    ``vllm/v1/worker/gpu/model_runner.py:862-879``). Raises ``ZeroDivisionError`` on
    ``num_query_per_req == 0`` (as the engine does)."""
    num_reqs = minimum(num_tokens, max_num_reqs)
    num_reqs = minimum(num_reqs, max_num_tokens // num_query_per_req)
    tokens = minimum(num_tokens, max_num_tokens - num_reqs * num_extra_query_per_req)
    return num_reqs, tokens
