"""The classic runtime fix for index-buffer overflows, as three indexers with checked contracts.

These are the seed's components (the pattern engines reach for after an overflow report):

- :class:`UncheckedIndexer` - capacity from a formula, no bounds check. This is the bug: an index
  at or past capacity is accepted and lands outside the buffer (here: in a spill map standing for
  the neighbouring allocation), so nothing fails where the write happens.
- :class:`SafeIndexer` - capacity ``worst_case × margin + 1`` (:func:`margin_capacity`) and a
  bounds check raising :class:`CapacityError` that names index and capacity.
- :class:`GrowingIndexer` - grows by doubling until the index fits, tracks peak usage and warns
  above a usage ratio.

Units: indices and capacities are in **rows** (entries of a 1-D buffer).
The contracts sit on the pure functions the classes delegate to (CrossHair confirms pure
functions over ints and short lists on all paths; it cannot exhaust a symbolic ``self``):
PEP 316 ``pre:``/``post:``/``raises:`` lines below, declared in ``spec/runtime_indexers.py``,
checked by CrossHair. :func:`margin_capacity` is also proved with Z3 there.
Sources: vllm-project/vllm#50302 thread and vllm-project/vllm#48404 (the bounds-check and
"reallocate during warm-up" alternatives), the "worst case × 1.1, grow by doubling" fixes named
in the capproof brief.
"""

from __future__ import annotations

import warnings

__all__ = [
    "CapacityError",
    "margin_capacity",
    "unchecked_row",
    "checked_row",
    "grown_capacity",
    "grown_write_kept",
    "write_growing",
    "UncheckedIndexer",
    "SafeIndexer",
    "GrowingIndexer",
]


class CapacityError(IndexError):
    """An index at or past a buffer's capacity; ``str()`` names both (in rows)."""

    def __init__(self, index: int, capacity: int):
        super().__init__()
        self.index = index
        self.capacity = capacity

    def __str__(self) -> str:
        # Under CrossHair the values are symbolic; formatting them would fork every path.
        if type(self.index) is int and type(self.capacity) is int:
            return f"index {self.index} >= capacity {self.capacity} rows"
        return "index >= capacity"


def margin_capacity(worst_case: int, margin_num: int = 11, margin_den: int = 10) -> int:
    """Capacity in rows for a worst-case demand of ``worst_case`` rows: ``worst_case × margin + 1``.

    The margin is the fraction ``margin_num / margin_den`` (default 1.1), applied with floor
    division so the model stays in integer arithmetic. Raises ZeroDivisionError for
    ``margin_den == 0``.

    pre: worst_case >= 0
    pre: margin_den > 0
    pre: margin_num >= margin_den
    post: __return__ > worst_case
    """
    return worst_case * margin_num // margin_den + 1


def unchecked_row(index: int, capacity: int) -> int:
    """The row an unchecked indexer writes for ``index``: ``index`` itself, whatever ``capacity``.

    The contract states what callers assume (the row is inside the buffer); it does not hold.

    pre: index >= 0
    post: __return__ < capacity
    """
    return index


def checked_row(index: int, capacity: int) -> int:
    """The row for ``index`` after a bounds check. Raises CapacityError if ``index >= capacity``.

    pre: index >= 0
    raises: CapacityError
    post: 0 <= __return__ < capacity
    """
    if index >= capacity:
        raise CapacityError(index, capacity)
    return index


def grown_capacity(capacity: int, index: int) -> int:
    """The capacity in rows after doubling ``capacity`` until row ``index`` fits.

    pre: capacity >= 1
    pre: 0 <= index < 2 ** 16
    post: __return__ > index
    post: __return__ == capacity or __return__ <= 2 * index
    """
    while index >= capacity:
        capacity *= 2
    return capacity


