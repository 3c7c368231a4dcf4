"""Prove one obligation with Z3: case split, vacuity, divisor checks, minimise, replay.

For every case (one combination of the finite parameters' values) the claim function runs once
on symbolic ints for the range parameters, giving Z3 terms for the assumptions, the claim and its
named quantities. Then, on one solver with a fixed ``rlimit`` per query:

1. ``domain ∧ assumptions`` unsat -> the case is *excluded* (counted; all excluded = vacuous).
2. ``domain ∧ assumptions ∧ divisor == 0`` sat -> error: a symbolic divisor can be zero.
3. ``domain ∧ assumptions ∧ ¬claim``: unsat -> the case is proved (the unsat core names the
   assumptions used); sat -> minimise the range parameters one by one (declared order, binary
   search), then replay the point on plain ints, which must violate the claim.
"""

from __future__ import annotations

import itertools
import time
import traceback
from dataclasses import dataclass
from typing import Any

import z3

from .domain import MAX_CASES, Range
from .errors import CapproofError, DivisorMayBeZero, ReplayError, SpecError
from .obligation import Claim, Obligation, is_boolean, is_integer
from .symbolic import SymBool, SymInt, tracing, to_z3_bool, to_z3_int
from .verdict import Counterexample, ObligationResult, Options, Verdict

__all__ = ["prove_obligation", "evaluate", "replay"]


@dataclass
class _Evaluated:
    assumptions: dict[str, object]
    claim: Claim
    divisors: list[tuple[z3.ArithRef, str]]


def _as_claim(value: object, ob: Obligation) -> Claim:
    if isinstance(value, Claim):
        result = value
    else:
        result = Claim(value, {}, "")
    if not is_boolean(result.holds):
        raise SpecError(
            f"claim is not boolean: it returned {type(result.holds).__name__} "
            f"{result.holds!r} (return a bool, a comparison, or equal()/at_most())"
        )
    for name, v in result.values.items():
        if not is_integer(v):
            raise SpecError(f"named quantity {name!r} is not an integer: {v!r}")
    return result


def evaluate(ob: Obligation, args: dict[str, object]) -> _Evaluated:
    """Run the assumptions and the claim on ``args`` (ints and/or SymInts)."""
    with tracing() as trace:
        assumed: dict[str, object] = {}
        for name, func in ob.assumptions.items():
            params = ob.assumption_params(name)
            value = func(**{p: args[p] for p in params})
            if not is_boolean(value):
                raise SpecError(f"assumption {name!r} is not boolean: returned {value!r}")
            assumed[name] = value
        result = _as_claim(ob.func(**args), ob)
    if trace.misuse:  # raised on a symbolic value, then caught by the model: never trust the result
        raise SpecError(f"the model caught capproof's error: {trace.misuse[0]}")
    return _Evaluated(assumed, result, trace.divisors)


def replay(ob: Obligation, params: dict[str, int]) -> tuple[bool, dict[str, int], list[str]]:
    """Run the obligation on plain ints: (claim holds, named values, assumptions that fail)."""
    ev = evaluate(ob, dict(params))
    failed = [n for n, v in ev.assumptions.items() if not v]
    holds = ev.claim.holds
    if isinstance(holds, SymBool):  # pragma: no cover - cannot happen on ints
        raise ReplayError("replay on ints produced a symbolic claim")
    return bool(holds), {k: int(v) for k, v in ev.claim.values.items()}, failed


def _describe_exc(exc: BaseException) -> str:
    if isinstance(exc, CapproofError):
        return str(exc)
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" at {tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno}" if tb else ""
    return f"{type(exc).__name__}: {exc}{where}"


class _CaseOutcome:
    __slots__ = ("kind", "params", "values", "core", "message", "minimized", "relation")

    def __init__(self, kind: str, **kw: Any):
        self.kind = kind  # proved | excluded | counterexample | unknown | error
        self.params: dict[str, int] = kw.get("params", {})
        self.values: dict[str, int] = kw.get("values", {})
        self.core: list[str] = kw.get("core", [])
        self.message: str = kw.get("message", "")
        self.minimized: bool = kw.get("minimized", True)
        self.relation: str = kw.get("relation", "")


def _new_solver(rlimit: int) -> z3.Solver:
    s = z3.Solver()
    s.set("rlimit", rlimit)
    s.set("random_seed", 0)
    s.set("core.minimize", True)
    return s


