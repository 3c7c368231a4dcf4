"""Adversarial catalogue: attempts to obtain a wrong verdict, each checked to be sound.

Every attempt is a small spec (a model written the way real engine code is: ``try/except``
fallbacks, ``isinstance``/``hasattr``/``type`` checks, builtins, branches). The claim is brute
forced on plain ints over its whole (small) domain; the verdict is sound when:

- ``proved`` only if no admitted point fails (or raises) on ints;
- a ``counterexample`` replays on ints: assumptions hold, the claim fails;
- and, when the attempt names one, the verdict is the expected one (e.g. the smallest failing n).

S1 (an ``except`` hiding an error raised on a symbolic int) and S2 (``isinstance`` /
``hasattr`` / ``type`` branches) each have attempts that give ``proved`` on the main branch before
the fix. Add new attempts to ATTEMPTS: (id, spec body, expected verdict or None).
"""

from __future__ import annotations

import itertools

import pytest

from capproof import Options, Verdict
from capproof.domain import Range, Vector
from capproof.encode import concrete_args, evaluate
from capproof.loader import load_file
from capproof.prover import prove_obligation, replay

HEADER = (
    "import math\nfrom capproof import Range, Choice, Vector, obligation, at_most, less_than, cdiv, all_of, any_of, "
    "implies, not_, total, max_of, min_of, count, prefix_sums\n"
)