def grown_write_kept(rows: list[int], index: int, value: int, out: list[int]) -> bool:
    """Whether ``out`` is ``rows`` after a growing write of ``value`` at ``index`` (rows): all of

    - ``len(out) > index`` (the write fits);
    - ``len(out) == len(rows) or len(out) <= 2 * index`` (no growth, or at most twice the index);
    - ``out[index] == value`` (the write is not lost);
    - ``out[:min(index, len(rows))] == rows[:min(index, len(rows))]`` and ``out[index + 1:len(rows)]
      == rows[index + 1:]`` (no other old row changes: no write misplaced).

    Short-circuits on the first that fails.
    """
    n = len(rows)
    return (
        len(out) > index
        and (len(out) == n or len(out) <= 2 * index)
        and out[index] == value
        and out[: min(index, n)] == rows[: min(index, n)]
        and out[index + 1 : n] == rows[index + 1 :]
    )


def write_growing(rows: list[int], index: int, value: int) -> list[int]:
    """``rows`` grown by doubling until ``index`` fits, with ``value`` stored at ``index``.

    New rows are 0. No other row changes (no write lost or misplaced): :func:`grown_write_kept`,
    its facts checked as one postcondition so that CrossHair walks the path tree once, not once
    per fact (docs/performance.md). The bounds on ``rows`` and ``index`` keep that tree finite so
    it can confirm the contract.

    pre: 1 <= len(rows) <= 4
    pre: 0 <= index < 16
    post: grown_write_kept(rows, index, value, __return__)
    """
    capacity = grown_capacity(len(rows), index)
    out = rows + [0] * (capacity - len(rows))
    out[index] = value
    return out


class UncheckedIndexer:
    """A fixed-capacity buffer of ``capacity`` rows without a bounds check (the bug).

    Writes at ``index >= capacity`` succeed and land in ``spill``, standing for whatever memory
    follows the buffer: silent corruption, no error where the write happens.
    """

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.rows: dict[int, int] = {}
        self.spill: dict[int, int] = {}

    def write(self, index: int, value: int) -> None:
        row = unchecked_row(index, self.capacity)
        (self.rows if row < self.capacity else self.spill)[row] = value


class SafeIndexer:
    """A buffer of ``margin_capacity(worst_case, margin_num, margin_den)`` rows, bounds-checked.

    ``write`` raises CapacityError naming index and capacity instead of writing past the end.
    """

    def __init__(self, worst_case: int, margin_num: int = 11, margin_den: int = 10):
        self.worst_case = worst_case
        self.capacity = margin_capacity(worst_case, margin_num, margin_den)
        self.rows: dict[int, int] = {}

    def write(self, index: int, value: int) -> None:
        self.rows[checked_row(index, self.capacity)] = value


class GrowingIndexer:
    """A buffer that doubles until an index fits; tracks ``peak_rows`` and warns when full.

    Emits ``ResourceWarning`` when ``peak_rows`` exceeds ``warn_ratio_pct`` % of ``capacity``.
    """

    def __init__(self, capacity: int = 1, warn_ratio_pct: int = 90):
        self.rows: list[int] = [0] * max(1, capacity)
        self.warn_ratio_pct = warn_ratio_pct
        self.peak_rows = 0

    @property
    def capacity(self) -> int:
        return len(self.rows)

    def write(self, index: int, value: int) -> None:
        if index < 0:
            raise CapacityError(index, self.capacity)
        if index >= self.capacity:
            self.rows = write_growing(self.rows, index, value)
        else:
            self.rows[index] = value
        self.peak_rows = max(self.peak_rows, index + 1)
        if self.peak_rows * 100 > self.warn_ratio_pct * self.capacity:
            warnings.warn(
                f"usage {self.peak_rows}/{self.capacity} rows above {self.warn_ratio_pct}%",
                ResourceWarning,
                stacklevel=2,
            )

    def read(self, index: int) -> int:
        """The value last written at row ``index`` (0 if never written). Raises IndexError past capacity."""
        return self.rows[index]
