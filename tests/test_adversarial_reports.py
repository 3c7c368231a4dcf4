"""Adversarial catalogue: a report says what was proved, no more.

A fixed-size Vector (no ``length``: exactly ``size`` entries, e.g. one count per expert) decided
on the aggregate abstraction was reported ``all batch sizes`` / "every batch size", though the
abstraction fixes the entry count at ``size``.
"""

from __future__ import annotations

from _soundness_harness import check

HEADER = "from capproof import Range, Vector, obligation, at_most, total, max_of\n"


def test_a_fixed_size_vector_is_not_reported_for_every_batch_size(spec_file):
    result = check(spec_file, "fixed-size-vector", """
@obligation(domain={"counts": Vector(4, Range(0, 8))})
def fits(counts):
    return at_most(demand=total(counts), capacity=32)
""", header=HEADER)
    assert result.verdict.value == "proved", result.message
    assert result.encoding != "all batch sizes", result.encoding
    assert "every batch size" not in result.message, result.message
    assert "4 entries" in result.message, result.message
