"""The decode-graph staging guards and FlashMLA's assert as engine facts
(capproof/engines/vllm/fact_guards.py): the readers on stand-in builders shaped like vLLM 0.33.0's
(fast; each changed link leaves the path not checked), and on vLLM 0.33.0's own source (real tier)."""

from __future__ import annotations

import ast
import os
import textwrap

import pytest

from capproof.engines.vllm.fact_guards import assert_guard_paths, staging_paths
from capproof.facts import status

F = "vllm/v1/attention/backends/gdn_attn.py"

# The shape of GDNAttentionMetadataBuilder's decode staging (gdn_attn.py:195-245, 613-671, 722-731).
BUILDER = """
    class B:
        def __init__(self, cfg):
            self.decode_cudagraph_max_bs = cfg.max_num_seqs
            if cfg.cap is not None:
                self.decode_cudagraph_max_bs = min(self.decode_cudagraph_max_bs, cfg.cap)
            self.rows = torch.empty((self.decode_cudagraph_max_bs,), dtype=torch.int32)
            self.offsets = torch.empty((self.decode_cudagraph_max_bs + 1,), dtype=torch.int32)

        def build(self, m, src, loc):
            num_decodes, num_prefills, num_spec_decodes = m.split()
            batch_size = m.num_reqs
            if self._stage_decode(num_prefills, num_decodes, num_spec_decodes):
                self.rows[:num_decodes].copy_(src)
                rows = self.rows[:batch_size]
                self.offsets[: num_decodes + 1].copy_(loc)
            return Meta(rows=rows)

        def _stage_decode(self, num_prefills, num_decodes, num_spec_decodes):
            \"\"\"Whether decode metadata goes into the FULL cudagraph buffers.\"\"\"
            return (
                self.use_full_cuda_graph
                and num_prefills == 0
                and num_spec_decodes == 0
                and num_decodes <= self.decode_cudagraph_max_bs
            )
"""

JUDGED = {
    "build:batch_size=m.num_reqs": (
        "checked",
        "executed",
        "run",
        ("num_prefills==0", "num_spec_decodes==0", "num_decodes<=self.decode_cudagraph_max_bs"),
    )
}


def _paths(src: str, buf: str, judged=None):
    return staging_paths(ast.parse(textwrap.dedent(src)), F, "B", buf, judged)


def _results(paths):
    return {(p["sets"], p["how"]): p["result"] for p in paths}


def test_every_slice_under_the_guard_is_checked():
    paths, why = _paths(BUILDER, "rows", JUDGED)
    assert why == ""
    assert _results(paths) == {
        ("self.rows[:num_decodes]", "ast"): "checked",
        ("self.rows[:batch_size]", "executed"): "checked",
    }
    paths, _ = _paths(BUILDER, "offsets")
    assert _results(paths) == {("self.offsets[:num_decodes + 1]", "ast"): "checked"}


def test_the_guard_s_count_without_the_run_is_not_enough():
    """``batch_size = m.num_reqs`` is not a guard conjunct: unjudged, or judged for other conjuncts, not checked."""
    paths, _ = _paths(BUILDER, "rows")
    assert _results(paths)[("self.rows[:batch_size]", "ast")] == "not checked"
    other = {k: (*v[:3], ("num_decodes==0",)) for k, v in JUDGED.items()}
    paths, _ = _paths(BUILDER, "rows", other)
    assert _results(paths)[("self.rows[:batch_size]", "ast")] == "not checked"


