"""Verdicts, options and results.

Soundness rules encoded here:

- ``proved`` needs an ``unsat`` answer on every case the assumptions admit, and at least one
  such case (otherwise the obligation is ``vacuous``).
- ``unknown`` (rlimit exhausted, solver gave up) is never ``proved``.
- a ``counterexample`` is reported only after it was replayed on plain ints and violated the claim.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Verdict",
    "Options",
    "Counterexample",
    "FirstCounterexample",
    "Witness",
    "ObligationResult",
    "ContractResult",
    "DEFAULT_RLIMIT",
    "DEFAULT_TIMEOUT",
    "DEFAULT_WASTE_THRESHOLD",
    "BOUNDS_REPORT",
    "BOUNDS_DATA",
    "EXIT_OK",
    "EXIT_MISMATCH",
    "EXIT_UNDECIDED",
]

#: Deterministic Z3 resource budget per query (``rlimit``). The block-table obligations use
#: well under 1% of it; raise it per obligation (``rlimit=``) or per run (``--rlimit``).
DEFAULT_RLIMIT = 20_000_000
#: Hard time limit per obligation or contract (seconds) for ``capproof prove``; the slowest item of
#: the full suite takes well under a tenth of it on the project's 2-core machine.
DEFAULT_TIMEOUT = 900.0
#: Exit codes of every command: all as expected; some verdict differs from its expectation; unknown,
#: vacuous, error or bad input.
EXIT_OK = 0
EXIT_MISMATCH = 1
EXIT_UNDECIDED = 2
#: Default waste threshold in percent for ``capproof bound``: a capacity whose slack at its tightest
#: point exceeds this share of the demand there is flagged ``wasteful``. (Here, with the report path
#: below, rather than in ``bound``, so the command line shows them without importing Z3.)
DEFAULT_WASTE_THRESHOLD = 100.0
#: The bounds report ``capproof bound --write`` renders.
BOUNDS_REPORT = "proofs/bounds.md"
#: the bounds of proofs/bounds.md, machine-readable, for `capproof bound --check`'s certificates
BOUNDS_DATA = "proofs/bounds.json"


class Verdict(str, enum.Enum):
    PROVED = "proved"
    COUNTEREXAMPLE = "counterexample"
    UNKNOWN = "unknown"
    VACUOUS = "vacuous"
    ERROR = "error"

    def __str__(self) -> str:
        return self.value


@dataclass
class Options:
    """How a run proves: budgets, pins and parallelism."""

    rlimit: int = DEFAULT_RLIMIT
    pins: dict[str, int] = field(default_factory=dict)
    minimize: bool = True
    crosshair_timeout: float = 30.0
    jobs: int = 1
    contracts: bool = True
    #: failure density of a counterexample: "off", "cheap" (enumerate ranges up to 2**16 values,
    #: Z3-proved periods, Z3 interval splitting) or "full" (also enumerate up to 2**22 values)
    density: str = "cheap"
    #: write each case's query as SMT-LIB 2 into this directory (None: do not)
    smt2_dir: str | None = None
    #: re-solve every linear case with this solver ("cvc5") and fail on disagreement (None: do not)
    cross_check: str | None = None
    #: execution paths explored per case when a model branches on symbolic values; more = unknown
    fork_budget: int = 64
    #: decide Vector obligations on the aggregate abstraction first (capproof.aggregate)
    aggregate: bool = True
    #: then by induction over the batch where the model walks it with capproof.arith.fold
    #: (capproof.induction); either way the bounded encoding decides what they leave undecided
    induction: bool = True
    #: Hypothesis examples of the second opinion on ints of every ``proved``/``vacuous`` verdict
    #: (capproof.second_opinion; 0: small batches only, None: no second opinion)
    second_opinion: int | None = 10
    #: largest Vector size the bounded encoding is tried at when the aggregate abstraction does not
    #: decide (None: any); a larger obligation is ``unknown`` instead (check-config sets it for
    #: obligations it resized to a deployment's batch limit, whose bounded encoding would not end)
    max_bounded_vector: int | None = None
    #: reuse CrossHair verdicts cached in .capproof/crosshair/ (keyed by the model sources, the
    #: timeout and the tool versions; see capproof.contracts)
    crosshair_cache: bool = True
    #: the runner decides each obligation and contract in its own process (fresh Z3 context,
    #: module state checked), killed after ``timeout`` seconds; False: in this process, no limit
    isolate: bool = True
    #: hard per-item time limit in seconds (obligation or contract) when ``isolate``
    timeout: float = DEFAULT_TIMEOUT
    #: decide the verdict only: no trigger witnesses and no check of assumptions that restate the
    #: claim (the ``make mutation`` oracle, tests/mutation/; verdicts are the same, the counterexample
    #: still replayed on ints; combine with ``minimize=False`` and ``density="off"``)
    verdict_only: bool = False
    #: evaluate the model on ints at the domain's structured points (capproof.probe) before the
    #: symbolic work: the first counterexample early (``ObligationResult.first_counterexample``);
    #: the verdict and the minimised counterexample are the same either way
    probe: bool = True
    #: reuse obligation verdicts stored in .capproof/verdicts/ under a key of everything they depend
    #: on (capproof.verdict_cache); on for ``capproof prove`` (``--no-cache``: off), off by default here
    verdict_cache: bool = False


@dataclass
class Counterexample:
    """Parameter values that violate a claim, and the claim's named quantities there."""

    #: parameter values: ints, and for a Vector parameter the list of its active entries
    params: dict[str, Any]
    values: dict[str, int]
    minimized: bool = True
    #: the execution path's condition when the model branched on symbolic values ('' = no branch)
    path: str = ""

    def to_json(self) -> dict[str, Any]:
        out = {
            "params": {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in self.params.items()},
            "values": dict(self.values),
            "minimized": self.minimized,
        }
        if self.path:
            out["path"] = self.path
        return out


