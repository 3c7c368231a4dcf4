"""Kernel extents (capproof/engines/vllm/kernel_extents.py): a Triton kernel's Python body run with a
stand-in ``tl`` from its host code's own launch; guarded slices (capproof/engines/vllm/demand_backends.py)
read from a builder's guard on every call site; and the committed demands they give.

Fast tier: toy kernels and a toy builder written here (no vLLM). Real tier (``@pytest.mark.real``):
the committed demands are what vLLM 0.33.0's code gives now.
"""

from __future__ import annotations

import importlib.util
import os
import textwrap

import pytest
import z3

from capproof.engines.vllm import kernel_extents as ke
from capproof.engines.vllm.demand_backends import derive_indexer_offsets
from capproof.inventory import derived, load
from capproof.symbolic import SymInt, explore

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INV = os.path.join(ROOT, "proofs", "inventory", "vllm-0.33.0.json")

KERNEL = """
class _Triton:
    @staticmethod
    def jit(f=None, **kw):
        return f if f is not None else (lambda g: g)
triton = _Triton()
tl = None
torch = None


@triton.jit
def _fill(out_ptr, idx_ptr, n, BLOCK, INDIRECT):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    if INDIRECT:
        row = tl.load(idx_ptr + pid)
    else:
        row = pid
    tl.store(out_ptr + row * 4 + offs, 0, mask=offs < n)


class Holder:
    def __init__(self, rows):
        self.buf = torch.zeros(rows, 4)
        self.idx = torch.zeros(rows)

    def run(self, rows, grid, n, indirect=False):
        _fill[(grid,)](self.buf, self.idx, n, BLOCK=triton.next_power_of_2(n), INDIRECT=indirect, num_warps=4)
"""


