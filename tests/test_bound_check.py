"""capproof bound --check: recorded bounds (proofs/bounds.json) certified, never trusted.

Every recorded number must be confirmed by an unsat query or a replay on ints; a wrong worst
demand, slack, demand at the tightest point or a witness that is not the smallest point makes the
certificate fail, and the obligation is then bounded from scratch.
"""

from __future__ import annotations

import copy
import json

import pytest
from click.testing import CliRunner
from test_bound import SPEC, VECTOR_SPEC

from capproof import loader
from capproof.bound import (
    Uncertified,
    _checked_fresh,
    bound_obligation,
    check_obligation,
    record_key,
    recorded_bounds,
    render_bounds_data,
)
from capproof.cli import main
from capproof.loader import load_file

TIES = """
from capproof import Range, at_most, obligation

@obligation(domain={"a": Range(0, 9), "b": Range(0, 9)})
def ties(a, b):
    return at_most(demand=a // 2 + b, capacity=20)
"""


def _obligations(spec_file, source: str, name: str = "spec_under_test.py"):
    return {ob.name: ob for ob in load_file(spec_file(source, name))}


def _entry(ob) -> dict:
    """The recorded entry of ``ob`` as proofs/bounds.json holds it (a JSON round trip)."""
    return json.loads(json.dumps(bound_obligation(ob).to_json()))


@pytest.fixture
def ties(spec_file):
    ob = _obligations(spec_file, TIES)["ties"]
    return ob, _entry(ob)


def test_the_canonical_points_of_a_tie_are_the_smallest(ties):
    """demand a // 2 + b: worst 13 at a in {8, 9}, b = 9; the recorded point is a = 8."""
    _, entry = ties
    (c,) = entry["cases"]
    assert (c["max_demand"], c["demand_point"]) == (13, {"a": 8, "b": 9})
    assert (c["min_slack"], c["demand_at_slack_point"], c["slack_point"]) == (7, 13, {"a": 8, "b": 9})


@pytest.mark.parametrize("name", ["doubled", "index_fits"])
def test_an_unchanged_record_is_certified_as_a_fresh_run_computes_it(spec_file, name):
    ob = _obligations(spec_file, SPEC)[name]
    entry = _entry(ob)
    assert check_obligation(ob, entry).to_json() == entry


@pytest.mark.parametrize("name", ["moe_tight", "moe_capacity_raised", "moe_capacity_lowered", "batch_total"])
def test_batch_records_are_certified_search_and_aggregate(spec_file, name):
    """Vector obligations: the search's minimum slack (tight, positive, insufficient) and the
    aggregate abstraction's exact bounds."""
    ob = _obligations(spec_file, VECTOR_SPEC, "spec_vectors.py")[name]
    entry = _entry(ob)
    assert entry["status"] == "bounded"
    assert check_obligation(ob, entry).to_json() == entry


def _tampered(entry: dict, **changes) -> dict:
    bad = copy.deepcopy(entry)
    bad["cases"][0].update(changes)
    return bad


@pytest.mark.parametrize(
    "changes",
    [
        {"max_demand": 14},  # too high: not attained
        {"max_demand": 12},  # too low: a larger demand exists
        {"demand_point": {"a": 9, "b": 9}},  # attains 13, but not the smallest point
        {"demand_point": {"a": 7, "b": 9}},  # the smallest... of demand 12
        {"min_slack": 8},  # too high
        {"min_slack": 6},  # too low: not attained
        {"demand_at_slack_point": 12},  # a larger demand has the same slack
        {"slack_point": {"a": 9, "b": 9}},  # not the smallest tightest point
        {"max_demand": "13"},  # not an integer
        {"case": {"a": 1}},  # not the case set
    ],
)
def test_a_wrong_record_fails_its_certificate(ties, changes):
    ob, entry = ties
    with pytest.raises(Uncertified):
        check_obligation(ob, _tampered(entry, **changes))


def test_a_wrong_relation_or_status_fails(ties):
    ob, entry = ties
    for key, value in (("relation", "demand <= other"), ("status", "unknown"), ("capacity_offset", 1)):
        with pytest.raises(Uncertified):
            check_obligation(ob, {**entry, key: value})


@pytest.mark.parametrize(
    "changes",
    [
        {"min_slack": 1},  # tight (0): slack <= 0 is sat
        {"min_slack": -1},  # an exact negative slack is never recorded
        {"slack_exact": False},  # insufficient, but the slack is not negative
    ],
)
def test_a_wrong_search_record_fails(spec_file, changes):
    ob = _obligations(spec_file, VECTOR_SPEC, "spec_vectors.py")["moe_tight"]
    entry = _entry(ob)
    with pytest.raises(Uncertified):
        check_obligation(ob, _tampered(entry, **changes))


