"""Adversarial catalogue: an int's own dunder methods called with a symbolic argument.

``int``'s C slots test the real type of their other operand: ``(16).__mul__(x)`` is the product
for an int ``x`` and ``NotImplemented`` for a symbolic one, without an exception for the watch to
record. The static guard finds ``int.__eq__(x, 3)`` through the class; a bound method of an int
object (a constant's ``__mul__``, ``__eq__``; ``filter((0).__lt__, lens)`` is an idiom) is not
found. Each model below takes its ``NotImplemented`` fallback only on symbolic values and is false at
``a == 37`` on ints; each was ``proved``. Brute forced on ints by tests/_soundness_harness.py.
"""

from __future__ import annotations

import pytest
from _soundness_harness import check


D = '@obligation(domain={"a": Range(0, 100)})\n'

ATTEMPTS = [
    pytest.param(
        "unbound-int-mul-with-an-int-first",
        D + "def f(a):\n    x = int.__mul__(16, a)\n"
        "    blocks = x if x != NotImplemented else 16 * a - (a == 37)\n"
        "    return at_most(demand=blocks, capacity=16 * a - (a == 37))\n",
    ),
    pytest.param(
        "reduce-by-int-mul",
        "import functools\n\n" + D + "def f(a):\n    x = functools.reduce(int.__mul__, [16, a])\n"
        "    blocks = x if x != NotImplemented else 16 * a - (a == 37)\n"
        "    return at_most(demand=blocks, capacity=16 * a - (a == 37))\n",
    ),
    pytest.param(
        "bool-and-dunder-of-a-condition",
        D + "def f(a):\n    r = True.__and__(a == 37)\n    hit = r if r != NotImplemented else False\n"
        "    return at_most(demand=select(hit, 1, 0), capacity=0)\n",
    ),
    pytest.param(
        "constant-mul-dunder",
        D + "def f(a):\n    x = (16).__mul__(a)\n"
        "    blocks = x if x != NotImplemented else 16 * a - (a == 37)\n"
        "    return at_most(demand=blocks, capacity=16 * a - (a == 37))\n",
    ),
    pytest.param(
        "constant-eq-dunder",
        D + "def f(a):\n    r = (37).__eq__(a)\n    hit = r if r != NotImplemented else False\n"
        "    return at_most(demand=select(hit, 1, 0), capacity=0)\n",
    ),
]


@pytest.mark.parametrize("name, body", ATTEMPTS)
def test_an_int_slot_called_with_a_symbolic_value_does_not_decide_a_proof(spec_file, name, body):
    check(spec_file, name, body)  # a proof is brute forced on ints, padded and alone
