"""The static scan of vLLM sources for pre-allocated buffers (capproof/engines/vllm/scan.py), on a
hand-written module shaped like vLLM's (no wheel needed)."""

from __future__ import annotations

import textwrap

from capproof.engines.vllm.buffers import read_entry
from capproof.engines.vllm.scan import scan

SOURCE = textwrap.dedent("""
    import numpy as np
    import torch

    _workspace = None

    class CpuGpuBuffer:
        def __init__(self, *size, dtype, device):
            self.cpu = torch.zeros(*size, dtype=dtype)      # the wrapper's own body: not an entry

    class Builder:
        def __init__(self, vllm_config, device):
            max_num_reqs = vllm_config.scheduler_config.max_num_seqs
            tmp = torch.arange(max_num_reqs)                 # a local temporary: not kept
            self.block_table = self._make_buffer(max_num_reqs, self.max_num_blocks, dtype=torch.int32)
            self.seq_lens: torch.Tensor = torch.zeros((max_num_reqs,), dtype=torch.int32, device=device)
            self.a, self.b = np.zeros(max_num_reqs, dtype=np.int64), torch.empty(4, dtype=torch.float)
            self.per_group = [torch.full((max(max_num_reqs, 8),), -1, dtype=torch.long) for _ in range(2)]
            self.seq_lens = torch.zeros(max_num_reqs + 1, dtype=torch.int32)

        def build(self, n):
            x = torch.empty(n)                               # per-step temporary: not kept
            self.lazy = torch.zeros(n, dtype=torch.int64)    # kept across steps
            return x

    def get_workspace(n):
        global _workspace
        _workspace = torch.empty(n * 1024, dtype=torch.uint8)
        return _workspace
    """)


def test_scan_finds_kept_allocations_only(tmp_path):
    pkg = tmp_path / "vllm" / "v1" / "worker"
    pkg.mkdir(parents=True)
    (pkg / "builder.py").write_text(SOURCE)
    found = scan(str(tmp_path), scope=("vllm/v1/worker",))
    ids = [a.id for a in found]
    prefix = "vllm/v1/worker/builder.py::"
    assert ids == [
        prefix + x
        for x in (
            "Builder.block_table",
            "Builder.seq_lens",
            "Builder.a",
            "Builder.b",
            "Builder.per_group",
            "Builder.seq_lens#2",
            "Builder.lazy",
            "get_workspace._workspace",
        )
    ]
    by = {a.id: a for a in found}
    bt = by[prefix + "Builder.block_table"]
    assert (bt.call, bt.args, bt.dtype, bt.function) == (
        "self._make_buffer",
        ["max_num_reqs", "self.max_num_blocks"],
        "int32",
        "__init__",
    )
    assert by[prefix + "Builder.seq_lens"].args == ["max_num_reqs"]
    assert by[prefix + "Builder.b"].dtype == "float"
    assert by[prefix + "Builder.per_group"].args == ["max(max_num_reqs, 8)"]  # torch.full: shape only
    assert (
        by[prefix + "get_workspace._workspace"].line
        == SOURCE.splitlines().index("    _workspace = torch.empty(n * 1024, dtype=torch.uint8)") + 1
    )

    e = read_entry(by[prefix + "Builder.per_group"], "static")
    assert (e.shape, e.dtype, e.how, e.why, e.params) == (
        ["maximum(max_num_reqs, 8)"],
        "int64",
        "read",
        "static",
        ["max_num_reqs"],
    )
    assert e.sized_by == ["requests"]
    e = read_entry(bt, "static")
    assert e.shape == ["max_num_reqs", "max_num_blocks"] and e.sized_by == ["blocks", "requests"]


def test_arange_with_a_start_is_one_dimension_of_its_length(tmp_path):
    """``torch.arange(start, end[, step])`` allocates one dimension of ``end - start`` elements
    (``cdiv`` with a step), not a dimension per argument: SGLang 0.5.23's
    ``flashinfer_mla_backend.py:278`` ``torch.arange(0, max_bs + 1, ...)`` was read as ``[0, max_bs + 1]``."""
    pkg = tmp_path / "vllm" / "v1" / "worker"
    pkg.mkdir(parents=True)
    (pkg / "ar.py").write_text(
        textwrap.dedent("""
            import torch

            class B:
                def __init__(self, max_bs, size, n, page_size, lo, hi):
                    self.q_indptr = torch.arange(0, max_bs + 1, dtype=torch.int32)
                    self.free_pages = torch.arange(1, size + 1, dtype=torch.int64)
                    self.cu = torch.arange(0, max_bs * n + 1, step=n, dtype=torch.int32)
                    self.strided = torch.arange(0, size, page_size)
                    self.ids = torch.arange(lo, hi)
                    self.parents = torch.arange(-1, n - 1)
                    self.plain = torch.arange(n)
            """)
    )
    found = {a.id.split("::")[1]: read_entry(a, "static").shape for a in scan(str(tmp_path), scope=("vllm/v1/worker",))}
    assert found == {
        "B.q_indptr": ["max_bs + 1"],
        "B.free_pages": ["size"],
        "B.cu": ["cdiv(max_bs * n + 1, n)"],
        "B.strided": ["cdiv(size, page_size)"],
        "B.ids": ["hi - lo"],
        "B.parents": ["n - 1 - -1"],
        "B.plain": ["n"],
    }
    from capproof.inventory import evaluate

    # the lengths torch gives (arange(0, max_bs * n + 1, step=n) has max_bs + 1 entries)
    assert evaluate(found["B.cu"][0], max_bs=7, n=3) == 8
    assert evaluate(found["B.parents"][0], n=5) == 5
