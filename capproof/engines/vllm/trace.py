"""Trace vLLM's own constructors on symbolic config values: the ``traced`` side of the inventory.

The constructors of vLLM 0.33.0 (loaded from the wheel, :func:`.wheels.activate`) run with
capproof :class:`~capproof.symbolic.SymInt` config fields in duck-typed config objects
(``SimpleNamespace``-style, only the fields they read). A **recording stand-in** replaces the
allocation calls while they run: ``torch.zeros/empty/full/ones/arange/*_like``, ``Tensor.new_*``
and the numpy equivalents record ``(shape terms, dtype, the caller's file:line)`` and return a
:class:`FakeTensor` that supports what the constructors do next (``.numpy()``, ``.stride()``,
slicing, ``.to()``...). vLLM's buffer wrappers (``CpuGpuBuffer``, ``_make_buffer``, the V2
runner's ``UvaBackedTensor``/``StagedWriteTensor``) run unchanged on top of it; an allocation is
attributed to the innermost frame whose ``file:line`` is an allocation the static scan
(:mod:`.scan`) listed, so a wrapper's allocation lands on its caller's line.

The recorded terms print back to the shape expression language with
:func:`capproof.inventory.to_expression` (every config name is a size ``>= 1`` except
``num_speculative_tokens``, ``>= 0``).

The same harness runs with plain ints and the **real** torch/numpy functions (``mode="real"``):
``tests/test_inventory_trace.py`` (marked ``real``) compares the real tensors' shapes with the
traced expressions evaluated at those ints, which is what makes ``traced`` trustworthy.

A harness that raises (a branch on a symbolic value, a CUDA-only call, a device query) leaves its
allocations ``read`` with the error as ``why``.

The harnesses of ``vllm/v1/worker/**``, ``vllm/v1/spec_decode/**`` and the MoE alignment live in
:mod:`.harness_worker` (it adds stand-ins through :data:`PATCH_PROVIDERS` and names through
:data:`EXTRA_VALUES`) and those of the attention backends in :mod:`.harness_attention`; both
register into :data:`HARNESSES` when imported, which :mod:`.harnesses` does: import that module
to trace with every harness.
"""

from __future__ import annotations

import os
import sys
from typing import Callable

from ...errors import CapproofError, SpecError  # noqa: F401 - harness modules use tr.CapproofError
from ...symbolic import SymInt
from ..tracing import run as _run

# the engine-neutral machinery, re-exported under the names the harness modules and tests use
from ..tracing.fake import (  # noqa: F401 - re-exported for the harness modules
    NUMPY_FACTORIES,
    TORCH_FACTORIES,
    FakeShape,
    FakeTensor,
    Recorded,
    Recorder,
)
from ..tracing.interpret import (  # noqa: F401 - re-exported for the harness modules
    Config,
    CudaOnly,
    DeviceQuery,
    Poisoned,
    StepLog,
    construct,
    install_cuda_only,
    run_statements,
)
from ..tracing.run import matches as _matches  # noqa: F401

__all__ = [
    "FakeTensor",
    "Recorded",
    "Recorder",
    "recording",
    "HARNESSES",
    "trace_all",
    "config_values",
    "POSITIVE",
    "NONNEGATIVE",
]

#: the engine's top-level package (:class:`capproof.engines.tracing.Engine`)
PACKAGE = "vllm"

#: Config names that are sizes (>= 1) and names that may be 0, for the printer.
POSITIVE = (
    "max_num_reqs",
    "max_num_batched_tokens",
    "max_model_len",
    "block_size",
    "dcp",
    "pcp",
    "hidden_size",
    "vocab_size",
    "num_sms",
    "max_num_blocks",
    "num_experts",
    "top_k",
    "block_size_m",
    "max_num_tokens",
    "num_heads",
    "head_size",
    "num_kv_heads",
    "kernel_block_size",
    "index_topk",
    "cp_kv_cache_interleave_size",
    "block_table_width",
    "num_heads",
    "max_cudagraph_capture_size",
)
NONNEGATIVE = ("num_speculative_tokens",)


#: more stand-ins, registered by harness modules (:mod:`.harness_worker`): each a function
#: returning ``[(object, attribute, value)]`` to patch while recording (both modes)
PATCH_PROVIDERS: list[Callable[[], list]] = []