def test_a_search_witness_must_replay_to_the_recorded_slack(spec_file):
    ob = _obligations(spec_file, VECTOR_SPEC, "spec_vectors.py")["moe_tight"]
    entry = _entry(ob)
    point = copy.deepcopy(entry["cases"][0]["slack_point"])
    point["counts"][0] += 1  # counted once no longer holds, or the slack moves
    with pytest.raises(Uncertified):
        check_obligation(ob, _tampered(entry, slack_point=point))
    point["counts"] = point["counts"][:-1]  # fewer entries than num_experts
    with pytest.raises(Uncertified):
        check_obligation(ob, _tampered(entry, slack_point=point))


def test_a_wrong_aggregate_record_fails(spec_file):
    ob = _obligations(spec_file, VECTOR_SPEC, "spec_vectors.py")["batch_total"]
    entry = _entry(ob)
    for changes in ({"max_demand": 21}, {"min_slack": 0}, {"demand_point": {"n": 3, "lens": [4, 5, 5]}}):
        with pytest.raises(Uncertified):
            check_obligation(ob, _tampered(entry, **changes))


def test_a_failed_certificate_falls_back_to_a_fresh_bound(ties):
    ob, entry = ties
    result = _checked_fresh(ob, _tampered(entry, max_demand=12), 20_000_000, 100.0)
    assert result.recomputed.startswith("certificate failed")
    assert result.to_json() == entry
    assert _checked_fresh(ob, None, 20_000_000, 100.0).recomputed == "not in the recorded bounds"
    assert _checked_fresh(ob, entry, 20_000_000, 100.0).recomputed == ""


def test_recorded_bounds_are_keyed_per_obligation_and_by_settings():
    data = {"bounds": [{"id": "spec/a.py::a", "status": "bounded"}], "skipped": ["spec/a.py::b"]}
    keys = {"spec/a.py::a": "k1", "spec/a.py::b": "k2"}
    text = render_bounds_data(data, keys, 20_000_000, 100.0)
    assert '  {"key":"k1","id":"spec/a.py::a","status":"bounded"}\n' in text  # one obligation a line
    rec, why = recorded_bounds(text, 20_000_000, 100.0)
    assert why == "" and rec["bounds"] == {"spec/a.py::a": {"id": "spec/a.py::a", "status": "bounded"}}
    assert rec["skipped"] == {"spec/a.py::b"} and rec["keys"] == keys
    assert json.loads(text)["skipped"] == [{"id": "spec/a.py::b", "key": "k2"}]
    assert recorded_bounds(text, 1_000, 100.0)[0] is None
    assert recorded_bounds("{not json", 20_000_000, 100.0)[0] is None
    # a file from before per-obligation keys: read, with no key (every obligation bounded again)
    old = '{"fingerprint": "f", "rlimit": 20000000, "waste_threshold_pct": 100.0, "skipped": ["x"], "bounds": []}'
    assert recorded_bounds(old, 20_000_000, 100.0)[0] == {"bounds": {}, "skipped": {"x"}, "keys": {}}


KEYED = """
from capproof import Range, at_most, obligation
from keyedmodels import a, b

@obligation(domain={"n": Range(1, 9)})
def uses_a(n):
    return at_most(demand=a.width(n), capacity=10)

@obligation(domain={"n": Range(1, 9)})
def uses_b(n):
    return at_most(demand=b.rows(n), capacity=20)
"""


def test_the_record_key_covers_what_the_obligation_reaches_and_not_the_rest(project, monkeypatch):
    """An edit to a model changes the keys of the obligations that reach it only; a change to
    capproof's command line or renderers changes none; the key holds no absolute path."""
    import sys

    (project / "keyedmodels").mkdir()
    (project / "keyedmodels" / "__init__.py").write_text("")
    (project / "keyedmodels" / "a.py").write_text("def width(n):\n    return n + 1\n")
    (project / "keyedmodels" / "b.py").write_text("def rows(n):\n    return 2 * n\n")
    monkeypatch.syspath_prepend(str(project))

    def keys() -> dict[str, str]:
        for name in [m for m in sys.modules if m.startswith("keyedmodels")]:
            del sys.modules[name]
        loader._loaded.clear()
        obs = load_file(str(project / "spec" / "keyed.py"))
        return {ob.name: record_key(ob, 20_000_000, 100.0) for ob in obs}

    (project / "spec" / "keyed.py").write_text(KEYED)
    before = keys()
    assert None not in before.values() and before == keys()
    (project / "keyedmodels" / "b.py").write_text("def rows(n):\n    return 2 * n + 1\n")
    after = keys()
    assert after["uses_a"] == before["uses_a"] and after["uses_b"] != before["uses_b"]
    # what bounds an obligation is capproof's deciding modules, not its command line or engine adapters
    from capproof.own_sources import BOUNDING, closure

    bounding = closure(BOUNDING)
    assert {"capproof.bound", "capproof.encode", "capproof.symbolic", "capproof.aggregate"} <= bounding
    assert not {"capproof.cli", "capproof.report", "capproof.coverage", "capproof.inventory"} & bounding
    assert not any(m.startswith("capproof.engines") for m in bounding)


