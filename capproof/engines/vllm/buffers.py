"""``capproof inventory --engine vllm==X``: vLLM's pre-allocated buffers, traced where possible.

Builds the inventory (:mod:`capproof.inventory`) of one vLLM release: the static scan
(:mod:`.scan`) lists every pre-allocation in the inventory's scope with its file, line, dtype and the
allocation call's argument text (``read``); :mod:`.trace` then runs vLLM's own constructors on
symbolic config values and replaces each recorded allocation's entry by its ``traced`` shape.

Files: ``proofs/inventory/vllm-<version>.json`` (the contract read by the coverage tooling) and
``proofs/inventory/vllm-<version>.md`` (tables per directory, summary counts).

Names in shapes (the engine's own, with one vocabulary across classes): ``max_num_reqs``
(``scheduler_config.max_num_seqs``; the runners call it ``max_num_reqs``),
``max_num_batched_tokens``, ``max_model_len``, ``block_size`` (``cache_config.block_size``),
``dcp`` (``decode_context_parallel_size``), ``num_speculative_tokens``, ``hidden_size``,
``vocab_size``, ``num_sms`` and the constructor arguments the tracer binds (e.g. ``max_num_blocks``).
"""

from __future__ import annotations

import os
import re
import sys
import time
from dataclasses import dataclass

from ...errors import SpecError
from ...inventory import Entry, dump
from ..tracing import command as _command
from ..tracing.command import normalise
from .scan import Allocation, scan

__all__ = ["INVENTORY_DIR", "paths", "read_entry", "build", "run_inventory", "run_diff"]

INVENTORY_DIR = _command.INVENTORY_DIR