ATTEMPTS = [
    # ---- S1: an except catching an error raised on a symbolic int -------------------------
    (
        "s1-bit-length-attributeerror-fallback",
        """
def next_pow2(n):
    try:
        return 1 << (n - 1).bit_length()
    except AttributeError:
        return n          # Python-only fallback, never taken on ints

@obligation(domain={"n": Range(1, 64)})
def pow2_fits(n):
    return at_most(demand=next_pow2(n), capacity=n)   # false at n = 3 (4 > 3)
""",
        ("counterexample", {"n": 3}),
    ),
    (
        "s1-to-bytes-attributeerror-fallback",
        """
def low_byte(n):
    try:
        return n.to_bytes(8, "little")[0]
    except AttributeError:
        return 0

@obligation(domain={"n": Range(0, 64)})
def low_byte_zero(n):
    return low_byte(n) == 0
""",
        ("error", None),
    ),
    (
        "s1-bit-twiddling-typeerror-fallback",
        """
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
""",
        ("error", None),
    ),
    (
        "s1-power-of-two-test-mask-fallback",
        """
def is_pow2(n):
    try:
        return n & (n - 1) == 0
    except TypeError:
        return True

@obligation(domain={"n": Range(1, 64)})
def all_pow2(n):
    return is_pow2(n)
""",
        ("error", None),
    ),
    (
        "s1-getattr-default",
        """
@obligation(domain={"n": Range(0, 64)})
def getattr_default(n):
    to_bytes = getattr(n, "to_bytes", None)
    return n < 10 if to_bytes is not None else True
""",
        ("error", None),
    ),
    (
        "s1-true-division-typeerror-fallback",
        """
def half(n):
    try:
        return n / 2 * 2 > n - 1
    except TypeError:
        return True

@obligation(domain={"n": Range(0, 64)})
def halves(n):
    return half(n) and n < 50
""",
        ("error", None),
    ),
    (
        "s1-int-conversion-fallback",
        """
def rows(n):
    try:
        return int(n)
    except TypeError:
        return 0

@obligation(domain={"n": Range(0, 64)})
def int_rows(n):
    return at_most(demand=rows(n), capacity=10)
""",
        ("error", None),
    ),
    (
        "s1-branch-inside-try",
        """
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
""",
        ("counterexample", {"n": 41}),
    ),
    (
        "s1-ceil-of-quotient",
        """
@obligation(domain={"n": Range(0, 64), "b": Range(1, 8)})
def ceil_fits(n, b):
    try:
        blocks = math.ceil(n / b)
    except TypeError:
        blocks = n // b
    return at_most(demand=blocks * b, capacity=n)
""",
        ("counterexample", {"n": 1, "b": 2}),
    ),
    # ---- S2: isinstance / hasattr / type ----------------------------------------------------
    (
        "s2-isinstance-in-model",
        """
def ok(n):
    if isinstance(n, int):
        return n < 60       # what the ints run: false at n = 60
    return n <= 64

@obligation(domain={"n": Range(0, 64)})
def isinstance_claim(n):
    return ok(n)
""",
        ("counterexample", {"n": 60}),
    ),
    (
        "s2-isinstance-in-assumption",
        """
def small(n):
    return n <= 64 if isinstance(n, int) else n < 60

@obligation(domain={"n": Range(0, 64)}, assumptions={"small": small})
def isinstance_assumption(n):
    return n < 60
""",
        ("counterexample", {"n": 60}),
    ),
    (
        "s2-hasattr-numerator",
        """
def ok(n):
    if hasattr(n, "numerator"):
        return n < 60
    return True

@obligation(domain={"n": Range(0, 64)})
def hasattr_claim(n):
    return ok(n)
""",
        ("counterexample", {"n": 60}),
    ),
    (
        "s2-type-is-int",
        """
def ok(n):
    if type(n) is int:
        return n < 60
    return True

@obligation(domain={"n": Range(0, 64)})
def type_claim(n):
    return ok(n)
""",
        ("error", None),
    ),
    (
        "s2-type-name",
        """
@obligation(domain={"n": Range(0, 64)})
def type_name_claim(n):
    return n < 60 if type(n).__name__ == "int" else n <= 64
""",
        ("error", None),
    ),
    (
        "s2-type-in-a-static-method",
        """
class Layout:
    @staticmethod
    def ok(n):
        return n < 60 if type(n) is int else True

@obligation(domain={"n": Range(0, 64)})
def type_in_method(n):
    return Layout.ok(n)
""",
        ("error", None),
    ),
    (
        "s2-type-in-a-closure",
        """
def make_check(limit):
    def check(n):
        return n < limit if type(n) is int else True
    return check

_check = make_check(60)

@obligation(domain={"n": Range(0, 64)})
def type_in_closure(n):
    return _check(n)
""",
        ("error", None),
    ),
    # ---- builtins and forking ---------------------------------------------------------------
    (
        "builtins-min-max-sum-abs",
        """
@obligation(domain={"a": Range(-8, 8), "b": Range(-8, 8)})
def builtins_claim(a, b):
    return at_most(demand=min(a, b) + max(a, b) + abs(a - b) + sum([a, b]), capacity=4 * max(a, b) - 1)
""",
        ("counterexample", None),
    ),
    (
        "sum-of-conditions-counts",
        """
@obligation(domain={"a": Range(0, 8), "b": Range(0, 8)})
def counted(a, b):
    return at_most(demand=sum(x > 3 for x in (a, b)), capacity=1)
""",
        ("counterexample", {"a": 4, "b": 4}),
    ),
    (
        "fork-budget-exhausted-is-unknown",
        """
@obligation(domain={"a": Range(0, 3), "b": Range(0, 3), "c": Range(0, 3)}, fork_budget=2)
def branchy(a, b, c):
    return (1 if a > 1 else 0) + (1 if b > 1 else 0) + (1 if c > 1 else 0) < 4   # true, but 8 paths
""",
        ("unknown", None),
    ),
    (
        "wrong-claim-on-one-deep-path",
        """
def pad(n, s):
    if s > 0:
        if n % 2 == 1:
            if n > 30:
                return n + s + 1
    return n + s

@obligation(domain={"n": Range(0, 40), "s": Range(0, 3)})
def deep(n, s):
    return at_most(demand=pad(n, s), capacity=n + s)
""",
        ("counterexample", {"n": 31, "s": 1}),
    ),
    # ---- the aggregate abstraction of batches: one representative entry -----------
    (
        "agg-total-of-generator-under-all-of",
        """
@obligation(domain={"batch": Vector(4, Range(0, 3))})
def total_as_request(batch):
    return all_of(total(d for d in batch) <= 3)      # a sum over the batch, not a per-request bound
""",
        ("counterexample", None),
    ),
    (
        "agg-builtin-sum-under-all-of",
        """
@obligation(domain={"batch": Vector(4, Range(0, 3))})
def summed(batch):
    return all_of(sum(d for d in batch) <= 3)
""",
        ("counterexample", None),
    ),
    (
        "agg-prefix-sums-last-under-all-of",
        """
@obligation(domain={"batch": Vector(4, Range(0, 3))})
def cu_seqlens_last(batch):
    return all_of(prefix_sums(batch)[-1] <= 3)
""",
        ("counterexample", None),
    ),
    (
        "agg-count-under-all-of",
        """
@obligation(domain={"batch": Vector(4, Range(0, 3))})
def counted_long(batch):
    return all_of(count(d > 1 for d in batch) <= 1)
""",
        ("counterexample", None),
    ),
    (
        "agg-any-of-wrapped-in-all-of-assumption",
        """
def some_long(batch):
    return all_of(any_of(*(d > 2 for d in batch)))   # some request is long
@obligation(domain={"batch": Vector(4, Range(0, 3))}, assumptions={"some_long": some_long})
def all_long(batch):
    return min_of(batch) > 2
""",
        ("counterexample", None),
    ),
    (
        "agg-builtin-max-wrapped-in-all-of-assumption",
        """
@obligation(domain={"batch": Vector(4, Range(0, 3))},
            assumptions={"some_long": lambda batch: all_of(max(d for d in batch) >= 2)})
def all_long(batch):
    return min_of(batch) >= 2
""",
        ("counterexample", None),
    ),
    (
        "agg-for-loop-any-fold-assumption",
        """
def some_long(batch):
    found = False
    for d in batch:
        found = any_of(found, d > 2)
    return all_of(found)
@obligation(domain={"batch": Vector(4, Range(0, 3))}, assumptions={"some_long": some_long})
def all_long(batch):
    return min_of(batch) > 2
""",
        ("counterexample", None),
    ),
    (
        "agg-walrus-keeps-the-last-entry",
        """
@obligation(domain={"batch": Vector(3, Range(0, 3))})
def last_long(batch):
    seen = all_of(*((last := d) >= 0 for d in batch))
    return all_of(seen, implies(all_of(last >= 2), min_of(batch) >= 2))   # last entry long: not all
""",
        ("counterexample", None),
    ),
    (
        "agg-len-of-list-comprehension",
        """
@obligation(domain={"batch": Vector(4, Range(0, 3))})
def rows(batch):
    return at_most(demand=len([d for d in batch]), capacity=1)
""",
        ("counterexample", None),
    ),
    (
        "agg-len-fallback-in-except",
        """
def rows(batch):
    try:
        return len(batch)
    except Exception:
        return 1
@obligation(domain={"batch": Vector(4, Range(0, 3))})
def rows_fit(batch):
    return implies(max_of(batch) >= 3, rows(batch) <= 1)
""",
        ("counterexample", None),
    ),
    (
        "agg-isinstance-tuple",
        """
@obligation(domain={"batch": Vector(4, Range(0, 3))})
def fits(batch):
    return total(batch) <= 3 if isinstance(batch, tuple) else True
""",
        ("counterexample", None),
    ),
    (
        "agg-hasattr-count",
        """
@obligation(domain={"batch": Vector(4, Range(0, 3))})
def fits(batch):
    return max_of(batch) <= 1 if hasattr(batch, "count") else True
""",
        ("counterexample", None),
    ),
    (
        "agg-type-of-a-scalar-beside-a-batch",
        """
@obligation(domain={"batch": Vector(2, Range(0, 3)), "n": Range(0, 8)})
def fits(batch, n):
    return all_of(n < 7 if type(n) is int else True, total(batch) >= 0)
""",
        ("error", None),
    ),
    (
        "agg-per-request-not-convex",
        """
@obligation(domain={"batch": Vector(3, Range(0, 3))})
def short_or_long(batch):
    return implies(all_of(*(any_of(d <= 0, d >= 3) for d in batch)), min_of(batch) >= 3)
""",
        ("counterexample", None),
    ),
    (
        "agg-per-request-nonlinear-convex",
        """
@obligation(domain={"batch": Vector(3, Range(-3, 3))}, assumptions={"sq": lambda batch: all_of(*(d * d <= 4 for d in batch))})
def bounded(batch):
    return all_of(max_of(batch) <= 2, min_of(batch) >= -2, total(batch) <= 6)
""",
        ("proved", None),
    ),
    (
        "agg-per-request-floor-division",
        """
@obligation(domain={"batch": Vector(3, Range(0, 12))}, assumptions={"rows": lambda batch: all_of(*(d // 4 <= 2 for d in batch))})
def fits(batch):
    return max_of(batch) <= 10        # d // 4 <= 2 admits 11
""",
        ("counterexample", None),
    ),
    (
        "agg-per-request-modulus-not-convex",
        """
@obligation(domain={"batch": Vector(3, Range(0, 12))}, assumptions={"aligned": lambda batch: all_of(*(d % 4 == 0 for d in batch))})
def fits(batch):
    return all_of(max_of(batch) != 6, total(batch) <= 36)
""",
        ("proved", None),
    ),
    (
        "agg-per-request-over-two-batches",
        """
@obligation(domain={"a": Vector(2, Range(0, 3)), "b": Vector(2, Range(0, 3))})
def pairs(a, b):
    return implies(max_of(a) <= min_of(b), all_of(*(all_of(*(x <= y for y in b)) for x in a)))
""",
        ("proved", None),
    ),
    (
        "agg-fill-above-the-entries",
        """
@obligation(domain={"v": Vector(3, Range(0, 3), length="n", fill=9), "n": Range(1, 3)})
def max_fits(v, n):
    return max_of(v) <= 3           # max_of sees the active entries only (arith.Padded), not the 9s
""",
        ("proved", None),
    ),
    (
        "agg-fill-fails-a-per-request-condition",
        """
@obligation(domain={"v": Vector(3, Range(1, 3), length="n"), "n": Range(1, 3)})
def every_entry_positive(v, n):
    return all_of(*(d >= 1 for d in v))   # a loop over the whole vector sees the padding: refused
""",
        ("error", None),
    ),
    (
        "agg-negative-entries-total",
        """
@obligation(domain={"v": Vector(3, Range(-3, 3), length="n"), "n": Range(1, 3)})
def total_above(v, n):
    return total(v) >= -3 * n + 1
""",
        ("counterexample", None),
    ),
    (
        "agg-length-zero-allowed",
        """
@obligation(domain={"v": Vector(3, Range(1, 3), length="n"), "n": Range(0, 3)})
def min_fits(v, n):
    return min_of(v) <= 3           # min_of of an empty batch raises
""",
        ("error", None),
    ),
    (
        "agg-assumption-constrains-the-batch",
        """
@obligation(domain={"v": Vector(3, Range(0, 3), length="n"), "n": Range(1, 3)},
            assumptions={"budget": lambda v: total(v) <= 3})
def max_fits(v, n):
    return max_of(v) <= 2
""",
        ("counterexample", None),
    ),
    # ---- symbolic forking: loops, builtins, exceptions, bit operations, nondeterminism ----------
    (
        "fork-while-loop-on-a-symbolic-bound",
        """
@obligation(domain={"n": Range(0, 20)})
def stepped(n):
    i = 0
    while i < n:
        i += 3
    return i <= n + 1               # false at n = 1 (i = 3)
""",
        ("counterexample", {"n": 1}),
    ),
    (
        "fork-while-loop-exhausts-the-budget",
        """
@obligation(domain={"n": Range(0, 40)}, fork_budget=3)
def counted(n):
    i = 0
    while i < n:
        i += 1
    return i == n                   # true, but 41 paths
""",
        ("unknown", None),
    ),
    (
        "fork-global-counter-model",
        """
_calls = [0]
def width(n):
    _calls[0] += 1
    return n + (1 if _calls[0] > 2 else 0)   # differs from the third call on

@obligation(domain={"n": Range(0, 20)})
def counter_width(n):
    return at_most(demand=width(n), capacity=n)
""",
        ("error", None),
    ),
    (
        "fork-time-in-the-model",
        """
import time

@obligation(domain={"n": Range(0, 20)})
def timed(n):
    return at_most(demand=n + (1 if time.time() < 0 else 0), capacity=n)
""",
        ("proved", None),
    ),
    (
        "fork-exception-on-some-paths",
        """
def rows(n):
    if n > 30:
        raise ValueError("too long")
    return n

@obligation(domain={"n": Range(0, 40)})
def raising(n):
    return at_most(demand=rows(n), capacity=64)
""",
        ("error", None),
    ),
    (
        "fork-exception-caught-on-some-paths",
        """
def rows(n):
    try:
        if n > 30:
            raise ValueError("too long")
        return n
    except ValueError:
        return 100

@obligation(domain={"n": Range(0, 40)})
def caught(n):
    return at_most(demand=rows(n), capacity=64)
""",
        ("counterexample", {"n": 31}),
    ),
    (
        "fork-exception-in-an-assumption",
        """
def ok(n):
    if n > 30:
        raise ValueError("bad")
    return n < 40

@obligation(domain={"n": Range(0, 40)}, assumptions={"ok": ok})
def assumed(n):
    return n <= 30
""",
        ("error", None),
    ),
    (
        "fork-branch-inside-an-assumption",
        """
@obligation(domain={"n": Range(0, 40)}, assumptions={"a": lambda n: n < 10 if n % 2 else n < 20})
def parity_bound(n):
    return n < 15
""",
        ("counterexample", {"n": 16}),
    ),
    (
        "fork-builtin-sorted-median",
        """
@obligation(domain={"a": Range(0, 6), "b": Range(0, 6), "c": Range(0, 6)})
def median(a, b, c):
    return sorted([a, b, c])[1] <= max(a, b)
""",
        ("proved", None),
    ),
    (
        "fork-builtin-any-all",
        """
@obligation(domain={"a": Range(0, 8), "b": Range(0, 8)})
def any_all(a, b):
    return not (any([a > 6, b > 6]) and all(x > 3 for x in (a, b)))
""",
        ("counterexample", {"a": 4, "b": 7}),
    ),
    (
        "fork-builtin-min-max-three-args",
        """
@obligation(domain={"a": Range(-5, 5), "b": Range(-5, 5)})
def min_max(a, b):
    return min(a, b, 0) + max(a, b, 0) <= a + b + abs(a)
""",
        ("proved", None),
    ),
    (
        "fork-divmod",
        """
@obligation(domain={"a": Range(0, 50), "b": Range(1, 7)})
def quotient(a, b):
    q, r = divmod(a, b)
    return q * b + r == a and r < b and q <= 49
""",
        ("counterexample", {"a": 50, "b": 1}),
    ),
    (
        "bits-ceil-of-quotient-past-2-53",
        """
@obligation(domain={"a": Range(2**53, 2**53 + 3), "b": Range(1, 1)})
def ceil_fits(a, b):
    return at_most(demand=a, capacity=math.ceil(a / b) * b)   # the float quotient rounds at 2**53 + 1
""",
        ("error", None),
    ),
    (
        "bits-ceil-of-quotient-equals-cdiv-past-2-60",
        """
@obligation(domain={"a": Range(2**60, 2**60 + 40), "b": Range(1, 3)})
def ceil_is_cdiv(a, b):
    return math.ceil(a / b) == cdiv(a, b)
""",
        ("error", None),
    ),
    (
        "bits-right-shift-of-negatives",
        """
@obligation(domain={"n": Range(-8, 8)})
def halved(n):
    return (n >> 1) * 2 <= n - 1     # floor shift: equal for even n
""",
        ("counterexample", {"n": -8}),
    ),
    (
        "bits-and-masks-of-negatives",
        """
@obligation(domain={"n": Range(-20, 20)})
def masked(n):
    return all_of(n & 7 == n % 8, (n & -8) <= n, (n & -8) > n - 7)   # false where n % 8 == 7
""",
        ("counterexample", {"n": -17}),
    ),
    (
        "bits-bit-length-of-negatives",
        """
@obligation(domain={"n": Range(-9, 9)})
def short(n):
    return n.bit_length() <= 3      # (-9).bit_length() == 4
""",
        ("counterexample", {"n": -9}),
    ),
    (
        "bits-shift-count-past-64",
        """
@obligation(domain={"n": Range(0, 70), "s": Range(0, 3)})
def shifted(n, s):
    return (1 << n) >> s >= 1        # false for s > n; 1 << 70 is fine on ints
""",
        ("error", None),
    ),
    (
        "bits-bools-added-as-ints",
        """
@obligation(domain={"a": Range(0, 5), "b": Range(0, 5)})
def counted(a, b):
    return (a > 2) + (b > 2) + True <= 2
""",
        ("counterexample", {"a": 3, "b": 3}),
    ),
]


