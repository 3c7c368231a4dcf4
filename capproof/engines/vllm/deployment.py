"""vLLM's side of ``capproof check-config``: what a ``vllm serve`` line means for the obligations.

The releases modelled, the GPU table (SM counts, batch-default rows), the KV-cache dtypes that
select a feature, the defaults vLLM picks for flags not given, which parameters each flag sets,
and :func:`run_check`, which pins a :class:`~capproof.engines.vllm.serve.ServeConfig` and runs
every applicable obligation through :func:`capproof.engines.checkconfig.check_all`. vLLM-Ascend
(a plugin run by the same ``vllm serve`` command line) is checked here too.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os

from packaging.version import InvalidVersion, Version

from ...verdict import Options
from ..checkconfig import (
    CONFIG_PARAMS,
    HYBRID_MAMBA_KEYS,
    MODEL_FIELDS,
    NEED_GPU,
    OTHER_MAX_LEN_KEYS,
    TEXT_CONFIG_KEYS,
    CheckError,
    CheckOutcome,
    Default,
    ModelFacts,
    check_all,
    inventory_path,
    nearby_max_model_len,
    nearby_max_num_seqs,
    uncovered_inventory,
)
from .flags import BATCH_DEFAULTS, VLLM_VERSION, VLLM_VERSIONS
from .serve import ServeConfig, user_capture_sizes

__all__ = [
    "parse_version",
    "pins_for",
    "run_check",
    "batch_defaults",
    "resolve_gpu",
    "GPU_SMS",
    "SUPPORTED_VLLM",
    "SUPPORTED_VLLM_ASCEND",
    "default_block_size",
    "v1_runner_possible",
    "v2_runner_pin",
    "v2_runner_unsupported",
]

#: Why an obligation that requires a feature the ``vllm serve`` line leaves out does not apply.
ABSENT = {
    "spec_decode": "does not apply: no speculative decoding (--speculative-config not given)",
    "default_capture_sizes": "about vLLM's default capture sizes; yours (--cudagraph-capture-sizes) "
    "are checked member by member (user_capture_sizes_fit_mnbt)",
}

#: How the engines this module checks are written.
DISPLAY = {"vllm": "vLLM", "vllm-ascend": "vLLM-Ascend"}

#: vLLM releases whose sizing formulas spec/ describes (bisected on PyPI wheels: #39324 first in
#: 0.21.0, #50302 in 0.27.0, #50823 in 0.28.0).
SUPPORTED_VLLM = (Version("0.18.0"), Version(VLLM_VERSION))
#: vLLM-Ascend releases the corpus covers (C3: vllm-project/vllm-ascend#14024 on main, #14114 its
#: v0.26.0rc backport).
SUPPORTED_VLLM_ASCEND = (Version("0.18.0"), Version("0.33.0"))


def parse_version(name: str, version: str | None, text: str) -> tuple[str, str]:
    """``--engine vllm[==VERSION]`` or ``vllm-ascend==VERSION`` (``text``, split into ``name`` and
    ``version``, None when not given) -> (engine, version).

    vLLM's default version is the pinned one; vLLM-Ascend (a plugin run by the same ``vllm serve``
    command line) needs its version. Raises CheckError for a version outside the modelled range.
    """
    if name == "vllm-ascend" and version is None:
        raise CheckError(f"--engine {text!r}: give the vLLM-Ascend release, e.g. vllm-ascend==0.25.0")
    version = version.strip() if version is not None else VLLM_VERSION
    try:
        parsed = Version(version)
    except InvalidVersion:
        raise CheckError(f"--engine {text!r}: {version!r} is not a version") from None
    lo, hi = SUPPORTED_VLLM if name == "vllm" else SUPPORTED_VLLM_ASCEND
    if not (lo <= parsed <= hi):
        raise CheckError(f"--engine {text!r}: capproof models {name} {lo}..{hi}")
    # the release's own spelling (0.33 and v0.33.0 are 0.33.0): its flag table, batch defaults and
    # inventory are keyed by it
    release = next((v for v in VLLM_VERSIONS if Version(v) == parsed), None)
    if name == "vllm" and release is None:
        # a pre-release, dev or post build (0.26.1rc1) may already hold a fix of the next release
        # (vllm-project/vllm#50302 is in 0.26.1rc1): checking it as its neighbour could say safe
        raise CheckError(
            f"--engine {text!r}: {version} is not a published vLLM release capproof models "
            f"({', '.join(VLLM_VERSIONS)}); a pre-release, dev or post build may or may not hold the next "
            "release's fixes: check the release it was cut from and the next one, both must be safe"
        )
    return name, release or version


#: ``--kv-cache-dtype`` values that select DSA's sparse MLA on CUDA, whose indexer backend supports
#: kernel block size 64 only (vLLM 0.33.0 ``DeepseekV32IndexerBackend.get_supported_kernel_block_sizes``).
DSA_CACHE_DTYPES = frozenset({"fp8_ds_mla", "nvfp4_ds_mla"})
DSA_CUDA_KERNEL_BLOCK_SIZE = 64

#: ``--kv-cache-dtype`` values that select the UltraQuant 4-bit KV cache (ROCm), whose decode
#: kernel computes 32-bit buffer offsets (vLLM 0.33.0 ``vllm/config/cache.py:61``,
#: ``vllm/platforms/rocm.py:580-584`` ``_uses_ultraquant``).
ULTRAQUANT_CACHE_DTYPES = frozenset({"ultraquant_4bit"})


#: Streaming multiprocessors (``torch.cuda.get_device_properties().multi_processor_count``, what
#: vLLM's ``num_sms`` is) per GPU an operator can name with ``--gpu``: (SM counts, source). A name
#: covering several products (H100: PCIe and SXM5) gives every count, each checked. Counts are
#: NVIDIA's published CUDA-core totals divided by the cores per SM of the architecture (64 on
#: Ampere GA100, 128 on Ada/Hopper/Blackwell). B300's enabled SM count is not listed here (not
#: confirmed from a data sheet): --gpu B300 picks vLLM's batch defaults, --num-sms N gives the count.
GPU_SMS: dict[str, tuple[tuple[int, ...], str]] = {
    "A100": ((108,), "NVIDIA A100 whitepaper: 6912 CUDA cores / 64 per SM (SXM4 and PCIe)"),
    "L40S": ((142,), "NVIDIA L40S data sheet: 18176 CUDA cores / 128 per SM"),
    "H100": ((114, 132), "NVIDIA H100 whitepaper: PCIe 14592 / 128 = 114, SXM5 16896 / 128 = 132"),
    "H100-PCIE": ((114,), "NVIDIA H100 whitepaper: PCIe 14592 CUDA cores / 128 per SM"),
    "H100-SXM": ((132,), "NVIDIA H100 whitepaper: SXM5 16896 CUDA cores / 128 per SM"),
    "H200": ((132,), "NVIDIA H200 (GH100, as H100 SXM5): 16896 CUDA cores / 128 per SM"),
    "B200": ((148,), "NVIDIA B200 (two dies of 74 SMs): 18944 CUDA cores / 128 per SM"),
    "GB10": ((48,), "NVIDIA GB10 (DGX Spark): 6144 CUDA cores / 128 per SM"),
}
#: ``--gpu`` names that select a row of vLLM's batch-default table under another name.
GPU_BATCH_ROW = {"H100-PCIE": "H100", "H100-SXM": "H100"}


def resolve_gpu(name: str | None, version: str) -> tuple[str | None, tuple[int, ...], str]:
    """``--gpu NAME`` -> (row of vLLM's batch-default table, SM counts, their source).

    Case-insensitive; raises CheckError (one line) for a GPU capproof has neither an SM count nor
    vLLM batch defaults for."""
    if name is None:
        return None, (), ""
    key = name.strip().upper()
    known = sorted(set(GPU_SMS) | {g for table in BATCH_DEFAULTS.values() for g in table})
    if key not in known:
        raise CheckError(f"--gpu {name!r}: unknown GPU (known: {', '.join(known)}); give --num-sms N for another GPU")
    sms, source = GPU_SMS.get(key, ((), ""))
    return GPU_BATCH_ROW.get(key, key), sms, source


def default_max_model_len(cfg: ServeConfig, model: ModelFacts | dict | None) -> int | None:
    """vLLM 0.33.0's ``max_model_len`` (tokens) when ``--max-model-len`` is not given: the model
    config's ``max_position_embeddings``, or None (left symbolic) without one, under ``--max-model-len
    auto`` (fitted to the GPU at startup) or when :func:`max_len_caveat` says vLLM derives another."""
    if getattr(cfg, "max_model_len_auto", False) or (isinstance(model, ModelFacts) and model.max_len_caveat):
        return None
    return (model.values if isinstance(model, ModelFacts) else (model or {})).get("max_position_embeddings")


def pins_for(cfg: ServeConfig, model: ModelFacts | dict | None = None) -> dict[str, int]:
    """Parameter pins implied by the flags (and the model config)."""
    values = dict(model.values if isinstance(model, ModelFacts) else (model or {}))
    pins: dict[str, int] = {"dcp": cfg.dcp, "tp": cfg.tp, "num_speculative_tokens": cfg.num_speculative_tokens}
    max_len = cfg.max_model_len if cfg.max_model_len is not None else default_max_model_len(cfg, model)
    values.pop("max_position_embeddings", None)
    # --max-cudagraph-capture-size is not pinned: vLLM lowers it to the largest capture size it
    # keeps (vllm/config/vllm.py:2552-2631), so it stays free (every value is checked) unless
    # run_check computes vLLM's value from the user's capture sizes
    for name, value in (
        ("max_model_len", max_len),
        ("block_size", cfg.block_size),
        ("max_num_seqs", cfg.max_num_seqs),
        ("max_num_batched_tokens", cfg.max_num_batched_tokens),
    ):
        if value is not None:
            pins[name] = value
    if cfg.max_num_seqs is not None:
        pins["max_num_reqs"] = cfg.max_num_seqs  # vLLM-Ascend's (and the runner's) name for it
    if cfg.kv_cache_dtype in DSA_CACHE_DTYPES:
        pins["kernel_block_size"] = DSA_CUDA_KERNEL_BLOCK_SIZE
    pins.update({k: v for k, v in values.items() if k in CONFIG_PARAMS})
    return pins


#: The parameters each sizing flag sets (a flag none of whose parameters an applied obligation has
#: is listed as not used).
FLAG_PARAMS = {
    "--max-model-len": ("max_model_len",),
    "--block-size": ("block_size",),
    "--tensor-parallel-size": ("tp",),
    "--decode-context-parallel-size": ("dcp",),
    "--max-num-seqs": ("max_num_seqs", "max_num_reqs", "num_decodes"),
    "--max-num-batched-tokens": ("max_num_batched_tokens", "num_decode_tokens"),
    "--speculative-config": ("num_speculative_tokens",),
    "--spec-tokens": ("num_speculative_tokens",),
    "--spec-method": ("num_speculative_tokens",),
    "--spec-model": ("num_speculative_tokens",),
    "--kv-cache-dtype": ("kernel_block_size",),
    "--cudagraph-capture-sizes": ("cudagraph_capture_size", "max_cudagraph_capture_size"),
    "--max-cudagraph-capture-size": ("max_cudagraph_capture_size",),
    "--compilation-config": ("cudagraph_capture_size", "max_cudagraph_capture_size"),
    "--pipeline-parallel-size": ("pp",),
    "--data-parallel-size": ("feature:extra_graph_padding",),
}
#: Model features a flag decides (its presence makes feature obligations apply or not).
FLAG_FEATURES = {
    "--speculative-config": "spec_decode",
    "--spec-tokens": "spec_decode",
    "-sc": "spec_decode",
    "--spec-method": "spec_decode",
    "--spec-model": "spec_decode",
    "--kv-cache-dtype": "dsa_indexer",
}
#: Flags that only steer parsing (nothing to check).
_PARSING_FLAGS = {"--model", "--config"}


#: vLLM 0.33.0 ``SchedulerConfig.DEFAULT_MAX_NUM_BATCHED_TOKENS_FOR_BATCHED_DP`` (``vllm/config/scheduler.py:42``):
#: the default token budget under batched DP MoE (``ParallelConfig.use_batched_dp_moe``: a
#: ``deepep_low_latency``/``nixl_ep`` all2all backend, expert parallelism and ``-dp`` > 1).
BATCHED_DP_MOE_TOKENS = 256
BATCHED_DP_MOE_BACKENDS = ("deepep_low_latency", "nixl_ep")


def batch_defaults(cfg: ServeConfig, engine: str, version: str, gpu: str | None) -> list[Default]:
    """The ``max_num_batched_tokens``/``max_num_seqs`` vLLM picks when the flags are not given.

    vLLM ``EngineArgs.get_batch_defaults`` (executed per release and GPU in ``flags.py``) then
    ``_set_default_max_num_seqs_and_batched_tokens_args`` (``vllm/engine/arg_utils.py:3151-3240``),
    per GPU row: 256 tokens under batched DP MoE; doubled with ``--performance-mode throughput``;
    without chunked prefill at least ``max_model_len``; then at most ``max_num_seqs *
    max_model_len``; ``max_num_seqs`` at most the token budget. Without ``--gpu``, every GPU's
    default is checked. A default that depends on a ``max_model_len`` not known here (chunked
    prefill disabled) is not given: the parameter stays free. vLLM-Ascend: no table (NPU).
    """
    out: list[Default] = []
    if engine not in ("vllm", "vllm-ascend") or version not in BATCH_DEFAULTS:
        return out
    table = BATCH_DEFAULTS[version]
    rows = {gpu: table[gpu]} if gpu else table
    where = (
        f"{gpu}"
        if gpu
        else "by GPU (" + ", ".join(f"{g} {t}/{s}" for g, (t, s) in table.items()) + "; give --gpu to pick one)"
    )
    factor = 2 if cfg.performance_mode == "throughput" else 1
    length = cfg.max_model_len
    batched_dp = cfg.all2all_backend in BATCHED_DP_MOE_BACKENDS and cfg.enable_expert_parallel and cfg.dp > 1
    tokens, seqs = set(), set()
    for t, s in rows.values():
        budget = cfg.max_num_batched_tokens
        requests = cfg.max_num_seqs if cfg.max_num_seqs is not None else s * factor
        if budget is None:
            budget = (BATCHED_DP_MOE_TOKENS if batched_dp else t) * factor
            if cfg.enable_chunked_prefill is False:
                budget = max(budget, length) if length is not None else None
            if budget is not None and length is not None:
                budget = min(requests * length, budget)
            tokens.add(budget)
        if cfg.max_num_seqs is None:
            seqs.add(min(requests, budget) if budget is not None else requests)
    if cfg.max_num_batched_tokens is None and None not in tokens:
        out.append(
            Default(
                "max_num_batched_tokens",
                tuple(sorted(tokens)),
                f"not given: vLLM {version}'s default for vllm serve {where}"
                + (
                    f", {BATCHED_DP_MOE_TOKENS} under batched DP MoE (--all2all-backend {cfg.all2all_backend}, "
                    "--enable-expert-parallel, -dp > 1)"
                    if batched_dp
                    else ""
                )
                + (", doubled by --performance-mode throughput" if factor == 2 else "")
                + (", at least max_model_len without chunked prefill" if cfg.enable_chunked_prefill is False else "")
                + (", at most max_num_seqs * max_model_len" if length is not None else ""),
            )
        )
    if cfg.max_num_seqs is None:
        out.append(
            Default("max_num_seqs", tuple(sorted(seqs)), f"not given: vLLM {version}'s default for vllm serve {where}")
        )
    return out


def run_check(
    cfg: ServeConfig,
    engine: str,
    version: str,
    model: ModelFacts | dict | None = None,
    paths=("spec",),
    options: Options | None = None,
    gpu: str | None = None,
    num_sms: int | None = None,
) -> CheckOutcome:
    """Prove every obligation of ``paths`` that applies to ``engine==version`` under the flags' pins.

    Values the user did not give and vLLM defaults (``max_num_batched_tokens``, ``max_num_seqs``)
    are checked over every default of that release (one per GPU tier, or the ``gpu``'s), and the
    answer says so. A list-valued flag (``--cudagraph-capture-sizes``) is checked member by member.
    """
    options = options or Options()
    if isinstance(model, ModelFacts) and cfg.hf_overrides is not None:
        _refuse_overridden_fields(cfg.hf_overrides, model)
    _refuse_too_long(cfg, model, engine, version)
    if cfg.tp % cfg.dcp and "--prefill-context-parallel-size" not in cfg.origin:
        # vllm/config/parallel.py (ParallelConfig validation): DCP reuses the TP ranks when PCP is off
        raise CheckError(
            f"-dcp {cfg.dcp} does not divide -tp {cfg.tp}: vLLM refuses the line at startup "
            f"(tp_size={cfg.tp} must be divisible by dcp_size={cfg.dcp}, vllm/config/parallel.py); "
            "decode context parallelism runs on the tensor-parallel ranks, give -tp a multiple of -dcp"
        )
    if isinstance(model, dict):
        feats = ({"moe"} if model.get("num_experts") else set()) | ({"dsa_indexer"} if "index_topk" in model else set())
        model = ModelFacts("<dict>", dict(model), {k: k for k in model}, feats)
    len_default = None
    default_len = default_max_model_len(cfg, model) if cfg.max_model_len is None else None
    if default_len is not None:
        cfg.max_model_len = default_len  # vLLM's default max_model_len
        len_default = Default(
            "max_model_len",
            (cfg.max_model_len,),
            f"not given: vLLM's default, {model.path} "
            f"{model.fields['max_position_embeddings']} (a tokenizer_config.json model_max_length "
            "below it would lower it; give --max-model-len to check your own)",
        )
    pins = pins_for(cfg, model)
    gpu_row, gpu_sms, sms_source = resolve_gpu(gpu, version)
    defaults = batch_defaults(cfg, engine, version, gpu_row)
    choices: dict[str, tuple[int, ...]] = {d.param: d.values for d in defaults}
    hardware = ""
    if num_sms is not None:
        pins["num_sms"] = num_sms
        hardware = f"num_sms={num_sms} (--num-sms)"
    elif len(gpu_sms) == 1:
        pins["num_sms"] = gpu_sms[0]
        hardware = f"num_sms={gpu_sms[0]} ({gpu}: {sms_source})"
    elif gpu_sms:
        choices["num_sms"] = gpu_sms
        hardware = f"num_sms in {list(gpu_sms)} ({gpu}: {sms_source}; each checked, --num-sms N picks one)"
    elif gpu:
        hardware = f"no SM count for {gpu} in capproof's table: SM-count-sized workspaces need --num-sms N"
    else:  # vLLM reads the SM count from the device: every GPU of the table is checked, as for the batch defaults
        every = tuple(sorted({n for counts, _ in GPU_SMS.values() for n in counts}))
        choices["num_sms"] = every
        hardware = f"num_sms in {list(every)} (no --gpu: every GPU in capproof's table is checked)"
        defaults.append(
            Default(
                "num_sms",
                every,
                "not given: vLLM reads it from the GPU; every GPU in capproof's table "
                "("
                + ", ".join(f"{g} {'/'.join(map(str, c))}" for g, (c, _) in GPU_SMS.items())
                + "); give --gpu NAME or --num-sms N to check yours",
            )
        )
    if "max_num_seqs" in choices:
        choices["max_num_reqs"] = choices["max_num_seqs"]
    undetermined: dict[str, str] = {}
    if cfg.max_model_len is None:  # a failure at a length capproof picked is not one of this line
        undetermined["max_model_len"] = "--max-model-len N (" + (
            "--max-model-len auto: vLLM fits it to the GPU memory at startup)"
            if cfg.max_model_len_auto
            else f"not given: vLLM derives it from the model config: {model.max_len_caveat})"
            if isinstance(model, ModelFacts) and model.max_len_caveat
            else "not given: vLLM takes the model's max_position_embeddings, not known to capproof; or --model-config)"
        )
    if cfg.block_size is None:
        block = default_block_size(engine, version, gpu_row, model, cfg)
        if isinstance(block, Default):
            defaults.append(block)
            if len(block.values) == 1:
                pins["block_size"] = block.values[0]
            else:
                choices["block_size"] = block.values
        else:
            undetermined["block_size"] = f"--block-size N ({block})"
    if cfg.cudagraph_capture_sizes:
        choices["cudagraph_capture_size"] = tuple(cfg.cudagraph_capture_sizes)
        # vLLM's max_cudagraph_capture_size is the largest size it keeps, which depends on the token
        # budget; pinned only when that is known (otherwise every value is checked)
        if cfg.max_num_batched_tokens is not None:
            kept, _ = user_capture_sizes(
                cfg.cudagraph_capture_sizes, cfg.max_num_batched_tokens, cfg.num_speculative_tokens
            )
            if kept:
                pins["max_cudagraph_capture_size"] = kept[-1]
    features = set(model.features) if model else set()
    if _env_flag(cfg.env, "VLLM_MLA_DISABLE"):
        features.discard("mla")  # vllm/config/model.py use_mla: the env switch turns MLA off
    if cfg.kv_cache_dtype in DSA_CACHE_DTYPES:
        features.add("dsa_indexer")
    if cfg.kv_cache_dtype in ULTRAQUANT_CACHE_DTYPES:
        features.add("ultraquant")
    if cfg.num_speculative_tokens > 0:
        features.add("spec_decode")
    if not cfg.cudagraph_capture_sizes:
        features.add("default_capture_sizes")
    else:
        features.add("user_capture_sizes")
    needs: list[str] = []
    derived: list[str] = []
    method_unknown: str | None = None
    if cfg.num_speculative_tokens > 0 and engine in ("vllm", "vllm-ascend"):
        from .speculative import infer_method

        inferred = infer_method(cfg.speculative_method, cfg.speculative_model)
        if inferred.method is None:
            needs.append(inferred.how)
            method_unknown = inferred.how
        else:
            if inferred.method != cfg.speculative_method:
                derived.append(f"speculative method {inferred.method}: {inferred.how}")
            cfg = dataclasses.replace(cfg, speculative_method=inferred.method)
    method = _drafting_method(cfg)
    if cfg.num_speculative_tokens > 0 and method is not None:
        features.add("drafting_slots")
        if method_unknown is not None:
            # the given method is what vLLM may replace by one it detects from the draft's config
            undetermined["method"] = method_unknown
        else:
            pins["method"] = method
    if cfg.num_speculative_tokens > 0 and cfg.speculative_method in ("dflash", "dspark"):
        features.add("dflash")
        # the drafter's query rows per request are K + query_extra (spec/vllm_0_33_dflash_dummy_runs.py)
        if cfg.speculative_method == "dflash":
            pins["query_extra"] = 1
        else:
            undetermined["query_extra"] = (
                "the DSpark draft model's sample_from_anchor (its config.json; True: K query rows per "
                "request, False: 1 + K): give a DFlash method or check the draft's config"
            )
        if _adaptive_profiling_runs(cfg):
            features.add("adaptive_verification")
    if cfg.cudagraph_mode == "FULL":
        features.add("cudagraph_full")
    v2_runner, why_runner = v2_runner_pin(cfg)
    if v2_runner is None:
        undetermined["v2_runner"] = f"VLLM_USE_V2_MODEL_RUNNER=1 or 0 (which model runner vLLM picks: {why_runner})"
    else:
        pins["v2_runner"] = v2_runner
    if v1_runner_possible(cfg):
        features.add("v1_runner")
    if cfg.attention_backend == "FLASHINFER":
        features.add("flashinfer_backend")
    if cfg.cudagraph_capture_sizes or cfg.dp > 1:
        features.add("extra_graph_padding")
    seqs = cfg.max_num_seqs if cfg.max_num_seqs is not None else max(choices.get("max_num_seqs", (0,))) or None
    tokens = (
        cfg.max_num_batched_tokens
        if cfg.max_num_batched_tokens is not None
        else max(choices.get("max_num_batched_tokens", (0,))) or None
    )
    checked, used = check_all(
        engine, version, pins, choices, features, model, seqs, tokens, paths, options, absent=ABSENT
    )
    unused = []
    for flag in cfg.origin:
        if flag in _PARSING_FLAGS or flag == "--max-model-len" and cfg.max_model_len_auto:
            continue
        params = FLAG_PARAMS.get(flag, ())
        if (
            flag == "--kv-cache-dtype"
            and cfg.kv_cache_dtype in DSA_CACHE_DTYPES
            or flag in ("--speculative-config", "--spec-tokens", "--spec-method", "--spec-model")
        ):
            params = (*params, f"feature:{FLAG_FEATURES[flag]}")
        if flag == "--kv-cache-dtype" and cfg.kv_cache_dtype in ULTRAQUANT_CACHE_DTYPES:
            params = (*params, "feature:ultraquant")
        if flag in ("--speculative-config", "--spec-method", "--spec-model"):
            params = (
                *params,
                "method",
                "query_extra",
                "feature:dflash",
                "feature:drafting_slots",
                "feature:adaptive_verification",
            )
        if flag == "--compilation-config" and cfg.cudagraph_mode == "FULL":
            params = (*params, "feature:cudagraph_full")
        if flag == "--enforce-eager":
            params = (*params, "feature:adaptive_verification")
        if flag in ("--enable-dbo", "--distributed-executor-backend", "--pipeline-parallel-size"):
            params = (*params, "feature:v1_runner")
        if flag in ("--speculative-config", "--spec-method", "--spec-model"):
            params = (*params, "feature:v1_runner")
        if flag == "--attention-backend" and cfg.attention_backend == "FLASHINFER":
            params = (*params, "feature:flashinfer_backend")
        if flag == "--cudagraph-capture-sizes" or flag == "--compilation-config" and cfg.cudagraph_capture_sizes:
            params = (*params, "feature:extra_graph_padding", "feature:user_capture_sizes")
        if not any(p in used for p in params):
            unused.append(flag)
    used_defaults = [d for d in defaults + ([len_default] if len_default else []) if d.param in used]
    uncovered = uncovered_inventory(engine, version)
    unjudged = backend_buffers_without_verdict(cfg.attention_backend, uncovered)
    if unjudged:  # the user picked a backend whose own pre-allocated buffers nothing checks
        needs.append(
            f"a verdict on the {len(unjudged)} pre-allocated buffers of the chosen --attention-backend "
            f"{cfg.attention_backend} that no obligation checks ({', '.join(unjudged[:3])}"
            + (", …" if len(unjudged) > 3 else "")
            + "): capproof cannot call this line safe"
        )
    if cfg.num_speculative_tokens and _gated_delta_net(model):
        # corpus C5: the GDN kernels read ssm_state_indices at num_accepted_tokens - 1, -1 on a padding
        # or stale row with 0 accepted tokens; the fixes (vllm-project/vllm#50021, #48475) are not
        # merged, and no obligation models the read
        needs.append(
            "a verdict on the gated-delta-net state index read at num_accepted_tokens - 1 under speculative "
            "decoding (corpus C5: -1 on a row with no accepted token; vllm-project/vllm#50021 and #48475 not "
            f"merged in {DISPLAY.get(engine, engine)} {version}; vllm/third_party/flash_linear_attention/ops/fused_recurrent.py in 0.33.0): "
            "no obligation models it, so capproof cannot call this line safe"
        )
    note = ""
    if not uncovered and engine in ("vllm", "vllm-ascend") and not os.path.exists(inventory_path(engine, version)):
        from ...inventory import releases

        have = [r for r in releases() if r.startswith("vllm-")]  # the vLLM inventories (not SGLang's)
        note = (
            f"capproof's buffer inventory is for {', '.join(have) or 'no release'} (proofs/inventory/): the pre-allocated "
            f"buffers of {engine} {version} are not listed, so only the obligations above were checked"
        )
    outcome = CheckOutcome(
        engine,
        version,
        checked,
        used_defaults,
        unused,
        {k: v for k, v in cfg.env.items() if k not in ENV_READ},
        model,
        uncovered,
        note,
        hardware,
        needs,
        derived,
        display=DISPLAY.get(engine, engine),
        releases=VLLM_VERSIONS if engine == "vllm" else (),
        undetermined=undetermined,
    )
    if gpu and not gpu_sms and num_sms is None:  # --gpu named, but capproof has no SM count for it
        for c in outcome.checked:
            if c.needs == NEED_GPU:
                c.needs = f"--num-sms N ({gpu}'s SM count is not in capproof's table)"
    outcome.notes = deployment_notes(outcome, cfg)
    if cfg.max_model_len is not None and not len_default:  # a length the user chose: suggest a nearby one that holds
        for c in outcome.failures:
            c.nearby = nearby_max_model_len(c)
    if cfg.max_num_seqs is not None:  # a request limit the user chose: a nearby one that holds
        for c in outcome.failures:
            c.nearby_seqs = nearby_max_num_seqs(c, cfg.max_num_seqs)
    return outcome


#: Architectures whose linear-attention layers are gated delta nets (vLLM's ``fla`` kernels), and
#: the config keys that show one (Qwen3-Next, Qwen3.5).
GATED_DELTA_NET_ARCHITECTURES = frozenset(
    {"Qwen3NextForCausalLM", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration"}
)
GATED_DELTA_NET_KEYS = ("linear_num_value_heads", "linear_conv_kernel_dim")


def _gated_delta_net(model: ModelFacts | None) -> bool:
    """The model config shows gated-delta-net layers (an architecture or a config key of
    :data:`GATED_DELTA_NET_ARCHITECTURES` / :data:`GATED_DELTA_NET_KEYS`)."""
    if model is None or "hybrid_mamba" not in model.features:
        return False
    return bool(set(model.architectures) & GATED_DELTA_NET_ARCHITECTURES) or (
        model.fields.get("hybrid_mamba") in GATED_DELTA_NET_KEYS
    )


def backend_buffers_without_verdict(backend: str | None, uncovered: list[str]) -> list[str]:
    """Inventory entries (``file::Owner.attr``) with no verdict that belong to the attention backend
    ``backend`` names (vLLM's enum name; its module is the lower-cased name under
    ``vllm/v1/attention/backends/``, ``mla/`` included, and its per-architecture variant such as
    ``flashinfer_mla_sparse_sm90.py``). [] when no backend was chosen."""
    if not backend:
        return []
    import re

    own = re.compile(re.escape(backend.lower()) + r"(_sm\d+)?")
    out = []
    for entry in uncovered:
        path = entry.split("::", 1)[0]
        if path.startswith("vllm/v1/attention/backends/") and own.fullmatch(
            path.rsplit("/", 1)[-1].removesuffix(".py")
        ):
            out.append(entry)
    return out


#: Environment variables check-config interprets (the others are listed as not read).
ENV_READ = ("VLLM_MLA_DISABLE", "VLLM_ALLOW_LONG_MAX_MODEL_LEN", "VLLM_USE_V2_MODEL_RUNNER")


def _env_flag(env: dict[str, str], name: str) -> bool:
    """A vLLM boolean environment switch as vLLM 0.33.0 ``vllm/envs.py`` reads it
    (``bool(int(value))``); a value that is not an integer is False here (vLLM refuses it)."""
    try:
        return bool(int(env.get(name, "0")))
    except ValueError:
        return False


#: FLASH_ATTN prefers larger pages for some head sizes (vLLM 0.33.0
#: ``vllm/v1/attention/backends/flash_attn.py:300-378``: 64 for SM90 FP8 KV at head size 512,
#: ``FA4_HD256_PAGE_SIZE`` 128 for FA4's head-size-256 kernel), which depends on the FA version
#: the GPU runs: both are added as candidates for those head sizes (and an unknown one).
FLASH_ATTN_LARGE_PAGES = {256: (128,), 512: (64,)}


def default_block_size(
    engine: str, version: str, gpu: str | None, model: ModelFacts | None, cfg: ServeConfig
) -> Default | str:
    """The KV-cache block size(s) vLLM picks when ``--block-size`` is not given, or why capproof
    cannot say (a string: the reason, for "give --block-size N").

    vLLM 0.33.0 (``Platform.update_block_size_for_backend``, ``vllm/platforms/interface.py:750-794``)
    starts from ``CacheConfig.DEFAULT_BLOCK_SIZE`` and takes the selected attention backend's
    ``get_preferred_block_size``; the backend is the first of ``_get_backend_priorities`` (per GPU
    and MLA/sparse/dense) that validates for the model, which capproof cannot decide on a CPU, so
    every candidate's preferred size is returned (table :mod:`.block_defaults`, generated by
    running those functions from the wheel). Not derived: other releases (only 0.33.0's wheel is
    run), vLLM-Ascend (NPU backends), hybrid Mamba models (phase 2 aligns the block size to the
    Mamba state), ``--attention-backend``/``--attention-config`` (a backend the user picks),
    ``--kv-cache-dtype-skip-layers`` (phase 3)."""
    from .block_defaults import PREFERRED_BLOCK_SIZES

    if engine != "vllm" or version != VLLM_VERSION:
        return (
            f"vLLM's default block size is derived for vLLM {VLLM_VERSION} only, whose wheel capproof runs; "
            f"{engine} {version} picks its own"
        )
    if model is not None and "hybrid_mamba" in model.features:
        return "a hybrid Mamba model: vLLM aligns the block size to the Mamba state size at startup"
    chosen = [f for f in ("--attention-backend", "--attention-config") if f in cfg.origin]
    if chosen:
        return f"{chosen[0]} given: capproof's table holds the block sizes of the backends vLLM selects itself"
    if "--kv-cache-dtype-skip-layers" in cfg.origin:
        return "--kv-cache-dtype-skip-layers: vLLM aligns the block size across KV dtypes at startup"
    if model is None:
        kinds = ("dense", "mla", "mla_sparse")
        what = "any attention (the model's config.json is not known)"
    elif "mla" in model.features:
        kinds = ("mla_sparse",) if "dsa_indexer" in model.features else ("mla",)
        what = "sparse MLA (DSA)" if kinds == ("mla_sparse",) else "MLA"
    else:
        kinds, what = ("dense",), "standard attention"
    gpus = [gpu] if gpu in PREFERRED_BLOCK_SIZES else list(PREFERRED_BLOCK_SIZES)
    per_backend: dict[str, set[int]] = {}
    for g in gpus:
        for kind in kinds:
            for backend, size in PREFERRED_BLOCK_SIZES[g][kind]:
                if not isinstance(size, int):
                    return f"the block size vLLM's {backend} backend prefers is not known on a CPU ({size})"
                per_backend.setdefault(backend, set()).add(size)
    head = None
    if model is not None:
        heads, hidden = model.values.get("num_attention_heads"), model.values.get("hidden_size")
        head = model.values.get("head_dim") or (hidden // heads if heads and hidden else None)
    if "dense" in kinds and "FLASH_ATTN" in per_backend:
        extra = (
            {s for sizes in FLASH_ATTN_LARGE_PAGES.values() for s in sizes}
            if head is None
            else set(FLASH_ATTN_LARGE_PAGES.get(head, ()))
        )
        per_backend["FLASH_ATTN"] |= extra
    values = tuple(sorted({s for sizes in per_backend.values() for s in sizes}))
    where = gpu if gpu in PREFERRED_BLOCK_SIZES else "any GPU (give --gpu to narrow)"
    return Default(
        "block_size",
        values,
        f"--block-size not given: vLLM {version}'s default for {what} on {where}, the block size each attention "
        "backend it may select prefers ("
        + ", ".join(f"{b} {'/'.join(map(str, sorted(v)))}" for b, v in per_backend.items())
        + "; vllm/platforms/interface.py update_block_size_for_backend); give --block-size to check yours",
    )


#: ``config.json`` keys check-config reads (:data:`MODEL_FIELDS`, the composite scopes, the length
#: and RoPE keys of vLLM's default ``max_model_len``, the hybrid-Mamba markers).
READ_MODEL_KEYS = frozenset(
    {k for names in MODEL_FIELDS.values() for k in names}
    | set(TEXT_CONFIG_KEYS)
    | set(OTHER_MAX_LEN_KEYS)
    | set(HYBRID_MAMBA_KEYS)
    | {"thinker_config", "rope_scaling", "rope_parameters", "architectures"}
    | {"model_type", "kv_lora_rank", "compress_ratios", "head_dim", "is_causal"}
)


def _refuse_too_long(cfg: ServeConfig, model: ModelFacts | dict | None, engine: str, version: str) -> None:
    """A ``--max-model-len`` above the model's length, which vLLM refuses at startup, is a
    CheckError (one line): vLLM's ``_get_and_verify_max_len`` (``vllm/config/model.py``, every
    modelled release) raises ``ValueError: User-specified max_model_len (N) is greater than the
    derived max_model_len`` unless ``VLLM_ALLOW_LONG_MAX_MODEL_LEN`` is 1 or true (``vllm/envs.py``).
    The derived length is ``max_position_embeddings`` unless :func:`max_len_caveat` names another
    rule (a RoPE factor, another length key): then nothing is refused here, nor for a config with a
    RoPE factor on releases before 0.33.0 (their rules for it differ). A length vLLM accepts
    only with the variable set is checked as given when the line sets it."""
    if not isinstance(model, ModelFacts) or model.max_len_caveat or cfg.max_model_len is None:
        return
    if model.rope_factor and not (engine == "vllm" and version == VLLM_VERSION):
        return  # before vllm-project/vllm#56446 a RoPE factor could raise the derived length
    longest = model.values.get("max_position_embeddings")
    allowed = cfg.env.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "0").strip().lower() in ("1", "true")
    if longest and cfg.max_model_len > longest and not allowed:
        raise CheckError(
            f"--max-model-len {cfg.max_model_len} is above the model's length, {longest} "
            f"({model.fields.get('max_position_embeddings')} of {model.path}): vLLM {version} refuses the line at "
            f"startup (_get_and_verify_max_len, vllm/config/model.py); give --max-model-len {longest} or less, or "
            "prefix the line with VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 to run beyond it"
        )


def _refuse_overridden_fields(text: str, model: ModelFacts) -> None:
    """``--hf-overrides`` that sets a config field check-config reads from ``--model-config``: vLLM
    serves the overridden value, capproof would check the file's, so it is a CheckError (one line).
    Text that is not a JSON object is left to vLLM (it refuses it at startup)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return
    stack, named = [data], []
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            named += [k for k in item if k in READ_MODEL_KEYS]
            stack += list(item.values())
    if named:
        raise CheckError(
            f"--hf-overrides sets {', '.join(sorted(set(named)))}, which capproof reads from the model config "
            f"{model.path}: vLLM would serve the overridden value; apply the override to a config.json "
            "and pass it with --model-config instead"
        )


