"""Prove one obligation with Z3: case split, vacuity, divisor checks, minimise, replay.

For every case (one combination of the finite parameters' values) the claim function runs once
on symbolic ints for the range and vector parameters, giving Z3 terms for the assumptions, the
claim and its named quantities (:func:`build_case`). Then, on one solver with a fixed ``rlimit``
per query:

1. ``domain ∧ assumptions`` unsat -> the case is *excluded* (counted; all excluded = vacuous).
2. ``domain ∧ assumptions ∧ divisor == 0`` sat -> error: a symbolic divisor can be zero.
3. ``domain ∧ assumptions ∧ ¬claim``: unsat -> the case is proved (the unsat core names the
   assumptions used); sat -> minimise the parameters one by one (declared order, binary search;
   a vector entry by entry, or by its sum when more than 32 entries are active), then replay the
   point on plain ints, which must violate the claim.

Valid facts about each division (``Trace.lemmas``) are added untracked: they hold for all values.

Before all of it (``Options.probe``) the model runs on ints at structured points of the domain
(:mod:`capproof.probe`): the first counterexample early (``ObligationResult.first_counterexample``),
never a verdict.
"""

from __future__ import annotations

import dataclasses
import gc
import itertools
import time
from typing import Any, Protocol

import z3

from .domain import Choice, Range, Vector
from .encode import (  # noqa: F401 - evaluate/replay/effective_domains re-exported for spec tools and tests
    CasePaths,
    CaseProblem,
    PathFailure,
    SharedInputs,
    as_claim,
    build_case,
    build_paths,
    call_with_args,
    checked_domains,
    concrete_args,
    core_labels,
    describe_exception,
    effective_domains,
    evaluate,
    new_solver,
    replay,
    track,
)
from .errors import DivisorMayBeZero, ReplayError
from .minimize import minimize_point
from .normalise import sorted_batch
from .obligation import Obligation
from .probe import probe
from .second_opinion import second_opinion
from .shrink import shrink
from .symbolic import (
    LazyText,
    SymInt,
    Trace,
    differs_from,
    fresh_z3_context,
    model_int,
    model_true,
    to_z3_bool,
    to_z3_int,
    tracing,
)
from .verdict import Counterexample, FirstCounterexample, ObligationResult, Options, Verdict, Witness

__all__ = ["prove_obligation", "evaluate", "replay", "build_case", "CaseProblem", "effective_domains", "concrete_args"]


class _CaseOutcome:
    __slots__ = (
        "kind",
        "params",
        "values",
        "core",
        "message",
        "minimized",
        "relation",
        "fixed",
        "cross",
        "path",
        "paths",
        "restating",
        "normalised",
        "padding_reads",
    )

    def __init__(self, kind: str, **kw: Any):
        self.kind = kind  # proved | excluded | counterexample | unknown | error
        self.params: dict[str, object] = kw.get("params", {})
        self.values: dict[str, int] = kw.get("values", {})
        self.core: list[str] = kw.get("core", [])
        self.message: str = kw.get("message", "")
        self.minimized: bool = kw.get("minimized", True)
        self.relation: str = kw.get("relation", "")
        self.fixed: dict[str, int] = kw.get("fixed", {})
        self.cross: str | None = None  # second-solver result (capproof.crosscheck)
        self.path: str = kw.get("path", "")  # the path condition of a counterexample ('' = no branch)
        self.paths: int = kw.get("paths", 1)  # paths explored in this case
        #: assumptions of the core equivalent to the claim in this case (see _restating_assumptions)
        self.restating: list[str] = kw.get("restating", [])
        #: assumptions rewritten into an equivalent faster form (capproof.normalise)
        self.normalised: list[str] = kw.get("normalised", [])
        #: where the model read a vector's padding (:attr:`capproof.encode.CasePaths.padding_reads`)
        self.padding_reads: list[str] = []


def _concretely_false_assumptions(ob: Obligation, fixed: dict[str, int]) -> list[str]:
    """Assumptions that take only case-split parameters and are false at ``fixed`` (so the case
    is excluded whatever its claim does); empty if any of them cannot be decided or raises."""
    out = []
    for name, func in ob.assumptions.items():
        params = ob.assumption_params(name)
        if not all(p in fixed for p in params):
            continue
        try:
            value = func(**{p: fixed[p] for p in params})
        except Exception:  # noqa: BLE001 - an assumption that raises does not exclude anything
            continue
        if value is False:
            out.append(name)
    return out


def _prove_case(
    ob: Obligation,
    fixed: dict[str, int],
    ranges: dict[str, Range],
    vectors: dict[str, Vector],
    options: Options,
    rlimit: int,
    below: dict[str, object] | None = None,
    first: _First | None = None,
    restate: bool = True,
    built: dict[tuple, CasePaths] | None = None,
    shared: SharedInputs | None = None,
    alone: bool = False,
) -> _CaseOutcome:
    """Decide one case: every execution path of the model is its own problem (its path
    condition labelled among the constraints); the case is proved only if every path is proved
    or excluded and the fork budget sufficed. ``below``: the least counterexample of the cases
    decided before (see :func:`_decide_case`); ``first``: where the run's first counterexample
    is recorded; ``restate``: whether a proved path's core is checked for assumptions restating
    the claim (:func:`_restating_assumptions`); ``built``: where the case's paths are kept, by
    its fixed values (for :func:`find_witnesses`); ``shared``: the symbolic inputs and witness
    values shared with the obligation's other cases (:class:`~capproof.encode.SharedInputs`);
    ``alone``: each vector is its batch alone (every length in ``fixed``: :func:`_alone_outcomes`)."""
    budget = ob.fork_budget if ob.fork_budget is not None else options.fork_budget
    try:
        cp = build_paths(ob, fixed, ranges, vectors, budget, shared, alone)
        if built is not None:
            built[tuple(sorted(fixed.items()))] = cp
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # the model or spec is at fault (SystemExit too); report it, keep going
        return _case_error(ob, fixed, exc)

    outcomes: list[_CaseOutcome] = []
    for failure in cp.failures:
        outcomes.append(_failed_path(ob, fixed, failure, rlimit, cp.forked))
    for case in cp.paths:
        outcome = _decide_case(case, options, rlimit, below, first, restate)
        if options.smt2_dir or options.cross_check:  # SMT-LIB export and second solver
            from .crosscheck import case_hook

            outcome = case_hook(case, outcome, options)
        outcome.relation = case.ev.claim.relation
        if case.path_text:
            outcome.path = case.path_text
            if outcome.kind in ("error", "unknown"):
                outcome.message = f"on path {case.path_text}: {outcome.message}"
        outcomes.append(outcome)
    combined = _combine_paths(outcomes, cp)
    combined.fixed = dict(fixed)
    combined.padding_reads = cp.padding_reads
    combined.normalised = list(dict.fromkeys(n for case in cp.paths for n in case.normalised))
    return combined


def _case_error(ob: Obligation, fixed: dict[str, int], exc: BaseException, path: str = "") -> _CaseOutcome:
    excluded = _concretely_false_assumptions(ob, fixed)
    if excluded:  # e.g. `k >= 1` excludes the case k = 0 whose claim divides by k
        return _CaseOutcome("excluded", core=excluded[:1], fixed=dict(fixed))
    where = f" on path {path}" if path else ""
    if isinstance(exc, ZeroDivisionError):
        return _CaseOutcome("error", message=f"division by zero with {fixed}{where}: {describe_exception(exc)}")
    return _CaseOutcome("error", message=(f"on path {path}: " if path else "") + describe_exception(exc))


def _failed_path(
    ob: Obligation, fixed: dict[str, int], failure: PathFailure, rlimit: int, forked: bool
) -> _CaseOutcome:
    """A path that raised is an error unless the domain, its path condition and the assumptions
    computed before the error are unsatisfiable (then no admitted point takes it: excluded)."""
    if forked:
        s = new_solver(rlimit)
        trackers: dict[str, str] = {}
        for label, cond in failure.constraints:
            track(s, trackers, label, cond)
        if s.check() == z3.unsat:
            return _CaseOutcome("excluded", core=core_labels(s.unsat_core(), trackers))
    return _case_error(ob, fixed, failure.error, failure.path.describe() if failure.path.decisions else "")


def _combine_paths(outcomes: list[_CaseOutcome], cp: CasePaths) -> _CaseOutcome:
    """The case's outcome from its paths': an error or a counterexample on any path decides it;
    then unknown (a path unknown, or the fork budget exhausted); all excluded = excluded; else
    proved, with the union of the paths' cores (excluded paths' cores included: they are part of
    the proof)."""
    n = len(cp.paths) + len(cp.failures)
    if len(outcomes) == 1 and cp.complete:
        outcomes[0].paths = 1
        return outcomes[0]
    kinds = [o.kind for o in outcomes]
    pick: _CaseOutcome | None = None
    if "error" in kinds:
        pick = outcomes[kinds.index("error")]
    elif "counterexample" in kinds:
        pick = min((o for o in outcomes if o.kind == "counterexample"), key=lambda o: _order_key(o.params))
    elif "unknown" in kinds:
        pick = outcomes[kinds.index("unknown")]
    elif not cp.complete:
        pick = _CaseOutcome(
            "unknown",
            message=(
                f"fork budget of {cp.budget} paths exhausted ({cp.unexplored} paths unexplored; raise fork_budget= or "
                "--fork-budget)"
            ),
        )
    if pick is not None:
        pick.paths = n
        if not pick.relation:
            pick.relation = next((o.relation for o in outcomes if o.relation), "")
        return pick
    core: list[str] = []
    for o in outcomes:
        core.extend(c for c in o.core if c not in core)
    kind = "excluded" if all(k == "excluded" for k in kinds) else "proved"
    restating = [r for o in outcomes for r in o.restating]
    out = _CaseOutcome(kind, core=core, paths=n, restating=list(dict.fromkeys(restating)))
    out.relation = next((o.relation for o in outcomes if o.relation), "")
    return out


def _order_key(params: dict[str, object]) -> tuple:
    return tuple(tuple(v) if isinstance(v, list) else v for v in params.values())


