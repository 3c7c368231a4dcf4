"""Trace SGLang 0.5.23's own constructors on symbolic server arguments (the ``traced`` side).

The engine-neutral machinery (:mod:`capproof.engines.tracing`) runs SGLang's constructors and
CUDA-graph initialisers statement by statement with capproof SymInts for the server arguments and
the sizes SGLang derives from them; allocation calls are recorded (shape terms, dtype, caller
line) instead of run. This module is SGLang's :class:`capproof.engines.tracing.Engine`: its
vocabulary (:data:`POSITIVE`), its harnesses (one per class or factory, built the way SGLang's own
caller builds it; the caller's ``file:line`` is cited at each) and its stand-ins.

Stand-ins (none sizes a buffer):

- GPU-only packages SGLang imports: :mod:`.stand_ins` (import time);
- SGLang's runtime-context getters ``get_exec()``, ``get_schedule()``, ``get_spec()``,
  ``get_parallel()``, ``get_flags()`` (``sglang/srt/runtime_context.py``), which read the
  published server arguments: duck-typed objects (:func:`server`) holding the symbolic server
  arguments and SGLang 0.5.23's defaults for the switches (no speculative algorithm unless the
  harness says so, no DP attention, TP 1, no sliding window); reading any other field fails, so the
  statement reading it is skipped and its buffers stay ``read``;
- the ``model_runner`` an attention backend is built from: a duck-typed object
  (:func:`model_runner`) whose sizes are the symbolic names (``req_to_token_pool.size`` =
  ``req_pool_size``, ``model_config.context_len`` = ``context_len``, the row width of
  ``req_to_token`` = ``max_context_len``);
- device queries (``get_device_core_count``, ``is_arch_support_pdl``, ``current_platform``):
  questions a CPU cannot answer for the deployment; statements asking them are skipped.

Vocabulary (sizes >= 1): ``req_pool_size`` (``ReqToTokenPool.size``, the running-request cap the
model runner derives, ``max_running_requests`` when given), ``max_context_len`` (the row width of
``req_to_token``: ``context_len`` + SGLang's extra, ``allocation_sizing.py``), ``context_len``
(``model_config.context_len``), ``kv_pool_size`` (tokens in the KV pool), ``page_size``,
``max_bs`` (``max(capture_bs)`` of a CUDA-graph runner), ``captured_req_width`` (tokens per request
a graph captures: 1 for decode, ``speculative_num_draft_tokens`` for verify),
``speculative_num_steps``, ``speculative_eagle_topk``, ``speculative_num_draft_tokens``,
``hidden_size``, ``vocab_size``, ``num_dp_ranks``, ``num_tokens``/``top_k``/``num_experts``/
``block_size_m`` (MoE alignment), ``max_loras_per_batch`` and ``max_lora_chunk_size`` (LoRA backends), ``mamba_pool_size`` (slots of
the Mamba state pool, ``HybridReqToTokenPool``'s ``mamba_size``).
"""

from __future__ import annotations

import contextlib
import os
import sys

from ...symbolic import SymInt
from ..tracing import run as _run
from ..tracing.interpret import Config, construct, run_statements

__all__ = [
    "PACKAGE",
    "POSITIVE",
    "NONNEGATIVE",
    "HARNESSES",
    "config_values",
    "trace_all",
    "server",
    "model_runner",
    "ENGINE",
]

PACKAGE = "sglang"
POSITIVE = (
    "req_pool_size",
    "max_context_len",
    "context_len",
    "kv_pool_size",
    "page_size",
    "max_bs",
    "captured_req_width",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
    "hidden_size",
    "vocab_size",
    "num_dp_ranks",
    "num_tokens",
    "top_k",
    "num_experts",
    "block_size_m",
    "max_num_tokens",
    "max_loras_per_batch",
    "max_lora_chunk_size",
    "mamba_pool_size",
)
NONNEGATIVE: tuple = ()
HARNESSES: dict = {}
MODULES: dict = {}
NOTES: dict = {}
FOREIGN_OWNERS: dict = {}
CUDA_ONLY_PACKAGES: tuple = ()
FORK_BUDGET = 32


