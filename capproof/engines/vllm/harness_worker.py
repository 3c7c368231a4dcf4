"""Harnesses for vLLM's worker, V2 runner, speculative decoding and MoE alignment buffers.

Registered into :data:`capproof.engines.vllm.trace.HARNESSES` when :mod:`.harnesses` is imported.
Each harness builds one class of vLLM 0.33.0 (``vllm/v1/worker/**``,
``vllm/v1/spec_decode/**``, ``moe_align_block_size.py``) the way vLLM's own caller does (the
caller's file:line is cited at each harness), with duck-typed config objects whose numeric fields
are capproof SymInts (ints in the real tier); the constructor body runs statement by statement
(:func:`.trace.construct`).

Stand-ins used here, each for a call a CPU cannot make for the deployment, and none of which
sizes a buffer:

- ``torch.cuda.Stream`` / ``torch.cuda.Event`` / ``torch.Event`` / ``torch.cuda.current_stream``:
  a :class:`StreamStandIn` (streams and events order copies; they hold no data);
- ``get_pp_group()`` / ``get_dcp_group()``: a :class:`GroupStandIn` of the duck-typed config's
  own parallel sizes (``pipeline_parallel_size = 1``: rank 0 is the last rank; dcp rank 0);
- ``_target_feeds_hc_residual(vllm_config)`` (V2 speculators, ``spec_decode/speculator.py:48``):
  False. It loads the target model class to ask whether it widens the drafter's hidden states
  by ``hc_mult`` (DeepSeek V4 only); the traced config is DeepSeek-V3.2-like, for which it is False;
- ``vllm.config.replace`` on a duck-typed config: a copy with the given fields replaced (what
  ``replace`` does for vLLM's config dataclasses);
- ``len`` in ``vllm/v1/worker/gpu/buffer_utils.py`` of a traced buffer: its symbolic first
  dimension (:func:`_buffer_utils_patches`); ``current_platform.device_type`` ``""`` -> ``"cpu"``
  (:func:`_platform_device_patches`, the real tier's explicit-copy buffers);
- ``triton.cdiv``/``next_power_of_2`` (no Triton on a CPU): vLLM's own integer helpers of the same
  definition; ``numba`` (absent from the real venv): a module whose compiled functions refuse to run;
- a loader step a continued method calls (``super().load_model``/``set_attn``, the model loader):
  not run; what it leaves that the traced statements read is set explicitly and named (:func:`_then`).

Harness names with a ``[variant]`` suffix build the same class with a configuration that takes
another branch (e.g. ``GPUModelRunner[ngram_gpu]``); the first harness (by name) that allocates an
entry gives its shape, and the real tier (``tests/test_inventory_trace.py``) compares every
harness's int run with the traced shapes.

Extra names in shapes (:data:`EXTRA_NAMES`, sizes >= 1): ``mrope_num_dims`` (the model's M-RoPE
sections), ``pcp`` (prefill context parallel size), ``num_kv_cache_groups``, ``num_ubatches``,
``draft_vocab_size`` (a reduced draft vocabulary), ``candidate_top_k`` (DFlash2/LiLiCorr candidates).
"""

from __future__ import annotations

import copy as _copy
from types import SimpleNamespace

from ...symbolic import SymInt
from . import trace as tr
from .trace import Config, construct, harness, run_statements, vllm_config

__all__ = ["StreamStandIn", "GroupStandIn", "extra_name", "worker_config", "EXTRA_NAMES"]

#: names this module adds to the shape vocabulary, with the ints the real tier uses for them
#: (``config_values`` gives the shared ones): all are sizes >= 1
EXTRA_NAMES = {
    "mrope_num_dims": 3,
    "pcp": 2,
    "num_kv_cache_groups": 2,
    "num_ubatches": 2,
    "draft_vocab_size": 32000,
    "candidate_top_k": 4,
}
tr.POSITIVE = tuple(tr.POSITIVE) + tuple(n for n in EXTRA_NAMES if n not in tr.POSITIVE)
tr.EXTRA_VALUES.update(EXTRA_NAMES)


def extra_name(v: dict, name: str):
    """The value of one of :data:`EXTRA_NAMES` in the config values ``v`` (a SymInt named after it
    when symbolic; :func:`.trace.config_values` includes them)."""
    return v[name]


# ------------------------------------------------------------------------------------------------
# stand-ins


class StreamStandIn:
    """``torch.cuda.Stream()``/``Event()``/``current_stream()`` on a CPU: records nothing, waits
    for nothing (streams and events only order work; no buffer is sized by them)."""

    def __init__(self, *args, **kwargs):
        pass

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *a, **k: None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class GroupStandIn:
    """A process group of one rank (``world_size = 1``, rank 0, the first and last rank): the
    duck-typed configs have ``pipeline_parallel_size = 1``; a dcp group answers rank 0."""

    world_size = 1
    rank_in_group = 0
    rank = 0
    is_first_rank = True
    is_last_rank = True
    last_rank = 0
    first_rank = 0

    def make_sibling_device_group(self, *args, **kwargs):
        return GroupStandIn()

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise tr.CapproofError(f"process group query {name!r} (no distributed group while tracing)")