#: With a shrunk seed, each minimisation query gets the obligation's rlimit divided by this: a
#: search that runs out of it ends at the seed (a counterexample, labelled not minimised) instead
#: of spending the whole rlimit per query (1,024-request batches: one unsat query ~20 s). Measured
#: over spec/: the largest minimisation spends ~0.66 M of the default 20 M (docs/performance.md).
SEEDED_MINIMISATION_SHARE = 8


def _replay_check(
    case: CaseProblem, params: dict[str, object], symbolic_values: dict[str, int], symbolic_holds: bool = False
) -> str | None:
    """None if ``params`` replays on plain ints as the symbolic run says: assumptions hold, the
    claim's truth is ``symbolic_holds`` (False: a counterexample) and the named values agree;
    else why not."""
    try:
        holds, values, failed = replay(case.ob, params, padding=not case.alone)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        return f"replay of the solver point {params} raised {describe_exception(exc)}"
    if failed:
        return str(ReplayError(f"solver point {params} violates assumptions {failed} on ints"))
    if holds != symbolic_holds or values != symbolic_values:
        return str(
            ReplayError(
                f"symbolic and concrete semantics disagree at the solver point {params}: Z3 says claim "
                f"{symbolic_holds} {symbolic_values}, Python says {holds} {values}"
                " (does the model branch on isinstance/type or other Python-only facts?)"
            )
        )
    if case.alone:  # the batches alone: a counterexample there must fail with the padding too
        return None if symbolic_holds else _padding_check(case.ob, params, (holds, values, failed), True)
    return _padding_check(case.ob, params, (holds, values, failed))


def _padding_check(ob: Obligation, params: dict[str, object], first: tuple, alone_first: bool = False) -> str | None:
    """None if the point replays the same on its batches alone (each Vector's active entries,
    no padding) as with the padding; else why not. ``first``: the replay already made, with the
    padding (or alone, with ``alone_first``). A counterexample shows the batch only, so a
    model whose result moves with the padding (``len()``, ``min()``, a count over every entry,
    padding above the entries) would report a batch that does not fail, or prove a false claim.
    With ``alone_first`` (a counterexample of a case on the batches alone) only the claim's truth
    and the false assumptions must agree: the values shown are the batch alone's."""
    short = [p for p, d in ob.domain.items() if isinstance(d, Vector) and len(params[p]) < d.size]  # type: ignore[arg-type]
    if not short:
        return None
    try:
        other = replay(ob, params, padding=alone_first)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        other = f"raises {describe_exception(exc)}"
    padded, alone = (other, first) if alone_first else (first, other)
    if alone == padded or (
        alone_first and isinstance(padded, tuple) and padded[0] == alone[0] and padded[2] == alone[2]
    ):
        return None

    def shown(r) -> str:
        return (
            r
            if isinstance(r, str)
            else f"gives claim {r[0]} {r[1]}" + (f" with assumptions {r[2]} false" if r[2] else "")
        )

    fills = ", ".join(f"{p}: {ob.domain[p].size - len(params[p])} entries equal to {ob.domain[p].fill}" for p in short)  # type: ignore[attr-defined]
    return str(
        ReplayError(
            f"the model sees the padding of its batch at {params}: on the batch alone it {shown(alone)}, "
            f"with the padding ({fills}) it {shown(padded)}; len(), min(), a count or a loop "
            "over the whole vector includes the padding (use total/max_of/min_of of capproof.arith, "
            "or mask entries with the length parameter)"
        )
    )


def _checks(case: CaseProblem, witnesses: bool = False) -> list[tuple[z3.BoolRef, int, str]]:
    """What must hold at every admitted point besides the claim, with the number of assumptions
    it may use and the error to report: nonzero divisors and exactness side conditions. With
    ``witnesses``: instead those of the witness conditions, which restrict where a witness is
    searched for (scope ``len(assumptions) + 1``)."""
    total = len(case.ob.assumptions)
    out = [
        (term != 0, upto, LazyText(lambda term=term, where=where: f"divisor {term} at {where}"))
        for (term, where), upto in zip(case.ev.divisors, case.ev.divisor_scope)
        if (upto > total) == witnesses
    ]
    out += [
        (fact, upto, LazyText(lambda what=what: f"side condition {what}"))
        for (fact, what), upto in zip(case.ev.side_conditions, case.ev.side_scope)
        if (upto > total) == witnesses
    ]
    return out


def _fail_check(what, where_in: str, point: dict[str, object]) -> _CaseOutcome:
    what = str(what)
    if what.startswith("divisor "):
        return _CaseOutcome(
            "error",
            message=str(
                DivisorMayBeZero(
                    f"{what}{where_in} can be zero, e.g. at {point}"
                    + ("; state its lower bound in the domain or in an earlier assumption" if where_in else "")
                )
            ),
        )
    return _CaseOutcome(
        "error",
        message=f"{what}{where_in} can fail, e.g. at {point}: capproof's encoding is "
        "exact only under it (bound the parameters in the domain or an assumption)",
    )


def _divisor_in_assumption_may_be_zero(case: CaseProblem, rlimit: int) -> _CaseOutcome | None:
    """Divisors (and side conditions) met while evaluating an assumption, checked under the
    preceding assumptions only."""
    total = len(case.ob.assumptions)
    for fact, upto, what in _checks(case):
        if upto >= total:
            continue
        s, _ = case.solver(rlimit, assumptions_upto=upto)
        s.add(z3.Not(fact))
        answer = s.check()
        if answer == z3.sat:
            name = list(case.ob.assumptions)[upto]
            return _fail_check(what, f" (in assumption {name!r})", case.point(s.model()))
        if answer == z3.unknown:
            return _CaseOutcome("unknown", message=f"check of {what}: {s.reason_unknown()}")
    return None


def failed_check(case: CaseProblem, rlimit: int) -> str | None:
    """Why ``case`` has an admitted point where a divisor (or a batch an aggregate needs nonempty)
    may be zero or a side condition fails, or where that is undecided; None when none: what
    ``prove`` checks before the claim, for the other commands that solve a built case (``bound``)."""
    problem = _divisor_in_assumption_may_be_zero(case, rlimit)
    if problem is not None:
        return problem.message or problem.kind
    checks = [(fact, what) for fact, upto, what in _checks(case) if upto >= len(case.ob.assumptions)]
    if not checks:
        return None
    s, _ = case.solver(rlimit)
    for fact, what in checks:
        s.push()
        s.add(z3.Not(fact))
        answer = s.check()
        if answer != z3.unsat:
            point = case.point(s.model()) if answer == z3.sat else None
            s.pop()
            return (
                _fail_check(what, "", point).message if point is not None else f"check of {what}: {s.reason_unknown()}"
            )
        s.pop()
    return None


def _probe_semantics(case: CaseProblem, s: z3.Solver) -> str | None:
    """Replay up to two admitted points on ints and compare with the symbolic run there.

    A proof is about the symbolic run; a model that branches on ``isinstance``/``type`` (or
    anything else Python-only) may run differently on ints. Two probe points (the assumption
    model, then one differing in every free parameter if there is one) catch such a divergence
    cheaply; a disagreement is an error, never a proof.
    """
    if s.check() != z3.sat:
        return None
    model = s.model()
    free = [v.term for v in case.scalars.values()] + [
        e.term for entries in case.vectors.values() for e in entries if isinstance(e, SymInt)
    ]
    for attempt in range(2):
        params = case.point(model)
        symbolic_holds = model_true(model, case.claim)
        symbolic_values = {k: model_int(model, to_z3_int(v)) for k, v in case.ev.claim.values.items()}
        problem = _replay_check(case, params, symbolic_values, symbolic_holds)
        if problem:
            return problem
        if attempt or not free:
            return None
        s.push()
        s.add(differs_from(model, free))  # z3.And(*[t != model.eval(t, ...) for t in free]), its very calls
        answer = s.check()
        if answer == z3.sat:
            model = s.model()
        s.pop()
        if answer != z3.sat:
            return None
    return None


def rlimit_count(s: z3.Solver) -> int:
    """Z3's resource counter so far, read from ``s``'s statistics (the counter is the whole
    context's, across solvers; read before a solver's first check it costs no query and changes
    nothing): the difference of two readings is what the queries between them spent."""
    try:
        return int(s.statistics().get_key_value("rlimit count"))
    except Exception:  # noqa: BLE001 - statistics are best effort
        return 0


def _lex_below(case: CaseProblem, bound: dict[str, object]) -> z3.BoolRef | None:
    """The case's points that precede ``bound`` in the counterexample order (parameters in
    declared order, lexicographically), or None when a parameter is a Vector (not encoded)."""
    below: z3.BoolRef = z3.BoolVal(False)
    for name in reversed(case.ob.params):
        value = bound[name]
        if name in case.fixed:
            term = case.fixed[name]
        elif name in case.scalars:
            term = case.scalars[name].term
        else:
            return None
        if isinstance(value, list) or isinstance(term, list):
            return None
        less, same = term < value, term == value
        less = less if isinstance(less, z3.BoolRef) else z3.BoolVal(bool(less))
        same = same if isinstance(same, z3.BoolRef) else z3.BoolVal(bool(same))
        below = z3.Or(less, z3.And(same, below))
    return below