def harness(name: str, *modules: str, note: str = ""):
    def deco(fn):
        HARNESSES[name] = fn
        MODULES[name] = modules
        if note:
            NOTES[name] = note
        return fn

    return deco


def config_values(symbolic: bool = True, **overrides) -> dict:
    """The names the harnesses read: SymInts named after themselves, or the ints of a real
    DeepSeek-V3.2-like deployment (256 requests, context 163840 + SGLang's extra 4, page 64,
    EAGLE 3 steps x top-k 1, 4 draft tokens, CUDA graphs up to 256 requests)."""
    ints = dict(
        req_pool_size=256,
        max_context_len=163844,
        context_len=163840,
        kv_pool_size=1048576,
        page_size=64,
        max_bs=256,
        captured_req_width=1,
        speculative_num_steps=3,
        speculative_eagle_topk=1,
        speculative_num_draft_tokens=4,
        hidden_size=7168,
        vocab_size=129280,
        num_dp_ranks=1,
        num_tokens=8192,
        top_k=8,
        num_experts=256,
        block_size_m=64,
        max_num_tokens=256,
        max_loras_per_batch=8,
        max_lora_chunk_size=16,
        mamba_pool_size=512,
    )
    ints.update(overrides)
    if not symbolic:
        return ints
    return {k: SymInt.var(k) for k in ints}


def patches() -> list:
    """Stand-ins while recording: none beyond the import-time ones and each harness's overrides."""
    return []


class Published(Config):
    """One published config namespace (``exec``, ``exec.graph``, ``parallel``, ...): the fields
    the harness gives, then SGLang 0.5.23's declared default of a switch the harness does not
    model (:func:`declared_switches`), then a sub-namespace; reading any other field raises
    AttributeError naming it, so the statement reading it is skipped, not guessed."""

    def __init__(self, _path: str, **fields):
        super().__init__(**fields)
        object.__setattr__(self, "_path", _path)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        path = object.__getattribute__(self, "_path")
        switches = declared_switches()
        if name in switches.get(path, {}):
            return switches[path][name]
        sub = f"{path}.{name}" if path else name
        if any(p == sub or p.startswith(sub + ".") for p in switches):
            value = Published(sub)
            setattr(self, name, value)
            return value
        raise AttributeError(f"duck-typed config has no field {name!r} (namespace {path!r})")


def _published(path: str, cfg) -> Published:
    """``cfg`` (a :class:`Config` and its nested Configs) as :class:`Published` namespaces."""
    fields = {k: _published(f"{path}.{k}" if path else k, x) if type(x) is Config else x for k, x in vars(cfg).items()}
    return Published(path, **fields)


_SWITCHES: dict = {}


def declared_switches() -> dict:
    """``{namespace path: {field: default}}``: the input fields SGLang 0.5.23 declares
    (``ServerArgs._NAMESPACES``, msgspec structs with ``_NS_PATH``, ``sglang/srt/arg_groups/fields``)
    whose default is a switch (``bool``, ``None``, a string or an enum member) and that config
    resolution may not rewrite (not in SGLang's ``resolvable_fields`` whitelist): what a launch line
    that does not give the flag publishes. Integer and float defaults are left out (they may size a
    buffer: a harness gives those symbolically or not at all)."""
    if _SWITCHES:
        return _SWITCHES
    import enum

    import msgspec.structs
    from sglang.srt.arg_groups.arg_utils import resolvable_fields
    from sglang.srt.server_args import ServerArgs

    resolvable = resolvable_fields(ServerArgs)
    for source in ServerArgs._NAMESPACES:
        path = source._NS_PATH
        for field in msgspec.structs.fields(source):
            d = field.default
            if field.name in resolvable or d is msgspec.NODEFAULT:
                continue
            if d is None or isinstance(d, (bool, str, enum.Enum)):
                _SWITCHES.setdefault(path, {})[field.name] = d
    return _SWITCHES


