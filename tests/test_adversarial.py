"""Adversarial catalogue: attempts to obtain a wrong verdict, each checked to be sound.

Every attempt is a small spec (a model written the way real engine code is: ``try/except``
fallbacks, ``isinstance``/``hasattr``/``type`` checks, builtins, branches). The claim is brute
forced on plain ints over its whole (small) domain; the verdict is sound when:

- ``proved`` only if no admitted point fails (or raises) on ints;
- a ``counterexample`` replays on ints: assumptions hold, the claim fails;
- and, when the attempt names one, the verdict is the expected one (e.g. the smallest failing n).

Issue 10 S1 (an ``except`` hiding an error raised on a symbolic int) and S2 (``isinstance`` /
``hasattr`` / ``type`` branches) each have attempts that give ``proved`` on the main branch before
the fix. Add new attempts to ATTEMPTS: (id, spec body, expected verdict or None).
"""

from __future__ import annotations

import itertools

import pytest

from capproof import Options, Verdict
from capproof.domain import Range
from capproof.encode import evaluate
from capproof.loader import load_file
from capproof.prover import prove_obligation, replay

HEADER = "import math\nfrom capproof import Range, Choice, obligation, at_most, less_than, cdiv\n"

ATTEMPTS = [
    # ---- S1: an except catching an error raised on a symbolic int -------------------------
    ("s1-bit-length-attributeerror-fallback", """
def next_pow2(n):
    try:
        return 1 << (n - 1).bit_length()
    except AttributeError:
        return n          # Python-only fallback, never taken on ints

@obligation(domain={"n": Range(1, 64)})
def pow2_fits(n):
    return at_most(demand=next_pow2(n), capacity=n)   # false at n = 3 (4 > 3)
""", ("counterexample", {"n": 3})),
    ("s1-to-bytes-attributeerror-fallback", """
def low_byte(n):
    try:
        return n.to_bytes(8, "little")[0]
    except AttributeError:
        return 0

@obligation(domain={"n": Range(0, 64)})
def low_byte_zero(n):
    return low_byte(n) == 0
""", ("error", None)),
    ("s1-bit-twiddling-typeerror-fallback", """
def next_pow2(n):
    try:
        v = n - 1
        v |= v >> 1
        v |= v >> 2
        v |= v >> 4
        return v + 1
    except TypeError:
        return n

@obligation(domain={"n": Range(1, 64)})
def twiddled_fits(n):
    return at_most(demand=next_pow2(n), capacity=n)
""", ("error", None)),
    ("s1-power-of-two-test-mask-fallback", """
def is_pow2(n):
    try:
        return n & (n - 1) == 0
    except TypeError:
        return True

@obligation(domain={"n": Range(1, 64)})
def all_pow2(n):
    return is_pow2(n)
""", ("error", None)),
    ("s1-getattr-default", """
@obligation(domain={"n": Range(0, 64)})
def getattr_default(n):
    to_bytes = getattr(n, "to_bytes", None)
    return n < 10 if to_bytes is not None else True
""", ("error", None)),
    ("s1-true-division-typeerror-fallback", """
def half(n):
    try:
        return n / 2 * 2 > n - 1
    except TypeError:
        return True

@obligation(domain={"n": Range(0, 64)})
def halves(n):
    return half(n) and n < 50
""", ("error", None)),
    ("s1-int-conversion-fallback", """
def rows(n):
    try:
        return int(n)
    except TypeError:
        return 0

@obligation(domain={"n": Range(0, 64)})
def int_rows(n):
    return at_most(demand=rows(n), capacity=10)
""", ("error", None)),
    ("s1-branch-inside-try", """
def width(n):
    try:
        if n > 40:
            return n + 1
        return n
    except TypeError:
        return n

@obligation(domain={"n": Range(0, 64)})
def branch_width(n):
    return at_most(demand=width(n), capacity=n)
""", ("counterexample", {"n": 41})),
    ("s1-ceil-of-quotient", """
@obligation(domain={"n": Range(0, 64), "b": Range(1, 8)})
def ceil_fits(n, b):
    try:
        blocks = math.ceil(n / b)
    except TypeError:
        blocks = n // b
    return at_most(demand=blocks * b, capacity=n)
""", ("counterexample", {"n": 1, "b": 2})),
    # ---- S2: isinstance / hasattr / type ----------------------------------------------------
    ("s2-isinstance-in-model", """
def ok(n):
    if isinstance(n, int):
        return n < 60       # what the ints run: false at n = 60
    return n <= 64

@obligation(domain={"n": Range(0, 64)})
def isinstance_claim(n):
    return ok(n)
""", ("counterexample", {"n": 60})),
    ("s2-isinstance-in-assumption", """
def small(n):
    return n <= 64 if isinstance(n, int) else n < 60

@obligation(domain={"n": Range(0, 64)}, assumptions={"small": small})
def isinstance_assumption(n):
    return n < 60
""", ("counterexample", {"n": 60})),
    ("s2-hasattr-numerator", """
def ok(n):
    if hasattr(n, "numerator"):
        return n < 60
    return True

@obligation(domain={"n": Range(0, 64)})
def hasattr_claim(n):
    return ok(n)
""", ("counterexample", {"n": 60})),
    ("s2-type-is-int", """
def ok(n):
    if type(n) is int:
        return n < 60
    return True

@obligation(domain={"n": Range(0, 64)})
def type_claim(n):
    return ok(n)
""", ("error", None)),
    ("s2-type-name", """
@obligation(domain={"n": Range(0, 64)})
def type_name_claim(n):
    return n < 60 if type(n).__name__ == "int" else n <= 64
""", ("error", None)),
    ("s2-type-in-a-static-method", """
class Layout:
    @staticmethod
    def ok(n):
        return n < 60 if type(n) is int else True

@obligation(domain={"n": Range(0, 64)})
def type_in_method(n):
    return Layout.ok(n)
""", ("error", None)),
    ("s2-type-in-a-closure", """
def make_check(limit):
    def check(n):
        return n < limit if type(n) is int else True
    return check

_check = make_check(60)

@obligation(domain={"n": Range(0, 64)})
def type_in_closure(n):
    return _check(n)
""", ("error", None)),
    # ---- builtins and forking ---------------------------------------------------------------
    ("builtins-min-max-sum-abs", """
@obligation(domain={"a": Range(-8, 8), "b": Range(-8, 8)})
def builtins_claim(a, b):
    return at_most(demand=min(a, b) + max(a, b) + abs(a - b) + sum([a, b]), capacity=4 * max(a, b) - 1)
""", ("counterexample", None)),
    ("sum-of-conditions-counts", """
@obligation(domain={"a": Range(0, 8), "b": Range(0, 8)})
def counted(a, b):
    return at_most(demand=sum(x > 3 for x in (a, b)), capacity=1)
""", ("counterexample", {"a": 4, "b": 4})),
    ("fork-budget-exhausted-is-unknown", """
@obligation(domain={"a": Range(0, 3), "b": Range(0, 3), "c": Range(0, 3)}, fork_budget=2)
def branchy(a, b, c):
    return (1 if a > 1 else 0) + (1 if b > 1 else 0) + (1 if c > 1 else 0) < 4   # true, but 8 paths
""", ("unknown", None)),
    ("wrong-claim-on-one-deep-path", """
def pad(n, s):
    if s > 0:
        if n % 2 == 1:
            if n > 30:
                return n + s + 1
    return n + s

@obligation(domain={"n": Range(0, 40), "s": Range(0, 3)})
def deep(n, s):
    return at_most(demand=pad(n, s), capacity=n + s)
""", ("counterexample", {"n": 31, "s": 1})),
]


