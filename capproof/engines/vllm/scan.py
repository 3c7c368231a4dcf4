"""Static scan of vLLM's sources for pre-allocated buffers (the ``read`` side of the inventory).

A buffer is **pre-allocated** when an allocation call's result is kept across steps: assigned to
an attribute of ``self`` (``self.x = torch.zeros(...)``, ``self.x: T = ...``, ``self.x[k] = ...``,
in any method: constructors, initialisers, ``load_model``, lazily on first use), to a ``global``
of the function (the workspace getters' module caches) or to a module-level name. A value built
inside the right-hand side (``self.x = CpuGpuBuffer(...)``, ``self.x = torch.zeros(...).to(d)``,
``self.xs = [torch.zeros(...) for _ in ...]``) counts; a local temporary does not. Allocation calls:
``torch``/``np`` ``zeros``, ``empty``, ``full``, ``ones``, ``arange`` and their ``*_like``;
``x.new_zeros/new_empty/new_full/new_ones``; vLLM's wrappers ``CpuGpuBuffer``, ``_make_buffer``
(V1 runner, block table), and the V2 runner's ``UvaBuffer``, ``UvaBufferPool``,
``UvaBackedTensor``, ``StagedWriteTensor`` (``vllm/v1/worker/gpu/buffer_utils.py``). The wrappers'
own bodies are not entries (the wrapper call is).

The scope: ``vllm/v1/worker/`` (incl. ``gpu/``), ``vllm/v1/attention/backends/``,
``vllm/v1/spec_decode/`` and ``vllm/model_executor/layers/fused_moe/moe_align_block_size.py``.
"""

from __future__ import annotations

from ..tracing import scan as _scan
from ..tracing.scan import Allocation

__all__ = ["SCOPE", "Allocation", "scan", "scan_file"]

#: Directories and files of the vLLM package (relative to the wheel root) that the inventory covers.
SCOPE = (
    "vllm/v1/worker",
    "vllm/v1/attention/backends",
    "vllm/v1/spec_decode",
    "vllm/model_executor/layers/fused_moe/moe_align_block_size.py",
)

WRAPPERS = {"CpuGpuBuffer", "_make_buffer", "UvaBuffer", "UvaBufferPool", "UvaBackedTensor", "StagedWriteTensor"}
#: The wrappers' own definitions (their bodies allocate on behalf of the caller).
WRAPPER_DEFINITIONS = {
    "CpuGpuBuffer",
    "_make_buffer",
    "UvaBuffer",
    "NonUvaBuffer",
    "UvaBufferPool",
    "UvaBackedTensor",
    "StagedWriteTensor",
}


def scan_file(root: str, rel: str, locals_kept: bool = False) -> list[Allocation]:
    """The pre-allocations of one vLLM file (:func:`capproof.engines.tracing.scan.scan_file` with
    vLLM's wrappers)."""
    return _scan.scan_file(root, rel, locals_kept, WRAPPERS, WRAPPER_DEFINITIONS)


def scan(root: str, scope=SCOPE) -> list[Allocation]:
    """Every pre-allocation in ``scope`` under ``root`` (the extracted wheel), sorted by file and line."""
    return _scan.scan(root, scope, WRAPPERS, WRAPPER_DEFINITIONS)
