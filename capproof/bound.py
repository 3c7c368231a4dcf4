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

from .aggregate import AbstractCase
from .domain import Range, Vector
from .encode import CaseProblem, build_case, checked_domains, concrete_args, describe_exception, evaluate
from .minimize import minimize_point, minimize_term
from .obligation import Obligation
from .symbolic import fresh_z3_context, to_z3_int
from .verdict import DEFAULT_WASTE_THRESHOLD

__all__ = [
    "CaseBound",
    "ObligationBound",
    "bound_obligation",
    "check_obligation",
    "capacity_relation",
    "DEFAULT_WASTE_THRESHOLD",
]


_RELATION = re.compile(r"^(0 <= )?(\w+) (<=|<) (\w+)(?: in (\w+))?$")


@dataclass(frozen=True)
class Relation:
    """One ``at_most``/``less_than`` relation as the claim states it.

    ``demand <= capacity - offset`` (offset 1 for ``<``), and when the demand is computed in an
    integer type (``in int32``) also ``demand <= limit``; ``floor`` is the relation's lower end
    (0 for ``less_than``'s ``0 <=``, the dtype's least value, the greater of both; None for a
    plain ``at_most``): a demand below it breaks the claim whatever the capacity."""

    demand: str
    capacity: str
    offset: int
    limit: int | None = None
    floor: int | None = None

    def effective(self, capacity: int) -> int:
        """The effective capacity: ``capacity - offset``, at most ``limit``."""
        return capacity - self.offset if self.limit is None else min(capacity - self.offset, self.limit)


def parse_relation(relation: str) -> Relation | None:
    """The :class:`Relation` of ``"d <= c"``, ``"0 <= d < c"``, ``"d <= c in uint32"``; None for
    any other relation (``==``, custom claims, a model whose paths return different relations)."""
    m = _RELATION.match(relation or "")
    if not m:
        return None
    floor = 0 if m.group(1) else None
    limit = None
    if m.group(5):
        from .arith import dtype_range

        lo, limit = dtype_range(m.group(5))
        floor = lo if floor is None else max(floor, lo)
    return Relation(m.group(2), m.group(4), 1 if m.group(3) == "<" else 0, limit, floor)


def path_relations(relation: str) -> list[Relation] | None:
    """The relations of a claim whose paths return different ones (``"0 <= i < c or i <= c"``,
    as :func:`capproof.encode.build_case` names a merged claim), each parsed; None unless every
    part is a capacity relation of the same demand and capacity."""
    parts = [parse_relation(part) for part in (relation or "").split(" or ")]
    if not parts or any(p is None for p in parts):
        return None
    if len({(p.demand, p.capacity) for p in parts}) != 1:  # type: ignore[union-attr]
        return None
    return parts  # type: ignore[return-value]


def capacity_relation(relation: str) -> tuple[str, str, int | None] | None:
    """``(demand name, capacity name, offset)`` for ``"d <= c"`` (offset 0) or ``"d < c"`` (1).

    The effective capacity is ``c - offset``; a claim whose paths return both (``"0 <= d < c or
    d <= c"``) has offset None (each path its own). None for any other relation (``==``, custom
    claims)."""
    parts = path_relations(relation)
    if parts is None:
        return None
    offsets = {p.offset for p in parts}
    return parts[0].demand, parts[0].capacity, offsets.pop() if len(offsets) == 1 else None