def _group():
    return GroupStandIn()


def _duck_replace(obj, /, **kwargs):
    """``vllm.config.replace`` for a duck-typed config (vLLM's dataclass configs go to the real one)."""
    import dataclasses

    if dataclasses.is_dataclass(obj):
        from vllm.config import replace

        return replace(obj, **kwargs)
    out = _copy.copy(obj)
    for k, val in kwargs.items():
        setattr(out, k, val)
    return out


def _stream_patches():
    try:
        import torch
    except ImportError:  # pragma: no cover - numpy-only fast tier
        return []
    out = [
        (torch.cuda, "Stream", StreamStandIn),
        (torch.cuda, "Event", StreamStandIn),
        (torch.cuda, "current_stream", lambda *a, **k: StreamStandIn()),
        (torch.cuda, "stream", lambda *a, **k: StreamStandIn()),
    ]
    if hasattr(torch, "Event"):
        out.append((torch, "Event", StreamStandIn))
    return out


def _symbolic_len(x):
    """``len`` for the V2 runner's buffer helpers: a traced buffer's first dimension (a SymInt
    when symbolic), else the builtin's answer."""
    if isinstance(x, tr.FakeTensor):
        return x.shape[0]
    return len(x)


def _buffer_utils_patches():
    """``UvaBufferPool.copy_to_uva(x)`` measures ``len(x)`` to decide whether its buffer must grow
    (gpu/buffer_utils.py:92); for the traced buffer it copies, ``len`` is its symbolic first
    dimension, and the comparison ``n > capacity`` with the pool's own buffer of the same size is
    decided (false) by the solver instead of failing. A module-level ``len`` of buffer_utils only."""
    import sys

    mod = sys.modules.get("vllm.v1.worker.gpu.buffer_utils")
    return [] if mod is None else [(mod, "len", _symbolic_len)]


def _platform_device_patches():
    """vLLM's platform on a CPU-only venv is unspecified (``current_platform.device_type == ""``),
    and the V2 runner's explicit-copy buffers allocate on that device (``NonUvaBuffer``,
    gpu/buffer_utils.py:56): while recording, the device type is ``"cpu"`` (the device does not
    change a buffer's shape or dtype; the fake run never allocates)."""
    import sys

    if "vllm.platforms" not in sys.modules:
        return []
    from vllm.platforms import current_platform

    return [(current_platform, "device_type", "cpu")] if getattr(current_platform, "device_type", None) == "" else []


tr.PATCH_PROVIDERS.append(_stream_patches)
tr.PATCH_PROVIDERS.append(_platform_device_patches)
tr.PATCH_PROVIDERS.append(_buffer_utils_patches)

#: module-level names replaced in the traced constructor bodies (see the module docstring)
OVERRIDES = {
    "get_pp_group": _group,
    "get_dcp_group": _group,
    "get_tp_group": _group,
    "_target_feeds_hc_residual": lambda vllm_config: False,
    "replace": _duck_replace,
}


def _construct(cls, *args, **kwargs):
    return construct(cls, *args, _overrides=dict(OVERRIDES), **kwargs)


# ------------------------------------------------------------------------------------------------
# configs


def worker_config(v: dict, **extra):
    """:func:`.trace.vllm_config` plus the fields the worker/spec-decode constructors read."""
    import torch

    cfg = vllm_config(v, **extra)
    cfg = _copy.copy(cfg)
    draft = cfg.speculative_config.draft_model_config
    draft.use_mla = True
    draft.enforce_eager = False
    cfg.model_config.enforce_eager = False
    cfg.model_config.mrope_num_dims = extra_name(v, "mrope_num_dims")
    cfg.model_config.multimodal_config = None
    cfg.model_config.trust_remote_code = False
    cfg.compilation_config.cudagraph_mm_encoder = False
    cfg.cache_config.mamba_cache_mode = "align"
    cfg.cache_config.use_kda_recoverssm = False
    cfg.cache_config.mamba_block_size = v["block_size"]
    cfg.parallel_config.num_ubatches = 2
    cfg.parallel_config.cp_kv_cache_interleave_size = 1
    cfg.reasoning_config = None
    cfg.watermark_config = None
    cfg.device_config = Config(device=torch.device("cpu"))
    return cfg


def _req_states(v: dict, device: str):
    return tr.request_states(v, device)


# ------------------------------------------------------------------------------------------------
# V2 runner: sampling and logits processors (vllm/v1/worker/gpu/sample/, structured_outputs.py)


@harness("ThinkingBudgetState", "vllm.v1.worker.gpu.sample.thinking_budget")
def _thinking_budget(v: dict, device: str):
    """``ThinkingBudgetState(req_states, vllm_config.reasoning_config)`` (gpu/sample/sampler.py:79)
    with a reasoning config that has start, end and natural-end token ids (else it allocates
    nothing, thinking_budget.py:50)."""
    from vllm.v1.worker.gpu.sample.thinking_budget import ThinkingBudgetState

    reasoning = Config(reasoning_start_token_ids=[1], reasoning_end_token_ids=[2], natural_reasoning_end_token_ids=[3])
    return _construct(ThinkingBudgetState, _req_states(v, device), reasoning)


