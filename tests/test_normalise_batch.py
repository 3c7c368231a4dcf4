"""Robust encodings, batch forms: sortedness only where the claim and every assumption
are invariant under permuting the batch (adversarial order-dependent cases first), uniformity
``min_of == max_of`` over a batch with a symbolic ``Range`` length and a claim that indexes it,
and a ``Choice`` length decided like the ``Range`` of the same values. Verdicts are checked
against brute-force enumeration on ints and every counterexample is replayed."""

import itertools

import pytest
import z3

from capproof import Options, Verdict, prove
from capproof.encode import replay
from capproof.loader import load_file
from capproof.normalise import sorted_batch
from capproof.symbolic import fresh_z3_context

HEAD = """
from capproof import Choice, Range, Vector, at_most, claim, obligation
from capproof.arith import all_of, count, max_of, min_of, total
"""


def _prove(spec_file, body, name="spec_under_test.py"):
    """Load and prove ``body`` from a fresh Z3 context, as `capproof prove` decides each obligation
    (runner._decide): Z3's answers and core minimisation depend on the terms and queries made
    before in a context, and in the middle of the whole suite the 256-entry uniformity proof's
    `core.minimize` ran for more than 10 minutes (6.7 s from a fresh context)."""
    (ob,) = load_file(spec_file(HEAD + body, name))
    with fresh_z3_context():
        return ob, prove(ob, Options(density="off"))


def _sorted(r):
    return [n for n in r.normalised if "sorted" in n]


# --- sortedness: never where order matters ------------------------------------------------------


def test_order_dependent_claim_gets_no_sortedness(spec_file):
    """``v[0] <= v[-1]`` fails (v = [1, 0, ...]); sorting the batch would prove it."""
    ob, r = _prove(
        spec_file,
        """
@obligation(domain={"v": Vector(6, Range(0, 3))}, expect="counterexample")
def first_at_most_last(v):
    return at_most(first=v[0], last=v[-1])
""",
    )
    assert r.verdict is Verdict.COUNTEREXAMPLE, r.message
    assert not _sorted(r)
    holds, _, failed = replay(ob, r.counterexample.params)
    assert not holds and not failed


def test_order_dependent_assumption_gets_no_sortedness(spec_file):
    """Claim order-independent, assumption ``v[0] > v[1]`` not: sorted, the assumptions would
    contradict the claim's negation and the counterexample (total 1) would become a false proof."""
    ob, r = _prove(
        spec_file,
        """
@obligation(domain={"v": Vector(4, Range(0, 3))}, assumptions={"descending head": lambda v: v[0] > v[1]},
            expect="counterexample")
def total_at_least_two(v):
    return claim(total(v) >= 2)
""",
    )
    assert r.verdict is Verdict.COUNTEREXAMPLE, r.message
    assert not _sorted(r)
    assert replay(ob, r.counterexample.params)[0] is False


def test_prefix_sum_claim_gets_no_sortedness(spec_file):
    """A prefix sum (the first two requests' tokens) is order-dependent."""
    ob, r = _prove(
        spec_file,
        """
@obligation(domain={"v": Vector(5, Range(0, 4))}, assumptions={"budget": lambda v: total(v) <= 8}, expect="counterexample")
def prefix_fits(v):
    return at_most(prefix=v[0] + v[1], capacity=4)
""",
    )
    assert r.verdict is Verdict.COUNTEREXAMPLE and not _sorted(r), r.message


def test_sorted_batch_refuses_a_non_invariant_term():
    xs = [z3.Int(f"x{i}") for i in range(4)]
    assert sorted_batch([xs[0] <= xs[3]], xs) is None
    assert sorted_batch([z3.Sum(xs) <= 5, xs[0] + xs[1] + xs[2] + xs[3] >= 1], xs) is not None
    # padding / non-variable entries are never sorted
    assert sorted_batch([z3.Sum(xs) <= 5], [xs[0], z3.IntVal(0)]) is None


# --- sortedness where order does not matter: same verdict as brute force -------------------------

ORDER_FREE = """
@obligation(domain={{"v": Vector(3, Range(0, 4)), "budget": Range(1, 12)}},
            assumptions={{"budget": lambda v, budget: total(v) <= budget}}, expect="{expect}")
def long_requests_fit(v, budget):
    return at_most(long_rows={scale} * count(x >= 2 for x in v), budget=budget)
"""


