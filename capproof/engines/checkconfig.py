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
import functools
import inspect
import json
import os
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from packaging.version import Version

from ..domain import MAX_VECTOR_SIZE, Choice, Range, Vector
from ..verdict import ObligationResult, Options, Verdict
from .adapter import CheckError
from .docker import strip_docker

if TYPE_CHECKING:  # the loader, obligations and the prover (Z3, Hypothesis) are imported where they are
    # used, so a launch line refused as bad input is answered before they load (~0.3 s of imports)
    from ..obligation import Obligation

__all__ = [
    "CheckError",
    "CheckOutcome",
    "ModelFacts",
    "read_model_config",
    "model_facts",
    "resolve_model",
    "KNOWN_MODELS",
    "check_all",
    "outcome_lines",
    "outcome_json",
    "outcome_run_json",
    "own_option_in_line",
]


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
    #: The config's RoPE parameters carry a scaling ``factor`` (other than 1): releases before vLLM
    #: 0.33.0 derived the default length from it by other rules (vllm-project/vllm#56446).
    rope_factor: bool = False


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
        facts.rope_factor = any(
            isinstance(p, dict) and p.get("factor") not in (None, 1, 1.0)
            for key in ("rope_scaling", "rope_parameters")
            if isinstance(scope.get(key), dict)
            for p in (scope[key], *scope[key].values())
        )
    if facts.values.get("num_experts"):
        facts.features.add("moe")
    if "index_topk" in facts.values:
        facts.features.add("dsa_indexer")
    text = next((sc for pre, sc in scopes if pre), data)  # vLLM's hf_text_config
    if uses_mla(text):
        facts.features.add("mla")
        facts.fields["mla"] = "model_type " + str(text.get("model_type"))
    chunk = next(
        (
            pre + "attention_chunk_size"
            for pre, sc in scopes
            if isinstance(sc.get("attention_chunk_size"), int)
            and not isinstance(sc.get("attention_chunk_size"), bool)
            and sc["attention_chunk_size"] > 0
        ),
        None,
    )
    if chunk is not None:  # vLLM 0.33.0 llama4.py: its attention layers use chunked local attention
        facts.features.add("chunked_local_attention")
        facts.fields["chunked_local_attention"] = chunk
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
    """Whether a model with this (text) ``config.json`` is served with MLA attention (vLLM 0.33.0
    ``ModelConfig.use_mla``): an MLA ``model_type`` (:data:`MLA_MODEL_TYPES`) with ``kv_lora_rank``
    (or, for DeepSeek-V4's compressed layers, ``compress_ratios`` and ``head_dim``), and not a
    bidirectional (``is_causal: false``) variant."""
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
#: Old Hugging Face names the Hub redirects to an entry of :data:`KNOWN_MODELS` (Meta renamed its
#: Llama 3.1 repositories; SGLang's and vLLM's quickstarts still use the old names): vLLM and
#: SGLang download the same config.json under either name.
MODEL_ALIASES = {
    "meta-llama/Meta-Llama-3.1-8B-Instruct": "meta-llama/Llama-3.1-8B-Instruct",
    "meta-llama/Meta-Llama-3.1-70B-Instruct": "meta-llama/Llama-3.1-70B-Instruct",
}
_KNOWN_BY_KEY.update({alias.lower(): name for alias, name in MODEL_ALIASES.items()})


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
        raise CheckError(
            f"MODEL {model}: a local directory without config.json (the engine refuses it); give the model's "
            "directory, its Hugging Face name, or --model-config CONFIG.json"
        )
    name = _KNOWN_BY_KEY.get(model.strip().rstrip("/").lower())
    if name is None:
        return None
    alias = "" if name.lower() == model.strip().rstrip("/").lower() else f"; {model} is the Hub's old name of {name}"
    return model_facts(KNOWN_MODELS[name], f"{name} (capproof's table of known models, from {_HF.format(name)}{alias})")


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
    #: The engine's name as its project writes it (``engine`` when empty).
    display: str = ""
    #: The engine's modelled releases, for "a later release changed this formula" (empty: none).
    releases: tuple[str, ...] = ()
    #: Engine-specific lines on what the answer rests on (values left free, how a flag was read).
    notes: list[str] = field(default_factory=list)
    #: Deployment parameters the line does not give whose value the engine picks at startup and
    #: capproof could not derive: {param: what to give}. A counterexample that needs one of them is
    #: not a "will fail" of this deployment (the user never chose that value): it is undecided.
    undetermined: dict[str, str] = field(default_factory=dict)
    #: Index buffers this deployment runs that no proof decides, by what runs them
    #: (``{"attention backend triton": [inventory ids]}``): the engine fills it when it knows which of
    #: its inventory's buffers a line runs and which of them are neither verified nor proved. Any
    #: makes the answer undecided: a "safe" on the few obligations that apply would hide them.
    undecided_buffers: dict[str, list[str]] = field(default_factory=dict)

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
        """Counterexamples at values of this deployment (pinned, or a default the engine picks)."""
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
        if (
            self.undecided
            or self.unsettled_failures
            or not self.applicable
            or self.out_of_domain
            or self.missing_facts
            or any(self.undecided_buffers.values())
        ):
            return "undecided"
        return "safe"

    @property
    def exit_code(self) -> int:
        return {"safe": 0, "will fail": 1}.get(self.status, 2)


