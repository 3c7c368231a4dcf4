"""``capproof inventory --engine sglang==X``: SGLang's pre-allocated buffers, traced where possible.

The static scan (:mod:`.scan`) lists every pre-allocation in the scope with its file, line, dtype
and the allocation call's argument text (``read``); :mod:`.trace` then runs SGLang's own
constructors on symbolic server arguments and replaces each recorded allocation's entry by its
``traced`` shape. Files: ``proofs/inventory/sglang-<version>.json`` and ``.md``, in the format of
vLLM's (:mod:`capproof.inventory`).
"""

from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass

from ...errors import SpecError
from ...inventory import Entry
from ..tracing import command as _command
from .scan import Allocation, scan

__all__ = ["paths", "read_entry", "build", "run_inventory", "VERSION"]

#: The SGLang release capproof models (the newest on the package registry when written).
VERSION = "0.5.23"

#: SGLang's spellings -> the inventory's vocabulary (:mod:`.trace` module docstring)
RENAME = {
    "max_num_token": "max_num_tokens",
}
DTYPES = {
    "float": "float32",
    "long": "int64",
    "int": "int64",
    "half": "float16",
    "double": "float64",
    "bfloat16": "bfloat16",
    "bool": "bool",
}


def paths(version: str, root: str = "") -> tuple[str, str]:
    """``(json, md)`` paths of the committed inventory of SGLang ``version``."""
    return _command.paths("sglang", version, root)


def read_entry(a: Allocation, why: str) -> Entry:
    """The ``read`` entry of one scanned allocation: its argument text, names normalised."""
    return _command.read_entry(a, why, RENAME, DTYPES)


def _untraced_why(a: Allocation, traced_run: bool) -> str:
    if not traced_run:
        return "static reading (--no-trace)"
    from .trace import HARNESSES

    if a.owner in HARNESSES:
        return (
            f"{a.owner} was constructed but this allocation was not reached (allocated outside the "
            "traced constructor/initialiser; static reading)"
        )
    return f"no harness constructs {a.owner} yet (static reading of the allocation call)"


@dataclass
class Built:
    entries: list[Entry]
    allocations: int
    seconds: float
    trace_problems: list[str]
    #: engine facts of the derivations (:mod:`capproof.engines.sglang.facts`); None when not traced
    facts: list | None = None


def build(version: str, root: str | None = None, trace: bool = True) -> Built:
    """The inventory of SGLang ``version`` from its extracted sources under ``root``; with
    ``trace``, :func:`capproof.engines.sglang.trace.trace_all`'s entries replace the read ones and
    :func:`capproof.engines.sglang.demand.derive_all` derives the demands it can by running SGLang's
    code. Every entry gets its access sites (:func:`capproof.engines.tracing.accesses.annotate`)."""
    from ..vllm import wheels

    t0 = time.perf_counter()
    if root is None:
        root = wheels.source_root("sglang", version)
    allocations = scan(root)
    entries = {a.id: read_entry(a, _untraced_why(a, trace)) for a in allocations}
    problems: list[str] = []
    if trace:
        from .trace import trace_all

        traced, problems, reasons = trace_all(version, root, allocations)
        for a in allocations:
            if entries[a.id].how == "read":
                entries[a.id].why = reasons.get(a.id, _untraced_why(a, True))
        for e in traced:
            if e.id in entries:
                entries[e.id] = e
            else:
                problems.append(f"traced allocation {e.id} is not in the static scan")
    from ..tracing.accesses import annotate

    annotate(entries.values(), root, receiver=True)
    if trace:
        from .demand import derive_all

        problems += derive_all(list(entries.values()), root)
    facts = None
    if trace:
        from .facts import engine_facts

        facts = engine_facts(sorted(entries.values(), key=lambda e: e.id))
    return Built(
        sorted(entries.values(), key=lambda e: e.id), len(allocations), time.perf_counter() - t0, problems, facts
    )


def version_of(spec: str) -> str:
    """``sglang==X`` -> ``X`` (``sglang`` alone: :data:`VERSION`). Raises SpecError for another form."""
    m = re.fullmatch(r"\s*sglang\s*(?:==\s*([0-9][0-9A-Za-z.+-]*))?\s*", spec or "")
    if not m:
        raise SpecError(f"--engine {spec!r}: expected sglang==VERSION (e.g. sglang=={VERSION})")
    return m.group(1) or VERSION


def run_inventory(
    engine_spec: str, json_out: str | None, write: bool, check: bool, out=print, err=None, trace: bool = True
) -> int:
    """``capproof inventory --engine sglang==X``; exit 0 ok, 1 stale, 2 bad input, 3 the wheel or
    the real venv is unavailable."""
    from ..vllm import wheels

    err = err or (lambda s: print(s, file=sys.stderr))
    try:
        version = version_of(engine_spec)
        wheels.fetch_version("sglang", version, download=True)
    except SpecError as exc:
        err(f"error: {exc}")
        return 2
    except wheels.WheelsUnavailable as exc:
        err(f"capproof: real engine unavailable: {exc}")
        return wheels.EXIT_NO_WHEELS
    try:
        built = build(version, trace=trace)
    except ImportError as exc:
        err(f"capproof: tracing needs the real venv (make real-install; run .capproof/real-venv/bin/capproof): {exc}")
        return wheels.EXIT_NO_WHEELS
    for line in _command.problem_lines(built.trace_problems):
        err(f"warning: {line}")
    return _command.finish(
        "sglang",
        version,
        built.entries,
        json_out,
        write,
        check,
        built.allocations,
        built.seconds,
        out=out,
        err=err,
        facts=built.facts,
    )


def run_diff(old_spec: str, new_spec: str, out=print, err=None, trace: bool = True) -> int:
    """``capproof inventory --diff sglang==A sglang==B``: buffers added, removed, shape changed (exit 0);
    each release fetched (``pip download --no-deps``) and built in its own interpreter
    (:func:`capproof.engines.tracing.command.run_diff`)."""
    from ..vllm import wheels

    return _command.run_diff(
        "sglang",
        (old_spec, new_spec),
        version_of,
        lambda version: wheels.fetch_version("sglang", version, download=True),
        (wheels.WheelsUnavailable, wheels.EXIT_NO_WHEELS),
        "capproof.engines.sglang.buffers",
        out=out,
        err=err,
        trace=trace,
        source_root=lambda version: wheels.source_root("sglang", version),
    )


def _main(argv: list[str]) -> int:
    from ...inventory import dump

    if len(argv) < 3 or argv[0] != "build":
        print("usage: python -m capproof.engines.sglang.buffers build VERSION OUT.json [--no-trace]", file=sys.stderr)
        return 2
    version, out = argv[1], argv[2]
    built = build(version, trace="--no-trace" not in argv)
    dump(built.entries, "sglang", version, out)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(_main(sys.argv[1:]))
