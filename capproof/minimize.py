"""Lexicographic minimisation of a failing point with Z3.

:func:`minimize_point` minimises the parameters of a counterexample one by one (declared order,
binary search with :func:`minimize_term`; a vector entry by entry, or by its sum when more than
:data:`~capproof.encode.ENTRYWISE_LIMIT` entries are active) and fixes each value found on the
solver. Given a counterexample shrunk on ints (a *seed*) it first asks one query: is any point of
the case below the seed in that order (:func:`below_seed`)? Unsat certifies the seed as the least
point (no search); otherwise the searches run as without that query. The prover (counterexamples
and trigger witnesses), the aggregate strategy and the bound analysis use it.
"""

from __future__ import annotations

import z3

from .domain import Range
from .encode import ENTRYWISE_LIMIT, CaseProblem, assert_terms
from .symbolic import SymInt, int_relation, model_int

__all__ = ["minimize_term", "minimize_point", "below_seed", "order_terms"]

#: How the last :func:`minimize_point` call ended its certification query for a seed: "unsat"
#: (the seed certified least, no search), "sat"/"unknown" (searched as without it) or "" (no seed
#: admitted). Read by tests and benchmarks only.
LAST_CERTIFICATE: list[str] = [""]


def minimize_term(
    s: z3.Solver, model: z3.ModelRef, term: z3.ArithRef, lo: int, best: int | None = None
) -> tuple[z3.ModelRef, bool]:
    """Binary search for the least value of ``term`` (at least ``lo``) on ``s``, then fix it on ``s``.

    Returns the last model and False if a query came back unknown (the value is then not fixed).
    ``lo`` itself is tried first: most corpus counterexamples are least at a domain bound (one
    query instead of ~log2(range) of them); the least value found is the same either way.
    ``best``: a value of ``term`` known to be attained on ``s`` (a shrunk seed's), else the
    value in ``model``.
    """
    if best is None:
        best = model_int(model, term)
    probe = lo
    while lo < best:
        s.push()
        assert_terms(s, [int_relation(term, "<=", probe)])  # s.add(term <= probe): the same term and call
        answer = s.check()
        if answer == z3.sat:
            model = s.model()
            best = model_int(model, term)
        elif answer == z3.unsat:
            lo = probe + 1
        s.pop()
        if answer == z3.unknown:
            return model, False
        probe = (lo + best) // 2
    assert_terms(s, [int_relation(term, "==", best)])  # s.add(term == best)
    return model, True


def order_terms(case: CaseProblem, names: list[str], point: dict[str, object]) -> list[tuple[z3.ArithRef, int]] | None:
    """The terms :func:`minimize_point` minimises, in its order, each with its value at ``point``
    (ints; a vector as its active entries): each scalar of ``names``; each vector's free active
    entries one by one, or their sum when more than :data:`~capproof.encode.ENTRYWISE_LIMIT` are
    free. None when a vector's length is not fixed before its entries (not in ``case.fixed`` and
    not earlier in ``names``): the entries compared would not be the same ones."""
    out: list[tuple[z3.ArithRef, int]] = []
    seen: set[str] = set()
    for name in names:
        if name in case.scalars:
            out.append((case.scalars[name].term, point[name]))  # type: ignore[arg-type]
        elif name in case.vectors:
            length = case.ob.domain[name].length  # type: ignore[attr-defined]
            if length is not None and length not in case.fixed and length not in seen:
                return None
            values = list(point[name])  # type: ignore[call-overload]
            entries = case.vectors[name][: len(values)]
            free = [(e.term, values[i]) for i, e in enumerate(entries) if isinstance(e, SymInt)]
            if len(free) <= ENTRYWISE_LIMIT:
                out.extend(free)
            elif free:
                out.append((z3.Sum([t for t, _ in free]), sum(v for _, v in free)))
        seen.add(name)
    return out


def below_seed(terms: list[tuple[z3.ArithRef, int]]) -> z3.BoolRef:
    """The points lexicographically below the values of ``terms`` (:func:`order_terms`): some
    term lower, every term before it equal."""
    below: z3.BoolRef = z3.BoolVal(False)
    for term, value in reversed(terms):
        below = z3.Or(term < value, z3.And(term == value, below))
    return below


