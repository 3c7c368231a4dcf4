"""Adversarial catalogue: induction over the batch must not prove what ints refute.

capproof.induction proves a claim over a batch walked by :func:`capproof.arith.fold` for every
batch size. A fold's ``step`` used to run only after the model had returned (on a symbolic final
state), so a step that reads a cell later rebound (a loop variable), a step with a side effect
the claim reads, or two folds of one step whose closure changed in between (merged into one walk)
were proved though false on ints. Each attempt fails at one sum (37) the int probe's structured
points do not reach; it is brute forced on ints (tests/_soundness_harness.py) and must not be
proved.
"""

from __future__ import annotations

import pytest
from _soundness_harness import check

HEADER = (
    "from capproof import Range, Vector, obligation, at_most, any_of, all_of, not_\nfrom capproof.arith import fold\n"
)
D = '@obligation(domain={"n": Range(1, 3), "batch": Vector(3, Range(0, 20), length="n")})\n'

ATTEMPTS = [
    (
        "step-reads-a-later-rebound-loop-variable",
        D
        + """
def f(n, batch):
    outs = []
    for k in (2, 1):
        outs.append(fold(lambda s, i, x: s + x * k, 0, batch))
    return outs[0] != outs[1] + 37
""",
    ),
    (
        "step-side-effect-read-by-the-claim",
        """
log = []
def step(s, i, x):
    log.append(x)
    return s + x
"""
        + D
        + """
def f(n, batch):
    log.clear()
    t = fold(step, 0, batch)
    return t * len(log) != 37 * 3
""",
    ),
    (
        "two-folds-of-one-step-whose-closure-changed",
        D
        + """
def f(n, batch):
    scale = {"k": 2}
    def step(s, i, x):
        return s + x * scale["k"]
    a = fold(step, 0, batch)
    scale["k"] = 1
    b = fold(step, 0, batch)
    return a != b + 37
""",
    ),
    (
        "step-writes-a-closure-cell",
        D
        + """
def f(n, batch):
    calls = 0
    def step(s, i, x):
        nonlocal calls
        calls += 1
        return s + x
    t = fold(step, 0, batch)
    return t * calls != 37 * 3
""",
    ),
]


@pytest.mark.parametrize("name, body", ATTEMPTS, ids=[a[0] for a in ATTEMPTS])
def test_a_fold_step_runs_as_on_ints_or_induction_stands_aside(spec_file, name, body):
    result = check(spec_file, name, body, header=HEADER)
    assert result.verdict.value != "proved", result.message
