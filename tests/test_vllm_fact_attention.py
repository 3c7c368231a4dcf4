"""The attention-metadata request count split by what the chunked-local wrapper reaches
(capproof/engines/vllm/fact_attention.py).

Fast tier: the source readers on small trees in the shape of vLLM 0.33.0's own lines. Real tier: vLLM's
backend classes run on the CPU (which builders the wrapper can reach) and the committed facts."""

from __future__ import annotations

import os

import pytest

from capproof import facts as F
from capproof.engines.vllm import fact_attention as A

ROOT = os.path.dirname(os.path.dirname(__file__))
FACTS = os.path.join(ROOT, "proofs", "inventory", "vllm-0.33.0.facts.json")

_LAYER = """\
def create_chunked_local_attention_backend(underlying_attn_backend, attention_chunk_size):
    class ChunkedLocalAttentionBuilder(underlying_builder):
        def build(self, common_prefix_len, common_attn_metadata, fast_build=False):
            cm, make = make_local_attention_virtual_batches(attention_chunk_size, common_attn_metadata, 16)
            return super().build(common_prefix_len, cm, fast_build)


class ChunkedLocalAttention(Attention):
    def __init__(self, head_size, attention_chunk_size, kv_cache_dtype):
        underlying_attn_backend = get_attn_backend(head_size, dtype, kv_cache_dtype{extra})
        attn_backend = create_chunked_local_attention_backend(underlying_attn_backend, attention_chunk_size)
"""


def _tree(tmp_path, files: dict) -> str:
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return str(tmp_path)


def test_the_wrapper_read_as_vllm_writes_it_is_accepted(tmp_path):
    root = _tree(tmp_path, {A.LOCAL_LAYER: _LAYER.format(extra="")})
    bad, notes = A.wrapper_sites_read(root)
    assert bad == []
    assert any("get_attn_backend(head_size, dtype, kv_cache_dtype)" in n for n in notes)
    assert any("make_local_attention_virtual_batches in build" in n for n in notes)


@pytest.mark.parametrize("extra", [", use_mla=True", ", use_sparse=flag", ", **kw", ", True"])
def test_a_wrapped_backend_that_may_be_mla_or_sparse_is_refused(tmp_path, extra):
    root = _tree(tmp_path, {A.LOCAL_LAYER: _LAYER.format(extra=extra)})
    bad, _ = A.wrapper_sites_read(root)
    assert bad and "the wrapped backend is not get_attn_backend" in bad[0]


def test_virtual_batches_made_anywhere_else_are_refused(tmp_path):
    other = "def f(cm):\n    return make_local_attention_virtual_batches(8192, cm, 16)\n"
    root = _tree(tmp_path, {A.LOCAL_LAYER: _LAYER.format(extra=""), "vllm/v1/worker/x.py": other})
    bad, _ = A.wrapper_sites_read(root)
    assert bad == ["vllm/v1/worker/x.py:2 make_local_attention_virtual_batches in f"]


_V2 = """\
def build_attn_metadata(num_reqs, num_tokens):
    return CommonAttentionMetadata(num_reqs=num_reqs, num_actual_tokens=num_tokens)
"""


def test_v2_constructions_are_judged_by_the_v2_fact_and_pcp(tmp_path):
    root = _tree(tmp_path, {A.V2_SITES[0]: _V2, A.V2_SITES[1]: _V2.replace("num_reqs=num_reqs", "num_reqs=n")})
    pcp = {"values": {"max_num_reqs": 1, "num_reqs": 2}}
    with_pcp = {p["site"]: p for p in A.v2_attention_paths(root, "refuted", pcp, True)}
    assert with_pcp[f"{A.V2_SITES[0]}:2"]["result"] == "counterexample"
    assert with_pcp[f"{A.V2_SITES[1]}:2"]["result"] == "not checked"  # the encoder-only count, not PCP's
    without = A.v2_attention_paths(root, "refuted", pcp, False)
    assert [p["result"] for p in without] == ["not checked", "not checked"]
    assert "does not reach these builders" in without[0]["why"]
    assert [p["result"] for p in A.v2_attention_paths(root, "checked", None, False)] == ["checked", "checked"]


