"""Adversarial catalogue: a method ``dataclasses`` wrote for one class, set on another.

capproof/guard.py trusts a dataclass method (``__eq__``, ``__init__`` ...) when ``dataclasses``'
own code executed it *and* the class it is found on has only identifier field names
(``dataclasses`` writes each name into the method's text, so a field named
``x)if(type(self.x)is not int)else()and(self.x`` makes its ``__eq__`` a type test). The field
names checked are the class's where the method is looked up, not those of the class the method
was written for: the ``__eq__`` written for a class with the spliced field name, assigned to a
clean dataclass (``K.__eq__ = C0.__eq__``), is trusted. Set on a subclass instead, it is audited
(an ``error``). The same when the class's ``__dataclass_fields__`` is re-keyed after ``dataclasses``
wrote the method, when a plain class declares an empty one, and when the method is passed in
``make_dataclass``'s namespace.

Each model reads "symbolic" on the symbolic run only and is false at ``a == 37`` on ints. Brute
forced on ints by tests/_soundness_harness.py.
"""

from __future__ import annotations

import pytest
from _soundness_harness import check

SPLICED = (
    "from dataclasses import dataclass, field\n\n"
    "N = 'x)if(type(self.x)is not int)else()and(self.x'\n\n\n"
    "def _init(self, x):\n    self.x = x\n\n\n"
    "C0 = dataclass(init=False, repr=False)(\n"
    "    type('C0', (), {'__init__': _init, '__annotations__': {'x': int, N: int}, N: field(init=False, repr=False)})\n"
    ")\n\n\n@dataclass\nclass K:\n    x: int\n\n\n"
)
A = '@obligation(domain={"a": Range(0, 100)})\n'
ATTEMPTS = [
    pytest.param(
        "spliced-eq-set-on-a-clean-dataclass",
        SPLICED
        + "K.__eq__ = C0.__eq__\n\n\n"
        + A
        + "def f(a):\n    sym = bool(K(a) == K(a))\n"
        + "    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)\n",
    ),
    pytest.param(
        "fields-re-keyed-to-identifiers-after-the-method-was-written",
        SPLICED.replace("@dataclass\nclass K:\n    x: int\n\n\n", "")
        + "C0.__dataclass_fields__ = {('y' if k == N else k): v for k, v in C0.__dataclass_fields__.items()}\n\n\n"
        + A
        + "def f(a):\n    sym = bool(C0(a) == C0(a))\n"
        + "    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)\n",
    ),
    pytest.param(
        "spliced-eq-on-a-plain-class-with-an-empty-fields-dict",
        SPLICED
        + "class P:\n    __dataclass_fields__ = {}\n    __eq__ = C0.__eq__\n\n    def __init__(self, x):\n        self.x = x\n\n\n"
        + A
        + "def f(a):\n    sym = bool(P(a) == P(a))\n"
        + "    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)\n",
    ),
    pytest.param(
        "spliced-eq-in-the-namespace-of-make-dataclass",
        "import dataclasses\n"
        + SPLICED
        + "M = dataclasses.make_dataclass('M', [('x', int)], namespace={'__eq__': C0.__eq__}, eq=False)\n\n\n"
        + A
        + "def f(a):\n    sym = bool(M(a) == M(a))\n"
        + "    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)\n",
    ),
    pytest.param(
        "spliced-eq-set-on-a-subclass-is-audited",
        SPLICED
        + "class K2(K):\n    __eq__ = C0.__eq__\n\n\n"
        + A
        + "def f(a):\n    sym = bool(K2(a) == K2(a))\n"
        + "    return at_most(demand=select(all_of(a == 37, not sym), 1, 0), capacity=0)\n",
    ),
]


@pytest.mark.parametrize("name, body", ATTEMPTS)
def test_a_dataclass_method_moved_to_another_class_is_audited(spec_file, name, body):
    check(spec_file, name, body)  # a proof is brute forced on ints, padded and alone