def _adaptive_profiling_runs(cfg: ServeConfig) -> bool:
    """Whether vLLM 0.33.0's V2 runner makes adaptive verification's profiling dummy runs after
    CUDA-graph capture for this line (docs/findings.md, finding 11): ``enable_adaptive_verification``
    on, graphs captured (no ``--enforce-eager``, ``cudagraph_mode`` not ``NONE``), one data-parallel
    rank (with more, ``dp_sync_state.num_reqs`` bounds the drafter's requests: not modelled), and
    the V2 model runner not turned off by ``VLLM_USE_V2_MODEL_RUNNER`` (``vllm/config/vllm.py:748-767``;
    its other reasons to fall back to V1 are not read: the obligation then says more than the line
    reaches)."""
    return (
        cfg.adaptive_verification
        and not cfg.enforce_eager
        and (cfg.cudagraph_mode or "").upper() != "NONE"
        and cfg.dp == 1
        and not _v2_runner_turned_off(cfg)
    )


def _v2_runner_turned_off(cfg: ServeConfig) -> bool:
    """Whether ``VLLM_USE_V2_MODEL_RUNNER`` is given and not true as vLLM 0.33.0 reads it
    (``vllm/envs.py`` ``maybe_convert_bool``: ``bool(int(value))``): ``0``, or a value vLLM refuses
    (``false``: not an integer)."""
    given = cfg.env.get("VLLM_USE_V2_MODEL_RUNNER")
    if given is None:
        return False
    try:
        return not bool(int(given))
    except ValueError:
        return True


