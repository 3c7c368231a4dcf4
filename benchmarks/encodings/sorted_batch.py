"""Robust encodings: symmetry breaking. A claim and assumptions that see a batch only
order-independently (a count over every entry, a total) get the batch sorted in the bounded
encoding; an order-dependent claim (``v[0] <= v[-1]``) does not. ``REPRO_N`` entries (default 64).
Run by benchmarks/encodings.py; see docs/performance.md."""

import os

from capproof import Range, Vector, at_most, obligation
from capproof.arith import count, total

N = int(os.environ.get("REPRO_N", 64))


@obligation(domain={"v": Vector(N, Range(0, 8))}, expect="counterexample")
def order_dependent(v):
    return at_most(first=v[0], last=v[-1])


@obligation(
    domain={"v": Vector(N, Range(0, 64)), "budget": Range(1, 4096)},
    assumptions={"budget": lambda v, budget: total(v) <= budget},
    expect="proved",
)
def long_requests_fit(v, budget):
    return at_most(long_rows=32 * count(x >= 32 for x in v), budget=budget)


@obligation(
    domain={"v": Vector(N, Range(0, 64)), "budget": Range(1, 4096)},
    assumptions={"budget": lambda v, budget: total(v) <= budget},
    expect="counterexample",
)
def long_requests_fit_cex(v, budget):
    return at_most(long_rows=33 * count(x >= 32 for x in v), budget=budget)
