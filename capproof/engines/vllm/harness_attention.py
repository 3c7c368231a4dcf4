"""Harnesses for vLLM 0.33.0's attention backends (``vllm/v1/attention/backends/**``).

Each harness constructs a real class from the wheel the way vLLM does
(``Builder(kv_cache_spec, layer_names, vllm_config, device)`` for the metadata builders, the
constructor call of the owning code for helper state such as ``_SM90State``), with duck-typed
configs of capproof SymInts (:func:`.trace.vllm_config` plus the fields each backend reads), and
runs it under :mod:`.trace`'s recording stand-ins. What a CPU cannot answer is made explicit:

- **config switches** a constructor branches on (``cudagraph_mode.has_full_cudagraphs()``,
  ``model_config.is_mm_prefix_lm``, ``cache_config.use_replayssm``, ...) are :func:`switch`
  conditions ``name == 1`` on a symbolic int: the tracer forks on them, and an entry allocated on
  one side only says ``allocated only when <name> == 1``;
- **device queries** (``num_compute_units``, ``get_device_properties(...).multi_processor_count``)
  are the config name ``num_sms``;
- **config values read elsewhere** (``hf_config.sliding_window``, ``model_config.rswa_window``,
  ...) are config names of their own (:data:`NAMES`), listed in the trace printer's facts;
- **ROCm-only packages** imported by a backend (``aiter``) are :class:`.trace.CudaOnly` modules: the
  vLLM module loads, a statement that calls into them is skipped and the buffers it sizes stay
  ``read`` (aiter's own metadata-size functions are never guessed);
- ``current_platform`` questions that only pick a kernel variant (``is_rocm()``, ``is_cuda()``,
  device-capability checks) are answered as on the platform the backend is written for, and each
  harness names the answers it gives in :data:`PLATFORM_ANSWERS` (a reviewer reads them there).

Source: vLLM 0.33.0 wheel, ``vllm/v1/attention/backends/`` (line numbers are cited in each harness).
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from types import SimpleNamespace

from ...symbolic import SymInt
from . import trace as _tr
from .trace import Config, construct, harness, vllm_config

__all__ = ["NAMES", "SWITCHES", "PLATFORM_ANSWERS", "switch"]

#: Config names (sizes >= 1) the attention harnesses add to the tracer's vocabulary.
NAMES = (
    "sliding_window",
    "rswa_window",
    "replayssm_buffer_len",
    "mamba_ngroups",
    "topk_width",
    "kv_lora_rank",
    "num_kv_heads",
    "compress_ratio",
    "candidate_block_size",
    "candidate_topk_blocks",
    "max_seq_len",
)
#: Config switches (0/1) the harnesses fork on; shapes allocated on one side say ``<name> == 1``.
SWITCHES = ("full_cudagraphs", "mm_prefix_lm", "use_replayssm", "flydsl", "nvfp4_fa2", "fa3", "sm120", "sm90", "sm100")

#: Config names that may be 0.
COUNTS = ("vision_n_layers", "vision_max_n_token")

_tr.POSITIVE = tuple(dict.fromkeys(_tr.POSITIVE + NAMES))
_tr.NONNEGATIVE = tuple(dict.fromkeys(_tr.NONNEGATIVE + COUNTS))
if "aiter" not in _tr.CUDA_ONLY_PACKAGES:
    _tr.CUDA_ONLY_PACKAGES = _tr.CUDA_ONLY_PACKAGES + ("aiter",)

#: harness name -> the ``current_platform`` answers it gives (besides :class:`.trace.DeviceQuery`'s
#: refusal of every other question)
PLATFORM_ANSWERS: dict[str, dict[str, object]] = {}


def switch(name: str, v: dict):
    """A config switch: ``name == 1`` on a symbolic int when tracing (the tracer forks on it), True
    on ints (the real-tier comparison builds the switched-on side)."""
    value = _value(name, v)
    if isinstance(value, SymInt):
        return value == 1
    return bool(value)


def _value(name: str, v: dict):
    """Config name ``name``: a SymInt named after itself when tracing, else the int case's value."""
    if name in v:
        return v[name]
    if any(isinstance(x, SymInt) for x in v.values()):
        return SymInt.var(name)
    return int_value(name)


def int_value(name: str) -> int:
    """The int a harness uses for config name ``name`` when run on ints (the real-tier comparison):
    :data:`DEFAULTS`, or 1 for a switch (the switched-on side is the one that allocates).
    Raises KeyError for any other name."""
    if name in DEFAULTS:
        return DEFAULTS[name]
    if name in SWITCHES or name.startswith("sm"):
        return 1
    raise KeyError(f"{name!r} is not a config name of the attention harnesses")