def relation_limit(relation: str) -> int | None:
    """The greatest value of the integer type the demand is computed in (``"0 <= index < capacity
    in int32"`` from ``less_than(..., dtype="int32")``: ``2**31 - 1``), else None. The claim then
    holds exactly when ``demand <= min(capacity - offset, limit)``: that minimum is the effective
    capacity bounded here (the lower end, ``0 <=`` or the type's, is checked apart: a demand
    below it makes the case insufficient, see :func:`_below_floor`)."""
    parts = path_relations(relation)
    limits = {p.limit for p in parts or []}
    return limits.pop() if len(limits) == 1 else None


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
    #: the smallest point whose demand is below the relation's lower end (``0 <=`` of
    #: ``less_than``, the least value of an unsigned ``dtype``): no capacity suffices there, the
    #: case is insufficient; empty when no admitted point is below it
    below_point: dict[str, Any] = field(default_factory=dict)
    demand_at_below_point: int | None = None
    #: a case with every vector its batch alone (its lengths in ``fixed``): bounded because the
    #: model reads its padding (:func:`_alone_bounds`)
    alone: bool = False

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CaseBound:
        """The case whose :meth:`to_json` is ``data`` (vectors in points as lists)."""
        return cls(
            fixed=dict(data["case"]),
            status=data["status"],
            message=data["message"],
            max_demand=data["max_demand"],
            min_capacity=data["min_capacity"],
            demand_point=dict(data["demand_point"]),
            capacity_at_demand_point=data["capacity_at_demand_point"],
            min_slack=data["min_slack"],
            slack_point=dict(data["slack_point"]),
            demand_at_slack_point=data["demand_at_slack_point"],
            capacity_at_slack_point=data["capacity_at_slack_point"],
            slack_pct=data["slack_pct"],
            insufficient=data["insufficient"],
            wasteful=data["wasteful"],
            method=data.get("method", ""),
            slack_exact=data.get("slack_exact", True),
            alone=data.get("alone", False),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "case": dict(self.fixed),
            "status": self.status,
            "message": self.message,
            **({"method": self.method, "slack_exact": self.slack_exact} if self.method else {}),
            **({"alone": True} if self.alone else {}),
            "max_demand": self.max_demand,
            "min_capacity": self.min_capacity,
            "demand_point": _jsonable(self.demand_point),
            "capacity_at_demand_point": self.capacity_at_demand_point,
            "min_slack": self.min_slack,
            "slack_point": _jsonable(self.slack_point),
            "demand_at_slack_point": self.demand_at_slack_point,
            "capacity_at_slack_point": self.capacity_at_slack_point,
            "slack_pct": self.slack_pct,
            "insufficient": self.insufficient,
            "wasteful": self.wasteful,
            **(
                {"below_point": _jsonable(self.below_point), "demand_at_below_point": self.demand_at_below_point}
                if self.below_point
                else {}
            ),
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
    #: 1 for ``<``, 0 for ``<=``; None when the model's paths return both (each path its own)
    offset: int | None = 0
    cases: list[CaseBound] = field(default_factory=list)
    waste_threshold: float = DEFAULT_WASTE_THRESHOLD
    file: str = ""
    line: int = 0
    case_id: str | None = None
    #: ``bound --check`` only: why this obligation was bounded from scratch instead of having its
    #: recorded bounds certified ("" when certified, or in a plain run); not part of the JSON
    recomputed: str = ""

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

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ObligationBound:
        """The bounds whose :meth:`to_json` is ``data`` (the summary fields are recomputed from the cases)."""
        return cls(
            id=data["id"],
            expect=data["expect"],
            status=data["status"],
            message=data["message"],
            relation=data["relation"],
            demand=data["demand"],
            capacity=data["capacity"],
            offset=data["capacity_offset"],
            cases=[CaseBound.from_json(c) for c in data["cases"]],
            waste_threshold=data["waste_threshold_pct"],
            file=data["file"],
            line=data["line"],
            case_id=data["case"],
        )

    def to_json(self) -> dict[str, Any]:
        worst, tight = self.worst, self.tightest
        return {
            "id": self.id,
            "case": self.case_id,
            "expect": self.expect,
            "status": self.status,
            "ok": self.ok,
            "message": self.message,
            "relation": self.relation,
            "demand": self.demand,
            "capacity": self.capacity,
            "capacity_offset": self.offset,
            "waste_threshold_pct": self.waste_threshold,
            "max_demand": worst.max_demand if worst else None,
            "min_capacity": worst.min_capacity if worst else None,
            "worst_case": worst.fixed if worst else None,
            "min_slack": tight.min_slack if tight else None,
            "min_slack_exact": tight.slack_exact if tight else True,
            "tightest_case": tight.fixed if tight else None,
            "insufficient_cases": self.insufficient,
            "wasteful_cases": self.wasteful,
            "file": self.file,
            "line": self.line,
            "cases": [c.to_json() for c in self.cases],
        }


def _jsonable(point: dict[str, Any]) -> dict[str, Any]:
    return {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in point.items()}


class _Unknown(Exception):
    pass


class _Wrong(Exception):
    pass


def _optimum(
    case: CaseProblem, objective: z3.ArithRef, maximize: bool, rlimit: int, extra: list[z3.BoolRef] = ()
) -> int | None:
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


def _canonical_point(
    case: CaseProblem, fixes: list[z3.BoolRef], rlimit: int, vector_sums: bool = True
) -> dict[str, Any]:
    """The lexicographically smallest point (declared order) satisfying the case and ``fixes``
    (with ``vector_sums=False`` only the scalars are minimised: a vector's entries are Z3's)."""
    s, _ = case.solver(rlimit)
    for cond in fixes:
        s.add(cond)
    answer = s.check()
    if answer != z3.sat:
        raise _Unknown(f"witness search: {s.reason_unknown() if answer == z3.unknown else 'optimum not attainable'}")
    scalars = [p for p in case.ob.params if p in case.scalars]
    model, done = minimize_point(case, s, s.model(), scalars)
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


def _in_domain(ob: Obligation, point: dict[str, Any]) -> None:
    """Raise _Wrong unless every parameter of ``point`` is in its domain (a batch as long as its
    length parameter says)."""
    for name, dom in ob.domain.items():
        value = point.get(name)
        if not dom.contains(value):  # type: ignore[arg-type]
            raise _Wrong(f"point {format_point(point)}: {name}={value!r} is outside its domain {dom.describe()}")
        length = getattr(dom, "length", None)
        if length is not None and len(value) != point.get(length):  # type: ignore[arg-type]
            raise _Wrong(f"point {format_point(point)}: {name} has {len(value)} entries, {length}={point.get(length)}")  # type: ignore[arg-type]


#: While set (:func:`_alone_bounds`, a case of batches alone): :func:`_replayed` replays the
#: batches alone only (what the case's terms are; the padded cases bound the padded vectors).
_ALONE_ONLY = [False]


def _replayed(ob: Obligation, point: dict[str, Any], demand: str, capacity: str) -> tuple[int, int, Relation]:
    """(demand, capacity, the claim's relation) of ``point`` on plain ints, its batches padded and
    alone (alone only while :data:`_ALONE_ONLY`); raises _Wrong if the point is outside the domain,
    an assumption fails, the claim there is not a capacity relation of ``demand`` and
    ``capacity``, or padded and alone differ."""
    _in_domain(ob, point)
    seen = []
    for padding in (False,) if _ALONE_ONLY[0] else (True, False):
        ev = evaluate(ob, concrete_args(ob, point, padding), witnesses=padding)
        alone = "" if padding else " (its batches alone)"
        failed = [n for n, v in ev.assumptions.items() if not v]
        if failed:
            raise _Wrong(f"witness {point} violates assumptions {failed} on ints{alone}")
        rel = parse_relation(ev.claim.relation)
        if rel is None or (rel.demand, rel.capacity) != (demand, capacity):
            raise _Wrong(f"at {point} the claim is {ev.claim.relation!r}{alone}, not a bound of {demand} by {capacity}")
        seen.append((int(ev.claim.values[demand]), int(ev.claim.values[capacity]), rel))
    if seen[0] != seen[-1]:
        raise _Wrong(
            f"at {point} {demand}, {capacity} = {seen[0][0]}, {seen[0][1]} padded but {seen[1][0]}, {seen[1][1]} alone"
        )
    return seen[0]


@dataclass
class _Objective:
    """A case's quantities as Z3 terms, each path with its own relation (:func:`_objective_terms`)."""

    d: z3.ArithRef  #: the demand
    c_eff: z3.ArithRef  #: the effective capacity (``capacity - offset``, at most the dtype's limit)
    need: z3.ArithRef  #: the capacity the demand needs (``demand + offset``)
    fits: z3.BoolRef  #: the demand fits the dtype it is computed in
    below: z3.BoolRef  #: the demand is below the relation's lower end
    relations: list[Relation]


def _case_relations(case) -> list[tuple[z3.BoolRef | None, Relation]]:
    """Each path's condition and relation (one pair, condition None, when the model did not branch
    or the case is the aggregate abstraction's). Raises _Wrong for a path's non-capacity claim."""
    if isinstance(case, AbstractCase):
        pairs: list = [(None, case.relation)]
    else:
        pairs = list(case.relations) or [(None, case.ev.claim.relation)]
    out = []
    for cond, text in pairs:
        rel = parse_relation(text)
        if rel is None:
            raise _Wrong(f"a path's claim {text!r} is not an at_most/less_than capacity claim")
        out.append((cond, rel))
    return out


def _objective_terms(case, demand: str, capacity: str) -> _Objective:
    """The demand, effective capacity, needed capacity, fit and lower-end terms of a case (bounded
    or aggregate), path by path when the model's paths return different relations (a claim
    ``less_than`` on one branch and ``at_most`` on another: ``capacity - 1`` on the first only)."""
    values = case.values if isinstance(case, AbstractCase) else case.ev.claim.values
    term = lambda v: v if isinstance(v, z3.ExprRef) else to_z3_int(v)  # noqa: E731
    d, c = term(values[demand]), term(values[capacity])
    pairs = _case_relations(case)

    def chain(f):
        out = f(pairs[-1][1])
        for cond, rel in reversed(pairs[:-1]):
            out = z3.If(cond, f(rel), out)
        return out

    def eff(rel: Relation) -> z3.ArithRef:
        e = c - rel.offset
        # the demand is computed in a machine integer type: it must also fit
        return e if rel.limit is None else z3.If(e <= rel.limit, e, z3.IntVal(rel.limit))

    return _Objective(
        d,
        chain(eff),
        chain(lambda rel: d + rel.offset),
        chain(lambda rel: z3.BoolVal(True) if rel.limit is None else d <= rel.limit),
        chain(lambda rel: z3.BoolVal(False) if rel.floor is None else d < rel.floor),
        [rel for _, rel in pairs],
    )


def _sat(case, cond: z3.BoolRef, rlimit: int, what: str) -> bool:
    """Whether the case admits a point where ``cond`` holds; _Unknown when Z3 cannot tell."""
    s, _ = case.solver(rlimit)
    s.add(cond)
    answer = s.check()
    if answer == z3.unknown:
        raise _Unknown(f"{what}: {s.reason_unknown()}")
    return answer == z3.sat


def _min_capacity(case, obj: _Objective, top: int, rlimit: int) -> int | None:
    """The least constant capacity for which the claim holds on the whole case (worst demand
    ``top``), ignoring the lower end; None when no capacity suffices (a demand that does not fit
    its dtype)."""
    if len(obj.relations) == 1 or len({(r.offset, r.limit) for r in obj.relations}) == 1:
        rel = obj.relations[0]
        return top + rel.offset if rel.limit is None or top <= rel.limit else None
    if _sat(case, z3.Not(obj.fits), rlimit, "a demand beyond its dtype"):
        return None
    return _optimum(case, obj.need, True, rlimit)


def _below_floor(
    ob: Obligation, case, obj: _Objective, demand: str, capacity: str, rlimit: int, out: CaseBound, sums: bool
) -> None:
    """Mark ``out`` insufficient at the smallest point whose demand is below its relation's lower
    end (``less_than``'s ``0 <=``, an unsigned dtype's 0), replayed on ints; nothing when no
    admitted point is (one unsat query). The slack alone cannot say it: a demand of -3 against a
    capacity of 10 has slack 13 and breaks the claim."""
    if all(rel.floor is None for rel in obj.relations) or not _sat(case, obj.below, rlimit, "a demand below 0"):
        return
    point = _canonical_point(case, [obj.below], rlimit, vector_sums=sums)
    rd, _, rel = _replayed(ob, point, demand, capacity)
    if rel.floor is None or rd >= rel.floor:
        raise _Wrong(f"replay of {point} gives {demand}={rd}, Z3 said it is below the relation's lower end")
    out.below_point, out.demand_at_below_point = point, rd
    out.insufficient, out.min_capacity = True, None


#: Upper end of the exponential search for a positive minimum slack (the search is ``unknown``
#: beyond: a slack this large says the claim does not bound the demand).
SEARCH_LIMIT = 2**80


def _entries_sorted(
    ob: Obligation, point: dict[str, Any], values: tuple[int, int], demand: str, capacity: str
) -> dict[str, Any]:
    """``point`` with each batch's active entries in descending order where that point, replayed
    on ints, meets every assumption with the same demand and capacity (so the same slack);
    otherwise the batch as Z3 chose it. A search witness's entries are Z3's arbitrary choice
    (only the scalars and the slack are minimised): sorted, the witness no longer changes with
    the order in which unrelated code built its terms, and it reads first what matters
    (``buckets=[1, 1, 0, …]``). Order-dependent claims keep Z3's order."""
    for name, dom in ob.domain.items():
        if not isinstance(dom, Vector) or not isinstance(point.get(name), list):
            continue
        entries = point[name]
        n = len(entries) if dom.length is None else point[dom.length]
        if not isinstance(n, int) or n < 2:
            continue
        ordered = sorted(entries[:n], reverse=True) + entries[n:]
        if ordered == entries:
            continue
        candidate = {**point, name: ordered}
        try:
            if _replayed(ob, candidate, demand, capacity)[:2] == values:
                point = candidate
        except _Wrong:
            pass
        except KeyboardInterrupt:
            raise
        except BaseException:  # noqa: BLE001 - a model that raises there: keep Z3's order
            pass
    return point


def _tightness_case(
    ob: Obligation,
    case: CaseProblem,
    demand: str,
    capacity: str,
    rlimit: int,
    threshold: float,
) -> CaseBound:
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
    obj = _objective_terms(case, demand, capacity)
    d, c_eff = obj.d, obj.c_eff
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
        found, done = minimize_point(case, s, s.model(), [p for p in ob.params if p in case.scalars])
        s.pop()
        if not done:
            raise _Unknown("witness minimisation ran out of rlimit")
        point = case.point(found)
        rd, rc, rel = _replayed(ob, point, demand, capacity)
        rs = rel.effective(rc) - rd
        if out.slack_exact and rs != high:
            raise _Wrong(f"replay of {point} gives slack {rs}, Z3 said {high}")
        if not out.slack_exact and rs >= 0:
            raise _Wrong(f"replay of {point} gives slack {rs}, Z3 said it is negative")
        point = _entries_sorted(ob, point, (rd, rc), demand, capacity)
        _below_floor(ob, case, obj, demand, capacity, rlimit, out, sums=False)
    except _Unknown as exc:
        return CaseBound(dict(case.fixed), "unknown", message=str(exc), method="search")
    except _Wrong as exc:
        return CaseBound(dict(case.fixed), "error", message=str(exc), method="search")
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # a model raising on replay
        return CaseBound(dict(case.fixed), "error", message=describe_exception(exc), method="search")
    out.min_slack, out.slack_point, out.demand_at_slack_point, out.capacity_at_slack_point = rs, point, rd, rc
    out.slack_pct = _slack_pct(rs, rd)
    out.insufficient = out.insufficient or rs < 0
    out.wasteful = out.slack_exact and out.slack_pct is not None and out.slack_pct > threshold
    return out


def _slack_pct(slack: int, demand: int) -> float | None:
    """``100 * slack / demand`` (None for a demand <= 0): two decimals; a nonzero slack too small
    for them keeps 2 significant digits (never -0.0)."""
    pct = 100.0 * slack / demand if demand > 0 else None
    return None if pct is None else (round(pct, 2) if round(pct, 2) != 0 or slack == 0 else float(f"{pct:.2g}"))


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
        return None, describe_exception(exc)
    if outcome.kind in ("abandon", "unknown"):
        return None, outcome.message
    if case.inexact:  # an optimum of an over-approximation need not be attained by any batch
        return None, f"mapped totals over {', '.join(case.inexact)} are bounded, not exact"
    return case, ""


def _bound_case(
    ob: Obligation,
    case: CaseProblem,
    demand: str,
    capacity: str,
    rlimit: int,
    threshold: float,
) -> CaseBound:
    out = CaseBound(dict(case.fixed), "bounded")
    if case.false_assumptions:
        out.status, out.message = "excluded", f"assumption false: {case.false_assumptions[0]}"
        return out
    try:
        obj = _objective_terms(case, demand, capacity)
        d, c_eff = obj.d, obj.c_eff
        top = _optimum(case, d, True, rlimit)
        if top is None:
            out.status, out.message = "excluded", "the assumptions admit no point of this case"
            return out
        # no capacity suffices when the demand does not fit the machine integer type it is computed in
        out.max_demand, out.min_capacity = top, _min_capacity(case, obj, top, rlimit)
        out.demand_point = _canonical_point(case, [d == top], rlimit)
        rd, rc, _ = _replayed(ob, out.demand_point, demand, capacity)
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
        rd, rc, rel = _replayed(ob, out.slack_point, demand, capacity)
        if rel.effective(rc) - rd != slack or rd != d_star:
            raise _Wrong(f"replay of {out.slack_point} gives slack {rel.effective(rc) - rd}, Z3 said {slack}")
        out.demand_at_slack_point, out.capacity_at_slack_point = rd, rc
        out.slack_pct = _slack_pct(slack, rd)
        _below_floor(ob, case, obj, demand, capacity, rlimit, out, sums=True)
    except _Unknown as exc:
        return CaseBound(dict(case.fixed), "unknown", message=str(exc))
    except _Wrong as exc:
        return CaseBound(dict(case.fixed), "error", message=str(exc))
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # a model raising on replay
        return CaseBound(dict(case.fixed), "error", message=describe_exception(exc))
    out.insufficient = out.insufficient or slack < 0
    out.wasteful = out.slack_pct is not None and out.slack_pct > threshold
    return out


def bound_obligation(
    ob: Obligation,
    pins: dict[str, int] | None = None,
    rlimit: int = 20_000_000,
    waste_threshold: float = DEFAULT_WASTE_THRESHOLD,
) -> ObligationBound:
    """Bounds of every case of ``ob`` (never raises; problems become ``error``/``unknown``).

    ``pins`` fixes parameters (as ``--set``); ``rlimit`` is the Z3 budget per query;
    ``waste_threshold`` is in percent of the demand at the tightest point.
    """
    pins = {k: v for k, v in (pins or {}).items() if k in ob.domain}
    result = ObligationBound(
        ob.id, ob.expect, "error", waste_threshold=waste_threshold, file=ob.file, line=ob.line, case_id=ob.case
    )
    rlimit = rlimit if ob.rlimit is None else ob.rlimit
    try:
        finite, ranges, vectors = checked_domains(ob, pins, rlimit)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        result.message = describe_exception(exc)
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
            result.cases.append(CaseBound(fixed, "error", message=describe_exception(exc)))
            continue
        from .prover import failed_check

        problem = None if abstract is not None or case.false_assumptions else failed_check(case, rlimit)
        if problem:  # a divisor (an empty batch's maximum) that may be zero: prove's error, no bound
            result.cases.append(CaseBound(fixed, "error", message=problem))
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
            union = " or ".join(dict.fromkeys([*result.relation.split(" or "), *relation.split(" or ")]))
            parsed = capacity_relation(union)
            if parsed is None or parsed[:2] != (result.demand, result.capacity):
                result.cases.append(CaseBound(fixed, "error", message=f"relation {relation!r} differs between cases"))
                continue
            result.relation, result.offset = union, parsed[2]
        args = (ob, case, result.demand, result.capacity, rlimit, waste_threshold)
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
        if abstract is None and vectors and case.padding_reads:
            # the padded vectors are not what the engine holds where the model reads the padding
            # (``len(lens)``): each batch length is bounded again on its batch alone, as prove decides it
            result.cases.extend(_alone_bounds(ob, fixed, ranges, vectors, result, rlimit, waste_threshold, case))

    return _summarise(result)


def _alone_cases(
    ob: Obligation,
    fixed: dict[str, int],
    ranges: dict[str, Range],
    vectors: dict[str, Vector],
    relation: tuple[str, str],
    rlimit: int,
) -> tuple[int, list[tuple[dict[str, int], CaseProblem | str]]]:
    """Case ``fixed`` of ``ob`` with every vector its batch alone: each symbolic batch length
    split into one case per value it admits (at most the vector's size), no padding entries
    (capproof.prover's ``_alone_outcomes``: what ``prove`` decides for a model that reads its
    padding). Returns (the number of cases, ``[(case, problem or why not), ...]``); the list is
    empty when the number exceeds ``capproof.prover.ALONE_CASES``. ``relation``: the padded
    cases' (demand, capacity), which each case must bound."""
    from .prover import ALONE_CASES, failed_check

    axes: dict[str, list[int]] = {}
    for name in sorted({v.length for v in vectors.values() if v.length is not None}):
        if name in ranges:
            size = max(v.size for v in vectors.values() if v.length == name)
            axes[name] = list(range(ranges[name].lo, min(ranges[name].hi, size) + 1))
    rest = {k: v for k, v in ranges.items() if k not in axes}
    count = 1
    for values in axes.values():
        count *= len(values)
    if count > ALONE_CASES:
        return count, []
    out: list[tuple[dict[str, int], CaseProblem | str]] = []
    for combo in itertools.product(*axes.values()):
        where = {**fixed, **dict(zip(axes, combo))}
        try:
            case = build_case(ob, where, rest, vectors, alone=True)
            problem = None if case.false_assumptions else failed_check(case, rlimit)
            parsed = capacity_relation(case.ev.claim.relation) if not problem else None
            if not problem and (parsed is None or parsed[:2] != relation):
                problem = f"relation {case.ev.claim.relation!r} is not a bound of {relation[0]} by {relation[1]}"
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            problem = describe_exception(exc)
        out.append((where, f"on the batch alone ({where}): {problem}" if problem else case))
    return count, out


def _alone_bounds(
    ob: Obligation,
    fixed: dict[str, int],
    ranges: dict[str, Range],
    vectors: dict[str, Vector],
    result: ObligationBound,
    rlimit: int,
    threshold: float,
    padded: CaseProblem,
) -> list[CaseBound]:
    """The minimum slack of each case of :func:`_alone_cases` (a :func:`_tightness_case` whose
    points are replayed on the batches alone, what its terms are), for a model whose padded run
    read the padding (``padded.padding_reads``). More than
    ``capproof.prover.ALONE_CASES`` cases: one ``error`` case."""
    from .prover import ALONE_CASES

    count, cases = _alone_cases(ob, fixed, ranges, vectors, (result.demand, result.capacity), rlimit)
    if not cases:
        return [
            CaseBound(
                dict(fixed),
                "error",
                message=f"the model reads its vectors' padding ({padded.padding_reads[0]}), so its batches alone "
                f"must be bounded too, in {count} cases (more than {ALONE_CASES}): read a batch through "
                "total/max_of/min_of/count/all_of, or pin the length (--set)",
                alone=True,
            )
        ]
    out: list[CaseBound] = []
    for where, case in cases:
        if isinstance(case, str):
            out.append(CaseBound(where, "error", message=case, alone=True))
            continue
        _ALONE_ONLY[0] = True
        try:
            bounded = _tightness_case(ob, case, result.demand, result.capacity, rlimit, threshold)
        finally:
            _ALONE_ONLY[0] = False
        bounded.alone = True
        out.append(bounded)
    return out


def _summarise(result: ObligationBound) -> ObligationBound:
    """Set ``result.status`` and ``result.message`` from its cases."""
    statuses = [c.status for c in result.cases]
    if "error" in statuses:
        result.status = "error"
        result.message = next(c.message for c in result.cases if c.status == "error")
    elif "unknown" in statuses:
        result.status = "unknown"
        n = statuses.count("unknown")
        result.message = f"{n} of {len(statuses)} cases unknown (no bound): " + next(
            c.message for c in result.cases if c.status == "unknown"
        )
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
            (
                f"worst {result.demand} = {worst.max_demand}; minimal sufficient {result.capacity} = {_mincap(worst.min_capacity)}; "
                if worst
                else ""
            )
            + f"min slack ({cap} - {result.demand}) {'=' if tight.slack_exact else '<='} {tight.min_slack}; "
            f"{result.insufficient} insufficient, {result.wasteful} wasteful of {len(result.admitted())} bounded cases"
            + (f" ({searched} on the bounded encoding: minimum slack only)" if searched else "")
            + (
                f"; {below} with {result.demand} below the relation's lower end (no capacity suffices)"
                if (below := sum(bool(c.below_point) for c in result.cases))
                else ""
            )
        )
    return result