def _module(tmp_path):
    path = tmp_path / "toy_kernel.py"
    path.write_text(KERNEL)
    spec = importlib.util.spec_from_file_location("toy_kernel", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _extents(mod, grid_extra: int, n: int, indirect: bool = False):
    rows = SymInt.var("rows")
    domain = [z3.Int("rows") >= 1]

    def run():
        ke.Run.current = r = ke.Run()
        with ke.patched(mod, ke.kernels_of(mod)):
            h = mod.Holder(rows)
            ke.name_tensors(h)
            h.run(rows, rows + grid_extra, n, indirect)
        return r

    return ke.extents(explore(run, assume=domain, watch=False), domain, {"rows"})["buf"]


def test_kernel_body_gives_the_extent_its_launch_grid_and_mask_allow(tmp_path):
    mod = _module(tmp_path)
    assert ke.kernels_of(mod) == ["_fill"]
    rec = _extents(mod, 0, 4)
    assert not rec.problems
    assert [str(t) for t in rec.per_dim[0]] == ["rows"]  # one row per program: the grid
    assert [str(t) for t in rec.per_dim[1]] == ["4"]  # the mask offs < n
    assert rec.sites and "_fill store" in rec.sites[0]


def test_a_grid_one_larger_reaches_one_row_beyond(tmp_path):
    rec = _extents(_module(tmp_path), 1, 4)
    assert [str(z3.simplify(t)) for t in rec.per_dim[0]] == ["1 + rows"]


def test_an_offset_from_loaded_data_is_not_derived(tmp_path):
    rec = _extents(_module(tmp_path), 0, 4, indirect=True)
    assert 0 not in rec.per_dim
    assert any("depends on loaded data" in p for p in rec.problems)


INDEXER = """
import torch
class DeepseekV32IndexerMetadataBuilder:
    def __init__(self):
        next_n = self.num_speculative_tokens + 1
        self.offsets_buffer = torch.arange(next_n)

    def _prepare_decode_tensors(self, seq_lens, use_native, max_decode_len):
        if not use_native:
            return seq_lens
        else:
            return seq_lens + self.offsets_buffer[:max_decode_len]

    def build(self, seq_lens, max_decode_len):
        next_n = 1 + self.num_speculative_tokens
        use_native = not self.flat and max_decode_len <= next_n and True
        return self._prepare_decode_tensors(seq_lens, use_native=use_native, max_decode_len=max_decode_len)
"""


@pytest.mark.parametrize(
    "guard, derived_ok",
    [("not self.flat and max_decode_len <= next_n and True", True), ("not self.flat", False)],
)
def test_guarded_slice_is_derived_only_when_every_call_site_guards_it(tmp_path, guard, derived_ok):
    path = tmp_path / "vllm/v1/attention/backends/mla/indexer.py"
    path.parent.mkdir(parents=True)
    path.write_text(textwrap.dedent(INDEXER).replace("not self.flat and max_decode_len <= next_n and True", guard))
    demands, why = derive_indexer_offsets(str(tmp_path))
    assert bool(demands) == derived_ok, why
    if derived_ok:
        assert demands[0]["extent"] == "select(max_decode_len <= 1 + num_speculative_tokens, max_decode_len, 0)"
        assert demands[0]["facts"][0]["checked"] is True
    else:
        assert "no conjunct" in why


def test_committed_kernel_extents_read_back():
    entries = load(INV)
    acc = "vllm/v1/worker/gpu/spec_decode/acceptance_estimator.py::OnlineAcceptanceEstimator."
    assert derived(entries, acc + "info", 0)["extent"] == "num_speculative_tokens"
    assert derived(entries, acc + "info", 1)["extent"] == "3"
    assert derived(entries, acc + "grad", 1)["extent"] == "2"
    assert derived(entries, acc + "counts", 0)["how"] == "executed"
    # predict indexes intercepts by a draft step loaded from a tensor: not derived
    with pytest.raises(Exception, match="no derived demand"):
        derived(entries, acc + "intercepts", 0)


@pytest.fixture(scope="module")
def vllm_code():
    pytest.importorskip("torch")
    from capproof.engines.vllm import wheels

    try:
        return wheels.activate()
    except wheels.WheelsUnavailable as exc:
        pytest.skip(str(exc))


@pytest.mark.real
def test_committed_kernel_extents_are_what_the_engine_derives_now(vllm_code):
    from capproof.engines.vllm.demand_drafting import derive_acceptance_estimator

    found, _ = derive_acceptance_estimator(vllm_code)
    entries = {e.id: e for e in load(INV)}
    for ident, demands in found.items():
        assert [(d["dim"], d["extent"]) for d in demands] == [
            (d["dim"], d["extent"]) for d in entries[ident].demands if d.get("family") == "kernel extents"
        ]


MAMBA_SRC = """
class BaseMambaAttentionMetadataBuilder:
    def _compute_common_metadata(self, common_attn_metadata):
        num_reqs = common_attn_metadata.num_reqs
        common_attn_metadata = common_attn_metadata.replace(is_prefilling=None)
        num_decodes, num_prefills, a, b = split_decodes_and_prefills(common_attn_metadata)
        return self.metadata_cls(num_reqs=num_reqs, num_decodes=num_decodes, num_prefills=num_prefills)
"""
OTHER_SRC = """
from .mamba_attn import BaseMambaAttentionMetadataBuilder
class Other(BaseMambaAttentionMetadataBuilder):
    supports_update_block_table = SUPPORTS
    def build(self, m):
        return OtherMetadata(num_reqs=m.num_reqs, num_decodes=1, num_prefills=0)
"""
RUNNERS = {
    "vllm/v1/worker/gpu_model_runner.py": "cache_key = (kv_cache_spec, type(builder))",
    "vllm/v1/worker/gpu/attn_utils.py": "reuse_key = (attn_group.kv_cache_spec, type(attn_metadata_builder))",
}


@pytest.mark.parametrize("supports, consistent", [("False", True), ("True", False)])
def test_mamba_counts_checked_on_every_construction_or_refused(tmp_path, supports, consistent):
    """A metadata built with its counts set otherwise is accepted only where it can never be staged:
    its builder never reuses metadata (supports_update_block_table = False, runners keyed by type)."""
    from capproof.engines.vllm.demand_backends import mamba_counts_consistent

    base = tmp_path / "vllm/v1/attention/backends"
    base.mkdir(parents=True)
    (base / "mamba_attn.py").write_text(MAMBA_SRC)
    (base / "other_attn.py").write_text(OTHER_SRC.replace("SUPPORTS", supports))
    for rel, text in RUNNERS.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text + "\n")
    checked, unchecked = mamba_counts_consistent(str(tmp_path))
    assert (not unchecked) == consistent, unchecked
    assert any("_compute_common_metadata" in c for c in checked)


@pytest.mark.real
def test_split_keeps_every_request_on_every_path(vllm_code):
    from capproof.engines.vllm.demand_backends import split_keeps_every_request

    ok, notes = split_keeps_every_request(vllm_code)
    assert ok and len(notes) == 4


@pytest.mark.real
def test_committed_guarded_slices_are_what_the_engine_derives_now(vllm_code):
    from capproof.engines.vllm.demand_backends import derive_mamba_guarded

    found, problems = derive_mamba_guarded(vllm_code)
    assert not problems
    entries = {e.id: e for e in load(INV)}
    for ident, demands in found.items():
        assert [(d["dim"], d["extent"]) for d in demands] == [
            (d["dim"], d["extent"]) for d in entries[ident].demands if d.get("family") == "guarded slice"
        ]
