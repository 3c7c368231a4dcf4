"""Run every selected obligation and contract; optionally in worker processes.

One obligation's failure (bad spec, unknown, error) never stops the others. With ``jobs > 1`` the
work is submitted longest first (estimated from the previous run's ``.capproof/last-run.json``,
else from the number of cases and vector entries; contracts with a cached CrossHair verdict are
answered in the parent process), and results are reported in declared order.
"""

from __future__ import annotations

import concurrent.futures
import json
import multiprocessing
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from .contracts import check_contract
from .loader import LoadError, load, load_file
from .obligation import Contract, Obligation
from .prover import prove_obligation
from .verdict import ContractResult, ObligationResult, Options, Verdict

__all__ = ["RunResult", "run", "default_jobs", "EXIT_OK", "EXIT_MISMATCH", "EXIT_UNDECIDED"]

#: Where ``make verify`` keeps the last full run (read for longest-first scheduling).
LAST_RUN = os.path.join(".capproof", "last-run.json")


def default_jobs() -> int:
    """The CPU cores this process may run on (``os.sched_getaffinity``; ``os.cpu_count`` elsewhere)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _previous_seconds(path: str = LAST_RUN) -> dict[str, float]:
    """id -> seconds of the previous run (empty if there is none or it is unreadable); contract
    verdicts that came from the cache say nothing about their cost and are left out."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        return {e["id"]: float(e.get("seconds", 0.0))
                for e in [*data.get("obligations", []), *data.get("contracts", [])]
                if isinstance(e, dict) and "id" in e and not e.get("cached")}
    except (OSError, ValueError, TypeError, AttributeError, KeyError):
        return {}


def _estimate(kind: str, item: Obligation | Contract, previous: dict[str, float]) -> float:
    """Seconds this item is expected to take: the previous run's, else a rough size measure."""
    if item.id in previous:
        return previous[item.id]
    if kind == "contract":
        return 1000.0  # CrossHair explores until every path is done: the longest work we have
    cases = 1
    entries = 0
    for dom in item.domain.values():  # type: ignore[union-attr]
        if getattr(dom, "finite", False) and hasattr(dom, "cases"):
            try:
                cases *= len(dom.cases())
            except Exception:  # noqa: BLE001 - an estimate only
                pass
        entries += getattr(dom, "size", 0) or 0
    return cases * (1 + entries) / 1000.0

EXIT_OK = 0
EXIT_MISMATCH = 1
EXIT_UNDECIDED = 2


@dataclass
class RunResult:
    obligations: list[ObligationResult] = field(default_factory=list)
    contracts: list[ContractResult] = field(default_factory=list)
    usage_errors: list[str] = field(default_factory=list)

    def all_results(self) -> list[ObligationResult | ContractResult]:
        return [*self.obligations, *self.contracts]

    def counts(self) -> dict[str, int]:
        out = {v.value: 0 for v in Verdict}
        for r in self.all_results():
            out[r.verdict.value] += 1
        return out

    @property
    def ok(self) -> bool:
        return not self.usage_errors and all(r.ok for r in self.all_results())

    @property
    def exit_code(self) -> int:
        """0: every verdict as expected; 2: any unknown, vacuous or error (or bad usage); else 1."""
        undecided = {Verdict.UNKNOWN, Verdict.VACUOUS, Verdict.ERROR}
        if self.usage_errors or any(r.verdict in undecided and not r.ok for r in self.all_results()):
            return EXIT_UNDECIDED
        return EXIT_OK if self.ok else EXIT_MISMATCH

    def to_json(self) -> dict[str, Any]:
        counts = self.counts()
        return {
            "obligations": [r.to_json() for r in self.obligations],
            "contracts": [r.to_json() for r in self.contracts],
            "usage_errors": list(self.usage_errors),
            "summary": {"ok": self.ok, **counts, "exit_code": self.exit_code},
        }


def _load_error_result(err: LoadError) -> ObligationResult:
    return ObligationResult(
        id=err.file, case=None, sources=[], expect="proved", verdict=Verdict.ERROR,
        message=err.message, file=err.file,
    )


