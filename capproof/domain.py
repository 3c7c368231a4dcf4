"""Parameter domains: finite ones are case-split, integer ranges stay symbolic.

A domain never raises while a spec file is imported: problems (an empty or inverted range, a
non-integer bound) are kept in ``problem`` and reported against the obligation that uses the
domain, so the other obligations of the file still run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

__all__ = ["Domain", "Range", "Choice", "PowersOfTwo", "MAX_CASES"]

#: Upper bound on the number of finite cases one obligation may split into.
MAX_CASES = 20_000


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
