"""Failure density: exact counts along one Range axis, by enumeration, Z3-proved period or splitting."""

from __future__ import annotations

import pytest
from conftest import obligation_named, prove

from capproof import Options
from capproof.density import axis_density, failure_density
from capproof.loader import load_file
from capproof.prover import prove_obligation
from capproof.report import density_lines

A1 = ("spec/vllm_dsa_indexer.py", "ebt_width_matches_runner_before_50302")


def test_a1_block64_dcp1_fails_for_exactly_half_of_max_model_len():
    """The "fails from 325K" reports are a parity test: cdiv(L, 64) odd fails, on exactly half of 1..2**21."""
    result = prove(*A1, max_model_len=350000, block_size=64, dcp=1)
    assert result.counterexample.values == {"W_buf": 5469, "W_bt": 5470}
    (axis,) = result.density["axes"]
    assert axis["param"] == "max_model_len" and axis["held"] == {"block_size": 64, "dcp": 1}
    assert (axis["failing"], axis["admitted"], axis["fraction"]) == (1048576, 2097152, 0.5)
    assert axis["method"].startswith("periodic with period 128")


def test_a1_unpinned_counterexample_block16_fails_seven_eighths():
    result = prove(*A1)
    assert result.counterexample.params == {"max_model_len": 1, "block_size": 16, "dcp": 1}
    assert result.density["cases"] == {
        "failing": 12,
        "admitted": 20,
        "unknown": 0,
        "pinned": False,
        "exact_domain_fraction": False,
    }
    (axis,) = result.density["axes"]
    assert (axis["failing"], axis["admitted"]) == (7 * 2**18, 2**21)  # cdiv(L, 16) % 8 != 0


SPEC = """
from capproof import Choice, Range, at_most, cdiv, equal, obligation

@obligation(domain={"L": Range(1, 30_001), "bs": Choice(48, 64)}, expect="counterexample")
def widths(L, bs):
    return equal(a=cdiv(L, bs), b=cdiv(cdiv(L, bs), 128 // bs) * (128 // bs))

@obligation(domain={"L": Range(1, 30_001)}, assumptions={"L >= 1000": lambda L: L >= 1000}, expect="counterexample")
def threshold(L):
    return at_most(demand=L, capacity=20_000)

@obligation(domain={"a": Choice(1, 2, 3), "b": Choice(1, 2, 3, 4)}, expect="counterexample")
def finite(a, b):
    return at_most(demand=a * b, capacity=6)
"""


@pytest.fixture
def obs(spec_file):
    return {it.name: it for it in load_file(spec_file(SPEC))}


@pytest.mark.parametrize("bs", [48, 64])
def test_period_and_enumeration_agree(obs, bs):
    ob = obs["widths"]
    point = {"L": 1, "bs": bs}
    by_period = axis_density(ob, point, "L", small=0)
    by_enum = axis_density(ob, point, "L", small=10**6)
    assert by_period.method.startswith("periodic") and by_enum.method.startswith("enumerated")
    assert (by_period.failing, by_period.admitted) == (by_enum.failing, by_enum.admitted)
    assert by_enum.admitted == 30_001 and 0 < by_enum.failing < 30_001


def test_splitting_counts_a_threshold_with_an_assumption(obs):
    ob = obs["threshold"]
    d = axis_density(ob, {"L": 20_002}, "L", small=0)
    assert d.method.startswith("Z3 interval splitting")
    # L in 1000..30001 admitted: 29002; L > 20000 fails: 10001
    assert (d.admitted, d.failing) == (29_002, 10_001)
    assert (d.admitted, d.failing) == (lambda e: (e.admitted, e.failing))(
        axis_density(ob, {"L": 20_002}, "L", small=10**6)
    )


def test_finite_domain_density_is_exact(obs):
    result = prove_ob(obs["finite"])
    assert result.density["cases"] == {
        "failing": 3,
        "admitted": 12,
        "unknown": 0,
        "pinned": False,
        "exact_domain_fraction": True,
    }  # 2*4, 3*3, 3*4
    assert result.density["axes"] == []


def test_not_computed_is_said_not_guessed(obs):
    d = axis_density(obs["threshold"], {"L": 20_002}, "L", small=0, enum_limit=0, budget=3)
    assert d.failing is None and d.method == "not computed" and "budget" in d.message


def test_density_off():
    from capproof import Options
    from capproof.prover import prove_obligation

    assert prove_obligation(obligation_named(*A1), Options(density="off")).density is None


def prove_ob(ob):
    from capproof import Options
    from capproof.prover import prove_obligation

    return prove_obligation(ob, Options())


def test_failure_density_skips_vector_lengths(spec_file):
    (ob,) = load_file(
        spec_file(
            """
from capproof import Range, at_most, obligation
from capproof.arith import total
from capproof.domain import Vector

@obligation(domain={"n": Range(0, 8), "lens": Vector(8, Range(1, 4), length="n"), "cap": Range(1, 100)}, expect="counterexample")
def fits(n, lens, cap):
    return at_most(demand=total(lens), capacity=cap)
""",
            "vec_spec.py",
        )
    )
    d = failure_density(ob, {"n": 1, "lens": [2], "cap": 1}, 1, 1)
    assert d["skipped_vector_lengths"] == ["n"]
    (cap,) = d["axes"]
    assert (cap["param"], cap["failing"], cap["admitted"]) == ("cap", 1, 100)


