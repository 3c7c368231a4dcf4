"""The engines capproof knows, in one place: ``--engine NAME[==VERSION]`` -> its adapter.

The command line and ``check-config`` find an engine here and use it through
:class:`capproof.engines.adapter.EngineAdapter`. Importing this module is cheap (adapters import
their flag tables and parsers when used), so the command line can build its help from it.
"""

from __future__ import annotations

from .adapter import CheckError, EngineAdapter
from .sglang.adapter import SGLANG
from .vllm.adapter import VLLM

__all__ = ["ADAPTERS", "DEFAULT", "adapter_for", "parse_engine", "inventory_adapter", "engine_names"]

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
