"""Adversarial catalogue: ``math.ceil(a / b)`` and ``math.floor(a / b)`` are exact only while the
float quotient is.

capproof encodes ``math.ceil(a / b)`` as the exact ceiling under the side condition
``|a| < 2**53`` (Python rounds ``a / b`` to a float). A quotient below the smallest subnormal
(``|a / b| < 2**-1075``, a divisor past ``2**1075 * |a|``) rounds to ``0.0``: ``math.ceil(1 /
2**1076) == 0`` and ``math.floor(-1 / 2**1076) == 0`` on ints, where the exact values are 1 and -1.
Inside the domain but at points neither the probe nor the second opinion samples (the bounds of
``b`` are excluded by the ``implies``), both claims were proved. ``xfail(strict=True)`` while open.
"""

from __future__ import annotations

import pytest
from _soundness_harness import HEADER, fails_on_ints

from capproof import Options, Verdict
from capproof.loader import load_file
from capproof.prover import prove_obligation

CASES = {
    "ceil-of-a-quotient-that-underflows": (
        """
@obligation(domain={"a": Range(1, 100), "b": Range(1, 2**1100)})
def blocks(a, b):
    return implies(b < 2**1080, math.ceil(a / b) >= 1)
""",
        {"a": 1, "b": 2**1076},
    ),
    "floor-of-a-negative-quotient-that-underflows": (
        """
@obligation(domain={"a": Range(-100, -1), "b": Range(1, 2**1100)})
def rows(a, b):
    return implies(b < 2**1080, math.floor(a / b) <= -1)
""",
        {"a": -1, "b": 2**1076},
    ),
}


@pytest.mark.parametrize(
    "name",
    [pytest.param(k, marks=pytest.mark.xfail(strict=True, reason="the float quotient underflows")) for k in CASES],
)
def test_no_proof_where_the_float_quotient_underflows(spec_file, name):
    body, point = CASES[name]
    (ob,) = load_file(spec_file(HEADER + body, f"adv_float_{name.replace('-', '_')}.py"))
    assert fails_on_ints(ob, point)
    result = prove_obligation(ob, Options(density="off"))
    assert result.verdict is not Verdict.PROVED, f"proved, but fails on ints at {point}"
