"""``capproof check-config``: run every applicable obligation of spec/ for one deployment.

The serve flags are pinned (``max_model_len``, ``block_size``, ``dcp``, ``num_speculative_tokens``,
… — spec/ names parameters like vLLM's config fields); batch parameters stay symbolic; bounds the
deployment implies on the batch (``num_decodes <= max_num_seqs``, ``num_decode_tokens <=
max_num_batched_tokens``) are added as assumptions. An obligation applies when its ``engine`` is
the engine checked and its ``versions`` contain the version checked; a pin outside an
obligation's declared domain makes that obligation not applicable (reported, not run).

Outcome: ``safe`` only when every applicable obligation is proved; ``will fail`` when one has a
counterexample (its values and the smallest triggering batch are shown); anything unknown,
vacuous or in error is reported as undecided, never as safe.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
from dataclasses import dataclass, field

from packaging.version import InvalidVersion, Version

from ..domain import MAX_VECTOR_SIZE, Choice, Range, Vector
from ..loader import load
from ..obligation import Obligation
from ..prover import prove_obligation
from ..verdict import ObligationResult, Options, Verdict
from .sglang.flags import SGLANG_VERSION
from .sglang.launch import LaunchConfig
from .vllm.flags import BATCH_DEFAULTS, VLLM_VERSION, VLLM_VERSIONS
from .vllm.serve import ServeConfig, user_capture_sizes

__all__ = [
    "CheckError",
    "parse_engine",
    "pins_for",
    "run_check",
    "CheckOutcome",
    "ModelFacts",
    "read_model_config",
    "model_facts",
    "resolve_model",
    "KNOWN_MODELS",
    "batch_defaults",
    "GPU_SMS",
    "SUPPORTED_VLLM",
    "SUPPORTED_VLLM_ASCEND",
]

#: vLLM releases whose sizing formulas spec/ describes (bisected on PyPI wheels: #39324 first in
#: 0.21.0, #50302 in 0.27.0, #50823 in 0.28.0).
SUPPORTED_VLLM = (Version("0.18.0"), Version(VLLM_VERSION))
#: vLLM-Ascend releases the corpus covers (C3: vllm-project/vllm-ascend#14024 on main, #14114 its
#: v0.26.0rc backport).
SUPPORTED_VLLM_ASCEND = (Version("0.18.0"), Version("0.33.0"))

#: Parameters that describe the deployment (pinned from flags when given); every other parameter
#: of an obligation is part of the batch and stays symbolic.
CONFIG_PARAMS = {
    "max_model_len",
    "block_size",
    "dcp",
    "tp",
    "num_speculative_tokens",
    "max_num_seqs",
    "max_num_batched_tokens",
    "kernel_block_size",
    "index_topk",
    "num_experts",
    "top_k",
    "hidden_size",
    "max_cudagraph_capture_size",
    "method",
    "num_sms",
}


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


class CheckError(ValueError):
    """Bad ``--engine`` or ``--model-config`` (one line)."""


def parse_engine(text: str) -> tuple[str, str]:
    """``vllm``, ``vllm==0.23.0`` or ``vllm-ascend==0.25.0`` -> (engine, version).

    vLLM's default version is the pinned one; vLLM-Ascend (a plugin run by the same ``vllm serve``
    command line) needs its version. Raises CheckError for anything else.
    """
    name, sep, version = text.partition("==")
    name = name.strip().lower()
    if name == "sglang":
        version = version.strip() if sep else SGLANG_VERSION
        if version != SGLANG_VERSION:
            raise CheckError(f"--engine {text!r}: capproof models sglang {SGLANG_VERSION} only")
        return name, version
    if name not in ("vllm", "vllm-ascend"):
        raise CheckError(
            f"--engine {text!r}: supported are vllm[==VERSION], vllm-ascend==VERSION and sglang[=={SGLANG_VERSION}]"
        )
    if name == "vllm-ascend" and not sep:
        raise CheckError(f"--engine {text!r}: give the vLLM-Ascend release, e.g. vllm-ascend==0.25.0")
    version = version.strip() if sep else VLLM_VERSION
    try:
        parsed = Version(version)
    except InvalidVersion:
        raise CheckError(f"--engine {text!r}: {version!r} is not a version") from None
    lo, hi = SUPPORTED_VLLM if name == "vllm" else SUPPORTED_VLLM_ASCEND
    if not (lo <= parsed <= hi):
        raise CheckError(f"--engine {text!r}: capproof models {name} {lo}..{hi}")
    # the release's own spelling (0.33 and v0.33.0 are 0.33.0): its flag table, batch defaults and
    # inventory are keyed by it
    return name, next((v for v in VLLM_VERSIONS if Version(v) == parsed), version)


#: The ``config.json`` keys vLLM reads for each value, in vLLM's order (the first present wins):
#: ``CONFIG_FIELD_ALIASES`` of vLLM 0.33.0 ``vllm/transformers_utils/config.py`` (used by
#: ``ModelArchConfigConvertorBase.get_num_experts``/``get_num_experts_per_token``/
#: ``get_total_num_kv_heads``), plus the plain ``hidden_size``, ``num_attention_heads``,
#: ``max_position_embeddings`` and DSA's ``index_topk``. A real-engine test compares the aliases
#: with the wheel's own table.
MODEL_FIELDS: dict[str, tuple[str, ...]] = {
    "num_experts": ("num_experts", "moe_num_experts", "n_routed_experts", "num_local_experts"),
    "top_k": ("num_experts_per_tok", "num_experts_per_token", "top_k_experts", "moe_topk", "moe_top_k", "top_k"),
    "num_kv_heads": (
        "n_head_kv",
        "num_kv_heads",
        "num_key_value_heads",
        "multi_query_group_num",
        "num_attention_groups",
    ),
    "num_attention_heads": ("num_attention_heads",),
    "hidden_size": ("hidden_size",),
    "head_dim": ("head_dim",),
    "index_topk": ("index_topk",),
    "max_position_embeddings": ("max_position_embeddings",),
}
#: Where a composite (multimodal) config keeps its language model's fields (``get_text_config``).
TEXT_CONFIG_KEYS = ("text_config", "llm_config", "language_config")


@dataclass
class ModelFacts:
    """Values read from a ``config.json``: ``values`` by capproof parameter name, ``fields`` the key
    each came from (e.g. ``{"num_experts": "text_config.num_experts"}``), ``features`` the model
    features the config shows (``moe``, ``dsa_indexer``)."""

    path: str
    values: dict[str, int] = field(default_factory=dict)
    fields: dict[str, str] = field(default_factory=dict)
    features: set[str] = field(default_factory=set)
    #: ``architectures`` of the config (the engines pick per-architecture defaults from it).
    architectures: tuple[str, ...] = ()
    #: Why ``max_position_embeddings`` is not vLLM's default ``max_model_len`` for this config (another
    #: length key or a RoPE factor changes it: :func:`max_len_caveat`); empty when it is.
    max_len_caveat: str = ""


#: ``config.json`` keys vLLM 0.33.0 takes the smallest of for the default ``max_model_len``
#: besides ``max_position_embeddings`` (``derive_max_model_len_and_key``,
#: ``vllm/transformers_utils/model_arch_config_convertor.py:374-402``).
OTHER_MAX_LEN_KEYS = (
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_target_positions",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)
#: RoPE types whose ``factor`` vLLM does not multiply into that default (``_get_and_verify_max_len``,
#: ``vllm/config/model.py:2597-2634``); longrope defaults to ``original_max_position_embeddings``.
ROPE_UNSCALED = ("su", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling")


def max_len_caveat(scope: dict, model_type: str = "") -> str:
    """Why vLLM's default ``max_model_len`` for a (text) config is not its ``max_position_embeddings``
    (vLLM 0.33.0 ``_get_and_verify_max_len``): another length key (the smallest wins), a RoPE
    ``factor`` it multiplies in (not for Gemma 3, whose length is already scaled), or longrope;
    "" when none applies."""
    other = [k for k in OTHER_MAX_LEN_KEYS if scope.get(k) is not None]
    if other:
        return f"config.json also has {other[0]} (vLLM takes the smallest length key)"
    for key in ("rope_scaling", "rope_parameters") if "gemma3" not in model_type else ():
        rope = scope.get(key)
        if not isinstance(rope, dict):
            continue
        params = (
            [p for p in rope.values() if isinstance(p, dict)]
            if rope and all(isinstance(p, dict) for p in rope.values())
            else [rope]
        )
        for p in params:
            kind = p.get("rope_type", p.get("type"))
            if kind == "longrope":
                return f"config.json {key} is longrope (vLLM defaults to original_max_position_embeddings)"
            if p.get("factor") not in (None, 1, 1.0) and kind not in ROPE_UNSCALED:
                return f"config.json {key} has {kind} factor {p.get('factor')} (vLLM multiplies max_position_embeddings by it)"
    return ""


def read_model_config(path: str, label: str = "--model-config") -> ModelFacts:
    """Sizing fields of a Hugging Face ``config.json`` as vLLM reads them (:data:`MODEL_FIELDS`).

    ``path`` is the file or a model directory holding it. A list-valued expert count takes its
    first entry and a list-valued top-k its maximum, as vLLM does; 0 experts means a dense model.
    Raises CheckError (one line, starting with ``label``) on unreadable or bad values.
    """
    if os.path.isdir(path):
        path = os.path.join(path, "config.json")
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as exc:
        raise CheckError(f"{label} {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise CheckError(f"{label} {path}: malformed JSON ({exc.msg} at line {exc.lineno})") from None
    except UnicodeDecodeError:
        raise CheckError(f"{label} {path}: not UTF-8 text (expected a config.json)") from None
    return model_facts(data, path, label)


def model_facts(data: object, path: str, label: str = "--model-config") -> ModelFacts:
    """:func:`read_model_config` on an already parsed ``config.json`` (``path`` names its source)."""
    if not isinstance(data, dict):
        raise CheckError(f"{label} {path}: expected a JSON object")
    scopes: list[tuple[str, dict]] = []
    for key in TEXT_CONFIG_KEYS:
        if isinstance(data.get(key), dict):
            scopes.append((key + ".", data[key]))
    if isinstance(data.get("thinker_config"), dict) and isinstance(data["thinker_config"].get("text_config"), dict):
        scopes.append(("thinker_config.text_config.", data["thinker_config"]["text_config"]))
    scopes.append(("", data))
    facts = ModelFacts(path)
    for param, names in MODEL_FIELDS.items():
        for prefix, scope in scopes:
            key = next((n for n in names if scope.get(n) is not None), None)
            if key is None:
                continue
            value = scope[key]
            if isinstance(value, list) and value and param in ("num_experts", "top_k"):
                value = value[0] if param == "num_experts" else max(value)
            if (
                isinstance(value, bool)
                or not isinstance(value, int)
                or value < 0
                or (value == 0 and param not in ("num_experts", "top_k"))
            ):
                raise CheckError(f"{label} {path}: {prefix}{key} must be a positive integer, got {value!r}")
            if value:
                facts.values[param] = value
                facts.fields[param] = prefix + key
            break
    if "max_position_embeddings" in facts.fields:
        prefix = facts.fields["max_position_embeddings"].rpartition(".")[0]
        scope = next(sc for pre, sc in scopes if pre == (prefix + "." if prefix else ""))
        facts.max_len_caveat = max_len_caveat(scope, str(data.get("model_type") or ""))
    if facts.values.get("num_experts"):
        facts.features.add("moe")
    if "index_topk" in facts.values:
        facts.features.add("dsa_indexer")
    text = next((sc for pre, sc in scopes if pre), data)  # vLLM's hf_text_config
    if uses_mla(text):
        facts.features.add("mla")
        facts.fields["mla"] = "model_type " + str(text.get("model_type"))
    archs = set(data.get("architectures") or [])
    facts.architectures = tuple(a for a in data.get("architectures") or [] if isinstance(a, str))
    hybrid_key = next((k for _, scope in scopes for k in HYBRID_MAMBA_KEYS if k in scope), None)
    if archs & HYBRID_MAMBA_ARCHITECTURES or hybrid_key:
        facts.features.add("hybrid_mamba")
        facts.fields["hybrid_mamba"] = "architectures" if archs & HYBRID_MAMBA_ARCHITECTURES else hybrid_key
    return facts


#: ``model_type`` values of the models vLLM 0.33.0 serves with MLA attention when their text config
#: has ``kv_lora_rank`` (``ModelArchConfigConvertorBase.is_deepseek_mla``,
#: ``vllm/transformers_utils/model_arch_config_convertor.py:294-330``); a real-engine test compares
#: this list with the wheel's function.
MLA_MODEL_TYPES = frozenset(
    {
        "axk1",
        "deepseek_v2",
        "deepseek_v3",
        "deepseek_v32",
        "deepseek_v4",
        "deepseek_v41",
        "dots3_note",
        "deepseek_mtp",
        "k3_dspark",
        "glm5_next",
        "glm5_next_text",
        "glm_moe_dsa",
        "glm4_moe_lite",
        "glm4_moe_lite_mtp",
        "kimi_k2",
        "kimi_linear",
        "longcat_flash",
        "pangu_ultra_moe",
        "pangu_ultra_moe_mtp",
        "bailing_hybrid",
        "bailing_hybrid_mtp",
        "bailing_hybrid_v3_mtp",
        "hy_v4",
        "hy_v4_mtp",
    }
)


def uses_mla(text_config: dict) -> bool:
    """Whether vLLM 0.33.0 serves a model with this (text) ``config.json`` with MLA attention
    (``ModelConfig.use_mla``): an MLA ``model_type`` (:data:`MLA_MODEL_TYPES`) with
    ``kv_lora_rank`` (or, for DeepSeek-V4's compressed layers, ``compress_ratios`` and
    ``head_dim``), and not a bidirectional (``is_causal: false``) variant."""
    if text_config.get("model_type") not in MLA_MODEL_TYPES or text_config.get("is_causal", True) is False:
        return False
    if text_config.get("compress_ratios"):
        return text_config.get("head_dim") is not None
    return text_config.get("kv_lora_rank") is not None


#: The ``config.json`` fields check-config reads, for models people serve by their Hugging Face
#: name (vLLM downloads the config; capproof does not go online). Transcribed from each model's
#: ``config.json`` on the Hugging Face Hub (the source URL is shown with the answer); only the keys
#: :func:`read_model_config` reads. A local directory or ``--model-config`` wins over this table.
_HF = "https://huggingface.co/{}/blob/main/config.json"
_DEEPSEEK_V3 = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "model_type": "deepseek_v3",
    "hidden_size": 7168,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "n_routed_experts": 256,
    "num_experts_per_tok": 8,
    "max_position_embeddings": 163840,
    "rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096},
    "kv_lora_rank": 512,
}
_DEEPSEEK_V32 = {
    **_DEEPSEEK_V3,
    "architectures": ["DeepseekV32ForCausalLM"],
    "model_type": "deepseek_v32",
    "index_topk": 2048,
}
_GLM_52 = {
    "architectures": ["GlmMoeDsaForCausalLM"],
    "model_type": "glm_moe_dsa",
    "hidden_size": 6144,
    "num_attention_heads": 64,
    "num_key_value_heads": 64,
    "n_routed_experts": 256,
    "num_experts_per_tok": 8,
    "index_topk": 2048,
    "kv_lora_rank": 512,
    "max_position_embeddings": 1048576,
    "rope_parameters": {"rope_theta": 8000000, "rope_type": "default"},
}
KNOWN_MODELS: dict[str, dict] = {
    "zai-org/GLM-5.2": _GLM_52,
    "zai-org/GLM-5.2-FP8": _GLM_52,
    "deepseek-ai/DeepSeek-V3.2": _DEEPSEEK_V32,
    "deepseek-ai/DeepSeek-V3.2-Exp": _DEEPSEEK_V32,
    "deepseek-ai/DeepSeek-V3.2-Speciale": _DEEPSEEK_V32,
    "deepseek-ai/DeepSeek-V3": _DEEPSEEK_V3,
    "deepseek-ai/DeepSeek-V3-0324": _DEEPSEEK_V3,
    "deepseek-ai/DeepSeek-V3.1": _DEEPSEEK_V3,
    "deepseek-ai/DeepSeek-V3.1-Terminus": _DEEPSEEK_V3,
    "deepseek-ai/DeepSeek-R1": _DEEPSEEK_V3,
    "deepseek-ai/DeepSeek-R1-0528": _DEEPSEEK_V3,
    "meta-llama/Llama-3.1-8B-Instruct": {
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 4096,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "max_position_embeddings": 131072,
        "rope_scaling": {"rope_type": "llama3", "factor": 8.0},
    },
    "meta-llama/Llama-3.1-70B-Instruct": {
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 8192,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "max_position_embeddings": 131072,
        "rope_scaling": {"rope_type": "llama3", "factor": 8.0},
    },
    "meta-llama/Llama-3.3-70B-Instruct": {
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 8192,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "max_position_embeddings": 131072,
        "rope_scaling": {"rope_type": "llama3", "factor": 8.0},
    },
    "Qwen/Qwen3-8B": {
        "architectures": ["Qwen3ForCausalLM"],
        "hidden_size": 4096,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "max_position_embeddings": 40960,
    },
    "Qwen/Qwen3-30B-A3B": {
        "architectures": ["Qwen3MoeForCausalLM"],
        "hidden_size": 2048,
        "num_attention_heads": 32,
        "num_key_value_heads": 4,
        "num_experts": 128,
        "num_experts_per_tok": 8,
        "max_position_embeddings": 40960,
    },
    "Qwen/Qwen3-235B-A22B": {
        "architectures": ["Qwen3MoeForCausalLM"],
        "hidden_size": 4096,
        "num_attention_heads": 64,
        "num_key_value_heads": 4,
        "num_experts": 128,
        "num_experts_per_tok": 8,
        "max_position_embeddings": 40960,
    },
    "mistralai/Mixtral-8x7B-Instruct-v0.1": {
        "architectures": ["MixtralForCausalLM"],
        "hidden_size": 4096,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "num_local_experts": 8,
        "num_experts_per_tok": 2,
        "max_position_embeddings": 32768,
    },
    "openai/gpt-oss-120b": {
        "architectures": ["GptOssForCausalLM"],
        "hidden_size": 2880,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "num_local_experts": 128,
        "num_experts_per_tok": 4,
        "max_position_embeddings": 131072,
        "rope_scaling": {"rope_type": "yarn", "factor": 32.0},
    },
    "openai/gpt-oss-20b": {
        "architectures": ["GptOssForCausalLM"],
        "hidden_size": 2880,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "num_local_experts": 32,
        "num_experts_per_tok": 4,
        "max_position_embeddings": 131072,
        "rope_scaling": {"rope_type": "yarn", "factor": 32.0},
    },
}
_KNOWN_BY_KEY = {name.lower(): name for name in KNOWN_MODELS}


def resolve_model(model: str | None, model_config: str | None) -> ModelFacts | None:
    """The model config check-config reads, found the way vLLM finds it: ``--model-config`` (a
    config.json or a directory holding one), else MODEL when it is a local directory with a
    config.json (vLLM reads it there), else capproof's :data:`KNOWN_MODELS` entry for a Hugging
    Face name; None when none applies. Paths are relative to the working directory. Raises
    CheckError (one line) for an unreadable or malformed file."""
    if model_config:
        return read_model_config(model_config)
    if not model:
        return None
    if os.path.isdir(model):
        if os.path.isfile(os.path.join(model, "config.json")):
            return read_model_config(model, "MODEL")
        return None
    name = _KNOWN_BY_KEY.get(model.strip().rstrip("/").lower())
    if name is None:
        return None
    facts = model_facts(KNOWN_MODELS[name], f"{name} (capproof's table of known models, from {_HF.format(name)})")
    return facts


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


def _batch_bounds(ob: Obligation, seqs: int | None, tokens: int | None) -> dict:
    """Assumptions the deployment adds on the obligation's batch parameters."""
    extra = {}
    if seqs is not None and "num_decodes" in ob.domain:
        extra[f"num_decodes <= max_num_seqs ({seqs})"] = _at_most("num_decodes", seqs)
    if tokens is not None and "num_decode_tokens" in ob.domain:
        extra[f"num_decode_tokens <= max_num_batched_tokens ({tokens})"] = _at_most("num_decode_tokens", tokens)
    return extra