def _points(ob):
    """Every point of the domain; a Vector as its active entries (all of them, small sizes only)."""
    scalars = [n for n in ob.params if not isinstance(ob.domain[n], Vector)]
    axes = []
    for name in scalars:
        dom = ob.domain[name]
        axes.append(list(range(dom.lo, dom.hi + 1)) if isinstance(dom, Range) else dom.cases())
    for combo in itertools.product(*axes):
        point = dict(zip(scalars, combo))
        vectors = [n for n in ob.params if isinstance(ob.domain[n], Vector)]
        entries = []
        for name in vectors:
            v = ob.domain[name]
            n = v.size if v.length is None else point[v.length]
            entries.append([list(t) for t in itertools.product(range(v.elem.lo, v.elem.hi + 1), repeat=n)])
        for chosen in itertools.product(*entries):
            full = {**point, **dict(zip(vectors, chosen))}
            yield {p: full[p] for p in ob.params}


def _fails_on_ints(ob, point) -> bool:
    """True when the assumptions hold at ``point`` and the claim is false or raises there."""
    try:
        ev = evaluate(ob, concrete_args(ob, point))
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
        if not any(isinstance(d, Vector) for d in ob.domain.values()):
            assert result.counterexample.params == min(failing, key=lambda p: tuple(p.values()))
    verdict, point = expected
    assert result.verdict.value == verdict, result.message
    if point is not None:
        assert result.counterexample.params == point