def test_committed_attention_facts_split_the_scope_and_none_is_checked():
    """The committed facts: the directory's files are split between the three facts with no
    overlap; the chunked-local path is a counterexample for the reached builders and checked (not
    reached) for the others; the MLA builders' fact is refuted by the V2 runner's PCP local batch;
    the state-space builders' fact stays assumed (V2 paths not checked)."""
    if not os.path.exists(FACTS):
        pytest.skip("no committed facts file")
    att = [f for f in F.read(FACTS) if f["fact"].startswith("attention-metadata request count")]
    assert len(att) == 3
    reach, mla, ssm = att
    assert not set(reach["scope"]) & set(mla["scope"]) and not set(mla["scope"]) & set(ssm["scope"])
    assert "vllm/v1/attention/backends/flashinfer.py" in reach["scope"]
    assert "vllm/v1/attention/backends/mla/flashmla.py" in mla["scope"]
    assert "vllm/v1/attention/backends/gdn_attn.py" in ssm["scope"]
    assert F.status(reach) == "refuted" and F.status(mla) == "refuted" and F.status(ssm) == "assumed"

    def local(f):
        (p,) = [p for p in f["paths"] if "make_local_attention_virtual_batches" in p["sets"]]
        return p["result"]

    assert (local(reach), local(mla), local(ssm)) == ("counterexample", "checked", "checked")
    assert {p["site"].split(":")[0] for p in F.unchecked_paths(ssm)} == set(A.V2_SITES)


# ------------------------------------------------------------------------------------------------
# real tier


@pytest.fixture(scope="module")
def vllm_root():
    pytest.importorskip("torch")
    from capproof.engines.vllm import wheels

    try:
        wheels.activate()
    except wheels.WheelsUnavailable as exc:
        pytest.skip(str(exc))
    from capproof.engines.vllm import trace  # noqa: F401 - stand-ins the imports need

    return wheels._src()


@pytest.mark.real
def test_vllms_backends_split_into_wrappable_and_mla(vllm_root):
    reach = A.local_reach(vllm_root)
    assert reach["ok"], reach["notes"]
    by = {b["name"]: b for b in reach["backends"]}
    # run on the CPU: FlashMLA is MLA, rejected for a non-MLA layer, runs under PCP
    assert by["FLASHMLA"]["how"] == "executed" and by["FLASHMLA"]["mla"] and by["FLASHMLA"]["rejects_non_mla"]
    assert by["FLASHMLA"]["supports_pcp"] is True
    assert by["FLASH_ATTN"]["mla"] is False and not by["FLASH_ATTN"]["rejects_non_mla"]
    assert by["mamba:GDN_ATTN"]["supports_pcp"] is False
    assert "vllm/v1/attention/backends/flash_attn.py" in reach["reachable_files"]
    assert "vllm/v1/attention/backends/mla/flashmla.py" in reach["other_files"]
    # the wrapper also hands its metadata to the underlying implementation: its module is reached
    assert "vllm/v1/attention/backends/flash_attn_diffkv.py" in reach["reachable_files"]


def test_a_scope_names_a_directory_only_when_all_its_files_are_in_it():
    every = [
        "vllm/v1/attention/backend.py",
        "vllm/v1/attention/ops/a.py",
        "vllm/v1/attention/ops/b/c.py",
        "vllm/v1/attention/backends/mla/m.py",
        "vllm/v1/attention/backends/f.py",
    ]
    reached = ["vllm/v1/attention/backend.py", "vllm/v1/attention/ops/a.py", "vllm/v1/attention/ops/b/c.py"]
    assert A.compact(reached, every) == ["vllm/v1/attention/backend.py", "vllm/v1/attention/ops/"]
    assert A.compact(["vllm/v1/attention/backends/mla/m.py"], every) == ["vllm/v1/attention/backends/mla/"]
    assert A.compact(every, every) == ["vllm/v1/attention/"]  # never wider than the attention directory
    assert F.in_scope({"scope": A.compact(reached, every)}, "vllm/v1/attention/ops/b/c.py")
    assert not F.in_scope({"scope": A.compact(reached, every)}, "vllm/v1/attention/backends/f.py")