def server(v: dict, spec: str | None = None) -> tuple:
    """The published configuration SGLang's runtime-context getters read (module docstring):
    ``(config bags by namespace, parallel context, flags)``; a namespace falls back to SGLang's
    declared switch defaults (:class:`Published`)."""
    spec_cfg = Config(
        speculative_num_steps=v["speculative_num_steps"] if spec else None,
        speculative_eagle_topk=v["speculative_eagle_topk"] if spec else None,
        speculative_num_draft_tokens=v["speculative_num_draft_tokens"] if spec else None,
        speculative_algorithm=spec,
    )
    parallel = Config(
        attn_dcp_size=1,
        attn_dcp_rank=0,
        attn_tp_size=1,
        attn_tp_rank=0,
        tp_size=1,
        pp_size=1,
        attn_dp_size=1,
        dp_size=1,
        attn_cp_size=1,
        moe_ep_size=1,
        attn_dp_enabled=False,
        attn_cp_rank=0,
        attn_dp_rank=0,
        tp_rank=0,
        pp_rank=0,
        # resolvable, but resolved to 1 only under DWDP and DeepSeek-V4 (arg_groups/parallel_hook.py:483,
        # deepseek_v4_hook.py:215): a TP-only deployment publishes the declared None
        moe_dense_tp_size=None,
    )
    execution = Config(
        kernel=Config(
            triton_attention_num_kv_splits=8,
            triton_attention_split_tile_size=None,
            triton_attention_reduce_in_fp32=False,
            enable_lean_attention=False,
        ),
        moe=Config(moe_a2a_backend="none", moe_runner_backend="auto", enable_moe_gather=False),
        deterministic=Config(enable_deterministic_inference=False),
        graph=Config(disable_cuda_graph_padding=False, enable_profile_cuda_graph=False),
        dllm=Config(dllm_algorithm=None),
        mamba=Config(enable_mamba_extra_buffer=False),
    )
    schedule = Config(page_size=v["page_size"], chunked_prefill_size=8192, max_running_requests=v["req_pool_size"])
    spec_cfg.speculative_use_rejection_sampling = False
    execution.graph.cuda_graph_config = Config()
    # SGLang's own mutable runtime flags (runtime_context.Flags) with their defaults: no torch.compile,
    # MoE backends not initialised yet (the accessors fall back to NONE/AUTO), no DP attention
    from sglang.srt.runtime_context import Flags

    flags = Flags()
    lora = Config(max_lora_chunk_size=v["max_lora_chunk_size"])
    bags = {
        name: _published(name, cfg)
        for name, cfg in {"spec": spec_cfg, "exec": execution, "schedule": schedule, "lora": lora}.items()
    }
    for name in declared_switches():
        top = name.split(".")[0]
        if top != "parallel" and top not in bags:
            bags[top] = Published(top)
    return bags, _published("parallel", parallel), flags


@contextlib.contextmanager
def published(v: dict, spec: str | None = None):
    """SGLang's runtime context (``sglang/srt/runtime_context.py``: ``_CONTEXT``, ``_PARALLEL``)
    replaced by :func:`server`'s objects while the body runs."""
    from sglang.srt import runtime_context as rc

    bags, parallel, flags = server(v, spec)

    def bag(name):
        if name not in bags:
            raise ValueError(f"config namespace {name!r} not published (not modelled by the harness)")
        return bags[name]

    from sglang.srt.runtime_context import Resources, RuntimeContext

    context = Config(config_bag=bag, flags=flags, parallel=parallel, resources=Resources())
    # named persistent buffers (workspaces): SGLang's own get-or-create
    context.get_buffer = lambda name, factory: RuntimeContext.get_buffer(context, name, factory)
    saved = rc._CONTEXT, rc._PARALLEL
    rc._CONTEXT, rc._PARALLEL = context, parallel
    try:
        yield
    finally:
        rc._CONTEXT, rc._PARALLEL = saved


