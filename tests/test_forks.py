"""Forking on symbolic branches (:func:`capproof.symbolic.explore`).

The paths of an exploration must partition the inputs (exactly one path condition holds at every
point) and each path's value must be what the function computes on ints at the points of that
path: checked by Hypothesis on random points, on functions written the way engine code is
(``if``, ``and``/``or``, conditional expressions, builtin ``min``/``max``, early returns).
"""

from __future__ import annotations

import pytest
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from capproof.arith import divides, minimum, round_up, select
from capproof.errors import SymbolicBranchError
from capproof.symbolic import SymInt, explore, tracing

PROPERTY = settings(max_examples=150, deadline=None, database=None)


def engine_like(dcp, block_size, max_model_len):
    """Branches the way vLLM constructors do (shapes of vllm/v1/worker/block_table.py)."""
    if dcp > 1 and block_size % 2 == 0:
        block_size = block_size * dcp
    cols = (max_model_len + block_size - 1) // block_size
    width = max(cols, 4) if max_model_len > 64 else min(cols, 2)
    if not (width > 100) or dcp == 3:
        return width
    return width + 1


DOMAIN = {"dcp": (1, 8), "block_size": (1, 64), "max_model_len": (1, 512)}


def _z3_value(term, point):
    sub = [(z3.Int(k), z3.IntVal(v)) for k, v in point.items()]
    return z3.simplify(z3.substitute(term, *sub))


def _explore_engine_like():
    sym = {k: SymInt.var(k) for k in DOMAIN}
    bounds = [c for k, (lo, hi) in DOMAIN.items() for c in (sym[k].term >= lo, sym[k].term <= hi)]
    return explore(lambda: engine_like(**sym), assume=bounds)


EXPLORED = _explore_engine_like()


def test_engine_like_function_forks_into_several_complete_paths():
    assert EXPLORED.complete
    assert len(EXPLORED.paths) >= 4
    assert all(p.error is None for p in EXPLORED.paths)
    locations = {loc for p in EXPLORED.paths for loc, _, _ in p.decisions}
    assert all("test_forks.py:" in loc for loc in locations)
    assert "test_forks.py" in EXPLORED.paths[0].describe()


@PROPERTY
@given(st.fixed_dictionaries({k: st.integers(lo, hi) for k, (lo, hi) in DOMAIN.items()}))
def test_exactly_one_path_condition_holds_and_its_value_is_the_int_result(point):
    holding = [p for p in EXPLORED.paths if z3.is_true(_z3_value(p.condition.term, point))]
    assert len(holding) == 1, [p.describe() for p in holding]
    value = holding[0].value
    expected = engine_like(**point)
    got = _z3_value(value.term, point).as_long() if isinstance(value, SymInt) else value
    assert got == expected


def test_outside_explore_a_branch_still_raises():
    x = SymInt.var("x")
    with pytest.raises(SymbolicBranchError):
        bool(x > 0)
    with pytest.raises(SymbolicBranchError):
        bool(x)
    # and inside, then outside again
    explore(lambda: 1 if x > 0 else 2)
    with pytest.raises(SymbolicBranchError):
        bool(x > 0)


def test_constant_conditions_do_not_fork():
    x = SymInt.var("x")
    ex = explore(lambda: 1 if (x - x == 0) and (x + 1 > x) else 2)
    assert len(ex.paths) == 1 and ex.paths[0].decisions == [] and ex.paths[0].value == 1
    assert z3.is_true(z3.simplify(ex.paths[0].condition.term))


def test_infeasible_directions_are_pruned_under_assume_and_earlier_decisions():
    x = SymInt.var("x")

    def f():
        if x > 5:
            return 1 if x < 3 else 2  # x < 3 impossible after x > 5
        return 3

    ex = explore(f)
    assert sorted(p.value for p in ex.paths) == [2, 3]
    ex = explore(f, assume=[x.term <= 5])
    assert [p.value for p in ex.paths] == [3]
    # without feasibility checks both directions are run (still sound, just more paths)
    assert sorted(p.value for p in explore(f, check_feasible=False).paths) == [1, 2, 3]


def test_budget_exhausted_is_reported_incomplete():
    xs = [SymInt.var(f"x{i}") for i in range(6)]

    def f():
        return sum(1 if x > 0 else 0 for x in xs)  # 2**6 paths

    ex = explore(f, budget=10)
    assert not ex.complete and len(ex.paths) == 10 and ex.unexplored > 0
    full = explore(f, budget=64)
    assert full.complete and len(full.paths) == 64
    assert sorted(p.value for p in full.paths) == sorted(bin(i).count("1") for i in range(64))


def test_errors_on_a_path_are_kept_with_that_path():
    x = SymInt.var("x")

    def f():
        if x > 0:
            return 10
        raise ValueError("negative")

    ex = explore(f)
    by_value = {p.value: p for p in ex.paths}
    assert by_value[10].error is None
    assert isinstance(by_value[None].error, ValueError)