def v2_runner_unsupported(cfg: ServeConfig) -> list[str]:
    """The features of this line the V2 model runner lacks, as vLLM 0.33.0 lists them
    (``VllmConfig._get_v2_model_runner_unsupported_features``, ``vllm/config/vllm.py:3053-3087``):
    pipeline parallelism under the ``external_launcher`` backend, the ``suffix``/``custom_class``
    speculative methods, parallel drafting outside DFlash/DSpark, a heterogeneous-vocabulary draft
    model, dual batch overlap (``--enable-dbo``)."""
    method = cfg.speculative_method if cfg.num_speculative_tokens > 0 else None
    found = []
    if cfg.distributed_executor_backend == "external_launcher" and cfg.pp > 1:
        found.append("pipeline parallelism with external_launcher")
    if method in ("suffix", "custom_class"):
        found.append(f"speculative method '{method}'")
    if method is not None and cfg.parallel_drafting and method not in ("dflash", "dspark"):
        found.append("parallel drafting for EAGLE speculative decoding")
    if method is not None and cfg.heterogeneous_vocab:
        found.append("heterogeneous-vocabulary draft models")
    if cfg.enable_dbo:
        found.append("dual batch overlap")
    return found


def _forces_v2(cfg: ServeConfig) -> bool:
    """Whether the line gives a feature that makes vLLM 0.33.0 run the V2 runner whatever
    ``VLLM_USE_V2_MODEL_RUNNER`` says (watermarking; HiSparse, ``vllm/config/vllm.py:731-745``).
    HiSparse is an attention-config field capproof does not parse: a line with
    ``--attention-config`` counts as possibly forcing it."""
    return any(f in cfg.origin for f in ("--watermark", "--watermark-config", "--attention-config"))


