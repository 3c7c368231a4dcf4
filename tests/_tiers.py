"""Which parameters of a parametrized test run in the fast tier (`make test`) and which in the
slow one (`make test-slow`, in .ci/run): the same test and assertions either way."""

from __future__ import annotations

from collections.abc import Iterable

import pytest


def fast_few(params: Iterable, fast: Iterable) -> list:
    """``params`` (plain values or ``pytest.param``\\ s, in order) as ``pytest.param``\\ s, each marked
    ``slow`` unless its first value is in ``fast``; ids and other marks are kept. ``fast`` names
    the representatives the fast tier keeps of a family that repeats one path many times.

    Raises ValueError when a name in ``fast`` is not a first value of ``params`` (a renamed
    parameter would otherwise leave the fast tier without its representative silently)."""
    fast = set(fast)
    out, seen = [], set()
    for p in params:
        values, marks, pid = (p.values, list(p.marks), p.id) if hasattr(p, "marks") else ((p,), [], None)
        seen.add(values[0])
        out.append(pytest.param(*values, marks=marks if values[0] in fast else [*marks, pytest.mark.slow], id=pid))
    if fast - seen:
        raise ValueError(f"not a parameter: {sorted(fast - seen)}")
    return out