# Attempts on batches too large to enumerate (where the aggregate abstraction's probe, two
# realised batches, does not see the difference): (id, spec body, a point where the claim fails on
# ints, expected verdict). The point is replayed on ints first, so the truth is exact.
B100 = "Vector(100, Range(0, 10))"
LARGE_ATTEMPTS = [
    (
        "agg-total-of-generator-under-all-of-100",
        f"""
@obligation(domain={{"batch": {B100}}})
def total_as_request(batch):
    return all_of(total(d for d in batch) <= 900)
""",
        {"batch": [10] * 100},
        "counterexample",
    ),
    (
        "agg-builtin-sum-under-all-of-100",
        f"""
@obligation(domain={{"batch": {B100}}})
def summed(batch):
    return all_of(sum(d for d in batch) <= 900)
""",
        {"batch": [10] * 100},
        "counterexample",
    ),
    (
        "agg-prefix-sums-last-under-all-of-100",
        f"""
@obligation(domain={{"batch": {B100}}})
def cu_seqlens_last(batch):
    return all_of(prefix_sums(batch)[-1] <= 900)
""",
        {"batch": [10] * 100},
        "counterexample",
    ),
    (
        "agg-any-of-wrapped-in-all-of-assumption-100",
        f"""
def some_long(batch):
    return all_of(any_of(*(d > 5 for d in batch)))
@obligation(domain={{"batch": {B100}}}, assumptions={{"some_long": some_long}})
def all_long(batch):
    return all_of(*(d > 5 for d in batch))
""",
        {"batch": [6] + [0] * 99},
        "counterexample",
    ),
    (
        "agg-builtin-max-wrapped-in-all-of-assumption-100",
        f"""
@obligation(domain={{"batch": {B100}}}, assumptions={{"some_long": lambda batch: all_of(max(d for d in batch) >= 5)}},
            fork_budget=4)   # builtin max forks per entry: a small budget keeps the bounded run short
def all_long(batch):
    return min_of(batch) >= 5
""",
        {"batch": [5] + [0] * 99},
        "counterexample",
    ),
    (
        "agg-for-loop-any-fold-assumption-100",
        f"""
def some_long(batch):
    found = False
    for d in batch:
        found = any_of(found, d > 5)
    return all_of(found)
@obligation(domain={{"batch": {B100}}}, assumptions={{"some_long": some_long}})
def all_long(batch):
    return min_of(batch) > 5
""",
        {"batch": [6] + [0] * 99},
        "counterexample",
    ),
    (
        "agg-walrus-keeps-the-last-entry-100",
        f"""
@obligation(domain={{"batch": {B100}}})
def last_long(batch):
    seen = all_of(*((last := d) >= 0 for d in batch))
    return all_of(seen, implies(all_of(last >= 5), min_of(batch) >= 5))
""",
        {"batch": [0] * 99 + [5]},
        "counterexample",
    ),
    (
        "agg-len-fallback-in-except-100",
        f"""
def rows(batch):
    try:
        return len(batch)
    except Exception:
        return 1
@obligation(domain={{"batch": {B100}}})
def rows_fit(batch):
    return implies(max_of(batch) >= 9, rows(batch) <= 1)
""",
        {"batch": [9] + [0] * 99},
        "counterexample",
    ),
    (
        "agg-isinstance-tuple-100",
        f"""
@obligation(domain={{"batch": {B100}}})
def fits(batch):
    return total(batch) <= 10 if isinstance(batch, tuple) else True
""",
        {"batch": [10, 1] + [0] * 98},
        "counterexample",
    ),
    (
        "agg-hasattr-count-100",
        f"""
@obligation(domain={{"batch": {B100}}})
def fits(batch):
    return max_of(batch) <= 3 if hasattr(batch, "count") else True
""",
        {"batch": [4] + [0] * 99},
        "counterexample",
    ),
    (
        "agg-fails-only-at-the-largest-batch",
        """
@obligation(domain={"v": Vector(4096, Range(1, 2**20), length="n"), "n": Range(1, 4096)})
def tokens_fit_32_bits(v, n):
    return less_than(index=total(v), capacity=2**32)      # only 4096 requests of 2**20 tokens reach it
""",
        {"v": [2**20] * 4096, "n": 4096},
        "counterexample",
    ),
    (
        "agg-per-request-bound-fails-only-past-2-20",
        """
@obligation(domain={"v": Vector(4096, Range(0, 2**21), length="n"), "n": Range(1, 4096)},
            assumptions={"budget": lambda v: total(v) <= 2**22})
def each_fits(v, n):
    return all_of(*(d < 2**20 + 1 for d in v))              # one request of 2**20 + 1 tokens fails
""",
        {"v": [2**20 + 1], "n": 1},
        "counterexample",
    ),
    (
        "agg-type-of-a-scalar-beside-a-batch-100",
        f"""
@obligation(domain={{"batch": {B100}, "n": Range(0, 64)}})
def fits(batch, n):
    return all_of(n < 60 if type(n) is int else True, total(batch) >= 0)
""",
        {"batch": [0] * 100, "n": 60},
        "error",
    ),
]


