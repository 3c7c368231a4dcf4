"""Adversarial catalogue: what ``capproof bound`` reports is what the ints say.

Every bounded case is compared with brute force over its (small) domain on ints, padded and
alone: the minimum slack is the least ``effective capacity - demand`` of the relation each point's
claim returns (a model whose branches return ``less_than`` on one side and ``at_most`` on the
other gets ``capacity - 1`` on the first and ``capacity`` on the second); a case that is not
``insufficient`` has no admitted point where the claim fails (a demand below the relation's
lower end, ``0 <=`` or the dtype's, breaks the claim as surely as one above the capacity); every
point shown is inside the domain and gives the reported numbers padded and alone.
"""

from __future__ import annotations

import re

import pytest
from _brute import domain_points

from capproof.arith import dtype_range
from capproof.bound import bound_obligation, capacity_relation
from capproof.encode import concrete_args, evaluate
from capproof.loader import load_file

HEADER = "from capproof import Range, Choice, Vector, obligation, at_most, less_than, total, max_of\n"


def _ints(ob, point, padding):
    ev = evaluate(ob, concrete_args(ob, point, padding), witnesses=padding)
    return all(ev.assumptions.values()), ev.claim


def _effective(relation: str, capacity: int) -> int:
    _, _, offset = capacity_relation(relation)
    m = re.search(r" in (\w+)$", relation)
    eff = capacity - offset
    return eff if m is None else min(eff, dtype_range(m.group(1))[1])


def _in_case(ob, point, fixed):
    return all(point[k] == v for k, v in fixed.items())


def brute_check(ob, result):
    """Assert every bounded case of ``result`` agrees with the ints over its domain."""
    assert result.status == "bounded", result.message
    points = list(domain_points(ob))
    # a model reading its padding: its padded cases bound the padded vectors, its cases alone the batches alone
    split = any(c.alone for c in result.cases)
    for case in result.admitted():
        slacks, fails = [], []
        for point in points:
            if not _in_case(ob, point, case.fixed):
                continue
            for padding in (False,) if case.alone else (True,) if split else (True, False):
                admitted, claim = _ints(ob, point, padding)
                if not admitted:
                    continue
                values = dict(claim.values)
                d, c = values[result.demand], values[result.capacity]
                slacks.append(_effective(claim.relation, c) - d)
                if not claim.holds:
                    fails.append(point)
        if not case.insufficient:
            assert not fails, f"case {case.fixed} sufficient, but the claim fails on ints at {fails[0]}"
            assert case.min_slack == min(slacks), (case.fixed, case.min_slack, min(slacks))
        else:
            assert fails, f"case {case.fixed} insufficient, but the claim holds at every point"
        for point in (case.demand_point, case.slack_point, *([case.below_point] if case.below_point else [])):
            if not point:
                continue
            for name, dom in ob.domain.items():
                assert dom.contains(point[name]), f"{name}={point[name]} shown outside {dom.describe()}"
            seen = {padding: _ints(ob, point, padding) for padding in (True, False)}
            if case.alone:  # shown as its batch alone
                assert seen[False][0], f"{point} shown, but an assumption fails there alone"
                continue
            assert seen[True][0] and seen[False][0], f"{point} shown, but an assumption fails there"
            assert dict(seen[True][1].values) == dict(seen[False][1].values), f"{point}: padded and alone differ"


def _bound(spec_file, name, body):
    (ob,) = load_file(spec_file(HEADER + body, f"advb_{name.replace('-', '_')}.py"))
    return ob, bound_obligation(ob)


def test_branches_returning_less_than_and_at_most_get_each_its_own_effective_capacity(spec_file):
    """One branch indexes (``index < capacity``: effective capacity - 1), the other counts
    (``index <= capacity``): both are tight, neither is insufficient."""
    ob, r = _bound(
        spec_file,
        "forked-relations",
        """
@obligation(domain={"n": Range(0, 10)})
def forked(n):
    if n < 5:
        return less_than(index=n, capacity=5)
    return at_most(index=n, capacity=10)
""",
    )
    brute_check(ob, r)
    (case,) = r.cases
    assert (case.min_slack, case.insufficient) == (0, False), r.message
    assert case.min_capacity is None or case.max_demand == 10


def test_branches_in_the_other_order(spec_file):
    ob, r = _bound(
        spec_file,
        "forked-relations-reversed",
        """
@obligation(domain={"n": Range(0, 10)})
def forked(n):
    if n >= 5:
        return at_most(index=n, capacity=10)
    return less_than(index=n, capacity=4)
""",
    )
    brute_check(ob, r)
    (case,) = r.cases
    assert case.insufficient and case.min_slack == -1, r.message


