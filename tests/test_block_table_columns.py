"""Block-table columns: the derived column demands of the block-table-like entries
(capproof/engines/vllm/demand_columns.py), their obligations (spec/vllm_0_33_derived_columns.py) and the
per-dimension coverage view (capproof/coverage.py: dimension_kinds, the block-table columns section).

Fast tier: the committed records read back at the configurations of the real reports (vLLM
#50302: L = 350,000, block size 64, 5470 columns; #50823: L = 1M, DCP 2, 8192 columns), the
per-dimension kinds on small entries. Real tier (``@pytest.mark.real``): the committed records are
what the derivation gives now, and their widths equal what vLLM 0.33.0's own functions return on ints.
"""

from __future__ import annotations

import os

import pytest

from capproof.coverage import compute, dimension_kinds, is_block_table, render_markdown
from capproof.inventory import bound_name, capacity, demand, derived, load

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INV = os.path.join(ROOT, "proofs", "inventory", "vllm-0.33.0.json")
V2_TABLES = "vllm/v1/worker/gpu/block_table.py::BlockTables.block_tables[]"
V2_INPUT = "vllm/v1/worker/gpu/block_table.py::BlockTables.input_block_tables"
PCP_LOCAL = "vllm/v1/worker/gpu/pcp_manager.py::PCPManager._local_block_tables"
EBT = "vllm/v1/attention/backends/mla/indexer.py::DeepseekV32IndexerMetadataBuilder.expanded_block_table_buffer"


@pytest.mark.parametrize(
    "L, dcp, width",
    [(350_000, 1, 5470), (325_000, 1, 5080), (480_000, 4, 1876), (2**20, 2, 8192)],
)
@pytest.mark.parametrize("v2", [0, 1])
def test_indexer_buffer_width_equals_its_source_at_the_reported_configurations(L, dcp, width, v2):
    """#50302's rows (5469 vs 5470, 5079 vs 5080, the fork's 1875 vs 1876) and #50823's (8192 vs
    16384): in 0.33.0 both the buffer and the table the builder receives have the aligned,
    DCP-divided width, from either runner."""
    ents = load(INV)
    names = dict(max_model_len=L, block_size=64, kernel_block_size=64, dcp=dcp, dcp_sharded=1)
    w = bound_name(ents, EBT, 1, "block_table_width", **names)
    assert capacity(ents, EBT, 1, block_table_width=w) == width
    assert demand(ents, EBT, 1, v2_runner=v2, **names) == width
    assert derived(ents, EBT, 1)["claim"] == "equal"


@pytest.mark.parametrize("kv_spec", [0, 1, 2])
def test_v2_tables_hold_a_full_length_request(kv_spec):
    ents = load(INV)
    names = dict(max_model_len=350_000, block_size=64, dcp=1, dcp_sharded=1, kv_spec=kv_spec)
    assert bound_name(ents, V2_TABLES, 1, "max_num_blocks", **names) == 5470
    assert demand(ents, V2_TABLES, 1, num_tokens_need_slot=350_000, **names) == 5469
    # unsharded: the DCP divisor does not apply (dcp 4, 1M tokens, block size 16)
    un = dict(max_model_len=2**20, block_size=16, dcp=4, dcp_sharded=0, kv_spec=kv_spec)
    assert bound_name(ents, V2_TABLES, 1, "max_num_blocks", **un) == 2**16
    assert demand(ents, V2_TABLES, 1, num_tokens_need_slot=2**20, **un) == 2**16
    assert derived(ents, V2_TABLES, 1)["not_derived_for"]  # Mamba, HiSparse, encoder-decoder: said, not guessed


def test_v2_circular_buffer_group_is_one_column_and_gathered_rows_are_whole():
    ents = load(INV)
    ring = dict(max_model_len=2**20, block_size=64, dcp=2, dcp_sharded=1, kv_spec=3)
    assert bound_name(ents, V2_TABLES, 1, "max_num_blocks", **ring) == 1
    assert demand(ents, V2_TABLES, 1, num_tokens_need_slot=2**20, **ring) == 1
    for ident in (V2_INPUT, PCP_LOCAL):
        assert derived(ents, ident, 1)["extent"] == "max_num_blocks"
        assert demand(ents, ident, 1, max_num_blocks=5470) == capacity(ents, ident, 1, max_num_blocks=5470)


def _entry(ident="a.py::T.block_table", shape=("max_num_reqs", "w"), demands=()):
    return {"id": ident, "shape": list(shape), "demands": list(demands), "how": "traced"}