@pytest.mark.parametrize(
    "name, body, failing, expected",
    [
        pytest.param(
            *a, id=a[0], marks=[pytest.mark.slow] if a[0] == "agg-builtin-max-wrapped-in-all-of-assumption-100" else []
        )
        for a in LARGE_ATTEMPTS
    ],
)  # (that one takes ~20 s: the bounded encoding of 100 entries)
def test_large_attempt_gets_a_sound_verdict(spec_file, name, body, failing, expected):
    (ob,) = load_file(spec_file(HEADER + body, f"adv_{name.replace('-', '_')}.py"))
    assert _fails_on_ints(ob, failing), f"the attempt's point {failing} does not fail on ints"
    result = prove_obligation(ob, Options(density="off", minimize=False))  # any counterexample will do
    assert result.verdict is not Verdict.PROVED, f"proved, but fails on ints at {failing}"
    if result.verdict is Verdict.COUNTEREXAMPLE:
        holds, _, failed_assumptions = replay(ob, result.counterexample.params)
        assert not holds and not failed_assumptions
    assert result.verdict.value == expected, result.message


# ---- S3: Vector padding must be invisible, or the verdict an error -----------------
# (moved from tests/test_soundness.py; each failed on main before the fix)


def decide(path, name, **options):
    items = load_file(path)
    assert not hasattr(items, "message"), items
    ob = next(i for i in items if i.name == name)
    return ob, prove_obligation(ob, Options(**options))


