"""Static scan of SGLang's sources for pre-allocated buffers (the ``read`` side of its inventory).

:func:`capproof.engines.tracing.scan.scan` over :data:`SCOPE`, with SGLang's one allocation
pattern the generic rules miss: the CUDA-graph runners' static inputs are fields of a
``ForwardInputBuffers`` dataclass built by a classmethod ``create`` that allocates into locals and
returns ``cls(input_ids=input_ids, ...)`` (``sglang/srt/model_executor/runner_utils/buffers.py``,
``sglang/srt/speculative/eagle_draft_cuda_graph_runner.py``); those locals are entries named after
the field (``returned_fields``).
"""

from __future__ import annotations

from ..tracing import scan as _scan
from ..tracing.scan import Allocation

__all__ = ["SRT", "EXCLUDED", "scope_of", "Allocation", "scan", "scan_file"]

#: What the inventory covers: every module of ``sglang/srt`` (request-to-token pool and KV-pool
#: index structures, the model executor and its CUDA-graph runners, every attention backend,
#: speculative decoding, MoE alignment and expert maps, LoRA, sampling, the scheduler's batch,
#: two-batch overlap, disaggregation, the model files) except :data:`EXCLUDED`; the MoE alignment
#: file is also named by itself, so its per-call buffers (which size the kernels) are listed too.
SRT = "sglang/srt"
#: Non-CUDA device backends (Ascend NPU, Apple MLX, ...): not executed by a CUDA deployment,
#: left out as vLLM's ROCm-only files would be if they had their own directory.
EXCLUDED = ("sglang/srt/hardware_backend",)
MOE_ALIGN = "sglang/srt/layers/moe/moe_runner/triton_utils/moe_align_block_size.py"


def scope_of(root: str) -> tuple[str, ...]:
    """The scope under ``root``: the entries of ``sglang/srt`` minus :data:`EXCLUDED`, plus the MoE
    alignment file by itself."""
    import os

    base = os.path.join(root, SRT)
    items = sorted(
        f"{SRT}/{n}"
        for n in os.listdir(base)
        if (n.endswith(".py") or os.path.isdir(os.path.join(base, n)))
        and f"{SRT}/{n}" not in EXCLUDED
        and n != "__pycache__"
    )
    return tuple(items) + (MOE_ALIGN,)


#: SGLang allocates through torch/numpy directly: no wrapper calls.
WRAPPERS: frozenset = frozenset()
WRAPPER_DEFINITIONS: frozenset = frozenset()


def scan_file(root: str, rel: str, locals_kept: bool = False) -> list[Allocation]:
    """The pre-allocations of one SGLang file."""
    return _scan.scan_file(root, rel, locals_kept, WRAPPERS, WRAPPER_DEFINITIONS, returned_fields=True)


def scan(root: str, scope=None) -> list[Allocation]:
    """Every pre-allocation in ``scope`` (default :func:`scope_of`) under ``root`` (the extracted
    wheel), sorted by file and line."""
    return _scan.scan(
        root, scope if scope is not None else scope_of(root), WRAPPERS, WRAPPER_DEFINITIONS, returned_fields=True
    )
