"""tests/mutation/activate.py (``make mutation-direct``): how its records become the figures of docs/soundness.md."""

from __future__ import annotations

import importlib.util
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _activate():
    spec = importlib.util.spec_from_file_location(
        "capproof_mutation_activate", os.path.join(ROOT, "tests", "mutation", "activate.py")
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


ORACLE = "tests/mutation/test_prove_kills.py::test_verdict_is_as_expected[{}]"


def test_prove_failures_that_are_not_a_changed_verdict_are_not_kills(tmp_path, monkeypatch, capsys):
    """A prove-oracle failure whose obligation ran out of rlimit (``unknown``) or is no longer
    declared (``missing``) is counted apart, not as killed by prove; the kill rate's denominator
    leaves out equivalent and unrun mutants only."""
    act = _activate()
    m = "models.vllm.gdn.x_state_index_column__mutmut_{}"
    recs = [
        {"mutant": m.format(1), "tests": "killed", "killed_by": "tests/test_model_values.py::t"},
        {
            "mutant": m.format(2),
            "tests": "survived",
            "prove": "killed",
            "prove_failed": ORACLE.format("spec/a.py::ob1"),
        },
        {
            "mutant": m.format(3),
            "tests": "survived",
            "prove": "killed",
            "prove_failed": ORACLE.format("spec/a.py::ob2"),
        },
        {
            "mutant": m.format(4),
            "tests": "survived",
            "prove": "killed",
            "prove_failed": ORACLE.format("spec/a.py::ob3"),
        },
        {"mutant": m.format(5), "tests": "survived", "prove": "no obligation"},
        {"mutant": m.format(6), "tests": "timeout", "prove": "survived"},
    ]
    outcomes = [
        {"mutant": m.format(3), "kind": "unknown", "obligation": "spec/a.py::ob2", "detail": ""},
        {"mutant": m.format(4), "kind": "missing", "obligation": "spec/a.py::ob3", "detail": ""},
        {
            "mutant": m.format(2),
            "kind": "unknown",
            "obligation": "spec/a.py::other",
            "detail": "",
        },  # not the failing one
    ]
    os.makedirs(tmp_path / "mutants")
    (tmp_path / "mutants" / act.RECORD).write_text("".join(json.dumps(r) + "\n" for r in recs))
    (tmp_path / "mutants" / "capproof-mutation-outcomes.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in outcomes)
    )
    monkeypatch.chdir(tmp_path)
    act.table([m.format(i) for i in range(1, 8)])
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| models/vllm/gdn.py")]
    assert rows == ["| models/vllm/gdn.py | 7 | 1 | 1 | 1 | 1 | 0 | 1 | 1 | 1 | 33.3 |"]


def test_a_spec_file_loaded_under_the_mutant_counts_for_its_obligations():
    """The call map's ``load:`` entries (a spec helper called while the file loads) select every
    obligation of that file; calls made while pytest collected (``?``) select none."""
    act = _activate()
    cmap = {
        "spec._inventory.x_cover": ["?", "load:/m/spec/vllm_0_33_buffers.py"],
        "models.vllm.gdn.x_state_index_column": [ORACLE.format("spec/per_batch_buffers.py::gdn")],
    }
    assert act._obligations_calling("spec._inventory.x_cover__mutmut_7", cmap) == ["load:/m/spec/vllm_0_33_buffers.py"]
    assert act._obligations_calling("models.vllm.gdn.x_state_index_column__mutmut_1", cmap) == [
        ORACLE.format("spec/per_batch_buffers.py::gdn")
    ]
    assert act._obligations_calling("models.moe_align.x_f__mutmut_1", cmap) == []


def test_saved_records_give_the_same_table(tmp_path, monkeypatch, capsys):
    """``--save DIR`` keeps every mutant's name and one record line per mutant (the last, when a
    mutant was rerun), so ``--table --records DIR`` prints the mutated copy's table without it."""
    act = _activate()
    m = "models.vllm.gdn.x_state_index_column__mutmut_{}"
    os.makedirs(tmp_path / "mutants" / "models" / "vllm")
    (tmp_path / "mutants" / "models" / "vllm" / "gdn.py.meta").write_text(
        json.dumps({"exit_code_by_key": {m.format(i): None for i in range(1, 5)}})
    )
    recs = [
        {"mutant": m.format(1), "tests": "killed", "killed_by": "tests/test_model_values.py::t"},
        {"mutant": m.format(2), "tests": "survived"},  # --tests-only, then the prove oracle
        {
            "mutant": m.format(2),
            "tests": "survived",
            "prove": "killed",
            "prove_failed": ORACLE.format("spec/a.py::ob1"),
        },
        {
            "mutant": m.format(3),
            "tests": "survived",
            "prove": "killed",
            "prove_failed": ORACLE.format("spec/a.py::ob2"),
        },
    ]
    outcome = (
        json.dumps({"mutant": m.format(3), "kind": "unknown", "obligation": "spec/a.py::ob2", "detail": ""}) + "\n"
    )
    (tmp_path / "mutants" / act.RECORD).write_text("".join(json.dumps(r) + "\n" for r in recs))
    (tmp_path / "mutants" / act.OUTCOMES).write_text(outcome * 2)
    monkeypatch.chdir(tmp_path)
    act.table(act.mutant_names())
    before = capsys.readouterr().out
    act.save("saved")
    assert len((tmp_path / "saved" / act.RECORD).read_text().splitlines()) == 3
    assert (tmp_path / "saved" / act.OUTCOMES).read_text() == outcome
    act.table(act.mutant_names("saved"), root="saved")
    after = capsys.readouterr().out
    assert after == before
    assert "| models/vllm/gdn.py | 4 | 1 | 1 | 1 | 0 | 0 | 0 | 0 | 1 | 66.7 |" in after.splitlines()


VERIFY_SPEC = """
from capproof import Range, at_most, obligation

def capacity(a):
    return 20

def demand(a, b):
    return a // 2 + b

@obligation(domain={"a": Range(0, 9), "b": Range(0, 9)})
def fits(a, b):
    return at_most(demand=demand(a, b), capacity=capacity(a))

@obligation(domain={"a": Range(0, 9), "b": Range(0, 9)}, expect="counterexample")
def overflows(a, b):
    return at_most(demand=demand(a, b), capacity=capacity(a) - 10)
"""


def test_verify_alone_sees_what_a_verdict_does_not(spec_file):
    """The verify-alone oracle (``activate.py --verify-alone``) on a spec whose helpers a "mutant"
    changes in place: decided twice unmutated, nothing differs (the oracle needs determinism); a
    raised capacity keeps both verdicts, the proved claim's report section unchanged, but fails
    its recorded bound's certificate (``bound --check``); a lowered demand keeps the counterexample
    verdict but moves the smallest counterexample (``report --check``)."""
    from capproof import loader
    from capproof.bound import bound_obligation

    act = _activate()
    path = spec_file(VERIFY_SPEC)

    class Oracle:  # the prove oracle's _reload: the spec file executed again
        @staticmethod
        def _reload(p):
            loader._loaded.pop(os.path.abspath(p), None)
            return loader.load_file(p)

    declared = {ob.name: ob for ob in Oracle._reload(path)}
    entry = json.loads(json.dumps(bound_obligation(declared["fits"]).to_json()))
    bounds = {
        "bounds": {declared["fits"].id: entry},
        "rlimit": 20_000_000,
        "waste_threshold_pct": entry["waste_threshold_pct"],
    }

    def outcomes():
        return {name: act.verify_one(Oracle, ob, bounds) for name, ob in declared.items()}

    base = outcomes()
    assert base["fits"]["json"]["verdict"] == "proved" and base["fits"]["bound"] == "certified"
    assert base["overflows"]["json"]["verdict"] == "counterexample" and "bound" not in base["overflows"]
    again = outcomes()
    assert all(act.verify_outcome(base[n], again[n]) == (None, "") for n in base)

    with open(path, "w") as fh:
        fh.write(VERIFY_SPEC.replace("return 20", "return 21"))
    raised = outcomes()
    assert raised["fits"]["json"]["verdict"] == "proved"
    kind, why = act.verify_outcome(base["fits"], raised["fits"])
    assert kind == "bound" and why.startswith("certificate failed")
    assert act.verify_outcome(base["overflows"], raised["overflows"])[0] == "report"  # the counterexample moves too

    with open(path, "w") as fh:
        fh.write(VERIFY_SPEC.replace("a // 2 + b", "a // 3 + b"))
    lowered = outcomes()
    assert lowered["overflows"]["json"]["verdict"] == "counterexample"
    kind, why = act.verify_outcome(base["overflows"], lowered["overflows"])
    assert kind == "report" and why.startswith("line ") and "->" in why  # the first line of the section that changes
    assert act.verify_outcome(base["fits"], lowered["fits"])[0] == "bound"

    with open(path, "w") as fh:  # a verdict that changes: seen on the verdict-only decision, the same report line
        fh.write(VERIFY_SPEC.replace("return 20", "return 12"))
    quick = act.verify_one(Oracle, declared["fits"], bounds, base["fits"])
    full = act.verify_one(Oracle, declared["fits"], bounds)
    assert quick["quick"] and quick["json"]["verdict"] == full["json"]["verdict"] == "counterexample"
    assert act._verdict_line(quick["md"]).startswith(act._verdict_line(full["md"]).split(" (")[0])
    assert act.verify_outcome(base["fits"], quick)[0] == act.verify_outcome(base["fits"], full)[0] == "report"
    assert "quick" not in act.verify_one(
        Oracle, declared["overflows"], bounds, base["overflows"]
    )  # same verdict: decided in full

    with open(path, "w") as fh:
        fh.write(VERIFY_SPEC.replace("def overflows", "def renamed"))
    gone = act.verify_one(Oracle, declared["overflows"], bounds)
    assert act.verify_outcome(base["overflows"], gone) == (
        "report",
        f"{declared['overflows'].id} is no longer declared",
    )


def test_verify_table_counts_each_oracle_once(tmp_path, monkeypatch, capsys):
    """The three-oracle table: a verdict kill, a prove failure that is not a verdict (make verify
    fails on it: counted by verify, not by prove), report and bound kills, a function no obligation
    calls, an unconfirmed difference (survived) and an unrun mutant; ``with tests`` counts the
    union with the with-tests record, over the mutants both records hold."""
    act = _activate()
    m = "models.vllm.gdn.x_state_index_column__mutmut_{}"
    prove = [
        {"mutant": m.format(1), "prove": "killed", "prove_failed": ORACLE.format("spec/a.py::ob1")},
        {"mutant": m.format(2), "prove": "killed", "prove_failed": ORACLE.format("spec/a.py::ob2")},  # unknown
        {"mutant": m.format(3), "prove": "survived"},
        {"mutant": m.format(4), "prove": "survived"},
        {"mutant": m.format(5), "prove": "no obligation"},
        {"mutant": m.format(6), "prove": "survived"},
        {"mutant": m.format(7), "prove": "survived"},
    ]
    verify = [
        {"mutant": m.format(3), "verify": "killed", "verify_kind": "report"},
        {"mutant": m.format(4), "verify": "killed", "verify_kind": "bound"},
        {"mutant": m.format(5), "verify": "no obligation"},
        {"mutant": m.format(6), "verify": "unconfirmed", "verify_kind": "report"},
    ]
    direct = [{"mutant": m.format(i), "tests": "killed" if i in (5, 6) else "survived"} for i in range(1, 8)]
    os.makedirs(tmp_path / "recs")
    for name, recs in ((act.PROVE_ALONE, prove), (act.VERIFY_ALONE, verify), (act.RECORD, direct)):
        (tmp_path / "recs" / name).write_text("".join(json.dumps(r) + "\n" for r in recs))
    (tmp_path / "recs" / act.OUTCOMES).write_text(
        json.dumps({"mutant": m.format(2), "kind": "unknown", "obligation": "spec/a.py::ob2"}) + "\n"
    )
    monkeypatch.chdir(tmp_path)
    assert act.verify_candidates(act._done(str(tmp_path / "recs" / act.PROVE_ALONE))) == {
        m.format(i) for i in range(3, 8)
    }
    act.verify_table([m.format(i) for i in range(1, 9)], "recs")
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| models/vllm/gdn.py")]
    # mutants equiv notrun prove unknown missing report bound noobl timeout survived verify-not-run | prove% verify% tests%
    assert rows == ["| models/vllm/gdn.py | 8 | 0 | 1 | 1 | 1 | 0 | 1 | 1 | 1 | 0 | 1 | 1 | 14.3 | 66.7 | 100.0 |"]


def _summary():
    spec = importlib.util.spec_from_file_location(
        "capproof_mutation_summary", os.path.join(ROOT, "tests", "mutation", "summary.py")
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_wilson_interval_matches_the_published_values():
    """Wilson score interval at 95 % (z = 1.96): 95 of 100 gives 88.8-97.8 %, 0 of 10 gives 0-27.8 %
    (the values any statistics package gives); all or none keeps the interval inside [0, 1]."""
    summary = _summary()
    low, high = summary.wilson(95, 100)
    assert round(100 * low, 1) == 88.8 and round(100 * high, 1) == 97.8
    assert summary.wilson(0, 10)[0] == 0.0 and round(summary.wilson(0, 10)[1], 3) == 0.278
    assert round(summary.wilson(10, 10)[0], 3) == 0.722 and summary.wilson(10, 10)[1] <= 1.0


def test_sample_figure_counts_prove_then_the_tests_on_its_survivors():
    """A prove kill counts once; a prove survivor counts as killed only when the tests killed it; an
    equivalent or untested mutant is left out of the denominator; a timeout is not a kill."""
    summary = _summary()
    m = "models.vllm.gdn.x_state_index_column__mutmut_{}".format
    prove = {
        m(1): {"prove": "killed"},
        m(2): {"prove": "survived"},
        m(3): {"prove": "no obligation"},
        m(4): {"prove": "survived"},
        m(5): {"prove": "survived"},
        m(6): {"prove": "survived"},
        m(7): {"prove": "timeout"},
    }
    tests = {
        m(2): {"kind": "killed"},
        m(3): {"kind": "killed"},
        m(4): {"kind": "survived"},
        m(7): {"kind": "timeout"},
    }
    line = summary.sample_figure(prove, tests, {m(5): "equivalent: reason"})
    assert line.startswith("3 of 5 killed (60.0 %, Wilson 95 % 23.1-88.2 %)")
    assert "prove 1, tests 2, survived 1, timeout 1; equivalent 1, untested 1" in line
    # a prove failure that is not a changed verdict (missing, unknown) is no kill: the tests decide it
    line = summary.sample_figure(prove, tests, {m(5): "equivalent: reason"}, frozenset({m(1)}))
    assert line.startswith("2 of 4 killed") and "prove 0, tests 2" in line and "untested 2" in line


def test_complete_prefix_stops_at_the_first_mutant_not_yet_decided():
    """A mutant counts once prove killed it, the tests ran on it as a prove survivor, or it is listed
    as equivalent; the prefix ends at the first one that is none of these (a shard skipped past it)."""
    summary = _summary()
    m = "models.vllm.gdn.x_state_index_column__mutmut_{}".format
    order = [m(i) for i in range(1, 7)]
    prove = {m(1): {"prove": "killed"}, m(2): {"prove": "survived"}, m(4): {"prove": "survived"}}
    prove[m(6)] = {"prove": "killed"}
    tests = {m(2): {"kind": "survived"}}
    assert summary.complete_prefix(order, prove, tests, {m(3): "reason"}) == [m(1), m(2), m(3)]
    tests[m(4)] = {"kind": "killed"}
    assert summary.complete_prefix(order, prove, tests, {m(3): "reason"}) == [m(1), m(2), m(3), m(4)]
    assert summary.complete_prefix(order, prove, tests, {m(3): "reason"}, frozenset({m(1)})) == []


def test_prove_not_kills_are_the_failures_recorded_as_unknown_or_missing(tmp_path):
    """A prove kill whose failing obligation the oracle recorded as ``missing``/``unknown`` is not a
    kill; a kill by another obligation of the same mutant's record is (values from the 2026-12-07
    sample: ``cover`` mutants that drop an SGLang obligation)."""
    summary = _summary()
    ob = "spec/sglang_0_5_23_buffers.py::sglang_decode_alloc_row__ReqToTokenPool_req_to_token"
    (tmp_path / "capproof-mutation-outcomes.jsonl").write_text(
        json.dumps({"mutant": "spec._inventory.x_cover__mutmut_62", "kind": "missing", "obligation": ob, "detail": ""})
        + "\n"
    )
    prove = {
        "spec._inventory.x_cover__mutmut_62": {"prove": "killed", "prove_failed": ORACLE.format(ob)},
        "spec._inventory.x_cover__mutmut_27": {"prove": "killed", "prove_failed": ORACLE.format("spec/a.py::ob1")},
        "spec._inventory.x_cover__mutmut_44": {"prove": "survived", "prove_failed": None},
    }
    assert summary.prove_not_kills(prove, str(tmp_path)) == {"spec._inventory.x_cover__mutmut_62"}


def test_earlier_kills_are_the_killing_tests_of_a_record(tmp_path):
    """The hints of the tests oracle: each mutant the tests killed in an earlier record, with the test
    that killed it; a mutant prove killed or one that survived gives no hint."""
    summary = _summary()
    m = "spec._inventory.x_cover__mutmut_{}".format
    recs = [
        {"mutant": m(44), "tests": "killed", "killed_by": "tests/test_inventory_obligations.py::test_x"},
        {"mutant": m(45), "tests": "survived", "prove": "killed"},
        {"mutant": m(46), "tests": "survived"},
    ]
    path = tmp_path / "capproof-mutation-direct.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert summary.earlier_kills(str(path)) == {m(44): "tests/test_inventory_obligations.py::test_x"}