def _decide_case(
    case: CaseProblem,
    options: Options,
    rlimit: int,
    below: dict[str, object] | None = None,
    first: "_First | None" = None,
    restate: bool = True,
) -> _CaseOutcome:
    """Decide one case (one path of it). ``below``: the least counterexample of the cases decided
    before; when this case has no point before it (one query), its counterexample is not
    minimised (it cannot be the least; it is still replayed on ints and counted). ``restate``:
    check a proof's core for assumptions restating the claim (off once the obligation has a
    counterexample: see :func:`_prove_obligation`)."""
    if case.false_assumptions:
        return _CaseOutcome("excluded", core=case.false_assumptions[:1])
    problem = _divisor_in_assumption_may_be_zero(case, rlimit)
    if problem:
        return problem
    s, trackers = case.solver(rlimit)
    base = rlimit_count(s)

    answer = s.check()
    if answer == z3.unsat:
        return _CaseOutcome("excluded", core=core_labels(s.unsat_core(), trackers))
    if answer == z3.unknown:
        return _CaseOutcome(
            "unknown", message=f"assumption check: {s.reason_unknown()}; {hardness(case, s, rlimit, base)}"
        )

    for fact, upto, what in _checks(case):
        if upto < len(case.ob.assumptions):
            continue  # checked above, under the assumptions before it
        s.push()
        s.add(z3.Not(fact))
        answer = s.check()
        if answer == z3.sat:
            point = case.point(s.model())
            s.pop()
            return _fail_check(what, "", point)
        s.pop()
        if answer == z3.unknown:
            return _CaseOutcome("unknown", message=f"check of {what}: {s.reason_unknown()}")

    problem = _probe_semantics(case, s)
    if problem:
        return _CaseOutcome("error", message=problem)

    s.push()
    s.add(z3.Not(case.claim))
    # symmetry breaking (sorted batches): first when the problem splits on entries (counts,
    # thresholds, max/min trees: where sortedness prunes Z3's case splits), else only when the
    # query as written is unknown; sorted queries that are unknown fall back to the query as written
    sort_first = _splits_on_entries(case)
    symmetry = _symmetry_breaking(case) if sort_first else []
    answer = z3.unknown if symmetry else s.check()
    if answer == z3.unknown and not sort_first:
        symmetry = _symmetry_breaking(case)
    if answer == z3.unknown and symmetry:
        s.push()
        for facts, _ in symmetry:
            s.add(*facts)
        answer = s.check()
        if answer == z3.unknown:
            s.pop()
            if sort_first:
                answer = s.check()
        else:
            case.normalised.extend(note for _, note in symmetry)
    if answer == z3.unsat:
        core = core_labels(s.unsat_core(), trackers)
        restating = [] if options.verdict_only or not restate else _restating_assumptions(case, core, rlimit)
        return _CaseOutcome("proved", core=core, restating=restating)
    if answer == z3.unknown:
        return _CaseOutcome("unknown", message=f"{s.reason_unknown()}; {hardness(case, s, rlimit, base)}")

    model = s.model()
    if first is not None:
        first.solver_point(case, model)
    minimized = options.minimize  # Options(minimize=False): the solver's point, not minimised, and labelled so
    minimize = options.minimize
    earlier = _lex_below(case, below) if below is not None and minimize else None
    if earlier is not None:
        s.push()
        s.add(earlier)
        answer = s.check()
        if answer == z3.sat:
            model = s.model()  # the least point of this case is before ``below``: minimise under it
        else:
            s.pop()
            minimize = answer != z3.unsat  # unsat: every counterexample of this case comes after ``below``
    if minimize:
        seeded = first.seed() if first is not None else None
        model, minimized = minimize_point(
            case,
            s,
            model,
            [p for p in case.ob.params if p not in case.fixed],
            seeded[0] if seeded is not None else None,
            max(1, rlimit // SEEDED_MINIMISATION_SHARE),
            rlimit,
        )
    params = case.point(model)
    symbolic_values = {k: model_int(model, to_z3_int(v)) for k, v in case.ev.claim.values.items()}
    problem = _replay_check(case, params, symbolic_values)
    if problem:
        return _CaseOutcome("error", message=problem)
    return _CaseOutcome("counterexample", params=params, values=symbolic_values, minimized=minimized)


def _splits_on_entries(case: CaseProblem) -> bool:
    """Whether the claim or a constraint has an ``If`` whose condition reads a vector entry (a
    count, a threshold, a maximum): where sorting a batch prunes Z3's case splits. Measured:
    a threshold count over 64 requests unknown in 9 s as written, proved sorted in
    0.6 s; sums of per-expert roundings (no entry conditions) 1.5-3x slower sorted."""
    entries = {to_z3_int(e).get_id() for v in case.vectors.values() for e in v if isinstance(e, SymInt)}
    if not entries:
        return False
    # the batches' entry bounds and padding (encode._symbolic_inputs) have no If: not walked (a
    # third of the walk on a 64-request batch); only a heuristic's input, never a verdict's
    bounds = {
        label
        for name, dom in case.ob.domain.items()
        if isinstance(dom, Vector)
        for label in (
            f"{name} entries in {dom.elem.lo}..{dom.elem.hi}",  # type: ignore[attr-defined]
            f"{name} entries from {dom.length} on are {dom.fill}",
        )
    }
    return _ite_reads(
        case.claim.ctx, [case.claim, *(c for label, c in case.constraints if label not in bounds)], entries
    )


def _c_function(wrapper):
    """The ctypes function a ``z3core`` wrapper calls (kept in its ``_elems`` default), or the
    wrapper itself when this z3 build has no such default."""
    elems = (wrapper.__defaults__ or (None,))[-1]
    return getattr(elems, "f", wrapper)


def _ite_reads(ctx: z3.Context, roots: list[z3.ExprRef], ids: set[int]) -> bool:
    """Whether an integer ``If`` under ``roots`` has a condition that reads a term whose id is in
    ``ids``. One bottom-up pass over the shared DAG, through Z3's C API (no Python wrapper per
    node: the wrappers' reference counting was ~3 s of a 1024-expert routing proof)."""
    c = ctx.ref()
    # the C functions themselves, without z3core's error check after each call (these accessors
    # of live terms cannot fail; half the cost of the walk)
    ast_id, ast_kind, to_app, num_args, app_arg = (
        _c_function(f)
        for f in (z3.Z3_get_ast_id, z3.Z3_get_ast_kind, z3.Z3_to_app, z3.Z3_get_app_num_args, z3.Z3_get_app_arg)
    )
    app_kind = z3.Z3_APP_AST
    reads: dict[int, bool] = {}
    # the argument ids of each application met, kept from its first visit (pushing its pending
    # arguments) for its second (when they are all decided: each was pushed above it)
    arguments: dict[int, list[int]] = {}
    stack = [r.as_ast() for r in roots]
    while stack:
        a = stack[-1]
        i = ast_id(c, a)
        if i in reads:
            stack.pop()
            continue
        arg_ids = arguments.get(i)
        if arg_ids is None:
            if i in ids or ast_kind(c, a) != app_kind:
                reads[i] = i in ids
                stack.pop()
                continue
            app = to_app(c, a)
            args = [app_arg(c, app, k) for k in range(num_args(c, app))]
            arg_ids = arguments[i] = [ast_id(c, b) for b in args]
            pending = [b for b, j in zip(args, arg_ids) if j not in reads]
            if pending:
                stack.extend(pending)
                continue
        stack.pop()
        reads[i] = any(reads[j] for j in arg_ids)
        if (
            reads[i]
            and len(arg_ids) == 3
            and reads[arg_ids[0]]
            and z3.Z3_get_decl_kind(c, z3.Z3_get_app_decl(c, to_app(c, a))) == z3.Z3_OP_ITE
            and z3.Z3_get_sort_kind(c, z3.Z3_get_sort(c, a)) == z3.Z3_INT_SORT
        ):
            return True
    return False


def _symmetry_breaking(case: CaseProblem) -> list[tuple[list[z3.BoolRef], str]]:
    """Sortedness of each vector whose batch length is concrete in ``case`` (fixed, or no length)
    and under every permutation of whose active entries the claim and every constraint are
    invariant (:func:`capproof.normalise.sorted_batch`, checked by Z3). The vector's own entry
    bounds are the same for every entry, so they are left out of the check; padding entries are
    constants and never sorted. Symbolic lengths are not sorted (their padding moves with the
    length)."""
    out = []
    for name, entries in case.vectors.items():
        dom: Vector = case.ob.domain[name]  # type: ignore[assignment]
        if dom.length is not None and dom.length not in case.fixed:
            continue
        n = case.active(name)
        own = f"{name} entries in {dom.elem.lo}..{dom.elem.hi}"  # type: ignore[attr-defined]
        # the domain's own bounds only: an assumption of the same name is always checked
        terms = [case.claim, *(c for label, c in case.constraints if label != own or label in case.ob.assumptions)]
        found = sorted_batch(terms, [to_z3_int(e) for e in entries[:n]], name)
        if found is not None:
            out.append(found)
    return out


def _nonlinear_products(terms: list[z3.ExprRef], limit: int = 3) -> list[str]:
    """Up to ``limit`` products of two non-constant terms (and divisions by a non-constant)."""
    out: list[str] = []
    seen: set[int] = set()
    stack = list(terms)
    while stack and len(out) < limit:
        e = stack.pop()
        if e.get_id() in seen or not z3.is_app(e):
            continue
        seen.add(e.get_id())
        k = e.decl().kind()
        if k == z3.Z3_OP_MUL and sum(not z3.is_int_value(c) for c in e.children()) >= 2:
            out.append(str(e)[:60])
        elif k in (z3.Z3_OP_IDIV, z3.Z3_OP_MOD) and not z3.is_int_value(e.arg(1)):
            out.append(str(e)[:60])
        stack.extend(e.children())
    return out


def _pairwise_disequalities(terms: list[z3.ExprRef], limit: int = 10_000) -> int:
    """How many ``a != b`` between two non-constant int terms ``terms`` hold (up to ``limit``)."""
    n, seen, stack = 0, set(), list(terms)
    while stack and n < limit:
        e = stack.pop()
        if e.get_id() in seen or not z3.is_app(e):
            continue
        seen.add(e.get_id())
        if (
            z3.is_not(e)
            and z3.is_eq(e.arg(0))
            and z3.is_int(e.arg(0).arg(0))
            and not any(z3.is_int_value(c) for c in e.arg(0).children())
        ):
            n += 1
            continue
        if z3.is_bool(e):
            stack.extend(e.children())
    return n


def hardness(case: CaseProblem, s: z3.Solver, rlimit: int | None = None, base: int = 0) -> str:
    """Why a query may have come back unknown, and what to try: the rlimit spent in
    this case, nonlinear terms (which), vector sizes, pairwise facts left pairwise, the
    re-encodings applied; then what to try (``--rlimit``, a smaller vector, the count form, an
    assumption bounding a nonlinear factor, the aggregate vocabulary)."""
    parts: list[str] = []
    try:
        spent = int(s.statistics().get_key_value("rlimit count")) - base
        parts.append(f"rlimit spent {spent:,} in this case" + (f" ({rlimit:,} per query)" if rlimit else ""))
    except Exception:  # noqa: BLE001 - statistics are best effort
        pass
    nonlinear = _nonlinear_products([c for _, c in case.constraints] + [case.claim])
    if nonlinear:
        parts.append("nonlinear terms, e.g. " + "; ".join(nonlinear))
    sizes = {
        n: case.active(n)
        if case.ob.domain[n].length in case.fixed or case.ob.domain[n].length is None
        else case.ob.domain[n].size
        for n in case.vectors
    }  # type: ignore[union-attr]
    if sizes:
        parts.append("vectors " + ", ".join(f"{n} {k} entries" for n, k in sizes.items()))
    pairwise = _pairwise_disequalities([c for label, c in case.constraints if label in case.ob.assumptions])
    if pairwise:
        parts.append(f"{pairwise}{'+' if pairwise >= 10_000 else ''} pairwise disequalities in the assumptions")
    if case.normalised:
        parts.append("already re-encoded: " + "; ".join(case.normalised))
    tips = []
    if nonlinear:
        tips.append("make a factor finite (Choice) so the product is linear, or add an assumption bounding it")
    if pairwise:
        tips.append("state distinctness in count form (count(x == v for x in group) <= 1 for each value v)")
    if sizes:
        tips.append(
            "state the claim through total/max_of/min_of and all_of so the aggregate abstraction applies, "
            "or pin/case-split the vector length, or try a smaller vector first"
        )
    tips.append(f"raise --rlimit (e.g. --rlimit {10 * rlimit})" if rlimit else "raise --rlimit")
    return ", ".join(parts) + "; try: " + "; ".join(tips)


def _restating_assumptions(case: CaseProblem, core: list[str], rlimit: int) -> list[str]:
    """The assumptions of an unsat ``core`` that are equivalent to the claim on the domain (each
    implies the other with only the domain's bounds): such a proof assumes its conclusion. An
    unknown answer counts as equivalent (the assumption is listed): only a satisfiable query, a
    point where one holds without the other, clears an assumption.

    Asked in a Z3 context of its own (the case's terms translated), so these queries leave the
    case's context as they found it (Z3's answers and cores there depend on the queries asked
    before), and "the claim without the assumption", usually satisfiable at once, is asked before
    "the assumption without the claim", which is as hard as the proof (a third of a
    1024-expert routing proof). That context is one per context the cases are built in (one per
    obligation, as ``capproof prove`` decides it), made at its first use: the cases of an
    obligation ask their questions there in their own order, so the answers are the same on every
    run, and Z3 makes one context instead of one per case (a context costs 5-12 ms to make,
    more than most of these queries)."""
    names = set(case.ob.assumptions)
    wanted = [name for name in core if name in names]
    if not wanted:
        return []
    ctx = _side_context(case.claim.ctx)
    s = z3.Solver(ctx=ctx)
    s.set("rlimit", max(1, rlimit // 10), "random_seed", 0)  # one call, as encode.new_solver
    for label, c in case.constraints:
        if label not in names:
            s.add(c.translate(ctx))
    # lemma.translate(ctx) and Solver.add's calls, without their wrappers and casts, each distinct
    # lemma translated once (a repeated lemma translates to the term asserted before: Z3 shares
    # it, creating nothing; 35,000 lemmas of which 1,000 distinct on vLLM's write positions)
    target, translated = ctx.ref(), {}
    for lemma in case.lemmas:
        if type(lemma) is z3.BoolRef:
            key = lemma.ast.value  # the term's address: every lemma is alive in case.lemmas
            made = translated.get(key)
            if made is None:
                made = translated[key] = z3.BoolRef(z3.z3core.Z3_translate(lemma.ctx.ref(), lemma.ast, target), ctx)
            z3.z3core.Z3_solver_assert(target, s.solver, made.ast)
        else:
            s.add(lemma.translate(ctx))
    claim = case.claim.translate(ctx)
    conds = dict(case.constraints)
    out = []
    for name in wanted:
        cond = conds[name].translate(ctx)
        # restating unless one direction is shown not to hold (sat): an unknown answer counts as
        # restating, so a proof whose assumption Z3 could not separate from the claim is never verified
        if not any(_sat(s, extra) for extra in (z3.And(claim, z3.Not(cond)), z3.And(cond, z3.Not(claim)))):
            out.append(name)
    return out


def _side_context(main: z3.Context) -> z3.Context:
    """The Z3 context the restating checks of cases built in ``main`` are asked in: made at the
    first call for ``main`` and kept as long as ``main`` is (an attribute of it)."""
    side = getattr(main, "_capproof_restating", None)
    if side is None:
        side = z3.Context()
        main._capproof_restating = side  # type: ignore[attr-defined]
    return side


def _sat(s: z3.Solver, extra: z3.BoolRef) -> bool:
    s.push()
    s.add(extra)
    answer = s.check()
    s.pop()
    return answer == z3.sat


#: At most this many finite cases are searched for one trigger witness.
WITNESS_CASES = 256


def _witness_in_case(
    ob: Obligation, name: str, case: CaseProblem, cex_params: dict[str, object], free: set[str], rlimit: int
) -> Witness | None:
    """The smallest witness point of ``case`` (None: none there); ``found=False`` with a message
    for an unknown or failed replay."""
    held = [p for p in ob.params if p not in free and p not in case.fixed]
    s, _ = case.solver(rlimit)
    for eq in case.fix(cex_params, held):
        s.add(eq)
    s.add(z3.Not(case.claim))
    s.add(to_z3_bool(case.ev.witnesses[name]))
    for fact, _, _ in _checks(case, witnesses=True):  # where the witness conditions are defined
        s.add(fact)
    answer = s.check()
    if answer == z3.unsat:
        return None
    if answer == z3.unknown:
        return Witness(name, False, message=f"unknown: {s.reason_unknown()}")
    model, minimized = minimize_point(case, s, s.model(), [p for p in ob.params if p in free and p not in case.fixed])
    params = case.point(model)
    symbolic_values = {k: model_int(model, to_z3_int(v)) for k, v in case.ev.claim.values.items()}
    problem = _replay_check(case, params, symbolic_values)
    if problem is None:
        try:
            if not evaluate(ob, concrete_args(ob, params)).witnesses[name]:
                problem = f"witness {name!r} does not hold at {params} on ints"
        except BaseException as exc:  # pragma: no cover - replay just ran the same code
            problem = describe_exception(exc)
    if problem:
        return Witness(name, False, message=f"error: {problem}")
    return Witness(name, True, params=params, values=symbolic_values, minimized=minimized)


def find_witnesses(
    ob: Obligation,
    cex_params: dict[str, object],
    finite: dict[str, list[int]],
    ranges: dict[str, Range],
    vectors: dict[str, Vector],
    options: Options,
    rlimit: int,
    built: dict[tuple, CasePaths] | None = None,
) -> list[Witness]:
    """For each of ``ob.witnesses``: the smallest point (declared order) with the counterexample's
    values for every parameter the condition does not take, where the claim fails and the
    condition holds. Finite parameters the condition takes (and the lengths of vectors it takes)
    range over their cases (at most :data:`WITNESS_CASES`).

    Each witness is replayed on ints (claim violated, condition true, assumptions hold).
    ``built``: cases already built (by their fixed values, as :func:`_prove_case` keeps them),
    not built again.
    """
    out: list[Witness] = []
    cases: dict[tuple, list[CaseProblem] | str] = {}
    budget = ob.fork_budget if ob.fork_budget is not None else options.fork_budget
    for name in ob.witnesses:
        free = set(ob.witness_params(name))
        for p in list(free):  # a vector's length moves with the vector
            dom = ob.domain[p]
            if isinstance(dom, Vector) and dom.length:
                free.add(dom.length)
        axes = [(p, finite[p] if p in free else [cex_params[p]]) for p in finite]
        combos = list(itertools.islice(itertools.product(*(values for _, values in axes)), WITNESS_CASES + 1))
        if len(combos) > WITNESS_CASES:
            out.append(Witness(name, False, message=f"not searched: more than {WITNESS_CASES} finite cases"))
            continue
        found: list[Witness] = []
        failed: Witness | None = None
        for combo in combos:
            fixed = {p: v for (p, _), v in zip(axes, combo)}
            key = tuple(sorted(fixed.items()))
            if key not in cases:
                try:
                    cp = (
                        built[key]
                        if built is not None and key in built
                        else build_paths(ob, fixed, ranges, vectors, budget)
                    )
                    cases[key] = cp.paths
                    if cp.failures or not cp.complete:  # a failed or unexplored path may hold the witness
                        cases[key] = (
                            "a path raised " + describe_exception(cp.failures[0].error)
                            if cp.failures
                            else f"fork budget of {budget} paths exhausted"
                        )
                except KeyboardInterrupt:
                    raise
                except BaseException as exc:
                    cases[key] = describe_exception(exc)
            problems = cases[key]
            if isinstance(problems, str):
                failed = failed or Witness(name, False, message=f"error: {problems}")
                continue
            for case in problems:
                if case.false_assumptions:
                    continue
                w = _witness_in_case(ob, name, case, cex_params, free, rlimit)
                if w is None:
                    continue
                if w.found:
                    found.append(w)
                else:
                    failed = failed or w
        if found:
            best = min(found, key=lambda w: tuple(w.params[p] for p in ob.params))
            # the smallest over cases is the least witness only if every case's search ended
            best.minimized = all(w.minimized for w in found)
            out.append(best)
        elif failed:
            out.append(failed)
        else:
            out.append(Witness(name, False, message="no point at this configuration"))
    return out


class _First:
    """The first concrete counterexample of a run (:class:`FirstCounterexample`), timed in CPU
    seconds from ``cpu_started`` (the obligation's start, ``time.process_time``)."""

    __slots__ = (
        "cpu_started",
        "found",
        "points",
        "gc_paused",
        "ob",
        "domains",
        "_seed",
        "shrunk_at",
        "restating_skipped",
    )

    def __init__(self, cpu_started: float):
        self.cpu_started = cpu_started
        self.found: FirstCounterexample | None = None
        self.points = 0  # int-probe points evaluated
        self.ob: Obligation | None = None
        self.domains: tuple | None = None  # (finite, ranges, vectors) under the pins
        self._seed: tuple[dict[str, object], dict[str, int]] | None = None
        #: CPU seconds from ``cpu_started`` to the end of the shrink (the seed in hand)
        self.shrunk_at: float | None = None
        self.restating_skipped = False  # a proved case's restating check skipped (a counterexample was known)
        # the cyclic garbage collector paused until the int probe is done (resume_gc): a collection
        # due from the caller's earlier allocations (Z3 objects, another tool's run) otherwise
        # lands in the probe's first milliseconds about one call in five (gen 0: ~0.5 ms, gen 1:
        # ~2 ms measured, the probe itself 0.3-1 ms); it runs after the probe, in this call
        self.gc_paused = gc.isenabled()
        if self.gc_paused:
            gc.disable()

    def seed(self) -> tuple[dict[str, object], dict[str, int]] | None:
        """The first counterexample shrunk on ints (:func:`capproof.shrink.shrink`; computed once)
        and the claim's values there, or None when there is none yet. Every point kept replays as a
        counterexample on ints (:func:`_failing_values`)."""
        if self._seed is None:
            if self.found is None or self.ob is None or self.domains is None:
                return None
            ob = self.ob
            with tracing() as trace:
                point, _ = shrink(list(ob.params), self.found.params, *self.domains, _quick_check(ob, trace))
            values = _failing_values(ob, point) if point != self.found.params else self.found.values
            if values is None:  # pragma: no cover - the quick check skips only the witness conditions
                point, values = self.found.params, self.found.values
            self._seed = (point, values)
            self.shrunk_at = time.process_time() - self.cpu_started
        return self._seed

    def resume_gc(self) -> None:
        """Re-enable the garbage collector if this run paused it (idempotent)."""
        if self.gc_paused:
            self.gc_paused = False
            gc.enable()

    def record(self, params: dict[str, object], values: dict[str, int], source: str, at: float | None = None) -> None:
        """Keep the first counterexample, found at CPU time ``at`` (None: now)."""
        if self.found is None:
            took = (time.process_time() if at is None else at) - self.cpu_started
            self.found = FirstCounterexample(params, values, took, source, self.points)

    def solver_point(self, case: CaseProblem, model: z3.ModelRef) -> None:
        """Record the solver's (unminimised) model of a failing case if it replays on ints as a
        counterexample (assumptions hold, claim false), on its batches alone as with the padding
        (the batch shown must fail: :func:`_padding_check`, as for every counterexample shown)."""
        if self.found is not None:
            return
        params = case.point(model)
        values = _failing_values(case.ob, params)
        if values is not None:
            self.record(params, values, "solver")


def _quick_check(ob: Obligation, trace: Trace):
    """``fails(params)``: whether ``params`` is a counterexample on ints, as
    :func:`_failing_values` decides it (assumptions hold, claim false, on the batches alone as
    with the padding) but with the assumptions in declaration order up to the first false one,
    each over scalars computed once per argument values, and without the witness conditions: the
    shrinker's check (several times cheaper; the point it keeps is replayed in full by
    :func:`_failing_values`). ``trace``: the :class:`~capproof.symbolic.Trace` the calls run
    under (one for the whole shrink, as for the int probe; its misuse list is checked and
    cleared after each point). False when the model raises or misuses capproof."""
    vectors = {p for p, d in ob.domain.items() if isinstance(d, Vector)}
    calls = []
    for name, func in ob.assumptions.items():
        names = ob.assumption_params(name)
        calls.append((name, func, names, not vectors.intersection(names)))
    short = [(p, ob.domain[p].size) for p in vectors]  # type: ignore[attr-defined]
    memo: dict[tuple, bool] = {}  # scalar assumptions by their argument values
    seen: dict[tuple, bool] = {}  # points checked (a pass may come back to one)

    def run(params: dict[str, object], padding: bool) -> tuple[bool, dict[str, int]] | None:
        args = concrete_args(ob, params, padding) if vectors else params
        for name, func, names, scalar in calls:
            if scalar:
                key = (name, *map(args.__getitem__, names))
                holds = memo.get(key)
                if holds is None:
                    holds = memo[key] = bool(call_with_args(func, "assumption", name, names, args))
            else:
                holds = bool(call_with_args(func, "assumption", name, names, args))
            if not holds:
                return None
        claim = as_claim(ob.func(**args), ob)
        return bool(claim.holds), {k: int(v) for k, v in claim.values.items()}  # type: ignore[call-overload]

    def check(params: dict[str, object]) -> bool:
        try:
            padded = run(params, True)
            if padded is None or padded[0] or trace.misuse:
                return False
            if any(len(params[p]) < size for p, size in short):  # type: ignore[arg-type]
                return run(params, False) == padded and not trace.misuse
            return True
        except KeyboardInterrupt:
            raise
        except BaseException:  # noqa: BLE001 - a point where the model raises is no counterexample
            return False
        finally:
            trace.misuse.clear()

    def fails(params: dict[str, object]) -> bool:
        key = tuple(tuple(v) if isinstance(v, list) else v for v in params.values())
        out = seen.get(key)
        if out is None:
            out = seen[key] = check(params)
        return out

    return fails


def _failing_values(ob: Obligation, params: dict[str, object]) -> dict[str, int] | None:
    """The claim's values at ``params`` if it is a counterexample on ints (assumptions hold, claim
    false), on its batches alone as with the padding (the batch shown must fail:
    :func:`_padding_check`); None otherwise, or when the model raises there (a solver point's
    minimised replay reports that)."""
    try:
        holds, values, failed = replay(ob, params)
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001 - a point where the model raises is no counterexample
        return None
    if not holds and not failed and _padding_check(ob, params, (holds, values, failed)) is None:
        return values
    return None


def prove_obligation(ob: Obligation, options: Options | None = None) -> ObligationResult:
    """Decide ``ob``: proved, counterexample, unknown, vacuous or error (never raises).

    With ``options.probe`` the model is first evaluated on ints at the structured points of the
    domain (:func:`capproof.probe.probe`); the first counterexample found, by the probe or the
    solver, is ``result.first_counterexample`` (its CPU time from the start of this call). The
    verdict and the minimised counterexample do not depend on the probe, except that a probe
    counterexample the verdict excludes (proved, vacuous) makes the verdict an error: the int and
    the symbolic semantics disagree, and that an ``unknown`` with a probe counterexample becomes a
    counterexample (not minimised: the probe's point shrunk on ints, :func:`capproof.shrink.shrink`,
    replayed). Decided in a fresh
    Z3 context, as ``capproof prove`` decides each obligation: the answer does not depend on what
    the calling process did with Z3 before (in-process callers, tests). An ``unknown`` obligation
    with a symbolic scalar of at most :data:`SPLIT_RANGE_VALUES` values is decided again with that
    scalar split into one case per value (the message says so); an unknown retry keeps the first
    answer."""
    result = _prove_obligation_once(ob, options)
    if result.verdict is Verdict.UNKNOWN:
        split = _small_range_to_split(ob, options or Options())
        if split is not None:  # one case per value of a small symbolic range: each query simpler
            name, values = split
            again = _prove_obligation_once(
                dataclasses.replace(ob, domain={**ob.domain, name: Choice(*values)}), options
            )
            if again.verdict in (Verdict.PROVED, Verdict.COUNTEREXAMPLE, Verdict.VACUOUS):
                again.message += f" (decided with {name} split into its {len(values)} values: unknown as one range)"
                again.seconds += result.seconds
                return again
    return result


#: an obligation unknown with a symbolic scalar of at most this many values is decided again with
#: that scalar split into one case per value (``e`` an expert compared with every routed entry)
SPLIT_RANGE_VALUES = 16


def _small_range_to_split(ob: Obligation, options: Options) -> tuple[str, list[int]] | None:
    """The unpinned scalar Range of ``ob`` with the fewest values, at most
    :data:`SPLIT_RANGE_VALUES` and more than one; None when there is none."""
    pins = options.pins or {}
    small = [
        (dom.hi - dom.lo + 1, name)
        for name, dom in ob.domain.items()
        if isinstance(dom, Range) and name not in pins and 1 < dom.hi - dom.lo + 1 <= SPLIT_RANGE_VALUES
    ]
    if not small:
        return None
    _, name = min(small)
    dom = ob.domain[name]
    return name, list(range(dom.lo, dom.hi + 1))  # type: ignore[attr-defined]


def _prove_obligation_once(ob: Obligation, options: Options | None) -> ObligationResult:
    """:func:`prove_obligation` with the domain as declared."""
    first = _First(time.process_time())
    try:
        with fresh_z3_context():  # as capproof prove decides it: the same answer whatever this process did before
            result = _prove_obligation(ob, options or Options(), first)
        shows_cex = result.verdict is Verdict.COUNTEREXAMPLE or (
            first.found is not None and result.verdict is Verdict.UNKNOWN
        )
        if first.restating_skipped and not shows_cex:  # e.g. an error after a counterexample: decided again, every
            # proof's core checked for restating assumptions (this verdict shows them); the same queries, fresh context
            with fresh_z3_context():
                result = _prove_obligation(ob, options or Options(), first, restate_all=True)
    finally:
        first.resume_gc()
    result.first_counterexample = first.found
    result.smallest_seconds = _smallest_seconds(result, first)
    hit = first.found
    # every recorded first counterexample was replayed on ints (the probe's points; the solver's
    # models and the decided cases' points through replay and the padding check): a point of the
    # domain where every assumption holds and the claim fails, whichever search found it
    found_by = {"int probe": "the int probe found", "solver": "the solver found (replayed)"}
    if hit is not None and result.verdict is Verdict.UNKNOWN:
        # a counterexample whatever the solver could not decide later: reported as found, shrunk on
        # ints (every point the shrinker keeps is replayed), not minimised
        params, values, shrunk = dict(hit.params), dict(hit.values), ""
        seeded = first.seed() if options is None or options.minimize else None
        if seeded is not None and seeded[0] != hit.params:
            (params, values), shrunk = seeded, ", shrunk on ints"
        result.message = (
            f"{_violation(result.relation, values)} at a point {found_by.get(hit.source, hit.source)} on ints{shrunk} "
            f"(every assumption holds; not minimised, not certified minimal: the solver's search was unknown: "
            f"{result.message})"
        )
        result.verdict = Verdict.COUNTEREXAMPLE
        result.counterexample = Counterexample(params, values, False)
        result.witnesses = []
        result.restating = []  # a counterexample shows none (and some cases may have skipped the check)
    elif hit is not None and result.verdict in (Verdict.PROVED, Verdict.VACUOUS):
        result.message = (
            f"{found_by.get(hit.source, hit.source)} a counterexample at {hit.params} ({_violation(result.relation, hit.values)}; "
            f"every assumption holds on ints) but the solver's verdict is {result.verdict.value} ({result.message}): "
            "the symbolic and the int semantics of the model disagree"
        )
        result.verdict = Verdict.ERROR
    opinion = (options or Options()).second_opinion
    if result.verdict in (Verdict.PROVED, Verdict.VACUOUS) and opinion is not None and first.domains is not None:
        _second_opinion(ob, result, first.domains, opinion)
    return result


def _smallest_seconds(result: ObligationResult, first: _First) -> float | None:
    """CPU seconds from the start of the run to the moment the counterexample reported as the
    least (``minimized``: certified by the solver) was in hand: the end of the int shrink when the
    shrunk seed is that point, else the whole run. None without a minimised counterexample."""
    cx = result.counterexample
    if result.verdict is not Verdict.COUNTEREXAMPLE or cx is None or not cx.minimized:
        return None
    seeded = first._seed
    if seeded is not None and first.shrunk_at is not None and seeded[0] == cx.params:
        return first.shrunk_at
    return time.process_time() - first.cpu_started


def _second_opinion(ob: Obligation, result: ObligationResult, domains: tuple, examples: int) -> None:
    """Test a ``proved``/``vacuous`` verdict on ints (capproof.second_opinion): a point that
    contradicts it makes the verdict an error showing the point."""
    started = time.perf_counter()
    found = second_opinion(ob, result.verdict.value, *domains, examples=examples)
    result.seconds += time.perf_counter() - started
    if found is not None:
        result.message = (
            f"the second opinion on ints ({found.source}) found {found.what} at {found.params} "
            f"({'with the padding' if found.how == 'padded' else 'on the batch alone'}) but the solver's "
            f"verdict is {result.verdict.value} ({result.message}): the symbolic and the int semantics "
            "of the model disagree"
        )
        result.verdict = Verdict.ERROR
        result.assumptions_used = []


def _prove_obligation(ob: Obligation, options: Options, first: _First, restate_all: bool = False) -> ObligationResult:
    """Decide ``ob`` in the current Z3 context (see :func:`prove_obligation`): the first of
    :data:`STRATEGIES` that decides it gives the verdict (the bounded encoding always decides).

    Once a counterexample is known (the int probe's, or a case's) the verdict is a counterexample
    or an error (:func:`prove_obligation`: a proof or an unknown with a counterexample on ints),
    and a counterexample's report shows no restating assumptions, so the cases decided from then
    on skip that check (:func:`_restating_assumptions`: a Z3 context, the case translated, two
    queries per core assumption) unless ``restate_all``; ``first.restating_skipped`` says whether
    one did (the caller then decides ``ob`` again with ``restate_all`` if the verdict is not a
    counterexample)."""
    run = ProofRun(ob, options, first, restate_all)
    for strategy in STRATEGIES:
        decided = strategy.attempt(run)
        if decided is not None:
            decided.seconds = time.perf_counter() - run.started
            return decided
    raise AssertionError("the bounded encoding decides every obligation")  # pragma: no cover


class ProofRun:
    """What the strategies deciding one obligation share: the obligation, the options, the first
    counterexample found so far (:class:`_First`), the result being filled in (set up by the probe
    step), and the obligation's domains under the pins (``finite`` case values, ``ranges``,
    ``vectors``)."""

    __slots__ = ("ob", "options", "first", "restate_all", "started", "rlimit", "pins", "result", "domains")

    def __init__(self, ob: Obligation, options: Options, first: _First, restate_all: bool = False):
        self.ob, self.options, self.first, self.restate_all = ob, options, first, restate_all
        self.started = time.perf_counter()
        self.rlimit = options.rlimit if ob.rlimit is None else ob.rlimit
        self.pins = {k: v for k, v in options.pins.items() if k in ob.domain} if options.pins else {}
        self.result: ObligationResult | None = None
        #: (finite, ranges, vectors): :func:`capproof.encode.checked_domains` under the pins
        self.domains: tuple[dict[str, list[int]], dict[str, Range], dict[str, Vector]] | None = None


class Strategy(Protocol):
    """One way to decide an obligation. ``attempt`` returns the verdict (``run.result`` filled in)
    or None when the strategy does not apply or does not decide; it may record a counterexample
    in ``run.first`` or a note in ``run.result.encoding_note`` for the strategies after it."""

    name: str

    def attempt(self, run: ProofRun) -> ObligationResult | None: ...


class IntProbe:
    """The model on ints at the structured points of the domain (:func:`capproof.probe.probe`),
    before any Z3 term is built: a counterexample found is recorded as the first one (the verdict
    still comes from the strategies after it). Then the run's result is set up; this step decides
    only when the model is not a function of its parameters on ints or its domain does not check
    (an error)."""

    name = "int probe"

    def attempt(self, run: ProofRun) -> ObligationResult | None:
        ob, options, first, pins, rlimit = run.ob, run.options, run.first, run.pins, run.rlimit
        domains = unstable = None
        if options.probe:  # the first counterexample on ints, before any Z3 term is built (and before
            # the result's set-up and reading the sources for the report: models_used parses them,
            # ~10 ms in a fresh process)
            try:
                domains = checked_domains(ob, pins, rlimit)
            except KeyboardInterrupt:
                raise
            except BaseException:  # noqa: BLE001 - reported below
                domains = None
            stats: dict[str, object] = {}
            hit = probe(ob, *domains, stats=stats) if domains is not None else None
            first.points = int(stats.get("points", 0))  # type: ignore[call-overload]
            if hit is not None:  # timed when the probe's re-check (without the memo) confirmed it: a
                # hit is a counterexample from then on (the probe's clean-up after it is not counted)
                first.record(hit.params, hit.values, "int probe", at=hit.rechecked_at)
            unstable = stats.get("unstable")
            if hit is not None and unstable is None and options.minimize:
                # shrunk on ints at once (the seed the minimisation certifies or starts from), so
                # the least point is in hand milliseconds after the first (ObligationResult.smallest_seconds)
                first.ob, first.domains = ob, domains
                first.seed()
        first.resume_gc()
        result = run.result = ObligationResult(
            id=ob.id,
            case=ob.case,
            sources=ob.sources,
            expect=ob.expect,
            verdict=Verdict.ERROR,
            message="",
            domain={k: (d.describe() if hasattr(d, "describe") else repr(d)) for k, d in ob.domain.items()},
            pins=pins,
            assumptions=list(ob.assumptions),
            doc=ob.doc,
            file=ob.file,
            line=ob.line,
            rlimit=rlimit,
            covers=list(ob.covers),
        )
        if unstable is not None:  # the probe's calls changed what the model computes: no verdict
            result.message = (
                f"the model is not a function of its parameters on ints: {unstable} (its calls "
                "change module state it reads?); a verdict that depends on what ran before is no verdict"
            )
            return result
        try:
            result.models = ob.models_used()
            result.claim_source = ob.claim_source() or ""
            # the probe's domains when it had them (it reads them only), else checked here (and reported)
            run.domains = domains if domains is not None else checked_domains(ob, pins, rlimit)
            first.ob, first.domains = ob, run.domains  # to shrink the first counterexample (a seed)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            result.message = describe_exception(exc)
            return result
        return None


class Aggregate:
    """Batch obligations for every batch size on the aggregate abstraction of their vectors
    (:mod:`capproof.aggregate`), in a Z3 context of its own."""

    name = "aggregate"

    def attempt(self, run: ProofRun) -> ObligationResult | None:
        ob, options, first, result = run.ob, run.options, run.first, run.result
        finite, ranges, vectors = run.domains
        if not (vectors and options.aggregate):
            return None
        # the aggregate and induction attempts run in a Z3 context of their own: when they do not
        # decide, the bounded encoding starts from a context they did not touch (after an abandoned
        # abstraction, core minimisation of wna16_reads_within_sorted_ids took 14 s instead of 0.5 s)
        # with a counterexample on ints known, an attempt on batches of <= BOUNDED_CEX_LIMIT entries
        # ends on the bounded encoding (or proved, an error then): its proofs' cores are not shown
        # unless it proves every case, and then it is made again with its minimal cores
        cores = first.found is None or max(v.size for v in vectors.values()) > BOUNDED_CEX_LIMIT
        decided = _in_own_context(
            _prove_by_aggregates, ob, finite, ranges, vectors, options, run.rlimit, result, run.pins, cores
        )
        if decided is not None and not cores:
            decided = _in_own_context(
                _prove_by_aggregates, ob, finite, ranges, vectors, options, run.rlimit, result, run.pins
            )
        if decided is not None and decided.counterexample is not None:
            first.record(decided.counterexample.params, decided.counterexample.values, "solver")
        return decided


class Induction:
    """Batch obligations for every batch size by induction over the batch
    (:mod:`capproof.induction`), when the aggregate abstraction did not decide and found no
    counterexample; in a Z3 context of its own."""

    name = "induction"

    def attempt(self, run: ProofRun) -> ObligationResult | None:
        options, result = run.options, run.result
        finite, ranges, vectors = run.domains
        if not (vectors and options.aggregate and options.induction):
            return None
        if result.encoding_note.endswith("minimised on the bounded encoding"):
            return None
        return _in_own_context(_prove_by_induction, run.ob, finite, ranges, vectors, run.rlimit, result, run.pins)


class Bounded:
    """Every case (one combination of the finite parameters) on the bounded encoding: a batch is
    its vectors' entries up to their declared size. Always decides (unknown when a case is)."""

    name = "bounded"

    def attempt(self, run: ProofRun) -> ObligationResult:
        ob, options, first, restate_all, rlimit, pins, result = (
            run.ob,
            run.options,
            run.first,
            run.restate_all,
            run.rlimit,
            run.pins,
            run.result,
        )
        finite, ranges, vectors = run.domains
        if vectors:
            size = max(v.size for v in vectors.values())
            result.encoding = f"batches <= {size}"
            if options.max_bounded_vector is not None and size > options.max_bounded_vector:
                result.verdict = Verdict.UNKNOWN
                result.message = (
                    f"not decided for batches of {size}: the aggregate abstraction did not decide "
                    f"({result.encoding_note.removeprefix('aggregate abstraction ') or 'not tried'}) and the bounded "
                    f"encoding is not tried beyond {options.max_bounded_vector} entries"
                )
                return result

        def run_cases(finite: dict[str, list[int]], ranges: dict[str, Range]) -> list[_CaseOutcome]:
            names = list(finite)
            outcomes: list[_CaseOutcome] = []
            below: dict[str, object] | None = None  # the least counterexample so far (scalar obligations)
            failed = first.found is not None  # a counterexample is known: the verdict shows no restating assumption
            first.restating_skipped = False
            # a batch's symbolic entries and their domain bounds made once, shared by the cases
            # (encode.SharedInputs); scalar-only obligations build theirs per case: a few terms, nothing
            # to save (and sharing them moved the domain bounds shown for one counterexample's proved
            # cases: Z3's unsat cores depend on term ids; docs/performance.md)
            shared = SharedInputs() if vectors else None
            for combo in itertools.product(*(finite[n] for n in names)):
                fixed = dict(zip(names, combo))
                outcome = _prove_case(
                    ob,
                    fixed,
                    ranges,
                    vectors,
                    options,
                    rlimit,
                    None if vectors else below,
                    first,
                    restate_all or not failed,
                    built,
                    shared,
                )
                outcomes.append(outcome)
                first.restating_skipped = first.restating_skipped or (failed and not restate_all)
                if outcome.kind == "counterexample":
                    failed = True
                    # replayed (padding checked): the first counterexample when the solver's first
                    # model was not one on the batch shown (see _First.solver_point)
                    first.record(outcome.params, outcome.values, "solver")
                    point = {p: outcome.params[p] for p in ob.params}
                    if below is None or _order_key(point) < _order_key(below):
                        below = point
                result.relation = result.relation or outcome.relation
            return outcomes

        # each case's paths kept for the trigger witnesses' search (which decides again the cases of the
        # counterexample's values): only with witnesses to search
        built: dict[tuple, CasePaths] | None = {} if ob.witnesses and not options.verdict_only else None
        outcomes: list[_CaseOutcome] = []
        length_notes: list[str] = []
        as_range = _lengths_as_ranges(ob, finite, ranges, vectors, pins)
        if as_range is not None:  # a Choice length decided as one symbolic Range
            outcomes = run_cases(*as_range[:2])
            if any(o.kind in ("error", "unknown") for o in outcomes):
                outcomes, result.relation = [], ""  # decided case by case instead, as declared
                if built is not None:
                    built.clear()
            else:
                finite, ranges, length_notes = as_range
        if not outcomes:
            outcomes = run_cases(finite, ranges)
        reads = list(dict.fromkeys(r for o in outcomes for r in o.padding_reads))
        alone_note = ""
        if reads and all(o.kind in ("proved", "excluded") for o in outcomes):
            alone = _alone_outcomes(ob, finite, ranges, vectors, options, rlimit, first, reads)
            outcomes += alone
            alone_note = (
                f"the model reads its vectors' padding ({reads[0]}): decided on each batch alone too "
                f"({len(alone)} more cases, one per batch length)"
            )

        result.cases = len(outcomes)
        result.paths = sum(o.paths for o in outcomes)
        if options.cross_check:
            from .crosscheck import summarize

            result.cross_check = summarize(outcomes, options.cross_check)
        kinds = [o.kind for o in outcomes]
        result.excluded = kinds.count("excluded")
        result.failing_cases = kinds.count("counterexample")
        result.unknown_cases = kinds.count("unknown")
        used: list[str] = []
        for o in outcomes:
            if o.kind == "proved":
                used.extend(c for c in o.core if c not in used)
        order = {name: i for i, name in enumerate([*ob.assumptions, *_bound_labels(ranges, vectors)])}
        result.assumptions_used = sorted(used, key=lambda c: order.get(c, len(order)))
        errors = [o for o in outcomes if o.kind == "error"]
        cexs = [o for o in outcomes if o.kind == "counterexample"]
        # a counterexample verdict shows none (the cases after the first counterexample are not checked)
        restating = {n for o in outcomes if o.kind == "proved" and (errors or not cexs) for n in o.restating}
        result.restating = [n for n in ob.assumptions if n in restating]
        unknowns = [o for o in outcomes if o.kind == "unknown"]
        admitted = result.cases - result.excluded
        if errors:
            result.verdict = Verdict.ERROR
            result.message = errors[0].message
        elif cexs:
            best = min(cexs, key=lambda o: _order_key({p: o.params[p] for p in ob.params}))
            result.verdict = Verdict.COUNTEREXAMPLE
            result.counterexample = Counterexample(best.params, best.values, best.minimized, best.path)
            result.message = (
                f"{_violation(result.relation, best.values)}; fails in {len(cexs)} of {admitted} admitted cases"
                + (f" (on path {best.path})" if best.path else "")
                + (f" ({len(unknowns)} unknown: they may fail too)" if unknowns else "")
                + (
                    ""
                    if best.minimized
                    else " (not minimised: a minimisation query ran out of rlimit; not certified minimal)"
                    if options.minimize
                    else " (not minimised: minimisation off)"
                )
            )
            if not options.verdict_only:
                result.witnesses = find_witnesses(ob, best.params, finite, ranges, vectors, options, rlimit, built)
            if options.density != "off":
                from .density import failure_density

                result.density = failure_density(
                    ob,
                    best.params,
                    len(cexs),
                    admitted,
                    full=options.density == "full",
                    unknown_cases=len(unknowns),
                    pinned=bool(pins),
                    pins=sorted(pins),
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
            result.message = (
                f"unsat on {admitted} cases"
                + (f" ({result.excluded} excluded by assumptions)" if result.excluded else "")
                + (f", {result.paths} paths" if result.paths > result.cases else "")
                + "".join(
                    f"; assumption {n!r} restates the claim (each implies the other on the domain): the proof "
                    "shows the claim only as far as that fact holds"
                    for n in result.restating
                )
            )
        result.normalised = length_notes + list(dict.fromkeys(n for o in outcomes for n in o.normalised))
        if result.normalised:  # never silently: the verdict says which assumptions were re-encoded
            result.message += "; encoded equivalently (capproof.normalise): " + "; ".join(result.normalised)
        if alone_note and result.verdict in (Verdict.PROVED, Verdict.VACUOUS):
            result.message += "; " + alone_note
        return result


#: A model that reads its vectors' padding is decided again on each batch alone in at most this
#: many more cases (one per combination of the case-split parameters and the batch lengths);
#: beyond it the obligation is an ``error``.
ALONE_CASES = 256


def _alone_outcomes(
    ob: Obligation,
    finite: dict[str, list[int]],
    ranges: dict[str, Range],
    vectors: dict[str, Vector],
    options: Options,
    rlimit: int,
    first: "_First",
    reads: list[str],
) -> list[_CaseOutcome]:
    """The cases of ``ob`` with every vector its batch alone: each symbolic batch length split
    into one case per value it admits (at most the vector's size), no padding entries at all, so
    whatever the model reads of a vector (``len()``, ``lens[-1]``, a loop, a slice, a hash, C code
    reading the tuple) is exactly what it reads on the batch alone. Run when the bounded
    encoding's padded run read the padding (``reads``, :meth:`capproof.arith.Padded.read_padding`);
    a point that fails alone but not with the padding is an ``error`` (:func:`_padding_check`).
    More than :data:`ALONE_CASES` cases: one ``error`` outcome."""
    axes = dict(finite)
    for name in sorted({v.length for v in vectors.values() if v.length is not None}):
        if name in ranges:
            size = max(v.size for v in vectors.values() if v.length == name)
            axes[name] = list(range(ranges[name].lo, min(ranges[name].hi, size) + 1))
    rest = {k: v for k, v in ranges.items() if k not in axes}
    count = 1
    for values in axes.values():
        count *= len(values)
    if count > ALONE_CASES:
        return [
            _CaseOutcome(
                "error",
                message=(
                    f"the model reads its vectors' padding ({reads[0]}), so its batches alone must be decided "
                    f"too, in {count} cases (more than {ALONE_CASES}): read a batch through total/max_of/min_of/"
                    "count/all_of or index it below the least length the domain admits, or pin the length (--set)"
                ),
            )
        ]
    names = list(axes)
    shared = SharedInputs()
    outcomes = []
    for combo in itertools.product(*(axes[n] for n in names)):
        outcome = _prove_case(
            ob, dict(zip(names, combo)), rest, vectors, options, rlimit, None, first, False, None, shared, alone=True
        )
        if outcome.kind in ("error", "unknown") and not outcome.message.startswith("on the batch alone"):
            outcome.message = f"on the batch alone ({dict(zip(names, combo))}): {outcome.message}"
        outcomes.append(outcome)
    return outcomes


#: The strategies :func:`_prove_obligation` tries, in order; the first that decides gives the verdict.
STRATEGIES: tuple[Strategy, ...] = (IntProbe(), Aggregate(), Induction(), Bounded())


#: A vector's length declared as a ``Choice`` of at least this many consecutive ints is decided as
#: the ``Range`` of those ints (one symbolic length instead of one case per value).
CHOICE_LENGTH_AS_RANGE = 8


def _lengths_as_ranges(
    ob: Obligation,
    finite: dict[str, list[int]],
    ranges: dict[str, Range],
    vectors: dict[str, Vector],
    pins: dict[str, int],
) -> tuple[dict[str, list[int]], dict[str, Range], list[str]] | None:
    """The case split with each vector length declared as a ``Choice`` of consecutive ints
    (``Choice(range(1, 257))``) made a symbolic ``Range`` over the same ints: the same set of
    points, so the same verdict, in one query per case instead of one per length value (measured:
    a 256-value Choice length took 94 s CPU to a counterexample, the Range 2 s).
    Returns (finite, ranges, notes), or None when no length qualifies (pinned lengths stay
    pinned). The caller falls back to the declared split when a case comes back ``error`` or
    ``unknown`` (a model that needs the length as a concrete int, say)."""
    lengths = {v.length for v in vectors.values() if v.length is not None}
    moved: dict[str, Range] = {}
    for name in sorted(lengths):
        values = finite.get(name)
        if name in pins or not isinstance(ob.domain.get(name), Choice) or values is None:
            continue
        if len(values) >= CHOICE_LENGTH_AS_RANGE and values == list(range(values[0], values[-1] + 1)):
            moved[name] = Range(values[0], values[-1])
    if not moved:
        return None
    finite2 = {k: v for k, v in finite.items() if k not in moved}
    notes = [
        f"length {n}: Choice of the {r.hi - r.lo + 1} consecutive values {r.lo}..{r.hi} decided as "
        f"Range({r.lo}, {r.hi}) (one symbolic length, not one case per value)"
        for n, r in moved.items()
    ]
    return finite2, {**ranges, **moved}, notes


#: Counterexamples on the aggregate abstraction are reported as such only for vectors larger than
#: this; smaller ones are re-decided on the bounded encoding (entry-wise minimised counterexamples,
#: trigger witnesses), which stays fast at this size.
BOUNDED_CEX_LIMIT = 64


#: ``ObligationResult.encoding`` of a verdict on the aggregate abstraction with a fixed-size Vector
FIXED_SIZES = "fixed vector sizes"


def _in_own_context(attempt, *args):
    """``attempt(*args)`` in a fresh Z3 main context (:func:`capproof.symbolic.fresh_z3_context`)."""
    with fresh_z3_context():
        return attempt(*args)


def _prove_by_aggregates(
    ob: Obligation,
    finite: dict[str, list[int]],
    ranges: dict[str, Range],
    vectors: dict[str, Vector],
    options: Options,
    rlimit: int,
    result: ObligationResult,
    pins: dict[str, int],
    cores: bool = True,
) -> ObligationResult | None:
    """Decide ``ob`` on the aggregate abstraction of its vectors (capproof.aggregate); None when
    it does not apply or does not decide (the caller then uses the bounded encoding).
    ``cores=False``: proofs' cores as Z3 gave them, not minimised (see ``decide_abstract_case``)."""
    from .aggregate import shared_facts

    with shared_facts():  # each per-entry fact decided once for all cases
        return _aggregate_cases(ob, finite, ranges, vectors, options, rlimit, result, pins, cores)


def _aggregate_cases(
    ob: Obligation,
    finite: dict[str, list[int]],
    ranges: dict[str, Range],
    vectors: dict[str, Vector],
    options: Options,
    rlimit: int,
    result: ObligationResult,
    pins: dict[str, int],
    cores: bool = True,
) -> ObligationResult | None:
    from .aggregate import NotAggregate, build_abstract_case, decide_abstract_case, summary

    names = list(finite)
    outcomes = []
    sizes = max(v.size for v in vectors.values())
    for combo in itertools.product(*(finite[n] for n in names)):
        fixed = dict(zip(names, combo))
        try:
            case = build_abstract_case(ob, fixed, ranges, vectors, stop_if_excluded=True)
        except KeyboardInterrupt:
            raise
        except NotAggregate as exc:
            result.encoding_note = f"aggregate abstraction not applicable: {exc}"
            return None
        except BaseException as exc:  # noqa: BLE001 - the bounded run reports model errors
            result.encoding_note = f"aggregate abstraction not applicable: {describe_exception(exc)}"
            return None
        result.relation = result.relation or case.relation
        try:
            outcome = decide_abstract_case(case, rlimit, options.minimize, cores)
        except NotAggregate as exc:
            result.encoding_note = f"aggregate abstraction not applicable: {exc}"
            return None
        if outcome.kind in ("abandon", "unknown"):
            result.encoding_note = f"aggregate abstraction undecided: {outcome.message}"
            return None
        outcomes.append(outcome)
        if outcome.kind == "counterexample" and sizes <= BOUNDED_CEX_LIMIT:
            break  # re-decided on the bounded encoding whatever the other cases say
    kinds = [o.kind for o in outcomes]
    cexs = [o for o in outcomes if o.kind == "counterexample"]
    if cexs and sizes <= BOUNDED_CEX_LIMIT:
        result.encoding_note = "aggregate abstraction found a counterexample; minimised on the bounded encoding"
        return None
    result.cases = len(outcomes)
    result.excluded = kinds.count("excluded")
    result.failing_cases = len(cexs)
    # a Vector without a length is exactly its size (one count per expert): the abstraction fixes
    # the entry count there, so the verdict covers that size, not every one
    result.encoding = "all batch sizes" if all(v.length for v in vectors.values()) else FIXED_SIZES
    result.encoding_note = summary(len(outcomes), vectors, ob, pins)
    admitted = result.cases - result.excluded
    used: list[str] = []
    for o in outcomes:
        if o.kind == "proved":
            used.extend(c for c in o.core if c not in used)
    order = {name: i for i, name in enumerate([*ob.assumptions, *_bound_labels(ranges, {})])}
    result.assumptions_used = sorted(used, key=lambda c: order.get(c, len(order)))
    if cexs:
        best = min(
            cexs,
            key=lambda o: tuple(
                (p if not isinstance(p, list) else (len(p), p)) for p in (o.params[q] for q in ob.params)
            ),
        )
        result.verdict = Verdict.COUNTEREXAMPLE
        result.counterexample = Counterexample(best.params, best.values, True)
        result.message = (
            f"{_violation(result.relation, best.values)}; fails in {len(cexs)} of {admitted} admitted cases "
            "(aggregate abstraction: the batch realised from its aggregates and replayed on ints)"
        )
        result.witnesses = []
        if options.density != "off":  # on ints around the realised batch, as for a bounded counterexample
            from .density import failure_density

            result.density = failure_density(
                ob,
                best.params,
                len(cexs),
                admitted,
                full=options.density == "full",
                pinned=bool(pins),
                pins=sorted(pins),
            )
        return result
    if admitted == 0:
        return None  # vacuity is reported by the bounded run, with its own wording
    result.verdict = Verdict.PROVED
    result.message = (
        f"unsat on {admitted} cases on the aggregate abstraction: {_sizes_covered(vectors, pins)} ({result.encoding_note})"
        + (f" ({result.excluded} excluded by assumptions)" if result.excluded else "")
    )
    return result


def _prove_by_induction(
    ob: Obligation,
    finite: dict[str, list[int]],
    ranges: dict[str, Range],
    vectors: dict[str, Vector],
    rlimit: int,
    result: ObligationResult,
    pins: dict[str, int] | None = None,
) -> ObligationResult | None:
    """Prove ``ob`` for every batch size by induction over its batch (capproof.induction); None
    when the rule does not apply or does not prove it (the reason joins ``encoding_note``)."""
    from .aggregate import summary
    from .induction import prove_by_induction

    kind, outcomes, why = prove_by_induction(ob, finite, ranges, vectors, rlimit)
    if kind != "proved":
        result.encoding_note = "; ".join(filter(None, [result.encoding_note, f"induction over the batch: {why}"]))
        return None
    result.cases = len(outcomes)
    result.excluded = sum(1 for o in outcomes if o.kind == "excluded")
    result.encoding = "all batch sizes"
    invariant = next(o.invariant for o in outcomes if o.kind == "proved")
    sizes = "; ".join(
        summary(len(outcomes), {k: v}, ob, pins) if v.length else f"{k}: any number of entries"
        for k, v in vectors.items()
    )
    result.encoding_note = f"induction over the batch (base case and step on {invariant}); {sizes}"
    used: list[str] = []
    for o in outcomes:
        used.extend(c for c in o.core if c not in used)
    order = {name: i for i, name in enumerate([*ob.assumptions, *_bound_labels(ranges, {})])}
    result.assumptions_used = sorted(used, key=lambda c: order.get(c, len(order)))
    admitted = result.cases - result.excluded
    result.verdict = Verdict.PROVED
    result.message = (
        f"unsat on {admitted} cases by induction over the batch (base case, step, conclusion): "
        f"{_sizes_covered(vectors, pins)} ({sizes})"
    ) + (f" ({result.excluded} excluded by assumptions)" if result.excluded else "")
    return result


def _sizes_covered(vectors: dict[str, Vector], pins: dict[str, int] | None) -> str:
    """ "every batch size", or what a run with a batch length pinned (``--set num_reqs=2``) covers:
    that length only (any vector size beyond it, padding included)."""
    pinned = [f"{v.length}={pins[v.length]}" for v in vectors.values() if v.length and pins and v.length in pins]
    fixed = [f"{n}: exactly {v.size} entries" for n, v in vectors.items() if not v.length]
    if fixed:
        return "; ".join(fixed + ([f"batches of the pinned length only ({', '.join(pinned)})"] if pinned else []))
    return f"batches of the pinned length only ({', '.join(pinned)})" if pinned else "every batch size"


def _bound_labels(ranges: dict[str, Range], vectors: dict[str, Vector]) -> list[str]:
    out = [label for n, d in ranges.items() for label in (f"{n} >= {d.lo}", f"{n} <= {d.hi}")]
    for n, v in vectors.items():
        out.append(f"{n} entries in {v.elem.lo}..{v.elem.hi}")  # type: ignore[attr-defined]
        out.append(f"{n} entries from {v.length} on are {v.fill}")
    return out


def _violation(relation: str, values: dict[str, int]) -> str:
    if relation and values:
        return f"{relation} fails: " + ", ".join(f"{k}={v}" for k, v in values.items())
    shown = ", ".join(f"{k}={v}" for k, v in values.items())
    return f"claim fails{': ' + shown if shown else ''}"
