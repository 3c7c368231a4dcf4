"""Verdict mapping, minimisation, replay, unsat cores and bad input, on small spec files."""

from __future__ import annotations

import pytest

from capproof import Options, Verdict
from capproof.loader import load_file
from capproof.prover import prove_obligation, replay


def only(path):
    items = load_file(path)
    assert not hasattr(items, "message"), items
    return items


def decide(path, name=None, **options):
    items = only(path)
    ob = items[0] if name is None else next(i for i in items if i.name == name)
    return prove_obligation(ob, Options(**options))


HEADER = "from capproof import Range, Choice, PowersOfTwo, obligation, at_most, equal, claim, cdiv, select, minimum\n"


def test_tiny_rlimit_gives_unknown_never_proved(spec_file):
    path = spec_file(
        HEADER
        + """
@obligation(domain={"x": Range(0, 10**9), "y": Range(1, 10**9)})
def nonlinear(x, y):
    return at_most(demand=x * y // y, capacity=x)
"""
    )
    r = decide(path, rlimit=1)
    assert r.verdict is Verdict.UNKNOWN
    assert "resource" in r.message or "unknown" in r.message


def test_contradictory_assumptions_give_vacuous(spec_file):
    path = spec_file(
        HEADER
        + """
@obligation(domain={"x": Range(0, 100)}, assumptions={"x big": lambda x: x > 50, "x small": lambda x: x < 10})
def contradictory(x):
    return x < 0
"""
    )
    r = decide(path)
    assert r.verdict is Verdict.VACUOUS
    assert r.excluded == r.cases == 1


def test_assumptions_excluding_some_cases_are_counted(spec_file):
    path = spec_file(
        HEADER
        + """
@obligation(domain={"b": Choice(1, 2, 3, 4), "x": Range(0, 100)}, assumptions={"b even": lambda b: b % 2 == 0})
def even_only(b, x):
    return at_most(demand=x % b, capacity=b - 1)
"""
    )
    r = decide(path)
    assert r.verdict is Verdict.PROVED
    assert (r.cases, r.excluded) == (4, 2)


def test_pins_excluded_by_assumptions_are_vacuous(spec_file):
    path = spec_file(
        HEADER
        + """
@obligation(domain={"b": Choice(1, 2, 3, 4)}, assumptions={"b even": lambda b: b % 2 == 0})
def even_only(b):
    return b > 0
"""
    )
    r = decide(path, pins={"b": 3})
    assert r.verdict is Verdict.VACUOUS
    assert "pins" in r.message


def test_counterexample_is_minimised_and_replayed(spec_file):
    path = spec_file(
        HEADER
        + """
@obligation(domain={"n": Range(0, 10**6), "bs": Choice(8, 16)}, expect="counterexample")
def padded_fits(n, bs):
    return at_most(demand=cdiv(n, bs) * bs, capacity=n + 3)
"""
    )
    r = decide(path)
    assert r.verdict is Verdict.COUNTEREXAMPLE
    # smallest n violating cdiv(n, 8) * 8 <= n + 3 is n = 1 (8 > 4)
    assert r.counterexample.params == {"n": 1, "bs": 8}
    assert r.counterexample.values == {"demand": 8, "capacity": 4}
    holds, values, failed = replay(only(path)[0], r.counterexample.params)
    assert not holds and values == r.counterexample.values and not failed
    assert r.ok


def test_unsat_core_names_the_assumption_the_proof_needs(spec_file):
    path = spec_file(
        HEADER
        + """
@obligation(
    domain={"tokens": Range(0, 10**6), "budget": Range(1, 10**6), "unused": Range(0, 5)},
    assumptions={"scheduler respects budget": lambda tokens, budget: tokens <= budget,
                 "irrelevant": lambda unused: unused >= 0},
)
def fits(tokens, budget, unused):
    return at_most(demand=tokens, capacity=budget)
"""
    )
    r = decide(path)
    assert r.verdict is Verdict.PROVED
    assert "scheduler respects budget" in r.assumptions_used
    assert "irrelevant" not in r.assumptions_used


def test_symbolic_divisor_that_can_be_zero_is_an_error(spec_file):
    path = spec_file(
        HEADER
        + """
@obligation(domain={"x": Range(0, 100), "d": Range(0, 4)})
def divides_by_range(x, d):
    return at_most(demand=x // d, capacity=x)
"""
    )
    r = decide(path)
    assert r.verdict is Verdict.ERROR
    assert "can be zero" in r.message and "spec_under_test.py" in r.message