#: config spellings -> the inventory's one vocabulary (the runners' own names)
RENAME = {
    "max_num_seqs": "max_num_reqs",
    "decode_context_parallel_size": "dcp",
    "dcp_world_size": "dcp",
    "dcp_size": "dcp",
    "num_spec_tokens": "num_speculative_tokens",
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
    """``(json, md)`` paths of the committed inventory of vLLM ``version``."""
    return _command.paths("vllm", version, root)


def _normalise(text: str) -> str:
    return normalise(text, RENAME)


def normalise_dtype(text: str) -> str:
    return DTYPES.get(text, text)


def read_entry(a: Allocation, why: str) -> Entry:
    """The ``read`` entry of one scanned allocation: its argument text, names normalised."""
    return _command.read_entry(a, why, RENAME, DTYPES)


def _untraced_why(a: Allocation, traced_run: bool) -> str:
    """Why an allocation no harness reached is read (refined by the tracer's reasons)."""
    if not traced_run:
        return "static reading (--no-trace)"
    from .harnesses import HARNESSES

    if os.path.basename(a.file).startswith("rocm") and a.owner not in HARNESSES:
        return "ROCm-only backend: not executed on a CPU build (static reading of the allocation call)"
    if a.owner in HARNESSES:
        return (
            f"{a.owner} was constructed but this allocation was not reached (allocated outside the "
            "constructor, e.g. in build() or a lazy getter; static reading)"
        )
    return f"no harness constructs {a.owner} yet (static reading of the allocation call)"


@dataclass
class Built:
    entries: list[Entry]
    allocations: int
    seconds: float
    trace_problems: list[str]
    #: engine facts checked over this release's code (:mod:`capproof.facts`); None when not traced
    facts: list | None = None


def build(version: str, root: str | None = None, trace: bool = True) -> Built:
    """The inventory of vLLM ``version`` from its extracted sources under ``root``.

    With ``trace``, :func:`capproof.engines.vllm.harnesses.trace_all` runs the constructors (needs the
    real venv with torch); its entries replace the read ones with the same id, and
    :func:`capproof.engines.vllm.demand.derive_all` derives the demands it can by running the
    engine's code. Every entry gets its access sites (:func:`capproof.engines.tracing.accesses.annotate`).
    """
    from . import wheels

    t0 = time.perf_counter()
    if root is None:
        root = wheels.source_root("vllm", version)
    allocations = scan(root)
    entries = {a.id: read_entry(a, _untraced_why(a, trace)) for a in allocations}
    problems: list[str] = []
    if trace:
        from .harnesses import trace_all

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

    annotate(entries.values(), root)
    if trace:
        from .demand import derive_all
        from .demand_requests import derive_more

        problems += derive_all(list(entries.values()), root)
        problems += derive_more(list(entries.values()), root)
        from .demand_local_attention import derive_local_attention_rows

        problems += derive_local_attention_rows(list(entries.values()), root)
        from .demand_columns import derive_columns

        problems += derive_columns(list(entries.values()), root)
        from .demand import judge_request_rows
        from .foreign_uses import check_foreign_uses

        try:
            problems += [
                f"not verified: {line}" for line in check_foreign_uses(list(entries.values()), root, judge_request_rows)
            ]
        except Exception as exc:  # noqa: BLE001 - one line; the demands stay, marked as not checked
            for e in entries.values():
                for d in e.demands:
                    if isinstance(d, dict) and d.get("how") in ("executed", "ast"):
                        d["unchecked_uses"] = [f"uses in other files not read: {type(exc).__name__}"]
            problems.append(f"uses outside the allocating files not read: {type(exc).__name__}: {exc}"[:300])
    facts = None
    if trace:
        from .facts import engine_facts

        facts, fact_problems = engine_facts(
            root,
            entries=[
                {"id": e.id, "file": e.file, "owner": e.owner, "attribute": e.attribute, "shape": e.shape}
                for e in entries.values()
            ],
        )
        problems += fact_problems
    return Built(
        sorted(entries.values(), key=lambda e: e.id), len(allocations), time.perf_counter() - t0, problems, facts
    )


def run_inventory(
    engine_spec: str, json_out: str | None, write: bool, check: bool, out=print, err=None, trace: bool = True
) -> int:
    """The ``capproof inventory --engine`` command; returns the exit code (0 ok, 1 stale, 2 bad input,
    3 the wheel or the real venv is unavailable)."""
    from . import wheels

    err = err or (lambda s: print(s, file=sys.stderr))
    try:
        version = _version(engine_spec)
        wheels.fetch_version("vllm", version, download=True)
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
        "vllm",
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


def _version(spec: str) -> str:
    m = re.fullmatch(r"\s*vllm\s*(?:==\s*([0-9][0-9A-Za-z.+-]*))?\s*", spec or "")
    if not m:
        raise SpecError(f"--engine {spec!r}: expected vllm==VERSION (e.g. vllm==0.33.0)")
    return m.group(1) or wheels_default()


def wheels_default() -> str:
    from .wheels import PINNED

    return PINNED["vllm"]


def run_diff(old_spec: str, new_spec: str, out=print, err=None, trace: bool = True) -> int:
    """``capproof inventory --diff vllm==A vllm==B``: buffers added, removed, shape changed (exit 0).

    Each release is fetched (``pip download --no-deps`` into the wheel cache) and built in its own
    interpreter (:func:`capproof.engines.tracing.command.run_diff`); shapes are compared with the
    tracer's positive config names (:data:`.trace.POSITIVE`: ``dcp``, ``max_num_reqs``, ...) at least 1."""
    from . import wheels
    from .trace import POSITIVE

    return _command.run_diff(
        "vllm",
        (old_spec, new_spec),
        _version,
        lambda version: wheels.fetch_version("vllm", version, download=True),
        (wheels.WheelsUnavailable, wheels.EXIT_NO_WHEELS),
        "capproof.engines.vllm.buffers",
        out=out,
        err=err,
        trace=trace,
        source_root=lambda version: wheels.source_root("vllm", version),
        positive=POSITIVE,
    )


def _main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[0] != "build":
        print("usage: python -m capproof.engines.vllm.buffers build VERSION OUT.json [--no-trace]", file=sys.stderr)
        return 2
    version, out = argv[1], argv[2]
    built = build(version, trace="--no-trace" not in argv)
    for line in _command.problem_lines(built.trace_problems):
        print(f"warning: {line}", file=sys.stderr)
    dump(built.entries, "vllm", version, out)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(_main(sys.argv[1:]))