def _prove_case(ob: Obligation, fixed: dict[str, int], ranges: dict[str, Range], options: Options, rlimit: int) -> _CaseOutcome:
    symbols = {name: SymInt.var(name) for name in ranges}
    args: dict[str, object] = {**fixed, **symbols}
    args = {p: args[p] for p in ob.params}
    try:
        ev = evaluate(ob, args)
    except ZeroDivisionError as exc:
        return _CaseOutcome("error", message=f"division by zero with {fixed}: {_describe_exc(exc)}")
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # the model or spec is at fault (SystemExit too); report it, keep going
        return _CaseOutcome("error", message=_describe_exc(exc))

    outcome = _decide_case(ob, fixed, ranges, symbols, ev, options, rlimit)
    outcome.relation = ev.claim.relation
    return outcome


def _decide_case(ob: Obligation, fixed: dict[str, int], ranges: dict[str, Range], symbols: dict[str, SymInt], ev: _Evaluated, options: Options, rlimit: int) -> _CaseOutcome:
    s = _new_solver(rlimit)
    trackers: dict[str, str] = {}

    def track(label: str, cond: z3.BoolRef) -> None:
        t = z3.Bool(f"__track_{len(trackers)}")
        trackers[str(t)] = label
        s.assert_and_track(cond, t)

    for name, dom in ranges.items():
        var = symbols[name].term
        track(f"{name} >= {dom.lo}", var >= dom.lo)
        track(f"{name} <= {dom.hi}", var <= dom.hi)
    for name, value in ev.assumptions.items():
        if isinstance(value, bool):
            if not value:
                return _CaseOutcome("excluded", core=[name])
            continue
        track(name, to_z3_bool(value))

    answer = s.check()
    if answer == z3.unsat:
        return _CaseOutcome("excluded", core=[trackers[str(t)] for t in s.unsat_core()])
    if answer == z3.unknown:
        return _CaseOutcome("unknown", message=f"assumption check: {s.reason_unknown()}")

    for term, where in ev.divisors:
        s.push()
        s.add(term == 0)
        answer = s.check()
        if answer == z3.sat:
            m = s.model()
            point = {**fixed, **{n: m.eval(symbols[n].term, model_completion=True).as_long() for n in ranges}}
            s.pop()
            return _CaseOutcome(
                "error",
                message=str(DivisorMayBeZero(f"divisor {term} at {where} can be zero, e.g. at {point}")),
            )
        s.pop()
        if answer == z3.unknown:
            return _CaseOutcome("unknown", message=f"divisor check at {where}: {s.reason_unknown()}")

    s.push()
    s.add(z3.Not(to_z3_bool(ev.claim.holds)))
    answer = s.check()
    if answer == z3.unsat:
        core = [trackers[str(t)] for t in s.unsat_core() if str(t) in trackers]
        return _CaseOutcome("proved", core=core)
    if answer == z3.unknown:
        return _CaseOutcome("unknown", message=s.reason_unknown())

    model = s.model()
    minimized = True
    if options.minimize:
        for name, dom in ranges.items():
            var = symbols[name].term
            best = model.eval(var, model_completion=True).as_long()
            lo = dom.lo
            while lo < best:
                mid = (lo + best) // 2
                s.push()
                s.add(var <= mid)
                answer = s.check()
                if answer == z3.sat:
                    model = s.model()
                    best = model.eval(var, model_completion=True).as_long()
                elif answer == z3.unsat:
                    lo = mid + 1
                s.pop()
                if answer == z3.unknown:
                    minimized = False
                    break
            s.add(var == best)
            if not minimized:
                break
        if s.check() == z3.sat:
            model = s.model()
        else:  # pragma: no cover - fixing values found sat cannot become unsat
            minimized = False
    point = {n: model.eval(symbols[n].term, model_completion=True).as_long() for n in ranges}
    params = {p: (fixed[p] if p in fixed else point[p]) for p in ob.params}
    symbolic_values = {
        k: model.eval(to_z3_int(v), model_completion=True).as_long() for k, v in ev.claim.values.items()
    }

    # Replay on plain ints: the counterexample is only reported if the Python model agrees.
    try:
        holds, values, failed = replay(ob, params)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        return _CaseOutcome("error", message=f"replay of {params} raised {_describe_exc(exc)}")
    if failed:
        return _CaseOutcome(
            "error",
            message=str(ReplayError(f"solver point {params} violates assumptions {failed} on ints")),
        )
    if holds:
        return _CaseOutcome(
            "error",
            message=str(ReplayError(f"solver point {params} does not violate the claim when replayed on ints")),
        )
    if values != symbolic_values:
        return _CaseOutcome(
            "error",
            message=str(ReplayError(
                f"symbolic and concrete semantics disagree at {params}: Z3 {symbolic_values}, Python {values}"
            )),
        )
    return _CaseOutcome("counterexample", params=params, values=values, minimized=minimized)


