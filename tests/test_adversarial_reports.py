"""Adversarial catalogue: a report says what was proved, no more.

A fixed-size Vector (no ``length``: exactly ``size`` entries, e.g. one count per expert) decided
on the aggregate abstraction was reported ``all batch sizes`` / "every batch size", though the
abstraction fixes the entry count at ``size``.
"""

from __future__ import annotations

from _soundness_harness import check

HEADER = "from capproof import Range, Vector, obligation, at_most, total, max_of\n"


def test_a_fixed_size_vector_is_not_reported_for_every_batch_size(spec_file):
    result = check(
        spec_file,
        "fixed-size-vector",
        """
@obligation(domain={"counts": Vector(4, Range(0, 8))})
def fits(counts):
    return at_most(demand=total(counts), capacity=32)
""",
        header=HEADER,
    )
    assert result.verdict.value == "proved", result.message
    assert result.encoding != "all batch sizes", result.encoding
    assert "every batch size" not in result.message, result.message
    assert "4 entries" in result.message, result.message


def test_a_claim_wrapped_by_a_decorator_shows_the_decorator(spec_file):
    """The report shows the code whose result was proved: a functools.wraps decorator that changes
    the claim's result is shown with the claim it wraps."""
    result = check(
        spec_file,
        "wrapped-claim",
        """
import functools

def lenient(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs) or True
    return wrapper

@obligation(domain={"n": Range(0, 100)})
@lenient
def fits(n):
    return at_most(demand=n, capacity=10)
""",
        header="from capproof import Range, obligation, at_most\n",
    )
    assert "wrapper" in result.claim_source and "or True" in result.claim_source, result.claim_source
    assert "at_most(demand=n, capacity=10)" in result.claim_source, result.claim_source