@harness("LogprobTokenIdsState", "vllm.v1.worker.gpu.sample.logprob")
def _logprob_token_ids(v: dict, device: str):
    """``LogprobTokenIdsState(max_num_reqs, device)`` (gpu/sample/sampler.py:78)."""
    from vllm.v1.worker.gpu.sample.logprob import LogprobTokenIdsState

    return _construct(LogprobTokenIdsState, v["max_num_reqs"], device)


@harness("PromptLogprobsWorker", "vllm.v1.worker.gpu.sample.prompt_logprob")
def _prompt_logprobs(v: dict, device: str):
    """``PromptLogprobsWorker(max_num_reqs, device, logprobs_mode)`` (gpu/model_runner.py:523)."""
    from vllm.v1.worker.gpu.sample.prompt_logprob import PromptLogprobsWorker

    return _construct(PromptLogprobsWorker, v["max_num_reqs"], device, logprobs_mode="raw_logprobs")


@harness("TraceReplayState", "vllm.v1.worker.gpu.sample.trace_replay")
def _trace_replay(v: dict, device: str):
    """``TraceReplayState(req_states)`` (gpu/sample/sampler.py:83)."""
    from vllm.v1.worker.gpu.sample.trace_replay import TraceReplayState

    return _construct(TraceReplayState, _req_states(v, device))


@harness("StructuredOutputsWorker", "vllm.v1.worker.gpu.structured_outputs")
def _structured_outputs(v: dict, device: str):
    """``StructuredOutputsWorker(max_num_logits=max_num_reqs * decode_query_len, vocab_size, ...)``
    as gpu/model_runner.py:528 builds it; ``decode_query_len = num_speculative_steps + 1``
    (gpu/model_runner.py:439)."""
    from vllm.v1.worker.gpu.structured_outputs import StructuredOutputsWorker

    decode_query_len = v["num_speculative_tokens"] + 1
    return _construct(
        StructuredOutputsWorker,
        max_num_logits=v["max_num_reqs"] * decode_query_len,
        vocab_size=v["vocab_size"],
        device=device,
        mask_stride=decode_query_len,
    )


@harness("Sampler", "vllm.v1.worker.gpu.sample.sampler")
def _sampler(v: dict, device: str):
    """``Sampler(vllm_config, max_num_reqs, vocab_size, device, req_states, ...)`` (the
    ``sampler_kwargs`` of gpu/model_runner.py:480-495)."""
    from vllm.v1.worker.gpu.sample.sampler import Sampler

    return _construct(
        Sampler,
        worker_config(v),
        v["max_num_reqs"],
        v["vocab_size"],
        device,
        _req_states(v, device),
        num_speculative_tokens=v["num_speculative_tokens"],
    )


# ------------------------------------------------------------------------------------------------
# V2 runner: model states, LoRA, PP, M-RoPE, ubatching, fast prefill


@harness("LoraState", "vllm.v1.worker.gpu.lora_utils")
def _lora_state(v: dict, device: str):
    """``LoraState(max_num_reqs=max_num_reqs)`` (gpu/model_runner.py:350)."""
    from vllm.v1.worker.gpu.lora_utils import LoraState

    return _construct(LoraState, max_num_reqs=v["max_num_reqs"])


@harness("PPHandler", "vllm.v1.worker.gpu.pp_utils")
def _pp_handler(v: dict, device: str):
    """``PPHandler(max_num_reqs, num_speculative_steps, device)`` (gpu/model_runner.py:334)."""
    from vllm.v1.worker.gpu.pp_utils import PPHandler

    return _construct(
        PPHandler, max_num_reqs=v["max_num_reqs"], num_speculative_steps=v["num_speculative_tokens"], device=device
    )


@harness("RopeState", "vllm.v1.worker.gpu.mm.rope")
def _rope_state(v: dict, device: str):
    """``RopeState(num_dims=model_config.mrope_num_dims, max_num_reqs, max_num_tokens=
    max_num_batched_tokens, max_model_len, device)`` (gpu/mm/rope.py:135, called by
    DefaultModelState with the scheduler's sizes, gpu/model_states/default.py:51)."""
    from vllm.v1.worker.gpu.mm.rope import RopeState

    return _construct(
        RopeState,
        num_dims=extra_name(v, "mrope_num_dims"),
        max_num_reqs=v["max_num_reqs"],
        max_num_tokens=v["max_num_batched_tokens"],
        max_model_len=v["max_model_len"],
        device=device,
    )


@harness("FastPrefillHelper", "vllm.v1.worker.gpu.attn_utils")
def _fast_prefill(v: dict, device: str):
    """``FastPrefillHelper(cudagraph_manager, max_num_tokens)`` (gpu/model_runner.py:776); the
    manager is read for its ``device`` only."""
    import torch
    from vllm.v1.worker.gpu.attn_utils import FastPrefillHelper

    return _construct(FastPrefillHelper, SimpleNamespace(device=torch.device(device)), v["max_num_batched_tokens"])


