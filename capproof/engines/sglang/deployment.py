"""SGLang's side of ``capproof check-config``: what a launch line means for the obligations.

:func:`run_check` pins a :class:`~capproof.engines.sglang.launch.LaunchConfig` (and the
buffer-sizing server arguments SGLang derives from it, :mod:`.server_args`) and runs every
applicable ``engine="sglang"`` obligation through :func:`capproof.engines.checkconfig.check_all`.
"""

from __future__ import annotations

import dataclasses
import functools

from ...verdict import Options
from ..checkconfig import MODEL_PARAMS, CheckError, CheckOutcome, Default, ModelFacts, check_all, uncovered_inventory
from .flags import SGLANG_VERSION
from .launch import LaunchConfig

__all__ = ["run_check", "deployment_notes", "default_backends"]

#: Why an obligation that requires a feature the launch line leaves out does not apply.
ABSENT = {"spec_decode": "does not apply: no speculative decoding (--speculative-algorithm not given)"}

#: Parameters SGLang sizes from a flag that may be left free, and the flag that sets each.
FREE_PARAM_FLAGS = (
    ("context_len", "--context-length"),
    ("speculative_num_steps", "--speculative-num-steps"),
    ("speculative_eagle_topk", "--speculative-eagle-topk"),
    ("speculative_num_draft_tokens", "--speculative-num-draft-tokens"),
    ("page_size", "--page-size"),
)


#: The attention backends whose buffers an obligation of spec/ is about.
MODELLED_BACKENDS = ("triton", "flashmla")

ATTENTION = "sglang/srt/layers/attention/"
#: ``--attention-backend`` name -> the file of the class SGLang 0.5.23's registry builds for it
#: (``@register_attention_backend(name)`` in ``sglang/srt/layers/attention/attention_registry.py``:
#: the module its function imports; checked against the wheel's source by the real tier), for a
#: model without and with MLA attention (flashinfer builds ``FlashInferMLAAttnBackend`` for MLA).
#: The main class only: fa4 runs the Triton backend for ``DiffusionGemmaForBlockDiffusion`` and
#: trtllm_mla may run the CuTe DSL one, whose buffers are then not named here.
BACKEND_FILES = {
    "flashinfer": ("flashinfer_backend.py", "flashinfer_mla_backend.py"),
    "triton": ("triton_backend.py", "triton_backend.py"),
    "fa3": ("flashattention_backend.py", "flashattention_backend.py"),
    "fa4": ("flashattention_backend.py", "flashattention_backend.py"),
    "trtllm_mha": ("trtllm_mha_backend.py", "trtllm_mha_backend.py"),
    "trtllm_mla": ("trtllm_mla_backend.py", "trtllm_mla_backend.py"),
    "cutedsl_mla": ("cutedsl_mla_backend.py", "cutedsl_mla_backend.py"),
    "flashmla": ("flashmla_backend.py", "flashmla_backend.py"),
    "aiter": ("aiter_backend.py", "aiter_backend.py"),
    "wave": ("wave_backend.py", "wave_backend.py"),
    "dsa": ("dsa_backend.py", "dsa_backend.py"),
    "qsa": ("qwen_sparse_attn_backend.py", "qwen_sparse_attn_backend.py"),
    "torch_native": ("torch_native_backend.py", "torch_native_backend.py"),
    "flex_attention": ("torch_flex_backend.py", "torch_flex_backend.py"),
    "hpc_ops": ("hpc_ops_backend.py", "hpc_ops_backend.py"),
    "intel_amx": ("intel_amx_backend.py", "intel_amx_backend.py"),
    "intel_xpu": ("xpu_backend.py", "xpu_backend.py"),
    "llada2_cfg_flashinfer": ("llada2_cfg_flashinfer_backend.py", "llada2_cfg_flashinfer_backend.py"),
}
#: Backend files whose main class subclasses another file's backend and calls its ``__init__``, so
#: the parent's buffers are allocated too (SGLang 0.5.23's class statements: ``class
#: CuteDslMLABackend(TRTLLMMLABackend)``, ``TRTLLMMLABackend(FlashInferMLAAttnBackend)``,
#: ``TRTLLMHAAttnBackend(FlashInferAttnBackend)``, ``FlashMLABackend(FlashInferMLAAttnBackend)``,
#: ``LLaDA2CFGFlashInferAttnBackend(FlashInferAttnBackend)``; checked by the real tier).
BASE_FILES = {
    "cutedsl_mla_backend.py": "trtllm_mla_backend.py",
    "trtllm_mla_backend.py": "flashinfer_mla_backend.py",
    "trtllm_mha_backend.py": "flashinfer_backend.py",
    "flashmla_backend.py": "flashinfer_mla_backend.py",
    "llada2_cfg_flashinfer_backend.py": "flashinfer_backend.py",
}
#: Element types of an index/size buffer (as the inventory records them).
INDEX_DTYPES = frozenset({"int8", "int16", "int32", "int64", "uint8", "bool"})
#: Coverage kinds that decide a buffer whatever the line (``capproof coverage --write``).
DECIDED_KINDS = frozenset({"verified", "proved, demand modelled", "proved on an assumed fact"})