def _points(ob):
    axes = []
    for name in ob.params:
        dom = ob.domain[name]
        axes.append(list(range(dom.lo, dom.hi + 1)) if isinstance(dom, Range) else dom.cases())
    for combo in itertools.product(*axes):
        yield dict(zip(ob.params, combo))


def _fails_on_ints(ob, point) -> bool:
    """True when the assumptions hold at ``point`` and the claim is false or raises there."""
    try:
        ev = evaluate(ob, point)
    except Exception:  # noqa: BLE001 - raising at an admitted point also refutes "proved"
        return True
    if not all(ev.assumptions.values()):
        return False
    return not ev.claim.holds


@pytest.mark.parametrize("name, body, expected", ATTEMPTS, ids=[a[0] for a in ATTEMPTS])
def test_attempt_gets_a_sound_verdict(spec_file, name, body, expected):
    (ob,) = load_file(spec_file(HEADER + body, f"adv_{name.replace('-', '_')}.py"))
    result = prove_obligation(ob, Options(density="off"))
    failing = [p for p in _points(ob) if _fails_on_ints(ob, p)]
    if failing:
        assert result.verdict is not Verdict.PROVED, f"proved, but fails on ints at {failing[0]}"
    if result.verdict is Verdict.COUNTEREXAMPLE:
        holds, _, failed_assumptions = replay(ob, result.counterexample.params)
        assert not holds and not failed_assumptions
        assert result.counterexample.params == min(failing, key=lambda p: tuple(p.values()))
    verdict, point = expected
    assert result.verdict.value == verdict, result.message
    if point is not None:
        assert result.counterexample.params == point