PADDING = (
    HEADER
    + "from capproof import claim\n"
    + """
@obligation(domain={"n": Range(1, 4), "v": Vector(4, Range(1, 10), length="n")})
def min_true(n, v):
    return claim(min_of(v) >= 1, lowest=min_of(v))

@obligation(domain={"n": Range(1, 3), "v": Vector(4, Range(1, 10), length="n")}, expect="counterexample")
def min_false(n, v):
    return claim(min_of(v) <= 3, lowest=min_of(v))

@obligation(domain={"n": Choice(1, 2), "v": Vector(4, Range(1, 10), length="n")}, expect="counterexample")
def min_false_split(n, v):
    return claim(min_of(v) <= 3, lowest=min_of(v))

@obligation(domain={"n": Range(1, 4), "v": Vector(4, Range(0, 5), length="n", fill=9)})
def max_fill_above(n, v):
    return at_most(demand=max_of(v), capacity=5)

@obligation(domain={"n": Range(1, 4), "v": Vector(4, Range(0, 1), length="n", fill=7)})
def total_fill(n, v):
    return at_most(demand=total(v), capacity=4)

@obligation(domain={"n": Range(1, 4), "v": Vector(4, Range(0, 5), length="n")})
def len_sees_padding(n, v):
    return claim(len(v) == n, length=len(v))

@obligation(domain={"n": Range(1, 4), "v": Vector(4, Range(5, 9), length="n")})
def count_sees_padding(n, v):
    return at_most(demand=count(x < 5 for x in v), capacity=0)

@obligation(domain={"n": Range(0, 4), "v": Vector(4, Range(1, 10), length="n")})
def min_of_empty_batch(n, v):
    return min_of(v) >= 1
"""
)