def model_runner(v: dict, device: str = "cpu", **extra) -> Config:
    """The ``model_runner`` fields the attention backends' constructors read (module docstring)."""
    import torch

    req_to_token = _fake_or_real((v["req_pool_size"], v["max_context_len"]), torch.int32)
    model_config = Config(
        context_len=v["context_len"],
        hidden_size=v["hidden_size"],
        vocab_size=v["vocab_size"],
        is_encoder_decoder=False,
        dtype=torch.bfloat16,
        num_attention_heads=32,
        head_dim=128,
        v_head_dim=128,
        swa_v_head_dim=128,
        get_max_num_attention_heads=lambda: 32,
        get_num_kv_heads=lambda tp=1, dcp=1: 8,
        attention_arch=None,
        is_hybrid_swa=False,
        hf_config=Config(architectures=["LlamaForCausalLM"]),
        get_text_config=lambda: Config(),
        is_multimodal=False,
    )
    model_config.hf_text_config = model_config.hf_config
    runner = Config(
        device=device,
        gpu_id=0,
        page_size=v["page_size"],
        sliding_window_size=None,
        is_draft_worker=False,
        model_config=model_config,
        kv_cache_dtype=torch.bfloat16,
        req_to_token_pool=Config(
            size=v["req_pool_size"], req_to_token=req_to_token, max_context_len=v["max_context_len"]
        ),
        decode_num_tokens_per_req=lambda: 1,
        dtype=torch.bfloat16,
        kv_index_translator=None,
        token_to_kv_pool=Config(
            size=v["kv_pool_size"],
            page_size=v["page_size"],
            start_layer=0,
            get_value_buffer=lambda layer: _fake_or_real((v["kv_pool_size"], 8, 128), torch.bfloat16),
            get_v_head_dim=lambda: 128,
        ),
        token_to_kv_pool_allocator=Config(size=v["kv_pool_size"], page_size=v["page_size"]),
        is_multimodal=False,
        kv_cache_dtype_str="auto",
        is_local_attention_model=False,
        prefill_attention_backend_str="flashinfer",
        decode_attention_backend_str="flashinfer",
        spec_algorithm=Config(
            is_none=lambda: True, is_eagle=lambda: False, is_dspark=lambda: False, is_ngram=lambda: False
        ),
        hisparse_coordinator=None,
        lora_manager=None,
        attention_chunk_size=None,
    )
    for k, val in extra.items():
        setattr(runner, k, val)
    return runner


def _fake_or_real(shape, dtype):
    import torch

    from ..tracing.fake import FakeTensor

    if any(isinstance(d, SymInt) for d in shape):
        return FakeTensor(tuple(shape), dtype, "cpu")
    return torch.zeros(tuple(shape), dtype=dtype)


def call(fn, owner, self_obj, overrides=None, **arguments):
    """Run ``fn``'s body (a method or function of SGLang) statement by statement with
    ``arguments`` bound; returns ``(self_obj, log)``."""
    import inspect

    fn = getattr(fn, "__func__", fn)
    sig = inspect.signature(fn)
    bound = sig.bind_partial(**({next(iter(sig.parameters)): self_obj} if self_obj is not None else {}), **arguments)
    bound.apply_defaults()
    args = dict(bound.arguments)
    if self_obj is not None:
        args.pop(next(iter(sig.parameters)))
    return self_obj, run_statements(fn, owner, self_obj, args, overrides=overrides)


# ------------------------------------------------------------------------------------------------
# harnesses


@harness(
    "ReqToTokenPool",
    "sglang.srt.mem_cache.memory_pool",
    note="ReqToTokenPool(size, max_context_len, ...) as model_runner_components builds it",
)
def _req_to_token(v: dict, device: str):
    from sglang.srt.mem_cache.memory_pool import ReqToTokenPool

    return construct(
        ReqToTokenPool,
        size=v["req_pool_size"],
        max_context_len=v["max_context_len"],
        device=device,
        enable_memory_saver=False,
    )


@harness("PagedTokenToKVPoolAllocator", "sglang.srt.mem_cache.allocator.paged")
def _paged_allocator(v: dict, device: str):
    import torch
    from sglang.srt.mem_cache.allocator.paged import PagedTokenToKVPoolAllocator

    return construct(
        PagedTokenToKVPoolAllocator,
        size=v["kv_pool_size"],
        page_size=v["page_size"],
        dtype=torch.int64,
        device=device,
        kvcache=None,
        need_sort=False,
    )


