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
from .symbolic import to_z3_int

__all__ = ["CaseBound", "ObligationBound", "bound_obligation", "capacity_relation", "DEFAULT_WASTE_THRESHOLD"]

#: Default waste threshold in percent: a capacity whose slack at its tightest point exceeds this
#: share of the demand there is flagged ``wasteful``.
DEFAULT_WASTE_THRESHOLD = 100.0

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

    def to_json(self) -> dict[str, Any]:
        return {
            "case": dict(self.fixed), "status": self.status, "message": self.message,
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
        adm = self.admitted()
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


def _canonical_point(case: CaseProblem, fixes: list[z3.BoolRef], rlimit: int) -> dict[str, Any]:
    """The lexicographically smallest point (declared order) satisfying the case and ``fixes``."""
    s, _ = case.solver(rlimit)
    for cond in fixes:
        s.add(cond)
    answer = s.check()
    if answer != z3.sat:
        raise _Unknown(f"witness search: {s.reason_unknown() if answer == z3.unknown else 'optimum not attainable'}")
    scalars = [p for p in case.ob.params if p in case.scalars]
    model, done = _minimize(case, s, s.model(), scalars)
    if done:  # vectors: one search on each vector's sum, not entry by entry (1024-entry routings)
        for name, entries in case.vectors.items():
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


def _bound_case(ob: Obligation, case: CaseProblem, demand: str, capacity: str, offset: int, rlimit: int, threshold: float,
                limit: int | None = None) -> CaseBound:
    out = CaseBound(dict(case.fixed), "bounded")
    if case.false_assumptions:
        out.status, out.message = "excluded", f"assumption false: {case.false_assumptions[0]}"
        return out
    d = to_z3_int(case.ev.claim.values[demand])
    c_eff = to_z3_int(case.ev.claim.values[capacity]) - offset
    if limit is not None:  # the demand is computed in a machine integer type: it must also fit
        c_eff = z3.If(c_eff <= limit, c_eff, z3.IntVal(limit))

    def eff(c: int) -> int:
        return c - offset if limit is None else min(c - offset, limit)
    try:
        top = _optimum(case, d, True, rlimit)
        if top is None:
            out.status, out.message = "excluded", "the assumptions admit no point of this case"
            return out
        out.max_demand, out.min_capacity = top, top + offset
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
        try:
            case = build_case(ob, fixed, ranges, vectors)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            result.cases.append(CaseBound(fixed, "error", message=_describe_exc(exc)))
            continue
        if not result.relation:
            result.relation = case.ev.claim.relation
            parsed = capacity_relation(result.relation)
            if parsed is None:
                result.status = "skipped"
                result.message = f"claim {result.relation or '(custom)'} is not an at_most/less_than capacity claim"
                return result
            result.demand, result.capacity, result.offset = parsed
        elif case.ev.claim.relation != result.relation:
            result.cases.append(CaseBound(fixed, "error", message=f"relation {case.ev.claim.relation!r} differs between cases"))
            continue
        result.cases.append(_bound_case(ob, case, result.demand, result.capacity, result.offset, rlimit, waste_threshold,
                                        relation_limit(result.relation)))

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
        assert worst and tight
        cap = _effective(result.capacity, result.offset, result.relation)
        result.message = (
            f"worst {result.demand} = {worst.max_demand}; minimal sufficient {result.capacity} = {worst.min_capacity}; "
            f"min slack ({cap} - {result.demand}) = {tight.min_slack}; "
            f"{result.insufficient} insufficient, {result.wasteful} wasteful of {len(result.admitted())} bounded cases"
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



BOUNDS_REPORT = "proofs/bounds.md"


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
        "attaining each optimum. `unknown` is never a bound.",
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
            f"{_v(e['min_capacity'])} | {_v(e['min_slack'])} | {', '.join(flags) or '—'} |"
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
    if bounded:
        worst = max(bounded, key=lambda c: c["max_demand"])
        tight = min(bounded, key=lambda c: c["min_slack"])
        out.append(f"- worst demand `{e['demand']}` = `{worst['max_demand']}` at {format_point(worst['demand_point'])} "
                   f"(`{e['capacity']}` = `{worst['capacity_at_demand_point']}` there)")
        out.append(f"- minimum slack `{tight['min_slack']}` ({_pct(tight['slack_pct'])}) at {format_point(tight['slack_point'])} "
                   f"(`{e['demand']}` = `{tight['demand_at_slack_point']}`, `{e['capacity']}` = `{tight['capacity_at_slack_point']}`)")
    shown = cases
    note = ""
    if len(cases) > 64:
        interesting = {id(c) for c in cases if c["status"] != "bounded" or c["insufficient"] or c["wasteful"]}
        interesting |= {id(c) for c in sorted(bounded, key=lambda c: c["min_slack"])[:8]}
        interesting |= {id(c) for c in sorted(bounded, key=lambda c: -c["max_demand"])[:8]}
        shown = [c for c in cases if id(c) in interesting]
        note = f"Showing {len(shown)} of {len(cases)} cases (flagged, not bounded, 8 tightest, 8 largest); `capproof bound --json` has all."
    if shown:
        out += ["", "| case | status | worst demand | minimal capacity | capacity there | min slack | slack % | demand there | flags | witness (worst demand) | witness (min slack) |",
                "|---|---|---|---|---|---|---|---|---|---|---|"]
        for c in shown:
            if c["status"] != "bounded":
                out.append(f"| {_case_name(c['case'])} | {c['status']} | — | — | — | — | — | — | {c['message']} | — | — |")
                continue
            out.append(
                f"| {_case_name(c['case'])} | bounded | {c['max_demand']} | {c['min_capacity']} | {c['capacity_at_demand_point']} | "
                f"{c['min_slack']} | {_pct(c['slack_pct'])} | {c['demand_at_slack_point']} | {_flags(c)} | "
                f"{format_point(_free(c['demand_point'], c['case']))} | {format_point(_free(c['slack_point'], c['case']))} |"
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


REPORT_SKIPS_VECTORS = (
    "has Vector (batch or routing) parameters: not bounded here (Optimize over many per-request or "
    "per-expert terms is slow and often unknown; see docs/performance.md); run "
    "`capproof bound --vectors -k {name}`"
)


def run_bounds(paths, keyword: str | None = None, pins: dict[str, int] | None = None, rlimit: int = 20_000_000,
               waste_threshold: float = DEFAULT_WASTE_THRESHOLD, progress=None, skip_vectors: bool = False) -> BoundRun:
    """Load ``paths`` (default spec/) and bound every obligation with a ``<=``/``<`` claim.

    ``skip_vectors`` (the proofs/bounds.md run) records obligations with Vector parameters as
    ``not_in_report`` instead of bounding them (see :data:`REPORT_SKIPS_VECTORS`).
    """
    from .loader import load

    pins = pins or {}
    items, load_errors = load(list(paths or ("spec",)), keyword)
    run = BoundRun(errors=[e.message for e in load_errors])
    obligations = [it for it in items if isinstance(it, Obligation)]
    known = {n for ob in obligations for n in ob.domain}
    run.errors += [f"--set {n}: no selected obligation has a parameter named {n!r}" for n in pins if n not in known]
    for ob in obligations:
        if skip_vectors and any(isinstance(d, Vector) for d in ob.domain.values()):
            run.results.append(ObligationBound(ob.id, ob.expect, "not_in_report", REPORT_SKIPS_VECTORS.format(name=ob.name),
                                               file=ob.file, line=ob.line, case_id=ob.case))
            continue
        r = bound_obligation(ob, pins, rlimit, waste_threshold)
        run.results.append(r)
        if progress and r.status != "skipped":
            progress(r)
    if not any(r.status not in ("skipped", "not_in_report") for r in run.results) and not any(r.status == "not_in_report" for r in run.results) and not load_errors:
        run.errors.append("nothing to bound: no selected obligation has an at_most/less_than claim")
    return run


def terminal_bound_lines(r: ObligationBound) -> list[str]:
    """A status line, then the worst demand and the tightest slack with their witnesses."""
    mark = "ok  " if r.ok else "FAIL"
    note = "" if r.ok else f" (expected {r.expect})"
    lines = [f"{mark} {r.status:<9} {r.id}{note}"]
    worst, tight = r.worst, r.tightest
    if r.status == "bounded" and worst and tight:
        cap = _effective(r.capacity, r.offset, r.relation)
        lines.append(f"       claim {r.relation}: worst {r.demand} = {worst.max_demand} at {format_point(worst.demand_point)}"
                     f" -> minimal sufficient {r.capacity} = {worst.min_capacity}")
        lines.append(f"       min slack ({cap} - {r.demand}) = {tight.min_slack} ({_pct(tight.slack_pct)} of {r.demand}="
                     f"{tight.demand_at_slack_point}) at {format_point(tight.slack_point)}")
        bounded = len(r.admitted())
        lines.append(f"       {bounded} bounded cases: {r.insufficient} insufficient, {r.wasteful} wasteful "
                     f"(slack > {r.waste_threshold:g}% of demand)")
    else:
        lines.append(f"       {r.message}")
    return lines
