"""Obligations whose capacity is an inventory entry (spec/_inventory.py ``cover`` and the demand
families of spec/_families.py) on the fixture inventory tests/data/inventory-fixture.json."""

from __future__ import annotations

import json
import os
import textwrap

from capproof import Options, run
from capproof.coverage import compute, read_inventory
from capproof.encode import replay
from capproof.loader import load_file

HERE = os.path.dirname(__file__)
FIXTURE = os.path.join(HERE, "data", "inventory-fixture.json")
RUNNER = "vllm/v1/worker/gpu_model_runner.py::GPUModelRunner."


def _spec(tmp_path, inventory: str, body: str) -> str:
    path = tmp_path / "spec_cov.py"
    path.write_text(
        textwrap.dedent(f"""
        from spec._inventory import cover
        from spec._families import TOKENS, REQUESTS, QUERY_START_LOC, ARANGE
        INV = {inventory!r}
    """)
        + textwrap.dedent(body)
    )
    return str(path)


def _run(path: str):
    return run([path], Options(contracts=False, density="off"))


def test_families_over_the_fixture_prove_and_count_as_traced(tmp_path):
    path = _spec(
        tmp_path,
        FIXTURE,
        f"""
        cover(INV, "{RUNNER}input_ids", TOKENS, ["vllm==0.33.0 vllm/v1/worker/gpu_model_runner.py:5729"])
        cover(INV, "{RUNNER}positions", TOKENS)
        cover(INV, "{RUNNER}query_start_loc", QUERY_START_LOC)
        cover(INV, "{RUNNER}seq_lens", REQUESTS)
        cover(INV, "{RUNNER}arange_np", ARANGE)
    """,
    )
    data = _run(path).to_json()
    assert [o["verdict"] for o in data["obligations"]] == ["proved"] * 5
    ob = data["obligations"][0]
    assert ob["covers"] == [RUNNER + "input_ids"]
    assert ob["sources"][0] == f"inventory: {FIXTURE}::{RUNNER}input_ids"
    assert (
        ob["domain"] == {"max_num_batched_tokens": "1..131072", "num_tokens_padded": "1..131072"}
        or "num_tokens_padded" in ob["domain"]
    )
    cov = compute(read_inventory(FIXTURE), data, FIXTURE)
    assert (cov.covered, cov.traced, cov.total) == (5, 5, 7)
    arange = next(o for o in data["obligations"] if o["covers"] == [RUNNER + "arange_np"])
    assert sorted(a for a in arange["assumptions_used"] if a in arange["assumptions"]) == [
        "padded requests <= max_num_reqs (scheduler, dispatcher padding, dummy runs)",
        "padded tokens <= max_num_batched_tokens (CUDA-graph and DP padding, dummy runs)",
    ]


def test_seeded_too_small_traced_capacity_gives_a_counterexample(tmp_path):
    """query_start_loc allocated with max_num_reqs entries (the classic off-by-one) instead of
    max_num_reqs + 1: the family's demand num_reqs_padded + 1 overflows it."""
    data = json.load(open(FIXTURE, encoding="utf-8"))
    for e in data["entries"]:
        if e["id"] == RUNNER + "query_start_loc":
            e["shape"] = ["max_num_reqs"]
    inv = tmp_path / "seeded.json"
    inv.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    path = _spec(
        tmp_path,
        str(inv),
        f"""
        cover(INV, "{RUNNER}query_start_loc", QUERY_START_LOC)
        cover(INV, "{RUNNER}seq_lens", REQUESTS)
    """,
    )
    res = _run(path)
    verdicts = {o.id.split("::")[-1]: o for o in res.obligations}
    bad = verdicts["query_start_loc__GPUModelRunner_query_start_loc"]
    assert bad.verdict.value == "counterexample" and not bad.ok
    cex = bad.counterexample
    assert cex.params == {"max_num_reqs": 1, "num_reqs_padded": 1}
    assert cex.values == {"entries": 2, "query_start_loc[0]": 1}
    from capproof.loader import load_file

    ob = next(o for o in load_file(path) if o.name == "query_start_loc__GPUModelRunner_query_start_loc")
    assert replay(ob, cex.params) == (False, {"entries": 2, "query_start_loc[0]": 1}, [])
    assert verdicts["requests__GPUModelRunner_seq_lens"].verdict.value == "proved"
    cov = compute(read_inventory(str(inv)), res.to_json(), str(inv))
    assert next(e for e in cov.entries if e.id == RUNNER + "query_start_loc").status == "counterexample"


