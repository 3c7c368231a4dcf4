"""Adversarial catalogue: a symbolic value must behave exactly as the int or bool it stands for.

A comparison gives a Python ``bool`` on ints and a symbolic condition in a proof. Every operator,
type test and exception of a bool must be the same on both, or the run on symbolic values is an
``error``: a model that takes another path on symbolic values (an ``except TypeError`` fallback
taken only there, ``isinstance(flag, int)`` false only there, ``~flag`` a logical not only there)
would otherwise be proved though its claim fails on ints. Each attempt is brute forced on ints
(tests/_soundness_harness.py); ``expected`` is the verdict it must get. The claims fail at one
point (``a == 37``) that the int probe's structured points do not reach, so the solver decides.
"""

from __future__ import annotations

import pytest
from _soundness_harness import check

D = '@obligation(domain={"a": Range(0, 100)})\n'

ATTEMPTS = [
    # ~ on a condition is int ~: ~True == -2, ~False == -1 (never a valid index)
    (
        "invert-is-int-invert",
        D
        + """
def f(a):
    return less_than(index=~(a == 37), capacity=4)
""",
        "counterexample",
    ),
    (
        "invert-as-demand",
        D
        + """
def f(a):
    return at_most(demand=~(a == 37) + 3, capacity=2)
""",
        "proved",
    ),
    # operators a bool has and a symbolic condition lacked (TypeError caught by the model)
    (
        "floordiv-fallback",
        D
        + """
def f(a):
    try:
        x = (a == 37) // 1
    except TypeError:
        x = 0
    return at_most(demand=x, capacity=0)
""",
        "counterexample",
    ),
    (
        "mod-fallback",
        D
        + """
def f(a):
    try:
        x = (a == 37) % 2
    except TypeError:
        x = 0
    return at_most(demand=x, capacity=0)
""",
        "counterexample",
    ),
    (
        "neg-fallback",
        D
        + """
def f(a):
    try:
        x = -(a == 37)
    except TypeError:
        x = 0
    return less_than(index=x, capacity=3)
""",
        "counterexample",
    ),
    (
        "abs-fallback",
        D
        + """
def f(a):
    try:
        x = abs(a == 37)
    except TypeError:
        x = 0
    return at_most(demand=x, capacity=0)
""",
        "counterexample",
    ),
    (
        "lt-fallback",
        D
        + """
def f(a):
    try:
        c = (a == 37) > 0
    except TypeError:
        c = False
    return not_(c)
""",
        "counterexample",
    ),
    (
        "floor-of-bool",
        D
        + """
def f(a):
    try:
        x = math.floor(a == 37)
    except (TypeError, AttributeError):
        x = 0
    return at_most(demand=x, capacity=0)
""",
        "counterexample",
    ),
    (
        "bit-length-of-bool",
        D
        + """
def f(a):
    try:
        x = (a == 37).bit_length()
    except (TypeError, AttributeError):
        x = 0
    return at_most(demand=x, capacity=0)
""",
        "counterexample",
    ),
    (
        "and-with-an-int",
        D
        + """
def f(a):
    try:
        x = (a == 37) & 3
    except Exception:
        x = 0
    return at_most(demand=x, capacity=0)
""",
        "counterexample",
    ),
    (
        "eq-with-an-int",
        D
        + """
def f(a):
    try:
        c = (a == 37) == 1
    except Exception:
        c = False
    return not_(c)
""",
        "counterexample",
    ),
    (
        "format-of-bool",
        D
        + """
def f(a):
    return any_of(f"{a == 37}" != "True", a != 37)
""",
        "error",
    ),
    # type tests
    (
        "isinstance-bool-is-int",
        D
        + """
def f(a):
    flag = a == 37
    if isinstance(flag, int):
        return at_most(demand=flag * 5, capacity=3)
    return True
""",
        "counterexample",
    ),
    (
        "isinstance-bool-is-bool",
        D
        + """
def f(a):
    flag = a == 37
    if isinstance(flag, bool):
        return at_most(demand=flag * 5, capacity=3)
    return True
""",
        "counterexample",
    ),
    (
        "class-attribute",
        D
        + """
def f(a):
    flag = a == 37
    if flag.__class__ is bool:
        return at_most(demand=flag * 5, capacity=3)
    return True
""",
        "counterexample",
    ),
    (
        "is-true",
        D
        + """
def f(a):
    flag = a == 37
    if flag is True:
        return a != 37
    return True
""",
        "error",
    ),
]