def _effective(capacity: str, offset: int | None, relation: str) -> str:
    """The effective capacity in words: ``W_bt - 1``, or ``min(numel - 1, 2147483647)`` when the
    demand is computed in int32; ``W_bt (- 1 where <)`` when the model's paths return both."""
    cap = f"{capacity} (- 1 where <)" if offset is None else f"{capacity} - 1" if offset else capacity
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
            out.append(
                f"- worst demand `{e['demand']}` = `{worst['max_demand']}` at {format_point(worst['demand_point'])} "
                f"(`{e['capacity']}` = `{worst['capacity_at_demand_point']}` there)"
            )
        searched = [c for c in bounded if c.get("method") == "search"]
        if searched:
            out.append(
                f"- {len(searched)} of {len(bounded)} cases on the bounded encoding of the batch (the aggregate "
                "abstraction does not apply): minimum slack only, by solver queries (tight: `slack <= 0` sat and "
                "`slack <= -1` unsat); an insufficient case shows the slack of its smallest failing point"
            )
        if any(c.get("method") == "aggregate" for c in bounded):
            out.append(
                "- cases marked `aggregate` are bounded on the aggregate abstraction of the batch: every batch size"
            )
        rel = "=" if tight.get("slack_exact", True) else "≤"
        out.append(
            f"- minimum slack {rel} `{tight['min_slack']}` ({_pct(tight['slack_pct'])}) at {format_point(tight['slack_point'])} "
            f"(`{e['demand']}` = `{tight['demand_at_slack_point']}`, `{e['capacity']}` = `{tight['capacity_at_slack_point']}`)"
        )
    shown = cases
    note = ""
    if len(cases) > 64:
        interesting = {id(c) for c in cases if c["status"] != "bounded" or c["insufficient"] or c["wasteful"]}
        interesting |= {id(c) for c in sorted(bounded, key=lambda c: c["min_slack"])[:8]}
        interesting |= {id(c) for c in sorted(with_worst, key=lambda c: -c["max_demand"])[:8]}
        shown = [c for c in cases if id(c) in interesting]
        note = f"Showing {len(shown)} of {len(cases)} cases (flagged, not bounded, 8 tightest, 8 largest); `capproof bound --json` has all."
    if shown:
        out += [
            "",
            "| case | status | worst demand | minimal capacity | capacity there | min slack | slack % | demand there | flags | witness (worst demand) | witness (min slack) |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for c in shown:
            if c["status"] != "bounded":
                out.append(
                    f"| {_case_name(c['case'])} | {c['status']} | — | — | — | — | — | — | {c['message']} | — | — |"
                )
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
    #: obligation id -> its :func:`record_key` (``record_keys`` runs only; None: not keyable)
    keys: dict[str, str | None] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        """0: every bound computed and consistent with ``expect``; 1: a bound contradicts it;
        2: unknown, error, vacuous, bad input, or no capacity claim selected."""
        active = [r for r in self.results if r.status not in ("skipped", "not_in_report")]
        if self.errors or not active or any(r.status != "bounded" for r in active):
            return 2
        return 0 if all(r.ok for r in active) else 1

    def to_json(self) -> dict[str, Any]:
        return {
            "bounds": [r.to_json() for r in self.results if r.status not in ("skipped", "not_in_report")],
            "not_in_report": [{"id": r.id, "message": r.message} for r in self.results if r.status == "not_in_report"],
            "skipped": [r.id for r in self.results if r.status == "skipped"],
            "errors": list(self.errors),
            "exit_code": self.exit_code,
        }


REPORT_SKIPS_VECTORS = "has Vector (batch or routing) parameters: not bounded in this run (`--no-vectors`)"


def _bound_fresh(ob: Obligation, pins: dict[str, int], rlimit: int, waste_threshold: float) -> ObligationBound:
    """Bound ``ob`` from a fresh Z3 context, so the witnesses Z3 picks do not depend on what was
    bounded before in this process (proofs/bounds.md is the same for any -j); never raises. The
    caller's context is restored afterwards (an in-process ``-j 1`` run must not strand the Z3
    terms its caller holds in another context)."""
    try:
        with fresh_z3_context():
            return bound_obligation(ob, pins, rlimit, waste_threshold)
    except BaseException as exc:  # noqa: BLE001 - reported as the obligation's error
        return ObligationBound(
            ob.id, ob.expect, "error", describe_exception(exc), file=ob.file, line=ob.line, case_id=ob.case
        )


def _weight(ob: Obligation) -> float:
    """How long bounding ``ob`` is expected to take, for the runner's pool (:func:`capproof.runner.run_tasks`):
    the total size of its Vector parameters (seconds each: a process each, largest first); 0 for the
    others (most are not capacity claims, or take milliseconds: bounded a few to a process, each still
    from a fresh Z3 context)."""
    return float(sum(getattr(d, "size", 0) or 0 for d in ob.domain.values()))


def _error_bound(ob: Obligation, message: str) -> ObligationBound:
    return ObligationBound(ob.id, ob.expect, "error", message, file=ob.file, line=ob.line, case_id=ob.case)


#: Bound statuses safe to reuse from the cache (they do not depend on how fast the machine was)
CACHEABLE = ("bounded", "skipped", "vacuous")


def _bound_all(
    obligations: list[Obligation],
    pins: dict[str, int],
    rlimit: int,
    waste_threshold: float,
    jobs: int,
    progress=None,
    work=None,
    cache: bool = False,
    timeout: float | None = None,
    reach_of: list[frozenset[str] | None] | None = None,
) -> list[ObligationBound]:
    """Bound the obligations in the runner's worker processes (:func:`capproof.runner.run_tasks`: its
    time limit, fresh processes, fresh Z3 context and module-state checks), ``jobs`` at a time,
    largest first (results in declared order). ``work(ob)`` replaces :func:`_bound_fresh`
    (``--check``: :func:`_checked_fresh`). ``cache``: a result already stored in
    ``.capproof/bounds/`` under the key of everything it depends on (:func:`capproof.verdict_cache.item_key`:
    the obligation, the sources and data of the project modules it can reach, ``pins``, ``rlimit``,
    ``waste_threshold``, capproof's sources, the Python and Z3 versions) is reused, and each new
    ``bounded``, ``skipped`` or ``vacuous`` result is stored (never ``unknown`` or ``error``).
    ``reach_of``: :func:`capproof.runner.reaches` of ``obligations`` when the caller has it."""
    from . import verdict_cache
    from .runner import Task, item_roots, project_modules, reaches, run_tasks
    from .verdict import DEFAULT_TIMEOUT, Options

    if work is None:
        work = lambda ob: _bound_fresh(ob, pins, rlimit, waste_threshold)  # noqa: E731
    if reach_of is None:
        reach_of = reaches([item_roots(ob) for ob in obligations])
    out: list[ObligationBound | None] = [None] * len(obligations)
    keys: list[str | None] = [None] * len(obligations)
    if cache:
        settings = {"pins": pins, "rlimit": rlimit, "waste_threshold": waste_threshold}
        project, memo, held = project_modules(), {}, {}
        for i, ob in enumerate(obligations):
            keys[i] = verdict_cache.item_key(
                "capproof-bound-cache-v1", ob, settings, reach_of[i], project, memo, held, verdict_cache.BOUNDING
            )
            data = verdict_cache.load_entry("bounds", keys[i]) if keys[i] else None
            if data is not None and data.get("status") in CACHEABLE:
                try:
                    out[i] = ObligationBound.from_json(data)
                except (TypeError, KeyError, ValueError):
                    out[i] = None
    for r in out:
        if r is not None and progress and r.status != "skipped":
            progress(r)
    todo = [i for i, r in enumerate(out) if r is None]
    task = Task("bound", work, _error_bound, _weight)
    options = Options(jobs=max(1, jobs), timeout=DEFAULT_TIMEOUT if timeout is None else timeout)
    shown = (lambda r: progress(r) if r.status != "skipped" else None) if progress else None
    done = run_tasks([obligations[i] for i in todo], task, options, shown, [reach_of[i] for i in todo])
    for i, result in zip(todo, done):
        out[i] = result
        if keys[i] and result.status in CACHEABLE and not getattr(result, "uncacheable", None):
            verdict_cache.store_entry("bounds", keys[i], result.to_json())  # type: ignore[arg-type]
    return out  # type: ignore[return-value]


#: the most case combinations :func:`_skip_confirmed` runs on ints (beyond: bounded from scratch)
SKIP_CHECK_CASES = 4096


def _skip_confirmed(ob: Obligation) -> bool:
    """Whether an obligation recorded as skipped (``proofs/bounds.json``'s ``skipped``) is indeed not
    a capacity claim: in every case (each combination of its finite parameters' values, at most
    :data:`SKIP_CHECK_CASES`) its claim's relation on ints, at the lower end of every Range and of
    every vector's entries, is not an ``at_most``/``less_than`` one. (A Range parameter cannot
    change the relation: the symbolic run would branch on it.) Never trusted from the record alone:
    a record written before a model turned a claim into a capacity claim, its key forged,
    would hide the obligation from proofs/bounds.md. False when some case's claim is a capacity
    claim or the model raises there; the obligation is then bounded from scratch."""
    finite = {p: dom.cases() for p, dom in ob.domain.items() if getattr(dom, "finite", False)}
    count = 1
    for values in finite.values():
        count *= len(values)
    if count > SKIP_CHECK_CASES:
        return False
    try:
        for combo in itertools.product(*finite.values()):
            point: dict[str, object] = dict(zip(finite, combo))
            for p, dom in ob.domain.items():
                if isinstance(dom, Range):
                    point[p] = dom.lo
            for p, dom in ob.domain.items():
                if isinstance(dom, Vector):
                    n = dom.size if dom.length is None else point[dom.length]
                    point[p] = [dom.elem.lo] * n  # type: ignore[attr-defined,operator]
            ev = evaluate(ob, concrete_args(ob, point), witnesses=False)
            if capacity_relation(ev.claim.relation or "") is not None:
                return False
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001 - the from-scratch bound reports it
        return False
    return True


def run_bounds(
    paths,
    keyword: str | None = None,
    pins: dict[str, int] | None = None,
    rlimit: int = 20_000_000,
    waste_threshold: float = DEFAULT_WASTE_THRESHOLD,
    progress=None,
    skip_vectors: bool = False,
    jobs: int = 1,
    recorded: dict[str, Any] | None = None,
    cache: bool = False,
    timeout: float | None = None,
    record_keys: bool = False,
) -> BoundRun:
    """Load ``paths`` (default spec/) and bound every obligation with a ``<=``/``<`` claim, each in
    its own process, ``jobs`` at a time.

    Obligations with Vector parameters are bounded on the aggregate abstraction where it applies,
    else by the minimum-slack search on the bounded encoding (:func:`_tightness_case`);
    ``skip_vectors`` records them as ``not_in_report`` instead (see :data:`REPORT_SKIPS_VECTORS`).

    ``record_keys`` (``bound --write``/``--check``): the run's ``keys`` hold each obligation's
    :func:`record_key`. ``recorded`` (:func:`recorded_bounds`, unpinned runs only: ``bound --check``
    and ``--write``): an obligation whose recorded key is its key now is not bounded again: recorded
    as not a capacity claim, it is skipped without being built (once confirmed on ints); else its
    recorded bounds are certified (:func:`check_obligation`). An obligation whose key changed (an
    edit to its spec, a model it reaches, the capproof modules that bound it, Z3), or whose
    certificate fails, is bounded from scratch (``ObligationBound.recomputed`` says why).

    Each obligation is bounded in the runner's worker processes (:func:`_bound_all`), within
    ``timeout`` seconds (default :data:`capproof.verdict.DEFAULT_TIMEOUT`; then an ``error``).
    ``cache`` (on for ``capproof bound``, ``--no-cache``: off): reuse the results stored in
    ``.capproof/bounds/`` under a key of everything each depends on (:func:`_bound_all`), so an edit
    re-bounds exactly the obligations that can reach it. Off by default here: a key covers the code
    on disk, not a model patched in memory.
    """
    from .loader import load

    pins = pins or {}
    items, load_errors = load(list(paths or ("spec",)), keyword)
    run = BoundRun(errors=[e.message for e in load_errors])
    obligations = [it for it in items if isinstance(it, Obligation)]
    known = {n for ob in obligations for n in ob.domain}
    run.errors += [f"--set {n}: no selected obligation has a parameter named {n!r}" for n in pins if n not in known]
    skipped = [ob for ob in obligations if skip_vectors and any(isinstance(d, Vector) for d in ob.domain.values())]
    todo = [ob for ob in obligations if ob not in skipped]
    from .runner import item_roots, reaches

    reach_of = reaches([item_roots(ob) for ob in todo])
    if record_keys or recorded is not None:
        keys = record_keys_of(todo, reach_of, rlimit, waste_threshold)
        run.keys = {ob.id: keys[ob.id] for ob in obligations if ob.id in keys}
    if recorded is not None and not pins:
        same = {ob.id for ob in todo if run.keys.get(ob.id) and recorded["keys"].get(ob.id) == run.keys[ob.id]}

        def work(ob: Obligation) -> ObligationBound:
            if ob.id not in same:
                result = _bound_fresh(ob, {}, rlimit, waste_threshold)
                result.recomputed = (
                    "recorded for other sources (its spec, a model it reaches, capproof or Z3 changed)"
                    if ob.id in recorded["keys"]
                    else "not in the recorded bounds"
                )
                return result
            if ob.id in recorded["skipped"] and _skip_confirmed(ob):
                return ObligationBound(
                    ob.id,
                    ob.expect,
                    "skipped",
                    "recorded as not an at_most/less_than capacity claim",
                    file=ob.file,
                    line=ob.line,
                    case_id=ob.case,
                )
            return _checked_fresh(ob, recorded["bounds"].get(ob.id), rlimit, waste_threshold)

        run.results += _bound_all(todo, pins, rlimit, waste_threshold, jobs, progress, work, cache, timeout, reach_of)
    else:
        run.results += _bound_all(todo, pins, rlimit, waste_threshold, jobs, progress, None, cache, timeout, reach_of)
    run.results += [
        ObligationBound(
            ob.id,
            ob.expect,
            "not_in_report",
            REPORT_SKIPS_VECTORS.format(name=ob.name),
            file=ob.file,
            line=ob.line,
            case_id=ob.case,
        )
        for ob in skipped
    ]
    if (
        not any(r.status not in ("skipped", "not_in_report") for r in run.results)
        and not any(r.status == "not_in_report" for r in run.results)
        and not load_errors
    ):
        run.errors.append("nothing to bound: no selected obligation has an at_most/less_than claim")
    return run


# --- bound --check: certificates for recorded bounds ---------------------------------------------


class Uncertified(Exception):
    """A recorded bound that its certificate does not confirm (the obligation is then bounded from scratch)."""


def record_keys_of(
    obligations: list[Obligation], reach_of: list[frozenset[str] | None], rlimit: int, waste_threshold: float
) -> dict[str, str | None]:
    """Each obligation's :func:`record_key`, by id (``reach_of``: :func:`capproof.runner.reaches` of them)."""
    from . import verdict_cache
    from .runner import project_modules

    project, memo, held = project_modules(), {}, {}
    settings = {"rlimit": rlimit, "waste_threshold": waste_threshold}
    return {
        ob.id: verdict_cache.portable_key(RECORD_KEY, ob, settings, reach, project, memo, held, verdict_cache.BOUNDING)
        for ob, reach in zip(obligations, reach_of)
    }


#: the kind of :func:`record_key` (changed when what a recorded entry holds changes)
RECORD_KEY = "capproof-bounds-v2"


def record_key(ob: Obligation, rlimit: int, waste_threshold: float) -> str | None:
    """What ``proofs/bounds.json`` records with the bounds of ``ob`` (unpinned), the same in every
    checkout of the same sources: the SHA-256 of the obligation's declaration, the bytes (relative
    paths) and data of the project modules it can reach (:func:`capproof.runner.reaches`), the data
    its functions hold, ``rlimit`` and ``waste_threshold``, the capproof sources that bound it
    (:mod:`capproof.own_sources`) and Z3's full version (the entries Z3 picks for a ``search``
    witness). :func:`capproof.verdict_cache.portable_key`. None: some data cannot be pickled."""
    from .runner import item_roots, reaches

    return record_keys_of([ob], reaches([item_roots(ob)]), rlimit, waste_threshold)[ob.id]


def render_bounds_data(data: dict[str, Any], keys: dict[str, str | None], rlimit: int, waste_threshold: float) -> str:
    """The text of ``proofs/bounds.json`` from :meth:`BoundRun.to_json` and :attr:`BoundRun.keys`:
    the settings, then one line per obligation: the capacity-claim-free ones (``skipped``: id and
    key) and the recorded bounds (each entry with its key first), in the run's order. An edit
    changes the lines of the obligations that reach it only."""
    import json

    head = {
        "generated_by": "capproof bound --write; do not edit (capproof bound --check certifies it)",
        "rlimit": rlimit,
        "waste_threshold_pct": waste_threshold,
    }
    lines = ["{"] + [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()]

    def listed(name: str, entries: list[str], last: bool) -> list[str]:
        body = [f"  {e}," for e in entries[:-1]] + [f"  {e}" for e in entries[-1:]]
        return [f' "{name}": ['] + body + [" ]" if last else " ],"]

    skipped = [json.dumps({"id": i, "key": keys.get(i)}, separators=(",", ":")) for i in data["skipped"]]
    bounds = [json.dumps({"key": keys.get(e["id"]), **e}, separators=(",", ":")) for e in data["bounds"]]
    lines += listed("skipped", skipped, False) + listed("bounds", bounds, True)
    return "\n".join(lines + ["}"]) + "\n"


def recorded_bounds(text: str, rlimit: int, waste_threshold: float) -> tuple[dict[str, Any] | None, str]:
    """``({"bounds": {id: entry}, "skipped": set of ids, "keys": {id: key}}, "")`` from the text of
    ``proofs/bounds.json`` when it was written with these settings, else ``(None, why not)``. A file
    written before keys were recorded per obligation has none (every obligation is bounded again)."""
    import json

    try:
        data = json.loads(text)
        bounds = {e["id"]: {k: v for k, v in e.items() if k != "key"} for e in data["bounds"]}
        keys = {e["id"]: e["key"] for e in data["bounds"] if isinstance(e.get("key"), str)}
        skipped = set()
        for e in data["skipped"]:
            if isinstance(e, dict):
                skipped.add(e["id"])
                if isinstance(e.get("key"), str):
                    keys[e["id"]] = e["key"]
            else:
                skipped.add(e)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        return None, f"not readable ({exc})"
    if data.get("rlimit") != rlimit or data.get("waste_threshold_pct") != waste_threshold:
        return None, "written with another --rlimit or --waste-threshold"
    return {"bounds": bounds, "skipped": skipped, "keys": keys}, ""


def _int(value: object, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise Uncertified(f"recorded {what} {value!r} is not an integer")
    return value


def _unsat(s: z3.Solver, cond: z3.BoolRef, what: str) -> None:
    """Raise Uncertified unless ``cond`` is unsat on ``s`` (which is left as it was)."""
    s.push()
    s.add(cond)
    answer = s.check()
    reason = s.reason_unknown() if answer == z3.unknown else str(answer)
    s.pop()
    if answer != z3.unsat:
        raise Uncertified(f"{what}: {reason}, not unsat")


def _unsat_case(case, rlimit: int, cond: z3.BoolRef, what: str) -> None:
    """Raise Uncertified unless ``cond`` is unsat on the case, asked of a fresh solver (before any
    push Z3 preprocesses the whole query, as for :func:`_optimum`'s own certificate)."""
    s, _ = case.solver(rlimit)
    s.add(cond)
    answer = s.check()
    if answer != z3.unsat:
        raise Uncertified(f"{what}: {s.reason_unknown() if answer == z3.unknown else answer}, not unsat")


def _canonical_terms(case, point: dict[str, Any]) -> list[tuple[z3.ArithRef, int]]:
    """The terms :func:`_canonical_point` minimises, in its order, with their values at ``point``:
    the scalars in declared order, then (aggregate abstraction) each batch's total, max and min."""
    out = [(case.scalars[p].term, _int(point[p], p)) for p in case.ob.params if p in case.scalars]
    if isinstance(case, AbstractCase):
        for name in case.batches:
            if not isinstance(point[name], list) or not point[name]:
                raise Uncertified(f"recorded batch {name}={point[name]!r} is not a non-empty list")
            for x in point[name]:
                _int(x, name)
        out += [(term, value) for (term, _), value in zip(case.aggregate_terms(), case.aggregate_values(point))]
    return out


def _certified_point(case, rlimit: int, fixes: list[z3.BoolRef], point: object) -> dict[str, Any]:
    """``point`` if it is the canonical witness of ``case`` under ``fixes``, else Uncertified.

    Certificate: with the earlier canonical terms at their values, each term cannot be smaller (one
    unsat query per term, none for a scalar at its domain's lower end: the lexicographically smallest
    point, as the binary searches of :func:`_canonical_point` find it); then, without vectors, the
    case admits a model with every term at its value and its point is ``point``. On the bounded
    encoding of a batch the entries are Z3's choice (never minimised): there ``point`` is checked
    on ints instead (the case's fixed values, every parameter in its domain, each vector as long as
    its length parameter); the caller's replay checks the assumptions and the optimum."""
    ob = case.ob
    if not isinstance(point, dict) or set(point) != set(ob.params):
        raise Uncertified(f"recorded point {point!r} does not name the parameters {list(ob.params)}")
    s, _ = case.solver(rlimit)
    for cond in fixes:
        s.add(cond)
    floor = {
        case.scalars[p].term.get_id(): dom.lo
        for p, dom in ob.domain.items()
        if p in case.scalars and isinstance(dom, Range)
    }
    for term, value in _canonical_terms(case, point):
        if floor.get(term.get_id()) != value:  # at its domain's lower end no smaller value exists (a case constraint)
            _unsat(s, term < value, f"a point with {term} < {value} (recorded point not the smallest)")
        s.add(term == value)
    vectors = getattr(case, "vectors", {})
    if vectors:
        for p, dom in ob.domain.items():
            value = point[p]
            if p in case.fixed and value != case.fixed[p]:
                raise Uncertified(f"recorded {p}={value!r} is not the case's {case.fixed[p]}")
            if not dom.contains(value):
                raise Uncertified(f"recorded {p}={value!r} is outside its domain {dom.describe()}")
            length = getattr(dom, "length", None)
            if p in vectors and len(value) != (dom.size if length is None else point[length]):
                raise Uncertified(f"recorded {p} has {len(value)} entries, not its length")
        return {p: point[p] for p in ob.params}
    answer = s.check()
    if answer != z3.sat:
        raise Uncertified(
            f"no point of the case attains the recorded optimum at {format_point(point)}: {s.reason_unknown() if answer == z3.unknown else answer}"
        )
    found = case.point(s.model())
    if found != point:
        raise Uncertified(f"the canonical point is {format_point(found)}, not the recorded {format_point(point)}")
    return found


def _replayed_certified(ob: Obligation, point: dict[str, Any], demand: str, capacity: str) -> tuple[int, int, Relation]:
    try:
        return _replayed(ob, point, demand, capacity)
    except _Wrong as exc:
        raise Uncertified(str(exc)) from None


def _checked_objective(case, rec: dict[str, Any], demand: str, capacity: str, rlimit: int) -> _Objective:
    """The case's terms, for a recorded case with no demand below the relation's lower end
    (certified: one unsat query) and one relation on every path; else Uncertified (the caller
    bounds from scratch)."""
    try:
        obj = _objective_terms(case, demand, capacity)
    except _Wrong as exc:
        raise Uncertified(str(exc)) from None
    if len(obj.relations) != 1 or rec.get("below_point"):
        raise Uncertified("paths with different relations, or a demand below the lower end: bounded from scratch")
    if obj.relations[0].floor is not None:
        _unsat_case(case, rlimit, obj.below, "a demand below the relation's lower end")
    return obj


def _check_excluded(case, rlimit: int, rec: dict[str, Any], out: CaseBound) -> CaseBound | None:
    """The certified excluded case when ``case`` or ``rec`` says excluded, else None."""
    if case.false_assumptions:
        out.status, out.message = "excluded", f"assumption false: {case.false_assumptions[0]}"
    elif rec.get("status") == "excluded":
        s, _ = case.solver(rlimit)
        if s.check() != z3.unsat:
            raise Uncertified("recorded as excluded, but the case admits a point (or Z3 cannot tell)")
        out.status, out.message = "excluded", "the assumptions admit no point of this case"
    else:
        return None
    if rec.get("status") != "excluded":
        raise Uncertified(f"recorded as {rec.get('status')}, but {out.message}")
    return out


def _check_bound_case(
    ob: Obligation,
    case,
    rec: dict[str, Any],
    demand: str,
    capacity: str,
    rlimit: int,
    threshold: float,
) -> CaseBound:
    """The bounds of one case as :func:`_bound_case` computes them, from the recorded ones ``rec``
    (a :meth:`CaseBound.to_json`), certified instead of optimised: ``d > D`` unsat and the canonical
    demand point replayed with demand ``D``; ``slack < S`` unsat, ``slack == S ∧ d > d*`` unsat and
    the canonical slack point replayed with slack ``S`` and demand ``d*``. Raises Uncertified."""
    out = CaseBound(dict(case.fixed), "bounded")
    if _check_excluded(case, rlimit, rec, out) is not None:
        return out
    if rec.get("status") != "bounded":
        raise Uncertified(f"recorded status {rec.get('status')!r}")
    obj = _checked_objective(case, rec, demand, capacity, rlimit)
    d, c_eff = obj.d, obj.c_eff
    top, slack, d_star = (
        _int(rec["max_demand"], "worst demand"),
        _int(rec["min_slack"], "slack"),
        _int(rec["demand_at_slack_point"], "demand at the slack point"),
    )
    _unsat_case(case, rlimit, d > top, f"a demand above the recorded worst {top}")
    rel = obj.relations[0]
    out.max_demand, out.min_capacity = top, (top + rel.offset if rel.limit is None or top <= rel.limit else None)
    out.demand_point = _certified_point(case, rlimit, [d == top], rec["demand_point"])
    rd, rc, _ = _replayed_certified(ob, out.demand_point, demand, capacity)
    if rd != top:
        raise Uncertified(f"replay of {out.demand_point} gives {demand}={rd}, recorded {top}")
    out.capacity_at_demand_point = rc
    _unsat_case(case, rlimit, c_eff - d < slack, f"a slack below the recorded minimum {slack}")
    _unsat_case(case, rlimit, z3.And(c_eff - d == slack, d > d_star), f"a demand above {d_star} at slack {slack}")
    out.min_slack = slack
    out.slack_point = _certified_point(case, rlimit, [c_eff - d == slack, d == d_star], rec["slack_point"])
    rd, rc, rel = _replayed_certified(ob, out.slack_point, demand, capacity)
    eff = rel.effective(rc)
    if eff - rd != slack or rd != d_star:
        raise Uncertified(
            f"replay of {out.slack_point} gives slack {eff - rd} and {demand}={rd}, recorded {slack} and {d_star}"
        )
    out.demand_at_slack_point, out.capacity_at_slack_point = rd, rc
    out.slack_pct = _slack_pct(slack, rd)
    out.insufficient = slack < 0
    out.wasteful = out.slack_pct is not None and out.slack_pct > threshold
    return out


def _check_tightness_case(
    ob: Obligation,
    case: CaseProblem,
    rec: dict[str, Any],
    demand: str,
    capacity: str,
    rlimit: int,
    threshold: float,
) -> CaseBound:
    """The minimum slack of one case as :func:`_tightness_case` finds it, certified from ``rec``:
    exact slack ``S >= 0``: ``slack <= S - 1`` unsat and the canonical point (scalars smallest under
    ``slack == S``) replayed with slack ``S``; an insufficient case (``slack_exact`` False): the
    canonical point under ``slack <= -1`` replayed with the recorded negative slack. Raises Uncertified."""
    out = CaseBound(dict(case.fixed), "bounded", method="search")
    if _check_excluded(case, rlimit, rec, out) is not None:
        return out
    if rec.get("status") != "bounded":
        raise Uncertified(f"recorded status {rec.get('status')!r}")
    obj = _checked_objective(case, rec, demand, capacity, rlimit)
    slack = obj.c_eff - obj.d
    recorded, exact = _int(rec["min_slack"], "slack"), rec.get("slack_exact")
    if exact is True and recorded >= 0:
        _unsat_case(case, rlimit, slack <= recorded - 1, f"a slack below the recorded minimum {recorded}")
        fix = slack == recorded
    elif exact is False and recorded < 0:
        fix = slack <= -1
    else:
        raise Uncertified(f"recorded slack {recorded} with slack_exact={exact!r}")
    point = _certified_point(case, rlimit, [fix], rec["slack_point"])
    rd, rc, rel = _replayed_certified(ob, point, demand, capacity)
    rs = rel.effective(rc) - rd
    if rs != recorded:
        raise Uncertified(f"replay of {format_point(point)} gives slack {rs}, recorded {recorded}")
    out.slack_exact = exact
    out.message = rec.get("message", "") if isinstance(rec.get("message"), str) else ""
    out.min_slack, out.slack_point, out.demand_at_slack_point, out.capacity_at_slack_point = rs, point, rd, rc
    out.slack_pct = _slack_pct(rs, rd)
    out.insufficient = rs < 0
    out.wasteful = out.slack_exact and out.slack_pct is not None and out.slack_pct > threshold
    return out


def check_obligation(
    ob: Obligation, entry: dict[str, Any], rlimit: int = 20_000_000, waste_threshold: float = DEFAULT_WASTE_THRESHOLD
) -> ObligationBound:
    """The bounds of ``ob`` (unpinned) as :func:`bound_obligation` computes them, from the recorded
    ``entry`` (an :meth:`ObligationBound.to_json` of ``proofs/bounds.json``) by certificates instead
    of optimisation and search (:func:`_check_bound_case`, :func:`_check_tightness_case`): every
    number comes from an unsat query or a replay on ints, never from ``entry`` unchecked. The cases
    are enumerated again and must be the recorded ones; a case recorded ``aggregate`` is built on
    the aggregate abstraction (the recorded method is not re-derived: it is keyed by
    :func:`record_key`). Raises Uncertified when anything does not match or an answer is
    unknown; the caller then bounds from scratch."""
    rlimit = rlimit if ob.rlimit is None else ob.rlimit
    if entry.get("status") != "bounded" or entry.get("waste_threshold_pct") != waste_threshold:
        raise Uncertified(f"recorded status {entry.get('status')!r}")
    from .aggregate import NotAggregate, build_abstract_case

    result = ObligationBound(
        ob.id, ob.expect, "error", waste_threshold=waste_threshold, file=ob.file, line=ob.line, case_id=ob.case
    )
    finite, ranges, vectors = checked_domains(ob, {}, rlimit)
    names = list(finite)
    combos = [dict(zip(names, combo)) for combo in itertools.product(*(finite[n] for n in names))]
    records = entry.get("cases") or []
    if [r.get("case") for r in records if not r.get("alone")] != combos:
        raise Uncertified("the cases are not the recorded ones")
    relation = entry.get("relation")
    parsed = capacity_relation(relation or "")
    if (
        parsed is None
        or parsed[2] is None
        or " or " in relation
        or parsed != (entry.get("demand"), entry.get("capacity"), entry.get("capacity_offset"))
    ):
        raise Uncertified(f"recorded relation {relation!r}")
    result.relation = relation
    result.demand, result.capacity, result.offset = parsed
    args = (result.demand, result.capacity, rlimit, waste_threshold)
    padded_records = [r for r in records if not r.get("alone")]
    alone_records = [r for r in records if r.get("alone")]
    for fixed, rec in zip(combos, padded_records):
        method = rec.get("method", "")
        if method == "aggregate" and vectors:
            try:
                case = build_abstract_case(ob, fixed, ranges, vectors)
            except NotAggregate as exc:
                raise Uncertified(f"recorded aggregate, but {exc}") from None
            if case.inexact:
                raise Uncertified("recorded aggregate, but the abstraction is inexact")
            case_relation = case.relation
        elif (method == "search" and vectors) or (method == "" and not vectors):
            case = build_case(ob, fixed, ranges, vectors)
            case_relation = case.ev.claim.relation
        else:
            raise Uncertified(f"recorded method {method!r}")
        if case_relation != relation:
            raise Uncertified(f"relation {case_relation!r}, recorded {relation!r}")
        if method == "search":
            bounded = _check_tightness_case(ob, case, rec, *args)
        else:
            bounded = _check_bound_case(ob, case, rec, *args)
            bounded.method = method
        result.cases.append(bounded)
        if method == "search" and case.padding_reads:  # each batch length alone, as bound_obligation did
            _, alone = _alone_cases(ob, fixed, ranges, vectors, (result.demand, result.capacity), rlimit)
            for where, alone_case in alone:
                rec = alone_records.pop(0) if alone_records else {}
                if isinstance(alone_case, str) or rec.get("case") != where:
                    raise Uncertified(f"the batch-alone case {where} is not the recorded one")
                _ALONE_ONLY[0] = True
                try:
                    bounded = _check_tightness_case(ob, alone_case, rec, *args)
                finally:
                    _ALONE_ONLY[0] = False
                bounded.alone = True
                result.cases.append(bounded)
    if alone_records:
        raise Uncertified("recorded batch-alone cases the model no longer needs")
    if [c.fixed for c in result.cases] != [r.get("case") for r in records]:
        raise Uncertified("the cases are not the recorded ones (order)")
    return _summarise(result)


def _checked_fresh(
    ob: Obligation, entry: dict[str, Any] | None, rlimit: int, waste_threshold: float
) -> ObligationBound:
    """:func:`check_obligation` from a fresh Z3 context; when there is no recorded entry or its
    certificate fails, :func:`_bound_fresh` (from scratch), with the reason in ``recomputed``."""
    if entry is None:
        why = "not in the recorded bounds"
    else:
        try:
            with fresh_z3_context():
                return check_obligation(ob, entry, rlimit, waste_threshold)
        except Uncertified as exc:
            why = f"certificate failed: {exc}"
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - the from-scratch run reports it
            why = f"certificate failed: {describe_exception(exc)}"
    result = _bound_fresh(ob, {}, rlimit, waste_threshold)
    result.recomputed = why
    return result


def terminal_bound_lines(r: ObligationBound) -> list[str]:
    """A status line, then the worst demand and the tightest slack with their witnesses."""
    mark = "ok  " if r.ok else "FAIL"
    note = "" if r.ok else f" (expected {r.expect})"
    lines = [f"{mark} {r.status:<9} {r.id}{note}"]
    worst, tight = r.worst, r.tightest
    if r.status == "bounded" and tight:
        cap = _effective(r.capacity, r.offset, r.relation)
        if worst:
            lines.append(
                f"       claim {r.relation}: worst {r.demand} = {worst.max_demand} at {format_point(worst.demand_point)}"
                f" -> minimal sufficient {r.capacity} = {_mincap(worst.min_capacity)}"
            )
        else:
            lines.append(
                f"       claim {r.relation}: worst {r.demand} not computed (bounded encoding of the batch: minimum slack only)"
            )
        lines.append(
            f"       min slack ({cap} - {r.demand}) {'=' if tight.slack_exact else '<='} {tight.min_slack} "
            f"({_pct(tight.slack_pct)} of {r.demand}={tight.demand_at_slack_point}) at {format_point(tight.slack_point)}"
            + ("" if tight.slack_exact else " (the smallest failing point; not minimised)")
        )
        bounded = len(r.admitted())
        lines.append(
            f"       {bounded} bounded cases: {r.insufficient} insufficient, {r.wasteful} wasteful "
            f"(slack > {r.waste_threshold:g}% of demand)"
        )
    else:
        lines.append(f"       {r.message}")
    return lines