@harness("PromptEmbedsState", "vllm.v1.worker.gpu.model_states.prompt_embeds")
def _prompt_embeds(v: dict, device: str):
    """``PromptEmbedsState(max_num_reqs, inputs_embeds_size, dtype, device)``
    (gpu/model_states/default.py:41)."""
    import torch
    from vllm.v1.worker.gpu.model_states.prompt_embeds import PromptEmbedsState

    return _construct(PromptEmbedsState, v["max_num_reqs"], v["hidden_size"], torch.bfloat16, torch.device(device))


def _model_state(module: str, cls: str, *, prompt_embeds: bool = False, encoder_cache=None, mrope: bool = False):
    def run(v: dict, device: str):
        import importlib

        import torch

        klass = getattr(importlib.import_module(module), cls)
        cfg = worker_config(v)
        cfg.model_config.enable_prompt_embeds = prompt_embeds
        cfg.model_config.uses_mrope = mrope
        return _construct(klass, cfg, _MODEL, encoder_cache, torch.device(device))

    return run


class _Model:
    """The model argument of a model state: a plain object (the constructors only pass it on or
    ask it optional questions)."""


_MODEL = _Model()

harness("DefaultModelState", "vllm.v1.worker.gpu.model_states.default")(
    _model_state("vllm.v1.worker.gpu.model_states.default", "DefaultModelState", prompt_embeds=True)
)
harness("MambaHybridModelState", "vllm.v1.worker.gpu.model_states.mamba_hybrid")(
    _model_state("vllm.v1.worker.gpu.model_states.mamba_hybrid", "MambaHybridModelState")
)
harness("EncoderDecoderModelState", "vllm.v1.worker.gpu.model_states.encoder_decoder")(
    _model_state(
        "vllm.v1.worker.gpu.model_states.encoder_decoder", "EncoderDecoderModelState", encoder_cache=SimpleNamespace()
    )
)


@harness("UBatchRunner", "vllm.v1.worker.gpu.ubatch_utils")
def _ubatch_runner(v: dict, device: str):
    """``UBatchRunner(vllm_config, device, model_state, attn_groups, kv_cache_config, max_num_reqs)``
    (gpu/ubatch_utils.py:563) with ``num_ubatches = 2`` (the number of microbatches is a count
    the constructor loops over; each microbatch gets the same buffers)."""
    import torch
    from vllm.v1.worker.gpu.ubatch_utils import UBatchRunner

    return _construct(UBatchRunner, worker_config(v), torch.device(device), None, [], None, v["max_num_reqs"])


# ------------------------------------------------------------------------------------------------
# V2 speculative decoding (vllm/v1/worker/gpu/spec_decode/)


@harness("OnlineAcceptanceEstimator", "vllm.v1.worker.gpu.spec_decode.acceptance_estimator")
def _acceptance_estimator(v: dict, device: str):
    """``OnlineAcceptanceEstimator(max_num_reqs, num_speculative_steps, device)``
    (gpu/spec_decode/speculator.py:261)."""
    from vllm.v1.worker.gpu.spec_decode.acceptance_estimator import OnlineAcceptanceEstimator

    return _construct(OnlineAcceptanceEstimator, v["max_num_reqs"], v["num_speculative_tokens"], device)


@harness(
    "AdaptiveVerificationManager",
    "vllm.v1.worker.gpu.spec_decode.adaptive_verification",
    "vllm.v1.worker.gpu.input_batch",
)
def _adaptive_verification(v: dict, device: str):
    """``AdaptiveVerificationManager(req_states, query_start_loc, num_bonus_tokens, ...)``
    (gpu/spec_decode/adaptive_verification.py:546) with the runner's ``query_start_loc``, the
    ``InputBuffers`` one of ``max_num_reqs + 1`` entries (built here by vLLM's own InputBuffers),
    and the host copy of admitted drafts on (batch-sharded sampling)."""
    from vllm.v1.worker.gpu.input_batch import InputBuffers
    from vllm.v1.worker.gpu.spec_decode.adaptive_verification import AdaptiveVerificationManager

    buffers = InputBuffers(max_num_reqs=v["max_num_reqs"], max_num_tokens=v["max_num_batched_tokens"], device=device)
    return _construct(
        AdaptiveVerificationManager,
        _req_states(v, device),
        buffers.query_start_loc,
        1,
        max_total_logits=v["max_num_batched_tokens"],
        copy_admitted_drafts_to_host=True,
    )


@harness("CandidateSampler", "vllm.v1.worker.gpu.spec_decode.dflash2.speculator")
def _candidate_sampler(v: dict, device: str):
    """``CandidateSampler(max_num_reqs, num_speculative_steps, top_k, device)``
    (gpu/spec_decode/dflash2/speculator.py:196); ``top_k`` is the draft config's candidate count
    (the name ``candidate_top_k``)."""
    from vllm.v1.worker.gpu.spec_decode.dflash2.speculator import CandidateSampler

    return _construct(
        CandidateSampler, v["max_num_reqs"], v["num_speculative_tokens"], extra_name(v, "candidate_top_k"), device
    )