@pytest.mark.parametrize(
    "change, site",
    [
        # the bound dropped from the guard
        ("and num_decodes <= self.decode_cudagraph_max_bs\n", "self.rows[:num_decodes]"),
        # the slice reaches one past the guarded count on a rows buffer
        ("self.rows[:num_decodes].copy_(src)", "self.rows[:num_decodes + 1]"),
        # the count rebound inside the guarded block, before the slice
        ("self.rows[:num_decodes].copy_(src)", "self.rows[:num_decodes]"),
        # the slice moved out of the guarded block
        ("                rows = self.rows[:batch_size]\n", "self.rows[:batch_size]"),
    ],
)
def test_a_changed_link_leaves_the_path_not_checked(change, site):
    replacement = {
        "and num_decodes <= self.decode_cudagraph_max_bs\n": "\n",
        "self.rows[:num_decodes].copy_(src)": {
            "self.rows[:num_decodes + 1]": "self.rows[:num_decodes + 1].copy_(src)",
            "self.rows[:num_decodes]": "num_decodes = m.num_reqs\n                self.rows[:num_decodes].copy_(src)",
        },
        "                rows = self.rows[:batch_size]\n": "",
    }[change]
    if isinstance(replacement, dict):
        replacement = replacement[site]
    src = BUILDER.replace(change, replacement)
    if change.strip().startswith("rows ="):
        src = src.replace(
            "            return Meta", "            rows = self.rows[:batch_size]\n            return Meta"
        )
    assert src != BUILDER
    paths, _ = _paths(src, "rows", JUDGED)
    got = [p for p in paths if p["sets"] == site]
    assert got and all(p["result"] == "not checked" for p in got), paths


def test_the_capacity_must_be_the_allocation_s_own_attribute():
    """``decode_cudagraph_max_bs`` stored after the allocation, or the buffer sized otherwise: no path."""
    rebound = BUILDER.replace(
        "self.offsets = torch.empty", "self.decode_cudagraph_max_bs += 1\n            self.offsets = torch.empty"
    )
    paths, why = _paths(rebound, "rows", JUDGED)
    assert paths == [] and "stored again" in why
    later = BUILDER.replace(
        "        def _stage_decode(",
        "        def grow(self):\n            self.decode_cudagraph_max_bs = 8\n\n        def _stage_decode(",
    )
    paths, why = _paths(later, "rows", JUDGED)
    assert paths == [] and "B.grow" in why
    other = BUILDER.replace("torch.empty((self.decode_cudagraph_max_bs,)", "torch.empty((cfg.max_num_seqs,)")
    paths, why = _paths(other, "rows", JUDGED)
    assert paths == [] and "not allocated" in why


# A subclass in another file staging under a bound by another buffer's rows (the shape of
# KimiK3KDAMetadataBuilder.build, models/kimi_k3/nvidia/kda_metadata.py:624-664).
SUB = """
    class S(B):
        def __init__(self, cfg):
            super().__init__(cfg)
            if cfg.recover:
                self.rows = torch.empty((cfg.max_num_seqs, 1), dtype=torch.int32)

        def build(self, m, src, loc):
            batch_size = m.num_reqs
            if self.use_full_cuda_graph and batch_size <= self.rows.shape[0]:
                stage(staged=self.rows[:batch_size], loc=self.offsets[: batch_size + 1])
"""


def _sub(src: str, buf: str):
    base = ast.parse(textwrap.dedent(BUILDER)).body[0]
    return staging_paths(ast.parse(textwrap.dedent(src)), "sub.py", "S", buf, {}, base=base)


def test_a_subclass_bound_by_the_buffer_s_own_rows_is_checked():
    paths, why = _sub(SUB, "rows")
    assert why == "" and _results(paths) == {("self.rows[:batch_size]", "ast"): "checked"}


def test_a_bound_by_a_reallocated_buffer_does_not_bound_another():
    """``self.rows`` reallocated with other rows in the subclass: its shape no longer bounds ``offsets``;
    without the reallocation it does (both are ``decode_cudagraph_max_bs`` rows)."""
    paths, _ = _sub(SUB, "offsets")
    assert _results(paths) == {("self.offsets[:batch_size + 1]", "ast"): "not checked"}
    assert "reallocated" in paths[0]["why"]
    same = SUB.replace(
        "            if cfg.recover:\n                self.rows = torch.empty((cfg.max_num_seqs, 1), dtype=torch.int32)\n",
        "",
    )
    assert same != SUB
    paths, _ = _sub(same, "offsets")
    assert _results(paths) == {("self.offsets[:batch_size + 1]", "ast"): "checked"}


def test_a_subclass_storing_the_capacity_again_has_no_path():
    paths, why = _sub(
        SUB.replace("super().__init__(cfg)", "super().__init__(cfg)\n            self.decode_cudagraph_max_bs = 9"),
        "rows",
    )
    assert paths == [] and "stores self.decode_cudagraph_max_bs" in why


