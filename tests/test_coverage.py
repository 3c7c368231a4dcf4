"""Coverage (capproof/coverage.py, `capproof coverage`) and obligations over inventory capacities.

The fixture tests/data/inventory-fixture.json has seven entries in the inventory file format,
with vLLM 0.33.0's real allocation lines and shapes (gpu_model_runner.py:774-856,
block_table.py:80, mla/indexer.py:1100). The run here is of plain obligations with ``covers=``;
tests/test_inventory_obligations.py declares them from the inventory (``spec._inventory.cover``).
"""

from __future__ import annotations

import json
import os
import shutil
import textwrap

import pytest
from click.testing import CliRunner

from capproof import Options, run
from capproof.cli import main
from capproof.coverage import (
    CoverageInputError,
    compute,
    fill_verdicts,
    inventory_text,
    read_inventory,
    read_run,
    render_markdown,
)

HERE = os.path.dirname(__file__)
ROOT = os.path.dirname(HERE)
FIXTURE = os.path.join(HERE, "data", "inventory-fixture.json")
RUNNER = "vllm/v1/worker/gpu_model_runner.py::GPUModelRunner."


def _run(path: str):
    return run([path], Options(contracts=False, density="off"))


@pytest.fixture(scope="module")
def fixture_run(tmp_path_factory):
    """Five plain obligations covering five fixture entries (capacities written out here, so
    covered but not from the inventory unless the source says so)."""
    tmp = tmp_path_factory.mktemp("cov")
    path = tmp / "spec_cov.py"
    path.write_text(
        textwrap.dedent(f"""
        from capproof import Range, at_most, maximum, obligation
        INV = {FIXTURE!r}
        R = "{RUNNER}"
        D = {{"max_num_batched_tokens": Range(1, 2**17), "max_num_reqs": Range(1, 2**12), "n": Range(1, 2**17), "r": Range(1, 2**12)}}
        F = {{"padded tokens <= max_num_batched_tokens": lambda n, max_num_batched_tokens: n <= max_num_batched_tokens,
             "padded requests <= max_num_reqs": lambda r, max_num_reqs: r <= max_num_reqs}}

        def ob(attr, demand, cap):
            def claim(max_num_batched_tokens, max_num_reqs, n, r):
                return at_most(demand=demand(n, r), capacity=cap(max_num_batched_tokens, max_num_reqs))
            claim.__name__ = attr
            return obligation(domain=D, assumptions=F, covers=[R + attr], sources=[f"inventory: {{INV}}::{{R}}{{attr}}"])(claim)

        ob("input_ids", lambda n, r: n, lambda t, q: t)
        ob("positions", lambda n, r: n, lambda t, q: t)
        ob("query_start_loc", lambda n, r: r + 1, lambda t, q: q + 1)
        ob("seq_lens", lambda n, r: r, lambda t, q: q)
        ob("arange_np", lambda n, r: maximum(n, r + 1), lambda t, q: maximum(q + 1, t))
    """)
    )
    return _run(str(path))


def test_coverage_counts_from_the_fixture(fixture_run):
    data = fixture_run.to_json()
    assert [o["verdict"] for o in data["obligations"]] == ["proved"] * 5
    assert all(o["covers"] and o["covers"][0].startswith(RUNNER) for o in data["obligations"])
    entries = read_inventory(FIXTURE)
    cov = compute(entries, data, FIXTURE)
    assert (cov.covered, cov.traced, cov.total) == (5, 5, 7)
    assert sorted(e.id for e in cov.uncovered()) == [
        "vllm/v1/attention/backends/mla/indexer.py::DeepseekV32IndexerMetadataBuilder.scheduler_metadata_buffer",
        "vllm/v1/worker/block_table.py::BlockTable.block_table",
    ]
    # by what sizes the buffer: requests entries are query_start_loc, seq_lens, arange_np, block_table
    assert cov.by(lambda e: e["sized_by"])["requests"] == (3, 3, 4)
    assert cov.by(lambda e: e["sized_by"])["SM count"] == (0, 0, 1)
    qsl = next(e for e in cov.entries if e.id == RUNNER + "query_start_loc")
    assert qsl.status == "proved"
    rests = qsl.obligations[0]["assumptions_used"]
    assert any(a.startswith("padded requests <= max_num_reqs") for a in rests)
    text = render_markdown(cov)
    assert "**verified: 0/7 entries" in text and "Covered (any decided verdict, the old headline): 5/7" in text
    assert "### `vllm/v1/worker/block_table.py::BlockTable.block_table`" in text
    assert text.count("- **uncovered**") == 2
    assert "rests on (assumed): padded requests <= max_num_reqs" in text
    # "padded requests <= max_num_reqs" with capacity max_num_reqs restates the claim: shape-only, never verified
    assert dict(cov.kinds()) == {
        "verified": 0,
        "counterexample": 0,
        "proved, demand modelled": 1,
        "proved on an assumed fact": 0,
        "shape-only": 4,
        "undecided": 0,
        "uncovered": 2,
    }
    assert qsl.kind == "shape-only"
    facts = cov.assumed()
    assert (
        facts["padded requests <= max_num_reqs"]["restates"]
        and facts["padded requests <= max_num_reqs"]["entries"] == 3
    )