ASK_SYMINT = [
    (
        "isinstance-symint",
        """
from capproof.symbolic import SymInt
@obligation(domain={"a": Range(0, 100)})
def f(a):
    if isinstance(a, SymInt):
        return True
    return a != 37
""",
    ),
    (
        "isinstance-symbolic-module",
        """
import capproof.symbolic
@obligation(domain={"a": Range(0, 100)})
def f(a):
    if isinstance(a == 1, capproof.symbolic.SymBool):
        return True
    return a != 37
""",
    ),
    (
        "is-symbolic",
        """
from capproof.symbolic import is_symbolic
def helper(a):
    return is_symbolic(a)
@obligation(domain={"a": Range(0, 100)})
def f(a):
    return any_of(helper(a), a != 37)
""",
    ),
    (
        "term-attribute",
        """
@obligation(domain={"a": Range(0, 100)})
def f(a):
    try:
        a.term
        return True
    except AttributeError:
        return a != 37
""",
    ),
]


@pytest.mark.parametrize("name, body, expected", ATTEMPTS, ids=[a[0] for a in ATTEMPTS])
def test_a_symbolic_condition_is_the_bool_it_stands_for(spec_file, name, body, expected):
    result = check(spec_file, name, body)
    assert result.verdict.value == expected, result.message


@pytest.mark.parametrize("name, body", ASK_SYMINT, ids=[a[0] for a in ASK_SYMINT])
def test_a_model_asking_whether_a_value_is_symbolic_is_an_error(spec_file, name, body):
    result = check(spec_file, name, body, header="from capproof import Range, obligation, any_of\n")
    assert result.verdict.value == "error", result.message


def test_bool_semantics_of_a_symbolic_condition_match_python():
    """Each operator of a bool on a symbolic condition, evaluated at both truth values, equals
    Python's result on True/False (an int where Python gives an int, a bool where a bool)."""
    import operator

    import z3

    from capproof.symbolic import SymBool, SymInt

    x = z3.Int("x")
    unary = [operator.invert, operator.neg, operator.pos, abs, lambda b: b + 0, lambda b: b * 3]
    binary = [
        operator.add,
        operator.sub,
        operator.mul,
        operator.floordiv,
        operator.mod,
        operator.and_,
        operator.or_,
        operator.xor,
        operator.lt,
        operator.le,
        operator.gt,
        operator.ge,
        operator.eq,
        operator.ne,
        operator.lshift,
        operator.rshift,
    ]
    for truth in (True, False):
        sym = SymBool(x > 0)
        at = {x: z3.IntVal(1 if truth else 0)}

        def value(v):
            if isinstance(v, SymInt):
                return z3.simplify(z3.substitute(v.term, *at.items())).as_long()
            if type(v) is SymBool:
                return z3.is_true(z3.simplify(z3.substitute(v.term, *at.items())))
            return v

        for op in unary:
            assert value(op(sym)) == op(truth), (op, truth)
        for op in binary:
            for other in (True, False, 0, 1, 2, -3):
                if op in (operator.floordiv, operator.mod) and other in (False, 0):
                    continue
                if op in (operator.lshift, operator.rshift) and other < 0:
                    continue
                got, want = value(op(sym, other)), op(truth, other)
                assert got == want and type(got) is type(want), (op, truth, other, got, want)
                if op not in (operator.lshift, operator.rshift) and (
                    truth or op not in (operator.floordiv, operator.mod)
                ):
                    got, want = value(op(other, sym)), op(other, truth)
                    assert got == want and type(got) is type(want), (op, other, truth, got, want)
        assert isinstance(sym, int) and isinstance(sym, bool)