#: Tag of an obligation whose formula a later engine release fixed, when which release first
#: ships the fix is not known: its counterexample makes the answer undecided (give the release
#: fact), never "will fail" of every release and never "safe".
FIX_RELEASE_UNKNOWN = "fix-release-unknown"

#: Parameters only a model's config.json gives (``--model-config``); an obligation over them is
#: about one model, so it is not applied without it.
MODEL_PARAMS = ("num_experts", "top_k", "index_topk", "hidden_size")


#: Features a model's config.json shows (others come from the flags).
MODEL_FEATURES = frozenset({"dsa_indexer", "moe", "hybrid_mamba", "mla", "chunked_local_attention"})

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
    "chunked_local_attention": "chunked local attention (attention_chunk_size in config.json, e.g. Llama 4)",
    "flashinfer_backend": "the FlashInfer attention backend chosen (--attention-backend FLASHINFER)",
    "v1_runner": "the V1 model runner (the environment turns the V2 runner off, or the line uses a feature "
    "the V2 runner lacks)",
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


def check_all(
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
    *,
    absent: dict[str, str],
) -> tuple[list[Checked], set[str]]:
    """Apply every obligation of ``paths`` about ``engine==version``: -> (checked, parameters used).

    ``absent`` is the engine's word on features the line leaves out: {feature: why an obligation
    that requires it does not apply}, the first feature missing (in ``absent``'s order) decides."""
    from ..loader import load
    from ..obligation import Obligation

    items, errors = load(paths)
    if errors:
        raise CheckError(errors[0].message)
    checked: list[Checked] = []
    used: set[str] = set()
    pending: list[tuple[int, Obligation, Options, Any]] = []
    for ob in items:
        if not isinstance(ob, Obligation) or not ob.applies_to(engine, version):
            continue
        mine = {k: v for k, v in pins.items() if k in ob.domain}
        own_cases = _model_cases(ob, mine)
        multi = {k: v for k, v in choices.items() if k in ob.domain and k not in mine}
        free = [p for p in ob.params if p not in mine and p not in multi]
        missing = [f for f in getattr(ob, "requires", ()) if f not in features]
        why_absent = next((why for feature, why in absent.items() if feature in missing), None)
        if why_absent is not None:
            checked.append(Checked(ob, None, False, why_absent, mine, free))
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
            if model is not None and set(missing) <= model.features:  # the line's environment turns it off
                why = (
                    "does not apply to this deployment: the model has "
                    + ", ".join(FEATURES.get(f, f) for f in missing)
                    + ", turned off by the line's environment"
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
                " (the default block sizes the engine may pick; give --block-size N to check yours)"
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
        checked.append(None)  # type: ignore[arg-type] - decided below, with the others
        pending.append(
            (
                len(checked) - 1,
                bounded,
                run_options,
                functools.partial(
                    _decided_entry,
                    ob,
                    bounded,
                    run_options,
                    domain,
                    mine,
                    free,
                    multi,
                    resized,
                    seqs,
                    tokens,
                    engine,
                    version,
                ),
            )
        )
    results = decide_obligations([(b, o) for _, b, o, _ in pending], options.jobs)
    for (index, _, _, finish), result in zip(pending, results):
        checked[index] = finish(result)
    return checked, used


def _decided_entry(
    ob, bounded, run_options, domain, mine, free, multi, resized, seqs, tokens, engine, version, result
) -> Checked:
    """The :class:`Checked` of an applied obligation ``ob`` once ``result`` (its proof at these
    flags, ``bounded`` under ``run_options``) is known."""
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
        again = dataclasses.replace(ob, domain=domain, assumptions={**ob.assumptions, **_batch_bounds(ob, n, tokens)})
        return again, dataclasses.replace(run_options, pins=pins)

    entry.at_seqs = at_seqs
    if FIX_RELEASE_UNKNOWN in ob.tags and result.verdict is Verdict.COUNTEREXAMPLE:
        # the formula fails here, but which release first ships the fix is not known: whether
        # this deployment runs the failing formula is a fact the line does not give
        fixes = ", ".join(s for s in ob.sources if "#" in s) or "a later release"
        entry = Checked(
            ob,
            None,
            False,
            f"fails with this line's values in the formula before {fixes}; capproof does not know "
            f"which {engine} release first ships the fix",
            mine,
            free,
            needs=f"whether {engine} {version} contains {fixes} (if not, this line fails)",
        )
    return entry


def _decide_one(task: tuple[Obligation, Options]) -> ObligationResult:
    """One obligation's proof in a fresh Z3 context (its verdict does not depend on what this
    process decided before, nor on how the work was split among processes)."""
    from ..prover import prove_obligation
    from ..symbolic import fresh_z3_context

    ob, options = task
    started = time.process_time()
    with fresh_z3_context():
        result = prove_obligation(ob, options)
    result.cpu_seconds = time.process_time() - started  # what a nearby search would cost, whatever the load
    return result


#: The obligations a forked worker decides: set in the parent before the fork, read by index.
_TASKS: list[tuple[Obligation, Options]] = []


def _decide_index(index: int) -> tuple[int, ObligationResult]:
    import z3

    z3.z3._main_ctx = None  # the parent's context is not this process's (as capproof.runner's workers)
    return index, _decide_one(_TASKS[index])


def decide_obligations(tasks: list[tuple[Obligation, Options]], jobs: int = 1) -> list[ObligationResult]:
    """``prove_obligation`` of each ``(obligation, options)``, results in the given order, ``jobs``
    processes at a time (0: the CPU cores this process may use), each in a fresh Z3 context.

    An obligation of a spec the user gave (``--spec``) is decided as ``capproof prove`` decides it
    (:func:`_decide_checked`: the runner's module-state checks and the fresh copy's first
    evaluation), so a model keeping state between its own evaluations is an error, never safe. The
    engine specs shipped with capproof are decided in plain forked workers (:func:`_decide_plain`):
    ``make verify`` decides them through the runner's checks, and those checks cost about five
    times the CPU of a whole-deployment check."""
    shipped = _shipped_spec_dir()
    users = [i for i, (ob, _) in enumerate(tasks) if shipped is None or not _under(ob.file, shipped)]
    results: list[ObligationResult | None] = [None] * len(tasks)
    for i, result in zip(users, _decide_checked([tasks[i] for i in users], jobs)):
        results[i] = result
    plain = [i for i in range(len(tasks)) if results[i] is None]
    for i, result in zip(plain, _decide_plain([tasks[i] for i in plain], jobs)):
        results[i] = result
    return results  # type: ignore[return-value]


def _shipped_spec_dir() -> str | None:
    """The directory of the engine specs shipped with capproof (None: none installed)."""
    from ..project import bundled_root

    root = bundled_root()
    return None if root is None else os.path.join(os.path.realpath(root), "spec") + os.sep


def _under(path: str, folder: str) -> bool:
    return os.path.realpath(os.path.abspath(path)).startswith(folder)


def _decide_checked(tasks: list[tuple[Obligation, Options]], jobs: int) -> list[ObligationResult]:
    """The tasks decided through the runner's worker processes (:func:`capproof.runner.run_tasks`),
    each under its own options (pins) with ``capproof prove``'s checks."""
    from ..runner import Task, default_jobs, obligation_error, run_tasks

    if not tasks:
        return []
    if jobs <= 0:
        jobs = default_jobs()
    seen: set[int] = set()
    obligations: list[Obligation] = []
    own: dict[int, Options] = {}
    for ob, options in tasks:
        if id(ob) in seen:  # the same obligation under other pins: an object of its own
            ob = dataclasses.replace(ob)
        seen.add(id(ob))
        obligations.append(ob)
        own[id(ob)] = options
    task = Task(
        kind="obligation",
        decide=lambda ob: _decide_one((ob, own[id(ob)])),
        error=obligation_error,
        options=lambda ob: own[id(ob)],
    )
    runner_options = dataclasses.replace(tasks[0][1], jobs=max(1, min(jobs, len(tasks))))
    return run_tasks(obligations, task, runner_options)


def _decide_plain(tasks: list[tuple[Obligation, Options]], jobs: int) -> list[ObligationResult]:
    """The tasks decided in ``jobs`` forked worker processes (one obligation per message, as they
    finish), or in this process when ``jobs`` is 1, there are fewer than two tasks, or ``fork`` is
    not available (Windows). Each proof runs in a fresh Z3 context either way, so the verdicts
    are the same."""
    import multiprocessing

    if jobs <= 0:
        from ..runner import default_jobs

        jobs = default_jobs()
    jobs = min(jobs, len(tasks))
    if jobs <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return [_decide_one(task) for task in tasks]
    from ..provenance import read_loaded_files

    read_loaded_files()  # (the library code each worker compares code with: read once, before the fork)
    _TASKS[:] = tasks
    try:
        results: list[ObligationResult | None] = [None] * len(tasks)
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            for index, result in pool.imap_unordered(_decide_index, range(len(tasks))):
                results[index] = result
        return results  # type: ignore[return-value]
    finally:
        _TASKS.clear()


#: A nearby ``--max-model-len`` or ``--max-num-seqs`` is searched only for obligations decided within
#: this many seconds of CPU.
NEARBY_BUDGET_SECONDS = 2.0


def _cost(c: Checked) -> float:
    """Seconds of CPU the proof of ``c`` took (its wall-clock seconds when not measured): a
    nearby search repeats that proof, and on a loaded machine the wall clock overstates it."""
    return getattr(c.result, "cpu_seconds", c.result.seconds)


#: Roundings tried for a nearby ``--max-model-len`` (tokens): multiples of powers of two.
_LENGTH_STEPS = tuple(2**k for k in range(4, 17))


def nearby_max_model_len(c: Checked, tries: int = 8) -> int | None:
    """The largest ``max_model_len`` below the pinned one, among its roundings down to multiples of
    16, 32, …, 65536 tokens, at which the failing obligation ``c`` is proved with every other pin
    unchanged (each candidate is a full proof of that obligation, at most ``tries``); None when
    ``max_model_len`` was not pinned or no candidate holds. Other obligations are not re-checked."""
    decided = getattr(c, "decided", None)
    value = c.pinned.get("max_model_len")
    if decided is None or value is None or _cost(c) > NEARBY_BUDGET_SECONDS:
        return None  # not pinned, or one proof of it costs too much to try several
    ob, options = decided
    candidates = sorted({(value // m) * m for m in _LENGTH_STEPS if 0 < (value // m) * m < value}, reverse=True)
    for length in candidates[:tries]:
        if not ob.domain["max_model_len"].contains(length):
            continue
        from ..prover import prove_obligation

        result = prove_obligation(ob, dataclasses.replace(options, pins={**options.pins, "max_model_len": length}))
        if result.verdict is Verdict.PROVED:
            return length
    return None


#: Parameters that bound a batch's request count (``--max-num-seqs``).
BATCH_LIMITS = ("max_num_seqs", "max_num_reqs")


def nearby_max_num_seqs(c: Checked, seqs: int, tries: int = 8) -> int | None:
    """The largest ``--max-num-seqs`` below ``seqs`` (the user's), among its roundings down to
    multiples of 8, 16, …, 4096 and its halvings, at which the failing obligation ``c`` is proved
    with every other flag unchanged (each candidate a full proof of that obligation, at most
    ``tries``); None when the obligation does not read the request limit, one proof costs more than
    :data:`NEARBY_BUDGET_SECONDS`, or no candidate holds (then ``c.seqs_refuted`` lists the limits
    refuted). Other obligations are not re-checked."""
    at_seqs = getattr(c, "at_seqs", None)
    reads = any(k in c.pinned for k in BATCH_LIMITS) or "num_decodes" in c.obligation.domain
    if at_seqs is None or not reads or _cost(c) > NEARBY_BUDGET_SECONDS:
        return None
    rounded = {(seqs // m) * m for m in (2**k for k in range(3, 13))}
    halved = {seqs >> k for k in range(1, 12)}
    candidates = sorted({n for n in rounded | halved if 0 < n < seqs}, reverse=True)
    refuted = []
    for n in candidates[:tries]:
        ob, options = at_seqs(n)
        if any(k in ob.domain and not ob.domain[k].contains(n) for k in BATCH_LIMITS if k in options.pins):
            continue
        from ..prover import prove_obligation

        verdict = prove_obligation(ob, options).verdict
        if verdict is Verdict.PROVED:
            return n
        if verdict is Verdict.COUNTEREXAMPLE:
            refuted.append(n)
    c.seqs_refuted = refuted
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


def inventory_path(engine: str, version: str, root: str = ".") -> str:
    """The project's ``proofs/inventory/<engine>-<version>.json``, else capproof's shipped copy
    (``capproof.inventory.locate``), so an installed check-config reads it from any directory."""
    from ..inventory import locate

    return locate(os.path.join(root, "proofs", "inventory", f"{engine}-{version}.json"))


def inventory_data(path: str) -> object:
    """The parsed JSON of the inventory file at ``path`` (read-only: shared by the callers), read
    again when its size, modification time or inode changed (a check-config reads it up to three
    times, 2.9 MB for SGLang 0.5.23). Raises OSError (no such file) or ValueError (not JSON)."""
    st = os.stat(path)
    return _parsed_json(os.path.abspath(path), st.st_size, st.st_mtime_ns, st.st_ino)


@functools.lru_cache(maxsize=4)
def _parsed_json(path: str, size: int, mtime_ns: int, inode: int) -> object:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def uncovered_inventory(engine: str, version: str, root: str = ".") -> list[str]:
    """Ids of the buffers in ``proofs/inventory/<engine>-<version>.json`` with no verdict (``verdicts``
    empty: no obligation proves or refutes their capacity); empty when there is no inventory."""
    path = inventory_path(engine, version, root)
    try:
        data = inventory_data(path)
    except (OSError, ValueError):
        return []
    entries = data.get("entries", []) if isinstance(data, dict) else data
    return [e["id"] for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str) and not e.get("verdicts")]


def inventory_kinds(engine: str, version: str, root: str = ".") -> dict[str, str]:
    """``{entry id: coverage kind}`` of ``proofs/inventory/<engine>-<version>.json`` (the ``coverage``
    field ``capproof coverage --write`` fills: ``verified``, ``shape-only``, ...); empty when there
    is no inventory. The kind comes from the full run, where the prover checks every proof for an
    assumption restating its claim."""
    path = inventory_path(engine, version, root)
    try:
        data = inventory_data(path)
    except (OSError, ValueError):
        return {}
    entries = data.get("entries", []) if isinstance(data, dict) else data
    return {
        e["id"]: str(e.get("coverage") or "") for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str)
    }


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
    # each proved inventory obligation by the coverage kind of the buffers it covers (as the
    # "inventory obligations" line counts them): all shape-only -> only shape-checked; any demand
    # modelled in spec/ -> modelled; else verified
    kinds = inventory_kinds(outcome.engine, outcome.version)
    shape = modelled = assumed = 0
    for c in proved:
        if "inventory" not in c.obligation.tags:
            continue
        covered = [kinds.get(e, "") for e in c.obligation.covers]
        if "derived" in c.obligation.tags:
            # a derived demand counts as verified only when the committed coverage says so for every
            # buffer it covers (a kind not yet regenerated is not a verification either)
            if not covered or any(k != "verified" for k in covered):
                assumed += 1
            continue
        if not covered or all(k == "shape-only" for k in covered):
            shape += 1
        elif any(k != "verified" for k in covered):
            modelled += 1
    parts = [
        f"{len(proved)} of {len(outcome.applicable)} applied obligations proved for this deployment"
        + (f" ({'; '.join(how)})" if how else "")
        + (
            f"; of these {len(proved) - shape - modelled - assumed} verified, {modelled} on a demand modelled in "
            f"spec/, {assumed} on an assumed fact about the engine and {shape} only shape-checked"
            if shape or modelled or assumed
            else ""
        )
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


def later_release(ob: Obligation, releases: tuple[str, ...], version: str) -> str | None:
    """The first of the modelled ``releases`` after ``version`` outside the obligation's
    ``versions`` (the release whose code changed the modelled formula), or None when it has no
    upper bound (or the engine lists no releases)."""
    if not releases or not ob.versions:
        return None
    from packaging.specifiers import SpecifierSet

    spec = SpecifierSet(ob.versions)
    current = Version(version)
    for v in sorted(releases, key=Version):
        if Version(v) > current and not spec.contains(v, prereleases=True):
            return v
    return None


def outcome_lines(outcome: CheckOutcome, cfg) -> list[str]:
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
    engine = outcome.display or outcome.engine
    lines.append(f"{head}: {engine} {outcome.version}, {cfg.describe()}")
    lines.append("  " + scope_line(outcome))
    if outcome.status == "undecided":  # obligations not checked at these flags block "safe": named first
        blockers = [(c.obligation.id, c.why_not.removeprefix(OUTSIDE)) for c in outcome.out_of_domain]
        for ident, why in blockers[:3]:
            lines.append(f"  not safe because {ident} was not checked: {why}")
        if len(blockers) > 3:
            lines.append(f"  … and {len(blockers) - 3} more obligations not checked at these flags (listed below)")
        for what, ids in outcome.undecided_buffers.items():
            if ids:
                shown = ", ".join(i.rsplit("::", 1)[-1] for i in ids[:4])
                lines.append(
                    f"  not safe because {len(ids)} index buffer{'s' if len(ids) != 1 else ''} of the {what} this line "
                    f"runs {'are' if len(ids) != 1 else 'is'} not verified or proved ({shown}"
                    + (f", … {len(ids) - 4} more" if len(ids) > 4 else "")
                    + ")"
                )
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
            if not need.startswith(("the speculative method", "a verdict on"))
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
                    lines.append(f'          smallest batch for "{w.name}": {shown} ({values})')
                else:
                    lines.append(f"          no batch {w.name}: {w.message}")
            unsettled = outcome._unsettled(c)
            if unsettled:
                lines.append(
                    "          not counted as will fail: it fails at "
                    + ", ".join(f"{k}={cex.params[k]}" for k in unsettled)
                    + ", a value you did not give and capproof cannot derive the engine's default for; give "
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
            later = later_release(ob, outcome.releases, outcome.version)
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
        assumed = sorted(e for e in covered if kinds.get(e) == "proved on an assumed fact")
        modelled = len(covered) - len(verified) - len(shape) - len(assumed)
        lines.append(
            f"  {'proved' if verified else 'shape '}  {len(inventory_proved)} inventory obligations ({', '.join(files)}) at these flags, on "
            f"{len(covered)} buffers of {engine} {outcome.version}: {len(verified)} verified (demand derived from "
            f"the engine's accesses), {modelled} on a demand modelled in spec/, {len(assumed)} on a derived demand "
            f"and an assumed (unchecked) fact about the engine, {len(shape)} shape-only "
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
    lines += ["  " + note for note in outcome.notes]
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
            entry["formula_changed_in"] = later_release(c.obligation, outcome.releases, outcome.version)
            entry["holds_at_max_model_len"] = getattr(c, "nearby", None)
            entry["holds_at_max_num_seqs"] = getattr(c, "nearby_seqs", None)
            unsettled = outcome._unsettled(c)
            if unsettled:  # fails only at a value the engine may never pick for this line: not a will-fail
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
        "undecided_buffers": {k: list(v) for k, v in outcome.undecided_buffers.items() if v},
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
    "--jobs",
    "--gpu",
    "--num-sms",
    "--json",
    "--sarif",
    "--quiet",
    "--verbose",
)


def own_option_in_line(args: list[str], flags: frozenset[str] | None, name: str, command: str) -> str | None:
    """One error line when the engine line holds a check-config option that is not an option of
    the engine itself (``flags``: the engine's long options; ``name``: who parses the line, e.g.
    ``vLLM 0.33.0``, which would read it as an abbreviation of one of its flags, or refuse it;
    ``command``: the launch command for the example), else None (also when ``flags`` is None)."""
    if flags is None:
        return None
    _, image, rest = strip_docker(args)
    if image is not None:
        args = rest  # docker's own options (-v mounts a volume) come before the image
    for i, arg in enumerate(args):
        option = arg.partition("=")[0]
        if re.fullmatch(r"-(q+|v+)", arg) and (
            arg not in flags or i + 1 == len(args) or args[i + 1].startswith("-")
        ):  # capproof's -q/-v; the engine's own -q (vLLM's --quantization) takes a value
            as_engine = f"{name}'s own {arg} needs a value" if arg in flags else f"{name} has no {arg}"
            return (
                f"{arg} after '--' belongs to the launch line, where {as_engine}: capproof's -q/-v go before '--', "
                f"e.g. capproof check-config {arg} -- {command} ..."
            )
        if option in CHECK_CONFIG_OPTIONS and option not in flags:
            prefixed = sorted(f for f in flags if f.startswith(option))
            read_as = (
                f"{name}'s parser accepts unique prefixes of its flags (argparse allow_abbrev), so it would read it as "
                f"{prefixed[0]}"
                if len(prefixed) == 1
                else f"it is not an option of {name}"
            )
            return (
                f"{option} is capproof's option, but it comes after '--' (or after the launch command), where {read_as}: "
                f"put it before '--', e.g. capproof check-config {option} ... -- {command} ..."
            )
    return None