def test_cli_check_certifies_falls_back_and_catches_changes(project):
    spec = project / "spec" / "caps.py"
    spec.write_text(SPEC.split('@obligation(domain={"x"')[0] + TIES.split("\n", 3)[3])
    runner = CliRunner()
    assert runner.invoke(main, ["bound", "--write"]).exit_code == 0
    data = project / "proofs" / "bounds.json"
    recorded = json.loads(data.read_text())
    assert [e["id"].split("::")[1] for e in recorded["bounds"]] == ["doubled", "index_fits", "ties"]
    ok = runner.invoke(main, ["bound", "--check"])
    assert ok.exit_code == 0 and "from scratch" not in ok.output, ok.output
    # a hand-edited record is not believed: bounded again, and the report is still the same
    data.write_text(data.read_text().replace('"max_demand":13', '"max_demand":14'))
    redone = runner.invoke(main, ["bound", "--check", "--no-cache"])
    assert redone.exit_code == 0 and "ties: certificate failed" in redone.output, redone.output
    # (with the cache, the bounds computed for these very sources are reused: the record is not read)
    cached = runner.invoke(main, ["bound", "--check"])
    assert cached.exit_code == 0 and "certificate failed" not in cached.output, cached.output
    # a changed spec: its obligations from scratch, and the stale report is caught
    spec.write_text(spec.read_text().replace("capacity=20", "capacity=200"))
    loader._loaded.clear()  # the in-process CLI runs would reuse the module loaded before
    stale = runner.invoke(main, ["bound", "--check"])
    assert stale.exit_code == 1 and "recorded for other sources" in stale.output, stale.output
    assert runner.invoke(main, ["bound", "--write"]).exit_code == 0
    assert runner.invoke(main, ["bound", "--check"]).exit_code == 0
    data.unlink()  # no record: from scratch, as before proofs/bounds.json existed
    missing = runner.invoke(main, ["bound", "--check"])
    assert missing.exit_code == 0 and "missing" in missing.output


SORTED_WITNESS = """
from capproof import Range, obligation, at_most
from capproof.arith import total
from capproof.domain import Vector

D = {"c": Range(1, 16), "n": Range(1, 4), "v": Vector(4, Range(0, 3), length="n")}

@obligation(domain=D)
def order_free(c, n, v):
    return at_most(d=total(v), capacity=c)

@obligation(domain=D)
def first_entry(c, n, v):
    return at_most(d=v[0] + total(v), capacity=c)

@obligation(domain=D, assumptions={"the last active entry is the largest": lambda n, v: all(x <= v[n - 1] for x in v)})
def last_is_largest(c, n, v):
    return at_most(d=total(v), capacity=c)
"""


def test_search_witness_entries_are_sorted_only_where_the_replay_agrees(spec_file):
    """A search witness's batch (Z3's arbitrary entries) is shown in descending order when that
    point replays on ints with the same demand and capacity and meets every assumption; an
    order-dependent demand or an assumption on the order keeps Z3's order. A point lists a batch's
    active entries (as many as its length: a point with more is outside the domain)."""
    from capproof.bound import _entries_sorted, _replayed
    from capproof.loader import load_file

    obs = {it.name: it for it in load_file(spec_file(SORTED_WITNESS, "sorted_witness.py"))}

    def sort(name, point):
        return _entries_sorted(obs[name], point, _replayed(obs[name], point, "d", "capacity")[:2], "d", "capacity")

    assert sort("order_free", {"c": 5, "n": 3, "v": [0, 2, 1]})["v"] == [2, 1, 0]
    assert sort("order_free", {"c": 5, "n": 2, "v": [0, 3]})["v"] == [3, 0]
    assert sort("first_entry", {"c": 9, "n": 3, "v": [0, 2, 1]})["v"] == [0, 2, 1]  # v[0] counts twice
    assert sort("last_is_largest", {"c": 9, "n": 3, "v": [1, 0, 2]})["v"] == [1, 0, 2]
