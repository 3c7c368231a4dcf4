"""Adversarial catalogue: an int subclass's reflected operators beyond ``+``, ``-``, ``*`` and ``==``.

For ``x op y`` Python calls ``y``'s reflected method first when ``type(y)`` is a proper subclass of
``type(x)`` that overrides it: on ints ``37 ** W(1)`` calls ``W.__rpow__``. Against a symbolic
``a`` the left type is not int, so ``SymInt``'s own operator takes ``W(1)`` as the plain int 1.
capproof refuses such an operand where it makes the operand a Z3 term (``to_z3_int``: ``+``, ``-``,
``*``, comparisons, ``==``, ``divmod``), but ``**``, ``>>``, ``<<``, ``&``, ``|``, ``^``, ``//`` and ``%`` with a
concrete int operand never reach that check: each model
is false at ``a == 37`` on ints and was ``proved``. Brute forced on ints by
tests/_soundness_harness.py.
"""

from __future__ import annotations

import pytest
from _soundness_harness import check

D = '@obligation(domain={"a": Range(0, 100)})\n'
OPEN = pytest.mark.xfail(
    strict=True, reason="an int subclass's reflected operator is bypassed by a symbolic left operand"
)


def _reflected(dunder: str, op: str) -> str:
    # on ints x is W's -1; on the symbolic run it is ``a op 1``, never negative for a in 0..100
    return (
        f"class W(int):\n    def {dunder}(self, other, *rest):\n        return -1\n\n\n"
        + D
        + f"def f(a):\n    x = a {op} W(1)\n"
        + "    return at_most(demand=select(all_of(a == 37, x < 0), 1, 0), capacity=0)\n"
    )


ATTEMPTS = [
    pytest.param("reflected-pow", _reflected("__rpow__", "**"), marks=OPEN),
    pytest.param("reflected-rshift", _reflected("__rrshift__", ">>"), marks=OPEN),
    pytest.param("reflected-and", _reflected("__rand__", "&"), marks=OPEN),
    pytest.param("reflected-lshift", _reflected("__rlshift__", "<<"), marks=OPEN),
    pytest.param("reflected-or", _reflected("__ror__", "|"), marks=OPEN),
    pytest.param("reflected-xor", _reflected("__rxor__", "^"), marks=OPEN),
    pytest.param("reflected-floordiv", _reflected("__rfloordiv__", "//"), marks=OPEN),
    pytest.param("reflected-mod", _reflected("__rmod__", "%"), marks=OPEN),
    pytest.param(
        "reflected-lshift-through-operator-lshift",
        "import operator\n\n\nclass W(int):\n    def __rlshift__(self, other, *rest):\n        return -1\n\n\n"
        + D
        + "def f(a):\n    x = operator.lshift(a, W(1))\n"
        + "    return at_most(demand=select(all_of(a == 37, x < 0), 1, 0), capacity=0)\n",
        marks=OPEN,
    ),
    pytest.param(
        "reflected-and-through-a-reduce",
        "import functools\nimport operator\n\n\nclass W(int):\n    def __rand__(self, other, *rest):\n        return -1\n\n\n"
        + D
        + "def f(a):\n    x = functools.reduce(operator.and_, [a, W(1)])\n"
        + "    return at_most(demand=select(all_of(a == 37, x < 0), 1, 0), capacity=0)\n",
        marks=OPEN,
    ),
]

# the same through the batch strategies: W's operator differs from the int's only for an entry 37
DV = '@obligation(domain={"n": Range(1, 3), "lens": Vector(3, Range(1, 100), length="n")})\n'
ATTEMPTS += [
    pytest.param(
        "reflected-pow-in-an-induction-step",
        "from capproof import fold\n\n\nclass W(int):\n    def __rpow__(self, other, *rest):\n"
        "        return other if other != 37 else -1000\n\n\ndef step(s, i, x):\n    return s + x ** W(1)\n\n\n"
        + DV
        + "def f(n, lens):\n    return at_most(demand=total(lens), capacity=fold(step, 0, lens))\n",
        marks=[OPEN, pytest.mark.slow],
    ),
    pytest.param(
        "reflected-rshift-in-an-aggregate",
        "class W(int):\n    def __rrshift__(self, other, *rest):\n        return other if other != 37 else -1000\n\n\n"
        + DV
        + "def f(n, lens):\n    s = total(x >> W(0) for x in lens)\n    return at_most(demand=total(lens), capacity=s)\n",
        marks=OPEN,
    ),
]


@pytest.mark.parametrize("name, body", ATTEMPTS)
def test_an_int_subclass_reflected_operator_does_not_decide_a_proof(spec_file, name, body):
    check(spec_file, name, body)  # a proof is brute forced on ints, padded and alone
