"""Run an engine's harnesses on symbolic config values and collect traced inventory entries.

Engine-neutral: the engine is described by an object implementing :class:`capproof.engines.tracing.Engine`
(its harness registry, config names and stand-ins).
"""

from __future__ import annotations

import importlib
import os
import re
import sys

from ...errors import SpecError
from ...inventory import Entry, classify, expression_names, to_expression
from ...symbolic import SymInt, tracing
from .fake import Recorded, recording
from .interpret import StepLog, install_cuda_only

__all__ = ["prepare", "one_run", "facts", "explore_harness", "condition_expression", "trace_all", "matches"]


def prepare(engine, name: str) -> None:
    """Import harness ``name``'s engine modules (outside the recording); a GPU-only package they
    import (``engine.CUDA_ONLY_PACKAGES``) is replaced by a :class:`~.interpret.CudaOnly` module."""
    for m in engine.MODULES[name]:
        for _ in range(64):
            try:
                importlib.import_module(m)
                break
            except ModuleNotFoundError as exc:
                missing = exc.name or ""
                if missing.split(".")[0] not in engine.CUDA_ONLY_PACKAGES or missing in sys.modules:
                    raise
                install_cuda_only(missing)


# ------------------------------------------------------------------------------------------------
# running


def matches(rec: Recorded, sites: dict[tuple[str, int], object]):
    for frame in rec.stack:
        if frame in sites:
            return sites[frame]
    return None


def record(engine, root: str, mode: str = "fake"):
    """:func:`~.fake.recording` with ``engine``'s stand-ins and facts."""
    return recording(root, mode, patches=engine.patches, facts=lambda: facts(engine))


def one_run(engine, name: str, root: str):
    """Run harness ``name`` once on symbolic values: ``(records, skipped statements, error)``."""
    values = engine.config_values(symbolic=True)
    rec = None
    logs: list[StepLog] = []
    error = None
    try:
        with tracing(), record(engine, root, "fake") as rec:
            result = engine.HARNESSES[name](values, "cpu")
        logs = [
            x[1]
            for x in (result if isinstance(result, list) else [result])
            if isinstance(x, tuple) and isinstance(x[1], StepLog)
        ]
    except Exception as exc:  # noqa: BLE001 - a harness that cannot run leaves entries read
        error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        error = re.sub(r"\S*?(%s/\S+\.py:\d+)" % re.escape(engine.PACKAGE), r"\1", error)[:240]
    return (rec.records if rec is not None else []), [item for log in logs for item in log.skipped], error


def facts(engine):
    """What every config name satisfies (sizes >= 1, counts >= 0): prunes impossible branches."""
    import z3

    return [z3.Int(n) >= 1 for n in engine.POSITIVE] + [z3.Int(n) >= 0 for n in engine.NONNEGATIVE]


def explore_harness(engine, name: str, root: str):
    """Run harness ``name`` on every path through its branches on symbolic values
    (:func:`capproof.symbolic.explore`, budget ``engine.FORK_BUDGET``); without ``explore`` (older
    core), one run on which a branch on a symbolic value is a skipped statement.

    Returns ``(runs, complete)``: one ``(condition Z3 term, records, skipped, error)`` per path."""
    import z3

    try:
        from ...symbolic import explore
    except ImportError:  # pragma: no cover - a core without forking
        records, skipped, error = one_run(engine, name, root)
        return [(z3.BoolVal(True), records, skipped, error)], True
    # without the prover's exception watch: the tracer skips a statement on which the engine caught a
    # capproof error, but an engine's own ``except TypeError`` (how it handles its arguments) would
    # poison whole constructors; a fallback it takes only on symbolic sizes is a known limit
    exploration = explore(
        lambda: one_run(engine, name, root), budget=engine.FORK_BUDGET, assume=facts(engine), watch=False, split=False
    )
    runs = []
    for path in exploration.paths:
        if path.error is not None:
            runs.append((path.condition.term, [], [], f"{type(path.error).__name__}: {path.error}"[:240]))
            continue
        records, skipped, error = path.value
        runs.append((path.condition.term, records, skipped, error))
    return runs, exploration.complete


def condition_expression(engine, term) -> str:
    """A Z3 Bool term in the shape expression language (comparisons joined by ``&``/``|``)."""
    import z3

    from ...inventory import ExpressionPrinter

    known = facts(engine)
    return ExpressionPrinter(known).show(z3.simplify(_simplest_equivalent(term, known)))[0]


def _simplest_equivalent(term, facts, rlimit: int = 200000):
    """``term`` or a conjunction of at most two of its comparisons that is equivalent to it under
    ``facts`` (an ``unsat`` answer to ``facts & (term != candidate)``; anything else keeps
    ``term``). A disjunction of path conditions often reduces to the one switch that decides it."""
    import z3

    atoms: list = []
    seen: set = set()

    def walk(t):
        if z3.is_app(t) and t.decl().kind() in (z3.Z3_OP_AND, z3.Z3_OP_OR, z3.Z3_OP_NOT):
            for c in t.children():
                walk(c)
        elif t.get_id() not in seen:
            seen.add(t.get_id())
            atoms.append(t)

    walk(term)
    if len(atoms) <= 1 or len(atoms) > 24:
        return term
    literals = atoms + [z3.Not(a) for a in atoms]
    candidates = literals + [z3.And(a, b) for i, a in enumerate(literals) for b in literals[i + 1 :]]
    for cand in candidates:
        solver = z3.Solver()
        solver.set("rlimit", rlimit)
        solver.add(*facts)
        solver.add(term != cand)
        if solver.check() == z3.unsat:
            return cand
    return term