def v1_runner_possible(cfg: ServeConfig) -> bool:
    """Whether vLLM 0.33.0 may run this line on the V1 model runner (``VllmConfig.use_v2_model_runner``,
    ``vllm/config/vllm.py:730-767``). ``VLLM_USE_V2_MODEL_RUNNER`` set decides (``bool(int(value))``);
    unset, V1 runs when the line has a feature the V2 runner lacks (:func:`v2_runner_unsupported`).
    What forces V2 (HiSparse, watermarking) is not taken into account here: V1 then counts as
    possible, so more obligations apply."""
    if cfg.env.get("VLLM_USE_V2_MODEL_RUNNER") is not None:
        return _v2_runner_turned_off(cfg)  # (a value vLLM refuses at startup counts as possible)
    return bool(v2_runner_unsupported(cfg))


def v2_runner_pin(cfg: ServeConfig) -> tuple[int | None, str]:
    """``(1, why)`` when vLLM 0.33.0 runs this line on the V2 model runner, ``(0, why)`` when on V1,
    ``(None, why)`` when the line does not decide it (``vllm/config/vllm.py:730-767``): the variable
    ``VLLM_USE_V2_MODEL_RUNNER`` decides when set, except that watermarking and HiSparse force V2;
    unset, V2 runs unless the line has a feature it lacks. Triton is taken as present (a CUDA
    platform): without it vLLM runs V1."""
    if cfg.env.get("VLLM_USE_V2_MODEL_RUNNER") is not None:
        if not _v2_runner_turned_off(cfg):
            return 1, "VLLM_USE_V2_MODEL_RUNNER is set true"
        if _forces_v2(cfg):
            return None, (
                "whether the line turns on watermarking or HiSparse, which run the V2 model runner "
                "despite VLLM_USE_V2_MODEL_RUNNER=0"
            )
        return 0, "VLLM_USE_V2_MODEL_RUNNER is set false"
    unsupported = v2_runner_unsupported(cfg)
    if unsupported and not _forces_v2(cfg):
        return 0, "the V2 model runner lacks " + ", ".join(unsupported)
    if unsupported:
        return None, (
            "whether the line turns on watermarking or HiSparse (the V2 model runner) or runs V1 for "
            + ", ".join(unsupported)
        )
    return 1, "vLLM 0.33.0's default model runner on CUDA (VLLM_USE_V2_MODEL_RUNNER unset)"