def file_features(backends, mla: bool) -> set[str]:
    """``sglang_attention_backend_<stem>`` for the file each backend runs (:data:`BACKEND_FILES`;
    ``<stem>`` the file name without ``_backend.py``): the feature an obligation on that file's
    buffers requires (``spec/sglang_0_5_23_derived.py``), so fa3 and fa4 both reach
    ``flashattention_backend.py``'s and flashinfer on an MLA model ``flashinfer_mla_backend.py``'s."""
    out = set()
    for b in backends:
        if b in BACKEND_FILES:
            stem = BACKEND_FILES[b][1 if mla else 0].removesuffix(".py").removesuffix("_backend")
            out.add(f"sglang_attention_backend_{stem}")
    return out


def undecided_backend_buffers(backends, mla: bool, checked, version: str, root: str = ".") -> dict[str, list[str]]:
    """``{"attention backend NAME": [inventory ids]}``: the index buffers (:data:`INDEX_DTYPES`) of
    each backend's file (:data:`BACKEND_FILES`, the MLA column when ``mla``) in ``proofs/inventory/sglang-<version>.json`` that are
    neither decided by the committed coverage (:data:`DECIDED_KINDS`) nor covered by an obligation
    ``checked`` proved at this line, with those of the files its class inherits from
    (:data:`BASE_FILES`). A backend name outside the table (``dsv4``, whose class
    depends on the platform, ``ascend``, ``minicpm_*``: its file is not known here) is a group of
    its own with one entry saying so, since none of its buffers is checked; backends sharing a file
    (fa3, fa4) are one group. Empty when there is no inventory."""
    from ...verdict import Verdict
    from ..checkconfig import inventory_data, inventory_path

    try:
        entries = inventory_data(inventory_path("sglang", version, root)).get("entries", [])  # type: ignore[attr-defined]
    except (OSError, ValueError, AttributeError):
        return {}
    proved = {i for c in checked if c.applicable and c.result.verdict is Verdict.PROVED for i in c.obligation.covers}
    by_file: dict[str, list[str]] = {}
    unmapped = []
    for b in backends:
        if b in BACKEND_FILES:
            by_file.setdefault(ATTENTION + BACKEND_FILES[b][1 if mla else 0], []).append(b)
        else:
            unmapped.append(b)
    out: dict[str, list[str]] = {
        f"attention backend {b}": [f"{b}: its buffers (capproof has no table of the file SGLang {version} runs for it)"]
        for b in unmapped
    }
    for file, names in by_file.items():
        files, name = {file}, file.removeprefix(ATTENTION)
        while name in BASE_FILES:  # the parent classes' buffers are the backend's too
            name = BASE_FILES[name]
            files.add(ATTENTION + name)
        ids = sorted(
            e["id"]
            for e in entries
            if e.get("file") in files
            and e.get("dtype") in INDEX_DTYPES
            and e.get("coverage") not in DECIDED_KINDS
            and e["id"] not in proved
        )
        out[f"attention backend{'s' if len(names) > 1 else ''} {', '.join(names)}"] = ids
    return out


