"""Shared by the batch spec files (the loader skips files starting with ``_``).

Batch sizes of the ``Vector`` parameters and the scheduler facts every decode batch obeys.
"""

import os

from capproof import all_of, total
from models.vllm.spec_decode import uniform_decode_query_len

#: Requests per batch vector. ``CAPPROOF_BATCH`` overrides it for measurement only
#: (docs/performance.md); proofs/ are generated with the default.
BATCH = int(os.environ.get("CAPPROOF_BATCH", "64"))
#: The uniform-split proof (a chain over the batch) is the expensive one: 16 requests prove in
#: ~2 s, 32 in ~9 s, 64 exhaust the default rlimit (docs/performance.md).
SPLIT_BATCH = int(os.environ.get("CAPPROOF_SPLIT_BATCH", "16"))


def _decode_lens_fit(decode_lens, num_speculative_tokens):
    """Every request's decode length (tokens) within one uniform spec-decode step: the step's
    length is the same for every request, so it is computed once, not once per request."""
    step = uniform_decode_query_len(num_speculative_tokens)
    return all_of(*(d <= step for d in decode_lens))


#: A decode batch ``decode_lens`` (tokens per request) under the scheduler's budget.
DECODE_BATCH_FACTS = {
    "decode length <= 1 + num_speculative_tokens": _decode_lens_fit,
    "sum of scheduled tokens <= max_num_batched_tokens": lambda decode_lens, max_num_batched_tokens: (
        total(decode_lens) <= max_num_batched_tokens
    ),
}
