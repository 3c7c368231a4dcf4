"""The SGLang 0.5.23 server arguments that size a buffer, with SGLang's own defaults.

Read as SGLang 0.5.23 declares them (``sglang/srt/arg_groups/fields/*.py``, the ``ServerArgs``
namespaces; :data:`DEFAULTS` records each declared default, re-read from the wheel by
``tests/test_sglang_launch.py``, marked ``real``). Most sizing arguments default to ``None`` and
are resolved at launch from the GPU's memory and the model (``run_resolution_pipeline``): those a
launch line does not give stay free in the answer, and :func:`sizing` says so as an assumption.

What each argument sizes (the obligation parameters of ``spec/sglang_0_5_23_buffers.py`` and
``spec/sglang_req_to_token.py``):

- ``--context-length`` -> ``context_len`` (default: the model's ``max_position_embeddings``);
- ``--page-size`` -> ``page_size`` (default ``None``, resolved per attention backend);
- ``--max-running-requests`` -> ``req_pool_size`` = ``max(1, value // dp_size)`` under DP
  attention, else the value (``kv_cache_configurator.py::resolve_max_num_reqs``: then
  ``min(requested, token_capacity // 2)``, memory-dependent, stated as an assumption);
- ``--cuda-graph-max-bs-decode`` -> the decode graphs' ``max_bs`` (default ``None``: chosen from
  GPU memory);
- ``--enable-two-batch-overlap`` (x2), ``--enable-dp-attention`` (x ``attn_tp_size = tp // dp``,
  a gathered buffer) -> ``mul_base``, the CUDA-graph batch-size alignment
  (``utils/common.py::get_cuda_graph_batch_size_alignment``); any alignment > 1 is the feature
  ``sglang_graph_bs_alignment``;
- ``--attention-backend`` / ``--decode-attention-backend`` NAME -> the feature
  ``sglang_attention_backend_NAME`` (obligations on one backend's buffers require it; SGLang
  picks the default backend per model and GPU, so without the flag they are not applied);
- ``--speculative-algorithm`` -> the feature ``spec_decode``; ``--speculative-num-steps``,
  ``--speculative-eagle-topk``, ``--speculative-num-draft-tokens`` as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["DEFAULTS", "Sizing", "sizing", "USED_FLAGS", "speculative_params", "AUTO_SPECULATIVE_PARAMS"]

#: ``ServerArgs`` field -> (declared default, declaring file) in SGLang 0.5.23.
DEFAULTS = {
    "context_length": (None, "sglang/srt/arg_groups/fields/model.py"),
    "page_size": (None, "sglang/srt/arg_groups/fields/schedule.py"),
    "max_running_requests": (None, "sglang/srt/arg_groups/fields/schedule.py"),
    "mem_fraction_static": (None, "sglang/srt/arg_groups/fields/schedule.py"),
    "chunked_prefill_size": (None, "sglang/srt/arg_groups/fields/schedule.py"),
    "cuda_graph_max_bs_decode": (None, "sglang/srt/arg_groups/fields/exec_.py"),
    "speculative_num_steps": (None, "sglang/srt/arg_groups/fields/spec.py"),
    "speculative_eagle_topk": (None, "sglang/srt/arg_groups/fields/spec.py"),
    "speculative_num_draft_tokens": (None, "sglang/srt/arg_groups/fields/spec.py"),
    "enable_two_batch_overlap": (False, "sglang/srt/arg_groups/fields/exec_.py"),
    "enable_dp_attention": (False, "sglang/srt/arg_groups/fields/parallel.py"),
    "tp_size": (1, "sglang/srt/arg_groups/fields/parallel.py"),
    "dp_size": (1, "sglang/srt/arg_groups/fields/parallel.py"),
}

#: launch flags :func:`sizing` reads -> the parameter or feature they reach
USED_FLAGS = {
    "--max-running-requests": "req_pool_size",
    "--cuda-graph-max-bs-decode": "max_bs",
    "--enable-two-batch-overlap": "mul_base",
    "--enable-dp-attention": "mul_base",
    "--dp-size": "req_pool_size",
    "--attention-backend": "feature:sglang_attention_backend",
    "--decode-attention-backend": "feature:sglang_attention_backend",
}


@dataclass
class Sizing:
    """Pins, features and stated assumptions derived from one launch line."""

    pins: dict[str, int] = field(default_factory=dict)
    features: set[str] = field(default_factory=set)
    #: ``(param, values, why)``: values the answer rests on that the line does not fix
    assumptions: list[tuple[str, tuple, str]] = field(default_factory=list)


def sizing(values: dict[str, int], switches: set[str], strings: dict[str, str] | None = None) -> Sizing:
    """The sizing parameters of a launch line's values (``LaunchConfig.values``), valueless flags
    (``LaunchConfig.switches``) and text flags (``LaunchConfig.strings``), as SGLang 0.5.23
    derives them (module docstring)."""
    out = Sizing()
    strings = strings or {}
    backend = strings.get("--decode-attention-backend") or strings.get("--attention-backend")
    if backend:
        # the backend whose buffers the decode graphs use (obligations ``requires`` it)
        out.features.add(f"sglang_attention_backend_{backend.replace('-', '_')}")
    tp = values.get("tp", DEFAULTS["tp_size"][0])
    dp = values.get("dp_size", DEFAULTS["dp_size"][0])
    dp_attention = "--enable-dp-attention" in switches
    mul_base = 1
    if "--enable-two-batch-overlap" in switches:
        mul_base *= 2
    if dp_attention and dp > 1:
        mul_base *= max(1, tp // dp)
    out.pins["mul_base"] = mul_base
    if mul_base > 1:
        out.features.add("sglang_graph_bs_alignment")
    if "max_running_requests" in values:
        requested = values["max_running_requests"]
        per_worker = max(1, requested // dp) if dp_attention else requested
        out.pins["req_pool_size"] = per_worker
        out.assumptions.append(
            (
                "req_pool_size",
                (per_worker,),
                f"req_to_token_pool.size = min({per_worker}, token_capacity // 2) "
                "(kv_cache_configurator.py::resolve_max_num_reqs): assumed the memory-dependent "
                "token capacity does not lower it",
            )
        )
    else:
        out.assumptions.append(
            (
                "req_pool_size",
                (),
                "not given: SGLang 0.5.23 derives the running-request cap from "
                "the KV-cache token capacity (--mem-fraction-static, GPU memory); left free",
            )
        )
    if "cuda_graph_max_bs" in values:
        out.pins["max_bs"] = values["cuda_graph_max_bs"]
    else:
        out.assumptions.append(
            (
                "max_bs",
                (),
                "not given: SGLang 0.5.23 chooses the decode graphs' largest batch from "
                "GPU memory (cuda_graph_max_bs_decode default None); left free",
            )
        )
    return out


#: Speculative algorithms SGLang 0.5.23 resolves through ``_handle_eagle_family``
#: (``sglang/srt/speculative/spec_info.py`` ``handle_server_args``: ``is_eagle() or
#: is_standalone()``; NEXTN is an alias of EAGLE, ``_resolve_speculative_algorithm_alias``).
#: FROZEN_KV_MTP (a Gemma 4 assistant draft promoted from EAGLE/NEXTN) has its own handler.
EAGLE_FAMILY = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE")

#: ``_auto_choose_speculative_params`` of SGLang 0.5.23
#: (``sglang/srt/arg_groups/speculative_hook.py:1430``): architecture -> (steps, topk, draft
#: tokens); every other architecture (3, 1, 4), and STANDALONE (3, 1, 4) whatever the model.
#: Re-read from the wheel by ``tests/test_sglang_engine.py`` (marked ``real``).
AUTO_SPECULATIVE_PARAMS = {
    "LlamaForCausalLM": (5, 4, 8),
    "Grok1ForCausalLM": (5, 4, 8),
    "Grok1VForCausalLM": (5, 4, 8),
}
AUTO_SPECULATIVE_DEFAULT = (3, 1, 4)

_SPEC_NAMES = ("speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens")


def speculative_params(
    algorithm: str | None, values: dict[str, int], switches: set[str], architecture: str | None
) -> tuple[dict[str, int], str]:
    """The speculative sizes SGLang 0.5.23 runs an EAGLE-family line with: ``({param: value}, why)``
    for the values it picks or adjusts, ``({}, "")`` when it picks none or capproof cannot tell.

    As ``_handle_eagle_family`` (``speculative_hook.py:1072-1266``): without
    ``--speculative-num-steps`` (and not ``--speculative-adaptive``) it takes all three from
    :data:`AUTO_SPECULATIVE_PARAMS` by the model's first architecture (``architecture``; None: not
    known, nothing picked); with ``speculative_eagle_topk == 1`` it sets the draft tokens to
    steps + 1. Raises ValueError (one line) when SGLang stops at startup: a top-k or draft-token
    count without the step count (its ``assert``)."""
    if not algorithm or algorithm.upper() not in EAGLE_FAMILY or "--speculative-adaptive" in switches:
        return {}, ""
    given = {k: values[k] for k in _SPEC_NAMES if k in values}
    if "speculative_num_steps" not in given:
        if given:
            raise ValueError(
                "--speculative-eagle-topk/--speculative-num-draft-tokens without --speculative-num-steps: "
                "SGLang 0.5.23 stops at startup (an assert in _handle_eagle_family, speculative_hook.py:1162); "
                "give all three, or none to let SGLang choose them"
            )
        if architecture is None or architecture.startswith("Gemma4"):  # unknown, or a FROZEN_KV_MTP draft
            return {}, ""
        chosen = AUTO_SPECULATIVE_DEFAULT
        if algorithm.upper() != "STANDALONE":
            chosen = AUTO_SPECULATIVE_PARAMS.get(architecture, AUTO_SPECULATIVE_DEFAULT)
        steps, topk, draft = chosen
        return (
            dict(zip(_SPEC_NAMES, chosen)),
            f"speculative_num_steps={steps}, speculative_eagle_topk={topk}, speculative_num_draft_tokens={draft}: "
            f"SGLang 0.5.23's choice for {architecture} (_auto_choose_speculative_params, "
            "sglang/srt/arg_groups/speculative_hook.py:1430)",
        )
    if given.get("speculative_eagle_topk") == 1 and "speculative_num_draft_tokens" in given:
        steps = given["speculative_num_steps"]
        if given["speculative_num_draft_tokens"] != steps + 1:
            return (
                {"speculative_num_draft_tokens": steps + 1},
                f"speculative_num_draft_tokens={steps + 1}: SGLang 0.5.23 sets it to speculative_num_steps + 1 "
                f"when speculative_eagle_topk == 1 (_handle_eagle_family, speculative_hook.py:1255), not the "
                f"{given['speculative_num_draft_tokens']} given",
            )
    return {}, ""
