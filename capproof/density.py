"""Failure density: how much of the domain a failing claim fails on.

A counterexample says *that* a claim fails; the density says *how often*. Exact counting over a
multi-dimensional domain is out of reach in general, so capproof reports two exact numbers:

- **cases**: of the admitted finite cases (combinations of ``Choice``/``PowersOfTwo`` values),
  how many contain a failing point (the prover decides every case). When the domain has no
  ``Range`` and no ``Vector`` this *is* the exact failing fraction of the domain.
- **axes**: for each scalar ``Range`` parameter ``p``, with every other parameter held at the
  counterexample's values, how many values of ``p`` in its range are admitted (assumptions hold)
  and how many of those fail. Methods, tried in this order (each is exact; the report says which):

  1. ``enumerated``: the range has at most ``small`` values (default 2**12): every value is run
     on plain ints through the model (:func:`capproof.encode.evaluate`).
  2. ``periodic``: a candidate period ``P`` is read off the claim's terms (the products of the
     constant divisors along nested ``//``/``%``); Z3 proves that admission and failure at ``x``
     and ``x + P`` agree for every ``x`` in ``lo..hi-P`` (an unsat query), then one period is
     enumerated on ints and the count extrapolated: ``(n // P) * per_period + prefix(n % P)``.
  3. ``Z3 interval splitting``: intervals are split until Z3 shows each one uniformly failing,
     uniformly holding or uniformly excluded (at most ``budget`` queries; suits threshold-shaped
     failure sets such as ``demand > capacity(worst_case)``).
  4. ``enumerated`` again if the range has at most ``enum_limit`` values (2**16, or 2**22 with
     ``--density full``; ~6 µs a value on the block-table models, so ~12 s for ``max_model_len``
     up to 2**21, and ~60 µs on a 64-request batch model).

  Otherwise the axis is ``not computed`` (never guessed). Vector lengths are skipped: changing a
  length changes which vector entries are active.

Units: counts of parameter values (tokens, blocks, requests … as the parameter is named).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import z3

from .domain import Range, Vector
from .encode import assert_terms, build_case, concrete_args, describe_exception, evaluate
from .obligation import Obligation
from .symbolic import (
    get_app_arg,
    get_app_decl,
    get_app_num_args,
    get_ast_id,
    get_ast_kind,
    get_decl_kind,
    get_sort,
    get_sort_kind,
    int_relation,
    to_app,
    to_z3_bool,
)

__all__ = ["AxisDensity", "axis_density", "failure_density", "ENUM_FIRST", "SMALL_RANGE", "ENUM_LIMIT", "SPLIT_BUDGET"]

#: Ranges with at most this many values are enumerated outright; larger ones try a Z3-proved
#: period and Z3 interval splitting first (a few dozen queries instead of up to 2**16 model runs
#: over a whole batch vector).
ENUM_FIRST = 2**12
#: Ranges with at most this many values are enumerated when period and splitting fail.
SMALL_RANGE = 2**16
#: Ranges with at most this many values may be enumerated as the last resort (``--density full``).
ENUM_LIMIT = 2**22
#: Largest candidate period tried (one period is enumerated on ints).
MAX_PERIOD = 2**18
#: Z3 queries allowed for interval splitting, per axis.
SPLIT_BUDGET = 400
#: Z3 resource budget per density query (deterministic): density is a report, not a proof,
#: so a query that needs more is given up (the axis falls through to the next method).
DENSITY_RLIMIT = 2_000_000


@dataclass
class AxisDensity:
    """Failing and admitted counts of one Range parameter, the others held at the counterexample."""

    param: str
    lo: int
    hi: int
    held: dict[str, Any] = field(default_factory=dict)
    admitted: int | None = None
    failing: int | None = None
    method: str = ""
    message: str = ""

    @property
    def fraction(self) -> float | None:
        if self.failing is None or not self.admitted:
            return None
        return self.failing / self.admitted

    def to_json(self) -> dict[str, Any]:
        frac = self.fraction
        return {
            "param": self.param,
            "range": [self.lo, self.hi],
            "held": {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in self.held.items()},
            "admitted": self.admitted,
            "failing": self.failing,
            "fraction": None if frac is None else round(frac, 6),
            "method": self.method,
            "message": self.message,
        }


class _EvalError(Exception):
    pass


def _classify(ob: Obligation, point: dict[str, Any]) -> int:
    """0 excluded, 1 holds, 2 fails — on plain ints."""
    try:
        ev = evaluate(ob, concrete_args(ob, point))
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        raise _EvalError(f"evaluating {point}: {describe_exception(exc)}") from None
    if not all(ev.assumptions.values()):
        return 0
    return 1 if ev.claim.holds else 2


def _enumerate(ob: Obligation, point: dict[str, Any], param: str, lo: int, hi: int) -> tuple[int, int, list[int]]:
    """(admitted, failing, prefix failing counts) over ``lo..hi`` on ints."""
    adm = fail = 0
    p = dict(point)
    prefix_fail = [0]
    prefix_adm = [0]
    for x in range(lo, hi + 1):
        p[param] = x
        k = _classify(ob, p)
        adm += k > 0
        fail += k == 2
        prefix_fail.append(fail)
        prefix_adm.append(adm)
    return adm, fail, [*zip(prefix_adm, prefix_fail)]  # type: ignore[list-item]


def _period_candidate(exprs: list[z3.ExprRef]) -> int:
    """lcm over the terms of (constant divisor × the candidate period of its dividend).

    One walk over the shared DAG through Z3's C API (accessors of live terms: nothing is built),
    without a z3py wrapper per node."""
    if not exprs:
        return 1
    memo: dict[int, int] = {}
    ctx = exprs[0].ctx
    c = ctx.ref()
    divisions = (z3.Z3_OP_IDIV, z3.Z3_OP_MOD, z3.Z3_OP_REM)

    def per(a) -> int:
        key = get_ast_id(c, a)
        if key in memo:
            return memo[key]
        out = 1
        if get_ast_kind(c, a) == z3.Z3_APP_AST:  # a numeral (z3py's is_app too) has no arguments: 1
            app = to_app(c, a)
            args = [get_app_arg(c, app, k) for k in range(get_app_num_args(c, app))]
            kids = [per(b) for b in args]
            for k in kids:
                out = math.lcm(out, k)
            if get_decl_kind(c, get_app_decl(c, app)) in divisions:
                d = args[1]
                if get_ast_kind(c, d) == z3.Z3_NUMERAL_AST and get_sort_kind(c, get_sort(c, d)) == z3.Z3_INT_SORT:
                    divisor = abs(int(z3.z3core.Z3_get_numeral_string(c, d)))  # is_int_value, as_long
                    if divisor:
                        out = divisor * kids[0]
        memo[key] = min(out, MAX_PERIOD + 1)
        return memo[key]

    result = 1
    for e in exprs:
        result = math.lcm(result, per(e.as_ast()) if e.ctx is ctx else _period_candidate([e]))
    return result


def axis_density(
    ob: Obligation,
    params: dict[str, Any],
    param: str,
    rlimit: int = DENSITY_RLIMIT,
    small: int = ENUM_FIRST,
    enum_limit: int = SMALL_RANGE,
    budget: int = SPLIT_BUDGET,
) -> AxisDensity:
    """Count the failing values of ``param`` over its Range, the others held at ``params``.

    ``params`` is a full point (a counterexample). Never raises: problems go to ``message``.
    """
    dom = ob.domain[param]
    assert isinstance(dom, Range)
    held = {k: v for k, v in params.items() if k != param}
    out = AxisDensity(param, dom.lo, dom.hi, held)
    n = dom.hi - dom.lo + 1
    try:
        if n <= small:
            adm, fail, _ = _enumerate(ob, params, param, dom.lo, dom.hi)
            out.admitted, out.failing, out.method = adm, fail, f"enumerated on ints ({n} values)"
            return out
        sym = _symbolic_axis(ob, params, param)
        if sym is not None:
            got = _by_period(ob, params, param, sym, rlimit, n)
            if got is not None:
                out.admitted, out.failing, out.method = got
                return out
            got = _by_splitting(sym, dom, rlimit, budget)
            if got is not None:
                out.admitted, out.failing, out.method = got
                return out
        if n <= enum_limit:
            adm, fail, _ = _enumerate(ob, params, param, dom.lo, dom.hi)
            out.admitted, out.failing, out.method = adm, fail, f"enumerated on ints ({n} values)"
            return out
        out.method = "not computed"
        out.message = (
            f"{n} values: no Z3-proved period, interval splitting over budget ({budget} queries), "
            f"and more than the enumeration limit {enum_limit}"
        )
    except _EvalError as exc:
        out.method, out.message = "not computed", str(exc)
    return out


@dataclass
class _Axis:
    x: z3.ArithRef
    admitted: z3.BoolRef
    failing: z3.BoolRef
    lemmas: list[z3.BoolRef]
    lo: int
    hi: int
    #: the held vectors' entries at the counterexample's values: background facts of every query
    #: (inside ``admitted`` they would make "excluded" satisfiable by moving an entry)
    pins: list[z3.BoolRef] = field(default_factory=list)


def _symbolic_axis(ob: Obligation, params: dict[str, Any], param: str) -> _Axis | None:
    """Admission and failure as Z3 formulas in ``param`` alone (None if the model will not build)."""
    dom: Range = ob.domain[param]  # type: ignore[assignment]
    fixed = {k: v for k, v in params.items() if k != param and not isinstance(ob.domain[k], Vector)}
    vectors = {k: d for k, d in ob.domain.items() if isinstance(d, Vector)}
    try:
        case = build_case(ob, fixed, {param: dom}, vectors)
    except KeyboardInterrupt:
        raise
    except BaseException:
        return None
    if case.false_assumptions:
        return None
    bound_labels = {f"{param} >= {dom.lo}", f"{param} <= {dom.hi}"}
    conds = [c for label, c in case.constraints if label not in bound_labels]
    admitted = z3.And(*conds) if conds else z3.BoolVal(True)
    failing = z3.And(admitted, z3.Not(to_z3_bool(case.ev.claim.holds)))
    return _Axis(
        case.scalars[param].term, admitted, failing, list(case.lemmas), dom.lo, dom.hi, case.fix(params, list(vectors))
    )


def _new_solver(rlimit: int) -> z3.Solver:
    """A solver behind ``purify-arith`` (quotients and remainders as fresh variables with their
    defining bounds) and ``propagate-ineqs``: the periodicity queries over nested constant
    divisions that the default Z3 solver gives up on (rlimit) take milliseconds this way."""
    tactic = z3.Then("simplify", "purify-arith", "propagate-ineqs", "solve-eqs", "smt")
    s = tactic.solver()
    s.set("rlimit", rlimit, "random_seed", 0)  # one call, as encode.new_solver
    return s


def _by_period(ob: Obligation, params: dict[str, Any], param: str, ax: _Axis, rlimit: int, n: int):
    period = _period_candidate([ax.admitted, ax.failing])
    if period > MAX_PERIOD or 2 * period > n:
        return None
    shift = [(ax.x, ax.x + period)]
    s = _new_solver(rlimit)
    s.add(*ax.pins)
    for lemma in ax.lemmas:
        s.add(lemma, z3.substitute(lemma, *shift))
    s.add(ax.x >= ax.lo, ax.x <= ax.hi - period)
    s.add(z3.Or(ax.admitted != z3.substitute(ax.admitted, *shift), ax.failing != z3.substitute(ax.failing, *shift)))
    if s.check() != z3.unsat:
        return None
    adm, fail, prefix = _enumerate(ob, params, param, ax.lo, ax.lo + period - 1)
    full, rem = divmod(n, period)
    admitted = full * adm + prefix[rem][0]
    failing = full * fail + prefix[rem][1]
    return admitted, failing, f"periodic with period {period} (Z3-proved), one period enumerated on ints"


def _by_splitting(ax: _Axis, dom: Range, rlimit: int, budget: int):
    s = _new_solver(rlimit)
    assert_terms(s, ax.pins)
    assert_terms(s, ax.lemmas)
    used = 0
    categories = (ax.failing, z3.And(ax.admitted, z3.Not(ax.failing)), z3.Not(ax.admitted))
    admitted = failing = 0
    stack = [(dom.lo, dom.hi)]
    while stack:
        a, b = stack.pop()
        present = []
        for k, cat in enumerate(categories):
            if used >= budget:
                return None
            used += 1
            s.push()
            # s.add(ax.x >= a, ax.x <= b, cat): the same terms and calls, without z3py's coercions
            assert_terms(s, [int_relation(ax.x, ">=", a), int_relation(ax.x, "<=", b), cat])
            answer = s.check()
            s.pop()
            if answer == z3.unknown:
                return None
            if answer == z3.sat:
                present.append(k)
                if len(present) > 1:
                    break
        if len(present) == 1:
            size = b - a + 1
            admitted += size if present[0] in (0, 1) else 0
            failing += size if present[0] == 0 else 0
        elif len(present) > 1:
            mid = (a + b) // 2
            stack += [(mid + 1, b), (a, mid)]
    return admitted, failing, f"Z3 interval splitting ({used} queries)"


def failure_density(
    ob: Obligation,
    params: dict[str, Any],
    failing_cases: int,
    admitted_cases: int,
    rlimit: int = DENSITY_RLIMIT,
    full: bool = False,
    unknown_cases: int = 0,
    pinned: bool = False,
    pins: list[str] | tuple[str, ...] = (),
) -> dict[str, Any]:
    """The density record of a counterexample ``params``: cases and one entry per Range axis.

    ``full`` allows the slow last-resort enumeration up to :data:`ENUM_LIMIT` values per axis.
    The case fraction is an exact fraction of the domain only when every parameter is finite,
    nothing is pinned and no case is unknown (an unknown case may or may not fail). Parameters
    named in ``pins`` are listed as ``pinned_params``: their axis varies what the run pinned (the
    README's parity example), so the report labels it.
    """
    axes = []
    finite_only = all(d.finite for d in ob.domain.values())
    lengths = {d.length for d in ob.domain.values() if isinstance(d, Vector) and d.length}
    for name, dom in ob.domain.items():
        if isinstance(dom, Range) and name not in lengths and name in params:
            axes.append(
                axis_density(ob, params, name, rlimit, enum_limit=ENUM_LIMIT if full else SMALL_RANGE).to_json()
            )
    return {
        "cases": {
            "failing": failing_cases,
            "admitted": admitted_cases,
            "unknown": unknown_cases,
            "pinned": pinned,
            "exact_domain_fraction": finite_only and not pinned and not unknown_cases,
        },
        "axes": axes,
        "skipped_vector_lengths": sorted(n for n in lengths if n in ob.domain),
        **({"pinned_params": sorted(p for p in pins if p in ob.domain)} if pins else {}),
    }
