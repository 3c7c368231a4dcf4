"""The engines capproof knows, in one place: ``--engine NAME[==VERSION]`` -> its adapter.

The command line and ``check-config`` find an engine here and use it through
:class:`capproof.engines.adapter.EngineAdapter`. Importing this module is cheap (adapters import
their flag tables and parsers when used), so the command line can build its help from it.
"""

from __future__ import annotations

from .adapter import CheckError, EngineAdapter
from .sglang.adapter import SGLANG
from .vllm.adapter import VLLM

__all__ = [
    "ADAPTERS",
    "DEFAULT",
    "adapter_for",
    "parse_engine",
    "inventory_adapter",
    "engine_names",
    "parameter_warnings",
]

#: Every engine adapter; the first is the default engine of ``check-config`` and ``inventory``.
ADAPTERS: tuple[EngineAdapter, ...] = (VLLM, SGLANG)
DEFAULT: EngineAdapter = ADAPTERS[0]


def engine_names() -> tuple[str, ...]:
    """Every ``--engine`` name, adapter by adapter."""
    return tuple(name for adapter in ADAPTERS for name in adapter.engines)


def adapter_for(engine: str) -> EngineAdapter:
    """The adapter answering for ``engine`` (a name of :func:`engine_names`). Raises KeyError."""
    for adapter in ADAPTERS:
        if engine in adapter.engines:
            return adapter
    raise KeyError(engine)


def parse_engine(text: str) -> tuple[str, str]:
    """``--engine`` text (``NAME`` or ``NAME==VERSION``, e.g. ``vllm==0.23.0``) -> (engine, version):
    the engine's default release when none is given, else the release's own spelling. Raises
    CheckError (one line) for an unknown engine or a release capproof does not model."""
    name, sep, version = text.partition("==")
    name = name.strip().lower()
    try:
        adapter = adapter_for(name)
    except KeyError:
        supported = [a.usage() for a in ADAPTERS]
        raise CheckError(
            f"--engine {text!r}: supported are {', '.join(supported[:-1])} and {supported[-1]}"
            if len(supported) > 1
            else f"--engine {text!r}: supported is {supported[0]}"
        ) from None
    return adapter.resolve(name, version if sep else None, text)


def inventory_adapter(*specs: str | None) -> EngineAdapter:
    """The adapter of ``capproof inventory``'s ``--engine`` (or both ``--diff`` releases): the one
    whose engine every spec names, else :data:`DEFAULT`."""
    for adapter in ADAPTERS:
        if specs and all(spec and adapter.owns_spec(spec) for spec in specs):
            return adapter
    return DEFAULT


def parameter_warnings(items) -> list[str]:
    """One line per parameter of an obligation about an engine that is a near miss of one of the
    engine's config names (:meth:`EngineAdapter.did_you_mean`): ``max_model_length`` where
    ``max_model_len`` was meant would stay unpinned under ``check-config`` and be checked over its
    whole domain. ``items`` are the loaded obligations and contracts (those without an ``engine``
    or with an engine capproof has no adapter for are skipped)."""
    lines = []
    vocabularies: dict[str, EngineAdapter] = {}
    for item in items:
        engine = getattr(item, "engine", None)
        if not engine or not hasattr(item, "domain"):
            continue
        if engine not in vocabularies:
            try:
                vocabularies[engine] = adapter_for(engine)
            except KeyError:
                continue
        adapter = vocabularies[engine]
        for param in item.params:
            meant = adapter.did_you_mean(param)
            if meant is not None:
                lines.append(
                    f"{item.id}: parameter {param!r} is not a {adapter.display(engine)} config name; did you mean "
                    f"{meant!r}? (check-config pins {meant}, so {param} would stay free over its whole domain)"
                )
    return lines
