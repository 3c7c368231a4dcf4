"""Robust encodings: capproof.normalise rewrites are exact, and they decide facts that
the pairwise / min-equals-max forms left unknown. Equivalence is checked with Z3 (unsat of the
difference) and by brute force on small domains; verdicts by proving obligations as a user writes
them, with every counterexample replayed on ints."""

import itertools

import pytest
import z3

from capproof import Options, Verdict, prove
from capproof.arith import Padded, all_of, max_of, min_of
from capproof.encode import replay
from capproof.loader import load_file
from capproof.normalise import normalise
from capproof.symbolic import SymInt


def _vars(n, name="x"):
    return [SymInt.var(f"{name}{i}") for i in range(n)]


def _equivalent_z3(a: z3.BoolRef, b: z3.BoolRef, bounds=()) -> bool:
    s = z3.Solver()
    s.add(*bounds)
    s.add(a != b)
    return s.check() == z3.unsat


def _equivalent_brute(a: z3.BoolRef, b: z3.BoolRef, xs, values) -> bool:
    terms = [x.term if isinstance(x, SymInt) else x for x in xs]
    for point in itertools.product(values, repeat=len(terms)):
        sub = [(t, z3.IntVal(v)) for t, v in zip(terms, point)]
        if not z3.is_true(z3.simplify(z3.substitute(a, *sub) == z3.substitute(b, *sub))):
            return False
    return True


def _pairwise(xs, groups):
    return all_of(*(xs[g[i]] != xs[g[j]] for g in groups for i in range(len(g)) for j in range(i + 1, len(g)))).term


@pytest.mark.parametrize("groups", [[[0, 1, 2]], [[0, 1, 2, 3]], [[0, 1, 2], [3, 4, 5]], [[0, 1, 2, 3, 4]]])
def test_pairwise_distinctness_becomes_distinct_and_count_form_equivalently(groups):
    n = max(i for g in groups for i in g) + 1
    xs = _vars(n)
    term = _pairwise(xs, groups)
    norm = normalise(term, {f"x{i}": (0, 3) for i in range(n)})
    assert norm.notes and "Distinct" in norm.notes[0] and "count form" in norm.notes[0]
    assert any(z3.is_distinct(c) for c in norm.term.children())
    assert _equivalent_z3(term, norm.term)  # for every integer value, not only the bounds
    assert _equivalent_brute(term, norm.term, xs, range(0, 4) if n <= 5 else range(0, 3))


def test_count_form_values_outside_the_bounds_stay_equivalent():
    xs = _vars(3)
    term = _pairwise(xs, [[0, 1, 2]])
    norm = normalise(term, {"x0": (0, 1), "x1": (0, 1), "x2": (0, 1)})  # too narrow: facts only for 0, 1
    assert _equivalent_z3(term, norm.term)
    assert _equivalent_brute(term, norm.term, xs, range(-1, 4))


def test_incomplete_disequality_graphs_and_other_conjuncts_are_kept():
    xs = _vars(4)
    # a path x0 != x1 != x2 != x3 is not "all distinct": x0 == x2 is allowed
    chain = all_of(xs[0] != xs[1], xs[1] != xs[2], xs[2] != xs[3]).term
    assert normalise(chain).notes == [] and normalise(chain).term.eq(chain)
    # a complete group plus a stray disequality and an inequality
    term = all_of(*(xs[i] != xs[j] for i in range(3) for j in range(i + 1, 3)), xs[0] != xs[3], xs[3] >= 2).term
    norm = normalise(term, {f"x{i}": (0, 3) for i in range(4)})
    assert norm.notes
    assert _equivalent_z3(term, norm.term)
    assert _equivalent_brute(term, norm.term, xs, range(0, 4))


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("order", ["min == max", "max == min"])
def test_min_equals_max_becomes_one_shared_value_equivalently(n, order):
    xs = _vars(n)
    eq = min_of(xs) == max_of(xs) if order == "min == max" else max_of(xs) == min_of(xs)
    term = eq.term
    if n == 1:
        assert z3.is_true(term) and normalise(term).notes == []  # plainly true, nothing to rewrite
        return
    norm = normalise(term)
    assert norm.notes and "one shared value" in norm.notes[0]
    assert _equivalent_z3(term, norm.term)
    assert _equivalent_brute(term, norm.term, xs, range(0, 3) if n <= 5 else range(0, 2))


def test_min_and_max_over_different_entries():
    """Lists sharing an entry p: bounds around p (exact); sharing none, or not an equality: kept."""
    xs = _vars(4)
    term = (min_of(xs[:3]) == max_of(xs[1:])).term
    norm = normalise(term)
    assert norm.notes and "bounds around a shared entry" in norm.notes[0]
    assert _equivalent_z3(term, norm.term)
    assert _equivalent_brute(term, norm.term, xs, range(0, 3))
    for term in ((min_of(xs[:2]) == max_of(xs[2:])).term, (min_of(xs) <= max_of(xs)).term):
        assert normalise(term).notes == [] and normalise(term).term.eq(term)


def test_select_shaped_like_a_minimum_is_a_minimum():
    """A user's `select(a <= b, a, b)` is recognised as min(a, b): the rewrite is still exact."""
    from capproof.arith import select

    a, b = _vars(2)
    term = (select(a <= b, a, b) == select(a <= b, b, a)).term
    norm = normalise(term)
    assert norm.notes and _equivalent_z3(term, norm.term)
    assert _equivalent_brute(term, norm.term, [a, b], range(0, 4))