def test_unknown_entry_is_an_error_obligation_not_a_crash(tmp_path):
    path = _spec(
        tmp_path,
        FIXTURE,
        f"""
        cover(INV, "{RUNNER}no_such_buffer", TOKENS)
        cover(INV, "{RUNNER}positions", TOKENS)
    """,
    )
    res = _run(path)
    v = {o.id.split("::")[-1]: o.verdict.value for o in res.obligations}
    assert v == {"tokens__GPUModelRunner_no_such_buffer": "error", "tokens__GPUModelRunner_positions": "proved"}
    bad = next(o for o in load_file(path) if o.name == "tokens__GPUModelRunner_no_such_buffer")
    # the one line a user reads: which inventory, which entry, what to do
    assert bad.problems == [
        f"{FIXTURE} has no entry {RUNNER + 'no_such_buffer'!r} (re-read the inventory and update the table)"
    ]


def test_a_dimension_the_entry_does_not_have_is_an_error_obligation(tmp_path):
    """``dim`` past the traced shape (input_ids is 1-D): an ``error`` obligation at the calling
    line that names the entry and the dimension, not a crash of the spec file."""
    path = _spec(
        tmp_path,
        FIXTURE,
        f"""
        cover(INV, "{RUNNER}input_ids", TOKENS, dim=1)
        cover(INV, "{RUNNER}positions", TOKENS)
    """,
    )
    obs = load_file(path)
    assert isinstance(obs, list), obs
    bad = next(o for o in obs if o.name == "tokens__GPUModelRunner_input_ids")
    assert (bad.file, bad.line) == (os.path.relpath(path), 6)
    assert bad.covers == [RUNNER + "input_ids"]
    assert len(bad.problems) == 1 and bad.problems[0].startswith(f"capacity of {RUNNER}input_ids dimension 1: ")
    res = _run(path)
    v = {o.id.split("::")[-1]: o.verdict.value for o in res.obligations}
    assert v == {"tokens__GPUModelRunner_input_ids": "error", "tokens__GPUModelRunner_positions": "proved"}


def test_read_shape_aliases_and_skips(tmp_path):
    """A read shape's local name is bound by an alias (a config name or an expression, cited);
    without one the entry gets no obligation and the reason is kept (it stays uncovered)."""
    data = json.load(open(FIXTURE, encoding="utf-8"))
    for e in data["entries"]:
        if e["id"] == RUNNER + "arange_np":
            e.update(shape=["arange_size"], how="read", params=["arange_size"])
    inv = tmp_path / "read.json"
    inv.write_text(json.dumps(data, indent=1, sort_keys=True))
    path = _spec(
        tmp_path,
        str(inv),
        f"""
        import spec._inventory as I
        assert cover(INV, "{RUNNER}arange_np", ARANGE) is None
        SKIP = I.SKIPPED["{RUNNER}arange_np"]
        cover(INV, "{RUNNER}arange_np", ARANGE, name="aliased",
              aliases={{"arange_size": ("maximum(max_num_reqs + 1, max_num_batched_tokens)", "gpu_model_runner.py:855")}})
        cover(INV, "{RUNNER}arange_np", ARANGE, name="too_small",
              aliases={{"arange_size": ("max_num_batched_tokens", "a wrong reading")}}, expect="counterexample")
    """,
    )
    res = _run(path)
    got = {o.id.split("::")[-1]: o for o in res.obligations}
    assert set(got) == {"aliased", "too_small"}
    assert got["aliased"].verdict.value == "proved"
    assert (
        "read shape: arange_size = maximum(max_num_reqs + 1, max_num_batched_tokens) (gpu_model_runner.py:855)"
        in got["aliased"].sources
    )
    # max(num_tokens, num_reqs + 1) overflows a capacity of mnbt alone when num_reqs + 1 > mnbt
    cex = got["too_small"].counterexample
    assert got["too_small"].verdict.value == "counterexample"
    assert cex.params["num_reqs_padded"] + 1 > cex.params["max_num_batched_tokens"]
    from capproof.loader import load_file

    mod_skip = [ob for ob in load_file(path)]
    assert len(mod_skip) == 2
    # the kept expectation of a deliberately wrong reading, and the reason the entry was skipped
    assert {ob.name: ob.expect for ob in mod_skip} == {"aliased": "proved", "too_small": "counterexample"}
    import spec._inventory as inventory_helpers

    assert inventory_helpers.SKIPPED[RUNNER + "arange_np"] == (
        "capacity `arange_size` uses 'arange_size', which has no domain (a read shape's local name)"
    )


