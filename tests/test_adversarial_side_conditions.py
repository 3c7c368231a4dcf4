"""Adversarial catalogue: every strategy keeps the conditions under which its encoding is exact.

``math.ceil(a / b)`` equals Python's float-based result only for ``|a| < 2**53``, ``bit_length()``
and a symbolic shift count are encoded for magnitudes below 2**64 and counts up to 64. The symbolic
run records each as a side condition and the bounded encoding checks it under the assumptions (one
that can fail is an error). The aggregate abstraction and induction over the batch decide a model
on its own symbolic run too and must check the same conditions, or fall back. Each model below is
false on ints at one point past the limit (``2**53 + 1``, ``2**64 + 5``, a shift by 70) that the
int probe and the second opinion do not sample; each was ``proved [all batch sizes]``.
"""

from __future__ import annotations

import pytest
from _soundness_harness import HEADER, fails_on_ints

from capproof import Options, Verdict, prove
from capproof.loader import load_file

ATTEMPTS = [
    pytest.param(
        "aggregate-ceil-of-a-quotient-past-2-53",
        """
X = 2**53 + 1
@obligation(domain={"a": Range(0, 2**60), "n": Range(1, 3), "lens": Vector(3, Range(1, 4), length="n")})
def f(a, n, lens):
    return at_most(demand=a + total(lens), capacity=select(a == X, math.ceil(a / 1), a) + total(lens))
""",
        {"a": 2**53 + 1, "n": 1, "lens": [1]},
    ),
    pytest.param(
        "aggregate-bit-length-past-64-bits",
        """
X = 2**64 + 5
@obligation(domain={"a": Range(0, 2**70), "n": Range(1, 3), "lens": Vector(3, Range(1, 4), length="n")})
def f(a, n, lens):
    return at_most(demand=select(a == X, a.bit_length(), 0) + max_of(lens), capacity=64 + max_of(lens))
""",
        {"a": 2**64 + 5, "n": 1, "lens": [1]},
    ),
    pytest.param(
        "aggregate-shift-count-past-64",
        """
@obligation(domain={"k": Range(0, 100), "n": Range(1, 3), "lens": Vector(3, Range(1, 4), length="n")})
def f(k, n, lens):
    return at_most(demand=(1 << select(k == 70, k, 0)) + total(lens), capacity=2**64 + total(lens))
""",
        {"k": 70, "n": 1, "lens": [1]},
    ),
    pytest.param(
        "induction-ceil-of-a-quotient-past-2-53",
        """
from capproof import fold
X = 2**53 + 1
def step(s, i, x):
    return s + select(x == X, math.ceil(x / 1), x)
@obligation(domain={"n": Range(1, 3), "lens": Vector(3, Range(0, 2**60), length="n")})
def f(n, lens):
    return at_most(demand=total(lens), capacity=fold(step, 0, lens))
""",
        {"n": 1, "lens": [2**53 + 1]},
    ),
]


@pytest.mark.parametrize("name, body, point", ATTEMPTS)
def test_a_strategy_checks_the_side_conditions_of_its_encoding(spec_file, name, body, point):
    (ob,) = load_file(spec_file(HEADER + body, f"adv_side_{name.replace('-', '_')}.py"))
    assert fails_on_ints(ob, point) and fails_on_ints(ob, point, padding=False)
    result = prove(ob, Options(density="off"))
    assert result.verdict is not Verdict.PROVED, f"proved ({result.message}), but fails on ints at {point}"