def test_kind_needs_a_derived_demand_on_every_dimension_and_no_restating_assumption():
    """verified = every dimension's demand read from the inventory (a ``demand:`` source) and derived
    there from the engine's accesses (executed/ast); a restating assumption makes a proof shape-only."""
    from capproof.coverage import kind_of

    eid = "vllm/v1/worker/block_table.py::BlockTable.block_table"
    entry = {
        "id": eid,
        "shape": ["max_num_reqs", "max_num_blocks"],
        "demands": [
            {"dim": 0, "extent": "max_num_reqs", "how": "executed"},
            {"dim": 1, "extent": "cdiv(max_model_len, block_size)", "how": "executed"},
        ],
    }
    both = [f"demand: inv.json::{eid}[0]", f"demand: inv.json::{eid}[1]"]
    assert kind_of(entry, [{"verdict": "proved", "sources": both}]) == "verified"
    assert kind_of(entry, [{"verdict": "proved", "sources": both[:1]}]) == "proved, demand modelled"
    assert (
        kind_of(entry, [{"verdict": "proved", "sources": both[:1]}, {"verdict": "proved", "sources": both[1:]}])
        == "verified"
    )
    assert kind_of(entry, [{"verdict": "proved", "sources": both, "restating_assumptions": ["x <= c"]}]) == "shape-only"
    assert kind_of(entry, [{"verdict": "proved", "sources": both}, {"verdict": "counterexample"}]) == "counterexample"
    assert kind_of(entry, [{"verdict": "unknown", "sources": both}]) == "undecided"
    assert kind_of(entry, []) == "uncovered"
    modelled = {**entry, "demands": [{**entry["demands"][0]}, {**entry["demands"][1], "how": "model"}]}
    assert kind_of(modelled, [{"verdict": "proved", "sources": both}]) == "proved, demand modelled"


def test_a_decided_obligation_without_inventory_capacity_is_covered_not_traced(fixture_run):
    data = json.loads(json.dumps(fixture_run.to_json()))
    for o in data["obligations"]:
        o["sources"] = [s for s in o["sources"] if not s.startswith("inventory: ")]
    data["obligations"].append(
        {
            **data["obligations"][0],
            "id": "x.py::unknown_one",
            "verdict": "unknown",
            "covers": ["vllm/v1/worker/block_table.py::BlockTable.block_table", "nowhere::X.y"],
        }
    )
    cov = compute(read_inventory(FIXTURE), data, FIXTURE)
    assert (cov.covered, cov.traced) == (5, 0)
    bt = next(e for e in cov.entries if e.id.endswith("BlockTable.block_table"))
    assert (bt.covered, bt.status) == (False, "undecided")
    assert cov.unknown_ids == {"x.py::unknown_one": ["nowhere::X.y"]}


def test_verdicts_fill_only_the_verdicts_field(fixture_run):
    original = open(FIXTURE, encoding="utf-8").read()
    entries = read_inventory(FIXTURE)
    cov = compute(entries, fixture_run.to_json(), FIXTURE)
    new = inventory_text(original, fill_verdicts(entries, cov))
    before, after = json.loads(original), json.loads(new)
    assert before["engine"] == after["engine"] and len(before["entries"]) == len(after["entries"])
    for b, a in zip(before["entries"], after["entries"]):
        assert {k: v for k, v in b.items() if k != "verdicts"} == {k: v for k, v in a.items() if k != "verdicts"}
    ids = {e["id"]: e["verdicts"] for e in after["entries"]}
    assert list(ids[RUNNER + "input_ids"].values()) == ["proved"]
    assert ids["vllm/v1/worker/block_table.py::BlockTable.block_table"] == {}
    # same layout as the original: only verdict lines differ
    changed = [ln for ln in new.splitlines() if ln not in original.splitlines()]
    assert changed and all("verdicts" in ln or "proved" in ln or ln.strip() in ("},", "}") for ln in changed)


def test_read_errors_are_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('[{"file": 1}]')
    with pytest.raises(CoverageInputError, match="entry 0 has no string 'id'"):
        read_inventory(str(bad))
    with pytest.raises(CoverageInputError, match="no such file"):
        read_run(str(tmp_path / "none.json"))
    pinned = tmp_path / "pinned.json"
    pinned.write_text(json.dumps({"obligations": [{"id": "a", "pins": {"x": 1}}], "contracts": []}))
    with pytest.raises(CoverageInputError, match="pinned run"):
        read_run(str(pinned))


