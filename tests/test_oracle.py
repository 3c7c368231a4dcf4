"""Independent brute-force oracle: every shipped obligation against plain-int enumeration.

For each obligation in spec/, enumerate a slice of its domain on plain ints (all finite cases,
the lowest values of each range) and check the verdict agrees: a proved claim holds at every
admitted point; an expected counterexample's minimised point is the smallest violating point of
the slice when the slice contains one. The fast tier uses a small slice; the slow tier a wide one.
"""

from __future__ import annotations

import itertools
import os

import pytest

from capproof import Options, Verdict
from capproof.loader import load
from capproof.obligation import Obligation
from capproof.prover import evaluate, prove_obligation
from conftest import ROOT


def _obligations() -> list[Obligation]:
    items, errors = load([os.path.join(ROOT, "spec")])
    assert not errors, errors
    return [it for it in items if isinstance(it, Obligation)]


def _slice(ob: Obligation, budget: int) -> list[dict[str, int]]:
    finite = {n: d.cases() for n, d in ob.domain.items() if d.finite}
    ranges = {n: d for n, d in ob.domain.items() if not d.finite}
    n_finite = 1
    for values in finite.values():
        n_finite *= len(values)
    per_range = max(2, int((budget / n_finite) ** (1 / max(1, len(ranges)))))
    axes = {**finite, **{n: list(range(d.lo, min(d.hi, d.lo + per_range - 1) + 1)) for n, d in ranges.items()}}
    names = ob.params
    return [dict(zip(names, combo)) for combo in itertools.product(*(axes[n] for n in names))]


def _check(ob: Obligation, budget: int) -> None:
    result = prove_obligation(ob, Options())
    violations = []
    for point in _slice(ob, budget):
        ev = evaluate(ob, point)
        if all(ev.assumptions.values()) and not ev.claim.holds:
            violations.append(point)
    if result.verdict is Verdict.PROVED:
        assert not violations, f"{ob.id} proved but brute force violates it at {violations[0]}"
    else:
        assert result.verdict is Verdict.COUNTEREXAMPLE, result.message
        if violations:
            smallest = min(violations, key=lambda p: tuple(p[n] for n in ob.params))
            assert result.counterexample.params == smallest


@pytest.mark.parametrize("ob", _obligations(), ids=lambda ob: ob.name)
def test_oracle_agrees_small_slice(ob):
    _check(ob, budget=3_000)


@pytest.mark.slow
@pytest.mark.parametrize("ob", _obligations(), ids=lambda ob: ob.name)
def test_oracle_agrees_wide_slice(ob):
    _check(ob, budget=300_000)
