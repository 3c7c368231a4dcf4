"""Robust encodings: 'distinct experts per token' written pairwise (as a user writes
it) and as a count. ``REPRO_T`` tokens (default 16) of top-4 over 8 experts; the claim: every
expert receives at most one row per token (a DeepEP-style per-expert buffer of ``T`` rows).
Run by benchmarks/encodings.py; see docs/performance.md for the measured times."""

import os

from capproof import Range, Vector, claim, obligation
from capproof.arith import all_of, count

T = int(os.environ.get("REPRO_T", 16))  # tokens
K = 4  # topk
E = 8  # experts


def _per_expert_rows_fit(topk_ids):
    return claim(all_of(*(count(x == e for x in topk_ids) <= T for e in range(E))), tokens=T)


@obligation(
    domain={"topk_ids": Vector(T * K, Range(0, E - 1))},
    assumptions={
        "distinct experts per token": lambda topk_ids: all_of(
            *(topk_ids[t * K + i] != topk_ids[t * K + j] for t in range(T) for i in range(K) for j in range(i + 1, K))
        )
    },
    expect="proved",
)
def expert_rows_fit_pairwise(topk_ids):
    return _per_expert_rows_fit(topk_ids)


@obligation(
    domain={"topk_ids": Vector(T * K, Range(0, E - 1))},
    assumptions={
        "distinct experts per token": lambda topk_ids: all_of(
            *(count(topk_ids[t * K + j] == e for j in range(K)) <= 1 for t in range(T) for e in range(E))
        )
    },
    expect="proved",
)
def expert_rows_fit_count(topk_ids):
    return _per_expert_rows_fit(topk_ids)