@pytest.mark.parametrize(
    "name, verdict",
    [
        ("min_true", Verdict.PROVED),  # main: counterexample lowest=0 at v=[1] (the padding's 0)
        ("min_false", Verdict.COUNTEREXAMPLE),  # main: proved (every batch is padded with 0 <= 3)
        ("min_false_split", Verdict.COUNTEREXAMPLE),  # main: proved, with the length case-split
        ("max_fill_above", Verdict.PROVED),  # main: counterexample demand=9 (the fill) at v=[0]
        ("total_fill", Verdict.PROVED),  # main: counterexample demand=21 at v=[0]
    ],
)
def test_aggregates_over_a_padded_vector_see_the_batch_only(spec_file, name, verdict):
    ob, r = decide(spec_file(PADDING), name)
    assert r.verdict is verdict, r.message
    failing = [p for p in _points(ob) if _fails_on_ints(ob, p)]  # brute force: every batch of every length
    assert bool(failing) == (verdict is Verdict.COUNTEREXAMPLE), failing[:1]
    if verdict is Verdict.COUNTEREXAMPLE:
        # the shown batch fails on its own, without any padding
        holds, values, failed = replay(ob, r.counterexample.params, padding=False)
        assert not holds and not failed and values == r.counterexample.values
        assert r.counterexample.values == {"lowest": 4}