#: int values for the real-tier comparison (a DeepSeek-/Gemma-like deployment)
DEFAULTS = dict(
    nvfp4_fa2=0,
    max_seq_len=4096,
    candidate_block_size=64,
    candidate_topk_blocks=32,
    gcn_arch=950,
    compress_ratio=4,
    vision_n_layers=1,
    sliding_window=128,
    rswa_window=512,
    replayssm_buffer_len=8,
    mamba_ngroups=8,
    topk_width=2048,
    kv_lora_rank=512,
    vision_max_n_token=1024,
    num_kv_heads=8,
)


class Platform:
    """``current_platform`` for a harness: the listed answers, any other question refused as a device
    query (:class:`.trace.DeviceQuery`)."""

    def __init__(self, answers: dict[str, object]):
        self._answers = answers

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name in self._answers:
            return self._answers[name]
        return getattr(_tr.DeviceQuery(), name)


def cudagraph_mode(v: dict) -> Config:
    """``compilation_config.cudagraph_mode`` whose ``has_full_cudagraphs()`` is the switch
    ``full_cudagraphs``."""
    return Config(
        has_full_cudagraphs=lambda: switch("full_cudagraphs", v), decode_mode=lambda: None, mixed_mode=lambda: None
    )


def attention_config(v: dict) -> Config:
    """:func:`.trace.vllm_config` with the fields attention builders read besides."""
    cfg = vllm_config(v)
    cfg.compilation_config.cudagraph_mode = cudagraph_mode(v)
    cfg.model_config.rswa_window = None
    cfg.model_config.get_num_kv_heads = lambda parallel_config=None: _value("num_kv_heads", v)
    # AttentionConfig's defaults (vllm/config/attention.py:61,149-167)
    for name in ("flex_attn_block_m", "flex_attn_block_n", "flex_attn_q_block_size", "flex_attn_kv_block_size"):
        setattr(cfg.attention_config, name, None)
    cfg.attention_config.flash_attn_max_num_splits_for_cuda_graph = 32
    cfg.kernel_config = Config(enable_jit_warmup=False, sparse_indexer_topk_backend="auto")
    return cfg


def cuda_platform(v: dict) -> dict:
    """``current_platform`` answers for a CUDA deployment: ``is_cuda()`` True, ``is_rocm()`` False,
    ``num_compute_units()`` the name ``num_sms``, and a device-capability check the switch
    ``sm<major><minor>`` (``is_device_capability``: that exact capability; ``has_device_capability``:
    ``sm<major><minor>_or_newer``), so the tracer forks on it."""

    def cap(c):
        if isinstance(c, tuple):
            return f"{c[0]}{c[1]}"
        return str(c)

    return {
        "is_cuda": lambda: True,
        "is_rocm": lambda: False,
        "is_xpu": lambda: False,
        "is_cpu": lambda: False,
        "num_compute_units": lambda index=None: v["num_sms"],
        "is_device_capability": lambda c, device_id=0: switch(f"sm{cap(c)}", v),
        "is_device_capability_family": lambda c, device_id=0: switch(f"sm{cap(c)}_family", v),
        "has_device_capability": lambda c, device_id=0: switch(f"sm{cap(c)}_or_newer", v),
    }


class TorchWithSymbolicTensor:
    """``torch`` for a traced constructor body: ``torch.tensor(data)`` of data holding symbolic ints
    (``torch.tensor([self.rswa_window])``, flash_attn.py:795) is a :class:`.trace.FakeTensor` of
    the data's shape; everything else is torch (as patched by the recording)."""

    def __getattr__(self, name):
        import torch

        return getattr(torch, name)

    @staticmethod
    def tensor(data, *args, dtype=None, device=None, **kwargs):
        import torch

        flat = data if isinstance(data, (list, tuple)) else [data]
        if any(isinstance(x, SymInt) for x in flat):
            return _tr.FakeTensor((len(flat),) if isinstance(data, (list, tuple)) else (), dtype or torch.int64, device)
        return torch.tensor(data, *args, dtype=dtype, device=device, **kwargs)


def _builder(
    module: str,
    cls: str,
    spec,
    cfg,
    v: dict,
    device: str,
    platform: dict | None = None,
    overrides: dict | None = None,
    **kwargs,
):
    import torch

    klass = getattr(importlib.import_module(module), cls)
    extra = {"num_compute_units": lambda index=None: v["num_sms"], "torch": TorchWithSymbolicTensor()}
    if platform is not None:
        extra["current_platform"] = Platform(platform)
    extra.update(overrides or {})
    return construct(
        klass, spec, ["model.layers.0.self_attn.attn"], cfg, torch.device(device), _overrides=extra, **kwargs
    )


