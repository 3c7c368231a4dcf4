"""SGLang's side of ``capproof check-config``: what a launch line means for the obligations.

:func:`run_check` pins a :class:`~capproof.engines.sglang.launch.LaunchConfig` (and the
buffer-sizing server arguments SGLang derives from it, :mod:`.server_args`) and runs every
applicable ``engine="sglang"`` obligation through :func:`capproof.engines.checkconfig.check_all`.
"""

from __future__ import annotations

import functools

from ...verdict import Options
from ..checkconfig import CheckOutcome, Default, ModelFacts, check_all
from .flags import SGLANG_VERSION
from .launch import LaunchConfig

__all__ = ["run_check", "deployment_notes"]

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


def run_check(
    cfg: LaunchConfig, version: str, model: ModelFacts | None = None, paths=("spec",), options: Options | None = None
) -> CheckOutcome:
    """Prove every ``engine="sglang"`` obligation of ``paths`` under an SGLang launch line's pins.

    ``context_len`` defaults to the model's ``max_position_embeddings`` (SGLang's default context
    length); speculative parameters not given stay symbolic (SGLang chooses them per model) and
    the answer says so.
    """
    options = options or Options()
    pins = dict(cfg.values)
    if "context_len" not in pins and model and "max_position_embeddings" in model.values:
        pins["context_len"] = model.values["max_position_embeddings"]
    features = set(model.features) if model else set()
    if cfg.speculative_algorithm:
        features.add("spec_decode")
    # the buffer-sizing server arguments, as SGLang derives them (engines/sglang/server_args.py)
    from .server_args import USED_FLAGS, sizing

    derived = sizing(cfg.values, cfg.switches, cfg.strings)
    pins.update(derived.pins)
    features |= derived.features
    checked, used = check_all("sglang", version, pins, {}, features, model, None, None, paths, options, absent=ABSENT)
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
    outcome = CheckOutcome(
        "sglang", version, checked, defaults, unused, dict(cfg.env), model, display="SGLang", releases=(SGLANG_VERSION,)
    )
    outcome.notes = deployment_notes(outcome, cfg)
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