def minimize_point(
    case: CaseProblem,
    s: z3.Solver,
    model: z3.ModelRef,
    names: list[str],
    seed: dict[str, object] | None = None,
    budget: int | None = None,
    rlimit: int | None = None,
) -> tuple[z3.ModelRef, bool]:
    """Lexicographically minimise ``names`` (declared order) by binary search on ``s``.

    Fixes each minimised value on ``s``. Returns the final model and whether every search ended
    (an unknown answer stops minimisation; the point found so far is still a counterexample).

    ``seed``: a counterexample shrunk on ints (:func:`capproof.shrink.shrink`). When ``s`` admits
    it (one query with its values assumed), one more query asks for a point below it in this order
    (:func:`below_seed`): unsat certifies the seed least, fixed on ``s`` and returned as minimised
    with no search (:data:`LAST_CERTIFICATE` records the answer). Sat or unknown: each search
    starts from the seed's value, and a value at
    the domain's lower bound is fixed with no query (the seed attains it with every value fixed
    before); once a search finds a value below the seed's, the seed is dropped. The least point
    found is the same; only queries whose answer the seed gives are skipped. When a search is
    unknown while the seed still agrees with every fixed value, the seed is the point returned
    (a counterexample at or below the solver's, not minimised).
    """

    LAST_CERTIFICATE[0] = ""
    if seed is not None and s.check(*case.fix(seed, names)) != z3.sat:
        seed = None  # the seed lies in another case or path
    budgeted = seed is not None and budget is not None and rlimit is not None
    if budgeted:
        s.set("rlimit", budget)  # each query; an unknown leaves the seed, a counterexample no larger
    terms = order_terms(case, names, seed) if seed is not None else None
    if terms is not None:
        # one query certifies the seed least: no point of this case below it in the order the
        # searches use. Sat or unknown: the searches below, as without this query.
        s.push()
        s.add(below_seed(terms))
        answer = s.check()
        s.pop()
        LAST_CERTIFICATE[0] = str(answer)
        if answer == z3.unsat:
            if budgeted:
                s.set("rlimit", rlimit)
            s.add(*case.fix(seed, names))  # type: ignore[arg-type]
            if s.check() == z3.sat:
                return s.model(), True
            return model, False  # pragma: no cover - the seed was admitted above

    def seeded_point() -> tuple[z3.ModelRef, bool]:
        if budgeted:
            s.set("rlimit", rlimit)
        if seed is not None and s.check(*case.fix(seed, names)) == z3.sat:
            return s.model(), False
        return model, False

    def lowest(term: z3.ArithRef, lo: int, known: int | None) -> bool:
        nonlocal model, seed
        if known == lo:
            assert_terms(
                s, [int_relation(term, "==", lo)]
            )  # s.add(term == lo): the seed attains the lower bound with every value fixed so far
            return True
        model, done = minimize_term(s, model, term, lo, known)
        if done and known is not None and model_int(model, term) < known:
            seed = None  # a value below the seed's: the seed no longer agrees with what is fixed
        return done

    for name in names:
        dom = case.ob.domain[name]
        if name in case.scalars:
            lo = dom.lo if isinstance(dom, Range) else min(dom.cases())  # type: ignore[attr-defined]
            known = seed[name] if seed is not None else None
            if not lowest(case.scalars[name].term, lo, known):  # type: ignore[arg-type]
                return seeded_point()
        elif name in case.vectors:
            elem: Range = dom.elem  # type: ignore[attr-defined]
            n = len(seed[name]) if seed is not None else case.active(name, model)  # type: ignore[arg-type]
            entries = case.vectors[name][:n]
            free = [(i, e.term) for i, e in enumerate(entries) if isinstance(e, SymInt)]
            if len(free) <= ENTRYWISE_LIMIT:
                for i, term in free:
                    known = seed[name][i] if seed is not None else None  # type: ignore[index]
                    if not lowest(term, elem.lo, known):
                        return seeded_point()
            elif free:
                known = sum(seed[name][i] for i, _ in free) if seed is not None else None  # type: ignore[index]
                if not lowest(z3.Sum([t for _, t in free]), elem.lo * len(free), known):
                    return seeded_point()
                if seed is not None and known != elem.lo * len(free):
                    seed = None  # the sum is fixed, not the entries: the solver's choice from here
    if budgeted:
        s.set("rlimit", rlimit)
    if s.check() != z3.sat:  # pragma: no cover - fixing values found sat cannot become unsat
        return model, False
    return s.model(), True
