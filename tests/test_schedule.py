"""--jobs: the default is the cores available; work is submitted longest first from the previous
run's timings; results come back in declared order."""

from __future__ import annotations

import json
import os

from capproof import Options
from capproof.loader import load_file
from capproof.runner import _estimate, _previous_seconds, default_jobs, run


def test_default_jobs_is_the_cores_this_process_may_use():
    assert default_jobs() == len(os.sched_getaffinity(0)) >= 1


def test_previous_timings_skip_cached_contracts(tmp_path):
    path = tmp_path / "last-run.json"
    path.write_text(json.dumps({"obligations": [{"id": "a", "seconds": 3.5}],
                                "contracts": [{"id": "c", "seconds": 0.01, "cached": True}, {"id": "d", "seconds": 20}]}))
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