def _ob(dim, verdict="proved", used=(), restating=(), ident="a.py::T.block_table"):
    return {
        "id": f"spec/x.py::o{dim}",
        "verdict": verdict,
        "sources": [f"demand: inv::{ident}[{dim}]"],
        "assumptions": list(used),
        "assumptions_used": list(used),
        "restating_assumptions": list(restating),
        "covers": [ident],
    }


def test_dimension_kinds_say_how_far_each_dimension_is_checked():
    d0 = {"dim": 0, "how": "executed", "extent": "num_reqs"}
    d1 = {"dim": 1, "how": "executed", "extent": "cdiv(n, block_size)"}
    e = _entry(demands=[d0, d1])
    assert dimension_kinds(e, [_ob(0), _ob(1)]) == {0: "verified", 1: "verified"}
    assert dimension_kinds(e, [_ob(0), _ob(1, used=["assumed: n <= L"])]) == {
        0: "verified",
        1: "on an assumed fact",
    }
    # a checked engine fact discharges the assumption
    assert dimension_kinds(e, [_ob(1, used=["assumed: n <= L"])], discharged=["assumed: n <= L"])[1] == "verified"
    assert dimension_kinds(e, [_ob(0), _ob(1, restating=["r"], used=["r"])])[1] == "derived, not proved"
    # a use in another file nobody judged, or a configuration not run: that dimension is not derived
    for mark in ({"unchecked_uses": ["x.py:1 return"]}, {"not_derived_for": ["Mamba groups"]}):
        partial = dict(d1, **mark)
        assert dimension_kinds(_entry(demands=[d0, partial]), [_ob(0), _ob(1)]) == {0: "verified", 1: "not derived"}


def test_block_table_entries_and_their_columns_section(tmp_path):
    assert is_block_table(_entry())
    assert not is_block_table(_entry(shape=("max_num_reqs",)))
    assert not is_block_table(_entry(ident="a.py::T.slot_mapping"))
    d1 = {"dim": 1, "how": "executed", "extent": "cdiv(n, block_size)"}
    entries = [_entry(demands=[d1]), _entry(ident="a.py::U.input_block_tables")]
    cov = compute(entries, {"obligations": [_ob(1)]}, facts=[])
    text = render_markdown(cov)
    assert "## Block-table columns (2 entries)" in text
    assert "With a column claim: 1/2; verified on every dimension: 0/2." in text
    assert "| `T.block_table` | `w` | `o1` | verified | 0: not derived | proved, demand modelled |" in text
    assert "- dimensions: 0 not derived; 1 verified" in text


@pytest.fixture(scope="module")
def vllm_code():
    from capproof.engines.vllm import wheels

    try:
        wheels.activate()
    except wheels.WheelsUnavailable as exc:
        pytest.skip(str(exc))
    from capproof.engines.vllm import trace  # noqa: F401 - stand-ins the imports need

    return wheels._src()


@pytest.mark.real
def test_committed_column_demands_are_what_the_engine_derives_now(vllm_code):
    from capproof.engines.vllm.demand_columns import FAMILY, derive_columns

    ents = load(INV)
    added = ("unchecked_uses", "unchecked_uses_count")
    committed = {
        e.id: [{k: v for k, v in d.items() if k not in added} for d in e.demands if d.get("family") == FAMILY]
        for e in ents
    }
    for e in ents:
        e.demands = [d for d in e.demands if d.get("family") != FAMILY]
    assert derive_columns(ents, vllm_code) == []
    for e in ents:
        got = [d for d in e.demands if d.get("family") == FAMILY]
        assert got == committed[e.id], e.id
    assert {e.id for e in ents if committed[e.id]} == {V2_TABLES, V2_INPUT, PCP_LOCAL, EBT}


@pytest.mark.real
@pytest.mark.parametrize("sharded", [True, False])
def test_v2_width_agrees_with_vllm_on_ints(vllm_code, sharded):
    import torch
    from vllm.v1.kv_cache_interface import FullAttentionSpec
    from vllm.v1.worker.block_table import get_block_table_width

    ents = load(INV)
    for L, bs, dcp in [(350_000, 64, 1), (2**20, 64, 2), (9416, 32, 4), (4096, 48, 8), (163_840, 256, 8)]:
        spec = FullAttentionSpec(block_size=bs, num_kv_heads=1, head_size=64, dtype=torch.float16, dcp_sharded=sharded)
        cfg = type("C", (), {"parallel_config": type("P", (), {"decode_context_parallel_size": dcp})()})()
        want = get_block_table_width(
            spec.max_num_blocks_per_req(cfg, L), spec.block_size, token_alignment=spec.block_table_token_alignment
        )
        names = dict(max_model_len=L, block_size=bs, dcp=dcp, dcp_sharded=int(sharded), kv_spec=0)
        assert bound_name(ents, V2_TABLES, 1, "max_num_blocks", **names) == want
