"""Adversarial catalogue: the int-subclass operator check after the class changes (read at each operand, never remembered per class).

Every operator of a symbolic value refuses a concrete operand of an int subclass that defines an
int operator itself (Python calls the subclass's reflected method first against an int: ``37 **
W(1)`` runs ``W.__rpow__``). The answer was remembered per class in a dict: a class that gains
such a method after its first use (``W.__rpow__ = ...``), or a second class that compares and
hashes equal to the first (a metaclass ``__eq__``/``__hash__``), is read again as having none, and
the symbolic run takes ``W(1)`` as the plain int 1. On ints the model is false at ``a == 37``
(``lens == [37, 100]`` for the batch strategies). Brute forced on ints by tests/_soundness_harness.py.
"""

from __future__ import annotations

import pytest
from _soundness_harness import check

D = '@obligation(domain={"a": Range(0, 100)})\n'
DV = '@obligation(domain={"n": Range(1, 3), "lens": Vector(3, Range(1, 100), length="n")})\n'
CLAIM = "    return at_most(demand=select(a == 37, x - 37, 0), capacity=0)\n"


def _gains_method(dunder: str, op: str, operand: int) -> str:
    # first use with W plain (checked: no operator of its own), then W gains the reflected method:
    # on ints x is 99 at a == 37; on the symbolic run it is ``a op operand``
    return (
        D
        + "def f(a):\n    class W(int):\n        pass\n\n"
        + f"    _ = a {op} W({operand})\n"
        + f"    W.{dunder} = lambda self, other, *rest: 99\n"
        + f"    x = a {op} W({operand})\n"
        + CLAIM
    )


ATTEMPTS = [
    pytest.param("class-gains-rpow-after-first-use", _gains_method("__rpow__", "**", 1)),
    pytest.param("class-gains-rand-after-first-use", _gains_method("__rand__", "&", 255)),
    pytest.param(
        "module-class-gains-rlshift-then-loses-it",
        "class W(int):\n    pass\n\n\n"
        + D
        + "def f(a):\n    _ = a << W(0)\n    W.__rlshift__ = lambda self, other: 99\n"
        + "    try:\n        x = a << W(0)\n    finally:\n        del W.__rlshift__\n"
        + CLAIM,
    ),
    pytest.param(
        "metaclass-equal-classes-share-the-answer",
        "class Meta(type):\n    def __eq__(cls, other):\n        return True\n\n    def __hash__(cls):\n        return 0\n\n\n"
        "class P(int, metaclass=Meta):\n    pass\n\n\n"
        "class W(int, metaclass=Meta):\n    def __rpow__(self, other, *rest):\n        return 99\n\n\n"
        + D
        + "def f(a):\n    _ = a ** P(1)\n    x = a ** W(1)\n"
        + CLAIM,
    ),
    pytest.param(
        "class-gains-rpow-in-an-induction-step",
        "from capproof import fold\n\n\n"
        + DV
        + "def f(n, lens):\n    class W(int):\n        pass\n\n    _ = lens[0] ** W(1)\n"
        + "    W.__rpow__ = lambda self, other, *rest: other - (other == 37)\n\n"
        + "    def step(s, i, x):\n        return s + x ** W(1)\n\n"
        + "    return at_most(demand=total(lens), capacity=fold(step, 0, lens))\n",
        marks=pytest.mark.slow,
    ),
    pytest.param(
        "class-gains-rrshift-in-an-aggregate",
        DV
        + "def f(n, lens):\n    class W(int):\n        pass\n\n    _ = lens[0] >> W(0)\n"
        + "    W.__rrshift__ = lambda self, other: other - (other == 37)\n"
        + "    return at_most(demand=total(lens), capacity=total(x >> W(0) for x in lens))\n",
        marks=pytest.mark.slow,
    ),
]


@pytest.mark.parametrize("name, body", ATTEMPTS)
def test_an_int_subclass_changed_after_its_check_does_not_decide_a_proof(spec_file, name, body):
    check(spec_file, name, body)  # a proof is brute forced on ints, padded and alone