def test_a_guard_on_the_allocation_size_binds_the_capacity(tmp_path):
    """DECODE_ROWS: the writer runs only when padded_bs <= the buffer's own size (the guard reads the
    same attribute as the allocation), so the fact is stated on the capacity itself."""
    data = json.load(open(FIXTURE, encoding="utf-8"))
    ident = "vllm/v1/attention/backends/mamba_attn.py::BaseMambaAttentionMetadataBuilder.decode_num_accepted_tokens"
    data["entries"].append(
        {
            "attribute": "decode_num_accepted_tokens",
            "dtype": "int32",
            "file": "vllm/v1/attention/backends/mamba_attn.py",
            "how": "read",
            "id": ident,
            "line": 131,
            "owner": "BaseMambaAttentionMetadataBuilder",
            "params": ["decode_cudagraph_max_bs"],
            "shape": ["decode_cudagraph_max_bs"],
            "sized_by": ["requests"],
            "verdicts": {},
            "why": "read",
        }
    )
    inv = tmp_path / "guard.json"
    inv.write_text(json.dumps(data, indent=1, sort_keys=True))
    path = _spec(
        tmp_path,
        str(inv),
        f"""
        from spec._families import DECODE_ROWS
        cover(INV, "{ident}", DECODE_ROWS)
    """,
    )
    res = _run(path)
    v = {o.id.split("::")[-1]: (o.verdict.value, o.assumptions_used) for o in res.obligations}
    verdict, used = v["decode_rows__BaseMambaAttentionMetadataBuilder_decode_num_accepted_tokens"]
    assert verdict == "proved"
    assert any(a.startswith("the writer runs only when padded_bs") for a in used)


def test_config_narrows_the_family_domain_and_adds_no_unused_name(tmp_path):
    """``cover(..., config=...)`` narrows a name the family's domain already has (the family's own
    range would otherwise win) and adds nothing the claim does not use (spec/vllm_0_33_buffers.py
    passes ``num_sms``/``h_q``/``sm100`` this way for the DeepGEMM and FlashMLA scheduler buffers)."""
    from capproof import Range

    path = _spec(
        tmp_path,
        FIXTURE,
        f"""
        from capproof import Range
        cover(INV, "{RUNNER}input_ids", TOKENS, config={{"num_tokens_padded": Range(1, 8192), "num_sms": Range(1, 1024)}})
    """,
    )
    items = load_file(path)
    assert isinstance(items, list), items
    (ob,) = items
    assert ob.domain["num_tokens_padded"] == Range(1, 8192)
    assert ob.domain["max_num_batched_tokens"] == Range(1, 2**17)
    assert "num_sms" not in ob.domain


