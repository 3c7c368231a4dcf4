"""The engine facts of vLLM: named assumptions of ``spec/`` checked over a release's code.

Each provider in :data:`PROVIDERS` (``"module:function"``, the function taking the extracted
source root and returning a list of fact records, :func:`capproof.facts.fact_record`) checks one
family of facts on every path that sets its quantity. :func:`engine_facts` runs them all for
``capproof inventory`` (real tier: vLLM importable), which writes them next to the inventory
(:func:`capproof.facts.facts_path`). A provider that fails gives one problem line and no fact:
its assumptions then stay assumed (never a fact from a guess).
"""

from __future__ import annotations

import importlib
import inspect

__all__ = ["PROVIDERS", "engine_facts"]

#: Fact providers, one per family of facts (one module each).
PROVIDERS = (
    "capproof.engines.vllm.fact_requests:request_facts",
    "capproof.engines.vllm.fact_tokens:token_facts",
    "capproof.engines.vllm.fact_slots:slot_facts",
    "capproof.engines.vllm.fact_guards:guard_facts",
)


def engine_facts(
    root: str, providers: tuple[str, ...] = PROVIDERS, entries: list[dict] | None = None
) -> tuple[list[dict], list[str]]:
    """``(facts, problems)``: every provider's facts over the sources under ``root``, in order,
    and one line per provider that failed (``ImportError`` included: not checked). ``entries``
    (inventory entries as dicts: ``id``, ``file``, ``owner``, ``attribute``) go to the providers
    that take an ``entries`` parameter (a fact scoped per entry)."""
    facts: list[dict] = []
    problems: list[str] = []
    for spec in providers:
        module, _, name = spec.partition(":")
        try:
            provider = getattr(importlib.import_module(module), name)
            if entries is not None and "entries" in inspect.signature(provider).parameters:
                facts += provider(root, entries=entries)
            else:
                facts += provider(root)
        except Exception as exc:  # noqa: BLE001 - one line per provider; its facts stay assumed
            problems.append(f"engine facts of {spec} not checked: {type(exc).__name__}: {exc}"[:300])
    from ...facts import status, unchecked_paths

    for f in facts:
        st = status(f)
        if st != "checked":
            bad = unchecked_paths(f)
            problems.append(
                f"{st} ({len(bad)} paths not checked or refuted, e.g. {bad[0]['site'] if bad else '?'}): {f['fact']}"[
                    :300
                ]
            )
    return facts, problems