def default_backends(gpu: str | None, model: ModelFacts | None) -> Default:
    """The attention backends SGLang 0.5.23 may pick without ``--attention-backend`` (its own
    ``get_default_attn_backend``, run from the wheel into :mod:`.attention_defaults`), for ``gpu``
    (every GPU of the table when None) and the model kind: MLA when the model config shows MLA
    attention, standard attention when it shows none."""
    from .attention_defaults import DEFAULT_ATTENTION_BACKENDS as TABLE

    gpus = [gpu] if gpu in TABLE else list(TABLE)
    kinds = ("mha", "mla") if model is None else ("mla",) if "mla" in model.features else ("mha",)
    backends = tuple(sorted({b for g in gpus for k in kinds for b in TABLE[g][k]}))
    where = gpu if gpu in TABLE else "any GPU (give --gpu to narrow)"
    what = {("mha", "mla"): "any attention", ("mla",): "MLA"}.get(kinds, "standard attention")
    return Default(
        "attention_backend",
        backends,
        f"--attention-backend not given: SGLang 0.5.23's default for {what} on {where} "
        "(get_default_attn_backend, sglang/srt/arg_groups/model_override_base.py:277; every backend it may "
        "pick is checked)",
    )


def _gpu_row(gpu: str | None) -> str | None:
    """``--gpu NAME`` -> its row of :data:`.attention_defaults.DEFAULT_ATTENTION_BACKENDS`
    (case-insensitive; H100-PCIE/H100-SXM are H100); raises CheckError (one line) for another name."""
    from .attention_defaults import DEFAULT_ATTENTION_BACKENDS as TABLE

    if gpu is None:
        return None
    key = gpu.strip().upper()
    key = {"H100-PCIE": "H100", "H100-SXM": "H100"}.get(key, key)
    if key not in TABLE:
        raise CheckError(f"--gpu {gpu!r}: unknown GPU (known: {', '.join(sorted(TABLE))}, H100-PCIE, H100-SXM)")
    return key


def _backend_unknown(model: ModelFacts | None) -> str:
    """What to give when SGLang's default attention backend cannot be read from the table: the
    model is not known, or its SGLang model override picks the backend itself ("" otherwise)."""
    from .attention_defaults import BACKEND_OVERRIDING_ARCHITECTURES, BACKEND_OVERRIDING_SUBSTRINGS

    archs = model.architectures if model is not None else ()
    if not archs:
        return (
            "--attention-backend NAME, or --model-config (SGLang 0.5.23 picks the default attention backend "
            "from the model's architecture)"
        )
    overriding = [
        a for a in archs if a in BACKEND_OVERRIDING_ARCHITECTURES or any(s in a for s in BACKEND_OVERRIDING_SUBSTRINGS)
    ]
    if overriding:
        return (
            f"--attention-backend NAME (SGLang 0.5.23's model override for {overriding[0]} chooses the "
            "attention backend itself at startup)"
        )
    return ""


#: ``get_context_length``'s keys and the RoPE scaling it multiplies in (SGLang 0.5.23,
#: ``sglang/srt/utils/hf_transformers/common.py``): overriding one changes the derived length.
CONTEXT_LENGTH_KEYS = (
    "max_sequence_length",
    "seq_length",
    "max_seq_len",
    "model_max_length",
    "max_position_embeddings",
)


def _derived_length(model: ModelFacts, overrides: dict) -> int | None:
    """``get_context_length`` of SGLang 0.5.23 on the model's config with ``overrides`` set on it,
    when the config's own derived length is its ``max_position_embeddings`` (no other length key,
    no RoPE factor); None when capproof does not know the config well enough to tell."""
    if model.max_len_caveat or model.rope_factor:
        return None
    base = next((overrides[k] for k in CONTEXT_LENGTH_KEYS if k in overrides), None)
    if base is None:
        base = model.values.get("max_position_embeddings")
    rope = overrides.get("rope_scaling")
    factor = 1
    if isinstance(rope, dict):
        factor = rope.get("factor", 1)
        if "original_max_position_embeddings" in rope or rope.get("rope_type") == "llama3":
            factor = 1
    elif rope is not None:
        return None
    try:
        return int(factor * base) if base is not None else None
    except (TypeError, ValueError):
        return None


