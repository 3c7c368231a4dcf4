"""Engine facts (capproof/facts.py) and how coverage counts them (capproof/coverage.py).

A named assumption of a proof is discharged for an entry only when an engine fact whose scope
holds the entry's file names it and every path of that fact is checked; an assumed or refuted
fact in scope keeps it an assumption. The run records here have the fields ``capproof prove --json``
writes (verdict, assumptions, assumptions_used, restating_assumptions, sources)."""

from __future__ import annotations

import json

import pytest

from capproof import facts as F
from capproof.coverage import compute, kind_of, render_markdown

FACT = "padded requests <= max_num_reqs (scheduler, dispatcher padding, dummy runs)"
RUNNER = "vllm/v1/worker/gpu_model_runner.py"
BACKEND = "vllm/v1/attention/backends/flashinfer.py"


def _fact(scope, results, cex=()):
    paths = [F.path_record(f"{RUNNER}:{i}", "num_reqs_padded = ...", "ast", r) for i, r in enumerate(results, 1)]
    return F.fact_record("step request count <= max_num_reqs", [FACT], scope, paths, cex)


def _shape_only_record(entry_id, extra_sources=()):
    return {
        "id": "spec/x.py::rows",
        "verdict": "proved",
        "covers": [entry_id],
        "assumptions": [FACT],
        "assumptions_used": [FACT],
        "restating_assumptions": [FACT],
        "sources": list(extra_sources),
    }


def test_status_follows_the_paths():
    assert F.status(_fact([RUNNER], ["checked", "checked"])) == "checked"
    assert F.status(_fact([RUNNER], ["checked", "not checked"])) == "assumed"
    assert F.status(_fact([RUNNER], [])) == "assumed"  # no path: nothing was checked
    assert F.status(_fact([RUNNER], ["checked", "counterexample"])) == "refuted"
    assert F.status(_fact([RUNNER], ["checked"], cex=[{"site": "x"}])) == "refuted"
    with pytest.raises(ValueError):
        F.path_record("a.py:1", "x", "guessed", "checked")


def test_discharged_only_in_scope_and_only_when_every_fact_naming_it_is_checked():
    ok = _fact([RUNNER, "vllm/v1/worker/gpu/"], ["checked"])
    assert F.discharged([ok], RUNNER) == {FACT}
    assert F.discharged([ok], "vllm/v1/worker/gpu/states.py") == {FACT}  # directory prefix
    assert F.discharged([ok], "vllm/v1/worker/gpu_input_batch.py") == set()  # a file is not a prefix
    assert F.discharged([ok], BACKEND) == set()
    refuted = _fact([RUNNER], ["counterexample"])
    assert F.discharged([ok, refuted], RUNNER) == set()


def test_a_scope_of_entry_ids_discharges_those_entries_only():
    """A fact split per entry (the V2 request count, by what the PCP local batch meets) names
    entry ids: two entries of the same file get different verdicts, and the file itself is not in
    scope."""
    a, b = f"{RUNNER}::GPUModelRunner.a", f"{RUNNER}::GPUModelRunner.b"
    clean, met = _fact([a], ["checked"]), _fact([b], ["counterexample"])
    assert F.in_scope(clean, RUNNER, a) and not F.in_scope(clean, RUNNER, b) and not F.in_scope(clean, RUNNER)
    assert F.discharged([clean, met], RUNNER, a) == {FACT}
    assert F.discharged([clean, met], RUNNER, b) == set()
    entries = [{"id": i, "file": RUNNER, "shape": ["max_num_reqs"]} for i in (a, b)]
    run = {"obligations": [_shape_only_record(a), {**_shape_only_record(b), "id": "spec/x.py::b"}]}
    cov = compute(entries, run, facts=[clean, met])
    assert [e.kind for e in cov.entries] == ["proved, demand modelled", "shape-only"]
    assert "1 entries of vllm/v1/worker/gpu_model_runner.py" in render_markdown(cov)


def test_coverage_counts_a_checked_fact_as_no_assumption(tmp_path):
    """Shape-only with the fact assumed; "proved, demand modelled" once the fact is checked (the
    demand is the family's, not derived); verified only with a derived demand on every dimension."""
    eid = f"{RUNNER}::GPUModelRunner.seq_lens"
    entry = {"id": eid, "file": RUNNER, "shape": ["max_num_reqs"]}
    run = {"obligations": [_shape_only_record(eid)]}
    assert compute([entry], run, facts=[]).entries[0].kind == "shape-only"
    assert compute([entry], run, facts=[_fact([RUNNER], ["checked", "not checked"])]).entries[0].kind == "shape-only"
    cov = compute([entry], run, facts=[_fact([RUNNER], ["checked"])])
    assert cov.entries[0].kind == "proved, demand modelled"
    assert FACT not in cov.assumed()
    derived = {**entry, "demands": [{"dim": 0, "extent": "max_num_reqs", "how": "executed"}]}
    run_d = {"obligations": [_shape_only_record(eid, [f"demand: inv.json::{eid}[0]"])]}
    assert compute([derived], run_d, facts=[_fact([RUNNER], ["checked"])]).entries[0].kind == "verified"
    assert compute([derived], run_d, facts=[_fact([RUNNER], ["not checked"])]).entries[0].kind == "shape-only"
    assert kind_of(derived, run_d["obligations"], {FACT}) == "verified"


def test_the_report_lists_engine_facts_and_the_paths_left(tmp_path):
    eid = f"{BACKEND}::FlashInferMetadataBuilder.paged_kv_indptr"
    entry = {"id": eid, "file": BACKEND, "shape": ["max_num_reqs + 1"]}
    facts = [
        _fact([RUNNER], ["checked"]),
        F.fact_record(
            "attention-metadata request count <= max_num_reqs",
            [FACT],
            ["vllm/v1/attention/"],
            [
                F.path_record(
                    "vllm/v1/attention/backends/utils.py:672", "virtual batches", "executed", "counterexample", "2 > 1"
                )
            ],
            [{"site": "utils.py:672", "values": {"num_reqs": 2, "max_num_reqs": 1}, "reproduced": True}],
        ),
    ]
    inv = tmp_path / "vllm-0.33.0.json"
    inv.write_text(json.dumps({"entries": [entry]}))
    (tmp_path / "vllm-0.33.0.facts.json").write_text(F.dumps(facts, "vllm", "0.33.0"))
    cov = compute([entry], {"obligations": [_shape_only_record(eid)]}, str(inv))
    assert cov.entries[0].kind == "shape-only"  # the fact in its scope is refuted
    text = render_markdown(cov)
    assert "## Engine facts (2)" in text
    assert "| step request count <= max_num_reqs | checked |" in text
    assert "| attention-metadata request count <= max_num_reqs | refuted |" in text
    row = cov.assumed()[FACT]
    assert row["entries"] == 1 and row["paths"][0].startswith("vllm/v1/attention/backends/utils.py:672 [counterexample")


def test_facts_file_round_trip_and_bad_input(tmp_path):
    path = tmp_path / "x.facts.json"
    assert F.read(str(path)) == []
    text = F.dumps([_fact([RUNNER], ["checked"])], "vllm", "0.33.0")
    path.write_text(text)
    assert F.read(str(path))[0]["assumptions"] == [FACT]
    assert F.facts_path("proofs/inventory/vllm-0.33.0.json") == "proofs/inventory/vllm-0.33.0.facts.json"
    path.write_text('{"facts": [{"fact": "x", "assumptions": [], "scope": [], "paths": [{"how": "guess"}]}]}')
    with pytest.raises(F.FactsInputError):
        F.read(str(path))