def _engine_patches():
    """Stand-ins for the few engine calls that need a GPU or concrete values while tracing:

    - ``vllm.v1.worker.gpu.buffer_utils.is_uva_available`` -> False: the V2 runner's UVA buffers
      take their explicit-copy fallback (``NonUvaBuffer``), which allocates the same shapes on CPU.
    - ``vllm.v1.worker.block_table.get_block_table_width(n, block_size)`` on a symbolic argument ->
      the name ``block_table_width`` (it calls ``math.gcd``, which needs concrete ints): shapes that
      use the aligned width say so, and an obligation evaluates vLLM's own function for it.
    """
    out = []
    mod = sys.modules.get("vllm.v1.worker.gpu.buffer_utils")
    if mod is not None:
        out.append((mod, "is_uva_available", lambda: False))
    mod = sys.modules.get("vllm.v1.worker.block_table")
    if mod is not None:
        real_width = mod.get_block_table_width

        def width(max_num_blocks, block_size, token_alignment=128):
            if isinstance(max_num_blocks, SymInt) or isinstance(block_size, SymInt):
                if token_alignment is None:
                    return max_num_blocks
                return SymInt.var("block_table_width")
            return real_width(max_num_blocks, block_size, token_alignment=token_alignment)

        out.append((mod, "get_block_table_width", width))
    for provider in PATCH_PROVIDERS:
        out.extend(provider())
    return out


# ------------------------------------------------------------------------------------------------
# configs

#: config names harness modules add (name -> the int of the real-tier deployment), e.g.
#: :data:`.harness_worker.EXTRA_NAMES`
EXTRA_VALUES: dict[str, int] = {}


def config_values(symbolic: bool = True, **overrides) -> dict:
    """The config names the harnesses read: SymInts named after themselves, or ints (a real
    DeepSeek-V3.2-like deployment: 256 requests, 8192 batched tokens, 163840 tokens, block 64)."""
    ints = dict(
        max_num_reqs=256,
        max_num_batched_tokens=8192,
        max_model_len=163840,
        block_size=64,
        dcp=1,
        num_speculative_tokens=3,
        hidden_size=7168,
        vocab_size=129280,
        num_sms=132,
        max_num_blocks=2560,
        num_heads=128,
        index_topk=2048,
        num_tokens=8192,
        top_k=8,
        num_experts=256,
        block_size_m=64,
        max_cudagraph_capture_size=512,
    )
    ints.update({k: val for k, val in EXTRA_VALUES.items() if k not in ints})
    ints.update(overrides)
    if not symbolic:
        return ints
    return {k: SymInt.var(k) for k in ints}


# ------------------------------------------------------------------------------------------------
# harnesses: one function per class (or function) that builds it the way vLLM does

HARNESSES: dict[str, Callable[[dict, str], object]] = {}
#: the modules each harness imports (imported before the allocation calls are patched)
MODULES: dict[str, tuple[str, ...]] = {}
#: a note a harness attaches to the ``why`` of every entry it traces (stand-ins it used, fixed
#: config values), so a reader of the inventory sees what the traced shape rests on
NOTES: dict[str, str] = {}


#: harness -> owners whose classes it also builds with other arguments than the inventory's (e.g.
#: PCPManager's rank-local InputBuffers of 2 * max_num_reqs requests): their allocations made by
#: this harness are not this entry's shape, so neither the tracer nor the real tier reads them
FOREIGN_OWNERS: dict[str, set[str]] = {}


def harness(name: str, *modules: str):
    def deco(fn):
        HARNESSES[name] = fn
        MODULES[name] = modules
        return fn

    return deco


#: GPU-only packages vLLM modules import at the top (no CPU wheel): replaced by :class:`CudaOnly`
#: modules so the vLLM module itself loads; any use of them in a traced statement fails and the
#: statement's buffers stay ``read``.
CUDA_ONLY_PACKAGES = ("flashinfer", "deep_gemm", "flash_mla", "flash_attn", "vllm_flash_attn")


def recording(root: str, mode: str = "fake"):
    """:func:`capproof.engines.tracing.fake.recording` with vLLM's stand-ins (:func:`_engine_patches`)."""
    return _run.record(ENGINE, root, mode)