@harness(
    "TokenToKVPoolAllocator",
    "sglang.srt.mem_cache.allocator.token",
    note="TokenToKVPoolAllocator(size, dtype, device, kvcache, need_sort), the page-size-1 allocator",
)
def _token_allocator(v: dict, device: str):
    import torch
    from sglang.srt.mem_cache.allocator.token import TokenToKVPoolAllocator

    return construct(
        TokenToKVPoolAllocator, size=v["kv_pool_size"], dtype=torch.int64, device=device, kvcache=None, need_sort=False
    )


@harness(
    "MambaSlotAllocator",
    "sglang.srt.mem_cache.allocator.mamba",
    note="MambaSlotAllocator(size=mamba_size, device) as HybridReqToTokenPool builds it (memory_pool.py:1459)",
)
def _mamba_slots(v: dict, device: str):
    from sglang.srt.mem_cache.allocator.mamba import MambaSlotAllocator

    return construct(MambaSlotAllocator, size=v["mamba_pool_size"], device=device)


def _decode_buffers_args(v: dict, device: str, **extra):
    import torch

    args = dict(
        device=device,
        max_bs=v["max_bs"],
        # decode_cuda_graph_runner.py:424-428 (not ragged verify): max_bs * captured_req_width
        max_num_token=v["max_bs"] * v["captured_req_width"],
        hidden_size=v["hidden_size"],
        next_token_logits_buffer=None,
        dtype=torch.bfloat16,
        num_dp_ranks=v["num_dp_ranks"],
        pp_size=1,
        is_encoder_decoder=False,
        require_mlp_tp_gather=False,
        seq_len_fill_value=1,
        encoder_len_fill_value=0,
        num_tokens_per_req=v["captured_req_width"],
        cache_loc_dtype=torch.int64,
        enable_mamba_track=False,
    )
    args.update(extra)
    return args


@harness(
    "DecodeInputBuffers",
    "sglang.srt.model_executor.runner_utils.buffers",
    note="DecodeInputBuffers.create as decode_cuda_graph_runner.py:470 calls it (max_num_token = max_bs * "
    "captured_req_width, lines 424-428; seq_len_fill_value 1, the FlashInfer/Triton fill value)",
)
def _decode_buffers(v: dict, device: str):
    return _create_decode_buffers(v, device)


def _create_decode_buffers(v: dict, device: str, **switches):
    """``DecodeInputBuffers.create`` with :func:`_decode_buffers_args` (``switches`` turned on)."""
    from sglang.srt.model_executor.runner_utils.buffers import DecodeInputBuffers

    with published(v):
        return call(
            DecodeInputBuffers.create,
            DecodeInputBuffers,
            None,
            cls=DecodeInputBuffers,
            **_decode_buffers_args(v, device, **switches),
        )


@harness(
    "DecodeInputBuffers[switches]",
    "sglang.srt.model_executor.runner_utils.buffers",
    note="DecodeInputBuffers.create as decode_cuda_graph_runner.py:470 calls it with the switches that add "
    "buffers on: DP-attention MLP gather (num_dp_ranks rows), Mamba tracking, an encoder-decoder model",
)
def _decode_buffers_switches(v: dict, device: str):
    return _create_decode_buffers(
        v, device, require_mlp_tp_gather=True, enable_mamba_track=True, is_encoder_decoder=True
    )


@harness(
    "PrefillInputBuffers",
    "sglang.srt.model_executor.runner_utils.buffers",
    note="PrefillInputBuffers.create as prefill_cuda_graph_runner.py:436 calls it (max_bs its captured request "
    "slots, max_num_tokens its captured tokens), a multimodal model with Mamba tracking (every optional buffer)",
)
def _prefill_buffers(v: dict, device: str):
    import torch
    from sglang.srt.model_executor.runner_utils.buffers import PrefillInputBuffers

    with published(v):
        return call(
            PrefillInputBuffers.create,
            PrefillInputBuffers,
            None,
            cls=PrefillInputBuffers,
            device=device,
            max_bs=v["max_bs"],
            max_num_tokens=v["max_num_tokens"],
            cache_loc_dtype=torch.int64,
            is_multimodal=True,
            hidden_size=v["hidden_size"],
            dtype=torch.bfloat16,
            enable_mamba_track=True,
            pp_size=1,
        )