def _drafting_method(cfg: ServeConfig) -> int | None:
    """The proposer kind of the inventory's drafting-slot families (spec/vllm_0_33_buffers.py
    ``_net_slots``): 0 EAGLE/EAGLE3/MTP, 1 P-EAGLE (EAGLE with ``parallel_drafting``), 2 draft
    model, 3 PARD (draft model with ``parallel_drafting``); None when the method is not given or is
    another kind (vLLM 0.33.0 ``vllm/config/speculative.py``: ``EagleModelTypes``, ``MTPModelTypes``)."""
    m = cfg.speculative_method
    if m in ("eagle", "eagle3", "mtp") or (m or "").endswith("_mtp"):
        return 1 if cfg.parallel_drafting else 0
    if m == "draft_model":
        return 3 if cfg.parallel_drafting else 2
    return None


def deployment_notes(outcome: CheckOutcome, cfg: ServeConfig) -> list[str]:
    """What the answer rests on that only the ``vllm serve`` line shows: ``max_model_len`` or
    ``block_size`` left free, the CUDA-graph sizes vLLM keeps from the user's, the kernel block
    size a DSA KV-cache dtype pins. One line each, without indentation."""
    lines: list[str] = []
    free = {p for c in outcome.applicable for p in c.free}
    if getattr(cfg, "max_model_len", 0) is None and "max_model_len" in free:
        why = (
            "--max-model-len auto: vLLM fits it to the GPU memory at startup"
            if getattr(cfg, "max_model_len_auto", False)
            else f"--max-model-len not given and {outcome.model.max_len_caveat}"
            if outcome.model is not None and outcome.model.max_len_caveat
            else "--max-model-len not given"
        )
        lines.append(f"rests on no max_model_len: {why}, left symbolic over each obligation's domain")
    sizes = getattr(cfg, "cudagraph_capture_sizes", None)
    if sizes and getattr(cfg, "max_num_batched_tokens", None) is not None:
        kept, dropped = user_capture_sizes(sizes, cfg.max_num_batched_tokens, cfg.num_speculative_tokens)
        lines.append(
            f"note: vLLM {outcome.version} captures CUDA graphs of {kept} tokens from your sizes {sizes}"
            + (f" (drops {dropped}: above max_num_batched_tokens)" if dropped else "")
            + (
                f" (rounded up to multiples of 1 + num_speculative_tokens = {1 + cfg.num_speculative_tokens})"
                if cfg.num_speculative_tokens
                else ""
            )
            + f"; max_cudagraph_capture_size={kept[-1] if kept else 'none'}"
        )
    if getattr(cfg, "kv_cache_dtype", None) in DSA_CACHE_DTYPES:
        lines.append(
            f"note: --kv-cache-dtype {cfg.kv_cache_dtype} (DSA on CUDA): kernel_block_size pinned to {DSA_CUDA_KERNEL_BLOCK_SIZE}"
        )
    if getattr(cfg, "block_size", 0) is None and "block_size" in free:
        why = outcome.undetermined.get("block_size", "")
        lines.append(
            "note: --block-size not given"
            + (f" and not derived ({why.partition('(')[2].rstrip(')')})" if why else "")
            + ": every block size of each obligation's domain is checked; a failure at one is not counted as will fail"
        )
    return lines


@functools.cache
def vocabulary() -> frozenset[str]:
    """Parameter names of a vLLM deployment: what :func:`pins_for` and :func:`run_check` pin
    (:data:`~capproof.engines.checkconfig.CONFIG_PARAMS`, the parameters of :data:`FLAG_PARAMS`)
    and the config name of every ``vllm serve`` flag of the pinned release (``--max-model-len`` ->
    ``max_model_len``)."""
    from .flags import serve_flags

    flagged = {p for params in FLAG_PARAMS.values() for p in params if not p.startswith("feature:")}
    dests = {f.lstrip("-").replace("-", "_") for f in serve_flags(VLLM_VERSION) if f.startswith("--")}
    return frozenset(CONFIG_PARAMS | flagged | dests | {"max_num_reqs"})