def _speculator(module: str, cls: str, method: str = "eagle", **draft):
    """A V2 speculator built as the runner does: ``Speculator(vllm_config, device)``
    (gpu/spec_decode/__init__.py, ``init_speculator``)."""

    def run(v: dict, device: str):
        import importlib

        import torch

        klass = getattr(importlib.import_module(module), cls)
        cfg = worker_config(v)
        cfg.speculative_config.method = method
        for k, val in draft.items():
            setattr(cfg.speculative_config.draft_model_config.hf_config, k, val)
        return _construct(klass, cfg, torch.device(device))

    return run


for _module, _cls, _method in (
    ("vllm.v1.worker.gpu.spec_decode.target_dependent_ar.speculator", "TargetDependentARSpeculator", "eagle"),
    ("vllm.v1.worker.gpu.spec_decode.multi_module_mtp.speculator", "MultiModuleMTPSpeculator", "mtp"),
    ("vllm.v1.worker.gpu.spec_decode.standalone_ar.speculator", "StandaloneARSpeculator", "draft_model"),
    ("vllm.v1.worker.gpu.spec_decode.dflash.speculator", "DFlashSpeculator", "dflash"),
    ("vllm.v1.worker.gpu.spec_decode.dspark.speculator", "DSparkSpeculator", "dspark"),
    ("vllm.v1.worker.gpu.spec_decode.dflash2.speculator", "DFlash2Speculator", "dflash2"),
    ("vllm.v1.worker.gpu.spec_decode.lilicorr.speculator", "LiLiCorrSpeculator", "lilicorr"),
    ("vllm.v1.worker.gpu.spec_decode.xpress.speculator", "XPressSpeculator", "xpress"),
    ("vllm.v1.worker.gpu.spec_decode.ngram.speculator", "NgramGPUSpeculator", "ngram_gpu"),
):
    harness(_cls, _module)(_speculator(_module, _cls, _method))


# ------------------------------------------------------------------------------------------------
# the V1 runner (vllm/v1/worker/gpu_model_runner.py)


def _runner_config(v: dict, ngram_gpu: bool):
    cfg = worker_config(v)
    cfg.cache_config.kv_sharing_fast_prefill = True
    cfg.model_config.uses_mrope = True
    cfg.scheduler_config.async_scheduling = True
    if ngram_gpu:
        spec = cfg.speculative_config
        spec.method = "ngram_gpu"
        spec.use_ngram_gpu = lambda: True
        spec.use_eagle = lambda: False
        spec.uses_draft_model = lambda: False
        spec.prompt_lookup_min = 2
        spec.prompt_lookup_max = 5
    return cfg


@harness("GPUModelRunner", "vllm.v1.worker.gpu_model_runner")
def _gpu_model_runner(v: dict, device: str):
    """``GPUModelRunner(vllm_config, device)`` (vllm/v1/worker/gpu_worker.py) for an EAGLE
    deployment with M-RoPE, KV-sharing fast prefill and async scheduling on (the branches that
    allocate ``mrope_positions``, ``kv_sharing_fast_prefill_logits_indices`` and
    ``valid_sampled_token_count_cpu``); the last pipeline stage (``pipeline_parallel_size = 1``)."""
    import torch
    from vllm.v1.worker.gpu_model_runner import GPUModelRunner

    return _construct(GPUModelRunner, _runner_config(v, ngram_gpu=False), torch.device(device))


@harness("GPUModelRunner[ngram_gpu]", "vllm.v1.worker.gpu_model_runner")
def _gpu_model_runner_ngram(v: dict, device: str):
    """The same runner with ``speculative_config.method = "ngram_gpu"``: the branch of
    gpu_model_runner.py:621 (GPU n-gram token buffers) and :897 (valid-draft counts)."""
    import torch
    from vllm.v1.worker.gpu_model_runner import GPUModelRunner

    class DrafterBuiltElsewhere:
        """``NgramProposerGPU(vllm_config, device, runner)``: the drafter's own buffers are traced by
        its harness; here only the runner's statement around it runs (the drafter sizes none of
        the runner's buffers)."""

        def __init__(self, *args, **kwargs):
            pass

    return construct(
        GPUModelRunner,
        _runner_config(v, ngram_gpu=True),
        torch.device(device),
        _overrides=dict(OVERRIDES, NgramProposerGPU=DrafterBuiltElsewhere),
    )


# ------------------------------------------------------------------------------------------------
# branches the default configs do not take, and the buffers allocated after construction