def patches() -> list:
    """vLLM's stand-ins while recording (:class:`capproof.engines.tracing.Engine`)."""
    return _engine_patches()


def prepare(name: str) -> None:
    """Import harness ``name``'s vLLM modules (outside the recording); a GPU-only package they
    import (:data:`CUDA_ONLY_PACKAGES`) is replaced by a :class:`CudaOnly` module."""
    _run.prepare(ENGINE, name)


# ------------------------------------------------------------------------------------------------
# running (capproof/engines/tracing/run.py)

#: Fork budget per harness (paths through its branches on symbolic config values).
FORK_BUDGET = 64


def _one_run(name: str, root: str):
    """Run harness ``name`` once on symbolic values: ``(records, skipped statements, error)``."""
    return _run.one_run(ENGINE, name, root)


def _facts():
    """What every config name satisfies (sizes >= 1, counts >= 0): prunes impossible branches."""
    return _run.facts(ENGINE)


def _explore_harness(name: str, root: str):
    """Every path of harness ``name`` (:func:`capproof.engines.tracing.run.explore_harness`)."""
    return _run.explore_harness(ENGINE, name, root)


def condition_expression(term) -> str:
    """A Z3 Bool term in the shape expression language (comparisons joined by ``&``/``|``)."""
    return _run.condition_expression(ENGINE, term)


def trace_all(version: str, root: str, allocations, names: list[str] | None = None):
    """Run every harness on symbolic config values; return ``(entries, problems, reasons)``
    (:func:`capproof.engines.tracing.run.trace_all`), after putting the wheel's sources on
    ``sys.path`` and registering the generic builder/proposer harnesses."""
    _activate(root)
    register_generic(allocations)
    return _run.trace_all(ENGINE, root, allocations, names)


def _activate(root: str) -> None:
    from . import wheels

    if root not in sys.path:
        sys.path.insert(0, root)
    wheels.quiet()


@harness("InputBuffers", "vllm.v1.worker.gpu.input_batch")
def _v2_input_buffers(v: dict, device: str):
    from vllm.v1.worker.gpu.input_batch import InputBuffers

    # V2 runner: max_num_tokens = scheduler_config.max_num_batched_tokens (gpu/model_runner.py:231)
    return construct(
        InputBuffers, max_num_reqs=v["max_num_reqs"], max_num_tokens=v["max_num_batched_tokens"], device=device
    )


@harness("BlockTables", "vllm.v1.worker.gpu.block_table")
def _v2_block_tables(v: dict, device: str):
    from vllm.v1.worker.gpu.block_table import BlockTables

    return construct(
        BlockTables,
        block_sizes=[v["block_size"]],
        max_num_reqs=v["max_num_reqs"],
        max_num_batched_tokens=v["max_num_batched_tokens"],
        max_num_blocks_per_group=[v["max_num_blocks"]],
        device=device,
    )


@harness("RequestState", "vllm.v1.worker.gpu.states")
def _v2_request_state(v: dict, device: str):
    from vllm.v1.worker.gpu.states import RequestState

    return construct(
        RequestState,
        max_num_reqs=v["max_num_reqs"],
        max_model_len=v["max_model_len"],
        max_num_batched_tokens=v["max_num_batched_tokens"],
        num_speculative_steps=v["num_speculative_tokens"],
        vocab_size=v["vocab_size"],
        device=device,
    )


@harness("InputBatch", "vllm.v1.worker.gpu_input_batch")
def _v1_input_batch(v: dict, device: str):
    from vllm.v1.worker.gpu_input_batch import InputBatch

    return construct(
        InputBatch,
        max_num_reqs=v["max_num_reqs"],
        max_model_len=v["max_model_len"],
        max_num_batched_tokens=v["max_num_batched_tokens"],
        device=device,
        vocab_size=v["vocab_size"],
        block_sizes=[v["block_size"]],
        max_num_blocks_per_req=[v["max_num_blocks"]],
        num_spec_tokens=v["num_speculative_tokens"],
    )


