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

__all__ = ["SCOPE", "Allocation", "scan", "scan_file"]

#: Directories and files of the SGLang package (relative to the wheel root) that the inventory
#: covers: the request-to-token pool and KV-pool index structures, the model executor (forward
#: batch, CUDA-graph runners' static inputs), every attention backend, speculative decoding,
#: two-batch overlap, LoRA, sampling, the scheduler's batch, and the MoE alignment (whose
#: per-call buffers size the kernels: a file named by itself lists its locals too).
SCOPE = (
    "sglang/srt/mem_cache",
    "sglang/srt/model_executor",
    "sglang/srt/layers/attention",
    "sglang/srt/speculative",
    "sglang/srt/batch_overlap",
    "sglang/srt/lora",
    "sglang/srt/sampling",
    "sglang/srt/managers/schedule_batch.py",
    "sglang/srt/managers/overlap_utils.py",
    "sglang/srt/layers/moe/moe_runner/triton_utils/moe_align_block_size.py",
)

#: SGLang allocates through torch/numpy directly: no wrapper calls.
WRAPPERS: frozenset = frozenset()
WRAPPER_DEFINITIONS: frozenset = frozenset()


def scan_file(root: str, rel: str, locals_kept: bool = False) -> list[Allocation]:
    """The pre-allocations of one SGLang file."""
    return _scan.scan_file(root, rel, locals_kept, WRAPPERS, WRAPPER_DEFINITIONS, returned_fields=True)


def scan(root: str, scope=SCOPE) -> list[Allocation]:
    """Every pre-allocation in ``scope`` under ``root`` (the extracted wheel), sorted by file and line."""
    return _scan.scan(root, scope, WRAPPERS, WRAPPER_DEFINITIONS, returned_fields=True)