def _full_spec(v: dict):
    import torch
    from vllm.v1.kv_cache_interface import FullAttentionSpec

    return FullAttentionSpec(block_size=v["block_size"], num_kv_heads=8, head_size=128, dtype=torch.bfloat16)


def _mla_spec(v: dict):
    return _tr.mla_spec(v)


@contextlib.contextmanager
def stand_ins(*modules: str):
    """GPU-only modules a constructor imports in its body (``from flashinfer.mla import ...``) as
    :class:`.trace.CudaOnly` modules while the body runs (only those not importable here); removed
    afterwards so no other harness sees them."""
    added = []
    for name in modules:
        if name in sys.modules:
            continue
        try:
            importlib.import_module(name)
            continue
        except ImportError:
            pass
        _tr.install_cuda_only(name)
        added.append(name)
    try:
        yield
    finally:
        for name in added:
            sys.modules.pop(name, None)


def _hf_instance(cls, **fields):
    """An instance of a transformers config class ``cls`` holding exactly ``fields`` (its
    constructor is not run: the builders only read these attributes and check the class)."""
    obj = cls.__new__(cls)
    obj.__dict__.update(fields)
    return obj


# ------------------------------------------------------------------------------------------------
# DeepSeek-V4 sliding-window MLA (mla/sparse_swa.py:453-565)


@harness("DeepseekSparseSWAMetadataBuilder", "vllm.v1.attention.backends.mla.sparse_swa", "vllm.v1.kv_cache_interface")
def _sparse_swa(v: dict, device: str):
    """``hf_config.sliding_window`` is the name ``sliding_window`` (sparse_swa.py:480); the vision
    variant's buffers (sparse_swa.py:538-556) exist when ``vision_n_layers > 0`` on a
    ``DeepseekV4Config`` (sparse_swa.py:487-492), ``vision_max_n_token`` widens prefill rows."""
    from transformers import DeepseekV4Config

    cfg = attention_config(v)
    hf = cfg.model_config.hf_config
    cfg.model_config.hf_config = _hf_instance(
        DeepseekV4Config,
        **{k: val for k, val in vars(hf).items()},
        sliding_window=_value("sliding_window", v),
        vision_n_layers=_value("vision_n_layers", v),
        vision_max_n_token=_value("vision_max_n_token", v),
        compress_ratios=[4, 128],
    )
    cfg.speculative_config.use_dspark = lambda: False
    return _builder(
        "vllm.v1.attention.backends.mla.sparse_swa", "DeepseekSparseSWAMetadataBuilder", _mla_spec(v), cfg, v, device
    )


# ------------------------------------------------------------------------------------------------
# FlashInfer sparse MLA on SM90: the plan state (mla/flashinfer_mla_sparse_sm90.py:244-300)


@harness("_SM90State", "vllm.v1.attention.backends.mla.flashinfer_mla_sparse_sm90")
def _sm90_state(v: dict, device: str):
    """``_SM90State`` as ``FlashInferMLASparseSM90Builder.__init__`` builds it
    (flashinfer_mla_sparse_sm90.py:459-470): ``max_tokens = max_num_batched_tokens``,
    ``topk_width = topk_indices_buffer.shape[1]`` (the name ``topk_width``), ``index_topk`` from the
    HF config. ``flashinfer.mla`` has no CPU build: the import statement is skipped and the
    ``wrapper`` statement (which allocates ``qo_indptr`` in its arguments) is not run."""
    import torch
    from vllm.v1.attention.backends.mla.flashinfer_mla_sparse_sm90 import _SM90State

    with stand_ins("flashinfer", "flashinfer.mla"):
        return construct(
            _SM90State,
            torch.device(device),
            v["num_heads"],
            torch.float8_e4m3fn,
            v["max_num_batched_tokens"],
            _value("topk_width", v),
            kv_lora_rank=512,
            qk_rope_head_dim=64,
            sm_scale=0.1,
            index_topk=v["index_topk"],
            index_kpool=1,
        )


# ------------------------------------------------------------------------------------------------
# DSA indexer with KV compression (mla/indexer.py:1012-1016, 1130-1143)