def _then(result, cls, method: str, arguments: dict, overrides: dict | None = None, **state):
    """Continue a constructed object ``(obj, log)``: set ``state`` (what the skipped engine step
    leaves, named at each call) and run ``cls.method``'s body statement by statement with
    ``arguments`` (:func:`.trace.run_statements`); returns ``[(obj, log)]``."""
    obj, log = result
    if isinstance(obj, tr.Poisoned) or obj is None:
        return [result]
    for k, val in state.items():
        object.__setattr__(obj, k, val)
    owner = next(k for k in cls.__mro__ if method in k.__dict__)
    run_statements(owner.__dict__[method], owner, obj, arguments, log, overrides=dict(OVERRIDES, **(overrides or {})))
    return [(obj, log)]


def _triton_math():
    """``triton.cdiv``/``triton.next_power_of_2`` (no Triton on a CPU): vLLM's own
    ``vllm.utils.math_utils`` functions of the same definition (``-(-a // b)``; the least power
    of 2 >= n)."""
    from vllm.utils import math_utils

    return SimpleNamespace(cdiv=math_utils.cdiv, next_power_of_2=math_utils.next_power_of_2)


@harness("NgramGPUSpeculator", "vllm.v1.worker.gpu.spec_decode.ngram.speculator")
def _ngram_gpu_speculator(v: dict, device: str):
    """``NgramGPUSpeculator(vllm_config, device, req_states)`` (gpu/spec_decode/__init__.py) with
    ``prompt_lookup_min/max = 2/5``; ``HAS_TRITON`` is answered True (the check at
    ngram/speculator.py:163 only refuses a CPU build) and Triton's two integer helpers are
    :func:`_triton_math`."""
    import torch
    from vllm.v1.worker.gpu.spec_decode.ngram.speculator import NgramGPUSpeculator

    cfg = worker_config(v)
    cfg.speculative_config.method = "ngram_gpu"
    cfg.speculative_config.prompt_lookup_min = 2
    cfg.speculative_config.prompt_lookup_max = 5
    return construct(
        NgramGPUSpeculator,
        cfg,
        torch.device(device),
        _req_states(v, device),
        _overrides=dict(OVERRIDES, HAS_TRITON=True, triton=_triton_math()),
    )


@harness("TargetDependentARSpeculator[probabilistic]", "vllm.v1.worker.gpu.spec_decode.target_dependent_ar.speculator")
def _draft_logits(v: dict, device: str):
    """A V2 speculator with ``draft_sample_method = "probabilistic"``: the cached draft
    distribution ``draft_logits`` of gpu/spec_decode/speculator.py:175-190 (head dtype float32)."""
    import torch
    from vllm.v1.worker.gpu.spec_decode.target_dependent_ar.speculator import TargetDependentARSpeculator

    cfg = worker_config(v)
    cfg.speculative_config.draft_sample_method = "probabilistic"
    cfg.model_config.head_dtype = torch.float32
    return _construct(TargetDependentARSpeculator, cfg, torch.device(device))


class _LoaderSkipped:
    """``super()`` inside a continued ``load_model``: the parent's ``load_model`` (weight loading,
    gpu/spec_decode/speculator.py:220-263) is not run; its effect on the names the traced
    statements read is set explicitly by the harness."""

    def __init__(self, *args):
        pass

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *a, **k: None


def _mm_load_model(module: str, cls: str, method: str):
    """Construct the speculator, then run its ``load_model`` body for a multimodal target whose
    draft takes multimodal embeddings: ``supports_mm_inputs = True``, what
    ``DraftModelSpeculator.load_model`` sets then (gpu/spec_decode/speculator.py:242-244); its
    ``super().load_model(...)`` loads weights and is skipped (it assigns none of the names the
    allocations read)."""

    def run(v: dict, device: str):
        import importlib

        klass = getattr(importlib.import_module(module), cls)
        built = _speculator(module, cls, method)(v, device)
        return _then(
            built,
            klass,
            "load_model",
            {"target_model": None},
            overrides={"super": _LoaderSkipped},
            supports_mm_inputs=True,
        )

    return run


for _module, _cls, _method in (
    ("vllm.v1.worker.gpu.spec_decode.multi_module_mtp.speculator", "MultiModuleMTPSpeculator", "mtp"),
    ("vllm.v1.worker.gpu.spec_decode.target_dependent_ar.speculator", "TargetDependentARSpeculator", "eagle"),
):
    harness(f"{_cls}[load_model]", _module)(_mm_load_model(_module, _cls, _method))


@harness("DSparkSpeculator[load_draft_model]", "vllm.v1.worker.gpu.spec_decode.dspark.speculator")
def _dspark_load(v: dict, device: str):
    """DSpark with probabilistic drafting and a reduced draft vocabulary: ``load_draft_model``
    (dspark/speculator.py:84-105) with the loaded model standing in as its two fields read there,
    ``draft_id_to_target_id`` (a ``[draft_vocab_size]`` map) and ``model.confidence_head``."""
    import torch
    from vllm.v1.worker.gpu.spec_decode.dspark.speculator import DSparkSpeculator

    cfg = worker_config(v)
    cfg.speculative_config.method = "dspark"
    cfg.speculative_config.draft_sample_method = "probabilistic"
    cfg.model_config.head_dtype = torch.float32
    built = _construct(DSparkSpeculator, cfg, torch.device(device))
    n = extra_name(v, "draft_vocab_size")
    d2t = tr.FakeTensor((n,), torch.int64, device) if isinstance(n, SymInt) else torch.zeros(n, dtype=torch.int64)
    model = SimpleNamespace(draft_id_to_target_id=d2t, model=SimpleNamespace(confidence_head=None))
    return _then(
        built,
        DSparkSpeculator,
        "load_draft_model",
        {"target_model": None, "target_attn_layer_names": set()},
        overrides={"load_dspark_model": lambda target_model, vllm_config: model},
    )


