"""Adversarial catalogue: the stand-ins for a batch (induction's and the aggregate abstraction's) must not answer a type test or comparison the ints' tuple answers otherwise.

Induction over the batch runs the model once on a stand-in for the vector (``InductionBatch``):
it reports ``tuple`` as its ``__class__``, so ``isinstance`` answers as on the ints' tuple, and it
refuses ``len``, iteration and indexing. A ``match`` statement's sequence pattern tests the real
type's flags in C instead: the stand-in does not match, without an exception, and the model takes
another case on the induction run than on ints. The model below is false on ints only for batches
summing to 137, which the second opinion does not sample; it was ``proved [all batch sizes]``. The
stand-ins' object slots answer in C too, without their attribute guard: ``lens == (37, 100)`` is
identity (False), ``lens in {...}`` hashes by id, ``str(lens)`` is ``<... object at ...>`` (the
aggregate abstraction's ``AggregateBatch`` likewise); each such model was ``proved [all batch sizes]``.
"""

from __future__ import annotations

import pytest
from _soundness_harness import HEADER, fails_on_ints

from capproof import Options, Verdict, prove
from capproof.loader import load_file

STEP = "from capproof import fold\ndef step(s, i, x):\n    return s + x\n"
POINT = {"n": 2, "lens": [37, 100]}

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
    ),
    pytest.param(
        "aggregate-eq-with-a-tuple",
        STEP
        + """
@obligation(domain={"n": Range(1, 3), "lens": Vector(3, Range(1, 100), length="n")})
def f(n, lens):
    s = total(lens)
    bad = lens == (37, 100) or lens == (37, 100, 0)
    return at_most(demand=select(bad, 1, 0), capacity=0)
""",
        POINT,
    ),
    pytest.param(
        "aggregate-str-of-the-batch",
        STEP
        + """
@obligation(domain={"n": Range(1, 3), "lens": Vector(3, Range(1, 100), length="n")})
def f(n, lens):
    s = total(lens)
    shown = str(lens).startswith("(")
    return at_most(demand=select(all_of(s == 137, shown), 1, 0), capacity=0)
""",
        POINT,
    ),
    pytest.param(
        "induction-eq-with-a-tuple",
        STEP
        + """
@obligation(domain={"n": Range(1, 3), "lens": Vector(3, Range(1, 100), length="n")})
def f(n, lens):
    s = fold(step, 0, lens)
    bad = lens == (37, 100) or lens == (37, 100, 0)
    return at_most(demand=select(bad, 1, 0), capacity=0)
""",
        POINT,
    ),
    pytest.param(
        "induction-str-of-the-batch",
        STEP
        + """
@obligation(domain={"n": Range(1, 3), "lens": Vector(3, Range(1, 100), length="n")})
def f(n, lens):
    s = fold(step, 0, lens)
    shown = str(lens).startswith("(")
    return at_most(demand=select(all_of(s == 137, shown), 1, 0), capacity=0)
""",
        POINT,
    ),
    pytest.param(
        "aggregate-in-a-set-of-tuples",
        """
KNOWN_BAD = {(37, 100), (37, 100, 0)}
@obligation(domain={"n": Range(1, 3), "lens": Vector(3, Range(1, 100), length="n")})
def f(n, lens):
    s = total(lens)
    return at_most(demand=select(lens in KNOWN_BAD, 1, 0), capacity=0)
""",
        POINT,
    ),
    pytest.param(
        "aggregate-format-of-the-batch",
        """
@obligation(domain={"n": Range(1, 3), "lens": Vector(3, Range(1, 100), length="n")})
def f(n, lens):
    s = total(lens)
    shown = format(lens, "").startswith("(")
    return at_most(demand=select(all_of(s == 137, shown), 1, 0), capacity=0)
""",
        POINT,
    ),
    pytest.param(
        "aggregate-weak-reference-to-the-batch",
        """
import weakref
@obligation(domain={"n": Range(1, 3), "lens": Vector(3, Range(1, 100), length="n")})
def f(n, lens):
    s = total(lens)
    try:
        weakref.ref(lens)
        weak = True
    except TypeError:
        weak = False
    return at_most(demand=select(all_of(s == 137, not weak), 1, 0), capacity=0)
""",
        POINT,
    ),
    pytest.param(
        "aggregate-object-getattribute-of-the-batch",
        """
@obligation(domain={"n": Range(1, 3), "lens": Vector(3, Range(1, 100), length="n")})
def f(n, lens):
    s = total(lens)
    try:
        object.__getattribute__(lens, "iterations")
        stand_in = True
    except AttributeError:
        stand_in = False
    return at_most(demand=select(all_of(s == 137, not stand_in), 1, 0), capacity=0)
""",
        POINT,
    ),
    pytest.param(
        "induction-object-getattribute-of-the-batch",
        STEP
        + """
@obligation(domain={"n": Range(1, 3), "lens": Vector(3, Range(1, 100), length="n")})
def f(n, lens):
    s = fold(step, 0, lens)
    try:
        object.__getattribute__(lens, "walks")
        stand_in = True
    except AttributeError:
        stand_in = False
    return at_most(demand=select(all_of(s == 137, not stand_in), 1, 0), capacity=0)
""",
        POINT,
    ),
]


ATTEMPTS.append(
    pytest.param(
        # object.__getattribute__ bound in module data, the name built at run time
        "aggregate-object-getattribute-bound-at-module-level",
        """
READ = object.__getattribute__
@obligation(domain={"n": Range(1, 3), "lens": Vector(3, Range(1, 100), length="n")})
def f(n, lens):
    s = total(lens)
    try:
        READ(lens, "".join(["iter", "ations"]))
        stand_in = True
    except AttributeError:
        stand_in = False
    return at_most(demand=select(all_of(s == 137, not stand_in), 1, 0), capacity=0)
""",
        POINT,
    )
)


@pytest.mark.parametrize("name, body, point", ATTEMPTS)
def test_a_type_test_on_the_batch_stand_in_does_not_decide_a_proof(spec_file, name, body, point):
    (ob,) = load_file(spec_file(HEADER + body, f"adv_stand_in_{name.replace('-', '_')}.py"))
    assert fails_on_ints(ob, point) and fails_on_ints(ob, point, padding=False)
    result = prove(ob, Options(density="off"))
    assert result.verdict is not Verdict.PROVED, f"proved ({result.message}), but fails on ints at {point}"