@pytest.mark.parametrize("fill", [0, 9])
def test_padded_symbolic_length_uniformity_is_left_alone_soundly(fill):
    """With a symbolic length, Z3's simplifier folds the padding selects into the minimum's
    ``If`` tree, so it is not recognised (the aggregate abstraction decides those batches); any
    rewrite that does happen must be exact."""
    xs = _vars(4)
    n = SymInt.var("n")
    v = Padded(tuple(xs), n, fill, 1, 8)
    term = (min_of(v) == max_of(v)).term
    norm = normalise(term)
    assert _equivalent_z3(term, norm.term)
    assert _equivalent_brute(term, norm.term, [*xs, n], range(0, 3))


# --- verdicts on obligations written as a user would -------------------------------------------

DISTINCT = """
from capproof import Range, Vector, obligation, claim
from capproof.arith import all_of, count

T, K, E = {T}, 4, 8

@obligation(domain={{"topk_ids": Vector(T * K, Range(0, E - 1))}},
            assumptions={{"distinct experts per token": lambda topk_ids: all_of(*(
                topk_ids[t * K + i] != topk_ids[t * K + j] for t in range(T) for i in range(K) for j in range(i + 1, K)))}},
            expect="{expect}")
def expert_rows_fit(topk_ids):
    return claim(all_of(*(count(x == e for x in topk_ids) <= {rows} for e in range(E))), rows={rows})
"""


def test_distinct_experts_per_token_written_pairwise_is_proved(spec_file):
    """16 tokens x top-4 of 8 experts, every expert gets at most one row per token.
    Pairwise it was unknown at the default rlimit (also on main at 64 tokens); normalised it is
    proved, and the verdict says the assumption was re-encoded."""
    (ob,) = load_file(spec_file(DISTINCT.format(T=16, expect="proved", rows=16)))
    r = prove(ob, Options(density="off"))
    assert r.verdict is Verdict.PROVED, r.message
    assert r.assumptions_used == ["distinct experts per token"]
    assert r.normalised and "Distinct over 16 group(s) of 4 entries" in r.normalised[0]
    assert "encoded equivalently" in r.message and r.to_json()["normalised"] == r.normalised


def test_distinct_experts_counterexample_still_replays(spec_file):
    """One row fewer than tokens: every token routed to the same expert overflows; the
    counterexample is found on the normalised encoding and replays on ints (distinct per token)."""
    (ob,) = load_file(spec_file(DISTINCT.format(T=4, expect="counterexample", rows=3)))
    r = prove(ob, Options(density="off"))
    assert r.verdict is Verdict.COUNTEREXAMPLE, r.message
    ids = r.counterexample.params["topk_ids"]
    assert all(len(set(ids[t * 4 : (t + 1) * 4])) == 4 for t in range(4))
    holds, _, failed = replay(ob, r.counterexample.params)
    assert not holds and not failed


UNIFORM = """
from capproof import Choice, Range, Vector, at_most, obligation
from capproof.arith import max_of, min_of, total

@obligation(domain={"k": Choice(1, 3), "decode_lens": Vector(8, Range(1, 8))},
            assumptions={"uniform": lambda decode_lens: min_of(decode_lens) == max_of(decode_lens),
                         "decode": lambda decode_lens, k: max_of(decode_lens) <= 1 + k},
            expect="EXPECT")
def rows_fit(k, decode_lens):
    return at_most(rows=8 * decode_lens[3], capacity=total(decode_lens) - SLACK)
"""


@pytest.mark.parametrize("slack,expect", [(0, "proved"), (1, "counterexample")])
def test_uniformity_as_min_equals_max_is_decided_and_reported(spec_file, slack, expect):
    (ob,) = load_file(spec_file(UNIFORM.replace("EXPECT", expect).replace("SLACK", str(slack))))
    r = prove(ob, Options(density="off"))
    assert r.verdict.value == expect, r.message
    assert any("one shared value" in n for n in r.normalised)
    if r.counterexample:
        lens = r.counterexample.params["decode_lens"]
        assert len(set(lens)) == 1
        holds, _, failed = replay(ob, r.counterexample.params)
        assert not holds and not failed


# --- diagnosis of unknown ----------------------------------------------------------------------


def test_unknown_names_what_made_it_hard_and_what_to_try(spec_file):
    """A pairwise fact the normaliser cannot group (a chain, not a clique) over a vector, with a
    claim Z3 cannot decide (Fermat's cubes, nonlinear), at a small rlimit: the message names the
    rlimit spent in the case, the nonlinear term, the vector size, the pairwise disequalities,
    and what to try."""
    (ob,) = load_file(
        spec_file(
            """
from capproof import Range, Vector, obligation, claim
from capproof.arith import all_of, total

@obligation(domain={"x": Range(1, 10**9), "y": Range(1, 10**9), "z": Range(1, 10**9), "ids": Vector(24, Range(0, 7))},
            assumptions={"neighbours differ": lambda ids: all_of(*(a != b for a, b in zip(ids, ids[1:])))},
            rlimit=200000)
def cubes(x, y, z, ids):
    return claim(all_of(x * x * x + y * y * y != z * z * z, total(ids) >= 0), x=x)
""",
            "hard_spec.py",
        )
    )
    r = prove(ob, Options(density="off"))
    assert r.verdict is Verdict.UNKNOWN, r.message
    m = r.message
    assert "rlimit spent" in m and "in this case (200,000 per query)" in m
    assert "nonlinear terms, e.g." in m
    assert "ids 24 entries" in m
    assert "23 pairwise disequalities" in m and "count form" in m
    assert "--rlimit 2000000" in m and "smaller vector" in m and "assumption bounding" in m