@pytest.mark.parametrize("scale", [1, 2, 3])
def test_order_independent_claim_is_sorted_and_keeps_its_verdict(spec_file, scale):
    """Brute force over every 3-entry batch in 0..4 and budget: the verdict is the enumeration's;
    the counterexample replays and is sorted."""
    fails = [
        (v, b)
        for v in itertools.product(range(5), repeat=3)
        for b in range(1, 13)
        if sum(v) <= b and not scale * sum(x >= 2 for x in v) <= b
    ]
    expect = "counterexample" if fails else "proved"
    ob, r = _prove(spec_file, ORDER_FREE.format(expect=expect, scale=scale))
    assert r.verdict.value == expect, r.message
    assert _sorted(r) and "sorted" in r.message
    if r.counterexample:
        v = r.counterexample.params["v"]
        assert v == sorted(v)
        holds, _, failed = replay(ob, r.counterexample.params)
        assert not holds and not failed


# --- uniformity with a Range length and a claim that indexes the batch ----------------------------

UNIFORM_RANGE = """
@obligation(domain={{"mnbt": Range(1, 2**16), "num_reqs": {length},
                    "decode_lens": Vector({size}, Range(1, 8), length="num_reqs")}},
            assumptions={{"uniform": lambda decode_lens: min_of(decode_lens) == max_of(decode_lens),
                         "budget": lambda decode_lens, mnbt: total(decode_lens) <= mnbt}},
            expect="{expect}")
def rows_fit(mnbt, num_reqs, decode_lens):
    return at_most(rows=num_reqs * decode_lens[0], capacity=mnbt - {slack})
"""


@pytest.mark.parametrize(
    "slack,expect",
    [
        (1, "counterexample"),
        # the proof at 256 requests (~3 s): the fast tier proves the same claim at 3 and 4 requests
        # against brute force (test_range_length_uniformity_matches_brute_force)
        pytest.param(0, "proved", marks=pytest.mark.slow),
    ],
)
def test_uniformity_with_a_range_length_and_an_indexing_claim_is_decided(spec_file, slack, expect):
    """The issue's example: Range length, min_of == max_of, a claim reading decode_lens[0]."""
    ob, r = _prove(spec_file, UNIFORM_RANGE.format(length="Range(1, 256)", size=256, expect=expect, slack=slack))
    assert r.verdict.value == expect, r.message
    assert any("one shared value" in n and "symbolic length" in n for n in r.normalised), r.normalised
    if r.counterexample:
        assert r.counterexample.minimized
        assert r.counterexample.params["num_reqs"] == 1 and r.counterexample.params["decode_lens"] == [1]
        holds, _, failed = replay(ob, r.counterexample.params)
        assert not holds and not failed


@pytest.mark.parametrize("size", [3, 4])
@pytest.mark.parametrize("slack", [0, 1])
def test_range_length_uniformity_matches_brute_force(spec_file, size, slack):
    fails = any(
        len(set(d)) == 1 and n * d[0] > m - slack
        for n in range(1, size + 1)
        for d in itertools.product(range(1, 9), repeat=n)
        for m in range(1, 40)
        if sum(d) <= m
    )
    expect = "counterexample" if fails else "proved"
    ob, r = _prove(spec_file, UNIFORM_RANGE.format(length=f"Range(1, {size})", size=size, expect=expect, slack=slack))
    assert r.verdict.value == expect, r.message


# --- a Choice length is decided like the Range of the same values --------------------------------


@pytest.mark.parametrize("slack,expect", [(1, "counterexample"), pytest.param(0, "proved", marks=pytest.mark.slow)])
def test_choice_length_gets_the_range_verdict(spec_file, slack, expect):
    results = {}
    for i, length in enumerate(("Range(1, 256)", "Choice(range(1, 257))")):
        ob, r = _prove(
            spec_file, UNIFORM_RANGE.format(length=length, size=256, expect=expect, slack=slack), f"spec_{i}.py"
        )
        assert r.verdict.value == expect, r.message
        results[length] = r
        if r.counterexample:
            holds, _, failed = replay(ob, r.counterexample.params)
            assert not holds and not failed
    choice = results["Choice(range(1, 257))"]
    assert any("decided as Range(1, 256)" in n for n in choice.normalised), (choice.message, choice.encoding_note)
    if choice.counterexample:
        assert choice.counterexample.params == results["Range(1, 256)"].counterexample.params