@dataclass
class FirstCounterexample:
    """The first concrete counterexample a run found, before minimisation: from the int probe
    (capproof.probe: a structured point of the domain, evaluated on ints) or, when the probe
    found none, the solver's first model of a failing case (replayed on ints). ``seconds``: CPU
    seconds of the deciding process (``time.process_time``) from the start of the obligation's
    run; ``points``: int-probe points evaluated (the probe's, also when the solver found it)."""

    params: dict[str, Any]
    values: dict[str, int]
    seconds: float
    source: str  # "int probe" | "solver"
    points: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "params": {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in self.params.items()},
            "values": dict(self.values),
            "seconds": round(self.seconds, 6),
            "source": self.source,
            "points": self.points,
        }


@dataclass
class Witness:
    """A trigger witness: the smallest point where the claim fails and a named condition holds.

    ``found`` is False when no such point exists at the counterexample's configuration (the
    condition's path never fails there); ``message`` explains an unknown or error search.
    """

    name: str
    found: bool
    params: dict[str, Any] = field(default_factory=dict)
    values: dict[str, int] = field(default_factory=dict)
    message: str = ""
    #: False when a minimisation query came back unknown (the point is a witness, maybe not the smallest)
    minimized: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "found": self.found,
            "params": {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in self.params.items()},
            "values": dict(self.values),
            "message": self.message,
            "minimized": self.minimized,
        }