@harness(
    "DeepseekV32IndexerMetadataBuilder[compress_ratio]",
    "vllm.v1.attention.backends.mla.indexer",
    "vllm.v1.kv_cache_interface",
)
def _indexer_compressed(v: dict, device: str):
    """The indexer builder on an MLA spec whose ``tokens_per_state`` is the name ``compress_ratio``
    (DeepSeek-V4 compresses KV states; indexer.py:1013-1016): the compressed-slot buffers exist
    when ``compress_ratio > 1`` (indexer.py:1130). The uncompressed case is the
    ``DeepseekV32IndexerMetadataBuilder`` harness."""
    import torch
    from vllm.v1.kv_cache_interface import MLAAttentionSpec

    spec = MLAAttentionSpec(
        block_size=64,
        num_kv_heads=1,
        head_size=576,
        dtype=torch.uint8,
        cache_dtype_str="fp8_ds_mla",
        tokens_per_state=_value("compress_ratio", v),
    )
    return _builder(
        "vllm.v1.attention.backends.mla.indexer",
        "DeepseekV32IndexerMetadataBuilder",
        spec,
        attention_config(v),
        v,
        device,
        block_table_width=_tr.block_table_width_of(v),
    )


# ------------------------------------------------------------------------------------------------
# Builders whose constructor branches on config switches (the generic harness of trace.py gives
# them none of these fields, so the switched buffers stayed read)


def _switched_builder(
    module: str,
    cls: str,
    mla: bool,
    mutate=None,
    platform=None,
    stand_in: tuple[str, ...] = (),
    spec=None,
    overrides=None,
):
    """A builder harness on :func:`attention_config` plus ``mutate(cfg, v)``."""

    def run(v: dict, device: str):
        cfg = attention_config(v)
        if mutate is not None:
            mutate(cfg, v)
        kv_spec = spec(v) if spec is not None else (_mla_spec(v) if mla else _full_spec(v))
        with stand_ins(*stand_in):
            return _builder(
                module,
                cls,
                kv_spec,
                cfg,
                v,
                device,
                platform=platform(v) if platform else None,
                overrides=overrides(v) if overrides else None,
            )

    return run


def _rswa_and_mm_prefix(cfg, v):
    """``model_config.rswa_window`` is the name ``rswa_window`` (the R-SWA buffers exist when it is
    set: flash_attn.py:787-797, triton_attn.py:213-220, flex_attention.py:907-913); the
    multimodal-prefix buffers are the switch ``mm_prefix_lm`` (flash_attn.py:802-812)."""
    cfg.model_config.rswa_window = _value("rswa_window", v)
    cfg.model_config.is_mm_prefix_lm = switch("mm_prefix_lm", v)


def distributed(v: dict) -> dict:
    """The DCP group as the builders query it: world size ``dcp`` (``decode_context_parallel_size``),
    rank 0 (``get_dcp_world_size_and_rank``, vllm/distributed/parallel_state.py:1633-1638;
    ``get_dcp_group()``); shapes do not depend on the rank."""
    group = Config(world_size=v["dcp"], rank_in_group=0)
    return {
        "get_dcp_world_size_and_rank": lambda enabled=True: (v["dcp"], 0) if enabled else (1, 0),
        "get_dcp_group": lambda: group,
    }


def _flash_attn_overrides(v: dict) -> dict:
    """FlashAttention's version is a device query (``get_flash_attn_version``, fa_utils.py:74-104:
    FA3 on SM90): the switch ``fa3`` picks 3, else 2; with ``full_cudagraphs`` it sizes the AOT
    ``scheduler_metadata`` (flash_attn.py:752-770)."""
    return {**distributed(v), "get_flash_attn_version": lambda *a, **k: 3 if switch("fa3", v) else 2}


for _module, _cls, _mla, _over in (
    ("vllm.v1.attention.backends.mla.flashmla", "FlashMLAMetadataBuilder", True, distributed),
    ("vllm.v1.attention.backends.flash_attn", "FlashAttentionMetadataBuilder", False, _flash_attn_overrides),
    ("vllm.v1.attention.backends.triton_attn", "TritonAttentionMetadataBuilder", False, distributed),
    ("vllm.v1.attention.backends.flex_attention", "FlexAttentionMetadataBuilder", False, distributed),
):
    harness(_cls, _module, "vllm.v1.kv_cache_interface")(
        _switched_builder(_module, _cls, _mla, _rswa_and_mm_prefix, platform=cuda_platform, overrides=_over)
    )


# ------------------------------------------------------------------------------------------------
# Mamba builders with ReplaySSM (mamba_attn.py:94-190)


