"""Parameter domains: finite ones are case-split, integer ranges stay symbolic, vectors are batches.

A domain never raises while a spec file is imported: problems (an empty or inverted range, a
non-integer bound) are kept in ``problem`` and reported against the obligation that uses the
domain, so the other obligations of the file still run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

__all__ = ["Domain", "Range", "Choice", "PowersOfTwo", "Vector", "MAX_CASES", "MAX_VECTOR_SIZE"]

#: Upper bound on the number of finite cases one obligation may split into.
MAX_CASES = 20_000
#: Upper bound on the number of entries of one :class:`Vector` (one Z3 ``Int`` each).
MAX_VECTOR_SIZE = 4096


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class Domain:
    """Base class of parameter domains."""

    finite: bool = False
    problem: str | None = None

    def contains(self, value: int) -> bool:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class Range(Domain):
    """The integers ``lo..hi``, both inclusive; kept symbolic (one Z3 ``Int``)."""

    lo: int
    hi: int
    finite = False

    @property
    def problem(self) -> str | None:  # type: ignore[override]
        if not (_is_int(self.lo) and _is_int(self.hi)):
            return f"range bounds must be ints, got {self.lo!r}..{self.hi!r}"
        if self.lo > self.hi:
            return f"empty range {self.lo}..{self.hi} (lo > hi)"
        return None

    def contains(self, value: int) -> bool:
        return self.lo <= value <= self.hi

    def describe(self) -> str:
        return f"{self.lo}..{self.hi}"


@dataclass(frozen=True, init=False)
class Choice(Domain):
    """An explicit finite set of ints; each value becomes its own case."""

    values: tuple[int, ...] = field(default=())
    finite = True

    def __init__(self, *values: int | Iterable[int]):
        flat: list = []
        for value in values:
            if isinstance(value, (list, tuple, range, set, frozenset)):
                flat.extend(value)
            else:
                flat.append(value)
        object.__setattr__(self, "values", tuple(flat))

    @property
    def problem(self) -> str | None:  # type: ignore[override]
        if not self.values:
            return "empty choice (no values)"
        bad = [v for v in self.values if not _is_int(v)]
        if bad:
            return f"choice values must be ints, got {bad[0]!r}"
        if len(set(self.values)) > MAX_CASES:
            return f"choice of {len(set(self.values))} values exceeds {MAX_CASES}: use a Range"
        return None

    def cases(self) -> list[int]:
        return sorted(set(self.values))

    def contains(self, value: int) -> bool:
        return value in self.values

    def describe(self) -> str:
        vals = self.cases() if self.problem is None else list(self.values)
        if len(vals) > 8:
            return "{" + ", ".join(map(str, vals[:4])) + f", … ({len(vals)} values), {vals[-1]}" + "}"
        return "{" + ", ".join(map(str, vals)) + "}"


@dataclass(frozen=True)
class PowersOfTwo(Domain):
    """The powers of two in ``lo..hi`` (inclusive); each value becomes its own case."""

    lo: int
    hi: int
    finite = True

    @property
    def problem(self) -> str | None:  # type: ignore[override]
        if not (_is_int(self.lo) and _is_int(self.hi)):
            return f"bounds must be ints, got {self.lo!r}..{self.hi!r}"
        if self.lo > self.hi:
            return f"empty range {self.lo}..{self.hi} (lo > hi)"
        if not self.cases():
            return f"no power of two in {self.lo}..{self.hi}"
        return None

    def cases(self) -> list[int]:
        out, p = [], 1
        while p <= self.hi:
            if p >= self.lo:
                out.append(p)
            p *= 2
        return out

    def contains(self, value: int) -> bool:
        return value in self.cases()

    def describe(self) -> str:
        return "{" + ", ".join(map(str, self.cases())) + "}" if self.problem is None else f"2^k in {self.lo}..{self.hi}"


@dataclass(frozen=True)
class Vector(Domain):
    """A batch or routing vector: ``size`` entries, each in ``elem`` (a :class:`Range`).

    The model receives a tuple of exactly ``size`` entries (ints or symbolic ints). With
    ``length="num_reqs"`` only the first ``num_reqs`` entries are free; the others equal ``fill``
    (default 0), so sums and maxima over the whole tuple are sums and maxima over the active
    entries. ``length`` names a scalar parameter of the same obligation whose domain lies in
    ``0..size``. When that parameter is case-split or pinned the padding entries are plain ints;
    when it is a ``Range`` they are symbolic and constrained to ``fill``.

    Example: ``"decode_lens": Vector(1024, Range(1, 6), length="num_decodes")``; per-expert token
    counts ``Vector(1024, Range(0, 8192), length="num_experts")``.
    A counterexample shows only the active entries; :meth:`expand` pads them back.
    """

    size: int
    elem: Domain
    length: str | None = None
    fill: int = 0
    finite = False

    @property
    def problem(self) -> str | None:  # type: ignore[override]
        if not _is_int(self.size) or not 1 <= self.size <= MAX_VECTOR_SIZE:
            return f"vector size must be an int in 1..{MAX_VECTOR_SIZE}, got {self.size!r}"
        if not isinstance(self.elem, Range):
            return f"vector entries must be a Range, got {self.elem!r}"
        if self.elem.problem:
            return f"vector entries: {self.elem.problem}"
        if self.length is not None and not isinstance(self.length, str):
            return f"vector length must name a parameter, got {self.length!r}"
        if not _is_int(self.fill):
            return f"vector fill must be an int, got {self.fill!r}"
        return None

    def contains(self, value: object) -> bool:
        if not isinstance(value, (list, tuple)) or len(value) > self.size:
            return False
        return all(_is_int(v) and self.elem.contains(v) for v in value)

    def expand(self, active: list[int] | tuple[int, ...]) -> tuple[int, ...]:
        """``active`` padded with ``fill`` to ``size`` entries. Raises ValueError if too long."""
        if len(active) > self.size:
            raise ValueError(f"{len(active)} entries exceed the vector size {self.size}")
        return (*active, *([self.fill] * (self.size - len(active))))

    def describe(self) -> str:
        n = f"{self.length} entries" if self.length else f"{self.size} entries"
        pad = f" (up to {self.size}; others {self.fill})" if self.length else ""
        return f"{n} in {self.elem.describe()}{pad}"
