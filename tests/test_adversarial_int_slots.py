"""Adversarial catalogue: an int's own dunder methods called with a symbolic argument.

``int``'s C slots test the real type of their other operand: ``(16).__mul__(x)`` is the product
for an int ``x`` and ``NotImplemented`` for a symbolic one, without an exception for the watch to
record. The static guard finds ``int.__eq__(x, 3)`` through the class; a bound method of an int
object (a constant's ``__mul__``, ``__eq__``; ``filter((0).__lt__, lens)`` is an idiom) is not
found. Likewise ``complex.__eq__`` with a symbolic value and the symbolic value's ``__eq__`` with a
complex both return ``NotImplemented``, so ``a == complex(37, 0)`` is identity (False) where the
int says True. And an ``int`` subclass that overrides a reflected operator or ``__eq__`` is called
first on ints (Python's subclass rule) but never against a symbolic value (not an int to
Python's dispatch). Each model below takes its ``NotImplemented`` fallback only on symbolic values and is false at
``a == 37`` on ints; each was ``proved``. Brute forced on ints by tests/_soundness_harness.py.
"""

from __future__ import annotations

import pytest
from _soundness_harness import check

D = '@obligation(domain={"a": Range(0, 100)})\n'

ATTEMPTS = [
    pytest.param(
        "dynamic-hasattr-of-a-symbolic-values-own-attribute",
        D + 'def f(a):\n    sym = hasattr(a, "".join(["v", "ar"]))\n'
        "    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)\n",
    ),
    pytest.param(
        "dynamic-getattr-of-a-symbolic-values-own-attribute",
        D + 'def f(a):\n    name = "".join(["te", "rm"])\n    try:\n        getattr(a, name)\n        sym = True\n'
        "    except AttributeError:\n        sym = False\n"
        "    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)\n",
    ),
    pytest.param(
        "dynamic-object-getattribute-of-a-symbolic-values-own-attribute",
        D + 'def f(a):\n    name = "".join(["te", "rm"])\n    try:\n        object.__getattribute__(a, name)\n'
        "        sym = True\n    except AttributeError:\n        sym = False\n"
        "    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)\n",
    ),
    pytest.param(
        "dynamic-attrgetter-of-a-symbolic-values-own-attribute",
        "import operator\n\n"
        + D
        + 'def f(a):\n    name = "".join(["te", "rm"])\n    try:\n        operator.attrgetter(name)(a)\n'
        "        sym = True\n    except AttributeError:\n        sym = False\n"
        "    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)\n",
    ),
    pytest.param(
        "dynamic-hasattr-in-a-helper-given-the-name",
        "def has(x, name):\n    return hasattr(x, name)\n\n\n"
        + D
        + 'def f(a):\n    sym = has(a, "".join(["v", "ar"]))\n'
        "    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)\n",
    ),
    pytest.param(
        "foreign-eq-with-an-effect-runs-once",
        D + "def f(a):\n    calls = []\n\n    class Probe:\n        def __eq__(self, other):\n"
        "            calls.append(1)\n            return NotImplemented\n\n"
        "        def __hash__(self):\n            return 0\n\n"
        "    _ = a == Probe()\n    return at_most(demand=select(a == 37, 2 - len(calls), 0), capacity=0)\n",
    ),
    pytest.param(
        # the foreign object on the left: Python calls its __eq__ first, then the symbolic value's
        "foreign-eq-on-the-left-with-an-effect-runs-once",
        D + "def f(a):\n    calls = []\n\n    class Probe:\n        def __eq__(self, other):\n"
        "            calls.append(1)\n            return NotImplemented\n\n"
        "        def __hash__(self):\n            return 0\n\n"
        "    _ = Probe() == a\n    return at_most(demand=select(a == 37, 2 - len(calls), 0), capacity=0)\n",
    ),
    pytest.param(
        "helper-function-named-like-the-slot",
        "def __mul__(x, y):\n    r = x.__mul__(y)\n    return r if r != NotImplemented else 16 * y - (y == 37)\n\n\n"
        + D
        + "def f(a):\n    blocks = __mul__(16, a)\n    return at_most(demand=blocks, capacity=16 * a - (a == 37))\n",
    ),
    pytest.param(
        "slot-bound-at-module-level",
        "MUL = int.__mul__\nNI = NotImplemented\n\n\n"
        + D
        + "def f(a):\n    r = MUL(16, a)\n    blocks = r if r != NI else 16 * a - (a == 37)\n"
        "    return at_most(demand=blocks, capacity=16 * a - (a == 37))\n",
    ),
    pytest.param(
        "slot-from-vars-of-int",
        "NI = NotImplemented\n\n\n"
        + D
        + 'def f(a):\n    r = vars(int)["__mul__"](16, a)\n    blocks = r if r != NI else 16 * a - (a == 37)\n'
        "    return at_most(demand=blocks, capacity=16 * a - (a == 37))\n",
    ),
    pytest.param(
        # the slot held in a table, its NotImplemented told by isinstance (no NotImplemented named)
        "slot-held-in-a-table",
        'OPS = {"mul": int.__mul__}\n\n\n'
        + D
        + 'def f(a):\n    r = OPS["mul"](16, a)\n    blocks = r if isinstance(r, int) else 16 * a - (a == 37)\n'
        "    return at_most(demand=blocks, capacity=16 * a - (a == 37))\n",
    ),
    pytest.param(
        "slot-as-a-default-argument",
        "def scale(x, mul=int.__mul__):\n    r = mul(16, x)\n    return r if isinstance(r, int) else 16 * x - (x == 37)\n\n\n"
        + D
        + "def f(a):\n    return at_most(demand=scale(a), capacity=16 * a - (a == 37))\n",
    ),
    pytest.param(
        "int-subclass-whose-str-is-another-number",
        "class KiB(int):\n    def __str__(self):\n        return str(int(self) << 10)\n\n    __repr__ = __str__\n\n\n"
        + D
        + "def f(a):\n    budget = KiB(4096)\n"
        "    return at_most(demand=select(a == 37, 4096, 0), capacity=select(a == 37, a + budget - 38, 5000))\n",
    ),
    pytest.param(
        # int() of it shows another number too: the numeral must be int's own value
        "int-subclass-whose-int-and-str-are-another-number",
        "class KiB(int):\n    def __int__(self):\n        return int.__int__(self) << 10\n\n"
        "    def __str__(self):\n        return str(int(self))\n\n    __repr__ = __str__\n\n\n"
        + D
        + "def f(a):\n    budget = KiB(4096)\n"
        "    return at_most(demand=select(a == 37, 4096, 0), capacity=select(a == 37, a + budget - 38, 5000))\n",
    ),
    pytest.param(
        "int-subclass-reflected-add",
        "class Saturating(int):\n    def __radd__(self, other):\n        return min(other + int(self), 40)\n\n\n"
        + D
        + "def f(a):\n    x = a + Saturating(5)\n    return at_most(demand=select(a == 37, 42 - x, 0), capacity=0)\n",
    ),
    pytest.param(
        "int-subclass-eq-override",
        "class AnyLen(int):\n    def __eq__(self, other):\n        return True\n\n    __hash__ = int.__hash__\n\n\n"
        + D
        + "def f(a):\n    hit = a == AnyLen(0)\n"
        "    return at_most(demand=select(all_of(a == 37, hit), 1, 0), capacity=0)\n",
    ),
    pytest.param(
        "eq-with-a-complex-number",
        D + "def f(a):\n    hit = a == complex(37, 0)\n    return at_most(demand=select(hit, 1, 0), capacity=0)\n",
    ),
    pytest.param(
        "in-a-list-of-complex-numbers",
        D + "def f(a):\n    return at_most(demand=select(a in [complex(37, 0)], 1, 0), capacity=0)\n",
    ),
    pytest.param(
        "condition-eq-with-a-complex-number",
        D + "def f(a):\n    c = a == 37\n    return at_most(demand=select(c == complex(1, 0), 1, 0), capacity=0)\n",
    ),
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