def _decide(kind: str, item: Obligation | Contract, options: Options):
    """Decide one item; an obligation in a fresh Z3 context (the previous one restored after), so
    its terms, rlimit use and unsat cores do not depend on what this process decided before (which
    differs between --jobs settings and runs). Contracts keep the ambient context: CrossHair holds
    Z3 objects across calls."""
    if kind != "obligation":
        return check_contract(item, options)  # type: ignore[arg-type]
    import z3

    previous = z3.z3._main_ctx
    z3.z3._main_ctx = None
    try:
        return prove_obligation(item, options)  # type: ignore[arg-type]
    finally:
        z3.z3._main_ctx = previous


def _work(kind: str, file: str, ident: str, options: Options):
    """Worker entry point: reload the spec file in this process and decide one item."""
    from .loader import ensure_project_on_path

    ensure_project_on_path()
    items = load_file(file)
    if isinstance(items, LoadError):
        return _load_error_result(items)
    for item in items:
        if item.id == ident and not getattr(item, "problems", None):
            return _decide(kind, item, options)
    raise LookupError(f"{ident} vanished from {file}")


def run(
    paths: Iterable[str] = ("spec",),
    options: Options | None = None,
    keyword: str | None = None,
    progress: Callable[[ObligationResult | ContractResult], None] | None = None,
) -> RunResult:
    """Load ``paths``, then prove every obligation and check every contract selected by ``keyword``."""
    options = options or Options()
    items, errors = load(list(paths), keyword)
    result = RunResult()
    for err in errors:
        r = _load_error_result(err)
        result.obligations.append(r)
        if progress:
            progress(r)

    obligations = [it for it in items if isinstance(it, Obligation)]
    contracts = [it for it in items if isinstance(it, Contract)] if options.contracts else []
    known = {name for ob in obligations for name in ob.domain}
    for name in options.pins:
        if name not in known:
            result.usage_errors.append(f"--set {name}: no selected obligation has a parameter named {name!r}")
    if result.usage_errors:  # a mistyped pin: nothing runs (the run would not be the one asked for)
        return result

    if not obligations and not contracts and not errors:
        result.usage_errors.append("nothing selected: no obligation or contract matches the paths and -k")
    work: list[tuple[str, Obligation | Contract]] = [("obligation", ob) for ob in obligations]
    work += [("contract", c) for c in contracts]
    if options.jobs > 1 and len(work) > 1:
        # Answered here: items with declaration problems (no worker needed) and cached contracts.
        done: dict[int, ObligationResult | ContractResult] = {}
        for i, (kind, it) in enumerate(work):
            if getattr(it, "problems", None):
                done[i] = prove_obligation(it, options)  # type: ignore[arg-type]
            elif kind == "contract" and options.crosshair_cache:
                cached = check_contract(it, options, cache_only=True)  # type: ignore[arg-type]
                if cached is not None:
                    done[i] = cached
        previous = _previous_seconds()
        order = sorted((i for i in range(len(work)) if i not in done),
                       key=lambda i: -_estimate(work[i][0], work[i][1], previous))
        ctx = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(max_workers=min(options.jobs, max(1, len(order))), mp_context=ctx) as pool:
            futures = {i: pool.submit(_work, work[i][0], _item_file(work[i][1]), work[i][1].id, options) for i in order}
            outcomes = []
            for i in range(len(work)):
                outcome = done[i] if i in done else futures[i].result()
                outcomes.append(outcome)
                if progress:
                    progress(outcome)
    else:
        outcomes = []
        for kind, it in work:
            outcome = _decide(kind, it, options)
            outcomes.append(outcome)
            if progress:
                progress(outcome)
    for outcome in outcomes:
        (result.contracts if isinstance(outcome, ContractResult) else result.obligations).append(outcome)
    return result


def _item_file(item: Obligation | Contract) -> str:
    return item.file if os.path.exists(item.file) else os.path.abspath(item.file)