def test_symbolic_divisor_excluded_by_assumption_is_fine(spec_file):
    path = spec_file(
        HEADER
        + """
@obligation(domain={"x": Range(0, 100), "d": Range(0, 4)}, assumptions={"d positive": lambda d: d >= 1})
def divides_by_range(x, d):
    return at_most(demand=x // d, capacity=x)
"""
    )
    r = decide(path)
    assert r.verdict is Verdict.PROVED
    assert "d positive" in r.assumptions_used


@pytest.mark.parametrize(
    "body, fragment",
    [
        ("return x + 1", "not boolean"),
        ("return x / 2 < 3", "real arithmetic"),
        ("return x.to_bytes(2, 'little')[0] > 0", "no attribute 'to_bytes'"),
        ("return (x | x) > 0", "`|` on a symbolic integer"),
        ("return len(range(x * 1000)) > 0", "needs a concrete int"),  # more values than a case split takes
    ],
)
def test_bad_claims_are_errors_naming_the_line(spec_file, body, fragment):
    path = spec_file(
        HEADER
        + f"""
@obligation(domain={{"x": Range(0, 10)}})
def bad(x):
    {body}
"""
    )
    r = decide(path)
    assert r.verdict is Verdict.ERROR
    assert fragment in r.message, r.message


@pytest.mark.parametrize(
    "domain, fragment",
    [
        ('{"x": Range(5, 1)}', "empty range 5..1"),
        ('{"x": Choice()}', "empty choice"),
        ('{"x": PowersOfTwo(5, 7)}', "no power of two"),
        ('{"x": [1, 2]}', "not a Range"),
        ('{"y": Range(0, 1)}', "do not match"),
    ],
)
def test_bad_domains_are_errors(spec_file, domain, fragment):
    path = spec_file(
        HEADER
        + f"""
@obligation(domain={domain})
def bad(x):
    return x >= 0
"""
    )
    r = decide(path)
    assert r.verdict is Verdict.ERROR
    assert fragment in r.message


def test_pin_outside_domain_is_an_error(spec_file):
    path = spec_file(
        HEADER
        + """
@obligation(domain={"block_size": Choice(16, 32)})
def c(block_size):
    return block_size > 0
"""
    )
    r = decide(path, pins={"block_size": 48})
    assert r.verdict is Verdict.ERROR
    assert "pin block_size=48 is outside its domain {16, 32}" in r.message


def test_huge_finite_domain_is_refused_not_enumerated(spec_file):
    path = spec_file(
        HEADER
        + """
@obligation(domain={"a": Choice(range(1000)), "b": Choice(range(1000))})
def c(a, b):
    return a + b >= 0
"""
    )
    r = decide(path)
    assert r.verdict is Verdict.ERROR
    assert "exceed the limit" in r.message


def test_select_branches_on_symbolic_values(spec_file):
    path = spec_file(
        HEADER
        + """
@obligation(domain={"bs": Range(1, 512), "n": Range(0, 10**5)})
def aligned_width_covers(bs, n):
    width = select(bs <= 128, cdiv(n, 8) * 8, n)
    return at_most(demand=n, capacity=width)
"""
    )
    assert decide(path).verdict is Verdict.PROVED


def test_python_bool_claim_still_goes_through_the_solver(spec_file):
    path = spec_file(
        HEADER
        + """
@obligation(domain={"bs": Choice(16, 32)})
def concrete_only(bs):
    return 128 % bs == 0
"""
    )
    r = decide(path)
    assert r.verdict is Verdict.PROVED and r.cases == 2


def test_claims_combined_with_and_are_an_error_not_half_proved(spec_file):
    """`at_most(...) and at_most(...)` would keep only the second claim: refuse it."""
    path = spec_file(
        HEADER
        + """
@obligation(domain={"x": Range(0, 10)})
def both_with_and(x):
    return at_most(a=x, b=5) and at_most(c=x, d=10)

@obligation(domain={"x": Range(0, 10)})
def both_with_all(x):
    return all([at_most(a=x, b=5), at_most(c=x, d=10)])
"""
    )
    for ob in only(path):
        r = prove_obligation(ob, Options())
        assert r.verdict is Verdict.ERROR and "no truth value" in r.message, (ob.name, r.message)