def _without_overridden(model: ModelFacts | None, overrides: dict) -> ModelFacts | None:
    """The model's facts as SGLang reads them after ``--json-model-override-args``: SGLang sets
    those keys on the Hugging Face config before reading it (``ModelConfig.__init__``). A length key
    or ``rope_scaling`` gives the length ``get_context_length`` derives (:func:`_derived_length`),
    or leaves it free when that is not known here; any other parameter read from an overridden key
    is left free (every value checked)."""
    if model is None or not overrides:
        return model
    keys = set(overrides)
    values = {k: v for k, v in model.values.items() if model.fields.get(k, "").rsplit(".", 1)[-1] not in keys}
    if keys & (set(CONTEXT_LENGTH_KEYS) | {"rope_scaling"}):
        values.pop("max_position_embeddings", None)
        derived = _derived_length(model, overrides)
        if derived is not None:
            values["max_position_embeddings"] = derived
    if values == model.values:
        return model
    fields = {k: v for k, v in model.fields.items() if k in values}
    if "max_position_embeddings" in values and values["max_position_embeddings"] != model.values.get(
        "max_position_embeddings"
    ):
        fields["max_position_embeddings"] = "get_context_length after --json-model-override-args"
    return dataclasses.replace(model, values=values, fields=fields)


def _refuse_too_long(cfg: LaunchConfig, model: ModelFacts | None, version: str) -> None:
    """A ``--context-length`` above the model's, which SGLang refuses at startup, is a CheckError
    (one line): ``ModelConfig._derive_context_length`` (``sglang/srt/configs/model_config.py``)
    raises ``ValueError`` unless ``SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN`` is true. The derived
    length (``get_context_length``) is ``max_position_embeddings`` when the config has no other
    length key and no RoPE factor; otherwise nothing is refused here."""
    length = cfg.values.get("context_len")
    if length is None or model is None or model.max_len_caveat or model.rope_factor:
        return
    longest = model.values.get("max_position_embeddings")
    allowed = cfg.env.get("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "").strip().lower() in ("true", "1", "yes", "y")
    if longest and length > longest and not allowed:
        raise CheckError(
            f"--context-length {length} is above the model's length, {longest} "
            f"({model.fields.get('max_position_embeddings')} of {model.path}): SGLang {version} refuses the line at "
            f"startup (_derive_context_length, sglang/srt/configs/model_config.py); give --context-length {longest} "
            "or less, or prefix the line with SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 to run beyond it"
        )


def run_check(
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
    (:func:`default_backends`, for ``gpu`` when given) is checked: its obligations apply; when the
    default is not in the table (unknown model, a model override that picks it) those obligations
    need ``--attention-backend``.
    """
    options = options or Options()
    model = _without_overridden(model, cfg.model_overrides)
    _refuse_too_long(cfg, model, version)
    pins = dict(cfg.values)
    if model is not None:  # the model's numbers (experts, top-k, ...), as for vLLM lines
        pins.update({k: v for k, v in model.values.items() if k in MODEL_PARAMS and k not in pins})
    if "context_len" not in pins and model and "max_position_embeddings" in model.values:
        pins["context_len"] = model.values["max_position_embeddings"]
    features = set(model.features) if model else set()
    if cfg.speculative_algorithm:
        features.add("spec_decode")
    # the buffer-sizing server arguments, as SGLang derives them (engines/sglang/server_args.py)
    from .server_args import USED_FLAGS, sizing, speculative_params

    derived = sizing(cfg.values, cfg.switches, cfg.strings)
    pins.update(derived.pins)
    architecture = model.architectures[0] if model is not None and model.architectures else None
    try:  # the speculative sizes SGLang picks (or adjusts) at startup for an EAGLE-family line
        spec_pins, spec_why = speculative_params(cfg.speculative_algorithm, cfg.values, cfg.switches, architecture)
    except ValueError as exc:
        raise CheckError(str(exc)) from None
    pins.update(spec_pins)
    features |= derived.features
    backend_default, backend_unknown = None, ""
    if not any(f.startswith("sglang_attention_backend_") for f in derived.features):
        row = _gpu_row(gpu)
        backend_unknown = _backend_unknown(model)
        if not backend_unknown:
            backend_default = default_backends(row, model)
            features |= {f"sglang_attention_backend_{b}" for b in backend_default.values}
    mla = model is not None and "mla" in model.features
    features |= file_features(
        [f.removeprefix("sglang_attention_backend_") for f in features if f.startswith("sglang_attention_backend_")],
        mla,
    )
    checked, used = check_all("sglang", version, pins, {}, features, model, None, None, paths, options, absent=ABSENT)
    if backend_unknown:  # an obligation on one backend's buffers may apply: the backend is not known
        for c in checked:
            requires = set(getattr(c.obligation, "requires", ()))
            backends = {r for r in requires if r.startswith("sglang_attention_backend_")}
            if not c.applicable and backends and requires - backends <= features:
                named = ", ".join(sorted(b.removeprefix("sglang_attention_backend_") for b in backends))
                c.why_not = (
                    f"about one attention backend's buffers ({named}): the default backend is not known for this line"
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
        "--attn-dp-size": "mul_base",
        **USED_FLAGS,
    }
    # a derived feature is used when an applied obligation requires it
    required = {r for c in checked if c.applicable for r in getattr(c.obligation, "requires", ())}
    used.update(f"feature:{f}" for f in derived.features & required)
    given = any(f.startswith("sglang_attention_backend_") for f in derived.features)
    if given and any(f.startswith("sglang_attention_backend_") for f in features & required):
        used.add("feature:sglang_attention_backend")
    unused = [f for f in cfg.origin if f not in ("--model-path", "--config") and params.get(f) not in used]
    defaults = [Default(param, values, why) for param, values, why in derived.assumptions]
    if backend_default is not None:
        defaults.append(backend_default)
    outcome = CheckOutcome(
        "sglang",
        version,
        checked,
        defaults,
        unused,
        dict(cfg.env),
        model,
        uncovered_inventory("sglang", version),
        display="SGLang",
        releases=(SGLANG_VERSION,),
    )
    if spec_why:
        outcome.derived.append(spec_why)
    # a value SGLang picks at startup (auto_choose_speculative_params, the page size per backend, the
    # context length from the model): a failure only there is not a will-fail of this line
    outcome.undetermined = {
        name: f"{flag} N (not given: SGLang {version} picks it at startup; capproof checked every value)"
        for name, flag in FREE_PARAM_FLAGS
        if name not in pins
    }
    outcome.notes = deployment_notes(outcome, cfg)
    named = sorted(
        f.removeprefix("sglang_attention_backend_")
        for f in derived.features
        if f.startswith("sglang_attention_backend_")
    )
    backends = named or (list(backend_default.values) if backend_default else [])
    outcome.undecided_buffers = undecided_backend_buffers(backends, mla, checked, version)
    if not outcome.applicable and not outcome.missing_facts:
        backends = backend_default.values if backend_default else ()
        outcome.derived.append(
            "what is missing: spec/ has SGLang obligations for the "
            + ", ".join(MODELLED_BACKENDS)
            + " attention backends' decode-graph buffers, MoE alignment (models with routed experts) and "
            "req_to_token under speculative decoding (--speculative-algorithm); none reaches this line"
            + (f" (default attention backend {', '.join(backends)})" if backends else "")
        )
    return outcome


def deployment_notes(outcome: CheckOutcome, cfg: LaunchConfig) -> list[str]:
    """The sizing parameters the launch line left free (every value of each obligation's domain is
    checked), one line each, without indentation."""
    free = {p for c in outcome.applicable for p in c.free}
    return [
        f"rests on no {name}: {flag} not given, every value of each obligation's domain is checked"
        for name, flag in FREE_PARAM_FLAGS
        if name in free
    ]


@functools.cache
def vocabulary() -> frozenset[str]:
    """Parameter names of an SGLang deployment: what a launch line pins (``SIZING_FLAGS``), what
    :mod:`.server_args` derives, the ``ServerArgs`` fields it reads, and the config name of every
    launch flag (``--context-length`` -> ``context_length``)."""
    from .flags import SGLANG_FLAGS
    from .launch import SIZING_FLAGS
    from .server_args import DEFAULTS, USED_FLAGS

    derived = {p for p in USED_FLAGS.values() if not p.startswith("feature:")}
    dests = {f.lstrip("-").replace("-", "_") for f in SGLANG_FLAGS if f.startswith("--")}
    return frozenset(set(SIZING_FLAGS.values()) | derived | set(DEFAULTS) | dests)