def test_cli_write_then_check(tmp_path, fixture_run, monkeypatch):
    monkeypatch.chdir(tmp_path)
    inv = tmp_path / "inv.json"
    shutil.copy(FIXTURE, inv)
    run_json = tmp_path / "run.json"
    run_json.write_text(json.dumps(fixture_run.to_json()))
    cli = CliRunner()
    args = ["coverage", "--inventory", str(inv), "--from", str(run_json)]
    r = cli.invoke(main, [*args, "--check"])
    assert r.exit_code == 1 and "stale" in r.output
    r = cli.invoke(main, [*args, "--write"])
    assert r.exit_code == 0, r.output
    assert (
        "verified: 0/7" in r.output
        and "shape-only 4" in r.output
        and "uncovered: vllm/v1/worker/block_table.py::BlockTable.block_table" in r.output
    )
    assert (tmp_path / "proofs" / "coverage.md").exists()
    assert json.loads(inv.read_text())["entries"][-1]["verdicts"]
    r = cli.invoke(main, [*args, "--check"])
    assert r.exit_code == 0, r.output
    r = cli.invoke(
        main, ["coverage", "--inventory", str(tmp_path / "missing.json"), "--from", str(run_json), "--check"]
    )
    assert r.exit_code == 2 and "no such file" in r.output


def test_a_proof_resting_on_an_unchecked_fact_is_not_a_verification():
    """An SGLang backend buffer: the demand is derived from its accesses (``[:bs]`` in the CUDA-graph
    methods) but the proof's unsat core uses ``assumed: backend_bs <= padded_bs`` (the call chain
    crosses files, so nothing checked it): "proved on an assumed fact", never verified. A named
    assumption the core did not use, or the domain's own bounds in the core, change nothing."""
    from capproof.coverage import assumed_facts, kind_of

    eid = "sglang/srt/layers/attention/hybrid_linear_attn_backend.py::MambaAttnBackendBase.mamba_track_indices_buf"
    entry = {"id": eid, "shape": ["max_bs"], "demands": [{"dim": 0, "extent": "backend_bs", "how": "ast"}]}
    fact = "assumed: backend_bs <= padded_bs (a backend graph method's bs is the batch the runner captures or replays)"
    src = [f"demand: inv.json::{eid}[0]"]
    resting = {
        "verdict": "proved",
        "sources": src,
        "assumptions": [fact],
        "assumptions_used": [fact, "backend_bs >= 1"],
    }
    assert assumed_facts(resting) == [fact]
    assert kind_of(entry, [resting]) == "proved on an assumed fact"
    unused = {**resting, "assumptions_used": ["backend_bs >= 1"]}
    assert assumed_facts(unused) == []
    assert kind_of(entry, [unused]) == "verified"
    # a second proof of the same dimension without the fact verifies it
    assert kind_of(entry, [resting, unused]) == "verified"
    # a modelled demand stays modelled, with or without the fact
    modelled = {**entry, "demands": [{**entry["demands"][0], "how": "model"}]}
    assert kind_of(modelled, [resting]) == "proved, demand modelled"


def test_an_engine_headline_over_its_index_buffers_keeps_the_all_entries_counts():
    """SGLang's headline is over its index buffers (its adapter's ``headline_dtypes``): a verified
    int32 buffer is 1 of 2 index buffers, the float buffer counts only in the all-entries line; vLLM
    (no ``headline_dtypes``) keeps the all-entries headline unchanged."""
    from capproof.cli import _headline_dtypes

    eid = "sglang/srt/x.py::R.{}"
    entries = [
        {
            "id": eid.format("a"),
            "dtype": "int32",
            "shape": ["max_bs"],
            "demands": [{"dim": 0, "extent": "max_bs", "how": "ast"}],
        },
        {"id": eid.format("b"), "dtype": "int64", "shape": ["max_bs"]},
        {"id": eid.format("c"), "dtype": "float32", "shape": ["max_bs"]},
    ]
    run_json = {
        "obligations": [
            {
                "id": "o",
                "verdict": "proved",
                "covers": [eid.format("a")],
                "sources": [f"demand: inv.json::{eid.format('a')}[0]"],
            }
        ]
    }
    dtypes = _headline_dtypes("proofs/inventory/sglang-0.5.23.json")
    assert {"int32", "int64", "bool"} <= dtypes and "float32" not in dtypes
    assert _headline_dtypes("proofs/inventory/vllm-0.33.0.json") is None
    cov = compute(entries, run_json, "sglang-x.json", facts=[], headline_dtypes=dtypes)
    line = cov.summary_line()
    assert line.startswith("verified: 1/2 index buffers (50.0%") and "All entries: verified: 1/3 entries" in line
    md = render_markdown(cov)
    assert "| verified | 1 | 50.0% |" in md and "| uncovered | 1 | 50.0% |" in md and "| verified | 1 | 33.3% |" in md
    plain = compute(entries, run_json, "vllm-x.json", facts=[])
    assert plain.summary_line().startswith("verified: 1/3 entries") and "index buffers" not in render_markdown(plain)