def vllm_config(v: dict, **extra) -> Config:
    """The ``VllmConfig`` fields the traced constructors read, from config values ``v``."""
    hf = Config(
        index_topk=v["index_topk"],
        num_attention_heads=v["num_heads"],
        hidden_size=v["hidden_size"],
        vocab_size=v["vocab_size"],
        model_type="deepseek_v32",
    )
    draft = Config(
        get_hidden_size=lambda: v["hidden_size"],
        get_inputs_embeds_size=lambda: v["hidden_size"],
        get_vocab_size=lambda: v["vocab_size"],
        hf_config=hf,
        hf_text_config=hf,
        uses_mrope=False,
        uses_xdrope_dim=0,
        max_model_len=v["max_model_len"],
        dtype=None,
    )
    spec = Config(
        num_speculative_tokens=v["num_speculative_tokens"],
        method="eagle",
        enable_adaptive_verification=False,
        use_eagle=lambda: True,
        draft_model_config=draft,
        parallel_drafting=False,
        use_local_argmax_reduction=False,
        use_heterogeneous_vocab=False,
        disable_padded_drafter_batch=False,
        draft_tensor_parallel_size=1,
    )
    cfg = Config(
        scheduler_config=Config(
            max_num_seqs=v["max_num_reqs"],
            max_num_batched_tokens=v["max_num_batched_tokens"],
            max_model_len=v["max_model_len"],
        ),
        model_config=Config(
            max_model_len=v["max_model_len"],
            get_hidden_size=lambda: v["hidden_size"],
            get_vocab_size=lambda: v["vocab_size"],
            dtype=None,
            use_mla=True,
            is_encoder_decoder=False,
            hf_text_config=hf,
            hf_config=hf,
            get_num_attention_heads=lambda parallel_config=None: v["num_heads"],
            get_head_size=lambda: 576,
            use_fp64_gumbel=False,
            supports_multimodal_inputs=False,
            uses_mrope=False,
            uses_xdrope_dim=0,
            get_vocab_size_=None,
        ),
        cache_config=Config(block_size=v["block_size"], cache_dtype="auto"),
        parallel_config=Config(
            decode_context_parallel_size=v["dcp"],
            tensor_parallel_size=1,
            prefill_context_parallel_size=1,
            cp_kv_cache_interleave_size=1,
            data_parallel_size=1,
            pipeline_parallel_size=1,
            data_parallel_rank=0,
        ),
        speculative_config=spec,
        num_speculative_tokens=v["num_speculative_tokens"],
        attention_config=Config(
            sparse_mla_prefill_workspace_factor=5,
            hisparse_config=None,
            resolve_indexer_kv_dtype=lambda default: default,
        ),
        compilation_config=Config(
            cudagraph_mode=None,
            max_cudagraph_capture_size=v["max_cudagraph_capture_size"],
            cudagraph_capture_sizes=[],
            static_forward_context={},
        ),
        offload_config=Config(),
        lora_config=None,
        load_config=Config(),
        observability_config=Config(),
        kv_transfer_config=None,
        ec_transfer_config=None,
    )
    cfg.model_config.runner_type = "generate"
    cfg.model_config.enable_prompt_embeds = False
    cfg.model_config.is_multimodal_raw_input_only_model = False
    cfg.model_config.get_inputs_embeds_size = lambda: v["hidden_size"]
    cfg.model_config.is_mm_prefix_lm = False
    cfg.model_config.logprobs_mode = "raw_logprobs"
    cfg.model_config.logits_processors = None
    cfg.parallel_config.distributed_executor_backend = "mp"
    cfg.scheduler_config.async_scheduling = False
    cfg.cache_config.kv_sharing_fast_prefill = False
    cfg.speculative_config.use_ngram_gpu = lambda: False
    cfg.speculative_config.rejection_sample_method = "strict"
    cfg.speculative_config.draft_sample_method = "greedy"
    cfg.model_config.model = "deepseek-ai/DeepSeek-V3.2"
    cfg.model_config.convert_type = "none"
    cfg.model_config.architectures = ["DeepseekV32ForCausalLM"]
    cfg.model_config.hf_config.architectures = ["DeepseekV32ForCausalLM"]
    try:
        import torch

        cfg.model_config.dtype = torch.bfloat16
        cfg.speculative_config.draft_model_config.dtype = torch.bfloat16
    except ImportError:  # pragma: no cover
        pass
    for k, val in extra.items():
        setattr(cfg, k, val)
    return cfg