def _mamba_spec(v: dict):
    """A ``MambaSpec`` whose B-cache shape (``shapes[4]``, read at mamba_attn.py:155) is
    ``(mamba_ngroups, replayssm_buffer_len, 128)``; the other state shapes are not read by the
    constructor's allocations."""
    import torch
    from vllm.v1.kv_cache_interface import MambaSpec

    shapes = (
        (4, 4096),
        (64, 64, 128),
        (64,),
        (64,),
        (_value("mamba_ngroups", v), _value("replayssm_buffer_len", v), 128),
    )
    return MambaSpec(block_size=v["block_size"], shapes=shapes, dtypes=(torch.bfloat16,) * 5)


def _replayssm(cfg, v):
    """``cache_config.use_replayssm`` is the switch ``use_replayssm`` with the Triton backend
    (mamba_attn.py:106-111,134); ``replayssm_buffer_len`` is the name ``replayssm_buffer_len``."""
    from vllm.config.mamba import MambaBackendEnum

    cfg.cache_config.use_replayssm = switch("use_replayssm", v)
    cfg.cache_config.replayssm_buffer_len = _value("replayssm_buffer_len", v)
    cfg.mamba_config = Config(backend=MambaBackendEnum.TRITON)


harness("BaseMambaAttentionMetadataBuilder", "vllm.v1.attention.backends.mamba_attn", "vllm.v1.kv_cache_interface")(
    _switched_builder(
        "vllm.v1.attention.backends.mamba_attn",
        "BaseMambaAttentionMetadataBuilder",
        False,
        _replayssm,
        platform=cuda_platform,
        spec=_mamba_spec,
        overrides=distributed,
    )
)


# ------------------------------------------------------------------------------------------------
# ROCm backends. Their modules import on a CPU build; ``aiter`` (AMD's kernel package, imported in
# constructor bodies) is a CudaOnly stand-in: a statement calling into it is skipped and the
# buffers it sizes (aiter's own metadata sizes) stay read.


def rocm_platform(v: dict) -> dict:
    """``current_platform`` answers for a ROCm deployment: ``is_rocm()`` True, ``is_cuda()`` False,
    ``num_compute_units()`` the name ``num_sms`` (compute units); any other question is refused."""
    return {
        "is_rocm": lambda: True,
        "is_cuda": lambda: False,
        "is_xpu": lambda: False,
        "is_cpu": lambda: False,
        "num_compute_units": lambda index=None: v["num_sms"],
    }


#: AMD GPU architectures as codes of the config name ``gcn_arch`` (vllm/platforms/rocm.py:217-233
#: derives the ``on_*`` answers from the GCN arch string)
GCN_ARCH = {
    "gfx90a": 90,
    "gfx942": 942,
    "gfx950": 950,
    "gfx1100": 1100,
    "gfx1151": 1151,
    "gfx1200": 1200,
    "gfx1201": 1201,
    "gfx1250": 1250,
}