def test_error_obligations_keep_the_name_given(tmp_path):
    """``name=`` names the ``error`` obligation of an unknown entry or a missing dimension too (the
    id a spec declares, e.g. for a second dimension of one entry), not the family's default name."""
    path = _spec(
        tmp_path,
        FIXTURE,
        f"""
        cover(INV, "{RUNNER}no_such_buffer", TOKENS, name="tokens_of_a_missing_entry")
        cover(INV, "{RUNNER}input_ids", TOKENS, dim=1, name="tokens_in_dimension_1")
    """,
    )
    obs = load_file(path)
    assert isinstance(obs, list), obs
    assert [o.name for o in obs] == ["tokens_of_a_missing_entry", "tokens_in_dimension_1"]
    assert [len(o.problems) for o in obs] == [1, 1]
    # and cite the inventory entry they could not check (proofs/ links the source)
    assert [o.sources for o in obs] == [
        [f"inventory: {FIXTURE}::{RUNNER}no_such_buffer"],
        [f"inventory: {FIXTURE}::{RUNNER}input_ids"],
    ]


def test_an_index_family_is_checked_strictly_and_cover_keeps_rlimit_and_a_sourceless_demand(tmp_path):
    """``relation="less_than"`` (an index, not a slice end): index ``num_tokens_padded`` into
    ``input_ids[max_num_batched_tokens]`` is refuted at the budget (as a slice end it fits), and
    proofs/ shows ``0 <= index < capacity``; ``rlimit=`` and the family's ``requires`` reach the obligation; a demand whose
    source cannot be read (made by ``exec``) is shown by its name and parameters."""
    path = _spec(
        tmp_path,
        FIXTURE,
        f"""
        from spec._inventory import Family
        from spec._families import PADDED_TOKENS_FIT
        LAST = Family(name="one_past", dim=0, demand=lambda num_tokens_padded: num_tokens_padded,
                      domain=TOKENS.domain, facts=PADDED_TOKENS_FIT, relation="less_than", demand_name="index")
        cover(INV, "{RUNNER}input_ids", LAST)
        ns = {{}}
        exec("def made(num_tokens_padded):\\n    return num_tokens_padded", ns)
        MADE = Family(name="made", dim=0, demand=ns["made"], domain=TOKENS.domain, facts=PADDED_TOKENS_FIT,
                      requires=("spec_decode",))
        cover(INV, "{RUNNER}positions", MADE, rlimit=12_345_678)
    """,
    )
    res = _run(path)
    verdicts = {o.id.split("::")[-1]: o for o in res.obligations}
    one_past = verdicts["one_past__GPUModelRunner_input_ids"]
    assert one_past.verdict.value == "counterexample"
    assert (
        one_past.counterexample.params["num_tokens_padded"] == one_past.counterexample.params["max_num_batched_tokens"]
    )
    assert verdicts["made__GPUModelRunner_positions"].verdict.value == "proved"
    obs = {o.name: o for o in load_file(path)}
    assert obs["one_past__GPUModelRunner_input_ids"].formula.splitlines()[-1] == "0 <= index < input_ids[0]"
    made = obs["made__GPUModelRunner_positions"]
    assert made.rlimit == 12_345_678
    assert made.requires == ("spec_decode",)  # check-config applies it only with the feature on
    assert made.formula.splitlines()[0] == "demand = made(num_tokens_padded)  # demand family 'made'"


def test_a_capacity_over_a_family_parameter_is_declared_not_skipped(tmp_path):
    """A shape name that is a parameter of the family (not a config name) has its domain from the
    family: the obligation is declared (a dropped one is noticed only by make verify's proofs/ check)."""
    data = json.load(open(FIXTURE, encoding="utf-8"))
    for e in data["entries"]:
        if e["id"] == RUNNER + "seq_lens":
            e.update(shape=["num_reqs_padded"])
    inv = tmp_path / "family_param.json"
    inv.write_text(json.dumps(data, indent=1, sort_keys=True))
    path = _spec(
        tmp_path,
        str(inv),
        f"""
        import spec._inventory as I
        assert cover(INV, "{RUNNER}seq_lens", REQUESTS) is not None, I.SKIPPED.get("{RUNNER}seq_lens")
    """,
    )
    (ob,) = load_file(path)
    assert ob.name == "requests__GPUModelRunner_seq_lens" and "num_reqs_padded" in ob.domain
    assert _run(path).obligations[0].verdict.value == "proved"