def test_nondeterministic_function_is_an_error_not_a_path():
    x, y = SymInt.var("x"), SymInt.var("y")
    calls = []

    def f():
        calls.append(1)
        cond = (x > 0) if len(calls) == 1 else (y > 0)
        if cond:
            return 1
        if x > 1:
            return 2
        return 3

    ex = explore(f)
    assert any(isinstance(p.error, SymbolicBranchError) and "deterministic" in str(p.error) for p in ex.paths)


def test_a_replayed_condition_equivalent_to_the_recorded_one_is_no_divergence():
    """A re-execution may rebuild the recorded condition in another form (``x >= 1`` for ``x > 0``;
    z3.simplify orders ``Or`` arguments by term ids): the same branch, decided by an unsat query of
    their difference. The engine-vocabulary fuzz found the second form (run 2)."""
    x = SymInt.var("x")
    calls = []

    def f():
        calls.append(1)
        if (x > 0) if len(calls) == 1 else (x >= 1):
            return 1
        return 2

    ex = explore(f)
    assert [p.error for p in ex.paths] == [None, None]
    assert sorted(p.value for p in ex.paths) == [1, 2]

    y, z = SymInt.var("y"), SymInt.var("z")

    def found_by_the_fuzz(y, z):  # the tree of docs/soundness.md, run 2
        return minimum(5, min(z, divmod(z, round_up(select(divides(-1, y), 0, 2**32 - 1), z))[1]))

    with tracing():
        ex = explore(lambda: found_by_the_fuzz(y, z), budget=512, check_feasible=False)
    assert ex.complete and len(ex.paths) == 2
    assert all(p.error is None for p in ex.paths), [str(p.error)[:200] for p in ex.paths]
    checked = 0
    for point in ({"y": yv, "z": zv} for yv in range(-2, 3) for zv in (-7, -3, -1, 1, 4, 7)):
        try:
            want = found_by_the_fuzz(point["y"], point["z"])
        except ZeroDivisionError:  # the round_up of 0 when -1 divides y: a divisor the path records
            continue
        checked += 1
        holding = [p for p in ex.paths if z3.is_true(_z3_value(p.condition.term, point))]
        assert len(holding) == 1
        assert _z3_value(holding[0].value.term, point).as_long() == want, point
    assert checked > 0


def test_boolean_operators_short_circuit_like_python():
    x, y = SymInt.var("x"), SymInt.var("y")
    ex = explore(lambda: (x > 0 and y > 0) or x == -5)
    # `a or b` returns b itself when a is false (no branch on b): x>0 & y>0 -> y > 0 (true);
    # x>0 & y<=0 -> the term x == -5; x<=0 -> the term x == -5
    assert len(ex.paths) == 3
    for point in ({"x": 1, "y": 1}, {"x": 1, "y": 0}, {"x": -5, "y": 3}, {"x": 0, "y": 0}):
        holding = [p for p in ex.paths if z3.is_true(_z3_value(p.condition.term, point))]
        assert len(holding) == 1
        value = holding[0].value
        got = z3.is_true(_z3_value(value.term, point)) if hasattr(value, "term") else value
        assert got == ((point["x"] > 0 and point["y"] > 0) or point["x"] == -5)


def test_nested_explore_restores_the_outer_one():
    x, y = SymInt.var("x"), SymInt.var("y")

    def inner():
        return len(explore(lambda: 1 if y > 0 else 2).paths)

    def outer():
        n = inner()
        return n * (1 if x > 0 else -1)

    assert sorted(p.value for p in explore(outer).paths) == [-2, 2]


def test_each_path_keeps_its_own_trace_of_caught_errors_and_side_conditions():
    from capproof.symbolic import tracing

    n = SymInt.var("n")

    def constructor():  # engine-style: a defensive fallback around an unsupported operation
        if n > 8:
            try:
                return n.to_bytes(8, "little")[0]
            except AttributeError:
                return 0
        return 1 << (n - 1).bit_length()

    with tracing() as outer:
        ex = explore(constructor)
    big, small = sorted(ex.paths, key=lambda p: not p.decisions[0][2])
    assert big.value == 0 and any("to_bytes" in m for m in big.trace.misuse)
    assert small.trace.misuse == [] and small.trace.side_conditions
    assert outer.misuse == big.trace.misuse  # also seen by a trace active around explore


def test_the_engine_tracer_explores_without_splitting_values_into_paths():
    """A size an engine constructor needs as an int (``range(n)``, an index) is split into one
    path per value in a model's run; the engine tracer explores with ``split=False``, so such a
    statement fails on its one path (and stays untraced) instead of spending the fork budget."""
    n = SymInt.var("n")
    bounds = [n.term >= 1, n.term <= 8]

    def needs_an_int():
        return len(list(range(n)))

    split = explore(needs_an_int, assume=bounds)
    assert split.complete and len(split.paths) == 8 and all(p.error is None for p in split.paths)
    whole = explore(needs_an_int, assume=bounds, split=False)
    assert len(whole.paths) == 1 and whole.paths[0].error is not None