def _rocm_module(v: dict):
    """A stand-in for ``vllm.platforms.rocm`` (it queries the GPU at import; a CPU build cannot import
    it): its architecture predicates (rocm.py:307-385) as conditions on the symbolic ``gcn_arch``
    (one of :data:`GCN_ARCH`), so the tracer forks on them; any other function is a refused device
    query."""
    import types

    arch = _value("gcn_arch", v)

    def any_of(*names):
        conds = [arch == GCN_ARCH[n] for n in names]
        out = conds[0]
        for c in conds[1:]:
            out = out | c
        return out

    preds = {
        "on_gfx9": ("gfx90a", "gfx942", "gfx950"),
        "on_gfx90a": ("gfx90a",),
        "on_gfx942": ("gfx942",),
        "on_gfx950": ("gfx950",),
        "on_mi3xx": ("gfx942", "gfx950"),
        "on_gfx1250": ("gfx1250",),
        "on_cdna": ("gfx90a", "gfx942", "gfx950", "gfx1250"),
        "on_gfx11": ("gfx1100", "gfx1151"),
        "on_gfx1100": ("gfx1100",),
        "on_gfx1151": ("gfx1151",),
        "on_gfx115x": ("gfx1151",),
        "on_gfx12x": ("gfx1200", "gfx1201"),
        "on_rdna4": ("gfx1200", "gfx1201"),
        "on_gfx1x": ("gfx1100", "gfx1151", "gfx1200", "gfx1201"),
        "on_rdna": ("gfx1100", "gfx1151", "gfx1200", "gfx1201"),
    }
    module = types.ModuleType("vllm.platforms.rocm")
    module.__file__ = None
    for name, archs in preds.items():
        setattr(module, name, (lambda a: lambda: any_of(*a))(archs))

    def refuse(attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise _tr.CapproofError(f"device query vllm.platforms.rocm.{attr} (a CPU cannot answer it)")

    module.__getattr__ = refuse
    return module


@contextlib.contextmanager
def rocm_device(v: dict):
    """While a ROCm harness runs: ``vllm.platforms.rocm`` is :func:`_rocm_module`."""
    saved = sys.modules.get("vllm.platforms.rocm")
    sys.modules["vllm.platforms.rocm"] = _rocm_module(v)
    try:
        yield
    finally:
        if saved is None:
            sys.modules.pop("vllm.platforms.rocm", None)
        else:
            sys.modules["vllm.platforms.rocm"] = saved


def _rocm_builder(module: str, cls: str, mla: bool):
    inner = _switched_builder(
        module, cls, mla, _rswa_and_mm_prefix, platform=rocm_platform, overrides=distributed, stand_in=("aiter",)
    )

    def run(v: dict, device: str):
        with rocm_device(v):
            return inner(v, device)

    return run


for _module, _cls, _mla in (
    ("vllm.v1.attention.backends.mla.rocm_aiter_mla", "AiterMLAMetadataBuilder", True),
    ("vllm.v1.attention.backends.mla.rocm_aiter_mla_sparse", "ROCMAiterMLASparseMetadataBuilder", True),
    ("vllm.v1.attention.backends.rocm_octave_attn", "RocmOctaveMetadataBuilder", False),
):
    harness(_cls, _module, "vllm.v1.kv_cache_interface")(_rocm_builder(_module, _cls, _mla))


#: The sliding window of the layer the ROCm FlashAttention harness gives its builder: a concrete int,
#: because the builder collects the windows in a set (rocm_aiter_fa.py:489-496), which a symbolic
#: value cannot enter (4096: Gemma-3's and Mistral's window).
AITER_FA_WINDOW = 4096


def _aiter_fa_layer(cfg, v):
    """One attention layer in ``static_forward_context`` for ``AiterFlashAttentionMetadataBuilder``
    (rocm_aiter_fa.py:488-507 collects the layers' sliding windows): an ``Attention`` whose
    ``AiterFlashAttentionImpl`` has the sliding window ``(AITER_FA_WINDOW - 1, 0)`` (vLLM's
    ``(left, right)`` convention; ``window = left + 1``, rocm_aiter_fa.py:517). The objects are
    the real classes, their constructors not run (the builder reads only these attributes)."""
    from vllm.model_executor.layers.attention import Attention
    from vllm.v1.attention.backends.rocm_aiter_fa import AiterFlashAttentionImpl

    impl = AiterFlashAttentionImpl.__new__(AiterFlashAttentionImpl)
    impl.__dict__.update(sliding_window=(AITER_FA_WINDOW - 1, 0), num_kv_heads=_value("num_kv_heads", v), head_size=128)
    layer = Attention.__new__(Attention)
    layer.__dict__.update(impl=impl, kv_sharing_target_layer_name=None, kv_cache_update_bypass=False)
    cfg.compilation_config.static_forward_context = {"model.layers.0.self_attn.attn": layer}


def _rocm_fa_builder(v: dict, device: str):
    with rocm_device(v):
        return _switched_builder(
            "vllm.v1.attention.backends.rocm_aiter_fa",
            "AiterFlashAttentionMetadataBuilder",
            False,
            _aiter_fa_layer,
            platform=rocm_platform,
            overrides=distributed,
            stand_in=("aiter",),
        )(v, device)


harness("AiterFlashAttentionMetadataBuilder", "vllm.v1.attention.backends.rocm_aiter_fa", "vllm.v1.kv_cache_interface")(
    _rocm_fa_builder
)


def _mxfp4_indexer(v: dict, device: str):
    """``RocmMxfp4IndexerMetadataBuilder`` (rocm_paged_mxfp4_indexer.py:335-386), a DSA indexer builder
    (it passes ``block_table_width`` to ``DeepseekV32IndexerMetadataBuilder``) on a compressed MLA
    spec (``tokens_per_state = compress_ratio``); the indexer's head count and head dim are the HF
    config's ``index_n_heads = 64``, ``index_head_dim = 128`` (DeepSeek-V3.2's)."""
    import torch
    from vllm.v1.kv_cache_interface import MLAAttentionSpec

    cfg = attention_config(v)
    cfg.model_config.hf_text_config.index_n_heads = 64
    cfg.model_config.hf_text_config.index_head_dim = 128
    spec = MLAAttentionSpec(
        block_size=64,
        num_kv_heads=1,
        head_size=576,
        dtype=torch.uint8,
        cache_dtype_str="fp8_ds_mla",
        tokens_per_state=_value("compress_ratio", v),
    )
    with rocm_device(v), stand_ins("aiter"):
        return _builder(
            "vllm.v1.attention.backends.mla.rocm_paged_mxfp4_indexer",
            "RocmMxfp4IndexerMetadataBuilder",
            spec,
            cfg,
            v,
            device,
            platform=rocm_platform(v),
            overrides=distributed(v),
            block_table_width=_tr.block_table_width_of(v),
        )


harness(
    "RocmMxfp4IndexerMetadataBuilder",
    "vllm.v1.attention.backends.mla.rocm_paged_mxfp4_indexer",
    "vllm.v1.kv_cache_interface",
)(_mxfp4_indexer)


# ------------------------------------------------------------------------------------------------
# what each harness's traced shapes rest on (appended to the entries' ``why``)

_ROCM = (
    "ROCm backend run on a CPU build: `aiter` stood in (statements calling into it are not run, the "
    "buffers they size stay read), vllm.platforms.rocm's arch predicates are conditions on gcn_arch"
)
_tr.NOTES.update(
    {
        "_SM90State": "flashinfer, flashinfer.mla stood in (no CPU build; the BatchMLAPagedAttentionWrapper call is not "
        "run); arguments as FlashInferMLASparseSM90Builder passes them (flashinfer_mla_sparse_sm90.py:459-470), "
        "topk_width = topk_indices_buffer.shape[1]",
        "AiterMLAMetadataBuilder": _ROCM + "; speculative_config.enable_adaptive_verification off (the adaptive "
        "varlen-verify buffers are not reached; paged_kv_indices then has no draft pages)",
        "ROCMAiterMLASparseMetadataBuilder": _ROCM,
        "RocmOctaveMetadataBuilder": _ROCM,
        "RocmMxfp4IndexerMetadataBuilder": _ROCM + "; index_n_heads 64, index_head_dim 128",
        "AiterFlashAttentionMetadataBuilder": _ROCM + f"; one layer with sliding window {AITER_FA_WINDOW} (concrete: "
        "the builder keeps windows in a set)",
        "TurboQuantAttentionImpl": "Impl methods _ensure_on_device and _prefill_attention run statement by statement "
        "on an instance with _max_model_len and _soa_store (the switch flydsl) set; "
        "max_seq_len is the step's longest sequence",
        "DeepseekV41SparseIndexerMetadataBuilder": "HF candidate_block_size, candidate_topk_blocks as names; the "
        "constructor's capability checks (DeepGEMM, DeepSelect) are skipped",
        "BaseMambaAttentionMetadataBuilder": "MambaSpec B-cache shape (mamba_ngroups, replayssm_buffer_len, 128); "
        "ReplaySSM on the Triton backend",
    }
)
for _cls in ("FlashAttentionMetadataBuilder", "TritonAttentionMetadataBuilder", "FlexAttentionMetadataBuilder"):
    _tr.NOTES[_cls] = "traced with model_config.rswa_window set (the name rswa_window)"


# ------------------------------------------------------------------------------------------------
# DeepSeek-V4.1 sparse-logits indexer (mla/sparse_indexer.py:91-175)


def _sparse_indexer(v: dict, device: str):
    """``DeepseekV41SparseIndexerMetadataBuilder``: the DSA indexer builder (``block_table_width``
    passed through) plus row scratch sized by the parent's ``arange_buffer`` rows
    (sparse_indexer.py:165). The HF config's two-level indexer fields are the names
    ``candidate_block_size`` and ``candidate_topk_blocks``; the SM100 family check is the switch
    ``sm100_family`` (sparse_indexer.py:116-120). The constructor's capability checks that raise
    on a CPU build (DeepGEMM, DeepSelect) are statements the tracer skips; the allocations after
    them do not read what they compute."""
    cfg = attention_config(v)
    hf = cfg.model_config.hf_text_config
    hf.candidate_block_size = _value("candidate_block_size", v)
    hf.candidate_topk_blocks = _value("candidate_topk_blocks", v)
    return _builder(
        "vllm.v1.attention.backends.mla.sparse_indexer",
        "DeepseekV41SparseIndexerMetadataBuilder",
        _mla_spec(v),
        cfg,
        v,
        device,
        platform=cuda_platform(v),
        overrides=distributed(v),
        block_table_width=_tr.block_table_width_of(v),
    )


harness(
    "DeepseekV41SparseIndexerMetadataBuilder",
    "vllm.v1.attention.backends.mla.sparse_indexer",
    "vllm.v1.kv_cache_interface",
)(_sparse_indexer)


# ------------------------------------------------------------------------------------------------
# TurboQuant attention: buffers its Impl allocates lazily (turboquant_attn.py:409-436, 775-784)


def _turboquant(v: dict, device: str):
    """``TurboQuantAttentionImpl``'s lazily allocated buffers, by running the two methods that
    allocate them statement by statement on an instance whose constructor fields are set as
    ``__init__`` sets them (turboquant_attn.py:328-370): ``_max_model_len`` = ``max_model_len``,
    ``_soa_store`` = the switch ``flydsl`` (``is_flydsl_available()``, a ROCm package probe).

    - ``_ensure_on_device(layer, device)`` (409-436): ``_arange_cache`` and ``_cu_2`` when
      ``_soa_store``; the layer is marked ``_tq_cached`` (its Hadamard/centroid set-up allocates
      nothing in the inventory).
    - ``_prefill_attention(...)`` (723-784) on a fresh instance: ``_cu_2`` (776) and the step's
      ``_arange_cache`` (781) sized by the step's longest sequence, the name ``max_seq_len``.
      Statements that need the batch's data (``.tolist()``) or return early are skipped."""
    import torch
    from vllm.v1.attention.backends.turboquant_attn import TurboQuantAttentionImpl as Impl

    logs = []
    obj = Impl.__new__(Impl)
    obj.__dict__.update(
        _max_model_len=v["max_model_len"],
        _soa_store=switch("flydsl", v),
        head_size=128,
        num_heads=v["num_heads"],
        max_num_kv_splits=32,
    )
    layer = SimpleNamespace(_tq_cached=True)
    logs.append((obj, _tr.run_statements(Impl._ensure_on_device, Impl, obj, {"layer": layer, "device": device})))

    obj2 = Impl.__new__(Impl)
    obj2.__dict__.update(_max_model_len=v["max_model_len"], head_size=128, num_heads=v["num_heads"])
    n = v["max_num_batched_tokens"]
    query = _tr.FakeTensor((n, v["num_heads"], 128), torch.bfloat16, device)
    key = _tr.FakeTensor((n, 8, 128), torch.bfloat16, device)
    meta = SimpleNamespace(
        max_query_len=n,
        max_seq_len=_value("max_seq_len", v),
        query_start_loc=_tr.FakeTensor((v["max_num_reqs"] + 1,), torch.int32, device),
        query_start_loc_cpu=None,
        seq_lens_cpu=None,
        seq_lens=_tr.FakeTensor((v["max_num_reqs"],), torch.int32, device),
    )
    args = dict(
        query=query,
        key=key,
        value=key,
        kv_cache=None,
        attn_metadata=meta,
        Pi=None,
        centroids=None,
        PiT=None,
        layer=layer,
    )
    logs.append((obj2, _tr.run_statements(Impl._prefill_attention, Impl, obj2, args)))
    return logs


harness("TurboQuantAttentionImpl", "vllm.v1.attention.backends.turboquant_attn")(_turboquant)


# ------------------------------------------------------------------------------------------------
# FlashInfer attention Impl: the NVFP4 FP8 output buffer (flashinfer.py:2013-2112)


def _flashinfer_impl(v: dict, device: str):
    """``FlashInferImpl(num_heads, 128, scale, num_kv_heads, None, None, "nvfp4")`` with the current
    vLLM config (``get_current_vllm_config_or_none``) the duck-typed one. ``_nvfp4_kv_on_fa2()``
    is a device-capability query (SM80/90/120 families, flashinfer.py:114-115): the switch
    ``nvfp4_fa2``; the FP8 output buffer exists on the TRT-LLM side (flashinfer.py:2104-2110)."""
    from vllm.v1.attention.backends.flashinfer import FlashInferImpl

    cfg = attention_config(v)
    cfg.attention_config.disable_flashinfer_q_quantization = False
    return construct(
        FlashInferImpl,
        v["num_heads"],
        128,
        0.1,
        _value("num_kv_heads", v),
        None,
        None,
        "nvfp4",
        _overrides={
            "get_current_vllm_config_or_none": lambda: cfg,
            "_nvfp4_kv_on_fa2": lambda: switch("nvfp4_fa2", v),
            "current_platform": Platform(cuda_platform(v)),
            **distributed(v),
        },
    )


harness("FlashInferImpl", "vllm.v1.attention.backends.flashinfer")(_flashinfer_impl)