def block_table_width_of(v: dict):
    """The runner's aligned block-table width: the name ``block_table_width`` when tracing, vLLM's
    own ``get_block_table_width(max_num_blocks, block_size)`` on ints."""
    if isinstance(v["max_num_blocks"], SymInt) or isinstance(v["block_size"], SymInt):
        return SymInt.var("block_table_width")
    from vllm.v1.worker.block_table import get_block_table_width

    return get_block_table_width(v["max_num_blocks"], v["block_size"])


def mla_spec(v: dict):
    import torch
    from vllm.v1.kv_cache_interface import MLAAttentionSpec

    return MLAAttentionSpec(
        block_size=64, num_kv_heads=1, head_size=576, dtype=torch.uint8, cache_dtype_str="fp8_ds_mla"
    )


@harness("DeepseekV32IndexerMetadataBuilder", "vllm.v1.attention.backends.mla.indexer", "vllm.v1.kv_cache_interface")
def _indexer(v: dict, device: str):
    import torch
    from vllm.v1.attention.backends.mla.indexer import DeepseekV32IndexerMetadataBuilder as B

    return construct(
        B,
        mla_spec(v),
        ["model.layers.0.self_attn.indexer"],
        vllm_config(v),
        torch.device(device),
        block_table_width=block_table_width_of(v),
        _overrides={"num_compute_units": lambda index=None: v["num_sms"]},
    )


@harness(
    "FlashMLASparseMetadataBuilder", "vllm.v1.attention.backends.mla.flashmla_sparse", "vllm.v1.kv_cache_interface"
)
def _flashmla_sparse(v: dict, device: str):
    import torch
    from vllm.v1.attention.backends.mla.flashmla_sparse import FlashMLASparseMetadataBuilder as B

    return construct(
        B,
        mla_spec(v),
        ["model.layers.0.self_attn.attn"],
        vllm_config(v),
        torch.device(device),
        _overrides={"num_compute_units": lambda index=None: v["num_sms"]},
    )


@harness("FlashInferMetadataBuilder", "vllm.v1.attention.backends.flashinfer", "vllm.v1.kv_cache_interface")
def _flashinfer(v: dict, device: str):
    import torch
    from vllm.v1.attention.backends.flashinfer import FlashInferMetadataBuilder as B
    from vllm.v1.kv_cache_interface import FullAttentionSpec

    spec = FullAttentionSpec(block_size=v["block_size"], num_kv_heads=8, head_size=128, dtype=torch.bfloat16)
    return construct(B, spec, ["model.layers.0.self_attn.attn"], vllm_config(v), torch.device(device))


@harness("EagleProposer", "vllm.v1.spec_decode.eagle")
def _eagle(v: dict, device: str):
    import torch
    from vllm.v1.spec_decode.eagle import EagleProposer

    return construct(EagleProposer, vllm_config(v), torch.device(device))


@harness("DFlashProposer", "vllm.v1.spec_decode.dflash")
def _dflash(v: dict, device: str):
    import torch
    from vllm.v1.spec_decode.dflash import DFlashProposer

    cfg = vllm_config(v)
    cfg.speculative_config.method = "dflash"
    return construct(DFlashProposer, cfg, torch.device(device))


@harness("moe_align_block_size", "vllm.model_executor.layers.fused_moe.moe_align_block_size")
def _moe_align(v: dict, device: str):
    """vLLM's moe_align_block_size on a routing of ``num_tokens x top_k`` expert ids (its buffers
    are sized before the compiled op runs)."""

    import torch
    from vllm.model_executor.layers.fused_moe import moe_align_block_size as mod

    fn = mod.moe_align_block_size
    topk_ids = (
        FakeTensor((v["num_tokens"], v["top_k"]), torch.int32, device)
        if isinstance(v["num_tokens"], SymInt)
        else torch.zeros((v["num_tokens"], v["top_k"]), dtype=torch.int32)
    )
    args = dict(
        topk_ids=topk_ids,
        block_size=v["block_size_m"],
        num_experts=v["num_experts"],
        expert_map=None,
        pad_sorted_ids=False,
        ignore_invalid_experts=False,
        return_scatter_idx=True,
    )
    log = run_statements(fn, None, None, args)
    return (None, log)