@harness("moe_align_block_size", "sglang.srt.layers.moe.moe_runner.triton_utils.moe_align_block_size")
def _moe_align(v: dict, device: str):
    """SGLang's moe_align_block_size on a routing of ``num_tokens x top_k`` expert ids (its buffers
    are sized before the kernel runs)."""
    import importlib

    import torch

    mod = importlib.import_module("sglang.srt.layers.moe.moe_runner.triton_utils.moe_align_block_size")
    topk_ids = _fake_or_real((v["num_tokens"], v["top_k"]), torch.int32)
    return call(
        mod.moe_align_block_size,
        None,
        None,
        topk_ids=topk_ids,
        block_size=v["block_size_m"],
        num_experts=v["num_experts"],
    )


def _backend(module: str, cls: str, multi_step: bool = False, spec: str | None = None, **runner_extra):
    def run(v: dict, device: str):
        import importlib

        klass = getattr(importlib.import_module(module), cls)
        if spec is not None:
            from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

            runner_extra["spec_algorithm"] = SpeculativeAlgorithm.from_string(spec)
        overrides = {
            "get_device_core_count": lambda *a, **k: _device_query("get_device_core_count"),
            "is_arch_support_pdl": lambda *a, **k: False,
        }
        # a multi-step draft backend: (model_runner, topk, speculative_num_steps), as the EAGLE
        # worker builds it from the speculative server arguments
        extra = (v["speculative_eagle_topk"], v["speculative_num_steps"]) if multi_step else ()
        with published(v, spec="EAGLE" if multi_step else spec):
            obj, log = construct(klass, model_runner(v, device, **runner_extra), *extra, _overrides=overrides)
            # the decode CUDA-graph runner's call: attn_backend.init_cuda_graph_state(max_bs, max_num_token)
            # (decode_cuda_graph_runner.py:429), max_num_token = max_bs * captured_req_width
            init = getattr(klass, "init_cuda_graph_state", None)
            if init is not None:
                _, log2 = call(
                    init,
                    klass,
                    obj,
                    overrides=overrides,
                    max_bs=v["max_bs"],
                    max_num_tokens=v["max_bs"] * v["captured_req_width"],
                )
        return [(obj, log), (obj, log2)] if init is not None else (obj, log)

    return run


def _device_query(name: str):
    from ...errors import CapproofError

    raise CapproofError(f"device query {name} (a CPU cannot answer it for the deployment)")


for _module, _cls in (
    ("sglang.srt.layers.attention.triton_backend", "TritonAttnBackend"),
    ("sglang.srt.layers.attention.flashinfer_backend", "FlashInferAttnBackend"),
    ("sglang.srt.layers.attention.flashattention_backend", "FlashAttentionBackend"),
    ("sglang.srt.layers.attention.flashmla_backend", "FlashMLABackend"),
    ("sglang.srt.layers.attention.dsa_backend", "DeepseekSparseAttnBackend"),
    # more backends built the same way (``model_runner`` first); one that reads what the stand-in
    # does not model keeps its buffers ``read``, each with the statement that stopped it. Not built:
    # DeepSeek-V4, the Inkling short-conv and the hybrid linear-attention (Mamba) backends (a stand-in
    # package's ``__version__`` read at import), MiniCPM sparse (a helper needs ``use_flashinfer``,
    # which the stand-in does not model). AITER imports as on a machine without ``aiter`` (its own
    # ``except ImportError``, :mod:`.stand_ins`)
    ("sglang.srt.layers.attention.aiter_backend", "AiterAttnBackend"),
    ("sglang.srt.layers.attention.trtllm_mha_backend", "TRTLLMHAAttnBackend"),
    ("sglang.srt.layers.attention.trtllm_mla_backend", "TRTLLMMLABackend"),
    ("sglang.srt.layers.attention.flashinfer_mla_backend", "FlashInferMLAAttnBackend"),
    ("sglang.srt.layers.attention.wave_backend", "WaveAttnBackend"),
    ("sglang.srt.layers.attention.xpu_backend", "XPUAttentionBackend"),
    ("sglang.srt.layers.attention.qwen_sparse_attn_backend", "QwenSparseAttnBackend"),
    ("sglang.srt.layers.attention.hpc_ops_backend", "HPCOpsAttnBackend"),
):
    harness(
        _cls,
        _module,
        note="constructed from a duck-typed model_runner, then init_cuda_graph_state(max_bs, "
        "max_bs * captured_req_width) as decode_cuda_graph_runner.py:429 calls it",
    )(_backend(_module, _cls))