FLASHMLA = """
    class M:
        def build(self, t):
            if self.full:
                assert self.buf is not None
                n = t.size(0)
                assert n <= self.buf.size(0)
                self.buf[:n].copy_(t)
                t = self.buf[:n]
            return t
"""


def _mla(src):
    return {p["site"]: p["result"] for p in assert_guard_paths(ast.parse(textwrap.dedent(src)), "f.py", "buf")}


def test_flashmla_copies_after_the_assert_are_checked():
    assert _mla(FLASHMLA) == {"f.py:8": "checked", "f.py:9": "checked"}


@pytest.mark.parametrize(
    "change, replacement",
    [
        ("assert n <= self.buf.size(0)\n", "\n"),  # no assert
        ("assert n <= self.buf.size(0)\n", "assert n <= self.buf.size(0)\n                n = n + 1\n"),  # rebound
        ("assert n <= self.buf.size(0)", "assert n <= self.other.size(0)"),  # another buffer's size
    ],
)
def test_flashmla_copies_without_the_assert_are_not_checked(change, replacement):
    got = _mla(FLASHMLA.replace(change, replacement))
    assert got and all(r == "not checked" for r in got.values())


# ------------------------------------------------------------------------------------------------
# real tier: vLLM 0.33.0's source


def _root():
    from capproof.engines.vllm import wheels

    root = wheels.source_root("vllm", "0.33.0")
    if not os.path.exists(os.path.join(root, F)):
        pytest.skip("vLLM 0.33.0 sources not extracted (make real-install)")
    wheels.vllm()
    return root


@pytest.mark.real
def test_gdn_classification_keeps_every_request_a_decode_without_prefills():
    """GDN's own non-spec classification, run: no prefills means every request is a decode."""
    from capproof.engines.vllm.fact_guards import gdn_decode_count_sweep

    root = _root()
    ok, cex, runs = gdn_decode_count_sweep(
        root, {"num_reqs": (1, 2, 3), "query_len": (0, 1, 2), "prior": (False, True)}
    )
    assert ok and cex == ""
    # every batch: 3**n query lengths, 2**n prior states, is_prefilling None or one of 2**n
    assert runs == sum(3**n * 2**n * (1 + 2**n) for n in (1, 2, 3))


@pytest.mark.real
def test_gdn_classification_check_bites(tmp_path):
    """Counting every trailing request as padding (not only zero-length ones) breaks the link: a
    batch with a prefill then reports no prefills and fewer decodes than requests."""
    from capproof.engines.vllm.fact_guards import gdn_decode_count_sweep

    root = _root()
    text = open(os.path.join(root, F), encoding="utf-8").read()
    old = "num_prefills -= int((query_lens_cpu[num_decodes:] == 0).sum())"
    assert old in text
    dest = tmp_path / F
    dest.parent.mkdir(parents=True)
    dest.write_text(text.replace(old, "num_prefills -= int((query_lens_cpu[num_decodes:] >= 0).sum())"))
    ok, cex, _ = gdn_decode_count_sweep(str(tmp_path), {"num_reqs": (1, 2), "query_len": (0, 1, 2), "prior": (False,)})
    assert not ok and "num_prefills 0" in cex