@harness("EagleProposer[mrope]", "vllm.v1.spec_decode.eagle")
def _eagle_mrope(v: dict, device: str):
    """The V1 EAGLE proposer for an M-RoPE target (``model_config.uses_mrope``): the
    ``mrope_positions`` branch of llm_base_proposer.py:190-201."""
    import torch
    from vllm.v1.spec_decode.eagle import EagleProposer

    cfg = worker_config(v)
    cfg.model_config.uses_mrope = True
    cfg.speculative_config.draft_model_config.uses_mrope = True
    cfg.speculative_config.draft_model_config.mrope_num_dims = extra_name(v, "mrope_num_dims")
    return _construct(EagleProposer, cfg, torch.device(device))


@harness("EncoderOnlyModelState", "vllm.v1.worker.gpu.model_states.encoder_only")
def _encoder_only(v: dict, device: str):
    """``EncoderOnlyModelState(vllm_config, model, encoder_cache, device)`` (the V2 runner's model
    state for encoder-only models); the config's forward context has no attention layer, so no
    attention group is built and the constructor reaches its dummy tables."""
    return _model_state("vllm.v1.worker.gpu.model_states.encoder_only", "EncoderOnlyModelState")(v, device)


@harness("batched_moe_align_block_size", "vllm.model_executor.layers.fused_moe.moe_align_block_size")
def _batched_moe_align(v: dict, device: str):
    """``batched_moe_align_block_size(max_tokens_per_batch, block_size, expert_num_tokens)``
    (moe_align_block_size.py:199) for ``num_experts`` local experts (the batch dimension ``B``)
    and ``max_tokens_per_batch = num_tokens``: its buffers are sized before the compiled op runs."""
    import torch
    from vllm.model_executor.layers.fused_moe import moe_align_block_size as mod

    ent = (
        tr.FakeTensor((v["num_experts"],), torch.int32, device)
        if isinstance(v["num_experts"], SymInt)
        else torch.zeros(v["num_experts"], dtype=torch.int32)
    )
    args = dict(max_tokens_per_batch=v["num_tokens"], block_size=v["block_size_m"], expert_num_tokens=ent)
    return (None, run_statements(mod.batched_moe_align_block_size, None, None, args))


