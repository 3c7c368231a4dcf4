"""tests/mutation/activate.py (``make mutation-direct``): how its records become the figures of docs/soundness.md."""

from __future__ import annotations

import importlib.util
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _activate():
    spec = importlib.util.spec_from_file_location("capproof_mutation_activate", os.path.join(ROOT, "tests", "mutation", "activate.py"))
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
        {"mutant": m.format(2), "tests": "survived", "prove": "killed", "prove_failed": ORACLE.format("spec/a.py::ob1")},
        {"mutant": m.format(3), "tests": "survived", "prove": "killed", "prove_failed": ORACLE.format("spec/a.py::ob2")},
        {"mutant": m.format(4), "tests": "survived", "prove": "killed", "prove_failed": ORACLE.format("spec/a.py::ob3")},
        {"mutant": m.format(5), "tests": "survived", "prove": "no obligation"},
        {"mutant": m.format(6), "tests": "timeout", "prove": "survived"},
    ]
    outcomes = [
        {"mutant": m.format(3), "kind": "unknown", "obligation": "spec/a.py::ob2", "detail": ""},
        {"mutant": m.format(4), "kind": "missing", "obligation": "spec/a.py::ob3", "detail": ""},
        {"mutant": m.format(2), "kind": "unknown", "obligation": "spec/a.py::other", "detail": ""},  # not the failing one
    ]
    os.makedirs(tmp_path / "mutants")
    (tmp_path / "mutants" / act.RECORD).write_text("".join(json.dumps(r) + "\n" for r in recs))
    (tmp_path / "mutants" / "capproof-mutation-outcomes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in outcomes))
    monkeypatch.chdir(tmp_path)
    act.table([m.format(i) for i in range(1, 8)])
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| models/vllm/gdn.py")]
    assert rows == ["| models/vllm/gdn.py | 7 | 1 | 1 | 1 | 1 | 0 | 1 | 1 | 1 | 33.3 |"]


def test_a_spec_file_loaded_under_the_mutant_counts_for_its_obligations():
    """The call map's ``load:`` entries (a spec helper called while the file loads) select every
    obligation of that file; calls made while pytest collected (``?``) select none."""
    act = _activate()
    cmap = {"spec._inventory.x_cover": ["?", "load:/m/spec/vllm_0_33_buffers.py"],
            "models.vllm.gdn.x_state_index_column": [ORACLE.format("spec/per_batch_buffers.py::gdn")]}
    assert act._obligations_calling("spec._inventory.x_cover__mutmut_7", cmap) == ["load:/m/spec/vllm_0_33_buffers.py"]
    assert act._obligations_calling("models.vllm.gdn.x_state_index_column__mutmut_1", cmap) == [ORACLE.format("spec/per_batch_buffers.py::gdn")]
    assert act._obligations_calling("models.moe_align.x_f__mutmut_1", cmap) == []


def test_saved_records_give_the_same_table(tmp_path, monkeypatch, capsys):
    """``--save DIR`` keeps every mutant's name and one record line per mutant (the last, when a
    mutant was rerun), so ``--table --records DIR`` prints the mutated copy's table without it."""
    act = _activate()
    m = "models.vllm.gdn.x_state_index_column__mutmut_{}"
    os.makedirs(tmp_path / "mutants" / "models" / "vllm")
    (tmp_path / "mutants" / "models" / "vllm" / "gdn.py.meta").write_text(json.dumps({"exit_code_by_key": {m.format(i): None for i in range(1, 5)}}))
    recs = [
        {"mutant": m.format(1), "tests": "killed", "killed_by": "tests/test_model_values.py::t"},
        {"mutant": m.format(2), "tests": "survived"},  # --tests-only, then the prove oracle
        {"mutant": m.format(2), "tests": "survived", "prove": "killed", "prove_failed": ORACLE.format("spec/a.py::ob1")},
        {"mutant": m.format(3), "tests": "survived", "prove": "killed", "prove_failed": ORACLE.format("spec/a.py::ob2")},
    ]
    outcome = json.dumps({"mutant": m.format(3), "kind": "unknown", "obligation": "spec/a.py::ob2", "detail": ""}) + "\n"
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