def _at_most(param: str, bound: int):
    """An assumption function taking exactly ``param`` (its signature names the parameter)."""

    def bounded(**values):
        return values[param] <= bound

    bounded.__signature__ = inspect.Signature([inspect.Parameter(param, inspect.Parameter.KEYWORD_ONLY)])
    return bounded


@dataclass
class Checked:
    obligation: Obligation
    result: ObligationResult | None
    applicable: bool
    why_not: str = ""
    pinned: dict = field(default_factory=dict)
    free: list = field(default_factory=list)
    #: Parameters checked over several values (a list flag member by member, or the defaults vLLM
    #: may pick): {param: values}.
    choices: dict = field(default_factory=dict)
    #: The batch limit the obligation's batch axis was raised to (None: checked as declared).
    resized: int | None = None
    #: The declared batch limit it was raised from (``max_num_seqs in 1..64``).
    declared_batch: str = ""
    #: N when the proof covers batches of at most N requests only, fewer than the deployment's
    #: (not counted as safe).
    bounded: int | None = None
    #: What the user must give for this obligation to be decided (``--model-config``, ``--gpu``)
    #: when it may apply but a fact it needs is not known: "" when it was decided or cannot apply.
    #: Such an obligation makes the answer undecided, never safe.
    needs: str = ""