#: the target model's backend under EAGLE (published speculative arguments, symbolic top-k): the
#: verify and top-k > 1 graph metadata allocated only under speculative decoding
for _module, _cls in (
    ("sglang.srt.layers.attention.triton_backend", "TritonAttnBackend"),
    ("sglang.srt.layers.attention.flashinfer_backend", "FlashInferAttnBackend"),
    ("sglang.srt.layers.attention.flashattention_backend", "FlashAttentionBackend"),
    ("sglang.srt.layers.attention.flashmla_backend", "FlashMLABackend"),
    ("sglang.srt.layers.attention.dsa_backend", "DeepseekSparseAttnBackend"),
):
    harness(
        f"{_cls}[EAGLE]",
        _module,
        note="the target backend under EAGLE (symbolic speculative_eagle_topk, speculative_num_steps, "
        "speculative_num_draft_tokens), then init_cuda_graph_state(max_bs, max_bs * captured_req_width)",
    )(_backend(_module, _cls, spec="EAGLE"))


def _lora(module: str, cls: str):
    def run(v: dict, device: str):
        import importlib

        klass = getattr(importlib.import_module(module), cls)
        names = klass.__init__.__code__.co_varnames
        kwargs = {"server_args": Config()} if "server_args" in names else {}
        with published(v):
            obj, log = construct(klass, v["max_loras_per_batch"], device, **kwargs)
            # lora_manager.py:157 as decode_cuda_graph_runner.py:453 calls it
            _, log2 = call(
                klass.init_decode_cuda_graph_batch_info,
                klass,
                obj,
                max_bs_in_cuda_graph=v["max_bs"],
                num_tokens_per_req=v["captured_req_width"],
            )
        return [(obj, log), (obj, log2)]

    return run


for _module, _cls in (
    ("sglang.srt.lora.backend.triton_backend", "TritonLoRABackend"),
    ("sglang.srt.lora.backend.chunked_backend", "ChunkedSgmvLoRABackend"),
    ("sglang.srt.lora.backend.torch_backend", "TorchNativeLoRABackend"),
):
    harness(
        _cls,
        _module,
        note="LoRA backend (max_loras_per_batch, device), then init_decode_cuda_graph_batch_info(max_bs, "
        "captured_req_width) as lora_manager.py:157 calls it for the decode graph runner",
    )(_lora(_module, _cls))

for _module, _cls in (
    ("sglang.srt.layers.attention.triton_backend", "TritonMultiStepDraftBackend"),
    ("sglang.srt.layers.attention.flashinfer_backend", "FlashInferMultiStepDraftBackend"),
):
    harness(
        _cls,
        _module,
        note="EAGLE draft backend (model_runner, speculative_eagle_topk, speculative_num_steps), "
        "then init_cuda_graph_state(max_bs, max_bs * captured_req_width)",
    )(_backend(_module, _cls, multi_step=True))


# ------------------------------------------------------------------------------------------------
# running


def activate(root: str) -> None:
    """Put SGLang's extracted sources on ``sys.path`` with the import stand-ins (:mod:`.stand_ins`)."""
    from .stand_ins import activate as _activate

    _activate(root)


