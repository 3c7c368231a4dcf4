"""Runtime behaviour of ``models/runtime_indexers.py``: the three indexers and their pure helpers.

- ``UncheckedIndexer`` accepts out-of-range writes silently (they land in ``spill``): the bug.
- ``SafeIndexer`` has ``worst_case * 11 // 10 + 1`` rows and raises ``CapacityError`` at capacity.
- ``GrowingIndexer`` doubles until the index fits, never loses or misplaces a write, tracks
  ``peak_rows`` and emits ``ResourceWarning`` above 90 % usage.
"""

from __future__ import annotations

import os
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from models.runtime_indexers import (
    CapacityError,
    GrowingIndexer,
    SafeIndexer,
    UncheckedIndexer,
    checked_row,
    grown_capacity,
    grown_write_kept,
    margin_capacity,
    unchecked_row,
    write_growing,
)

PROPERTY = settings(max_examples=200, deadline=None, database=None)


def _is_power_of_two(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


# --------------------------------------------------------------------------------------------
# Pure functions
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("worst_case", "num", "den", "expected"),
    [
        (5469, 11, 10, 6016),  # 5469 * 11 = 60159; // 10 = 6015; + 1
        (0, 11, 10, 1),
        (1, 11, 10, 2),
        (9, 11, 10, 10),  # 99 // 10 = 9: the floor eats the margin, the +1 keeps it > worst case
        (10, 11, 10, 12),
        (100, 3, 2, 151),
        (7, 1, 1, 8),
    ],
)
def test_margin_capacity(worst_case, num, den, expected):
    assert margin_capacity(worst_case, num, den) == expected
    assert margin_capacity(worst_case, num, den) > worst_case


def test_margin_capacity_defaults_to_eleven_tenths():
    assert margin_capacity(5469) == 6016
    assert margin_capacity(1000) == 1101


def test_margin_capacity_zero_denominator_raises():
    with pytest.raises(ZeroDivisionError):
        margin_capacity(10, 11, 0)


@PROPERTY
@given(worst_case=st.integers(0, 10**7))
def test_margin_capacity_formula_and_postcondition(worst_case):
    capacity = margin_capacity(worst_case)
    assert capacity == worst_case * 11 // 10 + 1
    assert capacity > worst_case


def test_unchecked_row_returns_index_even_past_capacity():
    assert unchecked_row(0, 8) == 0
    assert unchecked_row(7, 8) == 7
    assert unchecked_row(8, 8) == 8  # its contract (row < capacity) does not hold
    assert unchecked_row(100, 8) == 100


def test_checked_row_in_range_and_at_capacity():
    assert checked_row(0, 6) == 0
    assert checked_row(5, 6) == 5
    with pytest.raises(CapacityError) as excinfo:
        checked_row(6, 6)
    assert excinfo.value.index == 6 and excinfo.value.capacity == 6
    assert str(excinfo.value) == "index 6 >= capacity 6 rows"
    with pytest.raises(CapacityError):
        checked_row(0, 0)
    assert issubclass(CapacityError, IndexError)


def test_capacity_error_does_not_format_values_that_are_not_ints():
    """Under CrossHair the index is a symbolic proxy, not an ``int``: the message names no value
    (formatting it would fork every path) but still says what failed."""

    class Proxy(int):  # stands for CrossHair's symbolic int: an int-like whose type is not int
        pass

    assert str(CapacityError(Proxy(7), 6)) == "index >= capacity"
    assert str(CapacityError(7, Proxy(6))) == "index >= capacity"


@pytest.mark.parametrize(
    ("capacity", "index", "expected"),
    [
        (1, 0, 1),
        (1, 1, 2),
        (1, 5, 8),
        (4, 3, 4),
        (4, 4, 8),
        (8, 7, 8),
        (3, 100, 192),  # 3 -> 6 -> 12 -> 24 -> 48 -> 96 -> 192
        (1, 5000, 8192),
        (1000, 5, 1000),  # already fits: unchanged
    ],
)
def test_grown_capacity(capacity, index, expected):
    # in a thread with a deadline (the doubling takes microseconds): a loop that never reaches the
    # index (a capacity reset or halved instead of doubled) fails the test instead of hanging it
    import threading

    out = []
    walk = threading.Thread(target=lambda: out.append(grown_capacity(capacity, index)), daemon=True)
    walk.start()
    walk.join(10)
    assert not walk.is_alive(), f"grown_capacity({capacity}, {index}) did not return within 10 s"
    assert out == [expected]


