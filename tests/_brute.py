"""Brute force for adversarial tests: every point of a small obligation domain, on ints."""

from __future__ import annotations

import itertools

from capproof.domain import Choice, PowersOfTwo, Vector


def domain_values(dom) -> list[int]:
    """Every value of a scalar domain (a ``Range``, ``Choice`` or ``PowersOfTwo``)."""
    if isinstance(dom, (Choice, PowersOfTwo)):
        return dom.cases()
    return list(range(dom.lo, dom.hi + 1))


def domain_points(ob, pins: dict[str, int] | None = None):
    """Every point of ``ob``'s (small) domain with ``pins`` applied, each vector as its active
    entries (as many as its length parameter, or its size)."""
    pins = pins or {}
    dom = ob.domain
    scalars = [p for p in ob.params if not isinstance(dom[p], Vector)]
    vectors = [p for p in ob.params if isinstance(dom[p], Vector)]
    for combo in itertools.product(*([pins[p]] if p in pins else domain_values(dom[p]) for p in scalars)):
        base = dict(zip(scalars, combo))
        per = [
            [
                list(t)
                for t in itertools.product(
                    range(dom[p].elem.lo, dom[p].elem.hi + 1),
                    repeat=base[dom[p].length] if dom[p].length else dom[p].size,
                )
            ]
            for p in vectors
        ]
        for batches in itertools.product(*per):
            yield {**base, **dict(zip(vectors, batches))}