#: What to give for an obligation that may apply but needs a fact the line does not give.
NEED_MODEL = (
    "--model-config CONFIG.json (the model's Hugging Face config.json, or MODEL as a local directory "
    "holding it): the model is not in capproof's table of known models"
)
NEED_GPU = "--gpu NAME or --num-sms N (the GPU's SM count)"

#: Kinds of obligations not applied: ``outside`` (a flag's value lies outside the domain: blocks
#: "safe"), ``needs`` (a value only --model-config or --gpu gives), ``model`` (not about this model:
#: it lacks the feature), ``unknown-model`` (applies only if the model has a feature capproof cannot
#: see without --model-config).
OUTSIDE = "not checked: "


@dataclass
class Default:
    """A value the user did not give that an answer rests on: ``param`` over ``values``, and why."""

    param: str
    values: tuple[int, ...]
    why: str


@dataclass
class CheckOutcome:
    engine: str
    version: str
    checked: list[Checked]
    defaults: list[Default] = field(default_factory=list)
    #: Given flags (long names) no applicable obligation reads, and environment variables.
    unused_flags: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    model: ModelFacts | None = None
    #: Inventory buffers of this release with no verdict (nothing proves or refutes them).
    uncovered: list[str] = field(default_factory=list)
    #: Set when capproof has no buffer inventory for this release (says which release it has).
    inventory_note: str = ""
    #: The SM count checked and where it came from (--num-sms, --gpu's table row), or why none.
    hardware: str = ""
    #: Facts the line does not give that obligations beyond ``checked`` need (e.g. the speculative
    #: method vLLM infers from a draft model's config.json): each makes the answer undecided.
    needs: list[str] = field(default_factory=list)
    #: How facts capproof derived were found (the speculative method, ...), one line each.
    derived: list[str] = field(default_factory=list)
    #: Deployment parameters the line does not give whose value vLLM picks at startup and capproof
    #: could not derive: {param: what to give}. A counterexample that needs one of them is not a
    #: "will fail" of this deployment (the user never chose that value): it makes the answer undecided.
    undetermined: dict[str, str] = field(default_factory=dict)

    def _unsettled(self, c: Checked) -> list[str]:
        """The undetermined parameters a failing obligation's counterexample sets."""
        cex = c.result.counterexample
        params = cex.params if cex is not None else {}
        return [p for p in self.undetermined if p in params and p not in c.pinned and p not in c.choices]

    @property
    def missing_facts(self) -> list[str]:
        """What to give so that every obligation that may apply is decided (no repeats)."""
        unsettled = [self.undetermined[p] for c in self.unsettled_failures for p in self._unsettled(c)]
        return list(dict.fromkeys([c.needs for c in self.checked if c.needs] + self.needs + unsettled))

    @property
    def applicable(self) -> list[Checked]:
        return [c for c in self.checked if c.applicable]

    @property
    def failures(self) -> list[Checked]:
        """Counterexamples at values of this deployment (pinned, or a default vLLM picks)."""
        return [c for c in self.applicable if c.result.verdict is Verdict.COUNTEREXAMPLE and not self._unsettled(c)]

    @property
    def unsettled_failures(self) -> list[Checked]:
        """Counterexamples that need a value of an :attr:`undetermined` parameter: undecided."""
        return [c for c in self.applicable if c.result.verdict is Verdict.COUNTEREXAMPLE and self._unsettled(c)]

    @property
    def undecided(self) -> list[Checked]:
        """Unknown, vacuous or error, and proofs that cover smaller batches than the deployment's."""
        return [
            c
            for c in self.applicable
            if c.result.verdict not in (Verdict.PROVED, Verdict.COUNTEREXAMPLE) or c.bounded is not None
        ]

    @property
    def out_of_domain(self) -> list[Checked]:
        """Obligations about this engine version that could not be checked because a flag's value
        lies outside their declared domain: they block "safe" (nothing was proved for them)."""
        return [c for c in self.checked if not c.applicable and c.why_not.startswith(OUTSIDE)]

    @property
    def not_checked(self) -> list[Checked]:
        return [c for c in self.checked if not c.applicable]

    @property
    def status(self) -> str:
        if self.failures:
            return "will fail"
        if self.undecided or self.unsettled_failures or not self.applicable or self.out_of_domain or self.missing_facts:
            return "undecided"
        return "safe"

    @property
    def exit_code(self) -> int:
        return {"safe": 0, "will fail": 1}.get(self.status, 2)


#: Parameters only a model's config.json gives (``--model-config``); an obligation over them is
#: about one model, so it is not applied without it.
MODEL_PARAMS = ("num_experts", "top_k", "index_topk", "hidden_size")

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

#: Features a model's config.json shows (others come from the flags).
MODEL_FEATURES = frozenset({"dsa_indexer", "moe", "hybrid_mamba", "mla"})

#: What each model feature is, for the "not checked" lines.
FEATURES = {
    "dsa_indexer": "DSA indexer (index_topk in config.json)",
    "moe": "routed experts",
    "hybrid_mamba": "hybrid Mamba/linear-attention layers (config.json)",
    "mla": "MLA attention (an MLA model_type with kv_lora_rank in config.json)",
    "spec_decode": "speculative decoding (--speculative-algorithm)",
    "dflash": "DFlash/DSpark speculative decoding (--speculative-config method dflash)",
    "cudagraph_full": "FULL CUDA graphs for mixed batches (--compilation-config cudagraph_mode FULL)",
    "drafting_slots": "an EAGLE/MTP/draft-model proposer named in --speculative-config (method)",
    "extra_graph_padding": "padding beyond uniform decode sizes (--cudagraph-capture-sizes or --data-parallel-size > 1)",
    "user_capture_sizes": "user CUDA-graph capture sizes (--cudagraph-capture-sizes)",
    "ultraquant": "the UltraQuant KV cache (--kv-cache-dtype ultraquant_4bit, ROCm)",
}