def recording(root: str, mode: str = "fake"):
    """:func:`capproof.engines.tracing.fake.recording` with SGLang's facts."""
    return _run.record(ENGINE, root, mode)


def prepare(name: str) -> None:
    _run.prepare(ENGINE, name)


def trace_all(version: str, root: str, allocations, names: list[str] | None = None):
    """Run every harness on symbolic values: ``(entries, problems, reasons)``
    (:func:`capproof.engines.tracing.run.trace_all`)."""
    activate(root)
    return _run.trace_all(ENGINE, root, allocations, names)


#: this module is SGLang's :class:`capproof.engines.tracing.Engine`

_ = os


class _DraftBackend:
    """The draft attention backend an EAGLE graph runner is given: its own buffers are traced by
    the backends' harnesses; here it only answers the runner's questions (fill value 1, the
    FlashInfer/Triton value)."""

    def init_cuda_graph_state(self, max_bs, max_num_tokens):
        return None

    def get_cuda_graph_seq_len_fill_value(self):
        return 1

    @property
    def attn_backends(self):
        return [Config(get_cuda_graph_seq_len_fill_value=lambda: 1)]


def _eagle_runner(module: str, cls: str):
    def run(v: dict, device: str):
        import importlib

        import torch

        klass = getattr(importlib.import_module(module), cls)
        from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

        runner = model_runner(v, device, spec_algorithm=SpeculativeAlgorithm.EAGLE)
        # standard EAGLE: the draft reads the target's hidden states, spec_hidden_size = hidden_size
        # (eagle_utils.get_draft_input_from_target_hidden_dim)
        runner.model_config.spec_hidden_size = v["hidden_size"]
        # the logits rows shared by the graph runners (graph_shared_output.py; not this runner's buffer)
        runner.graph_shared_output = Config(
            get_logits_buffer=lambda vocab_size, rows: _fake_or_real((rows, vocab_size), torch.float32)
        )
        worker = Config(
            speculative_algorithm=SpeculativeAlgorithm.EAGLE,
            model_runner=runner,
            draft_runner=runner,
            dsa_seed_topk_width=v["speculative_eagle_topk"],
            seed_dsa_topk_from_draft_extend=False,
            topk=v["speculative_eagle_topk"],
            speculative_num_steps=v["speculative_num_steps"],
        )
        overrides = {
            # the runner's capture list, reduced to its maximum (max_bs = max(capture_bs))
            "get_batch_sizes_to_capture": lambda *a, **k: ([v["max_bs"]], []),
            "get_draft_recurrent_hidden_state_spec": lambda *a, **k: (v["hidden_size"], torch.bfloat16),
            # a TP-only deployment (no DP attention): SGLang's answers for it
            "require_gathered_buffer": lambda *a, **k: False,
            "require_mlp_tp_gather": lambda *a, **k: False,
            "require_mlp_sync": lambda *a, **k: False,
            "require_attn_tp_gather": lambda *a, **k: False,
            "deployment_attn_dp_size": lambda *a, **k: 1,
        }
        with published(v, spec="EAGLE"):
            names = klass.__init__.__code__.co_varnames
            kwargs = {k: _DraftBackend() for k in ("draft_attn_backend", "draft_extend_attn_backend") if k in names}
            return construct(klass, worker, _overrides=overrides, **kwargs)

    return run


for _module, _cls in (
    ("sglang.srt.speculative.eagle_draft_cuda_graph_runner", "EAGLEDraftCudaGraphRunner"),
    ("sglang.srt.speculative.eagle_draft_extend_cuda_graph_runner", "EAGLEDraftExtendCudaGraphRunner"),
):
    harness(
        _cls,
        _module,
        note="EAGLE (3 steps-like symbolic spec args) with a duck-typed worker; the capture list "
        "stands for its maximum max_bs (get_batch_sizes_to_capture); the draft attention backend is a stand-in "
        "(fill value 1)",
    )(_eagle_runner(_module, _cls))


#: this module is SGLang's :class:`capproof.engines.tracing.Engine`
ENGINE = sys.modules[__name__]