def test_pinned_or_unknown_cases_are_not_an_exact_domain_fraction(spec_file):
    """A pinned run counts only the pinned cases, and an unknown case may fail too: neither is
    reported as an exact fraction of the domain."""
    path = spec_file("""
from capproof import Choice, obligation, at_most

@obligation(domain={"k": Choice(range(1, 11)), "x": Choice(range(0, 2))}, expect="counterexample")
def small(k, x):
    return at_most(d=k * x, c=5)
""")
    ob = load_file(path)[0]
    pinned = prove_obligation(ob, Options(pins={"k": 10}))
    assert pinned.density["cases"]["pinned"] is True
    assert pinned.density["cases"]["exact_domain_fraction"] is False
    assert "admitted pinned finite cases" in "\n".join(density_lines(pinned.density))
    whole = prove_obligation(ob, Options())
    assert whole.density["cases"] == {
        "failing": 5,
        "admitted": 20,
        "unknown": 0,
        "pinned": False,
        "exact_domain_fraction": True,
    }


def test_splitting_holds_the_vector_at_the_counterexample(spec_file):
    """Interval splitting with a batch vector held: the vector's entries are background facts,
    not part of admission (else "excluded" is satisfiable everywhere by moving an entry and
    splitting never finishes). Same counts as enumeration, in a few dozen queries."""
    (ob,) = load_file(
        spec_file(
            """
from capproof import Range, at_most, obligation
from capproof.arith import total
from capproof.domain import Vector

@obligation(domain={"n": Range(1, 8), "lens": Vector(8, Range(1, 4), length="n"), "cap": Range(1, 20_000)},
            assumptions={"budget": lambda lens, cap: total(lens) <= cap + 3}, expect="counterexample")
def fits(n, lens, cap):
    return at_most(demand=total(lens), capacity=cap)
""",
            "vec_split_spec.py",
        )
    )
    point = {"n": 3, "lens": [4, 4, 1], "cap": 6}
    split = axis_density(ob, point, "cap", small=0)
    enum = axis_density(ob, point, "cap", small=10**6)
    assert split.method.startswith("Z3 interval splitting") and enum.method.startswith("enumerated")
    assert (
        (split.admitted, split.failing) == (enum.admitted, enum.failing) == (20_000 - 5, 3)
    )  # cap 6..20000; 6, 7, 8 fail


def test_small_shares_are_exact_not_rounded_to_zero():
    from capproof.report import _share

    assert _share(1, 2096129) == "1 of 2096129 (1 in 2,096,129)"
    assert _share(3, 100000) == "3 of 100000 (3 in 100,000)"
    assert _share(1048576, 2097152) == "1048576 of 2097152 (50.00%)"


def _period_candidate_by_wrappers(exprs):
    """The z3py walk ``density._period_candidate`` made (the reference)."""
    import math

    import z3

    from capproof.density import MAX_PERIOD

    memo: dict[int, int] = {}

    def per(e):
        key = e.get_id()
        if key in memo:
            return memo[key]
        out = 1
        if z3.is_app(e):
            kids = [per(c) for c in e.children()]
            for k in kids:
                out = math.lcm(out, k)
            if e.decl().kind() in (z3.Z3_OP_IDIV, z3.Z3_OP_MOD, z3.Z3_OP_REM) and z3.is_int_value(e.arg(1)):
                c = abs(e.arg(1).as_long())
                if c:
                    out = c * kids[0]
        memo[key] = min(out, MAX_PERIOD + 1)
        return memo[key]

    result = 1
    for e in exprs:
        result = math.lcm(result, per(e))
    return result


def test_period_candidate_walks_the_terms_as_the_z3py_walk_did():
    """``_period_candidate`` through Z3's C API: the same candidate period as the
    z3py walk on divisions, remainders, nested and shared terms, symbolic divisors and the cap."""
    import z3

    from capproof.density import MAX_PERIOD, _period_candidate

    x, y = z3.Ints("x y")
    cases = [
        [x / 16 <= 3, x % 6 == 0],
        [(x / 4) / 3 >= y, z3.If(x % 10 > 2, x, y) <= 7],
        [x / y <= 2, x % 5 == 1],  # a symbolic divisor: no period from it
        [(x + 1) / 7 + (x + 1) / 7 >= 2, z3.Not(x == 3)],
        [x / (MAX_PERIOD + 3) <= 1],  # over the cap
        [x <= 10, z3.BoolVal(True)],
        [z3.ForAll([y], y / 3 <= x)],
        [x / -9 >= 1, x % 0 == 0],
    ]
    for exprs in cases:
        assert _period_candidate(exprs) == _period_candidate_by_wrappers(exprs), exprs
    assert _period_candidate([x / 16 <= 3, x % 6 == 0]) == 48 and _period_candidate([]) == 1