def _effective_domains(ob: Obligation, pins: dict[str, int]) -> tuple[dict[str, list[int]], dict[str, Range]]:
    finite: dict[str, list[int]] = {}
    ranges: dict[str, Range] = {}
    for name, dom in ob.domain.items():
        if name in pins:
            value = pins[name]
            if not dom.contains(value):
                raise SpecError(f"pin {name}={value} is outside its domain {dom.describe()}")
            finite[name] = [value]
        elif dom.finite:
            finite[name] = dom.cases()  # type: ignore[attr-defined]
        else:
            ranges[name] = dom  # type: ignore[assignment]
    total = 1
    for values in finite.values():
        total *= len(values)
    if total > MAX_CASES:
        raise SpecError(
            f"{total} finite cases exceed the limit of {MAX_CASES}: declare large parameters as Range"
        )
    return finite, ranges


def prove_obligation(ob: Obligation, options: Options | None = None) -> ObligationResult:
    """Decide ``ob``: proved, counterexample, unknown, vacuous or error (never raises)."""
    options = options or Options()
    started = time.perf_counter()
    rlimit = ob.rlimit or options.rlimit
    pins = {k: v for k, v in options.pins.items() if k in ob.domain}
    result = ObligationResult(
        id=ob.id, case=ob.case, sources=ob.sources, expect=ob.expect, verdict=Verdict.ERROR,
        message="", domain={k: (d.describe() if hasattr(d, "describe") else repr(d)) for k, d in ob.domain.items()}, pins=pins,
        assumptions=list(ob.assumptions), doc=ob.doc, file=ob.file, line=ob.line, rlimit=rlimit,
    )
    try:
        if not (isinstance(rlimit, int) and not isinstance(rlimit, bool) and 1 <= rlimit < 2**32):
            raise SpecError(f"rlimit must be an int in 1..2**32-1, got {rlimit!r}")
        result.models = ob.models_used()
        if ob.problems:
            raise SpecError("; ".join(ob.problems))
        finite, ranges = _effective_domains(ob, pins)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        result.message = _describe_exc(exc)
        result.seconds = time.perf_counter() - started
        return result

    names = list(finite)
    outcomes: list[_CaseOutcome] = []
    for combo in itertools.product(*(finite[n] for n in names)):
        fixed = dict(zip(names, combo))
        outcome = _prove_case(ob, fixed, ranges, options, rlimit)
        outcomes.append(outcome)
        result.relation = result.relation or outcome.relation

    result.cases = len(outcomes)
    kinds = [o.kind for o in outcomes]
    result.excluded = kinds.count("excluded")
    result.failing_cases = kinds.count("counterexample")
    result.unknown_cases = kinds.count("unknown")
    used: list[str] = []
    for o in outcomes:
        if o.kind == "proved":
            used.extend(c for c in o.core if c not in used)
    order = {name: i for i, name in enumerate([*ob.assumptions, *_bound_labels(ranges)])}
    result.assumptions_used = sorted(used, key=lambda c: order.get(c, len(order)))

    errors = [o for o in outcomes if o.kind == "error"]
    cexs = [o for o in outcomes if o.kind == "counterexample"]
    unknowns = [o for o in outcomes if o.kind == "unknown"]
    admitted = result.cases - result.excluded
    if errors:
        result.verdict = Verdict.ERROR
        result.message = errors[0].message
    elif cexs:
        best = min(cexs, key=lambda o: tuple(o.params[p] for p in ob.params))
        result.verdict = Verdict.COUNTEREXAMPLE
        result.counterexample = Counterexample(best.params, best.values, best.minimized)
        result.message = (
            f"{_violation(result.relation, best.values)}; fails in {len(cexs)} of {admitted} admitted cases"
        )
    elif unknowns:
        result.verdict = Verdict.UNKNOWN
        result.message = f"{len(unknowns)} of {admitted} cases unknown (rlimit {rlimit}): {unknowns[0].message}"
    elif admitted == 0:
        result.verdict = Verdict.VACUOUS
        why = "the pins are excluded by the assumptions" if pins else "the assumptions admit no point of the domain"
        result.message = f"vacuous: {why} ({result.excluded} of {result.cases} cases excluded)"
    else:
        result.verdict = Verdict.PROVED
        result.message = f"unsat on {admitted} cases" + (
            f" ({result.excluded} excluded by assumptions)" if result.excluded else ""
        )
    result.seconds = time.perf_counter() - started
    return result


def _bound_labels(ranges: dict[str, Range]) -> list[str]:
    return [label for n, d in ranges.items() for label in (f"{n} >= {d.lo}", f"{n} <= {d.hi}")]


def _violation(relation: str, values: dict[str, int]) -> str:
    if relation and len(values) == 2:
        (a, av), (b, bv) = values.items()
        return f"{relation} fails: {a}={av}, {b}={bv}"
    shown = ", ".join(f"{k}={v}" for k, v in values.items())
    return f"claim fails{': ' + shown if shown else ''}"