def trace_all(engine, root: str, allocations, names: list[str] | None = None):
    """Run every harness on symbolic config values; return ``(entries, problems, reasons)``:
    the traced :class:`~capproof.inventory.Entry` list, problems to warn about, and for each
    allocation id a harness failed to reach, why (``{id: why}``).

    Each harness runs once per path through its branches on symbolic values; an allocation's
    shape is the ``select`` over the paths' conditions of the shapes recorded on them. It is
    ``traced`` only when the exploration was complete; when only some paths allocate the buffer,
    ``why`` says on which condition it exists."""
    import z3

    sites = {(a.file, a.line): a for a in allocations}
    traced: dict[str, Entry] = {}
    problems: list[str] = []
    reasons: dict[str, str] = {}
    for name in names or sorted(engine.HARNESSES):
        try:
            prepare(engine, name)
        except Exception as exc:  # noqa: BLE001
            problems.append(f"{name}: {type(exc).__name__}: {exc}"[:240])
            continue
        runs, complete = explore_harness(engine, name, root)
        # per allocation: [(path condition, record)] on the paths that made it
        found: dict[str, list] = {}
        for cond, records, skipped, error in runs:
            if os.environ.get("CAPPROOF_TRACE_DEBUG"):
                for item in skipped:
                    print(f"[{name}] ({cond}) skipped {item[3]}", file=sys.stderr)
            for file, lo, hi, why in skipped:
                for a in allocations:
                    if a.file == file and lo <= a.line <= hi:
                        reasons.setdefault(a.id, why)
            if error is not None:
                problems.append(f"{name}: stopped at {error}")
            seen: set[str] = set()
            for r in records:
                a = matches(r, sites)
                if a is None or a.id in seen or r.untrusted or a.owner in engine.FOREIGN_OWNERS.get(name, ()):
                    continue
                seen.add(a.id)
                found.setdefault(a.id, []).append((cond, r))
        if len(runs) > 1 and os.environ.get("CAPPROOF_TRACE_DEBUG"):
            print(f"[{name}] {len(runs)} paths, complete={complete}", file=sys.stderr)
        for aid, hits in found.items():
            if aid in traced:
                continue
            a = next(x for x in allocations if x.id == aid)
            if not complete:
                reasons[aid] = (
                    f"fork budget ({engine.FORK_BUDGET} paths) exhausted before every branch of {name} was explored"
                )
                continue
            ranks = {len(r.shape) for _, r in hits}
            dtypes = {r.dtype for _, r in hits}
            if len(ranks) > 1 or len(dtypes) > 1:
                reasons[aid] = f"rank or dtype differs between the paths of {name}"
                continue
            try:
                shape = []
                for d in range(ranks.pop()):
                    term = None
                    for cond, r in reversed(hits):
                        t = r.shape[d].term if isinstance(r.shape[d], SymInt) else z3.IntVal(int(r.shape[d]))
                        term = t if term is None else z3.If(cond, t, term)
                    shape.append(to_expression(term, positive=engine.POSITIVE, nonnegative=engine.NONNEGATIVE))
            except (SpecError, TypeError) as exc:
                reasons[aid] = f"traced shape not printable: {exc}"
                continue
            why = ""
            if len(hits) < len(runs):
                where = z3.Or(*[c for c, _ in hits]) if len(hits) > 1 else hits[0][0]
                why = f"allocated only when {condition_expression(engine, where)}"
            if engine.NOTES.get(name):
                why = f"{why}; {engine.NOTES[name]}" if why else engine.NOTES[name]
            params = sorted({n for x in shape for n in expression_names(x)})
            traced[aid] = Entry(
                id=a.id,
                file=a.file,
                line=a.line,
                owner=a.owner,
                attribute=a.attribute,
                dtype=dtypes.pop(),
                shape=shape,
                how="traced",
                why=why,
                sized_by=classify(params),
                params=params,
                verdicts={},
                accesses=executed_accesses(engine, [r for _, r in hits]),
            )
    return list(traced.values()), sorted(set(problems)), reasons


def executed_accesses(engine, records) -> list[dict]:
    """The subscripts the engine made of a traced buffer while its harness ran (every path's
    record), as inventory accesses: ``{"file", "line", "dim", "extent", "op", "how": "executed"}``;
    ``extent`` is the index or slice stop in the shape language (``whole`` for ``:``, ``?`` for a
    tensor index or a term the printer cannot show). Deduplicated, by line."""
    out: dict[tuple, dict] = {}
    for r in records:
        for (file, line), rw, dims in getattr(r, "accesses", []):
            for dim, kind, term in dims:
                if term is None:
                    extent = "whole" if kind == "slice" else "?"
                else:
                    try:
                        extent = to_expression(term, positive=engine.POSITIVE, nonnegative=engine.NONNEGATIVE)
                    except (SpecError, TypeError):
                        extent = "?"
                item = {
                    "file": file,
                    "line": line,
                    "dim": dim,
                    "extent": extent,
                    "op": f"{kind} {rw}",
                    "how": "executed",
                }
                out.setdefault((file, line, dim, item["op"], extent), item)
    return sorted(out.values(), key=lambda a: (a["file"], a["line"], a["dim"], a["op"]))