#: Architectures (and config keys) of hybrid Mamba / linear-attention models, whose SGLang
#: ``req_to_token`` width comes from the hybrid-Mamba pool (sglang 0.5.23
#: ``kv_cache_configurator.py``; ``configs/model_config.py`` hybrid checks).
HYBRID_MAMBA_ARCHITECTURES = frozenset(
    {
        "Qwen3NextForCausalLM",
        "Qwen3_5ForConditionalGeneration",
        "Qwen3_5MoeForConditionalGeneration",
        "NemotronHForCausalLM",
        "FalconH1ForCausalLM",
        "JambaForCausalLM",
        "KimiLinearForCausalLM",
        "GraniteMoeHybridForCausalLM",
        "Lfm2ForCausalLM",
        "MiniMaxM1ForCausalLM",
    }
)
HYBRID_MAMBA_KEYS = (
    "linear_num_value_heads",
    "mamba_d_state",
    "hybrid_override_pattern",
    "layers_block_type",
    "linear_conv_kernel_dim",
)


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
    every candidate's preferred size is returned (table :mod:`.vllm.block_defaults`, generated by
    running those functions from the wheel). Not derived: other releases (only 0.33.0's wheel is
    run), vLLM-Ascend (NPU backends), hybrid Mamba models (phase 2 aligns the block size to the
    Mamba state), ``--kv-cache-dtype-skip-layers`` (phase 3)."""
    from .vllm.block_defaults import PREFERRED_BLOCK_SIZES

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


def _model_cases(ob: Obligation, pins: dict[str, int]) -> list[str]:
    """Model numbers (``num_experts``, ``top_k``, …) outside an obligation's finite cases that can be
    checked as a case of their own: the declared ``Choice`` lists the cases ``make verify``
    proves, not a limit of the claim; the value must still fit every vector whose length it is."""
    out = []
    for k, v in pins.items():
        d = ob.domain[k]
        if k not in MODEL_PARAMS or d.contains(v) or not isinstance(d, Choice) or v < 1:
            continue
        if all(v <= vec.size for vec in ob.domain.values() if isinstance(vec, Vector) and vec.length == k):
            out.append(k)
    return out


def _check_all(
    engine: str,
    version: str,
    pins: dict,
    choices: dict,
    features: set,
    model: ModelFacts | None,
    seqs: int | None,
    tokens: int | None,
    paths,
    options: Options,
) -> tuple[list[Checked], set[str]]:
    """Apply every obligation of ``paths`` about ``engine==version``: -> (checked, parameters used)."""
    items, errors = load(paths)
    if errors:
        raise CheckError(errors[0].message)
    checked: list[Checked] = []
    used: set[str] = set()
    for ob in items:
        if not isinstance(ob, Obligation) or not ob.applies_to(engine, version):
            continue
        mine = {k: v for k, v in pins.items() if k in ob.domain}
        own_cases = _model_cases(ob, mine)
        multi = {k: v for k, v in choices.items() if k in ob.domain and k not in mine}
        free = [p for p in ob.params if p not in mine and p not in multi]
        missing = [f for f in getattr(ob, "requires", ()) if f not in features]
        if "spec_decode" in missing:
            flag = "--speculative-algorithm" if engine == "sglang" else "--speculative-config"
            checked.append(
                Checked(ob, None, False, f"does not apply: no speculative decoding ({flag} not given)", mine, free)
            )
            continue
        if "default_capture_sizes" in missing:
            checked.append(
                Checked(
                    ob,
                    None,
                    False,
                    "about vLLM's default capture sizes; yours (--cudagraph-capture-sizes) "
                    "are checked member by member (user_capture_sizes_fit_mnbt)",
                    mine,
                    free,
                )
            )
            continue
        deployment = [f for f in missing if f not in MODEL_FEATURES]
        if deployment:
            checked.append(
                Checked(
                    ob,
                    None,
                    False,
                    "does not apply to this deployment: it needs "
                    + " and ".join(FEATURES.get(f, f) for f in deployment),
                    mine,
                    free,
                )
            )
            continue
        if missing:
            if model is not None and set(missing) <= model.features:  # the line turns it off (VLLM_MLA_DISABLE)
                why = (
                    "does not apply to this deployment: the model has "
                    + ", ".join(FEATURES.get(f, f) for f in missing)
                    + ", turned off by the line's environment (VLLM_MLA_DISABLE=1)"
                )
            elif model is not None:
                why = f"does not apply to this model: {model.path} shows no " + ", no ".join(
                    FEATURES.get(f, f) for f in missing
                )
            else:
                why = (
                    "applies only to models with a "
                    + ", a ".join(FEATURES.get(f, f) for f in missing)
                    + ": give --model-config to check it"
                )
            checked.append(Checked(ob, None, False, why, mine, free, needs="" if model is not None else NEED_MODEL))
            continue
        ob, resized = _resize_batch(ob, mine, multi)
        outside = [
            f"{OUTSIDE}{k}={v} outside {ob.domain[k].describe()}" + _bounded_only(ob, k)
            for k, v in mine.items()
            if not ob.domain[k].contains(v) and k not in own_cases
        ]
        outside += [
            f"{OUTSIDE}{k} in {list(vs)} outside {ob.domain[k].describe()}"
            + _bounded_only(ob, k)
            + (
                " (the default block sizes vLLM may pick; give --block-size N to check yours)"
                if k == "block_size"
                else ""
            )
            for k, vs in multi.items()
            if not all(ob.domain[k].contains(v) for v in vs)
        ]
        if outside:
            checked.append(Checked(ob, None, False, "; ".join(outside), mine, free, multi))
            continue
        needs_model = [p for p in MODEL_PARAMS if p in ob.domain and p not in mine]
        if needs_model:
            if model is not None and "num_experts" in needs_model and "moe" not in features:
                why = "does not apply to this model: no routed experts in " + model.path
            elif model is not None:
                why = f"{model.path} gives no {', '.join(needs_model)}"
            else:
                why = f"needs --model-config for {', '.join(needs_model)}"
            checked.append(Checked(ob, None, False, why, mine, free, needs="" if model is not None else NEED_MODEL))
            continue
        if "num_sms" in ob.domain and "num_sms" not in mine and "num_sms" not in multi:
            checked.append(
                Checked(
                    ob,
                    None,
                    False,
                    "an SM-count-sized workspace: needs the GPU (--gpu NAME or --num-sms N)",
                    mine,
                    free,
                    needs=NEED_GPU,
                )
            )
            continue
        domain = dict(ob.domain)
        for k in own_cases:
            domain[k] = Choice(mine[k])
        for k, vs in multi.items():
            domain[k] = Choice(*vs)
        bounded = dataclasses.replace(
            ob, domain=domain, assumptions={**ob.assumptions, **_batch_bounds(ob, seqs, tokens)}
        )
        run_options = dataclasses.replace(options, pins=mine)
        if resized:  # the bounded encoding at the deployment's batch size would not end: abstraction only
            run_options = dataclasses.replace(run_options, max_bounded_vector=resized[1])
        result = prove_obligation(bounded, run_options)
        used.update(mine)
        used.update(multi)
        if "num_decodes" in ob.domain and seqs is not None:
            used.update(("num_decodes", "max_num_seqs"))
        if "num_decode_tokens" in ob.domain and tokens is not None:
            used.update(("num_decode_tokens", "max_num_batched_tokens"))
        if "max_num_reqs" in mine or "max_num_reqs" in multi:
            used.add("max_num_seqs")
        if ob.requires:
            used.update(f"feature:{f}" for f in ob.requires)
        entry = Checked(
            ob,
            result,
            True,
            "",
            mine,
            free,
            multi,
            resized[0] if resized else None,
            resized[2] if resized else "",
            _bounded_below(bounded, result, mine, seqs),
        )
        entry.decided = (bounded, run_options)

        def at_seqs(n: int, ob=ob, domain=domain, mine=mine, run_options=run_options):
            """The same check with the deployment's request limit ``n`` instead (nearby --max-num-seqs)."""
            pins = {k: (n if k in BATCH_LIMITS else v) for k, v in mine.items()}
            again = dataclasses.replace(
                ob, domain=domain, assumptions={**ob.assumptions, **_batch_bounds(ob, n, tokens)}
            )
            return again, dataclasses.replace(run_options, pins=pins)

        entry.at_seqs = at_seqs
        checked.append(entry)
    return checked, used


#: A nearby ``--max-model-len`` is searched only for obligations decided within this many seconds.
NEARBY_BUDGET_SECONDS = 2.0
#: Roundings tried for a nearby ``--max-model-len`` (tokens): multiples of powers of two.
_LENGTH_STEPS = tuple(2**k for k in range(4, 17))