def _install_numba_stand_in() -> None:
    """A ``numba`` module for a venv without it (the real venv has none): ``jit``/``njit``
    decorate a function into one that refuses to run (a compiled kernel is not run while
    tracing), ``prange`` is ``range``, the thread-count calls answer 1 / do nothing. Only installed
    when numba is not importable."""
    import importlib.machinery
    import importlib.util
    import sys
    import types

    if "numba" in sys.modules or importlib.util.find_spec("numba") is not None:
        return
    mod = types.ModuleType("numba")
    mod.__spec__ = importlib.machinery.ModuleSpec("numba", None)

    def refuse(fn):
        def compiled(*args, **kwargs):
            raise tr.CapproofError(f"numba-compiled {fn.__name__}() is not run while tracing")

        compiled.__name__ = fn.__name__
        return compiled

    def jit(*args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return refuse(args[0])
        return refuse

    mod.jit = mod.njit = jit
    mod.prange = range
    mod.get_num_threads = lambda: 1
    mod.set_num_threads = lambda n: None
    sys.modules["numba"] = mod


@harness("NgramProposer")
def _ngram_proposer(v: dict, device: str):
    """``NgramProposer(vllm_config)`` (gpu_model_runner.py:617) with ``prompt_lookup_min/max =
    2/5``; numba is replaced by :func:`_install_numba_stand_in` when absent (its JIT warm-up,
    ngram_proposer.py:56, is then not run)."""
    import importlib

    _install_numba_stand_in()
    mod = importlib.import_module("vllm.v1.spec_decode.ngram_proposer")
    cfg = worker_config(v)
    cfg.speculative_config.method = "ngram"
    cfg.speculative_config.prompt_lookup_min = 2
    cfg.speculative_config.prompt_lookup_max = 5
    return _construct(mod.NgramProposer, cfg)


@harness("InputBatch[allowed_token_ids]", "vllm.v1.worker.gpu_input_batch", "vllm.sampling_params")
def _input_batch_allowed_tokens(v: dict, device: str):
    """The V1 ``InputBatch`` (built as :func:`.trace._v1_input_batch` does), then its
    ``add_request`` for a request whose sampling parameters restrict the allowed token ids: the
    lazy ``allowed_token_ids_mask`` allocation of gpu_input_batch.py:441-456. The request is a
    duck-typed ``CachedRequestState`` with vLLM's own ``SamplingParams``."""
    from vllm.sampling_params import SamplingParams
    from vllm.v1.worker.gpu_input_batch import InputBatch

    built = tr.HARNESSES["InputBatch"](v, device)
    params = SamplingParams(temperature=0.0, allowed_token_ids=[1, 2])
    request = SimpleNamespace(
        req_id="r0",
        prompt_token_ids=[1, 2, 3],
        prompt_embeds=None,
        output_token_ids=[],
        num_tokens=3,
        num_computed_tokens=0,
        block_ids=([],),
        sampling_params=params,
        pooling_params=None,
        generator=None,
        lora_request=None,
        mm_features=[],
        num_prompt_tokens=3,
    )
    return _then(built, InputBatch, "add_request", {"request": request})


@harness("StandaloneARSpeculator[set_attn]", "vllm.v1.worker.gpu.spec_decode.standalone_ar.speculator")
def _standalone_set_attn(v: dict, device: str):
    """StandaloneAR's ``set_attn`` (standalone_ar/speculator.py:79-99): after the parent's attention
    set-up (not run; it builds metadata builders), ``expanded_slot_mappings`` has one row per KV
    cache group of the runner's ``BlockTables`` (``num_kv_cache_groups``)."""
    from vllm.v1.worker.gpu.spec_decode.standalone_ar.speculator import StandaloneARSpeculator

    built = _speculator(
        "vllm.v1.worker.gpu.spec_decode.standalone_ar.speculator", "StandaloneARSpeculator", "draft_model"
    )(v, device)
    block_tables = SimpleNamespace(num_kv_cache_groups=extra_name(v, "num_kv_cache_groups"))
    return _then(
        built,
        StandaloneARSpeculator,
        "set_attn",
        {
            "model_state": None,
            "kv_cache_config": None,
            "block_tables": block_tables,
            "target_input_buffers": None,
            "target_attn_groups": [],
        },
        overrides={"super": _LoaderSkipped},
    )


@harness("EncoderRunner", "vllm.v1.worker.gpu.mm.encoder_runner")
def _encoder_runner(v: dict, device: str):
    """``EncoderRunner(model, max_num_tokens, hidden_size=inputs_embeds_size, encoder_cache, dtype,
    device, cudagraph_manager, enable_timing)`` as the V2 model state builds it
    (gpu/model_states/interface.py:84-98; max_num_tokens = max_num_batched_tokens, :62)."""
    import torch
    from vllm.v1.worker.gpu.mm.encoder_runner import EncoderRunner

    return _construct(
        EncoderRunner,
        model=_MODEL,
        max_num_tokens=v["max_num_batched_tokens"],
        hidden_size=v["hidden_size"],
        encoder_cache=SimpleNamespace(),
        dtype=torch.bfloat16,
        device=torch.device(device),
        cudagraph_manager=None,
        enable_timing=False,
    )


#: PCPManager builds its own rank-local InputBuffers for 2 * max_num_reqs requests
#: (pcp_manager.py:98-103): not the runner's InputBuffers the inventory entry describes
tr.FOREIGN_OWNERS["PCPManager"] = {"InputBuffers"}


@harness("PCPManager", "vllm.v1.worker.gpu.pcp_manager")
def _pcp_manager(v: dict, device: str):
    """``PCPManager(pcp_world_size=pcp, pcp_rank=0, ..., max_num_reqs, max_num_tokens=
    max_num_batched_tokens, block_tables, ..., moe_gathers_tokens=True)`` as
    ``maybe_build_pcp_manager`` builds it (gpu/pcp_manager.py:912-925, prefill context parallel
    size ``pcp``, no expert parallelism) with the runner's ``BlockTables`` standing in as the fields
    ``set_block_tables`` reads: ``num_kv_cache_groups`` groups, each input block table
    ``[max_num_reqs, max_num_blocks]`` (gpu/block_table.py:85-87), ``cp_interleave`` 1."""
    import torch
    from vllm.v1.worker.gpu.pcp_manager import PCPManager

    n, width = v["max_num_reqs"], v["max_num_blocks"]
    table = (
        tr.FakeTensor((n, width), torch.int32, device)
        if isinstance(n, SymInt)
        else torch.zeros((n, width), dtype=torch.int32)
    )
    block_tables = SimpleNamespace(
        cp_interleave=1, input_block_tables=[table], num_kv_cache_groups=extra_name(v, "num_kv_cache_groups")
    )
    return _construct(
        PCPManager,
        pcp_world_size=extra_name(v, "pcp"),
        pcp_rank=0,
        device=torch.device(device),
        shard_decode_requests=False,
        max_num_reqs=n,
        max_num_tokens=v["max_num_batched_tokens"],
        block_tables=block_tables,
        dcp_world_size=1,
        dcp_rank=0,
        cp_interleave=1,
        moe_gathers_tokens=True,
    )