def test_zero_divisor_inside_an_assumption_is_an_error_not_excluded(spec_file):
    """`divides(kbs, bs)` with kbs = 0 is `bs % 0`: Python raises, Z3 leaves it unconstrained, so
    the assumption could silently exclude kbs = 0. Its divisor is checked under the earlier
    assumptions only; an earlier lower bound makes it fine."""
    path = spec_file(
        HEADER
        + """
from capproof import divides

@obligation(domain={"kbs": Range(0, 4), "bs": Range(1, 8)},
            assumptions={"kbs divides bs": lambda kbs, bs: divides(kbs, bs)})
def zero_possible(kbs, bs):
    return at_most(a=bs // kbs, b=bs)

@obligation(domain={"kbs": Range(0, 4), "bs": Range(1, 8)},
            assumptions={"kbs >= 1": lambda kbs: kbs >= 1, "kbs divides bs": lambda kbs, bs: divides(kbs, bs)})
def zero_ruled_out_first(kbs, bs):
    return at_most(a=bs // kbs, b=bs)
"""
    )
    bad = decide(path, "zero_possible")
    assert (
        bad.verdict is Verdict.ERROR and "in assumption 'kbs divides bs'" in bad.message and "'kbs': 0" in bad.message
    )
    assert decide(path, "zero_ruled_out_first").verdict is Verdict.PROVED


def test_model_branching_on_type_is_an_error(spec_file):
    """`x if type(x) is int else 0` runs differently on Z3 terms and on ints (``type`` cannot be
    faked): a function looking up ``type`` during the symbolic run is recorded, an error, never a
    proof (the per-case probe would catch this one too, but not one diverging elsewhere)."""
    path = spec_file(
        HEADER
        + """
@obligation(domain={"x": Range(0, 10)})
def type_trap(x):
    return at_most(demand=x if type(x) is int else 0, capacity=5)
"""
    )
    r = decide(path)
    assert r.verdict is Verdict.ERROR and "type_trap" in r.message and "type()" in r.message, r.message


def test_model_branching_on_isinstance_takes_the_int_branch(spec_file):
    """A symbolic int is an ``int`` for ``isinstance`` (as CrossHair's proxies are), so the
    symbolic run takes the branch the ints take: the false claim is refuted at x = 6, as on ints."""
    path = spec_file(
        HEADER
        + """
@obligation(domain={"x": Range(0, 10)}, expect="counterexample")
def isinstance_trap(x):
    return at_most(demand=x if isinstance(x, int) else 0, capacity=5)
"""
    )
    r = decide(path)
    assert r.verdict is Verdict.COUNTEREXAMPLE and r.counterexample.params == {"x": 6}


def test_case_excluded_by_a_case_split_assumption_may_divide_by_zero(spec_file):
    """Choice(0, 1, 2) with `k >= 1`: the k = 0 case is excluded, as with Range(0, 2)."""
    path = spec_file(
        HEADER
        + """
@obligation(domain={"k": Choice(0, 1, 2), "x": Range(0, 10)}, assumptions={"k >= 1": lambda k: k >= 1})
def excluded_zero_choice(k, x):
    return at_most(demand=x // k, capacity=10)
"""
    )
    r = decide(path)
    assert r.verdict is Verdict.PROVED and r.excluded == 1


def test_obligation_rlimit_zero_is_an_error_not_the_default(spec_file):
    path = spec_file(
        HEADER
        + """
@obligation(domain={"x": Range(0, 3)}, rlimit=0)
def no_budget(x):
    return x >= 0
"""
    )
    r = decide(path)
    assert r.verdict is Verdict.ERROR and "rlimit must be an int" in r.message


def test_least_counterexample_over_cases_when_later_cases_are_not_minimised(spec_file):
    """Cases after the first failing one are minimised only when they have a point before the
    least counterexample so far (one query): the reported point is still the least over every
    case (brute force below), and every failing case is counted."""
    path = spec_file(
        HEADER
        + """
@obligation(domain={"a": Choice(3, 1, 2), "x": Range(0, 50), "b": Choice(5, 4), "y": Range(0, 50)})
def lex_least(a, x, b, y):
    return at_most(demand=x + y + 2 * a, capacity=b + 40)
"""
    )
    r = decide(path)
    assert r.verdict is Verdict.COUNTEREXAMPLE
    failing = [
        (a, x, b, y)
        for a in (3, 1, 2)
        for x in range(51)
        for b in (5, 4)
        for y in range(51)
        if not x + y + 2 * a <= b + 40
    ]
    assert tuple(r.counterexample.params.values()) == min(failing)
    assert tuple(r.counterexample.params.values()) == (1, 0, 4, 43)
    assert r.failing_cases == 6 and r.counterexample.minimized
