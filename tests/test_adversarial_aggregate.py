"""Adversarial catalogue: the aggregate abstraction must not prove what ints refute.

The abstraction calls the element function of ``total(f(d) for d in batch)`` once, on a stand-in
entry; an element function with a side effect the claim reads ran once instead of once per entry.
A list derived from the batch (``[s for s in batch]``) saw the padding entries: its ``min_of``
was proved though false on the batch alone. Each attempt is brute forced on ints, padded and
alone (tests/_soundness_harness.py), and must not be proved.
"""

from __future__ import annotations

import pytest
from _soundness_harness import check

HEADER = "from capproof import Range, Vector, obligation, at_most, any_of, all_of, total, min_of, max_of\n"

ATTEMPTS = [
    (
        "element-function-with-a-side-effect",
        """
seen = []
def f(d):
    seen.append(d)
    return d
@obligation(domain={"n": Range(1, 3), "batch": Vector(3, Range(0, 20), length="n")})
def ob(n, batch):
    seen.clear()
    t = total(f(d) for d in batch)
    return any_of(t != 37, len(seen) == 1)
""",
    ),
    (
        "element-function-counting-in-a-closure",
        """
@obligation(domain={"n": Range(1, 3), "batch": Vector(3, Range(0, 20), length="n")})
def ob(n, batch):
    calls = [0]
    def f(d):
        calls[0] += 1
        return d
    t = total(f(d) for d in batch)
    return any_of(t != 37, calls[0] == 1)
""",
    ),
    (
        "derived-list-sees-the-padding",
        """
@obligation(domain={"n": Range(1, 2), "batch": Vector(3, Range(1, 5), length="n", fill=0)})
def ob(n, batch):
    return min_of([s for s in batch]) <= 3
""",
    ),
]


@pytest.mark.parametrize("name, body", ATTEMPTS, ids=[a[0] for a in ATTEMPTS])
def test_an_element_function_runs_as_on_ints_or_the_abstraction_stands_aside(spec_file, name, body):
    result = check(spec_file, name, body, header=HEADER)
    assert result.verdict.value != "proved", result.message


# Counterexamples on the aggregate abstraction over batches too large for the bounded encoding's
# minimisation: the point shown must lie in the domain and fail on ints padded and alone.
LARGE = [
    (
        "two-batches-sharing-one-length",
        """
@obligation(domain={"n": Range(1, 100), "a": Vector(100, Range(0, 5), length="n"),
                    "b": Vector(100, Range(0, 5), length="n")})
def ob(n, a, b):
    return at_most(demand=total(a) + total(b), capacity=17)
""",
        "counterexample",
    ),
    (
        "all-of-over-a-padded-batch-replayed-alone",
        """
@obligation(domain={"n": Range(1, 100), "a": Vector(100, Range(1, 5), length="n", fill=0)})
def ob(n, a):
    return all_of(*(x >= 1 for x in a))
""",
        "error",
    ),
]


@pytest.mark.parametrize("name, body, expected", LARGE, ids=[a[0] for a in LARGE])
def test_a_counterexample_of_the_abstraction_is_in_the_domain_and_fails_alone(name, body, expected, spec_file):
    from capproof import Options, Verdict
    from capproof.encode import replay
    from capproof.loader import load_file
    from capproof.prover import prove_obligation

    (ob,) = load_file(spec_file(HEADER + body, f"adv_{name.replace('-', '_')}.py"))
    result = prove_obligation(ob, Options(density="off"))
    assert result.verdict.value == expected, result.message
    if result.verdict is Verdict.COUNTEREXAMPLE:
        shown = result.counterexample.params
        lengths = {len(shown[v]) for v in ("a", "b") if v in shown}
        assert lengths == {shown["n"]}, shown
        for padding in (True, False):
            holds, _, failed = replay(ob, shown, padding)
            assert not holds and not failed, (shown, padding)