def nearby_max_model_len(c: Checked, tries: int = 8) -> int | None:
    """The largest ``max_model_len`` below the pinned one, among its roundings down to multiples of
    16, 32, …, 65536 tokens, at which the failing obligation ``c`` is proved with every other pin
    unchanged (each candidate is a full proof of that obligation, at most ``tries``); None when
    ``max_model_len`` was not pinned or no candidate holds. Other obligations are not re-checked."""
    decided = getattr(c, "decided", None)
    value = c.pinned.get("max_model_len")
    if decided is None or value is None or c.result.seconds > NEARBY_BUDGET_SECONDS:
        return None  # not pinned, or one proof of it costs too much to try several
    ob, options = decided
    candidates = sorted({(value // m) * m for m in _LENGTH_STEPS if 0 < (value // m) * m < value}, reverse=True)
    for length in candidates[:tries]:
        if not ob.domain["max_model_len"].contains(length):
            continue
        result = prove_obligation(ob, dataclasses.replace(options, pins={**options.pins, "max_model_len": length}))
        if result.verdict is Verdict.PROVED:
            return length
    return None


#: Parameters that bound a batch's request count (``--max-num-seqs``).
BATCH_LIMITS = ("max_num_seqs", "max_num_reqs")


def nearby_max_num_seqs(c: Checked, seqs: int, tries: int = 8) -> int | None:  # noqa: C901 - one search
    """The largest ``--max-num-seqs`` below ``seqs`` (the user's), among its roundings down to
    multiples of 8, 16, …, and its halvings, at which the failing obligation ``c`` is proved with
    every other flag unchanged (each candidate a full proof of that obligation, at most
    ``tries``); None when the obligation does not read the request limit, one proof costs more
    than :data:`NEARBY_BUDGET_SECONDS`, or no candidate holds. Other obligations are not re-checked."""
    at_seqs = getattr(c, "at_seqs", None)
    reads = any(k in c.pinned for k in BATCH_LIMITS) or "num_decodes" in c.obligation.domain
    if at_seqs is None or not reads or c.result.seconds > NEARBY_BUDGET_SECONDS:
        return None
    rounded = {(seqs // m) * m for m in (2**k for k in range(3, 13))}
    halved = {seqs >> k for k in range(1, 12)}
    candidates = sorted({n for n in rounded | halved if 0 < n < seqs}, reverse=True)
    refuted = []
    for n in candidates[:tries]:
        ob, options = at_seqs(n)
        if any(k in ob.domain and not ob.domain[k].contains(n) for k in BATCH_LIMITS if k in options.pins):
            continue
        verdict = prove_obligation(ob, options).verdict
        if verdict is Verdict.PROVED:
            return n
        if verdict is Verdict.COUNTEREXAMPLE:
            refuted.append(n)
    c.seqs_refuted = refuted  # every value tried also fails: a smaller request limit does not help
    return None


def _bounded_only(ob: Obligation, param: str) -> str:
    """Why a batch limit outside the domain is not raised: the claim is proved for bounded batches only."""
    if param not in BATCH_LIMITS or ob.batch_axis:
        return ""
    d = ob.domain[param]
    return (
        (
            f" (spec/ proves this claim for batches of at most {d.hi} requests only, on the bounded encoding: "
            "it is not declared batch-size generic, so larger batches are not decided)"
        )
        if isinstance(d, Range)
        else ""
    )


def _bounded_below(ob: Obligation, result: ObligationResult, mine: dict, seqs: int | None) -> int | None:
    """N when ``result`` is proved for batches of at most N entries only (the bounded encoding) while
    the deployment's batches may be larger (``max_num_seqs`` above N, or not known): a Vector whose
    length is neither pinned nor a model number. None when the verdict covers the deployment."""
    if result.verdict is not Verdict.PROVED or not result.encoding:
        return None
    # the bounded encoding covers a vector's size; the aggregate abstraction ("all batch sizes")
    # every length its length parameter's domain admits, which may still be below the deployment's
    sizes = [
        v.size
        if not result.encoding == "all batch sizes" or not isinstance(ob.domain.get(v.length), Range)
        else ob.domain[v.length].hi
        for v in ob.domain.values()
        if isinstance(v, Vector) and v.length not in mine and v.length not in MODEL_PARAMS
    ]
    if not sizes:
        return None
    n = min(sizes)
    return n if seqs is None or seqs > n else None


def _resize_batch(ob: Obligation, mine: dict, multi: dict) -> tuple[Obligation, tuple[int, int] | None]:
    """``ob`` with its batch axis (``Obligation.batch_axis``) raised to the deployment's limit.

    When the limit parameter's pin (or its largest default) lies above the declared ``Range``, each
    axis parameter's ``Range`` is raised to it, and so is the size of every Vector whose length is
    an axis parameter (at most ``MAX_VECTOR_SIZE``). -> (obligation, (limit, the largest vector size
    declared) or None when nothing was resized).
    """
    if not ob.batch_axis:
        return ob, None
    limit = ob.batch_axis[0]
    wanted = mine.get(limit, max(multi.get(limit, (0,))))
    declared = ob.domain[limit]
    if not isinstance(declared, Range) or wanted <= declared.hi or wanted > MAX_VECTOR_SIZE:
        return ob, None
    domain = dict(ob.domain)
    for name in ob.batch_axis:
        d = domain[name]
        domain[name] = Range(d.lo, max(d.hi, wanted))
    sizes = [v.size for v in ob.domain.values() if isinstance(v, Vector)]
    for name, d in ob.domain.items():
        if isinstance(d, Vector) and d.length in ob.batch_axis:
            domain[name] = dataclasses.replace(d, size=max(d.size, wanted))
    return dataclasses.replace(ob, domain=domain), (wanted, max(sizes, default=0), f"{limit} in {declared.describe()}")


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
    if cfg.num_speculative_tokens > 0 and engine in ("vllm", "vllm-ascend"):
        from .vllm.speculative import infer_method

        inferred = infer_method(cfg.speculative_method, cfg.speculative_model)
        if inferred.method is None:
            needs.append(inferred.how)
        else:
            if inferred.method != cfg.speculative_method:
                derived.append(f"speculative method {inferred.method}: {inferred.how}")
            cfg = dataclasses.replace(cfg, speculative_method=inferred.method)
    method = _drafting_method(cfg)
    if cfg.num_speculative_tokens > 0 and method is not None:
        features.add("drafting_slots")
        pins["method"] = method
    if cfg.num_speculative_tokens > 0 and cfg.speculative_method in ("dflash", "dspark"):
        features.add("dflash")
    if cfg.cudagraph_mode == "FULL":
        features.add("cudagraph_full")
    if cfg.cudagraph_capture_sizes or cfg.dp > 1:
        features.add("extra_graph_padding")
    seqs = cfg.max_num_seqs if cfg.max_num_seqs is not None else max(choices.get("max_num_seqs", (0,))) or None
    tokens = (
        cfg.max_num_batched_tokens
        if cfg.max_num_batched_tokens is not None
        else max(choices.get("max_num_batched_tokens", (0,))) or None
    )
    checked, used = _check_all(engine, version, pins, choices, features, model, seqs, tokens, paths, options)
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
            params = (*params, "method", "feature:dflash", "feature:drafting_slots")
        if flag == "--compilation-config" and cfg.cudagraph_mode == "FULL":
            params = (*params, "feature:cudagraph_full")
        if flag == "--cudagraph-capture-sizes" or flag == "--compilation-config" and cfg.cudagraph_capture_sizes:
            params = (*params, "feature:extra_graph_padding", "feature:user_capture_sizes")
        if not any(p in used for p in params):
            unused.append(flag)
    used_defaults = [d for d in defaults + ([len_default] if len_default else []) if d.param in used]
    uncovered = uncovered_inventory(engine, version)
    note = ""
    if not uncovered and engine in ("vllm", "vllm-ascend") and not os.path.exists(_inventory_path(engine, version)):
        from ..inventory import releases

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
        undetermined,
    )
    if cfg.max_model_len is not None and not len_default:  # a length the user chose: suggest a nearby one that holds
        for c in outcome.failures:
            c.nearby = nearby_max_model_len(c)
    if cfg.max_num_seqs is not None:  # a request limit the user chose: a nearby one that holds
        for c in outcome.failures:
            c.nearby_seqs = nearby_max_num_seqs(c, cfg.max_num_seqs)
    return outcome


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


#: Environment variables check-config interprets (the others are listed as not read).
ENV_READ = ("VLLM_MLA_DISABLE",)


def _env_flag(env: dict[str, str], name: str) -> bool:
    """A vLLM boolean environment switch as vLLM 0.33.0 ``vllm/envs.py`` reads it
    (``bool(int(value))``); a value that is not an integer is False here (vLLM refuses it)."""
    try:
        return bool(int(env.get(name, "0")))
    except ValueError:
        return False


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


def _inventory_path(engine: str, version: str, root: str = ".") -> str:
    """The project's ``proofs/inventory/<engine>-<version>.json``, else capproof's shipped copy
    (``capproof.inventory.locate``), so an installed check-config reads it from any directory."""
    from ..inventory import locate

    return locate(os.path.join(root, "proofs", "inventory", f"{engine}-{version}.json"))


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


def uncovered_inventory(engine: str, version: str, root: str = ".") -> list[str]:
    """Ids of the buffers in ``proofs/inventory/<engine>-<version>.json`` with no verdict (``verdicts``
    empty: no obligation proves or refutes their capacity); empty when there is no inventory."""
    path = _inventory_path(engine, version, root)
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return []
    entries = data.get("entries", []) if isinstance(data, dict) else data
    return [e["id"] for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str) and not e.get("verdicts")]


def inventory_kinds(engine: str, version: str, root: str = ".") -> dict[str, str]:
    """``{entry id: coverage kind}`` of ``proofs/inventory/<engine>-<version>.json`` (the ``coverage``
    field ``capproof coverage --write`` fills: ``verified``, ``shape-only``, ...); empty when there
    is no inventory. The kind comes from the full run, where the prover checks every proof for an
    assumption restating its claim."""
    path = _inventory_path(engine, version, root)
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    entries = data.get("entries", []) if isinstance(data, dict) else data
    return {
        e["id"]: str(e.get("coverage") or "") for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str)
    }


def sglang_default_backends(gpu: str | None, model: ModelFacts | None) -> Default:
    """The attention backends SGLang 0.5.23 may pick without ``--attention-backend`` (its own
    ``get_default_attn_backend``, run from the wheel into :mod:`.sglang.attention_defaults`), for
    ``gpu`` (every GPU of the table when None) and the model kind: MLA when the model config shows
    MLA attention, standard attention when it shows none, both when the model is not known."""
    from .sglang.attention_defaults import DEFAULT_ATTENTION_BACKENDS as TABLE

    gpus = [gpu] if gpu in TABLE else list(TABLE)
    kinds = ("mha", "mla") if model is None else ("mla",) if "mla" in model.features else ("mha",)
    backends = tuple(sorted({b for g in gpus for k in kinds for b in TABLE[g][k]}))
    where = gpu if gpu in TABLE else "any GPU (give --gpu to narrow)"
    what = {("mha", "mla"): "any attention (the model's config.json is not known)", ("mla",): "MLA"}.get(
        kinds, "standard attention"
    )
    return Default(
        "attention_backend",
        backends,
        f"--attention-backend not given: SGLang 0.5.23's default for {what} on {where} "
        "(get_default_attn_backend, sglang/srt/arg_groups/model_override_base.py:277; every backend it may "
        "pick is checked)",
    )


#: The SGLang attention backends whose buffers an obligation of spec/ is about.
SGLANG_MODELLED_BACKENDS = ("triton", "flashmla")


def run_check_sglang(
    cfg: LaunchConfig,
    version: str,
    model: ModelFacts | None = None,
    paths=("spec",),
    options: Options | None = None,
    gpu: str | None = None,
) -> CheckOutcome:
    """Prove every ``engine="sglang"`` obligation of ``paths`` under an SGLang launch line's pins.

    ``context_len`` defaults to the model's ``max_position_embeddings`` (SGLang's default context
    length); speculative parameters not given stay symbolic (SGLang chooses them per model) and
    the answer says so. Without ``--attention-backend`` every backend SGLang may pick by default
    (:func:`sglang_default_backends`) is checked: its obligations apply.
    """
    options = options or Options()
    pins = dict(cfg.values)
    if model is not None:  # the model's numbers (experts, top-k, ...), as for vLLM lines
        pins.update({k: v for k, v in model.values.items() if k in MODEL_PARAMS and k not in pins})
    if "context_len" not in pins and model and "max_position_embeddings" in model.values:
        pins["context_len"] = model.values["max_position_embeddings"]
    features = set(model.features) if model else set()
    if cfg.speculative_algorithm:
        features.add("spec_decode")
    # the buffer-sizing server arguments, as SGLang derives them (engines/sglang/server_args.py)
    from .sglang.server_args import USED_FLAGS, sizing

    derived = sizing(cfg.values, cfg.switches, cfg.strings)
    pins.update(derived.pins)
    features |= derived.features
    backend_default, backend_unknown = None, ""
    if not any(f.startswith("sglang_attention_backend_") for f in derived.features):
        from .sglang.attention_defaults import BACKEND_OVERRIDING_ARCHITECTURES, BACKEND_OVERRIDING_SUBSTRINGS

        if gpu is not None:
            resolve_gpu(gpu, VLLM_VERSION)  # an unknown name is an error, as for vLLM lines
        archs = model.architectures if model is not None else ()
        overriding = [
            a
            for a in archs
            if a in BACKEND_OVERRIDING_ARCHITECTURES or any(sub in a for sub in BACKEND_OVERRIDING_SUBSTRINGS)
        ]
        if model is None or not archs:
            backend_unknown = (
                "--attention-backend NAME, or --model-config (SGLang 0.5.23 picks the default attention backend "
                "from the model's architecture)"
            )
        elif overriding:
            backend_unknown = (
                f"--attention-backend NAME (SGLang 0.5.23's model override for {overriding[0]} chooses the "
                "attention backend itself at startup)"
            )
        else:
            backend_default = sglang_default_backends(gpu.strip().upper() if gpu else None, model)
            features |= {f"sglang_attention_backend_{b}" for b in backend_default.values}
    checked, used = _check_all("sglang", version, pins, {}, features, model, None, None, paths, options)
    if backend_unknown:  # an obligation on one backend's buffers may apply: the backend is not known
        for c in checked:
            requires = set(getattr(c.obligation, "requires", ()))
            backends = {r for r in requires if r.startswith("sglang_attention_backend_")}
            if not c.applicable and backends and requires - backends <= features:
                c.why_not = (
                    "about one attention backend's buffers ("
                    + ", ".join(sorted(b.removeprefix("sglang_attention_backend_") for b in backends))
                    + "): the default backend is not known for this line"
                )
                c.needs = backend_unknown
    if cfg.speculative_algorithm:
        used.add("feature:spec_decode")
    params = {
        "--context-length": "context_len",
        "--page-size": "page_size",
        "--speculative-num-steps": "speculative_num_steps",
        "--speculative-eagle-topk": "speculative_eagle_topk",
        "--speculative-num-draft-tokens": "speculative_num_draft_tokens",
        "--tp-size": "tp",
        "--speculative-algorithm": "feature:spec_decode",
        **USED_FLAGS,
    }
    # a derived feature is used when an applied obligation requires it
    required = {r for c in checked if c.applicable for r in getattr(c.obligation, "requires", ())}
    used.update(f"feature:{f}" for f in derived.features & required)
    if any(f.startswith("sglang_attention_backend_") for f in derived.features & required):
        used.add("feature:sglang_attention_backend")
    unused = [f for f in cfg.origin if f not in ("--model-path", "--config") and params.get(f) not in used]
    defaults = [Default(param, values, why) for param, values, why in derived.assumptions]
    if backend_default is not None:
        defaults.append(backend_default)
    outcome = CheckOutcome(
        "sglang", version, checked, defaults, unused, dict(cfg.env), model, uncovered_inventory("sglang", version)
    )
    if not outcome.applicable and not outcome.missing_facts:
        backends = backend_default.values if backend_default else ()
        outcome.derived.append(
            "what is missing: spec/ has SGLang obligations for the "
            + ", ".join(SGLANG_MODELLED_BACKENDS)
            + " attention backends' decode-graph buffers, MoE alignment (models with routed experts) and "
            "req_to_token under speculative decoding (--speculative-algorithm); none reaches this line"
            + (f" (default attention backend {', '.join(backends)})" if backends else "")
        )
    return outcome


def _families(checked: list[Checked]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in checked:
        family = c.obligation.name.split("__")[0]
        out[family] = out.get(family, 0) + 1
    return out


def scope_line(outcome: CheckOutcome) -> str:
    """What the verdict covers, in one line: how many obligations were proved (for every batch size
    or bounded), and how much was not checked (listed after the proved lines)."""
    proved = [c for c in outcome.applicable if c.result.verdict is Verdict.PROVED and c.bounded is None]
    every = [c for c in proved if c.result.encoding == "all batch sizes"]
    induction = sum(1 for c in every if c.result.encoding_note.startswith("induction over the batch"))
    bounded = sum(1 for c in proved if c.result.encoding.startswith("batches"))
    short = sum(1 for c in outcome.applicable if c.bounded is not None)
    aggregate = len(every) - induction
    how = (
        ([f"{aggregate} on the aggregate abstraction, for every batch size"] if aggregate else [])
        + ([f"{induction} by induction over the batch, for every batch size"] if induction else [])
        + ([f"{bounded} on bounded batch vectors that reach max_num_seqs"] if bounded else [])
    )
    shape = sum(1 for c in proved if "inventory" in c.obligation.tags and "derived" not in c.obligation.tags)
    parts = [
        f"{len(proved)} of {len(outcome.applicable)} applied obligations proved for this deployment"
        + (f" ({'; '.join(how)})" if how else "")
        + (f"; of these {len(proved) - shape} verified and {shape} only shape-checked" if shape else "")
    ]
    if short:
        parts.append(f"{short} proved for smaller batches only (not counted)")
    missing = [f"{len(outcome.not_checked)} obligations not applied"] if outcome.not_checked else []
    if outcome.unused_flags:
        missing.append(f"{len(outcome.unused_flags)} given flags read by none")
    if outcome.uncovered:
        missing.append(f"{len(outcome.uncovered)} inventory buffers with no obligation")
    if outcome.inventory_note:
        missing.append("no buffer inventory for this release")
    if outcome.defaults:
        missing.append("rests on " + ", ".join(f"{d.param} defaults" for d in outcome.defaults))
    return (
        "checked: " + "; ".join(parts) + (". NOT checked: " + ", ".join(missing) + " (listed below)" if missing else "")
    )


def _encoding(r: ObligationResult) -> str:
    """How far a batch verdict reaches: every batch size (aggregate abstraction or induction over
    the batch) or a bound."""
    if r.encoding == "all batch sizes":
        return " [proved for all batch sizes]"
    if r.encoding:
        return f" [bounded: {r.encoding.replace('<=', '≤')} requests]"
    return ""


def later_release(ob: Obligation, engine: str, version: str) -> str | None:
    """The first modelled release after ``version`` outside the obligation's ``versions`` (the
    release whose code changed the modelled formula), or None when it has no upper bound."""
    if engine != "vllm" or not ob.versions:
        return None
    from packaging.specifiers import SpecifierSet

    spec = SpecifierSet(ob.versions)
    current = Version(version)
    for v in sorted(VLLM_VERSIONS, key=Version):
        if Version(v) > current and not spec.contains(v, prereleases=True):
            return v
    return None


def outcome_lines(outcome: CheckOutcome, cfg: ServeConfig) -> list[str]:
    """Human-readable report: the verdict first, then what was proved, then what was not checked."""
    lines: list[str] = []
    head = {
        "safe": "safe (for what was checked, next line; the rest is listed under 'not checked')"
        if (
            outcome.not_checked
            or outcome.unused_flags
            or outcome.uncovered
            or outcome.inventory_note
            or outcome.defaults
        )
        else "safe",
        "will fail": "will fail",
        "undecided": "undecided (not proved safe)",
    }[outcome.status]
    missing = outcome.missing_facts
    engine = {"vllm": "vLLM", "vllm-ascend": "vLLM-Ascend", "sglang": "SGLang"}.get(outcome.engine, outcome.engine)
    lines.append(f"{head}: {engine} {outcome.version}, {cfg.describe()}")
    lines.append("  " + scope_line(outcome))
    if outcome.status == "undecided":  # obligations not checked at these flags block "safe": named first
        blockers = [(c.obligation.id, c.why_not.removeprefix(OUTSIDE)) for c in outcome.out_of_domain]
        for ident, why in blockers[:3]:
            lines.append(f"  not safe because {ident} was not checked: {why}")
        if len(blockers) > 3:
            lines.append(f"  … and {len(blockers) - 3} more obligations not checked at these flags (listed below)")
    for need in missing:
        n = sum(1 for c in outcome.checked if c.needs == need) + sum(
            1 for c in outcome.unsettled_failures if any(outcome.undetermined[p] == need for p in outcome._unsettled(c))
        )
        lines.append(
            f"  give {need}"
            + (
                f" ({n} obligation{'s' if n != 1 else ''} may apply but could not be decided without it)"
                if n
                else " (the obligations it selects could not be chosen without it)"
            )
            if not need.startswith("the speculative method")
            else f"  give {need}"
        )
    for line in outcome.derived:
        lines.append("  " + line)
    if cfg.config_file:
        from_file = [f for f, src in cfg.origin.items() if src == cfg.config_file]
        if from_file:
            lines.append(f"  from {cfg.config_file}: {', '.join(from_file)} (the command line wins over the file)")
    if outcome.hardware:
        lines.append("  hardware: " + outcome.hardware)
    if outcome.model is not None and outcome.model.fields:
        lines.append(
            "  model config "
            + outcome.model.path
            + ": "
            + ", ".join(f"{p}={outcome.model.values.get(p, 'yes')} (from {f})" for p, f in outcome.model.fields.items())
        )
    inventory_proved = [
        c
        for c in outcome.applicable
        if "inventory" in c.obligation.tags and c.result.verdict is Verdict.PROVED and c.bounded is None
    ]
    for c in outcome.applicable:
        ob = c.obligation
        case = f" [{ob.case}]" if ob.case else ""
        r = c.result
        if c in inventory_proved:
            continue
        over = "".join(f" for {k} in {list(v)}" for k, v in c.choices.items())
        over += "".join(
            f" ({k}={c.pinned[k]} checked as its own case; spec/ declares {ob.domain[k].describe()})"
            for k in _model_cases(ob, c.pinned)
        )
        if c.resized:
            over += f" (batches of up to {c.resized} requests; spec/ declares {c.declared_batch}, batch-size generic)"
        if r.verdict is Verdict.PROVED and c.bounded is not None:
            how = (
                "aggregate abstraction over the declared batch lengths: " + r.encoding_note
                if r.encoding == "all batch sizes"
                else "bounded encoding; " + (r.encoding_note or "the aggregate abstraction did not apply")
            )
            lines.append(
                f"  BOUNDED {ob.id}{case}: proved for batches of at most {c.bounded} requests only ({how}); "
                "this deployment's batches may be larger: not counted as safe"
            )
        elif r.verdict is Verdict.PROVED:
            free = f" for every {', '.join(c.free)}" if c.free else ""
            lines.append(f"  safe    {ob.id}{case}: holds{free}{over}{_encoding(r)}")
        elif r.verdict is Verdict.COUNTEREXAMPLE:
            cex = r.counterexample
            values = ", ".join(f"{k}={v}" for k, v in cex.values.items())
            trigger = {k: v for k, v in cex.params.items() if k not in c.pinned}
            batch = {k: v for k, v in trigger.items() if k not in CONFIG_PARAMS and k not in c.choices}
            config = {k: v for k, v in trigger.items() if k in CONFIG_PARAMS or k in c.choices}
            label = "MAYFAIL" if outcome._unsettled(c) else "FAILS  "
            lines.append(f"  {label} {ob.id}{case}: {r.relation or 'claim'} fails: {values}")
            if batch and not r.witnesses:
                label = "smallest triggering batch" if cex.minimized else "a triggering batch (not minimised)"
                lines.append(f"          {label}: " + ", ".join(f"{k}={v}" for k, v in batch.items()))
            for w in r.witnesses:  # trigger witnesses: the smallest batch taking each failing path
                if w.found:
                    wbatch = {k: v for k, v in w.params.items() if k not in c.pinned and k not in CONFIG_PARAMS}
                    shown = ", ".join(f"{k}={v}" for k, v in wbatch.items())
                    values = ", ".join(f"{k}={v}" for k, v in w.values.items())
                    lines.append(f"          smallest batch that {w.name}: {shown} ({values})")
                else:
                    lines.append(f"          no batch {w.name}: {w.message}")
            unsettled = outcome._unsettled(c)
            if unsettled:
                lines.append(
                    "          not counted as will fail: it fails at "
                    + ", ".join(f"{k}={cex.params[k]}" for k in unsettled)
                    + ", a value you did not give and capproof cannot derive vLLM's default for; give "
                    + " and ".join(outcome.undetermined[k].partition(" (")[0] for k in unsettled)
                    + " to decide it"
                )
                config = {k: v for k, v in config.items() if k not in unsettled}
            if config:
                lines.append(
                    "          with values you did not give: "
                    + ", ".join(f"{k}={v}" for k, v in config.items())
                    + " (pin them with flags to check your own)"
                )
            if ob.sources:
                lines.append("          see " + ", ".join(ob.sources))
            nearby = getattr(c, "nearby", None)
            if nearby:
                lines.append(
                    f"          holds at --max-model-len {nearby} (the nearest rounding down that the solver proves for "
                    "this obligation, other flags unchanged; re-run check-config with it for the rest)"
                )
            nearby_seqs = getattr(c, "nearby_seqs", None)
            refuted = getattr(c, "seqs_refuted", [])
            if nearby_seqs:
                lines.append(
                    f"          holds at --max-num-seqs {nearby_seqs} (the largest rounding down or halving that the solver "
                    "proves for this obligation, other flags unchanged; re-run check-config with it for the rest)"
                )
            elif refuted and 1 in refuted:
                lines.append(
                    f"          fails at --max-num-seqs {', '.join(map(str, refuted))} as well (each tried by the solver, "
                    "down to 1, other flags unchanged)"
                )
            later = later_release(ob, outcome.engine, outcome.version)
            if later:
                lines.append(
                    f"          this formula is modelled for {outcome.engine} {ob.versions} only: {later} changed it; "
                    f"check the same line with --engine {outcome.engine}=={later}"
                )
        else:
            lines.append(f"  {r.verdict.value.upper():7s} {ob.id}{case}: {r.message} (not counted as safe)")
    if inventory_proved:
        files = sorted({c.obligation.file for c in inventory_proved})
        covered = {e for c in inventory_proved for e in c.obligation.covers}
        kinds = inventory_kinds(outcome.engine, outcome.version)
        verified = sorted(e for e in covered if kinds.get(e) == "verified")
        shape = sorted(e for e in covered if kinds.get(e) == "shape-only")
        modelled = len(covered) - len(verified) - len(shape)
        lines.append(
            f"  {'proved' if verified else 'shape '}  {len(inventory_proved)} inventory obligations ({', '.join(files)}) at these flags, on "
            f"{len(covered)} buffers of {engine} {outcome.version}: {len(verified)} verified (demand derived from "
            f"the engine's accesses), {modelled} on a demand modelled in spec/, {len(shape)} shape-only "
            "(capacity >= a config value; that the demand stays within it is assumed, not checked); by demand "
            "family: "
            + ", ".join(f"{k} {v}" for k, v in sorted(_families(inventory_proved).items(), key=lambda kv: -kv[1]))
        )
    if not outcome.applicable:
        lines.append("  no obligation of spec/ applies to these flags: nothing was proved")
    for d in outcome.defaults:
        # no values: the engine picks it at startup and every value is left free (not "in []")
        values = f" in {list(d.values)}" if d.values else " (any value)"
        lines.append(f"  rests on a default: {d.param}{values} ({d.why})")
    free = {p for c in outcome.applicable for p in c.free}
    for name, flag in (
        ("context_len", "--context-length"),
        ("speculative_num_steps", "--speculative-num-steps"),
        ("speculative_eagle_topk", "--speculative-eagle-topk"),
        ("speculative_num_draft_tokens", "--speculative-num-draft-tokens"),
        ("page_size", "--page-size"),
    ):
        if isinstance(cfg, LaunchConfig) and name in free:
            lines.append(f"  rests on no {name}: {flag} not given, every value of each obligation's domain is checked")
    if getattr(cfg, "max_model_len", 0) is None and "max_model_len" in free:
        why = (
            "--max-model-len auto: vLLM fits it to the GPU memory at startup"
            if getattr(cfg, "max_model_len_auto", False)
            else f"--max-model-len not given and {outcome.model.max_len_caveat}"
            if outcome.model is not None and outcome.model.max_len_caveat
            else "--max-model-len not given"
        )
        lines.append(f"  rests on no max_model_len: {why}, left symbolic over each obligation's domain")
    sizes = getattr(cfg, "cudagraph_capture_sizes", None)
    if sizes and getattr(cfg, "max_num_batched_tokens", None) is not None:
        kept, dropped = user_capture_sizes(sizes, cfg.max_num_batched_tokens, cfg.num_speculative_tokens)
        lines.append(
            f"  note: vLLM {outcome.version} captures CUDA graphs of {kept} tokens from your sizes {sizes}"
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
            f"  note: --kv-cache-dtype {cfg.kv_cache_dtype} (DSA on CUDA): kernel_block_size pinned to {DSA_CUDA_KERNEL_BLOCK_SIZE}"
        )
    if getattr(cfg, "block_size", 0) is None and "block_size" in free:
        why = outcome.undetermined.get("block_size", "")
        lines.append(
            "  note: --block-size not given"
            + (f" and not derived ({why.partition('(')[2].rstrip(')')})" if why else "")
            + ": every block size of each obligation's domain is checked; a failure at one is not counted as will fail"
        )
    not_checked = outcome.not_checked
    if not_checked or outcome.unused_flags or outcome.env or outcome.uncovered or outcome.inventory_note:
        lines.append("not checked for this deployment:")
    if outcome.inventory_note:
        lines.append("  " + outcome.inventory_note)
    grouped: dict[tuple[str, str], list[Checked]] = {}
    for c in not_checked:
        ob = c.obligation
        if "inventory" in ob.tags:
            grouped.setdefault((ob.file, ob.name.split("__")[0], c.why_not), []).append(c)
            continue
        case = f" [{ob.case}]" if ob.case else ""
        lines.append(f"  {'NEEDS' if c.needs else 'n/a':7s} {ob.id}{case}: {c.why_not}")
    for (file, family, why), cs in grouped.items():
        if len(cs) == 1:
            lines.append(f"  {'NEEDS' if cs[0].needs else 'n/a':7s} {cs[0].obligation.id}: {why}")
        else:
            lines.append(
                f"  {'NEEDS' if cs[0].needs else 'n/a':7s} {file}: {len(cs)} {family}__* obligations ({', '.join(c.obligation.name.split('__', 1)[1] for c in cs)}): {why}"
            )
    if outcome.unused_flags:
        lines.append("  flags no applied obligation reads: " + ", ".join(outcome.unused_flags))
    if outcome.env:
        lines.append("  environment not read: " + ", ".join(f"{k}={v}" for k, v in outcome.env.items()))
    if outcome.uncovered:
        shown = outcome.uncovered[:8]
        more = (
            f", … ({len(outcome.uncovered) - len(shown)} more: proofs/inventory/{outcome.engine}-{outcome.version}.json)"
            if len(outcome.uncovered) > len(shown)
            else ""
        )
        lines.append(
            f"  inventory buffers of {engine} {outcome.version} with no verdict ({len(outcome.uncovered)}): "
            + ", ".join(shown)
            + more
        )
    return lines


#: What each applied obligation's proof establishes, for ``check-config --json``: the inventory
#: obligations compare a buffer's traced shape with its demand family's formula (a shape check),
#: except those tagged ``derived`` (spec/vllm_0_33_derived.py: a demand derived from the engine's code);
#: the others prove a capacity formula against a demand formula from the engine's code.
KIND_SHAPE = "shape-checked"
KIND_VERIFIED = "verified"


def outcome_json(outcome: CheckOutcome, cfg) -> dict:
    """``check-config --json``: the verdict and exit code, every obligation applied (its verdict,
    whether it was verified or only shape-checked, its counterexample), the values assumed
    (defaults, derived facts), what must be given for an undecided answer, and what was not
    checked and why. Plain JSON types only."""
    applied = []
    for c in outcome.applicable:
        r = c.result
        entry = {
            "id": c.obligation.id,
            "case": c.obligation.case,
            "sources": list(c.obligation.sources),
            "verdict": r.verdict.value,
            "kind": KIND_SHAPE
            if "inventory" in c.obligation.tags and "derived" not in c.obligation.tags
            else KIND_VERIFIED,
            "pinned": {k: v for k, v in c.pinned.items()},
            "free": list(c.free),
            "checked_over": {k: list(v) for k, v in c.choices.items()},
            "batches": r.encoding or None,
            "message": r.message,
        }
        if c.bounded is not None:
            entry["counted"] = False
            entry["bounded_to_requests"] = c.bounded
        if r.counterexample is not None:
            entry["counterexample"] = r.counterexample.to_json()
            entry["formula_changed_in"] = later_release(c.obligation, outcome.engine, outcome.version)
            entry["holds_at_max_model_len"] = getattr(c, "nearby", None)
            entry["holds_at_max_num_seqs"] = getattr(c, "nearby_seqs", None)
            unsettled = outcome._unsettled(c)
            if unsettled:  # fails only at a value vLLM may never pick for this line: not a will-fail
                entry["counted"] = False
                entry["fails_only_at_values_not_given"] = {k: r.counterexample.params[k] for k in unsettled}
        applied.append(entry)
    model = outcome.model
    return {
        "verdict": outcome.status,
        "exit_code": outcome.exit_code,
        "engine": outcome.engine,
        "version": outcome.version,
        "deployment": cfg.describe(),
        "model": getattr(cfg, "model", None),
        "model_config": None
        if model is None
        else {
            "source": model.path,
            "values": dict(model.values),
            "fields": dict(model.fields),
            "features": sorted(model.features),
        },
        "give": outcome.missing_facts,
        "verified": sum(
            1 for e in applied if e["kind"] == KIND_VERIFIED and e["verdict"] == "proved" and e.get("counted", True)
        ),
        "shape_checked": sum(
            1 for e in applied if e["kind"] == KIND_SHAPE and e["verdict"] == "proved" and e.get("counted", True)
        ),
        "obligations": applied,
        "assumed": [{"param": d.param, "values": list(d.values), "why": d.why} for d in outcome.defaults]
        + [{"derived": line} for line in outcome.derived],
        "hardware": outcome.hardware,
        "not_checked": [
            {"id": c.obligation.id, "case": c.obligation.case, "why": c.why_not, "give": c.needs or None}
            for c in outcome.not_checked
        ],
        "unused_flags": list(outcome.unused_flags),
        "environment_not_read": dict(outcome.env),
        "inventory_buffers_without_obligation": list(outcome.uncovered),
        "inventory_note": outcome.inventory_note,
    }


def outcome_run_json(outcome: CheckOutcome) -> dict:
    """The applied obligations in ``prove --json``'s shape (every one expected to hold), for the
    SARIF and JUnit writers of :mod:`capproof.ci_formats`."""
    obligations = []
    for c in outcome.applicable:
        data = c.result.to_json()
        ok = c.result.verdict is Verdict.PROVED and c.bounded is None
        data.update(expect="proved", ok=ok)
        obligations.append(data)
    return {
        "obligations": obligations,
        "contracts": [],
        "usage_errors": [],
        "summary": {"ok": outcome.status == "safe", "exit_code": outcome.exit_code},
    }


#: check-config's own options: after ``--`` they belong to the engine's line, where vLLM's
#: argparse would read a prefix of one of its own flags (``--gpu`` -> ``--gpu-memory-utilization``).
CHECK_CONFIG_OPTIONS = (
    "--engine",
    "--model-config",
    "--spec",
    "--rlimit",
    "--gpu",
    "--num-sms",
    "--json",
    "--sarif",
    "--quiet",
    "--verbose",
)


def own_option_in_line(args: list[str], engine: str, version: str) -> str | None:
    """One error line when the engine line holds a check-config option that is not an option of
    the engine itself (vLLM or SGLang would read it as an abbreviation of one of its flags, or
    refuse it), else None."""
    if engine == "sglang":
        from .sglang.flags import SGLANG_FLAGS as flags
    else:
        from .vllm.flags import serve_flags

        try:
            flags = serve_flags(version)
        except KeyError:
            return None
    for arg in args:
        option = arg.partition("=")[0]
        if option in CHECK_CONFIG_OPTIONS and option not in flags:
            prefixed = sorted(f for f in flags if f.startswith(option))
            name = "SGLang" if engine == "sglang" else f"vLLM {version}"
            read_as = (
                f"{name}'s parser accepts unique prefixes of its flags (argparse allow_abbrev), so it would read it as "
                f"{prefixed[0]}"
                if len(prefixed) == 1
                else f"it is not an option of {name}"
            )
            return (
                f"{option} is capproof's option, but it comes after '--' (or after the launch command), where {read_as}: "
                f"put it before '--', e.g. capproof check-config {option} ... -- vllm serve MODEL ..."
            )
    return None
