"""Exact capacity bounds for ``at_most``/``less_than`` claims: worst demand, minimal capacity, slack.

For an obligation whose claim is ``at_most(demand=d, capacity=c)`` (relation ``d <= c``) or
``less_than(index=d, capacity=c)`` (relation ``d < c``, read as ``d <= c - 1``: the *effective*
capacity is ``c - 1``), every case (one combination of the finite parameters, as in the prover)
gets, over ``domain ∧ assumptions``:

- **worst demand** ``D = max d`` (``z3.Optimize``), and the *minimal sufficient capacity*: the
  smallest constant ``c`` for which the claim would hold on the whole case (``D`` for ``<=``,
  ``D + 1`` for ``<``);
- **slack** ``S = min (c_eff - d)`` (``z3.Optimize``), absolute, in the claim's units; and as a
  percentage ``100 * S / d*`` of the demand ``d*`` at the argmin point, taking among the points
  of slack ``S`` the one with the largest demand (so the percentage is the waste that no point of
  the case avoids). ``S < 0`` flags an *insufficient* capacity; a percentage above the waste
  threshold flags a *wasteful* one.

Soundness: every optimum is **certified** by a plain ``z3.Solver`` query (``d > D`` resp.
``c_eff - d < S`` must be unsat), its witness point is the lexicographically smallest point that
attains it (scalars in declared order, then each vector's sum, by binary search, so it does not
depend on Optimize's model; a vector's individual entries are Z3's, deterministic for a given Z3),
and the witness is **replayed on plain ints** through the model: the assumptions must hold and the
demand (resp. slack) must equal the optimum. An ``unknown`` answer at any step (rlimit exhausted,
nonlinear arithmetic Optimize cannot handle, an unbounded objective) makes the case ``unknown`` —
never a bound.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any

import z3

from .domain import Range, Vector
from .obligation import Obligation
from .encode import CaseProblem, _describe_exc, build_case, checked_domains, replay
from .prover import _minimize, minimize_term
from .aggregate import AbstractCase
from .symbolic import to_z3_int
from .verdict import BOUNDS_REPORT, DEFAULT_WASTE_THRESHOLD

__all__ = ["CaseBound", "ObligationBound", "bound_obligation", "capacity_relation", "DEFAULT_WASTE_THRESHOLD"]


_RELATION = re.compile(r"^(?:0 <= )?(\w+) (<=|<) (\w+)(?: in (\w+))?$")


def capacity_relation(relation: str) -> tuple[str, str, int] | None:
    """``(demand name, capacity name, offset)`` for ``"d <= c"`` (offset 0) or ``"d < c"`` (1).

    The effective capacity is ``c - offset``. None for any other relation (``==``, custom claims).
    """
    m = _RELATION.match(relation or "")
    if not m:
        return None
    return m.group(1), m.group(3), 1 if m.group(2) == "<" else 0


def relation_limit(relation: str) -> int | None:
    """The greatest value of the integer type the demand is computed in (``"0 <= index < capacity
    in int32"`` from ``less_than(..., dtype="int32")``: ``2**31 - 1``), else None. The claim then
    holds exactly when ``demand <= min(capacity - offset, limit)``: that minimum is the effective
    capacity bounded here (the lower end of the type, like ``0 <=``, is prove's)."""
    m = _RELATION.match(relation or "")
    if not m or not m.group(4):
        return None
    from .arith import dtype_range

    return dtype_range(m.group(4))[1]


@dataclass
class CaseBound:
    """The bounds of one case. ``status`` is ``bounded``, ``excluded``, ``unknown`` or ``error``.

    Quantities are in the claim's own units (tokens, blocks, rows …, as the spec names them).
    ``demand_point``/``slack_point`` are the smallest parameter points attaining the optimum.
    """

    fixed: dict[str, int]
    status: str
    message: str = ""
    max_demand: int | None = None
    min_capacity: int | None = None
    demand_point: dict[str, Any] = field(default_factory=dict)
    capacity_at_demand_point: int | None = None
    min_slack: int | None = None
    slack_point: dict[str, Any] = field(default_factory=dict)
    demand_at_slack_point: int | None = None
    capacity_at_slack_point: int | None = None
    slack_pct: float | None = None
    insufficient: bool = False
    wasteful: bool = False
    #: how a case with Vector parameters was bounded: ``"aggregate"`` (Optimize on the aggregate
    #: abstraction: every batch size, exact), ``"search"`` (the bounded encoding, slack only: see
    #: :func:`_tightness_case`); ``""`` for cases without vectors
    method: str = ""
    #: False when ``min_slack`` is only an upper bound (an insufficient case of the search: the
    #: slack of the smallest failing point, not minimised)
    slack_exact: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "case": dict(self.fixed), "status": self.status, "message": self.message,
            **({"method": self.method, "slack_exact": self.slack_exact} if self.method else {}),
            "max_demand": self.max_demand, "min_capacity": self.min_capacity,
            "demand_point": _jsonable(self.demand_point), "capacity_at_demand_point": self.capacity_at_demand_point,
            "min_slack": self.min_slack, "slack_point": _jsonable(self.slack_point),
            "demand_at_slack_point": self.demand_at_slack_point, "capacity_at_slack_point": self.capacity_at_slack_point,
            "slack_pct": self.slack_pct, "insufficient": self.insufficient, "wasteful": self.wasteful,
        }


@dataclass
class ObligationBound:
    """All cases of one obligation, and the extremes over them.

    ``status``: ``bounded`` (every admitted case bounded), ``unknown``, ``error``, ``vacuous``
    (no admitted case) or ``skipped`` (the claim is not ``<=``/``<``). ``ok`` is False when the
    bounds contradict ``expect``: an insufficient capacity in an obligation expected ``proved``,
    or none in one expected ``counterexample``.
    """

    id: str
    expect: str
    status: str
    message: str = ""
    relation: str = ""
    demand: str = ""
    capacity: str = ""
    offset: int = 0
    cases: list[CaseBound] = field(default_factory=list)
    waste_threshold: float = DEFAULT_WASTE_THRESHOLD
    file: str = ""
    line: int = 0
    case_id: str | None = None

    def admitted(self) -> list[CaseBound]:
        return [c for c in self.cases if c.status == "bounded"]

    @property
    def worst(self) -> CaseBound | None:
        """The bounded case with the largest worst demand (first in case order on ties)."""
        adm = [c for c in self.admitted() if c.max_demand is not None]
        return max(adm, key=lambda c: c.max_demand) if adm else None  # type: ignore[arg-type,return-value]

    @property
    def tightest(self) -> CaseBound | None:
        """The bounded case with the smallest slack (first in case order on ties)."""
        adm = self.admitted()
        return min(adm, key=lambda c: c.min_slack) if adm else None  # type: ignore[arg-type,return-value]

    @property
    def insufficient(self) -> int:
        return sum(c.insufficient for c in self.cases)

    @property
    def wasteful(self) -> int:
        return sum(c.wasteful for c in self.cases)

    @property
    def ok(self) -> bool:
        if self.status in ("skipped", "not_in_report"):
            return True
        if self.status != "bounded":
            return False
        return (self.insufficient > 0) == (self.expect == "counterexample")

    def to_json(self) -> dict[str, Any]:
        worst, tight = self.worst, self.tightest
        return {
            "id": self.id, "case": self.case_id, "expect": self.expect, "status": self.status, "ok": self.ok,
            "message": self.message, "relation": self.relation, "demand": self.demand, "capacity": self.capacity,
            "capacity_offset": self.offset, "waste_threshold_pct": self.waste_threshold,
            "max_demand": worst.max_demand if worst else None,
            "min_capacity": worst.min_capacity if worst else None,
            "worst_case": worst.fixed if worst else None,
            "min_slack": tight.min_slack if tight else None,
            "min_slack_exact": tight.slack_exact if tight else True,
            "tightest_case": tight.fixed if tight else None,
            "insufficient_cases": self.insufficient, "wasteful_cases": self.wasteful,
            "file": self.file, "line": self.line,
            "cases": [c.to_json() for c in self.cases],
        }


def _jsonable(point: dict[str, Any]) -> dict[str, Any]:
    return {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in point.items()}


class _Unknown(Exception):
    pass


class _Wrong(Exception):
    pass


def _optimum(case: CaseProblem, objective: z3.ArithRef, maximize: bool, rlimit: int, extra: list[z3.BoolRef] = ()) -> int | None:
    """The certified optimum of ``objective`` over the case (None if the case admits nothing).

    Raises _Unknown when Optimize or the certificate query cannot answer.
    """
    opt = z3.Optimize()
    opt.set("rlimit", rlimit)
    for _, cond in case.constraints:
        opt.add(cond)
    for lemma in case.lemmas:
        opt.add(lemma)
    for cond in extra:
        opt.add(cond)
    handle = opt.maximize(objective) if maximize else opt.minimize(objective)
    answer = opt.check()
    if answer == z3.unsat:
        return None
    if answer == z3.unknown:
        raise _Unknown(f"Optimize: {opt.reason_unknown()}")
    value = handle.value()
    if not z3.is_int_value(value):
        raise _Unknown(f"Optimize: objective not attained ({value})")
    best = value.as_long()
    # certificate: nothing beyond the optimum
    s, _ = case.solver(rlimit)
    for cond in extra:
        s.add(cond)
    s.add(objective > best if maximize else objective < best)
    check = s.check()
    if check == z3.unknown:
        raise _Unknown(f"certifying the optimum {best}: {s.reason_unknown()}")
    if check == z3.sat:
        raise _Wrong(f"Optimize returned {best}, but a better value exists (solver disagreement)")
    return best


def _canonical_point(case: CaseProblem, fixes: list[z3.BoolRef], rlimit: int, vector_sums: bool = True) -> dict[str, Any]:
    """The lexicographically smallest point (declared order) satisfying the case and ``fixes``
    (with ``vector_sums=False`` only the scalars are minimised: a vector's entries are Z3's)."""
    s, _ = case.solver(rlimit)
    for cond in fixes:
        s.add(cond)
    answer = s.check()
    if answer != z3.sat:
        raise _Unknown(f"witness search: {s.reason_unknown() if answer == z3.unknown else 'optimum not attainable'}")
    scalars = [p for p in case.ob.params if p in case.scalars]
    model, done = _minimize(case, s, s.model(), scalars)
    if isinstance(case, AbstractCase):  # each batch's total, then its max and min
        for term, lo in case.aggregate_terms():
            if not done:
                break
            model, done = minimize_term(s, model, term, lo)
    if done and vector_sums:  # vectors: one search on each vector's sum, not entry by entry (1024-entry routings)
        for name, entries in getattr(case, "vectors", {}).items():
            free = [e.term for e in entries if hasattr(e, "term")]
            if not free:
                continue
            elem = case.ob.domain[name].elem  # type: ignore[attr-defined]
            model, done = minimize_term(s, model, z3.Sum(free), elem.lo * len(free))
            if not done:
                break
    if done and s.check() == z3.sat:
        model = s.model()
    else:
        raise _Unknown("witness minimisation ran out of rlimit")
    return case.point(model)


def _replayed(ob: Obligation, point: dict[str, Any], demand: str, capacity: str) -> tuple[int, int]:
    """(demand, capacity) of ``point`` on plain ints; raises _Wrong if an assumption fails."""
    _, values, failed = replay(ob, point)
    if failed:
        raise _Wrong(f"witness {point} violates assumptions {failed} on ints")
    return values[demand], values[capacity]


def _objective_terms(case, demand: str, capacity: str, offset: int, limit: int | None) -> tuple[z3.ArithRef, z3.ArithRef]:
    """(demand, effective capacity) as Z3 terms of a case (bounded or aggregate)."""
    values = case.values if isinstance(case, AbstractCase) else case.ev.claim.values
    term = lambda v: v if isinstance(v, z3.ExprRef) else to_z3_int(v)  # noqa: E731
    d = term(values[demand])
    c_eff = term(values[capacity]) - offset
    if limit is not None:  # the demand is computed in a machine integer type: it must also fit
        c_eff = z3.If(c_eff <= limit, c_eff, z3.IntVal(limit))
    return d, c_eff


#: Upper end of the exponential search for a positive minimum slack (the search is ``unknown``
#: beyond: a slack this large says the claim does not bound the demand).
SEARCH_LIMIT = 2**80


def _tightness_case(ob: Obligation, case: CaseProblem, demand: str, capacity: str, offset: int, rlimit: int,
                    threshold: float, limit: int | None = None) -> CaseBound:
    """The minimum slack of one case of an obligation with Vector parameters, on the bounded
    encoding, with plain solver queries (no Optimize: over hundreds of per-request or per-expert
    terms it takes minutes and mostly ends unknown). The worst demand is not computed.

    ``slack <= 0`` sat and ``slack <= -1`` unsat: the capacity is **tight** (minimum slack 0, the
    usual answer, two queries). ``slack <= 0`` unsat: exponential then binary search for the least
    ``k`` with ``slack <= k`` sat (certified: ``slack <= k - 1`` unsat). ``slack <= -1`` sat: the
    case is **insufficient**; its slack is reported at the smallest failing point (an upper bound
    of the minimum, ``slack_exact=False``). Every reported slack is at a canonical witness point
    replayed on plain ints.
    """
    out = CaseBound(dict(case.fixed), "bounded", method="search")
    if case.false_assumptions:
        out.status, out.message = "excluded", f"assumption false: {case.false_assumptions[0]}"
        return out
    d, c_eff = _objective_terms(case, demand, capacity, offset, limit)
    slack = c_eff - d
    s, _ = case.solver(rlimit)

    def at_most(k: int | None) -> z3.ModelRef | None:
        """A model with slack <= k (any model for None); None when unsat; _Unknown if unknown."""
        s.push()
        if k is not None:
            s.add(slack <= k)
        answer = s.check()
        model = s.model() if answer == z3.sat else None
        s.pop()
        if answer == z3.unknown:
            raise _Unknown(f"slack <= {k}: {s.reason_unknown()}")
        return model

    def value(model: z3.ModelRef) -> int:
        return model.eval(slack, model_completion=True).as_long()

    try:
        model = at_most(0)
        failing = model if model is not None and value(model) < 0 else (at_most(-1) if model is not None else None)
        if failing is not None:  # insufficient: report the smallest failing point's slack
            out.slack_exact = False
            fix = slack <= -1
        else:
            if model is None and at_most(None) is None:
                out.status, out.message = "excluded", "the assumptions admit no point of this case"
                return out
            low = 0  # slack <= low - 1 is unsat
            if model is None:
                low, step = 1, 1
                while (model := at_most(low + step - 1)) is None:
                    low, step = low + step, step * 2
                    if low > SEARCH_LIMIT:
                        raise _Unknown(f"minimum slack above {SEARCH_LIMIT}")
            high = value(model)  # slack <= high is sat
            while low < high:
                mid = (low + high) // 2
                model = at_most(mid)
                if model is None:
                    low = mid + 1
                else:
                    high = value(model)
            fix = slack == high
        # the witness: on the same solver, scalars minimised in declared order (a vector's entries are Z3's)
        s.push()
        s.add(fix)
        if s.check() != z3.sat:
            raise _Unknown(f"witness search: {s.reason_unknown()}")
        found, done = _minimize(case, s, s.model(), [p for p in ob.params if p in case.scalars])
        s.pop()
        if not done:
            raise _Unknown("witness minimisation ran out of rlimit")
        point = case.point(found)
        rd, rc = _replayed(ob, point, demand, capacity)
        rs = (rc - offset if limit is None else min(rc - offset, limit)) - rd
        if out.slack_exact and rs != high:
            raise _Wrong(f"replay of {point} gives slack {rs}, Z3 said {high}")
        if not out.slack_exact and rs >= 0:
            raise _Wrong(f"replay of {point} gives slack {rs}, Z3 said it is negative")
    except _Unknown as exc:
        return CaseBound(dict(case.fixed), "unknown", message=str(exc), method="search")
    except _Wrong as exc:
        return CaseBound(dict(case.fixed), "error", message=str(exc), method="search")
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # a model raising on replay
        return CaseBound(dict(case.fixed), "error", message=_describe_exc(exc), method="search")
    out.min_slack, out.slack_point, out.demand_at_slack_point, out.capacity_at_slack_point = rs, point, rd, rc
    pct = 100.0 * rs / rd if rd > 0 else None
    out.slack_pct = None if pct is None else (round(pct, 2) if round(pct, 2) != 0 or rs == 0 else float(f"{pct:.2g}"))
    out.insufficient = rs < 0
    out.wasteful = out.slack_exact and out.slack_pct is not None and out.slack_pct > threshold
    return out


def _abstract_case(ob: Obligation, fixed: dict[str, int], ranges, vectors, rlimit: int):
    """The case on the aggregate abstraction when it applies and agrees with the ints (the
    prover's probe: two admitted points realised and replayed), else (None, why)."""
    from .aggregate import NotAggregate, build_abstract_case, decide_abstract_case

    try:
        case = build_abstract_case(ob, fixed, ranges, vectors)
        outcome = decide_abstract_case(case, rlimit, minimize=False)
    except NotAggregate as exc:
        return None, str(exc)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # the bounded encoding reports it
        return None, _describe_exc(exc)
    if outcome.kind in ("abandon", "unknown"):
        return None, outcome.message
    if case.inexact:  # an optimum of an over-approximation need not be attained by any batch
        return None, f"mapped totals over {', '.join(case.inexact)} are bounded, not exact"
    return case, ""


def _bound_case(ob: Obligation, case: CaseProblem, demand: str, capacity: str, offset: int, rlimit: int, threshold: float,
                limit: int | None = None) -> CaseBound:
    out = CaseBound(dict(case.fixed), "bounded")
    if case.false_assumptions:
        out.status, out.message = "excluded", f"assumption false: {case.false_assumptions[0]}"
        return out
    d, c_eff = _objective_terms(case, demand, capacity, offset, limit)

    def eff(c: int) -> int:
        return c - offset if limit is None else min(c - offset, limit)
    try:
        top = _optimum(case, d, True, rlimit)
        if top is None:
            out.status, out.message = "excluded", "the assumptions admit no point of this case"
            return out
        # no capacity suffices when the demand does not fit the machine integer type it is computed in
        out.max_demand, out.min_capacity = top, (top + offset if limit is None or top <= limit else None)
        out.demand_point = _canonical_point(case, [d == top], rlimit)
        rd, rc = _replayed(ob, out.demand_point, demand, capacity)
        if rd != top:
            raise _Wrong(f"replay of {out.demand_point} gives {demand}={rd}, Z3 said {top}")
        out.capacity_at_demand_point = rc

        slack = _optimum(case, c_eff - d, False, rlimit)
        assert slack is not None  # the case admitted a point above
        # among the tightest points, the largest demand (the waste no point avoids)
        d_star = _optimum(case, d, True, rlimit, [c_eff - d == slack])
        assert d_star is not None
        out.min_slack = slack
        out.slack_point = _canonical_point(case, [c_eff - d == slack, d == d_star], rlimit)
        rd, rc = _replayed(ob, out.slack_point, demand, capacity)
        if eff(rc) - rd != slack or rd != d_star:
            raise _Wrong(f"replay of {out.slack_point} gives slack {eff(rc) - rd}, Z3 said {slack}")
        out.demand_at_slack_point, out.capacity_at_slack_point = rd, rc
        pct = 100.0 * slack / rd if rd > 0 else None
        # two decimals; a nonzero slack too small for them keeps 2 significant digits (never -0.0)
        out.slack_pct = None if pct is None else (round(pct, 2) if round(pct, 2) != 0 or slack == 0 else float(f"{pct:.2g}"))
    except _Unknown as exc:
        return CaseBound(dict(case.fixed), "unknown", message=str(exc))
    except _Wrong as exc:
        return CaseBound(dict(case.fixed), "error", message=str(exc))
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # a model raising on replay
        return CaseBound(dict(case.fixed), "error", message=_describe_exc(exc))
    out.insufficient = slack < 0
    out.wasteful = out.slack_pct is not None and out.slack_pct > threshold
    return out


def bound_obligation(ob: Obligation, pins: dict[str, int] | None = None, rlimit: int = 20_000_000,
                     waste_threshold: float = DEFAULT_WASTE_THRESHOLD) -> ObligationBound:
    """Bounds of every case of ``ob`` (never raises; problems become ``error``/``unknown``).

    ``pins`` fixes parameters (as ``--set``); ``rlimit`` is the Z3 budget per query;
    ``waste_threshold`` is in percent of the demand at the tightest point.
    """
    pins = {k: v for k, v in (pins or {}).items() if k in ob.domain}
    result = ObligationBound(ob.id, ob.expect, "error", waste_threshold=waste_threshold, file=ob.file,
                             line=ob.line, case_id=ob.case)
    rlimit = rlimit if ob.rlimit is None else ob.rlimit
    try:
        finite, ranges, vectors = checked_domains(ob, pins, rlimit)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        result.message = _describe_exc(exc)
        return result
    names = list(finite)
    for combo in itertools.product(*(finite[n] for n in names)):
        fixed = dict(zip(names, combo))
        abstract, why = _abstract_case(ob, fixed, ranges, vectors, rlimit) if vectors else (None, "")
        try:
            case = abstract if abstract is not None else build_case(ob, fixed, ranges, vectors)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            result.cases.append(CaseBound(fixed, "error", message=_describe_exc(exc)))
            continue
        relation = case.relation if abstract is not None else case.ev.claim.relation
        if not result.relation:
            result.relation = relation
            parsed = capacity_relation(result.relation)
            if parsed is None:
                result.status = "skipped"
                result.message = f"claim {result.relation or '(custom)'} is not an at_most/less_than capacity claim"
                return result
            result.demand, result.capacity, result.offset = parsed
        elif relation != result.relation:
            result.cases.append(CaseBound(fixed, "error", message=f"relation {relation!r} differs between cases"))
            continue
        args = (ob, case, result.demand, result.capacity, result.offset, rlimit, waste_threshold, relation_limit(result.relation))
        if abstract is not None:
            bounded = _bound_case(*args)
            bounded.method = "aggregate"
        elif vectors:
            bounded = _tightness_case(*args)
            if why and bounded.status == "bounded":
                bounded.message = f"aggregate abstraction not applicable ({why}): minimum slack only"
        else:
            bounded = _bound_case(*args)
        result.cases.append(bounded)

    statuses = [c.status for c in result.cases]
    if "error" in statuses:
        result.status = "error"
        result.message = next(c.message for c in result.cases if c.status == "error")
    elif "unknown" in statuses:
        result.status = "unknown"
        n = statuses.count("unknown")
        result.message = f"{n} of {len(statuses)} cases unknown (no bound): " + next(c.message for c in result.cases if c.status == "unknown")
    elif "bounded" not in statuses:
        result.status = "vacuous"
        result.message = "the assumptions admit no point of the domain" if result.cases else "no case"
    else:
        result.status = "bounded"
        worst, tight = result.worst, result.tightest
        assert tight
        cap = _effective(result.capacity, result.offset, result.relation)
        searched = sum(c.method == "search" for c in result.admitted())
        result.message = (
            (f"worst {result.demand} = {worst.max_demand}; minimal sufficient {result.capacity} = {_mincap(worst.min_capacity)}; "
             if worst else "")
            + f"min slack ({cap} - {result.demand}) {'=' if tight.slack_exact else '<='} {tight.min_slack}; "
            f"{result.insufficient} insufficient, {result.wasteful} wasteful of {len(result.admitted())} bounded cases"
            + (f" ({searched} on the bounded encoding: minimum slack only)" if searched else "")
        )
    return result


def _effective(capacity: str, offset: int | None, relation: str) -> str:
    """The effective capacity in words: ``W_bt - 1``, or ``min(numel - 1, 2147483647)`` when the
    demand is computed in int32."""
    cap = f"{capacity} - 1" if offset else capacity
    limit = relation_limit(relation)
    return cap if limit is None else f"min({cap}, {limit})"


def format_point(point: dict[str, Any]) -> str:
    """``name=value, …`` with vectors as ``[a, b, …]`` (long vectors elided)."""
    parts = []
    for k, v in point.items():
        if isinstance(v, (list, tuple)):
            shown = ", ".join(map(str, v[:8])) + (f", … ({len(v)} entries)" if len(v) > 8 else "")
            parts.append(f"{k}=[{shown}]")
        else:
            parts.append(f"{k}={v}")
    return ", ".join(parts)



def _pct(value: float | None) -> str:
    """Two decimals; a nonzero value that would print as 0.00 keeps two significant digits
    (an insufficient capacity never reads ``-0.00%``)."""
    if value is None:
        return "n/a"
    if value != 0 and abs(value) < 0.005:
        return f"{value:.2g}%"
    return f"{value:.2f}%"


def _flags(c: dict[str, Any]) -> str:
    flags = [f for f, on in (("**insufficient**", c.get("insufficient")), ("wasteful", c.get("wasteful"))) if on]
    return ", ".join(flags) or "—"


def _case_name(case: dict[str, Any] | None) -> str:
    return format_point(case) if case else "(no finite parameters)"


def render_bounds_report(entries: list[dict[str, Any]], left_out: list[dict[str, Any]] = ()) -> str:
    """The text of ``proofs/bounds.md`` from :meth:`ObligationBound.to_json` entries (no timings);
    ``left_out`` lists obligations not bounded here (``BoundRun.to_json()["not_in_report"]``)."""
    entries = [e for e in entries if e["status"] != "skipped"]
    lines = [
        "# Capacity bounds",
        "",
        "Generated by `capproof bound --write`; do not edit. `make verify` fails when this file is stale.",
        "",
        "For every obligation whose claim is `demand <= capacity` (or `index < capacity`, read as",
        "`index <= capacity - 1`), per case: the exact worst demand (z3.Optimize, certified by an unsat",
        "query, witness replayed on plain ints), the minimal sufficient constant capacity, and the",
        "minimum slack `capacity - demand` with its percentage of the demand at the tightest point",
        "(largest demand among the points of minimum slack). Witness points are the smallest points",
        "attaining each optimum. `unknown` is never a bound. A claim `in int32` (`dtype=`) also needs the",
        "demand to fit the type: the effective capacity is `min(capacity, 2**31 - 1)`.",
        "",
        "Obligations with Vector (batch or routing) parameters: on the aggregate abstraction of the batch",
        "where it applies (`aggregate`: every batch size, as above); otherwise on the bounded encoding,",
        "minimum slack only (`search`: solver queries, no Optimize; tight = `slack <= 0` sat and",
        "`slack <= -1` unsat; an insufficient case shows the slack of its smallest failing point, `≤`).",
        "So raising a capacity or lowering a demand of a tight claim changes this file.",
        "",
        "| obligation | claim | expect | status | worst demand | minimal sufficient capacity | min slack | flags |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for e in entries:
        name = e["id"].split("::")[-1]
        flags = []
        if e.get("insufficient_cases"):
            flags.append(f"**{e['insufficient_cases']} insufficient**")
        if e.get("wasteful_cases"):
            flags.append(f"{e['wasteful_cases']} wasteful")
        ok = "" if e["ok"] else " ✗"
        lines.append(
            f"| `{name}` | `{e['relation']}` | {e['expect']} | {e['status']}{ok} | {_v(e['max_demand'])} | "
            f"{_v(e['min_capacity'])} | {'' if e.get('min_slack_exact', True) else '≤ '}{_v(e['min_slack'])} | {', '.join(flags) or '—'} |"
        )
    lines.append("")
    if left_out:
        lines += ["Not bounded in this report:", ""]
        lines += [f"- `{e['id'].split('::')[-1]}`: {e['message']}" for e in left_out]
        lines.append("")
    for e in entries:
        lines += _obligation_bounds_md(e)
    return "\n".join(lines).rstrip() + "\n"


def _v(value: object) -> str:
    return "—" if value is None else f"`{value}`"


def _mincap(value: int | None) -> str:
    return "none (the demand does not fit its integer type)" if value is None else str(value)


def _d(value: object) -> str:
    return "—" if value is None else str(value)


def _obligation_bounds_md(e: dict[str, Any]) -> list[str]:
    name = e["id"].split("::")[-1]
    out = [f"## `{name}`", ""]
    if e.get("file"):
        out.append(f"- spec: [{e['file']}:{e['line']}](../{e['file']}#L{e['line']})")
    if e.get("case"):
        out.append(f"- corpus case: `{e['case']}`")
    cap = _effective(e.get("capacity", ""), e.get("capacity_offset"), e.get("relation", ""))
    out.append(f"- claim: `{e['relation']}`; slack = `{cap} - {e['demand']}`" if e.get("relation") else "- claim: —")
    status = "as expected" if e["ok"] else f"**NOT AS EXPECTED** (expected {e['expect']})"
    out.append(f"- status: **{e['status']}** ({status}); {e['message']}")
    out.append(f"- waste threshold: {e['waste_threshold_pct']:.0f}% of the demand at the tightest point")
    cases = e["cases"]
    bounded = [c for c in cases if c["status"] == "bounded"]
    with_worst = [c for c in bounded if c["max_demand"] is not None]
    if bounded:
        tight = min(bounded, key=lambda c: c["min_slack"])
        if with_worst:
            worst = max(with_worst, key=lambda c: c["max_demand"])
            out.append(f"- worst demand `{e['demand']}` = `{worst['max_demand']}` at {format_point(worst['demand_point'])} "
                       f"(`{e['capacity']}` = `{worst['capacity_at_demand_point']}` there)")
        searched = [c for c in bounded if c.get("method") == "search"]
        if searched:
            out.append(f"- {len(searched)} of {len(bounded)} cases on the bounded encoding of the batch (the aggregate "
                       "abstraction does not apply): minimum slack only, by solver queries (tight: `slack <= 0` sat and "
                       "`slack <= -1` unsat); an insufficient case shows the slack of its smallest failing point")
        if any(c.get("method") == "aggregate" for c in bounded):
            out.append("- cases marked `aggregate` are bounded on the aggregate abstraction of the batch: every batch size")
        rel = "=" if tight.get("slack_exact", True) else "≤"
        out.append(f"- minimum slack {rel} `{tight['min_slack']}` ({_pct(tight['slack_pct'])}) at {format_point(tight['slack_point'])} "
                   f"(`{e['demand']}` = `{tight['demand_at_slack_point']}`, `{e['capacity']}` = `{tight['capacity_at_slack_point']}`)")
    shown = cases
    note = ""
    if len(cases) > 64:
        interesting = {id(c) for c in cases if c["status"] != "bounded" or c["insufficient"] or c["wasteful"]}
        interesting |= {id(c) for c in sorted(bounded, key=lambda c: c["min_slack"])[:8]}
        interesting |= {id(c) for c in sorted(with_worst, key=lambda c: -c["max_demand"])[:8]}
        shown = [c for c in cases if id(c) in interesting]
        note = f"Showing {len(shown)} of {len(cases)} cases (flagged, not bounded, 8 tightest, 8 largest); `capproof bound --json` has all."
    if shown:
        out += ["", "| case | status | worst demand | minimal capacity | capacity there | min slack | slack % | demand there | flags | witness (worst demand) | witness (min slack) |",
                "|---|---|---|---|---|---|---|---|---|---|---|"]
        for c in shown:
            if c["status"] != "bounded":
                out.append(f"| {_case_name(c['case'])} | {c['status']} | — | — | — | — | — | — | {c['message']} | — | — |")
                continue
            method = f" ({c['method']})" if c.get("method") else ""
            slack = c["min_slack"] if c.get("slack_exact", True) else f"≤ {c['min_slack']}"
            out.append(
                f"| {_case_name(c['case'])} | bounded{method} | {_d(c['max_demand'])} | {_d(c['min_capacity'])} | "
                f"{_d(c['capacity_at_demand_point'])} | {slack} | {_pct(c['slack_pct'])} | {c['demand_at_slack_point']} | {_flags(c)} | "
                f"{format_point(_free(c['demand_point'], c['case'])) if c['max_demand'] is not None else '—'} | "
                f"{format_point(_free(c['slack_point'], c['case']))} |"
            )
    if note:
        out += ["", note]
    out.append("")
    return out


def _free(point: dict[str, Any], case: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in point.items() if k not in case}


@dataclass
class BoundRun:
    """The bounds of every selected capacity obligation, plus bad-input lines."""

    results: list[ObligationBound] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """0: every bound computed and consistent with ``expect``; 1: a bound contradicts it;
        2: unknown, error, vacuous, bad input, or no capacity claim selected."""
        active = [r for r in self.results if r.status not in ("skipped", "not_in_report")]
        if self.errors or not active or any(r.status != "bounded" for r in active):
            return 2
        return 0 if all(r.ok for r in active) else 1

    def to_json(self) -> dict[str, Any]:
        return {"bounds": [r.to_json() for r in self.results if r.status not in ("skipped", "not_in_report")],
                "not_in_report": [{"id": r.id, "message": r.message} for r in self.results if r.status == "not_in_report"],
                "skipped": [r.id for r in self.results if r.status == "skipped"],
                "errors": list(self.errors), "exit_code": self.exit_code}


REPORT_SKIPS_VECTORS = "has Vector (batch or routing) parameters: not bounded in this run (`--no-vectors`)"


def _bound_fresh(ob: Obligation, pins: dict[str, int], rlimit: int, waste_threshold: float) -> ObligationBound:
    """Bound ``ob`` from a fresh Z3 context, so the witnesses Z3 picks do not depend on what was
    bounded before in this process (proofs/bounds.md is the same for any -j); never raises. The
    caller's context is restored afterwards (an in-process ``-j 1`` run must not strand the Z3
    terms its caller holds in another context)."""
    previous = z3.z3._main_ctx
    try:
        z3.z3._main_ctx = None
        return bound_obligation(ob, pins, rlimit, waste_threshold)
    except BaseException as exc:  # noqa: BLE001 - reported as the obligation's error
        return ObligationBound(ob.id, ob.expect, "error", _describe_exc(exc), file=ob.file, line=ob.line, case_id=ob.case)
    finally:
        z3.z3._main_ctx = previous


def _bound_child(conn, chunk: list[tuple[int, Obligation]], pins: dict[str, int], rlimit: int, waste_threshold: float) -> None:
    """Bound each obligation of ``chunk`` in this (forked) process, each from a fresh Z3 context
    (:func:`_bound_fresh`); send ``(index, result)`` as each is done."""
    for i, ob in chunk:
        conn.send((i, _bound_fresh(ob, pins, rlimit, waste_threshold)))
    conn.close()


#: Obligations without Vector parameters are bounded this many to a process (most are not capacity
#: claims, or take milliseconds: a process each cost more than bounding them); each still from a
#: fresh Z3 context. Vector obligations (seconds each) get a process each.
CHUNK = 12


def _chunks(obligations: list[Obligation]) -> list[list[int]]:
    """Indices of ``obligations`` grouped into processes, largest first: each obligation with a
    Vector parameter alone (by total vector size, then number of cases), then the others in
    declared order, :data:`CHUNK` to a process."""
    def size(ob: Obligation) -> int:
        return sum(getattr(d, "size", 0) or 0 for d in ob.domain.values())

    heavy = sorted((i for i, ob in enumerate(obligations) if size(ob)), key=lambda i: -size(obligations[i]))
    light = [i for i, ob in enumerate(obligations) if not size(ob)]
    return [[i] for i in heavy] + [light[k:k + CHUNK] for k in range(0, len(light), CHUNK)]


def _bound_all(obligations: list[Obligation], pins: dict[str, int], rlimit: int, waste_threshold: float, jobs: int,
               progress=None) -> list[ObligationBound]:
    """Bound the obligations in forked processes (:func:`_chunks`), at most ``jobs`` at a time,
    largest first (results in declared order). Without ``fork`` (Windows): in this process, in order."""
    import gc
    import multiprocessing
    from multiprocessing.connection import wait

    if "fork" not in multiprocessing.get_all_start_methods():  # pragma: no cover - Windows
        results = []
        for ob in obligations:
            results.append(_bound_fresh(ob, pins, rlimit, waste_threshold))
            if progress and results[-1].status != "skipped":
                progress(results[-1])
        return results
    ctx = multiprocessing.get_context("fork")
    pending = _chunks(obligations)
    out: list[ObligationBound | None] = [None] * len(obligations)
    running: dict[Any, tuple[list[int], Any]] = {}
    shown = 0
    gc.freeze()  # the loaded specs stay out of the collector's passes in the forked processes (fewer page copies)
    try:
        while pending or running:
            while pending and len(running) < max(1, jobs):
                chunk = pending.pop(0)
                recv, send = ctx.Pipe(duplex=False)
                proc = ctx.Process(target=_bound_child, args=(send, [(i, obligations[i]) for i in chunk], pins, rlimit,
                                                              waste_threshold), daemon=True)
                proc.start()
                send.close()
                running[recv] = (list(chunk), proc)
            for conn in wait(list(running)):
                left, proc = running[conn]
                try:
                    i, result = conn.recv()
                    out[i] = result
                    left.remove(i)
                    if left:
                        continue
                except (EOFError, OSError):
                    proc.join(5)
                    for i in left:
                        ob = obligations[i]
                        out[i] = ObligationBound(ob.id, ob.expect, "error", f"the bounding process exited with code "
                                                 f"{proc.exitcode} without a result", file=ob.file, line=ob.line, case_id=ob.case)
                del running[conn]
                conn.close()
                proc.join(5)
            while shown < len(out) and out[shown] is not None:
                if progress and out[shown].status != "skipped":  # type: ignore[union-attr]
                    progress(out[shown])
                shown += 1
    finally:
        gc.unfreeze()
    return out  # type: ignore[return-value]


def run_bounds(paths, keyword: str | None = None, pins: dict[str, int] | None = None, rlimit: int = 20_000_000,
               waste_threshold: float = DEFAULT_WASTE_THRESHOLD, progress=None, skip_vectors: bool = False,
               jobs: int = 1) -> BoundRun:
    """Load ``paths`` (default spec/) and bound every obligation with a ``<=``/``<`` claim, each in
    its own process, ``jobs`` at a time.

    Obligations with Vector parameters are bounded on the aggregate abstraction where it applies,
    else by the minimum-slack search on the bounded encoding (:func:`_tightness_case`);
    ``skip_vectors`` records them as ``not_in_report`` instead (see :data:`REPORT_SKIPS_VECTORS`).
    """
    from .loader import load

    pins = pins or {}
    items, load_errors = load(list(paths or ("spec",)), keyword)
    run = BoundRun(errors=[e.message for e in load_errors])
    obligations = [it for it in items if isinstance(it, Obligation)]
    known = {n for ob in obligations for n in ob.domain}
    run.errors += [f"--set {n}: no selected obligation has a parameter named {n!r}" for n in pins if n not in known]
    skipped = [ob for ob in obligations if skip_vectors and any(isinstance(d, Vector) for d in ob.domain.values())]
    run.results += _bound_all([ob for ob in obligations if ob not in skipped], pins, rlimit, waste_threshold, jobs, progress)
    run.results += [ObligationBound(ob.id, ob.expect, "not_in_report", REPORT_SKIPS_VECTORS.format(name=ob.name),
                                    file=ob.file, line=ob.line, case_id=ob.case) for ob in skipped]
    if not any(r.status not in ("skipped", "not_in_report") for r in run.results) and not any(r.status == "not_in_report" for r in run.results) and not load_errors:
        run.errors.append("nothing to bound: no selected obligation has an at_most/less_than claim")
    return run


def terminal_bound_lines(r: ObligationBound) -> list[str]:
    """A status line, then the worst demand and the tightest slack with their witnesses."""
    mark = "ok  " if r.ok else "FAIL"
    note = "" if r.ok else f" (expected {r.expect})"
    lines = [f"{mark} {r.status:<9} {r.id}{note}"]
    worst, tight = r.worst, r.tightest
    if r.status == "bounded" and tight:
        cap = _effective(r.capacity, r.offset, r.relation)
        if worst:
            lines.append(f"       claim {r.relation}: worst {r.demand} = {worst.max_demand} at {format_point(worst.demand_point)}"
                         f" -> minimal sufficient {r.capacity} = {_mincap(worst.min_capacity)}")
        else:
            lines.append(f"       claim {r.relation}: worst {r.demand} not computed (bounded encoding of the batch: minimum slack only)")
        lines.append(f"       min slack ({cap} - {r.demand}) {'=' if tight.slack_exact else '<='} {tight.min_slack} "
                     f"({_pct(tight.slack_pct)} of {r.demand}={tight.demand_at_slack_point}) at {format_point(tight.slack_point)}"
                     + ("" if tight.slack_exact else " (the smallest failing point; not minimised)"))
        bounded = len(r.admitted())
        lines.append(f"       {bounded} bounded cases: {r.insufficient} insufficient, {r.wasteful} wasteful "
                     f"(slack > {r.waste_threshold:g}% of demand)")
    else:
        lines.append(f"       {r.message}")
    return lines
