"""--jobs: the default is the cores available; work is submitted longest first from the previous
run's timings; results come back in declared order."""

from __future__ import annotations

import json
import os

from test_soundness import SHARED_STATE

from capproof import Options
from capproof.loader import load_file
from capproof.runner import _estimate, _previous_seconds, default_jobs, run


def test_default_jobs_is_the_cores_this_process_may_use():
    assert default_jobs() == len(os.sched_getaffinity(0)) >= 1


def test_previous_timings_skip_cached_contracts(tmp_path):
    path = tmp_path / "last-run.json"
    path.write_text(
        json.dumps(
            {
                "obligations": [{"id": "a", "seconds": 3.5}],
                "contracts": [{"id": "c", "seconds": 0.01, "cached": True}, {"id": "d", "seconds": 20}],
            }
        )
    )
    assert _previous_seconds(str(path)) == {"a": 3.5, "d": 20.0}
    assert _previous_seconds(str(tmp_path / "missing.json")) == {}
    (tmp_path / "bad.json").write_text("{not json")
    assert _previous_seconds(str(tmp_path / "bad.json")) == {}


SPEC = """
from capproof import Choice, Range, Vector, at_most, obligation
from capproof.arith import total

@obligation(domain={"a": Range(1, 10)})
def small(a):
    return at_most(d=a, c=10)

@obligation(domain={"k": Choice(range(1, 9)), "n": Range(1, 64), "v": Vector(64, Range(0, 9), length="n")})
def larger(k, n, v):
    return at_most(d=total(v), c=9 * n)

@obligation(domain={"b": Range(1, 10)}, expect="counterexample")
def last(b):
    return at_most(d=b, c=5)
"""


def test_estimates_put_the_larger_work_first_and_results_keep_declared_order(spec_file):
    path = spec_file(SPEC, "sched_spec.py")
    small, larger, last = load_file(path)
    assert _estimate("obligation", larger, {}) > _estimate("obligation", small, {})
    assert _estimate("obligation", small, {small.id: 99.0}) == 99.0
    result = run([path], Options(jobs=2, contracts=False, density="off"))
    assert [r.id.split("::")[1] for r in result.obligations] == ["small", "larger", "last"]
    assert [r.verdict.value for r in result.obligations] == ["proved", "proved", "counterexample"]


def test_short_obligations_share_a_process_and_contracts_and_long_ones_do_not(spec_file, monkeypatch):
    import capproof.runner as runner
    from capproof.obligation import contract

    monkeypatch.setattr(runner, "BATCH_ITEMS", 2)
    path = spec_file(SPEC, "sched_units.py")
    monkeypatch.chdir(os.path.dirname(path))  # only files under the working directory are batched
    small, larger, last = load_file(path)
    work = [
        ("obligation", small),
        ("obligation", larger),
        ("contract", contract("models/x.py::f")),
        ("obligation", last),
        ("obligation", small),
    ]
    previous = {larger.id: 3.0}
    assert runner._units(work, [1, 2, 0, 3, 4], previous, batch=True) == [[1], [2], [0, 3], [4]]
    assert runner._units(work, [1, 2, 0, 3, 4], previous, batch=False) == [[1], [2], [0], [3], [4]]


SHARED_PROCESS = (
    """
import os
from capproof import Range, obligation, at_most

@obligation(domain={"x": Range(0, 10)})
def first_fine(x):
    return at_most(demand=x, capacity=10)

@obligation(domain={"x": Range(0, 10)})
def exits_the_process(x):
    os._exit(3)

@obligation(domain={"x": Range(0, 10)})
def after_the_exit(x):
    return at_most(demand=x, capacity=10)

@obligation(domain={"x": Range(0, 10)})
def loops_forever(x):
    while True:
        pass

@obligation(domain={"x": Range(0, 10)}, expect="counterexample")
def after_the_loop(x):
    return at_most(demand=x, capacity=9)
"""
    + SHARED_STATE
)  # then a_sets_state, b_reads_state (test_soundness.py)


def test_a_shared_process_charges_only_the_item_that_broke_it(project):
    """Seven short obligations go to one process: the exit, the endless loop and the state change
    each get an error verdict, and every item after them is decided afresh, from the loaded module
    (the project is the working directory: its modules' state is what is fingerprinted)."""
    (project / "spec" / "shared_process.py").write_text(SHARED_PROCESS)
    result = run(["spec/shared_process.py"], Options(jobs=1, contracts=False, density="off", timeout=3))
    got = {r.id.split("::")[1]: (r.verdict.value, r.message) for r in result.obligations}
    assert got["exits_the_process"][0] == "error" and "exited with code 3" in got["exits_the_process"][1]
    assert got["loops_forever"][0] == "error" and "time limit" in got["loops_forever"][1]
    assert got["a_sets_state"][0] == "error" and "module state changed" in got["a_sets_state"][1]
    assert {k: v for k, (v, _) in got.items() if v != "error"} == {
        "first_fine": "proved",
        "after_the_exit": "proved",
        "after_the_loop": "counterexample",
        "b_reads_state": "proved",
    }