@pytest.mark.parametrize("dtype", ["uint32", "uint8", "uint64"])
def test_an_unsigned_dtype_with_a_negative_demand_is_not_a_sufficient_bound(spec_file, dtype):
    ob, r = _bound(
        spec_file,
        f"negative-{dtype}",
        f"""
@obligation(domain={{"n": Range(-3, 10)}})
def negative(n):
    return at_most(demand=n, capacity=10, dtype="{dtype}")
""",
    )
    brute_check(ob, r)
    (case,) = r.cases
    assert case.insufficient and case.min_capacity is None, r.message
    assert case.below_point == {"n": -3} and case.demand_at_below_point == -3, case.to_json()
    assert not r.ok  # expected proved: the bound disagrees, as prove does


def test_a_negative_index_is_not_a_sufficient_bound(spec_file):
    ob, r = _bound(
        spec_file,
        "negative-index",
        """
@obligation(domain={"n": Range(0, 10)})
def negative(n):
    return less_than(index=n - 2, capacity=9)
""",
    )
    brute_check(ob, r)
    (case,) = r.cases
    assert case.insufficient and case.below_point == {"n": 0}, case.to_json()


@pytest.mark.parametrize(
    "params, domain, demand, method",
    [
        ("n, xs", '{"n": Range(1, 2), "xs": Vector(2, Range(-1, 3), length="n")}', "total(xs)", "aggregate"),
        ("xs", '{"xs": Vector(2, Range(0, 3))}', "xs[0] - xs[1]", "search"),
    ],
)
def test_a_negative_demand_in_a_batch_is_found(spec_file, params, domain, demand, method):
    ob, r = _bound(
        spec_file,
        f"negative-batch-{method}",
        f"""
@obligation(domain={domain})
def negative({params}):
    return at_most(demand={demand}, capacity=6, dtype="uint32")
""",
    )
    brute_check(ob, r)
    assert r.insufficient and {c.method for c in r.cases} == {method}, r.to_json()


def test_a_signed_dtype_keeps_its_negative_demands(spec_file):
    ob, r = _bound(
        spec_file,
        "negative-int32",
        """
@obligation(domain={"n": Range(-3, 10)})
def negative(n):
    return at_most(demand=n, capacity=10, dtype="int32")
""",
    )
    brute_check(ob, r)
    assert not r.insufficient and r.ok, r.message


def test_a_point_shown_is_replayed_alone(spec_file):
    """A demand that reads the padding: the worst point padded is not the worst alone; the bound
    is an error, never a number the batch alone contradicts."""
    ob, r = _bound(
        spec_file,
        "padding-demand",
        """
@obligation(domain={"n": Range(1, 3), "xs": Vector(3, Range(0, 2), length="n", fill=5)})
def padded(n, xs):
    return at_most(demand=len(xs) + max(xs), capacity=20)
""",
    )
    assert r.status != "bounded" or all(c.demand_point == {} for c in r.cases), r.to_json()


def test_bound_of_a_model_reading_its_padding_is_not_sufficient_where_the_batch_alone_fails(spec_file):
    """``len(lens)`` is the vector's size padded and the batch length alone: ``prove`` decides the
    batch alone (an error), ``bound`` reported min slack 0, sufficient, where k=37, n=1 demands 2
    (it bounded the padded vectors only). Now each batch length is bounded alone too."""
    ob, r = _bound(
        spec_file,
        "padding-len",
        """
from capproof import select

@obligation(domain={"k": Range(0, 40), "n": Range(1, 2), "lens": Vector(3, Range(1, 3), length="n")})
def b_len(k, n, lens):
    return at_most(demand=select(k == 37, 3 - len(lens), 0), capacity=0)
""",
    )
    assert r.status != "bounded" or brute_check(ob, r) is None, r.message
    assert r.status != "bounded" or r.insufficient, r.message  # k=37 with one or two requests alone


def test_bound_of_a_model_reading_its_padding_where_it_does_not_matter_is_still_bounded(spec_file):
    """A loop over the whole vector masked by the length reads the padding without changing a
    value (as the MoE routings and FlashInfer's page total do): bounded, each batch length alone
    too, and every case agrees with the ints padded and alone."""
    ob, r = _bound(
        spec_file,
        "padding-masked",
        """
from capproof import select

@obligation(domain={"n": Range(1, 4), "lens": Vector(4, Range(1, 3), length="n")})
def b_masked(n, lens):
    t = 0
    for i, x in enumerate(lens):
        t = t + select(i < n, x, 0)
    return at_most(demand=t, capacity=3 * n)
""",
    )
    assert r.status == "bounded", r.message
    assert [c.fixed for c in r.cases] == [{}, {"n": 1}, {"n": 2}, {"n": 3}, {"n": 4}]
    assert brute_check(ob, r) is None