@PROPERTY
@given(capacity=st.integers(1, 4096), index=st.integers(0, 2**16 - 1))
def test_grown_capacity_postconditions(capacity, index):
    grown = grown_capacity(capacity, index)
    assert grown > index
    assert grown == capacity or grown <= 2 * index
    assert grown % capacity == 0 and _is_power_of_two(grown // capacity)


def test_write_growing_examples():
    rows = [1, 2, 3]
    assert write_growing(rows, 5, 9) == [1, 2, 3, 0, 0, 9]
    assert write_growing(rows, 1, 7) == [1, 7, 3]
    assert write_growing(rows, 3, 4) == [1, 2, 3, 4, 0, 0]
    assert write_growing([5], 0, 6) == [6]
    assert rows == [1, 2, 3]  # the input list is never mutated


@PROPERTY
@given(
    rows=st.lists(st.integers(-100, 100), min_size=1, max_size=40),
    index=st.integers(0, 500),
    value=st.integers(-100, 100),
)
def test_write_growing_loses_and_misplaces_nothing(rows, index, value):
    before = list(rows)
    out = write_growing(rows, index, value)
    assert rows == before
    assert len(out) == grown_capacity(len(rows), index)
    assert out[index] == value
    for i, old in enumerate(before):
        if i != index:
            assert out[i] == old
    assert all(v == 0 for i, v in enumerate(out) if i >= len(before) and i != index)


@pytest.mark.parametrize(
    "rows, index, value, out, kept",
    [
        ([1, 2, 3], 5, 9, [1, 2, 3, 0, 0, 9], True),  # write_growing's own results
        ([1, 2, 3], 1, 7, [1, 7, 3], True),
        ([1, 2, 3], 3, 4, [1, 2, 3, 4, 0, 0], True),
        ([1, 2, 3], 3, 4, [1, 2, 3], False),  # the write does not fit (out[index] would raise)
        ([1, 2, 3], 3, 4, [1, 2, 3, 4, 0, 0, 0, 0, 0], False),  # grown past twice the index
        ([1, 2, 3], 1, 7, [1, 2, 3], False),  # the write is lost, every other row kept
        ([1, 2, 3], 3, 4, [1, 2, 3, 0, 0, 0], False),  # lost after growing
        ([1, 2, 3], 1, 7, [7, 7, 3], False),  # a row before the index changed
        ([1, 2, 3], 1, 7, [1, 7, 7], False),  # a row after it changed
    ],
)
def test_grown_write_kept_refutes_each_wrong_result(rows, index, value, out, kept):
    """write_growing's postcondition on ints: each of its facts alone refutes a result (a lost write
    with every other row kept included), and a result that fits no row is refuted, not raised."""
    assert grown_write_kept(rows, index, value, out) is kept


# --------------------------------------------------------------------------------------------
# UncheckedIndexer: the bug
# --------------------------------------------------------------------------------------------


def test_unchecked_indexer_silently_spills_past_capacity():
    buffer = UncheckedIndexer(capacity=8)
    buffer.write(0, 10)
    buffer.write(7, 70)
    buffer.write(8, 80)  # at capacity: accepted, no error
    buffer.write(100, 1000)  # far past capacity: accepted, no error
    assert buffer.rows == {0: 10, 7: 70}
    assert buffer.spill == {8: 80, 100: 1000}  # silent corruption of whatever follows
    assert buffer.capacity == 8


@PROPERTY
@given(capacity=st.integers(1, 200), writes=st.lists(st.tuples(st.integers(0, 400), st.integers())))
def test_unchecked_indexer_routes_by_capacity(capacity, writes):
    buffer = UncheckedIndexer(capacity)
    for index, value in writes:
        buffer.write(index, value)  # never raises
    last = dict(writes)
    assert buffer.rows == {i: v for i, v in last.items() if i < capacity}
    assert buffer.spill == {i: v for i, v in last.items() if i >= capacity}


# --------------------------------------------------------------------------------------------
# SafeIndexer
# --------------------------------------------------------------------------------------------


def test_safe_indexer_capacity_is_worst_case_times_margin_plus_one():
    assert SafeIndexer(5469).capacity == 6016
    assert SafeIndexer(0).capacity == 1
    assert SafeIndexer(100, 3, 2).capacity == 151
    assert SafeIndexer(5469).worst_case == 5469


def test_safe_indexer_stores_below_capacity_and_raises_at_capacity():
    buffer = SafeIndexer(5469)
    buffer.write(0, 1)
    buffer.write(5469, 2)  # past the worst case but inside the margin
    buffer.write(6015, 3)  # last row
    assert buffer.rows == {0: 1, 5469: 2, 6015: 3}

    with pytest.raises(CapacityError) as excinfo:
        buffer.write(6016, 4)
    message = str(excinfo.value)
    assert "6016" in message
    assert message == "index 6016 >= capacity 6016 rows"

    with pytest.raises(CapacityError) as excinfo:
        buffer.write(7000, 5)
    message = str(excinfo.value)
    assert "7000" in message and "6016" in message
    assert excinfo.value.index == 7000 and excinfo.value.capacity == 6016

    assert buffer.rows == {0: 1, 5469: 2, 6015: 3}  # failed writes changed nothing


@PROPERTY
@given(worst_case=st.integers(0, 10_000), index=st.integers(0, 20_000), value=st.integers())
def test_safe_indexer_writes_iff_below_capacity(worst_case, index, value):
    buffer = SafeIndexer(worst_case)
    capacity = worst_case * 11 // 10 + 1
    assert buffer.capacity == capacity
    if index < capacity:
        buffer.write(index, value)
        assert buffer.rows == {index: value}
    else:
        with pytest.raises(CapacityError) as excinfo:
            buffer.write(index, value)
        assert str(index) in str(excinfo.value) and str(capacity) in str(excinfo.value)
        assert buffer.rows == {}


# --------------------------------------------------------------------------------------------
# GrowingIndexer
# --------------------------------------------------------------------------------------------


def _write_recording_warnings(buffer: GrowingIndexer, index: int, value: int) -> list:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        buffer.write(index, value)
    return [w for w in caught if issubclass(w.category, ResourceWarning)]


class GrowingIndexerMachine(RuleBasedStateMachine):
    """Random writes (indices 0..5000) against a dict model of the last value per row."""

    @initialize(initial=st.integers(0, 64))
    def start(self, initial):
        self.buffer = GrowingIndexer(initial)
        self.initial = max(1, initial)  # GrowingIndexer allocates at least one row
        self.model: dict[int, int] = {}
        assert self.buffer.capacity == self.initial
        assert self.buffer.peak_rows == 0

    @rule(index=st.integers(0, 5000), value=st.integers(-(2**31), 2**31))
    def write(self, index, value):
        resource_warnings = _write_recording_warnings(self.buffer, index, value)
        self.model[index] = value
        peak, capacity = self.buffer.peak_rows, self.buffer.capacity
        if peak * 100 > 90 * capacity:
            assert len(resource_warnings) == 1
            assert f"{peak}/{capacity}" in str(resource_warnings[0].message)
        else:
            assert resource_warnings == []

    @rule(index=st.integers(0, 5000))
    def write_low_index(self, index):
        # Rewrite an already-allocated row: capacity must not change.
        index %= self.buffer.capacity
        before = self.buffer.capacity
        self.write(index, -index)
        assert self.buffer.capacity == before

    @rule(index=st.integers(-5000, -1))
    def negative_index_raises(self, index):
        before = (list(self.buffer.rows), self.buffer.peak_rows)
        with pytest.raises(CapacityError):
            self.buffer.write(index, 1)
        assert (list(self.buffer.rows), self.buffer.peak_rows) == before

    @invariant()
    def capacity_covers_every_write(self):
        capacity = self.buffer.capacity
        assert all(index < capacity for index in self.model)
        assert capacity % self.initial == 0 and _is_power_of_two(capacity // self.initial)
        if self.model:
            assert capacity <= max(self.initial, 2 * max(self.model))

    @invariant()
    def no_write_lost_or_misplaced(self):
        for row in range(self.buffer.capacity):
            assert self.buffer.read(row) == self.model.get(row, 0)
        with pytest.raises(IndexError):
            self.buffer.read(self.buffer.capacity)

    @invariant()
    def peak_is_highest_written_row_plus_one(self):
        assert self.buffer.peak_rows == (max(self.model) + 1 if self.model else 0)


GrowingIndexerMachine.TestCase.settings = settings(
    max_examples=100, stateful_step_count=30, deadline=None, database=None
)
TestGrowingIndexerStateful = GrowingIndexerMachine.TestCase


@PROPERTY
@given(
    initial=st.integers(0, 64),
    writes=st.lists(st.tuples(st.integers(0, 5000), st.integers()), min_size=1, max_size=40),
)
def test_growing_indexer_sequence_of_writes(initial, writes):
    buffer = GrowingIndexer(initial)
    base = max(1, initial)
    model: dict[int, int] = {}
    for index, value in writes:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            buffer.write(index, value)
        model[index] = value
        capacity = buffer.capacity
        assert capacity > max(model)
        assert capacity % base == 0 and _is_power_of_two(capacity // base)
        assert capacity <= max(base, 2 * max(model))
        assert buffer.peak_rows == max(model) + 1
        assert buffer.rows == [model.get(row, 0) for row in range(capacity)]


def test_growing_indexer_grows_by_doubling():
    buffer = GrowingIndexer(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        buffer.write(4, 40)
        assert buffer.capacity == 8
        buffer.write(20, 200)
        assert buffer.capacity == 32
    assert buffer.read(4) == 40 and buffer.read(20) == 200 and buffer.read(5) == 0
    assert buffer.peak_rows == 21


def test_growing_indexer_warns_above_ninety_percent():
    buffer = GrowingIndexer(10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning at all while usage is low
        buffer.write(0, 1)
        buffer.write(8, 1)  # 9 / 10 = 90 %: not above
    with pytest.warns(ResourceWarning, match=r"10/10 rows above 90%"):
        buffer.write(9, 1)  # 10 / 10 > 90 %
    assert buffer.capacity == 10


def test_growing_indexer_default_is_one_row_that_the_first_write_fills():
    buffer = GrowingIndexer()
    assert buffer.capacity == 1
    with pytest.warns(ResourceWarning, match=r"1/1 rows above 90%"):
        buffer.write(0, 5)  # 1 row of 1: 100 % > the default 90 %
    assert buffer.capacity == 1 and buffer.rows == [5]


def test_growing_indexer_warning_is_not_attributed_to_runtime_indexers():
    # the warning names a caller's line (stacklevel 2), never the warn() call inside write()
    # (holds in mutmut's mutated copy too, where the caller is its trampoline)
    buffer = GrowingIndexer(1)
    with pytest.warns(ResourceWarning) as caught:
        buffer.write(0, 5)
    assert os.path.basename(caught[0].filename) != "runtime_indexers.py"


def test_growing_indexer_warning_points_at_the_writing_line():
    # stacklevel 2: the caller of write(), not runtime_indexers.py. (In mutmut's mutated copy the
    # trampoline adds frames, so this test fails there with no mutant active and the mutation run
    # leaves it out: its stacklevel mutant is checked by hand, docs/soundness.md.)
    buffer = GrowingIndexer(1)
    with pytest.warns(ResourceWarning) as caught:
        buffer.write(0, 5)
    assert caught[0].filename == __file__


def test_growing_indexer_warns_after_growth_lands_near_the_top():
    buffer = GrowingIndexer(1)
    with pytest.warns(ResourceWarning, match=r"1000/1024"):
        buffer.write(999, 7)  # grows to 1024; 1000/1024 ≈ 97.7 %
    assert buffer.capacity == 1024


def test_growing_indexer_no_warning_when_usage_low():
    buffer = GrowingIndexer(1024)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for index in (0, 10, 500, 920):  # peak 921: 92100 <= 90 * 1024 = 92160
            buffer.write(index, index)
    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []
    assert buffer.peak_rows == 921 and buffer.capacity == 1024
    with pytest.warns(ResourceWarning):
        buffer.write(921, 1)  # peak 922: 92200 > 92160


def test_growing_indexer_custom_warn_ratio():
    buffer = GrowingIndexer(100, warn_ratio_pct=50)
    assert _write_recording_warnings(buffer, 49, 1) == []  # 50 % is not above 50 %
    assert len(_write_recording_warnings(buffer, 50, 1)) == 1  # 51 %


def test_growing_indexer_negative_index_raises_capacity_error():
    buffer = GrowingIndexer(8)
    with pytest.raises(CapacityError) as excinfo:
        buffer.write(-1, 5)
    assert excinfo.value.index == -1 and excinfo.value.capacity == 8
    assert "-1" in str(excinfo.value) and "8" in str(excinfo.value)
    assert buffer.rows == [0] * 8 and buffer.peak_rows == 0
