"""capproof.second_opinion: proved/vacuous verdicts tested on ints (small batches, Hypothesis)."""

from __future__ import annotations

from capproof.encode import checked_domains, replay
from capproof.loader import load_file
from capproof.second_opinion import second_opinion

HEADER = "from capproof import Range, Vector, obligation, at_most, total, min_of\n"


def _ob(spec_file, body: str, name: str):
    (ob,) = load_file(spec_file(HEADER + body, f"so_{name}.py"))
    return ob, checked_domains(ob, {}, 10**6)


def test_a_true_claim_gets_no_disagreement(spec_file):
    ob, domains = _ob(
        spec_file,
        """
@obligation(domain={"n": Range(1, 8), "xs": Vector(8, Range(0, 5), length="n")})
def fits(n, xs):
    return at_most(demand=total(xs), capacity=40)
""",
        "true",
    )
    assert second_opinion(ob, "proved", *domains) is None


def test_hypothesis_finds_what_the_boundary_values_miss_and_the_point_replays(spec_file):
    ob, domains = _ob(
        spec_file,
        """
@obligation(domain={"a": Range(0, 1000)})
def narrow(a):
    return at_most(demand=a % 7 + (a > 100) * (a < 400) * 100, capacity=50)
""",
        "mid",
    )
    found = second_opinion(ob, "proved", *domains, examples=10)
    assert found is not None and found.source == "Hypothesis"
    holds, _, failed = replay(ob, found.params)
    assert not holds and not failed
    assert second_opinion(ob, "proved", *domains, examples=0) is None  # the boundary values alone miss it


def test_a_claim_false_on_the_batch_alone_is_found_and_vacuous_is_checked(spec_file):
    ob, domains = _ob(
        spec_file,
        """
@obligation(domain={"n": Range(1, 2), "xs": Vector(3, Range(1, 5), length="n")})
def derived(n, xs):
    return min_of([s for s in xs]) <= 0
""",
        "alone",
    )
    found = second_opinion(ob, "proved", *domains)
    assert found is not None and found.how in ("padded", "alone")
    assert second_opinion(ob, "vacuous", *domains) is not None  # every point is admitted
