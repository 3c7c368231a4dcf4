"""Run every selected obligation and contract; optionally in worker processes.

One obligation's failure (bad spec, unknown, error) never stops the others.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from .contracts import check_contract
from .loader import LoadError, load, load_file
from .obligation import Contract, Obligation
from .prover import prove_obligation
from .verdict import ContractResult, ObligationResult, Options, Verdict

__all__ = ["RunResult", "run", "EXIT_OK", "EXIT_MISMATCH", "EXIT_UNDECIDED"]

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


def _work(kind: str, file: str, ident: str, options: Options):
    """Worker entry point: reload the spec file in this process and decide one item."""
    from .loader import ensure_project_on_path

    ensure_project_on_path()
    items = load_file(file)
    if isinstance(items, LoadError):
        return _load_error_result(items)
    for item in items:
        if item.id == ident and not getattr(item, "problems", None):
            if kind == "obligation":
                return prove_obligation(item, options)  # type: ignore[arg-type]
            return check_contract(item, options)  # type: ignore[arg-type]
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

    if not obligations and not contracts and not errors:
        result.usage_errors.append("nothing selected: no obligation or contract matches the paths and -k")
    work: list[tuple[str, Obligation | Contract]] = [("obligation", ob) for ob in obligations]
    work += [("contract", c) for c in contracts]
    if options.jobs > 1 and len(work) > 1:
        ctx = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(max_workers=options.jobs, mp_context=ctx) as pool:
            futures = [
                (None if getattr(it, "problems", None) else pool.submit(_work, kind, _item_file(it), it.id, options))
                for kind, it in work
            ]
            outcomes = []
            for (kind, it), fut in zip(work, futures):
                outcome = prove_obligation(it, options) if fut is None else fut.result()  # type: ignore[arg-type]
                outcomes.append(outcome)
                if progress:
                    progress(outcome)
    else:
        outcomes = []
        for kind, it in work:
            outcome = prove_obligation(it, options) if kind == "obligation" else check_contract(it, options)  # type: ignore[arg-type]
            outcomes.append(outcome)
            if progress:
                progress(outcome)
    for outcome in outcomes:
        (result.contracts if isinstance(outcome, ContractResult) else result.obligations).append(outcome)
    return result


def _item_file(item: Obligation | Contract) -> str:
    return item.file if os.path.exists(item.file) else os.path.abspath(item.file)