def request_states(v: dict, device: str):
    """The V2 runner's request state as the logits processors read it (``RequestState`` fields)."""
    import torch

    n = v["max_num_reqs"]
    prompt_len = Config(
        np=FakeTensor((n,), torch.int32) if isinstance(n, SymInt) else torch.zeros(n, dtype=torch.int32).numpy()
    )
    return Config(
        max_num_reqs=n,
        device=torch.device(device),
        vocab_size=v["vocab_size"],
        prompt_len=prompt_len,
        max_model_len=v["max_model_len"],
        num_speculative_steps=v["num_speculative_tokens"],
    )


@harness("SamplingStates", "vllm.v1.worker.gpu.sample.states")
def _sampling_states(v: dict, device: str):
    from vllm.v1.worker.gpu.sample.states import SamplingStates

    return construct(SamplingStates, max_num_reqs=v["max_num_reqs"], vocab_size=v["vocab_size"])


def _logits_processor(module: str, cls: str):
    def run(v: dict, device: str):
        import importlib

        klass = getattr(importlib.import_module(module), cls)
        return construct(klass, vllm_config(v), request_states(v, device))

    return run


for _module, _cls in (
    ("vllm.v1.worker.gpu.sample.logit_bias", "LogitBiasState"),
    ("vllm.v1.worker.gpu.sample.penalties", "PenaltiesState"),
    ("vllm.v1.worker.gpu.sample.bad_words", "BadWordsState"),
):
    harness(_cls, _module)(_logits_processor(_module, _cls))


def _speculator(module: str, cls: str):
    def run(v: dict, device: str):
        import importlib

        import torch

        klass = getattr(importlib.import_module(module), cls)
        return construct(klass, vllm_config(v), torch.device(device))

    return run


# the V2 runner's speculators: capproof/engines/vllm/harness_worker.py


def _generic_builder(module: str, cls: str, mla: bool):
    """An attention metadata builder constructed as the runner does:
    ``Builder(kv_cache_spec, layer_names, vllm_config, device)`` (``AttentionMetadataBuilder``)."""

    def run(v: dict, device: str):
        import importlib

        import torch
        from vllm.v1.kv_cache_interface import FullAttentionSpec

        klass = getattr(importlib.import_module(module), cls)
        spec = (
            mla_spec(v)
            if mla
            else FullAttentionSpec(block_size=v["block_size"], num_kv_heads=8, head_size=128, dtype=torch.bfloat16)
        )
        return construct(
            klass,
            spec,
            ["model.layers.0.self_attn.attn"],
            vllm_config(v),
            torch.device(device),
            _overrides={"num_compute_units": lambda index=None: v["num_sms"]},
        )

    return run


def _generic_proposer(module: str, cls: str):
    def run(v: dict, device: str):
        import importlib

        import torch

        klass = getattr(importlib.import_module(module), cls)
        return construct(klass, vllm_config(v), torch.device(device))

    return run


def register_generic(allocations) -> list[str]:
    """Harnesses for the scanned owners that follow vLLM's two common constructor signatures:
    attention metadata builders (``*MetadataBuilder`` under ``attention/backends``) and
    proposers/speculators (``(vllm_config, device)``). ROCm-only files are left out. Returns the
    names registered."""
    added = []
    for owner, file in sorted({(a.owner, a.file) for a in allocations}):
        if owner in HARNESSES or os.path.basename(file).startswith("rocm"):
            continue
        module = file[:-3].replace("/", ".")
        if owner.endswith("MetadataBuilder") and "/attention/backends/" in file:
            harness(owner, module, "vllm.v1.kv_cache_interface")(_generic_builder(module, owner, "/mla/" in file))
        elif (owner.endswith("Speculator") and "/worker/gpu/spec_decode/" in file) or (
            owner.endswith("Proposer") and "/v1/spec_decode/" in file
        ):
            harness(owner, module)(_generic_proposer(module, owner))
        else:
            continue
        added.append(owner)
    return added


#: this module is vLLM's :class:`capproof.engines.tracing.Engine` (harness modules extend its tables;
#: :mod:`.harnesses` imports them all)
ENGINE = sys.modules[__name__]