def test_choice_length_needing_concrete_ints_falls_back_to_the_case_split(spec_file):
    """A model that loops over ``range(num_reqs)`` needs the length as an int: the symbolic run
    splits ``range()`` into one path per length (at most 64) or the declared case split decides
    it; either way the verdict is the one written, and the least failing length is replayed."""
    ob, r = _prove(
        spec_file,
        """
@obligation(domain={"num_reqs": Choice(range(1, 9)), "v": Vector(8, Range(0, 3), length="num_reqs")},
            expect="counterexample")
def loop_total(num_reqs, v):
    return at_most(tokens=sum(v[i] for i in range(num_reqs)), capacity=20)
""",
    )
    assert r.verdict is Verdict.COUNTEREXAMPLE, r.message
    assert r.counterexample.params["num_reqs"] == 7
    holds, _, failed = replay(ob, r.counterexample.params)
    assert not holds and not failed


@pytest.mark.parametrize("fill", [0, 2, 9])
def test_recorded_uniformity_is_exact_under_the_domain_constraints(fill):
    """``min_of(v) == max_of(v)`` over a padded batch with a symbolic length, recognised from
    arith's record (``Trace.extrema``): equivalent to the written term wherever the case's domain
    constraints hold (n in 1..4, active entries in 1..3, padding equal to ``fill``), by Z3 and by
    enumeration."""
    from capproof.arith import Padded, max_of, min_of
    from capproof.normalise import normalise
    from capproof.symbolic import SymInt, tracing

    xs = [SymInt.var(f"x{i}") for i in range(4)]
    n = SymInt.var("n")
    with tracing() as trace:
        term = (min_of(Padded(tuple(xs), n, fill, 1, 3)) == max_of(Padded(tuple(xs), n, fill, 1, 3))).term
    norm = normalise(term, None, trace.extrema)
    assert any("symbolic length n" in note for note in norm.notes), norm.notes
    dom = [
        n.term >= 1,
        n.term <= 4,
        *(z3.If(i < n.term, z3.And(x.term >= 1, x.term <= 3), x.term == fill) for i, x in enumerate(xs)),
    ]
    s = z3.Solver()
    s.add(*dom, term != norm.term)
    assert s.check() == z3.unsat
    for length in range(1, 5):
        for active in itertools.product(range(1, 4), repeat=length):
            point = [*active, *[fill] * (4 - length)]
            sub = [(x.term, z3.IntVal(v)) for x, v in zip(xs, point)] + [(n.term, z3.IntVal(length))]
            written = z3.is_true(z3.simplify(z3.substitute(term, *sub)))
            assert written == z3.is_true(z3.simplify(z3.substitute(norm.term, *sub))) == (len(set(active)) == 1)


def test_ite_reads_finds_only_conditions_that_read_an_entry():
    """The walk that decides whether sorting is tried first (prover._ite_reads, C API) against a
    walk over Python's z3 wrappers, on terms where an entry is in the condition, only in a
    branch, deep in a shared sub-term, or absent."""
    from capproof.prover import _ite_reads

    v0, v1, x = z3.Ints("v0 v1 x")
    shared = z3.If(v1 > x, 1, 0) + 3
    cases = [
        (z3.If(v0 > 3, 1, 0) <= x, True),  # a threshold count
        (z3.If(x > 3, v0, v1) <= 5, False),  # entries in the branches only
        (z3.Sum([shared, shared * 2, x]) <= 9, True),  # shared DAG node, condition reads v1
        (z3.If(x > 3, 1, 0) + v0 <= v1, False),  # condition without entries
        (z3.If(v0 > 3, x > 1, x < 1), False),  # a Bool If (not an integer split)
    ]
    ids = {v0.get_id(), v1.get_id()}

    def by_wrappers(t):
        seen, stack = set(), [t]
        while stack:
            e = stack.pop()
            if e.get_id() in seen:
                continue
            seen.add(e.get_id())
            if z3.is_app(e) and e.decl().kind() == z3.Z3_OP_ITE and z3.is_int(e):
                sub = [e.arg(0)]
                while sub:
                    u = sub.pop()
                    if u.get_id() in ids:
                        return True
                    sub.extend(u.children())
            stack.extend(e.children())
        return False

    for term, expected in cases:
        assert _ite_reads(term.ctx, [term], ids) is expected == by_wrappers(term), term