@pytest.mark.parametrize("name", ["len_sees_padding", "count_sees_padding"])
def test_a_model_that_sees_the_padding_is_an_error_not_a_verdict(spec_file, name):
    """main: a counterexample whose shown batch (e.g. n=1, v=[5]) does not fail."""
    _, r = decide(spec_file(PADDING), name)
    assert r.verdict is Verdict.ERROR
    assert "sees the padding" in r.message and "on the batch alone" in r.message


def test_min_of_an_empty_batch_is_reported(spec_file):
    _, r = decide(spec_file(PADDING), "min_of_empty_batch")
    assert r.verdict is Verdict.ERROR
    assert "min_of() of an empty batch" in r.message and "spec_under_test.py:" in r.message


def test_introspection_scan_flags_only_names_that_tell_a_symbolic_value_from_an_int(tmp_path):
    """``symbolic.introspections``: ``hasattr``/``getattr`` asked for a name only a symbolic value
    (or only an int) has is reported with the function and line; names both have (``numerator``,
    ``bit_length``) and attributes of other objects (``getattr(cfg, "hidden_size")``) are not."""
    import importlib.util

    from capproof.guard import introspections

    src = tmp_path / "introspect_models.py"
    src.write_text("""
def by_slot(x):
    return 0 if hasattr(x, "term") else x

def by_getattr_default(x):
    return getattr(x, "to_bytes", None) is None

def by_padding(batch):
    return len(getattr(batch, "padded", batch))

def common(x, cfg):
    return (hasattr(x, "numerator"), hasattr(x, "bit_length"), getattr(cfg, "hidden_size", 0))

def shadowed(x):
    hasattr = lambda o, n: True
    return hasattr(x, "term")

def calls_by_slot(x):
    return by_slot(x) + 1
""")
    spec = importlib.util.spec_from_file_location("introspect_models", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for name, attr in (("by_slot", "term"), ("by_getattr_default", "to_bytes"), ("by_padding", "padded")):
        (msg,) = introspections(getattr(mod, name))
        assert f"{name} at " in msg and f"for {attr!r}" in msg, msg
    assert introspections(mod.common) == [] and introspections(mod.shadowed) == []
    (followed,) = introspections(mod.calls_by_slot)  # reached through the global call
    assert "by_slot at " in followed