@pytest.mark.real
def test_guard_facts_on_vllm_0_33():
    """Mamba, linear attention, GDN's decode staging and FlashMLA are checked; the spec-decode staging
    (GDN, PLE short conv) and PLE's has_initial_states_d are not, each with its lines."""
    from capproof.engines.vllm.fact_guards import guard_facts

    facts = {f["scope"][0].split("::")[1]: f for f in guard_facts(_root())}
    checked = {k for k, f in facts.items() if status(f) == "checked"}
    assert checked == {
        *(
            f"BaseMambaAttentionMetadataBuilder.{b}"
            for b in (
                "state_indices_tensor_d",
                "decode_num_accepted_tokens",
                "decode_write_pos_d",
                "decode_is_flush_d",
                "decode_replayssm_state_indices_d",
            )
        ),
        *(
            f"BailingLinearAttentionMetadataBuilder.{b}"
            for b in (
                "decode_state_indices_tensor",
                "decode_legacy_state_indices_tensor",
                "decode_query_start_loc",
                "decode_num_accepted_tokens",
            )
        ),
        "GDNAttentionMetadataBuilder.non_spec_state_indices_tensor",
        "GDNAttentionMetadataBuilder.non_spec_query_start_loc",
        "FlashMLAMetadataBuilder.cg_buf_tile_scheduler_metadata",
    }
    assert {k for k, f in facts.items() if status(f) == "assumed"} == {
        "GDNAttentionMetadataBuilder.spec_state_indices_tensor",
        "GDNAttentionMetadataBuilder.spec_sequence_masks",
        "GDNAttentionMetadataBuilder.spec_query_start_loc",
        "GDNAttentionMetadataBuilder.num_accepted_tokens",
        "PleShortConvAttentionMetadataBuilder.has_initial_states_d",
        "PleShortConvAttentionMetadataBuilder.spec_state_indices_tensor",
        "PleShortConvAttentionMetadataBuilder.spec_sequence_masks",
        "PleShortConvAttentionMetadataBuilder.spec_query_start_loc",
        "PleShortConvAttentionMetadataBuilder.num_accepted_tokens",
    }
    # Kimi K3's KDA builder (a GDN subclass in another file) is read too: its decode staging is
    # checked by its own classification, run; its spec staging of the offsets is not (RecoverSSM
    # reallocates spec_state_indices_tensor, whose rows bound that staging)
    kda = "vllm/models/kimi_k3/nvidia/kda_metadata.py"
    non_spec = facts["GDNAttentionMetadataBuilder.non_spec_state_indices_tensor"]["paths"]
    assert {p["how"] for p in non_spec if p["site"].startswith(kda)} == {"ast", "executed"}
    offsets = facts["GDNAttentionMetadataBuilder.spec_query_start_loc"]["paths"]
    assert any(p["site"].startswith(kda) and "reallocated" in p["why"] for p in offsets)
    spec = facts["GDNAttentionMetadataBuilder.spec_state_indices_tensor"]["paths"]
    bad = [p for p in spec if p["result"] != "checked"]
    assert [p["sets"] for p in bad] == ["self.spec_state_indices_tensor[:batch_size]"]
    assert "zero-length" in bad[0]["why"]
    # update_block_table's slice by the staged view's own rows is checked
    assert any(p["site"].endswith(":771") and p["result"] == "checked" for p in spec)


FACTS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "proofs", "inventory", "vllm-0.33.0.facts.json")


def _committed():
    from capproof import facts as F

    if not os.path.exists(FACTS):
        pytest.skip("no committed facts file")
    from capproof.engines.vllm.fact_guards import FLASHMLA, OFFSETS, ROWS

    return [f for f in F.read(FACTS) if set(f["assumptions"]) & {ROWS, OFFSETS, FLASHMLA}]


def test_committed_guard_facts_are_one_per_entry_and_discharge_only_where_checked():
    """The committed facts file (``capproof inventory --write``): one guard fact per entry (its id the
    scope); the entries the coverage discharges are the checked ones, each path of an assumed one
    has its line and a reason."""
    from capproof import facts as F

    guard = _committed()
    assert len(guard) == 21
    assert all(len(f["scope"]) == 1 and "::" in f["scope"][0] for f in guard)
    assert len({f["scope"][0] for f in guard}) == 21
    checked = {f["scope"][0].split("::")[1] for f in guard if F.status(f) == "checked"}
    assert "GDNAttentionMetadataBuilder.non_spec_state_indices_tensor" in checked
    assert "FlashMLAMetadataBuilder.cg_buf_tile_scheduler_metadata" in checked
    assert "GDNAttentionMetadataBuilder.spec_state_indices_tensor" not in checked
    for f in guard:
        for p in F.unchecked_paths(f):
            assert ".py" in p["site"] and p["why"]
        ident = f["scope"][0]
        discharged = F.discharged(guard, ident.split("::")[0], ident)
        assert bool(discharged) == (F.status(f) == "checked")


@pytest.mark.real
def test_committed_guard_facts_are_what_the_engine_gives_now():
    from capproof.engines.vllm.fact_guards import guard_facts

    fresh = guard_facts(_root())
    assert _committed() == fresh
