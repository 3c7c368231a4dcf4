"""Adversarial catalogue: "proved" covers every batch alone, not only the batch padded.

The symbolic run sees a ``Vector`` as its ``Padded`` tuple (the active entries, then the
``fill``); the guarantee (docs/soundness.md) is that the claim holds on ints on each batch padded
to its size *and alone*. The batch alone is checked at the points a proof or the second opinion
samples. A model whose result on the batch alone differs from the padded one only at a point none
of them samples (``k == 37`` beside an empty or short batch) was proved:

- ``max_of`` of an empty batch raises ``ValueError`` alone; on the padded tuple it returns the
  fill, so the model's ``except ValueError`` fallback runs only alone;
- ``batch[0]`` of an empty batch raises ``IndexError`` alone (the fallback runs only alone);
- ``batch[-1]`` is the fill padded, the last request alone; ``len(batch)`` is the vector's size
  padded, the batch length alone;
- a model that raises on the batch alone at an admitted point (``q[1]`` with one request,
  ``max_of`` of an empty batch without a fallback): the second opinion skips points where the
  model raises.

Each is compared with brute force on ints, padded and alone (``_soundness_harness.check``: raising
at an admitted point refutes "proved"); ``xfail(strict=True)`` while the verdict is a false proof.
The same model through ``capproof bound``: a sufficient bound where the batch alone is short.
"""

from __future__ import annotations

import pytest
from _soundness_harness import check

from capproof.bound import bound_obligation
from capproof.loader import load_file

OPEN = pytest.mark.xfail(strict=True, reason="proved, but false on the batch alone at an unsampled point")

CASES = {
    "max-of-an-empty-batch-caught": """
@obligation(domain={"k": Range(0, 100), "n": Range(0, 2), "lens": Vector(2, Range(0, 3), length="n")})
def longest(k, n, lens):
    try:
        m = max_of(lens)
    except ValueError:   # no request scheduled
        m = 3 + (k == 37)
    return at_most(demand=m, capacity=3)
""",
    "first-request-of-an-empty-batch-caught": """
@obligation(domain={"k": Range(0, 100), "n": Range(0, 2), "lens": Vector(2, Range(0, 3), length="n")})
def first(k, n, lens):
    try:
        f = lens[0]
    except IndexError:   # nothing scheduled
        f = 3 + (k == 37)
    return at_most(demand=f, capacity=3)
""",
    "last-request-is-the-fill-padded": """
@obligation(domain={"k": Range(0, 100), "n": Range(1, 2), "lens": Vector(3, Range(0, 3), length="n")})
def last(k, n, lens):
    return at_most(demand=select(k == 37, lens[-1], 0), capacity=0)
""",
    "len-of-the-batch-is-its-size-padded": """
@obligation(domain={"k": Range(0, 100), "n": Range(1, 2), "lens": Vector(3, Range(0, 3), length="n")})
def num_reqs(k, n, lens):
    return at_most(demand=3, capacity=select(k == 37, len(lens), 3))
""",
    "max-of-an-empty-batch-raises-alone": """
@obligation(domain={"n": Range(0, 2), "lens": Vector(2, Range(1, 3), length="n")})
def longest_fits(n, lens):
    return at_most(demand=max_of(lens), capacity=3)
""",
    "raises-alone-at-an-admitted-point": """
@obligation(domain={"n": Range(1, 3), "q": Vector(3, Range(0, 3), length="n")})
def second_request(n, q):
    return at_most(demand=q[0] + q[1], capacity=6)
""",
}


@pytest.mark.parametrize("name", [pytest.param(k, marks=OPEN) for k in CASES])
def test_a_proof_holds_on_the_batch_alone(spec_file, name):
    check(spec_file, name, CASES[name])


@OPEN
def test_bound_is_not_sufficient_where_the_batch_alone_is_short(spec_file):
    """``bound`` of the first model: min slack 0, none insufficient; alone at ``k == 37`` with an
    empty batch the demand is 4 over a capacity of 3."""
    from test_adversarial_bound import HEADER, brute_check

    (ob,) = load_file(spec_file(HEADER + CASES["max-of-an-empty-batch-caught"], "advb_empty_alone.py"))
    brute_check(ob, bound_obligation(ob))