@dataclass
class ObligationResult:
    id: str
    case: str | None
    sources: list[str]
    expect: str
    verdict: Verdict
    message: str
    cases: int = 0
    excluded: int = 0
    failing_cases: int = 0
    unknown_cases: int = 0
    counterexample: Counterexample | None = None
    witnesses: list[Witness] = field(default_factory=list)
    #: capproof.density.failure_density record of the counterexample (None: not computed)
    density: dict[str, Any] | None = None
    #: per-case second-solver results: {"solver", "agreed", "skipped_nonlinear", "unknown", "disagreed"}
    cross_check: dict[str, Any] | None = None
    assumptions_used: list[str] = field(default_factory=list)
    #: assumptions equivalent to the claim on the domain in some proved case (they restate it)
    restating: list[str] = field(default_factory=list)
    relation: str = ""
    domain: dict[str, str] = field(default_factory=dict)
    pins: dict[str, int] = field(default_factory=dict)
    assumptions: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    #: the claim as written in its spec file (Obligation.claim_source), for reports
    claim_source: str = ""
    doc: str = ""
    file: str = ""
    line: int = 0
    rlimit: int = DEFAULT_RLIMIT
    seconds: float = 0.0
    #: inventory entry ids the obligation covers (``@obligation(covers=...)``)
    covers: list[str] = field(default_factory=list)
    #: execution paths decided over all cases (= cases when no model branches on symbolic values)
    paths: int = 0
    #: the batch sizes a Vector obligation's verdict covers: "all batch sizes" (decided on the
    #: aggregate abstraction, capproof.aggregate, or by induction over the batch,
    #: capproof.induction: then ``encoding_note`` starts "induction over the batch") or "batches <= N" (the bounded encoding of
    #: N-entry vectors), or "fixed vector sizes" (the aggregate abstraction with a Vector without a
    #: length: exactly its size); "" without vectors. ``encoding_note``: why the abstraction did not apply
    #: or decide, or the lengths it covered
    encoding: str = ""
    encoding_note: str = ""
    #: assumptions rewritten into an equivalent form Z3 decides faster (capproof.normalise), as
    #: ``"name: what"``
    normalised: list[str] = field(default_factory=list)
    #: the first counterexample found, before minimisation, and the CPU time to it (None: none)
    first_counterexample: FirstCounterexample | None = None
    #: the result came from the verdict cache (capproof.verdict_cache), not from solving
    cached: bool = False
    #: CPU seconds from the start of the run until the counterexample reported as the least (a
    #: minimised one: certified by the solver) was in hand: the end of the int shrink when its point
    #: is the one certified, else the whole run; None without a minimised counterexample. Not in
    #: the JSON (in-process callers read it: benchmarks/compare.py)
    smallest_seconds: float | None = None

    @property
    def ok(self) -> bool:
        return self.verdict.value == self.expect

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "case": self.case,
            "sources": list(self.sources),
            "covers": list(self.covers),
            "encoding": self.encoding,
            "encoding_note": self.encoding_note,
            "normalised": list(self.normalised),
            "expect": self.expect,
            "verdict": self.verdict.value,
            "ok": self.ok,
            "cases": self.cases,
            "excluded_cases": self.excluded,
            "failing_cases": self.failing_cases,
            "unknown_cases": self.unknown_cases,
            "paths": self.paths,
            "counterexample": self.counterexample.to_json() if self.counterexample else None,
            "first_counterexample": self.first_counterexample.to_json() if self.first_counterexample else None,
            "witnesses": [w.to_json() for w in self.witnesses],
            "density": self.density,
            "cross_check": self.cross_check,
            "assumptions_used": list(self.assumptions_used),
            "restating_assumptions": list(self.restating),
            "message": self.message,
            "relation": self.relation,
            "domain": dict(self.domain),
            "pins": dict(self.pins),
            "assumptions": list(self.assumptions),
            "models": list(self.models),
            "claim_source": self.claim_source,
            "doc": self.doc,
            "file": self.file,
            "line": self.line,
            "rlimit": self.rlimit,
            "seconds": round(self.seconds, 3),
            "cached": self.cached,
        }


@dataclass
class ContractResult:
    id: str
    expect: str
    verdict: Verdict
    message: str
    case: str | None = None
    sources: list[str] = field(default_factory=list)
    conditions: list[dict[str, str]] = field(default_factory=list)
    file: str = ""
    line: int = 0
    seconds: float = 0.0
    #: the verdict came from the CrossHair verdict cache (capproof.contracts)
    cached: bool = False

    @property
    def ok(self) -> bool:
        return self.verdict.value == self.expect

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "case": self.case,
            "sources": list(self.sources),
            "expect": self.expect,
            "verdict": self.verdict.value,
            "ok": self.ok,
            "message": self.message,
            "conditions": list(self.conditions),
            "file": self.file,
            "line": self.line,
            "seconds": round(self.seconds, 3),
            "cached": self.cached,
        }
