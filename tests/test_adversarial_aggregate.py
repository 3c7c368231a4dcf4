"""Adversarial catalogue: the aggregate abstraction must not prove what ints refute.

The abstraction calls the element function of ``total(f(d) for d in batch)`` once, on a stand-in
entry; an element function with a side effect the claim reads ran once instead of once per entry.
A list derived from the batch (``[s for s in batch]``) saw the padding entries: its ``min_of``
was proved though false on the batch alone. Each attempt is brute forced on ints, padded and
alone (tests/_soundness_harness.py), and must not be proved.
"""

from __future__ import annotations

import pytest

from _soundness_harness import check

HEADER = "from capproof import Range, Vector, obligation, at_most, any_of, all_of, total, min_of, max_of\n"

ATTEMPTS = [
    ("element-function-with-a-side-effect", """
seen = []
def f(d):
    seen.append(d)
    return d
@obligation(domain={"n": Range(1, 3), "batch": Vector(3, Range(0, 20), length="n")})
def ob(n, batch):
    seen.clear()
    t = total(f(d) for d in batch)
    return any_of(t != 37, len(seen) == 1)
"""),
    ("element-function-counting-in-a-closure", """
@obligation(domain={"n": Range(1, 3), "batch": Vector(3, Range(0, 20), length="n")})
def ob(n, batch):
    calls = [0]
    def f(d):
        calls[0] += 1
        return d
    t = total(f(d) for d in batch)
    return any_of(t != 37, calls[0] == 1)
"""),
    ("derived-list-sees-the-padding", """
@obligation(domain={"n": Range(1, 2), "batch": Vector(3, Range(1, 5), length="n", fill=0)})
def ob(n, batch):
    return min_of([s for s in batch]) <= 3
"""),
]


@pytest.mark.parametrize("name, body", ATTEMPTS, ids=[a[0] for a in ATTEMPTS])
def test_an_element_function_runs_as_on_ints_or_the_abstraction_stands_aside(spec_file, name, body):
    result = check(spec_file, name, body, header=HEADER)
    assert result.verdict.value != "proved", result.message
