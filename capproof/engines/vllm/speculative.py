"""The speculative method vLLM 0.33.0 runs for a ``--speculative-config`` that does not name one.

vLLM 0.33.0 ``SpeculativeConfig.__post_init__`` (``vllm/config/speculative.py:1226-1500``):

1. no ``method``: a dotted import path as ``model`` -> ``custom_class``; ``model`` ``ngram`` ->
   ``ngram``; otherwise ``draft_model``;
2. an MTP model type as the method (``deepseek_mtp``, …) -> ``mtp``;
3. for a model-based method (not ngram, ngram_gpu, suffix, custom_class, extract_hidden_states)
   other than eagle/eagle3/dflash/dspark, in this order: ``"eagle-"`` in the draft model's name
   (lower-cased) -> ``eagle``; ``"eagle3"`` -> ``eagle3``; ``"dflash"`` or the architecture
   ``MuseGlimmerAssistantModel`` -> ``dflash``; ``"dspark"`` or a DSpark architecture ->
   ``dspark``; a draft ``model_type`` in ``MTPModelTypes`` -> ``mtp``; else the method stays
   (``draft_model``).

Step 3 reads the draft's ``config.json`` only when the name does not decide: capproof reads it
from a local draft directory, and otherwise reports that the method cannot be inferred (the
answer is then undecided, naming ``method`` as what to give).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

__all__ = ["MTP_MODEL_TYPES", "InferredMethod", "infer_method"]

#: ``MTPModelTypes`` of vLLM 0.33.0 (``vllm/config/speculative.py:38-67``).
MTP_MODEL_TYPES = frozenset(
    {
        "deepseek_mtp",
        "dots3_note_mtp",
        "mimo_mtp",
        "mimo_v2_mtp",
        "glm4_moe_mtp",
        "glm4_moe_lite_mtp",
        "glm_ocr_mtp",
        "ernie_mtp",
        "nemotron_h_mtp",
        "exaone_moe_mtp",
        "exaone4_5_mtp",
        "qwen3_next_mtp",
        "qwen4_exp_mtp",
        "qwen3_5_mtp",
        "longcat_flash_mtp",
        "bailing_hybrid_v3_mtp",
        "minimax_m3_mtp",
        "bailing_hybrid_mtp",
        "mtp",
        "kimi_k3_mtp",
        "pangu_ultra_moe_mtp",
        "step3p5_mtp",
        "step5_mtp",
        "hy_v3_mtp",
        "hy_v4_mtp",
        "gemma4_mtp",
        "inkling_mtp",
        "glm5_next_mtp",
    }
)
#: Methods that need no draft model (``vllm/config/speculative.py:1297-1350``).
_MODEL_FREE = frozenset({"ngram", "ngram_gpu", "suffix", "custom_class", "extract_hidden_states"})
#: Methods vLLM 0.33.0 accepts without a ``model``: the target's own layers (mtp, dspark) or no
#: model at all (``vllm/config/speculative.py:1252-1295``; custom_class needs one).
_TARGET_OR_NO_MODEL = frozenset({"mtp", "dspark", "ngram", "ngram_gpu", "suffix", "extract_hidden_states"})
#: Methods the detection keeps as given.
_KEPT = frozenset({"eagle", "eagle3", "dflash", "dspark"})
#: Draft architectures that select DFlash / DSpark (``_QWEN3_OMNI_DSPARK_ARCHITECTURE``,
#: ``_MUSE_SPARK_DSPARK_ARCHITECTURE`` and the literals of ``:1451-1466``). The
#: ``DSparkDraftModel`` architecture counts only with ``model_type`` qwen3.
_DFLASH_ARCHS = frozenset({"MuseGlimmerAssistantModel"})
_DSPARK_ARCHS = frozenset({"Qwen3DSparkModel", "Qwen3OmniDSparkModel", "MuseSparkDSparkModel", "Gemma4DSparkModel"})


@dataclass(frozen=True)
class InferredMethod:
    """``method`` vLLM runs (None: it depends on a draft config.json capproof cannot read) and
    ``how`` it was found (one line, for the answer)."""

    method: str | None
    how: str


def _is_custom_proposer_path(model: str | None) -> bool:
    """vLLM 0.33.0 ``SpeculativeConfig._is_custom_proposer_path``: a dotted import path."""
    if model is None or model.startswith(("http://", "https://", "file://")) or "/" in model:
        return False
    parts = model.split(".")
    return len(parts) >= 2 and all(part.isidentifier() for part in parts)


def _draft_config(model: str) -> dict | None:
    """The draft's config.json when ``model`` is a local directory holding one, else None."""
    path = os.path.join(model, "config.json")
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def infer_method(method: str | None, model: str | None) -> InferredMethod:
    """The speculative method vLLM 0.33.0 runs for ``--speculative-config`` ``method``/``model``
    (strings as given; see the module docstring). Raises nothing: no ``model`` with a method that
    needs one (vLLM refuses it at startup) gives method None and what to give; another combination
    vLLM refuses at startup keeps the given method."""
    given = method
    if method is None and _is_custom_proposer_path(model):
        return InferredMethod(
            "custom_class", f"no method given: vLLM reads model {model!r} as a proposer class (custom_class)"
        )
    if method is None:
        method = "ngram" if model in ("ngram", "[ngram]") else "draft_model"
    if method in MTP_MODEL_TYPES:
        method = "mtp"
    if method == "[ngram]":
        method = "ngram"
    if model is None and method not in _TARGET_OR_NO_MODEL:
        # vllm/config/speculative.py:1252-1295: without "model" only these methods find one (the
        # target's own layers, or none needed); any other raises at startup
        return InferredMethod(
            None,
            'a speculative model in --speculative-config ("model": the draft, or "method": "mtp" '
            "for the model's own MTP layers): vLLM 0.33.0 refuses num_speculative_tokens without one "
            f"for method {method}{'' if given else ' (what no method means)'} ('num_speculative_tokens "
            "was provided but without speculative model')",
        )
    if method in _MODEL_FREE or method in _KEPT or model is None:
        how = "as given" if given == method else f"vLLM reads {given or 'no method'} as {method}"
        return InferredMethod(method, how)
    name = model.lower()
    prefix = (
        f"no method given: vLLM 0.33.0 infers {{}} from the draft model {model!r}"
        if given is None
        else f"method {given}: vLLM 0.33.0 detects {{}} from the draft model {model!r}"
    )
    if "eagle-" in name:
        return InferredMethod("eagle", prefix.format("eagle") + " (its name contains 'eagle-')")
    if "eagle3" in name:
        return InferredMethod("eagle3", prefix.format("eagle3") + " (its name contains 'eagle3')")
    if "dflash" in name:
        return InferredMethod("dflash", prefix.format("dflash") + " (its name contains 'dflash')")
    config = _draft_config(model) if os.path.isdir(model) else None
    where = f" ({os.path.join(model, 'config.json')}"
    archs = set((config or {}).get("architectures") or [])
    if archs & _DFLASH_ARCHS:
        return InferredMethod("dflash", prefix.format("dflash") + where + " architectures)")
    if "dspark" in name:
        return InferredMethod("dspark", prefix.format("dspark") + " (its name contains 'dspark')")
    if config is None:
        if method != "draft_model":  # an explicit mtp stays mtp (vLLM refuses a non-MTP draft at startup)
            return InferredMethod(method, "as given")
        return InferredMethod(
            None,
            f"the speculative method: vLLM 0.33.0 infers it from the draft model {model!r}'s "
            'config.json (architectures, model_type), which capproof cannot read; give "method" '
            "in --speculative-config (draft_model, eagle, eagle3, mtp, dflash, dspark) or the draft "
            "as a local directory",
        )
    model_type = config.get("model_type")
    if archs & _DSPARK_ARCHS or ("DSparkDraftModel" in archs and model_type == "qwen3"):
        return InferredMethod("dspark", prefix.format("dspark") + where + " architectures)")
    if model_type in MTP_MODEL_TYPES:
        return InferredMethod("mtp", prefix.format("mtp") + where + f" model_type {model_type})")
    return InferredMethod(method, prefix.format(method) + where + ": no eagle/dflash/dspark/MTP marker)")
