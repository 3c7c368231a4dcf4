"""Adversarial catalogue: the stand-in induction uses for a batch must not answer a type test the ints' tuple answers otherwise.

Induction over the batch runs the model once on a stand-in for the vector (``InductionBatch``):
it reports ``tuple`` as its ``__class__``, so ``isinstance`` answers as on the ints' tuple, and it
refuses ``len``, iteration and indexing. A ``match`` statement's sequence pattern tests the real
type's flags in C instead: the stand-in does not match, without an exception, and the model takes
another case on the induction run than on ints. The model below is false on ints only for batches
summing to 137, which the second opinion does not sample; it was ``proved [all batch sizes]``.
"""

from __future__ import annotations

import pytest
from _soundness_harness import HEADER, fails_on_ints

from capproof import Options, Verdict, prove
from capproof.loader import load_file

ATTEMPTS = [
    pytest.param(
        "match-sequence-pattern-on-the-batch",
        """
from capproof import fold
def step(s, i, x):
    return s + x
@obligation(domain={"n": Range(1, 3), "lens": Vector(3, Range(1, 100), length="n")})
def f(n, lens):
    s = fold(step, 0, lens)
    match lens:
        case [*_]:
            bad = s == 137
        case _:
            bad = False
    return at_most(demand=select(bad, 1, 0), capacity=0)
""",
        {"n": 2, "lens": [37, 100]},
        marks=[pytest.mark.xfail(strict=True, reason="a match sequence pattern fails on the stand-in silently (open)")],
    ),
]


@pytest.mark.parametrize("name, body, point", ATTEMPTS)
def test_a_type_test_on_the_batch_stand_in_does_not_decide_a_proof(spec_file, name, body, point):
    (ob,) = load_file(spec_file(HEADER + body, f"adv_stand_in_{name.replace('-', '_')}.py"))
    assert fails_on_ints(ob, point) and fails_on_ints(ob, point, padding=False)
    result = prove(ob, Options(density="off"))
    assert result.verdict is not Verdict.PROVED, f"proved ({result.message}), but fails on ints at {point}"
